"""kernels.linalg: psd_pinv_solve equals numpy's lstsq (SVD) on PSD matrices of every rank;
lu_solve equals np.linalg.solve; left_nullspace, cholesky, chol_solve_columns and the small
helpers (matvec, add_sparse_product, add_weighted_rows, swap_rows) against numpy."""

import numpy as np
import pytest

from wbc_dynamics.kernels.arena import NO_ARENA
from wbc_dynamics.kernels.linalg import (
    add_sparse_product,
    add_weighted_rows,
    chol_solve,
    chol_solve_columns,
    cholesky,
    left_nullspace,
    lu_solve,
    matvec,
    psd_pinv_solve,
    swap_rows,
)


@pytest.mark.parametrize("n,rank", [(1, 1), (3, 3), (12, 12), (12, 8), (24, 6), (24, 23),
                                    (6, 0)])
def test_psd_pinv_solve_equals_lstsq(n, rank):
    rng = np.random.default_rng(n * 100 + rank)
    for _ in range(5):
        J = rng.standard_normal((rank, n)) * rng.uniform(1e-3, 1e3)
        A = J.T @ J
        b = rng.standard_normal(n)  # not in the range of A when rank < n
        ref = np.linalg.lstsq(A, b, rcond=1e-9)[0]
        out = np.empty(n)
        r = psd_pinv_solve(A.copy(), b, 1e-9, out, NO_ARENA)
        assert r == rank
        sv = np.linalg.svd(A, compute_uv=False)[:rank]
        cond = sv[0] / sv[-1] if rank else 1.0  # condition number on A's range
        np.testing.assert_allclose(out, ref, atol=1e-14 * cond * (1.0 + np.max(np.abs(ref))),
                                   rtol=0)


@pytest.mark.parametrize("n", [1, 2, 6, 10, 24])
def test_lu_solve_equals_numpy_solve(n):
    """Non-symmetric (pivoting needed: a zero leading entry), SPD and nearly singular (cond
    ~1e12, the dual Newton's regularized A D A^T) matrices, against LAPACK's gesv."""
    rng = np.random.default_rng(n)
    J = rng.standard_normal((max(n - 1, 1), n))
    cases = [rng.standard_normal((n, n)), J.T @ J + 1e-12 * np.trace(J.T @ J) * np.eye(n)]
    if n > 1:
        cases[0][0, 0] = 0.0
    for A in cases:
        b = rng.standard_normal(n)
        ref = np.linalg.solve(A, b)
        x = b.copy()
        assert lu_solve(A.copy(), x, 0.0)
        cond = np.linalg.cond(A)
        np.testing.assert_allclose(x, ref, rtol=0,
                                   atol=1e-14 * cond * (1.0 + np.max(np.abs(ref))))
        np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-12 * cond * np.max(np.abs(b)))


def test_lu_solve_reports_a_singular_matrix():
    A = np.array([[1.0, 2.0], [2.0, 4.0 + 1e-14]])
    assert not lu_solve(A.copy(), np.ones(2), 1e-12)
    x = np.ones(2)
    assert lu_solve(A.copy(), x, 0.0)  # nonsingular to rounding without a threshold
    assert not lu_solve(np.zeros((2, 2)), np.ones(2), 0.0)


def test_psd_pinv_solve_non_finite_input_gives_non_finite_output():
    A = np.eye(3)
    A[1, 1] = np.nan
    out = np.empty(3)
    psd_pinv_solve(A, np.ones(3), 1e-9, out, NO_ARENA)
    assert not np.all(np.isfinite(out))


@pytest.mark.parametrize("m,p,rank", [(12, 6, 6), (24, 6, 6), (6, 6, 5), (12, 7, 6), (3, 6, 3),
                                      (9, 6, 4), (5, 0, 0), (4, 3, 0)])
def test_left_nullspace_is_an_orthonormal_basis_of_the_svd_nullspace(m, p, rank):
    """W spans exactly the left nullspace numpy's SVD gives (the same projector), is orthonormal
    and A^T W = 0 to rounding, for full-rank, rank-deficient (dependent columns, as J_f of two
    point contacts), wide and empty A."""
    rng = np.random.default_rng(m * 100 + p * 10 + rank)
    for _ in range(5):
        A = (rng.standard_normal((m, rank)) @ rng.standard_normal((rank, p))
             * rng.uniform(1e-2, 1e2))
        U, sv, _ = np.linalg.svd(A)
        ref = U[:, rank:]
        out = np.full(m * m, np.nan)
        r = left_nullspace(A.copy(), 1e-9, np.empty(max(p, 1)), out)
        assert r == m - rank
        W = out[:m * r].reshape((m, r))
        np.testing.assert_allclose(W.T @ W, np.eye(r), atol=1e-13, rtol=0)
        np.testing.assert_allclose(A.T @ W, 0.0, atol=1e-12 * np.abs(A).max(initial=1.0),
                                   rtol=0)
        np.testing.assert_allclose(W @ W.T, ref @ ref.T, atol=1e-12, rtol=0)


