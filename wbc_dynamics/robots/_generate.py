"""Generator of the bundled robot URDFs and of their nominal poses (developer tool).

One file because it is a script run by its path, with numpy only: the inertia primitives, the
URDF writer and the robots built with them stay together.

Run ``python wbc_dynamics/robots/_generate.py`` (from the repository root) to rewrite
``quadruped.urdf``, ``arm.urdf``, ``box.urdf``, ``small_box.urdf``, ``branched.urdf``,
``humanoid.urdf`` and ``robot_data.json`` (the pose/metadata dicts read by
:mod:`wbc_dynamics.robots`).

Only numpy is used (no pinocchio): the nominal poses (standing heights, grasp pose / box pose)
are computed with the small forward-kinematics routine below from exactly the numbers written
into the URDFs; ``test/test_robots.py`` re-checks them independently with Pinocchio.

Units: SI (m, kg, kg m^2, rad, m/s, rad/s, N, N m). Every inertia is generated from a solid
primitive (box, cylinder, sphere) about its own centre of mass, possibly rotated, so it is
positive definite and satisfies the triangle inequality by construction.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------------------------
# inertia helpers (solid primitives, about the centre of mass)
# --------------------------------------------------------------------------------------------


def inertia_box(m: float, sx: float, sy: float, sz: float) -> np.ndarray:
    return np.diag([m * (sy**2 + sz**2) / 12, m * (sx**2 + sz**2) / 12, m * (sx**2 + sy**2) / 12])


def inertia_cyl(m: float, r: float, h: float, axis: str = "z") -> np.ndarray:
    ia = 0.5 * m * r**2
    it = m * (3 * r**2 + h**2) / 12
    d = {"x": [ia, it, it], "y": [it, ia, it], "z": [it, it, ia]}[axis]
    return np.diag(d)


def inertia_sphere(m: float, r: float) -> np.ndarray:
    return np.eye(3) * 0.4 * m * r**2


def rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def axis_angle(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def quat_to_matrix(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    return np.array([
        [1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
        [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
        [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)],
    ])


def matrix_to_quat(R: np.ndarray) -> list[float]:
    """Rotation matrix -> [qx, qy, qz, qw] with qw >= 0."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2
        q = [0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s, (R[2, 1] - R[1, 2]) / s]
    elif R[1, 1] > R[2, 2]:
        s = math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2
        q = [(R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s, (R[0, 2] - R[2, 0]) / s]
    else:
        s = math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2
        q = [(R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s, (R[1, 0] - R[0, 1]) / s]
    q = np.array(q)
    q[np.abs(q) < 1e-15] = 0.0  # exact zeros for exact (e.g. half-turn) rotations
    q /= np.linalg.norm(q)
    if q[3] < 0:
        q = -q
    return [float(x) for x in q]


# --------------------------------------------------------------------------------------------
# tiny URDF model + writer
# --------------------------------------------------------------------------------------------


def f(x: float) -> str:
    """Shortest round-tripping text of a float (exact value kept)."""
    x = float(x)
    if x == 0.0:
        return "0"
    s = repr(x)
    return s[:-2] if s.endswith(".0") else s


def v3(a) -> str:
    return " ".join(f(x) for x in a)


@dataclass
class Geom:
    kind: str  # box | sphere | cylinder
    size: tuple  # box: (sx, sy, sz); sphere: (r,); cylinder: (r, length)
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    material: str | None = None
    name: str | None = None

    def xml(self, tag: str, indent: str) -> str:
        nm = f' name="{self.name}"' if self.name else ""
        if self.kind == "box":
            g = f'<box size="{v3(self.size)}"/>'
        elif self.kind == "sphere":
            g = f'<sphere radius="{f(self.size[0])}"/>'
        else:
            g = f'<cylinder radius="{f(self.size[0])}" length="{f(self.size[1])}"/>'
        origin = f'<origin xyz="{v3(self.xyz)}" rpy="{v3(self.rpy)}"/>'
        mat = ""
        if tag == "visual" and self.material:
            mat = f'\n{indent}  <material name="{self.material}"/>'
        return (f"{indent}<{tag}{nm}>\n{indent}  {origin}\n{indent}  <geometry>\n"
                f"{indent}    {g}\n{indent}  </geometry>{mat}\n{indent}</{tag}>")


@dataclass
class Link:
    name: str
    mass: float | None = None  # None -> no <inertial> (pure frame link)
    com: tuple = (0.0, 0.0, 0.0)
    inertia: np.ndarray | None = None  # about the COM, in the inertial frame
    inertial_rpy: tuple = (0.0, 0.0, 0.0)
    visuals: list = field(default_factory=list)
    collisions: list = field(default_factory=list)
    comment: str | None = None

    def xml(self) -> str:
        out = []
        if self.comment:
            out.append(f"  <!-- {self.comment} -->")
        if self.mass is None and not self.visuals and not self.collisions:
            out.append(f'  <link name="{self.name}"/>')
            return "\n".join(out)
        out.append(f'  <link name="{self.name}">')
        if self.mass is not None:
            inertia = self.inertia if self.inertia is not None else np.zeros((3, 3))
            out.append("    <inertial>")
            out.append(f'      <origin xyz="{v3(self.com)}" rpy="{v3(self.inertial_rpy)}"/>')
            out.append(f'      <mass value="{f(self.mass)}"/>')
            g = [f(float(f"{x:.12g}")) for x in inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]]
            out.append(
                f'      <inertia ixx="{g[0]}" ixy="{g[1]}" ixz="{g[2]}" iyy="{g[3]}" '
                f'iyz="{g[4]}" izz="{g[5]}"/>')
            out.append("    </inertial>")
        for g in self.visuals:
            out.append(g.xml("visual", "    "))
        for g in self.collisions:
            out.append(g.xml("collision", "    "))
        out.append("  </link>")
        return "\n".join(out)


@dataclass
class Joint:
    name: str
    type: str  # revolute | prismatic | fixed
    parent: str
    child: str
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)
    lower: float = 0.0
    upper: float = 0.0
    velocity: float = 0.0
    effort: float = 0.0
    damping: float | None = None
    friction: float | None = None
    safety: bool = False
    comment: str | None = None

    def xml(self) -> str:
        out = []
        if self.comment:
            out.append(f"  <!-- {self.comment} -->")
        out.append(f'  <joint name="{self.name}" type="{self.type}">')
        out.append(f'    <parent link="{self.parent}"/>')
        out.append(f'    <child link="{self.child}"/>')
        out.append(f'    <origin xyz="{v3(self.xyz)}" rpy="{v3(self.rpy)}"/>')
        if self.type != "fixed":
            out.append(f'    <axis xyz="{v3(self.axis)}"/>')
            out.append(f'    <limit lower="{f(self.lower)}" upper="{f(self.upper)}" '
                       f'effort="{f(self.effort)}" velocity="{f(self.velocity)}"/>')
            if self.damping is not None or self.friction is not None:
                out.append(f'    <dynamics damping="{f(self.damping or 0.0)}" '
                           f'friction="{f(self.friction or 0.0)}"/>')
            if self.safety:
                margin = 0.05 * (self.upper - self.lower)
                out.append(f'    <safety_controller soft_lower_limit="{f(self.lower + margin)}" '
                           f'soft_upper_limit="{f(self.upper - margin)}" k_position="100" '
                           f'k_velocity="2"/>')
        out.append("  </joint>")
        return "\n".join(out)


