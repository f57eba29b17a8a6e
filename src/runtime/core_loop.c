/*
 * runtime/core_loop.c — the AICore side: the loop every compute core runs
 * for the length of a run.
 *
 * Owns: the core half of the register protocol (core_regs.h): hello, run
 * every published dispatch id in order, finish, exit. Knows nothing of
 * tasks or dependencies: a dispatch is a kernel pointer, its args and a
 * context (payload.h), in the payload slot chosen by the dispatch id. Being
 * awake right after its FIN, the core's thread also runs its scheduler's
 * step there (rt_sched_kick, step_token.c; the engine rule in
 * scheduler.c): the scheduler's role and state stay the scheduler's, only
 * the host thread that executes it changes.
 */
#include <string.h>

#include "platform/platform.h"
#include "runtime/core_regs.h"
#include "runtime/entries.h"
#include "runtime/layout.h"
#include "runtime/payload.h"
#include "runtime/placement.h"
#include "runtime/ready_queue.h"
#include "runtime/rendezvous.h"
#include "runtime/run.h"
#include "runtime/scheduler.h"
#include "runtime/step_token.h"
#include "runtime/trace.h"
#include "simpler/status.h"

/*
 * Fetching work while idle (the engine rule: the step runs on a thread
 * that is awake): once the run is usable (run_usable, or a dispatch came),
 * the core's doorbell wait also watches the ready queue of its type, and
 * when a task is there that it has not already kicked for, the core runs
 * its scheduler's step itself, which gives the task to this idle core. A
 * submit then skips its own step (rt_sched_publish): the orchestrator
 * pushes and goes on.
 *
 * How often a fetching core that has parked looks at its ready queue
 * again: the bound on how long a task can wait in the queue while this
 * core sleeps, when no other thread runs a step that would wake it (every
 * busy core inside a long kernel). Not per task: a parked core wakes on
 * this timer only while it stays parked. */
#define RT_FETCH_RECHECK_NS 1000000u

struct fetch {
    struct rt_run *run;
    struct rt_ready_queue *queue; /* the ready queue of this core's type */
    uint32_t core_id;
    uint32_t core_type;
    uint64_t kicked_head;         /* the queue head of the last fetch's kick */
    uint64_t head;                /* the head the predicate found */
    uint64_t recheck_head;        /* the head at the last recheck, or UINT64_MAX: empty */
};

/* Work in the queue that this core has not kicked for yet. */
static bool work_queued(struct fetch *f)
{
    return rt_rq_peek(f->queue, &f->head) && f->head != f->kicked_head;
}

/* True when the queue holds the same head as at the last recheck. */
static bool stalled(struct fetch *f)
{
    uint64_t head;
    bool queued = rt_rq_peek(f->queue, &head);
    bool same = queued && head == f->recheck_head;
    f->recheck_head = queued ? head : UINT64_MAX;
    if (same)
        f->head = head;
    return same;
}

static int work_to_fetch(void *arg)
{
    struct fetch *f = arg;
    /* A parking core calls this after its announcement (waiters) and a
     * seq_cst fence (simdev's park), pairing with the submit's push, fence
     * and look at waiters (rt_sched_publish): either the submit sees this
     * core parked, or this peek sees its task. */
    if (!work_queued(f))
        return 0;
    /* The runnable budget: a core that would make more device threads
     * awake than CPUs leaves the work to a sibling that is awake, which
     * takes it without a wake-up (a FIN's step, or its own wait), rather
     * than take a CPU from a thread already working. Two such cores
     * cannot both leave it: each parks announced (waiters, then a fence)
     * before its last look, so the later one sees the earlier parked. */
    return platform_hint_budget_fits() || !rt_fetcher_awake(f->run, f->core_type, f->core_id);
}

/* Once the run is usable (or a dispatch came): this core's scheduler, and
 * fetching from the ready queue of its type. */
static void start_fetching(struct rt_run *run, const struct simdev_core_ctx *ctx,
                           uint32_t *owner, struct fetch *fetch)
{
    *owner = rt_core_owner(run->aic_count, run->cluster_count, run->schedulers, ctx->core_id);
    fetch->run = run;
    fetch->queue = &run->ready[ctx->core_type == SIMDEV_CORE_AIC ? RT_SHAPE_AIC : RT_SHAPE_AIV];
    fetch->core_id = ctx->core_id;
    fetch->core_type = ctx->core_type;
    /* release: pairs with the acquire in rt_fetcher_awake (placement.h) */
    atomic_store_explicit(&run->core_pulling[ctx->core_id], 1, memory_order_release);
}

