"""URDFs from the wild load; malformed dynamics content is rejected with a message naming it."""

import warnings

import numpy as np
import pytest
from model_helpers import chain_urdf

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
    (
        robot(link("a"), link("b"), link("c"), joint("j1", "a", "b"), joint("j2", "c", "b")),
        "link 'b' is the child of two joints",
    ),
    (robot(link("a"), link("b"), link("c"), joint("j1", "a", "b")), "2 roots"),
    (robot(link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), "loop"),
    (robot(link("a"), joint("j1", "a", "ghost")), "joint 'j1': child link 'ghost' does not exist"),
    (robot(link("a"), link("b"), joint("jp", "a", "b", "planar")), "joint 'jp': type 'planar'"),
    (robot(link("a"), link("b"), joint("jf", "a", "b", "floating")), "joint 'jf': type 'floating'"),
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


# ------------------------------------------------------------------ inertias
def _inertia_link(name, mass, ixx, iyy, izz, ixy=0.0):
    return (
        f'<link name="{name}"><inertial><origin xyz="0 0 0.1"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="{ixy}" ixz="0" iyz="0"/>'
        "</inertial></link>"
    )


INCONSISTENT = {
    "triangle": (_inertia_link("b", 1, 1.0, 0.1, 0.1), "violate the triangle inequality"),
    "rounding": (
        _inertia_link("b", 1, 0.01, 0.01, 0.02, ixy=0.01 + 1e-7),
        r"include a negative one \(rounding\)",
    ),
    "negative": (_inertia_link("b", 1, -0.1, -0.1, -0.1), "not positive semidefinite"),
    "zero mass": (_inertia_link("b", 0, 0.1, 0.1, 0.1), "zero mass with non-zero rotational"),
    "point mass": (_inertia_link("b", 2, 0, 0, 0), r"point mass \(zero rotational inertia\)"),
}


