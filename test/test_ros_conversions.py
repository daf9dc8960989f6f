"""The one validated conversion path of the node's inputs (``wbc_dynamics.ros_conversions``),
driven with duck-typed messages (no ROS needed): every hostile value is an ``InputError`` with
a reason key and a message naming the field and joint / axis; nothing else is ever raised.

Regression: joint velocities all -1e308 and reference accelerations all 1e308 used to overflow a
sum, find "a non-finite value", then find none and raise IndexError (the node process died).
"""

from __future__ import annotations

import array
import math
from types import SimpleNamespace

import numpy as np
import pytest

from wbc_dynamics.ros_conversions import (
    MAX_ACCELERATION,
    MAX_BASE_POSITION,
    MAX_UNLIMITED_POSITION,
    MAX_VELOCITY,
    QUATERNION_NORM_TOLERANCE,
    InputError,
    JointStateParser,
    OdometryParser,
    ReferenceParser,
    contact_lift_off_in,
    contact_schedule_swing_links,
    joint_position_bounds,
    odometry_cdr_numbers,
)

JOINTS = ["a", "b", "c"]
LOWER = [-1.0, -2.0, -math.inf]      # c: continuous (no limits)
UPPER = [1.0, 0.0, math.inf]


def _js(names, pos, vel):
    return SimpleNamespace(name=list(names), position=list(pos), velocity=list(vel), effort=[])


def _ref(names, acc, pos=(), vel=()):
    pt = SimpleNamespace(accelerations=list(acc), positions=list(pos), velocities=list(vel))
    return SimpleNamespace(joint_names=list(names), points=[pt])


def _rejected(fn, reason, *words):
    with pytest.raises(InputError) as ei:
        fn()
    assert ei.value.reason == reason, str(ei.value)
    for w in words:
        assert w in str(ei.value), (w, str(ei.value))
    return str(ei.value)


@pytest.mark.parametrize("joints", [JOINTS, [f"joint_{i}" for i in range(1, 12)]],
                         ids=["three_joints", "arm_joints"])
def test_overflowing_sums_are_rejected_not_index_errors(joints):
    """Values whose sums overflow are rejected as out of range instead of crashing the parser (an
    IndexError), on a three-joint and on the arm's joint list."""
    n = len(joints)
    js = JointStateParser(joints)
    _rejected(lambda: js.parse(_js(joints, np.zeros(n), np.full(n, -1e308))),
              "out_of_range", "joint_states.velocity", f"joint '{joints[0]}'", "-1e+308")
    _rejected(lambda: js.parse(_js(joints, np.full(n, 1e308), np.zeros(n))),
              "out_of_range", "joint_states.position")
    ref = ReferenceParser(joints)
    _rejected(lambda: ref.parse(_ref(joints, np.full(n, 1e308))),
              "out_of_range", "reference.points[0].accelerations", f"joint '{joints[0]}'")
    # the biggest magnitudes still in range are accepted
    acc, _, _ = ref.parse(_ref(joints, np.full(n, -MAX_ACCELERATION)))
    assert np.all(acc == -MAX_ACCELERATION)


