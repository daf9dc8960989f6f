"""Shared pytest configuration.

Importing this file (pytest does so before importing any test module) confines DDS to this
machine and gives the run a private ROS domain -- see ``test/ros_test_env.py``. Any test that
starts rclpy or a ROS process relies on it; the ``ros_env`` fixture exposes the values.
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ros_test_env import configure_ros_test_env  # noqa: E402

_ROS_ENV = configure_ros_test_env()


@pytest.fixture(scope="session")
def ros_env() -> dict[str, str]:
    """The DDS environment of this test session (already in ``os.environ``)."""
    assert "rclpy" not in sys.modules or os.environ["ROS_DOMAIN_ID"] == _ROS_ENV["ROS_DOMAIN_ID"]
    return dict(_ROS_ENV)


def pytest_sessionfinish(session, exitstatus) -> None:
    """Free what the in-process tests' rclpy contexts left for the collector (a node's
    configure freezes the heap: gc.freeze), so their DDS participants are deleted before the
    interpreter exits and Fast DDS removes their shared-memory files."""
    import gc

    gc.unfreeze()
    gc.collect()
