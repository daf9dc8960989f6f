"""In-process closed loop: MuJoCo plant + controller, no middleware
(Zapolsky & Drumwright, Secs. 7-8).

One module for one loop: :class:`LoopConfig`, :class:`ClosedLoop` and :class:`LoopResult`
describe, run and report the same closed loop, with the shipped configurations' defaults beside
them.

Used by the demo, the experiments and the CI tests. Each control tick (period ``1 / control_rate``):

1. read the plant state (joint positions/velocities; base pose and base-frame twist, exactly what
   ``/joint_states`` + ``nav_msgs/Odometry`` carry in the ROS set-up);
2. sample the reference ``(q_des, qd_des, qdd_des)`` at the simulated time;
3. the controller computes torques (and, for the contact-aware methods, predicted contact forces);
4. the plant integrates ``sim_substeps`` steps with those torques held (zero-order hold, as a
   ros2_control effort interface does), then the simulated contact forces are measured.

Controllers (:data:`CONTROLLERS`):

* ``lcp_noslip``, ``lcp_coulomb``, ``qp_coulomb``, ``qp_noslip`` -- ID(t_i) of Zapolsky &
  Drumwright, Sec. 7.3: the product's :class:`~wbc_dynamics.controller.WholeBodyController` for
  every robot: the quadruped on the ground; the arm grasping the box with the box as the
  controller's object (``object_urdf``, appended as a free body: Sec. 1.5, eqs. (1)-(3); its state
  fed as the ``object_state`` input every tick), as a robot configuration with an object (e.g.
  ``panda_grasp``) is.
* ``none`` -- inverse dynamics without contact forces (the product's ``method: none``).
* ``id_prev`` -- ID(t_{i-1}): inverse dynamics with the contact wrenches the simulator applied on
  the previous step ("exact sensed forces", Sec. 7.3): fixed base ``tau = RNEA(q, v, a, f_ext)``;
  floating base ``M_bb a_b = -(M_bj a_j + b_b)``, ``tau = M_jb a_b + M_jj a_j + b_j`` with
  ``b = RNEA(q, v, 0, f_ext)`` (``b = h - J^T f``).
* ``pid`` -- the PID joint error-feedback baseline (no model): ``tau = Kp e + Ki int(e) + Kd de``.

All ID controllers use the same PD error feedback ``qdd_cmd = qdd_des + kp e + kd de`` (Sec. 7.3).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..robots import robot_info, robot_path
from .imperfections import Actuation, Imperfections, Sensing, scale_plant_masses
from .mujoco_model import FreeBody, GroundOptions, MujocoPlant, pose_in_link
from .references import VelocityProfile, make_reference

__all__ = ["CONTROLLERS", "ClosedLoop", "LoopConfig", "LoopResult", "run", "shipped_loop_config"]

CONTACT_METHODS = ("lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip")
#: ``lcp_noslip_mn`` = ``lcp_noslip`` with ``min_norm=True`` (minimum-norm impulses instead of
#: the paper's warm-started vertex solution; an option of the contact solver).
#: ``qp_coulomb_paper`` / ``lcp_coulomb_paper`` / ``qp_noslip_paper`` = the method as the
#: paper writes it (without :data:`QUADRUPED_SOLVER_OPTIONS`), for comparison.
CONTROLLERS = (*CONTACT_METHODS, "lcp_noslip_mn", "qp_coulomb_paper", "lcp_coulomb_paper",
               "qp_noslip_paper",
               "id_prev", "pid", "none")

#: PD feedback gains of the ID controllers [1/s^2, 1/s] and PID baseline gains (torque units:
#: N m/rad, N m/(rad s), N m s/rad), per robot.
GAINS = {
    "quadruped": {"kp": 3000.0, "kd": 110.0, "pid": (12.0, 10.0, 0.25)},
    "arm": {"kp": 300.0, "kd": 35.0, "pid": (100.0, 50.0, 5.0), "pid_fingers": (5.0, 2.0, 0.05)},
}


#: Contact solver options the loop sets by default (merged under ``LoopConfig.solver_options``):
#: ``lcp_noslip`` / ``qp_noslip`` impose no-slip (unbounded friction) only on touching contacts
#: (eq. (34); a swing foot within the candidate margin must not be stopped horizontally within
#: one tick).
DEFAULT_SOLVER_OPTIONS = {"lcp_noslip": {"noslip_gap": 1e-6}, "qp_noslip": {"noslip_gap": 1e-6}}
#: the bundled quadruped's sensing-robustness options as config/quadruped.yaml ships them (the
#: loop builds the bundled robots' controllers from its own defaults; pass these as
#: ``LoopConfig.controller_options`` to run it as configured -- the demo does)
BUNDLED_QUADRUPED_OPTIONS = {"contact_state_filter": True, "torque_filter_cutoff": 40.0,
                             "joint_observer_acceleration_noise": 10.0,
                             "drive_stiffness": [3.0], "drive_damping": [0.05]}
#: Quadruped (ground contact, joint-space PD reference): the Coulomb methods first correct the
#: desired accelerations to those the touching feet realize while sticking, and qp_coulomb
#: uses the contact-velocity Stage I objective with friction only at touching feet (see
#: docs/contact_methods.md "Tracking in closed loop"; without them both track worse than PID).
#: qp_noslip likewise (contact-velocity objective, sticking correction): with eq. (69) as
#: written its unbounded friction brakes the base within one tick on every touchdown (trot:
#: up to 40 m g predicted, torques between the limits on 8 % of the ticks; docs/contact_methods.md
#: "Torque jumps at touchdown and lift-off").
QUADRUPED_SOLVER_OPTIONS = {
    "qp_coulomb": {"stage1_objective": "contact_velocity", "sticking_correction": True,
                   "friction_gap": 1e-6},
    "qp_noslip": {"stage1_objective": "contact_velocity", "sticking_correction": True,
                  "rank_mass_ratio": 100.0},
    "lcp_coulomb": {"sticking_correction": True, "min_norm": True},
}


def _solver_options(cfg: LoopConfig) -> dict:
    out = {k: dict(v) for k, v in DEFAULT_SOLVER_OPTIONS.items()}
    if cfg.robot == "quadruped" and not cfg.controller.endswith("_paper"):
        for k, v in QUADRUPED_SOLVER_OPTIONS.items():
            out.setdefault(k, {}).update(v)
    for k, v in cfg.solver_options.items():
        out.setdefault(k, {}).update(v)
    return out


@dataclass
class LoopConfig:
    """One closed-loop run.

    Attributes:
        robot: "quadruped" or "arm" (bundled), or a robot configuration: a name in
            ``config/robots`` or a YAML path (:func:`wbc_dynamics.robot_config.load_robot_setup`).
        urdf: robot configuration only: a URDF path replacing the configuration's model source.
        controller: one of :data:`CONTROLLERS`.
        reference: "stand" / "shift" / "trot" (quadruped), "stand" / "sinusoid" (arm).
        duration: simulated time [s].
        control_rate: controller rate [Hz] (contact problems use dt = 1 / control_rate).
        sim_substeps: plant steps per control tick (plant step = 1 / (rate * substeps)).
        friction: Coulomb coefficient of ground (quadruped) / box (arm), or "high" / "low".
        compliant: compliant (spring-damper) instead of rigid contact (Sec. 7.5).
        kp, kd: PD gains of the ID controllers (None = :data:`GAINS`).
        controller_friction: mu given to the Coulomb methods (None = the simulator's).
        reference_options: forwarded to :func:`~wbc_dynamics.sim.references.make_reference`.
        box_mass: arm task: mass of the grasped box [kg] (None = the bundled box's).
        settle: floating base: seconds of settling on the ground before t = 0 (``_settle``).
        phi_deadband: [m] contact distance deadband between simulator and controller (the
            controller's ``phi_deadband``: MuJoCo's soft contacts carry load at a few
            micrometres of penetration, which eqs. (35)/(36) read literally would demand to
            remove within one tick); 0 = off; None = a robot configuration's own value (the
            bundled robots: 1e-4).
        contact_schedule: trot: tell the contact model which feet the gait has in swing.
        solver_options: per-method contact solver options, e.g.
            ``{"lcp_noslip": {"min_norm": True}}`` (``SolverState.options``), merged over
            :data:`DEFAULT_SOLVER_OPTIONS`.
        passive_impact, separation_tolerance: [-, m/s] the ``ContactModel`` options of the same
            name (touchdown / rebound velocities are removed by a passive inelastic impact before
            the inverse dynamics; see ``docs/contact_api.md``). Defaults: on, 5 cm/s (MuJoCo's
            soft feet rebound at up to ~6 cm/s after a touchdown).
        grasp_force: arm + box, contact-aware methods: desired internal (squeeze) force [N] per
            touching fingertip, added in the null space of the grasp map (the controller option
            of the same name: :func:`~wbc_dynamics.contact.grasp.internal_grasp_forces`;
            Zapolsky & Drumwright, Fig. 11: "given contact state and internal forces"). Rigid
            contact leaves the squeeze indeterminate and every solver returns (nearly) zero
            squeeze, so the box slips out under MuJoCo's soft contacts; 0 = off
            (the solvers' own forces only). ``docs/simulation.md``: 20 N holds the box.
            None = off for the bundled arm, the configuration's ``grasp_force`` for a robot
            configuration with an object (the controller option of the same name).
        hold_touching_fingers: arm + box, contact-aware methods: a finger whose tip touches the
            box (phi <= 1 mm) is commanded zero velocity / acceleration (Sec. 7.2.2: "maintain
            zero velocity and acceleration while gripping the box, and ... close further if not
            contacting") instead of the PD pull towards the reference 0.05 rad inside the box,
            which no rigid-contact force can realize (the problem is then inconsistent / the
            solvers hit their limits). None = off (bundled arm) / the configuration's
            ``grasp_hold`` (the controller option).
        imperfections: sensing, actuation and model error between plant and controller
            (:class:`~wbc_dynamics.sim.imperfections.Imperfections`; default: none, the
            controller receives the plant's exact state). The logged state is the plant's.
        controller_options: :class:`~wbc_dynamics.controller.ControllerConfig` fields set for
            the run over the robot's (e.g. ``{"contact_state_filter": False}``).
        push: floating base: (start [s], duration [s], force (3,) as a fraction of the robot's
            weight, world axes) -- a push on the base at its centre of mass; None: none.
    """

    robot: str = "quadruped"
    urdf: str = ""
    controller: str = "qp_coulomb"
    reference: str = "trot"
    duration: float = 3.0
    control_rate: float = 1000.0
    sim_substeps: int = 1
    friction: float | str = "high"
    compliant: bool = False
    kp: float | None = None
    kd: float | None = None
    controller_friction: float | None = None
    reference_options: dict = field(default_factory=dict)
    box_mass: float | None = None
    settle: float = 0.5
    phi_deadband: float | None = None
    contact_schedule: bool = True
    solver_options: dict = field(default_factory=dict)
    passive_impact: bool = True
    separation_tolerance: float = 0.05
    grasp_force: float | None = None
    hold_touching_fingers: bool | None = None
    imperfections: Imperfections = field(default_factory=Imperfections)
    controller_options: dict = field(default_factory=dict)
    push: tuple | None = None


@dataclass
class LoopResult:
    """Logged signals of a run (one row per control tick) and summary metrics.

    Arrays: ``t`` (K,) [s]; ``q, q_des, qd, qd_des, tau`` (K, n) [rad, rad/s, N m];
    ``base_pos`` (K, 3) [m] (quadruped) or object position (arm grasps); ``normal_pred`` /
    ``normal_sim`` (K,) summed contact normal force predicted by the controller / applied by the
    simulator [N] (NaN where the controller predicts none); ``tick_time`` (K,) controller
    compute time [s].
    """

    config: LoopConfig
    joint_names: list[str]
    t: np.ndarray
    q: np.ndarray
    q_des: np.ndarray
    qd: np.ndarray
    qd_des: np.ndarray
    tau: np.ndarray
    base_pos: np.ndarray
    normal_pred: np.ndarray
    normal_sim: np.ndarray
    tick_time: np.ndarray
    failed: bool
    failure: str
    effort_limit: np.ndarray
    safe_ticks: int = 0
    flags: dict = field(default_factory=dict)
    #: arm grasps: (K,) distance [m] of the object from its initial position in the hand frame
    box_slip: np.ndarray | None = None
    #: the controller estimates its base (``base_state: imu``): (K, 13) its estimate and the
    #: plant's true base state at each tick, ``[p (3) world, quat xyzw (4), v (3) base frame,
    #: w (3) base frame]``
    base_estimate: np.ndarray | None = None
    base_truth: np.ndarray | None = None

    def estimation_metrics(self) -> dict[str, float]:
        """How well the controller's own base estimate followed the plant (``base_state:
        imu``; empty otherwise): ``velocity_rms`` [m/s] of the base-frame linear velocity
        error, ``drift`` [m] horizontal position error at the end, ``distance`` [m] travelled,
        ``drift_per_distance`` (drift / distance, NaN under 0.1 m), ``height_rms`` [m],
        ``tilt_rms`` [deg] roll / pitch error (angle between the estimated and true base z
        axes), ``yaw_drift_per_min`` [deg/min]."""
        est, tru = self.base_estimate, self.base_truth
        if est is None or tru is None or est.shape[0] < 2:
            return {}
        ev = est[:, 7:10] - tru[:, 7:10]
        out = {"velocity_rms": float(np.sqrt(np.mean(np.sum(ev ** 2, axis=1))))}
        out["drift"] = float(np.linalg.norm(est[-1, 0:2] - tru[-1, 0:2]))
        out["distance"] = float(np.sum(np.linalg.norm(np.diff(tru[:, 0:2], axis=0), axis=1)))
        out["drift_per_distance"] = (out["drift"] / out["distance"] if out["distance"] >= 0.1
                                     else math.nan)
        out["height_rms"] = float(np.sqrt(np.mean((est[:, 2] - tru[:, 2]) ** 2)))

        def z_axis(qu):
            x, y, z, w = qu[:, 0], qu[:, 1], qu[:, 2], qu[:, 3]
            return np.stack([2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y)], 1)

        def yaw(qu):
            x, y, z, w = qu[:, 0], qu[:, 1], qu[:, 2], qu[:, 3]
            return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))

        cosang = np.clip(np.sum(z_axis(est[:, 3:7]) * z_axis(tru[:, 3:7]), axis=1), -1.0, 1.0)
        out["tilt_rms"] = float(np.degrees(np.sqrt(np.mean(np.arccos(cosang) ** 2))))
        dyaw = np.unwrap(yaw(est[:, 3:7])) - np.unwrap(yaw(tru[:, 3:7]))
        minutes = max(float(self.t[-1] - self.t[0]), 1e-9) / 60.0
        out["yaw_drift_per_min"] = float(np.degrees(abs(dyaw[-1] - dyaw[0])) / minutes)
        return out

    # ---- Sec. 8 metrics --------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """Table 3-6 metrics over the logged ticks.

        ``pos_err`` E[E|q - q_des|] [rad], ``vel_err`` E[E|qd - qd_des|] [rad/s] (Table 3);
        ``dtau`` ``E[|dtau/dt|]`` [N m/s] and ``tau`` ``E[|tau|]`` [N m] (Table 4); ``force_abs``
        / ``force_rel`` mean ``|sum predicted normal - sum simulated normal|`` [N] and that
        divided by the mean simulated sum (Table 5), ``force_median`` the median of that error [N]
        (robust to the few touchdown ticks where the model predicts an impulse); ``failed``
        (Table 6); tick time mean / p99 / max [s].
        """
        k = self.t.shape[0]
        out = {"ticks": float(k), "failed": float(self.failed)}
        if k == 0:
            return out
        dt = 1.0 / self.config.control_rate
        out["pos_err"] = float(np.mean(np.abs(self.q - self.q_des)))
        out["vel_err"] = float(np.mean(np.abs(self.qd - self.qd_des)))
        out["pos_err_max"] = float(np.max(np.abs(self.q - self.q_des)))
        out["tau"] = float(np.mean(np.abs(self.tau)))
        out["dtau"] = float(np.mean(np.abs(np.diff(self.tau, axis=0))) / dt) if k > 1 else 0.0
        out["dtau_max"] = float(np.max(np.abs(np.diff(self.tau, axis=0))) / dt) if k > 1 else 0.0
        ok = np.isfinite(self.normal_pred)
        if np.any(ok):
            err = np.abs(self.normal_pred[ok] - self.normal_sim[ok])
            out["force_abs"] = float(np.mean(err))
            out["force_median"] = float(np.median(err))
            out["force_rel"] = float(np.mean(err) / max(np.mean(self.normal_sim[ok]), 1e-9))
            out["normal_pred_mean"] = float(np.mean(self.normal_pred[ok]))
        out["normal_sim_mean"] = float(np.mean(self.normal_sim))
        out["tick_mean"] = float(np.mean(self.tick_time))
        out["tick_p99"] = float(np.percentile(self.tick_time, 99))
        out["tick_max"] = float(np.max(self.tick_time))
        out["clamp_frac"] = float(np.mean(np.abs(self.tau) >= 0.999 * self.effort_limit))
        if self.box_slip is not None and self.box_slip.size:
            out["box_slip_max"] = float(np.max(self.box_slip))
        return out


# ------------------------------------------------------------------------------------------
# controllers
# ------------------------------------------------------------------------------------------


class _WBC:
    """The product's WholeBodyController: the quadruped on the ground, the bundled arm with the
    box as its object (``object_urdf``; a contact method) or without (``none``), a robot
    configuration as its YAML says."""

    def __init__(self, cfg: LoopConfig, method: str, mu: float, joint_names: list[str],
                 config: Any = None, model: Any = None, object_urdf: str = "") -> None:
        """``object_urdf``: bundled robots: the grasped object (path, name or XML), with the
        loop's grasp options; a configuration has its own."""
        from ..controller import ControllerConfig, WholeBodyController

        overrides = {
            "method": method,
            "friction": mu,
            "control_rate": cfg.control_rate,
            "state_timeout": 1.0,
            "reference_timeout": 1.0,
            "phi_deadband": (cfg.phi_deadband if cfg.phi_deadband is not None
                             else 1e-4 if config is None else config.phi_deadband),
            "passive_impact": cfg.passive_impact,
            "separation_tolerance": cfg.separation_tolerance,
            **cfg.controller_options,
        }
        if config is None:  # a bundled robot
            info = robot_info(cfg.robot)
            g = GAINS[cfg.robot]
            config = ControllerConfig(
                robot=cfg.robot, floating_base=info["floating_base"], joints=joint_names,
                kp=[cfg.kp if cfg.kp is not None else g["kp"]],
                kd=[cfg.kd if cfg.kd is not None else g["kd"]])
            if object_urdf:  # the arm + box (Zapolsky & Drumwright, Secs. 1.5, 7.2.2)
                config = dataclasses.replace(
                    config, contact_links=list(info["fingertip_links"]), object_urdf=object_urdf,
                    object_friction=mu, grasp_force=float(cfg.grasp_force or 0.0),
                    grasp_hold=bool(cfg.hold_touching_fingers))
        else:  # a robot configuration: its gains (and grasp options) unless the loop sets them
            overrides.update({k: [v] for k, v in (("kp", cfg.kp), ("kd", cfg.kd)) if v is not None})
            if config.object_urdf:
                overrides.update({k: v for k, v in (("grasp_force", cfg.grasp_force),
                                                    ("grasp_hold", cfg.hold_touching_fingers))
                                  if v is not None})
            if config.state_latency > 0.0 or config.command_latency > 0.0:
                # set for a real robot's latency; the simulated one is known exactly (none
                # without imperfections), and predicting past a latency that is not there
                # leads the joints' feedback (docs/real_robots.md, "Latency compensation")
                imp = cfg.imperfections
                for name in ("state_latency", "command_latency"):
                    overrides.setdefault(name, getattr(imp, name))
        self.ctl = WholeBodyController(dataclasses.replace(config, **overrides), model=model)
        self.floating = self.ctl.floating_base
        #: the object's name in the plant (its state is the controller's object_state input)
        self.object_name = self.ctl.object_body.name if self.ctl.has_object else None
        self.predicts = method != "none"
        self.schedule = None  # callable t -> set of links planned in swing
        #: callable t -> {stance link: time [s] until its planned lift-off} (or None)
        self.lift_off = None
        self.goals = None  # callable t -> None: sets task goals before each tick
        #: hybrid drive commands configured (drive_stiffness / drive_damping)
        self.hybrid = bool(np.any(self.ctl.config.drive_stiffness)
                           or np.any(self.ctl.config.drive_damping))
        self._last = None
        #: base_state "imu": the controller estimates its base from ``imu`` (gyro, specific
        #: force, orientation: the loop's simulated IMU) and the joints
        self.estimating = self.ctl.config.base_state == "imu"
        self.imu: tuple | None = None
        self.ctl.solver_state.options.update(_solver_options(cfg))

    def __call__(self, t, q, v, ref, plant):
        c = self.ctl
        if self.predicts and self.schedule is not None:
            c.set_contact_schedule(self.schedule(t),
                                   None if self.lift_off is None else self.lift_off(t))
        if self.floating:
            if self.estimating:
                if self.imu is None:  # the settle: an IMU of the exact state at rest
                    self.imu = (v[3:6], _specific_force_at_rest(q), q[3:7])
                c.set_imu(*self.imu, t)
                self.imu = None
            else:
                c.set_base_state(q[0:3], q[3:7], v[0:3], v[3:6], t)
            c.set_joint_state(q[7:], v[6:], t)
        else:
            c.set_joint_state(q, v, t)
        if self.object_name is not None:
            bq, bv = plant.free_body_state(self.object_name)
            c.set_object_state(bq[:3], bq[3:7], bv[:3], bv[3:], t)
        q_des, qd_des, qdd_des = ref
        c.set_reference(qdd_des, t, position=q_des, velocity=qd_des)
        if self.goals is not None:
            self.goals(t)
        out = c.update(t)
        self._last = out
        # summed normal force: each contact's force along its normal (ground: the z component)
        normal = (float(np.sum(out.contact_forces * out.contact_normals)) if self.predicts
                  else math.nan)
        return out.tau.copy(), normal, out.safe, out.solver_flags


    def drive_command(self) -> tuple:
        """The last tick's hybrid drive command (set-points, gains; copies)."""
        o = self._last
        return (o.position_setpoint.copy(), o.velocity_setpoint.copy(), o.stiffness.copy(),
                o.damping.copy())


def _specific_force_at_rest(q: np.ndarray) -> np.ndarray:
    """What an accelerometer at the base reads at rest: gravity's reaction in the base frame."""
    x, y, z, w = q[3:7]
    return 9.81 * np.array([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)])


class _PID:
    """PID joint error feedback in torque units (baseline of Sec. 7.3), clamped to limits."""

    def __init__(self, cfg: LoopConfig, n: int, limit: np.ndarray) -> None:
        g = GAINS[cfg.robot]
        self.kp, self.ki, self.kd = (np.full(n, x) for x in g["pid"])
        if "pid_fingers" in g:  # light fingers (5 N m drives) get their own gains
            info = robot_info(cfg.robot)
            for j in info.get("finger_joints", []):
                i = info["joint_names"].index(j)
                self.kp[i], self.ki[i], self.kd[i] = g["pid_fingers"]
        self.integral = np.zeros(n)
        self.dt = 1.0 / cfg.control_rate
        self.limit = limit
        self.off = 7 if robot_info(cfg.robot)["floating_base"] else 0

    def __call__(self, t, q, v, ref, plant):
        q_des, qd_des, _ = ref
        o, ov = (7, 6) if self.off else (0, 0)
        e = q_des - q[o:]
        self.integral += e * self.dt
        ilim = self.limit / np.maximum(self.ki, 1e-9)  # anti wind-up: integral within limits
        np.clip(self.integral, -ilim, ilim, out=self.integral)
        tau = self.kp * e + self.ki * self.integral + self.kd * (qd_des - v[ov:])
        return np.clip(tau, -self.limit, self.limit), math.nan, False, ()


class _SensedID:
    """ID(t_{i-1}): inverse dynamics with the simulator's contact wrenches of the last step."""

    def __init__(self, cfg: LoopConfig, joint_names: list[str], limit: np.ndarray) -> None:
        from ..model import RobotModel

        info = robot_info(cfg.robot)
        self.m = RobotModel.from_urdf(robot_path(cfg.robot), floating_base=info["floating_base"])
        if list(self.m.joint_names) != list(joint_names):
            raise ValueError("joint order of the model and the loop differ")
        g = GAINS[cfg.robot]
        self.kp = cfg.kp if cfg.kp is not None else g["kp"]
        self.kd = cfg.kd if cfg.kd is not None else g["kd"]
        self.floating = info["floating_base"]
        self.limit = limit
        self.links = set(self.m.link_names)

    def __call__(self, t, q, v, ref, plant):
        q_des, qd_des, qdd_des = ref
        o = 7 if self.floating else 0
        ov = 6 if self.floating else 0
        a_j = qdd_des + self.kp * (q_des - q[o:]) + self.kd * (qd_des - v[ov:])
        f_ext = {k: w for k, w in plant.link_contact_wrenches_local().items() if k in self.links}
        m = self.m
        if not self.floating:
            tau = m.rnea(q, v, a_j, f_ext=f_ext or None)
        else:
            b = m.rnea(q, v, np.zeros(m.nv), f_ext=f_ext or None)
            M = m.mass_matrix(q)
            a_b = np.linalg.solve(M[:6, :6], -(M[:6, 6:] @ a_j + b[:6]))
            tau = M[6:, :6] @ a_b + M[6:, 6:] @ a_j + b[6:]
        normal = math.nan
        return np.clip(tau, -self.limit, self.limit), normal, False, ()


def _scale_box_mass(urdf: str, factor: float) -> str:
    """Same box, mass and inertia scaled by ``factor`` (a denser material)."""
    import re

    urdf = re.sub(
        r'<mass value="([^"]+)"', lambda mo: f'<mass value="{float(mo.group(1)) * factor!r}"', urdf
    )
    return re.sub(
        r'(i[xyz]{2})="([^"]+)"',
        lambda mo: f'{mo.group(1)}="{float(mo.group(2)) * factor!r}"',
        urdf,
    )


# ------------------------------------------------------------------------------------------
# the loop
# ------------------------------------------------------------------------------------------


class ClosedLoop:
    """Plant + reference + controller for one :class:`LoopConfig` (see module docstring)."""

    def __init__(self, cfg: LoopConfig) -> None:
        if cfg.controller not in CONTROLLERS:
            raise ValueError(f"controller: {cfg.controller!r} is not one of {list(CONTROLLERS)}")
        if not (cfg.control_rate > 0 and cfg.sim_substeps >= 1 and cfg.duration > 0):
            raise ValueError("control_rate, sim_substeps and duration must be positive")
        if cfg.grasp_force is not None and not (math.isfinite(cfg.grasp_force)
                                                and cfg.grasp_force >= 0.0):
            raise ValueError(f"grasp_force: must be finite and >= 0 N, got {cfg.grasp_force!r}")
        self.setup = None
        self.walker = None
        self._walk_profile = VelocityProfile.from_value((0.0, 0.0, 0.0))
        self._reach: dict | None = None
        if cfg.reference == "walk":  # the controller's trot (gait), the loop's options over it
            cfg = self._walking_config(cfg)
        elif cfg.reference == "reach":  # balance with a hand moving on a circle
            cfg = self._reaching_config(cfg)
        self.cfg = cfg
        if cfg.robot not in GAINS:
            self._init_configured(cfg)
            self._start_walking()
            return
        info = robot_info(cfg.robot)
        self.info = info
        self.joint_names = list(info["joint_names"])
        dt_sim = 1.0 / (cfg.control_rate * cfg.sim_substeps)
        ground = GroundOptions(
            friction=cfg.friction if cfg.robot == "quadruped" else "high",
            compliant=cfg.compliant,
            timestep=dt_sim,
            height=0.0 if cfg.robot == "quadruped" else -1.0,
        )
        self.sim_mu = GroundOptions(friction=cfg.friction).mu
        mu_ctl = self.sim_mu if cfg.controller_friction is None else cfg.controller_friction
        free_bodies: tuple = ()
        self.box_mass = cfg.box_mass if cfg.box_mass is not None else info.get("box_mass", 0.0)
        if cfg.robot == "arm":
            pose = info["box_pose"]
            free_bodies = (
                FreeBody(
                    "box",
                    tuple(info["box_size"]),
                    self.box_mass,
                    pos=tuple(pose[:3]),
                    quat_xyzw=tuple(pose[3:]),
                    friction=self.sim_mu,
                ),
            )
        collision = None if cfg.robot == "quadruped" else list(info["contact_links"])
        self.plant = MujocoPlant(
            robot_path(cfg.robot),
            info["floating_base"],
            joint_order=self.joint_names,
            ground=ground,
            free_bodies=free_bodies,
            collision_links=collision,
            # the paper's experiments (Sec. 7) and their tuning use frictionless, undamped
            # joints; MujocoPlant keeps a URDF's <dynamics> by default
            joint_dynamics=False,
        )
        self._perturb_plant()
        self.limit = self.plant.effort_limit.copy()
        self.ref = make_reference(
            cfg.robot, cfg.reference, self.joint_names, **cfg.reference_options
        )
        c = cfg.controller
        if c.endswith("_paper"):
            c = c[: -len("_paper")]
        if c == "lcp_noslip_mn":
            c = "lcp_noslip"
            opts = {k: dict(v) for k, v in cfg.solver_options.items()}
            opts.setdefault("lcp_noslip", {})["min_norm"] = True
            cfg = dataclasses.replace(cfg, solver_options=opts)
        if c == "pid":
            self.ctl = _PID(cfg, len(self.joint_names), self.limit)
        elif c == "id_prev":
            self.ctl = _SensedID(cfg, self.joint_names, self.limit)
        else:
            from ..model import RobotModel

            # the controller's model from the plant's parse: one description for both
            model = RobotModel.from_urdf(self.plant.description,
                                         floating_base=info["floating_base"],
                                         warmup="control")  # as the controller's own model
            box = ""
            if cfg.robot == "arm" and c in CONTACT_METHODS:
                box = robot_path("box")
                if self.box_mass != info["box_mass"]:  # the paper's heavy box: scaled mass
                    with open(box) as fh:
                        box = _scale_box_mass(fh.read(), self.box_mass / info["box_mass"])
            self.ctl = _WBC(cfg, c, mu_ctl, self.joint_names, model=model, object_urdf=box)
            self._schedule_swing()
        # initial state: the reference's pose at t = 0, at rest
        # quadruped: the reference's pose at t = 0 on the ground, settled; arm: the grasp pose
        # in which the fingertips just touch the box (the reference then squeezes)
        if info["floating_base"]:
            q0 = np.array(info["standing_q"])
            q0[7:] = self.ref.sample(0.0)[0]
        else:
            q0 = np.array(info["grasp_q"])[[info["joint_names"].index(j)
                                             for j in self.joint_names]]
        self.plant.set_state(q0, np.zeros(self.plant.nv))
        if info["floating_base"]:
            self._settle(cfg.settle)
        else:
            self._settle_grasp(cfg.settle)
        self.q_start, _ = self.plant.get_state()
        #: the grasped object (plant body name) and the link its slip is measured in
        self.object_name = "box" if cfg.robot == "arm" else None
        self.hand_link = info.get("hand_link", "")
        self.hand_object_offset = self._object_in_hand() if self.object_name else None
        self._start_walking()

    def _walking_config(self, cfg: LoopConfig) -> LoopConfig:
        """``reference: walk``: the controller's trot (``gait``; ``reference_options``:
        ``velocity`` -- (forward, left [m/s], yaw rate [rad/s]), held, or a
        :class:`~wbc_dynamics.sim.references.VelocityProfile` (its text such as
        ``"0.3,0,0@2;0,0.3,0@2"`` or its ``(vx, vy, wz, duration)`` tuples), commanded at the
        loop's time --, ``period`` [s], ``step_height`` [m]); the joint reference is the
        standing pose."""
        options = dict(cfg.reference_options)
        self._walk_profile = VelocityProfile.from_value(options.pop("velocity", (0.0, 0.0, 0.0)),
                                                        "reference_options velocity")
        gait = {"gait": "trot"}
        for key, name in (("period", "gait_period"), ("step_height", "gait_step_height")):
            if key in options:
                gait[name] = float(options.pop(key))
        if options:
            raise ValueError(f"reference_options: unknown for walk: {sorted(options)} "
                             "(velocity, period, step_height)")
        return dataclasses.replace(cfg, reference_options={},
                                   controller_options={**gait, **cfg.controller_options})

    def _start_walking(self) -> None:
        """The walker's command, once the controller exists (``reference: walk``; a profile
        that changes: set before every tick, by the controller's goals hook); the hand's goal
        schedule (``reference: reach``)."""
        if self.cfg.reference == "walk" and isinstance(self.ctl, _WBC):
            self.walker = self.ctl.ctl.walker
            self.ctl.ctl.set_velocity_command(*self._walk_profile.sample(0.0))
            if not self._walk_profile.constant:
                self.ctl.goals = self._walk_command
        if self._reach is not None and isinstance(self.ctl, _WBC):
            self.ctl.goals = self._reach_goal

    def _walk_command(self, t: float) -> None:
        """The velocity profile's command at ``t`` [s] (``reference: walk``)."""
        self.ctl.ctl.set_velocity_command(*self._walk_profile.sample(t))

    def _reaching_config(self, cfg: LoopConfig) -> LoopConfig:
        """``reference: reach`` (a floating base): standing balance
        (:func:`~wbc_dynamics.tasks.balance_tasks`) and the pose of ``hand``
        (``reference_options``) at priority 1, whose position goal circles its standing
        position (``radius`` [m], default 5 cm, in the vertical plane facing forward, at
        ``frequency`` [Hz], default 0.5, faded in over the first second), the orientation
        held; the joint reference is the standing posture (priority 2)."""
        options = dict(cfg.reference_options)
        hand = options.pop("hand", None)
        if not hand:
            raise ValueError("reference_options: reach needs 'hand' (a link)")
        self._reach = {"hand": str(hand), "radius": float(options.pop("radius", 0.05)),
                       "frequency": float(options.pop("frequency", 0.5)), "center": None}
        if options:
            raise ValueError(f"reference_options: unknown for reach: {sorted(options)} "
                             "(hand, radius, frequency)")
        from ..robot_config import load_robot_setup

        trunk = _root_link(load_robot_setup(cfg.robot) if cfg.robot not in GAINS else None,
                           cfg.robot)
        tasks = dict(task_names=["com", "trunk", "hand", "posture"],
                     task_kinds=["com", "frame", "frame", "posture"],
                     task_links=["", trunk, str(hand), ""],
                     task_modes=["", "orientation", "pose", ""],
                     task_kp=[100.0, 100.0, 100.0, 0.0], task_kd=[20.0, 20.0, 20.0, 0.0],
                     task_priorities=[0, 0, 1, 2])
        return dataclasses.replace(cfg, reference="stand", reference_options={},
                                   controller_options={**tasks, **cfg.controller_options})

    def _reach_goal(self, t: float) -> None:
        """The hand's goal at ``t`` [s] (``reference: reach``), from its held pose at the
        controller's first tick: a circle of ``radius`` in the world's x-z plane with its
        velocity and acceleration, faded in by a quintic over the first second."""
        ctl = self.ctl.ctl
        r = self._reach
        if ctl.ticks == 0:
            return
        if r["center"] is None:
            r["center"] = ctl.tasks.goal("hand")[0]
        w = 2.0 * math.pi * r["frequency"]
        s = min(max(t, 0.0), 1.0)
        f, df, ddf = (s ** 3 * (10 - 15 * s + 6 * s * s), 30 * s * s * (1 - s) ** 2,
                      60 * s * (1 - s) * (1 - 2 * s)) if t < 1.0 else (1.0, 0.0, 0.0)
        c, sn = math.cos(w * t), math.sin(w * t)
        A = r["radius"]
        # offset = A f(t) (sin wt, 0, 1 - cos wt): starts at the held position
        base = np.array([sn, 0.0, 1.0 - c])
        d1 = np.array([w * c, 0.0, w * sn])
        d2 = np.array([-w * w * sn, 0.0, w * w * c])
        pos = r["center"] + A * f * base
        vel = A * (df * base + f * d1)
        acc = A * (ddf * base + 2 * df * d1 + f * d2)
        ctl.set_task_goal("hand", position=pos, linear_velocity=vel, linear_acceleration=acc)

    def _init_configured(self, cfg: LoopConfig) -> None:
        """A robot configuration (:func:`wbc_dynamics.robot_config.load_robot_setup`): the
        controller from its YAML, the plant from the controller's own parsed description (locked
        joints fixed there too), the standing pose from the YAML / SRDF / computed contact."""
        from ..robot_config import load_robot_setup, standing_configuration

        setup = load_robot_setup(cfg.robot)
        if cfg.urdf:
            setup.controller = dataclasses.replace(
                setup.controller, urdf_path=os.path.abspath(cfg.urdf), robot_description="",
                robot="")
        self.setup = setup
        c = cfg.controller
        if c not in (*CONTACT_METHODS, "none", "lcp_noslip_mn"):
            raise ValueError(f"controller: {c!r} is available for bundled robots only; a robot "
                             f"configuration runs {[*CONTACT_METHODS, 'none', 'lcp_noslip_mn']}")
        method = "lcp_noslip" if c == "lcp_noslip_mn" else c
        self.sim_mu = GroundOptions(friction=cfg.friction).mu
        mu_ctl = self.sim_mu if cfg.controller_friction is None else cfg.controller_friction
        self.ctl = _WBC(cfg, method, mu_ctl, [], config=setup.controller)
        ctl = self.ctl.ctl
        if c == "lcp_noslip_mn":
            self.ctl.ctl.solver_state.options.setdefault("lcp_noslip", {})["min_norm"] = True
        self.ctl.ctl.solver_state.options.update(
            {k: dict(v) for k, v in cfg.solver_options.items()})
        self.joint_names = list(ctl.joint_names)
        floating = ctl.floating_base
        self.info = {"floating_base": floating, "base_link": ctl.model.root_link}
        model = ctl.model
        description = model.description.with_locked_joints(model.locked_joints)
        dt_sim = 1.0 / (cfg.control_rate * cfg.sim_substeps)
        ground = GroundOptions(friction=cfg.friction, compliant=cfg.compliant, timestep=dt_sim,
                               height=float(ctl.config.ground_height) if floating else None)
        q_joints = setup.standing_joint_positions(self.joint_names, model)
        q0 = standing_configuration(ctl, q_joints, setup.standing.get("base_height"))
        grasp = setup.grasp
        for j, x in setup.start_positions().items():  # e.g. fingers just clear of the object
            q0[(7 if floating else 0) + model.joint_index(j)] = x
        # the object (object_urdf) from the controller's own parse, placed in the hand
        self.object_name = ctl.object_body.name if ctl.has_object else None
        self.hand_link = str(grasp.get("hand_link", ""))
        free_bodies: tuple = ()
        self.box_mass = 0.0
        if self.object_name is not None:
            if not grasp:
                raise ValueError(f"{setup.path}: object_urdf needs a grasp group (hand_link, "
                                 "object_pose) to place the object in the simulation")
            obj = FreeBody.from_object(ctl.object_body, pose_in_link(model, q0, self.hand_link,
                                                                     grasp["object_pose"]))
            free_bodies, self.box_mass = (obj,), obj.mass
        self.plant = MujocoPlant(description, floating, joint_order=self.joint_names,
                                 ground=ground, free_bodies=free_bodies, joint_dynamics=False)
        self._perturb_plant()
        self.limit = self.plant.effort_limit.copy()
        self.ref = make_reference(setup, cfg.reference, self.joint_names,
                                  **cfg.reference_options)
        self._schedule_swing()
        o = 7 if floating else 0  # model order -> the plant's (configured) joint order
        q0 = np.concatenate([q0[:o], [q0[o + model.joint_index(j)] for j in self.joint_names]])
        q0 = self.plant.place_on_ground(q0)  # the plant's feet on its ground (not dropping)
        self.standing_height = float(q0[2]) if floating else 0.0
        if floating or self.object_name is not None:
            self._settle_configured(cfg.settle)
        self.q_start, _ = self.plant.get_state()
        self.hand_object_offset = self._object_in_hand() if self.object_name else None


    def _perturb_plant(self) -> None:
        """Model error (``imperfections.mass_error``): the plant's robot bodies get their mass
        and inertia scaled, the controller keeps the nominal model."""
        imp = self.cfg.imperfections
        self.mass_factors = np.ones(0)
        if imp.mass_error <= 0.0:
            return
        import mujoco

        m = self.plant.model
        skip = {0} | {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n)
                      for n in self.plant._free_body_names}
        bodies = [b for b in range(m.nbody) if b not in skip and m.body_mass[b] > 0.0]
        self.mass_factors = scale_plant_masses(m, bodies, imp.mass_error,
                                               np.random.default_rng(imp.seed))

    def _settle_configured(self, duration: float) -> None:
        """A robot configuration comes to rest on the ground before t = 0, as the bundled robots
        do under PID (:meth:`_settle`), here under the configuration's own controller (its
        shipped method and options, holding the reference's t = 0 pose; a separate controller
        object, so the one under test starts with no warm start). Why: the plant starts with
        its lowest geometry exactly on the ground, where MuJoCo's soft contacts carry no load,
        so the first plant step is unsupported and the robot lands on its feet ~1 ms later;
        every method is compared from the same rest state instead (docs/robots.md: g1 under
        ``lcp_coulomb`` does not recover from that landing).

        With an object (a grasp): the object is held where the configuration puts it (a
        fixture, as if on a table) while that controller -- with the configuration's
        ``grasp_force`` / ``grasp_hold``, whatever the loop overrides for the run -- closes
        the fingers on it, then the object is let go: every run starts from the same grasp."""
        if duration <= 0.0:
            return
        setup = self.setup
        # (standing still: without the run's gait or tasks)
        options = {k: v for k, v in self.cfg.controller_options.items()
                   if not k.startswith(("task_", "gait"))}
        as_configured = dataclasses.replace(self.cfg, grasp_force=None,
                                            hold_touching_fingers=None, controller_options=options)
        holder = _WBC(as_configured, setup.controller.method, self.ctl.ctl.config.friction, [],
                      config=setup.controller, model=self.ctl.ctl.model)
        q_ref = self.ref.sample(0.0)[0]
        hold = (q_ref, np.zeros_like(q_ref), np.zeros_like(q_ref))  # the pose, at rest
        dt = 1.0 / self.cfg.control_rate
        held = None if self.object_name is None else self.plant.free_body_state(self.object_name)[0]
        for k in range(int(round(duration / dt))):
            q, v = self.plant.get_state()
            tau, _, _, _ = holder(k * dt, q, v, hold, self.plant)
            self.plant.step(tau, self.cfg.sim_substeps)
            if held is not None:
                self.plant.set_free_body_state(self.object_name, held)
        self.plant.data.time = 0.0

    def _schedule_swing(self) -> None:
        """A gait reference's swing feet become the controller's contact schedule."""
        if not (self.cfg.contact_schedule and hasattr(self.ref, "swing_active")
                and isinstance(self.ctl, _WBC)):
            return
        feet = list(self.ref.foot_links)
        ref = self.ref

        def swing(t: float) -> set:
            return {f for f, s in zip(feet, ref.swing_active(t), strict=True) if s}

        self.ctl.schedule = swing
        if hasattr(ref, "lift_off_in"):
            def lift_off_in(t: float) -> dict:
                return {f: x for f, x in zip(feet, ref.lift_off_in(t), strict=True)
                        if math.isfinite(x)}

            self.ctl.lift_off = lift_off_in

    def _settle(self, duration: float) -> None:
        """Let the robot come to rest on its contacts under the PID baseline holding the
        reference's t = 0 pose (soft contacts need a small penetration to carry the load), then
        restart the clock at t = 0. The controller under test starts from this rest state."""
        if duration <= 0.0:
            return
        pid = _PID(self.cfg, len(self.joint_names), self.limit)
        ref0 = self.ref.sample(0.0)
        dt = 1.0 / self.cfg.control_rate
        for _ in range(int(round(duration / dt))):
            q, v = self.plant.get_state()
            tau, _, _, _ = pid(0.0, q, v, ref0, self.plant)
            self.plant.step(tau, self.cfg.sim_substeps)
        self.plant.data.time = 0.0

    def _settle_grasp(self, duration: float) -> None:
        """Arm: close the fingers on the box (held in place meanwhile) under PD + gravity
        compensation (RNEA) towards the reference's t = 0 pose (fingers 0.05 rad beyond the box
        faces, squeezing with a torque-level PD), then let go of the box and restart the clock:
        every controller starts from the same preloaded grasp."""
        if duration <= 0.0 or self.cfg.robot != "arm":
            return
        from ..model import RobotModel

        m = RobotModel.from_urdf(robot_path("arm"), floating_base=False)
        if list(m.joint_names) != self.joint_names:
            raise ValueError("joint order of the model and the loop differ")
        box_q, _ = self.plant.free_body_state("box")
        q_ref = self.ref.sample(0.0)[0]
        dt = 1.0 / self.cfg.control_rate
        fingers = np.array([self.joint_names.index(j) for j in self.info["finger_joints"]])
        for _ in range(int(round(duration / dt))):
            q, v = self.plant.get_state()
            tau = m.rnea(q, v, 400.0 * (q_ref - q) - 40.0 * v)
            # the light fingers get a torque-level squeeze (5 N m/rad towards the reference,
            # which closes beyond the faces): a preloaded grasp, not a bare touch
            tau[fingers] += 5.0 * (q_ref[fingers] - q[fingers]) - 0.05 * v[fingers]
            self.plant.step(np.clip(tau, -self.limit, self.limit), self.cfg.sim_substeps)
            self.plant.set_free_body_state("box", box_q)
        self.plant.data.time = 0.0

    def _object_in_hand(self) -> np.ndarray:
        """The object's position in the hand frame [m] (its slip is the change of this)."""
        ph, Rh = self.plant.body_pose(self.hand_link)
        pb, _ = self.plant.body_pose(self.object_name)
        return Rh.T @ (pb - ph)

    def failure(self) -> str:
        """Non-empty description if the robot fell (quadruped) or dropped the box (arm)."""
        q, _ = self.plant.get_state()
        if not np.all(np.isfinite(q)):
            return "state not finite"
        if self.object_name is not None:
            off = self._object_in_hand()
            if np.linalg.norm(off - self.hand_object_offset) > 0.05:
                return (f"dropped the {self.object_name}: it moved > 5 cm relative to the hand")
            return ""
        if self.setup is not None and not self.info["floating_base"]:
            return ""
        if self.cfg.robot == "quadruped" or self.setup is not None:
            h0 = self.info["standing_height"] if self.setup is None else self.standing_height
            x, y, z, w = q[3:7]
            up_z = 1.0 - 2.0 * (x * x + y * y)  # z of the base's z axis in world
            if q[2] < 0.5 * h0:
                return f"fell: base height {q[2]:.3f} m < {0.5 * h0:.3f} m"
            if up_z < math.cos(math.radians(60.0)):
                return "fell: base tilted more than 60 deg"
            for body, other, _, _ in self.plant.contacts():
                if other == "ground" and body == self.info["base_link"]:
                    return "fell: trunk touches the ground"
            return ""
        return ""

    def run(
        self, progress: Callable[[float, dict], None] | None = None, stop_on_failure: bool = True,
        on_step: Callable[[float, MujocoPlant], None] | None = None,
    ) -> LoopResult:
        """Run for ``cfg.duration``; ``progress(fraction, info)`` is called ~20 times;
        ``on_step(t, plant)`` after every control tick's plant steps, ``t`` the simulated time
        reached [s] (an observer, e.g. :class:`~wbc_dynamics.sim.video.VideoRecorder`)."""
        cfg = self.cfg
        dt = 1.0 / cfg.control_rate
        K = int(round(cfg.duration * cfg.control_rate))
        n = len(self.joint_names)
        log = {k: np.zeros((K, n)) for k in ("q", "q_des", "qd", "qd_des", "tau")}
        t_log = np.zeros(K)
        base = np.zeros((K, 3))
        npred = np.full(K, math.nan)
        nsim = np.zeros(K)
        tick = np.zeros(K)
        slip = np.zeros(K) if self.object_name is not None else None
        est_log = (np.zeros((K, 13)), np.zeros((K, 13))) if (
            isinstance(self.ctl, _WBC) and self.ctl.estimating) else None
        floating = self.info["floating_base"]
        o, ov = (7, 6) if floating else (0, 0)
        failed, why, safe, flags = False, "", 0, {}
        k_done = 0
        every = max(1, K // 20)
        imp = cfg.imperfections
        sensing = Sensing(imp, floating, cfg.control_rate,
                          np.random.default_rng([imp.seed, 1]))
        actuation = Actuation(imp, self.limit, cfg.control_rate,
                              plant_dt=1.0 / (cfg.control_rate * cfg.sim_substeps))
        hybrid = isinstance(self.ctl, _WBC) and self.ctl.hybrid
        estimating = isinstance(self.ctl, _WBC) and self.ctl.estimating
        push = None
        if cfg.push is not None and floating:
            t_push, d_push, fraction = cfg.push
            weight = float(self.plant.total_mass) * 9.81
            push = (float(t_push), float(t_push) + float(d_push),
                    weight * np.asarray(fraction, dtype=float))
        for k in range(K):
            t = k * dt
            if push is not None:
                self.plant.set_base_force(push[2] if push[0] <= t < push[1] else np.zeros(3))
            q, v = self.plant.get_state()
            ref = self.ref.sample(t)
            if imp.exact and not estimating:
                qm, vm = q, v
            else:
                qm, vm = sensing.measure(q, v)
                if estimating:
                    self.ctl.imu = sensing.imu
            t0 = time.perf_counter()
            tau, normal, was_safe, fl = self.ctl(t, qm, vm, ref, self.plant)
            tick[k] = time.perf_counter() - t0
            if imp.exact and not hybrid:
                self.plant.step(tau, cfg.sim_substeps)
            else:  # the drives: latency, dropout, their own impedance loop, lag, limits
                actuation.command(tau, t, self.ctl.drive_command() if hybrid else None)
                for _ in range(cfg.sim_substeps):
                    qp, vp = self.plant.get_state()
                    self.plant.step(actuation.torque(qp[o:], vp[ov:]), 1)
            safe += int(was_safe)
            for f in fl:
                flags[f] = flags.get(f, 0) + 1
            t_log[k] = t
            log["q"][k], log["qd"][k] = q[o:], v[ov:]
            log["q_des"][k], log["qd_des"][k] = ref[0], ref[1]
            log["tau"][k] = self.plant.applied_torques()
            if floating:
                base[k] = q[0:3]
            elif self.object_name is not None:
                base[k] = self.plant.body_pose(self.object_name)[0]
            npred[k] = normal
            nsim[k] = self._sim_normal()
            if slip is not None:
                slip[k] = float(np.linalg.norm(self._object_in_hand() - self.hand_object_offset))
            if est_log is not None and self.ctl.ctl.base_estimator.initialized:
                est_log[0][k] = np.concatenate(self.ctl.ctl.base_estimator.base_state())
                est_log[1][k] = np.concatenate([q[0:7], v[0:6]])
            k_done = k + 1
            if on_step is not None:
                on_step(t + dt, self.plant)
            if progress is not None and (k % every == 0 or k == K - 1):
                progress((k + 1) / K, {"t": t + dt, "base": base[k]})
            if k % 10 == 0 or k == K - 1:
                why = self.failure()
                if why:
                    failed = True
                    if stop_on_failure:
                        break
        sl = slice(0, k_done)
        return LoopResult(
            cfg,
            self.joint_names,
            t_log[sl],
            log["q"][sl],
            log["q_des"][sl],
            log["qd"][sl],
            log["qd_des"][sl],
            log["tau"][sl],
            base[sl],
            npred[sl],
            nsim[sl],
            tick[sl],
            failed,
            why,
            self.limit,
            safe,
            flags,
            None if slip is None else slip[sl],
            None if est_log is None else est_log[0][sl],
            None if est_log is None else est_log[1][sl],
        )

    def _sim_normal(self) -> float:
        if self.object_name is not None:
            return self.plant.total_normal_force(self.object_name)
        return self.plant.total_normal_force("ground")


def _root_link(setup: Any, robot: str) -> str:
    """The root link of a robot configuration (its URDF's) or of a bundled robot."""
    if setup is None:
        return robot_info(robot)["base_link"]
    from ..robot_config import robot_setup_state

    return robot_setup_state(setup)[0].root_link


def shipped_loop_config(robot: str, reference: str, duration: float,
                        imperfections: Imperfections | None = None,
                        controller_options: dict | None = None) -> LoopConfig:
    """A loop with the controller as the product ships it for ``robot``: the bundled quadruped
    as config/quadruped.yaml configures it (``lcp_noslip`` with minimum-norm impulses,
    :data:`BUNDLED_QUADRUPED_OPTIONS`), a robot configuration (``config/robots`` name or YAML
    path) with its own method and options; ``controller_options`` over those."""
    if robot == "quadruped":
        method, solver = "lcp_noslip", {"lcp_noslip": {"min_norm": True}}
        options = dict(BUNDLED_QUADRUPED_OPTIONS)
    else:
        from ..robot_config import load_robot_setup

        method, solver, options = load_robot_setup(robot).controller.method, {}, {}
    options.update(controller_options or {})
    return LoopConfig(robot=robot, reference=reference, controller=method, duration=duration,
                      solver_options=solver, controller_options=options,
                      imperfections=imperfections if imperfections is not None
                      else Imperfections())


def run(cfg: LoopConfig, progress=None, stop_on_failure: bool = True) -> LoopResult:
    """Build and run a :class:`ClosedLoop`."""
    return ClosedLoop(cfg).run(progress, stop_on_failure)
