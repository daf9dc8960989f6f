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


def test_the_predictor_integrates_the_commanded_accelerations_in_order():
    """The ring of L + 1 commanded accelerations: ``delayed`` is the one L ticks before the
    newest (the observer's input), and the prediction integrates the L newest, oldest first,
    exactly as a step-by-step double integration (zero-order hold per tick)."""
    from wbc_dynamics.joint_observer import JointStatePredictor

    n, ticks = 3, 4
    pred = JointStatePredictor(n, ticks, DT)
    rng = np.random.default_rng(5)
    history = [rng.standard_normal(n) for _ in range(9)]
    for k, a in enumerate(history):
        pred.push(a)
        np.testing.assert_array_equal(pred.delayed, history[k - ticks] if k >= ticks
                                      else np.zeros(n))
    q0, v0 = rng.standard_normal(n), rng.standard_normal(n)
    q, v = q0.copy(), v0.copy()
    pred.predict(q, v)
    qe, ve = q0.copy(), v0.copy()
    for a in history[-ticks:]:
        qe, ve = qe + DT * ve + 0.5 * DT * DT * a, ve + DT * a
    np.testing.assert_allclose(q, qe, rtol=0, atol=1e-15)
    np.testing.assert_allclose(v, ve, rtol=0, atol=1e-15)
    # a constant acceleration: the exact parabola over L periods
    const = JointStatePredictor(1, ticks, DT)
    for _ in range(ticks + 2):
        const.push(np.array([2.0]))
    q, v = np.array([0.1]), np.array([-0.3])
    const.predict(q, v)
    T = ticks * DT
    assert q[0] == pytest.approx(0.1 - 0.3 * T + T * T, abs=1e-15)
    assert v[0] == pytest.approx(-0.3 + 2.0 * T, abs=1e-15)
    const.reset()
    assert not const.data.accelerations.any() and not const.delayed.any()
    with pytest.raises(ValueError, match="ticks"):
        JointStatePredictor(n, 0, DT)


def test_the_bound_predictor_matches_the_dispatcher_call(monkeypatch):
    """``push`` / ``predict`` on the buffers given to ``bind`` call the bound entry points:
    bitwise the dispatcher's results, and no dispatcher call."""
    import wbc_dynamics.joint_observer as observer_module
    from wbc_dynamics.joint_observer import JointStatePredictor

    n = 5
    bound, free = JointStatePredictor(n, 2, DT), JointStatePredictor(n, 2, DT)
    a, q, v = np.zeros(n), np.zeros(n), np.zeros(n)
    bound.bind(a, q, v)
    pushed = dispatcher_calls(monkeypatch, observer_module, "push_commanded_acceleration")
    predicted = dispatcher_calls(monkeypatch, observer_module, "predict_joint_state")
    rng = np.random.default_rng(8)
    for _ in range(20):
        a[:] = rng.standard_normal(n)
        q[:], v[:] = rng.standard_normal(n), rng.standard_normal(n)
        q2, v2 = q.copy(), v.copy()
        bound.push(a)
        bound.predict(q, v)
        assert not pushed and not predicted
        free.push(a.copy())
        free.predict(q2, v2)
        assert len(pushed) == len(predicted) == 1
        pushed.clear()
        predicted.clear()
        np.testing.assert_array_equal(q, q2)
        np.testing.assert_array_equal(v, v2)
    with pytest.raises(ValueError, match="q must be"):
        bound.bind(a, np.zeros(n + 1), v)