def test_joint_state_bounds_name_field_and_joint():
    p = JointStateParser(JOINTS, LOWER, UPPER)
    lo, hi = p.position_bounds
    # limits widened by 10 % of the range + 0.1; continuous joint: magnitude bound
    np.testing.assert_allclose(lo, [-1.3, -2.3, -MAX_UNLIMITED_POSITION])
    np.testing.assert_allclose(hi, [1.3, 0.3, MAX_UNLIMITED_POSITION])
    pos, vel = p.parse(_js(JOINTS, [1.29, -2.29, 1e8], [MAX_VELOCITY, 0.0, -MAX_VELOCITY]))
    np.testing.assert_array_equal(pos, [1.29, -2.29, 1e8])
    _rejected(lambda: p.parse(_js(JOINTS, [1.31, 0, 0], [0, 0, 0])), "out_of_range",
              "joint_states.position", "joint 'a'", "1.31", "[-1.3, 1.3]")
    _rejected(lambda: p.parse(_js(JOINTS, [0, 0, 1e308], [0, 0, 0])), "out_of_range",
              "joint 'c'")
    _rejected(lambda: p.parse(_js(JOINTS, [0, 0, 0], [0, 1.5e4, 0])), "out_of_range",
              "joint_states.velocity", "joint 'b'")
    for bad in (np.nan, np.inf, -np.inf):
        _rejected(lambda bad=bad: p.parse(_js(JOINTS, [0, bad, 0], [0, 0, 0])), "non_finite",
                  "joint_states.position", "joint 'b'")
        _rejected(lambda bad=bad: p.parse(_js(JOINTS, [0, 0, 0], [0, 0, bad])), "non_finite",
                  "joint_states.velocity", "joint 'c'")
    # denormals are finite, in range: accepted as they are
    pos, vel = p.parse(_js(JOINTS, [5e-324, -5e-324, 1e-310], [1e-310, 0, 0]))
    assert pos[0] == 5e-324 and vel[0] == 1e-310
    _rejected(lambda: p.parse(_js(JOINTS + ["a"], [0] * 4, [0] * 4)), "duplicate_joint",
              "joint 'a' appears twice")
    _rejected(lambda: p.parse(_js(["a", "c"], [0, 0], [0, 0])), "missing_joint",
              "configured joint 'b' is missing")
    _rejected(lambda: p.parse(_js([], [], [])), "missing_joint", "'a'")
    _rejected(lambda: p.parse(_js(JOINTS, [0, 0, 0], [])), "size",
              "joint_states.velocity: length 0 != length of name 3")
    _rejected(lambda: p.parse(_js(JOINTS, [0, 0], [0, 0, 0])), "size", "joint_states.position")
    # an unconfigured extra joint is ignored, even with garbage in it
    pos, _ = p.parse(_js(["x"] + JOINTS, [np.nan, 0.5, -1, 2], [1e308, 0, 0, 0]))
    np.testing.assert_array_equal(pos, [0.5, -1, 2])


def test_degenerate_limits_fall_back_to_the_magnitude_bound():
    lo, hi = joint_position_bounds([0.0, 1.0], [0.0, 0.5], 2)
    np.testing.assert_array_equal(hi, [MAX_UNLIMITED_POSITION] * 2)
    np.testing.assert_array_equal(lo, [-MAX_UNLIMITED_POSITION] * 2)


def test_reference_bounds():
    p = ReferenceParser(JOINTS, LOWER, UPPER)
    acc, pos, vel = p.parse(_ref(["c", "a", "b"], [3, 1, 2], [0, 0.5, -1], [3, 1, 2]))
    np.testing.assert_array_equal(acc, [1, 2, 3])
    np.testing.assert_array_equal(pos, [0.5, -1, 0])
    _rejected(lambda: p.parse(_ref(JOINTS, [0, 0, 2e6])), "out_of_range",
              "reference.points[0].accelerations", "joint 'c'")
    _rejected(lambda: p.parse(_ref(JOINTS, [0, 0, 0], [5.0, 0, 0])), "out_of_range",
              "reference.points[0].positions", "joint 'a'")
    _rejected(lambda: p.parse(_ref(JOINTS, [0, 0, 0], (), [0, np.nan, 0])), "non_finite",
              "reference.points[0].velocities", "joint 'b'")
    _rejected(lambda: p.parse(SimpleNamespace(joint_names=JOINTS, points=[])), "empty",
              "reference.points: empty")
    _rejected(lambda: p.parse(_ref(JOINTS, [0, 0])), "size", "accelerations")
    _rejected(lambda: p.parse(_ref(JOINTS, [0, 0, 0], [1.0])), "size",
              "positions: length 1 must be 0 or 3")


def _odom(p=(0.0, 0.0, 0.5), q=(0.0, 0.0, 0.0, 1.0), lin=(0.0, 0.0, 0.0), ang=(0.0, 0.0, 0.0)):
    def v(x, y, z):
        return SimpleNamespace(x=x, y=y, z=z)

    return SimpleNamespace(
        pose=SimpleNamespace(pose=SimpleNamespace(
            position=v(*p), orientation=SimpleNamespace(x=q[0], y=q[1], z=q[2], w=q[3]))),
        twist=SimpleNamespace(twist=SimpleNamespace(linear=v(*lin), angular=v(*ang))))


