"""Small dense linear algebra for the compiled tick, without LAPACK's per-call overhead.

numba's ``np.linalg.lstsq`` costs ~20 us per call on a 12 x 12 matrix (workspace queries and
copies around LAPACK's SVD), more than the arithmetic of a whole contact tick; this does the
same job for the small positive semidefinite blocks a tick has (a few dozen rows at most).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import arena as _ar
from .leaf import leaf_kernel

__all__ = ["add_sparse_product", "add_weighted_rows", "bound_entry", "cholesky", "chol_solve",
           "chol_solve_columns", "left_nullspace", "lu_solve", "matvec", "pivoted_cholesky",
           "psd_pinv_solve", "swap_rows"]


@njit(cache=True, inline="always")
def swap_rows(A, i, j, n):
    """Exchange the first ``n`` entries of rows ``i`` and ``j`` of the 2-D ``A`` in place (a
    pivoting step; ``A.T``: columns); compiled into the caller (``inline="always"``)."""
    for c in range(n):
        A[i, c], A[j, c] = A[j, c], A[i, c]


@leaf_kernel
def matvec(A, x, out):
    """``out = A @ x`` for ``A`` (n, m), ``x`` (m,), ``out`` (>= n,): one dot product per row,
    summed in the order j = 0, 1, ... (the rounding of the plain loop)."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        out[i] = s


@njit(cache=True, inline="always")
def add_sparse_product(A, B, out, ncols):
    """``out[:, :ncols] += A @ B[:, :ncols]`` for ``A`` (n, m) with many zero entries (contact
    rows: the joints of other branches), ``B`` (m, >= ncols), ``out`` (n, >= ncols). Row by row
    in axpy form (a contiguous, independent inner loop along rows of ``B`` and ``out``), zero
    entries of ``A`` skipped; each entry of ``out`` receives its terms in the order
    c = 0, 1, ... (the rounding of the plain triple loop). Compiled into the caller."""
    for i in range(A.shape[0]):
        for c in range(A.shape[1]):
            a = A[i, c]
            if a != 0.0:
                for k in range(ncols):
                    out[i, k] += a * B[c, k]


@njit(cache=True, inline="always")
def add_weighted_rows(A, x, out):
    """``out[:A.shape[1]] += A.T @ x`` for ``A`` (m, n), ``x`` (m,): row ``i`` of ``A`` times
    ``x[i]``, added in axpy form (a contiguous, independent inner loop along the row), rows with
    ``x[i] == 0`` skipped (the impulses of unloaded contacts; the joints of other branches when
    ``x`` is a contact row); each entry of ``out`` receives its terms in the order
    i = 0, 1, ... (the rounding of the plain loop). ``A = M.T`` gives ``M @ x`` column by
    column. Compiled into the caller."""
    for i in range(A.shape[0]):
        xi = x[i]
        if xi != 0.0:
            for j in range(A.shape[1]):
                out[j] += A[i, j] * xi


@leaf_kernel
def cholesky(A, L, min_pivot):
    """``A = L L^T`` from the lower triangle of the symmetric ``A`` (n, n) into ``L`` (its upper
    triangle zeroed). Returns False (``L`` partly written) at the first pivot ``<= min_pivot``:
    not positive definite to that threshold.

    Right-looking (outer-product) form in ``L``: entry (i, c) receives the same subtractions
    ``L[i, k] L[c, k]`` in the same order k = 0, 1, ... as the dot products of the left-looking
    form (the same rounding), but each update runs along contiguous rows -- column j copied to
    row j of the (not yet used) upper triangle -- with independent entries instead of one
    sum's chain of dependent additions.
    """
    n = A.shape[0]
    for i in range(n):
        for c in range(i + 1):
            L[i, c] = A[i, c]
    for j in range(n):
        s = L[j, j]
        if not s > min_pivot:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            L[i, j] = L[i, j] / d
            L[j, i] = L[i, j]  # column j as a contiguous row
        for i in range(j + 1, n):
            lij = L[i, j]
            for c in range(j + 1, i + 1):
                L[i, c] -= lij * L[j, c]
    for i in range(n):
        for c in range(i + 1, n):
            L[i, c] = 0.0
    return True


