"""Linearized forward dynamics on the tangent space [delta H, delta s, delta v, delta r].

* Continuous time: A, B against the Jacobian of the nonlinear flow over a short time h,
  Phi(h) = I + h A + O(h^2), at a random (non-equilibrium) state -- this checks the
  -ad_v block of the base and the sign/frame conventions of the whole matrix.
* Discrete time (zero-order hold): at a controlled equilibrium Ad, Bd equal the Jacobians of
  the sampled nonlinear flow with the input held over dt (finite differences of a fine
  second-order integration with the core's ``aba``).
* LQR: a discrete LQR designed from ``linearize`` stabilizes floating-base systems about a
  controlled equilibrium; the closed loop is simulated with the core's ``aba``.

What "controlled equilibrium" means here (a floating base without contacts cannot be held in
place by joint torques alone): (1) the branched system of Saccon et al. (Fig. 4) as an aerial
manipulator -- its base carries a multirotor-like actuator producing a body-z thrust and three
body torques, so the system is underactuated (nv - 2 inputs) and hovers in gravity; (2) the
humanoid at its standing configuration with the base wrench actuated (as if held by a 6-DoF
support), i.e. fully actuated, in gravity. Contact forces are not modelled in this test.
"""

import numpy as np
import pytest
import scipy.linalg as sl

from wbc_dynamics import RobotModel
from wbc_dynamics.linearization import (
    aba_derivatives,
    discretize,
    linearize,
    state_difference,
    tangent_velocity_map,
)
from wbc_dynamics.robots import robot_info, robot_path


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.fixture(scope="module")
def branched():
    return RobotModel.from_urdf(robot_path("branched"), floating_base=True)


def _heun(model, q, v, tau, h, n):
    """n steps of Heun's method (second order) on the configuration manifold."""
    for _ in range(n):
        a0 = model.aba(q, v, tau)
        q1 = model.integrate(q, v, h)
        v1 = v + h * a0
        a1 = model.aba(q1, v1, tau)
        q = model.integrate(q, 0.5 * (v + v1), h)
        v = v + 0.5 * h * (a0 + a1)
    return q, v


def _flow_jacobian(model, q, v, tau, h, n, eps=1e-6):
    """d(error after time h)/d(initial error, input) by central differences (tangent coords)."""
    nv = model.nv
    qn, vn = _heun(model, q, v, tau, h / n, n)

    def err(dx, du):
        q0 = model.integrate(q, dx[:nv])
        q1, v1 = _heun(model, q0, v + dx[nv:], tau + du, h / n, n)
        return np.r_[state_difference(model, qn, q1), v1 - vn]

    Phi = np.empty((2 * nv, 2 * nv))
    Gam = np.empty((2 * nv, nv))
    for k in range(2 * nv):
        e = np.zeros(2 * nv)
        e[k] = eps
        Phi[:, k] = (err(e, 0.0) - err(-e, 0.0)) / (2 * eps)
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = eps
        Gam[:, k] = (err(np.zeros(2 * nv), e) - err(np.zeros(2 * nv), -e)) / (2 * eps)
    return Phi, Gam


def _random_state(model, seed):
    """(rng, q, v): ``default_rng(seed)`` and a random configuration (neutral moved by up to 1
    per tangent coordinate) and velocity (standard normal) drawn from it."""
    rng = np.random.default_rng(seed)
    q = model.integrate(model.neutral(), rng.uniform(-1.0, 1.0, model.nv))
    return rng, q, rng.normal(size=model.nv)


