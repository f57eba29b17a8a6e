/*
 * test_version.c — simpler_version and the generated simpler/version.h.
 *
 * Owns: the agreement of the version's three forms (the macros, the
 * string macro, the library's string). Touches no device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "simpler/simpler.h"
#include "simpler/version.h"

static void version_string_is_major_minor_patch_of_the_macros(void **state)
{
    (void)state;
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", SIMPLER_VERSION_MAJOR, SIMPLER_VERSION_MINOR,
             SIMPLER_VERSION_PATCH);
    /* a mismatch: version.h.in spells the numbers from different variables */
    assert_string_equal(SIMPLER_VERSION_STRING, expected);
}

static void simpler_version_returns_the_version_the_library_was_built_with(void **state)
{
    (void)state;
    const char *version = simpler_version();
    assert_non_null(version);
    /* a mismatch: the library was built from another version.h than this test */
    assert_string_equal(version, SIMPLER_VERSION_STRING);
    assert_ptr_equal(simpler_version(), version); /* static storage, not a fresh copy */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_string_is_major_minor_patch_of_the_macros),
        cmocka_unit_test(simpler_version_returns_the_version_the_library_was_built_with),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
