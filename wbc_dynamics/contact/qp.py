"""``qp_coulomb`` and ``qp_noslip``: convex two-stage inverse dynamics
(Zapolsky & Drumwright, Sec. 6).

One compiled flow for the method: everything after the problem is assembled -- the corrections, the
reduced dynamics, Stage I, Stage II and the finish with its flag bits -- is compiled code on named
arrays of the assembled problem (:class:`~.dispatch.ContactArrays`), named options
(:class:`QPOptions`) and named buffers (:class:`QPWork`): :func:`qp_active_set` with the default
active-set solver; with OSQP its stages :func:`qp_prepare`, :func:`qp_stage2`, :func:`qp_finish`
around OSQP's solves (:class:`~.qp_osqp.OSQPStages`). The compiled tick (:mod:`.qp_tick`) assembles
the problem itself and runs this flow on views of its buffers; ``solve_qp_coulomb`` /
``solve_qp_noslip`` validate the options, pack the :class:`ContactProblem` into the same arrays,
run the same flow and map its status and flag bits to the result with one table
(:data:`QP_FLAG_NAMES`). The lifted sparse formulation (``formulation="sparse"``, OSQP only) is a
variant of its own: the compiled :func:`qp_prepare`, then its QPs built and solved from Python
(:func:`_solve_osqp_sparse`, :mod:`.qp_sparse`).

The method's modules, below this entry (:func:`solve_qp_coulomb`, :func:`solve_qp_noslip`:
option validation, packing, the result and its flags):

* :mod:`.qp_records` -- the flow's named records and constants: :class:`QPOptions`,
  :class:`QPWork` (+ its record), :class:`QPLayout`, the flag table;
* :mod:`.qp_kernels` -- the compiled building blocks of both QPs: constraint rows, Stage I / II
  data, the projection onto the cones, the exact Stage I finish (``stage1_active_set``);
* :mod:`.qp_flow` -- the compiled flow: :func:`qp_prepare`, :func:`qp_stage2`,
  :func:`qp_finish`, :func:`qp_active_set` (what the compiled tick runs too);
* :mod:`.qp_osqp` -- OSQP around the compiled stages (:class:`~.qp_osqp.OSQPStages`) and the
  solver wrapper of the lifted form;
* :mod:`.qp_sparse` -- the lifted sparse formulation, built and solved from Python.

Stage I (eqs. (69)-(74)): maximal kinetic-energy dissipation without normal complementarity::

    min 1/2 v+^T M v+   s.t.  N v+ >= -phi/dt (70),  c_N >= 0, beta >= 0 (71),
                              mu_i c_Ni >= 1^T beta_i (72),  v+ from eq. (37) (73),
                              P v+ = qdot_des (74)

solved in the *reduced form* of Secs. 6.2.1-6.2.2: the equality constraints (73)-(74) are removed
by substitution (``tau`` and the actuated part of ``v+`` eliminated, eqs. (88)-(94)), leaving a QP
in the contact impulses only. With the notation of :mod:`.lcp_coulomb`
(``J`` = rows of the contact variables, ``K_ff = (M_ff)^-1`` computed from ``M^-1`` only,
``v+_f = v0_f + K_ff J_f^T c``) the objective (97)-(98) is::

    1/2 c^T (Z^T A Z) c + c^T (Z^T A p + Z^T B v+_q),   Z^T A Z = J_f K_ff J_f^T,
    Z^T A p + Z^T B v+_q = J_f (f*_f - M^-1_fa G^-1 f*_a)

(``A = M_ff`` and ``B = M_fa`` of eq. (83) are never formed: ``A^-1 = K_ff`` and
``A^-1 B = -M^-1_fa G^-1`` follow from block inversion of ``M^-1``). Constraint (99) is
``J_N v0 + H_N c >= -phi/dt``. Torques follow from eq. (90) and ``v+`` from eq. (37).

Stage II (eqs. (102)-(112)): among all Stage I optima, the minimum-norm torques. The Stage I
objective depends on ``c`` only through ``Z c`` (``A`` is positive definite), so the optimal set is
``{z0 + W w feasible}`` with ``W`` an orthonormal basis of ``ker(Z^T A Z) = ker(J_f^T)``
(computed by a column-pivoted Householder QR of ``J_f``); on it ``Z W = 0``, so ``v+`` and
constraints (108)-(109) are unchanged (the paper's remark after eq. (111)) and
``tau(z0 + W w) = tau(z0) - J_a^T W w`` (eq. (105) simplified with ``J_f^T W = 0``). Stage II
is therefore the QP (107), (110), (111)::

    min_w 1/2 |tau(z0) - J_a^T W w|^2 + delta/2 |w|^2
    s.t.  (z0 + W w)_N >= 0,   (z0 + W w) inside the friction pyramid

``delta`` (option ``stage2_reg``, default 1e-9 relative to the largest diagonal entry) only makes
the *impulses* unique (minimum distance to the Stage I impulses); the torques of the Stage II
optimum are unique anyway (minimum-norm point of a convex set).

Friction pyramid representation: the paper writes (72)/(101)/(111) with k non-negative edge
variables per contact (V-representation, ``mu f_N >= 1^T beta``). Here the *same* pyramid is
written with the contact-frame components ``(f_N, f_S, f_T)`` as variables and its k facets as
linear inequalities (H-representation: ``cos(th_j) f_S + sin(th_j) f_T <= mu cos(pi/k) f_N``,
``th_j = (2j+1) pi / k``), i.e. exactly the set ``{sum_j beta_j d_j : beta >= 0, 1^T beta <=
mu f_N}`` spanned by the edges ``d_j`` of :meth:`ContactProblem.pyramid`. The feasible contact
forces, and hence the optimal ``v+`` and torques, are identical; the facet form avoids the
``k - 2`` redundant edge directions per contact that make the Stage II Hessian singular (opposite
edges that cancel) and roughly halves the number of variables (``3 nc`` instead of ``(1+k) nc``),
which makes OSQP converge several times faster in Stage II.

Solver (option ``qp_solver``, :data:`QP_SOLVERS`). ``"active_set"`` (default): both QPs of the
dense reduced form are solved *exactly* (to rounding, relative feasibility 1e-11) by the compiled
Goldfarb-Idnani dual active-set method of :mod:`.dense_qp`, in force units, warm-started with the
previous tick's active row sides mapped by contact identity (each contact owns its rows:
non-penetration, ``f_N >= 0``, its k facets); a correct guess needs no iteration. The method needs
a strictly convex QP: Stage I is solved with its proximal term and then finished exactly on its
own, only semidefinite Hessian (:func:`~.qp_kernels.stage1_active_set`), Stage II is strictly
convex by ``stage2_reg``; their degenerate vertices (k + 1 rows through the apex of a contact's
pyramid) are handled by the solver's dependence test, and Stage II drops rows of rounding size
(``qp_kernels._stage2_data``). OSQP, the solver before it, stopped at its iteration limit on 24-39
% of talos's ``qp_coulomb`` ticks (docs/contact_methods.md). ``"osqp"``: both QPs solved with OSQP
in *force* units (``c = dt f``), warm-started from the previous tick: the OSQP solver objects are
kept in the method state and their matrices updated in place (``update_data_mat`` with the same
sparsity pattern, dense blocks stored with explicit zeros) while the contact set (identities,
order, k) is unchanged; when it changes, the solver is set up again and warm-started with the
previous forces mapped by contact identity. After each solve the impulses are projected onto ``f_N
>= 0`` and the pyramid (clip / radial scaling, a correction of the order of the solver tolerance),
and ``tau``, ``v+`` are recomputed from the projected impulses, so eqs. (37) and (38) hold to
rounding error and the pyramid holds exactly.

Formulation (option ``formulation``): ``"dense"`` is the reduced form above (dense
``J_f K_ff J_f^T`` Hessian, dense ``W``), fastest for a few contacts. ``"sparse"`` solves the same
two QPs with the generalized free impulse ``u = J_f^T f`` (nf extra variables, Hessian ``K_ff``)
and, in Stage II, the torque change ``t = J_a^T f`` (nu extra variables) lifted, and Stage II's
optimal set written as ``J_f^T f = J_f^T f0`` (equivalent to ``f0 + W w``): every block is at most
max(nf, nu) wide, so OSQP's KKT factorization stays sparse and the cost grows linearly with the
number of contacts. ``"auto"`` (default) uses dense for ``nc <= sparse_above`` (8).

Stage I adds a tiny proximal term ``delta/2 |f|^2`` (option ``stage1_reg``, default 1e-7 relative
to max diag H): without it the Stage I optimum is a whole face (indeterminacy) and ADMM drifts
along the flat directions (unbounded for the free tangential impulses of ``qp_noslip``); with it
Stage I returns (to O(delta)) the least-norm point of that face, continuous in the data. The
proximal minimizer is not the optimum, though: its objective lies O(delta) above it and, where the
optimal face is thin (directions of curvature comparable to delta), its ``J_f^T f`` is off by far
more than delta |f|; Stage II, whose set ``J_f^T f = J_f^T f0`` depends on that value, then
minimizes over another face (measured on random humanoid states: Stage I up to 4e-7 relative above
the optimum, torques off by up to 3 % of their largest). The active-set solver therefore finishes
Stage I exactly (:func:`stage1_active_set`: a primal active-set method on the unregularized Hessian
from the proximal minimizer, :func:`~wbc_dynamics.contact.dense_qp.psd_finish_kernel`); the torques
then equal those of the optimum certified in extended precision (``test/test_qp_certified.py``). It
does so for the kinetic-energy objective, which is constant along the flat directions (its linear
term lies in the range of ``J_f``). The contact-velocity objective varies along them (the internal
forces), where its exact optimum is a vertex of that linear term, discontinuous in the data (in the
quadruped's closed-loop trot, ``test/test_sim_coulomb_tracking.py``, it predicted single-tick
normal-force spikes of 3.8 m g): its Stage I stays the proximal minimizer, re-centred once (option
``stage1_recenter``), as with OSQP, whose tolerance (``eps``) is the larger error there.

Model note (measured, see docs/contact_methods.md): the Stage I objective (69) is the kinetic
energy of the whole mechanism with the actuated velocities prescribed. When ``qdot_des != 0`` its
gradient w.r.t. the impulses is not the contact velocity (it contains ``-J_f M^-1_fa G^-1
qdot_des`` instead of ``J_a qdot_des``), so the contacts are used to drive the free dofs towards
the kinetic-energy minimizing velocity *within one tick* (impulsive, only limited by friction and
``N v+ >= -phi/dt``). For ``v = 0, qdd_des = 0`` (and whenever ``qdot_des = 0``) the KKT
conditions coincide with those of the LCP (64) without normal complementarity.

``qp_noslip`` is the same with unbounded friction: variables ``[c_N >= 0, c_S, c_T]`` (free), no
pyramid rows (the no-slip variant of the convex model, cf. Sec. 2.3.4 and ID(t_i)_QP,inf of
Sec. 8).

Statistics: ``iterations`` = OSQP iterations of Stage I + Stage II; ``residual`` = max violation
of (70)-(72) at the returned impulses [m/s or N s]; ``info``: ``stage1_status``,
``stage2_status``, ``nullity`` (dim W), ``setup`` (True if an OSQP setup happened),
``noninterpenetration``, ``stage1_objective``; with the active-set solver ``stage1_exact`` (the
Stage I result is the exact optimum, False: the proximal minimizer).

Infeasible Stage I with the active-set solver (it proves it; e.g. the held arm + box grasp,
whose prescribed finger motion the box cannot follow within friction): the tick is solved with
OSQP instead (``info["active_set_stage1"]`` names the status), whose iterate at its limit is the
compromise the grasp loops were tuned with; the compiled tick leaves such a tick to ``solve``.

Fallback: a Stage I failure (infeasible, non-convex, or no finite iterate) returns
:func:`~wbc_dynamics.contact.dispatch.fallback_result` flagged ``fallback`` (``infeasible`` if the
solver reported infeasibility, ``iteration_limit`` if it ran out of iterations without a usable
iterate). An iteration limit with a finite iterate is accepted (projected) and flagged
``iteration_limit``. A Stage II failure keeps the Stage I solution (flag ``iteration_limit``,
``info["stage2_status"]``); with the active-set solver only a solved Stage II is used (its
iteration-limited iterate is dual, not primal, feasible)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from . import qp_records as _rec
from .dispatch import ContactArrays, contact_arrays, fallback_result
from .lcp_coulomb import ReducedDynamics
from .noslip_kernels import min_pivot
from .problem import ContactProblem, ContactResult, MethodState, SolverStats
from .qp_flow import qp_active_set, qp_finish, qp_prepare, qp_stage2
from .qp_kernels import recenter_q
from .qp_osqp import OSQPStages, _settings, osqp_stage1_patterns

# Re-exported: the flow's public records, and the classes that on-disk kernel cache indexes
# written before the records moved to .qp_records name by this module's path (numba unpickles an
# index before it compares the index's source stamp: the names must resolve for a stale index
# to be skipped instead of failing the kernel's load).
from .qp_records import (
    QP_FLAG_NAMES,
    QP_SOLVERS,
    STAGE1_OBJECTIVES,
    QPArrays,  # noqa: F401 - the flow's former record: a name stale cache indexes hold
    QPLayout,
    QPOptions,
    QPWork,
    QPWorkRecord,
    QPWorkRecordType,
    new_qp_work,
)
from .qp_sparse import _solve_two_stage_impl
from .tick_base import TICK_GENERIC, TICK_OK

__all__ = ["solve_qp_coulomb", "solve_qp_noslip", "warmup", "QPLayout", "STAGE1_OBJECTIVES",
           "QP_SOLVERS", "QPOptions", "QPWork", "QPWorkRecord", "QPWorkRecordType",
           "QP_FLAG_NAMES", "qp_prepare", "qp_stage2", "qp_finish", "qp_active_set",
           "new_qp_work"]


# --------------------------------------------------------------------------- the method
def _solve_two_stage(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                     *, friction_edges: int | None = None, stage2: bool = True,
                     warm_start: bool = True, eps: float = 1e-7, max_iter: int = 1500,
                     polish: bool = False, stage2_reg: float = 1e-9,
                     rank_tol: float = 1e-9, stage1_reg: float = 1e-7,
                     stage2_eps: float | None = None, formulation: str = "auto",
                     sparse_above: int = 8, stage1_objective: str = "kinetic_energy",
                     stage1_recenter: bool = True, sticking_correction: bool = False,
                     sticking_gap: float = 1e-6, friction_gap: float | None = None,
                     rank_mass_ratio: float = 0.0, qp_solver: str = "active_set",
                     **_unused: Any) -> ContactResult:
    """Validate the options (those of another method, in ``_unused``, are ignored), then the
    compiled flow (``qp_solver="active_set"``, :func:`qp_active_set`) or the OSQP variants
    (:func:`_solve_osqp_dense`, :func:`_solve_osqp_sparse`)."""
    if qp_solver not in QP_SOLVERS:
        raise ValueError(f"{method}: qp_solver must be one of {QP_SOLVERS}, got {qp_solver!r}")
    if qp_solver == "active_set" and formulation == "sparse":
        raise ValueError(f"{method}: formulation 'sparse' needs qp_solver 'osqp' (the active-set "
                         "solver works on the dense reduced form)")
    if stage1_objective not in STAGE1_OBJECTIVES:
        raise ValueError(f"{method}: stage1_objective must be one of {STAGE1_OBJECTIVES}, "
                         f"got {stage1_objective!r}")
    if formulation not in ("auto", "dense", "sparse"):
        raise ValueError(f"{method}: formulation must be 'auto', 'dense' or 'sparse', "
                         f"got {formulation!r}")
    if friction_gap is not None and not np.isfinite(friction_gap):
        raise ValueError(f"{method}: friction gap must be finite or None, got {friction_gap!r}")
    k = int(problem.friction_edges if friction_edges is None else friction_edges)
    if coulomb and (k < 4 or k % 2):
        raise ValueError(f"{method}: friction_edges must be even and >= 4, got {k}")
    kk = k if coulomb else 4
    flow = dict(stage2=stage2, max_iter=max_iter, stage2_reg=stage2_reg, rank_tol=rank_tol,
                stage1_reg=stage1_reg, stage1_objective=stage1_objective,
                stage1_recenter=stage1_recenter, sticking_correction=sticking_correction,
                sticking_gap=sticking_gap, friction_gap=friction_gap,
                rank_mass_ratio=rank_mass_ratio)

    def osqp_dense() -> ContactResult:
        o = _flow_options(problem, coulomb, kk, False, **flow)
        return _solve_osqp_dense(problem, mstate, method, coulomb, kk, o, warm_start,
                                 _settings(eps, max_iter, warm_start, polish),
                                 _settings(eps if stage2_eps is None else stage2_eps,
                                           max_iter, warm_start, polish))

    if qp_solver == "active_set":
        return _solve_active_set(problem, mstate, method, coulomb, kk,
                                 _flow_options(problem, coulomb, kk, True, **flow), warm_start,
                                 osqp_dense)
    if formulation == "dense" or (formulation == "auto" and problem.nc <= sparse_above):
        return osqp_dense()
    return _solve_osqp_sparse(problem, mstate, method, coulomb, kk,
                              _flow_options(problem, coulomb, kk, False, **flow), warm_start,
                              eps=eps, max_iter=max_iter, polish=polish, stage2_eps=stage2_eps,
                              stage1_objective=stage1_objective, sticking_gap=sticking_gap)


def _solve_osqp_sparse(problem: ContactProblem, mstate: MethodState, method: str,
                       coulomb: bool, k: int, o: QPOptions, warm_start: bool, *, eps: float,
                       max_iter: int, polish: bool, stage2_eps: float | None,
                       stage1_objective: str, sticking_gap: float) -> ContactResult:
    """The lifted sparse formulation (``formulation="sparse"``, OSQP; module doc), a variant of
    its own: the compiled corrections and reduced dynamics (:func:`qp_prepare`), then the
    lifted QPs (:func:`_sparse_stage1`, :func:`_sparse_stage2`) set up and solved from Python
    (OSQP solvers kept per contact set)."""
    nc, m = problem.nc, 3 * problem.nc
    fs, slots = _FlowState.of(mstate.data, method, problem, k, coulomb, False)
    w = fs.w
    if qp_prepare(_problem_arrays(problem, slots), o, fs.rec, False, False)[0] != TICK_OK:
        raise np.linalg.LinAlgError(f"{method}: P M^-1 P^T is singular")
    bits = int(w.state[_rec._S_BITS])
    # the problem solved for: the corrected accelerations (its fallback torques), the rows of
    # the friction gap and the rank rule zeroed
    solved = dataclasses.replace(problem, qdd_des=w.qdd.copy(), N=w.J[:nc].copy(),
                                 S=w.J[nc:2 * nc].copy(), T=w.J[2 * nc:m].copy())
    red = ReducedDynamics(solved, w.J[:m].copy(), w.L.copy(), w.tau0.copy(), w.fstar.copy(),
                          w.v0.copy(), w.Kff.copy(), w.Jf[:m].copy(),
                          w.H[:m * m].reshape(m, m).copy(), w.Jv0[:m].copy(),
                          w.uf[:m].copy(), w.ufree.copy())
    res = _solve_two_stage_impl(solved, red, w.lin[:m].copy(), float(w.fstate[0]), mstate,
                                method, coulomb, k, o, warm_start=warm_start, eps=eps,
                                max_iter=max_iter, polish=polish, stage2_eps=stage2_eps,
                                stage1_objective=stage1_objective, sticking_gap=sticking_gap)
    for name in _rec.flag_names(bits & ~(_rec._ITER_LIMIT | _rec._MIN_NORM)):
        res.stats.add_flag(name)
    if bits & _rec._ROWS_DROPPED:
        res.stats.info["rows_dropped"] = int(w.dropped[:nc].sum())
    # the zeroed rows make those impulses inert; reported as exactly zero so that eq. (37)
    # holds for the original rows too
    imp = res.impulses.copy()
    imp[w.sep[:nc], 1:] = 0.0
    imp[:, 1:][w.dropped[:nc]] = 0.0
    res = ContactResult.from_impulses(problem, res.tau, imp, res.v_next, res.stats)
    if bits & _rec._CORRECTED:
        _mark_corrected(res, problem, w.qdd)
    return res


class _FlowState:
    """The compiled flow's buffers kept in ``solve``'s method state: the :class:`QPWork`
    (its record for the kernels), the warm-start slot of each contact identity seen and, for
    the OSQP variant, Stage I's patterns (``pat1``) and its solvers (``osqp``)."""

    def __init__(self, dims: tuple, cap: int, nslot: int, old: _FlowState | None) -> None:
        nv, nu, nf, k, coulomb, active_set = dims
        self.dims, self.cap = dims, cap
        pats, self.pat1 = (None, {}) if active_set else osqp_stage1_patterns(cap, cap, k,
                                                                               coulomb)
        self.w = new_qp_work(cap, nv, nu, nf, nslot, k, coulomb, active_set, pats)
        self.rec = _rec.qp_work_record(self.w)
        self.osqp: OSQPStages | None = None
        self.slot_of: dict = {}
        if old is not None and old.dims == dims:  # keep the active sets known by slot
            self.slot_of = old.slot_of
            n = old.w.act_known.shape[0]
            for name in ("prev_act1", "prev_act2", "act_known"):
                getattr(self.w, name)[:n] = getattr(old.w, name)

    @classmethod
    def of(cls, data: dict, method: str, problem: ContactProblem, k: int, coulomb: bool,
           active_set: bool) -> tuple[_FlowState, np.ndarray]:
        """The state of ``data`` fitting ``problem`` (grown or made anew) and the problem's
        contact slots."""
        dims = (problem.nv, problem.nu, problem.nv - problem.nu, k, coulomb, active_set)
        name = f"{method}_flow" if active_set else f"{method}_flow_osqp"
        fs: _FlowState | None = data.get(name)
        ids = problem.contact_ids
        known = fs.slot_of if fs is not None and fs.dims == dims else {}
        nslot = len(known) + sum(cid not in known for cid in set(ids))
        if (fs is None or fs.dims != dims or fs.cap < problem.nc
                or fs.w.prev_known.shape[0] < nslot):
            cap = max(problem.nc, fs.cap if fs is not None else 0)
            fs = data[name] = cls(dims, cap, max(2 * nslot, 8), fs)
        slots = np.empty(problem.nc, dtype=np.int64)
        for i, cid in enumerate(ids):
            slots[i] = fs.slot_of.setdefault(cid, len(fs.slot_of))
        return fs, slots


