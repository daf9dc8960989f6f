"""Every vendor URDF of example-robot-data, fixed and floating base, against Pinocchio.

For each URDF under example-robot-data's ``robots`` directory and each base (fixed, free-flyer)
that Pinocchio 4 loads, our loader must load it too (inconsistent inertias as given, with
warnings) and agree with Pinocchio to ``RTOL`` relative (to the largest entry of Pinocchio's
result) on ``N_STATES`` random states: rnea, CRBA, M^-1, ABA, every link's placement, and every
link's Jacobian (world-aligned and local). M^-1 and ABA, whose accuracy is bounded by the
conditioning of M, are compared to ``max(RTOL, cond(M) eps)``; where a joint moves no mass
(massless finger links: M singular, Pinocchio returns inf/nan) ours must raise instead.
Continuous joints are q = angle here and (cos, sin)
in Pinocchio: configurations are mapped. ``test_corpus_size`` fails when the corpus is missing
or unexpectedly small and prints how many variants are compared.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from model_helpers import random_configuration

from wbc_dynamics import RobotModel, URDFError, URDFWarning

try:
    import pinocchio as pin
except ImportError:  # test_corpus_size fails loudly; the variants have nothing to compare with
    pin = None

N_STATES = 8
RTOL = 1e-9
#: example-robot-data 6.0 ships 69 URDFs; Pinocchio 4.1 loads 130 of the 138 variants.
MIN_VARIANTS = 120


def corpus_dir() -> Path | None:
    """example-robot-data's ``robots`` directory (a cmeel wheel: under site-packages)."""
    for entry in sys.path:
        path = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if path.is_dir():
            return path
    return None


ROOT = corpus_dir()
URDFS = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.urdf")) if ROOT else []
VARIANTS = [(urdf, fb) for urdf in URDFS for fb in (False, True)]


def pinocchio_model(path: str, floating_base: bool):
    """Pinocchio's model of the variant, or None when Pinocchio does not load it."""
    try:
        if floating_base:
            return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        return pin.buildModelFromUrdf(path)
    except Exception:  # Pinocchio raises RuntimeError/ValueError subclasses from C++
        return None


class IndexMap:
    """Our (q, v) <-> Pinocchio's (q, v) for a model and the same robot in Pinocchio."""

    def __init__(self, model: RobotModel, pmodel) -> None:
        off_q = 7 if model.floating_base else 0
        off_v = 6 if model.floating_base else 0
        self.v_index = np.arange(model.nv)  # our v index -> Pinocchio v index
        self.q_slots: list[tuple[int, int, int]] = []  # (our q index, pin q index, pin nq)
        pin_ids = {name: k for k, name in enumerate(pmodel.names)}
        for k, name in enumerate(model.joint_names):
            jm = pmodel.joints[pin_ids[name]]
            self.v_index[off_v + k] = jm.idx_v
            self.q_slots.append((off_q + k, jm.idx_q, jm.nq))
        if model.floating_base:
            jm = pmodel.joints[pin_ids["root_joint"]]
            assert jm.idx_q == 0 and jm.idx_v == 0
            self.v_index[:6] = np.arange(6)
        self.pnq = pmodel.nq

    def q(self, q: np.ndarray, floating_base: bool) -> np.ndarray:
        out = np.zeros(self.pnq)
        if floating_base:
            out[:7] = q[:7]
        for ours, theirs, nq in self.q_slots:
            if nq == 2:
                out[theirs : theirs + 2] = (math.cos(q[ours]), math.sin(q[ours]))
            else:
                out[theirs] = q[ours]
        return out

    def v(self, v: np.ndarray) -> np.ndarray:
        out = np.empty_like(v)
        out[self.v_index] = v
        return out

    def from_pin_v(self, v_pin: np.ndarray) -> np.ndarray:
        return v_pin[self.v_index]

    def from_pin_mat(self, M: np.ndarray) -> np.ndarray:
        return M[np.ix_(self.v_index, self.v_index)]


def random_state(model: RobotModel, rng: np.random.Generator):
    """Joints within their limits clipped to +-3, base as :func:`random_configuration`; v and a
    standard normal."""
    lo = np.maximum(np.where(np.isfinite(model.position_lower), model.position_lower, -3.0), -3.0)
    hi = np.minimum(np.where(np.isfinite(model.position_upper), model.position_upper, 3.0), 3.0)
    q = random_configuration(model, rng, np.minimum(lo, hi), np.maximum(lo, hi))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _rel(ours: np.ndarray, theirs: np.ndarray) -> float:
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    return float(np.max(np.abs(ours - theirs))) / scale if scale > 0.0 else 0.0


