"""Contact geometry (Zapolsky & Drumwright, Sec. 3.3 / Fig. 4, Appendix B) against independent
references.

N, S, T rows are compared with Pinocchio point Jacobians (LOCAL_WORLD_ALIGNED frame Jacobian
shifted to the contact point) and with finite differences of the contact-point position.
"""

import numpy as np
import pinocchio as pin
import pytest
from contact_helpers import arm_box, quadruped

from wbc_dynamics.contact.geometry import (
    ContactModel,
    FreeBody,
    HalfSpace,
    SphereObstacle,
    contact_frame,
)


def _pin_point_jacobian(pm, q, link, point_world):
    d = pm.createData()
    pin.computeJointJacobians(pm, d, q)
    pin.updateFramePlacements(pm, d)
    fid = pm.getFrameId(link)
    Jf = pin.getFrameJacobian(pm, d, fid, pin.LOCAL_WORLD_ALIGNED)
    r = point_world - d.oMf[fid].translation
    return Jf[:3] - pin.skew(r) @ Jf[3:], d.oMf[fid]


def _random_pose(m, q0, rng, scale=0.2):
    q = q0.copy()
    q[7:] += scale * rng.standard_normal(m.nv - 6)
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    quat = pin.Quaternion(pin.AngleAxis(0.2, axis)).coeffs()  # x y z w
    q[3:7] = quat
    return q


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_halfspace_rows_match_pinocchio(seed):
    m, pm, _, q0 = quadruped()
    rng = np.random.default_rng(seed)
    q = _random_pose(m, q0, rng)
    normal = np.array([0.2, -0.1, 1.0])
    plane = HalfSpace.through_point("slope", [0.0, 0.0, -0.1], normal, mu=0.3)
    cm = ContactModel(m, features=[plane], margin=10.0)  # every sphere is a candidate
    p = cm.build(q, np.zeros(m.nv), np.zeros(12)).validate()
    assert p.nc == 4
    n = normal / np.linalg.norm(normal)
    for i, cid in enumerate(p.contact_ids):
        link = cid[0]
        Jp, oMf = _pin_point_jacobian(pm, q, link, p.points[i])
        c = oMf.translation  # sphere centred at the foot link origin
        r = 0.0125
        phi = n @ c - n @ np.array([0.0, 0.0, -0.1]) - r
        assert abs(p.phi[i] - phi) < 1e-12
        np.testing.assert_allclose(p.points[i], c - (r + 0.5 * phi) * n, atol=1e-12)
        F = p.frames[i]
        np.testing.assert_allclose(F.T @ F, np.eye(3), atol=1e-12)
        assert np.linalg.det(F) > 0
        np.testing.assert_allclose(F[:, 0], n, atol=1e-12)
        np.testing.assert_allclose(p.N[i], F[:, 0] @ Jp, atol=1e-10)
        np.testing.assert_allclose(p.S[i], F[:, 1] @ Jp, atol=1e-10)
        np.testing.assert_allclose(p.T[i], F[:, 2] @ Jp, atol=1e-10)
        assert p.mu[i] == 0.3
    assert p.contact_ids[0] == ("LF_foot", 0, "slope")


def test_phi_dot_equals_nv_finite_difference():
    """phi_dot = N v (Sec. 4.1) checked by finite differences of phi along q(t) = q + t v."""
    m, pm, _, q0 = quadruped()
    rng = np.random.default_rng(3)
    q = _random_pose(m, q0, rng)
    v = rng.standard_normal(m.nv)
    cm = ContactModel(m, features=[HalfSpace.ground(-0.05), SphereObstacle("ball", (0.3, 0.1,
                      0.0), 0.1)], margin=10.0)
    p = cm.build(q, v, np.zeros(12))
    h = 1e-6
    pp = cm.build(m.integrate(q, v, h), v, np.zeros(12))
    pm_ = cm.build(m.integrate(q, v, -h), v, np.zeros(12))
    assert pp.contact_ids == p.contact_ids == pm_.contact_ids
    fd = (pp.phi - pm_.phi) / (2 * h)
    np.testing.assert_allclose(p.N @ v, fd, atol=1e-6)


