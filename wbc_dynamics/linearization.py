"""Geometric linearization of (moving-base) robot dynamics (Saccon et al.).

Module-level functions taking a :class:`~wbc_dynamics.model.RobotModel` first; the model exposes
them as methods of the same names.

Tangent-space conventions
-------------------------
* Configuration tangent ``dq`` (length nv): floating base ``[delta H (6), delta s]`` where
  ``delta H = [linear (m), angular (rad)]`` is the *left-trivialized* (body-frame) perturbation
  of the base pose, ``H(delta) = H exp(delta)`` -- exactly how :meth:`.RobotModel.integrate`
  moves the base and how Pinocchio differentiates its free-flyer joint; then the joint
  positions. Fixed base: just ``delta s``. No Euler angles, no singularities.
* Velocity ``v`` is the core's: base twist in the base frame [linear; angular], joint rates.
* State tangent of :func:`linearize`: ``x = [dq, dv]`` (2 nv), input ``tau`` (nv; the first six
  entries the base wrench in the base frame for a floating base).

All outputs are new arrays; the workspaces are allocated once per model (``model._deriv_ws``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .iwim import free_acceleration, iwim
from .kernels import derivatives as dk
from .lie import matrix_to_quat, quat_to_matrix, skew
from .model_view import ModelView, _fast, workspace

__all__ = [
    "aba_derivatives",
    "discretize",
    "linearize",
    "rnea_derivatives",
    "state_difference",
    "tangent_velocity_map",
    "warmup",
]


def _q(model: ModelView, q) -> np.ndarray:
    return _fast(q, model.nq, "q")


def _check(model: ModelView, st: int, v: str = "v", a: str = "a") -> None:
    if st:
        model._raise(st, v=v, a=a)


def _derivative_call(model: ModelView, q, v, x, x_name: str) -> tuple:
    """The arguments of a derivatives kernel: q, v and the third vector ``x`` (``x_name``: a or
    tau) checked and converted, the model's workspace, and three (nv, nv) outputs."""
    nv = model.nv
    return (_q(model, q), _fast(v, nv, "v"), _fast(x, nv, x_name), workspace(model),
            tuple(np.empty((nv, nv)) for _ in range(3)))


