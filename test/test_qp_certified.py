"""qp_coulomb against its two-stage optimum certified in extended precision.

Zapolsky & Drumwright, "Inverse dynamics for a quadruped robot locomoting on slippery
surfaces", Sec. 6: Stage I (eqs. (69)-(74)) has a positive semidefinite Hessian, so its optimal
set is a face; Stage II (eqs. (102)-(112)) returns the minimum-norm torques over that face, which
are unique but jump when Stage I's point is not on the optimal face. This test certifies both
optima independently of the product: the QPs are derived in 50-digit decimal arithmetic from the
problem's arrays alone (``M^-1``, ``h``, ``v``, ``qdd_des``, ``dt``, ``N``, ``S``, ``T``,
``phi``, ``mu``; the k = 4 friction pyramid as ``mu f_N >= +-f_S +- f_T``), solved there by a
primal active-set method (started from the product's forces, which only saves iterations) and
accepted only if the result satisfies the KKT conditions -- stationarity, primal and dual
feasibility, complementarity -- to 1e-30 relative: a proof of optimality of these convex QPs. The
certified torques are Stage II's ``tau0 - T f`` at its optimum (unique).

The states are generated from seeds here: random humanoid states on which the proximal Stage I
alone (the product before its exact finish) missed the optimal face by up to 3 % of the torques,
and degenerate ones -- symmetric stances at rest (ties, non-penetration rows that hold with zero
multipliers), every contact hovering inside the margin (all pyramids at their apex), a rolling
stance (one sole's pyramids at their apex), one sole, a rolled base (corners at different
depths), a duplicated contact with rows dependent to 1e-9 (the general path only) and quadruped
states. Each result, of the general path and of the compiled tick, must equal the certified
torques to 1e-4 of their largest (measured <= 5e-8).
"""

from __future__ import annotations

import dataclasses
import functools
from decimal import Decimal, localcontext

import numpy as np
import pytest
from dense_qp_helpers import contact_setup, tick_states

from wbc_dynamics.contact import solve
from wbc_dynamics.contact.tick import compiled_tick

ZERO, ONE = Decimal(0), Decimal(1)
PREC = 50                    # decimal digits of the certificate's arithmetic
RANK_TOL = Decimal("1e-30")  # relative pivot of a dependent row
KKT_TOL = Decimal("1e-30")   # the certificate's KKT violation, relative
TAU_TOL = 1e-4               # product torques vs the certified ones, relative to the largest


