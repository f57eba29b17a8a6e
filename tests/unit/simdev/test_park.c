/*
 * test_park.c — the waits of simdev's threads (simdev/park.c): how long a
 * waiter that may spin stays awake (sd_spin_in_room).
 *
 * The spins here are counted in looks at the clock, not timed: spin_ns is
 * 1 ns, so a spin without progress ends at its second look whatever the
 * host's speed, and the progress count grows by one at every look.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "simdev/park.h"
#include "test_support.h"

/* A wait's state: ready once `looks` reached `ready_at`; the progress
 * count grows at every look when `grows`. */
struct waited {
    uint64_t looks;
    uint64_t ready_at;
    bool grows;
    struct sd_budget *b; /* when not NULL: its room is taken at look `full_at` */
    uint64_t full_at;
};

static bool waited_ready(void *arg)
{
    const struct waited *w = arg;
    return w->looks >= w->ready_at;
}

static uint64_t waited_progress(void *arg)
{
    struct waited *w = arg;
    if (w->grows)
        w->looks++;
    if (w->b && w->looks == w->full_at)
        atomic_store(&w->b->awake, w->b->cpus); /* the device's threads take every CPU */
    return w->looks;
}

/* A device with two CPUs and nothing running: the host has room to spin. */
static void budget_with_room(struct sd_budget *b)
{
    atomic_init(&b->awake, 0);
    atomic_init(&b->idle_spinning, 0);
    atomic_init(&b->device_cpu, -1);
    atomic_init(&b->sync_cpu, -1);
    atomic_init(&b->host_running, 0);
    b->cpus = 2;
}

/*
 * A sync whose stream keeps completing ops stays awake past its spin_ns:
 * each look that finds the count grown starts the spin_ns again, so the
 * wait sees its 50th look and returns ready. false would mean it parked
 * at its second look while ops were still completing (a batch of short
 * replays then paid a wake-up at its end).
 */
static void a_spin_that_sees_progress_stays_awake(void **state)
{
    (void)state;
    struct sd_budget b;
    budget_with_room(&b);
    struct waited w = {0, 50, true, NULL, 0};
    assert_true(sd_spin_in_room(&b, false, waited_ready, waited_progress, &w, 1));
    assert_int_equal(w.looks, 50);
    assert_int_equal(atomic_load(&b.sync_cpu), -1); /* a spin leaves no CPU noted */
}

/*
 * Without progress the spin ends after spin_ns, with a progress function
 * whose count stays put or with none: false, the caller parks. true would
 * mean a spin without an end (the wait would need no owner to end it).
 */
static void a_spin_without_progress_ends_after_spin_ns(void **state)
{
    (void)state;
    struct sd_budget b;
    budget_with_room(&b);
    struct waited still = {0, 1, false, NULL, 0};
    assert_false(sd_spin_in_room(&b, false, waited_ready, waited_progress, &still, 1));
    assert_int_equal(still.looks, 0);
    assert_false(sd_spin_in_room(&b, false, waited_ready, NULL, &still, 1));
}

/*
 * Progress does not buy a spin the device has no room for: with both CPUs
 * taken by device threads in jobs, the spin ends before its first look
 * (looks 1: the one before the spin), and an idle device thread's spin
 * leaves the idle count as it found it. true, or more looks, would mean a
 * host thread spinning on a CPU the device's threads need.
 */
static void progress_does_not_spin_without_room(void **state)
{
    (void)state;
    struct sd_budget b;
    budget_with_room(&b);
    atomic_store(&b.awake, 2);
    struct waited w = {0, 50, true, NULL, 0};
    assert_false(sd_spin_in_room(&b, false, waited_ready, waited_progress, &w, 1000000000));
    assert_int_equal(w.looks, 1);
    assert_false(sd_spin_in_room(&b, true, waited_ready, waited_progress, &w, 1000000000));
    assert_int_equal(w.looks, 2);
    assert_int_equal(atomic_load(&b.idle_spinning), 0);
}

/*
 * Progress only moves the spin's end: room is looked at on every look but
 * the first, progress or not. The stream completes an op at every look,
 * and as the third count is read the device's threads take both CPUs:
 * the spin ends at that look, false (3 counts read: one before the spin,
 * two at its looks). More (the 50th: ready) would mean a sync spinning on
 * a CPU the device's threads need while its stream makes progress.
 */
static void progress_does_not_outlast_the_room(void **state)
{
    (void)state;
    struct sd_budget b;
    budget_with_room(&b);
    struct waited w = {0, 50, true, &b, 3};
    assert_false(sd_spin_in_room(&b, false, waited_ready, waited_progress, &w, 1000000000));
    assert_int_equal(w.looks, 3);
}

/*
 * Nor does it outlast a device thread spinning on the same CPU: with the
 * calling thread pinned to one CPU and the device's AICPU thread noted
 * there, the sync gives way at its second look whatever the progress (2
 * looks before it, 1 before the spin). The 50th look would mean two
 * spinners taking turns on one CPU while the other idles.
 */
static void progress_does_not_outlast_a_shared_cpu(void **state)
{
    (void)state;
    cpu_set_t before, one;
    assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);
    int cpu = sched_getcpu();
    assert_true(cpu >= 0);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    struct sd_budget b;
    budget_with_room(&b);
    atomic_store(&b.device_cpu, sched_getcpu());
    struct waited w = {0, 50, true, NULL, 0};
    bool ready = sd_spin_in_room(&b, false, waited_ready, waited_progress, &w, 1000000000);
    assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof before, &before), 0);
    assert_false(ready);
    assert_int_equal(w.looks, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST(a_spin_that_sees_progress_stays_awake),
        SIMPLER_TEST(a_spin_without_progress_ends_after_spin_ns),
        SIMPLER_TEST(progress_does_not_spin_without_room),
        SIMPLER_TEST(progress_does_not_outlast_the_room),
        SIMPLER_TEST(progress_does_not_outlast_a_shared_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
