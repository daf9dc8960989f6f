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

The method is one compiled kernel, :func:`noslip_solve_kernel` (``noslip_gap`` rows, warm start,
Alg. 1 + Alg. 2 and force retrieval by :func:`lcp_noslip_kernel` -- it and Alg. 1 / Alg. 2 are in
:mod:`wbc_dynamics.contact.noslip_kernels` --, the Sec. 4.5 correction, the minimum-norm
selection, status and flags), on named arrays (:class:`NoslipArrays`, :class:`NoslipSolveOptions`
-> :class:`NoslipSolution`). :func:`solve_lcp_noslip` validates the options, packs the
:class:`~wbc_dynamics.contact.problem.ContactProblem`, calls it and turns its status into the
:class:`~wbc_dynamics.contact.problem.ContactResult` (or the documented fallback); the
controller's compiled tick (:mod:`wbc_dynamics.contact.tick`) calls the same kernel after its
assembly. Runtime is linear in the number of contacts n for fixed m: O(m^3 + n m^2) set-up plus
O(n m + m^3) per pivot.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.arena import NO_ARENA
from ..kernels.leaf import leaf_kernel
from ..kernels.separate import call_separately
from .consistency import consistent_qdd_kernel, min_norm_solution_kernel
from .dispatch import (
    FLAG_CORRECTED,
    FLAG_MIN_NORM,
    FLAG_MIN_NORM_FAILED,
    FLAG_ROWS_DROPPED,
    FLAG_WARM_REJECTED,
    contact_arrays,
    fallback_result,
    flag_names,
)
from .noslip_kernels import STATUS, lcp_noslip_kernel, min_pivot
from .problem import ContactProblem, ContactResult, MethodState, SolverStats

__all__ = ["solve_lcp_noslip", "noslip_solve_kernel", "NoslipSolveOptions",
           "NoslipSolution", "NOSLIP_FLAGS", "SOLVED", "lcp_noslip_kernel", "min_pivot",
           "STATUS"]

#: the flags of :data:`NoslipSolution.bits`, in the order of ``stats.flags``
NOSLIP_FLAGS = ((FLAG_ROWS_DROPPED, "rows_dropped"), (FLAG_WARM_REJECTED, "warm_start_rejected"),
                (FLAG_CORRECTED, "inconsistent_corrected"), (FLAG_MIN_NORM, "min_norm"),
                (FLAG_MIN_NORM_FAILED, "min_norm_failed"))

# NoslipSolution.code: solved, or why the documented fallback applies
SOLVED = 0
_PIVOT_LIMIT = 1          # Alg. 2 hit max_iter
_NOT_PD = 2               # Alg. 1 failed: actuated block of M^-1 not positive definite
_INCONSISTENT = 3         # inconsistent desired accelerations, correct_inconsistent off
_CORRECTION_FAILED = 4    # the Sec. 4.5 correction QP failed
_INFEASIBLE = 5           # still violated after the correction
_NON_FINITE = 6           # a non-finite torque, impulse or velocity
_REASONS = {_PIVOT_LIMIT: "PPM pivot limit",
            _NOT_PD: "actuated block of Minv not positive definite",
            _INCONSISTENT: "inconsistent desired accelerations",
            _CORRECTION_FAILED: "correction QP failed",
            _INFEASIBLE: "inconsistent after correction",
            _NON_FINITE: "non-finite result"}


class NoslipSolveOptions(NamedTuple):
    """Options of :func:`noslip_solve_kernel` (those of :func:`solve_lcp_noslip`):
    ``noslip_gap`` [m] (< 0: None), ``max_iter`` (< 0: 4 nc + 20), ``rank_tol`` and ``tol``
    relative, ``consistency_tol`` [m/s], ``correct_inconsistent``, ``min_norm`` with
    ``min_norm_tol`` [m/s], ``min_pivot`` [1/kg] (Alg. 1's scale-aware floor,
    :func:`min_pivot`)."""

    noslip_gap: float
    max_iter: int
    rank_tol: float
    tol: float
    consistency_tol: float
    correct_inconsistent: bool
    min_norm: bool
    min_norm_tol: float
    min_pivot: float


