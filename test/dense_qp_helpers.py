"""Random QPs and independent references for test/test_dense_qp.py and the benchmark."""

from __future__ import annotations

import clarabel
import numpy as np
import osqp
import scipy.sparse as sp


def random_pd(n: int, cond: float, rng: np.random.Generator) -> np.ndarray:
    """Symmetric positive definite with eigenvalues log-spaced over [1/cond, 1] (random basis)."""
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    ev = np.logspace(0.0, -np.log10(cond), n) if n > 1 else np.ones(1)
    P = (Q * ev) @ Q.T
    return 0.5 * (P + P.T)


def random_qp(n: int, m: int, rng: np.random.Generator, *, cond: float = 1e2,
              degenerate: bool = False, n_eq: int = 0, infeasible: str | None = None):
    """A random QP ``min 1/2 x^T P x + q^T x, l <= A x <= u``.

    Rows: lower-only, upper-only, two-sided (all around a feasible point ``xf``, about half of
    them tight at ``xf``) and ``n_eq`` equalities; ``q`` pulls the unconstrained minimizer far
    outside so that many rows are active. ``degenerate``: duplicated rows (same bounds),
    parallel rows (scaled, other bounds) and a redundant (consistent) equality. ``infeasible``:
    ``"sum"`` adds the row ``-sum(a_i)`` of a few lower-bounded rows with a bound that
    contradicts their sum; ``"eq"`` adds an inconsistent redundant equality; ``"box"`` a
    parallel pair with disjoint bounds.
    """
    P = random_pd(n, cond, rng)
    xf = rng.normal(size=n)
    A = rng.normal(size=(m, n)) * rng.uniform(0.1, 10.0, size=(m, 1))
    ax = A @ xf
    slack = np.where(rng.uniform(size=m) < 0.5, 0.0, rng.uniform(0.0, 1.0, m)) * (1 + np.abs(ax))
    kinds = rng.integers(0, 3, m)   # 0 lower, 1 upper, 2 two-sided
    l = np.where(kinds != 1, ax - slack, -np.inf)
    u = np.where(kinds != 0, ax + slack + (kinds == 2) * rng.uniform(0, 1, m), np.inf)
    if n_eq:
        E = rng.normal(size=(n_eq, n))
        A = np.vstack([A, E])
        l = np.concatenate([l, E @ xf])
        u = np.concatenate([u, E @ xf])
    if degenerate:
        i, j = rng.integers(0, A.shape[0], 2)
        A = np.vstack([A, A[i], 2.5 * A[j]])
        l = np.concatenate([l, [l[i], 2.5 * l[j] - 0.1 if np.isfinite(l[j]) else -np.inf]])
        u = np.concatenate([u, [u[i], 2.5 * u[j] + 0.2 if np.isfinite(u[j]) else np.inf]])
        # a redundant equality: a combination of two rows made equalities at xf
        E = rng.normal(size=(2, n))
        c = rng.normal(size=2)
        A = np.vstack([A, E, c @ E])
        b = np.concatenate([E @ xf, [c @ E @ xf]])
        l = np.concatenate([l, b])
        u = np.concatenate([u, b])
    if infeasible == "sum":
        idx = rng.choice(A.shape[0], size=min(3, A.shape[0]), replace=False)
        A[idx] = rng.normal(size=(idx.size, n))
        l[idx] = A[idx] @ xf
        u[idx] = np.inf
        A = np.vstack([A, -A[idx].sum(axis=0)])
        l = np.concatenate([l, [-l[idx].sum() + 0.1 * (1 + abs(l[idx].sum()))]])
        u = np.concatenate([u, [np.inf]])
    elif infeasible == "eq":
        E = rng.normal(size=(2, n))
        c = rng.normal(size=2)
        A = np.vstack([A, E, c @ E])
        b = np.concatenate([E @ xf, [c @ E @ xf + 0.1]])
        l = np.concatenate([l, b])
        u = np.concatenate([u, b])
    elif infeasible == "box":
        a = rng.normal(size=n)
        A = np.vstack([A, a, -2.0 * a])   # a x >= a xf + 0.5 and a x <= a xf + 0.4
        l = np.concatenate([l, [a @ xf + 0.5, -2.0 * (a @ xf + 0.4)]])
        u = np.concatenate([u, [np.inf, np.inf]])
    x_far = xf + 10.0 * rng.normal(size=n)
    q = -P @ x_far
    perm = rng.permutation(A.shape[0])
    return P, q, A[perm], l[perm], u[perm]


