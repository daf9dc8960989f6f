"""URDF -> :class:`RobotDescription`: the one parse of a robot that everything is built from.

The dynamics model (:func:`wbc_dynamics.urdf_loader.load_model`) and the MuJoCo plant
(:mod:`wbc_dynamics.sim.mujoco_model`) are both built from a :class:`RobotDescription`; nothing
else reads URDF. The parser is a single pass of ``xml.etree`` over the document (linear in its
size) and reads what dynamics, contacts and simulation need: links (inertials, collision
geometry), joints (type, origin, axis, limits, ``<dynamics>``, ``<mimic>``) and the tree. Other
elements (visuals, materials, transmissions, ``<gazebo>``, ``<ros2_control>``, sensors) are
ignored.

Validation. What cannot be dynamics is a :class:`URDFError` naming the element and attribute:
malformed or non-finite numbers anywhere in an origin, axis, inertial, limit, dynamics or
collision element; a zero joint axis; negative mass; magnitudes beyond :data:`MAX_LENGTH`,
:data:`MAX_MASS`, :data:`MAX_INERTIA` (so no gravity torque or inertia can overflow); a broken
tree. What urdfdom (and so Pinocchio) loads and dynamics can use is loaded, with one
:class:`URDFWarning` per item saying what is wrong; ``strict=True`` rejects these instead:

* physically inconsistent inertias (triangle inequality violated, negative principal moments --
  at rounding level or not --, zero mass with non-zero rotational inertia, point masses) are
  loaded **as given**, like Pinocchio does;
* a joint whose ``<limit lower>`` exceeds ``upper`` keeps both values as given; consumers that
  need an ordered range treat such a joint as unlimited (no MuJoCo joint ``range``, no
  joint-state position bound, see :func:`wbc_dynamics.ros_conversions.joint_position_bounds`);
* a ``<collision>`` whose ``<mesh scale>`` is not 3 numbers is skipped (urdfdom cannot parse it
  and drops it; the link's dynamics are unaffected).

Joint axes of any finite non-zero magnitude are normalized, without overflow or underflow
(urdfdom keeps them as written; Pinocchio normalizes, and so turns ``1e308 1e308 0`` or a
subnormal axis into a zero one). A document may start with whitespace before its XML
declaration (TinyXML2 skips it; Python's parser does not).
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .geometry import CollisionGeometry
from .resources import package_roots, resolve_resource

#: Largest accepted length (m): origins, collision sizes, centres of mass, joint limits of
#: prismatic joints are finite and at most this in magnitude.
MAX_LENGTH = 1e5
#: Largest accepted link mass (kg).
MAX_MASS = 1e9
#: Largest accepted rotational inertia entry (kg m^2).
MAX_INERTIA = 1e12
#: A negative principal moment down to ``-INERTIA_ROUNDING * largest moment`` is called rounding
#: (of the URDF's printed digits) in the warning; larger ones "not positive semidefinite".
INERTIA_ROUNDING = 1e-3
#: Relative tolerance of the inertia checks (triangle inequality, zero tests).
INERTIA_TOLERANCE = 1e-9

#: What XML calls whitespace: skipped before the document's first markup (as TinyXML2 does).
XML_WHITESPACE = " \t\r\n"

MOVABLE_TYPES = ("revolute", "continuous", "prismatic")
SUPPORTED_TYPES = (*MOVABLE_TYPES, "fixed")


class URDFError(ValueError):
    """A URDF whose dynamics content is malformed; the message names the element."""


class URDFWarning(UserWarning):
    """A URDF that loads but is questionable (inconsistent inertia, inverted joint limits, a
    skipped collision element, unresolved mesh)."""


@dataclass(frozen=True)
class Inertial:
    """A link's ``<inertial>``: ``mass`` (kg), centre of mass ``com`` (m) and the inertial
    frame's ``rotation`` in the link frame, ``inertia`` (kg m^2) about the centre of mass in the
    inertial frame's axes (as written in the URDF)."""

    mass: float
    com: np.ndarray
    rotation: np.ndarray
    inertia: np.ndarray

    def inertia_in_link_axes(self) -> np.ndarray:
        """Rotational inertia about the centre of mass in the link frame's axes (kg m^2)."""
        return self.rotation @ self.inertia @ self.rotation.T


