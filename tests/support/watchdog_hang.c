/*
 * watchdog_hang.c — a program that hangs on purpose, for the watchdog's
 * self-test (tools/check-watchdog.sh): its main thread waits for a helper
 * thread that waits for a condition nobody signals. The watchdog (linked in
 * as in every test) must name both functions below in its report and abort.
 *
 * The functions are exported and not inlined so that both gdb and the
 * backtrace() fallback can name them.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t hang_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cond = PTHREAD_COND_INITIALIZER;
static int hang_released; /* never set: that is the hang */

__attribute__((noinline)) void *watchdog_hang_helper_waits_forever(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hang_lock);
    while (!hang_released)
        pthread_cond_wait(&hang_cond, &hang_lock);
    pthread_mutex_unlock(&hang_lock);
    return NULL;
}

__attribute__((noinline)) int watchdog_hang_main_joins_forever(pthread_t helper)
{
    int rc = pthread_join(helper, NULL);
    fprintf(stderr, "watchdog_hang: the helper returned (%d): it must never\n", rc);
    return 1;
}

int main(void)
{
    pthread_t helper;
    if (pthread_create(&helper, NULL, watchdog_hang_helper_waits_forever, NULL) != 0)
        return 2;
    printf("watchdog_hang: hanging until the watchdog fires\n");
    return watchdog_hang_main_joins_forever(helper);
}
