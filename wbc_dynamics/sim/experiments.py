"""Reproduce the experiments of Zapolsky & Drumwright, Sec. 8, in MuJoCo (``wbc_experiments``).

Scenarios (Sec. 7.5 / 7.6 / 7.2.2):

* quadruped trot (period 0.3 s, duty factor 0.75, step height 1.5 cm, 20 cm/s) on planar ground
  with {high, low} friction x {rigid, compliant} contact (low mu = 0.1; "high" stands in for the
  paper's infinite friction, see :data:`~wbc_dynamics.sim.mujoco_model.HIGH_FRICTION`; compliant
  ground sinks ~1 mm under the standing robot, like the paper's);
* the arm following a 3 Hz sinusoid while four fingers hold the box, with {high, mu = 1} friction;
* in addition (not in the paper): the quadruped swaying its weight over four feet (no
  touchdowns) on rigid/high-friction and compliant/low-friction ground.

Controllers (Sec. 7.3): ``qp_coulomb`` (two-stage, ID(t_i)_QP,mu), ``qp_noslip`` (ID(t_i)_QP,inf),
``lcp_coulomb`` (ID(t_i)_LCP,mu), ``lcp_noslip`` (ID(t_i)_LCP,inf), ``id_prev`` (ID(t_{i-1}),
the simulator's contact forces of the previous step) and ``pid`` (joint PID baseline). All ID
controllers share the same PD error feedback.

Metrics: Table 3 joint position / velocity tracking error, Table 4 mean ``|dtau/dt|`` and ``|tau|``,
Table 5 contact normal force prediction error (sum of normal forces, predicted vs simulated),
Table 6 fell / dropped the box (and when). The command writes a markdown report with the tables
and PNG plots (default ``docs/experiments.md`` and ``docs/experiments/``).

    python -m wbc_dynamics.sim.experiments                 # 10 s trots, 3 s arm runs
    python -m wbc_dynamics.sim.experiments --quick         # 2 s trots, 1 s arm runs
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections.abc import Sequence

import numpy as np

from .closed_loop import LoopConfig, LoopResult, run

__all__ = ["ARM_CASES", "CONTROLLERS", "PAPER_TABLE3", "PAPER_TABLE4", "PAPER_TABLE5",
           "SHIFT_CASES", "TERRAINS", "main", "run_all", "write_report"]

CONTROLLERS = ("qp_coulomb", "qp_coulomb_paper", "qp_noslip", "qp_noslip_paper", "lcp_coulomb",
               "lcp_coulomb_paper", "lcp_noslip", "lcp_noslip_mn", "id_prev", "pid")
PAPER_NAMES = {
    "qp_coulomb": "ID(t_i) QP,mu", "qp_noslip": "ID(t_i) QP,inf",
    "lcp_coulomb": "ID(t_i) LCP,mu", "lcp_noslip": "ID(t_i) LCP,inf",
    "lcp_noslip_mn": "ID(t_i) LCP,inf min-norm",
    "qp_coulomb_paper": "ID(t_i) QP,mu (eq. 69 as written)",
    "qp_noslip_paper": "ID(t_i) QP,inf (eq. 69 as written)",
    "lcp_coulomb_paper": "ID(t_i) LCP,mu (Lemke vertex, qdd_des as given)",
    "id_prev": "ID(t_i-1)", "pid": "PID", "none": "ID, no contact",
}
#: (label, friction, compliant) of the quadruped terrains (Sec. 7.5).
TERRAINS = (("Rigid, Low Friction", "low", False), ("Rigid, High Friction", "high", False),
            ("Compliant, Low Friction", "low", True), ("Compliant, High Friction", "high", True))
#: (label, friction, compliant) of the extra weight-shift runs (four feet on the ground, the
#: base swaying 2 cm sideways at 0.5 Hz): contact prediction without touchdowns.
SHIFT_CASES = (("Weight shift, Rigid, High Friction", "high", False),
               ("Weight shift, Compliant, Low Friction", "low", True))
#: (label, box friction) of the arm cases (Sec. 8.4.1: mu = inf and mu = 1).
ARM_CASES = (("Arm + box, High Friction", "high"), ("Arm + box, mu = 1", 1.0))


#: Zapolsky & Drumwright, Table 3 (position error rad, velocity error rad/s; None = the robot fell).
PAPER_TABLE3 = {
    "Rigid, Low Friction": {"qp_coulomb": (0.0310, 1.9425), "qp_noslip": (0.0483, 2.6295),
                            "lcp_coulomb": (0.0239, 1.8386), "lcp_noslip": None,
                            "pid": (0.0895, 1.5569), "id_prev": (0.0325, 1.7952)},
    "Rigid, High Friction": {"qp_coulomb": (0.0486, 2.2596), "qp_noslip": (0.0654, 2.5737),
                             "lcp_coulomb": (0.0259, 1.8784), "lcp_noslip": (0.0260, 1.8950),
                             "pid": (0.0916, 1.4653), "id_prev": (0.1317, 2.5585)},
    "Compliant, Low Friction": {"qp_coulomb": (0.0217, 2.0365), "qp_noslip": None,
                                "lcp_coulomb": (0.0219, 2.0786), "lcp_noslip": None,
                                "pid": (0.0850, 1.5845), "id_prev": (0.0265, 1.8858)},
    "Compliant, High Friction": {"qp_coulomb": (0.0342, 2.9360), "qp_noslip": (0.0446, 3.9779),
                                 "lcp_coulomb": (0.0226, 2.1243), "lcp_noslip": None,
                                 "pid": (0.0850, 1.5845), "id_prev": (0.1270, 4.4377)},
}
#: Zapolsky & Drumwright, Table 4 (E|dtau|, E|tau|, the paper's units), all terrains together.
PAPER_TABLE4 = {"qp_coulomb": (52.5718, 0.2016), "qp_noslip": (245.5117, 0.4239),
                "lcp_coulomb": (677.9693, 0.8351), "lcp_noslip": (351.1803, 0.4055),
                "id_prev": (974.3312, 0.9918), "pid": (100.1571, 0.3413)}
#: Zapolsky & Drumwright, Table 5 (absolute error N, relative error %; None = fell).
PAPER_TABLE5 = {
    "Rigid, Low Friction": {"qp_coulomb": (3.8009, 12.53), "qp_noslip": (8.4567, 22.26),
                            "lcp_coulomb": (0.9371, 1.94), "lcp_noslip": None},
    "Rigid, High Friction": {"qp_coulomb": (13.8457, 27.48), "qp_noslip": (12.4153, 25.26),
                             "lcp_coulomb": (1.2768, 1.55), "lcp_noslip": (0.3572, 1.16)},
    "Compliant, Low Friction": {"qp_coulomb": (7.8260, 17.12), "qp_noslip": None,
                                "lcp_coulomb": (4.6385, 6.37), "lcp_noslip": None},
    "Compliant, High Friction": {"qp_coulomb": (14.9225, 30.86), "qp_noslip": (15.1897, 30.66),
                                 "lcp_coulomb": (12.4896, 24.00), "lcp_noslip": None},
}


def _one(cfg: LoopConfig, log) -> tuple[LoopResult | None, str]:
    t0 = time.perf_counter()
    try:
        res = run(cfg, stop_on_failure=True)
    except (ValueError, ImportError, NotImplementedError) as exc:
        log(f"  {cfg.controller:12s} unavailable: {exc}")
        return None, str(exc)
    m = res.metrics()
    state = f"FELL at {res.t[-1]:.2f} s ({res.failure})" if res.failed else "ok"
    log(f"  {cfg.controller:12s} pos err {m.get('pos_err', float('nan')):.4f} rad, "
        f"|dtau/dt| {m.get('dtau', float('nan')):8.1f}, force err "
        f"{100 * m.get('force_rel', float('nan')):6.1f}%, {state}  "
        f"[{time.perf_counter() - t0:.0f} s wall]")
    return res, ""


def run_all(duration: float = 10.0, arm_duration: float = 3.0,
            controllers: Sequence[str] = CONTROLLERS, terrains=TERRAINS, arm_cases=ARM_CASES,
            box_mass: float | None = None, log=print, shift_cases=SHIFT_CASES,
            shift_duration: float = 5.0, solver_options: dict | None = None,
            grasp_force: float = 20.0) -> dict:
    """Run every scenario; returns ``{scenario label: {controller: LoopResult | error str}}``.

    ``grasp_force`` [N]: arm + box, contact-aware methods: desired internal (squeeze) force per
    touching fingertip plus the Sec. 7.2.2 finger hold (``LoopConfig.grasp_force`` /
    ``hold_touching_fingers``; ``docs/simulation.md`` "Arm + box"); 0 = both off.
    """
    results: dict[str, dict] = {}

    def scenario(label: str, what: str, seconds: float, **config) -> None:
        log(f"{label}: {what}, {seconds:g} s")
        results[label] = {}
        for c in controllers:
            cfg = LoopConfig(controller=c, duration=seconds, solver_options=solver_options or {},
                             **config)
            res, err = _one(cfg, log)
            results[label][c] = res if res is not None else err

    for label, friction, compliant in shift_cases:
        scenario(label, "quadruped weight shift", shift_duration, robot="quadruped",
                 reference="shift", friction=friction, compliant=compliant)
    for label, friction, compliant in terrains:
        scenario(label, "quadruped trot", duration, robot="quadruped", reference="trot",
                 friction=friction, compliant=compliant)
    for label, friction in arm_cases:
        scenario(label, "arm sinusoid with the box", arm_duration, robot="arm",
                 reference="sinusoid", friction=friction, box_mass=box_mass,
                 grasp_force=grasp_force, hold_touching_fingers=grasp_force > 0.0)
    return results


def _fmt(x: float, spec: str) -> str:
    return "–" if x is None or not np.isfinite(x) else format(x, spec)


def _plots(results: dict, outdir: str) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(outdir, exist_ok=True)
    paths = {}
    for label, runs in results.items():
        ok = {c: r for c, r in runs.items() if isinstance(r, LoopResult) and len(r.t)}
        if not ok:
            continue
        fig, ax = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
        for c, r in ok.items():
            w = max(1, min(len(r.t), int(0.1 * r.config.control_rate)))  # 100 ms mean
            e = np.mean(np.abs(r.q - r.q_des), axis=1)
            ax[0].plot(r.t, np.convolve(e, np.ones(w) / w, mode="same"), lw=1,
                       label=PAPER_NAMES.get(c, c) + (" (fell)" if r.failed else ""))
            dtau = np.r_[0.0, np.mean(np.abs(np.diff(r.tau, axis=0)), axis=1)] \
                * r.config.control_rate
            ax[1].plot(r.t, np.convolve(dtau, np.ones(w) / w, mode="same"), lw=1)
            if np.any(np.isfinite(r.normal_pred)):
                ax[2].plot(r.t, np.convolve(np.nan_to_num(r.normal_pred - r.normal_sim),
                                            np.ones(w) / w, mode="same"), lw=1,
                           label=PAPER_NAMES.get(c, c))
        ax[0].set_ylabel("E|q - q_des| [rad]\n(100 ms mean)")
        ax[0].legend(fontsize=7, ncol=3)
        ax[0].set_title(label)
        ax[1].set_ylabel("E|dtau/dt| [N m/s]\n(100 ms mean)")
        ax[1].set_yscale("log")
        ax[2].set_ylabel("predicted - simulated\nsum of normal forces [N]")
        ax[2].set_xlabel("simulated time [s]")
        if ax[2].get_legend_handles_labels()[0]:
            ax[2].legend(fontsize=7, ncol=2)
        for a in ax:
            a.grid(alpha=0.3)
        fig.tight_layout()
        name = "".join(ch if ch.isalnum() else "_" for ch in label.lower()).strip("_") + ".png"
        path = os.path.join(outdir, name)
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths[label] = path
    return paths


def write_report(results: dict, path: str, figdir: str, settings: dict) -> str:
    """Markdown report with Tables 3-6 and the plots; returns the path."""
    figs = _plots(results, figdir)
    rel = os.path.relpath(figdir, os.path.dirname(os.path.abspath(path)))
    L: list[str] = []
    a = L.append
    a("# Closed-loop experiments (Zapolsky & Drumwright, Sec. 8) in MuJoCo\n")
    a(f"Generated by `python -m wbc_dynamics.sim.experiments` "
      f"({platform.machine()}, Python {platform.python_version()}).\n")
    a("Settings: " + ", ".join(f"{k} = {v}" for k, v in settings.items()) + ".\n")
    a("Plant: MuJoCo model generated from the bundled URDFs (mass matrix and bias forces equal the "
      "controller's model to 1e-15, `test/test_sim_mujoco_model.py`); control and simulation at "
      "1 kHz; soft MuJoCo contacts with an elliptic friction cone (the controllers model rigid "
      "contact with a 4-edge pyramid). \"High\" friction is mu = 10 in the simulator and in the "
      "Coulomb controllers (the paper: mu = infinity). Gaits, gains and metrics: see "
      "`docs/simulation.md`.\n")
    a("A dash means the metric does not exist (a controller that predicts no contact forces) or "
      "the controller is not available in this build; metrics of runs that fell are over the "
      "time before the fall (Table 6 says when).\n")

    def per_scenario_tables(columns, cells):
        """One table per scenario, a row per controller: ``cells(metrics, result)`` gives the
        row's cells under ``columns``; a dash in each for a controller without a run."""
        for label in results:
            a(f"\n**{label}**\n\n| controller | " + " | ".join(columns) + " |\n|---"
              + "|---" * len(columns) + "|")
            for c, r in results[label].items():
                if isinstance(r, LoopResult) and len(r.t):
                    a(f"| {PAPER_NAMES.get(c, c)} | " + " | ".join(cells(r.metrics(), r)) + " |")
                else:
                    a(f"| {PAPER_NAMES.get(c, c)} |" + " – |" * len(columns))

    a("\n## Table 3 – joint tracking error\n")
    a("E[E|q − q_des|] [rad] / E[E|q̇ − q̇_des|] [rad/s], all joints, whole run.\n")
    per_scenario_tables(
        ["position error", "velocity error", "max position error"],
        lambda m, r: [f"{_fmt(m['pos_err'], '.4f')}{' (fell)' if r.failed else ''}",
                      _fmt(m["vel_err"], ".4f"), _fmt(m["pos_err_max"], ".3f")])
    a("\n## Table 4 – torque smoothness\n")
    a("E[|Δτ|/Δt] [N m/s] and E[|τ|] [N m], all joints and ticks.\n")
    per_scenario_tables(
        ["E[abs(dτ/dt)]", "max abs(dτ/dt)", "E[abs(τ)]", "ticks at effort limit"],
        lambda m, r: [_fmt(m["dtau"], ".1f"), _fmt(m["dtau_max"], ".0f"), _fmt(m["tau"], ".4f"),
                      f"{100 * m['clamp_frac']:.1f}%"])
    a("\n## Table 5 – contact normal force prediction\n")
    a("Mean |Σ predicted normal − Σ simulated normal| per tick and its ratio to the mean "
      "simulated Σ (the quadruped weighs 47.09 N); the median column is the same error's "
      "median over the ticks (the mean is dominated by a few touchdown ticks where the model "
      "predicts an impulse). Predicted = the controller's contact forces for the tick; "
      "simulated = MuJoCo's contact forces after the step.\n")
    per_scenario_tables(
        ["absolute error", "relative error", "median error", "mean Σ predicted",
         "mean Σ simulated"],
        lambda m, r: [f"{_fmt(m.get('force_abs'), '.3f')} N",
                      f"{_fmt(100 * m.get('force_rel', np.nan), '.2f')}%",
                      f"{_fmt(m.get('force_median'), '.3f')} N",
                      f"{_fmt(m.get('normal_pred_mean'), '.2f')} N",
                      f"{_fmt(m.get('normal_sim_mean'), '.2f')} N"])
    a("\n## Table 6 – task success\n")
    a("Quadruped: fell (base below half its standing height, tilted > 60°, or trunk on the "
      "ground). Arm: dropped the box (box moved > 5 cm relative to the hand).\n")
    labels = list(results)
    a("\n| controller | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels))
    ctrls = list(dict.fromkeys(c for lb in labels for c in results[lb]))
    for c in ctrls:
        cells = []
        for lb in labels:
            r = results[lb].get(c)
            if isinstance(r, LoopResult):
                cells.append(f"failed at {r.t[-1]:.2f} s" if r.failed else "ok")
            else:
                cells.append("n/a")
        a(f"| {PAPER_NAMES.get(c, c)} | " + " | ".join(cells) + " |")
    a("\n## Beside the paper (Zapolsky & Drumwright, Tables 3–5, Moby simulator, 30 s trots)\n")
    a("Paper values first, this run second; \"fell\" where the robot fell. The paper's Table 4 "
      "is one row per controller over its locomotion runs; ours is the rigid, high-friction "
      "trot.\n")
    trot = [lb for lb in PAPER_TABLE3 if lb in results]
    if trot:
        a("\n| terrain | controller | paper pos / vel error | this run pos / vel error | "
          "paper force error | this run force error |\n|---|---|---|---|---|---|")
        for lb in trot:
            for c in results[lb]:
                p3 = PAPER_TABLE3[lb].get(c, "n/a")
                p5 = PAPER_TABLE5[lb].get(c, "n/a")
                r = results[lb][c]
                if isinstance(r, LoopResult) and len(r.t):
                    m = r.metrics()
                    ours3 = f"{m['pos_err']:.4f} / {m['vel_err']:.3f}" + \
                        (" (fell)" if r.failed else "")
                    ours5 = (f"{m['force_abs']:.2f} N / {100 * m['force_rel']:.1f}%"
                             if "force_abs" in m else "–")
                else:
                    ours3 = ours5 = "n/a"
                t3 = "fell" if p3 is None else (p3 if isinstance(p3, str) else
                                                 f"{p3[0]:.4f} / {p3[1]:.3f}")
                t5 = "fell" if p5 is None else (p5 if isinstance(p5, str) else
                                                 f"{p5[0]:.2f} N / {p5[1]:.1f}%")
                a(f"| {lb} | {PAPER_NAMES.get(c, c)} | {t3} | {ours3} | {t5} | {ours5} |")
    lb = "Rigid, High Friction"
    if lb in results:
        a("\n| controller | paper E[abs(Δτ)] / E[abs(τ)] | this run E[abs(dτ/dt)] [N m/s] / "
          "E[abs(τ)] [N m] |\n|---|---|---|")
        for c, r in results[lb].items():
            p4 = PAPER_TABLE4.get(c)
            ours = "n/a"
            if isinstance(r, LoopResult) and len(r.t):
                m = r.metrics()
                ours = f"{m['dtau']:.1f} / {m['tau']:.3f}" + (" (fell)" if r.failed else "")
            a(f"| {PAPER_NAMES.get(c, c)} | "
              f"{'n/a' if p4 is None else f'{p4[0]:.1f} / {p4[1]:.3f}'} | {ours} |")
    a("\n## Controller tick time\n")
    a("Wall-clock compute time of one controller tick (mean / p99 / max, µs) in the first "
      "scenario each controller completed, on this shared machine.\n")
    a("\n| controller | mean | p99 | max | solver flags (ticks) |\n|---|---|---|---|---|")
    for c in ctrls:
        for lb in labels:
            r = results[lb].get(c)
            if isinstance(r, LoopResult) and len(r.t):
                m = r.metrics()
                fl = ", ".join(f"{k}: {v}" for k, v in sorted(r.flags.items())) or "–"
                a(f"| {PAPER_NAMES.get(c, c)} ({lb}) | {1e6 * m['tick_mean']:.0f} | "
                  f"{1e6 * m['tick_p99']:.0f} | {1e6 * m['tick_max']:.0f} | {fl} |")
                break
    errors = [(lb, c, r) for lb in labels for c, r in results[lb].items()
              if not isinstance(r, LoopResult)]
    if errors:
        a("\n## Unavailable controllers\n")
        for lb, c, r in errors:
            a(f"- {lb}, {c}: {r}")
    a("\n## Plots\n")
    for lb, p in figs.items():
        a(f"\n### {lb}\n\n![{lb}]({os.path.join(rel, os.path.basename(p))})\n")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``wbc_experiments`` console script (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="wbc_experiments", description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=10.0, help="quadruped trot [s] (10)")
    ap.add_argument("--arm-duration", type=float, default=3.0, help="arm task [s] (3)")
    ap.add_argument("--quick", action="store_true", help="2 s trots, 1 s arm runs")
    ap.add_argument("--controllers", default=",".join(CONTROLLERS),
                    help="comma-separated subset of " + ",".join(CONTROLLERS))
    ap.add_argument("--no-arm", action="store_true", help="skip the arm scenarios")
    ap.add_argument("--no-quadruped", action="store_true", help="skip the quadruped scenarios")
    ap.add_argument("--box-mass", type=float, default=None, help="arm task box mass [kg]")
    ap.add_argument("--lcp-min-norm", action="store_true",
                    help="lcp_noslip with min_norm=True (minimum-norm impulses instead of the "
                    "paper's warm-started vertex solution)")
    ap.add_argument("--grasp-force", type=float, default=20.0,
                    help="arm task: internal squeeze per fingertip [N] + finger hold for the "
                    "contact-aware methods (20; 0 = off, every contact method drops the box)")
    ap.add_argument("--report", default="docs/experiments.md", help="markdown report path")
    ap.add_argument("--figures", default="docs/experiments", help="directory for the PNGs")
    args = ap.parse_args(argv)
    controllers = [c.strip() for c in args.controllers.split(",") if c.strip()]
    from .closed_loop import CONTROLLERS as KNOWN

    bad = [c for c in controllers if c not in KNOWN]
    if bad:
        print(f"wbc_experiments: --controllers: unknown {bad}; known {list(KNOWN)}",
              file=sys.stderr)
        return 2
    if not (math.isfinite(args.grasp_force) and args.grasp_force >= 0.0):
        print("wbc_experiments: --grasp-force must be finite and >= 0", file=sys.stderr)
        return 2
    dur = 2.0 if args.quick else args.duration
    arm_dur = 1.0 if args.quick else args.arm_duration
    t0 = time.perf_counter()
    results = run_all(dur, arm_dur, controllers,
                      terrains=() if args.no_quadruped else TERRAINS,
                      arm_cases=() if args.no_arm else ARM_CASES, box_mass=args.box_mass,
                      log=lambda s: print(s, flush=True),
                      shift_cases=() if args.no_quadruped else SHIFT_CASES,
                      shift_duration=min(dur, 5.0),
                      solver_options={"lcp_noslip": {"min_norm": True}} if args.lcp_min_norm
                      else None, grasp_force=args.grasp_force)
    settings = {"quadruped trot duration": f"{dur:g} s", "arm duration": f"{arm_dur:g} s",
                "controllers": ", ".join(controllers),
                "box mass": f"{args.box_mass:g} kg" if args.box_mass else "bundled (0.5 kg)",
                "lcp_noslip": "min_norm" if args.lcp_min_norm else "paper (vertex, warm-started)",
                "arm grasp force": (f"{args.grasp_force:g} N per fingertip + finger hold"
                                    if args.grasp_force > 0 else "off"),
                "wall time": f"{time.perf_counter() - t0:.0f} s"}
    path = write_report(results, args.report, args.figures, settings)
    print(f"report: {os.path.abspath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
