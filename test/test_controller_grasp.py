"""A grasped object in the controller: ``object_urdf``, ``grasp_force``,
``grasp_hold`` and ``set_object_state`` -- the same squeeze and finger hold as the in-process arm
+ box loop (Zapolsky & Drumwright, Secs. 1.5, 7.2.2), as a controller option.

State: the settled grasp of the bundled arm (fingertips closed on the box, box released) from
``ClosedLoop``; the reference is the loop's sinusoid at t = 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wbc_dynamics.controller import WholeBodyController
from wbc_dynamics.robots import robot_info
from wbc_dynamics.sim.closed_loop import GAINS, ClosedLoop, LoopConfig

INFO = robot_info("arm")


@pytest.fixture(scope="module")
def grasp():
    loop = ClosedLoop(LoopConfig(robot="arm", controller="qp_coulomb", reference="sinusoid",
                                 grasp_force=20.0, hold_touching_fingers=True))
    q, v = loop.plant.get_state()
    bq, bv = loop.plant.free_body_state("box")
    return loop, q, v, bq, bv, loop.ref.sample(0.0)


def _controller(loop, **over):
    cfg = {"robot": "arm", "method": "qp_coulomb", "contact_links": INFO["fingertip_links"],
           "object_urdf": "box", "object_friction": loop.sim_mu, "kp": [GAINS["arm"]["kp"]],
           "kd": [GAINS["arm"]["kd"]], "effort_limits": list(loop.limit), "phi_deadband": 1e-4,
           "passive_impact": True, "separation_tolerance": 0.05, "state_timeout": 1.0,
           "grasp_force": 20.0, "grasp_hold": True, **over}
    return WholeBodyController(cfg)


def _tick(ctl, q, v, bq, bv, ref, now=0.0):
    q_des, qd_des, qdd_des = ref
    ctl.set_joint_state(q, v, now)
    ctl.set_object_state(bq[:3], bq[3:7], bv[:3], bv[3:], now)
    ctl.set_reference(qdd_des, now, position=q_des, velocity=qd_des)
    return ctl.update(now)


def test_controller_grasp_equals_the_closed_loop_grasp(grasp):
    """A user's configuration (this dict: what docs/node.md shows) gives the in-process loop's
    torques for the same state: the loop runs the same controller, configured by the loop."""
    loop, q, v, bq, bv, ref = grasp
    expected, _, _, flags = loop.ctl(0.0, q, v, ref, loop.plant)
    assert "grasp_force" in flags
    out = _tick(_controller(loop), q, v, bq, bv, ref)
    assert out.mode == "control" and "grasp_force" in out.solver_flags
    np.testing.assert_allclose(out.tau, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_squeeze_adds_internal_forces_only(grasp):
    """With grasp_force the predicted contact forces change by internal forces: the same net
    force and moment on the box, and about grasp_force more normal force at every touching tip."""
    loop, q, v, bq, bv, ref = grasp
    plain = _tick(_controller(loop, grasp_force=0.0), q, v, bq, bv, ref)
    squeeze = _tick(_controller(loop), q, v, bq, bv, ref)
    assert plain.contact_ids == squeeze.contact_ids and len(plain.contact_ids) == 4
    c = bq[:3]

    def wrench(out):
        f = out.contact_forces
        return np.r_[f.sum(axis=0), np.cross(out.contact_points - c, f).sum(axis=0)]

    np.testing.assert_allclose(wrench(squeeze), wrench(plain), atol=1e-6)
    # every tip is pushed back harder by the box: contact_forces act on the robot, so the squeeze
    # adds force pointing away from the box centre (20 N along the face normal)
    for f0, f1, p in zip(plain.contact_forces, squeeze.contact_forces, squeeze.contact_points,
                         strict=True):
        outward = (p - c) / np.linalg.norm(p - c)
        assert (f1 - f0) @ outward > 5.0
    assert not np.allclose(squeeze.tau, plain.tau)


def test_hold_removes_position_feedback_of_touching_fingers(grasp):
    """grasp_hold: a finger touching the box is commanded qdd = qdd_ref - kd qd (no kp term)."""
    loop, q, v, bq, bv, ref = grasp
    q_des = ref[0] + 0.05  # position error on every joint
    held = _tick(_controller(loop), q, v, bq, bv, (q_des, ref[1], ref[2]))
    free = _tick(_controller(loop, grasp_hold=False), q, v, bq, bv, (q_des, ref[1], ref[2]))
    kd = GAINS["arm"]["kd"]
    names = list(INFO["joint_names"])
    for j in INFO["finger_joints"]:
        i = names.index(j)
        assert held.qdd_cmd[i] == pytest.approx(ref[2][i] - kd * v[i], abs=1e-12)
        assert abs(free.qdd_cmd[i] - held.qdd_cmd[i]) > 1.0  # the kp * 0.05 term is gone
    arm = [names.index(j) for j in names if j not in INFO["finger_joints"]]
    np.testing.assert_array_equal(held.qdd_cmd[arm], free.qdd_cmd[arm])


def test_object_state_is_an_input_with_a_timeout_and_validation(grasp):
    loop, q, v, bq, bv, ref = grasp
    ctl = _controller(loop, state_timeout=0.05)
    assert ctl.has_object and _tick(ctl, q, v, bq, bv, ref).mode == "control"
    # joint state and reference fresh, object state 0.1 s old: the stale-state safe command
    ctl.set_joint_state(q, v, 0.1)
    ctl.set_reference(ref[2], 0.1, position=ref[0], velocity=ref[1])
    out = ctl.update(0.1)
    assert out.mode == "safe_stale_state" and np.all(out.tau == 0.0)
    assert ctl.input_ages(0.1)["object"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="object_state.orientation: quaternion norm"):
        ctl.set_object_state(bq[:3], 2.0 * bq[3:7], bv[:3], bv[3:], 0.2)
    with pytest.raises(ValueError, match="object_state.linear_velocity: contains a non-finite"):
        ctl.set_object_state(bq[:3], bq[3:7], [math.nan, 0, 0], bv[3:], 0.2)
    # without an object: no object input, and the grasp options are configuration errors
    plain = WholeBodyController({"robot": "arm"})
    assert not plain.has_object
    with pytest.raises(ValueError, match="no object configured"):
        plain.set_object_state(bq[:3], bq[3:7], bv[:3], bv[3:], 0.0)
    with pytest.raises(ValueError, match="grasp_force/grasp_hold: need an object"):
        WholeBodyController({"robot": "arm", "grasp_force": 10.0})
    with pytest.raises(ValueError, match="grasp_force: must be finite"):
        _controller(loop, grasp_force=-1.0)
    with pytest.raises(ValueError, match="object_urdf: file not found"):
        _controller(loop, object_urdf="/nonexistent/box.urdf")
    with pytest.raises(ValueError, match="object_urdf: FreeBody"):
        _controller(loop, object_urdf="arm")  # not a single free body
