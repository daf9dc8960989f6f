"""The task layer (wbc_dynamics.tasks) and its prioritized least squares, against independent
solutions: numpy's SVD null-space projections, the model's own Jacobians and finite differences,
and the analytic error dynamics of a PD task law integrated along the commanded motion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wbc_dynamics.kernels.prioritized import (
    prioritized_level,
    prioritized_reset,
    prioritized_work,
)
from wbc_dynamics.robot_config import load_robot_setup, robot_setup_state
from wbc_dynamics.tasks import TaskLayer, parse_tasks


@pytest.fixture(scope="module")
def panda():
    model, joints, q = robot_setup_state(load_robot_setup("panda"))
    return model, q


@pytest.fixture(scope="module")
def go2():
    model, joints, q = robot_setup_state(load_robot_setup("go2"))
    return model, q


GO2_FEET = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]


def _reference_hierarchy(levels, n, tol=1e-9):
    """Prioritized least squares by numpy's SVD: x_k = x_{k-1} + N (A_k N)^+ (b_k - A_k x),
    N an orthonormal null-space basis of the stacked higher levels (an independent method:
    projections from full SVDs, no Gram-Schmidt)."""
    x = np.zeros(n)
    N = np.eye(n)
    for A, b in levels:
        if N.shape[1] == 0:
            break
        B = A @ N
        U, s, Vt = np.linalg.svd(B, full_matrices=True)
        largest = max(np.linalg.norm(A, axis=1).max(), 1e-300)
        r = int(np.sum(s > tol * largest))
        y = Vt[:r].T @ ((U[:, :r].T @ (b - A @ x)) / s[:r])
        x = x + N @ y
        N = N @ Vt[r:].T
    return x


def _solve(levels, n, tolerance=1e-9, damping=0.0):
    m = max(A.shape[0] for A, _ in levels)
    w = prioritized_work(n, m)
    prioritized_reset(w)
    ranks = []
    for A, b in levels:
        k = A.shape[0]
        w.rows[:k] = A
        w.rhs[:k] = b
        ranks.append(prioritized_level(k, w, tolerance, damping))
    return w.x.copy(), ranks, w


def _random_levels(rng, n, shapes):
    levels = []
    for m, rank in shapes:
        A = rng.normal(size=(m, rank)) @ rng.normal(size=(rank, n))
        levels.append((A, rng.normal(size=m)))
    return levels


@pytest.mark.parametrize("seed", range(40))
def test_prioritized_least_squares_matches_svd_projections(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 30))
    shapes = []
    for _ in range(int(rng.integers(1, 5))):
        m = int(rng.integers(1, n))
        shapes.append((m, int(rng.integers(1, m + 1))))  # rank-deficient levels too
    levels = _random_levels(rng, n, shapes)
    x, ranks, w = _solve(levels, n)
    ref = _reference_hierarchy(levels, n)
    assert np.allclose(x, ref, rtol=1e-8, atol=1e-8 * (1 + np.abs(ref).max()))
    # the basis is orthonormal to rounding and its size is the stacked rank
    k = int(w.rank[0])
    U = w.basis[:k]
    assert np.abs(U @ U.T - np.eye(k)).max() < 1e-12
    stacked = np.vstack([A for A, _ in levels])
    assert k == min(np.linalg.matrix_rank(stacked), n) == sum(ranks)


@pytest.mark.parametrize("seed", range(20))
def test_a_lower_level_never_disturbs_a_higher_one(seed):
    rng = np.random.default_rng(100 + seed)
    n = 12
    high = _random_levels(rng, n, [(4, 4), (3, 3)])
    low = _random_levels(rng, n, [(8, 8)])  # conflicts: more rows than are left
    x_high, _, _ = _solve(high, n)
    x_all, _, _ = _solve(high + low, n)
    for A, b in high:
        assert np.abs(A @ x_all - A @ x_high).max() < 1e-10 * (1 + np.abs(b).max())


def test_nearly_dependent_rows_are_dropped_not_inverted():
    rng = np.random.default_rng(7)
    n = 10
    A1 = rng.normal(size=(3, n))
    # the second level repeats the first's rows up to 1e-13: no room left for it
    A2 = A1 + 1e-13 * rng.normal(size=(3, n))
    b2 = rng.normal(size=3) * 100.0
    x1, _, _ = _solve([(A1, np.ones(3))], n)
    x, ranks, _ = _solve([(A1, np.ones(3)), (A2, b2)], n)
    assert ranks == [3, 0]
    assert np.allclose(x, x1, atol=1e-12)


def test_weights_within_a_level_are_weighted_least_squares():
    rng = np.random.default_rng(3)
    n = 5
    A1, A2 = rng.normal(size=(3, n)), rng.normal(size=(4, n))
    b1, b2 = rng.normal(size=3), rng.normal(size=4)
    w1, w2 = 4.0, 0.25
    A = np.vstack([math.sqrt(w1) * A1, math.sqrt(w2) * A2])
    b = np.r_[math.sqrt(w1) * b1, math.sqrt(w2) * b2]
    x, _, _ = _solve([(A, b)], n)
    ref = np.linalg.lstsq(A, b, rcond=None)[0]
    assert np.allclose(x, ref, rtol=1e-10, atol=1e-12)


def test_damping_bounds_a_near_singular_task():
    n = 3
    A = np.array([[1.0, 0.0, 0.0], [1.0, 1e-8, 0.0]])
    b = np.array([0.0, 1.0])
    exact, _, _ = _solve([(A, b)], n)
    damped, _, _ = _solve([(A, b)], n, damping=1e-3)
    assert np.abs(exact).max() > 1e7  # the exact solution explodes
    assert np.abs(damped).max() < 1e3
    # damped least squares: (A^T A + damping^2 I) x = A^T b on the row space
    ref = np.linalg.solve(A @ A.T + 1e-6 * np.eye(2), b)
    assert np.allclose(A @ damped, A @ A.T @ ref, atol=1e-9)


def test_non_finite_rows_fail_without_touching_the_solution():
    n = 4
    x, ranks, w = _solve([(np.eye(2, n), np.array([1.0, 2.0]))], n)
    w.rows[:1] = np.nan
    st = prioritized_level(1, w, 1e-9, 0.0)
    assert st == -1
    assert np.array_equal(w.x, x)


# ------------------------------------------------------------------ the task layer


def _rk4_closed_loop(layer, model, q, v, dt, steps, record):
    """Integrate q, v under a = layer.solve(q, v) (RK4 on the configuration manifold with the
    model's integrate), calling record(t, q, v) each step."""
    def acc(q_, v_):
        return layer.solve(q_, v_, np.zeros(model.nv)).copy()

    for k in range(steps):
        record(k * dt, q, v)
        a1 = acc(q, v)
        q2, v2 = model.integrate(q, v, 0.5 * dt), v + 0.5 * dt * a1
        a2 = acc(q2, v2)
        q3, v3 = model.integrate(q, v2, 0.5 * dt), v + 0.5 * dt * a2
        a3 = acc(q3, v3)
        q4, v4 = model.integrate(q, v3, dt), v + dt * a3
        a4 = acc(q4, v4)
        vbar = (v + 2 * v2 + 2 * v3 + v4) / 6.0
        q = model.integrate(q, vbar, dt)
        v = v + dt * (a1 + 2 * a2 + 2 * a3 + a4) / 6.0
    return q, v


def _hand_layer(model, q0, mode, kp=64.0, kd=16.0):
    """panda's hand frame task (``mode``, gains kp [1/s^2], kd [1/s]: critically damped at
    8 rad/s by default) over the posture, holding ``q0``."""
    layer = TaskLayer(model, [
        dict(name="hand", kind="frame", link="panda_hand", mode=mode, kp=kp, kd=kd),
        dict(name="posture", kind="posture", priority=1)])
    layer.hold(q0)
    return layer


def test_frame_position_task_follows_the_pd_error_dynamics(panda):
    model, q0 = panda
    kp, kd = 64.0, 16.0  # critically damped, natural frequency 8 rad/s
    layer = _hand_layer(model, q0, "position", kp, kd)
    p_goal = layer.goal("hand")[0] + np.array([0.05, -0.03, 0.04])
    layer.set_goal("hand", position=p_goal)
    e0 = model.frame_placement(q0, "panda_hand")[:3, 3] - p_goal
    worst = [0.0]

    def record(t, q, v):
        e = model.frame_placement(q, "panda_hand")[:3, 3] - p_goal
        analytic = e0 * (1.0 + 8.0 * t) * math.exp(-8.0 * t)  # e(0) = e0, e'(0) = 0
        worst[0] = max(worst[0], float(np.abs(e - analytic).max()))

    _rk4_closed_loop(layer, model, q0.copy(), np.zeros(model.nv), 2e-3, 400, record)
    assert worst[0] < 1e-7 * np.abs(e0).max() * 100  # RK4 at 2 ms: ~1e-9 m
    # the layer's own error (its last evaluation: RK4's final stage, at t = 0.8 s)
    assert np.allclose(layer.error("hand")[:3], e0 * 7.4 * math.exp(-6.4), atol=1e-6)


def test_frame_orientation_task_converges_critically_damped(panda):
    model, q0 = panda
    layer = _hand_layer(model, q0, "pose")
    R0 = layer.goal("hand")[1]
    th = 0.2
    Rz = np.array([[math.cos(th), -math.sin(th), 0], [math.sin(th), math.cos(th), 0], [0, 0, 1]])
    layer.set_goal("hand", orientation=Rz @ R0)
    angles = []

    def record(t, q, v):
        R = model.frame_placement(q, "panda_hand")[:3, :3]
        c = (np.trace(R @ (Rz @ R0).T) - 1.0) / 2.0
        angles.append((t, math.acos(min(1.0, max(-1.0, c)))))

    _rk4_closed_loop(layer, model, q0.copy(), np.zeros(model.nv), 2e-3, 400, record)
    # a rotation about a fixed axis: the angle obeys the same scalar PD dynamics exactly
    for t, ang in angles[::20]:
        assert abs(ang - th * (1 + 8 * t) * math.exp(-8 * t)) < 1e-6


def test_floating_base_contacts_hold_and_the_com_task_is_exact(go2):
    model, q = go2
    layer = TaskLayer(model, [
        dict(name="com", kind="com", kp=100.0, kd=20.0),
        dict(name="base", kind="frame", link=model.root_link, mode="orientation"),
        dict(name="posture", kind="posture", priority=1)],
        contacts=[(f, [[0.0, 0.0, 0.0]]) for f in GO2_FEET], cop_margin=-1.0)
    layer.hold(q)
    rng = np.random.default_rng(5)
    for _ in range(10):
        v = rng.normal(0.0, 0.3, model.nv)
        goal = layer.goal("com")[0] + rng.normal(0.0, 0.02, 3)
        layer.set_goal("com", position=goal, linear_velocity=rng.normal(0, 0.05, 3))
        a = layer.solve(q, v, rng.normal(0.0, 1.0, model.nv)).copy()
        for f in GO2_FEET:  # the stance feet do not accelerate
            J = model.jacobian(q, f)[:3]
            assert np.abs(J @ a + model.jacobian_dot_times_v(q, v, f)[:3]).max() < 1e-10
        c, cd, Jc = model.center_of_mass(q, v)
        eps = 1e-7
        cd2 = model.center_of_mass(model.integrate(q, v, eps), v)[1]
        cd1 = model.center_of_mass(model.integrate(q, v, -eps), v)[1]
        bias = (cd2 - cd1) / (2 * eps)  # J_com_dot v by central differences
        _, _, vel, _ = layer.goal("com")
        cmd = 20.0 * (vel[:3] - cd) - 100.0 * (c - goal)
        assert np.abs(Jc @ a + bias - cmd).max() < 1e-6
        assert np.allclose(layer.error("com")[:3], c - goal, atol=1e-12)
        assert list(layer.data.level_rank) == [12, 6, 0]


@pytest.mark.parametrize("robot", ["g1", "talos"])
def test_com_rows_match_the_mass_matrix_reading_on_humanoids(robot):
    """The CoM task's O(bodies) Jacobian and bias (subtree sums over the kinematics pass) against
    an independent reading: the base rows of the CRBA mass matrix
    (:meth:`RobotModel.center_of_mass`) and central differences of ``J_com v``, at random
    configurations and velocities far from the standing pose."""
    model, joints, q0 = robot_setup_state(load_robot_setup(robot))
    layer = TaskLayer(model, [dict(name="com", kind="com", kp=0.0, kd=0.0),
                              dict(name="posture", kind="posture", priority=1)], contacts=[])
    rng = np.random.default_rng(11)
    for _ in range(8):
        q = model.integrate(q0, rng.normal(0.0, 0.4, model.nv), 1.0)
        v = rng.normal(0.0, 1.0, model.nv)
        layer.set_goal("com", position=[0.1, -0.2, 0.3])
        layer.solve(q, v, np.zeros(model.nv))
        c, cd, Jc = model.center_of_mass(q, v)
        J = layer.data.jac[:3]
        assert np.abs(J - Jc).max() < 1e-12 * max(1.0, np.abs(Jc).max())
        eps = 1e-6
        cd2 = model.center_of_mass(model.integrate(q, v, eps), v)[1]
        cd1 = model.center_of_mass(model.integrate(q, v, -eps), v)[1]
        bias = (cd2 - cd1) / (2 * eps)
        assert np.abs(-layer.data.bias[:3] - bias).max() < 1e-6 * max(1.0, np.abs(bias).max())
        assert np.allclose(layer.error("com")[:3], c - [0.1, -0.2, 0.3], atol=1e-12)
        assert np.allclose(layer.data.velocity_error[0, :3], cd, atol=1e-12)


def test_the_com_command_keeps_its_centre_of_pressure_on_the_support(go2):
    """The CoM task's horizontal command is limited so that the centre of pressure it implies
    (linear inverted pendulum) stays in the stance feet's convex hull shrunk by cop_margin
    (checked with scipy's hull); inside it the command is the PD law's; on a diagonal pair of
    feet (no area) it is not limited."""
    from scipy.spatial import ConvexHull

    model, q = go2
    layer = TaskLayer(model, [
        dict(name="com", kind="com", kp=100.0, kd=20.0),
        dict(name="base", kind="frame", link=model.root_link, mode="orientation"),
        dict(name="posture", kind="posture", priority=1)],
        contacts=[(f, [[0.0, 0.0, 0.0]]) for f in GO2_FEET], cop_margin=0.02)
    layer.hold(q)
    d = layer.data
    feet = np.array([model.frame_placement(q, f)[:3, 3] for f in GO2_FEET])
    hull = ConvexHull(feet[:, :2])
    c0 = model.center_of_mass(q)[0]
    height = c0[2] - feet[:, 2].mean()
    zero = np.zeros(model.nv)
    for offset in ([0.001, -0.002, 0.0], [0.0, 0.5, 0.0], [-0.4, 0.3, 0.05]):
        layer.set_goal("com", position=c0 + offset)
        a = layer.solve(q, zero, zero).copy()
        pd = -100.0 * (c0 - (c0 + offset))
        cmd = d.com_command.copy()
        cop = c0[:2] - cmd[:2] * height / (9.81 + cmd[2])
        assert np.allclose(d.com_cop, cop, atol=1e-12)
        # inside the hull by at least the margin's projection on its edges
        inside = hull.equations[:, :2] @ cop + hull.equations[:, 2]
        assert inside.max() < -0.01, inside
        if offset[1] == -0.002:
            assert not d.com_cop_clamped[0] and np.allclose(cmd, pd, atol=1e-12)
        else:
            assert d.com_cop_clamped[0] and cmd[2] == pytest.approx(pd[2], abs=1e-12)
            assert cmd[:2] @ pd[:2] > 0 and np.linalg.norm(cmd[:2]) < np.linalg.norm(pd[:2])
        Jc = model.center_of_mass(q)[2]
        assert np.abs(Jc @ a - cmd).max() < 1e-9  # at rest: J_dot v = 0
    layer.set_contact_active("FR_foot", False)
    layer.set_contact_active("RL_foot", False)  # a trot's diagonal: a line, no limit
    layer.set_goal("com", position=c0 + [0.0, 0.5, 0.0])
    layer.solve(q, zero, zero)
    assert not d.com_cop_clamped[0] and np.allclose(d.com_command[:2], [0.0, 50.0])


def test_contact_switching_off_frees_the_swing_foot(go2):
    model, q = go2
    layer = TaskLayer(model, [
        dict(name="foot", kind="frame", link="FL_foot", mode="position", kp=100.0, kd=20.0),
        dict(name="posture", kind="posture", priority=1)],
        contacts=[(f, [[0.0, 0.0, 0.0]]) for f in GO2_FEET])
    layer.hold(q)
    layer.set_goal("foot", position=layer.goal("foot")[0] + [0.0, 0.0, 0.05])
    v = np.zeros(model.nv)
    a = layer.solve(q, v, np.zeros(model.nv)).copy()
    J = model.jacobian(q, "FL_foot")[:3]
    assert abs((J @ a)[2]) < 1e-10  # standing: the contact wins over the task
    layer.set_contact_active("FL_foot", False)
    a = layer.solve(q, v, np.zeros(model.nv)).copy()
    assert np.allclose(J @ a, [0.0, 0.0, -100.0 * -0.05], atol=1e-9)
    assert list(layer.data.level_rank) == [9, 3, 6]


def test_bad_task_declarations_and_goals_name_the_field(panda, go2):
    model, q = panda
    with pytest.raises(ValueError, match=r"tasks\[0\] \(.x.\).kind"):
        parse_tasks([dict(name="x", kind="elbow")])
    with pytest.raises(ValueError, match=r"tasks\[1\] \('a'\).name: 'a' is used twice"):
        parse_tasks([dict(name="a", kind="posture"), dict(name="a", kind="posture")])
    with pytest.raises(ValueError, match=r"\('h'\).kp"):
        parse_tasks([dict(name="h", kind="frame", link="x", kp=float("nan"))])
    with pytest.raises(ValueError, match=r"\('h'\).link"):
        parse_tasks([dict(name="h", kind="frame")])
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['gain'\]"):
        parse_tasks([dict(name="h", kind="posture", gain=1)])
    with pytest.raises(ValueError, match="needs a floating base"):
        TaskLayer(model, [dict(name="c", kind="com")])
    with pytest.raises(ValueError, match="unknown link"):
        TaskLayer(model, [dict(name="h", kind="frame", link="nope")])
    layer = TaskLayer(model, [dict(name="h", kind="frame", link="panda_hand")])
    layer.hold(q)
    before = layer.goal("h")
    with pytest.raises(ValueError, match=r"h.position"):
        layer.set_goal("h", position=[0.0, float("nan"), 0.0])
    with pytest.raises(ValueError, match=r"h.orientation"):
        layer.set_goal("h", position=[1.0, 1.0, 1.0], orientation=[0.0, 0.0, 0.0, 0.0])
    for x, y in zip(before, layer.goal("h"), strict=True):  # nothing changed
        assert np.array_equal(x, y)
    with pytest.raises(ValueError, match="unknown task 'x'"):
        layer.set_goal("x", position=[0, 0, 0])
    with pytest.raises(ValueError, match="h.weight"):
        layer.set_gains("h", weight=0.0)
    v = np.zeros(model.nv)
    v[0] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        layer.solve(q, v)


def _rotvec(R):
    """log(R) as a rotation vector (independent of the layer's: scipy)."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(R).as_rotvec()


def test_goal_trajectories_sample_hermite_segments_and_slerp(panda):
    """Goal trajectories against independent interpolants: scipy's cubic Hermite spline
    (positions, with their first and second derivatives), scipy's Slerp (linear rotations),
    and central differences of the sampled rotations (angular velocity and acceleration)."""
    from scipy.interpolate import CubicHermiteSpline
    from scipy.spatial.transform import Rotation, Slerp

    model, q0 = panda
    layer = _hand_layer(model, q0, "pose")
    p0, R0 = layer.goal("hand")[:2]
    rng = np.random.default_rng(3)
    times = np.array([0.5, 1.0, 1.6])
    P = p0 + rng.normal(0.0, 0.05, (3, 3))
    R = np.array([Rotation.from_rotvec(rng.normal(0.0, 0.3, 3)).as_matrix() @ R0
                  for _ in range(3)])
    Vl = rng.normal(0.0, 0.1, (3, 3))
    Va = rng.normal(0.0, 0.3, (3, 3))
    layer.set_clock(10.0)
    layer.set_trajectory("hand", times, positions=P, orientations=R, linear_velocities=Vl,
                         angular_velocities=Va)  # starts at the clock: 10 s
    knots_t = np.concatenate([[0.0], times])
    spline = CubicHermiteSpline(knots_t, np.vstack([p0, P]), np.vstack([np.zeros(3), Vl]))
    zero = np.zeros(model.nv)

    def sample(t):
        layer.set_clock(10.0 + t)
        layer.solve(q0, zero, zero)
        return layer.goal("hand")

    for t in [0.0, 0.1, 0.5, 0.77, 1.0, 1.3, 1.59]:
        p, G, vel, acc = sample(t)
        assert np.abs(p - spline(t)).max() < 1e-12
        assert np.abs(vel[:3] - spline(t, 1)).max() < 1e-11
        assert np.abs(acc[:3] - spline(t, 2)).max() < 1e-10
        if t in (0.0, 0.5, 1.0):  # the clock's start and the knots: one-sided differences
            continue
        eps = 1e-6
        Gp, Gm = sample(t + eps)[1], sample(t - eps)[1]
        w_fd = _rotvec(Gp @ Gm.T) / (2 * eps)
        assert np.abs(vel[3:] - w_fd).max() < 1e-6
        al_fd = (sample(t + eps)[2][3:] - sample(t - eps)[2][3:]) / (2 * eps)
        assert np.abs(acc[3:] - al_fd).max() < 1e-4 * max(1.0, np.abs(acc[3:]).max())
    for tk, Rk in zip(times, R, strict=True):  # the knots themselves
        assert np.abs(sample(tk)[1] - Rk).max() < 1e-12
    p, G, vel, acc = sample(5.0)  # past the end: holds the last knot at rest, ends
    assert np.allclose(p, P[-1], atol=0) and np.allclose(G, R[-1], atol=1e-15)
    assert not vel.any() and not acc.any() and layer.data.trajectory_count[0] == 0

    # without velocities: linear segments, rotations by Slerp, from the first knot at 0
    layer.set_trajectory("hand", [0.0, 0.8], positions=P[:2], orientations=R[:2], start=20.0)
    slerp = Slerp([0.0, 0.8], Rotation.from_matrix(R[:2]))
    for t in [0.0, 0.2, 0.5, 0.79]:
        layer.set_clock(20.0 + t)
        layer.solve(q0, zero, zero)
        p, G, vel, acc = layer.goal("hand")
        assert np.abs(p - (P[0] + t / 0.8 * (P[1] - P[0]))).max() < 1e-14
        assert np.abs(vel[:3] - (P[1] - P[0]) / 0.8).max() < 1e-12
        assert np.abs(G - slerp(t).as_matrix()).max() < 1e-12
        assert np.abs(vel[3:] - _rotvec(R[1] @ R[0].T) / 0.8).max() < 1e-12
        assert not acc.any()
    # a goal replaces a running trajectory
    layer.set_goal("hand", position=p0)
    assert layer.data.trajectory_count[0] == 0


def test_goal_trajectory_errors_name_the_field(panda, go2):
    model, q0 = panda
    layer = TaskLayer(model, [
        dict(name="hand", kind="frame", link="panda_hand", mode="position"),
        dict(name="posture", kind="posture", priority=1)], trajectory_capacity=4)
    layer.hold(q0)
    p = layer.goal("hand")[0]
    cases = [
        (dict(times=[0.0, 0.0], positions=[p, p]), "hand.trajectory.times"),
        (dict(times=[-0.1, 0.2], positions=[p, p]), "hand.trajectory.times"),
        (dict(times=[0.1, 0.2, 0.3, 0.4], positions=[p] * 4), "at most 3"),
        (dict(times=[0.1, 0.2]), "hand.trajectory.positions: required"),
        (dict(times=[0.1, 0.2], positions=[p]), "hand.trajectory.positions"),
        (dict(times=[0.1, 0.2], positions=[p, [np.nan, 0, 0]]), "hand.trajectory.positions"),
        (dict(times=[0.1, 0.2], positions=[p, p], linear_velocities=[[0, 0, 0]]),
         "hand.trajectory.linear_velocities"),
        (dict(times=[0.1, 0.2], positions=[p, p], start=math.inf), "hand.trajectory.start"),
    ]
    for kwargs, text in cases:
        with pytest.raises(ValueError, match=text.replace(".", r"\.")):
            layer.set_trajectory("hand", **kwargs)
        assert layer.data.trajectory_count[0] == 0
    with pytest.raises(ValueError, match="posture"):
        layer.set_trajectory("posture", [0.1], positions=[p])
    with pytest.raises(ValueError, match="trajectory_capacity"):
        TaskLayer(model, [dict(name="hand", kind="frame", link="panda_hand")],
                  trajectory_capacity=1)


def test_a_goal_trajectory_is_tracked_exactly_with_its_feed_forward(panda):
    """Started on the trajectory, the PD law with the trajectory's velocity and acceleration
    as feed-forward keeps the error at zero (``e'' + kd e' + kp e = 0`` from rest at 0):
    RK4 closed loop on panda, the layer's clock advanced at every stage (against scipy's cubic
    Hermite spline through the same knots)."""
    model, q0 = panda
    layer = _hand_layer(model, q0, "position")
    p0 = layer.goal("hand")[0]
    times = [0.4, 0.9, 1.2]
    P = p0 + np.array([[0.03, 0.0, 0.02], [0.05, -0.04, 0.03], [0.02, -0.05, 0.0]])
    Vl = np.array([[0.1, -0.05, 0.05], [0.0, -0.1, -0.05], [0.0, 0.0, 0.0]])
    layer.set_trajectory("hand", times, positions=P, linear_velocities=Vl, start=0.0)
    from scipy.interpolate import CubicHermiteSpline

    spline = CubicHermiteSpline([0.0, *times], np.vstack([p0, P]), np.vstack([np.zeros(3), Vl]))
    dt = 2e-3
    q, v = q0.copy(), np.zeros(model.nv)
    zero = np.zeros(model.nv)

    def acc(t, q_, v_):
        layer.set_clock(t)
        return layer.solve(q_, v_, zero).copy()

    worst = 0.0
    for k in range(700):
        t = k * dt
        worst = max(worst, float(np.abs(model.frame_placement(q, "panda_hand")[:3, 3]
                                        - spline(min(t, 1.2))).max()))
        a1 = acc(t + 1e-12, q, v)
        q2, v2 = model.integrate(q, v, 0.5 * dt), v + 0.5 * dt * a1
        a2 = acc(t + 0.5 * dt, q2, v2)
        q3, v3 = model.integrate(q, v2, 0.5 * dt), v + 0.5 * dt * a2
        a3 = acc(t + 0.5 * dt, q3, v3)
        q4, v4 = model.integrate(q, v3, dt), v + dt * a3
        a4 = acc(t + dt - 1e-12, q4, v4)
        q = model.integrate(q, (v + 2 * v2 + 2 * v3 + v4) / 6.0, dt)
        v = v + dt * (a1 + 2 * a2 + 2 * a3 + a4) / 6.0
    # 5 cm of motion followed to RK4's error (~5e-11 m at 2 ms, 16x less at 1 ms); the stages
    # at a step's ends are nudged inside it because the knots, where the goal's acceleration
    # jumps, lie on step boundaries
    assert worst < 1e-9
