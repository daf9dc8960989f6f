"""Torque smoothness along an indeterminate standing trajectory
(Zapolsky & Drumwright, Sec. 4.6 / Sec. 8.1).

The bundled quadruped sways on four feet (base translation 1 cm / 4 mm / 5 mm in x / y / z,
period 1 s; joint velocities and accelerations from the no-slip foot constraints at the
velocity level of the first-order model, so every tick is consistent; the feet's O(dt^2)
integration drift is removed by setting phi = 0). With four point contacts the no-slip problem
is indeterminate (rank of the projected inverse inertia = 3 < 4 contacts, Fig. 5), so the
predicted torques depend on how the solver picks among equivalent force distributions.

For every available method and variant we report mean |dtau| and max |dtau| per tick [N m]
(over all joints and ticks) and mean |tau|, with a warm-started ``SolverState`` and cold
(``state=None``). Variants: ``lcp_noslip`` (+ ``min_norm``), ``qp_*`` with and without Stage II.

    python benchmarks/contact_smoothness.py [--ticks 1000] [--markdown] [--methods lcp_noslip]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
from contact_helpers import sway_problems  # noqa: E402  (the tests' four-foot sway problems)

from wbc_dynamics.contact import METHODS, SolverState, solve  # noqa: E402

VARIANTS = [
    ("lcp_noslip", {}),
    ("lcp_noslip", {"min_norm": True}),
    ("lcp_coulomb", {}),
    ("qp_coulomb", {}),
    ("qp_coulomb", {"stage2": False}),
    ("qp_noslip", {}),
    ("qp_noslip", {"stage2": False}),
]


def measure(probs, method: str, options: dict, warm: bool) -> dict:
    st = SolverState() if warm else None
    taus, flags = [], {}
    for p in probs:
        r = solve(method, p, st, **options)
        taus.append(r.tau)
        for f in r.stats.flags:
            flags[f] = flags.get(f, 0) + 1
    t = np.array(taus)
    d = np.abs(np.diff(t, axis=0))
    return {"mean_dtau": float(d.mean()), "max_dtau": float(d.max()),
            "mean_tau": float(np.abs(t).mean()), "flags": flags}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ticks", type=int, default=1000)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--methods", nargs="+", default=None, help="restrict to these methods")
    args = ap.parse_args(argv)
    probs = sway_problems(args.ticks)
    rows = []
    for method, opts in VARIANTS:
        if args.methods and method not in args.methods:
            continue
        mod, fn = METHODS[method]
        try:
            if not hasattr(importlib.import_module(mod), fn):
                continue
        except ImportError:
            continue
        for warm in (True, False):
            r = measure(probs, method, opts, warm)
            name = method + "".join(f" {k}={v}" for k, v in opts.items())
            rows.append({"method": name, "warm": warm, **r})
            print(f"{name:28s} {'warm' if warm else 'cold'}: mean|dtau| {r['mean_dtau']:.3e} "
                  f"max|dtau| {r['max_dtau']:.3e} mean|tau| {r['mean_tau']:.3e} "
                  f"flags {r['flags']}", flush=True)
    if args.markdown:
        print("\n| method | start | mean abs dtau [N m] | max abs dtau [N m] "
              "| mean abs tau [N m] |")
        print("|---|---|---:|---:|---:|")
        for r in rows:
            print(f"| {r['method']} | {'warm' if r['warm'] else 'cold'} | {r['mean_dtau']:.2e} "
                  f"| {r['max_dtau']:.2e} | {r['mean_tau']:.3f} |")
    return rows


if __name__ == "__main__":
    main()
