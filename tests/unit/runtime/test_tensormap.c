/*
 * test_tensormap.c — region overlap classification and the TensorMap.
 *
 * Owns: rt_region_overlap's answers on 1-D, strided, 2-D, 3-D, transposed,
 * versioned and re-typed views (with a randomized cross-check against the
 * views' enumerated element sets), and the map's lookup, insert, retirement
 * and reclaim behaviour: on a few entries, on many entries of one buffer
 * across granules and size classes (hits, cuts, stale entries, failing
 * hits, a full map, and how many entries a lookup visits), its lazy reset
 * (an epoch: reuse across resets, the wrap), and against a reference model
 * of the documented semantics on random sequences.
 * Touches no device.
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

#define MAX_HITS 512 /* a wide access may hit every entry of a map */

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

/* ---- map helpers: many entries on one buffer --------------------------- */

/* A 4 MiB buffer of u32 elements: element e is bytes [4e, 4e + 3]. */
#define BUF_BIG UINT64_C(0x40000000)
#define BIG_ELEMS (UINT64_C(1) << 20)
#define MANY_IDS 8192

/* Retired-callback context that also counts the calls: every entry on the
 * access's buffer that a lookup visits is asked about exactly once, so
 * `calls` is the lookup's cost in entries. */
struct census {
    uint8_t retired[MANY_IDS];
    uint32_t calls;
};

static bool retired_in_census(void *ctx, uint64_t producer_id)
{
    struct census *c = ctx;
    c->calls++;
    return producer_id < MANY_IDS && c->retired[producer_id];
}

/* Elements [first, first + count) of BUF_BIG. */
static struct simpler_tensor big(uint64_t first, uint64_t count)
{
    return sl(vec(BUF_BIG, BIG_ELEMS, SIMPLER_DTYPE_U32), 0, first, first + count, 1);
}

/* A view of BUF_BIG whose extent overflows int64: the map cannot place it. */
static struct simpler_tensor big_unknown_extent(void)
{
    struct simpler_tensor t = vec(BUF_BIG, 2, SIMPLER_DTYPE_U32);
    t.stride[0] = INT64_MAX;
    return t;
}

static struct hits census_lookup(struct test_map *tm, struct census *c,
                                 struct simpler_tensor access, enum rt_access kind)
{
    struct hits h = {0};
    c->calls = 0;
    assert_int_equal(rt_tensormap_lookup(&tm->map, &access, kind, retired_in_census, c,
                                         record_hit, &h),
                     0);
    return h;
}

/* Writes of 1 element every 16 (64 bytes apart): element 16 * i by task
 * first_id + i, for i in [0, n). */
static void insert_spread_elements(struct test_map *tm, uint64_t n, uint64_t first_id)
{
    for (uint64_t i = 0; i < n; i++)
        insert(tm, big(16 * i, 1), RT_ACCESS_WRITE, first_id + i);
}

/* Writes far up the buffer (elements 512K + 16 i), so the buffer holds many
 * entries that the accesses of a test do not touch. */
static void insert_far_fillers(struct test_map *tm, uint64_t n, uint64_t first_id)
{
    for (uint64_t i = 0; i < n; i++)
        insert(tm, big(BIG_ELEMS / 2 + 16 * i, 1), RT_ACCESS_WRITE, first_id + i);
}

/* The map most probe tests start from: 256 buckets, 512 entries, and 256
 * far fillers (ids 100..355) so that lookups probe granules instead of
 * walking the buffer chain. */
static void open_probed_map(struct test_map *tm)
{
    map_open(tm, 256, 512);
    insert_far_fillers(tm, 256, 100);
}

static void assert_ids(const struct hits *h, const uint64_t *ids, int n)
{
    assert_int_equal(h->count, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(h->id[i], ids[i]);
}

/* The index of the entry recorded for `producer_id` (call before any entry
 * is freed: a free node keeps its last producer id). */
static uint32_t index_of(const struct test_map *tm, uint64_t producer_id)
{
    for (uint32_t i = 0; i < tm->map.fresh; i++)
        if (tm->map.nodes[i].producer_id == producer_id)
            return i;
    fail_msg("no entry for producer %llu", (unsigned long long)producer_id);
    return RT_TM_NIL;
}

static const struct rt_tm_node *node_of(const struct test_map *tm, uint64_t producer_id)
{
    return &tm->map.nodes[index_of(tm, producer_id)];
}

/* The granule bucket whose chain holds entry `index` (found by walking
 * them all). */
static uint32_t granule_bucket_holding(const struct test_map *tm, uint32_t index)
{
    const struct rt_tensormap *map = &tm->map;
    for (uint32_t i = 0; i < map->bucket_count; i++)
        for (uint32_t kind = 0; kind < 2 && map->buckets[i].epoch == map->epoch; kind++)
            for (uint32_t e = map->buckets[i].granule_head[kind]; e != RT_TM_NIL;
                 e = map->nodes[e].granule_next)
                if (e == index)
                    return i;
    fail_msg("entry %u on no granule chain", index);
    return RT_TM_NIL;
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
    /* per bucket a bucket (64 bytes: buffer and granule chain heads, their
     * counts and versions, its epoch), up to 56 bytes to align the nodes
     * to a cache line, then per entry a node (64) and a record (136);
     * more: padding miscounted; less: the parts overlap */
    assert_int_equal(sizeof(struct rt_tm_bucket), 64);
    assert_int_equal(sizeof(struct rt_tm_node), 64);
    assert_int_equal(sizeof(struct rt_tm_entry), 136);
    assert_int_equal(rt_tensormap_bytes(1, 1), 64 + 56 + 200);
    assert_int_equal(rt_tensormap_bytes(4, 3), 256 + 56 + 3 * 200);

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
    /* buckets, nodes on the next cache line, records (else they overlap,
     * or a node straddles two lines) */
    assert_ptr_equal(tm.map.buckets, tm.mem);
    uintptr_t nodes = ((uintptr_t)tm.mem + 256 + 63) & ~(uintptr_t)63;
    assert_ptr_equal(tm.map.nodes, (void *)nodes);
    assert_ptr_equal(tm.map.entries, (char *)nodes + 3 * 64);
    assert_true((char *)(tm.map.entries + 3) <= (char *)tm.mem + rt_tensormap_bytes(4, 3));
    /* init writes every bucket, whatever the memory held: epoch 0 in the
     * map and in each bucket (another value in a bucket: garbage read as
     * a live bucket) */
    assert_int_equal(tm.map.epoch, 0);
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(tm.map.buckets[i].epoch, 0);
        /* else a chain starts at garbage */
        assert_int_equal(tm.map.buckets[i].granule_head[RT_ACCESS_READ], RT_TM_NIL);
        assert_int_equal(tm.map.buckets[i].granule_head[RT_ACCESS_WRITE], RT_TM_NIL);
        assert_int_equal(tm.map.buckets[i].head[RT_ACCESS_READ], RT_TM_NIL);
        assert_int_equal(tm.map.buckets[i].head[RT_ACCESS_WRITE], RT_TM_NIL);
        /* nonzero: a lookup on an empty map walks or probes garbage */
        assert_int_equal(tm.map.buckets[i].count[RT_ACCESS_READ], 0);
        assert_int_equal(tm.map.buckets[i].count[RT_ACCESS_WRITE], 0);
        assert_int_equal(tm.map.buckets[i].class_mask[RT_ACCESS_READ], 0);
        assert_int_equal(tm.map.buckets[i].class_mask[RT_ACCESS_WRITE], 0);
    }
    assert_int_equal(tm.map.class_mask[RT_ACCESS_READ], 0); /* else empty classes probed */
    assert_int_equal(tm.map.class_mask[RT_ACCESS_WRITE], 0);
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

/* ---- map: many entries on one buffer ----------------------------------- */

static struct census g_census; /* 8 KiB: static, not on the test's stack */

static struct census *census_clear(void)
{
    memset(&g_census, 0, sizeof g_census);
    return &g_census;
}

static void map_small_access_among_many_disjoint_slices_hits_one_and_visits_few(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, 1024, 2048);
    insert_spread_elements(&tm, 1024, 1); /* element 16 i written by task i + 1 */

    struct hits h = census_lookup(&tm, c, big(16 * 500, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 1); /* 0: a lost edge; more: disjoint slices reported */
    assert_int_equal(h.id[0], 501);
    /* ~1024: the lookup walked every entry of the buffer, as a per-buffer
     * hash does; a few: it probed the access's granules only */
    assert_in_range(c->calls, 1, 8);

    h = census_lookup(&tm, c, big(16 * 500, 1), RT_ACCESS_WRITE);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 501);
    assert_in_range(c->calls, 1, 8);
    /* 1024: the rewritten element's old writer kept (the map fills up) */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 2048 - 1023);
    h = census_lookup(&tm, c, big(16 * 500, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 0); /* 1: the covered writer still reported */
    /* between two entries: nothing */
    h = census_lookup(&tm, c, big(16 * 700 + 8, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 0); /* 1+: a neighbour in the same granule reported */
    map_close(&tm);
}

static void map_wide_access_after_many_slices_hits_every_one_newest_first(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, 256, 512);
    for (uint64_t i = 0; i < 256; i++) /* 256 adjacent 64-byte slices */
        insert(&tm, big(16 * i, 16), RT_ACCESS_WRITE, i + 1);

    /* slices 100..103 exactly: several granules probed, merged newest first */
    struct hits h = census_lookup(&tm, c, big(1600, 64), RT_ACCESS_READ);
    static const uint64_t four[] = {104, 103, 102, 101};
    assert_ids(&h, four, 4); /* fewer: a probed granule missed; other order: not merged */
    assert_in_range(c->calls, 4, 24); /* ~256: the whole buffer walked */

    /* slices 99..104 partly: the ends are found from both sides */
    h = census_lookup(&tm, c, big(1599, 66), RT_ACCESS_READ);
    static const uint64_t six[] = {105, 104, 103, 102, 101, 100};
    assert_ids(&h, six, 6);

    struct simpler_tensor whole = vec(BUF_BIG, BIG_ELEMS, SIMPLER_DTYPE_U32);
    h = census_lookup(&tm, c, whole, RT_ACCESS_READ);
    assert_int_equal(h.count, 256); /* fewer: a wide access misses small entries */
    for (int i = 0; i < 256; i++)
        assert_int_equal(h.id[i], (uint64_t)(256 - i)); /* not newest first */
    assert_int_equal(c->calls, 256); /* more: an entry visited twice */

    h = census_lookup(&tm, c, whole, RT_ACCESS_WRITE);
    assert_int_equal(h.count, 256);
    for (int i = 0; i < 256; i++)
        assert_int_equal(h.id[i], (uint64_t)(256 - i));
    /* less: a covered slice was kept after the covering write */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 512);
    map_close(&tm);
}

