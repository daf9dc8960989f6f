"""wbc_dynamics.contact.dense_qp: the compiled Goldfarb-Idnani solver against Clarabel / OSQP.

References (test/dense_qp_helpers.py): Clarabel (interior point, gaps 1e-12) with its point
polished on its own active set (KKT system by least squares, accepted only if it is a KKT point:
an interior-point x of an ill-conditioned QP is accurate only to ~sqrt(gap / lambda_min) along
the flat directions, 1e-4 relative seen at cond 1e7), OSQP's polished point as second chance; and
the KKT conditions themselves (stationarity, primal feasibility, complementarity, dual sign in
OSQP's convention), which certify the optimum independently of any reference (the problems are
strictly convex, so the KKT point is unique).
"""

from __future__ import annotations

import numpy as np
import pytest
from dense_qp_helpers import (
    contact_qps,
    contact_setup,
    kkt_residuals,
    osqp_qp,
    random_qp,
    random_states,
    reference,
    sway_states,
)
from numba import njit

from wbc_dynamics.contact.dense_qp import (
    INFEASIBLE,
    INVALID,
    MAX_ITER,
    NOT_PD,
    SOLVED,
    DenseQPWork,
    dense_qp_kernel,
    psd_finish_kernel,
    solve_dense_qp,
    warmup,
)

warmup()
KKT_TOL = 1e-9
INFEASIBLE_KINDS = ("sum", "eq", "box")


def _obj(P, q, x):
    return 0.5 * x @ P @ x + q @ x


def _pnorm(P, e, x):
    return np.sqrt(e @ P @ e / (x @ P @ x))


def _rel(a, b):
    return np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b))


