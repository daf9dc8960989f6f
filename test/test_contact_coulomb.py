"""lcp_coulomb (Zapolsky & Drumwright, Sec. 5): LCP (64) with a k-edge pyramid, Lemke, Alg. 3
MINDIFF.

Checks are independent of the solver: eq. (37) is verified with Pinocchio's CRBA mass matrix and
RNEA bias (the solver only sees the core's analytical M^-1), complementarity is recomputed from
the returned v+ and forces.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from contact_methods_helpers import (
    accel_residual,
    dynamics_residual_pin,
    pyramid_violation,
    quadruped_models,
    quadruped_problem,
)

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.lcp_coulomb import build_coulomb_lcp, solve_lcp_coulomb
from wbc_dynamics.contact.lcp_coulomb import warmup as lcp_warmup
from wbc_dynamics.contact.lemke import lcp_residual
from wbc_dynamics.contact.problem import MethodState

lcp_warmup()
MG = 4.8 * 9.81


def complementarity_checks(p, res, k, tol=1e-9):
    """(54)-(56) recomputed from the result: returns (max violation, per-contact slip speed)."""
    f = res.contact_forces_local
    vN = p.N @ res.v_next + p.phi / p.dt
    vs, vt = p.S @ res.v_next, p.T @ res.v_next
    scale_v = max(1.0, float(np.max(np.abs(p.N @ p.v))))
    assert np.all(f[:, 0] >= -tol)
    assert np.all(vN >= -tol * scale_v)
    assert np.max(np.abs(f[:, 0] * vN)) <= tol * max(1.0, f[:, 0].max())
    assert pyramid_violation(p, res, k) <= 1e-9 * max(1.0, f[:, 0].max())
    return np.hypot(vs, vt)


def test_standing_four_feet():
    p = quadruped_problem()
    res = solve("lcp_coulomb", p, SolverState())
    f = res.contact_forces_local
    assert res.stats.info["lcp_status"] == "success" and not res.stats.flags
    assert abs(f[:, 0].sum() - MG) <= 1e-6 * MG
    assert np.max(np.abs(f[:, 1:])) <= 1e-9
    # world-frame forces: vertical, summing to m g (force on the robot)
    np.testing.assert_allclose(res.contact_forces_world.sum(axis=0), [0.0, 0.0, MG], atol=1e-6)
    assert dynamics_residual_pin(p, res) <= 1e-8
    assert accel_residual(p, res) <= 1e-8
    complementarity_checks(p, res, 4)
    # the base stays at rest (v+ = 0 since v = 0 and the contacts stick)
    assert np.max(np.abs(res.v_next)) <= 1e-12


@pytest.mark.parametrize("k", [4, 8])
@pytest.mark.parametrize("seed", range(4))
def test_random_states_satisfy_model(k, seed):
    """Random velocities, desired accelerations and small gaps: every equation of Sec. 5."""
    rng = np.random.default_rng(seed)
    m, _, _, q0, _ = quadruped_models()
    nslide = 0
    for _ in range(5):
        v = 0.3 * rng.standard_normal(m.nv)
        qdd = 3.0 * rng.standard_normal(m.nv - 6)
        p = quadruped_problem(v=v, qdd=qdd, mu=float(rng.uniform(0.2, 1.2)), k=k)
        p.phi = p.phi + 1e-4 * rng.uniform(-1.0, 1.0, p.nc)
        res = solve("lcp_coulomb", p, SolverState())
        assert "fallback" not in res.stats.flags
        assert dynamics_residual_pin(p, res) <= 1e-8
        assert accel_residual(p, res) <= 1e-8
        assert res.stats.residual <= 1e-9
        slip = complementarity_checks(p, res, k)
        # maximal dissipation: a sliding, loaded contact has its friction on the pyramid boundary
        f = res.contact_forces_local
        for i in np.nonzero((slip > 1e-7) & (f[:, 0] > 1e-6))[0]:
            nslide += 1
            one = type(res)(**{**res.__dict__, "contact_forces_local": f[i:i + 1]})
            sub = p.subset([i])
            assert pyramid_violation(sub, one, k) >= -1e-7 * f[i, 0]
            # friction opposes the slip direction
            vs, vt = p.S[i] @ res.v_next, p.T[i] @ res.v_next
            assert f[i, 1] * vs + f[i, 2] * vt < 0.0
    assert nslide >= 1          # the sliding branch above was exercised


def test_lcp_residual_is_independent():
    p = quadruped_problem(v=0.1 * np.ones(18), qdd=np.linspace(-2, 2, 12), mu=0.5)
    Q, q, red, D = build_coulomb_lcp(p, 4)
    ms = MethodState()
    res = solve_lcp_coulomb(p, ms)
    nc = p.nc
    # rebuild z from the stored impulses? use the reported residual vs a recomputation
    assert res.stats.residual <= 1e-9
    assert Q.shape == (6 * nc, 6 * nc)
    # the LCP matrix block H is the reduced inverse inertia J_f K_ff J_f^T: symmetric PSD
    H = Q[:5 * nc, :5 * nc]
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    assert np.min(np.linalg.eigvalsh(H)) >= -1e-10
    # independent reduced inverse inertia from M (Pinocchio): K = M^-1 - M^-1 B G^-1 B^T M^-1
    from contact_methods_helpers import pin_mass_bias

    M, _ = pin_mass_bias(p.q_config, p.v)
    Mi = np.linalg.inv(M)          # test-only reference
    a = p.actuated
    K = Mi - Mi[:, a] @ np.linalg.solve(Mi[np.ix_(a, a)], Mi[a, :])
    F, _ = p.pyramid(4)
    J = np.vstack([p.N, F])
    np.testing.assert_allclose(H, J @ K @ J.T, atol=1e-9 * np.abs(H).max())
    assert lcp_residual(Q, q, np.zeros(Q.shape[0])) > 0.0   # gravity: the zero vector fails


def test_low_friction_slope_slips_on_pyramid_boundary():
    """mu = 0.1 on a 0.3 rad slope (tan 0.3 = 0.31 > mu): Coulomb forces are slip-limited."""
    p = quadruped_problem(slope=0.3, mu=0.1)
    res = solve("lcp_coulomb", p, SolverState())
    f = res.contact_forces_local
    loaded = f[:, 0] > 1e-3
    assert loaded.sum() >= 2
    # on the pyramid boundary: |f_s| + |f_t| = mu f_N (k = 4 diamond), for every loaded contact
    gauge = np.abs(f[:, 1]) + np.abs(f[:, 2])
    np.testing.assert_allclose(gauge[loaded], 0.1 * f[loaded, 0], rtol=1e-8)
    # the robot slides down the slope: contact velocity along the downhill tangent direction
    g_s = p.frames[:, :, 1] @ np.array([0.0, 0.0, -9.81])     # gravity along s (downhill > 0)
    assert np.all(g_s > 1.0)
    assert np.all((p.S @ res.v_next)[loaded] > 1e-6)
    assert np.all(f[loaded, 1] < 0.0)                           # friction points uphill
    # the no-slip method instead holds the robot with tangential/normal ratio ~ tan(0.3) > mu
    ns = solve("qp_noslip", p, SolverState())
    fn = ns.contact_forces_local
    ratio = np.hypot(fn[:, 1], fn[:, 2]).sum() / fn[:, 0].sum()
    assert ratio > 0.25
    assert np.max(np.abs(p.S @ ns.v_next)) <= 1e-6
    assert dynamics_residual_pin(p, res) <= 1e-8 and accel_residual(p, res) <= 1e-8


def test_single_sticking_contact_agrees_with_qp():
    """A single determinate, sticking contact (v = 0, qdd_des = 0): the LCP solution is a KKT
    point of the Stage I QP, so lcp_coulomb, qp_coulomb and qp_noslip must coincide."""
    p = quadruped_problem(feet=("LF_foot",), mu=2.0)
    a = solve("lcp_coulomb", p, SolverState())
    b = solve("qp_coulomb", p, SolverState())
    c = solve("qp_noslip", p, SolverState())
    assert np.max(np.abs(p.S @ a.v_next)) <= 1e-9     # sticking
    fs = a.contact_forces_local
    assert np.abs(fs[0, 1]) + np.abs(fs[0, 2]) < 2.0 * fs[0, 0]   # strictly inside the pyramid
    for other in (b, c):
        np.testing.assert_allclose(other.contact_forces_local, fs, atol=1e-5 * np.abs(fs).max())
        np.testing.assert_allclose(other.tau, a.tau, atol=1e-5 * max(1.0, np.abs(a.tau).max()))
        np.testing.assert_allclose(other.v_next, a.v_next, atol=1e-7)


def test_warm_start_basis_across_ticks():
    p = quadruped_problem(mu=0.8)
    st = SolverState()
    r0 = solve("lcp_coulomb", p, st)
    assert not r0.stats.warm_start_used
    r1 = solve("lcp_coulomb", p, st)
    assert r1.stats.warm_start_used and r1.stats.iterations == 0
    np.testing.assert_allclose(r1.tau, r0.tau, atol=1e-12)
    # a contact disappears: matched by identity, still warm
    p3 = quadruped_problem(mu=0.8, feet=("LF_foot", "LH_foot", "RH_foot"))
    r3 = solve("lcp_coulomb", p3, st)
    assert r3.stats.info["lcp_status"] == "success"
    assert dynamics_residual_pin(p3, r3) <= 1e-8
    st.reset()
    assert not solve("lcp_coulomb", p, st).stats.warm_start_used


def test_mindiff_returns_valid_solution_closest_to_previous_torques():
    p = quadruped_problem(mu=0.8)
    st = SolverState()
    plain = solve("lcp_coulomb", p, st)
    # previous torques = plain Lemke's; MINDIFF must return an LCP solution at least as close
    md = solve("lcp_coulomb", p, st, mindiff=True)
    assert md.stats.info["mindiff"] == "used" and md.stats.info["mindiff_solutions"] >= 2
    complementarity_checks(p, md, 4)
    assert dynamics_residual_pin(p, md) <= 1e-8
    assert np.linalg.norm(md.tau - plain.tau) <= 1e-9
    # from a different reference (zero torques): the minimum-norm enumerated solution
    st2 = SolverState()
    md0 = solve("lcp_coulomb", p, st2, mindiff=True)
    assert np.linalg.norm(md0.tau) <= np.linalg.norm(plain.tau) + 1e-12
    # bound on the number of contacts
    r = solve("lcp_coulomb", p, SolverState(), mindiff=True, max_mindiff_contacts=3)
    assert r.stats.info["mindiff"] == "skipped" and r.stats.info["lcp_status"] == "success"
    with pytest.raises(ValueError, match="max_mindiff_contacts"):
        solve("lcp_coulomb", p, SolverState(), mindiff=True, max_mindiff_contacts=3,
              mindiff_overflow="error")


def test_pivot_limit_gives_flagged_finite_fallback():
    p = quadruped_problem(slope=0.3, mu=0.1)
    st = SolverState()
    res = solve("lcp_coulomb", p, st, max_pivots=1, regularize=False)
    assert "fallback" in res.stats.flags and "iteration_limit" in res.stats.flags
    assert res.all_finite and not res.consistent
    np.testing.assert_array_equal(res.impulses, 0.0)
    # documented fallback: contact-free inverse dynamics, consistent with eq. (37)
    assert dynamics_residual_pin(p, res) <= 1e-8


def test_bad_options():
    p = quadruped_problem()
    with pytest.raises(ValueError, match="friction_edges"):
        solve("lcp_coulomb", p, SolverState(), friction_edges=5)
    with pytest.raises(ValueError, match="max_pivots"):
        solve("lcp_coulomb", p, SolverState(), max_pivots=-1)
    for name in ("tol", "sticking_gap", "min_norm_tol"):
        with pytest.raises(ValueError, match=name):
            solve("lcp_coulomb", p, SolverState(), **{name: float("nan")})


@pytest.mark.parametrize("method", ["lcp_coulomb", "qp_coulomb"])
def test_sticking_correction_makes_the_stance_feet_stick(method):
    """sticking_correction: random joint accelerations (not realizable with four fixed feet)
    are replaced by the nearest realizable ones; then every touching foot sticks (zero contact
    velocity in v+), the flag and the correction are reported, and lcp_noslip finds the
    corrected accelerations consistent (no Sec. 4.5 correction of its own)."""
    rng = np.random.default_rng(3)
    p = quadruped_problem(qdd=3.0 * rng.standard_normal(12), mu=10.0)
    assert np.all(p.phi <= 1e-9)
    plain = solve(method, p, SolverState())
    slip_plain = np.hypot(p.S @ plain.v_next, p.T @ plain.v_next).max()
    opts = {"stage1_objective": "contact_velocity"} if method == "qp_coulomb" else {}
    res = solve(method, p, SolverState(), sticking_correction=True, **opts)
    assert "inconsistent_corrected" in res.stats.flags and not res.consistent
    qdd_c = res.stats.info["qdd_corrected"]
    assert res.stats.info["qdd_correction"] == pytest.approx(np.abs(qdd_c - p.qdd_des).max())
    slip = np.hypot(p.S @ res.v_next, p.T @ res.v_next).max()
    assert slip_plain > 1e-3 and slip < 1e-6  # the plain solve slides the feet [m/s]
    # the corrected accelerations are realized (eq. (38)) and lcp_noslip accepts them as is
    np.testing.assert_allclose((res.v_next[p.actuated] - p.v[p.actuated]) / p.dt, qdd_c,
                               atol=1e-8 * (1 + np.abs(qdd_c).max()))
    ns = solve("lcp_noslip", dataclasses.replace(p, qdd_des=qdd_c), SolverState())
    assert "inconsistent_corrected" not in ns.stats.flags and "fallback" not in ns.stats.flags
