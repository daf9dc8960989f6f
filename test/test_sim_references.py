"""References: derivatives are consistent (finite differences) and the plans mean what they say.

Trot (Zapolsky & Drumwright, Sec. 7.6): the feet planned in swing lift by the step height, the
stance feet move backwards at the planned base speed, the swing pattern is the paper's diagonal trot
with duty factor 0.75; weight shift sways the base over fixed feet; arm sinusoid at 3 Hz
(Sec. 7.2.2).
"""

from __future__ import annotations

import numpy as np
import pytest

from wbc_dynamics.robots import robot_info
from wbc_dynamics.sim.references import make_reference


def _check_derivatives(ref, times, h=1e-5, tol=2e-4):
    for t in times:
        q, qd, qdd = ref.sample(t)
        qp, qdp, _ = ref.sample(t + h)
        qm, qdm, _ = ref.sample(t - h)
        scale_v = max(1.0, np.abs(qd).max())
        scale_a = max(1.0, np.abs(qdd).max())
        assert np.abs((qp - qm) / (2 * h) - qd).max() < tol * scale_v, t
        assert np.abs((qdp - qdm) / (2 * h) - qdd).max() < tol * scale_a * 10, t


@pytest.fixture(scope="module")
def model():
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_path

    return RobotModel.from_urdf(robot_path("quadruped"), floating_base=False)


def test_trot_follows_sec_7_6(model):
    info = robot_info("quadruped")
    ref = make_reference("quadruped", "trot")
    assert ref.period == 0.3 and ref.duty == 0.75 and ref.step_height == 0.015
    assert ref.speed == 0.2
    # stand still before the gait starts
    q, qd, qdd = ref.sample(0.2)
    np.testing.assert_allclose(q, info["standing_q"][7:], atol=1e-9)
    assert np.abs(qd).max() < 1e-12 and np.abs(qdd).max() < 1e-12
    # mid-swing apex of LF/RH (touchdown 0.25 -> swing during phases [0, 0.25) after start)
    t_apex = ref.start + 5 * ref.period + 0.5 * ref.t_swing
    sw = ref.swing_active(t_apex)
    assert sw.tolist() == [True, False, False, True]  # LF, LH, RF, RH
    q, qd, qdd = ref.sample(t_apex)
    p = np.array([model.frame_placement(q, f)[:3, 3] for f in ref.foot_links])
    lift = p[:, 2] - ref.p_nominal[:, 2]
    np.testing.assert_allclose(lift, [0.015, 0.0, 0.0, 0.015], atol=1e-8)
    # stance feet move backwards at the base speed (after the ramp): v_foot_x = -0.2 m/s
    for leg in (1, 2):
        J = model.jacobian(q, ref.foot_links[leg])[:3]
        assert (J @ qd)[0] == pytest.approx(-0.2, abs=1e-8)
    # duty factor: fraction of time in stance = 0.75 for every foot
    ts = ref.start + np.arange(0, 3 * ref.period, 1e-3)
    stance = np.mean([~ref.swing_active(t) for t in ts], axis=0)
    np.testing.assert_allclose(stance, 0.75, atol=0.01)
    # (away from the phase switches, where the jerk jumps and a central difference is biased)
    _check_derivatives(ref, np.linspace(0.45, 2.5, 37) + 0.00123)
    assert ref.ik_failures == 0


def test_weight_shift_moves_base_over_fixed_feet(model):
    ref = make_reference("quadruped", "shift", amplitude=0.02, frequency=0.5)
    q, _, _ = ref.sample(1.5)  # sin(1.5 pi) = -1 -> base at -2 cm, feet at +2 cm in base frame
    p = np.array([model.frame_placement(q, f)[:3, 3] for f in ref.foot_links])
    np.testing.assert_allclose(p - ref.p_nominal, np.tile([0, 0.02, 0], (4, 1)), atol=1e-9)
    _check_derivatives(ref, np.linspace(0.0, 2.0, 23))


def test_arm_sinusoid_three_hertz_and_fingers_still():
    info = robot_info("arm")
    ref = make_reference("arm", "sinusoid")
    fingers = [ref.joint_names.index(f) for f in info["finger_joints"]]
    q1, qd1, qdd1 = ref.sample(1.0)
    q2, _, _ = ref.sample(1.0 + 1.0 / 3.0)  # one period later
    np.testing.assert_allclose(q1, q2, atol=1e-12)
    assert np.all(qd1[fingers] == 0) and np.all(qdd1[fingers] == 0)
    np.testing.assert_allclose(q1[fingers], np.array(info["grasp_q"])[fingers] + 0.05)
    _check_derivatives(ref, np.linspace(0.0, 1.0, 17))
    with pytest.raises(ValueError, match="kind"):
        make_reference("arm", "trot")
