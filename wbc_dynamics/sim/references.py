"""Reference trajectories (desired joint accelerations with positions and velocities).

One module for every reference the simulations and the ``wbc_reference`` node sample (joint
space, task space, the velocity profile of walking), so the node, the in-process loop and the
launch plan resolve a reference ``kind`` in one place.

Every reference has ``joint_names`` and ``sample(t) -> (q_des, qd_des, qdd_des)`` (joint order of
``joint_names``; rad, rad/s, rad/s^2) with analytically consistent derivatives, so the controller's
``qdd_cmd = qdd_des + Kp (q_des - q) + Kd (qd_des - qd)`` (Zapolsky & Drumwright, Sec. 7.3 error
feedback) is exact along the plan.

Quadruped (Zapolsky & Drumwright, Sec. 7.2.1 / 7.6) -- the feet are planned in the base frame (the
base is planned level at its standing height) and mapped to joints by per-leg inverse kinematics
with the core's Jacobians (``q = IK(p)``, ``qd = J^-1 pd``, ``qdd = J^-1 (pdd - Jdot qd)``):

* :class:`Standing` -- hold a pose;
* :class:`WeightShift` -- the base sways sideways/forwards over fixed feet (feet move opposite in
  the base frame), shifting the load between the feet;
* :class:`Trot` -- Sec. 7.6's gait: cycle 0.3 s, duty factor 0.75, step height 1.5 cm, touchdown
  phases {LF 0.25, RF 0.75, LH 0.75, RH 0.25}, 20 cm/s forward speed (ramped from rest). Stance
  feet move backwards at the base speed; swing feet follow a quintic Hermite spline in x (position,
  velocity and acceleration continuous with stance) and a ``64 s^3 (1-s)^3`` bump in z.

Arm (Sec. 7.2.2) -- :class:`ArmSinusoid`: the seven arm joints oscillate about the grasp pose at
3 Hz ("about three times per second"); the four fingers keep zero velocity and acceleration at a
position slightly closed beyond the grasp pose (so position feedback squeezes the box and closes
the fingers further when not in contact).

Walking (``walk``: the controller's own trot from a velocity command) -- :class:`VelocityProfile`:
a piecewise-constant command (forward, left [m/s], yaw rate [rad/s]) over time, parsed from
``"0.3,0,0@4;0,0.3,0@4"`` or built from ``(vx, vy, wz, duration)`` tuples.

:func:`main` is the ``wbc_reference`` console script: a ROS 2 node publishing any of these as a
one-point ``trajectory_msgs/JointTrajectory`` (positions, velocities, accelerations) at a rate.
"""

from __future__ import annotations

import argparse
import bisect
import math
import sys
from collections.abc import Sequence
from typing import Protocol

import numpy as np

__all__ = [
    "ArmSinusoid",
    "QuadrupedFootReference",
    "Reference",
    "Standing",
    "Trot",
    "VelocityProfile",
    "WeightShift",
    "make_reference",
    "main",
]

LEGS = ("LF", "LH", "RF", "RH")


class Reference(Protocol):
    """A joint-space reference: ``sample(t)`` returns ``(q_des, qd_des, qdd_des)``."""

    joint_names: list[str]

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Desired joint positions [rad], velocities [rad/s], accelerations [rad/s^2] at t [s]."""
        ...


class Standing:
    """Hold ``q0`` (joint order ``joint_names``) with zero velocity and acceleration."""

    def __init__(self, joint_names: Sequence[str], q0: Sequence[float]) -> None:
        self.joint_names = list(joint_names)
        self.q0 = np.asarray(q0, dtype=float).copy()
        if self.q0.shape != (len(self.joint_names),) or not np.all(np.isfinite(self.q0)):
            raise ValueError(f"q0: expected {len(self.joint_names)} finite joint positions")
        self._z = np.zeros_like(self.q0)

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.q0.copy(), self._z.copy(), self._z.copy()


def _smoothstep(x: float) -> tuple[float, float, float]:
    """Quintic 0->1 ramp s(x) = 10x^3 - 15x^4 + 6x^5 and its first two derivatives."""
    if x <= 0.0:
        return 0.0, 0.0, 0.0
    if x >= 1.0:
        return 1.0, 0.0, 0.0
    return (
        x**3 * (10 - 15 * x + 6 * x * x),
        30 * x * x * (1 - x) ** 2,
        60 * x * (1 - x) * (1 - 2 * x),
    )


class QuadrupedFootReference:
    """Base class: feet planned in the base frame, joints by per-leg inverse kinematics.

    Args:
        model: the quadruped as a *fixed-base* :class:`wbc_dynamics.RobotModel` (root = base
            link), so ``frame_placement`` gives feet in the base frame.
        q_stand: (12,) standing joint positions (``model.joint_names`` order) that define the
            nominal foot positions.
        foot_links: foot link names, one per leg, in ``LEGS`` order by default.
        joint_names: output joint order (default ``model.joint_names``).
    """

    def __init__(
        self,
        model,
        q_stand: Sequence[float],
        foot_links: Sequence[str] | None = None,
        joint_names: Sequence[str] | None = None,
    ) -> None:
        if getattr(model, "floating_base", False):
            raise ValueError("model: the IK needs the fixed-base model (floating_base=False)")
        self.model = model
        mj = list(model.joint_names)
        self.foot_links = list(foot_links) if foot_links else [f"{leg}_foot" for leg in LEGS]
        self.joint_names = list(joint_names) if joint_names else mj
        self._out = np.array([mj.index(j) for j in self.joint_names], dtype=np.int64)
        self._q = np.asarray(q_stand, dtype=float).copy()
        if self._q.shape != (model.nv,):
            raise ValueError(f"q_stand: expected {model.nv} joint positions")
        # joints of each leg: the columns of the foot Jacobian that are non-zero in general
        self._leg_cols = []
        for i, foot in enumerate(self.foot_links):
            prefix = foot.split("_")[0]
            cols = [k for k, j in enumerate(mj) if j.startswith(prefix + "_")]
            if len(cols) != 3:
                raise ValueError(
                    f"foot_links[{i}]: leg {prefix!r} needs exactly 3 joints, "
                    f"found {[mj[k] for k in cols]}"
                )
            self._leg_cols.append(np.array(cols, dtype=np.int64))
        self.p_nominal = np.array(
            [model.frame_placement(self._q, f)[:3, 3] for f in self.foot_links]
        )
        self.ik_tolerance = 1e-10
        self.ik_max_iterations = 20
        self.ik_failures = 0

    def foot_targets(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(4, 3) foot positions [m], velocities, accelerations in the base frame at t [s]."""
        z = np.zeros_like(self.p_nominal)
        return self.p_nominal.copy(), z, z.copy()

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p, pd, pdd = self.foot_targets(t)
        m = self.model
        q = self._q
        for leg, foot in enumerate(self.foot_links):
            cols = self._leg_cols[leg]
            for _ in range(self.ik_max_iterations):  # Newton on the 3x3 leg Jacobian
                err = p[leg] - m.frame_placement(q, foot)[:3, 3]
                if float(err @ err) < self.ik_tolerance**2:
                    break
                J = m.jacobian(q, foot)[:3, cols]
                q[cols] += np.linalg.lstsq(J, err, rcond=None)[0]
            else:
                self.ik_failures += 1
        if not np.all(np.isfinite(q)):
            raise ValueError("inverse kinematics diverged (target out of reach?)")
        qd = np.zeros_like(q)
        for leg, foot in enumerate(self.foot_links):
            cols = self._leg_cols[leg]
            J = m.jacobian(q, foot)[:3, cols]
            qd[cols] = np.linalg.solve(J, pd[leg])
        qdd = np.zeros_like(q)
        for leg, foot in enumerate(self.foot_links):
            cols = self._leg_cols[leg]
            J = m.jacobian(q, foot)[:3, cols]
            bias = m.jacobian_dot_times_v(q, qd, foot)[:3]
            qdd[cols] = np.linalg.solve(J, pdd[leg] - bias)
        o = self._out
        return q[o].copy(), qd[o], qdd[o]