class NoslipSolution(NamedTuple):
    """Result of :func:`noslip_solve_kernel`: ``code`` (:data:`SOLVED` or the reason of the
    documented fallback), ``bits`` (flags, :data:`NOSLIP_FLAGS`), ``iterations`` (Alg. 2
    pivots, the re-solve's included), ``warm_used``; ``tau`` (nu,) [N m]; impulses ``c_n``,
    ``c_s``, ``c_t`` (nc,) [N s] (contact frames); ``v_next`` (nv,); ``w`` (nc,) ``N v+ +
    phi/dt`` [m/s]; ``nonbasic`` (nc,) bool (the warm start of the next tick); ``violation``
    [m/s] of the contact constraints (Sec. 4.5); ``qdd_corrected`` (nu,) [rad/s^2] (valid with
    ``inconsistent_corrected``); ``min_norm_iterations``."""

    code: int
    bits: int
    iterations: int
    warm_used: bool
    tau: np.ndarray
    c_n: np.ndarray
    c_s: np.ndarray
    c_t: np.ndarray
    v_next: np.ndarray
    w: np.ndarray
    nonbasic: np.ndarray
    violation: float
    qdd_corrected: np.ndarray
    min_norm_iterations: int


@njit(cache=True)
def noslip_solve_kernel(p, warm, o, ar):
    """One ``lcp_noslip`` solve of the assembled problem ``p``
    (:class:`~wbc_dynamics.contact.dispatch.ContactArrays`; its ``S`` and ``T`` are modified in
    place: the ``noslip_gap`` rows) from the warm start ``warm`` (nc,) bool (Alg. 2's initial
    non-basic set, Sec. 4.6: the previous tick's, by contact identity) with options ``o``
    (:class:`NoslipSolveOptions`): the ``noslip_gap`` rows (eq. (34)), Alg. 1 +
    Alg. 2 + force retrieval (:func:`lcp_noslip_kernel`), the Sec. 4.5 correction of
    inconsistent accelerations and re-solve, the minimum-norm selection (weighted by
    ``p.weight``) and the checks of the result. Returns a :class:`NoslipSolution`; its arrays
    come from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`). The one implementation of
    the method: ``solve`` and the compiled tick both call it.
    """
    N, S, T, phi, dt = p.N, p.S, p.T, p.phi, p.dt
    nc, nv = N.shape
    nu = p.act.shape[0]
    if o.noslip_gap >= 0.0:  # eq. (34): no-slip rows only at touching candidates
        for i in range(nc):
            if phi[i] > o.noslip_gap:
                for c in range(nv):
                    S[i, c] = 0.0
                    T[i, c] = 0.0
    n_warm = 0
    for i in range(nc):
        if warm[i]:
            n_warm += 1
    max_iter = o.max_iter if o.max_iter >= 0 else 4 * nc + 20
    ctol = o.consistency_tol
    qdd_c = _ar.floats_zero(ar, nu)
    # ppm_rank_tol -1.0 (the default) passed explicitly: an omitted default argument would be
    # another compiled signature of the kernel
    res = call_separately(lcp_noslip_kernel, (p.Minv, p.h, p.v, p.act, p.qdd_des, N, S, T, phi,
                                              dt, warm, max_iter, o.rank_tol, o.tol, 0.0, ctol,
                                              -1.0, o.min_pivot, ar))
    tau, cN, cS, cT, v_next, w, nb, it, status, warm_used, ndrop, viol = res
    bits = 0
    if ndrop > 0:
        bits |= FLAG_ROWS_DROPPED
    if n_warm > 0 and not warm_used:
        bits |= FLAG_WARM_REJECTED
    code = SOLVED
    mn_it = 0
    if status == 1:
        code = _PIVOT_LIMIT
    elif status == 3:
        code = _NOT_PD
    elif status == 2 or viol > ctol:
        if not o.correct_inconsistent:
            code = _INCONSISTENT
        elif not call_separately(consistent_qdd_kernel, (p.Minv, p.h, p.v, p.act, p.qdd_des, N,
                                                         S, T, phi, dt, warm, max_iter,
                                                         o.rank_tol, o.tol, ctol, 1e-6,
                                                         o.min_pivot, qdd_c, ar)):
            code = _CORRECTION_FAILED
        else:
            res = call_separately(lcp_noslip_kernel, (p.Minv, p.h, p.v, p.act, qdd_c, N, S, T,
                                                      phi, dt, warm, max_iter, o.rank_tol,
                                                      o.tol, 0.0, ctol, -1.0, o.min_pivot, ar))
            # warm_used stays the first solve's (Sec. 4.6: the warm start of the tick)
            tau, cN, cS, cT, v_next, w, nb, it2, status, _wu, ndrop, viol = res
            it += it2
            bits |= FLAG_CORRECTED
            if status != 0 or viol > max(ctol, 1e-6):
                code = _INFEASIBLE
    if code == SOLVED and o.min_norm:
        mn = call_separately(min_norm_solution_kernel, (p.Minv, p.act, p.free, N, S, T, cN, cS,
                                                        cT, tau, v_next, w, p.weight,
                                                        o.min_norm_tol, dt, np.int64(50), ar))
        mn_it = mn[5]
        if mn[6]:
            cN, cS, cT, tau, v_next = mn[0], mn[1], mn[2], mn[3], mn[4]
            for i in range(nc):
                nb[i] = cN[i] > 0.0
            bits |= FLAG_MIN_NORM
        else:
            bits |= FLAG_MIN_NORM_FAILED
    if code == SOLVED:
        finite = True
        for a in range(nu):
            finite = finite and np.isfinite(tau[a])
        for c in range(nv):
            finite = finite and np.isfinite(v_next[c])
        for i in range(nc):
            finite = finite and np.isfinite(cN[i]) and np.isfinite(cS[i]) and np.isfinite(cT[i])
        if not finite:
            code = _NON_FINITE
    return NoslipSolution(code=code, bits=bits, iterations=it, warm_used=warm_used, tau=tau,
                          c_n=cN, c_s=cS, c_t=cT, v_next=v_next, w=w, nonbasic=nb, violation=viol,
                          qdd_corrected=qdd_c, min_norm_iterations=mn_it)


