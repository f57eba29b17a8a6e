/*
 * park_wake.pml — the sleeper bit of a simdev wait word (src/simdev/park.c,
 * sd_wake and the park phase of wait_spin_then_park): a waiter parks on the
 * word's futex only with the sleeper bit set in the very value it looked
 * after, and only the waker that clears the bit makes the futex syscall, so
 * the wakes that follow (a retirement per task while the woken thread is
 * still on its way out) make none. Checked exhaustively by SPIN
 * (`make verify`, tools/verify.sh).
 *
 * What is modelled, with the code each step stands for:
 *   - seq: the word (bit 0 the sleeper bit, the count of wakes above it).
 *     Every access is one step, as the code's seq_cst atomics are.
 *   - SLEEPERS waiters (park loop): load seq (seen), look at the predicate
 *     (cond), then set the bit with a compare-and-swap from `seen` unless
 *     it is set there already (a failed swap: look again), then futex_wait
 *     on seen | 1, which parks only while seq still holds that value (the
 *     kernel's check and enqueue are one step) and returns once woken
 *     (no timeouts: a sleeper left parked is a lost wake).
 *   - One waker that makes the predicate true (cond = 1), then sd_wake.
 *   - NOISE wakers that change nothing the sleepers wait for and call
 *     sd_wake twice each (the redundant wakes the bit exists to make
 *     cheap). NOISE 1 keeps `make verify` under a second (326,329
 *     states); NOISE 2 verifies too (62,436,433 states, two minutes).
 *   - sd_wake: fetch_add 2; when the bit was set, fetch_and ~1, and the
 *     futex_wake_all only if that swap still saw the bit.
 *
 * Checked: no sleeper stays parked once the predicate is true and every
 * waker has finished (SPIN's invalid end states: a sleeper blocked in its
 * futex_wait with nobody left to wake it). Also counted and asserted at
 * the end: the futex syscalls made never exceed the number of times a
 * waiter set the bit (the point of the bit).
 *
 * Mutants (tools/verify.sh checks that SPIN finds each one's error):
 * MUTANT_PLAIN_ARM (the waiter sets the bit with a plain store of seen | 1,
 * not a compare-and-swap: a wake between its look and the store is
 * overwritten, and the waiter parks on a value no waker will change
 * again), MUTANT_LOOK_THEN_ADD (the waker decides on a load of the bit
 * before its increment: a waiter that sets the bit in between is never
 * woken).
 */

#define SLEEPERS 2
#define NOISE 1

byte seq = 0;
bit cond = 0;
bit parked[SLEEPERS];  /* in the futex queue */
byte arms = 0;         /* times a waiter set the bit */
byte syscalls = 0;     /* futex_wake_all calls */
byte done = 0;         /* processes finished */

inline futex_wake_all() {
    atomic {
        syscalls++;
        byte k = 0;
        do
        :: k < SLEEPERS -> parked[k] = 0; k++
        :: else -> break
        od
    }
}

inline sd_wake() {
    byte before;
#ifdef MUTANT_LOOK_THEN_ADD
    before = seq;
    seq = seq + 2;
#else
    atomic { before = seq; seq = seq + 2 };
#endif
    if
    :: (before & 1) ->
        atomic { before = seq; seq = seq & 254 };
        if
        :: (before & 1) -> futex_wake_all()
        :: else -> skip
        fi
    :: else -> skip
    fi
}

proctype Sleeper(byte id)
{
    byte seen;
    bit again;
look:
    seen = seq;
    if
    :: cond -> goto out     /* the predicate holds: the wait ends */
    :: else -> skip
    fi;
    again = 0;
    if
    :: (seen & 1) -> skip
    :: else ->
#ifdef MUTANT_PLAIN_ARM
        seq = seen | 1; arms++
#else
        atomic {
            if
            :: seq == seen -> seq = seen | 1; arms++
            :: else -> again = 1   /* a wake came since the look */
            fi
        }
#endif
    fi;
    if
    :: again -> goto look
    :: else -> skip
    fi;
    /* futex_wait(&seq, seen | 1): parks only while seq holds that value */
    atomic {
        if
        :: seq == (seen | 1) -> parked[id] = 1
        :: else -> skip
        fi
    };
    (parked[id] == 0);
    goto look;
out:
    done++
}

proctype Waker()
{
    cond = 1;
    sd_wake();
    done++
}

proctype Noise()
{
    sd_wake();
    sd_wake();
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
