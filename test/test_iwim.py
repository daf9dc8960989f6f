"""Inertia-weighted input matrix M^-1 B (Krög et al., eqs. (8)-(9)) and the task-space helper.

* ``iwim(q, B)`` against the analytical ``minverse(q) @ B`` of the core (and Pinocchio's
  ``computeMinverse``) to 1e-10 relative on every bundled robot for full actuation, an
  underactuated floating base (joints only) and a transmission with couplings.
* ``free_acceleration`` = -M^-1 h = ABA with zero input.
* ``task_space_input``: the returned u realizes the commanded task acceleration through the
  full nonlinear forward dynamics (``aba``); Tikhonov damping shrinks |u| monotonically; the
  bounded problem agrees with an independent bounded least-squares solver (scipy lsq_linear).
"""

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from wbc_dynamics import RobotModel
from wbc_dynamics.iwim import free_acceleration, iwim, task_space_input
from wbc_dynamics.robots import robot_path

ROBOTS = ["quadruped", "arm", "branched", "humanoid", "box"]
CASES = [(name, fb) for name in ROBOTS for fb in (False, True) if not (name == "box" and not fb)]
IDS = [f"{n}-{'floating' if f else 'fixed'}" for n, f in CASES]


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _input_matrices(model, rng):
    nv = model.nv
    off = 6 if model.floating_base else 0
    nj = nv - off
    mats = {"full": np.eye(nv)}
    if model.floating_base and nj > 0:
        S = np.zeros((nv, nj))
        S[off:, :] = np.eye(nj)
        mats["underactuated"] = S
    if nj >= 2:
        # a transmission: motor k drives joint k and, through a differential/tendon, joint k+1
        T = np.zeros((nv, nj))
        for k in range(nj):
            T[off + k, k] = rng.uniform(0.5, 2.0)
            if k + 1 < nj:
                T[off + k + 1, k] = rng.uniform(-1.0, 1.0)
        if model.floating_base:
            T[:6, :] = 0.1 * rng.normal(size=(6, nj))  # reaction on the base
        mats["transmission"] = T
    mats["random"] = rng.normal(size=(nv, 3))
    return mats


@pytest.mark.parametrize(("name", "fb"), CASES, ids=IDS)
def test_iwim_equals_minverse_times_b(name, fb):
    model = RobotModel.from_urdf(robot_path(name), floating_base=fb)
    rng = np.random.default_rng(21)
    worst = {}
    for _ in range(10):
        q = model.integrate(model.neutral(), rng.uniform(-1.5, 1.5, model.nv))
        Minv = model.minverse(q)
        for key, B in _input_matrices(model, rng).items():
            worst[key] = max(worst.get(key, 0.0), _rel(iwim(model, q, B), Minv @ B))
    assert max(worst.values()) < 1e-10, worst


def test_iwim_vector_input_and_changing_width():
    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q = model.neutral()
    b = np.arange(model.nv, dtype=float)
    x = iwim(model, q, b)
    assert x.shape == (model.nv, 1)
    assert _rel(x[:, 0], model.minverse(q) @ b) < 1e-10
    B = np.ones((model.nv, 7))
    assert _rel(iwim(model, q, B), model.minverse(q) @ B) < 1e-10


def test_iwim_bad_input():
    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q = model.neutral()
    with pytest.raises(ValueError, match="shape"):
        iwim(model, q, np.ones((model.nv + 1, 2)))
    B = np.ones((model.nv, 2))
    B[0, 0] = np.inf
    with pytest.raises(ValueError, match="B contains NaN or inf"):
        iwim(model, q, B)
    q[3:7] = [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="quaternion"):
        iwim(model, q, np.ones((model.nv, 2)))


