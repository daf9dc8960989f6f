"""Base state estimation (BaseEstimator, the controller's ``base_state: imu``): the estimate
against the simulator's ground truth in closed loop, exact and with realistic sensing; the
controller staying up on it; input validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from estimator_helpers import random_quadruped_ticks

from wbc_dynamics.controller import WholeBodyController
from wbc_dynamics.estimator import BaseEstimator, EstimatorNoise

pytest.importorskip("mujoco", reason="mujoco not installed")


def _run(robot, reference, scale, duration, **options):
    from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config
    from wbc_dynamics.sim.imperfections import Imperfections

    loop = ClosedLoop(shipped_loop_config(robot, reference, duration,
                                          Imperfections.realistic(scale),
                                          {"base_state": "imu", **options}))
    return loop.run(), loop


def test_estimate_follows_the_plant_exactly_sensed_trot():
    """Exact IMU and encoders: the bundled quadruped trots on its own estimate; measured over 5 s:
    velocity RMS 8 mm/s, height RMS 2.2 mm, horizontal drift 0.8 % of the distance."""
    res, _ = _run("quadruped", "trot", 0.0, 3.0)
    assert not res.failed, res.failure
    m = res.estimation_metrics()
    assert m["velocity_rms"] < 0.01
    assert m["height_rms"] < 3e-3
    assert m["distance"] > 0.3 and m["drift_per_distance"] < 0.03
    assert m["tilt_rms"] < 1e-6  # the IMU's orientation output is exact here


@pytest.mark.parametrize("robot,reference", [("go2", "trot"), ("g1", "com_sway")])
def test_robot_stays_up_on_its_own_estimate_under_realistic_sensing(robot, reference):
    """1x realistic sensing (MEMS IMU, encoders, latency, mass error, torque lag and limits);
    no odometry: go2 trots, g1 sways on the estimate (measured 10 s: go2 velocity RMS 0.022
    m/s, g1 0.003 m/s; roll / pitch 0.28 deg, the IMU's own orientation noise)."""
    res, loop = _run(robot, reference, 1.0, 3.0)
    assert not res.failed, res.failure
    m = res.estimation_metrics()
    assert m["velocity_rms"] < (0.03 if reference == "trot" else 0.02)
    assert m["tilt_rms"] < 0.5
    assert m["height_rms"] < 0.01
    h = res.base_pos[:, 2]
    assert np.min(h) > 0.9 * h[0]
    assert res.metrics()["pos_err"] < 0.01


def test_gyro_orientation_with_tilt_correction_keeps_roll_and_pitch():
    """imu_orientation false: the orientation is the gyro's rate integrated, corrected by the
    accelerometer's gravity direction; roll / pitch stay within a degree, yaw drifts with the
    gyro bias (0.002 rad/s drawn per axis)."""
    res, _ = _run("go2", "sway", 1.0, 3.0, imu_orientation=False)
    assert not res.failed, res.failure
    m = res.estimation_metrics()
    assert m["tilt_rms"] < 1.0
    assert m["velocity_rms"] < 0.03
    assert m["yaw_drift_per_min"] < 20.0


def test_base_state_settings_and_imu_input_are_validated():
    with pytest.raises(ValueError, match=r"base_state: 'gps' is not one of"):
        WholeBodyController({"robot": "quadruped", "floating_base": True,
                             "method": "lcp_noslip", "base_state": "gps"})
    with pytest.raises(ValueError, match="base_state: imu needs a floating base"):
        WholeBodyController({"robot": "arm", "method": "lcp_noslip", "base_state": "imu"})
    with pytest.raises(ValueError, match="base_state: imu needs a contact method"):
        WholeBodyController({"robot": "quadruped", "floating_base": True, "base_state": "imu"})
    with pytest.raises(ValueError, match="imu_gyro_noise"):
        WholeBodyController({"robot": "quadruped", "floating_base": True,
                             "method": "lcp_noslip", "base_state": "imu",
                             "imu_gyro_noise": 0.0})
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip", "base_state": "imu"})
    with pytest.raises(ValueError, match="configured as 'imu'"):
        ctl.set_base_state(np.zeros(3), [0, 0, 0, 1], np.zeros(3), np.zeros(3), 0.0)
    up = [0.0, 0.0, 9.81]
    with pytest.raises(ValueError, match="imu.angular_velocity: contains a non-finite"):
        ctl.set_imu([0.0, math.nan, 0.0], up, [0, 0, 0, 1], 1.0)
    with pytest.raises(ValueError, match="imu.linear_acceleration: expected 3"):
        ctl.set_imu(np.zeros(3), [0.0, 9.81], [0, 0, 0, 1], 1.0)
    with pytest.raises(ValueError, match="imu.orientation: quaternion norm"):
        ctl.set_imu(np.zeros(3), up, [0, 0, 0, 2.0], 1.0)
    with pytest.raises(ValueError, match="imu.orientation: required"):
        ctl.set_imu(np.zeros(3), up, None, 1.0)
    ctl.set_imu(np.zeros(3), up, [0, 0, 0, 1], 1.0)
    with pytest.raises(ValueError, match="is not after the previous sample"):
        ctl.set_imu(np.zeros(3), up, [0, 0, 0, 1], 1.0)
    # IMU stale (older than state_timeout): the safe zero command, no NaN
    ctl.set_joint_state(np.zeros(12), np.zeros(12), 2.0)
    ctl.set_reference(np.zeros(12), 2.0)
    out = ctl.update(2.0)
    assert out.mode == "safe_stale_state" and np.all(out.tau == 0.0)
    odom = WholeBodyController({"robot": "quadruped", "floating_base": True,
                                "method": "lcp_noslip"})
    with pytest.raises(ValueError, match="base_state is 'odom'"):
        odom.set_imu(np.zeros(3), up, [0, 0, 0, 1], 1.0)


def test_estimator_initializes_on_the_stance_feet_at_rest():
    """One update at rest from an exact IMU: the base height puts every foot's lowest sphere on
    the ground (to rounding), velocity zero."""
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    feet = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
    cm = ContactModel(model, contact_links=feet, features=[HalfSpace.ground()])
    est = BaseEstimator.for_contact_model(cm, noise=EstimatorNoise())
    q = np.array(robot_info("quadruped")["standing_q"], dtype=float)
    assert est.update(q[7:], np.zeros(12), np.zeros(3), np.array([0.0, 0.0, 9.81]), q[3:7],
                      np.ones(4, dtype=bool), 1e-3) == 0
    p, quat, v, w = est.base_state()
    q_est = q.copy()
    q_est[:3] = p
    k = cm.candidates(q_est, margin=0.1)
    phi = cm.data.cand_phi[:k]
    assert k == 4 and np.max(np.abs(phi)) < 1e-12
    assert np.allclose(v, 0.0) and np.allclose(quat, q[3:7])
    # a second, still update keeps it (the kinematics agree with the anchors)
    est.update(q[7:], np.zeros(12), np.zeros(3), np.array([0.0, 0.0, 9.81]), q[3:7],
               np.ones(4, dtype=bool), 1e-3)
    p2, _, v2, _ = est.base_state()
    assert np.allclose(p2, p, atol=1e-9) and np.allclose(v2, 0.0, atol=1e-9)


def test_ticks_on_the_estimate_compile_nothing():
    """Construction warms the estimator and the contact state filter: IMU ticks (standing,
    perturbed, a stale IMU) add no compiled signature."""
    from numba_helpers import compiled_signature_counts, grown_since

    from wbc_dynamics.robots import robot_info

    q = np.array(robot_info("quadruped")["standing_q"], dtype=float)
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip", "noslip_min_norm": True,
                               "kp": [3000.0], "kd": [110.0], "base_state": "imu",
                               "contact_state_filter": True, "imu_orientation": False})
    rng = np.random.default_rng(0)
    before = compiled_signature_counts()
    modes = set()
    for k in range(60):
        t = 1e-3 * (k + 1) + (1.0 if k >= 50 else 0.0)
        if k < 50:
            ctl.set_imu(rng.normal(0.0, 0.01, 3), [0.0, 0.0, 9.81] + rng.normal(0.0, 0.1, 3),
                        None, t)
        ctl.set_joint_state(q[7:] + rng.normal(0.0, 0.01, 12), rng.normal(0.0, 0.1, 12), t)
        ctl.set_reference(np.zeros(12), t, position=q[7:], velocity=np.zeros(12))
        modes.add(ctl.update(t).mode)
    assert modes == {"control", "safe_stale_state"}
    assert not grown_since(before)


