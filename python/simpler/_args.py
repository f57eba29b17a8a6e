"""simpler._args — turns Python run arguments into a struct simpler_args.

Owns: reading host arrays (numpy's __array_interface__, else the buffer
protocol), the checks the package makes before anything is enqueued
(dtype, dims, element-aligned strides, direction against writability), the
host descriptors (one buffer per group of overlapping arrays, so views of
one array passed together are views of one buffer, as C requires; or, for a
cluster, each numpy view described within the whole array that owns its
memory, so every run names one buffer the same way), and the scalars'
64-bit words. What it builds borrows the arrays: the caller keeps
the returned `keep` list alive until the run is finalized.
"""
import ctypes
import struct

from . import _structs as S
from ._types import DataType, Direction, dtype_from_format, dtype_from_typestr
from .errors import invalid

_U64_MAX = (1 << 64) - 1


class _PyBuffer(ctypes.Structure):
    """Py_buffer (the CPython buffer protocol's view)."""
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
                ("internal", ctypes.c_void_p)]


_PyBUF_RECORDS_RO = 0x0004 | 0x0008 | 0x0010  # FORMAT | ND | STRIDES
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None


class _BufferExport:
    """A buffer-protocol export held until the run is finalized (the
    exporter cannot resize or free the memory meanwhile)."""

    def __init__(self, obj):
        self.live = False
        self.view = _PyBuffer()
        if _get_buffer(obj, ctypes.byref(self.view), _PyBUF_RECORDS_RO) != 0:
            raise TypeError("simpler: %s exposes no strided buffer" % type(obj).__name__)
        self.live = True

    def release(self):
        if self.live:
            self.live = False
            _release_buffer(ctypes.byref(self.view))

    __del__ = release


def _extent(shape, byte_strides, itemsize):
    """(lo, hi): the bytes a strided view touches, relative to its first element."""
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, byte_strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, byte_strides)) + itemsize
    return lo, hi


