"""Node logic without a second process: event-mode rate cap, timer mode, watchdog, stop command."""

from __future__ import annotations

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.lifecycle import TransitionCallbackReturn  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from wbc_dynamics.node import WbcControllerNode  # noqa: E402
from wbc_dynamics.robots import robot_info  # noqa: E402


@pytest.fixture
def make_node(ros_env):
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    nodes = []

    def make(**params):
        over = [Parameter(k, value=v) for k, v in params.items()]
        node = WbcControllerNode(context=ctx, parameter_overrides=over)
        nodes.append(node)
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        published = []
        orig = node._pub_cmd.publish
        node._pub_cmd.publish = lambda m: (published.append(np.array(m.data)), orig(m))[1]
        return node, published, ctx

    yield make
    for n in nodes:
        n.destroy_node()
    rclpy.shutdown(context=ctx)


def _js(names, q):
    m = JointState()
    m.name = list(names)
    m.position = [float(x) for x in q]
    m.velocity = [0.0] * len(q)
    return m


def test_event_mode_rate_cap_token_bucket(make_node):
    """Average <= 1.5 x control_rate; bursts of up to 5 states each tick; excess only updates
    the state (counted as rate-limited). The node's clock is replaced by a manual one, so the
    token count does not depend on how long a sleep takes on a loaded machine."""
    info = robot_info("arm")
    node, published, _ = make_node(robot="arm", control_rate=100.0)
    clock = [node._now()]
    node._now = lambda: clock[0]
    node._steady_clock = lambda: 0.0                           # the steady clock stands still
    node.controller.set_reference(np.zeros(11), clock[0])
    q = np.array(info["standing_q"])
    for k in range(8):                                          # a burst at one instant
        node._on_joint_state(_js(info["joint_names"], q + 0.01 * k))
    assert len(published) == 5 and node.controller.ticks == 5
    assert node._rate_limited == 3
    np.testing.assert_array_equal(node.controller._qj, q + 0.07)  # state still updated
    clock[0] += 0.021                 # 150 Hz x 0.021 s = 3.15 tokens: exactly 3 more ticks
    for _ in range(5):
        node._on_joint_state(_js(info["joint_names"], q))
    assert len(published) == 8 and node._rate_limited == 5


def test_stale_state_tick_publishes_no_record_and_takes_no_token(make_node):
    """A floating-base node with joint states but no odom yet (a simulator's odom publisher
    matched late): each joint state gets the zero-torque stale-state command on
    effort_controller/commands, but no ~/joint_commands record (wbc_sim's lockstep steps on the
    record matching its state: it stepped go2 on ~60 such zeros and the base sagged to 90 %),
    and no token of the rate cap -- on a paused simulator's clock (standing still) the bucket
    never refills, so the re-sent initial state must still be answered once odom arrives."""
    info = robot_info("quadruped")
    node, published, _ = make_node(robot="quadruped", floating_base=True, method="lcp_noslip")
    records = []
    node._pub_js.get_subscription_count = lambda: 1  # the record goes to subscribers only
    orig = node._pub_js.publish
    node._pub_js.publish = lambda m: (records.append(np.array(m.effort)), orig(m))[1]
    clock = [node._now()]
    node._now = lambda: clock[0]                                # a paused clock
    node._steady_clock = lambda: 0.0                            # (and no time passing at all)
    q = np.array(info["standing_q"])
    names = info["joint_names"]
    node.controller.set_reference(np.zeros(12), clock[0])
    for _ in range(8):                                          # > the burst of 5 tokens
        node._on_joint_state(_js(names, q[7:]))
    assert len(published) == 8 and all(np.all(p == 0.0) for p in published)
    assert records == [] and node._rate_limited == 0
    assert node.controller.safe_tick_counts == {"safe_stale_state": 8}
    node.controller.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), clock[0])
    node._on_joint_state(_js(names, q[7:]))                     # the clock has not moved
    assert len(records) == 1 and np.any(records[0] != 0.0)      # the command, with a record
    np.testing.assert_array_equal(records[0], published[-1])