def rnea_derivatives(
    model: ModelView, q: ArrayLike, v: ArrayLike, a: ArrayLike, *, gravity: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytical derivatives of inverse dynamics tau = ID(q, v, a) (Saccon et al., Tables 5-8).

    Returns ``(dtau_dq, dtau_dv, M)``, each (nv, nv): ``dtau_dq[:, :6]`` for a floating base is
    the left-trivialized derivative w.r.t. the base pose H (Table 5), the other columns w.r.t.
    the joint positions s (Table 6); ``dtau_dv`` w.r.t. the base twist (Table 7) and joint
    rates (Table 8); ``M = dtau/da``. Rows are [base wrench (N, N m; base frame); joint torques
    (N m or N)]. ``gravity=False`` differentiates the dynamics without gravity.
    """
    q, v, a, ws, (dq, dv, M) = _derivative_call(model, q, v, a, "a")
    st = dk.rnea_derivatives(
        q, v, a, gravity, dq, dv, M, model._model, ws.data, ws.composites, ws.SC,
    )  # fmt: skip
    _check(model, st)
    return dq, dv, M


def aba_derivatives(
    model: ModelView, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Derivatives of forward dynamics qdd = FD(q, v, tau): ``(dqdd_dq, dqdd_dv, Minv)``.

    Uses d FD = -M^-1 d ID evaluated at qdd = FD(q, v, tau) (Saccon et al., Sec. on the linearized
    forward dynamics), with M^-1 from the analytical algorithm (IMMAmb, Saccon et al., Table 9; the
    core's ``minverse``). ``dqdd_dq`` is w.r.t. the tangent [delta H, delta s] (1/s^2 units of
    the respective coordinates), ``dqdd_dv`` w.r.t. v (1/s), ``Minv = dqdd/dtau``.
    """
    q, v, tau, ws, (Minv, ddq_dq, ddq_dv) = _derivative_call(model, q, v, tau, "tau")
    _aba_derivatives_into(model, q, v, tau, ws, Minv, ddq_dq, ddq_dv)
    return ddq_dq, ddq_dv, Minv


def _aba_derivatives_into(model: ModelView, q: np.ndarray, v: np.ndarray, tau: np.ndarray, ws,
                          Minv: np.ndarray, ddq_dq: np.ndarray, ddq_dv: np.ndarray) -> None:
    """The derivatives kernel of :func:`aba_derivatives` on checked inputs into the (nv, nv)
    outputs ``Minv``, ``ddq_dq``, ``ddq_dv``, with the model's workspace ``ws``; a bad state
    raises ValueError naming it."""
    st = dk.aba_derivatives(
        q, v, tau, ws.ddq, ws.dq, ws.dv, ws.M, Minv, ddq_dq, ddq_dv, ws.FP, model._model,
        ws.fext, ws.data, ws.composites, ws.SC,
    )  # fmt: skip
    _check(model, st, a="tau")


def tangent_velocity_map(model: ModelView, v: ArrayLike) -> np.ndarray:
    """d(delta q)/dt = A_qq delta q + delta v: the (nv, nv) block A_qq at velocity v.

    For a base moved as H exp(delta), the error delta between a perturbed and the nominal
    trajectory obeys d delta/dt = delta v - ad_v delta to first order, with ad_v the spatial
    cross-product matrix (v x) of the base twist; joints (a vector space) contribute zero.
    """
    nv = model.nv
    v = _fast(v, nv, "v")
    A = np.zeros((nv, nv))
    if model.floating_base:
        lin, ang = v[:3], v[3:6]
        A[:3, :3] = -_skew(ang)
        A[:3, 3:6] = -_skew(lin)
        A[3:6, 3:6] = -_skew(ang)
    return A


def _skew(w: np.ndarray) -> np.ndarray:
    return skew(w)


def _so3_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector (rad) of R, via the quaternion (robust for all angles up to pi)."""
    x, y, z, w = matrix_to_quat(R)  # w >= 0: angle in [0, pi]
    s = float(np.sqrt(x * x + y * y + z * z))
    if s < 1e-12:
        return 2.0 * np.array([x, y, z])  # angle ~ 2 s, axis xyz / s
    theta = 2.0 * np.arctan2(s, w)
    return theta / s * np.array([x, y, z])


def _se3_log(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Twist [linear, angular] xi with exp(xi) = (R, p) (inverse of :func:`lie.se3_exp`)."""
    w = _so3_log(R)
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < 1e-2:
        t2 = theta * theta
        c = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    else:
        c = (1.0 - theta * np.sin(theta) / (2.0 * (1.0 - np.cos(theta)))) / theta**2
    Vinv = np.eye(3) - 0.5 * W + c * (W @ W)
    return np.concatenate([Vinv @ p, w])


def state_difference(model: ModelView, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
    """The tangent dq (nv) with ``model.integrate(q0, dq) == q1``: the inverse of integrate.

    Floating base: [log(H0^-1 H1) (linear m, angular rad, body frame of H0), s1 - s0]. Use it
    to express a state error in the coordinates of :func:`linearize` (e.g. for LQR feedback
    ``tau = tau_eq - K [state_difference(q_eq, q); v - v_eq]``).
    """
    q0 = _q(model, q0)
    q1 = _q(model, q1)
    if not model.floating_base:
        return q1 - q0
    R0 = quat_to_matrix(q0[3:7])
    R1 = quat_to_matrix(q1[3:7])
    out = np.empty(model.nv)
    out[:6] = _se3_log(R0.T @ R1, R0.T @ (q1[:3] - q0[:3]))
    out[6:] = q1[7:] - q0[7:]
    return out


def discretize(A: np.ndarray, B: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Zero-order-hold discretization: ``Ad = expm(A dt)``, ``Bd = int_0^dt expm(A s) ds B``.

    Computed with one matrix exponential of the augmented matrix [[A, B], [0, 0]] dt.
    """
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be a positive finite number of seconds, got {dt}")
    import scipy.linalg  # only needed here: keep `import wbc_dynamics` light

    n, m = B.shape
    Z = np.zeros((n + m, n + m))
    Z[:n, :n] = A * dt
    Z[:n, n:] = B * dt
    E = scipy.linalg.expm(Z)
    return E[:n, :n].copy(), E[:n, n:].copy()


def linearize(
    model: ModelView, q: ArrayLike, v: ArrayLike, tau: ArrayLike, dt: float | None = None,
    input_matrix: ArrayLike | None = None,
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
    ``input_matrix`` S (nv, m), optional: inputs u with tau = S u (underactuation, couplings);
    then B = [[0], [M^-1 S]] with M^-1 S from the O(n) IWIM recursion (:func:`.iwim.iwim`).
    Shapes: A (2 nv, 2 nv), B (2 nv, nv) or (2 nv, m).
    """
    nv = model.nv
    q = _q(model, q)
    v = _fast(v, nv, "v")
    tau = _fast(tau, nv, "tau")
    ws = workspace(model)
    A = np.zeros((2 * nv, 2 * nv))
    with_b = input_matrix is None
    B = np.zeros((2 * nv, nv)) if with_b else ws.empty_b
    _aba_derivatives_into(model, q, v, tau, ws, ws.Minv, ws.ddq_dq, ws.ddq_dv)
    dk.continuous_matrices(v, model.floating_base, with_b, A, B, ws.Minv, ws.ddq_dq, ws.ddq_dv)
    if not with_b:
        Bhat = iwim(model, q, input_matrix)
        B = np.zeros((2 * nv, Bhat.shape[1]))
        B[nv:, :] = Bhat
    if dt is None:
        return A, B
    return discretize(A, B, float(dt))


def warmup(model: ModelView) -> float:
    """Compile/load and run every derivative kernel once for ``model`` (seconds taken).

    Allocates the model's derivative workspace. Call it at start-up (e.g. from
    ``RobotModel.warmup``) so that no control tick pays for numba compilation.
    """
    import time

    t0 = time.perf_counter()
    q = model.neutral()
    z = np.zeros(model.nv)
    rnea_derivatives(model, q, z, z)
    rnea_derivatives(model, q, z, z, gravity=False)
    aba_derivatives(model, q, z, z)
    linearize(model, q, z, z)
    linearize(model, q, z, z, input_matrix=np.eye(model.nv)[:, :1])
    iwim(model, q, np.eye(model.nv))
    free_acceleration(model, q, z)
    return time.perf_counter() - t0
