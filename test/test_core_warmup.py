"""Construction compiles everything: the first real call never triggers numba compilation.

Deterministic (no timing): every compiled kernel's set of signatures must not grow when a
freshly built model is used with typical inputs — including lists, int arrays and
non-contiguous views, which the API converts instead of handing to numba.
"""

import numpy as np
from numba_helpers import compiled_signature_counts, grown_since

from wbc_dynamics import RobotModel
from wbc_dynamics.robots import robot_path


def test_first_calls_after_construction_compile_nothing():
    for name, floating in (("quadruped", True), ("arm", False)):
        model = RobotModel.from_urdf(robot_path(name), floating_base=floating)
        before = compiled_signature_counts()
        q = model.neutral()
        v = np.linspace(-1, 1, model.nv)
        a = np.ones(model.nv)
        strided = np.zeros(2 * model.nv)[::2]
        link = model.link_names[-1]
        model.rnea(q, v, a)
        model.rnea(list(q), strided, a.astype(np.float32), f_ext={link: [1, 2, 3, 4, 5, 6]})
        model.nonlinear_effects(q, v)
        model.gravity_torques(q)
        model.mass_matrix(q)
        model.minverse(q)
        model.aba(q, v, a)
        model.aba(q, v, np.arange(model.nv), f_ext={link: np.ones(6)})
        model.frame_placement(q, link)
        model.jacobian(q, link, point=[0.0, 0.0, 0.1])
        model.jacobian(q, link, frame="local")
        model.jacobian_dot_times_v(q, v, link)
        model.jacobian_dot_times_v(q, v, link, point=(0.1, 0, 0), frame="local")
        model.points_kinematics(q, v, [link, link], np.zeros((2, 3)))
        grown = grown_since(before)
        assert not grown, f"kernels compiled after construction: {grown}"


def test_a_large_model_is_warmed_up_on_a_probe_and_compiles_nothing_after():
    """Above WARMUP_PROBE_MAX_NV dofs the warm-up runs on a small chain of the same kind
    (numba binds per argument type): the large model's first calls, the derivatives included,
    still compile nothing."""
    from model_helpers import chain_urdf

    from wbc_dynamics import linearization
    from wbc_dynamics.model import WARMUP_PROBE_MAX_NV

    for floating in (True, False):
        model = RobotModel.from_urdf(chain_urdf(WARMUP_PROBE_MAX_NV + 36), floating_base=floating)
        assert model.nv > WARMUP_PROBE_MAX_NV
        before = compiled_signature_counts()
        rng = np.random.default_rng(1)
        q = model.neutral()
        joints = 7 if floating else 0  # the joints' first slot of q
        q[joints:] = 0.1 * rng.standard_normal(model.nq - joints)
        v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        link = model.link_names[-1]
        model.rnea(q, v, a, f_ext={link: np.ones(6)})
        M = model.mass_matrix(q)
        np.testing.assert_allclose(model.minverse(q) @ M, np.eye(model.nv), atol=1e-8)
        model.aba(q, v, a, f_ext={link: np.ones(6)})
        model.jacobian(q, link)
        model.jacobian_dot_times_v(q, v, link)
        model.points_kinematics(q, v, [link], np.zeros((1, 3)))
        linearization.rnea_derivatives(model, q, v, a)
        linearization.aba_derivatives(model, q, v, a)
        linearization.linearize(model, q, v, a)
        linearization.iwim(model, q, np.eye(model.nv))
        linearization.free_acceleration(model, q, v)
        grown = grown_since(before)
        assert not grown, f"kernels compiled after construction: {grown}"


def test_scoped_warmup_binds_the_rest_at_first_call():
    """warmup(scope=...) leaves kernels out (a faster controller start); a kernel left out is
    bound at its first call and gives the same numbers as on a fully warmed model."""
    import pytest

    full = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    for scope in ("control", "dynamics"):
        lazy = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True, warmup=False)
        lazy.warmup(scope=scope)
        rng = np.random.default_rng(3)
        q = full.neutral()
        q[7:] += 0.2 * rng.standard_normal(12)
        v, a = rng.standard_normal(18), rng.standard_normal(18)
        np.testing.assert_array_equal(lazy.aba(q, v, a), full.aba(q, v, a))
        np.testing.assert_array_equal(lazy.mass_matrix(q), full.mass_matrix(q))
        np.testing.assert_array_equal(lazy.rnea(q, v, a), full.rnea(q, v, a))
    with pytest.raises(ValueError, match="scope: 'fast'"):
        full.warmup(scope="fast")