/* True once the run of `generation` is initialised without error, so its
 * topology and queues may be read. Not implied by a JOINED round: a
 * launch whose orchestrator never initialised the run joins and leaves
 * on the schedulers' behalf (rt_exit_cores_uninitialised). */
static bool run_usable(struct rt_run *run, uint64_t generation)
{
    /* acquire: pairs with the release of init_generation in
     * rt_aicpu_round, which follows the run's initialisation and any
     * error it latched */
    return atomic_load_explicit(&run->init_generation, memory_order_acquire) == generation &&
           !rt_error(run);
}

/* Waits for the doorbell to move past `last`. Until the core is JOINED
 * with its scheduler the wait is bounded by the round's deadline: at the
 * deadline the core leaves the round (rendezvous.c) and the loop ends. Once
 * JOINED, the owner of the wait is the scheduler, which rings EXIT on
 * every path out of rt_schedule; a lost device ends it too. With `fetch`,
 * work in the ready queue ends it as well (*value is then `last`), looked
 * at while the core spins and every RT_FETCH_RECHECK_NS while it sleeps.
 * Without it, a round found JOINED with its run initialised ends it (the
 * caller starts fetching).
 * Returns 0 with *value, 1 when the core left the round, 2 when the round
 * is JOINED and the core does not fetch yet, or a device error. */
static int wait_doorbell(const struct simdev_core_ctx *ctx, struct rt_run *run,
                         struct rt_rendezvous *rendezvous, uint64_t generation, bool *joined,
                         uint64_t deadline, uint64_t last, struct fetch *fetch, uint64_t *value)
{
    for (;;) {
        if (!fetch && rt_rendezvous_joined(rendezvous, generation) &&
            run_usable(run, generation)) {
            *joined = true;
            return 2;
        }
        uint64_t timeout = RT_FETCH_RECHECK_NS;
        if (!*joined) {
            uint64_t now = platform_clock_ns();
            if (now >= deadline) {
                /* model: round_gate.pml, rt_rendezvous_leave in CoreHalf */
                if (rt_rendezvous_leave(rendezvous, generation, RT_RENDEZVOUS_CORE))
                    return 1;
                *joined = true;
                continue;
            }
            if (deadline - now < timeout)
                timeout = deadline - now;
        }
        /* acquire (in simdev): pairs with the scheduler's release of the
         * doorbell after it wrote the payload */
        int rc = fetch ? platform_wait_doorbell_or(ctx->regs, last, timeout, value,
                                                      work_to_fetch, fetch)
                       : platform_wait_doorbell(ctx->regs, last, timeout, value);
        if (rc == PTO_RUNTIME_ERR_TIMEOUT) {
            /* Time to look again. A queue whose head has not moved since
             * the last look is fetched from whatever the budget: nobody
             * took a task for a whole period (the awake cores may all be
             * in kernels that wait for more cores to start theirs). A
             * moving queue is left to the cores that move it. */
            if (fetch && stalled(fetch)) {
                *value = last;
                return 0;
            }
            continue; /* or the round's deadline */
        }
        if (rc != 0)
            return rc;
        /* Only a JOINED scheduler rings (rendezvous.c). */
        *joined = true;
        return 0;
    }
}

/* This core's payload slots and rendezvous word in the arena at `run`,
 * laid out by `config`; false when the config lays out no run. */
static bool find_core_words(const struct simdev_core_ctx *ctx, struct rt_run *run,
                            const struct rt_config *config, struct rt_dispatch **payload,
                            struct rt_rendezvous **rendezvous)
{
    struct rt_layout layout;
    if (rt_layout_compute(config, ctx->core_count, &layout) != 0)
        return false;
    *payload = (struct rt_dispatch *)((uint8_t *)run + layout.dispatch) +
               (size_t)ctx->core_id * RT_CORE_QUEUE;
    *rendezvous = rt_rendezvous_words(run, &layout) + ctx->core_id;
    return true;
}

/* Runs every id published up to the doorbell `value`, from *next on; a
 * ring meanwhile extends the batch, an exit ends the round (published ids
 * not yet started are dropped: the run is over). After each FIN the core
 * runs its scheduler's step (*owner: known once the core fetches). Returns
 * the doorbell as it last read it. */
