"""Time every core algorithm against Pinocchio in the same process, on every bundled robot.

Both sides are called through their public Python APIs on the same random states; ours includes
its input checking. Each timing is the best of several interleaved repeats (the machine is
noisy: compare ratios measured in one run, not absolute numbers across runs).

    python benchmarks/bench_core.py [--robots quadruped humanoid] [--markdown]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from wbc_dynamics import RobotModel
from wbc_dynamics.robots import ROBOT_NAMES, robot_info, robot_path


def best_time(fn, number: int, repeat: int) -> float:
    """Best mean time [µs] of ``number`` calls of ``fn`` over ``repeat`` repeats (one warm-up
    call first)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e6


def models_and_state(name: str, floating: bool) -> tuple:
    """(our model, Pinocchio's model, its data, q, v, a) of a bundled robot: q a random
    configuration (Pinocchio's, within [-1, 1] where bounded), v and a standard normal (seed 0)."""
    import pinocchio as pin

    path = robot_path(name)
    model = RobotModel.from_urdf(path, floating_base=floating)
    if floating:
        pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    else:
        pmodel = pin.buildModelFromUrdf(path)
    pdata = pmodel.createData()
    rng = np.random.default_rng(0)
    q = pin.randomConfiguration(pmodel, -np.ones(pmodel.nq), np.ones(pmodel.nq))
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    return model, pmodel, pdata, q, v, a


def time_cases(name: str, floating: bool, nv: int, cases: list, number: int, repeat: int,
               rounds: int) -> list[tuple]:
    """Rows (robot, base, nv, label, ours [µs], Pinocchio [µs]) of the ``cases`` (label, ours,
    theirs), the best of ``rounds`` interleaved rounds (both sides see the same machine load)."""
    rows = []
    for label, ours, theirs in cases:
        t_ours, t_pin = float("inf"), float("inf")
        for _ in range(rounds):
            t_ours = min(t_ours, best_time(ours, number, repeat))
            t_pin = min(t_pin, best_time(theirs, number, repeat))
        rows.append((name, "floating" if floating else "fixed", nv, label, t_ours, t_pin))
    return rows


def bench_robot(name: str, floating: bool, number: int, repeat: int) -> list[tuple]:
    import pinocchio as pin

    model, pmodel, pdata, q, v, a = models_and_state(name, floating)
    link = model.collision_spheres[0].link if model.collision_spheres else model.link_names[-1]
    fid = pmodel.getFrameId(link)
    lwa = pin.LOCAL_WORLD_ALIGNED
    cases = [
        ("rnea", lambda: model.rnea(q, v, a), lambda: pin.rnea(pmodel, pdata, q, v, a)),
        ("mass_matrix (CRBA)", lambda: model.mass_matrix(q), lambda: pin.crba(pmodel, pdata, q)),
        ("minverse", lambda: model.minverse(q), lambda: pin.computeMinverse(pmodel, pdata, q)),
        ("aba", lambda: model.aba(q, v, a), lambda: pin.aba(pmodel, pdata, q, v, a)),
        ("jacobian (world)", lambda: model.jacobian(q, link),
         lambda: pin.computeFrameJacobian(pmodel, pdata, q, fid, lwa)),
        ("frame_placement", lambda: model.frame_placement(q, link),
         lambda: (pin.forwardKinematics(pmodel, pdata, q),
                  pin.updateFramePlacement(pmodel, pdata, fid))),
    ]
    return time_cases(name, floating, model.nv, cases, number, repeat, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="*", default=[n for n in ROBOT_NAMES if n != "box"])
    parser.add_argument("--number", type=int, default=2000, help="calls per repeat")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    rows = []
    for name in args.robots:
        rows += bench_robot(name, robot_info(name)["floating_base"], args.number, args.repeat)
    if args.markdown:
        print("| robot | base | nv | algorithm | wbc_dynamics [µs] | Pinocchio [µs] | ratio |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.2f} | {r[5]:.2f} | "
                  f"{r[4] / r[5]:.2f} |")
    else:
        print(f"{'robot':10s} {'base':8s} {'nv':>3s}  {'algorithm':20s} {'ours us':>8s} "
              f"{'pin us':>8s} {'ratio':>6s}")
        for r in rows:
            print(f"{r[0]:10s} {r[1]:8s} {r[2]:3d}  {r[3]:20s} {r[4]:8.2f} {r[5]:8.2f} "
                  f"{r[4] / r[5]:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