class WeightShift(QuadrupedFootReference):
    """Sway the base over fixed feet: ``d(t) = amplitude * sin(2 pi f t) * direction``.

    Args:
        amplitude: sway amplitude [m] (default 2 cm).
        frequency: [Hz] (default 0.5 Hz).
        direction: unit 3-vector in the base frame (default sideways, +y).
        **kw: the other arguments of :class:`QuadrupedFootReference`.
    """

    def __init__(
        self,
        model,
        q_stand,
        amplitude: float = 0.02,
        frequency: float = 0.5,
        direction: Sequence[float] = (0.0, 1.0, 0.0),
        **kw,
    ) -> None:
        super().__init__(model, q_stand, **kw)
        d = np.asarray(direction, dtype=float)
        self.direction = d / np.linalg.norm(d)
        self.amplitude, self.frequency = float(amplitude), float(frequency)

    def foot_targets(self, t):
        w = 2.0 * math.pi * self.frequency
        ramp, dramp, ddramp = _smoothstep(t / 0.5)  # fade in over 0.5 s (continuous qdd)
        s, ds, dds = math.sin(w * t), w * math.cos(w * t), -w * w * math.sin(w * t)
        a = self.amplitude
        d = a * ramp * s
        dd = a * (dramp / 0.5 * s + ramp * ds)
        ddd = a * (ddramp / 0.25 * s + 2 * dramp / 0.5 * ds + ramp * dds)
        p = self.p_nominal - d * self.direction
        return p, np.tile(-dd * self.direction, (4, 1)), np.tile(-ddd * self.direction, (4, 1))


class Trot(QuadrupedFootReference):
    """Trot of Zapolsky & Drumwright, Sec. 7.6 (defaults are the paper's values).

    Args:
        period: gait cycle [s] (0.3).
        duty_factor: stance fraction of the cycle (0.75).
        step_height: swing apex above the stance height [m] (0.015).
        touchdown: touchdown phase (fraction of the cycle) per foot link, default
            ``{LF: 0.25, RF: 0.75, LH: 0.75, RH: 0.25}``.
        speed: desired forward base speed [m/s] (0.2).
        start: time [s] the gait starts (stand still before; default 0.5).
        ramp: time [s] over which speed rises from 0 to ``speed`` (smooth; default 1.0).
    """

    def __init__(
        self,
        model,
        q_stand,
        period: float = 0.3,
        duty_factor: float = 0.75,
        step_height: float = 0.015,
        touchdown: dict | None = None,
        speed: float = 0.2,
        start: float = 0.5,
        ramp: float = 1.0,
        **kw,
    ) -> None:
        super().__init__(model, q_stand, **kw)
        if not (period > 0 and 0 < duty_factor < 1 and step_height >= 0 and ramp > 0):
            raise ValueError(
                "Trot: need period > 0, 0 < duty_factor < 1, step_height >= 0, ramp > 0"
            )
        td = touchdown or {"LF_foot": 0.25, "RF_foot": 0.75, "LH_foot": 0.75, "RH_foot": 0.25}
        missing = [f for f in self.foot_links if f not in td]
        if missing:
            raise ValueError(f"touchdown: no touchdown phase for {missing}")
        self.touchdown = np.array([td[f] for f in self.foot_links], dtype=float)
        self.period, self.duty = float(period), float(duty_factor)
        self.step_height, self.speed = float(step_height), float(speed)
        self.start, self.ramp = float(start), float(ramp)
        self.t_swing = (1.0 - self.duty) * self.period
        self.t_stance = self.duty * self.period

    def base_speed(self, t: float) -> tuple[float, float]:
        """Planned forward speed [m/s] and its derivative at t."""
        s, ds, _ = _smoothstep((t - self.start) / self.ramp)
        return self.speed * s, self.speed * ds / self.ramp

    def distance(self, t: float) -> float:
        """Planned forward distance [m] travelled by the base since t = 0 (integral of speed)."""
        x = (t - self.start) / self.ramp
        if x <= 0.0:
            return 0.0
        if x >= 1.0:
            return self.speed * (self.ramp * 0.5 + (t - self.start - self.ramp))
        return self.speed * self.ramp * (2.5 * x**4 - 3 * x**5 + x**6)

    def _stance_x(self, t: float, t_mid: float) -> tuple[float, float, float]:
        v, dv = self.base_speed(t)
        return self.distance(t_mid) - self.distance(t), -v, -dv

    def swing_active(self, t: float) -> np.ndarray:
        """(4,) bool: which feet are planned in swing at t."""
        out = np.zeros(len(self.foot_links), dtype=bool)
        if t < self.start:
            return out
        for i, td in enumerate(self.touchdown):
            ph = ((t - self.start) / self.period - td) % 1.0  # 0 at touchdown
            out[i] = ph >= self.duty
        return out

    def lift_off_in(self, t: float) -> np.ndarray:
        """(4,) [s]: the time from t until each foot's next planned lift-off (inf while it
        swings; before ``start`` the feet stand: a foot that swings at ``start`` lifts off
        then)."""
        out = np.full(len(self.foot_links), np.inf)
        wait = max(self.start - t, 0.0)
        for i, td in enumerate(self.touchdown):
            ph = ((t + wait - self.start) / self.period - td) % 1.0
            if ph < self.duty:
                out[i] = (self.duty - ph) * self.period + wait
            elif wait > 0.0:
                out[i] = wait
        return out

    def foot_targets(self, t):
        p = self.p_nominal.copy()
        pd = np.zeros_like(p)
        pdd = np.zeros_like(p)
        if t < self.start:
            return p, pd, pdd
        T, Ts, Tw = self.period, self.t_stance, self.t_swing
        for i, td in enumerate(self.touchdown):
            tau = t - self.start
            ph = (tau / T - td) % 1.0
            t_td = self.start + tau - ph * T  # the latest touchdown time
            if ph < self.duty:  # stance: the foot moves back with the planned base
                x, xd, xdd = self._stance_x(t, t_td + 0.5 * Ts)
            else:  # swing from lift-off (t_td + Ts) to the next touchdown (t_td + T)
                t0, t1 = t_td + Ts, t_td + T
                x0, v0, a0 = self._stance_x(t0, t_td + 0.5 * Ts)
                x1, v1, a1 = self._stance_x(t1, t1 + 0.5 * Ts)
                s = (t - t0) / Tw
                x, xd, xdd = _quintic_hermite(s, Tw, x0, v0, a0, x1, v1, a1)
                b = self.step_height * 64.0
                p[i, 2] += b * s**3 * (1 - s) ** 3
                pd[i, 2] = b * (3 * s**2 * (1 - s) ** 3 - 3 * s**3 * (1 - s) ** 2) / Tw
                pdd[i, 2] = (
                    b
                    * (6 * s * (1 - s) ** 3 - 18 * s**2 * (1 - s) ** 2 + 6 * s**3 * (1 - s))
                    / (Tw * Tw)
                )
            p[i, 0] += x
            pd[i, 0] = xd
            pdd[i, 0] = xdd
        return p, pd, pdd


