"""The joint-state observer: its steady-state gain against the Riccati recursion run to the
end, its noise reduction and bias measured on simulated encoders, the innovation gate, and the
controller wired to it (encoder noise reaches the torques weaker)."""

from __future__ import annotations

import numpy as np
import pytest
from numba_helpers import dispatcher_calls

from wbc_dynamics.joint_observer import JointObserver, steady_state_gain

DT = 1e-3
SIGMA_Q, SIGMA_V = 1e-3, 0.02


def _kalman_gain_after(steps: int, sigma_a: float) -> np.ndarray:
    """The time-varying Kalman gain after ``steps`` updates from P0 = R (independent loop)."""
    F = np.array([[1.0, DT], [0.0, 1.0]])
    G = np.array([[0.5 * DT * DT], [DT]])
    Q = G @ G.T * sigma_a**2
    R = np.diag([SIGMA_Q**2, SIGMA_V**2])
    P = R.copy()
    for _ in range(steps):
        Pm = F @ P @ F.T + Q
        K = np.linalg.solve((Pm + R).T, Pm.T).T
        P = (np.eye(2) - K) @ Pm @ (np.eye(2) - K).T + K @ R @ K.T  # Joseph form
    return K


@pytest.mark.parametrize("sigma_a", [1.0, 10.0, 100.0])
def test_the_gain_is_the_riccati_steady_state(sigma_a):
    K, spread = steady_state_gain(DT, SIGMA_Q, SIGMA_V, sigma_a)
    np.testing.assert_allclose(K, _kalman_gain_after(60000, sigma_a), rtol=1e-6, atol=1e-12)
    assert spread[0] > SIGMA_Q and spread[1] > SIGMA_V  # measurement plus prediction spread
    assert 0.0 < K[1, 1] < 1.0 and 0.0 < K[0, 0] < 1.0


def _track(sigma_a: float, accel_error: float, seconds: float = 20.0, seed: int = 0):
    """Filter noisy encoders of a 1 Hz, 0.3 rad sinusoid with the acceleration predicted
    ``(1 - accel_error)`` times the true one: rms errors of the estimate and of the raw
    measurement, position and velocity."""
    rng = np.random.default_rng(seed)
    n = int(seconds / DT)
    t = np.arange(n) * DT
    w = 2 * np.pi
    q, v, a = 0.3 * np.sin(w * t), 0.3 * w * np.cos(w * t), -0.3 * w * w * np.sin(w * t)
    obs = JointObserver(1, DT, SIGMA_Q, SIGMA_V, sigma_a)
    eq, ev, mq, mv = [], [], [], []
    for k in range(n):
        zq = q[k] + SIGMA_Q * rng.standard_normal()
        zv = v[k] + SIGMA_V * rng.standard_normal()
        obs.update(np.array([zq]), np.array([zv]),
                   np.array([(1.0 - accel_error) * a[k - 1] if k else 0.0]))
        if k >= 500:
            eq.append(obs.position[0] - q[k])
            ev.append(obs.velocity[0] - v[k])
            mq.append(zq - q[k])
            mv.append(zv - v[k])
    rms = [float(np.sqrt(np.mean(np.square(x)))) for x in (eq, ev, mq, mv)]
    return rms, int(obs.data.resets[0])


def test_noise_falls_and_a_wrong_prediction_costs_little():
    (eq, ev, mq, mv), resets = _track(10.0, 0.0)
    assert resets == 0
    assert eq < 0.2 * mq  # the position estimate integrates the velocity
    assert ev < 0.6 * mv
    # the prediction 20 % off (a model error): still well below the raw encoders
    (eq2, ev2, _, _), resets = _track(10.0, 0.2)
    assert resets == 0
    assert eq2 < 0.2 * mq and ev2 < 0.75 * mv