MATERIALS = {
    "grey": (0.55, 0.55, 0.58, 1.0),
    "dark_grey": (0.2, 0.2, 0.22, 1.0),
    "orange": (1.0, 0.42, 0.04, 1.0),
    "blue": (0.1, 0.3, 0.8, 1.0),
    "white": (0.95, 0.95, 0.95, 1.0),
    "black": (0.05, 0.05, 0.05, 1.0),
    "red": (0.8, 0.1, 0.1, 1.0),
    "green": (0.1, 0.7, 0.2, 1.0),
    "yellow": (0.95, 0.8, 0.1, 1.0),
    "wood": (0.6, 0.45, 0.25, 1.0),
}


@dataclass
class Robot:
    name: str
    links: list = field(default_factory=list)
    joints: list = field(default_factory=list)
    header_comment: str = ""
    gazebo: str = ""
    transmissions: bool = True

    def link(self, *a, **k) -> Link:
        lk = Link(*a, **k)
        self.links.append(lk)
        return lk

    def joint(self, *a, **k) -> Joint:
        jt = Joint(*a, **k)
        self.joints.append(jt)
        return jt

    @property
    def movable(self) -> list[Joint]:
        return [j for j in self.joints if j.type != "fixed"]

    def total_mass(self) -> float:
        return sum(lk.mass or 0.0 for lk in self.links)

    def xml(self) -> str:
        used = set()
        for lk in self.links:
            for g in lk.visuals:
                if g.material:
                    used.add(g.material)
        out = ['<?xml version="1.0" encoding="utf-8"?>']
        if self.header_comment:
            out.append("<!--\n" + self.header_comment.strip("\n") + "\n-->")
        out.append(f'<robot name="{self.name}">')
        for m in sorted(used):
            out.append(f'  <material name="{m}">\n    <color rgba="{v3(MATERIALS[m])}"/>\n'
                       f"  </material>")
        # links and joints interleaved in depth-first order (parent joint before its child link)
        child_of = {j.child: j for j in self.joints}
        for lk in self.links:
            if lk.name in child_of:
                out.append(child_of[lk.name].xml())
            out.append(lk.xml())
        if self.transmissions:
            for j in self.movable:
                out.append(
                    f'  <transmission name="{j.name}_transmission">\n'
                    "    <type>transmission_interface/SimpleTransmission</type>\n"
                    f'    <joint name="{j.name}">\n'
                    "      <hardwareInterface>hardware_interface/EffortJointInterface"
                    "</hardwareInterface>\n"
                    "    </joint>\n"
                    f'    <actuator name="{j.name}_motor">\n'
                    "      <mechanicalReduction>1</mechanicalReduction>\n"
                    "    </actuator>\n"
                    "  </transmission>")
        if self.gazebo:
            out.append(self.gazebo.rstrip("\n"))
        out.append("</robot>\n")
        return "\n".join(out)

    # ---------------- forward kinematics (numpy, for pose generation only) -----------------

    def fk(self, q: list[float], floating: bool) -> dict[str, np.ndarray]:
        """World placements (4x4) of every link; q in the core convention."""
        q = list(q)
        T0 = np.eye(4)
        if floating:
            T0[:3, :3] = quat_to_matrix(*q[3:7])
            T0[:3, 3] = q[:3]
            qj = q[7:]
        else:
            qj = q
        mov = self.movable
        if len(qj) != len(mov):
            raise ValueError(f"{self.name}: expected {len(mov)} joint positions, got {len(qj)}")
        val = {j.name: qj[i] for i, j in enumerate(mov)}
        child_of = {j.child: j for j in self.joints}
        out: dict[str, np.ndarray] = {}

        def place(link: str) -> np.ndarray:
            if link in out:
                return out[link]
            if link not in child_of:
                out[link] = T0
                return T0
            j = child_of[link]
            Tp = place(j.parent)
            To = np.eye(4)
            To[:3, :3] = rpy_matrix(j.rpy)
            To[:3, 3] = j.xyz
            Tq = np.eye(4)
            if j.type == "revolute":
                Tq[:3, :3] = axis_angle(j.axis, val[j.name])
            elif j.type == "prismatic":
                a = np.asarray(j.axis, float)
                Tq[:3, 3] = a / np.linalg.norm(a) * val[j.name]
            out[link] = Tp @ To @ Tq
            return out[link]

        for lk in self.links:
            place(lk.name)
        return out

    def spheres(self) -> list[tuple[str, np.ndarray, float]]:
        res = []
        for lk in self.links:
            for g in lk.collisions:
                if g.kind == "sphere":
                    res.append((lk.name, np.asarray(g.xyz, float), float(g.size[0])))
        return res

    def check(self) -> None:
        names = [lk.name for lk in self.links]
        assert len(set(names)) == len(names), "duplicate link"
        jn = [j.name for j in self.joints]
        assert len(set(jn)) == len(jn), "duplicate joint"
        for lk in self.links:
            if lk.mass is None:
                continue
            assert lk.mass > 0
            ev = np.linalg.eigvalsh(lk.inertia)
            assert ev.min() > 0, lk.name
            assert ev[0] + ev[1] >= ev[2] * (1 - 1e-12), lk.name


def gazebo(reference: str | None, *elements: str) -> str:
    """A ``<gazebo>`` extension block of the URDF (what Gazebo reads beyond URDF): for the link
    ``reference`` (None: the whole robot), one line per child element in ``elements``."""
    ref = f' reference="{reference}"' if reference else ""
    return f"  <gazebo{ref}>\n" + "".join(f"    {e}\n" for e in elements) + "  </gazebo>\n"


def gazebo_contact(link: str, mu: float, kp: float | None = None, kd: float | None = None,
                   min_depth: float | None = None, material: str | None = None) -> str:
    """Gazebo's contact properties of ``link``: friction coefficient ``mu`` (both directions),
    and where given contact stiffness ``kp`` [N/m], damping ``kd`` [N s/m], penetration
    ``min_depth`` [m] before contact forces act, and the display ``material``."""
    elements = [f"<mu1>{mu}</mu1>", f"<mu2>{mu}</mu2>"]
    for tag, value in (("kp", kp), ("kd", kd), ("minDepth", min_depth), ("material", material)):
        if value is not None:
            elements.append(f"<{tag}>{value}</{tag}>")
    return gazebo(link, *elements)


def gazebo_plugin(name: str, filename: str, **parameters: object) -> str:
    """A robot-wide ``<gazebo>`` block loading the Gazebo plugin ``filename`` as ``name`` with
    these parameters (one element each, in order)."""
    return gazebo(None, f'<plugin name="{name}" filename="{filename}">',
                  *(f"  <{k}>{v}</{k}>" for k, v in parameters.items()), "</plugin>")


# --------------------------------------------------------------------------------------------
# 1. quadruped (Zapolsky & Drumwright, Sec. 7 / Fig. 8: 16 cm tall, 3-DoF legs, spherical feet)
# --------------------------------------------------------------------------------------------

