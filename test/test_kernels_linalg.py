"""kernels.linalg.psd_pinv_solve equals numpy's lstsq (SVD) on PSD matrices of every rank."""

import numpy as np
import pytest

from wbc_dynamics.kernels.linalg import psd_pinv_solve


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
        r = psd_pinv_solve(A.copy(), b, 1e-9, out)
        assert r == rank
        sv = np.linalg.svd(A, compute_uv=False)[:rank]
        cond = sv[0] / sv[-1] if rank else 1.0  # condition number on A's range
        np.testing.assert_allclose(out, ref, atol=1e-14 * cond * (1.0 + np.max(np.abs(ref))),
                                   rtol=0)


def test_psd_pinv_solve_non_finite_input_gives_non_finite_output():
    A = np.eye(3)
    A[1, 1] = np.nan
    out = np.empty(3)
    psd_pinv_solve(A, np.ones(3), 1e-9, out)
    assert not np.all(np.isfinite(out))
