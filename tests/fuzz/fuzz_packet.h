/*
 * fuzz_packet.h — the callable signature fuzz_packet.c checks every packet's
 * arguments against, shared with packet_seeds.c so that seeds match it.
 *
 * Owns: nothing but that signature: IN, SCALAR, OUT, INOUT, SCALAR (three
 * tensors, two scalars). Header-only.
 */
#ifndef SIMPLER_FUZZ_PACKET_H
#define SIMPLER_FUZZ_PACKET_H

#include <stdint.h>

#include "common/packet.h"
#include "simpler/simpler.h"
#include "simpler/callable.h"

#define FUZZ_PACKET_TENSORS 3u
#define FUZZ_PACKET_SCALARS 2u

static const uint8_t fuzz_packet_dirs[] = {SIMPLER_DIR_IN, SIMPLER_DIR_SCALAR, SIMPLER_DIR_OUT,
                                           SIMPLER_DIR_INOUT, SIMPLER_DIR_SCALAR};
static const struct sp_packet_signature fuzz_packet_sig = {
    sizeof fuzz_packet_dirs, fuzz_packet_dirs};

#endif /* SIMPLER_FUZZ_PACKET_H */
