"""The base estimator's ROS inputs and outputs without a second process: the IMU's parser (REP 145
conventions, every rejection reason, the serialized path equal to the message path), the
sample-time rule, the estimate's message (frames, covariances rotated into the base frame),
the controller node in ``base_state: imu`` fed in process, the simulator's IMU model,
:class:`LegOdometry` against the controller's own estimator, and the launch plan's
``base_state``."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")

from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from wbc_dynamics.robots import robot_info  # noqa: E402
from wbc_dynamics.ros_conversions import (  # noqa: E402
    ImuParser,
    InputError,
    imu_cdr_numbers,
    imu_sample_time,
)


def _imu(quat=(0.0, 0.0, 0.0, 1.0), gyro=(0.1, -0.2, 0.3), accel=(0.5, -0.25, 9.81),
         stamp=(12, 345), frame="imu_link"):
    m = Imu()
    m.header.stamp.sec, m.header.stamp.nanosec = stamp
    m.header.frame_id = frame
    m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = quat
    m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = gyro
    m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = accel
    return m


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(0.5 * yaw), math.cos(0.5 * yaw))


# ------------------------------------------------------------------ parser
@pytest.mark.parametrize("frame", ["", "imu_link", "a_much_longer_frame_name_x"])
def test_imu_parser_serialized_path_equals_message_path(frame):
    """Every frame-name length (alignment of the doubles after it): the in-place read of the
    serialized message gives the stamp and the numbers of the message object's fields."""
    q = _yaw_quat(0.3)
    m = _imu(quat=q, frame=frame)
    m.orientation_covariance[0] = m.orientation_covariance[4] = m.orientation_covariance[8] = 1e-4
    data = serialize_message(m)
    stamp, numbers = imu_cdr_numbers(data)
    assert stamp == (12, 345)
    a, b = ImuParser(True), ImuParser(True)
    wa, fa, qa = a.parse(m)
    wb, fb, qb = b.parse_cdr_numbers(numbers)
    np.testing.assert_array_equal(wa, [0.1, -0.2, 0.3])
    np.testing.assert_array_equal(fa, [0.5, -0.25, 9.81])
    np.testing.assert_allclose(qa, q, rtol=0, atol=1e-15)
    for x, y in ((wa, wb), (fa, fb), (qa, qb)):
        np.testing.assert_array_equal(x, y)
    assert a.has_orientation_covariance and b.has_orientation_covariance
    np.testing.assert_array_equal(b.orientation_covariance, np.diag([1e-4] * 3))
    assert imu_cdr_numbers(data[:40]) is None  # too short for its fields: the general path
    assert imu_cdr_numbers(b"\x01\x00" + data[2:]) is None  # big-endian: the rmw's path


def test_imu_parser_rejections_name_the_field_and_reason():
    p = ImuParser(True)
    no_rate, no_acc, no_ori = _imu(), _imu(), _imu()
    no_rate.angular_velocity_covariance[0] = -1.0
    no_acc.linear_acceleration_covariance[0] = -1.0
    no_ori.orientation_covariance[0] = -1.0
    cases = [  # (message, reason, field named)
        (_imu(gyro=(0.0, math.nan, 0.0)), "non_finite", "imu.angular_velocity"),
        (_imu(accel=(0.0, 0.0, 2e3)), "out_of_range", "imu.linear_acceleration"),
        (_imu(quat=(0.0, 0.0, 0.0, 0.0)), "quaternion_norm", "imu.orientation"),
        (_imu(quat=(0.0, 0.0, math.inf, 1.0)), "non_finite", "imu.orientation"),
        (no_rate, "no_data", "imu.angular_velocity"),
        (no_acc, "no_data", "imu.linear_acceleration"),
        (no_ori, "no_orientation", "imu.orientation"),
    ]
    for msg, reason, field in cases:
        for parse in (p.parse,
                      lambda m: p.parse_cdr_numbers(imu_cdr_numbers(serialize_message(m))[1])):
            with pytest.raises(InputError) as exc:
                parse(msg)
            assert exc.value.reason == reason and field in str(exc.value), (reason, exc.value)
    # without imu_orientation: orientation fields ignored (an IMU without one: REP 145's -1)
    w, f, q = ImuParser(False).parse(no_ori)
    assert q is None and f[2] == 9.81
    # within 1e-3 of unit norm: renormalized and counted
    w, f, q = p.parse(_imu(quat=(0.0, 0.0, 0.0, 1.0005)))
    np.testing.assert_array_equal(q, [0.0, 0.0, 0.0, 1.0])
    assert p.renormalized == 1
    # an unusable orientation covariance (negative diagonal) is not taken
    m = _imu()
    m.orientation_covariance[0] = -0.5
    p.parse(m)
    assert not p.has_orientation_covariance


