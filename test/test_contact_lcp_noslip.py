"""lcp_noslip (Zapolsky & Drumwright, Sec. 4: Alg. 1, LCP (44)-(45), Alg. 2, Sec. 4.5, 4.6) on
bundled robots.

References: Pinocchio M (CRBA) / h / RNEA with external forces; physics (m g); eq. (37).
"""

import numpy as np
import pinocchio as pin
import pytest
from contact_helpers import (
    G,
    arm_box,
    blockdiag,
    closed_loop_sway,
    eq37_residual_mform,
    pin_mass_bias,
    quadruped,
    sway_problems,
)
from contact_helpers import standing_sway as sway

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.lcp_noslip import lcp_noslip_kernel
from wbc_dynamics.kernels.arena import NO_ARENA


def _standing_problem(q=None, v=None, qdd=None):
    m, pm, cm, q0 = quadruped()
    q = q0 if q is None else q
    v = np.zeros(m.nv) if v is None else v
    qdd = np.zeros(12) if qdd is None else qdd
    return cm.build(q, v, qdd)


def _check_solution(p, res, M, tol_dyn=1e-8):
    """Eq. (37), eq. (38), non-interpenetration, no-slip, complementarity, non-negativity."""
    assert res.all_finite
    assert eq37_residual_mform(M, p, res) < tol_dyn
    # desired accelerations realized (eq. 38/39)
    np.testing.assert_allclose(res.qdd[p.actuated], p.qdd_des, atol=1e-8, rtol=1e-8)
    vn = p.N @ res.v_next + p.phi / p.dt
    cn = res.impulses[:, 0]
    assert np.min(vn) > -1e-9
    assert np.min(cn) >= 0.0
    # complementarity in force units: |f_N * w| small relative to the weight scale
    assert np.max(np.abs(cn * vn)) < 1e-9
    np.testing.assert_allclose(p.S @ res.v_next, 0.0, atol=1e-9)
    np.testing.assert_allclose(p.T @ res.v_next, 0.0, atol=1e-9)


def test_standing_sum_of_normal_forces_equals_weight_and_dynamics():
    m, pm, cm, q0 = quadruped()
    p = _standing_problem()
    assert p.nc == 4
    np.testing.assert_allclose(p.phi, 0.0, atol=1e-12)
    res = solve("lcp_noslip", p, SolverState())
    M, h = pin_mass_bias(pm, q0, np.zeros(m.nv))
    np.testing.assert_allclose(p.h, h, rtol=1e-10, atol=1e-10)
    _check_solution(p, res, M)
    fn = res.contact_forces_local[:, 0]
    assert abs(fn.sum() - m.total_mass * G) / (m.total_mass * G) < 1e-6
    # world forces: vertical, sum = m g, friction ~ 0 (zero desired accelerations, standing)
    fw = res.contact_forces_world.sum(axis=0)
    np.testing.assert_allclose(fw, [0.0, 0.0, m.total_mass * G], atol=1e-6 * m.total_mass * G)
    assert np.max(np.abs(res.contact_forces_local[:, 1:])) < 1e-9 * m.total_mass * G
    # Appendix F: at most rank(K) (<= 3 here, Fig. 5) contacts carry force in a vertex solution
    assert np.count_nonzero(fn > 1e-9) <= 3
    assert "rows_dropped" in res.stats.flags  # 8 tangent rows, only 3 independent on the base


def test_standing_min_norm_symmetric_distribution():
    m, pm, cm, q0 = quadruped()
    p = _standing_problem()
    res = solve("lcp_noslip", p, SolverState(), min_norm=True)
    M, _ = pin_mass_bias(pm, q0, np.zeros(m.nv))
    _check_solution(p, res, M)
    fn = res.contact_forces_local[:, 0]
    mg = m.total_mass * G
    assert abs(fn.sum() - mg) / mg < 1e-6
    np.testing.assert_allclose(fn, mg / 4, rtol=1e-6)
    assert np.max(np.abs(res.contact_forces_local[:, 1:])) < 1e-6 * mg
    # torques mirror left/right (haa antisymmetric, hfe/kfe symmetric) for the mirrored pose
    tau = res.tau.reshape(4, 3)  # LF LH RF RH
    np.testing.assert_allclose(tau[0, 1:], tau[2, 1:], atol=1e-9)
    np.testing.assert_allclose(tau[0, 0], -tau[2, 0], atol=1e-9)
    assert "min_norm" in res.stats.flags


