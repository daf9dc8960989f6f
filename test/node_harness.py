"""Helpers for the process-level node tests: start ``wbc_controller`` in its own process and talk
to it over DDS from an rclpy node in the test process.

Import this module only after ``ros_test_env.configure_ros_test_env()`` ran (conftest does it for
pytest; launch_testing files call it first), since it imports rclpy."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_module(module: str, namespace: str, params: dict, extra_args: tuple[str, ...] = (),
                 params_file: str | None = None) -> subprocess.Popen:
    """``python -m <module>`` (a node's console entry) in namespace ``namespace`` with ``-p``
    parameters (after ``params_file``, so they override it); output captured."""
    args = [sys.executable, "-m", module, *extra_args, "--ros-args",
            "-r", f"__ns:={namespace}", "--log-level", "warn"]
    if params_file:
        args += ["--params-file", params_file]
    for k, v in params.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, list | tuple):
            v = "[" + ",".join(x if isinstance(x, str) else repr(float(x)) for x in v) + "]"
        args += ["-p", f"{k}:={v}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_LOGGING_BUFFERED_STREAM"] = "0"
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def start_controller(namespace: str, params: dict, extra_args: tuple[str, ...] = ()
                     ) -> subprocess.Popen:
    """``python -m wbc_dynamics.node`` in namespace ``namespace`` with ``-p`` parameters."""
    return start_module("wbc_dynamics.node", namespace, params, extra_args)


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> str:
    """SIGINT, wait, kill if needed; returns the process output."""
    if proc.poll() is None:
        proc.send_signal(2)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.stdout.read() if proc.stdout else ""


def by_stamp(store: dict) -> Callable[[Any], None]:
    """A subscription callback keeping each message in ``store`` under its header stamp [ns]."""
    def on(m: Any) -> None:
        store[m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec] = m
    return on


def diagnostics_into(got: dict, namespace: str, kinds: dict[str, str],
                     other: str = "ctl") -> Callable[[DiagnosticArray], None]:
    """A ``/diagnostics`` callback: the key-value pairs of each status of a node in
    ``namespace`` into ``got[kinds[suffix]]`` for the first ``suffix`` its name ends with (e.g.
    ``{": simulator": "sim"}``), else into ``got[other]``."""
    def on_diag(arr: DiagnosticArray) -> None:
        for st in arr.status:
            if not st.name.startswith(namespace + "/"):
                continue
            kv = {k.key: k.value for k in st.values}
            got[next((key for suffix, key in kinds.items() if st.name.endswith(suffix)),
                     other)] = kv
    return on_diag


def odometry_errors(estimates: dict, truth: dict, min_samples: int = 10) -> dict:
    """Odometry estimates against the ground truth at the same stamps (both by stamp,
    :func:`by_stamp`): ``samples``; and with at least ``min_samples`` of them ``span`` [s],
    ``velocity_rms`` [m/s] (base frame, both), ``height_max`` and ``height_rms`` [m],
    ``drift`` (horizontal, at the end) [m], ``distance`` (horizontal, travelled) [m]."""
    common = sorted(set(estimates) & set(truth))
    if len(common) < max(min_samples, 2):
        return {"samples": len(common)}
    dv, dz, dxy, xy = [], [], [], []
    for s in common:
        e, t = estimates[s], truth[s]
        ve, vt = e.twist.twist.linear, t.twist.twist.linear
        dv.append([ve.x - vt.x, ve.y - vt.y, ve.z - vt.z])
        pe, pt = e.pose.pose.position, t.pose.pose.position
        dz.append(pe.z - pt.z)
        dxy.append(math.hypot(pe.x - pt.x, pe.y - pt.y))
        xy.append((pt.x, pt.y))
    dv, xy = np.array(dv), np.array(xy)
    return {"samples": len(common), "span": (common[-1] - common[0]) * 1e-9,
            "velocity_rms": float(np.sqrt(np.mean(np.sum(dv * dv, axis=1)))),
            "height_max": float(np.max(np.abs(dz))),
            "height_rms": float(np.sqrt(np.mean(np.square(dz)))), "drift": float(dxy[-1]),
            "distance": float(np.sum(np.linalg.norm(np.diff(xy, axis=0), axis=1)))}


def spin_for(executor, seconds: float, step: float = 0.05) -> None:
    """Spin ``executor`` for ``seconds`` [s] (``spin_once`` at most ``step`` [s] each)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=step)


