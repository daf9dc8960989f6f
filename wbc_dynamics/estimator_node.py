"""ROS 2 node ``wbc_estimator``: the controller's base estimator for a robot whose controller is
something else (:class:`~wbc_dynamics.leg_odometry.LegOdometry` over ROS).

Interface (names relative, so namespaces and remapping apply; see docs/node.md, "Running without
odometry"):

Subscriptions
    ``imu`` (sensor_msgs/Imu) -- the IMU at the base frame, REP 145 (angular rate, specific
    force, orientation with ``imu_orientation``); validated and timed as the controller node's
    (:class:`~wbc_dynamics.ros_conversions.ImuParser`,
    :func:`~wbc_dynamics.ros_conversions.imu_sample_time`). QoS best effort, depth 1.
    ``joint_states`` (sensor_msgs/JointState) -- by name, any order, extra joints ignored; each
    message runs one estimator step on the latest IMU sample (IMU messages already waiting are
    taken first). QoS best effort, depth 1.
    ``~/contact_schedule`` (std_msgs/UInt8MultiArray) -- ``data[i]`` = 1 (stance) or 0 (swing)
    for the i-th contact link (``contact_links`` order), as the controller node's; every foot is
    in stance until a schedule arrives.
Publications
    ``~/odom`` (nav_msgs/Odometry) and ``/tf`` (tf2_msgs/TFMessage, ``odom_frame`` ->
    ``base_frame``) at up to ``estimate_rate`` -- frames and covariances in
    :mod:`wbc_dynamics.estimate_output`; stamped with the joint state's header stamp.
    ``/diagnostics`` (diagnostic_msgs/DiagnosticArray) -- status ``"<fqn>: base estimator"``:
    steps, publications, input ages, contact schedules received, rejected messages per topic
    and reason, the IMU stamp's lag behind the node's clock, internal errors.

Parameters: the controller node's names, meanings and defaults (the schema's
:data:`~wbc_dynamics.parameters.ESTIMATOR_PARAMETERS`, docs/parameters.md; a robot's
``config/<robot>.yaml`` serves both nodes): the model (``robot_description``,
``urdf_path``, ``robot``, or the URDF from ``robot_description_topic``), ``joints``,
``locked_joints``, ``locked_positions``, ``strict_joints``, ``contact_links``,
``contact_point_*``, ``ground_height``, ``imu_orientation``, ``imu_gyro_noise``,
``imu_accelerometer_noise``, ``sensing_joint_position_noise``, ``sensing_joint_velocity_noise``,
``sensing_base_orientation_noise``, ``state_timeout`` (older inputs: no step, no publication),
``control_rate`` (the first step's time step), ``estimate_rate``, ``odom_frame``,
``base_frame``, ``publish_tf``, ``diagnostics_rate``.

Bad input never stops the node: a rejected message is counted per topic and reason and logged
(throttled); an exception no input should cause is counted as an internal error and logged.
SIGINT / SIGTERM end it with exit code 0; a configuration it cannot use, with 1.
"""

from __future__ import annotations

import inspect
import math
import signal
import sys
from typing import Any

import rclpy
import rclpy.signals
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String, UInt8MultiArray

from .controller_config import ControllerConfig
from .estimate_output import EstimateOutput
from .leg_odometry import LegOdometry
from .node import (
    _deserialized,
    _ImuInput,
    declare_parameters,
    serve_pending,
    subscribe_robot_description,
)
from .parameters import CONTROLLER, ESTIMATOR_PARAMETERS, PARAMETERS, check
from .ros_conversions import (
    ImuParser,
    InputError,
    JointStateParser,
    contact_schedule_swing_links,
)

__all__ = ["ESTIMATOR_PARAMETERS", "WbcEstimatorNode", "main"]

#: Of the estimator's parameters, the fields of
#: :class:`~wbc_dynamics.controller_config.ControllerConfig` (its configuration).
_CONFIG_FIELDS = tuple(p for p in ESTIMATOR_PARAMETERS if PARAMETERS[p].scope == CONTROLLER)
_MODEL_SOURCES = ("robot_description", "urdf_path", "robot")