def _arm_with_delay(compensate: bool, delay: int, ticks: int = 1500,
                    feed_forward_lag: int = 0) -> float:
    """The bundled arm following a 2 Hz sinusoid through a plant that integrates the
    commanded accelerations exactly (the model holds) with the state ``delay`` ticks old and
    the command ``delay`` ticks late (the reference's accelerations ``feed_forward_lag`` ticks
    old): the mean |q - q_ref| [rad] over the last second."""
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.robots import robot_path

    ctl = WholeBodyController({"urdf_path": robot_path("arm"), "floating_base": False,
                               "kp": [400.0], "kd": [40.0],
                               "state_latency": delay * DT if compensate else 0.0,
                               "command_latency": delay * DT if compensate else 0.0})
    n = ctl.n
    w, amp = 2.0 * np.pi * 2.0, 0.1
    q, v = np.zeros(n), np.zeros(n)
    states, commands, errors = [], [np.zeros(n)] * delay, []
    for k in range(ticks):
        t = k * DT
        states.append((q.copy(), v.copy()))
        qm, vm = states[max(0, k - delay)]
        ctl.set_joint_state(qm, vm, t)
        t_ff = t - feed_forward_lag * DT
        ctl.set_reference(-amp * w * w * np.sin(w * t_ff) * np.ones(n), t,
                          position=amp * np.sin(w * t) * np.ones(n),
                          velocity=amp * w * np.cos(w * t) * np.ones(n))
        commands.append(ctl.update(t).qdd_cmd.copy())
        a = commands[-1 - delay]
        q, v = q + DT * v + 0.5 * DT * DT * a, v + DT * a
        if k >= ticks - 1000:
            errors.append(np.mean(np.abs(q - amp * np.sin(w * (t + DT)))))
    return float(np.mean(errors))


def test_latency_compensation_tracks_as_without_latency():
    """1 ms of state age and 1 ms of command delay: the PD on the delayed state tracks several
    times worse than without delay; carried forward by the 2 ms of commanded accelerations
    (exact here: the model holds) and the reference's position and velocity taken 1 ms ahead,
    the error falls by more than 3x. What is left is the reference accelerations' own 1 ms lag
    in the feed-forward (the controller takes them as given): a loop without delay whose
    feed-forward is 1 ms late tracks the same to 3 %."""
    none = _arm_with_delay(False, 0)
    delayed = _arm_with_delay(False, 1)
    compensated = _arm_with_delay(True, 1)
    assert delayed > 3.0 * none, (none, delayed)
    assert compensated < delayed / 3.0, (delayed, compensated)
    late_feed_forward = _arm_with_delay(False, 0, feed_forward_lag=1)
    assert compensated == pytest.approx(late_feed_forward, rel=0.03)


def test_the_integral_term_removes_a_static_error_and_is_held_and_cleared():
    """The arm holding a pose with a constant torque shortfall (its gravity model off): the PD
    leaves a static error, the integral term takes it out; the integral's acceleration is held
    at integral_limit; a stale reference clears it."""
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.robots import robot_path

    def hold(ki: float, limit: float = 10.0, bias: float = 2.0, ticks: int = 4000):
        ctl = WholeBodyController({"urdf_path": robot_path("arm"), "floating_base": False,
                                   "kp": [400.0], "kd": [40.0], "ki": [ki],
                                   "integral_limit": [limit], "reference_timeout": 0.5})
        n = ctl.n
        q, v, q0 = np.zeros(n), np.zeros(n), np.full(n, 0.2)
        for k in range(ticks):
            t = k * DT
            ctl.set_joint_state(q, v, t)
            ctl.set_reference(np.zeros(n), t, position=q0, velocity=np.zeros(n))
            a = ctl.update(t).qdd_cmd - bias  # the plant realizes bias rad/s^2 less
            q, v = q + DT * v + 0.5 * DT * DT * a, v + DT * a
        return ctl, np.abs(q - q0).max()

    _, pd_error = hold(0.0)
    ctl, pid_error = hold(1000.0)
    assert pd_error == pytest.approx(2.0 / 400.0, rel=1e-3)  # bias / kp
    assert pid_error < 1e-6 * pd_error / 5e-3
    integral = ctl._integral.copy()
    np.testing.assert_allclose(1000.0 * integral, 2.0, rtol=1e-4)
    held, held_error = hold(1000.0, limit=1.0)  # the integral cannot reach the bias
    np.testing.assert_allclose(1000.0 * held._integral, 1.0, rtol=1e-12)
    assert held_error == pytest.approx(1.0 / 400.0, rel=1e-3)
    t = 4000 * DT + 1.0  # no reference for 1 s: the damping safe command, the integral gone
    ctl.set_joint_state(np.zeros(ctl.n), np.zeros(ctl.n), t)
    assert ctl.update(t).mode != "control"
    assert not ctl._integral.any()