def spin_until(executor, pred: Callable[[], bool], timeout: float) -> bool:
    """Spin ``executor`` until ``pred()`` is true or ``timeout`` [s] passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        executor.spin_once(timeout_sec=0.01)
    return pred()


class Client:
    """Test-side rclpy node talking to one controller namespace (rclpy must be initialised)."""

    def __init__(self, ns: str, name: str) -> None:
        self.ns = ns
        self.node = rclpy.create_node(name)
        self.ex = SingleThreadedExecutor()
        self.ex.add_node(self.node)
        q = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        self.pub_js = self.node.create_publisher(JointState, f"{ns}/joint_states", q)
        self.pub_ref = self.node.create_publisher(JointTrajectory,
                                                  f"{ns}/wbc_controller/reference", q)
        self.pub_odom = self.node.create_publisher(Odometry, f"{ns}/odom", q)
        self.cmds: list[tuple[float, np.ndarray]] = []
        self.echo: list[JointState] = []
        self.diag: list = []
        self.wrench: dict[str, list] = {}
        self.node.create_subscription(
            Float64MultiArray, f"{ns}/effort_controller/commands",
            lambda m: self.cmds.append((time.monotonic(), np.array(m.data))), q)
        self.sub_echo = self.node.create_subscription(
            JointState, f"{ns}/wbc_controller/joint_commands", self.echo.append, q)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)

    def _on_diag(self, msg) -> None:
        for st in msg.status:
            if st.name.startswith(f"{self.ns}/wbc_controller:"):
                self.diag.append({kv.key: kv.value for kv in st.values})

    def spin(self, pred, timeout: float) -> bool:
        return spin_until(self.ex, pred, timeout)

    def wait_connected(self, timeout: float = 60.0) -> None:
        ok = self.spin(lambda: self.pub_js.get_subscription_count() > 0
                       and self.pub_ref.get_subscription_count() > 0
                       and self.sub_echo.get_publisher_count() > 0,
                       timeout)
        assert ok, f"controller in {self.ns} did not come up"

    def send_state(self, names, q, v) -> None:
        m = JointState()
        m.header.stamp = self.node.get_clock().now().to_msg()
        m.name = list(names)
        m.position = [float(x) for x in q]
        m.velocity = [float(x) for x in v]
        self.pub_js.publish(m)

    def send_state_until_echo(self, names, q, v, timeout: float = 5.0,
                              echo_q=None) -> bool:
        """Send a joint state and wait for the node's command echo of it (``echo_q``, default q).

        The node subscribes to joint_states best-effort (depth 1), as to a driver's stream: one
        sample can be lost on a loaded machine (seen in CI), so the state is re-sent every 0.5 s
        until its echo arrives, as a joint_states stream would repeat it."""
        echo_q = np.asarray(q if echo_q is None else echo_q, dtype=float)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.send_state(names, q, v)
            if self.spin(lambda: self.echo_for(echo_q) is not None, 0.5):
                return True
        return False

    def send_reference(self, names, acc, pos=(), vel=()) -> None:
        m = JointTrajectory()
        m.joint_names = list(names)
        p = JointTrajectoryPoint()
        p.accelerations = [float(x) for x in acc]
        p.positions = [float(x) for x in pos]
        p.velocities = [float(x) for x in vel]
        m.points = [p]
        self.pub_ref.publish(m)
        # let the node take the reference before the caller sends the joint state that should use
        # it (DDS does not order samples across topics)
        self.spin(lambda: False, 0.1)

    def echo_for(self, q, nonzero: bool = False) -> JointState | None:
        """The FIRST command echo computed for joint positions ``q`` (the tick the joint state
        itself triggered; later watchdog ticks reuse the same state). ``nonzero``: skip echoes
        with all-zero effort (e.g. a tick before the base state arrived)."""
        for m in self.echo:
            if len(m.position) == len(q) and np.array_equal(np.array(m.position), q):
                if nonzero and not np.any(np.array(m.effort)):
                    continue
                return m
        return None

    def call(self, srv_type, name: str, request, timeout: float = 10.0, attempts: int = 3):
        """Call a service of the node; a request whose response does not arrive within
        ``timeout`` is sent again (up to ``attempts`` times): right after a server starts,
        ``service_is_ready`` can hold before the server's response writer has matched this
        client's reader, and that first response is then lost (seen once in CI)."""
        cli = self.node.create_client(srv_type, f"{self.ns}/{name}")
        assert self.spin(cli.service_is_ready, timeout), f"service {name} not ready"
        for _attempt in range(attempts):
            fut = cli.call_async(request)
            if self.spin(fut.done, timeout):
                break
            cli.remove_pending_request(fut)
        else:
            raise AssertionError(f"service {name} timed out ({attempts} requests)")
        self.node.destroy_client(cli)
        return fut.result()

    def close(self) -> None:
        self.ex.remove_node(self.node)
        self.node.destroy_node()



    def command_for(self, names, q, v, acc, q_des=(), v_des=(), expected=None,
                    attempts: int = 3) -> np.ndarray:
        """Send a reference, then a joint state; return the effort the node computed for it.

        If ``expected`` (a function of q) is given and the first command differs because the
        reference had not reached the node's callback yet (no cross-topic ordering in DDS), the
        pair is re-sent with q shifted by 1e-4 rad, at most ``attempts`` times; the returned
        effort is then compared by the caller against ``expected`` of the returned q.
        Returns (effort, q_used).
        """
        q = np.asarray(q, dtype=float)
        for k in range(attempts):
            self.send_reference(names, acc, q_des, v_des)
            assert self.send_state_until_echo(names, q, v), "no command echo in 5 s"
            eff = np.array(self.echo_for(q).effort)
            if expected is None or np.allclose(eff, expected(q), rtol=0, atol=1e-9) \
                    or k == attempts - 1:
                return eff, q
            q = q + 1e-4
        raise AssertionError("unreachable")
