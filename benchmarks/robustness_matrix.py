"""Robustness matrix: every configured and bundled robot under realistic sensing and actuation.

Each scenario (robot x reference: standing / swaying, and trotting for the quadrupeds) runs in the
in-process MuJoCo closed loop (``ClosedLoop``, the robot's shipped method and options, after the
loop's settle) with :class:`~wbc_dynamics.sim.imperfections.Imperfections` between plant and
controller: the realistic combination (1 mrad / 0.02 rad/s encoders, a base estimate good to 5 mm
/ 0.5 deg / 0.05 m/s / 0.02 rad/s -- or the controller's own estimate from a simulated MEMS
IMU --, 1 ms latency each way, +-10 % mass, a 2 ms torque lag, torque limits at 80 %) scaled by 0
(exact state), 0.5, 1, 2 and 4, for four controller variants
(:data:`VARIANTS`: as shipped, on its own estimate, effort-only drives, without the
robustness options);
``--singles`` adds each perturbation alone at 1x.

Per run: whether and when it fell, mean joint tracking error [rad], lowest base height [% of the
start], torque chatter (mean |dtau/dt| [N m/s]) and the contact state filter's decisions changed
per second. The table goes to ``docs/robustness.md`` (``--write``) or stdout.

    python benchmarks/robustness_matrix.py [--robots go2 g1 ...] [--levels 0 1 2]
        [--duration 4] [--singles] [--jobs 2] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np
from docs_pages import publish, rerun_command, run_jobs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wbc_dynamics.sim.closed_loop import BUNDLED_QUADRUPED_OPTIONS  # noqa: E402

#: robot -> its scenarios (references); the bundled quadruped runs its shipped config's method
SCENARIOS = {
    "quadruped": ("shift", "trot"),
    "go1": ("sway", "trot"), "go2": ("sway", "trot"), "a1": ("sway", "trot"),
    "anymal_c": ("sway", "trot"), "solo12": ("sway", "trot"),
    "talos": ("com_sway",), "talos_reduced": ("com_sway",), "g1": ("com_sway",),
    "panda": ("sinusoid",), "ur10": ("sinusoid",),
}
LEVELS = (0.0, 0.5, 1.0, 2.0, 4.0)
#: one perturbation alone (``--singles``): name -> the Imperfections fields it keeps
SINGLES = {
    "encoders": ("joint_position_noise", "joint_velocity_noise"),
    "base position": ("base_position_noise",),
    "base orientation": ("base_orientation_noise",),
    "base velocity": ("base_linear_velocity_noise", "base_angular_velocity_noise"),
    "latency": ("state_latency", "command_latency"),
    "mass": ("mass_error",),
    "torque lag + limit": ("torque_lag", "torque_limit_fraction"),
}


def _imperfections(level: float, single: str, seed: int):
    from wbc_dynamics.sim.imperfections import Imperfections

    imp = Imperfections.realistic(level, seed=seed)
    if not single:
        return imp
    keep = SINGLES[single]
    kw = {f.name: f.default for f in dataclasses.fields(Imperfections)
          if f.name not in keep and f.name != "seed"}
    return dataclasses.replace(imp, **kw)


#: controller variants: as shipped (on the noisy base state); as shipped on its own base
#: estimate from the simulated IMU and encoders (``base_state: imu``, no odometry); as shipped
#: with effort-only drives; without the robustness options (no contact state filter, no torque
#: low-pass, no joint-state observer, effort only)
VARIANTS = ("shipped", "estimated", "effort", "before")
#: the bundled quadruped's robustness options as config/quadruped.yaml ships them
BUNDLED_SHIPPED = BUNDLED_QUADRUPED_OPTIONS


def _variant_options(robot: str, variant: str, floating: bool) -> dict:
    if not floating:
        return {}
    if variant in ("shipped", "estimated"):
        out = dict(BUNDLED_SHIPPED) if robot == "quadruped" else {}
        if variant == "estimated":
            out["base_state"] = "imu"
        return out
    off = dict(BUNDLED_SHIPPED) if robot == "quadruped" else {}
    off.update(drive_stiffness=[0.0], drive_damping=[0.0])
    if variant == "before":
        off.update(contact_state_filter=False, torque_filter_cutoff=0.0,
                   joint_observer_acceleration_noise=0.0)
    return off


def run_one(job: tuple) -> dict:
    """One closed-loop run: ``(robot, reference, level, single, variant, duration, seed,
    options)``, ``options`` controller parameters over the variant's."""
    import warnings

    warnings.filterwarnings("ignore")  # the corpus URDFs' inertia notes, once per robot
    robot, reference, level, single, variant, duration, seed, extra = job
    from wbc_dynamics.sim.closed_loop import ClosedLoop, LoopConfig

    if robot == "quadruped":
        method, options = "lcp_noslip", {"lcp_noslip": {"min_norm": True}}
    else:
        from wbc_dynamics.robot_config import load_robot_setup

        method, options = load_robot_setup(robot).controller.method, {}
    floating = robot not in ("panda", "ur10")
    ctl_opts = {**_variant_options(robot, variant, floating and method != "none"), **extra}
    cfg = LoopConfig(robot=robot, reference=reference, controller=method, duration=duration,
                     imperfections=_imperfections(level, single, seed), solver_options=options,
                     controller_options=ctl_opts)
    t0 = time.perf_counter()
    try:
        loop = ClosedLoop(cfg)
        res = loop.run()
    except Exception as e:  # a scenario that cannot run is reported, not fatal to the table
        return {"job": job, "error": f"{type(e).__name__}: {e}"}
    m = res.metrics()
    h0 = float(res.base_pos[0, 2]) if floating and len(res.t) else 1.0
    f = loop.ctl.ctl.contact_state if hasattr(loop.ctl, "ctl") else None
    return {
        "job": job, "fell": res.failed, "t_end": float(res.t[-1]) if len(res.t) else 0.0,
        "why": res.failure, "pos_err": m.get("pos_err", np.nan),
        "min_height": float(np.min(res.base_pos[:, 2]) / h0) if floating else np.nan,
        "chatter": m.get("dtau", np.nan),
        "changes_per_s": (f.decisions_changed / max(float(res.t[-1]), 1e-9)
                          if f is not None and len(res.t) else np.nan),
        "wall": time.perf_counter() - t0,
    }


