/*
 * simpler/simpler.h — the host API: contexts, callables and runs.
 *
 * Owns: the program-mode surface a host program calls. A context is created
 * with no identity; simpler_init latches it to PROGRAM for good (DESIGN.md
 * section 1). In program mode the context owns its device: it binds it,
 * creates its own streams and device arenas, and stages host tensors in and
 * out of device memory around each run.
 *
 * A run goes through four calls, each invocation preparing its own inputs
 * and being submitted once (or, through a prepared call, prepared once and
 * submitted many times: simpler_prepare_call, simpler_submit_call):
 *   simpler_prepare_run   snapshot the args, take a pipeline slot, stage
 *                         IN/INOUT host tensors onto the device
 *   simpler_launch_run    enqueue it on the device (in launch order) and return
 *   simpler_poll_run /
 *   simpler_wait_run      this run's status: 0 or its own negative code
 *   simpler_finalize_run  copy OUT/INOUT back (only after success), release
 * simpler_run does all four. Up to pipeline_depth runs may be unfinalized at
 * once; later runs queue on the device behind earlier ones.
 *
 * Conventions: every call returns 0 or a negative code from status.h
 * (PTO_RUNTIME_ERR_NOT_READY from poll is "still running", not a failure).
 * Arguments are checked first (INVALID_ARGUMENT), then the context's state
 * (INVALID_STATE), then the work; a rejected call changes nothing. A run's
 * own failure (an orchestrator error, a kernel's failure code, a scheduler
 * timeout: codes -1..-999) is that run's status only; the next run works.
 * Once the device is lost, calls that need it return DEVICE_LOST.
 *
 * Threads: calls on one context may come from several threads. Several
 * threads may poll or wait for the same run (a waiter whose run another
 * thread finalizes meanwhile gets INVALID_STATE); launch and finalize of
 * one run belong to one thread at a time. wait (and finalize of a run
 * still running) waits without holding the context, so other threads keep
 * preparing and launching meanwhile; register, unregister, a launch that
 * fails part-way and the release of a stranded run still on the device wait
 * for the device while holding it, and other calls on the context wait for
 * them. Every call makes the context's device the calling thread's current
 * device (simdev_set_device).
 *
 * Host tensors: the descriptors are copied at prepare, but the buffers they
 * point at are the caller's and must stay valid until the run is finalized:
 * IN/INOUT bytes are read at prepare (and again by a launch retried after a
 * failure), OUT/INOUT elements are written at finalize.
 */
#ifndef SIMPLER_SIMPLER_H
#define SIMPLER_SIMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/callable.h"
#include "simpler/orchestration.h"
#include "simpler/device.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct simpler_context;

/*
 * The version of the library running this program, "MAJOR.MINOR.PATCH"
 * (static storage, never NULL). simpler/version.h has the version the
 * program was compiled against as SIMPLER_VERSION_MAJOR/MINOR/PATCH.
 */
const char *simpler_version(void);

#define SIMPLER_MAX_PIPELINE_DEPTH 16
#define SIMPLER_MAX_CALLABLE_IDS 1024 /* callable ids are 0..this-1 */
#define SIMPLER_MAX_CAPTURES 16       /* kernel mode: captures open at once, at most */

/* Context-wide sizes, fixed by simpler_init. */
struct simpler_config {
    uint32_t pipeline_depth;     /* unfinalized runs at once, 1..SIMPLER_MAX_PIPELINE_DEPTH; default 4 */
    uint32_t max_callables;      /* registered at once, 1..SIMPLER_MAX_CALLABLE_IDS; default 64 */
    uint64_t callable_bytes;     /* image bytes registered at once; default 256 MiB */
    struct simpler_run_config run_capacity; /* the largest run: the device arena is sized
                                               for it; default simpler_run_config_default */
    /* Appended by the kernel-mode contract work; the fields above keep their offsets. */
    uint32_t max_captures;       /* kernel mode: stream captures that may hold launches of the
                                    context at once, 1..SIMPLER_MAX_CAPTURES; default 4;
                                    committed at init (a pair of streams each); ignored in
                                    program mode, which captures nothing */
    /* Appended by host_build_graph; the fields above keep their offsets. */
    uint32_t runtime;            /* SIMPLER_RUNTIME_TMR (default) or SIMPLER_RUNTIME_HBG: which
                                    runtime runs every run of the context, fixed by init; the
                                    environment's SIMPLER_RUNTIME=tmr|hbg, when set, overrides
                                    it at init (docs/runtime.md, "host_build_graph") */
};

