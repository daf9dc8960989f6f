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


def test_targets_report_names_every_row_that_misses_a_target_and_by_how_much():
    """Under the table: one line per target (median <= 3x, p99 <= 6x Pinocchio's median) with
    each missing row's ratio and its time over the target, then the fixed paragraph on where the
    time goes."""
    bench = _bench()
    assert [(name, limit) for name, _, limit in bench.TARGETS] == [("median", 3.0), ("p99", 6.0)]

    def row(variant, median, p99, pin):
        return {"robot": "quadruped", "variant": variant, "median_us": median, "p99_us": p99,
                "pin_median_us": pin, "median_ratio": median / pin, "p99_ratio": p99 / pin,
                "loop_p99_factor": 1.25}

    rows = [row("none", 6.0, 9.0, 7.0),            # 0.9x / 1.3x: meets both
            row("lcp_noslip", 28.0, 70.0, 8.0),    # 3.5x (+4.0 us) / 8.75x (+22.0 us)
            row("qp_coulomb", 20.0, 50.0, 8.0)]    # 2.5x / 6.25x (+2.0 us)
    text = bench.targets_report(rows)
    lines = text.split("\n\n")
    assert lines[0] == ("**median ≤ 3× Pinocchio's median**: missed by 1 of 3 rows: quadruped "
                        "lcp_noslip 3.5× (+4.0 µs).")
    loop = "same-length loop p99 / median 1.25"
    assert lines[1] == ("**p99 ≤ 6× Pinocchio's median**: missed by 2 of 3 rows: quadruped "
                        f"lcp_noslip 8.8× (+22.0 µs; {loop}), quadruped qp_coulomb 6.2× "
                        f"(+2.0 µs; {loop}).")
    assert lines[2] == bench.WHERE_THE_TIME_GOES
    met = bench.targets_report(rows[:1]).split("\n\n")
    assert met[:2] == ["**median ≤ 3× Pinocchio's median**: met by all 1 rows.",
                       "**p99 ≤ 6× Pinocchio's median**: met by all 1 rows."]


def test_every_sampled_tick_gets_a_new_joint_state_and_runs_the_joint_observer():
    """The benchmark delivers the next period's inputs (untimed) before every sampled tick, so
    the shipped joint-state observer runs in every timed ``update()``, which stays in control."""
    bench = _bench()
    cfg = bench.shipped_config("quadruped")
    assert cfg["joint_observer_acceleration_noise"] > 0.0  # on in the shipped configuration
    ctl, q = bench.standing_controller(cfg)
    inputs = bench.StandingInputs(ctl, q)
    runs = []
    obs = ctl._joint_observer
    update = obs.update
    obs.update = lambda *a: (runs.append(a[-1]), update(*a))
    for _ in range(5):
        inputs.deliver()
        assert inputs.tick().mode == "control"
    assert inputs.now == pytest.approx(5 * ctl.dt)
    assert runs == pytest.approx([ctl.dt] * 5)  # every tick, over one control period


def test_breakdown_times_each_compiled_call_of_the_shipped_tick():
    """``--breakdown``: the shipped quadruped tick's compiled calls -- observer, pre-step,
    contact state filter, contact tick, post-step, command step -- each timed inside
    ``update()``; the rest is the Python between them."""
    bench = _bench()
    parts = bench.breakdown("quadruped", "lcp_noslip + min_norm", ticks=20)
    calls = ["joint-state observer", "pre-step (PD, scatter)", "contact state filter",
             "contact tick", "post-step (gather, clamp)", "command step (drive, low-pass)"]
    assert list(parts) == ["tick", *calls, "Python between them"]  # no base-pose observer
    assert all(parts[k] > 0.0 for k in ["tick", *calls])
    assert parts["contact tick"] > parts["pre-step (PD, scatter)"]
    assert parts["Python between them"] == pytest.approx(
        parts["tick"] - sum(parts[k] for k in calls))
