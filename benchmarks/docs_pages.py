"""What the benchmarks that write a page of ``docs/`` share (estimation_eval, estimator_compare,
robustness_matrix, ros_estimation_soak) or a section of one (bench_node, sim_speed): the page's
cells and rerun line, its runs in worker processes, and its output; and the markdown table lines
every benchmark prints."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cell(v, fmt: str) -> str:
    """``v`` formatted, empty for None or NaN."""
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def table_head(columns: Sequence[str]) -> list[str]:
    """The header line and the separator line of a markdown table with these columns."""
    return [row(columns), "|" + "---|" * len(columns)]


def row(cells: Sequence[str]) -> str:
    """One markdown table row of these (already formatted) cells."""
    return "| " + " | ".join(cells) + " |"


#: the columns of an estimator's errors (:func:`estimate_row`), before its timing column
ESTIMATE_COLUMNS = ("velocity RMS [m/s]", "drift / distance", "height RMS [mm]",
                    "roll/pitch RMS [deg]", "yaw drift [deg/min]")


def estimate_table_head(columns: Sequence[str], timing: str) -> list[str]:
    """The head of a table of estimator errors: ``columns``, :data:`ESTIMATE_COLUMNS` and the
    timing column ``timing``."""
    return table_head([*columns, *ESTIMATE_COLUMNS, timing])


def estimate_row(cells: Sequence[str], m: dict, timing: str, height_fmt: str = ".1f",
                 tilt_fmt: str = ".2f") -> str:
    """A row of :func:`estimate_table_head`'s table: ``cells``, then the errors ``m`` of one
    estimator (``LoopResult.estimation_metrics()``'s keys, heights in m): velocity RMS [m/s],
    :func:`drift_cell`, height RMS [mm], roll/pitch RMS [deg], yaw drift [deg/min] and
    ``m[timing]`` [us]."""
    return row([*cells, cell(m.get("velocity_rms"), ".4f"), drift_cell(m),
                cell(1e3 * m.get("height_rms", math.nan), height_fmt),
                cell(m.get("tilt_rms"), tilt_fmt), cell(m.get("yaw_drift_per_min"), ".2f"),
                cell(m.get(timing), ".1f")])


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


def write_between_markers(path: str, markers: tuple[str, str], text: str) -> None:
    """Replace what the two lines ``markers`` enclose in the file ``path`` by ``text``
    (ValueError naming the file if the markers are missing or out of order)."""
    with open(path, encoding="utf-8") as fh:
        old = fh.read()
    begin, end = markers
    i, j = old.find(begin), old.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{path}: the markers {markers} enclose nothing")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(old[:i + len(begin)] + "\n" + text + "\n" + old[j:])


def publish(report: str, page: str, write: bool) -> None:
    """Print the page ``report``; with ``write`` also into ``docs/<page>``."""
    if write:
        with open(os.path.join(ROOT, "docs", page), "w") as fh:
            fh.write(report)
    print(report)


def publish_section(report: str, page: str, markers: tuple[str, str], write: bool,
                    results: object, json_path: str | None) -> None:
    """Save ``results`` as JSON in ``json_path`` (if given), print the section ``report`` and,
    with ``write``, also put it into ``docs/<page>`` between the lines ``markers``."""
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=2)
    print(report)
    if write:
        write_between_markers(os.path.join(ROOT, "docs", page), markers, report)


def run_jobs(run_one: Callable[[tuple], dict], jobs: list[tuple], processes: int,
             progress: Callable[[dict], str]) -> tuple[list[dict], float]:
    """``run_one`` of every job in ``processes`` spawned worker processes (a fresh interpreter
    each: no state shared between runs), printing ``[done/total] progress(result)`` as each
    finishes. Returns the results in the order they finished and the wall time [s]."""
    t0 = time.perf_counter()
    results = []
    with multiprocessing.get_context("spawn").Pool(max(1, processes)) as pool:
        for r in pool.imap_unordered(run_one, jobs):
            results.append(r)
            print(f"[{len(results)}/{len(jobs)}] {progress(r)}", flush=True)
    return results, time.perf_counter() - t0