def test_torques_match_rnea_with_predicted_contact_forces():
    """tau = RNEA(q, v, qdd) - sum J_i^T f_i on the joints, with qdd the solver's accelerations."""
    m, pm, cm, q0 = quadruped()
    rng = np.random.default_rng(5)
    v = np.zeros(m.nv)
    v[6:] = 0.05 * rng.standard_normal(12)
    p = _standing_problem(v=v, qdd=np.zeros(12))
    res = solve("lcp_noslip", p, SolverState(), min_norm=True)
    d = pm.createData()
    # generalized contact force: sum_i J_i^T f_i (world frame point Jacobians, pinocchio)
    gen = p.N.T @ res.contact_forces_local[:, 0] + p.S.T @ res.contact_forces_local[:, 1] \
        + p.T.T @ res.contact_forces_local[:, 2]
    tau_full = pin.rnea(pm, d, q0, v, res.qdd) - gen
    np.testing.assert_allclose(tau_full[:6], 0.0, atol=1e-8)  # unactuated base
    np.testing.assert_allclose(tau_full[6:], res.tau, atol=1e-8)


def test_warm_start_continuity_along_standing_sway():
    """Sec. 4.6: warm-started Alg. 2 gives continuous torques along an indeterminate trajectory.

    Bound from the trajectory's own rate of change: a torque that follows a motion of angular
    frequency w = 2 pi / T changes per tick by about w dt |tau|_max; the factor 10 covers
    harmonics and the kinks of the piecewise-smooth force distribution (a contact starting to
    carry load when the COM crosses a support diagonal). Here that is ~0.065 N m, while a jump
    between two vertex solutions of the indeterminate problem (e.g. the diagonal foot pairs)
    changes joint torques by ~1 N m in one tick.
    """
    dt, T, n = 1e-3, 1.0, 600
    probs = sway_problems(n, period=T)
    st = SolverState()
    res = [solve("lcp_noslip", p, st) for p in probs]
    cold = [solve("lcp_noslip", p, None) for p in probs]
    for r in res + cold:
        assert r.consistent and r.all_finite
        assert set(r.stats.flags) <= {"rows_dropped"}
    assert sum(r.stats.warm_start_used for r in res) >= n - 1
    tw = np.array([r.tau for r in res])
    dtau = np.abs(np.diff(tw, axis=0))
    bound = 10.0 * (2 * np.pi / T) * dt * np.max(np.abs(tw))
    assert dtau.max() <= bound, (dtau.max(), bound)
    # same physics whatever the start: v+ is unique for the PSD LCP
    for r, c in zip(res, cold, strict=True):
        np.testing.assert_allclose(r.v_next, c.v_next, atol=1e-9)
    tc = np.array([r.tau for r in cold])
    dc = np.abs(np.diff(tc, axis=0))
    # report (printed with -s): the comparison of Sec. 8.1
    print(f"\nlcp_noslip sway: warm mean|dtau|={dtau.mean():.3e} max={dtau.max():.3e} "
          f"(bound {bound:.3e}); cold mean|dtau|={dc.mean():.3e} max={dc.max():.3e}")


def test_closed_loop_sway_stays_finite_and_consistent_after_correction():
    """Closed loop (model as plant, PD on joints): corrections happen, never NaN or fallback."""
    m, pm, cm, q0 = quadruped()
    st = SolverState()
    res, _, probs = closed_loop_sway(m, cm, q0, 300, 1e-3, lambda p: solve("lcp_noslip", p, st))
    for p, r in zip(probs, res, strict=True):
        assert r.all_finite and "fallback" not in r.stats.flags
        qdd_target = r.stats.info.get("qdd_corrected", p.qdd_des)
        np.testing.assert_allclose(r.qdd[p.actuated], qdd_target, atol=1e-7)
        assert np.min(p.N @ r.v_next + p.phi / p.dt) > -1e-4
        assert p.dynamics_residual(r.tau, r.impulses, r.v_next) < 1e-10
    fn = np.array([r.contact_forces_local[:, 0].sum() for r in res])
    mg = m.total_mass * G
    assert np.all(np.abs(fn - mg) < 0.2 * mg)  # stays standing: weight carried


