"""What a real robot gives its controller instead of the simulator's exact state.

:class:`Imperfections` describes sensing (white noise on the joint encoders and on the base-state
estimate, state latency), actuation (command latency, a first-order torque lag, torque limits
below the URDF's) and model error (the plant's link masses and inertias scaled per body).
:class:`Sensing` and :class:`Actuation` apply it between the plant and the controller of the
in-process closed loop (:class:`~wbc_dynamics.sim.closed_loop.ClosedLoop`), one control tick at a
time; every draw comes from one seeded generator, so a run is reproducible.

:meth:`Imperfections.realistic` is the combination a legged robot's controller meets on hardware:
1 mrad / 0.02 rad/s encoders, a base estimate good to 5 mm / 0.5 deg / 0.05 m/s / 0.02 rad/s,
1 ms of latency each way, +-10 % mass, a 2 ms torque lag and torque limits at 80 %; and a MEMS
IMU for a controller that estimates its base itself (0.002 rad/s gyro noise and bias, 0.05 m/s^2
accelerometer noise, biases that wander as random walks of 2e-5 rad/s/sqrt(s) and 3e-3
m/s^2/sqrt(s) -- the bias random walks of the ADIS16448 in the EuRoC datasets, as VIO
calibrations use them --, its orientation output good to 0.2 deg). The accelerometer starts
calibrated (``imu_accelerometer_bias`` 0): the base estimator has no accelerometer-bias
state, and an uncalibrated 0.05 m/s^2 bias raises its velocity error to about 0.03 m/s.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = ["Actuation", "Imperfections", "Sensing", "SimEncoders", "SimImu",
           "scale_plant_masses"]

#: fields scaled by :meth:`Imperfections.scaled` (noise levels, latencies, model error, lag)
_SCALED = ("joint_position_noise", "joint_velocity_noise", "base_position_noise",
           "base_orientation_noise", "base_linear_velocity_noise", "base_angular_velocity_noise",
           "state_latency", "command_latency", "mass_error", "torque_lag", "imu_gyro_noise",
           "imu_gyro_bias", "imu_accelerometer_noise", "imu_orientation_noise",
           "imu_gyro_bias_walk", "imu_accelerometer_bias", "imu_accelerometer_bias_walk",
           "encoder_resolution")


def _nonnegative(named) -> list[float]:
    """The values of the ``(name, value)`` pairs as floats; ValueError naming the first whose
    value is not a finite number >= 0."""
    values = []
    for name, x in named:
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x >= 0.0):
            raise ValueError(f"{name}: must be finite and >= 0, got {x!r}")
        values.append(float(x))
    return values


def _generator(rng: np.random.Generator | None, seed: int) -> np.random.Generator:
    """``rng`` if given (a stream shared with the caller), else a new one seeded with ``seed``."""
    return rng if rng is not None else np.random.default_rng(int(seed))


@dataclass(frozen=True)
class Imperfections:
    """Sensing, actuation and model error of one run (all zero / 1.0: the exact plant).

    Attributes:
        joint_position_noise: [rad] (or m) standard deviation of white encoder noise.
        joint_velocity_noise: [rad/s] (or m/s) standard deviation of white joint-rate noise.
        base_position_noise: [m] per world axis, white.
        base_orientation_noise: [rad] per base axis: the reported orientation is the true one
            rotated by a random rotation vector of this standard deviation per component.
        base_linear_velocity_noise: [m/s] per base-frame axis, white.
        base_angular_velocity_noise: [rad/s] per base-frame axis, white.
        state_latency: [s] age of the state the controller receives (rounded to whole ticks).
        command_latency: [s] delay before a command reaches the drives (whole ticks).
        mass_error: relative: every plant body's mass and inertia scaled by U[1 - e, 1 + e].
        torque_lag: [s] time constant of a first-order lag between command and applied torque.
        torque_limit_fraction: the drives saturate at this fraction of the URDF effort limits.
        command_dropout_start, command_dropout: [s] no command reaches the drives from
            ``command_dropout_start`` for ``command_dropout`` (0 = never); they keep the last.
        imu_gyro_noise: [rad/s] white noise of the IMU's angular rate, per sample.
        imu_gyro_bias: [rad/s] standard deviation of the gyro's constant bias (drawn per run,
            per axis): what makes an integrated yaw drift.
        imu_accelerometer_noise: [m/s^2] white noise of its specific force, per sample.
        imu_orientation_noise: [rad] per axis, of the IMU's own orientation output (its AHRS).
        imu_gyro_bias_walk: [rad/s/sqrt(s)] the gyro bias's random walk (its change over ``dt``
            seconds has standard deviation ``walk sqrt(dt)`` per axis).
        imu_accelerometer_bias: [m/s^2] standard deviation of the accelerometer's initial bias
            (drawn per run, per axis).
        imu_accelerometer_bias_walk: [m/s^2/sqrt(s)] its random walk.
        encoder_resolution: [rad] (or m) one encoder count: joint positions are quantized to
            it before the white noise (0: not quantized; a 14-bit joint encoder: 3.8e-4 rad).
        seed: of the random generator (noise and mass draws).
    """

    joint_position_noise: float = 0.0
    joint_velocity_noise: float = 0.0
    base_position_noise: float = 0.0
    base_orientation_noise: float = 0.0
    base_linear_velocity_noise: float = 0.0
    base_angular_velocity_noise: float = 0.0
    state_latency: float = 0.0
    command_latency: float = 0.0
    mass_error: float = 0.0
    torque_lag: float = 0.0
    torque_limit_fraction: float = 1.0
    command_dropout_start: float = 0.0
    command_dropout: float = 0.0
    imu_gyro_noise: float = 0.0
    imu_gyro_bias: float = 0.0
    imu_accelerometer_noise: float = 0.0
    imu_orientation_noise: float = 0.0
    imu_gyro_bias_walk: float = 0.0
    imu_accelerometer_bias: float = 0.0
    imu_accelerometer_bias_walk: float = 0.0
    encoder_resolution: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        _nonnegative((f"Imperfections.{f.name}", getattr(self, f.name))
                     for f in dataclasses.fields(self) if f.name != "seed")
        if not 0.0 < self.torque_limit_fraction <= 1.0:
            raise ValueError("Imperfections.torque_limit_fraction: must be in (0, 1], got "
                             f"{self.torque_limit_fraction!r}")
        if self.mass_error >= 1.0:
            raise ValueError(f"Imperfections.mass_error: must be < 1, got {self.mass_error!r}")

    @classmethod
    def realistic(cls, scale: float = 1.0, seed: int = 0) -> Imperfections:
        """The realistic combination (module docstring), every level times ``scale``; the torque
        limit is ``1 - 0.2 scale`` of the URDF's (at least 20 %)."""
        base = cls(joint_position_noise=1e-3, joint_velocity_noise=0.02,
                   base_position_noise=5e-3, base_orientation_noise=math.radians(0.5),
                   base_linear_velocity_noise=0.05, base_angular_velocity_noise=0.02,
                   state_latency=1e-3, command_latency=1e-3, mass_error=0.1, torque_lag=2e-3,
                   torque_limit_fraction=0.8, imu_gyro_noise=0.002, imu_gyro_bias=0.002,
                   imu_accelerometer_noise=0.05, imu_orientation_noise=math.radians(0.2),
                   imu_gyro_bias_walk=2e-5, imu_accelerometer_bias_walk=3e-3, seed=seed)
        return base.scaled(scale)

    def scaled(self, scale: float) -> Imperfections:
        """Noise, latency, mass error and lag times ``scale`` (mass error capped at 0.5); the
        torque-limit reduction ``1 - fraction`` times ``scale`` (fraction at least 0.2)."""
        if not (math.isfinite(scale) and scale >= 0.0):
            raise ValueError(f"scale: must be finite and >= 0, got {scale!r}")
        kw = {k: getattr(self, k) * scale for k in _SCALED}
        kw["mass_error"] = min(kw["mass_error"], 0.5)
        kw["torque_limit_fraction"] = max(1.0 - (1.0 - self.torque_limit_fraction) * scale, 0.2)
        return dataclasses.replace(self, **kw)

    @property
    def exact(self) -> bool:
        """True if nothing is perturbed."""
        return (all(getattr(self, k) == 0.0 for k in _SCALED)
                and self.torque_limit_fraction == 1.0 and self.command_dropout == 0.0)


