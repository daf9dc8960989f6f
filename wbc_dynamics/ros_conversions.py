"""Conversions between ROS 2 messages and the controller's flat arrays (no rclpy import here).

This is the one validated conversion path of every message the controller node takes in. The
parsers work on any object with the message's fields (duck typing), so they are unit-testable
without ROS. They never raise anything but :class:`InputError` (a :class:`ValueError`) whose
message names the field and joint at fault and whose ``reason`` is a short key the node counts in
``/diagnostics``; the node logs it (throttled) and drops the message.

Bounds (``docs/node.md``, "Input validation"): a value is accepted only if it is finite and

* joint position: within the URDF limits widened by ``POSITION_LIMIT_MARGIN_FRACTION`` of the
  range plus ``POSITION_LIMIT_MARGIN`` (rad or m), or ``|q| <= MAX_UNLIMITED_POSITION`` for a joint
  without (or with degenerate) limits, e.g. a continuous wheel;
* joint / base velocity: ``|v| <= MAX_VELOCITY`` (rad/s or m/s);
* reference acceleration: ``|qdd| <= MAX_ACCELERATION`` (rad/s^2 or m/s^2);
* base position: ``|p_i| <= MAX_BASE_POSITION`` (m);
* base orientation: a quaternion with ``| |q| - 1 | <= QUATERNION_NORM_TOLERANCE`` is renormalised
  (counted by :class:`OdometryParser` when the deviation exceeds ``QUATERNION_NORM_SILENT``), a
  larger deviation is rejected;
* IMU (:class:`ImuParser`): angular rate ``|w_i| <= MAX_IMU_ANGULAR_RATE`` (rad/s), specific force
  ``|f_i| <= MAX_IMU_ACCELERATION`` (m/s^2), orientation as the base orientation; a field the
  message marks as not provided (REP 145: its covariance's element 0 is -1) is rejected when the
  estimator needs it;
* announced contact lift-off (:func:`contact_lift_off_in`): a time >= 0 (s), or ``+inf`` for
  none.
"""

from __future__ import annotations

import array
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

__all__ = [
    "CDR_LITTLE_ENDIAN",
    "IMU_CDR_DOUBLES",
    "ImuParser",
    "InputError",
    "JointStateParser",
    "MAX_ACCELERATION",
    "MAX_BASE_POSITION",
    "MAX_IMU_ACCELERATION",
    "MAX_IMU_ANGULAR_RATE",
    "MAX_UNLIMITED_POSITION",
    "MAX_VELOCITY",
    "ODOMETRY_CDR_DOUBLES",
    "OdometryParser",
    "POSITION_LIMIT_MARGIN",
    "POSITION_LIMIT_MARGIN_FRACTION",
    "QUATERNION_NORM_TOLERANCE",
    "ReferenceParser",
    "contact_lift_off_in",
    "contact_schedule_swing_links",
    "float64_view",
    "imu_cdr_numbers",
    "imu_sample_time",
    "joint_position_bounds",
    "odometry_cdr_numbers",
    "odometry_to_base",
    "preallocated_float64",
]

#: Accepted excursion beyond a joint's URDF limits: this fraction of the range plus
#: POSITION_LIMIT_MARGIN. Simulators with soft limits and encoders overshoot by far less; a
#: larger excursion means a wrong joint mapping, a broken sensor or a wrong model.
POSITION_LIMIT_MARGIN_FRACTION = 0.1
#: (rad or m), see POSITION_LIMIT_MARGIN_FRACTION.
POSITION_LIMIT_MARGIN = 0.1
#: ``|q|`` bound of joints without limits [rad or m]. A continuous joint may wind up (a wheel at
#: 100 rad/s reaches it after 115 days); beyond it the float64 spacing exceeds 1e-7 rad.
MAX_UNLIMITED_POSITION = 1e9
#: ``|v|`` bound of joint and base velocities [rad/s or m/s] (95 000 rpm: above any actuator).
MAX_VELOCITY = 1e4
#: ``|qdd|`` bound of reference accelerations [rad/s^2 or m/s^2]. Larger values only saturate every
#: joint at its effort limit; they are an upstream bug, not a command.
MAX_ACCELERATION = 1e6
#: ``|p_i|`` bound of the base position [m] (1000 km; float64 spacing there is 1e-10 m).
MAX_BASE_POSITION = 1e6
#: ``|w_i|`` bound of an IMU's angular rate [rad/s] (5700 deg/s: above any MEMS gyro's range).
MAX_IMU_ANGULAR_RATE = 100.0
#: ``|f_i|`` bound of an IMU's specific force [m/s^2] (100 g: above a legged robot's impacts as a
#: MEMS accelerometer's range measures them).
MAX_IMU_ACCELERATION = 1000.0
#: Base quaternions within this distance of unit norm are renormalised, beyond it rejected.
QUATERNION_NORM_TOLERANCE = 1e-3
#: Renormalisations larger than this (float32 round-off) are counted by OdometryParser.
QUATERNION_NORM_SILENT = 1e-6


