/*
 * cluster/wire.h — the bytes of a distributed cluster's request and reply
 * (docs/cluster.md section 9).
 *
 * Owns: the message layouts and their packing and checked unpacking. Knows
 * nothing of MPI, tasks or threads. Both ends are the same build of
 * simpler, so structures travel as their bytes; every length and index is
 * still checked before it is trusted.
 *
 * A request names buffers by (buffer id, offset), never by address: the
 * id is the buffer's position among the distinct buffers of the request,
 * and a tensor's `addr` travels as 0. Each buffer also carries its mirror
 * id, rank 0's name for it during the run (directory.h): the serving rank
 * keeps one mirror per id for the whole run, and a run's views point into
 * the mirrors. After the tensors comes one record per buffer with views to
 * send (their elements, packed in row-major order, view after view in
 * tensor order); a view rank 0's directory says the serving rank already
 * holds travels no bytes. A reply carries the status and, on success, the
 * elements of every OUT/INOUT view, packed in the view's row-major order,
 * in tensor order.
 */
#ifndef SIMPLER_CLUSTER_WIRE_H
#define SIMPLER_CLUSTER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/callable.h"
#include "simpler/simpler.h"

/* Whether a tensor of direction `dir` is read / written by its run. */
static inline bool cl_reads(uint8_t dir) { return dir == SIMPLER_DIR_IN || dir == SIMPLER_DIR_INOUT; }
static inline bool cl_writes(uint8_t dir) { return dir == SIMPLER_DIR_OUT || dir == SIMPLER_DIR_INOUT; }

struct cl_wire_request {
    uint32_t task;        /* rank 0's task index */
    uint32_t member;      /* member index within the task */
    uint32_t worker;      /* global worker index (one of the receiver's) */
    int32_t callable_id;
    uint32_t tensor_count;
    uint32_t scalar_count;
    uint32_t has_config;
    uint32_t record_count;
    uint32_t buffer_count;
    uint32_t reserved;
    struct simpler_run_config config;
};

struct cl_wire_tensor {
    struct simpler_tensor view; /* addr 0 on the wire */
    uint32_t buffer;            /* buffer id within the request */
    uint32_t sent;              /* 1: its elements are in its buffer's record */
    uint32_t mirror;            /* the buffer's mirror id for the run */
    uint32_t reserved;
};

/* The elements of one buffer's sent views, `bytes` of them, follow. */
struct cl_wire_record {
    uint32_t buffer;
    uint32_t reserved;
    uint64_t bytes;
};

struct cl_wire_reply {
    uint32_t task;
    uint32_t member;
    int32_t status;
    uint32_t reserved;
    uint64_t output_bytes; /* packed output elements that follow */
};

/* What rank 0 keeps of a member placed on another rank: a deep copy of
 * its args and config, taken at submit. */
struct cl_remote_call {
    int32_t callable_id;
    uint32_t worker;
    uint32_t has_config;
    struct simpler_run_config config;
    uint8_t directions[SIMPLER_CALLABLE_MAX_TENSORS];
    struct simpler_args args;
    struct simpler_tensor tensors[SIMPLER_CALLABLE_MAX_TENSORS];
    uint64_t *scalars;
};

/* Copies `args` and `config` (borrowed) into a new call. 0 or
 * OUT_OF_HOST_MEMORY. */
int cl_remote_call_make(int32_t callable_id, uint32_t worker, const struct simpler_args *args,
                        const struct simpler_run_config *config, const uint8_t *directions,
                        struct cl_remote_call **out);
void cl_remote_call_free(struct cl_remote_call *call);

/* Packs the request of `call` for task `task`, member `member`, reading
 * the elements of the views whose `sent[i]` is set from host memory now;
 * `mirror[i]` is tensor i's buffer's mirror id. 0 with *msg (caller
 * frees), *len and *payload (element bytes packed) set, or
 * OUT_OF_HOST_MEMORY. */
int cl_wire_pack_request(const struct cl_remote_call *call, uint32_t task, uint32_t member,
                         const uint32_t *mirror, const bool *sent, void **msg, size_t *len,
                         uint64_t *payload);

/* A serving rank's mirrors for one run: one zeroed host buffer per mirror
 * id, made at its first use, kept until cl_mirrors_clear. */
struct cl_mirror {
    uint32_t id;
    uint64_t bytes;
    void *data;
};
struct cl_mirrors {
    struct cl_mirror *m; /* sorted by id */
    uint32_t count, capacity;
};

/* The mirror `id` of `bytes`: made (zeroed) at its first use. 0,
 * INVALID_ARGUMENT when an earlier use gave it another size, or
 * OUT_OF_HOST_MEMORY. */
int cl_mirrors_get(struct cl_mirrors *mirrors, uint32_t id, uint64_t bytes, void **data);
void cl_mirrors_clear(struct cl_mirrors *mirrors);

/* A request unpacked on the serving rank: the args point into mirrors. */
struct cl_served_call {
    struct cl_wire_request head;
    struct simpler_args args;
    struct simpler_tensor tensors[SIMPLER_CALLABLE_MAX_TENSORS];
    uint64_t *scalars;
};

/* Checks `len` bytes at `msg`, then writes the sent elements into their
 * mirrors. 0, INVALID_ARGUMENT for a malformed message (nothing written),
 * OUT_OF_HOST_MEMORY. *payload: element bytes received. */
int cl_wire_unpack_request(const void *msg, size_t len, struct cl_mirrors *mirrors,
                           struct cl_served_call **out, uint64_t *payload);
void cl_served_call_free(struct cl_served_call *call);

/* The bytes of the OUT/INOUT views of `args` per `directions`. */
uint64_t cl_wire_output_bytes(const struct simpler_args *args, const uint8_t *directions);

/* Packs a reply: the head, then (status 0) the output elements of `args`. */
int cl_wire_pack_reply(uint32_t task, uint32_t member, int32_t status,
                       const struct simpler_args *args, const uint8_t *directions, void **msg,
                       size_t *len);

/* Checks a reply's head against `len`. 0 or INVALID_ARGUMENT. */
int cl_wire_reply_head(const void *msg, size_t len, struct cl_wire_reply *head);

/* Writes a successful reply's output elements into the views of `args`
 * (rank 0's buffers). INVALID_ARGUMENT when the sizes disagree. */
int cl_wire_unpack_outputs(const void *msg, size_t len, const struct simpler_args *args,
                           const uint8_t *directions);

#endif /* SIMPLER_CLUSTER_WIRE_H */