def _rotvec_quat_xyzw(w: np.ndarray) -> np.ndarray:
    th = float(np.linalg.norm(w))
    if th < 1e-12:
        return np.array([0.5 * w[0], 0.5 * w[1], 0.5 * w[2], 1.0])
    s = math.sin(0.5 * th) / th
    return np.array([w[0] * s, w[1] * s, w[2] * s, math.cos(0.5 * th)])


def _quat_mul_xyzw(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


class Sensing:
    """The state the controller receives: the plant's, ``state_latency`` ticks old, with noise.

    ``floating``: q = [p, quat xyzw, joints], v = [v_lin, w (base frame), joint rates]."""

    def __init__(self, imp: Imperfections, floating: bool, rate: float,
                 rng: np.random.Generator) -> None:
        self.imp = imp
        self.floating = floating
        self.rng = rng
        self._delay = int(round(imp.state_latency * rate))
        self._queue: deque = deque()
        self.rate = float(rate)
        self._tick = 0
        self._imu = SimImu(imp.imu_gyro_noise, imp.imu_gyro_bias, imp.imu_accelerometer_noise,
                           imp.imu_orientation_noise, rng=rng,
                           gyro_bias_walk=imp.imu_gyro_bias_walk,
                           accelerometer_bias=imp.imu_accelerometer_bias,
                           accelerometer_bias_walk=imp.imu_accelerometer_bias_walk)
        self._encoders = SimEncoders(imp.joint_position_noise, imp.joint_velocity_noise,
                                     imp.encoder_resolution, rng=rng)
        #: the IMU reading of the last :meth:`measure` (floating base): (angular rate (3,)
        #: [rad/s] base frame, specific force (3,) [m/s^2] base frame, orientation (4,) xyzw)
        self.imu: tuple | None = None

    def measure(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The controller's (q, v) for the plant's (q, v) of this tick (copies); also the
        IMU's reading of the same (delayed) sample (:meth:`imu`)."""
        self._queue.append((q.copy(), v.copy()))
        while len(self._queue) > self._delay + 1:
            self._queue.popleft()
        q, v = (x.copy() for x in self._queue[0])
        self._tick += 1
        if self.floating:
            self.imu = self._imu.sample(self._tick / self.rate, q[0:7], v[0:6])
        imp, rng = self.imp, self.rng
        o, ov = (7, 6) if self.floating else (0, 0)
        self._encoders.measure(q[o:], v[ov:])
        if self.floating:
            if imp.base_position_noise > 0.0:
                q[0:3] += rng.normal(0.0, imp.base_position_noise, 3)
            if imp.base_orientation_noise > 0.0:
                dq = _rotvec_quat_xyzw(rng.normal(0.0, imp.base_orientation_noise, 3))
                quat = _quat_mul_xyzw(q[3:7], dq)
                q[3:7] = quat / np.linalg.norm(quat)
            if imp.base_linear_velocity_noise > 0.0:
                v[0:3] += rng.normal(0.0, imp.base_linear_velocity_noise, 3)
            if imp.base_angular_velocity_noise > 0.0:
                v[3:6] += rng.normal(0.0, imp.base_angular_velocity_noise, 3)
        return q, v


def _quat_rot(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


class SimEncoders:
    """The simulated robot's joint encoders (ROS-free; :class:`Sensing` and ``wbc_sim`` both
    use them): a joint position is quantized to whole counts of ``resolution`` [rad] (0: not
    quantized), then white noise of std ``position_noise`` [rad] is added; a joint rate gets
    white noise of std ``velocity_noise`` [rad/s] (what a drive's filtered rate estimate
    leaves)."""

    def __init__(self, position_noise: float = 0.0, velocity_noise: float = 0.0,
                 resolution: float = 0.0, seed: int = 0,
                 rng: np.random.Generator | None = None) -> None:
        self.position_noise, self.velocity_noise, self.resolution = _nonnegative((
            ("encoder_position_noise", position_noise), ("encoder_velocity_noise", velocity_noise),
            ("encoder_resolution", resolution)))
        self.rng = _generator(rng, seed)

    @property
    def exact(self) -> bool:
        """True if the readings are the joints' state."""
        return self.position_noise == self.velocity_noise == self.resolution == 0.0

    def measure(self, q: np.ndarray, v: np.ndarray) -> None:
        """Joint positions ``q`` and rates ``v`` (float arrays) replaced by their readings,
        in place."""
        if self.resolution > 0.0:
            np.round(q / self.resolution, out=q)
            q *= self.resolution
        if self.position_noise > 0.0:
            q += self.rng.normal(0.0, self.position_noise, q.shape[0])
        if self.velocity_noise > 0.0:
            v += self.rng.normal(0.0, self.velocity_noise, v.shape[0])


class SimImu:
    """The simulated robot's IMU, at the base frame (ROS-free; :obj:`.SimNode` publishes it).

    A sample of the base state at time ``t`` [s] -- position and orientation ``q`` (7,)
    (world, quaternion xyzw), twist ``v`` (6,) in the base frame -- is

    * angular rate [rad/s, base frame]: ``v[3:6] + b_g + n_g``, ``b_g`` a bias drawn once per
      run (std ``gyro_bias``) that then wanders as a random walk (``gyro_bias_walk`` [rad/s /
      sqrt(s)]: over ``dt`` seconds it changes by ``walk sqrt(dt)`` std per axis), ``n_g``
      white noise (std ``gyro_noise``);
    * specific force [m/s^2, base frame]: ``R^T ((v_w(t) - v_w(t_prev)) / (t - t_prev) + g_up) +
      b_a + n_a`` with ``v_w = R v[0:3]`` the base's world velocity, ``t_prev`` the previous
      sample's time (the mean acceleration since the last sample, as an accelerometer's
      anti-alias filter averages it), ``g_up = (0, 0, 9.81)``; the first sample: at rest;
      ``b_a`` its bias, drawn and wandering as the gyro's (``accelerometer_bias``,
      ``accelerometer_bias_walk``);
    * orientation (world-from-base, xyzw): ``q[3:7]`` rotated by a white rotation vector noise
      (std ``orientation_noise`` per axis, the IMU's own AHRS error).

    :class:`Sensing` (the in-process loop) and ``wbc_sim`` (over ROS) both sample this IMU.
    A sample at the time of the previous one (a re-sent state) returns that sample again.
    """

    GRAVITY = 9.81

    def __init__(self, gyro_noise: float = 0.0, gyro_bias: float = 0.0,
                 accelerometer_noise: float = 0.0, orientation_noise: float = 0.0,
                 seed: int = 0, rng: np.random.Generator | None = None,
                 gyro_bias_walk: float = 0.0, accelerometer_bias: float = 0.0,
                 accelerometer_bias_walk: float = 0.0) -> None:
        (self.gyro_noise, gyro_bias, self.accelerometer_noise, self.orientation_noise,
         self.gyro_bias_walk, accelerometer_bias, self.accelerometer_bias_walk) = _nonnegative((
             ("imu_gyro_noise", gyro_noise), ("imu_gyro_bias", gyro_bias),
             ("imu_accelerometer_noise", accelerometer_noise),
             ("imu_orientation_noise", orientation_noise), ("imu_gyro_bias_walk", gyro_bias_walk),
             ("imu_accelerometer_bias", accelerometer_bias),
             ("imu_accelerometer_bias_walk", accelerometer_bias_walk)))
        self.rng = _generator(rng, seed)
        #: [rad/s] the gyro's bias of this run (base frame)
        self.gyro_bias = self.rng.normal(0.0, gyro_bias, 3) if gyro_bias > 0.0 else np.zeros(3)
        #: [m/s^2] the accelerometer's bias now (base frame)
        self.accelerometer_bias = (self.rng.normal(0.0, accelerometer_bias, 3)
                                   if accelerometer_bias > 0.0 else np.zeros(3))
        self._t = -math.inf
        self._vw = np.zeros(3)
        self._sample: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def sample(self, t: float, q: np.ndarray, v: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(angular rate (3,) [rad/s], specific force (3,) [m/s^2], orientation (4,) xyzw) of the
        base state ``q`` (7,), ``v`` (6,) at ``t`` [s] (class docstring)."""
        if t == self._t and self._sample is not None:
            return self._sample
        quat = np.asarray(q[3:7], dtype=float)
        R = _quat_rot(quat)
        vw = R @ np.asarray(v[0:3], dtype=float)
        accel_w = np.array([0.0, 0.0, self.GRAVITY])
        rng = self.rng
        if self._sample is not None and t > self._t:
            accel_w += (vw - self._vw) / (t - self._t)
            root_dt = math.sqrt(t - self._t)  # the biases' random walks over the interval
            if self.gyro_bias_walk > 0.0:
                self.gyro_bias = self.gyro_bias + rng.normal(
                    0.0, self.gyro_bias_walk * root_dt, 3)
            if self.accelerometer_bias_walk > 0.0:
                self.accelerometer_bias = self.accelerometer_bias + rng.normal(
                    0.0, self.accelerometer_bias_walk * root_dt, 3)
        self._t, self._vw = t, vw
        gyro = np.asarray(v[3:6], dtype=float) + self.gyro_bias
        accel = R.T @ accel_w + self.accelerometer_bias
        if self.gyro_noise > 0.0:
            gyro = gyro + rng.normal(0.0, self.gyro_noise, 3)
        if self.accelerometer_noise > 0.0:
            accel = accel + rng.normal(0.0, self.accelerometer_noise, 3)
        if self.orientation_noise > 0.0:
            noise = rng.normal(0.0, self.orientation_noise, 3)
            quat = _quat_mul_xyzw(quat, _rotvec_quat_xyzw(noise))
            quat = quat / np.linalg.norm(quat)
        self._sample = (gyro, accel, quat.copy())
        return self._sample


class Actuation:
    """What the drives apply for the controller's commands: each command ``command_latency``
    ticks late (none at all during ``command_dropout``: the drives keep the last one), through a
    first-order lag of ``torque_lag`` [s] (exact discretization at the plant step), saturated at
    ``torque_limit_fraction`` of ``limit``.

    Effort drives apply the commanded torque as held. Hybrid drives (a command with set-points
    and gains: :meth:`command`'s ``drive``) run their own impedance loop at the plant step,
    ``tau_ff + stiffness (q_set - q) + damping (qd_set - qd)`` on the joint state they measure
    (as Unitree motor drivers or legged_control's hybrid joint handles do)."""

    def __init__(self, imp: Imperfections, limit: np.ndarray, rate: float,
                 plant_dt: float | None = None) -> None:
        self.imp = imp
        self.limit = np.asarray(limit, dtype=float) * imp.torque_limit_fraction
        self._delay = int(round(imp.command_latency * rate))
        self._queue: deque = deque()
        dt = 1.0 / rate if plant_dt is None else float(plant_dt)
        self._alpha = 1.0 if imp.torque_lag <= 0.0 else 1.0 - math.exp(-dt / imp.torque_lag)
        self._applied = np.zeros_like(self.limit)
        self._cmd: tuple | None = None
        #: commands that never reached the drives (dropout)
        self.dropped = 0

    def command(self, tau: np.ndarray, t: float, drive: tuple | None = None) -> None:
        """The controller's command of the tick at time ``t`` [s]: torques ``tau`` [N m] and,
        for a hybrid drive, ``drive = (q_set, qd_set, stiffness, damping)`` (n,) each."""
        tau = np.where(np.isfinite(tau), tau, 0.0)
        cmd = (tau.astype(float, copy=True),
               None if drive is None else tuple(np.array(x, dtype=float) for x in drive))
        if self._cmd is None:  # the first command: the drives were already applying it
            self._cmd = cmd
            self._applied[:] = np.clip(tau, -self.limit, self.limit)
            for _ in range(self._delay):
                self._queue.append(cmd)
        self._queue.append(cmd)
        arrived = self._queue.popleft() if len(self._queue) > self._delay else None
        start, gap = self.imp.command_dropout_start, self.imp.command_dropout
        if gap > 0.0 and start <= t < start + gap:
            self.dropped += 1
            return
        if arrived is not None:
            self._cmd = arrived

    def torque(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """Torques [N m] applied for one plant step at joint state ``q``, ``qd``."""
        if self._cmd is None:
            raise RuntimeError("Actuation.torque: no command yet")
        tau, drive = self._cmd
        if drive is not None:
            q_set, qd_set, kp, kd = drive
            tau = tau + kp * (q_set - q) + kd * (qd_set - qd)
        self._applied += self._alpha * (tau - self._applied)
        return np.clip(self._applied, -self.limit, self.limit)


def scale_plant_masses(model, robot_bodies: list[int], error: float,
                       rng: np.random.Generator) -> np.ndarray:
    """Scale each of the MuJoCo ``model``'s bodies ``robot_bodies`` mass and inertia by
    U[1 - error, 1 + error] in place; returns the factors."""
    f = rng.uniform(1.0 - error, 1.0 + error, len(robot_bodies))
    for b, s in zip(robot_bodies, f, strict=True):
        model.body_mass[b] *= s
        model.body_inertia[b] *= s
    return f