def test_a_paused_simulator_clock_cannot_starve_the_rate_cap(make_node):
    """A lockstep simulator holds its clock still until the first command arrives and re-sends
    its initial state every 0.1 s. If the node's first answers are lost (published before the
    simulator's command subscription matched), the re-sent state must still be answered: the
    bucket refills with steady time when the node's clock stands still. (It refilled with the
    node's clock only: after five answers every re-sent state was rate-limited for good, the
    simulator waited for ever -- test_ros_closed_loop[talos_reduced] in CI.)"""
    info = robot_info("quadruped")
    node, published, _ = make_node(robot="quadruped", floating_base=True, control_rate=1000.0)
    clock, steady = [node._now()], [100.0]
    node._now = lambda: clock[0]                                # the simulated clock, paused
    node._steady_clock = lambda: steady[0]
    q = np.array(info["standing_q"])
    names = info["joint_names"]
    ctl = node.controller
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), clock[0])
    for _ in range(6):                                          # no reference: safe commands
        node._on_joint_state(_js(names, q[7:]))
    assert len(published) == 5 and node._rate_limited == 1
    assert ctl.safe_tick_counts == {"safe_stale_reference": 5}
    for k in range(1, 4):                                       # re-sent every 0.1 s (steady)
        steady[0] += 0.1
        node._on_joint_state(_js(names, q[7:]))
        assert len(published) == 5 + k and node._rate_limited == 1
    # a flood at one steady instant is still capped: the burst refilled, no more
    for _ in range(10):
        node._on_joint_state(_js(names, q[7:]))
    assert len(published) == 8 + 4 and node._rate_limited == 1 + 6


def test_an_event_tick_uses_the_odometry_published_before_its_joint_state(make_node):
    """wbc_sim publishes each step's odom, then its joint_states. The executor serves ready
    subscriptions in creation order (joint_states first), so with both waiting the tick ran
    before the odom callback, on the previous step's base state. The node now takes the
    waiting odometry before it ticks: every tick sees the odom published with its state."""
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    info = robot_info("quadruped")
    # (no watchdog tick within the test: a state_timeout it does not reach)
    node, published, ctx = make_node(robot="quadruped", floating_base=True, state_timeout=600.0,
                                     reference_timeout=600.0)
    ctl = node.controller
    q = np.array(info["standing_q"])
    ctl.set_reference(np.zeros(12), node._now())
    events = []
    set_base, tick = ctl.set_base_state, node._tick
    ctl.set_base_state = lambda p, *a: (events.append(round(float(p[2]), 3)), set_base(p, *a))[1]
    node._tick = lambda now: (events.append("tick"), tick(now))[1]
    client = rclpy.create_node("odom_order_client", context=ctx)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub_odom = client.create_publisher(Odometry, "/odom", qos)
    pub_js = client.create_publisher(JointState, "/joint_states", qos)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    ex.add_node(client)
    t0 = time.monotonic()
    odom = Odometry()
    odom.pose.pose.orientation.w = 1.0
    # matched both ways: an odom has reached the controller (best effort drops until then);
    # and the watchdog's first tick (no tick yet: the stale-state zero) is behind us
    while not (any(isinstance(e, float) for e in events) and published) \
            and time.monotonic() - t0 < 10.0:
        odom.pose.pose.position.z = 0.3
        pub_odom.publish(odom)
        ex.spin_once(timeout_sec=0.05)
    events.clear()
    for k in range(5):
        odom.pose.pose.position.z = 0.40 + 0.01 * k
        pub_odom.publish(odom)                                  # as wbc_sim: odom first
        pub_js.publish(_js(info["joint_names"], q[7:]))
        time.sleep(0.02)                                        # both delivered, both waiting
        n = len(published)
        t1 = time.monotonic()
        while len(published) == n and time.monotonic() - t1 < 5.0:
            ex.spin_once(timeout_sec=0.05)
        assert len(published) == n + 1, events
        # the base state the tick used is the one published with its joint state
        assert events[events.index("tick", len(events) - 2) - 1] == round(0.40 + 0.01 * k, 3), \
            events
        events.clear()
    ex.remove_node(client)
    ex.remove_node(node)
    client.destroy_node()


