/*
 * test_tensormap.c — region overlap classification and the TensorMap.
 *
 * Owns: rt_region_overlap's answers on 1-D, strided, 2-D, 3-D, transposed,
 * versioned and re-typed views (with a randomized cross-check against the
 * views' enumerated element sets), and the map's lookup, insert, retirement
 * and reclaim behaviour. Touches no device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/tensormap.h"

#define BUF_A UINT64_C(0x100000)
#define BUF_B UINT64_C(0x200000)

/* ---- view helpers ------------------------------------------------------ */

static struct simpler_tensor vec(uint64_t addr, uint64_t count, uint32_t dtype)
{
    struct simpler_tensor t = {0};
    assert_int_equal(simpler_tensor_make_1d(&t, addr, count, dtype, SIMPLER_MEM_DEVICE), 0);
    return t;
}

static struct simpler_tensor mat(uint64_t addr, uint64_t rows, uint64_t cols)
{
    struct simpler_tensor t = {0};
    uint64_t shape[2] = {rows, cols};
    assert_int_equal(simpler_tensor_make(&t, addr, shape, 2, SIMPLER_DTYPE_F32,
                                         SIMPLER_MEM_DEVICE), 0);
    return t;
}

static struct simpler_tensor sl(struct simpler_tensor t, uint32_t dim, uint64_t start,
                                uint64_t stop, uint64_t step)
{
    struct simpler_tensor v = {0};
    assert_int_equal(simpler_tensor_slice(&v, &t, dim, start, stop, step), 0);
    return v;
}

static struct simpler_tensor tr(struct simpler_tensor t)
{
    struct simpler_tensor v = {0};
    assert_int_equal(simpler_tensor_transpose(&v, &t, 0, 1), 0);
    return v;
}

/* Rows [r0, r1) by columns [c0, c1) of an 8x8 f32 matrix at BUF_A. */
static struct simpler_tensor tile(uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1)
{
    return sl(sl(mat(BUF_A, 8, 8), 0, r0, r1, 1), 1, c0, c1, 1);
}

/* ---- overlap: 1-D ------------------------------------------------------ */

static void overlap_1d_disjoint_ranges_are_none(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor lo = sl(v, 0, 0, 4, 1), hi = sl(v, 0, 8, 12, 1);
    /* OTHER: a spurious edge between unrelated tasks */
    assert_int_equal(rt_region_overlap(&lo, &hi), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&hi, &lo), RT_OVERLAP_NONE);
}

static void overlap_1d_touching_ranges_are_none(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor lo = sl(v, 0, 0, 4, 1), hi = sl(v, 0, 4, 8, 1);
    /* OTHER: the last byte is computed one element too far (off by es-1 or es) */
    assert_int_equal(rt_region_overlap(&lo, &hi), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&hi, &lo), RT_OVERLAP_NONE);
}

static void overlap_1d_partial_overlap_is_other(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor a = sl(v, 0, 0, 6, 1), b = sl(v, 0, 4, 10, 1);
    /* NONE: a lost dependency; COVERED: a writer retired while it still owns bytes */
    assert_int_equal(rt_region_overlap(&a, &b), RT_OVERLAP_OTHER);
    assert_int_equal(rt_region_overlap(&b, &a), RT_OVERLAP_OTHER);
}

static void overlap_1d_bigger_access_covers_smaller_recorded_not_the_reverse(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor small = sl(v, 0, 4, 8, 1);
    /* OTHER: a covering write never retires what it overwrites (the map fills up) */
    assert_int_equal(rt_region_overlap(&small, &v), RT_OVERLAP_COVERED);
    /* COVERED: the small write would retire the writer of the other 12 elements */
    assert_int_equal(rt_region_overlap(&v, &small), RT_OVERLAP_OTHER);
}

static void overlap_identical_views_are_covered(void **state)
{
    (void)state;
    struct simpler_tensor a = sl(vec(BUF_A, 16, SIMPLER_DTYPE_F32), 0, 2, 10, 1);
    struct simpler_tensor b = a;
    /* OTHER: rewriting the same region never retires the previous writer */
    assert_int_equal(rt_region_overlap(&a, &b), RT_OVERLAP_COVERED);
    /* strides (8, 3) do not nest: only the identity shortcut proves this */
    struct simpler_tensor t = sl(tile(1, 5, 0, 8), 1, 1, 8, 3);
    struct simpler_tensor t2 = t;
    /* OTHER: identity is not recognised for non-nesting strides */
    assert_int_equal(rt_region_overlap(&t, &t2), RT_OVERLAP_COVERED);
}

/* ---- overlap: strided -------------------------------------------------- */

static void overlap_step_slices_even_vs_odd_are_none_even_vs_even_covered(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor even = sl(v, 0, 0, 16, 2), odd = sl(v, 0, 1, 16, 2);
    /* OTHER: the start offsets are not compared modulo the stride (their bytes interleave) */
    assert_int_equal(rt_region_overlap(&even, &odd), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&odd, &even), RT_OVERLAP_NONE);
    struct simpler_tensor even2 = sl(v, 0, 0, 16, 2);
    assert_int_equal(rt_region_overlap(&even, &even2), RT_OVERLAP_COVERED);
    /* Not identical, so this goes through the per-dimension test: the even
     * elements of [0, 8) lie inside the even elements of [0, 16). */
    struct simpler_tensor even_lo = sl(v, 0, 0, 8, 2);
    /* OTHER: the per-dimension containment test is missing */
    assert_int_equal(rt_region_overlap(&even_lo, &even), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&even, &even_lo), RT_OVERLAP_OTHER);
}

