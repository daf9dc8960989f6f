"""Base estimators side by side on the same sensor stream: BaseEstimator vs the InvariantEKF.

Each scenario is one in-process MuJoCo closed loop (``ClosedLoop``) under the realistic sensing
and actuation of :meth:`~wbc_dynamics.sim.imperfections.Imperfections.realistic` (MEMS IMU:
0.002 rad/s gyro noise and a gyro bias of 0.002 rad/s std per axis, 0.05 m/s^2
accelerometer noise, both biases wandering as MEMS random walks, its orientation output good to
0.2 deg; 1 mrad / 0.02 rad/s encoders; 1 ms
latency each way, +-10 % mass, torque lag and limits). The controller runs on its own estimate
(``base_state: imu``): :class:`~wbc_dynamics.estimator.BaseEstimator` with the IMU's orientation.
Every call of that estimator's ``update`` (joints, the IMU sample, the stance mask, dt) is passed
on, unchanged, to two more filters that only observe:

* ``base/imu``: the controller's BaseEstimator, orientation from the IMU's own output;
* ``base/gyro``: a BaseEstimator with the orientation from the gyro and Mahony's accelerometer
  tilt correction (``orientation="gyro"``, the IMU orientation not given to it);
* ``iekf``: :class:`~wbc_dynamics.invariant_ekf.InvariantEKF` (its own orientation from the gyro
  and the legs; the IMU orientation only initializes it).

Per filter: velocity RMS [m/s] (base frame), horizontal drift per distance travelled (or in cm
standing), height RMS [mm], roll / pitch RMS [deg], yaw drift [deg/min] (metrics of
``LoopResult.estimation_metrics`` over the ticks all three have an estimate; a run in which
the robot falls up to ``--fall-margin`` s before the fall), and the median time of one
``update`` call [us] (Python call included, timed in the same run, the filters taking turns
at being called first after the controller's tick).

    python benchmarks/estimator_compare.py [--duration 10] [--scenarios quadruped:trot ...]
        [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time

import numpy as np
from docs_pages import estimate_row, estimate_table_head, publish, rerun_command  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: robot:reference runs by default: the bundled quadruped and go2 trotting, g1 standing and
#: swaying its centre of mass
SCENARIOS = ("quadruped:trot", "go2:trot", "g1:stand", "g1:com_sway")
FILTERS = ("base/imu", "base/gyro", "iekf")


def _loop(robot: str, reference: str, duration: float, seed: int):
    from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config
    from wbc_dynamics.sim.imperfections import Imperfections

    return ClosedLoop(shipped_loop_config(
        robot, reference, duration, Imperfections.realistic(1.0, seed=seed),
        {"base_state": "imu", "imu_orientation": True}))


def run_one(robot: str, reference: str, duration: float, seed: int = 0,
            fall_margin: float = 1.0) -> dict:
    """One closed-loop run with the three filters on its sensor stream (module docstring); if
    the robot falls, the metrics cover the run up to ``fall_margin`` [s] before the fall."""
    from wbc_dynamics.estimator import BaseEstimator
    from wbc_dynamics.invariant_ekf import InvariantEKF

    loop = _loop(robot, reference, duration, seed)
    ctl = loop.ctl.ctl
    base = ctl.base_estimator
    imu = ctl._estimator  # the controller's ImuEstimator: the sample's stamp is the tick's time
    d = base.data
    soles = (base.model, base.feet, d.sole_foot, d.sole_body, d.sole_r, d.sole_radius)
    gyro_filter = BaseEstimator(*soles, noise=base.noise, ground_height=d.ground_height,
                                orientation="gyro")
    iekf = InvariantEKF(*soles, noise=base.noise, ground_height=d.ground_height)
    rate = loop.cfg.control_rate
    K = int(round(duration * rate))
    logs = {name: np.zeros((K, 13)) for name in FILTERS}
    have = {name: np.zeros(K, dtype=bool) for name in FILTERS}
    times = {name: [] for name in FILTERS}
    failed = {name: 0 for name in FILTERS}
    original = base.update

    def update(qj, qdj, gyro, accel, quat, stance, dt):
        k = int(round(imu.stamp * rate))
        calls = (("base/imu", base, original, quat),
                 ("base/gyro", gyro_filter, gyro_filter.update, None),
                 ("iekf", iekf, iekf.update, quat))
        out = 0
        for j in range(3):  # each filter first every third tick (the cache after the tick)
            name, f, call, q = calls[(j + k) % 3]
            t0 = time.perf_counter()
            status = call(qj, qdj, gyro, accel, q, stance, dt)
            times[name].append(time.perf_counter() - t0)
            failed[name] += status != 0
            if name == "base/imu":
                out = status
            if f.initialized and 0 <= k < K:
                logs[name][k] = np.concatenate(f.base_state())
                have[name][k] = True
        return out

    base.update = update  # this run's instance only
    t0 = time.perf_counter()
    res = loop.run()
    wall = time.perf_counter() - t0
    n = res.t.shape[0]
    ok = np.all([have[f][:n] for f in FILTERS], axis=0) & np.any(res.base_truth != 0.0, axis=1)
    t_end = float(res.t[-1])
    until = t_end - fall_margin if res.failed else math.inf
    ok &= res.t < until
    out = {"robot": robot, "reference": reference, "fell": res.failed, "t_end": t_end,
           "until": until, "wall": wall, "filters": {}}
    for name in FILTERS:
        r = dataclasses.replace(res, t=res.t[ok], base_estimate=logs[name][:n][ok],
                                base_truth=res.base_truth[ok])
        m = r.estimation_metrics()
        m["us"] = float(np.median(times[name]) * 1e6)
        m["failed_updates"] = failed[name]
        out["filters"][name] = m
    return out


def table(results: list[dict]) -> str:
    lines = estimate_table_head(["robot", "scenario", "filter"], "update [us]")
    for r in results:
        scen = r["reference"] + (f" (**falls at {r['t_end']:.2f} s**; metrics to "
                                 f"{r['until']:.2f} s)" if r["fell"] else "")
        for name in FILTERS:
            m = r["filters"][name]
            lines.append(estimate_row([r["robot"], scen, name], m, "us", height_fmt=".2f",
                                      tilt_fmt=".3f"))
    return "\n".join(lines)


def main(argv=None) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS),
                    help="robot:reference pairs (default: %(default)s)")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fall-margin", type=float, default=1.0,
                    help="[s] a run that falls is evaluated up to this long before the fall")
    ap.add_argument("--write", action="store_true", help="write docs/estimator_comparison.md")
    a = ap.parse_args(argv)
    pairs = []
    for s in a.scenarios:
        robot, _, reference = s.partition(":")
        if not reference:
            ap.error(f"scenario {s!r}: expected robot:reference")
        pairs.append((robot, reference))
    results = []
    for robot, reference in pairs:
        results.append(run_one(robot, reference, a.duration, a.seed, a.fall_margin))
        r = results[-1]
        print(f"[{len(results)}/{len(pairs)}] {robot} {reference}: {r['wall']:.0f} s wall"
              + (f", fell at {r['t_end']:.2f} s" if r["fell"] else ""), flush=True)
    cmd = rerun_command("estimator_compare.py", argv)
    report = (
        "# Base estimators compared on one sensor stream\n\n"
        f"Written by `benchmarks/estimator_compare.py` (see its docstring); rerun with `{cmd}`. "
        f"Each scenario is one in-process MuJoCo closed loop of {a.duration:g} s under the "
        "realistic sensing and actuation of `Imperfections.realistic(1.0)` (seed "
        f"{a.seed}: MEMS IMU with gyro bias and bias random walks, encoder noise, 1 ms latency "
        "each way, "
        "mass error, torque lag and limits), the controller running on its own estimate "
        "(`base_state: imu`, BaseEstimator with the IMU's orientation). Every update of that "
        "estimator -- joints, IMU sample, stance mask (the gait schedule's), dt -- is passed "
        "unchanged to a BaseEstimator with the orientation from the gyro and a Mahony tilt "
        "correction (`base/gyro`) and to the contact-aided invariant EKF (`iekf`, "
        "`wbc_dynamics/invariant_ekf.py`: its own orientation from the gyro and the legs, gyro "
        "and accelerometer biases estimated, the IMU orientation used only to initialize it), "
        "which only observe. Errors are against the simulator's true base state over the ticks "
        "all three have an estimate (the state the filters see is 1 ms old: part of every "
        "error); `update` is the median time of one `update()` call in the same run (the three "
        "called in turn, each first every third tick). A run in which the robot falls stops "
        "there (the controller's estimator is the same in all rows, so is the fall); its "
        f"metrics cover it up to {a.fall_margin:g} s before the fall.\n\n"
        + table(results) + "\n")
    publish(report, "estimator_comparison.md", a.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