def compare_with_pinocchio(model: RobotModel, pmodel, n_states: int, seed: int = 0) -> dict:
    """Worst relative error per quantity over ``n_states`` random states."""
    pdata = pmodel.createData()
    maps = IndexMap(model, pmodel)
    rng = np.random.default_rng(seed)
    links = [n for n in model.link_names if pmodel.existFrame(n, pin.BODY)]
    frame_ids = [pmodel.getFrameId(n, pin.BODY) for n in links]
    worst = dict.fromkeys(("rnea", "crba", "minverse", "aba", "placement", "jacobian"), 0.0)
    for _ in range(n_states):
        q, v, a = random_state(model, rng)
        qp, vp, ap = maps.q(q, model.floating_base), maps.v(v), maps.v(a)
        if model.nv == 0:  # a fixed single body: only placements (Pinocchio's M^-1 crashes)
            pin.framesForwardKinematics(pmodel, pdata, qp)
            for link, fid in zip(links, frame_ids, strict=True):
                T = pdata.oMf[fid].homogeneous
                worst["placement"] = max(
                    worst["placement"], _rel(model.frame_placement(q, link), T)
                )
            continue
        tau = pin.rnea(pmodel, pdata, qp, vp, ap).copy()
        worst["rnea"] = max(worst["rnea"], _rel(model.rnea(q, v, a), maps.from_pin_v(tau)))
        M = pin.crba(pmodel, pdata, qp).copy()
        M = np.triu(M) + np.triu(M, 1).T
        worst["crba"] = max(worst["crba"], _rel(model.mass_matrix(q), maps.from_pin_mat(M)))
        if model.massless_joints:
            # M is singular (Pinocchio returns inf/nan): ours must say so instead
            with pytest.raises(ValueError, match="singular.*move.*no mass"):
                model.minverse(q)
            with pytest.raises(ValueError, match="singular"):
                model.aba(q, v, maps.from_pin_v(tau))
        else:
            # M^-1 and ABA: accuracy limited by the conditioning of M (both implementations
            # differ from LAPACK's inverse by ~cond(M) eps on ill-conditioned robots)
            tol = max(RTOL, np.linalg.cond(M) * np.finfo(float).eps) / RTOL
            try:
                Minv = pin.computeMinverse(pmodel, pdata, qp).copy()
                Minv = np.triu(Minv) + np.triu(Minv, 1).T
            except RuntimeError:  # Pinocchio 4.1 has no M^-1 with mimic joints: invert its M
                Minv = np.linalg.inv(M)
            worst["minverse"] = max(
                worst["minverse"], _rel(model.minverse(q), maps.from_pin_mat(Minv)) / tol
            )
            # Pinocchio's ABA of Pinocchio's rnea(a) is a; ours must give a too
            worst["aba"] = max(worst["aba"], _rel(model.aba(q, v, maps.from_pin_v(tau)), a) / tol)
        pin.computeJointJacobians(pmodel, pdata, qp)
        pin.updateFramePlacements(pmodel, pdata)
        for link, fid in zip(links, frame_ids, strict=True):
            T = pdata.oMf[fid].homogeneous
            worst["placement"] = max(worst["placement"], _rel(model.frame_placement(q, link), T))
            for frame, ref in (("world", pin.LOCAL_WORLD_ALIGNED), ("local", pin.LOCAL)):
                J = pin.getFrameJacobian(pmodel, pdata, fid, ref)[:, maps.v_index]
                worst["jacobian"] = max(
                    worst["jacobian"], _rel(model.jacobian(q, link, frame=frame), J)
                )
    return worst


def test_corpus_size():
    """The corpus is installed and (nearly) all of it is compared; prints the count."""
    assert pin is not None, "pinocchio (requirements-dev.txt: pin) is the oracle"
    assert ROOT is not None, "example-robot-data (requirements-dev.txt) is not installed"
    loaded = [v for v in VARIANTS if pinocchio_model(str(ROOT / v[0]), v[1]) is not None]
    print(
        f"\nrobot corpus: {len(URDFS)} URDFs, {len(VARIANTS)} fixed/floating variants, "
        f"{len(loaded)} loaded by Pinocchio {pin.__version__} and compared"
    )
    assert len(loaded) >= MIN_VARIANTS


def load_variant(urdf: str, floating_base: bool, warmup: bool | str = True):
    """(our model, Pinocchio's model) of a corpus variant; skips the test where Pinocchio
    does not load it."""
    assert pin is not None, "pinocchio (requirements-dev.txt: pin) is the oracle"
    path = str(ROOT / urdf)
    pmodel = pinocchio_model(path, floating_base)
    if pmodel is None:
        pytest.skip("Pinocchio does not load this variant either")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)  # inconsistent inertias, meshes: as given
        return RobotModel.from_urdf(path, floating_base=floating_base, warmup=warmup), pmodel


