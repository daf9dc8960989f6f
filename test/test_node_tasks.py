"""The node's task goal topics (geometry_msgs PoseStamped / PointStamped on
``~/tasks/<name>/goal``): goals reach the controller, a goal in another frame or with a bad
quaternion is a counted rejection, and /diagnostics reports each task's error."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.lifecycle import TransitionCallbackReturn  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from wbc_dynamics.node import WbcControllerNode  # noqa: E402
from wbc_dynamics.robots import robot_info  # noqa: E402


@pytest.fixture
def arm_node(ros_env):
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    params = dict(robot="arm", kp=[100.0], kd=[20.0], task_names=["hand", "posture"],
                  task_kinds=["frame", "posture"], task_links=["hand", ""],
                  task_modes=["pose", ""], task_priorities=[0, 1])
    node = WbcControllerNode(context=ctx, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    yield node
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def _goal(frame: str, p, quat) -> PoseStamped:
    m = PoseStamped()
    m.header.frame_id = frame
    m.pose.position.x, m.pose.position.y, m.pose.position.z = p
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = quat
    return m


def _grasp_state() -> JointState:
    """The bundled arm at rest in its grasp pose."""
    info = robot_info("arm")
    js = JointState()
    js.name = list(info["joint_names"])
    js.position = list(info["grasp_q"])
    js.velocity = [0.0] * 11
    return js


def test_pose_goals_reach_the_controller_and_bad_ones_are_counted(arm_node):
    node = arm_node
    ctl = node.controller
    js = _grasp_state()
    node._on_joint_state(js)  # the first control tick holds the goals
    assert ctl.tasks is not None and node._active
    on_goal = node._task_goal_callback(ctl.tasks.specs[0])
    s = np.sqrt(0.5)
    on_goal(_goal("world", (0.4, 0.1, 0.5), (0.0, s, 0.0, s)))
    p, R, _, _ = ctl.tasks.goal("hand")
    assert np.allclose(p, [0.4, 0.1, 0.5])
    assert np.allclose(R, [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-12)
    on_goal(_goal("base_link", (1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 1.0)))  # another frame
    on_goal(_goal("", (1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 0.0)))  # not a rotation
    assert node._rejected["task_goals"] == {"frame": 1, "invalid": 1}
    assert np.allclose(ctl.tasks.goal("hand")[0], [0.4, 0.1, 0.5])  # unchanged
    node._on_joint_state(js)
    published = []
    node._pub_diag.publish = published.append
    node._publish_diagnostics()
    kv = {k.key: k.value for k in published[0].status[0].values}
    err = ctl.tasks.error("hand")
    assert float(kv["task.hand.position_error_m"]) == pytest.approx(
        np.linalg.norm(err[:3]), abs=1e-5)
    assert "task.hand.orientation_error_rad" in kv
    assert kv["rejected_task_goals.frame"] == "1"


def test_a_goal_published_over_dds_reaches_the_task(arm_node):
    from rclpy.executors import SingleThreadedExecutor

    node = arm_node
    pub_node = rclpy.create_node("task_goal_publisher", context=node.context)
    pub = pub_node.create_publisher(PoseStamped, "/wbc_controller/tasks/hand/goal", 10)
    ex = SingleThreadedExecutor(context=node.context)
    ex.add_node(node)
    ex.add_node(pub_node)
    try:
        import time

        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            pub.publish(_goal("world", (0.3, -0.2, 0.6), (0.0, 0.0, 0.0, 1.0)))
            ex.spin_once(timeout_sec=0.05)
            if np.allclose(node.controller.tasks.goal("hand")[0], [0.3, -0.2, 0.6]):
                break
        assert np.allclose(node.controller.tasks.goal("hand")[0], [0.3, -0.2, 0.6])
        assert np.allclose(node.controller.tasks.goal("hand")[1], np.eye(3))
    finally:
        ex.shutdown()
        pub_node.destroy_node()


def _walking_node():
    """(context, node) of the bundled quadruped with ``gait: trot``, not yet configured."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    params = dict(robot="quadruped", floating_base=True, method="lcp_noslip",
                  contact_state_filter=True, kp=[100.0], kd=[20.0], gait="trot")
    return ctx, WbcControllerNode(context=ctx, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])


