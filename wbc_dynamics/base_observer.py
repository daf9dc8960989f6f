"""The floating base's pose fused with its twist before the controller uses it.

An odometry source (``base_state: odom``) reports the pose and the twist of the base. When
the pose carries white noise from sample to sample, the contact-aware inverse dynamics passes
it to the torques: the base orientation rotates gravity and the stance points' rows, and the
contact state filter's one-step projection of the stance points onto the ground
(:mod:`wbc_dynamics.contact.stance`) is exact only to first order -- its residual, about
``l theta^2 / 2`` for an orientation error ``theta`` seen through a leg of length ``l``,
changes from tick to tick with the noise (docs/real_robots.md, 'Base-pose noise'). A real
estimator's orientation output is smooth because it integrates the gyro; this observer does
the same with the odometry's own twist.

The twist is a far better measurement of how the pose changes than the difference of two
noisy poses, so each pose coordinate is the steady-state Kalman filter of a random walk
driven by its measured rate (the passive complementary filter of Mahony et al., "Nonlinear
Complementary Filters on the Special Orthogonal Group", IEEE TAC 2008, Sec. III, with the gain
of the Kalman filter of that model)::

    predict   p- = p + dt R v,             R- = R Exp(dt w)
    correct   p  = p- + k_p (p_m - p-),     R  = R- Exp(k_r Log(R-^T R_m))

``v``, ``w`` the measured linear and angular velocity in the base frame (the mean of the
previous sample's and this one's), ``p_m``, ``R_m`` the measured pose. For a rate of noise
``sigma_u`` and a measurement of noise ``sigma_z`` per sample the gain is ``k = P- / (P- +
sigma_z^2)``, ``P- = (Q + sqrt(Q^2 + 4 Q sigma_z^2)) / 2``, ``Q = (sigma_u dt)^2``
(:func:`random_walk_gain`): 0.5 deg / 0.02 rad/s at 1 kHz gives a
time constant ``dt / k`` of 0.44 s and a filtered orientation good to 0.024 deg; 5 mm /
0.05 m/s gives 0.1 s and 0.5 mm. The gain runs the scalar Riccati recursion from the first
sample's variance, so the first samples are averaged (the gain starts at 1/2, 1/3, ...) and a
start on one noisy sample does not take a time constant to forget. A pose that jumps by more
than ``gate`` predicted standard deviations of the innovation (a relocalization, a reset of the
source) is taken as measured (counted in ``resets``).

One compiled call per tick (:func:`base_observer_update`) on named buffers
(:class:`BaseObserverData`); no allocation; :func:`attitude_update` is its orientation half.
:meth:`BaseObserver.bind` binds the call's entry point for the controller's fixed state buffers
(numba's dispatcher types every argument on every call).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .kernels.linalg import bound_entry, require_vectors
from .kernels.spatial import quaternion_product_into, rotvec_quaternion
from .validation import require_positive

__all__ = ["BaseObserver", "BaseObserverData", "attitude_update", "base_observer_update",
           "random_walk_gain"]


def random_walk_gain(dt: float, sigma_rate: float, sigma_measurement: float
                     ) -> tuple[float, float, float]:
    """The steady state of the Kalman filter of ``x+ = x + dt u`` (``u`` measured with white
    noise of std ``sigma_rate`` [unit/s]) measured as ``z = x`` (white noise
    ``sigma_measurement`` [unit]) every ``dt`` [s]: its gain (the weight of the measurement per
    sample), the innovation's standard deviation and the estimate's standard deviation [unit]."""
    q, r = _random_walk_noise(dt, sigma_rate, sigma_measurement)
    p_prior = 0.5 * (q + math.sqrt(q * q + 4.0 * q * r))
    gain = p_prior / (p_prior + r)
    return gain, math.sqrt(p_prior + r), math.sqrt((1.0 - gain) * p_prior)


def _random_walk_noise(dt: float, sigma_rate: float, sigma_measurement: float
                       ) -> tuple[float, float]:
    """(process, measurement) variances per sample of :func:`random_walk_gain`'s model;
    ValueError naming an argument that is not finite and > 0."""
    for name, x in (("dt", dt), ("sigma_rate", sigma_rate),
                    ("sigma_measurement", sigma_measurement)):
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0.0):
            raise ValueError(f"base observer {name}: must be finite and > 0, got {x!r}")
    return (sigma_rate * dt) ** 2, sigma_measurement**2


@njit(cache=True)
def _kalman_gain(var, q, r):
    """One step of the scalar random walk's Riccati recursion on ``var`` (1,) (the estimate's
    variance, in place): the gain of this sample and the innovation's variance."""
    prior = var[0] + q
    gain = prior / (prior + r)
    var[0] = (1.0 - gain) * prior
    return gain, prior + r


