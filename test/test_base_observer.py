"""The base-pose observer: its gain against the scalar Riccati recursion run to the end, its
noise reduction on a moving base under realistic odometry noise, the averaging start, the jump
gate, validation, and the controller wired to it (base orientation noise reaches the torques
weaker)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba_helpers import dispatcher_calls

from wbc_dynamics.base_observer import BaseObserver, attitude_update, random_walk_gain

DT = 1e-3
#: the realistic odometry noise (Imperfections.realistic, 1x): 5 mm, 0.5 deg, 0.05 m/s, 0.02 rad/s
SP, SO, SV, SW = 5e-3, math.radians(0.5), 0.05, 0.02


def _quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _exp(w):
    th = float(np.linalg.norm(w))
    if th < 1e-15:
        return np.array([0.5 * w[0], 0.5 * w[1], 0.5 * w[2], 1.0])
    return np.r_[np.sin(0.5 * th) / th * w, np.cos(0.5 * th)]


def _angle(a, b):
    """The angle [rad] of the rotation between the unit quaternions a and b."""
    return 2.0 * math.acos(min(1.0, abs(float(a @ b))))


def _rot(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@pytest.mark.parametrize(("sigma_rate", "sigma_pose"), [(SW, SO), (SV, SP), (1.0, 1e-3)])
def test_the_gain_is_the_riccati_steady_state(sigma_rate, sigma_pose):
    gain, spread, std = random_walk_gain(DT, sigma_rate, sigma_pose)
    q, r = (sigma_rate * DT) ** 2, sigma_pose**2
    p = r
    for _ in range(200000):  # independent: the recursion from P0 = R, run to the end
        prior = p + q
        k = prior / (prior + r)
        p = (1.0 - k) * prior
    assert gain == pytest.approx(k, rel=1e-9)
    assert std == pytest.approx(math.sqrt(p), rel=1e-9)
    assert spread == pytest.approx(math.sqrt(p + q + r), rel=1e-9)


def test_the_documented_time_constants_and_accuracies():
    k, _, std = random_walk_gain(DT, SW, SO)  # 0.5 deg / 0.02 rad/s at 1 kHz
    assert DT / k == pytest.approx(0.44, abs=0.01)
    assert math.degrees(std) == pytest.approx(0.024, abs=0.001)
    k, _, std = random_walk_gain(DT, SV, SP)  # 5 mm / 0.05 m/s
    assert DT / k == pytest.approx(0.10, abs=0.005)
    assert std == pytest.approx(5e-4, rel=0.05)


def _moving_base(seconds: float, seed: int, obs: BaseObserver):
    """A base translating and turning about a changing axis, its pose and twist measured with
    the realistic noise and fed to ``obs``: per tick after the first second, the errors of the
    estimate and of the measurement (position [m], orientation [rad])."""
    rng = np.random.default_rng(seed)
    quat = np.array([0.0, 0.0, 0.0, 1.0])
    out = []
    for k in range(int(seconds / DT)):
        t = k * DT
        p = np.array([0.2 * np.sin(t), 0.1 * t, 0.5 + 0.02 * np.sin(3.0 * t)])
        v_world = np.array([0.2 * np.cos(t), 0.1, 0.06 * np.cos(3.0 * t)])
        w = np.array([0.3 * np.sin(2.0 * t), 0.2 * np.cos(t), 0.5])  # base frame
        v_base = _rot(quat).T @ v_world
        q7 = np.r_[p + rng.normal(0.0, SP, 3), _quat_mul(quat, _exp(rng.normal(0.0, SO, 3)))]
        q7[3:7] /= np.linalg.norm(q7[3:7])
        v6 = np.r_[v_base + rng.normal(0.0, SV, 3), w + rng.normal(0.0, SW, 3)]
        measured = q7.copy()
        obs.update(q7, v6)
        if t >= 1.0:
            out.append((np.linalg.norm(q7[0:3] - p), _angle(q7[3:7], quat),
                        np.linalg.norm(measured[0:3] - p), _angle(measured[3:7], quat)))
        quat = _quat_mul(quat, _exp(w * DT))  # the pose of the next tick
    return np.sqrt(np.mean(np.square(np.array(out)), axis=0))


def test_a_moving_base_is_estimated_far_better_than_measured():
    obs = BaseObserver(DT, SP, SO, SV, SW)
    est_p, est_r, meas_p, meas_r = _moving_base(4.0, 0, obs)
    assert meas_p == pytest.approx(math.sqrt(3) * SP, rel=0.05)  # the noise as drawn
    assert meas_r == pytest.approx(math.sqrt(3) * SO, rel=0.05)
    # the steady-state predictions (per axis) times sqrt(3), the motion adding no bias: the
    # twist carries it
    assert est_p == pytest.approx(math.sqrt(3) * obs.position_std, rel=0.25)
    assert est_r == pytest.approx(math.sqrt(3) * obs.orientation_std, rel=0.25)
    assert est_p < 0.15 * meas_p and est_r < 0.06 * meas_r
    assert obs.resets == 0


def test_the_start_averages_the_first_samples_and_a_jump_is_taken_as_measured():
    rng = np.random.default_rng(1)
    obs = BaseObserver(DT, SP, SO, SV, SW)
    pose = np.array([0.1, -0.2, 0.4, 0.0, 0.0, math.sin(0.2), math.cos(0.2)])
    errors = []
    for _ in range(100):  # at rest: the mean of the samples so far, not the first sample
        q7 = pose.copy()
        q7[0:3] += rng.normal(0.0, SP, 3)
        obs.update(q7, np.zeros(6))
        errors.append(np.linalg.norm(q7[0:3] - pose[0:3]))
    assert errors[-1] < 3.0 * math.sqrt(3.0) * SP / 10.0
    q7 = pose.copy()
    q7[0] += 1.0  # a relocalization: 1 m
    obs.update(q7, np.zeros(6))
    assert q7[0] == pytest.approx(pose[0] + 1.0, abs=1e-12) and obs.resets == 1
    q7 = pose.copy()
    q7[0] += 1.0  # (where it now is)
    q7[3:7] = _quat_mul(pose[3:7], _exp(np.array([0.0, math.radians(30.0), 0.0])))
    turned = q7[3:7].copy()
    obs.update(q7, np.zeros(6))
    assert _angle(q7[3:7], turned) < 1e-9 and obs.resets == 2
    obs.reset()
    q7 = pose.copy()
    obs.update(q7, np.zeros(6))
    np.testing.assert_allclose(q7, pose, atol=1e-15)  # after a reset: the sample as it is


def test_attitude_update_integrates_the_rate_and_moves_the_fraction_gain_towards_the_measure():
    start = np.array([0.0, 0.0, 0.0, 1.0])
    w = np.array([0.1, -0.2, 0.3])
    measured = _exp(np.array([0.0, 0.0, 0.02]))
    for gain in (0.0, 0.25, 1.0):
        q = start.copy()
        innovation = attitude_update(q, w[0], w[1], w[2], measured, gain, DT, math.pi)
        predicted = _exp(w * DT)
        assert innovation == pytest.approx(_angle(predicted, measured), rel=1e-9)
        assert _angle(q, predicted) == pytest.approx(gain * innovation, rel=1e-6, abs=1e-12)
        assert _angle(q, measured) == pytest.approx((1.0 - gain) * innovation, rel=1e-6,
                                                    abs=1e-12)


@pytest.mark.parametrize("name", ["dt", "sigma_position", "sigma_orientation",
                                  "sigma_linear_velocity", "sigma_angular_velocity", "gate"])
@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_bad_settings_are_refused_by_name(name, bad):
    kw = {"dt": DT, "sigma_position": SP, "sigma_orientation": SO,
          "sigma_linear_velocity": SV, "sigma_angular_velocity": SW, "gate": 6.0}
    kw[name] = bad
    with pytest.raises(ValueError, match=name):
        BaseObserver(**kw)


def test_the_controller_passes_base_orientation_noise_to_the_torques_far_weaker():
    """The bundled quadruped standing on its four feet (lcp_noslip, contact state filter), its
    odometry's orientation noisy (0.5 deg, white): the torque change per tick with the observer
    against without (measured: 6.5e-5 against 2.6e-7 N m)."""
    from contact_helpers import quadruped_on_ground

    from wbc_dynamics.controller import WholeBodyController

    feet = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
    _, _, q0 = quadruped_on_ground(feet)

    def chatter(observer: bool) -> float:
        ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                                   "method": "lcp_noslip", "contact_links": feet,
                                   "contact_state_filter": True, "phi_deadband": 1e-4,
                                   "base_observer": observer})
        rng = np.random.default_rng(2)
        n = ctl.n
        taus = []
        for k in range(300):
            t = k * DT
            quat = _quat_mul(q0[3:7], _exp(rng.normal(0.0, SO, 3)))
            ctl.set_base_state(q0[0:3], quat / np.linalg.norm(quat), np.zeros(3), np.zeros(3), t)
            ctl.set_joint_state(q0[7:], np.zeros(n), t)
            ctl.set_reference(np.zeros(n), t, position=q0[7:], velocity=np.zeros(n))
            out = ctl.update(t)
            assert out.mode == "control" and np.all(np.isfinite(out.tau))
            taus.append(out.tau.copy())
        return float(np.mean(np.abs(np.diff(np.array(taus)[100:], axis=0))))

    plain, filtered = chatter(False), chatter(True)
    assert plain > 2e-5  # N m per tick: the noise does reach the torques without it
    assert filtered < 0.02 * plain


def test_the_controller_refuses_the_observer_on_a_fixed_base():
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.robots import robot_path

    with pytest.raises(ValueError, match="base_observer"):
        WholeBodyController({"urdf_path": robot_path("arm"), "floating_base": False,
                             "base_observer": True})


def test_the_bound_entry_point_filters_as_the_dispatcher_call(monkeypatch):
    """``update`` on the buffers given to ``bind`` calls the kernel's bound entry point, on
    other arrays numba's dispatcher: the same estimates, bitwise, including a gated jump; a
    buffer of another type or shape is refused by name."""
    import wbc_dynamics.base_observer as base_module

    bound = BaseObserver(DT, SP, SO, SV, SW)
    free = BaseObserver(DT, SP, SO, SV, SW)
    state = np.zeros(13)  # a controller's base pose and twist: fixed views of one buffer
    q7, v6 = state[0:7], state[7:13]
    bound.bind(q7, v6)
    dispatched = dispatcher_calls(monkeypatch, base_module, "base_observer_update")
    rng = np.random.default_rng(4)
    for k in range(300):
        t = k * DT
        w = np.array([0.3 * math.cos(3.0 * t), 0.2, -0.1])
        q7[0:3] = [0.2 * t, 0.0, 0.5 + 0.01 * math.sin(5.0 * t)]
        q7[0:3] += rng.normal(0.0, SP, 3)
        q7[3:7] = _quat_mul(_exp(w * t), _exp(rng.normal(0.0, SO, 3)))
        if k == 200:
            q7[1] += 1.0  # a relocalization: gated, taken as measured
        v6[:] = np.r_[0.2, 0.0, 0.0, w] + rng.normal(0.0, SW, 6)
        pose = q7.copy()
        bound.update(q7, v6)
        free.update(pose, v6.copy())
        np.testing.assert_array_equal(q7, pose)
    assert len(dispatched) == 300  # the free observer's calls only
    assert bound.resets == free.resets >= 1
    with pytest.raises(ValueError, match="BaseObserver.bind: v6"):
        bound.bind(q7, np.zeros(6, dtype=np.float32))
    with pytest.raises(ValueError, match="BaseObserver.bind: q7"):
        bound.bind(np.zeros(4), v6)
