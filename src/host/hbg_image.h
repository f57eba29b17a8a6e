/*
 * host/hbg_image.h — a prepared call's kept host_build_graph image: the
 * graph its first build produced, kept so that later submissions of the
 * same call skip the host build (docs/runtime.md, "A prepared call keeps
 * its image").
 *
 * Owns: struct sp_hbg_image (one host allocation: the image's bytes as
 * built, its relocations and what the build depended on), the rule for
 * when a build may be kept, and the publish of a kept image into a
 * submission's bank. Must not build, launch or touch a device: the launch
 * (pipeline.c) decides when to keep and when to publish, and the image's
 * format is runtime/hbg.h's. Caller holds ctx->lock throughout.
 *
 * Position independence: what moves from one submission of a call to the
 * next is where its host tensors are staged (every submission allocates
 * its staging buffers afresh) and the run's generation. The kept bytes
 * name neither: every address field that lies in a staging buffer is a
 * relocation (field offset, staging index, offset in the buffer), and the
 * generation is stamped by the launch. Everything else an image names is
 * fixed for the call's life: the context arena's heaps (the arena is
 * checked by its nonce), the caller's own device tensors, task indices.
 */
#ifndef SIMPLER_HOST_HBG_IMAGE_H
#define SIMPLER_HOST_HBG_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/hbg.h"

struct sp_working_set;

struct sp_hbg_image {
    uint64_t arena_nonce;       /* the device arena it was built against */
    uint32_t edge_log_capacity; /* its build's (the submission's trace level) */
    uint32_t staging_count;     /* staging buffers of the submission it was built in */
    uint64_t reloc_count;
    size_t bytes;               /* of the image */
    struct rt_hbg_reloc *relocs; /* [reloc_count], after the image */
    uint8_t image[];            /* `bytes`, 8-aligned: as built, but its header's
                                   generation and its relocated fields */
};

/*
 * Keeps the image a build just wrote into ws->hbg_bank (the submission's
 * staging in ws), built against the arena `arena_nonce` with an edge log
 * of `edge_log_capacity` entries, when it may be kept: the build succeeded
 * (its header carries no code), read no staged input value through an
 * element read (RT_HBG_READ_INPUTS), and names no staging address but in
 * address fields (rt_hbg_image_relocations). *out: the kept image, or
 * NULL when it may not be kept (the call builds at every submission). 0 or
 * OUT_OF_HOST_MEMORY (nothing kept).
 */
int sp_hbg_image_keep(const struct sp_working_set *ws, uint64_t arena_nonce,
                      uint32_t edge_log_capacity, struct sp_hbg_image **out);

/*
 * Kernel mode: keeps the image `image` (a build's, complete) when it may
 * be kept: the build succeeded and read no host value. A kernel context's
 * image names nothing that moves between launches of one call (the
 * caller's device tensors, the arena's heaps; no staging), so it keeps no
 * relocations and is shipped as kept, its generation stamped. *out: the
 * kept image, or NULL. 0 or OUT_OF_HOST_MEMORY (nothing kept).
 */
int sp_hbg_image_keep_fixed(const void *image, struct sp_hbg_image **out);

/* True when `kept` may run as the submission staged in `ws`, against the
 * arena `arena_nonce` with an edge log of `edge_log_capacity` entries: the
 * same arena, the same edge log, the same staging layout. */
bool sp_hbg_image_fits(const struct sp_hbg_image *kept, const struct sp_working_set *ws,
                       uint64_t arena_nonce, uint32_t edge_log_capacity);

/* Copies `kept` into ws->hbg_bank (at least kept->bytes long) and relocates
 * it to ws's staging buffers. Returns the image's bytes. */
size_t sp_hbg_image_publish(const struct sp_hbg_image *kept, struct sp_working_set *ws);

/* Frees a kept image (NULL: nothing). */
void sp_hbg_image_free(struct sp_hbg_image *kept);

#endif /* SIMPLER_HOST_HBG_IMAGE_H */
