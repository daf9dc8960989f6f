"""Touchdown / rebound options of the contact model (Zapolsky & Drumwright, Secs. 2.3.4, 3.2, 4).

* ``ContactModel(passive_impact=True, separation_tolerance=...)``: a passive inelastic no-slip
  impact removes the arriving / resting contact velocities before the inverse dynamics; checked
  against an independently formed Delassus solve with Pinocchio's mass matrix, the kinetic
  energy, and the impulse the solver then predicts for a foot arriving at 0.3 m/s.
* ``solve("lcp_noslip", ..., noslip_gap=...)``: no-slip rows only on touching contacts (eq. 34).
* ``ContactModel.excluded_links``: the planner's swing feet are not candidates.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from contact_helpers import G, eq37_residual_mform, pin_mass_bias, quadruped

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace, apply_passive_impact

V_TD = 0.3  # touchdown speed of the LF foot [m/s]


@functools.cache
def _model(passive: bool, tol: float = 0.0):
    m, pm, _, q0 = quadruped()
    return ContactModel(m, features=[HalfSpace.ground(0.0, mu=1.0)], margin=0.005, dt=1e-3,
                        phi_deadband=1e-4, passive_impact=passive, separation_tolerance=tol)


def _foot_velocity(q, foot: str, vel_world: np.ndarray) -> np.ndarray:
    """v with only the joints of ``foot``'s leg moving, foot point velocity = vel_world."""
    m, _, _, _ = quadruped()
    leg = foot.split("_")[0]
    cols = [6 + i for i, j in enumerate(m.joint_names) if j.startswith(leg + "_")]
    cm = _model(False)
    p = cm.build(q, np.zeros(m.nv), np.zeros(12))
    i = [k for k, cid in enumerate(p.contact_ids) if cid[0] == foot][0]
    J = np.vstack([p.N[i], p.S[i], p.T[i]])[:, cols]  # rows n, s, t (ground: z, x, y)
    local = np.array([vel_world[2], vel_world[0], vel_world[1]])
    v = np.zeros(m.nv)
    v[cols] = np.linalg.solve(J, local)
    return v


def _q_lifted(dz: float) -> np.ndarray:
    """Standing pose with the LF foot's reported distance (after the 0.1 mm deadband of
    ``_model``) equal to dz: LF joints moved along the foot's normal row (Newton)."""
    m, _, raw_cm, q0 = quadruped()  # raw_cm: no deadband
    q = q0.copy()
    cols = [6 + i for i, j in enumerate(m.joint_names) if j.startswith("LF_")]
    for _ in range(30):
        p = raw_cm.build(q, np.zeros(m.nv), np.zeros(12))
        i = [k for k, cid in enumerate(p.contact_ids) if cid[0] == "LF_foot"][0]
        err = dz + 1e-4 - p.phi[i]
        if abs(err) < 1e-12:
            break
        g = p.N[i][cols]
        q[[c + 1 for c in cols]] += g * err / (g @ g)
    return q


def test_passive_impact_matches_independent_delassus_solve():
    m, pm, _, q0 = quadruped()
    v = _foot_velocity(q0, "LF_foot", np.array([0.05, -0.02, -V_TD]))
    p = _model(True).build(q0, v, np.zeros(12))
    assert p.nc == 4 and np.all(p.phi == 0.0)
    M, _ = pin_mass_bias(pm, q0, v)
    J = np.vstack([p.N, p.S, p.T])
    # independent: min 1/2 |v' - v|_M^2 s.t. J v' = 0 by the KKT system with Pinocchio's M
    nv, r = M.shape[0], J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((r, r))]])
    sol = np.linalg.lstsq(K, np.concatenate([M @ v, np.zeros(r)]), rcond=1e-12)[0]
    np.testing.assert_allclose(p.v, sol[:nv], atol=1e-9)
    np.testing.assert_allclose(J @ p.v, 0.0, atol=1e-10)
    # impulses reproduce the velocity change, M (v' - v) = J^T lam
    lam = p.impact_impulses
    jt = p.N.T @ lam[:, 0] + p.S.T @ lam[:, 1] + p.T.T @ lam[:, 2]
    np.testing.assert_allclose(M @ (p.v - v), jt, atol=1e-9)
    # inelastic: kinetic energy decreases; the arriving foot gets a compressive impulse
    assert p.v @ M @ p.v < v @ M @ v
    lf = [k for k, cid in enumerate(p.contact_ids) if cid[0] == "LF_foot"][0]
    assert lam[lf, 0] > 0.0


