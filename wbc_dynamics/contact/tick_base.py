"""What every fused compiled tick shares (:mod:`.tick`'s ``lcp_noslip`` / ``lcp_coulomb`` ticks,
:mod:`.qp_tick`'s QP ticks): the status codes (:data:`TICK_OK`, :data:`TICK_GENERIC`), the first
stage (problem assembly and passive impact, :func:`_assemble_with_impact`), the result writer
(:func:`_write_result`), the compile step of the sticking correction
(``consistency._sticking_qdd``, the Sec. 4.5 QP on the touching contacts, which ``solve`` runs
too) and the base class :class:`_CompiledTick`, which keeps a method's
:class:`~wbc_dynamics.contact.problem.MethodState` exactly as ``solve`` does.

Both tick modules build on this one, and :func:`wbc_dynamics.contact.tick.compiled_tick` picks a
method's tick among them: the QP tick needs nothing of the module that picks it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.fixed_args import fixed_args
from ..kernels.linalg import bound_entry
from ..kernels.separate import call_separately
from .consistency import _sticking_qdd
from .dispatch import flag_names
from .geometry import ContactModel, assemble_kernel, passive_impact_kernel
from .problem import MethodState

__all__ = ["TICK_OK", "TICK_GENERIC", "ContactTickArgs", "compile_sticking_correction"]

#: the kernel solved the tick
TICK_OK = 0
#: run the general path (``build`` + ``solve``) for this tick
TICK_GENERIC = 1


class ContactTickArgs(NamedTuple):
    """The fixed arguments of a compiled contact tick, packed once
    (:func:`~wbc_dynamics.kernels.fixed_args.fixed_args`) and read by name in the tick.

    ``model`` the robot's :class:`~wbc_dynamics.kernels.dynamics.ModelRecord`; ``geometry``
    the contact model's collision geometry; ``data`` its
    :class:`~wbc_dynamics.contact.geometry.ContactData` record; ``options`` and ``out`` the
    method's options and outputs (NamedTuples of the tick's module); ``actuated``, ``free``
    (int64) the v indices of the actuated and free DoFs; ``excluded`` (n_spheres,) bool the
    spheres of excluded links; ``box_rotation`` (0, 3, 3), ``box_position`` (0, 3) [m] the
    free bodies' world poses (none in a compiled tick).
    """

    model: Any
    geometry: Any
    data: Any
    options: Any
    out: Any
    actuated: np.ndarray
    free: np.ndarray
    excluded: np.ndarray
    box_rotation: np.ndarray
    box_position: np.ndarray


@njit(cache=True)
def _assemble_with_impact(model, geo, d, o, q, v, excluded, bx_R, bx_p):
    """The problem of the tick into ``d`` (``assemble_kernel``) and, if configured, the passive
    impact on ``d.v``; returns nc (< 0: invalid q / v). The first stage of every compiled tick:
    it hands the tick's scratch arena ``d.arena`` out from the start again
    (:mod:`wbc_dynamics.kernels.arena`)."""
    ar = d.arena
    _ar.reset(ar)
    # np.bool_ / np.int64 (here and below): typed constants, not literals -- numba compiles a
    # callee once more for every literal argument (seconds each for these kernels at start-up)
    nc = call_separately(assemble_kernel, (model, geo, d, q, v, bx_R, bx_p,
                                           excluded, o.margin, o.phi_deadband, np.bool_(True),
                                           ar))
    if nc > 0 and o.passive_impact:
        call_separately(passive_impact_kernel, (d.N[:nc], d.S[:nc], d.T[:nc], d.Minv,
                                                d.phi[:nc], o.dt, o.separation_tolerance, 1e-9,
                                                d.v, d.impact[:nc], ar))
    return nc


@njit(cache=True, inline="always")
def _assemble_packed(a, q, v):
    """:func:`_assemble_with_impact` on a tick's pack ``a`` (fields of
    :class:`ContactTickArgs`), called separately (:mod:`wbc_dynamics.kernels.separate`)."""
    return call_separately(_assemble_with_impact, (a.model, a.geometry, a.data, a.options, q, v,
                                                   a.excluded, a.box_rotation, a.box_position))


@njit(cache=True)
def _write_result(d, out, dt, tau, cN, cS, cT):
    """Torques, local impulses and world forces [N] (frames of ``d``) into ``out``."""
    for a in range(tau.shape[0]):
        out.tau[a] = tau[a]
    inv_dt = 1.0 / dt
    for i in range(cN.shape[0]):
        out.impulses[i, 0] = cN[i]
        out.impulses[i, 1] = cS[i]
        out.impulses[i, 2] = cT[i]
        for r in range(3):
            out.forces_world[i, r] = (d.frames[i, r, 0] * cN[i] + d.frames[i, r, 1] * cS[i]
                                      + d.frames[i, r, 2] * cT[i]) * inv_dt


_F64 = np.dtype(np.float64)


def _min_pivot(cm: ContactModel, rank_mass_ratio: float) -> float:
    """The scale-aware rank floor [1/kg] of this model's problems (``lcp_noslip.min_pivot``;
    the solves' default ``rank_mass_ratio`` is 100)."""
    if rank_mass_ratio <= 0.0 or cm.total_mass <= 0.0:
        return 0.0
    return 1.0 / (rank_mass_ratio * cm.total_mass)


