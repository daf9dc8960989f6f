"""SO(3)/SE(3) helpers for the floating base (quaternions are x, y, z, w)."""

from __future__ import annotations

import numpy as np


def skew(a: np.ndarray) -> np.ndarray:
    """[a]x, the 3x3 matrix of the cross product a x (.)."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of the quaternion (x, y, z, w) (normalized first)."""
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) with w >= 0 of a rotation matrix (Shepperd's method)."""
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array(
            [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
        )
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.empty(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
    if q[3] < 0:
        q = -q
    return q / np.linalg.norm(q)


def so3_exp(w: np.ndarray) -> np.ndarray:
    """exp([w]x): rotation by |w| rad about w."""
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < 1e-8:
        return np.eye(3) + W + 0.5 * W @ W
    return np.eye(3) + np.sin(theta) / theta * W + (1 - np.cos(theta)) / theta**2 * W @ W


def se3_exp(xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp of the twist xi = [v (linear), w (angular)]: (R, p) of the displacement."""
    v, w = np.asarray(xi[:3], float), np.asarray(xi[3:], float)
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < 1e-8:
        V = np.eye(3) + 0.5 * W + W @ W / 6.0
    else:
        V = (
            np.eye(3)
            + (1 - np.cos(theta)) / theta**2 * W
            + (theta - np.sin(theta)) / theta**3 * W @ W
        )
    return so3_exp(w), V @ v


def se3_integrate(pose7: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """Pose [p, quat] moved by the body-frame twist xi (pose * exp(xi)), as [p, quat]."""
    R0 = quat_to_matrix(pose7[3:7])
    dR, dp = se3_exp(xi)
    out = np.empty(7)
    out[:3] = pose7[:3] + R0 @ dp
    out[3:] = matrix_to_quat(R0 @ dR)
    # keep the hemisphere of the input quaternion so trajectories are continuous
    if np.dot(out[3:], pose7[3:7]) < 0:
        out[3:] = -out[3:]
    return out
