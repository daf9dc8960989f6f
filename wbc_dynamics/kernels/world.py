"""World-frame recursions: CRBA, ABA and analytical M^-1, all quantities at the world origin.

One module for one compiled kernel family over one workspace: the recursions share the fields of
a :class:`RigidBodyData` and the inlined helpers that read them, and a numba kernel's cache entry
and compile time depend on the module that defines it.

Expressing motion subspaces, inertias and articulated inertias in the world frame (as Pinocchio
does) removes the 6x6 congruence transform per body from the backward passes: inertias and
force sets of children are simply added to their parent's. Each body costs one world-inertia
evaluation (from its mass, first moment and rotational inertia) instead.

The kernels take the per-body quantities as ``data``, the :class:`RigidBodyRecord` of a
:class:`RigidBodyData` (one array per named quantity, as Pinocchio's ``Data`` or MuJoCo's
``mjData``; shapes, units and frames documented once, on its fields), and a small scratch
``SC`` (N_SCRATCH, 6, 6); :func:`workspace` allocates both for a model.

Scratch ``SC``, one per model: ``SC_KERNEL_WORK`` the running kernel's work rows or matrix,
``SC_INNER_WORK`` the work of a step inside it (:func:`_backward_joint`'s D^-1, :func:`crba`'s
``Ic S``), ``SC_DERIVATIVE_WORK`` the derivatives' (:mod:`.derivatives`), ``SC_FORWARD_PASS``
the rows of :func:`rnea` and of the point kinematics, ``SC_ROTATIONS`` (two slots, rows 0-2) the
(2, 3, 3) rotation scratch of :func:`forward_kinematics`; slots 3-4 are spare.

Every kernel reads the robot model from ``model``, a :class:`.dynamics.ModelRecord` (field names,
shapes and units on :class:`.dynamics.ModelArrays`). The frame queries (:func:`frame_jacobian`,
:func:`frame_placement`) take no workspace: ``q``, the frame and ``model`` only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref

from .dynamics import (
    BAD_FEXT,
    FREE_FLYER,
    OK,
    REVOLUTE,
    SINGULAR,
    _invert_spd,
    check_configuration,
    check_matrix,
    check_state,
    joint_motion,
    joint_velocity,
)
from .kinematics import point_bias as _point_bias
from .kinematics import points_kinematics as _points_kinematics
from .leaf import leaf_kernel
from .records import RecordType, define_record, register_leaf_readable
from .spatial import (
    add6,
    add_cross,
    cross_force,
    cross_motion,
    mat6_vec,
    rotate,
    row6_dot,
)


class RigidBodyData(NamedTuple):
    """What the recursions of :mod:`.world` compute per body, one array per quantity, indexed by
    body (``nb`` bodies, the model's depth-first order). Spatial vectors and matrices are
    [linear; angular]; "world" quantities are expressed at the world origin in world axes,
    "body" quantities at the body origin in body axes. A field holds what the kernel that last
    wrote it computed: each entry point (re)computes what it reads, except where a kernel's
    docstring says it reads an earlier kernel's result (e.g. the world poses). Only the first
    ``joint_nv[i]`` columns (and rows, for the nvi x nvi blocks) of the per-joint fields are used.
    """

    #: (nb, 4, 3) float64: world pose of each body: rows 0-2 the rotation R (body axes to world
    #: axes), row 3 the position of the body origin [m], world frame. Written by
    #: :func:`kinematics_into`, :func:`placements_into` and :func:`crba`; read by the contact
    #: candidates and the momentum observer after them.
    pose: np.ndarray
    #: (nb, 6, 6) float64: parent-to-body motion transform Xup (parent frame to body frame).
    #: :func:`rnea` and :func:`placements_into` store rows 0-2 only (rows 3-5 are [0, R^T]),
    #: the point kinematics all six.
    xup: np.ndarray
    #: (nb, 6, 6) float64: the joint's motion subspace S, world frame (per unit joint velocity:
    #: [m/s; rad/s] per [m/s or rad/s]).
    motion_subspace: np.ndarray
    #: (nb, 6, 6) float64: the body's spatial inertia, world frame [kg, kg m, kg m^2]
    #: (:func:`world_quantities`). :func:`minverse` then accumulates the articulated inertias
    #: in place of it (upper triangles only): its backward pass is the last reader of the body
    #: inertias and saves a 6x6 copy per body that way.
    body_inertia: np.ndarray
    #: (nb, 2, 6) float64: :func:`crba`'s composite inertia of the body's subtree as its 10
    #: parameters at the world origin: row 0, columns 0-3 the mass [kg] and first moment h
    #: [kg m]; row 1 the rotational inertia's upper triangle (00, 01, 02, 11, 12, 22) [kg m^2].
    composite_inertia: np.ndarray
    #: (nb, 6, 6) float64: articulated inertia IA, world frame [kg, kg m, kg m^2] (:func:`aba`,
    #: the multi-DoF joints of :func:`minverse`, :func:`.derivatives.iwim`).
    articulated_inertia: np.ndarray
    #: (nb, 6, 6) float64: ``U = IA S``, world frame (first nvi columns).
    articulated_inertia_times_subspace: np.ndarray
    #: (nb, 6, 6) float64: ``D = S^T IA S``, the articulated inertia seen by the joint
    #: (nvi x nvi) [kg, kg m, kg m^2 by joint type].
    joint_articulated_inertia: np.ndarray
    #: (nb, 6, 6) float64: ``D^-1`` (nvi x nvi).
    joint_articulated_inertia_inverse: np.ndarray
    #: (nb, 6) float64: body velocity [m/s; rad/s]; world frame (:func:`aba`), body frame
    #: (:func:`rnea`, the point kinematics).
    velocity: np.ndarray
    #: (nb, 6) float64: body acceleration [m/s^2; rad/s^2], framed as ``velocity``
    #: (:func:`rnea`'s includes -g; the point kinematics' is the velocity-product part J̇v).
    acceleration: np.ndarray
    #: (nb, 6) float64: :func:`rnea`'s net body force [N; N m], body frame, summed over the
    #: subtree by its backward pass.
    force: np.ndarray
    #: (nb, 6) float64: :func:`aba`'s velocity-product acceleration ``c = v x vJ``, world frame
    #: [m/s^2; rad/s^2].
    velocity_product: np.ndarray
    #: (nb, 6) float64: :func:`aba`'s bias force ``pA``, world frame [N; N m].
    bias_force: np.ndarray
    #: (nb, 6) float64: :func:`aba`'s joint-space ``u = tau - S^T pA`` [N or N m] (first nvi
    #: entries).
    net_joint_force: np.ndarray
    #: (4, 6) float64: :func:`world_quantities`' scratch (rows 0-2: ``Ibar R^T``, row 3: the
    #: world rotational inertia's upper triangle).
    inertia_scratch: np.ndarray


@register_leaf_readable
class RigidBodyRecordType(RecordType):
    """numba type of :class:`RigidBodyRecord`."""


class RigidBodyRecord(structref.StructRefProxy):
    """The :class:`RigidBodyData` as one pointer (same arrays, no copy; see
    ``wbc_dynamics.kernels.records``): what every kernel takes as ``data``. Build it with
    :func:`rigid_body_record`."""


define_record(RigidBodyRecord, RigidBodyRecordType, RigidBodyData)


@njit(cache=True)
def rigid_body_record(d):
    """The :class:`RigidBodyRecord` of the :class:`RigidBodyData` ``d`` (compiled, cached)."""
    return RigidBodyRecord(*d)


def rigid_body_data(nb: int) -> RigidBodyData:
    """A zeroed :class:`RigidBodyData` for a model with ``nb`` bodies."""

    def per_body(*shape: int) -> np.ndarray:
        return np.zeros((nb, *shape))

    return RigidBodyData(
        pose=per_body(4, 3), xup=per_body(6, 6), motion_subspace=per_body(6, 6),
        body_inertia=per_body(6, 6), composite_inertia=per_body(2, 6),
        articulated_inertia=per_body(6, 6), articulated_inertia_times_subspace=per_body(6, 6),
        joint_articulated_inertia=per_body(6, 6), joint_articulated_inertia_inverse=per_body(6, 6),
        velocity=per_body(6), acceleration=per_body(6), force=per_body(6),
        velocity_product=per_body(6), bias_force=per_body(6), net_joint_force=per_body(6),
        inertia_scratch=np.zeros((4, 6)),
    )


# Slots of the scratch SC (N_SCRATCH, 6, 6), shared by all kernels of a model (one runs at a
# time). numba reads module globals as compile-time constants: a name costs nothing over the
# number.
#: the running kernel's work rows or matrix: :func:`crba`'s ``Ibar R^T``, :func:`aba`'s rows
#: (vJ, I v, pa, a'), :func:`minverse`'s column, the derivatives' forward-pass rows
SC_KERNEL_WORK = 0
#: work of an inner step: :func:`_backward_joint`'s D^-1 (Cholesky scratch), :func:`crba`'s
#: ``Ic S`` columns, the derivatives' per-column rows
SC_INNER_WORK = 1
#: the derivatives' further per-column rows (:mod:`.derivatives`)
SC_DERIVATIVE_WORK = 2
#: rows of a body-frame forward pass: :func:`rnea`'s (vJ, I v, -g), the point kinematics' (vJ
#: in row 0, a 3-vector in row 3)
SC_FORWARD_PASS = 5
#: slots SC_ROTATIONS and SC_ROTATIONS + 1, rows 0-2: the (2, 3, 3) rotation scratch of
#: :func:`.kinematics.forward_kinematics`
SC_ROTATIONS = 6
N_SCRATCH = 8


def workspace(nb: int) -> tuple[RigidBodyRecord, np.ndarray]:
    """Allocate (data, SC) for a model with nb bodies: the :class:`RigidBodyRecord` of a zeroed
    :class:`RigidBodyData` and the scratch."""
    return rigid_body_record(rigid_body_data(nb)), np.zeros((N_SCRATCH, 6, 6))


@njit(cache=True, error_model="numpy", inline="always")
def _motion_subspace_to_world(S, nvi, P, Sw):
    """``Sw[:, :nvi]`` = the motion subspace ``S`` of a body at world pose ``P`` (rows 0-2 R,
    row 3 p) at the world origin: a motion [v; w] maps to [R v + p x R w; R w]."""
    # R and p in locals: read once per body, not again after each store into Sw
    R00, R01, R02 = P[0, 0], P[0, 1], P[0, 2]
    R10, R11, R12 = P[1, 0], P[1, 1], P[1, 2]
    R20, R21, R22 = P[2, 0], P[2, 1], P[2, 2]
    p0, p1, p2 = P[3, 0], P[3, 1], P[3, 2]
    for k in range(nvi):
        a0 = R00 * S[3, k] + R01 * S[4, k] + R02 * S[5, k]
        a1 = R10 * S[3, k] + R11 * S[4, k] + R12 * S[5, k]
        a2 = R20 * S[3, k] + R21 * S[4, k] + R22 * S[5, k]
        l0 = R00 * S[0, k] + R01 * S[1, k] + R02 * S[2, k]
        l1 = R10 * S[0, k] + R11 * S[1, k] + R12 * S[2, k]
        l2 = R20 * S[0, k] + R21 * S[1, k] + R22 * S[2, k]
        Sw[0, k], Sw[1, k], Sw[2, k] = add_cross(l0, l1, l2, p0, p1, p2, a0, a1, a2)
        Sw[3, k], Sw[4, k], Sw[5, k] = a0, a1, a2


@njit(cache=True, error_model="numpy", inline="always")
def _world_inertia_parameters(model, i, P, B, out):
    """The inertia of body ``i`` (m, h and Ibar about the body origin, from ``model``) at
    world pose ``P`` (rows 0-2 R, row 3 p), moved to the world origin: returns (m, h_w) with
    h_w = R h + m p, and writes the upper triangle (00, 01, 02, 11, 12, 22) of
    Ibar_w = R Ibar R^T - [Rh][p] - [p][Rh] - m [p]^2 into ``out[:6]``. ``B[:3, :3]``: scratch."""
    m = model.mass[i]
    h = model.first_moment[i]
    hx, hy, hz = h[0], h[1], h[2]
    Ibar = model.rotational_inertia[i]
    # Rh
    g0, g1, g2 = rotate(P, hx, hy, hz)
    # R Ibar R^T via B = Ibar R^T
    for r in range(3):
        for c in range(3):
            B[r, c] = (
                Ibar[r, 0] * P[c, 0]
                + Ibar[r, 1] * P[c, 1]
                + Ibar[r, 2] * P[c, 2]
            )
    # - [g][p] - [p][g] - m [p]^2 ; ([a][b])_rc = b_r a_c - (a.b) delta_rc
    p0, p1, p2 = P[3, 0], P[3, 1], P[3, 2]
    gp = g0 * p0 + g1 * p1 + g2 * p2
    pp = p0 * p0 + p1 * p1 + p2 * p2
    gv = (g0, g1, g2)
    pv = (p0, p1, p2)
    n = 0
    for r in range(3):
        for c in range(r, 3):
            rot = P[r, 0] * B[0, c] + P[r, 1] * B[1, c] + P[r, 2] * B[2, c]
            sh = -(pv[r] * gv[c] + gv[r] * pv[c]) - m * pv[r] * pv[c]
            if r == c:
                sh += 2.0 * gp + m * pp
            out[n] = rot + sh
            n += 1
    return m, g0 + m * p0, g1 + m * p1, g2 + m * p2


@leaf_kernel(error_model="numpy")
def world_quantities(model, data, with_inertia):
    """World-frame motion subspaces (``data.motion_subspace``) and, if asked, body inertias
    (``data.body_inertia``).

    Needs world poses (``data.pose``) from :func:`kinematics_into`. A motion [v; w] of body i maps
    to the world origin as [R v + p x R w; R w]; the inertia (m, h, Ibar about the body origin)
    moves as h_w = R h + m p, Ibar_w = R Ibar R^T - [Rh][p] - [p][Rh] - m [p]^2.
    """
    nb = model.parent.shape[0]
    pose, motion_subspace, body_inertia = data.pose, data.motion_subspace, data.body_inertia
    B = data.inertia_scratch
    for i in range(nb):
        P = pose[i]
        _motion_subspace_to_world(model.motion_subspace[i], model.joint_nv[i], P,
                                  motion_subspace[i])
        if not with_inertia:
            continue
        Iw = body_inertia[i]
        # Ibar_w's upper triangle into B's row 3 (rows 0-2: the helper's scratch)
        m, h0, h1, h2 = _world_inertia_parameters(model, i, P, B, B[3])
        n = 0
        for r in range(3):
            for c in range(r, 3):
                Iw[3 + r, 3 + c] = B[3, n]
                Iw[3 + c, 3 + r] = B[3, n]
                n += 1
        for r in range(3):
            for c in range(3):
                Iw[r, c] = m if r == c else 0.0
        # top-right -[h]x, bottom-left [h]x
        Iw[0, 3], Iw[0, 4], Iw[0, 5] = 0.0, h2, -h1
        Iw[1, 3], Iw[1, 4], Iw[1, 5] = -h2, 0.0, h0
        Iw[2, 3], Iw[2, 4], Iw[2, 5] = h1, -h0, 0.0
        Iw[3, 0], Iw[3, 1], Iw[3, 2] = 0.0, -h2, h1
        Iw[4, 0], Iw[4, 1], Iw[4, 2] = h2, 0.0, -h0
        Iw[5, 0], Iw[5, 1], Iw[5, 2] = -h1, h0, 0.0


@njit(cache=True, error_model="numpy", inline="always")
def joint_indices(model, i):
    """(parent body, first v index, DoF count) of body ``i``'s joint: what every pass over the
    bodies reads first."""
    return model.parent[i], model.v_index[i], model.joint_nv[i]


@njit(cache=True, error_model="numpy", inline="always")
def body_velocity(velocity, i, par, vJ):
    """``velocity[i] = velocity[par] + vJ`` (``vJ`` = S qd, the joint's velocity), or ``vJ`` for a
    body attached to the world (``par`` < 0): the outward velocity step of the world-frame
    recursions, where no frame change separates a body from its parent. Returns the row
    ``velocity[i]``."""
    vel = velocity[i]
    if par < 0:
        for r in range(6):
            vel[r] = vJ[r]
    else:
        for r in range(6):
            vel[r] = velocity[par, r] + vJ[r]
    return vel


@njit(cache=True, error_model="numpy", inline="always")
def _copy6(src, dst):
    # an explicit loop: numba's array-to-array assignment checks for overlap and may copy
    for r in range(6):
        for c in range(6):
            dst[r, c] = src[r, c]


@njit(cache=True, error_model="numpy", inline="always")
def _local_pose(model, q, i):
    """Rotation (9, row-major) and translation (3) of body i in its parent's frame, as scalars.

    The arithmetic of :func:`.dynamics._pose_in_parent` held in registers: the frame kernels
    below then need no workspace argument (each array argument costs ~40 ns to unbox).
    """
    jt = model.joint_type[i]
    iq = model.q_index[i]
    if jt == FREE_FLYER:
        qx, qy, qz, qw = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        n = np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
        x = qx / n
        y = qy / n
        z = qz / n
        w = qw / n
        return (
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - z * w),
            2.0 * (x * z + y * w),
            2.0 * (x * y + z * w),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - x * w),
            2.0 * (x * z - y * w),
            2.0 * (y * z + x * w),
            1.0 - 2.0 * (x * x + y * y),
            q[iq],
            q[iq + 1],
            q[iq + 2],
        )
    R = model.joint_rotation[i]
    p = model.joint_translation[i]
    ax = model.joint_axis[i]
    if jt == REVOLUTE:
        c = np.cos(q[iq])
        s = np.sin(q[iq])
        u = 1.0 - c
        x = ax[0]
        y = ax[1]
        z = ax[2]
        j00 = c + u * x * x
        j01 = u * x * y - s * z
        j02 = u * x * z + s * y
        j10 = u * x * y + s * z
        j11 = c + u * y * y
        j12 = u * y * z - s * x
        j20 = u * x * z - s * y
        j21 = u * y * z + s * x
        j22 = c + u * z * z
        return (
            R[0, 0] * j00 + R[0, 1] * j10 + R[0, 2] * j20,
            R[0, 0] * j01 + R[0, 1] * j11 + R[0, 2] * j21,
            R[0, 0] * j02 + R[0, 1] * j12 + R[0, 2] * j22,
            R[1, 0] * j00 + R[1, 1] * j10 + R[1, 2] * j20,
            R[1, 0] * j01 + R[1, 1] * j11 + R[1, 2] * j21,
            R[1, 0] * j02 + R[1, 1] * j12 + R[1, 2] * j22,
            R[2, 0] * j00 + R[2, 1] * j10 + R[2, 2] * j20,
            R[2, 0] * j01 + R[2, 1] * j11 + R[2, 2] * j21,
            R[2, 0] * j02 + R[2, 1] * j12 + R[2, 2] * j22,
            p[0],
            p[1],
            p[2],
        )
    # prismatic: translate along the axis expressed in the joint frame
    d = q[iq]
    ax0 = ax[0] * d
    ax1 = ax[1] * d
    ax2 = ax[2] * d
    return (
        R[0, 0],
        R[0, 1],
        R[0, 2],
        R[1, 0],
        R[1, 1],
        R[1, 2],
        R[2, 0],
        R[2, 1],
        R[2, 2],
        p[0] + R[0, 0] * ax0 + R[0, 1] * ax1 + R[0, 2] * ax2,
        p[1] + R[1, 0] * ax0 + R[1, 1] * ax1 + R[1, 2] * ax2,
        p[2] + R[2, 0] * ax0 + R[2, 1] * ax1 + R[2, 2] * ax2,
    )


@njit(cache=True, error_model="numpy", inline="always")
def _compose_pose(model, pose, i, L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2):
    """World pose of body i into ``pose[i]`` (``data.pose``) from its local pose ``L``
    (row-major) / ``l`` and its parent's world pose (already stored: depth-first order)."""
    P = pose[i]
    par = model.parent[i]
    if par < 0:
        P[0, 0], P[0, 1], P[0, 2] = L00, L01, L02
        P[1, 0], P[1, 1], P[1, 2] = L10, L11, L12
        P[2, 0], P[2, 1], P[2, 2] = L20, L21, L22
        P[3, 0], P[3, 1], P[3, 2] = l0, l1, l2
    else:
        Pp = pose[par]
        for r in range(3):
            a0, a1, a2 = Pp[r, 0], Pp[r, 1], Pp[r, 2]
            P[r, 0] = a0 * L00 + a1 * L10 + a2 * L20
            P[r, 1] = a0 * L01 + a1 * L11 + a2 * L21
            P[r, 2] = a0 * L02 + a1 * L12 + a2 * L22
            P[3, r] = Pp[3, r] + a0 * l0 + a1 * l1 + a2 * l2


@leaf_kernel(error_model="numpy")
def world_poses_into(model, q, last, data, SC):
    """World poses of bodies 0..last into ``data.pose`` (rows 0-2 rotation, row 3 position).

    In depth-first order bodies 0..last include every ancestor of ``last``. The local pose is
    held in registers (:func:`_local_pose`, the arithmetic of ``_pose_in_parent``): ``SC`` is
    not used any more, kept so that callers need not change.
    """
    pose = data.pose
    for i in range(last + 1):
        L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2 = _local_pose(model, q, i)
        _compose_pose(model, pose, i, L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2)


@leaf_kernel(error_model="numpy")
def placements_into(model, q, data):
    """The one kinematics pass of a dynamics tick: each body's local pose, evaluated once
    (:func:`_local_pose`), gives both its parent-to-body transform ``data.xup`` (rows 0-2,
    the layout :func:`rnea` reads) and its world pose ``data.pose`` (as :func:`world_poses_into`),
    for :func:`dynamics_terms` and the contact candidates that read the placements after it.
    """
    xup, pose = data.xup, data.pose
    for i in range(model.parent.shape[0]):
        L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2 = _local_pose(model, q, i)
        _store_xup(xup[i], L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2)
        _compose_pose(model, pose, i, L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2)


@leaf_kernel(error_model="numpy")
def kinematics_into(model, q, data, SC):
    """World poses of every body (``data.pose``)."""
    world_poses_into(model, q, model.parent.shape[0] - 1, data, SC)


@leaf_kernel(error_model="numpy")
def crba(q, M, model, data, SC):
    """Joint-space inertia matrix by the composite-rigid-body algorithm, world frame.

    Featherstone (2008) Table 6.2 with composite inertias at the world origin: Ic_parent += Ic_i
    and M[j, i] = S_j^T Ic_i S_i for every ancestor j, with no frame changes. A composite
    inertia is held as its 10 parameters (mass m, first moment h and rotational inertia Ibar
    about the world origin, ``data.composite_inertia``) rather than as a 6x6 matrix: the
    backward pass adds 10 numbers per body instead of 36, and Ic S is formed from them. The
    additions are the ones the 6x6 sum makes on its distinct entries, so Ic is the same to the
    bit.
    """
    st = check_configuration(model, q)
    if st != OK:
        return st
    nb = model.parent.shape[0]
    nv = M.shape[0]
    pose, motion_subspace, composite = data.pose, data.motion_subspace, data.composite_inertia
    for i in range(nb):
        # world pose (data.pose), as world_poses_into with the local pose in registers
        L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2 = _local_pose(model, q, i)
        P = pose[i]
        par = model.parent[i]
        if par < 0:
            R00, R01, R02 = L00, L01, L02
            R10, R11, R12 = L10, L11, L12
            R20, R21, R22 = L20, L21, L22
            p0, p1, p2 = l0, l1, l2
        else:
            Pp = pose[par]
            # R = R_parent L, column by column
            R00, R10, R20 = rotate(Pp, L00, L10, L20)
            R01, R11, R21 = rotate(Pp, L01, L11, L21)
            R02, R12, R22 = rotate(Pp, L02, L12, L22)
            p0 = Pp[3, 0] + Pp[0, 0] * l0 + Pp[0, 1] * l1 + Pp[0, 2] * l2
            p1 = Pp[3, 1] + Pp[1, 0] * l0 + Pp[1, 1] * l1 + Pp[1, 2] * l2
            p2 = Pp[3, 2] + Pp[2, 0] * l0 + Pp[2, 1] * l1 + Pp[2, 2] * l2
        P[0, 0], P[0, 1], P[0, 2] = R00, R01, R02
        P[1, 0], P[1, 1], P[1, 2] = R10, R11, R12
        P[2, 0], P[2, 1], P[2, 2] = R20, R21, R22
        P[3, 0], P[3, 1], P[3, 2] = p0, p1, p2
        # motion subspace and inertia parameters at the world origin, as world_quantities
        _motion_subspace_to_world(model.motion_subspace[i], model.joint_nv[i], P,
                                  motion_subspace[i])
        C = composite[i]
        # row 0: m, h_w; row 1: Ibar_w's upper triangle (00, 01, 02, 11, 12, 22)
        C[0, 0], C[0, 1], C[0, 2], C[0, 3] = _world_inertia_parameters(model, i, P,
                                                                       SC[SC_KERNEL_WORK], C[1])
    for i in range(nb - 1, -1, -1):
        par = model.parent[i]
        if par >= 0:
            C = composite[i]
            Cp = composite[par]
            for c in range(4):
                Cp[0, c] += C[0, c]
            for c in range(6):
                Cp[1, c] += C[1, c]
    F = SC[SC_INNER_WORK]
    for i in range(nb):
        iv = model.v_index[i]
        nvi = model.joint_nv[i]
        # bodies on different branches do not couple: in depth-first order, the bodies after
        # i's subtree are not its descendants (the ancestor loops write every other entry once)
        for k in range(iv, iv + nvi):
            for c in range(model.subtree_end[i], nv):
                M[k, c] = 0.0
                M[c, k] = 0.0
        C = composite[i]
        m, h0, h1, h2 = C[0, 0], C[0, 1], C[0, 2], C[0, 3]
        I00, I01, I02, I11, I12, I22 = C[1, 0], C[1, 1], C[1, 2], C[1, 3], C[1, 4], C[1, 5]
        Sw = motion_subspace[i]
        if nvi == 1:
            # the common case with F in registers: one column against every ancestor's
            v0, v1, v2, w0, w1, w2 = Sw[0, 0], Sw[1, 0], Sw[2, 0], Sw[3, 0], Sw[4, 0], Sw[5, 0]
            f0 = m * v0 + (h2 * w1 - h1 * w2)
            f1 = m * v1 + (h0 * w2 - h2 * w0)
            f2 = m * v2 + (h1 * w0 - h0 * w1)
            f3 = (h1 * v2 - h2 * v1) + (I00 * w0 + I01 * w1 + I02 * w2)
            f4 = (h2 * v0 - h0 * v2) + (I01 * w0 + I11 * w1 + I12 * w2)
            f5 = (h0 * v1 - h1 * v0) + (I02 * w0 + I12 * w1 + I22 * w2)
            j = i
            while j >= 0:
                jv = model.v_index[j]
                Sj = motion_subspace[j]
                for k1 in range(model.joint_nv[j]):
                    s = (
                        Sj[0, k1] * f0
                        + Sj[1, k1] * f1
                        + Sj[2, k1] * f2
                        + Sj[3, k1] * f3
                        + Sj[4, k1] * f4
                        + Sj[5, k1] * f5
                    )
                    M[jv + k1, iv] = s
                    M[iv, jv + k1] = s
                j = model.parent[j]
            continue
        for k in range(nvi):
            # F = Ic S: [m v - h x w; h x v + Ibar w] (Ic = [m 1, -[h]; [h], Ibar])
            v0, v1, v2, w0, w1, w2 = Sw[0, k], Sw[1, k], Sw[2, k], Sw[3, k], Sw[4, k], Sw[5, k]
            F[0, k] = m * v0 + (h2 * w1 - h1 * w2)
            F[1, k] = m * v1 + (h0 * w2 - h2 * w0)
            F[2, k] = m * v2 + (h1 * w0 - h0 * w1)
            F[3, k] = (h1 * v2 - h2 * v1) + (I00 * w0 + I01 * w1 + I02 * w2)
            F[4, k] = (h2 * v0 - h0 * v2) + (I01 * w0 + I11 * w1 + I12 * w2)
            F[5, k] = (h0 * v1 - h1 * v0) + (I02 * w0 + I12 * w1 + I22 * w2)
        j = i
        while j >= 0:
            jv = model.v_index[j]
            Sj = motion_subspace[j]
            for k1 in range(model.joint_nv[j]):
                s0, s1, s2 = Sj[0, k1], Sj[1, k1], Sj[2, k1]
                s3, s4, s5 = Sj[3, k1], Sj[4, k1], Sj[5, k1]
                for k2 in range(nvi):
                    s = (
                        s0 * F[0, k2]
                        + s1 * F[1, k2]
                        + s2 * F[2, k2]
                        + s3 * F[3, k2]
                        + s4 * F[4, k2]
                        + s5 * F[5, k2]
                    )
                    M[jv + k1, iv + k2] = s
                    M[iv + k2, jv + k1] = s
            j = model.parent[j]
    return OK


@leaf_kernel(error_model="numpy")
def _backward_joint(model, i, data, SC):
    """U = IA S, D = S^T U, D^-1 for body i (world frame). False if D is not positive definite."""
    if model.joint_nv[i] == 6:
        # a literal DoF count for the free-flyer: fixed loop bounds (unrolled)
        return _backward_joint_n(model, i, 6, data, SC)
    return _backward_joint_n(model, i, model.joint_nv[i], data, SC)


@njit(cache=True, error_model="numpy", inline="always")
def _backward_joint_n(model, i, nvi, data, SC):
    IA = data.articulated_inertia[i]
    Sw = data.motion_subspace[i]
    U = data.articulated_inertia_times_subspace[i]
    D = data.joint_articulated_inertia[i]
    for k in range(nvi):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += IA[r, c] * Sw[c, k]
            U[r, k] = s
    for k1 in range(nvi):
        for k2 in range(k1, nvi):
            s = 0.0
            for r in range(6):
                s += Sw[r, k1] * U[r, k2]
            D[k1, k2] = s
            D[k2, k1] = s
    return _invert_spd(D, nvi, data.joint_articulated_inertia_inverse[i], SC[SC_INNER_WORK])


@njit(cache=True, error_model="numpy", inline="always")
def _transmitted_entry(IA, U, Di, nvi, r, c):
    """Entry (r, c) of IA - U D^-1 U^T (``Di`` = D^-1, nvi x nvi): the articulated inertia
    transmitted across a multi-DoF joint."""
    s = IA[r, c]
    for k1 in range(nvi):
        t = 0.0
        for k2 in range(nvi):
            t += Di[k1, k2] * U[c, k2]
        s -= U[r, k1] * t
    return s


@leaf_kernel(error_model="numpy")
def _add_articulated_to_parent(model, i, data):
    """IA[parent] += IA - U D^-1 U^T (the part of IA transmitted across joint i)."""
    nvi = model.joint_nv[i]
    U = data.articulated_inertia_times_subspace[i]
    Di = data.joint_articulated_inertia_inverse[i]
    IA = data.articulated_inertia[i]
    IAp = data.articulated_inertia[model.parent[i]]
    if nvi == 1:
        d = Di[0, 0]
        for r in range(6):
            ur = U[r, 0] * d
            for c in range(6):
                IAp[r, c] += IA[r, c] - ur * U[c, 0]
        return
    for r in range(6):
        for c in range(6):
            IAp[r, c] += _transmitted_entry(IA, U, Di, nvi, r, c)


@njit(cache=True, error_model="numpy", inline="always")
def _joint_space_entry(u, U, Di, nvi, k1, x):
    """Entry k1 of D^-1 (u - U^T x) (``Di`` = D^-1, nvi x nvi; ``x`` a 6-vector)."""
    s = 0.0
    for k2 in range(nvi):
        t = u[k2]
        for r in range(6):
            t -= U[r, k2] * x[r]
        s += Di[k1, k2] * t
    return s


@leaf_kernel(error_model="numpy")
def aba(q, v, tau, fext, use_fext, ddq, model, data, SC):
    """Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1), world
    frame.

    ``fext`` (nb, 6) holds external wrenches per body in body frame. Returns a status code;
    SINGULAR if some joint's articulated inertia is not positive definite.
    """
    st = check_state(model, q, v, tau)
    if st != OK:
        return st
    if use_fext and not check_matrix(fext):
        return BAD_FEXT
    kinematics_into(model, q, data, SC)
    world_quantities(model, data, True)
    nb = model.parent.shape[0]
    velocity, velocity_product = data.velocity, data.velocity_product
    bias_force, net_joint_force = data.bias_force, data.net_joint_force
    motion_subspace, articulated_inertia = data.motion_subspace, data.articulated_inertia
    body_inertia = data.body_inertia
    vJ = SC[SC_KERNEL_WORK, 0]
    Iv = SC[SC_KERNEL_WORK, 1]
    for i in range(nb):
        par, iv, nvi = joint_indices(model, i)
        Sw = motion_subspace[i]
        c, pA = velocity_product[i], bias_force[i]
        joint_velocity(Sw, nvi, iv, v, vJ)
        for r in range(6):
            c[r] = 0.0
            pA[r] = 0.0
        vel = body_velocity(velocity, i, par, vJ)
        if par >= 0:
            add6(c, cross_motion(vel, vJ))
        _copy6(body_inertia[i], articulated_inertia[i])
        mat6_vec(body_inertia[i], vel, Iv)
        add6(pA, cross_force(vel, Iv))
        if use_fext:
            # body-frame wrench to the world origin: [R f; R n + p x R f]
            P = data.pose[i]
            fx, fy, fz = rotate(P, fext[i, 0], fext[i, 1], fext[i, 2])
            nx, ny, nz = rotate(P, fext[i, 3], fext[i, 4], fext[i, 5])
            px, py, pz = P[3, 0], P[3, 1], P[3, 2]
            pA[0] -= fx
            pA[1] -= fy
            pA[2] -= fz
            pA[3] -= nx + py * fz - pz * fy
            pA[4] -= ny + pz * fx - px * fz
            pA[5] -= nz + px * fy - py * fx
    pa = SC[SC_KERNEL_WORK, 2]
    for i in range(nb - 1, -1, -1):
        if not _backward_joint(model, i, data, SC):
            return SINGULAR
        par, iv, nvi = joint_indices(model, i)
        Sw = motion_subspace[i]
        pA, u = bias_force[i], net_joint_force[i]
        for k in range(nvi):
            s = tau[iv + k]
            for r in range(6):
                s -= Sw[r, k] * pA[r]
            u[k] = s
        if par >= 0:
            # pa = pA + Ia c + U D^-1 u with Ia = IA - U D^-1 U^T,
            # i.e. pA + IA c + U D^-1 (u - U^T c)
            U = data.articulated_inertia_times_subspace[i]
            Di = data.joint_articulated_inertia_inverse[i]
            c = velocity_product[i]
            mat6_vec(articulated_inertia[i], c, pa)
            for k1 in range(nvi):
                t = _joint_space_entry(u, U, Di, nvi, k1, c)
                for r in range(6):
                    pa[r] += U[r, k1] * t
            _add_articulated_to_parent(model, i, data)
            for r in range(6):
                bias_force[par, r] += pA[r] + pa[r]
    acceleration = data.acceleration
    ap = SC[SC_KERNEL_WORK, 3]
    for i in range(nb):
        par, iv, nvi = joint_indices(model, i)
        if par < 0:
            for r in range(3):
                ap[r] = -model.gravity[r]
                ap[r + 3] = 0.0
        else:
            for r in range(6):
                ap[r] = acceleration[par, r] + velocity_product[i, r]
        U = data.articulated_inertia_times_subspace[i]
        Di = data.joint_articulated_inertia_inverse[i]
        for k1 in range(nvi):
            ddq[iv + k1] = _joint_space_entry(net_joint_force[i], U, Di, nvi, k1, ap)
        Sw = motion_subspace[i]
        for r in range(6):
            s = ap[r]
            for k in range(nvi):
                s += Sw[r, k] * ddq[iv + k]
            acceleration[i, r] = s
    return OK


@leaf_kernel(error_model="numpy")
def _minv_articulate_1dof(model, i, data):
    """U = IA S, D and D^-1 of a 1-DoF joint and IA[parent] += IA - U D^-1 U^T, with the
    articulated inertias IA accumulated in ``data.body_inertia``, upper triangles only (see
    :func:`minverse`). False if D is not positive (a massless subtree)."""
    IA = data.body_inertia[i]
    S = data.motion_subspace[i]
    U = data.articulated_inertia_times_subspace[i]
    s0, s1, s2, s3, s4, s5 = S[0, 0], S[1, 0], S[2, 0], S[3, 0], S[4, 0], S[5, 0]
    for r in range(6):
        # row r of the symmetric IA read from its upper triangle
        u = (
            IA[min(r, 0), max(r, 0)] * s0
            + IA[min(r, 1), max(r, 1)] * s1
            + IA[min(r, 2), max(r, 2)] * s2
            + IA[min(r, 3), max(r, 3)] * s3
            + IA[min(r, 4), max(r, 4)] * s4
            + IA[min(r, 5), max(r, 5)] * s5
        )
        U[r, 0] = u
    D = U[0, 0] * s0 + U[1, 0] * s1 + U[2, 0] * s2 + U[3, 0] * s3 + U[4, 0] * s4 + U[5, 0] * s5
    if not D > 0.0:
        return False
    d = 1.0 / D
    data.joint_articulated_inertia[i, 0, 0] = D
    data.joint_articulated_inertia_inverse[i, 0, 0] = d
    par = model.parent[i]
    if par >= 0:
        IAp = data.body_inertia[par]
        for r in range(6):
            ur = U[r, 0] * d
            for c in range(r, 6):
                IAp[r, c] += IA[r, c] - ur * U[c, 0]
    return True


@leaf_kernel(error_model="numpy")
def _minv_articulate_ndof(model, i, data, SC):
    """:func:`_minv_articulate_1dof` for a multi-DoF joint (the free-flyer): IA completed from
    its upper triangle into ``data.articulated_inertia`` for :func:`_backward_joint`."""
    IA = data.body_inertia[i]
    IA1 = data.articulated_inertia[i]
    for r in range(6):
        for c in range(6):
            IA1[r, c] = IA[r, c] if r <= c else IA[c, r]
    if not _backward_joint(model, i, data, SC):
        return False
    par = model.parent[i]
    if par >= 0:
        nvi = model.joint_nv[i]
        U = data.articulated_inertia_times_subspace[i]
        Di = data.joint_articulated_inertia_inverse[i]
        IAp = data.body_inertia[par]
        for r in range(6):
            for c in range(r, 6):
                IAp[r, c] += _transmitted_entry(IA1, U, Di, nvi, r, c)
    return True


@njit(cache=True, error_model="numpy", inline="always")
def _articulated_1dof_joint(model, i, data):
    """What the passes of :func:`minverse` read of a 1-DoF joint after its articulation: (first
    v index, end of its subtree's v range, S, U = IA S, the scalar D^-1)."""
    return (model.v_index[i], model.subtree_end[i], data.motion_subspace[i],
            data.articulated_inertia_times_subspace[i],
            data.joint_articulated_inertia_inverse[i, 0, 0])


@leaf_kernel(error_model="numpy")
def _minv_backward_1dof(model, i, data, F, Minv):
    """Alg. 1 lines 9-13 for a 1-DoF joint, world frame (see :func:`minverse`)."""
    iv, end, S, U, d = _articulated_1dof_joint(model, i, data)
    s0, s1, s2, s3, s4, s5 = S[0, 0], S[1, 0], S[2, 0], S[3, 0], S[4, 0], S[5, 0]
    Minv[iv, iv] = d
    for j in range(iv + 1, end):
        Minv[iv, j] = -d * (
            s0 * F[0, j] + s1 * F[1, j] + s2 * F[2, j] + s3 * F[3, j] + s4 * F[4, j] + s5 * F[5, j]
        )
    if model.parent[i] >= 0:
        u0, u1, u2, u3, u4, u5 = U[0, 0], U[1, 0], U[2, 0], U[3, 0], U[4, 0], U[5, 0]
        F[0, iv] = u0 * d
        F[1, iv] = u1 * d
        F[2, iv] = u2 * d
        F[3, iv] = u3 * d
        F[4, iv] = u4 * d
        F[5, iv] = u5 * d
        for j in range(iv + 1, end):
            m = Minv[iv, j]
            F[0, j] += u0 * m
            F[1, j] += u1 * m
            F[2, j] += u2 * m
            F[3, j] += u3 * m
            F[4, j] += u4 * m
            F[5, j] += u5 * m


@leaf_kernel(error_model="numpy")
def _minv_backward_ndof(model, i, data, F, Minv, col):
    """Alg. 1 lines 9-13 for a multi-DoF joint (the free-flyer), world frame."""
    if model.joint_nv[i] == 6:
        # a literal DoF count: the 6-term loops get fixed bounds (unrolled), ~0.3 us faster
        _minv_backward_ndof_n(model, i, 6, data, F, Minv, col)
    else:
        _minv_backward_ndof_n(model, i, model.joint_nv[i], data, F, Minv, col)


@njit(cache=True, error_model="numpy", inline="always")
def _minv_backward_ndof_n(model, i, nvi, data, F, Minv, col):
    iv = model.v_index[i]
    end = model.subtree_end[i]
    Sw = data.motion_subspace[i]
    Di = data.joint_articulated_inertia_inverse[i]
    U = data.articulated_inertia_times_subspace[i]
    # Minv[i, subtree] = D^-1 (I - S^T F[:, subtree]); the joint's own columns of F are still zero
    for j in range(iv, end):
        for k in range(nvi):
            if j < iv + nvi:
                s = 1.0 if j == iv + k else 0.0
            else:
                s = 0.0
                for r in range(6):
                    s -= Sw[r, k] * F[r, j]
            col[k] = s
        for k1 in range(nvi):
            s = 0.0
            for k2 in range(nvi):
                s += Di[k1, k2] * col[k2]
            Minv[iv + k1, j] = s
    if model.parent[i] >= 0:
        # line 13 (world frame): F[:, subtree] += U Minv[i, subtree]
        for j in range(iv, end):
            for r in range(6):
                s = 0.0 if j < iv + nvi else F[r, j]
                for k in range(nvi):
                    s += U[r, k] * Minv[iv + k, j]
                F[r, j] = s


@leaf_kernel(error_model="numpy")
def _minv_forward_1dof(model, i, data, FP, Minv, nv):
    """Alg. 1 lines 21-26 for a 1-DoF joint with a parent, world frame."""
    iv, end, S, U, d = _articulated_1dof_joint(model, i, data)
    u0, u1, u2, u3, u4, u5 = U[0, 0], U[1, 0], U[2, 0], U[3, 0], U[4, 0], U[5, 0]
    s0, s1, s2, s3, s4, s5 = S[0, 0], S[1, 0], S[2, 0], S[3, 0], S[4, 0], S[5, 0]
    Pp = FP[model.parent[i]]
    Pi = FP[i]
    leaf = end == iv + 1  # nobody reads a leaf's motion set
    for j in range(iv, nv):
        p0, p1, p2, p3, p4, p5 = Pp[0, j], Pp[1, j], Pp[2, j], Pp[3, j], Pp[4, j], Pp[5, j]
        m = Minv[iv, j] if j < end else 0.0
        m -= d * (u0 * p0 + u1 * p1 + u2 * p2 + u3 * p3 + u4 * p4 + u5 * p5)
        Minv[iv, j] = m
        if not leaf:
            Pi[0, j] = p0 + s0 * m
            Pi[1, j] = p1 + s1 * m
            Pi[2, j] = p2 + s2 * m
            Pi[3, j] = p3 + s3 * m
            Pi[4, j] = p4 + s4 * m
            Pi[5, j] = p5 + s5 * m


@leaf_kernel(error_model="numpy")
def _minv_forward_ndof(model, i, data, FP, Minv, nv, col):
    """Alg. 1 lines 21-26 for a multi-DoF joint or a root joint, world frame."""
    if model.joint_nv[i] == 6:
        _minv_forward_ndof_n(model, i, 6, data, FP, Minv, nv, col)  # as in _minv_backward_ndof
    else:
        _minv_forward_ndof_n(model, i, model.joint_nv[i], data, FP, Minv, nv, col)


@njit(cache=True, error_model="numpy", inline="always")
def _minv_forward_ndof_n(model, i, nvi, data, FP, Minv, nv, col):
    iv = model.v_index[i]
    end = model.subtree_end[i]
    par = model.parent[i]
    Sw = data.motion_subspace[i]
    Pi = FP[i]
    if par >= 0:
        U = data.articulated_inertia_times_subspace[i]
        Di = data.joint_articulated_inertia_inverse[i]
        Pp = FP[par]
        for j in range(iv, nv):
            for k2 in range(nvi):
                t = 0.0
                for r in range(6):
                    t += U[r, k2] * Pp[r, j]
                col[k2] = t
            for k1 in range(nvi):
                s = Minv[iv + k1, j] if j < end else 0.0
                for k2 in range(nvi):
                    s -= Di[k1, k2] * col[k2]
                Minv[iv + k1, j] = s
            for r in range(6):
                s = Pp[r, j]
                for k in range(nvi):
                    s += Sw[r, k] * Minv[iv + k, j]
                Pi[r, j] = s
    else:
        for j in range(end, nv):
            for k in range(nvi):
                Minv[iv + k, j] = 0.0
        for j in range(iv, nv):
            for r in range(6):
                s = 0.0
                for k in range(nvi):
                    s += Sw[r, k] * Minv[iv + k, j]
                Pi[r, j] = s


@leaf_kernel(error_model="numpy")
def minverse(q, Minv, FP, model, data, SC):
    """Analytical inverse of the joint-space inertia matrix, never forming M (world frame).

    Carpentier, Algorithm 1: ABA without its affine terms, in three passes. In the
    world frame the force set F of Alg. 1 needs no transform (line 13 becomes F += U Minv[i, :])
    and can be one (6, nv) buffer ``FP[nb]``, since sibling subtrees own disjoint columns; the
    motion sets P_i (lines 22-26) live in ``FP[i]``. With a free-flyer root (a 6-DoF first joint,
    D^-1 a 6x6 block) this is the moving-base inverse mass matrix IMMAmb of Saccon et al., Table 9.
    """
    st = check_configuration(model, q)
    if st != OK:
        return st
    kinematics_into(model, q, data, SC)
    return _minverse_passes(Minv, FP, model, data, SC)


@njit(cache=True, error_model="numpy", inline="always")
def _minverse_passes(Minv, FP, model, data, SC):
    """:func:`minverse` after the world poses (``data.pose``): the three passes of Alg. 1."""
    world_quantities(model, data, True)
    nb = model.parent.shape[0]
    nv = Minv.shape[0]
    F = FP[nb]
    col = SC[SC_KERNEL_WORK, 0]
    # the articulated inertias are accumulated in place of the body inertias (data.body_inertia,
    # which nothing reads after this kernel), upper triangles only: no 6x6 copy per body, and
    # 21 instead of 36 updates per joint
    for i in range(nb - 1, -1, -1):
        if model.joint_nv[i] == 1:
            if not _minv_articulate_1dof(model, i, data):
                return SINGULAR
            _minv_backward_1dof(model, i, data, F, Minv)
        else:
            if not _minv_articulate_ndof(model, i, data, SC):
                return SINGULAR
            _minv_backward_ndof(model, i, data, F, Minv, col)
    # Alg. 1 lines 19-28: contributions of the supports, P_i = S Minv[i, i:] + P_parent. Entries
    # of row i beyond i's subtree were not touched by the backward pass: they start from zero.
    for i in range(nb):
        if model.joint_nv[i] == 1 and model.parent[i] >= 0:
            _minv_forward_1dof(model, i, data, FP, Minv, nv)
        else:
            _minv_forward_ndof(model, i, data, FP, Minv, nv, col)
    for r in range(nv):
        for c in range(r):
            Minv[r, c] = Minv[c, r]
    return OK


# ----------------------------------------------------------------------------- entry points
# Thin wrappers over the per-array kernels taking the packed workspace, so that a call from
# Python passes few arguments (numba's dispatcher costs ~50 ns per array argument).


@njit(cache=True, error_model="numpy", inline="always")
def _neg_cross(a0, a1, a2, p0, p1, p2):
    """-(a x p), as motion_transform writes a row of -R^T [p]x (a: a column of R)."""
    return -(a1 * p2 - a2 * p1), -(a2 * p0 - a0 * p2), -(a0 * p1 - a1 * p0)


@njit(cache=True, error_model="numpy", inline="always")
def _xup_motion(X, m, out, add):
    """``out (+)= Xup m`` with only Xup's rows 0-2 stored: rows 3-5 are [0, R^T] and R^T is
    the upper-left block. The terms and their order are apply_motion's (its zero block
    skipped), so the results are the same to the bit."""
    for r in range(3):
        lin = row6_dot(X, r, m)
        ang = X[r, 0] * m[3] + X[r, 1] * m[4] + X[r, 2] * m[5]
        if add:
            out[r] += lin
            out[r + 3] += ang
        else:
            out[r] = lin
            out[r + 3] = ang


@njit(cache=True, error_model="numpy", inline="always")
def _inertia_vec(I, x, out):
    """``out = I x`` for a body inertia [[m 1, -[h]x], [[h]x, Ibar]] (the loader's layout):
    mat6_vec's sums without the 12 terms that multiply its structural zeros."""
    out[0] = I[0, 0] * x[0] + I[0, 4] * x[4] + I[0, 5] * x[5]
    out[1] = I[1, 1] * x[1] + I[1, 3] * x[3] + I[1, 5] * x[5]
    out[2] = I[2, 2] * x[2] + I[2, 3] * x[3] + I[2, 4] * x[4]
    out[3] = I[3, 1] * x[1] + I[3, 2] * x[2] + I[3, 3] * x[3] + I[3, 4] * x[4] + I[3, 5] * x[5]
    out[4] = I[4, 0] * x[0] + I[4, 2] * x[2] + I[4, 3] * x[3] + I[4, 4] * x[4] + I[4, 5] * x[5]
    out[5] = I[5, 0] * x[0] + I[5, 1] * x[1] + I[5, 3] * x[3] + I[5, 4] * x[4] + I[5, 5] * x[5]


@njit(cache=True, error_model="numpy", inline="always")
def _store_xup(X, R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2):
    """Rows 0-2 of Xup = [[R^T, -R^T [p]x], [0, R^T]] (motion_transform's arithmetic) of the
    local pose (R row-major, p) into ``X``: the lower rows repeat R^T (see _xup_motion)."""
    X[0, 0], X[0, 1], X[0, 2] = R00, R10, R20
    X[1, 0], X[1, 1], X[1, 2] = R01, R11, R21
    X[2, 0], X[2, 1], X[2, 2] = R02, R12, R22
    X[0, 3], X[0, 4], X[0, 5] = _neg_cross(R00, R10, R20, p0, p1, p2)
    X[1, 3], X[1, 4], X[1, 5] = _neg_cross(R01, R11, R21, p0, p1, p2)
    X[2, 3], X[2, 4], X[2, 5] = _neg_cross(R02, R12, R22, p0, p1, p2)


@leaf_kernel(error_model="numpy")
def rnea(q, v, a, fext, use_fext, use_gravity, tau, model, data, SC):
    """Recursive Newton-Euler inverse dynamics in body frames (Featherstone 2008, Table 5.1).

    tau = M(q) a + C(q, v) v + g(q) - sum J^T f_ext, with ``fext`` (nb, 6) body-frame wrenches.
    For a free-flyer root the first six entries of ``tau`` are the base wrench in the base frame:
    the extended inverse dynamics of a moving-base robot (Saccon et al., Table 4). Per-call
    arguments come first so that the Python side can append the model's constant tuple.
    """
    st = check_state(model, q, v, a)
    if st != OK:
        return st
    if use_fext and not check_matrix(fext):
        return BAD_FEXT
    xup = data.xup
    for i in range(model.parent.shape[0]):
        R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2 = _local_pose(model, q, i)
        _store_xup(xup[i], R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2)
    return _rnea_passes(v, a, fext, use_fext, use_gravity, tau, model, data, SC)


@njit(cache=True, error_model="numpy", inline="always")
def _rnea_passes(v, a, fext, use_fext, use_gravity, tau, model, data, SC):
    """:func:`rnea`'s forward and backward passes after the transforms ``data.xup``."""
    nb = model.parent.shape[0]
    vJ = SC[SC_FORWARD_PASS, 0]
    Iv = SC[SC_FORWARD_PASS, 1]
    g6 = SC[SC_FORWARD_PASS, 2]
    for r in range(3):
        g6[r] = -model.gravity[r] if use_gravity else 0.0
        g6[r + 3] = 0.0
    xup, velocity, acceleration, force = data.xup, data.velocity, data.acceleration, data.force
    for i in range(nb):
        X = xup[i]
        par, iv, nvi = joint_indices(model, i)
        S = model.motion_subspace[i]
        vel = velocity[i]
        acc = acceleration[i]
        joint_motion(S, nvi, iv, v, a, vJ, acc)
        if par < 0:
            for r in range(6):
                vel[r] = vJ[r]
            # the world "accelerates" upwards: a_0 = -g, so gravity enters through the tree
            _xup_motion(X, g6, acc, True)
        else:
            _xup_motion(X, velocity[par], vel, False)
            for r in range(6):
                vel[r] += vJ[r]
            _xup_motion(X, acceleration[par], acc, True)
            add6(acc, cross_motion(vel, vJ))
        frc = force[i]
        _inertia_vec(model.spatial_inertia[i], acc, frc)
        _inertia_vec(model.spatial_inertia[i], vel, Iv)
        add6(frc, cross_force(vel, Iv))
        if use_fext:
            for r in range(6):
                frc[r] -= fext[i, r]
    for i in range(nb - 1, -1, -1):
        iv = model.v_index[i]
        S = model.motion_subspace[i]
        frc = force[i]
        for k in range(model.joint_nv[i]):
            s = 0.0
            for r in range(6):
                s += S[r, k] * frc[r]
            tau[iv + k] = s
        par = model.parent[i]
        if par >= 0:
            # Xup^T f with Xup's lower rows read from its upper ones (R^T)
            X = xup[i]
            out = force[par]
            for c in range(3):
                out[c] += X[0, c] * frc[0] + X[1, c] * frc[1] + X[2, c] * frc[2]
            for c in range(3):
                out[c + 3] += (
                    X[0, c + 3] * frc[0]
                    + X[1, c + 3] * frc[1]
                    + X[2, c + 3] * frc[2]
                    + X[0, c] * frc[3]
                    + X[1, c] * frc[4]
                    + X[2, c] * frc[5]
                )
    return OK


@leaf_kernel(error_model="numpy")
def dynamics_terms(q, v, a, fext, use_fext, use_gravity, Minv, FP, tau, model, data, SC):
    """:func:`minverse` into ``Minv`` and :func:`rnea` into ``tau`` after ONE kinematics pass
    (:func:`placements_into`): the same passes and arithmetic as the two kernels called one
    after the other (results equal to the bit), each body's local pose evaluated once instead
    of twice. Statuses and their order are theirs (``minverse``'s, then ``rnea``'s); the world
    poses ``data.pose`` stay valid for the caller (the contact candidates read them).

    q (nq,), v and a (nv,) in the model's order [m, rad; m/s, rad/s; m/s^2, rad/s^2]; ``fext``
    (nb, 6) body-frame wrenches [N, N m], read if ``use_fext``; outputs ``Minv`` (nv, nv) and
    ``tau`` (nv,) [N, N m] (for a free-flyer root its first six entries the base wrench in the
    base frame); ``FP`` (nb + 1, 6, nv) :func:`minverse`'s scratch. Returns OK or a status.
    """
    st = check_configuration(model, q)
    if st != OK:
        return st
    placements_into(model, q, data)
    st = _minverse_passes(Minv, FP, model, data, SC)
    if st != OK:
        return st
    st = check_state(model, q, v, a)
    if st != OK:
        return st
    if use_fext and not check_matrix(fext):
        return BAD_FEXT
    return _rnea_passes(v, a, fext, use_fext, use_gravity, tau, model, data, SC)


@njit(cache=True, error_model="numpy", inline="always")
def _is_ancestor(model, i, ivb):
    """Whether body ``i`` (numbered before the body whose first v index is ``ivb``) is that
    body or one of its ancestors: in depth-first order they are the bodies before it whose
    subtree's v range holds ``ivb``, each one's parent the ancestor met before it."""
    return model.v_index[i] <= ivb < model.subtree_end[i]


@njit(cache=True, error_model="numpy", inline="always")
def _child_pose(model, q, i, R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2):
    """World pose of body ``i`` from its parent's (``R`` row-major, ``p``), as 12 scalars in
    the same order: the running pose of the ancestor walks of :func:`frame_jacobian` and
    :func:`frame_placement`, held in registers (inlined: no workspace, the same arithmetic
    in both)."""
    L00, L01, L02, L10, L11, L12, L20, L21, L22, l0, l1, l2 = _local_pose(model, q, i)
    return (
        R00 * L00 + R01 * L10 + R02 * L20,
        R00 * L01 + R01 * L11 + R02 * L21,
        R00 * L02 + R01 * L12 + R02 * L22,
        R10 * L00 + R11 * L10 + R12 * L20,
        R10 * L01 + R11 * L11 + R12 * L21,
        R10 * L02 + R11 * L12 + R12 * L22,
        R20 * L00 + R21 * L10 + R22 * L20,
        R20 * L01 + R21 * L11 + R22 * L21,
        R20 * L02 + R21 * L12 + R22 * L22,
        p0 + R00 * l0 + R01 * l1 + R02 * l2,
        p1 + R10 * l0 + R11 * l1 + R12 * l2,
        p2 + R20 * l0 + R21 * l1 + R22 * l2,
    )


@njit(cache=True, error_model="numpy", inline="always")
def _rotation_column(J, c, a0, a1, a2, p0, p1, p2):
    """Column c of a world-origin Jacobian for a unit rotation about the axis a through the
    point p: [p x a; a]."""
    J[0, c] = p1 * a2 - p2 * a1
    J[1, c] = p2 * a0 - p0 * a2
    J[2, c] = p0 * a1 - p1 * a0
    J[3, c] = a0
    J[4, c] = a1
    J[5, c] = a2


@leaf_kernel(error_model="numpy")
def frame_jacobian(q, body, F, local, J, model):
    """Jacobian (6 x nv, rows [linear; angular]) of the frame ``F`` of ``body``.

    ``F`` (4, 3): rows 0-2 the frame's rotation ``Rf`` in the body, row 3 its origin ``r``
    (body frame, m), in one array because each array argument costs ~40 ns to unbox. ``q`` may
    be strided (the caller then need not check its contiguity, ~0.1 us in Python). Velocities
    in world-aligned axes (Pinocchio LOCAL_WORLD_ALIGNED), or with ``local`` in the frame's axes
    (Pinocchio LOCAL). Only the
    ancestors of ``body`` are posed, root to body, with the running world pose in registers:
    a joint column is first its twist at the world origin, [p_j x a; a] (the point is not known
    yet), and gets a x P once the point's world position P is.
    """
    st = check_configuration(model, q)
    if st != OK:
        return st
    r = F[3]
    Rf = F[0:3]
    nv = J.shape[1]
    for a in range(6):
        for c in range(nv):
            J[a, c] = 0.0
    if body < 0:
        return OK
    ivb = model.v_index[body]
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    p0, p1, p2 = 0.0, 0.0, 0.0
    for i in range(body + 1):
        if not _is_ancestor(model, i, ivb):
            continue
        R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2 = _child_pose(
            model, q, i, R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2
        )
        iv = model.v_index[i]
        jt = model.joint_type[i]
        if jt == FREE_FLYER:
            # base twist in base axes: linear k moves the point along R e_k, angular k turns
            # it about R e_k through the base origin
            J[0, iv], J[1, iv], J[2, iv] = R00, R10, R20
            J[0, iv + 1], J[1, iv + 1], J[2, iv + 1] = R01, R11, R21
            J[0, iv + 2], J[1, iv + 2], J[2, iv + 2] = R02, R12, R22
            for k in range(3):
                if k == 0:
                    a0, a1, a2 = R00, R10, R20
                elif k == 1:
                    a0, a1, a2 = R01, R11, R21
                else:
                    a0, a1, a2 = R02, R12, R22
                _rotation_column(J, iv + 3 + k, a0, a1, a2, p0, p1, p2)
        else:
            ax = model.joint_axis[i]
            a0 = R00 * ax[0] + R01 * ax[1] + R02 * ax[2]
            a1 = R10 * ax[0] + R11 * ax[1] + R12 * ax[2]
            a2 = R20 * ax[0] + R21 * ax[1] + R22 * ax[2]
            if jt == REVOLUTE:
                _rotation_column(J, iv, a0, a1, a2, p0, p1, p2)
            else:
                J[0, iv] = a0
                J[1, iv] = a1
                J[2, iv] = a2
    P0 = p0 + R00 * r[0] + R01 * r[1] + R02 * r[2]
    P1 = p1 + R10 * r[0] + R11 * r[1] + R12 * r[2]
    P2 = p2 + R20 * r[0] + R21 * r[1] + R22 * r[2]
    j = body
    while j >= 0:
        iv = model.v_index[j]
        for c in range(iv, iv + model.joint_nv[j]):
            w0, w1, w2 = J[3, c], J[4, c], J[5, c]
            J[0, c] += w1 * P2 - w2 * P1
            J[1, c] += w2 * P0 - w0 * P2
            J[2, c] += w0 * P1 - w1 * P0
        j = model.parent[j]
    if local:
        # express in the frame's axes: multiply by (R Rf)^T
        F00 = R00 * Rf[0, 0] + R01 * Rf[1, 0] + R02 * Rf[2, 0]
        F01 = R00 * Rf[0, 1] + R01 * Rf[1, 1] + R02 * Rf[2, 1]
        F02 = R00 * Rf[0, 2] + R01 * Rf[1, 2] + R02 * Rf[2, 2]
        F10 = R10 * Rf[0, 0] + R11 * Rf[1, 0] + R12 * Rf[2, 0]
        F11 = R10 * Rf[0, 1] + R11 * Rf[1, 1] + R12 * Rf[2, 1]
        F12 = R10 * Rf[0, 2] + R11 * Rf[1, 2] + R12 * Rf[2, 2]
        F20 = R20 * Rf[0, 0] + R21 * Rf[1, 0] + R22 * Rf[2, 0]
        F21 = R20 * Rf[0, 1] + R21 * Rf[1, 1] + R22 * Rf[2, 1]
        F22 = R20 * Rf[0, 2] + R21 * Rf[1, 2] + R22 * Rf[2, 2]
        j = body
        while j >= 0:
            iv = model.v_index[j]
            for c in range(iv, iv + model.joint_nv[j]):
                for blk in range(0, 6, 3):
                    b0, b1, b2 = J[blk, c], J[blk + 1, c], J[blk + 2, c]
                    J[blk, c] = F00 * b0 + F10 * b1 + F20 * b2
                    J[blk + 1, c] = F01 * b0 + F11 * b1 + F21 * b2
                    J[blk + 2, c] = F02 * b0 + F12 * b1 + F22 * b2
            j = model.parent[j]
    return OK


@leaf_kernel(error_model="numpy")
def frame_placement(q, body, F, T, model):
    """4x4 homogeneous world placement of the frame ``F`` of ``body`` into T (m); ``F`` and
    ``q`` as in :func:`frame_jacobian`, which also says why only the ancestors of ``body`` are
    posed."""
    st = check_configuration(model, q)
    if st != OK:
        return st
    r = F[3]
    Rf = F[0:3]
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    p0, p1, p2 = 0.0, 0.0, 0.0
    if body >= 0:
        ivb = model.v_index[body]
        for i in range(body + 1):
            if _is_ancestor(model, i, ivb):
                R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2 = _child_pose(
                    model, q, i, R00, R01, R02, R10, R11, R12, R20, R21, R22, p0, p1, p2
                )
    for b in range(3):
        T[0, b] = R00 * Rf[0, b] + R01 * Rf[1, b] + R02 * Rf[2, b]
        T[1, b] = R10 * Rf[0, b] + R11 * Rf[1, b] + R12 * Rf[2, b]
        T[2, b] = R20 * Rf[0, b] + R21 * Rf[1, b] + R22 * Rf[2, b]
    T[0, 3] = p0 + R00 * r[0] + R01 * r[1] + R02 * r[2]
    T[1, 3] = p1 + R10 * r[0] + R11 * r[1] + R12 * r[2]
    T[2, 3] = p2 + R20 * r[0] + R21 * r[1] + R22 * r[2]
    T[3, 0] = 0.0
    T[3, 1] = 0.0
    T[3, 2] = 0.0
    T[3, 3] = 1.0
    return OK


@njit(cache=True, error_model="numpy", inline="always")
def _point_kinematics_views(data, SC):
    """The workspace views the point kinematics of :mod:`.kinematics` work in: (Xup, world
    rotations, world positions, the (2, 3, 3) rotation scratch, body velocities, body
    velocity-product accelerations, a 6-vector)."""
    return (
        data.xup,
        data.pose[:, 0:3],
        data.pose[:, 3],
        SC[SC_ROTATIONS : SC_ROTATIONS + 2, 0:3, 0:3],
        data.velocity,
        data.acceleration,
        SC[SC_FORWARD_PASS, 0],
    )


@leaf_kernel(error_model="numpy")
def point_bias(model, q, v, body, r, Rf, local, data, SC, out):
    """J̇v of a point; see :func:`kinematics.point_bias`."""
    Xup, Rw, pw, Rtmp, vel, acc, vJ = _point_kinematics_views(data, SC)
    return _point_bias(model, q, v, body, r, Rf, local, Xup, Rw, pw, Rtmp, vel, acc, vJ,
                       out)


@leaf_kernel(error_model="numpy")
def points_kinematics(model, q, v, bodies, rs, data, SC, J6, positions, J_lin, bias_lin):
    """Batched contact-point kinematics; see :func:`kinematics.points_kinematics`."""
    Xup, Rw, pw, Rtmp, vel, acc, vJ = _point_kinematics_views(data, SC)
    return _points_kinematics(model, q, v, bodies, rs, Xup, Rw, pw, Rtmp, vel, acc, vJ,
                              SC[SC_FORWARD_PASS, 3, 0:3], J6, positions, J_lin, bias_lin)
