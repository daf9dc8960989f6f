"""The dynamics core against Pinocchio (an independent implementation, test-only dependency).

Every bundled robot, fixed and floating base, 100 random states each: rnea, CRBA, M^-1, ABA,
frame placements, Jacobians (world-aligned and local) and J̇v agree to 1e-9 relative.
"""

import numpy as np
import pytest

from wbc_dynamics import RobotModel
from wbc_dynamics.robots import robot_path

pin = pytest.importorskip("pinocchio", reason="pinocchio (pip install pin) is the test oracle")

ROBOTS = ["quadruped", "arm", "box", "branched", "humanoid"]
CASES = [(name, fb) for name in ROBOTS for fb in (False, True) if not (name == "box" and not fb)]
N_STATES = 100
RTOL = 1e-9


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.fixture(
    scope="module", params=CASES, ids=[f"{n}-{'floating' if f else 'fixed'}" for n, f in CASES]
)
def pair(request):
    name, fb = request.param
    model = RobotModel.from_urdf(robot_path(name), floating_base=fb)
    if fb:
        pmodel = pin.buildModelFromUrdf(robot_path(name), pin.JointModelFreeFlyer())
    else:
        pmodel = pin.buildModelFromUrdf(robot_path(name))
    return model, pmodel, pmodel.createData()


def _random_states(model, pmodel, seed):
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(pmodel.lowerPositionLimit), pmodel.lowerPositionLimit, -np.pi)
    hi = np.where(np.isfinite(pmodel.upperPositionLimit), pmodel.upperPositionLimit, np.pi)
    for _ in range(N_STATES):
        q = pin.randomConfiguration(pmodel, np.maximum(lo, -3.0), np.minimum(hi, 3.0))
        if model.floating_base:
            q[:3] = rng.normal(size=3)
        yield q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def test_joint_order_and_sizes(pair):
    model, pmodel, _ = pair
    assert (model.nq, model.nv) == (pmodel.nq, pmodel.nv)
    assert model.joint_names == [n for n in pmodel.names[1:] if n != "root_joint"]
    assert model.total_mass == pytest.approx(sum(i.mass for i in pmodel.inertias), rel=1e-12)