@pytest.mark.parametrize("squat", [0.0, 4.0])
def test_inconsistent_desired_accelerations_are_corrected(squat):
    """Sec. 4.5: splaying the legs outward while feet must not slip is inconsistent (a
    simultaneous squat, hfe/kfe, is consistent and must survive the correction)."""
    m, pm, cm, q0 = quadruped()
    qdd = np.zeros(12)
    qdd[[0, 3]] = 20.0   # LF/LH haa
    qdd[[6, 9]] = -20.0  # RF/RH haa (mirrored: outward)
    qdd[[1, 4, 7, 10]] += squat
    qdd[[2, 5, 8, 11]] -= 0.6 * squat
    p = _standing_problem(qdd=qdd)
    res = solve("lcp_noslip", p, SolverState())
    assert "inconsistent_corrected" in res.stats.flags
    assert not res.consistent and res.all_finite
    M, _ = pin_mass_bias(pm, q0, np.zeros(m.nv))
    assert eq37_residual_mform(M, p, res) < 1e-8
    qc = res.stats.info["qdd_corrected"]
    np.testing.assert_allclose(res.qdd[p.actuated], qc, atol=1e-7)
    vn = p.N @ res.v_next + p.phi / p.dt
    assert np.min(vn) > -1e-6
    np.testing.assert_allclose(p.S @ res.v_next, 0.0, atol=1e-6)
    np.testing.assert_allclose(p.T @ res.v_next, 0.0, atol=1e-6)
    assert np.min(res.impulses[:, 0]) >= 0.0
    # minimal deviation: compare with an independent solution of QP (46)-(51) (OSQP, dense M)
    dev_ref = _correction_qp_reference(M, p)
    dev = np.linalg.norm(p.dt * qc + p.v[p.actuated] - p.desired_velocity())
    assert dev <= dev_ref * (1 + 1e-4) + 1e-9, (dev, dev_ref)


def _correction_qp_reference(M, p):
    """min |P v+ - qdot_des| s.t. S v+ = T v+ = 0, N v+ >= -phi/dt and the unactuated rows of
    the first-order dynamics M (v+ - f*) = N^T cN + S^T cS + T^T cT with cN >= 0 (QP 46-51)."""
    import osqp
    import scipy.sparse as sp

    nv, nc, nu = p.nv, p.nc, p.nu
    fstar = p.free_velocity()
    nx = nv + 3 * nc
    Pm = np.zeros((nu, nx))
    Pm[np.arange(nu), p.actuated] = 1.0
    H = Pm.T @ Pm + 1e-12 * np.eye(nx)
    q = -Pm.T @ p.desired_velocity()
    Z = np.zeros((nc, 3 * nc))
    rows = [np.hstack([p.S, Z]), np.hstack([p.T, Z]), np.hstack([p.N, Z])]
    lo = [np.zeros(nc), np.zeros(nc), -p.phi / p.dt]
    hi = [np.zeros(nc), np.zeros(nc), np.full(nc, np.inf)]
    F = p.free
    Jc = np.vstack([p.N, p.S, p.T]).T  # nv x 3nc
    rows.append(np.hstack([M[F], -Jc[F]]))
    lo.append(M[F] @ fstar)
    hi.append(M[F] @ fstar)
    cn = np.zeros((nc, nx))
    cn[:, nv:nv + nc] = np.eye(nc)
    rows.append(cn)
    lo.append(np.zeros(nc))
    hi.append(np.full(nc, np.inf))
    s = osqp.OSQP()
    s.setup(sp.csc_matrix(np.triu(H)), q, sp.csc_matrix(np.vstack(rows)), np.concatenate(lo),
            np.concatenate(hi), verbose=False, eps_abs=1e-10, eps_rel=1e-10, max_iter=200000,
            polishing=True)
    r = s.solve(raise_error=False)
    assert str(r.info.status).startswith("solved")
    return float(np.linalg.norm(r.x[p.actuated] - p.desired_velocity()))


