"""Lemke's algorithm (wbc_dynamics.contact.lemke) against independent checks.

Every solution is verified here from scratch: w = Q z + q, z >= 0, w >= 0, z^T w = 0; for
P-matrices (unique solution) the result is also compared with brute-force enumeration of all
2^n complementary bases.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from wbc_dynamics.contact.lemke import (
    PIVOT_LIMIT,
    RAY_TERMINATION,
    SUCCESS,
    solve_lcp,
    warmup,
)

warmup()


def check_lcp(Q, q, z, tol):
    """Independent complementarity check (not using the module's residual)."""
    w = Q @ z + q
    assert np.all(np.isfinite(z))
    assert np.min(z) >= -tol
    assert np.min(w) >= -tol
    assert abs(z @ w) <= tol * max(1.0, np.abs(z).sum())
    assert np.max(np.minimum(np.abs(z), np.abs(w))) <= tol


def brute_force(Q, q):
    """All complementary basic solutions (z_S = -Q_SS^-1 q_S, w = Qz + q >= 0)."""
    n = len(q)
    sols = []
    for r in range(n + 1):
        for S in itertools.combinations(range(n), r):
            z = np.zeros(n)
            if S:
                idx = np.array(S)
                try:
                    z[idx] = np.linalg.solve(Q[np.ix_(idx, idx)], -q[idx])
                except np.linalg.LinAlgError:
                    continue
            w = Q @ z + q
            if np.min(z) >= -1e-10 and np.min(w) >= -1e-10:
                sols.append(z)
    return sols


def feasible_psd(rng, n, rank):
    """PSD Q of given rank and q built from a known complementary pair (solvable)."""
    L = rng.standard_normal((n, rank))
    Q = L @ L.T
    z0 = np.maximum(rng.standard_normal(n), 0.0)
    w0 = np.where(z0 > 0.0, 0.0, np.abs(rng.standard_normal(n)))
    return Q, w0 - Q @ z0


@pytest.mark.parametrize("seed", range(6))
def test_random_psd_rank_deficient(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 40))
        Q, q = feasible_psd(rng, n, int(rng.integers(1, n + 1)))
        sol = solve_lcp(Q, q)
        assert sol.status == SUCCESS
        assert sol.regularization == 0.0
        check_lcp(Q, q, sol.z, 1e-9 * max(1.0, np.abs(q).max()))
        # the reported w is Q z + q
        np.testing.assert_allclose(sol.w, Q @ sol.z + q, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_p_matrix_unique_solution_matches_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        n = int(rng.integers(1, 8))
        A = rng.standard_normal((n, n))
        Q = A @ A.T + 0.05 * np.eye(n) + 2.0 * (A - A.T)   # PD symmetric part -> P-matrix
        q = rng.standard_normal(n)
        sols = brute_force(Q, q)
        assert len(sols) == 1                                  # P-matrix: unique solution
        sol = solve_lcp(Q, q)
        assert sol.status == SUCCESS
        np.testing.assert_allclose(sol.z, sols[0], atol=1e-9, rtol=1e-9)


def test_trivial_and_empty():
    sol = solve_lcp(np.eye(3), np.array([1.0, 0.0, 2.0]))
    assert sol.status == SUCCESS and sol.pivots == 0
    np.testing.assert_array_equal(sol.z, 0.0)
    sol = solve_lcp(np.zeros((0, 0)), np.zeros(0))
    assert sol.status == SUCCESS and sol.z.shape == (0,)


def test_degenerate_ties_do_not_cycle():
    # rank-1 PSD matrix with all-equal q: every ratio test ties (highly degenerate)
    for n in (2, 5, 12, 30):
        Q = np.ones((n, n))
        q = -np.ones(n)
        sol = solve_lcp(Q, q)
        assert sol.status == SUCCESS
        check_lcp(Q, q, sol.z, 1e-9)
        assert abs(sol.z.sum() - 1.0) < 1e-9
        assert sol.pivots <= 2 * n + 2
    # zeros in q mixed with negatives (degenerate basic variables at zero)
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = 10
        L = rng.standard_normal((n, 3))
        Q = L @ L.T + np.ones((n, n))
        q = -np.abs(rng.standard_normal(n))
        q[rng.random(n) < 0.5] = 0.0
        q[0] = -1.0
        sol = solve_lcp(Q, q)
        assert sol.status == SUCCESS
        check_lcp(Q, q, sol.z, 1e-9)


def test_duplicated_rows_friction_like():
    """Copositive LCP with the structure of eq. (64) (duplicate pyramid rows, zero blocks)."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        nc, k, nf = 3, 4, 6
        Jn = rng.standard_normal((nc, nf))
        Js = rng.standard_normal((nc, nf))
        Jt = rng.standard_normal((nc, nf))
        F = np.vstack([np.vstack([Js[i], Jt[i], -Js[i], -Jt[i]]) for i in range(nc)])
        Jr = np.vstack([Jn, F])
        m = nc * (1 + k)
        Q = np.zeros((m + nc, m + nc))
        Q[:m, :m] = Jr @ Jr.T
        for i in range(nc):
            Q[nc + i * k: nc + (i + 1) * k, m + i] = 1.0
            Q[m + i, i] = 0.5
            Q[m + i, nc + i * k: nc + (i + 1) * k] = -1.0
        q = np.concatenate([rng.standard_normal(m), np.zeros(nc)])
        sol = solve_lcp(Q, q)
        assert sol.status == SUCCESS
        check_lcp(Q, q, sol.z, 1e-9 * max(1.0, np.abs(q).max()))


def test_warm_start_from_previous_basis():
    rng = np.random.default_rng(11)
    used = 0
    for _ in range(30):
        n = 15
        A = rng.standard_normal((n, n))
        Q = A @ A.T + 0.1 * np.eye(n)
        q = rng.standard_normal(n)
        cold = solve_lcp(Q, q)
        assert cold.status == SUCCESS and not cold.warm_used
        # the same problem from its own basis: zero pivots
        same = solve_lcp(Q, q, warm_basic=cold.basic)
        if cold.basic.any():
            assert same.warm_used and same.pivots == 0
            np.testing.assert_allclose(same.z, cold.z, atol=1e-10)
        # a slightly perturbed problem: still solved from the warm basis
        q2 = q + 1e-3 * rng.standard_normal(n)
        warm = solve_lcp(Q, q2, warm_basic=cold.basic)
        assert warm.status == SUCCESS
        check_lcp(Q, q2, warm.z, 1e-9)
        used += warm.warm_used
        np.testing.assert_allclose(warm.z, solve_lcp(Q, q2).z, atol=1e-8)  # PD: unique
    assert used >= 25


def test_singular_warm_basis_is_rejected_and_cold_start_used():
    Q = np.array([[1.0, 1.0], [1.0, 1.0]])     # z-basis {0, 1} singular
    q = np.array([-1.0, -2.0])
    sol = solve_lcp(Q, q, warm_basic=np.array([True, True]))
    assert sol.status == SUCCESS and sol.warm_rejected and not sol.warm_used
    check_lcp(Q, q, sol.z, 1e-12)


def test_infeasible_is_flagged_and_finite():
    # w = -z - 1 >= 0 impossible
    sol = solve_lcp(np.array([[-1.0]]), np.array([-1.0]))
    assert sol.status == RAY_TERMINATION
    assert np.all(np.isfinite(sol.z)) and np.all(np.isfinite(sol.w))
    # Q = 0, q < 0: regularization would give z = 1/eps -> rejected by reg_tol
    sol = solve_lcp(np.zeros((2, 2)), np.array([-1.0, 0.5]))
    assert sol.status != SUCCESS and np.all(np.isfinite(sol.z))


def test_pivot_limit_flagged():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((20, 20))
    Q = A @ A.T + np.eye(20)
    q = -np.abs(rng.standard_normal(20))
    full = solve_lcp(Q, q)
    assert full.status == SUCCESS and full.pivots > 3
    sol = solve_lcp(Q, q, max_pivots=2, regularize=False)
    assert sol.status == PIVOT_LIMIT
    assert np.all(np.isfinite(sol.z)) and np.min(sol.z) >= 0.0


def test_tikhonov_fallback_on_nearly_singular_pivots():
    # column of z_0 has magnitude below the pivot tolerance -> plain Lemke ray-terminates;
    # Q + eps I is solved and accepted because it satisfies the original LCP within reg_tol
    Q = np.array([[1e-13, 0.0], [0.0, 1.0]])
    q = np.array([-1e-8, -1.0])
    plain = solve_lcp(Q, q, regularize=False)
    assert plain.status != SUCCESS
    sol = solve_lcp(Q, q)
    assert sol.status == SUCCESS and sol.regularization > 0.0
    assert sol.residual <= 1e-6
    np.testing.assert_allclose(sol.z[1], 1.0, atol=1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="Q"):
        solve_lcp(np.eye(2), np.zeros(3))
    with pytest.raises(ValueError, match="q"):
        solve_lcp(np.eye(2), np.array([np.nan, 1.0]))
