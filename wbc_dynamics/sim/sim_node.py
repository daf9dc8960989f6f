"""ROS 2 node ``wbc_sim``: a MuJoCo robot that behaves like a robot driven by ros2_control.

One module for one node: its class is defined inside a factory (``_make_node_class``, so that
importing this module needs no rclpy) whose callbacks share one closure; the plant
(:mod:`~wbc_dynamics.sim.mujoco_model`) and the sensor models
(:mod:`~wbc_dynamics.sim.imperfections`) are modules of their own.

The plant is :class:`~wbc_dynamics.sim.mujoco_model.MujocoPlant`, built from the same URDF the
controller uses. After every step it publishes the simulated time and the robot state.

Modes (parameter ``mode``)
    ``lockstep`` -- the simulator publishes the state of step k and advances only when the
    command computed *for that state* has arrived: a ``sensor_msgs/JointState`` on
    ``stamped_command_topic`` (the controller's ``~/joint_commands`` record, whose
    ``header.stamp`` is the stamp of the joint state it was computed from, ``effort`` the
    torques) with exactly the stamp of state k. Commands with another stamp (late, or for a
    re-sent state) are ignored and counted. If no matching command arrives within
    ``lockstep_timeout`` seconds of *wall* time, the step is taken anyway with the fallback
    command (below) and counted in ``missed_commands``; from then on the simulation steps at the
    real-time pace (one step period of wall time, with the fallback command, each step counted
    as missed) until a command matches the pending state again, so a controller that died does
    not stall every step by ``lockstep_timeout``. While it waits, the state is re-sent
    every ``resend_period`` wall seconds (a best-effort subscriber may have dropped it). Optional
    pacing: ``real_time_factor`` > 0 is an upper bound on the simulation speed (0 = as fast as
    the controller answers).
    ``realtime`` -- free-running: steps at ``sim_rate`` paced to ``real_time_factor`` x wall
    time (0 = as fast as possible) and applies the latest ``effort_controller/commands``
    (std_msgs/Float64MultiArray, ros2_control's effort ForwardCommandController topic). Steps
    taken without a command newer than the previous step count as ``missed_commands``.

Drives (parameter ``drive``, :class:`Drives`)
    ``effort`` (default) -- the joints apply the latest effort command, held between commands.
    ``hybrid`` -- each joint's drive runs its own impedance loop at every plant step on the
    joint state of that step: ``tau_ff + stiffness (q_set - q) + damping (qd_set - qd)``,
    clamped to the URDF effort limits (Unitree motor drivers, legged_control's hybrid joint
    handles). Realtime: the latest value of each ros2_control command topic,
    ``effort_controller/commands`` (``tau_ff``), ``position_controller/commands``,
    ``velocity_controller/commands``, ``stiffness_controller/commands``,
    ``damping_controller/commands``. Lockstep: the stamped record's ``effort`` (``tau_ff``),
    ``position`` and ``velocity`` (the set-points: the controller node's ``~/joint_commands``
    carries them when it sends a hybrid command), and the latest gains of the stiffness /
    damping topics (the controller node publishes a tick's gains before its record and this
    node subscribes to them first, so a record is stepped with the gains of its own tick;
    gains change only on the controller's safe ticks: zero while its state is stale). The
    impedance terms act once set-points have arrived, gains are zero until they arrive: a
    controller sending effort only drives a hybrid drive as an effort drive.

Start (both modes, ``start_paused``, default true): like Gazebo / mujoco_ros2_control starting
paused, the simulation does not step -- the robot stays in its initial pose, /clock stands
still -- until the first valid command arrives (the controller is configured, warmed and
active); the initial state is re-sent every ``resend_period`` meanwhile. No timeout applies
before that first command (a first start compiles the controller's kernels for minutes).

Fallback command (documented safe behaviour): the latest valid command while it is younger than
``command_timeout`` seconds of simulated time (since it reached the drives; with the hybrid
drive the effort and the set-points), after that: effort drives zero torque (the conservative
reading of "no fresh command"; ros2_control itself would hold the last one), hybrid drives keep
their impedance loop holding the last position set-point at rest (``tau_ff = 0``, ``qd_set =
0``, the last position set-point and gains), as a drive's own loop does when its commands stop.
``stale_steps`` counts the steps taken with a stale command.

Command latency and dropout (test options, simulated time): every command reaches the drives
``command_latency`` seconds after it was received (commands received before the first step at
once: the drives were already applying them when the simulation starts), and none reaches them
from ``command_dropout_start`` for ``command_dropout`` seconds (0 = never; the drives keep what
they had, the messages are counted as ``dropped_commands``). Lockstep still steps on the record
matching each state: the record of step k drives step k + ``command_latency * sim_rate``.

Publications
    ``/clock`` (rosgraph_msgs/Clock) -- simulated time (run the other nodes with
    ``use_sim_time: true``), if ``publish_clock``.
    ``odom`` (nav_msgs/Odometry) -- floating base only: pose of the base link in ``world_frame``,
    twist in the child (base) frame, as the controller expects. Published before
    ``joint_states`` of the same step.
    ``ground_truth/odom`` (nav_msgs/Odometry) -- floating base only: the same message (the
    plant's exact base state), for comparing an estimate with it whatever ``odom`` is used for.
    ``imu`` (sensor_msgs/Imu) -- floating base only: the IMU at the base frame (:class:`SimImu`:
    angular rate, specific force, orientation, REP 145, frame ``base_frame``), with the noise of
    the ``imu_*`` parameters (default 0: exact), sampled at every state, stamped with its time
    and published with it (re-sent with it), before ``joint_states``: a controller estimating
    its base (``base_state: imu``) gets the IMU of state k with state k, as it gets ``odom``.
    These two are published only while they have a subscriber (each costs ~20 us a step).
    ``object_odom_topic`` (nav_msgs/Odometry, default ``wbc_controller/object_odom``: the
    controller's ``~/object_odom``) -- a robot configuration with ``object_urdf``: the object's
    pose in ``world_frame`` and twist in its own frame, before ``joint_states``. The object is
    the controller's parse of ``object_urdf`` placed at the configuration's ``grasp.object_pose``
    in ``grasp.hand_link``; for the first ``object_hold`` seconds of simulated time it is held
    there (a fixture, as if on a table) while the controller closes the fingers on it.
    ``joint_states`` (sensor_msgs/JointState) -- position, velocity and the *applied* effort of
    every joint (configured order), stamped with simulated time.
    ``~/contact_wrench/<link>`` (geometry_msgs/WrenchStamped) -- measured contact force on each
    contact link, world axes (frame ``world_frame``), torque zero (force at the contact point).
    ``~/normal_force`` (std_msgs/Float64) -- sum of measured contact normal forces [N].
    ``/diagnostics`` (diagnostic_msgs/DiagnosticArray) -- status ``"<fqn>: simulator"``: mode,
    drive, state (holding / running / waiting / finished), simulated time, steps, matched
    commands, missed commands, stale steps, dropped / rejected / ignored commands, re-sent
    states, the largest age of the effort command at a step since it reached the drives
    (``command_age_max`` [s]),
    measured real-time factor over the last period, base height and its minimum over all steps
    (floating base); with an object, ``object_slip`` / ``object_slip_max``: its displacement in
    the hand frame since it was let go [m] (now / largest).
Subscriptions
    ``effort_controller/commands`` (std_msgs/Float64MultiArray, realtime mode) -- ``data[i]`` =
    effort of the i-th configured joint [N m]; hybrid drive: also ``position_controller/``,
    ``velocity_controller/``, ``stiffness_controller/``, ``damping_controller/commands``
    (the same layout; [rad], [rad/s], [N m/rad], [N m s/rad]).
    ``stamped_command_topic`` (sensor_msgs/JointState, lockstep mode; default
    ``wbc_controller/joint_commands``) -- efforts (hybrid drive: and position / velocity
    set-points) by joint name, stamp = state stamp; hybrid drive: also
    ``stiffness_controller/commands`` and ``damping_controller/commands``.
    A message of the wrong length, with unknown joints, non-finite values or (gains) negative
    values is rejected whole (throttled error naming the topic, counted in
    ``rejected_commands``).

Parameters: ``robot`` (bundled robot name, default quadruped), ``robot_config`` (a robot
configuration, ``config/robots`` name or YAML path: model with its locked joints, joint order,
contact links and the standing pose -- joints from its SRDF / YAML, base height from its contact
points -- come from it, as the controller loads them), ``urdf_path`` /
``robot_description`` (override the model), ``floating_base`` (default from the bundled robot),
``joints``, ``mode`` ("realtime" | "lockstep"), ``sim_rate`` [Hz] (1000), ``real_time_factor``
(1.0), ``command_timeout`` [s] (0.05), ``drive`` ("effort" | "hybrid"), ``command_latency``,
``command_dropout_start``, ``command_dropout`` [s simulated] (0, 0, 0),
``lockstep_timeout`` [s wall] (1.0), ``resend_period``
[s wall] (0.1), ``start_paused`` (true), ``clock_subscribers`` (a paused start also waits until
/clock has this many subscribers -- the nodes on simulated time; 0), ``duration`` [s
simulated] (0 = unlimited; the simulation then stops stepping and keeps publishing
diagnostics), ``stamped_command_topic``,
``diagnostics_rate`` [Hz wall] (1), ``imu_gyro_noise`` [rad/s], ``imu_gyro_bias`` [rad/s],
``imu_accelerometer_noise`` [m/s^2], ``imu_orientation_noise`` [rad], ``imu_gyro_bias_walk``
[rad/s/sqrt(s)], ``imu_accelerometer_bias`` [m/s^2], ``imu_accelerometer_bias_walk``
[m/s^2/sqrt(s)] (all 0; typical MEMS values: 0.002, 0.002, 0.05, 0.0035, 2e-5, 0, 3e-3 --
:meth:`~wbc_dynamics.sim.imperfections.Imperfections.realistic`;
:class:`~wbc_dynamics.sim.imperfections.SimImu`), ``imu_seed`` (0),
``encoder_position_noise`` [rad], ``encoder_velocity_noise``
[rad/s], ``encoder_resolution`` [rad] (0, 0, 0: joint_states carries the exact joint state;
:class:`~wbc_dynamics.sim.imperfections.SimEncoders`), ``encoder_seed`` (0),
``friction`` ("high" | "low" | number as text), ``ground``
("rigid" | "compliant"), ``ground_height`` [m] (0), ``publish_clock`` (true),
``publish_every`` (realtime: publish state every N steps, 1), ``world_frame`` ("world"),
``base_frame`` (the URDF root link), ``with_box`` (arm: add the grasped box, false),
``initial_pose`` ("standing"/"grasp"/"neutral"), ``joint_dynamics`` (the URDF's joint damping and
friction in the plant, true), ``object_hold`` [s simulated] (0), ``object_odom_topic``.
"""

