"""ROS 2 lifecycle node ``wbc_controller``: a thin adapter over :class:`WholeBodyController`.

One module for one class: the node's callbacks share its subscriptions, message parsers,
publishers and the controller they feed; the message conversions
(:mod:`wbc_dynamics.ros_conversions`) and the parameter schema (:mod:`wbc_dynamics.parameters`)
are modules of their own.

Interface (names relative, so namespaces and remapping apply; see ``docs/node.md``):

Subscriptions
    ``joint_states`` (sensor_msgs/JointState) -- by name, any order, extra joints ignored.
    ``~/reference`` (trajectory_msgs/JointTrajectory) -- one point: accelerations (required),
    positions / velocities (optional, PD feedback).
    ``odom`` (nav_msgs/Odometry) -- floating base with ``base_state: odom``: base pose, twist in
    the child frame.
    ``imu`` (sensor_msgs/Imu) -- ``base_state: imu`` instead of ``odom``: angular rate, specific
    force and (``imu_orientation``) orientation of the base, REP 145; the controller estimates
    its base from it and the joint states (docs/node.md, "Running without odometry").
    ``~/object_odom`` (nav_msgs/Odometry) -- with ``object_urdf`` only: the object's pose and
    twist (child frame), e.g. from a motion-capture or object tracker.
    ``~/contact_schedule`` (std_msgs/UInt8MultiArray) -- the gait's stance mask per contact link.
    ``~/contact_lift_off`` (std_msgs/Float64MultiArray) -- per contact link, the time [s] until
    the gait lifts that stance link off (``inf``: none announced), for the unload ramp.
Publications
    ``effort_controller/commands`` (std_msgs/Float64MultiArray) -- ``data[i]`` = torque [N m]
    of the i-th configured joint, for ros2_control's ForwardCommandController (effort
    interface); with a hybrid drive command the feed-forward torque ``tau_ff``.
    ``position_controller/commands``, ``velocity_controller/commands``,
    ``stiffness_controller/commands``, ``damping_controller/commands`` (std_msgs/
    Float64MultiArray) -- only when a ``drive_stiffness`` or ``drive_damping`` gain is > 0 (the
    hybrid drive command of drives running their own impedance loop): per joint, in the same
    order and QoS as the effort command, the position [rad] and velocity [rad/s] set-points and
    the stiffness [N m/rad] and damping [N m s/rad] of this tick; a drive applies ``tau_ff +
    stiffness (q_set - q) + damping (qd_set - qd)``. Published every tick before the effort
    command, gains first. The gains are zero while the state is stale, in the zero safe mode
    and in the stop command; a safe tick's set-points hold the measured position at zero
    velocity.
    ``~/joint_commands`` (sensor_msgs/JointState) -- the same torques as ``effort`` (with the
    position / velocity they were computed for -- with a hybrid drive command the position /
    velocity set-points instead -- stamped with that joint state's stamp); none for a
    zero-torque stale-state tick (computed from no complete state).
    ``~/contact_wrench/<link>`` (geometry_msgs/WrenchStamped) -- predicted contact force per
    contact link (contact methods), world axes, applied at the contact point.
    ``~/contact_markers`` (visualization_msgs/MarkerArray) -- force arrows for RViz.
    ``~/odom`` (nav_msgs/Odometry) and ``/tf`` (tf2_msgs/TFMessage, odom_frame -> base_frame)
    -- ``base_state: imu``: the base estimate at ``estimate_rate``
    (:mod:`wbc_dynamics.estimate_output`: frames and covariances).
    ``/diagnostics`` (diagnostic_msgs/DiagnosticArray).
Services
    ``~/reset_solver`` (std_srvs/Trigger) -- forget the contact solver's warm start.
    Lifecycle services ``~/change_state``, ``~/get_state``, ... (rclpy.lifecycle).

Run ``ros2 run wbc_dynamics wbc_controller --ros-args --params-file config/arm.yaml``: the console
entry point configures and activates the node itself (parameter ``autostart``, default true).
"""

from __future__ import annotations

import gc
import inspect
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import rclpy
import rclpy.publisher
import rclpy.service
import rclpy.signals
import rclpy.subscription
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PointStamped, PoseStamped, Twist, WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String, UInt8MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

from .controller import (
    MODE_CONTROL,
    MODE_STALE_REFERENCE,
    MODE_STALE_STATE,
    ControllerConfig,
    WholeBodyController,
)
from .estimate_output import EstimateOutput
from .parameters import (
    CONTROLLER_PARAMETERS,
    PARAMETERS,
    RUNTIME_PARAMETERS,
    STRUCTURAL_PARAMETERS,
    check,
)
from .ros_conversions import (
    ImuParser,
    InputError,
    JointStateParser,
    OdometryParser,
    ReferenceParser,
    contact_lift_off_in,
    contact_schedule_swing_links,
    imu_cdr_numbers,
    imu_sample_time,
    odometry_cdr_numbers,
    preallocated_float64,
)
from .ros_executor import make_executor
from .tick_trace import TickTrace

__all__ = ["HYBRID_INTERFACES", "PARAMETERS", "WbcControllerNode", "declare_parameters", "main"]

_T = Parameter.Type

#: The hybrid drive command's ros2_control command interfaces besides effort, in publication
#: order (gains first): each on ``<interface>_controller/commands``.
HYBRID_INTERFACES: tuple[str, ...] = ("stiffness", "damping", "position", "velocity")

#: Parameter types of the schema (:mod:`wbc_dynamics.parameters`) -> rclpy's.
_ROS_TYPES: dict[str, Parameter.Type] = {
    "bool": _T.BOOL, "int": _T.INTEGER, "float": _T.DOUBLE, "string": _T.STRING,
    "bool[]": _T.BOOL_ARRAY, "int[]": _T.INTEGER_ARRAY, "float[]": _T.DOUBLE_ARRAY,
    "string[]": _T.STRING_ARRAY,
}


def declare_parameters(node: Any, names: Sequence[str]) -> None:
    """Declare the schema's parameters ``names`` on ``node``: type, default (an unset array is
    declared by type), and a descriptor with the description, unit, ``[runtime]`` tag and the
    per-value check (``additional_constraints``, informational: the controller and the node
    check it at configure and on a runtime change). Not ``read_only``: a parameter fixed while
    configured may still change between cleanup and configure."""
    for name in names:
        spec = PARAMETERS[name]
        d = ParameterDescriptor(
            description=spec.summary, read_only=False,
            additional_constraints="; ".join(x for x in (spec.constraint, spec.length) if x))
        default = spec.default_value()
        if default is None:
            node.declare_parameter(name, _ROS_TYPES[spec.type], d)
        else:
            node.declare_parameter(name, default, d)


def subscribe_robot_description(node: Any, topic: str, callback: Callable[[Any], None]) -> Any:
    """Subscribe ``node`` to the URDF (std_msgs/String) on ``topic`` with the latched QoS
    robot_state_publisher publishes it with (reliable, transient local, depth 1) and log that
    it waits for it: the model source of a node whose model parameters are unset."""
    sub = node.create_subscription(
        String, topic, callback,
        QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL))
    node.get_logger().info(f"no model parameter set: waiting for the URDF on {topic}")
    return sub


def serve_pending(sub: Any, limit: int = 16) -> None:
    """Serve the messages already waiting on the subscription ``sub`` now, through its
    callback (the guarded one the executor would call), at most ``limit`` (a keep-last queue:
    one message, a few at most); the executor then finds the queue empty. Nothing for a
    destroyed subscription."""
    for _ in range(limit):
        try:
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
        except InvalidHandle:
            return
        if taken is None:
            return
        sub.callback(taken[0])


def _sanitize(name: str) -> str:
    return "".join(c if (c.isalnum() or c == "_") else "_" for c in name)