Q_BASE = (0.24, 0.12, 0.05)  # base box [m]
Q_MASS_BASE = 3.0
Q_HIP_X, Q_HIP_Y = 0.10, 0.05  # haa joint position in base frame
Q_HIP_OFF = 0.035  # lateral haa -> hfe offset
Q_L_THIGH = 0.08
Q_L_SHANK = 0.08
Q_FOOT_R = 0.0125
Q_STAND_ANGLE = 0.6  # |hfe| in the standing pose, knee = -2 hfe -> foot under the hip


def quadruped() -> tuple[Robot, dict]:
    r = Robot("quadruped")
    r.header_comment = """
  Small quadruped modelled after the virtual robot of Zapolsky & Drumwright (Sec. 7,
  Fig. 8): ~16 cm tall when standing, three-DoF legs (hip abduction/adduction "haa",
  hip flexion/extension "hfe", knee flexion/extension "kfe"), spherical feet giving a single
  point contact each. Total mass 4.8 kg, i.e. 47.09 N of total normal force at rest under
  standard gravity (the paper's Table 5 caption quotes 47.0882 N).
  Geometry is left/right and front/hind mirror symmetric; front knees bend backwards
  (kfe < 0) and hind knees forwards (kfe > 0) so the standing pose is symmetric about both
  vertical mid-planes. Foot links (LF_foot, ...) are attached by fixed joints at the shank
  tip; their origin is the centre of the collision sphere (radius 1.25 cm).
  Generated by wbc_dynamics/robots/_generate.py - edit that file, not this one.
"""
    hx, hy, hz = Q_BASE
    r.link("base_link", Q_MASS_BASE, (0, 0, 0), inertia_box(Q_MASS_BASE, hx, hy, hz),
           visuals=[Geom("box", Q_BASE, material="orange"),
                    Geom("box", (0.04, 0.08, 0.012), xyz=(0.0, 0.0, hz / 2 + 0.006),
                         material="dark_grey", name="battery_lid")],
           collisions=[Geom("box", Q_BASE)],
           comment="trunk; 3.0 kg incl. battery and electronics")
    # a massless IMU frame (frame-only link, no <inertial>)
    r.link("imu_link", None, comment="IMU frame: frame-only link without <inertial>")
    r.joint("imu_joint", "fixed", "base_link", "imu_link", xyz=(0.02, 0.0, 0.01))
    m_hip, m_thigh, m_shank, m_foot = 0.15, 0.17, 0.11, 0.02
    # leg order: alphabetical joint names == depth-first order (LF, LH, RF, RH)
    for leg in ("LF", "LH", "RF", "RH"):
        sx = 1.0 if leg[1] == "F" else -1.0
        sy = 1.0 if leg[0] == "L" else -1.0
        front = leg[1] == "F"
        r.link(f"{leg}_hip", m_hip, (0.0, sy * 0.6 * Q_HIP_OFF, 0.0),
               inertia_cyl(m_hip, 0.02, 0.04, "x"),
               visuals=[Geom("cylinder", (0.02, 0.04), rpy=(0, math.pi / 2, 0), material="grey")],
               collisions=[Geom("cylinder", (0.02, 0.04), rpy=(0, math.pi / 2, 0))])
        r.joint(f"{leg}_haa", "revolute", "base_link", f"{leg}_hip",
                xyz=(sx * Q_HIP_X, sy * Q_HIP_Y, 0.0), axis=(1, 0, 0),
                lower=-0.6, upper=0.6, velocity=20.0, effort=4.0, damping=0.01, friction=0.005)
        r.link(f"{leg}_thigh", m_thigh, (0.0, 0.0, -Q_L_THIGH / 2),
               inertia_box(m_thigh, 0.02, 0.02, Q_L_THIGH),
               visuals=[Geom("box", (0.02, 0.02, Q_L_THIGH), xyz=(0, 0, -Q_L_THIGH / 2),
                             material="dark_grey")],
               collisions=[Geom("box", (0.02, 0.02, Q_L_THIGH), xyz=(0, 0, -Q_L_THIGH / 2))])
        r.joint(f"{leg}_hfe", "revolute", f"{leg}_hip", f"{leg}_thigh",
                xyz=(0.0, sy * Q_HIP_OFF, 0.0), axis=(0, 1, 0),
                lower=-1.6, upper=1.6, velocity=20.0, effort=4.0, damping=0.01, friction=0.005)
        r.link(f"{leg}_shank", m_shank, (0.0, 0.0, -Q_L_SHANK / 2),
               inertia_cyl(m_shank, 0.008, Q_L_SHANK, "z"),
               visuals=[Geom("cylinder", (0.008, Q_L_SHANK), xyz=(0, 0, -Q_L_SHANK / 2),
                             material="grey")])
        r.joint(f"{leg}_kfe", "revolute", f"{leg}_thigh", f"{leg}_shank",
                xyz=(0.0, 0.0, -Q_L_THIGH), axis=(0, 1, 0),
                lower=-2.7 if front else 0.0, upper=0.0 if front else 2.7,
                velocity=20.0, effort=4.0, damping=0.01, friction=0.005)
        r.link(f"{leg}_foot", m_foot, (0, 0, 0), inertia_sphere(m_foot, Q_FOOT_R),
               visuals=[Geom("sphere", (Q_FOOT_R,), material="black")],
               collisions=[Geom("sphere", (Q_FOOT_R,), name=f"{leg}_foot_collision")],
               comment=f"{leg} foot: origin = centre of the contact sphere")
        r.joint(f"{leg}_foot_fixed", "fixed", f"{leg}_shank", f"{leg}_foot",
                xyz=(0.0, 0.0, -Q_L_SHANK))
    r.gazebo = (gazebo("base_link", "<material>Gazebo/Orange</material>")
                + "".join(gazebo_contact(f"{leg}_foot", 0.8, kp=1e6, kd=100.0, min_depth=0.0005)
                          for leg in ("LF", "LH", "RF", "RH"))
                + gazebo_plugin("p3d_base_controller", "libgazebo_ros_p3d.so",
                                body_name="base_link", update_rate=1000))
    # standing pose: front hfe = +a, kfe = -2a; hind mirrored (hfe = -a, kfe = +2a)
    a = Q_STAND_ANGLE
    qj = []
    for leg in ("LF", "LH", "RF", "RH"):
        s = 1.0 if leg[1] == "F" else -1.0
        qj += [0.0, s * a, -2.0 * s * a]
    q0 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] + qj
    T = r.fk(q0, True)
    zmin = min((T[lk][:3, :3] @ c + T[lk][:3, 3])[2] - rad for lk, c, rad in r.spheres())
    q0[2] = -zmin
    feet = [f"{leg}_foot" for leg in ("LF", "LH", "RF", "RH")]
    info = {
        "floating_base": True,
        "base_link": "base_link",
        "contact_links": feet,
        "foot_links": feet,
        "contact_radius": Q_FOOT_R,
        "standing_q": q0,
        "standing_height": q0[2],
        "legs": ["LF", "LH", "RF", "RH"],
        "description": "4.8 kg, 16 cm tall 12-DoF quadruped with sphere feet "
                       "(after Zapolsky & Drumwright, Fig. 8)",
    }
    return r, info


