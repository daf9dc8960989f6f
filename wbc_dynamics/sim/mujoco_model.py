"""A MuJoCo plant built from the same URDF the controller uses.

The URDF is parsed with ``urdf_parser_py`` and translated link by link into MJCF, so the plant's
masses, inertias and kinematics are exactly the URDF's (``test/test_sim_mujoco_model.py`` checks
MuJoCo's mass matrix and bias forces against the dynamics core to ~1e-9):

* every URDF link becomes a MuJoCo body named after the link; fixed joints become welded child
  bodies (their frames are kept so contact forces can be reported per link);
* revolute/continuous joints become hinges, prismatic joints slides (axis in the joint frame, as
  in URDF); the floating base is a MuJoCo ``freejoint`` on the root link;
* ``<inertial>`` becomes ``<inertial pos quat mass fullinertia>`` (``inertiafromgeom`` is off, so
  collision geometry never adds mass); links without ``<inertial>`` are massless;
* collision primitives (sphere, box, cylinder) are copied; meshes referenced by ``package://``
  or relative paths are resolved (``AMENT_PREFIX_PATH``/``ROS_PACKAGE_PATH``/next to the URDF)
  and used if MuJoCo can read them (STL/OBJ), otherwise skipped with one warning;
* joint damping, friction and armature are zero (the controller's rigid-body model has none);
  joint position limits are enforced by MuJoCo; effort limits become motor ``ctrlrange``.

Environment (paper Sec. 7.5): a ground plane with Coulomb friction ``mu`` (``"low"`` = 0.1,
``"high"`` = :data:`HIGH_FRICTION`, standing in for the paper's infinite friction) and either a
*rigid* contact (the stiffest MuJoCo contact the time step allows) or a *compliant* spring-damper
contact tuned so a quadruped at rest sinks about 1 mm into the ground, like the paper's compliant
terrain. Optional free bodies (the arm's graspable box, Sec. 7.1) can be added.

Conventions. The controller's (and Pinocchio's) floating base uses ``q = [p, quat(x, y, z, w),
joints]`` and ``v = [v_lin, w]`` both in the base frame; MuJoCo's free joint uses ``qpos = [p,
quat(w, x, y, z)]`` and ``qvel = [v_lin in world, w in base]``. :class:`MujocoPlant` converts both
ways, and reorders joints by name into the order the caller asks for.
"""

from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

try:  # pragma: no cover - exercised whenever mujoco is installed
    import mujoco
except ImportError:  # pragma: no cover
    mujoco = None

__all__ = [
    "HIGH_FRICTION",
    "LOW_FRICTION",
    "FreeBody",
    "GroundOptions",
    "MujocoPlant",
    "build_mjcf",
    "parse_urdf",
]

#: Coulomb coefficient used for the paper's "high (sticky), mu = infinity" terrain. MuJoCo needs a
#: finite value; with an elliptic cone, mu = 10 means a cone half-angle of 84 deg: nothing slips.
HIGH_FRICTION = 10.0
#: The paper's "low (slippery)" terrain (Sec. 7.5).
LOW_FRICTION = 0.1

_ROBOT_CONTYPE, _ROBOT_CONAFFINITY = 1, 2  # robot links never collide with each other
_ENV_CONTYPE, _ENV_CONAFFINITY = 2, 3  # environment collides with robot and with free bodies


@dataclass
class GroundOptions:
    """Ground and simulator settings (Sec. 7.5 terrain cases).

    Attributes:
        friction: Coulomb coefficient, or ``"high"`` / ``"low"``.
        compliant: False = rigid ground (stiffest contact for the time step), True = penalty-like
            spring-damper ground (``compliant_timeconst``), ~1 mm rest penetration of a quadruped.
        height: ground plane height in world z [m]; ``None`` = no ground.
        timestep: integration step [s].
        compliant_timeconst: MuJoCo ``solref`` time constant of the compliant ground [s].
    """

    friction: float | str = "high"
    compliant: bool = False
    height: float | None = 0.0
    timestep: float = 0.001
    compliant_timeconst: float = 0.012

    @property
    def mu(self) -> float:
        """Coulomb friction coefficient (resolved preset)."""
        if isinstance(self.friction, str):
            presets = {"high": HIGH_FRICTION, "low": LOW_FRICTION}
            if self.friction not in presets:
                raise ValueError(
                    f"friction: expected a number, 'high' or 'low', got {self.friction!r}"
                )
            return presets[self.friction]
        mu = float(self.friction)
        if not math.isfinite(mu) or mu < 0.0:
            raise ValueError(f"friction: must be finite and >= 0, got {self.friction!r}")
        return mu

    def solref(self) -> tuple[float, float]:
        """MuJoCo ``solref`` (time constant [s], damping ratio) of ground contacts."""
        if self.compliant:
            return (max(self.compliant_timeconst, 2.0 * self.timestep), 1.0)
        return (2.0 * self.timestep, 1.0)

    def solimp(self) -> tuple[float, ...]:
        """MuJoCo ``solimp`` of ground contacts (near-hard for rigid ground)."""
        if self.compliant:
            return (0.9, 0.95, 0.001, 0.5, 2.0)
        return (0.99, 0.999, 0.0005, 0.5, 2.0)