def clarabel_qp(P, q, A, l, u, tol: float = 1e-12):
    """(status, x) from Clarabel with tight tolerances (equalities as a zero cone,
    dependent equality rows reduced to an orthogonal basis)."""
    n = q.shape[0]
    eq = (l == u) & np.isfinite(l)
    lo = ~eq & np.isfinite(l)
    up = ~eq & np.isfinite(u)
    Ae, be = A[eq], l[eq]
    if be.size:
        U, sv, Vt = np.linalg.svd(Ae, full_matrices=False)
        r = int(np.sum(sv > 1e-12 * max(sv[0], 1e-300)))
        Ae, be = sv[:r, None] * Vt[:r], U[:, :r].T @ be
        # inconsistent equalities: the residual outside the range
        res = np.linalg.norm(l[eq] - U[:, :r] @ (U[:, :r].T @ l[eq]))
        if res > 1e-9 * (1 + np.abs(l[eq]).max()):
            return "PrimalInfeasible", None
    Ai = np.vstack([-A[lo], A[up]])
    bi = np.concatenate([-l[lo], u[up]])
    Ac = np.vstack([Ae.reshape(-1, n), Ai.reshape(-1, n)])
    b = np.concatenate([be, bi])
    cones = []
    if be.size:
        cones.append(clarabel.ZeroConeT(be.size))
    if bi.size:
        cones.append(clarabel.NonnegativeConeT(bi.size))
    status, x = None, None
    for t in (tol, 1e-10):
        s = clarabel.DefaultSettings()
        s.verbose = False
        s.tol_gap_abs = s.tol_gap_rel = s.tol_feas = t
        s.tol_ktratio = 1e-10
        s.max_iter = 500
        sol = clarabel.DefaultSolver(sp.csc_matrix(np.triu(P)), q, sp.csc_matrix(Ac), b, cones,
                                     s).solve()
        status = str(sol.status)
        if status == "Solved":
            return status, np.array(sol.x)
        if status == "AlmostSolved":
            x = np.array(sol.x)
        if "Infeasible" in status:
            return status, None
    return status, x


def osqp_qp(P, q, A, l, u, eps: float = 1e-10, max_iter: int = 200000, polish: bool = True,
            warm_x=None):
    """(status_val, iterations, x, y, solve time [s]) from OSQP (sparse data, as qp_osqp.py)."""
    s = osqp.OSQP()
    s.setup(sp.csc_matrix(np.triu(P)), q, sp.csc_matrix(A), np.maximum(l, -1e30),
            np.minimum(u, 1e30), verbose=False, eps_abs=eps, eps_rel=eps, max_iter=max_iter,
            polishing=polish, polish_refine_iter=10, eps_prim_inf=1e-9, eps_dual_inf=1e-9)
    if warm_x is not None:
        s.warm_start(x=warm_x)
    r = s.solve()
    return int(r.info.status_val), int(r.info.iter), np.array(r.x), np.array(r.y), r.info.solve_time


def kkt_residuals(P, q, A, l, u, x, y) -> dict[str, float]:
    """Scaled KKT residuals of (x, y) in OSQP's convention (P x + q + A^T y = 0)."""
    ax = A @ x
    grad = P @ x + q
    aty = A.T @ y
    s_st = max(1.0, np.abs(P @ x).max(), np.abs(q).max(), np.abs(aty).max())
    stat = np.abs(grad + aty).max() / s_st
    s_pr = max(1.0, np.abs(ax).max())
    prim = max(0.0, np.max(l - ax), np.max(ax - u)) / s_pr if A.shape[0] else 0.0
    # complementarity: y_i > 0 only at the upper bound, y_i < 0 only at the lower one
    comp = 0.0
    sign = 0.0
    for i in range(A.shape[0]):
        if y[i] > 0:
            if not np.isfinite(u[i]):
                sign = max(sign, y[i])
            else:
                comp = max(comp, y[i] * abs(u[i] - ax[i]))
        elif y[i] < 0:
            if not np.isfinite(l[i]):
                sign = max(sign, -y[i])
            else:
                comp = max(comp, -y[i] * abs(ax[i] - l[i]))
    s_c = max(1.0, np.abs(y).max() * s_pr)
    return {"stationarity": stat, "primal": prim, "complementarity": comp / s_c,
            "dual_sign": sign}


