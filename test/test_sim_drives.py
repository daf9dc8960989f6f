"""The simulator's joint drives (``wbc_dynamics.sim.sim_node.Drives``) without ROS: the torques
an effort and a hybrid drive apply at each plant step for the commands that reached them --
the impedance law and its clamp, the stale-command fallback of each, command latency and
dropout, and commands that arrive incomplete (gains without set-points)."""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

from wbc_dynamics.sim.sim_node import Drives

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DT = 1e-3
LIMIT = np.array([4.0, 4.0, math.inf])
Q = np.array([0.1, -0.2, 0.3])
QD = np.array([0.5, -1.0, 2.0])


def _hybrid_command() -> dict[str, np.ndarray]:
    return {"effort": np.array([0.5, -0.25, 1.0]), "position": np.array([0.2, -0.1, 0.0]),
            "velocity": np.array([0.0, 1.0, -1.0]), "stiffness": np.array([8.0, 100.0, 5.0]),
            "damping": np.array([0.2, 0.3, 0.1])}


def test_effort_drive_holds_the_command_then_zero_after_the_timeout():
    d = Drives(3, LIMIT, hybrid=False, timeout=0.005)
    d.receive(0.0, {"effort": np.array([1.0, -5.0, 7.0])})
    # held (clamped to the limits) up to the timeout, whatever the joint state
    for k in range(6):
        np.testing.assert_array_equal(d.torque(k * DT, Q * k, QD), [1.0, -4.0, 7.0])
    assert d.stale_steps == 0 and not d.stale
    np.testing.assert_array_equal(d.torque(6 * DT, Q, QD), [0.0, 0.0, 0.0])
    assert d.stale and d.stale_steps == 1
    assert d.age_max == pytest.approx(6 * DT)
    # an effort drive ignores set-points and gains
    d.receive(6 * DT, _hybrid_command())
    np.testing.assert_array_equal(d.torque(7 * DT, Q, QD), [0.5, -0.25, 1.0])


def test_hybrid_drive_applies_the_impedance_law_clamped():
    c = _hybrid_command()
    d = Drives(3, LIMIT, hybrid=True, timeout=0.05)
    d.receive(0.0, c)
    tau = d.torque(0.0, Q, QD)
    # 0.5 + 8 (0.2 - 0.1) + 0.2 (0 - 0.5) = 1.2; -0.25 + 100 (0.1) + 0.3 (2) = 10.35 -> 4 (clamp);
    # 1 + 5 (-0.3) + 0.1 (-3) = -0.8 (no limit)
    np.testing.assert_allclose(tau, [1.2, 4.0, -0.8], rtol=0, atol=1e-12)
    raw = c["effort"] + c["stiffness"] * (c["position"] - Q) + c["damping"] * (c["velocity"] - QD)
    np.testing.assert_allclose(tau, np.clip(raw, -LIMIT, LIMIT), rtol=0, atol=1e-15)
    # between commands: the same command on the state of each step
    q2, qd2 = Q + 0.01, QD - 0.5
    raw2 = (c["effort"] + c["stiffness"] * (c["position"] - q2)
            + c["damping"] * (c["velocity"] - qd2))
    np.testing.assert_allclose(d.torque(DT, q2, qd2), np.clip(raw2, -LIMIT, LIMIT), rtol=0,
                               atol=1e-15)
    assert d.stale_steps == 0