@dataclass
class FreeBody:
    """A free rigid box added to the scene (e.g. the graspable box of Sec. 7.1).

    Attributes:
        name: body name.
        size: full edge lengths (x, y, z) [m].
        mass: [kg]; its inertia is the solid box's.
        pos: initial position of the centre in world [m].
        quat_xyzw: initial orientation.
        friction: Coulomb coefficient of its surface (used against fingers and ground).
    """

    name: str
    size: tuple[float, float, float]
    mass: float
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat_xyzw: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    friction: float = 1.0

    def inertia(self) -> np.ndarray:
        """Principal moments of inertia of the solid box about its centre [kg m^2]."""
        x, y, z = self.size
        m = self.mass
        return np.array([m * (y * y + z * z), m * (x * x + z * z), m * (x * x + y * y)]) / 12.0


# --------------------------------------------------------------------------------------------
# URDF parsing (only what the plant needs; independent of the core so it can check it)
# --------------------------------------------------------------------------------------------


@dataclass
class _Geom:
    kind: str  # sphere | box | cylinder | mesh
    xyz: np.ndarray
    rpy: np.ndarray
    size: tuple = ()
    filename: str = ""
    scale: tuple = (1.0, 1.0, 1.0)


@dataclass
class _Link:
    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia_rpy: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: tuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # ixx iyy izz ixy ixz iyz
    geoms: list = field(default_factory=list)


@dataclass
class _Joint:
    name: str
    kind: str  # revolute | continuous | prismatic | fixed
    parent: str
    child: str
    xyz: np.ndarray
    rpy: np.ndarray
    axis: np.ndarray
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf


@dataclass
class ParsedURDF:
    """The kinematic tree of a URDF (links, joints, root) as the plant builder needs it."""

    name: str
    root: str
    links: dict
    joints: list  # in depth-first tree order
    children: dict  # link name -> list of joints whose parent it is
    base_dir: Path | None


def _floats(text: str | None, n: int, default: float, what: str) -> np.ndarray:
    if text is None:
        return np.full(n, default)
    try:
        vals = np.array([float(x) for x in text.split()])
    except ValueError as exc:
        raise ValueError(f"{what}: cannot parse numbers from {text!r}") from exc
    if vals.size != n or not np.all(np.isfinite(vals)):
        raise ValueError(f"{what}: expected {n} finite numbers, got {text!r}")
    return vals


def _origin(elem: ET.Element | None, what: str) -> tuple[np.ndarray, np.ndarray]:
    if elem is None:
        return np.zeros(3), np.zeros(3)
    return (
        _floats(elem.get("xyz"), 3, 0.0, f"{what} origin xyz"),
        _floats(elem.get("rpy"), 3, 0.0, f"{what} origin rpy"),
    )


