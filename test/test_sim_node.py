"""The ROS path: ``wbc_sim`` (MuJoCo) + ``wbc_controller`` in separate processes over DDS.

The arm (fixed base) is simulated on simulated time (``/clock``) in ``lockstep`` mode; the
controller runs with ``use_sim_time`` and ``method: none`` (RNEA + PD); this test publishes the
grasp pose as the reference. Asserted: every simulated step was taken with the command computed
for its state (no missed command); the simulated clock advances; the arm holds the pose under
gravity through the whole ROS chain (joint errors < 0.02 rad, efforts carry the gravity load of
joint_2, checked against the core's RNEA); a malformed command is rejected (counted) while the
simulator keeps running; after the controller is stopped the simulator stops waiting (one
``lockstep_timeout``), steps in real time and, after ``command_timeout``, applies zero efforts
(as the module documents). A lockstep step builds no message, and the lockstep timer ticks at
the step period only while it steps.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest

pytest.importorskip("mujoco")
rclpy = pytest.importorskip("rclpy")

from node_harness import start_module, stop_process  # noqa: E402

from wbc_dynamics.robots import robot_info  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_sim_node_and_controller_node_hold_the_arm(ros_env):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_path

    info = robot_info("arm")
    names = info["joint_names"]
    q_ref = np.array(info["grasp_q"])
    ns = f"/simtest{os.getpid()}"
    sim = start_module("wbc_dynamics.sim.sim_node", ns, {
        "robot": "arm", "mode": "lockstep", "sim_rate": 500.0, "real_time_factor": 1.0,
        "initial_pose": "grasp",
        # ideal joints: the arm URDF's finger friction (frictionloss) would hold the fingers a few
        # centiradians off the reference under these PD gains; this test checks the pipeline's
        # gravity compensation and tracking, not friction rejection
        "command_timeout": 0.05, "joint_dynamics": False})
    ctl = start_module("wbc_dynamics.node", ns, {
        "robot": "arm", "method": "none", "kp": [400.0], "kd": [40.0], "use_sim_time": True,
        "control_rate": 500.0, "state_timeout": 0.1, "reference_timeout": 0.5})
    rclpy.init()
    node = rclpy.create_node("sim_test_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got = {"js": None, "clock": [], "n_js": 0, "sim_diag": None}

    def on_diag(arr):
        for st in arr.status:
            if st.name.endswith(": simulator"):
                got["sim_diag"] = {kv.key: kv.value for kv in st.values}

    def on_js(m):
        got["js"] = m
        got["n_js"] += 1

    node.create_subscription(JointState, "joint_states", on_js,
                             QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
    node.create_subscription(Clock, "/clock",
                             lambda m: got["clock"].append(m.clock.sec + 1e-9 * m.clock.nanosec),
                             10)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    pub_ref = node.create_publisher(JointTrajectory, "wbc_controller/reference", 10)
    pub_cmd = node.create_publisher(JointState, "wbc_controller/joint_commands", 10)

    def send_ref():
        msg = JointTrajectory()
        msg.joint_names = list(names)
        pt = JointTrajectoryPoint()
        pt.positions = q_ref.tolist()
        pt.velocities = [0.0] * len(names)
        pt.accelerations = [0.0] * len(names)
        msg.points = [pt]
        pub_ref.publish(msg)

    def spin_for(seconds, ref=True):
        end = time.monotonic() + seconds
        next_ref = 0.0
        while time.monotonic() < end:
            if ref and time.monotonic() >= next_ref:
                send_ref()
                next_ref = time.monotonic() + 0.02
            ex.spin_once(timeout_sec=0.005)

    try:
        # wait until both processes are up and the arm is controlled
        # (the simulator holds the initial pose until the first command: no time limit on the
        # controller's start, this deadline only bounds a hung start)
        deadline = time.monotonic() + 180.0
        while time.monotonic() < deadline and (got["js"] is None or
                                                abs(got["js"].effort[1]) < 1.0):
            spin_for(0.2)
            assert sim.poll() is None, stop_process(sim)
            assert ctl.poll() is None, stop_process(ctl)
        assert got["js"] is not None, "no joint_states from wbc_sim"
        spin_for(3.0)
        js = got["js"]
        assert list(js.name) == names
        q = np.array(js.position)
        err = np.abs(q - q_ref)
        assert err.max() < 0.02, f"joint errors {np.round(err, 4)}"
        # efforts: gravity compensation computed by the controller, applied by the simulator
        m = RobotModel.from_urdf(robot_path("arm"), floating_base=False)
        g = m.rnea(q, np.zeros(len(q)), np.zeros(len(q)))
        eff = np.array(js.effort)
        assert abs(g[1]) > 5.0
        assert eff[1] == pytest.approx(g[1], rel=0.1, abs=0.5)
        clock = got["clock"]
        assert len(clock) > 10 and clock[-1] - clock[0] > 1.0, "simulated clock did not advance"
        assert all(b >= a for a, b in zip(clock, clock[1:], strict=False))
        # lockstep: every simulated step so far was taken with the command for its state
        d = got["sim_diag"]
        assert d is not None and d["mode"] == "lockstep", d
        assert int(d["steps"]) > 500 and int(d["missed_commands"]) == 0, d
        assert int(d["matched_commands"]) >= int(d["steps"]), d
        # malformed command (lockstep: on the stamped command topic): rejected, simulator keeps
        # running
        n0 = got["n_js"]
        for _ in range(5):
            bad = JointState(name=["nope", "j2"], effort=[1.0, 2.0])
            bad.header.stamp = js.header.stamp
            pub_cmd.publish(bad)
            spin_for(0.1)
        assert sim.poll() is None and got["n_js"] > n0
        # controller gone -> after lockstep_timeout (1 s wall) the simulator steps in real time
        # with the fallback command, zero after command_timeout
        out_ctl = stop_process(ctl)
        spin_for(3.0, ref=False)
        eff = np.array(got["js"].effort)
        assert np.all(eff == 0.0), f"efforts after command timeout {eff}\n{out_ctl}"
        assert math.isfinite(got["js"].position[0])
        d = got["sim_diag"]
        assert int(d["missed_commands"]) > 0 and int(d["stale_steps"]) > 0, d
        assert int(d["rejected_commands"]) >= 5, d
    finally:
        node.destroy_node()
        rclpy.shutdown()
        out_sim = stop_process(sim)
        stop_process(ctl)
    assert "rejected" in out_sim


# ------------------------------------------------------------------ the hybrid drive
ARM_Q_SET_OFFSET = 0.05  # [rad] the set-points' offset from the arm's grasp pose
# per joint: joint_1 saturates (1e4 N m/rad x 0.05 rad = 500 N m > 176 N m), the others do not
ARM_KP = np.array([1.0e4, 20.0, 15.0, 10.0, 5.0, 4.0, 3.0, 2.0, 2.0, 1.5, 1.0])
ARM_KD = np.array([1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.05, 0.05, 0.02, 0.01])
COMMAND_TIMEOUT = 0.1  # [s simulated] (> the test's publication jitter on a loaded machine)


def _hybrid_sim(ns: str, mode: str):
    """``wbc_sim`` with the arm and a hybrid drive in ``mode``, and a client node with the
    publishers of a controller, recording every joint state and the diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    sim = start_module("wbc_dynamics.sim.sim_node", ns, {
        "robot": "arm", "mode": mode, "drive": "hybrid", "sim_rate": 1000.0,
        "real_time_factor": 1.0, "initial_pose": "grasp", "joint_dynamics": False,
        "command_timeout": COMMAND_TIMEOUT, "lockstep_timeout": 0.3, "diagnostics_rate": 10.0})
    node = rclpy.create_node("hybrid_sim_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got = {"js": [], "diag": None}

    def on_diag(arr):
        for st in arr.status:
            if st.name.startswith(ns + "/") and st.name.endswith(": simulator"):
                got["diag"] = {kv.key: kv.value for kv in st.values}

    reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(JointState, "joint_states", got["js"].append, reliable)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 50)
    pubs = {i: node.create_publisher(Float64MultiArray, f"{i}_controller/commands", 10)
            for i in ("effort", "position", "velocity", "stiffness", "damping")}
    pubs["record"] = node.create_publisher(JointState, "wbc_controller/joint_commands", 10)
    return sim, node, ex, got, pubs


