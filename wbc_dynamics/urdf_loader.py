"""URDF -> flat model arrays (:class:`ModelData`).

Parsing uses urdf-parser-py. What matters for dynamics is validated strictly and every error
names the offending element; what does not (transmissions, gazebo tags, materials, textures,
meshes, missing robot names) is tolerated silently.

Fixed joints are merged: a link attached by a fixed joint adds its inertia to the nearest moving
ancestor body (or to the world, where it no longer matters) and keeps its frame, so it can be
used in ``frame_placement`` and ``jacobian``.
"""

from __future__ import annotations

import logging
import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from .kernels.dynamics import FREE_FLYER, PRISMATIC, REVOLUTE
from .kernels.world import FIRST_MOMENT, MASS, ROT_INERTIA, TREE_COLS

_log = logging.getLogger(__name__)

#: Relative tolerance for the inertia checks (eigenvalues and triangle inequality).
INERTIA_TOLERANCE = 1e-9


class URDFError(ValueError):
    """A URDF whose dynamics content is malformed; the message names the element."""


@dataclass(frozen=True)
class CollisionSphere:
    """A collision sphere: ``center`` (m) in the frame of ``link``, ``radius`` (m)."""

    link: str
    center: np.ndarray
    radius: float


@dataclass(frozen=True)
class CollisionBox:
    """A collision box: pose (``rotation``, ``center``) in ``link``'s frame, full ``size`` (m)."""

    link: str
    center: np.ndarray
    rotation: np.ndarray
    size: np.ndarray


@dataclass
class ModelData:
    """Flat arrays of a kinematic tree; see :mod:`wbc_dynamics.kernels.dynamics` for the layout."""

    name: str
    topo: np.ndarray
    tree: np.ndarray
    Sm: np.ndarray
    I6: np.ndarray
    nq: int
    nv: int
    floating_base: bool
    joint_names: list[str]
    body_names: list[str]  # the link that defines each body's frame
    link_names: list[str]
    link_body: dict[str, int]  # link -> body index (-1: the world / fixed base)
    link_pose: dict[str, tuple[np.ndarray, np.ndarray]]  # link -> (R, p) in its body frame
    position_lower: np.ndarray
    position_upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    total_mass: float
    root_link: str
    collision_spheres: list[CollisionSphere] = field(default_factory=list)
    collision_boxes: list[CollisionBox] = field(default_factory=list)


def _rpy_matrix(rpy) -> np.ndarray:
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


def _pose(origin) -> tuple[np.ndarray, np.ndarray]:
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = np.zeros(3) if origin.xyz is None else np.asarray(origin.xyz, dtype=float)
    rpy = np.zeros(3) if origin.rpy is None else origin.rpy
    return _rpy_matrix(rpy), xyz


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """6x6 spatial inertia about the frame origin ([linear; angular] ordering).

    ``com`` (m) and ``inertia_com`` (kg m^2, about the centre of mass) in the frame's axes.
    """
    c = _skew(com)
    out = np.zeros((6, 6))
    out[:3, :3] = mass * np.eye(3)
    out[:3, 3:] = -mass * c
    out[3:, :3] = mass * c
    out[3:, 3:] = inertia_com - mass * c @ c
    return out