static uint64_t run_published(const struct simdev_core_ctx *ctx, struct rt_run *run,
                              const struct rt_config *config, uint32_t trace,
                              struct rt_dispatch *payload, uint64_t value, uint64_t *next,
                              uint32_t *owner, struct fetch *fetch)
{
    while (!rt_doorbell_is_exit(value) && *next <= rt_doorbell_id(value)) {
        struct rt_dispatch *d = &payload[rt_payload_index(*next)];
        /* A dispatch comes from a scheduler that saw the run
         * initialised (acquire of init_generation, then its release of
         * the doorbell that we acquired): the run's topology is
         * readable now. */
        if (*owner == UINT32_MAX)
            start_fetching(run, ctx, owner, fetch);
        uint64_t trace_begin = RT_TRACE_CLOCK(trace);
        platform_mark(SIMDEV_POINT_KERNEL_BEGIN);
        d->fn(d->args);
        platform_mark(SIMDEV_POINT_KERNEL_END);
        if (trace)
            rt_trace_core_task(config, ctx->core_id, *next, trace_begin);
        /* release (in simdev): the kernel's writes and ctx.failure
         * before the scheduler's acquire of FIN */
        platform_write_cond(ctx->regs, rt_cond_fin(*next));
        (*next)++;
        rt_sched_kick(run, *owner); /* completion, and this core's next tasks */
        /* acquire (in simdev): pairs with the release of the doorbell
         * after the payloads it publishes */
        value = platform_read_doorbell(ctx->regs);
    }
    return value;
}

int rt_core_main(const struct simdev_core_ctx *ctx, const void *args, size_t args_size)
{
    struct rt_launch_args la;
    if (args_size != sizeof la)
        return PTO_RUNTIME_ERR_INTERNAL;
    memcpy(&la, args, sizeof la);
    struct rt_run *run = la.request.arena;
    uint32_t trace = rt_trace_level(&la.request.config); /* loaded once per round */
    if (trace)
        rt_trace_core_begin(&la.request.config, la.generation, ctx->core_id);
    struct rt_dispatch *payload;
    struct rt_rendezvous *rendezvous;
    if (!find_core_words(ctx, run, &la.request.config, &payload, &rendezvous))
        return PTO_RUNTIME_ERR_INTERNAL;
    uint64_t deadline =
        platform_clock_ns() + (uint64_t)la.request.config.sched_timeout_ms * 1000000ull;

    /* Read before arriving: a scheduler rings only once JOINED, so this is
     * the value its first dispatch id is counted from (base + 2). */
    uint64_t last = platform_read_doorbell(ctx->regs);
    uint64_t base = rt_doorbell_id(last);
    platform_mark(SIMDEV_POINT_CORE_JOIN);
    /* model: round_gate.pml, rt_rendezvous_arrive in CoreHalf */
    enum rt_rendezvous_arrival arrival =
        rt_rendezvous_arrive(rendezvous, la.generation, RT_RENDEZVOUS_CORE);
    if (arrival == RT_RENDEZVOUS_PARTNER_LEFT)
        return 0; /* the round ended without this core loop, or the run failed */
    bool joined = arrival == RT_RENDEZVOUS_JOINED;
    /* Hello, after arriving: the condition write wakes an orchestrator
     * waiting for the cores that share its CPU to arrive (aicpu_program.c,
     * let_mates_arrive; it reads the cond sequence before the word). */
    platform_write_cond(ctx->regs, rt_cond_fin(base + 1));
    uint32_t owner = UINT32_MAX; /* this core's scheduler, known once it fetches */
    uint64_t next = base + 2;    /* the next dispatch id to run */
    struct fetch fetch = {.kicked_head = UINT64_MAX, .recheck_head = UINT64_MAX};
    for (;;) {
        uint64_t value;
        int rc = wait_doorbell(ctx, run, rendezvous, la.generation, &joined, deadline, last,
                               owner != UINT32_MAX ? &fetch : NULL, &value);
        if (rc == 1)
            return 0; /* left the round: its AICPU half never came, and reports that */
        if (rc == 2) {
            start_fetching(run, ctx, &owner, &fetch);
            /* Its scheduler opened without waiting for this core loop
             * (scheduler.c, handshake): a step sees it joined now, and
             * gives it what is queued or held for it (a cluster task
             * waiting for its last core). */
            rt_sched_kick(run, owner);
            continue;
        }
        if (rc != 0)
            return rc;
        if (value == last) { /* work queued, the doorbell unmoved: fetch it */
            fetch.kicked_head = fetch.head;
            rt_sched_kick(run, owner);
            continue;
        }
        value = run_published(ctx, run, &la.request.config, trace, payload, value, &next, &owner,
                              &fetch);
        last = value;
        if (rt_doorbell_is_exit(value)) {
            platform_write_cond(ctx->regs, rt_cond_fin(rt_doorbell_id(value)));
            return 0;
        }
    }
}
