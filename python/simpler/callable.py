"""simpler.callable — build_callable: a callable image from shared objects.

Owns: packing an orchestration and its kernels into the flat image that
Worker.register and Worker.kernel_prepare_callable take (callable.h's
builder), and reading an image's signature back.
"""
import ctypes
import os

from . import _structs as S
from ._lib import lib
from ._types import Core, Direction
from .errors import check, invalid

_ELF = 1  # SIMPLER_BINARY_ELF


def _binary(value, what):
    if isinstance(value, (str, os.PathLike)):
        with open(value, "rb") as f:
            return f.read()
    try:
        return bytes(memoryview(value))
    except TypeError:
        raise invalid("%s: a path or the bytes of a shared object, not %s"
                      % (what, type(value).__name__))


def _signature(directions, what):
    try:
        values = [int(Direction(d)) for d in directions]
    except (TypeError, ValueError):
        raise invalid("%s: every entry must be a simpler.Direction" % what)
    return (ctypes.c_int * len(values))(*values) if values else None, len(values)


def _name(value, what):
    if not isinstance(value, str) or not value:
        raise invalid("%s: a non-empty str" % what)
    return value.encode("ascii")


def build_callable(orchestration, entry, signature, kernels=(), config_fn=None):
    """The bytes of a callable image. `orchestration`: a path or the bytes
    of a shared object exporting `entry` (and `config_fn` when given);
    `signature`: the run's Directions in argument order; `kernels`:
    (func_id, core, binary, symbol, signature) tuples. The image passes
    simpler_callable_validate."""
    orch = _binary(orchestration, "orchestration")
    sig, sig_count = _signature(signature, "signature")
    config = _name(config_fn, "config_fn") if config_fn is not None else None
    builder = ctypes.c_void_p()
    check(lib.simpler_callable_builder_create(ctypes.byref(builder)),
          "simpler_callable_builder_create")
    try:
        check(lib.simpler_callable_builder_set_orchestration(
            builder, _ELF, orch, len(orch), _name(entry, "entry"), config, sig, sig_count),
            "simpler_callable_builder_set_orchestration")
        for k, kernel in enumerate(kernels):
            try:
                func_id, core, binary, symbol, ksig = kernel
            except (TypeError, ValueError):
                raise invalid("kernels[%d]: (func_id, core, binary, symbol, signature)" % k)
            try:
                core = int(Core(core))
            except ValueError:
                raise invalid("kernels[%d]: core must be a simpler.Core" % k)
            data = _binary(binary, "kernels[%d] binary" % k)
            ks, kn = _signature(ksig, "kernels[%d] signature" % k)
            check(lib.simpler_callable_builder_add_kernel(
                builder, int(func_id), core, _ELF, data, len(data),
                _name(symbol, "kernels[%d] symbol" % k), ks, kn),
                "simpler_callable_builder_add_kernel")
        image, size = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib.simpler_callable_builder_finish(builder, ctypes.byref(image), ctypes.byref(size)),
              "simpler_callable_builder_finish")
        try:
            return ctypes.string_at(image, size.value)
        finally:
            lib.simpler_callable_free(image)
    finally:
        lib.simpler_callable_builder_destroy(builder)


class Image:
    """A callable image copied into 8-byte-aligned memory (what the C calls
    require), and its signature read from its header."""

    def __init__(self, image):
        try:
            data = memoryview(image).cast("B")
        except TypeError:
            raise invalid("image: bytes of a callable image, not %s" % type(image).__name__)
        self.size = len(data)
        self.buffer = (ctypes.c_uint64 * ((self.size + 7) // 8))()
        ctypes.memmove(self.buffer, bytes(data), self.size)
        self.signature = None
        if self.size >= ctypes.sizeof(S.CallableHeader):
            header = S.CallableHeader.from_buffer(self.buffer)
            if header.magic == S.CALLABLE_MAGIC and header.sig_count <= S.CALLABLE_MAX_ARGS:
                try:
                    self.signature = tuple(Direction(header.signature[i])
                                           for i in range(header.sig_count))
                except ValueError:
                    self.signature = None  # the C validator says why
