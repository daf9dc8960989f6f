"""Walking from a velocity command: every configured quadruped, forward, sideways and turning.

Each run is the in-process MuJoCo closed loop (``ClosedLoop``, reference ``walk``: the
controller's ``gait: trot`` with the gait parameters computed from the robot, each
configuration's own method and options) from rest, the command reached within 0.3 s. Columns:
the exact state; a 0.1 s push on the base of 30 % of the robot's weight sideways at 2 s; the
realistic sensing and actuation of ``Imperfections.realistic()`` (1 mrad encoders, a base
estimate good to 5 mm / 0.5 deg / 0.05 m/s, 1 ms latency each way, +-10 % mass, a 2 ms torque
lag, 80 % torque limits). Per run: whether it fell, the mean base velocity over the second half
(world x, y [m/s]; turning: the mean yaw rate [rad/s]) and its error relative to the command,
the lowest base height [% of the start].

    python benchmarks/walking.py [--robots go2 a1] [--duration 10] [--write]

``--write`` puts the table in ``docs/walking.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ROBOTS = ("go1", "go2", "a1", "anymal_c", "solo12")
COMMANDS = {"forward 0.3 m/s": (0.3, 0.0, 0.0), "sideways 0.3 m/s": (0.0, 0.3, 0.0),
            "turning 0.3 rad/s": (0.0, 0.0, 0.3)}
VARIANTS = ("exact", "push", "realistic")


def _yaw(q) -> float:
    x, y, z, w = q[3:7]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def run_one(robot: str, command, variant: str, duration: float) -> dict:
    from wbc_dynamics.sim.closed_loop import ClosedLoop, shipped_loop_config
    from wbc_dynamics.sim.imperfections import Imperfections

    imp = Imperfections.realistic() if variant == "realistic" else Imperfections()
    cfg = shipped_loop_config(robot, "walk", duration, imperfections=imp)
    cfg.reference_options = {"velocity": list(command)}
    if variant == "push":
        cfg.push = (2.0, 0.1, (0.0, 0.3, 0.0))
    loop = ClosedLoop(cfg)
    yaws = []
    goals = loop.ctl.goals

    def record(t):  # the plant's heading, for the turning rate
        if goals is not None:
            goals(t)
        yaws.append((t, _yaw(loop.plant.get_state()[0])))

    loop.ctl.goals = record
    r = loop.run()
    k = len(r.t) // 2
    span = r.t[-1] - r.t[k] if len(r.t) > 2 else math.nan
    v = (r.base_pos[-1] - r.base_pos[k])[:2] / span if len(r.t) > 2 else np.full(2, math.nan)
    yaw = np.unwrap([y for _, y in yaws])
    rate = (yaw[-1] - yaw[len(yaw) // 2]) / span if len(yaw) > 2 else math.nan
    if command[2]:
        error = abs(rate - command[2]) / abs(command[2])
    else:
        error = float(np.linalg.norm(v - np.array(command[:2])) / np.linalg.norm(command[:2]))
    return {"robot": robot, "failed": bool(r.failed), "t_fall": float(r.t[-1]), "v": v,
            "yaw_rate": rate, "error": error,
            "z_min": float(r.base_pos[:, 2].min() / loop.q_start[2]),
            "period": float(loop.walker.period) if loop.walker and loop.walker._started else 0.0}


def _cell(res: dict, command) -> str:
    if res["failed"]:
        return f"**falls {res['t_fall']:.2f} s**"
    got = (f"{res['yaw_rate']:+.3f} rad/s" if command[2]
           else f"({res['v'][0]:+.3f}, {res['v'][1]:+.3f}) m/s")
    return f"{got}, error {100 * res['error']:.1f} %, lowest {100 * res['z_min']:.0f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="*", default=list(ROBOTS))
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--write", action="store_true", help="write docs/walking.md")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = []
    for robot in args.robots:
        for name, command in COMMANDS.items():
            cells = []
            period = 0.0
            for variant in VARIANTS:
                res = run_one(robot, command, variant, args.duration)
                period = period or res["period"]
                cells.append(_cell(res, command))
                print(f"{robot:9s} {name:18s} {variant:9s} {cells[-1]}", flush=True)
            rows.append(f"| {robot} | {period:.2f} s | {name} | " + " | ".join(cells) + " |")
    wall = (time.time() - t0) / 60.0
    doc = "\n".join([
        "# Walking from a velocity command",
        "",
        "Written by `benchmarks/walking.py` (see its docstring); rerun with "
        f"`python benchmarks/walking.py --write`. {len(rows) * len(VARIANTS)} closed-loop runs "
        f"of {args.duration:g} s simulated each, {wall:.1f} min wall on this machine.",
        "",
        "Each cell: the mean base velocity over the second half of the run (turning: the yaw "
        "rate), its error relative to the command, the lowest base height (% of the start), or "
        "when it fell. Gait period: computed from the robot (`2.6 sqrt(h / g)`). Columns: the "
        "simulator's exact state; a 0.1 s sideways push of 30 % of the robot's weight at 2 s; "
        "realistic sensing and actuation (`Imperfections.realistic()`).",
        "",
        "| robot | period | command | exact | push | realistic |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ])
    if args.write:
        with open(os.path.join(ROOT, "docs", "walking.md"), "w") as f:
            f.write(doc)
    else:
        print(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
