"""The compiled ``lcp_noslip`` / ``lcp_coulomb`` ticks (wbc_dynamics.contact.tick) equal
ContactModel.build + solve -- the oracle-tested general path -- tick by tick, warm start included.
Both run the method's one solve kernel; the tick assembles the problem itself (kinematics,
candidates, M^-1, h in its own buffers) and maps the warm start by candidate slot instead of
contact identity, so the comparison checks that assembly and that mapping (to 1e-8 relative: the
assembly's arrays are laid out and summed differently, which the ill-conditioned correction QP
amplifies).

Sequences of random states around the standing pose (joint offsets, base height so that feet
touch, separate and penetrate, velocities, inconsistent desired accelerations that trigger the
Sec. 4.5 correction), for the shipped quadruped options (passive impact, dead band, noslip_gap,
min-norm) and the plain ones, the humanoid's eight sole corners, and swing feet excluded.
"""

from __future__ import annotations

import numpy as np
import pytest
from dense_qp_helpers import tick_states
from numba.core.dispatcher import Dispatcher

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.contact.tick import CoulombTick, NoslipTick, compiled_tick
from wbc_dynamics.model import RobotModel
from wbc_dynamics.robots import robot_info, robot_path


def _states(m, q0, n, rng):
    return tick_states(m, q0, n, rng)


