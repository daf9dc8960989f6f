"""qp_coulomb / qp_noslip (Zapolsky & Drumwright, Sec. 6): Stage I (69)-(79) in reduced
form, Stage II.

Independent references: Pinocchio's CRBA mass matrix for eq. (37) and for the Stage I objective
1/2 v+^T M v+ (the solver only uses the core's analytical M^-1 and the reduced form of
Sec. 6.2.2), and SciPy's SLSQP on the *unreduced* formulations (69)-(74) and (102)-(103).
"""

from __future__ import annotations

import numpy as np
import pytest
from contact_methods_helpers import (
    accel_residual,
    dynamics_residual_pin,
    pin_mass_bias,
    pyramid_violation,
    quadruped_models,
    quadruped_problem,
)
from scipy.optimize import minimize

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.qp import warmup as qp_warmup

qp_warmup()
MG = 4.8 * 9.81
METHODS = ("qp_coulomb", "qp_noslip")


def full_space(p):
    """Unreduced eqs. (37)-(38) with Pinocchio's M: (v+, tau) affine in the impulses c of the
    variable rows J; returns (J, KE(c), v+(c), tau(c), M)."""
    M, h = pin_mass_bias(p.q_config, p.v)
    nv, nu, a = p.nv, p.nu, p.actuated
    Bm = np.zeros((nv, nu))
    Bm[a, np.arange(nu)] = 1.0
    K = np.block([[M, -p.dt * Bm], [Bm.T, np.zeros((nu, nu))]])

    def solve_vt(gen):
        rhs = np.concatenate([M @ p.v - p.dt * h + gen, p.v[a] + p.dt * p.qdd_des])
        x = np.linalg.solve(K, rhs)
        return x[:nv], x[nv:]
    return M, solve_vt


def coulomb_rows(p, k=4):
    F, D = p.pyramid(k)
    return np.vstack([p.N, F]), D


def slsqp_stage1(p, mu_inf=False):
    """Stage I (69)-(74) solved in the full space with SLSQP: returns optimal KE and v+."""
    M, solve_vt = full_space(p)
    nc = p.nc
    if mu_inf:
        J = np.vstack([p.N, p.S, p.T])
    else:
        J, _ = coulomb_rows(p)
    m = J.shape[0]
    v_aff0, _ = solve_vt(np.zeros(p.nv))
    # dv+/df with impulses c = dt f (force units keep SLSQP well scaled)
    Vc = np.column_stack([solve_vt(p.dt * J[i])[0] - v_aff0 for i in range(m)])

    def ke(c):
        v = v_aff0 + Vc @ c
        return 0.5 * v @ M @ v

    def ke_grad(c):
        return Vc.T @ (M @ (v_aff0 + Vc @ c))
    cons = [{"type": "ineq", "fun": lambda c: p.N @ (v_aff0 + Vc @ c) + p.phi / p.dt,
             "jac": lambda c: p.N @ Vc}]
    bounds = [(0, None)] * nc + ([(None, None)] * (m - nc) if mu_inf else [(0, None)] * (m - nc))
    if not mu_inf:
        Fr = np.zeros((nc, m))
        for i in range(nc):
            Fr[i, i] = p.mu[i]
            Fr[i, nc + 4 * i: nc + 4 * i + 4] = -1.0
        cons.append({"type": "ineq", "fun": lambda c: Fr @ c, "jac": lambda c: Fr})
    c0 = np.zeros(m)
    c0[:nc] = MG / nc
    r = minimize(ke, c0, jac=ke_grad, bounds=bounds, constraints=cons, method="SLSQP",
                 options={"ftol": 1e-16, "maxiter": 2000})
    return r.fun, v_aff0 + Vc @ r.x, (J, Vc, v_aff0, solve_vt, M,
                                        Fr if not mu_inf else None, r.x)


def check_result(p, res, coulomb, k=4, tol_vel=1e-6):
    assert res.all_finite
    assert dynamics_residual_pin(p, res) <= 1e-8
    assert accel_residual(p, res) <= 1e-8
    f = res.contact_forces_local
    assert np.min(f[:, 0]) >= 0.0
    if coulomb:
        assert pyramid_violation(p, res, k) <= 1e-9 * max(1.0, f[:, 0].max())
    assert np.min(p.N @ res.v_next + p.phi / p.dt) >= -tol_vel