static void overlap_different_steps_are_other_even_when_contained(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor every2 = sl(v, 0, 0, 16, 2), every4 = sl(v, 0, 0, 16, 4);
    /* Every 4th element is among the even ones, but the strides differ, so
     * the rule does not try: the documented conservative answer is OTHER.
     * NONE here would be a lost dependency. */
    assert_int_equal(rt_region_overlap(&every4, &every2), RT_OVERLAP_OTHER);
    assert_int_equal(rt_region_overlap(&every2, &every4), RT_OVERLAP_OTHER);
    /* ... and a contiguous access covering the bytes covers any stride. */
    assert_int_equal(rt_region_overlap(&every4, &v), RT_OVERLAP_COVERED);
}

/* ---- overlap: 2-D ------------------------------------------------------ */

static void overlap_2d_disjoint_column_blocks_are_none_though_their_bytes_interleave(void **state)
{
    (void)state;
    /* left spans bytes [0, 239], right [16, 255]: only the per-dim test separates them */
    struct simpler_tensor left = tile(0, 8, 0, 4), right = tile(0, 8, 4, 8);
    /* OTHER: the per-dimension test is missing (the byte test alone cannot tell) */
    assert_int_equal(rt_region_overlap(&left, &right), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&right, &left), RT_OVERLAP_NONE);
}

static void overlap_2d_overlapping_column_blocks_are_other(void **state)
{
    (void)state;
    struct simpler_tensor a = tile(0, 8, 0, 5), b = tile(0, 8, 3, 8);
    /* NONE: columns 3 and 4 are shared; a lost dependency */
    assert_int_equal(rt_region_overlap(&a, &b), RT_OVERLAP_OTHER);
    assert_int_equal(rt_region_overlap(&b, &a), RT_OVERLAP_OTHER);
}

static void overlap_2d_tile_inside_bigger_tile_is_covered_not_the_reverse(void **state)
{
    (void)state;
    struct simpler_tensor big = tile(0, 6, 0, 6), small = tile(2, 4, 1, 3);
    /* OTHER: coordinates are decomposed from the start offset wrongly */
    assert_int_equal(rt_region_overlap(&small, &big), RT_OVERLAP_COVERED);
    /* COVERED: the small tile would retire the writer of the big one */
    assert_int_equal(rt_region_overlap(&big, &small), RT_OVERLAP_OTHER);
    /* A tile touching big's last row and column is still inside it. */
    struct simpler_tensor corner = tile(5, 6, 5, 6);
    assert_int_equal(rt_region_overlap(&corner, &big), RT_OVERLAP_COVERED);
    /* ... and one just past it is not (in bytes they interleave). */
    struct simpler_tensor past = tile(5, 6, 6, 7);
    assert_int_equal(rt_region_overlap(&past, &big), RT_OVERLAP_NONE);
}

static void overlap_2d_crossing_row_and_column_slices_are_other(void **state)
{
    (void)state;
    struct simpler_tensor rows = tile(2, 4, 0, 8), cols = tile(0, 8, 3, 5);
    /* NONE: they share the 4 elements (2..3, 3..4); COVERED: neither holds the other */
    assert_int_equal(rt_region_overlap(&rows, &cols), RT_OVERLAP_OTHER);
    assert_int_equal(rt_region_overlap(&cols, &rows), RT_OVERLAP_OTHER);
}

static void overlap_2d_even_and_odd_rows_or_columns_are_none(void **state)
{
    (void)state;
    struct simpler_tensor m = mat(BUF_A, 8, 8);
    struct simpler_tensor even_cols = sl(m, 1, 0, 8, 2), odd_cols = sl(m, 1, 1, 8, 2);
    /* OTHER: the innermost stride g = 2 is not handled by comparing offsets modulo g */
    assert_int_equal(rt_region_overlap(&even_cols, &odd_cols), RT_OVERLAP_NONE);
    struct simpler_tensor even_rows = sl(m, 0, 0, 8, 2), odd_rows = sl(m, 0, 1, 8, 2);
    /* strides (16, 1): odd rows start at coordinate (0, 8) of a 16-wide container */
    assert_int_equal(rt_region_overlap(&even_rows, &odd_rows), RT_OVERLAP_NONE);
    /* even rows 0..3 of the top half lie inside all even rows */
    struct simpler_tensor top_even = sl(sl(m, 0, 0, 4, 1), 0, 0, 4, 2);
    assert_int_equal(rt_region_overlap(&top_even, &even_rows), RT_OVERLAP_COVERED);
}