def _batch_kalman_tick(e, x, P, quat, gyro, accel, stance, dt):
    """The filter's documented equations as one batch Kalman step in numpy (an independent
    implementation of the prediction and update): the kinematic quantities (``r_base``,
    ``J_lin``, ``v0``, ``roll``, ``lift``) are the kernel's own of this tick."""
    from scipy.spatial.transform import Rotation

    R = Rotation.from_quat(quat).as_matrix()
    n, L = x.shape[0], e.foot_body.shape[0]
    a = R @ accel - np.array([0.0, 0.0, e.gravity])
    x = x.copy()
    x[:3] += x[3:6] * dt + 0.5 * a * dt * dt
    x[3:6] += a * dt
    F = np.eye(n)
    F[:3, 3:6] = dt * np.eye(3)
    Q = np.zeros((n, n))
    qa = (e.accelerometer_noise * dt) ** 2
    Q[:3, :3] = 0.25 * qa * dt * dt * np.eye(3)
    Q[3:6, 3:6] = qa * np.eye(3)
    Q[:3, 3:6] = Q[3:6, :3] = 0.5 * qa * dt * np.eye(3)
    for i in range(L):
        sl = slice(6 + 3 * i, 9 + 3 * i)
        Q[sl, sl] = (e.contact_drift if stance[i] else e.swing_drift) ** 2 * dt * np.eye(3)
        if stance[i]:
            x[sl] += e.feet.roll[i] * dt
    P = F @ P @ F.T + Q
    rows, z, r = [], [], []
    for i in np.flatnonzero(stance):
        t = e.stance_time[i]  # (after the tick: this tick's value)
        inflate = 1.0 / min(max(t / e.trust_ramp, 0.01), 1.0) ** 2
        rb = e.feet.r_base[i]
        lever = np.linalg.norm(rb)
        rv = np.cross(gyro, rb) + e.feet.J_lin[i, :, 6:] @ e.feet.v0[6:]
        h = np.zeros((7, n))
        h[0:3, 0:3] = -np.eye(3)
        h[0:3, 6 + 3 * i:9 + 3 * i] = np.eye(3)
        h[3:6, 3:6] = np.eye(3)
        h[6, 8 + 3 * i] = 1.0
        rows.append(h)
        z += [*(R @ rb), *(e.feet.roll[i] - R @ rv), e.ground_height + e.feet.lift[i]]
        r += [(e.kinematics_noise ** 2 + (e.joint_position_noise * lever) ** 2) * inflate] * 3
        r += [(e.contact_velocity_noise ** 2 + (e.joint_velocity_noise * lever) ** 2)
              * inflate] * 3
        r += [e.ground_height_noise ** 2 * inflate]
    if not rows:
        return x, P
    H = np.vstack(rows)
    S = H @ P @ H.T + np.diag(r)
    K = np.linalg.solve(S, H @ P).T
    return x + K @ (np.array(z) - H @ x), P - K @ H @ P