def polish(P, q, A, l, u, x, slack_tol: float):
    """The minimizer on the rows active at ``x`` (equalities, and rows within ``slack_tol``
    relative of a bound), from the KKT system by least squares (dependent rows allowed).
    Returns the polished point if it is a KKT point (feasible to 1e-11, multipliers of the
    right sign, relative to the scale), else ``None``."""
    ax = A @ x
    eq = (l == u) & np.isfinite(l)
    scale = 1.0 + np.abs(ax)
    lo = ~eq & np.isfinite(l) & (ax - l <= slack_tol * scale)
    up = ~eq & np.isfinite(u) & (u - ax <= slack_tol * scale) & ~lo
    rows = eq | lo | up
    b = np.where(up, u, l)[rows]
    Aa = A[rows]
    n, k = q.shape[0], Aa.shape[0]
    K = np.block([[P, Aa.T], [Aa, np.zeros((k, k))]])
    sol = np.linalg.lstsq(K, np.concatenate([-q, b]), rcond=1e-15)[0]
    xp, y = sol[:n], sol[n:]     # P x + q + Aa^T y = 0: y >= 0 on upper, <= 0 on lower rows
    axp = A @ xp
    viol = max(0.0, np.max(l - axp, initial=0.0), np.max(axp - u, initial=0.0))
    ys = y * np.where(up[rows], 1.0, np.where(lo[rows], -1.0, 0.0))
    ymax = max(1.0, np.abs(y).max(initial=0.0))
    if viol <= 1e-11 * max(1.0, np.abs(axp).max()) and np.min(ys, initial=0.0) >= -1e-11 * ymax:
        return xp
    return None


def reference(P, q, A, l, u):
    """(status, x): Clarabel at tight tolerances; when solved, its point polished on its own
    active set (:func:`polish`, slack thresholds 1e-9 ... 1e-1, the first KKT point wins; if
    none is, the same with OSQP's polished point; if that fails too, Clarabel's raw point):
    Clarabel's x is only accurate to ~sqrt(gap / lambda_min(P)) along the flat directions of
    an ill-conditioned P (1e-4 relative seen at cond 1e7; 3-12 % on the humanoid's Stage II at
    cond 2.5e9, whose active rows then lie 1e-2 ... 1e-1 relative from Clarabel's point). A
    wide threshold cannot admit a wrong reference: a polished point is returned only if it is
    a KKT point, the unique optimum of these strictly convex QPs."""
    status, x = clarabel_qp(P, q, A, l, u)
    if x is None:
        return status, x
    for name, x0 in (("clarabel", x), ("osqp", None)):
        if x0 is None:  # second chance: OSQP's polished point, polished on its active set
            x0 = osqp_qp(P, q, A, l, u)[2]
        for tol in (1e-9, 1e-7, 1e-5, 1e-3, 1e-2, 1e-1):
            xp = polish(P, q, A, l, u, x0, tol)
            if xp is not None:
                return f"{status}+polished({name})", xp
    return status, x