static void overlap_view_running_past_its_row_is_not_decomposed(void **state)
{
    (void)state;
    /* A hand-built view of a 4x4 matrix that starts at column 2 with rows
     * 4 long: it holds elements 2..9, wrapping into the next row. Its
     * coordinates (0, 2)+(2, 4) do not name its elements, so the per-dim
     * test must not be used: it would call element 4 (coordinate (1, 0))
     * disjoint. */
    struct simpler_tensor m = mat(BUF_A, 4, 4);
    struct simpler_tensor wrap = m;
    wrap.start_offset = 2;
    wrap.shape[0] = 2;
    struct simpler_tensor elem4 = m;
    elem4.start_offset = 4;
    elem4.shape[0] = 1;
    elem4.shape[1] = 1;
    /* NONE: a false NONE from decomposing a wrapping view; a lost dependency */
    assert_int_equal(rt_region_overlap(&elem4, &wrap), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&wrap, &elem4), RT_OVERLAP_OTHER);
}

static void overlap_dims_one_long_in_both_views_are_ignored(void **state)
{
    (void)state;
    /* Columns 0 and 3 of an 8x8 matrix, each taken from its every-third-
     * column view: strides (8, 3) do not nest, but dim 1 is 1 long in both,
     * so only stride 8 matters and the start offsets differ modulo 8. */
    struct simpler_tensor thirds = sl(mat(BUF_A, 8, 8), 1, 0, 8, 3);
    struct simpler_tensor col0 = sl(thirds, 1, 0, 1, 1), col3 = sl(thirds, 1, 1, 2, 1);
    /* OTHER: 1-long dims block the exact test (the bytes interleave) */
    assert_int_equal(rt_region_overlap(&col0, &col3), RT_OVERLAP_NONE);
    /* single elements, both 1 long in every dim: equal starts = the same element */
    struct simpler_tensor e1 = sl(col3, 0, 2, 3, 1), e2 = sl(col3, 0, 2, 3, 1);
    e2.stride[0] = 99; /* a 1-long dim's stride names no element */
    assert_int_equal(rt_region_overlap(&e1, &e2), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&e1, &col3), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&col3, &e1), RT_OVERLAP_OTHER);
}

static void overlap_3d_blocks_are_decided_per_dimension(void **state)
{
    (void)state;
    struct simpler_tensor cube;
    uint64_t shape[3] = {4, 4, 4};
    assert_int_equal(simpler_tensor_make(&cube, BUF_A, shape, 3, SIMPLER_DTYPE_F32,
                                         SIMPLER_MEM_DEVICE), 0);
    struct simpler_tensor front = sl(sl(cube, 1, 0, 2, 1), 2, 0, 2, 1);
    struct simpler_tensor back = sl(sl(cube, 1, 0, 2, 1), 2, 2, 4, 1);
    struct simpler_tensor slab = sl(cube, 1, 0, 2, 1);
    struct simpler_tensor inner = sl(sl(sl(cube, 0, 1, 3, 1), 1, 1, 2, 1), 2, 0, 2, 1);
    /* OTHER: dims past the second are not decomposed */
    assert_int_equal(rt_region_overlap(&front, &back), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&front, &slab), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&inner, &front), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&inner, &back), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&slab, &inner), RT_OVERLAP_OTHER);
}

/* ---- overlap: transposed, versions, dtypes ----------------------------- */

static void overlap_transposed_vs_original_is_other_unless_byte_disjoint(void **state)
{
    (void)state;
    struct simpler_tensor m = mat(BUF_A, 8, 8), t = tr(m);
    /* Same elements, but the strides differ, so nothing is proven: OTHER.
     * COVERED would let a strided write retire a writer without proof. */
    assert_int_equal(rt_region_overlap(&m, &t), RT_OVERLAP_OTHER);
    /* The original is contiguous and spans the transposed view's bytes. */
    assert_int_equal(rt_region_overlap(&t, &m), RT_OVERLAP_COVERED);
    /* top rows transposed: bytes [0, 127]; bottom rows: [128, 255] */
    struct simpler_tensor top_t = tr(tile(0, 4, 0, 8)), bottom = tile(4, 8, 0, 8);
    assert_int_equal(rt_region_overlap(&top_t, &bottom), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&bottom, &top_t), RT_OVERLAP_NONE);
    /* a transposed tile against a crossing untransposed one */
    struct simpler_tensor left_t = tr(tile(0, 8, 0, 4)), right = tile(0, 8, 4, 8);
    /* NONE would be right, but the strides differ: OTHER, conservatively */
    assert_int_equal(rt_region_overlap(&left_t, &right), RT_OVERLAP_OTHER);
}

static void overlap_transposed_blocks_sharing_strides_are_decided_exactly(void **state)
{
    (void)state;
    /* Dims are sorted by stride before decomposing, so two transposed views
     * (strides (1, 8)) are decided like their untransposed originals. */
    struct simpler_tensor t = tr(mat(BUF_A, 8, 8));
    struct simpler_tensor left_t = sl(t, 0, 0, 4, 1), right_t = sl(t, 0, 4, 8, 1);
    /* OTHER: the dims are not sorted by stride (bytes interleave) */
    assert_int_equal(rt_region_overlap(&left_t, &right_t), RT_OVERLAP_NONE);
    assert_int_equal(rt_region_overlap(&left_t, &t), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&t, &left_t), RT_OVERLAP_OTHER);
}

