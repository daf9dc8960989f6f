"""Geometric linearization of (moving-base) robot dynamics (seed 003).

Module-level functions taking a :class:`~wbc_dynamics.model.RobotModel` first; the model exposes
them as methods of the same names.

Tangent-space conventions
-------------------------
* Configuration tangent ``dq`` (length nv): floating base ``[delta H (6), delta s]`` where
  ``delta H = [linear (m), angular (rad)]`` is the *left-trivialized* (body-frame) perturbation
  of the base pose, ``H(delta) = H exp(delta)`` -- exactly how :meth:`RobotModel.integrate`
  moves the base and how Pinocchio differentiates its free-flyer joint; then the joint
  positions. Fixed base: just ``delta s``. No Euler angles, no singularities.
* Velocity ``v`` is the core's: base twist in the base frame [linear; angular], joint rates.
* State tangent of :func:`linearize`: ``x = [dq, dv]`` (2 nv), input ``tau`` (nv; the first six
  entries the base wrench in the base frame for a floating base).

All outputs are new arrays; the workspaces are allocated once per model (``model._deriv_ws``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .kernels import derivatives as dk
from .kernels import world
from .model import RobotModel, _vector

__all__ = [
    "aba_derivatives",
    "discretize",
    "linearize",
    "rnea_derivatives",
    "tangent_velocity_map",
]


class _DerivWorkspace:
    """Preallocated arrays of the derivative kernels for one model."""

    def __init__(self, model: RobotModel) -> None:
        nb = model._nb
        nv = model.nv
        self.W, self.SC = world.workspace(nb)
        self.DW = np.zeros((nb, dk.N_DSLOTS, 6, 6))
        self.FP = np.zeros((nb + 1, 6, nv))
        self.Minv = np.zeros((nv, nv))
        self.dq = np.zeros((nv, nv))
        self.dv = np.zeros((nv, nv))
        self.M = np.zeros((nv, nv))
        self.ddq = np.zeros(nv)
        self.fext = np.zeros((nb, 6))
        self.iwim_m = -1
        self.Pu = np.zeros((nb, 6, 0))
        self.Pa = np.zeros((nb, 6, 0))

    def iwim_buffers(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        if m != self.iwim_m:
            nb = self.W.shape[0]
            self.Pu = np.zeros((nb, 6, m))
            self.Pa = np.zeros((nb, 6, m))
            self.iwim_m = m
        return self.Pu, self.Pa


def workspace(model: RobotModel) -> _DerivWorkspace:
    """The model's derivative workspace (created, and the kernels warmed, on first use)."""
    ws = getattr(model, "_deriv_ws", None)
    if ws is None:
        ws = _DerivWorkspace(model)
        model._deriv_ws = ws
    return ws


def _q(model: RobotModel, q) -> np.ndarray:
    return _vector(q, model.nq, "q")


def _check(model: RobotModel, st: int, v: str = "v", a: str = "a") -> None:
    if st:
        model._raise(st, v=v, a=a)