def test_sphere_obstacle_geometry():
    m, pm, _, q0 = quadruped()
    center = np.array([0.3, 0.2, 0.05])
    R = 0.1
    cm = ContactModel(m, features=[SphereObstacle("ball", tuple(center), R, mu=0.7)],
                      margin=10.0)
    p = cm.build(q0, np.zeros(m.nv), np.zeros(12))
    d = pm.createData()
    pin.framesForwardKinematics(pm, d, q0)
    for i, cid in enumerate(p.contact_ids):
        c = d.oMf[pm.getFrameId(cid[0])].translation
        dist = np.linalg.norm(c - center)
        n = (c - center) / dist
        phi = dist - 0.0125 - R
        assert abs(p.phi[i] - phi) < 1e-12
        np.testing.assert_allclose(p.frames[i][:, 0], n, atol=1e-12)
        # midpoint of the closest points (Fig. 4, right)
        np.testing.assert_allclose(p.points[i], 0.5 * (c - 0.0125 * n + center + R * n),
                                   atol=1e-12)
        Jp, _ = _pin_point_jacobian(pm, q0, cid[0], p.points[i])
        np.testing.assert_allclose(p.N[i], n @ Jp, atol=1e-10)


def test_margin_selects_candidates_and_ids_are_stable():
    m, pm, cm, q0 = quadruped()
    q = q0.copy()
    p0 = cm.build(q, np.zeros(m.nv), np.zeros(12))
    assert p0.nc == 4
    # lift the LF leg by bending its knee: LF leaves the margin, the others keep their identity
    q[9] -= 0.3
    q[8] -= 0.3
    p1 = cm.build(q, np.zeros(m.nv), np.zeros(12))
    assert ("LF_foot", 0, "ground") not in p1.contact_ids
    assert set(p1.contact_ids) <= set(p0.contact_ids) and p1.nc == 3
    for cid in p1.contact_ids:
        i0, i1 = p0.contact_ids.index(cid), p1.contact_ids.index(cid)
        np.testing.assert_allclose(p1.frames[i1], p0.frames[i0])  # stable tangent choice


def test_contact_frame_is_deterministic_and_continuous():
    rng = np.random.default_rng(4)
    for _ in range(50):
        n = rng.standard_normal(3)
        n /= np.linalg.norm(n)
        F = contact_frame(n)
        np.testing.assert_allclose(F.T @ F, np.eye(3), atol=1e-12)
        assert np.linalg.det(F) > 0
        F2 = contact_frame(n + 1e-7 * rng.standard_normal(3))
        if abs(n[0]) < 0.89 or abs(n[0]) > 0.91:
            np.testing.assert_allclose(F, F2, atol=1e-5)
    # ground normal +z: s = world x, t = world y
    np.testing.assert_allclose(contact_frame([0, 0, 1]), [[0, 1, 0], [0, 0, 1], [1, 0, 0]],
                               atol=1e-15)


def test_box_relative_jacobian_matches_models():
    """Box contacts: N = n^T (J_finger(p) - J_box(p)), both from independent Jacobians."""
    arm, box, parm, cm, q, bq = arm_box()
    rng = np.random.default_rng(5)
    qb = bq.copy()
    qb[:3] += 0.002 * rng.standard_normal(3)
    p = cm.build(q, np.zeros(arm.nv), np.zeros(arm.nv), [qb], [np.zeros(6)])
    assert p.nc == 4
    Tb = box.frame_placement(qb, "box")
    for i, cid in enumerate(p.contact_ids):
        assert cid[2] == "box"
        Jr, _ = _pin_point_jacobian(parm, q, cid[0], p.points[i])
        rl = Tb[:3, :3].T @ (p.points[i] - Tb[:3, 3])
        Jb = box.jacobian(qb, "box", point=rl, frame="world")[:3]
        J = np.hstack([Jr, -Jb])
        F = p.frames[i]
        np.testing.assert_allclose(p.N[i], F[:, 0] @ J, atol=1e-10)
        np.testing.assert_allclose(p.S[i], F[:, 1] @ J, atol=1e-10)
        np.testing.assert_allclose(p.T[i], F[:, 2] @ J, atol=1e-10)
        # the normal points from the box into the fingertip (force on the robot)
        c = p.points[i] + (0.01 + 0.5 * p.phi[i]) * F[:, 0]
        assert np.linalg.norm(Tb[:3, :3].T @ (c - Tb[:3, 3]), ord=np.inf) > 0.05 - 1e-9


def test_box_penetration_uses_least_penetration_face():
    arm, box, parm, cm, q, bq = arm_box()
    qb = bq.copy()
    p0 = cm.build(q, np.zeros(arm.nv), np.zeros(arm.nv), [qb], [np.zeros(6)])
    qb[1] += 0.003  # box moves +y by 3 mm: fingers on +y penetrate, fingers on -y separate
    p1 = cm.build(q, np.zeros(arm.nv), np.zeros(arm.nv), [qb], [np.zeros(6)])
    for i in range(4):
        ny = p0.frames[i][1, 0]
        np.testing.assert_allclose(p1.phi[i], p0.phi[i] - 0.003 * np.sign(ny), atol=1e-9)
        np.testing.assert_allclose(p1.frames[i], p0.frames[i], atol=1e-9)


