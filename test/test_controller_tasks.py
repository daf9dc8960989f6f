"""Task-space control through the WholeBodyController: configuration, the tick, goals, and the
closed loop in MuJoCo with exact state and with realistic sensing and actuation."""

from __future__ import annotations

import numpy as np
import pytest

from wbc_dynamics.controller import MODE_CONTROL, ControllerConfig, WholeBodyController
from wbc_dynamics.robots import robot_info
from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config
from wbc_dynamics.sim.imperfections import Imperfections
from wbc_dynamics.tasks import balance_tasks

#: the bundled quadruped balancing its centre of mass and trunk, the joints at lower priority
QUADRUPED_TASKS = balance_tasks("base_link")


def _arm(**tasks):
    info = robot_info("arm")
    cfg = ControllerConfig(robot="arm", kp=[100.0], kd=[20.0], **tasks)
    return WholeBodyController(cfg), info


def test_arm_hand_task_drives_the_accelerations_without_a_joint_reference():
    ctl, info = _arm(task_names=["hand", "posture"], task_kinds=["frame", "posture"],
                     task_links=["hand", ""], task_modes=["position", ""],
                     task_kp=[64.0], task_kd=[16.0], task_priorities=[0, 1])
    q = np.array(info["grasp_q"])
    ctl.set_joint_state(q, np.zeros(11), 0.0)
    out = ctl.update(0.0)  # no joint reference: the tasks hold where the robot is
    assert out.mode == MODE_CONTROL and np.all(np.isfinite(out.tau))
    assert np.abs(out.qdd_cmd).max() < 1e-9  # at rest on its goal: nothing to do
    p0 = ctl.tasks.goal("hand")[0]
    ctl.set_task_goal("hand", position=p0 + [0.0, 0.0, 0.01])
    out = ctl.update(0.001)
    J = ctl.model.jacobian(q, "hand")[:3]
    # the hand accelerates up at kp * 1 cm (J_dot v = 0 at rest); the posture task takes the
    # remaining joints
    assert np.allclose(J @ out.qdd_cmd, [0.0, 0.0, 0.64], atol=1e-9)
    # the torques are the inverse dynamics of those accelerations (method none: RNEA)
    tau = ctl.model.rnea(q, np.zeros(11), out.qdd_cmd)
    assert np.allclose(out.tau, tau, atol=1e-9)


def test_a_goal_set_before_the_first_tick_is_kept_the_others_are_held():
    ctl, info = _arm(task_names=["hand", "wrist"], task_kinds=["frame", "frame"],
                     task_links=["hand", "link_6"], task_modes=["position", "orientation"])
    q = np.array(info["grasp_q"])
    ctl.set_joint_state(q, np.zeros(11), 0.0)
    ctl.set_task_goal("hand", position=[0.4, 0.1, 0.5])
    ctl.update(0.0)
    assert np.allclose(ctl.tasks.goal("hand")[0], [0.4, 0.1, 0.5])
    R6 = ctl.model.frame_placement(q, "link_6")[:3, :3]
    assert np.allclose(ctl.tasks.goal("wrist")[1], R6)
    ctl.reset()  # forgets goals: the next first tick holds all again
    ctl.set_joint_state(q, np.zeros(11), 1.0)
    ctl.update(1.0)
    p_hand = ctl.model.frame_placement(q, "hand")[:3, 3]
    assert np.allclose(ctl.tasks.goal("hand")[0], p_hand)


def test_bad_task_configurations_name_the_parameter():
    with pytest.raises(ValueError, match=r"task_kinds: expected one entry per task_names"):
        _arm(task_names=["a", "b"], task_kinds=["posture"])
    with pytest.raises(ValueError, match=r"task_points: expected 3 numbers per task"):
        _arm(task_names=["a"], task_kinds=["frame"], task_links=["hand"], task_points=[0.0])
    with pytest.raises(ValueError, match=r"a com task needs a floating base"):
        _arm(task_names=["c"], task_kinds=["com"])
    with pytest.raises(ValueError, match=r"unknown link 'nope'"):
        _arm(task_names=["a"], task_kinds=["frame"], task_links=["nope"])
    ctl, _ = _arm(task_names=["a"], task_kinds=["posture"])
    with pytest.raises(ValueError, match="the posture task follows the joint reference"):
        ctl.set_task_goal("a", position=[0, 0, 0])
    plain, _ = _arm()
    with pytest.raises(ValueError, match="no tasks configured"):
        plain.set_task_goal("a", position=[0, 0, 0])


def _quadruped_loop(level: float, reference: str = "stand", duration: float = 3.0):
    imp = Imperfections.realistic(level) if level else Imperfections()
    cfg = shipped_loop_config("quadruped", reference, duration, imperfections=imp,
                              controller_options=QUADRUPED_TASKS)
    return ClosedLoop(cfg)


