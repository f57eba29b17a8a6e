/*
 * packet_seeds.c — writes a seed corpus for fuzz_packet: packets made by
 * sp_packet_encode, so the fuzzer starts from headers the decoder accepts
 * and descriptors check_args judges, instead of having to find the mode,
 * the size rule and a device view by chance.
 *
 * Usage: packet_seeds DIR — writes DIR/seed-N.bin; exits nonzero on any
 * encode or I/O failure. Seeds 0-2 match fuzz_packet.h's signature and are
 * accepted whole (1-D views; 2-D strided and reversed views of other
 * dtypes; views that end at their buffer's last byte); 3 matches it but
 * names a host tensor; 4 has no arguments; 5 is the largest packet.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_packet.h"
#include "fuzz_seed.h"

static _Alignas(8) unsigned char packet[SP_PACKET_MAX_BYTES];

/* Encodes the tensors and scalars into DIR/seed-<n>.bin. */
static void emit(const char *dir, int n, const struct simpler_tensor *tensors,
                 uint32_t tensor_count, const uint64_t *scalars, uint32_t scalar_count)
{
    struct simpler_args args = {tensor_count, scalar_count, tensors, scalars};
    size_t bytes;
    int rc = sp_packet_encode(packet, sizeof packet, 5 + n, 0x100 + (uint64_t)n, 0x200 + (uint64_t)n,
                              &args, &bytes);
    if (rc != 0) {
        fprintf(stderr, "packet_seeds: seed %d: encode: %d\n", n, rc);
        exit(1);
    }
    fuzz_seed_write(dir, n, packet, bytes);
}

static struct simpler_tensor device_1d(uint64_t addr, uint64_t n, uint32_t dtype)
{
    struct simpler_tensor t;
    if (simpler_tensor_make_1d(&t, addr, n, dtype, SIMPLER_MEM_DEVICE) != 0)
        exit(1);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    uint64_t scalars[SIMPLER_ORCH_MAX_SCALARS];
    for (uint32_t i = 0; i < SIMPLER_ORCH_MAX_SCALARS; i++)
        scalars[i] = UINT64_C(0x9e3779b97f4a7c15) * i;

    struct simpler_tensor t[SIMPLER_ORCH_MAX_TENSORS];
    t[0] = device_1d(0x10000, 16, SIMPLER_DTYPE_F32);
    t[1] = device_1d(0x20000, 32, SIMPLER_DTYPE_F16);
    t[2] = device_1d(0x30000, 8, SIMPLER_DTYPE_I64);
    emit(dir, 0, t, FUZZ_PACKET_TENSORS, scalars, FUZZ_PACKET_SCALARS);

    /* A 4x8 matrix transposed, its rows reversed, and a column of it. */
    const uint64_t shape[2] = {4, 8};
    if (simpler_tensor_make(&t[0], 0x40000, shape, 2, SIMPLER_DTYPE_BF16, SIMPLER_MEM_DEVICE) ||
        simpler_tensor_transpose(&t[0], &t[0], 0, 1) ||
        simpler_tensor_make(&t[1], 0x50000, shape, 2, SIMPLER_DTYPE_U8, SIMPLER_MEM_DEVICE) ||
        simpler_tensor_slice(&t[2], &t[1], 1, 3, 4, 1))
        return 1;
    t[1].start_offset = 3 * 8;
    t[1].stride[0] = -8;
    emit(dir, 1, t, FUZZ_PACKET_TENSORS, scalars, FUZZ_PACKET_SCALARS);

    /* Views that end exactly at their buffer's last byte. */
    for (int i = 0; i < 3; i++) {
        t[i] = device_1d(0x60000 + 0x1000 * (uint64_t)i, 4, SIMPLER_DTYPE_U32);
        t[i].start_offset = 2;
        t[i].shape[0] = 2;
    }
    emit(dir, 2, t, FUZZ_PACKET_TENSORS, scalars, FUZZ_PACKET_SCALARS);

    t[1].address_space = SIMPLER_MEM_HOST;
    emit(dir, 3, t, FUZZ_PACKET_TENSORS, scalars, FUZZ_PACKET_SCALARS);

    emit(dir, 4, NULL, 0, NULL, 0);

    for (uint32_t i = 0; i < SIMPLER_ORCH_MAX_TENSORS; i++)
        t[i] = device_1d(0x100000 + 0x1000 * (uint64_t)i, 1 + i, i % SIMPLER_DTYPE_COUNT);
    emit(dir, 5, t, SIMPLER_ORCH_MAX_TENSORS, scalars, SIMPLER_ORCH_MAX_SCALARS);
    return 0;
}
