"""Every floating-base robot for 10 s over ROS on its own base estimate, as sim.launch.py runs it.

For each configured floating-base robot and the bundled quadruped, and each of its scenarios
(standing or swaying; the quadrupeds' trot), the three processes of ``sim.launch.py`` with its
defaults -- the simulator's realistic sensors (1 mrad / 0.02 rad/s encoders with 14-bit
quantization, a MEMS IMU), the controller on its own estimate (``base_state: imu``, no
odometry), hybrid drives where the configuration sends the hybrid drive command -- in lockstep
as fast as the controller answers, started with :func:`wbc_dynamics.sim.launch_plan.start_node`.
A client records ``ground_truth/odom``, the controller's estimate (``wbc_controller/odom``,
100 Hz) and the nodes' diagnostics.

Per run: whether every step had its command, the lowest base height (% of the start: the
simulator's own minimum over every step), the controller's safe ticks, the estimate against the
ground truth at the same stamps (velocity RMS in the base frame, horizontal drift at the end,
height RMS), and the simulation's speed (simulated / wall time). ``--write`` writes
``docs/estimation_over_ros.md``.

    python benchmarks/ros_estimation_soak.py [--robots go2 g1 ...] [--duration 10] [--write]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "test"))
# DDS stays on this machine, on a domain of its own, before rclpy is imported
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = os.path.join(ROOT, "config", "fastdds_localhost.xml")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 200))
os.environ.pop("ROS_LOCALHOST_ONLY", None)

from docs_pages import publish, table_head  # noqa: E402

#: robot -> scenarios (sim.launch.py references)
SCENARIOS = {
    "quadruped": ("shift", "trot"),
    "go1": ("sway", "trot"), "go2": ("sway", "trot"), "a1": ("sway", "trot"),
    "anymal_c": ("sway", "trot"), "solo12": ("sway", "trot"),
    "talos": ("stand", "com_sway"), "talos_reduced": ("stand", "com_sway"),
    "g1": ("stand", "com_sway"),
}


def run_one(robot: str, reference: str, duration: float, tag: str) -> dict:
    """One run over DDS; the processes' log tails are kept for a run that did not finish."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from nav_msgs.msg import Odometry
    from node_harness import (  # (test/)
        by_stamp,
        diagnostics_into,
        odometry_errors,
        spin_for,
    )
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from wbc_dynamics.sim.launch_plan import sim_launch_plan, start_node, stop_node

    ns = f"/soak{os.getpid()}{tag}"
    sim_plan, ctl_plan, ref_plan = sim_launch_plan(
        {"robot": robot, "reference": reference, "mode": "lockstep", "real_time_factor": "0",
         "duration": str(duration)}, ROOT)

    logs: dict = {}

    def start(plan):  # the log to a file: an unread pipe could fill up and stall the node
        logs[plan.name] = tempfile.TemporaryFile("w+")
        return start_node(plan, ns, log_level="warn", stdout=logs[plan.name],
                          stderr=subprocess.STDOUT)

    procs = {"controller": start(ctl_plan), "reference": start(ref_plan)}
    rclpy.init()
    node = rclpy.create_node("soak_client", namespace=ns)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got: dict = {"truth": {}, "est": {}, "sim": None, "ctl": None}
    reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    node.create_subscription(Odometry, "ground_truth/odom", by_stamp(got["truth"]), reliable)
    node.create_subscription(Odometry, "wbc_controller/odom", by_stamp(got["est"]), reliable)
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             diagnostics_into(got, ns, {": simulator": "sim"}), 50)
    out = {"robot": robot, "reference": reference, "finished": False}
    try:
        deadline = time.monotonic() + 180.0
        topic = f"{ns}/wbc_controller/reference"
        while not (node.count_publishers(topic) >= 1 and node.count_subscribers(topic) >= 1):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                out["error"] = "the controller / reference did not come up"
                return out
            ex.spin_once(timeout_sec=0.1)
        spin_for(ex, 1.0)
        procs["simulator"] = start(sim_plan)
        t0 = time.monotonic()
        deadline = t0 + 60.0 + 30.0 * duration
        while time.monotonic() < deadline and not (
                got["sim"] is not None and got["sim"]["state"] == "finished"):
            ex.spin_once(timeout_sec=0.05)
            if any(p.poll() is not None for p in procs.values()):
                break
        wall = time.monotonic() - t0
        out["finished"] = got["sim"] is not None and got["sim"]["state"] == "finished"
        spin_for(ex, 2.0)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        for p in procs.values():
            stop_node(p)
        tails = {}
        for name, log in logs.items():
            log.seek(0)
            tails[name] = log.read()[-1200:]
            log.close()
    sim, ctl = got["sim"] or {}, got["ctl"] or {}
    if not out["finished"]:
        out["error"] = f"did not finish; simulator {sim}; logs {tails}"
        return out
    steps = int(sim["steps"])
    truth = got["truth"]
    z0 = truth[min(truth)].pose.pose.position.z if truth else math.nan
    out.update(
        steps=steps, speed=steps * 1e-3 / max(wall, 1e-9),
        lockstep_ok=int(sim["missed_commands"]) == 0 and int(sim["stale_steps"]) == 0,
        min_height=float(sim["base_height_min"]) / z0,
        safe=int(ctl.get("safe_ticks", -1)), ticks=int(ctl.get("ticks", 0)),
        mode=ctl.get("mode", "?"), rejected_imu=int(ctl.get("rejected_imu", -1)),
        **odometry_errors(got["est"], truth))
    return out


