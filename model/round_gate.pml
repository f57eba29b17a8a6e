/*
 * round_gate.pml — the rounds of one kernel-mode context on the device:
 * the round gate that keeps them apart, and each round's start and end
 * handshake between its AICPU half (the scheduler, in the program op) and
 * its AICore half (the core loop). Checked exhaustively by SPIN
 * (`make verify`, tools/verify.sh).
 *
 * What is modelled, with the code each step stands for (each code site
 * names its step in a comment "model: round_gate.pml, <Step>"):
 *   - ROUNDS rounds, each on its own pair of lanes (an eager round on the
 *     context's streams, or a replay of a captured graph on its executable
 *     graph's lanes): every pair of rounds may run concurrently, the most
 *     general case; rounds that share a stream are one of its orders.
 *   - The gate (src/simdev/sem.c): a FIFO semaphore of one unit; an
 *     acquire takes a ticket and holds once `granted` passes it. Acquire
 *     and release execute whatever error the lane carries.
 *   - The AICPU lane (src/launch/chain.c, called by src/launch/kernel_launch.c): AcquireGate,
 *     RoundBegin, record aicore_start, Program, WaitAicoreDone, StatusOp,
 *     ReleaseGate. The AICore lane: wait aicore_start, CoreLoop, record
 *     aicore_done.
 *   - Failures: RoundBegin, Program and CoreLoop may each fail as they
 *     execute (the op never starts; later ops of its lane are skipped with
 *     the error, a record hands it on), in every combination.
 *   - The rendezvous word (src/runtime/rendezvous.c): EMPTY, CORE_ARRIVED,
 *     SCHED_ARRIVED, JOINED, CORE_LEFT, SCHED_LEFT; each move one CAS; a
 *     waiting party may leave at its deadline at any time (its deadline is
 *     not modelled as a time: leaving is always enabled, so every
 *     interleaving of arrival and deadline is covered).
 *   - Close (src/host/kernel_mode.c, kernel_release): takes the gate, then
 *     destroys it; acquires after that fail and touch nothing.
 *
 * Checked: (1) only the round that holds the gate touches the context's
 * round state (assert in Touch), never after close; (2) when a round gives
 * the gate back, none of its halves still touches the state; (3) no
 * deadlock: every process ends (SPIN's invalid end states); (4) at the end
 * every unit is back (or the gate is closed) and every JOINED core loop
 * was ended by its scheduler's exit.
 *
 * Mutants (tools/verify.sh checks that SPIN finds each one's error, so the
 * properties above are not vacuous): MUTANT_NO_GATE (the acquire does not
 * wait: two rounds touch the state at once), MUTANT_SKIPPED_RELEASE (the
 * release is skipped after an error like other ops: later rounds wait
 * forever), MUTANT_EARLY_RELEASE (the release comes before the wait for
 * the core loop: the next round starts while this one's core loop runs),
 * MUTANT_NO_OWNER (a program's end does not start the held core loops: a
 * core loop handed out beside another round's program, never asked for,
 * waits forever).
 *
 * Cores started on demand (docs/device.md): a core loop handed out while
 * some program runs is held (held[]) until its scheduler's step starts it
 * (asked[], at any point of SchedHalf), its own program's end runs it on
 * the program's thread (run_here[]: the program ends after the core loop
 * has), or any program ends (simdev's owner of held blocks).
 */

#define ROUNDS 3

byte next_ticket = 0;
byte granted = 1;      /* one unit */
bool gate_dead = false;
bool closed = false;
byte holder = 0;       /* 1 + the round holding the gate; 0: none */
byte touching = 0;     /* halves touching the round state now */

mtype = { EMPTY, CORE_ARRIVED, SCHED_ARRIVED, JOINED, CORE_LEFT, SCHED_LEFT };
mtype word = EMPTY;    /* the context's rendezvous word (one core) */

bool aicore_start[ROUNDS];
bool aicore_start_err[ROUNDS];
bool aicore_done[ROUNDS];
bool aicore_done_err[ROUNDS];
bool exit_rung[ROUNDS];
/* Cores started on demand (docs/device.md): a core loop handed out while
 * a program runs is held until its scheduler starts it, the program runs
 * it at its end, or a program ends (any: the owner in simdev). */
byte programs_running = 0;
bool held[ROUNDS];
bool asked[ROUNDS];
bool run_here[ROUNDS];
bool core_done[ROUNDS];
bool lane_end[2 * ROUNDS];

inline Touch(r) {
    atomic {
        assert(holder == r + 1 && !closed);
        touching++
    }
}
inline Untouch() { touching-- }

/* The scheduler's half of the rendezvous (scheduler.c), inside Program.
 * A waiting scheduler does not block on its core: it opens at once and a
 * step sees the core join (rt_sched_see_joins); at the round's end, or at
 * the watchdog's stall, it leaves the word (rt_sched_leave_waiting), whose
 * compare-and-swap finds JOINED instead when the core loop came first.
 * Either way it is the choice below: see JOINED, or leave while still
 * SCHED_ARRIVED, at any time. */
