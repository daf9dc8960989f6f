"""Internal consistency of the core (no oracle needed): identities that must hold exactly."""

import numpy as np
import pytest
from model_helpers import random_configuration

from wbc_dynamics import RobotModel
from wbc_dynamics.robots import robot_path

CASES = [
    ("quadruped", True),
    ("arm", False),
    ("branched", True),
    ("humanoid", True),
    ("humanoid", False),
]


@pytest.fixture(scope="module", params=CASES, ids=[f"{n}-{f}" for n, f in CASES])
def model(request):
    name, fb = request.param
    return RobotModel.from_urdf(robot_path(name), floating_base=fb)


def _random_q(model, rng):
    """Joints within their limits, +-pi where unlimited."""
    lo = np.where(np.isfinite(model.position_lower), model.position_lower, -np.pi)
    hi = np.where(np.isfinite(model.position_upper), model.position_upper, np.pi)
    return random_configuration(model, rng, lo, hi)


def test_identities(model):
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = _random_q(model, rng)
        v = rng.normal(size=model.nv)
        a = rng.normal(size=model.nv)
        M = model.mass_matrix(q)
        Minv = model.minverse(q)
        assert np.allclose(M @ Minv, np.eye(model.nv), atol=1e-9)
        assert np.allclose(Minv, Minv.T, atol=0)
        np.testing.assert_allclose(
            model.mass_matrix_unit_vector(q), M, atol=1e-10 * np.abs(M).max()
        )
        tau = model.rnea(q, v, a)
        np.testing.assert_allclose(model.aba(q, v, tau), a, atol=1e-9)
        h = model.nonlinear_effects(q, v)
        np.testing.assert_allclose(tau, M @ a + h, atol=1e-9 * max(1.0, np.abs(tau).max()))
        g = model.gravity_torques(q)
        np.testing.assert_allclose(g, model.rnea(q, np.zeros(model.nv), np.zeros(model.nv)), atol=0)


def test_jacobian_matches_finite_differences_of_placement(model):
    rng = np.random.default_rng(1)
    eps = 1e-6
    for link in model.link_names[-4:]:
        q = _random_q(model, rng)
        J = model.jacobian(q, link)
        T0 = model.frame_placement(q, link)
        for k in range(model.nv):
            dv = np.zeros(model.nv)
            dv[k] = eps
            T1 = model.frame_placement(model.integrate(q, dv), link)
            lin = (T1[:3, 3] - T0[:3, 3]) / eps
            dR = T1[:3, :3] @ T0[:3, :3].T
            ang = np.array([dR[2, 1] - dR[1, 2], dR[0, 2] - dR[2, 0], dR[1, 0] - dR[0, 1]]) / (
                2 * eps
            )
            np.testing.assert_allclose(lin, J[:3, k], atol=1e-5)
            np.testing.assert_allclose(ang, J[3:, k], atol=1e-5)


@pytest.mark.parametrize("name", ["quadruped", "branched", "humanoid"])
def test_gravity_on_floating_base_is_weight(name):
    """At rest, the base wrench of a floating robot is its weight (and nothing else)."""
    model = RobotModel.from_urdf(robot_path(name), floating_base=True)
    q = model.neutral()
    g = model.gravity_torques(q)
    assert g[2] == pytest.approx(model.total_mass * 9.81, rel=1e-12)
    assert np.allclose(g[:2], 0.0, atol=1e-12)