def test_passive_impact_with_legs_no_impact_row_moves_matches_the_delassus_solve():
    """Two feet in the impact set: the other legs' coordinates enter no impact row (the kernel
    leaves them out of M^-1 J^T); the post-impact velocity is still the KKT solution with
    Pinocchio's M over all coordinates, and the other legs move as M couples them."""
    m, pm, _, q0 = quadruped()
    cm = ContactModel(m, features=[HalfSpace.ground(0.0, mu=1.0)], margin=0.005, dt=1e-3,
                      phi_deadband=1e-4, passive_impact=True)
    cm.excluded_links = frozenset({"RF_foot", "RH_foot"})
    v = _foot_velocity(q0, "LF_foot", np.array([0.05, -0.02, -V_TD]))
    p = cm.build(q0, v, np.zeros(12))
    assert p.nc == 2 and {cid[0] for cid in p.contact_ids} == {"LF_foot", "LH_foot"}
    J = np.vstack([p.N, p.S, p.T])
    right = [6 + i for i, j in enumerate(m.joint_names) if j.startswith(("RF_", "RH_"))]
    assert len(right) == 6 and np.all(J[:, right] == 0.0)
    M, _ = pin_mass_bias(pm, q0, v)
    nv, r = M.shape[0], J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((r, r))]])
    sol = np.linalg.lstsq(K, np.concatenate([M @ v, np.zeros(r)]), rcond=1e-12)[0]
    np.testing.assert_allclose(p.v, sol[:nv], atol=1e-9)
    np.testing.assert_allclose(J @ p.v, 0.0, atol=1e-10)
    assert np.max(np.abs(p.v[right])) > 1e-6  # coupled through M^-1: not left at zero


def test_touchdown_impulse_is_bounded_by_the_option():
    """A foot arriving at 0.3 m/s: without the option the rigid model must stop it within the
    tick (impulse ~ m_eff v, hundreds of N over 1 ms); with it the inverse dynamics predicts the
    resting load (the impact is passive and reported separately)."""
    m, pm, _, q0 = quadruped()
    mg = m.total_mass * G
    v = _foot_velocity(q0, "LF_foot", np.array([0.0, 0.0, -V_TD]))
    rest = solve("lcp_noslip", _model(False).build(q0, np.zeros(m.nv), np.zeros(12)),
                 SolverState(), min_norm=True)
    p_off = _model(False).build(q0, v, np.zeros(12))
    off = solve("lcp_noslip", p_off, SolverState(), min_norm=True)
    p_on = _model(True).build(q0, v, np.zeros(12))
    on = solve("lcp_noslip", p_on, SolverState(), min_norm=True)
    lf = [k for k, cid in enumerate(p_on.contact_ids) if cid[0] == "LF_foot"][0]
    # the literal model: a touchdown impulse far above the weight share
    assert off.contact_forces_local[:, 0].sum() > 3.0 * mg
    # with the option: what the solver predicts is at most the impulse needed to hold the
    # robot plus the arriving leg's momentum redistributed, i.e. close to the resting load ...
    fn_on = on.contact_forces_local[:, 0].sum()
    assert abs(fn_on - mg) < 0.1 * mg, fn_on
    # ... the impact itself is passive, compressive and at most the momentum of the whole robot
    # at the touchdown speed (its exact value is checked against the Delassus solve above)
    assert 0.0 < p_on.impact_impulses[lf, 0] <= m.total_mass * V_TD
    # torques stay near the resting ones (no drive saturation)
    assert np.max(np.abs(on.tau)) < np.max(np.abs(rest.tau)) + 0.5
    assert np.max(np.abs(off.tau)) > 3.0 * np.max(np.abs(on.tau))
    # eq. (37) holds for the returned problem (post-impact v) to rounding, and with the impact
    # impulses added it holds for the measured v
    M, _ = pin_mass_bias(pm, q0, v)
    assert eq37_residual_mform(M, p_on, on) < 1e-8
    total = on.impulses + p_on.impact_impulses
    gen = -p_on.dt * p_on.h
    gen[p_on.actuated] += p_on.dt * on.tau
    contact = p_on.N.T @ total[:, 0] + p_on.S.T @ total[:, 1] + p_on.T.T @ total[:, 2]
    r = M @ (on.v_next - v) - gen - contact
    assert np.max(np.abs(r)) < 1e-8 * max(1.0, np.max(np.abs(contact)))


