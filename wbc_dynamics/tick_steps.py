"""The controller's per-tick pre- and post-steps: compiled calls around the inverse dynamics.

:func:`_prepare_tick` (the commanded accelerations, the joint state and the accelerations in
the model's order) and :func:`_finish_tick` (the actuated torques gathered into the configured
order, clamped to the effort limits) on the buffers of :class:`_TickBuffers`, and
:func:`_command_tick` (the hybrid drive command and the torque shaping of every tick, safe ones
included) on the same buffers, which
:class:`~wbc_dynamics.controller.WholeBodyController` binds once and calls every tick.

They depend on no dimension of the robot, so the compile helper
(:mod:`wbc_dynamics.compile_helper`) compiles them first on a cold start
(:func:`compile_tick_steps`) and the controller then loads them from the cache. They live here,
below both, so that the helper need not import the controller that starts it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .kernels.leaf import leaf_kernel


@leaf_kernel
def _pd_command(qdd_ref, q_ref, qd_ref, q, qd, kp, kd, ki, integral, integral_limit, dt,
                lead, use_pos, use_vel, out):
    """out = qdd_ref + kp (q_ref - q) + kd (qd_ref - qd) + ki integral (terms only where
    references exist): where ``ki`` > 0 the position error is first integrated over ``dt`` [s]
    into ``integral`` [rad s], held to ``|ki integral| <= integral_limit`` [rad/s^2] (the
    integral cannot wind up past what it may command). ``lead`` [s] > 0 (command latency): the
    reference's position and velocity are taken that far ahead, ``q_ref + lead qd_ref + lead^2
    / 2 qdd_ref`` and ``qd_ref + lead qdd_ref`` (the velocity term where it is given)."""
    for i in range(out.shape[0]):
        a = qdd_ref[i]
        if use_pos:
            qr = q_ref[i]
            if lead > 0.0:
                qr += 0.5 * lead * lead * qdd_ref[i]
                if use_vel:
                    qr += lead * qd_ref[i]
            e = qr - q[i]
            a += kp[i] * e
            if ki[i] > 0.0:
                s = integral[i] + e * dt
                bound = integral_limit[i] / ki[i]
                s = s if s < bound else bound
                s = s if s > -bound else -bound
                integral[i] = s
                a += ki[i] * s
        if use_vel:
            vr = qd_ref[i]
            if lead > 0.0:
                vr += lead * qdd_ref[i]
            a += kd[i] * (vr - qd[i])
        out[i] = a


@leaf_kernel
def _negdamp(D, qd, out):
    for i in range(out.shape[0]):
        out[i] = -D[i] * qd[i]


@leaf_kernel
def _clamp_count(tau, limit):
    """Clamp tau to [-limit, limit] in place; return (#clamped, all finite)."""
    n = 0
    finite = True
    for i in range(tau.shape[0]):
        t = tau[i]
        if not math.isfinite(t):
            finite = False
            continue
        if t > limit[i]:
            tau[i] = limit[i]
            n += 1
        elif t < -limit[i]:
            tau[i] = -limit[i]
            n += 1
    return n, finite


class _TickBuffers(NamedTuple):
    """The controller's fixed per-tick buffers (packed with the gains for :func:`_prepare_tick`,
    :func:`_finish_tick` and :func:`_command_tick`: ``WholeBodyController._pack``). Configured
    joint order (n,): ``qdd_ref``, ``q_ref``, ``qd_ref``, ``qj``, ``qdj``, ``qdd_cmd``, ``tau``,
    ``tau_out``; ``cfg_to_model`` (n,) model index of each configured joint; model order:
    ``q`` (nq,), ``v`` (nv,), ``qdd_model`` (n,), ``tau_model`` (n,); ``act_model`` (nu,)
    model indices of the actuated joints (empty when every joint is actuated) and ``qdd_act``
    (nu,) their desired accelerations.

    The command step's, configured order (n,): the hybrid drive command's outputs
    ``position_setpoint`` [rad or m], ``velocity_setpoint`` [rad/s or m/s], ``stiffness``
    [N m/rad], ``damping`` [N m s/rad] (``ControlOutput``'s arrays); the configured drive gains
    ``drive_kp``, ``drive_kd``; the task layer's drive set-points ``task_position``,
    ``task_velocity`` (zeros without a task layer); the previous tick's torques ``tau_prev``
    [N m] and ``torque_step`` [N m] the largest change per tick (inf: no limit on that
    joint). The PD command's integral of the position error ``integral`` [rad s] (configured
    order; zero where ``ki`` is 0)."""

    qdd_ref: np.ndarray
    q_ref: np.ndarray
    qd_ref: np.ndarray
    qj: np.ndarray
    qdj: np.ndarray
    qdd_cmd: np.ndarray
    cfg_to_model: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd_model: np.ndarray
    act_model: np.ndarray
    qdd_act: np.ndarray
    tau: np.ndarray
    tau_model: np.ndarray
    tau_out: np.ndarray
    position_setpoint: np.ndarray
    velocity_setpoint: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    drive_kp: np.ndarray
    drive_kd: np.ndarray
    task_position: np.ndarray
    task_velocity: np.ndarray
    tau_prev: np.ndarray
    torque_step: np.ndarray
    integral: np.ndarray


class _StepArgs(NamedTuple):
    """The fixed arguments of the per-tick steps, packed once (``WholeBodyController._pack``):
    ``buffers`` the :class:`_TickBuffers`; the gains (configured joint order, (n,)): ``kp``
    [1/s^2], ``kd`` [1/s], ``safe_damping`` [1/s], ``effort_limit`` [N m or N], ``ki``
    [1/s^3] and ``integral_limit`` [rad/s^2]."""

    buffers: _TickBuffers
    kp: np.ndarray
    kd: np.ndarray
    safe_damping: np.ndarray
    effort_limit: np.ndarray
    ki: np.ndarray
    integral_limit: np.ndarray


#: _prepare_tick's ``command``: keep ``qdd_cmd`` as it is (compute(), warm-up)
_CMD_KEEP = 0
#: ... the PD command of the reference (a control tick)
_CMD_PD = 1
#: ... joint damping ``-safe_damping * qd`` (the damping safe command)
_CMD_DAMP = 2


@njit(cache=True)
def _prepare_tick(p, command, use_pos, use_vel, off_q, off_v, has_act, dt, lead):
    """The tick's steps before the inverse dynamics, in one call: the commanded accelerations
    (``command``: :data:`_CMD_PD` -> :func:`_pd_command` over the control period ``dt`` [s],
    the reference ``lead`` [s] ahead, :data:`_CMD_DAMP` -> ``-damping
    qd``, :data:`_CMD_KEEP` -> unchanged), the joint state into the model's q (from ``off_q``)
    and v (from ``off_v``), ``qdd_cmd`` in model order into ``qdd_model`` and, ``has_act``,
    the actuated ones into ``qdd_act``. ``p``: :class:`~wbc_dynamics.kernels.fixed_args.
    FixedArgs` of a :class:`_StepArgs`."""
    b = p.buffers
    if command == _CMD_PD:
        _pd_command(b.qdd_ref, b.q_ref, b.qd_ref, b.qj, b.qdj, p.kp, p.kd, p.ki, b.integral,
                    p.integral_limit, dt, lead, use_pos, use_vel, b.qdd_cmd)
    elif command == _CMD_DAMP:
        _negdamp(p.safe_damping, b.qdj, b.qdd_cmd)
    idx = b.cfg_to_model
    for i in range(idx.shape[0]):
        b.q[off_q + idx[i]] = b.qj[i]
        b.v[off_v + idx[i]] = b.qdj[i]
        b.qdd_model[idx[i]] = b.qdd_cmd[i]
    if has_act:
        for a in range(b.act_model.shape[0]):
            b.qdd_act[a] = b.qdd_model[b.act_model[a]]


@njit(cache=True)
def _finish_tick(p, tau_act, gather, has_act):
    """The tick's steps after the inverse dynamics, in one call: if ``gather``, the actuated
    torques ``tau_act`` (model order of the actuated joints) into ``b.tau`` (configured order,
    0 on passive joints: ``WholeBodyController._gather_actuated``); then ``b.tau_out = b.tau``
    clamped to the effort limit (:func:`_clamp_count`). ``p`` as in :func:`_prepare_tick`.
    Returns (#clamped, all finite)."""
    b = p.buffers
    idx = b.cfg_to_model
    src = tau_act
    if gather and has_act:
        src = b.tau_model
        src[:] = 0.0
        for a in range(b.act_model.shape[0]):
            src[b.act_model[a]] = tau_act[a]
    for i in range(idx.shape[0]):
        if gather:
            b.tau[i] = src[idx[i]]
        b.tau_out[i] = b.tau[i]
    return _clamp_count(b.tau_out, p.effort_limit)


# _command_tick's ``drive``: _DRIVE_REFERENCE a control tick's set-points, the reference's
# positions and velocities where given, else the measured ones; _DRIVE_TASKS a control tick of
# the task layer, its drive set-points; _DRIVE_HOLD a safe tick that still commands (damping),
# the measured position at rest; _DRIVE_OFF zero torque (stale state, non-finite, the zero
# safe mode), as _DRIVE_HOLD with the gains 0
_DRIVE_REFERENCE, _DRIVE_TASKS, _DRIVE_HOLD, _DRIVE_OFF = 0, 1, 2, 3


@njit(cache=True)
def _command_tick(p, drive, use_pos, use_vel, shape, low_pass, alpha, rate_limit, keep):
    """The tick's last step, in one call: the hybrid drive command of ``drive``
    (:data:`_DRIVE_REFERENCE` ... :data:`_DRIVE_OFF`) into the set-point and gain buffers,
    then, if ``shape``, the torque shaping of ``b.tau_out`` from ``b.tau_prev`` in place: the
    first-order low-pass ``tau = prev + alpha (tau - prev)`` (``low_pass``) and the rate limit
    ``|tau - prev| <= torque_step`` (``rate_limit``); if ``keep``, ``b.tau_prev = b.tau_out``.
    ``p`` as in :func:`_prepare_tick`."""
    b = p.buffers
    on = drive != _DRIVE_OFF
    for i in range(b.qj.shape[0]):
        if drive == _DRIVE_TASKS:
            b.position_setpoint[i] = b.task_position[i]
            b.velocity_setpoint[i] = b.task_velocity[i]
        elif drive == _DRIVE_REFERENCE:
            b.position_setpoint[i] = b.q_ref[i] if use_pos else b.qj[i]
            b.velocity_setpoint[i] = b.qd_ref[i] if use_vel else b.qdj[i]
        else:
            b.position_setpoint[i] = b.qj[i]
            b.velocity_setpoint[i] = 0.0
        b.stiffness[i] = b.drive_kp[i] if on else 0.0
        b.damping[i] = b.drive_kd[i] if on else 0.0
    tau = b.tau_out
    prev = b.tau_prev
    if shape:
        for i in range(tau.shape[0]):
            t = tau[i]
            if low_pass:
                t = (t - prev[i]) * alpha + prev[i]
            if rate_limit:
                lo = prev[i] - b.torque_step[i]
                hi = prev[i] + b.torque_step[i]
                # np.clip's order and comparisons: min(max(t, lo), hi)
                t = t if t > lo else lo
                t = t if t < hi else hi
            tau[i] = t
    if keep:
        for i in range(tau.shape[0]):
            prev[i] = tau[i]


def compile_tick_steps() -> None:
    """Compile / load :func:`_prepare_tick`, :func:`_finish_tick` and :func:`_command_tick`
    for the argument types a controller binds them with
    (:meth:`~wbc_dynamics.controller.WholeBodyController._construct`), on stand-in buffers,
    without running them. Their types depend on no dimension of the robot, so the compile
    helper (:mod:`wbc_dynamics.compile_helper`) does this first on a cold start and the
    controller then loads them (~1.3 s of its critical path)."""
    from .kernels.fixed_args import fixed_args
    from .kernels.linalg import bound_entry

    z = np.zeros(1)
    zi = np.zeros(1, dtype=np.int64)
    bufs = _TickBuffers(**{name: zi if name in ("cfg_to_model", "act_model") else z
                           for name in _TickBuffers._fields})
    args = fixed_args(_StepArgs(bufs, kp=z, kd=z, safe_damping=z, effort_limit=z, ki=z,
                                integral_limit=z))
    bound_entry(_prepare_tick, (args, _CMD_KEEP, False, False, 0, 0, False, 1e-3, 0.0))
    bound_entry(_finish_tick, (args, z, False, False))
    bound_entry(_command_tick, (args, _DRIVE_OFF, False, False, False, False, 1.0, False, False))
