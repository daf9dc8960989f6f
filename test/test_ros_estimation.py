"""The base estimator over ROS (``base_state: imu`` and ``wbc_estimator``), processes over DDS.

* The controller node with ``base_state: imu`` (the bundled quadruped, driven by this test):
  no ``odom`` subscription, an ``imu`` one; malformed, NaN, REP 145 "not provided" and
  future-stamped IMU messages are rejected and counted per reason while the node keeps
  commanding; when the IMU stops (joint states still arriving) the command drops to the
  stale-state zero torque without a ``~/joint_commands`` record, and comes back with the IMU;
  the estimate on ``~/odom`` at rest is the standing pose.
* Closed loop: ``wbc_sim`` (lockstep, its IMU) + ``wbc_controller`` (config/quadruped.yaml,
  ``base_state: imu``) + ``wbc_reference`` (weight shift), as ``sim.launch.py base_state:=imu``
  starts them: the quadruped stays up on its own estimate, and the estimate published on
  ``wbc_controller/odom`` matches the simulator's ``ground_truth/odom`` at the same stamps.
* ``wbc_estimator`` beside a controller on the exact ``odom``: its ``~/odom`` matches
  ``ground_truth/odom`` the same way; its console entry exits 0 on SIGINT, 1 on a bad
  configuration.
"""

from __future__ import annotations

import itertools
import math
import os
import time

import numpy as np
import pytest

pytest.importorskip("mujoco")
rclpy = pytest.importorskip("rclpy")

from node_harness import (  # noqa: E402
    REPO,
    Client,
    by_stamp,
    diagnostics_into,
    odometry_errors,
    spin_for,
    start_module,
    stop_process,
)

from wbc_dynamics.robots import robot_info  # noqa: E402
from wbc_dynamics.sim.launch_plan import sim_launch_plan  # noqa: E402