@pytest.mark.parametrize("tol, included", [(0.0, False), (0.05, True)])
def test_separation_tolerance(tol, included):
    """A resting foot separating at 1 cm/s (soft-contact rebound): with tolerance 5 cm/s it is
    treated as resting (its normal velocity removed, a small tensile impulse <= m_eff * 1 cm/s);
    with 0 it is a genuine lift-off and keeps its velocity."""
    m, _, _, q0 = quadruped()
    v = _foot_velocity(q0, "LF_foot", np.array([0.0, 0.0, 0.01]))
    p = _model(True, tol).build(q0, v, np.zeros(12))
    lf = [k for k, cid in enumerate(p.contact_ids) if cid[0] == "LF_foot"][0]
    vn = p.N[lf] @ p.v
    if included:
        assert abs(vn) < 1e-10
        lam = p.impact_impulses[lf, 0]
        assert lam < 0.0 and abs(lam) <= m.total_mass * 0.01  # at most the robot's momentum
    else:
        assert vn == pytest.approx(0.01, rel=1e-9)
        np.testing.assert_allclose(p.impact_impulses[lf], 0.0)


def test_arriving_contact_closes_exactly_within_the_tick():
    """A foot 0.1 mm above the ground approaching at 0.3 m/s reaches it within the tick: the
    impact brings its normal velocity to -phi/dt (eq. (35) with equality), not beyond."""
    q = _q_lifted(1e-4)
    m, _, _, _ = quadruped()
    v = _foot_velocity(q, "LF_foot", np.array([0.0, 0.0, -V_TD]))
    p = _model(True).build(q, v, np.zeros(12))
    lf = [k for k, cid in enumerate(p.contact_ids) if cid[0] == "LF_foot"][0]
    assert p.phi[lf] == pytest.approx(1e-4, abs=2e-6)
    assert p.N[lf] @ p.v == pytest.approx(-p.phi[lf] / p.dt, abs=1e-9)
    # a foot that does not reach the ground within the tick is left alone
    v2 = _foot_velocity(q, "LF_foot", np.array([0.0, 0.0, -0.05]))
    p2 = _model(True).build(q, v2, np.zeros(12))
    assert p2.N[lf] @ p2.v == pytest.approx(-0.05, rel=1e-6)


def test_apply_passive_impact_without_a_set_is_a_no_op():
    m, _, _, q0 = quadruped()
    v = _foot_velocity(q0, "LF_foot", np.array([0.0, 0.0, 0.2]))  # clearly lifting off
    p = _model(False).build(q0, v, np.zeros(12))
    p.phi[:] = 1e-3  # all feet 1 mm up, none arriving within the tick
    lam = apply_passive_impact(p, 0.05)
    np.testing.assert_array_equal(lam, 0.0)
    np.testing.assert_array_equal(p.v, v)


