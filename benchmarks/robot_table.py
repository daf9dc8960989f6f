"""docs/robots.md's table: every robot configuration x contact method in the MuJoCo closed loop.

    python benchmarks/robot_table.py [--duration 5] [--robots go1,talos] [--methods lcp_noslip]

Legged robots stand (``reference="stand"``) with every method and sway (``reference="sway"``)
with their configuration's method; fixed-base arms track the joint sinusoid (method
``none``); rigid ground, high friction, 1 kHz, in-process (``wbc_dynamics.sim.closed_loop``).
Prints a markdown table: stands / FALLS (when, why), mean and max |q - q_des|, lowest base height
relative to the start, the controller's mean and p99 tick time, and the solver flags that fired.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from docs_pages import row, table_head

METHODS = ("lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip")


def run_one(robot: str, method: str, reference: str, duration: float) -> dict:
    from wbc_dynamics.sim.closed_loop import LoopConfig, run

    t0 = time.perf_counter()
    res = run(LoopConfig(robot=robot, controller=method, reference=reference,
                         duration=duration), stop_on_failure=True)
    m = res.metrics()
    z = res.base_pos[:, 2]
    return {
        "robot": robot, "method": method, "reference": reference,
        "result": f"FALLS at {res.t[-1]:.2f} s ({res.failure})" if res.failed else
        {"stand": "stands", "sway": "sways"}.get(reference, "tracks"),
        "pos_err": m["pos_err"], "pos_err_max": m["pos_err_max"],
        "z_min": float(z.min() / z[0]) if z[0] > 0 else float("nan"),
        "tick_mean": m["tick_mean"], "tick_p99": m["tick_p99"],
        "flags": ", ".join(f"{k} {v}" for k, v in sorted(res.flags.items())
                           if k not in ("min_norm", "rows_dropped", "inconsistent_corrected")),
        "wall": time.perf_counter() - t0,
    }


def main(argv: list[str] | None = None) -> int:
    from wbc_dynamics.robot_config import load_robot_setup, robot_config_names

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--robots", default=",".join(robot_config_names()))
    ap.add_argument("--methods", default=",".join(METHODS))
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("\n".join(table_head(["robot", "method", "reference", "result",
                                "mean / max \\|q − q_des\\| [rad]", "lowest base height / start",
                                "tick mean / p99 [µs]", "other solver flags"])))
    for robot in args.robots.split(","):
        setup = load_robot_setup(robot)
        legged = setup.controller.floating_base
        runs = ([(m, "stand") for m in args.methods.split(",")]
                + [(setup.controller.method, "sway")] if legged else [("none", "sinusoid")])
        for method, reference in runs:
            r = run_one(robot, method, reference, args.duration)
            z = f"{r['z_min']:.3f}" if np.isfinite(r["z_min"]) else "fixed base"
            print(row([robot, method, reference, r["result"],
                       f"{r['pos_err']:.4f} / {r['pos_err_max']:.3f}", z,
                       f"{1e6 * r['tick_mean']:.0f} / {1e6 * r['tick_p99']:.0f}",
                       r["flags"] or "–"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
