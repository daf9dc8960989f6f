"""Common types of the contact-aware inverse dynamics solvers (Zapolsky & Drumwright).

Every solver method (``lcp_noslip``, ``lcp_coulomb``, ``qp_coulomb``, ``qp_noslip``) consumes one
:class:`ContactProblem` per control tick, returns a :class:`ContactResult`, and keeps its warm start
between ticks in a :class:`SolverState`.

Conventions (used by every method)
----------------------------------
* ``nv`` generalized velocities of the *multi-body* (robot, plus the 6 DoF of every contacted free
  body appended as in Sec. 1.5, eqs. (1)-(3)); ``nu`` actuated dofs (``actuated``); the remaining
  ``free`` dofs (floating base, contacted bodies) are unactuated.
* ``B`` is the nv x nu selection matrix with ``B[actuated[j], j] = 1``; the paper's selection matrix
  ``P`` (eq. 38) is ``B.T``.
* First-order (velocity-level) dynamics, eq. (37), written with *forces* for the actuators and
  *impulses* for the contacts::

      M (v_next - v) = dt (B tau - h) + N^T c_N + S^T c_S + T^T c_T

  ``tau`` [N m or N] are joint torques/forces held over the tick, ``c_N, c_S, c_T`` [N s] are the
  contact impulses along n, s, t; the contact *forces* are ``c / dt`` [N]. ``h = C(q, v) v + g(q)``
  (external generalized forces, if any, are folded into ``h`` with a minus sign).
* Inverse dynamics constraint, eqs. (38)-(39): ``v_next[actuated] = v[actuated] + dt * qdd_des``.
* Non-interpenetration, eqs. (35)-(36): ``N v_next >= -phi / dt``, complementary to ``c_N >= 0``.
* ``N, S, T`` rows are the generalized contact wrenches of Appendix B (eq. 114): for contact ``i``
  with world-frame unit vectors ``n_i, s_i, t_i`` and the (relative) linear point Jacobian
  ``J_i`` (3 x nv, world-aligned), ``N[i] = n_i^T J_i``, ``S[i] = s_i^T J_i``, ``T[i] = t_i^T J_i``.
  ``n_i`` points *from the environment / contacted body into the robot link*, i.e. along the force
  the environment applies on the robot, so ``phi_dot_i = N[i] @ v``.
* The M matrix itself is never needed: ``Minv`` comes from the core's analytical ``minverse``
  (never a dense inverse of M), so eq. (37) is checked as
  ``v_next = v + Minv (dt (B tau - h) + N^T c_N + S^T c_S + T^T c_T)``.
* Friction pyramid with ``k`` edges (Sec. 5.1): see :meth:`ContactProblem.pyramid`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ..kernels.dynamics import check_vector

__all__ = [
    "FLAGS",
    "ContactProblem",
    "ContactResult",
    "contact_weights",
    "SolverStats",
    "SolverState",
    "MethodState",
]

#: Documented solver flags (``SolverStats.flags`` is a tuple drawn from this set).
FLAGS: dict[str, str] = {
    "no_contacts": "zero candidate contacts: plain inverse dynamics (free dofs accelerate freely)",
    "fallback": "the method failed; the result is the documented safe fallback of that method "
    "(finite; see the method's docstring). Torques may not realize qdd_des.",
    "iteration_limit": "the solver hit its iteration / pivot limit",
    "inconsistent_corrected": "the desired accelerations were inconsistent with the contact "
    "constraints (Sec. 4.5); the result realizes the minimally deviating consistent accelerations",
    "regularized": "a regularization (Tikhonov / diagonal shift) was applied to solve the problem",
    "rows_dropped": "linearly dependent tangent rows were removed (Alg. 1 / Appendix E)",
    "warm_start_rejected": "a warm start was available but was not usable (e.g. singular set)",
    "min_norm": "indeterminacy resolved by selecting the minimum-norm impulses among all solutions",
    "min_norm_failed": "the minimum-norm selection did not converge; the solver's own (vertex) "
    "solution is returned",
    "sticking_correction_failed": "the sticking-consistency correction of the desired "
    "accelerations failed; the method solved with the accelerations as given",
    "infeasible": "the contact constraints could not be satisfied even after correction",
}


@njit(cache=True)
def _is_partition(act, fr, nv):
    if act.shape[0] + fr.shape[0] != nv:
        return False
    seen = np.zeros(nv, dtype=np.bool_)
    for arr in (act, fr):
        for i in range(arr.shape[0]):
            k = arr[i]
            if k < 0 or k >= nv or seen[k]:
                return False
            seen[k] = True
    return True


def _as_float_array(name: str, x: Any, shape: tuple[int, ...]) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"ContactProblem.{name}: expected shape {shape}, got {a.shape}")
    if not check_vector(a.reshape(-1)):
        raise ValueError(f"ContactProblem.{name}: contains non-finite values")
    return a


def contact_weights(nc: int, weights: Any) -> np.ndarray:
    """``weights`` as the (nc,) float64 per-contact weights of the minimum-norm selection
    (None: all 1). Raises ValueError naming ``ContactProblem.weights`` unless every weight is
    finite and >= 1."""
    if weights is None:
        return np.ones(nc)
    a = _as_float_array("weights", weights, (nc,))
    if nc and a.min() < 1.0:
        raise ValueError(f"ContactProblem.weights: must be >= 1, got min {a.min()!r}")
    return a


@dataclass
class ContactProblem:
    """One control tick of contact-aware inverse dynamics, fully assembled.

    All arrays are float64 numpy arrays, world frame unless stated otherwise.

    Attributes:
        dt: control period Delta t [s] (> 0).
        Minv: (nv, nv) inverse generalized inertia of the multi-body (block diagonal if a free body
            is appended, eq. (3)); from the analytical algorithm, never a dense inverse of M.
        h: (nv,) C(q, v) v + g(q) [N, N m]; subtract any known external generalized force.
        v: (nv,) current generalized velocity [m/s, rad/s].
        actuated: (nu,) int indices into v of actuated dofs (prescribed accelerations).
        free: (nv - nu,) int indices into v of unactuated dofs (accelerations unknown).
        qdd_des: (nu,) desired accelerations of the actuated dofs [rad/s^2 or m/s^2].
        N, S, T: (nc, nv) generalized contact wrenches along n, s, t (Appendix B).
        phi: (nc,) signed distances [m] (negative = penetration).
        mu: (nc,) Coulomb friction coefficients (>= 0) used by the Coulomb methods.
        contact_ids: length-nc tuple of hashable stable identities, e.g. ("LF_foot", "ground").
        points: (nc, 3) world contact points [m].
        frames: (nc, 3, 3) world rotation per contact with columns (n, s, t).
        friction_edges: k, number of friction pyramid edges for the Coulomb methods (even, >= 4).
        dof_names: optional names of the nv dofs (diagnostics only).
        total_mass: [kg] mass of the robot (and free bodies) the problem describes: the scale of
            the no-slip methods' rank decisions (``rank_mass_ratio``). ``None``: unknown, only
            the relative rank test applies. ``ContactModel.build`` sets it.
        weights: (nc,) per-contact weights >= 1 of the minimum-norm selection (``lcp_noslip``
            with ``min_norm``: ``argmin sum_i weights_i |c_i|^2`` among the impulses of the same
            v+); None: all 1. ``ContactModel.build`` copies its ``sphere_weight`` (the contact
            load ramps of the contact state filter).
    """

    dt: float
    Minv: np.ndarray
    h: np.ndarray
    v: np.ndarray
    actuated: np.ndarray
    free: np.ndarray
    qdd_des: np.ndarray
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    phi: np.ndarray
    mu: np.ndarray
    contact_ids: tuple[Hashable, ...] = ()
    points: np.ndarray | None = None
    frames: np.ndarray | None = None
    friction_edges: int = 4
    dof_names: tuple[str, ...] | None = None
    total_mass: float | None = None
    weights: np.ndarray | None = None
    #: set by :meth:`validate` (and by ``ContactModel.build``, whose problems are valid by
    #: construction) so that ``solve`` does not check a problem twice; reset it to False after
    #: modifying a problem's arrays in place.
    validated: bool = field(default=False, repr=False, compare=False)
    #: (nc, 3) [N s] impulses of a passive impact applied to ``v`` by
    #: ``ContactModel(passive_impact=True)`` (local n, s, t); None if none was applied.
    impact_impulses: np.ndarray | None = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ sizes
    @property
    def nv(self) -> int:
        """Number of generalized velocities of the multi-body."""
        return int(self.v.shape[0])

    @property
    def nu(self) -> int:
        """Number of actuated dofs."""
        return int(self.actuated.shape[0])

    @property
    def nc(self) -> int:
        """Number of candidate contacts (rows of N, S, T)."""
        return int(self.N.shape[0])

    # ------------------------------------------------------------- validation
    def validate(self) -> ContactProblem:
        """Check shapes, finiteness and index sets; normalize dtypes in place.

        Raises:
            ValueError: naming the offending field.
        Returns:
            self (for chaining).
        """
        if self.validated:
            return self
        dt = float(self.dt)
        if not np.isfinite(dt) or dt <= 0.0:
            raise ValueError(f"ContactProblem.dt: must be finite and > 0, got {self.dt!r}")
        self.dt = dt
        if self.total_mass is not None:
            m = float(self.total_mass)
            if not np.isfinite(m) or m <= 0.0:
                raise ValueError(f"ContactProblem.total_mass: must be finite and > 0 or None, "
                                 f"got {self.total_mass!r}")
            self.total_mass = m
        v = np.ascontiguousarray(self.v, dtype=np.float64)
        if v.ndim != 1:
            raise ValueError(f"ContactProblem.v: expected a 1-D array, got shape {v.shape}")
        nv = v.shape[0]
        self.v = _as_float_array("v", v, (nv,))
        self.Minv = _as_float_array("Minv", self.Minv, (nv, nv))
        self.h = _as_float_array("h", self.h, (nv,))
        act = np.ascontiguousarray(self.actuated, dtype=np.int64).reshape(-1)
        fr = np.ascontiguousarray(self.free, dtype=np.int64).reshape(-1)
        if not _is_partition(act, fr, nv):
            raise ValueError(
                "ContactProblem.actuated/free: must partition range(nv) "
                f"(nv={nv}, actuated={act.tolist()}, free={fr.tolist()})"
            )
        self.actuated, self.free = act, fr
        nu = act.shape[0]
        self.qdd_des = _as_float_array("qdd_des", self.qdd_des, (nu,))
        Nm = np.asarray(self.N, dtype=np.float64)
        if Nm.size == 0:
            # zero candidate contacts: accept any empty shape
            self.N, self.S, self.T = (np.zeros((0, nv)) for _ in range(3))
            self.phi, self.mu = np.zeros(0), np.zeros(0)
        else:
            if Nm.ndim != 2:
                raise ValueError(f"ContactProblem.N: expected (nc, {nv}), got {Nm.shape}")
            nc = Nm.shape[0]
            self.N = _as_float_array("N", Nm, (nc, nv))
            self.S = _as_float_array("S", self.S, (nc, nv))
            self.T = _as_float_array("T", self.T, (nc, nv))
            self.phi = _as_float_array("phi", self.phi, (nc,))
            self.mu = _as_float_array("mu", self.mu, (nc,))
        nc = self.N.shape[0]
        if nc and self.mu.min() < 0.0:
            raise ValueError("ContactProblem.mu: friction coefficients must be >= 0")
        if not self.contact_ids:
            self.contact_ids = tuple(range(nc))
        self.contact_ids = tuple(self.contact_ids)
        if len(self.contact_ids) != nc:
            raise ValueError(
                f"ContactProblem.contact_ids: expected {nc} identities, got {len(self.contact_ids)}"
            )
        if len(set(self.contact_ids)) != nc:
            raise ValueError("ContactProblem.contact_ids: identities must be unique")
        if self.points is not None:
            self.points = _as_float_array("points", np.reshape(self.points, (nc, 3)), (nc, 3))
        if self.frames is not None:
            self.frames = _as_float_array("frames", np.reshape(self.frames, (nc, 3, 3)), (nc, 3, 3))
        if self.weights is not None:
            self.weights = contact_weights(nc, self.weights)
        k = int(self.friction_edges)
        if k < 4 or k % 2:
            raise ValueError(f"ContactProblem.friction_edges: must be even and >= 4, got {k}")
        self.friction_edges = k
        self.validated = True
        return self

    # ---------------------------------------------------------------- helpers
    def selection_matrix(self) -> np.ndarray:
        """(nv, nu) actuation selection matrix (``P = B.T`` in eq. 38)."""
        Bm = np.zeros((self.nv, self.nu))
        Bm[self.actuated, np.arange(self.nu)] = 1.0
        return Bm

    def free_velocity(self) -> np.ndarray:
        """``v - dt Minv h`` [m/s, rad/s]: next velocity with zero actuation and no contact."""
        return self.v - self.dt * (self.Minv @ self.h)

    def desired_velocity(self) -> np.ndarray:
        """(nu,) ``qdot_des = v[actuated] + dt qdd_des`` (eq. 39)."""
        return self.v[self.actuated] + self.dt * self.qdd_des

    def pyramid(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Friction pyramid edge wrenches (Sec. 5.1, the matrix F).

        Edge ``j`` of contact ``i`` (row ``i * k + j``, contact-major) is the unit tangent direction
        ``d_ij = cos(2 pi j / k) s_i + sin(2 pi j / k) t_i``; the generalized wrench row is
        ``cos(.) S[i] + sin(.) T[i]``. For ``k = 4`` the edges are (s, t, -s, -t).

        Returns:
            F: (nc * k, nv) edge wrench rows; D: (k, 2) edge coefficients on (s, t), so a pyramid
            impulse ``beta`` (nc, k) >= 0 gives ``c_S = beta @ D[:, 0]``, ``c_T = beta @ D[:, 1]``.
        """
        k = int(self.friction_edges if k is None else k)
        ang = 2.0 * np.pi * np.arange(k) / k
        D = np.stack([np.cos(ang), np.sin(ang)], axis=1)
        D[np.abs(D) < 1e-15] = 0.0
        F = D[None, :, 0, None] * self.S[:, None, :] + D[None, :, 1, None] * self.T[:, None, :]
        return F.reshape(self.nc * k, self.nv), D

    def dynamics_residual(self, tau: np.ndarray, impulses: np.ndarray, v_next: np.ndarray) -> float:
        """Max-abs residual of eq. (37) in velocity form.

        ``v_next - v - Minv (dt (B tau - h) + N^T c_N + S^T c_S + T^T c_T)`` [m/s, rad/s].
        ``impulses`` is (nc, 3) [N s] in the contact frames (n, s, t).
        """
        gen = -self.dt * self.h
        gen = gen.copy()
        gen[self.actuated] += self.dt * np.asarray(tau)
        c = np.asarray(impulses).reshape(self.nc, 3)
        gen += self.N.T @ c[:, 0] + self.S.T @ c[:, 1] + self.T.T @ c[:, 2]
        r = np.asarray(v_next) - self.v - self.Minv @ gen
        return float(np.max(np.abs(r))) if r.size else 0.0

    def world_forces(self, local: np.ndarray) -> np.ndarray:
        """Rotate (nc, 3) contact-frame vectors (n, s, t) to world (needs ``frames``)."""
        if self.frames is None:
            raise ValueError("ContactProblem.frames: required to express forces in world frame")
        return (self.frames @ np.asarray(local).reshape(self.nc, 3, 1))[:, :, 0]

    def subset(self, rows: Sequence[int] | np.ndarray) -> ContactProblem:
        """The same problem restricted to the contact rows ``rows`` (e.g. for Alg. 3)."""
        r = np.asarray(rows, dtype=np.int64)
        return dataclasses.replace(
            self,
            N=self.N[r],
            S=self.S[r],
            T=self.T[r],
            phi=self.phi[r],
            mu=self.mu[r],
            contact_ids=tuple(self.contact_ids[i] for i in r),
            points=None if self.points is None else self.points[r],
            frames=None if self.frames is None else self.frames[r],
            impact_impulses=None if self.impact_impulses is None else self.impact_impulses[r],
        )