static void map_entry_spanning_a_granule_boundary_is_found_from_either_side(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    open_probed_map(&tm); /* many entries: lookups probe granules */
    /* bytes [8, 23]: across the 16-byte granules 0 and 1, so filed under
     * the 32-byte granule [0, 31] that holds it */
    insert(&tm, big(2, 4), RT_ACCESS_WRITE, 1);
    /* bytes [1016, 1031]: across the 1 KiB boundary, so filed under the
     * 2 KiB granule [0, 2047] */
    insert(&tm, big(254, 4), RT_ACCESS_WRITE, 2);
    /* bytes [4096, 8191]: exactly one 4 KiB granule */
    insert(&tm, big(1024, 1024), RT_ACCESS_WRITE, 3);
    /* other classes: an entry filed by its span alone, not its alignment */
    assert_int_equal(node_of(&tm, 1)->size_class, 1);
    assert_int_equal(node_of(&tm, 2)->size_class, 7);
    assert_int_equal(node_of(&tm, 3)->size_class, 8);

    static const struct {
        uint64_t element;
        int hits;
        uint64_t id;
    } probes[] = {
        {1, 0, 0},     {2, 1, 1},    /* byte 8: the first 16-byte granule */
        {5, 1, 1},                   /* byte 20: the second */
        {6, 0, 0},     {253, 0, 0},  {254, 1, 2}, /* byte 1016: below 1 KiB */
        {257, 1, 2},                 /* byte 1028: above */
        {258, 0, 0},   {1023, 0, 0}, {1024, 1, 3}, {2047, 1, 3}, {2048, 0, 0},
    };
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        struct hits h = census_lookup(&tm, c, big(probes[i].element, 1), RT_ACCESS_READ);
        /* 0 where 1 is due: the entry filed where an access on that side
         * does not look */
        assert_int_equal(h.count, probes[i].hits);
        if (probes[i].hits)
            assert_int_equal(h.id[0], probes[i].id);
        assert_in_range(c->calls, 0, 8); /* ~259: the buffer walked, probes untested */
    }
    /* an access across the same boundaries finds both neighbours */
    struct hits h = census_lookup(&tm, c, big(5, 250), RT_ACCESS_READ);
    static const uint64_t both[] = {2, 1};
    assert_ids(&h, both, 2);
    map_close(&tm);
}

static void map_mixed_size_classes_are_merged_newest_first(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    open_probed_map(&tm);
    insert(&tm, big(0, 16384), RT_ACCESS_WRITE, 1); /* bytes [0, 65535]: 64 KiB class */
    insert(&tm, big(256, 256), RT_ACCESS_READ, 2);  /* [1024, 2047]: 1 KiB class */
    insert(&tm, big(272, 16), RT_ACCESS_READ, 3);   /* [1088, 1151]: 64-byte class */
    insert(&tm, big(275, 1), RT_ACCESS_WRITE, 4);   /* [1100, 1103]: 16-byte class */
    insert(&tm, big(274, 1), RT_ACCESS_READ, 5);    /* [1096, 1099] */
    assert_int_equal(node_of(&tm, 1)->size_class, 12); /* 64 KiB granules */
    assert_int_equal(node_of(&tm, 2)->size_class, 6);  /* 1 KiB */
    assert_int_equal(node_of(&tm, 3)->size_class, 2);  /* 64 B */
    assert_int_equal(node_of(&tm, 4)->size_class, 0);  /* 16 B */

    /* bytes [1096, 1111]: writes 4 (covered: retired) then 1 (covers the
     * access: the cut), then the reads newer than 1: 5 (covered), 3, 2 */
    struct hits h = census_lookup(&tm, c, big(274, 4), RT_ACCESS_WRITE);
    static const uint64_t ids[] = {4, 1, 5, 3, 2};
    /* missing id: a class not probed; other order: classes not merged by age */
    assert_ids(&h, ids, 5);
    assert_int_equal(h.kind[0], RT_ACCESS_WRITE);
    assert_int_equal(h.kind[1], RT_ACCESS_WRITE);
    assert_int_equal(h.kind[2], RT_ACCESS_READ);
    assert_int_equal(h.kind[3], RT_ACCESS_READ);
    assert_int_equal(h.kind[4], RT_ACCESS_READ);
    assert_in_range(c->calls, 5, 20); /* ~261: the buffer walked */
    /* 261 entries less the two covered ones (4 and 5) */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 512 - 259);

    h = census_lookup(&tm, c, big(274, 4), RT_ACCESS_READ);
    assert_int_equal(h.count, 1); /* 2: the covered write 4 survived */
    assert_int_equal(h.id[0], 1);
    map_close(&tm);
}