def _quintic_hermite(s, T, x0, v0, a0, x1, v1, a1):
    """Quintic with given position/velocity/acceleration at s = 0 and 1 (time = s T)."""
    v0, v1, a0, a1 = v0 * T, v1 * T, a0 * T * T, a1 * T * T
    c0, c1, c2 = x0, v0, 0.5 * a0
    d = x1 - (c0 + c1 + c2)
    e = v1 - (c1 + 2 * c2)
    f = a1 - 2 * c2
    c3 = 10 * d - 4 * e + 0.5 * f
    c4 = -15 * d + 7 * e - f
    c5 = 6 * d - 3 * e + 0.5 * f
    x = c0 + s * (c1 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
    xd = c1 + s * (2 * c2 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))
    xdd = 2 * c2 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))
    return x, xd / T, xdd / (T * T)


class ArmSinusoid:
    """Sec. 7.2.2: arm joints ``q0 + A sin(2 pi f t)``, fingers fixed at grasp + ``squeeze``.

    Args:
        joint_names: all joints (arm and fingers) in output order.
        q_grasp: (n,) grasp pose in that order.
        finger_joints: the finger joint names (held still).
        amplitude: [rad], scalar or per arm joint (default 0.1 rad on every arm joint).
        frequency: [Hz] (default 3: "about three times per second").
        squeeze: finger position offset beyond the grasp pose [rad] (default 0.05, closing).
        ramp: fade-in time of the oscillation [s] (default 0.3; keeps qdd continuous at t = 0).
    """

    def __init__(
        self,
        joint_names: Sequence[str],
        q_grasp: Sequence[float],
        finger_joints: Sequence[str],
        amplitude: float | Sequence[float] = 0.1,
        frequency: float = 3.0,
        squeeze: float = 0.05,
        ramp: float = 0.3,
    ) -> None:
        self.joint_names = list(joint_names)
        self.q0 = np.asarray(q_grasp, dtype=float).copy()
        n = len(self.joint_names)
        if self.q0.shape != (n,):
            raise ValueError(f"q_grasp: expected {n} values")
        fingers = [self.joint_names.index(f) for f in finger_joints]
        self.arm = np.array([i for i in range(n) if i not in fingers], dtype=np.int64)
        self.q0[fingers] += squeeze
        amp = np.broadcast_to(np.asarray(amplitude, dtype=float), (len(self.arm),))
        self.amplitude = np.zeros(n)
        self.amplitude[self.arm] = amp
        self.frequency, self.ramp = float(frequency), float(ramp)

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w = 2.0 * math.pi * self.frequency
        r, dr, ddr = _smoothstep(t / self.ramp)
        dr, ddr = dr / self.ramp, ddr / (self.ramp * self.ramp)
        s, ds, dds = math.sin(w * t), w * math.cos(w * t), -w * w * math.sin(w * t)
        A = self.amplitude
        return (self.q0 + A * r * s, A * (dr * s + r * ds), A * (ddr * s + 2 * dr * ds + r * dds))


def make_reference(
    robot: str, kind: str, joint_names: Sequence[str] | None = None, **options
) -> Reference:
    """Build a reference for a bundled robot.

    Args:
        robot: "quadruped" (kinds "stand", "shift", "trot") or "arm" (kinds "stand", "sinusoid"),
            or a robot configuration (``config/robots`` name, YAML path or a
            :class:`~wbc_dynamics.robot_config.RobotSetup`; kinds "sway": ``BaseSway``,
            "com_sway": ``CoMSway``, "trot": ``FootTrot`` (quadrupeds),
            "stand": hold
            its standing pose, "sinusoid": its revolute joints oscillate about it, prismatic
            joints (grippers) held).
        kind: see above.
        joint_names: output joint order (default: the robot's ``joint_names``).
        options: forwarded to the reference class (e.g. ``speed=0.1`` for the trot).
    """
    from ..robots import robot_info, robot_path

    if not isinstance(robot, str) or robot not in ("quadruped", "arm"):
        return _configured_reference(robot, kind, joint_names, **options)
    info = robot_info(robot)
    names = list(joint_names) if joint_names else list(info["joint_names"])
    order = [info["joint_names"].index(j) for j in names]
    if robot == "quadruped":
        q_stand = np.array(info["standing_q"][7:])
        if kind in ("stand", "walk"):  # walk: the standing posture under the controller's gait
            return Standing(names, q_stand[order])
        from ..model import RobotModel

        # kinematics for the IK, no derivative kernels
        model = RobotModel.from_urdf(robot_path(robot), floating_base=False, warmup="dynamics")
        feet = list(info["foot_links"])
        if kind == "shift":
            return WeightShift(model, q_stand, foot_links=feet, joint_names=names, **options)
        if kind == "trot":
            return Trot(model, q_stand, foot_links=feet, joint_names=names, **options)
    elif robot == "arm":
        q = np.array(info["grasp_q"])
        if kind == "stand":
            return Standing(names, q[order])
        if kind == "sinusoid":
            return ArmSinusoid(names, q[order], info["finger_joints"], **options)
    raise ValueError(
        f"kind: unknown reference {kind!r} for robot {robot!r} (quadruped: stand, "
        "shift, trot, walk; arm: stand, sinusoid)"
    )


