/*
 * host/kernel_mode_graph.c — a kernel context's rounds in a caller's
 * executable graph: listed, and rebound to new arguments without a new
 * capture.
 *
 * Owns: simpler_kernel_mode_graph_launches, simpler_kernel_mode_graph_update
 * and simpler_kernel_mode_graph_update_call (their interface is simpler.h).
 * A round appears in a graph as its program launch node, whose arguments
 * are the round's envelope and packet (launch/kernel_launch.c reads and
 * rewrites them); an update replaces the packet through simdev's
 * launch-argument update, which keeps replays already launched on the set
 * they took. Must not enqueue, synchronise, allocate device memory or
 * touch the graph's other nodes.
 *
 * Locking: every entry holds ctx->lock throughout, so updates of one
 * context are ordered with its launches and its close.
 */
#include <stdlib.h>
#include <string.h>

#include "common/host_alloc.h"
#include "common/packet.h"
#include "host/context.h"
#include "host/kernel_mode.h"
#include "host/prepared_call.h"
#include "host/trace_host.h"
#include "launch/launch.h"

/* What a look through a graph's launch nodes needs: a node's arguments read
 * out, and the rebound arguments built (16 KiB each at most: on the heap,
 * not the caller's stack). */
struct graph_scratch {
    struct simdev_launch_node node;
    unsigned char args[SIMDEV_MAX_LAUNCH_ARGS];
    unsigned char rebound[SIMDEV_MAX_LAUNCH_ARGS];
};

/* A round of the context found in a graph. */
struct found_round {
    size_t node;                  /* its launch node's index in the graph */
    size_t ordinal;               /* among the context's rounds in the graph */
    uint64_t round_generation;    /* the round's, as captured */
    struct sp_packet_header header; /* of its packet */
};

/*
 * Counts this context's rounds in `exec` into *count and, when round
 * `index` is among them, describes it in *found (its bytes left in
 * s->args) and returns 0; INVALID_ARGUMENT when it is not (SIZE_MAX: only
 * count), or simdev's code. Caller holds ctx->lock.
 */