static void map_newer_covering_write_of_another_class_cuts_older_entries(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    open_probed_map(&tm);
    insert(&tm, big(275, 1), RT_ACCESS_WRITE, 1);   /* 16-byte class */
    insert(&tm, big(274, 4), RT_ACCESS_READ, 2);    /* 32-byte class */
    insert(&tm, big(256, 256), RT_ACCESS_WRITE, 3); /* 1 KiB class, over 1 and 2 */
    insert(&tm, big(276, 1), RT_ACCESS_READ, 4);

    struct hits h = census_lookup(&tm, c, big(275, 1), RT_ACCESS_READ);
    /* 2: the merge went past 3, whose own wait orders 1 (other class) */
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 3);

    h = census_lookup(&tm, c, big(274, 4), RT_ACCESS_WRITE);
    /* 3 (the cut), then the read newer than it (4, covered: retired); the
     * read 2 and the write 1 are behind the cut */
    static const uint64_t ids[] = {3, 4};
    assert_ids(&h, ids, 2);
    /* 260 entries less the covered read 4; one more freed: the walk went
     * behind the cut and retired the covered 1 or 2 */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 512 - 259);

    h = census_lookup(&tm, c, big(275, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 3);
    map_close(&tm);
}

static void map_entries_of_unknown_extent_or_too_wide_are_found_by_every_access(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    open_probed_map(&tm); /* ids 100..355 */
    insert(&tm, big_unknown_extent(), RT_ACCESS_WRITE, 1);
    /* elements 0 and 2^37: bytes [0, 2^39 + 3], wider than the widest class */
    struct simpler_tensor too_wide = vec(BUF_BIG, 2, SIMPLER_DTYPE_U32);
    too_wide.stride[0] = INT64_C(1) << 37;
    insert(&tm, too_wide, RT_ACCESS_WRITE, 2);
    assert_int_equal(node_of(&tm, 1)->size_class, RT_TM_WIDE);
    assert_int_equal(node_of(&tm, 2)->size_class, RT_TM_WIDE);

    /* 0 or 1 hit: a wide entry not probed by a small access */
    struct hits h = census_lookup(&tm, c, big(1000, 1), RT_ACCESS_READ);
    static const uint64_t both[] = {2, 1};
    assert_ids(&h, both, 2);
    assert_in_range(c->calls, 2, 12); /* ~258: the buffer walked */

    h = census_lookup(&tm, c, big(BIG_ELEMS / 2 + 16 * 5, 1), RT_ACCESS_READ);
    static const uint64_t three[] = {2, 1, 105};
    assert_ids(&h, three, 3);

    /* an access of unknown extent may touch any byte: every write (and
     * none covers it: it is not 1's view) */
    struct simpler_tensor unknown3 = big_unknown_extent();
    unknown3.shape[0] = 3;
    h = census_lookup(&tm, c, unknown3, RT_ACCESS_READ);
    assert_int_equal(h.count, 258);
    assert_int_equal(h.id[0], 2);
    assert_int_equal(h.id[1], 1);
    assert_int_equal(h.id[2], 355);
    assert_int_equal(h.id[257], 100);
    map_close(&tm);
}

static void map_other_versions_are_found_by_every_access_to_the_buffer(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, 256, 1024);
    insert_far_fillers(&tm, 256, 100);          /* version 0, ids 100..355 */
    insert(&tm, big(10, 1), RT_ACCESS_WRITE, 1); /* version 0 */

    struct simpler_tensor e5000_v1 = big(5000, 1);
    e5000_v1.version = 1;
    struct hits h = census_lookup(&tm, c, e5000_v1, RT_ACCESS_READ);
    /* fewer: entries of the old data found by bytes only (a lost edge) */
    assert_int_equal(h.count, 257);
    assert_int_equal(h.id[0], 1);
    assert_int_equal(h.id[1], 355);
    assert_int_equal(h.id[256], 100);

    for (uint64_t i = 0; i < 256; i++) { /* new data: version 1 */
        struct simpler_tensor t = big(BIG_ELEMS / 2 + 8 + 16 * i, 1);
        t.version = 1;
        insert(&tm, t, RT_ACCESS_WRITE, 400 + i);
    }
    insert(&tm, e5000_v1, RT_ACCESS_WRITE, 2);
    /* the next element: 2 is disjoint from it, every version-0 write is not */
    struct simpler_tensor e5001_v1 = big(5001, 1);
    e5001_v1.version = 1;
    h = census_lookup(&tm, c, e5001_v1, RT_ACCESS_READ);
    assert_int_equal(h.count, 257);
    assert_int_equal(h.id[0], 1);
    assert_int_equal(h.id[256], 100);
    /* 2 covers element 5000: the cut, the old data behind it */
    h = census_lookup(&tm, c, e5000_v1, RT_ACCESS_READ);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 2);

    /* the old data's tasks retire and their entries go */
    c->retired[1] = 1;
    for (uint64_t id = 100; id < 356; id++)
        c->retired[id] = 1;
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_census, c), 257);
    h = census_lookup(&tm, c, e5000_v1, RT_ACCESS_READ);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 2);
    /* ~257: the bucket still treated as holding other versions (walked) */
    assert_in_range(c->calls, 1, 8);

    /* and an access of version 0 now finds every version-1 write */
    h = census_lookup(&tm, c, big(5000, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 257);
    assert_int_equal(h.id[0], 2);
    assert_int_equal(h.id[1], 655);
    assert_int_equal(h.id[256], 400);
    map_close(&tm);
}

static void map_versions_averaging_to_the_access_version_are_still_found(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, 256, 512);
    for (uint64_t i = 0; i < 256; i++) { /* version 1 */
        struct simpler_tensor t = big(BIG_ELEMS / 2 + 16 * i, 1);
        t.version = 1;
        insert(&tm, t, RT_ACCESS_WRITE, 100 + i);
    }
    struct simpler_tensor old = big(10, 1), newer = big(20, 1);
    newer.version = 2;
    insert(&tm, old, RT_ACCESS_WRITE, 1);   /* version 0 */
    insert(&tm, newer, RT_ACCESS_WRITE, 2); /* version 2 */
    /* the bucket's versions sum to count * 1, as if all were version 1 */
    struct simpler_tensor e5000_v1 = big(5000, 1);
    e5000_v1.version = 1;
    struct hits h = census_lookup(&tm, c, e5000_v1, RT_ACCESS_READ);
    static const uint64_t both[] = {2, 1};
    /* none: the mean alone taken for proof that every entry is version 1 */
    assert_ids(&h, both, 2);
    map_close(&tm);
}