class _ImuInput:
    """The IMU input of the controller node (``base_state: imu``) and of the estimator node
    (:mod:`wbc_dynamics.estimator_node`). The node holds the state: ``_imu_parser``
    (:class:`ImuParser`), ``_imu_t`` (-inf), ``_imu_repeats`` (0), ``_imu_lag`` (None), and
    provides ``_now()`` and ``_reject(what, exc)``."""

    def _take_imu(self, msg: Imu | bytes, sink: Any) -> bool:
        """A validated IMU sample to ``sink.set_imu`` at its header stamp
        (:func:`imu_sample_time` against ``sink.state_timeout``: the node's clock at arrival for
        a zero stamp; a repeated stamp is skipped and counted as ``imu_repeated_samples``), or a
        counted rejection. True if the sample was taken.

        ``msg`` is the serialized message (the subscription is raw): little-endian classic CDR
        is read in place (imu_cdr_numbers), another encapsulation deserialized by the rmw
        first, a buffer it cannot deserialize rejected as ``malformed``."""
        parser = self._imu_parser
        now = self._now()
        try:
            parsed = imu_cdr_numbers(msg) if isinstance(msg, bytes) else None
            if parsed is not None:
                stamp, numbers = parsed
                w, a, quat = parser.parse_cdr_numbers(numbers)
            else:
                if isinstance(msg, bytes):
                    msg = _deserialized(msg, Imu, "imu")
                stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
                w, a, quat = parser.parse(msg)
            t = imu_sample_time(stamp, now, self._imu_t, sink.state_timeout)
            if t is None:
                self._imu_repeats += 1
                return False
            sink.set_imu(w, a, quat, t)
        except ValueError as exc:
            self._reject("imu", exc)
            return False
        self._imu_t = t
        lag = now - t
        prev = self._imu_lag
        self._imu_lag = (lag, lag if prev is None else max(prev[1], lag))
        return True


