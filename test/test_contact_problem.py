"""Tests of the common contact types and the zero-contact path (Zapolsky & Drumwright, eq. 37/38).

References are Pinocchio (RNEA, ABA, analytical M^-1), i.e. independent of the code under test.
"""

import numpy as np
import pinocchio as pin
import pytest

from wbc_dynamics.contact import ContactProblem, SolverState, solve
from wbc_dynamics.contact.dispatch import fallback_result


def _pin_problem(model, q, v, actuated, qdd_des, dt=1e-3, nc=0, rng=None):
    data = model.createData()
    Minv = pin.computeMinverse(model, data, q).copy()
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    h = pin.nonLinearEffects(model, data, q, v).copy()
    nv = model.nv
    free = np.setdiff1d(np.arange(nv), actuated)
    N = rng.standard_normal((nc, nv)) if nc else np.zeros((0, nv))
    S = rng.standard_normal((nc, nv)) if nc else np.zeros((0, nv))
    T = rng.standard_normal((nc, nv)) if nc else np.zeros((0, nv))
    return ContactProblem(
        dt=dt, Minv=Minv, h=h, v=v, actuated=np.asarray(actuated), free=free, qdd_des=qdd_des,
        N=N, S=S, T=T, phi=np.zeros(nc), mu=np.full(nc, 0.5),
    )


@pytest.mark.parametrize("method", ["lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip"])
def test_zero_contacts_fixed_base_equals_rnea(method):
    rng = np.random.default_rng(0)
    model = pin.buildSampleModelManipulator()
    q = pin.randomConfiguration(model)
    v = rng.standard_normal(model.nv)
    qdd = rng.standard_normal(model.nv)
    prob = _pin_problem(model, q, v, np.arange(model.nv), qdd)
    res = solve(method, prob, SolverState())
    tau_ref = pin.rnea(model, model.createData(), q, v, qdd)
    np.testing.assert_allclose(res.tau, tau_ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.qdd, qdd, atol=1e-9)
    assert res.stats.flags == ("no_contacts",)
    assert res.contact_forces_local.shape == (0, 3)
    assert prob.dynamics_residual(res.tau, res.impulses, res.v_next) < 1e-12


def _sample_humanoid(seed):
    """(rng, model, q, v, act): Pinocchio's random sample humanoid at a random configuration,
    v standard normal from ``default_rng(seed)``, every joint actuated."""
    rng = np.random.default_rng(seed)
    model = pin.buildSampleModelHumanoidRandom()
    q = pin.randomConfiguration(model)
    return rng, model, q, rng.standard_normal(model.nv), np.arange(6, model.nv)


def test_zero_contacts_floating_base_matches_aba():
    rng, model, q, v, act = _sample_humanoid(1)
    qdd = rng.standard_normal(act.size)
    prob = _pin_problem(model, q, v, act, qdd)
    res = solve("lcp_noslip", prob)
    gen = np.zeros(model.nv)
    gen[act] = res.tau
    a = pin.aba(model, model.createData(), q, v, gen)
    np.testing.assert_allclose(a[act], qdd, atol=1e-8)
    np.testing.assert_allclose(res.qdd, a, atol=1e-8)


def test_validation_errors_name_field():
    rng = np.random.default_rng(2)
    model = pin.buildSampleModelManipulator()
    q = pin.neutral(model)
    v = np.zeros(model.nv)
    prob = _pin_problem(model, q, v, np.arange(model.nv), np.zeros(model.nv), nc=2, rng=rng)
    bad = ContactProblem(**{**prob.__dict__, "phi": np.array([0.0, np.nan])})
    with pytest.raises(ValueError, match="phi"):
        solve("lcp_noslip", bad)
    bad = ContactProblem(**{**prob.__dict__, "dt": 0.0})
    with pytest.raises(ValueError, match="dt"):
        bad.validate()
    bad = ContactProblem(**{**prob.__dict__, "actuated": np.array([0, 1])})
    with pytest.raises(ValueError, match="actuated"):
        bad.validate()
    bad = ContactProblem(**{**prob.__dict__, "contact_ids": ("a", "a")})
    with pytest.raises(ValueError, match="contact_ids"):
        bad.validate()
    with pytest.raises(ValueError, match="method"):
        solve("magic", prob)


