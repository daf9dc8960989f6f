"""Spatial-algebra building blocks for the compiled kernels.

Conventions (identical to Pinocchio, so results compare entry by entry):

* a spatial motion vector is ``[v (linear), w (angular)]`` and a spatial force ``[f, n]``;
* ``Xup[i]`` is the 6x6 motion transform from the parent body's frame to body ``i``'s frame,
  built from the pose ``(R, p)`` of body ``i`` in its parent:
  ``Xup = [[R^T, -R^T [p]x], [0, R^T]]``;
* forces go the other way with ``Xup^T``;
* body inertias are 6x6 spatial inertias about the body origin, in body axes.

Everything works on preallocated arrays; nothing here allocates.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy", inline="always")
def motion_transform(R, p, X):
    """Fill ``X`` (6x6) with the parent-to-child motion transform of a child at pose (R, p)."""
    for r in range(3):
        for c in range(3):
            rt = R[c, r]
            X[r, c] = rt
            X[r + 3, c + 3] = rt
            X[r + 3, c] = 0.0
    # top-right block: -R^T [p]x
    for r in range(3):
        a0 = R[0, r]
        a1 = R[1, r]
        a2 = R[2, r]
        # row r of R^T is (a0, a1, a2); (R^T [p]x)[r, :] = a x-times columns of [p]x
        X[r, 3] = -(a1 * p[2] - a2 * p[1])
        X[r, 4] = -(a2 * p[0] - a0 * p[2])
        X[r, 5] = -(a0 * p[1] - a1 * p[0])


@njit(cache=True, error_model="numpy", inline="always")
def rotate(R, x, y, z):
    """``R[:3, :3] @ (x, y, z)`` as a tuple, each row summed left to right (the rounding of the
    written-out products it replaces). ``R`` may be a pose (rows 0-2 the rotation)."""
    return (R[0, 0] * x + R[0, 1] * y + R[0, 2] * z,
            R[1, 0] * x + R[1, 1] * y + R[1, 2] * z,
            R[2, 0] * x + R[2, 1] * y + R[2, 2] * z)


@njit(cache=True, error_model="numpy", inline="always")
def add_cross(v0, v1, v2, a0, a1, a2, b0, b1, b2):
    """``v + a x b`` as a tuple (a motion's linear part moved to another point: ``v + w x r``),
    each entry ``v_i + a_j b_k - a_k b_j`` summed left to right."""
    return (v0 + a1 * b2 - a2 * b1, v1 + a2 * b0 - a0 * b2, v2 + a0 * b1 - a1 * b0)


@njit(cache=True, error_model="numpy", inline="always")
def row6_dot(A, r, x):
    """``A[r, :6] @ x[:6]``, summed left to right."""
    return (
        A[r, 0] * x[0]
        + A[r, 1] * x[1]
        + A[r, 2] * x[2]
        + A[r, 3] * x[3]
        + A[r, 4] * x[4]
        + A[r, 5] * x[5]
    )


@njit(cache=True, error_model="numpy", inline="always")
def apply_motion(X, m, out):
    """``out = X @ m`` for a 6x6 motion transform exploiting its zero block."""
    for r in range(3):
        out[r] = row6_dot(X, r, m)
        out[r + 3] = X[r + 3, 3] * m[3] + X[r + 3, 4] * m[4] + X[r + 3, 5] * m[5]


@njit(cache=True, error_model="numpy", inline="always")
def cross_motion(v, m):
    """``v x m`` (spatial motion cross product) as a 6-tuple."""
    return (v[4] * m[2] - v[5] * m[1] + v[1] * m[5] - v[2] * m[4],
            v[5] * m[0] - v[3] * m[2] + v[2] * m[3] - v[0] * m[5],
            v[3] * m[1] - v[4] * m[0] + v[0] * m[4] - v[1] * m[3],
            v[4] * m[5] - v[5] * m[4],
            v[5] * m[3] - v[3] * m[5],
            v[3] * m[4] - v[4] * m[3])


@njit(cache=True, error_model="numpy", inline="always")
def cross_force(v, f):
    """``v x* f`` (spatial force cross product) as a 6-tuple."""
    return (v[4] * f[2] - v[5] * f[1],
            v[5] * f[0] - v[3] * f[2],
            v[3] * f[1] - v[4] * f[0],
            v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1],
            v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2],
            v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0])


# (written out, not a loop over the entries: constant tuple indices, nothing left to unroll)
@njit(cache=True, inline="always")
def set6(out, x):
    """``out[:6] = x`` for a 6-tuple ``x`` (a cross product above: ``out`` may be one of its
    operands, every entry is computed before the first is stored)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = x


@njit(cache=True, inline="always")
def add6(out, x):
    """``out[:6] += x`` for a 6-tuple ``x`` (as :func:`set6`)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = (
        out[0] + x[0], out[1] + x[1], out[2] + x[2], out[3] + x[3], out[4] + x[4], out[5] + x[5])


@njit(cache=True, error_model="numpy", inline="always")
def mat6_vec(A, x, out):
    """``out = A @ x`` for 6x6 A."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        out[r] = s


@njit(cache=True, error_model="numpy", inline="always")
def rotation_about_axis(axis, angle, R):
    """Rodrigues' formula: rotation by ``angle`` (rad) about the unit ``axis``, into R."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x = axis[0]
    y = axis[1]
    z = axis[2]
    R[0, 0] = c + t * x * x
    R[0, 1] = t * x * y - s * z
    R[0, 2] = t * x * z + s * y
    R[1, 0] = t * x * y + s * z
    R[1, 1] = c + t * y * y
    R[1, 2] = t * y * z - s * x
    R[2, 0] = t * x * z - s * y
    R[2, 1] = t * y * z + s * x
    R[2, 2] = c + t * z * z


@njit(cache=True, inline="always")
def quaternion_rotation(x, y, z, w):
    """The rotation matrix of the unit quaternion (x, y, z, w) (not normalized here), as its
    nine entries row by row: (R00, R01, R02, R10, R11, R12, R20, R21, R22)."""
    return (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
            2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
            2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))


@njit(cache=True, error_model="numpy", inline="always")
def rotation_from_quaternion(qx, qy, qz, qw, R):
    """Rotation matrix of the unit quaternion (x, y, z, w), normalized on the fly."""
    n = np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1],
     R[2, 2]) = quaternion_rotation(qx / n, qy / n, qz / n, qw / n)


# quaternions (x, y, z, w); the default error model, as the estimators' kernels that inline them
@njit(cache=True, inline="always")
def rotvec_quaternion(wx, wy, wz):
    """The unit quaternion Exp(w) of the rotation vector w (half-angle sine, 1e-12 floor)."""
    th = math.sqrt(wx * wx + wy * wy + wz * wz)
    if th < 1e-12:
        s, c = 0.5, 1.0
    else:
        s, c = math.sin(0.5 * th) / th, math.cos(0.5 * th)
    return wx * s, wy * s, wz * s, c


@njit(cache=True, inline="always")
def quaternion_product_into(px, py, pz, pw, rx, ry, rz, rw, q, o):
    """``q[o:o+4]`` = p r / |p r| (Hamilton product, normalized)."""
    nx = pw * rx + px * rw + py * rz - pz * ry
    ny = pw * ry - px * rz + py * rw + pz * rx
    nz = pw * rz + px * ry - py * rx + pz * rw
    nw = pw * rw - px * rx - py * ry - pz * rz
    n = math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    q[o], q[o + 1], q[o + 2], q[o + 3] = nx / n, ny / n, nz / n, nw / n