# --------------------------------------------------------------------------------------------
# 2. arm (7-DoF LBR-like, 4 one-DoF fingers) + box (Zapolsky & Drumwright, Sec. 7 / Fig. 9)
# --------------------------------------------------------------------------------------------

FINGER_LEN = 0.06
FINGER_BASE_Y = 0.09
FINGER_BASE_X = 0.025
FINGER_BASE_Z = 0.03  # palm top surface in the hand frame
TIP_R = 0.01
BOX_SIZE = (0.10, 0.10, 0.10)
BOX_MASS = 0.5
ARM_GRASP = [0.0, 0.5, 0.0, -1.6, 0.0, math.pi - 2.1, 0.0]


def arm() -> tuple[Robot, dict]:
    r = Robot("arm")
    r.header_comment = """
  Fixed-base 7-DoF manipulator (LBR-iiwa-like kinematics: axes z, y, z, -y, z, y, z; link
  lengths 0.36 / 0.42 / 0.40 / 0.126 m, ~1 m reach) with a hand carrying four 1-DoF fingers,
  modelled after the manipulator of Zapolsky & Drumwright (Sec. 7 / Fig. 9):
  "seven degrees of freedom and each finger has one degree of freedom, totaling eleven
  actuated degrees of freedom. The finger tips have spherical collision geometries".
  Fingers F1, F2 sit on the +y side of the palm, F3, F4 on the -y side; every finger closes
  (moves its tip towards the hand's y = 0 plane) for a positive joint angle. Fingertip links
  (F*_tip) are fixed-attached; their origin is the centre of a 1 cm collision sphere.
  The fixed `world` root link is a massless frame link (no <inertial>).
  Generated by wbc_dynamics/robots/_generate.py - edit that file, not this one.
"""
    r.link("world", None, comment="massless root frame (fixed base)")
    r.link("base_link", 4.0, (-0.01, 0.0, 0.07), inertia_cyl(4.0, 0.09, 0.1575),
           visuals=[Geom("cylinder", (0.09, 0.1575), xyz=(0, 0, 0.07875), material="grey")],
           collisions=[Geom("cylinder", (0.09, 0.1575), xyz=(0, 0, 0.07875))])
    r.joint("world_to_base", "fixed", "world", "base_link")
    # (name, parent offset z, axis, mass, length of link (for visuals/inertia), limits...)
    d = [0.1575, 0.2025, 0.2045, 0.2155, 0.1845, 0.2155, 0.081]
    seg = [0.2025, 0.2045, 0.2155, 0.1845, 0.2155, 0.081, 0.045]
    axes = [(0, 0, 1), (0, 1, 0), (0, 0, 1), (0, -1, 0), (0, 0, 1), (0, 1, 0), (0, 0, 1)]
    masses = [3.4, 3.4, 2.8, 2.6, 1.7, 1.6, 0.4]
    radii = [0.065, 0.065, 0.06, 0.06, 0.055, 0.05, 0.04]
    lim = [2.967, 2.094, 2.967, 2.094, 2.967, 2.094, 3.054]
    vel = [1.71, 1.71, 1.745, 2.269, 2.443, 3.142, 3.142]
    eff = [176.0, 176.0, 110.0, 110.0, 110.0, 40.0, 40.0]
    colors = ["orange", "grey", "orange", "grey", "orange", "grey", "dark_grey"]
    parent = "base_link"
    for i in range(7):
        n = i + 1
        m, rad, L = masses[i], radii[i], seg[i]
        I = inertia_cyl(m, rad, L)
        r.link(f"link_{n}", m, (0.0, 0.005 if i % 2 else -0.005, 0.45 * L), I,
               visuals=[Geom("cylinder", (rad, L), xyz=(0, 0, L / 2), material=colors[i]),
                        Geom("sphere", (rad,), material=colors[i])],
               collisions=[Geom("cylinder", (rad, L), xyz=(0, 0, L / 2))])
        r.joint(f"joint_{n}", "revolute", parent, f"link_{n}", xyz=(0, 0, d[i]), axis=axes[i],
                lower=-lim[i], upper=lim[i], velocity=vel[i], effort=eff[i],
                damping=0.5, friction=0.1, safety=True)
        parent = f"link_{n}"
    # hand (palm): fixed to the flange
    palm = (0.08, 0.22, FINGER_BASE_Z)
    r.link("hand", 0.6, (0, 0, FINGER_BASE_Z / 2), inertia_box(0.6, *palm),
           visuals=[Geom("box", palm, xyz=(0, 0, FINGER_BASE_Z / 2), material="dark_grey")],
           collisions=[Geom("box", palm, xyz=(0, 0, FINGER_BASE_Z / 2))],
           comment="palm; hand frame z = approach direction, fingers on the +-y sides")
    r.joint("flange_to_hand", "fixed", "link_7", "hand", xyz=(0, 0, 0.045))
    m_f, m_t = 0.04, 0.01
    for k, (sx, sy) in enumerate([(1, 1), (-1, 1), (1, -1), (-1, -1)]):
        fn = f"F{k + 1}"
        r.link(f"{fn}_link", m_f, (0, 0, FINGER_LEN / 2), inertia_cyl(m_f, 0.007, FINGER_LEN),
               visuals=[Geom("cylinder", (0.007, FINGER_LEN), xyz=(0, 0, FINGER_LEN / 2),
                             material="grey")])
        r.joint(f"{fn}_joint", "revolute", "hand", f"{fn}_link",
                xyz=(sx * FINGER_BASE_X, sy * FINGER_BASE_Y, FINGER_BASE_Z),
                axis=(1, 0, 0) if sy > 0 else (-1, 0, 0),
                lower=-0.3, upper=1.3, velocity=2.0, effort=5.0, damping=0.05, friction=0.01)
        r.link(f"{fn}_tip", m_t, (0, 0, 0), inertia_sphere(m_t, TIP_R),
               visuals=[Geom("sphere", (TIP_R,), material="black")],
               collisions=[Geom("sphere", (TIP_R,))],
               comment=f"{fn} fingertip: origin = centre of the contact sphere")
        r.joint(f"{fn}_tip_fixed", "fixed", f"{fn}_link", f"{fn}_tip", xyz=(0, 0, FINGER_LEN))
    r.gazebo = (gazebo(None, "<static>false</static>")
                + "".join(gazebo_contact(f"F{k}_tip", 1.0) for k in range(1, 5)))
    # grasp: tip centre at |y| = box half-width + tip radius
    alpha = math.asin((FINGER_BASE_Y - (BOX_SIZE[1] / 2 + TIP_R)) / FINGER_LEN)
    grasp_q = list(ARM_GRASP) + [alpha] * 4
    T = r.fk(grasp_q, False)
    T_hb = np.eye(4)
    T_hb[2, 3] = FINGER_BASE_Z + FINGER_LEN * math.cos(alpha)  # tips at the box mid-height
    T_box = T["hand"] @ T_hb
    box_pose = [float(x) for x in T_box[:3, 3]] + matrix_to_quat(T_box[:3, :3])
    tips = [f"F{k}_tip" for k in range(1, 5)]
    info = {
        "floating_base": False,
        "base_link": "base_link",
        "root_link": "world",
        "hand_link": "hand",
        "contact_links": tips,
        "fingertip_links": tips,
        "finger_joints": [f"F{k}_joint" for k in range(1, 5)],
        "contact_radius": TIP_R,
        "standing_q": [0.0, 0.5, 0.0, -1.6, 0.0, 1.0, 0.0] + [0.0] * 4,
        "grasp_q": grasp_q,
        "box_pose": box_pose,
        "box_size": list(BOX_SIZE),
        "box_mass": BOX_MASS,
        "description": "7-DoF LBR-like arm + 4 one-DoF fingers (11 DoF) grasping a box "
                       "(after Zapolsky & Drumwright, Fig. 9)",
    }
    return r, info