def test_dynamics_match_pinocchio(pair):
    model, pmodel, pdata = pair
    worst = {"rnea": 0.0, "crba": 0.0, "minverse": 0.0, "aba": 0.0}
    for q, v, a in _random_states(model, pmodel, 1):
        worst["rnea"] = max(
            worst["rnea"], _rel(model.rnea(q, v, a), pin.rnea(pmodel, pdata, q, v, a))
        )
        Mp = pin.crba(pmodel, pdata, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        worst["crba"] = max(worst["crba"], _rel(model.mass_matrix(q), Mp))
        Mi_p = pin.computeMinverse(pmodel, pdata, q)
        Mi_p = np.triu(Mi_p) + np.triu(Mi_p, 1).T
        worst["minverse"] = max(worst["minverse"], _rel(model.minverse(q), Mi_p))
        worst["aba"] = max(worst["aba"], _rel(model.aba(q, v, a), pin.aba(pmodel, pdata, q, v, a)))
    assert max(worst.values()) < RTOL, worst


def test_kinematics_match_pinocchio(pair):
    model, pmodel, pdata = pair
    worst = {"placement": 0.0, "J world": 0.0, "J local": 0.0, "Jdot v": 0.0, "Jdot v local": 0.0}
    links = model.link_names
    for k, (q, v, _) in enumerate(_random_states(model, pmodel, 2)):
        link = links[k % len(links)]
        fid = pmodel.getFrameId(link)
        pin.forwardKinematics(pmodel, pdata, q, v, np.zeros(model.nv))
        pin.updateFramePlacements(pmodel, pdata)
        worst["placement"] = max(
            worst["placement"], _rel(model.frame_placement(q, link), pdata.oMf[fid].homogeneous)
        )
        for frame, ref, key in (
            ("world", pin.LOCAL_WORLD_ALIGNED, "J world"),
            ("local", pin.LOCAL, "J local"),
        ):
            Jp = pin.computeFrameJacobian(pmodel, pdata, q, fid, ref)
            worst[key] = max(worst[key], _rel(model.jacobian(q, link, frame=frame), Jp))
        pin.forwardKinematics(pmodel, pdata, q, v, np.zeros(model.nv))
        acc = pin.getFrameClassicalAcceleration(pmodel, pdata, fid, pin.LOCAL_WORLD_ALIGNED).vector
        worst["Jdot v"] = max(worst["Jdot v"], _rel(model.jacobian_dot_times_v(q, v, link), acc))
        acc_l = pin.getFrameClassicalAcceleration(pmodel, pdata, fid, pin.LOCAL).vector
        worst["Jdot v local"] = max(
            worst["Jdot v local"],
            _rel(model.jacobian_dot_times_v(q, v, link, frame="local"), acc_l),
        )
    assert max(worst.values()) < RTOL, worst


def test_point_jacobian_with_offset_matches_pinocchio(pair):
    """A point offset from the link origin: Jacobian of a frame added at that point in Pinocchio."""
    model, pmodel, _ = pair
    link = model.link_names[-1]
    offset = np.array([0.03, -0.02, 0.05])
    parent_frame = pmodel.frames[pmodel.getFrameId(link)]
    placement = parent_frame.placement * pin.SE3(np.eye(3), offset)
    pm2 = pin.Model(pmodel)
    fid = pm2.addFrame(
        pin.Frame("probe", parent_frame.parentJoint, placement, pin.FrameType.OP_FRAME)
    )
    pd2 = pm2.createData()
    for q, v, _ in list(_random_states(model, pmodel, 3))[:20]:
        Jp = pin.computeFrameJacobian(pm2, pd2, q, fid, pin.LOCAL_WORLD_ALIGNED)
        assert _rel(model.jacobian(q, link, point=offset), Jp) < RTOL
        pin.forwardKinematics(pm2, pd2, q, v, np.zeros(model.nv))
        acc = pin.getFrameClassicalAcceleration(pm2, pd2, fid, pin.LOCAL_WORLD_ALIGNED).vector
        assert _rel(model.jacobian_dot_times_v(q, v, link, point=offset), acc) < RTOL
        pos, Jl, bias = model.points_kinematics(q, v, [link], offset[None])
        assert _rel(Jl[0], Jp[:3]) < RTOL and _rel(bias[0], acc[:3]) < RTOL
        pin.updateFramePlacements(pm2, pd2)
        assert _rel(pos[0], pd2.oMf[fid].translation) < RTOL


def test_external_forces_match_pinocchio(pair):
    model, pmodel, pdata = pair
    rng = np.random.default_rng(4)
    link = model.link_names[-1]
    fid = pmodel.getFrameId(link)
    frame = pmodel.frames[fid]
    for q, v, a in list(_random_states(model, pmodel, 5))[:20]:
        w = rng.normal(size=6)
        fext = [pin.Force.Zero() for _ in range(pmodel.njoints)]
        # a wrench in the link frame, moved to the parent joint's frame
        fext[frame.parentJoint] = frame.placement.act(pin.Force(w[:3], w[3:]))
        if frame.parentJoint == 0:
            continue  # a wrench on the fixed world does nothing
        tau_ref = pin.rnea(pmodel, pdata, q, v, a, fext)
        assert _rel(model.rnea(q, v, a, f_ext={link: w}), tau_ref) < RTOL
        ddq_ref = pin.aba(pmodel, pdata, q, v, a, fext)
        assert _rel(model.aba(q, v, a, f_ext={link: w}), ddq_ref) < RTOL


def _com_cases():
    """Bundled floating-base robots and three real ones (example-robot-data)."""
    out = [(robot_path(n), n) for n in ROBOTS]
    try:
        from wbc_dynamics.description import package_roots, resolve_resource

        for uri in ("package://example-robot-data/robots/g1_description/urdf/"
                    "g1_29dof_rev_1_0.urdf",
                    "package://example-robot-data/robots/anymal_c_simple_description/urdf/"
                    "anymal.urdf",
                    "package://example-robot-data/robots/talos_data/robots/"
                    "talos_reduced_box.urdf"):
            out.append((resolve_resource(uri, None, package_roots()), uri.split("/")[-1]))
    except Exception:  # noqa: BLE001 -- example-robot-data missing: the bundled ones only
        pass
    return out


@pytest.mark.parametrize("path,name", _com_cases(), ids=[n for _, n in _com_cases()])
def test_center_of_mass_matches_pinocchio(path, name):
    """RobotModel.center_of_mass (read off the base rows of M) against Pinocchio's
    centerOfMass / jacobianCenterOfMass, and the CoM acceleration identity
    c_ddot = R (M[0:3] a + (h - g)[0:3]) / m against Pinocchio's acom: 20 random states."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobotModel.from_urdf(path, floating_base=True)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pdata = pmodel.createData()
    pnames = [n for n in pmodel.names[1:] if n != "root_joint"]
    assert sorted(model.joint_names) == sorted(pnames) and model.nq == model.nv + 1
    # Pinocchio orders the joints depth-first, the core as the URDF lists them: map by name
    # (every joint here has one coordinate)
    qi = np.r_[0:7, [7 + pnames.index(n) for n in model.joint_names]].astype(int)
    vi = np.r_[0:6, [6 + pnames.index(n) for n in model.joint_names]].astype(int)
    worst = 0.0
    rng = np.random.default_rng(3)
    for _ in range(20):
        qp = pin.randomConfiguration(pmodel, -np.ones(pmodel.nq), np.ones(pmodel.nq))
        qp[:3] = rng.normal(size=3)
        vp, ap = rng.normal(size=model.nv), rng.normal(size=model.nv)
        q, v, a = qp[qi], vp[vi], ap[vi]
        c, cd, J = model.center_of_mass(q, v)
        pin.centerOfMass(pmodel, pdata, qp, vp, ap)
        Jp = pin.jacobianCenterOfMass(pmodel, pdata, qp)[:, vi]
        M = model.mass_matrix(q)
        R = model.frame_placement(q, model.root_link)[:3, :3]
        cv = model.nonlinear_effects(q, v) - model.gravity_torques(q)
        acc = R @ (M[0:3] @ a + cv[0:3]) / model.total_mass
        worst = max(worst, _rel(c, pdata.com[0]), _rel(cd, pdata.vcom[0]), _rel(J, Jp),
                    _rel(acc, pdata.acom[0]))
    assert worst < RTOL, worst
    with pytest.raises(ValueError, match="floating-base"):
        RobotModel.from_urdf(robot_path("arm")).center_of_mass(
            np.zeros(RobotModel.from_urdf(robot_path("arm")).nq))
