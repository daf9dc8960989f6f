"""MuJoCo simulation + whole-body controller + reference: the closed loop over ROS 2.

    ros2 launch wbc_dynamics sim.launch.py                      # quadruped, weight shift
    ros2 launch wbc_dynamics sim.launch.py method:=qp_coulomb reference:=trot friction:=low
    ros2 launch wbc_dynamics sim.launch.py robot:=arm method:=none reference:=sinusoid
    ros2 launch wbc_dynamics sim.launch.py robot:=go2 reference:=walk velocity:=0.3,0.0,0.2
    ros2 launch wbc_dynamics sim.launch.py robot:=go2 reference:=walk velocity:='0.3,0,0@4;0,0.3,0'

Starts ``wbc_sim`` (MuJoCo, publishes /clock, joint_states, odom, ground_truth/odom, imu),
``wbc_controller`` (config/<robot>.yaml with use_sim_time and the arguments below) and
``wbc_reference`` (publishes wbc_controller/reference and, for the trot,
wbc_controller/contact_schedule and wbc_controller/contact_lift_off), all on simulated time. By
default the simulator's sensors are realistic (noisy, quantized encoders; an IMU with MEMS noise)
and a floating base runs on the
controller's own estimate from them (``base_state:=odom sensing:=exact``: the exact state). The
simulator runs in
``lockstep``: it holds the robot in its initial pose until the controller's first command, then
advances one step only when the command computed for that step's state has arrived
(``wbc_controller/joint_commands``, matched by stamp), so a slow first start or a loaded machine
slows the simulation down instead of letting the robot fall. ``mode:=realtime`` is the free-running
alternative (the simulator applies the latest ``effort_controller/commands`` at ``sim_rate`` and
reports missed commands and its real-time factor in /diagnostics). For an in-process loop without
DDS see ``python -m wbc_dynamics.sim.demo``.

Arguments
    robot         quadruped | arm (bundled robots; arm runs without the box) | a robot
                  configuration: a config/robots name (go1, go2, talos, g1, panda, ...) or a YAML
                  path
    method        controller method (none | lcp_noslip | lcp_coulomb | qp_coulomb | qp_noslip)
    reference     quadruped: stand | shift | trot | walk; arm: stand | sinusoid; a configuration:
                  stand | sway | com_sway | trot | walk (quadrupeds) | sinusoid (arms); walk: the
                  controller's trot (gait: trot) from the cmd_vel the reference node publishes
    velocity      reference walk: that cmd_vel, forward,left,yaw_rate [m/s, m/s, rad/s], or a
                  velocity profile: such segments each held @duration [s], separated by ';'
                  (above: 4 s forward, then left); the last one without @duration holds for
                  ever, after a timed last one the command is zero
    friction      high | low (the simulator's ground; the controller gets the same mu)
    ground        rigid | compliant
    mode          lockstep | realtime (simulator stepping, see above)
    sim_rate      simulator step rate [Hz] (= the controller's control_rate)
    real_time_factor  pacing: upper bound of simulated / wall time (0 = as fast as possible)
    duration      simulated seconds after which the simulator stops stepping (0 = unlimited)
    kp, kd        PD gains of the controller [1/s^2], [1/s] (empty: config/<robot>.yaml's)
    drive         effort | hybrid: the simulator's joint drives (hybrid: each runs its own
                  impedance loop at every plant step on the controller's set-points and gains;
                  empty: hybrid when the controller sends the hybrid drive command)
    drive_stiffness, drive_damping  the controller's hybrid drive gains [N m/rad], [N m s/rad],
                  one value for every joint (empty: the configuration's; > 0: the controller
                  publishes the hybrid drive command)
    base_state    imu | odom: a floating base's state as the controller's own estimate from the
                  simulator's IMU (typical MEMS noise) and the joint states (default; the
                  estimate on wbc_controller/odom, the truth on ground_truth/odom), or the
                  simulator's exact odom
    sensing       realistic | exact: the simulator's sensors (realistic: encoders with 1 mrad /
                  0.02 rad/s noise and 14-bit quantization, an IMU with typical MEMS noise)
    namespace     namespace of the three nodes
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from wbc_dynamics.sim.launch_plan import SIM_LAUNCH_ARGS, sim_launch_plan


def _nodes(context, *args, **kwargs):
    from ament_index_python.packages import get_package_share_directory

    values = {name: LaunchConfiguration(name).perform(context) for name, _, _ in SIM_LAUNCH_ARGS}
    ns = values["namespace"]
    plan = sim_launch_plan(values, get_package_share_directory("wbc_dynamics"))
    return [Node(package="wbc_dynamics", executable=n.executable, name=n.name, namespace=ns,
                 output="screen", parameters=n.parameters) for n in plan]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([*(DeclareLaunchArgument(n, default_value=d, description=h)
                                for n, d, h in SIM_LAUNCH_ARGS), OpaqueFunction(function=_nodes)])
