"""The whole ``lcp_noslip`` control tick as one compiled call (issue 12).

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

import numpy as np
from numba import njit

from ..kernels.linalg import bound_entry
from .consistency import min_norm_solution_kernel
from .geometry import ContactModel, assemble_kernel, passive_impact_kernel
from .lcp_noslip import lcp_noslip_kernel
from .problem import MethodState

__all__ = ["NoslipOptions", "NoslipTick", "lcp_noslip_tick", "TICK_OK", "TICK_GENERIC"]

#: the kernel solved the tick
TICK_OK = 0
#: run the general path (``build`` + ``solve``) for this tick
TICK_GENERIC = 1

# solver flag bits (tuple order = the order ``solve_lcp_noslip`` adds them)
_ROWS_DROPPED = 1
_WARM_REJECTED = 2
_CORRECTED = 4
_MIN_NORM = 8
_MIN_NORM_FAILED = 16
_FLAG_NAMES = ((_ROWS_DROPPED, "rows_dropped"), (_WARM_REJECTED, "warm_start_rejected"),
               (_CORRECTED, "inconsistent_corrected"), (_MIN_NORM, "min_norm"),
               (_MIN_NORM_FAILED, "min_norm_failed"))


class NoslipOptions(NamedTuple):
    """Options of :func:`lcp_noslip_tick` (those of ``solve_lcp_noslip`` and the contact model).

    ``noslip_gap`` < 0 means None (no-slip rows at every candidate); ``min_norm_tol`` [m/s];
    ``consistency_tol`` [m/s]; ``rank_tol``, ``tol`` relative; ``passive_impact`` with
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
def lcp_noslip_tick(topo, tree, Sm, I6, gravity, geo, d, o, out, q, v, qdd, act, free, excluded,
                    use_warm, bx_R, bx_p):
    """One ``lcp_noslip`` tick (see the module doc); ``d`` :class:`ContactData`, ``o``
    :class:`NoslipOptions`, ``out`` :class:`NoslipOutput`; q (nq,), v (nv,) and qdd (nu,) in
    the model's order; ``excluded`` (n_spheres,) bool; ``use_warm``: warm start from
    ``out.warm_slots`` (and write this tick's set there).

    Returns (nc, code, flag bits, warm_used, n_active); nc < 0 is ``-status`` of the core
    kernels for an invalid q / v.
    """
    nc = assemble_kernel(topo, tree, Sm, I6, gravity, geo, d, q, v, bx_R, bx_p, excluded,
                         o.margin, o.phi_deadband, True)
    if nc <= 0:
        return nc, TICK_GENERIC, 0, False, 0
    dt = o.dt
    N = d.N[:nc]
    S = d.S[:nc]
    T = d.T[:nc]
    phi = d.phi[:nc]
    if o.passive_impact:
        passive_impact_kernel(N, S, T, d.Minv, phi, dt, o.separation_tolerance, 1e-9, d.v,
                              d.impact[:nc])
    nv = N.shape[1]
    if o.noslip_gap >= 0.0:  # eq. (34): no-slip rows only at touching candidates
        for i in range(nc):
            if phi[i] > o.noslip_gap:
                for c in range(nv):
                    S[i, c] = 0.0
                    T[i, c] = 0.0
    warm = np.zeros(nc, dtype=np.bool_)
    n_warm = 0
    if use_warm:
        for i in range(nc):
            if out.warm_slots[d.slot[i]]:
                warm[i] = True
                n_warm += 1
    max_iter = 4 * nc + 20
    ctol = o.consistency_tol
    res = lcp_noslip_kernel(d.Minv, d.h, d.v, act, qdd, N, S, T, phi, dt, warm, max_iter,
                            o.rank_tol, o.tol, 0.0, ctol, -1.0)
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
        qdd_c = np.zeros(nu)
        if nu > 0:
            dmax = -np.inf
            for a in range(nu):
                dmax = max(dmax, d.Minv[act[a], act[a]])
            eps = 1e-6 * dmax
            corr = lcp_noslip_kernel(d.Minv, d.h, d.v, act, qdd, N, S, T, phi, dt, warm,
                                     max_iter, o.rank_tol, o.tol, eps, ctol, 1e-9)
            if corr[8] != 0:
                return nc, TICK_GENERIC, flags, warm_used, 0
            vc = corr[4]
            for a in range(nu):
                qdd_c[a] = (vc[act[a]] - d.v[act[a]]) / dt
                if not np.isfinite(qdd_c[a]):
                    return nc, TICK_GENERIC, flags, warm_used, 0
        res = lcp_noslip_kernel(d.Minv, d.h, d.v, act, qdd_c, N, S, T, phi, dt, warm, max_iter,
                                o.rank_tol, o.tol, 0.0, ctol, -1.0)
        tau, cN, cS, cT, v_next, w, nb, it2, status, _wu, ndrop, viol = res
        flags |= _CORRECTED
        if status != 0 or viol > max(ctol, 1e-6):
            return nc, TICK_GENERIC, flags, warm_used, 0
    if o.min_norm:
        mn = min_norm_solution_kernel(d.Minv, act, free, N, S, T, cN, cS, cT, tau, v_next, w,
                                      o.min_norm_tol, dt, 50)
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
    for a in range(nu):
        out.tau[a] = tau[a]
    inv_dt = 1.0 / dt
    for i in range(nc):
        out.impulses[i, 0] = cN[i]
        out.impulses[i, 1] = cS[i]
        out.impulses[i, 2] = cT[i]
        for r in range(3):
            out.forces_world[i, r] = (d.frames[i, r, 0] * cN[i] + d.frames[i, r, 1] * cS[i]
                                      + d.frames[i, r, 2] * cT[i]) * inv_dt
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


