"""Contact methods against an independent oracle (seed 004, Secs. 4-6; issue 11).

Independent assembly: Pinocchio's CRBA mass matrix M, RNEA bias h and point Jacobians (frame
Jacobian shifted to the contact point, projected on the problem's contact frame) -- nothing of
the project's dynamics core or contact geometry is used for the reference quantities.
Independent solver: Clarabel (interior point) on the *original* formulations in the velocity /
impulse variables (not the reduced forms the methods solve):

* no-slip (Sec. 4): ``v+ = argmin 1/2 |v+ - f*|_M^2`` s.t. ``P v+ = qdot_des``, ``S v+ = T v+ = 0``,
  ``N v+ >= -phi/dt`` -- the MLCP (42) is exactly its KKT system, so ``v+`` is unique;
* Stage I (eqs. (69)-(79)): ``min 1/2 v+^T M v+`` over ``(v+, c)`` with the dynamics (37), (38),
  non-interpenetration, ``c_N >= 0`` and the k-edge pyramid in its *edge* form (72) (the methods
  use the facet form) -- ``v+`` and the objective are unique (strictly convex in v+);
* Stage II (eqs. (102)-(112)): ``min |tau|^2`` over the Stage I optimal set, i.e. impulses with
  the same ``J_f^T c`` (unique ``v+``) -- ``tau`` is unique (strictly convex in tau);
* minimum-norm impulses for a given ``v+`` (what ``min_norm`` returns, docs/contact_methods.md).

States: random standing configurations (even seeds: the nominal stance, every contact point
on the plane -- indeterminate; odd seeds: joints perturbed) of the bundled quadruped (point
feet) and humanoid (sole corners), flat ground and a 15 degree slope, mu = 0.2 and 1, the
lowest contact touching, penetrating 1 mm, or hovering 3 mm above (inside the candidate
margin), random velocities.
solo12 (example-robot-data) is not included: the corpus loader / contact-point work of the other
issues has not landed, so it has no contact candidates here.

Tolerances: Clarabel is run to gaps of 1e-12 (relative); its solutions of these well-posed
problems are then accurate to ~1e-9 relative. Exact solves (lcp_noslip) are compared at 1e-6
relative to the quantity's scale; OSQP-based methods (qp_*, eps = 1e-7 N on forces) at the
solver tolerance times a factor stated at each assertion.
"""

from __future__ import annotations

import dataclasses
import functools

import clarabel
import numpy as np
import pinocchio as pin
import pytest
import scipy.sparse as sp
from contact_methods_helpers import tilted_q

from wbc_dynamics import RobotModel
from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.robots import robot_info, robot_path

G = 9.81
SLOPE = np.deg2rad(15.0)


# ----------------------------------------------------------------------------- models / states
@functools.cache
def _models(robot: str):
    m = RobotModel.from_urdf(robot_path(robot), floating_base=True)
    pm = pin.buildModelFromUrdf(robot_path(robot), pin.JointModelFreeFlyer())
    info = robot_info(robot)
    return m, pm, np.array(info["standing_q"]), float(info["total_mass"])


def _state(robot: str, seed: int, slope: bool, mu: float, offset: float, gap=None):
    """A random standing state and its problem (the project's assembly).

    The robot stands in its nominal pose rotated onto the plane, joints perturbed by a few
    centiradians, then moved along the plane normal so that the lowest contact point is at
    signed distance ``offset`` [m]. Returns (problem, pinocchio q, v, mass).
    """
    m, pm, q0, mass = _models(robot)
    rng = np.random.default_rng(seed)
    R = pin.rpy.rpyToMatrix(0.0, SLOPE, 0.0) if slope else np.eye(3)
    normal = R[:, 2]
    plane = HalfSpace.through_point("plane", [0.0, 0.0, 0.0], normal, mu=mu)
    q = tilted_q(q0, R)
    if seed % 2:  # odd seeds: joints perturbed (mm differences between the feet); even: all
        # contact points of the nominal stance on the plane (indeterminate contact)
        q[7:] += (0.03 if robot == "quadruped" else 0.02) * rng.standard_normal(m.nv - 6)
    cm = ContactModel(m, features=[plane], margin=0.01, dt=1e-3)
    p = cm.build(q, np.zeros(m.nv), np.zeros(m.nv - 6))
    q[:3] += (offset - float(np.min(p.phi))) * normal
    v = np.zeros(m.nv)
    v[:6] = 0.02 * rng.standard_normal(6)
    v[6:] = 0.1 * rng.standard_normal(m.nv - 6)
    qdd = rng.standard_normal(m.nv - 6)
    p = cm.build(q, v, qdd).validate()
    assert p.nc >= 1
    return p, q, v, mass