class WbcEstimatorNode(_ImuInput, Node):
    """The ``wbc_estimator`` node (module docstring). The estimator is built at construction
    (or, without a model parameter, when the URDF arrives on ``robot_description_topic``);
    ValueError for a configuration it cannot use."""

    def __init__(self, node_name: str = "wbc_estimator", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        declare_parameters(self, ESTIMATOR_PARAMETERS)
        self.core: LegOdometry | None = None
        self._rejected: dict[str, dict[str, int]] = {
            t: {} for t in ("imu", "joint_states", "contact_schedule", "robot_description")}
        self._reject_loggers: dict[str, Any] = {}
        self._last_reject = ""
        self._internal_errors = 0
        self._last_internal_error = ""
        self._imu_t = -math.inf
        self._imu_repeats = 0
        self._schedules = 0  # contact schedules received
        self._imu_lag: tuple[float, float] | None = None
        self._stamp = (0, 0)
        self._description_sub = None
        if check("estimate_rate", self._param("estimate_rate")) == 0.0:  # its only output
            raise ValueError("estimate_rate: must be > 0 for wbc_estimator, got 0.0")
        check("diagnostics_rate", self._param("diagnostics_rate"))
        self._pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(1.0 / float(self._param("diagnostics_rate")),
                          self._guard(self._publish_diagnostics))
        if any(str(self._param(k) or "").strip() for k in _MODEL_SOURCES):
            self._start(None)
            return
        topic = str(self._param("robot_description_topic") or "").strip()
        if not topic:
            raise ValueError("robot_description/urdf_path/robot: no robot model given (and no "
                             "robot_description_topic)")
        self._description_sub = subscribe_robot_description(
            self, topic, self._guard(self._on_robot_description))

    # ------------------------------------------------------------------ set-up
    def _param(self, name: str) -> Any:
        v = self.get_parameter_or(name, Parameter(name, value=None)).value
        if v is None:
            return [] if PARAMETERS[name].is_array else None
        return list(v) if isinstance(v, tuple | list) else v

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _start(self, description: str | None) -> None:
        """Build the estimator (ValueError naming the parameter at fault), then the endpoints."""
        values = {k: self._param(k) for k in _CONFIG_FIELDS}
        if description is not None:
            values["robot_description"] = description
        core = LegOdometry(ControllerConfig.from_mapping(values),
                           progress=lambda line: self.get_logger().info(line))
        for note in core.load_warnings:
            self.get_logger().warning(note)
        self.core = core
        model_index = [list(core.model.joint_names).index(j) for j in core.joint_names]
        self._js_parser = JointStateParser(core.joint_names, core.model.position_lower[model_index],
                                           core.model.position_upper[model_index])
        self._imu_parser = ImuParser(core.orientation_used)
        self._out = EstimateOutput(
            self, str(self._param("odom_frame")),
            str(self._param("base_frame")) or core.model.root_link,
            float(self._param("estimate_rate")), bool(self._param("publish_tf")),
            float(self._param("imu_gyro_noise")),
            float(self._param("sensing_base_orientation_noise")))
        if self._param("publish_tf") and self._out.pub_tf is None:
            self.get_logger().warning(f"publish_tf: no /tf, {self._out.tf_state}; the estimate "
                                      "is on ~/odom")
        qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.BEST_EFFORT)
        # the IMU first: the executor serves ready subscriptions in creation order, and a joint
        # state also takes the IMU messages already waiting (_take_pending_imu)
        self._imu_sub = self.create_subscription(Imu, "imu", self._guard(self._on_imu), qos,
                                                 raw=True)
        self.create_subscription(JointState, "joint_states", self._guard(self._on_joint_state),
                                 qos, raw=True)
        self.create_subscription(UInt8MultiArray, "~/contact_schedule",
                                 self._guard(self._on_contact_schedule), 10)
        self.get_logger().info(
            f"estimating the base of {core.model_source}: {core.n} joints, feet "
            f"{core.contact_links}, orientation from the "
            f"{'IMU' if core.orientation_used else 'gyro'}")

    def _on_robot_description(self, msg: String) -> None:
        if self.core is not None:
            return
        text = str(msg.data)
        try:
            if not text.lstrip().startswith("<"):
                raise InputError("bad_value",
                                 "robot_description: expected URDF XML text (starting with '<')")
            self._start(text)
        except ValueError as exc:
            self._reject("robot_description", exc)

    def _guard(self, callback: Any) -> Any:
        """``callback`` wrapped so that no exception reaches the executor (counted, logged)."""
        name = getattr(callback, "__name__", "callback")

        def run(*args: Any) -> None:
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - by design: nothing reaches the executor
                self._internal_errors += 1
                self._last_internal_error = f"{name}: {type(exc).__name__}: {exc}"
                self.get_logger().error(f"internal error in {name} (counted, node keeps "
                                        f"running): {type(exc).__name__}: {exc}",
                                        throttle_duration_sec=1.0)

        if len(inspect.signature(callback).parameters) == 1:  # a subscription's
            return lambda msg: run(msg)
        return lambda: run()

    def _reject(self, what: str, exc: Exception) -> None:
        reason = exc.reason if isinstance(exc, InputError) else "invalid"
        per_reason = self._rejected.setdefault(what, {})
        per_reason[reason] = per_reason.get(reason, 0) + 1
        self._last_reject = f"{what}: {exc}"
        self._reject_loggers.setdefault(what, self.get_logger().get_child(what)).error(
            f"rejected {what} message ({reason}): {exc}", throttle_duration_sec=1.0)

    # ------------------------------------------------------------------ inputs
    def _on_imu(self, msg: Imu | bytes) -> None:
        self._take_imu(msg, self.core)

    def _take_pending_imu(self) -> None:
        """Serve the IMU messages already waiting before a step uses the latest sample (as the
        controller node serves odometry before a tick: a simulator's IMU of step k, published
        just before that step's joint_states, would otherwise reach the estimator after it)."""
        serve_pending(self._imu_sub)

    def _on_joint_state(self, msg: JointState | bytes) -> None:
        core = self.core
        now = self._now()
        parser = self._js_parser
        try:
            parsed = parser.parse_cdr(msg) if isinstance(msg, bytes) else None
            if parsed is not None:
                pos, vel = parsed
                stamp = parser.stamp
            else:
                if isinstance(msg, bytes):
                    msg = _deserialized(msg, JointState, "joint_states")
                pos, vel = parser.parse(msg)
                stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
            core.set_joint_state(pos, vel, now)
        except ValueError as exc:
            self._reject("joint_states", exc)
            return
        self._take_pending_imu()
        if not core.update(now) or not core.initialized or not self._out.due(now):
            return
        if stamp == (0, 0):
            stamp = self.get_clock().now().seconds_nanoseconds()
        parser_imu = self._imu_parser
        self._out.publish(core.estimator, now, stamp,
                          parser_imu.orientation_covariance
                          if parser_imu.has_orientation_covariance else None)

    def _on_contact_schedule(self, msg: UInt8MultiArray) -> None:
        core = self.core
        try:
            core.set_contact_schedule(contact_schedule_swing_links(msg.data, core.contact_links))
        except ValueError as exc:
            self._reject("contact_schedule", exc)
            return
        self._schedules += 1

    # ------------------------------------------------------------------ diagnostics
    def _publish_diagnostics(self) -> None:
        core = self.core
        st = DiagnosticStatus()
        st.name = f"{self.get_fully_qualified_name()}: base estimator"
        kv: dict[str, str] = {}
        if core is None:
            st.level, st.message = DiagnosticStatus.WARN, "waiting for the robot description"
        else:
            st.hardware_id = core.model_source
            now = self._now()
            if not core.fresh(now):
                st.level, st.message = DiagnosticStatus.WARN, "inputs stale: not estimating"
            elif not core.initialized:
                st.level, st.message = DiagnosticStatus.WARN, "not initialized"
            else:
                st.level, st.message = DiagnosticStatus.OK, "estimating"
            p = core.estimator.data.x
            kv.update({
                "initialized": str(core.initialized),
                "updates": str(core.updates),
                "failed_updates": str(core.failed_updates),
                "published": str(self._out.count),
                "tf": self._out.tf_state,
                "imu_repeated_samples": str(self._imu_repeats),
                "contact_schedules": str(self._schedules),
                "base_height": f"{p[2]:.5f}",
            })
            for k, a in core.input_ages(now).items():
                kv[f"age_{k}_s"] = f"{a:.4f}" if math.isfinite(a) else "never"
            if self._imu_lag is not None:
                kv["imu_stamp_lag_s"] = f"{self._imu_lag[0]:.4f}"
                kv["imu_stamp_lag_max_s"] = f"{self._imu_lag[1]:.4f}"
        for topic, per_reason in self._rejected.items():
            kv[f"rejected_{topic}"] = str(sum(per_reason.values()))
            for reason, count in sorted(per_reason.items()):
                kv[f"rejected_{topic}.{reason}"] = str(count)
        kv["last_rejection"] = self._last_reject
        kv["internal_errors"] = str(self._internal_errors)
        kv["last_internal_error"] = self._last_internal_error
        st.values = [KeyValue(key=k, value=v) for k, v in kv.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [st]
        self._pub_diag.publish(arr)


def main(args: list[str] | None = None) -> int:
    """Console entry ``wbc_estimator``: run the node until SIGINT / SIGTERM (exit code 0); a
    configuration it cannot use ends it with 1, naming the parameter."""
    rclpy.init(args=args if args is not None else sys.argv,
               signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = {"flag": False}

    def _on_signal(signum: int, frame: Any) -> None:
        stop["flag"] = True

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    node = None
    code = 0
    try:
        node = WbcEstimatorNode()
    except ValueError as exc:
        print(f"wbc_estimator: configuration failed: {exc}", file=sys.stderr)
        code = 1
    if node is not None:
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        try:
            while not stop["flag"] and rclpy.ok():
                executor.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            executor.remove_node(node)
            node.destroy_node()
    if rclpy.ok():
        rclpy.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
