"""Contact-free inverse dynamics with unactuated DoFs accelerating freely, as one compiled call.

The controller's ``method: none`` (without unactuated DoFs -- a fixed base, every joint
actuated -- it reduces to ``tau = RNEA(q, v, qdd)``, CRBA skipped). With U the
unactuated DoFs (the free-flyer base, passive joints) and A the actuated joints, the equations
of motion with zero contact impulses, ``M a + h = P_A^T tau_A`` (Zapolsky & Drumwright, eq. (37)
divided by dt), and the prescribed actuated accelerations ``a_A = qdd_A`` (eqs. (38)-(39)) split
into the unactuated rows, which carry no torque, and the actuated rows::

    M_UU a_U = -(M_UA qdd_A + h_U)                      (1)
    tau_A    =   M_AU a_U + M_AA qdd_A + h_A            (2)

This is the same solution as the docstring form ``tau_A = Y^-1 (qdd_A + P_A M^-1 h)``,
``Y = P_A M^-1 P_A^T``: eliminating ``a = M^-1 (P_A^T tau_A - h)`` from ``a_A = qdd_A`` gives
that form, and (1)-(2) are the same linear system solved block-wise. The block form needs M
(CRBA, Featherstone 2008 Table 6.2) and a |U| x |U| Cholesky factor -- 6 x 6 for a floating
base without passive joints -- instead of M^-1 (Carpentier, Alg. 1) and an |A| x |A| one, and M
need only be regular on the unactuated block.

Computed as: ``tau0 = RNEA(q, v, a0)`` with ``a0_A = qdd_A``, ``a0_U = 0`` (Featherstone 2008
Table 5.1), which is ``M_:A qdd_A + h`` -- the right-hand side of (1) and all of (2) but the
``M_AU a_U`` term; ``M = CRBA(q)``; ``a_U`` from (1) by the Cholesky factor of ``M_UU``; then
``tau_A = tau0_A + M_AU a_U``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from .dynamics import OK, SINGULAR
from .linalg import chol_solve, cholesky
from .separate import call_separately
from .world import crba, rnea

__all__ = ["FreeDofArgs", "FreeDofBuffers", "free_dof_buffers", "free_dof_inverse_dynamics",
           "bind_free_dof"]


class FreeDofBuffers(NamedTuple):
    """Preallocated arrays of :func:`free_dof_inverse_dynamics` (``buffers`` of its pack,
    :class:`FreeDofArgs`).

    Inputs, written by the caller before a call: ``q`` (nq,) and ``v`` (nv,) the model's
    configuration and velocity (:mod:`wbc_dynamics.model` conventions), ``qdd_act`` (nA,) the
    actuated joints' desired accelerations [rad/s^2 or m/s^2] in ``actuated`` order.
    Constant: ``unactuated`` (nU,) and ``actuated`` (nA,) int64 v indices (disjoint, together
    every v index). Output: ``tau_act`` (nA,) [N m or N] in ``actuated`` order. Scratch:
    ``accel`` (nv,), ``tau0`` (nv,), ``mass`` (nv, nv), ``mass_uu`` and ``chol_uu`` (nU, nU),
    ``accel_unact`` (nU,) the unactuated accelerations ``a_U`` of (1) (base in the base frame,
    as the model's v).
    """

    q: np.ndarray
    v: np.ndarray
    qdd_act: np.ndarray
    unactuated: np.ndarray
    actuated: np.ndarray
    tau_act: np.ndarray
    accel: np.ndarray
    tau0: np.ndarray
    mass: np.ndarray
    mass_uu: np.ndarray
    chol_uu: np.ndarray
    accel_unact: np.ndarray


def free_dof_buffers(q: np.ndarray, v: np.ndarray, qdd_act: np.ndarray,
                     actuated: np.ndarray) -> FreeDofBuffers:
    """:class:`FreeDofBuffers` around the caller's ``q``, ``v`` and ``qdd_act`` (held by
    reference: the kernel reads their current values) for the actuated v indices
    ``actuated``; every other v index is unactuated."""
    nv = v.shape[0]
    actuated = np.ascontiguousarray(actuated, dtype=np.int64)
    unactuated = np.array(sorted(set(range(nv)) - set(actuated.tolist())), dtype=np.int64)
    n_u = unactuated.shape[0]
    return FreeDofBuffers(
        q=q, v=v, qdd_act=qdd_act, unactuated=unactuated, actuated=actuated,
        tau_act=np.zeros(actuated.shape[0]), accel=np.zeros(nv), tau0=np.zeros(nv),
        mass=np.zeros((nv, nv)), mass_uu=np.zeros((n_u, n_u)), chol_uu=np.zeros((n_u, n_u)),
        accel_unact=np.zeros(n_u))


class FreeDofArgs(NamedTuple):
    """The fixed arguments of :func:`free_dof_inverse_dynamics`, packed once: ``model`` the
    robot's :class:`~.dynamics.ModelRecord`; ``data``, ``SC`` a workspace of
    :func:`~wbc_dynamics.kernels.world.workspace` (a :class:`~.world.RigidBodyRecord` and the
    scratch) and ``fext`` (nb, 6), the caller's (overwritten); ``buffers`` the
    :class:`FreeDofBuffers`."""

    model: Any
    data: Any
    SC: np.ndarray
    fext: np.ndarray
    buffers: FreeDofBuffers


@njit(cache=True)
def free_dof_inverse_dynamics(p):
    """``tau_act`` of eqs. (1)-(2) of the module docstring into ``p.buffers.tau_act``.

    ``p``: :class:`~wbc_dynamics.kernels.fixed_args.FixedArgs` of a :class:`FreeDofArgs`.
    Returns OK or the status of the core kernels (invalid q / v / qdd_act), or SINGULAR if
    ``M_UU`` is not positive definite (a passive subtree that moves no mass).
    """
    model, data, SC, fext = p.model, p.data, p.SC, p.fext
    b = p.buffers
    a = b.accel
    for c in range(a.shape[0]):
        a[c] = 0.0
    for k in range(b.actuated.shape[0]):
        a[b.actuated[k]] = b.qdd_act[k]
    # q[::1] etc.: strided ('A') vector types, those of RobotModel's bound entry points, so that
    # one compiled rnea / crba serves both; np.bool_: typed flags, not literals (a literal would
    # compile a second rnea)
    # called separately (not compiled into this kernel again: wbc_dynamics.kernels.separate);
    # a cold start's compile helper loads the rnea the controller compiled meanwhile
    st = call_separately(rnea, (b.q[::1], b.v[::1], a[::1], fext, np.bool_(False),
                                np.bool_(True), b.tau0, model, data, SC))
    if st != OK:
        return st
    unact = b.unactuated
    n_u = unact.shape[0]
    if n_u == 0:  # fixed base, every joint actuated: tau = RNEA(q, v, qdd) (Table 5.1)
        for k in range(b.actuated.shape[0]):
            b.tau_act[k] = b.tau0[b.actuated[k]]
        return OK
    st = call_separately(crba, (b.q[::1], b.mass, model, data, SC))
    if st != OK:
        return st
    for r in range(n_u):
        for c in range(n_u):
            b.mass_uu[r, c] = b.mass[unact[r], unact[c]]
        b.accel_unact[r] = -b.tau0[unact[r]]
    # min_pivot 0: only a pivot <= 0 (M_UU not positive definite) is refused, as LAPACK's
    # potrf refuses it
    if not cholesky(b.mass_uu, b.chol_uu, 0.0):
        return SINGULAR
    chol_solve(b.chol_uu, n_u, b.accel_unact, b.accel_unact)
    for k in range(b.actuated.shape[0]):
        row = b.actuated[k]
        s = b.tau0[row]
        for j in range(n_u):
            s += b.mass[row, unact[j]] * b.accel_unact[j]
        b.tau_act[k] = s
    return OK


def bind_free_dof(model, q: np.ndarray, v: np.ndarray, qdd_act: np.ndarray,
                  actuated: np.ndarray):
    """:func:`free_dof_inverse_dynamics` bound for ``model`` (a ``RobotModel``) on buffers of
    its own around ``q``, ``v``, ``qdd_act`` (as :func:`free_dof_buffers`), compiled or loaded
    now for exactly these types (nothing runs). Returns ``(entry, args, buffers)``: a tick is
    ``entry(args)`` and reads ``buffers.tau_act``. The types depend on no model dimension, so
    the compile helper binds it on a stand-in model to fill the cache for any robot."""
    from . import world
    from .fixed_args import fixed_args
    from .linalg import bound_entry

    nb = model.model_arrays.parent.shape[0]
    data, SC = world.workspace(nb)
    bufs = free_dof_buffers(q, v, qdd_act, actuated)
    # the model's record holds its own gravity array (RobotModel.gravity assigns into it)
    args = fixed_args(FreeDofArgs(model.kernel_model, data, SC, np.zeros((nb, 6)), bufs))
    return bound_entry(free_dof_inverse_dynamics, (args,)), args, bufs