static void overlap_different_versions_are_other_whatever_the_regions(void **state)
{
    (void)state;
    struct simpler_tensor v = vec(BUF_A, 16, SIMPLER_DTYPE_F32);
    struct simpler_tensor old_lo = sl(v, 0, 0, 4, 1), new_hi = sl(v, 0, 8, 12, 1);
    new_hi.version = 1;
    /* NONE: the reused buffer's new data is ordered against nothing old */
    assert_int_equal(rt_region_overlap(&old_lo, &new_hi), RT_OVERLAP_OTHER);
    struct simpler_tensor new_all = v;
    new_all.version = 1;
    /* COVERED: a write of the new data would retire old-version entries */
    assert_int_equal(rt_region_overlap(&v, &new_all), RT_OVERLAP_OTHER);
}

static void overlap_different_dtypes_cover_only_through_a_contiguous_access(void **state)
{
    (void)state;
    struct simpler_tensor f32 = vec(BUF_A, 4, SIMPLER_DTYPE_F32); /* bytes [0, 15] */
    struct simpler_tensor u8 = vec(BUF_A, 32, SIMPLER_DTYPE_U8);  /* bytes [0, 31] */
    struct simpler_tensor u8_lo = sl(u8, 0, 0, 16, 1);             /* bytes [0, 15] */
    struct simpler_tensor u8_even = sl(u8, 0, 0, 16, 2);           /* even bytes of [0, 15] */
    struct simpler_tensor u8_hi = sl(u8, 0, 16, 32, 1);            /* bytes [16, 31] */
    /* Rule: a contiguous access spanning the recorded bytes covers them,
     * whatever either dtype; otherwise mixed dtypes are OTHER. */
    assert_int_equal(rt_region_overlap(&f32, &u8_lo), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&u8_lo, &f32), RT_OVERLAP_COVERED);
    assert_int_equal(rt_region_overlap(&u8_even, &f32), RT_OVERLAP_COVERED);
    /* COVERED: a strided byte write would retire the f32 writer of the odd bytes */
    assert_int_equal(rt_region_overlap(&f32, &u8_even), RT_OVERLAP_OTHER);
    /* OTHER: the byte test runs in elements, not bytes */
    assert_int_equal(rt_region_overlap(&f32, &u8_hi), RT_OVERLAP_NONE);
}

/* ---- overlap: randomized cross-check ----------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
    return rng_next(s) % n;
}

/* The 64-element buffer seen five ways: 1-D, 8x8, 8x8 transposed, 4x16,
 * 4x4x4 (all f32 at BUF_A). */
static struct simpler_tensor family_base(uint32_t family)
{
    static const uint64_t shapes[5][3] = {{64}, {8, 8}, {8, 8}, {4, 16}, {4, 4, 4}};
    static const uint32_t ndims[5] = {1, 2, 2, 2, 3};
    struct simpler_tensor t = {0};
    assert_int_equal(simpler_tensor_make(&t, BUF_A, shapes[family], ndims[family],
                                         SIMPLER_DTYPE_F32, SIMPLER_MEM_DEVICE), 0);
    return family == 2 ? tr(t) : t;
}

static struct simpler_tensor random_view(uint64_t *rng, uint32_t family, const uint64_t *steps)
{
    struct simpler_tensor t = family_base(family);
    for (uint32_t d = 0; d < t.ndims; d++) {
        uint64_t n = t.shape[d];
        uint64_t start = rng_below(rng, n);
        uint64_t stop = start + 1 + rng_below(rng, n - start);
        t = sl(t, d, start, stop, steps[d]);
    }
    return t;
}

/* Bit k set: element k of the 64-element buffer is in the view. */
static uint64_t element_set(const struct simpler_tensor *t)
{
    uint64_t set = 0, index[SIMPLER_TENSOR_MAX_DIMS] = {0};
    for (;;) {
        uint64_t offset = simpler_tensor_offset_of(t, index);
        assert_true(offset < 64);
        set |= UINT64_C(1) << offset;
        uint32_t d = t->ndims;
        while (d > 0 && ++index[d - 1] == t->shape[d - 1])
            index[--d] = 0;
        if (d == 0)
            return set;
    }
}

/* A random step-1 sub-block of `t` (same strides, so the exact test applies). */
static struct simpler_tensor random_sub_view(uint64_t *rng, struct simpler_tensor t)
{
    for (uint32_t d = 0; d < t.ndims; d++) {
        uint64_t n = t.shape[d];
        uint64_t start = rng_below(rng, n);
        t = sl(t, d, start, start + 1 + rng_below(rng, n - start), 1);
    }
    return t;
}

static int lowest_bit(uint64_t set)
{
    return __builtin_ctzll(set);
}

static int highest_bit(uint64_t set)
{
    return 63 - __builtin_clzll(set);
}