def _plain(x, n: int) -> bool:
    """x is a C-contiguous float64 (n,) ndarray (the types the bound entry point expects)."""
    return (type(x) is np.ndarray and x.dtype is _F64 and x.shape == (n,)
            and x.flags.c_contiguous)


def compile_sticking_correction(cm: ContactModel) -> None:
    """Compile / load ``consistency._sticking_qdd`` for the argument types of the fused ticks (which
    call it with views of ``cm.data`` and C-ordered float64 accelerations), without running it;
    the compile helper does this first (it is the deepest call tree that those ticks add to the
    general path's kernels)."""
    d = cm.data
    qdd = np.zeros(cm.actuated.shape[0])
    bound_entry(_sticking_qdd, (d.Minv, d.h, d.v, cm.actuated, qdd, d.N, d.S, d.T, d.phi, 0.0,
                                0.0, 0.0, qdd, d.arena))


class _CompiledTick:
    """The controller's compiled tick of one method on one :class:`ContactModel` (no free
    bodies) with fixed options: calls the method's kernel and keeps the
    :class:`~wbc_dynamics.contact.problem.MethodState` exactly as ``solve`` would."""

    kernel = None  # the method's compiled tick
    flag_names: tuple = ()

    def __init__(self, cm: ContactModel, options, out) -> None:
        if cm.bodies:
            raise ValueError(f"{type(self).__name__}: free bodies are not supported (use build "
                             "+ solve)")
        self.cm = cm
        self.options = options
        self.out = out
        self._slot_of = {cid: i for i, cid in enumerate(cm.slot_ids)}
        self._no_box_R = np.zeros((0, 3, 3))
        self._no_box_p = np.zeros((0, 3))
        self._flags: dict[int, tuple[str, ...]] = {}
        self._entry = None  # the kernel's entry point for these buffers (bound_entry)
        self._packed = None  # its fixed arguments (_pack)
        #: the last (q, v, qdd) arrays found plain (_plain): the controller passes the same
        #: buffers every tick, checked once (an array's type cannot change, its contents can)
        self._checked: tuple = ()
        #: per row count n: views of the first n rows of the slot / result buffers
        self._row_views: dict[int, tuple] = {}
        self._ids: tuple = ()
        self.nc = 0
        self.flags: tuple[str, ...] = ()
        self.warm_start_used = False

    def compile_assembly(self) -> None:
        """Compile / load the tick's first stage (problem assembly and passive impact,
        ``_assemble_with_impact``) on its own and run it once at the neutral configuration: at
        start-up the controller does this while the compile helper is still busy, so that
        compiling the whole tick afterwards only compiles its own code (see
        wbc_dynamics.compile_helper)."""
        cm = self.cm
        r = cm.robot
        q = np.array(r.neutral(), dtype=np.float64)
        _assemble_with_impact(r.kernel_model, cm.geometry, cm.kernel_data,
                              self.options, q, np.zeros(r.nv), cm.excluded_mask(),
                              self._no_box_R, self._no_box_p)

    def _fixed_args(self) -> ContactTickArgs:
        """The kernel's fixed arguments (the model's arrays are shared, gravity is updated in
        place; the excluded-sphere mask is refreshed in place)."""
        cm = self.cm
        return ContactTickArgs(
            model=cm.robot.kernel_model, geometry=cm.geometry, data=cm.kernel_data,
            options=self.options, out=self.out, actuated=cm.actuated, free=cm.free,
            excluded=cm.excluded_mask(), box_rotation=self._no_box_R,
            box_position=self._no_box_p)

    def _pack(self) -> None:
        """The kernel's fixed arguments, packed once."""
        r = self.cm.robot
        self._dims = (r.nq, r.nv, self.cm.actuated.shape[0])
        self._packed = fixed_args(self._fixed_args())

    def compile_parts(self) -> None:
        """Compile / load, without running anything, the tick's kernels that do not depend on
        the robot and the general path does not compile (``wbc_dynamics.compile_helper`` calls
        this on a stand-in model while the controller compiles the robot's kernels): the
        pack's constructor here, and what a method's tick adds."""
        if self._packed is None:
            self._pack()

    def _sync_warm(self, mstate: MethodState) -> None:
        """Bring the compiled warm start in line with ``mstate`` if the general path (or a
        reset) changed it."""

    def run(self, q: np.ndarray, v: np.ndarray, qdd: np.ndarray,
            mstate: MethodState | None) -> bool:
        """One tick at (q, v) with desired actuated accelerations qdd (model order, validated
        float64 arrays). ``mstate``: the method's warm start (None = cold, nothing stored).

        Returns True if solved (results in :attr:`out`, :attr:`nc`, :attr:`flags`,
        :attr:`warm_start_used`, :meth:`contact_ids`); False if the caller must run the general
        path for this tick (then call :meth:`export_warm` first). Raises ValueError (the core's
        message) for an invalid q / v.
        """
        cm = self.cm
        o = self.out
        use_warm = mstate is not None
        if use_warm:
            self._sync_warm(mstate)
        r = cm.robot
        if self._entry is None:
            if self._packed is None:
                self._pack()
            self._entry = bound_entry(type(self).kernel, (self._packed, q, v, qdd, use_warm))
        cm.excluded_mask()  # refreshes the mask (in place) if excluded_links changed
        # other layouts / dtypes of q, v, qdd: numba's dispatcher checks (and converts) them
        call = self._entry if self._plain_args(q, v, qdd) else type(self).kernel
        nc, code, bits, warm_used, n_active = call(self._packed, q, v, qdd, use_warm)
        if nc < 0:
            r._raise(-nc)
        if code != TICK_OK:
            return False
        self.warm_start_used = bool(warm_used)
        self._solved(nc, bits, n_active, mstate, o.impulses)
        if use_warm:
            self._stored(mstate)
        return True

    def _plain_args(self, q: np.ndarray, v: np.ndarray, qdd: np.ndarray) -> bool:
        """(q, v, qdd) have the types the bound entry point was bound for (:func:`_plain`);
        else the kernel's dispatcher must check (and convert) them."""
        checked = self._checked
        if checked and q is checked[0] and v is checked[1] and qdd is checked[2]:
            return True
        nq, nv, nu = self._dims
        if _plain(q, nq) and _plain(v, nv) and _plain(qdd, nu):
            self._checked = (q, v, qdd)
            return True
        return False

    def _rows(self, n: int) -> tuple:
        """Views of the first ``n`` rows: (slots of the contacts, active slots, contact points,
        world forces, normals (strided), the latter three read-only for the output)."""
        views = self._row_views.get(n)
        if views is None:
            d, o = self.cm.data, self.out
            views = (d.slot[:n], o.active_slots[:n], d.points[:n], o.forces_world[:n],
                     d.frames[:n, :, 0])
            for a in views[2:]:
                a.flags.writeable = False
            self._row_views[n] = views
        return views

    def _solved(self, nc: int, bits: int, n_active: int, mstate: MethodState | None,
                impulses: np.ndarray) -> None:
        """A solved tick: its flags, contact identities and, with a warm start, the method
        state as ``solve`` leaves it (``impulses`` (cap, 3) [N s], the first nc rows this
        tick's)."""
        flags = self._flags.get(bits)
        if flags is None:
            flags = flag_names(bits, self.flag_names)
            self._flags[bits] = flags
        self.nc = nc
        self.flags = flags
        cm = self.cm
        ids = self._ids = cm.ids_of(self._rows(nc)[0])
        if mstate is not None:
            mstate.contact_ids = ids
            mstate.impulses = impulses[:nc].copy()
            mstate.active_ids = cm.ids_of(self._rows(n_active)[1])
            mstate.data["tau"] = self.out.tau.copy()

    def _stored(self, mstate: MethodState) -> None:
        """Mark ``mstate`` as written by this tick (see :meth:`_sync_warm`)."""

    def export_warm(self, mstate: MethodState | None) -> None:
        """Write the compiled warm start into ``mstate`` in ``solve``'s own form (before the
        general path runs)."""

    def contact_ids(self) -> tuple:
        """Identities of this tick's contact rows."""
        return self._ids

    def contact_views(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This tick's (nc, 3) world contact points [m], world contact forces [N] and unit
        normals: read-only views of the tick's buffers, valid until its next :meth:`run`."""
        return self._rows(self.nc)[2:]