def _cube_object(name: str, size: tuple, mass: float, purpose: str,
                 description: str) -> tuple[Robot, dict]:
    """A graspable object: one free solid box (6 unactuated DoF, load it with a free-flyer
    root), link frame at its geometric centre = centre of mass."""
    r = Robot(name, transmissions=False)
    density = f"{mass / (size[0] * size[1] * size[2]):g} kg/m^3"
    if name == "box":
        density += ("; the paper's \"heavy\" box uses\n  6000 kg/m^3, i.e. 6 kg at this size - "
                    "scale the mass if reproducing that experiment")
    r.header_comment = f"""
  {purpose}: a single free rigid body (6 unactuated DoF, load
  it with a free-flyer root). {size[0] * 100:g} x {size[1] * 100:g} x
  {size[2] * 100:g} cm, {mass:g} kg (solid, {density}).
  Link frame at the geometric centre = centre of mass; faces at +-{size[0] / 2:g} m.
  Generated by wbc_dynamics/robots/_generate.py - edit that file, not this one.
"""
    r.link(name, mass, (0, 0, 0), inertia_box(mass, *size),
           visuals=[Geom("box", size, material="wood")],
           collisions=[Geom("box", size, name=f"{name}_collision")])
    r.gazebo = gazebo_contact(name, 1.0, material="Gazebo/Wood")
    info = {
        "floating_base": True,
        "base_link": name,
        "contact_links": [],
        "size": list(size),
        "mass": mass,
        "standing_q": [0.0, 0.0, size[2] / 2, 0.0, 0.0, 0.0, 1.0],
        "description": description,
    }
    return r, info


def box() -> tuple[Robot, dict]:
    return _cube_object("box", BOX_SIZE, BOX_MASS,
                        "Grasped object of Zapolsky & Drumwright, Fig. 9",
                        "free 10 cm cube, 0.5 kg (the grasped object of Zapolsky & Drumwright, "
                        "Fig. 9)")


#: a cube a parallel gripper can hold: the Franka hand opens to 8 cm (config/robots/panda_grasp)
SMALL_BOX_SIZE = (0.04, 0.04, 0.04)
SMALL_BOX_MASS = 0.1


def small_box() -> tuple[Robot, dict]:
    return _cube_object("small_box", SMALL_BOX_SIZE, SMALL_BOX_MASS,
                        "Graspable object for parallel grippers (config/robots/panda_grasp.yaml)",
                        "free 4 cm cube, 0.1 kg (for parallel grippers: panda_grasp)")


# --------------------------------------------------------------------------------------------
# 3. branched floating-base test system (Saccon et al., Fig. 4)
# --------------------------------------------------------------------------------------------


def _rot_inertia(I: np.ndarray, rpy) -> np.ndarray:
    R = rpy_matrix(rpy)
    return R @ I @ R.T


def branched() -> tuple[Robot, dict]:
    r = Robot("branched")
    r.header_comment = """
  Floating-base branched multibody test system after Saccon et al. (Fig. 4: "a branched system with
  a moving base (yellow) with revolute (green), prismatic (red), and helical (blue) joints";
  Fig. 4b perturbs every joint to 0.3 m or rad).
  The paper gives only this caption - no joint count, dimensions or inertias - so the
  following were CHOSEN here: three branches A, B, C from the base; branch B forks after its
  second joint into sub-branches Ba and Bb; 10 joints in total (6 revolute, 4 prismatic).
  URDF has no helical (screw) joint: the two helical joints of the figure are modelled as
  revolute joints about the screw axis (a3_revolute_helical, bb2_revolute_helical), i.e. with
  zero pitch. Masses 0.3-1 kg per body, base 3 kg. Some inertias are given in a rotated
  principal frame (<inertial><origin rpy=...>) and some directly with products of inertia;
  some joint axes are oblique unit vectors and some joint origins carry rpy rotations, to
  exercise a dynamics loader. Leaf links carry small contact spheres offset from the link
  origin. Generated by wbc_dynamics/robots/_generate.py - edit that file, not this one.
"""
    base_size = (0.3, 0.2, 0.1)
    r.link("base", 3.0, (0.01, -0.005, 0.0), inertia_box(3.0, *base_size),
           visuals=[Geom("box", base_size, material="yellow")],
           collisions=[Geom("box", base_size)], comment="moving base (yellow in Fig. 4)")
    c = 0.6 / math.sqrt(0.6**2 + 0.8**2)
    s = 0.8 / math.sqrt(0.6**2 + 0.8**2)

    def body(name, m, size, color, com=(0.0, 0.0, 0.0), rot_rpy=None, inertial_rpy=(0, 0, 0),
             sphere=None):
        I = inertia_box(m, *size)
        if rot_rpy is not None:  # full inertia with products of inertia
            I = _rot_inertia(I, rot_rpy)
        cols = [Geom("box", size, xyz=com)]
        vis = [Geom("box", size, xyz=com, material=color)]
        if sphere is not None:
            cols.append(Geom("sphere", (0.02,), xyz=sphere, name=f"{name}_contact"))
            vis.append(Geom("sphere", (0.02,), xyz=sphere, material="black"))
        r.link(name, m, com, I, inertial_rpy=inertial_rpy, visuals=vis, collisions=cols)

    # branch A: revolute - prismatic - helical(as revolute)
    body("a1", 0.8, (0.2, 0.05, 0.05), "green", com=(0.1, 0.0, 0.0))
    r.joint("a1_revolute", "revolute", "base", "a1", xyz=(0.15, 0.0, 0.05), axis=(0, 0, 1),
            lower=-3.0, upper=3.0, velocity=5.0, effort=50.0, comment="branch A")
    body("a2", 0.5, (0.15, 0.04, 0.04), "red", com=(0.075, 0.0, 0.0), rot_rpy=(0.2, 0.1, 0.3))
    r.joint("a2_prismatic", "prismatic", "a1", "a2", xyz=(0.2, 0.0, 0.0), axis=(1, 0, 0),
            lower=-0.1, upper=0.5, velocity=1.0, effort=200.0)
    body("a3", 0.3, (0.1, 0.03, 0.03), "blue", com=(0.05, 0.0, 0.0), inertial_rpy=(0.4, 0.0, 0.2),
         sphere=(0.1, 0.0, 0.0))
    r.joint("a3_revolute_helical", "revolute", "a2", "a3", xyz=(0.15, 0.0, 0.0),
            rpy=(0.3, 0.0, 0.0), axis=(0, c, s), lower=-3.0, upper=3.0, velocity=5.0,
            effort=20.0, comment="helical joint of Fig. 4 modelled as revolute (zero pitch)")
    # branch B: prismatic - revolute, then fork
    body("b1", 1.0, (0.06, 0.06, 0.2), "red", com=(0.0, 0.0, -0.1))
    r.joint("b1_prismatic", "prismatic", "base", "b1", xyz=(-0.15, 0.0, -0.05), axis=(0, 0, -1),
            lower=-0.1, upper=0.4, velocity=1.0, effort=300.0, comment="branch B")
    body("b2", 0.7, (0.05, 0.2, 0.05), "green", com=(0.0, 0.0, -0.05), rot_rpy=(0.0, 0.3, -0.2))
    r.joint("b2_revolute", "revolute", "b1", "b2", xyz=(0.0, 0.0, -0.2), rpy=(0.0, 0.0, 0.5),
            axis=(0, 1, 0), lower=-2.5, upper=2.5, velocity=5.0, effort=60.0)
    body("ba1", 0.4, (0.03, 0.15, 0.03), "green", com=(0.0, 0.075, 0.0), sphere=(0.0, 0.15, 0.0))
    r.joint("ba1_revolute", "revolute", "b2", "ba1", xyz=(0.0, 0.1, -0.05), axis=(1, 0, 0),
            lower=-2.5, upper=2.5, velocity=5.0, effort=30.0, comment="sub-branch Ba")
    body("bb1", 0.4, (0.03, 0.03, 0.12), "red", com=(0.0, 0.0, -0.06), rot_rpy=(0.5, -0.2, 0.1))
    r.joint("bb1_prismatic", "prismatic", "b2", "bb1", xyz=(0.0, -0.1, -0.05),
            rpy=(0.0, 0.2, 0.0), axis=(0, s, -c), lower=-0.1, upper=0.3, velocity=1.0,
            effort=150.0, comment="sub-branch Bb (oblique prismatic axis)")
    body("bb2", 0.3, (0.1, 0.03, 0.03), "blue", com=(0.05, 0.0, 0.0), sphere=(0.1, 0.0, 0.0))
    r.joint("bb2_revolute_helical", "revolute", "bb1", "bb2", xyz=(0.0, 0.0, -0.12),
            axis=(c, 0, s), lower=-3.0, upper=3.0, velocity=5.0, effort=20.0,
            comment="helical joint of Fig. 4 modelled as revolute (zero pitch)")
    # branch C: revolute - prismatic
    body("c1", 0.6, (0.04, 0.04, 0.15), "green", com=(0.0, 0.0, 0.075), inertial_rpy=(0, 0.3, 0))
    r.joint("c1_revolute", "revolute", "base", "c1", xyz=(0.0, 0.05, 0.05),
            rpy=(-0.4, 0.0, 0.0), axis=(0, 1, 0), lower=-2.0, upper=2.0, velocity=5.0,
            effort=50.0, comment="branch C")
    body("c2", 0.3, (0.03, 0.03, 0.1), "red", com=(0.0, 0.0, 0.05), sphere=(0.0, 0.0, 0.1))
    r.joint("c2_prismatic", "prismatic", "c1", "c2", xyz=(0.0, 0.0, 0.15), axis=(0, 0, 1),
            lower=-0.05, upper=0.3, velocity=1.0, effort=100.0)
    n = len(r.movable)
    info = {
        "floating_base": True,
        "base_link": "base",
        "contact_links": ["a3", "ba1", "bb2", "c2"],
        "standing_q": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0] + [0.0] * n,
        "perturbed_q": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0] + [0.3] * n,
        "prismatic_joints": [j.name for j in r.movable if j.type == "prismatic"],
        "revolute_joints": [j.name for j in r.movable if j.type == "revolute"],
        "description": "floating-base branched test system with revolute and prismatic joints "
                       "(Saccon et al., Fig. 4; helical joints modelled as revolute)",
    }
    return r, info


