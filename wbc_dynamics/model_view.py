"""A robot model as the model-level algorithm modules see it, below :mod:`wbc_dynamics.model`.

:mod:`wbc_dynamics.linearization` and :mod:`wbc_dynamics.iwim` are module-level functions that
take a :class:`~wbc_dynamics.model.RobotModel` first, and ``RobotModel`` exposes them as methods
of the same names, so its module imports theirs. What they need of a model is here instead:

* :class:`ModelView` -- the attributes they read (for annotations: a structural type that a
  ``RobotModel`` satisfies);
* ``_vector`` -- the core's argument conversion (``RobotModel`` checks its inputs with it
  too) and ``_fast``, its shortcut for arguments that need none;
* :func:`workspace` -- the model's preallocated arrays of the derivative and IWIM kernels,
  created on first use.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .kernels import derivatives as dk
from .kernels import world
from .kernels.dynamics import ModelArrays, ModelRecord

__all__ = ["ModelView", "workspace"]


class ModelView(Protocol):
    """The part of a :class:`~wbc_dynamics.model.RobotModel` that the model-level algorithm
    modules use: dimensions, the kernel model (arrays and record), gravity and the core's
    error report."""

    nq: int
    nv: int
    floating_base: bool
    _nb: int
    _arrays: ModelArrays
    _model: ModelRecord
    _zeros_nv: np.ndarray

    @property
    def gravity(self) -> np.ndarray: ...

    def neutral(self) -> np.ndarray: ...

    def _raise(
        self, status: int, v: str = "v", a: str = "a", q: np.ndarray | None = None
    ) -> None: ...


_ND = np.ndarray
_F64 = np.dtype(np.float64)


def _vector(x, n: int, name: str) -> np.ndarray:
    """``x`` as a contiguous float64 vector of length n, or ValueError naming it.

    Other dtypes and layouts are converted (a copy) here: handing them to the kernels would make
    numba compile a new specialization in the middle of a control tick.
    """
    if type(x) is not _ND or x.dtype is not _F64 or x.ndim != 1 or not x.flags.c_contiguous:
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a vector of {n} numbers") from None
        if x.ndim != 1:
            raise ValueError(f"{name} must be a 1-D vector of length {n}, got shape {x.shape}")
    if x.shape[0] != n:
        raise ValueError(f"{name} must have length {n}, got {x.shape[0]}")
    return x


def _fast(x, n: int, name: str) -> np.ndarray:
    """x if it already is a contiguous float64 vector of length n, else the core's conversion."""
    if type(x) is _ND and x.dtype is _F64 and x.shape == (n,) and x.flags.c_contiguous:
        return x
    return _vector(x, n, name)


class _DerivWorkspace:
    """Preallocated arrays of the derivative kernels for one model."""

    def __init__(self, model: ModelView) -> None:
        nb = model._nb
        nv = model.nv
        # the recursions' arrays (readable from Python) and their records (what the kernels take)
        self.rigid_body = world.rigid_body_data(nb)
        self.data = world.rigid_body_record(self.rigid_body)
        self.SC = np.zeros((world.N_SCRATCH, 6, 6))
        self.composites = dk.composite_record(dk.composite_data(nb))
        self.FP = np.zeros((nb + 1, 6, nv))
        self.Minv = np.zeros((nv, nv))
        self.dq = np.zeros((nv, nv))
        self.dv = np.zeros((nv, nv))
        self.M = np.zeros((nv, nv))
        self.ddq_dq = np.zeros((nv, nv))
        self.ddq_dv = np.zeros((nv, nv))
        self.empty_b = np.zeros((2 * nv, nv))
        self.ddq = np.zeros(nv)
        self.fext = np.zeros((nb, 6))
        self.iwim_m = -1
        self.Pu = np.zeros((nb, 6, 0))
        self.Pa = np.zeros((nb, 6, 0))

    def iwim_buffers(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        if m != self.iwim_m:
            nb = self.rigid_body.pose.shape[0]
            self.Pu = np.zeros((nb, 6, m))
            self.Pa = np.zeros((nb, 6, m))
            self.iwim_m = m
        return self.Pu, self.Pa


def workspace(model: ModelView) -> _DerivWorkspace:
    """The model's derivative workspace (created, and the kernels warmed, on first use)."""
    ws = getattr(model, "_deriv_ws", None)
    if ws is None:
        ws = _DerivWorkspace(model)
        model._deriv_ws = ws
    return ws
