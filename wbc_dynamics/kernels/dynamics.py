"""The robot model the compiled kernels read, input checks and forward kinematics.

The model is one :class:`ModelArrays` (built once by :func:`wbc_dynamics.urdf_loader.load_model`),
passed to the kernels as its :class:`ModelRecord` (:func:`model_record`): one pointer per call,
each field read by name (``model.parent[i]``, ``model.mass[i]``), as Pinocchio's ``Model`` or
MuJoCo's ``mjModel``. Bodies are in depth-first pre-order, so a subtree is a contiguous range of
bodies and of v. Shapes and units are documented once, on the fields of :class:`ModelArrays`.

The algorithms themselves are in :mod:`.world`. Every top-level kernel returns an int
status: 0 = fine, otherwise the code of the first bad
argument (see :data:`STATUS_MESSAGES` in :mod:`wbc_dynamics.model`), checked inside the compiled
code so input validation costs next to nothing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref

from .leaf import leaf_kernel
from .records import RecordType, define_record, register_leaf_readable
from .spatial import (
    motion_transform,
    rotation_about_axis,
    rotation_from_quaternion,
)

REVOLUTE = 0
PRISMATIC = 1
FREE_FLYER = 2



class ModelArrays(NamedTuple):
    """The kinematic tree and inertias of a robot, one array per quantity, indexed by body
    (``nb`` bodies, depth-first pre-order; fixed children already merged into their parent).
    Frames: "body" is the body's own frame (its joint's child frame), "parent" its parent
    body's frame, "world" the world frame. Read-only by contract: shared by every copy of a
    :class:`~wbc_dynamics.model.RobotModel`.
    """

    #: (nb,) int64: parent body index, -1 for a body attached to the world
    parent: np.ndarray
    #: (nb,) int64: joint type, ``REVOLUTE``, ``PRISMATIC`` or ``FREE_FLYER``
    joint_type: np.ndarray
    #: (nb,) int64: first index of the joint's coordinates in q
    q_index: np.ndarray
    #: (nb,) int64: first index of the joint's velocities in v
    v_index: np.ndarray
    #: (nb,) int64: number of velocity DoFs of the joint (1, or 6 for a free flyer)
    joint_nv: np.ndarray
    #: (nb,) int64: end (exclusive) of the v range of the body's subtree
    subtree_end: np.ndarray
    #: (nb, 3, 3) float64: rotation of the joint frame at q = 0 in the parent frame
    joint_rotation: np.ndarray
    #: (nb, 3) float64 [m]: origin of the joint frame in the parent frame
    joint_translation: np.ndarray
    #: (nb, 3) float64: unit joint axis in the joint (= body) frame
    joint_axis: np.ndarray
    #: (nb,) float64 [kg]: body mass
    mass: np.ndarray
    #: (nb, 3) float64 [kg m]: first moment m c (c the centre of mass), body frame
    first_moment: np.ndarray
    #: (nb, 3, 3) float64 [kg m^2]: rotational inertia about the body origin, body axes
    rotational_inertia: np.ndarray
    #: (nb, 6, 6) float64: joint motion subspace S, body frame, rows [linear; angular]
    #: (first ``joint_nv`` columns used)
    motion_subspace: np.ndarray
    #: (nb, 6, 6) float64: spatial inertia about the body origin, body frame, [linear; angular]
    spatial_inertia: np.ndarray
    #: (3,) float64 [m/s^2]: gravity acceleration, world frame (written in place only)
    gravity: np.ndarray


@register_leaf_readable
class ModelRecordType(RecordType):
    """numba type of :class:`ModelRecord`."""


class ModelRecord(structref.StructRefProxy):
    """The :class:`~wbc_dynamics.kernels.dynamics.ModelArrays` as one pointer (same arrays, no
    copy; see ``wbc_dynamics.kernels.records``): what every kernel takes as ``model``. Build it
    with :func:`~wbc_dynamics.kernels.dynamics.model_record`."""


define_record(ModelRecord, ModelRecordType, ModelArrays)


@njit(cache=True)
def model_record(m):
    """The :class:`~wbc_dynamics.kernels.dynamics.ModelRecord` of the
    :class:`~wbc_dynamics.kernels.dynamics.ModelArrays` ``m`` (compiled, cached)."""
    return ModelRecord(*m)


OK = 0
BAD_Q = 1
BAD_V = 2
BAD_A = 3  # the third vector argument (a or tau)
BAD_QUATERNION = 4
BAD_FEXT = 5
SINGULAR = 6

QUATERNION_TOLERANCE = 1e-6


@leaf_kernel(error_model="numpy")
def check_vector(x):
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True


@leaf_kernel(error_model="numpy")
def check_matrix(x):
    """All entries of the 2-D ``x`` finite."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not np.isfinite(x[i, k]):
                return False
    return True


