"""``lcp_noslip``: inverse dynamics with no-slip contact constraints
(Zapolsky & Drumwright, Sec. 4).

Formulation (all matrices from :class:`~wbc_dynamics.contact.problem.ContactProblem`):

* MLCP eq. (42)/(43) with unknowns ``v+, tau, c_S, c_T`` (free) and ``c_N >= 0``.
* Algorithm 1 (Find-Indices) selects rows of ``G = [P; S; T]`` so that
  ``X = G M^-1 G^T`` is non-singular (the matrix A of eq. (42) is then invertible). It is run as an
  *incremental Cholesky factorization*: a candidate row is accepted iff the new pivot of the
  factorization is positive (relative tolerance ``rank_tol``); each test costs O(m^2) after
  ``M^-1 g`` (O(m^2)), so Alg. 1 is O(m^3 + n m^2) as in Sec. 4.4. Removing the dependent rows does
  not change the solution (Appendix E) when the desired accelerations are consistent.
* Eliminating the free variables (eqs. (44)-(45), Appendix C) gives the LCP
  ``w = N K N^T c_N + r``, ``0 <= c_N _|_ w >= 0`` with the projected inverse inertia
  ``K = M^-1 - M^-1 G^T X^-1 G M^-1`` (PSD, rank m - rank G) and
  ``r = N f~ + phi/dt``, ``f~ = f* + M^-1 G^T X^-1 (g - G f*)``, ``f* = v - dt M^-1 h``,
  ``g = [qdot_des; 0; 0]`` (eq. 39). This is Q = C^T A^-1 C of eq. (44) written with M^-1 only.
* Algorithm 2 (modified PPM I, Sec. 4.7 / Appendix D): the full ``N K N^T`` is never formed; each
  iteration factors only the non-basic block (at most rank(K) <= m rows, Appendix F) and computes
  ``w = N a + r`` in O(n m). Warm start (Sec. 4.6): the initial non-basic set is the previous
  tick's non-basic set, matched by contact identity, so the solver keeps applying force at the
  same contacts when the problem is indeterminate.
* Sec. 4.5: the solution is verified (``N v+ >= -phi/dt`` and ``S v+ = T v+ = 0`` for *all* rows,
  including those dropped by Alg. 1, and a solved LCP). If it fails, the desired accelerations are
  inconsistent; :mod:`wbc_dynamics.contact.consistency` computes the minimally deviating consistent
  accelerations (QP (46)-(51)) and the LCP is re-solved with them (flag
  ``"inconsistent_corrected"``, ``consistent=False``).

The hot path is a single numba kernel (:func:`lcp_noslip_kernel`; it and Alg. 1 / Alg. 2 are
in :mod:`wbc_dynamics.contact.noslip_kernels`). Runtime is linear in the number of contacts n
for fixed m: O(m^3 + n m^2) set-up plus O(n m + m^3) per pivot.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..kernels.leaf import leaf_kernel
from .consistency import consistent_accelerations, min_norm_impulses
from .dispatch import fallback_result
from .noslip_kernels import STATUS, lcp_noslip_kernel, min_pivot, run_on_problem
from .problem import ContactProblem, ContactResult, MethodState, SolverStats

__all__ = ["solve_lcp_noslip", "lcp_noslip_kernel", "min_pivot", "STATUS"]


@leaf_kernel
def _complementarity_residual(z, w):
    """max(|z_i w_i|, -z_i, -w_i) over i."""
    r = 0.0
    for i in range(z.shape[0]):
        r = max(r, abs(z[i] * w[i]), -z[i], -w[i])
    return r


def _run_kernel(
    p: ContactProblem,
    warm: np.ndarray,
    qdd_des: np.ndarray,
    max_iter: int,
    rank_tol: float,
    tol_rel: float,
    eps_p: float = 0.0,
    dep_tol: float = 1e-4,
    floor: float = 0.0,
):
    # ppm_rank_tol -1.0 (the default): passed explicitly so that this call and the Sec. 4.5
    # correction (consistency.consistent_accelerations) share one compiled signature (an
    # omitted default argument is a different numba signature -> compilation inside a tick)
    return run_on_problem(p, warm, qdd_des, max_iter, rank_tol, tol_rel, eps_p, dep_tol, -1.0,
                          floor)


def solve_lcp_noslip(
    problem: ContactProblem,
    mstate: MethodState,
    *,
    warm_start: bool = True,
    max_iter: int | None = None,
    rank_tol: float = 1e-6,
    rank_mass_ratio: float = 100.0,
    tol: float = 1e-10,
    consistency_tol: float = 1e-3,
    correct_inconsistent: bool = True,
    min_norm: bool = False,
    min_norm_tol: float | None = None,
    noslip_gap: float | None = None,
) -> ContactResult:
    """Solve one tick with the no-slip model of Sec. 4 (Alg. 1 + Alg. 2).

    Args:
        problem: validated problem with nc >= 1.
        mstate: warm-start memory (non-basic set as contact identities, previous impulses).
        warm_start: start Alg. 2 from the previous tick's non-basic set (Sec. 4.6).
        max_iter: pivot limit (default 4 n + 20); on hitting it the result is the flagged fallback.
        rank_tol: relative pivot tolerance of the incremental Cholesky tests (Alg. 1, Alg. 2):
            a row is independent if its squared sine to the span of the kept rows (M^-1 / K
            metric) exceeds it. 1e-6 (not machine precision): nearly dependent rows would yield
            huge impulses from tiny state inconsistencies (seen in closed loop with MuJoCo).
        rank_mass_ratio: the scale-aware rank test of Alg. 1: a no-slip row is also dependent if
            the effective mass of its direction, once the rows already kept are enforced,
            exceeds ``rank_mass_ratio * problem.total_mass`` (independent foot rows of a
            standing robot: ~0.2-0.5 times its mass; the nearly dependent rows of two feet at
            slightly different heights: 600-15000 times, i.e. impulses of ~1e5 m g from slips of
            mm/s). Such a row's violation is then checked by Sec. 4.5 like any dropped row.
            0 = the relative test alone (as does ``total_mass=None``).
        tol: relative tolerance for negative w / z in the pivoting rules (scaled by max |v|).
        consistency_tol: [m/s] tolerated violation of N v+ >= -phi/dt, S v+ = T v+ = 0 (Sec. 4.5).
            Continuous-time desired accelerations (``J a + Jdot v = 0`` at the feet) violate the
            first-order no-slip rows by ``dt |Jdot v|`` (~1e-5 m/s at 1 kHz), and measured states
            carry foot creep (~1e-4 m/s in MuJoCo); that is accepted (a slip / penetration of
            ``dt * consistency_tol`` per tick at most), not "corrected".
        correct_inconsistent: if the desired accelerations are inconsistent, solve the correction
            QP (46)-(51) and re-solve; otherwise return the flagged fallback.
        min_norm: resolve indeterminacy by the minimum-norm impulses ``|(c_N, c_S, c_T)|`` among
            all solutions with the same (unique) v+ (``min_norm`` flag;
            :func:`~wbc_dynamics.contact.consistency.min_norm_impulses`) instead of the pivoting
            solver's vertex solution. If that projection does not converge the vertex solution
            is returned, flagged ``min_norm_failed``.
        min_norm_tol: [m/s] contacts with ``w_i <= min_norm_tol`` count as touching in the
            min-norm selection (default: ``consistency_tol``, the accepted model mismatch; a
            smaller value makes forces jump when a contact's tiny separation velocity crosses
            it). Complementarity is then violated by at most ``z_i * min_norm_tol``.
        noslip_gap: [m] the no-slip rows ``S v+ = T v+ = 0`` are imposed only on contacts with
            ``phi <= noslip_gap`` -- eq. (34): the constraint applies to contacts touching at t;
            a separated candidate (phi > 0, e.g. a swing foot within the margin) carries only
            its normal row (35) and no friction (a foot hovering 1 mm above the ground cannot
            stick; demanding it stops a touching-down foot's horizontal velocity within one
            tick, 10^2-10^3 rad/s^2 of corrected accelerations). ``None`` (default, Sec. 4 as
            written): every candidate of the problem gets the no-slip rows. Recommended in
            closed loop: ``1e-6`` (rounding of a touching contact's distance; ``phi_deadband``
            reports exact zeros).

    Returns:
        ContactResult; ``stats.iterations`` = PPM pivots, ``stats.residual`` = max violation of the
        contact constraints and complementarity (m/s or N s).
    """
    nc = problem.nc
    if noslip_gap is not None:
        if not np.isfinite(noslip_gap):
            raise ValueError(f"noslip_gap: must be finite or None, got {noslip_gap!r}")
        sep = problem.phi > noslip_gap
        if np.any(sep):  # zero rows are dropped by Alg. 1's independence test
            S, T = problem.S.copy(), problem.T.copy()
            S[sep] = 0.0
            T[sep] = 0.0
            problem = dataclasses.replace(problem, S=S, T=T)
    if max_iter is None:
        max_iter = 4 * nc + 20
    warm = np.zeros(nc, dtype=np.bool_)
    n_warm = 0
    if warm_start and mstate.active_ids:
        rows = mstate.active_rows(problem.contact_ids)
        warm[rows] = True
        n_warm = len(rows)
    stats = SolverStats(method="lcp_noslip")
    floor = min_pivot(problem, rank_mass_ratio)
    out = _run_kernel(
        problem, warm, problem.qdd_des, max_iter, rank_tol, tol, dep_tol=consistency_tol,
        floor=floor
    )
    tau, cN, cS, cT, v_next, w, nb, it, status, warm_used, ndrop, viol = out
    stats.iterations = int(it)
    stats.warm_start_used = bool(warm_used)
    if ndrop > 0:
        stats.add_flag("rows_dropped")
    if n_warm and not warm_used:
        stats.add_flag("warm_start_rejected")
    consistent = True
    if status == 1:
        stats.add_flag("iteration_limit")
        res = fallback_result(problem, "lcp_noslip", mstate.data.get("tau"), "PPM pivot limit")
        res.stats.iterations = int(it)
        res.stats.flags = (*res.stats.flags, "iteration_limit")
        return res
    if status == 3:
        return fallback_result(
            problem,
            "lcp_noslip",
            mstate.data.get("tau"),
            "actuated block of Minv not positive definite",
        )
    if status == 2 or viol > consistency_tol:
        if not correct_inconsistent:
            return fallback_result(
                problem, "lcp_noslip", mstate.data.get("tau"), "inconsistent desired accelerations"
            )
        qdd_c, qp_ok = consistent_accelerations(
            problem,
            warm=warm,
            max_iter=max_iter,
            rank_tol=rank_tol,
            tol=tol,
            dep_tol=consistency_tol,
            rank_mass_ratio=rank_mass_ratio,
        )
        if not qp_ok:
            return fallback_result(
                problem, "lcp_noslip", mstate.data.get("tau"), "correction QP failed"
            )
        out = _run_kernel(problem, warm, qdd_c, max_iter, rank_tol, tol, dep_tol=consistency_tol,
                          floor=floor)
        tau, cN, cS, cT, v_next, w, nb, it2, status, warm_used, ndrop, viol = out
        stats.iterations += int(it2)
        stats.info["qdd_corrected"] = qdd_c
        stats.add_flag("inconsistent_corrected")
        consistent = False
        if status != 0 or viol > max(consistency_tol, 1e-6):
            stats.add_flag("infeasible")
            res = fallback_result(
                problem, "lcp_noslip", mstate.data.get("tau"), "inconsistent after correction"
            )
            res.stats.flags = (*res.stats.flags, "inconsistent_corrected", "infeasible")
            return res
    impulses = np.empty((nc, 3))
    impulses[:, 0] = cN
    impulses[:, 1] = cS
    impulses[:, 2] = cT
    if min_norm:
        mtol = consistency_tol if min_norm_tol is None else min_norm_tol
        impulses, tau, v_next, ok, mn_it = min_norm_impulses(
            problem, impulses, tau, v_next, w, tol=mtol
        )
        stats.info["min_norm_iterations"] = mn_it
        if ok:
            cN = impulses[:, 0]
            nb = cN > 0.0
            stats.add_flag("min_norm")
        else:
            stats.add_flag("min_norm_failed")
    stats.residual = max(float(viol), _complementarity_residual(cN, w))
    stats.info["nonbasic"] = tuple(cid for cid, f in zip(problem.contact_ids, nb, strict=True) if f)
    mstate.contact_ids = tuple(problem.contact_ids)
    mstate.impulses = impulses.copy()
    mstate.active_ids = stats.info["nonbasic"]
    return ContactResult.from_impulses(problem, tau, impulses, v_next, stats, consistent)
