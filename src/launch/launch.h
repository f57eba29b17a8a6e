/*
 * launch/launch.h — the host side of the runtime: putting runtime work on
 * device streams.
 *
 * Owns: sizing a run's arena; the launch chain's streams, events and
 * gate, the table of the only device operations a chain may use, and the
 * drain of a stream after a failed enqueue; the two callers of the chain
 * (program mode's launcher and rt_run_enqueue, kernel mode's
 * rt_kernel_mode_launch); the enqueue of the callable loader and of the
 * kernel-mode registry ops. Runs on the host; reaches the device through
 * include/simpler/device.h only, and the device-side runtime through the
 * entry points of runtime/entries.h.
 */
#ifndef SIMPLER_LAUNCH_LAUNCH_H
#define SIMPLER_LAUNCH_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/hbg.h"
#include "runtime/runtime.h"
#include "simpler/device.h"

/* Bytes of device arena a run needs with `config` on a device of topology
 * `topo`. 0 or INVALID_ARGUMENT. */
int rt_arena_bytes(const struct rt_config *config, const struct simdev_config *topo,
                   size_t *bytes);

/* A new arena identity for rt_run_request.arena_nonce: nonzero, and
 * distinct from every earlier one of this process (a stale arena's mark
 * never matches a new arena's). Thread-safe. */
uint64_t rt_arena_nonce(void);

/* ------------------------------------------------------ the launch chain */

/*
 * The only device operations a launch of either mode may use to enqueue
 * its chain: enqueue-only calls. The chain allocates nothing, synchronises
 * nothing and queries nothing, and this table is how that is enforced:
 * chain.c calls the device only through it (program mode's failure policy
 * drains the launcher's streams afterwards, outside the chain).
 * rt_launch_simdev_ops is simdev's; tests inject faults through their own.
 */
struct rt_launch_ops {
    int (*record)(simdev_event_t event, simdev_stream_t stream);
    int (*record_handoff)(simdev_event_t event, simdev_stream_t stream);
    int (*wait)(simdev_stream_t stream, simdev_event_t event);
    int (*launch_aicpu)(simdev_stream_t stream, simdev_aicpu_fn fn, uint32_t thread_count,
                        const void *args, size_t args_size);
    int (*launch_aicore)(simdev_stream_t stream, simdev_aicore_fn fn, const void *args,
                         size_t args_size);
    int (*gate_acquire)(simdev_stream_t stream, simdev_sem_t gate);
    int (*gate_release)(simdev_stream_t stream, simdev_sem_t gate);
    int (*memset_async)(void *dev_ptr, int value, size_t bytes, simdev_stream_t stream);
    /* host_build_graph rounds only: the image's one copy. */
    int (*memcpy_async)(void *dst, const void *src, size_t bytes, enum simdev_copy_kind kind,
                        simdev_stream_t stream);
    /* The one question a launch asks of a stream (the caller's, and its
     * capture pairs'): is it capturing, and in which capture. A read that
     * neither waits nor changes anything, as CUDA libraries ask
     * cudaStreamGetCaptureInfo. */
    int (*capture_info)(simdev_stream_t stream, int *capturing, uint64_t *capture_id);
    /* Optional: enqueues a run of the chain's ops on one stream as the
     * entries above would one after the other, taking the stream once
     * (simdev_stream_enqueue_batch's contract). NULL: the chain calls the
     * entries above, op by op — a table that replaces any of them (a
     * test's) must leave this NULL, or its replacements are bypassed. */
    int (*enqueue_batch)(simdev_stream_t stream, const struct simdev_batch_op *ops, size_t count,
                         size_t *enqueued);
    /* Optional, both or neither: a start_here round's enqueues go between
     * them (chain.h), so that its ops start on the launching thread once
     * all are enqueued, in the order they let each other go
     * (simdev_start_here_begin's contract). NULL: each batch starts as its
     * enqueue would alone. */
    void (*start_here_begin)(void);
    void (*start_here_end)(void);
};
extern const struct rt_launch_ops rt_launch_simdev_ops;

/* The launch chain's streams and events, and the round gate: a one-unit
 * device semaphore every kernel-mode round of the context holds from
 * before its round begin until after its status op (docs/kernel-mode.md,
 * "Round gate"; model/round_gate.pml). A kernel-mode context fills one
 * (host/kernel_mode.c); a program-mode launcher has its own, without gate or
 * serial tail (program mode holds no gate and records no tail). */
struct rt_launch_chain {
    simdev_stream_t aicpu, aicore;
    simdev_event_t start, aicore_start, aicore_done, aicpu_done, serial_tail;
    simdev_sem_t gate;
};

/* Waits until `stream` has drained, even if a sync fails on the way (a
 * failed sync waits for nothing): nothing of a failed enqueue may outlive
 * the call that made it. Returns the last sync's code (0: drained clean;
 * the stream's error, cleared; DEVICE_LOST). */