@pytest.mark.parametrize("method", METHODS)
def test_standing_four_feet(method):
    p = quadruped_problem()
    res = solve(method, p, SolverState())
    f = res.contact_forces_local
    assert abs(f[:, 0].sum() - MG) <= 1e-6 * MG
    # symmetric pose -> symmetric normal force distribution
    np.testing.assert_allclose(f[:, 0], MG / 4, rtol=1e-6)
    # net tangential force vanishes (Stage II may add internal squeeze forces, see docs)
    np.testing.assert_allclose(res.contact_forces_world.sum(axis=0), [0, 0, MG], atol=1e-5)
    assert np.max(np.abs(res.v_next)) <= 1e-8      # solver tolerance (proximal term)
    check_result(p, res, method == "qp_coulomb")
    assert "min_norm" in res.stats.flags
    # Stage II never increases the torque norm of Stage I
    s1 = solve(method, p, SolverState(), stage2=False)
    assert np.linalg.norm(res.tau) <= np.linalg.norm(s1.tau) + 1e-9
    np.testing.assert_allclose(s1.contact_forces_local[:, 0].sum(), MG, rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(3))
def test_random_states(method, seed):
    rng = np.random.default_rng(seed)
    m = quadruped_models()[0]
    for _ in range(4):
        v = 0.3 * rng.standard_normal(m.nv)
        qdd = 3.0 * rng.standard_normal(m.nv - 6)
        p = quadruped_problem(v=v, qdd=qdd, mu=float(rng.uniform(0.2, 1.2)))
        p.phi = p.phi + 1e-4 * rng.uniform(-1.0, 1.0, p.nc)
        for stage2 in (True, False):
            res = solve(method, p, SolverState(), stage2=stage2)
            assert "fallback" not in res.stats.flags
            check_result(p, res, method == "qp_coulomb")


@pytest.mark.parametrize("mu_inf", [False, True])
def test_stage1_matches_unreduced_qp(mu_inf):
    """Reduced Stage I (Sec. 6.2.2) = full-space (69)-(74) with Pinocchio's M (SLSQP)."""
    rng = np.random.default_rng(42)
    m = quadruped_models()[0]
    v = 0.2 * rng.standard_normal(m.nv)
    p = quadruped_problem(v=v, qdd=2.0 * rng.standard_normal(m.nv - 6), mu=0.4)
    ke_ref, v_ref, _ = slsqp_stage1(p, mu_inf)
    res = solve("qp_noslip" if mu_inf else "qp_coulomb", p, SolverState(), stage2=False)
    M, _ = pin_mass_bias(p.q_config, p.v)
    ke = 0.5 * res.v_next @ M @ res.v_next
    assert abs(ke - ke_ref) <= 1e-6 * abs(ke_ref) + 1e-9
    np.testing.assert_allclose(res.v_next, v_ref, atol=1e-4)


def test_stage2_is_min_norm_over_stage1_optima():
    """Stage II = min |tau|^2 over the Stage I optimal set (eqs. 102-103), checked with SLSQP on
    the unreduced problem: the optimal set is {c : (70)-(72), v+(c) = v+*} (the Stage I optimum
    v+* is unique because 1/2 v+^T M v+ is strictly convex in v+), a linear-constraint QP."""
    rng = np.random.default_rng(8)
    p = quadruped_problem(v=0.05 * rng.standard_normal(18), qdd=rng.standard_normal(12), mu=0.6)
    ke_ref, v_ref, (J, Vc, v0, solve_vt, M, Fr, f_ref) = slsqp_stage1(p)
    m = J.shape[0]
    _, t0 = solve_vt(np.zeros(p.nv))
    Tc = np.column_stack([solve_vt(p.dt * J[i])[1] - t0 for i in range(m)])
    cons = [{"type": "ineq", "fun": lambda c: Fr @ c, "jac": lambda c: Fr},
            {"type": "eq", "fun": lambda c: (v0 + Vc @ c - v_ref)[p.free],
             "jac": lambda c: Vc[p.free]}]
    r = minimize(lambda c: 0.5 * np.sum((t0 + Tc @ c) ** 2), f_ref,
                 jac=lambda c: Tc.T @ (t0 + Tc @ c), bounds=[(0, None)] * m,
                 constraints=cons, method="SLSQP", options={"ftol": 1e-15, "maxiter": 3000})
    assert r.success
    tau_ref = t0 + Tc @ r.x
    res = solve("qp_coulomb", p, SolverState())
    assert res.stats.info["stage2_status"] == "solved"
    assert res.stats.info["nullity"] == 3 * p.nc - 6      # dim ker(J_f^T), 6 base dofs
    # the returned solution is a Stage I optimum (eq. 103) ...
    assert 0.5 * res.v_next @ M @ res.v_next <= ke_ref + 1e-5 * abs(ke_ref) + 1e-12
    # ... with the minimum torque norm
    np.testing.assert_allclose(np.linalg.norm(res.tau), np.linalg.norm(tau_ref), rtol=1e-4)
    np.testing.assert_allclose(res.tau, tau_ref, atol=1e-3 * np.abs(tau_ref).max())