static void map_stale_entries_in_probed_chains_are_freed_by_lookups_the_rest_by_reclaim(
    void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, 1024, 2048);
    /* element 4 i (bytes [16 i, 16 i + 3]): granule i of the 16-byte class */
    for (uint64_t i = 0; i < 1024; i++)
        insert(&tm, big(4 * i, 1), RT_ACCESS_WRITE, i + 1);
    for (uint64_t i = 0; i < 4; i++) /* rows of another buffer */
        insert(&tm, sl(mat(BUF_B, 8, 8), 0, i, i + 1, 1), RT_ACCESS_WRITE, 2000 + i);
    /* The lookups below probe granules 50 and 70 (entries 51 and 71): the
     * stale 91 must be in neither chain for the counts below to say what
     * they mean (a change of hash may move it: pick another). */
    uint32_t b91 = granule_bucket_holding(&tm, index_of(&tm, 91));
    assert_true(b91 != granule_bucket_holding(&tm, index_of(&tm, 51)) &&
                b91 != granule_bucket_holding(&tm, index_of(&tm, 71)));
    c->retired[51] = c->retired[71] = c->retired[91] = c->retired[2001] = 1;
    uint32_t free0 = rt_tensormap_free_count(&tm.map);

    struct hits h = census_lookup(&tm, c, big(200, 1), RT_ACCESS_READ); /* entry 51's */
    assert_int_equal(h.count, 0); /* 1: a retired producer reported */
    /* +0: the stale entry in a probed chain kept; +2 or more: entries the
     * lookup never reached were freed (it walked the buffer) */
    assert_int_equal(rt_tensormap_free_count(&tm.map), free0 + 1);

    h = census_lookup(&tm, c, big(280, 1), RT_ACCESS_WRITE); /* entry 71's */
    assert_int_equal(h.count, 0);
    assert_int_equal(rt_tensormap_free_count(&tm.map), free0 + 2);

    /* 91 (not probed) and 2001 (another buffer): reclaim's; 3+: a live entry */
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_census, c), 2);
    assert_int_equal(rt_tensormap_free_count(&tm.map), free0 + 4);
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_census, c), 0);

    h = census_lookup(&tm, c, big(360, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 0);
    h = census_lookup(&tm, c, big(356, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 1); /* 0: reclaim freed a live neighbour */
    assert_int_equal(h.id[0], 90);
    h = census_lookup(&tm, c, mat(BUF_B, 8, 8), RT_ACCESS_READ);
    static const uint64_t others[] = {2003, 2002, 2000};
    assert_ids(&h, others, 3);
    map_close(&tm);
}

static void map_failing_hit_mid_merge_keeps_the_rest_for_a_retry(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    open_probed_map(&tm);
    /* around the access (elements 295..305), none covering it, three classes */
    insert(&tm, big(290, 10), RT_ACCESS_WRITE, 1);  /* 290..299 */
    insert(&tm, big(301, 100), RT_ACCESS_WRITE, 2); /* 301..400 */
    insert(&tm, big(300, 1), RT_ACCESS_WRITE, 3);   /* inside the access */
    struct simpler_tensor access = big(295, 11);
    uint32_t free0 = rt_tensormap_free_count(&tm.map);

    struct hits h = {.fail_at = 2, .fail_rc = 7};
    int rc = rt_tensormap_lookup(&tm.map, &access, RT_ACCESS_READ, retired_in_census, c,
                                 record_hit, &h);
    assert_int_equal(rc, 7);      /* 0: the hit's error swallowed */
    assert_int_equal(h.count, 2); /* 3: the merge went on after the error */
    h = census_lookup(&tm, c, access, RT_ACCESS_READ);
    static const uint64_t all[] = {3, 2, 1};
    assert_ids(&h, all, 3); /* fewer: the failed lookup lost an entry */

    /* a write: 3 (covered) is reported and retired, 2 fails and stays */
    h = (struct hits){.fail_at = 2, .fail_rc = -3};
    rc = rt_tensormap_lookup(&tm.map, &access, RT_ACCESS_WRITE, retired_in_census, c,
                             record_hit, &h);
    assert_int_equal(rc, -3);
    static const uint64_t two[] = {3, 2};
    assert_ids(&h, two, 2);
    assert_int_equal(rt_tensormap_free_count(&tm.map), free0 + 1); /* +2: 2 retired */
    h = census_lookup(&tm, c, access, RT_ACCESS_WRITE);
    static const uint64_t rest[] = {2, 1};
    assert_ids(&h, rest, 2); /* missing 2: the entry whose hit failed was dropped */
    assert_int_equal(rt_tensormap_free_count(&tm.map), free0 + 1);
    map_close(&tm);
}

/* ---- map: one key for a lookup and its insert --------------------------- */

/* The stencil the host build of bench_compare's W4 submits, on a small
 * scale: STENCIL_W 64-byte cells a row, two rows in one buffer (every
 * entry on one buffer bucket); in step t, task i (id 1 + t W + i) reads
 * cells i - 1, i, i + 1 (clamped) of row t % 2 and writes cell i of the
 * other row. */
#define STENCIL_W 8
#define BUF_CELLS UINT64_C(0x300000)

static struct simpler_tensor cell(uint64_t c)
{
    return sl(vec(BUF_CELLS, 2 * STENCIL_W * 8, SIMPLER_DTYPE_U64), 0, 8 * c, 8 * c + 8, 1);
}

/* One task's accesses: views[0..2] read, views[3] written. */
static void stencil_task(uint64_t t, uint64_t i, struct simpler_tensor views[4])
{
    uint64_t cur = (t % 2) * STENCIL_W, nxt = ((t + 1) % 2) * STENCIL_W;
    views[0] = cell(cur + (i ? i - 1 : i));
    views[1] = cell(cur + i);
    views[2] = cell(cur + (i + 1 < STENCIL_W ? i + 1 : i));
    views[3] = cell(nxt + i);
}

/* Task `id`'s four lookups then four inserts, as the orchestrator makes
 * them: with keys (one rt_tensormap_key per access, as deps.c) or without
 * (each call computes what it needs). hits[j]: lookup j's. */
static void stencil_submit(struct test_map *tm, uint64_t t, uint64_t i, bool keyed,
                           struct hits hits[4])
{
    static const enum rt_access kind[4] = {RT_ACCESS_READ, RT_ACCESS_READ, RT_ACCESS_READ,
                                           RT_ACCESS_WRITE};
    uint64_t id = 1 + t * STENCIL_W + i;
    struct simpler_tensor views[4];
    struct rt_tm_key key[4];
    stencil_task(t, i, views);
    for (int j = 0; j < 4; j++) {
        hits[j] = (struct hits){0};
        int rc;
        if (keyed) {
            rt_tensormap_key(&tm->map, &views[j], NULL, &key[j]);
            rc = rt_tensormap_lookup_key(&tm->map, &views[j], &key[j], kind[j], retired_in_mask,
                                         &tm->retired, record_hit, &hits[j]);
        } else {
            rc = rt_tensormap_lookup(&tm->map, &views[j], kind[j], retired_in_mask,
                                     &tm->retired, record_hit, &hits[j]);
        }
        assert_int_equal(rc, 0);
    }
    for (int j = 0; j < 4; j++) {
        uint32_t entry = RT_TM_NIL;
        int rc = keyed ? rt_tensormap_insert_key(&tm->map, &views[j], &key[j], kind[j], id,
                                                 (void *)(uintptr_t)id, &entry)
                       : rt_tensormap_insert_entry(&tm->map, &views[j], NULL, kind[j], id,
                                                   (void *)(uintptr_t)id, &entry);
        assert_int_equal(rc, 0);
        if (keyed) /* the key names the chains the entry went on */
            assert_int_equal(granule_bucket_holding(tm, entry), key[j].granule_bucket);
    }
}

/* A key is where the map files the view: its extent, its size class (a
 * 64-byte cell: the 64-byte granules, class 2) and the buckets of its
 * granule and buffer chains, the ones rt_tensormap_insert_entry uses. */
static void map_key_names_the_chains_the_view_is_filed_on(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 64, 16);
    struct simpler_tensor c5 = cell(5);
    struct rt_tm_key key;
    rt_tensormap_key(&tm.map, &c5, NULL, &key);
    assert_int_equal(key.first_byte, 5 * 64);
    assert_int_equal(key.last_byte, 5 * 64 + 63);
    assert_int_equal(key.size_class, 2); /* 1: the cell taken for 32 bytes */
    uint32_t entry = RT_TM_NIL;
    assert_int_equal(rt_tensormap_insert_entry(&tm.map, &c5, NULL, RT_ACCESS_WRITE, 1, NULL,
                                               &entry),
                     0);
    assert_int_equal(granule_bucket_holding(&tm, entry), key.granule_bucket);
    assert_int_equal(tm.map.buckets[key.buffer_bucket].head[RT_ACCESS_WRITE], entry);
    assert_int_equal(tm.map.nodes[entry].size_class, key.size_class);

    /* an extent the map cannot place: the wide class, granule 0 */
    struct simpler_tensor odd = vec(BUF_CELLS, 2, SIMPLER_DTYPE_U32);
    odd.stride[0] = INT64_MAX;
    rt_tensormap_key(&tm.map, &odd, NULL, &key);
    assert_int_equal(key.size_class, RT_TM_WIDE);
    assert_true(key.first_byte == INT64_MIN && key.last_byte == INT64_MAX);
    assert_int_equal(rt_tensormap_insert_key(&tm.map, &odd, &key, RT_ACCESS_READ, 2, NULL,
                                             &entry),
                     0);
    assert_int_equal(granule_bucket_holding(&tm, entry), key.granule_bucket);
    map_close(&tm);
}