@pytest.mark.parametrize("n,p", [(1, 1), (12, 7), (31, 7), (24, 1)])
def test_cholesky_and_column_solves_equal_numpy(n, p):
    """cholesky equals numpy's factor, rejects a matrix with a non-positive pivot, and
    chol_solve_columns solves every column as numpy's solve does and bit for bit as
    chol_solve does one column at a time (the compiled tick relies on the same rounding)."""
    rng = np.random.default_rng(n * 10 + p)
    B = rng.standard_normal((n, n))
    A = B @ B.T + n * np.eye(n)
    L = np.full((n, n), np.nan)
    assert cholesky(A, L, 0.0)
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=0, atol=1e-12 * np.sqrt(n))
    X = rng.standard_normal((n, p))
    Y = X.copy()
    chol_solve_columns(L, Y)
    np.testing.assert_allclose(Y, np.linalg.solve(A, X), rtol=0,
                               atol=1e-12 * np.abs(np.linalg.solve(A, X)).max())
    for c in range(p):
        col = np.ascontiguousarray(X[:, c])
        chol_solve(L, n, col, col)
        assert np.array_equal(col, Y[:, c])
    A[n - 1, n - 1] = -1.0  # not positive definite
    assert not cholesky(A, L, 0.0)


def test_matvec_sparse_product_and_row_swap_equal_numpy():
    """Contact-row-like operands (exact zeros where joints of other branches are): the sums
    run in numpy's naive order, so the match is to rounding of a few terms."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((5, 9))
    A[rng.random(A.shape) < 0.5] = 0.0
    x = rng.standard_normal(9)
    y = np.full(6, np.nan)  # longer than A's rows: the tail is left alone
    matvec(A, x, y)
    np.testing.assert_allclose(y[:5], A @ x, rtol=0, atol=1e-14)
    assert np.isnan(y[5])
    B = rng.standard_normal((9, 7))
    out = rng.standard_normal((5, 7))
    expected = out.copy()
    expected[:, :4] += A @ B[:, :4]  # only the first 4 columns
    add_sparse_product(A, B, out, 4)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-14)
    M = np.arange(20.0).reshape(4, 5)
    swap_rows(M, 0, 2, 3)  # the first 3 entries of rows 0 and 2
    np.testing.assert_array_equal(M, [[10, 11, 12, 3, 4], [5, 6, 7, 8, 9],
                                      [0, 1, 2, 13, 14], [15, 16, 17, 18, 19]])
    swap_rows(M.T, 1, 3, 4)  # columns 1 and 3
    np.testing.assert_array_equal(M[:, 1], [3, 8, 13, 18])
    np.testing.assert_array_equal(M[:, 3], [11, 6, 1, 16])


def test_add_weighted_rows_is_the_plain_transposed_product_to_the_bit():
    """``out += A.T @ x`` with the zeros of ``x`` skipped: each entry's terms in row order, so
    the result equals the plain loop exactly; ``A = M.T`` (a transposed view) gives ``M @ x``."""
    rng = np.random.default_rng(11)
    A = rng.standard_normal((6, 8))
    A[rng.random(A.shape) < 0.4] = 0.0
    x = rng.standard_normal(6)
    x[[1, 4]] = 0.0
    start = rng.standard_normal(9)
    out = start.copy()  # longer than A's rows: the tail is left alone
    add_weighted_rows(A, x, out)
    plain = start.copy()
    for i in range(6):
        for j in range(8):
            plain[j] += A[i, j] * x[i]
    np.testing.assert_array_equal(out, plain)
    np.testing.assert_allclose(out[:8], start[:8] + A.T @ x, rtol=0, atol=1e-14)
    M = rng.standard_normal((5, 5))
    g = rng.standard_normal(5)
    g[2] = 0.0
    y = np.zeros(5)
    add_weighted_rows(M.T, g, y)
    np.testing.assert_allclose(y, M @ g, rtol=0, atol=1e-14)
