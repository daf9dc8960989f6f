"""benchmarks/bench_tick.py in its smoke mode: it runs every shipped variant and reports ratios.

Times are never asserted (a shared, noisy machine); only that the benchmark produces its
ratios -- finite, positive, and equal to the tick time over Pinocchio's reference time.
"""

import importlib.util
import math
import os

import pytest

pytest.importorskip("pinocchio")

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "benchmarks", "bench_tick.py")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_tick", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_tick_tiny_reports_ratios_for_every_variant(capsys):
    bench = _bench()
    labels = [v[0] for v in bench.VARIANTS]
    rows = bench.run(["quadruped"], labels, ticks=20, warm=2)
    assert [r["variant"] for r in rows] == labels
    for r in rows:
        for key in ("median_ratio", "p99_ratio"):
            assert math.isfinite(r[key]) and r[key] > 0.0, (r["variant"], key, r[key])
        assert r["median_ratio"] == pytest.approx(r["median_us"] / r["pin_median_us"])
        assert r["p99_ratio"] >= r["median_ratio"]
        assert math.isfinite(r["loop_p99_factor"]) and r["loop_p99_factor"] >= 1.0
        assert r["loop_median_us"] > 0.0
        assert r["contacts"] == (0 if r["variant"] == "none" else 4)
    # the shipped variant of a floating base also times its base estimator
    est = rows[0]
    assert est["estimator_us"] > 0.0
    assert est["estimator_share"] == pytest.approx(est["estimator_us"] / est["median_us"])
    assert all(math.isnan(r["estimator_us"]) for r in rows[1:])
    assert bench.main(["--robots", "quadruped", "--variants", "lcp_noslip", "--tiny",
                       "--markdown"]) == 0
    table = capsys.readouterr().out
    assert "| quadruped.yaml | 18 | lcp_noslip | 4 |" in table and "median ratio" in table
    assert "same-length loop p99 / median" in table


def test_bench_tick_idle_mode_sleeps_untimed_before_every_sampled_call():
    bench = _bench()
    import time

    import numpy as np

    calls = []
    out = np.zeros(7)
    t0 = time.perf_counter()
    bench._sample(lambda: calls.append(time.perf_counter()), 5, out, 2, idle=0.01)
    elapsed = time.perf_counter() - t0
    assert len(calls) == 5 and elapsed >= 0.05  # 10 ms of sleep before each call
    assert np.all(np.diff(calls) >= 0.01)
    assert out[0] == out[1] == 0.0 and np.all(out[2:] > 0.0)
    assert np.all(out[2:] < 0.005)  # the sleep is not in the sampled time
    (row,) = bench.run(["quadruped"], ["none"], ticks=4, warm=2, idle=1e-3)
    assert math.isfinite(row["median_ratio"]) and row["median_ratio"] > 0.0


def test_the_readme_table_is_the_one_bench_tick_writes(tmp_path):
    """The README's performance table sits between the markers ``--write-readme`` rewrites, in
    the script's format; writing replaces exactly that table."""
    bench = _bench()
    readme = open(os.path.join(HERE, "..", "README.md"), encoding="utf-8").read()
    begin, end = bench.README_MARKERS
    assert readme.count(begin) == 1 and readme.count(end) == 1
    current = readme[readme.index(begin) + len(begin):readme.index(end)].strip()
    header = bench.markdown_table([]).splitlines()
    assert current.splitlines()[:2] == header
    copy = tmp_path / "README.md"
    copy.write_text(readme, encoding="utf-8")
    row = {"robot": "quadruped", "nv": 18, "variant": "none", "contacts": 0, "median_us": 9.0,
           "p99_us": 20.0, "pin_median_us": 8.0, "median_ratio": 9.0 / 8.0, "p99_ratio": 2.5,
           "loop_p99_factor": 1.5, "estimator_us": math.nan, "tasks_us": math.nan}
    bench.write_readme_table(bench.markdown_table([row]), str(copy))
    written = copy.read_text(encoding="utf-8")
    assert "| quadruped.yaml | 18 | none | 0 | 9.0 | 20.0 | 8.0 | 1.1× | 2.5× | 1.50 | — | — |" \
        in written
    assert written[:written.index(begin)] == readme[:readme.index(begin)]
    assert written[written.index(end):] == readme[readme.index(end):]
    plain = tmp_path / "plain.md"
    plain.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        bench.write_readme_table("x", str(plain))
