"""Walking from a velocity command (wbc_dynamics.gait.TrotWalker) in the MuJoCo closed loop:
the configured quadrupeds follow forward, sideways and turning commands with the gait
parameters computed from each robot, recover from a push, and keep walking under realistic
sensing and actuation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wbc_dynamics.gait import TrotWalker, walking_tasks
from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config
from wbc_dynamics.sim.imperfections import Imperfections


def _walk(robot: str, velocity, duration: float, push=None, level: float = 0.0):
    imp = Imperfections.realistic(level) if level else Imperfections()
    cfg = shipped_loop_config(robot, "walk", duration, imperfections=imp)
    cfg.reference_options = {"velocity": velocity if isinstance(velocity, str) else list(velocity)}
    cfg.push = push
    loop = ClosedLoop(cfg)
    return loop, loop.run()


def _yaw(q) -> float:
    x, y, z, w = q[3:7]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def _velocity(result, start: float) -> np.ndarray:
    """Mean base velocity [m/s] (world) from ``start`` [s] to the end."""
    k = int(np.searchsorted(result.t, start))
    return (result.base_pos[-1] - result.base_pos[k]) / (result.t[-1] - result.t[k])


CASES = [("go2", "forward"), ("go2", "sideways"), ("go2", "turning"),
         ("anymal_c", "forward"), ("anymal_c", "turning"), ("solo12", "sideways"),
         ("go1", "forward"), ("a1", "forward")]
COMMANDS = {"forward": (0.3, 0.0, 0.0), "sideways": (0.0, 0.3, 0.0), "turning": (0.0, 0.0, 0.3)}


@pytest.mark.parametrize("robot,direction", CASES, ids=[f"{r}-{d}" for r, d in CASES])
def test_quadruped_walks_at_the_commanded_velocity(robot, direction):
    """6 s from rest (the command is reached in 0.3 s): over the last 3 s the base moves at the
    command within 20 % (turning: the yaw rate within 20 %, the base within 5 cm/s of rest), no
    fall, the base above 90 % of its standing height."""
    cmd = COMMANDS[direction]
    loop, r = _walk(robot, cmd, 6.0)
    assert not r.failed, r.failure
    assert r.base_pos[:, 2].min() > 0.9 * loop.q_start[2]
    v = _velocity(r, 3.0)[:2]
    if direction == "turning":
        assert np.linalg.norm(v) < 0.05
        yaw_rate = (_yaw(loop.plant.get_state()[0]) - _yaw(loop.q_start)) / 6.0
        # 6 s at 0.3 rad/s, less the ramp's 0.15 s x 0.3 rad/s: 1.755 rad in all
        assert abs(yaw_rate * 6.0 - 1.755) < 0.2 * 1.755
    else:
        assert np.linalg.norm(v - np.array(cmd[:2])) < 0.2 * 0.3, v


def test_go2_follows_a_velocity_profile():
    """reference_options velocity as a profile (VelocityProfile text): 0.3 m/s forward for 2 s,
    then 0.3 m/s left (held): over the second half of each segment the base moves at that
    segment's command within 20 %, no fall."""
    loop, r = _walk("go2", "0.3,0,0@2;0,0.3,0", 4.0)
    assert not r.failed, r.failure
    assert loop.walker.command.tolist() == [0.0, 0.3, 0.0]
    for start, end, cmd in ((1.0, 2.0, (0.3, 0.0)), (3.0, 4.0, (0.0, 0.3))):
        k0, k1 = np.minimum(np.searchsorted(r.t, [start, end]), len(r.t) - 1)
        v = (r.base_pos[k1] - r.base_pos[k0])[:2] / (r.t[k1] - r.t[k0])
        assert np.linalg.norm(v - np.array(cmd)) < 0.2 * 0.3, (start, v)


def test_go2_recovers_from_a_lateral_push_while_walking():
    """A 0.1 s push of 30 % of its weight, sideways, at 2 s: it steps to catch itself and walks
    on at the commanded velocity."""
    loop, r = _walk("go2", (0.3, 0.0, 0.0), 5.0, push=(2.0, 0.1, (0.0, 0.3, 0.0)))
    assert not r.failed, r.failure
    v = _velocity(r, 3.5)[:2]
    assert np.linalg.norm(v - [0.3, 0.0]) < 0.06, v


def test_go2_walks_under_realistic_sensing_and_actuation():
    loop, r = _walk("go2", (0.3, 0.0, 0.0), 5.0, level=1.0)
    assert not r.failed, r.failure
    assert np.linalg.norm(_velocity(r, 2.5)[:2] - [0.3, 0.0]) < 0.06


def test_walking_tasks_and_walker_validation():
    params = walking_tasks("base", [("FL", (0, 0, -0.02)), ("FR", (0, 0, 0)), ("RL", (0, 0, 0)),
                                    ("RR", (0, 0, 0))])
    assert params["task_names"] == ["com", "trunk", "foot_FL", "foot_FR", "foot_RL", "foot_RR",
                                    "posture"]
    assert params["task_points"][6:9] == [0.0, 0.0, -0.02]
    assert len(params["task_points"]) == 3 * len(params["task_names"])
    loop, _ = _walk("go2", (0.0, 0.0, 0.0), 0.01)
    walker = loop.walker
    with pytest.raises(ValueError, match="non-finite"):
        walker.set_velocity(float("nan"), 0.0, 0.0)
    with pytest.raises(ValueError, match="needs four feet"):
        TrotWalker(loop.ctl.ctl, feet=["FL_foot"])


#: the Unitree B1 of example-robot-data (not in config/robots), configured as docs/robots.md's
#: "Bring your own robot" says: URDF, contact links, standing pose, a contact method
B1_YAML = """\
/**:
  ros__parameters:
    urdf_path: package://example-robot-data/robots/b1_description/urdf/b1.urdf
    floating_base: true
    contact_links: [FL_foot, FR_foot, RL_foot, RR_foot]
    method: lcp_noslip
    kp: [400.0]
    kd: [40.0]
    contact_state_filter: true
    standing:
      srdf: package://example-robot-data/robots/b1_description/srdf/b1.srdf
      pose: standing
"""


@pytest.mark.parametrize("direction", ["forward", "sideways"])
def test_a_quadruped_configured_by_the_guide_alone_walks(tmp_path, direction):
    """B1 (50 kg, not among the shipped configurations) from a 12-line YAML: walks at the
    command within 20 % with the gait computed from its standing pose."""
    path = tmp_path / "b1.yaml"
    path.write_text(B1_YAML)
    cmd = COMMANDS[direction]
    loop, r = _walk(str(path), cmd, 6.0)
    assert not r.failed, r.failure
    v = _velocity(r, 3.0)[:2]
    assert np.linalg.norm(v - np.array(cmd[:2])) < 0.2 * 0.3, v
