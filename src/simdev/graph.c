/*
 * simdev/graph.c — graphs captured from streams, and their replay.
 *
 * Owns: graphs (the nodes a capture recorded), executable graphs
 * (instantiated copies with one lane per captured stream) and replay. A
 * node starts when the nodes it depends on (its lane predecessor and its
 * cross-lane edges) have finished in this replay: on the thread that
 * ended the last of them, or, when it may block, on its lane's thread
 * (the launching stream's executor for lane 0, a helper thread the
 * executable graph owns for each other lane), so branches captured on
 * different streams run concurrently, as they did eagerly. A replay
 * launched while another of the same graph runs waits on the executor
 * and runs its lanes there and on the helpers (the blocking way).
 *
 * Launch arguments of an executable graph may be replaced after
 * instantiation (simdev_graph_exec_launch_set_args, as CUDA's
 * cudaGraphExecKernelNodeSetParams): the graph's current argument set is
 * an immutable, counted object; an update publishes a new set, and each
 * replay takes the set that was current when it was launched, so a replay
 * runs one whole set, old or new, whatever updates race it.
 */
#include <stdlib.h>
#include <string.h>

#include "simdev/capture.h"
#include "simdev/device.h"
#include "simdev/fault.h"
#include "simdev/graph.h"
#include "simdev/memory.h"
#include "simdev/op.h"
#include "simdev/park.h"
#include "simdev/stream.h"

#define NO_NODE SIZE_MAX

/* A node of an asynchronous replay that runs on the stream's executor. */
struct node_work {
    struct sd_work work; /* first: the executor hands this back */
    struct simdev_graph_exec *exec;
    size_t id;
};

/* The executable graph whose lane helper the calling thread is (NULL: none). */
struct simdev_graph_exec;
static _Thread_local struct simdev_graph_exec *tl_helper_of;

struct lane_helper {
    struct simdev_graph_exec *exec;
    pthread_t thread;
    uint32_t lane;
    struct sd_waitword wake;
    _Atomic uint64_t start_gen; /* release: replay `gen` may start */
    _Atomic uint64_t done_gen;  /* release: replay `gen` finished */
    /* A node of this lane in an asynchronous replay that may block (one
     * at a time: a lane's nodes run in order). */
    struct sd_work *_Atomic work;
};

/* A launch op an update made, shared by the argument sets that hold it. */
struct sd_param_op {
    _Atomic uint32_t refs; /* one per set holding it */
    struct sd_op *op;
};

/* One set of an executable graph's launch arguments: per node, the op a
 * replay runs in place of the instantiated one (NULL: the instantiated
 * one). Immutable once published. */
struct sd_graph_params {
    _Atomic uint32_t refs; /* the graph's while current, and one per launched replay */
    size_t node_count;
    struct sd_param_op *ops[];
};

struct simdev_graph_exec {
    struct sd_device *dev;
    struct simdev_graph_exec *next_in_device; /* caller must hold dev->lock */
    _Atomic uint32_t refs; /* the owner's, and one per enqueued launch */
    struct sd_gnode *nodes;
    size_t node_count;
    uint32_t lane_count;
    size_t **lane_nodes; /* node ids of each lane, in capture order */
    size_t *lane_length;
    size_t *launch_nodes; /* node ids of the AICPU and AICore launches, in capture order */
    size_t launch_count;
    size_t *staged_nodes; /* node ids of the staged copies, in capture order */
    size_t staged_count;

    /* Test-only (simdev_fault_inject_replay): the armed fault, one word so
     * that arming and taking never mix two faults: the node id + 1 whose
     * next run fails, in the high 32 bits (0: none), and its code in the
     * low 32. Taken by one compare-and-swap. */
    _Atomic uint64_t replay_fault;

    pthread_mutex_t params_lock;    /* orders updates, and launches taking the current set */
    struct sd_graph_params *params; /* the current set; NULL: none updated yet */
    struct sd_graph_params *running; /* the set of the replay in progress (replaying) */

    /* 1 while a replay runs, of either kind: replays never overlap. Taken
     * with a compare-and-swap, released with a wake of `progress` (a
     * blocking replay waits there for its turn). */
    _Atomic int replaying;
    uint64_t gen;                /* current blocking replay; written by its taker */
    _Atomic uint64_t *node_done_gen;
    int *node_status;            /* written before node_done_gen is released */
    struct sd_waitword progress; /* bumped whenever a node or lane finishes */
    struct lane_helper *helpers; /* lanes 1..lane_count-1 */

