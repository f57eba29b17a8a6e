/*
 * fake_simpler.c — a library that calls itself libsimpler but is of another
 * major version: the package must refuse to load it with an ImportError.
 */
const char *simpler_version(void);

const char *simpler_version(void)
{
    return "99.0.0";
}
