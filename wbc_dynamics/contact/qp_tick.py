"""The ``qp_coulomb`` / ``qp_noslip`` control tick as compiled code.

One compiled kernel family: the stage kernels (:func:`qp_tick_stage1`, :func:`qp_tick_stage2`,
:func:`qp_tick_finish`, ``qp_tick_active_set``) share the numba-typed :class:`QPWork` record and
the fixed-argument pack defined here, and :class:`QPTick` binds them for exactly those types.

With the default ``qp_solver="active_set"`` the whole tick is one compiled call,
:func:`qp_tick_active_set`: steps 1, 3 and 5 below with both QPs solved exactly by the compiled
Goldfarb-Idnani kernel (:func:`~wbc_dynamics.contact.dense_qp.dense_qp_kernel`) on the dense
problems in place (``QPWork.P1d`` ...), Stage I by the general path's own implementation
(:func:`~wbc_dynamics.contact.qp.stage1_active_set`: the proximal pass and its exact finish for
the kinetic-energy objective), warm-started with the previous tick's active row sides mapped by
candidate slot; no Python between the stages, no OSQP. With ``qp_solver="osqp"`` the steps run
as three compiled calls around the OSQP calls:

The general path (``ContactModel.build`` + ``solve``, :mod:`.qp`) assembles a validated
:class:`~wbc_dynamics.contact.problem.ContactProblem` and orchestrates the two-stage QP of
Zapolsky & Drumwright, Sec. 6 (Stage I eqs. (69)-(74) in the reduced form (97)-(99), Stage II
eqs. (102)-(112)) from Python. :class:`QPTick` runs the same arithmetic as three compiled calls
with only the OSQP calls between them:

1. :func:`qp_tick_stage1` -- the kinematics pass, every contact candidate with its N/S/T rows,
   M^-1 and h (:func:`~wbc_dynamics.contact.geometry.assemble_kernel`), the passive impact, the
   sticking correction (option ``sticking_correction``, Sec. 4.5 QP), the ``friction_gap`` /
   ``noslip_gap`` rows (eq. (34)), ``qp_noslip``'s scale-aware rank rule on the tangential rows
   (option ``rank_mass_ratio``, Alg. 1's pivots), the reduced dynamics (eqs. (85)-(94),
   ``lcp_coulomb._reduce_into``, in ``QPWork``) and Stage I's OSQP data
   (``qp._stage1_data``) written into preallocated value arrays in the fixed sparsity pattern
   of the contact count; and the warm start mapped by contact identity when the contact set
   changed.
2. OSQP: update the Stage I solver of this contact count in place and solve; the proximal
   re-centring solve (option ``stage1_recenter``; its linear term from :func:`_recenter_q`).
3. :func:`qp_tick_stage2` -- projection of the Stage I impulses, torques of the Stage I
   solution (eq. (90)), the nullspace W and Stage II's data (``qp._stage2_data``) in place;
   with the active-set solver ``qp._stage2_data_from_basis`` on the nullspace of J_f that
   ``qp._linear_term_varies`` already computed when the contact-velocity term does not vary.
4. OSQP: update the Stage II solver of (contact count, nullity) in place and solve.
5. :func:`qp_tick_finish` -- projection, ``tau`` and ``v+`` (eqs. (90), (37)), the world
   forces, the flags as bits and the warm start for the next tick.

OSQP solvers: one Stage I solver per contact count and one Stage II solver per (contact count,
nullity), set up once on first use and afterwards only updated in place (``update_data_vec``,
``update_data_mat`` on the same pattern: a numeric refactorization, no new setup). The general
path keeps one solver per contact *set* and sets it up again when the set changes; here a set
change reuses the solver of that count and resets it to the state a fresh setup has (OSQP
recomputes the Ruiz scaling on every matrix update; ``rho`` is reset to its initial value and
the iterates to the mapped warm start / zero, which reproduces a fresh setup to rounding error,
same iteration counts). While the set is unchanged both continue from OSQP's previous iterates
exactly as the general path does, so the tick equals ``build`` + ``solve`` to solver tolerance
(``test_contact_tick.py`` checks it tick by tick on random states).

The warm start lives in the tick's buffers while consecutive ticks are compiled ones; the
:class:`~wbc_dynamics.contact.problem.MethodState` holds markers (``<method>_key``,
``<method>_f``) that make the general path set up fresh solvers (mapped from the previous forces
after :meth:`QPTick.export_warm`) if it runs in between, and make this tick map the general
path's forces by identity afterwards. A Stage I failure returns the documented fallback of
``solve`` (previous torques, else the contact-free inverse dynamics; flags ``fallback``,
``infeasible`` / ``iteration_limit``). Left to the general path (``run`` returns False): no
contact candidate, more contacts than ``sparse_above`` (the lifted sparse formulation), a
singular actuated block of M^-1, and a non-finite result after an accepted solve.

Every stage kernel takes the fixed arguments as one pack (``a``,
:func:`~wbc_dynamics.kernels.fixed_args.fixed_args`, a pointer) and reads the NamedTuples it
needs from it, rather than taking the NamedTuples themselves: numba passes a NamedTuple of
arrays by value, as ~7 scalars per array plus a reference count update of each, and ``QPWork``
and ``ContactData`` hold ~120 arrays, so each call between compiled stages would be thousands
of arguments of generated code, and LLVM would spend most of the QP tick's cold compile on that
code, once per stage and again in the fused tick that links the stages (docs/node.md, start-up;
the fused tick calls its stages through their symbols, :mod:`wbc_dynamics.kernels.separate`).
The pack holds ``ContactData`` and ``QPWork`` as records (:mod:`wbc_dynamics.kernels.records`:
the same arrays behind one pointer), so reading them out of the pack at each stage updates two
reference counts instead of ~260 (the quadruped's ``qp_coulomb`` tick ~59 -> ~49 us).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numba
import numpy as np
import osqp
import scipy.sparse as sp
from numba import njit
from numba.experimental import structref

from ..kernels import arena as _ar
from ..kernels.fixed_args import fixed_args, pack_type
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import bound_entry, left_nullspace
from ..kernels.records import RecordType
from ..kernels.separate import call_separately
from .dense_qp import dense_qp_kernel, work_sizes
from .geometry import ContactModel
from .lcp_coulomb import _recover_into, _reduce_into
from .noslip_kernels import _alg1
from .problem import MethodState
from .qp import (
    _INF,
    _MAX_ITER,
    _PRIMAL_INF,
    _PRIMAL_INF_INACC,
    _SOLVED,
    ACTIVE_SET_DEP_TOL,
    ACTIVE_SET_TOL,
    STAGE1_OBJECTIVES,
    QPLayout,
    _constraint_row,
    _dense_upper_pattern,
    _linear_term_varies,
    _pattern_from_mask,
    _project_into,
    _settings,
    _stage1_data,
    _stage2_data,
    _stage2_data_from_basis,
    linear_term_work_size,
    stage1_active_set,
)
from .tick_base import (
    TICK_GENERIC,
    TICK_OK,
    _assemble_with_impact,
    _CompiledTick,
    _min_pivot,
    _sticking_qdd,
    _write_result,
    compile_sticking_correction,
)

__all__ = ["QPOptions", "QPOutput", "QPWork", "QPTick", "qp_tick", "qp_tick_stage1",
           "qp_tick_stage2", "qp_tick_finish", "TICK_STAGE1_FAILED"]

#: Stage I was not accepted (OSQP failed): the documented fallback
TICK_STAGE1_FAILED = 2

# flag bits, in the order the general path adds them (Stage I / II iteration limit, min-norm,
# qp_noslip's dropped tangential rows, then the sticking correction's mark)
_ITER_LIMIT = 1
_MIN_NORM = 2
_CORRECTED = 4
_STICKING_FAILED = 8
_ROWS_DROPPED = 16
_QP_FLAG_NAMES = ((_ITER_LIMIT, "iteration_limit"), (_MIN_NORM, "min_norm"),
                  (_ROWS_DROPPED, "rows_dropped"), (_CORRECTED, "inconsistent_corrected"),
                  (_STICKING_FAILED, "sticking_correction_failed"))

# QPWork.state entries
_S_NC = 0         # this tick's contact count
_S_BITS = 1       # flag bits so far
_S_LAST_NC = 2    # contact count of the Stage I key (0: none -- fresh setup next tick)
_S_KEY2_NC = 3    # contact count of the Stage II key
_S_KEY2_R = 4     # nullity of the Stage II key (-1: none)
_S_R = 5          # this tick's nullity (-1: Stage II off)
_S_SEP = 6        # 1 if a candidate lost its friction rows (friction gap)
_S_WARM_USED = 7  # active set: 1 if Stage I started from a mapped active set


class QPOptions(NamedTuple):
    """Options of the compiled QP tick (those of ``solve_qp_coulomb`` / ``solve_qp_noslip`` and
    the contact model).

    ``coulomb``: the k-facet pyramid (``qp_coulomb``) or free tangential impulses (``qp_noslip``);
    ``friction_gap`` [m] (< 0: None; ``noslip_gap`` of ``qp_noslip``); ``tangential_floor`` [1/kg]
    ``qp_noslip``'s scale-aware rank rule on the tangential rows (``lcp_noslip.min_pivot`` of its
    ``rank_mass_ratio``; 0: off); ``sticking_correction`` with ``sticking_gap`` [m] and Alg. 1's
    floor ``min_pivot`` [1/kg]; ``contact_velocity``: ``stage1_objective == "contact_velocity"``;
    ``stage1_reg``, ``stage2_reg``, ``rank_tol`` relative; ``max_nc``: the dense formulation up to
    this many contacts (more: the general path's sparse one); ``active_set``: ``qp_solver ==
    "active_set"`` (the whole tick one compiled call, :func:`qp_tick_active_set`); ``recenter``:
    ``stage1_recenter`` (with the active-set solver: where Stage I's exact finish does not end,
    :func:`~wbc_dynamics.contact.qp.stage1_active_set`); ``max_iter`` the solver's iteration limit,
    ``qp_tol`` / ``qp_dep_tol`` its tolerances (``qp.ACTIVE_SET_TOL`` / ``ACTIVE_SET_DEP_TOL``:
    passed, not read as globals, which numba would freeze into the cached kernel); the contact
    model's ``margin``, ``phi_deadband`` [m], ``passive_impact``, ``separation_tolerance`` [m/s],
    ``dt`` [s].
    """

    margin: float
    phi_deadband: float
    passive_impact: bool
    separation_tolerance: float
    dt: float
    coulomb: bool
    k: int
    sticking_correction: bool
    sticking_gap: float
    min_pivot: float
    friction_gap: float
    tangential_floor: float
    contact_velocity: bool
    stage1_reg: float
    stage2: bool
    stage2_reg: float
    rank_tol: float
    max_nc: int
    active_set: bool
    recenter: bool
    max_iter: int
    qp_tol: float
    qp_dep_tol: float


class QPOutput(NamedTuple):
    """Outputs (rows ``0..nc-1`` valid): ``tau`` (nu,) [N m] in the actuated order,
    ``impulses`` (cap, 3) [N s] local (n, s, t), ``forces_world`` (cap, 3) [N],
    ``active_slots`` (cap,) the slots with ``c_N > 0`` in row order."""

    tau: np.ndarray
    impulses: np.ndarray
    forces_world: np.ndarray
    active_slots: np.ndarray


class QPWork(NamedTuple):
    """Buffers the three kernels share (``m = 3 nc`` impulse variables, rows ``0..m-1``
    valid) and the warm start kept across ticks.

    Per tick: ``J`` (3 cap, nv) = [N; S; T]; the reduced dynamics ``L``, ``tau0``, ``fstar``,
    ``Jf`` and ``dlin`` (Stage I linear term minus eq. (98)'s) of :class:`ReducedDynamics`;
    ``qdd`` (nu,) the accelerations solved for (after the sticking correction); ``sep``
    (cap,) candidates without friction rows; ``dropped`` (cap, 2) the tangential rows
    (S_i, T_i) the rank rule dropped; ``f0`` the projected Stage I forces [N]; ``W``
    ((3 cap)^2,) Stage II's nullspace basis, its first m r entries a C-ordered (m, r) matrix;
    ``imp_raw`` (cap, 3) the impulses before the friction-gap zeroing
    (``MethodState.impulses`` as the general path stores them).

    OSQP values in pattern order: Stage I ``p1x``, ``q1``, ``a1x``, ``l1`` (patterns of each
    contact count: ``p1_rows``/``p1_cols`` from ``p1_off[nc]``, ``a1_rows``/``a1_cols`` from
    ``a1_off[nc]``), ``qlin`` its linear term, ``q1r`` the re-centred one, ``x0`` the mapped
    warm start; Stage II ``p2x`` (dense upper triangle), ``q2``, ``a2x`` (dense, column-major),
    ``l2`` and ``x2ws`` its warm start.

    Across ticks: ``prev_f`` (n_slots, 3) / ``prev_known`` the previous forces by candidate slot
    (the general path's ``<method>_f``); ``last_slots`` (Stage I key), ``key2_slots`` and
    ``ffull`` (Stage II key and forces); ``state`` (int64, see ``_S_*``); ``fstate[0]`` the
    Stage I proximal weight delta.

    Active-set solver (option ``qp_solver="active_set"``; size-1 placeholders otherwise): the dense
    problems ``P1d`` (m, m), ``A1d`` (ncon1, m) of Stage I and ``P2d`` (r, r), ``A2d`` (ncon2, r)
    of Stage II as C-ordered prefixes, ``u_inf`` (+inf upper bounds), the solutions ``x1`` (Stage
    I's proximal pass) / ``x1b`` (Stage I's result) / ``x2``, the multipliers ``y``, the active row
    sides ``act1`` / ``act2`` and the warm-start guess ``warm`` (:mod:`.dense_qp`); across ticks
    the active row sides by candidate slot, ``prev_act1`` (n_slots, 2 + k: non-penetration row,
    ``f_N >= 0``, k facets) and ``prev_act2`` (n_slots, 1 + k: ``f_N >= 0``, k facets), valid where
    ``act_known`` (n_slots, 2: stage); the solver's workspace ``qp_fwork`` / ``qp_iwork``.

    Stage II's data: ``s2_fwork`` (3 cap (nf + 1) + nf + 2 + nu 3 cap, or more for
    ``qp.linear_term_work_size``) holds J_fix (the QR of the nullspace overwrites it), the
    Householder scales and J_a^T W; before them the workspace of ``qp._linear_term_varies``
    (whose nullspace of J_f, written to ``W``, Stage II reuses when J_fix = J_f).

    The reduced dynamics' other outputs and scratch (``lcp_coulomb._reduce_into``): ``H``
    ((3 cap)^2,) a C-ordered (m, m) prefix, ``Jv0``, ``uf`` (3 cap,), ``v0`` (nv,), ``Kff``
    (nf, nf), ``ufree`` (nf,), ``G`` (nu, nu), ``JK`` (3 cap, nf), ``rscratch``
    (max(nu (nf + 2), nu + nv),; also ``_recover_into``'s); ``lin`` (3 cap,) Stage I's linear
    term [m/s]; the recovery's ``tau1`` (nu,) [N m], ``vnext``, ``gen`` (nv,); ``c`` (3 cap,)
    impulses [N s], ``f`` (3 cap,) Stage II's forces [N], ``gscratch`` (cap,) the
    projection's, ``cloc`` (3, cap) the reported (c_N, c_S, c_T). Past the sticking correction
    and ``qp_noslip``'s rank rule (``_sticking_qdd``, ``noslip_kernels._alg1``) the active-set
    tick allocates nothing.
    """

    J: np.ndarray
    Jf: np.ndarray
    dlin: np.ndarray
    L: np.ndarray
    tau0: np.ndarray
    fstar: np.ndarray
    qdd: np.ndarray
    sep: np.ndarray
    dropped: np.ndarray
    f0: np.ndarray
    W: np.ndarray
    imp_raw: np.ndarray
    p1_rows: np.ndarray
    p1_cols: np.ndarray
    p1_off: np.ndarray
    a1_rows: np.ndarray
    a1_cols: np.ndarray
    a1_off: np.ndarray
    p1x: np.ndarray
    q1: np.ndarray
    a1x: np.ndarray
    l1: np.ndarray
    qlin: np.ndarray
    q1r: np.ndarray
    x0: np.ndarray
    p2x: np.ndarray
    q2: np.ndarray
    a2x: np.ndarray
    l2: np.ndarray
    x2ws: np.ndarray
    prev_f: np.ndarray
    prev_known: np.ndarray
    last_slots: np.ndarray
    key2_slots: np.ndarray
    ffull: np.ndarray
    state: np.ndarray
    fstate: np.ndarray
    P1d: np.ndarray
    A1d: np.ndarray
    P2d: np.ndarray
    A2d: np.ndarray
    u_inf: np.ndarray
    x1: np.ndarray
    x1b: np.ndarray
    x2: np.ndarray
    y: np.ndarray
    act1: np.ndarray
    act2: np.ndarray
    warm: np.ndarray
    prev_act1: np.ndarray
    prev_act2: np.ndarray
    act_known: np.ndarray
    qp_fwork: np.ndarray
    qp_iwork: np.ndarray
    s2_fwork: np.ndarray
    H: np.ndarray
    Jv0: np.ndarray
    uf: np.ndarray
    v0: np.ndarray
    Kff: np.ndarray
    ufree: np.ndarray
    G: np.ndarray
    JK: np.ndarray
    rscratch: np.ndarray
    lin: np.ndarray
    tau1: np.ndarray
    vnext: np.ndarray
    gen: np.ndarray
    c: np.ndarray
    f: np.ndarray
    gscratch: np.ndarray
    cloc: np.ndarray


@structref.register
class QPWorkRecordType(RecordType):
    """numba type of :class:`QPWorkRecord`."""


class QPWorkRecord(structref.StructRefProxy):
    """:class:`QPWork`'s arrays as one pointer for the compiled stages (same field names, same
    arrays; :mod:`wbc_dynamics.kernels.records`): ``QPTick.w_kernel``."""


structref.define_proxy(QPWorkRecord, QPWorkRecordType, list(QPWork._fields))


@njit(cache=True)
def qp_work_record(w):
    """The :class:`QPWorkRecord` of the :class:`QPWork` ``w`` (compiled, cached)."""
    return QPWorkRecord(*w)


@njit(cache=True)
def qp_tick_stage1(a, q, v, qdd_des, cont_ok, map_warm):
    """Assembly, corrections, reduced dynamics and Stage I's OSQP data (module doc, step 1).

    ``a``: the fixed arguments packed as for :func:`qp_tick_active_set` (every stage takes the
    pack, not its NamedTuples: module doc, last paragraph).
    ``cont_ok``: the OSQP solvers may continue from the previous tick (warm start on, no
    general-path solve in between); ``map_warm``: map the previous forces by slot into ``w.x0``
    when the contact set changed. Returns (nc, code, fresh, found): ``fresh`` -- Stage I needs
    a fresh setup (the contact set changed or no continuation), ``found`` -- ``w.x0[:3 nc]``
    holds a mapped warm start; nc < 0 is ``-status`` of the core kernels (invalid q / v).
    """
    topo, tree, Sm, I6, gravity, geo, d, o, w, _out = a.head
    act, free, excluded, bx_R, bx_p = a.tail
    nc = call_separately(_assemble_with_impact, (topo, tree, Sm, I6, gravity, geo, d, o, q, v,
                                                 excluded, bx_R, bx_p))
    if nc <= 0 or nc > o.max_nc:
        return nc, TICK_GENERIC, False, False
    dt = o.dt
    N = d.N[:nc]
    S = d.S[:nc]
    T = d.T[:nc]
    phi = d.phi[:nc]
    mu = d.mu[:nc]
    nv = N.shape[1]
    nu = act.shape[0]
    m = 3 * nc
    bits = 0
    qdd = w.qdd
    if o.sticking_correction:  # qp._solve_two_stage: sticking_consistent_problem
        st = call_separately(_sticking_qdd, (d.Minv, d.h, d.v, act, qdd_des, N, S, T, phi, dt,
                                             o.sticking_gap, o.min_pivot, qdd, d.arena))
        if st == 1:
            bits |= _CORRECTED
        elif st == 2:
            bits |= _STICKING_FAILED
    else:
        for a in range(nu):
            qdd[a] = qdd_des[a]
    n_sep = 0
    for i in range(nc):  # eq. (34): no friction at separated candidates
        w.sep[i] = o.friction_gap >= 0.0 and phi[i] > o.friction_gap
        if w.sep[i]:
            n_sep += 1
            for c in range(nv):
                S[i, c] = 0.0
                T[i, c] = 0.0
    if o.tangential_floor > 0.0:  # qp._dropped_tangential: the scale-aware rank rule
        _p, _q, _r, nG, kind, idx = call_separately(_alg1, (d.Minv, act, S, T, 0.0, 0.0,
                                                            o.tangential_floor, d.arena))
        for i in range(nc):
            w.dropped[i, 0] = False
            w.dropped[i, 1] = False
            s_nz = False
            t_nz = False
            for c in range(nv):
                s_nz = s_nz or S[i, c] != 0.0
                t_nz = t_nz or T[i, c] != 0.0
            w.dropped[i, 0] = s_nz
            w.dropped[i, 1] = t_nz
        if nG >= 0:
            for j in range(nG):
                if kind[j] > 0:
                    w.dropped[idx[j], kind[j] - 1] = False
        for i in range(nc):
            if w.dropped[i, 0]:
                bits |= _ROWS_DROPPED
                for c in range(nv):
                    S[i, c] = 0.0
            if w.dropped[i, 1]:
                bits |= _ROWS_DROPPED
                for c in range(nv):
                    T[i, c] = 0.0
    else:
        for i in range(nc):
            w.dropped[i, 0] = False
            w.dropped[i, 1] = False
    J = w.J[:m]
    for i in range(nc):
        for c in range(nv):
            J[i, c] = N[i, c]
            J[nc + i, c] = S[i, c]
            J[2 * nc + i, c] = T[i, c]
    H = w.H[:m * m].reshape((m, m))
    Jf = w.Jf[:m]
    Jv0 = w.Jv0[:m]
    uf = w.uf[:m]
    ok = call_separately(_reduce_into, (d.Minv, d.h, d.v, act, free, qdd, dt, J, w.L, w.tau0,
                                        w.fstar, w.v0, w.Kff, Jf, H, Jv0, uf, w.ufree, w.G,
                                        w.rscratch, w.JK[:m]))
    if not ok:  # the general path raises LinAlgError -> solve's fallback
        return nc, TICK_GENERIC, False, False
    # Stage I linear term [m/s] (qp._solve_two_stage_impl): eq. (98) or the contact velocity
    lin = w.lin[:m]
    for i in range(m):
        lin[i] = uf[i]
    if o.contact_velocity:
        for i in range(m):
            lin[i] = Jv0[i]
        for i in range(nc):
            lin[i] += phi[i] / dt
    for i in range(m):
        w.dlin[i] = lin[i] - uf[i]
    hmax = 1.0
    for i in range(m):
        hmax = max(hmax, H[i, i])
    delta = o.stage1_reg * hmax
    w.fstate[0] = delta
    for j in range(m):
        w.qlin[j] = lin[j] / dt
    if o.active_set:  # the dense problem (qp._active_set_stage1)
        ncon = 2 * nc + (nc * o.k if o.coulomb else 0)
        P1 = w.P1d[:m * m].reshape((m, m))
        A1 = w.A1d[:ncon * m].reshape((ncon, m))
        for i in range(m):
            w.q1[i] = lin[i] / dt
            for j in range(m):
                P1[i, j] = H[i, j]
            P1[i, i] += delta  # H + delta I
        for r in range(nc):
            for c in range(m):
                A1[r, c] = H[r, c]
        for r in range(nc, ncon):  # C's rows: three entries each
            for c in range(m):
                A1[r, c] = 0.0
            i, ca, cb, cc = _constraint_row(r - nc, nc, o.k, mu)
            A1[r, i] = ca
            A1[r, nc + i] = cb
            A1[r, 2 * nc + i] = cc
        for i in range(ncon):
            w.l1[i] = (-phi[i] / dt - Jv0[i]) / dt if i < nc else 0.0
        w.state[_S_NC] = nc
        w.state[_S_BITS] = bits
        w.state[_S_SEP] = 1 if n_sep > 0 else 0
        return nc, TICK_OK, False, False
    Hp = H.copy()
    for i in range(m):
        Hp[i, i] += delta
    p0, p1 = w.p1_off[nc], w.p1_off[nc + 1]
    a0, a1 = w.a1_off[nc], w.a1_off[nc + 1]
    Px, qv, Ax, lo = _stage1_data(H, Hp, lin, Jv0, phi, dt, mu, o.k, o.coulomb,
                                  w.p1_rows[p0:p1], w.p1_cols[p0:p1], w.a1_rows[a0:a1],
                                  w.a1_cols[a0:a1])
    _ar.copy_prefix(w.p1x, Px, p1 - p0)
    _ar.copy_prefix(w.a1x, Ax, a1 - a0)
    _ar.copy_prefix(w.l1, lo, lo.shape[0])
    for j in range(m):
        w.q1[j] = qv[j]
    # the Stage I key (contact identities in row order, k, dense) against the previous tick's
    same = cont_ok and w.state[_S_LAST_NC] == nc
    if same:
        for i in range(nc):
            if w.last_slots[i] != d.slot[i]:
                same = False
                break
    found = False
    if not same and map_warm:  # qp._mapped_warm_start: previous forces by identity
        for j in range(m):
            w.x0[j] = 0.0
        for i in range(nc):
            sl = d.slot[i]
            if w.prev_known[sl]:
                w.x0[i] = w.prev_f[sl, 0]
                w.x0[nc + i] = w.prev_f[sl, 1]
                w.x0[2 * nc + i] = w.prev_f[sl, 2]
                found = True
    w.state[_S_NC] = nc
    w.state[_S_BITS] = bits
    w.state[_S_SEP] = 1 if n_sep > 0 else 0
    return nc, TICK_OK, not same, found


@leaf_kernel
def _recenter_q(x, qlin, delta, out):
    """Stage I's second proximal pass (option ``stage1_recenter``): ``out = qlin - delta x``
    [m/s^2 x s]; returns False (no second pass) if x is not a finite (m,) vector."""
    m = x.shape[0]
    if qlin.shape[0] < m:
        return False
    for j in range(m):
        if not np.isfinite(x[j]):
            return False
    for j in range(m):
        out[j] = qlin[j] - delta * x[j]
    return True


@leaf_kernel
def _finite_vector(x, n):
    if x.shape[0] != n:
        return False
    for j in range(n):
        if not np.isfinite(x[j]):
            return False
    return True


@leaf_kernel
def _accepted(s):
    # qp._ACCEPT: solved, solved inaccurate, iteration limit, time limit
    return s == 1 or s == 2 or s == 7 or s == 8


@njit(cache=True)
def qp_tick_stage2(a, xa, sa, xb, sb, second, cont_ok):
    """Stage I's result (the re-centred pass ``xb`` if it ran (``second``) and solved, else
    ``xa``), its projection ``f0`` and torques, and Stage II's OSQP data (module doc, step 3).

    Returns (code, r, cont2): ``TICK_STAGE1_FAILED`` if Stage I was not accepted; r = the
    nullity (dim W; 0: Stage II skipped, -1: Stage II off); ``cont2``: Stage II continues from
    the previous solve of this key (warm start ``w.x2ws[:r]``), else a fresh setup.
    """
    d, o, w = a.head[6], a.head[7], a.head[8]
    act = a.tail[0]
    nc = w.state[_S_NC]
    m = 3 * nc
    x = xa
    s = sa
    if second and sb == 1 and _finite_vector(xb, m):
        x = xb
        s = sb
    if not (_finite_vector(x, m) and _accepted(s)):
        w.state[_S_LAST_NC] = 0  # the general path drops both solvers and their keys
        w.state[_S_KEY2_R] = -1
        return TICK_STAGE1_FAILED, 0, False
    if s != 1:
        w.state[_S_BITS] |= _ITER_LIMIT
    for i in range(nc):  # the Stage I key of this tick
        w.last_slots[i] = d.slot[i]
    w.state[_S_LAST_NC] = nc
    mu = d.mu[:nc]
    f0 = w.f0[:m]
    _project_into(x, mu, o.k, o.coulomb, f0, w.gscratch)
    w.state[_S_R] = -1
    if not o.stage2:
        return TICK_OK, -1, False
    J = w.J[:m]
    dt = o.dt
    c0 = w.c[:m]
    for j in range(m):
        c0[j] = dt * f0[j]
    tau1 = w.tau1
    _recover_into(d.Minv, act, w.L, w.tau0, w.fstar, dt, J, c0, tau1, w.vnext, w.gen,
                  w.rscratch)
    nf = w.Jf.shape[1]
    # Stage I's optimal set: J_f^T f fixed, and for the contact-velocity objective also its
    # linear term where it varies along ker J_f^T (qp._solve_two_stage_impl)
    ws = w.s2_fwork
    fix_lin = False
    r = -1  # the nullity once w.W holds the basis
    if o.contact_velocity:
        fix_lin, r_f = _linear_term_varies(w.Jf[:m], w.dlin[:m], o.rank_tol,
                                           o.sticking_gap / dt, ws, w.W)
        if not fix_lin:  # J_fix = J_f: w.W already holds its nullspace (the same QR)
            r = r_f
    nfix = nf + 1 if fix_lin else nf
    beta = ws[m * nfix:m * nfix + nfix + 1]
    JW = ws[m * nfix + nfix + 1:]
    ncon = nc + (nc * o.k if o.coulomb else 0)
    if o.active_set:  # the dense problem straight into the solver's C-ordered prefixes
        if r < 0:
            Jfix = ws[:m * nfix].reshape((m, nfix))  # (overwritten by the nullspace's QR)
            for i in range(m):
                for c in range(nf):
                    Jfix[i, c] = w.Jf[i, c]
                if fix_lin:
                    Jfix[i, nf] = w.dlin[i]
            r = call_separately(left_nullspace, (Jfix, o.rank_tol, beta, w.W))
        call_separately(_stage2_data_from_basis, (w.W, r, J, act, f0, tau1, mu, o.k, o.coulomb,
                                                  o.stage2_reg, o.active_set, JW, w.P2d, w.q2,
                                                  w.A2d, w.l2))
        w.state[_S_R] = r
        return TICK_OK, r, False
    Jfix = ws[:m * nfix].reshape((m, nfix))
    for i in range(m):
        for c in range(nf):
            Jfix[i, c] = w.Jf[i, c]
        if fix_lin:
            Jfix[i, nf] = w.dlin[i]
    W, P2, q2, A2, l2 = call_separately(_stage2_data, (Jfix, J, act, f0, tau1, mu, o.k,
                                                       o.coulomb, o.stage2_reg, o.rank_tol,
                                                       o.active_set))
    r = W.shape[1]
    w.state[_S_R] = r
    if r == 0:
        return TICK_OK, 0, False
    p = 0
    for j in range(r):  # dense upper triangle, column-major (qp._dense_upper_pattern)
        for i in range(j + 1):
            w.p2x[p] = P2[i, j]
            p += 1
    for c in range(r):
        w.q2[c] = q2[c]
        for row in range(ncon):
            w.a2x[c * ncon + row] = A2[row, c]
    # contiguous: the products below are BLAS calls, as numpy's in the general path (same
    # rounding); filled by element loops (as arena.copy_prefix: no numba slice copy)
    Wc = w.W[:m * r].reshape((m, r))
    for i in range(m):
        for j in range(r):
            Wc[i, j] = W[i, j]
    for row in range(ncon):
        w.l2[row] = l2[row]
    cont2 = cont_ok and w.state[_S_KEY2_R] == r and w.state[_S_KEY2_NC] == nc
    if cont2:
        for i in range(nc):
            if w.key2_slots[i] != d.slot[i]:
                cont2 = False
                break
    if cont2:  # previous forces projected on the current optimal set (basis independent)
        _ar.copy_prefix(w.x2ws, Wc.T @ (w.ffull[:m] - f0), r)
    return TICK_OK, r, cont2


@njit(cache=True)
def qp_tick_finish(a, x2, s2):
    """Stage II's result, torques and v+ (eqs. (90), (37)), outputs and the warm start for the
    next tick (module doc, step 5). Returns (code, flag bits, n_active); code TICK_GENERIC if
    the result is not finite."""
    d, o, w, out = a.head[6], a.head[7], a.head[8], a.head[9]
    act = a.tail[0]
    nc = w.state[_S_NC]
    m = 3 * nc
    r = w.state[_S_R]
    bits = w.state[_S_BITS]
    mu = d.mu[:nc]
    f = w.f[:m]
    for j in range(m):
        f[j] = w.f0[j]
    if r > 0:
        if _finite_vector(x2, r) and _accepted(s2):
            Wx = w.c[:m]  # (free until the impulses below) W x2 by BLAS, as the general
            np.dot(w.W[:m * r].reshape((m, r)), x2, Wx)  # path's numpy product: same rounding
            for i in range(m):
                f[i] += Wx[i]
            _project_into(f, mu, o.k, o.coulomb, f, w.gscratch)
            if s2 != 1:
                bits |= _ITER_LIMIT
            w.state[_S_KEY2_NC] = nc
            w.state[_S_KEY2_R] = r
            for i in range(nc):
                w.key2_slots[i] = d.slot[i]
            _ar.copy_prefix(w.ffull, f, m)
        else:  # Stage II failed: keep Stage I's forces; the general path drops its solver
            bits |= _ITER_LIMIT
            w.state[_S_KEY2_R] = -1
        bits |= _MIN_NORM
    dt = o.dt
    c = w.c[:m]
    for j in range(m):
        c[j] = dt * f[j]
    tau = w.tau1
    v_next = w.vnext
    _recover_into(d.Minv, act, w.L, w.tau0, w.fstar, dt, w.J[:m], c, tau, v_next, w.gen,
                  w.rscratch)
    for a in range(tau.shape[0]):
        if not np.isfinite(tau[a]):
            return TICK_GENERIC, bits, 0
    for j in range(v_next.shape[0]):
        if not np.isfinite(v_next[j]):
            return TICK_GENERIC, bits, 0
    cN = w.cloc[0, :nc]
    cS = w.cloc[1, :nc]
    cT = w.cloc[2, :nc]
    for i in range(nc):
        cN[i] = c[i]
        cS[i] = c[nc + i]
        cT[i] = c[2 * nc + i]
    for i in range(nc):
        w.imp_raw[i, 0] = cN[i]
        w.imp_raw[i, 1] = cS[i]
        w.imp_raw[i, 2] = cT[i]
        if w.sep[i]:  # inert rows: reported as exactly zero (qp._solve_two_stage)
            cS[i] = 0.0
            cT[i] = 0.0
        if w.dropped[i, 0]:
            cS[i] = 0.0
        if w.dropped[i, 1]:
            cT[i] = 0.0
        if not (np.isfinite(cN[i]) and np.isfinite(cS[i]) and np.isfinite(cT[i])):
            return TICK_GENERIC, bits, 0
    _write_result(d, out, dt, tau, cN, cS, cT)
    n_active = 0
    for i in range(nc):
        if c[i] > 0.0:
            out.active_slots[n_active] = d.slot[i]
            n_active += 1
    w.prev_known[:] = False  # the general path's <method>_f: this tick's forces by slot
    for i in range(nc):
        sl = d.slot[i]
        w.prev_known[sl] = True
        w.prev_f[sl, 0] = f[i]
        w.prev_f[sl, 1] = f[nc + i]
        w.prev_f[sl, 2] = f[2 * nc + i]
    return TICK_OK, bits, n_active



@njit(cache=True)
def _guess_active(a, nc, k, coulomb, stage, guess):
    """The previous tick's active row sides of stage 1 / 2 mapped by candidate slot into
    ``guess`` (the rows of both stages are per contact: Stage I non-penetration row i, bound row
    nc + i, facets 2 nc + i k + j; Stage II bound row i, facets nc + i k + j). Returns True if
    any candidate had a known active set."""
    d, w = a.head[6], a.head[8]
    kk = k if coulomb else 0
    found = False
    base = 2 * nc if stage == 1 else nc
    ncon = base + nc * kk
    for r in range(ncon):
        guess[r] = 0
    for i in range(nc):
        sl = d.slot[i]
        if not w.act_known[sl, stage - 1]:
            continue
        found = True
        if stage == 1:
            guess[i] = w.prev_act1[sl, 0]
            guess[nc + i] = w.prev_act1[sl, 1]
            for j in range(kk):
                guess[base + i * kk + j] = w.prev_act1[sl, 2 + j]
        else:
            guess[i] = w.prev_act2[sl, 0]
            for j in range(kk):
                guess[base + i * kk + j] = w.prev_act2[sl, 1 + j]
    return found


@njit(cache=True)
def _keep_active(a, nc, k, coulomb, stage1_solved, stage2_solved):
    """This tick's active row sides by candidate slot (the next tick's guess)."""
    d, w = a.head[6], a.head[8]
    kk = k if coulomb else 0
    for sl in range(w.act_known.shape[0]):
        w.act_known[sl, 0] = False
        w.act_known[sl, 1] = False
    for i in range(nc):
        sl = d.slot[i]
        w.act_known[sl, 0] = stage1_solved
        w.prev_act1[sl, 0] = w.act1[i]
        w.prev_act1[sl, 1] = w.act1[nc + i]
        for j in range(kk):
            w.prev_act1[sl, 2 + j] = w.act1[2 * nc + i * kk + j]
        if stage2_solved:
            w.act_known[sl, 1] = True
            w.prev_act2[sl, 0] = w.act2[i]
            for j in range(kk):
                w.prev_act2[sl, 1 + j] = w.act2[nc + i * kk + j]


@njit(cache=True)
def qp_tick_active_set(a, q, v, qdd_des, warm):
    """The whole ``qp_coulomb`` / ``qp_noslip`` tick with the exact active-set solver
    (``qp_solver="active_set"``) in one compiled call: :func:`qp_tick_stage1`, Stage I by
    :func:`~wbc_dynamics.contact.qp.stage1_active_set` (the general path's),
    :func:`qp_tick_stage2`, Stage II by :func:`~wbc_dynamics.contact.dense_qp.dense_qp_kernel`,
    :func:`qp_tick_finish`. ``a``: the fixed arguments packed
    (:func:`~wbc_dynamics.kernels.fixed_args.fixed_args`, one pointer to unbox per call
    instead of ~100 arrays): ``a.head`` = (topo, tree, Sm, I6, gravity, geo, d, o, w, out),
    ``a.tail`` = (act, free, excluded, bx_R, bx_p). ``warm``: start each stage from the
    previous tick's active row sides mapped by candidate slot.

    Returns (nc, code, flag bits, n_active, Stage I status); code TICK_STAGE1_FAILED with the
    status for the fallback, nc < 0 for invalid q / v as :func:`qp_tick_stage1`.
    """
    o, w = a.head[7], a.head[8]
    nc, code, _fresh, _found = call_separately(qp_tick_stage1, (a, q, v, qdd_des, warm,
                                                                np.bool_(False)))
    if nc <= 0 or code != TICK_OK:
        return nc, code, 0, 0, 0
    k = o.k
    m = 3 * nc
    ncon1 = 2 * nc + (nc * k if o.coulomb else 0)
    P1 = w.P1d[:m * m].reshape((m, m))
    A1 = w.A1d[:ncon1 * m].reshape((ncon1, m))
    guess = w.warm[:ncon1]
    use = warm and _guess_active(a, nc, k, o.coulomb, np.int64(1), guess)
    w.state[_S_WARM_USED] = 1 if use else 0
    x1 = w.x1[:m]
    xb = w.x1b[:m]
    # Stage I: the proximal pass and its exact finish (qp.stage1_active_set, the general
    # path's implementation); guess receives the first pass's active set, the next tick's
    s1, _it, _kind = call_separately(stage1_active_set, (
        w.H[:m * m].reshape((m, m)), P1, w.q1[:m], A1, w.l1[:ncon1], w.u_inf[:ncon1],
        w.fstate[0], guess, use, not o.contact_velocity, o.recenter, o.max_iter, o.qp_tol,
        o.qp_dep_tol, w.qp_fwork, w.qp_iwork, x1, xb, w.q1r[:m], w.y[:ncon1], w.act1[:ncon1],
        guess))
    for r in range(ncon1):
        w.act1[r] = guess[r]
    code, r, _cont2 = call_separately(qp_tick_stage2, (a, x1, s1, xb, s1, np.bool_(True), warm))
    if code != TICK_OK:
        for sl in range(w.act_known.shape[0]):
            w.act_known[sl, 0] = False
            w.act_known[sl, 1] = False
        return nc, code, 0, 0, s1
    s2 = np.int64(0)
    x2 = w.x2[:max(r, 0)]
    if r > 0:
        ncon2 = nc + (nc * k if o.coulomb else 0)
        P2 = w.P2d[:r * r].reshape((r, r))
        A2 = w.A2d[:ncon2 * r].reshape((ncon2, r))
        guess2 = w.warm[:ncon2]
        use2 = warm and _guess_active(a, nc, k, o.coulomb, np.int64(2), guess2)
        s2, _it = call_separately(dense_qp_kernel, (P2, w.q2[:r], A2, w.l2[:ncon2],
                                                    w.u_inf[:ncon2], guess2, use2, o.max_iter,
                                                    o.qp_tol, o.qp_dep_tol, w.qp_fwork,
                                                    w.qp_iwork, x2, w.y[:ncon2],
                                                    w.act2[:ncon2]))
        if s2 != 1:  # an unsolved Stage II keeps Stage I's forces (qp._stage2)
            s2 = np.int64(0)
    code, bits, n_active = call_separately(qp_tick_finish, (a, x2, s2))
    if code == TICK_OK:  # (the general path keeps Stage I's only when it solved)
        _keep_active(a, nc, k, o.coulomb, s1 == 1, r > 0 and s2 == 1)
    return nc, code, bits, n_active, s1

class _Solver:
    """One OSQP solver on a fixed pattern with the value views it is updated from."""

    __slots__ = ("s", "px", "q", "ax", "lo", "zx", "zy", "rho0")

    def __init__(self, n: int, p_ptr, p_idx, px, a_ptr, a_idx, ax, q, lo,
                 settings: dict[str, Any]) -> None:
        ncon = lo.shape[0]
        P = sp.csc_matrix((px.copy(), p_idx, p_ptr), shape=(n, n))
        A = sp.csc_matrix((ax.copy(), a_idx, a_ptr), shape=(ncon, n))
        solver = osqp.OSQP()
        solver.setup(P, q.copy(), A, lo.copy(), np.full(ncon, _INF), **settings)
        self.s = solver._solver
        self.px, self.q, self.ax, self.lo = px, q, ax, lo
        self.zx, self.zy = np.zeros(n), np.zeros(ncon)
        self.rho0 = float(self.s.get_settings().rho)

    def update(self) -> None:
        """The values in the views, same pattern (``qp._QPSolver.update``; upper bounds
        unchanged)."""
        s = self.s
        s.update_data_vec(q=self.q, l=self.lo, u=None)
        s.update_data_mat(P_x=self.px, P_i=None, A_x=self.ax, A_i=None)

    def reset(self, x0) -> None:
        """The state of a fresh setup on the current data: initial rho, iterates ``x0`` (or 0)
        and zero duals."""
        self.s.update_rho(self.rho0)
        self.s.warm_start(self.zx if x0 is None else x0, self.zy)

    def solve(self):
        s = self.s
        s.solve()
        info = s.info
        return int(info.status_val), s.solution.x


class QPTick(_CompiledTick):
    """Compiled ``qp_coulomb`` / ``qp_noslip`` tick (module doc): the dense formulation of
    ``solve_qp_coulomb`` / ``solve_qp_noslip`` with the given options.

    Args:
        cm: the contact model (its ``data`` buffers are used).
        method: ``"qp_coulomb"`` or ``"qp_noslip"``.
        options: the solve's keyword options (validated by :func:`qp_tick`).
    """

    kernel = qp_tick_stage1
    flag_names = _QP_FLAG_NAMES

    def __init__(self, cm: ContactModel, method: str, options: dict[str, Any]) -> None:
        coulomb = method == "qp_coulomb"
        o = options
        k = int(o.get("friction_edges") or cm.friction_edges) if coulomb else 4
        gap = o.get("friction_gap" if coulomb else "noslip_gap")
        cap = cm.data.N.shape[0]
        form = o.get("formulation", "auto")
        active_set = o.get("qp_solver", "active_set") == "active_set"
        max_nc = (cap if form == "dense" or active_set
                  else min(cap, int(o.get("sparse_above", 8))))
        opts = QPOptions(
            margin=float(cm.margin), phi_deadband=float(cm.phi_deadband),
            passive_impact=bool(cm.passive_impact),
            separation_tolerance=float(cm.separation_tolerance), dt=float(cm.dt),
            coulomb=coulomb, k=k, sticking_correction=bool(o.get("sticking_correction", False)),
            sticking_gap=float(o.get("sticking_gap", 1e-6)), min_pivot=_min_pivot(cm, 100.0),
            friction_gap=-1.0 if gap is None else float(gap),
            tangential_floor=0.0 if coulomb else _min_pivot(
                cm, float(o.get("rank_mass_ratio", 0.0))),
            contact_velocity=o.get("stage1_objective", "kinetic_energy") == "contact_velocity",
            stage1_reg=float(o.get("stage1_reg", 1e-7)), stage2=bool(o.get("stage2", True)),
            stage2_reg=float(o.get("stage2_reg", 1e-9)), rank_tol=float(o.get("rank_tol", 1e-9)),
            max_nc=max_nc, active_set=active_set,
            recenter=bool(o.get("stage1_recenter", True)),
            max_iter=int(o.get("max_iter", 1500)), qp_tol=ACTIVE_SET_TOL,
            qp_dep_tol=ACTIVE_SET_DEP_TOL)
        nu = cm.actuated.shape[0]
        out = QPOutput(tau=np.zeros(nu), impulses=np.zeros((cap, 3)),
                       forces_world=np.zeros((cap, 3)),
                       active_slots=np.zeros(cap, dtype=np.int64))
        super().__init__(cm, opts, out)
        self.method = method
        self.coulomb, self.k = coulomb, k
        self.warm = bool(o.get("warm_start", True))
        eps = float(o.get("eps", 1e-7))
        eps2 = o.get("stage2_eps")
        max_iter = int(o.get("max_iter", 1500))
        polish = bool(o.get("polish", False))
        self.recenter = bool(o.get("stage1_recenter", True))
        self._set1 = _settings(eps, max_iter, self.warm, polish)
        self._set2 = _settings(eps if eps2 is None else float(eps2), max_iter, self.warm, polish)
        self.w = self._work(cm, max_nc, active_set)
        #: the same buffers as one pointer, what the compiled stages take (kernels/records.py)
        self.w_kernel = qp_work_record(self.w)
        self._s1: dict[int, _Solver] = {}
        self._s2: dict[tuple[int, int], _Solver] = {}
        self._v1 = {}  # per nc: Stage I views (px, q, ax, lo, qr, x0)
        for nc in range(1, 0 if active_set else max_nc + 1):
            w = self.w
            m = 3 * nc
            ncon = 2 * nc + (nc * k if coulomb else 0)
            self._v1[nc] = (w.p1x[:w.p1_off[nc + 1] - w.p1_off[nc]], w.q1[:m],
                            w.a1x[:w.a1_off[nc + 1] - w.a1_off[nc]], w.l1[:ncon], w.q1r[:m],
                            w.x0[:m])
        self._v2: dict[tuple[int, int], tuple] = {}
        #: our markers in the MethodState (see the module doc): ``<method>_key`` while this
        #: tick's solvers hold the warm start, ``<method>_f`` while the previous forces are in
        #: ``w.prev_f`` (an empty dict: the general path reads it as "no previous forces")
        self._marker = object()
        self._token: dict = {}
        self._kkey, self._fkey = f"{method}_key", f"{method}_f"
        self._exported: object = None
        self._e2 = self._e_rc = self._e3 = None
        self._stage_names: dict[int, tuple[str, ...]] = {}

    # ------------------------------------------------------------------ buffers
    def _work(self, cm: ContactModel, max_nc: int, active_set: bool) -> QPWork:
        cap = cm.data.N.shape[0]
        nv = cm.data.N.shape[1]
        nu = cm.actuated.shape[0]
        nf = cm.free.shape[0]
        k, coulomb = self.k, self.coulomb
        mcap = 3 * cap
        p_rows, p_cols, a_rows, a_cols = [], [], [], []
        p_off = np.zeros(cap + 2, dtype=np.int64)
        a_off = np.zeros(cap + 2, dtype=np.int64)
        self._pat1: dict[int, tuple] = {}
        for nc in range(1, 0 if active_set else max_nc + 1):  # OSQP's sparsity patterns
            m = 3 * nc
            lay = QPLayout(coulomb, nc, k, m, nc)
            p_ptr, p_idx, pr, pc = _dense_upper_pattern(m)
            mask = np.vstack([np.ones((nc, m), dtype=bool), lay.constraint_mask()])
            a_ptr, ar, ac = _pattern_from_mask(mask)
            self._pat1[nc] = (m, p_ptr, p_idx, a_ptr, ar)
            p_rows.append(pr)
            p_cols.append(pc)
            a_rows.append(ar)
            a_cols.append(ac)
            p_off[nc + 1] = p_off[nc] + pr.shape[0]
            a_off[nc + 1] = a_off[nc] + ar.shape[0]
        last = 0 if active_set else max_nc
        p_off[last + 2:] = p_off[last + 1]
        a_off[last + 2:] = a_off[last + 1]

        def cat(parts):
            return (np.ascontiguousarray(np.concatenate(parts), dtype=np.int64) if parts
                    else np.zeros(0, dtype=np.int64))

        nmax1 = int(max(np.diff(p_off).max(), 1))
        amax1 = int(max(np.diff(a_off).max(), 1))
        ncon1 = 2 * cap + (cap * k if coulomb else 0)
        ncon2 = cap + (cap * k if coulomb else 0)
        nslot = len(cm.slot_ids)
        # the active-set solver's buffers (size-1 placeholders for OSQP: same types)
        na, n1, n2 = (mcap, ncon1, ncon2) if active_set else (1, 1, 1)
        fw, iw = work_sizes(na, n1) if active_set else (1, 1)
        kk = k if coulomb else 0
        return QPWork(
            J=np.zeros((mcap, nv)), Jf=np.zeros((mcap, nf)), dlin=np.zeros(mcap),
            L=np.zeros((nu, nu)), tau0=np.zeros(nu), fstar=np.zeros(nv), qdd=np.zeros(nu),
            sep=np.zeros(cap, dtype=np.bool_), dropped=np.zeros((cap, 2), dtype=np.bool_),
            f0=np.zeros(mcap), W=np.zeros(mcap * mcap),
            imp_raw=np.zeros((cap, 3)), p1_rows=cat(p_rows), p1_cols=cat(p_cols), p1_off=p_off,
            a1_rows=cat(a_rows), a1_cols=cat(a_cols), a1_off=a_off, p1x=np.zeros(nmax1),
            q1=np.zeros(mcap), a1x=np.zeros(amax1), l1=np.zeros(ncon1), qlin=np.zeros(mcap),
            q1r=np.zeros(mcap), x0=np.zeros(mcap), p2x=np.zeros(mcap * (mcap + 1) // 2),
            q2=np.zeros(mcap), a2x=np.zeros(ncon2 * mcap), l2=np.zeros(ncon2),
            x2ws=np.zeros(mcap), prev_f=np.zeros((nslot, 3)),
            prev_known=np.zeros(nslot, dtype=np.bool_),
            last_slots=np.zeros(cap, dtype=np.int64), key2_slots=np.zeros(cap, dtype=np.int64),
            ffull=np.zeros(mcap), state=np.array([0, 0, 0, 0, -1, -1, 0, 0], dtype=np.int64),
            fstate=np.zeros(1), P1d=np.zeros(na * na), A1d=np.zeros(n1 * na),
            P2d=np.zeros(na * na), A2d=np.zeros(n2 * na), u_inf=np.full(n1, np.inf),
            x1=np.zeros(na), x1b=np.zeros(na), x2=np.zeros(na), y=np.zeros(n1),
            act1=np.zeros(n1, dtype=np.int64), act2=np.zeros(n2, dtype=np.int64),
            warm=np.zeros(n1, dtype=np.int64),
            prev_act1=np.zeros((nslot if active_set else 1, 2 + kk), dtype=np.int64),
            prev_act2=np.zeros((nslot if active_set else 1, 1 + kk), dtype=np.int64),
            act_known=np.zeros((nslot if active_set else 1, 2), dtype=np.bool_),
            qp_fwork=np.zeros(fw), qp_iwork=np.zeros(iw, dtype=np.int64),
            s2_fwork=np.zeros(max(mcap * (nf + 1) + nf + 2 + max(nu * mcap, ncon2),
                                  linear_term_work_size(mcap, nf))),
            H=np.zeros(mcap * mcap), Jv0=np.zeros(mcap), uf=np.zeros(mcap), v0=np.zeros(nv),
            Kff=np.zeros((nf, nf)), ufree=np.zeros(nf), G=np.zeros((nu, nu)),
            JK=np.zeros((mcap, nf)), rscratch=np.zeros(max(nu * (nf + 2), nu + nv)),
            lin=np.zeros(mcap),
            tau1=np.zeros(nu), vnext=np.zeros(nv), gen=np.zeros(nv), c=np.zeros(mcap),
            f=np.zeros(mcap), gscratch=np.zeros(cap), cloc=np.zeros((3, cap)))

    def _solver1(self, nc: int, fresh: bool, x0) -> _Solver:
        """Stage I's solver of ``nc`` contacts holding this tick's data."""
        sv = self._s1.get(nc)
        px, q, ax, lo, _qr, _x0 = self._v1[nc]
        if sv is None:  # first use of this contact count: the one setup
            m, p_ptr, p_idx, a_ptr, a_idx = self._pat1[nc]
            sv = _Solver(m, p_ptr, p_idx, px, a_ptr, a_idx, ax, q, lo, self._set1)
            self._s1[nc] = sv
            if x0 is not None:
                sv.s.warm_start(x0, None)
            return sv
        sv.update()
        if fresh:
            sv.reset(x0)
        return sv

    def _solver2(self, nc: int, r: int, cont: bool) -> _Solver:
        """Stage II's solver of (``nc`` contacts, nullity ``r``) holding this tick's data."""
        key = (nc, r)
        sv = self._s2.get(key)
        if sv is None:
            w = self.w
            ncon = nc + (nc * self.k if self.coulomb else 0)
            views = (w.p2x[:r * (r + 1) // 2], w.q2[:r], w.a2x[:ncon * r], w.l2[:ncon],
                     w.x2ws[:r])
            self._v2[key] = views
            p_ptr, p_idx, _pr, _pc = _dense_upper_pattern(r)
            a_ptr = np.arange(0, ncon * r + 1, ncon, dtype=np.int64)
            a_idx = np.tile(np.arange(ncon, dtype=np.int64), r)
            sv = _Solver(r, p_ptr, p_idx, views[0], a_ptr, a_idx, views[2], views[1], views[3],
                         self._set2)
            self._s2[key] = sv
            return sv
        sv.update()
        if cont:
            sv.s.warm_start(self._v2[key][4], None)
        else:
            sv.reset(None)
        return sv

    # ------------------------------------------------------------------ warm start
    def _adopt(self, mstate: MethodState) -> None:
        """Take the warm start over from the general path (or a reset / another tick): its
        previous forces by identity into ``w.prev_f``; its solvers dropped."""
        w = self.w
        data = mstate.data
        prev = data.get(self._fkey)
        if prev is not self._token and prev is not self._exported:
            w.prev_known[:] = False
            if isinstance(prev, tuple) and len(prev) == 3:
                pids, play, pf = prev
                for j, cid in enumerate(pids):
                    i = self._slot_of.get(cid)
                    if i is not None:
                        w.prev_known[i] = True
                        w.prev_f[i] = pf[play.rows_of_contact(j)]
        for name in ("s1", "s2", "key2", "ffull"):
            data.pop(f"{self.method}_{name}", None)
        w.state[_S_LAST_NC] = 0
        w.state[_S_KEY2_R] = -1
        w.act_known[:] = False
        data[self._kkey] = self._marker
        data[self._fkey] = self._token

    def export_warm(self, mstate: MethodState | None) -> None:
        """The previous forces in the general path's form (``<method>_f`` = (ids, layout,
        f)) before it runs; this tick's solvers keep theirs unless it solves in between."""
        if mstate is None or mstate.data.get(self._fkey) is not self._token:
            return
        w = self.w
        slots = np.flatnonzero(w.prev_known)
        n = slots.shape[0]
        ids = self.cm.ids_of(slots.astype(np.int64))
        f = np.concatenate([w.prev_f[slots, 0], w.prev_f[slots, 1], w.prev_f[slots, 2]])
        self._exported = (ids, QPLayout(self.coulomb, n, self.k, 3 * n, n), f)
        mstate.data[self._fkey] = self._exported

    # ------------------------------------------------------------------ the tick
    def run(self, q: np.ndarray, v: np.ndarray, qdd: np.ndarray,
            mstate: MethodState | None) -> bool:
        cm = self.cm
        w = self.w
        use_warm = mstate is not None
        cont_ok = map_warm = False
        if use_warm:
            if mstate.data.get(self._kkey) is not self._marker:
                self._adopt(mstate)
            cont_ok = map_warm = self.warm
            if mstate.data.get(self._fkey) is not self._token:
                mstate.data[self._fkey] = self._token  # (after export_warm)
        if self.options.active_set:
            return self._run_active_set(q, v, qdd, mstate, cont_ok)
        r_ = cm.robot
        if self._entry is None:
            if self._packed is None:
                self._pack()
            self._entry = bound_entry(qp_tick_stage1, (self._packed, q, v, qdd, cont_ok,
                                                       map_warm))
            # every entry point now (types only, nothing runs): no compilation in a later tick
            x = np.zeros(1)
            self._e_rc = bound_entry(_recenter_q, (x, w.qlin, 1.0, w.q1r))
            self._e2 = bound_entry(qp_tick_stage2, (self._packed, x, 0, x, 0, False, False))
            self._e3 = bound_entry(qp_tick_finish, (self._packed, x, 0))
        cm.excluded_mask()  # refreshes the mask (in place) if excluded_links changed
        call = self._entry if self._plain_args(q, v, qdd) else qp_tick_stage1
        nc, code, fresh, found = call(self._packed, q, v, qdd, cont_ok, map_warm)
        if nc < 0:
            r_._raise(-nc)
        if code != TICK_OK:
            return False
        views = self._v1[nc]
        # ---- Stage I (OSQP)
        x0 = views[5] if (fresh and found) else None
        s1 = self._solver1(nc, fresh, x0)
        sa, xa = s1.solve()
        xb, sb, second = xa, 0, False
        delta = float(w.fstate[0])
        if self.recenter and delta > 0.0 and sa == _SOLVED:
            if self._e_rc(xa, w.qlin, delta, w.q1r):
                s = s1.s
                s.update_data_vec(q=views[4], l=None, u=None)
                s.warm_start(xa, None)
                sb, xb = s1.solve()
                second = True
        # ---- Stage II data
        code, r, cont2 = self._e2(self._packed, xa, sa, xb, sb, second, cont_ok)
        if code == TICK_STAGE1_FAILED:
            return self._fallback(nc, sa, mstate)  # (an accepted re-centred pass is used)
        x2, s2 = xa, 0
        if r > 0:  # ---- Stage II (OSQP)
            s2_ = self._solver2(nc, r, cont2)
            s2, x2 = s2_.solve()
        code, bits, n_active = self._e3(self._packed, x2, s2)
        if code != TICK_OK:  # non-finite: the general path, with fresh solvers
            w.state[_S_LAST_NC] = 0
            w.state[_S_KEY2_R] = -1
            return False
        self.warm_start_used = bool(found) if fresh else use_warm and self.warm
        return self._accept(nc, bits, n_active, mstate)

    def _run_active_set(self, q: np.ndarray, v: np.ndarray, qdd: np.ndarray,
                        mstate: MethodState | None, warm: bool) -> bool:
        """The tick with the active-set solver: one compiled call (:func:`qp_tick_active_set`)."""
        cm = self.cm
        w = self.w
        r_ = cm.robot
        if self._entry is None:
            if self._packed is None:
                self._pack()
            self._entry = bound_entry(qp_tick_active_set, (self._packed, q, v, qdd, warm))
        cm.excluded_mask()  # refreshes the mask (in place) if excluded_links changed
        # other layouts / dtypes of q, v, qdd: numba's dispatcher checks (and converts) them
        call = self._entry if self._plain_args(q, v, qdd) else qp_tick_active_set
        nc, code, bits, n_active, s1 = call(self._packed, q, v, qdd, warm)
        if nc < 0:
            r_._raise(-nc)
        if code == TICK_STAGE1_FAILED and s1 in (_PRIMAL_INF, 9):
            return False  # no exact Stage I: the general path answers with OSQP (qp.py)
        if code == TICK_STAGE1_FAILED:
            return self._fallback(nc, s1, mstate)
        if code != TICK_OK:  # (a general-path solve in between resets the guess: _adopt)
            return False
        self.warm_start_used = bool(w.state[_S_WARM_USED])
        return self._accept(nc, bits, n_active, mstate)

    def _pack(self) -> None:
        """The kernels' fixed arguments, packed once (:func:`qp_tick_active_set`: ``a``); the
        same pack for both solvers (one compiled constructor, one type of every stage)."""
        cm, r_ = self.cm, self.cm.robot
        arrays = r_.kernel_arrays
        self._head = (arrays.topo, arrays.tree, arrays.Sm, arrays.I6, r_.gravity,
                      cm.geometry, cm.kernel_data, self.options, self.w_kernel, self.out)
        self._tail = (cm.actuated, cm.free, cm.excluded_mask(), self._no_box_R, self._no_box_p)
        self._dims = (r_.nq, r_.nv, cm.actuated.shape[0])
        self._packed = fixed_args(self._head, self._tail)

    def compile_parts(self) -> None:
        """Compile / load, without running anything, the tick's kernels that do not depend on
        the robot (``wbc_dynamics.compile_helper`` calls this on a stand-in model while the
        controller compiles the robot's kernels): the pack's constructor, the sticking
        correction and Stage II, with the argument types the fused tick calls them with. The
        fused tick then loads them from the cache instead of compiling them (the finish, which
        the controller compiles meanwhile: :meth:`compile_assembly`)."""
        super().compile_parts()
        compile_sticking_correction(self.cm)
        x = np.zeros(1)
        bound_entry(qp_tick_stage2, (self._packed, x, 0, x, 0, False, False))

    def compile_assembly(self) -> None:
        """The assembly (:meth:`_CompiledTick.compile_assembly`), then Stage I, which calls it
        (and the sticking correction, from the helper's cache), and the finish (force
        retrieval, active-set bookkeeping), compiled by type without running: the controller's
        share of the tick while the helper compiles the general path and Stage II."""
        super().compile_assembly()
        cm, r_ = self.cm, self.cm.robot
        arrays = r_.kernel_arrays
        # the pack's type, not a pack: its constructor is the helper's (compile_parts)
        pack = pack_type((arrays.topo, arrays.tree, arrays.Sm, arrays.I6, r_.gravity,
                          cm.geometry, cm.kernel_data, self.options, self.w_kernel, self.out),
                         (cm.actuated, cm.free, cm.excluded_mask(), self._no_box_R,
                          self._no_box_p))
        x = numba.typeof(np.zeros(1))
        b, i = numba.types.boolean, numba.types.int64
        qp_tick_stage1.compile((pack, x, x, x, b, b))
        qp_tick_finish.compile((pack, x, i))
        if self.options.active_set:
            _guess_active.compile((pack, i, i, b, i, numba.typeof(self.w.warm)))
            _keep_active.compile((pack, i, i, b, b, b))

    def _accept(self, nc: int, bits: int, n_active: int, mstate: MethodState | None) -> bool:
        """A solved tick: flags, contact identities and the method state (as ``solve``; the
        impulses before the force retrieval's clean-up, ``w.imp_raw``)."""
        self._solved(nc, bits, n_active, mstate, self.w.imp_raw)
        return True

    def _fallback(self, nc: int, status: int, mstate: MethodState | None) -> bool:
        """Stage I not accepted: ``dispatch.fallback_result`` (the previous torques, else the
        contact-free inverse dynamics of the accelerations solved for), flags as the general
        path sets them; the MethodState keeps the previous tick's contacts and torques."""
        cm, o, w = self.cm, self.out, self.w
        prev = None if mstate is None else mstate.data.get("tau")
        nu = o.tau.shape[0]
        if prev is not None and prev.shape == (nu,) and np.all(np.isfinite(prev)):
            o.tau[:] = prev
        elif np.all(np.isfinite(w.tau0)):
            o.tau[:] = w.tau0  # dispatch.free_dof_id (= the reduced dynamics' tau0)
        else:
            o.tau[:] = 0.0
        o.impulses[:nc] = 0.0
        o.forces_world[:nc] = 0.0
        bits = int(w.state[_S_BITS])
        key = (status, bits)
        flags = self._stage_names.get(key)
        if flags is None:
            names = ["fallback"]
            if status in (_PRIMAL_INF, _PRIMAL_INF_INACC):
                names.append("infeasible")
            if status == _MAX_ITER:
                names.append("iteration_limit")
            if bits & _ROWS_DROPPED:
                names.append("rows_dropped")
            if bits & _CORRECTED:
                names.append("inconsistent_corrected")
            if bits & _STICKING_FAILED:
                names.append("sticking_correction_failed")
            flags = self._stage_names[key] = tuple(names)
        self.nc = nc
        self.flags = flags
        self.warm_start_used = False
        self._ids = cm.ids_of(cm.data.slot[:nc])
        return True


