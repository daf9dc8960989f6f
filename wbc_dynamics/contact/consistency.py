"""Sec. 4.5 consistency correction and indeterminacy post-processing for ``lcp_noslip``.

* :func:`consistent_accelerations` solves the correction QP (46)-(51): the post-step velocity that
  deviates minimally (least squares) from the desired actuated velocities subject to
  non-interpenetration (47), no-slip (48)-(49), the first-order dynamics (50)-(51) and compressive
  normal impulses. The QP is always feasible (tau = 0, Sec. 4.5 and the time-stepping argument).
  It is posed in the impulse variables ``x = [dt tau; c_N; c_S; c_T]`` with
  ``v+ = f* + M^-1 H^T x``, ``H = [P; N; S; T]``, so only M^-1 is needed, and solved with OSQP.
* :func:`min_norm_normal_impulses` selects, among all solutions of the (PSD, possibly
  indeterminate) no-slip LCP, the one with minimum-norm normal impulses: for a PSD LCP every
  solution has the same ``Q z`` (hence the same v+), so the solution set is
  ``{z >= 0 : z = z* + Z y, z_i = 0 where w_i > 0}`` with Z a null-space basis of ``Q_AA``.

Neither function is on the nominal 1 kHz path (they run only for inconsistent inputs or when
requested).
"""

from __future__ import annotations

import numpy as np
import osqp
import scipy.sparse as sp

from .problem import ContactProblem

__all__ = ["consistent_accelerations", "min_norm_normal_impulses", "projected_inverse_inertia"]


def _osqp_solve(P, q, A, l, u, eps=1e-10, max_iter=50000, polish=True):
    solver = osqp.OSQP()
    solver.setup(
        sp.csc_matrix(sp.triu(P)),
        q,
        sp.csc_matrix(A),
        l,
        u,
        verbose=False,
        eps_abs=eps,
        eps_rel=eps,
        polishing=polish,
        max_iter=max_iter,
        scaled_termination=False,
    )
    res = solver.solve(raise_error=False)
    status = str(res.info.status)
    ok = (
        status in ("solved", "solved inaccurate")
        and res.x is not None
        and np.all(np.isfinite(res.x))
    )
    return res.x, ok


def consistent_accelerations(
    problem: ContactProblem,
    eps_rel: float = 1e-8,
    warm: np.ndarray | None = None,
    max_iter: int | None = None,
    rank_tol: float = 1e-9,
    tol: float = 1e-10,
    dep_tol: float = 1e-4,
) -> tuple[np.ndarray, bool]:
    """Minimally deviating consistent accelerations, Sec. 4.5 QP (46)-(51).

    The QP ``min |P v+ - qdot_des|`` s.t. (47)-(51) and ``c_N >= 0`` is solved as the limit
    ``eps -> 0`` of the strictly convex problem
    ``min 1/2 |v+ - f*|_M^2 + 1/(2 eps) |P v+ - qdot_des|^2`` s.t. ``N v+ >= -phi/dt``,
    ``S v+ = T v+ = 0`` (the inverse-dynamics rows of the MLCP become soft). Its KKT conditions
    are the no-slip MLCP (42) with ``eps`` added to the P diagonal, so it is solved exactly by the
    same Alg. 1 + Alg. 2 kernel (every S/T row independent of the others is kept hard; dropped
    rows are then implied, Appendix E, because all S/T right-hand sides are zero). The minimizer
    differs from the exact eq. (46) minimizer by O(eps); ties are broken by the kinetic metric.
    ``eps = eps_rel * max diag(P M^-1 P^T)``.

    Returns:
        (qdd_consistent (nu,) [rad/s^2] = (P v+ - v[actuated]) / dt, ok).
    """
    from .lcp_noslip import lcp_noslip_kernel

    p = problem
    if p.nu == 0:
        return np.zeros(0), True
    eps = eps_rel * float(np.max(np.diag(p.Minv)[p.actuated]))
    if warm is None:
        warm = np.zeros(p.nc, dtype=np.bool_)
    if max_iter is None:
        max_iter = 4 * p.nc + 20
    out = lcp_noslip_kernel(
        p.Minv,
        p.h,
        p.v,
        p.actuated,
        p.qdd_des,
        p.N,
        p.S,
        p.T,
        p.phi,
        float(p.dt),
        warm,
        max_iter,
        rank_tol,
        tol,
        eps,
        dep_tol,
    )
    v_next, status = out[4], out[8]
    qdd = (v_next[p.actuated] - p.v[p.actuated]) / p.dt
    ok = status == 0 and bool(np.all(np.isfinite(qdd)))
    return qdd, ok


def projected_inverse_inertia(problem: ContactProblem, rank_tol: float = 1e-9) -> np.ndarray:
    """``K = M^-1 - M^-1 G^T (G M^-1 G^T)^-1 G M^-1`` for the Alg. 1 rows G (see lcp_noslip)."""
    from .lcp_noslip import _alg1

    G, W, L, nG, kind, idx = _alg1(problem.Minv, problem.actuated, problem.S, problem.T, rank_tol)
    U = np.linalg.solve(L[:nG, :nG], W[:, :nG].T)
    return problem.Minv - U.T @ U


def min_norm_normal_impulses(
    problem: ContactProblem, cN: np.ndarray, w: np.ndarray, tol: float = 1e-9
) -> tuple[np.ndarray, bool]:
    """Minimum-norm normal impulses among all solutions of the no-slip LCP (indeterminacy).

    Args:
        cN: (nc,) a solution z* of the LCP [N s]; w: (nc,) its complementary slack [m/s].
        tol: relative tolerance for w_i = 0 and for the null space of Q_AA.

    Returns:
        (z, changed): z = argmin ||z|| over {z >= 0, z_i = 0 if w_i > tol, Q_AA z = Q_AA z*}.
    """
    z0 = np.asarray(cN, dtype=np.float64)
    wscale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
    A = np.flatnonzero(w <= tol * wscale)
    if A.size < 2:
        return z0, False
    K = projected_inverse_inertia(problem)
    NA = problem.N[A]
    Q = NA @ K @ NA.T
    Q = 0.5 * (Q + Q.T)
    evals, evecs = np.linalg.eigh(Q)
    emax = max(float(evals[-1]), 1e-300)
    Z = evecs[:, evals <= 1e-9 * emax]
    if Z.shape[1] == 0:
        return z0, False
    za = z0[A]
    # minimize ||za + Z y||^2 s.t. za + Z y >= 0  (Z orthonormal -> Hessian = I)
    k = Z.shape[1]
    y, ok = _osqp_solve(
        np.eye(k), Z.T @ za, Z, -za, np.full(A.size, np.inf), eps=1e-12, polish=False
    )
    if not ok:
        return z0, False
    zn = za + Z @ y
    zn = np.maximum(zn, 0.0)
    out = np.zeros_like(z0)
    out[A] = zn
    return out, True