/* The runtimes (simpler_config.runtime). TMR, tensormap-and-ringbuffer:
 * the orchestration runs on the device's control CPU while tasks execute,
 * in bounded rings. HBG, host_build_graph: the orchestration runs on the
 * host to completion and the whole graph reaches the device in one copy;
 * the device only schedules. Same callables, entries, codes and pipeline
 * semantics; HBG's limits are docs/runtime.md's. */
#define SIMPLER_RUNTIME_TMR 0
#define SIMPLER_RUNTIME_HBG 1

/* Writes the defaults above. INVALID_ARGUMENT for NULL. */
int simpler_config_default(struct simpler_config *out);

/* ---------------------------------------------------------------- context */

/* Creates a context with no identity. 0, INVALID_ARGUMENT or
 * OUT_OF_HOST_MEMORY. */
int simpler_create_device_context(struct simpler_context **out);

/*
 * Destroys a context (NULL: no-op). INVALID_STATE, and nothing is destroyed,
 * while it is initialised: simpler_finalize_device first.
 */
int simpler_destroy_device_context(struct simpler_context *ctx);

/*
 * Latches the PROGRAM identity (INVALID_STATE if the context holds another),
 * binds `device_id`, creates the context's streams and device arenas sized
 * from `config` (NULL: defaults; borrowed for the call). INVALID_ARGUMENT for
 * a bad device id or config (including more scheduler threads than the
 * device has AICPU threads for); INVALID_STATE when already initialised or
 * when another program context owns the device; UNSUPPORTED when the device
 * cannot run the runtime (fewer than 2 AICPU threads). A failure after the latch releases what this call created; the
 * identity stays PROGRAM and init may be retried.
 */
int simpler_init(struct simpler_context *ctx, int device_id, const struct simpler_config *config);

/*
 * Releases everything the context holds and resets its device; afterwards
 * committed device memory is 0 and the context may be initialised again
 * (as PROGRAM). INVALID_STATE, changing nothing, when not initialised,
 * while a prepared call of the context is alive (in either identity:
 * simpler_release_call each first; the caller holds their pointers), in
 * kernel mode while a stream capture holding launches of the context has
 * not ended (closing would break the caller's capture: end it first), or
 * while a run is unfinalized, unless every unfinalized run is *stranded*:
 * a finalize of it failed on a device operation (simpler_finalize_run
 * returned a device code, or simpler_run gave up on it) and nobody is
 * waiting for it. Stranded runs are released first — after what is left
 * of them on the device has finished — without delivering their outputs,
 * and counted in simpler_context_info.stranded_runs_released. A failure
 * leaves what is not yet released in place; a retry does only what is left.
 */
int simpler_finalize_device(struct simpler_context *ctx);

/* Bytes of device memory the context holds now (0 for NULL or an
 * uninitialised context). */
size_t simpler_committed_device_memory(const struct simpler_context *ctx);

/* The runs a context holds, the stranded runs it gave up, and its
 * preparation work. */