@pytest.mark.parametrize("discrete", [True, False])
def test_consistent_input_is_not_flagged(discrete):
    """Continuous-time accelerations (J a + Jdot v = 0) are consistent up to dt |Jdot v|."""
    m, pm, cm, q0 = quadruped()
    qs, vs, qdds = sway(m, q0, 3, 1e-3, amp=(0.01, 0.004, 0.01), discrete=discrete)
    p = cm.build(qs[2], vs[2], qdds[2])
    res = solve("lcp_noslip", p, SolverState())
    assert res.consistent and res.stats.flags in ((), ("rows_dropped",))
    slip = max(np.max(np.abs(p.S @ res.v_next)), np.max(np.abs(p.T @ res.v_next)))
    assert slip < (1e-6 if discrete else 1e-4)
    np.testing.assert_allclose(res.qdd[p.actuated], p.qdd_des, atol=1e-8)


def test_lifted_foot_separates_and_zero_force():
    """A candidate 3 mm above the ground (inside the margin) gets zero force (complementarity)."""
    m, pm, cm, q0 = quadruped()
    q = q0.copy()
    q[2] += 0.003  # whole robot 3 mm up: all feet separated, phi/dt term dominates
    p = cm.build(q, np.zeros(m.nv), np.zeros(12))
    assert p.nc == 4 and np.allclose(p.phi, 0.003)
    res = solve("lcp_noslip", p, SolverState())
    np.testing.assert_allclose(res.impulses, 0.0, atol=1e-12)
    # falls freely: base z acceleration = -g
    assert abs(res.qdd[2] + G) < 1e-8
    q[2] = q0[2] + 0.01  # outside the margin: no candidates at all
    p = cm.build(q, np.zeros(m.nv), np.zeros(12))
    assert p.nc == 0
    res = solve("lcp_noslip", p)
    assert res.stats.flags == ("no_contacts",)


def test_zero_contacts_floating_base_matches_pinocchio_aba():
    m, pm, cm, q0 = quadruped()
    q = q0.copy()
    q[2] += 0.2
    rng = np.random.default_rng(7)
    v = 0.1 * rng.standard_normal(m.nv)
    qdd = rng.standard_normal(12)
    p = cm.build(q, v, qdd)
    assert p.nc == 0
    res = solve("lcp_noslip", p)
    tau_full = np.zeros(m.nv)
    tau_full[6:] = res.tau
    a = pin.aba(pm, pm.createData(), q, v, tau_full)
    np.testing.assert_allclose(a[6:], qdd, atol=1e-8)
    np.testing.assert_allclose(res.qdd, a, atol=1e-8)


def test_iteration_limit_gives_flagged_finite_fallback():
    p = _standing_problem()
    st = SolverState()
    good = solve("lcp_noslip", p, st)
    res = solve("lcp_noslip", p, st, max_iter=0, warm_start=False)
    assert "fallback" in res.stats.flags and "iteration_limit" in res.stats.flags
    assert res.all_finite and not res.consistent
    np.testing.assert_array_equal(res.tau, good.tau)  # hold last command
    assert p.dynamics_residual(res.tau, res.impulses, res.v_next) < 1e-12
    # without a previous command: contact-free inverse dynamics, still finite
    res = solve("lcp_noslip", p, SolverState(), max_iter=0, warm_start=False)
    assert "fallback" in res.stats.flags and res.all_finite
    assert res.stats.info["fallback_source"] == "contact_free_id"


@pytest.mark.parametrize("name, value", [("max_iter", -1), ("max_iter", 2.5), ("tol", np.nan),
                                         ("rank_tol", -1.0), ("consistency_tol", np.inf),
                                         ("min_norm_tol", np.nan), ("noslip_gap", np.nan),
                                         ("rank_mass_ratio", -1.0)])
def test_bad_options_name_the_option(name, value):
    with pytest.raises(ValueError, match=name):
        solve("lcp_noslip", _standing_problem(), SolverState(), **{name: value})


