"""``wbc_info``: load a bundled robot (or any URDF) and print its dynamics and call timings."""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from .model import RobotModel
from .robots import ROBOT_NAMES, robot_info, robot_path


def _time_call(fn, repeat: int = 2000) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "robot",
        nargs="?",
        default="quadruped",
        help=f"bundled robot ({', '.join(ROBOT_NAMES)}) or a URDF path",
    )
    parser.add_argument("--fixed-base", action="store_true", help="force a fixed base")
    args = parser.parse_args(argv)
    if args.robot in ROBOT_NAMES:
        info = robot_info(args.robot)
        path, floating = robot_path(args.robot), info["floating_base"] and not args.fixed_base
        q = np.asarray(info["standing_q"], float)
    else:
        path, floating, q = args.robot, not args.fixed_base, None
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed below from model.load_warnings
        model = RobotModel.from_urdf(path, floating_base=floating)
    print(f"{model}  (loaded and compiled in {time.perf_counter() - t0:.2f} s)")
    for note in model.load_warnings:
        print(f"warning: {note}")
    if q is None or q.shape[0] != model.nq:
        q = model.neutral()
    v = np.zeros(model.nv)
    np.set_printoptions(precision=4, suppress=True, linewidth=110)
    print("joints:", ", ".join(model.joint_names))
    print("gravity torques g(q) [N m]:", model.gravity_torques(q))
    M = model.mass_matrix(q)
    singular = bool(model.massless_joints)  # M^-1 and ABA raise (see the warning above)
    check = (
        "M is singular (massless joints)"
        if singular
        else f"|M M^-1 - I| = {np.abs(M @ model.minverse(q) - np.eye(model.nv)).max():.2e}"
    )
    print(f"M(q): {M.shape}, cond {np.linalg.cond(M):.3g}; {check}")
    link = model.collision_spheres[0].link if model.collision_spheres else model.link_names[-1]
    print(f"placement of {link}:\n{model.frame_placement(q, link)}")
    a = np.zeros(model.nv)
    print("per-call times [us]:")
    for name, fn in [
        ("rnea", lambda: model.rnea(q, v, a)),
        ("mass_matrix (CRBA)", lambda: model.mass_matrix(q)),
        ("minverse", lambda: model.minverse(q)),
        ("aba", lambda: model.aba(q, v, a)),
        (f"jacobian({link})", lambda: model.jacobian(q, link)),
    ]:
        if singular and name in ("minverse", "aba"):
            continue
        print(f"  {name:24s} {_time_call(fn):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