static void overlap_randomized_never_false_none_or_covered_and_proves_most(void **state)
{
    (void)state;
    uint64_t rng = UINT64_C(0x2545F4914F6CDD1D);
    /* interleaved: disjoint element sets whose byte intervals overlap, the
     * pairs only the per-dimension test can separate */
    int interleaved = 0, proven_none = 0, contained = 0, proven_covered = 0;
    for (int i = 0; i < 20000; i++) {
        uint32_t family = (uint32_t)rng_below(&rng, 5);
        uint64_t steps_a[3], steps_b[3];
        bool same_steps = rng_below(&rng, 4) != 0;
        for (int d = 0; d < 3; d++) {
            steps_a[d] = 1 + rng_below(&rng, 3);
            steps_b[d] = same_steps ? steps_a[d] : 1 + rng_below(&rng, 3);
        }
        struct simpler_tensor recorded = {0}, access = {0};
        switch (rng_below(&rng, 3)) {
        case 0: /* independent views */
            recorded = random_view(&rng, family, steps_a);
            access = random_view(&rng, family, steps_b);
            break;
        case 1: /* recorded inside access */
            access = random_view(&rng, family, steps_a);
            recorded = random_sub_view(&rng, access);
            break;
        default: /* access inside recorded */
            recorded = random_view(&rng, family, steps_a);
            access = random_sub_view(&rng, recorded);
            break;
        }
        uint64_t r = element_set(&recorded), a = element_set(&access);
        enum rt_overlap got = rt_region_overlap(&recorded, &access);
        if (got == RT_OVERLAP_NONE)
            assert_int_equal(r & a, 0); /* a false NONE: a lost dependency edge */
        if (got == RT_OVERLAP_COVERED)
            assert_int_equal(r & ~a, 0); /* a false COVERED: a live writer retired */
        if ((r & a) == 0 && lowest_bit(r) <= highest_bit(a) && lowest_bit(a) <= highest_bit(r)) {
            interleaved++;
            proven_none += got == RT_OVERLAP_NONE;
        }
        if ((r & ~a) == 0) {
            contained++;
            proven_covered += got == RT_OVERLAP_COVERED;
        }
    }
    print_message("interleaved %d proven none %d, contained %d proven covered %d\n",
                  interleaved, proven_none, contained, proven_covered);
    /* Enough of each kind of pair for the rates to mean something. */
    assert_true(interleaved > 1000);
    assert_true(contained > 1000);
    /* Floors well under what the rule achieves on this sequence (printed
     * above); an always-OTHER rule proves none, a byte-interval-only rule
     * proves no interleaved pair NONE. */
    assert_true(proven_none * 100 > interleaved * 60);
    assert_true(proven_covered * 100 > contained * 85);
}

/* ---- map helpers ------------------------------------------------------- */

#define MAX_HITS 16

struct hits {
    int count;
    uint64_t id[MAX_HITS];
    void *producer[MAX_HITS];
    enum rt_access kind[MAX_HITS];
    int fail_at;   /* the call (1-based) that returns fail_rc; 0 = none */
    int fail_rc;
};

static int record_hit(void *ctx, uint64_t producer_id, void *producer, enum rt_access kind)
{
    struct hits *h = ctx;
    assert_true(h->count < MAX_HITS);
    h->id[h->count] = producer_id;
    h->producer[h->count] = producer;
    h->kind[h->count] = kind;
    h->count++;
    return h->count == h->fail_at ? h->fail_rc : 0;
}

/* ctx: a uint64_t whose bit k says producer k has retired. */
static bool retired_in_mask(void *ctx, uint64_t producer_id)
{
    return producer_id < 64 && ((*(uint64_t *)ctx >> producer_id) & 1);
}

struct test_map {
    struct rt_tensormap map;
    void *mem;
    uint64_t retired; /* mask for retired_in_mask */
};

static void map_open(struct test_map *tm, uint32_t buckets, uint32_t entries)
{
    size_t bytes = rt_tensormap_bytes(buckets, entries);
    assert_true(bytes > 0);
    tm->mem = malloc(bytes);
    assert_non_null(tm->mem);
    tm->retired = 0;
    assert_int_equal(rt_tensormap_init(&tm->map, tm->mem, buckets, entries), 0);
}

static void map_close(struct test_map *tm)
{
    free(tm->mem);
}

static struct hits lookup(struct test_map *tm, struct simpler_tensor access, enum rt_access kind,
                          int *rc)
{
    struct hits h = {0};
    int result = rt_tensormap_lookup(&tm->map, &access, kind, retired_in_mask, &tm->retired,
                                     record_hit, &h);
    if (rc)
        *rc = result;
    else
        assert_int_equal(result, 0);
    return h;
}

static void insert(struct test_map *tm, struct simpler_tensor region, enum rt_access kind,
                   uint64_t id)
{
    assert_int_equal(rt_tensormap_insert(&tm->map, &region, kind, id, (void *)(uintptr_t)id), 0);
}

/* ---- map: sizes -------------------------------------------------------- */

