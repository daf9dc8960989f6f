"""The controller node takes its model from the robot_description topic (std_msgs/String,
transient local, as robot_state_publisher publishes it) when no model parameter is set.

Node in its own process over DDS. Asserted: without a model the node waits (alive, no command);
a URDF it cannot use (a NaN mass) is a logged rejection naming the link, the process lives on;
a URDF that is not XML is rejected too; the bundled arm's URDF published *before* a late
subscriber would connect (transient local) configures and activates the node, whose command then
equals the core's RNEA for the state sent (1e-9).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from node_harness import Client, start_controller, stop_process  # noqa: E402

from wbc_dynamics.model import RobotModel  # noqa: E402
from wbc_dynamics.robots import robot_info, robot_path  # noqa: E402


def test_model_from_robot_description_topic(ros_env):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    ns = f"/rdtopic{os.getpid()}"
    info = robot_info("arm")
    names = info["joint_names"]
    proc = start_controller(ns, {"robot_description_topic": "robot_description", "kp": [0.0],
                                 "kd": [0.0], "method": "none"})
    rclpy.init()
    client = Client(ns, "rd_client")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = client.node.create_publisher(String, f"{ns}/robot_description", latched)
    try:
        assert client.spin(lambda: pub.get_subscription_count() > 0, 60.0), "node did not come up"
        # no model: no command, alive
        client.spin(lambda: False, 1.0)
        assert proc.poll() is None and not client.cmds
        good = open(robot_path("arm")).read()
        bad = good.replace('<mass value="', '<mass value="nan" old="', 1)
        pub.publish(String(data=bad))
        client.spin(lambda: False, 3.0)
        assert proc.poll() is None, stop_process(proc)
        assert not client.cmds
        pub.publish(String(data="not a urdf"))
        client.spin(lambda: False, 1.0)
        assert proc.poll() is None, stop_process(proc)
        # a valid URDF: configure + activate; the command is the core's RNEA
        pub.publish(String(data=good))
        client.wait_connected(120.0)
        model = RobotModel.from_urdf(robot_path("arm"))
        rng = np.random.default_rng(3)
        q = np.array(info["standing_q"]) + 0.1 * rng.standard_normal(len(names))
        v = np.zeros(len(names))
        acc = rng.standard_normal(len(names))

        def expected(qq):
            tau = model.rnea(qq, v, acc)
            lim = np.where(np.isfinite(model.effort_limit) & (model.effort_limit > 0),
                           model.effort_limit, np.inf)
            return np.clip(tau, -lim, lim)

        tau, q = client.command_for(names, q, v, acc, expected=expected)
        np.testing.assert_allclose(tau, expected(q), rtol=0, atol=1e-9)
        assert client.spin(lambda: len(client.diag) > 0, 5.0)
        d = client.diag[-1]
        assert int(d["rejected_robot_description"]) == 2, d
        assert int(d["rejected_robot_description.bad_value"]) == 1, d
    finally:
        client.close()
        rclpy.shutdown()
        out = stop_process(proc)
    # the NaN mass rejection names the element (logged at error level)
    assert "rejected robot_description message" in out, out[-3000:]
    assert "mass" in out and "nan" in out.lower(), out[-3000:]
