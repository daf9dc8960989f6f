"""The parameter schema: every parameter of the ``wbc_controller`` node (and of ``wbc_estimator``)
in one place -- name, type, default, unit, description, per-field validation, when it may change,
and whether it is a :class:`~wbc_dynamics.controller_config.ControllerConfig` field or the node's
own.

Derived from it: the nodes' parameter declarations (:mod:`wbc_dynamics.node`,
:mod:`wbc_dynamics.estimator_node`), :data:`RUNTIME_PARAMETERS`, the per-field checks the
controller and the node run at configure and on a runtime change (:func:`check`,
:func:`per_joint`), and the parameter reference ``docs/parameters.md``::

    python -m wbc_dynamics.parameters --markdown docs/parameters.md

:class:`~wbc_dynamics.controller_config.ControllerConfig` keeps its typed fields and literal
defaults for readers and IDEs; a test holds them equal to this schema. Checks that relate several
parameters (array lengths against the joints or tasks, a contact method needing contact links,
...) stay with the code that uses them. No ROS import: the core uses this module without ROS.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = [
    "CONFIGURE",
    "CONTACT_METHODS",
    "CONTROLLER",
    "CONTROLLER_PARAMETERS",
    "ESTIMATOR_PARAMETERS",
    "METHODS",
    "NODE",
    "NODE_PARAMETERS",
    "PARAMETERS",
    "PER_JOINT",
    "RUNTIME",
    "RUNTIME_PARAMETERS",
    "SAFE_MODES",
    "SPECS",
    "STARTUP",
    "STRUCTURAL_PARAMETERS",
    "TYPES",
    "ParameterSpec",
    "check",
    "markdown",
    "per_joint",
]

#: Contact-aware inverse dynamics methods (Zapolsky & Drumwright) accepted by ``method``.
CONTACT_METHODS: tuple[str, ...] = ("lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip")
#: Every accepted ``method`` value (``"none"``: inverse dynamics without contact forces).
METHODS: tuple[str, ...] = ("none", *CONTACT_METHODS)
#: Accepted ``safe_mode`` values.
SAFE_MODES: tuple[str, ...] = ("damping", "zero")

#: Parameter types (as in a ROS parameters file): scalars and arrays of them.
TYPES: tuple[str, ...] = ("bool", "int", "float", "string", "bool[]", "int[]", "float[]",
                          "string[]")

#: ``change``: may change while the controller runs (validated, applied between ticks).
RUNTIME = "runtime"
#: ``change``: read at configure, fixed until cleanup (a change while configured is refused).
CONFIGURE = "configure"
#: ``change``: read by the node outside configure (at start-up; ``autostart`` also when a URDF
#: arrives on the topic); a change is never refused.
STARTUP = "startup"
#: ``scope``: a :class:`~wbc_dynamics.controller_config.ControllerConfig` field (and a node
#: parameter).
CONTROLLER = "controller"
#: ``scope``: a parameter of the ROS node only.
NODE = "node"

#: ``length`` of an array broadcast over the configured joints (:func:`per_joint`).
PER_JOINT = "one per configured joint or one for all"
_PER_TASK = "one per task or one for all"


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter.

    Attributes:
        name: parameter name (also the ControllerConfig field name).
        type: one of :data:`TYPES`.
        default: the default (arrays as tuples); None = unset (an empty array).
        description: what it does (units are in ``unit``).
        unit: SI unit of the value (of each element of an array), "" if none.
        group: section of the parameter reference.
        change: :data:`RUNTIME`, :data:`CONFIGURE` or :data:`STARTUP`.
        scope: :data:`CONTROLLER` or :data:`NODE`.
        estimator: also a parameter of ``wbc_estimator`` (same meaning and default).
        minimum, maximum: bounds of a number (each element of a numeric array); None = none.
        exclusive_minimum: the value must be > ``minimum`` (else >=).
        finite: NaN and infinities are rejected (False: ``.inf`` accepted, NaN never).
        even: an integer that must be even.
        choices: the accepted strings (each element of a string array); empty = any.
        length: an array's length rule, e.g. :data:`PER_JOINT`; "" = any.
    """

    name: str
    type: str
    default: Any
    description: str
    unit: str = ""
    group: str = ""
    change: str = CONFIGURE
    scope: str = CONTROLLER
    estimator: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    finite: bool = True
    even: bool = False
    choices: tuple[str, ...] = ()
    length: str = ""

    @property
    def is_array(self) -> bool:
        """True for the array types."""
        return self.type.endswith("[]")

    @property
    def numeric(self) -> bool:
        """True for int / float scalars and arrays."""
        return self.type.rstrip("[]") in ("int", "float")

    def default_value(self) -> Any:
        """The default as a parameter value: arrays as a fresh list, unset as None."""
        if self.default is None:
            return None
        return list(self.default) if self.is_array else self.default

    @property
    def constraint(self) -> str:
        """The per-value check in words ("finite and >= 0", "one of: odom, imu"), "" if none."""
        if self.choices:
            return "one of: " + ", ".join(repr(c) if c == "" else c for c in self.choices)
        if not self.numeric:
            return ""
        parts = []
        if self.even:
            parts.append("even")
        elif self.finite and self.type.startswith("float"):
            parts.append("finite")
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            parts.append(f"in [{lo:g}, {hi:g}]")
        elif lo is not None:
            parts.append(f"{'>' if self.exclusive_minimum else '>='} {lo:g}")
        elif hi is not None:
            parts.append(f"<= {hi:g}")
        return " and ".join(parts)

    @property
    def summary(self) -> str:
        """One line for a ROS parameter descriptor: description, unit, ``[runtime]`` tag."""
        tag = "[runtime] " if self.change == RUNTIME else ""
        unit = f" [{self.unit}]" if self.unit else ""
        return f"{tag}{self.description}{unit}"

    def accepts(self, x: float) -> bool:
        """True if the number ``x`` passes this parameter's bounds (one array element)."""
        if math.isnan(x) or (self.finite and not math.isfinite(x)):
            return False
        if self.minimum is not None and (x <= self.minimum if self.exclusive_minimum
                                         else x < self.minimum):
            return False
        if self.maximum is not None and x > self.maximum:
            return False
        return not (self.even and x % 2)

    def check(self, value: Any) -> Any:
        """``value`` checked against the per-value rule (:attr:`constraint`) and converted (a
        number to float / int, a string to str, a string array to a list of str); other values
        are returned as they are. Raises ValueError naming the parameter."""
        name = self.name
        if self.type in ("float", "int"):
            try:
                x = float(value) if self.type == "float" else int(value)
            except (TypeError, ValueError, OverflowError):
                kind = "a number" if self.type == "float" else "an integer"
                raise ValueError(f"{name}: expected {kind}, got {value!r}") from None
            if not self.accepts(float(x)):
                raise ValueError(f"{name}: must be {self.constraint}, got {value!r}")
            return x
        if self.type == "string" and self.choices:
            if value not in self.choices:
                raise ValueError(f"{name}: {value!r} is not one of {list(self.choices)}")
            return str(value)
        if self.type == "string[]" and self.choices:
            items = [value] if isinstance(value, str) else list(value)
            for item in items:
                if item not in self.choices:
                    raise ValueError(f"{name}: {item!r} is not one of {list(self.choices)}")
            return [str(item) for item in items]
        return value