struct simpler_context_info {
    uint32_t unfinalized_runs;       /* runs holding a pipeline slot now */
    uint32_t stranded_runs;          /* of those, runs whose finalize failed on a
                                        device operation (see simpler_finalize_device) */
    uint64_t stranded_runs_released; /* stranded runs released by finalize_device,
                                        unregister or simpler_release_call since the
                                        context was created; their outputs were not
                                        delivered by them */
    /* Appended by the prepared-call work; the fields above keep their offsets. */
    uint64_t host_preparations;      /* times the preparation step (validate and
                                        snapshot the args, resolve the config; in
                                        kernel mode, encode the packet) ran: once
                                        per successful simpler_prepare_call,
                                        simpler_prepare_run and simpler_kernel_mode_launch
                                        (a refused one counts nothing); never for a
                                        submission or launch of a prepared call, nor
                                        for a replay */
    uint64_t prepared_calls;         /* simpler_prepare_call's calls alive now */
    uint64_t packets_encoded;        /* kernel mode: invocation packets encoded, by
                                        a successful prepare or unprepared launch (0
                                        in program mode, which has none) */
    /* Appended by host_build_graph; the fields above keep their offsets. */
    uint64_t host_orchestration_loads; /* times a callable's orchestration was loaded
                                          in the host process: once per registration
                                          under SIMPLER_RUNTIME_HBG, never per run
                                          (0 under TMR, whose orchestration only the
                                          device loads) */
    uint32_t runtime;                /* the SIMPLER_RUNTIME_* the context was
                                        initialised with (the environment's
                                        override applied); TMR before init */
    /* Appended by the host_build_graph prepared call; the fields above keep
     * their offsets. All 0 under TMR. */
    uint64_t host_orchestration_unloads; /* host loads undone: one per HBG
                                            callable unregistered (or released by
                                            finalize_device) */
    uint64_t host_builds;            /* HBG launches whose graph the host built
                                        (ran the orchestration): every launch of a
                                        simpler_prepare_run / simpler_run, and a
                                        prepared call's submissions that had no
                                        kept image to publish; in kernel mode every
                                        launch and graph update */
    uint64_t host_builds_skipped;    /* HBG program mode: submissions that
                                        published the image their prepared call
                                        kept instead of building (docs/runtime.md,
                                        "A prepared call keeps its image") */
};

/* Writes the context's info to *info (borrowed). INVALID_ARGUMENT for NULL.
 * Works on a context of either identity (a kernel context has no runs: its
 * run fields are 0) and on an uninitialised one (no runs; the counts stay
 * readable after simpler_finalize_device). Touches no device. */
int simpler_get_context_info(const struct simpler_context *ctx, struct simpler_context_info *info);

/* -------------------------------------------------------------- callables */

/*
 * Validates `image` (`bytes` long, borrowed for the call; see callable.h),
 * uploads it once and loads its orchestration and kernels on the device
 * under `callable_id`. INVALID_ARGUMENT for a bad id or image, or binaries
 * that do not load or lack their symbols; INVALID_STATE when the id is in
 * use; CALLABLE_COUNT_EXCEEDED / CALLABLE_BYTES_EXCEEDED past the config's
 * limits.
 */
int simpler_register_callable(struct simpler_context *ctx, int32_t callable_id, const void *image,
                              size_t bytes);

/* Unloads and frees a callable. CALLABLE_NOT_RESIDENT when the id is not
 * registered; INVALID_STATE, changing nothing, while a prepared call names
 * it (simpler_release_call first), or while an unfinalized run uses it,
 * unless every such run is stranded (see simpler_finalize_device): those
 * are released first, as finalize_device releases them, and counted. */
int simpler_unregister_callable(struct simpler_context *ctx, int32_t callable_id);

/* ------------------------------------------------------------------- runs */

/* A run handle: nonzero, never reused within a context. */
typedef uint64_t simpler_run_t;

/*
 * A run's arguments, in the callable's signature order: tensors (host
 * tensors are staged, device tensors passed through) then 64-bit scalars
 * (floats bit-cast). Borrowed for the call: prepare copies all of it.
 */
struct simpler_args {
    uint32_t tensor_count;
    uint32_t scalar_count;
    const struct simpler_tensor *tensors; /* tensor_count descriptors; NULL when 0 */
    const uint64_t *scalars;              /* scalar_count words; NULL when 0 */
};

/*
 * Prepares one run of `callable_id`: checks the args against the callable's
 * signature (INVALID_ARGUMENT: counts, descriptors, a view outside its
 * buffer, a NULL host buffer, two host tensors whose buffers overlap without
 * being the same buffer), snapshots them, takes a free pipeline slot, and
 * copies each IN/INOUT host tensor into a device buffer the run owns; OUT
 * host tensors get a device buffer but no copy. `config` (borrowed; NULL:
 * the callable's config, see simpler_orch_config_fn) is checked
 * (INVALID_ARGUMENT) and must fit the context's run capacity
 * (CAPACITY_EXCEEDED). When every slot holds an unfinalized run, prepare
 * returns CAPACITY_EXCEEDED at once instead of blocking. May run while
 * earlier runs execute. CALLABLE_NOT_RESIDENT for an unregistered id. On
 * success *run is the new handle; on failure nothing is held.
 */
