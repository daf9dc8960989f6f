"""MuJoCo simulation + whole-body controller + reference: the closed loop over ROS 2.

    ros2 launch wbc_dynamics sim.launch.py                      # quadruped, weight shift
    ros2 launch wbc_dynamics sim.launch.py method:=qp_coulomb reference:=trot friction:=low
    ros2 launch wbc_dynamics sim.launch.py robot:=arm method:=none reference:=sinusoid

Starts ``wbc_sim`` (MuJoCo, publishes /clock, joint_states, odom; takes
effort_controller/commands), ``wbc_controller`` (config/<robot>.yaml with use_sim_time and the
arguments below) and ``wbc_reference`` (publishes wbc_controller/reference), all on simulated
time. For an in-process loop without DDS see ``python -m wbc_dynamics.sim.demo``.

Arguments
    robot         quadruped | arm (bundled robots; arm runs without the box)
    method        controller method (none | lcp_noslip | lcp_coulomb | qp_coulomb | qp_noslip)
    reference     quadruped: stand | shift | trot; arm: stand | sinusoid
    friction      high | low (the simulator's ground; the controller gets the same mu)
    ground        rigid | compliant
    sim_rate      simulator step rate [Hz]; real_time_factor: pacing (0 = as fast as possible)
    kp, kd        PD gains of the controller [1/s^2], [1/s]
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGS = (
    ("robot", "quadruped", "quadruped | arm"),
    ("method", "qp_coulomb", "controller method"),
    ("reference", "shift", "reference kind"),
    ("friction", "high", "high | low"),
    ("ground", "rigid", "rigid | compliant"),
    ("sim_rate", "1000.0", "simulator rate [Hz]"),
    ("real_time_factor", "1.0", "simulator pacing (0 = as fast as possible)"),
    ("kp", "300.0", "controller position gain [1/s^2]"),
    ("kd", "35.0", "controller velocity gain [1/s]"),
)
MU = {"high": 10.0, "low": 0.1}  # = wbc_dynamics.sim.mujoco_model.HIGH_FRICTION / LOW_FRICTION


def _nodes(context, *args, **kwargs):
    def cfg(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    from ament_index_python.packages import get_package_share_directory

    share = get_package_share_directory("wbc_dynamics")
    robot = cfg("robot")
    friction = cfg("friction")
    mu = MU.get(friction)
    if mu is None:
        mu = float(friction)
    sim_rate = float(cfg("sim_rate"))
    sim = Node(package="wbc_dynamics", executable="wbc_sim", name="wbc_sim", output="screen",
               parameters=[{"robot": robot, "friction": friction, "ground": cfg("ground"),
                            "sim_rate": sim_rate,
                            "real_time_factor": float(cfg("real_time_factor")),
                            "initial_pose": "standing" if robot == "quadruped" else "grasp"}])
    ctl = Node(package="wbc_dynamics", executable="wbc_controller", name="wbc_controller",
               output="screen",
               parameters=[f"{share}/config/{robot}.yaml",
                           {"use_sim_time": True, "method": cfg("method"), "friction": mu,
                            "control_rate": sim_rate, "kp": [float(cfg("kp"))],
                            "kd": [float(cfg("kd"))]}])
    ref = Node(package="wbc_dynamics", executable="wbc_reference", name="wbc_reference",
               output="screen",
               parameters=[{"use_sim_time": True, "robot": robot, "kind": cfg("reference"),
                            "topic": "wbc_controller/reference", "rate": 200.0}])
    return [sim, ctl, ref]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([*(DeclareLaunchArgument(n, default_value=d, description=h)
                                for n, d, h in ARGS), OpaqueFunction(function=_nodes)])