# --------------------------------------------------------------------------- exact arithmetic
def dec(a):
    """float64 array (1-D or 2-D) as Decimal lists (exact: every float is a decimal)."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        return [Decimal(float(x)) for x in a]
    return [[Decimal(float(x)) for x in row] for row in a]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def matvec(A, x):
    return [dot(r, x) for r in A]


def transpose(A):
    return [list(c) for c in zip(*A, strict=True)]


def matmul(A, B):
    Bt = transpose(B)
    return [[dot(r, c) for c in Bt] for r in A]


def solve_square(A, B):
    """X with A X = B, A nonsingular (Gaussian elimination, partial pivoting), B as rows."""
    n = len(A)
    M = [list(A[i]) + list(B[i]) for i in range(n)]
    w = len(M[0])
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(M[i][c]))
        M[c], M[p] = M[p], M[c]
        for i in range(c + 1, n):
            f = M[i][c] / M[c][c]
            if f:
                for j in range(c, w):
                    M[i][j] -= f * M[c][j]
    X = [[ZERO] * (w - n) for _ in range(n)]
    for i in range(n - 1, -1, -1):
        for j in range(w - n):
            X[i][j] = (M[i][n + j] - sum(M[i][k] * X[k][j] for k in range(i + 1, n))) / M[i][i]
    return X


def echelon(M, rhs=None, rows_scaled=True):
    """Gauss-Jordan elimination with complete pivoting (rows scaled to unit max norm, or all
    by the largest entry): (independent rows, pivot columns, reduced rows, reduced rhs of all
    rows -- the rank first, then the residues of the dependent rows)."""
    n = len(M[0]) if M else 0
    gmax = max((abs(x) for r in M for x in r), default=ZERO)
    R, idx, b = [], [], []
    for k, r in enumerate(M):
        s = max((abs(x) for x in r), default=ZERO) if rows_scaled else gmax
        if s:
            R.append([x / s for x in r])
            idx.append(k)
            b.append(rhs[k] / s if rhs is not None else ZERO)
    piv = []
    for step in range(min(len(R), n)):
        best, bi, bj = ZERO, -1, -1
        for i in range(step, len(R)):
            for j in range(n):
                if abs(R[i][j]) > best and j not in piv:
                    best, bi, bj = abs(R[i][j]), i, j
        if best <= RANK_TOL:
            break
        R[step], R[bi] = R[bi], R[step]
        idx[step], idx[bi] = idx[bi], idx[step]
        b[step], b[bi] = b[bi], b[step]
        p = R[step][bj]
        R[step] = [x / p for x in R[step]]
        b[step] /= p
        for i in range(len(R)):
            if i != step and R[i][bj]:
                f = R[i][bj]
                for j in range(n):
                    R[i][j] -= f * R[step][j]
                b[i] -= f * b[step]
        piv.append(bj)
    return idx[:len(piv)], piv, R[:len(piv)], b


def nullspace(M, n, rows_scaled=True):
    """A basis of {x : M x = 0} (x of length n)."""
    if not M:
        return [[ONE if i == j else ZERO for i in range(n)] for j in range(n)]
    _, piv, R, _ = echelon(M, rows_scaled=rows_scaled)
    basis = []
    for fj in range(n):
        if fj not in piv:
            z = [ZERO] * n
            z[fj] = ONE
            for i, pc in enumerate(piv):
                z[pc] = -R[i][fj]
            basis.append(z)
    return basis


def particular(M, c, rows_scaled=True):
    """A basic solution of M z = c (the dependent rows' residues are the caller's to check)."""
    _, piv, _, b = echelon(M, c, rows_scaled=rows_scaled)
    z = [ZERO] * len(M[0])
    for i, pc in enumerate(piv):
        z[pc] = b[i]
    return z


def min_norm(M, c, n):
    """The minimum-norm solution (length n) of M z = c on the independent rows of M."""
    rows, _, _, _ = echelon(M)
    Mr = [M[i] for i in rows]
    if not Mr:
        return [ZERO] * n
    w = solve_square(matmul(Mr, transpose(Mr)), [[c[i]] for i in rows])
    return [sum(Mr[i][j] * w[i][0] for i in range(len(rows))) for j in range(n)]


class CertificateError(RuntimeError):
    pass


class ExactQP:
    """``min 1/2 x^T H x + q^T x  s.t.  A x >= l,  E x = e`` (H positive semidefinite) in
    decimal arithmetic: a primal active-set method with the minimum-norm Newton step on the
    working set (a descent direction of zero curvature where the reduced gradient has a part in
    the null space of the reduced Hessian), Bland's rule for the drops, and the KKT check."""

    def __init__(self, H, q, A, l, E=(), e=()):
        self.H, self.q, self.A, self.l = H, q, A, l
        self.E, self.e = list(E), list(e)
        self.n = len(q)

    def grad(self, x):
        return [dot(r, x) + qi for r, qi in zip(self.H, self.q, strict=True)]

    def scale(self, x):
        return [sum(abs(a * b) for a, b in zip(r, x, strict=True)) + abs(li) + ONE
                for r, li in zip(self.A, self.l, strict=True)]

    def feasible_start(self, xg):
        """``xg`` moved (minimum norm) onto the equalities and the rows within 1e-9 (relative)
        of their bound, repeated while rows become violated: (x, independent working set)."""
        x = dec(xg)
        sc = self.scale(x)
        act = {i for i, (r, li) in enumerate(zip(self.A, self.l, strict=True))
               if dot(r, x) - li <= Decimal("1e-9") * sc[i]}
        for _ in range(20):
            rows = sorted(act)
            M = [self.A[i] for i in rows] + self.E
            c = ([self.l[i] - dot(self.A[i], x) for i in rows]
                 + [ei - dot(r, x) for r, ei in zip(self.E, self.e, strict=True)])
            dx = min_norm(M, c, self.n)
            xn = [a + b for a, b in zip(x, dx, strict=True)]
            if any(abs(dot(r, dx) - ci) > KKT_TOL * (abs(ci) + ONE)
                   for r, ci in zip(M, c, strict=True)):
                raise CertificateError("inconsistent start rows")
            viol = {i for i, (r, li) in enumerate(zip(self.A, self.l, strict=True))
                    if dot(r, xn) < li}
            if viol <= act:
                W, _, _, _ = echelon([self.A[i] for i in rows])
                return xn, [rows[k] for k in W]
            act |= viol
        raise CertificateError("no feasible start")

    def multipliers(self, W, x):
        M = [self.A[i] for i in W] + self.E
        if not M:
            return [], []
        z = particular(transpose(M), self.grad(x))
        return z[:len(W)], z[len(W):]

    def solve(self, x, W, max_iter=300):
        n = self.n
        W = list(W)
        for _ in range(max_iter):
            Z = nullspace([self.A[i] for i in W] + self.E, n)
            g = self.grad(x)
            d, ray = [ZERO] * n, False
            if Z:
                HZ = [matvec(self.H, z) for z in Z]
                S = [[dot(zi, hz) for hz in HZ] for zi in Z]
                zg = [-dot(z, g) for z in Z]
                gz = (max(abs(v) for v in g) + ONE) * max(max(abs(v) for v in z) for z in Z)
                if max(abs(v) for v in zg) > Decimal("1e-40") * gz:
                    NS = nullspace(S, len(Z), rows_scaled=False)
                    cz = [dot(zg, nk) for nk in NS]
                    zs = max(abs(v) for v in zg)
                    if any(abs(c) > RANK_TOL * zs * max(abs(v) for v in nk)
                           for c, nk in zip(cz, NS, strict=True)):
                        ray = True  # zero curvature, descent: to the first blocking row
                        p = [sum(c * nk[j] for c, nk in zip(cz, NS, strict=True))
                             for j in range(len(Z))]
                    else:
                        p = particular(S, zg, rows_scaled=False)
                        if NS:  # the minimum-norm step
                            G = [[dot(a, b) for b in NS] for a in NS]
                            cc = solve_square(G, [[dot(nk, p)] for nk in NS])
                            for k, nk in enumerate(NS):
                                for j in range(len(p)):
                                    p[j] -= cc[k][0] * nk[j]
                    d = [sum(p[k] * Z[k][j] for k in range(len(Z))) for j in range(n)]
            if not any(d):
                y, lam = self.multipliers(W, x)
                ymax = max([abs(v) for v in y] + [ONE])
                neg = [k for k in range(len(y)) if y[k] < -KKT_TOL * ymax]
                if not neg:
                    return x, W, y, lam
                W.pop(min(neg, key=lambda k: W[k]))  # Bland: the lowest row index
                continue
            alpha, block = (None if ray else ONE), -1
            for i, (r, li) in enumerate(zip(self.A, self.l, strict=True)):
                ad = dot(r, d)
                if i not in W and ad < 0:
                    t = max(dot(r, x) - li, ZERO) / -ad
                    if alpha is None or t < alpha:
                        alpha, block = t, i
            if alpha is None:
                raise CertificateError("unbounded")
            x = [a + alpha * b for a, b in zip(x, d, strict=True)]
            if block >= 0:
                W.append(block)
        raise CertificateError("iteration limit")

    def kkt_violation(self, x, W, y, lam):
        """The largest relative violation of the KKT conditions of (x, y, lam)."""
        r = self.grad(x)
        gs = max(abs(v) for v in r) + ONE
        for k, i in enumerate(W):
            r = [a - y[k] * b for a, b in zip(r, self.A[i], strict=True)]
        for k, row in enumerate(self.E):
            r = [a - lam[k] * b for a, b in zip(r, row, strict=True)]
        ys = max([abs(v) for v in y] + [ONE])
        sc = self.scale(x)
        xs = max(abs(v) for v in x) + ONE
        return max([max(abs(v) for v in r) / gs]                                  # stationary
                   + [-v / ys for v in y]                                          # dual
                   + [(li - dot(a, x)) / s for a, li, s in zip(self.A, self.l, sc,  # primal
                                                                strict=True)]
                   + [abs(dot(self.A[i], x) - self.l[i]) / sc[i] for i in W]         # compl.
                   + [abs(dot(a, x) - ei) / xs for a, ei in zip(self.E, self.e, strict=True)])