int simpler_prepare_run(struct simpler_context *ctx, simpler_run_t *run, int32_t callable_id,
                        const struct simpler_args *args, const struct simpler_run_config *config);

/*
 * Enqueues a prepared run behind every run launched before it and returns
 * without waiting. INVALID_STATE for an unknown or finalized handle or a run
 * already launched. When a device operation fails here, the call returns
 * its code and the run stays prepared: launch may be retried (it first
 * copies the IN/INOUT host data in again, since part of the failed attempt
 * may have run) or the run finalized.
 */
int simpler_launch_run(struct simpler_context *ctx, simpler_run_t run);

/* Non-blocking: 0 when the run completed successfully, NOT_READY while it
 * runs, else its own status. INVALID_STATE when not launched. If a device
 * operation of the poll itself fails, its code is returned and nothing is
 * latched: poll again. */
int simpler_poll_run(struct simpler_context *ctx, simpler_run_t run);

/* Blocks until the run completes; returns its own status (0 or negative),
 * the same on every later poll or wait. INVALID_STATE when not launched. If
 * a device operation of the wait itself fails (not the run), its code is
 * returned and nothing is latched: wait again. */
int simpler_wait_run(struct simpler_context *ctx, simpler_run_t run);

/* Counters of a completed run (what its result block on the device said). */
struct simpler_run_info {
    int32_t status;           /* the run's status, as wait returns it */
    uint32_t reserved;
    uint64_t tasks_submitted; /* tasks the orchestration submitted */
    uint64_t tasks_completed;
    uint64_t edges;           /* dependencies the runtime wired */
};

/* Writes the counters of a completed run: INVALID_STATE until a poll or
 * wait has seen it complete, and for an unknown handle. */
int simpler_get_run_info(struct simpler_context *ctx, simpler_run_t run,
                         struct simpler_run_info *info);

/*
 * Ends a run: waits for it if it is still running, copies OUT and INOUT host
 * tensors back if it succeeded (IN never; nothing when it failed), frees its
 * staging buffers and releases its slot; the handle becomes invalid. A run
 * prepared but never launched is released without running. Returns 0 once
 * the run is released (whatever the run's own status was: that is what
 * wait reports). When a device operation of the finalize fails (the wait,
 * a copy back, a free) it returns that code and the run is not released:
 * finalize again, and it redoes only what is left (the run is now stranded:
 * if nobody finalizes it, simpler_finalize_device releases it without its
 * outputs). On a lost device the run is released with nothing delivered
 * (its status, from wait, is DEVICE_LOST) and 0 returned. INVALID_STATE for an unknown or already
 * finalized handle.
 */
int simpler_finalize_run(struct simpler_context *ctx, simpler_run_t run);

/* prepare + launch + wait + finalize. Returns the first failure: a prepare
 * or launch error, else the run's status, else the finalize error (a wait or
 * finalize that fails itself is tried up to three times, since the handle
 * never leaves this call). When `info` is not NULL it receives the run's
 * counters (as simpler_get_run_info), or zeros when the run was launched but
 * its end could not be observed; it is untouched when prepare or launch
 * failed. If every finalize attempt fails, the run stays stranded in its
 * slot (simpler_context_info.stranded_runs): simpler_finalize_device, or
 * unregistering the callable, releases it. */
int simpler_run(struct simpler_context *ctx, int32_t callable_id, const struct simpler_args *args,
                const struct simpler_run_config *config, struct simpler_run_info *info);


/* --------------------------------------------------------- prepared calls */

/*
 * A prepared call (docs/api.md, "Prepared calls"): an invocation resolved
 * once — the args checked against the callable and snapshotted into
 * storage the call owns, the effective run config resolved, the callable
 * referenced (in kernel mode the invocation packet encoded) — and then
 * submitted any number of times, also many times at once. A prepared call
 * is immutable: no submission writes it, and each submission has its own
 * handle, slot, status and retirement. Host tensor *contents* are not part
 * of it: a program-mode submission reads IN/INOUT host bytes when it is
 * submitted and writes OUT/INOUT back at its own finalize, so two queued
 * submissions of one call see the host bytes as each found them.
 *
 * A call pointer is checked before it is read: every entry that takes one
 * first looks it up, under the context's lock, among the context's live
 * calls, so a released call, another context's call or a pointer that
 * never was a call is refused with INVALID_ARGUMENT without being touched
 * (and a release racing a submission on another thread is ordered by that
 * lock: the submission either finds the call alive and counts itself on
 * it, making the release INVALID_STATE, or is refused). Like any pointer
 * handle, a released call's address may be returned by a later prepare,
 * and then names that call.
 */
