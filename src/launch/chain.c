/*
 * launch/chain.c — the launch chain's streams, host side.
 *
 * Owns: rt_stream_drain, the one way launch and host wait out a stream
 * after a failed enqueue. Must not enqueue anything.
 */
#include "launch/launch.h"

int rt_stream_drain(simdev_stream_t stream)
{
    int rc;
    /* A failed sync waits for nothing, so sync again while work is still
     * pending; on a lost device sync and query say DEVICE_LOST, which ends
     * the loop. */
    do
        rc = simdev_stream_sync(stream);
    while (rc && rc != PTO_RUNTIME_ERR_DEVICE_LOST &&
           simdev_stream_query(stream) == PTO_RUNTIME_ERR_NOT_READY);
    return rc;
}