def parse_urdf(source: str | os.PathLike) -> ParsedURDF:
    """Parse a URDF file path or XML string into the plant builder's tree.

    Only dynamics-relevant content is read (inertials, joints, collision geometry); everything
    else (``<transmission>``, ``<gazebo>``, ``<ros2_control>``, materials) is ignored.

    Raises:
        ValueError: naming the joint/link for missing links, unsupported joint types, several
            roots or a kinematic loop.
    """
    text = str(source)
    base_dir = None
    if not text.lstrip().startswith("<"):
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"urdf: no such file {text!r}")
        base_dir = path.resolve().parent
        text = path.read_text()
    try:
        root_el = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"urdf: not valid XML ({exc})") from exc
    links: dict[str, _Link] = {}
    for le in root_el.findall("link"):
        name = le.get("name")
        if not name:
            raise ValueError("urdf: a <link> has no name")
        link = _Link(name)
        ine = le.find("inertial")
        if ine is not None:
            link.com, link.inertia_rpy = _origin(ine.find("origin"), f"link {name!r} inertial")
            me = ine.find("mass")
            link.mass = float(me.get("value", "0")) if me is not None else 0.0
            if not math.isfinite(link.mass) or link.mass < 0.0:
                raise ValueError(f"link {name!r}: invalid mass {link.mass}")
            ie = ine.find("inertia")
            if ie is not None:
                link.inertia = tuple(
                    float(ie.get(k, "0")) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
                )
        for ce in le.findall("collision"):
            xyz, rpy = _origin(ce.find("origin"), f"link {name!r} collision")
            ge = ce.find("geometry")
            if ge is None or len(ge) == 0:
                continue
            g = ge[0]
            if g.tag == "sphere":
                link.geoms.append(_Geom("sphere", xyz, rpy, (float(g.get("radius")),)))
            elif g.tag == "box":
                size = _floats(g.get("size"), 3, 0.0, f"link {name!r} box size")
                link.geoms.append(_Geom("box", xyz, rpy, tuple(0.5 * size)))
            elif g.tag == "cylinder":
                link.geoms.append(
                    _Geom(
                        "cylinder", xyz, rpy, (float(g.get("radius")), 0.5 * float(g.get("length")))
                    )
                )
            elif g.tag == "mesh":
                scale = tuple(_floats(g.get("scale"), 3, 1.0, f"link {name!r} mesh scale"))
                link.geoms.append(_Geom("mesh", xyz, rpy, (), g.get("filename", ""), scale))
        links[name] = link
    joints: dict[str, _Joint] = {}
    children: dict[str, list[_Joint]] = {n: [] for n in links}
    child_of: dict[str, str] = {}
    for je in root_el.findall("joint"):
        name = je.get("name")
        kind = je.get("type")
        pe, ce = je.find("parent"), je.find("child")
        parent = pe.get("link") if pe is not None else None
        child = ce.get("link") if ce is not None else None
        for role, ln in (("parent", parent), ("child", child)):
            if ln not in links:
                raise ValueError(f"joint {name!r}: {role} link {ln!r} does not exist")
        if kind not in ("revolute", "continuous", "prismatic", "fixed"):
            raise ValueError(f"joint {name!r}: type {kind!r} is not supported by the simulator")
        if child in child_of:
            raise ValueError(
                f"joint {name!r}: link {child!r} already has parent joint "
                f"{child_of[child]!r} (kinematic loop)"
            )
        xyz, rpy = _origin(je.find("origin"), f"joint {name!r}")
        ae = je.find("axis")
        axis = _floats(ae.get("xyz") if ae is not None else None, 3, 0.0, f"joint {name!r} axis")
        if ae is None:
            axis = np.array([1.0, 0.0, 0.0])
        nrm = np.linalg.norm(axis)
        if kind != "fixed" and nrm < 1e-12:
            raise ValueError(f"joint {name!r}: zero axis")
        j = _Joint(name, kind, parent, child, xyz, rpy, axis / max(nrm, 1e-300))
        lim = je.find("limit")
        if lim is not None:
            j.effort = float(lim.get("effort", "inf")) if lim.get("effort") else math.inf
            if kind in ("revolute", "prismatic"):
                j.lower = float(lim.get("lower", "-inf"))
                j.upper = float(lim.get("upper", "inf"))
        joints[name] = j
        child_of[child] = name
        children[parent].append(j)
    roots = [n for n in links if n not in child_of]
    if len(roots) != 1:
        raise ValueError(f"urdf: expected exactly one root link, found {roots}")
    order: list[_Joint] = []
    seen: set[str] = set()

    def walk(ln: str) -> None:  # depth-first, children in document order
        seen.add(ln)
        for j in children[ln]:
            order.append(j)
            walk(j.child)

    walk(roots[0])
    if len(seen) != len(links):
        missing = sorted(set(links) - seen)
        raise ValueError(f"urdf: links not connected to the root: {missing}")
    return ParsedURDF(root_el.get("name") or "robot", roots[0], links, order, children, base_dir)