def rnea_derivatives(
    model: RobotModel, q, v, a, *, gravity: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytical derivatives of inverse dynamics tau = ID(q, v, a) (seed 003, Tables 5-8).

    Returns ``(dtau_dq, dtau_dv, M)``, each (nv, nv): ``dtau_dq[:, :6]`` for a floating base is
    the left-trivialized derivative w.r.t. the base pose H (Table 5), the other columns w.r.t.
    the joint positions s (Table 6); ``dtau_dv`` w.r.t. the base twist (Table 7) and joint
    rates (Table 8); ``M = dtau/da``. Rows are [base wrench (N, N m; base frame); joint torques
    (N m or N)]. ``gravity=False`` differentiates the dynamics without gravity.
    """
    nv = model.nv
    q = _q(model, q)
    v = _vector(v, nv, "v")
    a = _vector(a, nv, "a")
    ws = workspace(model)
    dq = np.empty((nv, nv))
    dv = np.empty((nv, nv))
    M = np.empty((nv, nv))
    st = dk.rnea_derivatives(
        q, v, a, gravity, dq, dv, M, model._topo, model._tree, model._Sm, model.gravity,
        ws.W, ws.DW, ws.SC,
    )  # fmt: skip
    _check(model, st)
    return dq, dv, M


def aba_derivatives(model: RobotModel, q, v, tau) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Derivatives of forward dynamics qdd = FD(q, v, tau): ``(dqdd_dq, dqdd_dv, Minv)``.

    Uses d FD = -M^-1 d ID evaluated at qdd = FD(q, v, tau) (seed 003, Sec. on the linearized
    forward dynamics), with M^-1 from the analytical algorithm (IMMAmb, seed 003 Table 9; the
    core's ``minverse``). ``dqdd_dq`` is w.r.t. the tangent [delta H, delta s] (1/s^2 units of
    the respective coordinates), ``dqdd_dv`` w.r.t. v (1/s), ``Minv = dqdd/dtau``.
    """
    nv = model.nv
    q = _q(model, q)
    v = _vector(v, nv, "v")
    tau = _vector(tau, nv, "tau")
    ws = workspace(model)
    Minv = np.empty((nv, nv))
    ddq_dq = np.empty((nv, nv))
    ddq_dv = np.empty((nv, nv))
    st = dk.aba_derivatives(
        q, v, tau, ws.ddq, ws.dq, ws.dv, ws.M, Minv, ddq_dq, ddq_dv, ws.FP, model._topo,
        model._tree, model._Sm, model.gravity, ws.fext, ws.W, ws.DW, ws.SC,
    )  # fmt: skip
    _check(model, st, a="tau")
    return ddq_dq, ddq_dv, Minv


def tangent_velocity_map(model: RobotModel, v) -> np.ndarray:
    """d(delta q)/dt = A_qq delta q + delta v: the (nv, nv) block A_qq at velocity v.

    For a base moved as H exp(delta), the error delta between a perturbed and the nominal
    trajectory obeys d delta/dt = delta v - ad_v delta to first order, with ad_v the spatial
    cross-product matrix (v x) of the base twist; joints (a vector space) contribute zero.
    """
    nv = model.nv
    v = _vector(v, nv, "v")
    A = np.zeros((nv, nv))
    if model.floating_base:
        lin, ang = v[:3], v[3:6]
        A[:3, :3] = -_skew(ang)
        A[:3, 3:6] = -_skew(lin)
        A[3:6, 3:6] = -_skew(ang)
    return A


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def discretize(A: np.ndarray, B: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Zero-order-hold discretization: ``Ad = expm(A dt)``, ``Bd = int_0^dt expm(A s) ds B``.

    Computed with one matrix exponential of the augmented matrix [[A, B], [0, 0]] dt.
    """
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be a positive finite number of seconds, got {dt}")
    n, m = B.shape
    Z = np.zeros((n + m, n + m))
    Z[:n, :n] = A * dt
    Z[:n, n:] = B * dt
    E = scipy.linalg.expm(Z)
    return E[:n, :n].copy(), E[:n, n:].copy()


def linearize(
    model: RobotModel, q, v, tau, dt: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """State-space matrices of the dynamics about (q, v, tau) on the tangent [dq, dv].

    Continuous time (``dt=None``): d/dt [dq; dv] = A [dq; dv] + B dtau with

        A = [[A_qq, I], [dFD/dq, dFD/dv]],  B = [[0], [M^-1]],

    ``A_qq`` from :func:`tangent_velocity_map` (-ad of the base twist; zero for a fixed base or
    at rest), the FD derivatives from :func:`aba_derivatives`. Any state is allowed: an
    equilibrium (v = 0, tau = gravity compensation) or a point on a trajectory, where A, B
    describe the error dynamics about the trajectory through (q, v) driven by tau.

    Discrete time (``dt`` in s): the zero-order-hold discretization of the above
    (:func:`discretize`); exact for the linearized system, and at an equilibrium the exact
    linearization of the sampled nonlinear flow with the input held over dt.
    Shapes: A (2 nv, 2 nv), B (2 nv, nv).
    """
    nv = model.nv
    ddq_dq, ddq_dv, Minv = aba_derivatives(model, q, v, tau)
    A = np.zeros((2 * nv, 2 * nv))
    B = np.zeros((2 * nv, nv))
    A[:nv, :nv] = tangent_velocity_map(model, v)
    A[:nv, nv:] = np.eye(nv)
    A[nv:, :nv] = ddq_dq
    A[nv:, nv:] = ddq_dv
    B[nv:, :] = Minv
    if dt is None:
        return A, B
    return discretize(A, B, float(dt))
