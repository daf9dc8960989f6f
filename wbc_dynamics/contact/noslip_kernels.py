"""The compiled kernels of ``lcp_noslip`` (Zapolsky & Drumwright, Sec. 4): Algorithm 1
(Find-Indices, :func:`_alg1`), Algorithm 2 (modified PPM I, :func:`_ppm`) and the whole solve
with force retrieval and the Sec. 4.5 verification (:func:`lcp_noslip_kernel`), with Alg. 1's
scale-aware pivot floor (:func:`min_pivot`).

The formulation is described in :mod:`wbc_dynamics.contact.lcp_noslip`, whose solve kernel
(``noslip_solve_kernel``) runs these. The kernels live here, below it, because the Sec. 4.5
correction and the sticking correction (:mod:`wbc_dynamics.contact.consistency`) and the QP
methods' rank rule (:mod:`wbc_dynamics.contact.qp`, ``.qp_tick``) run them too.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import add_sparse_product, add_weighted_rows
from ..kernels.linalg import chol_solve as _chol_solve
from ..kernels.separate import call_separately
from .problem import ContactProblem

__all__ = ["lcp_noslip_kernel", "min_pivot", "STATUS"]

#: Kernel status codes.
STATUS = {0: "ok", 1: "iteration_limit", 2: "singular_nonbasic_set (inconsistent)"}


@njit(cache=True, inline="always")
def _gram_row(NK, N, order, m, i, x):
    """Row i of A = N K N^T against the m selected rows ``order[:m]`` (into x[:m]) and its
    diagonal entry (returned): the data an incremental Cholesky append needs."""
    nv = N.shape[1]
    for j in range(m):
        s = 0.0
        for c in range(nv):
            s += NK[order[j], c] * N[i, c]
        x[j] = s
    d = 0.0
    for c in range(nv):
        d += NK[i, c] * N[i, c]
    return d


@leaf_kernel
def _chol_append(L, k, x, d, tol_rel, min_pivot, y):
    """Try to append a row/column to the Cholesky factor L[:k,:k] (lower).

    x: (k,) new off-diagonal column of the factored matrix, d: new diagonal entry; y: scratch
    of length >= k (the caller's, so that an append allocates nothing).
    Returns True (and writes row k of L) if the new pivot is > tol_rel * d and > min_pivot
    (an absolute floor in the factored matrix's units; 0 = relative test only).
    """
    for i in range(k):
        s = x[i]
        for j in range(i):
            s -= L[i, j] * y[j]
        y[i] = s / L[i, i]
    delta = d
    for i in range(k):
        delta -= y[i] * y[i]
    if not (delta > tol_rel * d) or d <= 0.0 or not (delta > min_pivot):
        return False
    for i in range(k):
        L[k, i] = y[i]
    L[k, k] = np.sqrt(delta)
    return True


@leaf_kernel
def _append_row(G, W, L, k, g, wg, d, tol, x, min_pivot, kind, idx, act, pcol, y):
    """Try to append row g (with wg = M^-1 g, d = g . wg) to G, W = M^-1 G^T and the factor L
    (pivot tests of :func:`_chol_append`). ``kind``, ``idx`` of the rows kept so far (as
    :func:`_alg1`); ``pcol``: the dof of g if it is a P row (unit vector), else -1.

    The entries ``G_j M^-1 g`` are read off where a factor is a unit vector: ``wg[act[idx_j]]``
    for a P row j, ``W[pcol, j]`` when g is one (M^-1 symmetric) -- O(1) instead of an
    nv-long dot product, the same products summed in the same order."""
    nv = wg.shape[0]
    for j in range(k):
        if kind[j] == 0:
            x[j] = wg[act[idx[j]]]
        elif pcol >= 0:
            x[j] = W[pcol, j]
        else:
            s = 0.0
            for r in range(nv):
                s += G[j, r] * wg[r]
            x[j] = s
    if not _chol_append(L, k, x, d, tol, min_pivot, y):
        return False
    for r in range(nv):
        G[k, r] = g[r]
        W[r, k] = wg[r]
    return True


@njit(cache=True)
def _alg1(Minv, act, S, T, rank_tol, eps_p, min_pivot, ar):
    """Algorithm 1 (Find-Indices) by incremental Cholesky of X = G M^-1 G^T.

    A contact row is kept iff its pivot (the inverse effective mass [1/kg] of its direction once
    the rows already kept are enforced) exceeds ``rank_tol`` times its own diagonal entry
    (numerical rank) *and* ``min_pivot`` [1/kg]: the scale-aware test (``1 / (rank_mass_ratio *
    total mass)``, see :func:`~wbc_dynamics.contact.lcp_noslip.solve_lcp_noslip`). A direction
    whose effective mass is thousands of times the robot's (two feet at nearly the same height
    resisting a rotation with tangential forces on a sub-millimetre lever) is nearly dependent:
    enforcing it takes impulses of ~1e5 m g from velocity errors of mm/s, so it is treated as
    dependent.

    Hard mode (``eps_p == 0``): the P rows (eq. 38; ``P M^-1 P^T`` is the actuated block of M^-1,
    positive definite) first, then S_i, T_i for i = 1..n, each kept iff it keeps X non-singular
    (Lines 4-11 of Alg. 1). ``eps_p > 0`` (soft inverse-dynamics rows, used by the Sec. 4.5
    correction: the KKT system of ``min 1/2 |v+ - f*|_M^2 + 1/(2 eps_p) |P v+ - qdot_des|^2``
    s.t. the contact constraints): every S/T row independent of the other S/T rows is kept, then
    the P rows are appended with ``eps_p`` added to their diagonal.

    Returns (G (nv+nu, nv) buffer with nG valid rows, W = M^-1 G^T (nv, nv+nu), L, nG,
    kind: 0 = P row, 1 = S row, 2 = T row, idx: actuator / contact index). nG = -1 on failure.
    Buffers and results from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`).
    """
    nv = Minv.shape[0]
    nu = act.shape[0]
    nc = S.shape[0]
    nmax = nv + nu
    G = _ar.floats_2d_zero(ar, nmax, nv)
    W = _ar.floats_2d_zero(ar, nv, nmax)
    L = _ar.floats_2d_zero(ar, nmax, nmax)
    kind = _ar.ints_zero(ar, nmax)
    idx = _ar.ints_zero(ar, nmax)
    x = _ar.floats(ar, nmax)
    y = _ar.floats(ar, nmax)  # _chol_append's scratch
    wg = _ar.floats(ar, nv)
    e = _ar.floats_zero(ar, nv)
    soft = eps_p > 0.0
    k = np.int64(0)  # typed, not a literal: one compiled signature of _append_row
    no_p = np.int64(-1)
    for phase in range(2):
        if phase == (1 if soft else 0):
            for a in range(nu):
                for r in range(nv):
                    e[r] = 0.0
                    wg[r] = Minv[r, act[a]]
                e[act[a]] = 1.0
                if not _append_row(G, W, L, k, e, wg, Minv[act[a], act[a]] + eps_p, 1e-14, x,
                                   0.0, kind, idx, act, act[a], y):
                    return G, W, L, -1, kind, idx
                kind[k] = 0
                idx[k] = a
                k += 1
        else:
            nst = 0
            for i in range(nc):
                for which in range(2):
                    if nst >= nv or (not soft and k >= nv):
                        break
                    g = S[i] if which == 0 else T[i]
                    # M^-1 g column by column, skipping g's zeros (a foot's row touches only
                    # the base and its own leg): independent sums, not one dependent chain
                    for r in range(nv):
                        wg[r] = 0.0
                    add_weighted_rows(Minv.T, g, wg)
                    d = 0.0
                    for r in range(nv):
                        d += g[r] * wg[r]
                    if _append_row(G, W, L, k, g, wg, d, rank_tol, x, min_pivot, kind, idx, act,
                                   no_p, y):
                        kind[k] = 1 + which
                        idx[k] = i
                        k += 1
                        nst += 1
    return G, W, L, k, kind, idx


@njit(cache=True)
def _ppm(N, NK, r, warm, max_iter, rank_tol, tol, dep_tol, ar):
    """Algorithm 2 (modified PPM I) for the LCP w = N K N^T z + r, 0 <= z _|_ w >= 0.

    NK = N K (nc, nv). warm: (nc,) bool initial non-basic set (warm start, Sec. 4.6).
    Returns (z, w, nonbasic mask, iterations, status, warm_used).
    status 0 ok, 1 iteration limit, 2 singular non-basic set with negative w (inconsistent).
    An entering index whose row is linearly dependent on the non-basic rows (in the K metric) and
    whose w is only slightly negative (>= -dep_tol, e.g. phi/dt differences of a few nm/tick) is
    blocked instead (Appendix F: such rows need no force when the data are consistent); the final
    violation is reported by the caller.
    """
    nc, nv = N.shape
    z = _ar.floats_zero(ar, nc)
    w = _ar.floats_copy(ar, r)
    nb = _ar.flags_zero(ar, nc)
    blocked = _ar.flags_zero(ar, nc)
    # Lines 2-5: trivial solution
    imin = 0
    for i in range(nc):
        if r[i] < r[imin]:
            imin = i
    if nc == 0 or r[imin] >= -tol:
        return z, w, nb, 0, 0, False
    # Lines 6-8: initial non-basic set from the warm start (dependent rows skipped)
    order = _ar.ints(ar, nv)  # non-basic indices in factor order
    L = _ar.floats_2d_zero(ar, nv, nv)
    x = _ar.floats(ar, nv)
    y = _ar.floats(ar, nv)  # _chol_append's scratch
    m = np.int64(0)  # typed, not a literal: one compiled signature of _chol_append
    warm_used = False
    for i in range(nc):
        if warm[i] and m < nv:
            d = _gram_row(NK, N, order, m, i, x)
            if _chol_append(L, m, x, d, rank_tol, 0.0, y):
                order[m] = i
                nb[i] = True
                m += 1
                warm_used = True
    if m == 0:
        order[0] = imin
        nb[imin] = True
        L[0, 0] = 0.0
        d = 0.0
        for c in range(nv):
            d += NK[imin, c] * N[imin, c]
        if not (d > 0.0):
            # zero row of Q with negative r: no force can fix this contact
            return z, w, nb, 0, 2, warm_used
        L[0, 0] = np.sqrt(d)
        m = 1
    zb = _ar.floats(ar, nv)
    b = _ar.floats(ar, nv)
    a = _ar.floats(ar, nv)
    it = 0
    need_refactor = False
    while it < max_iter:
        it += 1
        if need_refactor:
            # rebuild the factor of A = N_nb K N_nb^T (Line 11), at most m x m
            mm = np.int64(0)  # typed, not a literal (one signature of _chol_append)
            for jj in range(m):
                i = order[jj]
                d = _gram_row(NK, N, order, mm, i, x)
                if not _chol_append(L, mm, x, d, rank_tol, 0.0, y):
                    return z, w, nb, it, 2, warm_used
                order[mm] = i
                mm += 1
            need_refactor = False
        # Lines 12-13: z_dagger = -A^-1 b
        for j in range(m):
            b[j] = -r[order[j]]
        _chol_solve(L, m, b, zb)
        # Line 14: a = K N_nb^T z_dagger ; Line 15: w = N a + r
        for c in range(nv):
            a[c] = 0.0
        for j in range(m):
            zj = zb[j]
            for c in range(nv):
                a[c] += NK[order[j], c] * zj
        ibest = -1
        wbest = -tol
        for i in range(nc):
            s = r[i]
            for c in range(nv):
                s += N[i, c] * a[c]
            w[i] = s
            if not nb[i] and not blocked[i] and s < wbest:
                wbest = s
                ibest = i
        # Line 18: most negative z among non-basic
        jbest = -1
        zmin = -tol
        for j in range(m):
            if zb[j] < zmin:
                zmin = zb[j]
                jbest = j
        if ibest < 0:
            if jbest >= 0:
                # Lines 19-23: move index into the basic set
                nb[order[jbest]] = False
                for j in range(jbest, m - 1):
                    order[j] = order[j + 1]
                m -= 1
                need_refactor = True
                continue
            # Lines 24-29: solution found
            for i in range(nc):
                z[i] = 0.0
            for j in range(m):
                z[order[j]] = max(zb[j], 0.0)
            for i in range(nc):
                if nb[i]:
                    w[i] = 0.0
            return z, w, nb, it, 0, warm_used
        # Lines 31-37: move i into the non-basic set, then j (from this z_dagger) out
        if jbest >= 0:
            nb[order[jbest]] = False
            for j in range(jbest, m - 1):
                order[j] = order[j + 1]
            m -= 1
            order[m] = ibest
            nb[ibest] = True
            m += 1
            need_refactor = True
        else:
            d = _gram_row(NK, N, order, m, ibest, x)
            if m >= nv or not _chol_append(L, m, x, d, rank_tol, 0.0, y):
                # Entering row dependent on the non-basic rows (Appendix F): w_i cannot change
                # while the non-basic set is kept, so exchange it for a non-basic index j with
                # gamma_j > 0 (N_i K = sum gamma_j N_j K), chosen by the ratio test
                # min z_j / gamma_j so that z stays >= 0 (a degenerate principal pivot).
                _chol_solve(L, m, x, a)
                gmax = 0.0
                for j in range(m):
                    gmax = max(gmax, abs(a[j]))
                jx = -1
                best = np.inf
                for j in range(m):
                    if a[j] > 1e-9 * gmax:
                        ratio = max(zb[j], 0.0) / a[j]
                        if ratio < best:
                            best = ratio
                            jx = j
                if jx >= 0:
                    nb[order[jx]] = False
                    for j in range(jx, m - 1):
                        order[j] = order[j + 1]
                    order[m - 1] = ibest
                    nb[ibest] = True
                    need_refactor = True
                    continue
                # no exchange possible: the data are inconsistent (Sec. 4.5) unless the
                # violation is within dep_tol
                if w[ibest] >= -dep_tol:
                    blocked[ibest] = True
                    continue
                return z, w, nb, it, 2, warm_used
            order[m] = ibest
            nb[ibest] = True
            m += 1
    for j in range(m):
        z[order[j]] = max(zb[j], 0.0)
    return z, w, nb, it, 1, warm_used


@njit(cache=True)
def lcp_noslip_kernel(
    Minv,
    h,
    v,
    act,
    qdd_des,
    N,
    S,
    T,
    phi,
    dt,
    warm,
    max_iter,
    rank_tol,
    tol_rel,
    eps_p,
    dep_tol,
    ppm_rank_tol,
    min_pivot,
    ar,
):
    """Whole ``lcp_noslip`` solve (Alg. 1 + LCP (44)-(45) + Alg. 2 + force retrieval, Sec. 4.5).

    Returns (tau, cN, cS, cT, v_next, w, nonbasic mask, iterations, status, warm_used,
    n_rows_dropped, max_violation) where max_violation is the largest violation of
    ``N v+ >= -phi/dt``, ``S v+ = 0``, ``T v+ = 0`` over all contacts [m/s].
    ``eps_p > 0``: soft P rows (see :func:`_alg1`); then ``tau`` is a penalty force, not a torque.
    ``dep_tol`` [m/s]: see :func:`_ppm`. ``ppm_rank_tol`` (default: ``rank_tol``): pivot
    tolerance of Alg. 2 (the soft correction problem is deliberately ill-conditioned, O(eps_p)).
    ``min_pivot`` [1/kg]: Alg. 1's scale-aware floor (see :func:`_alg1`). The results and
    temporaries come from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`; the compiled
    ticks' own, valid until their next tick; the general path's has no room, so its results are
    ordinary arrays).
    """
    nv = Minv.shape[0]
    nu = act.shape[0]
    nc = N.shape[0]
    # f* = v - dt M^-1 h
    fstar = _ar.floats_copy(ar, v)
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += Minv[i, j] * h[j]
        fstar[i] -= dt * s
    scale = 1.0
    for i in range(nv):
        scale = max(scale, abs(v[i]), abs(fstar[i]))
    tol = tol_rel * scale
    G, W, L, nG, kind, idx = call_separately(_alg1, (Minv, act, S, T, rank_tol, eps_p, min_pivot,
                                                     ar))
    tau = _ar.floats_zero(ar, nu)
    cN = _ar.floats_zero(ar, nc)
    cS = _ar.floats_zero(ar, nc)
    cT = _ar.floats_zero(ar, nc)
    w = _ar.floats_zero(ar, nc)
    nb = _ar.flags_zero(ar, nc)
    if nG < 0:
        return tau, cN, cS, cT, fstar, w, nb, 0, 3, False, 0, np.inf
    # g - G f*  (g = [qdot_des; 0])
    gr = _ar.floats_zero(ar, nG)
    for j in range(nG):
        s = 0.0
        for c in range(nv):
            s += G[j, c] * fstar[c]
        gr[j] = -s
        if kind[j] == 0:
            gr[j] += v[act[idx[j]]] + dt * qdd_des[idx[j]]
    lam0 = _ar.floats_zero(ar, nG)
    _chol_solve(L, nG, gr, lam0)
    # loops with a contiguous, independent inner loop (axpy form, which LLVM vectorizes)
    # instead of numpy products: each of those allocates and calls BLAS, which costs more than
    # this arithmetic at the sizes of a tick (nc contacts x nv dofs x nG <= nv + nu rows)
    ftil = _ar.floats_copy(ar, fstar)  # f~ = f* + W lam0
    for c in range(nv):
        s = 0.0
        for j in range(nG):
            s += W[c, j] * lam0[j]
        ftil[c] += s
    # N K with K = M^-1 - W X^-1 W^T (X = G M^-1 G^T = L L^T): N K = N M^-1 - (X^-1 W^T N^T)^T
    # W^T, without forming the nv x nv K (nc << nv rows are all the LCP needs)
    Y = _ar.floats_2d_zero(ar, nc, nG)
    NK = _ar.floats_2d_zero(ar, nc, nv)
    add_sparse_product(N, W, Y, nG)
    add_sparse_product(N, Minv, NK, nv)
    for i in range(nc):
        _chol_solve(L, nG, Y[i], Y[i])
        for c in range(nv):
            s = 0.0
            for j in range(nG):
                s += Y[i, j] * W[c, j]
            NK[i, c] -= s
    r = _ar.floats(ar, nc)
    for i in range(nc):
        s = phi[i] / dt
        for c in range(nv):
            s += N[i, c] * ftil[c]
        r[i] = s
    prt = rank_tol if ppm_rank_tol < 0.0 else ppm_rank_tol
    z, w, nb, it, status, warm_used = call_separately(_ppm, (N, NK, r, warm, max_iter, prt, tol,
                                                             dep_tol, ar))
    # force retrieval (Sec. 4.5): lambda = X^-1 (g - G f* - W^T N^T z),
    # v+ = f* + W lambda + M^-1 N^T z
    y = _ar.floats_zero(ar, nv)
    add_weighted_rows(N, z, y)
    gy = _ar.floats_copy(ar, gr)
    for c in range(nv):
        yc = y[c]
        if yc != 0.0:
            for j in range(nG):
                gy[j] -= W[c, j] * yc
    lam = _ar.floats_zero(ar, nG)
    _chol_solve(L, nG, gy, lam)
    v_next = _ar.floats_copy(ar, fstar)
    for c in range(nv):
        s = 0.0
        for j in range(nG):
            s += W[c, j] * lam[j]
        for col in range(nv):
            s += Minv[c, col] * y[col]
        v_next[c] += s
    for j in range(nG):
        if kind[j] == 0:
            tau[idx[j]] = lam[j] / dt
        elif kind[j] == 1:
            cS[idx[j]] = lam[j]
        else:
            cT[idx[j]] = lam[j]
    for i in range(nc):
        cN[i] = z[i]
    viol = 0.0
    for i in range(nc):
        sn = phi[i] / dt
        ss = 0.0
        st = 0.0
        for c in range(nv):
            sn += N[i, c] * v_next[c]
            ss += S[i, c] * v_next[c]
            st += T[i, c] * v_next[c]
        viol = max(viol, -sn, abs(ss), abs(st))
    return (tau, cN, cS, cT, v_next, w, nb, it, status, warm_used, 2 * nc - (nG - nu), viol)


def min_pivot(problem: ContactProblem, rank_mass_ratio: float) -> float:
    """Alg. 1's scale-aware pivot floor [1/kg]: ``1 / (rank_mass_ratio * total_mass)`` (0 if the
    problem's total mass is unknown or the ratio is 0: the relative test alone)."""
    if not (np.isfinite(rank_mass_ratio) and rank_mass_ratio >= 0.0):
        raise ValueError(f"rank_mass_ratio: must be finite and >= 0, got {rank_mass_ratio!r}")
    if problem.total_mass is None or rank_mass_ratio == 0.0:
        return 0.0
    return 1.0 / (rank_mass_ratio * problem.total_mass)