class TaskSpaceReference:
    """Joint-space reference of any legged robot from task-space targets: a base trajectory and,
    per standing contact link, a target pose (soles: 6 rows) or point position (point feet: 3
    rows). Subclasses give :meth:`targets`.

    The joint trajectories come from the model's own kinematics, not a separate IK: with the
    stacked contact-link Jacobians ``J = [J_b J_j]`` (world-aligned),
    ``qd_j = J_j^+ (xd_des - J_b v_b - Kp e)`` and
    ``qdd_j = J_j^+ (xdd_des - J_b a_b - Jdot v - Kd (J v - xd_des) - Kp e)`` (``e``: the links'
    error to their targets), integrated once at construction at 1 kHz over ``horizon`` seconds
    (``period``: repeated after that, from ``horizon - period``); :meth:`sample` interpolates.

    Args:
        model: the controller's floating-base RobotModel.
        q_stand: (nq,) standing configuration (base upright on the ground).
        contact_points: the controller's :class:`~wbc_dynamics.contact.candidates.ContactPoint`
            list: a link standing on three or more points (lowest within 1 mm of the lowest of
            all) keeps its pose, otherwise its lowest point keeps its position.
        joint_names: output joint order.
    """

    def __init__(self, model, q_stand, contact_points, joint_names: Sequence[str],
                 horizon: float, period: float | None = None, dt: float = 1e-3,
                 kp: float = 100.0, kd: float = 20.0) -> None:
        if not model.floating_base:
            raise ValueError(f"{type(self).__name__}: needs a floating-base robot")
        self.joint_names = list(joint_names)
        q = np.asarray(q_stand, dtype=float).copy()
        self.q_stand = q.copy()
        low: dict[str, list] = {}
        for pt in contact_points:
            T = model.frame_placement(q, pt.link)
            z = float((T[:3, :3] @ pt.center + T[:3, 3])[2] - pt.radius)
            low.setdefault(pt.link, []).append((z, pt))
        ground = min(z for zs in low.values() for z, _ in zs)
        tasks = []  # (link, point in the link frame, task rows)
        for link, zs in low.items():
            touching = [pt for z, pt in sorted(zs, key=lambda x: x[0]) if z <= ground + 1e-3]
            if len(touching) >= 3:
                tasks.append((link, np.zeros(3), slice(0, 6)))
            elif touching:
                tasks.append((link, np.asarray(touching[0].center, float), slice(0, 3)))
        #: (link, point in the link frame, rows of its task: 0:6 pose, 0:3 point position)
        self.tasks = tasks
        self.T_stand = [model.frame_placement(q, ln) for ln, _, _ in tasks]
        #: (k, 3) world positions of the task points standing
        self.p_stand = np.array([T[:3, :3] @ c + T[:3, 3]
                                 for (_, c, _), T in zip(tasks, self.T_stand, strict=True)])
        self.dt, self.horizon = float(dt), float(horizon)
        self.period = float(period) if period else None
        self._model = model
        self._setup()
        order = [model.joint_index(j) for j in self.joint_names]
        K = int(round(self.horizon / dt)) + 1
        self._q = np.zeros((K, len(order)))
        self._qd = np.zeros_like(self._q)
        self._qdd = np.zeros_like(self._q)
        #: (K, 3) base position [m] world of each integrated step (the joints are the output)
        self.base_positions = np.zeros((K, 3))
        qd_j = np.zeros(model.nv - 6)
        vb = np.zeros(6)
        for k in range(K):
            t = k * dt
            (pb, vb_w, ab_w), feet = self.targets(t)
            com = self.com_targets(t)
            if com is None:  # the base position is prescribed
                q[:3] = pb
            R = _quat_matrix(q[3:7])
            if com is None:
                vb = np.r_[R.T @ vb_w, 0.0, 0.0, 0.0]  # base twist, base frame (no rotation)
                ab = np.r_[R.T @ ab_w, 0.0, 0.0, 0.0]
            v = np.r_[vb, qd_j]
            Js, bias, err, xd, xdd = [], [], [], [], []
            for i, (ln, c, sl) in enumerate(tasks):
                p_des, v_des, a_des = feet[i]
                T = model.frame_placement(q, ln)
                e = np.r_[T[:3, :3] @ c + T[:3, 3] - p_des,
                          _rotation_error(T[:3, :3], self.T_stand[i][:3, :3])]
                Js.append(model.jacobian(q, ln, c)[sl])
                bias.append(model.jacobian_dot_times_v(q, v, ln, c)[sl])
                err.append(e[sl])
                xd.append(np.r_[v_des, 0.0, 0.0, 0.0][sl])
                xdd.append(np.r_[a_des, 0.0, 0.0, 0.0][sl])
            J, Jdv = np.vstack(Js), np.concatenate(bias)
            e, xd, xdd = np.concatenate(err), np.concatenate(xd), np.concatenate(xdd)
            Jb, Jj = J[:, :6], J[:, 6:]
            if com is not None:
                vb, ab, v_lin, a_lin = self._com_base_motion(model, q, J, Jdv, e, xd, xdd, com,
                                                             kp, kd)
            qd_j = np.linalg.lstsq(Jj, xd - Jb @ vb - kp * e, rcond=None)[0]
            v = np.r_[vb, qd_j]
            qdd_j = np.linalg.lstsq(Jj, xdd - Jb @ ab - Jdv - kd * (J @ v - xd) - kp * e,
                                    rcond=None)[0]
            self.base_positions[k] = q[:3]
            self._q[k] = q[7:][order]
            self._qd[k] = qd_j[order]
            self._qdd[k] = qdd_j[order]
            q[7:] += dt * qd_j + 0.5 * dt * dt * qdd_j
            if com is not None:  # the base moves as the CoM task requires
                q[:3] += dt * v_lin + 0.5 * dt * dt * a_lin

    def com_targets(self, t: float):
        """(CoM position, velocity, acceleration) world [m, m/s, m/s^2] at t, or None (the base
        position of :meth:`targets` is prescribed instead)."""
        return None

    @staticmethod
    def _com_base_motion(model, q, J, Jdv, e, xd, xdd, com, kp, kd):
        """Base linear velocity and acceleration (no rotation) that move the centre of mass
        along ``com`` while the contact-link tasks hold: with ``qd_j = J_j^+ (xd - J_b v_b -
        kp e)`` the CoM velocity ``J_com v`` is affine in the base's linear velocity, and with
        ``qdd_j = J_j^+ (xdd - J_b a_b - ...)`` the CoM acceleration ``R (M[0:3] a +
        (h - g)[0:3]) / m`` (:meth:`RobotModel.center_of_mass`) is affine in its linear
        acceleration: two 3 x 3 solves, with PD feedback on the CoM error (gains kp, kd).
        Returns (base twist, base acceleration (base frame, 6 each), v_lin, a_lin (world))."""
        c_des, cd_des, cdd_des = com
        M = model.mass_matrix(q)
        m = float(M[0, 0])
        R = _quat_matrix(q[3:7])
        c, _, Jc = model.center_of_mass(q)
        Jb, Jj = J[:, :6], J[:, 6:]
        P = np.linalg.pinv(Jj)
        Lb = Jb[:, :3] @ R.T  # task rows per world base linear velocity
        Jcj = Jc[:, 6:]
        Bv = Jc[:, :3] @ R.T - Jcj @ P @ Lb
        v_lin = np.linalg.solve(Bv, cd_des + kp * (c_des - c) - Jcj @ P @ (xd - kp * e))
        vb = np.r_[R.T @ v_lin, 0.0, 0.0, 0.0]
        qd_j = P @ (xd - Jb @ vb - kp * e)
        v = np.r_[vb, qd_j]
        cd = Jc @ v
        cv = model.nonlinear_effects(q, v) - model.gravity_torques(q)
        w = xdd - Jdv - kd * (J @ v - xd) - kp * e
        Mj = R @ M[0:3, 6:] / m
        Ba = R @ M[0:3, 0:3] @ R.T / m - Mj @ P @ Lb
        a_lin = np.linalg.solve(Ba, cdd_des + kd * (cd_des - cd) + kp * (c_des - c)
                                - Mj @ P @ w - R @ cv[0:3] / m)
        return vb, np.r_[R.T @ a_lin, 0.0, 0.0, 0.0], v_lin, a_lin

    def _setup(self) -> None:
        """Subclass hook run before the integration (tasks and standing poses are known)."""

    def targets(self, t: float):
        """((base position, velocity, acceleration) world [m, m/s, m/s^2], [(task point
        position, velocity, acceleration) world per task]) at t [s]."""
        raise NotImplementedError

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.period and t > self.horizon:  # repeat the last period
            t = self.horizon - self.period + math.fmod(t - self.horizon, self.period)
        x = min(max(t, 0.0), self.horizon) / self.dt
        k = min(int(x), self._q.shape[0] - 2)
        f = min(x - k, 1.0)
        return tuple((1.0 - f) * tab[k] + f * tab[k + 1]
                     for tab in (self._q, self._qd, self._qdd))


