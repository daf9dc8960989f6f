"""lcp_noslip on random problems against an independent convex-QP reference (Zapolsky & Drumwright,
Sec. 4).

The no-slip MLCP (42)-(43) is the KKT system of the convex QP
``min 1/2 (v+ - f*)^T M (v+ - f*)`` s.t. ``P v+ = qdot_des``, ``S v+ = 0``, ``T v+ = 0``,
``N v+ >= -phi/dt`` (f* = v - dt M^-1 h), whose minimizer v+ is unique. The reference solves it
with OSQP at tight tolerance using M = inv(M^-1) (test only); Alg. 1/Alg. 2 must reproduce v+,
satisfy complementarity, and never leave force on separating contacts.
"""

import numpy as np
import osqp
import pytest
import scipy.sparse as sp

from wbc_dynamics.contact import ContactProblem, SolverState, solve


def _random_problem(rng, nv=12, nu=6, nc=10, dup=0):
    A = rng.standard_normal((nv, nv))
    M = A @ A.T + nv * np.eye(nv)
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + Minv.T)
    act = np.sort(rng.choice(nv, nu, replace=False))
    free = np.setdiff1d(np.arange(nv), act)
    N = rng.standard_normal((nc, nv))
    S = rng.standard_normal((nc, nv))
    T = rng.standard_normal((nc, nv))
    if dup:  # linearly dependent normal rows (Appendix F) and duplicated tangent rows
        N[-dup:] = rng.standard_normal((dup, 3)) @ N[:3]
        S[-dup:] = S[:dup]
    phi = np.abs(rng.standard_normal(nc)) * 1e-3 * (rng.random(nc) < 0.5)
    return M, ContactProblem(
        dt=1e-3, Minv=Minv, h=10 * rng.standard_normal(nv), v=np.zeros(nv), actuated=act,
        free=free, qdd_des=np.zeros(nu), N=N, S=S, T=T, phi=phi, mu=np.ones(nc),
    ).validate()


def _reference_vplus(M, p):
    fstar = p.free_velocity()
    nv = p.nv
    Pm = np.zeros((p.nu, nv))
    Pm[np.arange(p.nu), p.actuated] = 1.0
    A = np.vstack([Pm, p.S, p.T, p.N])
    lo = np.concatenate([p.desired_velocity(), np.zeros(2 * p.nc), -p.phi / p.dt])
    hi = np.concatenate([p.desired_velocity(), np.zeros(2 * p.nc), np.full(p.nc, np.inf)])
    s = osqp.OSQP()
    s.setup(sp.csc_matrix(np.triu(M)), -M @ fstar, sp.csc_matrix(A), lo, hi, verbose=False,
            eps_abs=1e-12, eps_rel=1e-12, max_iter=200000, polishing=True)
    r = s.solve(raise_error=False)
    return r.x, str(r.info.status)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("shape", [(12, 6, 3, 0), (12, 6, 5, 0), (18, 12, 8, 2), (18, 12, 30, 4)])
def test_lcp_noslip_matches_qp_reference(seed, shape):
    nv, nu, nc, dup = shape
    rng = np.random.default_rng(1000 * seed + nc)
    M, p = _random_problem(rng, nv, nu, nc, dup)
    res = solve("lcp_noslip", p, SolverState(), consistency_tol=1e-7)
    vref, status = _reference_vplus(M, p)
    if "inconsistent_corrected" in res.stats.flags or "fallback" in res.stats.flags:
        # only allowed when the constraints are infeasible (then the QP is infeasible too)
        assert status != "solved", (res.stats, status)
        return
    assert status == "solved"
    np.testing.assert_allclose(res.v_next, vref, atol=1e-7 * max(1.0, np.abs(vref).max()))
    w = p.N @ res.v_next + p.phi / p.dt
    z = res.impulses[:, 0]
    assert np.min(w) > -1e-9 and np.min(z) >= 0.0
    assert np.max(np.abs(z * w)) < 1e-9 * max(1.0, z.max())
    # eq. (37) with the dense M
    gen = -p.dt * p.h
    gen[p.actuated] += p.dt * res.tau
    gen += p.N.T @ z + p.S.T @ res.impulses[:, 1] + p.T.T @ res.impulses[:, 2]
    scale = max(np.abs(gen).max(), p.dt * np.abs(p.h).max())
    np.testing.assert_allclose(M @ (res.v_next - p.v), gen, atol=1e-9 * scale)
    # warm start from this solution reproduces it in at most one pivot
    st = SolverState()
    solve("lcp_noslip", p, st)
    r2 = solve("lcp_noslip", p, st)
    assert r2.stats.iterations <= 1 or not r2.stats.warm_start_used
    np.testing.assert_allclose(r2.v_next, res.v_next, atol=1e-9)