@leaf_kernel(error_model="numpy")
def chol_solve(L, k, b, out):
    """Solve ``(L L^T) out = b`` with ``L[:k, :k]`` lower triangular (``out`` may be ``b``).

    Both substitutions in column (axpy) form: each solved entry is subtracted from the
    remaining ones, independent updates instead of one dot product's chain of dependent
    subtractions (13-23 % faster at k = 12-30 in a compiled loop); the backward pass reads
    row i of ``L`` (contiguous) as column i of ``L^T``."""
    for i in range(k):
        out[i] = b[i]
    for j in range(k):  # L y = b
        yj = out[j] / L[j, j]
        out[j] = yj
        for i in range(j + 1, k):
            out[i] -= L[i, j] * yj
    for i in range(k - 1, -1, -1):  # L^T x = y
        xi = out[i] / L[i, i]
        out[i] = xi
        for j in range(i):
            out[j] -= L[i, j] * xi


@leaf_kernel(error_model="numpy")
def lu_solve(A, b, min_pivot):
    """Solve ``A x = b`` in place (``b`` becomes x; ``A`` (n, n) is overwritten by its LU
    factors) by Gaussian elimination with partial pivoting, the algorithm of LAPACK's unblocked
    ``getf2`` / ``getrs`` (what ``np.linalg.solve`` calls for small n), without its copies and
    workspace. Returns False (``A``, ``b`` partly overwritten) at the first pivot with
    ``|pivot| <= min_pivot``: singular to that threshold."""
    n = A.shape[0]
    for k in range(n):
        p = k
        amax = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > amax:
                amax = abs(A[i, k])
                p = i
        if not amax > min_pivot:
            return False
        if p != k:
            swap_rows(A, k, p, n)
            b[k], b[p] = b[p], b[k]
        piv = A[k, k]
        for i in range(k + 1, n):
            f = A[i, k] / piv
            A[i, k] = f
            if f != 0.0:
                for c in range(k + 1, n):
                    A[i, c] -= f * A[k, c]
                b[i] -= f * b[k]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for c in range(i + 1, n):
            s -= A[i, c] * b[c]
        b[i] = s / A[i, i]
    return True


@leaf_kernel
def chol_solve_columns(L, X):
    """Solve ``(L L^T) Y = X`` for every column of ``X`` (n, p) in place, ``L`` (n, n) lower
    triangular: each column's substitutions in :func:`chol_solve`'s order (the same rounding),
    the inner loop across the columns instead of along one sum's chain of dependent
    additions."""
    n, p = X.shape
    for i in range(n):  # L Z = X
        for j in range(i):
            lij = L[i, j]
            for c in range(p):
                X[i, c] -= lij * X[j, c]
        lii = L[i, i]
        for c in range(p):
            X[i, c] = X[i, c] / lii
    for i in range(n - 1, -1, -1):  # L^T Y = Z (row i of Y final: subtract it from the rows above)
        lii = L[i, i]
        for c in range(p):
            X[i, c] = X[i, c] / lii
        for j in range(i):
            lij = L[i, j]
            for c in range(p):
                X[j, c] -= lij * X[i, c]