def test_timer_mode_ticks_at_control_rate_and_watchdog_zero(make_node):
    info = robot_info("arm")
    node, published, ctx = make_node(robot="arm", control_mode="timer", control_rate=200.0,
                                     state_timeout=0.2)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    q = np.array(info["standing_q"])
    node._on_joint_state(_js(info["joint_names"], q))
    assert published == []                                      # timer mode: no event tick
    node.controller.set_reference(np.zeros(11), node._now())
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.15:
        ex.spin_once(timeout_sec=0.01)
    n = len(published)
    assert 10 <= n <= 31, f"{n} ticks in 0.15 s at 200 Hz"
    assert all(np.any(p != 0.0) for p in published)             # gravity compensation
    while time.monotonic() - t0 < 0.5:                          # state goes stale at 0.2 s
        ex.spin_once(timeout_sec=0.01)
    assert np.all(published[-1] == 0.0)
    ex.remove_node(node)


def test_deactivate_sends_zero_and_stops(make_node):
    info = robot_info("arm")
    node, published, _ = make_node(robot="arm")
    node.controller.set_reference(np.zeros(11), node._now())
    node._on_joint_state(_js(info["joint_names"], np.array(info["standing_q"])))
    assert len(published) == 1 and np.any(published[0] != 0.0)
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert len(published) == 2 and np.all(published[1] == 0.0)
    time.sleep(0.002)
    node._on_joint_state(_js(info["joint_names"], np.array(info["standing_q"])))
    node._on_watchdog()
    assert len(published) == 2


def _standing_quadruped_lf_in_swing(node):
    """The quadruped node's controller standing, LF_foot in swing by ~/contact_schedule: one
    tick's output and its time."""
    from std_msgs.msg import UInt8MultiArray

    ctl = node.controller
    q = np.array(robot_info("quadruped")["standing_q"])
    now = node._now()
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), now)
    ctl.set_joint_state(q[7:], np.zeros(12), now)
    ctl.set_reference(np.zeros(12), now)
    mask = [0 if ln == "LF_foot" else 1 for ln in ctl.contact_links]
    node._on_contact_schedule(UInt8MultiArray(data=mask))
    return ctl.update(now), now


def test_contact_schedule_topic_sets_swing_feet_and_rejects_bad_masks(make_node):
    """~/contact_schedule (std_msgs/UInt8MultiArray): one 0/1 entry per contact link."""
    from std_msgs.msg import UInt8MultiArray

    node, _, _ = make_node(robot="quadruped", floating_base=True, method="lcp_noslip")
    ctl = node.controller
    out, now = _standing_quadruped_lf_in_swing(node)
    assert len(out.contact_ids) == 3 and all(c[0] != "LF_foot" for c in out.contact_ids)
    assert np.sum(out.contact_forces[:, 2]) == pytest.approx(4.8 * 9.81, rel=1e-6)
    for bad in ([1, 1, 1], [1, 1, 2, 1]):                      # wrong length, not 0/1
        node._on_contact_schedule(UInt8MultiArray(data=bad))
    assert node._rejected["contact_schedule"] == {"size": 1, "bad_value": 1}
    assert "entries must be 0 (swing) or 1 (stance)" in node._last_reject
    assert len(ctl.update(now).contact_ids) == 3               # the last valid mask still holds
    node._on_contact_schedule(UInt8MultiArray(data=[1, 1, 1, 1]))
    assert len(ctl.update(now).contact_ids) == 4