def motion_transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Motion transform from a parent frame to a child frame at pose (R, p) in the parent."""
    X = np.zeros((6, 6))
    X[:3, :3] = R.T
    X[3:, 3:] = R.T
    X[:3, 3:] = -R.T @ _skew(p)
    return X


def _read_source(source: str | os.PathLike) -> tuple[str, str]:
    """The URDF text and a label for messages: ``source`` is a path or the XML itself."""
    text = os.fspath(source)
    if text.lstrip().startswith("<"):
        return text, "<robot_description string>"
    if not os.path.isfile(text):
        raise FileNotFoundError(f"URDF file not found: {text!r}")
    with open(text, encoding="utf-8") as fh:
        return fh.read(), text


def _sanitize(xml: str, label: str) -> str:
    """Fill in what urdf-parser-py insists on but dynamics does not need (e.g. the robot name)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise URDFError(f"{label}: not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{label}: the root element is <{root.tag}>, expected <robot>")
    if not root.get("name"):
        root.set("name", "robot")
    # Elements urdf-parser-py does not model are irrelevant to dynamics; dropping them keeps its
    # parser from printing a warning per element.
    for child in list(root):
        if child.tag not in ("link", "joint", "material"):
            root.remove(child)
    for link in root.iter("link"):
        if not link.get("name"):
            raise URDFError(f"{label}: a <link> has no name")
        for geom_parent in list(link):
            if geom_parent.tag in ("visual",):
                link.remove(geom_parent)
    for joint in root.iter("joint"):
        name = joint.get("name")
        if not name:
            raise URDFError(f"{label}: a <joint> has no name")
        for tag in ("parent", "child"):
            el = joint.find(tag)
            if el is None or not el.get("link"):
                raise URDFError(f"joint '{name}': missing <{tag} link=...>")
        if joint.find("mimic") is not None:
            raise URDFError(
                f"joint '{name}': <mimic> joints are not supported (model the coupling as a "
                "transmission matrix in the controller instead)"
            )
    return ET.tostring(root, encoding="unicode")


def _parse(xml: str, label: str):
    from urdf_parser_py import urdf as urdf_mod
    from urdf_parser_py.xml_reflection import core

    messages: list[str] = []
    previous = core.on_error
    core.on_error = messages.append
    try:
        robot = urdf_mod.URDF.from_xml_string(xml)
    except Exception as exc:  # urdf-parser-py raises bare Exceptions with a path in the text
        raise URDFError(f"{label}: {exc}") from None
    finally:
        core.on_error = previous
    if messages:
        _log.debug("urdf-parser-py notes for %s: %s", label, "; ".join(messages))
    return robot


