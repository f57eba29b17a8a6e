/*
 * common/version.c — the library's version (simpler_version).
 *
 * Owns: nothing but the string; the numbers come from the generated
 * simpler/version.h.
 */
#include "simpler/simpler.h"
#include "simpler/version.h"

const char *simpler_version(void)
{
    return SIMPLER_VERSION_STRING;
}