def _flow_options(problem: ContactProblem, coulomb: bool, k: int, active_set: bool, *,
                  stage2: bool, max_iter: int, stage2_reg: float, rank_tol: float,
                  stage1_reg: float, stage1_objective: str, stage1_recenter: bool,
                  sticking_correction: bool, sticking_gap: float, friction_gap: float | None,
                  rank_mass_ratio: float) -> QPOptions:
    """The :class:`QPOptions` of ``solve``'s keyword options on ``problem`` (the contact
    model's entries are the compiled tick's; unused here)."""
    return QPOptions(
        margin=0.0, phi_deadband=0.0, passive_impact=False, separation_tolerance=0.0,
        dt=float(problem.dt), coulomb=coulomb, k=k,
        sticking_correction=bool(sticking_correction), sticking_gap=float(sticking_gap),
        min_pivot=min_pivot(problem, 100.0),
        friction_gap=_rec._INF if friction_gap is None else float(friction_gap),
        tangential_floor=0.0 if coulomb else min_pivot(problem, rank_mass_ratio),
        contact_velocity=stage1_objective == "contact_velocity",
        stage1_reg=float(stage1_reg), stage2=bool(stage2), stage2_reg=float(stage2_reg),
        rank_tol=float(rank_tol), max_nc=problem.nc, active_set=active_set,
        recenter=bool(stage1_recenter), max_iter=int(max_iter), qp_tol=_rec.ACTIVE_SET_TOL,
        qp_dep_tol=_rec.ACTIVE_SET_DEP_TOL)