def test_noslip_gap_drops_friction_rows_of_separated_candidates():
    """A swing foot 2 mm above the ground moving horizontally at 0.3 m/s: Sec. 4 as written
    (noslip_gap=None) demands it stop within the tick -> inconsistent, corrected accelerations
    of hundreds of rad/s^2; with noslip_gap (eq. 34) it carries only its normal row."""
    m, pm, _, _ = quadruped()
    q = _q_lifted(2e-3)
    v = _foot_velocity(q, "LF_foot", np.array([V_TD, 0.0, 0.0]))
    p = _model(False).build(q, v, np.zeros(12))
    lf = [k for k, cid in enumerate(p.contact_ids) if cid[0] == "LF_foot"][0]
    assert p.phi[lf] > 1e-3
    lit = solve("lcp_noslip", p, SolverState(), noslip_gap=None, rank_mass_ratio=0.0)
    gap = solve("lcp_noslip", p, SolverState(), noslip_gap=1e-6)
    # literal: the hovering foot's tangential rows are nearly dependent on the stance feet's
    # and stopping it within the tick takes absurd impulses / torques
    assert np.max(np.abs(lit.tau)) > 1e3
    # the scale-aware rank test (default rank_mass_ratio) drops those rows as dependent; the
    # Sec. 4.5 check still sees the hovering foot slide, no bounded correction can stop it, so
    # the literal model ends in its documented, flagged fallback instead of absurd torques
    scaled = solve("lcp_noslip", p, SolverState(), noslip_gap=None)
    assert {"fallback", "infeasible"} <= set(scaled.stats.flags)
    assert np.max(np.abs(scaled.tau)) < 5.0
    assert np.max(np.abs(gap.tau)) < 5.0  # N m, the 4 N m drives' range
    assert "inconsistent_corrected" not in gap.stats.flags and gap.consistent
    np.testing.assert_allclose(gap.qdd[p.actuated], p.qdd_des, atol=1e-7)
    np.testing.assert_allclose(gap.impulses[lf], 0.0, atol=1e-12)  # no force on the swing foot
    M, _ = pin_mass_bias(pm, q, v)
    assert eq37_residual_mform(M, p, gap) < 1e-8  # eq. (37) on the original problem
    assert p.dynamics_residual(gap.tau, gap.impulses, gap.v_next) < 1e-10
    # touching feet keep their no-slip rows
    others = [k for k in range(p.nc) if k != lf]
    np.testing.assert_allclose(p.S[others] @ gap.v_next, 0.0, atol=1e-6)
    np.testing.assert_allclose(p.T[others] @ gap.v_next, 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="noslip_gap"):
        from wbc_dynamics.contact.lcp_noslip import solve_lcp_noslip
        from wbc_dynamics.contact.problem import MethodState

        solve_lcp_noslip(p, MethodState(), noslip_gap=float("nan"))


def test_excluded_links_and_bad_tolerance():
    m, _, _, q0 = quadruped()
    cm = ContactModel(m, features=[HalfSpace.ground(0.0, mu=1.0)], margin=0.005, dt=1e-3)
    cm.excluded_links = frozenset({"LF_foot", "RH_foot"})
    p = cm.build(q0, np.zeros(m.nv), np.zeros(12))
    assert sorted(c[0] for c in p.contact_ids) == ["LH_foot", "RF_foot"]
    cm.excluded_links = frozenset()
    assert cm.build(q0, np.zeros(m.nv), np.zeros(12)).nc == 4
    with pytest.raises(ValueError, match="separation_tolerance"):
        ContactModel(m, features=[HalfSpace.ground(0.0)], separation_tolerance=-1.0)


def test_qp_noslip_noslip_gap():
    """qp_noslip (unbounded friction): with noslip_gap the hovering swing foot gets no friction
    impulse and eq. (37) still holds exactly; without it the QP brakes the foot through
    friction at a contact that does not touch."""
    m, pm, _, _ = quadruped()
    q = _q_lifted(2e-3)
    v = _foot_velocity(q, "LF_foot", np.array([V_TD, 0.0, 0.0]))
    p = _model(False).build(q, v, np.zeros(12))
    lf = [k for k, cid in enumerate(p.contact_ids) if cid[0] == "LF_foot"][0]
    lit = solve("qp_noslip", p, SolverState())
    gap = solve("qp_noslip", p, SolverState(), noslip_gap=1e-6)
    assert np.linalg.norm(lit.impulses[lf, 1:]) > 1e-3  # N s of friction without contact
    # (the normal impulse may be > 0: the convex model has no normal complementarity, Sec. 6)
    np.testing.assert_allclose(gap.impulses[lf, 1:], 0.0, atol=1e-6)
    M, _ = pin_mass_bias(pm, q, v)
    assert eq37_residual_mform(M, p, gap) < 1e-8
    np.testing.assert_allclose(gap.qdd[p.actuated], p.qdd_des, atol=1e-6)
