"""Helpers for the process-level node tests: start ``wbc_controller`` in its own process and talk
to it over DDS from an rclpy node in the test process (environment from ``ros_test_env``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_controller(namespace: str, params: dict, extra_args: tuple[str, ...] = ()
                     ) -> subprocess.Popen:
    """``python -m wbc_dynamics.node`` in namespace ``namespace`` with ``-p`` parameters."""
    args = [sys.executable, "-m", "wbc_dynamics.node", *extra_args, "--ros-args",
            "-r", f"__ns:={namespace}", "--log-level", "warn"]
    for k, v in params.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, list | tuple):
            v = "[" + ",".join(repr(float(x)) if not isinstance(x, str) else x for x in v) + "]"
        args += ["-p", f"{k}:={v}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


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


def spin_until(executor, pred: Callable[[], bool], timeout: float) -> bool:
    """Spin ``executor`` until ``pred()`` is true or ``timeout`` [s] passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        executor.spin_once(timeout_sec=0.01)
    return pred()
