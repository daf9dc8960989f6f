"""The ``qp_coulomb`` / ``qp_noslip`` control tick as compiled code: the assembly, then the
method's compiled flow of :mod:`.qp`.

The method is one compiled flow on the assembled problem (:class:`~.dispatch.ContactArrays`:
M^-1, h, v, the N/S/T rows, phi, mu, the desired accelerations, the dof indices and warm-start
slots) with named options (:class:`~.qp.QPOptions`) and buffers (:class:`~.qp.QPWork`):
``solve`` packs a :class:`~wbc_dynamics.contact.problem.ContactProblem` into it, this tick fills
it with views of its candidate buffers (:func:`~.dispatch._tick_arrays`, no copy). The tick
adds the kinematics pass, every contact candidate with its rows, M^-1 and h
(:func:`~wbc_dynamics.contact.geometry.assemble_kernel`) and the passive impact before the flow,
and the world forces and active slots after it.

With the default ``qp_solver="active_set"`` the whole tick is one compiled call,
:func:`qp_tick_active_set`: the assembly and :func:`~.qp.qp_active_set` (both stages solved
exactly by the compiled Goldfarb-Idnani method, warm-started with the previous tick's active row
sides mapped by candidate slot; no Python between the stages, no OSQP). With
``qp_solver="osqp"`` the flow's stages run as three compiled calls around the OSQP calls:

1. :func:`qp_tick_stage1` -- the assembly, then :func:`~.qp.qp_prepare`: the sticking
   correction (Sec. 4.5 QP), the ``friction_gap`` / ``noslip_gap`` rows (eq. (34)),
   ``qp_noslip``'s scale-aware rank rule, the reduced dynamics (eqs. (85)-(94)) and Stage I's
   OSQP data in the fixed sparsity pattern of the contact count; the warm start mapped by
   contact identity when the contact set changed.
2. OSQP: update the Stage I solver of this contact count in place and solve; the proximal
   re-centring solve (option ``stage1_recenter``; its linear term from :func:`_recenter_q`).
3. :func:`qp_tick_stage2` (:func:`~.qp.qp_stage2`) -- projection of the Stage I impulses,
   torques of the Stage I solution (eq. (90)), the nullspace W and Stage II's data in place.
4. OSQP: update the Stage II solver of (contact count, nullity) in place and solve.
5. :func:`qp_tick_finish` (:func:`~.qp.qp_finish`) -- projection, ``tau`` and ``v+`` (eqs.
   (90), (37)), the flags as bits and the warm start for the next tick; the outputs.

OSQP solvers (:class:`~.qp.OSQPStages`, the same solves as ``solve``'s): here one Stage I
solver per contact count and one Stage II solver per (contact count, nullity), set up once on
first use and afterwards only updated in place; ``solve`` sets a solver up again when the
contact set changes, here a set change resets the solver of that count to the state a fresh
setup has (a fresh setup to rounding error, same iteration counts). While the set is unchanged
both continue from OSQP's previous iterates, so the tick equals ``build`` + ``solve`` to
rounding error there and to solver tolerance across set changes (``test_contact_tick.py``
checks it tick by tick on random states).

The warm start lives in the tick's buffers while consecutive ticks are compiled ones; the
:class:`~wbc_dynamics.contact.problem.MethodState` holds markers (``<method>_key``,
``<method>_f``) that make the general path set up fresh solvers (mapped from the previous forces
after :meth:`QPTick.export_warm`) if it runs in between, and make this tick map the general
path's forces by identity afterwards. A Stage I failure returns the documented fallback of
``solve`` (previous torques, else the contact-free inverse dynamics; flags ``fallback``,
``infeasible`` / ``iteration_limit``). Left to the general path (``run`` returns False): no
contact candidate, more contacts than ``sparse_above`` (the lifted sparse formulation), a
singular actuated block of M^-1, a non-finite result after an accepted solve, and (active-set
solver) a Stage I it proves infeasible, which ``solve`` answers with OSQP.

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
from numba import njit

from ..kernels.fixed_args import pack_type
from ..kernels.linalg import bound_entry
from ..kernels.separate import call_separately
from .dispatch import ContactArrays, _tick_arrays
from .geometry import ContactModel
from .problem import MethodState
from .qp_flow import _guess_active, _keep_active, qp_active_set, qp_finish, qp_prepare, qp_stage2
from .qp_kernels import recenter_q
from .qp_osqp import OSQPStages, _settings, osqp_stage1_patterns
from .qp_records import (
    _INF,
    _NOT_PD,
    _PRIMAL_INF,
    _S_BITS,
    _S_KEY2_R,
    _S_LAST_NC,
    _S_NC,
    _S_S1,
    _S_WARM_USED,
    ACTIVE_SET_DEP_TOL,
    ACTIVE_SET_TOL,
    QP_FLAG_NAMES,
    STAGE1_OBJECTIVES,
    TICK_STAGE1_FAILED,
    QPLayout,
    QPOptions,
    QPWork,
    fallback_flag_names,
    new_qp_work,
    qp_work_record,
)
from .tick_base import (
    TICK_GENERIC,
    TICK_OK,
    ContactTickArgs,
    _assemble_packed,
    _CompiledTick,
    _min_pivot,
    _write_result,
    compile_sticking_correction,
)

__all__ = ["QPOptions", "QPOutput", "QPWork", "QPTick", "QPTickArgs", "qp_tick",
           "qp_tick_stage1", "qp_tick_stage2", "qp_tick_finish", "TICK_STAGE1_FAILED"]

#: The fixed arguments of the QP ticks: :class:`~.tick_base.ContactTickArgs` (``options`` a
#: :class:`~.qp.QPOptions`, ``out`` a :class:`QPOutput`) and ``work``, the flow's
#: :class:`~.qp.QPWork` record.
QPTickArgs = NamedTuple("QPTickArgs", [*ContactTickArgs.__annotations__.items(), ("work", Any)])

class QPOutput(NamedTuple):
    """Outputs (rows ``0..nc-1`` valid): ``tau`` (nu,) [N m] in the actuated order,
    ``impulses`` (cap, 3) [N s] local (n, s, t), ``forces_world`` (cap, 3) [N],
    ``active_slots`` (cap,) the slots with ``c_N > 0`` in row order."""

    tau: np.ndarray
    impulses: np.ndarray
    forces_world: np.ndarray
    active_slots: np.ndarray

@njit(cache=True)
def qp_tick_stage1(a, q, v, qdd_des, cont_ok, map_warm):
    """Assembly (module doc, step 1), then :func:`~wbc_dynamics.contact.qp.qp_prepare` on it.

    ``a``: the fixed arguments packed as for :func:`qp_tick_active_set` (every stage takes the
    pack, not its NamedTuples: module doc, last paragraph). Returns (nc, code, fresh, found)
    (:func:`~wbc_dynamics.contact.qp.qp_prepare`); nc < 0 is ``-status`` of the core kernels
    (invalid q / v), code ``TICK_GENERIC`` also for no candidate or more than ``max_nc``.
    """
    o, w = a.options, a.work
    nc = _assemble_packed(a, q, v)
    if nc <= 0 or nc > o.max_nc:
        return nc, TICK_GENERIC, False, False
    p = _tick_arrays(a, nc, qdd_des)
    code, fresh, found = call_separately(qp_prepare, (p, o, w, cont_ok, map_warm))
    return nc, code, fresh, found


@njit(cache=True)
def qp_tick_stage2(a, xa, sa, xb, sb, second, cont_ok):
    """:func:`~wbc_dynamics.contact.qp.qp_stage2` on this tick's problem (module doc, step 3)."""
    o, w = a.options, a.work
    p = _tick_arrays(a, w.state[_S_NC], w.qdd)
    return call_separately(qp_stage2, (p, o, w, xa, sa, xb, sb, second, cont_ok))