class BaseSway(TaskSpaceReference):
    """The base sways sideways over the support polygon (amplitude ``fraction`` of the polygon's
    half-width, ``frequency``, faded in over ``ramp``) while every standing contact link stays
    where it stands (:class:`TaskSpaceReference`)."""

    def __init__(self, model, q_stand, contact_points, joint_names: Sequence[str],
                 fraction: float = 0.3, frequency: float = 0.5, ramp: float = 1.0,
                 **kwargs) -> None:
        self.fraction, self.frequency, self.ramp = float(fraction), float(frequency), float(ramp)
        period = 1.0 / self.frequency
        super().__init__(model, q_stand, contact_points, joint_names,
                         horizon=self.ramp + period, period=period, **kwargs)

    def _setup(self) -> None:
        width = float(np.ptp(self.p_stand[:, 1])) if len(self.p_stand) > 1 else 0.0
        self.amplitude = self.fraction * 0.5 * width

    def _base(self, t: float) -> tuple[float, float, float]:
        """Lateral base offset [m], velocity, acceleration at t (smoothstep fade-in)."""
        w = 2.0 * math.pi * self.frequency
        r, dr, ddr = _smoothstep(t / self.ramp)
        dr, ddr = dr / self.ramp, ddr / (self.ramp * self.ramp)
        s, ds, dds = math.sin(w * t), w * math.cos(w * t), -w * w * math.sin(w * t)
        A = self.amplitude
        return A * r * s, A * (dr * s + r * ds), A * (ddr * s + 2 * dr * ds + r * dds)

    def targets(self, t: float):
        y, vy, ay = self._base(t)
        base = (self.q_stand[:3] + [0.0, y, 0.0], np.array([0.0, vy, 0.0]),
                np.array([0.0, ay, 0.0]))
        zero = np.zeros(3)
        return base, [(p, zero, zero) for p in self.p_stand]


class CoMSway(BaseSway):
    """The centre of mass (rather than the base) sways sideways over the support polygon: the
    CoM's lateral position follows ``BaseSway``'s curve (same amplitude rule, frequency and
    fade-in), its forward position and height stay at the standing values, the base keeps its
    orientation, every standing contact link stays where it stands. The base's translation is
    solved from the CoM task each step (:meth:`TaskSpaceReference._com_base_motion`, the model's
    own CoM Jacobian and momentum rows), so the arms and legs moving sideways are accounted for
    (a humanoid's CoM moves ~10 % less than its base in a base sway)."""

    def _setup(self) -> None:
        super()._setup()
        self.c_stand = self._model_com(self.q_stand)

    def _model_com(self, q):
        return self._model.center_of_mass(q)[0]

    def com_targets(self, t: float):
        y, vy, ay = self._base(t)
        return (self.c_stand + [0.0, y, 0.0], np.array([0.0, vy, 0.0]),
                np.array([0.0, ay, 0.0]))

    def targets(self, t: float):
        zero = np.zeros(3)
        return (self.q_stand[:3], zero, zero), [(p, zero, zero) for p in self.p_stand]


