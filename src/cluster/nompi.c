/*
 * cluster/nompi.c — the distributed cluster's entry points in a build
 * without MPI (SIMPLER_MPI=OFF, or none found): each says UNSUPPORTED, and
 * the transport's functions the rest of the layer names are never reached
 * (no cluster has a link).
 *
 * Owns: nothing but those answers. Compiled instead of mpi_link.c,
 * remote.c and serve.c.
 */
#include <stddef.h>

#include "cluster/cluster.h"
#include "cluster/mpi_link.h"

int simpler_cluster_mpi_init(int *argc, char ***argv, int *rank, int *ranks)
{
    (void)argc, (void)argv, (void)rank, (void)ranks;
    return PTO_RUNTIME_ERR_UNSUPPORTED;
}

int simpler_cluster_mpi_finalize(void) { return PTO_RUNTIME_ERR_UNSUPPORTED; }

int simpler_cluster_serve(struct simpler_cluster *cluster, struct simpler_cluster_serve_info *info)
{
    (void)info;
    return cluster ? PTO_RUNTIME_ERR_UNSUPPORTED : PTO_RUNTIME_ERR_INVALID_ARGUMENT;
}

int cl_link_open(uint32_t peer_timeout_ms, struct cl_link **out)
{
    (void)peer_timeout_ms, (void)out;
    return PTO_RUNTIME_ERR_UNSUPPORTED;
}

void cl_link_close(struct cl_link *link) { (void)link; }
int cl_link_rank(const struct cl_link *link) { (void)link; return 0; }
int cl_link_size(const struct cl_link *link) { (void)link; return 1; }

int cl_link_allgather(struct cl_link *link, const void *in, void *out, size_t bytes)
{
    (void)link, (void)in, (void)out, (void)bytes;
    return PTO_RUNTIME_ERR_UNSUPPORTED;
}

int cl_link_barrier(struct cl_link *link)
{
    (void)link;
    return PTO_RUNTIME_ERR_UNSUPPORTED;
}

int cl_remote_run_begin(struct simpler_cluster *c)
{
    (void)c;
    return PTO_RUNTIME_ERR_UNSUPPORTED;
}

void cl_remote_run_end(struct simpler_cluster *c, int32_t status) { (void)c, (void)status; }

int cl_remote_launch(struct cl_worker *w, struct cl_member *m)
{
    (void)w, (void)m;
    return PTO_RUNTIME_ERR_UNSUPPORTED;
}

/* Without MPI no run has a directory (c->run.dir stays NULL): never called. */
void cl_remote_member_done(struct simpler_cluster *c, const struct cl_member *m, int32_t status)
{
    (void)c, (void)m, (void)status;
}