/* The stencil through keys (the tile path, every freed entry unlinked from
 * the buckets its lookup walked): exact producers for a task of step 2,
 * and, over 6 steps, the same hits in the same order and the same free
 * entries as the same calls without keys. */
static void map_stencil_through_keys_finds_exactly_the_producers_without_keys(void **state)
{
    (void)state;
    struct test_map keyed, plain;
    map_open(&keyed, 256, 256);
    map_open(&plain, 256, 256);
    struct hits hk[4], hp[4];
    for (uint64_t t = 0; t < 6; t++)
        for (uint64_t i = 0; i < STENCIL_W; i++) {
            stencil_submit(&keyed, t, i, true, hk);
            stencil_submit(&plain, t, i, false, hp);
            for (int j = 0; j < 4; j++)
                assert_ids(&hk[j], hp[j].id, hp[j].count); /* differ: a key changed a walk */
            assert_int_equal(rt_tensormap_free_count(&keyed.map),
                             rt_tensormap_free_count(&plain.map)); /* an entry lost or kept */
            if (t != 2 || i != 3)
                continue;
            /* task 20: reads cells 2, 3, 4 of row 0, written in step 1 by
             * tasks 11, 12, 13; writes cell 3 of row 1, written in step 0
             * by task 4 and read in step 1 by tasks 11, 12, 13 (newest
             * first, after the write that cuts the walk) */
            static const uint64_t l[] = {11}, m[] = {12}, r[] = {13}, w[] = {4, 13, 12, 11};
            assert_ids(&hk[0], l, 1);
            assert_ids(&hk[1], m, 1);
            assert_ids(&hk[2], r, 1);
            assert_ids(&hk[3], w, 4);
            assert_int_equal(hk[3].kind[0], RT_ACCESS_WRITE);
            assert_int_equal(hk[3].kind[1], RT_ACCESS_READ);
        }
    /* steady state: per cell its last write and the 3 reads since; the
     * write lookups freed everything older (more: a freed entry kept) */
    assert_int_equal(keyed.map.live, 2 * STENCIL_W + 3 * STENCIL_W);
    map_close(&keyed);
    map_close(&plain);
}

/* rt_tensormap_forget frees exactly the live entry its producer inserted
 * at that index: not an index never used since the reset, not an entry
 * freed since (by a covering write), not that index reused by another
 * producer; and a lookup afterwards no longer sees what was forgotten. */
static void map_forget_frees_only_the_producers_own_live_entry(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 64, 16);
    struct simpler_tensor a = big(0, 4), b = big(16, 4);
    uint32_t ea = RT_TM_NIL, eb = RT_TM_NIL;
    assert_int_equal(rt_tensormap_insert_entry(&tm.map, &a, NULL, RT_ACCESS_WRITE, 1, NULL, &ea),
                     0);
    assert_int_equal(rt_tensormap_insert_entry(&tm.map, &b, NULL, RT_ACCESS_READ, 2, NULL, &eb),
                     0);
    assert_int_not_equal(ea, eb); /* equal: one entry handed out twice */
    assert_false(rt_tensormap_forget(&tm.map, 15, 1)); /* never used since the reset */
    assert_false(rt_tensormap_forget(&tm.map, ea, 2)); /* another producer's entry */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 14);

    assert_true(rt_tensormap_forget(&tm.map, eb, 2));
    assert_int_equal(rt_tensormap_free_count(&tm.map), 15); /* 14: not freed */
    assert_false(rt_tensormap_forget(&tm.map, eb, 2)); /* true: freed twice */
    struct hits h = lookup(&tm, big(16, 4), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 0); /* 1: the forgotten read still ordered the write */

    /* A covering write's lookup frees a's entry; producer 4 reuses it. */
    h = lookup(&tm, big(0, 4), RT_ACCESS_WRITE, NULL);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 1);
    struct simpler_tensor c = big(64, 4);
    uint32_t e4 = RT_TM_NIL;
    assert_int_equal(rt_tensormap_insert_entry(&tm.map, &c, NULL, RT_ACCESS_WRITE, 4, NULL, &e4),
                     0);
    assert_int_equal(e4, ea); /* the free list hands out the entry freed last */
    uint32_t free_before = rt_tensormap_free_count(&tm.map);
    assert_false(rt_tensormap_forget(&tm.map, ea, 1)); /* true: 1 freed 4's entry */
    assert_int_equal(rt_tensormap_free_count(&tm.map), free_before);
    h = lookup(&tm, big(64, 4), RT_ACCESS_READ, NULL);
    assert_int_equal(h.count, 1); /* 0: producer 4's write lost */
    assert_int_equal(h.id[0], 4);
    map_close(&tm);
}

static void map_full_map_takes_inserts_again_after_reclaim(void **state)
{
    (void)state;
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, 64, 300);
    insert_far_fillers(&tm, 256, 100);
    for (uint64_t i = 0; i < 44; i++)
        insert(&tm, big(4 * i, 1), RT_ACCESS_WRITE, i + 1);
    struct simpler_tensor extra = big(4 * 50, 1);
    /* 0: an entry handed out twice, or written past the block */
    assert_int_equal(rt_tensormap_insert(&tm.map, &extra, RT_ACCESS_WRITE, 999, NULL), -1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 0);
    struct hits h = census_lookup(&tm, c, big(4 * 50, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 0); /* 1: the rejected insert was recorded anyway */
    h = census_lookup(&tm, c, big(40, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 11);

    for (uint64_t id = 1; id <= 10; id++)
        c->retired[id] = 1;
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_census, c), 10);
    for (uint64_t i = 0; i < 10; i++) {
        struct simpler_tensor t = big(4 * i, 1);
        assert_int_equal(rt_tensormap_insert(&tm.map, &t, RT_ACCESS_WRITE, 501 + i, NULL), 0);
    }
    assert_int_equal(rt_tensormap_insert(&tm.map, &extra, RT_ACCESS_WRITE, 999, NULL), -1);
    h = census_lookup(&tm, c, big(20, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 1); /* 2: the freed entry 6 still linked */
    assert_int_equal(h.id[0], 506);
    h = census_lookup(&tm, c, big(80, 1), RT_ACCESS_READ);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.id[0], 21);
    h = census_lookup(&tm, c, big(20, 1), RT_ACCESS_WRITE);
    assert_int_equal(h.count, 1);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 1); /* 0: the covered write kept */
    map_close(&tm);
}

/* ---- map: structural invariants --------------------------------------- */

/* Walks one chain (buffer chains when by_buffer, else granule chains) from
 * `head`, checking its links, order and membership; marks its entries in
 * `seen` and returns how many there are. */
static uint32_t check_chain(const struct rt_tensormap *map, uint32_t head, uint32_t kind,
                            bool by_buffer, uint8_t *seen)
{
    uint32_t n = 0, prev = RT_TM_NIL;
    for (uint32_t i = head; i != RT_TM_NIL;) {
        assert_true(i < map->fresh); /* a link into never-used or foreign memory */
        const struct rt_tm_node *e = &map->nodes[i];
        assert_int_equal(e->kind, kind);
        /* a stale back link: unlinking this entry would corrupt a neighbour */
        assert_int_equal(by_buffer ? e->buffer_prev : e->granule_prev, prev);
        if (prev != RT_TM_NIL) /* chains are newest first: the merge relies on it */
            assert_true(e->seq < map->nodes[prev].seq);
        /* the node's copies of the record's fields */
        assert_int_equal(e->addr, map->entries[i].region.addr);
        assert_int_equal(e->version, map->entries[i].region.version);
        assert_int_equal(seen[i] & (by_buffer ? 1 : 2), 0); /* on a chain twice */
        seen[i] |= by_buffer ? 1 : 2;
        n++;
        prev = i;
        i = by_buffer ? e->buffer_next : e->granule_next;
    }
    return n;
}

