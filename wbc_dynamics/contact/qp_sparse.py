"""The lifted sparse formulation of ``qp_coulomb`` / ``qp_noslip`` (``formulation="sparse"``,
OSQP only): Stage I with the generalized free impulse ``u = J_f^T f`` as extra variables instead
of the dense ``J_f K_ff J_f^T`` (Zapolsky & Drumwright, Sec. 6.2.1, eqs. (97)-(99)), and Stage II
(eqs. (102)-(112)) on the same lifted variables, built and solved from Python after the compiled
:func:`~.qp_flow.qp_prepare`. The warm start of a new contact set maps the previous forces by
contact identity (:func:`_mapped_warm_start`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dispatch import fallback_result
from .lcp_coulomb import ReducedDynamics
from .problem import ContactProblem, ContactResult, MethodState, SolverStats
from .qp_kernels import _linear_term_varies, _project, linear_term_work_size
from .qp_osqp import _QPSolver, _settings
from .qp_records import (
    _ACCEPT,
    _INF,
    _MAX_ITER,
    _PRIMAL_INF,
    _PRIMAL_INF_INACC,
    _SOLVED,
    QPLayout,
    QPOptions,
    _status_name,
)


# --------------------------------------------------------------------------- lifted (sparse) form
def _sparse_stage1(problem: ContactProblem, lay: QPLayout, red: ReducedDynamics,
                   st: _QPSolver | None, settings: dict[str, Any], delta: float,
                   dlin: np.ndarray) -> tuple[_QPSolver, bool]:
    """Stage I with the generalized free impulse ``u = J_f^T f`` lifted as nf extra variables.

    Same QP as the reduced form: ``1/2 u^T K_ff u + ufree^T u / dt + delta/2 |f|^2`` subject to
    ``u = J_f^T f``, ``(J_N,f K_ff) u >= lbN`` and C f >= 0; every block is at most nf (= 6)
    wide, so the KKT system stays sparse and OSQP's cost grows linearly with the contacts.
    Returns (solver, setup_happened).
    """
    nc, m, dt = lay.nc, lay.m, float(problem.dt)
    nf = red.Jf.shape[1]
    n1 = m + nf
    P = np.zeros((n1, n1))
    P[np.arange(m), np.arange(m)] = delta
    P[m:, m:] = red.Kff
    qv = np.concatenate([dlin / dt, red.ufree / dt])
    C = lay.constraint_block(problem.mu)
    ncc = C.shape[0]
    A = np.zeros((nf + nc + ncc, n1))
    A[:nf, :m] = -red.Jf.T
    A[:nf, m:] = np.eye(nf)
    A[nf:nf + nc, m:] = red.Jf[:nc] @ red.Kff
    A[nf + nc:, :m] = C
    lo = np.concatenate([np.zeros(nf), (-problem.phi / dt - red.Jv0[:nc]) / dt, np.zeros(ncc)])
    up = np.concatenate([np.zeros(nf), np.full(nc + ncc, _INF)])
    if st is None:
        Pmask = np.zeros((n1, n1), dtype=bool)
        Pmask[np.arange(m), np.arange(m)] = True
        Pmask[m:, m:] = True
        Amask = np.zeros(A.shape, dtype=bool)
        Amask[:nf, :] = True
        Amask[nf:nf + nc, m:] = True
        Amask[nf + nc:, :m] = lay.constraint_mask()
        return _QPSolver(P, qv, A, Amask, lo, up, settings, Pmask=Pmask), True
    st.update(st.gather_p(P), qv, st.gather_a(A), lo, up)
    return st, False


def _sparse_stage2(problem: ContactProblem, lay: QPLayout, red: ReducedDynamics,
                   f0: np.ndarray, tau1: np.ndarray, st: _QPSolver | None,
                   settings: dict[str, Any], reg: float, Jfix: np.ndarray
                   ) -> tuple[_QPSolver, bool]:
    """Stage II in lifted form: the Stage I optimal set written as ``J_f^T f = J_f^T f0``
    (equivalent to ``f = f0 + W w``, ``W = ker J_f^T``) and the torque change ``t = J_a^T f``
    as nu extra variables: ``min 1/2 |tau(f0) + J_a^T f0 - t|^2 + reg/2 |f - f0|^2``."""
    m = lay.m
    Ja = red.J[:, problem.actuated]
    nu = Ja.shape[1]
    nf = Jfix.shape[1]
    n2 = m + nu
    P = np.zeros((n2, n2))
    P[np.arange(m), np.arange(m)] = reg
    P[np.arange(m, n2), np.arange(m, n2)] = 1.0
    b = tau1 + Ja.T @ f0
    qv = np.concatenate([-reg * f0, -b])
    C = lay.constraint_block(problem.mu)
    ncc = C.shape[0]
    A = np.zeros((nu + nf + ncc, n2))
    A[:nu, :m] = -Ja.T
    A[:nu, m:] = np.eye(nu)
    A[nu:nu + nf, :m] = Jfix.T
    A[nu + nf:, :m] = C
    jf0 = Jfix.T @ f0
    lo = np.concatenate([np.zeros(nu), jf0, np.zeros(ncc)])
    up = np.concatenate([np.zeros(nu), jf0, np.full(ncc, _INF)])
    if st is None:
        Pmask = np.eye(n2, dtype=bool)
        Amask = np.zeros(A.shape, dtype=bool)
        Amask[:nu + nf, :] = True
        Amask[:nu, m:] = np.eye(nu, dtype=bool)
        Amask[nu:nu + nf, m:] = False
        Amask[nu + nf:, :m] = lay.constraint_mask()
        return _QPSolver(P, qv, A, Amask, lo, up, settings, Pmask=Pmask), True
    st.update(st.gather_p(P), qv, st.gather_a(A), lo, up)
    return st, False


def _solve_two_stage_impl(problem: ContactProblem, red: ReducedDynamics, lin: np.ndarray,
                          delta: float, mstate: MethodState, method: str, coulomb: bool,
                          k: int, o: QPOptions, *, warm_start: bool, eps: float,
                          max_iter: int, polish: bool, stage2_eps: float | None,
                          stage1_objective: str, sticking_gap: float) -> ContactResult:
    """Both stages of the lifted sparse formulation by OSQP (:func:`_sparse_stage1`,
    :func:`_sparse_stage2`) on the reduced dynamics ``red`` of the corrected problem, with
    Stage I's linear term ``lin`` [m/s] and proximal weight ``delta`` (:func:`qp_prepare`)."""
    dt = float(problem.dt)
    ids = tuple(problem.contact_ids)
    key = (ids, k if coulomb else 0, "sparse", "osqp")
    data = mstate.data
    lay: QPLayout | None = data.get(f"{method}_layout")
    if lay is None or data.get(f"{method}_key") != key:
        lay = QPLayout.make(problem, coulomb, k)
    m = lay.m
    mu = problem.mu
    stats = SolverStats(method=method)
    info: dict[str, Any] = {"setup": False}
    dlin = lin - red.uf
    stage1_recenter, stage2 = o.recenter, o.stage2
    stage2_reg, rank_tol = o.stage2_reg, o.rank_tol

    # ---------------- Stage I (force units, c = dt f)
    # proximal term delta |f|^2 (option stage1_reg): picks the least-norm point of the Stage I
    # optimal set and keeps ADMM from drifting along its flat directions (free tangential
    # impulses of qp_noslip); it moves the optimum by O(delta |f|), far below eps.
    st1: _QPSolver | None = data.get(f"{method}_s1")
    reuse = st1 is not None and data.get(f"{method}_key") == key and warm_start
    st1, setup = _sparse_stage1(problem, lay, red, st1 if reuse else None,
                                _settings(eps, max_iter, warm_start, polish), delta, dlin)
    info["setup"] = setup
    if setup and warm_start:
        x0 = _mapped_warm_start(mstate, method, lay, ids)
        if x0 is not None:
            st1.warm_start(np.concatenate([x0, red.Jf.T @ x0]))
            stats.warm_start_used = True
    elif not setup:
        stats.warm_start_used = True
    s1, it1, x1 = st1.solve()
    if stage1_recenter and delta > 0.0 and x1 is not None and s1 == _SOLVED:
        # second proximal pass centred at the first solution (one proximal-point step): the
        # first pass minimizes obj + delta/2 |f|^2, which moves the optimum by O(delta |f|)
        # -- relative to Stage I objectives of ~1e-4 that is not negligible (measured:
        # 1.83e-4 vs 1.57e-4). Centred at f1 the KKT residual of the original problem is
        # delta |f2 - f1| = O(delta^2 |f| / curvature), while along the flat directions of the
        # optimal face f2 stays at f1 (continuity of the selected point across ticks).
        q2 = np.concatenate([dlin / dt, red.ufree / dt])
        q2[:m] -= delta * x1[:m]
        st1.update_q(q2)
        st1.warm_start(x1)
        s1b, it1b, x1b = st1.solve()
        it1 += it1b
        if x1b is not None and s1b == _SOLVED:  # else keep the converged first pass
            s1, x1 = s1b, x1b
    if x1 is not None:
        x1 = x1[:m]
    info["stage1_status"] = _status_name(s1)
    info["formulation"] = "sparse"
    stats.iterations = it1
    if x1 is None or s1 not in _ACCEPT:
        res = fallback_result(problem, method, data.get("tau"),
                              f"OSQP Stage I: {_status_name(s1)}")
        if s1 in (_PRIMAL_INF, _PRIMAL_INF_INACC):
            res.stats.add_flag("infeasible")
        if s1 == _MAX_ITER:
            res.stats.add_flag("iteration_limit")
        res.stats.iterations = it1
        res.stats.info.update(info)
        for name in ("s1", "s2", "key", "key2"):
            data.pop(f"{method}_{name}", None)
        return res
    if s1 != _SOLVED:
        stats.add_flag("iteration_limit")
    f0 = _project(x1, mu, k, coulomb)
    info["stage1_objective"] = float(0.5 * f0 @ red.H @ f0 + lin @ f0 / dt)
    data[f"{method}_s1"] = st1
    data[f"{method}_key"] = key
    data[f"{method}_layout"] = lay

    # ---------------- Stage II
    f = f0
    info["nullity"] = 0
    info["stage2_status"] = "skipped"
    if stage2:
        # Stage I's optimal set: J_f^T f fixed and, for the contact-velocity objective, also
        # its linear term where it varies along ker J_f^T (_linear_term_varies: not its
        # residue at touching contacts)
        m, nf = red.Jf.shape
        fix_lin = stage1_objective != "kinetic_energy" and _linear_term_varies(
            red.Jf, dlin, rank_tol, sticking_gap / dt, np.empty(linear_term_work_size(m, nf)),
            np.empty(m * m))[0]
        Jfix = np.column_stack([red.Jf, dlin]) if fix_lin else red.Jf
        f, it2 = _stage2(problem, mstate, method, lay, red, f0, key, warm_start,
                         eps if stage2_eps is None else stage2_eps, max_iter,
                         polish, stage2_reg, rank_tol, info, coulomb, k, Jfix)
        stats.iterations += it2
        if info["stage2_status"] not in ("solved", "skipped"):
            stats.add_flag("iteration_limit")

    # ---------------- recover tau, v+ (eqs. 90, 37) from the projected impulses
    c = dt * f
    tau, v_next, _ = red.recover(c)
    imp = lay.to_local(c)
    wN = problem.N @ v_next + problem.phi / dt
    viol = max(0.0, float(np.max(-wN)))
    info["noninterpenetration"] = viol
    stats.residual = viol
    if stage2 and info.get("nullity", 0) > 0:
        stats.add_flag("min_norm")
    stats.info = info
    mstate.contact_ids = ids
    mstate.impulses = imp
    mstate.active_ids = tuple(cid for i, cid in enumerate(ids) if c[i] > 0.0)
    data[f"{method}_f"] = (ids, lay, f)
    return ContactResult.from_impulses(problem, tau, imp, v_next, stats)