@njit(cache=True)
def attitude_update(quat, wx, wy, wz, measured, gain, dt, gate):
    """``quat`` (4,) xyzw world-from-base, in place: propagated with the body-frame rate ``w``
    [rad/s] over ``dt`` [s], then moved the fraction ``gain`` of the way to the measured
    orientation ``measured`` (4,) xyzw (on the group: ``R- Exp(gain Log(R-^T R_m))``). An
    innovation angle above ``gate`` [rad] takes the measurement as it is. Returns the
    innovation angle [rad]."""
    bx, by, bz, bw = rotvec_quaternion(wx * dt, wy * dt, wz * dt)
    quaternion_product_into(quat[0], quat[1], quat[2], quat[3], bx, by, bz, bw, quat, 0)
    # the innovation R-^T R_m as a quaternion (conjugate of quat times measured), w >= 0
    px, py, pz, pw = -quat[0], -quat[1], -quat[2], quat[3]
    mx, my, mz, mw = measured[0], measured[1], measured[2], measured[3]
    ex = pw * mx + px * mw + py * mz - pz * my
    ey = pw * my - px * mz + py * mw + pz * mx
    ez = pw * mz + px * my - py * mx + pz * mw
    ew = pw * mw - px * mx - py * my - pz * mz
    if ew < 0.0:
        ex, ey, ez, ew = -ex, -ey, -ez, -ew
    sn = math.sqrt(ex * ex + ey * ey + ez * ez)
    angle = 2.0 * math.atan2(sn, ew)
    if not angle <= gate:  # (NaN too) a jump: the measurement as it is
        n = math.sqrt(mx * mx + my * my + mz * mz + mw * mw)
        quat[0], quat[1], quat[2], quat[3] = mx / n, my / n, mz / n, mw / n
        return angle
    scale = gain * angle / sn if sn > 1e-12 else 2.0 * gain
    bx, by, bz, bw = rotvec_quaternion(ex * scale, ey * scale, ez * scale)
    quaternion_product_into(quat[0], quat[1], quat[2], quat[3], bx, by, bz, bw, quat, 0)
    return angle


class BaseObserverData(NamedTuple):
    """The observer's configuration, state and counters.

    Configuration: ``position_q``, ``orientation_q`` the process variances per sample (the
    measured rate's noise integrated over a period, [m^2], [rad^2]), ``position_r``,
    ``orientation_r`` the measurement variances [m^2], [rad^2] (per axis); ``gate`` [innovation
    standard deviations] beyond which a sample is taken as it is (against the norm of a
    three-axis innovation). State: ``position`` (3,) world [m], ``quat`` (4,) xyzw
    world-from-base the estimate; ``twist`` (6,) the previous sample's twist (base frame: the
    prediction integrates the mean of two samples' rates); ``position_var``,
    ``orientation_var`` (1,) its variance per axis (the Kalman recursion from the first
    sample's, so the first samples are averaged and the gain settles to
    :func:`random_walk_gain`'s); ``started`` (1,) bool: the first
    measurement has been taken. Counters (1,) int64: ``resets`` samples taken unfiltered (a
    jump beyond the gate).
    """

    position_q: float
    orientation_q: float
    position_r: float
    orientation_r: float
    gate: float
    position: np.ndarray
    quat: np.ndarray
    twist: np.ndarray
    position_var: np.ndarray
    orientation_var: np.ndarray
    started: np.ndarray
    resets: np.ndarray


@njit(cache=True)
def base_observer_update(d, q7, v6, dt):
    """One tick of the observer on :class:`BaseObserverData` ``d``: predict with the measured
    twist ``v6`` (6,) (linear [m/s], angular [rad/s], base frame) over ``dt`` [s], correct with
    the measured pose ``q7`` (7,) (position world [m], quaternion xyzw), then write the
    estimate into ``q7``. The first call takes the measurement as it is."""
    if not d.started[0]:
        for a in range(3):
            d.position[a] = q7[a]
        for a in range(4):
            d.quat[a] = q7[3 + a]
        for a in range(6):
            d.twist[a] = v6[a]
        d.position_var[0] = d.position_r
        d.orientation_var[0] = d.orientation_r
        d.started[0] = True
        return
    # the motion since the previous sample: the mean of its rates and this one's (trapezoidal;
    # either rate alone biases the estimate by about the acceleration times dt times the time
    # constant / 2, 2 mrad for a trot's 10 rad/s^2 of base angular acceleration)
    h = 0.5 * dt
    vx, vy, vz = h * (v6[0] + d.twist[0]), h * (v6[1] + d.twist[1]), h * (v6[2] + d.twist[2])
    wx, wy, wz = (0.5 * (v6[3] + d.twist[3]), 0.5 * (v6[4] + d.twist[4]),
                  0.5 * (v6[5] + d.twist[5]))
    for a in range(6):
        d.twist[a] = v6[a]
    # position: the linear velocity to the world with the orientation before this tick's step
    x, y, z, w = d.quat[0], d.quat[1], d.quat[2], d.quat[3]
    d.position[0] += ((1.0 - 2.0 * (y * y + z * z)) * vx + 2.0 * (x * y - z * w) * vy
                      + 2.0 * (x * z + y * w) * vz)
    d.position[1] += (2.0 * (x * y + z * w) * vx + (1.0 - 2.0 * (x * x + z * z)) * vy
                      + 2.0 * (y * z - x * w) * vz)
    d.position[2] += (2.0 * (x * z - y * w) * vx + 2.0 * (y * z + x * w) * vy
                      + (1.0 - 2.0 * (x * x + y * y)) * vz)
    k, s2 = _kalman_gain(d.position_var, d.position_q, d.position_r)
    e0, e1, e2 = q7[0] - d.position[0], q7[1] - d.position[1], q7[2] - d.position[2]
    if not e0 * e0 + e1 * e1 + e2 * e2 <= 3.0 * d.gate * d.gate * s2:  # (NaN too) a jump
        d.position[0], d.position[1], d.position[2] = q7[0], q7[1], q7[2]
        d.position_var[0] = d.position_r
        d.resets[0] += 1
    else:
        d.position[0] += k * e0
        d.position[1] += k * e1
        d.position[2] += k * e2
    k, s2 = _kalman_gain(d.orientation_var, d.orientation_q, d.orientation_r)
    gate = min(d.gate * math.sqrt(3.0 * s2), math.pi)
    if not attitude_update(d.quat, wx, wy, wz, q7[3:7], k, dt, gate) <= gate:
        d.orientation_var[0] = d.orientation_r
        d.resets[0] += 1
    for a in range(3):
        q7[a] = d.position[a]
    for a in range(4):
        q7[3 + a] = d.quat[a]


