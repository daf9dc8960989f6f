"""The report benchmarks/first_start.py --write puts into docs/install.md: its table and the
verdict on the target (the first start after installation <= 5 s) on given times, and the page's
markers. Nothing is started or timed here."""

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def _bench():
    spec = importlib.util.spec_from_file_location(
        "first_start", os.path.join(ROOT, "benchmarks", "first_start.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _results(after_quadruped: float | None) -> dict:
    return {"cold": {"config/quadruped.yaml": 30.25, "demo": 60.0},
            "after install": {"config/quadruped.yaml": after_quadruped, "demo": 2.5},
            "warm": {"config/quadruped.yaml": 2.75, "demo": 2.5}}


def test_report_table_and_met_target():
    text = _bench().report(_results(3.0), 120.4, 1.25, ["--write"])
    lines = text.splitlines()
    assert lines[0] == "|  | cold | after install | warm |"
    assert lines[2] == "| `config/quadruped.yaml` | 30.2 | 3.0 | 2.8 |"
    assert lines[3] == "| `demo` | 60.0 | 2.5 | 2.5 |"
    assert "load average 1.2 at the start" in text
    assert "`pip install` of the package took 120 s." in text
    assert "* First start after installation <= 5 s: met by all 2." in lines
    assert lines[-1] == "Rerun: `python benchmarks/first_start.py --write`"


def test_report_names_each_configuration_over_the_target():
    bench = _bench()
    text = bench.report(_results(7.5), None, 0.5, [])
    assert "**missed** by `config/quadruped.yaml` (+2.5 s)." in text
    assert "pip install" not in text
    text = bench.report(_results(None), None, 0.5, [])
    assert "`config/quadruped.yaml` (never started)" in text


def test_install_page_holds_the_markers_in_order():
    begin, end = _bench().REPORT_MARKERS
    with open(os.path.join(ROOT, "docs", "install.md"), encoding="utf-8") as fh:
        page = fh.read()
    assert 0 <= page.find(begin) < page.find(end)
