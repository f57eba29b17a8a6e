"""simpler._types — the enums of the C headers as IntEnums, and how a host
array's element type maps onto them."""
import enum


class DataType(enum.IntEnum):
    """enum simpler_dtype (tensor.h)."""
    F32 = 0
    F16 = 1
    BF16 = 2
    F64 = 3
    I8 = 4
    I16 = 5
    I32 = 6
    I64 = 7
    U8 = 8
    U16 = 9
    U32 = 10
    U64 = 11

    @property
    def itemsize(self):
        return _SIZES[self]


_SIZES = {DataType.F32: 4, DataType.F16: 2, DataType.BF16: 2, DataType.F64: 8,
          DataType.I8: 1, DataType.I16: 2, DataType.I32: 4, DataType.I64: 8,
          DataType.U8: 1, DataType.U16: 2, DataType.U32: 4, DataType.U64: 8}


class Direction(enum.IntEnum):
    """enum simpler_direction (callable.h)."""
    SCALAR = 0
    IN = 1
    OUT = 2
    INOUT = 3


class Core(enum.IntEnum):
    """enum simpler_kernel_core (callable.h)."""
    AIC = 0
    AIV = 1


class TaskState(enum.IntEnum):
    """enum simpler_cluster_task_state (cluster.h): a cluster task's state."""
    PENDING = 0  # waiting for tasks it depends on
    QUEUED = 1   # dependencies met; a run waits for a pipeline slot
    RUNNING = 2  # every run launched; some not finalized
    DONE = 3     # every run finalized or failed, or cancelled


# __array_interface__ typestr (kind + size; byte order checked apart) and
# struct-module format characters of the buffer protocol.
_TYPESTR = {"f4": DataType.F32, "f2": DataType.F16, "f8": DataType.F64,
            "i1": DataType.I8, "i2": DataType.I16, "i4": DataType.I32, "i8": DataType.I64,
            "u1": DataType.U8, "u2": DataType.U16, "u4": DataType.U32, "u8": DataType.U64}
_FORMAT = {"f": "f4", "e": "f2", "d": "f8", "b": "i1", "h": "i2", "i": "i4", "l": "i8",
           "q": "i8", "B": "u1", "H": "u2", "I": "u4", "L": "u8", "Q": "u8"}


def dtype_from_typestr(typestr):
    """DataType for a little-endian or byte-order-free typestr, else None."""
    if len(typestr) < 3 or typestr[0] not in "<|=":
        return None
    return _TYPESTR.get(typestr[1:])


def dtype_from_format(fmt):
    """DataType for a buffer-protocol format in native order, else None."""
    if fmt and fmt[0] in "@=<":
        fmt = fmt[1:]
    code = _FORMAT.get(fmt)
    return _TYPESTR[code] if code else None


def as_dtype(value):
    """A DataType from a DataType, an int, a numpy dtype (anything with
    .str, a typestr) or a typestr string; None when it names none."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return DataType(value)
        except ValueError:
            return None
    typestr = getattr(value, "str", value)
    if isinstance(typestr, str):
        return dtype_from_typestr(typestr)
    return None
