/*
 * test_directory.c — rank 0's directory of valid copies
 * (cluster/directory.c, docs/cluster.md section 9): buffer ids, range sets
 * that merge and split exactly, a write that makes every other rank's copy
 * stale, a forgotten rank, and the rule that a shortage of memory makes
 * the directory forget (a range it calls valid always is), never invent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster/directory.h"
#include "common/host_alloc.h"
#include "simpler/status.h"

static struct cl_directory *open_dir(int ranks)
{
    struct cl_directory *d = NULL;
    assert_int_equal(cl_dir_create(ranks, &d), 0);
    return d;
}

static void ids_name_buffers_in_order_of_first_use(void **state)
{
    (void)state;
    struct cl_directory *d = open_dir(3);
    uint32_t id;
    const uint64_t bases[4] = {0x5000, 0x1000, 0x9000, 0x3000};
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(cl_dir_buffer_id(d, bases[i], 0x100, &id), 0);
        assert_int_equal(id, i); /* another id: two names for one buffer */
    }
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(cl_dir_buffer_id(d, bases[i], 0x100, &id), 0);
        assert_int_equal(id, i);
        assert_true(cl_dir_find(d, bases[i], &id));
        assert_int_equal(id, i);
    }
    assert_false(cl_dir_find(d, 0x2000, &id)); /* never named */
    cl_dir_destroy(d);
}

static void ranges_merge_and_split_exactly(void **state)
{
    (void)state;
    struct cl_directory *d = open_dir(3);
    uint32_t id;
    assert_int_equal(cl_dir_buffer_id(d, 0x1000, 1000, &id), 0);
    cl_dir_mark(d, id, 1, 0, 100);
    assert_true(cl_dir_valid(d, id, 1, 0, 100));
    assert_true(cl_dir_valid(d, id, 1, 10, 20));
    assert_false(cl_dir_valid(d, id, 1, 90, 110)); /* past what it holds */
    assert_false(cl_dir_valid(d, id, 2, 10, 20));  /* another rank's */
    assert_false(cl_dir_valid(d, id, 0, 10, 20));  /* rank 0 is home: not tracked */
    assert_false(cl_dir_valid(d, id, 1, 20, 20));  /* an empty range */

    cl_dir_mark(d, id, 1, 100, 200); /* adjacent: one range [0, 200) */
    assert_true(cl_dir_valid(d, id, 1, 50, 150));
    cl_dir_mark(d, id, 1, 300, 400);
    assert_false(cl_dir_valid(d, id, 1, 150, 350)); /* the gap [200, 300) */
    cl_dir_mark(d, id, 1, 150, 320);                /* fills it: [0, 400) */
    assert_true(cl_dir_valid(d, id, 1, 0, 400));

    cl_dir_invalidate(d, id, 1, 50, 60); /* [0, 50) and [60, 400) */
    assert_true(cl_dir_valid(d, id, 1, 0, 50));
    assert_false(cl_dir_valid(d, id, 1, 40, 70));
    assert_false(cl_dir_valid(d, id, 1, 55, 56));
    assert_true(cl_dir_valid(d, id, 1, 60, 400));
    cl_dir_invalidate(d, id, 1, 0, 70); /* [70, 400) */
    assert_false(cl_dir_valid(d, id, 1, 0, 10));
    assert_false(cl_dir_valid(d, id, 1, 65, 75));
    assert_true(cl_dir_valid(d, id, 1, 70, 400));
    cl_dir_invalidate(d, id, 1, 390, 1000); /* [70, 390) */
    assert_false(cl_dir_valid(d, id, 1, 380, 395));
    assert_true(cl_dir_valid(d, id, 1, 70, 390));
    cl_dir_invalidate(d, id, 1, 0, 1000);
    assert_false(cl_dir_valid(d, id, 1, 100, 101));
    cl_dir_destroy(d);
}

