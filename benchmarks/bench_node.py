#!/usr/bin/env python3
"""End-to-end benchmark of the wbc_controller node (separate processes, localhost DDS).

For each robot x rate, a controller process is started from ``config/<robot>.yaml`` (event mode,
``control_rate`` = the publish rate); this process publishes ``joint_states`` (and ``odom`` for a
floating base) at the rate, a reference at 50 Hz, and receives the node's
``~/joint_commands`` (JointState, published right after the Float64MultiArray command of the same
tick and stamped with the joint_states stamp it was computed from). It reports:

* end-to-end latency: joint_states publish -> command received [us] (mean / p50 / p99 / max),
  which includes DDS transport both ways and both Python executors;
* missed ticks: states published minus commands received for them;
* tick compute time inside the node (its /diagnostics: mean / p99 / max, deadline misses);
* resident memory of the node process at the start and the end of the measured run.

    python benchmarks/bench_node.py --duration 600              # the 10-minute run (default)
    python benchmarks/bench_node.py --duration 20 --robots quadruped --rates 1000

DDS stays on this machine: the script sets ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, the shipped
Fast DDS profile config/fastdds_localhost.xml and a private ROS_DOMAIN_ID before importing rclpy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = os.path.join(REPO, "config", "fastdds_localhost.xml")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 200))
os.environ.pop("ROS_LOCALHOST_ONLY", None)
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from wbc_dynamics.robots import robot_info  # noqa: E402


def rss_mb(pid: int) -> float:
    """Resident set size of a process [MB] (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def run_case(robot: str, rate: float, duration: float, warmup: float, executor: str,
             rt_priority: int = 0) -> dict:
    info = robot_info(robot)
    names = info["joint_names"]
    n = len(names)
    q = np.array(info["standing_q"])
    ns = f"/bench_{robot}_{int(rate)}"
    args = [sys.executable, "-m", "wbc_dynamics.node", "--ros-args", "-r", f"__ns:={ns}",
            "--params-file", os.path.join(REPO, "config", f"{robot}.yaml"),
            "-p", f"control_rate:={float(rate)}", "-p", "diagnostics_rate:=1.0",
            "-p", f"executor:={executor}", "-p", f"realtime_priority:={rt_priority}",
            "--log-level", "error"]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(args, env=env, cwd=REPO)
    node = rclpy.create_node(f"bench_client_{robot}_{int(rate)}")
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub_js = node.create_publisher(JointState, f"{ns}/joint_states", qos)
    pub_od = node.create_publisher(Odometry, f"{ns}/odom", qos)
    pub_ref = node.create_publisher(JointTrajectory, f"{ns}/wbc_controller/reference", qos)
    sent: dict[int, float] = {}
    lat: list[float] = []
    diag: dict = {}
    lock = threading.Lock()

    def on_echo(msg: JointState) -> None:
        t = time.perf_counter()
        key = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        with lock:
            t0 = sent.pop(key, None)
        if t0 is not None:
            lat.append(t - t0)

    def on_diag(msg: DiagnosticArray) -> None:
        for st in msg.status:
            if st.name.startswith(f"{ns}/wbc_controller:"):
                diag.update({kv.key: kv.value for kv in st.values})

    sub = node.create_subscription(JointState, f"{ns}/wbc_controller/joint_commands", on_echo,
                                   QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    if executor == "events":
        from rclpy.experimental import EventsExecutor

        ex = EventsExecutor()
    else:
        ex = SingleThreadedExecutor()
    ex.add_node(node)
    t_end = time.monotonic() + 120.0
    while time.monotonic() < t_end and not (pub_js.get_subscription_count() > 0
                                            and sub.get_publisher_count() > 0):
        ex.spin_once(timeout_sec=0.05)
    if proc.poll() is not None or pub_js.get_subscription_count() == 0:
        proc.kill()
        raise RuntimeError(f"controller for {robot} did not start")
    if rt_priority:
        from wbc_dynamics.node import set_realtime_priority

        set_realtime_priority(rt_priority)
    stop = threading.Event()
    spin_thread = threading.Thread(target=lambda: [ex.spin_once(timeout_sec=0.05)
                                                   for _ in iter(stop.is_set, True)], daemon=True)
    spin_thread.start()

    js = JointState()
    js.name = list(names)
    js.position = [float(x) for x in q[-n:]]
    js.velocity = [0.0] * n
    od = Odometry()
    od.pose.pose.position.x, od.pose.pose.position.y, od.pose.pose.position.z = q[:3]
    (od.pose.pose.orientation.x, od.pose.pose.orientation.y, od.pose.pose.orientation.z,
     od.pose.pose.orientation.w) = q[3:7]
    ref = JointTrajectory()
    ref.joint_names = list(names)
    ref.points = [JointTrajectoryPoint(accelerations=[0.0] * n)]
    floating = info["floating_base"]
    period = 1.0 / rate
    clock = node.get_clock()
    rss0 = None
    n_sent = 0
    lat_mark = 0
    t_start = time.perf_counter()
    t_next = t_start
    t_measure = t_start + warmup
    t_stop = t_measure + duration
    k = 0
    measuring = False
    while True:
        now = time.perf_counter()
        if now >= t_stop:
            break
        if not measuring and now >= t_measure:
            measuring = True
            with lock:
                lat_mark = len(lat)
                sent.clear()
            n_sent = 0
            rss0 = rss_mb(proc.pid)
        if k % max(1, int(rate / 50)) == 0:
            pub_ref.publish(ref)
        if floating:
            pub_od.publish(od)
        stamp = clock.now().to_msg()
        js.header.stamp = stamp
        key = stamp.sec * 1_000_000_000 + stamp.nanosec
        with lock:
            sent[key] = time.perf_counter()
        pub_js.publish(js)
        if measuring:
            n_sent += 1
        k += 1
        t_next += period
        rem = t_next - time.perf_counter()
        if rem > 0:  # sleep (releases the GIL for the receiving thread); no busy wait
            time.sleep(rem)
        elif rem < -0.1:  # fell far behind (machine overloaded): do not burst to catch up
            t_next = time.perf_counter()
        if len(sent) > 10000:
            with lock:
                cutoff = time.perf_counter() - 1.0
                for key_old in [kk for kk, tt in sent.items() if tt < cutoff]:
                    del sent[key_old]
    time.sleep(0.3)
    rss1 = rss_mb(proc.pid)
    with lock:
        samples = np.array(lat[lat_mark:]) * 1e6
    time.sleep(1.2)  # one more diagnostics message
    stop.set()
    spin_thread.join(timeout=2.0)
    proc.send_signal(2)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    ex.remove_node(node)
    node.destroy_node()
    res = {
        "robot": robot, "rate_hz": rate, "duration_s": duration, "executor": executor,
        "rt_priority": rt_priority,
        "sent": n_sent, "received": int(samples.size), "missed": int(n_sent - samples.size),
        "latency_us": {
            "mean": float(samples.mean()) if samples.size else float("nan"),
            "p50": float(np.percentile(samples, 50)) if samples.size else float("nan"),
            "p99": float(np.percentile(samples, 99)) if samples.size else float("nan"),
            "max": float(samples.max()) if samples.size else float("nan"),
        },
        "tick_us": {k2: float(diag.get(f"solve_time_{k2}_us", "nan"))
                    for k2 in ("mean", "p99", "max")},
        "deadline_misses": int(diag.get("deadline_misses", -1)),
        "rate_limited": int(diag.get("rate_limited_states", -1)),
        "node_ticks": int(diag.get("ticks", -1)),
        "method": diag.get("method", "?"),
        "rss_mb": {"start": rss0, "end": rss1, "growth": rss1 - rss0 if rss0 else float("nan")},
    }
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0,
                    help="measured seconds per robot and rate (default 600 = 10 min)")
    ap.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
    ap.add_argument("--robots", nargs="+", default=["quadruped", "humanoid"])
    ap.add_argument("--rates", nargs="+", type=float, default=[500.0, 1000.0])
    ap.add_argument("--executor", default="events",
                    choices=["single_threaded", "events"],
                    help="executor of the node and of this client")
    ap.add_argument("--rt-priority", type=int, default=0,
                    help="SCHED_FIFO priority for the node and this client (0 = off)")
    ap.add_argument("--json", default="", help="write the results to this file")
    a = ap.parse_args(argv)
    with open("/proc/loadavg") as f:
        print(f"load average at start: {f.read().split()[:3]} on {os.cpu_count()} CPUs")
    sys.setswitchinterval(1e-4)  # receiving thread must not wait 5 ms for the GIL
    rclpy.init()
    results = []
    try:
        for robot in a.robots:
            for rate in a.rates:
                r = run_case(robot, rate, a.duration, a.warmup, a.executor, a.rt_priority)
                results.append(r)
                lat = r["latency_us"]
                tk = r["tick_us"]
                print(f"{robot:9s} {rate:6.0f} Hz {r['method']:10s} "
                      f"latency us mean {lat['mean']:7.0f} p50 {lat['p50']:7.0f} "
                      f"p99 {lat['p99']:7.0f} max {lat['max']:7.0f} | missed {r['missed']}/"
                      f"{r['sent']} (rate-limited {r['rate_limited']}) | tick us mean "
                      f"{tk['mean']:.0f} p99 {tk['p99']:.0f} max {tk['max']:.0f} "
                      f"deadline misses {r['deadline_misses']} | RSS MB "
                      f"{r['rss_mb']['start']:.1f} -> {r['rss_mb']['end']:.1f} "
                      f"(+{r['rss_mb']['growth']:.2f})", flush=True)
    finally:
        rclpy.shutdown()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
