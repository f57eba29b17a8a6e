"""The README's Python example and examples/python/vector.py, executed."""
import os
import re
import subprocess
import sys

from helpers import BUILD_DIR, PYTHON_DIR, SOURCE_DIR, path


def _env():
    return dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1")


def test_the_readmes_python_example_runs(tmp_path):
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        blocks = re.findall(r"^```python\n(.*?)^```$", f.read(), re.S | re.M)
    assert len(blocks) == 1, "README.md has one ```python block, the example"
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0])
    # The example names the objects as a checkout's build/ holds them.
    os.symlink(BUILD_DIR, tmp_path / "build")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, "the README example failed:\n" + out.stderr
    assert out.stdout == "simpler %s from Python: both modes exact\n" % _version(), out.stdout


def test_the_python_vector_example_is_exact_in_both_modes():
    script = os.path.join(SOURCE_DIR, "examples", "python", "vector.py")
    out = subprocess.run([sys.executable, script, path("VECTOR_ORCH_SO"), path("VECTOR_KERNELS_SO")],
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all("check OK" in line for line in lines), out.stdout
    assert "exact: 0 of 16384 elements wrong, 6 edges" in lines[0]


def test_the_python_cluster_example_is_exact_against_one_device():
    script = os.path.join(SOURCE_DIR, "examples", "python", "cluster.py")
    out = subprocess.run([sys.executable, script, path("MATMUL_ORCH_SO"), path("MATMUL_KERNELS_SO"),
                          path("CHOL_ORCH_SO"), path("CHOL_KERNELS_SO")],
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stdout
    # 4 row bands of 4 members; 20 tile operations of the 4 x 4 tiled Cholesky.
    assert lines[0].startswith("matmul    cluster of 4 devices: 4 tasks, 16 runs, "), lines[0]
    assert "exact against one device: 0 of 65536 elements differ" in lines[0], lines[0]
    assert lines[1].startswith("Cholesky  cluster of 4 devices: 20 tasks, 20 runs, "), lines[1]
    assert "exact against one device: 0 of 10240 elements differ" in lines[1], lines[1]


def _version():
    import simpler
    return simpler.__version__