# --------------------------------------------------------------------------------------------
# MJCF generation
# --------------------------------------------------------------------------------------------


def _rpy_to_quat_wxyz(rpy: np.ndarray) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw (R = Rz(y) Ry(p) Rx(r)) as a MuJoCo quaternion (w x y z)."""
    r, p, y = 0.5 * np.asarray(rpy, dtype=float)
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    return np.array(
        [
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        ]
    )


def _fmt(vals) -> str:
    return " ".join(repr(float(x)) for x in vals)


def _resolve_mesh(filename: str, base_dir: Path | None) -> Path | None:
    if filename.startswith("file://"):
        p = Path(filename[7:])
        return p if p.is_file() else None
    if filename.startswith("package://"):
        rest = filename[len("package://") :]
        pkg, _, rel = rest.partition("/")
        roots = []
        for var in ("AMENT_PREFIX_PATH", "ROS_PACKAGE_PATH"):
            roots += [Path(x) for x in os.environ.get(var, "").split(os.pathsep) if x]
        cands = []
        for r in roots:
            cands += [r / "share" / pkg / rel, r / pkg / rel]
        if base_dir is not None:  # package checked out next to (or above) the URDF
            for anc in [base_dir, *base_dir.parents]:
                if anc.name == pkg:
                    cands.append(anc / rel)
        for c in cands:
            if c.is_file():
                return c
        return None
    p = Path(filename)
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    return p if p.is_file() else None


def build_mjcf(
    urdf: str | os.PathLike | ParsedURDF,
    floating_base: bool,
    ground: GroundOptions | None = None,
    free_bodies: tuple[FreeBody, ...] = (),
    collision_links: list[str] | None = None,
    base_pos: tuple = (0.0, 0.0, 0.0),
    joint_limits: bool = True,
) -> str:
    """Translate a URDF into an MJCF string (see the module docstring for the mapping).

    Args:
        urdf: URDF path, XML string or :func:`parse_urdf` result.
        floating_base: root link gets a MuJoCo free joint (else it is welded to the world).
        ground: ground plane and integrator settings; ``None`` = default rigid, high friction.
        free_bodies: extra free boxes (e.g. the grasped box).
        collision_links: links whose collision geometry may touch the environment (``None`` =
            all links); geometry of other links is kept for display but never collides.
        base_pos: position of the root link at the model's reference configuration [m].
        joint_limits: let MuJoCo enforce URDF position limits.
    """
    p = urdf if isinstance(urdf, ParsedURDF) else parse_urdf(urdf)
    g = ground or GroundOptions()
    mu = g.mu
    mj = ET.Element("mujoco", model=p.name)
    ET.SubElement(
        mj,
        "compiler",
        angle="radian",
        inertiafromgeom="false",
        autolimits="true",
        balanceinertia="false",
        boundmass="0",
        boundinertia="0",
    )
    ET.SubElement(
        mj,
        "option",
        timestep=repr(g.timestep),
        gravity="0 0 -9.81",
        integrator="implicitfast",
        cone="elliptic",
        solver="Newton",
        iterations="100",
        tolerance="1e-10",
    )
    size_el = ET.SubElement(mj, "size")
    size_el.set("memory", "8M")
    asset = ET.SubElement(mj, "asset")
    world = ET.SubElement(mj, "worldbody")
    if g.height is not None:
        ET.SubElement(
            world,
            "geom",
            name="ground",
            type="plane",
            size="0 0 1",
            pos=f"0 0 {g.height!r}",
            friction=f"{mu!r} 0.005 0.0001",
            priority="1",
            solref=_fmt(g.solref()),
            solimp=_fmt(g.solimp()),
            contype=str(_ENV_CONTYPE),
            conaffinity=str(_ENV_CONAFFINITY),
            rgba="0.8 0.8 0.8 1",
        )
    skipped: list[str] = []
    mesh_count = 0

    def add_link(parent_el: ET.Element, link: _Link, xyz, quat, joint: _Joint | None):
        nonlocal mesh_count
        if joint is None and not floating_base and link.name == "world":
            body = parent_el  # a fixed-base URDF's "world" link is MuJoCo's worldbody
        else:
            body = ET.SubElement(parent_el, "body", name=link.name, pos=_fmt(xyz), quat=_fmt(quat))
        if joint is None and floating_base:
            ET.SubElement(body, "freejoint", name="root")
        elif joint is not None and joint.kind != "fixed":
            attrs = {
                "name": joint.name,
                "type": "slide" if joint.kind == "prismatic" else "hinge",
                "axis": _fmt(joint.axis),
                "pos": "0 0 0",
                "damping": "0",
                "armature": "0",
                "frictionloss": "0",
            }
            if (
                joint_limits
                and math.isfinite(joint.lower)
                and math.isfinite(joint.upper)
                and joint.upper > joint.lower
            ):
                attrs["range"] = f"{joint.lower!r} {joint.upper!r}"
            ET.SubElement(body, "joint", **attrs)
        if link.mass > 0.0 and body is not parent_el:
            ixx, iyy, izz, ixy, ixz, iyz = link.inertia
            inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
            R = _quat_xyzw_to_rot(np.roll(_rpy_to_quat_wxyz(link.inertia_rpy), -1))
            inertia = R @ inertia @ R.T  # inertia about the COM in link axes
            ET.SubElement(
                body,
                "inertial",
                pos=_fmt(link.com),
                mass=repr(link.mass),
                fullinertia=_fmt(
                    (
                        inertia[0, 0],
                        inertia[1, 1],
                        inertia[2, 2],
                        inertia[0, 1],
                        inertia[0, 2],
                        inertia[1, 2],
                    )
                ),
            )
        collides = collision_links is None or link.name in collision_links
        for k, geo in enumerate(link.geoms):
            attrs = {
                "name": f"{link.name}__col{k}",
                "pos": _fmt(geo.xyz),
                "quat": _fmt(_rpy_to_quat_wxyz(geo.rpy)),
                "mass": "0",
                "friction": f"{mu!r} 0.005 0.0001",
                "contype": str(_ROBOT_CONTYPE if collides else 0),
                "conaffinity": str(_ROBOT_CONAFFINITY if collides else 0),
                "rgba": "0.3 0.4 0.8 1",
            }
            if geo.kind == "mesh":
                path = _resolve_mesh(geo.filename, p.base_dir)
                if path is None or path.suffix.lower() not in (".stl", ".obj"):
                    skipped.append(geo.filename)
                    continue
                mname = f"mesh{mesh_count}"
                mesh_count += 1
                ET.SubElement(asset, "mesh", name=mname, file=str(path), scale=_fmt(geo.scale))
                attrs.update(type="mesh", mesh=mname)
            else:
                attrs.update(type=geo.kind, size=_fmt(geo.size))
            ET.SubElement(body, "geom", **attrs)
        for j in p.children[link.name]:
            add_link(body, p.links[j.child], j.xyz, _rpy_to_quat_wxyz(j.rpy), j)
        return body

    add_link(world, p.links[p.root], np.asarray(base_pos, float), np.array([1.0, 0, 0, 0]), None)
    for fb in free_bodies:
        qx, qy, qz, qw = fb.quat_xyzw
        body = ET.SubElement(
            world, "body", name=fb.name, pos=_fmt(fb.pos), quat=_fmt((qw, qx, qy, qz))
        )
        ET.SubElement(body, "freejoint", name=f"{fb.name}__free")
        ET.SubElement(
            body, "inertial", pos="0 0 0", mass=repr(fb.mass), diaginertia=_fmt(fb.inertia())
        )
        ET.SubElement(
            body,
            "geom",
            name=f"{fb.name}__col0",
            type="box",
            size=_fmt(0.5 * np.asarray(fb.size)),
            mass="0",
            priority="1",
            friction=f"{fb.friction!r} 0.005 0.0001",
            solref=_fmt(g.solref()),
            solimp=_fmt(g.solimp()),
            contype=str(_ENV_CONTYPE),
            conaffinity=str(_ENV_CONAFFINITY | 1),
            rgba="0.8 0.5 0.2 1",
        )
    act = ET.SubElement(mj, "actuator")
    for j in p.joints:
        if j.kind == "fixed":
            continue
        attrs = {"name": j.name, "joint": j.name, "gear": "1"}
        if math.isfinite(j.effort) and j.effort > 0.0:
            attrs["ctrlrange"] = f"{-j.effort!r} {j.effort!r}"
        ET.SubElement(act, "motor", **attrs)
    if skipped:
        warnings.warn(
            f"mujoco_model: skipped {len(skipped)} collision mesh(es) that could not be "
            f"resolved or read (first: {skipped[0]!r})",
            stacklevel=2,
        )
    return ET.tostring(mj, encoding="unicode")


# --------------------------------------------------------------------------------------------
# Plant
# --------------------------------------------------------------------------------------------


def _quat_xyzw_to_rot(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


class MujocoPlant:
    """A MuJoCo simulation of a URDF robot, spoken to in the controller's conventions.

    State in/out uses the core's convention (``q = [p, quat xyzw, joints]``, ``v = [v_lin, w]``
    in the base frame, then joints) with joints in ``joint_order``. Torques are joint efforts [N m
    or N] in the same order, clamped by MuJoCo to the URDF effort limits.

    Args:
        urdf: URDF path or XML string (the controller's ``robot_description``).
        floating_base: free-flying root link.
        joint_order: joint names in the caller's order (default: URDF depth-first order).
        ground, free_bodies, collision_links, joint_limits: see :func:`build_mjcf`.
    """

    def __init__(
        self,
        urdf: str | os.PathLike,
        floating_base: bool = True,
        joint_order: list[str] | None = None,
        ground: GroundOptions | None = None,
        free_bodies: tuple[FreeBody, ...] = (),
        collision_links: list[str] | None = None,
        joint_limits: bool = True,
    ) -> None:
        if mujoco is None:
            raise ImportError("MujocoPlant needs the 'mujoco' package (pip install mujoco)")
        self.parsed = parse_urdf(urdf)
        self.ground = ground or GroundOptions()
        self.floating_base = bool(floating_base)
        self.xml = build_mjcf(
            self.parsed,
            floating_base,
            self.ground,
            free_bodies,
            collision_links,
            joint_limits=joint_limits,
        )
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        urdf_joints = [j.name for j in self.parsed.joints if j.kind != "fixed"]
        self.joint_names = list(joint_order) if joint_order is not None else urdf_joints
        missing = [n for n in self.joint_names if n not in urdf_joints]
        if missing or len(set(self.joint_names)) != len(urdf_joints):
            raise ValueError(
                f"joint_order: must be a permutation of the URDF's movable joints; "
                f"unknown {missing}, expected {urdf_joints}"
            )
        m = self.model
        jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        self._qadr = np.array([m.jnt_qposadr[i] for i in jid], dtype=np.int64)
        self._dadr = np.array([m.jnt_dofadr[i] for i in jid], dtype=np.int64)
        aid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in self.joint_names]
        self._act = np.array(aid, dtype=np.int64)
        self.n_joints = len(self.joint_names)
        self.nq = self.n_joints + (7 if self.floating_base else 0)
        self.nv = self.n_joints + (6 if self.floating_base else 0)
        self.effort_limit = np.array(
            [next(j.effort for j in self.parsed.joints if j.name == n) for n in self.joint_names]
        )
        self._root_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, self.parsed.root)
        self._free_body_names = [fb.name for fb in free_bodies]
        self._ground_geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "ground")
        self._f6 = np.zeros(6)
        self._M = np.zeros((m.nv, m.nv))
        mujoco.mj_forward(m, self.data)

    # ---- state conversion -------------------------------------------------------------------
    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        """Integration step [s]."""
        return float(self.model.opt.timestep)

    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Set the robot state (core convention, joints in ``joint_order``) and run forward."""
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if q.shape != (self.nq,) or v.shape != (self.nv,):
            raise ValueError(
                f"q/v: expected shapes ({self.nq},)/({self.nv},), got {q.shape}/{v.shape}"
            )
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise ValueError("q/v: non-finite entries")
        d = self.data
        if self.floating_base:
            quat = q[3:7] / np.linalg.norm(q[3:7])
            d.qpos[0:3] = q[0:3]
            d.qpos[3:7] = (quat[3], quat[0], quat[1], quat[2])
            R = _quat_xyzw_to_rot(quat)
            d.qvel[0:3] = R @ v[0:3]
            d.qvel[3:6] = v[3:6]
            d.qpos[self._qadr] = q[7:]
            d.qvel[self._dadr] = v[6:]
        else:
            d.qpos[self._qadr] = q
            d.qvel[self._dadr] = v
        mujoco.mj_forward(self.model, d)

    def get_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Current ``(q, v)`` in the core's convention (copies)."""
        d = self.data
        if not self.floating_base:
            return d.qpos[self._qadr].copy(), d.qvel[self._dadr].copy()
        q = np.empty(self.nq)
        v = np.empty(self.nv)
        w, x, y, z = d.qpos[3:7]
        quat = np.array([x, y, z, w]) / math.sqrt(w * w + x * x + y * y + z * z)
        q[0:3] = d.qpos[0:3]
        q[3:7] = quat
        q[7:] = d.qpos[self._qadr]
        R = _quat_xyzw_to_rot(quat)
        v[0:3] = R.T @ d.qvel[0:3]
        v[3:6] = d.qvel[3:6]
        v[6:] = d.qvel[self._dadr]
        return q, v

    def _vel_map(self) -> np.ndarray:
        """Map core velocity -> MuJoCo qvel (robot dofs only): qvel = T v."""
        T = np.zeros((self.model.nv, self.nv))
        if self.floating_base:
            w, x, y, z = self.data.qpos[3:7]
            T[0:3, 0:3] = _quat_xyzw_to_rot(np.array([x, y, z, w]))
            T[3:6, 3:6] = np.eye(3)
            T[self._dadr, np.arange(6, self.nv)] = 1.0
        else:
            T[self._dadr, np.arange(self.nv)] = 1.0
        return T

    def _full_mass(self) -> None:
        """Dense joint-space inertia into ``self._M`` (MuJoCo 3.x and 4.x signatures)."""
        try:
            mujoco.mj_fullM(self.model, self.data, self._M)  # MuJoCo >= 4: (m, d, dst)
        except TypeError:
            mujoco.mj_fullM(self.model, self._M, self.data.qM)  # MuJoCo 3.x: (m, dst, qM)

    def mass_matrix(self) -> np.ndarray:
        """MuJoCo's joint-space inertia at the current state, mapped to the core's velocity
        coordinates: ``M_core = T^T M_mj T`` [kg, kg m, kg m^2]."""
        self._full_mass()
        T = self._vel_map()
        return T.T @ self._M @ T

    def nonlinear_effects(self) -> np.ndarray:
        """MuJoCo's bias force ``C v + g`` mapped to the core's coordinates.

        With ``qvel = T v``, ``qacc = T a + Tdot v`` and ``Tdot v = [R (w x v_lin), 0]``, so
        ``h_core = T^T (h_mj + M_mj Tdot v)``.
        """
        self._full_mass()
        T = self._vel_map()
        extra = np.zeros(self.model.nv)
        if self.floating_base:
            _, v = self.get_state()
            extra[0:3] = T[0:3, 0:3] @ np.cross(v[3:6], v[0:3])
        return T.T @ (self.data.qfrc_bias + self._M @ extra)

    # ---- stepping -----------------------------------------------------------------------------
    def step(self, tau: np.ndarray, n: int = 1) -> None:
        """Apply joint efforts ``tau`` (``joint_order``; clamped to effort limits) for ``n``
        steps. Non-finite entries are replaced by zero (a robot's drive would reject them)."""
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.n_joints,):
            raise ValueError(f"tau: expected shape ({self.n_joints},), got {tau.shape}")
        self.data.ctrl[self._act] = np.where(np.isfinite(tau), tau, 0.0)
        for _ in range(n):
            mujoco.mj_step(self.model, self.data)

    def applied_torques(self) -> np.ndarray:
        """The joint efforts MuJoCo actually applied on the last step (after clamping)."""
        return self.data.actuator_force[self._act].copy()

    # ---- contact measurement ----------------------------------------------------------------
    def contacts(self) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
        """Active contacts as ``(body_a, body_b, point_world, force_on_a_world)``.

        ``body_a`` is the robot/free body the force acts on (``"ground"`` never appears as
        body_a); the force is the total contact force (normal + friction) [N] in world axes.
        """
        m, d = self.model, self.data
        out = []
        for i in range(d.ncon):
            c = d.contact[i]
            mujoco.mj_contactForce(m, d, i, self._f6)
            frame = c.frame.reshape(3, 3)
            f_on_geom2 = frame.T @ self._f6[0:3]  # normal points from geom1 to geom2
            b1 = m.body(m.geom_bodyid[c.geom1]).name
            b2 = m.body(m.geom_bodyid[c.geom2]).name
            n1 = "ground" if c.geom1 == self._ground_geom else (b1 or "world")
            n2 = "ground" if c.geom2 == self._ground_geom else (b2 or "world")
            if n2 != "ground":
                out.append((n2, n1, c.pos.copy(), f_on_geom2))
            if n1 != "ground":
                out.append((n1, n2, c.pos.copy(), -f_on_geom2))
        return out

    def link_contact_forces(self) -> dict[str, np.ndarray]:
        """Total contact force [N] on each robot link (world axes) from all contacts."""
        out: dict[str, np.ndarray] = {}
        for body, _, _, f in self.contacts():
            if body in self.parsed.links:
                out[body] = out.get(body, np.zeros(3)) + f
        return out

    def link_contact_wrenches_local(self) -> dict[str, np.ndarray]:
        """Contact wrench [force (N), torque (N m)] on each robot link, in the LINK frame about
        the link origin -- the ``f_ext`` convention of the core's ``rnea`` (used by ID(t-1))."""
        m, d = self.model, self.data
        out: dict[str, np.ndarray] = {}
        for body, _, pt, f in self.contacts():
            if body not in self.parsed.links:
                continue
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body)
            R = d.xmat[bid].reshape(3, 3)
            r = pt - d.xpos[bid]
            w = np.concatenate([R.T @ f, R.T @ np.cross(r, f)])
            out[body] = out.get(body, np.zeros(6)) + w
        return out

    def total_normal_force(self, against: str = "ground") -> float:
        """Sum of contact normal forces [N] between the robot and ``against`` ("ground" or a
        free body's name): the l1-norm of normal forces compared in Sec. 8.2."""
        total = 0.0
        m, d = self.model, self.data
        if against == "ground":
            target = {self._ground_geom}
        else:
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, against)
            if bid < 0:
                raise ValueError(f"against: no ground or body named {against!r}")
            target = {g for g in range(m.ngeom) if m.geom_bodyid[g] == bid}
        for i in range(d.ncon):
            c = d.contact[i]
            if c.geom1 not in target and c.geom2 not in target:
                continue
            if against != "ground" and self._ground_geom in (c.geom1, c.geom2):
                continue
            mujoco.mj_contactForce(m, d, i, self._f6)
            total += abs(self._f6[0])
        return total

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Root link position [m] and orientation quaternion (x, y, z, w) in world."""
        d = self.data
        w, x, y, z = d.xquat[self._root_body]
        return d.xpos[self._root_body].copy(), np.array([x, y, z, w])

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Any body's position [m] and rotation matrix in world (e.g. a free body)."""
        bid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        if bid < 0:
            raise ValueError(f"body: no body named {name!r}")
        return self.data.xpos[bid].copy(), self.data.xmat[bid].reshape(3, 3).copy()

    def free_body_state(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A free body's ``(q, v)`` in the core's convention (pos, quat xyzw; v_lin, w in body
        frame)."""
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, f"{name}__free")
        if jid < 0:
            raise ValueError(f"free body: no free body named {name!r}")
        qa, da = self.model.jnt_qposadr[jid], self.model.jnt_dofadr[jid]
        pos = self.data.qpos[qa : qa + 3].copy()
        w, x, y, z = self.data.qpos[qa + 3 : qa + 7]
        quat = np.array([x, y, z, w])
        R = _quat_xyzw_to_rot(quat)
        v = np.concatenate([R.T @ self.data.qvel[da : da + 3], self.data.qvel[da + 3 : da + 6]])
        return np.concatenate([pos, quat]), v

    def set_free_body_state(self, name: str, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """Place a free body (core convention, see :meth:`free_body_state`)."""
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, f"{name}__free")
        if jid < 0:
            raise ValueError(f"free body: no free body named {name!r}")
        qa, da = self.model.jnt_qposadr[jid], self.model.jnt_dofadr[jid]
        q = np.asarray(q, float)
        quat = q[3:7] / np.linalg.norm(q[3:7])
        self.data.qpos[qa : qa + 3] = q[0:3]
        self.data.qpos[qa + 3 : qa + 7] = (quat[3], quat[0], quat[1], quat[2])
        vv = np.zeros(6) if v is None else np.asarray(v, float)
        self.data.qvel[da : da + 3] = _quat_xyzw_to_rot(quat) @ vv[0:3]
        self.data.qvel[da + 3 : da + 6] = vv[3:6]
        mujoco.mj_forward(self.model, self.data)