def test_an_impact_the_model_did_not_predict_is_taken_as_measured():
    obs = JointObserver(2, DT, SIGMA_Q, SIGMA_V, 10.0)
    z = np.zeros(2)
    for _ in range(50):
        obs.update(z, z, z)
    # joint 0's velocity jumps by 1 rad/s (50 sigma) in one tick: measured, not smoothed over
    obs.update(z, np.array([1.0, 0.0]), z)
    assert obs.velocity[0] == 1.0 and obs.data.resets[0] == 1
    assert abs(obs.velocity[1]) < 1e-12
    obs.update(z, np.array([np.nan, 0.0]), z)  # a NaN never enters the estimate
    assert obs.data.resets[0] == 2


@pytest.mark.parametrize("name,value", [("sigma_a", 0.0), ("sigma_q", -1.0),
                                        ("dt", float("nan")), ("gate", float("inf"))])
def test_bad_settings_are_named(name, value):
    kw = {"dt": DT, "sigma_q": SIGMA_Q, "sigma_v": SIGMA_V, "sigma_a": 10.0, "gate": 6.0}
    kw[name] = value
    with pytest.raises(ValueError, match=f"joint observer {name}"):
        JointObserver(3, **kw)


def test_the_controller_filters_its_encoders():
    """The arm holding a pose on noisy encoders: the commanded torques' tick-to-tick change
    falls with the observer."""
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.robots import robot_path

    def chatter(sigma_a: float) -> float:
        ctl = WholeBodyController({"urdf_path": robot_path("arm"), "floating_base": False,
                                   "kp": [400.0], "kd": [40.0],
                                   "joint_observer_acceleration_noise": sigma_a})
        n = ctl.n
        rng = np.random.default_rng(4)
        q0 = np.full(n, 0.3)
        taus = []
        for k in range(400):
            t = k * DT
            ctl.set_joint_state(q0 + SIGMA_Q * rng.standard_normal(n),
                                SIGMA_V * rng.standard_normal(n), t)
            ctl.set_reference(np.zeros(n), t, position=q0, velocity=np.zeros(n))
            taus.append(ctl.update(t).tau.copy())
        return float(np.mean(np.abs(np.diff(np.array(taus[100:]), axis=0))))

    raw, filtered = chatter(0.0), chatter(10.0)
    assert filtered < 0.5 * raw, (raw, filtered)


def test_the_bound_entry_point_filters_as_the_dispatcher_call(monkeypatch):
    """``update`` on the buffers given to ``bind`` calls the kernel's bound entry point, on other
    arrays numba's dispatcher: the same estimates, bitwise, including gated samples."""
    import wbc_dynamics.joint_observer as observer_module

    n = 6
    bound = JointObserver(n, DT, SIGMA_Q, SIGMA_V, 10.0)
    free = JointObserver(n, DT, SIGMA_Q, SIGMA_V, 10.0)
    q, v, a = np.zeros(n), np.zeros(n), np.zeros(n)
    bound.bind(q, v, a)
    dispatched = dispatcher_calls(monkeypatch, observer_module, "joint_observer_update")
    rng = np.random.default_rng(2)
    for k in range(200):
        t = k * DT
        q[:] = 0.3 * np.sin(2.0 * np.pi * t) + SIGMA_Q * rng.standard_normal(n)
        v[:] = 0.6 * np.pi * np.cos(2.0 * np.pi * t) + SIGMA_V * rng.standard_normal(n)
        if k == 120:
            q[2] += 0.5  # an impact: gated, taken as measured
        a[:] = -0.3 * (2.0 * np.pi) ** 2 * np.sin(2.0 * np.pi * t)
        bound.update(q, v, a)
        free.update(q.copy(), v.copy(), a.copy())
        np.testing.assert_array_equal(bound.position, free.position)
        np.testing.assert_array_equal(bound.velocity, free.velocity)
    assert len(dispatched) == 200  # the free observer's calls only
    assert bound.data.resets[0] == free.data.resets[0] >= 1
    with pytest.raises(ValueError, match="JointObserver.bind: v_meas"):
        bound.bind(q, np.zeros(n, dtype=np.float32), a)
