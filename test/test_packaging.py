"""A plain ``pip install`` lays the package out as ament_python/colcon would.

``ros2 run`` and launch_ros look for executables in ``<prefix>/lib/wbc_dynamics/``; pip ignores
setup.cfg's ``install_scripts``, so setup.py ships launchers there as data files. This test
installs the package into a temporary prefix and checks the layout and that a launcher runs.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTABLES = ("wbc_controller", "wbc_sim", "wbc_reference")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    pytest.importorskip("setuptools", reason="building the package needs setuptools")
    out = tmp_path_factory.mktemp("prefix")
    # copy the source so the build leaves no egg-info/build folders in the work tree
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True,
                           capture_output=True, text=True).stdout.split()
    for rel in files:
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes((ROOT / rel).read_bytes())
        os.chmod(dst, os.stat(ROOT / rel).st_mode)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--prefix", str(out), str(src)],
        check=True, capture_output=True, text=True,
    )
    return out


def test_executables_are_where_ros2_run_looks(prefix):
    for name in EXECUTABLES:
        exe = prefix / "lib" / "wbc_dynamics" / name
        assert exe.is_file(), f"{exe} missing"
        assert os.access(exe, os.X_OK), f"{exe} is not executable"
        assert exe.read_text().startswith("#!"), f"{exe} has no interpreter line"


def test_ament_resources_launch_and_config_are_installed(prefix):
    share = prefix / "share"
    assert (share / "ament_index" / "resource_index" / "packages" / "wbc_dynamics").is_file()
    assert (share / "wbc_dynamics" / "package.xml").is_file()
    assert (share / "wbc_dynamics" / "launch" / "wbc_controller.launch.py").is_file()
    config = {p.name for p in (share / "wbc_dynamics" / "config").iterdir()}
    assert {"quadruped.yaml", "fastdds_localhost.xml"} <= config
    assert (share / "wbc_dynamics" / "robots" / "quadruped.urdf").is_file()


def test_installed_launcher_runs_the_installed_node(prefix):
    """The launcher imports the installed package and starts the node; without a robot model it
    exits with status 1 and an error naming the missing parameters (DDS env from conftest)."""
    site = next(prefix.glob("lib/python3*/site-packages"))
    env = dict(os.environ, PYTHONPATH=str(site))
    exe = prefix / "lib" / "wbc_dynamics" / "wbc_controller"
    proc = subprocess.run([sys.executable, str(exe)], env=env, capture_output=True, text=True,
                          timeout=120, cwd=str(prefix))
    assert proc.returncode == 1, proc.stderr
    assert "robot_description/urdf_path/robot: no robot model given" in proc.stderr