static void a_write_makes_every_other_copy_stale(void **state)
{
    (void)state;
    struct cl_directory *d = open_dir(4);
    uint32_t id;
    assert_int_equal(cl_dir_buffer_id(d, 0x1000, 256, &id), 0);
    for (int r = 1; r < 4; r++)
        cl_dir_mark(d, id, r, 0, 256);
    cl_dir_written(d, id, 2, 64, 128); /* rank 2 wrote [64, 128) */
    assert_true(cl_dir_valid(d, id, 2, 0, 256)); /* the writer's copy is the new one */
    assert_false(cl_dir_valid(d, id, 1, 64, 65));
    assert_false(cl_dir_valid(d, id, 3, 127, 128));
    assert_true(cl_dir_valid(d, id, 1, 0, 64));
    assert_true(cl_dir_valid(d, id, 3, 128, 256));
    cl_dir_written(d, id, 0, 0, 256); /* rank 0 wrote it all */
    for (int r = 1; r < 4; r++)
        assert_false(cl_dir_valid(d, id, r, 0, 1));
    cl_dir_destroy(d);
}

static void a_forgotten_rank_holds_nothing_and_moves_its_epoch(void **state)
{
    (void)state;
    struct cl_directory *d = open_dir(3);
    uint32_t a, b;
    assert_int_equal(cl_dir_buffer_id(d, 0x1000, 64, &a), 0);
    assert_int_equal(cl_dir_buffer_id(d, 0x2000, 64, &b), 0);
    cl_dir_mark(d, a, 1, 0, 64);
    cl_dir_mark(d, b, 1, 0, 64);
    cl_dir_mark(d, a, 2, 0, 64);
    assert_int_equal(cl_dir_epoch(d, 1), 0);
    cl_dir_forget_rank(d, 1);
    assert_int_equal(cl_dir_epoch(d, 1), 1); /* requests packed before are told */
    assert_int_equal(cl_dir_epoch(d, 2), 0);
    assert_false(cl_dir_valid(d, a, 1, 0, 64));
    assert_false(cl_dir_valid(d, b, 1, 0, 64));
    assert_true(cl_dir_valid(d, a, 2, 0, 64));
    cl_dir_destroy(d);
}

/* Without memory a mark is dropped and a split drops the whole range:
 * what it then calls valid still is. */
static void a_shortage_forgets_and_never_invents(void **state)
{
    (void)state;
    struct cl_directory *d = open_dir(2);
    uint32_t id;
    sp_host_fault_inject(1);
    assert_int_equal(cl_dir_buffer_id(d, 0x1000, 1000, &id), PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    sp_host_fault_inject(0);
    assert_false(cl_dir_find(d, 0x1000, &id)); /* nothing half-made */
    assert_int_equal(cl_dir_buffer_id(d, 0x1000, 1000, &id), 0);
    assert_int_equal(id, 0);

    sp_host_fault_inject(1);
    cl_dir_mark(d, id, 1, 0, 100); /* its set's first room: dropped */
    sp_host_fault_inject(0);
    assert_false(cl_dir_valid(d, id, 1, 0, 100));
    cl_dir_mark(d, id, 1, 0, 100);
    cl_dir_mark(d, id, 1, 200, 300);
    cl_dir_mark(d, id, 1, 400, 500);
    cl_dir_mark(d, id, 1, 600, 700); /* four ranges: the set's room is full */
    sp_host_fault_inject(1);
    cl_dir_invalidate(d, id, 1, 40, 60); /* a split with no room: [0, 100) goes */
    sp_host_fault_inject(0);
    assert_false(cl_dir_valid(d, id, 1, 0, 10));
    assert_false(cl_dir_valid(d, id, 1, 80, 100));
    assert_true(cl_dir_valid(d, id, 1, 200, 300)); /* the others stay */
    assert_true(cl_dir_valid(d, id, 1, 600, 700));
    sp_host_fault_inject(1);
    assert_int_equal(cl_dir_create(2, &d), PTO_RUNTIME_ERR_OUT_OF_HOST_MEMORY);
    sp_host_fault_inject(0);
    cl_dir_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_name_buffers_in_order_of_first_use),
        cmocka_unit_test(ranges_merge_and_split_exactly),
        cmocka_unit_test(a_write_makes_every_other_copy_stale),
        cmocka_unit_test(a_forgotten_rank_holds_nothing_and_moves_its_epoch),
        cmocka_unit_test(a_shortage_forgets_and_never_invents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