def _cases(seed: int, count: int):
    """(label, problem): n in 2..40, m in 1..3n+1, cond 1e1 / 1e3 / 1e7, with / without
    equalities, degenerate (duplicated, parallel rows, redundant equalities) every fourth,
    infeasible ('sum', 'eq', 'box') every fourth."""
    rng = np.random.default_rng(seed)
    for t in range(count):
        n = int(rng.integers(2, 41))
        m = int(rng.integers(1, 3 * n + 2))
        cond = (1e1, 1e3, 1e7)[t % 3]
        n_eq = int(rng.integers(1, max(2, n // 3))) if t % 2 else 0
        infeasible = INFEASIBLE_KINDS[(t // 4) % 3] if t % 4 == 3 else None
        yield (f"seed{seed}-{t} n={n} cond={cond:g} eq={n_eq} deg={t % 4 == 1} "
               f"inf={infeasible}",
               random_qp(n, m, rng, cond=cond, degenerate=t % 4 == 1, n_eq=n_eq,
                         infeasible=infeasible), infeasible)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_qps_match_clarabel_and_satisfy_kkt(seed):
    """Status, x and objective against the reference; KKT residuals; warm starts."""
    polished = solved = infeasible = 0
    worst = dict(x=0.0, obj=0.0, kkt=0.0, warm=0.0, wrong=0.0)
    cold_its, warm_its = [], []
    rng = np.random.default_rng(100 + seed)
    for label, (P, q, A, l, u), kind in _cases(seed, 120):
        w = DenseQPWork(q.size, l.size)
        status = solve_dense_qp(P, q, A, l, u, w)
        ref_status, xr = reference(P, q, A, l, u)
        if kind is not None:
            assert status == INFEASIBLE and xr is None, (label, w.status_name, ref_status)
            infeasible += 1
            continue
        assert status == SOLVED and xr is not None, (label, w.status_name, ref_status)
        solved += 1
        x, y = w.x.copy(), w.y.copy()
        kkt = kkt_residuals(P, q, A, l, u, x, y)
        assert max(kkt.values()) <= KKT_TOL, (label, kkt)
        fo = abs(_obj(P, q, x) - _obj(P, q, xr)) / max(1.0, abs(_obj(P, q, xr)))
        assert fo <= 1e-8, (label, fo)
        if "polished" in ref_status:
            polished += 1
            assert _rel(x, xr) <= 1e-8, (label, _rel(x, xr))
            worst["x"] = max(worst["x"], _rel(x, xr))
        worst["obj"] = max(worst["obj"], fo)
        worst["kkt"] = max(worst["kkt"], max(kkt.values()))
        # warm start with the true active set: same answer, fewer iterations
        cold = w.iterations
        act = w.active.copy()
        assert solve_dense_qp(P, q, A, l, u, w, act) == SOLVED
        assert _rel(w.x, x) <= 1e-9 and np.allclose(w.y, y, rtol=1e-7, atol=1e-9 * max(
            1.0, np.abs(y).max())), label
        assert np.array_equal(w.active, act), label
        if cold > 0:
            assert w.iterations < cold, (label, cold, w.iterations)
        cold_its.append(cold)
        warm_its.append(w.iterations)
        worst["warm"] = max(worst["warm"], _rel(w.x, x))
        # a wrong guess (30 % of the rows replaced by random sides, incl. absent bounds)
        wrong = np.where(rng.uniform(size=l.size) < 0.3, rng.integers(-1, 2, l.size), act)
        assert solve_dense_qp(P, q, A, l, u, w, wrong) == SOLVED, label
        assert _rel(w.x, x) <= 1e-9, (label, _rel(w.x, x))
        worst["wrong"] = max(worst["wrong"], _rel(w.x, x))
    assert infeasible == 30 and solved == 90
    assert polished >= 0.85 * solved, polished
    assert sum(warm_its) < 0.05 * sum(cold_its)
    print(f"seed {seed}: {solved} solved ({polished} polished refs), {infeasible} infeasible; "
          f"worst {worst}; iterations cold mean {np.mean(cold_its):.1f} max {max(cold_its)}, "
          f"warm (true set) mean {np.mean(warm_its):.2f}")


@pytest.mark.parametrize("seed", [0, 1])
def test_psd_finish_reaches_the_optimum_of_a_semidefinite_qp(seed):
    """psd_finish_kernel: QPs with a positive semidefinite ``H = B B^T`` (rank n/4 ... n/2,
    column scales over 3.5 decades: curvatures down to delta) and ``q`` in its range (bounded
    below, as Stage I's kinetic-energy objective), with / without equalities, degenerate every
    third. The dual method on ``P = H + delta I`` (delta 1e-7 of max diag H), then the finish on
    the same workspace: a KKT point of H's QP (OSQP's convention, 1e-9) with Clarabel's optimal
    value (1e-8 relative); the proximal minimizer alone is measurably above it on some."""
    rng = np.random.default_rng(200 + seed)
    above = 0
    for t in range(16):
        n = int(rng.integers(4, 31))
        m = int(rng.integers(n // 2 + 1, 2 * n + 1))
        _, _, A, l, u = random_qp(n, m, rng, degenerate=t % 3 == 1,
                                  n_eq=int(rng.integers(1, max(2, n // 4))) if t % 2 else 0)
        k = int(rng.integers(max(1, n // 4), n // 2 + 1))
        B = rng.normal(size=(n, k)) * np.logspace(0.0, -3.5, k)
        H = B @ B.T
        q = H @ (10.0 * rng.normal(size=n))
        delta = 1e-7 * np.max(np.diag(H))
        w = DenseQPWork(n, l.size)
        assert solve_dense_qp(H + delta * np.eye(n), q, A, l, u, w) == SOLVED
        prox = _obj(H, q, w.x)
        status, it = psd_finish_kernel(H, delta, q, A, l, u, 500, 1e-11, 1e-11, w.fwork,
                                       w.iwork, w.x, w.y, w.active)
        assert status == SOLVED, (t, status)
        kkt = kkt_residuals(H, q, A, l, u, w.x, w.y)
        assert max(kkt.values()) <= KKT_TOL, (t, kkt)
        ref_status, xr = reference(H, q, A, l, u)
        assert xr is not None, ref_status
        scale = max(1.0, abs(_obj(H, q, xr)), abs(q) @ np.abs(xr))
        assert abs(_obj(H, q, w.x) - _obj(H, q, xr)) <= 1e-8 * scale, t
        above += prox - _obj(H, q, w.x) > 1e-10 * scale
    assert above >= 4, above


def test_large_ill_conditioned():
    """n = 60, m = 150 (+ 5 equalities), cond 1e8: the upper end of the intended sizes."""
    rng = np.random.default_rng(7)
    for t in range(4):
        P, q, A, l, u = random_qp(60, 150, rng, cond=1e8, degenerate=t % 2 == 1, n_eq=5)
        w = DenseQPWork(60, l.size)
        assert solve_dense_qp(P, q, A, l, u, w) == SOLVED
        kkt = kkt_residuals(P, q, A, l, u, w.x, w.y)
        assert max(kkt.values()) <= KKT_TOL, kkt
        ref_status, xr = reference(P, q, A, l, u)
        assert "polished" in ref_status and _rel(w.x, xr) <= 1e-8, (ref_status, _rel(w.x, xr))
        cold = w.iterations
        assert cold > 100
        assert solve_dense_qp(P, q, A, l, u, w, w.active) == SOLVED   # (aliasing allowed)
        assert w.iterations == 0 and _rel(w.x, xr) <= 1e-8


def test_degenerate_and_special_cases():
    P = np.diag([1.0, 2.0, 3.0])
    q = np.array([-10.0, -10.0, -10.0])
    a = np.array([1.0, 1.0, 1.0])
    w = DenseQPWork(3, 6)
    # the same row four times (two-sided, lower, duplicate, scaled), a redundant equality pair
    A = np.vstack([a, a, a, 2 * a, [1.0, 0, 0], [1.0, 0, 0]])
    l = np.array([-np.inf, -5.0, -np.inf, -np.inf, 1.0, 1.0])
    u = np.array([3.0, np.inf, 3.0, 6.0, 1.0, 1.0])
    assert solve_dense_qp(P, q, A, l, u, w) == SOLVED
    # analytic: x0 = 1; x1 + x2 = 2 with 2 x1 - 10 = 3 x2 - 10 -> x1 = 1.2, x2 = 0.8
    np.testing.assert_allclose(w.x, [1.0, 1.2, 0.8], rtol=0, atol=1e-13)
    kkt = kkt_residuals(P, q, A, l, u, w.x, w.y)
    assert max(kkt.values()) <= 1e-14, kkt
    # multiplier of the sum constraint: grad = P x + q = (-9, -7.6, -7.6) -> 7.6 in total on
    # the upper bounds of rows 0, 2, 3 (a scaled by 1, 1, 2), 1.4 on the equality x0 = 1
    assert np.all(w.y[[0, 2, 3]] >= 0) and w.y[1] == 0.0
    assert w.y[0] + w.y[2] + 2 * w.y[3] == pytest.approx(7.6, abs=1e-12)
    assert w.y[4] + w.y[5] == pytest.approx(9.0 - 7.6, abs=1e-12)
    # inconsistent redundant equality, contradictory parallel rows, l > u
    for lo, up in ((np.r_[l[:5], 2.0], np.r_[u[:5], 2.0]),
                   (np.r_[l[:3], 7.5, l[4:]], u),
                   (np.r_[l[:4], 2.0, 1.0], np.r_[u[:4], 1.0, 1.0])):
        assert solve_dense_qp(P, q, A, lo, up, w) == INFEASIBLE
    for lo, up in ((np.r_[np.inf, l[1:]], u), (l, np.r_[u[:1], -np.inf, u[2:]])):
        assert solve_dense_qp(P, q, A, lo, up, w) == INFEASIBLE
    # a zero row: satisfied (ignored) or infeasible
    Z = np.vstack([np.zeros(3), a])
    w2 = DenseQPWork(3, 2)
    assert solve_dense_qp(P, q, Z, np.array([-1.0, -np.inf]), np.array([1.0, 3.0]), w2) == SOLVED
    assert w2.y[0] == 0.0 and a @ w2.x == pytest.approx(3.0, abs=1e-13)
    assert solve_dense_qp(P, q, Z, np.array([0.5, -np.inf]), np.array([1.0, 3.0]),
                          w2) == INFEASIBLE
    # OSQP's infinity (1e30) is absent; more equalities than variables (consistent)
    w3 = DenseQPWork(3, 5)
    E = np.vstack([np.eye(3), [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]])
    b = E @ np.array([1.0, 2.0, 3.0])
    assert solve_dense_qp(P, q, E, b, b, w3) == SOLVED
    np.testing.assert_allclose(w3.x, [1.0, 2.0, 3.0], atol=1e-13)
    assert solve_dense_qp(P, q, E, np.full(5, -1e30), np.full(5, 1e30), w3) == SOLVED
    np.testing.assert_allclose(w3.x, 10.0 / np.diag(P), rtol=1e-14)
    assert w3.iterations == 0 and not w3.active.any()
    # statuses: not positive definite, invalid data, iteration limit
    assert solve_dense_qp(np.diag([1.0, -1.0, 1.0]), q, A, l, u, w) == NOT_PD
    assert solve_dense_qp(np.diag([1.0, 0.0, 1.0]), q, A, l, u, w) == NOT_PD
    assert solve_dense_qp(P, np.array([np.nan, 0, 0]), A, l, u, w) == INVALID
    Pr, qr, Ar, lr, ur = random_qp(10, 30, np.random.default_rng(3))
    wr = DenseQPWork(10, 30)
    assert solve_dense_qp(Pr, qr, Ar, lr, ur, wr) == SOLVED and wr.iterations > 3
    assert solve_dense_qp(Pr, qr, Ar, lr, ur, wr, max_iter=3) == MAX_ITER
    assert wr.iterations == 3 and wr.status_name == "max_iter_reached"
    # no rows
    w0 = DenseQPWork(3, 0)
    assert solve_dense_qp(P, q, np.zeros((0, 3)), np.zeros(0), np.zeros(0), w0) == SOLVED
    np.testing.assert_allclose(w0.x, 10.0 / np.diag(P), rtol=1e-14)
    with pytest.raises(ValueError, match="do not match"):
        solve_dense_qp(P, q, A[:2], l[:2], u[:2], w)
    with pytest.raises(ValueError, match="warm_active"):
        solve_dense_qp(P, q, A, l, u, w, np.zeros(2))


@pytest.mark.parametrize("robot", ["quadruped", "humanoid"])
def test_contact_qps_match_osqp(robot):
    """The Stage I / Stage II QPs qp.py hands OSQP (qp_coulomb and qp_noslip, dense form,
    random standing states). P has cond ~1e7 in Stage I (the proximal term), up to ~2.5e9 in
    the humanoid's Stage II (stage2_reg); OSQP at eps 1e-10 (polish) converges slowly on them
    (humanoid Stage II often stops at 50000 iterations) and, even where it reports solved, its x
    is off the exact optimum by up to ~1e-4 relative along the flat directions of P (measured:
    its scaled stationarity residual is 1e-10, the kernel's 1e-15). So x is compared with the
    polished Clarabel reference (x to 1e-6, P-norm |x - x_ref|_P / |x|_P to 1e-9) and with
    OSQP, where it reports solved, in objective (1e-9) and P-norm (1e-5: measured up to 2.5e-6
    on the humanoid's Stage II, <= 1e-7 elsewhere) -- the P-norm is what the objective,
    contact velocities and torques depend on."""
    worst = dict(x_ref=0.0, pnorm_ref=0.0, pnorm_osqp=0.0, obj_osqp=0.0, kkt=0.0)
    n_ref = n_osqp = total = 0
    for method in ("qp_coulomb", "qp_noslip"):
        m, _, q0 = contact_setup(robot)
        ticks = contact_qps(robot, method, random_states(m, q0, 3, 1))
        for tick in ticks:
            for tag, (P, q, A, l, u) in tick:
                total += 1
                w = DenseQPWork(q.size, l.size)
                assert solve_dense_qp(P, q, A, l, u, w) == SOLVED, (method, tag)
                kkt = kkt_residuals(P, q, A, l, u, w.x, w.y)
                assert max(kkt.values()) <= KKT_TOL, (method, tag, kkt)
                worst["kkt"] = max(worst["kkt"], max(kkt.values()))
                ref_status, xr = reference(P, q, A, l, u)
                if "polished" in ref_status:
                    n_ref += 1
                    pn = _pnorm(P, xr - w.x, w.x)
                    assert _rel(w.x, xr) <= 1e-6 and pn <= 1e-9, (method, tag, _rel(w.x, xr),
                                                                  pn)
                    worst["x_ref"] = max(worst["x_ref"], _rel(w.x, xr))
                    worst["pnorm_ref"] = max(worst["pnorm_ref"], pn)
                st, _, xo, _, _ = osqp_qp(P, q, A, l, u, max_iter=50000)
                if st == 1:
                    n_osqp += 1
                    pn = _pnorm(P, xo - w.x, w.x)
                    fo = abs(_obj(P, q, xo) - _obj(P, q, w.x)) / abs(_obj(P, q, w.x))
                    assert pn <= 1e-5 and fo <= 1e-9, (method, tag, pn, fo)
                    worst["pnorm_osqp"] = max(worst["pnorm_osqp"], pn)
                    worst["obj_osqp"] = max(worst["obj_osqp"], fo)
    assert n_ref >= 0.8 * total and n_osqp >= 0.4 * total, (n_ref, n_osqp, total)
    print(f"{robot}: {total} QPs, {n_ref} vs polished Clarabel, {n_osqp} vs OSQP solved; "
          f"worst {worst}")


@pytest.mark.parametrize("robot", ["quadruped", "humanoid"])
def test_contact_sequence_warm_start(robot):
    """Consecutive control ticks (smooth sway): warm-started with the previous tick's active
    set, the kernel returns the cold answer with no more iterations in total (fewer where the
    cold start needs any)."""
    m, _, q0 = contact_setup(robot)
    ticks = contact_qps(robot, "qp_coulomb", sway_states(m, q0, 30, 3))
    prev: dict[str, np.ndarray] = {}
    cold_total = warm_total = 0
    for tick in ticks:
        for tag, (P, q, A, l, u) in tick:
            w = DenseQPWork(q.size, l.size)
            assert solve_dense_qp(P, q, A, l, u, w) == SOLVED
            x, cold = w.x.copy(), w.iterations
            guess = prev.get(tag)
            if guess is not None and guess.shape == l.shape:
                assert solve_dense_qp(P, q, A, l, u, w, guess) == SOLVED
                assert _rel(w.x, x) <= 1e-9, (tag, _rel(w.x, x))
                cold_total += cold
                warm_total += w.iterations
            prev[tag] = w.active.copy()
    assert cold_total > 0 and warm_total < 0.5 * cold_total, (cold_total, warm_total)
    print(f"{robot}: iterations over the sequence cold {cold_total}, warm {warm_total}")


@njit(cache=True)
def _compiled_caller(P, q, A, l, u, warm, fw, iw, x, y, active):
    """Three solves from compiled code, each warm-started with the previous active set."""
    total = 0
    status = 0
    for k in range(3):
        # (np.int64: a literal 100 would compile the kernel a second time, literal_duplicates)
        status, it = dense_qp_kernel(P, q, A, l, u, warm, k > 0, np.int64(100), 1e-11, 1e-11,
                                     fw, iw, x, y, active)
        total += it
        warm[:] = active
    return status, total


def test_kernel_is_callable_from_compiled_code():
    P, q, A, l, u = random_qp(8, 20, np.random.default_rng(11))
    w = DenseQPWork(8, 20)
    assert solve_dense_qp(P, q, A, l, u, w) == SOLVED
    x, y, cold = w.x.copy(), w.y.copy(), w.iterations
    w2 = DenseQPWork(8, 20)
    status, total = _compiled_caller(P, q, A, l, u, np.zeros(20, np.int64), w2.fwork, w2.iwork,
                                     w2.x, w2.y, w2.active)
    assert status == SOLVED and total == cold  # the two warm solves need no iteration
    np.testing.assert_allclose(w2.x, x, rtol=0, atol=1e-12 * np.abs(x).max())
    np.testing.assert_allclose(w2.y, y, rtol=0, atol=1e-12 * np.abs(y).max())
