/*
 * test_program_memory.c — the device memory a program-mode context commits,
 * and the figures docs/program-mode.md (section 8) quotes for it.
 *
 * Owns: the composition of simpler_committed_device_memory — the arena as
 * the pure sizing function rt_arena_bytes computes it (under
 * host_build_graph without the orchestrator's regions), a fixed size per
 * pipeline slot, the image plus a loader record per callable — measured on
 * a default context on the default device; and the check that the doc's
 * numbers are these measured ones, so a sizing change that moves them
 * fails here instead of leaving the doc stale.
 *
 * The doc is found from this file's own path (__FILE__ is absolute in the
 * CMake build): <root>/tests/... -> <root>/docs/program-mode.md, <root>
 * being what comes before the last "/tests/".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/launch.h"
#include "pm_support.h"
#include "runtime/cpu.h"
#include "runtime/layout.h"
#include "runtime/ring.h"

/* The default device (simdev_config_default: 2 AICPU threads, 1 AIC + 2
 * AIV, 1 GiB): the topology the doc's figure is for. */
static struct simdev_config default_device(void)
{
    struct simdev_config topo;
    assert_int_equal(simdev_config_default(&topo), 0);
    ts_device_setup_config(&topo);
    return topo;
}

/* What a context of the default config at `depth` commits once initialised. */
static size_t committed_at_depth(uint32_t depth)
{
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.pipeline_depth = depth;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    size_t bytes = simpler_committed_device_memory(ctx);
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    return bytes;
}

/* The arena rt_arena_bytes sizes for the default run capacity on `topo`. */
static size_t default_arena(const struct simdev_config *topo)
{
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    struct rt_config capacity;
    rt_config_from_public(&cfg.run_capacity, &capacity);
    size_t bytes = 0;
    assert_int_equal(rt_arena_bytes(&capacity, topo, &bytes), 0);
    return bytes;
}

#define SLOT_BYTES (sizeof(struct simpler_orch_args) + sizeof(struct rt_run_result))

static void test_a_default_context_commits_its_arena_and_its_slots(void **state)
{
    (void)state;
    struct simdev_config topo = default_device();
    size_t arena = default_arena(&topo);
    /* Anything else: init allocates more (or less) than the arena and one
     * args + result block per slot, or the accounting misses some of it. */
    assert_int_equal(committed_at_depth(1), arena + SLOT_BYTES);
    assert_int_equal(committed_at_depth(4), arena + 4 * SLOT_BYTES);
}

/* What a default context of `runtime` commits once initialised. */
static size_t committed_by_runtime(uint32_t runtime)
{
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    cfg.runtime = runtime;
    cfg.pipeline_depth = 1;
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, &cfg), 0);
    size_t bytes = simpler_committed_device_memory(ctx);
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
    return bytes;
}

/* A host_build_graph context commits its arena as its own layout sizes it:
 * TMR's regions but the orchestrator's (TensorMap, its per-ring records,
 * dependency pools, fan-in scratch), which its device never touches, and
 * the image region. */
static void test_an_hbg_context_commits_no_region_of_the_orchestrator(void **state)
{
    (void)state;
    struct simdev_config topo = default_device();
    unsetenv("SIMPLER_RUNTIME"); /* the config says which runtime */
    struct simpler_config cfg;
    assert_int_equal(simpler_config_default(&cfg), 0);
    struct rt_config tmr, hbg;
    rt_config_from_public(&cfg.run_capacity, &tmr);
    hbg = tmr;
    hbg.runtime = RT_RUNTIME_HBG;
    struct rt_layout t, h;
    uint32_t cores = topo.aic_cores + topo.aiv_cores;
    assert_int_equal(rt_layout_compute(&tmr, cores, &t), 0);
    assert_int_equal(rt_layout_compute(&hbg, cores, &h), 0);
    size_t orchestrator = t.tensormap_bytes; /* what TMR lays out for the orchestrator alone */
    for (uint32_t i = 0; i < RT_RINGS; i++)
        orchestrator += tmr.task_window[i] * sizeof(struct rt_tm_record) +
                        tmr.dep_pool[i] * sizeof(struct rt_dep);
    orchestrator += tmr.max_fanin * (sizeof(void *) + sizeof(uint32_t));
    /* Anything else: init commits more (or less) than the layout's arena
     * and one args + result block. */
    assert_int_equal(committed_by_runtime(SIMPLER_RUNTIME_HBG), h.total + SLOT_BYTES);
    assert_int_equal(committed_by_runtime(SIMPLER_RUNTIME_TMR), t.total + SLOT_BYTES);
    /* More: the HBG arena still holds some of the orchestrator's bytes
     * (the image region's own start may add a cache line's padding). */
    assert_true(h.total - h.hbg_image_bytes <= t.total - orchestrator + RT_CACHELINE);
}