def test_odometry_bounds_and_quaternion_renormalisation():
    p = OdometryParser()
    _rejected(lambda: p.parse(_odom(p=(1e308, 0, 0))), "out_of_range", "odom.pose.pose.position",
              "axis 'x'")
    _rejected(lambda: p.parse(_odom(p=(0, 0, 1.01 * MAX_BASE_POSITION))), "out_of_range",
              "axis 'z'")
    _rejected(lambda: p.parse(_odom(lin=(0, -np.inf, 0))), "non_finite", "twist.twist.linear",
              "axis 'y'")
    _rejected(lambda: p.parse(_odom(ang=(0, 0, 2e4))), "out_of_range", "twist.twist.angular")
    _rejected(lambda: p.parse(_odom(q=(0, 0, 0, 0))), "quaternion_norm", "orientation")
    _rejected(lambda: p.parse(_odom(q=(1e308, 0, 0, 1))), "out_of_range", "orientation")
    # norm 1 + 5e-4: within the tolerance -> renormalised, and counted
    s = 1.0 + 5e-4
    _, quat, _, _ = p.parse(_odom(q=(0.0, 0.0, s * math.sin(0.3), s * math.cos(0.3))))
    assert abs(np.linalg.norm(quat) - 1.0) < 1e-15
    np.testing.assert_allclose(quat, [0, 0, math.sin(0.3), math.cos(0.3)], rtol=0, atol=1e-15)
    assert p.renormalized == 1
    p.parse(_odom(q=(0.0, 0.0, 0.0, 1.0 + 1e-8)))                 # float32 round-off: silent
    assert p.renormalized == 1
    s = 1.0 + 1.01 * QUATERNION_NORM_TOLERANCE
    _rejected(lambda: p.parse(_odom(q=(0, 0, 0, s))), "quaternion_norm", "differs from 1")


def test_odometry_read_in_place_from_cdr_equals_the_message():
    """The node's odometry subscriptions are raw: odometry_cdr_numbers reads the serialized
    message in place. Against rclpy's own serialization, for every alignment the two frame
    names can leave (lengths 0..11 each) and random values: the 85 doubles bit for bit, and
    parse_cdr_numbers gives what parse gives on the message object (renormalisation and
    rejections included). Anything but little-endian classic CDR, and every truncation,
    gives None (the node then lets the rmw deserialize it)."""
    serialization = pytest.importorskip("rclpy.serialization",
                                        reason="rclpy (ros-rclpy wheels) not installed")
    from nav_msgs.msg import Odometry

    rng = np.random.default_rng(7)
    for n_frame in range(12):
        for n_child in range(12):
            msg = Odometry()
            msg.header.stamp.sec, msg.header.stamp.nanosec = int(rng.integers(1 << 30)), 5
            msg.header.frame_id, msg.child_frame_id = "f" * n_frame, "c" * n_child
            v = rng.uniform(-2.0, 2.0, 85)
            v[3:7] *= (1.0 + rng.uniform(-5e-4, 5e-4)) / np.linalg.norm(v[3:7])
            pose, twist = msg.pose.pose, msg.twist.twist
            pose.position.x, pose.position.y, pose.position.z = v[0:3]
            o = pose.orientation
            o.x, o.y, o.z, o.w = v[3:7]
            msg.pose.covariance = v[7:43]
            twist.linear.x, twist.linear.y, twist.linear.z = v[43:46]
            twist.angular.x, twist.angular.y, twist.angular.z = v[46:49]
            msg.twist.covariance = v[49:85]
            data = serialization.serialize_message(msg)
            numbers = odometry_cdr_numbers(data)
            np.testing.assert_array_equal(numbers, v)
            by_cdr = [a.copy() for a in OdometryParser().parse_cdr_numbers(numbers)]
            by_msg = OdometryParser().parse(msg)
            for a, b in zip(by_cdr, by_msg, strict=True):
                np.testing.assert_array_equal(a, b)
            for cut in range(len(data)):
                assert odometry_cdr_numbers(data[:cut]) is None
            assert odometry_cdr_numbers(b"\x00\x00" + data[2:]) is None    # big-endian
    bad = np.zeros(85)
    bad[0], bad[6] = np.nan, 1.0
    _rejected(lambda: OdometryParser().parse_cdr_numbers(bad), "non_finite",
              "odom.pose.pose.position", "axis 'x'")
    bad[0], bad[6] = 0.0, 0.0
    _rejected(lambda: OdometryParser().parse_cdr_numbers(bad), "quaternion_norm", "orientation")


