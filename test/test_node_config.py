"""Every shipped config/<robot>.yaml: parsed by rcl's YAML parser, lists every node parameter,
and configures the node (model, contact model, kernels warmed) in process."""

from __future__ import annotations

import os

import pytest
import yaml

rclpy = pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")

from lifecycle_msgs.msg import State  # noqa: E402
from rclpy.lifecycle import TransitionCallbackReturn  # noqa: E402

from wbc_dynamics.node import PARAMETERS, WbcControllerNode  # noqa: E402
from wbc_dynamics.robots import robot_info  # noqa: E402

CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config")
ROBOTS = ("quadruped", "arm", "branched", "humanoid")


@pytest.mark.parametrize("robot", ROBOTS)
def test_robot_config_lists_every_parameter_and_configures(ros_env, robot):
    path = os.path.join(CONFIG, f"{robot}.yaml")
    params = yaml.safe_load(open(path))["/**"]["ros__parameters"]
    assert set(params) == set(PARAMETERS), "config must list every node parameter"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=["--ros-args", "--params-file", path])
    try:
        node = WbcControllerNode(context=ctx)
        assert node.get_parameter("robot").value == robot
        assert list(node.get_parameter("joints").value) == robot_info(robot)["joint_names"]
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node._state_machine.current_state[0] == State.PRIMARY_STATE_INACTIVE
        ctl = node.controller
        assert ctl.method == params["method"] and ctl.floating_base == params["floating_base"]
        assert ctl.joint_names == params["joints"]
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


@pytest.mark.parametrize("robot", ROBOTS)
def test_ros2_control_example_matches_joint_order(robot):
    d = yaml.safe_load(open(os.path.join(CONFIG, f"{robot}_controllers.yaml")))
    cm = d["controller_manager"]["ros__parameters"]
    assert cm["effort_controller"]["type"] == "forward_command_controller/ForwardCommandController"
    ec = d["effort_controller"]["ros__parameters"]
    assert ec["interface_name"] == "effort"
    own = yaml.safe_load(open(os.path.join(CONFIG, f"{robot}.yaml")))["/**"]["ros__parameters"]
    assert ec["joints"] == own["joints"]


def test_ros2_control_hybrid_example_declares_a_controller_per_interface(ros_env):
    """config/quadruped_hybrid_controllers.yaml: rcl parses it; a ForwardCommandController per
    command interface of the hybrid drive command, named so that its topic is the node's
    (``<interface>_controller/commands``), on the configured joints in their order."""
    from wbc_dynamics.node import HYBRID_INTERFACES

    path = os.path.join(CONFIG, "quadruped_hybrid_controllers.yaml")
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=["--ros-args", "--params-file", path])  # rcl's parser
    rclpy.shutdown(context=ctx)
    d = yaml.safe_load(open(path))
    cm = d["controller_manager"]["ros__parameters"]
    own = yaml.safe_load(open(os.path.join(CONFIG, "quadruped.yaml")))["/**"]["ros__parameters"]
    interfaces = ("effort", *HYBRID_INTERFACES)
    assert set(interfaces) == {"effort", "position", "velocity", "stiffness", "damping"}
    for iface in interfaces:
        name = f"{iface}_controller"
        assert cm[name]["type"] == "forward_command_controller/ForwardCommandController"
        fc = d[name]["ros__parameters"]
        assert fc["interface_name"] == iface and fc["joints"] == own["joints"], name
    assert set(cm) == {f"{i}_controller" for i in interfaces} | {"joint_state_broadcaster",
                                                                 "update_rate"}


def test_every_node_parameter_has_a_row_in_the_parameter_reference():
    """docs/parameters.md's tables (the node guide's parameter reference, generated from the
    schema: test_parameters.py) name every node parameter in a row's first cell."""
    import re

    doc = open(os.path.join(os.path.dirname(CONFIG), "docs", "parameters.md")).read()
    first_cells = [line.split("|")[1] for line in doc.splitlines() if line.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`([a-z_0-9]+)`", cell)}
    missing = sorted(set(PARAMETERS) - documented)
    assert not missing, f"docs/parameters.md lacks rows for {missing}"
