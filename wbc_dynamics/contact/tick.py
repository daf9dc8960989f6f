"""The whole ``lcp_noslip`` / ``lcp_coulomb`` control tick as one compiled call (the
QP methods' tick, compiled around its OSQP calls, is :mod:`.qp_tick`).

:func:`lcp_noslip_tick` runs, in one numba kernel and for the controller's state: the
kinematics pass and every contact candidate with its N/S/T rows, M^-1 and h
(:func:`~wbc_dynamics.contact.geometry.assemble_kernel`), the passive impact
(:func:`~wbc_dynamics.contact.geometry.passive_impact_kernel`), the ``noslip_gap`` rows, the warm
start (previous non-basic set by candidate slot), Alg. 1 + Alg. 2 + force retrieval
(:func:`~wbc_dynamics.contact.lcp_noslip.lcp_noslip_kernel`), the Sec. 4.5 correction of
inconsistent accelerations, the minimum-norm selection
(:func:`~wbc_dynamics.contact.consistency.min_norm_solution_kernel`) and the world contact
forces. It is the same arithmetic as ``ContactModel.build`` + ``solve("lcp_noslip", ...)``
(``test_contact_tick.py`` checks equality on random states), without the Python between the
kernels.

The rare cases -- no candidate contact, the pivot limit, a failed correction, a non-finite
result -- return :data:`TICK_GENERIC`; the caller then runs the general path (``build`` +
``solve``), whose documented fallbacks apply. :class:`NoslipTick` keeps the warm start in a
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
from .consistency import min_norm_solution_kernel
from .geometry import ContactModel
from .lcp_coulomb import (
    MIN_NORM_TOL,
    _assemble_lcp,
    _coulomb_rows,
    _recover_kernel,
    _reduce_kernel,
    min_norm_coulomb_kernel,
    pyramid_directions,
)
from .lemke import SUCCESS, _solve_lcp_kernel
from .noslip_kernels import lcp_noslip_kernel
from .problem import MethodState
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

__all__ = ["NoslipOptions", "NoslipTick", "lcp_noslip_tick", "CoulombTick", "lcp_coulomb_tick",
           "compiled_tick", "TICK_OK", "TICK_GENERIC"]

# solver flag bits (tuple order = the order ``solve_lcp_noslip`` adds them)
_ROWS_DROPPED = 1
_WARM_REJECTED = 2
_CORRECTED = 4
_MIN_NORM = 8
_MIN_NORM_FAILED = 16
_REGULARIZED = 32
_STICKING_FAILED = 64
_FLAG_NAMES = ((_ROWS_DROPPED, "rows_dropped"), (_WARM_REJECTED, "warm_start_rejected"),
               (_CORRECTED, "inconsistent_corrected"), (_MIN_NORM, "min_norm"),
               (_MIN_NORM_FAILED, "min_norm_failed"))
# lcp_coulomb's order: the solve's flags, then the sticking correction's (added afterwards)
_COULOMB_FLAG_NAMES = ((_WARM_REJECTED, "warm_start_rejected"), (_REGULARIZED, "regularized"),
                       (_MIN_NORM_FAILED, "min_norm_failed"), (_MIN_NORM, "min_norm"),
                       (_CORRECTED, "inconsistent_corrected"),
                       (_STICKING_FAILED, "sticking_correction_failed"))


class NoslipOptions(NamedTuple):
    """Options of :func:`lcp_noslip_tick` (those of ``solve_lcp_noslip`` and the contact model).

    ``noslip_gap`` < 0 means None (no-slip rows at every candidate); ``min_norm_tol`` [m/s];
    ``consistency_tol`` [m/s]; ``rank_tol``, ``tol`` relative; ``min_pivot`` [1/kg] Alg. 1's
    scale-aware floor (``lcp_noslip.min_pivot``); ``passive_impact`` with
    ``separation_tolerance`` [m/s]; ``margin``, ``phi_deadband`` [m]; ``dt`` [s].
    """

    margin: float
    phi_deadband: float
    passive_impact: bool
    separation_tolerance: float
    dt: float
    noslip_gap: float
    min_norm: bool
    min_norm_tol: float
    consistency_tol: float
    rank_tol: float
    tol: float
    min_pivot: float


class CoulombOptions(NamedTuple):
    """Options of :func:`lcp_coulomb_tick` (``solve_lcp_coulomb``'s, mindiff off): ``D`` (k, 2)
    pyramid edge directions; ``sticking_correction`` with ``sticking_gap`` [m]; ``min_norm``
    with ``min_norm_tol`` [m/s]; ``tol`` Lemke's relative LCP tolerance; the contact model's
    ``margin``, ``phi_deadband``, ``passive_impact``, ``separation_tolerance``, ``dt``;
    ``min_pivot`` [1/kg] the sticking correction's scale-aware rank floor."""

    margin: float
    phi_deadband: float
    passive_impact: bool
    separation_tolerance: float
    dt: float
    D: np.ndarray
    sticking_correction: bool
    sticking_gap: float
    min_norm: bool
    min_norm_tol: float
    tol: float
    min_pivot: float


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
    of ~70 arrays), ``a.head`` = (topo, tree, Sm, I6, gravity, geo, ``d``
    :class:`ContactData`, ``o`` :class:`NoslipOptions`, ``out`` :class:`NoslipOutput`),
    ``a.tail`` = (act, free, ``excluded`` (n_spheres,) bool, bx_R, bx_p); q (nq,), v (nv,) and
    qdd (nu,) in the model's order; ``use_warm``: warm start from ``out.warm_slots`` (and
    write this tick's set there).

    Returns (nc, code, flag bits, warm_used, n_active); nc < 0 is ``-status`` of the core
    kernels for an invalid q / v.
    """
    topo, tree, Sm, I6, gravity, geo, d, o, out = a.head
    act, free, excluded, bx_R, bx_p = a.tail
    nc = call_separately(_assemble_with_impact, (topo, tree, Sm, I6, gravity, geo, d, o, q, v,
                                                 excluded, bx_R, bx_p))
    if nc <= 0:
        return nc, TICK_GENERIC, 0, False, 0
    dt = o.dt
    N = d.N[:nc]
    S = d.S[:nc]
    T = d.T[:nc]
    phi = d.phi[:nc]
    nv = N.shape[1]
    if o.noslip_gap >= 0.0:  # eq. (34): no-slip rows only at touching candidates
        for i in range(nc):
            if phi[i] > o.noslip_gap:
                for c in range(nv):
                    S[i, c] = 0.0
                    T[i, c] = 0.0
    ar = d.arena
    warm = _ar.flags_zero(ar, nc)
    n_warm = 0
    if use_warm:
        for i in range(nc):
            if out.warm_slots[d.slot[i]]:
                warm[i] = True
                n_warm += 1
    max_iter = 4 * nc + 20
    ctol = o.consistency_tol
    res = call_separately(lcp_noslip_kernel, (d.Minv, d.h, d.v, act, qdd, N, S, T, phi, dt, warm,
                                              max_iter, o.rank_tol, o.tol, 0.0, ctol, -1.0,
                                              o.min_pivot, ar))
    tau, cN, cS, cT, v_next, w, nb, it, status, warm_used, ndrop, viol = res
    flags = 0
    if ndrop > 0:
        flags |= _ROWS_DROPPED
    if n_warm > 0 and not warm_used:
        flags |= _WARM_REJECTED
    if status == 1 or status == 3:
        return nc, TICK_GENERIC, flags, warm_used, 0
    nu = act.shape[0]
    if status == 2 or viol > ctol:
        # Sec. 4.5 correction (consistency.consistent_accelerations, eps_rel = 1e-6)
        qdd_c = _ar.floats_zero(ar, nu)
        if nu > 0:
            dmax = -np.inf
            for a in range(nu):
                dmax = max(dmax, d.Minv[act[a], act[a]])
            eps = 1e-6 * dmax
            corr = call_separately(lcp_noslip_kernel, (d.Minv, d.h, d.v, act, qdd, N, S, T, phi,
                                                       dt, warm, max_iter, o.rank_tol, o.tol,
                                                       eps, ctol, 1e-9, o.min_pivot, ar))
            if corr[8] != 0:
                return nc, TICK_GENERIC, flags, warm_used, 0
            vc = corr[4]
            for a in range(nu):
                qdd_c[a] = (vc[act[a]] - d.v[act[a]]) / dt
                if not np.isfinite(qdd_c[a]):
                    return nc, TICK_GENERIC, flags, warm_used, 0
        res = call_separately(lcp_noslip_kernel, (d.Minv, d.h, d.v, act, qdd_c, N, S, T, phi, dt,
                                                  warm, max_iter, o.rank_tol, o.tol, 0.0, ctol,
                                                  -1.0, o.min_pivot, ar))
        tau, cN, cS, cT, v_next, w, nb, it2, status, _wu, ndrop, viol = res
        flags |= _CORRECTED
        if status != 0 or viol > max(ctol, 1e-6):
            return nc, TICK_GENERIC, flags, warm_used, 0
    if o.min_norm:
        mn = call_separately(min_norm_solution_kernel, (d.Minv, act, free, N, S, T, cN, cS, cT,
                                                        tau, v_next, w, o.min_norm_tol, dt,
                                                        np.int64(50), ar))
        if mn[6]:
            cN, cS, cT, tau, v_next = mn[0], mn[1], mn[2], mn[3], mn[4]
            for i in range(nc):
                nb[i] = cN[i] > 0.0
            flags |= _MIN_NORM
        else:
            flags |= _MIN_NORM_FAILED
    for a in range(nu):
        if not np.isfinite(tau[a]):
            return nc, TICK_GENERIC, flags, warm_used, 0
    for c in range(nv):
        if not np.isfinite(v_next[c]):
            return nc, TICK_GENERIC, flags, warm_used, 0
    for i in range(nc):
        if not (np.isfinite(cN[i]) and np.isfinite(cS[i]) and np.isfinite(cT[i])):
            return nc, TICK_GENERIC, flags, warm_used, 0
    _write_result(d, out, dt, tau, cN, cS, cT)
    n_active = 0
    if use_warm:
        out.warm_slots[:] = False
    for i in range(nc):
        if nb[i]:
            out.active_slots[n_active] = d.slot[i]
            n_active += 1
            if use_warm:
                out.warm_slots[d.slot[i]] = True
    return nc, TICK_OK, flags, warm_used, n_active


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
    """One ``lcp_coulomb`` tick (Sec. 5, LCP (64) by Lemke), as ``build`` + ``solve``: the
    contact assembly and passive impact of :func:`lcp_noslip_tick`, the sticking correction
    (``consistency.sticking_consistent_problem``), the reduced dynamics, Lemke with the
    previous basis by slot, the minimum-norm selection and the world forces; ``a`` packed as
    for :func:`lcp_noslip_tick` with ``o`` :class:`CoulombOptions`, ``out``
    :class:`CoulombOutput`.

    Returns (nc, code, flag bits, warm_used, n_active) as :func:`lcp_noslip_tick`.
    """
    topo, tree, Sm, I6, gravity, geo, d, o, out = a.head
    act, free, excluded, bx_R, bx_p = a.tail
    nc = call_separately(_assemble_with_impact, (topo, tree, Sm, I6, gravity, geo, d, o, q, v,
                                                 excluded, bx_R, bx_p))
    if nc <= 0:
        return nc, TICK_GENERIC, 0, False, 0
    dt = o.dt
    N = d.N[:nc]
    S = d.S[:nc]
    T = d.T[:nc]
    phi = d.phi[:nc]
    mu = d.mu[:nc]
    nv = N.shape[1]
    nu = act.shape[0]
    flags = 0
    qdd = qdd_des
    if o.sticking_correction and nu > 0:
        qdd = _ar.floats(d.arena, nu)
        st = call_separately(_sticking_qdd, (d.Minv, d.h, d.v, act, qdd_des, N, S, T, phi, dt,
                                             o.sticking_gap, o.min_pivot, qdd, d.arena))
        if st == 2:
            flags |= _STICKING_FAILED
        elif st == 1:
            flags |= _CORRECTED
    D = o.D
    kk = D.shape[0]
    m = nc * (1 + kk)
    ar = d.arena
    J = call_separately(_coulomb_rows, (N, S, T, D, ar))
    red = call_separately(_reduce_kernel, (d.Minv, d.h, d.v, act, free, qdd, dt, J, ar))
    if not red[0]:
        return nc, TICK_GENERIC, flags, False, 0
    L, tau0, fstar, H, Jv0 = red[1], red[2], red[3], red[7], red[8]
    Q, qv = call_separately(_assemble_lcp, (H, Jv0, phi, dt, mu, kk, ar))
    n = qv.shape[0]
    # the previous basis by slot (lcp_coulomb._warm_mask)
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
    z = _ar.floats_zero(ar, n)
    basic = _ar.flags_zero(ar, n)
    qs = 0.0
    qmin = np.inf
    for i in range(n):
        qs = max(qs, abs(qv[i]))
        qmin = min(qmin, qv[i])
    warm_used = False
    if qs > 0.0 and qmin < 0.0:  # lemke.solve_lcp
        qn = _ar.floats(ar, n)
        for i in range(n):
            qn[i] = qv[i] / qs
        w = _ar.floats_zero(ar, n)
        basis = _ar.ints_zero(ar, n)
        status, _piv, wflag, eps, _viol = call_separately(_solve_lcp_kernel, (
            Q, qn, warm, np.bool_(mask_given), 50 * n + 10, 1e-9, o.tol, np.bool_(True), 1e-12,
            1e-2, 100.0, 1e-6, z, w, basis, ar))
        if status != SUCCESS:
            return nc, TICK_GENERIC, flags, False, 0
        for i in range(n):
            z[i] *= qs
            if n <= basis[i] < 2 * n:
                basic[basis[i] - n] = True
        warm_used = wflag == 1
        if mask_given and wflag == 2:
            flags |= _WARM_REJECTED
        if eps > 0.0:
            flags |= _REGULARIZED
    c = _ar.floats_copy(ar, z[:m])
    tau, v_next, _gen = call_separately(_recover_kernel, (d.Minv, act, L, tau0, fstar, dt, J, c,
                                                          ar))
    if o.min_norm:
        c_mn, ok = call_separately(min_norm_coulomb_kernel, (J, N, phi, dt, mu, free, c, v_next,
                                                             kk, o.min_norm_tol, d.arena))
        if ok:
            c = c_mn
            tau, v_next, _gen = call_separately(_recover_kernel, (d.Minv, act, L, tau0, fstar,
                                                                  dt, J, c, ar))
            flags |= _MIN_NORM
        else:
            flags |= _MIN_NORM_FAILED
    for a in range(nu):
        if not np.isfinite(tau[a]):
            return nc, TICK_GENERIC, flags, warm_used, 0
    for col in range(nv):
        if not np.isfinite(v_next[col]):
            return nc, TICK_GENERIC, flags, warm_used, 0
    cN = _ar.floats_copy(ar, c[:nc])
    cS = _ar.floats_zero(ar, nc)  # pyramid_to_local
    cT = _ar.floats_zero(ar, nc)
    for i in range(nc):
        for j in range(kk):
            cS[i] += c[nc + i * kk + j] * D[j, 0]
            cT[i] += c[nc + i * kk + j] * D[j, 1]
        if not (np.isfinite(cN[i]) and np.isfinite(cS[i]) and np.isfinite(cT[i])):
            return nc, TICK_GENERIC, flags, warm_used, 0
    _write_result(d, out, dt, tau, cN, cS, cT)
    n_active = 0
    for i in range(nc):
        if z[i] > 0.0:
            out.active_slots[n_active] = d.slot[i]
            n_active += 1
    if use_warm:  # lcp_coulomb._store_basic
        out.known[:] = False
        for i in range(nc):
            sl = d.slot[i]
            out.known[sl] = True
            out.basic[sl, 0] = basic[i]
            for j in range(kk):
                out.basic[sl, 1 + j] = basic[nc + i * kk + j]
            out.basic[sl, 1 + kk] = basic[m + i]
    return nc, TICK_OK, flags, warm_used, n_active


class NoslipTick(_CompiledTick):
    """Compiled ``lcp_noslip`` tick (:func:`lcp_noslip_tick`).

    Args:
        cm: the contact model (its ``data`` buffers are used).
        noslip_gap, min_norm, rank_mass_ratio: the ``solve_lcp_noslip`` options (``None`` /
            False / 100 = defaults).
    """

    kernel = lcp_noslip_tick
    flag_names = _FLAG_NAMES

    def __init__(self, cm: ContactModel, noslip_gap: float | None = None,
                 min_norm: bool = False, rank_mass_ratio: float = 100.0) -> None:
        if noslip_gap is not None and not (np.isfinite(noslip_gap) and noslip_gap >= 0.0):
            raise ValueError(f"noslip_gap: must be finite and >= 0 or None, got {noslip_gap!r}")
        ctol = 1e-3  # solve_lcp_noslip's consistency_tol default
        options = NoslipOptions(
            margin=float(cm.margin), phi_deadband=float(cm.phi_deadband),
            passive_impact=bool(cm.passive_impact),
            separation_tolerance=float(cm.separation_tolerance), dt=float(cm.dt),
            noslip_gap=-1.0 if noslip_gap is None else float(noslip_gap),
            min_norm=bool(min_norm), min_norm_tol=ctol, consistency_tol=ctol, rank_tol=1e-6,
            tol=1e-10, min_pivot=_min_pivot(cm, rank_mass_ratio))
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
    flag_names = _COULOMB_FLAG_NAMES

    def __init__(self, cm: ContactModel, sticking_correction: bool = False,
                 min_norm: bool = False) -> None:
        k = int(cm.friction_edges)
        options = CoulombOptions(
            margin=float(cm.margin), phi_deadband=float(cm.phi_deadband),
            passive_impact=bool(cm.passive_impact),
            separation_tolerance=float(cm.separation_tolerance), dt=float(cm.dt),
            D=np.array(pyramid_directions(k)), sticking_correction=bool(sticking_correction),
            sticking_gap=1e-6, min_norm=bool(min_norm), min_norm_tol=MIN_NORM_TOL, tol=1e-9,
            min_pivot=_min_pivot(cm, 100.0))
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