def _problem_arrays(problem: ContactProblem, slots: np.ndarray) -> ContactArrays:
    """The :class:`~.dispatch.ContactArrays` of the validated ``problem`` with the warm-start
    ``slots`` (S and T copied: the flow zeroes rows of them)."""
    return contact_arrays(problem, problem.S.copy(), problem.T.copy(), slots)


def _flow_fallback(problem: ContactProblem, data: dict, method: str, reason: str, status: int,
                   bits: int, iterations: int, info: dict, w: QPWork) -> ContactResult:
    """The documented fallback of a Stage I failure (``status``) or a non-finite result."""
    res = fallback_result(problem, method, data.get("tau"), reason)
    for name in _rec.fallback_flag_names(status, bits):
        res.stats.add_flag(name)
    res.stats.iterations = iterations
    res.stats.info.update(info)
    if bits & _rec._CORRECTED:
        _mark_corrected(res, problem, w.qdd)
    return res


def _flow_result(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                 k: int, w: QPWork, bits: int, stats: SolverStats, info: dict
                 ) -> ContactResult:
    """The result of a solved flow (``w``): torques, impulses with the inert rows zeroed,
    v+, statistics; the method state for the next solve."""
    nc, m = problem.nc, 3 * problem.nc
    f0, f = w.f0[:m], w.f[:m]
    H = w.H[:m * m].reshape(m, m)
    info["stage1_objective"] = float(0.5 * f0 @ H @ f0 + w.lin[:m] @ f0 / problem.dt)
    tau, v_next = w.tau1.copy(), w.vnext.copy()
    N = w.J[:nc]  # the normal rows (never zeroed)
    viol = max(0.0, float(np.max(-(N @ v_next + problem.phi / problem.dt))))
    info["noninterpenetration"] = viol
    stats.residual = viol
    if bits & _rec._ROWS_DROPPED:
        info["rows_dropped"] = int(w.dropped[:nc].sum())
    stats.info = info
    ids = tuple(problem.contact_ids)
    mstate.contact_ids = ids
    mstate.impulses = w.imp_raw[:nc].copy()
    mstate.active_ids = tuple(cid for i, cid in enumerate(ids) if w.c[i] > 0.0)
    mstate.data[f"{method}_f"] = (ids, QPLayout(coulomb, nc, k, m, nc), f.copy())
    res = ContactResult.from_impulses(problem, tau, w.cloc[:, :nc].T.copy(), v_next, stats)
    if bits & _rec._CORRECTED:
        _mark_corrected(res, problem, w.qdd)
    return res


