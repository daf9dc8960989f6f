"""The flat model layout, input checks and forward kinematics shared by all compiled kernels.

Model arrays (built once by :func:`wbc_dynamics.urdf_loader.load_model`):

``topo`` (nb, 6) int64
    per body: parent index (-1 = world), joint type, first index in q, first index in v,
    number of velocity DoFs of its joint, end (exclusive) of its subtree's v range.
    Bodies are in depth-first pre-order, so a subtree is a contiguous range of bodies and of v.
``tree`` (nb, 28) float64
    per body: joint placement in the parent body frame (R row-major (9), p (3)), the joint
    axis (3), then mass (1), first moment m c (3) and rotational inertia about the body
    origin (9, row-major), all in body axes.
``Sm`` (nb, 6, 6) float64
    joint motion subspace in body axes (first ``nvi`` columns used).
``I6`` (nb, 6, 6) float64
    spatial inertia about the body origin in body axes (fixed children already merged).

The algorithms themselves are in :mod:`.world`. Every top-level kernel returns an int
status: 0 = fine, otherwise the code of the first bad
argument (see :data:`STATUS_MESSAGES` in :mod:`wbc_dynamics.model`), checked inside the compiled
code so input validation costs next to nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .leaf import leaf_kernel
from .spatial import (
    motion_transform,
    rotation_about_axis,
    rotation_from_quaternion,
)

REVOLUTE = 0
PRISMATIC = 1
FREE_FLYER = 2

PARENT, JTYPE, IQ, IV, NVI, SUBTREE_END = 0, 1, 2, 3, 4, 5

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
def check_configuration(topo, q):
    """BAD_Q for a non-finite entry, BAD_QUATERNION for a non-unit free-flyer quaternion."""
    if not check_vector(q):
        return BAD_Q
    if topo.shape[0] > 0 and topo[0, JTYPE] == FREE_FLYER:
        i = topo[0, IQ]
        n2 = q[i + 3] ** 2 + q[i + 4] ** 2 + q[i + 5] ** 2 + q[i + 6] ** 2
        if abs(np.sqrt(n2) - 1.0) > QUATERNION_TOLERANCE:
            return BAD_QUATERNION
    return OK


@njit(cache=True, error_model="numpy", inline="always")
def check_state(topo, q, v, a):
    """:func:`check_configuration`'s status, else BAD_V / BAD_A for a non-finite entry of
    ``v`` / of the third vector ``a`` (an acceleration or a torque), else OK."""
    st = check_configuration(topo, q)
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
def _pose_in_parent(topo, tree, q, i, Rj, Rl):
    """Rotation (into Rl) and translation (returned) of body i in its parent's frame."""
    jt = topo[i, JTYPE]
    iq = topo[i, IQ]
    t = tree[i]
    if jt == FREE_FLYER:
        rotation_from_quaternion(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], Rl)
        return q[iq], q[iq + 1], q[iq + 2]
    if jt == REVOLUTE:
        rotation_about_axis(t[12:15], q[iq], Rj)
        for r in range(3):
            for c in range(3):
                Rl[r, c] = t[3 * r] * Rj[0, c] + t[3 * r + 1] * Rj[1, c] + t[3 * r + 2] * Rj[2, c]
        return t[9], t[10], t[11]
    # prismatic: translate along the axis expressed in the joint frame
    d = q[iq]
    for r in range(3):
        for c in range(3):
            Rl[r, c] = t[3 * r + c]
    ax0 = t[12] * d
    ax1 = t[13] * d
    ax2 = t[14] * d
    return (
        t[9] + t[0] * ax0 + t[1] * ax1 + t[2] * ax2,
        t[10] + t[3] * ax0 + t[4] * ax1 + t[5] * ax2,
        t[11] + t[6] * ax0 + t[7] * ax1 + t[8] * ax2,
    )


@njit(cache=True, error_model="numpy", inline="always")
def _compose_world(topo, i, Rl, pl0, pl1, pl2, Rw, pw):
    par = topo[i, PARENT]
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
def forward_kinematics(topo, tree, q, Xup, Rw, pw, Rtmp):
    """Poses of every body: ``Xup`` (parent-to-body motion transforms) and world poses (Rw, pw).

    ``Rtmp`` is (2, 3, 3) scratch. World pose of body i: x_world = Rw[i] x_body + pw[i].
    """
    Rj = Rtmp[0]
    Rl = Rtmp[1]
    for i in range(topo.shape[0]):
        pl0, pl1, pl2 = _pose_in_parent(topo, tree, q, i, Rj, Rl)
        pvec = Rj[0]  # scratch row for p (Rj is no longer needed)
        pvec[0] = pl0
        pvec[1] = pl1
        pvec[2] = pl2
        motion_transform(Rl, pvec, Xup[i])
        _compose_world(topo, i, Rl, pl0, pl1, pl2, Rw, pw)


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
