/*
 * test_unload.c — a host that loads libsimpler with dlopen, uses it on a
 * thread of its own, unloads it with dlclose, and only then ends that
 * thread.
 *
 * A thread that made or let go of an event record holds a pthread key
 * whose destructor gives the thread's record cache back to the pool
 * (src/simdev/event.c); it runs when the thread ends. The library is
 * linked with -z nodelete, so dlclose leaves it mapped and that
 * destructor is still there to run. Without it the thread's end called an
 * address no longer mapped and the process died (SIGSEGV) before the join
 * returned. Nothing here is ordered by sleeping: two semaphores hand the
 * steps over.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "simpler/device.h"

static void *g_lib;
static sem_t g_used, g_go;

struct calls {
    int (*set_device)(int);
    int (*stream_create)(simdev_stream_t *);
    int (*stream_sync)(simdev_stream_t);
    int (*stream_destroy)(simdev_stream_t);
    int (*event_create)(simdev_event_t *);
    int (*event_record)(simdev_event_t, simdev_stream_t);
    int (*event_destroy)(simdev_event_t);
    int (*device_reset)(int);
};
static struct calls g_f;
static int g_thread_rc = -1;

/* dlsym of `name`, as the object pointer POSIX gives, into a function
 * pointer of the caller's type. */
#define FIND(field, name)                                                                        \
    do {                                                                                         \
        void *sym = dlsym(g_lib, name);                                                          \
        assert_non_null(sym);                                                                    \
        memcpy(&g_f.field, &sym, sizeof sym);                                                    \
    } while (0)

/* The host's thread: records on a stream of its own (the records end
 * here and on the device's threads), lets everything go, and waits for
 * the library to be unloaded before it ends. */
static void *host_thread(void *arg)
{
    (void)arg;
    simdev_stream_t s = NULL;
    simdev_event_t e = NULL;
    int rc = g_f.set_device(0);
    if (!rc)
        rc = g_f.stream_create(&s);
    if (!rc)
        rc = g_f.event_create(&e);
    for (int i = 0; i < 40 && !rc; i++) /* more than a thread's cache holds */
        rc = g_f.event_record(e, s);
    if (!rc)
        rc = g_f.stream_sync(s);
    if (e && !rc)
        rc = g_f.event_destroy(e);
    if (s && !rc)
        rc = g_f.stream_destroy(s);
    g_thread_rc = rc;
    sem_post(&g_used);
    sem_wait(&g_go); /* ends after the dlclose */
    return NULL;
}

/* The thread ends after the unload and the join returns: a crash at its
 * end is the defect this guards against. The library stays mapped
 * (RTLD_NOLOAD finds it); the thread's calls all succeeded (0). */
static void a_thread_that_used_records_ends_after_the_library_is_unloaded(void **state)
{
    (void)state;
    g_lib = dlopen(SIMPLER_SHARED_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(g_lib);
    FIND(set_device, "simdev_set_device");
    FIND(stream_create, "simdev_stream_create");
    FIND(stream_sync, "simdev_stream_sync");
    FIND(stream_destroy, "simdev_stream_destroy");
    FIND(event_create, "simdev_event_create");
    FIND(event_record, "simdev_event_record");
    FIND(event_destroy, "simdev_event_destroy");
    FIND(device_reset, "simdev_device_reset");
    assert_int_equal(sem_init(&g_used, 0, 0), 0);
    assert_int_equal(sem_init(&g_go, 0, 0), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, host_thread, NULL), 0);
    assert_int_equal(sem_wait(&g_used), 0);
    assert_int_equal(g_thread_rc, 0);
    assert_int_equal(g_f.device_reset(0), 0); /* the device's threads end */
    assert_int_equal(dlclose(g_lib), 0);
    void *still = dlopen(SIMPLER_SHARED_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(still); /* -z nodelete: mapped still */
    assert_int_equal(sem_post(&g_go), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    dlclose(still);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_thread_that_used_records_ends_after_the_library_is_unloaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
