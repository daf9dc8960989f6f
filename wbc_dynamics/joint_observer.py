"""Joint positions and velocities filtered with the controller's own prediction.

The torque a whole-body controller commands carries its input noise through its gains: with
joint PD gains ``kp`` [1/s^2] and ``kd`` [1/s] in acceleration units, encoder noise of
``sigma_q`` [rad] and ``sigma_v`` [rad/s] reaches the commanded acceleration as about
``kp sigma_q + kd sigma_v`` per tick (400 x 1 mrad + 40 x 0.02 rad/s = 1.2 rad/s^2), and the
torque as that times the joint-space inertia, a new draw every tick. A low-pass on the torque
cuts it at the cost of lag in the whole loop. The controller, however, knows what the joints
should do next: its inverse dynamics predicts the next tick's velocity ``v+`` (the contact
problem's, Zapolsky & Drumwright, "Inverse Dynamics with Rigid Contact and Friction", eq. 37),
i.e. the acceleration it is about to produce. That prediction is the process model of a Kalman
filter per joint (state position and velocity, input the predicted acceleration ``a``):

    x- = F x + G a,   F = [[1, dt], [0, 1]],   G = [dt^2 / 2, dt]
    P- = F P F^T + G G^T sigma_a^2
    x  = x- + K (z - x-),   z = (q_measured, v_measured),   R = diag(sigma_q^2, sigma_v^2)

``sigma_a`` [rad/s^2] is how far the realized acceleration strays from the predicted one (model
error, torque lag and limits, unmodelled contact). The noise is the same for every joint, so
the gain ``K`` (2 x 2) is the steady state of the Riccati recursion, computed once.
Where the prediction is plainly wrong -- an impact, a collision the model does not know -- the
innovation exceeds ``gate`` standard deviations of its predicted spread and that joint takes the
measurement as it is (counted in ``resets``), so the filter never holds on to a state the robot
has left.

One compiled call per tick (:func:`joint_observer_update`) on named buffers
(:class:`JointObserverData`); no allocation.

**Latency.** A real robot's joint state is older than the tick that uses it (bus and driver
delay) and the command reaches the drives later still: with ``L`` ticks between the moment the
encoders were read and the moment the new torque starts to act, the PD feedback compares the
reference with where the joints were, not where they will be, and on a 3 Hz arm motion 1 ms
each way quadruples the tracking error. The controller knows what happened meanwhile: it
commanded the accelerations of the last ``L`` ticks, which have not yet shown in the
measurement. :class:`JointStatePredictor` keeps them (a ring of ``L + 1`` rows) and carries the
measured (or filtered) state forward through them,

    q <- q + dt v + dt^2 / 2 a_i,   v <- v + dt a_i,   i = k - L, ..., k - 1

(a Smith predictor with the controller's own model of the joints as the plant: the commanded
acceleration is the one the inverse dynamics realizes when the model holds). The joint-state
observer then predicts with the acceleration that acted over the measurement's own period, the
ring's oldest row, instead of the last tick's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .kernels.linalg import bound_entry, require_vectors
from .validation import require_positive

__all__ = ["JointObserver", "JointObserverData", "JointPredictionData", "JointStatePredictor",
           "joint_observer_update", "predict_joint_state", "push_commanded_acceleration",
           "steady_state_gain"]


class JointObserverData(NamedTuple):
    """The observer's configuration, state and counters.

    Configuration: ``gain`` (2, 2) the steady-state Kalman gain (rows: position, velocity;
    columns: position and velocity innovations); ``spread`` (2,) the innovation's predicted
    standard deviations [rad, rad/s] (position, velocity); ``gate`` [standard deviations].
    State: ``position`` (n,) [rad or m], ``velocity`` (n,) [rad/s or m/s] the estimate;
    ``started`` (1,) bool: the first measurement has been taken as it is.
    Counters (1,) int64: ``resets`` joint samples taken unfiltered because the innovation left
    the gate.
    """

    gain: np.ndarray
    spread: np.ndarray
    gate: float
    position: np.ndarray
    velocity: np.ndarray
    started: np.ndarray
    resets: np.ndarray


def steady_state_gain(dt: float, sigma_q: float, sigma_v: float,
                      sigma_a: float) -> tuple[np.ndarray, np.ndarray]:
    """The steady-state Kalman gain (2, 2) of the position-velocity model (module docstring) and
    the innovation's standard deviations (2,) for a control period ``dt`` [s], measurement noise
    ``sigma_q`` [rad], ``sigma_v`` [rad/s] and process noise ``sigma_a`` [rad/s^2]."""
    F = np.array([[1.0, dt], [0.0, 1.0]])
    G = np.array([0.5 * dt * dt, dt])
    Q = np.outer(G, G) * sigma_a**2
    R = np.diag([sigma_q**2, sigma_v**2])
    P = R.copy()
    for _ in range(100000):
        Pm = F @ P @ F.T + Q
        S = Pm + R
        K = Pm @ np.linalg.inv(S)
        P_new = (np.eye(2) - K) @ Pm
        P_new = 0.5 * (P_new + P_new.T)
        if np.max(np.abs(P_new - P)) <= 1e-14 * np.max(np.abs(P)):
            P = P_new
            break
        P = P_new
    Pm = F @ P @ F.T + Q
    S = Pm + R
    return Pm @ np.linalg.inv(S), np.sqrt(np.diag(S))


@njit(cache=True)
def joint_observer_update(d, q_meas, v_meas, a_pred, dt):
    """One tick of the observer on :class:`JointObserverData` ``d``: predict with the
    accelerations ``a_pred`` (n,) [rad/s^2] the controller expected since the last tick over
    ``dt`` [s], correct with the measurement ``q_meas``, ``v_meas`` (n,); the estimate is left in
    ``d.position`` / ``d.velocity``. The first call takes the measurement as it is."""
    n = q_meas.shape[0]
    if not d.started[0]:
        for j in range(n):
            d.position[j] = q_meas[j]
            d.velocity[j] = v_meas[j]
        d.started[0] = True
        return
    K = d.gain
    gq = d.gate * d.spread[0]
    gv = d.gate * d.spread[1]
    h = 0.5 * dt * dt
    for j in range(n):
        qp = d.position[j] + dt * d.velocity[j] + h * a_pred[j]
        vp = d.velocity[j] + dt * a_pred[j]
        eq = q_meas[j] - qp
        ev = v_meas[j] - vp
        if not (abs(eq) <= gq and abs(ev) <= gv):  # (NaN too) the prediction is off: measure
            d.position[j] = q_meas[j]
            d.velocity[j] = v_meas[j]
            d.resets[0] += 1
            continue
        d.position[j] = qp + K[0, 0] * eq + K[0, 1] * ev
        d.velocity[j] = vp + K[1, 0] * eq + K[1, 1] * ev


class JointObserver:
    """The joint-state filter of the module docstring for ``n`` joints.

    Args:
        n: number of joints.
        dt: control period [s].
        sigma_q: encoder position noise [rad or m] (standard deviation per tick).
        sigma_v: joint velocity noise [rad/s or m/s].
        sigma_a: process noise [rad/s^2]: the spread of the realized acceleration about the
            predicted one.
        gate: innovation gate [standard deviations] beyond which a joint takes the measurement.
    Raises:
        ValueError: a non-positive or non-finite argument, named.
    """

    def __init__(self, n: int, dt: float, sigma_q: float, sigma_v: float, sigma_a: float,
                 gate: float = 6.0) -> None:
        require_positive((("dt", dt), ("sigma_q", sigma_q), ("sigma_v", sigma_v),
                          ("sigma_a", sigma_a), ("gate", gate)), "joint observer {}")
        self.dt = float(dt)
        gain, spread = steady_state_gain(self.dt, sigma_q, sigma_v, sigma_a)
        self.data = JointObserverData(
            gain=gain, spread=spread, gate=float(gate), position=np.zeros(n),
            velocity=np.zeros(n), started=np.zeros(1, dtype=np.bool_),
            resets=np.zeros(1, dtype=np.int64))
        #: the entry point bound by :meth:`bind` and the buffers it was bound for
        self._entry: object = None
        self._bound: tuple = (None, None, None)

    def update(self, q_meas: np.ndarray, v_meas: np.ndarray, a_pred: np.ndarray,
               dt: float | None = None) -> None:
        """One tick (:func:`joint_observer_update`) over ``dt`` [s] since the previous
        measurement (default: the control period)."""
        bound = self._bound
        call = (self._entry if q_meas is bound[0] and v_meas is bound[1] and a_pred is bound[2]
                else joint_observer_update)
        call(self.data, q_meas, v_meas, a_pred, self.dt if dt is None else float(dt))

    def bind(self, q_meas: np.ndarray, v_meas: np.ndarray, a_pred: np.ndarray) -> None:
        """Bind the kernel's entry point for the (n,) C-contiguous float64 buffers that
        :meth:`update` will be given every tick (the controller's): the dispatcher's typing of
        the arguments is then skipped. Compiles or loads the kernel now, without running it."""
        n = self.data.position.shape[0]
        require_vectors("JointObserver.bind", (("q_meas", q_meas, n), ("v_meas", v_meas, n),
                                               ("a_pred", a_pred, n)))
        self._entry = bound_entry(joint_observer_update,
                                  (self.data, q_meas, v_meas, a_pred, self.dt))
        self._bound = (q_meas, v_meas, a_pred)

    def reset(self) -> None:
        """Forget the estimate: the next update takes its measurement as it is."""
        self.data.started[0] = False

    @property
    def position(self) -> np.ndarray:
        """(n,) the filtered joint positions [rad or m] (a view)."""
        return self.data.position

    @property
    def velocity(self) -> np.ndarray:
        """(n,) the filtered joint velocities [rad/s or m/s] (a view)."""
        return self.data.velocity


class JointPredictionData(NamedTuple):
    """The latency compensation's history (module docstring, "Latency").

    ``accelerations`` (L + 1, n) [rad/s^2 or m/s^2]: the commanded accelerations of the last
    L + 1 ticks, a ring whose newest row is ``newest`` (1,) int64; ``delayed`` (n,): its oldest
    row, the acceleration that acted over the newest measurement's last control period (the
    joint-state observer's prediction input).
    """

    accelerations: np.ndarray
    newest: np.ndarray
    delayed: np.ndarray


@njit(cache=True)
def push_commanded_acceleration(d, qdd_cmd):
    """Record the accelerations ``qdd_cmd`` (n,) commanded on the tick that just ended in the
    ring of :class:`JointPredictionData` ``d`` (dropping the oldest) and copy the new oldest
    row into ``d.delayed``."""
    rows = d.accelerations.shape[0]
    k = (d.newest[0] + 1) % rows
    for j in range(qdd_cmd.shape[0]):
        d.accelerations[k, j] = qdd_cmd[j]
    d.newest[0] = k
    oldest = (k + 1) % rows
    for j in range(qdd_cmd.shape[0]):
        d.delayed[j] = d.accelerations[oldest, j]


@njit(cache=True)
def predict_joint_state(d, q, v, dt):
    """Carry the joint state ``q``, ``v`` (n,) forward in place through the ring's L newest
    accelerations, oldest first, one control period ``dt`` [s] each (module docstring)."""
    rows = d.accelerations.shape[0]
    h = 0.5 * dt * dt
    for i in range(1, rows):
        r = (d.newest[0] + 1 + i) % rows
        for j in range(q.shape[0]):
            a = d.accelerations[r, j]
            q[j] += dt * v[j] + h * a
            v[j] += dt * a


class JointStatePredictor:
    """The latency compensation of the module docstring for ``n`` joints.

    Args:
        n: number of joints.
        ticks: L, the control periods between the encoders' reading and the moment the
            tick's command starts to act (state latency plus command latency), >= 1.
        dt: control period [s].
    Raises:
        ValueError: ``ticks`` < 1 or a non-positive ``dt``.
    """

    def __init__(self, n: int, ticks: int, dt: float) -> None:
        if int(ticks) < 1:
            raise ValueError(f"joint state predictor ticks: expected >= 1, got {ticks!r}")
        require_positive((("dt", dt),), "joint state predictor {}")
        self.dt = float(dt)
        self.ticks = int(ticks)
        self.data = JointPredictionData(
            accelerations=np.zeros((self.ticks + 1, n)), newest=np.zeros(1, dtype=np.int64),
            delayed=np.zeros(n))
        #: the entry points bound by :meth:`bind` and the buffers they were bound for
        self._entries: tuple = (None, None)
        self._bound: tuple = (None, None, None)

    def push(self, qdd_cmd: np.ndarray) -> None:
        """Record the accelerations [rad/s^2] commanded on the tick that just ended."""
        call = (self._entries[0] if qdd_cmd is self._bound[0]
                else push_commanded_acceleration)
        call(self.data, qdd_cmd)

    def predict(self, q: np.ndarray, v: np.ndarray) -> None:
        """Carry the joint state (n,) [rad, rad/s] forward in place by ``ticks`` periods."""
        bound = self._bound
        call = (self._entries[1] if q is bound[1] and v is bound[2]
                else predict_joint_state)
        call(self.data, q, v, self.dt)

    def bind(self, qdd_cmd: np.ndarray, q: np.ndarray, v: np.ndarray) -> None:
        """Bind the kernels' entry points for the (n,) C-contiguous float64 buffers that
        :meth:`push` and :meth:`predict` will be given every tick (the controller's): the
        dispatcher's typing of the arguments is then skipped (the buffers must stay the
        same). Compiles or loads the kernels now, without running them."""
        n = self.data.delayed.shape[0]
        require_vectors("JointStatePredictor.bind", (("qdd_cmd", qdd_cmd, n), ("q", q, n),
                                                     ("v", v, n)))
        self._entries = (bound_entry(push_commanded_acceleration, (self.data, qdd_cmd)),
                         bound_entry(predict_joint_state, (self.data, q, v, self.dt)))
        self._bound = (qdd_cmd, q, v)

    def reset(self) -> None:
        """Forget the commanded accelerations (the ring holds zeros)."""
        self.data.accelerations[:] = 0.0
        self.data.delayed[:] = 0.0

    @property
    def delayed(self) -> np.ndarray:
        """(n,) the acceleration [rad/s^2] that acted over the newest measurement's last
        control period (a view; the joint-state observer's input)."""
        return self.data.delayed