@leaf_kernel
def _complementarity_residual(z, w):
    """max(|z_i w_i|, -z_i, -w_i) over i."""
    r = 0.0
    for i in range(z.shape[0]):
        r = max(r, abs(z[i] * w[i]), -z[i], -w[i])
    return r


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
            all solutions with the same (unique) v+, weighted per contact by the problem's
            ``weights`` if it has them (``min_norm`` flag;
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
    if noslip_gap is not None and not np.isfinite(noslip_gap):
        raise ValueError(f"noslip_gap: must be finite or None, got {noslip_gap!r}")
    if max_iter is not None and not (isinstance(max_iter, int | np.integer) and max_iter >= 0):
        raise ValueError(f"max_iter: must be an int >= 0 or None, got {max_iter!r}")
    for name, val in (("rank_tol", rank_tol), ("tol", tol), ("consistency_tol", consistency_tol),
                      ("min_norm_tol", consistency_tol if min_norm_tol is None else min_norm_tol)):
        if not (np.isfinite(val) and val >= 0.0):
            raise ValueError(f"{name}: must be finite and >= 0, got {val!r}")
    S, T = problem.S, problem.T
    if noslip_gap is not None:  # the kernel zeroes the rows of separated candidates in place
        S, T = S.copy(), T.copy()
    warm = np.zeros(problem.nc, dtype=np.bool_)
    if warm_start and mstate.active_ids:
        warm[mstate.active_rows(problem.contact_ids)] = True
    options = NoslipSolveOptions(
        noslip_gap=-1.0 if noslip_gap is None else float(noslip_gap),
        max_iter=-1 if max_iter is None else int(max_iter), rank_tol=float(rank_tol),
        tol=float(tol), consistency_tol=float(consistency_tol),
        correct_inconsistent=bool(correct_inconsistent), min_norm=bool(min_norm),
        min_norm_tol=float(consistency_tol if min_norm_tol is None else min_norm_tol),
        min_pivot=min_pivot(problem, rank_mass_ratio))
    sol = noslip_solve_kernel(contact_arrays(problem, S, T), warm, options, NO_ARENA)
    if noslip_gap is not None:
        problem = dataclasses.replace(problem, S=S, T=T)
    if sol.code != SOLVED:
        res = fallback_result(problem, "lcp_noslip", mstate.data.get("tau"), _REASONS[sol.code])
        if sol.code == _PIVOT_LIMIT:
            res.stats.iterations = int(sol.iterations)
            res.stats.flags = (*res.stats.flags, "iteration_limit")
        elif sol.code == _INFEASIBLE:
            res.stats.flags = (*res.stats.flags, "inconsistent_corrected", "infeasible")
        return res
    stats = SolverStats(method="lcp_noslip", flags=flag_names(sol.bits, NOSLIP_FLAGS),
                        iterations=int(sol.iterations), warm_start_used=bool(sol.warm_used))
    consistent = not sol.bits & FLAG_CORRECTED
    if not consistent:
        stats.info["qdd_corrected"] = sol.qdd_corrected
    if min_norm:
        stats.info["min_norm_iterations"] = int(sol.min_norm_iterations)
    impulses = np.stack([sol.c_n, sol.c_s, sol.c_t], axis=1)
    stats.residual = max(float(sol.violation), _complementarity_residual(sol.c_n, sol.w))
    stats.info["nonbasic"] = tuple(cid for cid, f in zip(problem.contact_ids, sol.nonbasic,
                                                         strict=True) if f)
    mstate.contact_ids = tuple(problem.contact_ids)
    mstate.impulses = impulses.copy()
    mstate.active_ids = stats.info["nonbasic"]
    return ContactResult.from_impulses(problem, sol.tau, impulses, sol.v_next, stats, consistent)
