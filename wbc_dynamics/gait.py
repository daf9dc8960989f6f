"""Walking from a velocity command: a trot whose steps the measured motion places.

:class:`TrotWalker` drives a :class:`~wbc_dynamics.controller.WholeBodyController` configured
with :func:`walking_tasks` (the task layer: centre of mass and trunk orientation, one position
task per foot, the posture). Each tick, before the controller's, it

* advances the gait clock: the diagonal foot pairs (front-left + hind-right, front-right +
  hind-left, found from where the feet stand) swing in turn, each for half the ``period``;
  the swing feet are the controller's contact schedule
  (:meth:`~wbc_dynamics.controller.WholeBodyController.set_contact_schedule`);
* places each swing foot's touchdown by Raibert's heuristic with velocity feedback
  (Raibert, "Legged Robots That Balance", 1986, ch. 2; the capture-point gain of Pratt et al.,
  "Capture point: a step toward humanoid push recovery", 2006): under its hip at touchdown,
  plus half the stance's travel at the commanded velocity, plus ``feedback_gain`` times the
  measured minus the commanded velocity -- a robot pushed sideways steps sideways;
* moves the swing feet along a quintic in the ground plane (position, velocity and acceleration
  continuous at lift-off and touchdown) and a ``64 u^3 (1 - u)^3`` lift of ``step_height``, as
  frame-task goals with their velocities and accelerations;
* with a double support (``double_support``: the controller's ``contact_unload_ramp``) keeps
  the pair about to swing standing for that long at each half-cycle's start, announcing its
  lift-off (``set_contact_schedule``'s ``lift_off_in``) so that the pair that just landed takes
  the load over the contact load ramps instead of in one tick; the swing is that much shorter;
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
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from .kernels.records import kernel_record, record_of
from .kernels.spatial import quaternion_rotation
from .kernels.world import frame_placement

__all__ = ["TrotWalker", "WalkerData", "foot_task_name", "walker_tick", "walking_tasks"]


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
        double_support: [s] each half-cycle starts with both pairs standing this long: the
            pair that landed takes the load from the pair about to swing, whose lift-off is
            announced to the controller (``lift_off_in``; with ``contact_load_ramp`` /
            ``contact_unload_ramp`` the handover is a ramp, not a step); its swing is that
            much shorter. At most a quarter of the half-cycle. The controller passes its
            ``contact_unload_ramp``.
    """

    def __init__(self, controller: Any, feet: Sequence[str] | None = None,
                 period: float | None = None, step_height: float | None = None,
                 feedback_gain: float | None = None, max_acceleration: float = 1.0,
                 com_leash: float = 0.03, double_support: float = 0.0) -> None:
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
        if not (math.isfinite(double_support) and double_support >= 0.0):
            raise ValueError(f"TrotWalker.double_support: must be finite and >= 0, got "
                             f"{double_support!r}")
        self.double_support = float(double_support)
        #: the command (x, y [m/s] heading frame, yaw rate [rad/s]) and the one followed now
        self.command = np.zeros(3)
        self.velocity = np.zeros(3)
        self._started = False
        self._tick = walker_tick  # its bound entry point from the start (update)
        #: counts the changes of the scheduled swing feet (``data.scheduled``), so that a
        #: publisher compares one integer per tick instead of the schedule
        self.schedule_changes = 0
        #: [fraction of a half-cycle] longest wait for a late touchdown
        self.touchdown_wait = 0.5

    # ------------------------------------------------------------------ inputs
    def set_velocity(self, vx: float, vy: float, yaw_rate: float) -> None:
        """The commanded velocity: forward / left [m/s] in the trunk's heading frame and the
        yaw rate [rad/s]. Raises ValueError for a non-finite value."""
        cmd = np.array([vx, vy, yaw_rate], dtype=float)
        if not np.all(np.isfinite(cmd)):
            raise ValueError(f"cmd_vel: non-finite command {cmd.tolist()}")
        self.command[:] = cmd

    # ------------------------------------------------------------------ state
    def _foot_points(self, q: np.ndarray, tolerance: float = 5e-3) -> list[np.ndarray]:
        """Each foot's point [m] (its link frame): the centroid of its contact points within
        ``tolerance`` of its lowest at the configuration ``q`` (a ball's bottom, a cylinder's
        rim on the ground, not a shank's far end)."""
        model = self.ctl.model
        candidates: dict[str, list] = {}
        cm = self.ctl._contact_model
        for pt in (cm.contact_points if cm is not None else ()):
            candidates.setdefault(pt.link, []).append(np.asarray(pt.center, dtype=float))
        out = []
        for link in self.feet:
            T = model.frame_placement(q, link)
            pts = np.array(candidates.get(link, [np.zeros(3)]))
            z = pts @ T[2, :3] + T[2, 3]
            out.append(pts[z <= z.min() + tolerance].mean(axis=0))
        return out

    def _start(self, t: float) -> None:
        """The gait's constants from the standing state (the controller's first tick's) and
        its compiled state (:class:`WalkerData`)."""
        ctl = self.ctl
        layer = ctl.tasks
        if ctl.contact_state is None:
            raise ValueError("gait: needs the contact state filter (contact_state_filter: true)"
                             " -- a swing ends when the filter sees its feet stand")
        q = ctl._q
        points = self._foot_points(q)
        for link, point in zip(self.feet, points, strict=True):
            layer.set_point(foot_task_name(link), point)
        placements = [ctl.model.frame_placement(q, ln) for ln in self.feet]
        feet = np.array([T[:3, :3] @ p + T[:3, 3]
                         for T, p in zip(placements, points, strict=True)])
        base = q[0:3].copy()
        yaw = _yaw(q[3:7])
        c = ctl.model.center_of_mass(q)[0]
        h = float(c[2] - feet[:, 2].mean())
        g = float(np.linalg.norm(ctl.model.gravity))
        self.period = self._period_arg or 2.6 * math.sqrt(h / g)
        self.step_height = self._height_arg or 0.25 * h
        self.feedback_gain = self._gain_arg if self._gain_arg is not None else math.sqrt(h / g)
        Rz = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
        offsets = (feet[:, :2] - base[:2]) @ Rz  # standing places, heading frame
        spacing = 0.5 * min(np.ptp(offsets[:, 0]), np.ptp(offsets[:, 1]))
        front = offsets[:, 0] > np.median(offsets[:, 0])
        left = offsets[:, 1] > np.median(offsets[:, 1])
        pair = np.where(front == left, 0, 1)
        if sorted(pair.tolist()) != [0, 0, 1, 1]:
            raise ValueError("TrotWalker: cannot pair the feet diagonally")
        self.data = WalkerData(
            foot_task=np.array([layer.task_names.index(foot_task_name(ln)) for ln in self.feet],
                               dtype=np.int64),
            foot_link=np.array([layer.contact_links.index(ln) for ln in self.feet],
                               dtype=np.int64),
            pair=pair.astype(np.int64), offsets=offsets, ground=feet[:, 2].copy(),
            com_task=layer.task_names.index("com"), trunk_task=layer.task_names.index("trunk"),
            period=float(self.period), step_height=float(self.step_height),
            feedback_gain=float(self.feedback_gain), max_step=0.6 * float(spacing),
            com_height=float(c[2]), com_leash=self.com_leash,
            max_acceleration=self.max_acceleration, touchdown_wait=self.touchdown_wait,
            double_support=min(self.double_support / (0.5 * self.period), 0.25),
            command=self.command, velocity=self.velocity, com_goal=c[:2].copy(),
            yaw_goal=np.array([yaw]), t0=np.array([t]), t_last=np.array([t]),
            swing_end=np.array([t]), half=np.array([-1], dtype=np.int64),
            swing=np.zeros(4, dtype=np.bool_), scheduled=np.zeros(4, dtype=np.bool_),
            lift=feet.copy())
        self._record = record_of(self.data)
        self._started = True

    @property
    def swing(self) -> np.ndarray:
        """(4,) bool: the feet (``feet`` order) in their swing phase."""
        return self.data.swing if self._started else np.zeros(4, dtype=bool)

    @property
    def scheduled(self) -> np.ndarray:
        """(4,) bool: the feet (``feet`` order) the contact schedule holds in swing."""
        return self.data.scheduled if self._started else np.zeros(4, dtype=bool)

    # ------------------------------------------------------------------ the tick
    def update(self, t: float) -> None:
        """Set this tick's contact schedule and task goals (before the controller's tick at
        time ``t`` [s], on the controller's current state estimate): one compiled call
        (:func:`walker_tick`); the schedule goes to the controller when it changes."""
        ctl = self.ctl
        if not self._started:
            if ctl.ticks == 0:  # no state yet: its first tick holds where it stands
                return
            self._start(t)
            # the entry point for these argument types (they never change): the dispatcher
            # would type the three records on every call, ~2 us each
            from .kernels.linalg import bound_entry

            self._tick = bound_entry(walker_tick, (self._record, ctl.tasks._record, ctl._q,
                                                   ctl._v, ctl.model._model, 0.0))
        changed = self._tick(self._record, ctl.tasks._record, ctl._q, ctl._v, ctl.model._model,
                             float(t))
        if changed:
            self.schedule_changes += 1
            d = self.data
            # the lift-offs, announced for the unload ramp: the pair of this half-cycle's
            # swing at the end of the double support, the other one double_support into the
            # next half-cycle (a late swing: the clock waits, so the release is due now)
            half = 0.5 * d.period
            ds = d.double_support * half
            end = float(d.swing_end[0])
            lift = {}
            for f, s, sw in zip(self.feet, d.scheduled, d.swing, strict=True):
                due = (end - half if sw else end) + ds - float(t)
                if not s and due >= -1e-9:  # (a late pair's is past: it lands, not lifts)
                    lift[f] = max(due, 0.0)
            ctl.set_contact_schedule(
                [f for f, s in zip(self.feet, d.scheduled, strict=True) if s], lift)


