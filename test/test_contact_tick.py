"""The compiled ``lcp_noslip`` tick (wbc_dynamics.contact.tick) equals ContactModel.build +
solve("lcp_noslip") -- the oracle-tested general path -- tick by tick, warm start included
(to 1e-8 relative: the same kernels on differently laid out arrays round differently, which
the ill-conditioned correction QP amplifies).

Sequences of random states around the standing pose (joint offsets, base height so that feet
touch, separate and penetrate, velocities, inconsistent desired accelerations that trigger the
Sec. 4.5 correction), for the shipped quadruped options (passive impact, dead band, noslip_gap,
min-norm) and the plain ones, the humanoid's eight sole corners, and swing feet excluded.
"""

from __future__ import annotations

import numpy as np
import pytest

from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.contact.tick import CoulombTick, NoslipTick, compiled_tick
from wbc_dynamics.model import RobotModel
from wbc_dynamics.robots import robot_info, robot_path


def _states(m, q0, n, rng):
    for k in range(n):
        q = q0.copy()
        q[2] += rng.uniform(-0.002, 0.004)
        q[7:] += rng.normal(0.0, 0.01, m.nv - 6)
        v = rng.normal(0.0, 0.05 if k % 3 else 0.3, m.nv)
        qdd = rng.normal(0.0, 2.0 if k % 2 else 30.0, m.nv - 6)
        yield q, v, qdd


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
    assert fused._entry is not type(fused).kernel  # called through its bound entry point
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
    assert fused.options.min_pivot == (1.0 / (100.0 * m.total_mass) if not ratio else 0.0)
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
