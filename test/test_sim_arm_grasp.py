"""Arm grasping the box (Zapolsky & Drumwright, Secs. 1.5, 7.2.2, 8.4.1): the contact problem the
closed loop poses, the internal grasp force, and the closed-loop hold under ``qp_coulomb``."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from wbc_dynamics.contact.grasp import internal_force_torques, internal_grasp_forces
from wbc_dynamics.sim.closed_loop import ClosedLoop, LoopConfig, run


@pytest.fixture(scope="module")
def grasp():
    """The settled grasp (fingers closed on the box, box released) and its contact problem."""
    loop = ClosedLoop(LoopConfig(robot="arm", controller="qp_coulomb", reference="sinusoid"))
    q, v = loop.plant.get_state()
    bq, bv = loop.plant.free_body_state("box")
    # the loop's controller is the product's WholeBodyController with the box as its object
    cm = loop.ctl.ctl._contact_model
    prob = cm.build(q, v, np.zeros(q.shape[0]), body_q=[bq], body_v=[bv])
    return loop, q, v, bq, bv, prob


def _rot(quat_xyzw):
    x, y, z, w = quat_xyzw
    R = np.empty(9)
    mujoco.mju_quat2Mat(R, np.array([w, x, y, z]))
    return R.reshape(3, 3)


def test_box_rows_of_the_problem_match_an_independent_computation(grasp):
    loop, q, v, bq, bv, prob = grasp
    assert prob.nc == 4 and all(cid[2] == "box" for cid in prob.contact_ids)
    R = _rot(bq[3:7])
    m = loop.box_mass
    # box gravity in h (body-frame free-flyer, box at rest): h_lin = -R^T m g, no moment
    g = np.array([0.0, 0.0, -9.81])
    np.testing.assert_allclose(prob.h[prob.free][:3], -R.T @ (m * g), atol=1e-9)
    np.testing.assert_allclose(prob.h[prob.free][3:], 0.0, atol=1e-9)
    # box velocity: body-frame linear velocity = R^T (world velocity from MuJoCo's qvel)
    jid = mujoco.mj_name2id(loop.plant.model, mujoco.mjtObj.mjOBJ_JOINT, "box__free")
    da = loop.plant.model.jnt_dofadr[jid]
    np.testing.assert_allclose(bv[:3], R.T @ loop.plant.data.qvel[da:da + 3], atol=1e-12)
    np.testing.assert_allclose(bv[3:], loop.plant.data.qvel[da + 3:da + 6], atol=1e-12)
    # the problem's v = measured [v; box twist] + the passive impact's velocity change
    dv = np.zeros(prob.nv)
    if prob.impact_impulses is not None:
        c = prob.impact_impulses
        dv = prob.Minv @ (prob.N.T @ c[:, 0] + prob.S.T @ c[:, 1] + prob.T.T @ c[:, 2])
    np.testing.assert_allclose(prob.v, np.concatenate([v, bv]) + dv, atol=1e-9)
    # normals: the box face normal (largest box-axis component of tip - box centre) in world,
    # pointing from the box into the fingertip link
    for i, (link, _, _) in enumerate(prob.contact_ids):
        tip, _ = loop.plant.body_pose(link)
        d = R.T @ (tip - bq[:3])
        k = int(np.argmax(np.abs(d) / (0.5 * np.asarray(loop.info["box_size"]))))
        face = np.zeros(3)
        face[k] = np.sign(d[k])
        np.testing.assert_allclose(prob.frames[i][:, 0], R @ face, atol=1e-9)
    # relative normal velocity rows = n . (v_tip_point - v_box_point), MuJoCo's velocities
    assert np.max(np.abs(v)) > 1e-4  # the settled grasp is not exactly at rest
    res = np.zeros(6)
    for i, (link, _, _) in enumerate(prob.contact_ids):
        p = prob.points[i]
        vel = []
        for body in (link, "box"):
            bid = mujoco.mj_name2id(loop.plant.model, mujoco.mjtObj.mjOBJ_BODY, body)
            mujoco.mj_objectVelocity(loop.plant.model, loop.plant.data,
                                     mujoco.mjtObj.mjOBJ_BODY, bid, res, 0)
            x = loop.plant.data.xipos[bid]  # mjOBJ_BODY: velocity at the inertial frame
            vel.append(res[3:] + np.cross(res[:3], p - x))
        n = prob.frames[i][:, 0]
        assert abs(prob.N[i] @ np.concatenate([v, bv]) - n @ (vel[0] - vel[1])) < 1e-9


def test_internal_grasp_forces_exert_no_net_wrench_on_the_box(grasp):
    _, _, _, bq, _, prob = grasp
    f = internal_grasp_forces(prob, 20.0)
    assert f is not None
    # independent check in world axes: forces on the box are -R_i f_i at the contact points
    F, M = np.zeros(3), np.zeros(3)
    for i in range(prob.nc):
        fw = -(prob.frames[i] @ f[i])
        F += fw
        M += np.cross(prob.points[i] - bq[:3], fw)
    assert np.linalg.norm(F) < 1e-8 and np.linalg.norm(M) < 1e-8
    # the symmetric grasp squeezes every fingertip with (close to) the requested 20 N
    np.testing.assert_allclose(f[:, 0], 20.0, rtol=0.02)
    # torques: -(J^T f)[actuated] = sum over contacts of the tip Jacobian transpose
    tau = internal_force_torques(prob, f)
    assert tau.shape == (prob.nu,) and np.all(np.isfinite(tau))
    g = prob.N.T @ f[:, 0] + prob.S.T @ f[:, 1] + prob.T.T @ f[:, 2]
    np.testing.assert_allclose(g[prob.free], 0.0, atol=1e-8)  # box: zero generalized force
    # a single touching fingertip cannot squeeze
    sub = prob.subset([0])
    assert internal_grasp_forces(sub, 20.0) is None


def test_grasp_force_rejects_bad_input():
    with pytest.raises(ValueError, match="grasp_force"):
        ClosedLoop(LoopConfig(robot="arm", controller="qp_coulomb", reference="sinusoid",
                              grasp_force=float("nan")))


def test_without_internal_force_qp_coulomb_drops_the_box():
    """The cause: the solver's grasp has (nearly) no squeeze; the box slips out in < 1 s."""
    r = run(LoopConfig(robot="arm", controller="qp_coulomb", reference="sinusoid",
                       duration=1.0))
    assert r.failed and "dropped" in r.failure