@dataclass
class SolverStats:
    """Solver statistics of one solve.

    Attributes:
        method: method name ("lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip").
        iterations: pivots (LCP methods) or iterations (QP methods) of the main solve.
        warm_start_used: True if information from the previous tick was used as a starting point.
        residual: max-abs residual of the method's optimality/complementarity conditions
            (method-specific, documented by each method) in impulse/velocity units.
        solve_time_s: wall-clock time of ``solve`` [s].
        flags: tuple of strings from :data:`FLAGS`.
        info: free-form extra diagnostics (dict, method specific).
    """

    method: str
    iterations: int = 0
    warm_start_used: bool = False
    residual: float = 0.0
    solve_time_s: float = 0.0
    flags: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)

    def add_flag(self, flag: str) -> None:
        """Append a documented flag (unknown flags raise ValueError)."""
        if flag not in FLAGS:
            raise ValueError(f"SolverStats.flags: unknown flag {flag!r}")
        if flag not in self.flags:
            self.flags = (*self.flags, flag)


@dataclass
class ContactResult:
    """Result of one contact-aware inverse dynamics solve.

    Attributes:
        tau: (nu,) actuator torques/forces [N m or N], ordered as ``problem.actuated``.
        contact_forces_local: (nc, 3) contact forces (normal, s, t) [N] = impulses / dt.
        contact_forces_world: (nc, 3) the same in world axes [N] (force on the robot link);
            zeros if the problem has no ``frames``.
        impulses: (nc, 3) solved impulses (c_N, c_S, c_T) [N s] in contact frames.
        v_next: (nv,) post-step generalized velocity v+ [m/s, rad/s].
        qdd: (nv,) resulting generalized accelerations (v_next - v) / dt.
        stats: :class:`SolverStats`.
        consistent: False if qdd[actuated] deviates from qdd_des (Sec. 4.5 correction or fallback).
        contact_ids: identities of the rows of the force arrays.
    """

    tau: np.ndarray
    contact_forces_local: np.ndarray
    contact_forces_world: np.ndarray
    impulses: np.ndarray
    v_next: np.ndarray
    qdd: np.ndarray
    stats: SolverStats
    consistent: bool = True
    contact_ids: tuple[Hashable, ...] = ()

    @classmethod
    def from_impulses(
        cls,
        problem: ContactProblem,
        tau: np.ndarray,
        impulses: np.ndarray,
        v_next: np.ndarray,
        stats: SolverStats,
        consistent: bool = True,
    ) -> ContactResult:
        """Build a result from solved (tau, impulses, v_next); fills forces and qdd."""
        imp = np.asarray(impulses, dtype=np.float64).reshape(problem.nc, 3)
        loc = imp / problem.dt
        world = problem.world_forces(loc) if problem.frames is not None else np.zeros_like(loc)
        vn = np.asarray(v_next, dtype=np.float64)
        return cls(
            tau=np.asarray(tau, dtype=np.float64),
            contact_forces_local=loc,
            contact_forces_world=world,
            impulses=imp,
            v_next=vn,
            qdd=(vn - problem.v) / problem.dt,
            stats=stats,
            consistent=consistent,
            contact_ids=tuple(problem.contact_ids),
        )

    @property
    def all_finite(self) -> bool:
        """True if every numeric output is finite."""
        return bool(
            check_vector(np.ascontiguousarray(self.tau).reshape(-1))
            and check_vector(np.ascontiguousarray(self.impulses).reshape(-1))
            and check_vector(np.ascontiguousarray(self.v_next).reshape(-1))
        )