def _mapped_warm_start(mstate: MethodState, method: str, lay: QPLayout, ids: tuple
                       ) -> np.ndarray | None:
    """Primal warm start for a new contact set: previous forces matched by identity."""
    prev = mstate.data.get(f"{method}_f")
    if not prev:
        return None
    pids, play, pf = prev
    index = {cid: i for i, cid in enumerate(pids)}
    x = np.zeros(lay.m)
    found = False
    for i, cid in enumerate(ids):
        j = index.get(cid)
        if j is None:
            continue
        rows, prows = lay.rows_of_contact(i), play.rows_of_contact(j)
        if rows.shape == prows.shape:
            x[rows] = pf[prows]
            found = True
    return x if found else None


def _stage2(problem: ContactProblem, mstate: MethodState, method: str, lay: QPLayout,
            red: ReducedDynamics, f0: np.ndarray, key, warm_start: bool, eps: float,
            max_iter: int, polish: bool, reg: float, rank_tol: float, info: dict,
            coulomb: bool, k: int, Jfix: np.ndarray) -> tuple[np.ndarray, int]:
    """Minimum-norm torques on Stage I's optimal set (eqs. 102-112), lifted sparse form."""
    data = mstate.data
    mu = problem.mu
    tau1, _, _ = red.recover(problem.dt * f0)     # torques of the Stage I solution
    r = lay.m - (int(np.linalg.matrix_rank(Jfix, tol=rank_tol * max(
        1.0, float(np.abs(Jfix).max())))) if Jfix.shape[1] else 0)
    info["nullity"] = r
    if r == 0:
        info["stage2_status"] = "skipped"
        return f0, 0
    # the solver's pattern: J_fix has one more column where the linear term varies
    skey = (key, "sparse", Jfix.shape[1])
    st2 = data.get(f"{method}_s2")
    reuse = st2 is not None and data.get(f"{method}_key2") == skey and warm_start
    st2, setup = _sparse_stage2(problem, lay, red, f0, tau1, st2 if reuse else None,
                                _settings(eps, max_iter, warm_start, polish), reg, Jfix)
    if setup:
        info["setup2"] = True
    s2, it, x2 = st2.solve()
    if x2 is not None and s2 in _ACCEPT:
        f = _project(x2[:lay.m], mu, k, coulomb)
        info["stage2_status"] = "solved" if s2 == _SOLVED else _status_name(s2)
        data[f"{method}_s2"] = st2
        data[f"{method}_key2"] = skey
    else:
        f = f0
        info["stage2_status"] = f"failed: {_status_name(s2)}"
        data.pop(f"{method}_s2", None)
    return f, it