def test_inconsistent_without_correction_gives_flagged_fallback():
    """``correct_inconsistent=False``: inconsistent desired accelerations are not corrected but
    answered with the documented fallback (finite, consistent with eq. (37))."""
    rng = np.random.default_rng(5)
    p = _standing_problem()
    p.qdd_des = 30.0 * rng.standard_normal(p.nu)
    corrected = solve("lcp_noslip", p, SolverState())
    assert "inconsistent_corrected" in corrected.stats.flags
    res = solve("lcp_noslip", p, SolverState(), correct_inconsistent=False)
    assert res.stats.flags == ("fallback",) and res.all_finite and not res.consistent
    assert res.stats.info["reason"] == "inconsistent desired accelerations"
    np.testing.assert_array_equal(res.impulses, 0.0)
    assert p.dynamics_residual(res.tau, res.impulses, res.v_next) < 1e-12


def test_bad_inertia_gives_fallback_not_nan():
    p = _standing_problem()
    p.Minv = -p.Minv  # not positive definite: Alg. 1 cannot factor P M^-1 P^T
    res = solve("lcp_noslip", p, SolverState())
    assert "fallback" in res.stats.flags and res.all_finite


def test_kernel_matches_dense_mlcp_solution():
    """Alg. 1/2 result satisfies the full MLCP (42)-(43) built densely with M from Pinocchio."""
    m, pm, cm, q0 = quadruped()
    rng = np.random.default_rng(11)
    v = np.zeros(m.nv)
    v[6:] = 0.02 * rng.standard_normal(12)
    p = _standing_problem(v=v).validate()
    res = solve("lcp_noslip", p, SolverState(), min_norm=False)
    M, h = pin_mass_bias(pm, q0, v)
    kappa = -M @ p.v + p.dt * h
    # first block row of (42): M v+ - P^T (dt tau) - S^T cS - T^T cT - N^T cN + kappa = 0
    r1 = (M @ res.v_next - p.selection_matrix() @ (p.dt * res.tau) - p.S.T @ res.impulses[:, 1]
          - p.T.T @ res.impulses[:, 2] - p.N.T @ res.impulses[:, 0] + kappa)
    assert np.max(np.abs(r1)) < 1e-10
    wn = p.N @ res.v_next + p.phi / p.dt
    assert np.min(wn) > -1e-10 and abs(wn @ res.impulses[:, 0]) < 1e-12


def test_arm_grasps_box_under_gravity():
    arm, box, parm, cm, q, bq = arm_box()
    p = cm.build(q, np.zeros(arm.nv), np.zeros(arm.nv), [bq], [np.zeros(6)])
    assert p.nc == 4 and np.allclose(p.phi, 0.0, atol=1e-9)
    assert p.nv == arm.nv + 6 and set(p.free.tolist()) == set(range(arm.nv, arm.nv + 6))
    res = solve("lcp_noslip", p, SolverState())
    Ma, _ = pin_mass_bias(parm, q, np.zeros(arm.nv))
    Mb = box.mass_matrix(bq)
    M = blockdiag([Ma, Mb])
    _check_solution(p, res, M)
    # the box is held: its acceleration is zero, and the fingers carry its weight
    np.testing.assert_allclose(res.qdd[arm.nv:], 0.0, atol=1e-8)
    f_on_box = -res.contact_forces_world.sum(axis=0)
    np.testing.assert_allclose(f_on_box, [0.0, 0.0, box.total_mass * G], atol=1e-8)
    # torques = arm gravity torques minus the fingertip reactions (Pinocchio RNEA + J^T f)
    d = parm.createData()
    tau_ref = pin.rnea(parm, d, q, np.zeros(arm.nv), np.zeros(arm.nv))
    pin.computeJointJacobians(parm, d, q)
    pin.updateFramePlacements(parm, d)
    for i, (link, _, _) in enumerate(p.contact_ids):
        fid = parm.getFrameId(link)
        Jf = pin.getFrameJacobian(parm, d, fid, pin.LOCAL_WORLD_ALIGNED)
        r = p.points[i] - d.oMf[fid].translation
        Jp = Jf[:3] - pin.skew(r) @ Jf[3:]
        tau_ref -= Jp.T @ res.contact_forces_world[i]
    np.testing.assert_allclose(res.tau, tau_ref, atol=1e-8)
    # holding the box changes the torques relative to the empty hand
    tau_empty = pin.rnea(parm, d, q, np.zeros(arm.nv), np.zeros(arm.nv))
    assert np.max(np.abs(res.tau - tau_empty)) > 0.1


