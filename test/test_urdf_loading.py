"""URDFs from the wild load; malformed dynamics content is rejected with a message naming it."""

import numpy as np
import pytest

from wbc_dynamics import RobotModel, URDFError

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
    for source in (WILD, str(path), path):
        m = RobotModel.from_urdf(source)
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
        robot(
            link("a"),
            '<link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="0.1" '
            'izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>',
            joint("j", "a", "b"),
        ),
        "link 'b': principal moments",
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
    (
        robot(
            link("a"),
            link("b"),
            link("c"),
            joint("j1", "a", "b"),
            joint("jm", "b", "c", extra='<mimic joint="j1"/>'),
        ),
        "joint 'jm': <mimic>",
    ),
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
