"""Contact-aware inverse dynamics: solve time versus number of contacts
(Zapolsky & Drumwright, Sec. 8.4.2).

The bundled quadruped stands on flat ground; as in the paper's runtime experiment the number of
simultaneous contacts is increased artificially at each foot-ground interface: for
nc = 4 k every foot carries k contact spheres (the foot sphere plus k - 1 samples on a 3 mm
circle around its lowest point, all touching the ground); nc = 1 uses the LF foot only and
nc = 2 the diagonal pair LF/RH. Each tick is the standing problem (v = 0, qdd_des = 0) with a
small, slowly varying disturbance wrench on the base (a few % of the weight) so that the contact
forces change from tick to tick.

Measured: time of ``wbc_dynamics.contact.solve`` (validation + method + result assembly) per
tick; "warm" keeps one ``SolverState`` across the ticks, "cold" passes ``state=None``. The
contact assembly (``ContactModel.build``: kinematics, M^-1, h, N/S/T) is reported separately.
Methods other than ``lcp_noslip`` are included when their modules import.

    python benchmarks/bench_contact.py [--counts 1 2 4 8 16 32 48] [--ticks 300]
        [--methods lcp_noslip qp_coulomb] [--min-norm] [--json out.json] [--plot out.png]
        [--markdown]
"""

from __future__ import annotations

import argparse
import importlib
import json
import time

import numpy as np

from wbc_dynamics import RobotModel
from wbc_dynamics.contact import METHODS, SolverState, solve
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.robots import robot_info, robot_path

FEET = ("LF_foot", "LH_foot", "RF_foot", "RH_foot")


def available_methods() -> list[str]:
    out = []
    for name, (mod, fn) in METHODS.items():
        try:
            if hasattr(importlib.import_module(mod), fn):
                out.append(name)
        except ImportError:
            pass
    return out


def contact_model(robot: RobotModel, q: np.ndarray, nc: int) -> ContactModel:
    """ContactModel with ``nc`` touching contact spheres (see module docstring)."""
    radius = robot_info("quadruped")["contact_radius"]
    if nc == 1:
        return ContactModel(robot, contact_links=["LF_foot"], features=[HalfSpace.ground()])
    if nc == 2:
        return ContactModel(robot, contact_links=["LF_foot", "RH_foot"],
                            features=[HalfSpace.ground()])
    if nc % 4:
        raise ValueError(f"--counts: {nc} is not 1, 2 or a multiple of 4")
    k = nc // 4
    extra = {}
    for foot in FEET:
        R = robot.frame_placement(q, foot)[:3, :3]
        pts = []
        for j in range(k - 1):
            a = 2 * np.pi * j / max(k - 1, 1)
            # world offset on a 3 mm horizontal circle; the sphere centre is lifted so that its
            # lowest point stays on the ground plane, expressed in the foot link frame
            d_world = np.array([0.003 * np.cos(a), 0.003 * np.sin(a), 0.0])
            pts.append((R.T @ d_world, radius))
        extra[foot] = pts
    return ContactModel(robot, contact_links=list(FEET), features=[HalfSpace.ground()],
                        extra_points=extra, margin=0.005)


def problems(robot, cm, q, ticks, rng):
    """Standing problems with a slowly varying base disturbance (see module docstring)."""
    out = []
    w = 2 * np.pi * rng.uniform(0.5, 1.5, 6)
    ph = rng.uniform(0, 2 * np.pi, 6)
    scale = 0.03 * robot.total_mass * 9.81
    t_build = []
    for i in range(ticks):
        t0 = time.perf_counter()
        p = cm.build(q, np.zeros(robot.nv), np.zeros(robot.nv - 6))
        t_build.append(time.perf_counter() - t0)
        dist = scale * np.sin(w * i * 1e-3 + ph)
        dist[3:] *= 0.05  # torques [N m] on the small base
        p.h = p.h.copy()
        p.h[:6] -= dist
        out.append(p)
    return out, float(np.median(t_build))


def time_method(method, probs, warm: bool, options) -> tuple[float, float, dict]:
    st = SolverState() if warm else None
    solve(method, probs[0], st, **options)  # compile / warm the caches (not the timed ticks)
    if st is not None:
        st.reset()
    times = []
    flags: dict[str, int] = {}
    iters = []
    for p in probs:
        t0 = time.perf_counter()
        res = solve(method, p, st, **options)
        times.append(time.perf_counter() - t0)
        iters.append(res.stats.iterations)
        for f in res.stats.flags:
            flags[f] = flags.get(f, 0) + 1
    t = np.array(times) * 1e6
    return float(np.median(t)), float(np.percentile(t, 95)), {
        "flags": flags, "mean_iterations": float(np.mean(iters))}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 48])
    ap.add_argument("--ticks", type=int, default=300)
    ap.add_argument("--methods", nargs="+", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--min-norm", action="store_true",
                    help="also time lcp_noslip with min_norm=True (row 'lcp_noslip+min_norm')")
    args = ap.parse_args(argv)
    methods = args.methods or available_methods()
    if args.min_norm and "lcp_noslip" in methods:
        methods = [*methods, "lcp_noslip+min_norm"]
    robot = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    q = np.array(robot_info("quadruped")["standing_q"])
    rng = np.random.default_rng(0)
    rows = []
    for nc in args.counts:
        cm = contact_model(robot, q, nc)
        probs, t_build = problems(robot, cm, q, args.ticks, rng)
        assert probs[0].nc == nc, (probs[0].nc, nc)
        for method in methods:
            for warm in (True, False):
                name, opts = ((method, {}) if method != "lcp_noslip+min_norm"
                              else ("lcp_noslip", {"min_norm": True}))
                med, p95, info = time_method(name, probs, warm, opts)
                rows.append({"nc": nc, "method": method, "warm": warm, "median_us": med,
                             "p95_us": p95, "build_us": t_build * 1e6, **info})
                print(f"nc={nc:3d} {method:12s} {'warm' if warm else 'cold'}: "
                      f"median {med:8.1f} us  p95 {p95:8.1f} us  "
                      f"(build {t_build * 1e6:6.1f} us, iters {info['mean_iterations']:.1f}, "
                      f"flags {info['flags']})", flush=True)
    if args.markdown:
        print("\n| contacts | method | warm median [us] | cold median [us] | build [us] |")
        print("|---:|---|---:|---:|---:|")
        for nc in args.counts:
            for method in methods:
                w = next(r for r in rows if r["nc"] == nc and r["method"] == method and r["warm"])
                c = next(r for r in rows
                         if r["nc"] == nc and r["method"] == method and not r["warm"])
                print(f"| {nc} | {method} | {w['median_us']:.0f} | {c['median_us']:.0f} | "
                      f"{w['build_us']:.0f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for method in methods:
            for warm, ls in ((True, "-"), (False, "--")):
                rr = [r for r in rows if r["method"] == method and r["warm"] == warm]
                ax.plot([r["nc"] for r in rr], [r["median_us"] for r in rr], ls, marker="o",
                        label=f"{method} ({'warm' if warm else 'cold'})")
        ax.axhline(1000, color="k", lw=0.5)  # the 1 kHz budget
        ax.axhline(200, color="k", lw=0.5, ls=":")  # the 200 us target at 4 contacts
        ax.set_yscale("log")
        ax.set_xlabel("number of contacts")
        ax.set_ylabel("median solve time [us]")
        ax.set_title("quadruped, contact-aware inverse dynamics")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return {"rows": rows}


if __name__ == "__main__":
    main()