def _link_inertia(link, label: str) -> tuple[float, np.ndarray]:
    """(mass, 6x6 spatial inertia in the link frame); massless links give zeros."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros((6, 6))
    mass = 0.0 if inertial.mass is None else float(inertial.mass)
    if not math.isfinite(mass):
        raise URDFError(f"link '{link.name}': mass is not finite")
    if mass < 0.0:
        raise URDFError(f"link '{link.name}': negative mass {mass} kg")
    R, com = _pose(inertial.origin)
    i = inertial.inertia
    if i is None:
        Ic = np.zeros((3, 3))
    else:
        Ic = np.array(
            [
                [i.ixx, i.ixy, i.ixz],
                [i.ixy, i.iyy, i.iyz],
                [i.ixz, i.iyz, i.izz],
            ],
            dtype=float,
        )
    if not np.all(np.isfinite(Ic)) or not np.all(np.isfinite(com)):
        raise URDFError(f"link '{link.name}': inertia or centre of mass is not finite")
    eig = np.linalg.eigvalsh(Ic)
    scale = max(float(np.max(np.abs(eig))), 1e-12)
    if eig[0] < -INERTIA_TOLERANCE * scale:
        raise URDFError(
            f"link '{link.name}': inertia is not positive (semi)definite, eigenvalues {eig}"
        )
    if mass > 0.0 and scale > 1e-12:
        a, b, c = eig
        if a + b < c * (1 - 1e-6) - INERTIA_TOLERANCE * scale:
            raise URDFError(
                f"link '{link.name}': principal moments {eig} violate the triangle inequality "
                "(no physical body has this inertia)"
            )
    if mass == 0.0 and scale > 1e-12:
        raise URDFError(f"link '{link.name}': zero mass with non-zero rotational inertia")
    Ic_link = R @ Ic @ R.T
    return mass, spatial_inertia(mass, com, Ic_link)


def load_model(source: str | os.PathLike, floating_base: bool = False) -> ModelData:
    """Parse a URDF (path or XML string) into flat arrays, validating its dynamics content."""
    xml, label = _read_source(source)
    robot = _parse(_sanitize(xml, label), label)

    links = {link.name: link for link in robot.links}
    if len(links) != len(robot.links):
        names = [link.name for link in robot.links]
        dup = sorted({n for n in names if names.count(n) > 1})
        raise URDFError(f"{label}: duplicate link name(s) {dup}")
    if not links:
        raise URDFError(f"{label}: no <link> elements")
    children: dict[str, list] = {name: [] for name in links}
    parent_joint: dict[str, object] = {}
    joint_names_seen = set()
    for joint in robot.joints:
        if joint.name in joint_names_seen:
            raise URDFError(f"joint '{joint.name}': defined twice")
        joint_names_seen.add(joint.name)
        for role, link_name in (("parent", joint.parent), ("child", joint.child)):
            if link_name not in links:
                raise URDFError(f"joint '{joint.name}': {role} link '{link_name}' does not exist")
        if joint.child in parent_joint:
            other = parent_joint[joint.child].name
            raise URDFError(
                f"link '{joint.child}' is the child of two joints ('{other}' and '{joint.name}'):"
                " kinematic loops are not supported"
            )
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        if not roots:
            raise URDFError(f"{label}: every link has a parent joint: the tree contains a loop")
        raise URDFError(f"{label}: the tree has {len(roots)} roots {roots}; expected exactly one")
    root = roots[0]

    # Depth-first pre-order walk; a body per moving joint (plus the free-flyer root).
    body_parent: list[int] = []
    body_jtype: list[int] = []
    body_tree: list[np.ndarray] = []
    body_axis: list[np.ndarray] = []
    body_I6: list[np.ndarray] = []
    body_names: list[str] = []
    joint_names: list[str] = []
    limits: list[tuple[float, float, float, float]] = []
    link_body: dict[str, int] = {}
    link_pose: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    total_mass = 0.0
    spheres: list[CollisionSphere] = []
    boxes: list[CollisionBox] = []

    def add_link(link_name: str, body: int, R: np.ndarray, p: np.ndarray) -> None:
        nonlocal total_mass
        link = links[link_name]
        link_body[link_name] = body
        link_pose[link_name] = (R, p)
        mass, I_link = _link_inertia(link, label)
        total_mass += mass
        if body >= 0 and mass > 0.0:
            X = motion_transform(R, p)  # body -> link
            body_I6[body] += X.T @ I_link @ X
        for col in link.collisions or []:
            geom = col.geometry
            Rc, pc = _pose(col.origin)
            kind = type(geom).__name__
            if kind == "Sphere":
                if geom.radius is None or not geom.radius > 0:
                    raise URDFError(f"link '{link_name}': collision sphere radius must be > 0")
                spheres.append(CollisionSphere(link_name, pc.copy(), float(geom.radius)))
            elif kind == "Box":
                size = np.asarray(geom.size, dtype=float)
                boxes.append(CollisionBox(link_name, pc.copy(), Rc, size))

    stack: list[tuple[str, int, np.ndarray, np.ndarray]] = []
    if floating_base:
        body_parent.append(-1)
        body_jtype.append(FREE_FLYER)
        body_tree.append(np.concatenate([np.eye(3).ravel(), np.zeros(3)]))
        body_axis.append(np.zeros(3))
        body_I6.append(np.zeros((6, 6)))
        body_names.append(root)
        add_link(root, 0, np.eye(3), np.zeros(3))
        stack_root_body = 0
    else:
        add_link(root, -1, np.eye(3), np.zeros(3))
        stack_root_body = -1
    for joint in reversed(children[root]):
        stack.append((joint.name, stack_root_body, np.eye(3), np.zeros(3)))
    joints = {j.name: j for j in robot.joints}

    while stack:
        jname, body, R_in_body, p_in_body = stack.pop()
        joint = joints[jname]
        Rj, pj = _pose(joint.origin)
        # placement of the joint frame in the parent *body* frame
        R_joint = R_in_body @ Rj
        p_joint = p_in_body + R_in_body @ pj
        jtype = joint.type
        if jtype == "fixed":
            child_body, Rc, pc = body, R_joint, p_joint
        elif jtype in ("revolute", "continuous", "prismatic"):
            axis = (
                np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, float)
            )
            norm = float(np.linalg.norm(axis))
            if not norm > 1e-12 or not np.all(np.isfinite(axis)):
                raise URDFError(f"joint '{jname}': axis {axis.tolist()} is not a direction")
            axis = axis / norm
            lim = joint.limit
            lower, upper, vel, eff = -math.inf, math.inf, math.inf, math.inf
            if lim is not None:
                if jtype != "continuous":
                    lower = -math.inf if lim.lower is None else float(lim.lower)
                    upper = math.inf if lim.upper is None else float(lim.upper)
                vel = math.inf if lim.velocity is None else float(lim.velocity)
                eff = math.inf if lim.effort is None else float(lim.effort)
                if lower > upper:
                    raise URDFError(f"joint '{jname}': lower limit {lower} > upper limit {upper}")
                if vel < 0 or eff < 0:
                    raise URDFError(f"joint '{jname}': negative velocity or effort limit")
            body_parent.append(body)
            body_jtype.append(PRISMATIC if jtype == "prismatic" else REVOLUTE)
            body_tree.append(np.concatenate([R_joint.ravel(), p_joint]))
            body_axis.append(axis)
            body_I6.append(np.zeros((6, 6)))
            body_names.append(joint.child)
            joint_names.append(jname)
            limits.append((lower, upper, vel, eff))
            child_body, Rc, pc = len(body_parent) - 1, np.eye(3), np.zeros(3)
        else:
            raise URDFError(
                f"joint '{jname}': type '{jtype}' is not supported (revolute, continuous, "
                "prismatic and fixed are; a floating base is requested with floating_base=True)"
            )
        add_link(joint.child, child_body, Rc, pc)
        for child_joint in reversed(children[joint.child]):
            stack.append((child_joint.name, child_body, Rc, pc))

    nb = len(body_parent)
    topo = np.zeros((nb, 6), dtype=np.int64)
    Sm = np.zeros((nb, 6, 6))
    iq = iv = 0
    for i in range(nb):
        topo[i, 0] = body_parent[i]
        topo[i, 1] = body_jtype[i]
        topo[i, 2] = iq
        topo[i, 3] = iv
        if body_jtype[i] == FREE_FLYER:
            topo[i, 4] = 6
            Sm[i] = np.eye(6)
            iq += 7
            iv += 6
        else:
            topo[i, 4] = 1
            if body_jtype[i] == REVOLUTE:
                Sm[i, 3:, 0] = body_axis[i]
            else:
                Sm[i, :3, 0] = body_axis[i]
            iq += 1
            iv += 1
    # subtree end in v: pre-order makes each subtree a contiguous range
    for i in range(nb - 1, -1, -1):
        end = topo[i, 3] + topo[i, 4]
        for j in range(i + 1, nb):
            # j is in i's subtree iff i is an ancestor of j
            k = j
            while k > i:
                k = topo[k, 0]
            if k == i:
                end = max(end, topo[j, 3] + topo[j, 4])
        topo[i, 5] = end
    tree = np.zeros((nb, TREE_COLS))
    for i in range(nb):
        tree[i, :12] = body_tree[i]
        tree[i, 12:15] = body_axis[i]
        I6 = body_I6[i]
        # mass, first moment h = m c and rotational inertia about the body origin, read off the
        # spatial inertia [[m, -[h]x], [[h]x, Ibar]] (used by the world-frame recursions)
        tree[i, MASS] = I6[0, 0]
        tree[i, FIRST_MOMENT : FIRST_MOMENT + 3] = (I6[5, 1], I6[3, 2], I6[4, 0])
        tree[i, ROT_INERTIA : ROT_INERTIA + 9] = I6[3:, 3:].ravel()
    lim_arr = np.array(limits, dtype=float).reshape(-1, 4)
    return ModelData(
        name=robot.name or "robot",
        topo=topo,
        tree=tree,
        Sm=Sm,
        I6=np.array(body_I6).reshape(nb, 6, 6),
        nq=iq,
        nv=iv,
        floating_base=floating_base,
        joint_names=joint_names,
        body_names=body_names,
        link_names=[link.name for link in robot.links],
        link_body=link_body,
        link_pose=link_pose,
        position_lower=lim_arr[:, 0].copy(),
        position_upper=lim_arr[:, 1].copy(),
        velocity_limit=lim_arr[:, 2].copy(),
        effort_limit=lim_arr[:, 3].copy(),
        total_mass=total_mass,
        root_link=root,
        collision_spheres=spheres,
        collision_boxes=boxes,
    )