class TwoStage:
    """Stage I and II of ``qp_coulomb`` (k = 4, kinetic-energy objective, force units) derived
    from a ContactProblem's arrays in decimal arithmetic.

    With ``G = M^-1_aa``, ``K = M^-1 - M^-1_:a G^-1 M^-1_a:`` and the contact rows ``J = [N; S;
    T]``: ``tau(f) = G^-1 (qdd_des + (M^-1 h)_a) - G^-1 (M^-1 J^T)_a f`` (eqs. (37), (38) with
    ``c = dt f``), ``v+(f) = v0 + dt K J^T f``; Stage I minimizes ``1/2 v+^T M v+ / dt^2``, i.e.
    ``1/2 f^T (J K J^T) f + (J_f (v0_f - M^-1_fa G^-1 qdot_des))^T f / dt`` s.t. ``N v+ >=
    -phi/dt``, ``f_N >= 0`` and the pyramid; Stage II minimizes ``|tau(f)|^2`` over Stage I's
    optimal set ``{f feasible : J_f^T f = J_f^T f1}``."""

    def __init__(self, p):
        assert p.friction_edges == 4
        nv, nc = p.nv, p.nc
        act, free = [int(a) for a in p.actuated], [int(f) for f in p.free]
        Mi, h, v, qdd = dec(p.Minv), dec(p.h), dec(p.v), dec(p.qdd_des)
        dt = Decimal(float(p.dt))
        J = dec(np.vstack([p.N, p.S, p.T]))
        m, nu = 3 * nc, len(act)
        G = [[Mi[a][b] for b in act] for a in act]
        X = solve_square(G, [Mi[a] for a in act])        # G^-1 M^-1_a:
        Mih = matvec(Mi, h)
        self.tau0 = [r[0] for r in solve_square(G, [[qdd[t] + Mih[a]]
                                                    for t, a in enumerate(act)])]
        MiA = [[Mi[i][a] for a in act] for i in range(nv)]
        K = [[Mi[i][j] - sum(MiA[i][t] * X[t][j] for t in range(nu)) for j in range(nv)]
             for i in range(nv)]
        self.H = matmul(matmul(J, K), transpose(J))
        v0 = [v[i] + dt * (dot(MiA[i], self.tau0) - Mih[i]) for i in range(nv)]
        qdot = [v[a] + dt * qdd[t] for t, a in enumerate(act)]
        Gq = [r[0] for r in solve_square(G, [[x] for x in qdot])]
        g = [ZERO] * nv
        for i in free:
            g[i] = v0[i] - sum(Mi[i][a] * Gq[t] for t, a in enumerate(act))
        self.q1 = [x / dt for x in matvec(J, g)]
        Jv0 = matvec(J, v0)
        phi, mu = dec(p.phi), dec(p.mu)
        C = []
        for i in range(nc):
            r = [ZERO] * m
            r[i] = ONE
            C.append(r)
        for i in range(nc):  # facet (s1, s2): mu f_N - s1 f_S - s2 f_T >= 0
            for s1, s2 in ((1, 1), (-1, 1), (-1, -1), (1, -1)):
                r = [ZERO] * m
                r[i], r[nc + i], r[2 * nc + i] = mu[i], Decimal(-s1), Decimal(-s2)
                C.append(r)
        self.C = C
        self.A1 = [list(self.H[i]) for i in range(nc)] + C
        self.l1 = [(-phi[i] / dt - Jv0[i]) / dt for i in range(nc)] + [ZERO] * len(C)
        self.JfT = [[J[i][c] for i in range(m)] for c in free]
        self.T = matmul(X, transpose(J))

    def stage1(self):
        return ExactQP(self.H, self.q1, self.A1, self.l1)

    def stage2(self, f1):
        Tt = transpose(self.T)
        return ExactQP(matmul(Tt, self.T), [-x for x in matvec(Tt, self.tau0)], self.C,
                       [ZERO] * len(self.C), self.JfT, matvec(self.JfT, f1))

    def torques(self, f):
        return [t - s for t, s in zip(self.tau0, matvec(self.T, f), strict=True)]


