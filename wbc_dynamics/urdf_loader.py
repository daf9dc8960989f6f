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
from .kernels.dynamics import FREE_FLYER, PRISMATIC, REVOLUTE, ModelArrays

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
    "singular_joints",
    "spatial_inertia",
]

#: A joint whose joint-space inertia (diagonal of M at the neutral configuration) is below this
#: fraction of its subtree's composite inertia (largest entry) moves no mass: M is singular.
SINGULAR_TOLERANCE = 1e-12
#: A joint whose articulated-body pivot (its subtree's inertia about the axis with the joints
#: below it free: what ABA and M^-1 divide by) is below this fraction of the subtree's composite
#: inertia moves no mass either. Rounding level (an exact zero comes out as a few 1e-16): a
#: subtree whose inertia about the axis the joints below can almost entirely take up is
#: ill-conditioned, not singular (iCub's neck at the neutral configuration: 1.6e-13).
PIVOT_TOLERANCE = 1e-14
#: How the free-flyer is named among the joints that move no mass.
FLOATING_BASE = "the floating base"


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
    """A loaded robot: its kernel model ``arrays``
    (:class:`~wbc_dynamics.kernels.dynamics.ModelArrays`, gravity [0, 0, -9.81] m/s^2) and the
    names and limits around it."""

    name: str
    arrays: ModelArrays
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
    #: movable joints (``"the floating base"`` for the free-flyer) whose subtree has no (or
    #: negative) inertia about their axis at the neutral configuration, alone or with the
    #: joints below it free: M is singular there, so M^-1 and ABA raise (lock them instead)
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
    q_index = np.zeros(nb, dtype=np.int64)
    v_index = np.zeros(nb, dtype=np.int64)
    joint_nv = np.zeros(nb, dtype=np.int64)
    Sm = np.zeros((nb, 6, 6))
    iq = iv = 0
    for i in range(nb):
        q_index[i] = iq
        v_index[i] = iv
        if body_jtype[i] == FREE_FLYER:
            joint_nv[i] = 6
            Sm[i] = np.eye(6)
            iq += 7
            iv += 6
        else:
            joint_nv[i] = 1
            if body_jtype[i] == REVOLUTE:
                Sm[i, 3:, 0] = body_axis[i]
            else:
                Sm[i, :3, 0] = body_axis[i]
            iq += 1
            iv += 1
    parent = np.array(body_parent, dtype=np.int64)
    # subtree end in v: pre-order makes each subtree a contiguous range, and every body comes
    # after its parent, so one backward sweep propagates the ends (linear time)
    subtree_end = v_index + joint_nv
    for i in range(nb - 1, -1, -1):
        if parent[i] >= 0 and subtree_end[i] > subtree_end[parent[i]]:
            subtree_end[parent[i]] = subtree_end[i]
    I6 = np.array(body_I6).reshape(nb, 6, 6)
    placement = np.array(body_tree).reshape(nb, 12)
    # mass, first moment h = m c and rotational inertia about the body origin, read off the
    # spatial inertia [[m, -[h]x], [[h]x, Ibar]] (used by the world-frame recursions)
    arrays = ModelArrays(
        parent=parent,
        joint_type=np.array(body_jtype, dtype=np.int64),
        q_index=q_index,
        v_index=v_index,
        joint_nv=joint_nv,
        subtree_end=subtree_end,
        joint_rotation=np.ascontiguousarray(placement[:, :9].reshape(nb, 3, 3)),
        joint_translation=np.ascontiguousarray(placement[:, 9:12]),
        joint_axis=np.array(body_axis, dtype=float).reshape(nb, 3),
        mass=np.ascontiguousarray(I6[:, 0, 0]),
        first_moment=np.ascontiguousarray(np.stack([I6[:, 5, 1], I6[:, 3, 2], I6[:, 4, 0]], 1)),
        rotational_inertia=np.ascontiguousarray(I6[:, 3:, 3:]),
        motion_subspace=Sm,
        spatial_inertia=I6,
        gravity=np.array([0.0, 0.0, -9.81]),
    )
    lim_arr = np.array(limits, dtype=float).reshape(-1, 4)
    # the neutral configuration of RobotModel.neutral: joints at 0 clipped into their limits
    # (np.clip's order: the upper limit where inverted limits leave no range)
    q0 = np.zeros(iq)
    if floating_base:
        q0[6] = 1.0
    q0[iq - len(joint_names) :] = np.minimum(np.maximum(0.0, lim_arr[:, 0]), lim_arr[:, 1])
    massless = _joints_moving_no_mass(arrays, q0, body_joint)
    notes = list(desc.warnings)
    if massless:
        names = ", ".join(repr(name) for name, _ in massless)
        base = (
            " (a floating base cannot be locked: load it with a fixed base or give the robot "
            "inertia about every axis)"
            if floating_base and massless[0][0] == FLOATING_BASE
            else ""
        )
        text = (
            f"joint(s) {names} move no mass (inertia about the axis of the moved subtree, "
            f"with the joints below free: {', '.join(f'{d:.3g}' for _, d in massless)} "
            "kg m^2 or kg): the joint-space inertia matrix is singular, so minverse/aba raise; "
            f"lock these joints (locked_joints) or give their links inertia{base}"
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
        arrays=arrays,
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


def singular_joints(data: ModelData, q: np.ndarray) -> list[tuple[str, float]]:
    """(name, inertia about the axis (kg m^2 or kg)) of the joints at which the joint-space
    inertia M(q) is singular (or indefinite), in ``joint_names`` order (the floating base
    first, as ``FLOATING_BASE``); empty when M(q) is positive definite.

    ``q`` (nq,) must be finite; the base pose does not matter. A Python pass in linear time
    (about 50 us per body), for diagnosis: see ``_joints_moving_no_mass``.
    """
    body_joint = ([""] if data.floating_base else []) + list(data.joint_names)
    return _joints_moving_no_mass(data.arrays, q, body_joint)


def _joints_moving_no_mass(model: ModelArrays, q, body_joint) -> list[tuple[str, float]]:
    """(name, inertia) of the joints that make the joint-space inertia singular (or
    indefinite) at the configuration ``q``; ``body_joint[i]`` names body i's joint ("" for
    the free-flyer).

    One backward pass (linear time) with two tests per joint i, each relative to the subtree's
    own inertia (largest entry of its composite inertia Ic_i: a light finger on a heavy robot is
    fine, a subtree with inertia but none about the axis, or none at all, is not):

    * the diagonal of M, S_i^T Ic_i S_i: zero when the subtree has no inertia about the axis
      (:data:`SINGULAR_TOLERANCE`);
    * the articulated-body pivot D_i = S_i^T IA_i S_i, IA_i the subtree's inertia with the
      joints below i free (:data:`PIVOT_TOLERANCE`). M is positive definite if and only if
      every D_i is, and M^-1 and ABA divide by them. This catches what the diagonal cannot:
      a free-flyer whose mass lies on a line not along a base axis (point masses; no inertia
      about that line, yet about every base axis), or a joint whose subtree the joints below
      it can move entirely (coaxial joints).

    The inertia a singular pivot cannot take up is passed to the parent as if those directions
    were locked, so each joint above is judged on its own. The value reported is the smallest
    diagonal entry or pivot eigenvalue.
    """
    nb = model.parent.shape[0]
    if nb == 0:
        return []
    Ic = model.spatial_inertia.copy()
    IA = model.spatial_inertia.copy()
    found = []
    for i in range(nb - 1, -1, -1):  # pre-order: body i's subtree is complete when reached
        n = model.joint_nv[i]
        S = model.motion_subspace[i, :, :n]
        scale = float(np.max(np.abs(Ic[i])))
        d = np.einsum("ij,ik,kj->j", S, Ic[i], S)
        U = IA[i] @ S
        if n == 1:
            w = np.array([float(S[:, 0] @ U[:, 0])])
            V = np.ones((1, 1))
        else:
            D = S.T @ U
            w, V = np.linalg.eigh(0.5 * (D + D.T))
        regular = w > PIVOT_TOLERANCE * scale
        if scale == 0.0 or not np.all(d > SINGULAR_TOLERANCE * scale) or not np.all(regular):
            found.append((body_joint[i] or FLOATING_BASE, float(min(np.min(d), np.min(w)))))
        parent = model.parent[i]
        if parent < 0:
            continue
        R = model.joint_rotation[i]
        p = model.joint_translation[i]
        if model.joint_type[i] != FREE_FLYER:
            x = float(q[model.q_index[i]])
            if model.joint_type[i] == REVOLUTE:
                R = R @ axis_rotation(model.joint_axis[i], x)
            else:
                p = p + R @ (model.joint_axis[i] * x)
        X = motion_transform(R, p)
        Ic[parent] += X.T @ Ic[i] @ X
        Ur = U @ V[:, regular]  # IA_i minus what joint i takes up: U D^-1 U^T on its range
        IA[parent] += X.T @ (IA[i] - (Ur / w[regular]) @ Ur.T) @ X
    found.reverse()  # joint_names order
    return found