def _spin(ex, seconds: float, pred=None) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred is not None and pred():
            return True
        ex.spin_once(timeout_sec=0.005)
    return pred() if pred is not None else True


def _steps(js: list, dt: float = 1e-3):
    """(state before, state after) of every consecutive pair of recorded steps (stamps one step
    apart): the effort published with a state is what the drives applied in the step to it."""
    def t(m):
        return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec

    by_t = {round(t(m) / dt): m for m in js}
    return [(by_t[k - 1], by_t[k]) for k in sorted(by_t) if k - 1 in by_t]


def _impedance(limit, tau_ff, q_set, qd_set, before) -> np.ndarray:
    q, qd = np.array(before.position), np.array(before.velocity)
    return np.clip(tau_ff + ARM_KP * (q_set - q) + ARM_KD * (qd_set - qd), -limit, limit)


@pytest.mark.parametrize("mode", ["lockstep", "realtime"])
def test_sim_node_hybrid_drive_applies_the_impedance_law_and_keeps_it_when_commands_stop(
        ros_env, mode):
    """The test is the controller: it sends a hybrid command (set-points, gains, tau_ff) -- in
    lockstep the stamped record for every state plus the gain topics, in realtime the five
    ros2_control topics. Asserted on every recorded step: the applied effort equals
    ``clip(tau_ff + K (q_set - q) + D (qd_set - qd))`` on the state the step started from
    (1e-9; one joint saturates). After the commands stop, once ``command_timeout`` has passed:
    the drives keep the impedance loop with ``tau_ff = 0`` and ``qd_set = 0``; then
    wrong-length, NaN, inf and negative-gain messages on every topic the drive reads are
    rejected and counted, and the drives keep the command they had."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_path

    info = robot_info("arm")
    names = info["joint_names"]
    n = len(names)
    model = RobotModel.from_urdf(robot_path("arm"))
    limit = model.effort_limit[[list(model.joint_names).index(j) for j in names]]
    q_set = np.array(info["grasp_q"]) + ARM_Q_SET_OFFSET
    qd_set = np.linspace(-0.2, 0.2, n)
    tau_ff = np.linspace(1.0, -1.0, n)
    ns = f"/hybsim{os.getpid()}{mode}"
    rclpy.init()
    sim, node, ex, got, pubs = _hybrid_sim(ns, mode)
    answering = {"on": True}

    def array(x):
        return Float64MultiArray(data=[float(v) for v in x])

    def send_gains():
        pubs["stiffness"].publish(array(ARM_KP))
        pubs["damping"].publish(array(ARM_KD))

    def answer(js):  # lockstep: the record of each state, its gains first
        if not answering["on"]:
            return
        send_gains()
        rec = JointState(name=list(names), position=q_set.tolist(), velocity=qd_set.tolist(),
                         effort=tau_ff.tolist())
        rec.header.stamp = js.header.stamp
        pubs["record"].publish(rec)

    if mode == "lockstep":
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        node.create_subscription(JointState, "joint_states", answer,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    def stream():  # realtime: the five topics at 500 Hz, gains first
        if answering["on"]:
            send_gains()
            for iface, x in (("position", q_set), ("velocity", qd_set), ("effort", tau_ff)):
                pubs[iface].publish(array(x))

    try:
        # every command topic matched before the first command (the first effort command starts
        # the simulation: a set-point or gain topic matched later would miss its first steps)
        # (lockstep reads the gains and the records only)
        read = [p for k, p in pubs.items()
                if (k != "record" if mode == "realtime" else k in ("stiffness", "damping",
                                                                    "record"))]
        assert _spin(ex, 60.0, lambda: got["js"] and all(
            p.get_subscription_count() >= 1 for p in read)), stop_process(sim)
        if mode == "realtime":
            node.create_timer(0.002, stream)
        # (lockstep: the paused simulator re-sends its initial state until it is answered)
        assert _spin(ex, 30.0, lambda: len(got["js"]) > 400), stop_process(sim)
        answering["on"] = False
        t_stop = time.monotonic()
        commanded = list(got["js"])
        # bad input on every topic once the commands stopped (depth-1 subscriptions: a valid
        # command right behind would supersede a bad one before it is read): rejected, counted,
        # the drives keep what they had
        bad = [("stiffness", array(ARM_KP[:-1])), ("damping", array([math.nan] * n)),
               ("stiffness", array(-ARM_KP)), ("position", array([1.0] * (n + 1))),
               ("velocity", array([math.inf] * n)), ("effort", array([])),
               ("record", JointState(name=list(names), position=[0.0] * (n - 1),
                                     velocity=[0.0] * n, effort=[0.0] * n)),
               ("record", JointState(name=list(names), position=[0.0] * n,
                                     velocity=[math.nan] * n, effort=[0.0] * n))]
        # (lockstep reads neither the set-point topics nor the effort topic: records only)
        bad = [(k, m) for k, m in bad if mode == "realtime" and k != "record"
               or mode == "lockstep" and k in ("stiffness", "damping", "record")]
        for k, m in bad:
            pubs[k].publish(m)
            _spin(ex, 0.05)
        # lockstep: lockstep_timeout (0.3 s wall), then real-time steps with the fallback
        assert _spin(ex, 10.0, lambda: time.monotonic() - t_stop > 1.0 and got["diag"] and
                     int(got["diag"]["stale_steps"]) > 400), (got["diag"], stop_process(sim))
        assert sim.poll() is None
        d = got["diag"]
        assert d["drive"] == "hybrid" and d["mode"] == mode, d
        assert int(d["rejected_commands"]) == len(bad), d
        pairs = _steps(got["js"])
        t_of = {id(m): m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in got["js"]}
        t_first = t_of[id(commanded[0])] + 0.05  # commands flowing
        t_last = t_of[id(commanded[-1])]  # the commands stopped after this state
        fresh = [(a, b) for a, b in pairs if t_first < t_of[id(a)] < t_last]
        assert len(fresh) > 300, len(fresh)
        for a, b in fresh:
            np.testing.assert_allclose(np.array(b.effort), _impedance(limit, tau_ff, q_set,
                                                                      qd_set, a),
                                       rtol=0, atol=1e-9)
        # joint_1's 500 N m pull towards its set-point saturated at its 176 N m limit
        assert any(abs(b.effort[0]) == limit[0] for a, b in pairs if t_of[id(a)] < t_last)
        # commands stopped: once stale, tau_ff = 0 and qd_set = 0, q_set and gains held (the
        # simulator may have been up to ~30 ms ahead of this client's record when they stopped)
        stale = [(a, b) for a, b in pairs if t_of[id(a)] > t_last + COMMAND_TIMEOUT + 0.03]
        assert len(stale) > 300, len(stale)
        for a, b in stale:
            np.testing.assert_allclose(np.array(b.effort), _impedance(
                limit, np.zeros(n), q_set, np.zeros(n), a), rtol=0, atol=1e-9)
        assert np.all(np.isfinite(np.array(got["js"][-1].position)))
    finally:
        node.destroy_node()
        rclpy.shutdown()
        out = stop_process(sim)
    assert "command rejected" in out


# ------------------------------------------------------------------ the paused start
def test_paused_start_waits_for_the_nodes_on_simulated_time(ros_env):
    """``clock_subscribers: 1``: a lockstep simulation answered by a controller whose commands
    match every state stays paused (no step, /clock at 0, state re-sent, diagnostics say
    holding) while /clock has no subscriber, and starts with the next command once a node
    subscribes to /clock (steps advance, every command matched). Its encoders
    (``encoder_resolution: 0.01``) report whole counts."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    ns = f"/clockwait{os.getpid()}"
    sim = start_module("wbc_dynamics.sim.sim_node", ns, {
        "robot": "arm", "mode": "lockstep", "sim_rate": 1000.0, "real_time_factor": 1.0,
        "initial_pose": "grasp", "joint_dynamics": False, "clock_subscribers": 1,
        "diagnostics_rate": 10.0, "resend_period": 0.05, "encoder_resolution": 0.01})
    rclpy.init()
    node = rclpy.create_node("clock_wait_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got = {"diag": None, "states": 0, "clock": []}
    pub_cmd = node.create_publisher(JointState, "wbc_controller/joint_commands", 10)

    def on_js(m):  # a controller: zero torque, stamped with the state it answers
        got["states"] += 1
        got["positions"] = np.array(m.position)
        cmd = JointState(name=list(m.name), effort=[0.0] * len(m.name))
        cmd.header.stamp = m.header.stamp
        pub_cmd.publish(cmd)

    def on_diag(arr):
        for st in arr.status:
            if st.name.startswith(ns + "/") and st.name.endswith(": simulator"):
                got["diag"] = {kv.key: kv.value for kv in st.values}

    node.create_subscription(JointState, "joint_states", on_js,
                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 50)
    try:
        assert _spin(ex, 120.0, lambda: got["states"] >= 5 and pub_cmd.get_subscription_count()
                     and got["diag"] is not None), "no state from wbc_sim"
        _spin(ex, 1.5)  # commands answer every re-sent state: no /clock subscriber yet
        d = got["diag"]
        assert int(d["steps"]) == 0 and int(d["matched_commands"]) == 0, d
        assert int(d["resent_states"]) >= 10, d
        assert d["state"] == "holding (waiting for 1 /clock subscribers)", d
        node.create_subscription(Clock, "/clock", lambda m: got["clock"].append(
            m.clock.sec + 1e-9 * m.clock.nanosec), 10)
        assert _spin(ex, 30.0, lambda: int(got["diag"]["steps"]) > 200), got["diag"]
        d = got["diag"]
        assert d["state"] == "running" and int(d["missed_commands"]) == 0, d
        assert got["clock"] and max(got["clock"]) > 0.1, got["clock"][-3:]
        # the encoders' readings: whole counts of encoder_resolution
        p = got["positions"]
        assert np.allclose(p / 0.01, np.round(p / 0.01), atol=1e-9), p
    finally:
        node.destroy_node()
        rclpy.shutdown()
        out = stop_process(sim)
    assert "Traceback" not in out, out[-2000:]


def test_lockstep_steps_publish_preallocated_messages_and_the_timer_idles(ros_env):
    """Speed of a lockstep step (in process, the commands handed to the node directly): 200
    steps publish the state through the same two message objects (/clock, joint_states: no
    message built per step) carrying each step's stamp, joint positions and applied efforts;
    the lockstep timer ticks at its coarse period (10 ms: re-send and timeout checks) while the
    simulator waits for a command, at the step period (1 ms) only while it paces a matched
    command, and back at the coarse one once that step is taken."""
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from wbc_dynamics.sim.sim_node import SimNode

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    params = {"robot": "quadruped", "mode": "lockstep", "real_time_factor": 0.0,
              "joint_dynamics": False}
    node = SimNode(context=ctx, parameter_overrides=[Parameter(k, value=v)
                                                     for k, v in params.items()])
    try:
        sent = []
        for name in ("pub_clock", "pub_js"):
            pub = getattr(node, name)

            def record(m, orig=pub.publish, name=name):
                stamp = m.clock if name == "pub_clock" else m.header.stamp
                sent.append((name, id(m), stamp.sec * 10**9 + stamp.nanosec,
                             np.array(getattr(m, "position", ())),
                             np.array(getattr(m, "effort", ()))))
                orig(m)

            pub.publish = record
        names = list(node.plant.joint_names)
        effort = np.linspace(-1.0, 1.0, len(names))  # [N m] within every effort limit

        def answer():
            cmd = JointState(name=names, effort=effort.tolist())
            cmd.header.stamp.sec, cmd.header.stamp.nanosec = divmod(node._state_ns, 10**9)
            node._on_stamped_command(cmd)

        coarse, fast = 10_000_000, 1_000_000  # [ns]
        assert node.timer.timer_period_ns == coarse
        for _ in range(200):
            answer()
        assert node.counts["steps"] == 200 and node.counts["matched_commands"] == 200
        js = [s for s in sent if s[0] == "pub_js"]
        clock = [s for s in sent if s[0] == "pub_clock"]
        assert len(js) == len(clock) == 200
        assert len({s[1] for s in js}) == 1 and len({s[1] for s in clock}) == 1
        assert [s[2] for s in js] == [s[2] for s in clock] == [k * 10**6 for k in range(1, 201)]
        for s in js:
            np.testing.assert_allclose(s[4], effort, atol=1e-12)  # applied in the step
        q_end = node.plant.get_state()[0][7:]
        np.testing.assert_array_equal(js[-1][3], q_end)
        assert np.max(np.abs(js[-1][3] - js[0][3])) > 1e-4  # each step's own positions
        assert node.timer.timer_period_ns == coarse
        node.rtf = 1e-3  # paced far below the wall clock: the matched command waits
        answer()
        assert node._ready and node.counts["steps"] == 200
        assert node.timer.timer_period_ns == fast
        node.rtf = 0.0
        node._on_lockstep_timer()  # the paced step
        assert node.counts["steps"] == 201 and not node._ready
        node._on_lockstep_timer()  # waiting for the next command
        assert node.timer.timer_period_ns == coarse
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)
