"""Start the wbc_dynamics whole-body controller node.

    ros2 launch wbc_dynamics wbc_controller.launch.py robot:=quadruped
    ros2 launch wbc_dynamics wbc_controller.launch.py config_file:=/path/my_robot.yaml \\
        robot_description_file:=/path/my_robot.urdf namespace:=robot1 use_sim_time:=true

Arguments
    robot                   bundled robot whose config/<robot>.yaml is the default config_file
    config_file             parameter file (default: the package's config/<robot>.yaml)
    robot_description_file  URDF file; if set, its text becomes the ``robot_description``
                            parameter (overrides the config's model source)
    namespace               node namespace (topics are relative, so they follow it)
    use_sim_time            use /clock (simulation)
    autostart               configure + activate at start-up (false: drive the lifecycle yourself)
    commands_topic          where torque commands go (remap of ``effort_controller/commands``)
    joint_states_topic      where joint states come from (remap of ``joint_states``)
    odom_topic              floating-base state (remap of ``odom``)
    log_level               ROS log level of the node
"""

from __future__ import annotations

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGS = (
    ("robot", "arm", "bundled robot: quadruped | arm | branched | humanoid"),
    ("config_file", "", "parameter YAML (empty: <share>/config/<robot>.yaml)"),
    ("robot_description_file", "", "URDF file loaded into the robot_description parameter"),
    ("namespace", "", "node namespace"),
    ("use_sim_time", "false", "use simulation time (/clock)"),
    ("autostart", "true", "configure and activate at start-up"),
    ("commands_topic", "effort_controller/commands", "torque command topic (remap)"),
    ("joint_states_topic", "joint_states", "joint state topic (remap)"),
    ("odom_topic", "odom", "floating-base odometry topic (remap)"),
    ("log_level", "info", "node log level"),
)


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def _controller(context, *args, **kwargs):
    def cfg(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    config_file = cfg("config_file")
    if not config_file:
        from ament_index_python.packages import get_package_share_directory

        config_file = f"{get_package_share_directory('wbc_dynamics')}/config/{cfg('robot')}.yaml"
    overrides: dict = {
        "use_sim_time": _truthy(cfg("use_sim_time")),
        "autostart": _truthy(cfg("autostart")),
    }
    urdf_file = cfg("robot_description_file")
    if urdf_file:
        with open(urdf_file, encoding="utf-8") as f:
            overrides["robot_description"] = f.read()
    return [
        Node(
            package="wbc_dynamics",
            executable="wbc_controller",
            name="wbc_controller",
            namespace=cfg("namespace"),
            output="screen",
            emulate_tty=True,
            parameters=[config_file, overrides],
            remappings=[
                ("effort_controller/commands", cfg("commands_topic")),
                ("joint_states", cfg("joint_states_topic")),
                ("odom", cfg("odom_topic")),
            ],
            arguments=["--ros-args", "--log-level", cfg("log_level")],
        )
    ]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(n, default_value=d, description=desc) for n, d, desc in ARGS]
        + [OpaqueFunction(function=_controller)]
    )