def test_quadruped_moves_its_com_to_a_goal_with_exact_state():
    loop = _quadruped_loop(0.0)
    ctl = loop.ctl.ctl
    start = ctl.tasks.goal("com")[0]
    goal = start + np.array([0.01, 0.01, -0.005])
    ctl.set_task_goal("com", position=goal)
    result = loop.run()
    assert not result.failed
    c = ctl.model.center_of_mass(ctl._q)[0]  # the controller's (exact) state
    assert np.abs(c - goal).max() < 1e-3, c - goal
    assert np.abs(ctl.tasks.error("trunk")[3:]).max() < 5e-3


def test_quadruped_com_follows_a_goal_trajectory():
    """A CoM trajectory through three knots (cubic Hermite: the goal's velocity and
    acceleration are its feed-forward), MuJoCo plant, exact state: the CoM stays on it."""
    loop = _quadruped_loop(0.0, duration=2.0)
    ctl = loop.ctl.ctl
    start = ctl.model.center_of_mass(loop.q_start)[0]  # the first tick holds the goal there
    P = start + np.array([[0.0, 0.015, 0.0], [0.012, 0.015, -0.006], [0.0, 0.0, 0.0]])
    V = np.array([[0.02, 0.0, -0.01], [-0.02, -0.02, 0.01], [0.0, 0.0, 0.0]])
    ctl.set_task_trajectory("com", [0.5, 1.0, 1.5], positions=P, linear_velocities=V)
    errors, goals = [], []

    def record(t):  # before each tick: the last tick's state against its goal
        if ctl.ticks == 0:
            return
        c = ctl.model.center_of_mass(ctl._q)[0]
        goal = ctl.tasks.goal("com")[0]
        goals.append(goal)
        errors.append(np.abs(c - goal).max())

    loop.ctl.goals = record
    result = loop.run()
    assert not result.failed
    goals = np.array(goals)
    assert np.abs(goals - start).max() > 0.012  # it moved along the knots
    assert np.abs(goals[-1] - P[-1]).max() < 1e-15  # and ended on the last one
    assert max(errors) < 5e-4, max(errors)  # 0.2 mm measured
    assert ctl.tasks.data.trajectory_count[0] == 0


@pytest.mark.parametrize("level", [1.0, 2.0])
def test_quadruped_task_balance_stays_up_under_realistic_sensing(level):
    """Encoder and base-state noise, 1 ms latency each way, +-10 % mass, a 2 ms torque lag and
    80 % torque limits (scaled by ``level``): the task-space stance stays up, its base above
    95 % of its start, the CoM within 1.5 cm per level of where it was held (world frame: the
    contact state filter anchors the stance feet where the noisy base estimate put them at
    touchdown, an offset of about the 5 mm per level base-position noise)."""
    loop = _quadruped_loop(level)
    z0 = loop.q_start[2]
    result = loop.run()
    assert not result.failed
    assert result.base_pos[:, 2].min() > 0.95 * z0
    assert np.abs(loop.ctl.ctl.tasks.error("com")[:3]).max() < 0.015 * level


def test_the_task_layer_allocates_nothing_per_tick():
    from numba import njit
    from numba.core.runtime import _nrt_python, rtsys

    from wbc_dynamics.tasks import task_layer_kernel

    @njit
    def repeat(n, d, q, v, model):
        s = 0
        for _ in range(n):
            s += task_layer_kernel(d, q, v, model)
        return s

    loop = _quadruped_loop(0.0, duration=0.01)
    ctl = loop.ctl.ctl
    layer = ctl.tasks
    args = (layer._record, ctl._q, ctl._v, *layer._args)
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        assert repeat(1, *args) == 0
        counts = []
        for n in (1, 200):
            a0 = rtsys.get_allocation_stats().alloc
            repeat(n, *args)
            counts.append(rtsys.get_allocation_stats().alloc - a0)
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()
    assert counts[0] == counts[1], counts  # what unboxing costs, nothing per tick


def test_a_new_contact_model_keeps_the_goals_and_follows_the_new_filter():
    cfg = ControllerConfig(robot="quadruped", floating_base=True, method="lcp_noslip",
                           contact_state_filter=True, kp=[100.0], kd=[20.0],
                           **QUADRUPED_TASKS)
    ctl = WholeBodyController(cfg)
    ctl.set_task_goal("com", position=[0.01, 0.02, 0.15])
    ctl.tasks.set_gains("trunk", kp=49.0)
    assert ctl.tasks.data.link_active is ctl.contact_state.data.stance
    ctl.set_parameters({"friction": 0.5})  # rebuilds the contact model and its filter
    assert np.allclose(ctl.tasks.goal("com")[0], [0.01, 0.02, 0.15])
    assert ctl.tasks.data.kp[ctl.tasks.task_names.index("trunk")] == 49.0
    assert ctl.tasks.data.link_active is ctl.contact_state.data.stance
    assert ctl.tasks.contact_links == ctl.contact_state.links