def test_cmd_vel_commands_the_gait_and_bad_commands_are_counted(ros_env):
    from geometry_msgs.msg import Twist

    ctx, node = _walking_node()
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        walker = node.controller.walker
        assert walker is not None
        assert node.controller.tasks.task_names[:2] == ["com", "trunk"]
        m = Twist()
        m.linear.x, m.linear.y, m.angular.z = 0.2, -0.1, 0.3
        node._on_cmd_vel(m)
        assert walker.command.tolist() == [0.2, -0.1, 0.3]
        m.linear.x = float("inf")
        node._on_cmd_vel(m)
        assert node._rejected["cmd_vel"] == {"non_finite": 1}
        assert walker.command.tolist() == [0.2, -0.1, 0.3]
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_the_gait_publishes_its_contact_schedule_when_it_changes(ros_env):
    """``~/gait_schedule``: the walker's scheduled swing feet as std_msgs/UInt8MultiArray in
    ``contact_links`` order (1 = stance), the ``~/contact_schedule`` format, once per change."""
    ctx, node = _walking_node()
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        ctl = node.controller
        sent = []
        node._pub_gait.publish = lambda m: sent.append(list(m.data))
        links = list(ctl.contact_links)
        feet = ctl.walker.feet
        # the walker's change counter and schedule, as TrotWalker.update leaves them
        walker = SimpleNamespace(schedule_changes=0, scheduled=np.zeros(4, dtype=bool))
        node._publish_gait_schedule(walker)  # the first tick: sent whatever it holds
        walker.scheduled = np.array([True, False, False, True])
        walker.schedule_changes = 1
        node._publish_gait_schedule(walker)
        node._publish_gait_schedule(walker)  # unchanged: nothing sent
        expected = [1] * len(links)
        for i in (0, 3):
            expected[links.index(feet[i])] = 0
        assert sent == [[1] * len(links), expected]
        assert node._pub_gait.topic_name == "/wbc_controller/gait_schedule"
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_task_weights_change_at_runtime_over_the_parameter_service(arm_node):
    node = arm_node
    res = node.set_parameters([Parameter("task_weights", value=[3.0, 1.0])])
    assert res[0].successful, res[0].reason
    assert node.controller.tasks.data.weight.tolist() == [3.0, 1.0]
    res = node.set_parameters([Parameter("task_weights", value=[3.0, 1.0, 1.0])])
    assert not res[0].successful and "one value per task" in res[0].reason
    res = node.set_parameters([Parameter("task_priorities", value=[1, 0])])
    assert not res[0].successful and "fixed while configured" in res[0].reason


def test_task_markers_show_goals_and_positions(arm_node):
    node = arm_node
    ctl = node.controller
    js = _grasp_state()
    node._on_joint_state(js)
    ctl.set_task_goal("hand", position=[0.4, 0.1, 0.5])
    node._on_joint_state(js)
    published = []
    node._pub_task_markers.publish = published.append
    node._publish_task_markers()
    goal, at = published[0].markers
    assert (goal.ns, at.ns) == ("task_goals", "task_positions") and goal.text == "hand"
    assert [goal.pose.position.x, goal.pose.position.y, goal.pose.position.z] == [0.4, 0.1, 0.5]
    p_hand = ctl.model.frame_placement(ctl._q, "hand")[:3, 3]
    assert np.allclose([at.pose.position.x, at.pose.position.y, at.pose.position.z], p_hand)
    res = node.set_parameters([Parameter("task_active", value=[False, True])])
    assert res[0].successful, res[0].reason
    node._publish_task_markers()
    from visualization_msgs.msg import Marker

    assert published[1].markers[0].action == Marker.DELETE


def _trajectory(frame: str, times, positions, quats, velocities=None, names=()):
    from builtin_interfaces.msg import Duration
    from geometry_msgs.msg import Transform, Twist
    from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

    m = MultiDOFJointTrajectory()
    m.header.frame_id = frame
    m.joint_names = list(names)
    for k, (t, p, o) in enumerate(zip(times, positions, quats, strict=True)):
        pt = MultiDOFJointTrajectoryPoint()
        tr = Transform()
        tr.translation.x, tr.translation.y, tr.translation.z = map(float, p)
        tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w = map(float, o)
        pt.transforms = [tr]
        if velocities is not None and velocities[k] is not None:
            tw = Twist()
            tw.linear.x, tw.linear.y, tw.linear.z = map(float, velocities[k])
            pt.velocities = [tw]
        pt.time_from_start = Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))
        m.points.append(pt)
    return m