def test_high_friction_coulomb_equals_noslip():
    """mu -> large: the pyramid never binds, qp_coulomb (two-stage) = qp_noslip (two-stage).

    Standing (v = 0) with random desired accelerations keeps every contact loaded; with unloaded
    contacts the no-slip model would still apply tangential force at f_N = 0 (eqs. 40-41 hold
    for every candidate contact), which no finite mu reproduces."""
    rng = np.random.default_rng(3)
    m = quadruped_models()[0]
    for _ in range(3):
        p = quadruped_problem(qdd=rng.standard_normal(m.nv - 6), mu=100.0)
        a = solve("qp_coulomb", p, SolverState())
        b = solve("qp_noslip", p, SolverState())
        scale = max(1.0, np.abs(b.tau).max())
        np.testing.assert_allclose(a.tau, b.tau, atol=2e-5 * scale)
        np.testing.assert_allclose(a.v_next, b.v_next, atol=2e-6)   # OSQP tolerance


@pytest.mark.parametrize("stage2", [True, False])
def test_low_friction_slope(stage2):
    p = quadruped_problem(slope=0.3, mu=0.1)
    c = solve("qp_coulomb", p, SolverState(), stage2=stage2)
    n = solve("qp_noslip", p, SolverState(), stage2=stage2)
    fc, fn = c.contact_forces_local, n.contact_forces_local
    loaded = fc[:, 0] > 1e-3
    assert loaded.sum() >= 2
    gauge = np.abs(fc[:, 1]) + np.abs(fc[:, 2])      # k = 4 diamond gauge
    np.testing.assert_allclose(gauge[loaded], 0.1 * fc[loaded, 0], rtol=1e-4, atol=1e-6)
    assert np.all((p.S @ c.v_next)[loaded] > 1e-6)     # slides downhill
    ratio = np.hypot(fn[:, 1], fn[:, 2]).sum() / fn[:, 0].sum()
    assert ratio > 0.25                                  # no-slip: beyond mu, holds the robot
    assert np.max(np.abs(p.S @ n.v_next)) <= 1e-6
    check_result(p, c, True)
    check_result(p, n, False)


def test_solver_objects_are_reused_and_rebuilt_on_contact_change():
    """qp_solver="osqp": one OSQP object per contact set, updated in place."""

    def stage1_solver():  # the OSQP variant's Stage I solver of the four contacts
        return st.get("qp_coulomb").data["qp_coulomb_flow_osqp"].osqp.s1[4]

    st = SolverState()
    p = quadruped_problem(mu=0.7)
    osqp = {"qp_solver": "osqp"}
    r0 = solve("qp_coulomb", p, st, **osqp)
    assert r0.stats.info["setup"] and not r0.stats.warm_start_used
    s1 = stage1_solver()
    r1 = solve("qp_coulomb", quadruped_problem(mu=0.7, qdd=0.01 * np.ones(12)), st, **osqp)
    assert not r1.stats.info["setup"] and r1.stats.warm_start_used
    assert stage1_solver() is s1          # same OSQP object
    # contact set changes -> new setup, warm start mapped by identity
    p3 = quadruped_problem(mu=0.7, feet=("LF_foot", "RF_foot", "RH_foot"))
    r3 = solve("qp_coulomb", p3, st, **osqp)
    assert r3.stats.info["setup"] and r3.stats.warm_start_used
    check_result(p3, r3, True)
    st.reset()
    assert not solve("qp_coulomb", p, st, **osqp).stats.warm_start_used


