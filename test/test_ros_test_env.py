"""The test environment's Fast DDS shared-memory bookkeeping (test/ros_test_env.py): a zombie
(its lock file held by nobody) is removed with its lock and mutex, a live one is left alone, and
the files a process holds are found through /proc/locks."""

from __future__ import annotations

import fcntl
import os
import uuid

import pytest
from ros_test_env import (
    SHM_DIR,
    fastdds_shm_locked_by,
    fastdds_shm_zombie,
    remove_zombie_fastdds_shm,
)

pytestmark = pytest.mark.skipif(not os.path.isdir(SHM_DIR), reason=f"no {SHM_DIR}")


def _files(name: str) -> list[str]:
    paths = [os.path.join(SHM_DIR, f) for f in (name, name + "_el", f"sem.{name}_mutex")]
    for p in paths:
        with open(p, "wb"):
            pass
    return paths


def test_zombie_files_removed_live_ones_kept_and_found_by_their_holder():
    zombie = _files("fastdds_" + uuid.uuid4().hex[:16])
    # a port number no participant uses (Fast DDS's start at 7000)
    live = _files(f"fastdds_port{1000 + os.getpid() % 6000}")
    try:
        with open(live[1], "ab") as held:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live participant's lock
            assert fastdds_shm_zombie(os.path.basename(zombie[0]))
            assert not fastdds_shm_zombie(os.path.basename(live[0]))
            # (this process may hold other participants' files: rclpy tests run in it)
            assert os.path.basename(live[0]) in fastdds_shm_locked_by(os.getpid())
            assert os.path.basename(zombie[0]) not in fastdds_shm_locked_by(os.getpid())
            removed = remove_zombie_fastdds_shm()
            assert [os.path.exists(p) for p in zombie] == [False, False, False]
            assert [os.path.exists(p) for p in live] == [True, True, True]
            assert removed >= 1
        assert os.path.basename(live[0]) not in fastdds_shm_locked_by(os.getpid())
    finally:
        for p in zombie + live:
            if os.path.exists(p):
                os.remove(p)
