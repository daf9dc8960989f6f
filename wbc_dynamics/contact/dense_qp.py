"""Exact dense strictly convex QP solver: the Goldfarb-Idnani dual active-set method, compiled.

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

Compiled: :func:`dense_qp_kernel` (``@njit``) works on flat float64 / int64 workspace buffers
allocated once per ``(n, m)`` by :class:`DenseQPWork`; no allocation per call, so it can be
called from other compiled code. :func:`solve_dense_qp` is the Python entry point.
"""

from __future__ import annotations

import numpy as np

from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import cholesky
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
    "STATUS_NAMES",
    "warmup",
]

SOLVED = 1
INFEASIBLE = 3
MAX_ITER = 7
NOT_PD = 9
INVALID = 11
STATUS_NAMES = {SOLVED: "solved", INFEASIBLE: "primal_infeasible", MAX_ITER: "max_iter_reached",
                NOT_PD: "non_convex", INVALID: "invalid_data"}

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


def work_sizes(n: int, m: int) -> tuple[int, int]:
    """Lengths of the float and int workspace buffers of :func:`dense_qp_kernel`."""
    return 3 * n * n + 6 * n + 2 * m, 2 * n + 2 * m + 2


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
def _add_column(Jt: np.ndarray, R: np.ndarray, d: np.ndarray, nact: int) -> None:
    """Append the column d = J^T n to the factorization (Givens rotations of J from the
    bottom so that d[nact+1:] = 0; new column of R = d[:nact+1])."""
    n = Jt.shape[0]
    for j in range(n - 1, nact, -1):
        if d[j] == 0.0:
            continue
        c, s, h = _givens(d[j - 1], d[j])
        d[j - 1] = h
        d[j] = 0.0
        _rot_rows(Jt, j - 1, j, c, s, np.int64(0), n)
    for i in range(nact + 1):
        R[i, nact] = d[i]
    for i in range(nact + 1, n):
        R[i, nact] = 0.0


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


@leaf_kernel
def _try_add(Jt: np.ndarray, R: np.ndarray, A: np.ndarray, row: int, kd: int, d: np.ndarray,
             nact: int, dep_tol: float) -> bool:
    """Add (row, kd) to the factorization unless its normal depends on the active ones."""
    n = Jt.shape[0]
    if nact >= n:
        return False
    _compute_d(Jt, A, row, kd, d)
    s1 = 0.0
    s2 = 0.0
    for j in range(n):
        s1 += d[j] * d[j]
        if j >= nact:
            s2 += d[j] * d[j]
    if not (s2 > dep_tol * dep_tol * s1):
        return False
    _add_column(Jt, R, d, nact)
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
    # workspace views (no allocation)
    o = 0
    L = fwork[o:o + n * n].reshape((n, n))
    o += n * n
    Jt = fwork[o:o + n * n].reshape((n, n))
    o += n * n
    R = fwork[o:o + n * n].reshape((n, n))
    o += n * n
    x0 = fwork[o:o + n]
    o += n
    d = fwork[o:o + n]
    o += n
    z = fwork[o:o + n]
    o += n
    r = fwork[o:o + n]
    o += n
    uact = fwork[o:o + n]
    o += n
    w = fwork[o:o + n]
    o += n
    rownorm = fwork[o:o + m]
    o += m
    ax = fwork[o:o + m]
    act = iwork[0:n]
    kind = iwork[n:2 * n]
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
    for j in range(n):
        s = 0.0
        for i in range(n):
            s += Jt[j, i] * q[i]
        w[j] = s
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
            s1 = 0.0
            s2 = 0.0
            for j in range(n):
                s1 += d[j] * d[j]
                if j >= nact:
                    s2 += d[j] * d[j]
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
                _add_column(Jt, R, d, nact)
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