static void map_bytes_and_init_reject_invalid_sizes(void **state)
{
    (void)state;
    /* each nonzero: an invalid size accepted, and init lays a broken map out */
    assert_int_equal(rt_tensormap_bytes(0, 4), 0);
    assert_int_equal(rt_tensormap_bytes(3, 4), 0);
    assert_int_equal(rt_tensormap_bytes(4, 0), 0);
    assert_int_equal(rt_tensormap_bytes(4, RT_TM_NIL), 0);
    assert_int_equal(rt_tensormap_bytes(UINT32_C(1) << 31 | 1, 4), 0);
    /* heads (2 x uint32 per bucket, already 8-aligned) then the entries;
     * more: padding miscounted; less: the entries overlap the heads */
    assert_int_equal(rt_tensormap_bytes(1, 1), 8 + sizeof(struct rt_tm_entry));
    assert_int_equal(rt_tensormap_bytes(4, 3), 32 + 3 * sizeof(struct rt_tm_entry));

    uint64_t mem[64];
    struct rt_tensormap map, before;
    memset(&map, 0xAB, sizeof map);
    memcpy(&before, &map, sizeof map); /* padding too: compared bytewise below */
    assert_int_equal(rt_tensormap_init(&map, mem, 0, 4), -1);
    assert_int_equal(rt_tensormap_init(&map, mem, 6, 4), -1);
    assert_int_equal(rt_tensormap_init(&map, mem, 4, 0), -1);
    assert_int_equal(rt_tensormap_init(&map, (char *)mem + 4, 1, 1), -1); /* misaligned */
    /* a difference: a rejected init half-wrote the map */
    assert_memory_equal(&map, &before, sizeof map);
}

static void map_init_lays_out_an_empty_map(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 3);
    assert_int_equal(tm.map.bucket_count, 4);
    assert_int_equal(tm.map.bucket_bits, 2);
    assert_int_equal(tm.map.capacity, 3);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3); /* less: entries lost to the free list */
    assert_ptr_equal(tm.map.heads, tm.mem);
    assert_ptr_equal(tm.map.entries, (char *)tm.mem + 32);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(tm.map.heads[i], RT_TM_NIL); /* else a chain starts at garbage */
    map_close(&tm);
}

/* ---- map: lookups ------------------------------------------------------ */

static void map_read_lookup_reports_only_overlapping_writers(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 4);
    int producer;
    struct simpler_tensor top = tile(0, 4, 0, 8);
    assert_int_equal(rt_tensormap_insert(&tm.map, &top, RT_ACCESS_WRITE, 7, &producer), 0);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3);

    struct hits h = lookup(&tm, tile(4, 8, 0, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 0); /* 1: an edge on a disjoint region */

    h = lookup(&tm, tile(2, 6, 0, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1); /* 0: a lost read-after-write edge */
    assert_int_equal(h.id[0], 7);
    assert_ptr_equal(h.producer[0], &producer);
    assert_int_equal(h.kind[0], RT_ACCESS_WRITE);
    /* a read retires nothing, even over a region it covers */
    h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3);
    map_close(&tm);
}

static void map_read_entries_are_reported_to_write_lookups_only(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 3);

    struct hits h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 0); /* 1: readers ordered after readers */

    h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1); /* 0: a lost write-after-read edge */
    assert_int_equal(h.id[0], 3);
    assert_int_equal(h.kind[0], RT_ACCESS_READ);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3); /* 4: a partial write retired it */

    h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    /* 3: a covering write did not retire the read it orders after */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 4);
    h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 0);
    map_close(&tm);
}

static void map_covering_write_retires_the_older_write(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, 1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3);

    struct hits h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1); /* 0: a lost write-after-write edge */
    assert_int_equal(h.id[0], 1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 4); /* 3: the covered write kept */

    h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 0); /* 1: the retired entry still reported */
    map_close(&tm);
}

static void map_partial_write_keeps_the_older_write(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, 1);

    struct hits h = lookup(&tm, tile(2, 6, 0, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3); /* 4: rows 0..1 lost their writer */

    h = lookup(&tm, tile(0, 2, 0, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1); /* 0: a reader of rows 0..1 misses its producer */
    assert_int_equal(h.id[0], 1);
    map_close(&tm);
}

static void map_hits_come_newest_first_writes_before_reads(void **state)
{
    (void)state;
    /* writes of the left half: they overlap the accesses below without
     * covering them, so no walk stops early at one */
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 1);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 2);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 3);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 4);

    struct hits h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 4);
    /* another order: chains not newest first, or the read chain walked first */
    assert_int_equal(h.id[0], 3);
    assert_int_equal(h.id[1], 1);
    assert_int_equal(h.id[2], 4);
    assert_int_equal(h.id[3], 2);
    assert_int_equal(h.kind[0], RT_ACCESS_WRITE);
    assert_int_equal(h.kind[1], RT_ACCESS_WRITE);
    assert_int_equal(h.kind[2], RT_ACCESS_READ);
    assert_int_equal(h.kind[3], RT_ACCESS_READ);
    map_close(&tm);
}

static void map_stale_entries_are_never_reported_and_are_freed(void **state)
{
    (void)state;
    /* writes of the left half: they overlap the accesses below without
     * covering them, so no walk stops early at one */
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 1);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 2);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 3);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 1);
    tm.retired = UINT64_C(1) << 1 | UINT64_C(1) << 3;

    struct hits h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1); /* 2: an edge on a retired producer */
    assert_int_equal(h.id[0], 2);
    /* a read lookup walks only the write chain: the stale write is freed,
     * the stale read stays until a write lookup or reclaim walks past it */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 2);

    h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 2);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3); /* 2: the stale read not freed */
    map_close(&tm);
}

