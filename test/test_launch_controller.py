"""launch_testing test: the controller started from launch/wbc_controller.launch.py with the
bundled arm config, exactly as ``launch_test test/test_launch_controller.py`` and ``colcon test``
run it (the executable is found by launch_ros under ``<prefix>/lib/wbc_dynamics``).

Asserts: published torques equal the core's inverse dynamics for the published state (1e-9); stale
joint states produce the zero safe command; a malformed message is rejected (error logged) while
the node keeps controlling; the node exits cleanly on shutdown. The same scenarios run without
launch_testing in test_node.py.

launch_testing is not on PyPI: without it this module is skipped with the reason.
"""

from __future__ import annotations

import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# first: it configures the ROS test environment before rclpy is imported
from launch_test_env import launch_test_description, launch_testing  # noqa: E402, I001

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import rclpy  # noqa: E402
from node_harness import Client  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from wbc_dynamics.model import RobotModel  # noqa: E402
from wbc_dynamics.robots import robot_info, robot_path  # noqa: E402

CONFIG = os.path.join(os.path.dirname(HERE), "config", "arm.yaml")
NS = "launch_test_arm"
KP = 100.0  # config/arm.yaml


@pytest.mark.launch_test
def generate_test_description():
    return launch_test_description("wbc_controller.launch.py", {
        "robot": "arm", "config_file": CONFIG, "namespace": NS, "log_level": "info"})


def _expected(model, q, v, acc, q_des=None):
    qdd = acc + (KP * (q_des - q) if q_des is not None else 0.0)  # no qd_des: no Kd term
    tau = model.rnea(q, v, qdd)
    lim = np.where(np.isfinite(model.effort_limit) & (model.effort_limit > 0),
                   model.effort_limit, np.inf)
    return np.clip(tau, -lim, lim)


class TestWbcControllerLaunch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.client = Client(f"/{NS}", "launch_test_client")
        cls.client.wait_connected(60.0)
        cls.info = robot_info("arm")
        cls.model = RobotModel.from_urdf(robot_path("arm"))

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        rclpy.shutdown()

    def _send(self, q, v, acc, q_des=None):
        """Reference then state; effort and the q it was computed for (see Client.command_for)."""
        names = self.info["joint_names"]
        return self.client.command_for(
            names, q, v, acc, () if q_des is None else q_des,
            expected=lambda qq: _expected(self.model, qq, v, acc, q_des))

    def test_1_torque_equals_core(self, proc_output):
        rng = np.random.default_rng(11)
        n = self.info["n_joints"]
        q = np.array(self.info["standing_q"]) + 0.2 * rng.standard_normal(n)
        v = np.zeros(n)  # Kd term: qd_des not given -> no velocity feedback
        acc = rng.standard_normal(n)
        q_des = q + 0.05 * rng.standard_normal(n)
        tau, q = self._send(q, v, acc, q_des)
        np.testing.assert_allclose(tau, _expected(self.model, q, v, acc, q_des), rtol=0,
                                   atol=1e-9)
        self.assertTrue(self.client.spin(
            lambda: any(np.allclose(c, tau, rtol=0, atol=1e-9) for _, c in self.client.cmds),
            2.0))

    def test_2_stale_state_gives_zero_command(self, proc_output):
        n = self.info["n_joints"]
        q = np.array(self.info["standing_q"]) + 0.01
        self._send(q, np.zeros(n), np.zeros(n))
        k = len(self.client.cmds)
        t0 = time.monotonic()
        ok = self.client.spin(lambda: any(np.all(c == 0.0) for _, c in self.client.cmds[k:]),
                              2.0)
        self.assertTrue(ok, "no zero command after joint_states stopped")
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_3_malformed_rejected_node_keeps_running(self, proc_output):
        n = self.info["n_joints"]
        names = self.info["joint_names"]
        m = JointState()
        m.name = list(names)
        m.position = [float("nan")] + [0.0] * (n - 1)
        m.velocity = [0.0] * n
        self.client.pub_js.publish(m)
        proc_output.assertWaitFor("rejected joint_states message", timeout=5.0)
        q = np.array(self.info["standing_q"]) - 0.02
        tau, q = self._send(q, np.zeros(n), np.ones(n))
        np.testing.assert_allclose(tau, _expected(self.model, q, np.zeros(n), np.ones(n)),
                                   rtol=0, atol=1e-9)


@launch_testing.post_shutdown_test()
class TestWbcControllerShutdown(unittest.TestCase):
    def test_exit_code(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
