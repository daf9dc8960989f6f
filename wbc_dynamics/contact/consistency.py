"""Sec. 4.5 consistency correction and indeterminacy post-processing for ``lcp_noslip``.

* :func:`consistent_accelerations` solves the correction QP (46)-(51): the post-step velocity that
  deviates minimally (least squares) from the desired actuated velocities subject to
  non-interpenetration (47), no-slip (48)-(49), the first-order dynamics (50)-(51) and compressive
  normal impulses. The QP is always feasible (tau = 0, Sec. 4.5 and the time-stepping argument).
  It is solved as the eps -> 0 limit of the no-slip MLCP with soft inverse-dynamics rows, by the
  same compiled kernel as ``lcp_noslip`` (only M^-1 is needed).
* :func:`min_norm_normal_impulses` selects, among all solutions of the (PSD, possibly
  indeterminate) no-slip LCP, the one with minimum-norm normal impulses: for a PSD LCP every
  solution has the same ``Q z`` (hence the same v+), so the solution set is
  ``{z >= 0 : z = z* + Z y, z_i = 0 where w_i > 0}`` with Z a null-space basis of ``Q_AA``;
  a compiled primal active-set method projects onto it.

Both are compiled (numba) and run only for inconsistent inputs or when requested.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .lcp_noslip import _alg1, lcp_noslip_kernel
from .problem import ContactProblem

__all__ = ["consistent_accelerations", "min_norm_normal_impulses", "projected_inverse_inertia"]


def consistent_accelerations(
    problem: ContactProblem,
    eps_rel: float = 1e-6,
    warm: np.ndarray | None = None,
    max_iter: int | None = None,
    rank_tol: float = 1e-6,
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
    ``eps = eps_rel * max diag(P M^-1 P^T)``. The soft problem is deliberately ill-conditioned
    (contacts whose normals are coupled only through the soft joints are O(eps) apart), so
    Alg. 2 runs with a pivot tolerance of ``1e-3 * eps_rel`` (Alg. 1 keeps ``rank_tol``).

    Returns:
        (qdd_consistent (nu,) [rad/s^2] = (P v+ - v[actuated]) / dt, ok).
    """
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
        int(max_iter),
        float(rank_tol),
        float(tol),
        float(eps),
        float(dep_tol),
        float(1e-3 * eps_rel),
    )
    v_next, status = out[4], out[8]
    qdd = (v_next[p.actuated] - p.v[p.actuated]) / p.dt
    ok = status == 0 and bool(np.all(np.isfinite(qdd)))
    return qdd, ok


def projected_inverse_inertia(problem: ContactProblem, rank_tol: float = 1e-6) -> np.ndarray:
    """``K = M^-1 - M^-1 G^T (G M^-1 G^T)^-1 G M^-1`` for the Alg. 1 rows G (see lcp_noslip)."""
    G, W, L, nG, kind, idx = _alg1(problem.Minv, problem.actuated, problem.S, problem.T, rank_tol)
    U = np.linalg.solve(L[:nG, :nG], W[:, :nG].T)
    return problem.Minv - U.T @ U


@njit(cache=True)
def _nonneg_projection(Z, za, max_iter, tol):
    """Primal active-set method: y = argmin 1/2 |za + Z y|^2 s.t. za + Z y >= 0.

    Z (nA, k) has orthonormal columns, za >= 0 (so y = 0 is feasible). Equality subproblems
    are solved with pseudo-inverses (degenerate / dependent active rows allowed).
    Returns (y, converged).
    """
    nA, k = Z.shape
    y = np.zeros(k)
    y0 = -(Z.T @ za)
    W = np.zeros(nA, dtype=np.bool_)
    for _ in range(max_iter):
        m = 0
        for i in range(nA):
            if W[i]:
                m += 1
        A = np.zeros((m, k))
        b = np.zeros(m)
        j = 0
        for i in range(nA):
            if W[i]:
                A[j] = Z[i]
                b[j] = za[i]
                j += 1
        if m > 0:
            Ap = np.linalg.pinv(A)
            ystar = y0 - Ap @ (A @ y0 + b)
        else:
            ystar = y0.copy()
        p = ystar - y
        pn = 0.0
        for c in range(k):
            pn = max(pn, abs(p[c]))
        if pn <= tol:
            if m == 0:
                return y, True
            lam = np.linalg.pinv(A.T) @ (ystar - y0)
            jmin = 0
            for jj in range(m):
                if lam[jj] < lam[jmin]:
                    jmin = jj
            if lam[jmin] >= -tol:
                return y, True
            j = 0
            for i in range(nA):
                if W[i]:
                    if j == jmin:
                        W[i] = False
                        break
                    j += 1
            continue
        alpha = 1.0
        block = -1
        for i in range(nA):
            if W[i]:
                continue
            zp = 0.0
            zi = za[i]
            for c in range(k):
                zp += Z[i, c] * p[c]
                zi += Z[i, c] * y[c]
            if zp < -1e-15:
                ai = max(zi, 0.0) / (-zp)
                if ai < alpha:
                    alpha = ai
                    block = i
        for c in range(k):
            y[c] += alpha * p[c]
        if block >= 0:
            W[block] = True
    return y, False