static int find_round(struct simpler_context *ctx, simdev_graph_exec_t exec, size_t index,
                      struct graph_scratch *s, size_t *count, struct found_round *found)
{
    size_t launches;
    int rc = simdev_graph_exec_launch_count(exec, &launches);
    *count = 0;
    for (size_t i = 0; !rc && i < launches; i++) {
        const void *packet;
        size_t packet_bytes;
        uint64_t round_generation;
        if ((rc = simdev_graph_exec_launch_get(exec, i, &s->node, s->args, sizeof s->args)))
            break;
        if (!rt_kernel_mode_round_packet(&s->node, s->args, ctx->kernel.generation, &packet,
                                         &packet_bytes, &round_generation) ||
            packet_bytes < sizeof found->header)
            continue;
        if ((*count)++ == index) {
            found->node = i;
            found->ordinal = index;
            found->round_generation = round_generation;
            memcpy(&found->header, packet, sizeof found->header);
            return 0;
        }
    }
    return rc ? rc : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

int simpler_kernel_mode_graph_launches(struct simpler_context *ctx, simdev_graph_exec_t exec,
                                       size_t *count)
{
    if (!ctx || !exec || !count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct graph_scratch *s = sp_host_malloc(sizeof *s);
    if (!s)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&ctx->lock);
    size_t rounds = 0;
    struct found_round found;
    int rc = sp_kernel_mode_ready(ctx, false);
    if (!rc && (rc = find_round(ctx, exec, SIZE_MAX, s, &rounds, &found)) ==
                   PTO_RUNTIME_ERR_INVALID_ARGUMENT)
        rc = 0; /* every round counted: none is number SIZE_MAX */
    pthread_mutex_unlock(&ctx->lock);
    free(s);
    if (!rc)
        *count = rounds;
    return rc;
}

/* PREPARED_INCOMPATIBLE unless a packet of `callable_id` with these counts
 * may replace the round's. */
static int compatible(const struct found_round *found, int32_t callable_id,
                      uint32_t tensor_count, uint32_t scalar_count)
{
    const struct sp_packet_header *h = &found->header;
    if (h->callable_id != callable_id || h->tensor_count != (int32_t)tensor_count ||
        h->scalar_count != (int32_t)scalar_count)
        return PTO_RUNTIME_ERR_PREPARED_INCOMPATIBLE;
    return 0;
}

/*
 * host_build_graph: the staged copy that carries the image of the round
 * found, into *node: a context's rounds each record one staged copy into
 * the arena's image region (`dst`), in the order their programs were
 * recorded, so round number `ordinal` of the context has the staged copy
 * number `ordinal` among those into `dst`. INVALID_ARGUMENT when the graph
 * has no such copy.
 */
static int find_image(simdev_graph_exec_t exec, size_t ordinal, void *dst, size_t *node)
{
    size_t staged, seen = 0;
    int rc = simdev_graph_exec_staged_count(exec, &staged);
    for (size_t i = 0; !rc && i < staged; i++) {
        void *at;
        size_t bytes;
        if ((rc = simdev_graph_exec_staged_get(exec, i, &at, &bytes, NULL, 0)))
            break;
        if (at == dst && seen++ == ordinal) {
            *node = i;
            return 0;
        }
    }
    return rc ? rc : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

/*
 * Rebinds the round found (its arguments in s->args) to the prepared
 * `call`: its packet replaced and, for a host_build_graph context, its
 * graph built again for the new arguments (with the round's generation:
 * a replay boots it as the captured round) and its image replaced. The
 * image goes last: if it cannot be replaced the packet is put back (best
 * effort: under host_build_graph the packet only names the callable, the
 * same one), so a refused update leaves the round as it was.
 */
static int rebind(struct simpler_context *ctx, simdev_graph_exec_t exec,
                  const struct found_round *found, struct graph_scratch *s,
                  const struct simpler_prepared_call *call)
{
    struct sp_kernel_mode *k = &ctx->kernel;
    bool hbg = call->config.runtime == RT_RUNTIME_HBG, built = false;
    struct rt_config config = call->config; /* as a launch's: traced alike */
    sp_trace_kernel_attach(ctx, call->callable_id, &config);
    struct rt_kernel_mode_image image;
    struct sp_hbg_image *kept = NULL;
    size_t bytes, image_node = 0;
    int rc = 0;
    if (hbg && !(rc = sp_kernel_mode_image(ctx, call, &config, found->round_generation, &image,
                                           &built, &kept)))
        rc = find_image(exec, found->ordinal, image.dst, &image_node);
    if (!rc)
        rc = rt_kernel_mode_round_rebind(s->args, call->payload.packet, call->payload.bytes,
                                         s->rebound, sizeof s->rebound, &bytes);
    if (!rc)
        rc = simdev_graph_exec_launch_set_args(exec, found->node, s->rebound, bytes);
    if (!rc && hbg &&
        (rc = simdev_graph_exec_staged_set(exec, image_node, image.src, image.bytes)))
        simdev_graph_exec_launch_set_args(exec, found->node, s->args, s->node.args_size);
    if (rc) {
        sp_kernel_mode_image_drop(call, kept); /* refused: nothing kept either */
        return rc;
    }
    k->host_builds += built;
    k->host_builds_skipped += hbg && !built;
    if (built)
        sp_trace_kernel_build(ctx, found->round_generation, k->hbg.host.built_begin_ns,
                              k->hbg.host.built_end_ns, k->hbg.host.built_tasks);
    return 0;
}

/* The scratch of an update: the graph's bytes and a single-use call. */
struct update_scratch {
    struct graph_scratch graph;
    struct simpler_prepared_call call;
};

int simpler_kernel_mode_graph_update(struct simpler_context *ctx, simdev_graph_exec_t exec,
                                     size_t index, int32_t callable_id,
                                     const struct simpler_args *args)
{
    if (!ctx || !exec || !args || callable_id < 0 || callable_id >= SIMPLER_MAX_CALLABLE_IDS ||
        args->tensor_count > SIMPLER_ORCH_MAX_TENSORS ||
        args->scalar_count > SIMPLER_ORCH_MAX_SCALARS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct update_scratch *s = sp_host_malloc(sizeof *s);
    if (!s)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&ctx->lock);
    size_t rounds;
    struct found_round found;
    int rc = sp_kernel_mode_ready(ctx, true);
    if (!rc)
        rc = find_round(ctx, exec, index, &s->graph, &rounds, &found);
    if (!rc)
        rc = compatible(&found, callable_id, args->tensor_count, args->scalar_count);
    /* Checked and encoded once, as an unprepared launch is: a single-use
     * call, counted only if the update takes. */
    if (!rc && !(rc = sp_call_prepare(ctx, callable_id, args, NULL, true, &s->call)) &&
        (rc = rebind(ctx, exec, &found, &s->graph, &s->call)))
        sp_call_discard(ctx, &s->call);
    pthread_mutex_unlock(&ctx->lock);
    free(s);
    return rc;
}

int simpler_kernel_mode_graph_update_call(struct simpler_context *ctx, simdev_graph_exec_t exec,
                                          size_t index, const struct simpler_prepared_call *call)
{
    if (!ctx || !exec || !call)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct graph_scratch *s = sp_host_malloc(sizeof *s);
    if (!s)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&ctx->lock);
    size_t rounds;
    struct found_round found;
    int rc = sp_call_find(ctx, call); /* before *call is read */
    if (!rc)
        rc = sp_kernel_mode_ready(ctx, true);
    if (!rc)
        rc = find_round(ctx, exec, index, s, &rounds, &found);
    if (!rc)
        rc = compatible(&found, call->callable_id, call->args.tensor_count,
                        call->args.scalar_count);
    if (!rc)
        rc = rebind(ctx, exec, &found, s, call);
    pthread_mutex_unlock(&ctx->lock);
    free(s);
    return rc;
}
