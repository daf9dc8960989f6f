"""Contact load / unload ramps: the weighted minimum-norm selection of ``lcp_noslip``
(``argmin sum_i w_i |c_i|^2`` among the impulses of the same v+) against an independent dense
solve, all-ones weights bit for bit the unweighted selection, the stance filter's ramp weights,
and go2's trot in the MuJoCo closed loop: a foot's load rises over the ramp after touch-down
and falls over the ramp before lift-off, the torque jumps at the transitions drop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from contact_helpers import quadruped, quadruped_on_ground

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.consistency import min_norm_impulses
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.contact.stance import SensingNoise, StanceFilter

FEET = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]


def _redundant_problem(rng, moving=True):
    """The bundled quadruped near its standing pose with three touching points per foot (12
    contacts: an indeterminate distribution), with ``moving`` a random joint velocity and
    random desired accelerations (else at rest)."""
    m, _, _, q0 = quadruped()
    q = q0.copy()
    q[0] += rng.uniform(-0.02, 0.02)
    extra = {}
    for f in FEET:
        R = m.frame_placement(q, f)[:3, :3]  # horizontal offsets: every sphere touches
        extra[f] = [(R.T @ [0.004, 0.0, 0.0], 0.0125), (R.T @ [0.0, 0.004, 0.0], 0.0125)]
    cm = ContactModel(m, features=[HalfSpace.ground()], extra_points=extra, margin=0.01)
    v = np.zeros(m.nv)
    v[6:] = 0.05 * rng.standard_normal(12) * moving
    p = cm.build(q, v, 2.0 * rng.standard_normal(12) * moving).validate()
    assert p.nc == 12
    return p


def _dense_weighted_min_norm(p, c_star, w, weights, tol):
    """Independent reference: ``min sum_i weights_i |c_i|^2`` subject to the free rows of
    eq. (37) at ``c_star`` (``J_f^T c = J_f^T c*``), ``c_N >= 0`` at touching contacts
    (``w_i <= tol`` or loaded), ``c_N = 0`` at separating ones, tangential impulses only where
    the contact has no-slip rows. Every face of the sign constraints is enumerated (its
    equality-constrained weighted least-norm point by numpy's pseudo-inverse); the optimum is
    the best feasible one."""
    nc = p.nc
    A = np.zeros((p.free.size, 3 * nc))
    for i in range(nc):
        A[:, 3 * i] = p.N[i, p.free]
        A[:, 3 * i + 1] = p.S[i, p.free]
        A[:, 3 * i + 2] = p.T[i, p.free]
    c0 = c_star.reshape(-1)
    b = A @ c0
    signed = [3 * i for i in range(nc) if w[i] <= tol or c_star[i, 0] > 0.0]
    fixed = [3 * i for i in range(nc) if 3 * i not in signed]
    fixed += [3 * i + r for i in range(nc) for r in (1, 2)
              if not (np.any(p.S[i]) or np.any(p.T[i]))]
    scale = np.repeat(1.0 / np.sqrt(weights), 3)
    best, best_obj = None, np.inf
    for k in range(len(signed) + 1):
        for zero in itertools.combinations(signed, k):
            cols = [j for j in range(3 * nc) if j not in fixed and j not in zero]
            As = A[:, cols] * scale[cols]
            y = np.linalg.pinv(As, rcond=1e-13) @ b
            c = np.zeros(3 * nc)
            c[cols] = scale[cols] * y
            if np.max(np.abs(A @ c - b)) > 1e-9 * max(np.max(np.abs(b)), 1e-12):
                continue
            if min((c[j] for j in signed), default=0.0) < -1e-12:
                continue
            obj = float(np.sum(np.repeat(weights, 3) * c * c))
            if obj < best_obj:
                best, best_obj = c, obj
    return best.reshape(nc, 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_selection_matches_a_dense_enumeration(seed):
    """Random states with 12 touching contacts and random weights in [1, 100]: the compiled
    weighted selection equals the dense enumeration to 1e-9 (relative to the largest
    impulse), v+ is the unweighted one, and a weighted contact carries less than unweighted."""
    rng = np.random.default_rng(seed)
    p = _redundant_problem(rng)
    r = solve("lcp_noslip", p, SolverState())  # a vertex solution c*
    assert "fallback" not in r.stats.flags
    w = p.N @ r.v_next + p.phi / p.dt
    weights = rng.uniform(1.0, 100.0, p.nc)
    imp, tau, v_next, ok, _ = min_norm_impulses(p, r.impulses, r.tau, r.v_next, w,
                                                tol=1e-3, weights=weights)
    assert ok
    ref = _dense_weighted_min_norm(p, r.impulses, w, weights, 1e-3)
    scale = np.max(np.abs(ref))
    np.testing.assert_allclose(imp, ref, atol=1e-9 * scale, rtol=0)
    np.testing.assert_allclose(v_next, r.v_next, atol=1e-9)
    # the heaviest contact's share falls against the unweighted selection's
    imp1, *_ = min_norm_impulses(p, r.impulses, r.tau, r.v_next, w, tol=1e-3)
    j = int(np.argmax(weights))
    assert np.linalg.norm(imp[j]) < np.linalg.norm(imp1[j])


def test_all_ones_weights_are_the_unweighted_selection_bit_for_bit():
    """weights 1 (given, or from the problem) give exactly the numbers of no weights, through
    the Python API and through ``solve``."""
    rng = np.random.default_rng(3)
    p = _redundant_problem(rng)
    r = solve("lcp_noslip", p, SolverState())
    w = p.N @ r.v_next + p.phi / p.dt
    a = min_norm_impulses(p, r.impulses, r.tau, r.v_next, w, tol=1e-3)
    b = min_norm_impulses(p, r.impulses, r.tau, r.v_next, w, tol=1e-3, weights=np.ones(p.nc))
    for x, y in zip(a[:3], b[:3], strict=True):
        assert np.array_equal(x, y)
    p.weights = None
    s1 = solve("lcp_noslip", p, SolverState(), min_norm=True)
    p.weights = np.ones(p.nc)
    s2 = solve("lcp_noslip", p, SolverState(), min_norm=True)
    assert np.array_equal(s1.tau, s2.tau) and np.array_equal(s1.impulses, s2.impulses)
    # the weights reach the selection: standing, two of each foot's three points weighted
    # (the third can carry their share)
    p = _redundant_problem(rng, moving=False)
    s1 = solve("lcp_noslip", p, SolverState(), min_norm=True)
    heavy = np.array([cid[1] != 0 for cid in p.contact_ids])
    p.weights = np.where(heavy, 100.0, 1.0)
    s3 = solve("lcp_noslip", p, SolverState(), min_norm=True)
    np.testing.assert_allclose(s3.v_next, s1.v_next, atol=1e-9)
    assert np.sum(s3.impulses[heavy, 0]) < 0.1 * np.sum(s1.impulses[heavy, 0])
    assert np.sum(s3.impulses[:, 0]) == pytest.approx(np.sum(s1.impulses[:, 0]), rel=1e-9)


def test_a_needed_contact_stays_loaded_and_bad_weights_are_rejected():
    """Weights never make a contact that the motion needs unloaded: one foot down (the others
    left out), weight 100, the same impulse as weight 1. Weights < 1 or non-finite raise a
    ValueError naming the field."""
    m, _, cm, q0 = quadruped()
    cm.excluded_links = frozenset(FEET[1:])
    p = cm.build(q0, np.zeros(m.nv), np.zeros(12))
    cm.excluded_links = frozenset()
    assert p.nc == 1
    a = solve("lcp_noslip", p, SolverState(), min_norm=True)
    p.weights = np.array([100.0])
    b = solve("lcp_noslip", p, SolverState(), min_norm=True)
    np.testing.assert_allclose(b.impulses, a.impulses, atol=1e-12)
    for bad in (np.array([0.5]), np.array([np.nan]), np.ones(2)):
        p.weights, p.validated = bad, False
        with pytest.raises(ValueError, match="weights"):
            solve("lcp_noslip", p, SolverState(), min_norm=True)


def test_stance_filter_ramp_weights():
    """The filter's weights per link: max_weight at the touch, ``ramp / t`` after it, 1 after
    the ramp; an announced release raises it over the last ``unload_ramp`` before it; a
    released link's spheres go back to 1; they are the contact model's ``sphere_weight``."""
    _, cm, q = quadruped_on_ground(FEET)
    cm.excluded_links = frozenset()
    f = StanceFilter(cm, SensingNoise(), load_ramp=0.02, unload_ramp=0.01, max_weight=50.0)
    assert f.data.weight is cm.data.sphere_weight
    v = np.zeros(cm.robot.nv)
    weights = []
    for _ in range(25):
        assert f.update(q.copy(), v.copy()) == 4
        weights.append(f.link_weights["LF_foot"])
    assert weights[0] == 50.0  # touched this tick: 0.02 / 0 capped at max_weight
    assert weights[10] == pytest.approx(2.0) and weights[5] == pytest.approx(4.0)
    assert weights[24] == 1.0
    f.set_swing([], {"LF_foot": 0.005})
    f.update(q.copy(), v.copy())
    assert f.link_weights["LF_foot"] == pytest.approx(2.0)  # 0.01 / 0.005
    assert f.link_weights["RF_foot"] == 1.0
    f.update(q.copy(), v.copy())
    assert f.link_weights["LF_foot"] == pytest.approx(2.5)  # 0.01 / 0.004
    f.set_swing(["LF_foot"])
    f.update(q.copy(), v.copy())
    assert "LF_foot" not in f.stance_links and f.link_weights["LF_foot"] == 1.0
    for bad in ({"nope": 0.1}, {"RF_foot": -1.0}, {"RF_foot": float("nan")}):
        with pytest.raises(ValueError, match="lift_off_in"):
            f.set_swing([], bad)
    with pytest.raises(ValueError, match="max_weight"):
        StanceFilter(cm, SensingNoise(), max_weight=0.5)
    with pytest.raises(ValueError, match="load_ramp"):
        StanceFilter(cm, SensingNoise(), load_ramp=-1.0)


def _trot(controller_options: dict) -> dict:
    """go2's shipped trot at 0.3 m/s for 2 s with ``controller_options`` over its
    configuration: per tick the commanded normal force of each foot [N] (its contacts' forces
    along their normals), the stance decisions, the commanded torques [N m]."""
    from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config

    cfg = shipped_loop_config("go2", "walk", 2.0, controller_options=controller_options)
    cfg.reference_options = {"velocity": [0.3, 0.0, 0.0]}
    loop = ClosedLoop(cfg)
    ctl = loop.ctl.ctl
    links = list(ctl.contact_links)
    log: dict[str, list] = {"force": [], "stance": [], "tau": []}

    def record(t, plant):
        out = ctl.last_output
        f = np.zeros(len(links))
        for cid, fw, n in zip(out.contact_ids, out.contact_forces, out.contact_normals,
                              strict=True):
            f[links.index(cid[0])] += float(fw @ n)
        log["force"].append(f)
        log["stance"].append([ln in ctl.contact_state.stance_links for ln in links])
        log["tau"].append(out.tau.copy())

    r = loop.run(on_step=record)
    assert not r.failed, r.failure
    out = {k: np.array(v) for k, v in log.items()}
    out["pos_err"] = r.metrics()["pos_err"]
    return out


def _transitions(log: dict, skip: int = 300):
    """Per foot and touch-down / lift-off after ``skip`` ticks: the force at the first stance
    tick over its mean 25-35 ticks later, the force at the last stance tick over its mean
    25-35 ticks before, and the largest per-tick torque change [N m] within 5 ticks of each
    stance change."""
    F, S, tau = log["force"], log["stance"], log["tau"]
    touch, lift = [], []
    for j in range(S.shape[1]):
        for k in np.flatnonzero(S[1:, j] & ~S[:-1, j]) + 1:
            if skip < k < len(F) - 40:
                touch.append(F[k, j] / F[k + 25:k + 35, j].mean())
        for k in np.flatnonzero(~S[1:, j] & S[:-1, j]) + 1:
            if k > skip:
                lift.append(F[k - 1, j] / F[k - 35:k - 25, j].mean())
    jump = np.abs(np.diff(tau, axis=0)).max(axis=1)
    changes = np.flatnonzero(np.any(S[1:] != S[:-1], axis=1)) + 1
    peaks = [jump[k - 6:k + 5].max() for k in changes if k > skip]
    return np.array(touch), np.array(lift), np.array(peaks)


def test_go2_trot_ramps_the_load_at_touch_down_and_lift_off():
    """go2's shipped configuration (contact_load_ramp = contact_unload_ramp = 20 ms: the
    trot's 20 ms double support hands the load over) against the same without the ramps
    (2 s, 0.3 m/s, after the first 0.3 s; measured values in brackets, ramps / steps):

    * lift-off: at its last stance tick a foot carries a median of < 15 % of its load 25-35
      ticks before (0.09 / 0.47);
    * touch-down: at least 40 % of the landing feet carry < 5 % at their first stance tick of
      their load 25-35 ticks later (50 % / none: 0.27-0.31). The others (one foot of each
      landing pair) carry ~0.63 (0.75 without) at once: the trunk's rotation about the
      support diagonal, uncontrollable on two feet, is corrected as soon as that foot lands,
      and only it can -- the weights choose among the impulses of the same motion only;
    * the mean peak per-tick torque jump at the stance changes drops by a quarter
      (1.43 / 2.22 N m);
    * joint tracking no worse (mean |q - q_des| within 5 %: 0.0716 / 0.0725 rad).
    """
    ramps = _trot({})
    steps = _trot({"contact_load_ramp": 0.0, "contact_unload_ramp": 0.0})
    touch, lift, peaks = _transitions(ramps)
    touch0, lift0, peaks0 = _transitions(steps)
    assert len(touch) >= 8 and len(lift) >= 8
    assert np.median(lift) < 0.15 and np.median(lift0) > 0.4
    assert np.mean(touch < 0.05) >= 0.4 and not np.any(touch0 < 0.05)
    assert np.mean(peaks) < 0.75 * np.mean(peaks0)
    assert ramps["pos_err"] < 1.05 * steps["pos_err"]


_FILTERED = {"robot": "quadruped", "floating_base": True, "method": "lcp_noslip",
             "noslip_min_norm": True, "contact_state_filter": True}


@pytest.mark.parametrize("change, missing", [
    ({}, None),
    ({"contact_state_filter": False}, "contact_state_filter: true"),
    ({"noslip_min_norm": False}, "noslip_min_norm: true"),
    ({"method": "qp_noslip"}, "method: lcp_noslip"),
    ({"method": "lcp_coulomb", "contact_state_filter": False},
     "contact_state_filter: true, method: lcp_noslip"),
])
def test_ramps_set_where_they_cannot_act_are_warned_about_by_name(change, missing):
    """The ramps weight the filter's minimum-norm impulses of lcp_noslip: set (> 0) without the
    contact state filter, lcp_noslip or noslip_min_norm the controller warns once, naming the
    ramp fields set and the settings they need; set where they act, or left at 0, it does not."""
    from wbc_dynamics.controller import WholeBodyController

    cfg = {**_FILTERED, **change}
    ramped = WholeBodyController({**cfg, "contact_load_ramp": 0.02, "contact_unload_ramp": 0.0})
    notes = [w for w in ramped.load_warnings if "ramp" in w]
    if missing is None:
        assert notes == []
    else:
        assert len(notes) == 1
        assert notes[0].startswith(f"contact_load_ramp: no effect without {missing}:")
        assert "contact_unload_ramp" not in notes[0]
    both = WholeBodyController({**cfg, "contact_load_ramp": 0.02, "contact_unload_ramp": 0.03})
    notes = [w for w in both.load_warnings if "ramp" in w]
    assert len(notes) == (0 if missing is None else 1)
    if notes:
        assert notes[0].startswith("contact_load_ramp and contact_unload_ramp: no effect")
    unset = WholeBodyController(cfg)
    assert not [w for w in unset.load_warnings if "ramp" in w]


def test_a_bad_ramp_is_refused_by_name_even_where_ramps_cannot_act():
    """A negative ramp is a ValueError naming it, with or without the contact state filter."""
    from wbc_dynamics.controller import WholeBodyController

    for flt in (True, False):
        with pytest.raises(ValueError, match="contact_unload_ramp"):
            WholeBodyController({**_FILTERED, "contact_state_filter": flt,
                                 "contact_unload_ramp": -0.01})
