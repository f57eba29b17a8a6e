/*
 * test_view.c — common/view.c: which bytes a view touches, "inside its
 * buffer", element offsets and dense byte counts, at the edges where a
 * wrapping computation would give a wrong answer instead of refusing.
 *
 * Owns: the helper's own rules. What prepare, submit, element access and
 * the TensorMap do with its answers is tested with them
 * (test_argument_safety.c, test_program_mode.c, test_tensormap.c).
 * Touches no device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/view.h"

/* A 1-D view of `n` elements of `dtype` from `start` with `stride`, over a
 * buffer of `buffer_bytes`. */
static struct simpler_tensor view_1d(uint32_t dtype, uint64_t start, uint64_t n, int64_t stride,
                                     uint64_t buffer_bytes)
{
    struct simpler_tensor t = {0};
    t.addr = 0x10000;
    t.buffer_bytes = buffer_bytes;
    t.start_offset = start;
    t.producer_task_id = SIMPLER_TASK_ID_NONE;
    t.ndims = 1;
    t.dtype = (uint8_t)dtype;
    t.shape[0] = n;
    t.stride[0] = stride;
    return t;
}

static void extent_of_strided_views_is_their_lowest_and_highest_byte(void **state)
{
    (void)state;
    struct sp_view_extent e;
    struct simpler_tensor t = view_1d(SIMPLER_DTYPE_F32, 2, 3, 1, 64);
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OK);
    assert_int_equal(e.first_byte, 8);
    assert_int_equal(e.last_byte, 19); /* 16: the last element's other bytes are missed */

    t = view_1d(SIMPLER_DTYPE_F32, 5, 3, -2, 64); /* elements 5, 3, 1 */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OK);
    assert_int_equal(e.first_byte, 4); /* 20: a negative reach added to the high end */
    assert_int_equal(e.last_byte, 23);

    t = view_1d(SIMPLER_DTYPE_U8, 7, 1000, 0, 64); /* broadcast: one element */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OK);
    assert_int_equal(e.first_byte, 7);
    assert_int_equal(e.last_byte, 7); /* 1006: stride 0 counted as 1 */

    t = view_1d(SIMPLER_DTYPE_I16, 10, 3, 4, 64); /* 2-D: 3 rows of 4 at stride 4, reversed cols */
    t.ndims = 2;
    t.shape[1] = 4;
    t.stride[1] = -1;
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OK);
    assert_int_equal(e.first_byte, (10 - 3) * 2);
    assert_int_equal(e.last_byte, (10 + 8) * 2 + 1);
}

static void extent_says_malformed_before_empty_and_overflow(void **state)
{
    (void)state;
    struct sp_view_extent e = {-7, -7};
    struct simpler_tensor t = view_1d(SIMPLER_DTYPE_F32, 0, 4, 1, 16);
    t.ndims = 0;
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_MALFORMED);
    t.ndims = SIMPLER_TENSOR_MAX_DIMS + 1;
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_MALFORMED);
    t = view_1d(SIMPLER_DTYPE_COUNT, 0, 0, 1, 16);
    /* EMPTY: an invalid dtype hidden behind an empty dimension */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_MALFORMED);
    t = view_1d(SIMPLER_DTYPE_F32, UINT64_MAX, 0, 1, 16);
    /* OVERFLOW: an empty view's start is never used, it has no byte */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_EMPTY);
    assert_int_equal(e.first_byte, -7); /* written on failure */
    assert_int_equal(e.last_byte, -7);
}

static void extent_refuses_every_offset_that_does_not_fit_in_int64(void **state)
{
    (void)state;
    struct sp_view_extent e;
    struct simpler_tensor t = view_1d(SIMPLER_DTYPE_U8, (uint64_t)INT64_MAX, 1, 1, 16);
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OK); /* the largest start that fits */
    assert_int_equal(e.last_byte, INT64_MAX);
    t.start_offset = (uint64_t)INT64_MAX + 1;
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OVERFLOW); /* OK: read as negative */
    t = view_1d(SIMPLER_DTYPE_F32, (1ull << 61), 1, 1, 16); /* 2^63 bytes */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OVERFLOW); /* OK: the byte offset wrapped */
    t = view_1d(SIMPLER_DTYPE_U8, 0, 3, INT64_MAX, 16); /* reach 2 x (2^63 - 1) */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OVERFLOW);
    t = view_1d(SIMPLER_DTYPE_U8, 0, 2, INT64_MIN, 16);
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OK);
    assert_int_equal(e.first_byte, INT64_MIN); /* the lowest reach that fits */
    t = view_1d(SIMPLER_DTYPE_U8, 0, 3, INT64_MIN, 16);
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OVERFLOW); /* OK: 2 x INT64_MIN wrapped */
    t = view_1d(SIMPLER_DTYPE_U8, 0, (uint64_t)INT64_MAX + 2, 1, 16); /* shape - 1 > INT64_MAX */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OVERFLOW);
    t = view_1d(SIMPLER_DTYPE_U8, 1, 2, INT64_MAX, 16); /* 1 + (2^63 - 1) */
    assert_int_equal(sp_view_extent(&t, &e), SP_VIEW_OVERFLOW);
}