class FootTrot(TaskSpaceReference):
    """A trot for any quadruped from its four contact links (no joint-name conventions): the
    diagonal pairs (front-left + hind-right, front-right + hind-left, found from the feet's
    standing positions) swing in turn, each for half of ``period``, lifting ``height`` and
    landing ahead so that every foot stays centred under the base moving forward at ``speed``
    (faded in over ``ramp``). Defaults scale with the robot: height 15 %, speed 30 % of the
    standing base height per second. ``swing_active(t)`` / ``foot_links`` give the contact
    schedule (the controller's swing links)."""

    def __init__(self, model, q_stand, contact_points, joint_names: Sequence[str],
                 speed: float | None = None, height: float | None = None,
                 period: float = 0.5, ramp: float = 1.0, horizon: float = 12.0,
                 **kwargs) -> None:
        z = float(np.asarray(q_stand)[2])
        self.speed = 0.3 * z if speed is None else float(speed)
        self.step_height = 0.15 * z if height is None else float(height)
        self.gait_period, self.ramp = float(period), float(ramp)
        super().__init__(model, q_stand, contact_points, joint_names, horizon=horizon,
                         period=None, **kwargs)

    def _setup(self) -> None:
        if len(self.tasks) != 4 or any(sl.stop != 3 for _, _, sl in self.tasks):
            raise ValueError("trot: needs four point feet (contact links), got "
                             f"{[ln for ln, _, _ in self.tasks]}")
        self.foot_links = [ln for ln, _, _ in self.tasks]
        rel = self.p_stand[:, :2] - self.q_stand[:2]
        front = rel[:, 0] > np.median(rel[:, 0])
        left = rel[:, 1] > np.median(rel[:, 1])
        #: pair 0 (front-left, hind-right) swings first
        self.pair = np.where(front == left, 0, 1)
        if sorted(self.pair.tolist()) != [0, 0, 1, 1]:
            raise ValueError("trot: cannot pair the feet diagonally from their positions")

    def _base_x(self, t: float) -> tuple[float, float, float]:
        """Forward base travel [m], speed, acceleration (speed faded in over ramp)."""
        v, r = self.speed, self.ramp
        if t <= 0.0:
            return 0.0, 0.0, 0.0
        if t < r:  # integral of the quintic ramp: x = v r (2.5 s^4 - 3 s^5 + s^6), s = t/r
            s = t / r
            sv, dsv, _ = _smoothstep(s)
            return v * r * (2.5 * s**4 - 3 * s**5 + s**6), v * sv, v * dsv / r
        return v * r * 0.5 + v * (t - r), v, 0.0

    def swing_active(self, t: float) -> np.ndarray:
        """(4,) bool: which feet (``foot_links`` order) are in swing at t."""
        phase = math.fmod(max(t, 0.0), self.gait_period) / self.gait_period
        swinging = 0 if phase < 0.5 else 1
        return self.pair == swinging

    def lift_off_in(self, t: float) -> np.ndarray:
        """(4,) [s]: the time from t until each foot's next lift-off (inf while it swings;
        before t = 0 the first pair lifts off at 0)."""
        half = 0.5 * self.gait_period
        swing = self.swing_active(t)
        out = np.full(len(self.foot_links), np.inf)
        for i in range(len(out)):
            if t < 0.0 or not swing[i]:
                offset = self.pair[i] * half
                m = math.ceil((max(t, 0.0) - offset) / self.gait_period)
                out[i] = offset + m * self.gait_period - t
        return out

    def targets(self, t: float):
        x, vx, ax = self._base_x(t)
        base = (self.q_stand[:3] + [x, 0.0, 0.0], np.array([vx, 0.0, 0.0]),
                np.array([ax, 0.0, 0.0]))
        half = 0.5 * self.gait_period
        feet = []
        for i, p0 in enumerate(self.p_stand):
            # swings of foot i: [t0, t0 + half) with t0 = pair * half + m * period
            offset = self.pair[i] * half
            m = math.floor((t - offset) / self.gait_period)
            t_lift = offset + m * self.gait_period
            in_swing = t >= 0.0 and t - t_lift < half and t_lift >= 0.0
            if in_swing:
                # land where the base will be at mid-stance after this swing (Raibert's neutral
                # point): the foot stays centred under the base
                x_lift = self._land(t_lift - self.gait_period, offset)
                x_land = self._land(t_lift, offset)
                u = (t - t_lift) / half
                s, ds, dds = _smoothstep(u)
                ds, dds = ds / half, dds / (half * half)
                # lift profile 64 u^3 (1 - u)^3: peak 1 at mid-swing, zero height, velocity and
                # acceleration at lift-off and touchdown; height faded in with the speed ramp
                w = u * (1.0 - u)
                z = 64.0 * w**3
                dz = 64.0 * 3.0 * w * w * (1.0 - 2.0 * u) / half
                ddz = 64.0 * (6.0 * w * (1.0 - 2.0 * u) ** 2 - 6.0 * w * w) / (half * half)
                h = self.step_height * _smoothstep(min(t_lift / self.ramp, 1.0))[0]
                feet.append((p0 + [x_lift + s * (x_land - x_lift), 0.0, h * z],
                             np.array([ds * (x_land - x_lift), 0.0, h * dz]),
                             np.array([dds * (x_land - x_lift), 0.0, h * ddz])))
            else:
                last = t_lift if t - t_lift >= half else t_lift - self.gait_period
                feet.append((p0 + [self._land(last, offset), 0.0, 0.0], np.zeros(3),
                             np.zeros(3)))
        return base, feet

    def _land(self, t_lift: float, offset: float) -> float:
        """Forward offset [m] of a foot that lifted at t_lift (< 0: never lifted yet): the base
        travel at the middle of the stance that follows its landing."""
        if t_lift < offset - 1e-12:
            return 0.0
        half = 0.5 * self.gait_period
        return self._base_x(t_lift + half + 0.5 * half)[0]


