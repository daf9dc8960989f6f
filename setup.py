"""ament_python package set-up for wbc_dynamics.

Executables live in ``<prefix>/lib/wbc_dynamics/`` (where ``ros2 run`` and launch_ros look) both
after ``colcon build`` (setup.cfg's ``install_scripts``) and after a plain ``pip install`` (which
ignores setup.cfg, so the launchers in ``scripts/lib/`` are shipped there as data files too).
"""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "wbc_dynamics"

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
        (f"share/{PACKAGE}/robots", glob(f"{PACKAGE}/robots/*.urdf")),
        (f"lib/{PACKAGE}", glob("scripts/lib/*")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="wbc_dynamics maintainers",
    maintainer_email="wbc-dynamics@example.com",
    description="Whole-body control with contact-aware inverse dynamics for ROS 2.",
    license="BSD-3-Clause",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            f"wbc_controller = {PACKAGE}.node:main",
            f"wbc_sim = {PACKAGE}.sim.sim_node:main",
            f"wbc_reference = {PACKAGE}.sim.references:main",
            f"wbc_demo = {PACKAGE}.sim.demo:main",
            f"wbc_experiments = {PACKAGE}.sim.experiments:main",
            f"wbc_info = {PACKAGE}.info:main",
        ],
    },
)
