"""Exact dense strictly convex QP solver: the Goldfarb-Idnani dual active-set method, compiled.

One compiled kernel family: :func:`dense_qp_kernel` and :func:`psd_finish_kernel` share the
Givens and factorization helpers and the workspace layout (:func:`work_sizes`) defined here, and
a kernel's numba cache entry and compile time depend on the module that defines it.

Problem (OSQP's form, so that it is a drop-in for the small dense QPs of :mod:`.qp`)::

    minimize    1/2 x^T P x + q^T x
    subject to  l <= A x <= u

with ``P`` (n, n) symmetric positive definite, ``A`` (m, n) dense, ``l``, ``u`` (m,). Bounds with
``l_i <= -1e20`` / ``u_i >= 1e20`` (including -inf / +inf and OSQP's +-1e30) are absent
(one-sided or free rows); ``l_i == u_i`` makes row i an equality. Units are the caller's.

Algorithm: D. Goldfarb and A. Idnani, "A numerically stable dual method for solving strictly
convex quadratic programs", Math. Programming 27 (1983) 1-33 (the method of the quadprog /
eiquadprog libraries, written here from the paper). With ``P = L L^T`` (Cholesky, once per call)
and the active constraint normals ``N`` (one column per active row side),
``L^-1 N = Q [R; 0]`` is kept as ``J = L^-T Q`` and the upper triangular ``R``; adding a
constraint appends a column (Givens rotations of ``J``), dropping one removes a column of ``R``
and restores its triangular form (Givens rotations of ``R`` and ``J``). Each iteration:

1. pick the most violated inactive row side (violation divided by ``|a_i|``); none violated
   beyond ``tol * (|b_i| + sum_j |a_ij x_j| + |a_i| xscale)`` (``xscale`` the largest ``|x|``
   met so far, the size of the iterates' rounding errors): optimal;
2. step direction ``z = J_2 J_2^T n`` (primal, in the null space of the active normals) and
   ``r = R^-1 J_1^T n`` (change of the active multipliers); partial step ``t1`` = the largest
   step keeping the active inequality multipliers >= 0, full step ``t2`` = the step that makes
   the chosen row side active; ``t2 <= t1``: step and add the row; else step ``t1``, drop the
   blocking row and repeat 2. with the same row; ``z = 0`` (normal dependent on the active ones)
   and no blocking multiplier: infeasible.

Equality rows are added first (a row dependent on the ones already added -- a redundant or
inconsistent equality -- is not added but kept as two one-sided rows, so a consistent redundant
equality costs nothing and an inconsistent one is reported infeasible). Start point: the
minimizer on the initial active set, ``x = x0 + J_1 R^-T (b_A - N^T x0)`` with ``x0 = -P^-1 q``,
multipliers ``R^-1 R^-T (b_A - N^T x0)``.

Warm start (``warm_active``, e.g. the ``work.active`` of the previous call): the guessed row sides
are added after the equalities, the start point is the minimizer on them, and while an
inequality multiplier is negative (the guess is not a dual feasible start) the most negative one
is dropped and the start point recomputed; the method then continues from that point. A correct
guess therefore needs no iteration; a wrong one costs a few drops (at worst it degenerates to the
cold start, with the drops counted as iterations). Guessed rows that are dependent on the rows
already added or point to an absent bound are ignored.

Sign conventions (OSQP's): ``y`` are the multipliers of ``A x`` with ``P x + q + A^T y = 0``;
``y_i > 0`` on an active upper bound, ``y_i < 0`` on an active lower bound, ``y_i = 0`` on an
inactive row, either sign on an equality row. ``work.active[i]``: ``-1`` lower bound active,
``+1`` upper bound active, ``2`` equality row added as such, ``0`` inactive.

Statuses (OSQP's values): :data:`SOLVED` (1); :data:`INFEASIBLE` (3, primal infeasible, also
for ``l_i > u_i``, ``l_i >= 1e20`` or ``u_i <= -1e20``; ``x`` is the last iterate);
:data:`MAX_ITER` (7, ``x`` / ``y`` the last iterate: dual feasible, primal infeasible);
:data:`NOT_PD` (9, Cholesky of ``P`` failed: a pivot <= ``1e-14 * max diag P``, i.e. not positive
definite to working accuracy); :data:`INVALID` (11, non-finite ``P``, ``q``, ``A`` or NaN bounds).

Iteration count: steps of the method (additions, drops and pure dual steps of stage 2 above)
plus drops of the warm-start repair; the initial additions of equalities and warm-start rows
(one QR update each, no step) are not counted.

Positive semidefinite Hessians (:func:`psd_finish_kernel`): for ``minimize 1/2 x^T H x + q^T x``
with ``H`` only semidefinite, the dual method solves the proximal problem with ``P = H + delta I``,
whose minimizer is biased by ``delta |x|`` and, on a thin optimal face (directions of curvature
comparable to ``delta``), far from the optimum of ``H``. The finishing pass continues from that
minimizer with a primal active-set method on ``H`` itself, on the same factorization: ``J_2``, the
last ``n - nact`` columns of ``J``, spans the null space of the active normals and is
``P``-orthonormal, so the reduced Hessian ``S = J_2^T H J_2 = I - delta J_2^T J_2`` has its
eigenvalues in [0, 1]. Each iteration takes the Newton step ``-J_2 S^+ J_2^T g`` on the active set
(``S^+`` from a Cholesky factorization of ``S`` with diagonal pivoting, pivots at the rounding
level of ``S`` ending it: the minimum-norm step, which leaves the face's flat directions alone) or,
where the gradient has a part in the null space of ``S`` (a flat direction of descent), that part
with an exact line search; a ratio test makes the first row side the step reaches active. At a
point that is stationary on its active set, an inequality multiplier below ``-1e-9`` of the largest
one or of the gradient's scale (:data:`FINISH_MULT_TOL`) is dropped; none: optimal (the multipliers
of ``H``'s KKT conditions). The starting point is feasible and dual feasible for the proximal
problem, so one Newton step typically ends it. Statuses :data:`SOLVED`, :data:`MAX_ITER` and
:data:`UNBOUNDED` (a descent direction of zero curvature that no row bounds: no finite optimum).

Compiled: :func:`dense_qp_kernel` (``@njit``) works on flat float64 / int64 workspace buffers
allocated once per ``(n, m)`` by :class:`DenseQPWork`; no allocation per call, so it can be
called from other compiled code. :func:`solve_dense_qp` is the Python entry point.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import chol_solve, cholesky, matvec, pivoted_cholesky
from ..kernels.separate import call_separately

__all__ = [
    "DenseQPWork",
    "solve_dense_qp",
    "dense_qp_kernel",
    "work_sizes",
    "SOLVED",
    "INFEASIBLE",
    "MAX_ITER",
    "NOT_PD",
    "INVALID",
    "UNBOUNDED",
    "STATUS_NAMES",
    "psd_finish_kernel",
    "warmup",
]

SOLVED = 1
INFEASIBLE = 3
UNBOUNDED = 5
MAX_ITER = 7
NOT_PD = 9
INVALID = 11
STATUS_NAMES = {SOLVED: "solved", INFEASIBLE: "primal_infeasible", UNBOUNDED: "dual_infeasible",
                MAX_ITER: "max_iter_reached", NOT_PD: "non_convex", INVALID: "invalid_data"}

#: bounds beyond this magnitude are absent (OSQP's infinity is 1e30)
BOUND_INF = 1e20

# kinds of an active constraint (also the values of ``active``)
_LOWER = -1
_UPPER = 1
_EQ = 2
# a row side skipped for now (dependent on the active rows, violated at rounding level only)
_SKIP = 3

#: a dependent row violated by at most this times (|b_i| + |a_i| xscale) counts as satisfied
#: (degenerate vertices, see :func:`dense_qp_kernel`)
DEPENDENT_FEAS_TOL = 1e-9


#: :func:`psd_finish_kernel`: an active inequality multiplier counts as negative below this
#: fraction of the largest one or of the gradient's scale ``max_i (|q_i| + sum_j |H_ij x_j|)``
#: (both in the gradient's units, ``u_j |a_j|``)
FINISH_MULT_TOL = 1e-9


def work_sizes(n: int, m: int) -> tuple[int, int]:
    """Lengths of the float and int workspace buffers of :func:`dense_qp_kernel` and
    :func:`psd_finish_kernel`."""
    return 5 * n * n + 9 * n + 2 * m, 3 * n + 2 * m + 2


# --------------------------------------------------------------------------- kernels
@leaf_kernel
def _givens(a: float, b: float) -> tuple[float, float, float]:
    """(c, s, h) with [c s; -s c] [a; b] = [h; 0]."""
    h = np.hypot(a, b)
    if h == 0.0:
        return 1.0, 0.0, 0.0
    return a / h, b / h, h


@leaf_kernel
def _rot_rows(M: np.ndarray, i: int, j: int, c: float, s: float, k0: int, k1: int) -> None:
    """Rows i, j of M (columns k0..k1-1) <- [c s; -s c] [row i; row j]."""
    for k in range(k0, k1):
        a = M[i, k]
        b = M[j, k]
        M[i, k] = c * a + s * b
        M[j, k] = -s * a + c * b


@leaf_kernel
def _normal_dot(A: np.ndarray, row: int, kind: int, v: np.ndarray) -> float:
    """n^T v for the normal n of (row, kind): n = a_row (lower / equality), -a_row (upper)."""
    s = 0.0
    for j in range(A.shape[1]):
        s += A[row, j] * v[j]
    return -s if kind == _UPPER else s


@leaf_kernel
def _rhs(l: np.ndarray, u: np.ndarray, row: int, kind: int) -> float:
    """b of n^T x >= b (lower / equality: l_row; upper: -u_row)."""
    return -u[row] if kind == _UPPER else l[row]


@leaf_kernel
def _compute_d(Jt: np.ndarray, A: np.ndarray, row: int, kind: int, d: np.ndarray) -> None:
    """d = J^T n (Jt holds J transposed: row j of Jt = column j of J)."""
    n = Jt.shape[0]
    sg = -1.0 if kind == _UPPER else 1.0
    for j in range(n):
        s = 0.0
        for i in range(n):
            s += Jt[j, i] * A[row, i]
        d[j] = sg * s


@leaf_kernel
def _add_column(Jt: np.ndarray, R: np.ndarray, d: np.ndarray, nact: int, S: np.ndarray,
                carry: bool) -> None:
    """Append the column d = J^T n to the factorization (Givens rotations of J from the
    bottom so that d[nact+1:] = 0; new column of R = d[:nact+1]).

    ``carry``: also carry the reduced Hessian ``S`` of ``J_2`` (the columns ``nact..n-1`` of
    J, :func:`psd_finish_kernel`) along -- the rotations of ``J_2``'s columns applied to its
    rows and columns, then its first row and column (the new active direction) removed;
    ``S`` is not touched otherwise."""
    n = Jt.shape[0]
    r = n - nact
    for j in range(n - 1, nact, -1):
        if d[j] == 0.0:
            continue
        c, s, h = _givens(d[j - 1], d[j])
        d[j - 1] = h
        d[j] = 0.0
        _rot_rows(Jt, j - 1, j, c, s, np.int64(0), n)
        if carry:
            a = j - nact
            _rot_rows(S, a - 1, a, c, s, np.int64(0), r)
            for i in range(r):  # the same rotation of columns a - 1, a
                u = S[i, a - 1]
                v = S[i, a]
                S[i, a - 1] = c * u + s * v
                S[i, a] = -s * u + c * v
    for i in range(nact + 1):
        R[i, nact] = d[i]
    for i in range(nact + 1, n):
        R[i, nact] = 0.0
    if carry:
        for a in range(r - 1):
            for b in range(r - 1):
                S[a, b] = S[a + 1, b + 1]


@leaf_kernel
def _drop(Jt: np.ndarray, R: np.ndarray, act: np.ndarray, kind: np.ndarray, uact: np.ndarray,
          nact: int, k: int) -> None:
    """Remove active constraint k (of nact): delete column k of R, restore the triangular form
    with Givens rotations of rows of R and (the same) columns of J."""
    n = Jt.shape[0]
    for j in range(k, nact - 1):
        act[j] = act[j + 1]
        kind[j] = kind[j + 1]
        uact[j] = uact[j + 1]
        for i in range(j + 2):
            R[i, j] = R[i, j + 1]
    for j in range(k, nact - 1):
        c, s, h = _givens(R[j, j], R[j + 1, j])
        R[j, j] = h
        R[j + 1, j] = 0.0
        _rot_rows(R, j, j + 1, c, s, j + 1, nact - 1)
        _rot_rows(Jt, j, j + 1, c, s, np.int64(0), n)
    for i in range(nact):
        R[i, nact - 1] = 0.0


@leaf_kernel
def _start_point(x0: np.ndarray, Jt: np.ndarray, R: np.ndarray,
                 A: np.ndarray, l: np.ndarray, u: np.ndarray, act: np.ndarray,
                 kind: np.ndarray, nact: int, x: np.ndarray, uact: np.ndarray,
                 w: np.ndarray) -> None:
    """Minimizer on the active set: w = R^-T (b_A - N^T x0), x = x0 + J_1 w, u = R^-1 w."""
    n = Jt.shape[0]
    for j in range(nact):   # forward substitution with R^T (lower triangular)
        s = _rhs(l, u, act[j], kind[j]) - _normal_dot(A, act[j], kind[j], x0)
        for i in range(j):
            s -= R[i, j] * w[i]
        w[j] = s / R[j, j]
    for i in range(n):
        x[i] = x0[i]
    for j in range(nact):
        wj = w[j]
        for i in range(n):
            x[i] += wj * Jt[j, i]
    for j in range(nact - 1, -1, -1):   # back substitution with R
        s = w[j]
        for i in range(j + 1, nact):
            s -= R[j, i] * uact[i]
        uact[j] = s / R[j, j]


@leaf_kernel
def _minimizer_on_active_set(x0, Jt, R, A, l, u, act, kind, nact, x, uact, w, active):
    """x = the minimizer on the active set with dual feasibility restored: while an inequality
    multiplier is negative, drop the most negative one. Returns (nact, drops)."""
    drops = 0
    while True:
        _start_point(x0, Jt, R, A, l, u, act, kind, nact, x, uact, w)
        k = np.int64(-1)  # (not a literal: one compiled signature)
        umin = 0.0
        for j in range(nact):
            if kind[j] != _EQ and uact[j] < umin:
                umin = uact[j]
                k = j
        if k < 0:
            return nact, drops
        active[act[k]] = 0
        _drop(Jt, R, act, kind, uact, nact, k)
        nact -= 1
        drops += 1


@njit(cache=True, inline="always")
def _workspace(fwork: np.ndarray, iwork: np.ndarray, n: int, m: int):
    """The views of the workspace (:func:`work_sizes`; no allocation): the dual method's
    ``L``, ``Jt``, ``R`` (n, n), ``x0``, ``d``, ``z``, ``r``, ``uact``, ``w`` (n,),
    ``rownorm``, ``ax`` (m,), then the finishing pass's ``S``, ``C`` (n, n), ``pv``, ``tv``,
    ``sv`` (n,); of ``iwork`` the active set ``act``, ``kind`` (n,) and the finishing pass's
    ``perm`` (n,)."""
    nn = n * n
    L = fwork[0:nn].reshape((n, n))
    Jt = fwork[nn:2 * nn].reshape((n, n))
    R = fwork[2 * nn:3 * nn].reshape((n, n))
    o = 3 * nn
    x0 = fwork[o:o + n]
    d = fwork[o + n:o + 2 * n]
    z = fwork[o + 2 * n:o + 3 * n]
    r = fwork[o + 3 * n:o + 4 * n]
    uact = fwork[o + 4 * n:o + 5 * n]
    w = fwork[o + 5 * n:o + 6 * n]
    o += 6 * n
    rownorm = fwork[o:o + m]
    ax = fwork[o + m:o + 2 * m]
    o += 2 * m
    S = fwork[o:o + nn].reshape((n, n))
    C = fwork[o + nn:o + 2 * nn].reshape((n, n))
    o += 2 * nn
    pv = fwork[o:o + n]
    tv = fwork[o + n:o + 2 * n]
    sv = fwork[o + 2 * n:o + 3 * n]
    return (L, Jt, R, x0, d, z, r, uact, w, rownorm, ax, S, C, pv, tv, sv, iwork[0:n],
            iwork[n:2 * n], iwork[2 * n + 1:3 * n + 1])


@leaf_kernel
def _outside(d: np.ndarray, nact: int) -> tuple[float, float]:
    """(|d|^2, |d[nact:]|^2): the length of ``d = J^T n`` and of its part outside the span of
    the active normals (the dependence test)."""
    s1 = 0.0
    s2 = 0.0
    for j in range(d.shape[0]):
        s1 += d[j] * d[j]
        if j >= nact:
            s2 += d[j] * d[j]
    return s1, s2


@leaf_kernel
def _try_add(Jt: np.ndarray, R: np.ndarray, A: np.ndarray, row: int, kd: int, d: np.ndarray,
             nact: int, dep_tol: float) -> bool:
    """Add (row, kd) to the factorization unless its normal depends on the active ones."""
    n = Jt.shape[0]
    if nact >= n:
        return False
    _compute_d(Jt, A, row, kd, d)
    s1, s2 = _outside(d, nact)
    if not (s2 > dep_tol * dep_tol * s1):
        return False
    _add_column(Jt, R, d, nact, R, np.bool_(False))
    return True


@leaf_kernel
def dense_qp_kernel(P: np.ndarray, q: np.ndarray, A: np.ndarray, l: np.ndarray,
                    u: np.ndarray, warm: np.ndarray, use_warm: bool, max_iter: int,
                    tol: float, dep_tol: float, fwork: np.ndarray, iwork: np.ndarray,
                    x: np.ndarray, y: np.ndarray, active: np.ndarray) -> tuple[int, int]:
    """Goldfarb-Idnani dual active-set method (see the module docstring).

    Args:
        P, q, A, l, u: the problem (float64, C-contiguous; P (n, n), A (m, n)).
        warm: (m,) int64 guess of the active row sides (-1 lower, +1 upper, other: none),
            read only if ``use_warm``; must not be the ``active`` array (zeroed first).
        max_iter: iteration limit (status MAX_ITER when reached).
        tol: relative primal feasibility tolerance: row i is violated if its violation exceeds
            ``tol * (|b_i| + sum_j |A_ij x_j| + |a_i| xscale)`` (module docstring, step 1).
        dep_tol: a normal whose part outside the span of the active ones (in the metric of
            ``P^-1``) is below ``dep_tol`` times its length counts as dependent.
        fwork, iwork: workspace buffers of lengths :func:`work_sizes` (overwritten).
        x, y, active: outputs (n,), (m,), (m,) int64 (overwritten).

    Returns:
        (status, iterations).
    """
    n = q.shape[0]
    m = l.shape[0]
    (L, Jt, R, x0, d, z, r, uact, w, rownorm, ax, _S, _C, _pv, _tv, _sv, act, kind,
     _perm) = _workspace(fwork, iwork, n, m)
    for i in range(n):
        x[i] = 0.0
    for i in range(m):
        y[i] = 0.0
        active[i] = 0
    # ---- data checks
    for i in range(n):
        if not np.isfinite(q[i]):
            return INVALID, 0
        for j in range(n):
            if not np.isfinite(P[i, j]):
                return INVALID, 0
    for i in range(m):
        if np.isnan(l[i]) or np.isnan(u[i]):
            return INVALID, 0
        s = 0.0
        for j in range(n):
            if not np.isfinite(A[i, j]):
                return INVALID, 0
            s += A[i, j] * A[i, j]
        rownorm[i] = np.sqrt(s)
    for i in range(m):   # crossed bounds, a x >= +inf, a x <= -inf
        if l[i] > u[i] or l[i] >= BOUND_INF or u[i] <= -BOUND_INF:
            return INFEASIBLE, 0
    # ---- Cholesky P = L L^T (lower triangle of P used), then Jt = L^-1 (J = L^-T)
    dmax = 0.0
    for i in range(n):
        dmax = max(dmax, abs(P[i, i]))
    if not cholesky(P, L, 1e-14 * dmax):
        return NOT_PD, 0
    for i in range(n):
        for j in range(n):
            Jt[i, j] = 0.0
            R[i, j] = 0.0
    for c in range(n):   # column c of L^-1: forward substitution of e_c
        Jt[c, c] = 1.0 / L[c, c]
        for i in range(c + 1, n):
            s = 0.0
            for k in range(c, i):
                s -= L[i, k] * Jt[k, c]
            Jt[i, c] = s / L[i, i]
    # unconstrained minimizer x0 = -J J^T q
    matvec(Jt, q, w)
    for i in range(n):
        x0[i] = 0.0
    for j in range(n):
        wj = w[j]
        for i in range(n):
            x0[i] -= wj * Jt[j, i]
    # ---- initial active set: equalities, then the warm-start guess
    nact = np.int64(0)  # (np.int64: not a literal, one compiled signature of the callees)
    for i in range(m):
        if l[i] == u[i] and abs(l[i]) < BOUND_INF:
            if call_separately(_try_add, (Jt, R, A, i, np.int64(_EQ), d, nact, dep_tol)):
                act[nact] = i
                kind[nact] = _EQ
                active[i] = _EQ
                nact += 1
    if use_warm:
        for i in range(m):
            if active[i] != 0 or (l[i] == u[i] and abs(l[i]) < BOUND_INF):
                continue
            kd = warm[i]
            if kd == _LOWER and l[i] > -BOUND_INF or kd == _UPPER and u[i] < BOUND_INF:
                if call_separately(_try_add, (Jt, R, A, i, kd, d, nact, dep_tol)):
                    act[nact] = i
                    kind[nact] = kd
                    active[i] = kd
                    nact += 1
    # start point; warm-start repair: drop negative inequality multipliers
    # the two big helpers called separately (wbc_dynamics.kernels.separate): their code is not
    # compiled into this kernel once more (a cold start's compile time)
    nact, it = call_separately(_minimizer_on_active_set, (x0, Jt, R, A, l, u, act, kind, nact, x,
                                                          uact, w, active))
    # ---- main loop
    status = MAX_ITER
    # the largest |x| met so far (unconstrained minimizer, start point, iterates): the
    # iterates carry rounding errors of that size, so a row counts as violated only beyond
    # tol * (|b_i| + |a_i| xscale) -- else a degenerate vertex (several dependent rows through
    # one point, e.g. the facets of a contact's friction pyramid at f = 0) reached with
    # ~1e-16 residues reads as violated rows that cannot be added (a false INFEASIBLE)
    xscale = 0.0
    for i in range(n):
        xscale = max(xscale, abs(x0[i]))
    while True:
        # step 1: most violated inactive row side
        p = np.int64(-1)
        pk = np.int64(0)
        best = 0.0
        for i in range(n):
            xscale = max(xscale, abs(x[i]))
        for i in range(m):
            s = 0.0
            sc = 0.0
            for j in range(n):
                t = A[i, j] * x[j]
                s += t
                sc += abs(t)
            ax[i] = s
            if active[i] != 0:
                continue
            rn = max(rownorm[i], 1e-300)
            sc += rownorm[i] * xscale
            if l[i] > -BOUND_INF:
                v = l[i] - s
                if v > tol * (abs(l[i]) + sc) and v / rn > best:
                    best = v / rn
                    p = i
                    pk = _LOWER
            if u[i] < BOUND_INF:
                v = s - u[i]
                if v > tol * (abs(u[i]) + sc) and v / rn > best:
                    best = v / rn
                    p = i
                    pk = _UPPER
        if p < 0:
            status = SOLVED
            break
        # step 2: make (p, pk) active
        uplus = 0.0
        added = False
        skipped = False
        while not added:
            if it >= max_iter:
                status = MAX_ITER
                break
            it += 1
            _compute_d(Jt, A, p, pk, d)
            s1, s2 = _outside(d, nact)
            full = nact < n and s2 > dep_tol * dep_tol * s1
            # r = R^-1 d_1 (back substitution)
            for j in range(nact - 1, -1, -1):
                s = d[j]
                for i in range(j + 1, nact):
                    s -= R[j, i] * r[i]
                r[j] = s / R[j, j]
            t1 = np.inf
            kdrop = np.int64(-1)
            for j in range(nact):
                if kind[j] != _EQ and r[j] > 0.0:
                    ratio = uact[j] / r[j]
                    if ratio < t1:
                        t1 = ratio
                        kdrop = j
            t2 = np.inf
            if full:
                for i in range(n):
                    s = 0.0
                    for j in range(nact, n):
                        s += d[j] * Jt[j, i]
                    z[i] = s
                viol = _rhs(l, u, p, pk) - _normal_dot(A, p, pk, x)
                t2 = max(viol, 0.0) / s2
            if kdrop < 0 and not full:
                # the row is a combination of the active ones (to dep_tol): infeasible --
                # unless it is violated at rounding level only, DEPENDENT_FEAS_TOL (|b_i| +
                # |a_i| xscale) (a degenerate vertex, e.g. the facets of a contact whose Stage I
                # force is ~1e-10 N); then it is skipped until the next addition moves x
                viol = _rhs(l, u, p, pk) - _normal_dot(A, p, pk, x)
                if viol <= DEPENDENT_FEAS_TOL * (abs(_rhs(l, u, p, pk))
                                                 + rownorm[p] * xscale):
                    active[p] = _SKIP
                    skipped = True
                    break
                status = INFEASIBLE
                break
            if t2 <= t1:
                for i in range(n):
                    x[i] += t2 * z[i]
                for j in range(nact):
                    uact[j] -= t2 * r[j]
                uplus += t2
                _add_column(Jt, R, d, nact, R, np.bool_(False))
                act[nact] = p
                kind[nact] = pk
                uact[nact] = uplus
                active[p] = pk
                nact += 1
                added = True
                for i in range(m):   # x moved: skipped rows are examined again
                    if active[i] == _SKIP:
                        active[i] = 0
            else:
                if full:
                    for i in range(n):
                        x[i] += t1 * z[i]
                for j in range(nact):
                    uact[j] -= t1 * r[j]
                uplus += t1
                active[act[kdrop]] = 0
                _drop(Jt, R, act, kind, uact, nact, kdrop)
                nact -= 1
        if skipped:
            if uplus > 0.0:
                # partial steps were taken towards the skipped row: x and the multipliers
                # include its multiplier uplus; restore the minimizer on the active set (and
                # dual feasibility, as the warm-start repair above)
                nact, drops = call_separately(_minimizer_on_active_set, (
                    x0, Jt, R, A, l, u, act, kind, nact, x, uact, w, active))
                it += drops
            continue
        if not added:
            break
    for i in range(m):
        if active[i] == _SKIP:
            active[i] = 0
    for j in range(nact):
        y[act[j]] = uact[j] if kind[j] == _UPPER else -uact[j]
    iwork[2 * n] = nact  # (the factorization's size, for psd_finish_kernel)
    return status, it


@leaf_kernel
def _factor_reduced(S: np.ndarray, r: int, Sw: np.ndarray, C: np.ndarray, perm: np.ndarray,
                    piv_tol: float) -> int:
    """The factorization :func:`_reduced_step` uses: ``Sw`` = the pivoted Cholesky factor
    ``L`` of the reduced Hessian ``S`` (r x r, ``linalg.pivoted_cholesky``), ``C`` the Cholesky
    factor of ``L^T L``. Returns the rank, -1 if ``L^T L`` is not positive definite."""
    for a in range(r):
        for b in range(r):
            Sw[a, b] = S[a, b]
    rank = pivoted_cholesky(Sw, r, perm, piv_tol)
    for a in range(rank):  # C = L^T L (lower triangle)
        for c in range(a + 1):
            s = 0.0
            for i in range(a, r):
                s += Sw[i, a] * Sw[i, c]
            C[a, c] = s
    if not cholesky(C[:rank, :rank], C[:rank, :rank], 0.0):
        return -1
    return rank


@leaf_kernel
def _reduced_step(Jt: np.ndarray, nact: int, L: np.ndarray, C: np.ndarray, perm: np.ndarray,
                  rank: int, e: np.ndarray, pv: np.ndarray, tv: np.ndarray, sv: np.ndarray,
                  dx: np.ndarray, ray_tol: float, ray_floor: float) -> bool:
    """The step of :func:`psd_finish_kernel` from the reduced gradient ``e = J_2^T g`` and the
    factorization of :func:`_factor_reduced`: ``dx = -J_2 S^+ e``, or ``dx = -J_2 e_0`` with
    ``e_0`` the part of ``e`` in the null space of ``S`` where that part exceeds ``ray_tol``
    of ``e`` and the rounding level ``ray_floor`` (a flat direction of descent: returns True).
    ``S^+ e = Pi^T L (L^T L)^-2 L^T Pi e`` and ``e - e_0 = Pi^T L (L^T L)^-1 L^T Pi e``."""
    n = Jt.shape[0]
    r = n - nact
    for a in range(rank):  # t = L^T Pi e
        s = 0.0
        for i in range(a, r):
            s += L[i, a] * e[perm[i]]
        tv[a] = s
    chol_solve(C, rank, tv, sv)  # (L^T L)^-1 L^T Pi e
    emax = 0.0
    nmax = 0.0
    for i in range(r):  # pv = Pi e - L (L^T L)^-1 L^T Pi e: the part in the null space of S
        s = 0.0
        for a in range(min(i + 1, rank)):
            s += L[i, a] * sv[a]
        pv[i] = e[perm[i]] - s
        emax = max(emax, abs(e[perm[i]]))
        nmax = max(nmax, abs(pv[i]))
    ray = nmax > ray_tol * emax and nmax > ray_floor
    if not ray:
        chol_solve(C, rank, sv, sv)  # (L^T L)^-2 L^T Pi e
        for i in range(r):
            s = 0.0
            for a in range(min(i + 1, rank)):
                s += L[i, a] * sv[a]
            pv[i] = s
    for i in range(n):
        dx[i] = 0.0
    for i in range(r):  # dx = -J_2 Pi^T pv
        c = pv[i]
        row = nact + perm[i]
        for j in range(n):
            dx[j] -= c * Jt[row, j]
    return ray


@leaf_kernel
def _reduced_hessian(Jt: np.ndarray, nact: int, delta: float, S: np.ndarray) -> None:
    """``S = J_2^T H J_2 = I - delta J_2^T J_2`` (r x r, ``J_2`` = rows ``nact..n-1`` of ``Jt``:
    ``J_2^T P J_2 = I`` with ``P = H + delta I``)."""
    n = Jt.shape[0]
    r = n - nact
    for a in range(r):
        za = Jt[nact + a]
        for b in range(a + 1):
            zb = Jt[nact + b]
            s = 0.0
            for j in range(n):
                s += za[j] * zb[j]
            s = (1.0 if a == b else 0.0) - delta * s
            S[a, b] = s
            S[b, a] = s


@leaf_kernel
def _grow_reduced(Jt: np.ndarray, nact: int, delta: float, S: np.ndarray) -> None:
    """The reduced Hessian after a drop: ``J_2`` gained its first column ``z_0`` (row ``nact``
    of ``Jt``, the new ``nact``); ``S`` (of the other columns) shifted by one, its first row
    and column ``e_0 - delta z_0^T J_2``."""
    n = Jt.shape[0]
    r = n - nact
    for a in range(r - 2, -1, -1):
        for b in range(r - 2, -1, -1):
            S[a + 1, b + 1] = S[a, b]
    z0 = Jt[nact]
    for b in range(r):
        zb = Jt[nact + b]
        s = 0.0
        for j in range(n):
            s += zb[j] * z0[j]
        s = (1.0 if b == 0 else 0.0) - delta * s
        S[0, b] = s
        S[b, 0] = s


@leaf_kernel
def psd_finish_kernel(H: np.ndarray, delta: float, q: np.ndarray, A: np.ndarray,
                      l: np.ndarray, u: np.ndarray, max_iter: int, tol: float, dep_tol: float,
                      fwork: np.ndarray, iwork: np.ndarray, x: np.ndarray, y: np.ndarray,
                      active: np.ndarray) -> tuple[int, int]:
    """The exact minimizer of ``1/2 x^T H x + q^T x`` s.t. ``l <= A x <= u`` for a positive
    semidefinite ``H``, continued from :func:`dense_qp_kernel`'s solution of the proximal
    problem with ``P = H + delta I`` (``delta > 0``): the finishing pass of the module
    docstring.

    Call it right after :func:`dense_qp_kernel` returned :data:`SOLVED` on ``P``, ``q``, ``A``,
    ``l``, ``u`` with the same workspace and outputs: it reads the factorization the dual method
    left in ``fwork`` / ``iwork`` and updates it, ``x``, ``y`` and ``active`` in place (the
    solution, its multipliers for ``H`` and its active row sides). The reduced Hessian is
    ``J_2^T H J_2 = I - delta J_2^T J_2`` (``J_2^T P J_2 = I``), carried along through the
    additions (:func:`_add_column`) and drops (a new first column). ``tol``: a
    step below ``tol`` times the largest ``|x|`` is rounding (the point is stationary on its
    active set); ``dep_tol``: a row side whose normal changes along the step by less than
    ``dep_tol |a_i| |dx|`` does not block it (a row dependent on the active ones). Returns
    (status, iterations): :data:`SOLVED`; :data:`UNBOUNDED`; :data:`MAX_ITER` at the
    iteration limit or where rounding stops it (a blocking row dependent on the active ones,
    a singular factorization). ``x`` is then the last iterate: feasible, its objective no
    larger than the starting point's.
    """
    n = q.shape[0]
    m = l.shape[0]
    # (the dual method's Cholesky factor, spent, holds S's pivoted factor; its rownorm as it
    # computed them)
    (Sw, Jt, R, g, d, dx, _r, uact, e, rownorm, _ax, S, C, pv, tv, sv, act, kind,
     perm) = _workspace(fwork, iwork, n, m)
    nact = iwork[2 * n]
    eps = np.finfo(np.float64).eps
    hmax = 0.0
    for i in range(n):
        hmax = max(hmax, H[i, i])
    status = MAX_ITER
    it = np.int64(0)
    last_full = np.inf  # |dx| of the last full Newton step (rounding floor detection)
    # S = J_2^T H J_2, kept along through the additions and drops below; its factorization
    # (rank >= 0) while the active set is unchanged
    _reduced_hessian(Jt, nact, delta, S)
    rank = np.int64(-1)
    zz = 0.0
    while it < max_iter:
        it += 1
        r = n - nact
        xscale = 0.0
        for i in range(n):
            xscale = max(xscale, abs(x[i]))
        gabs = 0.0
        for i in range(n):  # g = H x + q
            s = q[i]
            sa = abs(q[i])
            for j in range(n):
                t = H[i, j] * x[j]
                s += t
                sa += abs(t)
            g[i] = s
            gabs = max(gabs, sa)
        for a in range(r):  # e = J_2^T g
            za = Jt[nact + a]
            s = 0.0
            for j in range(n):
                s += za[j] * g[j]
            e[a] = s
        if rank < 0:  # the active set changed: factorize S again
            zz = 0.0
            for a in range(r):
                za = Jt[nact + a]
                nz = 0.0
                for j in range(n):
                    nz += za[j] * za[j]
                zz = max(zz, nz)
            # S's rounding: n eps |H| |z|^2 (its eigenvalues lie in [0, 1]); pivots below it
            # are flat directions of the face
            rank = _factor_reduced(S, r, Sw, C, perm, max(n * eps * hmax * zz, eps))
            if rank < 0:
                break
        # e's rounding: n eps |z| (|q| + |H| |x|)
        ray = _reduced_step(Jt, nact, Sw, C, perm, rank, e, pv, tv, sv, dx, 1e-8,
                            10.0 * n * eps * np.sqrt(zz) * gabs)
        dxn = 0.0
        slope = 0.0
        for i in range(n):
            dxn = max(dxn, abs(dx[i]))
            slope += g[i] * dx[i]
        stationary = (dxn <= tol * xscale or slope >= 0.0
                      or (not ray and dxn >= 0.5 * last_full))
        if stationary:
            # multipliers of the active rows: R u = J_1^T g
            for j in range(nact):
                s = 0.0
                for i in range(n):
                    s += Jt[j, i] * g[i]
                d[j] = s
            for j in range(nact - 1, -1, -1):
                s = d[j]
                for i in range(j + 1, nact):
                    s -= R[j, i] * uact[i]
                uact[j] = s / R[j, j]
            umax = gabs  # (the gradient's scale: multipliers of rounding size are zero)
            for j in range(nact):
                umax = max(umax, abs(uact[j]) * rownorm[act[j]])
            k = np.int64(-1)
            worst = -FINISH_MULT_TOL * umax
            for j in range(nact):
                if kind[j] != _EQ and uact[j] * rownorm[act[j]] < worst:
                    worst = uact[j] * rownorm[act[j]]
                    k = j
            if k < 0:
                status = SOLVED
                break
            active[act[k]] = 0
            _drop(Jt, R, act, kind, uact, nact, k)
            nact -= 1
            _grow_reduced(Jt, nact, delta, S)
            rank = -1
            last_full = np.inf
            continue
        # step length: 1 (Newton) or the exact line search along a ray
        afull = 1.0
        if ray:
            curv = 0.0
            for i in range(n):
                s = 0.0
                for j in range(n):
                    s += H[i, j] * dx[j]
                curv += dx[i] * s
            afull = -slope / curv if curv > eps * hmax * dxn * dxn else np.inf
        # ratio test: the first inactive row side the step reaches
        amin = afull
        p = np.int64(-1)
        pk = np.int64(0)
        for i in range(m):
            if active[i] != 0:
                continue
            s = 0.0
            ad = 0.0
            for j in range(n):
                s += A[i, j] * x[j]
                ad += A[i, j] * dx[j]
            small = dep_tol * rownorm[i] * dxn
            if l[i] > -BOUND_INF and ad < -small:
                t = max(s - l[i], 0.0) / -ad
                if t < amin:
                    amin = t
                    p = i
                    pk = _LOWER
            if u[i] < BOUND_INF and ad > small:
                t = max(u[i] - s, 0.0) / ad
                if t < amin:
                    amin = t
                    p = i
                    pk = _UPPER
        if amin == np.inf:
            status = UNBOUNDED
            break
        for i in range(n):
            x[i] += amin * dx[i]
        if p >= 0:
            _compute_d(Jt, A, p, pk, d)
            s1, s2 = _outside(d, nact)
            if not (nact < n and s2 > dep_tol * dep_tol * s1):
                break  # (a blocking row dependent on the active ones: rounding trouble)
            _add_column(Jt, R, d, nact, S, np.bool_(True))
            rank = -1
            act[nact] = p
            kind[nact] = pk
            active[p] = pk
            nact += 1
            last_full = np.inf
        else:
            last_full = np.inf if ray else dxn
    iwork[2 * n] = nact
    for i in range(m):
        y[i] = 0.0
    if status == SOLVED:
        for j in range(nact):
            y[act[j]] = uact[j] if kind[j] == _UPPER else -uact[j]
    return status, it


# --------------------------------------------------------------------------- Python API
class DenseQPWork:
    """Workspace of :func:`solve_dense_qp` for problems with ``n`` variables and ``m`` rows
    (allocated once; every call overwrites it).

    Attributes after a call: ``x`` (n,) primal solution, ``y`` (m,) multipliers of ``A x``
    (OSQP convention, see the module docstring), ``active`` (m,) int64 active row sides
    (-1 lower, +1 upper, 2 equality, 0 inactive; pass it back as ``warm_active``),
    ``iterations``, ``status``.
    """

    def __init__(self, n: int, m: int) -> None:
        self.n, self.m = int(n), int(m)
        nf, ni = work_sizes(self.n, self.m)
        self.fwork = np.zeros(nf)
        self.iwork = np.zeros(ni, dtype=np.int64)
        self.x = np.zeros(self.n)
        self.y = np.zeros(self.m)
        self.active = np.zeros(self.m, dtype=np.int64)
        self.warm = np.zeros(self.m, dtype=np.int64)   # copy of a guess that aliases ``active``
        self.iterations = 0
        self.status = 0

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(self.status, f"status_{self.status}")


def solve_dense_qp(P: np.ndarray, q: np.ndarray, A: np.ndarray, l: np.ndarray, u: np.ndarray,
                   work: DenseQPWork, warm_active: np.ndarray | None = None, *,
                   max_iter: int = 1000, tol: float = 1e-11, dep_tol: float = 1e-11) -> int:
    """Solve ``min 1/2 x^T P x + q^T x  s.t.  l <= A x <= u`` (module docstring).

    Args:
        P: (n, n) symmetric positive definite (only its lower triangle is read).
        q: (n,).
        A: (m, n).
        l, u: (m,) bounds; ``|bound| >= 1e20`` (or +-inf) means absent, ``l == u`` equality.
        work: :class:`DenseQPWork` of matching ``(n, m)``; receives ``x``, ``y``, ``active``,
            ``iterations``, ``status``.
        warm_active: optional (m,) integer guess of the active row sides (-1 lower, +1 upper,
            0 inactive; other values ignored), e.g. ``work.active`` itself (copied before the
            call overwrites it) or ``np.sign(work.y)`` of the previous call.
        max_iter: iteration limit.
        tol: relative primal feasibility tolerance (see :func:`dense_qp_kernel`).
        dep_tol: relative linear-dependence threshold of the active normals.

    Returns:
        status: :data:`SOLVED`, :data:`INFEASIBLE`, :data:`MAX_ITER`, :data:`NOT_PD` or
        :data:`INVALID` (also stored in ``work.status``).
    """
    n, m = work.n, work.m
    P = np.ascontiguousarray(P, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    A = np.ascontiguousarray(A, dtype=np.float64)
    l = np.ascontiguousarray(l, dtype=np.float64)
    u = np.ascontiguousarray(u, dtype=np.float64)
    if P.shape != (n, n) or q.shape != (n,) or A.shape != (m, n) or l.shape != (m,) \
            or u.shape != (m,):
        raise ValueError(f"solve_dense_qp: shapes P {P.shape}, q {q.shape}, A {A.shape}, "
                         f"l {l.shape}, u {u.shape} do not match the workspace (n={n}, m={m})")
    use = warm_active is not None
    warm = work.warm
    if use:
        if warm_active is work.active or getattr(warm_active, "base", None) is work.active:
            np.copyto(work.warm, warm_active)    # the kernel zeroes ``active`` first
        else:
            warm = np.ascontiguousarray(warm_active, dtype=np.int64)
            if warm.shape != (m,):
                raise ValueError(f"solve_dense_qp: warm_active shape {warm.shape} != ({m},)")
    status, it = dense_qp_kernel(P, q, A, l, u, warm, use, int(max_iter), float(tol),
                                 float(dep_tol), work.fwork, work.iwork, work.x, work.y,
                                 work.active)
    work.status = int(status)
    work.iterations = int(it)
    return work.status


def warmup() -> None:
    """Compile the kernel (a tiny problem) so that no control tick compiles."""
    w = DenseQPWork(2, 1)
    solve_dense_qp(np.eye(2), np.ones(2), np.ones((1, 2)), np.array([1.0]), np.array([np.inf]),
                   w, np.array([-1]))