def test_contact_lift_off_topic_combines_with_the_schedule_and_rejects_bad_times(make_node):
    """~/contact_lift_off (std_msgs/Float64MultiArray, one time [s] per contact link, inf =
    none): the announcements reach the stance filter with the latest stance mask; a mask
    arriving later passes them on aged by the node-clock time since their arrival, and drops
    them once they are older than state_timeout; a bad message is a counted rejection that
    leaves the last valid announcements in force."""
    from std_msgs.msg import Float64MultiArray, UInt8MultiArray

    node, _, _ = make_node(robot="quadruped", floating_base=True, method="lcp_noslip",
                           contact_state_filter=True, noslip_min_norm=True,
                           contact_unload_ramp=0.02, state_timeout=0.1)
    ctl = node.controller
    clock = [node._now()]  # (~1.8e9 s: the times compare to 1e-6 s)
    node._now = lambda: clock[0]
    links = list(ctl.contact_links)
    f = ctl.contact_state

    def release_in():
        return {ln: float(f.data.release_in[f._index[ln]]) for ln in links}

    def mask(swing):
        node._on_contact_schedule(UInt8MultiArray(data=[0 if ln in swing else 1
                                                        for ln in links]))

    inf = float("inf")
    times = {"LF_foot": 0.05, "RH_foot": 0.0}
    node._on_contact_lift_off(Float64MultiArray(data=[times.get(ln, inf) for ln in links]))
    assert release_in() == {ln: times.get(ln, inf) for ln in links}
    clock[0] += 0.02
    mask({"RH_foot"})                                  # aged 20 ms; a swing link has none
    got = release_in()
    assert got["LF_foot"] == pytest.approx(0.03, abs=1e-6) and got["RH_foot"] == inf
    assert list(f.swing) == [ln == "RH_foot" for ln in links]
    clock[0] += 0.05
    mask(set())                                        # 70 ms: LF_foot's lift-off is due
    assert release_in() == {ln: 0.0 if ln in times else inf for ln in links}
    bad = ([0.1, inf, inf], [inf, float("nan"), inf, inf], [inf, -inf, inf, inf],
           [inf, inf, -0.01, inf])
    for data in bad:
        node._on_contact_lift_off(Float64MultiArray(data=data))
    assert node._rejected["contact_lift_off"] == {"size": 1, "non_finite": 2, "out_of_range": 1}
    assert f"negative for [{links[2]!r}]" in node._last_reject
    assert release_in() == {ln: 0.0 if ln in times else inf for ln in links}  # still in force
    clock[0] += 0.04                                   # 110 ms > state_timeout: dropped
    mask(set())
    assert release_in() == dict.fromkeys(links, inf)
    assert node._rejected["contact_schedule"] == {}