def test_filter_update_equals_an_independent_batch_kalman_step():
    """The compiled filter (one scalar update per measurement) against the batch Kalman step of
    its documented equations in numpy, over 200 ticks of a perturbed stance with feet lifting
    and touching down (every stance set, the trust ramp active): state and covariance agree to
    1e-9 relative."""
    from scipy.spatial.transform import Rotation

    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    feet = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
    cm = ContactModel(model, contact_links=feet, features=[HalfSpace.ground()])
    # (no velocity gate: random joint rates would trip it, and the reference has none)
    est = BaseEstimator.for_contact_model(cm, noise=EstimatorNoise(), velocity_gate=0.0)
    e = est.data
    q = np.array(robot_info("quadruped")["standing_q"], dtype=float)
    rng = np.random.default_rng(3)
    dt = 2e-3
    assert est.update(q[7:], np.zeros(12), np.zeros(3), np.array([0.0, 0.0, 9.81]), q[3:7],
                      np.ones(4, dtype=bool), dt) == 0
    worst_x = worst_p = 0.0
    stance_sets = set()
    for stance, qj, qdj, gyro, accel in random_quadruped_ticks(rng, q):
        stance_sets.add(tuple(stance))
        quat = Rotation.from_rotvec(0.1 * rng.standard_normal(3)).as_quat()
        x0, P0 = e.x.copy(), e.P.copy()
        assert est.update(qj, qdj, gyro, accel, quat, stance, dt) == 0
        x_ref, P_ref = _batch_kalman_tick(e, x0, P0, quat, gyro, accel, stance, dt)
        worst_x = max(worst_x, np.max(np.abs(e.x - x_ref)) / np.max(np.abs(x_ref)))
        worst_p = max(worst_p, np.max(np.abs(e.P - P_ref)) / np.max(np.abs(P_ref)))
    assert len(stance_sets) > 8
    assert worst_x < 1e-9 and worst_p < 1e-9, (worst_x, worst_p)


def test_velocity_gate_skips_a_moving_stance_foot():
    """A foot the schedule holds in stance but whose kinematics say it moves (a slip, a late
    touchdown) fails the velocity gate: its velocity rows are skipped and counted, the
    estimated base velocity stays near rest (the three feet at rest hold it); without the gate
    the moving foot drags it."""
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    feet = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
    cm = ContactModel(model, contact_links=feet, features=[HalfSpace.ground()])
    q = np.array(robot_info("quadruped")["standing_q"], dtype=float)
    rest = np.zeros(12)
    up = np.array([0.0, 0.0, 9.81])
    speeds = {}
    for gate in (16.27, 0.0):
        est = BaseEstimator.for_contact_model(cm, noise=EstimatorNoise(), velocity_gate=gate)
        stance = np.ones(4, dtype=bool)
        for _ in range(50):  # settle at rest
            est.update(q[7:], rest, np.zeros(3), up, q[3:7], stance, 1e-3)
        assert est.data.gated_velocities[0] == 0
        # the first leg's joints move (2 rad/s each): its foot slides while the others rest
        qd = rest.copy()
        qd[0:3] = 2.0
        for _ in range(20):
            est.update(q[7:], qd, np.zeros(3), up, q[3:7], stance, 1e-3)
        speeds[gate] = float(np.linalg.norm(est.base_state()[2]))
        if gate > 0.0:
            assert est.data.gated_velocities[0] >= 15, est.data.gated_velocities[0]
        else:
            assert est.data.gated_velocities[0] == 0
    assert speeds[16.27] < 0.02 < speeds[0.0], speeds
