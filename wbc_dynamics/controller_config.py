"""The configuration of a :class:`~wbc_dynamics.controller.WholeBodyController`.

:class:`ControllerConfig` is plain data, one field per controller parameter of the schema
:mod:`wbc_dynamics.parameters` (the ROS parameters map onto it 1:1). The helpers below read and
check a configuration on its own, before any model is loaded: the contact methods to compile at
start-up, whether a method's solver is part of this build, the contact solvers' options, the
contact state filter's and the base estimator's settings. Building the model and the contacts
from a configuration is :mod:`wbc_dynamics.controller_loading`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .parameters import METHODS, check

__all__ = ["ControllerConfig"]


@dataclass
class ControllerConfig:
    """Configuration of a :class:`~wbc_dynamics.controller.WholeBodyController` (plain data; the
    ROS parameters map 1:1).

    Each field is a parameter of the schema :mod:`wbc_dynamics.parameters` (type, default,
    unit, per-field check; the reference ``docs/parameters.md``): the defaults below equal the
    schema's (``test/test_parameters.py`` holds them so).

    Model source, first non-empty wins: ``robot_description`` (URDF XML, the ROS convention),
    ``urdf_path`` (file), ``robot`` (name of a bundled robot,
    :func:`wbc_dynamics.robots.robot_path`).

    Attributes:
        robot: bundled robot name ("quadruped", "arm", "branched", "humanoid") or "".
        robot_description: URDF XML string or "".
        urdf_path: path of a URDF file, or ``package://PKG/REL`` (resolved like mesh URIs:
            AMENT_PREFIX_PATH, ROS_PACKAGE_PATH, pip-installed ROS packages), or "".
        floating_base: load the model with a free-flyer root (base state then required).
        joints: configured joint order of every input/output array; empty = URDF movable-joint
            order. May be a subset: a movable joint that is neither listed here nor in
            ``locked_joints`` is locked at 0 (clipped into its limits) with a warning
            (``WholeBodyController.load_warnings``), or rejected with ``strict_joints``.
        locked_joints: movable joints held fixed in the model (Pinocchio's reduced model): not
            controlled, absent from every array; their mass moves with their parent.
        locked_positions: [rad or m] positions of ``locked_joints``, one per joint or a single
            value for all (default 0).
        strict_joints: every movable joint must be in ``joints`` or ``locked_joints`` (error
            listing the others).
        passive_joints: configured joints without a motor (in the model, measured): their
            torque is always 0 and their acceleration is whatever the dynamics give (solved
            for like the floating base's: ``P`` of Zapolsky & Drumwright's eqs. (37)-(39) selects
            only the other joints); their desired accelerations and gains are ignored.
        method: "none" | "lcp_noslip" | "lcp_coulomb" | "qp_coulomb" | "qp_noslip".
        warm_methods: further contact methods compiled and warmed up at construction, so that
            a runtime ``method`` switch to one of them costs no compilation (the node refuses a
            switch to a method that is neither ``method`` nor listed here: compiling it would
            stall the ticks for seconds;
            :meth:`~wbc_dynamics.controller.WholeBodyController.set_parameters` compiles it
            synchronously).
        contact_links: links that may touch the ground (contact methods); their contact points
            come from their URDF collision geometry of any shape
            (:mod:`wbc_dynamics.contact.candidates`) unless declared below. Empty = the bundled
            robot's ``contact_links`` (if ``robot`` is set), else the links of the declared
            contact points.
        contact_point_links: one link name per declared contact point; a link with declared
            points uses them instead of its collision geometry.
        contact_point_positions: [m] 3 numbers per declared point: its centre in the link frame.
        contact_point_radii: [m] one radius per declared point or one for all (0 = a point).
        friction: Coulomb friction coefficient mu of the ground (>= 0).
        ground_height: height of the horizontal ground plane in the world frame [m].
        control_rate: nominal control rate [Hz]; sets the time step ``dt = 1 / control_rate`` of
            the velocity-level contact problem and the timer rate in timer mode.
        kp: position gains [1/s^2], one per configured joint or a single value for all.
        kd: velocity gains [1/s], one per joint or a single value.
        ki: integral gains [1/s^3] on the position error (computed-torque PID: the commanded
            acceleration gains ``ki * integral(q_ref - q) dt``), one per joint or a single
            value; 0 = off. The integral runs on control ticks with reference positions and is
            cleared on any other tick.
        integral_limit: [rad/s^2] largest ``|ki * integral|`` per joint (anti-windup: the
            integral is held at it), one per joint or a single value.
        effort_limits: torque limits [N m / N], one per joint or a single value; 0 (or empty) =
            the URDF ``<limit effort>`` of that joint (joints without a URDF limit are not
            clamped); ``.inf`` = never clamp; negative values are rejected.
        safe_mode: "damping" (joint damping with gravity compensation) or "zero".
        safe_damping: damping gain D [1/s] of the damping safe command (``qdd = -D qd``); one per
            joint or a single value.
        state_timeout: maximum age of joint (and base) state [s] before the safe command.
        reference_timeout: maximum age of the reference [s] before the safe command.
        friction_edges: pyramid edges k of the Coulomb methods (even, >= 4).
        contact_margin: sphere-ground pairs with signed distance <= margin [m] are contact
            candidates (the phi/dt term of Zapolsky & Drumwright's eqs. (35)/(36) handles phi > 0).
        phi_deadband: [m] signed distances below it count as touching (ContactModel option;
            0 = eqs. (35)/(36) literally).
        passive_impact: treat a touchdown of an approaching contact as a passive impact
            (ContactModel option, with ``separation_tolerance`` [m/s]).
        separation_tolerance: [m/s] see ``passive_impact`` (>= 0).
        noslip_gap: [m] ``lcp_noslip`` / ``qp_noslip``: no-slip rows only for contacts with
            ``phi <= noslip_gap`` (Zapolsky & Drumwright, eq. (34)); negative = not set (every
            candidate).
        noslip_min_norm: ``lcp_noslip`` returns the minimum-norm impulses among the
            indeterminate solutions instead of the vertex solution of Alg. 2 (symmetric loads on
            several feet; needed on compliant plants where an unloaded foot drifts off).
        coulomb_tracking: ``lcp_coulomb`` / ``qp_coulomb`` first correct the commanded
            accelerations to those the touching contacts realize while sticking (Sec. 4.5),
            ``lcp_coulomb`` returns the minimum-norm impulses with Lemke's v+, ``qp_coulomb``
            uses the contact-velocity Stage I objective with friction only where
            ``phi <= max(noslip_gap, 1e-6)``, and ``qp_noslip`` applies the scale-aware rank
            rule to its free tangential impulses (``rank_mass_ratio=100``; without it the
            quadruped's trot under ``qp_noslip`` fell over ROS) (docs/contact_methods.md
            "Tracking in closed loop"; with the paper's forms the Coulomb methods track worse
            than PID on a joint-space reference).
        warm_start: keep the contact solver's warm start across ticks.
        object_urdf: a free object the contact links may touch -- e.g. a grasped box: a URDF
            (path, ``package://`` URI, a bundled name such as ``box``, or the XML text) of one
            floating body whose first collision box is centred at its origin -- appended to the
            contact problem as a free body (Zapolsky & Drumwright, Sec. 1.5); its pose and twist are
            an input (:meth:`~wbc_dynamics.controller.WholeBodyController.set_object_state`, the
            node's ``~/object_odom``) held to ``state_timeout`` like the joint state. "" = none.
            The object's contacts run the general (not the fused) contact path.
        object_friction: friction coefficient between the contact links and the object.
        grasp_force: [N] internal (squeeze) force per contact link touching the object (phi
            <= 1 mm), in the null space of the object's rows, so the object's predicted motion
            is unchanged (:func:`wbc_dynamics.contact.grasp.internal_grasp_forces`); rigid
            contact leaves the squeeze indeterminate and every solver returns almost none. 0 =
            off.
        grasp_hold: a joint that moves a contact link touching the object keeps the position
            at which the link started touching instead of following its reference:
            ``qdd = qdd_ref + kp (q_grip - q) - kd qd`` (Sec. 7.2.2: zero velocity while
            gripping; a reference inside a rigid object is a push no contact can realize).
        contact_state_filter: floating base, contact methods: the contact links' stance is a
            filtered decision (hysteresis, a minimum dwell, the gait schedule), and the base /
            joint state the contact problem sees is corrected to put the stance points on the
            ground and at rest, weighted by the ``sensing_*`` noise (a Kalman measurement
            update: :class:`~wbc_dynamics.contact.stance.StanceFilter`); links not in stance
            are left out of the contact problem. For a robot whose base state is an estimate.
        contact_dwell: [s] the filter's minimum time in a stance decision, and how long a stance
            link must stay clear of the ground before it is released.
        contact_force_observer_gain: [1/s] contact_state_filter: gain K_O of a generalized
            momentum observer (:class:`~wbc_dynamics.contact.momentum_observer.MomentumObserver`)
            whose per-link normal-force estimates are force evidence for the filter: a link
            loaded beyond ``gate`` predicted standard deviations is touched, held against a
            kinematic release, and a swing link is touched early (a foot landing before the
            schedule's stance); 0 = off.
        contact_force_threshold: [N] the least estimated normal force that is evidence of
            contact (the gate is the larger of this and the filter's 4 predicted standard
            deviations under the ``sensing_*`` noise, which leave out model and actuation
            errors).
        contact_load_ramp: [s] contact_state_filter with ``lcp_noslip`` and minimum-norm
            impulses: a touched link's load rises over this time instead of in one tick where
            the other stance links can carry it (its weight in the minimum-norm selection falls
            from ``contact_ramp_max_weight`` to 1; docs/real_robots.md "Load ramps"); 0 = off.
            Set where it cannot act (no filter, another method, no ``noslip_min_norm``): a
            warning in ``WholeBodyController.load_warnings``.
        contact_unload_ramp: [s] as ``contact_load_ramp`` over the time before an announced
            release (the trot's lift-off; ``lift_off_in`` of
            :meth:`~wbc_dynamics.controller.WholeBodyController.set_contact_schedule`); the
            trot stands on both pairs this long at each half-cycle's start; 0 = off.
        contact_ramp_max_weight: [-] >= 1, the ramps' weight at a touch and at a release.
        sensing_joint_position_noise, sensing_joint_velocity_noise: [rad, rad/s] standard
            deviations of the joint encoders (the filter's prior).
        sensing_base_position_noise, sensing_base_orientation_noise: [m, rad] of the base pose
            estimate; sensing_base_linear_velocity_noise, sensing_base_angular_velocity_noise:
            [m/s, rad/s] of its twist (base frame).
        base_observer: ``base_state: odom``: the received base pose is fused with the
            received twist before the tick uses it (:mod:`wbc_dynamics.base_observer`: per
            axis the steady-state Kalman filter of a random walk driven by the measured rate,
            noise ``sensing_base_*``): white pose noise no longer reaches the torques through
            gravity and the stance projection. False: the pose as received.
        base_state: floating base: where the base state comes from -- "odom" (an input:
            :meth:`~wbc_dynamics.controller.WholeBodyController.set_base_state`, the node's
            ``odom``) or "imu" (estimated inside the tick from the IMU
            (:meth:`~wbc_dynamics.controller.WholeBodyController.set_imu`, the node's ``imu``)
            and the joint encoders: :class:`~wbc_dynamics.estimator.BaseEstimator`, a Kalman
            filter over base position / velocity and the contact points; needs a contact
            method: the contact links' stance decides which points anchor it).
        imu_orientation: ``base_state: imu``: use the IMU's own orientation output (true) or
            integrate its angular rate with an accelerometer tilt correction (false).
        imu_gyro_noise, imu_accelerometer_noise: [rad/s, m/s^2] per-sample noise of the IMU
            (the estimator's noise model; the encoders' is ``sensing_joint_*_noise``).
        drive_stiffness, drive_damping: [N m/rad, N m s/rad] (or N/m, N s/m) joint gains of
            the hybrid drive command, one per joint or a single value (0 = effort only): a
            drive running its own impedance loop applies ``tau + stiffness (q_set - q) +
            damping (qd_set - qd)`` between the controller's commands (Unitree low-level
            commands, legged_control's hybrid joint handles); ``ControlOutput`` carries the
            set-points and gains, the node publishes them per command interface.
        torque_filter_cutoff: [Hz] cutoff of a first-order low-pass on the commanded torques
            (discretized exactly at ``control_rate``; 0 = off). Encoder and base-estimate
            noise reach the torques through the PD feedback and the inverse dynamics every
            tick; the drives and the plant do not follow them above a few tens of Hz.
        torque_rate_limit: [N m/s] (or N/s) largest change of each commanded torque per second,
            one per joint or a single value; 0 = off. Applied after the effort-limit clamp: a
            contact transition then reaches the drives over a few ticks, not in one step.
        joint_observer_acceleration_noise: [rad/s^2] > 0: the joint positions and velocities
            the controller uses are filtered by a Kalman filter per joint whose prediction is
            the previous tick's commanded acceleration (:mod:`wbc_dynamics.joint_observer`;
            measurement noise ``sensing_joint_*_noise``), this value being how far the realized
            acceleration strays from the commanded one. The encoder noise then reaches the
            torques through the PD gains several times weaker. 0 = off.
        state_latency, command_latency: [s] >= 0, the joint state's age when a tick uses it
            and the delay until the drives apply the tick's command (rounded to whole control
            periods). Latency compensation: the joint positions and velocities the controller
            uses (after the joint-state observer) are carried past their measurement by both
            with the accelerations it commanded on the ticks since
            (:class:`~wbc_dynamics.joint_observer.JointStatePredictor`), and the reference is
            taken ``command_latency`` ahead (``q_ref + L qd_ref + L^2 / 2 qdd_ref``,
            ``qd_ref + L qdd_ref``): the PD feedback compares the reference with the joints at
            the moment the command acts. 0 and 0 = off.
        task_names: task-space control (:mod:`wbc_dynamics.tasks`, docs/tasks.md): one name per
            task; empty = the joint-space reference drives the inverse dynamics directly. With
            tasks, the commanded accelerations are those of the prioritized task layer, the
            joint reference is the ``posture`` task, and goals and the joint reference are
            held (latched) when no new ones arrive: a control tick needs only a fresh state.
        task_kinds: per task ``frame`` | ``com`` | ``posture``.
        task_links: per task the frame task's link ("" for the others; empty list = none).
        task_modes: per task the frame task's rows ``pose`` | ``position`` | ``orientation``.
        task_points: [m] 3 numbers per task: the frame task's point in the link frame (empty =
            the link origins).
        task_kp, task_kd: [1/s^2], [1/s] each task's PD gains (one value for all allowed);
            ``posture`` uses ``kp`` / ``kd``.
        task_weights: weight of each task among those of its priority (> 0).
        task_priorities: each task's priority, 0 solved first (integers >= 0).
        task_active: whether each task contributes (one for all allowed); with a ``gait`` the
            walker switches the feet's tasks itself.
        gait: "" (none) or "trot": walk from a velocity command
            (:meth:`~wbc_dynamics.controller.WholeBodyController.set_velocity_command`, the
            node's ``cmd_vel``) with
            :class:`~wbc_dynamics.gait.TrotWalker`; a floating base with four contact links
            and a contact method. Without ``task_names`` the walking tasks are configured
            (:func:`~wbc_dynamics.gait.walking_tasks`).
        gait_period: [s] the trot's cycle; 0 = computed from the robot (2.6 sqrt(h / g)).
        gait_step_height: [m] the swing feet's lift; 0 = computed (a quarter of the CoM height).
    """

    robot: str = ""
    robot_description: str = ""
    urdf_path: str = ""
    floating_base: bool = False
    joints: list[str] = field(default_factory=list)
    locked_joints: list[str] = field(default_factory=list)
    locked_positions: list[float] = field(default_factory=lambda: [0.0])
    strict_joints: bool = False
    passive_joints: list[str] = field(default_factory=list)
    method: str = "none"
    warm_methods: list[str] = field(default_factory=list)
    contact_links: list[str] = field(default_factory=list)
    contact_point_links: list[str] = field(default_factory=list)
    contact_point_positions: list[float] = field(default_factory=list)
    contact_point_radii: list[float] = field(default_factory=lambda: [0.0])
    friction: float = 0.8
    ground_height: float = 0.0
    control_rate: float = 1000.0
    kp: list[float] = field(default_factory=lambda: [0.0])
    kd: list[float] = field(default_factory=lambda: [0.0])
    ki: list[float] = field(default_factory=lambda: [0.0])
    integral_limit: list[float] = field(default_factory=lambda: [10.0])
    effort_limits: list[float] = field(default_factory=lambda: [0.0])
    safe_mode: str = "damping"
    safe_damping: list[float] = field(default_factory=lambda: [10.0])
    state_timeout: float = 0.05
    reference_timeout: float = 0.5
    friction_edges: int = 4
    warm_start: bool = True
    contact_margin: float = 0.005
    phi_deadband: float = 0.0
    passive_impact: bool = False
    separation_tolerance: float = 0.0
    noslip_gap: float = -1.0
    noslip_min_norm: bool = False
    coulomb_tracking: bool = False
    object_urdf: str = ""
    object_friction: float = 1.0
    grasp_force: float = 0.0
    grasp_hold: bool = False
    contact_state_filter: bool = False
    contact_dwell: float = 0.01
    contact_force_observer_gain: float = 0.0
    contact_force_threshold: float = 0.0
    contact_load_ramp: float = 0.0
    contact_unload_ramp: float = 0.0
    contact_ramp_max_weight: float = 100.0
    sensing_joint_position_noise: float = 1e-3
    sensing_joint_velocity_noise: float = 0.02
    sensing_base_position_noise: float = 5e-3
    sensing_base_orientation_noise: float = 0.00873
    sensing_base_linear_velocity_noise: float = 0.05
    sensing_base_angular_velocity_noise: float = 0.02
    base_observer: bool = False
    base_state: str = "odom"
    imu_orientation: bool = True
    imu_gyro_noise: float = 0.002
    imu_accelerometer_noise: float = 0.05
    drive_stiffness: list[float] = field(default_factory=lambda: [0.0])
    drive_damping: list[float] = field(default_factory=lambda: [0.0])
    torque_filter_cutoff: float = 0.0
    torque_rate_limit: list[float] = field(default_factory=lambda: [0.0])
    joint_observer_acceleration_noise: float = 0.0
    state_latency: float = 0.0
    command_latency: float = 0.0
    task_names: list[str] = field(default_factory=list)
    task_kinds: list[str] = field(default_factory=list)
    task_links: list[str] = field(default_factory=list)
    task_modes: list[str] = field(default_factory=list)
    task_points: list[float] = field(default_factory=list)
    task_kp: list[float] = field(default_factory=lambda: [100.0])
    task_kd: list[float] = field(default_factory=lambda: [20.0])
    task_weights: list[float] = field(default_factory=lambda: [1.0])
    task_priorities: list[int] = field(default_factory=lambda: [0])
    task_active: list[bool] = field(default_factory=lambda: [True])
    gait: str = ""
    gait_period: float = 0.0
    gait_step_height: float = 0.0

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ControllerConfig:
        """Build from a dict (e.g. ROS parameters); unknown keys raise ValueError naming them."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(
                f"ControllerConfig: unknown field(s) {unknown}; valid: {sorted(names)}"
            )
        return cls(**{k: v for k, v in values.items()})


def _warm_method_names(cfg: ControllerConfig) -> list[str]:
    """``warm_methods`` as a list of names (a single string is one name; blanks are ignored)."""
    warm = [cfg.warm_methods] if isinstance(cfg.warm_methods, str) else cfg.warm_methods
    return [str(m) for m in warm if str(m).strip()]


def _check_method_available(method: str) -> None:
    """ValueError if the solver module of a contact method is not part of this build."""
    import importlib.util

    from .contact.dispatch import METHODS as SOLVERS

    if method not in SOLVERS:
        raise ValueError(f"method: {method!r} is not one of {list(METHODS)}")
    if importlib.util.find_spec(SOLVERS[method][0]) is None:
        raise ValueError(
            f"method: {method!r} is not available in this build (module "
            f"{SOLVERS[method][0]} missing)"
        )


def _contact_solver_options(cfg: ControllerConfig) -> dict[str, dict[str, Any]]:
    """The contact solvers' options per method that the configuration sets (``noslip_gap``,
    ``noslip_min_norm``, ``coulomb_tracking``), validated."""
    noslip_gap = check("noslip_gap", cfg.noslip_gap)
    gap = {"noslip_gap": noslip_gap} if noslip_gap >= 0.0 else {}
    options: dict[str, dict[str, Any]] = {
        "lcp_noslip": {**gap, **({"min_norm": True} if cfg.noslip_min_norm else {})},
        "qp_noslip": dict(gap),
    }
    if cfg.coulomb_tracking:
        options["lcp_coulomb"] = {"sticking_correction": True, "min_norm": True}
        options["qp_coulomb"] = {
            "sticking_correction": True, "stage1_objective": "contact_velocity",
            "friction_gap": max(noslip_gap, 1e-6)}
        options["qp_noslip"].update(rank_mass_ratio=100.0)
    return options


def _stance_settings(cfg: ControllerConfig, floating_base: bool, has_object: bool) -> Any:
    """The contact state filter's sensing noise (``contact_state_filter``,
    :class:`~wbc_dynamics.contact.stance.SensingNoise`), validated; None when off."""
    if not cfg.contact_state_filter:
        return None
    from .contact.stance import SensingNoise

    if not floating_base:
        raise ValueError("contact_state_filter: needs a floating base (floating_base: true)")
    if has_object:
        raise ValueError("contact_state_filter: not available with an object (object_urdf)")
    check("contact_dwell", cfg.contact_dwell)
    check("contact_force_observer_gain", cfg.contact_force_observer_gain)
    check("contact_force_threshold", cfg.contact_force_threshold)
    for name in ("contact_load_ramp", "contact_unload_ramp", "contact_ramp_max_weight"):
        check(name, getattr(cfg, name))
    return SensingNoise(*(check(nm, getattr(cfg, nm)) for nm in (
        f"sensing_{name}_noise" for name in (
            "joint_position", "joint_velocity", "base_position", "base_orientation",
            "base_linear_velocity", "base_angular_velocity"))))


def _ramp_warnings(cfg: ControllerConfig) -> list[str]:
    """A warning (list of at most one) naming ``contact_load_ramp`` / ``contact_unload_ramp``
    when the configuration sets them > 0 where they cannot act: the ramps are weights of the
    minimum-norm selection among indeterminate impulses that the contact state filter computes,
    so they need ``contact_state_filter``, ``method: lcp_noslip`` and ``noslip_min_norm``.
    Validated values (ValueError naming a bad one)."""
    ramps = [nm for nm in ("contact_load_ramp", "contact_unload_ramp")
             if check(nm, getattr(cfg, nm)) > 0.0]
    missing = [need for need, ok in (("contact_state_filter: true", cfg.contact_state_filter),
                                     ("method: lcp_noslip", cfg.method == "lcp_noslip"),
                                     ("noslip_min_norm: true", cfg.noslip_min_norm)) if not ok]
    if not ramps or not missing:
        return []
    also = (" (contact_unload_ramp still sets the gait's double support)"
            if cfg.gait and "contact_unload_ramp" in ramps else "")
    return [f"{' and '.join(ramps)}: no effect without {', '.join(missing)}: the load ramps "
            f"weight the minimum-norm contact impulses of the contact state filter's stance "
            f"links{also}; set them to 0 or enable those settings"]


def _base_settings(cfg: ControllerConfig, floating_base: bool, has_object: bool) -> str:
    """``base_state``, validated against the rest of the configuration."""
    src = check("base_state", cfg.base_state)
    if src == "imu":
        if not floating_base:
            raise ValueError("base_state: imu needs a floating base (floating_base: true)")
        if cfg.method == "none" or has_object:
            raise ValueError("base_state: imu needs a contact method (its contact links "
                             "anchor the estimate) and no object")
        for nm in ("imu_gyro_noise", "imu_accelerometer_noise"):
            check(nm, getattr(cfg, nm))
    return src
