"""URDFs from the wild load; malformed dynamics content is rejected with a message naming it."""

import warnings

import numpy as np
import pytest

from wbc_dynamics import RobotModel, URDFError, URDFWarning
from wbc_dynamics.urdf_loader import load_model

INERTIAL = (
    '<inertial><origin xyz="0 0 0.1"/><mass value="{m}"/>'
    '<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>'
)


def link(name, mass=1.0, inertia=0.01, extra=""):
    inertial = INERTIAL.format(m=mass, i=inertia) if mass is not None else ""
    return f'<link name="{name}">{inertial}{extra}</link>'


def joint(name, parent, child, jtype="revolute", extra=""):
    limit = '<limit lower="-1" upper="1" effort="10" velocity="2"/>' if jtype == "revolute" else ""
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0 0 0.2" rpy="0 0 0"/><axis xyz="0 1 0"/>{limit}{extra}</joint>'
    )


def robot(*parts, name=' name="r"'):
    return f'<?xml version="1.0"?><robot{name}>' + "".join(parts) + "</robot>"


WILD = robot(
    '<material name="red"><color rgba="1 0 0 1"/></material>',
    link(
        "base",
        extra='<visual><geometry><mesh filename="package://r/meshes/base.dae"/></geometry>'
        '<material name="tex"><texture filename="package://r/t.png"/></material></visual>'
        '<collision><geometry><mesh filename="package://r/meshes/base.stl" scale="1 1 1"/>'
        "</geometry></collision>",
    ),
    link(
        "l1",
        extra='<collision><origin xyz="0 0 0.1"/><geometry><sphere radius="0.02"/>'
        "</geometry></collision>",
    ),
    link("tool", mass=None),  # a frame without <inertial>
    link("l2", extra='<collision><geometry><box size="0.1 0.2 0.3"/></geometry></collision>'),
    joint("j1", "base", "l1"),
    joint("tool_joint", "l1", "tool", "fixed"),
    joint("j2", "tool", "l2", "continuous"),
    '<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>'
    '<joint name="j1"><hardwareInterface>hardware_interface/EffortJointInterface'
    '</hardwareInterface></joint><actuator name="m1"><mechanicalReduction>1</mechanicalReduction>'
    "</actuator></transmission>",
    '<gazebo reference="l1"><material>Gazebo/Red</material></gazebo>',
    '<gazebo><plugin name="p" filename="libgazebo_ros2_control.so"><parameters>x</parameters>'
    "</plugin></gazebo>",
    name="",  # no robot name
)


def test_wild_urdf_loads_quietly(capsys, tmp_path):
    path = tmp_path / "wild.urdf"
    path.write_text(WILD)
    mesh = tmp_path / "r" / "meshes" / "base.stl"
    mesh.parent.mkdir(parents=True)
    mesh.write_text("solid x\nendsolid x\n")
    for source in (WILD, str(path), path):
        m = RobotModel.from_urdf(source, package_dirs=[tmp_path])
        assert m.load_warnings == []
        assert [g.kind for g in m.collision_geometry] == ["mesh", "sphere", "box"]
        assert m.collision_geometry[0].mesh_path == str(mesh)
        assert m.joint_names == ["j1", "j2"]
        assert m.nq == m.nv == 2
        assert m.total_mass == pytest.approx(3.0)
        assert set(m.link_names) == {"base", "l1", "tool", "l2"}
        assert np.isinf(m.position_lower[1]) and m.position_lower[0] == -1.0
        assert m.effort_limit[0] == 10.0 and m.velocity_limit[0] == 2.0
        assert [(s.link, s.radius) for s in m.collision_spheres] == [("l1", 0.02)]
        assert m.collision_spheres[0].center.tolist() == [0.0, 0.0, 0.1]
        assert [b.size.tolist() for b in m.collision_boxes] == [[0.1, 0.2, 0.3]]
    out = capsys.readouterr()
    assert out.out == "" and out.err == "", "loading must not print warnings"


def test_fixed_child_frame_is_kept_and_inertia_merged():
    with pytest.warns(URDFWarning, match="package://r/meshes/base.stl"):
        m = RobotModel.from_urdf(WILD)
    q = np.array([0.3, -0.4])
    # the massless fixed "tool" frame sits 0.2 m along l1's z
    T_l1 = m.frame_placement(q, "l1")
    T_tool = m.frame_placement(q, "tool")
    np.testing.assert_allclose(T_tool[:3, 3], T_l1[:3, 3] + T_l1[:3, 2] * 0.2, atol=1e-15)
    assert m.jacobian(q, "tool").shape == (6, 2)