# --------------------------------------------------------------------------- the schema
_MODEL = "Robot model and joints"
_CONTACT = "Inverse dynamics and contact"
_SENSING = "Real sensing and actuation"
_ESTIMATION = "Base estimation (base_state: imu)"
_TASKS = "Task-space control and walking"
_LOOP = "Control loop"
_SAFETY = "Safety"
_OUTPUTS = "Outputs and process"

_P = ParameterSpec

#: Every parameter, in the order of the parameter reference.
SPECS: tuple[ParameterSpec, ...] = (
    # ---- robot model and joints
    _P("robot_description", "string", "", "URDF XML (the ROS convention); the first model "
       "source", group=_MODEL, estimator=True),
    _P("urdf_path", "string", "", "URDF file path or package:// URI; used if "
       "robot_description is empty", group=_MODEL, estimator=True),
    _P("robot_description_topic", "string", "/robot_description", "if robot_description, "
       "urdf_path and robot are all empty: the URDF from this std_msgs/String topic (transient "
       "local, as robot_state_publisher publishes it); with autostart the node configures and "
       "activates itself when it arrives, and a URDF it cannot use is a counted rejection "
       "(rejected_robot_description.<reason>); empty = no topic (configure then fails without "
       "a model)", group=_MODEL, change=STARTUP, scope=NODE, estimator=True),
    _P("robot", "string", "", "bundled robot name (quadruped, arm, branched, humanoid; "
       "docs/robots.md); used if both robot_description and urdf_path are empty",
       group=_MODEL, estimator=True),
    _P("floating_base", "bool", False, "load the model with a free-flyer base (its state from "
       "odom, or estimated with base_state imu)", group=_MODEL),
    _P("joints", "string[]", None, "configured joint order of every array (data[i] of the "
       "command = torque of joints[i]); unset = URDF order; a subset locks the other movable "
       "joints at 0 (clipped into their limits) with a warning", group=_MODEL, estimator=True),
    _P("locked_joints", "string[]", None, "movable joints held fixed in the model (Pinocchio's "
       "reduced model): not controlled, absent from every array", group=_MODEL,
       estimator=True),
    _P("locked_positions", "float[]", (0.0,), "positions of locked_joints", unit="rad or m",
       length="one per locked joint or one for all", group=_MODEL, estimator=True),
    _P("strict_joints", "bool", False, "joints + locked_joints must name every movable joint "
       "(else the others are locked at 0 with a warning)", group=_MODEL, estimator=True),
    _P("passive_joints", "string[]", None, "configured joints without a motor: torque always 0, "
       "acceleration solved for (like the floating base's)", group=_MODEL),
    # ---- inverse dynamics and contact
    _P("method", "string", "none", "inverse dynamics method: none (no contact forces) or a "
       "contact method of Zapolsky & Drumwright (docs/contact_methods.md); a runtime switch "
       "only to a method compiled at configure (method, none, warm_methods)", group=_CONTACT,
       change=RUNTIME, choices=METHODS),
    _P("warm_methods", "string[]", None, "further contact methods compiled at configure: the "
       "only targets of a runtime method switch", group=_CONTACT, choices=METHODS),
    _P("contact_links", "string[]", None, "links that may touch the ground; their URDF "
       "collision geometry of any shape gives the contact points (docs/robots.md); unset = the "
       "bundled robot's, else the declared points' links", group=_CONTACT, estimator=True),
    _P("contact_point_links", "string[]", None, "declared contact points: the link of each (a "
       "link's declared points replace its collision geometry)", group=_CONTACT,
       estimator=True),
    _P("contact_point_positions", "float[]", None, "declared contact points: x y z of each in "
       "its link frame", unit="m", minimum=-1e3, maximum=1e3, length="3 per declared point",
       group=_CONTACT, estimator=True),
    _P("contact_point_radii", "float[]", (0.0,), "declared contact points: radius of each (0 = "
       "a point)", unit="m", minimum=0.0, maximum=1e3,
       length="one per declared point or one for all", group=_CONTACT, estimator=True),
    _P("friction", "float", 0.8, "ground Coulomb friction coefficient mu", group=_CONTACT,
       change=RUNTIME, minimum=0.0),
    _P("ground_height", "float", 0.0, "height of the ground plane in the world frame",
       unit="m", group=_CONTACT, estimator=True),
    _P("contact_margin", "float", 0.005, "contact candidates: signed distance to the ground <= "
       "margin", unit="m", group=_CONTACT, minimum=0.0),
    _P("friction_edges", "int", 4, "friction pyramid edges of the Coulomb methods",
       group=_CONTACT, minimum=4, even=True),
    _P("phi_deadband", "float", 0.0, "signed distances below it count as touching (0 = "
       "Zapolsky & Drumwright's eqs. (35)/(36) as they are)", unit="m", group=_CONTACT,
       minimum=0.0),
    _P("passive_impact", "bool", False, "touchdown of an approaching contact treated as a "
       "passive impact", group=_CONTACT),
    _P("separation_tolerance", "float", 0.0, "separation tolerance of passive_impact",
       unit="m/s", group=_CONTACT, minimum=0.0),
    _P("noslip_gap", "float", -1.0, "lcp_noslip / qp_noslip: no-slip rows only for contacts "
       "with phi <= gap (eq. (34)); negative = every candidate", unit="m", group=_CONTACT),
    _P("noslip_min_norm", "bool", False, "lcp_noslip: the minimum-norm impulses instead of the "
       "vertex solution of Alg. 2 (symmetric loads on several feet)", group=_CONTACT),
    _P("coulomb_tracking", "bool", False, "lcp_coulomb / qp_coulomb: sticking-consistent "
       "accelerations and the minimum-norm / contact-velocity forms; qp_noslip: the "
       "scale-aware rank rule (docs/contact_methods.md)", group=_CONTACT),
    _P("warm_start", "bool", True, "warm-start the contact solver from the previous tick",
       group=_CONTACT),
    _P("object_urdf", "string", "", "a free object the contact links may touch (a grasped "
       "box): URDF path, package:// URI, bundled name (box) or the XML of one floating body "
       "whose first collision box is centred at its origin; its state on ~/object_odom; empty "
       "= none", group=_CONTACT),
    _P("object_friction", "float", 1.0, "friction coefficient between the contact links and the "
       "object", group=_CONTACT, minimum=0.0),
    _P("grasp_force", "float", 0.0, "internal (squeeze) force per contact link touching the "
       "object; 0 = off", unit="N", group=_CONTACT, minimum=0.0),
    _P("grasp_hold", "bool", False, "joints of contact links touching the object hold the "
       "position where the touch began (qdd = qdd_ref + kp (q_grip - q) - kd qd)",
       group=_CONTACT),
    # ---- real sensing and actuation
    _P("contact_state_filter", "bool", False, "floating base, contact methods: each contact "
       "link's stance as a filtered decision (gait schedule, hysteresis, minimum dwell), the "
       "state the contact problem sees corrected to it (docs/robustness.md)", group=_SENSING),
    _P("contact_dwell", "float", 0.01, "the stance filter's minimum time in a decision; time "
       "clear of the ground before a release", unit="s", group=_SENSING, minimum=0.0),
    _P("contact_force_observer_gain", "float", 0.0, "contact_state_filter: gain K_O of the "
       "generalized momentum observer whose contact-force estimates are the stance filter's "
       "force evidence (touch when loaded, hold while loaded, early touch-down of a swing "
       "foot); its time constant is 1/K_O; 0 = off (kinematics and schedule only)",
       unit="1/s", group=_SENSING, minimum=0.0),
    _P("contact_force_threshold", "float", 0.0, "contact_force_observer_gain > 0: the least "
       "estimated normal force that is evidence of contact (the gate is the larger of this "
       "and the stance filter's gate, 4 predicted standard deviations of the estimate under "
       "the sensing_* noise; model and actuation errors are not in that noise)", unit="N",
       group=_SENSING, minimum=0.0),
    _P("contact_load_ramp", "float", 0.0, "contact_state_filter, lcp_noslip with "
       "noslip_min_norm: a touched contact link's load rises over this time instead of in one "
       "tick, where the other stance links can carry it (its weight in the minimum-norm "
       "selection falls from contact_ramp_max_weight to 1); 0 = off", unit="s",
       group=_SENSING, minimum=0.0),
    _P("contact_unload_ramp", "float", 0.0, "as contact_load_ramp, for a release the gait "
       "schedule announces (the trot's lift-off; set_contact_schedule's lift_off_in): the link "
       "is unloaded over this time before it; 0 = off", unit="s", group=_SENSING,
       minimum=0.0),
    _P("contact_ramp_max_weight", "float", 100.0, "the contact load ramps' weight at a touch "
       "and at a release (a link's share of a load the others can carry is ~1/weight)",
       group=_SENSING, minimum=1.0),
    _P("sensing_joint_position_noise", "float", 1e-3, "encoder noise std (the stance filter's "
       "prior, the base estimator's noise model)", unit="rad", group=_SENSING, minimum=0.0,
       exclusive_minimum=True, estimator=True),
    _P("sensing_joint_velocity_noise", "float", 0.02, "joint-rate noise std", unit="rad/s",
       group=_SENSING, minimum=0.0, exclusive_minimum=True, estimator=True),
    _P("sensing_base_position_noise", "float", 5e-3, "base-estimate position noise std "
       "(base_state odom: the stance filter's gates)", unit="m", group=_SENSING, minimum=0.0,
       exclusive_minimum=True),
    _P("sensing_base_orientation_noise", "float", 0.00873, "base-estimate orientation noise "
       "std", unit="rad", group=_SENSING, minimum=0.0, exclusive_minimum=True,
       estimator=True),
    _P("sensing_base_linear_velocity_noise", "float", 0.05, "base-estimate velocity noise std "
       "(base frame)", unit="m/s", group=_SENSING, minimum=0.0, exclusive_minimum=True),
    _P("sensing_base_angular_velocity_noise", "float", 0.02, "base-estimate angular-rate noise "
       "std (base frame)", unit="rad/s", group=_SENSING, minimum=0.0, exclusive_minimum=True),
    _P("base_observer", "bool", False, "base_state odom: the base pose fused with the base "
       "twist before the tick uses it (a steady-state Kalman filter per axis, noise "
       "sensing_base_*; docs/real_robots.md); false = the pose as received", group=_SENSING),
    _P("torque_filter_cutoff", "float", 0.0, "cutoff of a first-order low-pass on the commanded "
       "torques; 0 = off", unit="Hz", group=_SENSING, minimum=0.0),
    _P("torque_rate_limit", "float[]", (0.0,), "largest change of each commanded torque per "
       "second, after the effort-limit clamp; 0 = off", unit="N m/s", group=_SENSING,
       minimum=0.0, length=PER_JOINT),
    _P("state_latency", "float", 0.0, "age of the joint state when the tick uses it (bus and "
       "driver delay): with command_latency, the joint state is carried to the moment the "
       "command acts with the accelerations commanded meanwhile (whole control periods; "
       "docs/real_robots.md, 'Latency compensation'); 0 and 0 = off", unit="s",
       group=_SENSING, minimum=0.0, maximum=0.1),
    _P("command_latency", "float", 0.0, "delay until the drives apply a command: the state is "
       "carried this much further and the reference is taken this far ahead (its velocity "
       "and acceleration extrapolated)", unit="s", group=_SENSING, minimum=0.0, maximum=0.1),
    _P("joint_observer_acceleration_noise", "float", 0.0, "joint-state observer: spread of "
       "the realized joint acceleration about the commanded one (its process noise; the "
       "encoders' is sensing_joint_*_noise); 0 = off, the encoders used as measured",
       unit="rad/s^2", group=_SENSING, minimum=0.0),
    _P("drive_stiffness", "float[]", (0.0,), "hybrid drive command stiffness; 0 = effort only "
       "(any gain > 0: the node publishes the hybrid drive command, docs/node.md)",
       unit="N m/rad", group=_SENSING, minimum=0.0, length=PER_JOINT),
    _P("drive_damping", "float[]", (0.0,), "hybrid drive command damping", unit="N m s/rad",
       group=_SENSING, minimum=0.0, length=PER_JOINT),
    # ---- base estimation
    _P("base_state", "string", "odom", "floating base: odom (the base state from the odom "
       "topic) or imu (estimated from imu and the joint states; needs a contact method; "
       "docs/node.md, 'Running without odometry')", group=_ESTIMATION,
       choices=("odom", "imu")),
    _P("imu_orientation", "bool", True, "base_state imu: use the IMU's orientation output "
       "(false: integrate its angular rate with an accelerometer tilt correction)",
       group=_ESTIMATION, estimator=True),
    _P("imu_gyro_noise", "float", 0.002, "base_state imu: IMU angular-rate noise std per "
       "sample", unit="rad/s", group=_ESTIMATION, minimum=0.0, exclusive_minimum=True,
       estimator=True),
    _P("imu_accelerometer_noise", "float", 0.05, "base_state imu: IMU specific-force noise std "
       "per sample", unit="m/s^2", group=_ESTIMATION, minimum=0.0, exclusive_minimum=True,
       estimator=True),
    _P("estimate_rate", "float", 100.0, "base_state imu: largest rate of the estimate on ~/odom "
       "and /tf; 0 = not published (wbc_estimator: must be > 0)", unit="Hz", group=_ESTIMATION,
       scope=NODE, minimum=0.0, estimator=True),
    _P("odom_frame", "string", "odom", "base_state imu: frame id of the estimate's pose (the "
       "estimator's world frame)", group=_ESTIMATION, scope=NODE, estimator=True),
    _P("base_frame", "string", "", "base_state imu: child frame id of the estimate; empty = the "
       "URDF's root link", group=_ESTIMATION, scope=NODE, estimator=True),
    _P("publish_tf", "bool", True, "base_state imu: also publish odom_frame -> base_frame on /tf "
       "(needs the tf2_msgs package)", group=_ESTIMATION, scope=NODE, estimator=True),
    # ---- task-space control and walking
    _P("task_names", "string[]", None, "task-space control (docs/tasks.md): one name per task; "
       "goals on ~/tasks/<name>/goal; empty = the joint reference drives the inverse dynamics "
       "directly", group=_TASKS),
    _P("task_kinds", "string[]", None, "per task: frame | com | posture", group=_TASKS,
       length="one per task"),
    _P("task_links", "string[]", None, "per task: the frame task's link (\"\" for the others)",
       group=_TASKS, length="one per task, or empty"),
    _P("task_modes", "string[]", None, "per task: the frame task's rows pose | position | "
       "orientation (\"\" for the others)", group=_TASKS, length="one per task, or empty"),
    _P("task_points", "float[]", None, "per task: x y z of the frame task's point in the link "
       "frame; empty = the link origins", unit="m", group=_TASKS,
       length="3 per task, or empty"),
    _P("task_kp", "float[]", (100.0,), "each task's stiffness (the posture task uses kp)",
       unit="1/s^2", group=_TASKS, change=RUNTIME, minimum=0.0, length=_PER_TASK),
    _P("task_kd", "float[]", (20.0,), "each task's damping (the posture task uses kd)",
       unit="1/s", group=_TASKS, change=RUNTIME, minimum=0.0, length=_PER_TASK),
    _P("task_weights", "float[]", (1.0,), "each task's weight among the tasks of its priority",
       group=_TASKS, change=RUNTIME, minimum=0.0, exclusive_minimum=True, length=_PER_TASK),
    _P("task_priorities", "int[]", (0,), "each task's priority: 0 is solved first, a larger one "
       "only in the null space of the smaller", group=_TASKS, minimum=0, length=_PER_TASK),
    _P("task_active", "bool[]", (True,), "whether each task contributes (with a gait the walker "
       "switches the feet's own)", group=_TASKS, change=RUNTIME, length=_PER_TASK),
    _P("gait", "string", "", "walking from cmd_vel: \"\" (none) or trot (a floating base with "
       "four contact links and a contact method; docs/tasks.md)", group=_TASKS,
       choices=("", "trot")),
    _P("gait_period", "float", 0.0, "the trot's cycle; 0 = computed from the robot "
       "(2.6 sqrt(h / g))", unit="s", group=_TASKS, minimum=0.0),
    _P("gait_step_height", "float", 0.0, "the swing feet's lift; 0 = computed (a quarter of the "
       "CoM height)", unit="m", group=_TASKS, minimum=0.0),
    # ---- control loop
    _P("control_mode", "string", "event", "event: one tick per joint_states message (rate "
       "capped at 1.5 control_rate) | timer: ticks at control_rate", group=_LOOP, scope=NODE,
       choices=("event", "timer")),
    _P("control_rate", "float", 1000.0, "nominal control rate: the contact problem's time step "
       "1 / control_rate, the timer rate, the event-mode rate cap (wbc_estimator: its first "
       "step's time step)", unit="Hz", group=_LOOP, minimum=0.0, exclusive_minimum=True,
       estimator=True),
    _P("kp", "float[]", (0.0,), "joint position gains (PD feedback on the reference's "
       "positions)", unit="1/s^2", group=_LOOP, change=RUNTIME, minimum=0.0, length=PER_JOINT),
    _P("kd", "float[]", (0.0,), "joint velocity gains", unit="1/s", group=_LOOP,
       change=RUNTIME, minimum=0.0, length=PER_JOINT),
    _P("ki", "float[]", (0.0,), "joint integral gains (the reference's position error "
       "integrated; removes the static error a model error leaves, e.g. a payload or a mass "
       "estimate off by 10 %); 0 = off", unit="1/s^3", group=_LOOP, change=RUNTIME,
       minimum=0.0, length=PER_JOINT),
    _P("integral_limit", "float[]", (10.0,), "largest acceleration the integral term may "
       "command per joint (anti-windup: the integral is held there)", unit="rad/s^2",
       group=_LOOP, change=RUNTIME, minimum=0.0, length=PER_JOINT),
    _P("effort_limits", "float[]", (0.0,), "torque limits; 0 = the URDF <limit effort>; .inf = "
       "never clamped", unit="N m or N", group=_LOOP, change=RUNTIME, minimum=0.0,
       finite=False, length=PER_JOINT),
    # ---- safety
    _P("state_timeout", "float", 0.05, "largest age of the joint (and base) state before zero "
       "torque (wbc_estimator: older inputs give no step)", unit="s", group=_SAFETY,
       change=RUNTIME, minimum=0.0, exclusive_minimum=True, estimator=True),
    _P("reference_timeout", "float", 0.5, "largest age of the reference before the safe "
       "command", unit="s", group=_SAFETY, change=RUNTIME, minimum=0.0,
       exclusive_minimum=True),
    _P("safe_mode", "string", "damping", "command while the reference is stale: damping (qdd = "
       "-safe_damping qd with gravity and contact compensation) or zero (zero torque)",
       group=_SAFETY, change=RUNTIME, choices=SAFE_MODES),
    _P("safe_damping", "float[]", (10.0,), "damping gain D of the damping safe command "
       "qdd = -D qd", unit="1/s", group=_SAFETY, change=RUNTIME, minimum=0.0,
       length=PER_JOINT),
    _P("watchdog_rate", "float", 50.0, "rate of the staleness watchdog (the safe command when "
       "ticks stop)", unit="Hz", group=_SAFETY, scope=NODE, minimum=0.0,
       exclusive_minimum=True),
    # ---- outputs and process
    _P("diagnostics_rate", "float", 1.0, "rate of /diagnostics", unit="Hz", group=_OUTPUTS,
       scope=NODE, minimum=0.0, exclusive_minimum=True, estimator=True),
    _P("publish_contacts", "bool", True, "publish ~/contact_wrench/<link> and "
       "~/contact_markers", group=_OUTPUTS, scope=NODE),
    _P("contacts_rate", "float", 50.0, "largest rate of the contact wrenches and markers (and "
       "of ~/task_markers)", unit="Hz", group=_OUTPUTS, scope=NODE, minimum=0.0,
       exclusive_minimum=True),
    _P("world_frame", "string", "world", "frame id of the contact wrenches and markers",
       group=_OUTPUTS, scope=NODE),
    _P("marker_scale", "float", 0.002, "arrow length per newton in the contact markers",
       unit="m/N", group=_OUTPUTS, scope=NODE, minimum=0.0, exclusive_minimum=True),
    _P("autostart", "bool", True, "console script: configure and activate at start-up (false: "
       "left unconfigured for a lifecycle manager)", group=_OUTPUTS, change=STARTUP,
       scope=NODE),
    _P("executor", "string", "events", "console script: events (rclpy's experimental "
       "EventsExecutor: lower latency, fewer missed ticks; single_threaded where unavailable) | "
       "single_threaded", group=_OUTPUTS, scope=NODE),
    _P("realtime_priority", "int", 0, "console script: SCHED_FIFO priority 1-99 of every thread "
       "of the process, the DDS receive threads included; 0 = normal scheduling (needs "
       "CAP_SYS_NICE, else a warning)", group=_OUTPUTS, scope=NODE),
)

