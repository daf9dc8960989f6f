"""Prioritized least squares: a strict hierarchy of weighted linear equations, compiled.

Levels ``A_1 x = b_1``, ``A_2 x = b_2``, ... are solved in order, each in the least-squares
sense over the solutions of the levels above it (Siciliano & Slotine, "A general framework for
managing multiple tasks in highly redundant robotic systems", 1991; Kanoun, Lamiraux & Wieber,
"Kinematic control of redundant manipulators: generalizing the task-priority framework to
inequality tasks", 2011, Sec. II): a lower level never changes what a higher one achieves,
beyond rounding.

Each level is solved with an orthonormal basis ``U`` (rows) of the row space of every level
above it, kept as the levels are solved:

1. the level's residual ``r = b - A x`` and its rows projected off ``U``
   (``B = A (I - U^T U)``, twice: classical Gram-Schmidt, reorthogonalized);
2. modified Gram-Schmidt with row pivoting (each step takes the remaining row of largest
   norm; reorthogonalized) factors ``B = L G`` with ``G``'s rows orthonormal -- a rank-revealing
   QR of ``B^T`` (Golub & Van Loan, "Matrix Computations", Sec. 5.4.1) -- stopping when every
   remaining row is below the rank tolerance;
3. ``x += G^T z`` with ``z`` the least-squares solution of ``L z = r`` (a Householder QR of the
   small ``L``): in ``B``'s row space, so in the null space of the levels above;
4. ``G``'s rows join ``U``.

Rows whose part outside the row space solved so far is smaller than ``tolerance`` times the
level's largest row are dependent on the levels above (or on each other) and are not inverted:
a task that conflicts with a higher one gives way instead of producing huge accelerations.
``damping`` > 0 solves ``min |L z - r|^2 + damping^2 |z|^2`` instead, for tasks approaching a
kinematic singularity.

The kernels allocate nothing (leaf kernels): the caller owns the workspace
(:class:`PrioritizedWork`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .leaf import leaf_kernel

__all__ = ["PrioritizedWork", "prioritized_level", "prioritized_reset",
           "prioritized_selection_level", "prioritized_work"]

class PrioritizedWork(NamedTuple):
    """Workspace of :func:`prioritized_level` for ``n`` unknowns and levels of at most ``m`` rows.

    ``x`` (n,) the solution so far; ``basis`` (n, n) rows 0..``rank[0]``-1 an orthonormal basis
    of the row space solved so far; ``rank`` (1,) its dimension; ``rows`` (m, n) and ``rhs``
    (m,) the level being solved (overwritten); scratch: ``lower`` (m, m) the level's rows in
    the new basis rows, ``pivot`` (m,) the step each row was taken at, ``lsq`` (2 m, m + 1) the
    small least-squares problem."""

    x: np.ndarray
    basis: np.ndarray
    rank: np.ndarray
    rows: np.ndarray
    rhs: np.ndarray
    lower: np.ndarray
    pivot: np.ndarray
    lsq: np.ndarray


def prioritized_work(n: int, m: int) -> PrioritizedWork:
    """A :class:`PrioritizedWork` for ``n`` unknowns and levels of at most ``m`` rows."""
    m = max(int(m), 1)
    return PrioritizedWork(np.zeros(n), np.zeros((n, n)), np.zeros(1, dtype=np.int64),
                           np.zeros((m, n)), np.zeros(m), np.zeros((m, m)),
                           np.zeros(m, dtype=np.int64), np.zeros((2 * m, m + 1)))


@leaf_kernel(error_model="numpy")
def prioritized_reset(w):
    """Start a new hierarchy in the :class:`PrioritizedWork` ``w``: ``x = 0``, no row space
    solved."""
    x = w.x
    for i in range(x.shape[0]):
        x[i] = 0.0
    w.rank[0] = 0


@leaf_kernel(error_model="numpy")
def _project_off_basis(row, basis, k):
    """row <- row - sum_{i<k} (row . u_i) u_i (u_i: rows of basis)."""
    n = row.shape[0]
    for i in range(k):
        s = 0.0
        for c in range(n):
            s += row[c] * basis[i, c]
        if s != 0.0:
            for c in range(n):
                row[c] -= s * basis[i, c]


@njit(cache=True, error_model="numpy", inline="always")
def _project_out(rows, i, u, n):
    """rows[i] <- rows[i] - s u with s = rows[i] . u (u a unit vector, first n entries);
    returns s."""
    s = 0.0
    for c in range(n):
        s += rows[i, c] * u[c]
    for c in range(n):
        rows[i, c] -= s * u[c]
    return s


@leaf_kernel(error_model="numpy")
def prioritized_level(m, w, tolerance, damping):
    """Solve the level ``w.rows[:m] x = w.rhs[:m]`` (least squares) over the solutions of the
    levels solved before, updating ``w.x``, ``w.basis`` and ``w.rank`` (module docstring;
    ``w`` a :class:`PrioritizedWork`).

    ``rows``, ``rhs``, ``lower`` (m, m), ``pivot`` (m,) and ``lsq`` (2 m, m + 1) are
    overwritten (workspace). Returns the number
    of independent rows this level added (its rank in the remaining null space), or -1 if a
    value is not finite (``x`` is then unchanged)."""
    rows, rhs, x, basis, rank = w.rows, w.rhs, w.x, w.basis, w.rank
    lower, pivot, lsq = w.lower, w.pivot, w.lsq
    n = x.shape[0]
    k = rank[0]
    if m == 0 or k >= n:  # no rows, or no freedom left for them
        return 0
    largest = 0.0
    for i in range(m):
        s = rhs[i]
        nrm = 0.0
        for c in range(n):
            s -= rows[i, c] * x[c]
            nrm += rows[i, c] * rows[i, c]
        if not (math.isfinite(s) and math.isfinite(nrm)):
            return -1
        rhs[i] = s
        largest = max(largest, nrm)
        _project_off_basis(rows[i], basis, k)
        _project_off_basis(rows[i], basis, k)  # reorthogonalized: exact to rounding
        pivot[i] = -1
        for j in range(m):
            lower[i, j] = 0.0
    if largest == 0.0:
        return 0
    floor = tolerance * tolerance * largest  # on squared norms
    # pivoted modified Gram-Schmidt on the rows: B = L G, G's rows orthonormal (the new basis
    # rows), L (m x added) in ``lower``; pivot[i] = the step row i was taken at, -1 if never
    added = 0
    # the remaining rows' squared norms (lsq is free until the solve): downdated by each step's
    # projection, recomputed where the step cancelled most of a row (there the downdate has
    # lost its digits)
    norm2 = lsq[:, m]
    for i in range(m):
        s = 0.0
        for c in range(n):
            s += rows[i, c] * rows[i, c]
        norm2[i] = s
    while k + added < n:
        best = floor
        p = -1
        for i in range(m):
            if pivot[i] < 0 and norm2[i] > best:
                best = norm2[i]
                p = i
        if p < 0:
            break
        u = basis[k + added]
        d = 0.0
        for c in range(n):
            d += rows[p, c] * rows[p, c]
        d = math.sqrt(d)
        for c in range(n):
            u[c] = rows[p, c] / d
        pivot[p] = added
        lower[p, added] = d
        for i in range(m):
            if pivot[i] >= 0:
                continue
            s = _project_out(rows, i, u, n)
            lower[i, added] += s
            if s * s > 0.5 * norm2[i]:  # cancellation: once more ("twice is enough")
                lower[i, added] += _project_out(rows, i, u, n)
                t = 0.0
                for c in range(n):
                    t += rows[i, c] * rows[i, c]
                norm2[i] = t
            else:
                norm2[i] -= s * s
        added += 1
    if added == 0:
        return 0
    if added == m and damping == 0.0:
        # every row independent: L is lower triangular in pivot order, r = L z by forward
        # substitution (pivot row of step j: lsq[j, 0]); x += G^T z
        for i in range(m):
            lsq[pivot[i], 0] = i
        for j in range(m):
            pj = int(lsq[j, 0])
            t = rhs[pj]
            for c in range(j):
                t -= lower[pj, c] * lsq[c, 1]
            lsq[j, 1] = t / lower[pj, j]
        for j in range(m):
            z = lsq[j, 1]
            if not math.isfinite(z):
                return -1
        for j in range(m):
            z = lsq[j, 1]
            u = basis[k + j]
            for c in range(n):
                x[c] += z * u[c]
        rank[0] = k + added
        return added
    # least squares min |L z - r|^2 + damping^2 |z|^2, then x += G^T z: Householder QR of
    # A = [L r; damping I 0] ((m + added) x (added + 1)) in ``lsq``, column by column
    rows_a = m + added
    for i in range(rows_a):
        for c in range(added + 1):
            if i < m:
                lsq[i, c] = lower[i, c] if c < added else rhs[i]
            else:
                lsq[i, c] = damping if c == i - m else 0.0
    for j in range(added):
        alpha = 0.0
        for i in range(j, rows_a):
            alpha += lsq[i, j] * lsq[i, j]
        alpha = math.sqrt(alpha)
        if alpha == 0.0:
            return -1  # cannot happen: column j has its pivot entry > 0
        beta = -alpha if lsq[j, j] >= 0.0 else alpha
        lsq[j, j] -= beta  # the reflector v = a_j - beta e_j, stored in place
        vv = 0.0
        for i in range(j, rows_a):
            vv += lsq[i, j] * lsq[i, j]
        for c in range(j + 1, added + 1):
            t = 0.0
            for i in range(j, rows_a):
                t += lsq[i, j] * lsq[i, c]
            f = 2.0 * t / vv
            for i in range(j, rows_a):
                lsq[i, c] -= f * lsq[i, j]
        lsq[j, j] = beta  # R[j, j]
    for j in range(added - 1, -1, -1):  # R z = (Q^T r)[:added], z into lsq[:, added]
        t = lsq[j, added]
        for c in range(j + 1, added):
            t -= lsq[j, c] * lsq[c, added]
        lsq[j, added] = t / lsq[j, j]
    for j in range(added):
        z = lsq[j, added]
        if not math.isfinite(z):
            return -1
    for j in range(added):
        z = lsq[j, added]
        u = basis[k + j]
        for c in range(n):
            x[c] += z * u[c]
    rank[0] = k + added
    return added


@leaf_kernel(error_model="numpy")
def prioritized_selection_level(target, first, w, residual, step, gram, factor, small):
    """A last level that asks coordinates ``first ..`` of ``w.x`` to equal ``target`` (the
    coordinates before ``first`` free), in the least-squares sense over the solutions of the
    levels solved before -- what a joint-posture task asks of a floating base's accelerations --
    without building its rows.

    With ``P = I - U^T U`` the projector on the null space left and ``W`` the selection's
    weight (1 on the selected coordinates, 0 on the first ``f = first``), the optimality
    condition ``P (W y - r) = 0`` on a step ``y = P y``, ``r = target - x`` (selected
    coordinates), reads ``y - P E y = P r`` (``E = I - W``): ``y = P r + sum_i (P e_i) a_i``
    over the free coordinates i < f, whose values ``a`` solve the f x f system ``(U^T U)_ff a =
    (P r)_f``, regularized by 1e-12 of its trace where the null space left moves a free
    coordinate alone (the selection then cannot tell that motion). The system's matrix is read
    off the basis' first f columns and the step is ``P (r + E a)``: two projections and
    O(f^2 k) instead of a level of n - f rows. Workspace: ``residual``, ``step`` (n,),
    ``gram``, ``factor`` (f, f), ``small`` (f,). Returns the level's rank (n - k less the free
    motions), -1 if a value is not finite. ``w`` (:class:`PrioritizedWork`): the hierarchy
    solved so far (``x``, ``basis``, ``rank`` updated; its level workspace unused)."""
    x, basis, rank = w.x, w.basis, w.rank
    n = x.shape[0]
    k = rank[0]
    if k >= n:
        return 0
    for c in range(n):
        residual[c] = target[c] - x[c] if c >= first else 0.0
        if not math.isfinite(residual[c]):
            return -1
    _project_off_basis(residual, basis, k)
    _project_off_basis(residual, basis, k)
    if first == 0:
        for c in range(n):
            x[c] += residual[c]
        return n - k
    trace = 0.0
    for i in range(first):
        for j in range(i + 1):
            s = 0.0
            for r in range(k):
                s += basis[r, i] * basis[r, j]
            gram[i, j] = s
            gram[j, i] = s
        trace += gram[i, i]
    free = 0
    for i in range(first):
        if gram[i, i] <= 1e-9:
            free += 1
        gram[i, i] += 1e-12 * max(trace, 1e-300)
        small[i] = residual[i]
    # Cholesky of the (symmetric positive definite, regularized) f x f system
    for j in range(first):
        s = gram[j, j]
        for p in range(j):
            s -= factor[j, p] * factor[j, p]
        if not s > 0.0:
            return -1
        d = math.sqrt(s)
        factor[j, j] = d
        for i in range(j + 1, first):
            s = gram[i, j]
            for p in range(j):
                s -= factor[i, p] * factor[j, p]
            factor[i, j] = s / d
    for i in range(first):
        s = small[i]
        for p in range(i):
            s -= factor[i, p] * small[p]
        small[i] = s / factor[i, i]
    for i in range(first - 1, -1, -1):
        s = small[i]
        for p in range(i + 1, first):
            s -= factor[p, i] * small[p]
        small[i] = s / factor[i, i]
    for c in range(n):
        step[c] = small[c] if c < first else 0.0
    _project_off_basis(step, basis, k)
    _project_off_basis(step, basis, k)
    for c in range(n):
        step[c] += residual[c]
        if not math.isfinite(step[c]):
            return -1
    for c in range(n):
        x[c] += step[c]
    return n - k - free
