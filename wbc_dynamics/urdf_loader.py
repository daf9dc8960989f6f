"""Robot description -> flat model arrays (:class:`ModelData`) for the compiled kernels.

The URDF is parsed once into a :class:`~wbc_dynamics.description.RobotDescription` (see
:mod:`wbc_dynamics.description` for what is validated, what is a warning and ``strict``); this
module turns it into the kernels' arrays in one linear pass:

* a body per movable joint (plus the free-flyer root with ``floating_base=True``), in
  depth-first pre-order;
* fixed joints are merged: a link attached by a fixed joint adds its inertia to the nearest
  moving ancestor body (or to the world, where it no longer matters) and keeps its frame, so it
  can be used in ``frame_placement`` and ``jacobian``;
* ``locked_joints`` (name -> position) are turned into fixed joints at that position, like
  Pinocchio's ``buildReducedModel``;
* ``<mimic>`` joints are independent joints (Pinocchio's URDF default); the coupling is kept in
  :attr:`ModelData.mimic`; :class:`wbc_dynamics.mimic.MimicModel` is the coupled option.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .description import (
    CollisionBox,
    CollisionGeometry,
    CollisionSphere,
    RobotDescription,
    URDFError,
    URDFWarning,
    boxes_of,
    parse_urdf,
    spheres_of,
)
from .description.urdf import INERTIA_TOLERANCE, axis_rotation
from .kernels.dynamics import FREE_FLYER, PRISMATIC, REVOLUTE
from .kernels.world import FIRST_MOMENT, MASS, ROT_INERTIA, TREE_COLS

__all__ = [
    "INERTIA_TOLERANCE",
    "CollisionBox",
    "CollisionGeometry",
    "CollisionSphere",
    "MimicCoupling",
    "ModelData",
    "URDFError",
    "URDFWarning",
    "load_model",
    "motion_transform",
    "spatial_inertia",
]

#: A joint whose joint-space inertia (diagonal of M at the neutral configuration) is below this
#: fraction of its subtree's composite inertia (largest entry) moves no mass: M is singular.
SINGULAR_TOLERANCE = 1e-12


@dataclass(frozen=True)
class MimicCoupling:
    """A movable ``<mimic>`` joint: q[follower] = multiplier * q[leader] + offset (indices into
    :attr:`ModelData.joint_names`)."""

    follower: int
    leader: int
    multiplier: float
    offset: float


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
    #: every collision shape, URDF order (poses in the link frames)
    collision_geometry: list[CollisionGeometry] = field(default_factory=list)
    collision_spheres: list[CollisionSphere] = field(default_factory=list)  # derived
    collision_boxes: list[CollisionBox] = field(default_factory=list)  # derived
    description: RobotDescription | None = None
    #: joints fixed at a position (rad or m) by ``locked_joints``
    locked_joints: dict[str, float] = field(default_factory=dict)
    #: movable ``<mimic>`` joints (independent in this model)
    mimic: list[MimicCoupling] = field(default_factory=list)
    #: movable joints whose subtree has no (or negative) inertia about their axis at the
    #: neutral configuration: M is singular there, so M^-1 and ABA raise (lock them instead)
    massless_joints: list[str] = field(default_factory=list)
    #: load warnings (inconsistent inertias, unresolved meshes, massless joints), also issued
    #: as URDFWarning
    warnings: list[str] = field(default_factory=list)


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


def load_model(
    source: str | os.PathLike | RobotDescription,
    floating_base: bool = False,
    *,
    strict: bool = False,
    package_dirs: Sequence[str | os.PathLike] | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> ModelData:
    """Build the kernels' arrays from a URDF (path or XML string) or a parsed description.

    Args:
        source: URDF file path, URDF XML string, or a :class:`RobotDescription`.
        floating_base: the root link gets a free-flyer (6-DoF) joint.
        strict: reject physically inconsistent inertias instead of warning (see
            :func:`wbc_dynamics.description.parse_urdf`; ignored for a description).
        package_dirs: directories searched first for ``package://`` meshes.
        locked_joints: movable joints to fix at a position (rad or m), like Pinocchio's
            ``buildReducedModel``; they leave ``joint_names``, q and v.

    Raises:
        URDFError: malformed content, naming the element; an unknown or non-movable locked
            joint; with ``strict``, inconsistent inertias and joints that move no mass
            (singular joint-space inertia; otherwise a warning and
            :attr:`ModelData.massless_joints`).
    """
    if isinstance(source, RobotDescription):
        desc = source
    else:
        desc = parse_urdf(source, strict=strict, package_dirs=package_dirs)
    locked = _check_locked(desc, locked_joints)

    body_parent: list[int] = []
    body_jtype: list[int] = []
    body_tree: list[np.ndarray] = []
    body_axis: list[np.ndarray] = []
    body_I6: list[np.ndarray] = []
    body_names: list[str] = []
    body_joint: list[str] = []  # the movable joint of each body ("" for the free flyer)
    joint_names: list[str] = []
    limits: list[tuple[float, float, float, float]] = []
    link_body: dict[str, int] = {}
    link_pose: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    total_mass = 0.0

    def add_link(link_name: str, body: int, R: np.ndarray, p: np.ndarray) -> None:
        nonlocal total_mass
        link_body[link_name] = body
        link_pose[link_name] = (R, p)
        inertial = desc.links[link_name].inertial
        if inertial is None:
            return
        total_mass += inertial.mass
        if body >= 0:
            I_link = spatial_inertia(inertial.mass, inertial.com, inertial.inertia_in_link_axes())
            X = motion_transform(R, p)  # body -> link
            body_I6[body] += X.T @ I_link @ X

    root = desc.root
    if floating_base:
        body_parent.append(-1)
        body_jtype.append(FREE_FLYER)
        body_tree.append(np.concatenate([np.eye(3).ravel(), np.zeros(3)]))
        body_axis.append(np.zeros(3))
        body_I6.append(np.zeros((6, 6)))
        body_names.append(root)
        body_joint.append("")
        add_link(root, 0, np.eye(3), np.zeros(3))
        root_body = 0
    else:
        add_link(root, -1, np.eye(3), np.zeros(3))
        root_body = -1
    eye, zero = np.eye(3), np.zeros(3)
    stack = [(jname, root_body, eye, zero) for jname in reversed(desc.children[root])]
    while stack:
        jname, body, R_in_body, p_in_body = stack.pop()
        joint = desc.joints[jname]
        # placement of the joint frame in the parent *body* frame
        R_joint = R_in_body @ joint.rotation
        p_joint = p_in_body + R_in_body @ joint.translation
        if joint.type == "fixed" or jname in locked:
            if jname in locked:
                x = locked[jname]
                R_move, p_move = joint.motion(x)
                p_joint = p_joint + R_joint @ p_move
                R_joint = R_joint @ R_move
            child_body, Rc, pc = body, R_joint, p_joint
        else:
            body_parent.append(body)
            body_jtype.append(PRISMATIC if joint.type == "prismatic" else REVOLUTE)
            body_tree.append(np.concatenate([R_joint.ravel(), p_joint]))
            body_axis.append(joint.axis)
            body_I6.append(np.zeros((6, 6)))
            body_names.append(joint.child)
            body_joint.append(jname)
            joint_names.append(jname)
            limits.append((joint.lower, joint.upper, joint.velocity, joint.effort))
            child_body, Rc, pc = len(body_parent) - 1, eye, zero
        add_link(joint.child, child_body, Rc, pc)
        stack.extend((child, child_body, Rc, pc) for child in reversed(desc.children[joint.child]))

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
    # subtree end in v: pre-order makes each subtree a contiguous range, and every body comes
    # after its parent, so one backward sweep propagates the ends (linear time)
    topo[:, 5] = topo[:, 3] + topo[:, 4]
    for i in range(nb - 1, -1, -1):
        parent = topo[i, 0]
        if parent >= 0 and topo[i, 5] > topo[parent, 5]:
            topo[parent, 5] = topo[i, 5]
    tree = np.zeros((nb, TREE_COLS))
    I6 = np.array(body_I6).reshape(nb, 6, 6)
    for i in range(nb):
        tree[i, :12] = body_tree[i]
        tree[i, 12:15] = body_axis[i]
        # mass, first moment h = m c and rotational inertia about the body origin, read off the
        # spatial inertia [[m, -[h]x], [[h]x, Ibar]] (used by the world-frame recursions)
        tree[i, MASS] = I6[i, 0, 0]
        tree[i, FIRST_MOMENT : FIRST_MOMENT + 3] = (I6[i, 5, 1], I6[i, 3, 2], I6[i, 4, 0])
        tree[i, ROT_INERTIA : ROT_INERTIA + 9] = I6[i, 3:, 3:].ravel()
    lim_arr = np.array(limits, dtype=float).reshape(-1, 4)
    massless = _joints_moving_no_mass(topo, tree, Sm, I6, lim_arr, body_joint)
    notes = list(desc.warnings)
    if massless:
        names = ", ".join(repr(name) for name, _ in massless)
        text = (
            f"joint(s) {names} move no mass (inertia about the axis of the moved subtree: "
            f"{', '.join(f'{d:.3g}' for _, d in massless)} kg m^2 or kg): "
            "the joint-space inertia matrix is singular, so minverse/aba raise; lock these "
            "joints (locked_joints) or give their links inertia"
        )
        if strict:
            raise URDFError(text)
        notes.append(text)
        warnings.warn(f"{desc.label}: {text}", URDFWarning, stacklevel=2)
    joint_index = {name: k for k, name in enumerate(joint_names)}
    mimic = [
        MimicCoupling(
            joint_index[j.name], joint_index[j.mimic.leader], j.mimic.multiplier, j.mimic.offset
        )
        for j in (desc.joints[name] for name in joint_names)
        if j.mimic is not None and j.mimic.leader in joint_index
    ]
    geometry = desc.collision_geometry
    return ModelData(
        name=desc.name,
        topo=topo,
        tree=tree,
        Sm=Sm,
        I6=I6,
        nq=iq,
        nv=iv,
        floating_base=floating_base,
        joint_names=joint_names,
        body_names=body_names,
        link_names=list(desc.links),
        link_body=link_body,
        link_pose=link_pose,
        position_lower=lim_arr[:, 0].copy(),
        position_upper=lim_arr[:, 1].copy(),
        velocity_limit=lim_arr[:, 2].copy(),
        effort_limit=lim_arr[:, 3].copy(),
        total_mass=total_mass,
        root_link=root,
        collision_geometry=geometry,
        collision_spheres=spheres_of(geometry),
        collision_boxes=boxes_of(geometry),
        description=desc,
        locked_joints=dict(locked),
        mimic=mimic,
        massless_joints=[name for name, _ in massless],
        warnings=notes,
    )


def _check_locked(
    desc: RobotDescription, locked_joints: Mapping[str, float] | None
) -> dict[str, float]:
    locked: dict[str, float] = {}
    for name, value in (locked_joints or {}).items():
        joint = desc.joints.get(name)
        if joint is None:
            raise URDFError(f"locked_joints: unknown joint '{name}'")
        if not joint.movable:
            raise URDFError(f"locked_joints: joint '{name}' is {joint.type}, not movable")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise URDFError(f"locked_joints['{name}']: {value!r} is not a number") from None
        if not math.isfinite(x):
            raise URDFError(f"locked_joints['{name}']: {value!r} is not finite")
        locked[name] = x
    return locked


def _joints_moving_no_mass(topo, tree, Sm, I6, limits, body_joint) -> list[tuple[str, float]]:
    """(name, M diagonal entry) of the joints that make the joint-space inertia singular (or
    indefinite) at the neutral configuration.

    The diagonal of M is S_i^T Ic_i S_i with Ic_i the composite inertia of body i's subtree
    (one backward pass, linear time); a joint whose subtree has no inertia about its axis makes
    it zero.
    """
    nb = topo.shape[0]
    if nb == 0:
        return []
    Ic = I6.copy()
    for i in range(nb - 1, -1, -1):
        parent = topo[i, 0]
        if parent < 0:
            continue
        R = tree[i, :9].reshape(3, 3)
        p = tree[i, 9:12]
        if topo[i, 1] != FREE_FLYER:
            k = i - (1 if topo[0, 1] == FREE_FLYER else 0)
            lower, upper = limits[k, 0], limits[k, 1]
            x = min(max(0.0, lower), upper)
            if topo[i, 1] == REVOLUTE:
                R = R @ axis_rotation(tree[i, 12:15], x)
            else:
                p = p + R @ (tree[i, 12:15] * x)
        X = motion_transform(R, p)
        Ic[parent] += X.T @ Ic[i] @ X
    found = []
    for i in range(nb):
        S = Sm[i, :, : topo[i, 4]]
        d = np.einsum("ij,ik,kj->j", S, Ic[i], S)
        # relative to the subtree's own inertia: a light finger on a heavy robot is fine, a
        # subtree with inertia but none about the axis (or none at all) is not
        scale = float(np.max(np.abs(Ic[i])))
        if not np.all(d > SINGULAR_TOLERANCE * scale) or scale == 0.0:
            found.append((body_joint[i] or "the floating base", float(np.min(d))))
    return found