def _mark_corrected(res: ContactResult, problem: ContactProblem, qdd: np.ndarray) -> None:
    """An applied sticking correction on ``res`` (as ``consistency.mark_sticking_correction``): the
    accelerations solved for [rad/s^2] and their largest change, ``consistent = False``."""
    res.stats.info["qdd_corrected"] = qdd.copy()
    res.stats.info["qdd_correction"] = float(np.max(np.abs(qdd - problem.qdd_des)))
    res.consistent = False


def _solve_active_set(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                      k: int, o: QPOptions, warm_start: bool, osqp_retry) -> ContactResult:
    """Both stages by the compiled flow (:func:`qp_active_set`) on the problem's arrays."""
    data = mstate.data
    fs, slots = _FlowState.of(data, method, problem, k, coulomb, True)
    w = fs.w
    code, bits = qp_active_set(_problem_arrays(problem, slots), o, fs.rec, bool(warm_start))
    st = w.state
    s1 = int(st[_rec._S_S1])
    info: dict[str, Any] = {"setup": False, "stage1_status": _rec._status_name(s1),
                            "formulation": "dense"}
    if code == TICK_GENERIC and s1 == 0:
        raise np.linalg.LinAlgError(f"{method}: P M^-1 P^T is singular")
    if code == _rec.TICK_STAGE1_FAILED and s1 in (_rec._PRIMAL_INF, _rec._NOT_PD):
        # Stage I has no exact solution (e.g. a held grasp whose prescribed finger motion
        # the box cannot follow within friction): OSQP's iterate at its limit is the
        # compromise the closed loops were tuned with, rather than the fallback torques
        res = osqp_retry()
        res.stats.info["active_set_stage1"] = _rec._status_name(s1)
        return res
    if code != TICK_OK:
        reason = (f"active-set QP Stage I: {_rec._status_name(s1)}"
                  if code == _rec.TICK_STAGE1_FAILED else "non-finite result")
        return _flow_fallback(problem, data, method, reason,
                              s1 if code == _rec.TICK_STAGE1_FAILED else 0, int(st[_rec._S_BITS]),
                              int(st[_rec._S_IT]), info, w)
    info["stage1_exact"] = int(st[_rec._S_KIND]) == 2
    r = int(st[_rec._S_R])
    info["nullity"] = max(r, 0)
    s2 = int(st[_rec._S_S2])
    info["stage2_status"] = ("skipped" if r <= 0 else "solved" if s2 == 1
                             else f"failed: {_rec._status_name(s2)}")
    data[f"{method}_key"] = (tuple(problem.contact_ids), k if coulomb else 0, "dense",
                             "active_set")
    stats = SolverStats(method=method, flags=_rec.flag_names(bits), iterations=int(st[_rec._S_IT]),
                        warm_start_used=bool(st[_rec._S_WARM_USED]))
    return _flow_result(problem, mstate, method, coulomb, k, w, bits, stats, info)