@pytest.mark.parametrize("case", list(INCONSISTENT))
def test_inconsistent_inertia_loads_as_given_with_one_warning_strict_rejects(case):
    bad_link, what = INCONSISTENT[case]
    xml = robot(link("a"), bad_link, link("c"), joint("j1", "a", "b"), joint("j2", "b", "c"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = RobotModel.from_urdf(xml, warmup=False)
    about_b = [w for w in rec if "link 'b'" in str(w.message)]
    assert len(about_b) == 1 and issubclass(about_b[0].category, URDFWarning)
    assert re_search(what, str(about_b[0].message))
    assert any("link 'b'" in w for w in model.load_warnings)
    # loaded as given: the spatial inertia of b is exactly the URDF's
    desc_inertia = model.description.links["b"].inertial.inertia
    expected = {
        "triangle": np.diag([1.0, 0.1, 0.1]),
        "negative": -0.1 * np.eye(3),
        "zero mass": 0.1 * np.eye(3),
        "point mass": np.zeros((3, 3)),
    }.get(case)
    if expected is not None:
        np.testing.assert_array_equal(desc_inertia, expected)
    with pytest.raises(URDFError, match=f"link 'b': .*{what}"):
        RobotModel.from_urdf(xml, strict=True)


def re_search(pattern, text):
    import re

    return re.search(pattern, text) is not None


def test_triangle_violation_dynamics_equal_pinocchio_as_given(tmp_path):
    pin = pytest.importorskip("pinocchio")
    bad_link, _ = INCONSISTENT["triangle"]
    xml = robot(link("a"), bad_link, link("c"), joint("j1", "a", "b"), joint("j2", "b", "c"))
    path = tmp_path / "r.urdf"
    path.write_text(xml)
    with pytest.warns(URDFWarning):
        model = RobotModel.from_urdf(path)
    pm = pin.buildModelFromUrdf(str(path))
    q = np.array([0.3, -0.7])
    M = pin.crba(pm, pm.createData(), q)
    np.testing.assert_allclose(model.mass_matrix(q), np.triu(M) + np.triu(M, 1).T, rtol=1e-12)


def test_joint_moving_no_mass_warns_strict_rejects_and_dynamics_say_why():
    xml = robot(link("a"), link("b", mass=None), joint("j1", "a", "b"))
    with pytest.warns(URDFWarning, match=r"joint\(s\) 'j1' move no mass"):
        model = RobotModel.from_urdf(xml)
    assert model.massless_joints == ["j1"]
    assert model.rnea([0.1], [0.0], [0.0]).tolist() == [0.0]  # inverse dynamics is fine
    with pytest.raises(ValueError, match="singular.*'j1' move no mass; see locked_joints"):
        model.minverse([0.1])
    with pytest.raises(URDFError, match=r"joint\(s\) 'j1' move no mass"):
        RobotModel.from_urdf(xml, strict=True)
    # a negative inertia about the axis is named with its value
    xml = robot(link("a"), _inertia_link("b", 1, -0.1, -0.1, -0.1), joint("j1", "a", "b"))
    with pytest.warns(URDFWarning, match=r"'j1' move no mass \(inertia .*: -0\.09 kg"):
        RobotModel.from_urdf(xml, warmup=False)


# ------------------------------------------------------------------ what cannot be dynamics
def _chain(j1_origin='xyz="0 0 0.2"', j2_origin='xyz="0 0 0.2"', link1="", limit=""):
    lim = limit or '<limit lower="-1" upper="1" effort="10" velocity="2"/>'
    return robot(
        link("base"),
        link1 or link("link1"),
        link("link2"),
        f'<joint name="j1" type="revolute"><parent link="base"/><child link="link1"/>'
        f'<origin {j1_origin}/><axis xyz="0 1 0"/>{lim}</joint>',
        f'<joint name="j2" type="revolute"><parent link="link1"/><child link="link2"/>'
        f'<origin {j2_origin}/><axis xyz="0 1 0"/>{lim}</joint>',
    )


CANNOT_BE_DYNAMICS = [
    (_chain(j1_origin='rpy="0 inf 0"'), r"joint 'j1' <origin>: rpy='0 inf 0' is not finite"),
    (_chain(j2_origin='xyz="0 0 1e200"'), r"joint 'j2' <origin> xyz\[2\] = 1e\+200 m is beyond"),
    (_chain(j2_origin='xyz="0 zero 0"'), r"joint 'j2' <origin>: xyz='0 zero 0' is not 3 numbers"),
    (
        _chain(limit='<limit lower="-1" upper="1" effort="nan" velocity="2"/>'),
        r"joint 'j1' <limit>: effort='nan' is not finite",
    ),
    (
        _chain(limit='<limit lower="-inf" upper="1" effort="1" velocity="2"/>'),
        r"joint 'j1' <limit>: lower='-inf' is not finite",
    ),
    (
        _chain(link1=_inertia_link("link1", 1e308, 0.1, 0.1, 0.1)),
        r"link 'link1' <inertial> <mass> value = 1e\+308 kg is beyond the accepted 1e\+09 kg",
    ),
    (
        _chain(link1=_inertia_link("link1", 1, 1e300, 1e300, 1e300)),
        r"link 'link1' <inertial> <inertia> ixx = 1e\+300 kg m\^2 is beyond",
    ),
    (
        _chain(link1=_inertia_link("link1", "inf", 0.1, 0.1, 0.1)),
        r"link 'link1' <inertial> <mass>: value='inf' is not finite",
    ),
    (
        _chain(link1=_inertia_link("link1", 1, 0.1, "nan", 0.1)),
        r"link 'link1' <inertial> <inertia>: iyy='nan' is not finite",
    ),
    (_chain(link1=_inertia_link("link1", -2, 0.1, 0.1, 0.1)), r"link 'link1': negative mass"),
    (
        _chain().replace('<axis xyz="0 1 0"/>', '<axis xyz="0 nan 0"/>', 1),
        r"joint 'j1' <axis>: xyz='0 nan 0' is not finite",
    ),
    (
        _chain().replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>', 1),
        r"joint 'j1': <axis xyz=\[0.0, 0.0, 0.0\]> is not a direction",
    ),
    (
        _chain().replace("</joint>", '<dynamics damping="-1"/></joint>', 1),
        r"joint 'j1' <dynamics>: negative damping",
    ),
]


@pytest.mark.parametrize("xml,message", CANNOT_BE_DYNAMICS, ids=[m for _, m in CANNOT_BE_DYNAMICS])
def test_what_cannot_be_dynamics_is_rejected_naming_element_and_attribute(xml, message):
    with pytest.raises(URDFError, match=message):
        RobotModel.from_urdf(xml, warmup=False)


def test_largest_accepted_values_give_finite_dynamics():
    """At the documented bounds (mass 1e9 kg, inertia 1e12 kg m^2, lengths 1e5 m) every
    quantity stays finite: nothing the loader accepts overflows."""
    xml = _chain(j2_origin='xyz="0 0 1e5"', link1=_inertia_link("link1", 1e9, 1e12, 1e12, 1e12))
    model = RobotModel.from_urdf(xml)
    q = np.array([0.4, -0.2])
    v = np.array([1.0, 2.0])
    for value in (model.gravity_torques(q), model.rnea(q, v, v), model.minverse(q)):
        assert np.all(np.isfinite(value))


# ------------------------------------------------------------------ loading time
def test_loading_time_is_linear_in_the_number_of_links():
    """A 4000-link chain is built in about 4x the time of a 1000-link chain (quadratic: 16x;
    an O(n^2) loader took 155 s for 1000 links), the default warm-up included (large models
    are warmed up on a small chain of the same kind: running M^-1 and the dense derivatives on
    the model itself took 4.7 s for 1000 links and 87 s for 2000). Ratios of the best of two
    runs, never absolute."""
    import time

    RobotModel.from_urdf(chain_urdf(3))  # kernels loaded / compiled outside the timing

    def best_time(xml):
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            model = RobotModel.from_urdf(xml)
            best = min(best, time.perf_counter() - t0)
        return best, model

    small, _ = best_time(chain_urdf(1000))
    large, model = best_time(chain_urdf(4000))
    # the subtree of the first joint: all of v
    assert model.nv == 4000 and model.model_arrays.subtree_end[0] == 4000
    assert large / small < 8.0, (small, large)


@pytest.mark.parametrize(
    "locked,message",
    [
        ({"nope": 0.0}, "locked_joints: unknown joint 'nope'"),
        ({"tool_joint": 0.0}, "locked_joints: joint 'tool_joint' is fixed, not movable"),
        ({"j1": float("nan")}, r"locked_joints\['j1'\]: nan is not finite"),
        ({"j1": "x"}, r"locked_joints\['j1'\]: 'x' is not a number"),
    ],
)
@pytest.mark.filterwarnings("ignore::wbc_dynamics.URDFWarning")  # WILD's unresolved mesh
def test_bad_locked_joints_are_named(locked, message):
    with pytest.raises(URDFError, match=message):
        load_model(WILD, locked_joints=locked)


# ------------------------------------------------------------------ mesh files
DAE = """<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
<asset><unit meter="0.001" name="millimeter"/><up_axis>Y_UP</up_axis></asset>
<library_geometries><geometry id="g"><mesh>
<source id="g-pos"><float_array id="g-arr" count="12">0 0 0 10 0 0 0 10 0 0 0 10</float_array>
</source><vertices id="g-v"><input semantic="POSITION" source="#g-pos"/></vertices>
</mesh></geometry></library_geometries>
<library_visual_scenes><visual_scene id="s"><node id="n"><translate>100 0 0</translate>
<instance_geometry url="#g"/></node></visual_scene></library_visual_scenes>
<scene><instance_visual_scene url="#s"/></scene></COLLADA>"""


def test_mesh_vertices_of_stl_obj_and_collada(tmp_path):
    import struct

    from wbc_dynamics.description.meshes import (
        MeshError,
        convex_hull_vertices,
        geometry_vertices,
        mesh_vertices,
    )

    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    # binary STL whose header starts with "solid" (common; must not be read as ASCII)
    binary = tmp_path / "b.stl"
    body = struct.pack("<3f", 0, 0, 1) + tri.astype("<f4").tobytes() + b"\0\0"
    binary.write_bytes(b"solid but binary".ljust(80, b" ") + struct.pack("<I", 1) + body)
    np.testing.assert_array_equal(mesh_vertices(binary), tri)
    ascii_stl = tmp_path / "a.stl"
    ascii_stl.write_text(
        "solid t\nfacet normal 0 0 1\nouter loop\n"
        + "".join(f"vertex {x} {y} {z}\n" for x, y, z in tri)
        + "endloop\nendfacet\nendsolid t\n"
    )
    np.testing.assert_array_equal(mesh_vertices(ascii_stl), tri)
    obj = tmp_path / "m.obj"
    obj.write_text("# x\nv 0 0 0\nv 1 0 0\nvn 0 0 1\nv 0 1 0\nf 1 2 3\n")
    np.testing.assert_array_equal(mesh_vertices(obj), tri)
    # Collada: millimetres, a node translation; <up_axis> Y_UP is ignored (as ROS tools do)
    dae = tmp_path / "m.dae"
    dae.write_text(DAE)
    expected = np.array([[0.1, 0, 0], [0.11, 0, 0], [0.1, 0.01, 0], [0.1, 0, 0.01]])
    np.testing.assert_allclose(mesh_vertices(dae), expected, atol=1e-15)
    # a CollisionGeometry's vertices carry the URDF scale; the hull of a tetrahedron is itself
    xml = robot(
        link(
            "a",
            extra=f'<collision><geometry><mesh filename="{dae}" scale="2 2 2"/></geometry>'
            "</collision>",
        )
    )
    geom = load_model(xml).collision_geometry[0]
    np.testing.assert_allclose(geometry_vertices(geom), 2 * expected, atol=1e-15)
    assert convex_hull_vertices(geometry_vertices(geom)).shape == (4, 3)
    bad = tmp_path / "bad.dae"
    bad.write_text("<COLLADA>")
    with pytest.raises(MeshError, match="bad.dae"):
        mesh_vertices(bad)


# ------------------------------------------------------------------ mimic
def _mimic_urdf(mimic_k='<mimic joint="j1" multiplier="2" offset="0.1"/>', fixed_mimic=""):
    return robot(
        link("a"),
        link("b"),
        link("c"),
        link("d"),
        link("e"),
        joint("j1", "a", "b"),
        joint("k", "b", "c", extra=mimic_k),
        joint("m", "c", "d", extra='<mimic joint="k" multiplier="-1" offset="0.3"/>'),
        joint("f", "d", "e", "fixed", extra=fixed_mimic),
    )


def test_mimic_default_is_independent_and_ignored_on_fixed_joints():
    model = RobotModel.from_urdf(_mimic_urdf(fixed_mimic='<mimic joint="nowhere"/>'), warmup=False)
    assert model.joint_names == ["j1", "k", "m"] and model.nv == 3
    # an unknown leader is only an error when the coupling is used
    model = RobotModel.from_urdf(_mimic_urdf('<mimic joint="ghost"/>'), warmup=False)
    assert model.nv == 3


def test_coupled_mimic_chains_and_locked_leaders():
    from wbc_dynamics.mimic import MimicModel

    model = MimicModel.from_urdf(_mimic_urdf(fixed_mimic='<mimic joint="nowhere"/>'))
    # m follows k follows j1: q_m = -(2 q_j1 + 0.1) + 0.3
    assert model.joint_names == ["j1"] and model.nv == 1
    assert model.mimic_joints["k"] == ("j1", 2.0, 0.1)
    assert model.mimic_joints["m"] == ("j1", -2.0, pytest.approx(0.2, abs=1e-15))
    np.testing.assert_allclose(model.full_configuration([0.5]), [0.5, 1.1, -0.8])
    np.testing.assert_array_equal(model.coupling, [[1.0], [2.0], [-2.0]])
    # dynamics on the coupling: M = G^T M_full G, rnea = G^T rnea_full(q, G v, G a)
    q, v, a = np.array([0.2]), np.array([0.7]), np.array([-1.3])
    G = model.coupling
    qf = model.full_configuration(q)
    np.testing.assert_allclose(
        model.mass_matrix(q), G.T @ model.full.mass_matrix(qf) @ G, rtol=1e-14
    )
    tau = model.rnea(q, v, a)
    np.testing.assert_allclose(model.aba(q, v, tau), a, rtol=1e-12)
    np.testing.assert_allclose(model.minverse(q) @ model.mass_matrix(q), np.eye(1), atol=1e-12)
    # a locked leader locks its followers where the coupling puts them
    locked = MimicModel.from_urdf(_mimic_urdf(), locked_joints={"j1": 0.5})
    assert locked.nv == 0
    assert locked.full.locked_joints == pytest.approx({"j1": 0.5, "k": 1.1, "m": -0.8}, abs=1e-15)
    with pytest.raises(URDFError, match=r"joint 'k' <mimic joint='ghost'>: the leader does not"):
        MimicModel.from_urdf(_mimic_urdf('<mimic joint="ghost"/>'))


def test_wbc_info_prints_load_warnings_and_survives_a_singular_model(tmp_path, capsys):
    from wbc_dynamics import info

    path = tmp_path / "r.urdf"
    path.write_text(robot(link("a"), link("b", mass=None), joint("j1", "a", "b")))
    assert info.main([str(path), "--fixed-base"]) == 0
    out = capsys.readouterr().out
    assert "warning: joint(s) 'j1' move no mass" in out
    assert "M is singular (massless joints)" in out


# ------------------------------------------------------------------ what urdfdom loads
def _axis_chain(xyz):
    return _chain().replace('<axis xyz="0 1 0"/>', f'<axis xyz="{xyz}"/>', 1)


@pytest.mark.parametrize(
    "xyz,same_as,unit",
    [
        ("1e308 1e308 0", "1 1 0", [2**-0.5, 2**-0.5, 0.0]),  # squares overflow
        ("1e-320 0 0", "1 0 0", [1.0, 0.0, 0.0]),  # subnormal: its square underflows to 0
        ("0 -3e-310 4e-310", "0 -3 4", [0.0, -0.6, 0.8]),
    ],
)
def test_joint_axis_of_any_finite_magnitude_is_normalized_without_overflow(xyz, same_as, unit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow, no "moves no mass" URDFWarning
        model = RobotModel.from_urdf(_axis_chain(xyz), warmup=False)
        reference = RobotModel.from_urdf(_axis_chain(same_as), warmup=False)
    axis = model.description.joints["j1"].axis
    np.testing.assert_allclose(axis, unit, rtol=1e-15, atol=0.0)
    np.testing.assert_array_equal(axis, reference.description.joints["j1"].axis)
    assert model.massless_joints == []
    q = np.array([0.3, -0.7])
    M = model.mass_matrix(q)
    np.testing.assert_array_equal(M, reference.mass_matrix(q))
    assert np.linalg.eigvalsh(M)[0] > 1e-3  # regular: the axis moves link1 and link2


def test_xml_declaration_after_leading_whitespace_loads_from_string_and_file(tmp_path):
    """TinyXML2 (urdfdom) skips whitespace before the declaration; Python's parser would not."""
    plain = _chain()
    indented = "\n  \t\r\n  " + plain.replace('<?xml version="1.0"?>', "<?xml version='1.0'?>")
    path = tmp_path / "r.urdf"
    path.write_text(indented)
    q = np.array([0.3, -0.7])
    expected = RobotModel.from_urdf(plain, warmup=False).mass_matrix(q)
    for source in (indented, str(path), path):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = RobotModel.from_urdf(source, warmup=False)
        assert model.joint_names == ["j1", "j2"]
        np.testing.assert_array_equal(model.mass_matrix(q), expected)
    # a parse error after the skipped whitespace is reported where it is in the text as given
    # (line 3, the 26th character: as Python's parser reports it without the declaration)
    broken = "\n\n  <?xml version='1.0'?><robot><link name='a'></robot>"
    with pytest.raises(URDFError, match=r"not well-formed XML: mismatched tag: line 3, column 47"):
        RobotModel.from_urdf(broken)
    with pytest.raises(URDFError, match=r"mismatched tag: line 3, column 26"):
        RobotModel.from_urdf("\n\n  <robot><link name='a'></robot>")


def test_inverted_joint_limits_load_as_given_with_one_warning_strict_rejects():
    """urdfdom and Pinocchio load <limit lower="1" upper="-1"> as written; so does the loader,
    with a warning. What needs an ordered range treats the joint as unlimited; nothing that
    reads the limits gives NaN."""
    xml = _chain().replace('lower="-1" upper="1"', 'lower="1" upper="-1"', 1)  # j1 only
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = RobotModel.from_urdf(xml, warmup="dynamics")
    assert [w.category for w in rec] == [URDFWarning]
    message = str(rec[0].message)
    assert "joint 'j1': lower limit 1.0 > upper limit -1.0; loaded as given" in message
    assert "unlimited there" in message
    assert model.load_warnings == [message.split(": ", 1)[1]]
    assert model.position_lower.tolist() == [1.0, -1.0]
    assert model.position_upper.tolist() == [-1.0, 1.0]
    # consumers: the neutral configuration (0 clipped: np.clip gives the upper limit), the
    # dynamics there, the joint-state input bounds (unlimited: magnitude bound only)
    q = model.neutral()
    assert q.tolist() == [-1.0, 0.0]
    for value in (model.gravity_torques(q), model.minverse(q), model.aba(q, [0, 0], [1, 1])):
        assert np.all(np.isfinite(value))
    from wbc_dynamics.ros_conversions import MAX_UNLIMITED_POSITION, joint_position_bounds

    lo, hi = joint_position_bounds(model.position_lower, model.position_upper, 2)
    assert (lo[0], hi[0]) == (-MAX_UNLIMITED_POSITION, MAX_UNLIMITED_POSITION)
    assert lo[1] < -1.0 < 1.0 < hi[1]
    with pytest.raises(URDFError, match=r"joint 'j1': lower limit 1\.0 > upper limit -1\.0"):
        RobotModel.from_urdf(xml, strict=True)
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromXML(xml)
    assert pm.lowerPositionLimit.tolist() == [1.0, -1.0]
    assert pm.upperPositionLimit.tolist() == [-1.0, 1.0]
    pytest.importorskip("mujoco")
    import mujoco

    from wbc_dynamics.sim.mujoco_model import build_mjcf

    mj = mujoco.MjModel.from_xml_string(build_mjcf(model.description, floating_base=False))
    assert mj.jnt_limited.tolist() == [0, 1]  # j1 unlimited in the plant, j2 within [-1, 1]
    assert mj.jnt_range[1].tolist() == [-1.0, 1.0]


@pytest.mark.parametrize("scale", ["2 2", "1 1 1 2", "2 x 2"])
def test_mesh_scale_not_3_numbers_skips_that_collision_like_urdfdom(scale):
    """urdfdom: "Mesh scale was specified, but could not be parsed" (Vector3::init wants
    exactly 3 numbers), that <collision> is dropped and the model loads."""
    mesh = (
        f'<collision><geometry><mesh filename="package://r/m.stl" scale="{scale}"/></geometry>'
        "</collision>"
    )
    sphere = '<collision><geometry><sphere radius="0.1"/></geometry></collision>'
    box = '<collision><geometry><box size="0.1 0.2 0.3"/></geometry></collision>'
    xml = robot(
        link("a", extra=sphere),
        link("b", extra=mesh),
        link("c", extra=box),
        joint("j1", "a", "b"),
        joint("j2", "b", "c"),
    )
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = RobotModel.from_urdf(xml, warmup=False)
    assert [str(w.message) for w in rec] == [
        f"<robot_description string>: link 'b' <collision> #0: <mesh scale={scale!r}> is not "
        "3 numbers; this collision element is skipped (as urdfdom does)"
    ]
    assert [(g.link, g.kind) for g in model.collision_geometry] == [("a", "sphere"), ("c", "box")]
    with pytest.raises(URDFError, match=f"link 'b' <collision> #0 <mesh>: scale='{scale}' is not"):
        RobotModel.from_urdf(xml, strict=True)
    # the collision index counts the link's <collision> elements; valid siblings are kept
    # (urdfdom stops reading the link's collisions there, and Pinocchio then keeps none of them)
    with pytest.warns(URDFWarning, match=r"link 'b' <collision> #1: <mesh scale="):
        sibling = load_model(xml.replace(mesh, sphere + mesh + sphere))
    assert [g.link for g in sibling.collision_geometry] == ["a", "b", "b", "c"]
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromXML(xml)
    assert (pm.nq, list(pm.names)[1:]) == (model.nq, model.joint_names)
    q = np.array([0.3, -0.7])
    M = pin.crba(pm, pm.createData(), q)
    np.testing.assert_allclose(model.mass_matrix(q), np.triu(M) + np.triu(M, 1).T, rtol=1e-12)
    geometry = pin.buildGeomFromUrdfString(pm, xml, pin.GeometryType.COLLISION)
    assert [o.name for o in geometry.geometryObjects] == ["a_0", "c_0"]


def _point_mass(name, mass, xyz):
    return (
        f'<link name="{name}"><inertial><origin xyz="{xyz}"/><mass value="{mass}"/>'
        '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    )


def _joint_at(name, parent, child, xyz, jtype="fixed"):
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="0 1 0"/>'
        '<limit lower="-1" upper="1" effort="10" velocity="2"/></joint>'
    )


SINGULAR = {
    # a free-flyer with no mass at all: no inertia about any axis
    "massless free body": (robot(link("a", mass=None)), True, "the floating base", 0),
    # point masses on a line that is no base axis: the diagonal of M is positive, yet rotating
    # about that line moves nothing (M has rank 5)
    "point masses on a line": (
        robot(
            _point_mass("a", 2, "0 0 0"),
            _point_mass("b", 1, "0 0 0"),
            _joint_at("f", "a", "b", "0.1 0.1 0"),
        ),
        True,
        "the floating base",
        5,
    ),
    # one off-axis point mass: 3 of the 6 base directions move no mass
    "off-axis point mass": (
        robot(_point_mass("a", 2, "0.1 0.1 0.1")),
        True,
        "the floating base",
        3,
    ),
    # fixed base, two coaxial joints and a point mass: j2 can take all of j1's motion
    "coaxial joints": (
        robot(
            link("a"),
            _point_mass("b", 1, "0 0 0"),
            _point_mass("c", 1, "0.1 0 0.1"),
            _joint_at("j1", "a", "b", "0 0 0", "revolute"),
            _joint_at("j2", "b", "c", "0 0 0", "revolute"),
        ),
        False,
        "j1",
        1,
    ),
}


@pytest.mark.parametrize("case", list(SINGULAR))
def test_singular_mass_matrix_loads_and_minverse_aba_name_the_joint(case):
    """M singular everywhere: the model loads with the usual warning naming the joint (the
    floating base for a free-flyer), inverse dynamics work, and M^-1 / ABA raise naming it at
    every configuration (the kernels' pivot test alone passes a rounding-level pivot at some
    base orientations and would return values of order 1e16)."""
    xml, floating_base, name, rank = SINGULAR[case]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")  # (point masses also warn about their links)
        model = RobotModel.from_urdf(xml, floating_base=floating_base)
    assert all(issubclass(w.category, URDFWarning) for w in rec)
    assert re_search(rf"joint\(s\) '{name}' move no mass \(inertia ", str(rec[-1].message))
    assert model.massless_joints == [name]
    assert model.load_warnings[-1] in str(rec[-1].message)
    if floating_base:
        assert "(a floating base cannot be locked" in model.load_warnings[-1]
    rng = np.random.default_rng(3)
    z = np.zeros(model.nv)
    for _ in range(25):
        q = model.neutral()
        if floating_base:
            q[:3] = rng.normal(size=3)
            quat = rng.normal(size=4)
            q[3:7] = quat / np.linalg.norm(quat)
        q[model.nq - len(model.joint_names) :] = rng.uniform(-1, 1, len(model.joint_names))
        M = model.mass_matrix(q)
        assert np.linalg.matrix_rank(M, tol=1e-12 * max(1.0, np.abs(M).max())) == rank
        assert np.all(np.isfinite(model.rnea(q, z, z)))
        message = rf"singular.*the URDF's joint\(s\) '{name}' move no mass; see locked_joints"
        with pytest.raises(ValueError, match=message):
            model.minverse(q)
        with pytest.raises(ValueError, match=message):
            model.aba(q, z, np.ones(model.nv))
    with pytest.raises(URDFError, match=rf"joint\(s\) '{name}' move no mass|point mass"):
        RobotModel.from_urdf(xml, floating_base=floating_base, strict=True)