@kernel_record("WalkerDataRecord")
class WalkerData(NamedTuple):
    """The trot's constants and state (one record per walker; :func:`walker_tick`).

    Constants: ``foot_task`` (4,) each foot's task index in the task layer, ``foot_link`` (4,)
    its index among the layer's contact links; ``pair`` (4,) 0 or 1, the diagonal pair;
    ``offsets`` (4, 2) [m] each foot's standing place relative to the base, heading frame;
    ``ground`` (4,) [m] each foot point's standing height; ``com_task``, ``trunk_task``;
    ``period`` [s], ``step_height`` [m], ``feedback_gain`` [s], ``max_step`` [m],
    ``com_height`` [m], ``com_leash`` [m], ``max_acceleration`` [m/s^2, rad/s^2],
    ``touchdown_wait`` [fraction of a half-cycle], ``double_support`` [fraction of a
    half-cycle] both pairs stand at its start.

    State: ``command``, ``velocity`` (3,) commanded and followed (forward, left [m/s], yaw rate
    [rad/s]); ``com_goal`` (2,) [m] world; ``yaw_goal`` (1,) [rad]; ``t0`` (1,) [s] the clock's
    origin; ``t_last`` (1,) [s]; ``swing_end`` (1,) [s] when the current swing is due to end;
    ``half`` (1,) the current half-cycle; ``swing`` (4,) the feet in their swing phase;
    ``scheduled`` (4,) the feet the contact schedule holds in swing (not during a late
    touchdown); ``lift`` (4, 3) [m] where each swing foot lifted off, world."""

    foot_task: np.ndarray
    foot_link: np.ndarray
    pair: np.ndarray
    offsets: np.ndarray
    ground: np.ndarray
    com_task: int
    trunk_task: int
    period: float
    step_height: float
    feedback_gain: float
    max_step: float
    com_height: float
    com_leash: float
    max_acceleration: float
    touchdown_wait: float
    double_support: float
    command: np.ndarray
    velocity: np.ndarray
    com_goal: np.ndarray
    yaw_goal: np.ndarray
    t0: np.ndarray
    t_last: np.ndarray
    swing_end: np.ndarray
    half: np.ndarray
    swing: np.ndarray
    scheduled: np.ndarray
    lift: np.ndarray