# ----------------------------------------------------------------------------- contact QPs
def contact_setup(robot: str):
    """(model, ContactModel, standing q) of a bundled floating-base robot on flat ground
    (mu 0.8, margin 5 mm, dt 1 ms; the contact links of its robot info)."""
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    m = RobotModel.from_urdf(robot_path(robot), floating_base=True)
    info = robot_info(robot)
    cm = ContactModel(m, contact_links=info["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3)
    return m, cm, np.array(info["standing_q"])


def random_states(m, q0, n: int, seed: int):
    """Standing with every contact point 1 mm inside the ground, velocities ~ N(0, 0.05),
    desired accelerations ~ N(0, 2) (independent states)."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = q0.copy()
        q[2] -= 0.001
        yield q, rng.normal(0.0, 0.05, m.nv), rng.normal(0.0, 2.0, m.nv - 6)


def tick_states(m, q0, n: int, rng: np.random.Generator):
    """Random states around the standing pose (the compiled-tick tests'): base height -2...+4
    mm, joints +-0.01 rad, velocities ~ N(0, 0.05) (every third ~ N(0, 0.3)), desired
    accelerations ~ N(0, 2) (every second ~ N(0, 30)), so that feet touch, separate and
    penetrate."""
    for k in range(n):
        q = q0.copy()
        q[2] += rng.uniform(-0.002, 0.004)
        q[7:] += rng.normal(0.0, 0.01, m.nv - 6)
        v = rng.normal(0.0, 0.05 if k % 3 else 0.3, m.nv)
        qdd = rng.normal(0.0, 2.0 if k % 2 else 30.0, m.nv - 6)
        yield q, v, qdd


def sway_states(m, q0, n: int, seed: int, dt: float = 1e-3):
    """A smooth sequence (consecutive control ticks): standing 1 mm inside the ground, joint
    velocities and desired accelerations sinusoids of 1-2 Hz (amplitudes 0.05 rad/s, 2 rad/s^2)
    with random phases."""
    rng = np.random.default_rng(seed)
    om = 2 * np.pi * rng.uniform(1.0, 2.0, m.nv)
    ph = rng.uniform(0, 2 * np.pi, m.nv)
    for k in range(n):
        q = q0.copy()
        q[2] -= 0.001
        s = np.sin(om * k * dt + ph)
        yield q, 0.05 * s, 2.0 * s[6:]


def contact_qps(robot: str, method: str = "qp_coulomb", states=None, **options
                ) -> list[list[tuple[str, tuple]]]:
    """The OSQP problems ``qp_coulomb`` / ``qp_noslip`` solve (Stage I first pass, Stage I recentred
    pass, Stage II; dense formulation) for each state ``(q, v, qdd_des)`` of ``states`` (default: 5
    :func:`random_states`), recorded at each OSQP solve through a recording ``OSQPSolver``. Cold
    (``warm_start=False``): every tick sets up its solvers, so each record holds the complete data
    as handed to OSQP (P symmetrized from the upper triangle OSQP reads). Returns per tick
    ``[(label, (P, q, A, l, u)), ...]``, labels ``stage1``, ``stage1_pass2``, ``stage2``.
    """
    from wbc_dynamics.contact import qp_osqp as qpmod  # where OSQPStages looks OSQPSolver up
    from wbc_dynamics.contact import solve

    tick: list[tuple[str, tuple]] = []

    class Recorder(qpmod.OSQPSolver):
        def __init__(self, n, p_ptr, p_idx, px, a_ptr, a_idx, ax, qv, lo, settings):
            super().__init__(n, p_ptr, p_idx, px, a_ptr, a_idx, ax, qv, lo, settings)
            Pu = sp.csc_matrix((np.array(px, float), p_idx, p_ptr), shape=(n, n)).toarray()
            A = sp.csc_matrix((np.array(ax, float), a_idx, a_ptr),
                              shape=(lo.shape[0], n)).toarray()
            self.data = [Pu + np.triu(Pu, 1).T, np.array(qv, float), A, np.array(lo, float),
                         np.full(lo.shape[0], np.inf)]
            self.label = "stage1" if not tick else "stage2"
            self.passes = 0

        def update_q(self, qv):
            super().update_q(qv)
            self.data[1] = np.array(qv, float)

        def solve(self):
            self.passes += 1
            tag = self.label + ("" if self.passes == 1 else f"_pass{self.passes}")
            tick.append((tag, tuple(a.copy() for a in self.data)))
            return super().solve()

    m, cm, q0 = contact_setup(robot)
    if states is None:
        states = random_states(m, q0, 5, 0)
    out = []
    orig = qpmod.OSQPSolver
    qpmod.OSQPSolver = Recorder
    try:
        for q, v, qdd in states:
            tick.clear()
            solve(method, cm.build(q, v, qdd), None, warm_start=False, formulation="dense",
                  **{"qp_solver": "osqp", **options})
            out.append(list(tick))
    finally:
        qpmod.OSQPSolver = orig
    return out