@pytest.mark.parametrize(
    "urdf,floating_base",
    VARIANTS,
    ids=[f"{u}-{'floating' if f else 'fixed'}" for u, f in VARIANTS],
)
def test_variant_matches_pinocchio(urdf, floating_base):
    model, pmodel = load_variant(urdf, floating_base)
    assert (model.nq + sum(j.nq == 2 for j in pmodel.joints), model.nv) == (pmodel.nq, pmodel.nv)
    assert model.total_mass == pytest.approx(sum(i.mass for i in pmodel.inertias), rel=1e-12)
    worst = compare_with_pinocchio(model, pmodel, N_STATES)
    assert max(worst.values()) <= RTOL, worst


LOCKED_CASES = {
    # a humanoid's upper body held still (the usual walking model)
    "talos_data/robots/talos_reduced.urdf": {
        "arm_left_1_joint": 0.3,
        "arm_left_2_joint": 0.4,
        "arm_right_4_joint": -1.2,
        "head_1_joint": 0.1,
        "torso_2_joint": 0.05,
    },
    # a continuous joint and a prismatic joint locked
    "tiago_description/robots/tiago.urdf": {
        "wheel_left_joint": 1.0,
        "torso_lift_joint": 0.2,
        "arm_4_joint": 1.1,
    },
}


