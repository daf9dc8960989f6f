"""Torque jumps at touchdown and lift-off on the bundled trot: are the torques continuous
enough for a real actuator to follow? Reports the max |dtau| per tick at transitions.

For each controller the in-process MuJoCo trot (bundled quadruped, rigid ground, high friction,
1 kHz, the closed loop's shipped options) runs for ``--duration`` s. Per tick, |dtau| = max over
joints of |tau_k - tau_(k-1)| [N m]. A tick is a *transition* tick if a foot's stance / swing
state in the gait schedule (``reference.swing_active``) changes within +-5 ticks of it; the
others are *steady*. Printed per controller: max and 99th percentile of |dtau| at transitions and
in steady ticks, the largest predicted summed normal force over m g, and whether it fell.

    python benchmarks/transition_torques.py [--duration 5] [--controllers lcp_noslip_mn,...]
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
from docs_pages import row, table_head

DEFAULT = "lcp_noslip_mn,lcp_coulomb,qp_coulomb,qp_noslip,qp_noslip_paper,id_prev,pid"


def measure(controller: str, duration: float) -> dict:
    from wbc_dynamics.robots import robot_info
    from wbc_dynamics.sim.closed_loop import ClosedLoop, LoopConfig

    loop = ClosedLoop(LoopConfig(robot="quadruped", controller=controller, reference="trot",
                                 duration=duration))
    res = loop.run(None, True)
    dtau = np.r_[0.0, np.max(np.abs(np.diff(res.tau, axis=0)), axis=1)]
    swing = np.array([loop.ref.swing_active(t) for t in res.t], dtype=bool)
    change = np.r_[False, np.any(swing[1:] != swing[:-1], axis=1)]
    near = np.convolve(change.astype(float), np.ones(11), mode="same") > 0  # +-5 ticks
    near[0] = False  # the first tick has no previous torque
    steady = ~near
    steady[0] = False
    mg = robot_info("quadruped")["total_mass"] * 9.81
    pred = res.normal_pred[np.isfinite(res.normal_pred)]
    return {
        "controller": controller,
        "transitions": int(change.sum()),
        "max_transition": float(dtau[near].max()) if near.any() else float("nan"),
        "p99_transition": float(np.percentile(dtau[near], 99)) if near.any() else float("nan"),
        "max_steady": float(dtau[steady].max()),
        "p99_steady": float(np.percentile(dtau[steady], 99)),
        "max_normal_over_mg": float(pred.max() / mg) if pred.size else float("nan"),
        "result": f"FALLS at {res.t[-1]:.2f} s" if res.failed else "trots",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--controllers", default=DEFAULT)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("\n".join(table_head(["controller", "result", "transitions",
                                "max / p99 \\|Δτ\\| at transitions [N m/tick]",
                                "max / p99 \\|Δτ\\| steady [N m/tick]",
                                "max predicted Σ normal / m g"])))
    for c in args.controllers.split(","):
        r = measure(c, args.duration)
        print(row([c, r["result"], str(r["transitions"]),
                   f"{r['max_transition']:.2f} / {r['p99_transition']:.2f}",
                   f"{r['max_steady']:.2f} / {r['p99_steady']:.2f}",
                   f"{r['max_normal_over_mg']:.2f}"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
