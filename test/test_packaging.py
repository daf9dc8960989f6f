"""The package installs for both audiences: Python users (``pip install .``) and ROS users
(``colcon build`` / ``colcon test``, rosdep keys in ``package.xml``).

* A plain ``pip install`` lays the package out as ament_python/colcon would: ``ros2 run`` and
  launch_ros look for executables in ``<prefix>/lib/wbc_dynamics/``; pip ignores setup.cfg's
  ``install_scripts``, so setup.py ships launchers there as data files.
* ``pip install .`` into a fresh virtual environment (no system site-packages) pulls the declared
  runtime dependencies from the package index, imports the core and runs ``wbc_info``; the
  ``[sim]`` extra installs MuJoCo.
* Every ``package.xml`` dependency is an existing rosdep key (``test/rosdep_keys.txt``, derived
  from ros/rosdistro), and every runtime requirement has its rosdep key in ``package.xml``.
* ``colcon build`` into a temporary workspace, executables found through the ament index, and
  ``colcon test`` on a small test subset.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTABLES = ("wbc_controller", "wbc_sim", "wbc_reference", "wbc_estimator")


def _copy_source(dst: Path) -> Path:
    """The tracked files of the work tree copied to ``dst`` (builds leave nothing behind here)."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True,
                           capture_output=True, text=True).stdout.split()
    for rel in files:
        if not (ROOT / rel).is_file():
            continue                           # deleted in the work tree, not yet committed
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes((ROOT / rel).read_bytes())
        os.chmod(out, os.stat(ROOT / rel).st_mode)
    return dst


