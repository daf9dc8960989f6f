"""Time building a ``RobotModel`` (parse, tree, warm-up) from serial chains of many links.

Each size is built twice in one process after the kernels are loaded (a 3-link chain first),
and the best time is reported with its ratio to the smallest size: construction is linear in
the number of links when the ratio grows like the size.

    python benchmarks/bench_model_size.py [--links 1000 2000 4000 16000] [--markdown] [--write]

``--write`` puts the table, a met / missed line per target (2 000 links <= 2 s, 16 000 links
<= 15 s) and the command that reran it between the markers of docs/core.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from docs_pages import ROOT, rerun_command, row, table_head, write_between_markers  # noqa: E402
from model_helpers import chain_urdf  # noqa: E402

from wbc_dynamics import RobotModel  # noqa: E402

#: (links, seconds): building a model of that many links must take at most that long
TARGETS = ((2000, 2.0), (16000, 15.0))
REPORT_MARKERS = ("<!-- bench_model_size report: written by bench_model_size.py --write -->",
                  "<!-- end of the bench_model_size report -->")


def report(rows: list[tuple[int, float]], argv: list[str] | None = None) -> str:
    """The markdown table of ``rows`` ((links, best build time [s]), the first the reference
    size), one met / missed line per target of :data:`TARGETS` measured in ``rows`` and the
    rerun command."""
    n0, t0 = rows[0]
    lines = table_head(["links", "build [s]", "time ratio", "size ratio"])
    lines += [row([str(n), f"{t:.2f}", f"{t / t0:.1f}", f"{n / n0:.0f}"]) for n, t in rows]
    lines.append("")
    built = dict(rows)
    for links, limit in TARGETS:
        if links not in built:
            continue
        t = built[links]
        verdict = "met" if t <= limit else f"**missed** by {t - limit:.2f} s"
        lines.append(f"* {links} links in <= {limit:g} s: {t:.2f} s, {verdict}.")
    lines += ["", f"Rerun: `{rerun_command('bench_model_size.py', argv)}`"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[1000, 2000, 4000, 16000])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--write", action="store_true",
                        help="also write the report into docs/core.md (between its markers)")
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
    if args.markdown or args.write:
        text = report(rows)
        print(text)
        if args.write:
            write_between_markers(os.path.join(ROOT, "docs", "core.md"), REPORT_MARKERS, text)
    else:
        for n, t in rows:
            print(f"{n:6d} links: {t:6.2f} s  (x{t / t0:.1f} for x{n / n0:.0f} links)")


if __name__ == "__main__":
    main()