@njit(cache=True)
def _tick_output(a, nc):
    """The flow's result (``w.tau1``, ``w.cloc``) into the tick's outputs with the world forces
    (frames of the candidates) and the active slots; returns their count."""
    d, o, w, out = a.data, a.options, a.work, a.out
    _write_result(d, out, o.dt, w.tau1, w.cloc[0, :nc], w.cloc[1, :nc], w.cloc[2, :nc])
    n_active = 0
    for i in range(nc):
        if w.c[i] > 0.0:
            out.active_slots[n_active] = d.slot[i]
            n_active += 1
    return n_active


@njit(cache=True)
def qp_tick_finish(a, x2, s2):
    """:func:`~wbc_dynamics.contact.qp.qp_finish` and the outputs (module doc, step 5).
    Returns (code, flag bits, n_active); code TICK_GENERIC if the result is not finite."""
    o, w = a.options, a.work
    nc = w.state[_S_NC]
    p = _tick_arrays(a, nc, w.qdd)
    code, bits = call_separately(qp_finish, (p, o, w, x2, s2))
    if code != TICK_OK:
        return code, bits, 0
    return code, bits, _tick_output(a, nc)


@njit(cache=True)
def qp_tick_active_set(a, q, v, qdd_des, warm):
    """The whole ``qp_coulomb`` / ``qp_noslip`` tick with the exact active-set solver
    (``qp_solver="active_set"``) in one compiled call: the assembly, then the method's compiled
    flow :func:`~wbc_dynamics.contact.qp.qp_active_set` on it, then the outputs. ``a``: the
    fixed arguments packed (:func:`~wbc_dynamics.kernels.fixed_args.fixed_args`, one pointer
    to unbox per call instead of ~100 arrays), fields of :class:`QPTickArgs`. ``warm``: start
    each stage from the previous tick's active row sides mapped by candidate slot.

    Returns (nc, code, flag bits, n_active, Stage I status); code TICK_STAGE1_FAILED with the
    status for the fallback, nc < 0 for invalid q / v as :func:`qp_tick_stage1`.
    """
    o, w = a.options, a.work
    nc = _assemble_packed(a, q, v)
    if nc <= 0 or nc > o.max_nc:
        return nc, TICK_GENERIC, 0, 0, 0
    p = _tick_arrays(a, nc, qdd_des)
    code, bits = call_separately(qp_active_set, (p, o, w, warm))
    if code != TICK_OK:
        return nc, code, 0, 0, w.state[_S_S1]
    return nc, code, bits, _tick_output(a, nc), w.state[_S_S1]


