/*
 * park_either.pml — a sleep on two wait words at once (src/simdev/park.c,
 * sd_wait_either; the idle AICPU worker of src/simdev/worker.c, asleep on
 * its own word and on the word a launch of several AICPU threads wakes
 * them all on). The waiter follows park_wake.pml's protocol on each word:
 * it looks at both sequences, then at the predicate, sets the sleeper bit
 * on each with a compare-and-swap from the value it looked at (a failed
 * swap: look again), and only then sleeps on both (futex_waitv, which
 * parks only while every word still holds the value it armed, the check
 * and the enqueue one step, and returns once either word is woken). The
 * wakers are park_wake.pml's sd_wake, unchanged, on one word or the other.
 * Checked exhaustively by SPIN (`make verify`, tools/verify.sh).
 *
 * What is modelled:
 *   - seq[0] (a worker's own word), seq[1] (the shared word): bit 0 the
 *     sleeper bit, the count of wakes above it.
 *   - SLEEPERS waiters on both words.
 *   - One waker that makes the predicate true and wakes either word (SPIN
 *     tries both: a one-thread launch wakes the worker's own word, a
 *     launch of several the shared one).
 *   - NOISE wakers that change nothing the sleepers wait for and wake each
 *     word once.
 *
 * Checked: no sleeper stays parked once the predicate is true and every
 * waker has finished (an invalid end state), and the futex syscalls made
 * never exceed the times a waiter set a bit (a bit armed on a word whose
 * sleep did not follow costs at most one needless syscall).
 *
 * Mutants (tools/verify.sh checks that SPIN finds each one's error):
 * MUTANT_ARM_OWN_ONLY (the waiter sets the bit on its own word only: a
 * wake of the shared word sees no bit, makes no syscall, and the waiter
 * sleeps on), MUTANT_SLEEP_ON_OWN (the waiter sleeps on its own word
 * only, as sd_wait would: the shared word's wake never reaches it).
 */

#define SLEEPERS 2
#define NOISE 1

byte seq[2];
bit cond = 0;
bit parked[SLEEPERS];  /* in the futex queue (of both words, or of word 0) */
bit on_shared[SLEEPERS]; /* queued on word 1 too */
byte arms = 0;         /* times a waiter set a bit */
byte syscalls = 0;     /* futex wakes made */
byte done = 0;         /* processes finished */

/* FUTEX_WAKE of every sleeper queued on word w */
inline futex_wake_all(w) {
    atomic {
        syscalls++;
        byte k = 0;
        do
        :: k < SLEEPERS ->
            if
            :: w == 0 || on_shared[k] -> parked[k] = 0
            :: else -> skip
            fi;
            k++
        :: else -> break
        od
    }
}

inline sd_wake(w) {
    byte before;
    atomic { before = seq[w]; seq[w] = seq[w] + 2 };
    if
    :: (before & 1) ->
        atomic { before = seq[w]; seq[w] = seq[w] & 254 };
        if
        :: (before & 1) -> futex_wake_all(w)
        :: else -> skip
        fi
    :: else -> skip
    fi
}

/* Sets the bit on word w from `seen` (its value at the look); again = 1
 * when a wake came since. */
inline arm(w, seen) {
    if
    :: (seen & 1) -> skip
    :: else ->
        atomic {
            if
            :: seq[w] == seen -> seq[w] = seen | 1; arms++
            :: else -> again = 1
            fi
        }
    fi
}

proctype Sleeper(byte id)
{
    byte seen0, seen1;
    bit again;
look:
    seen0 = seq[0];
    seen1 = seq[1];
    if
    :: cond -> goto out     /* the predicate holds: the wait ends */
    :: else -> skip
    fi;
    again = 0;
    arm(0, seen0);
    if
    :: again -> goto look
    :: else -> skip
    fi;
#ifndef MUTANT_ARM_OWN_ONLY
    arm(1, seen1);
    if
    :: again -> goto look
    :: else -> skip
    fi;
#endif
    /* futex_waitv: parks only while both words hold what was armed */
    atomic {
#ifdef MUTANT_SLEEP_ON_OWN
        if
        :: seq[0] == (seen0 | 1) -> parked[id] = 1; on_shared[id] = 0
        :: else -> skip
        fi
#elif defined(MUTANT_ARM_OWN_ONLY)
        if
        :: seq[0] == (seen0 | 1) && seq[1] == seen1 -> parked[id] = 1; on_shared[id] = 1
        :: else -> skip
        fi
#else
        if
        :: seq[0] == (seen0 | 1) && seq[1] == (seen1 | 1) -> parked[id] = 1; on_shared[id] = 1
        :: else -> skip
        fi
#endif
    };
    (parked[id] == 0);
    goto look;
out:
    done++
}

proctype Waker()
{
    cond = 1;
    if
    :: sd_wake(0)
    :: sd_wake(1)
    fi;
    done++
}

proctype Noise()
{
    sd_wake(0);
    sd_wake(1);
    done++
}

init {
    atomic {
        byte i = 0;
        do
        :: i < SLEEPERS -> run Sleeper(i); i++
        :: else -> break
        od;
        run Waker();
        i = 0;
        do
        :: i < NOISE -> run Noise(); i++
        :: else -> break
        od
    };
    (done == SLEEPERS + 1 + NOISE);
    assert(syscalls <= arms)
}