from __future__ import annotations

import array
import math
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from .imperfections import SimEncoders, SimImu

__all__ = ["DRIVES", "INTERFACES", "Drives", "SimImu", "SimNode", "main"]

MODES = ("realtime", "lockstep")
#: Accepted values of the ``drive`` parameter.
DRIVES = ("effort", "hybrid")
#: Command interfaces of a hybrid drive, each on ``<interface>_controller/commands`` in realtime
#: mode (ros2_control's ForwardCommandController topics); ``effort`` is the effort drive's only.
INTERFACES = ("effort", "position", "velocity", "stiffness", "damping")
_EPS_T = 1e-9  # [s] tolerance of simulated-time comparisons (MuJoCo sums its time steps)


class Drives:
    """The simulated robot's joint drives: the torques they apply at each plant step for the
    commands that reached them (ROS-free; :class:`SimNode` feeds it).

    ``hybrid=False`` (effort drives): the latest effort command, held. ``hybrid=True``: the drive
    runs its own impedance loop at every plant step on the joint state of that step,
    ``tau_ff + stiffness (q_set - q) + damping (qd_set - qd)`` (Unitree motor drivers,
    legged_control's hybrid joint handles), with the latest value received on each interface
    (``effort`` = ``tau_ff`` [N m], ``position`` [rad], ``velocity`` [rad/s], ``stiffness``
    [N m/rad], ``damping`` [N m s/rad]); the impedance terms act once a position and a velocity
    set-point have arrived (before: ``tau_ff`` alone), the gains are zero until they arrive.
    Either is clamped to ``+-limit`` (entries that are not finite and > 0: no clamp).

    Stale command (documented safe behaviour): a command is fresh while its effort -- and, once
    received, its position and velocity set-points -- reached the drives at most ``timeout``
    seconds ago. After that an effort drive applies zero torque; a hybrid drive keeps its
    impedance loop holding the last position set-point at rest: ``tau_ff = 0``, ``qd_set = 0``,
    the last ``q_set`` and gains (zero gains: zero torque). Such steps count as ``stale_steps``.

    Test options: every command reaches the drives ``latency`` seconds after it was received
    (those received before the first step at once: the drives were already applying them), and
    none at all while ``dropout_start <= t < dropout_start + dropout`` (counted as ``dropped``;
    the drives keep what they had).
    """

    def __init__(self, n: int, limit: Sequence[float], hybrid: bool, timeout: float,
                 latency: float = 0.0, dropout_start: float = 0.0,
                 dropout: float = 0.0) -> None:
        self.n = int(n)
        lim = np.asarray(limit, dtype=float)
        #: [N m] clamp of the applied torques (inf where the limit is not finite and > 0)
        self.limit = np.where(np.isfinite(lim) & (lim > 0.0), lim, np.inf)
        self.hybrid = bool(hybrid)
        self.timeout = float(timeout)
        self.latency = float(latency)
        self.dropout_start = float(dropout_start)
        self.dropout = float(dropout)
        #: the latest value received on each interface (gains and set-points: hybrid only)
        self.command = {k: np.zeros(self.n) for k in INTERFACES}
        #: [s simulated] when each interface's latest value reached the drives
        self.delivered = dict.fromkeys(INTERFACES, -math.inf)
        self._queue: deque = deque()  # (due time [s], {interface: values})
        self._stepping = False
        #: commands (messages) that never reached the drives (dropout)
        self.dropped = 0
        #: steps taken with a stale command
        self.stale_steps = 0
        #: the last step's command was stale
        self.stale = False
        #: [s] largest age of the effort command at a step (since it reached the drives)
        self.age_max = 0.0
        self._tau = np.zeros(self.n)

    def receive(self, t: float, values: Mapping[str, np.ndarray]) -> None:
        """Interfaces ``values`` (validated, (n,) each) of one command received at ``t`` [s]."""
        due = t + self.latency if self._stepping else t
        self._queue.append((due, {k: np.array(v, dtype=float) for k, v in values.items()}))

    def _deliver(self, t: float) -> None:
        q = self._queue
        while q and q[0][0] <= t + _EPS_T:
            _, values = q.popleft()
            if self.dropout > 0.0 and (self.dropout_start - _EPS_T <= t
                                       < self.dropout_start + self.dropout - _EPS_T):
                self.dropped += 1
                continue
            for k, v in values.items():
                self.command[k][:] = v
                self.delivered[k] = t

    def fresh(self, t: float) -> bool:
        """The command is younger than ``timeout`` at ``t`` [s] (see the class docstring)."""
        d = self.delivered
        t_cmd = d["effort"]
        if self.hybrid and self._setpoints():
            t_cmd = min(t_cmd, d["position"], d["velocity"])
        return t - t_cmd <= self.timeout + _EPS_T

    def _setpoints(self) -> bool:
        d = self.delivered
        return d["position"] > -math.inf and d["velocity"] > -math.inf

    def torque(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """Torques [N m] applied for the plant step starting at ``t`` [s] from joint positions
        ``q`` [rad] and velocities ``qd`` [rad/s] (delivers the commands due first)."""
        self._stepping = True
        self._deliver(t)
        c, tau = self.command, self._tau
        fresh = self.fresh(t)
        self.stale = not fresh
        if self.delivered["effort"] > -math.inf:
            self.age_max = max(self.age_max, t - self.delivered["effort"])
        if fresh:
            tau[:] = c["effort"]
        else:
            self.stale_steps += 1
            tau[:] = 0.0
        if self.hybrid and self._setpoints():
            tau += c["stiffness"] * (c["position"] - q)
            if fresh:
                tau += c["damping"] * (c["velocity"] - qd)
            else:
                tau -= c["damping"] * qd
        np.clip(tau, -self.limit, self.limit, out=tau)
        return tau.copy()


def _stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _make_node_class():
    import rclpy
    from builtin_interfaces.msg import Time
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Imu, JointState
    from std_msgs.msg import Float64, Float64MultiArray

    from ..node import serve_pending
    from ..robots import ROBOT_NAMES, robot_info, robot_path
    from .mujoco_model import FreeBody, GroundOptions, MujocoPlant, pose_in_link

    class SimNode(Node):
        """The ``wbc_sim`` node (see the module docstring)."""

        def __init__(self, **kwargs) -> None:
            super().__init__("wbc_sim", **kwargs)
            T = Parameter.Type
            decl = {
                "robot": "quadruped",
                # a robot configuration (config/robots name or YAML path): model, joints,
                # locked joints, contact links and standing pose from it (overrides robot)
                "robot_config": "",
                "urdf_path": "",
                "robot_description": "",
                "floating_base": "",
                "mode": "realtime",
                "sim_rate": 1000.0,
                "real_time_factor": 1.0,
                "command_timeout": 0.05,
                # joint drives: effort | hybrid (own impedance loop at every plant step)
                "drive": "effort",
                # test options: commands reach the drives this late / none in this window
                "command_latency": 0.0,
                "command_dropout_start": 0.0,
                "command_dropout": 0.0,
                "lockstep_timeout": 1.0,
                "resend_period": 0.1,
                "start_paused": True,
                "clock_subscribers": 0,
                "duration": 0.0,
                "stamped_command_topic": "wbc_controller/joint_commands",
                "diagnostics_rate": 1.0,
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
                # a configuration's object (object_urdf): held in place this long [s simulated]
                "object_hold": 0.0,
                "object_odom_topic": "wbc_controller/object_odom",
                # the IMU's noise (std) [rad/s, rad/s, m/s^2, rad] and its random seed
                "imu_gyro_noise": 0.0,
                "imu_gyro_bias": 0.0,
                "imu_accelerometer_noise": 0.0,
                "imu_orientation_noise": 0.0,
                "imu_gyro_bias_walk": 0.0,
                "imu_accelerometer_bias": 0.0,
                "imu_accelerometer_bias_walk": 0.0,
                "imu_seed": 0,
                "encoder_position_noise": 0.0,
                "encoder_velocity_noise": 0.0,
                "encoder_resolution": 0.0,
                "encoder_seed": 0,
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
            configured = None  # (q0 in the plant's joint order, contact links) of a config
            grasped = None  # a configuration's object (object_urdf): plant FreeBody
            if str(p["robot_config"]).strip():
                from ..robot_config import load_robot_setup, robot_setup_state

                setup = load_robot_setup(str(p["robot_config"]).strip())
                model, joints, q_model = robot_setup_state(setup)
                o = 7 if model.floating_base else 0
                for j, x in setup.start_positions().items():  # e.g. fingers clear of the object
                    q_model[o + model.joint_index(j)] = x
                if setup.controller.object_urdf:
                    from ..controller_loading import _load_object

                    if not setup.grasp:
                        raise ValueError(f"{setup.path}: object_urdf needs a grasp group "
                                         "(hand_link, object_pose) to place the object")
                    # the controller's own parse of the object, placed in the hand
                    grasped = FreeBody.from_object(_load_object(setup.controller), pose_in_link(
                        model, q_model, setup.grasp["hand_link"], setup.grasp["object_pose"]))
                    self.hand_link = str(setup.grasp["hand_link"])
                info = None
                source = model.description.with_locked_joints(model.locked_joints)
                p["floating_base"] = "true" if model.floating_base else "false"
                if float(p["ground_height"]) != float(setup.controller.ground_height):
                    raise ValueError(
                        f"ground_height: {p['ground_height']} differs from the robot "
                        f"configuration's {setup.controller.ground_height}")
                q_plant = np.concatenate(
                    [q_model[:o], [q_model[o + model.joint_index(j)] for j in joints]])
                configured = (q_plant, list(setup.controller.contact_links))
            if not source:
                raise ValueError("robot/urdf_path/robot_description: no robot model given")
            fb = p["floating_base"]
            if fb == "":
                floating = bool(info["floating_base"]) if info else False
            elif str(fb).lower() in ("true", "false"):
                floating = str(fb).lower() == "true"
            else:
                raise ValueError(f"floating_base: expected true/false, got {fb!r}")
            self.mode = str(p["mode"])
            if self.mode not in MODES:
                raise ValueError(f"mode: {self.mode!r} is not one of {list(MODES)}")
            rate = float(p["sim_rate"])
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"sim_rate: must be > 0, got {rate}")
            rtf = float(p["real_time_factor"])
            if not (math.isfinite(rtf) and rtf >= 0):
                raise ValueError(f"real_time_factor: must be >= 0, got {rtf}")
            for nm in ("command_timeout", "lockstep_timeout", "resend_period", "diagnostics_rate"):
                v = float(p[nm])
                if not (math.isfinite(v) and v > 0):
                    raise ValueError(f"{nm}: must be finite and > 0, got {v!r}")
            self.command_timeout = float(p["command_timeout"])
            self.drive = str(p["drive"])
            if self.drive not in DRIVES:
                raise ValueError(f"drive: {self.drive!r} is not one of {list(DRIVES)}")
            for nm in ("command_latency", "command_dropout_start", "command_dropout"):
                v = float(p[nm])
                if not (math.isfinite(v) and v >= 0):
                    raise ValueError(f"{nm}: must be finite and >= 0 s, got {v!r}")
            self.lockstep_timeout = float(p["lockstep_timeout"])
            self.resend_period = float(p["resend_period"])
            self.duration = float(p["duration"])
            if not (math.isfinite(self.duration) and self.duration >= 0):
                raise ValueError(f"duration: must be >= 0 (0 = unlimited), got {self.duration!r}")
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
            bodies: tuple = () if grasped is None else (grasped,)
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
            if configured is not None:
                q0 = configured[0]
                self.contact_links = configured[1]
            else:
                q0 = self._initial_q(info, str(p["initial_pose"]))
                self.contact_links = list(info["contact_links"]) if info else []
            if configured is not None:  # the plant's feet on its ground (not dropping onto it)
                q0 = self.plant.place_on_ground(q0)
            self.plant.set_state(q0, np.zeros(self.plant.nv))
            #: the configuration's object: name, its pose held until object_hold [s], its
            #: position in the hand frame when let go (slip is measured from it)
            self.object_name = None if grasped is None else grasped.name
            self.object_hold = float(p["object_hold"])
            if not (math.isfinite(self.object_hold) and self.object_hold >= 0.0):
                raise ValueError(f"object_hold: must be >= 0 s, got {self.object_hold!r}")
            self._object_held = (None if grasped is None
                                 else self.plant.free_body_state(grasped.name)[0])
            self._object_start: np.ndarray | None = None
            self._object_slip = self._object_slip_max = 0.0
            self.world_frame = str(p["world_frame"])
            self.base_frame = str(p["base_frame"]) or self.plant.parsed.root
            self.publish_clock = bool(p["publish_clock"])
            self.publish_every = max(1, int(p["publish_every"]))
            if self.mode == "lockstep" and self.publish_every != 1:
                raise ValueError("publish_every: lockstep publishes every step (must be 1)")
            self.rate, self.rtf = rate, rtf
            # command state: the joint drives
            self.drives = Drives(self.n, self.plant.effort_limit, self.drive == "hybrid",
                                 self.command_timeout, float(p["command_latency"]),
                                 float(p["command_dropout_start"]),
                                 float(p["command_dropout"]))
            self._joint_index = {jn: i for i, jn in enumerate(self.plant.joint_names)}
            self._name_map: tuple[tuple[str, ...], np.ndarray] | None = None
            self.started = not bool(p["start_paused"])
            # a paused start also waits for the nodes on simulated time: a node whose /clock
            # subscription is not yet matched would see simulated time begin late (a reference
            # generator's timer then starts seconds behind on a loaded machine)
            self.clock_subscribers = int(p["clock_subscribers"])
            if self.clock_subscribers < 0:
                raise ValueError(f"clock_subscribers: must be >= 0, got {self.clock_subscribers}")
            self.finished = False
            self.counts = {
                "steps": 0,
                "matched_commands": 0,
                "missed_commands": 0,
                "stale_steps": 0,
                "dropped_commands": 0,
                "rejected_commands": 0,
                "ignored_commands": 0,
                "resent_states": 0,
            }
            self._cmd_seq = 0  # valid commands received (realtime: new command per step?)
            self._cmd_seq_at_step = 0
            self._state_ns = 0  # stamp of the last published state [ns]
            self._t_sent = time.monotonic()  # wall time the pending state was (re-)sent
            self._t_published = self._t_sent  # wall time it was first published
            self._ready = False  # lockstep: a matched command waits for the pacing
            self._base_z_min = math.inf  # lowest base height over all steps [m]
            self._degraded = False  # lockstep: a command was missed and none has matched since
            # wall time of one step at the requested pace (as fast as possible: one step period)
            self._step_wall = 1.0 / (rate * rtf) if rtf > 0 else 1.0 / rate
            # messages and endpoints
            # reliable: matches both reliable (ros2 topic echo, robot_state_publisher) and
            # best-effort subscribers (the controller)
            qos_state = QoSProfile(
                depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE
            )
            qos_cmd = QoSProfile(
                depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE
            )
            # rclpy gives every publisher and subscription two QoS event handlers
            # (incompatible QoS / type warnings) by default, each added to the executor's wait
            # set at every wait: they were 2/3 of the entities the single-threaded executor
            # rebuilds its wait set from per callback (a lockstep step waits up to three
            # times). The other end of each topic (a controller's publishers and
            # subscriptions) still reports an incompatible QoS.
            quiet = PublisherEventCallbacks(use_default_callbacks=False)

            def publisher(msg_type, topic: str, qos):
                return self.create_publisher(msg_type, topic, qos, event_callbacks=quiet)

            self.pub_clock = publisher(Clock, "/clock", 10)
            self.pub_js = publisher(JointState, "joint_states", qos_state)
            self.pub_odom = publisher(Odometry, "odom", qos_state) if floating else None
            self.pub_truth = (publisher(Odometry, "ground_truth/odom", qos_state)
                              if floating else None)
            self.pub_imu = publisher(Imu, "imu", qos_state) if floating else None
            self.imu = SimImu(*(float(p[f"imu_{k}"]) for k in (
                "gyro_noise", "gyro_bias", "accelerometer_noise", "orientation_noise")),
                seed=int(p["imu_seed"]), **{k: float(p[f"imu_{k}"]) for k in (
                    "gyro_bias_walk", "accelerometer_bias", "accelerometer_bias_walk")})
            self.encoders = SimEncoders(*(float(p[f"encoder_{k}"]) for k in (
                "position_noise", "velocity_noise", "resolution")), seed=int(p["encoder_seed"]))
            self._js_reading: tuple[np.ndarray, np.ndarray] | None = None
            # the IMU message, built once (REP 145: the covariances' diagonals are the noise
            # variances; zero = exact)
            self._imu_msg = Imu()
            self._imu_msg.header.frame_id = self.base_frame
            for cov, var in ((self._imu_msg.orientation_covariance, self.imu.orientation_noise),
                             (self._imu_msg.angular_velocity_covariance, self.imu.gyro_noise),
                             (self._imu_msg.linear_acceleration_covariance,
                              self.imu.accelerometer_noise)):
                cov[0] = cov[4] = cov[8] = var * var
            self.pub_object_odom = (None if self.object_name is None else publisher(
                Odometry, str(p["object_odom_topic"]), qos_state))
            self.pub_wrench = {
                ln: publisher(WrenchStamped, f"~/contact_wrench/{ln}", 10)
                for ln in self.contact_links
            }
            self.pub_normal = publisher(Float64, "~/normal_force", 10)
            self.pub_diag = publisher(DiagnosticArray, "/diagnostics", 10)
            # the messages published at every step, built once: a step fills their fields in
            # place (the joint arrays through numpy views of their array.array buffers, which
            # rclpy serializes without a per-element check) and builds no message
            self._clock_msg = Clock()
            self._js_msg = JointState()
            self._js_msg.name = list(self.plant.joint_names)
            self._js_msg.position, self._js_msg.velocity, self._js_msg.effort = (
                array.array("d", bytes(8 * self.n)) for _ in range(3))
            #: (position, velocity, effort) of ``_js_msg`` as float64 views
            self._js_views = tuple(np.frombuffer(a, dtype=np.float64) for a in (
                self._js_msg.position, self._js_msg.velocity, self._js_msg.effort))
            self._odom_msg = Odometry()
            self._object_odom_msg = Odometry()
            for od, child in ((self._odom_msg, self.base_frame),
                              (self._object_odom_msg, self.object_name or "")):
                od.header.frame_id, od.child_frame_id = self.world_frame, child
            self._wrench_msg = {ln: WrenchStamped() for ln in self.contact_links}
            for w in self._wrench_msg.values():
                w.header.frame_id = self.world_frame
            self._normal_msg = Float64()
            hybrid = self.drive == "hybrid"
            quiet_sub = SubscriptionEventCallbacks(use_default_callbacks=False)
            #: lockstep, hybrid drive: {gain interface: the subscription served after it}
            self._next_sub: dict = {}
            if self.mode == "realtime":
                for iface in INTERFACES if hybrid else ("effort",):
                    self.create_subscription(
                        Float64MultiArray, f"{iface}_controller/commands",
                        lambda msg, i=iface: self._on_command(msg, i), qos_cmd,
                        event_callbacks=quiet_sub)
            else:
                # the hybrid drive's gains (unstamped, as ros2_control's): subscribed before
                # the stamped record, so the executor takes a tick's gains (published first)
                # before its record
                gains = [self.create_subscription(
                    Float64MultiArray, f"{iface}_controller/commands",
                    lambda msg, i=iface: self._on_command(msg, i), qos_cmd,
                    event_callbacks=quiet_sub) for iface in (
                        ("stiffness", "damping") if hybrid else ())]
                # depth 10: a command must not be superseded by the record of a re-sent state
                record = self.create_subscription(
                    JointState, str(p["stamped_command_topic"]), self._on_stamped_command,
                    QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                               reliability=ReliabilityPolicy.RELIABLE),
                    event_callbacks=quiet_sub)
                if hybrid:
                    # a tick's stiffness, damping and record arrive back to back: each gain's
                    # callback serves the next one's waiting message at once (in that order,
                    # one each), so a step costs the executor one wait instead of three
                    self._next_sub = {"stiffness": gains[1], "damping": record}
            self._Time = Time
            self._Diag, self._DiagStatus, self._KeyValue = (
                DiagnosticArray, DiagnosticStatus, KeyValue)
            self._wall0 = time.monotonic()
            self._sim0 = self.plant.time
            self._diag_prev = (time.monotonic(), self.plant.time)
            if self.mode == "realtime":
                period = 1.0 / (rate * rtf) if rtf > 0 else 0.0
                self.timer = self.create_timer(max(period, 1e-4), self._on_timer)
            else:
                # lockstep steps from the command callback; this timer only re-sends, times
                # out and paces. It ticks at the step period only while it steps (pacing a
                # matched command, or stepping in real time after a miss), else at a coarse
                # period: each tick costs the executor a wait-set rebuild, and at the step
                # period they were most of the simulator's time per lockstep step
                fast = min(0.002, self._step_wall)
                self._timer_periods = (max(fast, min(0.01, 0.5 * self.resend_period,
                                                     0.5 * self.lockstep_timeout)), fast)
                self._timer_fast = False
                self.timer = self.create_timer(self._timer_periods[0], self._on_lockstep_timer)
            self.create_timer(1.0 / float(p["diagnostics_rate"]), self._publish_diagnostics)
            self._publish()
            self.get_logger().info(
                f"simulating {self.plant.parsed.name}: {self.n} joints, "
                f"{'floating' if floating else 'fixed'} base, {self.mode} at {rate:g} Hz, "
                f"real-time factor {rtf:g}, ground {p['ground']} mu={ground.mu:g}"
                + ("; paused until the first command" if not self.started else "")
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
        def _reject(self, what: str) -> None:
            self.counts["rejected_commands"] += 1
            self.get_logger().error(f"command rejected: {what}", throttle_duration_sec=1.0)

        def _accept(self, values: dict[str, np.ndarray]) -> None:
            """A valid command (``{interface: values}``): to the drives; an effort command
            starts a paused simulation."""
            self.drives.receive(self.plant.time, values)
            if "effort" not in values:
                return
            self._cmd_seq += 1
            if not self.started:
                waiting = self.pub_clock.get_subscription_count()
                if waiting < self.clock_subscribers:
                    self.get_logger().info(
                        f"first command received; waiting for {self.clock_subscribers} nodes on "
                        f"simulated time (/clock has {waiting} subscribers)",
                        throttle_duration_sec=2.0)
                    return
                self.started = True
                self._wall0, self._sim0 = time.monotonic(), self.plant.time
                self.get_logger().info("first command received: simulation running")

        def _on_command(self, msg, interface: str) -> None:
            """ros2_control-style unstamped command of one interface (realtime: every
            interface of the drive; lockstep: the hybrid drive's gains)."""
            data = np.asarray(msg.data, dtype=float)
            topic = f"{interface}_controller/commands"
            if data.shape != (self.n,):
                return self._reject(f"{topic}: expected {self.n} values, got {data.shape[0]}")
            if not np.all(np.isfinite(data)):
                return self._reject(f"{topic}: non-finite value")
            if interface in ("stiffness", "damping") and np.any(data < 0.0):
                return self._reject(f"{topic}: negative gain")
            self._accept({interface: data})
            nxt = self._next_sub.get(interface)
            if nxt is not None:
                serve_pending(nxt, limit=1)

        def _command_by_name(self, msg) -> dict[str, np.ndarray] | None:
            """The stamped record's effort (hybrid drive: and its position / velocity
            set-points) in the simulated joint order; None (counted) if invalid."""
            names = tuple(msg.name)
            if self._name_map is None or self._name_map[0] != names:
                unknown = [jn for jn in names if jn not in self._joint_index]
                missing = [jn for jn in self.plant.joint_names if jn not in names]
                if unknown or missing or len(set(names)) != len(names):
                    self._reject(f"joints must name each simulated joint once; unknown "
                                 f"{unknown}, missing {missing}")
                    return None
                self._name_map = (names, np.array([names.index(jn) for jn in
                                                   self.plant.joint_names], dtype=np.int64))
            fields = ("effort", "position", "velocity") if self.drive == "hybrid" else ("effort",)
            out = {}
            for f in fields:
                x = np.asarray(getattr(msg, f), dtype=float)
                if x.shape != (len(names),):
                    self._reject(f"expected {len(names)} {f} values, got {x.shape[0]}")
                    return None
                if not np.all(np.isfinite(x)):
                    self._reject(f"non-finite {f}")
                    return None
                out[f] = x[self._name_map[1]]
            return out

        def _on_stamped_command(self, msg) -> None:
            """lockstep: the command for the pending state (matched by stamp) advances one step.

            Every message is validated first (a malformed one is a counted rejection whatever
            its stamp); a valid one for another state is counted as ignored.
            """
            if self.finished:
                return
            command = self._command_by_name(msg)
            if command is None:
                return
            if _stamp_ns(msg.header.stamp) != self._state_ns:
                self.counts["ignored_commands"] += 1  # late, or for a re-sent state
                return
            self._accept(command)
            if not self.started:  # paused: the state is re-sent until the start conditions hold
                return
            self.counts["matched_commands"] += 1
            if self._degraded:
                self._degraded = False
                self.get_logger().info("commands match the states again: lockstep resumed")
            self._ready = True
            self._advance_lockstep()

        # ---- stepping --------------------------------------------------------------------
        def _ahead_of_wall(self) -> bool:
            if self.rtf <= 0:
                return False
            return self.plant.time - self._sim0 > (time.monotonic() - self._wall0) * self.rtf

        def _lockstep_timer_fast(self, fast: bool) -> None:
            """The lockstep timer at the step period (``fast``) or at the coarse one."""
            if fast == self._timer_fast:
                return
            self._timer_fast = fast
            self.timer.timer_period_ns = int(self._timer_periods[fast] * 1e9)
            if fast:  # the next tick one step period from now, not at the coarse one's time
                self.timer.reset()

        def _advance_lockstep(self) -> None:
            if not self._ready:
                return
            if self._ahead_of_wall():
                self._lockstep_timer_fast(True)  # paced: it steps when wall time caught up
                return
            self._ready = False
            self.step_once()

        def _on_lockstep_timer(self) -> None:
            if self.finished:
                return
            if self._ready:
                self._advance_lockstep()
                return
            now = time.monotonic()
            # after a miss the controller is known to be late or gone: do not stall every step
            # for lockstep_timeout again, wait one real-time period per step until a command
            # matches again (then lockstep resumes)
            wait = self._step_wall if self._degraded else self.lockstep_timeout
            if self.started and now - self._t_published > wait:
                self.counts["missed_commands"] += 1
                if not self._degraded:
                    self._degraded = True
                    self.get_logger().warning(
                        f"no command for the state at t={self.plant.time:.3f} s within "
                        f"{self.lockstep_timeout:g} s: stepping in real time with the fallback "
                        "command until commands match the states again")
                self.step_once()
            elif now - self._t_sent > self.resend_period:
                self.counts["resent_states"] += 1
                self._publish(resend=True)
            if not self.finished:
                self._lockstep_timer_fast(self._degraded)

        def _on_timer(self) -> None:
            """realtime: catch up with wall time (bounded: never more than 20 steps)."""
            if self.finished:
                return
            if not self.started:
                if time.monotonic() - self._t_sent > self.resend_period:
                    self.counts["resent_states"] += 1
                    self._publish(resend=True)
                return
            if self.rtf > 0:
                target = self._sim0 + (time.monotonic() - self._wall0) * self.rtf
                n = int(min(20, max(1, round((target - self.plant.time) * self.rate))))
            else:
                n = 20
            for _ in range(n):
                if self._cmd_seq == self._cmd_seq_at_step:
                    self.counts["missed_commands"] += 1
                self._cmd_seq_at_step = self._cmd_seq
                self.step_once()
                if self.finished:
                    return

        def step_once(self) -> None:
            """One plant step with the drives' torques at the current state, then publish."""
            q, v = self.plant.get_state()
            o, ov = (7, 6) if self.floating else (0, 0)
            d = self.drives
            self.plant.step(d.torque(self.plant.time, q[o:], v[ov:]))
            self.counts["steps"] += 1
            self.counts["stale_steps"] = d.stale_steps
            self.counts["dropped_commands"] = d.dropped
            if self.object_name is not None:
                self._track_object()
            if self.floating:
                self._base_z_min = min(self._base_z_min, float(self.plant.get_state()[0][2]))
            if self.duration > 0 and self.plant.time >= self.duration - 0.5 / self.rate:
                self.finished = True
                # nothing steps any more: the stepping timer's callbacks (500 Hz in lockstep)
                # alone kept the executor on ~40 % of a core while waiting to be stopped
                self.timer.cancel()
                self.get_logger().info(f"duration {self.duration:g} s reached: stopped")
            if self.counts["steps"] % self.publish_every == 0 or self.finished:
                self._publish()

        def _object_in_hand(self) -> np.ndarray:
            ph, Rh = self.plant.body_pose(self.hand_link)
            return Rh.T @ (self.plant.body_pose(self.object_name)[0] - ph)

        def _track_object(self) -> None:
            """Hold the object in place until ``object_hold``, then measure its slip."""
            if self.plant.time < self.object_hold:
                self.plant.set_free_body_state(self.object_name, self._object_held)
                return
            if self._object_start is None:
                self._object_start = self._object_in_hand()
            self._object_slip = float(np.linalg.norm(self._object_in_hand()
                                                     - self._object_start))
            self._object_slip_max = max(self._object_slip_max, self._object_slip)

        @staticmethod
        def _odometry(od, stamp, q: np.ndarray, v: np.ndarray):
            """``od`` (nav_msgs/Odometry, frames set) filled: pose in ``world_frame``, twist in
            the child frame."""
            od.header.stamp = stamp
            pp, qq = od.pose.pose.position, od.pose.pose.orientation
            pp.x, pp.y, pp.z = (float(x) for x in q[0:3])
            qq.x, qq.y, qq.z, qq.w = (float(x) for x in q[3:7])
            tl, ta = od.twist.twist.linear, od.twist.twist.angular
            tl.x, tl.y, tl.z = (float(x) for x in v[0:3])
            ta.x, ta.y, ta.z = (float(x) for x in v[3:6])
            return od

        def _stamp(self, out=None):
            """The simulated time as builtin_interfaces/Time (``out`` filled if given)."""
            sec, nsec = divmod(int(round(self.plant.time * 1e9)), 1_000_000_000)
            if out is None:
                return self._Time(sec=sec, nanosec=nsec)
            out.sec, out.nanosec = sec, nsec
            return out

        def _publish(self, resend: bool = False) -> None:
            # every message of a step carries this one stamp object (each publish serializes
            # the message at once)
            stamp = self._stamp(self._clock_msg.clock)
            self._state_ns = _stamp_ns(stamp)
            self._t_sent = time.monotonic()
            if not resend:
                self._t_published = self._t_sent
            if self.publish_clock:
                self.pub_clock.publish(self._clock_msg)
            q, v = self.plant.get_state()
            o, ov = (7, 6) if self.floating else (0, 0)
            if self.pub_odom is not None:  # before joint_states: the controller ticks on those
                # (every topic below is published to subscribers only: a message costs ~20 us
                # a step, and a lockstep step waits for all of them)
                odom_out = self.pub_odom.get_subscription_count()
                truth_out = self.pub_truth.get_subscription_count()
                if odom_out or truth_out:
                    od = self._odometry(self._odom_msg, stamp, q, v)
                    if odom_out:
                        self.pub_odom.publish(od)
                    if truth_out:
                        self.pub_truth.publish(od)
                gyro, accel, quat = self.imu.sample(self.plant.time, q[:7], v[:6])
                if self.pub_imu.get_subscription_count():
                    m = self._imu_msg
                    m.header.stamp = stamp
                    av, la, mo = m.angular_velocity, m.linear_acceleration, m.orientation
                    av.x, av.y, av.z = (float(x) for x in gyro)
                    la.x, la.y, la.z = (float(x) for x in accel)
                    mo.x, mo.y, mo.z, mo.w = (float(x) for x in quat)
                    self.pub_imu.publish(m)
            if self.pub_object_odom is not None:  # likewise
                bq, bv = self.plant.free_body_state(self.object_name)
                self.pub_object_odom.publish(self._odometry(self._object_odom_msg, stamp, bq, bv))
            js = self._js_msg
            js.header.stamp = stamp
            if not self.encoders.exact:  # a re-sent state keeps its reading
                if not resend or self._js_reading is None:
                    qj, vj = q[o:].astype(float), v[ov:].astype(float)
                    self.encoders.measure(qj, vj)
                    self._js_reading = (qj, vj)
                qj, vj = self._js_reading
            else:
                qj, vj = q[o:], v[ov:]
            pos, vel, eff = self._js_views
            pos[:], vel[:] = qj, vj
            if self.counts["steps"]:
                eff[:] = self.plant.applied_torques()
            self.pub_js.publish(js)
            if resend:
                return
            wrench_out = [(ln, pub) for ln, pub in self.pub_wrench.items()
                          if pub.get_subscription_count()]
            if wrench_out:
                forces = self.plant.link_contact_forces()
                for ln, pub in wrench_out:
                    f = forces.get(ln, (0.0, 0.0, 0.0))
                    w = self._wrench_msg[ln]
                    w.header.stamp = stamp
                    w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(x) for x in f)
                    pub.publish(w)
            if self.pub_normal.get_subscription_count():
                self._normal_msg.data = float(self.plant.total_normal_force())
                self.pub_normal.publish(self._normal_msg)

        # ---- diagnostics -----------------------------------------------------------------
        def _publish_diagnostics(self) -> None:
            wall, sim = time.monotonic(), self.plant.time
            w0, s0 = self._diag_prev
            self._diag_prev = (wall, sim)
            rtf = (sim - s0) / (wall - w0) if wall > w0 else 0.0
            state = ("finished" if self.finished else "running" if self.started
                     else "holding (waiting for the first command)" if not self._cmd_seq
                     else f"holding (waiting for {self.clock_subscribers} /clock subscribers)")
            st = self._DiagStatus()
            st.name = f"{self.get_fully_qualified_name()}: simulator"
            st.hardware_id = self.plant.parsed.name
            bad = self.counts["missed_commands"] or self.counts["stale_steps"]
            st.level = self._DiagStatus.WARN if bad or not self.started else self._DiagStatus.OK
            st.message = f"{self.mode}, {state}"
            kv = {"mode": self.mode, "drive": self.drive, "state": state,
                  "sim_time": f"{sim:.6f}", "real_time_factor": f"{rtf:.3f}",
                  **{k: str(v) for k, v in self.counts.items()},
                  "command_age_max": f"{self.drives.age_max:.6f}"}
            if self.floating:
                kv["base_height"] = f"{self.plant.get_state()[0][2]:.5f}"
                kv["base_height_min"] = f"{self._base_z_min:.5f}"
            if self.object_name is not None:
                kv["object_slip"] = f"{self._object_slip:.5f}"
                kv["object_slip_max"] = f"{self._object_slip_max:.5f}"
            st.values = [self._KeyValue(key=k, value=v) for k, v in kv.items()]
            arr = self._Diag()
            arr.header.stamp = self._stamp()
            arr.status = [st]
            self.pub_diag.publish(arr)

    return SimNode, rclpy


def SimNode(**kwargs):  # noqa: N802 - factory so importing this module needs no rclpy
    """Create the ``wbc_sim`` node (rclpy must be initialized)."""
    cls, _ = _make_node_class()
    return cls(**kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """``wbc_sim`` console script: run the simulation node until interrupted."""
    cls, rclpy = _make_node_class()
    from ..ros_executor import spin_until_shutdown

    rclpy.init(args=list(argv) if argv is not None else sys.argv)
    return spin_until_shutdown("wbc_sim", cls)

if __name__ == "__main__":
    sys.exit(main())