# --------------------------------------------------------------------------------------------
# 4. humanoid (31 DoF)
# --------------------------------------------------------------------------------------------

H_THIGH = 0.38
H_SHIN = 0.38
H_ANKLE_H = 0.06  # ankle axis above the sole bottom
SOLE = (0.22, 0.11, 0.02)
SOLE_X = 0.03  # sole centre x offset (forward) from the ankle
CORNER_R = 0.01
H_KNEE_BEND = 0.3
M_CORNER = 0.005  # kg, sole-corner contact links
M_HAND_C = 0.05  # kg, hand contact-sphere links


def humanoid() -> tuple[Robot, dict]:
    r = Robot("humanoid")
    r.header_comment = """
  Generic 31-DoF humanoid (about 1.5 m tall, 50 kg): 6-DoF legs (hip yaw/roll/pitch, knee,
  ankle pitch/roll), 3-DoF torso (yaw/pitch/roll), 7-DoF arms (shoulder pitch/roll/yaw, elbow,
  wrist yaw/pitch/roll), 2-DoF neck. Feet carry a 22 x 11 x 2 cm sole collision box plus four
  1 cm contact spheres at the sole corners on separate fixed-attached links (l_foot_toe_left,
  l_foot_toe_right, l_foot_heel_left, l_foot_heel_right, same for r_); sphere bottoms are flush
  with the sole box bottom. *_sole are massless frame links (no <inertial>) at the centre of the
  sole bottom. Hands carry a 4 cm contact sphere on *_hand_contact links.
  The contact-sphere links carry a tiny explicit <inertial> (5 g / 50 g, taken from the foot /
  hand mass) on purpose: simulators such as MuJoCo give a link WITHOUT <inertial> but WITH a
  collision geometry a mass from the geometry's volume, which would make the simulated robot
  heavier than the dynamics model.
  Generated by wbc_dynamics/robots/_generate.py - edit that file, not this one.
"""
    pel = (0.16, 0.28, 0.12)
    r.link("pelvis", 8.0, (0, 0, 0), inertia_box(8.0, *pel),
           visuals=[Geom("box", pel, material="grey")], collisions=[Geom("box", pel)])
    corners = {"toe_left": (1, 1), "toe_right": (1, -1), "heel_left": (-1, 1),
               "heel_right": (-1, -1)}
    for side in ("l", "r"):
        sy = 1.0 if side == "l" else -1.0

        def jnt(name, parent, child, xyz, axis, lo, hi, vel, eff, rpy=(0, 0, 0), side=side):
            r.joint(f"{side}_{name}", "revolute", parent, child, xyz=xyz, rpy=rpy, axis=axis,
                    lower=lo, upper=hi, velocity=vel, effort=eff, damping=0.1, friction=0.05)

        def sym(lo, hi, side=side):  # mirrored limits for roll/yaw joints of the right side
            return (lo, hi) if side == "l" else (-hi, -lo)

        p = side
        r.link(f"{p}_hip_yaw_link", 0.8, (0, 0, -0.03), inertia_cyl(0.8, 0.05, 0.06),
               visuals=[Geom("cylinder", (0.05, 0.06), xyz=(0, 0, -0.03), material="dark_grey")])
        jnt("hip_yaw", "pelvis", f"{p}_hip_yaw_link", (0, sy * 0.09, -0.08), (0, 0, 1),
          *sym(-0.5, 0.8), 6.0, 100.0)
        r.link(f"{p}_hip_roll_link", 0.8, (0, 0, 0), inertia_cyl(0.8, 0.05, 0.08, "x"),
               visuals=[Geom("cylinder", (0.05, 0.08), rpy=(0, math.pi / 2, 0),
                             material="dark_grey")])
        jnt("hip_roll", f"{p}_hip_yaw_link", f"{p}_hip_roll_link", (0, 0, -0.06), (1, 0, 0),
          *sym(-0.4, 0.6), 6.0, 150.0)
        r.link(f"{p}_thigh", 4.0, (0, sy * 0.005, -0.17), inertia_cyl(4.0, 0.06, H_THIGH),
               visuals=[Geom("cylinder", (0.06, H_THIGH), xyz=(0, 0, -H_THIGH / 2),
                             material="white")],
               collisions=[Geom("cylinder", (0.06, H_THIGH - 0.1), xyz=(0, 0, -H_THIGH / 2))])
        jnt("hip_pitch", f"{p}_hip_roll_link", f"{p}_thigh", (0, 0, 0), (0, 1, 0), -2.2, 0.7,
          7.0, 150.0)
        r.link(f"{p}_shin", 2.5, (0, 0, -0.16), inertia_cyl(2.5, 0.045, H_SHIN),
               visuals=[Geom("cylinder", (0.045, H_SHIN), xyz=(0, 0, -H_SHIN / 2),
                             material="white")],
               collisions=[Geom("cylinder", (0.045, H_SHIN - 0.1), xyz=(0, 0, -H_SHIN / 2))])
        jnt("knee", f"{p}_thigh", f"{p}_shin", (0, 0, -H_THIGH), (0, 1, 0), 0.0, 2.5, 8.0, 200.0)
        r.link(f"{p}_ankle_link", 0.3, (0, 0, 0), inertia_cyl(0.3, 0.03, 0.05, "y"),
               visuals=[Geom("cylinder", (0.03, 0.05), rpy=(math.pi / 2, 0, 0),
                             material="dark_grey")])
        jnt("ankle_pitch", f"{p}_shin", f"{p}_ankle_link", (0, 0, -H_SHIN), (0, 1, 0), -1.0, 0.8,
          8.0, 100.0)
        sole_c = (SOLE_X, 0.0, -H_ANKLE_H + SOLE[2] / 2)
        m_foot = 1.0 - 4 * M_CORNER  # 1 kg foot incl. its four corner-sphere links
        r.link(f"{p}_foot", m_foot, (SOLE_X, 0, -0.035),
               inertia_box(m_foot, SOLE[0], SOLE[1], 0.05),
               visuals=[Geom("box", SOLE, xyz=sole_c, material="black"),
                        Geom("box", (0.1, 0.08, 0.04), xyz=(0.0, 0.0, -0.03), material="grey")],
               collisions=[Geom("box", SOLE, xyz=sole_c, name=f"{p}_sole_collision")])
        jnt("ankle_roll", f"{p}_ankle_link", f"{p}_foot", (0, 0, 0), (1, 0, 0),
          *sym(-0.5, 0.5), 8.0, 80.0)
        r.link(f"{p}_sole", None, comment=f"{p} sole frame (massless), centre of sole bottom")
        r.joint(f"{p}_sole_fixed", "fixed", f"{p}_foot", f"{p}_sole",
                xyz=(SOLE_X, 0.0, -H_ANKLE_H))
        for cn, (cx, cy) in corners.items():
            ln = f"{p}_foot_{cn}"
            r.link(ln, M_CORNER, (0, 0, 0), inertia_sphere(M_CORNER, CORNER_R),
                   collisions=[Geom("sphere", (CORNER_R,), name=f"{ln}_collision")],
                   visuals=[Geom("sphere", (CORNER_R,), material="red")],
                   comment="sole-corner contact sphere (origin = sphere centre)")
            r.joint(f"{ln}_fixed", "fixed", f"{p}_foot", ln,
                    xyz=(SOLE_X + cx * (SOLE[0] / 2 - CORNER_R), cy * (SOLE[1] / 2 - CORNER_R),
                         -H_ANKLE_H + CORNER_R))
    # torso
    r.link("torso_yaw_link", 1.0, (0, 0, 0.025), inertia_cyl(1.0, 0.06, 0.05),
           visuals=[Geom("cylinder", (0.06, 0.05), xyz=(0, 0, 0.025), material="dark_grey")])
    r.joint("torso_yaw", "revolute", "pelvis", "torso_yaw_link", xyz=(0, 0, 0.07), axis=(0, 0, 1),
            lower=-1.0, upper=1.0, velocity=4.0, effort=150.0, damping=0.1, friction=0.05)
    r.link("torso_pitch_link", 1.0, (0, 0, 0), inertia_cyl(1.0, 0.05, 0.1, "y"),
           visuals=[Geom("cylinder", (0.05, 0.1), rpy=(math.pi / 2, 0, 0), material="dark_grey")])
    r.joint("torso_pitch", "revolute", "torso_yaw_link", "torso_pitch_link", xyz=(0, 0, 0.05),
            axis=(0, 1, 0), lower=-0.5, upper=1.0, velocity=4.0, effort=150.0, damping=0.1,
            friction=0.05)
    chest = (0.18, 0.30, 0.35)
    r.link("chest", 10.0, (-0.01, 0, 0.2), inertia_box(10.0, *chest),
           visuals=[Geom("box", chest, xyz=(0, 0, 0.2), material="white")],
           collisions=[Geom("box", chest, xyz=(0, 0, 0.2))])
    r.joint("torso_roll", "revolute", "torso_pitch_link", "chest", axis=(1, 0, 0), lower=-0.5,
            upper=0.5, velocity=4.0, effort=150.0, damping=0.1, friction=0.05)

    def arm_side(side: str) -> None:
        sy = 1.0 if side == "l" else -1.0
        p = side

        def sym(lo, hi):
            return (lo, hi) if side == "l" else (-hi, -lo)

        def jnt(name, parent, child, xyz, axis, lo, hi, vel, eff):
            r.joint(f"{p}_{name}", "revolute", parent, child, xyz=xyz, axis=axis, lower=lo,
                    upper=hi, velocity=vel, effort=eff, damping=0.05, friction=0.02)

        r.link(f"{p}_shoulder_pitch_link", 0.5, (0, sy * 0.02, 0),
               inertia_cyl(0.5, 0.04, 0.06, "y"),
               visuals=[Geom("cylinder", (0.04, 0.06), rpy=(math.pi / 2, 0, 0), material="grey")])
        jnt("shoulder_pitch", "chest", f"{p}_shoulder_pitch_link", (0, sy * 0.19, 0.33), (0, 1, 0),
          -3.0, 1.2, 6.0, 80.0)
        r.link(f"{p}_shoulder_roll_link", 0.5, (0, 0, -0.02), inertia_cyl(0.5, 0.04, 0.06, "x"),
               visuals=[Geom("cylinder", (0.04, 0.06), rpy=(0, math.pi / 2, 0), material="grey")])
        jnt("shoulder_roll", f"{p}_shoulder_pitch_link", f"{p}_shoulder_roll_link",
          (0, sy * 0.04, 0), (1, 0, 0), *sym(-0.3, 2.5), 6.0, 80.0)
        r.link(f"{p}_upper_arm", 1.5, (0, 0, -0.13), inertia_cyl(1.5, 0.04, 0.26),
               visuals=[Geom("cylinder", (0.04, 0.26), xyz=(0, 0, -0.13), material="white")],
               collisions=[Geom("cylinder", (0.04, 0.2), xyz=(0, 0, -0.14))])
        jnt("shoulder_yaw", f"{p}_shoulder_roll_link", f"{p}_upper_arm", (0, 0, -0.04), (0, 0, 1),
          -2.0, 2.0, 6.0, 50.0)
        r.link(f"{p}_forearm", 1.0, (0, 0, -0.11), inertia_cyl(1.0, 0.035, 0.24),
               visuals=[Geom("cylinder", (0.035, 0.24), xyz=(0, 0, -0.12), material="white")],
               collisions=[Geom("cylinder", (0.035, 0.18), xyz=(0, 0, -0.12))])
        jnt("elbow", f"{p}_upper_arm", f"{p}_forearm", (0, 0, -0.26), (0, 1, 0), -2.5, 0.0,
          6.0, 50.0)
        r.link(f"{p}_wrist_yaw_link", 0.3, (0, 0, 0), inertia_cyl(0.3, 0.03, 0.04),
               visuals=[Geom("cylinder", (0.03, 0.04), material="dark_grey")])
        jnt("wrist_yaw", f"{p}_forearm", f"{p}_wrist_yaw_link", (0, 0, -0.24), (0, 0, 1), -2.0,
          2.0, 8.0, 20.0)
        r.link(f"{p}_wrist_pitch_link", 0.3, (0, 0, 0), inertia_cyl(0.3, 0.025, 0.05, "y"),
               visuals=[Geom("cylinder", (0.025, 0.05), rpy=(math.pi / 2, 0, 0),
                             material="dark_grey")])
        jnt("wrist_pitch", f"{p}_wrist_yaw_link", f"{p}_wrist_pitch_link", (0, 0, 0), (0, 1, 0),
          -1.2, 1.2, 8.0, 20.0)
        hand = (0.05, 0.08, 0.1)
        r.link(f"{p}_hand", 0.4 - M_HAND_C, (0, 0, -0.06), inertia_box(0.4 - M_HAND_C, *hand),
               visuals=[Geom("box", hand, xyz=(0, 0, -0.06), material="grey")])
        jnt("wrist_roll", f"{p}_wrist_pitch_link", f"{p}_hand", (0, 0, 0), (1, 0, 0),
          *sym(-1.0, 1.0), 8.0, 20.0)
        r.link(f"{p}_hand_contact", M_HAND_C, (0, 0, 0), inertia_sphere(M_HAND_C, 0.04),
               collisions=[Geom("sphere", (0.04,), name=f"{p}_hand_collision")],
               visuals=[Geom("sphere", (0.04,), material="red")],
               comment="hand contact sphere (origin = sphere centre)")
        r.joint(f"{p}_hand_contact_fixed", "fixed", f"{p}_hand", f"{p}_hand_contact",
                xyz=(0, 0, -0.08))

    arm_side("l")
    r.link("neck_link", 0.3, (0, 0, 0.03), inertia_cyl(0.3, 0.03, 0.06),
           visuals=[Geom("cylinder", (0.03, 0.06), xyz=(0, 0, 0.03), material="dark_grey")])
    r.joint("neck_yaw", "revolute", "chest", "neck_link", xyz=(0, 0, 0.38), axis=(0, 0, 1),
            lower=-1.5, upper=1.5, velocity=5.0, effort=10.0, damping=0.02, friction=0.01)
    r.link("head", 2.0, (0.01, 0, 0.1), inertia_sphere(2.0, 0.1),
           visuals=[Geom("sphere", (0.1,), xyz=(0, 0, 0.1), material="white"),
                    Geom("box", (0.02, 0.12, 0.03), xyz=(0.095, 0, 0.11), material="black",
                         name="visor")],
           collisions=[Geom("sphere", (0.1,), xyz=(0, 0, 0.1))])
    r.joint("neck_pitch", "revolute", "neck_link", "head", xyz=(0, 0, 0.06), axis=(0, 1, 0),
            lower=-0.6, upper=0.8, velocity=5.0, effort=10.0, damping=0.02, friction=0.01)
    arm_side("r")
    r.gazebo = ("".join(gazebo_contact(f"{p}_foot", 1.0, kp=1e6, kd=100.0) for p in ("l", "r"))
                + gazebo_plugin("imu_plugin", "libgazebo_ros_imu_sensor.so", bodyName="pelvis",
                                updateRateHZ=500.0))
    names = [j.name for j in r.movable]
    b = H_KNEE_BEND
    pose = {n: 0.0 for n in names}
    for p in ("l", "r"):
        sy = 1.0 if p == "l" else -1.0
        pose[f"{p}_hip_pitch"] = -b
        pose[f"{p}_knee"] = 2 * b
        pose[f"{p}_ankle_pitch"] = -b
        pose[f"{p}_shoulder_roll"] = sy * 0.2
        pose[f"{p}_elbow"] = -0.4
    q0 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] + [pose[n] for n in names]
    T = r.fk(q0, True)
    foot_spheres = [s for s in r.spheres() if "_foot_" in s[0]]
    zmin = min((T[lk][:3, :3] @ c + T[lk][:3, 3])[2] - rad for lk, c, rad in foot_spheres)
    q0[2] = -zmin
    feet_c = [f"{p}_foot_{cn}" for p in ("l", "r") for cn in corners]
    info = {
        "floating_base": True,
        "base_link": "pelvis",
        "contact_links": feet_c + ["l_hand_contact", "r_hand_contact"],
        "foot_contact_links": feet_c,
        "hand_contact_links": ["l_hand_contact", "r_hand_contact"],
        "foot_links": ["l_foot", "r_foot"],
        "sole_links": ["l_sole", "r_sole"],
        "sole_size": list(SOLE),
        "standing_q": q0,
        "standing_height": q0[2],
        "description": "31-DoF, 50 kg humanoid with sole boxes, sole-corner and hand spheres",
    }
    return r, info


# --------------------------------------------------------------------------------------------


def build_all() -> dict[str, tuple[Robot, dict]]:
    out = {}
    for fn in (quadruped, arm, box, small_box, branched, humanoid):
        rb, info = fn()
        rb.check()
        info["joint_names"] = [j.name for j in rb.movable]
        info["total_mass"] = round(rb.total_mass(), 12)
        info["n_joints"] = len(rb.movable)
        out[rb.name] = (rb, info)
    return out


def _plain(x):
    """numpy scalars -> Python floats (recursively) so the data file needs no numpy."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (bool, str)) or x is None:
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    return float(x)


def main() -> None:
    robots = build_all()
    for name, (rb, _) in robots.items():
        with open(os.path.join(HERE, f"{name}.urdf"), "w") as fh:
            fh.write(rb.xml())
    data = _plain({name: info for name, (_, info) in robots.items()})
    # data, not code: one JSON document that robots/__init__.py reads at import
    with open(os.path.join(HERE, "robot_data.json"), "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, allow_nan=False)
        fh.write("\n")
    for name, (rb, _info) in robots.items():
        print(f"{name}: {len(rb.movable)} joints, mass {rb.total_mass():.4f} kg")


if __name__ == "__main__":
    main()