def test_contact_outputs_go_only_to_listened_publishers_with_the_tick_forces(make_node):
    """~/contact_wrench/<link> and ~/contact_markers: nothing is published (or converted)
    without a subscriber -- the humanoid's 8 wrenches + 8 markers had cost 367 us in 1 of 20
    ticks; a subscribed wrench carries the link's net force, a marker the arrow from the
    link's contact point along marker_scale x force, a link without contact a DELETE."""
    from geometry_msgs.msg import WrenchStamped
    from visualization_msgs.msg import Marker, MarkerArray

    # (a state_timeout no wait here reaches: a watchdog tick meanwhile would overwrite ``out``)
    node, _, ctx = make_node(robot="quadruped", floating_base=True, method="lcp_noslip",
                             publish_contacts=True, marker_scale=0.01, state_timeout=600.0)
    links = node.controller.contact_links
    out, _ = _standing_quadruped_lf_in_swing(node)
    calls = []
    for pub in [*node._pub_wrench.values(), node._pub_markers]:
        orig = pub.publish
        pub.publish = lambda m, orig=orig, topic=pub.topic_name: (calls.append(topic), orig(m))
    node._publish_contact_outputs(out)
    assert calls == []
    got_w, got_m = [], []
    listened = links[1]
    node.create_subscription(WrenchStamped, node._pub_wrench[listened].topic_name, got_w.append, 10)
    node.create_subscription(MarkerArray, node._pub_markers.topic_name, got_m.append, 10)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10.0 and not (
            node._pub_wrench[listened].get_subscription_count()
            and node._pub_markers.get_subscription_count()):
        ex.spin_once(timeout_sec=0.01)
    node._publish_contact_outputs(out)
    assert sorted(calls) == sorted([node._pub_wrench[listened].topic_name,
                                    node._pub_markers.topic_name])
    # what was published, before spinning: a timer's tick may refill ``out``'s buffers in place
    ids = list(out.contact_ids)
    forces, points = out.contact_forces.copy(), out.contact_points.copy()
    rows = [k for k, c in enumerate(ids) if c[0] == listened]
    f = forces[rows].sum(axis=0)
    while time.monotonic() - t0 < 10.0 and not (got_w and got_m):
        ex.spin_once(timeout_sec=0.01)
    ex.remove_node(node)
    w = got_w[-1].wrench.force
    # (to rounding: a watchdog tick at the same state may have published the last message)
    np.testing.assert_allclose([w.x, w.y, w.z], f, rtol=1e-9, atol=1e-9)
    assert f[2] > 1.0
    markers = got_m[-1].markers
    assert [m.id for m in markers] == list(range(len(links)))
    for ln, mk in zip(links, markers, strict=True):
        if ln == "LF_foot":                                     # in swing: no contact
            assert mk.action == Marker.DELETE
            continue
        rows = [k for k, c in enumerate(ids) if c[0] == ln]
        p0 = points[rows[-1]]
        p1 = p0 + 0.01 * forces[rows].sum(axis=0)
        assert mk.action == Marker.ADD and mk.type == Marker.ARROW
        np.testing.assert_allclose([[p.x, p.y, p.z] for p in mk.points], [p0, p1], rtol=1e-9,
                                   atol=1e-9)


def test_joint_state_subscription_is_raw_and_the_record_carries_its_stamp(make_node):
    """joint_states arrive serialized and are read in place: the command equals the one
    computed from the message object, and the ~/joint_commands record carries the state's
    header stamp (wbc_sim's lockstep steps on it) while subscribed, and is not published
    without a subscriber; garbage, little-endian (read in place) or big-endian (handed to the
    rmw), is a counted ``malformed`` rejection."""
    from rclpy.serialization import serialize_message

    info = robot_info("arm")
    node, published, _ = make_node(robot="arm")
    sub = next(e for e in node._entities if isinstance(e, rclpy.subscription.Subscription)
               and e.topic_name.endswith("/joint_states"))
    assert sub.raw
    records = []
    node._pub_js.get_subscription_count = lambda: 1  # the record goes to subscribers only
    orig = node._pub_js.publish
    node._pub_js.publish = lambda m: (records.append(
        (m.header.stamp.sec, m.header.stamp.nanosec, np.array(m.effort))), orig(m))[1]
    node.controller.set_reference(np.zeros(11), node._now())
    q = np.array(info["standing_q"]) + 0.05
    msg = _js(info["joint_names"][::-1], q[::-1])             # any order
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1234, 5678
    node._on_joint_state(serialize_message(msg))
    time.sleep(0.01)                                           # a token for the rate cap
    node._on_joint_state(msg)                                  # the message object
    assert len(published) == 2 and np.any(published[0] != 0.0)
    np.testing.assert_array_equal(published[0], published[1])
    assert [r[:2] for r in records] == [(1234, 5678)] * 2
    np.testing.assert_array_equal(records[0][2], published[0])
    node._on_joint_state(b"\x00\x01\x00\x00" + bytes(3))     # read in place: too short
    node._on_joint_state(b"\x00\x00\x00\x00" + bytes(3))     # big-endian: the rmw's
    assert node._rejected["joint_states"] == {"malformed": 2}
    assert len(published) == 2
    node._pub_js.get_subscription_count = lambda: 0             # nobody takes the record
    time.sleep(0.01)
    node._on_joint_state(msg)
    assert len(published) == 3 and len(records) == 2           # the command, no record