def test_pyramid_edges_and_residual():
    rng = np.random.default_rng(3)
    model = pin.buildSampleModelManipulator()
    prob = _pin_problem(model, pin.neutral(model), np.zeros(model.nv), np.arange(model.nv),
                        np.zeros(model.nv), nc=3, rng=rng).validate()
    F, D = prob.pyramid(4)
    assert F.shape == (12, model.nv)
    np.testing.assert_allclose(F[0], prob.S[0])
    np.testing.assert_allclose(F[1], prob.T[0])
    np.testing.assert_allclose(F[2], -prob.S[0])
    np.testing.assert_allclose(F[7], -prob.T[1])
    beta = rng.random((3, 4))
    cs, ct = beta @ D[:, 0], beta @ D[:, 1]
    np.testing.assert_allclose(F.T @ beta.reshape(-1), prob.S.T @ cs + prob.T.T @ ct, atol=1e-12)
    F8, D8 = prob.pyramid(8)
    np.testing.assert_allclose(np.linalg.norm(D8, axis=1), 1.0)


def test_fallback_is_finite_and_satisfies_dynamics():
    rng, model, q, v, act = _sample_humanoid(4)
    prob = _pin_problem(model, q, v, act, np.zeros(act.size), nc=4, rng=rng).validate()
    res = fallback_result(prob, "lcp_noslip")
    assert res.stats.flags == ("fallback",) and not res.consistent and res.all_finite
    assert prob.dynamics_residual(res.tau, res.impulses, res.v_next) < 1e-10
    prev = rng.standard_normal(act.size)
    res = fallback_result(prob, "lcp_noslip", prev)
    np.testing.assert_array_equal(res.tau, prev)
    assert prob.dynamics_residual(res.tau, res.impulses, res.v_next) < 1e-10


def test_solver_state_matches_by_identity():
    st = SolverState()
    ms = st.get("lcp_noslip")
    ms.contact_ids = ("a", "b", "c")
    ms.impulses = np.arange(9.0).reshape(3, 3)
    ms.active_ids = ("a", "c")
    imp, known = ms.impulses_for(("c", "x", "a"))
    np.testing.assert_array_equal(imp, [[6, 7, 8], [0, 0, 0], [0, 1, 2]])
    np.testing.assert_array_equal(known, [True, False, True])
    assert ms.active_rows(("c", "x", "a")) == [0, 2]
    assert st.has("lcp_noslip")
    st.reset()
    assert not st.has("lcp_noslip")


def test_warmup_compiles_everything_used_by_a_tick():
    """After contact.warmup() a real tick triggers no new numba compilation (signature counts)."""
    from contact_helpers import quadruped

    from wbc_dynamics.contact import consistency, lcp_noslip, warmup

    warmup(["lcp_noslip"])
    kernels = [lcp_noslip.lcp_noslip_kernel, lcp_noslip._complementarity_residual,
               consistency.min_norm_solution_kernel]
    before = [len(k.signatures) for k in kernels]
    assert all(b >= 1 for b in before)
    m, pm, cm, q0 = quadruped()
    p = cm.build(q0, np.zeros(m.nv), np.zeros(12))
    st = SolverState()
    solve("lcp_noslip", p, st)
    solve("lcp_noslip", p, st, min_norm=True)
    assert [len(k.signatures) for k in kernels] == before


def test_state_options_are_defaults_for_the_method():
    from contact_helpers import quadruped

    m, pm, cm, q0 = quadruped()
    p = cm.build(q0, np.zeros(m.nv), np.zeros(12))
    st = SolverState(options={"lcp_noslip": {"min_norm": True}})
    res = solve("lcp_noslip", p, st)
    assert "min_norm" in res.stats.flags
    np.testing.assert_allclose(res.contact_forces_local[:, 0], m.total_mass * 9.81 / 4, rtol=1e-6)
    res = solve("lcp_noslip", p, st, min_norm=False)  # the call wins
    assert "min_norm" not in res.stats.flags
    st.reset()
    assert st.options["lcp_noslip"] == {"min_norm": True}