def _solve_osqp_dense(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                      k: int, o: QPOptions, warm_start: bool, set1: dict[str, Any],
                      set2: dict[str, Any]) -> ContactResult:
    """The OSQP variant on the dense reduced form: the compiled stages (:func:`qp_prepare`,
    :func:`qp_stage2`, :func:`qp_finish`) around OSQP's solves (:class:`OSQPStages`, one
    solver per contact set)."""
    nc = problem.nc
    data = mstate.data
    ids = tuple(problem.contact_ids)
    fs, slots = _FlowState.of(data, method, problem, k, coulomb, False)
    w = fs.w
    if fs.osqp is None or fs.osqp.set1 != set1 or fs.osqp.set2 != set2:
        fs.osqp = OSQPStages(w, k, coulomb, fs.pat1, set1, set2, o.recenter, False)
    # the previous forces by identity (this path's, or those the compiled tick exported)
    w.prev_known[:] = False
    prev = data.get(f"{method}_f")
    if prev:
        pids, play, pf = prev
        index = {cid: j for j, cid in enumerate(pids)}
        for i, cid in enumerate(ids):
            j = index.get(cid)
            if j is not None:
                w.prev_known[slots[i]] = True
                w.prev_f[slots[i]] = pf[play.rows_of_contact(j)]
    key = (ids, k if coulomb else 0, "dense", "osqp")
    cont_ok = warm_start and data.get(f"{method}_key") == key
    p = _problem_arrays(problem, slots)
    rec = fs.rec
    code, fresh, found = qp_prepare(p, o, rec, cont_ok, bool(warm_start))
    if code != TICK_OK:
        raise np.linalg.LinAlgError(f"{method}: P M^-1 P^T is singular")
    stages = fs.osqp
    code, res, sa, s1, it, r = stages.run(
        nc, fresh, found, recenter_q,
        lambda xa, sa, xb, sb, second, cont: qp_stage2(p, o, rec, xa, sa, xb, sb, second, cont),
        lambda x2, s2: qp_finish(p, o, rec, x2, s2), cont_ok)
    info: dict[str, Any] = {"setup": stages.setup1, "stage1_status": _rec._status_name(s1),
                            "formulation": "dense"}
    if stages.setup2:
        info["setup2"] = True
    bits = int(w.state[_rec._S_BITS])
    if code != TICK_OK:
        reason = (f"OSQP Stage I: {_rec._status_name(sa)}" if code == _rec.TICK_STAGE1_FAILED
                  else "non-finite result")
        data.pop(f"{method}_key", None)
        return _flow_fallback(problem, data, method, reason,
                              sa if code == _rec.TICK_STAGE1_FAILED else 0, bits, it, info, w)
    bits = res[1]
    s2 = stages.status2
    info["nullity"] = max(r, 0)
    info["stage2_status"] = ("skipped" if r <= 0 else "solved" if s2 == _rec._SOLVED
                             else _rec._status_name(s2) if s2 in _rec._ACCEPT
                             else f"failed: {_rec._status_name(s2)}")
    data[f"{method}_key"] = key
    stats = SolverStats(method=method, flags=_rec.flag_names(bits), iterations=it,
                        warm_start_used=bool(found) if fresh else True)
    return _flow_result(problem, mstate, method, coulomb, k, w, bits, stats, info)