/* Every live entry is on exactly one buffer chain and one granule chain,
 * with consistent links and counts; every other used entry is on the free
 * list exactly once. */
static void check_map_invariants(const struct rt_tensormap *map)
{
    static uint8_t seen[MANY_IDS];
    assert_true(map->fresh <= MANY_IDS);
    memset(seen, 0, sizeof seen);
    uint32_t in_buffers = 0, in_granules = 0, by_kind[2] = {0, 0};
    uint32_t by_class[2][RT_TM_CLASSES + 1];
    memset(by_class, 0, sizeof by_class);
    for (uint32_t b = 0; b < map->bucket_count; b++) {
        const struct rt_tm_bucket *bb = &map->buckets[b];
        assert_true(bb->epoch <= map->epoch); /* else a reset would not empty it */
        if (bb->epoch != map->epoch)
            continue; /* of an older epoch: empty, whatever it holds */
        uint64_t versions = 0;
        for (uint32_t kind = 0; kind < 2; kind++) {
            uint32_t n = check_chain(map, bb->head[kind], kind, true, seen);
            assert_int_equal(n, bb->count[kind]); /* else the cost model is misled */
            in_buffers += n;
            by_kind[kind] += n;
            for (uint32_t i = bb->head[kind]; i != RT_TM_NIL; i = map->nodes[i].buffer_next) {
                const struct rt_tm_node *e = &map->nodes[i];
                by_class[kind][e->size_class]++;
                /* a class missing from the mask: its granules never probed */
                assert_true(bb->class_mask[kind] >> e->size_class & 1);
                assert_true(e->version >= bb->version_min);
                assert_true(e->version <= bb->version_max);
                versions += e->version;
            }
            in_granules += check_chain(map, bb->granule_head[kind], kind, false, seen);
        }
        assert_int_equal(versions, bb->version_sum); /* else versions_all can lie */
    }
    assert_int_equal(in_buffers, map->live);
    assert_int_equal(in_granules, map->live);
    for (uint32_t kind = 0; kind < 2; kind++) {
        assert_int_equal(by_kind[kind], map->live_by_kind[kind]);
        for (uint32_t k = 0; k <= RT_TM_CLASSES; k++) {
            assert_int_equal(by_class[kind][k], map->class_live[kind][k]);
            assert_int_equal(map->class_mask[kind] >> k & 1, by_class[kind][k] != 0);
        }
    }
    uint32_t free_entries = 0;
    for (uint32_t i = map->free_head; i != RT_TM_NIL; i = map->nodes[i].granule_next) {
        assert_true(i < map->fresh && free_entries < map->fresh); /* or the list loops */
        assert_int_equal(seen[i], 0); /* free and linked, or free twice */
        seen[i] = 4;
        free_entries++;
    }
    for (uint32_t i = 0; i < map->fresh; i++)
        assert_true(seen[i] == 3 || seen[i] == 4); /* leaked: in no chain, not free */
    assert_int_equal(free_entries + map->live, map->fresh);
}

/* ---- map: lazy reset --------------------------------------------------- */

/* Entries spread over SPREAD_BUFFERS buffers of 256 u32 elements each:
 * entry i (of a round shifted by `shift`) is elements [4 k, 4 k + 4) of
 * buffer (i + shift) % SPREAD_BUFFERS, k = i / SPREAD_BUFFERS, disjoint
 * from every other entry on its buffer; every third one a read. With 64
 * buckets they land in most buffer and granule buckets. */
#define SPREAD_BUFFERS 48
#define SPREAD_BASE UINT64_C(0x7000000)

static uint64_t spread_addr(uint32_t buffer)
{
    return SPREAD_BASE + (uint64_t)buffer * 0x1000;
}

static struct simpler_tensor spread_region(uint32_t i, uint32_t shift)
{
    uint64_t k = i / SPREAD_BUFFERS;
    return sl(vec(spread_addr((i + shift) % SPREAD_BUFFERS), 256, SIMPLER_DTYPE_U32), 0, 4 * k,
              4 * k + 4, 1);
}

static enum rt_access spread_kind(uint32_t i)
{
    return i % 3 == 0 ? RT_ACCESS_READ : RT_ACCESS_WRITE;
}

static void insert_spread(struct test_map *tm, uint32_t n, uint32_t shift, uint64_t first_id)
{
    for (uint32_t i = 0; i < n; i++)
        insert(tm, spread_region(i, shift), spread_kind(i), first_id + i);
}

/* Buckets of the map's epoch holding some entry (either kind, either
 * chain). */
static uint32_t buckets_holding_entries(const struct rt_tensormap *map)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < map->bucket_count; i++) {
        const struct rt_tm_bucket *b = &map->buckets[i];
        n += b->epoch == map->epoch &&
             (b->count[RT_ACCESS_READ] || b->count[RT_ACCESS_WRITE] ||
              b->granule_head[RT_ACCESS_READ] != RT_TM_NIL ||
              b->granule_head[RT_ACCESS_WRITE] != RT_TM_NIL);
    }
    return n;
}

/* Every region of the last insert_spread(n, shift), and every whole spread
 * buffer, is looked up (WRITE: every entry kind is reported) and must hit
 * nothing. */
static void assert_spread_empty(struct test_map *tm, uint32_t n, uint32_t shift)
{
    for (uint32_t i = 0; i < n; i++) {
        struct hits h = lookup(tm, spread_region(i, shift), RT_ACCESS_WRITE, NULL);
        assert_int_equal(h.count, 0); /* else an entry of before the reset survived it */
    }
    for (uint32_t b = 0; b < SPREAD_BUFFERS; b++) {
        struct hits h =
            lookup(tm, vec(spread_addr(b), 256, SIMPLER_DTYPE_U32), RT_ACCESS_WRITE, NULL);
        assert_int_equal(h.count, 0);
    }
}

static void map_reset_leaves_every_bucket_empty_without_writing_them(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 64, 512);
    insert_spread(&tm, 480, 0, 1);
    /* fewer: the test does not reach the buckets it means to */
    assert_true(buckets_holding_entries(&tm.map) >= 60);
    uint32_t held_before = buckets_holding_entries(&tm.map);

    rt_tensormap_reset(&tm.map);
    assert_int_equal(tm.map.epoch, 1); /* 0: the reset did not start a new epoch */
    /* The reset wrote no bucket: each still names epoch 0 and keeps its
     * counts (all 0 with counts cleared: the reset was O(buckets) again). */
    uint32_t untouched = 0;
    for (uint32_t i = 0; i < 64; i++) {
        assert_int_equal(tm.map.buckets[i].epoch, 0);
        untouched += tm.map.buckets[i].count[RT_ACCESS_WRITE] != 0;
    }
    assert_true(untouched > 0);
    assert_int_equal(buckets_holding_entries(&tm.map), 0); /* else old buckets read as live */
    assert_int_equal(rt_tensormap_free_count(&tm.map), 512); /* less: entries kept */
    assert_int_equal(tm.map.live, 0);
    check_map_invariants(&tm.map);
    tm.retired = ~UINT64_C(0);
    /* nonzero: reclaim walked chains of the old epoch and freed into them */
    assert_int_equal(rt_tensormap_reclaim(&tm.map, retired_in_mask, &tm.retired), 0);
    tm.retired = 0;
    assert_spread_empty(&tm, 480, 0);
    /* a lookup reads, never writes, an old bucket */
    assert_int_equal(buckets_holding_entries(&tm.map), 0);

    /* The map fills again to capacity: every entry is free and usable. */
    insert_spread(&tm, 512, 0, 1001);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 0);
    assert_int_equal(buckets_holding_entries(&tm.map), held_before); /* same regions, same buckets */
    check_map_invariants(&tm.map);
    map_close(&tm);
}

