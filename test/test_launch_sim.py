"""launch_testing test: ``launch/sim.launch.py`` itself (quadruped, default method and weight shift,
lockstep simulator), as ``launch_test test/test_launch_sim.py`` and ``colcon test`` run it (the
executables are found by launch_ros under ``<prefix>/lib/wbc_dynamics``).

Asserts, after 5 s of simulated time: the simulator finished in lockstep with no missed and no
stale step, the base stayed above 80 % of the standing height over every step, and the controller
was in control mode; all processes exit cleanly on shutdown. The same scenario (same executables
and parameters, from :func:`wbc_dynamics.sim.launch_plan.sim_launch_plan`) runs without
launch_testing in test/test_ros_closed_loop.py.

launch_testing is not on PyPI: without it this module is skipped with the reason.
"""

from __future__ import annotations

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# first: it configures the ROS test environment before rclpy is imported
from launch_test_env import launch_test_description, launch_testing  # noqa: E402, I001

import pytest  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from node_harness import spin_until  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from wbc_dynamics.robots import robot_info  # noqa: E402

NS = "launch_test_sim"
DURATION = 5.0


@pytest.mark.launch_test
def generate_test_description():
    return launch_test_description("sim.launch.py", {
        "namespace": NS, "duration": str(DURATION), "real_time_factor": "0"})


class TestSimLaunch(unittest.TestCase):
    def test_quadruped_stays_up_in_lockstep(self, proc_output):
        rclpy.init()
        node = rclpy.create_node("launch_sim_client", namespace=f"/{NS}")
        ex = SingleThreadedExecutor()
        ex.add_node(node)
        got: dict = {"sim": None, "ctl": None}

        def on_diag(arr):
            for st in arr.status:
                if st.name.startswith(f"/{NS}/"):
                    key = "sim" if st.name.endswith(": simulator") else "ctl"
                    got[key] = {kv.key: kv.value for kv in st.values}

        node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 50)
        try:
            ok = spin_until(ex, lambda: got["sim"] is not None
                            and got["sim"]["state"] == "finished", 300.0)
            self.assertTrue(ok, f"simulation did not finish: {got['sim']}")
            sim, ctl = got["sim"], got["ctl"]
            self.assertEqual(sim["mode"], "lockstep")
            self.assertGreaterEqual(int(sim["steps"]), int(DURATION * 1000) - 1)
            self.assertEqual(int(sim["missed_commands"]), 0, sim)
            self.assertEqual(int(sim["stale_steps"]), 0, sim)
            z_stand = robot_info("quadruped")["standing_q"][2]
            self.assertGreater(float(sim["base_height_min"]), 0.8 * z_stand, sim)
            self.assertIsNotNone(ctl)
            self.assertEqual(ctl["mode"], "control", ctl)
        finally:
            node.destroy_node()
            rclpy.shutdown()


@launch_testing.post_shutdown_test()
class TestSimLaunchShutdown(unittest.TestCase):
    def test_exit_code(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