static void inside_means_every_byte_in_zero_to_buffer_bytes(void **state)
{
    (void)state;
    struct sp_view_extent e;
    struct simpler_tensor t = view_1d(SIMPLER_DTYPE_F32, 0, 4, 1, 16);
    assert_true(sp_view_inside(&t, &e));
    assert_int_equal(e.first_byte, 0);
    assert_int_equal(e.last_byte, 15);
    t.buffer_bytes = 15;
    assert_false(sp_view_inside(&t, NULL)); /* true: the last byte is past the buffer */
    t = view_1d(SIMPLER_DTYPE_F32, 4, 1, 1, 16); /* start = element count */
    assert_false(sp_view_inside(&t, NULL));
    t = view_1d(SIMPLER_DTYPE_F32, 0, 2, -1, 16); /* reaches element -1 */
    assert_false(sp_view_inside(&t, NULL));
    t = view_1d(SIMPLER_DTYPE_F32, 3, 4, -1, 16); /* reversed, all inside */
    assert_true(sp_view_inside(&t, NULL));
    t = view_1d(SIMPLER_DTYPE_F32, 0, 1, 1, 0);
    assert_false(sp_view_inside(&t, NULL)); /* true: an empty buffer holds an element */
    t = view_1d(SIMPLER_DTYPE_F32, (1ull << 62) - 1, 1, 1, 16); /* bytes wrap to -4 */
    assert_false(sp_view_inside(&t, NULL));
    t = view_1d(SIMPLER_DTYPE_U8, (uint64_t)INT64_MAX, 1, 1, UINT64_MAX);
    assert_true(sp_view_inside(&t, NULL)); /* the last byte that fits, in a buffer that holds it */
    t = view_1d(SIMPLER_DTYPE_F32, 0, 0, 1, 16);
    assert_false(sp_view_inside(&t, NULL)); /* true: an empty view is "inside" anything */
}

static void element_offsets_are_checked_and_exact(void **state)
{
    (void)state;
    uint64_t off = 99;
    struct simpler_tensor t = view_1d(SIMPLER_DTYPE_F32, 3, 4, -1, 16);
    uint64_t index = 3;
    assert_int_equal(sp_view_element_offset(&t, &index, &off), 0);
    assert_int_equal(off, 0); /* 6: the stride's sign was lost */
    index = 4;
    assert_int_equal(sp_view_element_offset(&t, &index, &off), -1); /* past the dimension */
    t = view_1d(SIMPLER_DTYPE_F32, 0, 4, -1, 16);
    index = 1;
    assert_int_equal(sp_view_element_offset(&t, &index, &off), -1); /* 0: element -1 */
    t = view_1d(SIMPLER_DTYPE_F32, 1, 3, INT64_MAX, 16);
    index = 1;
    assert_int_equal(sp_view_element_offset(&t, &index, &off), -1); /* 0: 1 + INT64_MAX wrapped */
    t = view_1d(SIMPLER_DTYPE_F32, 1, 4, 2, 16);
    t.ndims = 2;
    t.shape[1] = 2;
    t.stride[1] = 1;
    uint64_t ij[2] = {3, 1};
    assert_int_equal(sp_view_element_offset(&t, ij, &off), 0);
    assert_int_equal(off, 1 + 6 + 1);
    assert_int_equal(off, simpler_tensor_offset_of(&t, ij)); /* other: two formulas disagree */
}

static void numel_and_dense_bytes_refuse_what_does_not_fit(void **state)
{
    (void)state;
    uint64_t n = 0;
    struct simpler_tensor t = view_1d(SIMPLER_DTYPE_U8, 0, 1ull << 40, 1, 16);
    t.ndims = 2;
    t.shape[1] = 1ull << 24;
    assert_false(sp_view_numel(&t, &n)); /* true: 2^64 elements wrapped to 0 */
    t.shape[1] = 1ull << 23;
    assert_true(sp_view_numel(&t, &n));
    assert_int_equal(n, 1ull << 63);

    uint64_t bytes = 7;
    const uint64_t issue[2] = {1ull << 40, 1ull << 24};
    /* true: the issue's output of 2^64 bytes sized as 0 */
    assert_false(sp_dense_bytes(issue, 2, SIMPLER_DTYPE_U8, 64, &bytes));
    assert_int_equal(bytes, 7); /* written on failure */
    const uint64_t big[1] = {1ull << 62};
    assert_false(sp_dense_bytes(big, 1, SIMPLER_DTYPE_F32, 1, &bytes)); /* 2^64 bytes */
    const uint64_t top[1] = {UINT64_MAX - 62};
    assert_false(sp_dense_bytes(top, 1, SIMPLER_DTYPE_U8, 64, &bytes)); /* the rounding wraps */
    const uint64_t shape[2] = {3, 5};
    assert_true(sp_dense_bytes(shape, 2, SIMPLER_DTYPE_F16, 64, &bytes));
    assert_int_equal(bytes, 64); /* 30: not rounded up to the alignment */
    assert_true(sp_dense_bytes(shape, 2, SIMPLER_DTYPE_F16, 1, &bytes));
    assert_int_equal(bytes, 30);
    assert_false(sp_dense_bytes(shape, 2, SIMPLER_DTYPE_F16, 48, &bytes)); /* no power of two */
    assert_false(sp_dense_bytes(shape, 0, SIMPLER_DTYPE_F16, 1, &bytes));
    assert_false(sp_dense_bytes(shape, 2, SIMPLER_DTYPE_COUNT, 1, &bytes));
    const uint64_t zero[2] = {3, 0};
    assert_false(sp_dense_bytes(zero, 2, SIMPLER_DTYPE_F16, 1, &bytes)); /* a zero dimension */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(extent_of_strided_views_is_their_lowest_and_highest_byte),
        cmocka_unit_test(extent_says_malformed_before_empty_and_overflow),
        cmocka_unit_test(extent_refuses_every_offset_that_does_not_fit_in_int64),
        cmocka_unit_test(inside_means_every_byte_in_zero_to_buffer_bytes),
        cmocka_unit_test(element_offsets_are_checked_and_exact),
        cmocka_unit_test(numel_and_dense_bytes_refuse_what_does_not_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
