"""Conversions between ROS 2 messages and the controller's flat arrays (no rclpy import here).

The parsers work on any object with the message's fields (duck typing), so they are unit-testable
without ROS. They never raise anything but :class:`ValueError`, whose message names the field and
joint at fault; the node logs it (throttled) and drops the message.
"""

from __future__ import annotations

import array
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "JointStateParser",
    "ReferenceParser",
    "float64_view",
    "odometry_to_base",
    "preallocated_float64",
]


def preallocated_float64(msg: Any, field: str, n: int) -> np.ndarray:
    """Give ``msg.<field>`` (a float64[] field) n zeros and return a writable numpy view of the
    array the message now holds: fill the view, publish many times without allocating.

    (rclpy's setter copies the assigned ``array.array``, so the view is taken after assignment.)
    """
    setattr(msg, field, array.array("d", bytes(8 * n)))
    view = np.frombuffer(getattr(msg, field), dtype=np.float64)
    view[:] = 0.0
    return view


def float64_view(seq: Any) -> np.ndarray:
    """Zero-copy float64 view of an rclpy float64[] field (array.array 'd'); else a copy."""
    if isinstance(seq, array.array) and seq.typecode == "d":
        if len(seq) == 0:
            return np.zeros(0)
        return np.frombuffer(seq, dtype=np.float64)
    return np.asarray(seq, dtype=np.float64).reshape(-1)


class _NameMatcher:
    """Maps a message's joint-name list to the configured joint order, cached by name list."""

    def __init__(self, joints: Sequence[str], what: str) -> None:
        self.joints = list(joints)
        self.what = what
        self._last_names: list[str] | None = None
        self._perm = np.zeros(len(self.joints), dtype=np.int64)

    def permutation(self, names: Sequence[str]) -> np.ndarray:
        """Indices into the message arrays of the configured joints (in configured order)."""
        if self._last_names is not None and names == self._last_names:
            return self._perm
        index: dict[str, int] = {}
        for i, nm in enumerate(names):
            if nm in index:
                raise ValueError(f"{self.what}.name: joint '{nm}' appears twice")
            index[nm] = i
        perm = np.empty(len(self.joints), dtype=np.int64)
        for k, j in enumerate(self.joints):
            i = index.get(j)
            if i is None:
                raise ValueError(f"{self.what}.name: configured joint '{j}' is missing")
            perm[k] = i
        self._perm = perm
        self._last_names = list(names)
        return perm


class JointStateParser:
    """sensor_msgs/JointState -> (position, velocity) in the configured joint order.

    Joints are matched by name in any order; extra joints are ignored. A missing configured joint,
    a ``position``/``velocity`` length different from ``name``, or a non-finite value of a
    configured joint raises ValueError naming it. Outputs are this object's buffers (overwritten
    by the next call).
    """

    def __init__(self, joints: Sequence[str]) -> None:
        self.joints = list(joints)
        self._match = _NameMatcher(joints, "joint_states")
        n = len(self.joints)
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)

    def parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray]:
        names = msg.name
        nn = len(names)
        if len(msg.position) != nn:
            raise ValueError(
                f"joint_states.position: length {len(msg.position)} != length of name {nn}"
            )
        if len(msg.velocity) != nn:
            raise ValueError(
                f"joint_states.velocity: length {len(msg.velocity)} != length of name {nn}"
            )
        perm = self._match.permutation(names)
        np.take(float64_view(msg.position), perm, out=self.position)
        np.take(float64_view(msg.velocity), perm, out=self.velocity)
        for field_name, arr in (("position", self.position), ("velocity", self.velocity)):
            s = float(arr.sum())
            if not math.isfinite(s):
                bad = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise ValueError(
                    f"joint_states.{field_name}: non-finite value "
                    f"{float(arr[bad])!r} for joint '{self.joints[bad]}'"
                )
        return self.position, self.velocity


class ReferenceParser:
    """trajectory_msgs/JointTrajectory -> (qdd_des, q_des | None, qd_des | None), configured order.

    The message carries one point (``points[0]`` is used) whose ``accelerations`` are required and
    whose ``positions``/``velocities`` are optional (empty = no Kp / Kd feedback term). Every
    configured joint must be named.
    """

    def __init__(self, joints: Sequence[str]) -> None:
        self.joints = list(joints)
        self._match = _NameMatcher(joints, "reference")
        n = len(self.joints)
        self.acceleration = np.zeros(n)
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)

    def parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        if len(msg.points) < 1:
            raise ValueError("reference.points: empty (one point with accelerations required)")
        pt = msg.points[0]
        names = msg.joint_names
        nn = len(names)
        if len(pt.accelerations) != nn:
            raise ValueError(
                f"reference.points[0].accelerations: length {len(pt.accelerations)}"
                f" != length of joint_names {nn}"
            )
        for fname in ("positions", "velocities"):
            ln = len(getattr(pt, fname))
            if ln not in (0, nn):
                raise ValueError(
                    f"reference.points[0].{fname}: length {ln} must be 0 or "
                    f"{nn} (length of joint_names)"
                )
        perm = self._match.permutation(names)
        np.take(float64_view(pt.accelerations), perm, out=self.acceleration)
        pos = vel = None
        if len(pt.positions):
            np.take(float64_view(pt.positions), perm, out=self.position)
            pos = self.position
        if len(pt.velocities):
            np.take(float64_view(pt.velocities), perm, out=self.velocity)
            vel = self.velocity
        for fname, arr in (
            ("accelerations", self.acceleration),
            ("positions", pos),
            ("velocities", vel),
        ):
            if arr is not None and not math.isfinite(float(arr.sum())):
                bad = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise ValueError(
                    f"reference.points[0].{fname}: non-finite value "
                    f"{float(arr[bad])!r} for joint '{self.joints[bad]}'"
                )
        return self.acceleration, pos, vel


def odometry_to_base(msg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """nav_msgs/Odometry -> (position (3,), quaternion xyzw (4,), linear (3,), angular (3,)).

    Pose in the ``header.frame_id`` (world/odom) frame; twist in ``child_frame_id`` (the base
    frame), as the message definition prescribes, which is the core's free-flyer ``v``
    convention. Raises ValueError for non-finite values or a quaternion far from unit norm.
    """
    p = msg.pose.pose.position
    o = msg.pose.pose.orientation
    lv = msg.twist.twist.linear
    av = msg.twist.twist.angular
    pos = np.array((p.x, p.y, p.z))
    quat = np.array((o.x, o.y, o.z, o.w))
    lin = np.array((lv.x, lv.y, lv.z))
    ang = np.array((av.x, av.y, av.z))
    for nm, arr in (
        ("pose.pose.position", pos),
        ("pose.pose.orientation", quat),
        ("twist.twist.linear", lin),
        ("twist.twist.angular", ang),
    ):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"odom.{nm}: contains a non-finite value")
    nq = float(np.sqrt(quat @ quat))
    if abs(nq - 1.0) > 1e-3:
        raise ValueError(f"odom.pose.pose.orientation: quaternion norm {nq:.6g} is not 1")
    return pos, quat, lin, ang
