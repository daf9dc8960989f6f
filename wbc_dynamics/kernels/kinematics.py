"""Compiled point kinematics: frame placements, point Jacobians and the bias acceleration J̇v.

A *point* is given by the body it is rigidly attached to (``body``, -1 for the world) and its
position ``r`` in that body's frame; a *frame* additionally by the rotation ``Rf`` of the frame in
the body. Output Jacobians have rows ``[linear (3); angular (3)]`` and map the generalized
velocity v to the velocity of the point, in world-aligned axes (``local=False``, Pinocchio's
LOCAL_WORLD_ALIGNED) or in the frame's own axes (``local=True``, Pinocchio's LOCAL).
"""

from __future__ import annotations

from numba import njit

from .dynamics import (
    BAD_V,
    OK,
    check_configuration,
    check_vector,
    forward_kinematics,
    joint_velocity,
)
from .leaf import leaf_kernel
from .spatial import add6, add_cross, apply_motion, cross_motion, rotate


@leaf_kernel(error_model="numpy")
def point_world(Rw, pw, body, r, out):
    """World position of the point r (body frame) into out (3)."""
    if body < 0:
        for k in range(3):
            out[k] = r[k]
        return
    for k in range(3):
        out[k] = pw[body, k] + Rw[body, k, 0] * r[0] + Rw[body, k, 1] * r[1] + Rw[body, k, 2] * r[2]


@leaf_kernel(error_model="numpy")
def point_jacobian_filled(model, Rw, pw, body, r, Rf, local, P, J):
    """Jacobian of a point after forward kinematics (``P``: 3-vector scratch; J zeroed first)."""
    J[:, :] = 0.0
    if body < 0:
        return
    point_world(Rw, pw, body, r, P)
    j = body
    while j >= 0:
        iv = model.v_index[j]
        nvi = model.joint_nv[j]
        Rj = Rw[j]
        for k in range(nvi):
            s0 = model.motion_subspace[j, 0, k]
            s1 = model.motion_subspace[j, 1, k]
            s2 = model.motion_subspace[j, 2, k]
            w0 = model.motion_subspace[j, 3, k]
            w1 = model.motion_subspace[j, 4, k]
            w2 = model.motion_subspace[j, 5, k]
            # world-aligned twist of the joint's motion at the joint origin
            vx, vy, vz = rotate(Rj, s0, s1, s2)
            wx, wy, wz = rotate(Rj, w0, w1, w2)
            dx = P[0] - pw[j, 0]
            dy = P[1] - pw[j, 1]
            dz = P[2] - pw[j, 2]
            c = iv + k
            J[0, c], J[1, c], J[2, c] = add_cross(vx, vy, vz, wx, wy, wz, dx, dy, dz)
            J[3, c], J[4, c], J[5, c] = wx, wy, wz
        j = model.parent[j]
    if local:
        # express in the frame's axes: multiply by (Rw[body] Rf)^T
        for c in range(J.shape[1]):
            for blk in range(0, 6, 3):
                a0 = J[blk, c]
                a1 = J[blk + 1, c]
                a2 = J[blk + 2, c]
                for k in range(3):
                    # column k of Rw Rf
                    f0, f1, f2 = rotate(Rw[body], Rf[0, k], Rf[1, k], Rf[2, k])
                    J[blk + k, c] = f0 * a0 + f1 * a1 + f2 * a2


@leaf_kernel(error_model="numpy")
def body_velocities_and_bias(model, v, Xup, vel, acc, vJ):
    """Body spatial velocities and velocity-product accelerations (ddq = 0, no gravity)."""
    nb = model.parent.shape[0]
    for i in range(nb):
        par = model.parent[i]
        iv = model.v_index[i]
        nvi = model.joint_nv[i]
        joint_velocity(model.motion_subspace[i], nvi, iv, v, vJ)
        if par < 0:
            for r_ in range(6):
                vel[i, r_] = vJ[r_]
                acc[i, r_] = 0.0
        else:
            apply_motion(Xup[i], vel[par], vel[i])
            for r_ in range(6):
                vel[i, r_] += vJ[r_]
            apply_motion(Xup[i], acc[par], acc[i])
        add6(acc[i], cross_motion(vel[i], vJ))