@pytest.mark.parametrize("name", ["quadruped", "humanoid", "branched"])
def test_free_acceleration(name):
    model = RobotModel.from_urdf(robot_path(name), floating_base=True)
    rng = np.random.default_rng(22)
    q = model.integrate(model.neutral(), rng.uniform(-1, 1, model.nv))
    v = rng.normal(size=model.nv)
    qdd0 = free_acceleration(model, q, v)
    h = model.nonlinear_effects(q, v)
    assert _rel(qdd0, -model.minverse(q) @ h) < 1e-10
    # the split of eq. (2): qdd = qdd_0 + B_hat u equals ABA with tau = B u
    B = rng.normal(size=(model.nv, 4))
    u = rng.normal(size=4)
    assert _rel(qdd0 + iwim(model, q, B) @ u, model.aba(q, v, B @ u)) < 1e-9


def _task(model, rng):
    nv = model.nv
    q = model.integrate(model.neutral(), rng.uniform(-0.5, 0.5, nv))
    v = rng.normal(size=nv)
    links = model.link_names
    J = np.vstack([model.jacobian(q, links[-1]), model.jacobian(q, links[len(links) // 2])[:3]])
    jv = np.r_[
        model.jacobian_dot_times_v(q, v, links[-1]),
        model.jacobian_dot_times_v(q, v, links[len(links) // 2])[:3],
    ]
    return q, v, J, jv


def _actuated_task(robot, seed):
    """(model, rng, q, v, J, jv, S): :func:`_task` of the floating-base ``robot`` from
    ``default_rng(seed)``, every joint actuated (S (nv, nv - 6) selects them)."""
    model = RobotModel.from_urdf(robot_path(robot), floating_base=True)
    rng = np.random.default_rng(seed)
    q, v, J, jv = _task(model, rng)
    nj = model.nv - 6
    S = np.zeros((model.nv, nj))
    S[6:] = np.eye(nj)
    return model, rng, q, v, J, jv, S


def test_task_space_input_realizes_the_command():
    model, rng, q, v, J, jv, S = _actuated_task("humanoid", 23)
    cmd = rng.normal(size=J.shape[0])
    info = {}
    u = task_space_input(model, q, v, J, jv, cmd, S, info=info)
    qdd = model.aba(q, v, S @ u)  # the full nonlinear forward dynamics
    assert _rel(J @ qdd + jv, cmd) < 1e-8
    assert info["status"] == "lstsq" and not info["fallback"] and info["residual"] < 1e-8
    # Tikhonov damping: smaller inputs, larger task error, monotonically in the damping
    norms, res = [np.linalg.norm(u)], [info["residual"]]
    for lam in (1e-6, 1e-4, 1e-2):
        ul = task_space_input(model, q, v, J, jv, cmd, S, damping=lam, info=info)
        assert info["status"] == "damped"
        norms.append(np.linalg.norm(ul))
        res.append(info["residual"])
    assert all(a >= b for a, b in zip(norms, norms[1:], strict=False)), norms
    assert all(a <= b + 1e-12 for a, b in zip(res, res[1:], strict=False)), res


@pytest.mark.parametrize("damping", [0.0, 1e-3])
def test_task_space_input_with_bounds_matches_bounded_least_squares(damping):
    model, rng, q, v, J, jv, S = _actuated_task("quadruped", 24)
    nj = S.shape[1]
    cmd = 20.0 * rng.normal(size=J.shape[0])
    u_free = task_space_input(model, q, v, J, jv, cmd, S, damping=damping)
    bound = 0.5 * np.max(np.abs(u_free))
    lo, hi = np.full(nj, -bound), np.full(nj, bound)
    hi[0] = np.inf  # an unbounded entry
    info = {}
    u = task_space_input(model, q, v, J, jv, cmd, S, damping=damping, lower=lo, upper=hi, info=info)
    assert info["status"].startswith("osqp") and not info["fallback"]
    assert np.all(u >= lo - 1e-12) and np.all(u <= hi + 1e-12)
    # independent reference: scipy's bounded least squares on the same (stacked) problem
    Bhat = model.minverse(q) @ S
    A = J @ Bhat
    b = cmd - J @ free_acceleration(model, q, v) - jv
    if damping:
        A = np.vstack([A, np.sqrt(damping) * np.eye(nj)])
        b = np.r_[b, np.zeros(nj)]
    ref = lsq_linear(A, b, bounds=(lo, hi), method="bvls", tol=1e-14).x
    cost = lambda x: 0.5 * np.sum((A @ x - b) ** 2)  # noqa: E731
    assert cost(u) <= cost(ref) * (1 + 1e-6) + 1e-9
    assert _rel(u, ref) < 1e-4


def test_task_space_input_bad_input():
    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q, v = model.neutral(), np.zeros(model.nv)
    J = model.jacobian(q, model.link_names[-1])
    S = np.eye(model.nv)
    with pytest.raises(ValueError, match="J must have shape"):
        task_space_input(model, q, v, J[:, :-1], np.zeros(6), np.zeros(6), S)
    with pytest.raises(ValueError, match="task_acceleration"):
        task_space_input(model, q, v, J, np.zeros(6), np.full(6, np.nan), S)
    with pytest.raises(ValueError, match="damping"):
        task_space_input(model, q, v, J, np.zeros(6), np.zeros(6), S, damping=-1.0)
    with pytest.raises(ValueError, match="lower"):
        task_space_input(
            model, q, v, J, np.zeros(6), np.zeros(6), S, lower=np.ones(model.nv),
            upper=np.zeros(model.nv),
        )  # fmt: skip


def test_gamma_of_eq8_is_unit_lower_triangular_and_factors_m():
    """The Gamma of Krög et al., eq. (8), Gamma_ij = D_i^-1 U_i^T S_j for j an ancestor of i, built
    from the articulated quantities the IWIM recursion leaves in its workspace: unit lower
    triangular (depth-first order), and Gamma^T D Gamma = M (CRBA). So M^-1 B =
    Gamma^-1 D^-1 Gamma^-T B: the inward pass applies Gamma^-T, the outward pass the forward
    substitution with Gamma -- no inverse is ever formed."""
    from wbc_dynamics.linearization import workspace

    for name in ("branched", "humanoid"):
        model = RobotModel.from_urdf(robot_path(name), floating_base=True)
        nv = model.nv
        rng = np.random.default_rng(26)
        q = model.integrate(model.neutral(), rng.uniform(-1, 1, nv))
        X = iwim(model, q, np.eye(nv))
        data = workspace(model).rigid_body
        arrays = model.model_arrays
        G = np.zeros((nv, nv))
        D = np.zeros((nv, nv))
        for i in range(arrays.parent.shape[0]):
            iv, n = arrays.v_index[i], arrays.joint_nv[i]
            D[iv : iv + n, iv : iv + n] = data.joint_articulated_inertia[i, :n, :n]
            G[iv : iv + n, iv : iv + n] = np.eye(n)
            DiUt = (data.joint_articulated_inertia_inverse[i, :n, :n]
                    @ data.articulated_inertia_times_subspace[i, :, :n].T)
            j = arrays.parent[i]
            while j >= 0:
                jv, nj = arrays.v_index[j], arrays.joint_nv[j]
                G[iv : iv + n, jv : jv + nj] = DiUt @ data.motion_subspace[j, :, :nj]
                j = arrays.parent[j]
        assert not np.any(np.triu(G, 1)) and np.array_equal(np.diag(G), np.ones(nv))
        M = model.mass_matrix(q)
        assert _rel(G.T @ D @ G, M) < 1e-12
        assert _rel(G.T @ D @ G @ X, np.eye(nv)) < 1e-9


pin = pytest.importorskip("pinocchio", reason="pinocchio (pip install pin) is the test oracle")


def test_iwim_against_pinocchio_minverse():
    model = RobotModel.from_urdf(robot_path("humanoid"), floating_base=True)
    pmodel = pin.buildModelFromUrdf(robot_path("humanoid"), pin.JointModelFreeFlyer())
    pdata = pmodel.createData()
    rng = np.random.default_rng(25)
    for _ in range(10):
        q = model.integrate(model.neutral(), rng.uniform(-1.5, 1.5, model.nv))
        Mi = pin.computeMinverse(pmodel, pdata, q)
        Mi = np.triu(Mi) + np.triu(Mi, 1).T
        B = rng.normal(size=(model.nv, 6))
        assert _rel(iwim(model, q, B), Mi @ B) < 1e-10