class InputError(ValueError):
    """A message (or one of its fields) the controller cannot use.

    ``reason`` is a short key counted per topic in ``/diagnostics``: ``size``, ``missing_joint``,
    ``duplicate_joint``, ``non_finite``, ``out_of_range``, ``empty``, ``quaternion_norm``,
    ``bad_value``, ``malformed`` (a serialized message that cannot be read: shorter than its
    own lengths, a name not UTF-8, or rejected by the rmw's deserializer); the message
    (``str(exc)``) names the field and joint or link.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@njit(cache=True)
def _first_outside(x, lower, upper):
    """Index of the first element not in [lower[i], upper[i]] (NaN included), -1 if none.

    One pass, no allocation, no reduction that could overflow (a sum of -1e308s is -inf: that
    sum-based check found "a non-finite value" and then no non-finite element)."""
    for i in range(x.shape[0]):
        xi = x[i]
        if not (lower[i] <= xi <= upper[i]):
            return i
    return -1


def _check_range(
    x: np.ndarray, lower: np.ndarray, upper: np.ndarray, field: str, names: Sequence[str],
    unit: str, kind: str = "joint",
) -> None:
    """Raise InputError naming ``field`` and the joint/axis if some x[i] is outside its bound."""
    bad = int(_first_outside(x, lower, upper))
    if bad < 0:
        return
    v = float(x[bad])
    who = f"{kind} '{names[bad]}'"
    if not math.isfinite(v):
        raise InputError("non_finite", f"{field}: non-finite value {v!r} for {who}")
    raise InputError(
        "out_of_range",
        f"{field}: value {v!r} for {who} outside the accepted range "
        f"[{float(lower[bad]):.6g}, {float(upper[bad]):.6g}] {unit}",
    )


def joint_position_bounds(
    position_lower: Sequence[float] | None, position_upper: Sequence[float] | None, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Accepted joint position interval per joint (see the module docstring).

    Args:
        position_lower, position_upper: URDF limits [rad or m] per joint (inf / None = none).
        n: number of joints.
    """
    lo = np.full(n, -MAX_UNLIMITED_POSITION)
    hi = np.full(n, MAX_UNLIMITED_POSITION)
    if position_lower is None or position_upper is None:
        return lo, hi
    pl = np.asarray(position_lower, dtype=np.float64).reshape(-1)
    pu = np.asarray(position_upper, dtype=np.float64).reshape(-1)
    if pl.shape[0] != n or pu.shape[0] != n:
        raise ValueError(f"joint limits: expected {n} values, got {pl.shape[0]} / {pu.shape[0]}")
    # degenerate limits (upper <= lower, e.g. 0 0 on a joint some vendor URDFs declare
    # revolute but use as continuous) carry no information: magnitude bound only
    has = np.isfinite(pl) & np.isfinite(pu) & (pu > pl)
    margin = POSITION_LIMIT_MARGIN_FRACTION * (pu - pl) + POSITION_LIMIT_MARGIN
    lo[has] = np.maximum(pl[has] - margin[has], -MAX_UNLIMITED_POSITION)
    hi[has] = np.minimum(pu[has] + margin[has], MAX_UNLIMITED_POSITION)
    return lo, hi


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
                raise InputError("duplicate_joint", f"{self.what}: joint '{nm}' appears twice")
            index[nm] = i
        perm = np.empty(len(self.joints), dtype=np.int64)
        for k, j in enumerate(self.joints):
            i = index.get(j)
            if i is None:
                raise InputError(
                    "missing_joint", f"{self.what}: configured joint '{j}' is missing"
                )
            perm[k] = i
        self._perm = perm
        self._last_names = list(names)
        return perm


def _gather(seq: Any, perm: np.ndarray, out: np.ndarray, field: str) -> None:
    """out[k] = seq[perm[k]] as float64 (InputError if the field holds no numbers)."""
    try:
        np.take(float64_view(seq), perm, out=out)
    except (TypeError, ValueError) as exc:
        raise InputError("bad_value", f"{field}: not an array of numbers ({exc})") from None


