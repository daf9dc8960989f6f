"""The compiled Goldfarb-Idnani kernel (wbc_dynamics.contact.dense_qp) against OSQP on the QPs of
``qp_coulomb`` / ``qp_noslip``.

The Stage I (first pass) and Stage II QPs are recorded from the QP methods
(``contact.qp_osqp``) as they hand them to OSQP (dense formulation;
test/dense_qp_helpers.contact_qps) along a smooth sequence of control ticks: the bundled robot
standing with every contact point 1 mm inside the ground (quadruped: 4 feet, humanoid: 8 sole
corners), joint velocities and desired accelerations 1-2 Hz sinusoids (``sway_states``). Per QP
and tick, medians over the ticks of:

* ``osqp warm``: OSQP as the QP methods run it on consecutive ticks -- one solver per stage,
  matrices updated in place (``_QPSolver.update``), OSQP's own warm start from the previous
  solution, their settings (eps 1e-7, max_iter 1500, no polish): time of update + solve;
* ``osqp cold``: a fresh OSQP solver with the same settings, ``solve()`` only (setup excluded);
* ``dense cold``: :func:`solve_dense_qp` without warm start (Cholesky + the whole method);
* ``dense warm``: :func:`solve_dense_qp` with the previous tick's active set of the same stage;
* ``kernel warm``: :func:`dense_qp_kernel` called directly from Python with the same guess
  (the difference to ``dense warm`` is the wrapper's checks; numba's dispatch of the 15
  arguments is still included, a compiled caller would not pay it).

Also reported: mean iterations, and the agreement of OSQP's (eps 1e-7) x with the exact one in
the P-norm ``|x_osqp - x|_P / |x|_P`` (median / max).

    python benchmarks/bench_dense_qp.py [--robots quadruped humanoid] [--ticks 300]
        [--methods qp_coulomb qp_noslip]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from dense_qp_helpers import contact_qps, contact_setup, sway_states  # noqa: E402

from wbc_dynamics.contact import qp_osqp as qpmod  # noqa: E402
from wbc_dynamics.contact.dense_qp import (  # noqa: E402
    SOLVED,
    DenseQPWork,
    dense_qp_kernel,
    solve_dense_qp,
)


def _osqp_settings() -> dict:
    return qpmod._settings(1e-7, 1500, True, False)


def bench_stage(seq: list[tuple]) -> dict:
    """Timings [us] and iterations over a sequence of same-shaped QPs (P, q, A, l, u)."""
    n, m = seq[0][1].size, seq[0][3].size
    amask = np.zeros((m, n), dtype=bool)
    for _, _, A, _, _ in seq:
        amask |= A != 0.0
    out: dict[str, list] = {k: [] for k in ("osqp_warm", "osqp_cold", "dense_cold",
                                            "dense_warm", "kernel_warm", "it_osqp_warm",
                                            "it_dense_cold", "it_dense_warm", "pnorm")}
    st = None
    w = DenseQPWork(n, m)
    prev = None
    for P, q, A, l, u in seq:
        # OSQP, warm as the QP methods run it
        if st is None:
            st = qpmod._QPSolver(P, q, A, amask, l, u, _osqp_settings())
            t0 = time.perf_counter()
        else:
            t0 = time.perf_counter()
            st.update(st.gather_p(P), q, st.gather_a(A), l, u)
        s_w, it_w, x_w = st.solve()
        out["osqp_warm"].append(time.perf_counter() - t0)
        out["it_osqp_warm"].append(it_w)
        # OSQP cold (setup excluded)
        cold = qpmod._QPSolver(P, q, A, amask, l, u, _osqp_settings())
        t0 = time.perf_counter()
        cold.solve()
        out["osqp_cold"].append(time.perf_counter() - t0)
        # dense, cold and warm
        t0 = time.perf_counter()
        status = solve_dense_qp(P, q, A, l, u, w)
        out["dense_cold"].append(time.perf_counter() - t0)
        assert status == SOLVED, w.status_name
        out["it_dense_cold"].append(w.iterations)
        x = w.x.copy()
        e = (x_w if x_w is not None else np.full(n, np.nan)) - x
        out["pnorm"].append(np.sqrt(e @ P @ e / (x @ P @ x)))
        guess = w.active.copy() if prev is None else prev
        t0 = time.perf_counter()
        solve_dense_qp(P, q, A, l, u, w, guess)
        out["dense_warm"].append(time.perf_counter() - t0)
        out["it_dense_warm"].append(w.iterations)
        t0 = time.perf_counter()
        dense_qp_kernel(P, q, A, l, u, guess, True, 1000, 1e-11, 1e-11, w.fwork, w.iwork, w.x,
                        w.y, w.active)
        out["kernel_warm"].append(time.perf_counter() - t0)
        prev = w.active.copy()
    res = {k: float(np.median(v) * 1e6) for k, v in out.items()
           if k in ("osqp_warm", "osqp_cold", "dense_cold", "dense_warm", "kernel_warm")}
    for k in ("it_osqp_warm", "it_dense_cold", "it_dense_warm"):
        res[k] = float(np.mean(out[k]))
    res["pnorm_median"] = float(np.median(out["pnorm"]))
    res["pnorm_max"] = float(np.max(out["pnorm"]))
    res["n"], res["m"] = n, m
    return res


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", default=["quadruped", "humanoid"])
    ap.add_argument("--methods", nargs="+", default=["qp_coulomb", "qp_noslip"])
    ap.add_argument("--ticks", type=int, default=300)
    args = ap.parse_args(argv)
    rows = []
    print("| robot | method | QP | n x m | OSQP warm [us] | OSQP cold [us] | dense cold [us] | "
          "dense warm [us] | kernel warm [us] | iters OSQP warm / dense cold / dense warm | "
          "OSQP x err (P-norm) median / max |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|---|")
    for robot in args.robots:
        m, _, q0 = contact_setup(robot)
        for method in args.methods:
            ticks = contact_qps(robot, method, sway_states(m, q0, args.ticks, 0))
            for stage in ("stage1", "stage2"):
                seq = [d for t in ticks for tag, d in t if tag == stage]
                shapes = {(d[1].size, d[3].size) for d in seq}
                if len(shapes) != 1:   # (a changing nullity would need a new workspace)
                    print(f"{robot} {method} {stage}: shapes vary {shapes}, skipped")
                    continue
                r = bench_stage(seq)
                r.update(robot=robot, method=method, stage=stage)
                rows.append(r)
                print(f"| {robot} | {method} | {stage} | {r['n']} x {r['m']} | "
                      f"{r['osqp_warm']:.1f} | {r['osqp_cold']:.1f} | {r['dense_cold']:.1f} | "
                      f"{r['dense_warm']:.1f} | {r['kernel_warm']:.1f} | "
                      f"{r['it_osqp_warm']:.0f} / {r['it_dense_cold']:.1f} / "
                      f"{r['it_dense_warm']:.2f} | "
                      f"{r['pnorm_median']:.1e} / {r['pnorm_max']:.1e} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