static void map_reused_across_resets_answers_exactly_this_rounds_entries(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 64, 512);
    const uint32_t counts[] = {480, 100, 7, 300, 512, 48};
    for (uint32_t round = 0; round < 6; round++) {
        uint32_t n = counts[round], shift = 7 * round;
        uint64_t first_id = 1000 * (uint64_t)round + 1;
        if (round > 0) {
            /* the arena's next run: the same map, the same block */
            assert_int_equal(rt_tensormap_reuse(&tm.map, tm.mem, 64, 512), 0);
            assert_int_equal(tm.map.epoch, round); /* else a reuse wrote every bucket */
        }
        insert_spread(&tm, n, shift, first_id);
        check_map_invariants(&tm.map);
        assert_int_equal(rt_tensormap_free_count(&tm.map), 512 - n);
        /* A read of a whole buffer overlaps every entry on it and is
         * covered by none: it reports exactly this round's writes there,
         * newest first. An extra hit is an entry of an earlier round; a
         * missing one, an entry lost in a bucket taken as old. */
        for (uint32_t b = 0; b < SPREAD_BUFFERS; b++) {
            uint64_t want[MAX_HITS];
            int want_n = 0;
            for (uint32_t i = n; i-- > 0;)
                if ((i + shift) % SPREAD_BUFFERS == b && spread_kind(i) == RT_ACCESS_WRITE)
                    want[want_n++] = first_id + i;
            struct hits h =
                lookup(&tm, vec(spread_addr(b), 256, SIMPLER_DTYPE_U32), RT_ACCESS_READ, NULL);
            assert_ids(&h, want, want_n);
        }
    }
    /* Another block or other sizes: not this map; nothing changes. */
    struct rt_tensormap before = tm.map;
    assert_int_equal(rt_tensormap_reuse(&tm.map, tm.mem, 32, 512), -1);
    assert_int_equal(rt_tensormap_reuse(&tm.map, tm.mem, 64, 256), -1);
    assert_int_equal(rt_tensormap_reuse(&tm.map, (char *)tm.mem + 64, 64, 512), -1);
    assert_memory_equal(&tm.map, &before, sizeof before); /* a refused reuse reset the map */
    map_close(&tm);
}

static void map_reset_at_epoch_wrap_writes_every_bucket(void **state)
{
    (void)state;
    struct test_map tm;
    map_open(&tm, 64, 512);

    /* Two resets before the wrap: buckets of UINT32_MAX - 1, then of
     * UINT32_MAX (init's epoch-0 buckets read empty below them). */
    tm.map.epoch = UINT32_MAX - 1;
    insert_spread(&tm, 300, 0, 1);
    rt_tensormap_reset(&tm.map);
    assert_int_equal(tm.map.epoch, UINT32_MAX); /* still lazy: no wrap yet */
    insert_spread(&tm, 200, 5, 1001);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 312);
    rt_tensormap_reset(&tm.map);
    /* The wrap: epoch 0 again, and every bucket written with it, empty. A
     * bucket of another epoch here: the reset only bumped the epoch. */
    assert_int_equal(tm.map.epoch, 0);
    for (uint32_t i = 0; i < 64; i++) {
        const struct rt_tm_bucket *b = &tm.map.buckets[i];
        assert_int_equal(b->epoch, 0);
        assert_int_equal(b->count[RT_ACCESS_READ] + b->count[RT_ACCESS_WRITE], 0);
        assert_int_equal(b->head[RT_ACCESS_WRITE], RT_TM_NIL);
        assert_int_equal(b->granule_head[RT_ACCESS_WRITE], RT_TM_NIL);
        assert_int_equal(b->granule_head[RT_ACCESS_READ], RT_TM_NIL);
    }
    assert_spread_empty(&tm, 200, 5);
    check_map_invariants(&tm.map);

    /* Why the wrap must write them: buckets filled in epoch 0 and
     * untouched for 2^32 - 1 resets would be of the epoch again after a
     * plain increment. Filled now (epoch 0), then the epoch is set to its
     * last value as if those resets had happened. */
    insert_spread(&tm, 480, 0, 2001);
    tm.map.epoch = UINT32_MAX;
    rt_tensormap_reset(&tm.map);
    assert_int_equal(tm.map.epoch, 0);
    /* a hit: an epoch-0 bucket of before the wrap read as live, reporting
     * entries that are free (and garbage once reused) */
    assert_spread_empty(&tm, 480, 0);
    assert_int_equal(buckets_holding_entries(&tm.map), 0);
    assert_int_equal(rt_tensormap_free_count(&tm.map), 512);
    /* and the map runs on: the next reset is lazy again */
    insert_spread(&tm, 10, 0, 3001);
    rt_tensormap_reset(&tm.map);
    assert_int_equal(tm.map.epoch, 1);
    assert_spread_empty(&tm, 10, 0);
    map_close(&tm);
}

/* ---- map: against a reference model ------------------------------------ */

/* The documented semantics, on a plain list of every insert (oldest first):
 * a lookup visits the buffer's write entries newest first up to and
 * including the newest live write covering the access, then (WRITE) its
 * read entries newer than that one. */
struct ref_entry {
    struct simpler_tensor region;
    enum rt_access kind;
    uint64_t id;
    bool live;
};

#define REF_TASKS 3000

static struct ref_entry g_ref[REF_TASKS];

static void ref_lookup(uint32_t n, const struct simpler_tensor *access, enum rt_access kind,
                       const struct census *c, struct hits *h)
{
    uint32_t cut = 0; /* entries at or below this index are behind the cut */
    bool have_cut = false;
    for (uint32_t i = n; i-- > 0;) {
        struct ref_entry *e = &g_ref[i];
        if (!e->live || e->kind != RT_ACCESS_WRITE || e->region.addr != access->addr)
            continue;
        if (c->retired[e->id]) {
            e->live = false;
            continue;
        }
        enum rt_overlap overlap = rt_region_overlap(&e->region, access);
        if (overlap == RT_OVERLAP_NONE)
            continue;
        record_hit(h, e->id, (void *)(uintptr_t)e->id, e->kind);
        bool covers = rt_region_overlap(access, &e->region) == RT_OVERLAP_COVERED;
        if (kind == RT_ACCESS_WRITE && overlap == RT_OVERLAP_COVERED)
            e->live = false;
        if (covers) {
            cut = i;
            have_cut = true;
            break;
        }
    }
    if (kind != RT_ACCESS_WRITE)
        return;
    for (uint32_t i = n; i-- > 0 && (!have_cut || i > cut);) {
        struct ref_entry *e = &g_ref[i];
        if (!e->live || e->kind != RT_ACCESS_READ || e->region.addr != access->addr)
            continue;
        if (c->retired[e->id]) {
            e->live = false;
            continue;
        }
        enum rt_overlap overlap = rt_region_overlap(&e->region, access);
        if (overlap == RT_OVERLAP_NONE)
            continue;
        record_hit(h, e->id, (void *)(uintptr_t)e->id, e->kind);
        if (overlap == RT_OVERLAP_COVERED)
            e->live = false;
    }
}

static uint32_t ref_live_unretired(uint32_t n, const struct census *c)
{
    uint32_t live = 0;
    for (uint32_t i = 0; i < n; i++)
        live += g_ref[i].live && !c->retired[g_ref[i].id];
    return live;
}