struct simpler_prepared_call;

/*
 * Prepares an invocation of `callable_id` with `args` and `config` (NULL:
 * the callable's), checking exactly what simpler_prepare_run (program mode)
 * or simpler_kernel_mode_launch (kernel mode) checks, with the same codes,
 * except that no pipeline slot is taken. Everything is copied: the caller
 * may change or free `args`, its arrays and `config` as soon as it returns
 * (the host buffers host tensors point at stay the caller's and must stay
 * valid while a submission uses them). A kernel-mode config must fit the
 * context's committed capacity; its scheduler threads are the context's
 * and its trace level is the context's (fixed at init). *out is NULL on
 * every failure, and a failed prepare changes nothing (an earlier prepared
 * call and the counters included). OUT_OF_HOST_MEMORY when the call's
 * storage cannot be allocated. Touches no device and enqueues nothing, so it may be called
 * while the thread captures a stream.
 */
int simpler_prepare_call(struct simpler_context *ctx, int32_t callable_id,
                         const struct simpler_args *args,
                         const struct simpler_run_config *config,
                         struct simpler_prepared_call **out);

/*
 * Program mode: stages a submission of `call` (takes a free pipeline slot,
 * copies the IN/INOUT host bytes as they are now) and launches it behind
 * every earlier launch, returning its handle in *run without waiting; then
 * poll, wait, get_run_info and finalize it as any run. CAPACITY_EXCEEDED
 * at once when every slot holds an unfinalized run. A staging or launch
 * failure returns its code with *run 0 and the slot released (when that
 * release fails too, the submission is stranded: simpler_release_call of
 * the call releases it, since finalize_device refuses while the call
 * lives). INVALID_ARGUMENT: NULLs, a call that is not alive or is another
 * context's; INVALID_STATE: a kernel context. Never prepares anything:
 * host_preparations does not move.
 */
int simpler_submit_call(struct simpler_context *ctx, const struct simpler_prepared_call *call,
                        simpler_run_t *run);

/*
 * Kernel mode: enqueues one round of `call` on `caller_stream`, exactly as
 * simpler_kernel_mode_launch does, with the packet the call encoded at
 * prepare (nothing is validated or encoded again). The launch takes what
 * it needs: the call may be released as soon as this returns, and a
 * capture records the call's packet, which every replay reuses.
 * INVALID_ARGUMENT: NULLs, a call that is not alive or another context's;
 * INVALID_STATE: a program context, or as simpler_kernel_mode_launch.
 */
int simpler_kernel_mode_launch_call(struct simpler_context *ctx,
                                    const struct simpler_prepared_call *call,
                                    simdev_stream_t caller_stream);

/*
 * Releases a prepared call; its pointer is invalid afterwards. Program
 * mode: INVALID_STATE, changing nothing, while a submission of it is
 * unfinalized, unless every such submission is stranded (see
 * simpler_finalize_device): those are released first and counted. Kernel
 * mode: always allowed (every launch already took what it needs).
 * INVALID_ARGUMENT: NULL, a call that is not alive or another context's.
 * Touches no device unless it releases a stranded submission.
 */
int simpler_release_call(struct simpler_context *ctx, struct simpler_prepared_call *call);

/* ------------------------------------------------------------ diagnostics */

/*
 * Tracing (docs/diagnostics.md): a run whose trace level is above 0 (its
 * simpler_run_config.trace_level, or the environment's
 * SIMPLER_TRACE=<level>[,<path>], read when the context is created, which
 * overrides it) records a swimlane trace on the device. In program mode
 * finalize writes, for every traced run that was launched (failed runs
 * too), three files: the Chrome trace event JSON at the context's trace
 * path (default "simpler-trace.json"; each run overwrites it) and beside it
 * <stem>.deps.json and <stem>.deps.dot, the run's dependency graph. A
 * trace that cannot be written never changes a run's result; the failure
 * is reported on stderr.
 */

