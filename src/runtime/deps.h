/*
 * runtime/deps.h — the dependencies of a submit: which earlier tasks the
 * new one waits for, and the edges that make it wait.
 *
 * Owns: the run's fanin scratch (run->fanin_scratch, fanin_sources,
 * fanin_n: the producers of the task being submitted or the element being
 * accessed), discovery from explicit ids, creators and the TensorMap, the
 * TensorMap records of a task's own accesses, and the wiring. Orchestrator
 * only. Every int32_t returned is 0 or a positive code the caller latches.
 */
#ifndef SIMPLER_RUNTIME_DEPS_H
#define SIMPLER_RUNTIME_DEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/view.h"
#include "runtime/tensormap.h"
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

struct rt_run;
struct rt_slot;
struct rt_task;
struct rt_tm_record;

/* True when a tensor's producer id is none, or a live task of this run
 * already submitted whose scope is still open; anything else may name a
 * buffer already reused (the tensor escaped its scope), a foreign ring, or
 * (the next id) the very task being submitted, which would wait for
 * itself. Checked before a submit allocates anything. */
bool rt_producer_valid(struct rt_run *run, uint64_t id);

/* Finds every producer the task in `t` (its arguments `a`; extent[i]: the
 * bytes of non-OUTPUT tensor i, as the submit checked them) must wait for,
 * into the fanin scratch, which the caller emptied. Fills key[i] for every
 * tensor it looks up in the TensorMap (the ones rt_deps_record_accesses
 * records), for rt_deps_record_accesses. */
int32_t rt_deps_discover(struct rt_run *run, const struct simpler_task_args *a,
                         const struct rt_task *t, const struct sp_view_extent *extent,
                         struct rt_tm_key *key);

/* Frees the TensorMap entries of the task that last occupied the slot of
 * `local` on `ring` (local - window, retired since its slot was reserved),
 * as recorded in `tm`. */
void rt_deps_forget_previous_occupant(struct rt_run *run, uint32_t ring, uint64_t local,
                                      const struct rt_tm_record *tm);

/* Records the task's reads and writes of existing tensors (task `id` in
 * slot `s`) in the TensorMap and in `tm`, waiting for room in the map when
 * it is full; key[i]: what rt_deps_discover filled for this task. */
int32_t rt_deps_record_accesses(struct rt_run *run, const struct simpler_task_args *a,
                                const struct rt_task *t, struct rt_tm_record *tm,
                                const struct rt_tm_key *key, uint64_t id, struct rt_slot *s);

/* Links the task in `s` (payload `t`, on `ring`) to every producer in the
 * scratch list, taking two dependency entries per producer at most (the
 * caller reserved them), and logs each edge. */
void rt_deps_wire(struct rt_run *run, struct rt_slot *s, struct rt_task *t, uint32_t ring);

/* Logs an edge from every producer in the scratch list to task `id`,
 * without wiring (a host build: runtime/hbg.h). */
void rt_deps_log_fanin(struct rt_run *run, uint64_t id);

/* The producers an element access of `kind` to tensor `t` must wait for
 * (`elem`: the one element as a view), into the fanin scratch: its creator
 * and, when tracked, the TensorMap's; producers whose slot was reused
 * since are dropped. */
int32_t rt_deps_discover_element(struct rt_run *run, const struct simpler_tensor *t,
                                 const struct simpler_tensor *elem, enum rt_access kind);

#endif /* SIMPLER_RUNTIME_DEPS_H */