inline SchedHalf(r, joined, waiting) {
    Touch(r);
    atomic {                                   /* rt_rendezvous_arrive */
        if
        :: word == CORE_ARRIVED -> word = JOINED; joined = true
        :: word == CORE_LEFT -> skip                    /* partner left: leave */
        :: word == EMPTY -> word = SCHED_ARRIVED; waiting = true
        fi
    }
    if                                         /* a step starts the core (start_cores) */
    :: atomic { asked[r] = true; held[r] = false }
    :: skip
    fi;
    if
    :: waiting ->
        do
        :: atomic { word == JOINED -> joined = true; break }
        :: atomic { word == SCHED_ARRIVED -> word = SCHED_LEFT; break } /* rt_rendezvous_leave */
        od
    :: else -> skip
    fi;
    if
    :: joined -> exit_rung[r] = true  /* rt_schedule rings every JOINED core on its way out */
    :: else -> skip
    fi;
    Untouch()
}

/* The core loop's half (core_loop.c). */
inline CoreHalf(r, joined, waiting) {
    Touch(r);
    atomic {                                   /* rt_rendezvous_arrive */
        if
        :: word == SCHED_ARRIVED -> word = JOINED; joined = true
        :: word == SCHED_LEFT -> skip
        :: word == EMPTY -> word = CORE_ARRIVED; waiting = true
        fi
    }
    if
    :: waiting ->
        do
        :: atomic { word == JOINED -> joined = true; break }
        :: atomic { word == CORE_ARRIVED -> word = CORE_LEFT; break } /* rt_rendezvous_leave */
        od
    :: else -> skip
    fi;
    if
    :: joined -> exit_rung[r]          /* a JOINED core loop ends at its scheduler's exit */
    :: else -> skip
    fi;
    Untouch()
}

proctype AicpuLane(byte r) {
    byte t;
    byte i;
    bool carried = false;
    bool joined = false;
    bool waiting = false;
AcquireGate:
    atomic { t = next_ticket; next_ticket++ }
    atomic {
#ifdef MUTANT_NO_GATE
        true ->
#else
        (granted > t || gate_dead) ->
#endif
        if
        :: gate_dead -> carried = true   /* stale handle: INVALID_STATE */
        :: else -> holder = r + 1
        fi
    }
RoundBegin:
    if
    :: !carried ->
        if
        :: Touch(r); word = EMPTY; Untouch()   /* clears the round state */
        :: carried = true                      /* fails as it executes */
        fi
    :: else -> skip
    fi;
    atomic { aicore_start_err[r] = carried; aicore_start[r] = true }
Program:
    if
    :: !carried ->
        if
        :: programs_running++;
           SchedHalf(r, joined, waiting);
           /* its last thread runs the core loop never started, here
            * (platform_cores_run_unstarted): the program ends after it */
           atomic { if :: held[r] -> held[r] = false; run_here[r] = true :: else -> skip fi };
           if
           :: run_here[r] -> core_done[r]
           :: else -> skip
           fi;
           atomic {                            /* a program's end starts every held core loop */
               programs_running--;
#ifndef MUTANT_NO_OWNER
               for (i : 0 .. ROUNDS - 1) { held[i] = false }
#endif
           }
        :: carried = true                      /* never starts */
        fi
    :: else -> skip
    fi;
#ifndef MUTANT_EARLY_RELEASE
WaitAicoreDone:
    aicore_done[r];                            /* a wait always waits */
    carried = carried || aicore_done_err[r];
StatusOp:
    if
    :: !carried -> Touch(r); Untouch()         /* reads the result block */
    :: else -> skip
    fi;
#endif
ReleaseGate:
    atomic {
        if
#ifdef MUTANT_SKIPPED_RELEASE
        :: carried -> skip                     /* skipped like any op after an error */
        :: !carried && !gate_dead ->
#else
        :: !gate_dead ->
#endif
            assert(holder == r + 1);
            assert(touching == 0);             /* none of its halves still at work */
            holder = 0;
            granted++
        :: else -> skip                        /* stale: nothing to give back */
        fi
    }
#ifdef MUTANT_EARLY_RELEASE
    aicore_done[r];
#endif
    lane_end[2 * r] = true
}

proctype AicoreLane(byte r) {
    bool carried;
    bool joined = false;
    bool waiting = false;
    aicore_start[r];
    carried = aicore_start_err[r];
CoreLoop:
    if
    :: !carried ->
        if
        :: atomic { held[r] = programs_running > 0 && !asked[r] }; /* the hand-out */
           !held[r];                           /* started, run here, or a program ended */
           CoreHalf(r, joined, waiting);
           core_done[r] = true
        :: carried = true                      /* never starts */
        fi
    :: else -> skip
    fi;
    atomic { aicore_done_err[r] = carried; aicore_done[r] = true }
    lane_end[2 * r + 1] = true
}

proctype Close() {
    byte t;
    atomic { t = next_ticket; next_ticket++ }
    atomic { granted > t -> holder = 255 }     /* waits for the round ahead of it */
    atomic { gate_dead = true; closed = true; holder = 0 }
}

init {
    byte i;
    atomic {
        for (i : 0 .. ROUNDS - 1) {
            run AicpuLane(i);
            run AicoreLane(i)
        }
        if
        :: run Close()
        :: skip
        fi
    }
    (_nr_pr == 1);
    assert(touching == 0);
    assert(gate_dead || granted == next_ticket + 1);
    for (i : 0 .. 2 * ROUNDS - 1) {
        assert(lane_end[i])
    }
}