    /* Asynchronous replays (sd_graph_exec_start), built at instantiate:
     * a node's predecessors are its deps and its lane's previous node;
     * per replay, how many of them each node still waits for. */
    size_t *lane_prev;  /* per node; NO_NODE: the first of its lane */
    size_t *pred_count; /* per node */
    size_t *succ_start; /* node_count + 1 offsets into succ */
    size_t *succ;       /* the nodes each node is a predecessor of */
    _Atomic size_t *pending;
    int *node_carried;         /* the status a node starts after */
    struct node_work *work;    /* per node: its run on the stream's executor */
    void *flow_block;          /* the arrays above, in one allocation */
    _Atomic size_t nodes_left; /* + 1 while the replay's start runs */
    struct simdev_stream *async_stream; /* the replay's stream and op */
    struct sd_op *async_op;
    struct sd_work end_work; /* the replay's end, when a helper would end it */
    uint32_t first_lane;         /* the first lane with nodes: run by the launching executor */
    _Atomic int stopping;
};

/* ------------------------------------------------------------------ nodes */

void sd_gnodes_free(struct sd_gnode *nodes, size_t count)
{
    if (!nodes)
        return;
    for (size_t i = 0; i < count; i++) {
        sd_op_free(nodes[i].op);
        free(nodes[i].deps);
    }
    free(nodes);
}

/* Deep copy of a node array (ops with their argument bytes, dependency
 * lists). NULL when out of memory. */
static struct sd_gnode *gnodes_clone(const struct sd_gnode *nodes, size_t count)
{
    struct sd_gnode *copy = sd_calloc(count ? count : 1, sizeof(*copy));
    if (!copy)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        copy[i] = nodes[i];
        copy[i].op = sd_op_clone(nodes[i].op);
        copy[i].deps = sd_malloc((nodes[i].dep_count ? nodes[i].dep_count : 1) * sizeof(size_t));
        if (!copy[i].op || !copy[i].deps) {
            sd_op_free(copy[i].op);
            free(copy[i].deps);
            sd_gnodes_free(copy, i);
            return NULL;
        }
        if (nodes[i].dep_count)
            memcpy(copy[i].deps, nodes[i].deps, nodes[i].dep_count * sizeof(size_t));
    }
    return copy;
}

/* --------------------------------------------------------- argument sets */

static void param_op_unref(struct sd_param_op *po)
{
    /* acq_rel: the last holder sees every use of the op before freeing it */
    if (po && atomic_fetch_sub_explicit(&po->refs, 1, memory_order_acq_rel) == 1) {
        sd_op_free(po->op);
        free(po);
    }
}

static void params_unref(struct sd_graph_params *p)
{
    /* acq_rel: pairs with itself; the last holder frees what every replay
     * of the set read */
    if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < p->node_count; i++)
        param_op_unref(p->ops[i]);
    free(p);
}

/* The current set, counted for a replay being launched (NULL: none). */
static struct sd_graph_params *params_take(struct simdev_graph_exec *exec)
{
    pthread_mutex_lock(&exec->params_lock);
    struct sd_graph_params *p = exec->params;
    if (p)
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&exec->params_lock);
    return p;
}

/* The op node `id` runs in a replay of set `p`. */
static const struct sd_op *node_op(const struct simdev_graph_exec *exec,
                                   const struct sd_graph_params *p, size_t id)
{
    return p && p->ops[id] ? p->ops[id]->op : exec->nodes[id].op;
}

/* ----------------------------------------------------------------- graphs */