int rt_stream_drain(simdev_stream_t stream);

/* ---------------------------------------------------------- program mode */

/* The launch chain of program-mode runs: its streams and events, and the
 * generation of its last run. */
struct rt_launcher;

/* Creates a launcher on the current device. 0 or a simdev error. */
int rt_launcher_create(struct rt_launcher **out);
/* Destroys it; its streams must be idle (sync the caller stream first). */
int rt_launcher_destroy(struct rt_launcher *launcher);

/* host_build_graph: allocates the launcher's build scratch for runs up to
 * `config` on a device of topology `topo` and writes every page a build
 * writes (not the host arena's heaps, which it never touches), so the
 * first run's build does not pay a first-touch fault per page (microseconds
 * each here, docs/device.md; one a task, without this). 0,
 * OUT_OF_HOST_MEMORY or INVALID_ARGUMENT. */
int rt_launcher_hbg_reserve(struct rt_launcher *launcher, const struct rt_config *config,
                            const struct simdev_config *topo);

/* The generation of the run rt_run_enqueue last enqueued successfully: the
 * run writes it into its result block (rt_run_result.generation), so a
 * caller can tell that block from one an earlier run left there. */
uint64_t rt_launcher_generation(const struct rt_launcher *launcher);

/*
 * Enqueues one run on `stream` and returns without waiting: the run starts
 * after the work already on `stream` and later work on `stream` waits for
 * it. A run that fails makes `stream` carry its status (the negated code)
 * like any failed device op, and writes it to request->result; an op of
 * the chain failing as it executes on a launcher stream reaches `stream`
 * through the chain's events and ends there (hand-off records), so the
 * next run starts on clean launcher streams (docs/runtime.md, "Why every
 * round ends"). Checks
 * arguments first (INVALID_ARGUMENT: NULLs, bad config, arena too small,
 * kernel_count too large) and the device (UNSUPPORTED: fewer than 2 AICPU
 * threads or no cores); a rejected call enqueues nothing.
 */
int rt_run_enqueue(struct rt_launcher *launcher, simdev_stream_t stream,
                   const struct rt_run_request *request);

/*
 * host_build_graph: runs the orchestration of `request` on the calling
 * thread into request->hbg->bank, as rt_run_enqueue would, and enqueues
 * nothing; on success request->hbg->image_bytes holds the image's bytes
 * (and the build's span and task count are written as rt_run_enqueue
 * writes them), so that rt_run_enqueue of the same request ships the image
 * as built, stamped with its run's generation. Lets the caller read the
 * image (keep it) between the build and the launch. Checks the request as
 * rt_run_enqueue does (INVALID_ARGUMENT also for a request whose image is
 * already built); OUT_OF_HOST_MEMORY when the launcher's scratch cannot
 * grow. Uses the launcher's scratch: callers serialise, as for
 * rt_run_enqueue.
 */
int rt_run_build(struct rt_launcher *launcher, const struct rt_run_request *request);

/* ------------------------------------------------------ callable loading */

/*
 * Enqueues the loader on `stream` (one AICPU thread): it validates the image
 * at `image` (device memory, `bytes` long), loads every ELF binary from
 * memory, resolves every symbol and fills `record` (device memory). The op
 * fails with INVALID_ARGUMENT for an image that does not validate, a binary
 * that does not load or a missing symbol (having unloaded what it loaded),
 * and the stream carries that code. record->config is `base` (copied),
 * passed through the orchestration's config function when it has one.
 */
int rt_callable_load_enqueue(simdev_stream_t stream, const void *image, size_t bytes,
                             const struct simpler_run_config *base,
                             struct rt_callable_record *record);

/* Enqueues the unloading of a record filled by a successful load. */
int rt_callable_unload_enqueue(simdev_stream_t stream, struct rt_callable_record *record);

/* ------------------------------------------------------------ kernel mode */

/* Enqueue on `stream` (one AICPU thread) the registration of `binding`
 * (device memory, filled; its context_generation must be `generation`) /
 * its removal. The register op fails with CAPACITY_EXCEEDED when
 * RT_KERNEL_MODE_MAX_CONTEXTS contexts are live and INVALID_STATE for a
 * generation already live; the removal removes the entry only if it is
 * this binding's (another context's entry of the same generation stays),
 * and succeeds when there is none. */
int rt_kernel_mode_register_enqueue(simdev_stream_t stream, struct rt_kernel_mode_binding *binding,
                               uint64_t generation);
int rt_kernel_mode_unregister_enqueue(simdev_stream_t stream, struct rt_kernel_mode_binding *binding,
                                 uint64_t context_generation);

/*
 * host_build_graph: what a kernel-mode round's host build needs beside its
 * target and config. host.entry, host.args and host.kernel_present are the
 * round's (host memory: the orchestration loaded on the host, the call's
 * arguments, its kernels); host.scratch and host.bank the context's, fixed
 * at init; no views (a kernel context's tensors are the caller's device
 * memory: the host never holds their values, so an element read is
 * refused with NOT_HOST_VISIBLE). The build writes host.built_* back.
 */