#: friction -> (slip bound [m], arm joint error bound [rad]). Measured over the settle time
#: 0.499 / 0.5 / 0.501 s (the same grasp, 1 ms apart). High friction (mu = 10) is sensitive,
#: even to rounding-level changes of M^-1 / RNEA: slip 0.91-1.00 cm, arm error 0.024-0.026 rad
#: in one build, 1.18 / 1.42 / 2.78 cm, 0.023 / 0.031 / 0.055 rad in another (held in every
#: case: a drop is 5 cm). mu = 1 is not: slip 0.91-0.92 cm, arm error 0.027-0.029 rad.
#: Bounds: the measured worst + ~25 %.
HOLD_BOUNDS = {"high": (0.035, 0.07), 1.0: (0.0115, 0.036)}


@pytest.mark.parametrize("friction", ["high", 1.0])
def test_qp_coulomb_with_grasp_force_holds_the_box_for_3_s(friction):
    """Measured (high / mu = 1, settle 0.5 s): slip 0.91 / 0.92 cm; sum normal predicted 119.4 /
    177.9 N vs simulated 108.2 / 162.6 N; arm joint error 0.024 / 0.028 rad (see HOLD_BOUNDS)."""
    r = run(LoopConfig(robot="arm", controller="qp_coulomb", reference="sinusoid",
                       duration=3.0, friction=friction, grasp_force=20.0,
                       hold_touching_fingers=True))
    m = r.metrics()
    slip_bound, error_bound = HOLD_BOUNDS[friction]
    assert not r.failed, r.failure
    assert m["ticks"] == 3000
    assert m["box_slip_max"] < slip_bound  # dropped = 5 cm
    # predicted vs simulated summed normal force: means within 20 %
    assert abs(m["normal_pred_mean"] - m["normal_sim_mean"]) < 0.2 * m["normal_sim_mean"]
    assert m["normal_sim_mean"] > 60.0  # the squeeze is real in the simulator (4 x 20 N)
    # arm joints track the 3 Hz sinusoid (PID: 0.06 rad mean over all joints)
    assert np.mean(np.abs(r.q[:, :7] - r.q_des[:, :7])) < error_bound