def test_continuous_matrices_match_the_flow_at_a_moving_state(branched):
    model = branched
    nv = model.nv
    rng, q, v = _random_state(model, 11)
    tau = model.rnea(q, v, rng.normal(size=nv))
    A, B = linearize(model, q, v, tau)
    assert A.shape == (2 * nv, 2 * nv) and B.shape == (2 * nv, nv)
    errs = []
    for h in (1e-3, 1e-4):
        Phi, Gam = _flow_jacobian(model, q, v, tau, h, 1)
        errs.append(max(_rel((Phi - np.eye(2 * nv)) / h, A), _rel(Gam / h, B)))
    # first order in h: the error falls ~10x per decade and is small at h = 1e-4
    assert errs[1] < 2e-3 and errs[0] / errs[1] > 5.0, errs
    # the base block of A_qq is -ad_v (non-zero when the base moves)
    assert np.max(np.abs(A[:6, :6])) > 0.1


def test_blocks_are_the_aba_derivatives(branched):
    model = branched
    nv = model.nv
    rng, q, v = _random_state(model, 12)
    tau = rng.normal(size=nv)
    A, B = linearize(model, q, v, tau)
    ddq_dq, ddq_dv, Minv = aba_derivatives(model, q, v, tau)
    assert np.array_equal(A[nv:, :nv], ddq_dq) and np.array_equal(A[nv:, nv:], ddq_dv)
    assert np.array_equal(A[:nv, nv:], np.eye(nv)) and np.array_equal(B[nv:], Minv)
    assert np.array_equal(A[:nv, :nv], tangent_velocity_map(model, v))
    assert not np.any(B[:nv])
    # with an input matrix, B = [0; M^-1 S] (IWIM)
    S = rng.normal(size=(nv, 5))
    _, Bs = linearize(model, q, v, tau, input_matrix=S)
    assert _rel(Bs, B @ S) < 1e-10


def test_discrete_matrices_match_the_sampled_flow_at_a_standing_equilibrium():
    """The quadruped standing, base wrench actuated: ZOH Ad, Bd = Jacobians of the flow map."""
    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    nv = model.nv
    q = np.array(robot_info("quadruped")["standing_q"], dtype=float)
    z = np.zeros(nv)
    tau = model.rnea(q, z, z)  # the controlled equilibrium: gravity compensation
    assert np.max(np.abs(model.aba(q, z, tau))) < 1e-9
    dt = 0.005
    Ad, Bd = linearize(model, q, z, tau, dt=dt)
    Phi, Gam = _flow_jacobian(model, q, z, tau, dt, 40)
    assert _rel(Ad, Phi) < 1e-5, _rel(Ad, Phi)
    assert _rel(Bd, Gam) < 1e-5, _rel(Bd, Gam)


def _lqr_case(name):
    model = RobotModel.from_urdf(robot_path(name), floating_base=True)
    nv = model.nv
    if name == "branched":
        # aerial manipulator: body-z thrust, three body torques, all joints; hover in gravity
        S = np.zeros((nv, nv - 2))
        S[2, 0] = 1.0
        S[3:6, 1:4] = np.eye(3)
        S[6:, 4:] = np.eye(nv - 6)
        q_eq = model.neutral()
        q_eq[2] = 1.0
        q_eq[7:] = 0.3 * np.sin(np.arange(1, nv - 5))
    else:
        S = np.eye(nv)  # humanoid standing, base wrench actuated
        q_eq = np.array(robot_info(name)["standing_q"], dtype=float)
    z = np.zeros(nv)
    tau_eq = model.rnea(q_eq, z, z)
    u_eq, *_ = np.linalg.lstsq(S, tau_eq, rcond=None)
    # the equilibrium is reachable with these inputs (the thrust compensates the weight)
    assert np.max(np.abs(S @ u_eq - tau_eq)) < 1e-9 * max(1.0, np.max(np.abs(tau_eq)))
    return model, S, q_eq, u_eq