def _certified_optimum(qp, guesses):
    """(x, KKT violation) of the first guess the active-set method certifies."""
    for xg in guesses:
        try:
            x, W, y, lam = qp.solve(*qp.feasible_start(xg))
        except CertificateError:
            continue
        kkt = qp.kkt_violation(x, W, y, lam)
        if kkt <= KKT_TOL:
            return x, kkt
    raise CertificateError("no guess certified")


def _forces(res):
    """The result's forces in the QP layout [f_N; f_S; f_T]."""
    f = res.contact_forces_local
    return np.concatenate([f[:, 0], f[:, 1], f[:, 2]])


def certified_torques(problem):
    """The certified Stage II torques of ``problem`` and the number of contacts with zero
    Stage I force (pyramid apexes)."""
    guesses1 = [_forces(solve("qp_coulomb", problem, None, stage2=False, stage1_reg=reg))
                for reg in (1e-7, 1e-10)]
    guesses2 = [_forces(solve("qp_coulomb", problem, None, stage1_reg=reg))
                for reg in (1e-7, 1e-10)]
    with localcontext() as ctx:
        ctx.prec = PREC
        two = TwoStage(problem)
        f1, kkt1 = _certified_optimum(two.stage1(), guesses1)
        f2, kkt2 = _certified_optimum(two.stage2(f1), guesses2)
        assert max(kkt1, kkt2) <= KKT_TOL
        tau = np.array([float(t) for t in two.torques(f2)])
        fmax = max(abs(x) for x in f1) + ONE
        apex = sum(1 for i in range(problem.nc) if f1[i] <= KKT_TOL * fmax)
    return tau, apex


