"""The controller node in a separate process, driven over DDS with real rclpy (localhost only).

Asserts numbers: published torques equal the core's computation for the published state (1e-9),
stale inputs produce the documented safe command, malformed messages are rejected while the node
keeps controlling, runtime parameters are validated, and the lifecycle publishes what it should in
each state (configure -> activate -> deactivate -> cleanup).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from lifecycle_msgs.msg import State, Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from node_harness import Client, start_controller, stop_process  # noqa: E402
from rcl_interfaces.msg import Parameter as ParamMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from wbc_dynamics.model import RobotModel  # noqa: E402
from wbc_dynamics.robots import robot_info, robot_path  # noqa: E402

KP, KD, DAMP = 40.0, 6.0, 5.0
STATE_TIMEOUT, REF_TIMEOUT = 0.2, 0.6


@pytest.fixture(scope="module")
def ros(ros_env):
    rclpy.init()
    yield
    rclpy.shutdown()


@pytest.fixture(scope="module")
def arm_model():
    info = robot_info("arm")
    return info, RobotModel.from_urdf(robot_path("arm"))


@pytest.fixture(scope="module")
def arm_node(ros):
    ns = "/arm_test"
    proc = start_controller(ns, {"robot": "arm", "kp": [KP], "kd": [KD],
                                 "safe_damping": [DAMP], "state_timeout": STATE_TIMEOUT,
                                 "reference_timeout": REF_TIMEOUT, "watchdog_rate": 50.0,
                                 "diagnostics_rate": 5.0})
    client = Client(ns, "arm_test_client")
    try:
        client.wait_connected()
        yield client, proc
    finally:
        client.close()
        out = stop_process(proc)
        print(out)


def _expected_arm(model, q, v, acc, q_des=None, v_des=None, damping=None):
    if damping is not None:
        qdd = -damping * v
    else:
        qdd = acc + (KP * (q_des - q) if q_des is not None else 0.0) + \
            (KD * (v_des - v) if v_des is not None else 0.0)
    tau = model.rnea(q, v, qdd)
    lim = np.where(np.isfinite(model.effort_limit) & (model.effort_limit > 0),
                   model.effort_limit, np.inf)
    return np.clip(tau, -lim, lim)


def test_published_torque_equals_core_computation(arm_node, arm_model):
    client, proc = arm_node
    info, model = arm_model
    names = info["joint_names"]
    rng = np.random.default_rng(5)
    order = rng.permutation(len(names))                  # any order + an extra joint
    for _trial in range(3):
        q = np.array(info["standing_q"]) + 0.2 * rng.standard_normal(len(names))
        v = 0.5 * rng.standard_normal(len(names))
        acc = rng.standard_normal(len(names))
        q_des = q + 0.1 * rng.standard_normal(len(names))
        v_des = 0.2 * rng.standard_normal(len(names))
        for _attempt in range(3):  # re-send if the reference had not reached the node yet
            client.send_reference([names[i] for i in order], acc[order], q_des[order],
                                  v_des[order])
            ok = client.send_state_until_echo(["extra_joint"] + [names[i] for i in order],
                                              np.r_[123.0, q[order]], np.r_[-7.0, v[order]],
                                              echo_q=q)
            assert ok, f"no command echo: {len(client.echo)} echoes for q={q}"
            echo = client.echo_for(q)
            expected = _expected_arm(model, q, v, acc, q_des, v_des)
            if np.allclose(np.array(echo.effort), expected, rtol=0, atol=1e-9):
                break
            q = q + 1e-4
        np.testing.assert_allclose(np.array(echo.effort), expected, rtol=0, atol=1e-9)
        assert list(echo.name) == names
        np.testing.assert_array_equal(np.array(echo.velocity), v)
        # the Float64MultiArray command of the same tick (data[i] = i-th configured joint)
        assert client.spin(lambda e=expected: any(np.allclose(c, e, rtol=0, atol=1e-9)
                                                  for _, c in client.cmds), 2.0)


def test_stale_state_gives_zero_and_stale_reference_gives_damping(arm_node, arm_model):
    client, proc = arm_node
    info, model = arm_model
    names = info["joint_names"]
    q = np.array(info["standing_q"]) + 0.05
    v = np.linspace(-1.0, 1.0, len(names))
    client.send_reference(names, np.zeros(len(names)))
    assert client.send_state_until_echo(names, q, v)
    t_sent = time.monotonic()
    n0 = len(client.cmds)
    # joint_states stop: the watchdog must publish exactly zero within timeout + a period
    assert client.spin(lambda: any(np.all(c == 0.0) for _, c in client.cmds[n0:]), 2.0), \
        "no zero command after joint_states stopped"
    t_zero = next(t for t, c in client.cmds[n0:] if np.all(c == 0.0))
    assert STATE_TIMEOUT - 0.05 <= t_zero - t_sent <= STATE_TIMEOUT + 0.3
    # reference goes stale while joint states keep coming: damping + gravity compensation
    client.spin(lambda: False, REF_TIMEOUT + 0.1)
    q2 = q + 0.01
    assert client.send_state_until_echo(names, q2, v)
    expected = _expected_arm(model, q2, v, None, damping=DAMP)
    np.testing.assert_allclose(np.array(client.echo_for(q2).effort), expected, rtol=0, atol=1e-9)
    assert np.max(np.abs(expected)) > 1.0                 # not trivially zero
    assert client.spin(lambda: any(d.get("mode") in ("safe_stale_reference", "safe_stale_state")
                                   for d in client.diag), 3.0)


def test_malformed_messages_rejected_node_keeps_running(arm_node, arm_model):
    client, proc = arm_node
    info, model = arm_model
    names = info["joint_names"]
    n = len(names)
    q = np.array(info["standing_q"]) - 0.03
    client.send_reference(names, np.ones(n))
    client.spin(lambda: False, 0.05)
    bad_nan = q.copy()
    bad_nan[3] = np.nan
    client.send_state(names, bad_nan, np.zeros(n))                 # NaN
    client.spin(lambda: False, 0.1)
    client.send_state(names[1:], q[1:], np.zeros(n - 1))           # missing joint
    client.spin(lambda: False, 0.1)
    m = JointState()
    m.name, m.position, m.velocity = list(names), [float(x) for x in q], [0.0] * (n - 2)
    client.pub_js.publish(m)                                       # length mismatch
    client.spin(lambda: False, 0.1)
    bad_ref = JointTrajectory()
    bad_ref.joint_names = list(names)
    client.pub_ref.publish(bad_ref)                                # no points
    client.spin(lambda: False, 0.2)
    assert proc.poll() is None, "controller died on a malformed message"
    for e in client.echo:
        assert np.all(np.isfinite(np.array(e.effort)))
    assert client.echo_for(q) is None                              # rejected: no tick for it
    exp = lambda qq: _expected_arm(model, qq, np.zeros(n), np.ones(n))  # noqa: E731
    eff, q = client.command_for(names, q, np.zeros(n), np.ones(n), expected=exp)
    np.testing.assert_allclose(eff, exp(q), rtol=0, atol=1e-9)
    assert client.spin(lambda: any(int(d.get("rejected_joint_states", 0)) >= 3
                                   and int(d.get("rejected_reference", 0)) >= 1
                                   for d in client.diag), 3.0)


def _set_param(client, name, ptype, **value):
    req = SetParameters.Request()
    req.parameters = [ParamMsg(name=name, value=ParameterValue(type=ptype, **value))]
    return client.call(SetParameters, "wbc_controller/set_parameters", req).results[0]


def test_runtime_parameters_validated_and_applied(arm_node, arm_model):
    client, proc = arm_node
    info, model = arm_model
    names = info["joint_names"]
    n = len(names)
    r = _set_param(client, "kd", ParameterType.PARAMETER_DOUBLE_ARRAY,
                   double_array_value=[1.0] * 5 + [-1.0] + [1.0] * 5)
    assert not r.successful and "joint_6" in r.reason
    r = _set_param(client, "method", ParameterType.PARAMETER_STRING, string_value="magic")
    assert not r.successful and "method" in r.reason
    # a contact method compiled at configure only if listed in warm_methods: a switch to any
    # other would stall the ticks for the compilation
    r = _set_param(client, "method", ParameterType.PARAMETER_STRING, string_value="lcp_noslip")
    assert not r.successful and "warm_methods" in r.reason and "'none'" in r.reason
    r = _set_param(client, "robot", ParameterType.PARAMETER_STRING, string_value="humanoid")
    assert not r.successful and "fixed while configured" in r.reason
    r = _set_param(client, "kp", ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=[80.0])
    assert r.successful
    q = np.array(info["standing_q"]) + 0.02
    q_des = q + 0.1
    lim = model.effort_limit

    def exp(qq):
        return np.clip(model.rnea(qq, np.zeros(n), 80.0 * (q_des - qq)), -lim, lim)

    eff, q = client.command_for(names, q, np.zeros(n), np.zeros(n), q_des, expected=exp)
    np.testing.assert_allclose(eff, exp(q), rtol=0, atol=1e-9)
    assert _set_param(client, "kp", ParameterType.PARAMETER_DOUBLE_ARRAY,
                      double_array_value=[KP]).successful
    res = client.call(Trigger, "wbc_controller/reset_solver", Trigger.Request())
    assert res.success


# ------------------------------------------------------------------ floating base with contacts
def test_quadruped_contacts_over_dds(ros):
    from wbc_dynamics.contact import solve
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace

    info = robot_info("quadruped")
    ns = "/quad_test"
    proc = start_controller(ns, {"robot": "quadruped", "floating_base": True,
                                 "method": "lcp_noslip", "friction": 0.8,
                                 "state_timeout": 0.5, "reference_timeout": 1.0,
                                 "effort_limits": [1000.0]})
    client = Client(ns, "quad_test_client")
    try:
        client.wait_connected()
        feet = info["contact_links"]
        got = {f: [] for f in feet}
        for f in feet:
            client.node.create_subscription(WrenchStamped,
                                            f"{ns}/wbc_controller/contact_wrench/{f}",
                                            got[f].append, 10)
        q = np.array(info["standing_q"])
        names = info["joint_names"]
        od = Odometry()
        od.pose.pose.position.x, od.pose.pose.position.y, od.pose.pose.position.z = q[:3]
        o = od.pose.pose.orientation
        o.x, o.y, o.z, o.w = q[3:7]
        client.send_reference(names, np.zeros(12))
        for _ in range(20):  # until the node has base state, reference and joint state
            client.pub_odom.publish(od)
            client.spin(lambda: False, 0.02)
            client.send_state(names, q[7:], np.zeros(12))
            if client.spin(lambda: client.echo_for(q[7:], nonzero=True) is not None, 0.3):
                break
        assert client.echo_for(q[7:], nonzero=True) is not None, "no contact torque command"
        tau = np.array(client.echo_for(q[7:], nonzero=True).effort)
        # independent in-process computation with the core + contact solver (cold start)
        robot = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
        cm = ContactModel(robot, contact_links=feet, features=[HalfSpace.ground(0.0, mu=0.8)],
                          margin=0.005, dt=1e-3)
        res = solve("lcp_noslip", cm.build(q, np.zeros(18), np.zeros(12)), None)
        np.testing.assert_allclose(tau, res.tau, rtol=0, atol=1e-9)
        assert client.spin(lambda: all(len(got[f]) for f in feet), 3.0)
        fz = sum(got[f][-1].wrench.force.z for f in feet)
        assert abs(fz - robot.total_mass * 9.81) < 1e-6 * robot.total_mass * 9.81
    finally:
        client.close()
        stop_process(proc)


# ------------------------------------------------------------------ lifecycle
def _transition(client, tid):
    req = ChangeState.Request()
    req.transition = Transition(id=tid)
    return client.call(ChangeState, "wbc_controller/change_state", req).success


def _state(client):
    return client.call(GetState, "wbc_controller/get_state", GetState.Request()).current_state.id


def test_lifecycle_configure_activate_deactivate_cleanup(ros, arm_model):
    info, model = arm_model
    names = info["joint_names"]
    n = len(names)
    ns = "/lc_test"
    proc = start_controller(ns, {"robot": "arm", "autostart": False, "state_timeout": 0.3,
                                 "reference_timeout": 5.0})
    client = Client(ns, "lc_test_client")
    q = np.array(info["standing_q"])
    try:
        assert client.spin(lambda: client.node.count_subscribers(
            f"{ns}/wbc_controller/transition_event") >= 0 and _state(client) ==
            State.PRIMARY_STATE_UNCONFIGURED, 60.0)
        # unconfigured: no command publisher at all
        assert client.node.count_publishers(f"{ns}/effort_controller/commands") == 0
        assert _transition(client, Transition.TRANSITION_CONFIGURE)
        assert _state(client) == State.PRIMARY_STATE_INACTIVE
        client.wait_connected()
        # inactive: inputs accepted but nothing published
        client.send_reference(names, np.zeros(n))
        client.spin(lambda: False, 0.05)
        client.send_state(names, q, np.zeros(n))
        client.spin(lambda: False, 0.5)
        assert client.cmds == [] and client.echo == []
        # active: commands flow
        assert _transition(client, Transition.TRANSITION_ACTIVATE)
        assert _state(client) == State.PRIMARY_STATE_ACTIVE
        q1 = q + 0.01
        exp = lambda qq: _expected_arm(model, qq, np.zeros(n), np.zeros(n))  # noqa: E731
        eff, q1 = client.command_for(names, q1, np.zeros(n), np.zeros(n), expected=exp)
        np.testing.assert_allclose(eff, exp(q1), rtol=0, atol=1e-9)
        # deactivate: one final zero command, then silence
        k = len(client.cmds)
        assert _transition(client, Transition.TRANSITION_DEACTIVATE)
        assert _state(client) == State.PRIMARY_STATE_INACTIVE
        assert client.spin(lambda: len(client.cmds) > k, 2.0)
        assert np.all(client.cmds[-1][1] == 0.0)
        k = len(client.cmds)
        client.send_state(names, q + 0.02, np.zeros(n))
        client.spin(lambda: False, 0.6)                          # > state timeout + watchdog
        assert len(client.cmds) == k
        # cleanup: publishers released
        assert _transition(client, Transition.TRANSITION_CLEANUP)
        assert _state(client) == State.PRIMARY_STATE_UNCONFIGURED
        assert client.spin(lambda: client.node.count_publishers(
            f"{ns}/effort_controller/commands") == 0, 5.0)
        # a failing configure (bad parameter) is reported, node stays unconfigured
        req = SetParameters.Request()
        req.parameters = [ParamMsg(name="method", value=ParameterValue(
            type=ParameterType.PARAMETER_STRING, string_value="bogus"))]
        assert client.call(SetParameters, "wbc_controller/set_parameters", req).results[0] \
            .successful                                          # validated at configure
        assert not _transition(client, Transition.TRANSITION_CONFIGURE)
        assert _state(client) == State.PRIMARY_STATE_UNCONFIGURED
        assert proc.poll() is None
    finally:
        client.close()
        out = stop_process(proc)
    assert "configure failed: method" in out
    assert proc.returncode == 0, f"unclean exit {proc.returncode}: {out}"


def test_console_script_exits_1_when_configuration_fails(ros_env):
    proc = start_controller("/bad_cfg", {"robot": "arm", "joints": ["joint_1", "nope"]})
    try:
        proc.wait(timeout=60)
    finally:
        out = stop_process(proc)
    assert proc.returncode == 1
    assert "configure failed: joints: joint 'nope' is not a movable joint" in out


@pytest.mark.parametrize("autostart", [True, False])
def test_exit_deletes_the_dds_participant_and_its_shared_memory(ros_env, autostart):
    """After SIGINT the controller's DDS participant is deleted, active (configured) or left
    unconfigured for a lifecycle manager: Fast DDS removes its shared-memory segments and ports
    from /dev/shm. (configure's gc.freeze() had kept the rclpy context alive past the
    interpreter's exit, and an inactive node was ended by os._exit: each run left its files
    behind, zombies that later participants of the domain reused.)"""
    import os
    import select

    from ros_test_env import SHM_DIR, fastdds_shm_locked_by, fastdds_shm_zombie

    proc = start_controller("/exit_test", {"robot": "arm", "autostart": autostart})
    try:
        deadline, seen = time.monotonic() + 60.0, ""
        if autostart:  # active (configured, so frozen): it commands the safe mode, no state
            while "safe command" not in seen and time.monotonic() < deadline:
                if select.select([proc.stdout], [], [], 0.5)[0]:
                    seen += proc.stdout.readline()
                assert proc.poll() is None, seen
            assert "safe command" in seen, seen
        else:  # spinning unconfigured (its participant exists, then a margin for the spin)
            while not fastdds_shm_locked_by(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2.0)
        held = fastdds_shm_locked_by(proc.pid)
    finally:
        out = stop_process(proc)
    assert proc.returncode == 0, out
    assert "exiting now" not in out, out  # not the compile-time os._exit
    # the participant's segments gone after the exit; its ports gone too, or still open by
    # another live participant (a port is shared by every participant of that port number,
    # e.g. of another test run on the machine): none left a zombie
    segments = [n for n in held if not n.startswith("fastdds_port")]
    assert len(segments) >= 2 and any(n.startswith("fastdds_port") for n in held), held
    assert [n for n in segments if os.path.exists(os.path.join(SHM_DIR, n))] == [], held
    assert [n for n in held if fastdds_shm_zombie(n)] == [], held


# ------------------------------------------------------------------ a grasped object
def test_grasped_object_over_dds(ros):
    """object_urdf / grasp_force / grasp_hold as node parameters, the object's pose and twist on
    ``~/object_odom``: the published torque equals the in-process controller's for the same
    inputs (squeeze included), and a malformed object odometry is a counted rejection."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from wbc_dynamics.controller import WholeBodyController

    info = robot_info("arm")
    names = info["joint_names"]
    ns = "/grasp_test"
    params = {"robot": "arm", "method": "qp_coulomb", "contact_links": info["fingertip_links"],
              "object_urdf": "box", "grasp_force": 20.0, "grasp_hold": True, "kp": [KP],
              "kd": [KD], "state_timeout": 0.5, "reference_timeout": 1.0, "warm_start": False}
    proc = start_controller(ns, {**params, "diagnostics_rate": 5.0})
    client = Client(ns, "grasp_test_client")
    try:
        client.wait_connected()
        pub = client.node.create_publisher(
            Odometry, f"{ns}/wbc_controller/object_odom",
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        assert client.spin(lambda: pub.get_subscription_count() > 0, 30.0)
        box = np.array(info["box_pose"], dtype=float)  # x y z qx qy qz qw, at rest

        def send_object(position):
            od = Odometry()
            p = od.pose.pose.position
            p.x, p.y, p.z = (float(x) for x in position)
            o = od.pose.pose.orientation
            o.x, o.y, o.z, o.w = (float(x) for x in box[3:7])
            pub.publish(od)

        ctl = WholeBodyController(params)
        q0 = np.array(info["grasp_q"], dtype=float)
        q_des = q0 + 0.02
        acc = np.zeros(len(names))

        def expected(q):
            # grasp_hold latches each held joint's grip position at the controller's FIRST
            # control tick touching the box, so the node's torque at q depends on which of the
            # states command_for sent was its first control tick. command_for returns the first
            # attempt whose echo equals expected(q); the node's ticks of the attempts before
            # were safe ticks (reference or object state not there yet -- no latch), else they
            # would have matched. So q is the node's first control tick: start from a fresh
            # latch. (A persistent latch from the first call, q0, differed from the node's by
            # 2.8e-4 / 5.7e-4 N m when the node's first control tick was the 2nd / 3rd attempt:
            # the CI failure, reproduced by delaying the object stream by 0.5 s.)
            ctl.reset()
            ctl.set_joint_state(q, np.zeros(len(names)), 0.0)
            ctl.set_object_state(box[:3], box[3:7], np.zeros(3), np.zeros(3), 0.0)
            ctl.set_reference(acc, 0.0, position=q_des, velocity=np.zeros(len(names)))
            out = ctl.update(0.0)
            assert out.mode == "control" and "grasp_force" in out.solver_flags, out
            return out.tau.copy()

        # the object's state streams (100 Hz, as a tracker would): it must stay younger than
        # state_timeout whenever a joint state arrives, also when the machine is loaded
        stream = client.node.create_timer(0.01, lambda: send_object(box[:3]))
        client.spin(lambda: False, 0.3)  # the object state reaches the node first
        eff, q = client.command_for(names, q0, np.zeros(len(names)), acc, q_des,
                                    np.zeros(len(names)), expected=expected)
        np.testing.assert_allclose(eff, expected(q), rtol=0, atol=1e-9)
        client.node.destroy_timer(stream)
        send_object([math.nan, 0.0, 0.0])
        assert client.spin(lambda: any(int(d.get("rejected_object_odom", 0)) >= 1
                                       for d in client.diag), 10.0), client.diag[-1:]
        assert proc.poll() is None
    finally:
        client.close()
        print(stop_process(proc))


# ------------------------------------------------------------------ the hybrid drive command
def test_hybrid_drive_command_over_dds(ros, arm_model):
    """``drive_stiffness`` / ``drive_damping`` > 0: the node publishes the four hybrid command
    topics beside the effort command, and the ``~/joint_commands`` record carries the
    set-points. Asserted against the in-process controller for the same inputs (1e-9): tau_ff,
    set-points (the reference's positions and velocities) and the configured gains; a stale
    reference's damping command keeps the gains and holds the measured position at rest; a
    stale state (the watchdog) and the stop command of deactivate send zero gains with the
    last measured position as the set-point."""
    from std_msgs.msg import Float64MultiArray

    from wbc_dynamics.controller import WholeBodyController

    info, model = arm_model
    names = info["joint_names"]
    n = len(names)
    stiffness = [float(x) for x in np.linspace(2.0, 12.0, n)]
    params = {"robot": "arm", "kp": [KP], "kd": [KD], "safe_damping": [DAMP],
              "state_timeout": STATE_TIMEOUT, "reference_timeout": REF_TIMEOUT,
              "drive_stiffness": stiffness, "drive_damping": [0.25]}
    ns = "/hybrid_test"
    proc = start_controller(ns, {**params, "diagnostics_rate": 5.0})
    client = Client(ns, "hybrid_test_client")
    got: dict[str, list[np.ndarray]] = {i: [] for i in ("position", "velocity", "stiffness",
                                                        "damping")}
    for iface, msgs in got.items():
        client.node.create_subscription(
            Float64MultiArray, f"{ns}/{iface}_controller/commands",
            lambda m, msgs=msgs: msgs.append(np.array(m.data)), 50)
    ctl = WholeBodyController(params)
    try:
        client.wait_connected()
        assert client.spin(lambda: all(client.node.count_publishers(
            f"{ns}/{i}_controller/commands") == 1 for i in got), 10.0)
        rng = np.random.default_rng(11)
        q = np.array(info["grasp_q"]) + 0.1 * rng.standard_normal(n)
        v = 0.3 * rng.standard_normal(n)
        acc = rng.standard_normal(n)
        q_des = q + 0.05 * rng.standard_normal(n)
        v_des = 0.2 * rng.standard_normal(n)
        for attempt in range(3):  # re-send if the reference had not reached the node yet
            client.send_reference(names, acc, q_des, v_des)
            # the record echoes q_des only once the reference has arrived (DDS does not order
            # samples across topics; on a loaded machine the first one can be late)
            if not client.send_state_until_echo(names, q, v, echo_q=q_des):
                assert attempt < 2, "no record echoing the reference's positions"
                continue
            echo = client.echo_for(q_des)
            ctl.reset()
            ctl.set_joint_state(q, v, 0.0)
            ctl.set_reference(acc, 0.0, position=q_des, velocity=v_des)
            out = ctl.update(0.0)
            if np.allclose(np.array(echo.effort), out.tau, rtol=0, atol=1e-9):
                break
            q = q + 1e-4
        assert out.mode == "control"
        np.testing.assert_allclose(np.array(echo.effort), out.tau, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(np.array(echo.position), q_des)  # the set-points
        np.testing.assert_array_equal(np.array(echo.velocity), v_des)
        np.testing.assert_array_equal(out.position_setpoint, q_des)
        expected = {"position": q_des, "velocity": v_des, "stiffness": np.array(stiffness),
                    "damping": np.full(n, 0.25)}
        np.testing.assert_array_equal(out.stiffness, expected["stiffness"])
        for iface, x in expected.items():
            assert client.spin(lambda i=iface, x=x: any(np.array_equal(m, x) for m in got[i]),
                               2.0), (iface, got[iface][-3:])
        assert client.spin(lambda: any(np.allclose(c, out.tau, rtol=0, atol=1e-9)
                                       for _, c in client.cmds), 2.0)
        # stale reference (damping safe mode): the gains stay, the set-points hold the
        # measured position at zero velocity
        # (meanwhile the state went stale too: the watchdog's ticks sent zero gains)
        client.spin(lambda: False, REF_TIMEOUT + 0.1)
        assert not np.any(got["stiffness"][-1])
        k = len(got["stiffness"])
        q2 = q + 0.01
        assert client.send_state_until_echo(names, q2, v, echo_q=q2)
        echo = client.echo_for(q2)
        np.testing.assert_allclose(np.array(echo.effort),
                                   _expected_arm(model, q2, v, None, damping=DAMP),
                                   rtol=0, atol=1e-9)
        np.testing.assert_array_equal(np.array(echo.velocity), np.zeros(n))
        assert client.spin(lambda: any(np.array_equal(m, q2) for m in got["position"]), 2.0)
        assert client.spin(lambda: any(np.array_equal(m, expected["stiffness"])
                                       for m in got["stiffness"][k:]), 2.0)
        # joint_states stop: the watchdog's stale-state command has zero gains, the last
        # measured position as the set-point, zero velocity and zero effort
        k = {i: len(m) for i, m in got.items()}
        assert client.spin(lambda: all(len(got[i]) > k[i] for i in got)
                           and not np.any(got["damping"][-1]), 2.0)
        assert client.spin(lambda: all(len(m) > k[i] + 1 for i, m in got.items()), 2.0)
        for iface, x in (("stiffness", np.zeros(n)), ("damping", np.zeros(n)),
                         ("position", q2), ("velocity", np.zeros(n))):
            np.testing.assert_array_equal(got[iface][-1], x)
        assert np.all(client.cmds[-1][1] == 0.0)
        # deactivate: the stop command, zero gains too
        k = {i: len(m) for i, m in got.items()}
        assert _transition(client, Transition.TRANSITION_DEACTIVATE)
        assert client.spin(lambda: all(len(m) > k[i] for i, m in got.items()), 2.0)
        assert not np.any(got["stiffness"][-1]) and not np.any(got["damping"][-1])
        np.testing.assert_array_equal(got["position"][-1], q2)
        assert np.all(client.cmds[-1][1] == 0.0)
        assert proc.poll() is None
    finally:
        client.close()
        out_text = stop_process(proc)
    assert "internal error" not in out_text, out_text