def test_joint_state_read_in_place_from_cdr_equals_the_message():
    """The node's joint_states subscription is raw: JointStateParser.parse_cdr reads the
    serialized message in place. Against rclpy's serialization, for frame ids of lengths 0..7
    (every alignment), the configured joints in any order among extra joints with names of
    any length, and with and without efforts: position, velocity and stamp as parse gives
    them, on the first message (names decoded and matched) and the next (names compared as
    bytes); a changed name list is matched anew. Rejections as parse's; every truncation is an
    InputError (or None where the encapsulation is cut), big-endian gives None."""
    serialization = pytest.importorskip("rclpy.serialization",
                                        reason="rclpy (ros-rclpy wheels) not installed")
    from sensor_msgs.msg import JointState

    rng = np.random.default_rng(11)
    by_cdr, by_msg = JointStateParser(JOINTS, LOWER, UPPER), JointStateParser(JOINTS, LOWER, UPPER)

    def message(names, frame_id):
        msg = JointState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(rng.integers(-5, 1 << 30)), 7
        msg.header.frame_id = frame_id
        msg.name = names
        msg.position = [float(x) for x in rng.uniform(-0.9, -0.1, len(names))]
        msg.velocity = [float(x) for x in rng.normal(size=len(names))]
        msg.effort = [1.5] * (len(names) if rng.integers(2) else 0)
        return msg

    for n_frame in range(8):
        extras = ["e" * int(k) for k in rng.integers(1, 9, int(rng.integers(0, 4)))]
        names = [str(x) for x in rng.permutation(JOINTS + [f"x{i}{e}" for i, e in
                                                          enumerate(extras)])]
        for _ in range(2):                      # the second: names compared as bytes
            msg = message(names, "f" * n_frame)
            data = serialization.serialize_message(msg)
            for a, b in zip(by_cdr.parse_cdr(data), by_msg.parse(msg), strict=True):
                np.testing.assert_array_equal(a, b)
            assert by_cdr.stamp == (msg.header.stamp.sec, msg.header.stamp.nanosec)
        for cut in range(len(data)):
            try:
                got = by_cdr.parse_cdr(data[:cut])
            except InputError as exc:
                assert exc.reason == "malformed", (cut, str(exc))
                continue
            if got is None:                     # the encapsulation itself cut
                assert cut < 2
                continue
            # only (part of) the efforts, which are not read, was cut off: count, padding, values
            assert cut >= len(data) - 8 - 8 * len(msg.effort), cut
            np.testing.assert_array_equal(got[1], by_msg.velocity)
        assert by_cdr.parse_cdr(b"\x00\x00" + data[2:]) is None
    for n_frame in range(8):                    # the same names (as bytes) at other offsets
        msg = message(names, "g" * n_frame)
        data = serialization.serialize_message(msg)
        for a, b in zip(by_cdr.parse_cdr(data), by_msg.parse(msg), strict=True):
            np.testing.assert_array_equal(a, b)
    bad = message(["a", "c"], "")
    _rejected(lambda: by_cdr.parse_cdr(serialization.serialize_message(bad)), "missing_joint",
              "configured joint 'b' is missing")
    bad = message(["a", "b", "c", "b"], "")
    _rejected(lambda: by_cdr.parse_cdr(serialization.serialize_message(bad)), "duplicate_joint",
              "'b' appears twice")
    bad = message(["a", "b", "c"], "")
    bad.position[1] = math.nan
    _rejected(lambda: by_cdr.parse_cdr(serialization.serialize_message(bad)), "non_finite",
              "joint_states.position", "joint 'b'")
    bad.position[1], bad.velocity = -0.5, [0.0, 0.0]
    _rejected(lambda: by_cdr.parse_cdr(serialization.serialize_message(bad)), "size",
              "joint_states.velocity")
    data = bytearray(serialization.serialize_message(message(["a", "b", "c"], "")))
    data[data.index(b"b\x00")] = 0xFF                            # not UTF-8
    _rejected(lambda: by_cdr.parse_cdr(bytes(data)), "malformed", "joint_states.name")


