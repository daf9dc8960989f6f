"""WholeBodyController (ROS-free) against Pinocchio as the independent reference."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest
from numba_helpers import (
    compiled_signature_counts,
    dispatcher_calls,
    grown_since,
    literal_duplicates,
)

from wbc_dynamics.controller import ControllerConfig, WholeBodyController
from wbc_dynamics.robots import robot_info, robot_path
from wbc_dynamics.ros_conversions import JointStateParser, ReferenceParser, preallocated_float64


@pytest.fixture(scope="module")
def arm():
    info = robot_info("arm")
    pm = pin.buildModelFromUrdf(robot_path("arm"))
    assert list(pm.names)[1:] == info["joint_names"]
    return info, pm, pm.createData()


@pytest.fixture(scope="module")
def quadruped():
    pm = pin.buildModelFromUrdf(robot_path("quadruped"), pin.JointModelFreeFlyer())
    return robot_info("quadruped"), pm, pm.createData()


def _arm_state(info, rng):
    q = np.array(info["standing_q"]) + 0.1 * rng.standard_normal(info["n_joints"])
    return q, rng.standard_normal(info["n_joints"]), rng.standard_normal(info["n_joints"])


def test_fixed_base_torque_equals_rnea_with_pd_in_any_joint_order(arm):
    info, pm, pd = arm
    rng = np.random.default_rng(0)
    joints = list(reversed(info["joint_names"]))          # configured order != URDF order
    kp = np.linspace(50.0, 150.0, len(joints))
    kd = 0.2 * kp
    ctl = WholeBodyController(ControllerConfig(robot="arm", joints=joints, kp=kp.tolist(),
                                               kd=kd.tolist(), effort_limits=[1e6]))
    perm = [info["joint_names"].index(j) for j in joints]  # configured i -> URDF index
    for k in range(5):
        q, qd, a = _arm_state(info, rng)
        q_des, qd_des = q + 0.05 * rng.standard_normal(q.size), rng.standard_normal(q.size)
        now = 10.0 + k
        ctl.set_joint_state(q[perm], qd[perm], now)
        ctl.set_reference(a[perm], now, position=q_des[perm], velocity=qd_des[perm])
        out = ctl.update(now + 0.001)
        assert out.mode == "control" and out.clamped == 0
        qdd = a + kp[np.argsort(perm)] * (q_des - q) + kd[np.argsort(perm)] * (qd_des - qd)
        expected = pin.rnea(pm, pd, q, qd, qdd)[perm]
        np.testing.assert_allclose(out.tau, expected, rtol=0, atol=1e-9)
        np.testing.assert_allclose(out.qdd_cmd, qdd[perm], rtol=0, atol=1e-12)


def test_reference_without_feedback_terms_is_pure_inverse_dynamics(arm):
    info, pm, pd = arm
    rng = np.random.default_rng(1)
    ctl = WholeBodyController({"robot": "arm", "kp": [100.0], "kd": [10.0],
                               "effort_limits": [np.inf]})
    q, qd, a = _arm_state(info, rng)
    ctl.set_joint_state(q, qd, 0.0)
    ctl.set_reference(a, 0.0)                               # no positions / velocities
    out = ctl.update(0.0)
    np.testing.assert_allclose(out.tau, pin.rnea(pm, pd, q, qd, a), rtol=0, atol=1e-9)


def test_floating_base_none_realizes_joint_accelerations(quadruped):
    info, pm, pd = quadruped
    rng = np.random.default_rng(2)
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "effort_limits": [np.inf]})
    q = np.array(info["standing_q"])
    ang = rng.standard_normal(3) * 0.3
    q[3:7] = pin.Quaternion(pin.exp3(ang)).coeffs()          # x y z w
    v = rng.standard_normal(pm.nv)
    qdd = rng.standard_normal(12)
    ctl.set_base_state(q[:3], q[3:7], v[:3], v[3:6], 1.0)
    ctl.set_joint_state(q[7:], v[6:], 1.0)
    ctl.set_reference(qdd, 1.0)
    out = ctl.update(1.0)
    assert out.mode == "control"
    acc = pin.aba(pm, pd, q, v, np.r_[np.zeros(6), out.tau])  # free base, no contact
    np.testing.assert_allclose(acc[6:], qdd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("robot,passive", [("quadruped", []), ("quadruped", ["LF_kfe"]),
                                           ("arm", ["joint_4"]), ("arm", [])])
def test_method_none_with_free_dofs_calls_no_python_dynamics(robot, passive, monkeypatch):
    """method none is one compiled call per tick, with unactuated DoFs (floating base, passive
    joints) and without (a fixed base, every joint actuated: RNEA): no RobotModel method runs
    from Python (the replaced paths called minverse and nonlinear_effects, or rnea, every
    tick); the torques are 0 on the passive joints and realize the
    commanded accelerations on the others with the unactuated DoFs free (ABA)."""
    info = robot_info(robot)
    fb = info["floating_base"]
    ctl = WholeBodyController({"robot": robot, "floating_base": fb, "passive_joints": passive,
                               "effort_limits": [np.inf]})
    m = ctl.model
    n = ctl.n
    rng = np.random.default_rng(4)
    q = np.array(info["standing_q"]) + np.r_[np.zeros(7 if fb else 0), 0.2 * rng.normal(size=n)]
    v = rng.normal(size=m.nv)
    qdd = rng.normal(size=n)
    for name in ("rnea", "nonlinear_effects", "minverse", "mass_matrix", "aba"):
        monkeypatch.setattr(m, name, lambda *a, _n=name, **k: pytest.fail(f"model.{_n} called"))
    if fb:
        ctl.set_base_state(q[:3], q[3:7], v[:3], v[3:6], 0.0)
    ctl.set_joint_state(q[m.nq - n:], v[m.nv - n:], 0.0)
    ctl.set_reference(qdd, 0.0)
    out = ctl.update(0.0)
    monkeypatch.undo()
    assert out.mode == "control"
    k_passive = [ctl.joint_names.index(j) for j in passive]
    assert not np.any(out.tau[k_passive])
    acc = m.aba(q, v, np.r_[np.zeros(m.nv - n), out.tau])
    act = [k for k in range(n) if k not in k_passive]
    np.testing.assert_allclose(acc[m.nv - n:][act], qdd[act], rtol=0, atol=1e-8)


def test_stale_inputs_give_documented_safe_commands(arm):
    info, pm, pd = arm
    rng = np.random.default_rng(3)
    D = 7.0
    ctl = WholeBodyController({"robot": "arm", "state_timeout": 0.05, "reference_timeout": 0.2,
                               "safe_damping": [D], "effort_limits": [np.inf]})
    q, qd, a = _arm_state(info, rng)
    out = ctl.update(0.0)                                    # nothing received yet
    assert out.mode == "safe_stale_state" and np.all(out.tau == 0.0)
    ctl.set_joint_state(q, qd, 1.0)
    out = ctl.update(1.01)                                   # state fresh, never a reference
    assert out.mode == "safe_stale_reference"
    np.testing.assert_allclose(out.tau, pin.rnea(pm, pd, q, qd, -D * qd), rtol=0, atol=1e-9)
    ctl.set_reference(a, 1.0)
    assert ctl.update(1.02).mode == "control"
    ctl.set_joint_state(q, qd, 1.23)
    out = ctl.update(1.25)                                  # reference 0.25 s old > 0.2 s
    assert out.mode == "safe_stale_reference"
    np.testing.assert_allclose(out.tau, pin.rnea(pm, pd, q, qd, -D * qd), rtol=0, atol=1e-9)
    ctl.set_reference(a, 1.25)
    assert ctl.update(1.27).mode == "control"               # state 0.04 s old: still fresh
    out = ctl.update(1.29)                                  # state 0.06 s old > 0.05 s
    assert out.mode == "safe_stale_state" and np.all(out.tau == 0.0)
    ctl.set_parameters({"safe_mode": "zero"})
    ctl.set_joint_state(q, qd, 2.0)
    out = ctl.update(2.0)
    assert out.mode == "safe_stale_reference" and np.all(out.tau == 0.0)
    assert ctl.safe_ticks >= 5


def test_effort_clamping_urdf_and_override(arm):
    info, pm, pd = arm
    ctl = WholeBodyController({"robot": "arm"})
    np.testing.assert_array_equal(ctl.effort_limit, pin.buildModelFromUrdf(
        robot_path("arm")).effortLimit)
    q = np.array(info["standing_q"])
    a = np.full(q.size, 500.0)                               # huge accelerations
    ctl.set_joint_state(q, np.zeros(q.size), 0.0)
    ctl.set_reference(a, 0.0)
    out = ctl.update(0.0)
    raw = pin.rnea(pm, pd, q, np.zeros(q.size), a)
    np.testing.assert_allclose(out.tau, np.clip(raw, -ctl.effort_limit, ctl.effort_limit),
                               atol=1e-9)
    assert out.clamped == int(np.sum(np.abs(raw) > ctl.effort_limit)) > 0
    lim = np.full(q.size, 2.0)
    lim[0] = 0.0                                             # 0 = keep the URDF limit
    ctl.set_parameters({"effort_limits": lim.tolist()})
    out = ctl.update(0.0)
    exp_lim = lim.copy()
    exp_lim[0] = pm.effortLimit[0]
    np.testing.assert_allclose(out.tau, np.clip(raw, -exp_lim, exp_lim), atol=1e-9)


def test_runtime_parameters_validated_all_or_nothing(arm):
    info, pm, pd = arm
    ctl = WholeBodyController({"robot": "arm", "kp": [10.0]})
    with pytest.raises(ValueError, match="kd.*'joint_3'.*>= 0"):
        ctl.set_parameters({"kp": [20.0], "kd": [1, 1, -1] + [1] * 8})
    assert np.all(ctl.config.kp == np.full(11, 10.0))        # kp not applied either
    with pytest.raises(ValueError, match="kp: expected 1 or 11"):
        ctl.set_parameters({"kp": [1.0, 2.0]})
    with pytest.raises(ValueError, match="method"):
        ctl.set_parameters({"method": "magic"})
    with pytest.raises(ValueError, match="friction"):
        ctl.set_parameters({"friction": -0.1})
    with pytest.raises(ValueError, match="state_timeout"):
        ctl.set_parameters({"state_timeout": float("nan")})
    with pytest.raises(ValueError, match="not a runtime parameter"):
        ctl.set_parameters({"joints": []})
    q = np.array(info["standing_q"])
    ctl.set_parameters({"kp": [30.0]})
    ctl.set_joint_state(q, np.zeros(q.size), 0.0)
    ctl.set_reference(np.zeros(q.size), 0.0, position=q + 0.1)
    out = ctl.update(0.0)
    np.testing.assert_allclose(out.qdd_cmd, np.full(q.size, 3.0), atol=1e-12)


@pytest.mark.parametrize("cfg, match", [
    ({"robot": "arm", "joints": ["joint_1", "nope"]}, "joint 'nope' is not a movable joint"),
    ({"robot": "arm", "joints": ["joint_1"], "strict_joints": True},
     r"movable joint\(s\) \['joint_2'.*neither configured nor locked"),
    ({"robot": "arm", "joints": ["joint_1", "joint_1"]}, "listed twice"),
    ({"robot": "arm", "kp": [1.0, 2.0]}, "kp: expected 1 or 11"),
    ({"robot": "arm", "control_rate": 0.0}, "control_rate"),
    ({"robot": "arm", "method": "bogus"}, "method"),
    ({"robot": "arm", "safe_mode": "off"}, "safe_mode"),
    ({"urdf_path": "/nonexistent.urdf"}, "urdf_path: file not found"),
    ({}, "no robot model given"),
    ({"robot": "arm", "colour": 1}, r"unknown field\(s\) \['colour'\]"),
    ({"robot": "unknown_bot"}, "unknown robot name"),
    ({"robot": "arm", "contact_margin": -0.1}, "contact_margin"),
    ({"robot": "arm", "friction_edges": 5}, "friction_edges"),
    ({"robot": "arm", "method": "lcp_noslip", "contact_links": ["hand", "nolink"]},
     "nolink"),
])
def test_configuration_errors_name_the_field(cfg, match):
    with pytest.raises(ValueError, match=match):
        WholeBodyController(cfg)


def test_bad_inputs_rejected_with_joint_name_and_state_kept(arm):
    info, pm, pd = arm
    ctl = WholeBodyController({"robot": "arm", "effort_limits": [np.inf]})
    q = np.array(info["standing_q"])
    ctl.set_joint_state(q, np.zeros(q.size), 0.0)
    ctl.set_reference(np.zeros(q.size), 0.0)
    bad = q.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match="joint_state.position.*'joint_5'"):
        ctl.set_joint_state(bad, np.zeros(q.size), 0.01)
    with pytest.raises(ValueError, match="expected 11 values"):
        ctl.set_joint_state(q[:5], np.zeros(5), 0.01)
    with pytest.raises(ValueError, match="reference.velocities.*'F2_joint'"):
        v = np.zeros(q.size)
        v[8] = np.inf
        ctl.set_reference(np.zeros(q.size), 0.01, velocity=v)
    with pytest.raises(ValueError, match="fixed base"):
        ctl.set_base_state(np.zeros(3), [0, 0, 0, 1], np.zeros(3), np.zeros(3), 0.0)
    out = ctl.update(0.02)                                   # previous valid inputs still used
    assert out.mode == "control"
    np.testing.assert_allclose(out.tau, pin.rnea(pm, pd, q, np.zeros(q.size), np.zeros(q.size)),
                               atol=1e-9)


#: every method and option the product ships (config/*.yaml fields), for the no-compilation test
SHIPPED_VARIANTS = {
    "lcp_noslip": {"method": "lcp_noslip"},
    "lcp_noslip_min_norm": {"method": "lcp_noslip", "noslip_min_norm": True},
    "lcp_noslip_shipped_quadruped": {"method": "lcp_noslip", "noslip_min_norm": True,
                                     "passive_impact": True, "separation_tolerance": 0.05,
                                     "phi_deadband": 1e-4, "noslip_gap": 1e-6},
    "lcp_coulomb": {"method": "lcp_coulomb"},
    "lcp_coulomb_tracking": {"method": "lcp_coulomb", "coulomb_tracking": True,
                             "passive_impact": True, "separation_tolerance": 0.05,
                             "phi_deadband": 1e-4, "noslip_gap": 1e-6},
    "qp_coulomb": {"method": "qp_coulomb"},
    "qp_coulomb_tracking": {"method": "qp_coulomb", "coulomb_tracking": True,
                            "passive_impact": True, "noslip_gap": 1e-6},
    "qp_noslip": {"method": "qp_noslip", "noslip_gap": 1e-6},
    "lcp_noslip_real_robot": {"method": "lcp_noslip", "noslip_min_norm": True,
                              "passive_impact": True, "separation_tolerance": 0.05,
                              "phi_deadband": 1e-4, "noslip_gap": 1e-6,
                              "contact_state_filter": True, "torque_filter_cutoff": 40.0,
                              "torque_rate_limit": [2000.0], "drive_stiffness": [5.0],
                              "drive_damping": [0.1]},
    "none": {"method": "none"},
    "none_passive_joints": {"method": "none", "passive_joints": ["LF_kfe", "RH_haa"]},
}


@pytest.mark.parametrize("variant", sorted(SHIPPED_VARIANTS))
def test_ticks_compile_nothing_for_every_method_and_option(quadruped, variant):
    """Construction warms every kernel the configuration can reach: no tick adds a numba
    signature -- standing, perturbed and inconsistent states (the Sec. 4.5 / sticking
    corrections, min-norm selections), touchdowns with the passive impact, a swing foot, a
    flight phase (no contact: the general path) and stale references (deterministic; tick
    times are measured by benchmarks/bench_tick.py, not asserted here)."""
    info, pm, pd = quadruped
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "kp": [3000.0], "kd": [110.0], **SHIPPED_VARIANTS[variant]})
    q = np.array(info["standing_q"])
    rng = np.random.default_rng(3)
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0, position=q[7:], velocity=np.zeros(12))
    before = compiled_signature_counts()
    out = ctl.update(0.0)
    first = (out.mode, len(out.contact_ids))
    modes, flags = set(), set()
    for k in range(120):
        t = 1e-3 * k + (1.0 if k >= 100 else 0.0)  # last ticks: the reference goes stale
        dz = 0.2 if 60 <= k < 65 else rng.uniform(-0.002, 0.003)  # flight phase, touchdowns
        ctl.set_base_state(q[:3] + [0.0, 0.0, dz], q[3:7], rng.normal(0.0, 0.1, 3),
                           rng.normal(0.0, 0.2, 3), t)
        ctl.set_joint_state(q[7:] + rng.normal(0.0, 0.02, 12), rng.normal(0.0, 0.5, 12), t)
        if k < 100:
            ctl.set_reference(rng.normal(0.0, 20.0, 12), t, position=q[7:],
                              velocity=np.zeros(12))
        ctl.set_contact_schedule(["LF_foot"] if 30 <= k < 45 else [])
        o = ctl.update(t)
        modes.add(o.mode)
        flags.update(o.solver_flags)
    cfg = SHIPPED_VARIANTS[variant]
    assert first == ("control", 0 if cfg["method"] == "none" else 4)
    assert {"control", "safe_stale_reference"} <= modes, modes
    if cfg["method"] != "none":  # the paths were reached: flight phase, corrections, min-norm
        assert "no_contacts" in flags
    if cfg["method"] == "lcp_noslip" or cfg.get("coulomb_tracking"):
        assert "inconsistent_corrected" in flags
    if cfg.get("noslip_min_norm") or cfg.get("coulomb_tracking"):
        assert "min_norm" in flags
    assert not grown_since(before)
    assert ctl.timing_stats()["count"] == 121
    # method none on the floating base is always warm (a runtime switch to it compiles
    # nothing): control ticks and a damping safe tick
    ctl.set_parameters({"method": "none"})
    for k, t in enumerate((2.0, 2.001, 3.0)):  # the last tick: the reference goes stale
        ctl.set_base_state(q[:3], q[3:7], rng.normal(0.0, 0.1, 3), rng.normal(0.0, 0.2, 3), t)
        ctl.set_joint_state(q[7:] + rng.normal(0.0, 0.02, 12), rng.normal(0.0, 0.5, 12), t)
        if k < 2:
            ctl.set_reference(rng.normal(0.0, 20.0, 12), t, position=q[7:])
        assert ctl.update(t).mode == ("control" if k < 2 else "safe_stale_reference")
    assert not grown_since(before)
    # and start-up compiled each kernel once (no second copy specialized on a constant); this
    # sees compilations, so it checks on a cold cache (CI's clean clone; test_startup's
    # precompile test checks the shipped configuration on an empty cache every run)
    assert not literal_duplicates(), literal_duplicates()


def test_drive_command_and_torque_low_pass_of_every_tick(quadruped):
    """The command step of every tick (one compiled call): on a control tick the low-pass
    ``tau = prev + alpha (raw - prev)``, ``alpha = 1 - exp(-2 pi f_c dt)``, of the torques a
    controller without it commands, and the drive set-points of the reference (the measured
    state where it gives none); on a damping safe tick those torques unfiltered, the measured
    position at rest and the drive gains; on the zero safe mode's and a stale state's ticks
    zero torque and zero gains."""
    import math

    info, pm, pd = quadruped
    base = {"robot": "quadruped", "floating_base": True, "method": "none", "kp": [300.0],
            "kd": [30.0], "drive_stiffness": [5.0], "drive_damping": [0.1]}
    filtered = WholeBodyController({**base, "torque_filter_cutoff": 40.0})
    raw = WholeBodyController({**base, "torque_filter_cutoff": 0.0})
    alpha = 1.0 - math.exp(-2.0 * math.pi * 40.0 * (1.0 / 1000.0))
    q = np.array(info["standing_q"])
    q_des = q[7:] + 0.05
    rng = np.random.default_rng(11)
    prev = None
    for k in range(45):
        t = 1e-3 * k + (1.0 if k >= 30 else 0.0)  # from tick 30 on the reference is stale
        qj, qd = q[7:] + rng.normal(0.0, 0.01, 12), rng.normal(0.0, 0.1, 12)
        if k == 40:
            filtered.set_parameters({"safe_mode": "zero"})
        for c in (filtered, raw):
            c.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), t)
            c.set_joint_state(qj, qd, t)
            if k < 30:
                c.set_reference(np.zeros(12), t, position=q_des if k < 20 else None)
        tau_raw = raw.update(t).tau.copy()
        out = filtered.update(t)
        if k < 30:
            assert out.mode == "control"
            expect = tau_raw if prev is None else (tau_raw - prev) * alpha + prev
            np.testing.assert_array_equal(out.tau, expect)
            assert prev is None or np.max(np.abs(out.tau - tau_raw)) > 0.0  # it filters
            np.testing.assert_array_equal(out.position_setpoint, q_des if k < 20 else qj)
            np.testing.assert_array_equal(out.velocity_setpoint, qd)  # no velocity reference
        elif k < 40:
            assert out.mode == "safe_stale_reference"
            np.testing.assert_array_equal(out.tau, tau_raw)  # safe ticks are not filtered
            np.testing.assert_array_equal(out.position_setpoint, qj)
            np.testing.assert_array_equal(out.velocity_setpoint, np.zeros(12))
        else:
            assert out.mode == "safe_stale_reference"
            np.testing.assert_array_equal(out.tau, np.zeros(12))
        on = k < 40
        np.testing.assert_array_equal(out.stiffness, np.full(12, 5.0 if on else 0.0))
        np.testing.assert_array_equal(out.damping, np.full(12, 0.1 if on else 0.0))
        prev = out.tau.copy()
    out = filtered.update(2.0)  # no state since tick 44: stale
    assert out.mode == "safe_stale_state"
    np.testing.assert_array_equal(out.tau, np.zeros(12))
    np.testing.assert_array_equal(out.stiffness, np.zeros(12))
    np.testing.assert_array_equal(out.velocity_setpoint, np.zeros(12))


def _shipped_standing(robot: str) -> tuple[WholeBodyController, np.ndarray]:
    """The controller of ``robot``'s shipped configuration (config/quadruped.yaml for the
    bundled quadruped, else config/robots/<robot>.yaml) and its standing configuration q."""
    if robot == "quadruped":
        import os
        import sys

        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
        from bench_tick import shipped_config

        return (WholeBodyController(shipped_config("quadruped")),
                np.array(robot_info("quadruped")["standing_q"]))
    from wbc_dynamics.robot_config import load_robot_setup, standing_configuration

    setup = load_robot_setup(robot)
    ctl = WholeBodyController(setup.controller)
    q = standing_configuration(ctl, setup.standing_joint_positions(ctl.joint_names, ctl.model),
                               setup.standing.get("base_height"))
    return ctl, q


@pytest.mark.parametrize("robot, stance_links", [("quadruped", 4), ("g1", 2)])
def test_the_shipped_tick_calls_filter_and_observers_through_their_bound_entries(
        robot, stance_links, monkeypatch):
    """The shipped configurations' tick (config/quadruped.yaml; config/robots/g1.yaml, a
    humanoid with the base-pose observer) runs the contact state filter, the joint-state
    observer and the base-pose observer through the entry points bound at construction: never
    numba's dispatcher (its typing of every argument costs microseconds a call), on standing
    and perturbed states alike."""
    import wbc_dynamics.base_observer as base_module
    import wbc_dynamics.contact.stance as stance_module
    import wbc_dynamics.joint_observer as observer_module

    ctl, q = _shipped_standing(robot)
    assert ctl.contact_state is not None and ctl._joint_observer is not None
    assert (ctl._base_observer is not None) == (robot == "g1")
    calls = (dispatcher_calls(monkeypatch, stance_module, "stance_update_kernel"),
             dispatcher_calls(monkeypatch, observer_module, "joint_observer_update"),
             dispatcher_calls(monkeypatch, base_module, "base_observer_update"))
    n = ctl.n
    qj = q[7:] if robot == "quadruped" else np.array(
        [q[7 + ctl.model.joint_index(j)] for j in ctl.joint_names])
    rng = np.random.default_rng(5)
    for k in range(30):
        t = 1e-3 * k
        ctl.set_base_state(q[:3] + [0.0, 0.0, rng.uniform(-2e-3, 2e-3)], q[3:7],
                           rng.normal(0.0, 0.05, 3), rng.normal(0.0, 0.02, 3), t)
        ctl.set_joint_state(qj + rng.normal(0.0, 1e-3, n), rng.normal(0.0, 0.02, n), t)
        ctl.set_reference(np.zeros(n), t, position=qj, velocity=np.zeros(n))
        assert ctl.update(t).mode == "control"
    assert [len(c) for c in calls] == [0, 0, 0]
    assert len(ctl.contact_state.stance_links) == stance_links
    if ctl._base_observer is not None:  # it ran every tick: the pose is filtered
        assert ctl._base_observer.data.started[0] and ctl._base_observer.resets == 0


def test_base_state_validation(quadruped):
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True})
    with pytest.raises(ValueError, match="orientation: quaternion norm"):
        ctl.set_base_state(np.zeros(3), [0, 0, 0, 2.0], np.zeros(3), np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="linear_velocity: contains a non-finite"):
        ctl.set_base_state(np.zeros(3), [0, 0, 0, 1.0], [0, np.nan, 0], np.zeros(3), 0.0)
    ctl.set_joint_state(np.zeros(12), np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    assert ctl.update(0.0).mode == "safe_stale_state"       # no base state yet -> zero torque


# ---------------------------------------------------------------- message parsers (duck-typed)
def _js(names, pos, vel):
    return SimpleNamespace(name=list(names), position=list(pos), velocity=list(vel), effort=[])


def test_joint_state_parser_matches_by_name_ignores_extras():
    p = JointStateParser(["a", "b", "c"])
    pos, vel = p.parse(_js(["x", "c", "a", "b"], [9, 3, 1, 2], [90, 30, 10, 20]))
    np.testing.assert_array_equal(pos, [1, 2, 3])
    np.testing.assert_array_equal(vel, [10, 20, 30])
    pos, _ = p.parse(_js(["x", "c", "a", "b"], [np.nan, 6, 4, 5], [0, 0, 0, 0]))  # cached
    np.testing.assert_array_equal(pos, [4, 5, 6])            # NaN in an extra joint ignored
    with pytest.raises(ValueError, match="configured joint 'b' is missing"):
        p.parse(_js(["a", "c"], [1, 2], [1, 2]))
    with pytest.raises(ValueError, match="velocity: length 2 != length of name 3"):
        p.parse(_js(["a", "b", "c"], [1, 2, 3], [1, 2]))
    with pytest.raises(ValueError, match="position: non-finite value inf for joint 'c'"):
        p.parse(_js(["a", "b", "c"], [1, 2, np.inf], [1, 2, 3]))
    with pytest.raises(ValueError, match="appears twice"):
        p.parse(_js(["a", "b", "c", "a"], [1, 2, 3, 4], [1, 2, 3, 4]))


def test_reference_parser():
    p = ReferenceParser(["a", "b"])
    pt = SimpleNamespace(positions=[], velocities=[2.0, 1.0], accelerations=[0.2, 0.1])
    acc, pos, vel = p.parse(SimpleNamespace(joint_names=["b", "a"], points=[pt]))
    np.testing.assert_array_equal(acc, [0.1, 0.2])
    assert pos is None
    np.testing.assert_array_equal(vel, [1.0, 2.0])
    with pytest.raises(ValueError, match="points: empty"):
        p.parse(SimpleNamespace(joint_names=["a", "b"], points=[]))
    bad = SimpleNamespace(positions=[1.0], velocities=[], accelerations=[0.0, 0.0])
    with pytest.raises(ValueError, match="positions: length 1 must be 0 or 2"):
        p.parse(SimpleNamespace(joint_names=["a", "b"], points=[bad]))


def test_preallocated_message_view_writes_into_the_message():
    from std_msgs.msg import Float64MultiArray

    m = Float64MultiArray()
    view = preallocated_float64(m, "data", 3)
    view[:] = (1.0, 2.0, 3.0)
    assert list(m.data) == [1.0, 2.0, 3.0]


def test_robot_description_xml_source_equals_file_source(arm):
    info, pm, pd = arm
    xml = open(robot_path("arm")).read()
    a = WholeBodyController({"robot_description": xml, "effort_limits": [np.inf]})
    b = WholeBodyController({"urdf_path": robot_path("arm"), "effort_limits": [np.inf]})
    assert a.model_source == "robot_description" and a.joint_names == info["joint_names"]
    q, qd, acc = _arm_state(info, np.random.default_rng(9))
    np.testing.assert_allclose(a.compute(q, qd, acc), pin.rnea(pm, pd, q, qd, acc), atol=1e-9)
    np.testing.assert_allclose(b.compute(q, qd, acc), pin.rnea(pm, pd, q, qd, acc), atol=1e-9)
    with pytest.raises(ValueError, match="robot_description: expected URDF XML"):
        WholeBodyController({"robot_description": "not xml"})


def test_odometry_conversion_twist_in_child_frame():
    from wbc_dynamics.ros_conversions import odometry_to_base

    def vec(x, y, z):
        return SimpleNamespace(x=x, y=y, z=z)

    msg = SimpleNamespace(
        pose=SimpleNamespace(pose=SimpleNamespace(
            position=vec(1.0, 2.0, 3.0),
            orientation=SimpleNamespace(x=0.0, y=0.0, z=np.sin(0.25), w=np.cos(0.25)))),
        twist=SimpleNamespace(twist=SimpleNamespace(linear=vec(0.1, 0.2, 0.3),
                                                    angular=vec(-1.0, 0.0, 1.0))))
    p, quat, lin, ang = odometry_to_base(msg)
    np.testing.assert_array_equal(p, [1, 2, 3])
    np.testing.assert_allclose(quat, [0, 0, np.sin(0.25), np.cos(0.25)])
    np.testing.assert_array_equal(lin, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(ang, [-1, 0, 1])
    msg.pose.pose.orientation.w = 2.0
    with pytest.raises(ValueError, match="orientation: quaternion norm"):
        odometry_to_base(msg)
    msg.pose.pose.orientation.w = np.cos(0.25)
    msg.twist.twist.linear.y = np.nan
    with pytest.raises(ValueError, match="twist.twist.linear"):
        odometry_to_base(msg)


@pytest.mark.parametrize("method", ["lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip"])
def test_contact_methods_standing_quadruped_weight_and_warm_start(quadruped, method):
    """Through the controller: Σ normal forces = m g (the standing test of Zapolsky & Drumwright),
    warm start kept across ticks and cleared by reset_solver()."""
    info, pm, pd = quadruped
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True, "method": method})
    q = np.array(info["standing_q"])
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    out = ctl.update(0.0)
    assert out.mode == "control" and len(out.contact_ids) == 4
    mg = pin.computeTotalMass(pm) * 9.81
    assert abs(out.contact_forces[:, 2].sum() - mg) < 1e-6 * mg
    tau1 = out.tau.copy()
    out = ctl.update(0.0)
    assert ctl.solver_state.has(method)
    np.testing.assert_allclose(out.tau, tau1, atol=1e-6)
    ctl.reset_solver()
    assert not ctl.solver_state.has(method)


def test_runtime_friction_and_method_switch(quadruped):
    info, pm, pd = quadruped
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True, "method": "none"})
    q = np.array(info["standing_q"])
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    assert len(ctl.update(0.0).contact_ids) == 0
    ctl.set_parameters({"method": "lcp_coulomb", "friction": 0.3})    # warmed here
    before = compiled_signature_counts()
    out = ctl.update(0.0)
    assert not grown_since(before) and len(out.contact_ids) == 4
    prob = ctl._contact_model.build(q, np.zeros(18), np.zeros(12))
    np.testing.assert_array_equal(prob.mu, np.full(4, 0.3))
    f = out.contact_forces
    assert np.all(np.hypot(f[:, 0], f[:, 1]) <= 0.3 * f[:, 2] + 1e-9)  # inside the cone


def test_warm_methods_are_compiled_at_construction(quadruped):
    """warm_methods: every listed method is ready at construction -- a switch to it runs its
    first tick without compiling anything; an unknown name is a construction error."""
    info, pm, pd = quadruped
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip", "warm_methods": ["qp_coulomb"]})
    assert ctl.warmed_methods == ("none", "lcp_noslip", "qp_coulomb")
    q = np.array(info["standing_q"])
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    ctl.update(0.0)
    before = compiled_signature_counts()
    ctl.set_parameters({"method": "qp_coulomb"})
    out = ctl.update(0.0)
    assert not grown_since(before) and len(out.contact_ids) == 4
    assert abs(out.contact_forces[:, 2].sum() - info["total_mass"] * 9.81) < 1e-3 * 9.81
    with pytest.raises(ValueError, match="warm_methods: 'magic'"):
        WholeBodyController({"robot": "quadruped", "floating_base": True,
                             "method": "lcp_noslip", "warm_methods": ["magic"]})


def test_contact_model_options_reach_the_solver(quadruped):
    """phi_deadband / passive_impact / separation_tolerance go to the ContactModel, noslip_gap to
    lcp_noslip: the controller's torques equal a direct ContactModel + solve with the same
    options (cold start)."""
    from wbc_dynamics.contact import solve
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.model import RobotModel

    info, pm, pd = quadruped
    opts = {"phi_deadband": 1e-4, "passive_impact": True, "separation_tolerance": 0.05}
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip", "noslip_gap": 1e-6,
                               "effort_limits": [np.inf], "warm_start": False, **opts})
    assert ctl._contact_model.passive_impact is True
    q = np.array(info["standing_q"])
    q[2] += 0.0005                                             # feet 0.5 mm above the ground
    v = np.zeros(18)
    v[0], v[2] = 0.1, -0.6                                     # sliding and approaching
    ctl.set_base_state(q[:3], q[3:7], v[:3], v[3:6], 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    out = ctl.update(0.0)
    robot = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    cm = ContactModel(robot, contact_links=info["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3, **opts)
    res = solve("lcp_noslip", cm.build(q, v, np.zeros(12)), None, noslip_gap=1e-6)
    np.testing.assert_allclose(out.tau, res.tau, rtol=0, atol=1e-9)
    plain = ContactModel(robot, contact_links=info["contact_links"],
                         features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3)
    res0 = solve("lcp_noslip", plain.build(q, v, np.zeros(12)), None)
    assert np.max(np.abs(res0.tau - out.tau)) > 1.0            # the options matter here
    with pytest.raises(ValueError, match="separation_tolerance"):
        WholeBodyController({"robot": "arm", "separation_tolerance": -1.0})


def _standing(ctl, q):
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    return ctl.update(0.0)


def test_contact_schedule_removes_swing_feet_from_the_problem(quadruped):
    info, pm, pd = quadruped
    q = np.array(info["standing_q"])
    weight = sum(i.mass for i in pm.inertias) * 9.81
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip"})
    assert len(_standing(ctl, q).contact_ids) == 4
    ctl.set_contact_schedule(["LF_foot"])                     # LF in swing
    out = _standing(ctl, q)
    assert len(out.contact_ids) == 3 and all(c[0] != "LF_foot" for c in out.contact_ids)
    assert np.sum(out.contact_forces[:, 2]) == pytest.approx(weight, rel=1e-6)
    ctl.set_contact_schedule([])                              # all four in stance again
    assert len(_standing(ctl, q).contact_ids) == 4
    with pytest.raises(ValueError, match=r"\['nose'\] are not contact links"):
        ctl.set_contact_schedule(["nose"])


def test_noslip_min_norm_loads_all_four_feet_equally(quadruped):
    info, pm, pd = quadruped
    q = np.array(info["standing_q"])
    weight = sum(i.mass for i in pm.inertias) * 9.81
    vertex = _standing(WholeBodyController({"robot": "quadruped", "floating_base": True,
                                            "method": "lcp_noslip"}), q)
    mn = _standing(WholeBodyController({"robot": "quadruped", "floating_base": True,
                                        "method": "lcp_noslip", "noslip_min_norm": True}), q)
    np.testing.assert_allclose(mn.contact_forces[:, 2], weight / 4, rtol=1e-6)
    assert np.sum(vertex.contact_forces[:, 2]) == pytest.approx(weight, rel=1e-6)
    assert np.count_nonzero(vertex.contact_forces[:, 2] > 1e-6 * weight) <= 3  # Appendix F


def test_solver_flag_counts_accumulate_per_tick(quadruped):
    """Each tick's contact-solver flags are counted (the node reports them in diagnostics)."""
    info, pm, pd = quadruped
    q = np.array(info["standing_q"])
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip", "noslip_min_norm": True})
    assert ctl.solver_flag_counts == {}
    for _ in range(3):
        out = _standing(ctl, q)
    assert "min_norm" in out.solver_flags
    assert ctl.solver_flag_counts["min_norm"] == 3
    assert all(n <= 3 for n in ctl.solver_flag_counts.values())
    ctl.reset()
    assert ctl.solver_flag_counts == {}