def _stamp_s(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def _imu_msg(node, quat=(0.0, 0.0, 0.0, 1.0), gyro=(0.0, 0.0, 0.0), accel=(0.0, 0.0, 9.81),
             stamp=None):
    from sensor_msgs.msg import Imu

    m = Imu()
    m.header.stamp = node.get_clock().now().to_msg() if stamp is None else stamp
    m.header.frame_id = "base"
    m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = quat
    m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = gyro
    m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = accel
    return m


# ------------------------------------------------------------------ the controller node, imu mode
def test_imu_mode_rejects_bad_imu_counts_and_goes_safe_when_the_imu_stops(ros_env):
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Imu

    info = robot_info("quadruped")
    names = info["joint_names"]
    q = np.array(info["standing_q"])
    ns = f"/imu_mode{os.getpid()}"
    proc = start_module("wbc_dynamics.node", ns, {
        "robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
        "base_state": "imu", "state_timeout": 0.2, "reference_timeout": 5.0,
        "diagnostics_rate": 5.0, "estimate_rate": 50.0, "publish_contacts": False})
    rclpy.init()
    client = Client(ns, "imu_mode_client")
    try:
        node = client.node
        reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        pub_imu = node.create_publisher(Imu, f"{ns}/imu", reliable)
        est = []
        node.create_subscription(Odometry, f"{ns}/wbc_controller/odom", est.append, reliable)
        client.wait_connected()
        assert client.spin(lambda: pub_imu.get_subscription_count() > 0, 30.0)
        # base_state imu: the controller takes imu, not odom
        assert node.count_subscribers(f"{ns}/odom") == 0
        assert node.count_subscribers(f"{ns}/imu") == 1

        counter = itertools.count(1)

        def cycle(imu=None):
            """An IMU message (a valid one by default), then a joint state; its command echo."""
            pub_imu.publish(_imu_msg(node) if imu is None else imu)
            client.spin(lambda: False, 0.01)
            qk = q[7:] + 1e-6 * next(counter)  # each state distinguishable in the echoes
            client.send_state(names, qk, np.zeros(12))
            client.spin(lambda: client.echo_for(qk) is not None, 0.3)
            return client.echo_for(qk)

        client.send_reference(names, np.zeros(12), q[7:], np.zeros(12))
        for _ in range(40):  # until the node commands its contact torques
            echo = cycle()
            if echo is not None and np.any(np.array(echo.effort)):
                break
        assert echo is not None and np.any(np.array(echo.effort)), "no command in imu mode"
        for _ in range(20):  # the estimate at rest: the standing pose
            cycle()
        assert client.spin(lambda: len(est) >= 3, 3.0), "no estimate on ~/odom"
        e = est[-1]
        assert e.header.frame_id == "odom" and e.child_frame_id == "base_link"
        p = e.pose.pose.position
        assert abs(p.z - q[2]) < 1e-3 and abs(p.x) < 1e-3 and abs(p.y) < 1e-3, p
        tw = e.twist.twist.linear
        assert math.hypot(tw.x, tw.y, tw.z) < 1e-3, tw
        pc = np.array(e.pose.covariance).reshape(6, 6)
        assert np.all(np.diag(pc) > 0.0) and np.allclose(pc, pc.T)
        # (no orientation covariance in these messages: the node's orientation prior)
        assert pc[3, 3] == pytest.approx(0.00873 ** 2)

        # malformed and bad IMU messages: rejected, counted per reason; control goes on
        stamp = node.get_clock().now().to_msg()
        bad = {
            "non_finite": _imu_msg(node, gyro=(math.nan, 0.0, 0.0)),
            "no_orientation": _imu_msg(node),
            "no_data": _imu_msg(node),
            "quaternion_norm": _imu_msg(node, quat=(0.0, 0.0, 0.0, 0.0)),
            "out_of_range": _imu_msg(node, accel=(0.0, 0.0, 1e6)),
            "future_stamp": _imu_msg(node, stamp=type(stamp)(sec=stamp.sec + 100,
                                                             nanosec=stamp.nanosec)),
        }
        bad["no_orientation"].orientation_covariance[0] = -1.0
        bad["no_data"].linear_acceleration_covariance[0] = -1.0
        for reason, msg in bad.items():
            echo = cycle(msg)
            assert echo is not None and np.any(np.array(echo.effort)), reason  # still in control
            echo = cycle()  # a valid one in between: the IMU stays fresh
            assert echo is not None and np.any(np.array(echo.effort)), reason
        assert client.spin(lambda: any(int(d.get("rejected_imu", 0)) >= len(bad)
                                       for d in client.diag), 3.0), client.diag[-1:]
        d = next(d for d in reversed(client.diag) if int(d.get("rejected_imu", 0)) >= len(bad))
        for reason in bad:
            assert int(d[f"rejected_imu.{reason}"]) == 1, (reason, d)
        assert int(d["rejected_imu"]) == len(bad) and d["internal_errors"] == "0", d
        assert d["mode"] == "control" and d["estimate_initialized"] == "True", d

        # the IMU stops, joint states go on: after state_timeout the stale-state zero torque
        # (on effort_controller/commands; no ~/joint_commands record), then control again
        n_cmds = len(client.cmds)
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            client.send_state(names, q[7:], np.zeros(12))
            client.spin(lambda: False, 0.02)
        late = [c for t, c in client.cmds[n_cmds:] if t > end - 0.3]
        assert late and all(not np.any(c) for c in late), [c[:3] for _, c in late[:3]]
        assert client.spin(lambda: any(d.get("mode") == "safe_stale_state"
                                       for d in client.diag[-3:]), 2.0), client.diag[-1:]
        for _ in range(40):
            echo = cycle()
            if echo is not None and np.any(np.array(echo.effort)):
                break
        assert echo is not None and np.any(np.array(echo.effort)), "no control after the IMU"
    finally:
        client.close()
        rclpy.shutdown()
        out = stop_process(proc)
    assert "Traceback" not in out, out[-3000:]


# ------------------------------------------------------------------ closed loop over ROS
def _start(plan, ns: str, extra: dict | None = None):
    files = [p for p in plan.parameters if isinstance(p, str)]
    params = {k: v for p in plan.parameters if isinstance(p, dict) for k, v in p.items()}
    params.update(extra or {})
    return start_module(plan.module, ns, params, params_file=files[0] if files else None)


#: the simulator's IMU: typical MEMS noise (Imperfections.realistic's): gyro white noise and a
#: constant bias drawn per run [rad/s], accelerometer noise [m/s^2], AHRS orientation noise [rad]
MEMS_IMU = {"imu_gyro_noise": 0.002, "imu_gyro_bias": 0.002, "imu_accelerometer_noise": 0.05,
            "imu_orientation_noise": math.radians(0.2), "imu_seed": 7}


def _run_loop(tag: str, base_state: str, duration: float, estimator: bool = False,
              reference: str = "shift") -> dict:
    """sim.launch.py's three processes (quadruped, lcp_noslip, ``reference``, lockstep as fast
    as the controller answers) with ``base_state``, plus ``wbc_estimator`` if ``estimator``
    (its contact schedule remapped to the controller's, which wbc_reference publishes for the
    trot); records ground_truth/odom, the estimates and both nodes' diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    ns = f"/est{os.getpid()}{tag}"
    sim_plan, ctl_plan, ref_plan = sim_launch_plan(
        {"robot": "quadruped", "method": "lcp_noslip", "reference": reference,
         "mode": "lockstep", "real_time_factor": "0", "duration": str(duration),
         "base_state": base_state}, REPO)
    procs = {"controller": _start(ctl_plan, ns), "reference": _start(ref_plan, ns)}
    if estimator:  # the controller's parameter file, on simulated time
        procs["estimator"] = start_module(
            "wbc_dynamics.estimator_node", ns, {"use_sim_time": True},
            extra_args=("--ros-args", "-r",
                        "~/contact_schedule:=wbc_controller/contact_schedule"),
            params_file=os.path.join(REPO, "config", "quadruped.yaml"))
    rclpy.init()
    node = rclpy.create_node("estimation_loop_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got: dict = {"truth": {}, "ctl_est": {}, "est": {}, "sim": None, "ctl": None,
                 "estd": None, "finished": False}
    reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    node.create_subscription(Odometry, "ground_truth/odom", by_stamp(got["truth"]), reliable)
    node.create_subscription(Odometry, "wbc_controller/odom", by_stamp(got["ctl_est"]), reliable)
    node.create_subscription(Odometry, "wbc_estimator/odom", by_stamp(got["est"]), reliable)
    node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics_into(
        got, ns, {": simulator": "sim", ": base estimator": "estd"}), 50)
    try:
        deadline = time.monotonic() + 120.0
        topic = f"{ns}/wbc_controller/reference"
        waits = [lambda: node.count_publishers(topic) >= 1 and node.count_subscribers(topic) >= 1]
        if estimator:
            waits.append(lambda: node.count_subscribers(f"{ns}/imu") >= 1
                         and node.count_publishers(f"{ns}/wbc_estimator/odom") >= 1)
        while not all(w() for w in waits):
            assert time.monotonic() < deadline, "the nodes did not come up"
            for name, p in procs.items():
                assert p.poll() is None, (name, stop_process(p))
            ex.spin_once(timeout_sec=0.1)
        spin_for(ex, 1.0)  # their own discovery of each other
        procs["simulator"] = _start(sim_plan, ns, MEMS_IMU)
        deadline = time.monotonic() + 60.0 + 30.0 * duration
        while time.monotonic() < deadline and not (
                got["sim"] is not None and got["sim"]["state"] == "finished"):
            ex.spin_once(timeout_sec=0.05)
            for name, p in procs.items():
                assert p.poll() is None, (name, stop_process(p))
        got["finished"] = got["sim"] is not None and got["sim"]["state"] == "finished"
        spin_for(ex, 2.0)  # the last diagnostics and estimates
        return got
    finally:
        node.destroy_node()
        rclpy.shutdown()
        got["outputs"] = {name: stop_process(p) for name, p in procs.items()}


def _why(got: dict) -> str:
    logs = "\n".join(f"--- {name} log (tail):\n{out[-1500:]}"
                     for name, out in got.get("outputs", {}).items())
    return f"simulator {got['sim']}\ncontroller {got['ctl']}\nestimator {got['estd']}\n{logs}"


def _errors(estimates: dict, truth: dict) -> dict:
    """:func:`node_harness.odometry_errors` of more than 10 common stamps."""
    err = odometry_errors(estimates, truth)
    assert err["samples"] > 10, (len(estimates), len(truth))
    return err


DURATION = 3.0  # simulated seconds


def test_ros_closed_loop_quadruped_stands_on_its_own_estimate(ros_env):
    """``sim.launch.py base_state:=imu``, weight shift, 3 s, the simulator's IMU with typical
    MEMS noise: every step had the command for its state, the base stays above 97 % of its
    standing height, the controller was in control, never rejected an IMU sample, and its
    estimate (published at 100 Hz) matches the ground truth: velocity error RMS < 0.02 m/s,
    height error < 5 mm."""
    t0 = time.monotonic()
    got = _run_loop("imu", "imu", DURATION)
    wall = time.monotonic() - t0
    assert got["finished"], "the simulation did not finish\n" + _why(got)
    sim, ctl = got["sim"], got["ctl"]
    steps = int(sim["steps"])
    assert steps >= int(DURATION * 1000) - 1, sim
    assert int(sim["missed_commands"]) == 0 and int(sim["stale_steps"]) == 0, _why(got)
    z0 = robot_info("quadruped")["standing_q"][2]
    assert float(sim["base_height_min"]) > 0.97 * z0, _why(got)
    assert ctl["mode"] == "control" and ctl["method"] == "lcp_noslip", ctl
    assert int(ctl["rejected_imu"]) == 0 and ctl["internal_errors"] == "0", ctl
    err = _errors(got["ctl_est"], got["truth"])
    print(f"controller estimate vs ground truth: {err}; wall {wall:.1f} s")
    safe_modes = {k: int(v) for k, v in ctl.items() if k.startswith("safe_ticks.")}
    print(f"safe ticks {safe_modes} of {ctl['ticks']}")
    # before its first IMU sample the controller answers the paused simulator's re-sent
    # initial state with a stale-state zero (no record: the simulator waits)
    assert safe_modes.get("safe_ticks.safe_stale_state", 0) <= 10, safe_modes
    # the reference comes from a third process on its own simulated-time timer, outside the
    # lockstep; the simulation starts once it subscribes to /clock, so only the ticks before its
    # first message are stale-reference ones (6 of 3001 with two busy loops on both cores)
    assert int(ctl["safe_ticks"]) <= 0.1 * int(ctl["ticks"]), safe_modes
    assert err["span"] > DURATION - 1.0, err  # (a cold start under load may begin late)
    assert err["samples"] > 0.5 * DURATION * 100, err
    assert err["velocity_rms"] < 0.02, err
    assert err["height_max"] < 5e-3, err


def test_wbc_estimator_tracks_the_ground_truth(ros_env):
    """``wbc_estimator`` (config/quadruped.yaml's model and feet) beside a controller on the
    simulator's exact odom, trotting 3 s, the simulator's IMU with typical MEMS noise, the feet
    in swing as wbc_reference's contact schedule says: its ~/odom matches ground_truth/odom:
    velocity error RMS < 0.02 m/s, height error < 5 mm; no rejected message, no internal
    error."""
    t0 = time.monotonic()
    got = _run_loop("node", "odom", DURATION, estimator=True, reference="trot")
    wall = time.monotonic() - t0
    assert got["finished"], "the simulation did not finish\n" + _why(got)
    sim, estd = got["sim"], got["estd"]
    assert int(sim["missed_commands"]) == 0, _why(got)
    assert not got["ctl_est"], "the controller on odom publishes no estimate"
    assert estd is not None and estd["initialized"] == "True", _why(got)
    assert int(estd["rejected_imu"]) == 0 and int(estd["rejected_joint_states"]) == 0, estd
    assert estd["internal_errors"] == "0" and estd["failed_updates"] == "0", estd
    assert int(estd["contact_schedules"]) > 0, estd  # the trot's stance masks arrived
    err = _errors(got["est"], got["truth"])
    print(f"wbc_estimator vs ground truth: {err}; updates {estd['updates']}; wall {wall:.1f} s")
    assert err["span"] > DURATION - 1.0, err  # (a cold start under load may begin late)
    assert err["velocity_rms"] < 0.02, err
    assert err["height_max"] < 5e-3, err


def test_wbc_estimator_exits_0_on_sigint_and_1_on_a_bad_configuration(ros_env):
    """The console entry: running (its ~/odom publisher discovered), SIGINT ends it with exit
    code 0; a contact link the model does not have ends it at start with 1, naming it."""
    ns = f"/est_exit{os.getpid()}"
    proc = start_module("wbc_dynamics.estimator_node", ns, {"robot": "quadruped"})
    rclpy.init()
    node = rclpy.create_node("estimator_exit_client")
    try:
        end = time.monotonic() + 60.0
        while node.count_publishers(f"{ns}/wbc_estimator/odom") < 1:
            assert time.monotonic() < end and proc.poll() is None, stop_process(proc)
            rclpy.spin_once(node, timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    proc.send_signal(2)
    assert proc.wait(timeout=10.0) == 0, stop_process(proc)
    bad = start_module("wbc_dynamics.estimator_node", ns,
                       {"robot": "quadruped", "contact_links": ["LF_foot", "nope"]})
    try:
        bad.wait(timeout=60.0)
    finally:
        out = stop_process(bad)
    assert bad.returncode == 1, out
    assert "contact_links: link 'nope' is not a link of the model" in out, out