def test_contact_schedule_conversion():
    links = ["lf", "rf", "lh", "rh"]
    assert contact_schedule_swing_links([1, 0, 1, 0], links) == ["rf", "rh"]
    _rejected(lambda: contact_schedule_swing_links([1, 1], links), "size", "contact_schedule.data")
    _rejected(lambda: contact_schedule_swing_links([1, 2, 1, 1], links), "bad_value", "'rf'")
    _rejected(lambda: contact_schedule_swing_links([], links), "size")


def test_contact_lift_off_conversion():
    """One time [s] per contact link: finite >= 0 announces a lift-off, +inf none (left out);
    NaN, -inf, a negative time or a wrong length reject the whole message naming the links."""
    links = ["lf", "rf", "lh", "rh"]
    inf = math.inf
    assert contact_lift_off_in([0.25, inf, 0.0, inf], links) == {"lf": 0.25, "lh": 0.0}
    assert contact_lift_off_in([inf] * 4, links) == {}
    assert contact_lift_off_in(array.array("d", [1e308, -0.0, inf, 5e-324]), links) == {
        "lf": 1e308, "rf": 0.0, "rh": 5e-324}
    _rejected(lambda: contact_lift_off_in([0.1, inf], links), "size", "contact_lift_off.data")
    _rejected(lambda: contact_lift_off_in([], links), "size")
    _rejected(lambda: contact_lift_off_in([inf, math.nan, inf, -inf], links), "non_finite",
              "'rf'", "'rh'")
    _rejected(lambda: contact_lift_off_in([inf, inf, -0.01, 0.2], links), "out_of_range",
              "'lh'", ">= 0 s")
    _rejected(lambda: contact_lift_off_in(["soon", inf, inf, inf], links), "bad_value")


def test_random_hostile_messages_raise_only_input_rejected():
    """Seeded fuzz of the parsers: any mix of hostile values, sizes and names either parses to
    in-bound finite arrays or raises InputError (never another exception)."""
    rng = np.random.default_rng(13)
    hostile = np.array([np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, -0.0, 1e6, 0.1])
    js = JointStateParser(JOINTS, LOWER, UPPER)
    ref = ReferenceParser(JOINTS, LOWER, UPPER)
    pool = JOINTS + ["x", ""]
    accepted = 0
    for _ in range(2000):
        if rng.random() < 0.7:                       # the configured joints (+ an extra) shuffled
            names = list(rng.permutation(JOINTS + ["x"] * int(rng.integers(0, 2))))
        else:                                        # unknown / duplicate / missing names
            names = list(rng.choice(pool, size=int(rng.integers(0, 6))))
        k = len(names)
        p_bad = 0.05

        def vals(m, p_bad=p_bad):
            return [float(rng.choice(hostile)) if rng.random() < p_bad else float(rng.normal())
                    for _ in range(m)]

        sizes = [max(k + int(rng.choice([0] * 8 + [-1, 1])), 0) for _ in range(3)]
        for parser, msg in ((js, _js(names, vals(sizes[0]), vals(sizes[1]))),
                            (ref, _ref(names, vals(sizes[0]), vals(sizes[1]), vals(sizes[2])))):
            try:
                out = parser.parse(msg)
            except InputError:
                continue
            accepted += 1
            for arr in out:
                assert arr is None or np.all(np.isfinite(arr))
            lo, hi = parser.position_bounds
            pos = out[0] if parser is js else out[1]
            assert pos is None or np.all((lo <= pos) & (pos <= hi))
    assert accepted > 200     # the generator does produce valid messages too
