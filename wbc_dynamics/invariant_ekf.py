"""Contact-aided right-invariant extended Kalman filter (InEKF) for a legged robot's base.

One compiled kernel family: the filter's kernels share the numba-typed
:class:`InvariantEKFData` record and :class:`InvariantEKF` binds them; a kernel's numba cache
entry and compile time depend on the module that defines it, so they stay in one module.

:class:`InvariantEKF` follows Hartley, Ghaffari, Eustice, Grizzle, "Contact-aided invariant
extended Kalman filtering for robot state estimation", IJRR 39(4), 2020, arXiv:1904.09251
(cited below as [H], by topic: its text was not at hand to check equation numbers), in its
*imperfect* form with IMU biases ([H], IMU biases): the right-invariant error on the group, the
biases as an ordinary Euclidean error. The authors' implementation (github.com/RossHartley/
invariant-ekf, ``InEKF::Propagate``, ``DiscreteNoiseMatrix``, ``CorrectRightInvariant``) has
the same conventions (error ``X_hat X^-1``, update ``X <- Exp(delta) X``). It is a
replacement for :class:`~wbc_dynamics.estimator.BaseEstimator` with the same Python interface,
the same feet (contact links' anchors: their link frames' origins), the same measurements of
the feet from the joint encoders and the same noise model (:class:`EstimatorNoise`).

State (all world frame unless said otherwise)::

    X = [[R, v, p, d_1, ..., d_K],    in SE_{2+K}(3)   ([H], the state; K feet)
         [0,      I_{2+K}        ]]
    theta = [b_g, b_a]                 gyro [rad/s] and accelerometer [m/s^2] biases (base frame)

``R`` world-from-base, ``v`` [m/s], ``p`` [m] the base, ``d_i`` [m] foot i's anchor. The error
is right-invariant, ``eta = X_hat X^-1 = Exp(xi)``, and ``zeta = theta_hat - theta``; the
filter's covariance ``P`` is that of ``[xi_R, xi_v, xi_p, xi_d1, ..., xi_dK, zeta_g, zeta_a]``
(dimension 9 + 3K + 6, this order, as [H] augments the error with the biases).

**Propagation** with the IMU's angular rate ``w`` and specific force ``f`` (base frame) over
``dt`` ([H]'s contact-inertial dynamics, the inputs held over the step)::

    R <- R Exp((w - b_g) dt)
    v <- v + (R (f - b_a) + g) dt
    p <- p + v dt + (R (f - b_a) + g) dt^2 / 2
    d_i <- d_i + u_i dt      (stance; u_i the anchor's rolling velocity, below; 0 in swing)

The error dynamics are ``d[xi; zeta]/dt = A [xi; zeta] + Ad w`` with ([H], the linearized
right-invariant error dynamics with biases)::

    A = [[ 0,   0, 0, 0,   -R,      0 ],      rows / columns: R, v, p, d_i, b_g, b_a
         [[g]x, 0, 0, 0,   -[v]x R, -R ],
         [ 0,   I, 0, 0,   -[p]x R,  0 ],
         [[u]x, 0, 0, 0,   -[d]x R,  0 ],
         [ 0,   0, 0, 0,    0,       0 ],
         [ 0,   0, 0, 0,    0,       0 ]]

evaluated at the estimate before the step. ``A`` is nilpotent (``A^4 = 0``: the chain
``b_g -> R -> v -> p``), so ``Phi = expm(A dt) = I + A dt + (A dt)^2/2 + (A dt)^3/6`` *exactly*;
the filter applies it block by block (never forming it). (The authors' implementation
integrates ``A`` along the step's rotation instead; the two differ in the bias columns at
second order in ``dt``.) The discrete noise is [H]'s approximation ``Q_d = Phi Ad_X Q Ad_X^T
Phi^T dt`` (``Ad_X`` the adjoint of SE_{2+K}(3) at the estimate before the step, the bias
blocks identity), so ``P <- Phi (P + Ad_X Q Ad_X^T dt) Phi^T``. ``Q``:
gyro and accelerometer white noise (per-sample standard deviations ``s``: ``Q dt = (s dt)^2``,
as :class:`.BaseEstimator` discretizes its accelerometer), foot drift ``contact_drift^2`` in
stance and ``swing_drift^2`` in swing [m^2/s] (the paper removes a swing foot from the state;
a large drift is the same in the limit and keeps the state's size fixed), bias random walks
``gyro_bias_walk^2``, ``accelerometer_bias_walk^2``. ``Ad_X Q Ad_X^T`` does not depend on
``R``: its blocks are ``q_g [a]x [b]x^T`` (``a, b`` in ``I, v, p, d_i``) plus the diagonal.

*Rolling feet (not in [H], whose contact point is fixed):* a round foot in stance rolls, its
anchor (the link origin, ``h_i`` above the ground) moving at ``u_i = (R w_i) x (h_i e_z)``, ``w_i``
the foot's angular velocity (base frame, from the gyro and the joint rates), exactly as
:class:`.BaseEstimator` moves its anchors. It is a known world-frame input to the feet; the
exact linearization of such an input is the ``[u_i]x`` block in the ``(d_i, R)`` entry of ``A``
(as gravity's ``[g]x`` in ``(v, R)``); ``u_i = 0`` for a flat or point foot.

**Update** for each foot in stance, with ``X_hat`` the propagated estimate:

* leg kinematics, a right-invariant observation ([H], forward kinematics): the anchor's position
  relative to the base in the base frame from the encoders, ``r_i(q) = R^T (d_i - p)``. The
  innovation ``R_hat r_i - (d_hat_i - p_hat)`` is ``H delta`` to first order in the correction
  ``delta`` (``X = Exp(delta) X_hat``; ``delta = -xi``) with ``H = [0, 0, -I, 0.., I (d_i), ..,
  0]`` ([H]), whatever the state: H does not depend on the estimate. Noise isotropic,
  ``kinematics^2 + (joint_position |r_i|)^2`` per axis (:class:`.BaseEstimator`'s), so rotated by
  ``R_hat`` it stays diagonal and the three axes are three scalar updates;
* the ground: the lowest sole point on the ground, ``d_i,z - lift_i(R) = ground`` with
  ``lift_i(R) = max_k (rho_k - e_z^T R s_k)`` (``s_k`` sole sphere k's centre relative to the
  anchor, base frame, ``rho_k`` its radius). Not in [H]; linearized in the right-invariant
  error at the prior (``R = Exp(delta_R) R_hat``, ``d_i = Exp(delta_R) d_hat_i + J_l(delta_R)
  delta_d_i``)::

      d_i,z - lift_i = d_hat_i,z - lift_hat_i + c_y delta_R,x - c_x delta_R,y + delta_d_i,z

  with ``c = d_hat_i + R_hat s_k*`` the world position of the active sphere's centre (its
  x, y: the contact point's): a rotation about the world origin lifts a point by its lever.

Both are trusted gradually after a touchdown (variance divided by ``(t / trust_ramp)^2``, as
:class:`.BaseEstimator`). A foot whose kinematic innovation is improbable -- its squared
Mahalanobis distance ``d^2 = z^T (H P H^T + R)^-1 z`` at the prior beyond ``innovation_gate``
(chi-square, 3 dof; 16.27: 0.1 %) -- is moving although the schedule says stance (slipping,
lifting off, not yet down): its four rows' variances are multiplied by ``d^2 /
innovation_gate`` (a soft gate, not in [H]: the foot still counts, so the filter cannot lock
itself out of every foot; computed for every foot before any row, so the update stays one
batch update). Every row is linear in ``delta`` with the prior mean ``delta = 0`` and
a fixed ``H``, and the noises are independent, so the scalar updates in sequence equal the
batch Kalman update exactly ([H]'s right-invariant update); then the state is retracted
once, ``X <- Exp(delta) X`` (the SE_{2+K}(3) exponential), ``theta <- theta + delta_theta``.

**Orientation** is the filter's own: the gyro integrated, corrected through the coupling of the
kinematics with gravity (a tilt error makes the velocity drift, which the feet see). The
absolute position and the yaw are not observable ([H], observability); the gyro bias is, all
three axes, while feet stay in contact (the yaw rate relative to the fixed feet), so the yaw
drifts with the feet's slips and re-anchoring, not with the gyro's bias.
An IMU orientation output, when given to :meth:`InvariantEKF.update`, is used **only to
initialize** the orientation (its yaw included); without it the first orientation has zero yaw
and roll / pitch from the accelerometer's gravity direction.

**Initialization** as :class:`.BaseEstimator`: the first update with a stance foot puts the
stance feet's lowest sole points on the ground (the base over the origin), at rest, biases zero.

Everything per tick is one compiled call (:func:`invariant_ekf_kernel`), no allocation.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numba import njit

from .estimator import (
    GRAVITY,
    EstimatorNoise,
    FeetKinematics,
    LeggedEstimator,
    _feet_and_soles,
    _feet_workspace,
    _integrate_quat,
    _scalar_update,
    feet_kinematics,
)
from .kernels.dynamics import check_vector
from .kernels.linalg import cholesky
from .kernels.records import kernel_record, record_of
from .kernels.spatial import quaternion_product_into, rotation_from_quaternion, rotvec_quaternion

if TYPE_CHECKING:
    from .model import RobotModel

__all__ = ["InvariantEKF", "InvariantEKFData", "invariant_ekf_kernel"]

#: status codes of :func:`invariant_ekf_kernel` for an input that is not finite (the state is
#: left unchanged), by the input's name
INPUT_STATUS = {-1: "joint_positions", -2: "joint_velocities", -3: "angular_velocity",
                -4: "linear_acceleration", -5: "orientation_xyzw", -6: "dt"}


@kernel_record("InvariantEKFDataRecord")
class InvariantEKFData(NamedTuple):
    """The filter's configuration, state and workspace (one record per filter).

    Configuration: ``foot_body`` (K,) int64 body of each foot's anchor (its link frame's origin),
    ``foot_r`` (K, 3) the anchor in that body's frame [m]; ``sole_foot`` (S,) int64 foot of each
    contact sphere, ``sole_body`` (S,), ``sole_r`` (S, 3) its centre in the body's frame [m],
    ``sole_radius`` (S,) [m]. Noise (standard deviations): ``gyro_noise`` [rad/s] and
    ``accelerometer_noise`` [m/s^2] per sample, ``gyro_bias_walk`` [rad/s/sqrt(s)],
    ``accelerometer_bias_walk`` [m/s^2/sqrt(s)], ``contact_drift``, ``swing_drift``
    [m/sqrt(s)], ``kinematics_noise`` [m], ``joint_position_noise`` [rad] (times the anchor's
    distance from the base: part of the kinematic noise), ``ground_height_noise`` [m]. Prior at
    initialization (standard deviations): ``orientation_prior`` [rad] per axis,
    ``position_prior`` [m] (base and feet), ``velocity_prior`` [m/s], ``gyro_bias_prior``
    [rad/s], ``accelerometer_bias_prior`` [m/s^2]. ``ground_height`` [m], ``gravity`` [m/s^2],
    ``trust_ramp`` [s], ``innovation_gate`` (chi-square, 0 = off; module docstring).

    State: ``quat`` (4,) world-from-base orientation xyzw and ``Rot`` (3, 3) its matrix;
    ``x`` (6 + 3K,) = [p (3) [m], v (3) [m/s], d_1 .. d_K (3 each) [m]], world frame (the layout
    of :class:`~wbc_dynamics.estimator.EstimatorData`'s ``x``); ``gyro_bias`` (3,) [rad/s],
    ``accel_bias`` (3,) [m/s^2] (base frame); ``P`` (15 + 3K, 15 + 3K) the covariance of the
    error ``[xi_R, xi_v, xi_p, xi_d1 .. xi_dK, zeta_g, zeta_a]`` (module docstring; not the
    order of ``x``); ``omega`` (3,) [rad/s] base angular velocity (base frame: gyro minus its
    estimated bias); ``v_base`` (3,) [m/s] ``R^T v``; ``stance`` (K,) bool (input of each
    update); ``stance_time`` (K,) [s]; ``outlier_scale`` (K,) the gate's variance factor of
    each foot in the last update (1: consistent); ``initialized`` (1,) bool.

    Workspace: ``feet`` the kinematics buffers of ``wbc_dynamics.estimator.feet_kinematics``
    (:class:`~wbc_dynamics.estimator.FeetKinematics`: ``r_base`` (K, 3) the anchors in the base
    frame [m], ``lift`` (K,) [m] each anchor's height above its lowest sole point, ``roll`` (K, 3)
    [m/s] the anchors' rolling velocity (world), ...); ``sole_offset`` (K, 3) [m] the lowest
    sphere's centre relative to the anchor (world axes); ``U`` (3 + K, 3, 3) the noise's
    cross-product blocks, ``F`` (7 + 2K, 3, 3) the blocks of Phi, ``delta`` (n,) the correction,
    ``gain`` (n,) the scalar updates' ``P h``, ``Rexp`` (3, 3), ``Jl`` (3, 3); one foot's
    measurement rows (``_foot_rows``): ``row_index`` (4, 3) int64, ``row_coef`` (4, 3), ``row_z``
    (4,), ``row_var`` (4,). """

    foot_body: np.ndarray
    foot_r: np.ndarray
    sole_foot: np.ndarray
    sole_body: np.ndarray
    sole_r: np.ndarray
    sole_radius: np.ndarray
    gyro_noise: float
    accelerometer_noise: float
    gyro_bias_walk: float
    accelerometer_bias_walk: float
    contact_drift: float
    swing_drift: float
    kinematics_noise: float
    joint_position_noise: float
    ground_height_noise: float
    orientation_prior: float
    position_prior: float
    velocity_prior: float
    gyro_bias_prior: float
    accelerometer_bias_prior: float
    ground_height: float
    gravity: float
    trust_ramp: float
    innovation_gate: float
    quat: np.ndarray
    Rot: np.ndarray
    x: np.ndarray
    gyro_bias: np.ndarray
    accel_bias: np.ndarray
    P: np.ndarray
    omega: np.ndarray
    v_base: np.ndarray
    stance: np.ndarray
    stance_time: np.ndarray
    outlier_scale: np.ndarray
    initialized: np.ndarray
    feet: FeetKinematics
    sole_offset: np.ndarray
    U: np.ndarray
    F: np.ndarray
    delta: np.ndarray
    gain: np.ndarray
    Rexp: np.ndarray
    Jl: np.ndarray
    row_index: np.ndarray
    row_coef: np.ndarray
    row_z: np.ndarray
    row_var: np.ndarray


# ------------------------------------------------------------------------------------------
# small helpers (compiled)
# ------------------------------------------------------------------------------------------


@njit(cache=True)
def _skew_into(M, x, y, z, scale):
    """M = scale [(x, y, z)]x."""
    M[0, 0] = 0.0
    M[0, 1] = -z * scale
    M[0, 2] = y * scale
    M[1, 0] = z * scale
    M[1, 1] = 0.0
    M[1, 2] = -x * scale
    M[2, 0] = -y * scale
    M[2, 1] = x * scale
    M[2, 2] = 0.0


@njit(cache=True)
def _skew_times_add(M, x, y, z, R, scale):
    """M += scale [(x, y, z)]x R."""
    for b in range(3):
        r0, r1, r2 = R[0, b], R[1, b], R[2, b]
        M[0, b] += scale * (y * r2 - z * r1)
        M[1, b] += scale * (z * r0 - x * r2)
        M[2, b] += scale * (x * r1 - y * r0)


@njit(cache=True)
def _quat_left_exp(q, px, py, pz):
    """q <- Exp(phi) q (world-frame rotation vector ``phi``), normalized."""
    ax, ay, az, aw = rotvec_quaternion(px, py, pz)
    quaternion_product_into(ax, ay, az, aw, q[0], q[1], q[2], q[3], q, 0)


@njit(cache=True)
def _so3_exp_and_left_jacobian(px, py, pz, Rexp, Jl):
    """Rexp = Exp(phi), Jl = J_l(phi) = I + (1 - cos t)/t^2 [phi]x + (t - sin t)/t^3 [phi]x^2
    (t = |phi|; the blocks of the SE_{2+K}(3) exponential)."""
    t2 = px * px + py * py + pz * pz
    t = math.sqrt(t2)
    if t < 1e-4:  # series, exact to rounding at this size
        a = 1.0 - t2 / 6.0
        b = 0.5 - t2 / 24.0
        c = 1.0 / 6.0 - t2 / 120.0
    else:
        a = math.sin(t) / t
        b = (1.0 - math.cos(t)) / t2
        c = (t - math.sin(t)) / (t2 * t)
    K = ((0.0, -pz, py), (pz, 0.0, -px), (-py, px, 0.0))
    for i in range(3):
        for j in range(3):
            k2 = K[i][0] * K[0][j] + K[i][1] * K[1][j] + K[i][2] * K[2][j]
            eye = 1.0 if i == j else 0.0
            Rexp[i, j] = eye + a * K[i][j] + b * k2
            Jl[i, j] = eye + b * K[i][j] + c * k2


@njit(cache=True)
def _sole_lift(e, R):
    """``e.feet.lift`` (K,): each anchor's height above the bottom of its lowest sole sphere with
    the orientation ``R``, and ``e.sole_offset`` (K, 3): that sphere's centre relative to the
    anchor, world axes (after :func:`~wbc_dynamics.estimator.feet_kinematics`)."""
    fk = e.feet
    L = e.foot_body.shape[0]
    for i in range(L):
        fk.lift[i] = -np.inf
    for k in range(e.sole_body.shape[0]):
        i = e.sole_foot[k]
        b = e.sole_body[k]
        s0 = fk.pw[b, 0] + (fk.Rw[b, 0, 0] * e.sole_r[k, 0] + fk.Rw[b, 0, 1] * e.sole_r[k, 1]
                           + fk.Rw[b, 0, 2] * e.sole_r[k, 2]) - fk.r_base[i, 0]
        s1 = fk.pw[b, 1] + (fk.Rw[b, 1, 0] * e.sole_r[k, 0] + fk.Rw[b, 1, 1] * e.sole_r[k, 1]
                           + fk.Rw[b, 1, 2] * e.sole_r[k, 2]) - fk.r_base[i, 1]
        s2 = fk.pw[b, 2] + (fk.Rw[b, 2, 0] * e.sole_r[k, 0] + fk.Rw[b, 2, 1] * e.sole_r[k, 1]
                           + fk.Rw[b, 2, 2] * e.sole_r[k, 2]) - fk.r_base[i, 2]
        wz = R[2, 0] * s0 + R[2, 1] * s1 + R[2, 2] * s2
        lift = e.sole_radius[k] - wz
        if lift > fk.lift[i]:
            fk.lift[i] = lift
            e.sole_offset[i, 0] = R[0, 0] * s0 + R[0, 1] * s1 + R[0, 2] * s2
            e.sole_offset[i, 1] = R[1, 0] * s0 + R[1, 1] * s1 + R[1, 2] * s2
            e.sole_offset[i, 2] = wz


@njit(cache=True)
def _scalar_update3(x, P, gain, i1, c1, i2, c2, i3, c3, z, r):
    """Kalman update of ``x`` (n,), ``P`` (n, n) with ``z = c1 x[i1] + c2 x[i2] + c3 x[i3] +
    noise`` (variance ``r``): :func:`~wbc_dynamics.estimator._scalar_update` with a third term.
    False (nothing changed) if the innovation's variance is not positive."""
    n = x.shape[0]
    y = z - c1 * x[i1] - c2 * x[i2] - c3 * x[i3]
    for k in range(n):
        gain[k] = c1 * P[k, i1] + c2 * P[k, i2] + c3 * P[k, i3]
    s = c1 * gain[i1] + c2 * gain[i2] + c3 * gain[i3] + r
    if not (s > 0.0):
        return False
    for k in range(n):
        x[k] += gain[k] * (y / s)
    for k in range(n):
        gk = gain[k] / s
        for j in range(n):
            P[k, j] -= gk * gain[j]
    return True


@njit(cache=True)
def _apply_phi_left(P, F, h, L):
    """P <- Phi P with Phi = expm(A h) given by its blocks ``F`` (:func:`_iekf_tick`): whole
    rows (contiguous) at a time, in the order p, v, d_i, R, so that each reads the rows it
    depends on before they change (the bias rows never do)."""
    n = P.shape[0]
    ibg = 9 + 3 * L
    iba = ibg + 3
    for a in range(3):  # p += h v + F_pR R + F_pbg b_g + F_pba b_a
        for b in range(3):
            c1, c2, c3 = F[4, a, b], F[5, a, b], F[6, a, b]
            for k in range(n):
                P[6 + a, k] += c1 * P[b, k] + c2 * P[ibg + b, k] + c3 * P[iba + b, k]
        for k in range(n):
            P[6 + a, k] += h * P[3 + a, k]
    for a in range(3):  # v += F_vR R + F_vbg b_g + F_vba b_a
        for b in range(3):
            c1, c2, c3 = F[1, a, b], F[2, a, b], F[3, a, b]
            for k in range(n):
                P[3 + a, k] += c1 * P[b, k] + c2 * P[ibg + b, k] + c3 * P[iba + b, k]
    for i in range(L):  # d_i += F_dR R + F_dbg b_g
        for a in range(3):
            r = 9 + 3 * i + a
            for b in range(3):
                c1, c2 = F[7 + 2 * i, a, b], F[8 + 2 * i, a, b]
                for k in range(n):
                    P[r, k] += c1 * P[b, k] + c2 * P[ibg + b, k]
    for a in range(3):  # R += F_Rbg b_g
        for b in range(3):
            c2 = F[0, a, b]
            for k in range(n):
                P[a, k] += c2 * P[ibg + b, k]


@njit(cache=True)
def _transpose_in_place(P):
    n = P.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            t = P[i, j]
            P[i, j] = P[j, i]
            P[j, i] = t


# ------------------------------------------------------------------------------------------
# the tick
# ------------------------------------------------------------------------------------------


@njit(cache=True)
def invariant_ekf_kernel(e, model, qj, qdj, gyro, accel, imu_quat, has_quat, dt):
    """One filter tick (``_iekf_tick``) on the record ``e``, after checking that the inputs
    are finite (a negative status, ``INPUT_STATUS``, and nothing changed if not); then
    ``e.v_base = R^T v`` and ``e.omega = gyro - b_g``. Returns the status (0 = ok)."""
    if not check_vector(qj):
        return -1
    if not check_vector(qdj):
        return -2
    if not check_vector(gyro):
        return -3
    if not check_vector(accel):
        return -4
    if has_quat:
        if not check_vector(imu_quat):
            return -5
        nq = imu_quat[0] ** 2 + imu_quat[1] ** 2 + imu_quat[2] ** 2 + imu_quat[3] ** 2
        if not nq > 1e-12:
            return -5
    if not (math.isfinite(dt) and dt >= 0.0):
        return -6
    status = _iekf_tick(e, model, qj, qdj, gyro, accel, imu_quat, has_quat, dt)
    R = e.Rot
    for a in range(3):
        e.v_base[a] = R[0, a] * e.x[3] + R[1, a] * e.x[4] + R[2, a] * e.x[5]
        e.omega[a] = gyro[a] - e.gyro_bias[a]
    return status


@njit(cache=True)
def _initialize(e, accel, imu_quat, has_quat):
    """First tick with a stance foot (module docstring); ``e.feet.lift`` / ``r_base`` computed.
    Returns False if no foot is in stance (nothing done)."""
    fk = e.feet
    L = e.foot_body.shape[0]
    ns = 0
    for i in range(L):
        if e.stance[i]:
            ns += 1
    if ns == 0:
        return False
    q = e.quat
    if has_quat:
        nq = math.sqrt(imu_quat[0] ** 2 + imu_quat[1] ** 2 + imu_quat[2] ** 2 + imu_quat[3] ** 2)
        for a in range(4):
            q[a] = imu_quat[a] / nq
    else:  # zero yaw, roll / pitch putting the measured gravity direction on R^T e_z
        an = math.sqrt(accel[0] ** 2 + accel[1] ** 2 + accel[2] ** 2)
        roll = pitch = 0.0
        if an > 1e-6:
            roll = math.atan2(accel[1], accel[2])
            pitch = math.atan2(-accel[0], math.sqrt(accel[1] ** 2 + accel[2] ** 2))
        cr, sr = math.cos(0.5 * roll), math.sin(0.5 * roll)
        cp, sp = math.cos(0.5 * pitch), math.sin(0.5 * pitch)
        q[0], q[1], q[2], q[3] = sr * cp, cr * sp, -sr * sp, cr * cp  # Ry(pitch) Rx(roll)
    R = e.Rot
    rotation_from_quaternion(q[0], q[1], q[2], q[3], R)
    _sole_lift(e, R)
    h = 0.0
    for i in range(L):
        if e.stance[i]:
            zi = R[2, 0] * fk.r_base[i, 0] + R[2, 1] * fk.r_base[i, 1] + R[2, 2] * fk.r_base[i, 2]
            h += e.ground_height + fk.lift[i] - zi
    n = e.P.shape[0]
    for k in range(e.x.shape[0]):
        e.x[k] = 0.0
    e.x[2] = h / ns
    for i in range(L):
        for a in range(3):
            e.x[6 + 3 * i + a] = e.x[a] + (R[a, 0] * fk.r_base[i, 0] + R[a, 1] * fk.r_base[i, 1]
                                           + R[a, 2] * fk.r_base[i, 2])
    for a in range(3):
        e.gyro_bias[a] = 0.0
        e.accel_bias[a] = 0.0
    for k in range(n):
        for m in range(n):
            e.P[k, m] = 0.0
    ibg = 9 + 3 * L
    for a in range(3):
        e.P[a, a] = e.orientation_prior ** 2
        e.P[3 + a, 3 + a] = e.velocity_prior ** 2
        e.P[6 + a, 6 + a] = e.position_prior ** 2
        e.P[ibg + a, ibg + a] = e.gyro_bias_prior ** 2
        e.P[ibg + 3 + a, ibg + 3 + a] = e.accelerometer_bias_prior ** 2
        for i in range(L):
            e.P[9 + 3 * i + a, 9 + 3 * i + a] = e.position_prior ** 2
    for i in range(L):
        e.stance_time[i] = 1e3
    e.initialized[0] = True
    return True


@njit(cache=True)
def _foot_rows(e, i):
    """The measurement rows of stance foot ``i`` at the prior (``e.x``, ``e.Rot``; ``e.feet.lift``,
    ``e.sole_offset`` at that orientation), as sparse rows on the correction ``delta``
    (module docstring): ``e.row_index`` (4, 3), ``e.row_coef`` (4, 3) (at most three entries
    per row; index -1: no entry), the innovations ``e.row_z`` (4,) and their
    variances ``e.row_var`` (4,) (with the trust ramp). Rows 0-2: the kinematics
    ``R r_i - (d_i - p) = delta_d_i - delta_p``; row 3: the ground,
    ``ground + lift_i - d_i,z = c_y delta_R,x - c_x delta_R,y + delta_d_i,z``."""
    fk = e.feet
    R = e.Rot
    ramp = e.trust_ramp
    trust = 1.0 if ramp <= 0.0 else min(max(e.stance_time[i] / ramp, 0.01), 1.0)
    inflate = 1.0 / (trust * trust)
    rb0, rb1, rb2 = fk.r_base[i, 0], fk.r_base[i, 1], fk.r_base[i, 2]
    lever = math.sqrt(rb0 * rb0 + rb1 * rb1 + rb2 * rb2)
    sk, sqp, sh = e.kinematics_noise, e.joint_position_noise, e.ground_height_noise
    di = 9 + 3 * i
    for a in range(3):
        e.row_index[a, 0] = di + a
        e.row_coef[a, 0] = 1.0
        e.row_index[a, 1] = 6 + a
        e.row_coef[a, 1] = -1.0
        e.row_index[a, 2] = -1
        e.row_coef[a, 2] = 0.0
        e.row_z[a] = ((R[a, 0] * rb0 + R[a, 1] * rb1 + R[a, 2] * rb2)
                      - (e.x[6 + 3 * i + a] - e.x[a]))
        e.row_var[a] = (sk * sk + (sqp * lever) ** 2) * inflate
    e.row_index[3, 0] = 0
    e.row_coef[3, 0] = e.x[7 + 3 * i] + e.sole_offset[i, 1]
    e.row_index[3, 1] = 1
    e.row_coef[3, 1] = -(e.x[6 + 3 * i] + e.sole_offset[i, 0])
    e.row_index[3, 2] = di + 2
    e.row_coef[3, 2] = 1.0
    e.row_z[3] = e.ground_height + fk.lift[i] - e.x[8 + 3 * i]
    e.row_var[3] = sh * sh * inflate


@njit(cache=True)
def measurement_rows_at_estimate(e, i):
    """:func:`_foot_rows` of foot ``i`` at the current estimate (``e.feet.lift`` / ``e.sole_offset``
    recomputed at ``e.Rot`` from the last tick's kinematics): what the next update would use
    if the state were this prior. For tests and diagnostics."""
    _sole_lift(e, e.Rot)
    _foot_rows(e, i)


@njit(cache=True)
def _kinematic_distance(e, i):
    """Squared Mahalanobis distance of foot ``i``'s kinematic innovation (``e.row_z[0:3]``,
    :func:`_foot_rows`) at the covariance ``e.P``: ``z^T (H P H^T + r I)^-1 z``, ``H`` the rows
    ``delta_d_i - delta_p`` (a 3 x 3 Cholesky factorization). Infinite if not positive."""
    di = 9 + 3 * i
    S = e.Rexp  # scratch (3, 3): the retraction rewrites it
    for a in range(3):
        for b in range(3):
            S[a, b] = (e.P[di + a, di + b] - e.P[di + a, 6 + b] - e.P[6 + a, di + b]
                       + e.P[6 + a, 6 + b])
        S[a, a] += e.row_var[a]
    if not cholesky(S, S, 0.0):  # S = L L^T in place (lower)
        return np.inf
    y0 = e.row_z[0] / S[0, 0]
    y1 = (e.row_z[1] - S[1, 0] * y0) / S[1, 1]
    y2 = (e.row_z[2] - S[2, 0] * y0 - S[2, 1] * y1) / S[2, 2]
    return y0 * y0 + y1 * y1 + y2 * y2


@njit(cache=True)
def _iekf_tick(e, model, qj, qdj, gyro, accel, imu_quat, has_quat, dt):
    """One InEKF tick (module docstring): gyro ``gyro`` (3,) [rad/s] and specific force
    ``accel`` (3,) [m/s^2], base frame; ``imu_quat`` (4,) xyzw, used to initialize if
    ``has_quat``; joints ``qj`` [rad], ``qdj`` [rad/s] in the model's order; ``dt`` [s];
    ``e.stance`` the feet in stance. Returns 0, 1 if the kinematics failed (nothing changed), 2
    if an innovation variance was not positive (the rows before it applied, the rest
    skipped)."""
    fk = e.feet
    L = e.foot_body.shape[0]
    n = e.P.shape[0]
    ibg = 9 + 3 * L
    iba = ibg + 3
    g = e.gravity
    h = dt
    # -- the anchors relative to the base (base frame), the feet's rates
    if feet_kinematics(e, model, qj, qdj) != 0:
        return 1
    if not e.initialized[0]:
        _initialize(e, accel, imu_quat, has_quat)
        return 0
    R = e.Rot
    wx, wy, wz = gyro[0] - e.gyro_bias[0], gyro[1] - e.gyro_bias[1], gyro[2] - e.gyro_bias[2]
    # -- each stance anchor's rolling velocity u_i = (R w_i) x (lift_i e_z) (world)
    _sole_lift(e, R)
    for i in range(L):
        b = e.foot_body[i]
        f0 = wx + (fk.Rw[b, 0, 0] * fk.vel[b, 3] + fk.Rw[b, 0, 1] * fk.vel[b, 4]
                   + fk.Rw[b, 0, 2] * fk.vel[b, 5])
        f1 = wy + (fk.Rw[b, 1, 0] * fk.vel[b, 3] + fk.Rw[b, 1, 1] * fk.vel[b, 4]
                   + fk.Rw[b, 1, 2] * fk.vel[b, 5])
        f2 = wz + (fk.Rw[b, 2, 0] * fk.vel[b, 3] + fk.Rw[b, 2, 1] * fk.vel[b, 4]
                   + fk.Rw[b, 2, 2] * fk.vel[b, 5])
        lift = max(fk.lift[i], 0.0) if e.stance[i] else 0.0
        fk.roll[i, 0] = (R[1, 0] * f0 + R[1, 1] * f1 + R[1, 2] * f2) * lift
        fk.roll[i, 1] = -(R[0, 0] * f0 + R[0, 1] * f1 + R[0, 2] * f2) * lift
        fk.roll[i, 2] = 0.0
    # -- covariance: P <- Phi (P + Ad Q Ad^T dt) Phi^T at the estimate before the step
    # noise: q_g [a]x [b]x^T over the blocks a, b in (I, [v]x, [p]x, [d_i]x), plus the diagonal
    U = e.U
    for a in range(3):
        for b in range(3):
            U[0, a, b] = 1.0 if a == b else 0.0
    _skew_into(U[1], e.x[3], e.x[4], e.x[5], 1.0)
    _skew_into(U[2], e.x[0], e.x[1], e.x[2], 1.0)
    for i in range(L):
        _skew_into(U[3 + i], e.x[6 + 3 * i], e.x[7 + 3 * i], e.x[8 + 3 * i], 1.0)
    qg = (e.gyro_noise * h) ** 2
    nb = 3 + L
    for j in range(nb):
        for m in range(nb):
            for a in range(3):
                for b in range(3):
                    s = U[j, a, 0] * U[m, b, 0] + U[j, a, 1] * U[m, b, 1] + U[j, a, 2] * U[m, b, 2]
                    e.P[3 * j + a, 3 * m + b] += qg * s
    qa = (e.accelerometer_noise * h) ** 2
    for a in range(3):
        e.P[3 + a, 3 + a] += qa
        e.P[ibg + a, ibg + a] += e.gyro_bias_walk ** 2 * h
        e.P[iba + a, iba + a] += e.accelerometer_bias_walk ** 2 * h
        for i in range(L):
            drift = e.contact_drift if e.stance[i] else e.swing_drift
            e.P[9 + 3 * i + a, 9 + 3 * i + a] += drift * drift * h
    # Phi's blocks (A^4 = 0: the truncated series is exact)
    F = e.F
    h2, h3 = 0.5 * h * h, h * h * h / 6.0
    for a in range(3):
        for b in range(3):
            F[0, a, b] = -R[a, b] * h  # (R, b_g)
            F[3, a, b] = -R[a, b] * h  # (v, b_a)
            F[6, a, b] = -R[a, b] * h2  # (p, b_a)
            F[2, a, b] = 0.0
            F[5, a, b] = 0.0
    _skew_into(F[1], 0.0, 0.0, -g, h)  # (v, R): [g]x h
    _skew_into(F[4], 0.0, 0.0, -g, h2)  # (p, R): [g]x h^2/2
    _skew_times_add(F[2], e.x[3], e.x[4], e.x[5], R, -h)  # (v, b_g): -[v]x R h - [g]x R h^2/2
    _skew_times_add(F[2], 0.0, 0.0, -g, R, -h2)
    _skew_times_add(F[5], e.x[0], e.x[1], e.x[2], R, -h)  # (p, b_g)
    _skew_times_add(F[5], e.x[3], e.x[4], e.x[5], R, -h2)
    _skew_times_add(F[5], 0.0, 0.0, -g, R, -h3)
    for i in range(L):
        u0, u1, u2 = fk.roll[i, 0], fk.roll[i, 1], fk.roll[i, 2]
        _skew_into(F[7 + 2 * i], u0, u1, u2, h)  # (d_i, R): [u_i]x h
        Fd = F[8 + 2 * i]  # (d_i, b_g): -[d_i]x R h - [u_i]x R h^2/2
        for a in range(3):
            for b in range(3):
                Fd[a, b] = 0.0
        _skew_times_add(Fd, e.x[6 + 3 * i], e.x[7 + 3 * i], e.x[8 + 3 * i], R, -h)
        _skew_times_add(Fd, u0, u1, u2, R, -h2)
    _apply_phi_left(e.P, F, h, L)
    _transpose_in_place(e.P)  # (Phi P)^T = P Phi^T: Phi applied again gives Phi P Phi^T
    _apply_phi_left(e.P, F, h, L)
    # -- the mean
    f0, f1, f2 = accel[0] - e.accel_bias[0], accel[1] - e.accel_bias[1], accel[2] - e.accel_bias[2]
    a0 = R[0, 0] * f0 + R[0, 1] * f1 + R[0, 2] * f2
    a1 = R[1, 0] * f0 + R[1, 1] * f1 + R[1, 2] * f2
    a2 = R[2, 0] * f0 + R[2, 1] * f1 + R[2, 2] * f2 - g
    aw = (a0, a1, a2)
    for a in range(3):
        e.x[a] += e.x[3 + a] * h + aw[a] * h2
        e.x[3 + a] += aw[a] * h
    for i in range(L):
        if e.stance[i]:
            for a in range(3):
                e.x[6 + 3 * i + a] += fk.roll[i, a] * h
    _integrate_quat(e.quat, wx, wy, wz, h)
    rotation_from_quaternion(e.quat[0], e.quat[1], e.quat[2], e.quat[3], R)
    # -- update: scalar rows on the correction delta (prior 0), then one retraction
    _sole_lift(e, R)  # at the prior's orientation: the ground row's linearization point
    for k in range(n):
        e.delta[k] = 0.0
    status = 0
    for i in range(L):  # stance times, and each foot's weight at the prior (before any row)
        e.outlier_scale[i] = 1.0
        if not e.stance[i]:
            e.stance_time[i] = 0.0
            continue
        e.stance_time[i] += dt
        if e.innovation_gate > 0.0:
            _foot_rows(e, i)
            e.outlier_scale[i] = max(_kinematic_distance(e, i) / e.innovation_gate, 1.0)
    for i in range(L):
        if not e.stance[i]:
            continue
        _foot_rows(e, i)
        for m in range(4):
            e.row_var[m] *= e.outlier_scale[i]
        ix, cf = e.row_index, e.row_coef
        for m in range(3):  # the kinematics: two entries each
            if not _scalar_update(e.delta, e.P, e.gain, ix[m, 0], cf[m, 0], ix[m, 1], cf[m, 1],
                                  e.row_z[m], e.row_var[m]):
                status = 2
                break
        if status == 0 and not _scalar_update3(e.delta, e.P, e.gain, ix[3, 0], cf[3, 0],
                                               ix[3, 1], cf[3, 1], ix[3, 2], cf[3, 2],
                                               e.row_z[3], e.row_var[3]):
            status = 2
        if status != 0:
            break
    _retract(e)  # (after a failed row: the rows before it)
    for k in range(n):  # rounding leaves P - g g^T / s asymmetric in the last bits
        for j in range(k + 1, n):
            m = 0.5 * (e.P[k, j] + e.P[j, k])
            e.P[k, j] = m
            e.P[j, k] = m
    return status


@njit(cache=True)
def _retract(e):
    """X <- Exp(delta) X (the SE_{2+K}(3) exponential: every column of X's last 2 + K rotated
    by Exp(phi) and shifted by J_l(phi) delta), theta <- theta + delta_theta."""
    L = e.foot_body.shape[0]
    d = e.delta
    Re, J = e.Rexp, e.Jl
    _so3_exp_and_left_jacobian(d[0], d[1], d[2], Re, J)
    # columns of X: v (delta 3..5), p (6..8), d_i (9 + 3i ..); x's order: p, v, d_i
    for c in range(2 + L):
        xo = 3 if c == 0 else (0 if c == 1 else 6 + 3 * (c - 2))
        do = 3 + 3 * c
        y0, y1, y2 = e.x[xo], e.x[xo + 1], e.x[xo + 2]
        for a in range(3):
            e.x[xo + a] = (Re[a, 0] * y0 + Re[a, 1] * y1 + Re[a, 2] * y2
                           + J[a, 0] * d[do] + J[a, 1] * d[do + 1] + J[a, 2] * d[do + 2])
    _quat_left_exp(e.quat, d[0], d[1], d[2])
    rotation_from_quaternion(e.quat[0], e.quat[1], e.quat[2], e.quat[3], e.Rot)
    ibg = 9 + 3 * L
    for a in range(3):
        e.gyro_bias[a] += d[ibg + a]
        e.accel_bias[a] += d[ibg + 3 + a]


# ------------------------------------------------------------------------------------------
# the filter
# ------------------------------------------------------------------------------------------


def _positive(name: str, x: float) -> float:
    x = float(x)
    if not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name}: must be finite and > 0, got {x!r}")
    return x


class InvariantEKF(LeggedEstimator):
    """Base pose and twist of a floating-base robot from its IMU and joint encoders: the
    contact-aided right-invariant EKF with IMU biases (module docstring, [H]); the angular
    velocity of its estimate (:meth:`base_state`) is the gyro's minus its estimated bias.

    Args:
        model, feet, sole_foot, sole_bodies, sole_centres, sole_radii: the robot, its feet and
            their spheres (:class:`~wbc_dynamics.estimator.LeggedEstimator`).
        noise: the noise model (:class:`~wbc_dynamics.estimator.EstimatorNoise`: ``gyro``,
            ``accelerometer``, ``kinematics``, ``joint_position``, ``contact_drift``,
            ``swing_drift``, ``ground_height``; its velocity terms are not used: this filter
            has no contact-velocity measurement).
        ground_height: [m] height of the ground plane.
        trust_ramp: [s] a foot's measurements are trusted gradually over this time after it
            enters stance (variance divided by (t / trust_ramp)^2), as BaseEstimator's.
        gyro_bias_walk: [rad/s/sqrt(s)] random walk of the gyro bias.
        accelerometer_bias_walk: [m/s^2/sqrt(s)] random walk of the accelerometer bias.
        gyro_bias_prior: [rad/s] standard deviation of the gyro bias at initialization.
        accelerometer_bias_prior: [m/s^2] that of the accelerometer bias.
        orientation_prior: [rad] that of the initial orientation, per axis.
        position_prior, velocity_prior: [m, m/s] those of the initial base position (and of
            the feet's) and velocity.
        innovation_gate: chi-square threshold (3 dof) of a stance foot's kinematic innovation
            beyond which its measurements are down-weighted by ``d^2 / innovation_gate``
            (module docstring); 0 = off. 16.27 as BaseEstimator's ``velocity_gate``.
    """

    def __init__(self, model: RobotModel, feet, sole_foot, sole_bodies, sole_centres,
                 sole_radii, noise: EstimatorNoise | None = None, ground_height: float = 0.0,
                 trust_ramp: float = 0.03, gyro_bias_walk: float = 1e-4,
                 accelerometer_bias_walk: float = 1e-3, gyro_bias_prior: float = 0.005,
                 accelerometer_bias_prior: float = 0.02, orientation_prior: float = 0.01,
                 position_prior: float = 0.01, velocity_prior: float = 0.01,
                 innovation_gate: float = 16.27) -> None:
        super().__init__(model, feet, noise)
        if not (math.isfinite(ground_height) and math.isfinite(trust_ramp)
                and trust_ramp >= 0.0 and math.isfinite(innovation_gate)
                and innovation_gate >= 0.0):
            raise ValueError("ground_height, trust_ramp, innovation_gate: must be finite "
                             "(trust_ramp, innovation_gate >= 0)")
        prior = {k: _positive(k, v) for k, v in (
            ("gyro_bias_walk", gyro_bias_walk),
            ("accelerometer_bias_walk", accelerometer_bias_walk),
            ("gyro_bias_prior", gyro_bias_prior),
            ("accelerometer_bias_prior", accelerometer_bias_prior),
            ("orientation_prior", orientation_prior), ("position_prior", position_prior),
            ("velocity_prior", velocity_prior))}
        noise = self.noise
        L = len(self.feet)
        feet_and_soles = _feet_and_soles(model, self.feet, sole_foot, sole_bodies, sole_centres,
                                         sole_radii, "InvariantEKF")
        rs, radii = feet_and_soles["sole_r"], feet_and_soles["sole_radius"]
        if not (np.all(np.isfinite(rs)) and np.all(np.isfinite(radii)) and np.all(radii >= 0.0)):
            raise ValueError("InvariantEKF: sole centres and radii must be finite (radii >= 0)")
        n = 15 + 3 * L
        #: the joints the updates take (the model's order)
        self.n_joints = int(model.nq) - 7
        self.data = InvariantEKFData(
            **feet_and_soles, feet=_feet_workspace(model, L),
            gyro_noise=float(noise.gyro), accelerometer_noise=float(noise.accelerometer),
            gyro_bias_walk=prior["gyro_bias_walk"],
            accelerometer_bias_walk=prior["accelerometer_bias_walk"],
            contact_drift=float(noise.contact_drift), swing_drift=float(noise.swing_drift),
            kinematics_noise=float(noise.kinematics),
            joint_position_noise=float(noise.joint_position),
            ground_height_noise=float(noise.ground_height),
            orientation_prior=prior["orientation_prior"],
            position_prior=prior["position_prior"], velocity_prior=prior["velocity_prior"],
            gyro_bias_prior=prior["gyro_bias_prior"],
            accelerometer_bias_prior=prior["accelerometer_bias_prior"],
            ground_height=float(ground_height), gravity=GRAVITY, trust_ramp=float(trust_ramp),
            innovation_gate=float(innovation_gate),
            quat=np.array([0.0, 0.0, 0.0, 1.0]), Rot=np.eye(3), x=np.zeros(6 + 3 * L),
            gyro_bias=np.zeros(3), accel_bias=np.zeros(3), P=np.eye(n), omega=np.zeros(3),
            v_base=np.zeros(3), stance=np.ones(L, dtype=np.bool_), stance_time=np.full(L, 1e3),
            outlier_scale=np.ones(L), initialized=np.zeros(1, dtype=np.bool_),
            sole_offset=np.zeros((L, 3)), U=np.zeros((3 + L, 3, 3)), F=np.zeros((7 + 2 * L, 3, 3)),
            delta=np.zeros(n), gain=np.zeros(n), Rexp=np.eye(3), Jl=np.eye(3),
            row_index=np.zeros((4, 3), dtype=np.int64), row_coef=np.zeros((4, 3)),
            row_z=np.zeros(4), row_var=np.zeros(4),
        )
        #: the same arrays as one pointer, what the kernel takes
        self._record = record_of(self.data)

    @staticmethod
    def _vector(x, n: int, name: str) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if a.shape != (n,):
            raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)

    def update(self, joint_positions: np.ndarray, joint_velocities: np.ndarray,
               angular_velocity: np.ndarray, linear_acceleration: np.ndarray,
               orientation_xyzw: np.ndarray | None, stance: np.ndarray, dt: float) -> int:
        """One tick. Joints (model order) [rad, rad/s]; the IMU's angular velocity [rad/s] and
        specific force [m/s^2] in the base frame; its orientation (world-from-base, xyzw), used
        only to initialize (None: from the accelerometer, zero yaw); ``stance`` (K,) bool per
        foot; ``dt`` [s] >= 0 since the last update. Returns the kernel's status (0 = ok, 1 the
        kinematics failed, 2 an update was skipped). Raises ValueError naming an input of the
        wrong shape or not finite (the state unchanged)."""
        nj = self.n_joints
        qj = self._vector(joint_positions, nj, "joint_positions")
        qdj = self._vector(joint_velocities, nj, "joint_velocities")
        w = self._vector(angular_velocity, 3, "angular_velocity")
        f = self._vector(linear_acceleration, 3, "linear_acceleration")
        has_quat = orientation_xyzw is not None
        quat = (self._vector(orientation_xyzw, 4, "orientation_xyzw") if has_quat
                else self._no_quat)
        st = np.asarray(stance)
        if st.shape != self.data.stance.shape:
            raise ValueError(f"stance: expected shape {self.data.stance.shape}, got {st.shape}")
        self.data.stance[:] = st
        status = int(invariant_ekf_kernel(self._record, self.model._model, qj, qdj, w, f, quat,
                                          has_quat, float(dt)))
        if status < 0:
            what = "must be finite and >= 0" if status == -6 else "contains a non-finite value"
            if status == -5:
                what = "must be finite with a non-zero norm"
            raise ValueError(f"{INPUT_STATUS[status]}: {what}")
        return status

    def covariance(self) -> np.ndarray:
        """(6, 6) covariance of [position; velocity] (world frame), to first order in the
        invariant error: ``p_hat - p = xi_p - [p]x xi_R``, ``v_hat - v = xi_v - [v]x xi_R``
        (:class:`~wbc_dynamics.estimator.BaseEstimator.covariance`'s quantity)."""
        e = self.data
        T = np.zeros((6, 9))
        T[0:3, 6:9] = np.eye(3)
        T[3:6, 3:6] = np.eye(3)
        for row, v in ((0, e.x[0:3]), (3, e.x[3:6])):
            T[row:row + 3, 0:3] = -np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]],
                                             [-v[1], v[0], 0.0]])
        return T @ e.P[:9, :9] @ T.T

    def error_covariance(self) -> np.ndarray:
        """(15 + 3K, 15 + 3K) the covariance of the invariant error ``[xi_R, xi_v, xi_p,
        xi_d1 .. xi_dK, zeta_g, zeta_a]`` (a copy)."""
        return self.data.P.copy()

    def measurement_rows(self, foot: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Foot ``foot``'s measurement model linearized at the current estimate, with the last
        update's kinematics (the kernel's own rows, ``_foot_rows``): ``H`` (4, 15 + 3K) on
        the correction ``delta`` (rows: the kinematics' three axes, the ground height), the
        innovations ``z`` (4,), their variances (4,). For tests and diagnostics (allocates)."""
        if not 0 <= int(foot) < len(self.feet):
            raise ValueError(f"foot: {foot!r} is not in [0, {len(self.feet)})")
        e = self.data
        measurement_rows_at_estimate(self._record, int(foot))
        H = np.zeros((4, e.P.shape[0]))
        for m in range(4):
            for j in range(3):
                if e.row_index[m, j] >= 0:
                    H[m, e.row_index[m, j]] += e.row_coef[m, j]
        return H, e.row_z.copy(), e.row_var.copy()

    def biases(self) -> tuple[np.ndarray, np.ndarray]:
        """(gyro bias (3,) [rad/s], accelerometer bias (3,) [m/s^2]), base frame -- copies."""
        return self.data.gyro_bias.copy(), self.data.accel_bias.copy()
