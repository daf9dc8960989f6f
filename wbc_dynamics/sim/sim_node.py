"""ROS 2 node ``wbc_sim``: a MuJoCo robot that behaves like a robot driven by ros2_control.

The plant is :class:`~wbc_dynamics.sim.mujoco_model.MujocoPlant`, built from the same URDF the
controller uses. It steps at ``sim_rate`` (paced to ``real_time_factor`` x wall time; 0 = as fast
as possible) and after every step publishes the simulated time and the robot state.

Publications
    ``/clock`` (rosgraph_msgs/Clock) -- simulated time (run the other nodes with
    ``use_sim_time: true``), if ``publish_clock``.
    ``joint_states`` (sensor_msgs/JointState) -- position, velocity and the *applied* effort of
    every joint (configured order), stamped with simulated time.
    ``odom`` (nav_msgs/Odometry) -- floating base only: pose of the base link in ``world_frame``,
    twist in the child (base) frame, as the controller expects.
    ``~/contact_wrench/<link>`` (geometry_msgs/WrenchStamped) -- measured contact force on each
    contact link, world axes (frame ``world_frame``), torque zero (force at the contact point).
    ``~/normal_force`` (std_msgs/Float64) -- sum of measured contact normal forces [N].
Subscriptions
    ``effort_controller/commands`` (std_msgs/Float64MultiArray) -- ``data[i]`` = effort of the
    i-th configured joint (the topic of ros2_control's effort ForwardCommandController). A
    message of the wrong length or with non-finite values is rejected (throttled error). A
    command older than ``command_timeout`` (simulated time) is replaced by zero torque -- the
    conservative reading of "no fresh command" (ros2_control itself would hold the last one).

Parameters: ``robot`` (bundled robot name, default quadruped), ``urdf_path`` /
``robot_description`` (override the model), ``floating_base`` (default from the bundled robot),
``joints``, ``sim_rate`` [Hz] (1000), ``real_time_factor`` (1.0), ``command_timeout`` [s] (0.05),
``friction`` ("high" | "low" | number as text), ``ground`` ("rigid" | "compliant"),
``ground_height`` [m] (0), ``publish_clock`` (true), ``publish_every`` (publish state every N
steps, 1), ``world_frame`` ("world"), ``base_frame`` (the URDF root link), ``with_box`` (arm: add
the grasped box, false), ``initial_pose`` ("standing"/"grasp"/"neutral"),
``joint_dynamics`` (the URDF's joint damping and friction in the plant, true).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence

import numpy as np

__all__ = ["SimNode", "main"]


def _make_node_class():
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64, Float64MultiArray

    from ..robots import ROBOT_NAMES, robot_info, robot_path
    from .mujoco_model import FreeBody, GroundOptions, MujocoPlant

    class SimNode(Node):
        """The ``wbc_sim`` node (see the module docstring)."""

        def __init__(self, **kwargs) -> None:
            super().__init__("wbc_sim", **kwargs)
            T = Parameter.Type
            decl = {
                "robot": "quadruped",
                "urdf_path": "",
                "robot_description": "",
                "floating_base": "",
                "sim_rate": 1000.0,
                "real_time_factor": 1.0,
                "command_timeout": 0.05,
                "friction": "high",
                "ground": "rigid",
                "ground_height": 0.0,
                "publish_clock": True,
                "publish_every": 1,
                "world_frame": "world",
                "base_frame": "",
                "with_box": False,
                "initial_pose": "standing",
                # the URDF's <dynamics damping friction> in the plant (False: ideal joints)
                "joint_dynamics": True,
            }
            for k, v in decl.items():
                # floating_base / friction accept text or bool / number
                dyn = ParameterDescriptor(dynamic_typing=k in ("floating_base", "friction"))
                self.declare_parameter(k, v, dyn)
            self.declare_parameter("joints", T.STRING_ARRAY)
            p = {k: self.get_parameter(k).value for k in decl}
            joints = self.get_parameter_or("joints", Parameter("joints", value=None)).value
            robot = str(p["robot"])
            info = robot_info(robot) if robot in ROBOT_NAMES else None
            source = p["robot_description"] or p["urdf_path"] or (robot_path(robot) if info else "")
            if not source:
                raise ValueError("robot/urdf_path/robot_description: no robot model given")
            fb = p["floating_base"]
            if fb == "":
                floating = bool(info["floating_base"]) if info else False
            elif str(fb).lower() in ("true", "false"):
                floating = str(fb).lower() == "true"
            else:
                raise ValueError(f"floating_base: expected true/false, got {fb!r}")
            rate = float(p["sim_rate"])
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"sim_rate: must be > 0, got {rate}")
            rtf = float(p["real_time_factor"])
            if not (math.isfinite(rtf) and rtf >= 0):
                raise ValueError(f"real_time_factor: must be >= 0, got {rtf}")
            self.command_timeout = float(p["command_timeout"])
            if not (self.command_timeout > 0):
                raise ValueError("command_timeout: must be > 0")
            friction = str(p["friction"])
            if friction not in ("high", "low"):
                try:
                    friction = float(friction)
                except ValueError:
                    raise ValueError(
                        f"friction: 'high', 'low' or a number, got {friction!r}"
                    ) from None
            if p["ground"] not in ("rigid", "compliant"):
                raise ValueError(f"ground: 'rigid' or 'compliant', got {p['ground']!r}")
            ground = GroundOptions(
                friction=friction,
                compliant=p["ground"] == "compliant",
                timestep=1.0 / rate,
                height=float(p["ground_height"]),
            )
            bodies: tuple = ()
            if p["with_box"] and info and "box_pose" in info:
                pose = info["box_pose"]
                bodies = (
                    FreeBody(
                        "box",
                        tuple(info["box_size"]),
                        info["box_mass"],
                        pos=tuple(pose[:3]),
                        quat_xyzw=tuple(pose[3:]),
                        friction=ground.mu,
                    ),
                )
            self.plant = MujocoPlant(
                source,
                floating,
                joint_order=list(joints) if joints else None,
                ground=ground,
                free_bodies=bodies,
                joint_dynamics=bool(p["joint_dynamics"]),
            )
            self.n = self.plant.n_joints
            self.floating = floating
            q0 = self._initial_q(info, str(p["initial_pose"]))
            self.plant.set_state(q0, np.zeros(self.plant.nv))
            self.contact_links = list(info["contact_links"]) if info else []
            self.world_frame = str(p["world_frame"])
            self.base_frame = str(p["base_frame"]) or self.plant.parsed.root
            self.publish_clock = bool(p["publish_clock"])
            self.publish_every = max(1, int(p["publish_every"]))
            self.rate, self.rtf = rate, rtf
            # command state
            self.tau_cmd = np.zeros(self.n)
            self.t_cmd = -math.inf
            self.rejected = 0
            self.steps = 0
            # messages and endpoints
            # reliable: matches both reliable (ros2 topic echo, robot_state_publisher) and
            # best-effort subscribers (the controller)
            qos_state = QoSProfile(
                depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE
            )
            qos_cmd = QoSProfile(
                depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE
            )
            self.pub_clock = self.create_publisher(Clock, "/clock", 10)
            self.pub_js = self.create_publisher(JointState, "joint_states", qos_state)
            self.pub_odom = self.create_publisher(Odometry, "odom", qos_state) if floating else None
            self.pub_wrench = {
                ln: self.create_publisher(WrenchStamped, f"~/contact_wrench/{ln}", 10)
                for ln in self.contact_links
            }
            self.pub_normal = self.create_publisher(Float64, "~/normal_force", 10)
            self.create_subscription(
                Float64MultiArray, "effort_controller/commands", self._on_command, qos_cmd
            )
            self._Clock, self._JointState, self._Odometry = Clock, JointState, Odometry
            self._WrenchStamped, self._Float64 = WrenchStamped, Float64
            self._wall0 = time.monotonic()
            self._sim0 = self.plant.time
            period = 1.0 / (rate * rtf) if rtf > 0 else 0.0
            self.timer = self.create_timer(max(period, 1e-4), self._on_timer)
            self._publish()
            self.get_logger().info(
                f"simulating {self.plant.parsed.name}: {self.n} joints, "
                f"{'floating' if floating else 'fixed'} base, {rate:g} Hz, real-time factor "
                f"{rtf:g}, ground {p['ground']} mu={ground.mu:g}"
            )

        def _initial_q(self, info, pose: str) -> np.ndarray:
            q = np.zeros(self.plant.nq)
            if self.floating:
                q[6] = 1.0
            if info is None or pose == "neutral":
                return q
            key = {"standing": "standing_q", "grasp": "grasp_q"}.get(pose)
            if key is None or key not in info:
                key = "standing_q"
            full = np.asarray(info[key], dtype=float)
            names = info["joint_names"]
            o = 7 if self.floating else 0
            if self.floating and info["floating_base"]:
                q[:7] = full[:7]
            jq = full[7:] if info["floating_base"] else full
            for i, jn in enumerate(self.plant.joint_names):
                q[o + i] = jq[names.index(jn)]
            return q

        # ---- command input ---------------------------------------------------------------
        def _on_command(self, msg) -> None:
            data = np.asarray(msg.data, dtype=float)
            if data.shape != (self.n,) or not np.all(np.isfinite(data)):
                self.rejected += 1
                what = (
                    f"expected {self.n} values, got {data.shape[0]}"
                    if data.shape != (self.n,)
                    else "non-finite value"
                )
                self.get_logger().error(
                    f"effort command rejected: {what}", throttle_duration_sec=1.0
                )
                return
            self.tau_cmd[:] = data
            self.t_cmd = self.plant.time

        # ---- stepping --------------------------------------------------------------------
        def _on_timer(self) -> None:
            if self.rtf > 0:  # catch up with wall time (bounded: never more than 20 steps)
                target = self._sim0 + (time.monotonic() - self._wall0) * self.rtf
                n = int(min(20, max(1, round((target - self.plant.time) * self.rate))))
            else:
                n = 20
            for _ in range(n):
                self.step_once()

        def step_once(self) -> None:
            """Apply the current command (or zero if stale) for one step and publish."""
            fresh = (self.plant.time - self.t_cmd) <= self.command_timeout
            self.plant.step(self.tau_cmd if fresh else np.zeros(self.n))
            self.steps += 1
            if self.steps % self.publish_every == 0:
                self._publish()

        def _stamp(self):
            t = self.plant.time
            from builtin_interfaces.msg import Time

            sec, nsec = divmod(int(round(t * 1e9)), 1_000_000_000)
            return Time(sec=sec, nanosec=nsec)

        def _publish(self) -> None:
            stamp = self._stamp()
            if self.publish_clock:
                c = self._Clock()
                c.clock = stamp
                self.pub_clock.publish(c)
            q, v = self.plant.get_state()
            o, ov = (7, 6) if self.floating else (0, 0)
            js = self._JointState()
            js.header.stamp = stamp
            js.name = list(self.plant.joint_names)
            js.position = q[o:].tolist()
            js.velocity = v[ov:].tolist()
            js.effort = self.plant.applied_torques().tolist() if self.steps else [0.0] * self.n
            self.pub_js.publish(js)
            if self.pub_odom is not None:
                od = self._Odometry()
                od.header.stamp = stamp
                od.header.frame_id = self.world_frame
                od.child_frame_id = self.base_frame
                pp, qq = od.pose.pose.position, od.pose.pose.orientation
                pp.x, pp.y, pp.z = (float(x) for x in q[0:3])
                qq.x, qq.y, qq.z, qq.w = (float(x) for x in q[3:7])
                tl, ta = od.twist.twist.linear, od.twist.twist.angular
                tl.x, tl.y, tl.z = (float(x) for x in v[0:3])
                ta.x, ta.y, ta.z = (float(x) for x in v[3:6])
                self.pub_odom.publish(od)
            forces = self.plant.link_contact_forces()
            for ln, pub in self.pub_wrench.items():
                f = forces.get(ln, np.zeros(3))
                w = self._WrenchStamped()
                w.header.stamp = stamp
                w.header.frame_id = self.world_frame
                w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(x) for x in f)
                pub.publish(w)
            self.pub_normal.publish(self._Float64(data=float(self.plant.total_normal_force())))

    return SimNode, rclpy


def SimNode(**kwargs):  # noqa: N802 - factory so importing this module needs no rclpy
    """Create the ``wbc_sim`` node (rclpy must be initialized)."""
    cls, _ = _make_node_class()
    return cls(**kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """``wbc_sim`` console script: run the simulation node until interrupted."""
    cls, rclpy = _make_node_class()
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=list(argv) if argv is not None else sys.argv)
    node = None
    try:
        node = cls()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:  # noqa: BLE001 - a timer firing while the context shuts down
        if rclpy.ok():
            raise
    except ValueError as exc:
        print(f"wbc_sim: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