def test_active_set_warm_start_follows_the_contact_set():
    """qp_solver="active_set" (default): the previous active set is the next tick's guess
    mapped by contact identity (a repeated problem then needs fewer iterations; after a contact
    set change the remaining contacts' rows); results equal the cold solve's to rounding."""
    st = SolverState()
    p = quadruped_problem(mu=0.7)
    r0 = solve("qp_coulomb", p, st)
    assert not r0.stats.warm_start_used and r0.stats.iterations > 0
    r1 = solve("qp_coulomb", p, st)
    assert r1.stats.warm_start_used and r1.stats.iterations < r0.stats.iterations, (
        r0.stats.iterations, r1.stats.iterations)
    np.testing.assert_allclose(r1.tau, r0.tau, rtol=0, atol=1e-9 * np.abs(r0.tau).max())
    p2 = quadruped_problem(mu=0.7, qdd=0.01 * np.ones(12))
    r2 = solve("qp_coulomb", p2, st)
    cold = solve("qp_coulomb", p2, SolverState())
    assert r2.stats.warm_start_used
    np.testing.assert_allclose(r2.tau, cold.tau, rtol=0, atol=1e-9 * np.abs(cold.tau).max())
    p3 = quadruped_problem(mu=0.7, feet=("LF_foot", "RF_foot", "RH_foot"))
    r3 = solve("qp_coulomb", p3, st)  # three feet's active rows mapped by identity
    assert r3.stats.warm_start_used
    check_result(p3, r3, True)
    cold3 = solve("qp_coulomb", p3, SolverState())
    np.testing.assert_allclose(r3.tau, cold3.tau, rtol=0, atol=1e-9 * np.abs(cold3.tau).max())
    with pytest.raises(ValueError, match="qp_solver"):
        solve("qp_coulomb", p, SolverState(), qp_solver="admm")
    with pytest.raises(ValueError, match="sparse"):
        solve("qp_coulomb", p, SolverState(), formulation="sparse")


@pytest.mark.parametrize("qp_solver,max_iter", [("osqp", 10), ("active_set", 1)])
def test_iteration_limit_flagged_but_consistent(qp_solver, max_iter):
    p = quadruped_problem(slope=0.3, mu=0.1)
    res = solve("qp_coulomb", p, SolverState(), max_iter=max_iter, qp_solver=qp_solver)
    assert "iteration_limit" in res.stats.flags
    assert res.all_finite
    # projected iterate: eq. (37), (38), bounds and pyramid still hold exactly
    assert dynamics_residual_pin(p, res) <= 1e-8 and accel_residual(p, res) <= 1e-8
    assert pyramid_violation(p, res, 4) <= 1e-9 * max(1.0, res.contact_forces_local[:, 0].max())


def test_infeasible_gives_flagged_fallback():
    """All dofs prescribed (no free dof): a desired motion into the ground cannot be realized."""
    p = quadruped_problem(v=np.zeros(18))
    p.actuated, p.free = np.arange(18), np.zeros(0, dtype=int)
    p.qdd_des = np.zeros(18)
    p.qdd_des[2] = -5.0                 # base accelerates downwards into the ground
    res = solve("qp_coulomb", p, SolverState())
    assert "fallback" in res.stats.flags and "infeasible" in res.stats.flags
    assert res.all_finite and not res.consistent


def _trajectory(n_ticks, amp, period, dt=1e-3):
    """Slowly varying standing motion: smooth sinusoidal desired joint accelerations."""
    m = quadruped_models()[0]
    phase = np.linspace(0.0, np.pi, 12)
    for i in range(n_ticks):
        t = i * dt
        qdd = amp * np.sin(2 * np.pi * t / period + phase)
        yield quadruped_problem(qdd=qdd, mu=0.8), qdd, m


def torque_changes(n_ticks, amp, period, **opts):
    st = SolverState()
    taus, qdds = [], []
    for p, qdd, _ in _trajectory(n_ticks, amp, period):
        res = solve("qp_coulomb", p, st, **opts)
        assert "fallback" not in res.stats.flags
        taus.append(res.tau)
        qdds.append(qdd)
    dtau = np.abs(np.diff(np.array(taus), axis=0)).max(axis=1)
    dqdd = np.abs(np.diff(np.array(qdds), axis=0)).max()
    return dtau, dqdd


def test_warm_started_two_stage_torques_are_continuous():
    """Four feet (indeterminate), slowly varying desired accelerations.

    Bound: the torques are a continuous, piecewise-smooth function of the desired accelerations,
    so per tick |d tau| <= L |d qdd_des| with L of the order of the generalized inertia. We use
    L = 10 ||M||_2 (the torque needed to change the accelerations of the whole mechanism by
    |d qdd_des| without contacts, times a factor 10 for the redistribution of contact forces) and
    assert max |d tau| <= L max |d qdd_des|; chatter between indeterminate solutions would give
    jumps of the size of the torques themselves, independent of |d qdd_des|.
    """
    p0 = quadruped_problem()
    M, _ = pin_mass_bias(p0.q_config, p0.v)
    L = 10.0 * np.linalg.norm(M, 2)
    dtau, dqdd = torque_changes(200, amp=2.0, period=0.2)
    assert dtau.max() <= L * dqdd
    # continuity: halving the rate of change roughly halves the torque steps
    dtau2, dqdd2 = torque_changes(200, amp=1.0, period=0.2)
    assert dtau2.max() <= 0.6 * dtau.max() + 1e-6