def table(results: list[dict]) -> str:
    lines = table_head(["robot", "scenario", "stays up (lowest base height)",
                        "every step had its command", "safe ticks", "velocity RMS [m/s]", "drift",
                        "height RMS [mm]", "simulated / wall"])
    for r in results:
        if "error" in r:
            lines.append(f"| {r['robot']} | {r['reference']} | error: {r['error'][:300]} "
                         "|||||||")
            continue
        up = "yes" if r["min_height"] > 0.8 else "**no**"
        drift = (f"{100 * r['drift'] / r['distance']:.1f} % of {r['distance']:.2f} m"
                 if r.get("distance", 0.0) >= 0.1 else f"{100 * r.get('drift', math.nan):.1f} cm")
        lines.append(
            f"| {r['robot']} | {r['reference']} | {up} ({100 * r['min_height']:.0f} %) | "
            f"{'yes' if r['lockstep_ok'] else '**no**'} | {r['safe']} of {r['ticks']} | "
            f"{r.get('velocity_rms', math.nan):.4f} | {drift} | "
            f"{1e3 * r.get('height_rms', math.nan):.1f} | {r['speed']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    results = []
    for robot in a.robots:
        for ref in SCENARIOS[robot]:
            r = run_one(robot, ref, a.duration, f"{robot}_{ref}")
            print(f"{robot} {ref}: " + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in r.items() if k not in ("robot", "reference")), flush=True)
            results.append(r)
    minutes = (time.monotonic() - t0) / 60.0
    text = (
        "# Base estimation over ROS\n\n"
        "Written by `benchmarks/ros_estimation_soak.py` (see its docstring); rerun with\n"
        "`python benchmarks/ros_estimation_soak.py --write`.\n"
        f"{len(results)} runs of {a.duration:g} s simulated each over DDS, {minutes:.1f} min wall "
        "on this machine (2 cores: the simulator, controller and reference share them). "
        "Each run is `sim.launch.py robot:=<robot> reference:=<scenario>` with its defaults: "
        "realistic sensors, the controller on its own base estimate from the simulated IMU and "
        "encoders, hybrid drives where the configuration sends the hybrid drive command. "
        "Stays up: the simulator's lowest base height over every step, as % of the start "
        "(> 80 %). Safe ticks: ticks the controller spent in a safe mode (before the first "
        "reference and IMU sample). In-process runs of the same scenarios with the latency, "
        "mass error and torque lag of the realistic combination: docs/estimation.md.\n\n"
        + table(results) + "\n")
    publish(text, "estimation_over_ros.md", a.write)
    bad = [r for r in results if "error" in r or r["min_height"] <= 0.8 or not r["lockstep_ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
