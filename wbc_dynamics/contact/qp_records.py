"""The named records and constants of the ``qp_coulomb`` / ``qp_noslip`` flow (Zapolsky &
Drumwright, Sec. 6): its options (:class:`QPOptions`), its buffers (:class:`QPWork` and its
one-pointer record), the variable / row layout of the QPs (:class:`QPLayout`), the flag bits
with their one name table (:data:`QP_FLAG_NAMES`) and the indices of ``QPWork.state``. The
assembled problem's arrays are the compiled solves' common :class:`~.dispatch.ContactArrays`.

Shared by the compiled flow (:mod:`.qp_flow`), the compiled tick (:mod:`.qp_tick`), the OSQP
glue (:mod:`.qp_osqp`) and the Python entry (:mod:`.qp`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref

from ..kernels.records import RecordType, define_record
from .dense_qp import work_sizes
from .dispatch import ContactArrays
from .problem import ContactProblem
from .qp_kernels import _constraint_matrix, linear_term_work_size

__all__ = ["STAGE1_OBJECTIVES", "QP_SOLVERS", "ACTIVE_SET_TOL", "ACTIVE_SET_DEP_TOL", "QPLayout",
           "TICK_STAGE1_FAILED", "QP_FLAG_NAMES", "QPOptions", "QPWork", "QPWorkRecord",
           "qp_work_record", "new_qp_work", "flag_names", "fallback_flag_names"]

#: Stage I objectives: ``"kinetic_energy"`` = eq. (69) as written (gradient w.r.t. the impulses
#: ``J_f (v+_f + M_ff^-1 M_fa qdot_des)``); ``"contact_velocity"`` = the same QP with the linear
#: term replaced so that its gradient is the contact velocity ``J v+``, with ``phi/dt`` added on
#: the normal rows (maximal dissipation at the contacts: the KKT conditions are those of the
#: complementarity-free model (11)/(29)-(33) with the actuated velocities prescribed, and a
#: candidate that is still apart gets normal force only when (70) binds). Both objectives
#: coincide when ``qdot_des = 0`` and ``phi = 0``. The active-set solver finishes Stage I
#: exactly for the kinetic-energy objective only (module docstring).
STAGE1_OBJECTIVES = ("kinetic_energy", "contact_velocity")

#: QP solvers of both stages: ``"active_set"`` = the exact dense Goldfarb-Idnani method of
#: :mod:`.dense_qp` (reduced dense formulation only; warm-started with the previous active set);
#: ``"osqp"`` = OSQP (ADMM to tolerance ``eps``; dense or lifted sparse formulation).
QP_SOLVERS = ("active_set", "osqp")

#: the active-set solver's relative primal feasibility and linear-dependence tolerances
ACTIVE_SET_TOL = 1e-11
ACTIVE_SET_DEP_TOL = 1e-11

_INF = np.inf
_OSQP_INF = 1e30
# OSQP status values (osqp >= 1.0, osqp.interface.SolverStatus)
_SOLVED, _SOLVED_INACCURATE = 1, 2
_PRIMAL_INF, _PRIMAL_INF_INACC = 3, 4
_MAX_ITER, _TIME_LIMIT = 7, 8
_NOT_PD = 9
_ACCEPT = (_SOLVED, _SOLVED_INACCURATE, _MAX_ITER, _TIME_LIMIT)


@dataclass
class QPLayout:
    """Variable/constraint layout of one contact set.

    Variables (force units [N]): ``[f_N (nc), f_S (nc), f_T (nc)]`` for both methods;
    ``f_N >= 0``. Coulomb: the k-edge pyramid (72) in facet form, ``k`` rows per contact
    ``mu_i cos(pi/k) f_Ni - cos(th_j) f_Si - sin(th_j) f_Ti >= 0``, ``th_j = (2j+1) pi / k``
    (contact-major), which is exactly the set ``{sum_j beta_j d_j : beta >= 0,
    sum beta <= mu f_N}`` of eq. (72) with the edges ``d_j`` of :meth:`ContactProblem.pyramid`.
    """

    coulomb: bool
    nc: int
    k: int
    m: int
    nb: int

    @classmethod
    def make(cls, problem: ContactProblem, coulomb: bool, k: int) -> QPLayout:
        nc = problem.nc
        return cls(coulomb, nc, k, 3 * nc, nc)

    @property
    def ncon(self) -> int:
        """Rows of C: nc bound rows, then nc*k facet rows (coulomb)."""
        return self.nb + (self.nc * self.k if self.coulomb else 0)

    def constraint_block(self, mu: np.ndarray) -> np.ndarray:
        """C with ``C f >= 0``."""
        return _constraint_matrix(mu, self.nc, self.k, self.coulomb, False)

    def constraint_mask(self) -> np.ndarray:
        """Fixed sparsity pattern of C (independent of mu and of zero trigonometric values)."""
        return _constraint_matrix(np.ones(self.nc), self.nc, self.k, self.coulomb,
                                  True) != 0.0

    def to_local(self, f: np.ndarray) -> np.ndarray:
        """(nc, 3) (n, s, t) components of the variables ``f``."""
        nc = self.nc
        return np.column_stack([f[:nc], f[nc:2 * nc], f[2 * nc:]])

    def rows_of_contact(self, i: int) -> np.ndarray:
        nc = self.nc
        return np.array([i, nc + i, 2 * nc + i])


# ------------------------------------------------------------- flags and buffers of the flow

#: Stage I was not accepted (OSQP failed): the documented fallback
TICK_STAGE1_FAILED = 2

# flag bits, in the order of the flags (Stage I / II iteration limit, min-norm,
# qp_noslip's dropped tangential rows, then the sticking correction's mark)
_ITER_LIMIT = 1
_MIN_NORM = 2
_CORRECTED = 4
_STICKING_FAILED = 8
_ROWS_DROPPED = 16
#: the flags of the flow's bits, in the order a result lists them (the one table of both paths)
QP_FLAG_NAMES = ((_ITER_LIMIT, "iteration_limit"), (_MIN_NORM, "min_norm"),
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
_S_IT = 8         # active set: iterations (active-set changes) of both stages
_S_KIND = 9       # active set: Stage I's result (2 exact, 1 re-centred, 0 proximal)
_S_S1 = 10        # active set: Stage I's status (dense_qp: 1 solved, 3 infeasible, ...)
_S_S2 = 11        # active set: Stage II's status (0: not run)
_N_STATE = 12


class QPOptions(NamedTuple):
    """Options of the compiled flow (those of ``solve_qp_coulomb`` / ``solve_qp_noslip`` and,
    for the compiled tick, the contact model).

    ``coulomb``: the k-facet pyramid (``qp_coulomb``) or free tangential impulses (``qp_noslip``);
    ``friction_gap`` [m] (+inf: None; ``noslip_gap`` of ``qp_noslip``); ``tangential_floor`` [1/kg]
    ``qp_noslip``'s scale-aware rank rule on the tangential rows (``lcp_noslip.min_pivot`` of its
    ``rank_mass_ratio``; 0: off); ``sticking_correction`` with ``sticking_gap`` [m] and Alg. 1's
    floor ``min_pivot`` [1/kg]; ``contact_velocity``: ``stage1_objective == "contact_velocity"``;
    ``stage1_reg``, ``stage2_reg``, ``rank_tol`` relative; ``max_nc``: the dense formulation up to
    this many contacts (the compiled tick; more: ``solve``'s sparse one); ``active_set``:
    ``qp_solver == "active_set"`` (the whole method one compiled call, :func:`qp_active_set`);
    ``recenter``: ``stage1_recenter`` (with the active-set solver: where Stage I's exact finish
    does not end, :func:`stage1_active_set`); ``max_iter`` the solver's iteration limit,
    ``qp_tol`` / ``qp_dep_tol`` its tolerances (:data:`ACTIVE_SET_TOL` / ``ACTIVE_SET_DEP_TOL``:
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
    (``MethodState.impulses``).

    OSQP values in pattern order: Stage I ``p1x``, ``q1``, ``a1x``, ``l1`` (patterns of each
    contact count: ``p1_rows``/``p1_cols`` from ``p1_off[nc]``, ``a1_rows``/``a1_cols`` from
    ``a1_off[nc]``), ``qlin`` its linear term, ``q1r`` the re-centred one, ``x0`` the mapped
    warm start; Stage II ``p2x`` (dense upper triangle), ``q2``, ``a2x`` (dense, column-major),
    ``l2`` and ``x2ws`` its warm start.

    Across ticks: ``prev_f`` (n_slots, 3) / ``prev_known`` the previous forces by candidate slot
    (OSQP's mapped warm start); ``last_slots`` (Stage I key), ``key2_slots`` and
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
    Householder scales and J_a^T W; before them the workspace of ``_linear_term_varies``
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


define_record(QPWorkRecord, QPWorkRecordType, QPWork)


@njit(cache=True)
def qp_work_record(w):
    """The :class:`QPWorkRecord` of the :class:`QPWork` ``w`` (compiled, cached)."""
    return QPWorkRecord(*w)


# --------------------------------------------------------------------------- the flow's arrays
#: The flow's arrays are the compiled solves' common :class:`~.dispatch.ContactArrays`. The
#: flow's former record of its own keeps its name here: kernel cache indexes on disk written
#: before name it by this path, and numba unpickles an index before it compares the index's
#: source stamp, so a missing name would fail the kernel's load instead of skipping the stale
#: index.
QPArrays = ContactArrays


def new_qp_work(cap: int, nv: int, nu: int, nf: int, nslot: int, k: int, coulomb: bool,
                active_set: bool, osqp_patterns: tuple | None = None) -> QPWork:
    """Buffers of the compiled flow for up to ``cap`` contacts of ``nv`` dofs (``nu``
    actuated, ``nf`` free), ``nslot`` warm-start slots and the pyramid of ``k`` facets
    (``coulomb``). ``active_set``: the active-set solver's buffers (else size-1 placeholders
    of the same types); ``osqp_patterns``: Stage I's OSQP sparsity patterns per contact count
    (``p1_rows``, ``p1_cols``, ``p1_off``, ``a1_rows``, ``a1_cols``, ``a1_off``; None: no
    OSQP)."""
    mcap = 3 * cap
    if osqp_patterns is None:
        empty = np.zeros(0, dtype=np.int64)
        offs = np.zeros(cap + 2, dtype=np.int64)
        osqp_patterns = (empty, empty, offs, empty, empty, offs)
    p1_rows, p1_cols, p_off, a1_rows, a1_cols, a_off = osqp_patterns
    nmax1 = int(max(np.diff(p_off).max(), 1))
    amax1 = int(max(np.diff(a_off).max(), 1))
    ncon1 = 2 * cap + (cap * k if coulomb else 0)
    ncon2 = cap + (cap * k if coulomb else 0)
    na, n1, n2 = (mcap, ncon1, ncon2) if active_set else (1, 1, 1)
    fw, iw = work_sizes(na, n1) if active_set else (1, 1)
    kk = k if coulomb else 0
    ns = nslot if active_set else 1
    state = np.zeros(_N_STATE, dtype=np.int64)
    state[_S_KEY2_R] = -1
    state[_S_R] = -1
    return QPWork(
        J=np.zeros((mcap, nv)), Jf=np.zeros((mcap, nf)), dlin=np.zeros(mcap),
        L=np.zeros((nu, nu)), tau0=np.zeros(nu), fstar=np.zeros(nv), qdd=np.zeros(nu),
        sep=np.zeros(cap, dtype=np.bool_), dropped=np.zeros((cap, 2), dtype=np.bool_),
        f0=np.zeros(mcap), W=np.zeros(mcap * mcap),
        imp_raw=np.zeros((cap, 3)), p1_rows=p1_rows, p1_cols=p1_cols, p1_off=p_off,
        a1_rows=a1_rows, a1_cols=a1_cols, a1_off=a_off, p1x=np.zeros(nmax1),
        q1=np.zeros(mcap), a1x=np.zeros(amax1), l1=np.zeros(ncon1), qlin=np.zeros(mcap),
        q1r=np.zeros(mcap), x0=np.zeros(mcap), p2x=np.zeros(mcap * (mcap + 1) // 2),
        q2=np.zeros(mcap), a2x=np.zeros(ncon2 * mcap), l2=np.zeros(ncon2),
        x2ws=np.zeros(mcap), prev_f=np.zeros((nslot, 3)),
        prev_known=np.zeros(nslot, dtype=np.bool_),
        last_slots=np.zeros(cap, dtype=np.int64), key2_slots=np.zeros(cap, dtype=np.int64),
        ffull=np.zeros(mcap), state=state,
        fstate=np.zeros(1), P1d=np.zeros(na * na), A1d=np.zeros(n1 * na),
        P2d=np.zeros(na * na), A2d=np.zeros(n2 * na), u_inf=np.full(n1, np.inf),
        x1=np.zeros(na), x1b=np.zeros(na), x2=np.zeros(na), y=np.zeros(n1),
        act1=np.zeros(n1, dtype=np.int64), act2=np.zeros(n2, dtype=np.int64),
        warm=np.zeros(n1, dtype=np.int64),
        prev_act1=np.zeros((ns, 2 + kk), dtype=np.int64),
        prev_act2=np.zeros((ns, 1 + kk), dtype=np.int64),
        act_known=np.zeros((ns, 2), dtype=np.bool_),
        qp_fwork=np.zeros(fw), qp_iwork=np.zeros(iw, dtype=np.int64),
        s2_fwork=np.zeros(max(mcap * (nf + 1) + nf + 2 + max(nu * mcap, ncon2),
                              linear_term_work_size(mcap, nf))),
        H=np.zeros(mcap * mcap), Jv0=np.zeros(mcap), uf=np.zeros(mcap), v0=np.zeros(nv),
        Kff=np.zeros((nf, nf)), ufree=np.zeros(nf), G=np.zeros((nu, nu)),
        JK=np.zeros((mcap, nf)), rscratch=np.zeros(max(nu * (nf + 2), nu + nv)),
        lin=np.zeros(mcap),
        tau1=np.zeros(nu), vnext=np.zeros(nv), gen=np.zeros(nv), c=np.zeros(mcap),
        f=np.zeros(mcap), gscratch=np.zeros(cap), cloc=np.zeros((3, cap)))


def flag_names(bits: int) -> tuple[str, ...]:
    """The flags of the compiled flow's bits (:data:`QP_FLAG_NAMES`, in their order)."""
    return tuple(name for bit, name in QP_FLAG_NAMES if bits & bit)


def fallback_flag_names(status: int, bits: int) -> tuple[str, ...]:
    """The flags of a Stage I failure with solver status ``status`` and the flow's ``bits``
    so far (the documented fallback: ``fallback``, ``infeasible`` / ``iteration_limit``, then
    the corrections' flags)."""
    names = ["fallback"]
    if status in (_PRIMAL_INF, _PRIMAL_INF_INACC):
        names.append("infeasible")
    if status == _MAX_ITER:
        names.append("iteration_limit")
    return (*names, *flag_names(bits & ~(_ITER_LIMIT | _MIN_NORM)))


def _status_name(s: int) -> str:
    return {1: "solved", 2: "solved_inaccurate", 3: "primal_infeasible",
            4: "primal_infeasible_inaccurate", 5: "dual_infeasible",
            6: "dual_infeasible_inaccurate", 7: "max_iter_reached", 8: "time_limit_reached",
            9: "non_convex", 10: "sigint", 11: "unsolved"}.get(s, f"status_{s}")
