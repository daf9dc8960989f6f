"""The latency reports of benchmarks/bench_node.py and benchmarks/sim_speed.py, and the node's
tick trace they read.

Times are never asserted (a shared, noisy machine): only the report format the ``--write``
options put between the docs' markers, the round-trip split on given time stamps, the targets'
verdicts and margins, and the trace's rows.
"""

import importlib.util
import json
import os

import numpy as np
import pytest

pytest.importorskip("rclpy")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "benchmarks",
                                                                     f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _node_row(robot: str, p50: float, p99: float) -> dict:
    seg = {s: {"p50": 10.0 * (i + 1), "p99": 100.0 * (i + 1), "max": 1e3}
           for i, s in enumerate(_load("bench_node").SEGMENTS)}
    return {"robot": robot, "rate_hz": 1000.0, "method": "lcp_noslip", "sent": 1000,
            "received": 990, "latency_us": {"mean": p50, "p50": p50, "p99": p99, "max": 5e3},
            "tick_us": {"mean": 80.0, "p99": 150.0, "max": 300.0},
            "rss_mb": {"start": 250.0, "end": 250.5, "growth": 0.5},
            "breakdown_us": {"matched": 985, **seg}}


def test_round_trip_split_from_client_and_node_time_stamps():
    bench = _load("bench_node")
    # two states: sent at 0 / 1000 us, each segment a fixed length [ns]; a third not answered
    trace = np.array([[7, 100_000, 130_000, 200_000, 260_000],
                      [8, 1_150_000, 1_170_000, 1_270_000, 1_300_000]], dtype=np.int64)
    sent = {7: 0, 8: 1_000_000, 9: 2_000_000}
    received = {7: 300_000, 8: 1_340_000}
    bd = bench.breakdown(sent, received, trace)
    assert bd["matched"] == 2
    assert bd["state_to_callback"]["max"] == pytest.approx(150.0)
    assert bd["callback_to_tick"]["p50"] == pytest.approx(25.0)
    assert bd["tick"]["max"] == pytest.approx(100.0)
    assert bd["tick_to_published"]["p50"] == pytest.approx(45.0)
    assert bd["published_to_client"]["max"] == pytest.approx(40.0)
    empty = bench.breakdown(sent, {}, trace)
    assert empty["matched"] == 0 and np.isnan(empty["tick"]["p50"])


def test_stamp_key_of_a_serialized_joint_state():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    bench = _load("bench_node")
    js = JointState(name=["a"], position=[1.0])
    js.header.stamp.sec, js.header.stamp.nanosec = 12, 345
    assert bench._stamp_key(serialize_message(js)) == 12_000_000_345
    assert bench._stamp_key(b"\x00\x00\x00\x00") == -1