class HostArray:
    """What the package reads from a host array: the address of its first
    element, dtype, shape and strides (in elements), and writability."""

    def __init__(self, obj, what="tensor"):
        self.obj = obj
        self.export = None
        ai = getattr(obj, "__array_interface__", None)
        if ai is not None and ai.get("data") is not None and not isinstance(ai["data"], tuple):
            ai = None  # data given as a buffer object: read it through the protocol
        if ai is not None and ai.get("data") is not None:
            self.dtype = dtype_from_typestr(ai["typestr"])
            if self.dtype is None:
                raise invalid("%s: element type %r has no simpler dtype" % (what, ai["typestr"]))
            self.addr, self.readonly = int(ai["data"][0]), bool(ai["data"][1])
            shape = tuple(int(n) for n in ai["shape"])
            byte_strides = ai.get("strides")
        else:
            try:
                self.export = _BufferExport(obj)
            except TypeError:
                raise invalid("%s: %s is neither an array nor a buffer" % (what, type(obj).__name__))
            v = self.export.view
            fmt = v.format.decode("ascii") if v.format else "B"
            self.dtype = dtype_from_format(fmt)
            if self.dtype is None or v.itemsize != self.dtype.itemsize:
                self.export.release()
                raise invalid("%s: buffer format %r has no simpler dtype" % (what, fmt))
            self.addr, self.readonly = int(v.buf or 0), bool(v.readonly)
            shape = tuple(v.shape[i] for i in range(v.ndim))
            byte_strides = tuple(v.strides[i] for i in range(v.ndim)) if v.strides else None
        es = self.dtype.itemsize
        if not 1 <= len(shape) <= S.TENSOR_MAX_DIMS:
            raise invalid("%s: %d dims; simpler tensors have 1..%d" % (what, len(shape),
                                                                         S.TENSOR_MAX_DIMS))
        if any(n == 0 for n in shape):
            raise invalid("%s: shape %r has an empty dim" % (what, shape))
        if byte_strides is None:
            byte_strides, step = [], es
            for n in reversed(shape):
                byte_strides.insert(0, step)
                step *= n
        if any(s % es for s in byte_strides):
            raise invalid("%s: strides %r are not whole %d-byte elements" % (what, tuple(byte_strides), es))
        self.shape = shape
        self.strides = tuple(s // es for s in byte_strides)
        # The bytes the view touches, relative to its first element.
        self.lo, self.hi = _extent(shape, byte_strides, es)

    def base_extent(self):
        """(lo, hi), absolute: the bytes of the outermost array the view's
        memory belongs to (numpy's .base chain, followed while each base
        is itself an array), or the view's own bytes when it is its own
        base or not a numpy view."""
        root = self.obj
        while True:
            base = getattr(root, "base", None)
            ai = getattr(base, "__array_interface__", None) if base is not None else None
            if ai is None or not isinstance(ai.get("data"), tuple):
                break
            root = base
        own = (self.addr + self.lo, self.addr + self.hi)
        if root is self.obj:
            return own
        ai = root.__array_interface__
        try:
            itemsize = int(ai["typestr"][2:].split("[")[0])
        except ValueError:
            return own
        shape = tuple(int(n) for n in ai["shape"])
        byte_strides = ai.get("strides")
        if byte_strides is None:
            byte_strides, step = [], itemsize
            for n in reversed(shape):
                byte_strides.insert(0, step)
                step *= n
        lo, hi = _extent(shape, byte_strides, itemsize)
        addr = int(ai["data"][0])
        if not addr + lo <= own[0] < own[1] <= addr + hi:
            return own  # not within its base (an exporter's own layout): its own bytes
        return addr + lo, addr + hi

    @property
    def contiguous(self):
        expect = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expect:
                return False
            expect *= n
        return True

    @property
    def nbytes(self):
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n

    def release(self):
        if self.export is not None:
            self.export.release()


def _host_descriptors(arrays, whole_bases=False):
    """Descriptors of host arrays: arrays whose bytes overlap share one
    buffer (their union), each a view of it. whole_bases: an array's bytes
    are taken as those of the array owning its memory (base_extent), so
    views of one numpy array name that whole array as their buffer."""
    extents = sorted(((*(a.base_extent() if whole_bases else (a.addr + a.lo, a.addr + a.hi)), i)
                      for i, a in enumerate(arrays)))
    buffer_of, groups = {}, []
    for lo, hi, i in extents:
        if groups and lo < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
        else:
            groups.append([lo, hi])
        buffer_of[i] = len(groups) - 1
    out = []
    for i, a in enumerate(arrays):
        base, end = groups[buffer_of[i]]
        es = a.dtype.itemsize
        if (a.addr - base) % es:
            raise invalid("tensor %d: starts at a distance from its buffer's start (another "
                          "argument or the array it views) that is not whole %d-byte elements"
                          % (i, es))
        t = S.Tensor()
        t.addr, t.buffer_bytes = base, end - base
        t.start_offset = (a.addr - base) // es
        t.producer_task_id = S.TASK_ID_NONE
        t.ndims, t.dtype, t.address_space = len(a.shape), int(a.dtype), S.MEM_HOST
        for d, (n, s) in enumerate(zip(a.shape, a.strides)):
            t.shape[d], t.stride[d] = n, s
        out.append(t)
    return out


def scalar_word(value, index=0):
    """The 64-bit word of a scalar: ints as two's complement, Python floats
    as f64 bits, numpy float32/float16 scalars as their own bits."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", None) == "f":
        fmt = {2: "<e", 4: "<f", 8: "<d"}.get(dtype.itemsize)
        if fmt is None:
            raise invalid("scalar %d: a %d-byte float has no simpler form" % (index, dtype.itemsize))
        return int.from_bytes(struct.pack(fmt, float(value)).ljust(8, b"\0"), "little")
    if isinstance(value, float):
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    try:
        number = int(value.__index__())
    except (AttributeError, TypeError):
        raise invalid("scalar %d: %r is neither an int nor a float" % (index, value))
    if not -(1 << 63) <= number <= _U64_MAX:
        raise invalid("scalar %d: %d does not fit 64 bits" % (index, number))
    return number & _U64_MAX


class Built:
    """A struct simpler_args and everything it borrows."""

    def __init__(self, args, keep, host_arrays):
        self.args = args
        self.keep = keep
        self.host_arrays = host_arrays

    def release(self):
        for a in self.host_arrays:
            a.release()
        self.keep = self.host_arrays = ()


def build(tensors, scalars, signature=None, host_allowed=True, whole_bases=False):
    """The args of one run or round. `signature` (a tuple of Directions, or
    None when unknown) lets the package check counts and writability before
    anything is enqueued; C checks everything again. whole_bases: see
    _host_descriptors (a cluster's runs)."""
    from .device import Tensor  # device descriptors pass through
    tensors, scalars = list(tensors), list(scalars)
    directions = None
    if signature is not None:
        directions = [d for d in signature if d != Direction.SCALAR]
        if len(tensors) != len(directions) or len(scalars) != len(signature) - len(directions):
            raise invalid("the callable takes %d tensors and %d scalars, given %d and %d"
                          % (len(directions), len(signature) - len(directions), len(tensors),
                             len(scalars)))
    descriptors, host, host_index, keep = [None] * len(tensors), [], [], []
    try:
        for i, obj in enumerate(tensors):
            if isinstance(obj, Tensor):
                obj.check_live()
                descriptors[i] = obj.descriptor
                keep.append(obj)
                continue
            if not host_allowed:
                raise invalid("tensor %d: kernel mode takes device tensors "
                              "(DeviceBuffer.tensor), not a %s" % (i, type(obj).__name__))
            a = HostArray(obj, "tensor %d" % i)
            host.append(a)
            host_index.append(i)
            if directions is not None and directions[i] != Direction.IN and a.readonly:
                raise invalid("tensor %d: a read-only array cannot be %s"
                              % (i, directions[i].name))
        for i, t in zip(host_index, _host_descriptors(host, whole_bases)):
            descriptors[i] = t
        words = [scalar_word(v, i) for i, v in enumerate(scalars)]
    except BaseException:
        for a in host:
            a.release()
        raise
    args = S.Args()
    args.tensor_count, args.scalar_count = len(descriptors), len(words)
    if descriptors:
        array = (S.Tensor * len(descriptors))(*descriptors)
        args.tensors = array
        keep.append(array)
    if words:
        words_array = (ctypes.c_uint64 * len(words))(*words)
        args.scalars = words_array
        keep.append(words_array)
    keep.extend(tensors)
    return Built(args, keep, host)