/* A random view: mostly small and medium slices of the first 16 KiB of
 * BUF_BIG (many entries, many granules), some tiles of it seen as a 64x64
 * f32 matrix, strided and transposed views, whole-buffer, unknown-extent,
 * too-wide and empty views, other buffers, and now and then version 1. */
static struct simpler_tensor random_map_view(uint64_t *rng)
{
    struct simpler_tensor t;
    uint64_t pick = rng_below(rng, 100);
    if (pick < 30) {
        uint64_t start = rng_below(rng, 4096), len = 1 + rng_below(rng, 8);
        t = big(start, len);
    } else if (pick < 45) {
        uint64_t start = rng_below(rng, 4096), len = 1 + rng_below(rng, 512);
        t = big(start, len);
    } else if (pick < 57) {
        uint64_t r0 = rng_below(rng, 64), c0 = rng_below(rng, 64);
        uint64_t r1 = r0 + 1 + rng_below(rng, 64 - r0), c1 = c0 + 1 + rng_below(rng, 64 - c0);
        t = sl(sl(mat(BUF_BIG, 64, 64), 0, r0, r1, 1), 1, c0, c1, 1);
        if (rng_below(rng, 4) == 0)
            t = tr(t);
    } else if (pick < 65) {
        uint64_t start = rng_below(rng, 4096);
        t = sl(vec(BUF_BIG, BIG_ELEMS, SIMPLER_DTYPE_U32), 0, start,
               start + 1 + rng_below(rng, 64), 2 + rng_below(rng, 3));
    } else if (pick < 67) {
        t = vec(BUF_BIG, BIG_ELEMS, SIMPLER_DTYPE_U32);
    } else if (pick < 69) {
        t = big_unknown_extent();
    } else if (pick < 71) {
        t = vec(BUF_BIG, 2, SIMPLER_DTYPE_U32);
        t.stride[0] = INT64_C(1) << 37;
    } else if (pick < 72) {
        t = big(rng_below(rng, 4096), 1);
        t.shape[0] = 0; /* empty: no byte */
    } else if (pick < 80) {
        uint64_t r0 = rng_below(rng, 8), c0 = rng_below(rng, 8);
        t = tile(r0, r0 + 1 + rng_below(rng, 8 - r0), c0, c0 + 1 + rng_below(rng, 8 - c0));
    } else if (pick < 85) {
        uint64_t start = rng_below(rng, 64);
        t = sl(vec(BUF_B, 64, SIMPLER_DTYPE_F32), 0, start, start + 1 + rng_below(rng, 64 - start),
               1);
    } else {
        t = big(rng_below(rng, 4096), 1);
    }
    if (rng_below(rng, 20) == 0)
        t.version = 1;
    return t;
}

/* One random task sequence: each task looks its access up in the map and
 * in the reference (the hits must match exactly, in order), then records
 * it; tasks retire oldest first, with some out of order. */
static void run_against_reference(uint32_t buckets, uint32_t capacity, uint64_t seed)
{
    struct test_map tm;
    struct census *c = census_clear();
    map_open(&tm, buckets, capacity);
    memset(g_ref, 0, sizeof g_ref);
    uint64_t rng = seed, oldest = 1;
    uint32_t n = 0;
    for (uint64_t id = 1; id < REF_TASKS; id++) {
        struct simpler_tensor view = random_map_view(&rng);
        enum rt_access kind = rng_below(&rng, 2) ? RT_ACCESS_WRITE : RT_ACCESS_READ;
        struct hits got = {0}, want = {0};
        assert_int_equal(rt_tensormap_lookup(&tm.map, &view, kind, retired_in_census, c,
                                             record_hit, &got),
                         0);
        ref_lookup(n, &view, kind, c, &want);
        if (got.count != want.count)
            fail_msg("seed %llu task %llu: %d hits, the reference %d (a lost or spurious edge)",
                     (unsigned long long)seed, (unsigned long long)id, got.count, want.count);
        for (int i = 0; i < got.count; i++)
            if (got.id[i] != want.id[i] || got.kind[i] != want.kind[i])
                fail_msg("seed %llu task %llu hit %d: producer %llu, the reference %llu "
                         "(hits out of order, or past the cut)",
                         (unsigned long long)seed, (unsigned long long)id, i,
                         (unsigned long long)got.id[i], (unsigned long long)want.id[i]);

        if (rt_tensormap_insert(&tm.map, &view, kind, id, (void *)(uintptr_t)id) != 0) {
            rt_tensormap_reclaim(&tm.map, retired_in_census, c);
            if (rt_tensormap_insert(&tm.map, &view, kind, id, (void *)(uintptr_t)id) != 0) {
                /* full of live entries: the reference must agree */
                assert_int_equal(ref_live_unretired(n, c), capacity);
                continue;
            }
        }
        g_ref[n++] = (struct ref_entry){view, kind, id, true};

        if (rng_below(&rng, 10) < 4 && oldest < id) /* retire in order, mostly */
            c->retired[oldest++] = 1;
        if (rng_below(&rng, 10) == 0)
            c->retired[oldest + rng_below(&rng, id - oldest + 1)] = 1;
        check_map_invariants(&tm.map); /* after every lookup and insert */
        if (id % 250 == 0) {
            rt_tensormap_reclaim(&tm.map, retired_in_census, c);
            check_map_invariants(&tm.map);
            /* else: an entry lost from the chains (leaked) or freed while live */
            assert_int_equal(rt_tensormap_free_count(&tm.map),
                             capacity - ref_live_unretired(n, c));
        }
    }
    map_close(&tm);
}

static void map_matches_the_reference_semantics_on_random_sequences(void **state)
{
    (void)state;
    /* one bucket: every chain collides; a few: granules share buckets; many;
     * a small map: it fills, and reclaim makes room */
    run_against_reference(1, 512, UINT64_C(0x9E3779B97F4A7C15));
    run_against_reference(8, 512, UINT64_C(0xD1B54A32D192ED03));
    run_against_reference(1024, 512, UINT64_C(0x8CB92BA72F3D8DD7));
    run_against_reference(64, 96, UINT64_C(0xA0761D6478BD642F));
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
        cmocka_unit_test(map_reset_leaves_every_bucket_empty_without_writing_them),
        cmocka_unit_test(map_reused_across_resets_answers_exactly_this_rounds_entries),
        cmocka_unit_test(map_reset_at_epoch_wrap_writes_every_bucket),
        cmocka_unit_test(map_small_access_among_many_disjoint_slices_hits_one_and_visits_few),
        cmocka_unit_test(map_wide_access_after_many_slices_hits_every_one_newest_first),
        cmocka_unit_test(map_entry_spanning_a_granule_boundary_is_found_from_either_side),
        cmocka_unit_test(map_mixed_size_classes_are_merged_newest_first),
        cmocka_unit_test(map_newer_covering_write_of_another_class_cuts_older_entries),
        cmocka_unit_test(map_entries_of_unknown_extent_or_too_wide_are_found_by_every_access),
        cmocka_unit_test(map_other_versions_are_found_by_every_access_to_the_buffer),
        cmocka_unit_test(map_versions_averaging_to_the_access_version_are_still_found),
        cmocka_unit_test(
            map_stale_entries_in_probed_chains_are_freed_by_lookups_the_rest_by_reclaim),
        cmocka_unit_test(map_failing_hit_mid_merge_keeps_the_rest_for_a_retry),
        cmocka_unit_test(map_forget_frees_only_the_producers_own_live_entry),
        cmocka_unit_test(map_key_names_the_chains_the_view_is_filed_on),
        cmocka_unit_test(map_stencil_through_keys_finds_exactly_the_producers_without_keys),
        cmocka_unit_test(map_full_map_takes_inserts_again_after_reclaim),
        cmocka_unit_test(map_matches_the_reference_semantics_on_random_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