def _oracle_dynamics(pm, q, v, p):
    """Pinocchio M, h and the contact Jacobian rows [N; S; T] at the problem's points/frames."""
    d = pm.createData()
    M = pin.crba(pm, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(pm, d, q, v)
    pin.computeJointJacobians(pm, d, q)
    pin.updateFramePlacements(pm, d)
    rows = np.zeros((3, p.nc, p.nv))
    for i, cid in enumerate(p.contact_ids):
        fid = pm.getFrameId(cid[0])
        Jf = pin.getFrameJacobian(pm, d, fid, pin.LOCAL_WORLD_ALIGNED)
        r = p.points[i] - d.oMf[fid].translation
        Jp = Jf[:3] - pin.skew(r) @ Jf[3:]
        rows[:, i] = p.frames[i].T @ Jp
    return M, h, rows[0], rows[1], rows[2]


# ----------------------------------------------------------------------------- Clarabel
def _qp(P, q, A_eq, b_eq, A_in, b_in):
    """min 1/2 x^T P x + q^T x s.t. A_eq x = b_eq, A_in x <= b_in (Clarabel, tight gaps)."""
    n = q.shape[0]
    A_eq = A_eq.reshape(-1, n)
    if b_eq.size:  # Clarabel needs independent equality rows: keep an orthogonal row basis
        U, sv, Vt = np.linalg.svd(A_eq, full_matrices=False)
        r = int(np.sum(sv > 1e-12 * max(sv[0], 1e-300)))
        A_eq, b_eq = sv[:r, None] * Vt[:r], U[:, :r].T @ b_eq
    A = np.vstack([A_eq, A_in.reshape(-1, n)])
    b = np.concatenate([b_eq, b_in])
    cones = []
    if b_eq.size:
        cones.append(clarabel.ZeroConeT(b_eq.size))
    if b_in.size:
        cones.append(clarabel.NonnegativeConeT(b_in.size))
    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = 1e-12
    s.tol_feas = 1e-12
    s.tol_ktratio = 1e-10
    s.max_iter = 400
    sol = clarabel.DefaultSolver(sp.csc_matrix(np.triu(P)), q, sp.csc_matrix(A), b, cones,
                                 s).solve()
    assert str(sol.status) in ("Solved", "AlmostSolved"), sol.status
    return np.array(sol.x)


class Oracle:
    """Independent data of one problem: M, h, rows, f* and the index sets."""

    def __init__(self, robot, p, q, v):
        _, pm, _, _ = _models(robot)
        self.p = p
        self.M, self.h, self.N, self.S, self.T = _oracle_dynamics(pm, q, v, p)
        self.fstar = v - p.dt * np.linalg.solve(self.M, self.h)
        self.a = p.actuated
        self.f = p.free
        self.J = np.vstack([self.N, self.S, self.T])  # rows grouped (N; S; T)

    def noslip_velocity(self, qdot_des, noslip):
        """Unique v+ of the no-slip model (Sec. 4) for the contacts ``noslip`` (bool mask)."""
        p, M = self.p, self.M
        Aeq = np.vstack([np.eye(p.nv)[self.a], self.S[noslip], self.T[noslip]])
        beq = np.concatenate([qdot_des, np.zeros(2 * int(noslip.sum()))])
        return _qp(M, -M @ self.fstar, Aeq, beq, -self.N, p.phi / p.dt)

    def consistent_qdd(self, noslip, rng):
        """Desired accelerations the no-slip constraints can realize: a random post-step
        velocity near the free motion (|dv| ~ 0.05) projected (M metric) onto
        ``S v+ = T v+ = 0``, ``N v+ >= -phi/dt``; returns ``(P v+ - P v) / dt``."""
        p, M = self.p, self.M
        target = self.fstar + 0.05 * rng.standard_normal(p.nv)
        Aeq = np.vstack([self.S[noslip], self.T[noslip]])
        x = _qp(M, -M @ target, Aeq, np.zeros(Aeq.shape[0]), -self.N, p.phi / p.dt)
        return (x[self.a] - p.v[self.a]) / p.dt

    def min_norm_impulses(self, v_next, touching, tangential):
        """argmin |c|^2 over impulses realizing v_next (unactuated rows of eq. (37)), c_N >= 0
        where touching, 0 where not; (c_S, c_T) free where ``tangential``, else 0.
        Returns (impulses (nc, 3), tau)."""
        p, M = self.p, self.M
        nc = p.nc
        gen = M @ (v_next - self.fstar)  # = dt P^T tau + J^T c
        Jf = self.J[:, self.f]  # (3nc, nf)
        fix = np.concatenate([~touching, ~tangential, ~tangential])
        Aeq = np.vstack([Jf.T, np.eye(3 * nc)[fix]])
        beq = np.concatenate([gen[self.f], np.zeros(int(fix.sum()))])
        Ain = -np.eye(3 * nc)[:nc][touching]
        c = _qp(np.eye(3 * nc), np.zeros(3 * nc), Aeq, beq, Ain, np.zeros(Ain.shape[0]))
        tau = (gen - self.J.T @ c)[self.a] / p.dt
        return c.reshape(3, nc).T, tau


def _sets(p, gap):
    noslip = np.ones(p.nc, bool) if gap is None else p.phi <= gap
    return noslip


CASES = [(robot, seed, slope, mu, off)
         for robot, seeds in (("quadruped", (0, 1)), ("humanoid", (2, 3)))
         for seed in seeds
         for slope in (False, True)
         for mu in (0.2, 1.0)
         for off in (0.0, -1e-3, 3e-3)]


def _case_id(c):
    robot, seed, slope, mu, off = c
    return f"{robot}-{seed}-{'slope' if slope else 'flat'}-mu{mu}-{off * 1e3:+.0f}mm"


# ----------------------------------------------------------------------------- assembly
@pytest.mark.parametrize("case", CASES[::5], ids=_case_id)
def test_assembly_matches_pinocchio(case):
    """M^-1, h and the N, S, T rows of the assembled problem equal Pinocchio's (1e-10 rel)."""
    robot, seed, slope, mu, off = case
    p, q, v, _ = _state(robot, seed, slope, mu, off)
    o = Oracle(robot, p, q, v)
    Minv = np.linalg.inv(o.M)
    np.testing.assert_allclose(p.Minv, Minv, atol=1e-10 * np.abs(Minv).max())
    np.testing.assert_allclose(p.h, o.h, atol=1e-10 * max(1.0, np.abs(o.h).max()))
    for a, b in ((p.N, o.N), (p.S, o.S), (p.T, o.T)):
        np.testing.assert_allclose(a, b, atol=1e-10)


# ----------------------------------------------------------------------------- lcp_noslip
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_lcp_noslip_min_norm_is_the_oracle_solution(case):
    """lcp_noslip, ``min_norm=True``: v+ is the unique no-slip velocity, and the impulses are
    the minimum-norm impulses realizing it (the documented element of the solution set).

    Desired accelerations: consistent ones (from a random feasible v+, ``consistent_qdd``), so
    that the exact model applies without the Sec. 4.5 correction. Tolerances: v+ 1e-6 m/s
    per unit of max |v+|; impulses 1e-6 relative to m g dt plus the oracle's accuracy; no
    tangential impulse above what the oracle needs (the issue: up to 1e5 m g)."""
    robot, seed, slope, mu, off = case
    gap = 1e-6  # no-slip rows at touching contacts (eq. (34); the closed-loop setting)
    p0, q, v, mass = _state(robot, seed, slope, mu, off)
    o = Oracle(robot, p0, q, v)
    noslip = _sets(p0, gap)
    qdd = o.consistent_qdd(noslip, np.random.default_rng(seed))
    p = dataclasses.replace(p0, qdd_des=qdd, validated=False).validate()
    o.p = p
    vref = o.noslip_velocity(p.v[p.actuated] + p.dt * qdd, noslip)
    res = solve("lcp_noslip", p, SolverState(), min_norm=True, noslip_gap=gap)
    assert "fallback" not in res.stats.flags
    vscale = max(1.0, np.abs(vref).max())
    assert np.abs(res.v_next - vref).max() <= 1e-6 * vscale
    w = o.N @ vref + p.phi / p.dt
    touching = w <= 1e-3  # the method's min_norm_tol (= consistency_tol) classification
    cref, tref = o.min_norm_impulses(vref, touching, noslip)
    mgdt = mass * G * p.dt
    assert "min_norm" in res.stats.flags
    np.testing.assert_allclose(res.impulses, cref, atol=1e-6 * mgdt)
    np.testing.assert_allclose(res.tau, tref, atol=1e-6 * max(1.0, np.abs(tref).max()))
    assert np.linalg.norm(res.impulses) <= np.linalg.norm(cref) * (1 + 1e-6) + 1e-9 * mgdt
