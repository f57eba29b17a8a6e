/*
 * host/hbg_image.c — a prepared call's kept host_build_graph image (see
 * hbg_image.h): when a build may be kept, and its publish into a
 * submission's bank.
 *
 * Must not build, launch or touch a device; reads the image's format only
 * through runtime/hbg.h.
 */
#include "host/hbg_image.h"

#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/host_alloc.h"
#include "host/working_set.h"

/* The staging buffers of `ws` as the ranges an image may name. */
static uint32_t staging_ranges(const struct sp_working_set *ws,
                               struct rt_hbg_range ranges[SIMPLER_ORCH_MAX_TENSORS])
{
    for (uint32_t j = 0; j < ws->staging_count; j++)
        ranges[j] = (struct rt_hbg_range){(uint64_t)(uintptr_t)ws->staging[j].device,
                                          ws->staging[j].bytes};
    return ws->staging_count;
}

int sp_hbg_image_keep(const struct sp_working_set *ws, uint64_t arena_nonce,
                      uint32_t edge_log_capacity, struct sp_hbg_image **out)
{
    *out = NULL;
    struct rt_hbg_header hd;
    memcpy(&hd, ws->hbg_bank, sizeof hd);
    struct rt_hbg_range ranges[SIMPLER_ORCH_MAX_TENSORS];
    uint32_t range_count = staging_ranges(ws, ranges);
    uint64_t relocs, total;
    /* A failed build is not kept (nor is a graph that read data), and an
     * image that hides a staging address in a value cannot be relocated:
     * the call builds at every submission. */
    if (hd.error || (hd.flags & RT_HBG_READ_INPUTS) ||
        !rt_hbg_image_relocations(ws->hbg_bank, ranges, range_count, NULL, 0, &relocs))
        return 0;
    /* One allocation: the header, the image (8-aligned: hd.bytes is), the
     * relocations. */
    if (!sp_mul_u64(relocs, sizeof(struct rt_hbg_reloc), &total) ||
        !sp_add_u64(total, hd.bytes, &total) ||
        !sp_add_u64(total, sizeof(struct sp_hbg_image), &total) || total > SIZE_MAX)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct sp_hbg_image *kept = sp_host_malloc((size_t)total);
    if (!kept)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    kept->arena_nonce = arena_nonce;
    kept->edge_log_capacity = edge_log_capacity;
    kept->staging_count = range_count;
    kept->reloc_count = relocs;
    kept->bytes = (size_t)hd.bytes;
    memcpy(kept->image, ws->hbg_bank, kept->bytes);
    kept->relocs = (struct rt_hbg_reloc *)(kept->image + kept->bytes);
    rt_hbg_image_relocations(kept->image, ranges, range_count, kept->relocs, relocs, &relocs);
    /* The kept bytes name no staging buffer: a relocated field holds its
     * offset into its buffer until a publish adds the buffer's address. */
    static const uint64_t no_bases[SIMPLER_ORCH_MAX_TENSORS];
    rt_hbg_image_relocate(kept->image, kept->relocs, kept->reloc_count, no_bases);
    *out = kept;
    return 0;
}

int sp_hbg_image_keep_fixed(const void *image, struct sp_hbg_image **out)
{
    *out = NULL;
    struct rt_hbg_header hd;
    memcpy(&hd, image, sizeof hd);
    uint64_t total;
    if (hd.error || (hd.flags & RT_HBG_READ_INPUTS))
        return 0;
    if (!sp_add_u64(hd.bytes, sizeof(struct sp_hbg_image), &total) || total > SIZE_MAX)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    struct sp_hbg_image *kept = sp_host_malloc((size_t)total);
    if (!kept)
        return PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY;
    memset(kept, 0, sizeof *kept);
    kept->bytes = (size_t)hd.bytes;
    memcpy(kept->image, image, kept->bytes);
    kept->relocs = (struct rt_hbg_reloc *)(kept->image + kept->bytes);
    *out = kept;
    return 0;
}

bool sp_hbg_image_fits(const struct sp_hbg_image *kept, const struct sp_working_set *ws,
                       uint64_t arena_nonce, uint32_t edge_log_capacity)
{
    return kept->arena_nonce == arena_nonce && kept->edge_log_capacity == edge_log_capacity &&
           kept->staging_count == ws->staging_count && kept->bytes <= ws->hbg_bank_bytes;
}

size_t sp_hbg_image_publish(const struct sp_hbg_image *kept, struct sp_working_set *ws)
{
    uint64_t bases[SIMPLER_ORCH_MAX_TENSORS];
    for (uint32_t j = 0; j < ws->staging_count; j++)
        bases[j] = (uint64_t)(uintptr_t)ws->staging[j].device;
    memcpy(ws->hbg_bank, kept->image, kept->bytes);
    rt_hbg_image_relocate(ws->hbg_bank, kept->relocs, kept->reloc_count, bases);
    return kept->bytes;
}

void sp_hbg_image_free(struct sp_hbg_image *kept)
{
    free(kept);
}
