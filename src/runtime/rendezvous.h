/*
 * runtime/rendezvous.h — the rendezvous at the start of a round: one word
 * per core where its core loop and the scheduler that owns it meet
 * (rendezvous.c has the protocol).
 *
 * Owns: the word and its four operations. Only a scheduler JOINED with the
 * core in this round rings its doorbell (core_regs.h has the register
 * values). Must not know tasks, runs or the doorbell itself.
 */
#ifndef SIMPLER_RUNTIME_RENDEZVOUS_H
#define SIMPLER_RUNTIME_RENDEZVOUS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/cpu.h"

struct rt_layout;

/* One core's rendezvous word, on its own cache line: the core loop and its
 * scheduler both swap it, nobody else touches it. The launch chain zeroes
 * the region before every round. */
struct rt_rendezvous {
    _Alignas(RT_CACHELINE) _Atomic uint64_t word;
};

enum rt_rendezvous_side { RT_RENDEZVOUS_CORE, RT_RENDEZVOUS_SCHED };
enum rt_rendezvous_arrival {
    RT_RENDEZVOUS_JOINED,       /* the partner was waiting: both are in the round */
    RT_RENDEZVOUS_WAITING,      /* first to arrive: wait for the partner, up to a deadline */
    RT_RENDEZVOUS_PARTNER_LEFT, /* the partner arrived and left: leave at once */
};

/* Arrives for round `generation` on `side`. */
enum rt_rendezvous_arrival rt_rendezvous_arrive(struct rt_rendezvous *r, uint64_t generation,
                                                enum rt_rendezvous_side side);
/* After RT_RENDEZVOUS_WAITING and a missed deadline: true if this side left
 * the round (the partner will see it); false if the partner joined first,
 * so the round goes on. */
bool rt_rendezvous_leave(struct rt_rendezvous *r, uint64_t generation,
                         enum rt_rendezvous_side side);
/* True once both sides are in round `generation`. */
bool rt_rendezvous_joined(const struct rt_rendezvous *r, uint64_t generation);
/* True once the core loop has arrived in round `generation`, or the round
 * is over without it (either side left). */
bool rt_rendezvous_core_settled(const struct rt_rendezvous *r, uint64_t generation);
/* The rendezvous region of `arena` laid out by `layout`: one word per core. */
struct rt_rendezvous *rt_rendezvous_words(void *arena, const struct rt_layout *layout);

#endif /* SIMPLER_RUNTIME_RENDEZVOUS_H */