def _setup(robot, cm_opts):
    m = RobotModel.from_urdf(robot_path(robot), floating_base=True)
    info = robot_info(robot)
    cm = ContactModel(m, contact_links=info["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3, **cm_opts)
    return m, info, cm


def _compare_sequence(method, fused, m, info, cm, opts, seed):
    """40 ticks of the compiled tick against build + solve; returns the reference's flags."""
    q0 = np.array(info["standing_q"])
    st_ref, st_fused = SolverState(), SolverState()
    rng = np.random.default_rng(seed)
    seen_flags, solved, generic = set(), 0, 0
    for k, (q, v, qdd) in enumerate(_states(m, q0, 40, rng)):
        if k == 25:  # a swing foot (the gait's schedule) for the rest of the sequence
            cm.excluded_links = frozenset([info["contact_links"][0]])
        ms = st_fused.get(method)
        ok = fused.run(q, v, qdd, ms)
        ref = solve(method, cm.build(q, v, qdd), st_ref, **opts)
        if not ok:  # rare cases go to the general path: the controller then calls solve
            assert {"fallback", "no_contacts"} & set(ref.stats.flags), ref.stats.flags
            generic += 1
            fused.export_warm(ms)
            solve(method, cm.build(q, v, qdd), st_fused, **opts)
            continue
        solved += 1
        nc = fused.nc
        assert fused.contact_ids() == ref.contact_ids
        assert fused.flags == ref.stats.flags
        assert fused.warm_start_used == ref.stats.warm_start_used
        scale = 1.0 + np.max(np.abs(ref.tau))
        np.testing.assert_allclose(fused.out.tau, ref.tau, atol=1e-8 * scale, rtol=0)
        np.testing.assert_allclose(fused.out.impulses[:nc], ref.impulses, atol=1e-8 * scale,
                                   rtol=0)
        np.testing.assert_allclose(fused.out.forces_world[:nc], ref.contact_forces_world,
                                   atol=1e-6 * scale, rtol=0)
        a, b = st_fused.get(method), st_ref.get(method)
        assert a.active_ids == b.active_ids and a.contact_ids == b.contact_ids
        seen_flags.update(ref.stats.flags)
    assert solved >= 20 and solved + generic == 40
    assert not isinstance(fused._entry, Dispatcher)  # called through its bound entry point
    return seen_flags


CASES = {
    "quadruped_shipped": ("quadruped", dict(phi_deadband=1e-4, passive_impact=True,
                                            separation_tolerance=0.05), 1e-6, True),
    "quadruped_plain": ("quadruped", {}, None, False),
    "humanoid_min_norm": ("humanoid", {}, None, True),
    # the exact MLCP (relative rank test alone) instead of the default scale-aware one
    "quadruped_exact_rank": ("quadruped", dict(phi_deadband=1e-4, passive_impact=True,
                                               separation_tolerance=0.05), 1e-6, True, 0.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_tick_equals_build_and_solve(case):
    robot, cm_opts, gap, min_norm, *ratio = CASES[case]
    m, info, cm = _setup(robot, cm_opts)
    opts = {"min_norm": min_norm, **({} if gap is None else {"noslip_gap": gap}),
            **({"rank_mass_ratio": ratio[0]} if ratio else {})}
    fused = compiled_tick(cm, "lcp_noslip", opts)
    assert isinstance(fused, NoslipTick)
    assert fused.options.solve.min_pivot == (1.0 / (100.0 * m.total_mass) if not ratio else 0.0)
    flags = _compare_sequence("lcp_noslip", fused, m, info, cm, opts, 7)
    # the sequence exercises the correction and (with the option) the min-norm selection
    assert "inconsistent_corrected" in flags
    if min_norm:
        assert "min_norm" in flags


COULOMB_CASES = {
    "quadruped_tracking": ("quadruped", dict(phi_deadband=1e-4, passive_impact=True,
                                             separation_tolerance=0.05), True),
    "quadruped_plain": ("quadruped", {}, False),
    "humanoid_plain": ("humanoid", {}, False),
}


@pytest.mark.parametrize("case", sorted(COULOMB_CASES))
def test_compiled_coulomb_tick_equals_build_and_solve(case):
    robot, cm_opts, tracking = COULOMB_CASES[case]
    m, info, cm = _setup(robot, cm_opts)
    fused = CoulombTick(cm, sticking_correction=tracking, min_norm=tracking)
    opts = {"sticking_correction": tracking, "min_norm": tracking}
    flags = _compare_sequence("lcp_coulomb", fused, m, info, cm, opts, 11)
    if tracking:
        assert {"inconsistent_corrected", "min_norm"} <= flags, flags


def _tick_problem(cm, nc, qdd):
    """The problem the compiled tick just solved, from its own buffers (after its assembly,
    passive impact and ``noslip_gap`` rows)."""
    from wbc_dynamics.contact import ContactProblem

    d = cm.data
    return ContactProblem(
        dt=cm.dt, Minv=d.Minv.copy(), h=d.h.copy(), v=d.v.copy(), actuated=cm.actuated,
        free=cm.free, qdd_des=qdd.copy(), N=d.N[:nc].copy(), S=d.S[:nc].copy(),
        T=d.T[:nc].copy(), phi=d.phi[:nc].copy(), mu=d.mu[:nc].copy(),
        contact_ids=cm.ids_of(d.slot[:nc]), points=d.points[:nc].copy(),
        frames=d.frames[:nc].copy(), friction_edges=cm.friction_edges,
        total_mass=cm.total_mass)


@pytest.mark.parametrize("method", ["lcp_noslip", "lcp_coulomb"])
def test_tick_and_solve_run_one_solve_kernel(method):
    """On the problem the tick assembled, ``solve`` returns the tick's numbers bitwise (torques,
    impulses, flags, warm-start use and the next warm start), tick after tick: one solve
    kernel, the warm start mapped by slot (tick) and by contact identity (solve) alike."""
    robot, cm_opts = "quadruped", dict(phi_deadband=1e-4, passive_impact=True,
                                       separation_tolerance=0.05)
    m, info, cm = _setup(robot, cm_opts)
    opts = ({"min_norm": True, "noslip_gap": 1e-6} if method == "lcp_noslip"
            else {"sticking_correction": True, "min_norm": True})
    fused = compiled_tick(cm, method, opts)
    st_tick, st_solve = SolverState(), SolverState()
    rng = np.random.default_rng(3)
    solved, flags = 0, set()
    for q, v, qdd in _states(m, np.array(info["standing_q"]), 30, rng):
        if not fused.run(q, v, qdd, st_tick.get(method)):
            continue
        solved += 1
        ref = solve(method, _tick_problem(cm, fused.nc, qdd), st_solve, **opts)
        assert fused.flags == ref.stats.flags
        assert fused.warm_start_used == ref.stats.warm_start_used
        np.testing.assert_array_equal(fused.out.tau, ref.tau)
        np.testing.assert_array_equal(fused.out.impulses[:fused.nc], ref.impulses)
        a, b = st_tick.get(method), st_solve.get(method)
        assert a.active_ids == b.active_ids and a.contact_ids == b.contact_ids
        flags.update(ref.stats.flags)
    assert solved >= 25
    assert {"inconsistent_corrected", "min_norm"} <= flags, flags


def test_no_contact_goes_to_the_general_path():
    m = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q = np.array(robot_info("quadruped")["standing_q"])
    q[2] += 0.2  # feet 20 cm above the ground: no candidate
    cm = ContactModel(m, features=[HalfSpace.ground(0.0)], margin=0.005, dt=1e-3)
    fused = NoslipTick(cm)
    assert not fused.run(q, np.zeros(m.nv), np.zeros(12), None)
    with pytest.raises(ValueError, match="quaternion"):
        q[3:7] = (0.0, 0.0, 0.0, 2.0)
        fused.run(q, np.zeros(m.nv), np.zeros(12), None)


def test_controller_honours_solver_state_options():
    """Options given through ``solver_state.options`` (as the closed loop does) select the
    compiled tick with those options: same torques and flags as build + solve with them."""
    from wbc_dynamics.controller import WholeBodyController

    info = robot_info("quadruped")
    q = np.array(info["standing_q"])
    ctl = WholeBodyController({"robot": "quadruped", "floating_base": True,
                               "method": "lcp_noslip", "warm_start": False})
    ctl.solver_state.options["lcp_noslip"] = {"min_norm": True, "noslip_gap": 1e-6}
    ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_joint_state(q[7:], np.zeros(12), 0.0)
    ctl.set_reference(np.zeros(12), 0.0)
    out = ctl.update(0.0)
    ref = solve("lcp_noslip", ctl._contact_model.build(q, np.zeros(18), np.zeros(12)), None,
                min_norm=True, noslip_gap=1e-6)
    assert out.solver_flags == ref.stats.flags and "min_norm" in out.solver_flags
    np.testing.assert_allclose(out.tau, ref.tau, atol=1e-9 * (1 + np.abs(ref.tau).max()))


# ---------------------------------------------------------------- the QP methods (qp_tick)
from wbc_dynamics.contact import qp_osqp as qp_module  # noqa: E402
from wbc_dynamics.contact.qp_tick import QPTick  # noqa: E402

#: the controller's options of the QP methods (config/*.yaml: coulomb_tracking, noslip_gap)
QP_TRACKING = {"sticking_correction": True, "stage1_objective": "contact_velocity",
               "friction_gap": 1e-6}
#: the OSQP tests below (the default solver is the exact active-set method)
OSQP = {"qp_solver": "osqp"}
SHIPPED_QUADRUPED = dict(phi_deadband=1e-4, passive_impact=True, separation_tolerance=0.05)


def _qp_schedule(info, k):
    """The gait's contact schedule of tick k: a swing foot / two swing feet / flight, with
    returns to earlier contact sets (every path of the solver cache: first use of a contact
    count, continuation, a set change on a used count, the general path in between)."""
    links = info["contact_links"]
    phase = (k // 6) % 6
    if phase == 1:
        return frozenset([links[0]])
    if phase == 3:
        return frozenset([links[0], links[-1]])
    if phase == 4:
        return frozenset([links[1]])
    return frozenset()


def _compare_qp(method, robot, cm_opts, opts, seed, n=60, flight=(40,), warm=True):
    """n ticks of QPTick against build + solve (warm-started SolverStates, or cold), through
    the contact-set changes of :func:`_qp_schedule` and a flight tick (the general path).

    Identities and warm-start use must be equal on every tick, the flags up to
    ``iteration_limit`` (which of two runs stops at OSQP's iteration limit can differ when one
    converges in about max_iter iterations). Returns [(tick, reference result, fused tau,
    fused world forces, fused flags)] of the compiled ticks."""
    m, info, cm = _setup(robot, cm_opts)
    fused = compiled_tick(cm, method, opts)
    assert isinstance(fused, QPTick)
    q0 = np.array(info["standing_q"])
    st_ref, st_fused = SolverState(), SolverState()
    rng = np.random.default_rng(seed)
    rows, generic = [], 0
    for k, (q, v, qdd) in enumerate(_states(m, q0, n, rng)):
        cm.excluded_links = _qp_schedule(info, k)
        if k in flight:
            q[2] += 0.2  # no candidate: the general path (its no-contact result)
        ms = st_fused.get(method) if warm else None
        ok = fused.run(q, v, qdd, ms)
        ref = solve(method, cm.build(q, v, qdd), st_ref if warm else None, **opts)
        if not ok:
            assert "no_contacts" in ref.stats.flags, ref.stats.flags
            generic += 1
            fused.export_warm(ms)
            solve(method, cm.build(q, v, qdd), st_fused if warm else None, **opts)
            continue
        assert fused.contact_ids() == ref.contact_ids
        assert fused.warm_start_used == ref.stats.warm_start_used, k
        assert _no_limit(fused.flags) == _no_limit(ref.stats.flags), (k, fused.flags,
                                                                      ref.stats.flags)
        if warm:
            a, b = st_fused.get(method), st_ref.get(method)
            assert a.contact_ids == b.contact_ids
            np.testing.assert_array_equal(a.data["tau"], fused.out.tau)
        rows.append((k, ref, fused.out.tau.copy(), fused.out.forces_world[:fused.nc].copy(),
                     fused.flags))
    assert generic == sum(0 <= f < n for f in flight)
    assert len(rows) == n - generic
    assert not isinstance(fused._entry, Dispatcher)  # its bound entry point
    return rows, fused


def _no_limit(flags):
    return tuple(f for f in flags if f != "iteration_limit")


def _converged(rows):
    """The ticks on which OSQP converged in both runs (no ``iteration_limit``)."""
    return [r for r in rows if "iteration_limit" not in r[1].stats.flags + r[4]]


def _assert_close(rows, tol, forces=True):
    """tau [N m] (and world forces [N]) within ``tol`` x (1 + max |reference|)."""
    for k, ref, tau, fw, _ in rows:
        np.testing.assert_allclose(tau, ref.tau, rtol=0, atol=tol * (1 + np.abs(ref.tau).max()),
                                   err_msg=f"tick {k}")
        if forces:
            fs = 1.0 + np.abs(ref.contact_forces_world).max()
            np.testing.assert_allclose(fw, ref.contact_forces_world, rtol=0, atol=tol * fs,
                                       err_msg=f"tick {k}")


QP_CASES = {
    "qp_coulomb_shipped": ("qp_coulomb", SHIPPED_QUADRUPED, QP_TRACKING),
    "qp_coulomb_plain": ("qp_coulomb", {}, {}),
    "qp_noslip_shipped": ("qp_noslip", SHIPPED_QUADRUPED, {"noslip_gap": 1e-6}),
    "qp_noslip_plain": ("qp_noslip", {}, {}),
    # the quadruped closed loop's qp_noslip (sim.closed_loop.QUADRUPED_SOLVER_OPTIONS)
    "qp_noslip_loop": ("qp_noslip", SHIPPED_QUADRUPED, {
        "noslip_gap": 1e-6, "stage1_objective": "contact_velocity", "sticking_correction": True,
        "rank_mass_ratio": 100.0}),
}


@pytest.mark.parametrize("case", sorted(QP_CASES))
def test_compiled_qp_tick_equals_build_and_solve_quadruped(case):
    """The quadruped, warm-started through contact-set changes (swing feet, a flight phase)
    and cold (fresh solvers every tick): where OSQP converged in both runs, tau and forces to
    1e-5 relative (measured <= 3e-7; OSQP's eps is 1e-7 in N).

    A contact-set change resets the cached solver of that contact count to a fresh setup's
    state, which equals a new setup only to rounding error (OSQP rescales the data on every
    update); where OSQP then stops at its iteration limit, that rounding changes the returned
    iterate (the general path's own result changes as much under a rounding-level
    perturbation), so those ticks are compared in identities and flags only. Continuing the
    same OSQP state, both agree bitwise (test below)."""
    method, cm_opts, opts = QP_CASES[case]
    opts = {**opts, **OSQP}
    rows, fused = _compare_qp(method, "quadruped", cm_opts, opts, 5)
    conv = _converged(rows)
    assert len(conv) >= 20
    _assert_close(conv, 1e-5)
    flags = {f for _, ref, _, _, _ in rows for f in ref.stats.flags}
    assert "min_norm" in flags
    if opts.get("sticking_correction"):
        assert "inconsistent_corrected" in flags
    if opts.get("rank_mass_ratio"):
        assert "rows_dropped" in flags
    # the solver cache: one Stage I solver per contact count that occurred (4, 3, 2 contacts)
    assert sorted(fused._s1) == [2, 3, 4]
    rows, _ = _compare_qp(method, "quadruped", cm_opts, opts, 6, n=30, warm=False)
    conv = _converged(rows)
    assert len(conv) >= 10
    _assert_close(conv, 1e-5)


@pytest.mark.parametrize("robot", ["quadruped", "humanoid"])
def test_compiled_qp_tick_continuation_is_bitwise(robot):
    """One contact set throughout (every foot / sole corner 1 mm inside the ground), with a
    flight tick (the general path) in between: both paths set up the same solvers and continue
    the same OSQP states, so they agree to rounding error on every tick -- also where OSQP
    stops at its iteration limit (most humanoid ticks), where the result depends on every bit
    of the iterate."""
    for method in ("qp_coulomb", "qp_noslip"):
        m, info, cm = _setup(robot, {})
        fused = compiled_tick(cm, method, OSQP)
        q0 = np.array(info["standing_q"])
        st_ref, st_fused = SolverState(), SolverState()
        rng = np.random.default_rng(2)
        limits = 0
        ncs = set()
        for k in range(12):
            q = q0.copy()
            q[2] += 0.2 if k == 6 else -0.001
            v = rng.normal(0.0, 0.05, m.nv)
            qdd = rng.normal(0.0, 2.0, m.nv - 6)
            ms = st_fused.get(method)
            ok = fused.run(q, v, qdd, ms)
            ref = solve(method, cm.build(q, v, qdd), st_ref, **OSQP)
            if k == 6:
                assert not ok and "no_contacts" in ref.stats.flags
                fused.export_warm(ms)
                solve(method, cm.build(q, v, qdd), st_fused, **OSQP)
                continue
            assert ok and fused.flags == ref.stats.flags
            ncs.add(fused.nc)
            limits += "iteration_limit" in ref.stats.flags
            scale = 1e-9 * (1 + np.abs(ref.tau).max())
            np.testing.assert_allclose(fused.out.tau, ref.tau, rtol=0, atol=scale)
            np.testing.assert_allclose(fused.out.forces_world[:fused.nc],
                                       ref.contact_forces_world, rtol=0, atol=scale)
        assert len(ncs) == 1  # one contact set (its count: 4 feet, 8 sole corners)
        if robot == "humanoid":
            assert limits > 0  # (the iteration-limited case is covered)


@pytest.mark.parametrize("method", ["qp_coulomb", "qp_noslip"])
def test_compiled_qp_tick_humanoid_with_contact_changes(method):
    """The humanoid through contact-set changes. Its contact forces are not unique (eight
    corners; Stage II's regularization 1e-9 selects them only loosely), so torques are
    compared, on the ticks where OSQP converged in both runs (measured <= 7e-6 relative).
    ``qp_noslip`` stops at OSQP's iteration limit on every one of these ticks (Stage II of 5-8
    contacts with free tangential impulses; the general path alike): identities, flags and
    warm-start use are compared, the numbers by the bitwise continuation test above."""
    rows, _ = _compare_qp(method, "humanoid", {}, OSQP, 5, n=40, flight=(30,))
    conv = _converged(rows)
    if method == "qp_coulomb":
        assert len(conv) >= 5
    _assert_close(conv, 5e-5, forces=False)


def test_compiled_qp_tick_stage1_failure_is_the_documented_fallback(monkeypatch):
    """OSQP reporting Stage I infeasible: the tick returns solve's fallback (the previous
    torques, flags fallback + infeasible + the sticking correction's), keeps the previous
    contacts in the MethodState, and the next tick starts Stage I fresh -- as the general
    path does."""
    method, opts = "qp_coulomb", {**QP_TRACKING, **OSQP}
    m, info, cm = _setup("quadruped", SHIPPED_QUADRUPED)
    fused = compiled_tick(cm, method, opts)
    q0 = np.array(info["standing_q"])
    st_ref, st_fused = SolverState(), SolverState()
    states = list(_states(m, q0, 4, np.random.default_rng(3)))
    real = qp_module.OSQPSolver.solve  # (both paths' OSQP solves)
    fail = {"on": False}

    def failing(self):
        status, x, it = real(self)
        return (3, x * np.nan, it) if fail["on"] else (status, x, it)

    monkeypatch.setattr(qp_module.OSQPSolver, "solve", failing)
    for k, (q, v, qdd) in enumerate(states):
        fail["on"] = k == 2
        assert fused.run(q, v, qdd, st_fused.get(method))
        ref = solve(method, cm.build(q, v, qdd), st_ref, **opts)
        assert fused.flags == ref.stats.flags
        assert fused.warm_start_used == ref.stats.warm_start_used
        np.testing.assert_allclose(fused.out.tau, ref.tau, rtol=0,
                                   atol=1e-5 * (1 + np.abs(ref.tau).max()))
        np.testing.assert_allclose(fused.out.forces_world[:fused.nc], ref.contact_forces_world,
                                   rtol=0, atol=1e-5 * (1 + np.abs(ref.tau).max()))
        a, b = st_fused.get(method), st_ref.get(method)
        assert a.active_ids == b.active_ids and a.contact_ids == b.contact_ids
        if k == 2:
            assert ref.stats.flags[:2] == ("fallback", "infeasible")
            np.testing.assert_array_equal(fused.out.tau, a.data["tau"])  # the previous ones
            assert not np.any(fused.out.forces_world[:fused.nc])


ACTIVE_SET_CASES = {**{f"quadruped_{k}": ("quadruped", *v) for k, v in QP_CASES.items()},
                    "humanoid_qp_coulomb": ("humanoid", "qp_coulomb", {}, {}),
                    "humanoid_qp_coulomb_tracking": ("humanoid", "qp_coulomb", {}, QP_TRACKING),
                    "humanoid_qp_noslip": ("humanoid", "qp_noslip", {}, {})}


@pytest.mark.parametrize("case", sorted(ACTIVE_SET_CASES))
def test_compiled_active_set_tick_equals_build_and_solve(case):
    """qp_solver="active_set" (the default): the whole tick is one compiled call, and ``solve``
    runs the same compiled flow (qp_flow.qp_active_set) on the problem ``build`` assembles, its warm
    start mapped by contact identity as the tick's by candidate slot. On every tick, through
    contact-set changes and a flight phase, warm and cold: the same flags (no iteration limit
    anywhere) and warm-start use, bitwise the same torques, world forces to rounding (the tick
    rotates them with its own loops)."""
    robot, method, cm_opts, opts = ACTIVE_SET_CASES[case]
    for warm, seed, n in ((True, 5, 60), (False, 6, 30)):
        rows, fused = _compare_qp(method, robot, cm_opts, opts, seed, n=n, warm=warm)
        assert fused.options.active_set and not fused._s1  # no OSQP solver was set up
        for k, ref, tau, _, flags in rows:
            assert flags == ref.stats.flags, (k, flags, ref.stats.flags)
            assert "iteration_limit" not in flags
            np.testing.assert_array_equal(tau, ref.tau, err_msg=f"tick {k}")
        _assert_close(rows, 1e-12)
        assert {f for _, ref, _, _, _ in rows for f in ref.stats.flags} >= {"min_norm"}


def test_qp_tick_options():
    """The controller's QP options get the compiled tick; an option without a compiled form
    (the sparse formulation, an unknown key) or an invalid one leaves the general path to run
    (and report it). A negative gap (no friction anywhere) is a gap like any other."""
    m, info, cm = _setup("quadruped", SHIPPED_QUADRUPED)
    assert isinstance(compiled_tick(cm, "qp_coulomb", QP_TRACKING), QPTick)
    assert isinstance(compiled_tick(cm, "qp_noslip", {"noslip_gap": 1e-6}), QPTick)
    t = compiled_tick(cm, "qp_coulomb", {"friction_edges": 6, "formulation": "dense"})
    assert t.options.k == 6 and t.options.max_nc == cm.data.N.shape[0]
    assert compiled_tick(cm, "qp_noslip", {"noslip_gap": -1.0}).options.friction_gap == -1.0
    assert compiled_tick(cm, "qp_noslip", {}).options.friction_gap == np.inf  # None: none apart
    for method, opts in (("qp_coulomb", {"formulation": "sparse"}),
                         ("qp_coulomb", {"friction_edges": 5}),
                         ("qp_coulomb", {"stage1_objective": "other"}),
                         ("qp_noslip", {"friction_gap": 1e-6}),
                         ("qp_noslip", {"rank_mass_ratio": -1.0}),
                         ("qp_coulomb", {"eps": float("nan")})):
        assert compiled_tick(cm, method, opts) is None, (method, opts)