def test_imu_sample_time_rule():
    """The header stamp is the sample's time (zero: the arrival time); the same stamp again is
    a repeat (None); ahead of the clock by more than the tolerance or before the previous
    sample: rejected with its reason."""
    assert imu_sample_time((10, 500_000_000), 10.6, -math.inf, 0.05) == pytest.approx(10.5)
    assert imu_sample_time((0, 0), 3.25, -math.inf, 0.05) == 3.25
    assert imu_sample_time((10, 500_000_000), 10.6, 10.5, 0.05) is None
    assert imu_sample_time((10, 540_000_000), 10.5, 10.4, 0.05) == pytest.approx(10.54)
    with pytest.raises(InputError) as exc:
        imu_sample_time((10, 600_000_000), 10.5, 10.4, 0.05)
    assert exc.value.reason == "future_stamp" and "0.100000 s ahead" in str(exc.value)
    with pytest.raises(InputError) as exc:
        imu_sample_time((10, 300_000_000), 10.5, 10.4, 0.05)
    assert exc.value.reason == "stamp_order"


# ------------------------------------------------------------------ the estimate's message
class _FakeEstimator:
    """A BaseEstimator's data record with chosen numbers."""

    def __init__(self, yaw: float) -> None:
        from types import SimpleNamespace

        rng = np.random.default_rng(3)
        A = rng.normal(size=(6, 6))
        self.data = SimpleNamespace(
            x=np.array([1.0, 2.0, 0.3, 0.4, -0.2, 0.05]), quat=np.array(_yaw_quat(yaw)),
            omega=np.array([0.01, 0.02, 0.5]), P=A @ A.T)


def test_fill_estimate_frames_and_covariances():
    """Pose in the odom frame, twist in the base frame: with the base yawed 90 deg, the world
    velocity (0.4, -0.2, 0.05) is (-0.2, -0.4, 0.05) in the base frame, and the velocity
    covariance is rotated the same way (R^T P_v R); the position block is the filter's, the
    rotation block the given one, the angular diagonal the gyro's variance; the transform
    carries the same pose and stamp."""
    from geometry_msgs.msg import TransformStamped
    from nav_msgs.msg import Odometry

    from wbc_dynamics.estimate_output import fill_estimate

    est = _FakeEstimator(math.pi / 2)
    msg = Odometry()
    tf = TransformStamped()
    orient = np.diag([1e-4, 2e-4, 3e-4])
    fill_estimate(msg, tf, est, (5, 6), orient, 4e-6)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (5, 6)
    p, tl = msg.pose.pose.position, msg.twist.twist.linear
    assert (p.x, p.y, p.z) == (1.0, 2.0, 0.3)
    np.testing.assert_allclose([tl.x, tl.y, tl.z], [-0.2, -0.4, 0.05], rtol=0, atol=1e-15)
    ta = msg.twist.twist.angular
    assert (ta.x, ta.y, ta.z) == (0.01, 0.02, 0.5)
    pc = np.array(msg.pose.covariance).reshape(6, 6)
    tc = np.array(msg.twist.covariance).reshape(6, 6)
    P = est.data.P
    np.testing.assert_array_equal(pc[:3, :3], P[:3, :3])
    np.testing.assert_array_equal(pc[3:, 3:], orient)
    R = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(tc[:3, :3], R.T @ P[3:, 3:] @ R, rtol=0, atol=1e-12)
    assert tc[0, 0] == pytest.approx(P[4, 4]) and tc[1, 1] == pytest.approx(P[3, 3])
    np.testing.assert_array_equal(np.diag(tc[3:, 3:]), [4e-6] * 3)
    assert not np.any(pc[:3, 3:]) and not np.any(tc[:3, 3:])
    # the transform odom -> base: the same pose and stamp
    tr, rot = tf.transform.translation, tf.transform.rotation
    assert (tf.header.stamp.sec, tf.header.stamp.nanosec) == (5, 6)
    assert (tr.x, tr.y, tr.z) == (1.0, 2.0, 0.3)
    np.testing.assert_array_equal([rot.x, rot.y, rot.z, rot.w], est.data.quat)