def test_odometry_subscription_is_raw_read_in_place_or_deserialized_or_rejected(make_node):
    """odom arrives serialized: little-endian CDR is read in place, big-endian CDR (another
    encapsulation) is deserialized by the rmw to the same base state, and bytes that are no
    Odometry are a counted ``malformed`` rejection that leaves the previous state."""
    import struct

    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message

    node, _, _ = make_node(robot="quadruped", floating_base=True, method="lcp_noslip")
    sub = next(e for e in node._entities if isinstance(e, rclpy.subscription.Subscription)
               and e.topic_name.endswith("/odom"))
    assert sub.raw
    ctl = node.controller
    values = np.array([0.1, -0.2, 0.45, 0.0, 0.0, np.sin(0.2), np.cos(0.2), 0.3, 0.0, -0.1,
                       0.0, 0.05, 0.2])               # position, xyzw, linear, angular
    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = "odom", "base_link"
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = values[:7]
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = values[7:]
    # classic CDR, big-endian: stamp; "odom" (5 bytes with NUL, body offset 12..17, 3 bytes
    # to align 4); "base_link" (10 bytes, 24..34); 6 bytes to align the doubles to 8 (at 40)
    big_endian = (b"\x00\x00\x00\x00" + struct.pack(">iI", 3, 4)
                  + struct.pack(">I", 5) + b"odom\x00" + b"\x00" * 3
                  + struct.pack(">I", 10) + b"base_link\x00" + b"\x00" * 6
                  + struct.pack(">85d", *values[:7], *np.zeros(36), *values[7:], *np.zeros(36)))
    for data in (serialize_message(msg), big_endian):
        ctl.set_base_state(np.zeros(3), np.array([0.0, 0, 0, 1]), np.zeros(3), np.zeros(3), 0.0)
        node._on_odom(data)
        np.testing.assert_allclose(ctl._q[:7], values[:7], rtol=0, atol=1e-15)
        np.testing.assert_allclose(ctl._v[:6], values[7:], rtol=0, atol=1e-15)
    node._on_odom(b"\x00\x01\x00\x00garbage")
    assert node._rejected["odom"] == {"malformed": 1}
    assert "odom: not a serialized Odometry" in node._last_reject
    np.testing.assert_allclose(ctl._q[:7], values[:7], rtol=0, atol=1e-15)


def _callback_of(node, topic_suffix):
    import rclpy.subscription

    for e in node._entities:
        if isinstance(e, rclpy.subscription.Subscription) and e.topic_name.endswith(topic_suffix):
            return e.callback
    raise AssertionError(f"no subscription on *{topic_suffix}")


def test_unexpected_exception_in_a_callback_is_counted_and_answered_with_zero(make_node):
    """The callbacks the executor runs are guarded: a bug (here: the controller's tick raising)
    is counted in internal_errors, logged, and the active node publishes the zero command;
    the next good tick controls again."""
    info = robot_info("arm")
    node, published, _ = make_node(robot="arm")
    names, q = info["joint_names"], np.array(info["standing_q"])
    node.controller.set_reference(np.zeros(11), node._now())
    on_js = _callback_of(node, "joint_states")
    orig = node.controller.update
    node.controller.update = lambda now: (_ for _ in ()).throw(RuntimeError("boom"))
    on_js(_js(names, q))                                       # must not raise
    assert node._internal_errors == 1 and "RuntimeError: boom" in node._last_internal_error
    assert len(published) == 1 and np.all(published[0] == 0.0)
    node.controller.update = orig
    time.sleep(0.01)                                           # a token for the rate cap
    on_js(_js(names, q + 0.01))
    assert len(published) == 2 and np.any(published[1] != 0.0)


