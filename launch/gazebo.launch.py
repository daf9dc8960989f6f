"""Gazebo (gz sim) + gz_ros2_control + the whole-body controller, for users who have Gazebo.

    ros2 launch wbc_dynamics gazebo.launch.py            # quadruped, qp_coulomb

NOT exercised in CI (Gazebo is not installed there); written from the documented interfaces of
ros_gz_sim, gz_ros2_control and controller_manager. Needs ``ros-<distro>-ros-gz`` and
``ros-<distro>-gz-ros2-control``.

Starts: gz sim (empty world), robot_state_publisher with ``robots/quadruped_ros2_control.urdf``
(the bundled quadruped plus ``<ros2_control>`` tags; controllers file substituted below), spawns
it 0.2 m above the ground, spawns ``joint_state_broadcaster`` and ``effort_controller`` (an
effort ForwardCommandController, ``config/quadruped_controllers.yaml``), bridges /clock and the
base odometry (gz OdometryPublisher -> ``odom``), and starts ``wbc_controller`` with
``config/quadruped.yaml`` on simulated time.
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context, *args, **kwargs):
    from ament_index_python.packages import get_package_share_directory

    share = get_package_share_directory("wbc_dynamics")
    controllers = f"{share}/config/quadruped_controllers.yaml"
    with open(f"{share}/robots/quadruped_ros2_control.urdf", encoding="utf-8") as f:
        urdf = f.read().replace("__CONTROLLERS_YAML__", controllers)
    method = LaunchConfiguration("method").perform(context)
    gz = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            f"{get_package_share_directory('ros_gz_sim')}/launch/gz_sim.launch.py"),
        launch_arguments={"gz_args": "-r empty.sdf"}.items())
    rsp = Node(package="robot_state_publisher", executable="robot_state_publisher",
               parameters=[{"robot_description": urdf, "use_sim_time": True}])
    spawn = Node(package="ros_gz_sim", executable="create",
                 arguments=["-topic", "robot_description", "-name", "quadruped", "-z", "0.2"])
    bridge = Node(package="ros_gz_bridge", executable="parameter_bridge",
                  arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock",
                             "/model/quadruped/odometry@nav_msgs/msg/Odometry[gz.msgs.Odometry"],
                  remappings=[("/model/quadruped/odometry", "odom")])
    spawners = [Node(package="controller_manager", executable="spawner", arguments=[name])
                for name in ("joint_state_broadcaster", "effort_controller")]
    ctl = Node(package="wbc_dynamics", executable="wbc_controller", name="wbc_controller",
               output="screen",
               parameters=[f"{share}/config/quadruped.yaml",
                           {"use_sim_time": True, "method": method, "robot_description": urdf}])
    return [gz, rsp, spawn, bridge, *spawners, ctl]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        DeclareLaunchArgument("method", default_value="qp_coulomb",
                              description="controller method"),
        OpaqueFunction(function=_nodes)])
