"""The contact assembly's one kinematics pass (``kernels.world.dynamics_terms`` feeding
``contact.geometry.candidates_kernel``) gives the numbers of the separate passes to the bit:
M^-1 of ``RobotModel.minverse``, h = C v + g of ``RobotModel.rnea`` and the contact rows of
the candidates' own forward-kinematics pass (``assemble(dynamics=False)``)."""

import numpy as np
import pytest

from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.model import RobotModel
from wbc_dynamics.robots import robot_info, robot_path

ROWS = ("N", "S", "T", "phi", "mu", "points", "frames", "slot")


def _model(robot: str) -> tuple[RobotModel, ContactModel, np.ndarray]:
    m = RobotModel.from_urdf(robot_path(robot), floating_base=True)
    # a wide margin: every sphere is a candidate at any of the perturbed poses below
    cm = ContactModel(m, contact_links=robot_info(robot)["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=10.0, dt=1e-3)
    return m, cm, np.array(robot_info(robot)["standing_q"], dtype=np.float64)


@pytest.mark.parametrize("robot", ["quadruped", "humanoid"])
def test_one_pass_equals_the_separate_passes_to_the_bit(robot):
    m, cm, q0 = _model(robot)
    rng = np.random.default_rng(3)
    d = cm.data
    for _ in range(5):
        q = q0.copy()
        q[7:] += 0.3 * rng.standard_normal(m.nv - 6)
        axis = rng.standard_normal(3)
        axis /= np.linalg.norm(axis)
        q[3:6], q[6] = np.sin(0.2) * axis, np.cos(0.2)  # (x, y, z, w), 0.4 rad about axis
        v = rng.standard_normal(m.nv)
        nc = cm.assemble(q, v, dynamics=True)
        assert nc == len(cm.slot_ids) > 0  # every sphere within the 10 m margin
        Minv, h = d.Minv_robot.copy(), d.h_robot.copy()
        rows = {k: getattr(d, k)[:nc].copy() for k in ROWS}
        np.testing.assert_array_equal(Minv, m.minverse(q))
        np.testing.assert_array_equal(h, m.rnea(q, v, np.zeros(m.nv)))
        np.testing.assert_array_equal(d.v, v)
        assert cm.assemble(q, v, dynamics=False) == nc
        for k in ROWS:
            np.testing.assert_array_equal(getattr(d, k)[:nc], rows[k], err_msg=k)
        # M^-1 is the inverse of M (the numbers are right, not only the same)
        assert np.abs(Minv @ m.mass_matrix(q) - np.eye(m.nv)).max() < 1e-9


def test_invalid_state_is_rejected_naming_the_input():
    m, cm, q0 = _model("quadruped")
    v = np.zeros(m.nv)
    bad_v = v.copy()
    bad_v[3] = np.nan
    with pytest.raises(ValueError, match="(?i)velocit|\\bv\\b"):
        cm.assemble(q0, bad_v, dynamics=True)
    bad_q = q0.copy()
    bad_q[3:7] = (0.0, 0.0, 0.0, 2.0)
    with pytest.raises(ValueError, match="(?i)quaternion"):
        cm.assemble(bad_q, v, dynamics=True)
    # the model's state after a rejected call is the valid one's again
    assert cm.assemble(q0, v, dynamics=True) == len(cm.slot_ids)
    np.testing.assert_array_equal(cm.data.Minv_robot, m.minverse(q0))