def test_goal_trajectories_reach_the_task_and_bad_ones_are_counted(arm_node):
    """``~/tasks/<name>/trajectory`` (trajectory_msgs/MultiDOFJointTrajectory): knots with
    velocities become Hermite segments starting at the next tick; a trajectory in another
    frame, for another joint, with velocities on some points only, or with times that do not
    increase is a counted rejection and leaves the goal alone."""
    node = arm_node
    ctl = node.controller
    node._on_joint_state(_grasp_state())  # the first control tick holds the goals
    p0 = ctl.tasks.goal("hand")[0]
    on_traj = node._task_trajectory_callback(ctl.tasks.specs[0])
    ident = (0.0, 0.0, 0.0, 1.0)
    good = _trajectory("world", [0.5, 1.0], [p0 + [0, 0, 0.02], p0 + [0, 0.03, 0.02]],
                       [ident, ident], velocities=[(0, 0.05, 0), (0, 0, 0)], names=["hand"])
    on_traj(good)
    d = ctl.tasks.data
    assert d.trajectory_count[0] == 3 and d.trajectory_hermite[0] and d.trajectory_lead[0]
    assert np.isnan(d.trajectory_start[0])  # a zero stamp: from the next tick
    assert np.allclose(d.trajectory_position[0, 2], p0 + [0, 0.03, 0.02])
    assert np.allclose(d.trajectory_velocity[0, 1, :3], [0, 0.05, 0])
    rejected = [
        _trajectory("base_link", [0.5], [p0], [ident]),
        _trajectory("world", [0.5], [p0], [ident], names=["wrist"]),
        _trajectory("world", [0.5, 1.0], [p0, p0], [ident, ident], velocities=[(0, 0, 0), None]),
        _trajectory("world", [1.0, 0.5], [p0, p0], [ident, ident]),
        _trajectory("world", [], [], []),
    ]
    for msg in rejected:
        on_traj(msg)
    assert node._rejected["task_goals"] == {"frame": 1, "bad_value": 1, "size": 2,
                                            "invalid": 1}
    assert d.trajectory_count[0] == 3  # the good one still runs
    # a single knot at 0: the next tick's goal is that knot, and the trajectory has ended
    on_traj(_trajectory("", [0.0], [p0 + [0.01, 0.0, 0.0]], [ident]))
    node._on_joint_state(_grasp_state())
    assert np.allclose(ctl.tasks.goal("hand")[0], p0 + [0.01, 0.0, 0.0])
    assert d.trajectory_count[0] == 0


def test_a_goal_trajectory_published_over_dds_reaches_the_task(arm_node):
    from rclpy.executors import SingleThreadedExecutor
    from trajectory_msgs.msg import MultiDOFJointTrajectory

    node = arm_node
    pub_node = rclpy.create_node("task_trajectory_publisher", context=node.context)
    pub = pub_node.create_publisher(MultiDOFJointTrajectory,
                                    "/wbc_controller/tasks/hand/trajectory", 10)
    ex = SingleThreadedExecutor(context=node.context)
    ex.add_node(node)
    ex.add_node(pub_node)
    d = node.controller.tasks.data
    try:
        import time

        msg = _trajectory("world", [0.5, 1.5], [(0.3, -0.2, 0.6), (0.3, -0.1, 0.6)],
                          [(0.0, 0.0, 0.0, 1.0)] * 2)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and d.trajectory_count[0] == 0:
            pub.publish(msg)
            ex.spin_once(timeout_sec=0.05)
        assert d.trajectory_count[0] == 3 and not d.trajectory_hermite[0]
        assert np.allclose(d.trajectory_position[0, 1:3], [(0.3, -0.2, 0.6), (0.3, -0.1, 0.6)])
        assert np.allclose(d.trajectory_time[0, :3], [0.0, 0.5, 1.5])
    finally:
        ex.shutdown()
        pub_node.destroy_node()