def solve_qp_coulomb(
    problem: ContactProblem,
    mstate: MethodState,
    *,
    friction_edges: int | None = None,
    stage2: bool = True,
    warm_start: bool = True,
    eps: float = 1e-7,
    max_iter: int = 1500,
    polish: bool = False,
    stage2_reg: float = 1e-9,
    rank_tol: float = 1e-9,
    stage1_reg: float = 1e-7,
    stage2_eps: float | None = None,
    formulation: str = "auto",
    sparse_above: int = 8,
    stage1_objective: str = "kinetic_energy",
    stage1_recenter: bool = True,
    sticking_correction: bool = False,
    sticking_gap: float = 1e-6,
    friction_gap: float | None = None,
    qp_solver: str = "active_set",
    **_unused: Any,
) -> ContactResult:
    """Two-stage convex inverse dynamics with a k-edge friction pyramid (Sec. 6.2).

    Args:
        problem: validated problem, ``nc >= 1``.
        mstate: warm start (OSQP solver objects, previous forces by contact identity).
        friction_edges: pyramid edges k (even >= 4), default ``problem.friction_edges``.
        stage2: run Stage II (min-norm torques, eqs. 102-112); ``False`` returns Stage I only.
        warm_start: keep/update the OSQP solvers and warm start them from the previous tick;
            ``False`` sets up fresh solvers every tick (cold start).
        eps: OSQP absolute and relative tolerance (force units, N).
        max_iter: OSQP iteration limit per stage.
        polish: OSQP solution polishing (active-set refinement; off by default because OSQP
            1.1 prints to stdout when it finds no active set; the projection below suffices).
        stage2_reg: Tikhonov weight on ``|w|^2`` in Stage II, relative to max diag(J_a^T W)^2.
        rank_tol: relative singular value threshold for ``rank(J_f)`` (nullspace W).
        stage2_eps: OSQP tolerance of Stage II [N] (default: ``eps``).
        formulation: ``"dense"`` (reduced form, nullspace W in Stage II, as in the paper),
            ``"sparse"`` (same QPs with ``u = J_f^T f`` and ``t = J_a^T f`` lifted as extra
            variables and Stage II written as ``J_f^T f = J_f^T f0``; OSQP cost linear in the
            number of contacts) or ``"auto"``: dense for ``nc <= sparse_above``.
        stage1_reg: proximal weight ``delta`` on ``|f|^2`` in Stage I, relative to max diag H
            (least-norm Stage I point; avoids ADMM drift on the flat directions).
        stage1_recenter: re-solve Stage I once with the proximal term centred at the first
            solution (reduces the O(delta |f|) bias of the optimum; one warm-started solve).
            The active-set solver finishes the kinetic-energy objective's Stage I exactly
            instead (module docstring) and re-centres only where that finish does not end.
        stage1_objective: ``"kinetic_energy"`` (eq. (69), default) or ``"contact_velocity"``
            (:data:`STAGE1_OBJECTIVES`; docs/contact_methods.md "Tracking in closed loop").
        sticking_correction: first replace the desired accelerations by the nearest ones the
            touching contacts (``phi <= sticking_gap`` [m]) realize while sticking (Sec. 4.5
            QP; :func:`~wbc_dynamics.contact.consistency.sticking_consistent_problem`); flag
            ``inconsistent_corrected``, ``consistent=False`` when that changed them.
        friction_gap: [m] friction only at contacts with ``phi <= friction_gap`` (eq. (34));
            ``None`` (default): every candidate. Without it a candidate hovering within the
            margin whose point slides tangentially can carry normal *and* friction force while
            separating (the complementarity-free model allows separation up to mu |slip|
            per tick; with mu = 10 that gave 10^4 N predicted on trot touchdowns).
        qp_solver: ``"active_set"`` (default; :data:`QP_SOLVERS`): both stages solved exactly
            by the compiled Goldfarb-Idnani method (:mod:`.dense_qp`) on the dense reduced form,
            warm-started with the previous active set of the same contact set; ``eps``,
            ``polish``, ``stage2_eps``, ``formulation`` and ``sparse_above`` are OSQP's and do
            not apply (``formulation="sparse"`` is rejected), ``max_iter`` counts active-set
            changes. ``"osqp"``: OSQP to tolerance ``eps`` (it reaches its iteration limit
            on talos's problems, docs/contact_methods.md).

    Returns:
        ContactResult (see the module docstring for stats, flags and fallback).
    """
    return _solve_two_stage(
        problem,
        mstate,
        "qp_coulomb",
        True,
        friction_edges=friction_edges,
        stage2=stage2,
        warm_start=warm_start,
        eps=eps,
        max_iter=max_iter,
        polish=polish,
        stage2_reg=stage2_reg,
        rank_tol=rank_tol,
        stage1_reg=stage1_reg,
        stage2_eps=stage2_eps,
        formulation=formulation,
        sparse_above=sparse_above,
        stage1_objective=stage1_objective,
        stage1_recenter=stage1_recenter,
        sticking_correction=sticking_correction,
        sticking_gap=sticking_gap,
        friction_gap=friction_gap,
        qp_solver=qp_solver,
    )


