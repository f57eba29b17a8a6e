/*
 * simpler/tensor.h — the tensor descriptor and its zero-copy views.
 *
 * Owns: struct simpler_tensor (a fixed 128-byte, trivially copyable
 * descriptor of a strided region of one buffer), the dtypes, and the view
 * operations (slice with step, reshape, transpose). Everything here is
 * header-only and allocation-free, because orchestration and kernel code
 * link against nothing. A view never copies data: it is a new descriptor
 * over the same buffer.
 *
 * Units: `start_offset`, `shape` and `stride` count elements of `dtype`;
 * `buffer_bytes` counts bytes. Element (i0, .., in-1) lives at byte
 * addr + (start_offset + sum(ik * stride[k])) * dtype size.
 */
#ifndef SIMPLER_TENSOR_H
#define SIMPLER_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMPLER_TENSOR_MAX_DIMS 5

/* No producing task: the tensor is external (a run argument or memory the
 * caller owns). */
#define SIMPLER_TASK_ID_NONE UINT64_MAX

enum simpler_dtype {
    SIMPLER_DTYPE_F32 = 0,
    SIMPLER_DTYPE_F16,
    SIMPLER_DTYPE_BF16,
    SIMPLER_DTYPE_F64,
    SIMPLER_DTYPE_I8,
    SIMPLER_DTYPE_I16,
    SIMPLER_DTYPE_I32,
    SIMPLER_DTYPE_I64,
    SIMPLER_DTYPE_U8,
    SIMPLER_DTYPE_U16,
    SIMPLER_DTYPE_U32,
    SIMPLER_DTYPE_U64,
    SIMPLER_DTYPE_COUNT
};

/* Where the buffer lives: HOST tensors are staged by the program-mode host
 * runtime; DEVICE tensors are caller-owned device memory, passed through. */
enum simpler_address_space { SIMPLER_MEM_HOST = 0, SIMPLER_MEM_DEVICE = 1 };

/* Tensor flags. */
#define SIMPLER_TENSOR_MANUAL_DEP 0x1u /* never looked up in or recorded into the TensorMap */

struct simpler_tensor {
    uint64_t addr;             /* buffer base address */
    uint64_t buffer_bytes;     /* size of the whole buffer */
    uint64_t start_offset;     /* first element of the view, in elements */
    uint64_t producer_task_id; /* task that allocated this buffer, or SIMPLER_TASK_ID_NONE */
    uint32_t version;          /* bumped by the owner when a buffer is reused for new data */
    uint8_t ndims;             /* 1..SIMPLER_TENSOR_MAX_DIMS */
    uint8_t dtype;             /* enum simpler_dtype */
    uint8_t address_space;     /* enum simpler_address_space */
    uint8_t flags;             /* SIMPLER_TENSOR_* */
    uint64_t shape[SIMPLER_TENSOR_MAX_DIMS];
    int64_t stride[SIMPLER_TENSOR_MAX_DIMS];
    uint64_t reserved;         /* zero */
};

#ifdef __cplusplus
static_assert(sizeof(struct simpler_tensor) == 128, "descriptor is two cache lines");
#else
_Static_assert(sizeof(struct simpler_tensor) == 128, "descriptor is two cache lines");
#endif

/* Bytes per element of `dtype`; 0 for an invalid dtype. */
static inline size_t simpler_dtype_size(uint32_t dtype)
{
    static const unsigned char sizes[SIMPLER_DTYPE_COUNT] = {4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8};
    return dtype < SIMPLER_DTYPE_COUNT ? sizes[dtype] : 0;
}

/* Number of elements the view covers (product of its shape). */
static inline uint64_t simpler_tensor_numel(const struct simpler_tensor *t)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < t->ndims && i < SIMPLER_TENSOR_MAX_DIMS; i++)
        n *= t->shape[i];
    return n;
}

/* True when the view's elements are densely packed in row-major order. */
static inline bool simpler_tensor_is_contiguous(const struct simpler_tensor *t)
{
    int64_t expect = 1;
    for (int i = (int)t->ndims - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != expect)
            return false;
        expect *= (int64_t)t->shape[i];
    }
    return true;
}

/*
 * Makes a contiguous row-major descriptor of a whole buffer at `addr` with
 * `ndims` dims of `shape`. Returns 0, or -1 (and leaves *out alone) for an
 * ndims outside 1..5, an invalid dtype, a zero dim or an element count whose
 * byte size overflows.
 */