# --------------------------------------------------------------------------- states
@functools.cache
def _model(robot):
    return contact_setup(robot)


def _random_state(robot, seed, index):
    """State ``index`` of the seeded sequence of the compiled-tick tests (``tick_states``)."""
    m, _, q0 = _model(robot)
    return list(tick_states(m, q0, index + 1, np.random.default_rng(seed)))[index]


def _rest(robot, dz, seed=None, roll=0.0, base_v=None):
    """The standing pose shifted by ``dz`` [m] (rolled by ``roll`` [rad] about the base's x
    axis), at rest (v = 0; ``base_v``: the base's 6 velocities), qdd_des = 0 or, with a seed,
    ~N(0, 2)."""
    m, _, q0 = _model(robot)
    q = q0.copy()
    q[2] += dz
    if roll:  # q[3:7] = (x, y, z, w): left-multiply by a rotation about x
        x, y, z, w = q[3:7]
        c, s = np.cos(roll / 2), np.sin(roll / 2)
        q[3:7] = [c * x + s * w, c * y - s * z, c * z + s * y, c * w - s * x]
    qdd = (np.zeros(m.nv - 6) if seed is None
           else np.random.default_rng(seed).normal(0.0, 2.0, m.nv - 6))
    v = np.zeros(m.nv)
    if base_v is not None:
        v[:6] = base_v
    return q, v, qdd


G_DT2 = 9.81 * 1e-3 ** 2  # [m] the gap gravity closes within one 1 ms tick

