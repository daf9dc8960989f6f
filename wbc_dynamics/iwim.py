"""Inertia-weighted input matrix and decoupled task-space control (Krög et al.).

With inputs u entering the equations of motion as M qdd + h = B u, the accelerations split into
qdd = qdd_0 + B_hat u with the free acceleration qdd_0 = -M^-1 h (:func:`free_acceleration`)
and the inertia-weighted input matrix (IWIM) B_hat = M^-1 B (:func:`iwim`, eqs. (8)-(9),
computed by the O(n) forward-dynamics recursions without forming M^-1 and without inverting
the unit lower-triangular Gamma). The task-space problem (1) then becomes the unconstrained
least-squares problem (3) in u alone (:func:`task_space_input`).

Frames and units follow the core (:mod:`wbc_dynamics.model`): v, qdd in the base frame for a
floating base; B rows are [base wrench (6); joints], its columns the inputs (any units, e.g.
motor torques through a transmission).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .kernels import derivatives as dk
from .kernels import world
from .model_view import ModelView, _fast, _vector, workspace

__all__ = ["free_acceleration", "iwim", "task_space_input"]


def _input_matrix(model: ModelView, B) -> np.ndarray:
    """B as a C-contiguous float64 (nv, m) matrix (finiteness is checked in the kernel)."""
    if (
        type(B) is np.ndarray
        and B.dtype == np.float64
        and B.ndim == 2
        and B.shape[0] == model.nv
        and B.flags.c_contiguous
    ):
        return B
    try:
        Bm = np.asarray(B, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"B must be a numeric ({model.nv}, m) matrix") from None
    if Bm.ndim == 1:
        Bm = Bm[:, None]
    if Bm.ndim != 2 or Bm.shape[0] != model.nv:
        raise ValueError(f"B must have shape ({model.nv}, m), got {Bm.shape}")
    return np.ascontiguousarray(Bm)


def iwim(model: ModelView, q: ArrayLike, B: ArrayLike) -> np.ndarray:
    """The inertia-weighted input matrix M(q)^-1 B, shape (nv, m) (Krög et al., eq. (9)).

    ``B`` (nv, m): how the m inputs enter the generalized forces (1-D: one input). Runs the
    inward recursion of the articulated inertias and the input wrenches B* (eq. (5)) and the
    outward forward substitution with Gamma (eqs. (7)-(8)): O(n m), M^-1 is never formed.
    Units: (1/kg, 1/(kg m^2), ...) times B's.
    """
    q = _fast(q, model.nq, "q")
    Bm = _input_matrix(model, B)
    ws = workspace(model)
    Pu, Pa = ws.iwim_buffers(Bm.shape[1])
    out = np.empty_like(Bm)
    st = dk.iwim(q, Bm, out, Pu, Pa, model._model, ws.data, ws.SC)
    if st:
        model._raise(st, a="B")
    return out


def free_acceleration(model: ModelView, q: ArrayLike, v: ArrayLike) -> np.ndarray:
    """qdd_0 = -M^-1 h(q, v): the accelerations with all inputs zero (Krög et al., eq. (2)).

    Gravity and velocity terms only (ABA with tau = 0). Floating base: base acceleration in the
    base frame (m/s^2, rad/s^2) first.
    """
    q = _fast(q, model.nq, "q")
    v = _fast(v, model.nv, "v")
    ws = workspace(model)
    ddq = np.empty(model.nv)
    st = world.aba(
        q, v, model._zeros_nv, ws.fext, False, ddq, model._model, ws.data, ws.SC,
    )  # fmt: skip
    if st:
        model._raise(st)
    return ddq


def task_space_input(
    model: ModelView,
    q: ArrayLike,
    v: ArrayLike,
    J: ArrayLike,
    Jdot_v: ArrayLike,
    task_acceleration: ArrayLike,
    B: ArrayLike,
    *,
    damping: float = 0.0,
    lower: ArrayLike | None = None,
    upper: ArrayLike | None = None,
    info: dict | None = None,
) -> np.ndarray:
    """Least-squares input u for a commanded task acceleration (Krög et al., eq. (3)).

    Minimizes ``1/2 |J B_hat u + J qdd_0 + Jdot_v - task_acceleration|^2 + damping/2 |u|^2`` with
    B_hat = :func:`iwim` (q, B) and qdd_0 = :func:`free_acceleration` (q, v).

    * ``J`` (k, nv) task Jacobian, ``Jdot_v`` (k,) its bias J̇ v, ``task_acceleration`` (k,)
      the commanded task acceleration, in the same frame/units as J (e.g. rows of
      :meth:`.RobotModel.jacobian` and :meth:`.RobotModel.jacobian_dot_times_v`).
    * ``damping`` >= 0 (Tikhonov): trades task accuracy for smaller inputs and keeps the
      problem well posed when J B_hat is rank deficient (redundant inputs, singular poses).
      With ``damping = 0`` and no bounds the minimum-norm least-squares solution is returned
      (SVD pseudo-inverse).
    * ``lower``/``upper`` (m,) optional input bounds (use +-inf for unbounded entries). Then the
      bounded problem is a convex QP solved with OSQP (eps 1e-9); if OSQP does not report
      solved, the bounded-clipped unconstrained solution is returned and
      ``info["fallback"]`` is True.

    ``info``, if given, receives ``residual`` (task error norm at u), ``status`` ("lstsq",
    "damped", "osqp solved", ...), ``fallback`` (bool). Returns u (m,).
    """
    nv = model.nv
    Bm = _input_matrix(model, B)
    m = Bm.shape[1]
    Jm = np.asarray(J, dtype=np.float64)
    if Jm.ndim == 1:
        Jm = Jm[None, :]
    if Jm.ndim != 2 or Jm.shape[1] != nv:
        raise ValueError(f"J must have shape (k, {nv}), got {Jm.shape}")
    k = Jm.shape[0]
    jv = _vector(Jdot_v, k, "Jdot_v")
    acc = _vector(task_acceleration, k, "task_acceleration")
    for name, x in (("J", Jm), ("Jdot_v", jv), ("task_acceleration", acc)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf")
    if not (np.isfinite(damping) and damping >= 0.0):
        raise ValueError(f"damping must be a finite number >= 0, got {damping}")
    lo = np.full(m, -np.inf) if lower is None else _vector(lower, m, "lower").copy()
    hi = np.full(m, np.inf) if upper is None else _vector(upper, m, "upper").copy()
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
        raise ValueError("lower/upper contain NaN")
    if np.any(lo > hi):
        bad = int(np.argmax(lo > hi))
        raise ValueError(f"input bounds: lower[{bad}] = {lo[bad]} > upper[{bad}] = {hi[bad]}")
    Bhat = iwim(model, q, Bm)
    qdd0 = free_acceleration(model, q, v)
    A = Jm @ Bhat
    b = acc - Jm @ qdd0 - jv
    bounded = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
    fallback = False
    if damping > 0.0:
        u = np.linalg.solve(A.T @ A + damping * np.eye(m), A.T @ b)
        status = "damped"
    else:
        u = np.linalg.lstsq(A, b, rcond=None)[0]
        status = "lstsq"
    if bounded and not np.all((u >= lo) & (u <= hi)):
        u, status, fallback = _bounded(A, b, damping, lo, hi, u)
    if info is not None:
        info["residual"] = float(np.linalg.norm(A @ u - b))
        info["status"] = status
        info["fallback"] = fallback
    return u


def _bounded(A, b, damping, lo, hi, u_free):
    """The box-constrained problem with OSQP; falls back to clipping (flagged)."""
    import osqp
    import scipy.sparse as sp

    m = A.shape[1]
    # scale so the tolerances are relative to the problem's size
    P = A.T @ A + damping * np.eye(m)
    c = -(A.T @ b)
    scale = max(1.0, float(np.max(np.abs(P))))
    big = 1e30
    solver = osqp.OSQP()
    solver.setup(
        sp.csc_matrix(np.triu(P / scale)),
        c / scale,
        sp.identity(m, format="csc"),
        np.where(np.isfinite(lo), lo, -big),
        np.where(np.isfinite(hi), hi, big),
        verbose=False,
        eps_abs=1e-9,
        eps_rel=1e-9,
        max_iter=20000,
        polishing=True,
    )
    res = solver.solve(raise_error=False)
    status_val = int(res.info.status_val)
    if status_val in (1, 2) and np.all(np.isfinite(res.x)):
        u = np.clip(res.x, lo, hi)
        return u, f"osqp {res.info.status}", False
    return np.clip(u_free, lo, hi), f"osqp {res.info.status}: clipped", True
