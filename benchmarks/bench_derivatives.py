"""Time the derivative / linearization / IWIM functions against Pinocchio in the same process.

Both sides are called through their public Python APIs on the same random state; ours include
input checking and allocate their returned arrays. Each timing is the best of several
interleaved repeats (the machine is shared and noisy: compare the ratios of one run).

    python benchmarks/bench_derivatives.py [--robots quadruped humanoid] [--markdown]

Rows:
  rnea_derivatives  vs pinocchio.computeRNEADerivatives (dtau/dq, dtau/dv, M)
  aba_derivatives   vs pinocchio.computeABADerivatives  (dqdd/dq, dqdd/dv, M^-1)
  linearize (dt=None): A, B assembled (2nv x 2nv) vs computeABADerivatives (reference only:
                       Pinocchio has no such function; the difference is our assembly cost)
  iwim(q, S_joints) vs pinocchio.computeMinverse(q) @ S_joints
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_core import models_and_state, time_cases

from wbc_dynamics.iwim import iwim
from wbc_dynamics.linearization import aba_derivatives, linearize, rnea_derivatives
from wbc_dynamics.robots import robot_info


def bench_robot(
    name: str, floating: bool, number: int, repeat: int, rounds: int = 5
) -> list[tuple]:
    import pinocchio as pin

    model, pmodel, pdata, q, v, a = models_and_state(name, floating)
    off = 6 if floating else 0
    S = np.zeros((model.nv, model.nv - off))
    S[off:] = np.eye(model.nv - off)
    cases = [
        (
            "rnea_derivatives",
            lambda: rnea_derivatives(model, q, v, a),
            lambda: pin.computeRNEADerivatives(pmodel, pdata, q, v, a),
        ),
        (
            "aba_derivatives",
            lambda: aba_derivatives(model, q, v, a),
            lambda: pin.computeABADerivatives(pmodel, pdata, q, v, a),
        ),
        (
            "linearize (A, B)",
            lambda: linearize(model, q, v, a),
            lambda: pin.computeABADerivatives(pmodel, pdata, q, v, a),
        ),
        (
            "iwim (joints)",
            lambda: iwim(model, q, S),
            lambda: pin.computeMinverse(pmodel, pdata, q) @ S,
        ),
    ]
    return time_cases(name, floating, model.nv, cases, number, repeat, rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--robots", nargs="*", default=["quadruped", "humanoid", "branched", "arm"])
    parser.add_argument("--number", type=int, default=300, help="calls per repeat")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (best kept)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    rows = []
    for name in args.robots:
        rows += bench_robot(
            name, robot_info(name)["floating_base"], args.number, args.repeat, args.rounds
        )
    if args.markdown:
        print("| robot | base | nv | function | wbc_dynamics [µs] | Pinocchio [µs] | ratio |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.1f} | {r[5]:.1f} | "
                f"{r[4] / r[5]:.2f} |"
            )
    else:
        print(
            f"{'robot':10s} {'base':8s} {'nv':>3s}  {'function':18s} {'ours us':>8s} "
            f"{'pin us':>8s} {'ratio':>6s}"
        )
        for r in rows:
            print(
                f"{r[0]:10s} {r[1]:8s} {r[2]:3d}  {r[3]:18s} {r[4]:8.1f} {r[5]:8.1f} "
                f"{r[4] / r[5]:6.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