@leaf_kernel(error_model="numpy")
def point_bias_filled(Rw, vel, acc, body, r, Rf, local, out):
    """Classical acceleration of the point for ddq = 0 (J̇v), from body velocities/accelerations.

    With body-frame spatial velocity (v, w) and spatial acceleration (a, alpha) at the body origin,
    the point at r has classical acceleration a + alpha x r + w x (v + w x r).
    """
    if body < 0:
        for k in range(6):
            out[k] = 0.0
        return
    v0, v1, v2 = vel[body, 0], vel[body, 1], vel[body, 2]
    w0, w1, w2 = vel[body, 3], vel[body, 4], vel[body, 5]
    a0, a1, a2 = acc[body, 0], acc[body, 1], acc[body, 2]
    b0, b1, b2 = acc[body, 3], acc[body, 4], acc[body, 5]
    # velocity of the point (body axes)
    p0 = v0 + w1 * r[2] - w2 * r[1]
    p1 = v1 + w2 * r[0] - w0 * r[2]
    p2 = v2 + w0 * r[1] - w1 * r[0]
    l0 = a0 + b1 * r[2] - b2 * r[1] + w1 * p2 - w2 * p1
    l1 = a1 + b2 * r[0] - b0 * r[2] + w2 * p0 - w0 * p2
    l2 = a2 + b0 * r[1] - b1 * r[0] + w0 * p1 - w1 * p0
    R = Rw[body]
    for k in range(3):
        out[k] = R[k, 0] * l0 + R[k, 1] * l1 + R[k, 2] * l2
        out[k + 3] = R[k, 0] * b0 + R[k, 1] * b1 + R[k, 2] * b2
    if local:
        for blk in range(0, 6, 3):
            c0 = out[blk]
            c1 = out[blk + 1]
            c2 = out[blk + 2]
            for k in range(3):
                f0, f1, f2 = rotate(R, Rf[0, k], Rf[1, k], Rf[2, k])
                out[blk + k] = f0 * c0 + f1 * c1 + f2 * c2


@njit(cache=True, error_model="numpy", inline="always")
def _kinematics_pass(model, q, v, Xup, Rw, pw, Rtmp, vel, acc, vJ):
    """Check q and v, then forward kinematics and :func:`body_velocities_and_bias`: the pass
    every point query starts from. Returns OK or the bad input's status (BAD_Q / BAD_QUATERNION,
    BAD_V)."""
    st = check_configuration(model, q)
    if st != OK:
        return st
    if not check_vector(v):
        return BAD_V
    forward_kinematics(model, q, Xup, Rw, pw, Rtmp)
    body_velocities_and_bias(model, v, Xup, vel, acc, vJ)
    return OK


@leaf_kernel(error_model="numpy")
def point_bias(model, q, v, body, r, Rf, local, Xup, Rw, pw, Rtmp, vel, acc, vJ, out):
    """J̇v of a point: forward kinematics, velocity pass, then the classical point acceleration."""
    st = _kinematics_pass(model, q, v, Xup, Rw, pw, Rtmp, vel, acc, vJ)
    if st != OK:
        return st
    point_bias_filled(Rw, vel, acc, body, r, Rf, local, out)
    return OK


@leaf_kernel(error_model="numpy")
def points_kinematics(
    model,
    q,
    v,
    bodies,
    rs,
    Xup,
    Rw,
    pw,
    Rtmp,
    vel,
    acc,
    vJ,
    P,
    Jfull,
    positions,
    J_lin,
    bias_lin,
):
    """Batched contact-point kinematics after ONE kinematics pass (the contact hot path).

    For k points (``bodies[k]``, ``rs[k]`` in body frame) fills world ``positions`` (k, 3),
    world-aligned linear Jacobians ``J_lin`` (k, 3, nv) and linear J̇v ``bias_lin`` (k, 3).
    ``Jfull`` is (6, nv) scratch. Returns a status code.
    """
    st = _kinematics_pass(model, q, v, Xup, Rw, pw, Rtmp, vel, acc, vJ)
    if st != OK:
        return st
    Rf = Rtmp[1]
    for a in range(3):
        for b in range(3):
            Rf[a, b] = 1.0 if a == b else 0.0
    out6 = vJ  # free once the velocity pass is done
    for k in range(bodies.shape[0]):
        b = bodies[k]
        point_world(Rw, pw, b, rs[k], positions[k])
        point_jacobian_filled(model, Rw, pw, b, rs[k], Rf, False, P, Jfull)
        for a in range(3):
            for c in range(Jfull.shape[1]):
                J_lin[k, a, c] = Jfull[a, c]
        point_bias_filled(Rw, vel, acc, b, rs[k], Rf, False, out6)
        for a in range(3):
            bias_lin[k, a] = out6[a]
    return OK