static void map_reclaim_frees_exactly_the_stale_entries(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 8);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, 1);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 2);
    insert(&tm, mat(BUF_B, 8, 8), RT_ACCESS_WRITE, 3);
    insert(&tm, mat(BUF_B, 8, 8), RT_ACCESS_READ, 4);
    insert(&tm, mat(BUF_A + 0x1000, 8, 8), RT_ACCESS_READ, 5);
    tm.retired = UINT64_C(1) << 2 | UINT64_C(1) << 4;

    /* 0: reclaim skipped a chain; 3+: it freed a live entry */
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_mask, &tm.retired), 2);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 5);
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_mask, &tm.retired), 0);

    tm.retired = 0; /* nothing else may have gone: lookups see 1, 3 and 5 */
    struct hits h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 1);
    h = lookup(&tm, sl(mat(BUF_B, 8, 8), 0, 0, 4, 1), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 3);
    h = lookup(&tm, sl(mat(BUF_A + 0x1000, 8, 8), 0, 0, 4, 1), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 5);
    map_close(&tm);
}

static void map_insert_fails_when_full_and_succeeds_after_reclaim(void **state)
{
    (void)state;
    /* writes of the left half: they overlap the accesses below without
     * covering them, so no walk stops early at one */
    struct test_map tm;
    map_open(&tm, 2, 3);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 1);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 2);
    insert(&tm, mat(BUF_B, 8, 8), RT_ACCESS_READ, 3);
    struct simpler_tensor m = mat(BUF_A, 8, 8);
    /* 0: an entry handed out twice, or written past the block */
    assert_int_equal(rt_tensormap_insert(&tm.map, &m, RT_ACCESS_WRITE, 9, NULL), -1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 0);
    struct hits h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 2); /* 3: the rejected insert was recorded anyway */

    tm.retired = UINT64_C(1) << 2;
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_mask, &tm.retired), 1);
    struct simpler_tensor half = tile(0, 8, 0, 4);
    assert_int_equal(rt_tensormap_insert(&tm.map, &half, RT_ACCESS_WRITE, 9, NULL), 0);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 0);
    h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 2);
    assert_int_equal(h.id[0], 9);
    assert_int_equal(h.id[1], 1);
    map_close(&tm);
}

static void map_buffers_sharing_a_bucket_never_hit_each_other(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 1, 4); /* one bucket: every buffer shares its chains */
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, 1);
    insert(&tm, mat(BUF_B, 8, 8), RT_ACCESS_WRITE, 2);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 3);

    struct hits h = lookup(&tm, mat(BUF_B, 8, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1); /* 2 or 3: addresses not compared within a bucket */
    assert_int_equal(h.id[0], 2);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 2); /* 1: B's write retired A's entries */

    h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 2);
    assert_int_equal(h.id[0], 1);
    assert_int_equal(h.id[1], 3);
    map_close(&tm);
}

static void map_every_buffer_finds_its_own_entries_across_buckets(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 16, 64);
    for (uint64_t i = 0; i < 64; i++)
        insert(&tm, mat(BUF_A + i * 256, 8, 8), RT_ACCESS_WRITE, i);
    for (uint64_t i = 0; i < 64; i++) {
        struct hits h = lookup(&tm, sl(mat(BUF_A + i * 256, 8, 8), 0, 0, 1, 1), RT_ACCESS_READ, NULL);
        assert_int_equal(h.count, 1); /* 0: looked up in another bucket than inserted */
        assert_int_equal(h.id[0], i);
    }
    map_close(&tm);
}

static void map_walk_stops_at_the_newest_write_covering_the_access(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 8);
    insert(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, 1);
    insert(&tm, tile(0, 4, 0, 8), RT_ACCESS_READ, 2);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, 3); /* ordered after 1 and 2 */
    insert(&tm, tile(0, 2, 0, 8), RT_ACCESS_READ, 4);

    struct hits h = lookup(&tm, tile(0, 4, 0, 8), RT_ACCESS_READ, NULL);
    /* 2: the walk went past task 3, whose own wait already orders task 1 */
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 3);

    h = lookup(&tm, tile(0, 4, 0, 4), RT_ACCESS_WRITE, NULL);
    /* the newer read (4) still counts; the older read (2) is behind 3 */
    assert_int_equal(h.count, 2);
    assert_int_equal(h.id[0], 3);
    assert_int_equal(h.id[1], 4);

    /* the write of task 3 covers rows 6..7 as well: the walk stops there */
    h = lookup(&tm, sl(mat(BUF_A, 8, 8), 0, 6, 8, 1), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1); /* 2+: entries of other rows reported */
    assert_int_equal(h.id[0], 3);
    map_close(&tm);
}