@pytest.mark.parametrize("nc_extra", [0, 3])
def test_runtime_kernel_linear_structure(nc_extra):
    """Alg. 2 never needs more than rank(K) <= nv non-basic indices (Appendix F)."""
    m, pm, cm, q0 = quadruped()
    p = _standing_problem().validate()
    if nc_extra:
        # duplicate contacts (same rows) as in the Sec. 8.4.2 timing experiment
        rep = np.repeat(np.arange(p.nc), nc_extra + 1)
        p = p.subset(rep)
        p.contact_ids = tuple((cid, j) for j, cid in enumerate(p.contact_ids))
    warm = np.zeros(p.nc, dtype=bool)
    out = lcp_noslip_kernel(p.Minv, p.h, p.v, p.actuated, p.qdd_des, p.N, p.S, p.T, p.phi, p.dt,
                            warm, 200, 1e-9, 1e-10, 0.0, 1e-4, -1.0, 0.0, NO_ARENA)
    nb = out[6]
    assert out[8] == 0
    assert nb.sum() <= 3
    assert abs(out[1].sum() / p.dt - m.total_mass * G) < 1e-6 * m.total_mass * G


def test_noslip_on_low_friction_slope_ignores_friction_cone():
    """mu = 0.1 on a 0.3 rad slope: no-slip predicts |f_t| / f_n = tan(0.3) > mu (no slip limit)."""
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace

    m, pm, _, q0 = quadruped()
    th = 0.3
    Ry = np.array([[np.cos(th), 0, np.sin(th)], [0, 1, 0], [-np.sin(th), 0, np.cos(th)]])
    plane = HalfSpace.through_point("slope", [0.0, 0.0, 0.0], Ry[:, 2], mu=0.1)
    cm = ContactModel(m, features=[plane], margin=0.005)
    q = q0.copy()
    q[:3] = Ry @ q0[:3]
    q[3:7] = [0.0, np.sin(th / 2), 0.0, np.cos(th / 2)]
    p = cm.build(q, np.zeros(m.nv), np.zeros(12))
    assert p.nc == 4 and np.allclose(p.phi, 0.0, atol=1e-12) and np.allclose(p.mu, 0.1)
    res = solve("lcp_noslip", p, SolverState(), min_norm=True)
    M, _ = pin_mass_bias(pm, q, np.zeros(m.nv))
    _check_solution(p, res, M)
    mg = m.total_mass * G
    np.testing.assert_allclose(res.contact_forces_world.sum(axis=0), [0, 0, mg], atol=1e-6 * mg)
    f = res.contact_forces_local
    # s is the down-slope tangent (world x projected): the net tangential load is tan(th) times
    # the net normal load, so by the triangle inequality some contact is outside mu = 0.1
    assert abs(abs(f[:, 1].sum()) / f[:, 0].sum() - np.tan(th)) < 1e-6
    assert abs(f[:, 2].sum()) < 1e-6 * mg
    ft = np.hypot(f[:, 1], f[:, 2])
    # sum ft >= tan(th) sum fN, so the mean (hence the largest) excess over the cone is at least
    # (tan(th) - mu) sum fN / 4 (the min-norm solution spreads the load, reaching about that)
    assert np.max(ft - 0.1 * f[:, 0]) >= (np.tan(th) - 0.1) * f[:, 0].sum() / 4 * (1 - 1e-9)


