/*
 * simdev/graph.h — graphs captured from streams, and their replay
 * (graph.c).
 *
 * Owns: the graph node (an op and the nodes it depends on), the layout of
 * a graph, and the calls a capture, the stream executor and device reset
 * make. An executable graph's layout stays private to graph.c. Must not
 * record: capture.c builds the nodes a graph takes.
 */
#ifndef SIMDEV_GRAPH_H
#define SIMDEV_GRAPH_H

#include <stddef.h>
#include <stdint.h>

struct sd_device;
struct sd_graph_params;
struct sd_op;
struct simdev_graph_exec;

/* A graph node: an op plus the node ids it depends on. */
struct sd_gnode {
    struct sd_op *op;
    size_t *deps;
    size_t dep_count;
    uint32_t lane;
};

struct simdev_graph {
    struct sd_device *dev;
    struct simdev_graph *next_in_device; /* caller must hold dev->lock */
    struct sd_gnode *nodes;
    size_t node_count;
    uint32_t lane_count;
};

/* Makes a graph from a finished capture's nodes (takes them). */
int sd_graph_from_capture(struct sd_device *dev, struct sd_gnode *nodes, size_t node_count,
                          uint32_t lane_count, struct simdev_graph **out);
void sd_gnodes_free(struct sd_gnode *nodes, size_t count);
struct simdev_stream;

/* Runs one replay on the calling thread (the stream executor) with the
 * launch arguments of `params` (the set its launch took); returns the
 * first failing node's status. Waits for a replay of the graph already
 * running. */
int sd_graph_exec_run(struct simdev_graph_exec *exec, struct sd_graph_params *params);
/*
 * Starts one replay, the graph op `op` at the head of `stream`, without
 * waiting for it: each node starts on the thread that ended its last
 * predecessor, a node that may block runs on `stream`'s executor, and the
 * replay's end calls sd_stream_op_done(stream, op, first failing node's
 * status). 0 when started; 1 when a replay of the graph is running
 * (nothing done).
 */
int sd_graph_exec_start(struct simdev_graph_exec *exec, struct sd_graph_params *params,
                        struct simdev_stream *stream, struct sd_op *op);
/* Drops what an enqueued replay holds: its reference on the executable
 * graph and on the argument set it took (NULL: none). */
void sd_graph_exec_unref(struct simdev_graph_exec *exec, struct sd_graph_params *params);
/* Destroy every graph / executable graph of a list (device reset). */
void sd_graph_teardown_list(struct simdev_graph *graphs);
void sd_graph_exec_teardown_list(struct simdev_graph_exec *execs);

#endif /* SIMDEV_GRAPH_H */