#: name -> :class:`ParameterSpec` (read-only), in :data:`SPECS` order.
PARAMETERS: Mapping[str, ParameterSpec] = MappingProxyType({s.name: s for s in SPECS})
#: Parameters that may change while running (applied between ticks by
#: :meth:`~wbc_dynamics.controller.WholeBodyController.set_parameters`).
RUNTIME_PARAMETERS: tuple[str, ...] = tuple(s.name for s in SPECS if s.change == RUNTIME)
#: Parameters fixed between configure and cleanup (changing them needs cleanup + configure).
STRUCTURAL_PARAMETERS: tuple[str, ...] = tuple(s.name for s in SPECS if s.change == CONFIGURE)
#: The fields of :class:`~wbc_dynamics.controller_config.ControllerConfig`.
CONTROLLER_PARAMETERS: tuple[str, ...] = tuple(s.name for s in SPECS if s.scope == CONTROLLER)
#: The ROS node's own parameters (not ControllerConfig fields).
NODE_PARAMETERS: tuple[str, ...] = tuple(s.name for s in SPECS if s.scope == NODE)
#: The parameters of ``wbc_estimator``.
ESTIMATOR_PARAMETERS: tuple[str, ...] = tuple(s.name for s in SPECS if s.estimator)


def _validate_schema() -> None:
    """Import-time consistency of :data:`SPECS` (a malformed entry is a bug of this module)."""
    if len(PARAMETERS) != len(SPECS):
        raise RuntimeError("parameter schema: duplicate names")
    scalar = {"bool": bool, "int": int, "float": float, "string": str}
    for s in SPECS:
        ok = (s.type in TYPES and s.change in (RUNTIME, CONFIGURE, STARTUP)
              and s.scope in (CONTROLLER, NODE))
        values = () if s.default is None else s.default if s.is_array else (s.default,)
        kind = scalar.get(s.type.rstrip("[]"))
        ok = ok and (s.default is None or not s.is_array or isinstance(s.default, tuple))
        ok = ok and all(type(v) is kind for v in values)
        ok = ok and all(c in s.choices for c in values if s.choices)
        ok = ok and all(s.accepts(float(v)) for v in values if s.numeric)
        if not ok:
            raise RuntimeError(f"parameter schema: entry {s.name!r} is malformed")


