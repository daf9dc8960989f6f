"""Tests of the bundled robot models (``wbc_dynamics.robots``), Pinocchio as the oracle.

Asserted: every URDF parses with urdf_parser_py and Pinocchio, DoF counts and joint order,
total masses, physically valid inertias and complete joint limits, feet on z = 0 in the
standing poses (1e-9 m), symmetric quadruped feet and loads, and fingertip-sphere / box-face
contact distances in the arm's grasp pose (1e-6 m).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from wbc_dynamics.robots import ROBOT_NAMES, robot_info, robot_path

pin = pytest.importorskip("pinocchio")  # test-only dependency
urdf = pytest.importorskip("urdf_parser_py.urdf")

EXPECTED_NV = {"quadruped": 18, "arm": 11, "box": 6, "small_box": 6, "branched": 16}
EXPECTED_MASS = {"quadruped": 4.8, "arm": 20.7, "box": 0.5, "small_box": 0.1, "branched": 8.3,
                 "humanoid": 50.1}


def load(name: str):
    info = robot_info(name)
    if info["floating_base"]:
        model = pin.buildModelFromUrdf(robot_path(name), pin.JointModelFreeFlyer())
    else:
        model = pin.buildModelFromUrdf(robot_path(name))
    return model, model.createData(), info


def parse(name: str):
    with open(robot_path(name)) as fh:
        return urdf.URDF.from_xml_string(fh.read())


def spheres(name: str):
    """(link, centre in link frame, radius) of every sphere collision element (urdf_parser_py)."""
    out = []
    for link in parse(name).links:
        for col in link.collisions or []:
            if isinstance(col.geometry, urdf.Sphere):
                xyz = np.array(col.origin.xyz) if col.origin is not None else np.zeros(3)
                out.append((link.name, xyz, col.geometry.radius))
    return out


def sphere_centres(model, data, q, name: str, links):
    pin.framesForwardKinematics(model, data, np.asarray(q, float))
    res = {}
    for link, c, r in spheres(name):
        if link in links:
            res[link] = (data.oMf[model.getFrameId(link)].act(c), r)
    return res


def test_names_and_paths():
    assert set(ROBOT_NAMES) == {"quadruped", "arm", "box", "small_box", "branched", "humanoid"}
    for n in ROBOT_NAMES:
        p = robot_path(n)
        assert os.path.isabs(p) and os.path.isfile(p)
    with pytest.raises(ValueError, match="quadruped"):
        robot_path("no_such_robot")
    with pytest.raises(ValueError, match="humanoid"):
        robot_info("no_such_robot")
    info = robot_info("quadruped")
    info["standing_q"][0] = 99.0  # returned dict is a copy
    assert robot_info("quadruped")["standing_q"][0] == 0.0


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_loads_and_is_physical(name):
    model, data, info = load(name)
    u = parse(name)
    nj = len(info["joint_names"])
    assert model.nv == nj + (6 if info["floating_base"] else 0)
    if name in EXPECTED_NV:
        assert model.nv == EXPECTED_NV[name]
    if name == "humanoid":
        assert model.nv >= 36
    # joint order of the core convention (URDF order) == Pinocchio's depth-first order
    first = 2 if info["floating_base"] else 1
    assert list(model.names)[first:] == info["joint_names"]
    movable = [j.name for j in u.joints if j.type != "fixed"]
    assert movable == info["joint_names"]
    # masses (including bodies welded to the fixed world, merged into inertias[0])
    total = sum(model.inertias[i].mass for i in range(model.njoints))
    assert total == pytest.approx(EXPECTED_MASS[name], abs=1e-9)
    assert info["total_mass"] == pytest.approx(total, abs=1e-9)
    # every link with an <inertial>: positive mass, PD inertia obeying the triangle inequality
    for link in u.links:
        if link.inertial is None:
            continue
        i = link.inertial.inertia
        I = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])
        ev = np.sort(np.linalg.eigvalsh(I))
        assert link.inertial.mass > 0, link.name
        assert ev[0] > 0, link.name
        assert ev[0] + ev[1] >= ev[2] * (1 - 1e-12), link.name
    # links with collision geometry carry an explicit <inertial> (otherwise simulators such as
    # MuJoCo derive a mass from the geometry and disagree with the dynamics model)
    for link in u.links:
        if link.collisions:
            assert link.inertial is not None, link.name
    # joint limits: finite positions, positive velocity and effort
    for j in u.joints:
        if j.type == "fixed":
            continue
        assert j.limit is not None, j.name
        assert np.isfinite(j.limit.lower) and j.limit.lower < j.limit.upper, j.name
        assert j.limit.velocity > 0 and j.limit.effort > 0, j.name
    # transmissions for every actuated joint
    if nj:
        assert sorted(t.joints[0].name for t in u.transmissions) == sorted(movable)
    # nominal pose within limits and of the right size
    q = np.asarray(info["standing_q"], float)
    assert q.shape == (model.nq,)
    assert np.all(q >= model.lowerPositionLimit - 1e-12)
    assert np.all(q <= model.upperPositionLimit + 1e-12)
    for link in info["contact_links"]:
        assert model.existFrame(link), link
        assert any(s[0] == link for s in spheres(name)), link


def test_has_massless_frame_links_and_gazebo():
    assert any(lk.inertial is None for lk in parse("arm").links)
    assert any(lk.inertial is None for lk in parse("humanoid").links)
    with open(robot_path("quadruped")) as fh:
        text = fh.read()
    assert text.count("<gazebo") >= 2 and "<ros2_control" not in text


@pytest.mark.parametrize("name", ["quadruped", "humanoid"])
def test_standing_feet_on_ground(name):
    model, data, info = load(name)
    feet = info["foot_links"] if name == "quadruped" else info["foot_contact_links"]
    cs = sphere_centres(model, data, info["standing_q"], name, feet)
    assert sorted(cs) == sorted(feet)
    for link, (c, r) in cs.items():
        assert abs(c[2] - r) < 1e-9, link
    if name == "humanoid":
        # sole boxes flat on the ground too
        pin.framesForwardKinematics(model, data, np.asarray(info["standing_q"]))
        for sole in info["sole_links"]:
            T = data.oMf[model.getFrameId(sole)]
            assert abs(T.translation[2]) < 1e-9
            assert np.allclose(T.rotation, np.eye(3), atol=1e-12)


def test_humanoid_com_over_support_polygon():
    model, data, info = load("humanoid")
    q = np.asarray(info["standing_q"])
    com = pin.centerOfMass(model, data, q)
    cs = sphere_centres(model, data, q, "humanoid", info["foot_contact_links"])
    pts = np.array([c for c, _ in cs.values()])
    assert abs(com[1]) < 1e-12  # left/right symmetric pose
    assert pts[:, 0].min() + 0.02 < com[0] < pts[:, 0].max() - 0.02
    assert 0.7 < com[2] < 1.1 and 0.8 < q[2] < 1.1


def test_quadruped_symmetry_and_load():
    model, data, info = load("quadruped")
    q = np.asarray(info["standing_q"])
    cs = sphere_centres(model, data, q, "quadruped", info["foot_links"])
    p = {k[:2]: v[0] for k, v in cs.items()}
    np.testing.assert_allclose(p["LF"] * [1, -1, 1], p["RF"], atol=1e-12)
    np.testing.assert_allclose(p["LF"] * [-1, 1, 1], p["LH"], atol=1e-12)
    np.testing.assert_allclose(p["LF"] * [-1, -1, 1], p["RH"], atol=1e-12)
    com = pin.centerOfMass(model, data, q)
    np.testing.assert_allclose(com[:2], 0.0, atol=1e-12)
    assert 0.14 < q[2] < 0.15 and 0.15 < q[2] + 0.025 < 0.18  # ~16 cm tall
    # static vertical foot forces: min-norm solution of the base-wrench balance
    #   sum_i J_i(base rows)^T f_i = g_base, f_i = (0, 0, fz_i)
    g = pin.computeGeneralizedGravity(model, data, q)
    pin.computeJointJacobians(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    cols = []
    for leg in ("LF", "LH", "RF", "RH"):
        J = pin.getFrameJacobian(model, data, model.getFrameId(f"{leg}_foot"),
                                 pin.LOCAL_WORLD_ALIGNED)
        cols.append(J[2, :6])
    A = np.array(cols).T
    fz = np.linalg.lstsq(A, g[:6], rcond=None)[0]
    np.testing.assert_allclose(A @ fz, g[:6], atol=1e-9)
    np.testing.assert_allclose(fz, 4.8 * 9.81 / 4, rtol=1e-9)


def box_distance(p_box: np.ndarray, half: np.ndarray) -> float:
    """Signed distance of a point (box frame) to an axis-aligned box."""
    d = np.abs(p_box) - half
    outside = np.linalg.norm(np.maximum(d, 0.0))
    return float(outside + min(d.max(), 0.0))


def test_arm_grasp_touches_box():
    model, data, info = load("arm")
    q = np.asarray(info["grasp_q"], float)
    assert q.shape == (11,)
    assert np.all(q >= model.lowerPositionLimit) and np.all(q <= model.upperPositionLimit)
    x, y, z, qx, qy, qz, qw = info["box_pose"]
    assert abs(qx * qx + qy * qy + qz * qz + qw * qw - 1.0) < 1e-12
    T_box = pin.XYZQUATToSE3(np.array([x, y, z, qx, qy, qz, qw]))
    bi = robot_info("box")
    half = np.asarray(bi["size"]) / 2
    assert np.allclose(half * 2, info["box_size"])
    cs = sphere_centres(model, data, q, "arm", info["fingertip_links"])
    assert len(cs) == 4
    sides = []
    for link, (c, r) in cs.items():
        pb = T_box.actInv(c)
        assert abs(box_distance(pb, half) - r) < 1e-6, link
        # the touching face is a +-y face and the contact point lies inside that face
        assert abs(abs(pb[1]) - half[1] - r) < 1e-6
        assert np.all(np.abs(pb[[0, 2]]) < half[[0, 2]] - r)
        sides.append(np.sign(pb[1]))
    assert sorted(sides) == [-1, -1, 1, 1]
    # the palm collision box does not penetrate the grasped box (clearance > 0)
    pin.framesForwardKinematics(model, data, q)
    palm_top_centre = data.oMf[model.getFrameId("hand")].act(np.array([0.0, 0.0, 0.03]))
    assert box_distance(T_box.actInv(palm_top_centre), half) > 0.0
    # the box sits above the floor
    assert z - half[2] > 0.1


def test_branched_has_both_joint_types():
    model, data, info = load("branched")
    u = parse("branched")
    types = {j.name: j.type for j in u.joints}
    assert {types[n] for n in info["joint_names"]} == {"revolute", "prismatic"}
    assert sorted(info["prismatic_joints"] + info["revolute_joints"]) == sorted(
        info["joint_names"])
    # branched: the base has 3 child joints, and some other body has 2
    parents = [model.parents[i] for i in range(2, model.njoints)]
    assert parents.count(1) == 3
    assert any(parents.count(k) == 2 for k in range(2, model.njoints))
    q = np.asarray(info["perturbed_q"])
    assert np.all(q[7:] == 0.3)
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert np.linalg.eigvalsh(M).min() > 0
