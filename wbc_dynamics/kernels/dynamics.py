"""Compiled rigid-body algorithms on the flat model arrays.

Model arrays (built once by :func:`wbc_dynamics.urdf_loader.load_model`):

``topo`` (nb, 6) int64
    per body: parent index (-1 = world), joint type, first index in q, first index in v,
    number of velocity DoFs of its joint, end (exclusive) of its subtree's v range.
    Bodies are in depth-first pre-order, so a subtree is a contiguous range of bodies and of v.
``tree`` (nb, 15) float64
    per body: joint placement in the parent body frame (R row-major (9), p (3)), then the
    joint axis (3).
``Sm`` (nb, 6, 6) float64
    joint motion subspace in body axes (first ``nvi`` columns used).
``I6`` (nb, 6, 6) float64
    spatial inertia about the body origin in body axes (fixed children already merged).

Every top-level kernel returns an int status: 0 = fine, otherwise the code of the first bad
argument (see :data:`STATUS_MESSAGES` in :mod:`wbc_dynamics.model`), checked inside the compiled
code so input validation costs next to nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .spatial import (
    apply_force_transpose_add,
    apply_motion,
    apply_motion_add,
    congruence_add,
    cross_force_add,
    cross_motion_add,
    mat6_vec,
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


@njit(cache=True, error_model="numpy")
def check_vector(x):
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True


@njit(cache=True, error_model="numpy")
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


@njit(cache=True, error_model="numpy")
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


@njit(cache=True, error_model="numpy")
def world_poses(topo, tree, q, last, Rw, pw, Rtmp):
    """World poses (Rw, pw) of bodies 0..last; in depth-first order these include every
    ancestor of ``last``. No motion transforms (the world-frame recursions do not need them)."""
    Rj = Rtmp[0]
    Rl = Rtmp[1]
    for i in range(last + 1):
        pl0, pl1, pl2 = _pose_in_parent(topo, tree, q, i, Rj, Rl)
        _compose_world(topo, i, Rl, pl0, pl1, pl2, Rw, pw)


@njit(cache=True, error_model="numpy")
def _rnea_passes(
    topo, Sm, I6, gravity, v, a, fext, use_fext, use_gravity, Xup, vel, acc, frc, tmp, tau
):
    """Recursive Newton-Euler (Featherstone 2008, Table 5.1), given ``Xup`` from forward kinematics.

    For a free-flyer root the first six entries of ``tau`` are the base wrench in the base frame:
    the extended inverse dynamics of a moving-base robot (seed 003, Table 4).
    """
    nb = topo.shape[0]
    vJ = tmp[0]
    Iv = tmp[1]
    for i in range(nb):
        par = topo[i, PARENT]
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        S = Sm[i]
        for r in range(6):
            s_v = 0.0
            s_a = 0.0
            for k in range(nvi):
                s_v += S[r, k] * v[iv + k]
                s_a += S[r, k] * a[iv + k]
            vJ[r] = s_v
            acc[i, r] = s_a
        if par < 0:
            for r in range(6):
                vel[i, r] = vJ[r]
            if use_gravity:
                # the world "accelerates" upwards: a_0 = -g, so gravity enters through the tree
                g6 = tmp[2]
                for r in range(3):
                    g6[r] = -gravity[r]
                    g6[r + 3] = 0.0
                apply_motion_add(Xup[i], g6, acc[i])
        else:
            apply_motion(Xup[i], vel[par], vel[i])
            for r in range(6):
                vel[i, r] += vJ[r]
            apply_motion_add(Xup[i], acc[par], acc[i])
        cross_motion_add(vel[i], vJ, acc[i])
        mat6_vec(I6[i], acc[i], frc[i])
        mat6_vec(I6[i], vel[i], Iv)
        cross_force_add(vel[i], Iv, frc[i])
        if use_fext:
            for r in range(6):
                frc[i, r] -= fext[i, r]
    for i in range(nb - 1, -1, -1):
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        S = Sm[i]
        for k in range(nvi):
            s = 0.0
            for r in range(6):
                s += S[r, k] * frc[i, r]
            tau[iv + k] = s
        par = topo[i, PARENT]
        if par >= 0:
            apply_force_transpose_add(Xup[i], frc[i], frc[par])


@njit(cache=True, error_model="numpy")
def rnea(
    topo,
    tree,
    Sm,
    I6,
    gravity,
    q,
    v,
    a,
    fext,
    use_fext,
    use_gravity,
    Xup,
    Rw,
    pw,
    Rtmp,
    vel,
    acc,
    frc,
    tmp,
    tau,
):
    """tau = M(q) a + C(q, v) v + g(q) - sum J^T f_ext. Returns a status code."""
    st = check_configuration(topo, q)
    if st != OK:
        return st
    if not check_vector(v):
        return BAD_V
    if not check_vector(a):
        return BAD_A
    if use_fext and not check_vector(fext.ravel()):
        return BAD_FEXT
    forward_kinematics(topo, tree, q, Xup, Rw, pw, Rtmp)
    _rnea_passes(
        topo, Sm, I6, gravity, v, a, fext, use_fext, use_gravity, Xup, vel, acc, frc, tmp, tau
    )
    return OK


@njit(cache=True, error_model="numpy")
def crba(topo, tree, Sm, I6, q, Xup, Rw, pw, Rtmp, Ic, F, M):
    """Joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone, Table 6.2).

    ``Ic`` is (nb, 6, 6) scratch for composite inertias, ``F`` (2, 6, 6) scratch. Fills all of M.
    """
    st = check_configuration(topo, q)
    if st != OK:
        return st
    forward_kinematics(topo, tree, q, Xup, Rw, pw, Rtmp)
    nb = topo.shape[0]
    M[:, :] = 0.0  # bodies on different branches do not couple
    for i in range(nb):
        for r in range(6):
            for c in range(6):
                Ic[i, r, c] = I6[i, r, c]
    tmp = F[1]
    for i in range(nb - 1, -1, -1):
        par = topo[i, PARENT]
        if par >= 0:
            congruence_add(Xup[i], Ic[i], tmp, Ic[par])
    Fi = F[0]
    for i in range(nb):
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        S = Sm[i]
        for k in range(nvi):
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += Ic[i, r, c] * S[c, k]
                Fi[r, k] = s
        for k1 in range(nvi):
            for k2 in range(nvi):
                s = 0.0
                for r in range(6):
                    s += S[r, k1] * Fi[r, k2]
                M[iv + k1, iv + k2] = s
        j = i
        par = topo[j, PARENT]
        while par >= 0:
            # F <- Xup[j]^T F (force transform to the parent frame), column by column
            Xj = Xup[j]
            for k in range(nvi):
                for r in range(6):
                    tmp[r, 0] = Fi[r, k]
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += Xj[c, r] * tmp[c, 0]
                    Fi[r, k] = s
            j = par
            jv = topo[j, IV]
            nvj = topo[j, NVI]
            Sj = Sm[j]
            for k1 in range(nvj):
                for k2 in range(nvi):
                    s = 0.0
                    for r in range(6):
                        s += Sj[r, k1] * Fi[r, k2]
                    M[jv + k1, iv + k2] = s
                    M[iv + k2, jv + k1] = s
            par = topo[j, PARENT]
    return OK


@njit(cache=True, error_model="numpy")
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
    for r in range(n):
        for c in range(r + 1):
            s = D[r, c]
            for k in range(c):
                s -= L[r, k] * L[c, k]
            if r == c:
                if not s > 0.0:
                    return False
                L[r, r] = np.sqrt(s)
            else:
                L[r, c] = s / L[c, c]
    # Dinv = L^-T L^-1, column by column: forward substitution into Dinv[:, col], then back
    # substitution in place (entry r is final before rows above it need it)
    for col in range(n):
        for r in range(n):
            s = 1.0 if r == col else 0.0
            for k in range(r):
                s -= L[r, k] * Dinv[k, col]
            Dinv[r, col] = s / L[r, r]
        for r in range(n - 1, -1, -1):
            s = Dinv[r, col]
            for k in range(r + 1, n):
                s -= L[k, r] * Dinv[k, col]
            Dinv[r, col] = s / L[r, r]
    return True


@njit(cache=True, error_model="numpy")
def _articulated_backward(topo, Sm, i, IA, U, D, Dinv, work):
    """U = IA S, D = S^T U and its inverse for body i (shared by ABA and M^-1)."""
    nvi = topo[i, NVI]
    S = Sm[i]
    IAi = IA[i]
    Ui = U[i]
    for k in range(nvi):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += IAi[r, c] * S[c, k]
            Ui[r, k] = s
    Di = D[i]
    for k1 in range(nvi):
        for k2 in range(nvi):
            s = 0.0
            for r in range(6):
                s += S[r, k1] * Ui[r, k2]
            Di[k1, k2] = s
    return _invert_spd(Di, nvi, Dinv[i], work)


@njit(cache=True, error_model="numpy")
def _articulated_to_parent(topo, i, IA, U, Dinv, Xup, tmp6, tmp6b):
    """IA[parent] += Xup^T (IA - U D^-1 U^T) Xup (the part of IA transmitted across the joint)."""
    nvi = topo[i, NVI]
    Ui = U[i]
    Di = Dinv[i]
    Ia = tmp6
    for r in range(6):
        for c in range(6):
            s = IA[i, r, c]
            for k1 in range(nvi):
                for k2 in range(nvi):
                    s -= Ui[r, k1] * Di[k1, k2] * Ui[c, k2]
            Ia[r, c] = s
    congruence_add(Xup[i], Ia, tmp6b, IA[topo[i, PARENT]])


@njit(cache=True, error_model="numpy")
def aba(
    topo,
    tree,
    Sm,
    I6,
    gravity,
    q,
    v,
    tau,
    fext,
    use_fext,
    Xup,
    Rw,
    pw,
    Rtmp,
    vel,
    cbias,
    pA,
    IA,
    U,
    D,
    Dinv,
    uu,
    acc,
    work,
    ddq,
):
    """Forward dynamics by the articulated-body algorithm (Featherstone 2008, Table 7.1).

    Returns a status code; SINGULAR if some joint's articulated inertia is not positive definite.
    """
    st = check_configuration(topo, q)
    if st != OK:
        return st
    if not check_vector(v):
        return BAD_V
    if not check_vector(tau):
        return BAD_A
    if use_fext and not check_vector(fext.ravel()):
        return BAD_FEXT
    forward_kinematics(topo, tree, q, Xup, Rw, pw, Rtmp)
    nb = topo.shape[0]
    vJ = work[0, 0]
    Iv = work[0, 1]
    for i in range(nb):
        par = topo[i, PARENT]
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        S = Sm[i]
        for r in range(6):
            s = 0.0
            for k in range(nvi):
                s += S[r, k] * v[iv + k]
            vJ[r] = s
            cbias[i, r] = 0.0
        if par < 0:
            for r in range(6):
                vel[i, r] = vJ[r]
        else:
            apply_motion(Xup[i], vel[par], vel[i])
            for r in range(6):
                vel[i, r] += vJ[r]
            cross_motion_add(vel[i], vJ, cbias[i])
        for r in range(6):
            for c in range(6):
                IA[i, r, c] = I6[i, r, c]
        mat6_vec(I6[i], vel[i], Iv)
        for r in range(6):
            pA[i, r] = 0.0
        cross_force_add(vel[i], Iv, pA[i])
        if use_fext:
            for r in range(6):
                pA[i, r] -= fext[i, r]
    pa = work[0, 2]
    for i in range(nb - 1, -1, -1):
        if not _articulated_backward(topo, Sm, i, IA, U, D, Dinv, work[1]):
            return SINGULAR
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        S = Sm[i]
        for k in range(nvi):
            s = tau[iv + k]
            for r in range(6):
                s -= S[r, k] * pA[i, r]
            uu[i, k] = s
        par = topo[i, PARENT]
        if par >= 0:
            _articulated_to_parent(topo, i, IA, U, Dinv, Xup, work[2], work[3])
            # pa = pA + Ia c + U D^-1 u, with Ia = IA - U D^-1 U^T
            Ia = work[2]
            for r in range(6):
                s = pA[i, r]
                for c in range(6):
                    s += Ia[r, c] * cbias[i, c]
                for k1 in range(nvi):
                    dk = 0.0
                    for k2 in range(nvi):
                        dk += Dinv[i, k1, k2] * uu[i, k2]
                    s += U[i, r, k1] * dk
                pa[r] = s
            apply_force_transpose_add(Xup[i], pa, pA[par])
    ap = work[0, 3]
    for i in range(nb):
        par = topo[i, PARENT]
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        if par < 0:
            for r in range(3):
                vJ[r] = -gravity[r]
                vJ[r + 3] = 0.0
            apply_motion(Xup[i], vJ, ap)
        else:
            apply_motion(Xup[i], acc[par], ap)
        for r in range(6):
            ap[r] += cbias[i, r]
        for k1 in range(nvi):
            s = 0.0
            for k2 in range(nvi):
                t = uu[i, k2]
                for r in range(6):
                    t -= U[i, r, k2] * ap[r]
                s += Dinv[i, k1, k2] * t
            ddq[iv + k1] = s
        S = Sm[i]
        for r in range(6):
            s = ap[r]
            for k in range(nvi):
                s += S[r, k] * ddq[iv + k]
            acc[i, r] = s
    return OK


@njit(cache=True, error_model="numpy")
def minverse(topo, tree, Sm, I6, q, Xup, Rw, pw, Rtmp, IA, U, D, Dinv, Fm, Pm, work, Minv):
    """Analytical inverse of the joint-space inertia matrix, never forming M.

    Carpentier (seed 000), Algorithm 1: ABA without affine terms, in three passes. ``Fm[i]`` is the
    force set of the subtree rooted at i, ``Pm[i]`` the motion set of i's supports. With a
    free-flyer root (6-DoF first joint) this is the moving-base inverse mass matrix IMMAmb of
    seed 003, Table 9: the base block is D^-1 of the full articulated inertia of the robot.
    """
    st = check_configuration(topo, q)
    if st != OK:
        return st
    forward_kinematics(topo, tree, q, Xup, Rw, pw, Rtmp)
    nb = topo.shape[0]
    nv = Minv.shape[0]
    for i in range(nb):
        for r in range(6):
            for c in range(6):
                IA[i, r, c] = I6[i, r, c]
    Minv[:, :] = 0.0
    Fm[:, :, :] = 0.0
    col = work[0, 0]
    for i in range(nb - 1, -1, -1):
        if not _articulated_backward(topo, Sm, i, IA, U, D, Dinv, work[1]):
            return SINGULAR
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        end = topo[i, SUBTREE_END]
        S = Sm[i]
        Di = Dinv[i]
        Fi = Fm[i]
        # Minv[i, subtree] = D^-1 (I_rows - S^T F_i[:, subtree])   (Alg. 1, lines 11-12)
        for j in range(iv, end):
            for k in range(nvi):
                s = 0.0
                for r in range(6):
                    s += S[r, k] * Fi[r, j]
                col[k] = -s
            for k in range(nvi):
                if j == iv + k:
                    col[k] += 1.0
            for k1 in range(nvi):
                s = 0.0
                for k2 in range(nvi):
                    s += Di[k1, k2] * col[k2]
                Minv[iv + k1, j] = s
        par = topo[i, PARENT]
        if par >= 0:
            # F_i[:, subtree] += U_i Minv[i, subtree]; F_par[:, subtree] += Xup^T F_i (line 13)
            Ui = U[i]
            Xi = Xup[i]
            Fp = Fm[par]
            for j in range(iv, end):
                for r in range(6):
                    s = Fi[r, j]
                    for k in range(nvi):
                        s += Ui[r, k] * Minv[iv + k, j]
                    col[r] = s
                apply_force_transpose_add(Xi, col, Fp[:, j])
            _articulated_to_parent(topo, i, IA, U, Dinv, Xup, work[2], work[3])
    # second forward pass (lines 19-28): contributions of the supports
    for i in range(nb):
        iv = topo[i, IV]
        nvi = topo[i, NVI]
        par = topo[i, PARENT]
        S = Sm[i]
        Pi = Pm[i]
        if par >= 0:
            Ui = U[i]
            Di = Dinv[i]
            Xi = Xup[i]
            Pp = Pm[par]
            for j in range(iv, nv):
                apply_motion(Xi, Pp[:, j], col)
                for k1 in range(nvi):
                    s = 0.0
                    for k2 in range(nvi):
                        t = 0.0
                        for r in range(6):
                            t += Ui[r, k2] * col[r]
                        s += Di[k1, k2] * t
                    Minv[iv + k1, j] -= s
                for r in range(6):
                    s = col[r]
                    for k in range(nvi):
                        s += S[r, k] * Minv[iv + k, j]
                    Pi[r, j] = s
        else:
            for j in range(iv, nv):
                for r in range(6):
                    s = 0.0
                    for k in range(nvi):
                        s += S[r, k] * Minv[iv + k, j]
                    Pi[r, j] = s
    for r in range(nv):
        for c in range(r):
            Minv[r, c] = Minv[c, r]
    return OK