@pytest.mark.parametrize("urdf", list(LOCKED_CASES))
@pytest.mark.parametrize("floating_base", [False, True])
def test_locked_joints_match_pinocchio_reduced_model(urdf, floating_base):
    assert pin is not None and ROOT is not None
    path = str(ROOT / urdf)
    locked = LOCKED_CASES[urdf]
    full = pinocchio_model(path, floating_base)
    q_ref = pin.neutral(full)
    for name, value in locked.items():
        jm = full.joints[full.getJointId(name)]
        q_ref[jm.idx_q : jm.idx_q + jm.nq] = (
            (math.cos(value), math.sin(value)) if jm.nq == 2 else value
        )
    reduced = pin.buildReducedModel(full, [full.getJointId(n) for n in locked], q_ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = RobotModel.from_urdf(path, floating_base=floating_base, locked_joints=locked)
    assert model.locked_joints == locked
    assert not set(locked) & set(model.joint_names)
    assert model.nv == reduced.nv
    worst = compare_with_pinocchio(model, reduced, N_STATES)
    assert max(worst.values()) <= RTOL, worst


@pytest.mark.parametrize("urdf", URDFS)
def test_mujoco_plant_is_the_description_as_mujoco_accepts_it(urdf):
    """The plant builds from the model's parsed description (no second parse) with its meshes,
    and MuJoCo's M and C v + g equal the dynamics core's on that description with the
    inertias the plant had to make MuJoCo-valid (``plant_description``) to 1e-9 relative;
    where nothing had to change, that is the URDF's own model."""
    from wbc_dynamics.sim.mujoco_model import MujocoPlant, plant_description

    path = str(ROOT / urdf)
    if pinocchio_model(path, True) is None:
        pytest.skip("Pinocchio does not load this URDF either")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # inconsistent inertias / meshes: as given
        model = RobotModel.from_urdf(path, floating_base=True, warmup=False)
        plant = MujocoPlant(model.description, floating_base=True, joint_order=model.joint_names)
        desc, adjusted, massless = plant_description(model.description, True)
        reference = RobotModel.from_urdf(desc, floating_base=True, warmup=False)
    assert (desc is model.description) == (not adjusted and not massless)
    resolved = [g for g in model.collision_geometry if g.kind == "mesh" and g.mesh_path]
    # every resolved collision mesh is in the plant (STL/OBJ files, DAE as hull vertices)
    assert plant.model.nmesh == len(resolved)
    rng = np.random.default_rng(3)
    for _ in range(2):
        q, v, _ = random_state(model, rng)
        plant.set_state(q, v)
        assert _rel(plant.mass_matrix(), reference.mass_matrix(q)) <= RTOL
        assert _rel(plant.nonlinear_effects(), reference.nonlinear_effects(q, v)) <= RTOL


MIMIC_URDFS = [
    "panda_description/urdf/panda.urdf",
    "pr2_description/urdf/pr2.urdf",
    "baxter_description/urdf/baxter.urdf",
    "tiago_pro_description/robots/tiago_pro.urdf",
]


@pytest.mark.parametrize("urdf", MIMIC_URDFS)
@pytest.mark.parametrize("floating_base", [False, True])
def test_coupled_mimic_matches_pinocchio_mimic_true(urdf, floating_base):
    """MimicModel (mimic joints follow their leaders) against buildModelFromUrdf(mimic=True);
    the default (independent mimic joints) is the corpus test above."""
    from wbc_dynamics.mimic import MimicModel

    assert pin is not None and ROOT is not None
    path = str(ROOT / urdf)
    root = [pin.JointModelFreeFlyer()] if floating_base else []
    pmodel = pin.buildModelFromUrdf(path, *root, mimic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = MimicModel.from_urdf(path, floating_base=floating_base)
    n_mimic = sum(j.shortname() == "JointModelMimic" for j in pmodel.joints)
    assert len(model.mimic_joints) == n_mimic > 0
    assert model.nv == pmodel.nv and model.nv == model.full.nv - n_mimic
    worst = compare_with_pinocchio(model, pmodel, N_STATES)
    assert max(worst.values()) <= RTOL, worst
    # the mimic joints sit where their leaders put them
    q = random_state(model, np.random.default_rng(5))[0]
    qf = model.full_configuration(q)
    for name, (leader, gain, offset) in model.mimic_joints.items():
        k, lead = model.full.joint_index(name), model.full.joint_index(leader)
        base = 7 if floating_base else 0
        assert qf[base + k] == pytest.approx(gain * qf[base + lead] + offset, abs=1e-15)


def test_coupled_mimic_where_pinocchio_cannot():
    """Pinocchio 4.1's mimic=True rejects talos_full_v2 ("the parent joint of the mimic joint is
    not in the kinematic tree": a leader after its follower); ours couples it. Checked by
    identities: rnea = M a + h with M = G^T M_full G, and aba inverts rnea. alex_psyonic_hands
    (also rejected by Pinocchio) names a leader that does not exist: a clear error here."""
    from wbc_dynamics.mimic import MimicModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = MimicModel.from_urdf(str(ROOT / "talos_data/robots/talos_full_v2.urdf"), True)
        with pytest.raises(URDFError, match="<mimic joint='index_q1'>: the leader does not"):
            MimicModel.from_urdf(str(ROOT / "alex_description/urdf/alex_psyonic_hands.urdf"))
    assert len(model.mimic_joints) >= 8 and model.nv == model.full.nv - len(model.mimic_joints)
    rng = np.random.default_rng(7)
    q, v, a = random_state(model, rng)
    tau = model.rnea(q, v, a)
    M = model.mass_matrix(q)
    np.testing.assert_allclose(
        tau - model.nonlinear_effects(q, v), M @ a, atol=1e-9 * abs(tau).max()
    )
    np.testing.assert_allclose(model.aba(q, v, tau), a, rtol=1e-7, atol=1e-9)


def free_dof_reference(pmodel, pdata, maps: IndexMap, qp, vp, actuated, qdd_act):
    """Contact-free inverse dynamics with the unactuated DoFs accelerating freely, from
    Pinocchio's M (``pin.crba``) and h (``pin.rnea`` with a = 0) in our v order: the base and
    passive accelerations solved from the unactuated rows, ``M_UU a_U = -(M_UA qdd_A + h_U)``,
    then ``tau_A = M_AU a_U + M_AA qdd_A + h_A``. Returns (tau_A, the largest entry of its two
    terms ``M_AU a_U`` and ``M_AA qdd_A + h_A``: the scale of the torques' rounding, which
    their sum can cancel far below)."""
    M = pin.crba(pmodel, pdata, qp).copy()
    M = maps.from_pin_mat(np.triu(M) + np.triu(M, 1).T)
    h = maps.from_pin_v(pin.rnea(pmodel, pdata, qp, vp, np.zeros(pmodel.nv)).copy())
    A = np.asarray(actuated)
    U = np.setdiff1d(np.arange(M.shape[0]), A)
    a_u = np.linalg.solve(M[np.ix_(U, U)], -(M[np.ix_(U, A)] @ qdd_act + h[U]))
    coupling, direct = M[np.ix_(A, U)] @ a_u, M[np.ix_(A, A)] @ qdd_act + h[A]
    return coupling + direct, max(np.abs(coupling).max(initial=0.0), np.abs(direct).max())


#: relative agreement (to the largest term of tau_A) of the controller's compiled method-none
#: tick with Pinocchio's block solution and with the Python formula it replaced (measured worst
#: over the corpus: 7e-14 and, where the replaced formula's Y is well conditioned, 5e-13)
FREE_DOF_RTOL = 1e-10


@pytest.mark.parametrize(
    "urdf,floating_base",
    VARIANTS,
    ids=[f"{u}-{'floating' if f else 'fixed'}" for u, f in VARIANTS],
)
def test_controller_method_none_with_free_dofs_matches_pinocchio(urdf, floating_base):
    """The controller's ``method: none`` tick with unactuated DoFs (the free-flyer base; a
    floating base with every fourth joint passive; a fixed base with every third joint passive)
    and without (a fixed base, every joint actuated: RNEA)
    against (a) Pinocchio's M and h with the unactuated accelerations solved
    (:func:`free_dof_reference`) and (b) the Python formula it replaced, computed here from our
    M^-1 and h: ``tau_A = Y^-1 (qdd_A + P_A M^-1 h)``, ``Y = P_A M^-1 P_A^T`` (Zapolsky &
    Drumwright, eqs. (37)-(39) with zero contact impulses), to ``FREE_DOF_RTOL`` or, for (b), Y's
    own accuracy ``cond(Y) eps`` where that is larger (with passive joints Y can be ill-conditioned:
    4e6 on icub_reduced). Where M is singular (joints that move no mass) (b) cannot be formed and
    M^-1 raises; the tick needs only M_UU regular and must still agree with (a)."""
    from wbc_dynamics.controller import WholeBodyController

    model, pmodel = load_variant(urdf, floating_base, warmup="control")
    n = len(model.joint_names)
    moving = [j for j in model.joint_names if j not in model.massless_joints]
    if n == 0:
        pytest.skip("no joint to command")
    cases = [[]]  # every joint actuated: the base free (floating), plain RNEA (fixed)
    passive = moving[1::4] if floating_base else moving[::3]
    if passive:
        cases.append(passive)
    pdata = pmodel.createData()
    maps = IndexMap(model, pmodel)
    rng = np.random.default_rng(11)
    o_q, o_v = (7, 6) if floating_base else (0, 0)
    for passive in cases:
        ctl = WholeBodyController({"floating_base": floating_base, "method": "none",
                                   "passive_joints": passive, "effort_limits": [np.inf]},
                                  model=model)
        act = [k for k, j in enumerate(model.joint_names) if j not in passive]
        A = o_v + np.array(act, dtype=np.int64)
        for _ in range(4):
            q, v, _ = random_state(model, rng)
            qdd = rng.normal(size=n)
            base = (q[:3], q[3:7], v[:3], v[3:6]) if floating_base else None
            tau = ctl.compute(q[o_q:], v[o_v:], qdd, base=base)
            assert not np.any(tau[[model.joint_names.index(j) for j in passive]])
            ref, scale = free_dof_reference(pmodel, pdata, maps, maps.q(q, floating_base),
                                            maps.v(v), A, qdd[act])
            err = np.abs(tau[act] - ref).max() / scale
            assert err <= FREE_DOF_RTOL, (passive, err)
            if model.massless_joints:
                continue
            Minv, h = model.minverse(q), model.nonlinear_effects(q, v)
            Y = Minv[np.ix_(A, A)]
            old = np.linalg.solve(Y, Minv[A, :] @ h + qdd[act])
            tol = max(FREE_DOF_RTOL, np.linalg.cond(Y) * np.finfo(float).eps)
            assert np.abs(tau[act] - old).max() / scale <= tol, (passive, tol)


@pytest.mark.parametrize("urdf", MIMIC_URDFS[:2])
def test_controller_method_none_on_a_coupled_mimic_model(urdf):
    """A :class:`MimicModel` has no flat kernel arrays: the controller's method none runs its
    documented Python fallback on the coupled model's M^-1 and h, floating base free, and gives
    the block solution of Pinocchio's ``mimic=True`` model."""
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.mimic import MimicModel

    assert pin is not None and ROOT is not None
    path = str(ROOT / urdf)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = MimicModel.from_urdf(path, floating_base=True)
    ctl = WholeBodyController({"floating_base": True, "method": "none",
                               "effort_limits": [np.inf]}, model=model)
    assert ctl._free_dof is None  # the fallback
    maps = IndexMap(model, pmodel)
    pdata = pmodel.createData()
    rng = np.random.default_rng(2)
    n = len(model.joint_names)
    for _ in range(3):
        q, v, _ = random_state(model, rng)
        qdd = rng.normal(size=n)
        tau = ctl.compute(q[7:], v[6:], qdd, base=(q[:3], q[3:7], v[:3], v[3:6]))
        ref, scale = free_dof_reference(pmodel, pdata, maps, maps.q(q, True), maps.v(v),
                                        np.arange(6, 6 + n), qdd)
        assert np.abs(tau - ref).max() / scale <= FREE_DOF_RTOL
