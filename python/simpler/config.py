"""simpler.config — RunConfig and CallConfig, the Python forms of struct
simpler_run_config and struct simpler_config.

Owns: their field names (those of the C structs), their defaults (read from
the library's simpler_config_default, never restated here), and the
conversion to the C structs, which refuses a value the C field cannot hold
(InvalidArgument) instead of letting ctypes truncate it. Every other check
is C's, at Worker(...).
"""
import ctypes

from . import _structs as S
from ._lib import lib
from .errors import check, invalid


def _defaults():
    c = S.Config()
    check(lib.simpler_config_default(ctypes.byref(c)), "simpler_config_default")
    return c


def _limit(ctype):
    return (1 << (8 * ctypes.sizeof(ctype))) - 1


def _word(name, value, ctype):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError("simpler: %s must be an int, not %s" % (name, type(value).__name__))
    value = value.__index__()
    if not 0 <= value <= _limit(ctype):
        raise invalid("%s = %d does not fit its C field (0..%d)" % (name, value, _limit(ctype)))
    return value


class _Fields:
    """Keyword fields mirroring one ctypes struct."""
    _struct = None
    _skip = ()

    def __init__(self, **fields):
        defaults = self._default_struct()
        for name, _ in self._struct._fields_:
            if name in self._skip:
                continue
            value = getattr(defaults, name)
            if isinstance(value, ctypes.Array):
                value = tuple(value)
            object.__setattr__(self, name, value)
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self.field_names():
            raise TypeError("simpler: %s has no field %r" % (type(self).__name__, name))
        object.__setattr__(self, name, value)

    @classmethod
    def field_names(cls):
        return tuple(n for n, _ in cls._struct._fields_ if n not in cls._skip)

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n in self.field_names())

    def __repr__(self):
        return "simpler.%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (n, getattr(self, n)) for n in self.field_names()))

    def to_c(self):
        out = self._struct()
        for name, ctype in self._struct._fields_:
            if name in self._skip:
                continue
            value = getattr(self, name)
            if isinstance(value, _Fields):
                setattr(out, name, value.to_c())
            elif issubclass(ctype, ctypes.Array):
                if hasattr(value, "__index__"):
                    value = (value,) * ctype._length_
                value = tuple(value)
                if len(value) != ctype._length_:
                    raise invalid("%s: one int or %d of them" % (name, ctype._length_))
                setattr(out, name, ctype(*(_word(name, v, ctype._type_) for v in value)))
            else:
                setattr(out, name, _word(name, value, ctype))
        return out


class RunConfig(_Fields):
    """The sizes and limits of one run (struct simpler_run_config): the same
    field names; per-ring fields (task_window, heap_bytes, dep_pool) take one
    int for every ring or a tuple of 4. Defaults: simpler_run_config_default."""
    _struct = S.RunConfig

    @staticmethod
    def _default_struct():
        return _defaults().run_capacity


class CallConfig(_Fields):
    """Context-wide sizes (struct simpler_config): pipeline_depth,
    max_callables, callable_bytes, run_capacity (a RunConfig: the
    largest run the device arena is sized for), max_captures (kernel
    mode: captures that may hold launches of the worker at once) and
    runtime (0: TMR, 1: host_build_graph; SIMPLER_RUNTIME=tmr|hbg in the
    environment overrides it)."""
    _struct = S.Config

    @staticmethod
    def _default_struct():
        return _defaults()

    def __init__(self, **fields):
        super().__init__(**fields)
        if "run_capacity" not in fields:
            object.__setattr__(self, "run_capacity", RunConfig())

    def __setattr__(self, name, value):
        if name == "run_capacity" and not isinstance(value, RunConfig):
            raise TypeError("simpler: run_capacity must be a RunConfig")
        super().__setattr__(name, value)
