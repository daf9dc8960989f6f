"""Base state estimation from an IMU and leg kinematics, for robots without motion capture.

:class:`BaseEstimator` is a linear Kalman filter over the base position and velocity and the
positions of the feet (world frame), the formulation legged robots commonly run on
hardware (Bloesch et al., "State Estimation for Legged Robots: Consistent Fusion of Leg
Kinematics and IMU", RSS 2012, in its linear form as in legged_control):

* **prediction** with the IMU's specific force rotated to the world, ``a = R f + g``:
  ``p += v dt + a dt^2 / 2``, ``v += a dt``; contact points stay where they are (process noise
  ``contact_drift`` while in stance, ``swing_drift`` while not);
* **update** for every foot in stance: its position relative to the base from the joint
  encoders, ``c_i - p = R r_i(q)``; its velocity that of rolling without slipping,
  ``v + R (w x r_i + J_i qd) = w_i x (h_i z)`` (``h_i`` the anchor's height over the ground,
  ``w_i`` the foot's angular velocity: zero velocity for a flat or point foot);
  its height, ``c_i,z = ground + radius``. A foot whose velocity measurement disagrees with the
  estimate beyond a chi-square gate (``velocity_gate``, 3 degrees of freedom; 16.27 = 0.1 %
  false alarms) is moving although the schedule says stance -- slipping, or touching down late
  -- and its velocity rows are skipped for that tick (counted in ``gated_velocities``): on the
  bundled quadruped's trot under realistic sensing this took the velocity error from
  0.03-0.28 m/s to 0.005-0.03 m/s RMS (5 s runs, four noise seeds).

The orientation comes from the IMU: its own orientation output (``orientation="imu"``, as most
robot IMUs provide: Unitree, VectorNav, Xsens), or the gyro integrated with an accelerometer tilt
correction (``orientation="gyro"``, Mahony et al., "Nonlinear Complementary Filters on the Special
Orthogonal Group", IEEE TAC 2008) where it has none. The IMU is taken at the base frame.

Horizontal position and yaw are not observable from these measurements: they drift with the
feet's slips and the gyro's bias (docs/estimation.md measures by how much). Everything per tick
is two compiled calls: the contact points' kinematics and :func:`estimator_kernel`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np
from numba import njit

from .kernels.kinematics import points_kinematics
from .kernels.records import kernel_record, record_of
from .kernels.spatial import quaternion_product_into, rotation_from_quaternion
from .validation import require_positive

if TYPE_CHECKING:
    from .model import RobotModel

__all__ = ["BaseEstimator", "EstimatorData", "EstimatorNoise", "FeetKinematics", "ImuEstimator",
           "LeggedEstimator", "estimator_kernel"]

GRAVITY = 9.81


@dataclass(frozen=True)
class EstimatorNoise:
    """Noise model of the estimator (standard deviations).

    Attributes:
        accelerometer: [m/s^2] white noise of the specific force, per sample.
        joint_position: [rad] encoders; with the leg's lever arm it is the kinematic
            measurement's noise (``kinematics`` below adds to it).
        joint_velocity: [rad/s] joint rates.
        gyro: [rad/s] angular-rate noise, per sample.
        kinematics: [m] model error of a contact point's position (link lengths, foot
            compliance, rolling contact).
        contact_velocity: [m/s] a stance point's velocity (slip, compliance).
        contact_drift: [m/sqrt(s)] random walk of a stance contact point.
        swing_drift: [m/sqrt(s)] random walk of a contact point not in stance (it moves).
        ground_height: [m] unevenness of the ground under a stance point.
    """

    accelerometer: float = 0.05
    joint_position: float = 1e-3
    joint_velocity: float = 0.02
    gyro: float = 0.002
    kinematics: float = 2e-3
    contact_velocity: float = 0.02
    contact_drift: float = 1e-3
    swing_drift: float = 10.0
    ground_height: float = 5e-3

    def __post_init__(self) -> None:
        require_positive(vars(self).items(), "EstimatorNoise.{}")


class FeetKinematics(NamedTuple):
    """The buffers of ``feet_kinematics`` for L feet, shared by the estimators that run it
    (this module's and :mod:`wbc_dynamics.invariant_ekf`'s: their records' ``feet``).

    ``q0`` (nq,), ``v0`` (nv,) the configuration and velocity with the base at the origin,
    ``Xup``, ``Rw``, ``pw``, ``Rtmp``, ``vel``, ``acc``, ``joint_twist``, ``P3``, ``Jfull`` the
    kinematics pass's buffers (``wbc_dynamics.kernels.kinematics.points_kinematics``),
    ``r_base`` (L, 3) [m] each foot's anchor in the base frame, ``J_lin`` (L, 3, nv) its linear
    Jacobian, ``bias`` (L, 3), ``lift`` (L,) [m] height of each anchor above its lowest sole
    point's bottom (world axes), ``roll`` (L, 3) [m/s] its rolling velocity (world)."""

    q0: np.ndarray
    v0: np.ndarray
    Xup: np.ndarray
    Rw: np.ndarray
    pw: np.ndarray
    Rtmp: np.ndarray
    vel: np.ndarray
    acc: np.ndarray
    joint_twist: np.ndarray
    P3: np.ndarray
    Jfull: np.ndarray
    r_base: np.ndarray
    J_lin: np.ndarray
    bias: np.ndarray
    lift: np.ndarray
    roll: np.ndarray


@kernel_record("EstimatorDataRecord")
class EstimatorData(NamedTuple):
    """The estimator's state, configuration and workspace (one record per estimator).

    Configuration: the feet (contact links) ``foot_body`` (L,) int64 body of each foot's anchor
    (its link frame's origin), ``foot_r`` (L, 3) the anchor in that body's frame [m]; their
    contact geometry ``sole_foot`` (P,) int64 foot of each contact sphere, ``sole_body`` (P,),
    ``sole_r`` (P, 3) its centre in the body's frame [m], ``sole_radius`` (P,) [m]; the noise
    model (standard deviations, :class:`EstimatorNoise`): ``accelerometer_noise`` [m/s^2],
    ``kinematics_noise`` [m], ``contact_velocity_noise`` [m/s], ``contact_drift``,
    ``swing_drift`` [m/sqrt(s)], ``ground_height_noise`` [m], ``joint_position_noise`` [rad]
    (with a point's lever arm, part of its kinematic noise), ``joint_velocity_noise`` [rad/s];
    ``ground_height`` [m], ``gravity`` [m/s^2], ``use_imu_orientation`` (the IMU's orientation,
    or the gyro with the tilt correction of gain ``tilt_gain`` [rad/s per unit tilt error]),
    ``trust_ramp`` [s], ``velocity_gate`` (chi-square, 3 dof; 0 = off).

    State: ``x`` (6 + 3L,) = [p (3) world [m], v (3) world [m/s], c_1 .. c_L (3 each) the
    feet's anchors, world [m]]; ``P`` (n, n) its covariance; ``quat`` (4,) world-from-base
    orientation, xyzw; ``omega`` (3,) [rad/s] base angular velocity (base frame); ``v_base``
    (3,) [m/s] the base's linear velocity in the base frame (``R^T v``, written at the end of
    each tick); ``gated_velocities`` (1,) int64 stance-foot velocity measurements skipped by the
    gate; ``stance`` (L,) bool per foot (input of each update); ``stance_time`` (L,) [s]
    how long each foot has been in stance; ``initialized`` (1,) bool.

    Workspace: ``feet`` the kinematics buffers (:class:`FeetKinematics`); ``gain`` (n,) the
    scalar updates' ``P h``.
    """

    foot_body: np.ndarray
    foot_r: np.ndarray
    sole_foot: np.ndarray
    sole_body: np.ndarray
    sole_r: np.ndarray
    sole_radius: np.ndarray
    accelerometer_noise: float
    kinematics_noise: float
    contact_velocity_noise: float
    contact_drift: float
    swing_drift: float
    ground_height_noise: float
    joint_position_noise: float
    joint_velocity_noise: float
    ground_height: float
    gravity: float
    use_imu_orientation: bool
    tilt_gain: float
    trust_ramp: float
    velocity_gate: float
    x: np.ndarray
    P: np.ndarray
    quat: np.ndarray
    omega: np.ndarray
    v_base: np.ndarray
    gated_velocities: np.ndarray
    stance: np.ndarray
    stance_time: np.ndarray
    initialized: np.ndarray
    feet: FeetKinematics
    gain: np.ndarray


@njit(cache=True)
def _integrate_quat(q, wx, wy, wz, dt):
    """q <- q exp(w dt) (body-frame rate), normalized."""
    th = math.sqrt(wx * wx + wy * wy + wz * wz) * dt
    if th < 1e-12:
        s, c = 0.5 * dt, 1.0
    else:
        s, c = math.sin(0.5 * th) / th * dt, math.cos(0.5 * th)
    quaternion_product_into(q[0], q[1], q[2], q[3], wx * s, wy * s, wz * s, c, q, 0)


@njit(cache=True)
def feet_kinematics(e, model, qj, qdj):
    """The feet's kinematics with the base at the origin (a record with a ``feet``
    :class:`FeetKinematics` and the feet's ``foot_body``, ``foot_r``): ``e.feet.r_base`` (L, 3)
    each anchor in the base frame [m], ``e.feet.J_lin`` (L, 3, nv) its linear Jacobian,
    ``e.feet.vel`` the bodies' twists, for
    the joint positions ``qj`` [rad] and rates ``qdj`` [rad/s] in the model's order. Returns
    :func:`~wbc_dynamics.kernels.kinematics.points_kinematics`' status (0 = ok)."""
    fk = e.feet
    for a in range(7):
        fk.q0[a] = 0.0
    fk.q0[6] = 1.0
    for c in range(qj.shape[0]):
        fk.q0[7 + c] = qj[c]
    for c in range(fk.v0.shape[0]):
        fk.v0[c] = 0.0
    for c in range(qdj.shape[0]):
        fk.v0[6 + c] = qdj[c]
    return points_kinematics(model, fk.q0, fk.v0, e.foot_body, e.foot_r, fk.Xup,
                             fk.Rw, fk.pw, fk.Rtmp, fk.vel, fk.acc, fk.joint_twist, fk.P3,
                             fk.Jfull, fk.r_base, fk.J_lin, fk.bias)


@njit(cache=True)
def estimator_kernel(e, model, qj, qdj, gyro, accel, imu_quat, dt):
    """One estimator tick (``_estimator_tick``), then ``e.v_base = R^T v`` for the
    estimate's user (base-frame velocity, the controller's convention). Returns its status."""
    fk = e.feet
    status = _estimator_tick(e, model, qj, qdj, gyro, accel, imu_quat, dt)
    R = fk.Rtmp[0]
    rotation_from_quaternion(e.quat[0], e.quat[1], e.quat[2], e.quat[3], R)
    for a in range(3):
        e.v_base[a] = R[0, a] * e.x[3] + R[1, a] * e.x[4] + R[2, a] * e.x[5]
    return status


@njit(cache=True)
def _estimator_tick(e, model, qj, qdj, gyro, accel, imu_quat, dt):
    """One estimator tick (module docstring): the IMU's angular rate ``gyro`` (3,) [rad/s] and
    specific force ``accel`` (3,) [m/s^2] in the base frame, its orientation ``imu_quat`` (4,)
    xyzw (used if ``use_imu_orientation``), the joint positions ``qj`` / rates ``qdj`` in the
    model's order, ``dt`` [s] since the last tick; ``e.stance`` says which contact points are in
    stance. Updates ``e.x``, ``e.P``, ``e.quat``, ``e.omega``. Returns 0, or 1 if the
    kinematics failed, 2 if a measurement's innovation variance was not positive (the updates
    before it kept, the rest skipped)."""
    fk = e.feet
    sa, sk, sv = e.accelerometer_noise, e.kinematics_noise, e.contact_velocity_noise
    sd, ss, sh = e.contact_drift, e.swing_drift, e.ground_height_noise
    ground, kgain, g, sqd = e.ground_height, e.tilt_gain, e.gravity, e.joint_velocity_noise
    use_imu_quat = e.use_imu_orientation
    sqp, ramp = e.joint_position_noise, e.trust_ramp
    L = e.foot_body.shape[0]
    n = e.x.shape[0]
    # -- orientation
    for a in range(3):
        e.omega[a] = gyro[a]
    R = fk.Rtmp[0]
    if use_imu_quat:
        nq = math.sqrt(imu_quat[0] ** 2 + imu_quat[1] ** 2 + imu_quat[2] ** 2 + imu_quat[3] ** 2)
        for a in range(4):
            e.quat[a] = imu_quat[a] / nq
    elif e.initialized[0]:
        # Mahony: the measured gravity direction pulls the estimated one (body frame)
        rotation_from_quaternion(e.quat[0], e.quat[1], e.quat[2], e.quat[3], R)
        an = math.sqrt(accel[0] ** 2 + accel[1] ** 2 + accel[2] ** 2)
        ex = ey = ez = 0.0
        if an > 0.5 * g and an < 1.5 * g:
            ux, uy, uz = accel[0] / an, accel[1] / an, accel[2] / an
            vx, vy, vz = R[2, 0], R[2, 1], R[2, 2]  # world z in the body frame
            ex, ey, ez = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        _integrate_quat(e.quat, gyro[0] + kgain * ex, gyro[1] + kgain * ey,
                        gyro[2] + kgain * ez, dt)
    # -- contact points relative to the base (base frame) and their Jacobians
    nv = fk.v0.shape[0]
    if feet_kinematics(e, model, qj, qdj) != 0:
        return 1
    rotation_from_quaternion(e.quat[0], e.quat[1], e.quat[2], e.quat[3], R)
    # each foot's anchor height above the bottom of its lowest sole sphere (world axes)
    for i in range(L):
        fk.lift[i] = -np.inf
    for k in range(e.sole_body.shape[0]):
        i = e.sole_foot[k]
        b = e.sole_body[k]
        d = 0.0
        for a in range(3):  # R (sole - anchor), z row
            sole = fk.pw[b, a] + (fk.Rw[b, a, 0] * e.sole_r[k, 0] + fk.Rw[b, a, 1] * e.sole_r[k, 1]
                                 + fk.Rw[b, a, 2] * e.sole_r[k, 2])
            d += R[2, a] * (sole - fk.r_base[i, a])
        lift = e.sole_radius[k] - d
        if lift > fk.lift[i]:
            fk.lift[i] = lift
    # -- initialization: stance points on the ground, at rest
    if not e.initialized[0]:
        h = 0.0
        ns = 0
        for i in range(L):
            zi = R[2, 0] * fk.r_base[i, 0] + R[2, 1] * fk.r_base[i, 1] + R[2, 2] * fk.r_base[i, 2]
            if e.stance[i]:
                h += ground + fk.lift[i] - zi
                ns += 1
        if ns == 0:
            return 0
        h /= ns
        for k in range(n):
            e.x[k] = 0.0
            for m in range(n):
                e.P[k, m] = 0.0
        e.x[2] = h
        for i in range(L):
            for a in range(3):
                e.x[6 + 3 * i + a] = e.x[a] + (R[a, 0] * fk.r_base[i, 0] + R[a, 1] * fk.r_base[i, 1]
                                               + R[a, 2] * fk.r_base[i, 2])
        for k in range(n):
            e.P[k, k] = 1e-4
        e.initialized[0] = True
        return 0
    # -- each foot's rolling velocity (world): a round foot in stance rolls, its anchor (the
    # link origin, ``lift`` above the ground) moving at w_foot x (lift z) while the material
    # point at the bottom rests; zero for a flat foot
    for i in range(L):
        b = e.foot_body[i]
        wf = fk.P3  # scratch (3,)
        for a in range(3):
            wf[a] = e.omega[a] + (fk.Rw[b, a, 0] * fk.vel[b, 3] + fk.Rw[b, a, 1] * fk.vel[b, 4]
                                  + fk.Rw[b, a, 2] * fk.vel[b, 5])
        wx = R[0, 0] * wf[0] + R[0, 1] * wf[1] + R[0, 2] * wf[2]
        wy = R[1, 0] * wf[0] + R[1, 1] * wf[1] + R[1, 2] * wf[2]
        lift = max(fk.lift[i], 0.0)
        fk.roll[i, 0] = wy * lift
        fk.roll[i, 1] = -wx * lift
        fk.roll[i, 2] = 0.0
    # -- prediction
    aw0 = R[0, 0] * accel[0] + R[0, 1] * accel[1] + R[0, 2] * accel[2]
    aw1 = R[1, 0] * accel[0] + R[1, 1] * accel[1] + R[1, 2] * accel[2]
    aw2 = R[2, 0] * accel[0] + R[2, 1] * accel[1] + R[2, 2] * accel[2] - g
    aw = (aw0, aw1, aw2)
    for a in range(3):
        e.x[a] += e.x[3 + a] * dt + 0.5 * aw[a] * dt * dt
        e.x[3 + a] += aw[a] * dt
    # P = F P F^T + Q, F = [[I, dt I, 0], [0, I, 0], [0, 0, I]]
    for k in range(n):  # rows p += dt * rows v
        for a in range(3):
            e.P[a, k] += dt * e.P[3 + a, k]
    for k in range(n):  # columns
        for a in range(3):
            e.P[k, a] += dt * e.P[k, 3 + a]
    qa = (sa * dt) ** 2
    for a in range(3):
        e.P[a, a] += 0.25 * qa * dt * dt
        e.P[3 + a, 3 + a] += qa
        e.P[a, 3 + a] += 0.5 * qa * dt
        e.P[3 + a, a] += 0.5 * qa * dt
    for i in range(L):
        w = (sd if e.stance[i] else ss) ** 2 * dt
        for a in range(3):
            e.P[6 + 3 * i + a, 6 + 3 * i + a] += w
            if e.stance[i]:
                e.x[6 + 3 * i + a] += fk.roll[i, a] * dt
    # -- measurements of the stance points, one scalar update each: their noises are
    # independent (diagonal R), so the sequence equals the batch update (every row of H has
    # one or two unit entries: no matrix products, no factorization)
    for i in range(L):
        if not e.stance[i]:
            e.stance_time[i] = 0.0
            continue
        e.stance_time[i] += dt
        trust = 1.0 if ramp <= 0.0 else min(max(e.stance_time[i] / ramp, 0.01), 1.0)
        inflate = 1.0 / (trust * trust)
        rb0, rb1, rb2 = fk.r_base[i, 0], fk.r_base[i, 1], fk.r_base[i, 2]
        # the point's velocity relative to the base, base frame: w x r + J qd (+ noise)
        w0, w1, w2 = e.omega[0], e.omega[1], e.omega[2]
        rv0 = w1 * rb2 - w2 * rb1
        rv1 = w2 * rb0 - w0 * rb2
        rv2 = w0 * rb1 - w1 * rb0
        lever = math.sqrt(rb0 * rb0 + rb1 * rb1 + rb2 * rb2)
        for c in range(6, nv):
            rv0 += fk.J_lin[i, 0, c] * fk.v0[c]
            rv1 += fk.J_lin[i, 1, c] * fk.v0[c]
            rv2 += fk.J_lin[i, 2, c] * fk.v0[c]
        r_pos = (sk * sk + (sqp * lever) ** 2) * inflate
        r_vel = (sv * sv + (sqd * lever) ** 2) * inflate
        ci = 6 + 3 * i
        for a in range(3):  # c_i - p = R r_i
            z = R[a, 0] * rb0 + R[a, 1] * rb1 + R[a, 2] * rb2
            if not _scalar_update(e.x, e.P, e.gain, ci + a, 1.0, a, -1.0, z, r_pos):
                return 2
        # v = w_i x (h_i z) - R (w x r + J qd); a foot whose velocity disagrees with the
        # estimate beyond the gate (chi-square, 3 dof) is moving -- slipping, or not yet down
        # though the schedule says stance --: its velocity rows are skipped
        zv0 = fk.roll[i, 0] - (R[0, 0] * rv0 + R[0, 1] * rv1 + R[0, 2] * rv2)
        zv1 = fk.roll[i, 1] - (R[1, 0] * rv0 + R[1, 1] * rv1 + R[1, 2] * rv2)
        zv2 = fk.roll[i, 2] - (R[2, 0] * rv0 + R[2, 1] * rv1 + R[2, 2] * rv2)
        if e.velocity_gate > 0.0 and _mahalanobis3(e.P, 3, zv0 - e.x[3], zv1 - e.x[4],
                                                    zv2 - e.x[5], r_vel) > e.velocity_gate:
            e.gated_velocities[0] += 1
        else:
            for a in range(3):
                z = zv0 if a == 0 else zv1 if a == 1 else zv2
                if not _scalar_update(e.x, e.P, e.gain, 3 + a, 1.0, 3 + a, 0.0, z, r_vel):
                    return 2
        # c_i,z = ground + lift: the lowest sole point on the ground
        if not _scalar_update(e.x, e.P, e.gain, ci + 2, 1.0, ci + 2, 0.0, ground + fk.lift[i],
                              sh * sh * inflate):
            return 2
    for k in range(n):  # rounding leaves P - g g^T / s asymmetric in the last bits
        for j in range(k + 1, n):
            m = 0.5 * (e.P[k, j] + e.P[j, k])
            e.P[k, j] = m
            e.P[j, k] = m
    return 0


@njit(cache=True)
def _mahalanobis3(P, o, y0, y1, y2, r):
    """``y^T S^-1 y`` with ``S = P[o:o+3, o:o+3] + r I`` (3 x 3 Cholesky); inf if S is not
    positive definite."""
    a00, a10, a11 = P[o, o] + r, P[o + 1, o], P[o + 1, o + 1] + r
    a20, a21, a22 = P[o + 2, o], P[o + 2, o + 1], P[o + 2, o + 2] + r
    if not a00 > 0.0:
        return math.inf
    l00 = math.sqrt(a00)
    l10, l20 = a10 / l00, a20 / l00
    d1 = a11 - l10 * l10
    if not d1 > 0.0:
        return math.inf
    l11 = math.sqrt(d1)
    l21 = (a21 - l20 * l10) / l11
    d2 = a22 - l20 * l20 - l21 * l21
    if not d2 > 0.0:
        return math.inf
    l22 = math.sqrt(d2)
    w0 = y0 / l00
    w1 = (y1 - l10 * w0) / l11
    w2 = (y2 - l20 * w0 - l21 * w1) / l22
    return w0 * w0 + w1 * w1 + w2 * w2


@njit(cache=True)
def _scalar_update(x, P, gain, i1, c1, i2, c2, z, r):
    """Kalman update of ``x`` (n,), ``P`` (n, n) with the scalar measurement
    ``z = c1 x[i1] + c2 x[i2] + noise`` (variance ``r``; a one-term row passes ``i2 = i1,
    c2 = 0``: the second term then adds exact zeros, and every call site has one signature);
    ``gain`` (n,) is workspace. False (nothing changed) if the innovation's variance is not
    positive (P not positive semidefinite)."""
    n = x.shape[0]
    y = z - c1 * x[i1] - c2 * x[i2]
    for k in range(n):  # P h
        gain[k] = c1 * P[k, i1] + c2 * P[k, i2]
    s = c1 * gain[i1] + c2 * gain[i2] + r
    if not (s > 0.0):
        return False
    for k in range(n):  # x += P h y / s;  P -= (P h)(P h)^T / s (whole rows: vectorized;
        x[k] += gain[k] * (y / s)  # the caller symmetrizes P once after its updates)
    for k in range(n):
        gk = gain[k] / s
        for j in range(n):
            P[k, j] -= gk * gain[j]
    return True


def _feet_and_soles(model: RobotModel, feet, sole_foot, sole_bodies, sole_centres, sole_radii,
                    who: str) -> dict:
    """The feet's and sole spheres' fields of an estimator's data record (``foot_body``,
    ``foot_r``: each foot's anchor, its link frame's origin; ``sole_foot``, ``sole_body``,
    ``sole_r``, ``sole_radius``), checked: ValueError (prefixed ``who``) unless there is a
    foot and every foot has a sphere, with one foot, body, centre and radius per sphere."""
    feet = list(feet)
    L = len(feet)
    sole_foot = np.array(sole_foot, dtype=np.int64).reshape(-1)
    sole_bodies = np.array(sole_bodies, dtype=np.int64).reshape(-1)
    rs = np.array(sole_centres, dtype=float).reshape(-1, 3)
    radii = np.array(sole_radii, dtype=float).reshape(-1)
    P = sole_foot.shape[0]
    if (L == 0 or sole_bodies.shape[0] != P or rs.shape[0] != P or radii.shape[0] != P
            or set(sole_foot.tolist()) != set(range(L))):
        raise ValueError(f"{who}: needs at least one foot, and one foot, body, centre and radius "
                         "per sole sphere (every foot with a sphere)")
    anchors = [model.link_frame(ln) for ln in feet]
    return dict(foot_body=np.array([a[0] for a in anchors], dtype=np.int64),
                foot_r=np.array([a[2] for a in anchors], dtype=float).reshape(L, 3),
                sole_foot=sole_foot, sole_body=sole_bodies, sole_r=rs, sole_radius=radii)


def _feet_workspace(model: RobotModel, L: int) -> FeetKinematics:
    """The buffers of :func:`feet_kinematics` of ``L`` feet, zeroed."""
    nv = int(model.nv)
    nb = len(model.model_arrays.parent)
    return FeetKinematics(
        q0=np.zeros(model.nq), v0=np.zeros(nv), Xup=np.zeros((nb, 6, 6)),
        Rw=np.zeros((nb, 3, 3)), pw=np.zeros((nb, 3)), Rtmp=np.zeros((2, 3, 3)),
        vel=np.zeros((nb, 6)), acc=np.zeros((nb, 6)), joint_twist=np.zeros(6), P3=np.zeros(3),
        Jfull=np.zeros((6, nv)), r_base=np.zeros((L, 3)), J_lin=np.zeros((L, 3, nv)),
        bias=np.zeros((L, 3)), lift=np.zeros(L), roll=np.zeros((L, 3)))


def _feet_of_contact_model(contact_model) -> tuple:
    """(robot, feet, sole_foot, sole_bodies, sole_centres, sole_radii) of an estimator on a
    :class:`~wbc_dynamics.contact.geometry.ContactModel`: its contact links as the feet (in the
    order of ``sphere_ids``), their spheres as the soles."""
    g = contact_model.geometry
    links = [sid[0] for sid in contact_model.sphere_ids]
    feet = list(dict.fromkeys(links))
    index = {ln: i for i, ln in enumerate(feet)}
    return (contact_model.robot, feet, [index[ln] for ln in links], g.sph_body, g.sph_r,
            g.sph_rad)


_EstimatorT = TypeVar("_EstimatorT", bound="LeggedEstimator")


class LeggedEstimator:
    """What the base estimators of a floating-base robot share (:class:`BaseEstimator`,
    :class:`~wbc_dynamics.invariant_ekf.InvariantEKF`): the robot, its feet and their sole
    spheres, the noise model; the construction on a contact model, the reset and the reads of
    the estimate. A subclass keeps its state in ``data`` (its kernel's NamedTuple, with the
    fields ``initialized``, ``stance_time``, ``x`` = [p (3) [m], v (3) [m/s], the feet's
    anchors (3 each) [m]] (world), ``quat``, ``v_base``, ``omega``) and passes the record of it
    to its kernel.

    Args:
        model: the robot's RobotModel (floating base).
        feet: the contact links (one foot each: its link frame's origin is the anchor).
        noise: the noise model (None: :class:`EstimatorNoise`'s defaults).

    The subclasses also take the feet's contact spheres: ``sole_foot`` (P,) the foot (index
    into ``feet``) of each sphere, ``sole_bodies`` (P,) kernel body index of each sphere
    (``ContactModel.geometry.sph_body``), ``sole_centres`` (P, 3) the spheres' centres in their
    bodies' frames [m], ``sole_radii`` (P,) [m]. :meth:`for_contact_model` takes the feet and
    spheres from a contact model.
    """

    #: the estimator's state, its kernel's NamedTuple (set by the subclass)
    data: Any

    def __init__(self, model: RobotModel, feet, noise: EstimatorNoise | None) -> None:
        if not model.floating_base:
            raise ValueError(f"{type(self).__name__}: needs a floating-base model")
        self.model = model
        self.noise = noise or EstimatorNoise()
        #: the feet (contact links), in the state's order
        self.feet = list(feet)
        #: the orientation input of an update without one
        self._no_quat = np.array([0.0, 0.0, 0.0, 1.0])

    @classmethod
    def for_contact_model(cls: type[_EstimatorT], contact_model, **kwargs) -> _EstimatorT:
        """The estimator on a :class:`~wbc_dynamics.contact.geometry.ContactModel`: its robot,
        its contact links as the feet (in the order of ``sphere_ids``), their spheres as the
        soles; ``kwargs`` the class's other arguments."""
        return cls(*_feet_of_contact_model(contact_model), **kwargs)

    def reset(self) -> None:
        """Start over: the next update initializes from the stance feet."""
        self.data.initialized[0] = False
        self.data.stance_time[:] = 1e3

    @property
    def initialized(self) -> bool:
        """An estimate exists (the first update with a stance foot has run)."""
        return bool(self.data.initialized[0])

    def base_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(position (3,) world [m], orientation (4,) xyzw world-from-base, linear velocity
        (3,) base frame [m/s], angular velocity (3,) base frame [rad/s]) -- copies."""
        e = self.data
        return e.x[0:3].copy(), e.quat.copy(), e.v_base.copy(), e.omega.copy()

    def foot_positions(self) -> np.ndarray:
        """(L, 3) estimated world positions of the feet's anchors (link origins) [m]."""
        return self.data.x[6:].reshape(-1, 3).copy()


class BaseEstimator(LeggedEstimator):
    """Base pose and twist of a floating-base robot from its IMU and joint encoders: a Kalman
    filter over base position / velocity and the feet's positions.

    Args:
        model, feet, sole_foot, sole_bodies, sole_centres, sole_radii: the robot, its feet and
            their spheres (:class:`LeggedEstimator`).
        noise: the noise model (None: its defaults).
        ground_height: [m] height of the ground plane.
        orientation: "imu" (the IMU's own orientation output) or "gyro" (integrated rate with
            an accelerometer tilt correction of gain ``tilt_gain`` [rad/s]).
        trust_ramp: [s] a foot's measurements are trusted gradually over this time after it
            enters stance (their variance divided by (t / trust_ramp)^2): a touchdown's impact
            and the schedule's timing make the first milliseconds of a stance unreliable.
        velocity_gate: chi-square threshold (3 dof) of a stance foot's velocity innovation
            above which its velocity rows are skipped (0: never).
    """

    def __init__(self, model: RobotModel, feet, sole_foot, sole_bodies, sole_centres,
                 sole_radii, noise: EstimatorNoise | None = None, ground_height: float = 0.0,
                 orientation: str = "imu", tilt_gain: float = 1.0,
                 trust_ramp: float = 0.03, velocity_gate: float = 16.27) -> None:
        super().__init__(model, feet, noise)
        if orientation not in ("imu", "gyro"):
            raise ValueError(f"orientation: {orientation!r} is not one of ['imu', 'gyro']")
        if not (math.isfinite(ground_height) and math.isfinite(tilt_gain) and tilt_gain >= 0.0
                and math.isfinite(trust_ramp) and trust_ramp >= 0.0):
            raise ValueError("ground_height, tilt_gain, trust_ramp: must be finite (tilt_gain, "
                             "trust_ramp >= 0)")
        if not (math.isfinite(velocity_gate) and velocity_gate >= 0.0):
            raise ValueError(f"velocity_gate: must be finite and >= 0, got {velocity_gate!r}")
        noise = self.noise
        self.orientation = orientation
        L = len(self.feet)
        feet_and_soles = _feet_and_soles(model, self.feet, sole_foot, sole_bodies, sole_centres,
                                         sole_radii, "BaseEstimator")
        n = 6 + 3 * L
        self.data = EstimatorData(
            **feet_and_soles, feet=_feet_workspace(model, L),
            accelerometer_noise=float(noise.accelerometer),
            kinematics_noise=float(noise.kinematics),
            contact_velocity_noise=float(noise.contact_velocity),
            contact_drift=float(noise.contact_drift), swing_drift=float(noise.swing_drift),
            ground_height_noise=float(noise.ground_height),
            joint_position_noise=float(noise.joint_position),
            joint_velocity_noise=float(noise.joint_velocity),
            ground_height=float(ground_height), gravity=GRAVITY,
            use_imu_orientation=orientation == "imu", tilt_gain=float(tilt_gain),
            trust_ramp=float(trust_ramp), velocity_gate=float(velocity_gate),
            x=np.zeros(n), P=np.eye(n), quat=np.array([0.0, 0.0, 0.0, 1.0]), omega=np.zeros(3),
            v_base=np.zeros(3), gated_velocities=np.zeros(1, dtype=np.int64),
            stance=np.ones(L, dtype=np.bool_), stance_time=np.full(L, 1e3),
            initialized=np.zeros(1, dtype=np.bool_), gain=np.zeros(n),
        )
        #: the same arrays as one pointer, what the kernel takes (a call taking the NamedTuple
        #: itself unboxes its 44 fields, ~5 us, a third of the estimator's tick)
        self._record = record_of(self.data)

    def update(self, joint_positions: np.ndarray, joint_velocities: np.ndarray,
               angular_velocity: np.ndarray, linear_acceleration: np.ndarray,
               orientation_xyzw: np.ndarray | None, stance: np.ndarray, dt: float) -> int:
        """One tick. Joints (model order) [rad, rad/s]; the IMU's angular velocity [rad/s] and
        specific force [m/s^2] in the base frame, its orientation (world-from-base, xyzw; None
        with ``orientation="gyro"``); ``stance`` (L,) bool per foot; ``dt`` [s].
        Returns the kernel's status (0 = ok)."""
        self.data.stance[:] = stance
        quat = self._no_quat if orientation_xyzw is None else orientation_xyzw
        return int(estimator_kernel(self._record, self.model._model, joint_positions,
                                    joint_velocities, angular_velocity, linear_acceleration, quat,
                                    float(dt)))

    def covariance(self) -> np.ndarray:
        """(6, 6) covariance of [position; velocity] (world frame)."""
        return self.data.P[:6, :6].copy()


class ImuEstimator:
    """A :class:`BaseEstimator` fed with IMU samples: the one validated path for an IMU sample
    and the filter's time stepping, shared by the controller (``base_state: imu``) and the
    standalone estimator (:class:`~wbc_dynamics.leg_odometry.LegOdometry`).

    Args:
        contact_model: its contact links are the feet, their spheres the soles.
        noise: the estimator's noise model.
        ground_height: [m].
        orientation_from_imu: use the IMU's orientation output (else its integrated rate).
        first_dt: [s] the time step of the first update (later: the samples' time difference,
            at most 0.1 s).
    """

    def __init__(self, contact_model, noise: EstimatorNoise, ground_height: float,
                 orientation_from_imu: bool, first_dt: float) -> None:
        #: the filter (``base_state()``, ``covariance()``, ``foot_positions()``, ``feet``)
        self.estimator = BaseEstimator.for_contact_model(
            contact_model, noise=noise, ground_height=float(ground_height),
            orientation="imu" if orientation_from_imu else "gyro")
        self.orientation_from_imu = bool(orientation_from_imu)
        self.first_dt = float(first_dt)
        self.gyro = np.zeros(3)
        self.accel = np.zeros(3)
        self.quat = np.array([0.0, 0.0, 0.0, 1.0])
        #: [s] time of the latest sample, and of the sample the filter last integrated
        self.stamp = -math.inf
        self.used = -math.inf
        #: steps run, and steps whose kernel reported a failure (kinematics, update system)
        self.updates = 0
        self.failed_updates = 0

    @classmethod
    def from_config(cls, contact_model, cfg) -> ImuEstimator:
        """From a :class:`~wbc_dynamics.controller_config.ControllerConfig`'s fields: ``imu_*``,
        ``sensing_joint_position_noise``, ``sensing_joint_velocity_noise``, ``ground_height``,
        ``control_rate``. Raises ValueError naming a field that is not finite and > 0."""
        for name in ("imu_gyro_noise", "imu_accelerometer_noise", "sensing_joint_position_noise",
                     "sensing_joint_velocity_noise", "control_rate"):
            x = float(getattr(cfg, name))
            if not (math.isfinite(x) and x > 0.0):
                raise ValueError(f"{name}: must be finite and > 0, got {getattr(cfg, name)!r}")
        if not math.isfinite(float(cfg.ground_height)):
            raise ValueError(f"ground_height: must be finite, got {cfg.ground_height!r}")
        noise = EstimatorNoise(accelerometer=float(cfg.imu_accelerometer_noise),
                               gyro=float(cfg.imu_gyro_noise),
                               joint_position=float(cfg.sensing_joint_position_noise),
                               joint_velocity=float(cfg.sensing_joint_velocity_noise))
        return cls(contact_model, noise, float(cfg.ground_height), bool(cfg.imu_orientation),
                   1.0 / float(cfg.control_rate))

    @property
    def feet(self) -> list[str]:
        """The contact links, in the filter's (and a stance mask's) order."""
        return self.estimator.feet

    def set_imu(self, angular_velocity: np.ndarray, linear_acceleration: np.ndarray,
                orientation_xyzw: np.ndarray | None, now: float) -> None:
        """An IMU sample at the base frame: angular rate (3,) [rad/s] and specific force (3,)
        [m/s^2] (what an accelerometer measures: +9.81 up at rest) in the base frame,
        orientation (4,) world-from-base xyzw (required when the orientation is the IMU's,
        normalized if within 1e-3 of unit norm; ignored otherwise, None allowed), its time
        ``now`` [s], after the previous sample's. Raises ValueError naming the field; the
        previous sample is kept."""
        w = np.asarray(angular_velocity, dtype=np.float64).reshape(-1)
        a = np.asarray(linear_acceleration, dtype=np.float64).reshape(-1)
        for name, x in (("angular_velocity", w), ("linear_acceleration", a)):
            if x.shape[0] != 3:
                raise ValueError(f"imu.{name}: expected 3 values, got {x.shape[0]}")
            if not np.all(np.isfinite(x)):
                raise ValueError(f"imu.{name}: contains a non-finite value")
        quat = None
        norm = 1.0
        if self.orientation_from_imu:
            if orientation_xyzw is None:
                raise ValueError("imu.orientation: required with imu_orientation: true")
            quat = np.asarray(orientation_xyzw, dtype=np.float64).reshape(-1)
            if quat.shape[0] != 4 or not np.all(np.isfinite(quat)):
                raise ValueError("imu.orientation: expected 4 finite values")
            norm = math.sqrt(float(quat @ quat))
            if abs(norm - 1.0) > 1e-3:
                raise ValueError(f"imu.orientation: quaternion norm {norm:.6g} is not 1")
        now = float(now)
        if not math.isfinite(now) or now <= self.stamp:
            raise ValueError(f"imu: stamp {now!r} is not after the previous sample's")
        self.gyro[:] = w
        self.accel[:] = a
        if quat is not None:
            self.quat[:] = quat / norm
        self.stamp = now

    @property
    def new_sample(self) -> bool:
        """A sample arrived that the filter has not integrated yet."""
        return self.stamp > self.used

    def step(self, joint_positions: np.ndarray, joint_velocities: np.ndarray,
             stance: np.ndarray) -> bool:
        """One filter step on the latest sample, if it is new: joints in the model's order
        [rad, rad/s], ``stance`` (L,) bool per foot. Returns whether it stepped."""
        if not self.new_sample:
            return False
        dt = self.first_dt if self.used == -math.inf else self.stamp - self.used
        dt = min(max(dt, 0.0), 0.1)
        self.used = self.stamp
        status = self.estimator.update(joint_positions, joint_velocities, self.gyro, self.accel,
                                       self.quat if self.orientation_from_imu else None, stance,
                                       dt)
        self.updates += 1
        if status != 0:
            self.failed_updates += 1
        return True

    def reset(self) -> None:
        """Forget the samples and the estimate (the next step initializes it)."""
        self.stamp = self.used = -math.inf
        self.accel[:] = 0.0
        self.estimator.reset()