def test_estimate_output_publishes_odom_and_tf(monkeypatch):
    """EstimateOutput on a stand-in node: ``~/odom`` and, with ``publish_tf``, one
    odom_frame -> base_frame transform on ``/tf`` carrying the odometry's pose and stamp; a
    tf2_msgs that cannot be imported (it is not among the pip wheels: a stand-in TFMessage
    here) leaves the odometry alone and says why; ``publish_tf`` false publishes no /tf."""
    import sys
    import types

    from wbc_dynamics.estimate_output import EstimateOutput

    class TFMessage:  # tf2_msgs/TFMessage's one field
        def __init__(self, transforms=()):
            self.transforms = list(transforms)

    class Node:
        def __init__(self):
            self.pubs = {}

        def create_publisher(self, msg_type, topic, depth):
            pub = types.SimpleNamespace(msg_type=msg_type, sent=[])
            pub.publish = pub.sent.append
            self.pubs[topic] = pub
            return pub

    fake = types.ModuleType("tf2_msgs.msg")
    fake.TFMessage = TFMessage
    monkeypatch.setitem(sys.modules, "tf2_msgs", types.ModuleType("tf2_msgs"))
    monkeypatch.setitem(sys.modules, "tf2_msgs.msg", fake)
    node = Node()
    out = EstimateOutput(node, "odom", "trunk", 100.0, True, 0.002, 0.0035)
    assert out.tf_state == "published" and set(node.pubs) == {"~/odom", "/tf"}
    assert node.pubs["/tf"].msg_type is TFMessage
    est = _FakeEstimator(math.pi / 2)
    out.publish(est, 0.0, (5, 6))
    (odom,), (tfm,) = node.pubs["~/odom"].sent, node.pubs["/tf"].sent
    (tf,) = tfm.transforms
    assert (tf.header.frame_id, tf.child_frame_id) == ("odom", "trunk")
    assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "trunk")
    assert (tf.header.stamp.sec, tf.header.stamp.nanosec) == (5, 6)
    p, tr = odom.pose.pose.position, tf.transform.translation
    assert (tr.x, tr.y, tr.z) == (p.x, p.y, p.z) == (1.0, 2.0, 0.3)
    o, rot = odom.pose.pose.orientation, tf.transform.rotation
    assert [rot.x, rot.y, rot.z, rot.w] == [o.x, o.y, o.z, o.w]
    np.testing.assert_array_equal([rot.x, rot.y, rot.z, rot.w], est.data.quat)
    assert not out.due(0.005) and out.due(0.01) and out.count == 1
    # publish_tf false: no /tf; tf2_msgs missing: the odometry alone, and why
    node = Node()
    assert EstimateOutput(node, "odom", "trunk", 100.0, False, 0.0, 0.0).tf_state == "off"
    assert set(node.pubs) == {"~/odom"}
    monkeypatch.setitem(sys.modules, "tf2_msgs.msg", None)
    node = Node()
    out = EstimateOutput(node, "odom", "trunk", 100.0, True, 0.0, 0.0)
    assert out.tf_state == "unavailable (tf2_msgs not installed)" and set(node.pubs) == {"~/odom"}


