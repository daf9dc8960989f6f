"""Lemke's complementary pivoting algorithm for the LCP(q, Q)
(Zapolsky & Drumwright, Sec. 2.1 and 5.2.1).

Solves::

    w = Q z + q,   w >= 0,   z >= 0,   z^T w = 0         (Zapolsky & Drumwright, Sec. 2.1)

with Lemke's method (augmented system ``w - Q z - d z0 = q`` with covering vector ``d`` and an
artificial variable ``z0``), in the revised form: the explicit basis inverse ``B^-1`` (n x n) is
updated by one rank-1 Gauss-Jordan pivot per iteration (O(n^2) per pivot), entirely in
numba-compiled code on flat arrays.

Features
--------
* **Anti-cycling**: lexicographic minimum-ratio test on the rows of ``[x | B^-1] / col_i`` (the
  classical lexicographic Lemke of Cottle, Pang & Stone 1992, Sec. 4.4/4.9), the artificial
  variable is preferred on exact ties so the algorithm terminates as early as possible.
* **Pivot limit** (``max_pivots``, default ``50 n + 10`` per attempt) -> status ``PIVOT_LIMIT``.
* **Warm start** from a previous basis, given as the set of ``z`` indices that were basic
  (positive): the complementary basis matrix ``B`` (columns ``e_i`` for ``w_i``, ``-Q[:, i]`` for
  ``z_i``) is inverted; if ``B^-1 q >= 0`` that basis already solves the LCP (zero pivots);
  otherwise Lemke starts from that basis with covering vector ``d = B 1`` (so the first ratio
  test is well defined) for at most ``2 n + 10`` pivots. A singular warm basis, ray
  termination or that pivot cap fall back to the cold start (``d = 1``, basis of all ``w``);
  ``warm_used`` reports whether the returned solution came from the warm path. The basis to
  store is :attr:`LCPSolution.basic` (the complete final basis, degenerate zeros included).
* **Tikhonov regularization fallback** (Zapolsky & Drumwright, footnote 1 of Sec. 6.2.1: the LEMKE
  code of Fackler & Miranda is "numerically robust (using Tikhonov regularization)"): if the plain
  problem fails (ray termination, pivot limit, or a final solution that violates the LCP by more
  than ``tol``), the LCP(q, Q + eps I) is solved (cold start) for
  ``eps = eps_min * eps_factor^j`` (default 1e-12, 1e-10, ..., 1e-2, scaled by
  ``max(1, max |Q_ii|)``); the first success whose violation of the *original* LCP is at most
  ``reg_tol * max |q|`` is returned with ``regularization = eps`` (``> 0``: the solution solves
  the *regularized* problem; its residual w.r.t. the original ``Q`` is reported separately).
* **Final refinement**: the final complementary basis system is re-solved from scratch by
  Gaussian elimination with partial pivoting (removes the drift accumulated in ``B^-1``), tiny
  negative values (``>= -tol``) are clipped to zero.
* ``q`` is normalized by ``max |q|`` internally (the LCP is homogeneous in ``(q, z, w)``), so the
  tolerances are relative to the size of ``q``.

Status codes: ``SUCCESS`` (0), ``RAY_TERMINATION`` (1), ``PIVOT_LIMIT`` (2), ``FAILED_CHECK``
(3, finished but the solution violates the LCP by more than ``tol``). On failure the returned
``z`` is the best finite iterate (never NaN; zeros if nothing finite is available).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.arena import NO_ARENA
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import lu_solve, matvec, swap_rows
from ..kernels.separate import call_separately

__all__ = [
    "SUCCESS",
    "RAY_TERMINATION",
    "PIVOT_LIMIT",
    "FAILED_CHECK",
    "STATUS_NAMES",
    "LCPSolution",
    "LemkeOptions",
    "lcp_residual",
    "solve_lcp",
    "warmup",
]

_REFACTOR_EVERY = 40   # pivots between refactorizations of the basis inverse

SUCCESS = 0
RAY_TERMINATION = 1
PIVOT_LIMIT = 2
FAILED_CHECK = 3
STATUS_NAMES = {
    SUCCESS: "success",
    RAY_TERMINATION: "ray_termination",
    PIVOT_LIMIT: "pivot_limit",
    FAILED_CHECK: "failed_check",
}


# --------------------------------------------------------------------------- numba kernels
@leaf_kernel
def _invert(B: np.ndarray, out: np.ndarray, work: np.ndarray) -> bool:
    """Gauss-Jordan inverse with partial pivoting; False if (numerically) singular."""
    n = B.shape[0]
    for i in range(n):
        for j in range(n):
            work[i, j] = B[i, j]
            out[i, j] = 1.0 if i == j else 0.0
    scale = 0.0
    for i in range(n):
        for j in range(n):
            a = abs(B[i, j])
            if a > scale:
                scale = a
    if scale == 0.0:
        return False
    for c in range(n):
        p = c
        best = abs(work[c, c])
        for i in range(c + 1, n):
            a = abs(work[i, c])
            if a > best:
                best = a
                p = i
        if best <= 1e-13 * scale:
            return False
        if p != c:
            swap_rows(work, c, p, n)
            swap_rows(out, c, p, n)
        inv = 1.0 / work[c, c]
        for j in range(n):
            work[c, j] *= inv
            out[c, j] *= inv
        for i in range(n):
            if i != c:
                f = work[i, c]
                if f != 0.0:
                    for j in range(n):
                        work[i, j] -= f * work[c, j]
                        out[i, j] -= f * out[c, j]
    return True


@leaf_kernel
def _column(Q: np.ndarray, d: np.ndarray, var: int, out: np.ndarray) -> None:
    """Column of variable ``var`` in ``w - Q z - d z0 = q`` (w_i: i, z_i: n + i, z0: 2n)."""
    n = Q.shape[0]
    if var < n:
        for i in range(n):
            out[i] = 0.0
        out[var] = 1.0
    elif var < 2 * n:
        j = var - n
        for i in range(n):
            out[i] = -Q[i, j]
    else:
        for i in range(n):
            out[i] = -d[i]


@leaf_kernel
def _pivot(Binv: np.ndarray, x: np.ndarray, col: np.ndarray, r: int) -> None:
    n = x.shape[0]
    piv = col[r]
    inv = 1.0 / piv
    for j in range(n):
        Binv[r, j] *= inv
    x[r] *= inv
    for i in range(n):
        if i != r:
            f = col[i]
            if f != 0.0:
                for j in range(n):
                    Binv[i, j] -= f * Binv[r, j]
                x[i] -= f * x[r]


@leaf_kernel
def _lexi_select(
    cand: np.ndarray, ncand: int, Binv: np.ndarray, col: np.ndarray, sign: float
) -> int:
    """Among candidate rows break ties lexicographically on ``sign * B^-1[i, :] / col_i``
    (sign = +1: lexicographic minimum, -1: maximum). Returns the chosen row."""
    n = Binv.shape[0]
    alive = ncand
    for j in range(n):
        if alive <= 1:
            break
        best = np.inf
        for t in range(alive):
            i = cand[t]
            v = sign * Binv[i, j] / col[i]
            if v < best:
                best = v
        tol = 1e-12 * max(1.0, abs(best))
        k = 0
        for t in range(alive):
            i = cand[t]
            v = sign * Binv[i, j] / col[i]
            if v <= best + tol:
                cand[k] = i
                k += 1
        alive = k
    return cand[0]


@njit(cache=True)
def _lemke_run(
    Q: np.ndarray,
    q: np.ndarray,
    d: np.ndarray,
    basis: np.ndarray,
    Binv: np.ndarray,
    x: np.ndarray,
    max_pivots: int,
    piv_tol: float,
    col: np.ndarray,
    tmp: np.ndarray,
    cand: np.ndarray,
    ar,
) -> tuple[int, int]:
    """Lemke iterations from the basis (basis, Binv, x = Binv q); returns (status, pivots).
    The periodic refactorization's buffers come from the arena ``ar``.

    On return with SUCCESS the artificial variable has left the basis.
    """
    n = q.shape[0]
    z0 = 2 * n
    # --- first pivot: bring z0 in, leaving row = lexicographic max of [x_i, Binv_i] / col_i
    _column(Q, d, z0, tmp)
    matvec(Binv, tmp, col)
    best = -np.inf
    for i in range(n):
        if x[i] < 0.0 and col[i] >= 0.0:
            return RAY_TERMINATION, 0  # covering vector does not cover this row
    for i in range(n):
        if col[i] < -piv_tol:
            v = x[i] / col[i]
            if v > best:
                best = v
    if best == -np.inf:
        return RAY_TERMINATION, 0
    tol = 1e-12 * max(1.0, abs(best))
    nc = np.int64(0)  # typed, not a literal: one compiled _lexi_select
    for i in range(n):
        if col[i] < -piv_tol and x[i] / col[i] >= best - tol:
            cand[nc] = i
            nc += 1
    r = _lexi_select(cand, nc, Binv, col, -1.0)
    _pivot(Binv, x, col, r)
    leaving = basis[r]
    basis[r] = z0
    pivots = 1
    entering = leaving + n if leaving < n else leaving - n
    n_refac = 0
    while pivots < max_pivots:
        if pivots - n_refac >= _REFACTOR_EVERY:
            # periodic refactorization: rebuild B^-1 and x = B^-1 q from the basis (removes
            # the round-off drift of the rank-1 updates on long, degenerate pivot sequences)
            n_refac = pivots
            Bm = _ar.floats_2d(ar, n, n)
            for i in range(n):
                _column(Q, d, basis[i], tmp)
                for r in range(n):
                    Bm[r, i] = tmp[r]
            Bi = _ar.floats_2d(ar, n, n)
            if _invert(Bm, Bi, _ar.floats_2d(ar, n, n)):
                for i in range(n):
                    for j in range(n):
                        Binv[i, j] = Bi[i, j]
                matvec(Binv, q, x)
        _column(Q, d, entering, tmp)
        matvec(Binv, tmp, col)
        best = np.inf
        for i in range(n):
            if col[i] > piv_tol:
                v = x[i] / col[i]
                if v < best:
                    best = v
        if best == np.inf:
            return RAY_TERMINATION, pivots
        tol = 1e-12 * max(1.0, abs(best))
        nc = np.int64(0)
        z0row = -1
        for i in range(n):
            if col[i] > piv_tol and x[i] / col[i] <= best + tol:
                cand[nc] = i
                nc += 1
                if basis[i] == z0:
                    z0row = i
        if z0row >= 0:
            r = z0row
        else:
            r = _lexi_select(cand, nc, Binv, col, 1.0)
        _pivot(Binv, x, col, r)
        leaving = basis[r]
        basis[r] = entering
        pivots += 1
        if leaving == z0:
            return SUCCESS, pivots
        entering = leaving + n if leaving < n else leaving - n
    return PIVOT_LIMIT, pivots


@leaf_kernel
def _basis_matrix(Q: np.ndarray, basis: np.ndarray, B: np.ndarray) -> None:
    n = Q.shape[0]
    for i in range(n):
        for r in range(n):
            B[r, i] = 0.0
        v = basis[i]
        if v < n:
            B[v, i] = 1.0
        else:
            j = v - n
            for r in range(n):
                B[r, i] = -Q[r, j]


@leaf_kernel
def _extract(
    Q: np.ndarray, q: np.ndarray, basis: np.ndarray, x: np.ndarray, z: np.ndarray, w: np.ndarray
) -> float:
    """z from the basic values, w = Q z + q; returns the LCP violation (max over rows)."""
    n = q.shape[0]
    for i in range(n):
        z[i] = 0.0
    for i in range(n):
        v = basis[i]
        if n <= v < 2 * n:
            z[v - n] = x[i]
    return _violation(Q, q, z, w)


@leaf_kernel
def _violation(Q: np.ndarray, q: np.ndarray, z: np.ndarray, w: np.ndarray) -> float:
    n = q.shape[0]
    matvec(Q, z, w)
    viol = 0.0
    for i in range(n):
        w[i] += q[i]
        if not (np.isfinite(z[i]) and np.isfinite(w[i])):
            return np.inf
        a = max(-z[i], -w[i], min(abs(z[i]), abs(w[i])))
        if a > viol:
            viol = a
    return viol


@njit(cache=True)
def _complementary_basis_solution(Q: np.ndarray, q: np.ndarray, warm: np.ndarray,
                                  x: np.ndarray, ar) -> bool:
    """Basic values ``x`` of the complementary basis ``warm`` (z_i basic where ``warm[i]``,
    else w_i): the principal block ``-Q_ZZ z_Z = q_Z``, then ``w_i = q_i + Q_iZ z_Z`` -- the
    solution of ``B x = q`` for :func:`_basis_matrix`'s B in O(n k + k^3) (k = ``warm``'s
    count) instead of inverting the n x n B. Returns False where :func:`_invert` would
    reject B (a pivot ``<= 1e-13 max |B|``, partial pivoting). Scratch from the arena ``ar``."""
    n = q.shape[0]
    k = 0
    for i in range(n):
        if warm[i]:
            k += 1
    nz = np.int64(k)  # typed: numba would type the count's first value (0) as a literal
    zi = _ar.ints(ar, nz)
    k = 0
    for i in range(n):
        if warm[i]:
            zi[k] = i
            k += 1
    scale = 1.0  # max |B|: its identity columns and the -Q columns of the basic z
    for a in range(k):
        for r in range(n):
            scale = max(scale, abs(Q[r, zi[a]]))
    A = _ar.floats_2d(ar, nz, nz)
    b = _ar.floats(ar, nz)
    for a in range(k):
        b[a] = q[zi[a]]
        for c in range(k):
            A[a, c] = -Q[zi[a], zi[c]]
    if not lu_solve(A, b, 1e-13 * scale):  # _invert's pivot test
        return False
    for i in range(n):
        x[i] = q[i]
    for a in range(k):
        x[zi[a]] = b[a]
    for i in range(n):
        if not warm[i]:
            t = x[i]
            for a in range(k):
                t += Q[i, zi[a]] * b[a]
            x[i] = t
    return True


@leaf_kernel
def _accept_basic(Q: np.ndarray, q: np.ndarray, basis: np.ndarray, x: np.ndarray,
                  z: np.ndarray, w: np.ndarray, tol: float) -> float:
    """The basic values ``x`` of ``basis`` as the solution (z, w, tiny negative z clipped) if
    they are feasible (``x >= -tol``) and solve the LCP to ``tol``: returns the violation, or
    -1 (not a solution; z, w scratch)."""
    n = q.shape[0]
    for i in range(n):
        if x[i] < -tol:
            return -1.0
    if _extract(Q, q, basis, x, z, w) > tol:
        return -1.0
    for i in range(n):
        if z[i] < 0.0:
            z[i] = 0.0
    return _violation(Q, q, z, w)


class LemkeOptions(NamedTuple):
    """Options of the compiled solve (those of :func:`solve_lcp`): ``max_pivots`` the pivot
    limit of one Lemke run, ``piv_tol`` the pivot-element threshold, ``tol`` the accepted
    violation (of the normalized LCP); the Tikhonov fallback ``Q + eps I``: ``regularize``,
    the schedule ``eps_min`` .. ``eps_max`` by ``eps_factor`` (relative to ``max(1, max_i
    |Q_ii|)``) and ``reg_tol`` the violation of the original LCP a regularized solution may
    have."""

    max_pivots: int
    piv_tol: float
    tol: float
    regularize: bool
    eps_min: float
    eps_max: float
    eps_factor: float
    reg_tol: float


@njit(cache=True)
def _lemke_once(Q: np.ndarray, q: np.ndarray, warm: np.ndarray, use_warm: bool,
                o: LemkeOptions, z: np.ndarray, w: np.ndarray, basis: np.ndarray,
                ws: np.ndarray, ar) -> tuple[int, int, int, float]:
    """One plain Lemke solve (warm attempt, then cold) with the pivot limit and tolerances of
    ``o``. q must be normalized. Vectors from the arena ``ar``.

    Returns (status, pivots, warm_used (0/1/2 = no / yes / warm rejected), violation).
    """
    max_pivots, piv_tol, tol = o.max_pivots, o.piv_tol, o.tol
    n = q.shape[0]
    Binv = ws[0]
    Bm = ws[1]
    work = ws[2]
    x = _ar.floats(ar, n)
    d = _ar.floats(ar, n)
    col = _ar.floats(ar, n)
    tmp = _ar.floats(ar, n)
    cand = _ar.ints(ar, n)
    xr = _ar.floats(ar, n)
    total_piv = 0
    warm_flag = 0
    status = RAY_TERMINATION
    # ---------------------------------------------------------------- warm start
    if use_warm:
        nwarm = 0
        for i in range(n):
            if warm[i]:
                basis[i] = n + i
                nwarm += 1
            else:
                basis[i] = i
        if nwarm > 0:
            # the basic values straight from the principal block (the usual tick-to-tick case:
            # the warm basis solves the LCP as it is, accepted without inverting B)
            solved = _complementary_basis_solution(Q, q, warm, x, ar)
            if solved:
                viol = _accept_basic(Q, q, basis, x, z, w, tol)
                if viol >= 0.0:
                    return SUCCESS, 0, 1, viol
            _basis_matrix(Q, basis, Bm)
            if _invert(Bm, Binv, work):
                matvec(Binv, q, x)
                if not solved:
                    viol = _accept_basic(Q, q, basis, x, z, w, tol)
                    if viol >= 0.0:
                        return SUCCESS, 0, 1, viol
                # Lemke from the warm basis with covering vector d = B 1
                for i in range(n):
                    s = 0.0
                    for j in range(n):
                        s += Bm[i, j]
                    d[i] = s
                # the warm run is abandoned early (2 n + 10 pivots) in favour of a cold start
                status, piv = _lemke_run(
                    Q, q, d, basis, Binv, x, min(max_pivots, 2 * n + 10), piv_tol, col, tmp,
                    cand, ar
                )
                total_piv += piv
                if status == SUCCESS:
                    viol = _finish(Q, q, basis, x, z, w, Bm, work, xr, ws[0], tol, ar)
                    if viol <= tol:
                        return SUCCESS, total_piv, 1, viol
                warm_flag = 2
            else:
                warm_flag = 2
    # ---------------------------------------------------------------- cold start
    for i in range(n):
        basis[i] = i
        d[i] = 1.0
        x[i] = q[i]
        for j in range(n):
            Binv[i, j] = 1.0 if i == j else 0.0
    status, piv = _lemke_run(Q, q, d, basis, Binv, x, max_pivots, piv_tol, col, tmp, cand, ar)
    total_piv += piv
    if status == SUCCESS:
        viol = _finish(Q, q, basis, x, z, w, Bm, work, xr, ws[0], tol, ar)
        if viol > tol:
            status = FAILED_CHECK
        return status, total_piv, warm_flag, viol
    # failed: best finite iterate (basic z values; zeros if not finite). In degenerate problems
    # the artificial variable may be at zero when the ray is met: the iterate is then a solution.
    viol = _extract(Q, q, basis, x, z, w)
    for i in range(n):
        if not np.isfinite(z[i]) or z[i] < 0.0:
            z[i] = 0.0
    viol = _violation(Q, q, z, w)
    if viol <= tol:
        return SUCCESS, total_piv, warm_flag, viol
    return status, total_piv, warm_flag, viol


@njit(cache=True)
def _finish(
    Q: np.ndarray,
    q: np.ndarray,
    basis: np.ndarray,
    x: np.ndarray,
    z: np.ndarray,
    w: np.ndarray,
    Bm: np.ndarray,
    work: np.ndarray,
    xr: np.ndarray,
    Binv2: np.ndarray,
    tol: float,
    ar,
) -> float:
    """Refine the final basic solution by a fresh solve; clip tiny negatives; return violation
    (scratch from the arena ``ar``)."""
    n = q.shape[0]
    viol = _extract(Q, q, basis, x, z, w)
    zr = _ar.floats(ar, n)
    wr = _ar.floats(ar, n)
    _basis_matrix(Q, basis, Bm)
    if _invert(Bm, Binv2, work):
        matvec(Binv2, q, xr)
        viol_r = _extract(Q, q, basis, xr, zr, wr)
        if viol_r < viol:
            viol = viol_r
            for i in range(n):
                z[i] = zr[i]
                x[i] = xr[i]
    for i in range(n):
        if z[i] < 0.0 and z[i] >= -tol:
            z[i] = 0.0
    return _violation(Q, q, z, w)


@njit(cache=True)
def _solve_lcp_kernel(Q: np.ndarray, q: np.ndarray, warm: np.ndarray, use_warm: bool,
                      o: LemkeOptions, z: np.ndarray, w: np.ndarray, basis: np.ndarray, ar
                      ) -> tuple[int, int, int, float, float]:
    """Normalized plain solve + Tikhonov fallback (options ``o``). Returns
    (status, pivots, warm_flag, eps_used, violation w.r.t. the ORIGINAL Q, normalized q).
    Scratch from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`)."""
    regularize, eps_min, eps_max = o.regularize, o.eps_min, o.eps_max
    eps_factor, reg_tol = o.eps_factor, o.reg_tol
    n = q.shape[0]
    ws = _ar.floats(ar, 3 * n * n).reshape((3, n, n))
    # Lemke's pivoting called separately (wbc_dynamics.kernels.separate): compiled once, not
    # into this kernel and every kernel above it again
    status, piv, warm_flag, viol = call_separately(_lemke_once, (
        Q, q, warm, use_warm, o, z, w, basis, ws, ar
    ))
    if status == SUCCESS or not regularize:
        return status, piv, warm_flag, 0.0, viol
    qscale = 1.0
    for i in range(n):
        qscale = max(qscale, abs(Q[i, i]))
    Qr = _ar.floats_2d(ar, n, n)
    for i in range(n):
        for j in range(n):
            Qr[i, j] = Q[i, j]
    zb = _ar.floats_copy(ar, z)
    eps = eps_min
    total = piv
    while eps <= eps_max * (1.0 + 1e-12):
        e = eps * qscale
        for i in range(n):
            Qr[i, i] = Q[i, i] + e
        # regularized attempts: cold start only (the warm basis belongs to the plain problem);
        # np.bool_: a typed flag, not a literal (one compiled _lemke_once, not two)
        st, p2, wf, v2 = call_separately(_lemke_once, (
            Qr, q, warm, np.bool_(False), o, z, w, basis, ws, ar
        ))
        total += p2
        if st == SUCCESS:
            v_orig = _violation(Q, q, z, w)
            if v_orig <= reg_tol:
                return SUCCESS, total, wf, e, v_orig
        eps *= eps_factor
    # all failed: keep the best iterate of the plain run
    for i in range(n):
        z[i] = zb[i]
    viol = _violation(Q, q, z, w)
    return status, total, warm_flag, 0.0, viol


# --------------------------------------------------------------------------- Python API
@dataclass
class LCPSolution:
    """Result of :func:`solve_lcp`.

    Attributes:
        z, w: (n,) solution with ``w = Q z + q`` (w computed with the ORIGINAL Q).
        status: SUCCESS / RAY_TERMINATION / PIVOT_LIMIT / FAILED_CHECK.
        pivots: total number of pivots (all attempts).
        warm_used: the returned solution came from the warm-start basis.
        warm_rejected: a warm start was given but was singular / failed (cold start used).
        regularization: Tikhonov shift ``eps`` used (0.0: none) [units of Q].
        residual: max over i of ``max(-z_i, -w_i, min(|z_i|, |w_i|))`` w.r.t. the original Q,
            in the units of q.
        basic: (n,) bool, ``z_i`` basic in the final basis (warm start for the next call).
    """

    z: np.ndarray
    w: np.ndarray
    status: int
    pivots: int
    warm_used: bool
    warm_rejected: bool
    regularization: float
    residual: float
    basic: np.ndarray

    @property
    def ok(self) -> bool:
        """True if the LCP (possibly regularized) was solved."""
        return self.status == SUCCESS


def lcp_residual(Q: np.ndarray, q: np.ndarray, z: np.ndarray) -> float:
    """Independent LCP check: ``max(-z, -w, min(|z|, |w|))`` with ``w = Q z + q``."""
    z = np.asarray(z, dtype=float)
    w = np.asarray(Q, dtype=float) @ z + np.asarray(q, dtype=float)
    if z.size == 0:
        return 0.0
    return float(np.max(np.maximum(np.maximum(-z, -w), np.minimum(np.abs(z), np.abs(w)))))


def solve_lcp(
    Q: np.ndarray,
    q: np.ndarray,
    warm_basic: np.ndarray | None = None,
    max_pivots: int | None = None,
    tol: float = 1e-9,
    piv_tol: float = 1e-9,
    regularize: bool = True,
    eps_min: float = 1e-12,
    eps_max: float = 1e-2,
    eps_factor: float = 100.0,
    reg_tol: float = 1e-6,
    check_input: bool = True,
) -> LCPSolution:
    """Solve LCP(q, Q) by Lemke's method (see module docstring).

    Args:
        Q: (n, n) LCP matrix.
        q: (n,) LCP vector.
        warm_basic: optional (n,) bool, the ``z`` indices that were basic last time.
        max_pivots: pivot limit per attempt (default ``50 n + 10``).
        tol: acceptance tolerance of the LCP violation, relative to ``max |q|``.
        piv_tol: pivot-element threshold (entries below are treated as zero; q is normalized,
            1e-9 avoids the spurious tiny pivots of degenerate contact LCPs).
        regularize: enable the Tikhonov fallback ``Q + eps I``.
        eps_min, eps_max, eps_factor: Tikhonov schedule, relative to ``max(1, max_i |Q_ii|)``.
        reg_tol: a regularized solution is accepted only if it violates the ORIGINAL LCP by at
            most ``reg_tol * max |q|`` (otherwise the next, larger eps is tried).
        check_input: validate shapes / finiteness (internal callers with validated float64
            arrays may skip it).

    Returns:
        :class:`LCPSolution` (finite, never NaN).

    Raises:
        ValueError: on shape mismatch or non-finite input (naming ``Q`` or ``q``).
    """
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64).reshape(-1)
    n = q.shape[0]
    if check_input:
        if Q.shape != (n, n):
            raise ValueError(f"solve_lcp: Q must have shape ({n}, {n}), got {Q.shape}")
        if not np.all(np.isfinite(Q)):
            raise ValueError("solve_lcp: Q contains non-finite values")
        if not np.all(np.isfinite(q)):
            raise ValueError("solve_lcp: q contains non-finite values")
    if n == 0:
        e = np.zeros(0)
        return LCPSolution(e, e, SUCCESS, 0, False, False, 0.0, 0.0, np.zeros(0, dtype=bool))
    qs = float(np.max(np.abs(q)))
    if qs == 0.0 or np.min(q) >= 0.0:
        z = np.zeros(n)
        return LCPSolution(z, q.copy(), SUCCESS, 0, False, False, 0.0, 0.0, np.zeros(n, dtype=bool))
    qn = q / qs
    use_warm = warm_basic is not None and bool(np.any(warm_basic))
    warm = (
        np.zeros(n, dtype=np.bool_)
        if warm_basic is None
        else np.ascontiguousarray(warm_basic, dtype=np.bool_).reshape(n)
    )
    mp = int(50 * n + 10 if max_pivots is None else max_pivots)
    z = np.zeros(n)
    w = np.zeros(n)
    basis = np.zeros(n, dtype=np.int64)
    o = LemkeOptions(mp, float(piv_tol), float(tol), bool(regularize), float(eps_min),
                     float(eps_max), float(eps_factor), float(reg_tol))
    status, piv, wflag, eps, viol = _solve_lcp_kernel(Q, qn, warm, use_warm, o, z, w, basis,
                                                      NO_ARENA)
    z *= qs
    w = Q @ z + q
    basic = np.zeros(n, dtype=bool)
    sel = (basis >= n) & (basis < 2 * n)
    basic[basis[sel] - n] = True
    # keep degenerate basic variables (value 0): the final basis itself is non-singular
    return LCPSolution(
        z=z,
        w=w,
        status=int(status),
        pivots=int(piv),
        warm_used=wflag == 1,
        warm_rejected=wflag == 2,
        regularization=float(eps),
        residual=float(viol) * qs,
        basic=basic,
    )


def warmup() -> None:
    """Compile the numba kernels (call at start-up, not in the first control tick)."""
    Q = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-1.0, -1.0])
    solve_lcp(Q, q)
    solve_lcp(Q, q, warm_basic=np.array([True, False]))
    solve_lcp(np.array([[-1.0]]), np.array([-1.0]), max_pivots=3)