int sd_graph_from_capture(struct sd_device *dev, struct sd_gnode *nodes, size_t node_count,
                          uint32_t lane_count, struct simdev_graph **out)
{
    struct simdev_graph *graph = sd_calloc(1, sizeof(*graph));
    if (!graph) {
        sd_gnodes_free(nodes, node_count);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    graph->dev = dev;
    graph->nodes = nodes;
    graph->node_count = node_count;
    graph->lane_count = lane_count;
    pthread_mutex_lock(&dev->lock);
    graph->next_in_device = dev->graphs;
    dev->graphs = graph;
    pthread_mutex_unlock(&dev->lock);
    *out = graph;
    return 0;
}

int simdev_graph_node_count(simdev_graph_t graph, size_t *count)
{
    if (!graph || !count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = graph->node_count;
    return 0;
}

static void graph_free(struct simdev_graph *graph)
{
    sd_gnodes_free(graph->nodes, graph->node_count);
    free(graph);
}

int simdev_graph_destroy(simdev_graph_t graph)
{
    if (!graph)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&graph->dev->lock);
    SD_LIST_REMOVE(&graph->dev->graphs, graph, struct simdev_graph, next_in_device);
    pthread_mutex_unlock(&graph->dev->lock);
    graph_free(graph);
    return 0;
}

void sd_graph_teardown_list(struct simdev_graph *graphs)
{
    while (graphs) {
        struct simdev_graph *next = graphs->next_in_device;
        graph_free(graphs);
        graphs = next;
    }
}

/* ----------------------------------------------------------------- replay */

struct node_wait {
    struct simdev_graph_exec *exec;
    size_t node;
    uint64_t gen;
};

static bool node_finished(void *arg)
{
    struct node_wait *w = arg;
    /* acquire: pairs with the release in run_lane after the node ran */
    return atomic_load_explicit(&w->exec->node_done_gen[w->node], memory_order_acquire) >= w->gen;
}

/* The armed replay fault's code when it is node `id`'s (disarming it), else 0. */
static int replay_fault_take(struct simdev_graph_exec *exec, size_t id)
{
    uint64_t armed = atomic_load_explicit(&exec->replay_fault, memory_order_relaxed);
    if (armed >> 32 != (uint64_t)id + 1 ||
        !atomic_compare_exchange_strong_explicit(&exec->replay_fault, &armed, 0,
                                                 memory_order_relaxed, memory_order_relaxed))
        return 0;
    return (int)(int32_t)(uint32_t)armed; /* node and code came in one word */
}

/* Runs one lane of replay `gen`; a node after a failure in its lane, or
 * after a failed dependency, is skipped with that failure (a semaphore op
 * still executes: sd_op_run_after). */
static void run_lane(struct simdev_graph_exec *exec, uint32_t lane, uint64_t gen)
{
    struct sd_device *dev = exec->dev;
    int carried = 0;
    for (size_t i = 0; i < exec->lane_length[lane]; i++) {
        size_t id = exec->lane_nodes[lane][i];
        const struct sd_gnode *node = &exec->nodes[id];
        for (size_t d = 0; d < node->dep_count; d++) {
            struct node_wait w = {.exec = exec, .node = node->deps[d], .gen = gen};
            sd_wait(&exec->progress, node_finished, &w, dev->config.spin_ns, 0, NULL);
            if (carried == 0)
                carried = exec->node_status[node->deps[d]];
        }
        /* The op is only read: a replay never writes the arguments it
         * shares with the graph and with other replays. */
        int fault = carried ? 0 : replay_fault_take(exec, id);
        int status = fault ? fault
                           : sd_op_run_after(dev, (struct sd_op *)node_op(exec, exec->running, id),
                                             carried);
        exec->node_status[id] = status;
        /* release: publishes node_status; pairs with node_finished */
        atomic_store_explicit(&exec->node_done_gen[id], gen, memory_order_release);
        sd_wake(&exec->progress);
        carried = status;
    }
}

static bool helper_has_work(void *arg)
{
    struct lane_helper *h = arg;
    /* acquire: pairs with the release of start_gen in sd_graph_exec_run */
    return atomic_load_explicit(&h->start_gen, memory_order_acquire) >
               atomic_load_explicit(&h->done_gen, memory_order_relaxed) ||
           atomic_load_explicit(&h->work, memory_order_acquire) ||
           atomic_load_explicit(&h->exec->stopping, memory_order_acquire);
}

static void *helper_main(void *arg)
{
    struct lane_helper *h = arg;
    struct simdev_graph_exec *exec = h->exec;
    (void)pthread_setname_np(pthread_self(), "simdev lane"); /* for profilers */
    for (;;) {
        sd_wait(&h->wake, helper_has_work, h, exec->dev->config.spin_ns, 0, NULL);
        if (atomic_load_explicit(&exec->stopping, memory_order_acquire))
            break;
        /* acquire: pairs with the release in node_post */
        struct sd_work *work = atomic_exchange_explicit(&h->work, NULL, memory_order_acquire);
        if (work) {
            tl_helper_of = exec;
            work->run(work);
            tl_helper_of = NULL;
            continue;
        }
        uint64_t gen = atomic_load_explicit(&h->start_gen, memory_order_acquire);
        if (gen <= atomic_load_explicit(&h->done_gen, memory_order_relaxed))
            continue;
        run_lane(exec, h->lane, gen);
        /* release: pairs with the acquire in helper_finished */
        atomic_store_explicit(&h->done_gen, gen, memory_order_release);
        sd_wake(&exec->progress);
    }
    return NULL;
}

struct helper_wait {
    struct lane_helper *helper;
    uint64_t gen;
};

static bool helper_finished(void *arg)
{
    struct helper_wait *w = arg;
    return atomic_load_explicit(&w->helper->done_gen, memory_order_acquire) >= w->gen;
}

static bool replay_taken(void *arg)
{
    struct simdev_graph_exec *exec = arg;
    int expected = 0;
    /* acquire: the previous replay's writes (node statuses, its set) */
    return atomic_compare_exchange_strong_explicit(&exec->replaying, &expected, 1,
                                                   memory_order_acquire, memory_order_relaxed);
}

/* Ends a replay's hold on the graph: the next replay may begin. */
static void replay_release(struct simdev_graph_exec *exec)
{
    /* release: this replay's writes before the next taker's acquire */
    atomic_store_explicit(&exec->replaying, 0, memory_order_release);
    sd_wake(&exec->progress);
}

int sd_graph_exec_run(struct simdev_graph_exec *exec, struct sd_graph_params *params)
{
    sd_wait(&exec->progress, replay_taken, exec, exec->dev->config.spin_ns, 0, NULL);
    uint64_t gen = ++exec->gen;
    /* Read by the helpers after their start_gen acquire, which pairs with
     * the release below: they run this replay's set. */
    exec->running = params;
    /* A lane without nodes needs no thread, and the launching executor runs
     * the first lane that has some: a replay wakes and waits for one helper
     * fewer when the launching stream's own lane is empty (as when a
     * runtime's streams did all the captured work). */
    for (uint32_t lane = exec->first_lane + 1; lane < exec->lane_count; lane++) {
        if (!exec->lane_length[lane])
            continue;
        struct lane_helper *h = &exec->helpers[lane - 1];
        /* release: pairs with the acquire in helper_has_work */
        atomic_store_explicit(&h->start_gen, gen, memory_order_release);
        sd_wake(&h->wake);
    }
    run_lane(exec, exec->first_lane, gen);
    for (uint32_t lane = exec->first_lane + 1; lane < exec->lane_count; lane++) {
        if (!exec->lane_length[lane])
            continue;
        struct helper_wait w = {.helper = &exec->helpers[lane - 1], .gen = gen};
        sd_wait(&exec->progress, helper_finished, &w, exec->dev->config.spin_ns, 0, NULL);
    }
    int status = 0;
    for (size_t i = 0; i < exec->node_count && status == 0; i++)
        status = exec->node_status[i];
    exec->running = NULL; /* the set may go once this replay's op is freed */
    replay_release(exec);
    return status;
}

/* ------------------------------------------------- asynchronous replay */

static void node_start(struct simdev_graph_exec *exec, size_t id);

/* The first failing node's status, in node order (the replay's status). */
static int replay_status(const struct simdev_graph_exec *exec)
{
    int status = 0;
    for (size_t i = 0; i < exec->node_count && status == 0; i++)
        status = exec->node_status[i];
    return status;
}

static void replay_end(struct simdev_graph_exec *exec);

static void replay_end_work(struct sd_work *work)
{
    replay_end((struct simdev_graph_exec *)((unsigned char *)work -
                                            offsetof(struct simdev_graph_exec, end_work)));
}

/* One node of the replay counted done; the last ends the replay. */
static void node_left(struct simdev_graph_exec *exec)
{
    /* acq_rel: every node's status before the last one's look */
    if (atomic_fetch_sub_explicit(&exec->nodes_left, 1, memory_order_acq_rel) != 1)
        return;
    /* The end may free the graph (its op held the last reference), which
     * joins its helpers: never on one of them — on the stream's executor. */
    if (tl_helper_of == exec) {
        exec->end_work.run = replay_end_work;
        sd_stream_post_work(exec->async_stream, &exec->end_work);
        return;
    }
    replay_end(exec);
}

/* Ends the replay: its status (the first failing node's) to its op. */
static void replay_end(struct simdev_graph_exec *exec)
{
    int status = replay_status(exec);
    struct simdev_stream *stream = exec->async_stream;
    struct sd_op *op = exec->async_op;
    exec->running = NULL;
    exec->async_stream = NULL;
    exec->async_op = NULL;
    replay_release(exec);
    /* the op holds the graph (and its set) until it is freed here */
    sd_stream_op_done(stream, op, status);
}

/* Node `id` ended with `status`: its successors whose last predecessor it
 * was start, here: its own lane's next node first, then the other lanes'
 * (as a stream goes on before the streams its record let go: a round's
 * program is handed out before its core loop wakes the cores, which would
 * take the CPU of the thread handing it out). */
static void node_done(struct simdev_graph_exec *exec, size_t id, int status)
{
    exec->node_status[id] = status;
    uint32_t lane = exec->nodes[id].lane;
    for (int same = 1; same >= 0; same--) {
        for (size_t k = exec->succ_start[id]; k < exec->succ_start[id + 1]; k++) {
            size_t s = exec->succ[k];
            if ((exec->nodes[s].lane == lane) != same)
                continue;
            /* acq_rel: this node's status before the successor reads it */
            if (atomic_fetch_sub_explicit(&exec->pending[s], 1, memory_order_acq_rel) == 1)
                node_start(exec, s);
        }
    }
    node_left(exec);
}

static void node_launch_done(void *ctx, uintptr_t tag, int status)
{
    node_done(ctx, (size_t)tag, status);
}

/* A node that may block, on the stream's executor. */
static void node_run_blocking(struct sd_work *work)
{
    struct node_work *w = (struct node_work *)work;
    struct simdev_graph_exec *exec = w->exec;
    const struct sd_op *op = node_op(exec, exec->running, w->id);
    node_done(exec, w->id,
              sd_op_run_after(exec->dev, (struct sd_op *)op, exec->node_carried[w->id]));
}

/* Starts node `id`, all its predecessors done: as run_lane runs it, after
 * its lane's status or else its deps' first failure; at once when it runs
 * without blocking, else on the stream's executor. */
static void node_start(struct simdev_graph_exec *exec, size_t id)
{
    const struct sd_gnode *node = &exec->nodes[id];
    int carried = exec->lane_prev[id] == NO_NODE ? 0 : exec->node_status[exec->lane_prev[id]];
    for (size_t d = 0; d < node->dep_count && carried == 0; d++)
        carried = exec->node_status[node->deps[d]];
    int fault = carried ? 0 : replay_fault_take(exec, id);
    if (fault) {
        node_done(exec, id, fault);
        return;
    }
    const struct sd_op *op = node_op(exec, exec->running, id);
    struct sd_device *dev = exec->dev;
    if (!carried && sd_device_lost(dev))
        carried = PTO_RUNTIME_ERR_DEVICE_LOST;
    int status;
    switch (sd_op_try_run(dev, op, carried, node_launch_done, exec, (uintptr_t)id, &status)) {
    case SD_PENDING:
        return;
    case SD_RAN:
        node_done(exec, id, status);
        return;
    case SD_WOULD_BLOCK:
        break;
    }
    exec->node_carried[id] = carried;
    /* On the thread of its lane, as a blocking replay runs it: lanes
     * still run their blocking nodes at the same time. */
    uint32_t lane = exec->nodes[id].lane;
    if (lane == 0) {
        sd_stream_post_work(exec->async_stream, &exec->work[id].work);
        return;
    }
    struct lane_helper *h = &exec->helpers[lane - 1];
    /* release: the node's carried status and the replay's state first */
    atomic_store_explicit(&h->work, &exec->work[id].work, memory_order_release);
    sd_count_wait(&exec->dev->waits.handoffs, 1);
    sd_wake(&h->wake);
}

int sd_graph_exec_start(struct simdev_graph_exec *exec, struct sd_graph_params *params,
                        struct simdev_stream *stream, struct sd_op *op)
{
    if (!replay_taken(exec))
        return 1;
    exec->running = params;
    exec->async_stream = stream;
    exec->async_op = op;
    for (size_t i = 0; i < exec->node_count; i++)
        atomic_store_explicit(&exec->pending[i], exec->pred_count[i], memory_order_relaxed);
    /* + 1: the replay cannot end (and another begin) while this loop runs */
    atomic_store_explicit(&exec->nodes_left, exec->node_count + 1, memory_order_relaxed);
    for (size_t i = 0; i < exec->node_count; i++)
        if (exec->pred_count[i] == 0)
            node_start(exec, i);
    node_left(exec);
    return 0;
}

/* -------------------------------------------------------- executable graph */

static void exec_free(struct simdev_graph_exec *exec, uint32_t helpers_started)
{
    atomic_store_explicit(&exec->stopping, 1, memory_order_release);
    for (uint32_t i = 0; i < helpers_started; i++)
        sd_wake(&exec->helpers[i].wake);
    for (uint32_t i = 0; i < helpers_started; i++)
        pthread_join(exec->helpers[i].thread, NULL);
    if (exec->lane_nodes)
        for (uint32_t lane = 0; lane < exec->lane_count; lane++)
            free(exec->lane_nodes[lane]);
    free(exec->lane_nodes);
    free(exec->lane_length);
    free(exec->helpers);
    free(exec->node_done_gen);
    free(exec->node_status);
    free(exec->launch_nodes);
    free(exec->staged_nodes);
    free(exec->flow_block);
    params_unref(exec->params);
    sd_gnodes_free(exec->nodes, exec->node_count);
    pthread_mutex_destroy(&exec->params_lock);
    free(exec);
}

/* Lays out, in one block, what an asynchronous replay needs: per node its
 * lane's previous node, its predecessor count, its successors (the reverse
 * of its deps, and its lane's next node when that is not a dep already)
 * and its executor work item. */
static int exec_build_flow(struct simdev_graph_exec *exec)
{
    size_t n = exec->node_count, edges = 0;
    for (size_t i = 0; i < n; i++)
        edges += exec->nodes[i].dep_count + 1; /* at most: + the lane's previous node */
    /* lane_prev, pred_count, extra (n each), succ_start (n + 1), last (per
     * lane), succ */
    size_t words = 4 * n + 1 + exec->lane_count + edges;
    size_t bytes = n * sizeof(struct node_work) + words * sizeof(size_t) +
                   n * sizeof(_Atomic size_t) + n * sizeof(int);
    unsigned char *block = sd_calloc(1, bytes ? bytes : 1);
    if (!block)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    exec->flow_block = block;
    exec->work = (struct node_work *)block;
    exec->lane_prev = (size_t *)(block + n * sizeof(struct node_work));
    exec->pred_count = exec->lane_prev + n;
    size_t *extra = exec->pred_count + n; /* the lane edge that is not a dep */
    exec->succ_start = extra + n;
    size_t *last = exec->succ_start + n + 1; /* per lane */
    exec->succ = last + exec->lane_count;
    exec->pending = (_Atomic size_t *)(exec->succ + edges);
    exec->node_carried = (int *)(exec->pending + n);
    for (uint32_t lane = 0; lane < exec->lane_count; lane++)
        last[lane] = NO_NODE;
    for (size_t i = 0; i < n; i++) {
        const struct sd_gnode *node = &exec->nodes[i];
        exec->lane_prev[i] = last[node->lane];
        last[node->lane] = i;
        extra[i] = exec->lane_prev[i];
        for (size_t d = 0; d < node->dep_count; d++) {
            if (node->deps[d] == extra[i])
                extra[i] = NO_NODE;
            exec->succ_start[node->deps[d] + 1]++;
        }
        if (extra[i] != NO_NODE)
            exec->succ_start[extra[i] + 1]++;
        exec->pred_count[i] = node->dep_count + (extra[i] != NO_NODE);
        exec->work[i] = (struct node_work){{NULL, node_run_blocking}, exec, i};
    }
    for (size_t i = 0; i < n; i++)
        exec->succ_start[i + 1] += exec->succ_start[i];
    /* pending counts each node's successors filled so far (every replay
     * sets it again) */
    for (size_t i = 0; i < n; i++) {
        const struct sd_gnode *node = &exec->nodes[i];
        for (size_t d = 0; d < node->dep_count; d++) {
            size_t p = node->deps[d];
            exec->succ[exec->succ_start[p] + atomic_fetch_add(&exec->pending[p], 1)] = i;
        }
        if (extra[i] != NO_NODE)
            exec->succ[exec->succ_start[extra[i]] + atomic_fetch_add(&exec->pending[extra[i]], 1)] =
                i;
    }
    return 0;
}

/* Splits the nodes into per-lane lists. */
static int exec_build_lanes(struct simdev_graph_exec *exec)
{
    exec->lane_nodes = sd_calloc(exec->lane_count, sizeof(*exec->lane_nodes));
    exec->lane_length = sd_calloc(exec->lane_count, sizeof(*exec->lane_length));
    if (!exec->lane_nodes || !exec->lane_length)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    for (uint32_t lane = 0; lane < exec->lane_count; lane++) {
        exec->lane_nodes[lane] = sd_malloc((exec->node_count ? exec->node_count : 1) * sizeof(size_t));
        if (!exec->lane_nodes[lane])
            return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    exec->launch_nodes = sd_malloc((exec->node_count ? exec->node_count : 1) * sizeof(size_t));
    if (!exec->launch_nodes)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    exec->staged_nodes = sd_malloc((exec->node_count ? exec->node_count : 1) * sizeof(size_t));
    if (!exec->staged_nodes)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < exec->node_count; i++) {
        uint32_t lane = exec->nodes[i].lane;
        exec->lane_nodes[lane][exec->lane_length[lane]++] = i;
        const struct sd_op *op = exec->nodes[i].op;
        if (op->type == SD_OP_AICPU || op->type == SD_OP_AICORE)
            exec->launch_nodes[exec->launch_count++] = i;
        else if (op->type == SD_OP_COPY && !op->u.copy.src)
            exec->staged_nodes[exec->staged_count++] = i;
    }
    exec->first_lane = 0;
    while (exec->first_lane + 1 < exec->lane_count && !exec->lane_length[exec->first_lane])
        exec->first_lane++;
    return 0;
}

int simdev_graph_instantiate(simdev_graph_exec_t *out, simdev_graph_t graph)
{
    if (!out || !graph)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = graph->dev;
    if (sd_device_lost(dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    struct simdev_graph_exec *exec = sd_calloc(1, sizeof(*exec));
    if (!exec)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    exec->dev = dev;
    sd_word_bind(&exec->progress, &dev->waits);
    atomic_init(&exec->refs, 1);
    sd_mutex_init(&exec->params_lock);
    exec->node_count = graph->node_count;
    exec->lane_count = graph->lane_count ? graph->lane_count : 1;
    exec->nodes = gnodes_clone(graph->nodes, graph->node_count);
    size_t slots = exec->node_count ? exec->node_count : 1;
    exec->node_done_gen = sd_calloc(slots, sizeof(*exec->node_done_gen));
    exec->node_status = sd_calloc(slots, sizeof(*exec->node_status));
    exec->helpers = sd_calloc(exec->lane_count, sizeof(*exec->helpers));
    uint32_t started = 0;
    int rc = exec->nodes && exec->node_done_gen && exec->node_status && exec->helpers
                 ? exec_build_lanes(exec)
                 : PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    if (rc == 0)
        rc = exec_build_flow(exec);
    for (uint32_t lane = 1; rc == 0 && lane < exec->lane_count; lane++) {
        struct lane_helper *h = &exec->helpers[lane - 1];
        h->exec = exec;
        h->lane = lane;
        sd_word_bind(&h->wake, &dev->waits);
        if (sd_thread_create(&h->thread, helper_main, h) != 0)
            rc = PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
        else
            started++;
    }
    if (rc != 0) {
        exec_free(exec, started);
        return rc;
    }
    pthread_mutex_lock(&dev->lock);
    exec->next_in_device = dev->execs;
    dev->execs = exec;
    pthread_mutex_unlock(&dev->lock);
    *out = exec;
    return 0;
}

static void exec_ref(struct simdev_graph_exec *exec)
{
    atomic_fetch_add_explicit(&exec->refs, 1, memory_order_relaxed);
}

void sd_graph_exec_unref(struct simdev_graph_exec *exec, struct sd_graph_params *params)
{
    params_unref(params);
    /* acq_rel: the last owner sees every replay's writes before freeing */
    if (atomic_fetch_sub_explicit(&exec->refs, 1, memory_order_acq_rel) == 1)
        exec_free(exec, exec->lane_count - 1);
}

int simdev_graph_exec_destroy(simdev_graph_exec_t exec)
{
    if (!exec)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&exec->dev->lock);
    SD_LIST_REMOVE(&exec->dev->execs, exec, struct simdev_graph_exec, next_in_device);
    pthread_mutex_unlock(&exec->dev->lock);
    sd_graph_exec_unref(exec, NULL); /* pending replays keep it alive */
    return 0;
}

void sd_graph_exec_teardown_list(struct simdev_graph_exec *execs)
{
    while (execs) {
        struct simdev_graph_exec *next = execs->next_in_device;
        sd_graph_exec_unref(execs, NULL);
        execs = next;
    }
}

int simdev_graph_launch(simdev_graph_exec_t exec, simdev_stream_t stream)
{
    if (!exec || !stream || exec->dev != stream->dev)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    struct sd_device *dev = stream->dev;
    if (sd_device_lost(dev))
        return PTO_RUNTIME_ERR_DEVICE_LOST;
    int rc = sd_capture_forbid_on_stream(stream);
    if (rc == 0)
        rc = sd_fault_check(dev, SIMDEV_OP_GRAPH_LAUNCH);
    if (rc != 0)
        return rc;
    struct sd_op *op = sd_op_new(SD_OP_GRAPH, NULL, 0);
    if (!op)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    exec_ref(exec);
    op->u.graph.exec = exec;
    op->u.graph.params = params_take(exec); /* this replay's arguments, whatever updates follow */
    /* On an idle stream the replay starts here, as a launch chain does
     * (simdev_start_here_begin): its first nodes run on this thread as far
     * as they run without blocking, and no executor is woken to start it
     * (a woken executor was most of a one-task replay: docs/performance.md,
     * "A replay starts where it is launched"). */
    simdev_start_here_begin();
    rc = sd_stream_submit(stream, op);
    simdev_start_here_end();
    if (rc != 0) {
        sd_op_free(op);
        return rc;
    }
    sd_count(dev, SIMDEV_OP_GRAPH_LAUNCH);
    return 0;
}

/* ------------------------------------------------------- launch arguments */

int simdev_graph_exec_launch_count(simdev_graph_exec_t exec, size_t *count)
{
    if (!exec || !count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = exec->launch_count;
    return 0;
}

int simdev_graph_exec_launch_get(simdev_graph_exec_t exec, size_t index,
                                 struct simdev_launch_node *node, void *args, size_t capacity)
{
    if (!exec || !node || index >= exec->launch_count || (capacity && !args))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    size_t id = exec->launch_nodes[index];
    pthread_mutex_lock(&exec->params_lock);
    const struct sd_op *op = node_op(exec, exec->params, id);
    int rc = args && capacity < op->args_size ? PTO_RUNTIME_ERR_INVALID_ARGUMENT : 0;
    if (!rc) {
        memset(node, 0, sizeof *node);
        if (op->type == SD_OP_AICPU) {
            node->aicpu_fn = op->u.aicpu.fn;
            node->thread_count = op->u.aicpu.thread_count;
        } else {
            node->aicore_fn = op->u.aicore.fn;
        }
        node->args_size = op->args_size;
        if (args && op->args_size)
            memcpy(args, op->args, op->args_size);
    }
    pthread_mutex_unlock(&exec->params_lock);
    return rc;
}

/* The set `from` (NULL: none updated) with node `id` running `po`: a new
 * set with a reference on every update op it holds. NULL when out of
 * memory. Caller holds exec->params_lock. */
static struct sd_graph_params *params_with(const struct simdev_graph_exec *exec,
                                           const struct sd_graph_params *from, size_t id,
                                           struct sd_param_op *po)
{
    struct sd_graph_params *p =
        sd_calloc(1, sizeof *p + exec->node_count * sizeof p->ops[0]);
    if (!p)
        return NULL;
    atomic_init(&p->refs, 1); /* the graph's */
    p->node_count = exec->node_count;
    for (size_t i = 0; from && i < exec->node_count; i++) {
        if ((p->ops[i] = from->ops[i]))
            atomic_fetch_add_explicit(&p->ops[i]->refs, 1, memory_order_relaxed);
    }
    param_op_unref(p->ops[id]); /* `from`'s op for the node, replaced */
    p->ops[id] = po;
    return p;
}

/* Makes node `id` run the instantiated op with `bytes` bytes from `data`
 * in replays launched from now on (the one way an update changes a node;
 * `u` replaces the op's fields when not NULL). */
static int node_set(struct simdev_graph_exec *exec, size_t id, const void *data, size_t bytes,
                    const void *u)
{
    const struct sd_op *model = exec->nodes[id].op; /* the function and threads stay */
    struct sd_param_op *po = sd_calloc(1, sizeof *po);
    struct sd_op *op = po ? sd_op_new(model->type, data, bytes) : NULL;
    if (!op) {
        free(po);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    op->u = model->u;
    if (u)
        memcpy(&op->u, u, sizeof op->u);
    atomic_init(&po->refs, 1);
    po->op = op;
    pthread_mutex_lock(&exec->params_lock);
    struct sd_graph_params *old = exec->params;
    struct sd_graph_params *p = params_with(exec, old, id, po);
    if (p)
        exec->params = p; /* launches from now take it; earlier ones keep theirs */
    pthread_mutex_unlock(&exec->params_lock);
    if (!p) {
        param_op_unref(po);
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    }
    params_unref(old); /* the graph's reference; replays holding it keep it alive */
    return 0;
}

int simdev_graph_exec_launch_set_args(simdev_graph_exec_t exec, size_t index, const void *args,
                                      size_t bytes)
{
    if (!exec || index >= exec->launch_count || (bytes && !args) ||
        bytes > SIMDEV_MAX_LAUNCH_ARGS)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return node_set(exec, exec->launch_nodes[index], args, bytes, NULL);
}

/* ------------------------------------------------------- staged copies */

int simdev_graph_exec_staged_count(simdev_graph_exec_t exec, size_t *count)
{
    if (!exec || !count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    *count = exec->staged_count;
    return 0;
}

int simdev_graph_exec_staged_get(simdev_graph_exec_t exec, size_t index, void **dst,
                                 size_t *bytes, void *data, size_t capacity)
{
    if (!exec || !dst || !bytes || index >= exec->staged_count || (capacity && !data))
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&exec->params_lock);
    const struct sd_op *op = node_op(exec, exec->params, exec->staged_nodes[index]);
    int rc = data && capacity < op->u.copy.bytes ? PTO_RUNTIME_ERR_INVALID_ARGUMENT : 0;
    if (!rc) {
        *dst = op->u.copy.dst;
        *bytes = op->u.copy.bytes;
        if (data)
            memcpy(data, op->args, op->u.copy.bytes);
    }
    pthread_mutex_unlock(&exec->params_lock);
    return rc;
}

int simdev_graph_exec_staged_set(simdev_graph_exec_t exec, size_t index, const void *src,
                                 size_t bytes)
{
    if (!exec || !src || index >= exec->staged_count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    size_t id = exec->staged_nodes[index];
    struct sd_op model = *exec->nodes[id].op; /* its destination stays */
    int rc = sd_memory_check_copy(exec->dev, model.u.copy.dst, src, bytes,
                                  SIMDEV_COPY_HOST_TO_DEVICE_STAGED);
    if (rc)
        return rc;
    model.u.copy.bytes = bytes;
    return node_set(exec, id, src, bytes, &model.u);
}

/* Arms the replay fault on node `id` (simdev_fault_inject_replay). */
static int arm_replay_fault(struct simdev_graph_exec *exec, size_t id, int code)
{
    if (code >= 0 || id + 1 > UINT32_MAX)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    uint64_t armed = ((uint64_t)(id + 1) << 32) | (uint32_t)code;
    atomic_store_explicit(&exec->replay_fault, armed, memory_order_relaxed);
    return 0;
}

int simdev_fault_inject_replay(simdev_graph_exec_t exec, size_t index, int code)
{
    if (!exec || index >= exec->launch_count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return arm_replay_fault(exec, exec->launch_nodes[index], code);
}

int simdev_fault_inject_replay_staged(simdev_graph_exec_t exec, size_t index, int code)
{
    if (!exec || index >= exec->staged_count)
        return PTO_RUNTIME_ERR_INVALID_ARGUMENT;
    return arm_replay_fault(exec, exec->staged_nodes[index], code);
}