class BaseObserver:
    """The base-pose filter of the module docstring.

    Args:
        dt: control period [s] (the gains are those of one sample per period).
        sigma_position: [m] white noise of the measured position, per world axis and sample.
        sigma_orientation: [rad] of the measured orientation, per axis and sample.
        sigma_linear_velocity: [m/s] of the measured linear velocity, per axis.
        sigma_angular_velocity: [rad/s] of the measured angular velocity, per axis.
        gate: [innovation standard deviations] beyond which a sample is taken as it is (the
            position's and the orientation's innovation norms, against three axes' spread).
    Raises:
        ValueError: a non-positive or non-finite argument, named.
    """

    def __init__(self, dt: float, sigma_position: float, sigma_orientation: float,
                 sigma_linear_velocity: float, sigma_angular_velocity: float,
                 gate: float = 6.0) -> None:
        require_positive((("dt", dt), ("sigma_position", sigma_position),
                          ("sigma_orientation", sigma_orientation),
                          ("sigma_linear_velocity", sigma_linear_velocity),
                          ("sigma_angular_velocity", sigma_angular_velocity), ("gate", gate)),
                         "base observer {}")
        qp, rp = _random_walk_noise(dt, sigma_linear_velocity, sigma_position)
        qr, rr = _random_walk_noise(dt, sigma_angular_velocity, sigma_orientation)
        #: [m], [rad] the steady-state standard deviations of the estimate per axis
        self.position_std = random_walk_gain(dt, sigma_linear_velocity, sigma_position)[2]
        self.orientation_std = random_walk_gain(dt, sigma_angular_velocity,
                                                sigma_orientation)[2]
        self.dt = float(dt)
        self.data = BaseObserverData(
            position_q=qp, orientation_q=qr, position_r=rp, orientation_r=rr, gate=float(gate),
            position=np.zeros(3), quat=np.array([0.0, 0.0, 0.0, 1.0]), twist=np.zeros(6),
            position_var=np.zeros(1), orientation_var=np.zeros(1),
            started=np.zeros(1, dtype=np.bool_), resets=np.zeros(1, dtype=np.int64))
        #: the entry point bound by :meth:`bind` and the buffers it was bound for
        self._entry: object = None
        self._bound: tuple = (None, None)

    def update(self, q7: np.ndarray, v6: np.ndarray, dt: float | None = None) -> None:
        """One tick (:func:`base_observer_update`) over ``dt`` [s] since the previous
        measurement (default: the control period): ``q7`` (7,) the measured pose, replaced by
        the estimate in place; ``v6`` (6,) the measured twist (base frame). On the buffers given
        to :meth:`bind` the bound entry point runs, on any other arrays numba's dispatcher."""
        bound = self._bound
        call = (self._entry if q7 is bound[0] and v6 is bound[1] else base_observer_update)
        call(self.data, q7, v6, self.dt if dt is None else float(dt))

    def bind(self, q7: np.ndarray, v6: np.ndarray) -> None:
        """Bind the kernel's entry point for the (7,) pose and (6,) twist C-contiguous float64
        buffers that :meth:`update` will be given every tick (the controller's views of its base
        state): the dispatcher's typing of the arguments is then skipped. Compiles or loads the
        kernel now, without running it.

        Raises:
            ValueError: a buffer of another type, shape or layout, named.
        """
        require_vectors("BaseObserver.bind", (("q7", q7, 7), ("v6", v6, 6)))
        self._entry = bound_entry(base_observer_update, (self.data, q7, v6, self.dt))
        self._bound = (q7, v6)

    def reset(self) -> None:
        """Forget the estimate: the next update takes its measurement as it is."""
        self.data.started[0] = False

    @property
    def resets(self) -> int:
        """Samples taken as measured because they jumped beyond a gate."""
        return int(self.data.resets[0])
