"""``wbc_info``: load a bundled robot, a robot configuration (config/robots) or any URDF and
print what configuring it needs -- joints, contact candidates per link and where they come
from, mass, load warnings -- then its dynamics and call timings."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

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
    parser.add_argument(
        "--precompile",
        action="store_true",
        help="build the controller of a parameter file / robot configuration as the node's "
        "configure does, filling numba's on-disk cache for a fast first start",
    )
    parser.add_argument(
        "--precompile-shipped",
        action="store_true",
        help="precompile every shipped configuration (config/*.yaml, config/robots/*.yaml) and "
        "the demo, as installation does; with --if-needed only if not yet done for these "
        "sources, this numba and this CPU",
    )
    parser.add_argument("--if-needed", action="store_true", help="see --precompile-shipped")
    parser.add_argument("--config-dir", default="",
                        help="the shipped config/ directory (default: found beside the package)")
    args = parser.parse_args(argv)
    if args.precompile_shipped:
        return precompile_shipped(args.config_dir or None, if_needed=args.if_needed)
    if args.precompile:
        return _precompile(args.robot)
    from .robot_config import robot_config_names

    if args.robot in robot_config_names() or args.robot.endswith((".yaml", ".yml")):
        return _print_robot_config(args.robot)
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
    print(f"mass {model.total_mass:.3f} kg; {len(model.joint_names)} movable joints:",
          ", ".join(model.joint_names))
    _print_contact_candidates(model, sorted({g.link for g in model.collision_geometry}))
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


def _print_contact_candidates(model, links, points=None) -> None:
    """Per link: how many contact points it gives and from which shapes (or why none)."""
    from collections import Counter

    from .contact.candidates import contact_points

    print("contact candidates per link (contact_links takes any of these; declared points "
          "replace a link's geometry):")
    for link in links:
        try:
            pts = contact_points(model, [link], {link: points[link]} if points and link in points
                                 else None)
        except ValueError as exc:
            print(f"  {link:28s} none: {exc}")
            continue
        kinds = ", ".join(f"{n} {src}" for src, n in Counter(p.source for p in pts).items())
        lowest = min(pts, key=lambda p: p.center[2] - p.radius)
        print(f"  {link:28s} {len(pts):3d} points ({kinds}); lowest in the link frame at z = "
              f"{lowest.center[2] - lowest.radius:+.4f} m")


def _precompile(name: str) -> int:
    """Compile (or load) every kernel the configuration ``name`` needs, printing each stage."""
    from .controller import WholeBodyController
    from .kernel_cache import cache_root
    from .robot_config import load_robot_setup

    setup = load_robot_setup(name)
    print(f"precompiling {setup.path} into the numba cache ({cache_root()})", flush=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # wbc_info CONFIG prints them
        ctl = WholeBodyController(setup.controller, progress=lambda line: print(line, flush=True))
    print(f"precompiled {', '.join(ctl.warmed_methods)} for {ctl.n} joints in "
          f"{time.perf_counter() - t0:.1f} s")
    return 0


def shipped_config_dir() -> Path | None:
    """The shipped ``config`` directory: the source tree's, else the installed
    ``share/wbc_dynamics/config`` of the Python prefix or of AMENT_PREFIX_PATH."""
    candidates = [Path(__file__).resolve().parents[1] / "config",
                  Path(sys.prefix) / "share" / "wbc_dynamics" / "config"]
    candidates += [Path(p) / "share" / "wbc_dynamics" / "config"
                   for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return next((d for d in candidates if (d / "robots").is_dir()), None)


def shipped_configurations(config_dir: Path) -> list[Path]:
    """The node parameter files (``config/*.yaml`` but the ros2_control ``*_controllers.yaml``)
    and robot configurations (``config/robots/*.yaml``) in ``config_dir``."""
    params = sorted(p for p in config_dir.glob("*.yaml") if not p.stem.endswith("_controllers"))
    return params + sorted((config_dir / "robots").glob("*.yaml"))


def precompile_shipped(config_dir: str | os.PathLike | None = None,
                       if_needed: bool = False) -> int:
    """Compile (or load) the kernels of every shipped configuration and of the demo into the
    package's kernel cache (:mod:`wbc_dynamics.kernel_cache`) and record it there, one line per
    configuration with its time [s]. A configuration that cannot be built here (its robot's
    package, e.g. example-robot-data, or MuJoCo for the demo, not installed) is skipped with
    its reason: its first start then compiles what the others did not. Returns 0 (nothing here
    is needed for correctness), 2 if no configuration directory was found."""
    import contextlib
    import functools
    import io

    from .controller import WholeBodyController
    from .kernel_cache import cache_root, is_precompiled, write_precompiled_marker
    from .robot_config import load_robot_setup

    root = cache_root()
    if if_needed and is_precompiled():
        print(f"kernels of the shipped configurations already cached in {root}")
        return 0
    directory = Path(config_dir) if config_dir else shipped_config_dir()
    if directory is None or not directory.is_dir():
        print(f"precompile: no shipped configuration directory ({config_dir or 'not found'})")
        return 2
    print(f"precompiling the shipped configurations of {directory} into {root}", flush=True)

    def build(path: Path) -> None:
        WholeBodyController(load_robot_setup(path).controller)

    def run_demo() -> None:  # its estimator, plant coupling and references too; 0.05 s simulated
        from .sim import demo

        with contextlib.redirect_stdout(io.StringIO()):
            demo.main(["--duration", "0.05", "--no-video", "--plot", "", "--quiet"])

    # the demo first (the README's first command waits for it), then the configurations, most
    # of them loading what the demo and the first ones compiled
    jobs = [("demo", run_demo)] + [
        (str(p.relative_to(directory).with_suffix("")), functools.partial(build, p))
        for p in shipped_configurations(directory)]
    t_all = time.perf_counter()
    done: list[str] = []
    for name, job in jobs:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                job()
        except Exception as exc:  # noqa: BLE001 - skipped with its reason (e.g. MuJoCo or the
            # robot's package not installed), the rest goes on
            print(f"  {name:24s} skipped: {str(exc).splitlines()[0][:120]}", flush=True)
            continue
        done.append(name)
        print(f"  {name:24s} {time.perf_counter() - t0:6.1f} s", flush=True)
    seconds = time.perf_counter() - t_all
    write_precompiled_marker(done, seconds)
    print(f"precompiled {len(done)} configurations in {seconds:.1f} s")
    return 0


def _print_robot_config(name: str) -> int:
    """A robot configuration: its controller as the YAML builds it."""
    from .controller import WholeBodyController
    from .robot_config import load_robot_setup, standing_configuration

    setup = load_robot_setup(name)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed below
        ctl = WholeBodyController(setup.controller)
    model = ctl.model
    np.set_printoptions(precision=4, suppress=True, linewidth=110)
    print(f"{setup.path}: {model}  (controller built in {time.perf_counter() - t0:.2f} s, "
          f"source {ctl.model_source})")
    for note in [*model.load_warnings, *ctl.load_warnings]:
        print(f"warning: {note}")
    print(f"mass {model.total_mass:.3f} kg; method {ctl.method}; {ctl.n} controlled joints:",
          ", ".join(ctl.joint_names))
    if model.locked_joints:
        print("locked joints:", ", ".join(f"{j}={x:g}" for j, x in model.locked_joints.items()))
    if ctl.contact_links:
        _print_contact_candidates(model, ctl.contact_links, ctl._contact_points)
    q_joints = setup.standing_joint_positions(ctl.joint_names, model)
    q = standing_configuration(ctl, q_joints, setup.standing.get("base_height"))
    where = ("standing.positions" if setup.standing.get("positions") else
             f"SRDF {setup.standing.get('pose', 'standing')}" if setup.standing.get("srdf")
             else "0 clipped into limits")
    print(f"standing pose ({where}):", q_joints)
    if model.floating_base:
        print(f"standing base height (lowest contact point on the ground): {q[2]:.4f} m")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
