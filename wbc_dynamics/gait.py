"""Walking from a velocity command: a trot whose steps the measured motion places.

:class:`TrotWalker` drives a :class:`~wbc_dynamics.controller.WholeBodyController` configured
with :func:`walking_tasks` (the task layer: centre of mass and trunk orientation, one position
task per foot, the posture). Each tick, before the controller's, it

* advances the gait clock: the diagonal foot pairs (front-left + hind-right, front-right +
  hind-left, found from where the feet stand) swing in turn, each for half the ``period``;
  the swing feet are the controller's contact schedule (:meth:`set_contact_schedule`);
* places each swing foot's touchdown by Raibert's heuristic with velocity feedback
  (Raibert, "Legged Robots That Balance", 1986, ch. 2; the capture-point gain of Pratt et al.,
  "Capture point: a step toward humanoid push recovery", 2006): under its hip at touchdown,
  plus half the stance's travel at the commanded velocity, plus ``feedback_gain`` times the
  measured minus the commanded velocity -- a robot pushed sideways steps sideways;
* moves the swing feet along a quintic in the ground plane (position, velocity and acceleration
  continuous at lift-off and touchdown) and a ``64 u^3 (1 - u)^3`` lift of ``step_height``, as
  frame-task goals with their velocities and accelerations;
* moves the centre-of-mass goal at the commanded velocity (at its standing height, held within
  ``com_leash`` of the measured CoM so a blocked robot does not wind it up) and turns the trunk's
  goal at the commanded yaw rate, roll and pitch level.

Parameters that follow from the robot are computed from its standing pose, not tuned per robot:
with ``h`` the standing CoM height and ``g`` gravity, the period is ``2.6 sqrt(h / g)``
(0.47 s for go2), the step height ``0.25 h``, the feedback gain ``sqrt(h / g)`` (the capture
point's time constant), the largest step ``0.6`` of the feet's half-spacing.

ROS-free; the commands are in the trunk's heading frame (x forward, y left, yaw rate about the
vertical), as geometry_msgs/Twist on ``cmd_vel``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["TrotWalker", "foot_task_name", "walking_tasks"]


def foot_task_name(link: str) -> str:
    """The frame task of a foot in :func:`walking_tasks`."""
    return f"foot_{link}"


def walking_tasks(trunk_link: str, feet: Sequence[tuple[str, Sequence[float]]],
                  kp: float = 100.0, kd: float = 20.0, foot_kp: float = 400.0,
                  foot_kd: float = 40.0) -> dict[str, list]:
    """The flat task parameters (:data:`wbc_dynamics.tasks.TASK_PARAMETERS`) a
    :class:`TrotWalker` needs: ``com`` and ``trunk`` (orientation) at priority 0 with gains
    ``kp`` [1/s^2] / ``kd`` [1/s], a position task per foot (``feet``: (link, contact point in
    the link frame [m])) at priority 0 with ``foot_kp`` / ``foot_kd``, active while the foot
    swings, and the posture at priority 1."""
    names = ["com", "trunk"] + [foot_task_name(ln) for ln, _ in feet] + ["posture"]
    nf = len(feet)
    points = [0.0] * 6 + [float(x) for _, p in feet for x in p] + [0.0] * 3
    return dict(
        task_names=names,
        task_kinds=["com", "frame"] + ["frame"] * nf + ["posture"],
        task_links=["", trunk_link] + [ln for ln, _ in feet] + [""],
        task_modes=["", "orientation"] + ["position"] * nf + [""],
        task_points=points,
        task_kp=[kp, kp] + [foot_kp] * nf + [0.0],
        task_kd=[kd, kd] + [foot_kd] * nf + [0.0],
        task_priorities=[0, 0] + [0] * nf + [1])


def _quintic(u: float) -> tuple[float, float, float]:
    """s(u) = 10u^3 - 15u^4 + 6u^5 and its first two derivatives (u clipped to [0, 1])."""
    if u <= 0.0:
        return 0.0, 0.0, 0.0
    if u >= 1.0:
        return 1.0, 0.0, 0.0
    return (u * u * u * (10.0 - 15.0 * u + 6.0 * u * u), 30.0 * u * u * (1.0 - u) ** 2,
            60.0 * u * (1.0 - u) * (1.0 - 2.0 * u))


def _yaw(quat_xyzw: np.ndarray) -> float:
    x, y, z, w = quat_xyzw
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


class TrotWalker:
    """A trot from a velocity command for a quadruped controller configured with
    :func:`walking_tasks` (module docstring). Call :meth:`update` before every controller
    tick, :meth:`set_velocity` whenever a command arrives.

    Args:
        controller: the :class:`~wbc_dynamics.controller.WholeBodyController` (floating base,
            a contact method, the tasks of :func:`walking_tasks`).
        feet: the four foot links (default: the controller's contact links).
        period: [s] gait cycle (each diagonal pair swings half of it); None: computed.
        step_height: [m] swing lift; None: computed.
        feedback_gain: [s] Raibert's velocity feedback on the touchdown; None: computed.
        max_acceleration: [m/s^2, rad/s^2] the command is followed at most this fast.
        com_leash: [m] largest distance of the CoM goal ahead of the measured CoM.
    """

    def __init__(self, controller: Any, feet: Sequence[str] | None = None,
                 period: float | None = None, step_height: float | None = None,
                 feedback_gain: float | None = None, max_acceleration: float = 1.0,
                 com_leash: float = 0.03) -> None:
        ctl = controller
        if not ctl.floating_base or ctl.tasks is None:
            raise ValueError("TrotWalker: needs a floating-base controller with tasks "
                             "(walking_tasks)")
        self.ctl = ctl
        self.feet = list(feet) if feet is not None else list(ctl.contact_links)
        if len(self.feet) != 4:
            raise ValueError(f"TrotWalker: needs four feet, got {self.feet}")
        names = set(ctl.tasks.task_names)
        missing = [n for n in ["com", "trunk", *map(foot_task_name, self.feet)] if n not in names]
        if missing:
            raise ValueError(f"TrotWalker: the controller lacks the tasks {missing} "
                             "(configure walking_tasks)")
        self._period_arg, self._height_arg, self._gain_arg = period, step_height, feedback_gain
        self.max_acceleration = float(max_acceleration)
        self.com_leash = float(com_leash)
        #: the command (x, y [m/s] heading frame, yaw rate [rad/s]) and the one followed now
        self.command = np.zeros(3)
        self.velocity = np.zeros(3)
        self._started = False
        self._t_last = 0.0
        #: [fraction of a half-cycle] longest wait for a late touchdown
        self.touchdown_wait = 0.5
        self._swing_end = 0.0

    # ------------------------------------------------------------------ inputs
    def set_velocity(self, vx: float, vy: float, yaw_rate: float) -> None:
        """The commanded velocity: forward / left [m/s] in the trunk's heading frame and the
        yaw rate [rad/s]. Raises ValueError for a non-finite value."""
        cmd = np.array([vx, vy, yaw_rate], dtype=float)
        if not np.all(np.isfinite(cmd)):
            raise ValueError(f"cmd_vel: non-finite command {cmd.tolist()}")
        self.command[:] = cmd

    # ------------------------------------------------------------------ state
    def _foot_positions(self) -> np.ndarray:
        model, q = self.ctl.model, self.ctl._q
        out = np.empty((4, 3))
        for k, (link, point) in enumerate(zip(self.feet, self._points, strict=True)):
            T = model.frame_placement(q, link)
            out[k] = T[:3, :3] @ point + T[:3, 3]
        return out

    def _start(self, t: float) -> None:
        ctl = self.ctl
        layer = ctl.tasks
        self._points = []
        for link in self.feet:
            i = layer.task_names.index(foot_task_name(link))
            self._points.append(np.asarray(layer.specs[i].point, dtype=float))
        q = ctl._q
        feet = self._foot_positions()
        base = q[0:3].copy()
        yaw = _yaw(q[3:7])
        c = ctl.model.center_of_mass(q)[0]
        h = float(c[2] - feet[:, 2].mean())
        g = float(np.linalg.norm(ctl.model.gravity))
        self.period = self._period_arg or 2.6 * math.sqrt(h / g)
        self.step_height = self._height_arg or 0.25 * h
        self.feedback_gain = self._gain_arg if self._gain_arg is not None else math.sqrt(h / g)
        Rz = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
        #: each foot's standing place relative to the base, heading frame (x, y) [m]
        self.offsets = (feet[:, :2] - base[:2]) @ Rz
        self.ground = feet[:, 2].copy()
        spacing = 0.5 * min(np.ptp(self.offsets[:, 0]), np.ptp(self.offsets[:, 1]))
        self.max_step = 0.6 * spacing
        front = self.offsets[:, 0] > np.median(self.offsets[:, 0])
        left = self.offsets[:, 1] > np.median(self.offsets[:, 1])
        self.pair = np.where(front == left, 0, 1)
        if sorted(self.pair.tolist()) != [0, 0, 1, 1]:
            raise ValueError("TrotWalker: cannot pair the feet diagonally")
        self.com_height = float(c[2])
        self.com_goal = c[:2].copy()
        self.yaw_goal = yaw
        self.t0 = t
        self._half = -1
        self.lift = feet.copy()
        self.swing = np.zeros(4, dtype=bool)
        self._started = True
        self._t_last = t

    # ------------------------------------------------------------------ the tick
    def update(self, t: float) -> None:
        """Set this tick's contact schedule and task goals (before the controller's tick at
        time ``t`` [s], on the controller's current state estimate)."""
        if not self._started:
            if self.ctl.ticks == 0:  # no state yet: its first tick holds where it stands
                return
            self._start(t)
        ctl = self.ctl
        dt = max(0.0, t - self._t_last)
        self._t_last = t
        step = self.max_acceleration * dt
        self.velocity += np.clip(self.command - self.velocity, -step, step)
        vx, vy, wz = self.velocity
        q, v = ctl._q, ctl._v
        yaw_meas = _yaw(q[3:7])
        self.yaw_goal += wz * dt
        # keep the yaw goal within a turn of the measured heading
        self.yaw_goal = yaw_meas + math.remainder(self.yaw_goal - yaw_meas, 2.0 * math.pi)
        cy, sy = math.cos(self.yaw_goal), math.sin(self.yaw_goal)
        v_world = np.array([cy * vx - sy * vy, sy * vx + cy * vy])
        # the CoM goal moves at the command, held within com_leash of the measured CoM
        c = ctl.model.center_of_mass(q)[0]
        self.com_goal += v_world * dt
        ahead = self.com_goal - c[:2]
        dist = float(np.linalg.norm(ahead))
        if dist > self.com_leash:
            self.com_goal = c[:2] + ahead * (self.com_leash / dist)
        ctl.set_task_goal("com", position=[*self.com_goal, self.com_height],
                          linear_velocity=[*v_world, 0.0], linear_acceleration=[0.0, 0.0, 0.0])
        ctl.set_task_goal("trunk", orientation=[0.0, 0.0, math.sin(0.5 * self.yaw_goal),
                                                math.cos(0.5 * self.yaw_goal)],
                          angular_velocity=[0.0, 0.0, wz], angular_acceleration=[0.0, 0.0, 0.0])
        # the gait clock: half-cycle k swings pair k % 2. A swing ends when its feet stand
        # (the contact state filter's decision) -- a late foot keeps descending, the clock
        # waits, up to ``touchdown_wait`` of a half-cycle -- so the support never empties
        half = 0.5 * self.period
        k = int(math.floor((t - self.t0) / half))
        u = (t - self.t0) / half - k
        cs = ctl.contact_state
        late = False
        if k != self._half and self._half >= 0 and cs is not None:
            stance = cs.stance_links
            waiting = [f for f, sw in zip(self.feet, self.swing, strict=True)
                       if sw and f not in stance]
            if waiting and t - self._swing_end < self.touchdown_wait * half:
                late = True
        if not late:
            self._swing_end = self.t0 + (k + 1) * half if k != self._half else self._swing_end
        else:  # hold the clock at the swing's end
            self.t0 += dt
            k, u = self._half, 1.0
        if k != self._half:
            self._half = k
            feet_now = self._foot_positions()
            self.swing = self.pair == (k % 2)
            for i in np.flatnonzero(self.swing):
                self.lift[i] = feet_now[i]
        # a late pair is scheduled to stand (the filter then touches it as it lands)
        ctl.set_contact_schedule([] if late else
                                 [f for f, s in zip(self.feet, self.swing, strict=True) if s])
        landed = set(cs.stance_links) if (late and cs is not None) else set()
        # Raibert's touchdown for the swing feet, from the measured base motion
        R = ctl.model.frame_placement(q, ctl.model.root_link)[:3, :3]
        v_meas = (R @ v[0:3])[:2]
        remaining = (1.0 - u) * half
        yaw_td = self.yaw_goal + wz * remaining
        ct, st = math.cos(yaw_td), math.sin(yaw_td)
        base_td = q[0:2] + v_world * remaining
        s, ds, dds = _quintic(u)
        ds, dds = ds / half, dds / (half * half)
        w = u * (1.0 - u)
        z, dz = 64.0 * w ** 3, 192.0 * w * w * (1.0 - 2.0 * u) / half
        ddz = 64.0 * (6.0 * w * (1.0 - 2.0 * u) ** 2 - 6.0 * w * w) / (half * half)
        if late:  # reach down for the ground at a tenth of the step height per 10 % of a swing
            z = -(t - self._swing_end) / half
            dz, ddz = -1.0 / half, 0.0
        for i, link in enumerate(self.feet):
            name = foot_task_name(link)
            if not self.swing[i] or link in landed:
                ctl.tasks.set_active(name, False)
                continue
            ox, oy = self.offsets[i]
            hip = base_td + np.array([ct * ox - st * oy, st * ox + ct * oy])
            shift = 0.5 * half * v_world + self.feedback_gain * (v_meas - v_world)
            norm = float(np.linalg.norm(shift))
            if norm > self.max_step:
                shift *= self.max_step / norm
            target = hip + shift
            p0 = self.lift[i, :2]
            d = target - p0
            ctl.tasks.set_active(name, True)
            ctl.set_task_goal(
                name,
                position=[*(p0 + s * d), self.ground[i] + self.step_height * z],
                linear_velocity=[*(ds * d), self.step_height * dz],
                linear_acceleration=[*(dds * d), self.step_height * ddz])
