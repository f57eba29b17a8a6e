/*
 * dist_chol.c — the distributed Cholesky benchmark's shared parts
 * (dist_chol.h): parameters, placement, the order of the tile operations,
 * the one-process reference and the comparisons. No MPI here.
 */
#include "dist_chol.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int dc_parse(int argc, char **argv, struct dc_params *p)
{
    *p = (struct dc_params){.n = 4096, .tile = 256, .reps = 1, .check = 0, .warmup = 1};
    for (int i = 1; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        uint32_t v;
        if (!eq || parse_u32(eq + 1, &v) != 0) {
            fprintf(stderr, "%s: bad argument '%s' (key=unsigned integer)\n", argv[0], argv[i]);
            return -1;
        }
        size_t kl = (size_t)(eq - argv[i]);
#define KEY(name) (kl == strlen(name) && strncmp(argv[i], name, kl) == 0)
        if (KEY("n"))
            p->n = v;
        else if (KEY("tile"))
            p->tile = v;
        else if (KEY("reps") && v >= 1 && v <= DC_MAX_REPS)
            p->reps = v;
        else if (KEY("check"))
            p->check = v != 0;
        else if (KEY("warmup"))
            p->warmup = v != 0;
        else {
            fprintf(stderr, "%s: unknown or out-of-range key in '%s'\n", argv[0], argv[i]);
            return -1;
        }
#undef KEY
    }
    if (p->tile == 0 || p->n == 0 || p->n % p->tile != 0 || p->n > 65536 ||
        p->n / p->tile < 2) {
        fprintf(stderr, "%s: n must be a multiple of tile, at least 2 tiles, at most 65536\n",
                argv[0]);
        return -1;
    }
    return 0;
}

uint32_t dc_warmup_n(const struct dc_params *p)
{
    uint32_t n = p->n / 4 / p->tile * p->tile;
    return n >= 2 * p->tile ? n : 2 * p->tile;
}

int dc_owner(uint32_t i, uint32_t j, int ranks)
{
    uint32_t pr = 1;
    for (uint32_t d = 1; d * d <= (uint32_t)ranks; d++)
        if ((uint32_t)ranks % d == 0)
            pr = d;
    uint32_t pc = (uint32_t)ranks / pr;
    return (int)((i % pr) * pc + j % pc);
}

int dc_walk(uint32_t nt, dc_op_fn fn, void *user)
{
    int rc = 0;
    for (uint32_t k = 0; k < nt && !rc; k++) {
        const uint32_t potrf[1][2] = {{k, k}};
        rc = fn(user, DC_POTRF, potrf);
        for (uint32_t i = k + 1; i < nt && !rc; i++) {
            const uint32_t trsm[2][2] = {{k, k}, {i, k}};
            rc = fn(user, DC_TRSM, trsm);
        }
        for (uint32_t i = k + 1; i < nt && !rc; i++) {
            const uint32_t syrk[2][2] = {{i, k}, {i, i}};
            rc = fn(user, DC_SYRK, syrk);
            for (uint32_t j = k + 1; j < i && !rc; j++) {
                const uint32_t gemm[3][2] = {{i, k}, {j, k}, {i, j}};
                rc = fn(user, DC_GEMM, gemm);
            }
        }
    }
    return rc;
}

uint64_t dc_task_count(uint32_t nt)
{
    uint64_t t = nt;
    return t + t * (t - 1) + t * (t - 1) * (t - 2) / 6;
}

struct reference {
    double *a;
    uint32_t nt, tile;
};

static int reference_op(void *user, enum dc_op op, const uint32_t (*ij)[2])
{
    struct reference *r = user;
    double *t[3];
    for (uint32_t k = 0; k < dc_op_tiles(op); k++)
        t[k] = cmp_tile_at(r->a, r->nt, r->tile, ij[k][0], ij[k][1]);
    switch (op) {
    case DC_POTRF:
        return cmp_k_potrf(r->tile, t[0]);
    case DC_TRSM:
        cmp_k_trsm(r->tile, t[0], t[1]);
        return 0;
    case DC_SYRK:
        cmp_k_syrk(r->tile, t[0], t[1]);
        return 0;
    default:
        cmp_k_gemm_nt(r->tile, t[0], t[1], t[2]);
        return 0;
    }
}

int dc_reference(double *a, uint32_t n, uint32_t tile)
{
    struct reference r = {a, n / tile, tile};
    return dc_walk(r.nt, reference_op, &r);
}

uint64_t dc_lower_diff(const double *got, const double *want, uint32_t n, uint32_t tile)
{
    uint32_t nt = n / tile;
    size_t elems = (size_t)tile * tile;
    uint64_t differ = 0;
    for (uint32_t i = 0; i < nt; i++)
        for (uint32_t j = 0; j <= i; j++) {
            size_t at = ((size_t)i * nt + j) * elems;
            for (size_t e = 0; e < elems; e++)
                differ += memcmp(&got[at + e], &want[at + e], sizeof(double)) != 0;
        }
    return differ;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double dc_median(double *v, uint32_t count)
{
    qsort(v, count, sizeof *v, cmp_double);
    return count % 2 ? v[count / 2] : (v[count / 2 - 1] + v[count / 2]) / 2;
}

int dc_bind_rank_cpu(const char *rank_env)
{
    const char *s = getenv(rank_env), *bind = getenv("DIST_BIND");
    uint32_t rank;
    if (!bind || strcmp(bind, "1") != 0)
        return -1;
    cpu_set_t allowed, one;
    if (!s || parse_u32(s, &rank) != 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -1;
    int count = CPU_COUNT(&allowed);
    if (count < 1)
        return -1;
    int want = (int)(rank % (uint32_t)count), seen = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        if (seen++ == want) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0 ? cpu : -1;
        }
    }
    return -1;
}
