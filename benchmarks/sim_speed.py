#!/usr/bin/env python3
"""Speed of the ROS lockstep simulation (``sim.launch.py``'s three processes): where a simulated
millisecond goes.

For each robot, the plan of :func:`wbc_dynamics.sim.launch_plan.sim_launch_plan` (lockstep, the
given ``real_time_factor``; 0 = as fast as the controller answers) runs for ``--duration``
simulated seconds: the controller and the reference node start first, then the simulator. Between
the simulator's "simulation running" and "reached: stopped" log lines it measures the wall time
and each process's CPU time (``/proc/<pid>/stat`` utime + stime), and reports per simulated
millisecond:

* ``rtf`` -- simulated time / wall time (the real-time factor reached);
* ``wall_ms`` -- wall milliseconds per simulated millisecond (1 / rtf);
* ``cpu_sim``, ``cpu_ctl``, ``cpu_ref`` -- CPU milliseconds of the simulator, controller and
  reference processes per simulated millisecond (DDS's threads included in each).

CPU time is the machine-independent number; wall time depends on the other load on the machine
(two processes that answer each other every step want two free cores).

    python benchmarks/sim_speed.py                                  # quadruped, 5 s
    python benchmarks/sim_speed.py --robots quadruped go2 talos --duration 5 --rtf 1
    python benchmarks/sim_speed.py --profile /tmp/prof      # + cProfile of each process
    python benchmarks/sim_speed.py --robots quadruped go2 anymal_c talos g1 --write
                                            # + the report in docs/simulation.md (markers)

DDS stays on this machine: the script sets the tests' environment (test/ros_test_env.py:
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, the shipped Fast DDS profile
config/fastdds_localhost.xml, a private ROS_DOMAIN_ID) before starting nodes.
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test"), os.path.join(REPO, "benchmarks")]
from docs_pages import publish_section, rerun_command, row, table_head  # noqa: E402
from ros_test_env import configure_ros_test_env  # noqa: E402  (the tests' DDS environment)

configure_ros_test_env()
os.environ["PYTHONUNBUFFERED"] = "1"
os.environ["RCUTILS_LOGGING_BUFFERED_STREAM"] = "0"

from wbc_dynamics.sim.launch_plan import (  # noqa: E402
    sim_launch_plan,
    start_node,
    stop_node,
)

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time [s] of process ``pid`` (its threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15)


def run(robot: str, duration: float, rtf: float, timeout: float = 900.0,
        profile: str = "", args: dict | None = None) -> dict:
    """One lockstep run of ``robot`` for ``duration`` simulated seconds at ``rtf``; the measured
    numbers (see the module docstring). ``profile``: a directory the processes write their
    cProfile statistics to (empty: none). ``args``: further launch arguments."""
    ns = f"/simspeed{os.getpid()}{robot.replace('_', '')}"
    plan = sim_launch_plan({"robot": robot, "mode": "lockstep", "duration": str(duration),
                            "real_time_factor": str(rtf), **(args or {})}, REPO)
    sim_plan, ctl_plan, ref_plan = plan
    out = {"robot": robot, "duration": duration, "real_time_factor": rtf}
    procs = {}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        procs["ctl"] = start_node(ctl_plan, ns, **quiet, **_profiled(profile, "ctl"))
        procs["ref"] = start_node(ref_plan, ns, **quiet, **_profiled(profile, "ref"))
        procs["sim"] = start_node(sim_plan, ns, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, **_profiled(profile, "sim"))
        sel = selectors.DefaultSelector()
        sel.register(procs["sim"].stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        marks = {}
        log = []
        while "stop" not in marks:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                raise RuntimeError(f"{robot}: the simulation did not finish\n"
                                   + "".join(log[-20:]))
            if not sel.select(timeout=1.0):
                continue
            line = procs["sim"].stdout.readline()
            log.append(line)
            key = ("start" if "simulation running" in line
                   else "stop" if "reached: stopped" in line else None)
            if key:
                marks[key] = (time.monotonic(), {k: cpu_seconds(p.pid)
                                                 for k, p in procs.items()})
        (w0, c0), (w1, c1) = marks["start"], marks["stop"]
        sim_ms = duration * 1e3
        out["rtf"] = duration / (w1 - w0)
        out["wall_ms"] = (w1 - w0) * 1e3 / sim_ms
        for k in procs:
            out[f"cpu_{k}"] = (c1[k] - c0[k]) * 1e3 / sim_ms
        return out
    finally:
        for p in procs.values():
            stop_node(p)
        while _WRAPPERS:
            os.remove(_WRAPPERS.pop())


_WRAPPERS: list[str] = []  # the wrapper scripts of :func:`_profiled`, removed after a run


def _profiled(directory: str, name: str) -> dict:
    """:func:`start_node` keyword arguments running the node under ``python -m cProfile -o
    <directory>/<name>.prof`` (the interpreter through a wrapper script inserting the options;
    empty ``directory``: none)."""
    if not directory:
        return {}
    import tempfile

    os.makedirs(directory, exist_ok=True)
    out = os.path.join(os.path.abspath(directory), f"{name}.prof")
    fd, wrapper = tempfile.mkstemp(prefix="sim_speed_", suffix=".sh")
    with os.fdopen(fd, "w") as f:  # (the kernel passes the script's path as $0)
        f.write(f'#!/bin/sh\nexec {sys.executable} -m cProfile -o {out} "$@"\n')
    os.chmod(wrapper, 0o755)
    _WRAPPERS.append(wrapper)
    return {"executable": wrapper}


#: the product target: lockstep at least at real time
TARGET_RTF = 1.0

#: the docs/simulation.md lines that enclose the report ``--write`` rewrites
REPORT_MARKERS = ("<!-- sim_speed report: written by benchmarks/sim_speed.py --write -->",
                  "<!-- end of the sim_speed report -->")

#: what was tried on the lockstep loop (the report's fixed paragraph)
TRIED = (
    "What was tried (quadruped, 3 s simulated, runs of this script on the same loaded machine, "
    "interleaved with runs of the same nodes on rclpy's single-threaded executor): rclpy's "
    "`EventsExecutor` for `wbc_sim` and `wbc_reference`, spun one `spin_once` at a time (its "
    "`spin()` stalled after the first timer event with this rclpy, so the simulation never "
    "started): CPU ms per simulated ms of wbc_sim 1.04-1.13 -> 0.77-0.79, of wbc_reference "
    "0.42-0.46 -> 0.26-0.28, of wbc_controller unchanged (0.75-0.91; it spins the events "
    "executor in both); real-time factor 0.34-0.54 -> 0.48-0.64 (four runs each). Not tried: "
    "`/clock` at a lower rate than the steps (the controller reads simulated time at every "
    "tick, and its rate cap and state timeouts run on it), serialized publishing in the "
    "simulator (4-9 µs saved per message in a publish loop, three messages a step). 1.0× needs "
    "both processes' CPU per step below one millisecond together: the controller's rclpy share "
    "(its tick is ~0.1 ms of its ~0.9 ms) is the largest part left.")


def markdown_report(rows: list[dict], load: list[str], rerun: str) -> str:
    """The docs/simulation.md report of :func:`run`'s rows: the table, one met / missed line
    per robot (the real-time factor over :data:`TARGET_RTF`), :data:`TRIED` and the command."""
    lines = [f"`{rerun}` (load average {' / '.join(load)} at the start, {os.cpu_count()} "
             "CPUs; per simulated millisecond):", "",
             *table_head(["robot", "real-time factor", "wall ms / sim ms",
                          "CPU ms / sim ms: wbc_sim", "wbc_controller", "wbc_reference"])]
    for r in rows:
        lines.append(row([r["robot"], f"{r['rtf']:.2f}", f"{r['wall_ms']:.2f}",
                          f"{r['cpu_sim']:.3f}", f"{r['cpu_ctl']:.3f}", f"{r['cpu_ref']:.3f}"]))
    lines += ["", f"Target (lockstep at ≥ {TARGET_RTF:.1f}× real time):", ""]
    for r in rows:
        met = r["rtf"] >= TARGET_RTF
        lines.append(f"* {r['robot']}: **{'met' if met else 'missed'}** -- "
                     f"{r['rtf']:.2f}× real time = {r['rtf'] / TARGET_RTF:.2f}× the target "
                     f"({r['wall_ms'] - 1.0 / TARGET_RTF:+.2f} wall ms per simulated ms)")
    lines += ["", TRIED]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", default=["quadruped"])
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds per run")
    ap.add_argument("--rtf", type=float, default=0.0,
                    help="the simulator's real_time_factor (0: as fast as possible)")
    ap.add_argument("--profile", default="",
                    help="a directory: cProfile statistics of each process (sim.prof, ...)")
    ap.add_argument("--json", default="", help="also write the rows to this JSON file")
    ap.add_argument("--write", action="store_true",
                    help="also write the report into docs/simulation.md (between its markers)")
    a = ap.parse_args(argv)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    signal.signal(signal.SIGTERM, _terminate)  # the nodes are stopped on the way out
    rows = []
    print(f"{'robot':<12} {'rtf':>6} {'wall_ms':>8} {'cpu_sim':>8} {'cpu_ctl':>8} {'cpu_ref':>8}"
          "   (per simulated ms)")
    for robot in a.robots:
        r = run(robot, a.duration, a.rtf, profile=a.profile)
        rows.append(r)
        print(f"{robot:<12} {r['rtf']:6.2f} {r['wall_ms']:8.2f} {r['cpu_sim']:8.3f} "
              f"{r['cpu_ctl']:8.3f} {r['cpu_ref']:8.3f}", flush=True)
    publish_section(markdown_report(rows, load, rerun_command("sim_speed.py", argv)),
                    "simulation.md", REPORT_MARKERS, a.write, rows, a.json)
    return 0


def _terminate(signum, frame) -> None:
    raise SystemExit(1)


if __name__ == "__main__":
    sys.exit(main())