@pytest.mark.parametrize("method", ["qp_coulomb", "lcp_coulomb"])
def test_eight_edge_pyramid_on_slope(method):
    """k = 8: slip-limited forces lie on the boundary of the 8-edge pyramid."""
    p = quadruped_problem(slope=0.3, mu=0.1, k=8)
    res = solve(method, p, SolverState())
    f = res.contact_forces_local
    loaded = f[:, 0] > 1e-3
    assert loaded.sum() >= 2
    for i in np.nonzero(loaded)[0]:
        one = type(res)(**{**res.__dict__, "contact_forces_local": f[i:i + 1]})
        v = pyramid_violation(p.subset([i]), one, 8)
        assert abs(v) <= 1e-4 * f[i, 0]          # on the boundary (solver tolerance)
    assert dynamics_residual_pin(p, res) <= 1e-8 and accel_residual(p, res) <= 1e-8


@pytest.mark.parametrize("method", ["qp_coulomb", "qp_noslip", "lcp_coulomb"])
def test_with_geometry_contact_model(method):
    """Problems assembled by wbc_dynamics.contact.geometry.ContactModel (standing, 4 feet)."""
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace

    m, _, _, q0, _ = quadruped_models()
    from contact_methods_helpers import FEET

    cm = ContactModel(m, contact_links=list(FEET), features=[HalfSpace.ground(0.0, mu=0.8)],
                      margin=0.005, dt=1e-3)
    p = cm.build(q0, np.zeros(m.nv), np.zeros(m.nv - 6))
    assert p.nc == 4
    # qp_noslip with its (opt-in) scale-aware rank rule, which drops the dependent rows
    rule = {"rank_mass_ratio": 100.0} if method == "qp_noslip" else {}
    res = solve(method, p, SolverState(), **rule)
    assert "fallback" not in res.stats.flags
    assert abs(res.contact_forces_local[:, 0].sum() - MG) <= 1e-6 * MG
    np.testing.assert_allclose(res.contact_forces_world.sum(axis=0), [0, 0, MG], atol=1e-5)
    assert p.dynamics_residual(res.tau, res.impulses, res.v_next) <= 1e-12
    # the same problem from this file's independent assembly gives the same torques (with the
    # model's total mass: qp_noslip's rank_mass_ratio rule applies to both)
    import dataclasses

    ref_p = dataclasses.replace(quadruped_problem(mu=0.8), total_mass=p.total_mass,
                                validated=False).validate()
    ref = solve(method, ref_p, SolverState(), **rule)
    np.testing.assert_allclose(res.tau, ref.tau, atol=1e-6)
    if method == "qp_noslip":  # the nominal stance's dependent tangential rows are dropped
        assert "rows_dropped" in res.stats.flags and res.stats.info["rows_dropped"] == 5
        every = solve(method, p, SolverState())  # default: off, every tangential row
        assert "rows_dropped" not in every.stats.flags
        ref0 = solve(method, quadruped_problem(mu=0.8), SolverState())  # total_mass None
        np.testing.assert_allclose(every.tau, ref0.tau, atol=1e-6)


def test_bad_options_and_zero_contacts():
    p = quadruped_problem()
    with pytest.raises(ValueError, match="friction_edges"):
        solve("qp_coulomb", p, SolverState(), friction_edges=3)
    p0 = quadruped_problem(feet=())
    for method in ("qp_coulomb", "qp_noslip", "lcp_coulomb"):
        r = solve(method, p0, SolverState())
        assert r.stats.flags == ("no_contacts",) and r.all_finite


