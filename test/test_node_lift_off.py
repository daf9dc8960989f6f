"""Announced contact releases over ROS: ``~/contact_lift_off`` into the controller node in its own
process (plain rclpy over DDS, localhost only), and ``wbc_reference``'s trot publishing them.

The quadruped stands on four feet with the contact state filter and an unload ramp. Released by
the stance mask alone (``~/contact_schedule``), a foot's predicted normal force
(``~/contact_wrench/<link>``) steps from its full share to zero in one tick; announced on
``~/contact_lift_off`` first, it falls over the ramp's ticks before the release instead.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from node_harness import (  # noqa: E402
    Client,
    spin_until,
    start_controller,
    start_module,
    stop_process,
)
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import Float64MultiArray, UInt8MultiArray  # noqa: E402

from wbc_dynamics.robots import robot_info  # noqa: E402

CONTROL_RATE = 1000.0  # [Hz] the stance filter counts an announcement down 1 / rate a tick
RAMP_TICKS = 8  # contact_unload_ramp in ticks
LIFT_OFF_TICKS = 16  # the announced lift-off, in ticks from the announcement's first tick
RELEASED = "LF_foot"


@pytest.fixture(scope="module")
def ros(ros_env):
    rclpy.init()
    yield
    rclpy.shutdown()


class _Standing:
    """The quadruped's controller node driven tick by tick: one joint state (distinct
    positions, so its command echo identifies the tick) and the contact forces it published."""

    def __init__(self, client: Client, ns: str) -> None:
        info = robot_info("quadruped")
        self.client, self.links = client, list(info["contact_links"])
        self.names = info["joint_names"]
        self.q = np.array(info["standing_q"])
        self.k = 0
        self.forces: dict[str, list[float]] = {ln: [] for ln in self.links}
        for ln in self.links:
            client.node.create_subscription(
                WrenchStamped, f"{ns}/wbc_controller/contact_wrench/{ln}",
                lambda m, ln=ln: self.forces[ln].append(m.wrench.force.z), 10)
        node = client.node
        self.pub_schedule = node.create_publisher(
            UInt8MultiArray, f"{ns}/wbc_controller/contact_schedule", 10)
        self.pub_lift_off = node.create_publisher(
            Float64MultiArray, f"{ns}/wbc_controller/contact_lift_off", 10)
        od = Odometry()
        p, o = od.pose.pose.position, od.pose.pose.orientation
        p.x, p.y, p.z = (float(x) for x in self.q[:3])
        o.x, o.y, o.z, o.w = (float(x) for x in self.q[3:7])
        self.odom = od

    def tick(self) -> dict[str, float]:
        """One tick's predicted normal force per contact link [N]."""
        self.k += 1
        qj = self.q[7:] + 1e-9 * self.k
        n0 = len(self.forces[RELEASED])
        self.client.pub_odom.publish(self.odom)
        assert self.client.send_state_until_echo(self.names, qj, np.zeros(12), echo_q=qj), \
            "no command echo"
        assert self.client.spin(lambda: len(self.forces[RELEASED]) > n0, 5.0), "no wrench"
        self.client.spin(lambda: all(len(self.forces[ln]) > n0 for ln in self.links), 1.0)
        return {ln: self.forces[ln][-1] for ln in self.links}

    def publish(self, pub, msg) -> None:
        """Publish and give the node time to take it before the next tick (DDS orders no
        samples across topics)."""
        assert self.client.spin(lambda: pub.get_subscription_count() > 0, 10.0)
        pub.publish(msg)
        self.client.spin(lambda: False, 0.3)

    def mask(self, swing: set[str]) -> None:
        self.publish(self.pub_schedule,
                     UInt8MultiArray(data=[0 if ln in swing else 1 for ln in self.links]))

    def settle(self, full: float) -> float:
        """Tick until every foot carries load and the released foot's force is steady; that
        force [N]."""
        last = math.nan
        for _ in range(60):
            f = self.tick()
            if min(f.values()) > 0.1 * full and abs(f[RELEASED] - last) <= 1e-6 * full:
                return f[RELEASED]
            last = f[RELEASED]
        raise AssertionError(f"the feet did not settle: {f}")


