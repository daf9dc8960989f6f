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

It also removes the zombie Fast DDS shared-memory files of processes that died without deleting
their participant (:func:`remove_zombie_fastdds_shm`): a later participant of the same domain
reuses the port numbers, and a zombie port is a known way for Fast DDS peers to discover each
other and never receive data.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator

PROFILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config",
                       "fastdds_localhost.xml")

_ENV_KEY = "WBC_TEST_ROS_ENV_DONE"

SHM_DIR = "/dev/shm"
# the lock file Fast DDS holds (flock) beside each shared-memory segment / port it has open
_FASTDDS_LOCK = re.compile(r"^fastdds_([0-9a-z]{16}|port\d{1,5})_(el|sl)$")


@contextlib.contextmanager
def _unheld_lock(lock: str) -> Iterator[bool]:
    """Take the lock file ``lock`` without waiting: yields True (and holds it for the block) if
    nobody held it -- its owner is gone -- else False."""
    try:
        fd = open(lock, "ab")
    except OSError:  # vanished, or not ours
        yield False
        return
    with fd:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live participant
            yield False
            return
        yield True


def fastdds_shm_locked_by(pid: int) -> list[str]:
    """Names of the Fast DDS shared-memory segments and ports (in ``/dev/shm``) whose lock file
    the process ``pid`` holds (``/proc/locks``): the ones its participants have open."""
    inodes = set()
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            # "1: FLOCK  ADVISORY  WRITE 10300 00:1b:806628 0 EOF" (blocked waiters: "->")
            if len(parts) >= 6 and parts[1] == "FLOCK" and parts[4] == str(pid):
                inodes.add(int(parts[5].rsplit(":", 1)[1]))
    names = []
    for name in sorted(os.listdir(SHM_DIR)) if os.path.isdir(SHM_DIR) else ():
        if _FASTDDS_LOCK.match(name):
            try:
                if os.stat(os.path.join(SHM_DIR, name)).st_ino in inodes:
                    names.append(name[:-3])
            except FileNotFoundError:
                pass
    return names


def fastdds_shm_zombie(name: str) -> bool:
    """Whether the Fast DDS shared-memory file ``name`` (segment or port) exists with nobody
    holding its lock ``<name>_el`` any more."""
    lock = os.path.join(SHM_DIR, name + "_el")
    if not os.path.exists(os.path.join(SHM_DIR, name)) or not os.path.exists(lock):
        return False
    with _unheld_lock(lock) as unheld:
        return unheld


def remove_zombie_fastdds_shm() -> int:
    """Remove the Fast DDS shared-memory segments and ports whose owner died (what ``fastdds shm
    clean`` does): a file's lock ``<name>_el`` that nobody holds any more marks a zombie; it is
    removed with its ``sem.<name>_mutex``. Returns the number removed."""
    removed = 0
    for name in sorted(os.listdir(SHM_DIR)) if os.path.isdir(SHM_DIR) else ():
        if not _FASTDDS_LOCK.match(name):
            continue
        with _unheld_lock(os.path.join(SHM_DIR, name)) as unheld:
            if not unheld:
                continue
            # still holding the lock: no participant can open the file meanwhile
            for victim in (name[:-3], name, f"sem.{name[:-3]}_mutex"):
                try:
                    os.remove(os.path.join(SHM_DIR, victim))
                except FileNotFoundError:
                    pass
            removed += 1
    return removed


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
    remove_zombie_fastdds_shm()
    return env
