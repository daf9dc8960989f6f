"""Time building a ``RobotModel`` (parse, tree, warm-up) from serial chains of many links.

Each size is built twice in one process after the kernels are loaded (a 3-link chain first),
and the best time is reported with its ratio to the smallest size: construction is linear in
the number of links when the ratio grows like the size.

    python benchmarks/bench_model_size.py [--links 1000 2000 4000 16000] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from model_helpers import chain_urdf  # noqa: E402

from wbc_dynamics import RobotModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[1000, 2000, 4000, 16000])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    RobotModel.from_urdf(chain_urdf(3))  # load / compile the kernels outside the timing
    rows = []
    for n in args.links:
        xml = chain_urdf(n)
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            RobotModel.from_urdf(xml)
            best = min(best, time.perf_counter() - t0)
        rows.append((n, best))
    n0, t0 = rows[0]
    if args.markdown:
        print("| links | build [s] | time ratio | size ratio |\n|---|---|---|---|")
        for n, t in rows:
            print(f"| {n} | {t:.2f} | {t / t0:.1f} | {n / n0:.0f} |")
    else:
        for n, t in rows:
            print(f"{n:6d} links: {t:6.2f} s  (x{t / t0:.1f} for x{n / n0:.0f} links)")


if __name__ == "__main__":
    main()