_validate_schema()


def check(name: str, value: Any) -> Any:
    """``value`` of parameter ``name`` checked against its schema (:meth:`ParameterSpec.check`)
    and converted. Raises ValueError naming the parameter."""
    return PARAMETERS[name].check(value)


def per_joint(name: str, value: Any, joints: Sequence[str]) -> np.ndarray:
    """A :data:`PER_JOINT` array parameter broadcast to one float64 value per joint of
    ``joints``, each checked against the parameter's bounds. Raises ValueError naming the
    parameter and the joint."""
    spec = PARAMETERS[name]
    n = len(joints)
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64)).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number or a list of numbers, got {value!r}") from None
    if arr.shape[0] == 1:
        arr = np.full(n, arr[0])
    elif arr.shape[0] != n:
        raise ValueError(
            f"{name}: expected 1 or {n} values (one per configured joint), got {arr.shape[0]}"
        )
    for i in range(n):
        v = float(arr[i])
        if math.isnan(v) or (spec.finite and not math.isfinite(v)):
            raise ValueError(f"{name}: value {v!r} for joint '{joints[i]}' is not finite")
        if not spec.accepts(v):
            bound = spec.constraint.removeprefix("finite and ")
            raise ValueError(f"{name}: value {v!r} for joint '{joints[i]}' must be {bound}")
    return arr


