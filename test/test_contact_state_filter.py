"""The contact state filter (StanceFilter, the controller's ``contact_state_filter``) and torque
rate limit: the correction against an independent weighted least-squares solve, the decisions
(hysteresis, dwell, gait schedule), no flicker under realistic noise, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from contact_helpers import quadruped_on_ground
from numba_helpers import dispatcher_calls

from wbc_dynamics.contact.stance import SensingNoise, StanceFilter
from wbc_dynamics.controller import ControllerConfig, WholeBodyController
from wbc_dynamics.robots import robot_info

FEET = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
NOISE = SensingNoise()  # the realistic defaults: 1 mrad, 0.02 rad/s, 5 mm, 0.5 deg, ...


@pytest.fixture(scope="module")
def quadruped():
    """The bundled quadruped standing with its feet exactly on the ground (phi = 0)."""
    return quadruped_on_ground(FEET)


def _filter(cm, **kw):
    cm.excluded_links = frozenset()
    return StanceFilter(cm, NOISE, **kw)


def _prior(model, noise):
    nv = model.nv
    pq = np.full(nv, noise.joint_position ** 2)
    pq[:3], pq[3:6] = noise.base_position ** 2, noise.base_orientation ** 2
    pv = np.full(nv, noise.joint_velocity ** 2)
    pv[:3], pv[3:6] = noise.base_linear_velocity ** 2, noise.base_angular_velocity ** 2
    return pq, pv


def test_correction_is_the_weighted_least_squares_update_and_puts_the_feet_down(quadruped):
    model, cm, q0 = quadruped
    rng = np.random.default_rng(1)
    f = _filter(cm)
    pq, pv = _prior(model, NOISE)
    for trial in range(5):
        f.reset()
        q = q0.copy()
        q[2] += rng.uniform(-4e-3, 4e-3)
        q[7:] += rng.normal(0.0, 1e-3, model.nv - 6)
        dquat = np.r_[rng.normal(0.0, 0.004, 3), 1.0]
        x, y, z, w = q[3:7]
        a, b, c, d = dquat / np.linalg.norm(dquat)
        q[3:7] = [w * a + x * d + y * c - z * b, w * b - x * c + y * d + z * a,
                  w * c + x * b - y * a + z * d, w * d - x * a - y * b - z * c]
        v = np.r_[rng.normal(0.0, 0.05, 3), rng.normal(0.0, 0.02, 3),
                  rng.normal(0.0, 0.02, model.nv - 6)]
        q_in, v_in = q.copy(), v.copy()
        # independent: rows at the measured state, numpy's dense solve
        k = cm.candidates(q_in, margin=f.margin)
        d = cm.data
        N, S, T, phi = (d.Ncand[:k].copy(), d.Scand[:k].copy(), d.Tcand[:k].copy(),
                        d.cand_phi[:k].copy())
        assert k == 4 and np.all(np.abs(phi) < 0.02)
        n_stance = f.update(q, v)
        assert n_stance == 4 and sorted(f.stance_links) == sorted(FEET)
        r_pos, r_vel = f.data.position_variance, f.data.velocity_variance
        dq = -(pq[:, None] * N.T) @ np.linalg.solve(N @ (pq[:, None] * N.T)
                                                    + r_pos * np.eye(k), phi)
        J = np.vstack([np.stack([N[i], S[i], T[i]]) for i in range(k)])
        dv = -(pv[:, None] * J.T) @ np.linalg.solve(J @ (pv[:, None] * J.T)
                                                    + r_vel * np.eye(3 * k), J @ v_in)
        np.testing.assert_allclose(f.data.dq, dq, rtol=0, atol=1e-12)
        np.testing.assert_allclose(v, v_in + dv, rtol=0, atol=1e-12)
        np.testing.assert_allclose(q[7:], q_in[7:] + dq[6:], rtol=0, atol=1e-15)
        assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-12
        # the feet are now on the ground (to second order in the correction) and at rest
        k2 = cm.candidates(q, margin=f.margin)
        assert k2 == 4 and np.max(np.abs(cm.data.cand_phi[:k2])) < 5e-5, trial
        assert np.max(np.abs(J @ v)) < 2e-3 < np.max(np.abs(J @ v_in))
        # the correction went mostly to the base: joints moved by a fraction of their noise
        assert np.max(np.abs(dq[6:])) < 1e-3



def test_points_well_above_their_links_lowest_are_not_projected_onto_the_ground():
    """A second sphere 15 mm above each foot sphere along the foot's axis (as a sole box's
    upper corners over its lower ones), within the gate of the ground under the base
    estimate's noise: the stance projection puts the lowest points on the ground and leaves the
    upper ones where they are, tick after tick, whatever the noise (projecting both would settle
    the base half-way, 6 mm low, and the set of projected points would change with the
    noise)."""
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace

    model, cm0, q0 = quadruped_on_ground(FEET)
    lift = 0.015
    points = {p.link: [(p.center, p.radius), (p.center + [0.0, 0.0, lift], p.radius)]
              for p in cm0.contact_points}
    cm = ContactModel(model, contact_links=FEET, features=[HalfSpace.ground(mu=0.8)],
                      margin=0.005, dt=1e-3, points=points)
    f = _filter(cm)
    k = cm.candidates(q0, margin=f.margin)
    phi0 = np.sort(cm.data.cand_phi[:k])
    assert k == 8 and np.allclose(phi0[:4], 0.0, atol=1e-9)
    upper = phi0[4:]  # (the foot frames are tilted: 12.4 mm above the ground)
    assert np.all((upper > 0.01) & (upper < lift))  # within the gate of the ground
    q, v = q0.copy(), np.zeros(model.nv)
    assert f.update(q, v) == 4
    assert np.max(np.abs(f.data.dq)) < 1e-9  # exact state: nothing to correct
    rng = np.random.default_rng(3)
    for trial in range(20):
        q = q0.copy()
        q[2] += rng.normal(0.0, NOISE.base_position)
        q[7:] += rng.normal(0.0, NOISE.joint_position, model.nv - 6)
        x, y, z, w = q[3:7]
        a, b, c, d = np.r_[rng.normal(0.0, 0.5 * NOISE.base_orientation, 3), 1.0]
        q[3:7] = [w * a + x * d + y * c - z * b, w * b - x * c + y * d + z * a,
                  w * c + x * b - y * a + z * d, w * d - x * a - y * b - z * c]
        q[3:7] /= np.linalg.norm(q[3:7])
        f.update(q, np.zeros(model.nv))
        k = cm.candidates(q, margin=f.margin)
        phi = np.sort(cm.data.cand_phi[:k])
        assert np.max(np.abs(phi[:4])) < 1e-4, (trial, phi)
        np.testing.assert_allclose(phi[4:], upper, atol=1e-3, err_msg=str(trial))


def test_no_flicker_under_realistic_noise_and_schedule_releases_at_once(quadruped):
    model, cm, q0 = quadruped
    rng = np.random.default_rng(2)
    f = _filter(cm)
    excluded = cm.excluded_mask()
    for _ in range(600):
        q = q0.copy()
        q[:3] += rng.normal(0.0, NOISE.base_position, 3)
        q[7:] += rng.normal(0.0, NOISE.joint_position, model.nv - 6)
        v = np.r_[rng.normal(0.0, 0.05, 3), rng.normal(0.0, 0.02, 3),
                  rng.normal(0.0, 0.02, model.nv - 6)]
        assert f.update(q, v) == 4
    # four touches at the first tick, then no decision changed in 600 noisy ticks
    assert f.decisions_changed == 4 and f.failed_projections == 0
    assert not excluded.any()
    f.set_swing(["LF_foot"])
    f.update(q0.copy(), np.zeros(model.nv))
    assert sorted(f.stance_links) == sorted(set(FEET) - {"LF_foot"})
    lf = np.array([sid[0] == "LF_foot" for sid in cm.sphere_ids])
    assert np.array_equal(excluded, lf)
    # back in the schedule: touched again, but only after the dwell
    f.set_swing([])
    f.update(q0.copy(), np.zeros(model.nv))
    assert "LF_foot" not in f.stance_links  # released 1 tick ago < dwell (10 ms)
    for _ in range(10):
        f.update(q0.copy(), np.zeros(model.nv))
    assert sorted(f.stance_links) == sorted(FEET) and not excluded.any()


def test_a_lifted_robot_is_released_after_the_dwell_not_before(quadruped):
    model, cm, q0 = quadruped
    f = _filter(cm, dwell=0.01)
    assert f.update(q0.copy(), np.zeros(model.nv)) == 4
    lifted = q0.copy()
    lifted[2] += 0.03  # 3 cm: beyond 4 predicted standard deviations (~2.2 cm)
    for tick in range(1, 10):
        assert f.update(lifted.copy(), np.zeros(model.nv)) == 4, tick
        # a lifted link is left out of the correction meanwhile: the state is not pulled down
        assert np.allclose(f.data.dq, 0.0)
    assert f.update(lifted.copy(), np.zeros(model.nv)) == 0
    assert f.decisions_changed == 8


def test_a_foot_above_the_touch_threshold_is_not_touched(quadruped):
    model, cm, q0 = quadruped
    f = _filter(cm)
    assert f.update(q0.copy(), np.zeros(model.nv)) == 4
    f.set_swing(["LF_foot"])
    q = q0.copy()
    i = 7 + model.joint_index("LF_kfe")
    for dq_knee in (0.05, 0.02, 0.01):  # the knee flexed: the foot lifted by mm to cm
        q[i] = q0[i] + dq_knee
        for _ in range(12):
            f.update(q.copy(), np.zeros(model.nv))
        f.set_swing([])
        for _ in range(12):
            f.update(q.copy(), np.zeros(model.nv))
        k = cm.candidates(q, margin=0.1)
        d = cm.data
        lf = [i_ for i_ in range(k) if cm.sphere_ids[d.cand_sph[i_]][0] == "LF_foot"]
        height = float(np.min(d.cand_phi[lf]))
        assert ("LF_foot" in f.stance_links) == (height < 1e-3), (dq_knee, height)
        f.set_swing(["LF_foot"])


def _standing_controller(**extra):
    info = robot_info("quadruped")
    cfg = {"robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
           "noslip_min_norm": True, "noslip_gap": 1e-6, "phi_deadband": 1e-4,
           "passive_impact": True, "separation_tolerance": 0.05, "kp": [3000.0], "kd": [110.0],
           **extra}
    return info, WholeBodyController(cfg)


def test_the_bound_entry_point_decides_and_corrects_as_the_dispatcher_call(quadruped,
                                                                           monkeypatch):
    """``update`` on the buffers given to ``bind`` (the controller's, every tick) calls the
    kernel's bound entry point, on other arrays numba's dispatcher: the same decisions and
    corrections, bitwise, through stance, lift-off and touch-down."""
    import wbc_dynamics.contact.stance as stance_module

    model, cm, q0 = quadruped
    _, cm_other, _ = quadruped_on_ground(FEET)
    bound, free = _filter(cm), _filter(cm_other)
    nv = model.nv
    q, v = q0.copy(), np.zeros(nv)
    bound.bind(q, v)
    rng = np.random.default_rng(7)
    dispatched = dispatcher_calls(monkeypatch, stance_module, "stance_update_kernel")
    for k in range(80):
        qk = q0.copy()
        qk[2] += 0.03 if 20 <= k < 45 else rng.uniform(-2e-3, 2e-3)  # lift-off, touch-down
        qk[7:] += rng.normal(0.0, 1e-3, nv - 6)
        vk = rng.normal(0.0, 0.03, nv)
        q[:], v[:] = qk, vk
        q_free, v_free = qk.copy(), vk.copy()
        assert bound.update(q, v) == free.update(q_free, v_free)
        np.testing.assert_array_equal(q, q_free)
        np.testing.assert_array_equal(v, v_free)
        np.testing.assert_array_equal(bound.data.stance, free.data.stance)
    assert len(dispatched) == 80  # the free filter's calls only
    assert bound.decisions_changed == free.decisions_changed >= 8  # 4 releases, 4 touches
    assert sorted(bound.stance_links) == sorted(FEET)
    with pytest.raises(ValueError, match="StanceFilter.bind: q and v"):
        bound.bind(np.zeros(2 * model.nq)[::2], v)


def test_controller_keeps_the_stance_force_under_a_base_estimate_off_by_mm(quadruped):
    """Without the filter a base estimate 0.5 mm high takes every foot out of the touching set
    and the predicted stance force goes to zero; with it the force is the robot's weight."""
    model, cm, q0 = quadruped
    forces = {}
    for filt in (False, True):
        _, ctl = _standing_controller(contact_state_filter=filt)
        for k in range(5):
            now = 1.0 + 1e-3 * k
            p = q0[:3] + np.array([0.0, 0.0, 5e-4])
            ctl.set_base_state(p, q0[3:7], np.zeros(3), np.zeros(3), now)
            ctl.set_joint_state(q0[7:], np.zeros(12), now)
            ctl.set_reference(np.zeros(12), now, position=q0[7:], velocity=np.zeros(12))
            out = ctl.update(now)
        assert out.mode == "control"
        forces[filt] = float(np.sum(out.contact_forces[:, 2])) if len(out.contact_ids) else 0.0
    weight = 9.81 * float(cm.total_mass)
    assert forces[False] < 0.01 * weight
    assert abs(forces[True] - weight) < 0.02 * weight, (forces, weight)


def test_controller_validates_the_filter_and_rate_limit_settings():
    with pytest.raises(ValueError, match="contact_state_filter: needs a floating base"):
        WholeBodyController({"robot": "arm", "method": "lcp_noslip",
                             "contact_state_filter": True})
    with pytest.raises(ValueError, match="contact_dwell"):
        WholeBodyController({"robot": "quadruped", "floating_base": True,
                             "method": "lcp_noslip", "contact_state_filter": True,
                             "contact_dwell": -1.0})
    with pytest.raises(ValueError, match="sensing_base_position_noise"):
        WholeBodyController({"robot": "quadruped", "floating_base": True,
                             "method": "lcp_noslip", "contact_state_filter": True,
                             "sensing_base_position_noise": 0.0})
    with pytest.raises(ValueError, match="torque_rate_limit: value -1.0 for joint"):
        WholeBodyController({"robot": "quadruped", "floating_base": True,
                             "torque_rate_limit": [-1.0]})
    assert ControllerConfig().contact_state_filter is False


def test_torque_rate_limit_bounds_the_change_per_tick(quadruped):
    model, cm, q0 = quadruped
    rate = 500.0  # N m/s: 0.5 N m per 1 ms tick
    _, ctl = _standing_controller(torque_rate_limit=[rate], method="none")
    _, free = _standing_controller(method="none")
    prev = None
    reached = False
    for k in range(400):
        now = 1.0 + 1e-3 * k
        for c in (ctl, free):
            c.set_base_state(q0[:3], q0[3:7], np.zeros(3), np.zeros(3), now)
            c.set_joint_state(q0[7:], np.zeros(12), now)
            c.set_reference(np.zeros(12), now, position=q0[7:] + 0.1, velocity=np.zeros(12))
        tau = ctl.update(now).tau.copy()
        target = free.update(now).tau.copy()
        if prev is not None:
            assert np.max(np.abs(tau - prev)) <= rate * 1e-3 + 1e-12
        reached = reached or np.allclose(tau, target, atol=1e-9)
        prev = tau
    assert reached  # it converges to the unlimited command once the steps allow
    assert math.isfinite(float(np.sum(prev)))
