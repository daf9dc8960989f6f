"""ament_python package set-up for wbc_dynamics.

Executables live in ``<prefix>/lib/wbc_dynamics/`` (where ``ros2 run`` and launch_ros look) both
after ``colcon build`` (setup.cfg's ``install_scripts``) and after a plain ``pip install`` (which
ignores setup.cfg, so the launchers in ``scripts/lib/`` are shipped there as data files too).

Dependencies are declared once, in the requirements files, and read here: ``requirements.txt``
(runtime of the core and the node's computations: ``pip install .``), extras ``[sim]``
(``requirements-sim.txt``: MuJoCo plant, demo plots), ``[test]`` (``[sim]`` +
``requirements-test.txt``) and ``[ros]`` (``requirements-ros.txt``: rclpy and the message packages
as wheels, for a machine without a ROS install). ROS users get the same dependencies through the
rosdep keys of ``package.xml``.

The build compiles the kernels of the shipped configurations into the built package
(:class:`BuildPyPrecompiled`), so an installed package starts in seconds, not minutes: numba's
cache of the package is content-keyed and kept in the package (``wbc_dynamics.kernel_cache``),
so the copy pip or colcon installs loads it. A PEP 517 build (``pip install .``, ``pip wheel``)
gets the runtime requirements into its isolated build environment for that; ``WBC_PRECOMPILE=0``
skips the step.
"""

import os
import subprocess
import sys
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

PACKAGE = "wbc_dynamics"
HERE = Path(__file__).resolve().parent


def requirements(name: str) -> list[str]:
    """Requirement specifiers in ``name`` (comments, blank lines, ``-r`` includes skipped)."""
    lines = (ln.split("#", 1)[0].strip() for ln in (HERE / name).read_text().splitlines())
    return [ln for ln in lines if ln and not ln.startswith("-")]


SIM = requirements("requirements-sim.txt")


class BuildPyPrecompiled(build_py):
    """``build_py``, then ``wbc_info --precompile-shipped`` on the built package (its kernel
    cache directory is installed with it). Never fails the build: without numba in the build
    environment, or if compiling fails, the kernels compile at the first start as before."""

    def run(self) -> None:
        super().run()
        if os.environ.get("WBC_PRECOMPILE", "1") == "0" or self.dry_run:
            return
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.abspath(self.build_lib), env.get("PYTHONPATH", "")) if p)
        print("wbc_dynamics: compiling the kernels of the shipped configurations (a few minutes "
              "on 2 cores; WBC_PRECOMPILE=0 skips)", flush=True)
        code = subprocess.call(
            [sys.executable, "-m", f"{PACKAGE}.info", "--precompile-shipped", "--config-dir",
             str(HERE / "config")], env=env, cwd=self.build_lib)
        if code:
            print(f"wbc_dynamics: precompiling skipped (exit code {code}); the first start "
                  "compiles instead", flush=True)


# the isolated environment of a PEP 517 build (setuptools.build_meta runs this file) needs the
# runtime requirements to compile; `python setup.py ...` (colcon) runs where they are installed
BUILD_REQUIRES = requirements("requirements.txt") if "setuptools.build_meta" in sys.modules else []

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    package_data={PACKAGE: ["robots/*.urdf", "robots/*.xml", "robots/*.json"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml")),
        (f"share/{PACKAGE}/config/robots", glob("config/robots/*.yaml")),
        (f"share/{PACKAGE}/robots", glob(f"{PACKAGE}/robots/*.urdf")),
        (f"lib/{PACKAGE}", glob("scripts/lib/*")),
    ],
    python_requires=">=3.10",
    # setuptools: the console scripts colcon's ament_python build writes import pkg_resources
    install_requires=["setuptools", *requirements("requirements.txt")],
    extras_require={
        "sim": SIM,
        "test": SIM + requirements("requirements-test.txt"),
        "ros": requirements("requirements-ros.txt"),
    },
    setup_requires=BUILD_REQUIRES,
    cmdclass={"build_py": BuildPyPrecompiled},
    zip_safe=False,
    maintainer="wbc_dynamics maintainers",
    maintainer_email="wbc-dynamics@example.com",
    description="Whole-body control with contact-aware inverse dynamics for ROS 2.",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            f"wbc_controller = {PACKAGE}.node:main",
            f"wbc_estimator = {PACKAGE}.estimator_node:main",
            f"wbc_sim = {PACKAGE}.sim.sim_node:main",
            f"wbc_reference = {PACKAGE}.sim.references:main",
            f"wbc_demo = {PACKAGE}.sim.demo:main",
            f"wbc_experiments = {PACKAGE}.sim.experiments:main",
            f"wbc_info = {PACKAGE}.info:main",
        ],
    },
)
