"""Base state estimation against the simulator's ground truth.

Each run is the in-process MuJoCo closed loop (``ClosedLoop``) with the controller on its own
estimate (``base_state: imu``: :class:`~wbc_dynamics.estimator.BaseEstimator`), fed a simulated
IMU and encoders with the realistic sensing of
:meth:`~wbc_dynamics.sim.imperfections.Imperfections.realistic` (MEMS IMU: 0.002 rad/s gyro noise
and bias, 0.05 m/s^2 accelerometer noise, bias random walks, its orientation output good to 0.2
deg; 1 mrad / 0.02
rad/s encoders; latency, mass error, torque lag and limits as there). Scenarios: the quadrupeds'
10 s trot, the humanoids standing and swaying their centre of mass. Orientation from the IMU's own
output (``imu``) and from its integrated rate with a tilt correction (``gyro``).

Per run: velocity RMS [m/s] (base frame), horizontal drift per distance travelled, height RMS
[m], roll / pitch RMS [deg], yaw drift [deg/min], the estimator's compute time per tick [us]
(the estimator's two compiled calls timed alone on the run's last state), and whether the robot
stayed up. ``--write`` writes ``docs/estimation.md``.

    python benchmarks/estimation_eval.py [--robots go2 g1 ...] [--duration 10] [--jobs 2]
        [--write]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from docs_pages import estimate_row, estimate_table_head, publish, rerun_command, run_jobs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SCENARIOS = {
    "quadruped": ("trot",), "go1": ("trot",), "go2": ("trot",), "a1": ("trot",),
    "anymal_c": ("trot",), "solo12": ("trot",),
    "talos": ("stand", "com_sway"), "talos_reduced": ("stand", "com_sway"),
    "g1": ("stand", "com_sway"),
}


def run_one(job: tuple) -> dict:
    """One run: ``(robot, reference, orientation, duration, seed)``."""
    import warnings

    warnings.filterwarnings("ignore")
    robot, reference, orientation, duration, seed = job
    from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config
    from wbc_dynamics.sim.imperfections import Imperfections

    cfg = shipped_loop_config(robot, reference, duration, Imperfections.realistic(1.0, seed=seed),
                              {"base_state": "imu", "imu_orientation": orientation == "imu"})
    t0 = time.perf_counter()
    try:
        loop = ClosedLoop(cfg)
        res = loop.run()
    except Exception as e:  # reported in the table, not fatal to it
        return {"job": job, "error": f"{type(e).__name__}: {e}"}
    out = {"job": job, "fell": res.failed, "t_end": float(res.t[-1]), "why": res.failure,
           "pos_err": res.metrics().get("pos_err", math.nan), **res.estimation_metrics()}
    out["estimator_us"] = _time_estimator(loop.ctl.ctl)
    out["wall"] = time.perf_counter() - t0
    return out


def _time_estimator(ctl, n: int = 2000) -> float:
    """Median time [us] of one estimator tick (the kinematics and the filter) on the
    controller's last inputs; the estimate is restored afterwards."""
    est = ctl.base_estimator
    e = est.data
    saved = (e.x.copy(), e.P.copy(), e.quat.copy())
    qj, qdj = ctl._q[7:].copy(), ctl._v[6:].copy()
    stance = np.ones(len(est.feet), dtype=np.bool_)
    imu = ctl._estimator  # the controller's ImuEstimator: its latest sample
    gyro, accel = imu.gyro.copy(), imu.accel.copy()
    quat = imu.quat.copy() if est.orientation == "imu" else None
    times = np.empty(n)
    for k in range(n):
        t0 = time.perf_counter()
        est.update(qj, qdj, gyro, accel, quat, stance, 1e-3)
        times[k] = time.perf_counter() - t0
    e.x[:], e.P[:], e.quat[:] = saved
    return float(np.median(times) * 1e6)


def table(results: list[dict]) -> str:
    lines = estimate_table_head(["robot", "scenario", "orientation", "stays up"], "estimator [us]")
    order = list(SCENARIOS)
    for r in sorted(results, key=lambda r: (order.index(r["job"][0]), r["job"][1], r["job"][2])):
        robot, ref, ori = r["job"][:3]
        if "error" in r:
            lines.append(f"| {robot} | {ref} | {ori} | error: {r['error']} |||||||")
            continue
        up = f"**falls {r['t_end']:.2f} s**" if r["fell"] else "yes"
        lines.append(estimate_row([robot, ref, ori, up], r, "estimator_us"))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--orientations", nargs="*", default=["imu", "gyro"],
                    choices=["imu", "gyro"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", action="store_true", help="write docs/estimation.md")
    a = ap.parse_args(argv)
    unknown = [r for r in a.robots if r not in SCENARIOS]
    if unknown:
        ap.error(f"unknown robot(s) {unknown}; known: {list(SCENARIOS)}")
    jobs = [(r, ref, o, a.duration, a.seed) for r in a.robots for ref in SCENARIOS[r]
            for o in a.orientations]
    results, wall = run_jobs(run_one, jobs, a.jobs, lambda r: f"{r['job'][:3]} done")
    cmd = rerun_command("estimation_eval.py", argv)
    report = (
        "# Base state estimation\n\n"
        "Written by `benchmarks/estimation_eval.py` (see its docstring); rerun with\n"
        f"`{cmd}`.\n"
        f"{len(jobs)} closed-loop runs of {a.duration:g} s simulated each, {wall / 60:.1f} min "
        "wall on this machine. The controller runs on its own estimate in every run "
        "(`base_state: imu`), under the realistic sensing and actuation of "
        "docs/robustness.md.\n\n" + table(results) + "\n")
    publish(report, "estimation.md", a.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