def qp_tick(cm: ContactModel, method: str, options: dict[str, Any]) -> QPTick | None:
    """The compiled tick of ``qp_coulomb`` / ``qp_noslip`` with ``solve``'s keyword
    ``options``, or None if an option has no compiled form or is invalid (then the general path
    runs and reports it)."""
    common = {"stage2", "warm_start", "eps", "max_iter", "polish", "stage2_reg", "rank_tol",
              "stage1_reg", "stage2_eps", "formulation", "sparse_above", "stage1_objective",
              "stage1_recenter", "sticking_correction", "sticking_gap", "qp_solver"}
    if method == "qp_coulomb":
        allowed = common | {"friction_edges", "friction_gap"}
        gap = options.get("friction_gap")
    elif method == "qp_noslip":
        allowed = common | {"noslip_gap", "rank_mass_ratio"}
        gap = options.get("noslip_gap")
    else:
        return None
    if cm.bodies or not set(options) <= allowed:
        return None
    if gap is not None and not (isinstance(gap, int | float) and np.isfinite(gap)):
        return None
    if gap is not None and gap < 0.0:
        return None  # a negative gap: no friction anywhere -- left to the general path
    if options.get("stage1_objective", "kinetic_energy") not in STAGE1_OBJECTIVES:
        return None
    if options.get("formulation", "auto") not in ("auto", "dense"):
        return None
    if options.get("qp_solver", "active_set") not in ("active_set", "osqp"):
        return None
    k = options.get("friction_edges")
    if method == "qp_coulomb" and k is not None and (int(k) != k or k < 4 or k % 2):
        return None
    ratio = options.get("rank_mass_ratio", 0.0)
    if not (isinstance(ratio, int | float) and np.isfinite(ratio) and ratio >= 0.0):
        return None
    for name in ("eps", "stage2_reg", "rank_tol", "stage1_reg", "sticking_gap"):
        val = options.get(name)
        if val is not None and not (isinstance(val, int | float) and np.isfinite(val)):
            return None
    return QPTick(cm, method, options)