class VelocityProfile:
    """A piecewise-constant walking command over time: segments of ``(forward, left, yaw_rate)``
    -- forward and left [m/s] in the trunk's heading frame, yaw rate [rad/s] -- each held for
    its duration [s], one after the other from t = 0.

    Text (:meth:`parse`): segments ``forward,left,yaw_rate@duration`` separated by ``;``, e.g.
    ``"0.3,0,0@4;0,0.3,0@4;0,0,0.3@4"`` (4 s forward, 4 s left, 4 s turning). The last segment
    may omit ``@duration``: its command then holds for ever, so a single ``"0.2,0,0"`` is the
    constant command. After a last segment *with* a duration the command is zero (the robot
    stops). Python (:meth:`from_value`): a list of ``(vx, vy, wz, duration)`` tuples (the last
    may be ``(vx, vy, wz)`` or have ``duration`` None: held), or three numbers (constant).

    ``sample(t)`` is the command at ``t`` [s] since the start; a segment covers
    ``[start, start + duration)``, so at a boundary the next segment's command applies; times
    before 0 give the first segment's. No smoothing between segments: the gait follows a step
    of the command at its own bounded acceleration (``TrotWalker.max_acceleration``).

    Raises ValueError naming ``field`` and the bad segment (1-based) for a malformed segment, a
    non-finite number, a duration that is not > 0, or a missing duration before the last.
    """

    def __init__(self, segments: Sequence[Sequence[float | None]],
                 field: str = "velocity") -> None:
        segments = list(segments)
        if not segments:
            raise ValueError(f"{field}: no segments (expected forward,left,yaw_rate[@duration_s]"
                             "[;...])")
        parsed: list[tuple[float, float, float, float | None]] = []
        n = len(segments)
        for i, seg in enumerate(segments, start=1):
            where = f"{field}: segment {i} of {n} ({_segment_text(seg)})"
            try:
                values = list(seg)
            except TypeError:
                raise ValueError(f"{where}: expected (forward, left, yaw_rate[, duration])"
                                 ) from None
            if len(values) not in (3, 4):
                raise ValueError(f"{where}: expected forward, left, yaw_rate [m/s, m/s, rad/s] "
                                 "and an optional duration [s]")
            duration = values[3] if len(values) == 4 else None
            try:
                cmd = [float(x) for x in values[:3]]
                duration = None if duration is None else float(duration)
            except (TypeError, ValueError):
                raise ValueError(f"{where}: not a number") from None
            if not all(math.isfinite(x) for x in cmd):
                raise ValueError(f"{where}: forward, left, yaw_rate must be finite")
            if duration is None:
                if i != n:
                    raise ValueError(f"{where}: only the last segment may omit its duration "
                                     "(@seconds)")
            elif not (math.isfinite(duration) and duration > 0.0):
                raise ValueError(f"{where}: the duration must be > 0 s and finite")
            parsed.append((cmd[0], cmd[1], cmd[2], duration))
        self.segments = tuple(parsed)
        #: [s] start time of each segment
        self.starts = tuple(float(x) for x in np.cumsum(
            [0.0] + [d for *_, d in parsed[:-1]]))
        last = parsed[-1][3]
        #: [s] when the command becomes zero (all segments timed), else inf (the last holds)
        self.end = math.inf if last is None else self.starts[-1] + last

    @classmethod
    def parse(cls, text: str, field: str = "velocity") -> VelocityProfile:
        """The profile of ``"forward,left,yaw_rate[@duration_s][;...]"`` (class docstring)."""
        if not isinstance(text, str):
            raise ValueError(f"{field}: expected text forward,left,yaw_rate[@duration_s][;...], "
                             f"got {text!r}")
        parts = text.split(";")
        segments: list[list[str]] = []
        for i, part in enumerate(parts, start=1):
            cmd, at, duration = part.strip().partition("@")
            values = [x.strip() for x in cmd.split(",")]
            n_cmd = len(values)
            if at:
                values.append(duration.strip())
            if n_cmd != 3 or "" in values or "@" in duration:
                raise ValueError(f"{field}: segment {i} of {len(parts)} ({part.strip()!r}): "
                                 "expected forward,left,yaw_rate [m/s, m/s, rad/s] and an "
                                 "optional @duration [s]")
            segments.append(values)
        return cls(segments, field)

    @classmethod
    def from_value(cls, value, field: str = "velocity") -> VelocityProfile:
        """A profile from text (:meth:`parse`), three numbers (a constant command), a list of
        segments ``(vx, vy, wz[, duration])``, or a profile (returned as is)."""
        if isinstance(value, VelocityProfile):
            return value
        if isinstance(value, str):
            return cls.parse(value, field)
        try:
            items = list(value)
        except TypeError:
            raise ValueError(f"{field}: expected forward,left,yaw_rate[@duration_s][;...] or a "
                             f"list of (vx, vy, wz, duration), got {value!r}") from None
        if items and all(_is_number(x) for x in items):
            if len(items) != 3:
                raise ValueError(f"{field}: expected 3 finite numbers forward, left, yaw_rate "
                                 f"[m/s, m/s, rad/s], got {items!r}")
            return cls([items], field)
        return cls(items, field)

    @property
    def constant(self) -> bool:
        """A single command held for ever (no duration)."""
        return len(self.segments) == 1 and self.segments[0][3] is None

    def sample(self, t: float) -> tuple[float, float, float]:
        """The command (forward, left [m/s], yaw rate [rad/s]) at ``t`` [s] since the start."""
        if t >= self.end:
            return (0.0, 0.0, 0.0)
        i = max(bisect.bisect_right(self.starts, t) - 1, 0)
        vx, vy, wz, _ = self.segments[i]
        return (vx, vy, wz)

    def to_text(self) -> str:
        """The profile as :meth:`parse` reads it (a ROS string parameter, a launch argument)."""
        return ";".join(f"{vx!r},{vy!r},{wz!r}" + ("" if d is None else f"@{d!r}")
                        for vx, vy, wz, d in self.segments)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VelocityProfile) and self.segments == other.segments

    def __hash__(self) -> int:
        return hash(self.segments)

    def __repr__(self) -> str:
        return f"VelocityProfile.parse({self.to_text()!r})"


def _is_number(x) -> bool:
    return isinstance(x, int | float | np.number) and not isinstance(x, bool)


def _segment_text(seg) -> str:
    """A segment as the user wrote it, for an error message."""
    if isinstance(seg, str):
        return repr(seg)
    try:
        values = list(seg)
    except TypeError:
        return repr(seg)
    if all(isinstance(x, str) for x in values):  # parsed text
        text = ",".join(values[:3]) + (f"@{values[3]}" if len(values) == 4 else "")
        return repr(text)
    return repr(tuple(values))


def _quat_matrix(quat) -> np.ndarray:
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _rotation_error(R: np.ndarray, R_ref: np.ndarray) -> np.ndarray:
    """Small-angle rotation error (world axes) [rad] taking R_ref to R."""
    E = R @ R_ref.T
    return 0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])


def _contact_points_of(setup, model):
    """The contact points of a robot configuration's controller (its ``contact_links``, else
    the links of its declared ``contact_points``), as the controller places them."""
    from ..contact.candidates import contact_points
    from ..controller_loading import _declared_contact_points

    cfg = setup.controller
    points = _declared_contact_points(cfg)
    return contact_points(model, list(cfg.contact_links) or list(points), points)


def _configured_reference(robot, kind: str, joint_names: Sequence[str] | None = None,
                          **options) -> Reference:
    """Reference of a robot configuration (name, path or RobotSetup) about its standing pose
    (see make_reference)."""
    from ..robot_config import RobotSetup, load_robot_setup, robot_setup_state

    setup = robot if isinstance(robot, RobotSetup) else load_robot_setup(robot)
    model, joints, q = robot_setup_state(setup)
    names = list(joint_names) if joint_names else joints
    o = 7 if model.floating_base else 0
    q_stand = np.array([q[o + model.joint_index(j)] for j in names])
    if kind in ("stand", "walk"):  # walk: the standing posture under the controller's gait
        return Standing(names, q_stand)
    if kind == "sway":
        return BaseSway(model, q, _contact_points_of(setup, model), names, **options)
    if kind == "com_sway":
        return CoMSway(model, q, _contact_points_of(setup, model), names, **options)
    if kind == "trot":
        return FootTrot(model, q, _contact_points_of(setup, model), names,
                        **{**setup.trot, **options})
    if kind == "sinusoid":
        held = [j for j in names if model.description.joints[j].type == "prismatic"]
        options.setdefault("squeeze", 0.0)
        return ArmSinusoid(names, q_stand, held, **{**setup.sinusoid, **options})
    raise ValueError(f"kind: unknown reference {kind!r} for the robot configuration {robot!r} "
                     "(stand, walk, sway, com_sway, trot, sinusoid)")


