"""Contact candidates from URDF collision geometry of every shape, and from configuration.

The points each shape becomes (wbc_dynamics.contact.candidates) are checked two ways:

* exactly, against the shape's definition (corners, rims, caps, the fitted sphere);
* against an independent implementation: MuJoCo's own geom-to-plane distance
  (``mj_geomDistance``) on the plant built from the same description, for random poses of a
  free-floating link: the lowest candidate's signed distance in the controller's contact model
  equals MuJoCo's distance exactly for spheres, boxes, capsules and polyhedral meshes, and within
  the documented sampling error for cylinders and round meshes.
"""

from __future__ import annotations

import numpy as np
import pytest

from wbc_dynamics import RobotModel
from wbc_dynamics.contact.candidates import (
    CYLINDER_RIM_POINTS,
    contact_points,
    points_of_geometry,
)
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace

mujoco = pytest.importorskip("mujoco")

RPY = "0.3 -0.2 0.5"
XYZ = "0.01 -0.02 0.03"


def _urdf(geometry_xml: str) -> str:
    return f"""<robot name="shape">
  <link name="body">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial>
    <collision><origin xyz="{XYZ}" rpy="{RPY}"/><geometry>{geometry_xml}</geometry></collision>
  </link>
</robot>"""


def _write_obj(path, vertices, faces):
    with open(path, "w") as f:
        for v in vertices:
            f.write(f"v {v[0]} {v[1]} {v[2]}\n")
        for face in faces:
            f.write("f " + " ".join(str(i + 1) for i in face) + "\n")