# ------------------------------------------------------------------ the node, in process
@pytest.fixture
def imu_node(ros_env):
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from wbc_dynamics.node import WbcControllerNode

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    over = [Parameter(k, value=v) for k, v in {
        "robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
        "base_state": "imu", "state_timeout": 0.05, "publish_contacts": False,
        "estimate_rate": 100.0}.items()]
    node = WbcControllerNode(context=ctx, parameter_overrides=over)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    cmds, estimates = [], []
    orig = node._pub_cmd.publish
    node._pub_cmd.publish = lambda m: (cmds.append(np.array(m.data)), orig(m))[1]
    out = node._estimate_out
    orig_est = out.pub_odom.publish
    out.pub_odom.publish = lambda m: (estimates.append(
        (m.pose.pose.position.z, m.header.stamp.sec, m.header.stamp.nanosec,
         np.array(m.pose.covariance))), orig_est(m))[1]
    clock = [100.0]
    node._now = lambda: clock[0]
    yield node, cmds, estimates, clock
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def test_node_imu_mode_in_process(imu_node):
    """Serialized IMU messages at their stamps: the controller ticks on the estimate, the
    estimate leaves at estimate_rate (every 10th tick at 1 kHz) stamped with the joint state's
    stamp, at the standing height; a repeated stamp is counted, not rejected, an older one and a
    buffer that is no Imu are rejected (stamp_order, malformed); the IMU's own
    orientation covariance becomes the pose covariance's rotation block; a stopped IMU gives
    the stale-state zero torque after state_timeout and no estimate."""
    node, cmds, estimates, clock = imu_node
    info = robot_info("quadruped")
    q = np.array(info["standing_q"])
    ctl = node.controller
    assert ctl.config.base_state == "imu"
    assert [s.topic_name for s in node._odometry_subs] == ["/imu"]
    ctl.set_reference(np.zeros(12), clock[0], position=q[7:], velocity=np.zeros(12))

    def step(k: int, imu: bool = True, stamp_ns: int | None = None):
        t_ns = 100_000_000_000 + 1_000_000 * k
        clock[0] = t_ns * 1e-9
        ctl.set_reference(np.zeros(12), clock[0], position=q[7:], velocity=np.zeros(12))
        if imu:
            m = _imu(quat=tuple(q[3:7]), gyro=(0.0, 0.0, 0.0), accel=(0.0, 0.0, 9.81),
                     stamp=divmod(t_ns if stamp_ns is None else stamp_ns, 1_000_000_000))
            m.orientation_covariance[0] = m.orientation_covariance[4] = 2.5e-5
            m.orientation_covariance[8] = 2.5e-5
            node._on_imu(serialize_message(m))
        js = JointState()
        js.header.stamp.sec, js.header.stamp.nanosec = divmod(t_ns, 1_000_000_000)
        js.name = list(info["joint_names"])
        js.position = [float(x) for x in q[7:]]
        js.velocity = [0.0] * 12
        node._on_joint_state(serialize_message(js))

    for k in range(1, 31):
        step(k)
    assert len(cmds) == 30 and all(np.any(c) for c in cmds[1:])
    assert ctl.last_output.mode == "control"
    assert len(estimates) == 3, len(estimates)  # 100 Hz of 30 ticks at 1 kHz
    z, sec, nsec, cov = estimates[-1]
    assert abs(z - q[2]) < 1e-4
    assert (sec, nsec) == divmod(100_000_000_000 + 1_000_000 * 21, 1_000_000_000)
    np.testing.assert_array_equal(cov.reshape(6, 6)[3:, 3:], np.diag([2.5e-5] * 3))
    # a repeated sample (same stamp) is skipped and counted, not rejected
    step(31)
    step(31)
    assert node._imu_repeats == 1 and sum(node._rejected["imu"].values()) == 0
    # an older stamp: rejected (stamp_order); the estimate's sample stays
    step(32, stamp_ns=100_000_000_000)
    assert node._rejected["imu"] == {"stamp_order": 1}
    # a buffer that is no serialized Imu (too short for its own fields): malformed
    node._on_imu(b"\x00\x01\x00\x00" + b"\x07" * 10)
    assert node._rejected["imu"] == {"stamp_order": 1, "malformed": 1}
    assert node._internal_errors == 0
    # the IMU stops: after state_timeout (50 ms) the zero torque, no estimate
    n_est = len(estimates)
    for k in range(33, 100):
        step(k, imu=False)
    assert not np.any(cmds[-1]) and ctl.last_output.mode == "safe_stale_state"
    assert len(estimates) <= n_est + 5  # only while the last sample was fresh
    z_last = estimates[-1][0]
    assert abs(z_last - q[2]) < 1e-4


