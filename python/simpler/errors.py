"""simpler.errors — the exceptions: one class per public status code.

Owns: the mapping from a negative C status (status.h) to the exception the
package raises for it. Names and messages come from the library itself
(simpler_status_name, simpler_strerror), so they never drift from the C
table. A run's or round's own code (-1..-999: orchestrator, scheduler or
kernel-reported) is RunFailed. PTO_RUNTIME_ERR_NOT_READY is never raised:
a poll that sees it reports "not done".
"""
from ._lib import lib

_PREFIX = "PTO_RUNTIME_ERR_"
NOT_READY = -1102


def status_name(code):
    """The C constant's name without PTO_RUNTIME_ERR_ ("INVALID_STATE"); run
    codes keep their own names (simpler_status_name)."""
    name = lib.simpler_status_name(int(code)).decode("ascii", "replace")
    return name[len(_PREFIX):] if name.startswith(_PREFIX) else name


def strerror(code):
    return lib.simpler_strerror(int(code)).decode("ascii", "replace")


class SimplerError(Exception):
    """A simpler call failed. .code is the C status (negative), .name its
    constant's name without PTO_RUNTIME_ERR_, .message simpler_strerror's
    text; .call names the C call (or Python check) that failed."""

    def __init__(self, code, call=None, detail=None):
        self.code = int(code)
        self.name = status_name(self.code)
        self.message = strerror(self.code)
        self.call = call
        self.detail = detail
        text = "%s (%s, %d)" % (self.message, self.name, self.code)
        if detail:
            text = "%s: %s" % (text, detail)
        if call:
            text = "%s: %s" % (call, text)
        super().__init__(text)


class RunFailed(SimplerError):
    """A run's (program mode) or round's (kernel mode) own failure: an
    orchestrator error, a scheduler timeout or a kernel's code, -1..-999."""


def _subclass(name, code):
    cls = type(name, (SimplerError,), {"__doc__": "%s%s (%d)." % (_PREFIX, status_name(code), code)})
    cls.CODE = code
    return cls


# One class per public code of status.h (NOT_READY excepted: never raised).
Internal = _subclass("Internal", -1000)
Unsupported = _subclass("Unsupported", -1001)
PreparedIncompatible = _subclass("PreparedIncompatible", -1002)
InvalidState = _subclass("InvalidState", -1003)
InvalidArgument = _subclass("InvalidArgument", -1004)
CallableCountExceeded = _subclass("CallableCountExceeded", -1005)
CallableBytesExceeded = _subclass("CallableBytesExceeded", -1006)
CallableNotResident = _subclass("CallableNotResident", -1007)
CapacityExceeded = _subclass("CapacityExceeded", -1008)
DependencyFailed = _subclass("DependencyFailed", -1009)
PeerLost = _subclass("PeerLost", -1010)
DeviceLost = _subclass("DeviceLost", -1100)
OutOfDeviceMemory = _subclass("OutOfDeviceMemory", -1101)
CaptureUnsupported = _subclass("CaptureUnsupported", -1103)
CaptureInvalidated = _subclass("CaptureInvalidated", -1104)
CaptureUnjoined = _subclass("CaptureUnjoined", -1105)
Timeout = _subclass("Timeout", -1106)
OutOfHostMemory = _subclass("OutOfHostMemory", -1107)

BY_CODE = {cls.CODE: cls for cls in (
    Internal, Unsupported, PreparedIncompatible, InvalidState, InvalidArgument,
    CallableCountExceeded, CallableBytesExceeded, CallableNotResident, CapacityExceeded,
    DependencyFailed, PeerLost,
    DeviceLost, OutOfDeviceMemory, CaptureUnsupported, CaptureInvalidated, CaptureUnjoined,
    Timeout, OutOfHostMemory)}

__all__ = ["SimplerError", "RunFailed"] + sorted(cls.__name__ for cls in BY_CODE.values())


def error(code, call=None, detail=None):
    """The exception for a negative status `code`."""
    code = int(code)
    if -999 <= code <= -1:
        return RunFailed(code, call, detail)
    return BY_CODE.get(code, SimplerError)(code, call, detail)


def check(code, call):
    """Raises error(code, call) unless code is 0."""
    if code != 0:
        raise error(code, call)


def invalid(detail, call=None):
    """An InvalidArgument the package raises itself, before calling C."""
    return InvalidArgument(InvalidArgument.CODE, call, detail)
