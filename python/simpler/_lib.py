"""simpler._lib — finds and loads libsimpler.so and declares its prototypes.

Owns: the one ctypes.CDLL of the package, the search for it, the version
check, and the argument and result types of every C function the package
calls. Nothing else in the package calls ctypes.CDLL.

ctypes.CDLL (not PyDLL) releases the GIL around every foreign call, so a
thread blocked in a wait, run, synchronize or replay lets every other
Python thread run meanwhile.
"""
import ctypes
import os

from . import _structs as S

# The library's soname major and the oldest minor this package was written
# against: a library of another major, or an older minor, is refused.
SONAME_MAJOR = 0
MINIMUM_VERSION = (0, 1, 0)
SONAME = "libsimpler.so.%d" % SONAME_MAJOR

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    """(where, path) pairs in search order; path None means 'by soname'."""
    env = os.environ.get("SIMPLER_LIBRARY")
    if env:
        # An explicit choice is the only one: falling back would hide it.
        return [("SIMPLER_LIBRARY", env)]
    found = []
    try:
        from . import _installed  # written by `make install`, absent in the tree
        found.append(("beside the installed package",
                      os.path.normpath(os.path.join(_HERE, _installed.LIBRARY))))
    except ImportError:
        pass
    found.append(("the build tree",
                  os.path.normpath(os.path.join(_HERE, "..", "..", "build", "src", SONAME))))
    found.append(("the system's library search path", SONAME))
    return found


def _parse_version(text):
    try:
        parts = tuple(int(p) for p in text.split("."))
    except ValueError:
        return None
    return parts if len(parts) == 3 else None


def _load():
    tried = []
    for where, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (where, path))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (where, path, e))
            continue
        try:
            version_fn = lib.simpler_version
        except AttributeError:
            raise ImportError("simpler: %s (%s) is not libsimpler: it has no simpler_version"
                              % (path, where))
        version_fn.restype = ctypes.c_char_p
        version_fn.argtypes = []
        text = version_fn().decode("ascii", "replace")
        version = _parse_version(text)
        if version is None or version[0] != MINIMUM_VERSION[0] or version < MINIMUM_VERSION:
            raise ImportError(
                "simpler: %s (%s) is libsimpler version %s; this package needs %d.x, at "
                "least %s" % (path, where, text, MINIMUM_VERSION[0],
                              ".".join(map(str, MINIMUM_VERSION))))
        return lib, path, text
    raise ImportError("simpler: cannot load %s; looked in: %s. Set SIMPLER_LIBRARY to its path."
                      % (SONAME, "; ".join(tried)))


lib, library_path, version = _load()

_int, _u32, _u64, _size = ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
_p, _pp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
_P = ctypes.POINTER