static void test_a_callable_commits_its_image_and_a_loader_record(void **state)
{
    (void)state;
    default_device();
    struct simpler_context *ctx;
    assert_int_equal(simpler_create_device_context(&ctx), 0);
    assert_int_equal(simpler_init(ctx, 0, NULL), 0);
    size_t bare = simpler_committed_device_memory(ctx);
    size_t bytes;
    void *image = pm_image(&bytes);
    assert_int_equal(simpler_register_callable(ctx, PM_CALLABLE, image, bytes), 0);
    simpler_callable_free(image);
    /* Anything else: registration holds more than the image's device copy
     * and the record the loader fills. */
    assert_int_equal(simpler_committed_device_memory(ctx) - bare,
                     bytes + sizeof(struct rt_callable_record));
    assert_int_equal(simpler_unregister_callable(ctx, PM_CALLABLE), 0);
    assert_int_equal(simpler_committed_device_memory(ctx), bare); /* more: unregister kept some */
    assert_int_equal(simpler_finalize_device(ctx), 0);
    assert_int_equal(simpler_destroy_device_context(ctx), 0);
}

/* ----------------------------------------------------------- the doc */

/* docs/program-mode.md, whitespace collapsed to single spaces (the
 * figures may sit across a line break). The caller frees it. */
static char *program_mode_doc(void)
{
    const char *tail = NULL; /* "tests/..." after the last "/tests/" */
    for (const char *at = strstr(__FILE__, "/tests/"); at; at = strstr(at + 1, "/tests/"))
        tail = at + 1;
    assert_non_null(tail);
    char path[4096];
    snprintf(path, sizeof path, "%.*sdocs/program-mode.md", (int)(tail - __FILE__), __FILE__);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    char *text = NULL;
    size_t len = 0, cap = 0;
    int c, space = 0;
    while ((c = fgetc(f)) != EOF) {
        if (c == ' ' || c == '\n' || c == '\t') {
            space = 1;
            continue;
        }
        if (len + 3 > cap) {
            cap = cap ? cap * 2 : 1 << 16;
            text = realloc(text, cap);
            assert_non_null(text);
        }
        if (space && len)
            text[len++] = ' ';
        space = 0;
        text[len++] = (char)c;
    }
    fclose(f);
    assert_non_null(text);
    text[len] = '\0';
    return text;
}

/* `n` with thousands separators, as the doc writes it: 89,517,520. */
static const char *grouped(size_t n, char buf[32])
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%zu", n);
    int out = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            buf[out++] = ',';
        buf[out++] = digits[i];
    }
    buf[out] = '\0';
    return buf;
}

static void doc_says(const char *doc, const char *phrase)
{
    if (!strstr(doc, phrase))
        fail_msg("docs/program-mode.md section 8 should say \"%s\" (the measured figure): "
                 "update it",
                 phrase);
}

static void test_the_program_mode_doc_quotes_the_measured_figures(void **state)
{
    (void)state;
    struct simdev_config topo = default_device();
    size_t depth1 = committed_at_depth(1);
    assert_int_equal(depth1, default_arena(&topo) + SLOT_BYTES); /* as the test above */
    char *doc = program_mode_doc();
    char phrase[160], n[32];
    snprintf(phrase, sizeof phrase, "commits %s bytes at depth 1", grouped(depth1, n));
    doc_says(doc, phrase);
    snprintf(phrase, sizeof phrase, "and %s more per extra slot", grouped(SLOT_BYTES, n));
    doc_says(doc, phrase);
    snprintf(phrase, sizeof phrase, "the device copy of the args (%zu) + a result block (%zu)",
             sizeof(struct simpler_orch_args), sizeof(struct rt_run_result));
    doc_says(doc, phrase);
    snprintf(phrase, sizeof phrase, "the image's size + the loader's record (%s bytes)",
             grouped(sizeof(struct rt_callable_record), n));
    doc_says(doc, phrase);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SIMPLER_TEST_WITH(test_a_default_context_commits_its_arena_and_its_slots,
                          NULL, ts_device_teardown),
        SIMPLER_TEST_WITH(test_an_hbg_context_commits_no_region_of_the_orchestrator,
                          NULL, ts_device_teardown),
        SIMPLER_TEST_WITH(test_a_callable_commits_its_image_and_a_loader_record,
                          NULL, ts_device_teardown),
        SIMPLER_TEST_WITH(test_the_program_mode_doc_quotes_the_measured_figures,
                          NULL, ts_device_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
