"""Analytical derivatives of inverse dynamics (Saccon et al., Tables 5-8) against independent
references.

* Pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives`` on every bundled robot, fixed
  and floating base, random states: 1e-9 relative. Pinocchio differentiates its free-flyer joint
  in the local (left-trivialized) tangent, H exp(delta), which is our convention, so no mapping
  of the columns is needed; its base rows are the base wrench in the base frame, as ours.
* Geometric finite differences (Saccon et al., Sec. 6 / Fig. 5): the base is perturbed as
  H exp(delta e_k) (``RobotModel.integrate``), joints and velocities by plain differences. The
  error shrinks with delta (second order, central differences) until round-off takes over; at
  delta = 1e-6 the analytical derivatives agree to 1e-6 relative.
"""

import numpy as np
import pytest

from wbc_dynamics import RobotModel
from wbc_dynamics.linearization import aba_derivatives, rnea_derivatives
from wbc_dynamics.robots import robot_path

ROBOTS = ["quadruped", "arm", "branched", "humanoid", "box"]
CASES = [(name, fb) for name in ROBOTS for fb in (False, True) if not (name == "box" and not fb)]
IDS = [f"{n}-{'floating' if f else 'fixed'}" for n, f in CASES]


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def model(request):
    name, fb = request.param
    return RobotModel.from_urdf(robot_path(name), floating_base=fb)


def _random_state(model, rng):
    q = model.integrate(model.neutral(), rng.uniform(-1.5, 1.5, model.nv))
    if model.floating_base:
        q[:3] = rng.normal(size=3)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _fd(f, model, q, v, x, delta):
    """Central finite differences of f(q, v, x) w.r.t. the tangent of q (geometric: through
    ``integrate``), w.r.t. v and w.r.t. x."""
    nv = model.nv
    dq, dv, dx = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = delta
        dq[:, k] = f(model.integrate(q, e), v, x) - f(model.integrate(q, -e), v, x)
        dv[:, k] = f(q, v + e, x) - f(q, v - e, x)
        dx[:, k] = f(q, v, x + e) - f(q, v, x - e)
    return dq / (2 * delta), dv / (2 * delta), dx / (2 * delta)


def _fd_rnea(model, q, v, a, delta):
    """:func:`_fd` of rnea w.r.t. q and v."""
    return _fd(model.rnea, model, q, v, a, delta)[:2]


def test_rnea_derivatives_match_finite_differences(model):
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(5):
        q, v, a = _random_state(model, rng)
        dq, dv, M = rnea_derivatives(model, q, v, a)
        fdq, fdv = _fd_rnea(model, q, v, a, 1e-6)
        worst = max(worst, _rel(dq, fdq), _rel(dv, fdv))
        # with respect to the accelerations the derivative is M (CRBA)
        assert _rel(M, model.mass_matrix(q)) < 1e-12
    assert worst < 1e-6, worst


def test_aba_derivatives_match_finite_differences(model):
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(3):
        q, v, a = _random_state(model, rng)
        tau = model.rnea(q, v, a)  # torques of O(1) accelerations: a physically scaled state
        ddq_dq, ddq_dv, Minv = aba_derivatives(model, q, v, tau)
        # central differences, d = 1e-5: truncation ~ d^2, round-off ~ eps |qdd| / d
        fdq, fdv, fdt = _fd(model.aba, model, q, v, tau, 1e-5)
        worst = max(worst, _rel(ddq_dq, fdq), _rel(ddq_dv, fdv), _rel(Minv, fdt))
    assert worst < 1e-6, worst


def test_finite_difference_error_study():
    """Saccon et al., Fig. 5: the FD error falls with delta (here O(delta^2)) until round-off
    grows."""
    model = RobotModel.from_urdf(robot_path("branched"), floating_base=True)
    rng = np.random.default_rng(5)
    q, v, a = _random_state(model, rng)
    dq, dv, _ = rnea_derivatives(model, q, v, a)
    deltas = 10.0 ** -np.arange(1, 13)
    errs = []
    for d in deltas:
        fdq, fdv = _fd_rnea(model, q, v, a, d)
        errs.append(max(_rel(dq, fdq), _rel(dv, fdv)))
    errs = np.array(errs)
    best = int(np.argmin(errs))
    # truncation regime: second order (a factor ~100 per decade) for the large deltas
    assert errs[0] / errs[1] > 30.0 and errs[1] / errs[2] > 30.0, errs
    # a well-chosen delta is in the middle, and there the agreement is far better than 1e-6
    assert 3 <= best <= 8 and errs[best] < 1e-8, errs
    # round-off regime: the smallest delta is clearly worse than the best one
    assert errs[-1] > 100.0 * errs[best], errs


