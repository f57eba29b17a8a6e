/*
 * rt_support.c — see rt_support.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_support.h"
#include "test_support.h"

struct rt_config rth_small_config(void)
{
    struct simpler_run_config capacity = ts_small_run_config();
    struct rt_config c;
    rt_config_from_public(&capacity, &c);
    c.ring_timeout_ms = 2000;
    c.sched_timeout_ms = 10000;
    c.tensor_wait_timeout_ms = 10000;
    return c;
}

void rth_open(struct rt_harness *h, const struct rt_config *config, uint32_t edge_capacity)
{
    memset(h, 0, sizeof *h);
    h->config = config ? *config : rth_small_config();
    h->edge_capacity = edge_capacity;
    if (edge_capacity) {
        h->edges_dev = ts_dev_alloc(edge_capacity * sizeof(struct rt_edge));
        h->edges = calloc(edge_capacity, sizeof(struct rt_edge));
        assert_non_null(h->edges);
    }
    h->config.edge_log = h->edges_dev;
    h->config.edge_log_capacity = edge_capacity;
    const char *runtime = getenv("SIMPLER_RUNTIME");
    h->hbg = runtime && strcmp(runtime, "hbg") == 0;
    if (h->hbg) {
        h->config.runtime = RT_RUNTIME_HBG;
        h->hbg_bank_bytes = rt_hbg_image_bound(&h->config);
        assert_true(h->hbg_bank_bytes > 0);
        h->hbg_bank = malloc(h->hbg_bank_bytes);
        assert_non_null(h->hbg_bank);
    }
    int device;
    struct simdev_config topo;
    assert_int_equal(simdev_get_device(&device), 0);
    assert_int_equal(simdev_device_get_config(device, &topo), 0);
    assert_int_equal(rt_arena_bytes(&h->config, &topo, &h->arena_bytes), 0);
    h->arena = ts_dev_alloc(h->arena_bytes);
    h->arena_nonce = rt_arena_nonce();
    h->kernels_dev = ts_dev_alloc(SIMPLER_MAX_FUNC_IDS * sizeof(simpler_kernel_fn));
    h->args_dev = ts_dev_alloc(sizeof(struct simpler_orch_args));
    h->result_dev = ts_dev_alloc(sizeof(struct rt_run_result));
    assert_int_equal(rt_launcher_create(&h->launcher), 0);
    assert_int_equal(simdev_stream_create(&h->stream), 0);
}

void rth_close(struct rt_harness *h)
{
    assert_int_equal(simdev_stream_sync(h->stream), 0);
    assert_int_equal(simdev_stream_destroy(h->stream), 0);
    assert_int_equal(rt_launcher_destroy(h->launcher), 0);
    assert_int_equal(simdev_free(h->arena), 0);
    assert_int_equal(simdev_free(h->kernels_dev), 0);
    assert_int_equal(simdev_free(h->args_dev), 0);
    assert_int_equal(simdev_free(h->result_dev), 0);
    if (h->edges_dev)
        assert_int_equal(simdev_free(h->edges_dev), 0);
    free(h->edges);
    free(h->hbg_bank); /* the stream is synced: its last image copy has run */
    memset(h, 0, sizeof *h);
}

int rth_run(struct rt_harness *h, simpler_orch_entry_fn entry, const simpler_kernel_fn *kernels,
            uint32_t count, const struct simpler_orch_args *args)
{
    if (count)
        ts_to_dev(h->kernels_dev, kernels, count * sizeof(simpler_kernel_fn));
    static const struct simpler_orch_args empty;
    ts_to_dev(h->args_dev, args ? args : &empty, sizeof(struct simpler_orch_args));
    struct rt_run_request rq = rth_request(h, entry, count);
    assert_int_equal(rt_run_enqueue(h->launcher, h->stream, &rq), 0);
    int status = simdev_stream_sync(h->stream);
    ts_from_dev(&h->result, h->result_dev, sizeof h->result);
    if (h->edge_capacity)
        ts_from_dev(h->edges, h->edges_dev, h->edge_capacity * sizeof(struct rt_edge));
    return status;
}

struct rt_run_request rth_request(struct rt_harness *h, simpler_orch_entry_fn entry,
                                  uint32_t kernel_count)
{
    if (h->hbg) {
        /* The host's own view: the same entry (an in-process function),
         * the args and table as the test uploaded them; no staged host
         * tensors. */
        simpler_kernel_fn table[SIMPLER_MAX_FUNC_IDS];
        if (kernel_count)
            ts_from_dev(table, h->kernels_dev, kernel_count * sizeof table[0]);
        memset(h->kernel_present, 0, sizeof h->kernel_present);
        for (uint32_t i = 0; i < kernel_count; i++)
            h->kernel_present[i] = table[i] != NULL;
        ts_from_dev(&h->host_args, h->args_dev, sizeof h->host_args);
        memset(&h->host, 0, sizeof h->host);
        h->host.entry = entry;
        h->host.args = &h->host_args;
        h->host.kernel_present = h->kernel_present;
        h->host.bank = h->hbg_bank;
        h->host.bank_bytes = h->hbg_bank_bytes;
    }
    struct rt_run_request rq = {
        .entry = entry,
        .kernels = h->kernels_dev,
        .kernel_count = kernel_count,
        .args = h->args_dev,
        .arena = h->arena,
        .arena_bytes = h->arena_bytes,
        .arena_nonce = h->arena_nonce,
        .result = h->result_dev,
        .config = h->config,
        .hbg = h->hbg ? &h->host : NULL,
    };
    return rq;
}

int rth_has_edge(const struct rt_harness *h, uint64_t producer, uint64_t consumer)
{
    for (uint64_t i = 0; i < h->result.edges_logged; i++)
        if (h->edges[i].producer == producer && h->edges[i].consumer == consumer)
            return 1;
    return 0;
}