REJECTED = [
    (
        robot(
            link("a", mass=-1.0),
        ),
        "link 'a': negative mass",
    ),
    (robot(link("a"), link("b", inertia=-0.1), joint("j", "a", "b")), "link 'b'"),
    (
        robot(link("a"), link("b"), link("c"), joint("j1", "a", "b"), joint("j2", "c", "b")),
        "link 'b' is the child of two joints",
    ),
    (robot(link("a"), link("b"), link("c"), joint("j1", "a", "b")), "2 roots"),
    (robot(link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), "loop"),
    (robot(link("a"), joint("j1", "a", "ghost")), "joint 'j1': child link 'ghost' does not exist"),
    (robot(link("a"), link("b"), joint("jp", "a", "b", "planar")), "joint 'jp': type 'planar'"),
    (robot(link("a"), link("b"), joint("jf", "a", "b", "floating")), "joint 'jf': type 'floating'"),
    (robot(link("a"), link("b", mass=None), joint("j1", "a", "b")), "joint 'j1' moves no mass"),
    ("<robot><link name='a'>", "not well-formed"),
]


@pytest.mark.parametrize("xml,message", REJECTED, ids=[m for _, m in REJECTED])
def test_malformed_dynamics_content_is_rejected_naming_the_culprit(xml, message):
    with pytest.raises(URDFError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RobotModel.from_urdf(xml)


def test_missing_file_is_reported():
    with pytest.raises(FileNotFoundError, match="nope.urdf"):
        RobotModel.from_urdf("/nonexistent/nope.urdf")


def test_bad_inputs_raise_value_error_naming_the_argument():
    from wbc_dynamics.robots import robot_path

    m = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q, z = m.neutral(), np.zeros(m.nv)
    with pytest.raises(ValueError, match="q must have length 19"):
        m.rnea(q[:-1], z, z)
    with pytest.raises(ValueError, match="v contains NaN"):
        m.rnea(q, np.full(m.nv, np.nan), z)
    with pytest.raises(ValueError, match="a contains NaN"):
        m.rnea(q, z, np.r_[z[:-1], np.inf])
    with pytest.raises(ValueError, match="tau contains NaN"):
        m.aba(q, z, np.full(m.nv, np.nan))
    bad = q.copy()
    bad[3:7] = [0, 0, 0, 2.0]
    with pytest.raises(ValueError, match="quaternion"):
        m.mass_matrix(bad)
    with pytest.raises(ValueError, match="q contains NaN"):
        m.minverse(np.full(m.nq, np.nan))
    with pytest.raises(ValueError, match="unknown link 'nose'"):
        m.jacobian(q, "nose")
    with pytest.raises(ValueError, match="frame must be one of"):
        m.jacobian(q, "LF_foot", frame="global")
    with pytest.raises(ValueError, match=r"f_ext\['LF_foot'\] must have length 6"):
        m.rnea(q, z, z, f_ext={"LF_foot": [1, 2, 3]})
    with pytest.raises(ValueError, match="q must be a vector"):
        m.rnea("abc", z, z)
    # a slightly-off quaternion within tolerance is normalized, not rejected
    ok = q.copy()
    ok[6] = 1.0 + 5e-7
    np.testing.assert_allclose(m.gravity_torques(ok), m.gravity_torques(q), atol=1e-12)


# ------------------------------------------------------------------ collision geometry
def _box_link(name, collision):
    return link(name, extra=f"<collision>{collision}</collision>")


def test_collision_geometry_of_every_kind_in_urdf_order(tmp_path):
    """Spheres, boxes, cylinders, capsules and meshes, with their poses in the link frame."""
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "foot.stl").write_text("solid x\nendsolid x\n")
    xml = robot(
        link(
            "base",
            extra='<collision><origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/><geometry>'
            '<box size="0.1 0.2 0.3"/></geometry></collision>'
            '<collision><geometry><cylinder radius="0.05" length="0.4"/></geometry></collision>',
        ),
        link(
            "l1",
            extra='<collision><origin xyz="0 0 -0.1"/><geometry><capsule radius="0.02" '
            'length="0.3"/></geometry></collision>'
            '<collision><geometry><mesh filename="meshes/foot.stl" scale="2 2 2"/></geometry>'
            "</collision>"
            '<collision><geometry><sphere radius="0.03"/></geometry></collision>',
        ),
        joint("j1", "base", "l1"),
    )
    path = tmp_path / "r.urdf"
    path.write_text(xml)
    m = RobotModel.from_urdf(path, warmup=False)
    geoms = m.collision_geometry
    assert [(g.link, g.kind) for g in geoms] == [
        ("base", "box"),
        ("base", "cylinder"),
        ("l1", "capsule"),
        ("l1", "mesh"),
        ("l1", "sphere"),
    ]
    box, cyl, cap, mesh, sph = geoms
    np.testing.assert_allclose(box.center, [1, 2, 3])
    np.testing.assert_allclose(box.rotation, [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    assert box.size.tolist() == [0.1, 0.2, 0.3]
    assert (cyl.radius, cyl.length) == (0.05, 0.4)
    assert (cap.radius, cap.length) == (0.02, 0.3) and cap.center.tolist() == [0, 0, -0.1]
    assert mesh.mesh_uri == "meshes/foot.stl"
    assert mesh.mesh_path == str((tmp_path / "meshes" / "foot.stl").resolve())
    assert mesh.mesh_scale.tolist() == [2.0, 2.0, 2.0]
    assert sph.radius == 0.03
    # the sphere/box views are derived from the same list
    assert [(s.link, s.radius) for s in m.collision_spheres] == [("l1", 0.03)]
    assert [b.link for b in m.collision_boxes] == ["base"]
    # from an XML string there is no directory to resolve the relative mesh against
    with pytest.warns(URDFWarning, match="link 'l1' 'meshes/foot.stl'"):
        m2 = load_model(xml)
    assert m2.collision_geometry[3].mesh_path is None


MESH_URDF = robot(
    link(
        "a",
        extra='<collision><geometry><mesh filename="package://my_robot/meshes/a.stl"/>'
        "</geometry></collision>"
        '<collision><geometry><mesh filename="package:///my_robot/meshes/a.stl"/>'
        "</geometry></collision>",
    )
)


def _mesh_paths(source, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a resolved mesh gives no warning
        return [g.mesh_path for g in load_model(source, **kwargs).collision_geometry]


def test_package_uris_resolve_like_ros(tmp_path, monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    # 1. explicit package_dirs (Pinocchio's argument): DIR/my_robot/meshes/a.stl
    explicit = tmp_path / "explicit" / "my_robot" / "meshes" / "a.stl"
    explicit.parent.mkdir(parents=True)
    explicit.write_text("x")
    assert _mesh_paths(MESH_URDF, package_dirs=[tmp_path / "explicit"]) == [str(explicit)] * 2
    # 2. an ament prefix: PREFIX/share/my_robot/...
    ament = tmp_path / "install" / "share" / "my_robot" / "meshes" / "a.stl"
    ament.parent.mkdir(parents=True)
    ament.write_text("x")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    assert _mesh_paths(MESH_URDF) == [str(ament)] * 2
    # package_dirs come first
    assert _mesh_paths(MESH_URDF, package_dirs=[tmp_path / "explicit"]) == [str(explicit)] * 2
    monkeypatch.delenv("AMENT_PREFIX_PATH")
    # 3. ROS_PACKAGE_PATH entries
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "explicit"))
    assert _mesh_paths(MESH_URDF) == [str(explicit)] * 2
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    # 4. the URDF's ancestors (a package checked out around its URDF, example-robot-data)
    pkg = tmp_path / "src" / "my_robot"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "meshes").mkdir()
    (pkg / "meshes" / "a.stl").write_text("x")
    (pkg / "urdf" / "r.urdf").write_text(MESH_URDF)
    assert _mesh_paths(pkg / "urdf" / "r.urdf") == [str(pkg / "meshes" / "a.stl")] * 2
    # unresolved: one warning naming the link and the URI; the geometry is kept
    with pytest.warns(URDFWarning, match=r"2 collision mesh.*link 'a' 'package://my_robot"):
        m = load_model(MESH_URDF)
    assert [g.mesh_path for g in m.collision_geometry] == [None, None]
    assert [g.mesh_uri for g in m.collision_geometry] == [
        "package://my_robot/meshes/a.stl",
        "package:///my_robot/meshes/a.stl",
    ]
    assert len(m.warnings) == 1


@pytest.mark.parametrize(
    "geometry,message",
    [
        ('<sphere radius="-1"/>', r"link 'a' <collision> #0 <sphere> radius must be > 0"),
        ('<cylinder radius="0.1"/>', r"<cylinder>: missing attribute length"),
        ('<box size="1 2"/>', r"<box>: size='1 2' is not 3 numbers"),
        ('<capsule radius="nan" length="1"/>', r"<capsule>: radius='nan' is not finite"),
        ("<mesh/>", r"<mesh>: missing attribute filename"),
    ],
)
def test_bad_collision_geometry_is_named(geometry, message):
    xml = robot(link("a", extra=f"<collision><geometry>{geometry}</geometry></collision>"))
    with pytest.raises(URDFError, match=message):
        load_model(xml)