/* Sets the path traces are written to (`path` borrowed for the call, at
 * most 4095 bytes). INVALID_ARGUMENT for NULL, empty or too long. */
int simpler_set_trace_path(struct simpler_context *ctx, const char *path);

/* ------------------------------------------------------------ kernel mode */

/*
 * Kernel mode (docs/kernel-mode.md): the context borrows the calling
 * thread's current device and, per launch, the caller's stream. A framework
 * that owns the device and its streams creates a context, calls
 * simpler_kernel_mode_init once, prepares callables once, and then enqueues
 * one whole task-graph round per simpler_kernel_mode_launch on its own
 * stream. simpler never resets the borrowed device, never synchronises,
 * queries or destroys a caller's stream, and never touches memory it did
 * not allocate. Program-mode entries on a kernel context, and kernel-mode
 * entries on a program context, return INVALID_STATE.
 */

/* 1 when kernel launches can run on the calling thread's current device
 * for `ctx` (a context not latched to PROGRAM; a device with at least two
 * AICPU threads and one core that is not lost), else 0. */
int simpler_kernel_mode_supported(const struct simpler_context *ctx);

/*
 * Latches KERNEL and commits, once, everything the context will use on
 * `device_id`: its own AICPU, AICore and control streams, the events of the
 * launch chain, the arena sized for `config->run_capacity` (NULL: the
 * defaults; borrowed for the call) and its device binding.
 * `context_generation` names the context in every packet (0: pick a fresh
 * one; otherwise it must be unique among live kernel contexts).
 * INVALID_ARGUMENT: NULL ctx, bad device id or config (max_captures
 * outside 1..SIMPLER_MAX_CAPTURES, more scheduler threads than the device
 * has AICPU threads for); INVALID_STATE: the context is PROGRAM or already
 * initialised (also after it closed), `device_id` is not the calling
 * thread's current device, or another context (program or kernel) holds
 * that device; UNSUPPORTED: the device cannot run the runtime (fewer than
 * 2 AICPU threads; simdev never offers a device without cores, which a
 * port's device could be), or the config (or SIMPLER_RUNTIME) asks for
 * SIMPLER_RUNTIME_HBG, which kernel mode does not run yet (docs/runtime.md,
 * "host_build_graph"); DEVICE_LOST: the device is lost. Those
 * refusals latch nothing: the context may still become either identity.
 * A failure of a device operation after them undoes what this call
 * created; the identity then stays KERNEL and init may be retried when
 * everything was undone.
 */
int simpler_kernel_mode_init(struct simpler_context *ctx, int device_id,
                             const struct simpler_config *config, uint64_t context_generation);

/*
 * Validates `image` (`bytes` long, borrowed for the call) as
 * simpler_register_callable does, loads it on the device through the
 * context's own control stream (never a caller's), and mints its id in
 * *callable_id: 0, 1, 2, ... in order, never reused within the context (the
 * same image twice gets two ids). *callable_id is -1 on every failure.
 * INVALID_ARGUMENT: NULLs, an image that does not validate or does not
 * load; INVALID_STATE: not an initialised, open kernel context, or not on
 * its device; CALLABLE_COUNT_EXCEEDED: config.max_callables ids minted;
 * CALLABLE_BYTES_EXCEEDED: past config.callable_bytes; CAPACITY_EXCEEDED:
 * its run config needs more than the context committed. When a failure's
 * undo (unloading what was loaded) fails on a device operation, that
 * operation's code is returned instead: the callable then stays loaded,
 * unreachable (its id is spent), until simpler_finalize_device.
 */
int simpler_kernel_mode_prepare_callable(struct simpler_context *ctx, const void *image,
                                         size_t bytes, int32_t *callable_id);