def test_a_lift_off_announced_over_the_topic_unloads_the_foot_over_the_ramp(ros):
    ns = "/lift_off_test"
    dt = 1.0 / CONTROL_RATE
    proc = start_controller(ns, {
        "robot": "quadruped", "floating_base": True, "method": "lcp_noslip", "friction": 0.8,
        "control_rate": CONTROL_RATE, "contact_state_filter": True, "noslip_min_norm": True,
        "contact_unload_ramp": RAMP_TICKS * dt, "effort_limits": [1000.0],
        # this test ticks at its own pace (a tick per echo): nothing goes stale meanwhile
        "state_timeout": 5.0, "reference_timeout": 60.0, "contacts_rate": 1e5})
    client = Client(ns, "lift_off_test_client")
    try:
        client.wait_connected()
        robot = _Standing(client, ns)
        weight = 4.8 * 9.81
        client.send_reference(robot.names, np.zeros(12))
        full = robot.settle(0.25 * weight)

        # released by the mask alone: a step from the full share to nothing in one tick
        before = robot.tick()[RELEASED]
        robot.mask({RELEASED})
        after = robot.tick()[RELEASED]
        assert before == pytest.approx(full, rel=1e-3) and after == 0.0, (before, after, full)
        robot.mask(set())
        assert robot.settle(0.25 * weight) == pytest.approx(full, rel=1e-3)

        # announced: the same release falls over the ramp's ticks before the lift-off
        inf = math.inf
        robot.publish(robot.pub_lift_off, Float64MultiArray(
            data=[LIFT_OFF_TICKS * dt if ln == RELEASED else inf for ln in robot.links]))
        ramp = [robot.tick()[RELEASED] for _ in range(LIFT_OFF_TICKS + 2)]
        print("announced release, the foot's normal force per tick [N]:", ramp, "full", full)
        assert ramp[0] == pytest.approx(full, rel=1e-3), ramp   # the ramp has not begun
        assert all(b <= a + 1e-6 * full for a, b in zip(ramp, ramp[1:], strict=False)), ramp
        between = [f for f in ramp if 0.05 * full < f < 0.95 * full]
        assert len(between) >= RAMP_TICKS // 2, ramp             # several ticks on the way
        assert ramp[-1] < 0.1 * full, ramp                       # unloaded at the lift-off
        robot.mask({RELEASED})
        assert robot.tick()[RELEASED] == 0.0
        assert client.spin(lambda: bool(client.diag), 5.0), "no diagnostics"
        assert client.diag[-1]["rejected_contact_lift_off"] == "0"
        assert proc.poll() is None
    finally:
        client.close()
        print(stop_process(proc))


def test_wbc_reference_trot_announces_each_stance_foots_lift_off(ros):
    """``wbc_reference --kind trot`` publishes, with each stance mask, each stance foot's time
    until its lift-off (inf while it swings) on ``wbc_controller/contact_lift_off``, in the
    mask's order: a foot is announced while the mask has it in stance, within the gait's
    start (0.5 s) and period (0.3 s), and the announced times count down between messages."""
    ns = "/lift_off_reference"
    rate = 100.0
    proc = start_module("wbc_dynamics.sim.references", ns, {"rate": rate})
    node = rclpy.create_node("lift_off_reference_client")
    masks: list[list[int]] = []
    times: list[list[float]] = []
    node.create_subscription(UInt8MultiArray, f"{ns}/wbc_controller/contact_schedule",
                             lambda m: masks.append(list(m.data)), 10)
    node.create_subscription(Float64MultiArray, f"{ns}/wbc_controller/contact_lift_off",
                             lambda m: times.append(list(m.data)), 10)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        assert spin_until(ex, lambda: len(masks) >= 100 and sum(math.inf in t for t in times)
                          >= 10, 60.0), (len(times), len(masks), proc.poll())
        for data in times:
            assert len(data) == 4 and sum(x == math.inf for x in data) in (0, 2), data
            assert all(x == math.inf or 0.0 <= x <= 0.5 + 0.3 for x in data), data
        # the topics are separate: pair the messages of the same tick by their stance feet
        # (a mask can be lost or late around a change of pairs), most of them must pair
        n = min(len(masks), len(times))
        agree = sum(all((x != math.inf) == (m == 1) for x, m in zip(t, ms, strict=True))
                    for t, ms in zip(times[-n:], masks[-n:], strict=True))
        assert agree >= 0.8 * n, (agree, n)
        steps = [a - b for t0, t1 in zip(times, times[1:], strict=False)
                 for a, b in zip(t0, t1, strict=True) if math.isfinite(a) and b < a]
        assert np.median(steps) == pytest.approx(1.0 / rate, rel=0.5), steps[:20]
    finally:
        ex.remove_node(node)
        node.destroy_node()
        print(stop_process(proc))
