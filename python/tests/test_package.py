"""The package itself: its version and library, the ctypes mirrors against
the C layout, the enums, and a clear ImportError when the library is
missing or of another version."""
import ctypes
import json
import os
import subprocess
import sys

import simpler
from simpler import _lib
from simpler import _structs as S
from helpers import PYTHON_DIR, path


def _c_layout():
    out = subprocess.run([path("SIMPLER_LAYOUT_EXE")], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_version_is_the_librarys_and_the_projects():
    assert simpler.__version__ == _lib.lib.simpler_version().decode(), "not simpler_version()"
    expected = os.environ.get("SIMPLER_VERSION_EXPECTED")
    if expected:  # given by CTest: the CMake project's version
        assert simpler.__version__ == expected, "the loaded library is not this build's"
    assert os.path.samefile(simpler.library_path, path("SIMPLER_LIBRARY")), \
        "library_path must name the library SIMPLER_LIBRARY chose"


def test_every_mirrored_struct_has_the_c_size_and_offsets():
    layout = _c_layout()
    assert set(layout) - {"enums"} == set(S.MIRRORS), "the layout printer and MIRRORS list differ"
    assert ctypes.sizeof(S.Tensor) == 128, "struct simpler_tensor is 128 bytes"
    for name, mirror in S.MIRRORS.items():
        c = layout[name]
        assert ctypes.sizeof(mirror) == c["sizeof"], "%s: sizeof differs from C" % name
        fields = [f for f, _ in mirror._fields_]
        assert sorted(fields) == sorted(k for k in c if k != "sizeof"), \
            "%s: the mirror's fields are not the C struct's" % name
        for field in fields:
            assert getattr(mirror, field).offset == c[field], "%s.%s: offset differs" % (name, field)


def test_enums_have_the_c_values():
    enums = _c_layout()["enums"]
    for dt in simpler.DataType:
        assert enums["SIMPLER_DTYPE_" + dt.name] == dt.value, dt
    for d in simpler.Direction:
        assert enums["SIMPLER_DIR_" + d.name] == d.value, d
    for c in simpler.Core:
        assert enums["SIMPLER_CORE_" + c.name] == c.value, c
    assert (simpler.IN, simpler.OUT, simpler.INOUT, simpler.SCALAR) == (1, 2, 3, 0)
    assert S.TENSOR_MAX_DIMS == enums["SIMPLER_TENSOR_MAX_DIMS"]
    assert S.RUN_RINGS == enums["SIMPLER_RUN_RINGS"]
    assert S.CALLABLE_MAGIC == enums["SIMPLER_CALLABLE_MAGIC"]
    assert S.CALLABLE_NAME_MAX == enums["SIMPLER_CALLABLE_NAME_MAX"]
    assert S.CALLABLE_MAX_ARGS == enums["SIMPLER_CALLABLE_MAX_ARGS"]
    assert (S.MEM_HOST, S.MEM_DEVICE) == (enums["SIMPLER_MEM_HOST"], enums["SIMPLER_MEM_DEVICE"])
    assert (_lib.COPY_HOST_TO_DEVICE, _lib.COPY_DEVICE_TO_HOST) == (
        enums["SIMDEV_COPY_HOST_TO_DEVICE"], enums["SIMDEV_COPY_DEVICE_TO_HOST"])


def _import_with(library):
    env = dict(os.environ, SIMPLER_LIBRARY=library, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-c", "import simpler"], env=env,
                          capture_output=True, text=True)


def test_a_missing_library_is_a_clear_import_error():
    out = _import_with("/nonexistent/libsimpler.so.0")
    assert out.returncode != 0, "import must fail without its library"
    assert "ImportError: simpler: cannot load libsimpler.so.0" in out.stderr, out.stderr
    assert "SIMPLER_LIBRARY (/nonexistent/libsimpler.so.0): no such file" in out.stderr, \
        "the error must say where it looked"


def test_a_library_of_another_version_is_a_clear_import_error():
    out = _import_with(path("FAKE_SIMPLER_SO"))
    assert out.returncode != 0
    assert "is libsimpler version 99.0.0; this package needs 0.x, at least 0.1.0" in out.stderr, \
        out.stderr


def test_a_library_that_is_not_simpler_is_a_clear_import_error():
    out = _import_with(path("PYTEST_KERNELS_SO"))
    assert out.returncode != 0
    assert "is not libsimpler: it has no simpler_version" in out.stderr, out.stderr


def test_build_callable_images_pass_the_validator():
    from helpers import matmul_image, offset_image, vector_image
    for make in (vector_image, matmul_image, offset_image):
        image = make()
        buf = (ctypes.c_uint64 * ((len(image) + 7) // 8))()
        ctypes.memmove(buf, image, len(image))
        assert _lib.lib.simpler_callable_validate(buf, len(image)) == 0, make.__name__
    with open(path("VECTOR_ORCH_SO"), "rb") as f:
        from_bytes = simpler.build_callable(f.read(), "vector_orchestration",
                                            [simpler.IN, simpler.IN, simpler.OUT])
    from_path = simpler.build_callable(path("VECTOR_ORCH_SO"), "vector_orchestration",
                                       [simpler.IN, simpler.IN, simpler.OUT])
    assert from_bytes == from_path, "a path and its bytes must make the same image"


def test_build_callable_refuses_what_the_validator_would():
    import pytest
    with pytest.raises(simpler.InvalidArgument):
        simpler.build_callable(b"not an elf", "entry", [simpler.IN])
    with pytest.raises(simpler.InvalidArgument):
        simpler.build_callable(path("VECTOR_ORCH_SO"), "", [simpler.IN])
    with pytest.raises(simpler.InvalidArgument):
        simpler.build_callable(path("VECTOR_ORCH_SO"), "vector_orchestration", [7])


def test_without_simpler_library_a_checkout_finds_its_build_tree():
    built = os.path.join(PYTHON_DIR, "..", "build", "src", "libsimpler.so.0")
    if not os.path.exists(built):
        import pytest
        pytest.skip("this build is not the checkout's build/")
    env = {k: v for k, v in os.environ.items() if k != "SIMPLER_LIBRARY"}
    env["PYTHONPATH"], env["PYTHONDONTWRITEBYTECODE"] = PYTHON_DIR, "1"
    out = subprocess.run([sys.executable, "-c", "import simpler; print(simpler.library_path)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == os.path.normpath(built), "the build tree comes after SIMPLER_LIBRARY"