def test_warm_start_survives_contacts_appearing_and_disappearing():
    """The state is matched by identity: 4 -> 3 (LF lifted) -> 4 contacts, then reset."""
    m, pm, cm, q0 = quadruped()
    st = SolverState()
    r4 = solve("lcp_noslip", _standing_problem(), st)
    nb4 = set(r4.stats.info["nonbasic"])
    q = q0.copy()
    q[8] -= 0.3  # LF hfe/kfe: lift the LF foot out of the margin
    q[9] -= 0.3
    p3 = cm.build(q, np.zeros(m.nv), np.zeros(12))
    assert p3.nc == 3 and ("LF_foot", 0, "ground") not in p3.contact_ids
    r3 = solve("lcp_noslip", p3, st)
    assert r3.all_finite and "fallback" not in r3.stats.flags
    # the previously active contacts that still exist seed Alg. 2
    assert r3.stats.warm_start_used == bool(nb4 & set(p3.contact_ids))
    M3, _ = pin_mass_bias(pm, q, np.zeros(m.nv))
    _check_solution(p3, r3, M3)
    ms = st.get("lcp_noslip")
    assert ms.contact_ids == p3.contact_ids and ms.impulses.shape == (3, 3)
    r4b = solve("lcp_noslip", _standing_problem(), st)
    assert r4b.all_finite and r4b.stats.warm_start_used
    st.reset()
    r4c = solve("lcp_noslip", _standing_problem(), st)
    assert not r4c.stats.warm_start_used
    np.testing.assert_allclose(r4c.v_next, r4b.v_next, atol=1e-10)  # v+ is unique


def test_min_norm_matches_independent_qp():
    """min_norm: feasible LCP solution with the smallest |c_N| (checked against SciPy SLSQP)."""
    from scipy.optimize import minimize

    from wbc_dynamics.contact.consistency import projected_inverse_inertia
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace

    m, pm, _, q0 = quadruped()
    q = q0.copy()
    q[0] += 0.01  # asymmetric
    extra = {}
    for f in ("LF_foot", "LH_foot", "RF_foot", "RH_foot"):
        R = m.frame_placement(q, f)[:3, :3]  # horizontal offsets: every sphere touches
        extra[f] = [(R.T @ [0.004, 0.0, 0.0], 0.0125), (R.T @ [0.0, 0.004, 0.0], 0.0125)]
    cm = ContactModel(m, features=[HalfSpace.ground()], extra_points=extra, margin=0.01)
    p = cm.build(q, np.zeros(m.nv), np.zeros(12)).validate()
    assert p.nc == 12 and np.max(np.abs(p.phi)) < 1e-12
    r0 = solve("lcp_noslip", p, SolverState())
    r1 = solve("lcp_noslip", p, SolverState(), min_norm=True)
    assert "min_norm" in r1.stats.flags
    np.testing.assert_allclose(r1.v_next, r0.v_next, atol=1e-8)  # same physics
    K = projected_inverse_inertia(p)
    Q = p.N @ K @ p.N.T
    z0, z1 = r0.impulses[:, 0], r1.impulses[:, 0]
    w0 = p.N @ r0.v_next + p.phi / p.dt
    assert np.min(z1) >= 0 and np.max(np.abs(Q @ (z1 - z0))) < 1e-10
    assert np.max(np.abs(z1 * w0)) < 1e-12
    free = w0 <= 1e-9
    cons = [{"type": "eq", "fun": lambda z: Q @ z - Q @ z0}]
    ref = minimize(lambda z: z @ z, z0, jac=lambda z: 2 * z, constraints=cons,
                   bounds=[(0, None) if f else (0, 0) for f in free], method="SLSQP",
                   options={"ftol": 1e-16, "maxiter": 500})
    assert np.linalg.norm(z1) <= np.linalg.norm(ref.x) * (1 + 1e-6)
    assert np.linalg.norm(z1) < np.linalg.norm(z0)


@pytest.mark.parametrize("other", ["qp_noslip", "qp_coulomb", "lcp_coulomb"])
def test_methods_agree_on_standing_motion(other):
    """Standing, all feet sticking inside the cone (mu = 1): every model predicts the same v+
    (feet fixed, joints at qdot_des) and the same total contact wrench (m g up)."""
    m, pm, cm, q0 = quadruped()
    p = _standing_problem()
    a = solve("lcp_noslip", p, SolverState(), min_norm=True)
    b = solve(other, p, SolverState())
    assert "fallback" not in b.stats.flags
    np.testing.assert_allclose(b.v_next, a.v_next, atol=1e-7)
    mg = m.total_mass * G
    np.testing.assert_allclose(b.contact_forces_world.sum(axis=0), [0, 0, mg], atol=1e-5 * mg)
