"""Walking from a velocity profile (wbc_dynamics.sim.references.VelocityProfile): the parser and
its errors, sampling at the segment boundaries, ``sim.launch.py reference:=walk velocity:=...``'s
plan, and the ``wbc_reference`` node publishing the profile's commands on ``cmd_vel`` over
simulated time. The closed loop walking one: test/test_gait.py."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
import yaml

from wbc_dynamics.sim.launch_plan import SIM_LAUNCH_ARGS, sim_launch_plan
from wbc_dynamics.sim.references import VelocityProfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_parse_segments_and_sample_at_the_boundaries():
    p = VelocityProfile.parse("0.3,0,0@4; 0,0.3,0@4 ;0,0,0.3@4")
    assert p.segments == ((0.3, 0.0, 0.0, 4.0), (0.0, 0.3, 0.0, 4.0), (0.0, 0.0, 0.3, 4.0))
    assert p.starts == (0.0, 4.0, 8.0) and p.end == 12.0 and not p.constant
    # [start, start + duration): at a boundary the next segment applies; zero after the end
    assert p.sample(0.0) == (0.3, 0.0, 0.0)
    assert p.sample(3.999) == (0.3, 0.0, 0.0)
    assert p.sample(4.0) == (0.0, 0.3, 0.0)
    assert p.sample(8.0) == (0.0, 0.0, 0.3)
    assert p.sample(11.999) == (0.0, 0.0, 0.3)
    assert p.sample(12.0) == (0.0, 0.0, 0.0) and p.sample(1e6) == (0.0, 0.0, 0.0)
    assert p.sample(-1.0) == (0.3, 0.0, 0.0)  # before the start: the first command
    # the last without a duration holds for ever
    held = VelocityProfile.parse("0.3,0,0@2;0,-0.2,0.1")
    assert held.end == float("inf")
    assert held.sample(2.0) == (0.0, -0.2, 0.1) and held.sample(1e6) == (0.0, -0.2, 0.1)
    # a single command: the constant command (backwards compatible)
    c = VelocityProfile.parse("0.2,0.0,0.0")
    assert c.constant and c.sample(0.0) == c.sample(1e9) == (0.2, 0.0, 0.0)
    one = VelocityProfile.parse("0.2,0,0@3")
    assert not one.constant and one.sample(2.9) == (0.2, 0.0, 0.0) and one.sample(3.0) == (0, 0, 0)
    # text round trip (the ROS parameter), equality
    assert VelocityProfile.parse(p.to_text()) == p and VelocityProfile.parse(held.to_text()) == held


def test_from_python_values():
    p = VelocityProfile.from_value([(0.3, 0, 0, 2), (0, 0.3, 0)])
    assert p == VelocityProfile.parse("0.3,0,0@2;0,0.3,0")
    assert VelocityProfile.from_value([(0.3, 0, 0, 2), (0, 0.3, 0, None)]) == p
    assert VelocityProfile.from_value([0.2, 0.0, 0.0]) == VelocityProfile.parse("0.2,0,0")
    assert VelocityProfile.from_value((0.2, 0, 0)).constant
    assert VelocityProfile.from_value("0.3,0,0@2;0,0.3,0") == p
    assert VelocityProfile.from_value(p) is p


@pytest.mark.parametrize("text,message", [
    ("", "velocity: segment 1 of 1 (''): expected forward,left,yaw_rate"),
    ("0.3,0@4", "velocity: segment 1 of 1 ('0.3,0@4'): expected forward,left,yaw_rate"),
    ("0.3,0,0,0", "segment 1 of 1 ('0.3,0,0,0'): expected"),
    ("0.3,0,0@1;0.1,0,x@1", "velocity: segment 2 of 2 ('0.1,0,x@1'): not a number"),
    ("0.3,0,0;0,0.3,0@2", "velocity: segment 1 of 2 ('0.3,0,0'): only the last segment may omit"),
    ("0.3,0,0@0", "velocity: segment 1 of 1 ('0.3,0,0@0'): the duration must be > 0 s"),
    ("0.3,0,0@-2", "the duration must be > 0 s"),
    ("0.3,0,0@inf", "the duration must be > 0 s and finite"),
    ("0.3,0,0@1@2", "segment 1 of 1 ('0.3,0,0@1@2'): expected"),
    ("0.3,0,0@4;", "velocity: segment 2 of 2 (''): expected"),
    ("nan,0,0", "velocity: segment 1 of 1 ('nan,0,0'): forward, left, yaw_rate must be finite"),
])
def test_invalid_text_names_the_field_and_segment(text, message):
    with pytest.raises(ValueError) as exc:
        VelocityProfile.parse(text)
    assert message in str(exc.value)


def test_invalid_values_name_the_field_and_segment():
    with pytest.raises(ValueError, match=r"^velocity: expected 3 finite numbers"):
        VelocityProfile.from_value([0.2, 0.0])
    with pytest.raises(ValueError, match=r"^reference_options velocity: segment 1 of 2 "
                                         r"\(\(0\.3, 0, 0, None\)\): only the last"):
        VelocityProfile.from_value([(0.3, 0, 0, None), (0, 0, 0)], "reference_options velocity")
    with pytest.raises(ValueError, match=r"^velocity: segment 2 of 2 \(\(0, 0\)\): expected"):
        VelocityProfile.from_value([(0.3, 0, 0, 1), (0, 0)])
    with pytest.raises(ValueError, match=r"^velocity: no segments"):
        VelocityProfile.from_value([])
    with pytest.raises(ValueError, match=r"^velocity: expected forward,left,yaw_rate"):
        VelocityProfile.from_value(0.2)
    with pytest.raises(ValueError, match=r"^velocity_profile: segment 1 of 1"):
        VelocityProfile.parse("1,2", "velocity_profile")


def test_sim_launch_plan_passes_the_profile_to_the_reference_node():
    """``velocity`` stays the 3-double ``velocity`` parameter for a constant command; a profile
    becomes the string parameter ``velocity_profile`` (surviving the YAML parameter file);
    a bad one is refused naming ``velocity`` and the segment."""
    _, ctl, ref = sim_launch_plan({"reference": "walk"}, REPO)
    params = ref.parameters[0]
    assert params["velocity"] == [0.2, 0.0, 0.0] and "velocity_profile" not in params
    assert params["cmd_vel_topic"] == "cmd_vel" and ctl.parameters[-1]["gait"] == "trot"
    _, _, ref = sim_launch_plan({"reference": "walk", "velocity": "0.1, 0, 0.2"}, REPO)
    assert ref.parameters[0]["velocity"] == [0.1, 0.0, 0.2]
    _, _, ref = sim_launch_plan({"reference": "walk",
                                 "velocity": "0.3,0,0@4;0,0.3,0@4;0,0,0.3@4"}, REPO)
    params = ref.parameters[0]
    assert "velocity" not in params
    assert params["velocity_profile"] == "0.3,0.0,0.0@4.0;0.0,0.3,0.0@4.0;0.0,0.0,0.3@4.0"
    assert yaml.safe_load(yaml.safe_dump(params)) == params
    with pytest.raises(ValueError, match=r"^velocity: segment 2 of 2 \('0,0.3@4'\)"):
        sim_launch_plan({"reference": "walk", "velocity": "0.3,0,0@4;0,0.3@4"}, REPO)
    # not walking: the argument is not used
    _, _, ref = sim_launch_plan({"reference": "shift", "velocity": "bad"}, REPO)
    assert "velocity" not in ref.parameters[0]
    text = dict((n, h) for n, _, h in SIM_LAUNCH_ARGS)["velocity"]
    assert "profile" in text and "@" in text


def test_reference_node_publishes_the_profile_on_simulated_time(ros_env):
    """``wbc_reference`` as sim.launch.py starts it for ``velocity:=0.3,0,0@0.5;0,0.3,0@0.5``
    (its parameter file), on this test's /clock: cmd_vel is 0.3 m/s forward for 0.5 s, then
    0.3 m/s left for 0.5 s, then zero. A bad profile: exit code 2, naming the parameter and
    the segment."""
    rclpy = pytest.importorskip("rclpy")
    from geometry_msgs.msg import Twist
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock

    from wbc_dynamics.sim.launch_plan import start_node, stop_node

    ns = f"/vprofile{os.getpid()}"
    _, _, ref_plan = sim_launch_plan({"reference": "walk", "namespace": ns,
                                      "velocity": "0.3,0,0@0.5;0,0.3,0@0.5"}, REPO)
    bad = start_node(ref_plan, ns, overrides={"velocity_profile": "0.3,0,0@1;0,0.3@1"},
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc = start_node(ref_plan, ns, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rclpy.init()
    node = rclpy.create_node("vprofile_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got: list[tuple[float, tuple[float, float, float]]] = []
    now = {"t": 0.0}
    node.create_subscription(
        Twist, "cmd_vel",
        lambda m: got.append((now["t"], (m.linear.x, m.linear.y, m.angular.z))),
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    clock = node.create_publisher(Clock, "/clock", 10)
    try:
        out = bad.communicate(timeout=60.0)[0]
        assert bad.returncode == 2, out
        assert "velocity_profile: segment 2 of 2 ('0,0.3@1')" in out, out
        deadline = time.monotonic() + 60.0
        while node.count_publishers(f"{ns}/cmd_vel") < 1 or clock.get_subscription_count() < 1:
            assert time.monotonic() < deadline, "wbc_reference did not come up"
            assert proc.poll() is None, stop_node(proc)
            ex.spin_once(timeout_sec=0.05)
        time.sleep(0.5)  # its subscription discovers this publisher
        # 1.6 s of simulated time in 5 ms steps (the node's 200 Hz), paced for delivery
        for k in range(1, 321):
            now["t"] = 0.005 * k
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(round(now["t"] * 1e9), 10 ** 9)
            clock.publish(msg)
            end = time.monotonic() + 0.004
            while time.monotonic() < end:
                ex.spin_once(timeout_sec=0.001)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        code = stop_node(proc)
        stop_node(bad)
    assert code == 0, proc.stdout.read() if proc.stdout else ""
    assert len(got) > 150, got[:5]
    changes = [got[0]] + [g for prev, g in zip(got, got[1:], strict=False) if g[1] != prev[1]]
    assert [c for _, c in changes] == [(0.3, 0.0, 0.0), (0.0, 0.3, 0.0), (0.0, 0.0, 0.0)], changes
    t_first = got[0][0]
    assert abs(changes[1][0] - t_first - 0.5) < 0.06, changes
    assert abs(changes[2][0] - t_first - 1.0) < 0.06, changes
