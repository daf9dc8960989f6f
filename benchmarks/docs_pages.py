"""What the benchmarks that write a page of ``docs/`` share (estimation_eval, estimator_compare,
robustness_matrix, ros_estimation_soak): the page's cells and rerun line, and its output."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cell(v, fmt: str) -> str:
    """``v`` formatted, empty for None or NaN."""
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def drift_cell(m: dict) -> str:
    """The estimate's position drift: per distance travelled where the run moved
    (``drift_per_distance``), else in cm (standing)."""
    dpd = m.get("drift_per_distance", math.nan)
    if not math.isnan(dpd):
        return f"{100 * dpd:.1f} % of {m['distance']:.2f} m"
    return f"{100 * m.get('drift', math.nan):.1f} cm (standing)"


def rerun_command(script: str, argv: Sequence[str] | None) -> str:
    """The command line that reran ``benchmarks/<script>`` with these arguments."""
    return ("python benchmarks/" + script + " "
            + " ".join(argv if argv is not None else sys.argv[1:])).strip()


def publish(report: str, page: str, write: bool) -> None:
    """Print the page ``report``; with ``write`` also into ``docs/<page>``."""
    if write:
        with open(os.path.join(ROOT, "docs", page), "w") as fh:
            fh.write(report)
    print(report)