def test_grasped_box_is_held_by_friction():
    """Arm + free box (Sec. 1.5 / 7.1), four fingertip contacts, zero desired accelerations.

    Two-stage qp_coulomb stops the box (maximal dissipation) with a friction grasp: the box stays
    at rest, the fingertips squeeze it (f_N > 0) within the pyramid, and the contact forces on
    the robot add up to the box weight (Newton's law for the box, independent of the solver).
    lcp_coulomb returns a valid LCP (64) solution too; it need not squeeze (normal forces only
    arise from non-penetration), see docs/contact_methods.md."""
    from contact_helpers import arm_box

    arm, box, _, cm, qg, bpose = arm_box()
    p = cm.build(qg, np.zeros(arm.nv), np.zeros(arm.nv), body_q=[bpose], body_v=[np.zeros(6)])
    assert p.nc == 4 and p.nv == arm.nv + 6
    res = solve("qp_coulomb", p, SolverState())
    f = res.contact_forces_local
    w_box = box.total_mass * 9.81
    assert np.max(np.abs(res.v_next[p.free])) <= 1e-8
    assert np.all(f[:, 0] > 0.1)
    assert pyramid_violation(p, res, 4) <= 1e-9 * f[:, 0].max()
    np.testing.assert_allclose(res.contact_forces_world.sum(axis=0), [0, 0, -w_box], atol=1e-5)
    assert p.dynamics_residual(res.tau, res.impulses, res.v_next) <= 1e-12
    assert np.max(np.abs(res.qdd[p.actuated] - p.qdd_des)) <= 1e-8
    lcp = solve("lcp_coulomb", p, SolverState())
    assert lcp.stats.info["lcp_status"] == "success" and lcp.stats.residual <= 1e-9
    assert p.dynamics_residual(lcp.tau, lcp.impulses, lcp.v_next) <= 1e-12


@pytest.mark.parametrize("method", METHODS)
def test_sparse_lifted_formulation_matches_dense(method):
    """formulation="sparse" (u = J_f^T f, t = J_a^T f lifted, Stage II as J_f^T f = J_f^T f0)
    solves the same two QPs as the reduced dense form with the nullspace W."""
    rng = np.random.default_rng(12)
    m = quadruped_models()[0]
    for _ in range(3):
        p = quadruped_problem(v=0.05 * rng.standard_normal(m.nv),
                              qdd=rng.standard_normal(m.nv - 6), mu=0.6)
        d = solve(method, p, SolverState(), formulation="dense", qp_solver="osqp")
        s = solve(method, p, SolverState(), formulation="sparse", qp_solver="osqp")
        assert s.stats.info["formulation"] == "sparse" and d.stats.info["formulation"] == "dense"
        assert s.stats.info["nullity"] == d.stats.info["nullity"] == 6
        scale = max(1.0, np.abs(d.tau).max())
        np.testing.assert_allclose(s.tau, d.tau, atol=1e-4 * scale)
        np.testing.assert_allclose(s.v_next, d.v_next, atol=1e-6)
        check_result(p, s, method == "qp_coulomb")
    st = SolverState()
    for _ in range(3):      # warm path of the sparse solvers
        p = quadruped_problem(qdd=0.1 * rng.standard_normal(12))
        r = solve(method, p, st, formulation="sparse", qp_solver="osqp")
        d = solve(method, p, SolverState(), formulation="dense", qp_solver="osqp")
        np.testing.assert_allclose(r.tau, d.tau, atol=1e-4 * max(1.0, np.abs(d.tau).max()))
    assert not r.stats.info["setup"] and r.stats.warm_start_used
    with pytest.raises(ValueError, match="formulation"):
        solve(method, p, SolverState(), formulation="lifted", qp_solver="osqp")


def test_sparse_stage2_solver_follows_the_width_of_its_fixed_rows():
    """formulation="sparse" with the contact-velocity objective: where the linear term varies
    along the internal forces, Stage II also fixes it (one more equality row in the lifted
    problem), so its OSQP pattern changes; the solver is then set up anew rather than updated
    in place with the other pattern (which raised IndexError on the quadruped's third tick)."""
    from dense_qp_helpers import tick_states

    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    m = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    info = robot_info("quadruped")
    cm = ContactModel(m, contact_links=info["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3,
                      phi_deadband=1e-4, passive_impact=True, separation_tolerance=0.05)
    opts = {"formulation": "sparse", "qp_solver": "osqp", "sticking_correction": True,
            "stage1_objective": "contact_velocity", "friction_gap": 1e-6}
    st = SolverState()
    setups = 0
    for q, v, qdd in tick_states(m, np.array(info["standing_q"]), 6, np.random.default_rng(11)):
        res = solve("qp_coulomb", cm.build(q, v, qdd), st, **opts)
        assert "fallback" not in res.stats.flags and np.all(np.isfinite(res.tau))
        assert res.stats.info["formulation"] == "sparse"
        setups += bool(res.stats.info.get("setup2"))
    assert setups >= 2  # the first tick's and at least one on a change of width