class QPTick(_CompiledTick):
    """Compiled ``qp_coulomb`` / ``qp_noslip`` tick (module doc): the dense formulation of
    ``solve_qp_coulomb`` / ``solve_qp_noslip`` with the given options.

    Args:
        cm: the contact model (its ``data`` buffers are used).
        method: ``"qp_coulomb"`` or ``"qp_noslip"``.
        options: the solve's keyword options (validated by :func:`qp_tick`).
    """

    kernel = qp_tick_stage1
    flag_names = QP_FLAG_NAMES

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
            friction_gap=_INF if gap is None else float(gap),
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
        self.w = self._work(cm, max_nc, active_set)
        #: the same buffers as one pointer, what the compiled stages take (kernels/records.py)
        self.w_kernel = qp_work_record(self.w)
        #: the OSQP solves between the stages: one solver per contact count
        self._osqp = OSQPStages(
            self.w, k, coulomb, self._pat1, _settings(eps, max_iter, self.warm, polish),
            _settings(eps if eps2 is None else float(eps2), max_iter, self.warm, polish),
            bool(o.get("stage1_recenter", True)), True)
        self._s1 = self._osqp.s1  # (the Stage I solvers by contact count)
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
        """The flow's buffers (:func:`~wbc_dynamics.contact.qp.new_qp_work`) for the model's
        candidates and slots, with OSQP's Stage I patterns of each contact count."""
        cap = cm.data.N.shape[0]
        pats, self._pat1 = osqp_stage1_patterns(cap, 0 if active_set else max_nc, self.k,
                                                self.coulomb)
        return new_qp_work(cap, cm.data.N.shape[1], cm.actuated.shape[0], cm.free.shape[0],
                           len(cm.slot_ids), self.k, self.coulomb, active_set, pats)

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
            self._e_rc = bound_entry(recenter_q, (x, w.qlin, 1.0, w.q1r))
            self._e2 = bound_entry(qp_tick_stage2, (self._packed, x, 0, x, 0, False, False))
            self._e3 = bound_entry(qp_tick_finish, (self._packed, x, 0))
        cm.excluded_mask()  # refreshes the mask (in place) if excluded_links changed
        call = self._entry if self._plain_args(q, v, qdd) else qp_tick_stage1
        nc, code, fresh, found = call(self._packed, q, v, qdd, cont_ok, map_warm)
        if nc < 0:
            r_._raise(-nc)
        if code != TICK_OK:
            return False
        packed = self._packed
        e2, e3 = self._e2, self._e3
        code, res, sa, _s1, _it, _r = self._osqp.run(
            nc, fresh, found, self._e_rc,
            lambda xa, sa, xb, sb, second, cont: e2(packed, xa, sa, xb, sb, second, cont),
            lambda x2, s2: e3(packed, x2, s2), cont_ok)
        if code == TICK_STAGE1_FAILED:
            return self._fallback(nc, sa, mstate)  # (an accepted re-centred pass is used)
        if code != TICK_OK:  # non-finite: the general path, with fresh solvers
            return False
        _code, bits, n_active = res
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
        if code == TICK_STAGE1_FAILED and s1 in (_PRIMAL_INF, _NOT_PD):
            return False  # no exact Stage I: the general path answers with OSQP (qp.py)
        if code == TICK_STAGE1_FAILED:
            return self._fallback(nc, s1, mstate)
        if code != TICK_OK:  # (a general-path solve in between resets the guess: _adopt)
            return False
        self.warm_start_used = bool(w.state[_S_WARM_USED])
        return self._accept(nc, bits, n_active, mstate)

    def _fixed_args(self) -> QPTickArgs:
        """The kernels' fixed arguments (:func:`qp_tick_active_set`: ``a``); the same for both
        solvers (one compiled constructor, one type of every stage)."""
        return QPTickArgs(*super()._fixed_args(), work=self.w_kernel)

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
        cm = self.cm
        # the pack's type, not a pack: its constructor is the helper's (compile_parts)
        pack = pack_type(self._fixed_args())
        x = numba.typeof(np.zeros(1))
        b, i = numba.types.boolean, numba.types.int64
        qp_tick_stage1.compile((pack, x, x, x, b, b))
        qp_tick_finish.compile((pack, x, i))
        if self.options.active_set:
            d = cm.data
            p = numba.typeof(ContactArrays(d.Minv, d.h, d.v, cm.actuated, cm.free, self.w.qdd,
                                           d.N, d.S, d.T, d.phi, d.mu, self.options.dt,
                                           d.weight, d.slot, d.arena))
            rec = numba.typeof(self.w_kernel)
            _guess_active.compile((p, rec, i, i, b, i, numba.typeof(self.w.warm)))
            _keep_active.compile((p, rec, i, i, b, b, b))

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
            flags = self._stage_names[key] = fallback_flag_names(status, bits)
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