_PROTOTYPES = {
    "simpler_status_name": (ctypes.c_char_p, [_int]),
    "simpler_strerror": (ctypes.c_char_p, [_int]),
    "simpler_config_default": (_int, [_P(S.Config)]),
    "simpler_create_device_context": (_int, [_pp]),
    "simpler_destroy_device_context": (_int, [_p]),
    "simpler_init": (_int, [_p, _int, _P(S.Config)]),
    "simpler_finalize_device": (_int, [_p]),
    "simpler_committed_device_memory": (_size, [_p]),
    "simpler_get_context_info": (_int, [_p, _P(S.ContextInfo)]),
    "simpler_register_callable": (_int, [_p, ctypes.c_int32, _p, _size]),
    "simpler_unregister_callable": (_int, [_p, ctypes.c_int32]),
    "simpler_prepare_run": (_int, [_p, _P(_u64), ctypes.c_int32, _P(S.Args), _P(S.RunConfig)]),
    "simpler_launch_run": (_int, [_p, _u64]),
    "simpler_poll_run": (_int, [_p, _u64]),
    "simpler_wait_run": (_int, [_p, _u64]),
    "simpler_get_run_info": (_int, [_p, _u64, _P(S.RunInfo)]),
    "simpler_finalize_run": (_int, [_p, _u64]),
    "simpler_run": (_int, [_p, ctypes.c_int32, _P(S.Args), _P(S.RunConfig), _P(S.RunInfo)]),
    "simpler_kernel_mode_supported": (_int, [_p]),
    "simpler_kernel_mode_init": (_int, [_p, _int, _P(S.Config), _u64]),
    "simpler_kernel_mode_prepare_callable": (_int, [_p, _p, _size, _P(ctypes.c_int32)]),
    "simpler_kernel_mode_launch": (_int, [_p, ctypes.c_int32, _P(S.Args), _p]),
    "simpler_prepare_call": (_int, [_p, ctypes.c_int32, _P(S.Args), _P(S.RunConfig), _pp]),
    "simpler_submit_call": (_int, [_p, _p, _P(_u64)]),
    "simpler_kernel_mode_launch_call": (_int, [_p, _p, _p]),
    "simpler_release_call": (_int, [_p, _p]),
    "simpler_kernel_mode_graph_launches": (_int, [_p, _p, _P(_size)]),
    "simpler_kernel_mode_graph_update": (_int, [_p, _p, _size, ctypes.c_int32, _P(S.Args)]),
    "simpler_kernel_mode_graph_update_call": (_int, [_p, _p, _size, _p]),
    "simpler_callable_validate": (_int, [_p, _size]),
    "simpler_callable_builder_create": (_int, [_pp]),
    "simpler_callable_builder_destroy": (None, [_p]),
    "simpler_callable_builder_set_orchestration": (
        _int, [_p, _int, _p, _size, ctypes.c_char_p, ctypes.c_char_p, _P(_int), _u32]),
    "simpler_callable_builder_add_kernel": (
        _int, [_p, ctypes.c_int32, _int, _int, _p, _size, ctypes.c_char_p, _P(_int), _u32]),
    "simpler_callable_builder_finish": (_int, [_p, _pp, _P(_size)]),
    "simpler_callable_free": (None, [_p]),
    "simpler_cluster_config_default": (_int, [_P(S.ClusterConfig)]),
    "simpler_cluster_create": (_int, [_P(S.ClusterConfig), _pp]),
    "simpler_cluster_destroy": (_int, [_p]),
    "simpler_cluster_worker_count": (_u32, [_p]),
    "simpler_cluster_register_callable": (_int, [_p, ctypes.c_int32, _p, _size]),
    "simpler_cluster_unregister_callable": (_int, [_p, ctypes.c_int32]),
    "simpler_cluster_run": (_int, [_p, S.ClusterOrchFn, _p, _P(S.ClusterRunInfo)]),
    "simpler_cluster_submit": (_int, [_p, _u32, ctypes.c_int32, _P(S.Args), _P(S.RunConfig),
                                      _P(_u64)]),
    "simpler_cluster_submit_group": (_int, [_p, ctypes.c_int32, _P(S.ClusterMember), _u32,
                                            _P(S.RunConfig), _P(_u64)]),
    "simpler_cluster_wait_task": (_int, [_p, _u64]),
    "simpler_cluster_task_query": (_int, [_p, _u64, _P(S.ClusterTaskInfo)]),
    "simdev_set_device": (_int, [_int]),
    "simdev_device_sync": (_int, []),
    "simdev_device_count": (_int, [_P(_int)]),
    "simdev_malloc": (_int, [_pp, _size]),
    "simdev_free": (_int, [_p]),
    "simdev_mem_get_info": (_int, [_int, _P(S.MemInfo)]),
    "simdev_memcpy": (_int, [_p, _p, _size, _int]),
    "simdev_stream_create": (_int, [_pp]),
    "simdev_stream_destroy": (_int, [_p]),
    "simdev_stream_sync": (_int, [_p]),
    "simdev_stream_begin_capture": (_int, [_p]),
    "simdev_stream_end_capture": (_int, [_p, _pp]),
    "simdev_graph_node_count": (_int, [_p, _P(_size)]),
    "simdev_graph_destroy": (_int, [_p]),
    "simdev_graph_instantiate": (_int, [_pp, _p]),
    "simdev_graph_launch": (_int, [_p, _p]),
    "simdev_graph_exec_destroy": (_int, [_p]),
}


def _declare():
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError("simpler: %s (version %s) lacks %s" % (library_path, version, name))
        fn.restype = restype
        fn.argtypes = argtypes


_declare()

# Device memory copy kinds (enum simdev_copy_kind).
COPY_HOST_TO_DEVICE, COPY_DEVICE_TO_HOST = 1, 2