@njit(cache=True, error_model="numpy", inline="always")
def _quintic_ramp(u):
    """s(u) = 10u^3 - 15u^4 + 6u^5 and its first two derivatives (u clipped to [0, 1])."""
    if u <= 0.0:
        return 0.0, 0.0, 0.0
    if u >= 1.0:
        return 1.0, 0.0, 0.0
    return (u * u * u * (10.0 - 15.0 * u + 6.0 * u * u), 30.0 * u * u * (1.0 - u) ** 2,
            60.0 * u * (1.0 - u) * (1.0 - 2.0 * u))


@njit(cache=True, error_model="numpy")
def walker_tick(w, d, q, v, model, t):
    """One tick of the trot (module docstring) on the walker record ``w`` (:class:`WalkerData`)
    and the task layer's record ``d`` (``wbc_dynamics.tasks.TaskData``: its goals and
    activation are written) at the controller's state ``q``, ``v`` and time ``t`` [s]. Returns
    1 when the swing schedule (``w.scheduled``) changed, 0 otherwise."""
    dt = max(0.0, t - w.t_last[0])
    w.t_last[0] = t
    step = w.max_acceleration * dt
    for a in range(3):
        w.velocity[a] += min(max(w.command[a] - w.velocity[a], -step), step)
    vx, vy, wz = w.velocity[0], w.velocity[1], w.velocity[2]
    qx, qy, qz, qw = q[3], q[4], q[5], q[6]
    yaw_meas = math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    yaw_goal = w.yaw_goal[0] + wz * dt
    # within half a turn of the measured heading
    delta = yaw_goal - yaw_meas
    delta -= 2.0 * math.pi * math.floor((delta + math.pi) / (2.0 * math.pi))
    yaw_goal = yaw_meas + delta
    w.yaw_goal[0] = yaw_goal
    cy, sy = math.cos(yaw_goal), math.sin(yaw_goal)
    vwx, vwy = cy * vx - sy * vy, sy * vx + cy * vy
    # the CoM goal moves at the command, held within com_leash of the CoM (the task layer's
    # last evaluation: its error plus its goal)
    ic = w.com_task
    cx = d.error[ic, 0] + d.goal_position[ic, 0]
    cyy = d.error[ic, 1] + d.goal_position[ic, 1]
    gx, gy = w.com_goal[0] + vwx * dt, w.com_goal[1] + vwy * dt
    ax, ay = gx - cx, gy - cyy
    dist = math.sqrt(ax * ax + ay * ay)
    if dist > w.com_leash:
        gx, gy = cx + ax * w.com_leash / dist, cyy + ay * w.com_leash / dist
    w.com_goal[0], w.com_goal[1] = gx, gy
    d.goal_position[ic, 0], d.goal_position[ic, 1], d.goal_position[ic, 2] = gx, gy, w.com_height
    for a in range(6):
        d.goal_velocity[ic, a] = 0.0
        d.goal_acceleration[ic, a] = 0.0
    d.goal_velocity[ic, 0], d.goal_velocity[ic, 1] = vwx, vwy
    it = w.trunk_task
    G = d.goal_rotation[it]
    G[0, 0], G[0, 1], G[0, 2] = cy, -sy, 0.0
    G[1, 0], G[1, 1], G[1, 2] = sy, cy, 0.0
    G[2, 0], G[2, 1], G[2, 2] = 0.0, 0.0, 1.0
    for a in range(6):
        d.goal_velocity[it, a] = 0.0
        d.goal_acceleration[it, a] = 0.0
    d.goal_velocity[it, 5] = wz
    # the clock: half-cycle k swings pair k % 2; a swing ends when its feet stand (the
    # contact state filter's decision, the layer's link_active), the clock waiting up to
    # touchdown_wait of a half-cycle for a late foot
    half = 0.5 * w.period
    k = int(math.floor((t - w.t0[0]) / half))
    u = (t - w.t0[0]) / half - k
    late = False
    if k != w.half[0] and w.half[0] >= 0 and t - w.swing_end[0] < w.touchdown_wait * half:
        for i in range(4):
            if w.swing[i] and not d.link_active[w.foot_link[i]]:
                late = True
    if late:  # hold the clock at the swing's end
        w.t0[0] += dt
        k, u = w.half[0], 1.0
    elif k != w.half[0]:
        w.swing_end[0] = w.t0[0] + (k + 1) * half
    if k != w.half[0]:
        w.half[0] = k
        for i in range(4):
            w.swing[i] = w.pair[i] == k % 2
            if w.swing[i]:
                f = w.foot_task[i]
                frame_placement(q, d.body[f], d.frame[f], d.pose, model)
                for a in range(3):
                    w.lift[i, a] = d.pose[a, 3]
    # the half-cycle's double support: its swing pair stands until u = dsf, then swings over
    # the rest (us from 0 to 1)
    dsf = w.double_support
    standing = u < dsf
    us = 0.0 if standing else (u - dsf) / (1.0 - dsf)
    span = half * (1.0 - dsf)  # [s] the swing's duration
    changed = 0
    for i in range(4):
        # a late pair is scheduled to stand, as is the swing pair in the double support
        scheduled = w.swing[i] and not late and not standing
        if scheduled != w.scheduled[i]:
            w.scheduled[i] = scheduled
            changed = 1
    # Raibert's touchdown for the swing feet, from the measured base motion
    R00, R01, R02, R10, R11, R12 = quaternion_rotation(qx, qy, qz, qw)[:6]
    mvx = R00 * v[0] + R01 * v[1] + R02 * v[2]
    mvy = R10 * v[0] + R11 * v[1] + R12 * v[2]
    remaining = (1.0 - u) * half
    yaw_td = yaw_goal + wz * remaining
    ct, st = math.cos(yaw_td), math.sin(yaw_td)
    bx, by = q[0] + vwx * remaining, q[1] + vwy * remaining
    s, ds, dds = _quintic_ramp(us)
    ds, dds = ds / span, dds / (span * span)
    uw = us * (1.0 - us)
    z, dz = 64.0 * uw ** 3, 192.0 * uw * uw * (1.0 - 2.0 * us) / span
    ddz = 64.0 * (6.0 * uw * (1.0 - 2.0 * us) ** 2 - 6.0 * uw * uw) / (span * span)
    if late:  # reach down for the ground
        z, dz, ddz = -(t - w.swing_end[0]) / half, -1.0 / half, 0.0
    shx = 0.5 * half * vwx + w.feedback_gain * (mvx - vwx)
    shy = 0.5 * half * vwy + w.feedback_gain * (mvy - vwy)
    norm = math.sqrt(shx * shx + shy * shy)
    if norm > w.max_step:
        shx, shy = shx * w.max_step / norm, shy * w.max_step / norm
    for i in range(4):
        f = w.foot_task[i]
        if not w.swing[i] or (late and d.link_active[w.foot_link[i]]) or (standing and not late):
            d.active[f] = False
            continue
        ox, oy = w.offsets[i, 0], w.offsets[i, 1]
        tx = bx + ct * ox - st * oy + shx
        ty = by + st * ox + ct * oy + shy
        ddx, ddy = tx - w.lift[i, 0], ty - w.lift[i, 1]
        d.active[f] = True
        d.goal_position[f, 0] = w.lift[i, 0] + s * ddx
        d.goal_position[f, 1] = w.lift[i, 1] + s * ddy
        d.goal_position[f, 2] = w.ground[i] + w.step_height * z
        d.goal_velocity[f, 0], d.goal_velocity[f, 1] = ds * ddx, ds * ddy
        d.goal_velocity[f, 2] = w.step_height * dz
        d.goal_acceleration[f, 0], d.goal_acceleration[f, 1] = dds * ddx, dds * ddy
        d.goal_acceleration[f, 2] = w.step_height * ddz
    return changed