static void map_nonzero_hit_stops_the_walk_and_keeps_the_entry(void **state)
{
    (void)state;
    /* writes of the left half: they overlap the accesses below without
     * covering them, so no walk stops early at one */
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 1);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 2);
    insert(&tm, tile(0, 8, 0, 4), RT_ACCESS_WRITE, 3);

    struct simpler_tensor m = mat(BUF_A, 8, 8);
    struct hits h = {.fail_at = 2, .fail_rc = 42};
    int rc = rt_tensormap_lookup(&tm.map, &m, RT_ACCESS_READ, retired_in_mask, &tm.retired,
                                 record_hit, &h);
    assert_int_equal(rc, 42);     /* 0: the hit's error swallowed */
    assert_int_equal(h.count, 2); /* 3: the walk went on after the error */

    h = (struct hits){.fail_at = 1, .fail_rc = -5};
    rc = rt_tensormap_lookup(&tm.map, &m, RT_ACCESS_WRITE, retired_in_mask, &tm.retired,
                             record_hit, &h);
    assert_int_equal(rc, -5);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 3);
    /* 2: the covered entry whose edge failed was retired; a retry loses it */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 1);

    h = lookup(&tm, m, RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 3);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 4);
    map_close(&tm);
}

static void map_write_of_a_new_version_retires_nothing_old(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 4);
    insert(&tm, tile(0, 4, 0, 8), RT_ACCESS_WRITE, 1);
    struct simpler_tensor bottom_v1 = tile(4, 8, 0, 8), all_v1 = mat(BUF_A, 8, 8);
    bottom_v1.version = 1;
    all_v1.version = 1;

    struct hits h = lookup(&tm, bottom_v1, RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1); /* 0: regions compared across versions */
    h = lookup(&tm, all_v1, RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 3); /* 4: a new-version write covered old data */
    map_close(&tm);
}

static void map_reset_empties_the_map(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 4, 2);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, 1);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_READ, 2);
    rt_tensormap_reset(&tm.map);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 2);
    struct hits h = lookup(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 0); /* else entries survived the reset */
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, 3);
    insert(&tm, mat(BUF_A, 8, 8), RT_ACCESS_WRITE, 4); /* fails: free list not rebuilt */
    map_close(&tm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overlap_1d_disjoint_ranges_are_none),
        cmocka_unit_test(overlap_1d_touching_ranges_are_none),
        cmocka_unit_test(overlap_1d_partial_overlap_is_other),
        cmocka_unit_test(overlap_1d_bigger_access_covers_smaller_recorded_not_the_reverse),
        cmocka_unit_test(overlap_identical_views_are_covered),
        cmocka_unit_test(overlap_step_slices_even_vs_odd_are_none_even_vs_even_covered),
        cmocka_unit_test(overlap_different_steps_are_other_even_when_contained),
        cmocka_unit_test(overlap_2d_disjoint_column_blocks_are_none_though_their_bytes_interleave),
        cmocka_unit_test(overlap_2d_overlapping_column_blocks_are_other),
        cmocka_unit_test(overlap_2d_tile_inside_bigger_tile_is_covered_not_the_reverse),
        cmocka_unit_test(overlap_2d_crossing_row_and_column_slices_are_other),
        cmocka_unit_test(overlap_2d_even_and_odd_rows_or_columns_are_none),
        cmocka_unit_test(overlap_view_running_past_its_row_is_not_decomposed),
        cmocka_unit_test(overlap_dims_one_long_in_both_views_are_ignored),
        cmocka_unit_test(overlap_3d_blocks_are_decided_per_dimension),
        cmocka_unit_test(overlap_transposed_vs_original_is_other_unless_byte_disjoint),
        cmocka_unit_test(overlap_transposed_blocks_sharing_strides_are_decided_exactly),
        cmocka_unit_test(overlap_different_versions_are_other_whatever_the_regions),
        cmocka_unit_test(overlap_different_dtypes_cover_only_through_a_contiguous_access),
        cmocka_unit_test(overlap_randomized_never_false_none_or_covered_and_proves_most),
        cmocka_unit_test(map_bytes_and_init_reject_invalid_sizes),
        cmocka_unit_test(map_init_lays_out_an_empty_map),
        cmocka_unit_test(map_read_lookup_reports_only_overlapping_writers),
        cmocka_unit_test(map_read_entries_are_reported_to_write_lookups_only),
        cmocka_unit_test(map_covering_write_retires_the_older_write),
        cmocka_unit_test(map_partial_write_keeps_the_older_write),
        cmocka_unit_test(map_hits_come_newest_first_writes_before_reads),
        cmocka_unit_test(map_stale_entries_are_never_reported_and_are_freed),
        cmocka_unit_test(map_reclaim_frees_exactly_the_stale_entries),
        cmocka_unit_test(map_insert_fails_when_full_and_succeeds_after_reclaim),
        cmocka_unit_test(map_buffers_sharing_a_bucket_never_hit_each_other),
        cmocka_unit_test(map_every_buffer_finds_its_own_entries_across_buckets),
        cmocka_unit_test(map_walk_stops_at_the_newest_write_covering_the_access),
        cmocka_unit_test(map_nonzero_hit_stops_the_walk_and_keeps_the_entry),
        cmocka_unit_test(map_write_of_a_new_version_retires_nothing_old),
        cmocka_unit_test(map_reset_empties_the_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