@leaf_kernel(error_model="numpy")
def check_configuration(model, q):
    """BAD_Q for a non-finite entry, BAD_QUATERNION for a non-unit free-flyer quaternion."""
    if not check_vector(q):
        return BAD_Q
    if model.parent.shape[0] > 0 and model.joint_type[0] == FREE_FLYER:
        i = model.q_index[0]
        n2 = q[i + 3] ** 2 + q[i + 4] ** 2 + q[i + 5] ** 2 + q[i + 6] ** 2
        if abs(np.sqrt(n2) - 1.0) > QUATERNION_TOLERANCE:
            return BAD_QUATERNION
    return OK


@njit(cache=True, error_model="numpy", inline="always")
def check_state(model, q, v, a):
    """:func:`check_configuration`'s status, else BAD_V / BAD_A for a non-finite entry of
    ``v`` / of the third vector ``a`` (an acceleration or a torque), else OK."""
    st = check_configuration(model, q)
    if st != OK:
        return st
    if not check_vector(v):
        return BAD_V
    if not check_vector(a):
        return BAD_A
    return OK


@njit(cache=True, error_model="numpy", inline="always")
def joint_velocity(S, nvi, iv, v, vJ):
    """``vJ = S v[iv:iv+nvi]`` (a 6-vector): a joint's velocity (``S``: its motion subspace,
    first ``nvi`` columns), each entry summed over k = 0, 1, ..."""
    for r in range(6):
        s = 0.0
        for k in range(nvi):
            s += S[r, k] * v[iv + k]
        vJ[r] = s


@njit(cache=True, error_model="numpy", inline="always")
def joint_motion(S, nvi, iv, v, a, vJ, aJ):
    """``vJ = S v[iv:iv+nvi]`` and ``aJ = S a[iv:iv+nvi]`` (6-vectors): a joint's velocity and
    the part S qdd of its acceleration (``S``: its motion subspace, first ``nvi`` columns); both
    products in one pass over ``S`` (each entry summed as :func:`joint_velocity` sums it)."""
    for r in range(6):
        s_v = 0.0
        s_a = 0.0
        for k in range(nvi):
            s_v += S[r, k] * v[iv + k]
            s_a += S[r, k] * a[iv + k]
        vJ[r] = s_v
        aJ[r] = s_a