@dataclass(frozen=True)
class Mimic:
    """``<mimic joint=leader multiplier offset>``: q = multiplier * q_leader + offset."""

    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class JointDescription:
    """One URDF joint. Pose of the joint frame in the parent link frame: (``rotation``,
    ``translation`` (m)); ``axis``: unit vector in the joint frame; limits in rad or m
    (``lower``/``upper``, ``-inf``/``inf`` when absent or for continuous joints; as written, so
    ``lower > upper`` is possible: what needs an ordered range then treats the joint as
    unlimited), rad/s or m/s (``velocity``) and N m or N (``effort``, ``inf`` when absent);
    ``damping`` (N m s/rad or N s/m) and Coulomb ``friction`` (N m or N) from ``<dynamics>``."""

    name: str
    type: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: Mimic | None = None

    @property
    def movable(self) -> bool:
        return self.type in MOVABLE_TYPES

    def motion(self, x: float) -> tuple[np.ndarray, np.ndarray]:
        """(rotation, translation) of the child frame in the joint frame at position ``x``
        (rad about ``axis`` or m along it; identity for a fixed joint)."""
        if self.type == "prismatic":
            return np.eye(3), self.axis * x
        if self.type in ("revolute", "continuous"):
            return axis_rotation(self.axis, x), np.zeros(3)
        return np.eye(3), np.zeros(3)


@dataclass
class LinkDescription:
    """One URDF link: its ``inertial`` (``None`` when absent: massless), its collision shapes
    in URDF order, and what is physically wrong with its inertia (``None`` if nothing)."""

    name: str
    inertial: Inertial | None
    collisions: list[CollisionGeometry] = field(default_factory=list)
    inertia_issue: str | None = None


@dataclass
class RobotDescription:
    """A parsed robot: links and joints by name (URDF order), the tree, and load warnings.

    ``children[link]`` lists the joints whose parent is ``link`` in document order;
    :meth:`joints_in_tree_order` walks the tree depth-first from ``root``. ``base_dir`` is the
    URDF file's directory (``None`` for an XML string); ``label`` names the source in messages.
    """

    name: str
    label: str
    base_dir: Path | None
    links: dict[str, LinkDescription]
    joints: dict[str, JointDescription]
    root: str
    children: dict[str, list[str]]
    warnings: list[str] = field(default_factory=list)

    def joints_in_tree_order(self) -> list[JointDescription]:
        """Every joint, depth-first pre-order from the root, children in document order."""
        order: list[JointDescription] = []
        stack = list(reversed(self.children[self.root]))
        while stack:
            joint = self.joints[stack.pop()]
            order.append(joint)
            stack.extend(reversed(self.children[joint.child]))
        return order

    def with_locked_joints(self, locked: Mapping[str, float]) -> RobotDescription:
        """A copy in which the movable joints ``locked`` (name -> position, rad or m) are fixed
        joints at that position (their motion folded into the joint origin) -- the same reduced
        robot as ``load_model(..., locked_joints=locked)``, for consumers of the description
        such as the MuJoCo plant."""
        joints = dict(self.joints)
        for name, x in locked.items():
            if name not in joints or not joints[name].movable:
                raise URDFError(f"locked_joints: '{name}' is not a movable joint of {self.label}")
            j = joints[name]
            R_move, p_move = j.motion(float(x))
            joints[name] = dataclasses.replace(
                j, type="fixed", rotation=j.rotation @ R_move,
                translation=j.translation + j.rotation @ p_move, mimic=None)
        return dataclasses.replace(self, joints=joints)

    @property
    def collision_geometry(self) -> list[CollisionGeometry]:
        """All collision shapes, links in URDF order, shapes in URDF order within a link."""
        return [g for link in self.links.values() for g in link.collisions]


