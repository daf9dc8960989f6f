"""The whole ``lcp_noslip`` / ``lcp_coulomb`` control tick as one compiled call (the
QP methods' tick, compiled around its OSQP calls, is :mod:`.qp_tick`).

A tick is two kernels: the assembly of the problem for the controller's state -- the
kinematics pass and every contact candidate with its N/S/T rows, M^-1 and h
(:func:`~wbc_dynamics.contact.geometry.assemble_kernel`), the passive impact
(:func:`~wbc_dynamics.contact.geometry.passive_impact_kernel`) -- and then the method's solve
kernel, the same one ``ContactModel.build`` + ``solve`` runs:
:func:`~wbc_dynamics.contact.lcp_noslip.noslip_solve_kernel` (``noslip_gap`` rows, Alg. 1 +
Alg. 2, the Sec. 4.5 correction, the minimum-norm selection) or
:func:`~wbc_dynamics.contact.lcp_coulomb.coulomb_solve_kernel` (sticking correction, LCP
(64) by Lemke, the minimum-norm selection). Between them the tick maps the warm start from
candidate slots to rows, and afterwards writes the torques, impulses and world contact forces
into its output buffers and the warm start back by slot.

A solve that ends in a documented fallback (pivot limit, failed correction, Lemke failure, a
non-finite result), and a state without any candidate contact, return :data:`TICK_GENERIC`:
the caller then runs ``build`` + ``solve``, which returns that fallback.
:class:`NoslipTick` / :class:`CoulombTick` keep the warm start in a
:class:`~wbc_dynamics.contact.problem.MethodState` exactly as ``solve`` does, so both paths
can alternate.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.separate import call_separately
from .consistency import _sticking_qdd  # noqa: F401 - the compile helper's name (tick module)
from .dispatch import _tick_arrays
from .geometry import ContactModel
from .lcp_coulomb import (
    COULOMB_FLAGS,
    MIN_NORM_TOL,
    CoulombSolveOptions,
    coulomb_solve_kernel,
    min_norm_coulomb_kernel,
    pyramid_directions,
)
from .lcp_coulomb import SOLVED as COULOMB_SOLVED
from .lcp_noslip import (
    NOSLIP_FLAGS,
    SOLVED,
    NoslipSolveOptions,
    noslip_solve_kernel,
)
from .problem import MethodState
from .tick_base import (
    TICK_GENERIC,
    TICK_OK,
    _assemble_packed,
    _CompiledTick,
    _min_pivot,
    _write_result,
    compile_sticking_correction,
)

__all__ = ["NoslipOptions", "NoslipTick", "lcp_noslip_tick", "CoulombTick", "lcp_coulomb_tick",
           "compiled_tick", "TICK_OK", "TICK_GENERIC"]


class NoslipOptions(NamedTuple):
    """Options of :func:`lcp_noslip_tick`: the contact model's ``margin``, ``phi_deadband``
    [m], ``passive_impact`` with ``separation_tolerance`` [m/s], ``dt`` [s], and ``solve``
    (:class:`~wbc_dynamics.contact.lcp_noslip.NoslipSolveOptions`, those of
    ``solve_lcp_noslip``)."""

    margin: float
    phi_deadband: float
    passive_impact: bool
    separation_tolerance: float
    dt: float
    solve: NoslipSolveOptions


class CoulombOptions(NamedTuple):
    """Options of :func:`lcp_coulomb_tick`: the contact model's as in :class:`NoslipOptions`
    and ``solve`` (:class:`~wbc_dynamics.contact.lcp_coulomb.CoulombSolveOptions`, those of
    ``solve_lcp_coulomb`` with MINDIFF off)."""

    margin: float
    phi_deadband: float
    passive_impact: bool
    separation_tolerance: float
    dt: float
    solve: CoulombSolveOptions


class NoslipOutput(NamedTuple):
    """Output buffers of :func:`lcp_noslip_tick` (rows ``0..nc-1`` valid): ``tau`` (nu,) [N m]
    in the actuated order, ``impulses`` (cap, 3) [N s] local (n, s, t), ``forces_world``
    (cap, 3) [N], ``warm_slots`` (n_slots,) bool: the non-basic set by candidate slot (input:
    the previous tick's, output: this tick's), ``active_slots`` (cap,) its slots in row order."""

    tau: np.ndarray
    impulses: np.ndarray
    forces_world: np.ndarray
    warm_slots: np.ndarray
    active_slots: np.ndarray


@njit(cache=True)
def lcp_noslip_tick(a, q, v, qdd, use_warm):
    """One ``lcp_noslip`` tick (see the module doc). ``a``: the fixed arguments packed
    (:func:`~wbc_dynamics.kernels.fixed_args.fixed_args`: one pointer to unbox per call instead
    of ~70 arrays), fields of :class:`~.tick_base.ContactTickArgs` with ``options``
    :class:`NoslipOptions` and ``out`` :class:`NoslipOutput`; q (nq,), v (nv,) and
    qdd (nu,) in the model's order; ``use_warm``: warm start from ``out.warm_slots`` (and
    write this tick's set there).

    Returns (nc, code, flag bits, warm_used, n_active); nc < 0 is ``-status`` of the core
    kernels for an invalid q / v.
    """
    d, o, out = a.data, a.options, a.out
    nc = _assemble_packed(a, q, v)
    if nc <= 0:
        return nc, TICK_GENERIC, 0, False, 0
    warm = _ar.flags_zero(d.arena, nc)  # the previous non-basic set by slot (Sec. 4.6)
    if use_warm:
        for i in range(nc):
            warm[i] = out.warm_slots[d.slot[i]]
    problem = _tick_arrays(a, nc, qdd)
    sol = call_separately(noslip_solve_kernel, (problem, warm, o.solve, d.arena))
    if sol.code != SOLVED:
        return nc, TICK_GENERIC, sol.bits, sol.warm_used, 0
    _write_result(d, out, o.dt, sol.tau, sol.c_n, sol.c_s, sol.c_t)
    n_active = 0
    if use_warm:
        out.warm_slots[:] = False
    for i in range(nc):
        if sol.nonbasic[i]:
            out.active_slots[n_active] = d.slot[i]
            n_active += 1
            if use_warm:
                out.warm_slots[d.slot[i]] = True
    return nc, TICK_OK, sol.bits, sol.warm_used, n_active


class CoulombOutput(NamedTuple):
    """Output buffers of :func:`lcp_coulomb_tick` (rows ``0..nc-1`` valid): ``tau``,
    ``impulses``, ``forces_world``, ``active_slots`` as in :class:`NoslipOutput`; the Lemke
    warm start by candidate slot: ``basic`` (n_slots, k + 2) bool (c_N, the k edges, lambda)
    and ``known`` (n_slots,) bool (slots of the previous tick), both input and output."""

    tau: np.ndarray
    impulses: np.ndarray
    forces_world: np.ndarray
    active_slots: np.ndarray
    basic: np.ndarray
    known: np.ndarray


@njit(cache=True)
def lcp_coulomb_tick(a, q, v, qdd_des, use_warm):
    """One ``lcp_coulomb`` tick (Sec. 5, LCP (64) by Lemke; see the module doc): the assembly
    of :func:`lcp_noslip_tick`, the previous Lemke basis by slot, then
    :func:`~wbc_dynamics.contact.lcp_coulomb.coulomb_solve_kernel`; ``a`` packed as for
    :func:`lcp_noslip_tick` with ``o`` :class:`CoulombOptions`, ``out``
    :class:`CoulombOutput`.

    Returns (nc, code, flag bits, warm_used, n_active) as :func:`lcp_noslip_tick`.
    """
    d, o, out = a.data, a.options, a.out
    nc = _assemble_packed(a, q, v)
    if nc <= 0:
        return nc, TICK_GENERIC, 0, False, 0
    ar = d.arena
    kk = o.solve.D.shape[0]
    m = nc * (1 + kk)
    n = m + nc
    # the previous basis by slot, in LCP (64)'s variable order (solve maps it by identity)
    warm = _ar.flags_zero(ar, n)
    mask_given = False
    if use_warm:
        any_known = False
        for i in range(nc):
            sl = d.slot[i]
            if out.known[sl]:
                any_known = True
                warm[i] = out.basic[sl, 0]
                for j in range(kk):
                    warm[nc + i * kk + j] = out.basic[sl, 1 + j]
                warm[m + i] = out.basic[sl, 1 + kk]
        any_set = False
        for i in range(n):
            any_set = any_set or warm[i]
        mask_given = any_known and any_set
        if not mask_given:
            warm[:] = False
    sol = call_separately(coulomb_solve_kernel, (
        _tick_arrays(a, nc, qdd_des), warm, mask_given,
        _ar.floats(ar, np.int64(0)), o.solve, ar))
    if sol.code != COULOMB_SOLVED:
        return nc, TICK_GENERIC, sol.bits, sol.warm_used, 0
    _write_result(d, out, o.dt, sol.tau, sol.c_n, sol.c_s, sol.c_t)
    n_active = 0
    for i in range(nc):
        if sol.z[i] > 0.0:
            out.active_slots[n_active] = d.slot[i]
            n_active += 1
    if use_warm:  # this tick's basis by slot
        out.known[:] = False
        for i in range(nc):
            sl = d.slot[i]
            out.known[sl] = True
            out.basic[sl, 0] = sol.basic[i]
            for j in range(kk):
                out.basic[sl, 1 + j] = sol.basic[nc + i * kk + j]
            out.basic[sl, 1 + kk] = sol.basic[m + i]
    return nc, TICK_OK, sol.bits, sol.warm_used, n_active


class NoslipTick(_CompiledTick):
    """Compiled ``lcp_noslip`` tick (:func:`lcp_noslip_tick`).

    Args:
        cm: the contact model (its ``data`` buffers are used).
        noslip_gap, min_norm, rank_mass_ratio: the ``solve_lcp_noslip`` options (``None`` /
            False / 100 = defaults).
    """

    kernel = lcp_noslip_tick
    flag_names = NOSLIP_FLAGS

    def __init__(self, cm: ContactModel, noslip_gap: float | None = None,
                 min_norm: bool = False, rank_mass_ratio: float = 100.0) -> None:
        if noslip_gap is not None and not (np.isfinite(noslip_gap) and noslip_gap >= 0.0):
            raise ValueError(f"noslip_gap: must be finite and >= 0 or None, got {noslip_gap!r}")
        ctol = 1e-3  # solve_lcp_noslip's consistency_tol default
        options = NoslipOptions(
            margin=float(cm.margin), phi_deadband=float(cm.phi_deadband),
            passive_impact=bool(cm.passive_impact),
            separation_tolerance=float(cm.separation_tolerance), dt=float(cm.dt),
            solve=NoslipSolveOptions(
                noslip_gap=-1.0 if noslip_gap is None else float(noslip_gap), max_iter=-1,
                rank_tol=1e-6, tol=1e-10, consistency_tol=ctol, correct_inconsistent=True,
                min_norm=bool(min_norm), min_norm_tol=ctol,
                min_pivot=_min_pivot(cm, rank_mass_ratio)))
        cap = cm.data.N.shape[0]
        out = NoslipOutput(tau=np.zeros(cm.actuated.shape[0]), impulses=np.zeros((cap, 3)),
                           forces_world=np.zeros((cap, 3)),
                           warm_slots=np.zeros(len(cm.slot_ids), dtype=np.bool_),
                           active_slots=np.zeros(cap, dtype=np.int64))
        super().__init__(cm, options, out)
        self._active_written: object = ()

    def _sync_warm(self, mstate: MethodState) -> None:
        if mstate.active_ids is not self._active_written:
            ws = self.out.warm_slots
            ws[:] = False
            for cid in mstate.active_ids:
                i = self._slot_of.get(cid)
                if i is not None:
                    ws[i] = True
            self._active_written = mstate.active_ids

    def _stored(self, mstate: MethodState) -> None:
        self._active_written = mstate.active_ids


class CoulombTick(_CompiledTick):
    """Compiled ``lcp_coulomb`` tick (:func:`lcp_coulomb_tick`), MINDIFF off.

    Args:
        cm: the contact model. sticking_correction, min_norm: the ``solve_lcp_coulomb``
            options (``coulomb_tracking`` sets both).
    """

    kernel = lcp_coulomb_tick
    flag_names = COULOMB_FLAGS

    def __init__(self, cm: ContactModel, sticking_correction: bool = False,
                 min_norm: bool = False) -> None:
        k = int(cm.friction_edges)
        options = CoulombOptions(
            margin=float(cm.margin), phi_deadband=float(cm.phi_deadband),
            passive_impact=bool(cm.passive_impact),
            separation_tolerance=float(cm.separation_tolerance), dt=float(cm.dt),
            solve=CoulombSolveOptions(
                D=np.array(pyramid_directions(k)), sticking_correction=bool(sticking_correction),
                sticking_gap=1e-6, min_pivot=_min_pivot(cm, 100.0), min_norm=bool(min_norm),
                min_norm_tol=MIN_NORM_TOL, tol=1e-9, regularize=True, max_pivots=-1))
        cap = cm.data.N.shape[0]
        nslot = len(cm.slot_ids)
        out = CoulombOutput(tau=np.zeros(cm.actuated.shape[0]), impulses=np.zeros((cap, 3)),
                            forces_world=np.zeros((cap, 3)),
                            active_slots=np.zeros(cap, dtype=np.int64),
                            basic=np.zeros((nslot, k + 2), dtype=np.bool_),
                            known=np.zeros(nslot, dtype=np.bool_))
        super().__init__(cm, options, out)
        self.k = k
        #: stands in mstate.data["lcp_coulomb_basic"] while the basis lives in ``out``
        self._token: dict = {}

    def compile_parts(self) -> None:
        super().compile_parts()
        compile_sticking_correction(self.cm)

    def compile_assembly(self) -> None:
        """The assembly (:meth:`_CompiledTick.compile_assembly`), then the minimum-norm
        selection by type (the types the tick calls it with: arena vectors and matrices, the
        contact rows' prefixes): the controller's share while the compile helper compiles
        Lemke and the general path."""
        super().compile_assembly()
        d = self.cm.data
        f1, f2 = numba.typeof(np.zeros(1)), numba.typeof(np.zeros((1, 1)))
        i, f = numba.types.int64, numba.types.float64
        min_norm_coulomb_kernel.compile((f2, f2, f1, f, f1, numba.typeof(self.cm.free), f1, f1,
                                         i, f, numba.typeof(d.arena)))

    def _sync_warm(self, mstate: MethodState) -> None:
        prev = mstate.data.get("lcp_coulomb_basic")
        if prev is self._token:
            return
        o = self.out
        o.known[:] = False
        if prev and mstate.data.get("lcp_coulomb_k") == self.k:
            for cid, b in prev.items():
                i = self._slot_of.get(cid)
                if i is not None:
                    o.known[i] = True
                    o.basic[i] = b
        mstate.data["lcp_coulomb_basic"] = self._token

    def _stored(self, mstate: MethodState) -> None:
        mstate.data["lcp_coulomb_basic"] = self._token
        mstate.data["lcp_coulomb_k"] = self.k

    def export_warm(self, mstate: MethodState | None) -> None:
        if mstate is None or mstate.data.get("lcp_coulomb_basic") is not self._token:
            return
        o = self.out
        ids = self.cm.slot_ids
        mstate.data["lcp_coulomb_basic"] = {ids[i]: o.basic[i].copy()
                                            for i in np.flatnonzero(o.known)}


def compiled_tick(cm: ContactModel, method: str, options: dict) -> _CompiledTick | None:
    """The compiled tick of ``method`` with ``solve``'s keyword ``options`` on ``cm``, or None
    if the method, an option or the model (free bodies) has none (then use build + solve)."""
    if cm.bodies:
        return None
    if method == "lcp_noslip" and set(options) <= {"noslip_gap", "min_norm", "rank_mass_ratio"}:
        gap = options.get("noslip_gap")
        if gap is not None and not (np.isfinite(gap) and gap >= 0.0):
            return None  # solve's own validation reports it
        ratio = options.get("rank_mass_ratio", 100.0)
        if not (isinstance(ratio, int | float) and np.isfinite(ratio) and ratio >= 0.0):
            return None
        return NoslipTick(cm, noslip_gap=gap, min_norm=bool(options.get("min_norm", False)),
                          rank_mass_ratio=float(ratio))
    if method in ("qp_coulomb", "qp_noslip"):
        from .qp_tick import qp_tick

        return qp_tick(cm, method, options)
    if method == "lcp_coulomb" and set(options) <= {"sticking_correction", "min_norm"}:
        return CoulombTick(cm, sticking_correction=bool(options.get("sticking_correction")),
                           min_norm=bool(options.get("min_norm", False)))
    return None
