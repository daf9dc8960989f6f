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
"""

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "wbc_dynamics"
HERE = Path(__file__).resolve().parent


def requirements(name: str) -> list[str]:
    """Requirement specifiers in ``name`` (comments, blank lines, ``-r`` includes skipped)."""
    lines = (ln.split("#", 1)[0].strip() for ln in (HERE / name).read_text().splitlines())
    return [ln for ln in lines if ln and not ln.startswith("-")]


SIM = requirements("requirements-sim.txt")

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    package_data={PACKAGE: ["robots/*.urdf", "robots/*.xml"]},
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