@njit(cache=True, error_model="numpy", inline="always")
def _pose_in_parent(model, q, i, Rj, Rl):
    """Rotation (into Rl) and translation (returned) of body i in its parent's frame."""
    jt = model.joint_type[i]
    iq = model.q_index[i]
    if jt == FREE_FLYER:
        rotation_from_quaternion(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], Rl)
        return q[iq], q[iq + 1], q[iq + 2]
    R = model.joint_rotation[i]
    p = model.joint_translation[i]
    ax = model.joint_axis[i]
    if jt == REVOLUTE:
        rotation_about_axis(ax, q[iq], Rj)
        for r in range(3):
            for c in range(3):
                Rl[r, c] = R[r, 0] * Rj[0, c] + R[r, 1] * Rj[1, c] + R[r, 2] * Rj[2, c]
        return p[0], p[1], p[2]
    # prismatic: translate along the axis expressed in the joint frame
    d = q[iq]
    for r in range(3):
        for c in range(3):
            Rl[r, c] = R[r, c]
    ax0 = ax[0] * d
    ax1 = ax[1] * d
    ax2 = ax[2] * d
    return (
        p[0] + R[0, 0] * ax0 + R[0, 1] * ax1 + R[0, 2] * ax2,
        p[1] + R[1, 0] * ax0 + R[1, 1] * ax1 + R[1, 2] * ax2,
        p[2] + R[2, 0] * ax0 + R[2, 1] * ax1 + R[2, 2] * ax2,
    )


@njit(cache=True, error_model="numpy", inline="always")
def _compose_world(model, i, Rl, pl0, pl1, pl2, Rw, pw):
    par = model.parent[i]
    if par < 0:
        for r in range(3):
            for c in range(3):
                Rw[i, r, c] = Rl[r, c]
        pw[i, 0] = pl0
        pw[i, 1] = pl1
        pw[i, 2] = pl2
    else:
        Rp = Rw[par]
        for r in range(3):
            for c in range(3):
                Rw[i, r, c] = Rp[r, 0] * Rl[0, c] + Rp[r, 1] * Rl[1, c] + Rp[r, 2] * Rl[2, c]
            pw[i, r] = pw[par, r] + Rp[r, 0] * pl0 + Rp[r, 1] * pl1 + Rp[r, 2] * pl2


@leaf_kernel(error_model="numpy")
def forward_kinematics(model, q, Xup, Rw, pw, Rtmp):
    """Poses of every body: ``Xup`` (parent-to-body motion transforms) and world poses (Rw, pw).

    ``Rtmp`` is (2, 3, 3) scratch. World pose of body i: x_world = Rw[i] x_body + pw[i].
    """
    Rj = Rtmp[0]
    Rl = Rtmp[1]
    for i in range(model.parent.shape[0]):
        pl0, pl1, pl2 = _pose_in_parent(model, q, i, Rj, Rl)
        pvec = Rj[0]  # scratch row for p (Rj is no longer needed)
        pvec[0] = pl0
        pvec[1] = pl1
        pvec[2] = pl2
        motion_transform(Rl, pvec, Xup[i])
        _compose_world(model, i, Rl, pl0, pl1, pl2, Rw, pw)


@njit(cache=True, error_model="numpy", inline="always")
def _invert_spd(D, n, Dinv, work):
    """Inverse of the leading n x n block of a symmetric positive-definite D (n <= 6) via Cholesky.

    Returns False if D is not positive definite (a massless subtree).
    """
    if n == 1:
        if not D[0, 0] > 0.0:
            return False
        Dinv[0, 0] = 1.0 / D[0, 0]
        return True
    L = work
    # L's diagonal holds reciprocals: 6 divisions instead of one per substitution step
    for r in range(n):
        for c in range(r + 1):
            s = D[r, c]
            for k in range(c):
                s -= L[r, k] * L[c, k]
            if r == c:
                if not s > 0.0:
                    return False
                L[r, r] = 1.0 / np.sqrt(s)
            else:
                L[r, c] = s * L[c, c]
    # Dinv = L^-T L^-1, column by column: forward substitution into Dinv[:, col], then back
    # substitution in place (entry r is final before rows above it need it)
    for col in range(n):
        for r in range(n):
            s = 1.0 if r == col else 0.0
            for k in range(r):
                s -= L[r, k] * Dinv[k, col]
            Dinv[r, col] = s * L[r, r]
        for r in range(n - 1, -1, -1):
            s = Dinv[r, col]
            for k in range(r + 1, n):
                s -= L[k, r] * Dinv[k, col]
            Dinv[r, col] = s * L[r, r]
    return True