def solve_qp_noslip(
    problem: ContactProblem,
    mstate: MethodState,
    *,
    noslip_gap: float | None = None,
    rank_mass_ratio: float = 0.0,
    **options: Any,
) -> ContactResult:
    """Two-stage convex inverse dynamics with unbounded friction (no-slip; Sec. 6 with mu = inf).

    Same ``options`` as :func:`solve_qp_coulomb`, with the same defaults (no pyramid:
    ``friction_edges`` and ``friction_gap`` are ignored, like any option of another method):
    tangential impulses are free variables, normal impulses ``>= 0``. ``noslip_gap`` [m] (as
    for ``lcp_noslip``): the free tangential impulses exist only at contacts with
    ``phi <= noslip_gap`` (eq. (34)); a separated candidate gets no friction (its S, T rows are
    zeroed, so its tangential impulses leave the objective and Stage II sets them to zero).
    ``None`` (default): every candidate.

    ``rank_mass_ratio`` (default 0 = off, Sec. 6 as written; the quadruped closed loop uses
    100): the scale-aware rank rule of ``lcp_noslip`` (Alg. 1,
    :func:`~wbc_dynamics.contact.lcp_noslip.solve_lcp_noslip`) applied to the free tangential
    impulses: in the order S_1, T_1, ..., a tangential row is kept iff the effective mass of its
    direction, with the actuated velocities prescribed and the rows already kept enforced (the
    pivot of the Stage I Hessian ``J_f K_ff J_f^T`` restricted to the tangential rows), is at
    most ``rank_mass_ratio * problem.total_mass``; the other tangential impulses are 0 (the row
    is zeroed as for ``noslip_gap``; flag ``rows_dropped``, ``info["rows_dropped"]`` = count).
    Why: two stance feet at sub-millimetre different heights make the tangential pair along the
    line between them a direction of ~1e3-1e4 times the robot's mass (the normal rows that
    would make it exactly dependent are sign-constrained, c_N >= 0); Stage I then spends
    ~1e3-1e4 m g of internal tangential force on mm/s of relative foot velocity (contact-velocity
    objective; closed-loop trot, docs/contact_methods.md). Exactly dependent tangential rows are
    dropped by the same rule, so Stage II has no internal tangential forces among dropped rows
    to trade for torque. ``0`` (or ``total_mass=None``): every tangential impulse (Sec. 6 as
    written).
    Off by default because it breaks grasps: among four fingertips on a rigid box the
    exactly dependent tangential rows are dropped too, and the friction that holds the object
    goes with them (the arm + box loop with the finger hold dropped the box within 1.4 s).
    """
    options.pop("friction_edges", None)
    options.pop("friction_gap", None)
    return _solve_two_stage(problem, mstate, "qp_noslip", False, friction_gap=noslip_gap,
                            rank_mass_ratio=rank_mass_ratio, **options)


def warmup() -> None:
    """Compile / import everything the QP methods need (both formulations, setup and update
    paths) on a tiny problem; call at start-up so that no control tick compiles."""
    # the problem of lcp_coulomb's warm-up, not that warm-up: the QP methods use only its
    # reduced dynamics (compiled below through them), not Lemke, MINDIFF or the Coulomb
    # min-norm selection, which would be half of a QP cold start's general-path compile
    from .lcp_coulomb import warmup_problem

    p = warmup_problem()
    for fn in (solve_qp_coulomb, solve_qp_noslip):
        for form in ("dense", "sparse"):
            ms = MethodState()
            for _ in range(2):          # setup path, then the in-place update path
                fn(p, ms, formulation=form, qp_solver="osqp")
        ms = MethodState()
        for _ in range(2):              # cold, then warm-started with the active set
            fn(p, ms)
