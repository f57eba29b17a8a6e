/*
 * runtime/cpu.h — what the runtime asks of the CPU it runs on.
 *
 * Owns: the cache line size the shared structures are laid out by, the
 * write prefetch the orchestrator issues ahead of its writes, and the
 * pause hint of a polite spin. Hints only: nothing here changes a value.
 */
#ifndef SIMPLER_RUNTIME_CPU_H
#define SIMPLER_RUNTIME_CPU_H

#define RT_CACHELINE 64

/*
 * Asks for the cache line at `p` in a state this thread may write (x86's
 * PREFETCHW; elsewhere the compiler's write prefetch). A hint only: it
 * never faults and changes no value. The orchestrator uses it a few tasks
 * ahead for lines a core wrote last (a slot, a payload), so that the
 * transfer between CPUs overlaps the work before the write rather than
 * stalling it.
 */
static inline void rt_prefetch_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* How many tasks ahead the orchestrator prefetches. */
#define RT_PREFETCH_AHEAD 4u

/* One polite spin step (a CPU pause hint). */
static inline void rt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif /* SIMPLER_RUNTIME_CPU_H */