def test_hybrid_drive_stale_command_keeps_the_impedance_loop_at_rest_without_tau_ff():
    c = _hybrid_command()
    d = Drives(3, LIMIT, hybrid=True, timeout=0.01)
    d.receive(0.0, c)
    for k in range(11):
        d.torque(k * DT, Q, QD)
    assert d.stale_steps == 0
    tau = d.torque(11 * DT, Q, QD)  # 11 ms > 10 ms: stale
    assert d.stale and d.stale_steps == 1
    # tau_ff = 0, qd_set = 0, last q_set and gains: 8 (0.1) - 0.2 (0.5) = 0.7;
    # 100 (0.1) + 0.3 (1) = 10.3 -> 4; 5 (-0.3) - 0.1 (2) = -1.7
    np.testing.assert_allclose(tau, [0.7, 4.0, -1.7], rtol=0, atol=1e-12)
    # a fresh command restores the full law; zero gains (a controller whose state went stale)
    # then leave the stale drive limp
    d.receive(12 * DT, {**c, "stiffness": np.zeros(3), "damping": np.zeros(3)})
    np.testing.assert_allclose(d.torque(12 * DT, Q, QD), c["effort"], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(d.torque(30 * DT, Q, QD), [0.0, 0.0, 0.0])


def test_hybrid_drive_without_set_points_is_an_effort_drive():
    d = Drives(3, LIMIT, hybrid=True, timeout=0.05)
    d.receive(0.0, {"stiffness": np.full(3, 50.0), "damping": np.full(3, 1.0)})
    d.receive(0.0, {"effort": np.array([1.0, 2.0, 3.0])})
    np.testing.assert_array_equal(d.torque(0.0, Q, QD), [1.0, 2.0, 3.0])
    # set-points without gains: zero gains, effort alone
    d = Drives(3, LIMIT, hybrid=True, timeout=0.05)
    d.receive(0.0, {"effort": np.array([1.0, 2.0, 3.0]), "position": np.zeros(3),
                    "velocity": np.zeros(3)})
    np.testing.assert_array_equal(d.torque(0.0, Q, QD), [1.0, 2.0, 3.0])
    # no command at all: nothing applied, and that is stale
    d = Drives(3, LIMIT, hybrid=True, timeout=0.05)
    np.testing.assert_array_equal(d.torque(0.0, Q, QD), [0.0, 0.0, 0.0])
    assert d.stale


def test_latency_delays_every_command_but_the_ones_before_the_first_step():
    d = Drives(3, LIMIT, hybrid=False, timeout=0.05, latency=0.005)
    d.receive(0.0, {"effort": np.full(3, 1.0)})  # before the first step: applied at once
    applied = []
    for k in range(12):
        t = k * DT
        if k >= 1:
            d.receive(t, {"effort": np.full(3, float(k + 1))})  # command of tick k
        applied.append(d.torque(t, Q, QD)[2])
    # tick k's command (value k + 1) drives step k + 5; steps 0-5 the first one
    assert applied == [1.0] * 6 + [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert d.stale_steps == 0


def test_dropout_window_drops_commands_and_the_drives_keep_the_last():
    d = Drives(3, LIMIT, hybrid=False, timeout=0.05, dropout_start=0.004, dropout=0.003)
    applied = []
    for k in range(10):
        d.receive(k * DT, {"effort": np.full(3, float(k))})
        applied.append(d.torque(k * DT, Q, QD)[2])
    assert applied == [0.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 7.0, 8.0, 9.0]
    assert d.dropped == 3 and d.stale_steps == 0
    assert d.age_max == pytest.approx(3 * DT)


def test_sim_launch_plan_passes_the_drive_through():
    """sim.launch.py's ``drive`` reaches the simulator, ``drive_stiffness`` / ``drive_damping``
    the controller (one value for every joint); an unknown drive is refused, naming it; the
    launch file documents every argument of the plan."""
    from wbc_dynamics.sim.launch_plan import SIM_LAUNCH_ARGS, sim_launch_plan

    sim, ctl, _ = sim_launch_plan({"drive": "hybrid", "drive_stiffness": "10",
                                   "drive_damping": "0.3"}, ".")
    assert sim.parameters[0]["drive"] == "hybrid"
    overrides = ctl.parameters[-1]
    assert overrides["drive_stiffness"] == [10.0] and overrides["drive_damping"] == [0.3]
    # default: the drives the controller commands -- the bundled quadruped's configuration
    # sets drive gains, the arm's does not; a zero gain override means effort only
    sim, ctl, _ = sim_launch_plan({}, REPO)
    assert sim.parameters[0]["drive"] == "hybrid"
    assert "drive_stiffness" not in ctl.parameters[-1]  # the configuration's
    sim, _, _ = sim_launch_plan({"drive_stiffness": "0", "drive_damping": "0"}, REPO)
    assert sim.parameters[0]["drive"] == "effort"
    sim, _, _ = sim_launch_plan({"robot": "arm"}, REPO)
    assert sim.parameters[0]["drive"] == "effort"
    sim, _, _ = sim_launch_plan({"robot": "go2"}, REPO)
    assert sim.parameters[0]["drive"] == "hybrid"
    with pytest.raises(ValueError,
                       match=re.escape("drive: expected effort | hybrid, got 'torque'")):
        sim_launch_plan({"drive": "torque"}, ".")
    launch_file = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "launch", "sim.launch.py")
    doc = open(launch_file).read().split('"""')[1]
    assert [a for a, _, _ in SIM_LAUNCH_ARGS if a not in doc] == []