# ------------------------------------------------------------------ the simulator's IMU
def test_sim_imu_specific_force_rate_and_noise():
    """Exact: at rest +9.81 up in the base frame; a base yawed 90 deg accelerating at 2 m/s^2
    along world x measures (0, -2, 9.81) in its own frame; the angular rate is the base's; a
    re-sent sample (same time) is the same sample. With noise: its std per axis (20 000
    samples, within 5 %) and the bias drawn once."""
    from wbc_dynamics.sim.sim_node import SimImu

    imu = SimImu()
    q = np.array([0.0, 0.0, 0.3, *_yaw_quat(math.pi / 2)])
    v = np.zeros(6)
    v[3:6] = (0.1, 0.2, 0.3)
    g, f, o = imu.sample(0.0, q, v)
    np.testing.assert_allclose(f, [0.0, 0.0, 9.81], atol=1e-12)
    np.testing.assert_array_equal(g, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(o, q[3:7])
    # world velocity (0.002, 0, 0) after 1 ms: in the base frame (yaw 90 deg) that is -y
    v2 = v.copy()
    v2[0:3] = (0.0, -0.002, 0.0)
    g, f, o = imu.sample(0.001, q, v2)
    np.testing.assert_allclose(f, [0.0, -2.0, 9.81], atol=1e-9)
    assert imu.sample(0.001, q, v2)[1] is f
    with pytest.raises(ValueError, match="imu_gyro_noise: must be finite and >= 0"):
        SimImu(gyro_noise=-1.0)
    noisy = SimImu(gyro_noise=0.002, gyro_bias=0.01, accelerometer_noise=0.05,
                   orientation_noise=0.0035, seed=1)
    q0 = np.array([0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0])
    samples = [noisy.sample(k * 1e-3, q0, np.zeros(6)) for k in range(20000)]
    gyro = np.array([s[0] for s in samples])
    accel = np.array([s[1] for s in samples])
    np.testing.assert_allclose(gyro.mean(axis=0), noisy.gyro_bias, atol=1e-4)
    assert np.all(np.abs(gyro.std(axis=0) / 0.002 - 1.0) < 0.05)
    assert np.all(np.abs(accel.std(axis=0) / 0.05 - 1.0) < 0.05)
    tilt = np.array([2.0 * np.linalg.norm(s[2][:3]) for s in samples])  # rotation angle [rad]
    assert abs(math.sqrt(np.mean(tilt ** 2)) / (0.0035 * math.sqrt(3)) - 1.0) < 0.05


def test_sim_imu_biases_wander_as_random_walks():
    """The gyro and accelerometer biases start at their drawn values and wander as random walks:
    over 200 runs of 2 s at 1 kHz, the bias change after 2 s has std ``walk sqrt(2)`` per
    axis (within 12 %) and mean 0; the readings at rest are the biases (no noise); a re-sent
    sample (same time) does not step the walk; negative walks are refused, naming them."""
    from wbc_dynamics.sim.sim_node import SimImu

    q0 = np.array([0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0])
    wg, wa = 2e-5, 3e-3
    rng = np.random.default_rng(7)
    dg, da = [], []
    for _ in range(200):
        imu = SimImu(accelerometer_bias=0.05, gyro_bias_walk=wg, accelerometer_bias_walk=wa,
                     rng=rng)
        b0 = imu.accelerometer_bias.copy()
        g0, f0, _ = imu.sample(0.0, q0, np.zeros(6))
        np.testing.assert_array_equal(f0, np.array([0.0, 0.0, 9.81]) + b0)
        for k in range(1, 2001):
            g, f, _ = imu.sample(k * 1e-3, q0, np.zeros(6))
        assert imu.sample(2.0, q0, np.zeros(6))[1] is f  # re-sent: no step
        np.testing.assert_allclose(f, np.array([0.0, 0.0, 9.81]) + imu.accelerometer_bias,
                                   atol=1e-12)
        dg.append(g - g0)
        da.append(imu.accelerometer_bias - b0)
    dg, da = np.array(dg), np.array(da)
    assert abs(dg.std() / (wg * math.sqrt(2.0)) - 1.0) < 0.12, dg.std()
    assert abs(da.std() / (wa * math.sqrt(2.0)) - 1.0) < 0.12, da.std()
    assert abs(da.mean()) < 4 * wa * math.sqrt(2.0) / math.sqrt(da.size)
    with pytest.raises(ValueError, match="imu_accelerometer_bias_walk: must be finite and >= 0"):
        SimImu(accelerometer_bias_walk=-1.0)


# ------------------------------------------------------------------ LegOdometry = the controller's
def test_leg_odometry_runs_the_controllers_estimator():
    """The same inputs to LegOdometry and to a controller in base_state imu: the same estimate
    (bit for bit), standing and with a foot in swing; bad inputs rejected naming the field."""
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.leg_odometry import LegOdometry

    info = robot_info("quadruped")
    cfg = {"robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
           "base_state": "imu"}
    ctl = WholeBodyController(cfg)
    lo = LegOdometry(cfg)
    assert lo.contact_links == ctl.base_estimator.feet
    rng = np.random.default_rng(5)
    q = np.array(info["standing_q"])
    ctl.set_reference(np.zeros(12), 0.0)
    for k in range(200):
        t = 1e-3 * k
        qj = q[7:] + 0.01 * np.sin(7.0 * t + np.arange(12))
        qdj = 0.07 * np.cos(7.0 * t + np.arange(12))
        w = rng.normal(0.0, 0.01, 3)
        a = np.array([0.0, 0.0, 9.81]) + rng.normal(0.0, 0.05, 3)
        if k == 100:
            swing = [lo.contact_links[0]]
            lo.set_contact_schedule(swing)
            ctl.set_contact_schedule(swing)
        for x in (ctl, lo):
            x.set_joint_state(qj, qdj, t)
            x.set_imu(w, a, q[3:7], t)
        ctl.set_reference(np.zeros(12), t)
        ctl.update(t)
        assert lo.update(t)
    np.testing.assert_array_equal(lo.estimator.data.x, ctl.base_estimator.data.x)
    np.testing.assert_array_equal(lo.estimator.data.P, ctl.base_estimator.data.P)
    assert not lo.update(0.2)  # no new sample
    with pytest.raises(ValueError, match="imu.angular_velocity: contains a non-finite value"):
        lo.set_imu([0.0, math.nan, 0.0], [0.0, 0.0, 9.81], q[3:7], 1.0)
    with pytest.raises(ValueError, match="is not after the previous sample's"):
        lo.set_imu([0.0, 0.0, 0.0], [0.0, 0.0, 9.81], q[3:7], 0.1)
    with pytest.raises(ValueError, match="joint_state.velocity: non-finite value"):
        lo.set_joint_state(q[7:], np.full(12, math.inf), 1.0)
    with pytest.raises(ValueError, match=r"contact schedule: \['nope'\] are not contact links"):
        lo.set_contact_schedule(["nope"])
    assert not lo.update(10.0)  # stale inputs: no step
    with pytest.raises(ValueError, match="contact_links: link 'nope' is not a link"):
        LegOdometry({"robot": "quadruped", "contact_links": ["nope"]})


# ------------------------------------------------------------------ launch plan
def test_sim_launch_plan_passes_base_state_and_defaults_to_the_estimate():
    from wbc_dynamics.sim.launch_plan import sim_launch_plan

    _, ctl, _ = sim_launch_plan({"base_state": "imu"}, ".")
    assert ctl.parameters[-1]["base_state"] == "imu"
    _, ctl, _ = sim_launch_plan({"base_state": "odom"}, ".")
    assert ctl.parameters[-1]["base_state"] == "odom"
    # default: a floating base runs on its own estimate, from an IMU with typical MEMS noise
    sim, ctl, _ = sim_launch_plan({}, ".")
    assert ctl.parameters[-1]["base_state"] == "imu"
    assert sim.parameters[0]["imu_gyro_noise"] == 0.002
    assert sim.parameters[0]["imu_accelerometer_noise"] == 0.05
    assert sim.parameters[0]["encoder_position_noise"] == 1e-3
    assert sim.parameters[0]["encoder_resolution"] == pytest.approx(2 * math.pi / 2 ** 14)
    sim, ctl, _ = sim_launch_plan({"robot": "arm"}, ".")
    assert "base_state" not in ctl.parameters[-1] and "imu_gyro_noise" not in sim.parameters[0]
    assert sim.parameters[0]["encoder_velocity_noise"] == 0.02
    sim, _, _ = sim_launch_plan({"sensing": "exact"}, ".")
    assert not any(k.startswith(("imu_", "encoder_")) for k in sim.parameters[0])
    with pytest.raises(ValueError, match=r"sensing: expected realistic \| exact, got 'perfect'"):
        sim_launch_plan({"sensing": "perfect"}, ".")
    with pytest.raises(ValueError, match=r"base_state: imu needs a floating-base robot"):
        sim_launch_plan({"robot": "arm", "base_state": "imu"}, ".")
    with pytest.raises(ValueError, match=r"base_state: expected odom \| imu, got 'gps'"):
        sim_launch_plan({"base_state": "gps"}, ".")
