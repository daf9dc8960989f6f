"""Keep every DDS participant started by the tests on this machine, in a private domain.

:func:`configure_ros_test_env` must run before ``rclpy`` is imported anywhere in the process (the
RMW reads the variables when the first context is initialised). ``test/conftest.py`` calls it at
import time, i.e. before pytest imports any test module; launch_testing files (which ``launch_test``
runs without conftest) call it at the top of the file. Child processes inherit ``os.environ``.

* ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` -- discovery only on this host;
* ``FASTDDS_DEFAULT_PROFILES_FILE`` -- the shipped ``config/fastdds_localhost.xml`` (SHM and UDPv4
  on 127.0.0.1 only);
* ``ROS_DOMAIN_ID`` -- unique per test run, derived from the pid (1..200), so concurrent runs and
  other ROS systems on the machine never cross-talk. ``WBC_TEST_ROS_DOMAIN_ID`` forces a value.
"""

from __future__ import annotations

import os

PROFILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config",
                       "fastdds_localhost.xml")

_ENV_KEY = "WBC_TEST_ROS_ENV_DONE"


def configure_ros_test_env() -> dict[str, str]:
    """Set the localhost-only DDS environment in ``os.environ`` (idempotent per process tree).

    Returns the variables that were set.
    """
    if os.environ.get(_ENV_KEY) == "1" and "ROS_DOMAIN_ID" in os.environ:
        return {k: os.environ[k] for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE",
                                           "FASTDDS_DEFAULT_PROFILES_FILE", "ROS_DOMAIN_ID")}
    if not os.path.isfile(PROFILE):
        raise FileNotFoundError(f"Fast DDS profile missing: {PROFILE}")
    forced = os.environ.get("WBC_TEST_ROS_DOMAIN_ID")
    domain = int(forced) if forced else 1 + os.getpid() % 200
    env = {
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "FASTDDS_DEFAULT_PROFILES_FILE": PROFILE,
        "ROS_DOMAIN_ID": str(domain),
        "RMW_IMPLEMENTATION": os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"),
    }
    os.environ.update(env)
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    os.environ[_ENV_KEY] = "1"
    return env