_F64 = np.dtype(np.float64)


def _plain(x, n: int) -> bool:
    """x is a C-contiguous float64 (n,) ndarray (the types the bound entry point expects)."""
    return (type(x) is np.ndarray and x.dtype is _F64 and x.shape == (n,)
            and x.flags.c_contiguous)


class NoslipTick:
    """The controller's compiled ``lcp_noslip`` tick for one :class:`ContactModel` (no free
    bodies) and fixed options; see :func:`lcp_noslip_tick`.

    Args:
        cm: the contact model (its ``data`` buffers are used).
        noslip_gap, min_norm: the ``solve_lcp_noslip`` options (``None``/False = defaults).
    """

    def __init__(self, cm: ContactModel, noslip_gap: float | None = None,
                 min_norm: bool = False) -> None:
        if cm.bodies:
            raise ValueError("NoslipTick: free bodies are not supported (use build + solve)")
        self.cm = cm
        ctol = 1e-3  # solve_lcp_noslip's consistency_tol default
        self.options = NoslipOptions(
            margin=float(cm.margin), phi_deadband=float(cm.phi_deadband),
            passive_impact=bool(cm.passive_impact),
            separation_tolerance=float(cm.separation_tolerance), dt=float(cm.dt),
            noslip_gap=-1.0 if noslip_gap is None else float(noslip_gap),
            min_norm=bool(min_norm), min_norm_tol=ctol, consistency_tol=ctol, rank_tol=1e-6,
            tol=1e-10)
        if noslip_gap is not None and not (np.isfinite(noslip_gap) and noslip_gap >= 0.0):
            raise ValueError(f"noslip_gap: must be finite and >= 0 or None, got {noslip_gap!r}")
        cap = cm.data.N.shape[0]
        self.out = NoslipOutput(tau=np.zeros(cm.actuated.shape[0]), impulses=np.zeros((cap, 3)),
                                forces_world=np.zeros((cap, 3)),
                                warm_slots=np.zeros(len(cm.slot_ids), dtype=np.bool_),
                                active_slots=np.zeros(cap, dtype=np.int64))
        self._slot_of = {cid: i for i, cid in enumerate(cm.slot_ids)}
        self._active_written: object = ()
        self._no_box_R = np.zeros((0, 3, 3))
        self._no_box_p = np.zeros((0, 3))
        self._flags: dict[int, tuple[str, ...]] = {}
        self._entry = None  # lcp_noslip_tick's entry point for these buffers (bound_entry)
        self.nc = 0
        self.flags: tuple[str, ...] = ()
        self.warm_start_used = False

    def run(self, q: np.ndarray, v: np.ndarray, qdd: np.ndarray,
            mstate: MethodState | None) -> bool:
        """One tick at (q, v) with desired actuated accelerations qdd (model order, validated
        float64 arrays). ``mstate``: the method's warm start (None = cold, nothing stored).

        Returns True if solved (results in :attr:`out`, :attr:`nc`, :attr:`flags`,
        :attr:`warm_start_used`, :meth:`contact_ids`); False if the caller must run the general
        path for this tick. Raises ValueError (the core's message) for an invalid q / v.
        """
        cm = self.cm
        o = self.out
        use_warm = mstate is not None
        if use_warm and mstate.active_ids is not self._active_written:
            o.warm_slots[:] = False  # the general path (or a reset) changed the warm start
            for cid in mstate.active_ids:
                i = self._slot_of.get(cid)
                if i is not None:
                    o.warm_slots[i] = True
            self._active_written = mstate.active_ids
        r = cm.robot
        arrays = r.kernel_arrays
        args = (arrays.topo, arrays.tree, arrays.Sm, arrays.I6, r.gravity, cm.geometry, cm.data,
                self.options, o, q, v, qdd, cm.actuated, cm.free, cm.excluded_mask(), use_warm,
                self._no_box_R, self._no_box_p)
        if self._entry is None:
            self._entry = bound_entry(lcp_noslip_tick, args)
        if _plain(q, r.nq) and _plain(v, r.nv) and _plain(qdd, cm.actuated.shape[0]):
            nc, code, bits, warm_used, n_active = self._entry(*args)
        else:  # other layouts / dtypes: numba's dispatcher checks (and converts) them
            nc, code, bits, warm_used, n_active = lcp_noslip_tick(*args)
        if nc < 0:
            r._raise(-nc)
        if code != TICK_OK:
            return False
        flags = self._flags.get(bits)
        if flags is None:
            flags = tuple(name for bit, name in _FLAG_NAMES if bits & bit)
            self._flags[bits] = flags
        self.nc = nc
        self.flags = flags
        self.warm_start_used = bool(warm_used)
        if use_warm:
            mstate.contact_ids = cm.ids_of(cm.data.slot[:nc])
            mstate.impulses = o.impulses[:nc].copy()
            mstate.active_ids = cm.ids_of(o.active_slots[:n_active])
            mstate.data["tau"] = o.tau.copy()
            self._active_written = mstate.active_ids
        return True

    def contact_ids(self) -> tuple:
        """Identities of this tick's contact rows."""
        return self.cm.ids_of(self.cm.data.slot[: self.nc])