def _clean_env(**extra: str) -> dict[str, str]:
    """os.environ without the shared venv and the work tree on the import path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "AMENT_PREFIX_PATH")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    pytest.importorskip("setuptools", reason="building the package needs setuptools")
    out = tmp_path_factory.mktemp("prefix")
    src = _copy_source(tmp_path_factory.mktemp("src"))
    # (the build step's kernel compilation is tested in test_startup.py: skipped here)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--prefix", str(out), str(src)],
        check=True, capture_output=True, text=True, env=dict(os.environ, WBC_PRECOMPILE="0"),
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


#: no model parameter and no robot_description topic (else the node waits for the topic)
NO_MODEL_ARGS = ("--ros-args", "-p", "robot_description_topic:=''")


def test_installed_launcher_runs_the_installed_node(prefix):
    """The launcher imports the installed package and starts the node; without a robot model (and
    without the robot_description topic) it exits with status 1 and an error naming the missing
    parameters (DDS env from conftest)."""
    site = next(prefix.glob("lib/python3*/site-packages"))
    env = dict(os.environ, PYTHONPATH=str(site))
    exe = prefix / "lib" / "wbc_dynamics" / "wbc_controller"
    proc = subprocess.run([sys.executable, str(exe), *NO_MODEL_ARGS], env=env,
                          capture_output=True, text=True, timeout=120, cwd=str(prefix))
    assert proc.returncode == 1, proc.stderr
    assert "robot_description/urdf_path/robot: no robot model given" in proc.stderr


# ------------------------------------------------------------------ pip: fresh virtual env
def _run(cmd, timeout: float, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          **kw)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_pip_install_in_a_fresh_venv_imports_the_core_runs_wbc_info_and_the_demo(tmp_path):
    """``python -m venv`` (no system site-packages) + ``pip install .`` from the package index:
    the declared dependencies suffice to import the core and load + compile a bundled robot;
    ``pip install .[sim]`` adds MuJoCo and runs the demo (``wbc_demo --short``). (~2-4 min: the
    wheels come from the index, the demo compiles its kernels cold in the venv.)"""
    venv = tmp_path / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    _run([base_python, "-m", "venv", venv], timeout=120)
    py = venv / "bin" / "python"
    src = _copy_source(tmp_path / "src")
    env = _clean_env()
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, src], timeout=900, env=env, cwd=tmp_path)
    # not importable from anywhere but the venv: no system site-packages, no work tree
    out = _run([py, "-c", "import sys, wbc_dynamics; print(wbc_dynamics.__file__); "
                "print(any('site-packages' in p and 'venv' not in p for p in sys.path))"],
               timeout=120, env=env, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(venv)), out
    assert out[1] == "False", "the fresh venv sees another site-packages"
    # the isolated build environment got the runtime requirements and compiled the kernels
    record = (Path(out[0]).parent / "_kernel_cache" / "precompiled.json").read_text()
    assert '"quadruped"' in record, record
    info = _run([venv / "bin" / "wbc_info", "arm"], timeout=600, env=env, cwd=tmp_path).stdout
    assert "RobotModel('arm', fixed base, nq=11, nv=11" in info, info
    assert "loaded and compiled" in info
    # the [sim] extra resolves and brings a working MuJoCo (and matplotlib)
    _run([*pip, f"{src}[sim]"], timeout=900, env=env, cwd=tmp_path)
    out = _run([py, "-c", "import mujoco, matplotlib; "
                "m = mujoco.MjModel.from_xml_string('<mujoco/>'); print(mujoco.__version__)"],
               timeout=120, env=env, cwd=tmp_path).stdout
    assert out.strip()[0].isdigit(), out
    # ... and runs the demo (the README's main job) from the installed console script
    demo = _run([venv / "bin" / "wbc_demo", "--short", "--quiet", "--plot", ""], timeout=900,
                env=env, cwd=tmp_path).stdout
    assert "result          : did not fall" in demo, demo


# ------------------------------------------------------------------ ROS: rosdep keys
_DEP_TAGS = ("depend", "build_depend", "build_export_depend", "exec_depend", "test_depend",
             "buildtool_depend", "doc_depend")
#: runtime requirement (requirements.txt) -> its rosdep key; None = rosdep has no key (the
#: package.xml comment says how to install it)
REQUIREMENT_KEYS = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "numba": "python3-numba",
    "osqp": None,
    "PyYAML": "python3-yaml",
}


def _package_xml_deps() -> dict[str, list[str]]:
    root = ET.parse(ROOT / "package.xml").getroot()
    return {tag: [e.text.strip() for e in root.findall(tag)] for tag in _DEP_TAGS}


def _known_rosdep_keys() -> set[str]:
    lines = (ln.strip() for ln in (ROOT / "test" / "rosdep_keys.txt").read_text().splitlines())
    return {ln for ln in lines if ln and not ln.startswith("#")}


def test_package_xml_dependencies_are_existing_rosdep_keys():
    known = _known_rosdep_keys()
    deps = _package_xml_deps()
    unknown = sorted({d for ds in deps.values() for d in ds} - known)
    assert not unknown, f"package.xml keys not in ros/rosdistro (test/rosdep_keys.txt): {unknown}"
    assert len(deps["exec_depend"]) >= 10


def test_every_runtime_requirement_has_its_rosdep_key():
    import re

    setup_reqs = [re.split(r"[<>=!~ \[;]", ln, maxsplit=1)[0]
                  for ln in (ROOT / "requirements.txt").read_text().splitlines()
                  if ln.strip() and not ln.lstrip().startswith(("#", "-"))]
    exec_deps = set(_package_xml_deps()["exec_depend"])
    missing = [r for r in setup_reqs if r not in REQUIREMENT_KEYS]
    assert not missing, f"requirements without a rosdep mapping in this test: {missing}"
    lacking = [(r, REQUIREMENT_KEYS[r]) for r in setup_reqs
               if REQUIREMENT_KEYS[r] is not None and REQUIREMENT_KEYS[r] not in exec_deps]
    assert not lacking, f"runtime requirements whose rosdep key is not an exec_depend: {lacking}"


# ------------------------------------------------------------------ ROS: colcon build / test
def test_colcon_build_ament_index_and_colcon_test(tmp_path):
    """``colcon build`` (ament_python) into a temporary workspace; the ament index finds the
    package and its executables; the installed node starts from the install space alone;
    ``colcon test`` runs a small subset and ``colcon test-result`` reports it passed."""
    pytest.importorskip("colcon_ros", reason="colcon-ros not installed (requirements-dev.txt)")
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    colcon = [sys.executable, "-m", "colcon"]
    ws = tmp_path / "ws"
    _copy_source(ws / "src" / "wbc_dynamics")
    env = dict(os.environ)
    env.pop("AMENT_PREFIX_PATH", None)
    log = ["--log-base", ws / "log"]
    _run([*colcon, *log, "build", "--base-paths", "src", "--event-handlers", "console_direct-"],
         timeout=1200, env=env, cwd=ws)  # its build step compiles the kernels (minutes)
    install = ws / "install" / "wbc_dynamics"
    old = os.environ.get("AMENT_PREFIX_PATH")
    os.environ["AMENT_PREFIX_PATH"] = str(install)
    try:
        prefix = Path(get_package_prefix("wbc_dynamics"))
        share = Path(get_package_share_directory("wbc_dynamics"))
    finally:
        if old is None:
            del os.environ["AMENT_PREFIX_PATH"]
        else:
            os.environ["AMENT_PREFIX_PATH"] = old
    assert prefix == install and (share / "package.xml").is_file()
    libexec = prefix / "lib" / "wbc_dynamics"
    found = {p.name for p in libexec.iterdir() if os.access(p, os.X_OK)}
    assert {*EXECUTABLES, "wbc_info"} <= found, found
    site = next(install.glob("lib/python3*/site-packages"))
    run_env = dict(env, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(install))
    # the installed node starts from the install space alone (no robot given: it says so and
    # exits 1 before compiling anything; wbc_info's compile is covered by the fresh-venv test)
    proc = subprocess.run([sys.executable, libexec / "wbc_controller", *NO_MODEL_ARGS], env=run_env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "robot_description/urdf_path/robot: no robot model given" in proc.stderr
    out = _run([sys.executable, "-c", "import wbc_dynamics; print(wbc_dynamics.__file__)"],
               timeout=60, env=run_env, cwd=tmp_path).stdout
    assert out.strip().startswith(str(site)), out
    record = (site / "wbc_dynamics" / "_kernel_cache" / "precompiled.json").read_text()
    assert '"quadruped"' in record, record  # the build step compiled into the install space
    _run([*colcon, *log, "test", "--base-paths", "src", "--event-handlers", "console_direct-",
          "--pytest-args", "test/test_ros_conversions.py"], timeout=600, env=env, cwd=ws)
    res = subprocess.run([*colcon, "test-result", "--test-result-base", ws / "build"],
                         capture_output=True, text=True, timeout=120, cwd=ws)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = res.stdout.strip().splitlines()[-1]
    assert " 0 errors, 0 failures" in summary, summary
    ntests = int(summary.split(":")[1].split()[0])
    assert ntests >= 8, summary
