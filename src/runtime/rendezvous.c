/*
 * runtime/rendezvous.c — the rendezvous at the start of a round: how a
 * core loop and the scheduler that owns its core agree that they are in the
 * same round, and how either leaves when the other never comes.
 *
 * Owns: one word per core in the arena's rendezvous region (struct
 * rt_rendezvous), written by exactly two parties per round: the core loop
 * of that core and its owning scheduler. Knows nothing of tasks.
 *
 * Protocol (states tagged with the round's launch generation; the launch
 * chain clears the region before each round and never lets two rounds'
 * parties run at once, so the tag is a second line of defence):
 *
 *   EMPTY --core arrives--> CORE_ARRIVED --sched arrives--> JOINED
 *   EMPTY --sched arrives-> SCHED_ARRIVED --core arrives--> JOINED
 *   CORE_ARRIVED  --core's deadline passes--> CORE_LEFT   (sched then leaves at once)
 *   SCHED_ARRIVED --sched's deadline passes-> SCHED_LEFT  (core then leaves at once)
 *
 * Every transition is one compare-and-swap, so exactly one of "joined" and
 * "left" wins a race between an arrival and a deadline. Consequences the
 * core loop and the scheduler rely on:
 *   - a scheduler rings a core's doorbell only once JOINED, so a core loop
 *     that left never misses an exit and a core loop that is JOINED is
 *     always ended by its scheduler's exit (rt_schedule rings it on every
 *     path out);
 *   - a party whose partner never runs (its launch failed, was skipped,
 *     or was queued behind other work past the deadline) leaves by itself
 *     within the run's sched_timeout_ms: no wait without an owner.
 */
#include "runtime/layout.h"
#include "runtime/rendezvous.h"

enum word_state {
    WORD_CORE_ARRIVED = 1,
    WORD_SCHED_ARRIVED = 2,
    WORD_JOINED = 3,
    WORD_CORE_LEFT = 4,
    WORD_SCHED_LEFT = 5,
};

/* Compared for equality only: the generation's top bits may fall off. */
static inline uint64_t tag(uint64_t generation, enum word_state s)
{
    return (generation << 3) | (uint64_t)s;
}

static enum word_state arrived(enum rt_rendezvous_side side)
{
    return side == RT_RENDEZVOUS_CORE ? WORD_CORE_ARRIVED : WORD_SCHED_ARRIVED;
}

static enum word_state left(enum rt_rendezvous_side side)
{
    return side == RT_RENDEZVOUS_CORE ? WORD_CORE_LEFT : WORD_SCHED_LEFT;
}

static enum rt_rendezvous_side other(enum rt_rendezvous_side side)
{
    return side == RT_RENDEZVOUS_CORE ? RT_RENDEZVOUS_SCHED : RT_RENDEZVOUS_CORE;
}

enum rt_rendezvous_arrival rt_rendezvous_arrive(struct rt_rendezvous *r, uint64_t generation,
                                      enum rt_rendezvous_side side)
{
    /* model: round_gate.pml, rt_rendezvous_arrive in SchedHalf / CoreHalf */
    uint64_t partner_waiting = tag(generation, arrived(other(side)));
    uint64_t partner_gone = tag(generation, left(other(side)));
    /* acquire: pairs with the partner's acq_rel swap below, so a joined
     * party sees what its partner wrote before arriving */
    uint64_t seen = atomic_load_explicit(&r->word, memory_order_acquire);
    for (;;) {
        if (seen == partner_gone)
            return RT_RENDEZVOUS_PARTNER_LEFT;
        bool join = seen == partner_waiting;
        uint64_t next = join ? tag(generation, WORD_JOINED) : tag(generation, arrived(side));
        /* acq_rel: publishes this party's earlier writes to the partner and
         * sees the partner's; pairs with the same swap on the other side */
        if (atomic_compare_exchange_weak_explicit(&r->word, &seen, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return join ? RT_RENDEZVOUS_JOINED : RT_RENDEZVOUS_WAITING;
    }
}

bool rt_rendezvous_leave(struct rt_rendezvous *r, uint64_t generation, enum rt_rendezvous_side side)
{
    /* model: round_gate.pml, rt_rendezvous_leave (the deadline) */
    uint64_t expected = tag(generation, arrived(side));
    /* acq_rel: pairs with the partner's swap in rt_rendezvous_arrive */
    if (atomic_compare_exchange_strong_explicit(&r->word, &expected, tag(generation, left(side)),
                                                memory_order_acq_rel, memory_order_acquire))
        return true;
    /* The swap failed: the partner joined meanwhile (JOINED), or the word
     * belongs to another round, which never happens while the launch chain
     * keeps rounds apart; leaving is then the safe answer. */
    return expected != tag(generation, WORD_JOINED);
}

bool rt_rendezvous_joined(const struct rt_rendezvous *r, uint64_t generation)
{
    /* acquire: pairs with the joining swap in rt_rendezvous_arrive */
    return atomic_load_explicit(&r->word, memory_order_acquire) == tag(generation, WORD_JOINED);
}

bool rt_rendezvous_core_settled(const struct rt_rendezvous *r, uint64_t generation)
{
    /* acquire: pairs with the swaps in rt_rendezvous_arrive and rt_rendezvous_leave */
    uint64_t word = atomic_load_explicit(&r->word, memory_order_acquire);
    return word == tag(generation, WORD_CORE_ARRIVED) || word == tag(generation, WORD_JOINED) ||
           word == tag(generation, WORD_CORE_LEFT) || word == tag(generation, WORD_SCHED_LEFT);
}

struct rt_rendezvous *rt_rendezvous_words(void *arena, const struct rt_layout *layout)
{
    return (struct rt_rendezvous *)((uint8_t *)arena + layout->rendezvous);
}