def test_refused_parameter_sets_are_counted(make_node):
    node, _, _ = make_node(robot="arm")
    res = node.set_parameters([Parameter("kd", value=[float("nan")])])
    assert not res[0].successful and "kd" in res[0].reason
    res = node.set_parameters([Parameter("robot", value="humanoid")])
    assert not res[0].successful and "fixed while configured" in res[0].reason
    assert node._rejected["parameters"] == {"refused": 2}
    node._reject("robot_description", ValueError("link 'x': bad"))   # any input topic
    node._publish_diagnostics()
    assert node._rejected["robot_description"] == {"invalid": 1}


def test_diagnostics_report_how_far_a_stamped_reference_lags_the_clock(make_node):
    """A reference stamped behind the node's clock (a planner sampling an older time, e.g.
    starved of CPU while a lockstep simulator goes on) is reported as its stamp lag, last and
    maximum, in /diagnostics; its age (time since arrival) cannot show that. An unstamped
    reference (stamp 0 = now) changes neither."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    info = robot_info("arm")
    node, _, _ = make_node(robot="arm")
    clock = [100.0]
    node._now = lambda: clock[0]
    diags = []
    node._pub_diag.publish = diags.append

    def reference(stamp_s):
        m = JointTrajectory()
        m.joint_names = list(info["joint_names"])
        m.header.stamp.sec = int(stamp_s)
        m.header.stamp.nanosec = int(round((stamp_s - int(stamp_s)) * 1e9))
        p = JointTrajectoryPoint()
        p.accelerations = [0.0] * len(m.joint_names)
        m.points = [p]
        return m

    def values():
        node._publish_diagnostics()
        return {kv.key: kv.value for kv in diags[-1].status[0].values}

    assert "reference_stamp_lag_s" not in values()
    node._on_reference(reference(99.75))
    assert node.controller.reference_fresh(clock[0])
    v = values()
    assert float(v["reference_stamp_lag_s"]) == pytest.approx(0.25, abs=1e-6)
    assert float(v["reference_stamp_lag_max_s"]) == pytest.approx(0.25, abs=1e-6)
    assert float(v["age_reference_s"]) == 0.0  # it arrived just now
    clock[0] = 100.5
    node._on_reference(reference(100.49))
    node._on_reference(reference(0.0))           # unstamped: not a lag
    v = values()
    assert float(v["reference_stamp_lag_s"]) == pytest.approx(0.01, abs=1e-6)
    assert float(v["reference_stamp_lag_max_s"]) == pytest.approx(0.25, abs=1e-6)


def test_diagnostics_report_the_contact_state_filter(make_node):
    """contact_state_filter: /diagnostics name the stance links, how many are loaded, the
    decisions changed (in total and per second since the last report) and failed corrections."""
    info = robot_info("quadruped")
    node, _, _ = make_node(robot="quadruped", floating_base=True, method="lcp_noslip",
                           contact_state_filter=True)
    clock = [10.0]
    node._now = lambda: clock[0]
    diags = []
    node._pub_diag.publish = diags.append
    ctl = node.controller
    q = np.array(info["standing_q"], dtype=float)

    def tick(t, swing=()):
        ctl.set_contact_schedule(list(swing))
        ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), t)
        ctl.set_joint_state(q[7:], np.zeros(12), t)
        ctl.set_reference(np.zeros(12), t, position=q[7:])
        assert ctl.update(t).mode == "control"

    def values():
        node._publish_diagnostics()
        return {kv.key: kv.value for kv in diags[-1].status[0].values}

    tick(10.0)
    v = values()
    assert v["contact_state_loaded"] == "4" and v["contact_state_decisions_changed"] == "4"
    assert sorted(v["contact_state_stance"].split(",")) == sorted(info["foot_links"])
    assert "contact_state_changes_per_s" not in v and v["contact_state_failed_corrections"] == "0"
    clock[0] = 12.0
    tick(10.001, swing=["LF_foot", "RH_foot"])  # two releases in 2 s
    v = values()
    assert v["contact_state_loaded"] == "2" and v["contact_state_decisions_changed"] == "6"
    assert float(v["contact_state_changes_per_s"]) == pytest.approx(1.0)
