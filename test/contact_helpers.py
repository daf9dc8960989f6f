"""Shared helpers for the contact tests (Zapolsky & Drumwright): models, references and checks.

Independent references come from Pinocchio (M by CRBA, h by RNEA, point Jacobians).
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin

from wbc_dynamics import RobotModel
from wbc_dynamics.contact.geometry import ContactModel, FreeBody, HalfSpace
from wbc_dynamics.robots import robot_info, robot_path

G = 9.81


@functools.cache
def quadruped():
    """(core model, pinocchio model, ContactModel on flat ground, standing q)."""
    m = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    pm = pin.buildModelFromUrdf(robot_path("quadruped"), pin.JointModelFreeFlyer())
    cm = ContactModel(m, features=[HalfSpace.ground(0.0, mu=1.0)], margin=0.005, dt=1e-3)
    q0 = np.array(robot_info("quadruped")["standing_q"])
    return m, pm, cm, q0


def quadruped_on_ground(feet):
    """(core model, ContactModel of the links ``feet`` on flat ground, the standing q with its
    lowest foot exactly on the ground, phi = 0): a fresh model each call (filters write the
    contact model's exclusion mask)."""
    m = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q = np.array(robot_info("quadruped")["standing_q"], dtype=float)
    cm = ContactModel(m, contact_links=list(feet), features=[HalfSpace.ground(mu=0.8)],
                      margin=0.005, dt=1e-3)
    k = cm.candidates(q, margin=0.1)
    q[2] -= float(np.min(cm.data.cand_phi[:k]))
    return m, cm, q


@functools.cache
def arm_box():
    """(arm model, box model, pin arm model, ContactModel with the free box, grasp q, box pose)."""
    arm = RobotModel.from_urdf(robot_path("arm"))
    box = RobotModel.from_urdf(robot_path("box"), floating_base=True)
    parm = pin.buildModelFromUrdf(robot_path("arm"))
    info = robot_info("arm")
    cm = ContactModel(arm, features=[], bodies=[FreeBody.from_model("box", box, mu=1.0)],
                      margin=0.005, dt=1e-3)
    return arm, box, parm, cm, np.array(info["grasp_q"]), np.array(info["box_pose"])


def pin_mass_bias(pm, q, v):
    """Pinocchio mass matrix (symmetrized CRBA) and nonlinear effects."""
    d = pm.createData()
    M = pin.crba(pm, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(pm, d, q, v)
    return M, h


def eq37_residual_mform(M, problem, res):
    """Relative residual of eq. (37) in M form.

    M(v+ - v) - dt(B tau - h) - N^T cN - S^T cS - T^T cT,

    Scaled by the largest term so it is unit free.
    """
    p = problem
    gen = -p.dt * p.h
    gen = gen.copy()
    gen[p.actuated] += p.dt * res.tau
    c = res.impulses
    contact = p.N.T @ c[:, 0] + p.S.T @ c[:, 1] + p.T.T @ c[:, 2]
    lhs = M @ (res.v_next - p.v)
    r = lhs - gen - contact
    scale = max(1e-12, np.max(np.abs(lhs)), np.max(np.abs(gen)), np.max(np.abs(contact)))
    return float(np.max(np.abs(r)) / scale)


def blockdiag(Ms):
    n = sum(M.shape[0] for M in Ms)
    out = np.zeros((n, n))
    i = 0
    for M in Ms:
        k = M.shape[0]
        out[i:i + k, i:i + k] = M
        i += k
    return out


def standing_sway(m, q0, n_ticks, dt, amp=(0.01, 0.0, 0.005), period=1.0, feet=None,
                  discrete=True):
    """Kinematically consistent slow standing trajectory of the quadruped (feet stay fixed).

    The base translates ``p(t) = p0 + amp * sin(2 pi t / period)`` (orientation fixed); joint
    velocities/accelerations follow from the four foot-point constraints
    ``J_foot v = 0``, ``J_foot a + Jdot v = 0`` (3x3 leg blocks). With ``discrete=True`` the
    accelerations instead satisfy the velocity-level constraint of the first-order model,
    ``J_foot (v + dt a) = 0`` i.e. ``J_foot a = 0`` (the J̇v term is O(dt) in eq. (37)'s model).
    Returns lists (q, v, qdd_joints).
    """
    feet = feet or ["LF_foot", "LH_foot", "RF_foot", "RH_foot"]
    radius = robot_info("quadruped")["contact_radius"]
    amp = np.asarray(amp, float)
    w = 2 * np.pi / period
    q = q0.copy()
    qs, vs, qdds = [], [], []
    for k in range(n_ticks):
        t = k * dt
        vb = np.zeros(6)
        ab = np.zeros(6)
        vb[:3] = amp * w * np.cos(w * t)
        ab[:3] = -amp * w * w * np.sin(w * t)
        v = np.zeros(m.nv)
        v[:6] = vb
        # material points at the bottoms of the foot spheres (the contact points): no slip there
        pts = np.array([m.frame_placement(q, f)[:3, :3].T @ [0.0, 0.0, -radius] for f in feet])
        _, J, _ = m.points_kinematics(q, v, feet, pts)
        for i in range(len(feet)):
            cols = slice(6 + 3 * i, 9 + 3 * i)
            v[cols] = -np.linalg.solve(J[i][:, cols], J[i][:, :6] @ vb)
        _, J, bias = m.points_kinematics(q, v, feet, pts)
        a = np.zeros(m.nv)
        a[:6] = ab
        ad = a.copy()
        for i in range(len(feet)):
            cols = slice(6 + 3 * i, 9 + 3 * i)
            a[cols] = -np.linalg.solve(J[i][:, cols], J[i][:, :6] @ ab + bias[i])
            ad[cols] = -np.linalg.solve(J[i][:, cols], J[i][:, :6] @ ab)
        qs.append(q.copy())
        vs.append(v.copy())
        qdds.append((ad if discrete else a)[6:].copy())
        # the state itself follows the exact (continuous-time) kinematics
        q = m.integrate(q, v + 0.5 * dt * a, dt)
    return qs, vs, qdds


def sway_problems(n, period=1.0, amp=(0.01, 0.004, 0.005)):
    """Problems along a kinematically consistent four-foot sway of the quadruped on the
    :func:`quadruped` contact model (dt = 1 ms; indeterminate: rank K = 3 < 4 contacts).

    States from :func:`standing_sway` (velocity-level consistent accelerations); the O(dt^2)
    per-tick integration drift of the feet (< 10 um) is removed by setting phi = 0, so every
    tick is exactly consistent and only the indeterminacy is exercised.
    """
    m, _pm, cm, q0 = quadruped()
    qs, vs, qdds = standing_sway(m, q0, n, cm.dt, amp=amp, period=period, discrete=True)
    probs = []
    for k, (q, v, qdd) in enumerate(zip(qs, vs, qdds, strict=True)):
        p = cm.build(q, v, qdd)
        if p.nc != 4 or np.max(np.abs(p.phi)) >= 1e-5:
            raise RuntimeError(f"tick {k}: {p.nc} contacts, max |phi| {np.max(np.abs(p.phi))}")
        p.phi[:] = 0.0
        probs.append(p)
    return probs


def closed_loop_sway(m, cm, q0, n_ticks, dt, solver, amp=(0.01, 0.004, 0.005), period=1.0,
                     kp=400.0, kd=40.0, extra=()):
    """Closed-loop standing sway: the solver's own first-order model is the plant.

    Reference (q_ref, v_ref, qdd_ref) from :func:`standing_sway` (continuous-time accelerations);
    desired joint accelerations ``qdd_ref + kp (q_ref - q) + kd (v_ref - v)``; the plant state is
    advanced with the predicted ``v+`` of ``solver(problem)`` (semi-implicit Euler). ``extra`` is
    a sequence of further callables evaluated on the same problems (e.g. cold-start solves).
    Returns (list of results of ``solver``, list of lists of results of ``extra``, problems).
    """
    qr, vr, ar = standing_sway(m, q0, n_ticks, dt, amp=amp, period=period, discrete=False)
    q = q0.copy()
    v = np.zeros(m.nv)
    out, outx, probs = [], [[] for _ in extra], []
    for k in range(n_ticks):
        qdd = ar[k] + kp * (qr[k][7:] - q[7:]) + kd * (vr[k][6:] - v[6:])
        p = cm.build(q, v, qdd)
        res = solver(p)
        out.append(res)
        probs.append(p)
        for j, f in enumerate(extra):
            outx[j].append(f(p))
        v = res.v_next.copy()
        q = m.integrate(q, v, dt)
    return out, outx, probs