# --------------------------------------------------------------------------- the reference
_CHANGE_WORDS = {RUNTIME: "runtime", CONFIGURE: "configure", STARTUP: "start-up"}


def _cell(text: str) -> str:
    """``text`` for a markdown table cell (``|`` escaped, ``<name>`` not taken for HTML)."""
    return re.sub(r"<(?=[A-Za-z/])", "&lt;", text.replace("|", "\\|"))


def _default_text(spec: ParameterSpec) -> str:
    d = spec.default
    if d is None:
        return "unset"

    def one(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return f'"{v}"' if v == "" else v
        return repr(v)

    return "[" + ", ".join(one(v) for v in d) + "]" if spec.is_array else one(d)


def markdown() -> str:
    """The parameter reference (``docs/parameters.md``) generated from :data:`SPECS`."""
    lines = [
        "# Parameters",
        "",
        "<!-- Generated from wbc_dynamics/parameters.py by `python -m wbc_dynamics.parameters "
        "--markdown docs/parameters.md`; edit the schema, not this file. -->",
        "",
        "Every parameter of the `wbc_controller` node ([docs/node.md](node.md)). The "
        "`controller` ones are also the fields of `ControllerConfig` (the ROS-free "
        "`WholeBodyController`); those marked `estimator` are also parameters of "
        "`wbc_estimator`, with the same meaning and default. `config/<robot>.yaml` lists them "
        "all with a robot's values.",
        "",
        "- **set**: `runtime` -- may change while the controller runs (`ros2 param set`): "
        "validated in the on-set-parameters callback, all or nothing (the reason names the "
        "parameter and joint), and applied between ticks; a `method` switch only to a method "
        "compiled at configure. `configure` -- read at configure and fixed until cleanup (a "
        "change while configured is refused: deactivate, cleanup, set it, configure). "
        "`start-up` -- read by the node outside configure (when it starts; `autostart` also "
        "when a URDF arrives on the topic); a change is never refused.",
        "- **valid values**: the check of each value (of each element of an array), run at "
        "configure -- for a feature that is off, once it is turned on -- and on every runtime "
        "change; its error names the parameter. An array's length rule is checked against what "
        "it counts (the configured joints, the tasks, the declared points).",
        "- **default** `unset`: the parameter is not set (an empty list).",
        "",
    ]
    groups: dict[str, list[ParameterSpec]] = {}
    for s in SPECS:
        groups.setdefault(s.group, []).append(s)
    for group, specs in groups.items():
        lines += [f"## {group}", "",
                  "| parameter | type | default | unit | valid values | set | used by | "
                  "description |",
                  "|---|---|---|---|---|---|---|---|"]
        for s in specs:
            valid = "; ".join(x for x in (s.constraint, s.length) if x)
            used = s.scope + (", estimator" if s.estimator else "")
            lines.append(
                f"| `{s.name}` | {s.type} | `{_default_text(s)}` | {s.unit} | {_cell(valid)} | "
                f"{_CHANGE_WORDS[s.change]} | {used} | {_cell(s.description)} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m wbc_dynamics.parameters --markdown [FILE]``: the parameter reference on
    stdout or into FILE."""
    parser = argparse.ArgumentParser(prog="python -m wbc_dynamics.parameters",
                                     description="The parameter reference from the schema.")
    parser.add_argument("--markdown", nargs="?", const="-", metavar="FILE", required=True,
                        help="write the markdown parameter reference to FILE (default stdout)")
    args = parser.parse_args(argv)
    text = markdown()
    if args.markdown == "-":
        sys.stdout.write(text)
    else:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