@pytest.mark.parametrize("name", ["branched", "humanoid"])
def test_discrete_lqr_stabilizes_a_floating_base_system(name):
    model, S, q_eq, u_eq = _lqr_case(name)
    nv = model.nv
    dt = 0.01
    z = np.zeros(nv)
    Ad, Bd = linearize(model, q_eq, z, S @ u_eq, dt=dt, input_matrix=S)
    open_loop = max(abs(np.linalg.eigvals(Ad)))
    Q = np.diag(np.r_[np.full(nv, 100.0), np.full(nv, 1.0)])
    R = 1e-3 * np.eye(S.shape[1])
    P = sl.solve_discrete_are(Ad, Bd, Q, R)
    K = np.linalg.solve(R + Bd.T @ P @ Bd, Bd.T @ P @ Ad)
    rho = max(abs(np.linalg.eigvals(Ad - Bd @ K)))
    assert open_loop > 1.0  # unstable (or marginal) without feedback
    assert rho < 1.0, rho
    # simulate the nonlinear closed loop with the core's aba (input held over dt, 10 substeps)
    rng = np.random.default_rng(13)
    d0 = np.r_[0.05, -0.05, 0.05, 0.1, -0.1, 0.1, 0.1 * rng.uniform(-1, 1, nv - 6)]
    q = model.integrate(q_eq, d0)
    v = z.copy()

    def err(q, v):
        return np.r_[state_difference(model, q_eq, q), v]

    e0 = np.linalg.norm(err(q, v))
    norms = []
    for _ in range(int(3.0 / dt)):
        tau = S @ (u_eq - K @ err(q, v))
        q, v = _heun(model, q, v, tau, dt / 10, 10)
        norms.append(np.linalg.norm(err(q, v)))
    assert np.all(np.isfinite(norms))
    assert norms[-1] < 0.05 * e0, (e0, norms[-1])
    assert max(norms[-50:]) < 0.1 * e0


def test_state_difference_inverts_integrate(branched):
    model = branched
    rng = np.random.default_rng(14)
    for scale in (1e-8, 1e-3, 0.5, 2.0):
        q = model.integrate(model.neutral(), rng.uniform(-2, 2, model.nv))
        d = scale * rng.uniform(-1, 1, model.nv)
        assert np.max(np.abs(state_difference(model, q, model.integrate(q, d)) - d)) < 1e-12


def test_discretize_checks_dt_and_matches_euler_for_small_dt(branched):
    A, B = linearize(branched, branched.neutral(), np.zeros(branched.nv), np.zeros(branched.nv))
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="dt"):
            discretize(A, B, bad)
    Ad, Bd = discretize(A, B, 1e-7)
    assert _rel((Ad - np.eye(A.shape[0])) / 1e-7, A) < 1e-5
    assert _rel(Bd / 1e-7, B) < 1e-5


def test_warmup_compiles_everything():
    """After ``warmup`` the first real calls (other inputs, other widths of B) compile nothing."""
    from numba.core.registry import CPUDispatcher

    from wbc_dynamics.iwim import free_acceleration, iwim, task_space_input
    from wbc_dynamics.kernels import derivatives
    from wbc_dynamics.linearization import rnea_derivatives, warmup

    def counts():
        return {
            k: len(o.signatures)
            for k, o in vars(derivatives).items()
            if isinstance(o, CPUDispatcher)
        }

    for name, floating in (("quadruped", True), ("arm", False)):
        model = RobotModel.from_urdf(robot_path(name), floating_base=floating)
        assert warmup(model) >= 0.0
        before = counts()
        nv = model.nv
        q = model.neutral()
        v = np.linspace(-1, 1, nv)
        rnea_derivatives(model, list(q), v.astype(np.float32), np.zeros(2 * nv)[::2])
        aba_derivatives(model, q, v, np.ones(nv))
        linearize(model, q, v, np.ones(nv), dt=0.01)
        linearize(model, q, v, np.ones(nv), input_matrix=np.ones((nv, 3)))
        iwim(model, q, np.ones((nv, 4)).T.copy().T)  # a Fortran-ordered B is converted
        iwim(model, q, np.arange(nv))
        free_acceleration(model, q, v)
        J = model.jacobian(q, model.link_names[-1])
        task_space_input(model, q, v, J, np.zeros(6), np.ones(6), np.eye(nv), damping=1e-3)
        assert counts() == before