def main(argv: Sequence[str] | None = None) -> int:
    """``wbc_reference``: publish a reference as trajectory_msgs/JointTrajectory at a rate.

    ROS parameters (or the same names as ``--options``): ``robot`` (quadruped), ``kind`` (trot),
    ``rate`` (200 Hz), ``topic`` (``wbc_controller/reference``), ``use_sim_time``. Time of the
    reference is the node clock (simulated time with ``use_sim_time``) since the first publish.
    A gait with a contact schedule (the trot) also publishes its stance mask
    (std_msgs/UInt8MultiArray, 1 = stance, 0 = swing) on ``schedule_topic``
    (``wbc_controller/contact_schedule``) in the order of ``contact_links`` (default: the
    reference's foot links), which must be the controller's ``contact_links`` order, and, if
    the gait knows its lift-offs (the trot), each stance foot's time [s] until its next
    lift-off (std_msgs/Float64MultiArray, ``inf`` for a swinging foot and a link that is no
    foot of the gait; the controller's ``~/contact_lift_off``: the unload ramp) on
    ``lift_off_topic`` (``wbc_controller/contact_lift_off``), same order. ``kind``
    ``walk`` (a controller with ``gait: trot``) also publishes the walking command as
    geometry_msgs/Twist on ``cmd_vel_topic`` (``cmd_vel``) at the same rate: ``velocity``
    (forward, left [m/s], yaw rate [rad/s]; default 0.2, 0, 0), or, when the string parameter
    ``velocity_profile`` is set, that :class:`VelocityProfile`'s command at the reference's
    time (e.g. ``"0.3,0,0@4;0,0.3,0@4"``: 4 s forward, 4 s left, then zero).
    """
    ap = argparse.ArgumentParser(prog="wbc_reference", description=main.__doc__,
                                 allow_abbrev=False)
    ap.add_argument("--robot", default="quadruped")
    ap.add_argument("--kind", default="trot")
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--topic", default="wbc_controller/reference")
    ap.add_argument("--schedule-topic", default="wbc_controller/contact_schedule")
    ap.add_argument("--lift-off-topic", default="wbc_controller/contact_lift_off")
    args, ros_args = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    import rclpy
    from rclpy.event_handler import PublisherEventCallbacks
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from std_msgs.msg import Float64MultiArray, UInt8MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    rclpy.init(args=[sys.argv[0], *ros_args])

    class ReferenceNode(Node):
        def __init__(self) -> None:
            super().__init__("wbc_reference")
            self.declare_parameter("robot", args.robot)
            self.declare_parameter("kind", args.kind)
            self.declare_parameter("rate", args.rate)
            self.declare_parameter("topic", args.topic)
            self.declare_parameter("schedule_topic", args.schedule_topic)
            self.declare_parameter("lift_off_topic", args.lift_off_topic)
            self.declare_parameter("contact_links", Parameter.Type.STRING_ARRAY)
            self.declare_parameter("velocity", [0.2, 0.0, 0.0])
            # "" = the constant ``velocity``; else a VelocityProfile text
            self.declare_parameter("velocity_profile", "")
            self.declare_parameter("cmd_vel_topic", "cmd_vel")
            # [s] hold the reference's t = 0 sample this long first (e.g. while the simulator
            # holds a grasped object in place and the fingers close on it)
            self.declare_parameter("start_delay", 0.0)
            self.start_delay = float(self.get_parameter("start_delay").value)
            if not (math.isfinite(self.start_delay) and self.start_delay >= 0.0):
                raise ValueError(f"start_delay: must be >= 0 s, got {self.start_delay}")
            robot = self.get_parameter("robot").value
            kind = self.get_parameter("kind").value
            rate = float(self.get_parameter("rate").value)
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"rate: must be > 0, got {rate}")
            self.ref = make_reference(robot, kind)
            # without rclpy's default QoS event handlers on the publishers (incompatible QoS /
            # type warnings; the subscribers report those): each is rebuilt into the
            # executor's wait set at every wait, and this node waits at every /clock message
            quiet = PublisherEventCallbacks(use_default_callbacks=False)

            def publisher(msg_type, topic: str):
                return self.create_publisher(msg_type, topic, 10, event_callbacks=quiet)

            self.pub = publisher(JointTrajectory, self.get_parameter("topic").value)
            # the published messages, built once (a tick fills them in place)
            self.msg = JointTrajectory()
            self.msg.joint_names = list(self.ref.joint_names)
            self.msg.points = [JointTrajectoryPoint()]
            self.pub_schedule = self.pub_lift_off = None
            if hasattr(self.ref, "swing_active"):
                feet = list(self.ref.foot_links)
                links = self.get_parameter_or(
                    "contact_links", Parameter("contact_links", value=None)).value
                links = list(links) if links else feet
                unknown = [ln for ln in feet if ln not in links]
                if unknown:
                    raise ValueError(f"contact_links: {links} lacks the gait's feet {unknown}")
                # mask index i = links[i]; links that are not feet of the gait stay in stance
                self._foot_of = [feet.index(ln) if ln in feet else -1 for ln in links]
                self.pub_schedule = publisher(
                    UInt8MultiArray, self.get_parameter("schedule_topic").value)
                self.schedule = UInt8MultiArray()
                if hasattr(self.ref, "lift_off_in"):
                    self.pub_lift_off = publisher(
                        Float64MultiArray, self.get_parameter("lift_off_topic").value)
                    self.lift_off = Float64MultiArray()
            self.pub_cmd_vel = None
            if kind == "walk":
                from geometry_msgs.msg import Twist

                text = str(self.get_parameter("velocity_profile").value).strip()
                self.profile = (VelocityProfile.parse(text, "velocity_profile") if text else
                                VelocityProfile.from_value(
                                    list(self.get_parameter("velocity").value), "velocity"))
                self.twist = Twist()
                self.pub_cmd_vel = publisher(Twist, self.get_parameter("cmd_vel_topic").value)
            self.t0 = None
            self.timer = self.create_timer(1.0 / rate, self.tick)

        def tick(self) -> None:
            now = self.get_clock().now()
            t = now.nanoseconds * 1e-9
            if self.t0 is None:
                self.t0 = t + self.start_delay
            if t < self.t0:  # the t = 0 pose, at rest
                q, qd, qdd = self.ref.sample(0.0)
                qd, qdd = np.zeros_like(qd), np.zeros_like(qdd)
            else:
                q, qd, qdd = self.ref.sample(t - self.t0)
            if self.pub_cmd_vel is not None and t >= self.t0:
                tw = self.twist
                tw.linear.x, tw.linear.y, tw.angular.z = self.profile.sample(t - self.t0)
                self.pub_cmd_vel.publish(tw)
            if self.pub_schedule is not None:
                t_gait = max(t - self.t0, 0.0)
                swing = self.ref.swing_active(t_gait)
                self.schedule.data = [0 if i >= 0 and swing[i] else 1 for i in self._foot_of]
                if self.pub_lift_off is not None:
                    lift_off = self.ref.lift_off_in(t_gait)
                    self.lift_off.data = [float(lift_off[i]) if i >= 0 else math.inf
                                          for i in self._foot_of]
                    self.pub_lift_off.publish(self.lift_off)
                self.pub_schedule.publish(self.schedule)
            msg = self.msg
            msg.header.stamp.sec, msg.header.stamp.nanosec = now.seconds_nanoseconds()
            pt = msg.points[0]
            pt.positions, pt.velocities, pt.accelerations = q.tolist(), qd.tolist(), qdd.tolist()
            self.pub.publish(msg)

    from ..ros_executor import spin_until_shutdown

    return spin_until_shutdown("wbc_reference", ReferenceNode)

if __name__ == "__main__":
    sys.exit(main())
