"""Sec. 4.5 consistency correction and indeterminacy post-processing for ``lcp_noslip``.

* :func:`consistent_accelerations` solves the correction QP (46)-(51): the post-step velocity that
  deviates minimally (least squares) from the desired actuated velocities subject to
  non-interpenetration (47), no-slip (48)-(49), the first-order dynamics (50)-(51) and compressive
  normal impulses. The QP is always feasible (tau = 0, Sec. 4.5 and the time-stepping argument).
  It is solved as the eps -> 0 limit of the no-slip MLCP with soft inverse-dynamics rows, by the
  same compiled kernel as ``lcp_noslip`` (only M^-1 is needed).
* :func:`min_norm_impulses` selects, among all solutions of the (PSD, possibly indeterminate)
  no-slip problem, the one with minimum-norm impulses (normal and tangential): every solution has
  the same v+, so the solution set is a polyhedron in the impulses (unactuated rows of eq. (37)
  fixed, ``c_N >= 0`` where touching, 0 where separating); its minimum-norm point is computed by
  a compiled dual semismooth Newton method.

* :func:`sticking_consistent_problem` (option ``sticking_correction`` of the Coulomb and QP
  methods) is the same QP with no-slip rows only at the touching contacts.

Each is one compiled kernel (:func:`consistent_qdd_kernel`, :func:`_sticking_qdd`,
:func:`min_norm_solution_kernel`) that the methods' compiled solves and ticks call; the Python
functions pack a :class:`~wbc_dynamics.contact.problem.ContactProblem` for them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.arena import NO_ARENA
from ..kernels.linalg import lu_solve, matvec
from ..kernels.separate import call_separately
from .noslip_kernels import _alg1, lcp_noslip_kernel, min_pivot
from .problem import ContactProblem, ContactResult, contact_weights

__all__ = [
    "consistent_accelerations",
    "min_norm_impulses",
    "min_norm_impulse_kernel",
    "projected_inverse_inertia",
    "sticking_consistent_problem",
    "consistent_qdd_kernel",
]


def consistent_accelerations(
    problem: ContactProblem,
    eps_rel: float = 1e-6,
    warm: np.ndarray | None = None,
    max_iter: int | None = None,
    rank_tol: float = 1e-6,
    tol: float = 1e-10,
    dep_tol: float = 1e-4,
    rank_mass_ratio: float = 100.0,
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
    qdd = np.zeros(p.nu)
    if warm is None:
        warm = np.zeros(p.nc, dtype=np.bool_)
    if max_iter is None:
        max_iter = 4 * p.nc + 20
    ok = consistent_qdd_kernel(p.Minv, p.h, p.v, p.actuated, p.qdd_des, p.N, p.S, p.T, p.phi,
                               float(p.dt), warm, int(max_iter), float(rank_tol), float(tol),
                               float(dep_tol), float(eps_rel), min_pivot(p, rank_mass_ratio),
                               qdd, NO_ARENA)
    return qdd, bool(ok)


@njit(cache=True)
def consistent_qdd_kernel(Minv, h, v, act, qdd_des, N, S, T, phi, dt, warm, max_iter, rank_tol,
                          tol, dep_tol, eps_rel, min_pivot, qdd, ar):
    """The Sec. 4.5 correction QP (46)-(51) of :func:`consistent_accelerations`, compiled: the
    soft-P no-slip MLCP (``eps = eps_rel * max diag(P M^-1 P^T)``, Alg. 2 pivot tolerance
    ``1e-3 * eps_rel``) solved by :func:`lcp_noslip_kernel`; writes the consistent
    accelerations ``(P v+ - v[actuated]) / dt`` [rad/s^2] into ``qdd`` (nu,) and returns True
    if the solve succeeded and they are finite. Temporaries from the arena ``ar``."""
    nu = act.shape[0]
    if nu == 0:
        return True
    dmax = -np.inf
    for a in range(nu):
        dmax = max(dmax, Minv[act[a], act[a]])
    corr = call_separately(lcp_noslip_kernel, (Minv, h, v, act, qdd_des, N, S, T, phi, dt, warm,
                                               max_iter, rank_tol, tol, eps_rel * dmax, dep_tol,
                                               1e-3 * eps_rel, min_pivot, ar))
    ok = corr[8] == 0
    vc = corr[4]
    for a in range(nu):
        qdd[a] = (vc[act[a]] - v[act[a]]) / dt
        ok = ok and np.isfinite(qdd[a])
    return ok


@njit(cache=True)
def _sticking_qdd(Minv, h, v, act, qdd_des, N, S, T, phi, dt, gap, min_pivot, qdd, ar):
    """:func:`sticking_consistent_problem`, compiled (also the fused ticks' sticking
    correction): the Sec. 4.5 QP (:func:`consistent_qdd_kernel`, eps_rel 1e-6, dep_tol 1e-4)
    with no-slip rows only at the touching contacts (``phi <= gap`` [m]), Alg. 1's floor
    ``min_pivot`` [1/kg], change tolerance 1e-6.

    Writes the accelerations to use into ``qdd`` (nu,) [rad/s^2] and returns 0 (unchanged:
    none touching or the change is below the tolerance; ``qdd = qdd_des``), 1 (corrected) or 2
    (the correction failed; ``qdd = qdd_des``, flag ``sticking_correction_failed``).
    Temporaries from the arena ``ar``.
    """
    nc, nv = N.shape
    nu = act.shape[0]
    for a in range(nu):
        qdd[a] = qdd_des[a]
    S2 = _ar.floats_2d(ar, nc, nv)
    T2 = _ar.floats_2d(ar, nc, nv)
    for i in range(nc):
        for c in range(nv):
            S2[i, c] = S[i, c]
            T2[i, c] = T[i, c]
    touching = 0
    for i in range(nc):
        if phi[i] <= gap:
            touching += 1
        else:
            for c in range(nv):
                S2[i, c] = 0.0
                T2[i, c] = 0.0
    if touching == 0 or nu == 0:
        return 0
    qdd_c = _ar.floats(ar, nu)
    ok = call_separately(consistent_qdd_kernel, (Minv, h, v, act, qdd_des, N, S2, T2, phi, dt,
                                                 _ar.flags_zero(ar, nc), 4 * nc + 20, 1e-6,
                                                 1e-10, 1e-4, 1e-6, min_pivot, qdd_c, ar))
    if not ok:
        return 2
    change = 0.0
    qmax = 0.0
    for a in range(nu):
        change = max(change, abs(qdd_c[a] - qdd_des[a]))
        qmax = max(qmax, abs(qdd_des[a]))
    if change > 1e-6 * (1.0 + qmax):
        for a in range(nu):
            qdd[a] = qdd_c[a]
        return 1
    return 0


def projected_inverse_inertia(problem: ContactProblem, rank_tol: float = 1e-6,
                              rank_mass_ratio: float = 100.0) -> np.ndarray:
    """``K = M^-1 - M^-1 G^T (G M^-1 G^T)^-1 G M^-1`` for the Alg. 1 rows G (see lcp_noslip)."""
    G, W, L, nG, kind, idx = _alg1(problem.Minv, problem.actuated, problem.S, problem.T, rank_tol,
                                   0.0, min_pivot(problem, rank_mass_ratio), NO_ARENA)
    U = np.linalg.solve(L[:nG, :nG], W[:, :nG].T)
    return problem.Minv - U.T @ U


@njit(cache=True)
def _exact_dual_step(u, e, kind, bd, ar):
    """Exact maximizer t >= 0 of the concave piecewise quadratic dual along a direction.

    theta(t) = t * bd - 1/2 sum_j proj_j(u_j + t e_j)^2 (+ const), proj_j = identity (kind 0),
    max(., 0) (kind 1), 0 (kind 2). theta' is non-increasing and piecewise linear with
    breakpoints -u_j / e_j of the kind-1 entries; walk them in order. Returns -1 if theta
    increases without bound (the primal problem is infeasible). Scratch from the arena ``ar``.
    """
    n = u.shape[0]
    bps = _ar.floats(ar, n)
    nb = 0
    s0 = bd  # theta'(t) = s0 - s1 t on the current segment
    s1 = 0.0
    for j in range(n):
        if kind[j] == 0:
            s0 -= e[j] * u[j]
            s1 += e[j] * e[j]
        elif kind[j] == 1:
            if u[j] > 0.0 or (u[j] == 0.0 and e[j] > 0.0):
                s0 -= e[j] * u[j]
                s1 += e[j] * e[j]
            if e[j] != 0.0:
                tj = -u[j] / e[j]
                if tj > 0.0:
                    bps[nb] = tj
                    nb += 1
    # the breakpoints' order (insertion sort: a few entries; equal breakpoints are crossed
    # together below, so their order does not matter)
    order = _ar.ints(ar, np.int64(nb))  # np.int64: numba types nb's first value as a literal
    for k in range(nb):
        j = k
        while j > 0 and bps[order[j - 1]] > bps[k]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = k
    # entries j whose breakpoint is bps[order[k]] are found again by recomputing -u/e
    t_lo = 0.0
    for k in range(nb + 1):
        t_hi = bps[order[k]] if k < nb else np.inf
        if s1 > 0.0:
            t_star = s0 / s1
            if t_star <= t_hi:
                return max(t_star, t_lo)
        elif s0 <= 0.0:
            return t_lo
        if k == nb:
            return -1.0
        # cross the breakpoint: the entries with this breakpoint change activity
        for j in range(n):
            if kind[j] == 1 and e[j] != 0.0 and -u[j] / e[j] == t_hi:
                if e[j] > 0.0:  # becomes positive
                    s0 -= e[j] * u[j]
                    s1 += e[j] * e[j]
                else:  # becomes clipped
                    s0 += e[j] * u[j]
                    s1 -= e[j] * e[j]
        t_lo = t_hi
    return -1.0


@njit(cache=True)
def min_norm_impulse_kernel(A, b, kind, max_iter, tol, ar):
    """Minimum-norm vector c with ``A c = b``, ``c_j >= 0`` (kind 1), ``c_j = 0`` (kind 2).

    Solved through the dual: ``c(lam) = proj(A^T lam)``, maximize
    ``b^T lam - 1/2 |c(lam)|^2`` (concave, piecewise quadratic, dimension = rows of A) by a
    semismooth Newton method (generalized Hessian ``A D A^T``, D = active indicator, a tiny
    Levenberg term for rank-deficient D) with an exact line search. Finitely convergent on the
    correct active set; each iteration is an (m x m) solve, m = number of free dofs (6 for a
    floating base, + 6 per free body).

    Returns (c, iterations, converged) where converged means ``max|A c - b| <= tol``. Buffers
    and ``c`` from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`).
    """
    m, n = A.shape
    lam = _ar.floats_zero(ar, m)
    c = _ar.floats_zero(ar, n)
    u = _ar.floats_zero(ar, n)
    if m == 0:
        return c, 0, True
    trace = 0.0
    for i in range(m):
        for j in range(n):
            trace += A[i, j] * A[i, j]
    reg = 1e-14 * trace / m + 1e-300
    H = _ar.floats_2d(ar, m, m)
    res = _ar.floats(ar, m)
    e = _ar.floats(ar, n)
    active = _ar.ints(ar, n)
    # loops on preallocated buffers, not A @ c / np.linalg.solve: each of those allocates and
    # calls BLAS / LAPACK, which cost more than this (m x m, m <= ~12) arithmetic
    for it in range(max_iter):
        na = 0
        for j in range(n):
            s = 0.0
            for i in range(m):
                s += A[i, j] * lam[i]
            u[j] = s
            if kind[j] == 0:
                c[j] = s
            elif kind[j] == 1:
                c[j] = s if s > 0.0 else 0.0
            else:
                c[j] = 0.0
            # the first step (lam = 0: every u_j = 0) takes every sign-constrained entry as
            # active -- the unconstrained minimum-norm direction -- instead of none (a bare
            # gradient step): one step when that already is >= 0 (a load shared by every
            # contact), the same maximizer (an ascent direction with an exact line search)
            if kind[j] == 0 or (kind[j] == 1 and (s > 0.0 or it == 0)):
                active[na] = j
                na += 1
        rmax = 0.0
        for i in range(m):
            s = b[i]
            for j in range(n):
                s -= A[i, j] * c[j]
            res[i] = s
            rmax = max(rmax, abs(s))
        if rmax <= tol:
            return c, it, True
        for i in range(m):  # generalized Hessian A D A^T (symmetric) + reg I
            for k in range(i + 1):
                s = 0.0
                for a in range(na):
                    j = active[a]
                    s += A[i, j] * A[k, j]
                H[i, k] = s
                H[k, i] = s
            H[i, i] += reg
        # res becomes the Newton direction d (H >= reg I: singular only for non-finite data)
        if not lu_solve(H, res, 0.0):
            return c, it, False
        bd = 0.0
        for i in range(m):
            bd += b[i] * res[i]
        for j in range(n):
            s = 0.0
            for i in range(m):
                s += A[i, j] * res[i]
            e[j] = s
        t = _exact_dual_step(u, e, kind, bd, ar)
        if not t >= 0.0:  # unbounded dual (infeasible primal) or a non-finite direction
            return c, it, False
        for i in range(m):
            lam[i] += t * res[i]
    return c, max_iter, False


@njit(cache=True)
def min_norm_solution_kernel(Minv, act, free, N, S, T, cN, cS, cT, tau, v_next, w, weight,
                             touch_tol, dt, max_iter, ar):
    """Minimum weighted-norm impulses among all no-slip solutions with the same v+ (see
    :func:`min_norm_impulses`): ``argmin sum_i weight_i |c_i|^2``, ``weight`` (nc,) >= 1 per
    contact (all 1: the minimum-norm impulses). Returns (cN, cS, cT, tau, v_next, iterations,
    converged); on failure the inputs are returned unchanged (copies). Results and
    temporaries from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`)."""
    nc = N.shape[0]
    nf = free.shape[0]
    nu = act.shape[0]
    n = 3 * nc
    A = _ar.floats_2d_zero(ar, nf, n)
    kind = _ar.ints_zero(ar, n)
    c0 = _ar.floats_zero(ar, n)
    cmax = 0.0
    amax = 0.0
    # the weighted problem is the unweighted one in c' = sqrt(weight) c: contact i's columns
    # scaled by 1 / sqrt(weight_i) (positive: the sign constraints are unchanged); weight 1
    # scales by exactly 1.0, so all-ones weights give the unweighted numbers bit for bit
    sq = _ar.floats(ar, nc)
    for i in range(nc):
        sq[i] = math.sqrt(weight[i])
    for i in range(nc):
        st_row = False
        for c in range(N.shape[1]):
            if S[i, c] != 0.0 or T[i, c] != 0.0:
                st_row = True
                break
        kind[3 * i] = 1 if (w[i] <= touch_tol or cN[i] > 0.0) else 2
        kind[3 * i + 1] = 0 if st_row else 2
        kind[3 * i + 2] = 0 if st_row else 2
        c0[3 * i] = cN[i]
        c0[3 * i + 1] = cS[i]
        c0[3 * i + 2] = cT[i]
        for f in range(nf):
            A[f, 3 * i] = N[i, free[f]]
            A[f, 3 * i + 1] = S[i, free[f]]
            A[f, 3 * i + 2] = T[i, free[f]]
            amax = max(amax, abs(N[i, free[f]]), abs(S[i, free[f]]), abs(T[i, free[f]]))
    for j in range(n):
        cmax = max(cmax, abs(c0[j]))
    b = _ar.floats(ar, nf)
    matvec(A, c0, b)
    for i in range(nc):
        if sq[i] != 1.0:
            for f in range(nf):
                for r in range(3):
                    A[f, 3 * i + r] /= sq[i]
    # free rows of eq. (37) to 1e-10 relative (the tests' eq. (37) bound is 1e-8); tighter is
    # not reachable when the active columns are nearly rank deficient (sole corners: cond ~1e14)
    tol = 1e-10 * max(amax * cmax, 1e-300)
    c, it, ok = min_norm_impulse_kernel(A, b, kind, max_iter, tol, ar)
    for i in range(nc):
        if sq[i] != 1.0:
            for r in range(3):
                c[3 * i + r] /= sq[i]
    if not ok:
        return (_ar.floats_copy(ar, cN), _ar.floats_copy(ar, cS), _ar.floats_copy(ar, cT),
                _ar.floats_copy(ar, tau), _ar.floats_copy(ar, v_next), it, False)
    # eq. (37): actuated rows absorb the change of J^T c; v+ moves only by the O(tol) residual
    # of the free rows (recomputed so that (37) holds to rounding)
    nv = N.shape[1]
    dgen = _ar.floats_zero(ar, nv)
    cNn = _ar.floats(ar, nc)
    cSn = _ar.floats(ar, nc)
    cTn = _ar.floats(ar, nc)
    for i in range(nc):
        cNn[i] = c[3 * i]
        cSn[i] = c[3 * i + 1]
        cTn[i] = c[3 * i + 2]
        dN = cNn[i] - cN[i]
        dS = cSn[i] - cS[i]
        dT = cTn[i] - cT[i]
        for r in range(N.shape[1]):
            dgen[r] += N[i, r] * dN + S[i, r] * dS + T[i, r] * dT
    taun = _ar.floats_copy(ar, tau)
    for a in range(nu):
        taun[a] -= dgen[act[a]] / dt
        dgen[act[a]] = 0.0
    vn = _ar.floats(ar, nv)  # v_next + M^-1 dgen
    for r in range(nv):
        s = 0.0
        for k in range(nv):
            s += Minv[r, k] * dgen[k]
        vn[r] = v_next[r] + s
    return cNn, cSn, cTn, taun, vn, it, True


def min_norm_impulses(
    problem: ContactProblem,
    impulses: np.ndarray,
    tau: np.ndarray,
    v_next: np.ndarray,
    w: np.ndarray,
    tol: float = 1e-6,
    max_iter: int = 50,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, int]:
    """Minimum-norm contact impulses among all no-slip solutions (indeterminate contact).

    Every solution of the no-slip MLCP (42) has the same ``v+`` (the LCP is PSD), so the
    solution set for a given ``v+`` is the polyhedron of impulses ``c = (c_N, c_S, c_T)`` with

    * the unactuated rows of eq. (37) unchanged: ``J_f^T c = J_f^T c*`` (``J_f``: the free
      columns of ``[N; S; T]``);
    * ``c_N >= 0`` at touching contacts (``w_i <= tol``) and ``c_N = 0`` at separating ones
      (complementarity (36));
    * ``c_S, c_T`` free at contacts carrying no-slip rows, 0 at contacts without (``noslip_gap``);

    and the torques follow from the actuated rows of (37): ``tau = tau* - J_a^T (c - c*) / dt``.
    This returns its unique minimum-norm element ``argmin |c|^2`` (minimum total impulse: no
    internal forces beyond what the motion needs; continuous in the data), computed by
    :func:`min_norm_impulse_kernel` (dual semismooth Newton, compiled). The earlier
    implementation minimized only ``|c_N|`` and then re-derived ``c_S, c_T`` from Alg. 1's row
    subset, which for nearly dependent tangential rows gave internal tangential impulses of up to
    1e5 m g.

    With ``weights`` the selection is ``argmin sum_i weights_i |c_i|^2`` over the same set
    (``c_i`` contact i's impulse): a contact of weight w carries about 1/w of the share it
    would carry with weight 1 where other contacts can take it, and what it must carry (a
    single support) it still carries -- the set, and so v+, does not change. The contact load
    ramps set them (``contact_load_ramp``, ``contact_unload_ramp``: docs/real_robots.md).

    Args:
        impulses: (nc, 3) a solution ``c*`` [N s]; tau: (nu,) its torques [N m];
        v_next: (nv,) its v+; w: (nc,) ``N v+ + phi/dt`` [m/s].
        tol: [m/s] contacts with ``w_i <= tol`` count as touching.
        weights: (nc,) per-contact weights >= 1 (None: the problem's ``weights``, all 1 if it
            has none). ValueError if not finite and >= 1.

    Returns:
        (impulses, tau, v_next, converged, iterations); the inputs (copied) if not converged.
    """
    p = problem
    weight = contact_weights(p.nc, p.weights if weights is None else weights)
    imp = np.ascontiguousarray(impulses, dtype=np.float64)
    out = min_norm_solution_kernel(
        p.Minv, p.actuated, p.free, p.N, p.S, p.T,
        np.ascontiguousarray(imp[:, 0]), np.ascontiguousarray(imp[:, 1]),
        np.ascontiguousarray(imp[:, 2]), np.ascontiguousarray(tau, dtype=np.float64),
        np.ascontiguousarray(v_next, dtype=np.float64), np.ascontiguousarray(w, dtype=np.float64),
        weight, float(tol), float(p.dt), int(max_iter), NO_ARENA,
    )
    cN, cS, cT, tau_n, v_n, it, ok = out
    return np.stack([cN, cS, cT], axis=1), tau_n, v_n, bool(ok), int(it)


def sticking_consistent_problem(
    problem: ContactProblem, gap: float = 1e-6
) -> tuple[ContactProblem, float, bool]:
    """The problem with its desired accelerations replaced by the nearest ones that the touching
    contacts can realize while *sticking* (option ``sticking_correction`` of the Coulomb and
    convex methods).

    Sec. 4.5 QP (46)-(51) (:func:`consistent_accelerations`) with no-slip rows only at the
    touching contacts (``phi <= gap``; eq. (34)) and ``N v+ >= -phi/dt`` at all candidates.
    Why: a joint-space reference with PD feedback (``qdd_des + kp e + kd de``) is in general not
    realizable with the stance feet fixed -- with 4 point feet only 6 of the 12 joint
    accelerations are free. ``lcp_noslip`` corrects this (Sec. 4.5); the Coulomb models instead
    realize the inconsistent part *exactly* by sliding the feet at the friction limit
    (impulsive internal forces, saturating torques), a motion the plant does not make, and
    ``qp_coulomb``'s kinetic-energy objective additionally prefers sliding (see
    docs/contact_methods.md "Tracking in closed loop").

    Returns:
        (problem, max |qdd_corrected - qdd_des| [rad/s^2], changed). Unchanged (0, False) if no
        contact touches, the robot has no actuated dofs or the change is below
        ``1e-6 * (1 + max |qdd_des|)``; (nan, False) if the correction QP failed (the callers
        flag ``sticking_correction_failed`` and solve with the given accelerations).
    """
    p = problem
    qdd = np.empty(p.nu)
    st = _sticking_qdd(p.Minv, p.h, p.v, p.actuated, p.qdd_des, p.N, p.S, p.T, p.phi,
                       float(p.dt), float(gap), min_pivot(p, 100.0), qdd, NO_ARENA)
    if st == 2:
        return p, float("nan"), False
    if st == 0:
        return p, 0.0, False
    change = float(np.max(np.abs(qdd - p.qdd_des)))
    return dataclasses.replace(p, qdd_des=qdd), change, True


def mark_sticking_correction(res: ContactResult, problem: ContactProblem, change: float) -> None:
    """Record an applied :func:`sticking_consistent_problem` correction on a result: flag
    ``inconsistent_corrected``, ``consistent = False``, ``info["qdd_corrected"]`` and
    ``info["qdd_correction"]`` (max |change| [rad/s^2]); a failed correction (``change`` nan)
    only sets the flag ``sticking_correction_failed``."""
    if not change == change:  # nan: the correction QP failed
        res.stats.add_flag("sticking_correction_failed")
        return
    res.stats.add_flag("inconsistent_corrected")
    res.stats.info["qdd_corrected"] = problem.qdd_des.copy()
    res.stats.info["qdd_correction"] = change
    res.consistent = False
