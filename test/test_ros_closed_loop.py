"""The closed loop a ROS user runs: ``wbc_sim`` (MuJoCo, lockstep) + ``wbc_controller``
(config/quadruped.yaml, the shipped configuration) + ``wbc_reference``, three processes over DDS
on simulated time, started with exactly the executables and parameters ``launch/sim.launch.py``
gives them (:func:`wbc_dynamics.sim.launch_plan.sim_launch_plan`); its launch_testing twin
test/test_launch_sim.py runs the launch file itself.

For the weight shift and the trot with every contact method on the simulator's exact odom
(``base_state:=odom``; on its own estimate: test_ros_estimation.py, and every configured robot
below), 5 s of simulated time each, asserted: the quadruped's base
stays above 80 % of its standing height throughout (the simulator's minimum over all steps, and
odom as a subscriber sees it), the simulator
took every step with the command computed for that step's state (lockstep diagnostics: no missed,
no stale step), and the controller ran in control mode (its /diagnostics) with the reference.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
import pytest

pytest.importorskip("mujoco")
rclpy = pytest.importorskip("rclpy")

from node_harness import (  # noqa: E402
    REPO,
    diagnostics_into,
    spin_for,
    start_module,
    stop_process,
)

from wbc_dynamics.robots import robot_info  # noqa: E402
from wbc_dynamics.sim.launch_plan import sim_launch_plan  # noqa: E402

DURATION = 5.0  # simulated seconds per reference


def _run_loop(reference: str, method: str, tag: str, robot: str = "quadruped",
              duration: float = DURATION, real_time_factor: str = "0",
              controller_params: dict | None = None, base_state: str = "odom",
              sensing: str = "realistic") -> dict:
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    ns = f"/rosloop{os.getpid()}{tag}"
    plan = sim_launch_plan({"robot": robot, "method": method, "reference": reference,
                            "mode": "lockstep", "real_time_factor": real_time_factor,
                            "duration": str(duration), "base_state": base_state,
                            "sensing": sensing}, REPO)

    def start(n):
        files = [p for p in n.parameters if isinstance(p, str)]
        params = {k: v for p in n.parameters if isinstance(p, dict) for k, v in p.items()}
        return start_module(n.module, ns, params, params_file=files[0] if files else None)

    sim_plan, ctl_plan, ref_plan = plan
    if controller_params:  # over the configuration's parameters
        ctl_plan = dataclasses.replace(ctl_plan, parameters=[*ctl_plan.parameters,
                                                             dict(controller_params)])
    ctl, ref = start(ctl_plan), start(ref_plan)
    rclpy.init()
    node = rclpy.create_node("ros_loop_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    sim = None
    got = {"z": [], "xy": [], "sim": None, "ctl": None}

    def on_odom(m):
        got["z"].append((m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec,
                         m.pose.pose.position.z))
        got["xy"].append((m.pose.pose.position.x, m.pose.pose.position.y))

    node.create_subscription(Odometry, "odom", on_odom,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             diagnostics_into(got, ns, {": simulator": "sim"}), 50)
    try:
        # The launch file starts all three at once; the simulator then runs from the controller's
        # first command, possibly before the reference node is up (the controller commands its safe
        # mode meanwhile). Here the simulator starts once the reference publisher exists, so the
        # controller's safe ticks can be bounded tightly.
        deadline = time.monotonic() + 120.0
        topic = f"{ns}/wbc_controller/reference"
        while node.count_publishers(topic) < 1 or node.count_subscribers(topic) < 1:
            assert time.monotonic() < deadline, "wbc_reference / wbc_controller did not come up"
            assert ref.poll() is None, stop_process(ref)
            ex.spin_once(timeout_sec=0.1)
        # both ends exist as this client sees them; give their own discovery of each other a
        # moment (a fast simulation -- panda, method none: 3 s simulated in ~1 s wall -- can
        # otherwise finish before the controller's first reference)
        spin_for(ex, 1.0)
        sim = start(sim_plan)
        deadline = time.monotonic() + 300.0  # bounds a hung start (cold compile) and the run
        while time.monotonic() < deadline and not (
                got["sim"] is not None and got["sim"]["state"] == "finished"):
            ex.spin_once(timeout_sec=0.05)
            for p in (sim, ctl, ref):
                assert p.poll() is None, stop_process(p)
        # (checked by the caller, once the processes' logs are attached: _finished)
        got["finished"] = got["sim"] is not None and got["sim"]["state"] == "finished"
        if not got["finished"]:
            return got
        # the controller's diagnostics of the last second
        spin_for(ex, 2.0)
        return got  # (not a copy: the processes' logs are added below)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        got["outputs"] = {name: stop_process(p) for name, p in
                          (("reference", ref), ("controller", ctl), ("simulator", sim))
                          if p is not None}


def _finished(got: dict) -> dict:
    """``got`` of a simulation that finished within the deadline (else the failure, with
    :func:`_why`'s evidence)."""
    assert got["finished"], "the simulation did not finish within the deadline\n" + _why(got)
    return got


def _why(got: dict) -> str:
    """A lockstep failure's evidence: the simulator's and the controller's last diagnostics and
    the tail of each process's log (warnings and errors: a stall, a rejection, a compile)."""
    logs = "\n".join(f"--- {name} log (tail):\n{out[-1500:]}"
                     for name, out in got.get("outputs", {}).items())
    return f"simulator {got['sim']}\ncontroller {got['ctl']}\n{logs}"

@pytest.mark.parametrize("method", ["qp_coulomb", "qp_noslip", "lcp_coulomb", "lcp_noslip"])
@pytest.mark.parametrize("reference", ["shift", "trot"])
def test_ros_closed_loop_keeps_the_quadruped_up(ros_env, reference, method):
    """Every contact method, both references (qp_coulomb: sim.launch.py's default; lcp_noslip:
    config/quadruped.yaml's): each keeps the quadruped up in-process (docs/experiments.md);
    sim.launch.py's default scenario (qp_coulomb, shift) runs on the controller's own base
    estimate, the others on the exact odom."""
    # (a namespace of its own per test: qp_coulomb and qp_noslip used to share 'trotqp_')
    # qp_noslip runs without the configuration's contact state filter and torque low-pass
    # (config/quadruped.yaml ships lcp_noslip): with the filter, the no-slip rows it puts on a
    # foot touched within the filter's threshold make the trot unstable (in process, 5 s: mean
    # joint error 0.0042 rad without, 0.013-0.054 with; over ROS it falls); with the 40 Hz
    # low-pass alone its trot over ROS fell in 1 of 3 runs (in process: 0.0042 -> 0.0084 rad),
    # without it 0 of 4 -- docs/real_robots.md
    extra = ({"contact_state_filter": False, "torque_filter_cutoff": 0.0}
             if method == "qp_noslip" else None)
    # sim.launch.py's defaults (qp_coulomb, shift) as launched: on the controller's own estimate
    default = method == "qp_coulomb" and reference == "shift"
    got = _finished(_run_loop(reference, method, f"{reference}_{method}", controller_params=extra,
                              base_state="" if default else "odom"))
    z_stand = robot_info("quadruped")["standing_q"][2]
    stamps = np.array([t for t, _ in got["z"]])
    z = np.array([z for _, z in got["z"]])
    sim = got["sim"]
    # every simulated step had the command computed for its own state
    steps = int(sim["steps"])
    assert steps >= int(DURATION * 1000) - 1, sim
    assert int(sim["missed_commands"]) == 0 and int(sim["stale_steps"]) == 0, _why(got)
    assert int(sim["matched_commands"]) >= steps, sim
    # the base over every simulated step (the simulator's own minimum) ...
    z_min = float(sim["base_height_min"])
    # (the controller's diagnostics -- safe ticks per mode, solver flags, input ages -- say why)
    assert z_min > 0.8 * z_stand, (
        f"base fell to {z_min:.3f} m (standing {z_stand:.3f} m); controller: {got['ctl']}")
    # ... and as a subscriber sees it on odom (this client may lose samples under load: the
    # stream must cover the run without gaps a fall could hide in)
    assert len(z) > 0.5 * steps and stamps[-1] >= DURATION - 0.01, (len(z), stamps[-1])
    assert np.diff(stamps).max() < 0.05 and z.min() > 0.8 * z_stand, (np.diff(stamps).max(),
                                                                      z.min())
    ctl = got["ctl"]
    assert ctl is not None, "no controller diagnostics"
    # controller diagnostics run on simulated time (1 Hz): the last one is from t >= 4 s
    assert ctl["mode"] == "control" and ctl["method"] == method, ctl
    ticks, safe = int(ctl["ticks"]), int(ctl["safe_ticks"])
    safe_modes = {k: int(v) for k, v in ctl.items() if k.startswith("safe_ticks.")}
    assert ticks >= steps, ctl
    # lockstep: the controller always has the state of the step it answers; before its first
    # odom it answers the paused simulator's (re-sent, every 0.1 s) initial state with a
    # stale-state zero that has no joint_commands record, so the simulator waits for it
    assert safe_modes.get("safe_ticks.safe_stale_state", 0) <= 10, safe_modes
    # the reference comes from a third process on its own simulated-time timer, outside the
    # lockstep; the simulation starts once it subscribes to /clock (clock_subscribers), so only
    # the ticks before its first message are stale-reference ones
    assert safe <= 0.1 * ticks, safe_modes


ROBOT_CONFIGS = sorted(f[:-5] for f in os.listdir(os.path.join(REPO, "config", "robots"))
                       if f.endswith(".yaml"))


@pytest.mark.parametrize("robot", ROBOT_CONFIGS)
def test_ros_closed_loop_keeps_a_configured_vendor_robot_up(ros_env, robot):
    """sim.launch.py robot:=<configuration>, for every shipped configuration (a floating base on
    its own estimate, sim.launch.py's default): the simulator,
    controller and reference all take the robot from config/robots/<robot>.yaml
    (example-robot-data URDF, its contact geometry, SRDF standing pose with the computed base
    height); method and reference are the configuration's defaults (lcp_noslip, stand; the arms
    panda and ur10: none, sinusoid; panda_grasp: lcp_noslip holding a cube, sinusoid). A
    floating base stands 10 s on its own estimate (the arms run 3 s); every floating base's
    scenarios over ROS, 10 s each, trots included: docs/estimation_over_ros.md."""
    duration = 3.0 if robot in ("panda", "ur10", "panda_grasp") else 10.0
    # paced at real time (at most): the reference node's sim-time timer needs the simulator's
    # /clock discovered, which a fast simulation (panda, method none) could otherwise outrun
    # sim.launch.py's default base state: a floating base on its own estimate (IMU + joints)
    # (the grasp with exact encoders: under sensing:=realistic's 1 mrad / 0.02 rad/s encoder
    # noise the cube slipped 2.5 cm in the hand, against 0.73 cm exact -- docs/robots.md)
    got = _finished(_run_loop("", "", robot, robot=robot, duration=duration,
                              real_time_factor="1", base_state="",
                              sensing="exact" if robot == "panda_grasp" else "realistic"))
    sim, ctl = got["sim"], got["ctl"]
    steps = int(sim["steps"])
    assert steps >= int(duration * 1000) - 1, sim
    assert int(sim["missed_commands"]) == 0 and int(sim["stale_steps"]) == 0, _why(got)
    if robot in ("panda", "ur10"):  # fixed base: method none tracking the joint sinusoid
        assert ctl is not None and ctl["mode"] == "control" and ctl["method"] == "none", ctl
        return
    if robot == "panda_grasp":  # holds the cube: 0.5 s held in place, then 2.5 s of sinusoid
        assert ctl is not None and ctl["mode"] == "control", ctl
        assert ctl["method"] == "lcp_noslip", ctl
        # measured over ROS: 0.73 cm (in-process, test_sim_panda_grasp: 0.77 cm); dropped = 5 cm
        assert float(sim["object_slip_max"]) < 0.015, sim
        return
    z0 = got["z"][0][1]
    assert z0 > 0.2, got["z"][:3]  # standing on its feet, not at z = 0
    assert float(sim["base_height_min"]) > 0.95 * z0, (sim["base_height_min"], z0)
    assert ctl is not None and ctl["mode"] == "control" and ctl["method"] == "lcp_noslip", ctl
    assert ctl["estimate_initialized"] == "True" and int(ctl["rejected_imu"]) == 0, ctl
    assert int(ctl["safe_ticks"]) <= 0.1 * int(ctl["ticks"]), ctl


def test_ros_closed_loop_go2_walks_from_cmd_vel_on_its_own_estimate(ros_env):
    """sim.launch.py robot:=go2 reference:=walk (the controller's trot, gait: trot; the reference
    node publishes cmd_vel 0.2 m/s forward) with sim.launch.py's defaults: realistic sensors
    and the base on the controller's own estimate. 6 s: it walks forward at the command within
    20 % over the last 3 s, never below 90 % of its standing height."""
    got = _finished(_run_loop("walk", "", "walk_go2", robot="go2", duration=6.0,
                              real_time_factor="1", base_state=""))
    sim, ctl = got["sim"], got["ctl"]
    assert int(sim["missed_commands"]) == 0 and int(sim["stale_steps"]) == 0, _why(got)
    stamps = np.array([t for t, _ in got["z"]])
    xy = np.array(got["xy"])
    z0 = got["z"][0][1]
    assert float(sim["base_height_min"]) > 0.9 * z0, (sim["base_height_min"], z0)
    k = int(np.searchsorted(stamps, 3.0))
    v = (xy[-1] - xy[k]) / (stamps[-1] - stamps[k])
    assert np.linalg.norm(v - [0.2, 0.0]) < 0.04, (v, _why(got))
    assert ctl is not None and ctl["mode"] == "control" and int(ctl["rejected_cmd_vel"]) == 0, ctl


# ------------------------------------------------------------------ drives through lost commands
#: [N m/rad], [N m s/rad] the bundled quadruped's hybrid drive gains (4 N m drives, 4.8 kg):
#: in-process (ClosedLoop, lcp_noslip, 2 s) with command latency they kept the weight shift
#: and the trot up to 25 ms, where effort drives fell from 10 ms on
HYBRID_GAINS = ("10", "0.3")


def _run_drive_loop(drive: str, sim_params: dict, duration: float,
                    controller_params: dict | None = None) -> dict:
    """The simulator and the controller of sim.launch.py (quadruped, lcp_noslip, ``drive``) in
    lockstep paced at real time, the weight shift published by this client on the simulator's
    time; the controller is activated only once its first reference has been delivered, so
    every tick is in control. (wbc_reference on simulated time starts publishing when it sees
    the simulator's /clock: on a loaded machine that was seconds late, while the controller's
    cheap safe ticks let the simulation run 0.7-1 s ahead in that time.)"""
    from diagnostic_msgs.msg import DiagnosticArray
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from wbc_dynamics.sim.references import make_reference

    ns = f"/drives{os.getpid()}{drive}"
    args = {"robot": "quadruped", "method": "lcp_noslip", "reference": "shift",
            "mode": "lockstep", "real_time_factor": "1", "duration": str(duration),
            "drive": drive, "base_state": "odom"}
    if drive == "hybrid":
        args.update(drive_stiffness=HYBRID_GAINS[0], drive_damping=HYBRID_GAINS[1])
    else:  # an effort-only controller
        args.update(drive_stiffness="0", drive_damping="0")
    sim_plan, ctl_plan, ref_plan = sim_launch_plan(args, REPO)
    # this client replaces wbc_reference and is not on simulated time: one /clock subscriber
    sim_plan.parameters[0].update(sim_params, clock_subscribers=1)
    ctl_plan.parameters[-1].update(autostart=False, **(controller_params or {}))
    ref = make_reference("quadruped", ref_plan.parameters[0]["kind"])

    def start(n):
        files = [p for p in n.parameters if isinstance(p, str)]
        params = {k: v for p in n.parameters if isinstance(p, dict) for k, v in p.items()}
        return start_module(n.module, ns, params, params_file=files[0] if files else None)

    sim, ctl = start(sim_plan), start(ctl_plan)
    rclpy.init()
    node = rclpy.create_node("drive_loop_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got: dict = {"z": [], "q": [], "sim": None, "ctl": None, "finished": False, "ref": ref}
    reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    pub_ref = node.create_publisher(JointTrajectory, "wbc_controller/reference", 10)
    t_ref = {"last": -1.0}

    def send_reference(t: float) -> None:
        q, qd, qdd = ref.sample(t)
        msg = JointTrajectory(joint_names=list(ref.joint_names))
        msg.points = [JointTrajectoryPoint(positions=q.tolist(), velocities=qd.tolist(),
                                           accelerations=qdd.tolist())]
        pub_ref.publish(msg)
        t_ref["last"] = t

    def on_joint_states(m):
        t = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        got["q"].append((t, np.array(m.position)))
        got["names"] = list(m.name)
        if t >= t_ref["last"] + 0.005 - 1e-9:  # 200 Hz of simulated time, as wbc_reference
            send_reference(t)

    node.create_subscription(Odometry, "odom", lambda m: got["z"].append(
        (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.pose.position.z)), reliable)
    node.create_subscription(JointState, "joint_states", on_joint_states, reliable)
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             diagnostics_into(got, ns, {": simulator": "sim"}), 50)

    def spin_until(pred, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < end, what
            for p in (sim, ctl):
                assert p.poll() is None, stop_process(p)
            ex.spin_once(timeout_sec=0.02)

    def transition(tid: int) -> bool:
        cli = node.create_client(ChangeState, "wbc_controller/change_state")
        spin_until(cli.service_is_ready, 120.0, "wbc_controller did not come up")
        fut = cli.call_async(ChangeState.Request(transition=Transition(id=tid)))
        spin_until(fut.done, 120.0, "lifecycle transition timed out")
        node.destroy_client(cli)
        return fut.result().success

    try:
        # the paused simulator re-sends its initial state: this client receives it, the
        # configured controller's reference subscription is matched -- then the first reference
        # goes out (reliable) before the controller is activated
        assert transition(Transition.TRANSITION_CONFIGURE)
        spin_until(lambda: got["q"] and pub_ref.get_subscription_count() > 0, 60.0,
                   "no joint_states from wbc_sim / reference not matched")
        send_reference(0.0)
        spin_for(ex, 0.3, 0.02)
        assert transition(Transition.TRANSITION_ACTIVATE)
        spin_until(lambda: got["sim"] is not None and got["sim"]["state"] == "finished",
                   120.0 + 30.0 * duration, "the simulation did not finish")
        got["finished"] = True
        spin_for(ex, 2.0)  # the controller's diagnostics of the last second
        return got
    finally:
        node.destroy_node()
        rclpy.shutdown()
        got["outputs"] = {"controller": stop_process(ctl), "simulator": stop_process(sim)}


def _tracking(got: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stamps [s], joint positions [rad] of every recorded step and the largest joint error
    from the reference's positions at each [rad]."""
    ref = got["ref"]
    assert got["names"] == list(ref.joint_names)
    t = np.array([s for s, _ in got["q"]])
    q = np.array([x for _, x in got["q"]])
    err = np.array([np.abs(x - ref.sample(s)[0]).max() for s, x in got["q"]])
    return t, q, err


@pytest.mark.parametrize("drive", ["hybrid", "effort"])
def test_ros_closed_loop_quadruped_through_a_command_gap_and_latency(ros_env, drive):
    """The simulator and controller of ``sim.launch.py drive:=<drive>`` -- with ``hybrid`` the
    controller's drive gains are > 0, so it sends the hybrid command and the simulator's drives
    run their impedance loop at every step; effort drives for comparison -- while the
    quadruped shifts its weight on the spot for 1 s, every command reaching the drives 5 ms
    late (``command_latency``) and none for 20 ms from t = 0.5 s (``command_dropout``).
    Asserted: every step had the command for its state, the drives went exactly 20 ms without
    a command (``command_age_max``) and none went stale (``command_timeout`` 50 ms), the base
    stays above 99 % of its standing height over every step, the joints move less than
    0.005 rad in the 20 ms without commands and stay within 0.01 rad of the reference, the
    controller was in control on every tick. Measured: both drives about as without the gap
    and the latency (joint error at most 5.2 / 5.0 mrad, hybrid / effort; 4.6 / 5.0 mrad
    without), joints moved 0.16 / 0.12 mrad in the gap."""
    gap_start, gap = 0.5, 0.02
    got = _run_drive_loop(drive, {"command_latency": 0.005, "command_dropout_start": gap_start,
                                  "command_dropout": gap}, duration=1.0)
    sim, ctl = got["sim"], got["ctl"]
    assert sim["drive"] == drive, sim
    assert int(sim["steps"]) >= 999 and int(sim["missed_commands"]) == 0, _why(got)
    assert float(sim["command_age_max"]) == pytest.approx(gap, abs=1e-6), sim
    assert int(sim["stale_steps"]) == 0 and int(sim["dropped_commands"]) >= int(gap * 1000), sim
    z0 = got["z"][0][1]
    z_min = float(sim["base_height_min"])
    t, q, err = _tracking(got)
    in_gap = (t >= gap_start) & (t <= gap_start + gap)
    assert in_gap.sum() >= 15, t[(t > gap_start - 0.01) & (t < gap_start + 0.03)]
    moved = float(np.abs(q[in_gap] - q[in_gap][0]).max())
    err_max = float(err[t >= 0.2].max())
    print(f"{drive}: base height min {z_min:.5f} m (start {z0:.5f} m), joints moved "
          f"{moved:.5f} rad in the 20 ms without commands, joint error <= {err_max:.4f} rad")
    assert z_min > 0.99 * z0, (z_min, z0, _why(got))
    assert moved < 0.005, moved
    assert err_max < 0.01, err_max
    assert ctl is not None and ctl["mode"] == "control" and ctl["method"] == "lcp_noslip", ctl
    assert int(ctl["safe_ticks"]) == 0, ctl


def test_ros_closed_loop_hybrid_drives_track_through_a_latency_effort_drives_do_not(ros_env):
    """The same loop with every command 10 ms late: the hybrid drives' own impedance loop keeps
    the weight shift within 0.012 rad of the reference (measured 8.0-8.5 mrad, every step
    commanded, the base above 99 %); effort drives oscillate without the joint-state observer
    (measured 33 mrad to 1.4 rad: more than twice the hybrid drives' error asserted) and less
    with it, as shipped (measured 12-14 mrad, 0.14 rad on a loaded machine where the run without
    it reached 1.4 rad: the observer's prediction from the commanded accelerations damps what
    the late commands excite)."""
    errors = {}
    for case, drive, params in (("hybrid", "hybrid", {}), ("effort", "effort", {}),
                                ("effort without observer", "effort",
                                 {"joint_observer_acceleration_noise": 0.0})):
        got = _run_drive_loop(drive, {"command_latency": 0.01}, duration=1.0,
                              controller_params=params)
        sim, ctl = got["sim"], got["ctl"]
        t, _, err = _tracking(got)
        errors[case] = float(err[t >= 0.2].max())
        if case == "effort without observer":  # (it may go unstable: states out of range)
            continue
        assert int(sim["missed_commands"]) == 0 and int(sim["stale_steps"]) == 0, _why(got)
        # (the first command, at once, drove the first 10 steps: the latency's queue filling)
        assert float(sim["command_age_max"]) == pytest.approx(0.01, abs=1e-6), sim
        assert int(ctl["safe_ticks"]) == 0, ctl
        assert float(sim["base_height_min"]) > 0.99 * got["z"][0][1], sim
    print(f"joint error with 10 ms command latency: {errors}")
    assert errors["hybrid"] < 0.012, errors
    assert errors["effort"] < errors["effort without observer"], errors
    assert errors["effort without observer"] > 2.0 * errors["hybrid"], errors


def test_sim_launch_runner_runs_the_plan_and_exits_0_on_ctrl_c(ros_env):
    """``python -m wbc_dynamics.sim.launch_plan`` (sim.launch.py where ``launch`` is not
    installed): the three nodes run the arm's sinusoid to its ``duration``; SIGINT stops them
    all and every process exits 0 without a traceback; a bad argument exits 2 naming it."""
    import signal
    import subprocess
    import sys

    ns = f"/runner{os.getpid()}"
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1", RCUTILS_LOGGING_BUFFERED_STREAM="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "wbc_dynamics.sim.launch_plan", "robot:=arm", "method:=none",
         "reference:=sinusoid", "duration:=0.5", f"namespace:={ns}"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    try:
        deadline = time.monotonic() + 180.0
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while "reached: stopped" not in out:
            assert time.monotonic() < deadline and proc.poll() is None, out[-3000:]
            if sel.select(timeout=1.0):
                out += proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
        out += rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    bad = subprocess.run([sys.executable, "-m", "wbc_dynamics.sim.launch_plan", "drive:=torque"],
                         env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "drive: expected effort | hybrid, got 'torque'" in bad.stderr