class WbcControllerNode(_ImuInput, LifecycleNode):
    """Lifecycle node running a :class:`WholeBodyController` (see module docstring)."""

    def __init__(self, node_name: str = "wbc_controller", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        # WBC_NODE_TRACE=<file.npy>: time stamps of each tick, written at destroy (tick_trace)
        self._trace = TickTrace.from_env()
        declare_parameters(self, tuple(PARAMETERS))
        self.controller: WholeBodyController | None = None
        self._active = False
        self._entities: list[Any] = []
        # odom (or imu), object odom: served before a tick (_take_pending_odometry)
        self._odometry_subs: list[Any] = []
        self._estimate_out: Any = None  # base_state imu: ~/odom and /tf (EstimateOutput)
        self._imu_parser: ImuParser | None = None  # base_state imu (configure)
        self._hybrid_out: list[Any] = []  # hybrid drive command publishers (see configure)
        self._timers: list[Any] = []
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # rejected inputs: topic -> reason -> count (InputError.reason; "invalid" for a
        # ValueError of the controller); every topic listed in /diagnostics even at 0
        self._rejected: dict[str, dict[str, int]] = {
            t: {} for t in ("joint_states", "reference", "odom", "imu", "object_odom",
                            "contact_schedule", "contact_lift_off", "task_goals", "cmd_vel",
                            "parameters", "robot_description")
        }
        self._last_reject = ""
        # exceptions no input should cause (bugs): counted, logged, never fatal (see _guard)
        self._internal_errors = 0
        self._last_internal_error = ""
        self._odom_parser = OdometryParser()
        self._object_odom_parser = OdometryParser()
        self._reject_loggers: dict[str, Any] = {}
        # model from the robot_description topic when no model parameter is set (ROS bring-up:
        # robot_state_publisher latches the URDF); kept for every later configure
        self._topic_description: str | None = None
        self._last_configure_error = ""
        self._description_sub = None
        if self._model_from_topic():
            topic = str(self._param("robot_description_topic"))
            self._description_sub = subscribe_robot_description(
                self, topic, self._guard(self._on_robot_description))

    # ------------------------------------------------------------------ helpers
    def _param(self, name: str) -> Any:
        p = self.get_parameter_or(name, Parameter(name, value=None))
        v = p.value
        if v is None:
            return [] if PARAMETERS[name].is_array else None
        if isinstance(v, tuple | list):
            return list(v)
        return v

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # the rate cap's second clock (see on_configure); an attribute, so tests can replace it
    _steady_clock = staticmethod(time.monotonic)

    def _model_from_topic(self) -> bool:
        """No robot_description / urdf_path / robot parameter and a robot_description_topic:
        the model comes from the topic."""
        return bool(str(self._param("robot_description_topic") or "").strip()) and not any(
            str(self._param(k) or "").strip() for k in ("robot_description", "urdf_path", "robot"))

    def _config(self) -> ControllerConfig:
        values = {k: self._param(k) for k in CONTROLLER_PARAMETERS}
        if self._model_from_topic():
            if self._topic_description is None:
                raise ValueError(
                    "robot_description: no model yet: robot_description, urdf_path and robot are "
                    f"empty and no URDF arrived on {self._param('robot_description_topic')}")
            values["robot_description"] = self._topic_description
        return ControllerConfig(**values)

    def _on_robot_description(self, msg: String) -> None:
        """URDF on the robot_description topic: kept for configure; with ``autostart`` an
        unconfigured node configures and activates itself with it. A URDF the controller cannot
        use is a counted rejection (``rejected_robot_description``) naming the element; the node
        stays unconfigured and waits for the next one."""
        text = str(msg.data)
        if not text.lstrip().startswith("<"):
            self._reject("robot_description", InputError(
                "bad_value", "robot_description: expected URDF XML text (starting with '<')"))
            return
        if self.controller is not None:
            self._topic_description = text
            self.get_logger().info("new robot_description kept for the next configure (the "
                                   "running controller keeps its model until cleanup)")
            return
        previous, self._topic_description = self._topic_description, text
        if not self.get_parameter("autostart").value:
            return
        try:
            if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                raise ValueError(self._last_configure_error or "configure failed")
        except ValueError as exc:
            self._topic_description = previous
            self._reject("robot_description", exc)
            return
        self.trigger_activate()

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the model, validate every parameter, build and warm the controller."""
        try:
            cm = check("control_mode", self._param("control_mode"))
            for nm in ("watchdog_rate", "diagnostics_rate", "marker_scale", "contacts_rate",
                       "estimate_rate"):
                check(nm, self._param(nm))
            ctl = WholeBodyController(self._config(),
                                      progress=lambda line: self.get_logger().info(line))
        except Exception as exc:  # noqa: BLE001 - any failure = a failed transition, logged
            self._last_configure_error = str(exc)
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.controller = ctl
        for note in [*getattr(ctl.model, "load_warnings", []), *ctl.load_warnings]:
            self.get_logger().warning(note)  # inconsistent inertias, joints locked for the user
        self._control_mode = cm
        # event-mode rate cap: token bucket, average <= 1.5 x control_rate, bursts of up to 5
        # ticks pass (publisher jitter), a flood of joint_states cannot overload the node.
        # The bucket refills with the time passed on the node's clock or on the steady clock,
        # whichever passed more: a lockstep simulator running faster than real time is paced in
        # its own (simulated) time, and a simulator holding its clock still -- paused, waiting
        # for the first command -- cannot starve the bucket for good (its initial state,
        # re-sent every 0.1 s, was rate-limited forever once five answers had gone out before
        # the simulator's command subscription matched: the simulator waited for a command,
        # the node never ticked again).
        self._cap_rate = 1.5 * ctl.control_rate
        self._cap_burst = 5.0
        self._tokens = self._cap_burst
        self._t_tokens = -math.inf
        self._t_tokens_steady = -math.inf
        self._state_stamp = None
        self._rate_limited = 0
        #: how far behind the node's clock a reference's header stamp was when it arrived [s]
        #: (last, max; None: no stamped reference yet): a planner lagging the clock shows here,
        #: while the reference's age (time since it arrived) stays small
        self._ref_lag: tuple[float, float] | None = None
        #: the contact state filter's (time [s], decisions changed) at the last diagnostics
        self._contact_state_prev: tuple[float, int] | None = None
        self._last_contacts = -math.inf
        self._contacts_period = 1.0 / float(self._param("contacts_rate"))
        self._last_tick = -math.inf
        n = ctl.n
        model_index = [list(ctl.model.joint_names).index(j) for j in ctl.joint_names]
        limits = (ctl.model.position_lower[model_index], ctl.model.position_upper[model_index])
        self._js_parser = JointStateParser(ctl.joint_names, *limits)
        self._ref_parser = ReferenceParser(ctl.joint_names, *limits)

        # preallocated outgoing messages (published many times, filled through numpy views)
        self._cmd_msg = Float64MultiArray()
        self._cmd_msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self._cmd_view = preallocated_float64(self._cmd_msg, "data", n)
        self._js_msg = JointState()
        self._js_msg.name = list(ctl.joint_names)
        self._js_pos = preallocated_float64(self._js_msg, "position", n)
        self._js_vel = preallocated_float64(self._js_msg, "velocity", n)
        self._js_eff = preallocated_float64(self._js_msg, "effort", n)
        cfg = ctl.config
        hybrid = bool(np.any(np.asarray(cfg.drive_stiffness, dtype=float) > 0.0)
                      or np.any(np.asarray(cfg.drive_damping, dtype=float) > 0.0))

        state_qos = QoSProfile(
            depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT
        )
        cmd_qos = QoSProfile(
            depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE
        )
        self._pub_cmd = self.create_publisher(
            Float64MultiArray, "effort_controller/commands", cmd_qos
        )
        # depth 10: every tick's record reaches loggers / benchmarks even if one is briefly late
        self._pub_js = self.create_publisher(JointState, "~/joint_commands", 10)
        self._pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._entities += [self._pub_cmd, self._pub_js, self._pub_diag]
        # the hybrid drive command (a drive gain > 0): per interface its publisher, message and
        # data view, gains first (a lockstep simulator reads them before the stamped record)
        self._hybrid_out = []
        if hybrid:
            for interface in HYBRID_INTERFACES:
                msg = Float64MultiArray()
                msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
                view = preallocated_float64(msg, "data", n)
                pub = self.create_publisher(
                    Float64MultiArray, f"{interface}_controller/commands", cmd_qos)
                self._hybrid_out.append((pub, msg, view))
                self._entities.append(pub)
        self._publish_contacts = bool(self._param("publish_contacts"))
        self._world_frame = str(self._param("world_frame"))
        self._marker_scale = float(self._param("marker_scale"))
        self._pub_wrench: dict[str, Any] = {}
        self._pub_markers = None
        if self._publish_contacts and ctl.contact_links:
            for ln in ctl.contact_links:
                pub = self.create_publisher(WrenchStamped, f"~/contact_wrench/{_sanitize(ln)}", 10)
                self._pub_wrench[ln] = pub
                self._entities.append(pub)
            self._pub_markers = self.create_publisher(MarkerArray, "~/contact_markers", 10)
            self._entities.append(self._pub_markers)
            self._wrench_msgs, self._marker_msg = self._contact_messages()
        # every callback runs inside _guard: an exception no input should cause is counted and
        # logged, and cannot reach the executor (which would end the process)
        g = self._guard
        # joint states arrive serialized (raw), read in place (JointStateParser.parse_cdr)
        self._entities.append(self.create_subscription(
            JointState, "joint_states", g(self._on_joint_state), state_qos, raw=True))
        self._entities.append(self.create_subscription(
            JointTrajectory, "~/reference", g(self._on_reference), cmd_qos))
        # odometry arrives serialized (raw): its message object (two 36-entry covariance
        # arrays, nine nested messages) cost 38 us to build at every tick, the fields the
        # controller reads are 13 doubles at known offsets (_take_odometry); the IMU likewise
        # (imu_cdr_numbers). base_state imu: the IMU takes odom's place (no odom subscription)
        self._imu_parser = None
        self._imu_t = -math.inf  # [s] time of the last accepted IMU sample (imu_sample_time)
        self._imu_repeats = 0  # samples repeated with the same stamp (a paused simulator)
        self._imu_lag: tuple[float, float] | None = None  # (last, max) [s] arrival - stamp
        self._imu_cov = np.zeros((3, 3))  # the last accepted sample's orientation covariance
        self._imu_cov_ok = False
        self._estimate_out = None
        self._safe_damping = cfg.safe_mode == "damping"  # (kept up to date: parameters)
        if ctl.floating_base and cfg.base_state == "imu":
            self._imu_parser = ImuParser(bool(cfg.imu_orientation))
            self._odometry_subs.append(self.create_subscription(
                Imu, "imu", g(self._on_imu), state_qos, raw=True))
            rate = float(self._param("estimate_rate"))
            if rate > 0.0:
                self._estimate_out = EstimateOutput(
                    self, str(self._param("odom_frame")),
                    str(self._param("base_frame")) or ctl.model.root_link, rate,
                    bool(self._param("publish_tf")), float(cfg.imu_gyro_noise),
                    float(cfg.sensing_base_orientation_noise))
                self._entities += self._estimate_out.entities
                if self._param("publish_tf") and self._estimate_out.pub_tf is None:
                    self.get_logger().warning(
                        f"publish_tf: no /tf, {self._estimate_out.tf_state}; the estimate is on "
                        "~/odom")
        elif ctl.floating_base:
            self._odometry_subs.append(self.create_subscription(
                Odometry, "odom", g(self._on_odom), state_qos, raw=True))
        if ctl.has_object:
            self._odometry_subs.append(self.create_subscription(
                Odometry, "~/object_odom", g(self._on_object_odom), state_qos, raw=True))
        self._entities += self._odometry_subs
        if ctl.contact_links:
            # the latest schedule and announced lift-offs, combined at each message of either
            # (_apply_contact_schedule)
            self._schedule_swing: list[str] = []
            self._lift_off: dict[str, float] = {}
            self._lift_off_t = -math.inf  # [s] node clock at the lift-off message's arrival
            self._entities.append(self.create_subscription(
                UInt8MultiArray, "~/contact_schedule", g(self._on_contact_schedule), cmd_qos))
            self._entities.append(self.create_subscription(
                Float64MultiArray, "~/contact_lift_off", g(self._on_contact_lift_off), cmd_qos))
        self._pub_task_markers = None
        self._last_task_markers = -math.inf
        if ctl.tasks is not None:  # goals and positions in RViz, at contacts_rate
            self._task_marker_tasks = [i for i, sp in enumerate(ctl.tasks.specs)
                                       if sp.kind != "posture"]
            self._pub_task_markers = self.create_publisher(MarkerArray, "~/task_markers", 10)
            self._entities.append(self._pub_task_markers)
            self._task_marker_msg = self._task_markers()
        if ctl.tasks is not None:  # a goal topic per frame / com task (docs/tasks.md)
            for spec in ctl.tasks.specs:
                if spec.kind == "posture":
                    continue
                msg_type = PoseStamped if spec.kind == "frame" else PointStamped
                self._entities.append(self.create_subscription(
                    msg_type, f"~/tasks/{_sanitize(spec.name)}/goal",
                    g(self._task_goal_callback(spec)), cmd_qos))
                self._entities.append(self.create_subscription(
                    MultiDOFJointTrajectory, f"~/tasks/{_sanitize(spec.name)}/trajectory",
                    g(self._task_trajectory_callback(spec)), cmd_qos))
        self._pub_gait = None
        if ctl.walker is not None:  # walking from a velocity command
            self._entities.append(self.create_subscription(
                Twist, "cmd_vel", g(self._on_cmd_vel), cmd_qos))
            # the gait's contact schedule, when it changes (latched: a late subscriber gets
            # the current one), in ~/contact_schedule's format
            self._pub_gait = self.create_publisher(
                UInt8MultiArray, "~/gait_schedule",
                QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                           reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL))
            self._entities.append(self._pub_gait)
            links = list(ctl.contact_links)
            self._gait_rows = np.array([links.index(f) for f in ctl.walker.feet], dtype=np.int64)
            self._gait_msg = UInt8MultiArray(data=[1] * len(links))
            self._gait_sent = -1  # publish once at the first tick
        self._entities.append(self.create_service(
            Trigger, "~/reset_solver", g(self._on_reset_solver, service=True)))
        # everything built and warmed: move it out of the garbage collector's generations so
        # collections during control stay short. (Before the timers exist: the full collection
        # takes tens of ms, which a control timer created before it would owe as a burst.)
        gc.collect()
        gc.freeze()
        self._timers.append(
            self.create_timer(1.0 / self._param("watchdog_rate"), g(self._on_watchdog))
        )
        self._timers.append(
            self.create_timer(1.0 / self._param("diagnostics_rate"), g(self._publish_diagnostics))
        )
        if cm == "timer":
            self._timers.append(self.create_timer(1.0 / ctl.control_rate, g(self._on_timer)))
        self.get_logger().info(
            f"configured: {ctl.model_source}, {n} joints, method {ctl.method}, "
            f"{'floating' if ctl.floating_base else 'fixed'} base, {cm} mode at "
            f"{ctl.control_rate:g} Hz"
        )
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start control: commands are published from the next tick on."""
        self._active = True
        self.get_logger().info("active: publishing effort commands")
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Publish the final zero command (held by ros2_control), then stop publishing."""
        self._publish_stop_command()
        self._active = False
        self.get_logger().info("inactive: sent zero effort command, stopped publishing")
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release controller, publishers, subscriptions, services and timers."""
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Send the zero command if active, then release everything."""
        if self._active:
            self._publish_stop_command()
        self._active = False
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """As :meth:`on_shutdown`: the zero command if active, then release everything."""
        return self.on_shutdown(state)

    def _release(self) -> None:
        for t in self._timers:
            self.destroy_timer(t)
        for e in self._entities:
            if isinstance(e, rclpy.publisher.Publisher):
                self.destroy_publisher(e)
            elif isinstance(e, rclpy.subscription.Subscription):
                self.destroy_subscription(e)
            elif isinstance(e, rclpy.service.Service):
                self.destroy_service(e)
        self._timers = []
        self._entities = []
        self._hybrid_out = []
        self._odometry_subs = []
        self._estimate_out = None
        self._imu_parser = None
        self._pub_wrench = {}
        self._pub_markers = None
        self.controller = None
        # configure froze everything it built (gc.freeze): hand it back to the collector, or the
        # released controller's reference cycles would stay in memory for good
        gc.unfreeze()

    def destroy_node(self) -> None:
        """Destroy the node, then collect what configure froze (``gc.freeze``).

        Frozen objects are never collected, not even at interpreter exit: the node's reference
        cycles would keep its rclpy context, and so the context's DDS participant, alive -- past
        the exit, where Fast DDS then leaves the participant's shared-memory segments and ports
        in /dev/shm (zombies that later participants of the domain reuse), or for good in a
        process that goes on (a test process creating nodes in turn held one live participant
        per node). The collection runs here, once, rather than as a pause at some later tick.
        """
        super().destroy_node()
        if self._trace is not None:
            self._trace.save()
        gc.unfreeze()
        gc.collect()

    def _publish_stop_command(self, wait_acked: float = 0.0) -> None:
        """Zero effort on every joint: the state-independent command ros2_control may hold.

        With a hybrid drive command also zero stiffness and damping (the set-points: the last
        measured position at zero velocity), so no drive keeps an impedance loop running.
        ``wait_acked`` [s]: wait up to that long for the reliable subscribers to acknowledge it
        (used before the process exits, so the command is not lost with the participant).
        """
        ctl = self.controller
        if ctl is None:
            return
        if self._hybrid_out:
            self._publish_hybrid(None, None, ctl._qj, None)
        self._cmd_view[:] = 0.0
        self._pub_cmd.publish(self._cmd_msg)
        if self._hybrid_out:
            self._js_pos[:] = ctl._qj
            self._js_vel[:] = 0.0
        self._js_eff[:] = 0.0
        self._js_msg.header.stamp = self.get_clock().now().to_msg()
        self._pub_js.publish(self._js_msg)
        if wait_acked > 0.0:
            from rclpy.duration import Duration

            for pub in (*(h[0] for h in self._hybrid_out), self._pub_cmd):
                pub.wait_for_all_acked(Duration(seconds=wait_acked))

    def _publish_hybrid(self, *values: np.ndarray | None) -> None:
        """The hybrid drive command's interfaces: ``values`` in :data:`HYBRID_INTERFACES` order
        (stiffness [N m/rad], damping [N m s/rad], position [rad], velocity [rad/s]; None =
        zeros), each into its preallocated message; published to subscribers only (a
        message costs ~0.1 ms, and a lockstep simulator subscribes to the gains alone)."""
        for (pub, msg, view), x in zip(self._hybrid_out, values, strict=True):
            if x is None:
                view[:] = 0.0
            else:
                view[:] = x
            if pub.get_subscription_count():
                pub.publish(msg)

    def _guard(self, callback: Any, service: bool = False) -> Any:
        """``callback`` wrapped so that no exception reaches the executor.

        Inputs are validated before use (their rejections are counted per reason, see
        :meth:`_reject`); an exception here is a bug: counted as ``internal_errors`` in
        /diagnostics, logged (throttled) with its type and message, and -- when it happened in a
        control callback of an active node -- answered with the zero command (the state-
        independent safe command). A service callback answers ``success = False``.
        The wrapper has the callback's exact positional signature (rclpy's executors decide
        from it whether a timer callback receives a TimerInfo).
        """
        name = getattr(callback, "__name__", "callback")

        def run(*args: Any) -> Any:
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001 - by design: nothing reaches the executor
                self._internal_errors += 1
                self._last_internal_error = f"{name}: {type(exc).__name__}: {exc}"
                self.get_logger().error(
                    f"internal error in {name} (counted, node keeps running): "
                    f"{type(exc).__name__}: {exc}",
                    throttle_duration_sec=1.0,
                )
                try:
                    if self._active and name != "_publish_diagnostics":
                        self._publish_stop_command()
                except Exception:  # noqa: BLE001, S110 - already failing; keep running
                    pass
                if service:
                    response = args[1]
                    response.success = False
                    response.message = f"internal error: {type(exc).__name__}: {exc}"
                    return response
                return None

        nargs = len(inspect.signature(callback).parameters)
        if nargs == 0:
            return lambda: run()
        if nargs == 1:
            return lambda msg: run(msg)
        return lambda request, response: run(request, response)

    # ------------------------------------------------------------------ parameters
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Validate runtime changes; apply them between ticks (the executor is single-threaded).

        A refused set is counted in /diagnostics (``rejected_parameters``) and logged; no
        exception escapes (rclpy would turn it into a failed service call with a traceback)."""
        try:
            result = self._validate_and_apply_parameters(params)
        except Exception as exc:  # noqa: BLE001 - any failure = a refused parameter set
            result = SetParametersResult(
                successful=False, reason=f"invalid parameter set: {type(exc).__name__}: {exc}"
            )
        if not result.successful:
            self._reject("parameters", InputError("refused", result.reason))
        return result

    def _validate_and_apply_parameters(self, params: list[Parameter]) -> SetParametersResult:
        ctl = self.controller
        updates: dict[str, Any] = {}
        for p in params:
            if p.name not in PARAMETERS:
                continue
            if ctl is None:
                continue  # validated in full at configure
            if p.name in STRUCTURAL_PARAMETERS:
                return SetParametersResult(
                    successful=False,
                    reason=f"{p.name}: fixed while configured (deactivate, cleanup, set it, "
                    "configure)",
                )
            if p.name in RUNTIME_PARAMETERS:
                v = p.value
                updates[p.name] = list(v) if isinstance(v, tuple | list) else v
        method = updates.get("method")
        if ctl is not None and method is not None and method not in ctl.warmed_methods:
            # compiling a method takes seconds: every tick would stall meanwhile
            return SetParametersResult(
                successful=False,
                reason=f"method: {method!r} was not compiled at configure (warmed: "
                f"{list(ctl.warmed_methods)}); list it in warm_methods",
            )
        if ctl is not None and updates:
            try:
                ctl.set_parameters(updates)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            if "safe_mode" in updates:
                self._safe_damping = updates["safe_mode"] == "damping"
            self.get_logger().info(f"parameters updated: {sorted(updates)}")
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ inputs
    def _reject(self, what: str, exc: Exception) -> None:
        """Count a rejected ``what`` input under its reason and log it (throttled per topic)."""
        reason = exc.reason if isinstance(exc, InputError) else "invalid"
        per_reason = self._rejected.setdefault(what, {})  # e.g. a topic added later
        per_reason[reason] = per_reason.get(reason, 0) + 1
        self._last_reject = f"{what}: {exc}"
        # one throttle per topic: a flood on one topic does not hide the others' messages
        self._reject_loggers.setdefault(what, self.get_logger().get_child(what)).error(
            f"rejected {what} message ({reason}): {exc}", throttle_duration_sec=1.0
        )

    def _on_joint_state(self, msg: JointState | bytes) -> None:
        if self._trace is not None:
            self._trace.take()
        ctl = self.controller
        if ctl is None:
            return
        now = self._now()
        try:
            pos, vel, stamp = self._parse_joint_state(msg)
            ctl.set_joint_state(pos, vel, now)
        except ValueError as exc:
            self._reject("joint_states", exc)
            return
        self._state_stamp = stamp
        if self._active and self._control_mode == "event":
            self._take_pending_odometry()
            if not ctl.state_fresh(now):
                # the zero-torque stale-state tick (base / object state missing) computes
                # nothing, so it takes no token of the cap: a simulator starting paused holds
                # its clock still (no refill) and re-sends its initial state until a command
                # computed from it arrives (such a tick publishes no record, see _tick): five
                # token-taking ticks would starve the bucket for good
                self._tick(now)
                return
            steady = self._steady_clock()
            passed = max(now - self._t_tokens, steady - self._t_tokens_steady)
            self._tokens = min(self._cap_burst, self._tokens + passed * self._cap_rate)
            self._t_tokens, self._t_tokens_steady = now, steady
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                self._tick(now)
            else:
                self._rate_limited += 1

    def _parse_joint_state(
        self, msg: JointState | bytes
    ) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
        """Validated (position, velocity) in the configured order and the header stamp (sec,
        nanosec) of a serialized message (the subscription is raw: little-endian CDR is read
        in place, another encapsulation deserialized by the rmw) or a message object."""
        parser = self._js_parser
        if isinstance(msg, bytes):
            parsed = parser.parse_cdr(msg)
            if parsed is not None:
                return parsed[0], parsed[1], parser.stamp
            msg = _deserialized(msg, JointState, "joint_states")
        pos, vel = parser.parse(msg)
        return pos, vel, (msg.header.stamp.sec, msg.header.stamp.nanosec)

    def _on_reference(self, msg: JointTrajectory) -> None:
        ctl = self.controller
        if ctl is None:
            return
        try:
            acc, pos, vel = self._ref_parser.parse(msg)
            now = self._now()
            ctl.set_reference(acc, now, position=pos, velocity=vel)
        except ValueError as exc:
            self._reject("reference", exc)
            return
        stamp = msg.header.stamp
        if stamp.sec or stamp.nanosec:  # (zero: an unstamped reference, "now")
            lag = now - (stamp.sec + 1e-9 * stamp.nanosec)
            prev = self._ref_lag
            self._ref_lag = (lag, lag if prev is None else max(prev[1], lag))

    def _on_contact_schedule(self, msg: UInt8MultiArray) -> None:
        """Stance mask from the gait planner: data[i] = 1 (stance) or 0 (swing) for the i-th
        configured contact link; swing links are not contact candidates until the next mask.
        The latest announced lift-offs (``~/contact_lift_off``) still apply."""
        ctl = self.controller
        if ctl is None:
            return
        try:
            swing = contact_schedule_swing_links(msg.data, ctl.contact_links)
            self._apply_contact_schedule(ctl, swing, self._lift_off, self._lift_off_t,
                                         self._now())
        except ValueError as exc:
            self._reject("contact_schedule", exc)
            return
        self._schedule_swing = swing

    def _on_contact_lift_off(self, msg: Float64MultiArray) -> None:
        """Announced releases from the gait planner: data[i] = the time [s] from now until the
        i-th configured contact link, in stance, lifts off (``inf``: none announced); with the
        contact state filter and ``contact_unload_ramp`` > 0 the link is unloaded over the ramp
        before it. Applied with the latest stance mask; each message replaces the last."""
        ctl = self.controller
        if ctl is None:
            return
        now = self._now()
        try:
            lift_off = contact_lift_off_in(msg.data, ctl.contact_links)
            self._apply_contact_schedule(ctl, self._schedule_swing, lift_off, now, now)
        except ValueError as exc:
            self._reject("contact_lift_off", exc)
            return
        self._lift_off, self._lift_off_t = lift_off, now

    def _apply_contact_schedule(self, ctl: WholeBodyController, swing: list[str],
                                lift_off: dict[str, float], t_lift_off: float,
                                now: float) -> None:
        """``set_contact_schedule(swing, lift-offs)`` with the lift-offs announced at
        ``t_lift_off`` counted down to ``now`` [s, node clock]. The controller counts an
        announcement down by itself every tick, but each call replaces the announcements, so
        a stance mask arriving between two lift-off messages must pass them on, aged. An
        announcement older than ``state_timeout`` is dropped (its planner stopped announcing:
        no link stays unloaded for a release nobody plans any more); one whose time has passed
        is due now (0: unloaded until the mask puts the link in swing)."""
        age = now - t_lift_off
        due = ({ln: max(t - age, 0.0) for ln, t in lift_off.items()}
               if age <= ctl.state_timeout else None)
        ctl.set_contact_schedule(swing, due)

    def _on_cmd_vel(self, msg: Twist) -> None:
        """The walking command (``gait``): ``linear.x`` forward, ``linear.y`` left [m/s] in the
        trunk's heading frame, ``angular.z`` the yaw rate [rad/s]; held until the next."""
        ctl = self.controller
        if ctl is None:
            return
        try:
            ctl.set_velocity_command(msg.linear.x, msg.linear.y, msg.angular.z)
        except ValueError as exc:
            self._reject("cmd_vel", InputError("non_finite", str(exc)))

    def _publish_gait_schedule(self, walker: Any) -> None:
        """``~/gait_schedule`` (std_msgs/UInt8MultiArray, ``contact_links`` order, 1 = stance,
        0 = swing) when the gait's scheduled swing feet changed since the last message."""
        if walker.schedule_changes == self._gait_sent:
            return
        self._gait_sent = walker.schedule_changes
        scheduled = walker.scheduled
        data = [1] * len(self._gait_msg.data)
        for foot, row in enumerate(self._gait_rows):
            data[int(row)] = 0 if scheduled[foot] else 1
        self._gait_msg.data = data
        self._pub_gait.publish(self._gait_msg)

    def _task_callback(self, spec: Any, apply: Callable[[Any, Any], None]) -> Callable[[Any], None]:
        """A task subscription's callback: the message's header frame must be ``world_frame``,
        ``odom_frame`` or empty (the controller's world, whose axes the message is in); then
        ``apply(controller, msg)``. A ValueError is a ``task_goals`` rejection."""
        frames = {"", str(self._param("world_frame")), str(self._param("odom_frame"))}

        def on_message(msg: Any) -> None:
            ctl = self.controller
            if ctl is None:
                return
            try:
                frame = msg.header.frame_id
                if frame not in frames:
                    raise InputError("frame", f"task {spec.name}: header.frame_id {frame!r} is "
                                     f"not the controller's world ({sorted(frames - {''})})")
                apply(ctl, msg)
            except ValueError as exc:
                self._reject("task_goals", exc)

        return on_message

    def _task_goal_callback(self, spec: Any) -> Callable[[Any], None]:
        """The goal subscription's callback of a frame task (geometry_msgs/PoseStamped: the
        parts its mode controls) or the com task (PointStamped), world axes
        (:meth:`_task_callback`)."""

        def set_goal(ctl: WholeBodyController, msg: Any) -> None:
            goal: dict[str, Any] = {}
            if spec.kind == "com":
                p = msg.point
                goal["position"] = (p.x, p.y, p.z)
            else:
                p, o = msg.pose.position, msg.pose.orientation
                if spec.mode in ("pose", "position"):
                    goal["position"] = (p.x, p.y, p.z)
                if spec.mode in ("pose", "orientation"):
                    goal["orientation"] = (o.x, o.y, o.z, o.w)
            ctl.set_task_goal(spec.name, **goal)

        return self._task_callback(spec, set_goal)

    def _task_trajectory_callback(self, spec: Any) -> Callable[[Any], None]:
        """The trajectory subscription's callback of a frame or com task
        (trajectory_msgs/MultiDOFJointTrajectory, world axes, the header's frame as for goals:
        :meth:`_task_callback`): one transform per point (``joint_names`` empty or the task's
        name), the parts the task controls; velocities on every point (cubic Hermite segments)
        or on none (linear); ``time_from_start`` from the header's stamp (zero: the next
        control tick)."""

        def set_trajectory(ctl: WholeBodyController, msg: Any) -> None:
            if list(msg.joint_names) not in ([], [spec.name]):
                raise InputError("bad_value", f"task {spec.name}: joint_names "
                                 f"{list(msg.joint_names)}: expected [] or [{spec.name!r}]")
            points = msg.points
            if not points or any(len(p.transforms) != 1 for p in points):
                raise InputError("size", f"task {spec.name}: expected one transform per "
                                 "point and at least one point")
            with_velocity = [len(p.velocities) == 1 for p in points]
            if any(with_velocity) and not all(with_velocity):
                raise InputError("size", f"task {spec.name}: velocities on every point "
                                 "or on none")
            times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in points]
            knots: dict[str, Any] = {}
            tr = [p.transforms[0] for p in points]
            if spec.kind == "com" or spec.mode in ("pose", "position"):
                knots["positions"] = [(t.translation.x, t.translation.y, t.translation.z)
                                      for t in tr]
            if spec.kind == "frame" and spec.mode in ("pose", "orientation"):
                knots["orientations"] = [(t.rotation.x, t.rotation.y, t.rotation.z,
                                          t.rotation.w) for t in tr]
            if all(with_velocity):
                tw = [p.velocities[0] for p in points]
                knots["linear_velocities"] = [(w.linear.x, w.linear.y, w.linear.z) for w in tw]
                knots["angular_velocities"] = [(w.angular.x, w.angular.y, w.angular.z)
                                               for w in tw]
            stamp = msg.header.stamp
            start = None if (stamp.sec == 0 and stamp.nanosec == 0) else (
                stamp.sec + 1e-9 * stamp.nanosec)
            ctl.set_task_trajectory(spec.name, times, start=start, **knots)

        return self._task_callback(spec, set_trajectory)

    def _on_odom(self, msg: Odometry | bytes) -> None:
        if self.controller is not None:
            self._take_odometry("odom", msg, self._odom_parser, self.controller.set_base_state)

    def _on_imu(self, msg: Imu | bytes) -> None:
        """``base_state: imu``: a validated IMU sample to the controller
        (:meth:`_ImuInput._take_imu`), and its orientation covariance if the message has one."""
        ctl = self.controller
        if ctl is None or not self._take_imu(msg, ctl):
            return
        parser = self._imu_parser
        if parser.has_orientation_covariance:
            self._imu_cov[:] = parser.orientation_covariance
        self._imu_cov_ok = parser.has_orientation_covariance

    def _on_object_odom(self, msg: Odometry | bytes) -> None:
        if self.controller is not None:
            self._take_odometry("object_odom", msg, self._object_odom_parser,
                                self.controller.set_object_state)

    def _take_odometry(self, topic: str, msg: Odometry | bytes, parser: OdometryParser,
                       setter: Callable[..., None]) -> None:
        """A validated pose + child-frame twist to ``setter``, or a counted rejection.

        ``msg`` is the serialized message (the subscriptions are raw) or a message object.
        Little-endian classic CDR is read in place (odometry_cdr_numbers); any other
        encapsulation is deserialized by the rmw first, a buffer it cannot deserialize is
        rejected as ``malformed``.
        """
        try:
            if isinstance(msg, bytes):
                numbers = odometry_cdr_numbers(msg)
                if numbers is not None:
                    pos, quat, lin, ang = parser.parse_cdr_numbers(numbers)
                    setter(pos, quat, lin, ang, self._now())
                    return
                msg = _deserialized(msg, Odometry, topic)
            pos, quat, lin, ang = parser.parse(msg)
            setter(pos, quat, lin, ang, self._now())
        except ValueError as exc:
            self._reject(topic, exc)

    def _on_reset_solver(
        self, request: Trigger.Request, response: Trigger.Response
    ) -> Trigger.Response:
        if self.controller is None:
            response.success = False
            response.message = "not configured"
            return response
        self.controller.reset_solver()
        response.success = True
        response.message = "contact solver warm start cleared"
        return response

    # ------------------------------------------------------------------ control
    def _on_timer(self) -> None:
        if self._active and self.controller is not None:
            self._take_pending_odometry()
            self._tick(self._now())

    def _take_pending_odometry(self) -> None:
        """Serve the odometry messages already waiting, before a tick uses the base state.

        The executor serves ready subscriptions in the order they were created, joint_states
        first: a simulator's odom for step k, published just before its joint_states (wbc_sim,
        every step), reached the controller after the tick when both were waiting at once --
        the tick then used the base state of step k-1 (often on a loaded machine, rarely on an
        idle one: the lockstep ROS loop was not deterministic). Taken here, the executor finds
        the queue empty and skips the callback.
        """
        for sub in self._odometry_subs:
            serve_pending(sub)

    def _on_watchdog(self) -> None:
        """Publish the safe command when ticks stopped (e.g. joint_states stopped arriving)."""
        ctl = self.controller
        if not self._active or ctl is None:
            return
        now = self._now()
        if now - self._last_tick > ctl.state_timeout:
            self._tick(now)

    def _tick(self, now: float) -> None:
        ctl = self.controller
        trace = self._trace
        if trace is not None:
            trace.tick_start()
        out = ctl.update(now)
        if trace is not None:
            trace.tick_end()
        self._last_tick = now
        if self._pub_gait is not None:
            self._publish_gait_schedule(ctl.walker)
        if self._hybrid_out:
            self._publish_hybrid(out.stiffness, out.damping, out.position_setpoint,
                                 out.velocity_setpoint)
        self._cmd_view[:] = out.tau
        self._pub_cmd.publish(self._cmd_msg)
        # the record of a command computed from a state, stamped with that joint_states stamp
        # (traceable latency; wbc_sim's lockstep steps on the record matching its state). A
        # stale-state tick's zero torque was computed from no complete state: no record. (It
        # used to be stamped with the clock -- under use_sim_time the stamp of the very state
        # the base / object state of was missing, so the simulator stepped on the zero torque:
        # go2 over ROS sagged to 90 % after ~60 such steps while the controller's odom
        # subscription was still unmatched at the start.)
        # published to subscribers only: with ros2_control alone nobody takes the record, and
        # a publish (~10-80 us, mostly waking a reader) delays the take of the next state
        if (out.mode != MODE_STALE_STATE and self._state_stamp is not None
                and self._pub_js.get_subscription_count()):
            if self._hybrid_out:  # the set-points: the record is the whole drive command
                self._js_pos[:] = out.position_setpoint
                self._js_vel[:] = out.velocity_setpoint
            else:
                self._js_pos[:] = ctl._qj
                self._js_vel[:] = ctl._qdj
            self._js_eff[:] = out.tau
            stamp = self._js_msg.header.stamp
            stamp.sec, stamp.nanosec = self._state_stamp
            self._pub_js.publish(self._js_msg)
            if trace is not None:
                trace.published(self._state_stamp)
        if out.mode != MODE_CONTROL:
            self.get_logger().warning(f"safe command: {out.mode}", throttle_duration_sec=1.0)
        est_out = self._estimate_out
        # the estimate advanced in this tick: a tick that ran the inverse dynamics (control, or
        # the damping safe mode) on a fresh state
        if (est_out is not None and (out.mode == MODE_CONTROL or (
                out.mode == MODE_STALE_REFERENCE and self._safe_damping))
                and ctl.base_estimator.initialized and est_out.due(now)):
            stamp = self._state_stamp
            if stamp is None or stamp == (0, 0):
                stamp = self.get_clock().now().seconds_nanoseconds()
            est_out.publish(ctl.base_estimator, now, stamp,
                            self._imu_cov if self._imu_cov_ok else None)
        if (
            self._pub_markers is not None
            and len(out.contact_ids)
            and now - self._last_contacts >= self._contacts_period
        ):
            self._last_contacts = now
            self._publish_contact_outputs(out)
        if (self._pub_task_markers is not None and now - self._last_task_markers
                >= self._contacts_period
                and self._pub_task_markers.get_subscription_count() > 0):
            self._last_task_markers = now
            self._publish_task_markers()

    def _publish_task_markers(self) -> None:
        """Each frame / com task's goal (a sphere) and where it is (a smaller one), world frame
        (``world_frame``), on ``~/task_markers`` (RViz); only while subscribed."""
        layer = self.controller.tasks
        msg = self._task_marker_msg
        stamp = self.get_clock().now().to_msg()
        for k, i in enumerate(self._task_marker_tasks):
            goal = layer.data.goal_position[i]
            now_at = goal + layer.data.error[i, 0:3]
            for mk, p in ((msg.markers[2 * k], goal), (msg.markers[2 * k + 1], now_at)):
                mk.header.stamp = stamp
                mk.pose.position.x, mk.pose.position.y, mk.pose.position.z = (float(x) for x in p)
                mk.action = Marker.ADD if layer.data.active[i] else Marker.DELETE
        self._pub_task_markers.publish(msg)

    def _task_markers(self) -> MarkerArray:
        """The task markers' message, built once (namespace ``task_goals`` / ``task_positions``,
        spheres of 3 / 2 cm)."""
        msg = MarkerArray()
        layer = self.controller.tasks
        for i in self._task_marker_tasks:
            for ns, size, green in (("task_goals", 0.03, 1.0), ("task_positions", 0.02, 0.3)):
                mk = Marker()
                mk.header.frame_id = self._world_frame
                mk.ns = ns
                mk.id = i
                mk.type = Marker.SPHERE
                mk.text = layer.task_names[i]
                mk.pose.orientation.w = 1.0
                mk.scale.x = mk.scale.y = mk.scale.z = size
                mk.color.g, mk.color.b, mk.color.a = green, 1.0 - green, 0.8
                msg.markers.append(mk)
        return msg

    def _contact_messages(self) -> tuple[dict[str, WrenchStamped], MarkerArray]:
        """The contact outputs' messages, built once with their constant fields (frame, marker
        namespace / id / type / scale / colour, the arrow's two points): a publication only
        writes the stamp, the forces and the arrows (see _publish_contact_outputs)."""
        wrenches: dict[str, WrenchStamped] = {}
        markers = MarkerArray()
        for i, ln in enumerate(self._pub_wrench):
            w = WrenchStamped()
            w.header.frame_id = self._world_frame
            wrenches[ln] = w
            mk = Marker()
            mk.header.frame_id = self._world_frame
            mk.ns = "contact_forces"
            mk.id = i
            mk.type = Marker.ARROW
            mk.points = [Point(), Point()]
            mk.scale.x, mk.scale.y, mk.scale.z = 0.005, 0.01, 0.01
            mk.color.r, mk.color.g, mk.color.a = 1.0, 0.3, 1.0
            markers.markers.append(mk)
        return wrenches, markers

    def _publish_contact_outputs(self, out: Any) -> None:
        """Net contact force per contact link [N, world frame] on ``~/contact_wrench/<link>``
        and an arrow per link (``marker_scale`` m/N, from the link's last contact point) on
        ``~/contact_markers`` -- only to the publishers that have a subscriber.

        This runs in a tick (at ``contacts_rate``), after the command has left, but in the
        thread that takes the next joint state: building 8 wrenches and 8 markers anew and
        publishing them to nobody cost the humanoid 367 us per publication (1 in 20 ticks at
        1 kHz and 50 Hz), and each such tick risked the next state being superseded in the
        depth-1 queue (0.45 % of joint_states unanswered with SCHED_FIFO, 0.01 % without the
        publication). The messages are built once (_contact_messages); the marker array alone
        takes ~85 us to publish, so a listening RViz still costs that.
        """
        wrench_listened = [ln for ln, pub in self._pub_wrench.items()
                           if pub.get_subscription_count() > 0]
        markers_listened = self._pub_markers.get_subscription_count() > 0
        if not wrench_listened and not markers_listened:
            return
        stamp = self.get_clock().now().to_msg()
        per_link: dict[str, np.ndarray] = {}
        points: dict[str, np.ndarray] = {}
        for k, cid in enumerate(out.contact_ids):
            link = cid[0] if isinstance(cid, tuple) else str(cid)
            f = out.contact_forces[k]
            per_link[link] = per_link.get(link, 0.0) + f
            points[link] = out.contact_points[k]
        for ln in wrench_listened:
            w = self._wrench_msgs[ln]
            f = per_link.get(ln)
            w.header.stamp = stamp
            force = w.wrench.force
            force.x, force.y, force.z = (0.0, 0.0, 0.0) if f is None else (float(x) for x in f)
            self._pub_wrench[ln].publish(w)
        if not markers_listened:
            return
        for ln, mk in zip(self._pub_wrench, self._marker_msg.markers, strict=True):
            mk.header.stamp = stamp
            if ln not in points:
                mk.action = Marker.DELETE
                continue
            mk.action = Marker.ADD
            p0 = points[ln]
            p1 = p0 + self._marker_scale * per_link[ln]
            tail, head = mk.points
            tail.x, tail.y, tail.z = float(p0[0]), float(p0[1]), float(p0[2])
            head.x, head.y, head.z = float(p1[0]), float(p1[1]), float(p1[2])
        self._pub_markers.publish(self._marker_msg)

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self) -> None:
        ctl = self.controller
        if ctl is None:
            return
        now = self._now()
        st = DiagnosticStatus()
        st.name = f"{self.get_fully_qualified_name()}: whole-body controller"
        st.hardware_id = ctl.model_source
        out = ctl.last_output
        t = ctl.timing_stats()
        ages = ctl.input_ages(now)
        if not self._active:
            st.level, st.message = DiagnosticStatus.OK, "inactive (not publishing commands)"
        elif out is None:
            st.level, st.message = DiagnosticStatus.WARN, "active, no tick yet"
        elif out.mode == MODE_CONTROL:
            st.level, st.message = DiagnosticStatus.OK, "control"
        else:
            st.level, st.message = DiagnosticStatus.WARN, f"safe command: {out.mode}"
        kv = {
            "active": str(self._active),
            "mode": out.mode if out is not None else "none",
            "method": ctl.method,
            "control_mode": self._control_mode,
            "ticks": str(ctl.ticks),
            "safe_ticks": str(ctl.safe_ticks),
            "deadline_misses": str(ctl.deadline_misses),
            "warm_start_hits": str(ctl.warm_start_hits),
            "solve_time_mean_us": f"{t['mean'] * 1e6:.1f}",
            "solve_time_p99_us": f"{t['p99'] * 1e6:.1f}",
            "solve_time_max_us": f"{t['max'] * 1e6:.1f}",
            "solver_flags": ",".join(out.solver_flags) if out is not None else "",
            "contact_set": ",".join(
                str(c[0] if isinstance(c, tuple) else c)
                for k, c in enumerate(out.contact_ids)
                if out.contact_forces.shape[0] > k
                and out.contact_forces[k] @ out.contact_forces[k] > 0.0
            )
            if out is not None
            else "",
            "clamped_joints": str(out.clamped) if out is not None else "0",
            "rate_limited_states": str(self._rate_limited),
            "last_rejection": self._last_reject,
            "odom_quaternion_renormalized": str(self._odom_parser.renormalized),
            "internal_errors": str(self._internal_errors),
            "last_internal_error": self._last_internal_error,
        }
        for mode, count in sorted(ctl.safe_tick_counts.items()):
            kv[f"safe_ticks.{mode}"] = str(count)
        for flag, count in sorted(ctl.solver_flag_counts.items()):
            kv[f"solver_flag_count.{flag}"] = str(count)
        for topic, per_reason in self._rejected.items():
            kv[f"rejected_{topic}"] = str(sum(per_reason.values()))
            for reason, count in sorted(per_reason.items()):
                kv[f"rejected_{topic}.{reason}"] = str(count)
        for k, a in ages.items():
            kv[f"age_{k}_s"] = f"{a:.4f}" if math.isfinite(a) else "never"
        if self._ref_lag is not None:
            kv["reference_stamp_lag_s"] = f"{self._ref_lag[0]:.4f}"
            kv["reference_stamp_lag_max_s"] = f"{self._ref_lag[1]:.4f}"
        if ctl.tasks is not None:  # each task's error: position [m] / orientation [rad] norms
            for spec in ctl.tasks.specs:
                if spec.kind != "posture":
                    e = ctl.tasks.error(spec.name)
                    kv[f"task.{spec.name}.position_error_m"] = f"{np.linalg.norm(e[:3]):.5f}"
                    if spec.kind == "frame" and spec.mode != "position":
                        kv[f"task.{spec.name}.orientation_error_rad"] = \
                            f"{np.linalg.norm(e[3:]):.5f}"
        cs = ctl.contact_state
        if cs is not None:  # contact_state_filter: loaded contacts, decision changes per second
            now = self._now()
            changed = cs.decisions_changed
            prev = self._contact_state_prev
            kv["contact_state_stance"] = ",".join(cs.stance_links)
            kv["contact_state_loaded"] = str(len(cs.stance_links))
            kv["contact_state_decisions_changed"] = str(changed)
            if prev is not None and now > prev[0]:
                kv["contact_state_changes_per_s"] = f"{(changed - prev[1]) / (now - prev[0]):.2f}"
            kv["contact_state_failed_corrections"] = str(cs.failed_projections)
            self._contact_state_prev = (now, changed)
        if self._imu_parser is not None:  # base_state imu
            kv["imu_repeated_samples"] = str(self._imu_repeats)
            kv["imu_quaternion_renormalized"] = str(self._imu_parser.renormalized)
            if self._imu_lag is not None:
                kv["imu_stamp_lag_s"] = f"{self._imu_lag[0]:.4f}"
                kv["imu_stamp_lag_max_s"] = f"{self._imu_lag[1]:.4f}"
            est = ctl.base_estimator
            kv["estimate_initialized"] = str(est.initialized)
            out_est = self._estimate_out
            kv["estimate_published"] = str(out_est.count) if out_est is not None else "off"
            kv["estimate_tf"] = out_est.tf_state if out_est is not None else "off"
        st.values = [KeyValue(key=k, value=v) for k, v in kv.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [st]
        self._pub_diag.publish(arr)


def _deserialized(data: bytes, msg_type: type, topic: str) -> Any:
    """``data`` (a raw subscription's serialized message) as a ``msg_type`` object; InputError
    ``malformed`` naming the topic if the rmw cannot deserialize it."""
    from rclpy.serialization import deserialize_message

    try:
        return deserialize_message(data, msg_type)
    except RuntimeError as exc:
        raise InputError("malformed", f"{topic}: not a serialized {msg_type.__name__} ({len(data)}"
                         f" bytes): {exc}") from None


def set_realtime_priority(priority: int) -> int:
    """Put every thread of this process (rclpy, DDS receive threads) under SCHED_FIFO.

    Returns the number of threads changed; raises OSError (e.g. missing CAP_SYS_NICE).
    """
    if not 1 <= priority <= 99:
        raise ValueError(f"realtime_priority: must be 1..99, got {priority}")
    param = os.sched_param(priority)
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    for tid in tids:
        os.sched_setscheduler(tid, os.SCHED_FIFO, param)
    return len(tids)


class _StartupSignalGuard:
    """SIGINT / SIGTERM / SIGHUP end a node that is not active within about a second,
    even while it compiles (a first start with a cold numba cache compiles for a minute or more
    inside ``configure``, a method switch inside a parameter callback).

    Python runs signal handlers in the main thread between bytecodes only, and that thread may
    be inside LLVM for seconds. The C-level handler still writes the signal number to
    ``signal.set_wakeup_fd``'s pipe at once; this daemon thread waits on the pipe (LLVM and
    numba's Python code both let other threads run) and, if the node is not active -- nothing
    has been commanded, so there is nothing to stop -- and the main loop has not exited by
    itself within ``GRACE``, logs and exits the process with code 0. An active node is left
    to the main loop, which publishes the zero command before exiting.
    """

    GRACE = 0.5  # [s] the main loop's time to exit by itself before the process is ended

    def __init__(self, node: WbcControllerNode) -> None:
        import threading

        self._node = node
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        self._previous = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="wbc_signal_guard", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        import select

        while not self._closed.is_set():
            ready, _, _ = select.select([self._r], [], [], 0.1)
            if not ready or self._closed.is_set():
                continue
            data = os.read(self._r, 64)
            # a main loop that is not stuck in a compile sees the signal itself within its
            # 0.1 s spin and exits cleanly (then main calls close()): its DDS participant
            # deleted, which os._exit would leave behind as zombie files in /dev/shm
            if data and not self._node._active and not self._closed.wait(self.GRACE):
                try:
                    self._node.get_logger().warning(
                        f"signal {data[-1]} while not active (start-up / compiling): exiting now")
                finally:
                    os._exit(0)

    def close(self) -> None:
        self._closed.set()
        signal.set_wakeup_fd(self._previous)
        self._thread.join(timeout=1.0)
        os.close(self._r)
        os.close(self._w)


def main(args: list[str] | None = None) -> int:
    """Console entry ``wbc_controller``: start the node configured and active.

    Set ``-p autostart:=false`` to leave it unconfigured for a lifecycle manager. Returns the
    process exit code: 0 after SIGINT / SIGTERM / SIGHUP, 1 if configuration failed, 2 after a
    fatal error escaped the executor. Supervisor-friendly exit: whenever the node was active, the
    zero command is published (and its acknowledgement awaited up to 1 s) before the process
    leaves, so ros2_control does not keep applying the last torques.
    """
    rclpy.init(
        args=args if args is not None else sys.argv,
        signal_handler_options=rclpy.signals.SignalHandlerOptions.NO,
    )
    node = WbcControllerNode()
    stop = {"flag": False}

    def _on_signal(signum: int, frame: Any) -> None:
        stop["flag"] = True

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    guard = _StartupSignalGuard(node)
    code = 0
    # (a model from the robot_description topic: the node configures itself when it arrives)
    if node.get_parameter("autostart").value and not (
            node._model_from_topic() and node._topic_description is None):
        if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            node.get_logger().fatal("configuration failed; exiting")
            code = 1
        else:
            node.trigger_activate()
    executor = make_executor(node.get_parameter("executor").value, node.get_logger())
    executor.add_node(node)
    prio = int(node.get_parameter("realtime_priority").value)
    if prio:
        try:
            k = set_realtime_priority(prio)
            node.get_logger().info(f"SCHED_FIFO priority {prio} on {k} threads")
        except (OSError, ValueError) as exc:
            node.get_logger().warning(f"realtime_priority {prio} not applied: {exc}")
    try:
        while code == 0 and not stop["flag"] and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:  # noqa: BLE001 - fatal: zero command below, then exit 2
        node.get_logger().fatal(
            f"fatal error, exiting after the zero command: {type(exc).__name__}: {exc}"
        )
        code = 2
    finally:
        guard.close()
        try:
            if node._active:
                node._publish_stop_command(wait_acked=1.0)
                node._active = False
        except Exception as exc:  # noqa: BLE001 - best effort on exit
            node.get_logger().error(f"zero command on exit failed: {exc}")
        executor.remove_node(node)
        node.destroy_node()  # (and collects what configure froze: the participant goes too)
        if rclpy.ok():
            rclpy.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