# ------------------------------------------------------------------------------------ numbers
def axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` (rad) about the unit ``axis`` (Rodrigues)."""
    x, y, z = (float(a) for a in axis)
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw as a rotation matrix R = Rz(y) Ry(p) Rx(r)."""
    r, p, y = (float(x) for x in rpy)
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
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def _number(el: ET.Element, attr: str, what: str, default: float | None = None) -> float:
    """A finite float attribute, or URDFError naming ``what`` (the element) and the attribute."""
    text = el.get(attr)
    if text is None:
        if default is None:
            raise URDFError(f"{what}: missing attribute {attr}")
        return default
    try:
        value = float(text)
    except ValueError:
        raise URDFError(f"{what}: {attr}={text!r} is not a number") from None
    if not math.isfinite(value):
        raise URDFError(f"{what}: {attr}={text!r} is not finite")
    return value


def _vector(el: ET.Element | None, attr: str, what: str, default: tuple) -> np.ndarray:
    text = None if el is None else el.get(attr)
    if text is None:
        return np.array(default, dtype=float)
    parts = text.split()
    try:
        values = np.array([float(x) for x in parts])
    except ValueError:
        raise URDFError(f"{what}: {attr}={text!r} is not {len(default)} numbers") from None
    if values.size != len(default):
        raise URDFError(f"{what}: {attr}={text!r} is not {len(default)} numbers")
    if not np.all(np.isfinite(values)):
        raise URDFError(f"{what}: {attr}={text!r} is not finite")
    return values


def _unit_axis(axis: np.ndarray, what: str) -> np.ndarray:
    """``axis`` (any finite magnitude) scaled to unit length, or URDFError if it is zero.

    Divided by its largest |component| first: the sum of squares of 1e308 overflows to inf and
    that of a subnormal 1e-320 underflows to 0, either of which would give a zero axis."""
    largest = float(np.max(np.abs(axis)))
    if largest == 0.0:
        raise URDFError(f"{what}: <axis xyz={axis.tolist()}> is not a direction")
    scaled = axis / largest  # entries in [-1, 1], one of them +-1: the norm is in [1, sqrt(3)]
    return scaled / math.sqrt(float(scaled @ scaled))


def _bounded(value: float, bound: float, what: str, unit: str) -> float:
    if abs(value) > bound:
        raise URDFError(f"{what} = {value:g} {unit} is beyond the accepted {bound:g} {unit}")
    return value


def _origin(el: ET.Element | None, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of an ``<origin>`` element (identity when absent)."""
    xyz = _vector(el, "xyz", f"{what} <origin>", (0.0, 0.0, 0.0))
    rpy = _vector(el, "rpy", f"{what} <origin>", (0.0, 0.0, 0.0))
    for k, value in enumerate(xyz):
        _bounded(value, MAX_LENGTH, f"{what} <origin> xyz[{k}]", "m")
    return rpy_matrix(rpy), xyz


# ------------------------------------------------------------------------------------ inertia
def inertia_issue(mass: float, inertia: np.ndarray) -> str | None:
    """What is physically wrong with (mass (kg), rotational inertia about the COM (kg m^2)),
    or ``None`` for a physically consistent inertia.

    Negative principal moments are "rounding" when they are within :data:`INERTIA_ROUNDING` of
    the largest moment (or of ``mass`` x (1 mm)^2 for a near-zero inertia), otherwise the inertia
    "is not positive semidefinite". Both load as given (Pinocchio does too); the joint-space
    check of :func:`wbc_dynamics.urdf_loader.load_model` reports what that does to M.
    """
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    largest = float(np.max(np.abs(eig)))
    if largest == 0.0:
        if mass > 0.0:
            return "point mass (zero rotational inertia)"
        return None
    if mass == 0.0:
        return "zero mass with non-zero rotational inertia"
    if eig[0] < -INERTIA_TOLERANCE * largest:
        scale = max(largest, mass * 1e-6)
        kind = "rounding" if eig[0] >= -INERTIA_ROUNDING * scale else "not positive semidefinite"
        return f"principal moments {_fmt_moments(eig)} kg m^2 include a negative one ({kind})"
    a, b, c = eig
    if a + b < c - INERTIA_TOLERANCE * largest:
        return (
            f"principal moments {_fmt_moments(eig)} kg m^2 violate the triangle inequality "
            "(no rigid body has this inertia)"
        )
    return None


def _fmt_moments(eig: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:.6g}" for x in eig) + "]"


def _inertial(link_el: ET.Element, name: str) -> Inertial | None:
    el = link_el.find("inertial")
    if el is None:
        return None
    what = f"link '{name}' <inertial>"
    R, com = _origin(el.find("origin"), what)
    mass_el = el.find("mass")
    mass = 0.0 if mass_el is None else _number(mass_el, "value", f"{what} <mass>", 0.0)
    if mass < 0.0:
        raise URDFError(f"link '{name}': negative mass {mass} kg ({what} <mass value>)")
    _bounded(mass, MAX_MASS, f"{what} <mass> value", "kg")
    inertia = np.zeros((3, 3))
    in_el = el.find("inertia")
    if in_el is not None:
        values = {}
        for attr in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            values[attr] = _bounded(
                _number(in_el, attr, f"{what} <inertia>", 0.0),
                MAX_INERTIA,
                f"{what} <inertia> {attr}",
                "kg m^2",
            )
        inertia = np.array(
            [
                [values["ixx"], values["ixy"], values["ixz"]],
                [values["ixy"], values["iyy"], values["iyz"]],
                [values["ixz"], values["iyz"], values["izz"]],
            ]
        )
    return Inertial(mass, com, R, inertia)


# ------------------------------------------------------------------------------------ geometry
def _mesh_scale(g: ET.Element, gwhat: str) -> np.ndarray | None:
    """The ``scale`` of a ``<mesh>`` (1 1 1 when absent), or ``None`` when it is not 3 numbers:
    urdfdom's ``Vector3::init`` requires exactly 3 (fewer or more is a parse error)."""
    text = g.get("scale")
    if text is None:
        return np.ones(3)
    try:
        values = np.array([float(x) for x in text.split()])
    except ValueError:
        return None
    if values.size != 3:
        return None
    if not np.all(np.isfinite(values)):  # urdfdom parses these; no mesh can be scaled by them
        raise URDFError(f"{gwhat}: scale={text!r} is not finite")
    return values


def _collisions(
    link_el: ET.Element,
    name: str,
    base_dir: Path | None,
    roots: list[Path],
    strict: bool,
) -> tuple[list[CollisionGeometry], list[str], list[str]]:
    """Collision shapes of a link, the mesh URIs that could not be resolved, and what was
    skipped (one note per skipped ``<collision>``; ``strict`` rejects these instead)."""
    shapes: list[CollisionGeometry] = []
    unresolved: list[str] = []
    skipped: list[str] = []
    for k, col in enumerate(link_el.findall("collision")):
        what = f"link '{name}' <collision> #{k}"
        geom_el = col.find("geometry")
        if geom_el is None or len(geom_el) == 0:
            continue
        R, p = _origin(col.find("origin"), what)
        g = geom_el[0]
        kind = g.tag
        gwhat = f"{what} <{kind}>"
        if kind == "sphere":
            radius = _positive(_number(g, "radius", gwhat), f"{gwhat} radius")
            shapes.append(CollisionGeometry(name, kind, R, p, radius=radius))
        elif kind in ("cylinder", "capsule"):
            radius = _positive(_number(g, "radius", gwhat), f"{gwhat} radius")
            length = _number(g, "length", gwhat)
            if length < 0.0:
                raise URDFError(f"{gwhat}: length={length} is negative")
            _bounded(length, MAX_LENGTH, f"{gwhat} length", "m")
            shapes.append(CollisionGeometry(name, kind, R, p, radius=radius, length=length))
        elif kind == "box":
            size = _vector(g, "size", gwhat, (math.nan,) * 3)
            if not np.all(np.isfinite(size)):
                raise URDFError(f"{gwhat}: missing attribute size")
            if np.any(size < 0.0):
                raise URDFError(f"{gwhat}: size={g.get('size')!r} has a negative extent")
            for value in size:
                _bounded(value, MAX_LENGTH, f"{gwhat} size", "m")
            shapes.append(CollisionGeometry(name, kind, R, p, size=size))
        elif kind == "mesh":
            uri = g.get("filename")
            if not uri:
                raise URDFError(f"{gwhat}: missing attribute filename")
            scale = _mesh_scale(g, gwhat)
            if scale is None:
                text = g.get("scale")
                if strict:
                    raise URDFError(f"{gwhat}: scale={text!r} is not 3 numbers")
                # urdfdom logs "Mesh scale was specified, but could not be parsed" and drops the
                # element (it also stops reading this link's later <collision>s, after which
                # Pinocchio builds no collision geometry for the link; the valid siblings are
                # kept here: only the element that cannot be read is lost)
                skipped.append(
                    f"link '{name}' <collision> #{k}: <mesh scale={text!r}> is not 3 numbers; "
                    "this collision element is skipped (as urdfdom does)"
                )
                continue
            path = resolve_resource(uri, base_dir, roots)
            if path is None:
                unresolved.append(uri)
            shapes.append(
                CollisionGeometry(name, kind, R, p, mesh_uri=uri, mesh_path=path, mesh_scale=scale)
            )
        # other geometry elements (none in the URDF spec) are not collision shapes we know
    return shapes, unresolved, skipped


def _positive(value: float, what: str) -> float:
    if not value > 0.0:
        raise URDFError(f"{what} must be > 0, got {value}")
    return _bounded(value, MAX_LENGTH, what, "m")


# ------------------------------------------------------------------------------------ joints
def _joint(
    el: ET.Element, name: str, links: dict, strict: bool, notes: list[str]
) -> JointDescription:
    """One ``<joint>``; questionable content that still loads (inverted limits) is appended to
    ``notes`` (``strict`` rejects it instead)."""
    what = f"joint '{name}'"
    jtype = el.get("type")
    if jtype not in SUPPORTED_TYPES:
        raise URDFError(
            f"{what}: type '{jtype}' is not supported (revolute, continuous, prismatic and "
            "fixed are; a floating base is requested with floating_base=True)"
        )
    ends = []
    for tag in ("parent", "child"):
        end = el.find(tag)
        if end is None or not end.get("link"):
            raise URDFError(f"{what}: missing <{tag} link=...>")
        link = end.get("link")
        if link not in links:
            raise URDFError(f"{what}: {tag} link '{link}' does not exist")
        ends.append(link)
    R, p = _origin(el.find("origin"), what)
    joint = JointDescription(name, jtype, ends[0], ends[1], R, p, np.array([1.0, 0.0, 0.0]))
    if jtype == "fixed":
        return joint  # axis, limits, dynamics and mimic of a fixed joint mean nothing
    axis = _vector(el.find("axis"), "xyz", f"{what} <axis>", (1.0, 0.0, 0.0))
    joint.axis = _unit_axis(axis, what)
    lim = el.find("limit")
    if lim is not None:
        lwhat = f"{what} <limit>"
        if jtype != "continuous":
            joint.lower = _number(lim, "lower", lwhat, -math.inf)
            joint.upper = _number(lim, "upper", lwhat, math.inf)
            if joint.lower > joint.upper:
                text = f"{what}: lower limit {joint.lower} > upper limit {joint.upper}"
                if strict:
                    raise URDFError(text)
                # urdfdom and Pinocchio load these as written. The consumers that need an
                # ordered range (MuJoCo joint range, ros_conversions.joint_position_bounds)
                # already take only finite lower < upper as one; clip-based ones (neutral
                # configuration) give the upper limit, a finite value
                notes.append(
                    f"{text}; loaded as given (as urdfdom does); the joint has no position "
                    "range where one is needed (MuJoCo joint range, joint-state bounds): "
                    "unlimited there"
                )
        joint.velocity = _number(lim, "velocity", lwhat, math.inf)
        joint.effort = _number(lim, "effort", lwhat, math.inf)
        for attr in ("velocity", "effort"):
            if getattr(joint, attr) < 0.0:
                raise URDFError(f"{lwhat}: negative {attr} limit {getattr(joint, attr)}")
    dyn = el.find("dynamics")
    if dyn is not None:
        joint.damping = _number(dyn, "damping", f"{what} <dynamics>", 0.0)
        joint.friction = _number(dyn, "friction", f"{what} <dynamics>", 0.0)
        for attr in ("damping", "friction"):
            if getattr(joint, attr) < 0.0:
                raise URDFError(f"{what} <dynamics>: negative {attr} {getattr(joint, attr)}")
    mim = el.find("mimic")
    if mim is not None:
        leader = mim.get("joint")
        if not leader:
            raise URDFError(f"{what} <mimic>: missing attribute joint")
        joint.mimic = Mimic(
            leader,
            _number(mim, "multiplier", f"{what} <mimic>", 1.0),
            _number(mim, "offset", f"{what} <mimic>", 0.0),
        )
    return joint


# ------------------------------------------------------------------------------------ document
def _parse_xml(xml: str, label: str) -> ET.Element:
    """The root element of ``xml``, or URDFError. Leading whitespace is skipped first, as
    TinyXML2 (urdfdom) does: Python's parser rejects an XML declaration that is not at the very
    start. Error positions refer to the text as given."""
    body = xml.lstrip(XML_WHITESPACE)
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        line, column = exc.position
        skipped = xml[: len(xml) - len(body)]
        if line == 1:  # on the first remaining line: after the skipped part of that line
            column += len(skipped) - (skipped.rfind("\n") + 1)
        line += skipped.count("\n")
        reason = str(exc).rsplit(": line ", 1)[0]
        raise URDFError(
            f"{label}: not well-formed XML: {reason}: line {line}, column {column}"
        ) from None


def read_source(source: str | os.PathLike) -> tuple[str, str, Path | None]:
    """(URDF text, label for messages, directory of the file or None): ``source`` is a path or
    the XML itself (a ROS ``robot_description``)."""
    text = os.fspath(source)
    if text.lstrip().startswith("<"):
        return text, "<robot_description string>", None
    if not os.path.isfile(text):
        raise FileNotFoundError(f"URDF file not found: {text!r}")
    with open(text, encoding="utf-8") as fh:
        return fh.read(), text, Path(text).resolve().parent


def parse_urdf(
    source: str | os.PathLike,
    *,
    strict: bool = False,
    package_dirs: Sequence[str | os.PathLike] | None = None,
) -> RobotDescription:
    """Parse a URDF (file path or XML string) into a :class:`RobotDescription`.

    Args:
        source: URDF file path, or the URDF XML itself.
        strict: reject (:class:`URDFError`) what otherwise loads with a :class:`URDFWarning`:
            physically inconsistent inertias, inverted joint limits, a ``<collision>`` skipped
            for its mesh scale (see the module docstring).
        package_dirs: directories searched first for ``package://`` mesh URIs (like
            Pinocchio's ``package_dirs``); then AMENT_PREFIX_PATH / ROS_PACKAGE_PATH, then the
            ancestors of the URDF's directory. See :func:`resolve_resource`.

    Raises:
        URDFError: malformed XML or dynamics content; the message names the element.
        FileNotFoundError: ``source`` is neither XML nor an existing file.
    """
    xml, label, base_dir = read_source(source)
    root_el = _parse_xml(xml, label)
    if root_el.tag != "robot":
        raise URDFError(f"{label}: the root element is <{root_el.tag}>, expected <robot>")
    roots = package_roots(package_dirs)

    links: dict[str, LinkDescription] = {}
    notes: list[str] = []
    unresolved: list[str] = []
    for link_el in root_el.findall("link"):
        name = link_el.get("name")
        if not name:
            raise URDFError(f"{label}: a <link> has no name")
        if name in links:
            raise URDFError(f"{label}: duplicate link name '{name}'")
        inertial = _inertial(link_el, name)
        issue = None
        if inertial is not None:
            issue = inertia_issue(inertial.mass, inertial.inertia)
            if issue is not None and strict:
                raise URDFError(f"link '{name}': {issue}")
        shapes, missing, skipped = _collisions(link_el, name, base_dir, roots, strict)
        unresolved += [f"link '{name}' {uri!r}" for uri in missing]
        links[name] = LinkDescription(name, inertial, shapes, issue)
        if issue is not None:
            notes.append(f"link '{name}': {issue}; loaded as given")
        notes += skipped
    if not links:
        raise URDFError(f"{label}: no <link> elements")

    joints: dict[str, JointDescription] = {}
    children: dict[str, list[str]] = {name: [] for name in links}
    parent_joint: dict[str, str] = {}
    for joint_el in root_el.findall("joint"):  # (not the <joint>s of <transmission>s)
        name = joint_el.get("name")
        if not name:
            raise URDFError(f"{label}: a <joint> has no name")
        if name in joints:
            raise URDFError(f"joint '{name}': defined twice")
        joint = _joint(joint_el, name, links, strict, notes)
        if joint.child in parent_joint:
            raise URDFError(
                f"link '{joint.child}' is the child of two joints ('{parent_joint[joint.child]}'"
                f" and '{name}'): kinematic loops are not supported"
            )
        parent_joint[joint.child] = name
        children[joint.parent].append(name)
        joints[name] = joint
    tree_roots = [name for name in links if name not in parent_joint]
    if len(tree_roots) != 1:
        if not tree_roots:
            raise URDFError(f"{label}: every link has a parent joint: the tree contains a loop")
        raise URDFError(
            f"{label}: the tree has {len(tree_roots)} roots {tree_roots}; expected exactly one"
        )
    description = RobotDescription(
        name=root_el.get("name") or "robot",
        label=label,
        base_dir=base_dir,
        links=links,
        joints=joints,
        root=tree_roots[0],
        children=children,
        warnings=notes,
    )
    reached = 1 + len(description.joints_in_tree_order())
    if reached != len(links):  # a cycle detached from the root
        detached = len(links) - reached
        raise URDFError(f"{label}: {detached} link(s) form a loop detached from the root")
    if unresolved:
        notes.append(
            f"{len(unresolved)} collision mesh(es) could not be resolved (kept with "
            f"mesh_path=None): {', '.join(unresolved[:5])}{' ...' if len(unresolved) > 5 else ''}"
        )
    for note in notes:
        warnings.warn(f"{label}: {note}", URDFWarning, stacklevel=2)
    return description