def _box_mesh(path, half):
    v = [[sx * half[0], sy * half[1], sz * half[2]] for sx in (-1, 1) for sy in (-1, 1)
         for sz in (-1, 1)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    _write_obj(path, v, faces)


def _sphere_mesh(path, radius, n=12):
    """A UV sphere (polyhedron inscribed in the sphere of ``radius``)."""
    v = [[0, 0, radius], [0, 0, -radius]]
    faces = []
    for i in range(1, n):
        th = np.pi * i / n
        for k in range(2 * n):
            ph = np.pi * k / n
            v.append([radius * np.sin(th) * np.cos(ph), radius * np.sin(th) * np.sin(ph),
                      radius * np.cos(th)])
    for k in range(2 * n):  # triangles to the poles only: enough for the hull reader
        faces.append((0, 2 + k, 2 + (k + 1) % (2 * n)))
    _write_obj(path, v, faces)


def _frame():
    from wbc_dynamics.description.urdf import rpy_matrix

    return rpy_matrix([float(x) for x in RPY.split()]), np.array([float(x) for x in XYZ.split()])


def test_each_shape_becomes_the_documented_points(tmp_path):
    R, p = _frame()
    m = RobotModel.from_urdf(_urdf('<box size="0.2 0.1 0.04"/>'), floating_base=True,
                             warmup=False)
    pts = contact_points(m, ["body"])
    corners = [p + R @ (np.array([sx, sy, sz]) * [0.1, 0.05, 0.02])
               for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    assert [pt.source for pt in pts] == ["box corner"] * 8
    np.testing.assert_allclose([pt.center for pt in pts], corners, atol=1e-15)
    assert all(pt.radius == 0.0 for pt in pts)

    m = RobotModel.from_urdf(_urdf('<cylinder radius="0.03" length="0.1"/>'),
                             floating_base=True, warmup=False)
    pts = contact_points(m, ["body"])
    assert len(pts) == 2 * CYLINDER_RIM_POINTS
    local = np.array([R.T @ (pt.center - p) for pt in pts])
    np.testing.assert_allclose(np.hypot(local[:, 0], local[:, 1]), 0.03, atol=1e-15)
    np.testing.assert_allclose(np.sort(np.unique(np.round(local[:, 2], 12))), [-0.05, 0.05])

    m = RobotModel.from_urdf(_urdf('<capsule radius="0.02" length="0.1"/>'),
                             floating_base=True, warmup=False)
    pts = contact_points(m, ["body"])
    np.testing.assert_allclose([pt.center for pt in pts],
                               [p + R @ [0, 0, -0.05], p + R @ [0, 0, 0.05]], atol=1e-15)
    assert [pt.radius for pt in pts] == [0.02, 0.02]

    _sphere_mesh(tmp_path / "ball.obj", 0.025)
    m = RobotModel.from_urdf(_urdf(f'<mesh filename="{tmp_path}/ball.obj" scale="2 2 2"/>'),
                             floating_base=True, warmup=False)
    (pt,) = contact_points(m, ["body"])
    assert pt.source == "mesh sphere"
    np.testing.assert_allclose(pt.center, p, atol=1e-12)
    assert abs(pt.radius - 0.05) < 0.05 * 0.02  # a polyhedron inscribed in the 5 cm sphere

    _box_mesh(tmp_path / "sole.obj", (0.1, 0.05, 0.01))
    m = RobotModel.from_urdf(_urdf(f'<mesh filename="{tmp_path}/sole.obj"/>'),
                             floating_base=True, warmup=False)
    pts = contact_points(m, ["body"])
    assert {pt.source for pt in pts} == {"mesh support"}
    got = {tuple(np.round(R.T @ (pt.center - p), 12)) for pt in pts}
    assert got == {(sx * 0.1, sy * 0.05, sz * 0.01) for sx in (-1, 1) for sy in (-1, 1)
                   for sz in (-1, 1)}


def test_declared_points_replace_the_geometry_and_extra_points_add(tmp_path):
    m = RobotModel.from_urdf(_urdf('<box size="0.2 0.1 0.04"/>'), floating_base=True,
                             warmup=False)
    pts = contact_points(m, ["body"], points={"body": [((0.1, 0, -0.02), 0.005)]},
                         extra_points={"body": [((0, 0, -0.03), 0.0)]})
    assert [(pt.source, pt.radius) for pt in pts] == [("configured", 0.005), ("extra", 0.0)]
    np.testing.assert_array_equal(pts[0].center, [0.1, 0.0, -0.02])
    with pytest.raises(ValueError, match=r"contact_points\['body'\]\[0\]: centre"):
        contact_points(m, ["body"], points={"body": [((np.nan, 0, 0), 0.0)]})
    g = m.collision_geometry[0]
    assert len(points_of_geometry(g)) == 8


SHAPES = {
    "sphere": ('<sphere radius="0.04"/>', 1e-9),
    "box": ('<box size="0.2 0.1 0.04"/>', 1e-9),
    "capsule": ('<capsule radius="0.02" length="0.1"/>', 1e-9),
    # rim sampled at 8 points: the lowest rim point is at most r (1 - cos(pi/8)) too high
    "cylinder": ('<cylinder radius="0.03" length="0.1"/>', 0.03 * (1 - np.cos(np.pi / 8)) + 1e-9),
    # MuJoCo stores mesh vertices in float32: ~1e-8 m on a 10 cm mesh
    "box mesh": (None, 1e-7),
    "ball mesh": (None, 0.05 * 0.02),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_lowest_candidate_distance_equals_mujocos_geom_distance(shape, tmp_path):
    from wbc_dynamics.sim.mujoco_model import GroundOptions, MujocoPlant

    xml, tol = SHAPES[shape]
    if shape == "box mesh":
        _box_mesh(tmp_path / "m.obj", (0.1, 0.05, 0.01))
        xml = f'<mesh filename="{tmp_path}/m.obj"/>'
    elif shape == "ball mesh":
        _sphere_mesh(tmp_path / "m.obj", 0.05, n=16)
        xml = f'<mesh filename="{tmp_path}/m.obj"/>'
    urdf = _urdf(xml)
    model = RobotModel.from_urdf(urdf, floating_base=True)
    cm = ContactModel(model, contact_links=["body"], features=[HalfSpace.ground(0.0)],
                      margin=10.0)
    plant = MujocoPlant(model.description, floating_base=True, ground=GroundOptions())
    mm, dd = plant.model, plant.data
    ground = mujoco.mj_name2id(mm, mujoco.mjtObj.mjOBJ_GEOM, "ground")
    geoms = [g for g in range(mm.ngeom)
             if g != ground and mm.geom_contype[g] | mm.geom_conaffinity[g]]
    assert len(geoms) == 1
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(40):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        q = np.r_[rng.uniform(-0.5, 0.5, 2), rng.uniform(0.02, 0.3), quat]
        plant.set_state(q, np.zeros(6))
        mujoco.mj_forward(mm, dd)
        d_mj = mujoco.mj_geomDistance(mm, dd, ground, geoms[0], 10.0, None)
        k = cm.candidates(q)
        d_ours = float(np.min(cm._out_phi[:k]))
        worst = max(worst, abs(d_ours - d_mj))
        # exact shapes: candidates never report a deeper contact than the shape (up to
        # MuJoCo's float32 mesh); a round mesh's sphere contains the mesh: never shallower
        if shape != "ball mesh":
            assert d_ours >= d_mj - 1e-7
        else:
            assert d_ours <= d_mj + 1e-7
    assert worst <= tol, f"{shape}: |phi - MuJoCo distance| up to {worst:.2e} m (tol {tol:.1e})"


def test_controller_contact_points_from_flat_parameters_and_locked_joints():
    from wbc_dynamics.controller import WholeBodyController

    base = {"robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
            "contact_links": ["LF_foot", "LH_foot", "RF_foot", "RH_foot"]}
    ctl = WholeBodyController({
        **base, "contact_point_links": ["LF_foot", "LF_foot"],
        "contact_point_positions": [0.01, 0, 0, -0.01, 0, 0], "contact_point_radii": [0.02]})
    pts = ctl._contact_model.contact_points
    assert [(pt.link, pt.source) for pt in pts[:2]] == [("LF_foot", "configured")] * 2
    np.testing.assert_array_equal(pts[1].center, [-0.01, 0.0, 0.0])
    assert [pt.source for pt in pts[2:]] == ["sphere"] * 3
    with pytest.raises(ValueError, match="contact_point_positions: expected 3 numbers per point"):
        WholeBodyController({**base, "contact_point_links": ["LF_foot"],
                             "contact_point_positions": [0.0, 0.0]})
    with pytest.raises(ValueError, match="contact_point_links: link 'LF_shank' is not in"):
        WholeBodyController({**base, "contact_point_links": ["LF_shank"],
                             "contact_point_positions": [0.0, 0.0, 0.0]})

    # joints as a subset: the rest are locked (warning), or an error with strict_joints
    legs = ["LF_haa", "LF_hfe", "LF_kfe", "LH_haa", "LH_hfe", "LH_kfe", "RF_haa", "RF_hfe",
            "RF_kfe"]
    ctl = WholeBodyController({**base, "method": "none", "joints": legs,
                               "locked_joints": ["RH_hfe"], "locked_positions": [0.7]})
    assert ctl.joint_names == legs and ctl.model.nv == 6 + 9
    assert "['RH_haa', 'RH_kfe']" in ctl.load_warnings[0]
    with pytest.raises(ValueError, match=r"\['RH_haa', 'RH_kfe'\] are neither configured nor"):
        WholeBodyController({**base, "method": "none", "joints": legs,
                             "locked_joints": ["RH_hfe"], "strict_joints": True})
    with pytest.raises(ValueError, match="locked_joints: 'nope' is not a movable joint"):
        WholeBodyController({**base, "method": "none", "locked_joints": ["nope"]})
    # the locked model is Pinocchio's reduced model: same gravity torques as the full model
    # with the locked joints at their positions
    full = RobotModel.from_urdf(ctl.model.description, floating_base=True, warmup=False)
    q_full = full.neutral()
    q_full[7 + full.joint_index("RH_hfe")] = 0.7
    q_red = ctl.model.neutral()
    g_full = full.rnea(q_full, np.zeros(full.nv), np.zeros(full.nv))
    g_red = ctl.model.rnea(q_red, np.zeros(ctl.model.nv), np.zeros(ctl.model.nv))
    keep = [0, 1, 2, 3, 4, 5] + [6 + full.joint_index(j) for j in ctl.model.joint_names]
    np.testing.assert_allclose(g_red, g_full[keep], rtol=1e-12, atol=1e-12)


def test_passive_joints_get_zero_torque_and_the_actuated_accelerations_are_realized():
    """method none: forward dynamics of the commanded torques (0 on the passive joint) gives the
    commanded accelerations on every actuated joint -- fixed base (arm) and floating base
    (quadruped, base free). Contact method: the controller's torques equal the contact
    solver's on a ContactModel whose actuated joints leave the passive one out."""
    from wbc_dynamics.contact import SolverState, solve
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.robots import robot_info

    rng = np.random.default_rng(3)
    for robot, passive in (("arm", "joint_4"), ("quadruped", "LF_kfe")):
        info = robot_info(robot)
        fb = info["floating_base"]
        ctl = WholeBodyController({"robot": robot, "floating_base": fb, "method": "none",
                                   "passive_joints": [passive], "state_timeout": 1e9,
                                   "reference_timeout": 1e9})
        m = ctl.model
        n = ctl.n
        for _ in range(5):
            q = m.neutral()
            o = 7 if fb else 0
            q[o:] = rng.uniform(-0.5, 0.5, n)
            v = rng.normal(size=m.nv)
            if fb:
                ctl.set_base_state(q[:3], q[3:7], v[:3], v[3:6], 0.0)
            ctl.set_joint_state(q[o:], v[m.nv - n:], 0.0)
            qdd = rng.normal(size=n)
            ctl.set_reference(qdd, 0.0)
            out = ctl.update(0.0)
            assert out.mode == "control"
            k = ctl.joint_names.index(passive)
            assert out.tau[k] == 0.0
            a = m.aba(q, v, np.r_[np.zeros(m.nv - n), out.tau])
            act = [i for i in range(n) if i != k]
            np.testing.assert_allclose(a[m.nv - n:][act], qdd[act], rtol=1e-9, atol=1e-9)

    cfg = {"robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
           "passive_joints": ["LF_haa"], "state_timeout": 1e9, "reference_timeout": 1e9,
           "warm_start": False}
    ctl = WholeBodyController(cfg)
    m = ctl.model
    q = np.asarray(robot_info("quadruped")["standing_q"], float)
    v = np.zeros(m.nv)
    ctl.set_base_state(q[:3], q[3:7], v[:3], v[3:6], 0.0)
    ctl.set_joint_state(q[7:], v[6:], 0.0)
    qdd = rng.normal(size=12) * 0.1
    ctl.set_reference(qdd, 0.0)
    out = ctl.update(0.0)
    assert out.mode == "control" and out.tau[ctl.joint_names.index("LF_haa")] == 0.0
    act = [j for j in m.joint_names if j != "LF_haa"]
    cm = ContactModel(m, contact_links=ctl.contact_links, features=[HalfSpace.ground(0.0, 0.8)],
                      actuated_joints=act, dt=ctl.dt)
    prob = cm.build(q, v, np.array([qdd[ctl.joint_names.index(j)] for j in act]))
    res = solve("lcp_noslip", prob, SolverState())
    np.testing.assert_allclose([out.tau[ctl.joint_names.index(j)] for j in act], res.tau,
                               rtol=1e-9, atol=1e-9)
