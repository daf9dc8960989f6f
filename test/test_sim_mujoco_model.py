"""The MuJoCo plant equals the controller's rigid-body model (so closed-loop results mean a thing).

MuJoCo's joint-space inertia and bias forces, mapped from its free-joint convention (world-frame
linear velocity, w-first quaternion) into the core's (base-frame twist, xyzw quaternion), must equal
Pinocchio's CRBA / nonLinearEffects -- an independent implementation -- and the core's
``mass_matrix`` / ``nonlinear_effects`` to 1e-9 relative at random states of every bundled robot.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
pin = pytest.importorskip("pinocchio")

from wbc_dynamics.robots import robot_info, robot_path  # noqa: E402
from wbc_dynamics.sim.mujoco_model import (  # noqa: E402
    FreeBody,
    GroundOptions,
    MujocoPlant,
    build_mjcf,
    parse_urdf,
)

ROBOTS = ["quadruped", "arm", "humanoid", "branched"]
N_STATES = 25


def _pin_model(name: str):
    fb = robot_info(name)["floating_base"]
    path = robot_path(name)
    pm = (
        pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        if fb
        else pin.buildModelFromUrdf(path)
    )
    return pm, pm.createData()


def _random_state(pm, rng):
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    return q, rng.normal(size=pm.nv)


def _rel(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("name", ROBOTS)
def test_mass_matrix_and_bias_match_pinocchio(name):
    info = robot_info(name)
    pm, pd = _pin_model(name)
    first = 2 if info["floating_base"] else 1
    pin_joints = [pm.names[i] for i in range(first, pm.njoints)]
    # a scrambled joint order checks the plant's name-based reordering too
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(pin_joints))
    order = [pin_joints[i] for i in perm]
    plant = MujocoPlant(robot_path(name), info["floating_base"], joint_order=order)
    nb = 7 if info["floating_base"] else 0
    nvb = 6 if info["floating_base"] else 0
    qidx = np.concatenate([np.arange(nb), nb + perm]).astype(int)
    vidx = np.concatenate([np.arange(nvb), nvb + perm]).astype(int)
    worst_M = worst_h = 0.0
    for _ in range(N_STATES):
        q, v = _random_state(pm, rng)
        plant.set_state(q[qidx], v[vidx])
        q2, v2 = plant.get_state()
        np.testing.assert_allclose(q2, q[qidx], atol=1e-12)
        np.testing.assert_allclose(v2, v[vidx], atol=1e-12)
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        hp = pin.nonLinearEffects(pm, pd, q, v)
        worst_M = max(worst_M, _rel(plant.mass_matrix(), Mp[np.ix_(vidx, vidx)]))
        worst_h = max(worst_h, _rel(plant.nonlinear_effects(), hp[vidx]))
    assert worst_M < 1e-9, f"{name}: mass matrix differs by {worst_M:.2e}"
    assert worst_h < 1e-9, f"{name}: bias forces differ by {worst_h:.2e}"


@pytest.mark.parametrize("name", ROBOTS)
def test_mass_matrix_and_bias_match_core(name):
    from wbc_dynamics.model import RobotModel

    info = robot_info(name)
    m = RobotModel.from_urdf(robot_path(name), floating_base=info["floating_base"])
    plant = MujocoPlant(robot_path(name), info["floating_base"], joint_order=m.joint_names)
    pm, _ = _pin_model(name)
    rng = np.random.default_rng(2)
    for _ in range(N_STATES):
        q, v = _random_state(pm, rng)  # pinocchio's and the core's conventions coincide
        if info["floating_base"]:
            q[3:7] /= np.linalg.norm(q[3:7])
        plant.set_state(q, v)
        assert _rel(plant.mass_matrix(), m.mass_matrix(q)) < 1e-9
        assert _rel(plant.nonlinear_effects(), m.nonlinear_effects(q, v)) < 1e-9


def test_free_fall_matches_gravity_and_ground_reaction_matches_weight():
    """A free box falls at g, then rests with ground normal force = m g (contact sign/units)."""
    box = FreeBody("box", (0.1, 0.1, 0.1), 0.5, pos=(2.0, 2.0, 1.0))
    plant = MujocoPlant(
        robot_path("arm"), False, free_bodies=(box,), ground=GroundOptions(height=-2.0)
    )
    plant.step(np.zeros(plant.n_joints), n=100)
    qb, vb = plant.free_body_state("box")
    t = plant.time
    assert math.isclose(qb[2], 1.0 - 0.5 * 9.81 * t * t, rel_tol=0, abs_tol=1e-3)
    plant.set_free_body_state("box", np.array([2.0, 2.0, -1.95, 0, 0, 0, 1.0]))
    plant.step(np.zeros(plant.n_joints), n=800)
    # arm hangs freely (zero torque) and never touches the ground at z = -2
    f = [c for c in plant.contacts() if c[0] == "box" and c[1] == "ground"]
    fz = sum(c[3][2] for c in f)
    assert fz == pytest.approx(0.5 * 9.81, rel=1e-3)
    assert plant.total_normal_force() == pytest.approx(0.5 * 9.81, rel=1e-3)


def test_unresolvable_mesh_is_skipped_with_one_warning_and_bad_joint_is_named():
    urdf = """<robot name="r"><link name="a"><inertial><mass value="1"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><geometry><mesh filename="package://no_such_pkg/meshes/a.dae"/></geometry>
      </collision><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
      <link name="b"><inertial><mass value="1"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
      <limit effort="3" lower="-1" upper="1" velocity="1"/></joint>
      <transmission name="t"><type>x</type></transmission><gazebo/></robot>"""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        xml = build_mjcf(urdf, floating_base=True)
    assert len(rec) == 1 and "no_such_pkg" in str(rec[0].message)
    model = mujoco.MjModel.from_xml_string(xml)
    assert model.ngeom == 2  # ground + the sphere
    assert model.actuator_ctrlrange[0].tolist() == [-3.0, 3.0]
    with pytest.raises(ValueError, match="'j'"):
        parse_urdf(urdf.replace('type="revolute"', 'type="planar"'))
    with pytest.raises(ValueError, match="'j'.*'zz'"):
        parse_urdf(urdf.replace('<child link="b"/>', '<child link="zz"/>'))
    with pytest.raises(ValueError, match="friction"):
        _ = GroundOptions(friction="medium").mu


def test_torques_are_clamped_to_effort_limits():
    info = robot_info("quadruped")
    plant = MujocoPlant(robot_path("quadruped"), True)
    plant.set_state(np.array(info["standing_q"]), np.zeros(18))
    plant.step(np.full(12, 1e6))
    np.testing.assert_allclose(plant.applied_torques(), plant.effort_limit)
    assert np.all(np.isfinite(plant.effort_limit))


INCONSISTENT_URDF = """<robot name="r"><link name="a"><inertial><mass value="1"/>
  <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0 0.1"/><mass value="1"/>
  <inertia ixx="1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><mass value="1"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
  <limit effort="3" lower="-1" upper="1" velocity="1"/><dynamics damping="0.7" friction="0.2"/>
  </joint>
  <joint name="k" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
  <mimic joint="j" multiplier="-2" offset="0.1"/></joint></robot>"""


def test_plant_keeps_joint_dynamics_fixes_inertias_once_and_couples_mimic():
    from wbc_dynamics.description import parse_urdf

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        description = parse_urdf(INCONSISTENT_URDF)  # warns about link 'b' (as given)
        plant = MujocoPlant(description, floating_base=False)
    plant_notes = [str(w.message) for w in rec if "mujoco_model" in str(w.message)]
    assert len(plant_notes) == 1 and "'b'" in plant_notes[0], plant_notes
    m = plant.model
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "j")
    assert m.dof_damping[m.jnt_dofadr[j]] == 0.7
    assert m.dof_frictionloss[m.jnt_dofadr[j]] == 0.2
    # the raised moments satisfy the triangle inequality; the consistent link is untouched
    b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "b")
    i0, i1, i2 = sorted(m.body_inertia[b])
    assert i0 + i1 >= i2 and i2 == pytest.approx(1.0)
    c = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "c")
    np.testing.assert_allclose(m.body_inertia[c], [0.01] * 3, rtol=1e-12)
    # joint_dynamics=False: frictionless, undamped (the paper's experiments)
    bare = MujocoPlant(description, floating_base=False, joint_dynamics=False)
    assert not np.any(bare.model.dof_damping) and not np.any(bare.model.dof_frictionloss)
    # mimic=True: k = -2 j + 0.1 is held by a joint equality constraint
    coupled = MujocoPlant(description, floating_base=False, mimic=True, joint_dynamics=False)
    assert coupled.model.neq == 1
    coupled.set_state(np.array([0.3, -0.5]), np.zeros(2))
    coupled.step(np.zeros(2), 2000)
    q, _ = coupled.get_state()
    assert q[1] == pytest.approx(-2.0 * q[0] + 0.1, abs=2e-3)


def test_long_chains_build_or_are_refused_by_name():
    """Trees are walked without recursion; deeper than MuJoCo's XML nesting limit is a clear
    error, not a RecursionError or a parser failure."""
    from model_helpers import chain_urdf  # (test/ is on sys.path: conftest.py)

    plant = MujocoPlant(chain_urdf(400), floating_base=False)
    assert plant.model.njnt == 400
    with pytest.raises(ValueError, match="link 'l2000' is 2001 links deep; MuJoCo's XML parser"):
        build_mjcf(chain_urdf(2000), floating_base=False)