def _check_length(field: str, values: Any, names_field: str, nn: int, optional: bool) -> None:
    ln = len(values)
    if ln == nn or (optional and ln == 0):
        return
    if optional:
        msg = f"{field}: length {ln} must be 0 or {nn} (length of {names_field})"
    else:
        msg = f"{field}: length {ln} != length of {names_field} {nn}"
    raise InputError("size", msg)


class _JointMessageParser:
    """Shared set-up of the per-joint parsers: name matching, position and velocity bounds."""

    _names_field = ""

    def __init__(
        self,
        joints: Sequence[str],
        position_lower: Sequence[float] | None = None,
        position_upper: Sequence[float] | None = None,
    ) -> None:
        self.joints = list(joints)
        self._match = _NameMatcher(joints, self._names_field)
        n = len(self.joints)
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self.position_bounds = joint_position_bounds(position_lower, position_upper, n)
        self.velocity_bounds = (np.full(n, -MAX_VELOCITY), np.full(n, MAX_VELOCITY))
        self._add_buffers(n)
        _first_outside(self.position, *self.position_bounds)  # compile / load at start-up

    def _add_buffers(self, n: int) -> None:
        """The buffers and bounds of a parser's further per-joint fields (``n`` joints)."""


class JointStateParser(_JointMessageParser):
    """sensor_msgs/JointState -> (position, velocity) in the configured joint order.

    Joints are matched by name in any order; extra joints are ignored (not validated). A missing
    or duplicated configured joint, a ``position``/``velocity`` length different from ``name``,
    or a value of a configured joint that is non-finite or outside its bound (module docstring)
    raises :class:`InputError` naming the field and joint. Outputs are this object's buffers
    (overwritten by the next call).

    Args:
        joints: configured joint order.
        position_lower, position_upper: URDF limits per configured joint [rad or m] (None: only
            the magnitude bound ``MAX_UNLIMITED_POSITION``).
    """

    _names_field = "joint_states.name"
    #: header.stamp (sec, nanosec) of the last message parse_cdr read
    stamp: tuple[int, int] = (0, 0)
    # the serialized name list (count and strings) parse_cdr last matched, and its permutation
    # (both replaced, never modified): a state broadcaster sends the same names every time
    _cdr_names = b""
    _cdr_perm = np.zeros(0, dtype=np.int64)

    def parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray]:
        """From a message object (or anything with its fields)."""
        names = msg.name
        nn = len(names)
        _check_length("joint_states.position", msg.position, "name", nn, optional=False)
        _check_length("joint_states.velocity", msg.velocity, "name", nn, optional=False)
        perm = self._match.permutation(names)
        return self._gathered(msg.position, msg.velocity, perm)

    def parse_cdr(self, data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """From a serialized message in little-endian classic CDR (the node's path: the message
        object cost 13 us to build for 12-30 joints); None for another encapsulation (the
        caller deserializes it and calls :meth:`parse`). Also sets :attr:`stamp`.

        The name list is compared as bytes with the last one matched (one comparison in the
        steady state); a new list is decoded and matched like :meth:`parse`'s. A buffer too
        short for its own lengths or with a name that is not UTF-8 raises InputError
        ``malformed``.
        """
        if data[:2] != CDR_LITTLE_ENDIAN:
            return None
        pos = _cdr_string_end(data, 12)  # after encapsulation + stamp: header.frame_id
        pos += -(pos - 4) % 4
        names_start = pos
        if data.startswith(self._cdr_names, names_start) and self._cdr_names:
            pos += len(self._cdr_names)
            perm = self._cdr_perm
            nn = _cdr_u32(data, names_start)
        else:
            nn = _cdr_u32(data, pos)
            pos += 4
            names = []
            for _ in range(nn):
                end = _cdr_string_end(data, pos)
                try:
                    names.append(data[pos + 4:end].rstrip(b"\x00").decode())
                except UnicodeDecodeError as exc:
                    raise InputError("malformed", f"joint_states.name: not UTF-8 ({exc})") from None
                pos = end + (-(end - 4) % 4)
            perm = self._match.permutation(names)
            self._cdr_names, self._cdr_perm = data[names_start:pos], perm
        position, pos = _cdr_float64_sequence(data, pos, "joint_states.position")
        velocity, _ = _cdr_float64_sequence(data, pos, "joint_states.velocity")
        _check_length("joint_states.position", position, "name", nn, optional=False)
        _check_length("joint_states.velocity", velocity, "name", nn, optional=False)
        self.stamp = (int.from_bytes(data[4:8], "little", signed=True),
                      int.from_bytes(data[8:12], "little"))
        return self._gathered(position, velocity, perm)

    def _gathered(self, position: Any, velocity: Any,
                  perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _gather(position, perm, self.position, "joint_states.position")
        _gather(velocity, perm, self.velocity, "joint_states.velocity")
        _check_range(self.position, *self.position_bounds, "joint_states.position", self.joints,
                     "(URDF limits + margin)")
        _check_range(self.velocity, *self.velocity_bounds, "joint_states.velocity", self.joints,
                     "(MAX_VELOCITY)")
        return self.position, self.velocity


class ReferenceParser(_JointMessageParser):
    """trajectory_msgs/JointTrajectory -> (qdd_des, q_des | None, qd_des | None), configured order.

    The message carries one point (``points[0]`` is used) whose ``accelerations`` are required and
    whose ``positions``/``velocities`` are optional (empty = no Kp / Kd feedback term). Every
    configured joint must be named. Bounds: accelerations ``MAX_ACCELERATION``, positions as
    joint states (URDF limits + margin), velocities ``MAX_VELOCITY``.
    """

    _names_field = "reference.joint_names"

    def _add_buffers(self, n: int) -> None:
        self.acceleration = np.zeros(n)
        self.acceleration_bounds = (np.full(n, -MAX_ACCELERATION), np.full(n, MAX_ACCELERATION))

    def parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        if len(msg.points) < 1:
            raise InputError(
                "empty", "reference.points: empty (one point with accelerations required)"
            )
        pt = msg.points[0]
        names = msg.joint_names
        nn = len(names)
        _check_length("reference.points[0].accelerations", pt.accelerations, "joint_names", nn,
                      optional=False)
        _check_length("reference.points[0].positions", pt.positions, "joint_names", nn,
                      optional=True)
        _check_length("reference.points[0].velocities", pt.velocities, "joint_names", nn,
                      optional=True)
        perm = self._match.permutation(names)
        _gather(pt.accelerations, perm, self.acceleration, "reference.points[0].accelerations")
        _check_range(self.acceleration, *self.acceleration_bounds,
                     "reference.points[0].accelerations", self.joints, "(MAX_ACCELERATION)")
        pos = vel = None
        if len(pt.positions):
            _gather(pt.positions, perm, self.position, "reference.points[0].positions")
            _check_range(self.position, *self.position_bounds, "reference.points[0].positions",
                         self.joints, "(URDF limits + margin)")
            pos = self.position
        if len(pt.velocities):
            _gather(pt.velocities, perm, self.velocity, "reference.points[0].velocities")
            _check_range(self.velocity, *self.velocity_bounds, "reference.points[0].velocities",
                         self.joints, "(MAX_VELOCITY)")
            vel = self.velocity
        return self.acceleration, pos, vel


_XYZ = ("x", "y", "z")
_XYZW = ("x", "y", "z", "w")


def _normalize_quaternion(q: np.ndarray, field: str, hint: str = "") -> bool:
    """Scale the quaternion ``q`` (4,) to unit norm in place. Raises :class:`InputError`
    ``quaternion_norm`` naming ``field`` (``hint`` appended to the message) if its norm differs
    from 1 by more than ``QUATERNION_NORM_TOLERANCE``; returns whether it differed by more than
    ``QUATERNION_NORM_SILENT`` (a renormalization larger than float32 round-off)."""
    nq = math.sqrt(float(q @ q))
    dev = abs(nq - 1.0)
    if dev > QUATERNION_NORM_TOLERANCE:
        raise InputError("quaternion_norm", f"{field}: quaternion norm {nq:.9g} differs from 1 by "
                         f"more than {QUATERNION_NORM_TOLERANCE:g}{hint}")
    q /= nq
    return dev > QUATERNION_NORM_SILENT


class OdometryParser:
    """nav_msgs/Odometry -> (position (3,), quaternion xyzw (4,), linear (3,), angular (3,)).

    Pose in the ``header.frame_id`` (world/odom) frame; twist in ``child_frame_id`` (the base
    frame), as the message definition prescribes, which is the core's free-flyer ``v``
    convention. The returned quaternion has unit norm (renormalised within
    ``QUATERNION_NORM_TOLERANCE``; ``renormalized`` counts renormalisations larger than
    float32 round-off). Raises :class:`InputError` naming the field and axis for non-finite
    or out-of-bound values (module docstring). Outputs are this object's buffers.
    """

    def __init__(self) -> None:
        self.position = np.zeros(3)
        self.orientation = np.zeros(4)
        self.linear = np.zeros(3)
        self.angular = np.zeros(3)
        self.renormalized = 0
        self._fields = (
            ("pose.pose.position", self.position, _XYZ, MAX_BASE_POSITION, "m"),
            # component bound only keeps |q|^2 finite; the norm check below decides
            ("pose.pose.orientation", self.orientation, _XYZW, 1e3, ""),
            ("twist.twist.linear", self.linear, _XYZ, MAX_VELOCITY, "m/s"),
            ("twist.twist.angular", self.angular, _XYZ, MAX_VELOCITY, "rad/s"),
        )
        self._field_bounds = [
            (np.full(len(ax), -b), np.full(len(ax), b)) for _, _, ax, b, _ in self._fields
        ]
        _first_outside(self.position, *self._field_bounds[0])

    def parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """From a message object (or anything with its fields)."""
        src = (
            msg.pose.pose.position,
            msg.pose.pose.orientation,
            msg.twist.twist.linear,
            msg.twist.twist.angular,
        )
        for (field, buf, axes, _b, _unit), obj in zip(self._fields, src, strict=True):
            try:
                for i, ax in enumerate(axes):
                    buf[i] = float(getattr(obj, ax))
            except (TypeError, ValueError) as exc:
                raise InputError("bad_value", f"odom.{field}: not a number ({exc})") from None
        return self._validated()

    def parse_cdr_numbers(
        self, numbers: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """From :func:`odometry_cdr_numbers` of the serialized message (the node's path: the
        message object's construction alone cost 38 us)."""
        self.position[:] = numbers[_ODOM_POSITION]
        self.orientation[:] = numbers[_ODOM_ORIENTATION]
        self.linear[:] = numbers[_ODOM_LINEAR]
        self.angular[:] = numbers[_ODOM_ANGULAR]
        return self._validated()

    def _validated(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        for (field, buf, axes, _b, unit), (lo, hi) in zip(
            self._fields, self._field_bounds, strict=True
        ):
            _check_range(buf, lo, hi, f"odom.{field}", axes, unit, kind="axis")
        self.renormalized += _normalize_quaternion(self.orientation, "odom.pose.pose.orientation")
        return self.position, self.orientation, self.linear, self.angular


#: The first two bytes (encapsulation) of a message serialized in little-endian classic CDR
#: (XCDR1), what rmw_fastrtps writes on x86 and ARM.
CDR_LITTLE_ENDIAN = b"\x00\x01"
#: nav_msgs/Odometry after its two strings: pose (position 3, orientation 4), pose covariance
#: (36), twist (linear 3, angular 3), twist covariance (36), all float64
ODOMETRY_CDR_DOUBLES = 85
_ODOM_POSITION, _ODOM_ORIENTATION = slice(0, 3), slice(3, 7)
_ODOM_LINEAR, _ODOM_ANGULAR = slice(43, 46), slice(46, 49)


def odometry_cdr_numbers(data: bytes) -> np.ndarray | None:
    """The float64 fields of a serialized nav_msgs/Odometry (:data:`ODOMETRY_CDR_DOUBLES`, a
    read-only view into ``data``), or None if ``data`` is not little-endian classic CDR or too
    short for its own string lengths (the caller then deserializes it the general way).

    Layout (OMG CDR: a primitive aligned to its size, counted from the byte after the 4-byte
    encapsulation): header.stamp (int32 sec, uint32 nanosec), header.frame_id and
    child_frame_id (each uint32 length incl. the terminating NUL, then the bytes), then the
    doubles aligned to 8. The frame names are not read: the controller does not use them.
    """
    if data[:2] != CDR_LITTLE_ENDIAN:
        return None
    size = len(data)
    pos = 12  # after the 4-byte encapsulation and header.stamp (8 bytes)
    for _ in range(2):  # header.frame_id, child_frame_id
        pos += -(pos - 4) % 4
        if pos + 4 > size:
            return None
        pos += 4 + int.from_bytes(data[pos:pos + 4], "little")
    pos += -(pos - 4) % 8
    if pos + 8 * ODOMETRY_CDR_DOUBLES > size:
        return None
    return np.frombuffer(data, dtype="<f8", count=ODOMETRY_CDR_DOUBLES, offset=pos)


def _cdr_u32(data: bytes, pos: int) -> int:
    """The little-endian uint32 at ``pos`` (InputError ``malformed`` past the end)."""
    if pos + 4 > len(data):
        raise InputError("malformed", f"serialized message of {len(data)} bytes ends before a "
                         f"length field at byte {pos}")
    return int.from_bytes(data[pos:pos + 4], "little")


def _cdr_string_end(data: bytes, pos: int) -> int:
    """The offset after the CDR string whose length field (incl. the NUL) is at ``pos``."""
    end = pos + 4 + _cdr_u32(data, pos)
    if end > len(data):
        raise InputError("malformed", f"serialized message of {len(data)} bytes ends inside a "
                         f"string at byte {pos}")
    return end


def _cdr_float64_sequence(data: bytes, pos: int, field: str) -> tuple[np.ndarray, int]:
    """The float64[] whose length field follows ``pos`` (aligned to 4, its doubles to 8), as a
    read-only view, and the offset after it."""
    pos += -(pos - 4) % 4
    n = _cdr_u32(data, pos)
    pos += 4
    if n:
        pos += -(pos - 4) % 8
    end = pos + 8 * n
    if end > len(data):
        raise InputError("malformed", f"{field}: serialized message of {len(data)} bytes ends "
                         f"inside its {n} values")
    return np.frombuffer(data, dtype="<f8", count=n, offset=pos), end


def odometry_to_base(msg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One-off :meth:`OdometryParser.parse` (copies of the arrays); the node keeps a parser."""
    return tuple(a.copy() for a in OdometryParser().parse(msg))  # type: ignore[return-value]


def contact_schedule_swing_links(data: Sequence[int], links: Sequence[str]) -> list[str]:
    """std_msgs/UInt8MultiArray ``data`` (stance mask) -> the contact links in swing.

    ``data[i]`` is 1 (stance) or 0 (swing) for the i-th configured contact link. Raises
    :class:`InputError` for a wrong length or another value (naming the links).
    """
    mask = list(data)
    if len(mask) != len(links):
        raise InputError(
            "size",
            f"contact_schedule.data: {len(mask)} entries, expected one per contact link "
            f"{list(links)}",
        )
    bad = [links[i] for i, m in enumerate(mask) if m not in (0, 1)]
    if bad:
        raise InputError(
            "bad_value",
            f"contact_schedule.data: entries must be 0 (swing) or 1 (stance); bad for {bad}",
        )
    return [ln for ln, m in zip(links, mask, strict=True) if m == 0]


def contact_lift_off_in(data: Sequence[float], links: Sequence[str]) -> dict[str, float]:
    """std_msgs/Float64MultiArray ``data`` (announced lift-offs) -> {contact link: time [s]
    until the gait's planned lift-off of that stance link}, the ``lift_off_in`` of
    :meth:`~wbc_dynamics.controller.WholeBodyController.set_contact_schedule`.

    ``data[i]`` is for the i-th configured contact link: a finite time >= 0 [s] from the
    message's arrival, or ``+inf`` for none announced (the link is left out of the result).
    Raises :class:`InputError` for a wrong length (``size``), NaN or ``-inf`` (``non_finite``)
    or a negative time (``out_of_range``), naming the links; ``bad_value`` for entries that
    are not numbers.
    """
    try:
        times = [float(x) for x in data]
    except (TypeError, ValueError) as exc:  # (duck typing: the message type holds doubles)
        raise InputError("bad_value", f"contact_lift_off.data: not numbers ({exc})") from None
    if len(times) != len(links):
        raise InputError(
            "size",
            f"contact_lift_off.data: {len(times)} entries, expected one per contact link "
            f"{list(links)}",
        )
    not_finite = [links[i] for i, x in enumerate(times) if math.isnan(x) or x == -math.inf]
    if not_finite:
        raise InputError(
            "non_finite",
            f"contact_lift_off.data: NaN or -inf for {not_finite} (inf = no lift-off "
            "announced)",
        )
    negative = [links[i] for i, x in enumerate(times) if x < 0.0]
    if negative:
        raise InputError(
            "out_of_range",
            f"contact_lift_off.data: a time until lift-off must be >= 0 s; negative for "
            f"{negative}",
        )
    return {ln: x for ln, x in zip(links, times, strict=True) if x != math.inf}


#: sensor_msgs/Imu after its header: orientation (4), orientation_covariance (9),
#: angular_velocity (3), angular_velocity_covariance (9), linear_acceleration (3),
#: linear_acceleration_covariance (9), all float64
IMU_CDR_DOUBLES = 37
_IMU_ORIENTATION, _IMU_ORIENTATION_COV = slice(0, 4), slice(4, 13)
_IMU_ANGULAR, _IMU_ANGULAR_COV0 = slice(13, 16), 16
_IMU_LINEAR, _IMU_LINEAR_COV0 = slice(25, 28), 28


def imu_cdr_numbers(data: bytes) -> tuple[tuple[int, int], np.ndarray] | None:
    """(header.stamp (sec, nanosec), the :data:`IMU_CDR_DOUBLES` float64 fields as a read-only
    view into ``data``) of a serialized sensor_msgs/Imu, or None if ``data`` is not
    little-endian classic CDR or too short for its own frame name (the caller then deserializes
    it the general way). Layout as :func:`odometry_cdr_numbers`' with one string."""
    if data[:2] != CDR_LITTLE_ENDIAN or len(data) < 16:
        return None
    size = len(data)
    pos = 16 + int.from_bytes(data[12:16], "little")  # after header.frame_id
    pos += -(pos - 4) % 8
    if pos + 8 * IMU_CDR_DOUBLES > size:
        return None
    stamp = (int.from_bytes(data[4:8], "little", signed=True), int.from_bytes(data[8:12], "little"))
    return stamp, np.frombuffer(data, dtype="<f8", count=IMU_CDR_DOUBLES, offset=pos)


class ImuParser:
    """sensor_msgs/Imu -> (angular velocity (3,) [rad/s], specific force (3,) [m/s^2],
    orientation (4,) xyzw or None), the conventions of REP 145 and of
    :meth:`.WholeBodyController.set_imu`: every vector in the IMU's frame, which must be the
    robot's base frame (the message's ``header.frame_id`` is not read: an IMU mounted elsewhere or
    rotated needs its driver, or a relay, to express its data in the base frame); the
    accelerometer's specific force (+9.81 m/s^2 up at rest, not gravity-compensated); the
    orientation world-from-IMU.

    ``orientation``: the estimator uses the IMU's own orientation output (``imu_orientation:
    true``). Then a message marking it as not provided (``orientation_covariance[0] == -1``,
    REP 145) is rejected (``no_orientation``), and the quaternion must have unit norm within
    ``QUATERNION_NORM_TOLERANCE`` (renormalised; all zeros -- an IMU without orientation that
    left it unset -- is rejected, ``quaternion_norm``). Without it the orientation fields are
    ignored and None is returned.

    Raises :class:`InputError` naming the field and axis: ``no_data`` for an angular velocity or
    linear acceleration marked as not provided (covariance element 0 = -1), ``non_finite``,
    ``out_of_range`` (``MAX_IMU_ANGULAR_RATE``, ``MAX_IMU_ACCELERATION``), ``quaternion_norm``.
    The covariances are not validated (the estimator uses its own noise model):
    ``orientation_covariance`` holds the last message's (3, 3) orientation covariance
    [rad^2] and ``has_orientation_covariance`` whether it is usable (finite, symmetric
    diagonal >= 0 and not all zero). Outputs are this object's buffers.
    """

    def __init__(self, orientation: bool) -> None:
        self.orientation_used = bool(orientation)
        self.angular_velocity = np.zeros(3)
        self.linear_acceleration = np.zeros(3)
        self.orientation = np.array([0.0, 0.0, 0.0, 1.0])
        self.orientation_covariance = np.zeros((3, 3))
        self.has_orientation_covariance = False
        self.renormalized = 0
        self._rate_bounds = (np.full(3, -MAX_IMU_ANGULAR_RATE), np.full(3, MAX_IMU_ANGULAR_RATE))
        self._accel_bounds = (np.full(3, -MAX_IMU_ACCELERATION), np.full(3, MAX_IMU_ACCELERATION))
        self._quat_bounds = (np.full(4, -1e3), np.full(4, 1e3))
        self._cov = np.zeros(9)
        self._cov_bytes = b""  # the orientation covariance last judged (an IMU's is constant)

    def parse(self, msg: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """From a message object (or anything with its fields)."""
        try:
            self._cov[:] = msg.orientation_covariance
            cov_w0 = float(msg.angular_velocity_covariance[0])
            cov_a0 = float(msg.linear_acceleration_covariance[0])
            for buf, obj in ((self.angular_velocity, msg.angular_velocity),
                             (self.linear_acceleration, msg.linear_acceleration)):
                for i, ax in enumerate(_XYZ):
                    buf[i] = float(getattr(obj, ax))
            if self.orientation_used:
                o = msg.orientation
                for i, ax in enumerate(_XYZW):
                    self.orientation[i] = float(getattr(o, ax))
        except (TypeError, ValueError, IndexError) as exc:
            raise InputError("bad_value", f"imu: a field is not a number ({exc})") from None
        return self._validated(cov_w0, cov_a0)

    def parse_cdr_numbers(
        self, numbers: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """From :func:`imu_cdr_numbers` of the serialized message."""
        self._cov[:] = numbers[_IMU_ORIENTATION_COV]
        self.angular_velocity[:] = numbers[_IMU_ANGULAR]
        self.linear_acceleration[:] = numbers[_IMU_LINEAR]
        if self.orientation_used:
            self.orientation[:] = numbers[_IMU_ORIENTATION]
        return self._validated(float(numbers[_IMU_ANGULAR_COV0]), float(numbers[_IMU_LINEAR_COV0]))

    def _validated(self, cov_w0: float, cov_a0: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        for field, cov0 in (("angular_velocity", cov_w0), ("linear_acceleration", cov_a0)):
            if cov0 == -1.0:
                raise InputError("no_data", f"imu.{field}: marked as not provided ({field}_"
                                 "covariance[0] = -1, REP 145); the base estimator needs it")
        _check_range(self.angular_velocity, *self._rate_bounds, "imu.angular_velocity", _XYZ,
                     "rad/s (MAX_IMU_ANGULAR_RATE)", kind="axis")
        _check_range(self.linear_acceleration, *self._accel_bounds, "imu.linear_acceleration",
                     _XYZ, "m/s^2 (MAX_IMU_ACCELERATION)", kind="axis")
        if not self.orientation_used:
            return self.angular_velocity, self.linear_acceleration, None
        cov = self._cov
        if cov[0] == -1.0:
            raise InputError("no_orientation", "imu.orientation: marked as not provided "
                             "(orientation_covariance[0] = -1, REP 145); with imu_orientation: "
                             "true the estimator needs it (set imu_orientation: false to "
                             "integrate the angular rate instead)")
        q = self.orientation
        _check_range(q, *self._quat_bounds, "imu.orientation", _XYZW, "", kind="axis")
        self.renormalized += _normalize_quaternion(
            q, "imu.orientation", " (an IMU without an orientation output marks it with "
            "orientation_covariance[0] = -1; then set imu_orientation: false)")
        raw = cov.tobytes()
        if raw != self._cov_bytes:  # judged again only when it changed
            self._cov_bytes = raw
            c = cov.reshape(3, 3)
            usable = bool(np.all(np.isfinite(cov)) and np.all(np.diagonal(c) >= 0.0)
                          and np.any(c != 0.0) and np.array_equal(c, c.T))
            if usable:
                self.orientation_covariance[:] = c
            self.has_orientation_covariance = usable
        return self.angular_velocity, self.linear_acceleration, self.orientation


def imu_sample_time(stamp: tuple[int, int], now: float, previous: float,
                    future_tolerance: float) -> float | None:
    """The time [s] on the node's clock of an IMU sample stamped ``stamp`` (header.stamp (sec,
    nanosec)) that arrived at ``now`` [s]: the stamp itself (the estimator integrates over the
    stamps' differences, and the sample's age is measured from it), or ``now`` for a zero stamp
    (an unstamped driver). ``previous``: the time of the last accepted sample (-inf: none).

    Returns None for a repeated sample (the same time as ``previous``: a simulator re-sending
    its paused state). Raises InputError ``future_stamp`` for a stamp more than
    ``future_tolerance`` [s] ahead of ``now`` (another clock: a sample that stopped would look
    fresh until the node's clock caught up with it) and ``stamp_order`` for one before
    ``previous``."""
    sec, nanosec = stamp
    t = now if sec == 0 and nanosec == 0 else sec + 1e-9 * nanosec
    if t == previous:
        return None
    if t > now + future_tolerance:
        raise InputError("future_stamp", f"imu.header.stamp: {t:.9f} s is {t - now:.6f} s ahead "
                         f"of the node's clock (more than {future_tolerance:g} s: another clock?)")
    if t < previous:
        raise InputError("stamp_order", f"imu.header.stamp: {t:.9f} s is before the previous "
                         f"sample's {previous:.9f} s")
    return t