@dataclass
class MethodState:
    """Warm-start memory of one method, keyed by contact identity.

    Attributes:
        contact_ids: identities of the previous tick's contacts (row order of ``impulses``).
        impulses: (nc_prev, 3) previous impulses (c_N, c_S, c_T) [N s].
        active_ids: identities in the previous tick's non-basic (force-carrying) set, e.g. the
            PPM non-basic set of Alg. 2 or Lemke's final basis, as identities not indices.
        data: method-specific extra data (e.g. osqp primal/dual vectors) keyed by str.
    """

    contact_ids: tuple[Hashable, ...] = ()
    impulses: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    active_ids: tuple[Hashable, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)

    def impulses_for(self, ids: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
        """Previous impulses aligned to ``ids``.

        Returns:
            (len(ids), 3) impulses (zeros for contacts unseen last tick) and a bool mask of
            contacts that were present last tick.
        """
        index = {cid: i for i, cid in enumerate(self.contact_ids)}
        out = np.zeros((len(ids), 3))
        known = np.zeros(len(ids), dtype=bool)
        for r, cid in enumerate(ids):
            j = index.get(cid)
            if j is not None:
                out[r] = self.impulses[j]
                known[r] = True
        return out, known

    def active_rows(self, ids: Sequence[Hashable]) -> list[int]:
        """Row indices (into ``ids``) of previously active contacts still present."""
        act = set(self.active_ids)
        return [r for r, cid in enumerate(ids) if cid in act]


class SolverState:
    """Warm start carried between control ticks, one :class:`MethodState` per method.

    Contacts are matched by identity, so contacts may appear and disappear between ticks.
    """

    def __init__(self, options: dict[str, dict[str, Any]] | None = None) -> None:
        """Args:
        options: default solver options per method, e.g. ``{"lcp_noslip": {"min_norm": True}}``;
            merged under the keyword options of each ``solve`` call (the call wins). Lets a
            controller that only holds the state configure the methods.
        """
        self._methods: dict[str, MethodState] = {}
        self.ticks = 0
        self.options: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (options or {}).items()}

    def get(self, method: str) -> MethodState:
        """The method's state (created empty on first use)."""
        st = self._methods.get(method)
        if st is None:
            st = MethodState()
            self._methods[method] = st
        return st

    def has(self, method: str) -> bool:
        """True if the method has stored a previous solution."""
        st = self._methods.get(method)
        return st is not None and len(st.contact_ids) > 0

    def reset(self, method: str | None = None) -> None:
        """Forget the warm start of one method (or of all methods); ``options`` are kept."""
        if method is None:
            self._methods.clear()
            self.ticks = 0
        else:
            self._methods.pop(method, None)