@leaf_kernel
def left_nullspace(A, rank_tol, beta, out):
    """An orthonormal basis of ``ker A^T`` (the orthogonal complement of the range of ``A``,
    (m, p)) written to ``out[:m r]`` as a C-ordered (m, r) matrix; returns its dimension r.

    Householder QR with column pivoting (Golub & Van Loan, Alg. 5.4.1), ``A P = Q R``: the
    last ``m - rank`` columns of ``Q``. The factorization stops at the first pivot column
    whose remaining norm is ``<= rank_tol * max(1, largest column norm of A)`` (the rank
    decision on ``|R_jj|`` instead of singular values: the same for the well-separated ranks
    of contact Jacobians -- independent columns, or columns dependent to rounding).
    ``A`` is overwritten (its Householder vectors), ``beta`` (>= min(m, p),) holds their
    scales; ``out`` needs ``m m`` entries (those after the basis are scratch); no allocation.
    Replaces numba's LAPACK SVD, whose workspace queries and copies cost more than this
    arithmetic on the few-dozen-row matrices of a tick.
    """
    m, p = A.shape
    ref = 1.0
    rank = 0
    for j in range(min(m, p)):
        best = j  # pivot: the column of largest remaining norm (norms recomputed: p is small)
        bn = -1.0
        for c in range(j, p):
            s = 0.0
            for i in range(j, m):
                s += A[i, c] * A[i, c]
            if s > bn:
                bn = s
                best = c
        nrm = np.sqrt(bn)
        if j == 0:
            ref = max(1.0, nrm)
        if not nrm > rank_tol * ref:
            break
        if best != j:
            for i in range(m):
                t = A[i, j]
                A[i, j] = A[i, best]
                A[i, best] = t
        # v = x - alpha e_1 with alpha = -sign(x_0) |x| (no cancellation in v_0)
        alpha = -nrm if A[j, j] >= 0.0 else nrm
        A[j, j] -= alpha
        vv = 0.0
        for i in range(j, m):
            vv += A[i, j] * A[i, j]
        beta[j] = 2.0 / vv
        for c in range(j + 1, p):
            _reflect(A, j, beta[j], A, c)
        rank = j + 1
    r = m - rank
    W = out[:m * r].reshape((m, r))
    for i in range(m):
        for c in range(r):
            W[i, c] = 0.0
    for c in range(r):
        W[rank + c, c] = 1.0
    if rank == 0:
        return r
    # Q e_(rank + c) = H_0 H_1 ... H_(rank-1) e_(rank + c), each reflector applied to all r
    # columns at once: the dot products accumulate per column in the same order as one column
    # at a time (the same rounding), but the inner loop runs along W's contiguous rows with
    # independent sums instead of one sum's chain of dependent additions
    sc = out[m * r:m * r + r]  # scratch: rank >= 1 gives r <= m - 1, so m r + r < m m
    for h in range(rank - 1, -1, -1):
        for c in range(r):
            sc[c] = 0.0
        for i in range(h, m):
            vi = A[i, h]
            for c in range(r):
                sc[c] += vi * W[i, c]
        for c in range(r):
            sc[c] *= beta[h]
        for i in range(h, m):
            vi = A[i, h]
            for c in range(r):
                W[i, c] -= sc[c] * vi
    return r


@leaf_kernel
def _reflect(V, h, beta, X, c):
    """``X[:, c] <- (I - beta v v^T) X[:, c]``: the Householder reflector whose vector ``v`` is
    ``V[h:, h]`` (zero above row h)."""
    s = 0.0
    for i in range(h, V.shape[0]):
        s += V[i, h] * X[i, c]
    s *= beta
    for i in range(h, V.shape[0]):
        X[i, c] -= s * V[i, h]


@leaf_kernel
def pivoted_cholesky(A, n, perm, piv_tol):
    """``P A P^T = L L^T`` in place for the symmetric positive semidefinite ``A[:n, :n]``:
    Cholesky with diagonal pivoting (Higham, Accuracy and Stability, Sec. 10.3), the largest
    remaining diagonal entry first, until it is ``<= piv_tol``. ``L`` (n x rank) is left in the
    lower part of ``A`` (the trailing columns hold the Schur complement's rounding), ``perm[:n]``
    the row order (``P``). Returns the rank (np.int64)."""
    for i in range(n):
        perm[i] = i
    r = np.int64(0)  # typed, not a literal: callees compile once (see contact/tick.py)
    for k in range(n):
        j = k
        for i in range(k + 1, n):
            if A[i, i] > A[j, j]:
                j = i
        if not (A[j, j] > piv_tol):
            break
        if j != k:  # symmetric swap of rows/columns k and j
            swap_rows(A, k, j, n)
            swap_rows(A.T, k, j, n)
            perm[k], perm[j] = perm[j], perm[k]
        piv = np.sqrt(A[k, k])
        A[k, k] = piv
        for i in range(k + 1, n):
            A[i, k] /= piv
        # trailing block, both triangles (the symmetric swaps above read whole rows/columns)
        for i in range(k + 1, n):
            lik = A[i, k]
            for c in range(k + 1, n):
                A[i, c] -= lik * A[c, k]
        r += 1
    return r