#: name: (robot, state (q, v, qdd_des), excluded contact links, duplicated contact or None)
STATES = {
    # random states the proximal Stage I got wrong (torque errors 1e-2 ... 3e-2 relative)
    **{f"humanoid_random_{s}_{i}": ("humanoid", lambda s=s, i=i: _random_state("humanoid", s, i),
                                    (), None)
       for s, i in ((1, 22), (2, 20), (9, 29), (4, 35), (6, 7), (2, 14))},
    # symmetric stances at rest: touching (every non-penetration row holds with a zero
    # multiplier) and 1 mm inside
    "humanoid_rest_touching": ("humanoid", lambda: _rest("humanoid", 0.0), (), None),
    "humanoid_rest_inside": ("humanoid", lambda: _rest("humanoid", -0.001), (), None),
    # the gap gravity closes in one tick: non-penetration rows at their bound with zero force
    "humanoid_gap_closing": ("humanoid", lambda: _rest("humanoid", G_DT2), (), None),
    # every candidate 0.5 mm above the ground, inside the margin, moving up at 5 cm/s: all
    # pyramids at their apex (zero force, k + 1 rows through one point)
    "humanoid_hovering": ("humanoid", lambda: _rest("humanoid", 5e-4,
                                                    base_v=[0, 0, 0.05, 0, 0, 0]), (), None),
    # 1 mm inside, rolling at 0.5 rad/s: one sole lifts (its pyramids at the apex), the other
    # is pressed
    "humanoid_rolling": ("humanoid", lambda: _rest("humanoid", -0.001, seed=6,
                                                   base_v=[0, 0, 0, 0.5, 0, 0]), (), None),
    # one sole (the other foot swinging), desired accelerations
    "humanoid_one_sole": ("humanoid", lambda: _rest("humanoid", -0.001, seed=4),
                          ("r_foot_toe_left", "r_foot_toe_right", "r_foot_heel_left",
                           "r_foot_heel_right"), None),
    # the base rolled by 2 mrad: the corners 1 mm deep on one side, touching on the other
    "humanoid_rolled": ("humanoid", lambda: _rest("humanoid", -0.001, seed=5, roll=2e-3), (),
                        None),
    # a contact duplicated with rows perturbed by 1e-9 relative: rows dependent to 1e-9
    "humanoid_duplicate_contact": ("humanoid", lambda: _random_state("humanoid", 0, 3), (),
                                   1e-9),
    **{f"quadruped_random_{s}_{i}": ("quadruped",
                                     lambda s=s, i=i: _random_state("quadruped", s, i), (), None)
       for s, i in ((0, 1), (1, 4))},
    "quadruped_rest_touching": ("quadruped", lambda: _rest("quadruped", 0.0), (), None),
}


def _duplicate_contact(p, i, eps, seed):
    """``p`` with contact i repeated, its N, S, T rows perturbed by ``eps`` relative."""
    rng = np.random.default_rng(seed)

    def perturbed(a):
        return np.vstack([a, a[i] * (1.0 + eps * rng.normal(size=a.shape[1]))])
    return dataclasses.replace(
        p, N=perturbed(p.N), S=perturbed(p.S), T=perturbed(p.T), phi=np.r_[p.phi, p.phi[i]],
        mu=np.r_[p.mu, p.mu[i]], contact_ids=(*p.contact_ids, ("duplicate", i)),
        points=np.vstack([p.points, p.points[i]]),
        frames=np.concatenate([p.frames, p.frames[i:i + 1]]),
        weights=None if p.weights is None else np.r_[p.weights, p.weights[i]], validated=False)


@pytest.mark.parametrize("name", sorted(STATES))
def test_torques_equal_the_certified_optimum(name):
    robot, make, excluded, duplicate = STATES[name]
    _, cm, _ = _model(robot)
    q, v, qdd = make()
    cm.excluded_links = frozenset(excluded)
    try:
        p = cm.build(q, v, qdd)
        if duplicate is not None:
            p = _duplicate_contact(p, 0, duplicate, 0)
        tau_star, apex = certified_torques(p)
        scale = max(1.0, float(np.abs(tau_star).max()))
        res = solve("qp_coulomb", p, None)
        assert res.stats.info["stage1_exact"]
        err = float(np.abs(res.tau - tau_star).max()) / scale
        assert err <= TAU_TOL, (name, err)
        if name == "humanoid_hovering":  # (the degeneracies the states are here for)
            assert apex == p.nc
        if name == "humanoid_rolling":
            assert 0 < apex < p.nc
        if duplicate is None:  # the compiled tick: the same Stage I implementation
            tick = compiled_tick(cm, "qp_coulomb", {})
            assert tick.run(q, v, qdd, None)
            assert tick.nc == p.nc
            err_tick = float(np.abs(tick.out.tau - tau_star).max()) / scale
            assert err_tick <= TAU_TOL, (name, err_tick)
            np.testing.assert_allclose(tick.out.tau, res.tau, rtol=0, atol=1e-7 * scale)
    finally:
        cm.excluded_links = frozenset()