def _fmt(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    fell = f"**falls {r['t_end']:.2f} s**" if r["fell"] else "up"
    h = "" if np.isnan(r["min_height"]) else f", {100 * r['min_height']:.0f} %"
    ch = "" if np.isnan(r["changes_per_s"]) else f", {r['changes_per_s']:.1f}/s"
    return f"{fell}, {r['pos_err']:.4f} rad{h}, {r['chatter']:.0f} N m/s{ch}"


def table(results: list[dict], levels, singles: bool) -> str:
    by = {r["job"][:5]: r for r in results}
    lines = ["| robot | scenario | controller | " + " | ".join(
        "exact" if lv == 0 else f"{lv:g}x" for lv in levels) + " |",
        "|---|---|---|" + "---|" * len(levels)]
    keys = sorted({(r["job"][0], r["job"][1]) for r in results},
                  key=lambda k: (list(SCENARIOS).index(k[0]), k[1]))
    for robot, ref in keys:
        for variant in VARIANTS:
            cells = [by.get((robot, ref, lv, "", variant)) for lv in levels]
            if all(c is None for c in cells):
                continue
            lab = variant
            lines.append(f"| {robot} | {ref} | {lab} | " + " | ".join(
                "" if c is None else _fmt(c) for c in cells) + " |")
    if singles:
        lines += ["", "One perturbation alone at 1x (as shipped):", "",
                  "| robot | scenario | " + " | ".join(SINGLES) + " |",
                  "|---|---|" + "---|" * len(SINGLES)]
        for robot, ref in keys:
            cells = [by.get((robot, ref, 1.0, s, "shipped")) for s in SINGLES]
            if all(c is None for c in cells):
                continue
            lines.append(f"| {robot} | {ref} | " + " | ".join(
                "" if c is None else _fmt(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--levels", nargs="*", type=float, default=list(LEVELS))
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--singles", action="store_true")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS,
                    help="shipped: as configured; effort: effort-only drives; before: without "
                         "the contact state filter, torque low-pass and hybrid drives")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", action="store_true", help="write docs/robustness.md")
    ap.add_argument("--set", action="append", default=[], metavar="PARAMETER=VALUE",
                    help="a controller parameter over every variant's (YAML value), e.g. "
                         "joint_observer_acceleration_noise=0; repeatable")
    a = ap.parse_args(argv)
    import yaml

    extra = {}
    for item in a.set:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--set {item!r}: expected PARAMETER=VALUE")
        extra[name] = yaml.safe_load(value)
    unknown = [r for r in a.robots if r not in SCENARIOS]
    if unknown:
        ap.error(f"unknown robot(s) {unknown}; known: {list(SCENARIOS)}")
    jobs = []
    for robot in a.robots:
        fixed = robot in ("panda", "ur10")
        for ref in SCENARIOS[robot]:
            for lv in a.levels:
                for variant in (("shipped",) if fixed else a.variants):
                    jobs.append((robot, ref, lv, "", variant, a.duration, a.seed, extra))
            if a.singles:
                jobs += [(robot, ref, 1.0, s, "shipped", a.duration, a.seed, extra)
                         for s in SINGLES]
    results, wall = run_jobs(run_one, jobs, a.jobs, lambda r: f"{r['job'][:5]}: {_fmt(r)}")
    body = table(results, a.levels, a.singles)
    cmd = rerun_command("robustness_matrix.py", argv)
    report = (
        "# Robustness under realistic sensing and actuation\n\n"
        "Written by `benchmarks/robustness_matrix.py` (see its docstring); rerun with\n"
        f"`{cmd}`.\n"
        f"{len(jobs)} closed-loop runs of {a.duration:g} s simulated each, {wall / 60:.1f} min "
        "wall on this machine.\n\n"
        "Each cell: stays up or falls (time), mean joint tracking error, lowest base height "
        "(% of the start), torque chatter (mean |dτ/dt|), and the contact state filter's "
        "decisions changed per second (the first tick's touches included). Columns: the "
        "realistic combination scaled (exact = the simulator's state). Controller: *shipped* = "
        "the robot's configuration (contact state filter, joint-state observer, base-pose "
        "observer where it sets one, torque low-pass, hybrid drive command where it sets drive "
        "gains) on the noisy base state; "
        "*estimated* = the same on "
        "its own base estimate from the simulated IMU and encoders (`base_state: imu`, no "
        "odometry: docs/estimation.md); *effort* = as shipped with effort-only drives; "
        "*before* = without those options (the per-tick contact decision, effort only).\n\n"
        "Tracking against the exact state (mean joint error at 1x over the exact state's, same "
        'controller; 4 s, seed 0, as shipped). Within 3x: the quadruped, go1, go2, a1, anymal_c'
        ' and solo12, standing and trotting (0.8-1.6x), and standing at 2x (1.2-2.1x: go1, go2,'
        ' a1 and solo12 with `base_observer`, 5.8-10.6x without it; docs/real_robots.md '
        '"Base-pose noise"); panda 2.6x and ur10 2.5x, their sinusoids within the torque '
        'limits (2 Hz, 1.5 Hz: the `sinusoid` group), with integral action and latency '
        'compensation (`ki`, `state_latency`, `command_latency`; without those two 6.6x and '
        '5.4x: docs/real_robots.md). Not within: talos 11x, talos_reduced 16x, g1 15x (28-40x '
        "at 2x). What the humanoids' error is made of (`--robots talos talos_reduced g1 --levels "
        '0 1 2 --singles --variants shipped`; mrad: exact / 1x / encoders alone / mass alone / '
        'latency alone / torque lag alone): talos 0.024 / 0.26 / 0.099 / 0.22 / 0.029 / 0.029, '
        'talos_reduced 0.023 / 0.36 / 0.098 / 0.33 / 0.028 / 0.028, g1 0.047 / 0.68 / 0.14 / '
        "0.70 / 0.064 / 0.056; the base estimate's noise alone leaves the exact state's. Two "
        'terms, each above 3x by itself. The ±10 % mass error biases the realized joint '
        'accelerations and the joint PD leaves a static error: 0.14 mrad (talos) and 0.53 (g1) '
        'with the joint-state observer off (`--set joint_observer_acceleration_noise=0`), the '
        "rest of the mass column being the observer's lag behind its biased prediction. Encoder"
        " noise has a floor: the joint-state observer's model is linear with Gaussian noise, so"
        ' its steady-state Kalman filter is the least-variance estimate, and at 1 mrad / 0.02 '
        'rad/s and 1 kHz it leaves 0.109 / 0.126 / 0.137 mrad per joint (standard deviation; '
        'mean absolute 0.087 / 0.100 / 0.110) for a realized-acceleration spread of 0.1 / 0.26 '
        "/ 1 rad/s² (g1's measured spread 0.26); the joint loop (kp 400 1/s², kd 40 1/s) passes"
        " that slow error to the joints nearly whole, 1.2-1.6x talos's 3x bound (0.070 mrad) by"
        ' itself. A faster joint-state observer does not bring the ratio down (talos 11 -> 15-18x,'
        ' g1 15 -> 14x) and raises the chatter past 10x (talos at 0.4 / 3 / 10 rad/s²: exact '
        '0.024 / 0.016 / 0.015, 1x 0.26 / 0.24 / 0.26 mrad, chatter 63 / 214 / 355 N m/s; g1 at'
        ' 1 / 3 / 10: 0.047 / 0.040 / 0.037, 0.68 / 0.57 / 0.51, 26 / 49 / 81).\n\n'
        "Force evidence (`contact_force_observer_gain`, `contact_force_threshold`; off in "
        "every run here): the contact state filter can also fuse a generalized momentum "
        "observer's per-foot normal-force estimates "
        "(`wbc_dynamics.contact.momentum_observer`; the rules in the docstring of "
        "`wbc_dynamics.contact.stance`). Measured in `test/test_contact_force_observer.py` "
        "at 50 1/s: against MuJoCo's foot forces through the observer's lag, rms 0.05 N "
        "exact and 0.46 N at 1x standing (predicted 0.45 N), 0.8 N and 1.3 N trotting "
        "(bundled quadruped, 12 N per foot on average); with a 20 N threshold the "
        "quadruped's and go2's trots at 1x and 2x make the same decisions as without it (8 "
        "N: two false early touch-downs in the quadruped's 2x trot); a go2 foot landing "
        "mid-swing on a 2 cm box the contact model does not know is touched 11-14 ticks after "
        "the landing with a 12 N threshold (24-26 ticks with 20 N). Nominal standing and "
        "trotting gain nothing from it, so it ships off.\n\n"
        + body + "\n")
    publish(report, "robustness.md", a.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