def _reach(robot, hand, imperfections, after, push=None):
    """The shipped ``reach`` loop of ``robot`` for 4 s (optionally pushed: ``cfg.push``); asserts
    that it did not fail. Returns (loop, result, errors): errors (n, 2) the hand's and the CoM's
    position error norms [m] at the ticks after ``after`` [s]."""
    cfg = shipped_loop_config(robot, "reach", 4.0, imperfections=imperfections)
    cfg.reference_options = {"hand": hand}
    if push is not None:
        cfg.push = push
    loop = ClosedLoop(cfg)
    ctl = loop.ctl.ctl
    errors = []
    goals = loop.ctl.goals

    def record(t):
        goals(t)
        if ctl.ticks > 0 and t > after:
            errors.append((np.linalg.norm(ctl.tasks.error("hand")[:3]),
                           np.linalg.norm(ctl.tasks.error("com")[:3])))

    loop.ctl.goals = record
    result = loop.run()
    assert not result.failed, result.failure
    return loop, result, np.array(errors)


@pytest.mark.parametrize("robot,hand,level", [
    ("g1", "left_rubber_hand", 0.0), ("g1", "left_rubber_hand", 1.0),
    ("talos", "gripper_left_base_link", 1.0)])
def test_humanoid_balances_while_its_hand_circles(robot, hand, level):
    """ClosedLoop reference ``reach``: CoM and trunk orientation at priority 0, the hand's pose
    at 1 (its position circling 5 cm at 0.5 Hz), the posture at 2. Exact state: the hand
    follows the circle to 1 mm, the CoM stays put to 1 mm. Realistic sensing and actuation
    (1x): stays up, the hand within 2 cm and the CoM within 3 cm on average."""
    imp = Imperfections.realistic(level) if level else Imperfections()
    _, _, e = _reach(robot, hand, imp, after=1.5)
    if level == 0.0:
        assert e[:, 0].max() < 1e-3 and e[:, 1].max() < 1e-3, e.max(axis=0)
    else:
        assert e[:, 0].mean() < 0.02 and e[:, 1].mean() < 0.03, e.mean(axis=0)


@pytest.mark.parametrize("robot,hand,side", [
    ("g1", "left_rubber_hand", 1.0), ("talos", "gripper_left_base_link", -1.0)])
def test_humanoid_holds_its_hand_and_com_through_a_sideways_push(robot, hand, side):
    """The reaching humanoid under realistic sensing and actuation (1x) pushed sideways at its
    base for 0.1 s with 30 % of its weight (~0.3 m/s): the CoM command's centre of pressure is
    held on the feet and a sole that rolls onto its edge is brought back flat, so it stays up
    and its hand and CoM return to their goals."""
    loop, result, e = _reach(robot, hand, Imperfections.realistic(1.0), after=3.0,
                             push=(1.5, 0.1, [0.0, 0.3 * side, 0.0]))
    assert result.base_pos[:, 2].min() > 0.95 * loop.q_start[2]
    assert e[:, 0].mean() < 0.02 and e[:, 1].mean() < 0.03, e.mean(axis=0)


def test_task_gains_and_weights_are_runtime_parameters():
    ctl, info = _arm(task_names=["hand", "posture"], task_kinds=["frame", "posture"],
                     task_links=["hand", ""], task_modes=["position", ""],
                     task_priorities=[0, 1])
    ctl.set_parameters({"task_kp": [49.0, 1.0], "task_weights": [2.0]})
    assert ctl.tasks.data.kp.tolist() == [49.0, 1.0]
    assert ctl.tasks.data.weight.tolist() == [2.0, 2.0]
    assert ctl.config.task_kp == [49.0, 1.0]
    before = ctl.tasks.data.kd.copy()
    with pytest.raises(ValueError, match=r"task_kd: expected one value per task \(2"):
        ctl.set_parameters({"task_kd": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"task_weights: task 'posture': expected a finite "
                                         r"positive value"):
        ctl.set_parameters({"task_weights": [1.0, 0.0]})
    assert np.array_equal(ctl.tasks.data.kd, before)  # nothing applied
    plain, _ = _arm()
    with pytest.raises(ValueError, match="task_kp: no tasks configured"):
        plain.set_parameters({"task_kp": [1.0]})


def test_task_activation_is_a_runtime_parameter_and_a_configuration():
    ctl, _ = _arm(task_names=["hand", "posture"], task_kinds=["frame", "posture"],
                  task_links=["hand", ""], task_priorities=[0, 1], task_active=[False, True])
    assert ctl.tasks.data.active.tolist() == [False, True]
    ctl.set_parameters({"task_active": [True]})
    assert ctl.tasks.data.active.tolist() == [True, True]
    assert ctl.config.task_active == [True, True]
    with pytest.raises(ValueError, match="task_active: expected booleans"):
        ctl.set_parameters({"task_active": [1.0, 0.0]})
    with pytest.raises(ValueError, match=r"task_active: expected one value per task"):
        ctl.set_parameters({"task_active": [True, False, True]})