static inline int simpler_tensor_make(struct simpler_tensor *out, uint64_t addr,
                                      const uint64_t *shape, uint32_t ndims, uint32_t dtype,
                                      uint32_t address_space)
{
    size_t es = simpler_dtype_size(dtype);
    if (!out || !shape || ndims < 1 || ndims > SIMPLER_TENSOR_MAX_DIMS || es == 0 ||
        address_space > SIMPLER_MEM_DEVICE)
        return -1;
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndims; i++) {
        if (shape[i] == 0 || n > UINT64_MAX / shape[i])
            return -1;
        n *= shape[i];
    }
    if (n > UINT64_MAX / es)
        return -1;
    struct simpler_tensor t = {0};
    t.addr = addr;
    t.buffer_bytes = n * es;
    t.producer_task_id = SIMPLER_TASK_ID_NONE;
    t.ndims = (uint8_t)ndims;
    t.dtype = (uint8_t)dtype;
    t.address_space = (uint8_t)address_space;
    int64_t stride = 1;
    for (int i = (int)ndims - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.stride[i] = stride;
        stride *= (int64_t)shape[i];
    }
    *out = t;
    return 0;
}

/* 1-D convenience form of simpler_tensor_make. */
static inline int simpler_tensor_make_1d(struct simpler_tensor *out, uint64_t addr,
                                         uint64_t count, uint32_t dtype, uint32_t address_space)
{
    return simpler_tensor_make(out, addr, &count, 1, dtype, address_space);
}

/*
 * View of elements start, start+step, ... (< stop) along `dim`.
 * Returns 0, or -1 for dim out of range, step 0, or an empty or
 * out-of-bounds range (start >= stop or stop > shape[dim]).
 */
static inline int simpler_tensor_slice(struct simpler_tensor *out, const struct simpler_tensor *t,
                                       uint32_t dim, uint64_t start, uint64_t stop, uint64_t step)
{
    if (!out || !t || dim >= t->ndims || step == 0 || start >= stop || stop > t->shape[dim])
        return -1;
    struct simpler_tensor v = *t;
    v.start_offset = t->start_offset + start * (uint64_t)t->stride[dim];
    v.shape[dim] = (stop - start + step - 1) / step;
    v.stride[dim] = t->stride[dim] * (int64_t)step;
    *out = v;
    return 0;
}

/* Swaps dims `a` and `b`. Returns 0, or -1 for a dim out of range. */
static inline int simpler_tensor_transpose(struct simpler_tensor *out,
                                           const struct simpler_tensor *t, uint32_t a, uint32_t b)
{
    if (!out || !t || a >= t->ndims || b >= t->ndims)
        return -1;
    struct simpler_tensor v = *t;
    v.shape[a] = t->shape[b];
    v.shape[b] = t->shape[a];
    v.stride[a] = t->stride[b];
    v.stride[b] = t->stride[a];
    *out = v;
    return 0;
}

/*
 * Row-major reshape of a contiguous view to `ndims` dims of `shape`.
 * Returns 0, or -1 when the view is not contiguous, ndims is out of range,
 * or the element counts differ.
 */
static inline int simpler_tensor_reshape(struct simpler_tensor *out,
                                         const struct simpler_tensor *t, const uint64_t *shape,
                                         uint32_t ndims)
{
    if (!out || !t || !shape || ndims < 1 || ndims > SIMPLER_TENSOR_MAX_DIMS ||
        !simpler_tensor_is_contiguous(t))
        return -1;
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndims; i++) {
        if (shape[i] == 0)
            return -1;
        n *= shape[i];
    }
    if (n != simpler_tensor_numel(t))
        return -1;
    struct simpler_tensor v = *t;
    v.ndims = (uint8_t)ndims;
    int64_t stride = 1;
    for (int i = SIMPLER_TENSOR_MAX_DIMS - 1; i >= 0; i--) {
        v.shape[i] = (uint32_t)i < ndims ? shape[i] : 0;
        v.stride[i] = (uint32_t)i < ndims ? stride : 0;
        if ((uint32_t)i < ndims)
            stride *= (int64_t)shape[i];
    }
    *out = v;
    return 0;
}

/* Address of the view's first element (device code only dereferences it). */
static inline void *simpler_tensor_data(const struct simpler_tensor *t)
{
    return (void *)(uintptr_t)(t->addr + t->start_offset * simpler_dtype_size(t->dtype));
}

/* Element offset (from the buffer base) of the element at `index`
 * (ndims indices, each within shape). */
static inline uint64_t simpler_tensor_offset_of(const struct simpler_tensor *t,
                                                const uint64_t *index)
{
    int64_t off = (int64_t)t->start_offset;
    for (uint32_t i = 0; i < t->ndims; i++)
        off += (int64_t)index[i] * t->stride[i];
    return (uint64_t)off;
}

#ifdef __cplusplus
}
#endif

#endif /* SIMPLER_TENSOR_H */