@njit(cache=True, error_model="numpy")
def psd_pinv_solve(A, b, rcond, out, ar):
    """``out = A^+ b``: the minimum-norm least-squares solution for a symmetric positive
    semidefinite ``A`` (n x n, overwritten), as ``np.linalg.lstsq(A, b, rcond)`` gives it.

    Rank-revealing Cholesky with diagonal pivoting (:func:`pivoted_cholesky`):
    ``P A P^T = L L^T`` with ``L`` n x r, pivots ``<= rcond * max diag(A)`` ending the
    factorization (rank r). The minimum-norm solution in the permuted coordinates is
    ``L (L^T L)^-2 L^T P b`` (``= A^-1 b`` when r = n). The rank decision is made on Cholesky
    pivots instead of singular values: the same for the well-separated ranks of contact
    Jacobians (independent rows, or rows dependent to rounding). Returns r; non-finite input
    gives a non-finite ``out``. Scratch from the arena ``ar`` (:mod:`.arena`).
    """
    n = A.shape[0]
    for i in range(n):
        finite = np.isfinite(b[i])
        for c in range(n):
            finite = finite and np.isfinite(A[i, c])
        if not finite:
            for c in range(n):
                out[c] = np.nan
            return 0
    perm = _ar.ints(ar, n)
    dmax = 0.0
    for i in range(n):
        dmax = max(dmax, A[i, i])
    r = pivoted_cholesky(A, n, perm, rcond * dmax)
    # y = L^T P b (r)
    y = _ar.floats_zero(ar, r)
    for a in range(r):
        s = 0.0
        for i in range(a, n):
            s += A[i, a] * b[perm[i]]
        y[a] = s
    # C = L^T L (r x r, SPD), Cholesky C = U U^T (lower U)
    C = _ar.floats_2d_zero(ar, r, r)
    for a in range(r):
        for c in range(a + 1):
            s = 0.0
            for i in range(a, n):
                s += A[i, a] * A[i, c]
            C[a, c] = s
    if not cholesky(C, C, 0.0):  # in place; L^T L of a rank-r L: fails only to rounding
        for c in range(n):
            out[c] = np.nan
        return r
    # u = C^-1 C^-1 y
    chol_solve(C, r, y, y)
    chol_solve(C, r, y, y)
    # out = P^T L u
    for i in range(n):
        s = 0.0
        for a in range(min(i + 1, r)):
            s += A[i, a] * y[a]
        out[perm[i]] = s
    return r


def require_vectors(owner: str, buffers: tuple) -> None:
    """ValueError naming ``owner`` and the buffer unless every ``(name, array, length)`` of
    ``buffers`` is a C-contiguous float64 array of shape (length,): the type a kernel's
    entry point was bound for (:func:`bound_entry`)."""
    for name, x, n in buffers:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (n,)
                and x.flags.c_contiguous):
            raise ValueError(f"{owner}: {name} must be a C-contiguous float64 ({n},) array")


def bound_entry(dispatcher, args: tuple):
    """The compiled entry point of ``dispatcher`` for exactly the types of ``args``.

    A numba dispatcher types every argument on every call; for a kernel that takes the tick's
    named buffers (a few NamedTuples of ~60 arrays) that costs ~10 us per call, a fifth of a
    tick. The entry point of the overload for these types skips it. The caller must pass
    arguments of the same types on every call (fixed buffers; it checks the per-call arrays
    itself). Compiles or loads from the cache (at start-up) without running the kernel;
    returns the dispatcher itself if numba does not expose the overload.
    """
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        dispatcher.compile(sig)
        return dispatcher.overloads[sig].entry_point
    except (AttributeError, KeyError, TypeError):
        return dispatcher