def test_bad_configuration_raises_named_errors():
    m, pm, cm, q0 = quadruped()
    with pytest.raises(ValueError, match="q"):
        cm.build(np.full(m.nq, np.nan), np.zeros(m.nv), np.zeros(12))
    with pytest.raises(ValueError, match="contact link 'LF_shank': no collision geometry"):
        ContactModel(m, contact_links=["LF_shank"], features=[HalfSpace.ground()])
    with pytest.raises(ValueError, match=r"contact_points\['LF_shank'\]\[0\]: radius"):
        ContactModel(m, contact_links=["LF_shank"], features=[HalfSpace.ground()],
                     points={"LF_shank": [((0.0, 0.0, -0.1), -0.01)]})
    with pytest.raises(ValueError, match="not contact links"):
        ContactModel(m, contact_links=["LF_foot"], features=[HalfSpace.ground()],
                     points={"LF_shank": [((0.0, 0.0, -0.1), 0.01)]})
    with pytest.raises(ValueError, match="link"):
        ContactModel(m, contact_links=["no_such_link"], features=[HalfSpace.ground()])
    with pytest.raises(ValueError, match="margin"):
        ContactModel(m, features=[HalfSpace.ground()], margin=-1.0)
    with pytest.raises(ValueError, match="normal"):
        HalfSpace.through_point("x", [0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="normal"):
        ContactModel(m, features=[HalfSpace("bad", (0.0, 0.0, 0.0))])
    with pytest.raises(ValueError, match="radius"):
        ContactModel(m, features=[SphereObstacle("ball", (0.0, 0.0, 0.0), -1.0)])
    with pytest.raises(ValueError, match="mu"):
        ContactModel(m, features=[HalfSpace.ground(mu=-0.5)])
    with pytest.raises(ValueError, match="unique"):
        ContactModel(m, features=[HalfSpace.ground(), HalfSpace.ground(0.1)])
    arm, box, parm, cmb, q, bq = arm_box()
    with pytest.raises(ValueError, match="quaternion"):
        cmb.build(q, np.zeros(arm.nv), np.zeros(arm.nv), [np.r_[bq[:3], 0, 0, 0, 2.0]],
                  [np.zeros(6)])
    with pytest.raises(ValueError, match="FreeBody"):
        FreeBody.from_model("arm", arm)


def test_extra_points_per_foot():
    """Sec. 8.4.2: several contact samples per foot (used by the runtime benchmark)."""
    m, pm, _, q0 = quadruped()
    extra = {f: [((0.003, 0.0, 0.0), 0.0125), ((-0.003, 0.0, 0.0), 0.0125)]
             for f in ("LF_foot", "LH_foot", "RF_foot", "RH_foot")}
    cm = ContactModel(m, features=[HalfSpace.ground()], extra_points=extra, margin=0.005)
    p = cm.build(q0, np.zeros(m.nv), np.zeros(12))
    assert p.nc == 12
    assert len(set(p.contact_ids)) == 12


def test_phi_deadband_and_no_aliasing():
    m, pm, _, q0 = quadruped()
    cm = ContactModel(m, features=[HalfSpace.ground(-0.0003)], margin=0.005, phi_deadband=1e-3)
    cm0 = ContactModel(m, features=[HalfSpace.ground(-0.0003)], margin=0.005)
    v = np.zeros(m.nv)
    qdd = np.zeros(12)
    p = cm.build(q0, v, qdd)
    p0 = cm0.build(q0, v, qdd)
    np.testing.assert_allclose(p0.phi, 0.0003, atol=1e-12)
    np.testing.assert_array_equal(p.phi, 0.0)  # inside the deadband
    cm2 = ContactModel(m, features=[HalfSpace.ground(-0.003)], margin=0.005, phi_deadband=1e-3)
    np.testing.assert_allclose(cm2.build(q0, v, qdd).phi, 0.002, atol=1e-12)
    v[0] = 1.0
    qdd[0] = 2.0
    assert p.v[0] == 0.0 and p.qdd_des[0] == 0.0  # the problem owns its arrays
    with pytest.raises(ValueError, match="phi_deadband"):
        ContactModel(m, features=[HalfSpace.ground()], phi_deadband=-1.0)