@njit(cache=True)
def _min_norm_kernel(Minv, act, S, T, N, z0, w, tol, rank_tol, max_iter):
    nc = z0.shape[0]
    idx = np.empty(nc, dtype=np.int64)
    nA = 0
    for i in range(nc):
        if w[i] <= tol:
            idx[nA] = i
            nA += 1
    out = z0.copy()
    if nA < 2:
        return out, False
    G, W, L, nG, kind, ix = _alg1(Minv, act, S, T, rank_tol, 0.0)
    if nG < 0:
        return out, False
    nv = Minv.shape[0]
    U = np.zeros((nG, nv))
    for c in range(nv):
        for i in range(nG):
            s = W[c, i]
            for j in range(i):
                s -= L[i, j] * U[j, c]
            U[i, c] = s / L[i, i]
    K = Minv - U.T @ U
    NA = np.empty((nA, nv))
    za = np.empty(nA)
    for j in range(nA):
        NA[j] = N[idx[j]]
        za[j] = max(z0[idx[j]], 0.0)
    Q = NA @ K @ NA.T
    Q = 0.5 * (Q + Q.T)
    evals, evecs = np.linalg.eigh(Q)
    emax = max(evals[nA - 1], 1e-300)
    k = 0
    for j in range(nA):
        if evals[j] <= 1e-9 * emax:
            k += 1
    if k == 0:
        return out, False
    Z = np.ascontiguousarray(evecs[:, :k])  # eigh sorts ascending: null space first
    zscale = 1e-300
    for j in range(nA):
        zscale = max(zscale, za[j])
    y, ok = _nonneg_projection(Z, za, max_iter, 1e-13 * zscale)
    if not ok:
        return out, False
    zn = za + Z @ y
    for j in range(nA):
        out[idx[j]] = max(zn[j], 0.0)
    return out, True


def min_norm_normal_impulses(
    problem: ContactProblem, cN: np.ndarray, w: np.ndarray, tol: float = 1e-6,
    max_iter: int = 100, rank_tol: float = 1e-6,
) -> tuple[np.ndarray, bool]:
    """Minimum-norm normal impulses among all solutions of the no-slip LCP (indeterminacy).

    Every solution of the PSD LCP has the same ``Q z`` (hence the same v+), so the solution set
    is ``{z >= 0 : z = z* + Z y, z_i = 0 where w_i > 0}`` with Z an orthonormal null-space basis
    of ``Q_AA`` (A: contacts with w_i = 0). The minimum-norm element is found by a compiled
    primal active-set method (projection onto that polyhedron).

    Args:
        cN: (nc,) a solution z* of the LCP [N s]; w: (nc,) its complementary slack [m/s].
        tol: [m/s] contacts with w_i <= tol count as touching (set A).
        rank_tol: Alg. 1 tolerance (must match the solve that produced cN).

    Returns:
        (z, changed): z = argmin ||z|| over the solution set; (cN, False) if nothing to do or the
        active-set method did not converge within ``max_iter``.
    """
    p = problem
    z, ok = _min_norm_kernel(p.Minv, p.actuated, p.S, p.T, p.N,
                             np.ascontiguousarray(cN, dtype=np.float64),
                             np.ascontiguousarray(w, dtype=np.float64), tol, rank_tol,
                             max_iter)
    return (z, True) if ok else (np.asarray(cN, dtype=np.float64), False)