/*
 * Enqueues one round of `callable_id` with `args` (borrowed for the call:
 * encoded into the launch, so the caller may reuse or free them the moment
 * this returns) on `caller_stream`, and returns without waiting: the round
 * starts after the work already on `caller_stream`, and later work on it
 * waits for the round. The round's failure (a kernel's code, an orchestrator
 * error, a scheduler timeout, a packet the device refused: -1..-999) makes
 * `caller_stream` carry that code, so simdev_stream_sync(caller_stream)
 * returns it; the context is not poisoned by it. Every tensor must be
 * device memory the caller owns, inside its buffer, and stay valid until
 * the round has run. Several threads may launch on one context at once, on
 * the same or different streams: each launch runs exactly once and rounds
 * never overlap on the context's device state.
 * On a capturing `caller_stream` the round is recorded into the caller's
 * capture (see "Capture" in docs/kernel-mode.md); up to config.max_captures
 * captures may hold launches of the context at once, each on its own
 * streams.
 * INVALID_ARGUMENT: NULLs, an id outside 0..SIMPLER_MAX_CALLABLE_IDS-1,
 * counts that do not match the callable's signature, a host tensor, a view
 * outside its buffer; CALLABLE_NOT_RESIDENT: an id never minted;
 * INVALID_STATE: not an open kernel context, or not on its device;
 * CAPACITY_EXCEEDED: `caller_stream` captures while config.max_captures
 * other captures hold launches of the context (nothing is enqueued; every
 * capture, the caller's included, still ends cleanly).
 */
int simpler_kernel_mode_launch(struct simpler_context *ctx, int32_t callable_id,
                               const struct simpler_args *args, simdev_stream_t caller_stream);

/*
 * A captured launch rebound (docs/kernel-mode.md, "Rebinding a replay"):
 * the rounds of this context that executable graph `exec` recorded are
 * its launches, indexed 0..count-1 in capture order, and each can be given
 * new arguments of the same callable without recapturing. Replays launched
 * after an update returns run with the new arguments; replays launched
 * before it (queued or running) keep theirs; a replay racing an update on
 * another thread runs one whole set, old or new. An update needs no device
 * sync, device allocation or copy, and may be made while replays run.
 */

/* Writes to *count how many rounds of this context `exec` recorded (0 if
 * none). INVALID_ARGUMENT: NULLs; INVALID_STATE: not an open kernel
 * context. */
int simpler_kernel_mode_graph_launches(struct simpler_context *ctx, simdev_graph_exec_t exec,
                                       size_t *count);

/*
 * Rebinds launch `index` of `exec` to `args` (borrowed for the call) of
 * `callable_id`, checked as simpler_kernel_mode_launch checks them and
 * encoded into a packet once (packets_encoded and host_preparations grow
 * by one; a refused update counts nothing). PREPARED_INCOMPATIBLE when
 * `callable_id` is not the launch's callable or the counts differ from
 * its; INVALID_ARGUMENT for NULLs, an index past the count or args launch
 * would refuse; CALLABLE_NOT_RESIDENT as launch; INVALID_STATE after close
 * (or not a kernel context); OUT_OF_HOST_MEMORY. A refused update changes
 * nothing.
 */
int simpler_kernel_mode_graph_update(struct simpler_context *ctx, simdev_graph_exec_t exec,
                                     size_t index, int32_t callable_id,
                                     const struct simpler_args *args);

/* The same from a prepared call of this context (simpler_prepare_call):
 * its packet, encoded at prepare, is used as is (nothing is checked or
 * encoded again: packets_encoded does not move), and the call may be
 * released afterwards. INVALID_ARGUMENT also for a call that is not a live
 * call of the context; PREPARED_INCOMPATIBLE for another callable or other
 * counts. An update replaces the launch's tensors and scalars only: the
 * round keeps the run config it was captured with (a call prepared with
 * another config runs under the captured one). */
int simpler_kernel_mode_graph_update_call(struct simpler_context *ctx, simdev_graph_exec_t exec,
                                          size_t index, const struct simpler_prepared_call *call);

/*
 * Writes the trace of the context's last round (eager or replayed) to
 * `path` (NULL: the context's trace path) and its dependency graph beside
 * it, as program mode does for a run. A kernel context traces when its
 * config's run_capacity.trace_level (or SIMPLER_TRACE) is above 0 at init:
 * init then commits the trace buffers once, and every round, including a
 * graph's replay of a captured one, records into them. Call it after the
 * round's caller stream was synchronised (it reads device memory the
 * round writes). INVALID_ARGUMENT: NULL ctx; INVALID_STATE: not an open
 * kernel context, tracing off, or no round has run; INTERNAL: a file
 * could not be written.
 */
int simpler_kernel_mode_write_trace(struct simpler_context *ctx, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_SIMPLER_H */