def test_bench_node_report_format_and_target_verdicts(tmp_path):
    bench = _load("bench_node")
    rows = [_node_row("quadruped", 200.0, 1250.0), _node_row("humanoid", 300.0, 900.0)]
    report = bench.markdown_report(rows, ["1.0", "2.0", "3.0"], "python benchmarks/bench_node.py")
    lines = report.splitlines()
    assert "| quadruped | 1000 | lcp_noslip | 200 / 1250 / 5000 | 99.00 % | 80 / 150 | +0.50 |" \
        in lines
    assert "| humanoid | 1000 | 10 / 100 | 20 / 200 | 30 / 300 | 40 / 400 | 50 / 500 | 985 |" \
        in lines
    assert ("* quadruped, p50 ≤ 250 µs: **met** -- 200 µs = 0.80× the target (50 µs to spare)"
            in lines)
    assert ("* quadruped, p99 ≤ 1000 µs: **missed** -- 1250 µs = 1.25× the target (250 µs over)"
            in lines)
    assert "* humanoid, p50 ≤ 250 µs: **missed** -- 300 µs = 1.20× the target (50 µs over)" \
        in lines
    assert lines[-1] == bench.TRIED and "load average 1.0 / 2.0 / 3.0" in lines[0]
    # the page carries the report between its markers; --write replaces exactly that
    page = open(os.path.join(ROOT, "docs", "node.md"), encoding="utf-8").read()
    begin, end = bench.REPORT_MARKERS
    assert page.count(begin) == 1 and page.count(end) == 1
    current = page[page.index(begin) + len(begin):page.index(end)].strip()
    assert "| robot | rate [Hz] | method | latency p50 / p99 / max [µs] |" in current
    assert "Targets (1 kHz, end to end):" in current
    pages = _load("docs_pages")
    (tmp_path / "docs").mkdir()
    copy = tmp_path / "docs" / "node.md"
    copy.write_text(page, encoding="utf-8")
    pages.ROOT = str(tmp_path)
    rows_json = tmp_path / "rows.json"
    pages.publish_section(report, "node.md", bench.REPORT_MARKERS, False, rows, str(rows_json))
    assert copy.read_text(encoding="utf-8") == page  # without --write the page is untouched
    assert json.loads(rows_json.read_text())[1]["robot"] == "humanoid"
    pages.publish_section(report, "node.md", bench.REPORT_MARKERS, True, rows, None)
    written = copy.read_text(encoding="utf-8")
    assert written[:written.index(begin)] == page[:page.index(begin)]
    assert written[written.index(end):] == page[page.index(end):]
    assert report in written
    plain = tmp_path / "plain.md"
    plain.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        pages.write_between_markers(str(plain), bench.REPORT_MARKERS, report)


def test_sim_speed_report_format_and_target_verdicts():
    sim = _load("sim_speed")
    rows = [{"robot": "quadruped", "rtf": 0.64, "wall_ms": 1.5625, "cpu_sim": 0.79,
             "cpu_ctl": 0.89, "cpu_ref": 0.26},
            {"robot": "arm", "rtf": 1.25, "wall_ms": 0.8, "cpu_sim": 0.3, "cpu_ctl": 0.4,
             "cpu_ref": 0.1}]
    lines = sim.markdown_report(rows, ["5", "6", "7"], "python benchmarks/sim_speed.py") \
        .splitlines()
    assert "| quadruped | 0.64 | 1.56 | 0.790 | 0.890 | 0.260 |" in lines
    assert ("* quadruped: **missed** -- 0.64× real time = 0.64× the target (+0.56 wall ms per "
            "simulated ms)") in lines
    assert "* arm: **met** -- 1.25× real time = 1.25× the target (-0.20 wall ms per simulated ms)" \
        in lines
    assert lines[-1] == sim.TRIED
    page = open(os.path.join(ROOT, "docs", "simulation.md"), encoding="utf-8").read()
    begin, end = sim.REPORT_MARKERS
    assert page.count(begin) == 1 and page.count(end) == 1
    current = page[page.index(begin) + len(begin):page.index(end)]
    assert "| robot | real-time factor | wall ms / sim ms |" in current
    assert "Target (lockstep at ≥ 1.0× real time):" in current


def test_tick_trace_keeps_the_latest_rows_and_saves_them(tmp_path, monkeypatch):
    from wbc_dynamics.tick_trace import COLUMNS, ENV_VAR, TickTrace

    monkeypatch.delenv(ENV_VAR, raising=False)
    assert TickTrace.from_env() is None
    path = tmp_path / "trace.npy"
    monkeypatch.setenv(ENV_VAR, str(path))
    trace = TickTrace.from_env()
    assert trace is not None and trace.path == str(path)
    small = TickTrace(str(path), capacity=3)
    for k in range(5):
        small.take()
        small.tick_start()
        small.tick_end()
        small.published((k, 7))
    rows = small.rows()
    assert rows.shape == (3, len(COLUMNS))
    assert rows[:, 0].tolist() == [2_000_000_007, 3_000_000_007, 4_000_000_007]
    assert np.all(np.diff(rows[:, 1:], axis=1) >= 0)  # take <= start <= end <= published
    small.save()
    assert np.array_equal(np.load(path), rows)
    with pytest.raises(ValueError, match="capacity"):
        TickTrace(str(path), capacity=0)