struct rt_kernel_mode_build {
    struct rt_hbg_host host;
    uint32_t kernel_count;
    uint32_t aic_cores, aiv_cores;
};

/* host_build_graph: a round's image (host memory, `bytes` long: built by
 * rt_kernel_mode_build_image or kept by a prepared call, its header
 * stamped with the round's generation) and the arena's image region it
 * goes to. rt_kernel_mode_launch ships it by one staged copy, so `src` is
 * read only while the launch enqueues. */
struct rt_kernel_mode_image {
    void *dst;
    const void *src;
    size_t bytes;
};

/* What the host of a kernel context hands to rt_kernel_mode_launch: fixed at
 * init except the round generation. */
struct rt_kernel_mode_target {
    uint64_t context_generation;
    void *arena;
    size_t arena_bytes;
    uint32_t schedulers;
};

/*
 * Enqueues one round: `packet` (sp_packet_bytes long, encoded by the host)
 * on `caller` through `chain`:
 *   caller: record start
 *   AICPU:  wait start, acquire gate, round begin (clears the round state),
 *           record aicore_start
 *   AICore: wait aicore_start, core loop, hand-off record aicore_done
 *   AICPU:  program (the packet), wait aicore_done, status op, release gate,
 *           hand-off record aicpu_done
 *   caller: wait aicpu_done, record serial_tail
 * Everything a round does to the context's round state lies between its
 * acquire and its release, so rounds of one context never overlap, whether
 * they run eagerly or as replays of captured graphs on other streams. The
 * status op runs before the release, so no later round can overwrite the
 * result block first, and its failure reaches the caller through
 * aicpu_done. `config` is the round's layout config (the callable's).
 * Caller serialises launches on one chain. An enqueue that fails before the
 * program is enqueued refuses the launch: the round never runs, what was
 * enqueued is closed off (its core loop cancelled, the context's streams
 * handed off clean, the next round kept behind it) and the code returned.
 * Once the program is enqueued the rest of the chain is retried until it
 * is enqueued (a few attempts): 0, or, if that still fails, its code — the
 * round then runs but work after it on `caller` is not ordered after it.
 * *gate_lost (may be NULL) is set when the round's gate release could not
 * be enqueued at all: the unit is never given back, so the caller must
 * accept no further round on the chain and close it without taking the
 * gate (destroying it ends every acquire waiting for it).
 */
int rt_kernel_mode_launch(const struct rt_launch_ops *ops, const struct rt_launch_chain *chain,
                     simdev_stream_t caller, const struct rt_kernel_mode_target *target,
                     const struct rt_config *config, uint64_t round_generation,
                     const void *packet, size_t packet_bytes,
                     const struct rt_kernel_mode_image *image, bool *gate_lost);


/*
 * Runs the host build of round `round_generation` of `target` with
 * `config` (runtime HBG) into build->host.bank: the image into *image
 * (the bank), its bytes into *bytes, and the arena's image region, where
 * the round's staged copy puts it, into *dst. Host work only: no device
 * call, no allocation. A build the orchestration or the capacity fails
 * still leaves an image (its header carries the code, and the round fails
 * with it on the device); INVALID_ARGUMENT when nothing can be built.
 * A launch runs it before rt_kernel_mode_launch (unless its prepared call
 * kept an image); a graph update runs it to rebuild a captured round's
 * image for new arguments.
 */
int rt_kernel_mode_build_image(const struct rt_kernel_mode_target *target,
                               const struct rt_config *config, uint64_t round_generation,
                               struct rt_kernel_mode_build *build, void **dst, size_t *bytes);

/*
 * A round as a caller's executable graph recorded it: the program launch
 * node is the one whose arguments carry the packet. rt_kernel_mode_round_packet
 * says whether launch node `node` (its argument bytes `args`) is the
 * program of a round of context `context_generation`, and if so points
 * *packet into `args` at its packet (*packet_bytes long) and writes the
 * round's generation to *round_generation. Reads nothing but `node` and
 * `args`.
 */
bool rt_kernel_mode_round_packet(const struct simdev_launch_node *node, const void *args,
                                 uint64_t context_generation, const void **packet,
                                 size_t *packet_bytes, uint64_t *round_generation);

/* Writes to `out` (`capacity` bytes) the program arguments `args` (a
 * round's, as rt_kernel_mode_round_packet accepted them) with the packet
 * replaced by `packet`: the round's generations, schedulers and config
 * stay. Its length into *out_bytes. INVALID_ARGUMENT when it does not fit. */
int rt_kernel_mode_round_rebind(const void *args, const void *packet, size_t packet_bytes,
                                void *out, size_t capacity, size_t *out_bytes);

#endif /* SIMPLER_LAUNCH_LAUNCH_H */
