"""First start of the controller node: progress while compiling, and SIGINT honoured at once.

The node's process starts with an empty numba cache (``NUMBA_CACHE_DIR`` in a temporary
directory), so ``configure`` compiles every kernel the configuration needs (a minute or more on
this machine). The test waits for the first start-up progress line, lets compilation run, sends
SIGINT and requires the process to be gone within 2 s (+ margin for a loaded machine) with exit
code 0, before it reported ready.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from node_harness import REPO


def test_sigint_during_a_cold_start_compile_exits_at_once(ros_env, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_LOGGING_BUFFERED_STREAM"] = "0"
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba_cache")  # cold: compile everything
    args = [sys.executable, "-m", "wbc_dynamics.node", "--ros-args",
            "-r", f"__ns:=/startup{os.getpid()}", "--log-level", "info",
            "-p", "robot:=quadruped", "-p", "floating_base:=true", "-p", "method:=lcp_noslip"]
    proc = subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                     daemon=True).start()
    try:
        deadline = time.monotonic() + 120.0
        while not any("start-up:" in ln for ln in lines):
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "no start-up progress line:\n" + "".join(lines)
            time.sleep(0.05)
        time.sleep(3.0)  # inside the compilation now
        assert not any("start-up: ready" in ln for ln in lines), (
            "the start finished before the signal; the cache was not cold:\n" + "".join(lines))
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30.0)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines)
    assert code == 0, out
    assert waited < 2.0 + 3.0, f"exited {waited:.1f} s after SIGINT (target 2 s):\n{out}"
    assert "while not active (start-up / compiling): exiting now" in out, out
    # the progress lines say what is being compiled and for how long
    assert "start-up: model parsed from robot quadruped; compiling / loading the core kernels" \
        in out, out
