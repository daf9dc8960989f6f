"""Helpers for the lcp_coulomb / qp_coulomb / qp_noslip tests (Zapolsky & Drumwright).

Problems are assembled here directly from the dynamics core (analytical M^-1, h, point
Jacobians) so that these tests do not depend on the geometry module; the independent reference
for the dynamics checks is Pinocchio's CRBA mass matrix and RNEA bias.
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin

from wbc_dynamics import RobotModel
from wbc_dynamics.contact import ContactProblem
from wbc_dynamics.robots import robot_info, robot_path

FEET = ("LF_foot", "LH_foot", "RF_foot", "RH_foot")


@functools.cache
def quadruped_models():
    """(core model, pinocchio model, pinocchio data, standing q, foot radius)."""
    m = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    pm = pin.buildModelFromUrdf(robot_path("quadruped"), pin.JointModelFreeFlyer())
    info = robot_info("quadruped")
    return m, pm, pm.createData(), np.array(info["standing_q"]), float(info["contact_radius"])


def rot_y(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def tilted_q(q0: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Rigidly rotate the whole robot about the world origin by R (floating base)."""
    q = q0.copy()
    q[:3] = R @ q0[:3]
    Rb = pin.Quaternion(q0[6], q0[3], q0[4], q0[5]).toRotationMatrix()
    quat = pin.Quaternion(R @ Rb)
    q[3:7] = [quat.x, quat.y, quat.z, quat.w]
    return q


def frame_from_normal(n: np.ndarray) -> np.ndarray:
    """Columns (n, s, t): s = world x projected on the tangent plane, t = n x s."""
    n = n / np.linalg.norm(n)
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    s = a - (a @ n) * n
    s /= np.linalg.norm(s)
    return np.column_stack([n, s, np.cross(n, s)])


def quadruped_problem(q=None, v=None, qdd=None, *, slope: float = 0.0, mu: float = 1.0,
                      k: int = 4, dt: float = 1e-3, feet=FEET, plane_offset: float = 0.0
                      ) -> ContactProblem:
    """Quadruped on a half-space through the origin with normal R_y(slope) e_z.

    ``q`` defaults to the standing pose rigidly rotated onto the slope (all feet touching).
    """
    m, _, _, q0, r = quadruped_models()
    R = rot_y(slope)
    if q is None:
        q = tilted_q(q0, R)
    nv = m.nv
    v = np.zeros(nv) if v is None else np.asarray(v, float)
    qdd = np.zeros(nv - 6) if qdd is None else np.asarray(qdd, float)
    n = R @ np.array([0.0, 0.0, 1.0])
    fr = frame_from_normal(n)
    Ns, Ss, Ts, phi, frames, pts = [], [], [], [], [], []
    for foot in feet:
        Tw = m.frame_placement(q, foot)
        c = Tw[:3, 3]
        p_world = c - r * n
        off_link = Tw[:3, :3].T @ (p_world - c)
        J = m.jacobian(q, foot, point=off_link, frame="world")[:3]
        Ns.append(n @ J)
        Ss.append(fr[:, 1] @ J)
        Ts.append(fr[:, 2] @ J)
        phi.append(float(n @ c - r - plane_offset))
        frames.append(fr)
        pts.append(p_world)
    prob = ContactProblem(
        dt=dt, Minv=m.minverse(q), h=m.nonlinear_effects(q, v), v=v,
        actuated=np.arange(6, nv), free=np.arange(6), qdd_des=qdd,
        N=np.array(Ns), S=np.array(Ss), T=np.array(Ts), phi=np.array(phi),
        mu=np.full(len(feet), float(mu)), contact_ids=tuple((f, "ground") for f in feet),
        points=np.array(pts), frames=np.array(frames), friction_edges=k)
    prob.q_config = q  # for the Pinocchio reference checks
    return prob.validate()


def pin_mass_bias(q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Independent reference: Pinocchio CRBA (symmetrized) and nonlinear effects."""
    _, pm, pd, _, _ = quadruped_models()
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    return M, pin.nonLinearEffects(pm, pd, q, v).copy()


def dynamics_residual_pin(prob: ContactProblem, res) -> float:
    """Relative residual of eq. (37) with Pinocchio's M and h:
    ``M (v+ - v) - dt (B tau - h) - N^T c_N - S^T c_S - T^T c_T``."""
    M, h = pin_mass_bias(prob.q_config, prob.v)
    c = res.impulses
    gen = -prob.dt * h
    gen[prob.actuated] += prob.dt * res.tau
    gen += prob.N.T @ c[:, 0] + prob.S.T @ c[:, 1] + prob.T.T @ c[:, 2]
    r = M @ (res.v_next - prob.v) - gen
    scale = max(1.0, float(np.max(np.abs(prob.dt * h))), float(np.max(np.abs(gen))))
    return float(np.max(np.abs(r))) / scale


def accel_residual(prob: ContactProblem, res) -> float:
    """Max |(v+ - v)_actuated / dt - qdd_des| [rad/s^2]."""
    a = (res.v_next[prob.actuated] - prob.v[prob.actuated]) / prob.dt
    return float(np.max(np.abs(a - prob.qdd_des)))


def pyramid_violation(prob: ContactProblem, res, k: int) -> float:
    """max over contacts of (sum of pyramid edge forces) - mu f_N, for the inscribed k-pyramid.

    A force (f_s, f_t) lies in the pyramid with vertices mu f_N d_j iff its polygon gauge is
    <= mu f_N; for a regular k-gon with vertex radius 1 the gauge is max_j (d_j^perp . f) /
    cos(pi / k) with d_j^perp the facet normals at angles (2j + 1) pi / k.
    """
    ang = (2 * np.arange(k) + 1) * np.pi / k
    Nf = np.stack([np.cos(ang), np.sin(ang)], axis=1) / np.cos(np.pi / k)
    f = res.contact_forces_local
    gauge = np.max(f[:, 1:] @ Nf.T, axis=1)
    return float(np.max(gauge - prob.mu * f[:, 0]))