def test_fixed_base_through_the_same_code():
    """A fixed base is the floating-base code without a base block: the fixed-base arm's
    derivatives equal the joint block of the floating-base arm held at the identity pose with
    zero base twist and acceleration, and agree with finite differences."""
    fixed = RobotModel.from_urdf(robot_path("arm"))
    floating = RobotModel.from_urdf(robot_path("arm"), floating_base=True)
    rng = np.random.default_rng(6)
    q, v, a = _random_state(fixed, rng)
    dq, dv, M = rnea_derivatives(fixed, q, v, a)
    assert dq.shape == (len(fixed.joint_names),) * 2
    qf = floating.neutral()
    qf[7:] = q
    vf = np.r_[np.zeros(6), v]
    af = np.r_[np.zeros(6), a]
    dqf, dvf, Mf = rnea_derivatives(floating, qf, vf, af)
    assert _rel(dq, dqf[6:, 6:]) < 1e-12
    assert _rel(dv, dvf[6:, 6:]) < 1e-12
    assert _rel(M, Mf[6:, 6:]) < 1e-12
    fdq, fdv = _fd_rnea(fixed, q, v, a, 1e-6)
    assert _rel(dq, fdq) < 1e-6 and _rel(dv, fdv) < 1e-6


def test_gravity_switch():
    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    rng = np.random.default_rng(7)
    q, v, a = _random_state(model, rng)
    dq0, dv0, _ = rnea_derivatives(model, q, v, a, gravity=False)
    g = model.gravity.copy()
    try:
        model.gravity = np.zeros(3)
        fdq, fdv = _fd_rnea(model, q, v, a, 1e-6)
    finally:
        model.gravity = g
    assert _rel(dq0, fdq) < 1e-6 and _rel(dv0, fdv) < 1e-6
    dq1, _, _ = rnea_derivatives(model, q, v, a)
    assert _rel(dq1, dq0) > 1e-3  # gravity matters for the base orientation and joint columns


def test_bad_input_raises_value_error():
    model = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q = model.neutral()
    z = np.zeros(model.nv)
    bad = z.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="v contains NaN"):
        rnea_derivatives(model, q, bad, z)
    with pytest.raises(ValueError, match="a contains NaN"):
        rnea_derivatives(model, q, z, bad)
    with pytest.raises(ValueError, match="tau contains NaN"):
        aba_derivatives(model, q, z, bad)
    q2 = q.copy()
    q2[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match="quaternion"):
        aba_derivatives(model, q2, z, z)
    with pytest.raises(ValueError, match="length"):
        rnea_derivatives(model, q[:-1], z, z)


pin = pytest.importorskip("pinocchio", reason="pinocchio (pip install pin) is the test oracle")


def _pin_model(name, fb):
    if fb:
        return pin.buildModelFromUrdf(robot_path(name), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(robot_path(name))


def _sym(U):
    return np.triu(U) + np.triu(U, 1).T


@pytest.mark.parametrize(("name", "fb"), CASES, ids=IDS)
def test_derivatives_match_pinocchio(name, fb):
    model = RobotModel.from_urdf(robot_path(name), floating_base=fb)
    pmodel = _pin_model(name, fb)
    pdata = pmodel.createData()
    rng = np.random.default_rng(8)
    worst = {"dtau_dq": 0.0, "dtau_dv": 0.0, "M": 0.0, "ddq_dq": 0.0, "ddq_dv": 0.0, "Minv": 0.0}
    for _ in range(20):
        q, v, a = _random_state(model, rng)
        dq, dv, M = rnea_derivatives(model, q, v, a)
        pin.computeRNEADerivatives(pmodel, pdata, q, v, a)
        worst["dtau_dq"] = max(worst["dtau_dq"], _rel(dq, pdata.dtau_dq))
        worst["dtau_dv"] = max(worst["dtau_dv"], _rel(dv, pdata.dtau_dv))
        worst["M"] = max(worst["M"], _rel(M, _sym(pdata.M)))
        tau = 5.0 * rng.normal(size=model.nv)
        ddq_dq, ddq_dv, Minv = aba_derivatives(model, q, v, tau)
        pin.computeABADerivatives(pmodel, pdata, q, v, tau)
        worst["ddq_dq"] = max(worst["ddq_dq"], _rel(ddq_dq, pdata.ddq_dq))
        worst["ddq_dv"] = max(worst["ddq_dv"], _rel(ddq_dv, pdata.ddq_dv))
        worst["Minv"] = max(worst["Minv"], _rel(Minv, _sym(pdata.Minv)))
    assert max(worst.values()) < 1e-9, worst
