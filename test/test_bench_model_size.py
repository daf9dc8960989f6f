"""The report benchmarks/bench_model_size.py --write puts into docs/core.md: its table, the
targets' verdicts (2 000 links <= 2 s, 16 000 links <= 15 s) on given times, and the markers it
writes between. Times are never measured here (a shared, noisy machine)."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def _bench():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "bench_model_size", os.path.join(ROOT, "benchmarks", "bench_model_size.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_report_table_ratios_and_target_verdicts():
    bench = _bench()
    text = bench.report([(1000, 0.5), (2000, 2.5), (16000, 8.0)], argv=["--write"])
    lines = text.splitlines()
    assert lines[:2] == ["| links | build [s] | time ratio | size ratio |", "|---|---|---|---|"]
    assert lines[2] == "| 1000 | 0.50 | 1.0 | 1 |"
    assert lines[3] == "| 2000 | 2.50 | 5.0 | 2 |"
    assert lines[4] == "| 16000 | 8.00 | 16.0 | 16 |"
    assert "* 2000 links in <= 2 s: 2.50 s, **missed** by 0.50 s." in lines
    assert "* 16000 links in <= 15 s: 8.00 s, met." in lines
    assert lines[-1] == "Rerun: `python benchmarks/bench_model_size.py --write`"


def test_report_skips_targets_not_measured():
    text = _bench().report([(100, 0.1), (200, 0.2)], argv=[])
    assert "links in <=" not in text


def test_core_page_holds_the_markers_in_order():
    begin, end = _bench().REPORT_MARKERS
    with open(os.path.join(ROOT, "docs", "core.md"), encoding="utf-8") as fh:
        page = fh.read()
    i, j = page.find(begin), page.find(end)
    assert 0 <= i < j
    assert "| 16000 |" in page[i:j]
