"""launch_testing for the launch tests (``test/test_launch_*.py``), or a skip of the importing
test module with the reason: launch_testing is not on PyPI (it comes with the ROS 2
launch_testing / launch_testing_ros packages); every launch test's scenarios also run without it
(its docstring says where).

A launch test imports this module before rclpy: it calls
:func:`ros_test_env.configure_ros_test_env` (``launch_test`` runs a test file without
``conftest.py``), then::

    from launch_test_env import launch_test_description, launch_testing
"""

from __future__ import annotations

import os

import pytest
from ros_test_env import configure_ros_test_env

configure_ros_test_env()

try:
    import launch
    import launch_testing
    import launch_testing.actions
    import launch_testing.asserts
    from launch.launch_description_sources import PythonLaunchDescriptionSource
except ImportError as exc:  # pragma: no cover - depends on the ROS installation
    pytest.skip(f"launch_testing is not importable ({exc}); it is not on PyPI -- install the ROS 2 "
                "launch_testing / launch_testing_ros packages to run this test. Its scenarios "
                "also run without launch_testing (see the module's docstring).",
                allow_module_level=True)

__all__ = ["PythonLaunchDescriptionSource", "REPO", "launch", "launch_test_description",
           "launch_testing"]

#: the repository's root (``launch/``, ``config/``)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch_test_description(launch_file: str, arguments: dict[str, str]):
    """What a launch test's ``generate_test_description`` returns: ``launch/<launch_file>``
    included with the launch ``arguments``, then ReadyToTest (no test context)."""
    include = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(REPO, "launch", launch_file)),
        launch_arguments=arguments.items(),
    )
    return launch.LaunchDescription([include, launch_testing.actions.ReadyToTest()]), {}
