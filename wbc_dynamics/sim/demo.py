"""The main job: the quadruped in MuJoCo under the whole-body controller (``wbc_demo``).

Runs the in-process closed loop (:mod:`wbc_dynamics.sim.closed_loop`: MuJoCo plant built from
the bundled quadruped URDF + the product's ``WholeBodyController``) for a few seconds of
simulated time: the robot stands and sways its weight between the feet (``--reference trot``:
the trot of Zapolsky & Drumwright, "Inverse Dynamics with Rigid Contact and Friction", Sec. 7.6).
Shows a progress bar, prints a summary (tracking error, torque smoothness, predicted vs simulated
contact force, controller tick time, and how well the base estimate followed the plant) and
writes a PNG plot of joint tracking, torques and contact forces, and beside it a video of the run
(same stem, ``.mp4``; 320x240 at 20 frames per simulated second by default, a camera following
the robot: :mod:`wbc_dynamics.sim.video`). The video needs offscreen OpenGL: the demo sets
``MUJOCO_GL=egl`` with ``EGL_PLATFORM=surfaceless`` (Mesa renders on the CPU, no display) unless
``MUJOCO_GL`` is set; where no backend works it says so in one line and writes the plot only.
Without PyAV (``pip install av``) the video is an animated GIF.

By default the controller is fed what a real robot gives it (``--sensing realistic``: 1 mrad
encoder noise, a MEMS IMU, 1 ms latency each way, +-10 % mass error, a 2 ms torque lag, torque
limits at 80 %; :meth:`~wbc_dynamics.sim.imperfections.Imperfections.realistic`) and a
floating-base robot runs on its own base estimate from the IMU and leg kinematics
(``--base-state imu``); ``--sensing exact --base-state odom`` gives it the simulator's exact
state.

Exit code: 0 if the robot did not fall, 1 if it fell, 2 for a usage/set-up error.

    python -m wbc_dynamics.sim.demo               # 5 s weight shift, lcp_noslip, rigid ground
    python -m wbc_dynamics.sim.demo --sensing exact --base-state odom   # the simulator's state
    python -m wbc_dynamics.sim.demo --short       # 1.5 s (CI)
    python -m wbc_dynamics.sim.demo --no-video    # the plot only
    python -m wbc_dynamics.sim.demo --video-size 640x480 --video-fps 60
    python -m wbc_dynamics.sim.demo --method qp_coulomb --friction low --compliant
    python -m wbc_dynamics.sim.demo --robot go2            # a robot configuration (config/robots)
    python -m wbc_dynamics.sim.demo --robot my.urdf --config my.yaml   # your URDF + parameters
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

from .video import DEFAULT_FPS, VideoRecorder, VideoUnavailableError, prefer_headless_gl

__all__ = ["main", "summarize", "plot"]


def _bar(frac: float, info: dict, t_wall0: float, stream) -> None:
    """One progress line: rewritten in place on a terminal, every 20 % otherwise (CI logs)."""
    tty = hasattr(stream, "isatty") and stream.isatty()
    pct = int(round(100 * frac))
    if not tty and pct % 20 and pct != 100:
        return
    n = 30
    k = int(round(frac * n))
    b = info["base"]
    el = time.perf_counter() - t_wall0
    stream.write(
        f"{chr(13) if tty else ''}[{'#' * k}{'.' * (n - k)}] {pct:3d}%  sim t = "
        f"{info['t']:5.2f} s  base x = {b[0]:+.3f} m, z = {b[2]:.3f} m  "
        f"(wall {el:5.1f} s){'' if tty else chr(10)}"
    )
    stream.flush()


def _video_size(text: str) -> tuple[int, int] | None:
    """``"WIDTHxHEIGHT"`` -> (width, height) [pixels]; None unless both are even and >= 16
    (the MP4 encoders' 4:2:0 chroma halves both)."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        return None
    w, h = (int(p) for p in parts)
    return (w, h) if min(w, h) >= 16 and w % 2 == 0 and h % 2 == 0 else None


def _sensing(imp) -> str:
    return (f"encoders {1e3 * imp.joint_position_noise:g} mrad, MEMS IMU, latency "
            f"{1e3 * imp.state_latency:g} + {1e3 * imp.command_latency:g} ms, mass error "
            f"+-{100 * imp.mass_error:g} %, torque lag {1e3 * imp.torque_lag:g} ms, torque limits "
            f"{100 * imp.torque_limit_fraction:g} %")


def summarize(res, stream=None) -> dict:
    """Print the run's summary (to ``stream``, default the current sys.stdout); returns the
    metrics dict."""
    stream = sys.stdout if stream is None else stream
    m = res.metrics()
    cfg = res.config
    w = stream.write
    w(f"\n\n=== wbc_dynamics demo: {cfg.robot} in MuJoCo ===\n")
    mn = cfg.solver_options.get(cfg.controller, {}).get("min_norm")
    w(
        f"controller      : {cfg.controller}{' (min-norm impulses)' if mn else ''}"
        f" at {cfg.control_rate:.0f} Hz; reference: "
        f"{cfg.reference}; ground: {'compliant' if cfg.compliant else 'rigid'}, friction "
        f"{cfg.friction}\n"
    )
    w(
        f"simulated       : {res.t[-1] + 1.0 / cfg.control_rate if len(res.t) else 0:.2f} s "
        f"({int(m['ticks'])} ticks)\n"
    )
    imp = cfg.imperfections
    base_state = cfg.controller_options.get("base_state", "odom")
    w(f"sensing         : {'exact (the simulator state)' if imp.exact else _sensing(imp)}\n")
    est = res.estimation_metrics()
    if base_state == "imu":
        w("base state      : own estimate (IMU + leg kinematics, no odometry)")
        if est:
            w(f"; vs the plant: velocity RMS {est['velocity_rms']:.4f} m/s, height RMS "
              f"{1e3 * est['height_rms']:.2f} mm, roll/pitch RMS {est['tilt_rms']:.2f} deg, "
              f"horizontal drift {100 * est['drift']:.1f} cm")
        w("\n")
    if len(res.t):
        d = res.base_pos[-1] - res.base_pos[0]
        w(
            f"base travel     : dx = {d[0]:+.3f} m, dy = {d[1]:+.3f} m, final height "
            f"{res.base_pos[-1][2]:.3f} m\n"
        )
        if cfg.reference == "walk" and res.t[-1] > 1.0:  # after the first second
            k = int(np.searchsorted(res.t, 1.0))
            v = (res.base_pos[-1] - res.base_pos[k]) / (res.t[-1] - res.t[k])
            w(f"walking         : base velocity (world) vx = {v[0]:+.3f} m/s, vy = "
              f"{v[1]:+.3f} m/s after the first second\n")
        w(
            f"joint tracking  : mean |q - q_des| = {m['pos_err']:.4f} rad (max "
            f"{m['pos_err_max']:.4f}), mean |qd - qd_des| = {m['vel_err']:.4f} rad/s\n"
        )
        w(
            f"torques         : mean |tau| = {m['tau']:.3f} N m, smoothness mean |dtau/dt| = "
            f"{m['dtau']:.1f} N m/s (max {m['dtau_max']:.0f}), at limit "
            f"{100 * m['clamp_frac']:.1f}% of samples\n"
        )
        if "force_abs" in m:
            w(
                f"contact force   : predicted sum of normal forces "
                f"{m['normal_pred_mean']:.2f} N vs simulated {m['normal_sim_mean']:.2f} N; "
                f"mean |error| {m['force_abs']:.2f} N "
                f"({100 * m['force_rel']:.1f}%)\n"
            )
        else:
            w(
                f"contact force   : simulated mean sum of normal forces "
                f"{m['normal_sim_mean']:.2f} N (no predicted normal sum to compare)\n"
            )
        w(
            f"tick time       : mean {1e6 * m['tick_mean']:.0f} us, p99 {1e6 * m['tick_p99']:.0f} "
            f"us, max {1e6 * m['tick_max']:.0f} us (controller only; budget "
            f"{1e6 / cfg.control_rate:.0f} us)\n"
        )
        if "box_slip_max" in m:  # an arm grasp: the object's slip in the hand frame
            w(f"object slip     : max {100 * m['box_slip_max']:.2f} cm in the hand frame\n")
    if res.flags:
        w(f"solver flags    : {dict(sorted(res.flags.items()))}\n")
    if res.box_slip is not None:
        w(f"result          : {'FAILED - ' + res.failure if res.failed else 'held the object'}\n")
    else:
        w(f"result          : {'FELL - ' + res.failure if res.failed else 'did not fall'}\n")
    return m


def plot(res, path: str, title: str = "") -> str:
    """PNG: joint tracking (one leg), all torques, summed contact normal forces."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    t = res.t
    names = res.joint_names
    for j in range(min(3, len(names))):
        (ln,) = ax[0].plot(t, res.q[:, j], label=f"{names[j]}")
        ax[0].plot(t, res.q_des[:, j], "--", color=ln.get_color(), lw=1)
    ax[0].set_ylabel("joint position [rad]")
    ax[0].set_title(title or "joint tracking (solid: simulated, dashed: reference)")
    ax[0].legend(loc="upper right", fontsize=8)
    for j in range(len(names)):
        ax[1].plot(t, res.tau[:, j], lw=0.8, label=names[j] if j < 12 else None)
    ax[1].set_ylabel("torque [N m]")
    ax[1].legend(loc="upper right", fontsize=6, ncol=4)
    ax[2].plot(t, res.normal_sim, label="simulated (MuJoCo)", lw=1)
    if np.any(np.isfinite(res.normal_pred)):
        ax[2].plot(t, res.normal_pred, label="predicted (controller)", lw=1, alpha=0.8)
    ax[2].set_ylabel("sum of normal forces [N]")
    ax[2].set_xlabel("simulated time [s]")
    ax[2].legend(loc="upper right", fontsize=8)
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``wbc_demo`` console script (see the module docstring)."""
    from ..controller import CONTACT_METHODS

    ap = argparse.ArgumentParser(prog="wbc_demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="quadruped",
                    help="bundled 'quadruped' (default), a robot configuration name "
                    "(config/robots: go1, talos, ...) or YAML path, or a URDF path (then "
                    "--config gives its parameters)")
    ap.add_argument("--config", default="",
                    help="controller parameters YAML for a --robot URDF (the format of "
                    "config/robots/*.yaml; its urdf_path is replaced)")
    ap.add_argument("--short", action="store_true", help="1.5 s of simulated time (CI)")
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    ap.add_argument(
        "--method",
        default="",
        help=f"controller: {', '.join(CONTACT_METHODS)}, none, pid, id_prev "
        "(default: lcp_noslip with minimum-norm impulses; a robot configuration's method)",
    )
    ap.add_argument("--vertex", action="store_true",
                    help="lcp_noslip: the paper's warm-started vertex solution instead of the "
                    "minimum-norm impulses (min_norm=True)")
    ap.add_argument("--reference", default="",
                    choices=["", "shift", "stand", "trot", "walk", "reach", "sway", "com_sway",
                             "sinusoid"],
                    help="quadruped: shift (default; stand and sway the weight between the "
                    "feet), stand, trot (the Sec. 7.6 gait, docs/simulation.md); robot "
                    "configurations: stand (default, legged), sway (the base sways over the "
                    "feet, from the model's Jacobians), sinusoid (default, fixed base); "
                    "quadrupeds: walk (the controller's trot from --velocity, docs/tasks.md); "
                    "floating bases: reach (balance while --hand circles, docs/tasks.md)")
    ap.add_argument("--hand", default="",
                    help="--reference reach: the hand link (talos: gripper_left_base_link, "
                    "g1: left_rubber_hand)")
    ap.add_argument("--velocity", default="",
                    help="--reference walk: forward,left,yaw_rate [m/s, m/s, rad/s] (default "
                    "0.3,0,0; the bundled quadruped 0.1,0,0), or a velocity profile: such "
                    "segments each held @duration [s], separated by ';' (quote it), e.g. "
                    "'0.3,0,0@2;0,0.3,0@2' (the last held for ever without @duration, else "
                    "zero after it)")
    ap.add_argument("--sensing", default="realistic", choices=["realistic", "exact"],
                    help="realistic (default): noisy, late sensing and actuation with model "
                    "error, as a real robot; exact: the simulator's state")
    ap.add_argument("--base-state", default="imu", choices=["imu", "odom"],
                    help="floating base: imu (default) = the controller's own estimate from "
                    "the IMU and leg kinematics; odom = the simulator's base state (exact, or "
                    "noisy with --sensing realistic)")
    ap.add_argument("--friction", default="high", help="'high', 'low' or a number")
    ap.add_argument("--compliant", action="store_true", help="compliant instead of rigid ground")
    ap.add_argument("--rate", type=float, default=1000.0, help="control rate [Hz]")
    ap.add_argument("--plot", default="demo_output/wbc_demo.png",
                    help="PNG path ('' = no plot)")
    ap.add_argument("--no-video", action="store_true",
                    help="no video (by default one is written beside the plot: same stem, .mp4)")
    ap.add_argument("--video-size", default="320x240",
                    help="video frame WIDTHxHEIGHT in pixels, even (default 320x240)")
    ap.add_argument("--video-fps", type=float, default=DEFAULT_FPS,
                    help=f"video frames per simulated second (default {DEFAULT_FPS:g})")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    video_size = _video_size(args.video_size)
    if video_size is None:
        print(f"wbc_demo: --video-size: expected even WIDTHxHEIGHT >= 16, got "
              f"{args.video_size!r}", file=sys.stderr)
        return 2
    if not (math.isfinite(args.video_fps) and args.video_fps > 0):
        print("wbc_demo: --video-fps must be > 0", file=sys.stderr)
        return 2
    video = "" if args.no_video or not args.plot else os.path.splitext(args.plot)[0] + ".mp4"
    # before anything imports mujoco: it picks its OpenGL backend at import
    gl_note = prefer_headless_gl() if video else None
    from .closed_loop import BUNDLED_QUADRUPED_OPTIONS, LoopConfig
    from .imperfections import Imperfections

    friction: float | str = args.friction
    if friction not in ("high", "low"):
        try:
            friction = float(friction)
        except ValueError:
            print(
                f"wbc_demo: --friction: expected high, low or a number, got {friction!r}",
                file=sys.stderr,
            )
            return 2
    duration = 1.5 if args.short else args.duration
    if not (math.isfinite(duration) and duration > 0):
        print("wbc_demo: --duration must be > 0", file=sys.stderr)
        return 2
    robot, urdf = args.robot, ""
    if robot.endswith(".urdf") or args.config:
        if not args.config:
            print("wbc_demo: --robot URDF needs --config YAML (its controller parameters)",
                  file=sys.stderr)
            return 2
        robot, urdf = args.config, robot
    method, reference = args.method, args.reference
    if robot != "quadruped":
        from ..robot_config import load_robot_setup

        try:
            setup = load_robot_setup(robot)
        except ValueError as exc:
            print(f"wbc_demo: {exc}", file=sys.stderr)
            return 2
        method = method or setup.controller.method
        reference = reference or ("stand" if setup.controller.floating_base else "sinusoid")
    floating = robot == "quadruped" or bool(setup.controller.floating_base)
    reference_options: dict = {}
    if reference == "walk":
        from .references import VelocityProfile

        text = args.velocity or ("0.1,0,0" if robot == "quadruped" else "0.3,0,0")
        try:
            profile = VelocityProfile.parse(text, "--velocity")
        except ValueError as exc:
            print(f"wbc_demo: {exc}", file=sys.stderr)
            return 2
        reference_options["velocity"] = profile
    if reference == "reach":
        if not args.hand:
            print("wbc_demo: --reference reach needs --hand LINK", file=sys.stderr)
            return 2
        reference_options["hand"] = args.hand
    options: dict = {}
    if floating:
        if robot == "quadruped":  # as config/quadruped.yaml ships it
            options.update(BUNDLED_QUADRUPED_OPTIONS)
        options["base_state"] = args.base_state
    cfg = LoopConfig(
        robot=robot,
        urdf=urdf,
        controller=method or "lcp_noslip",
        reference=reference or "shift",
        duration=duration,
        control_rate=args.rate,
        friction=friction,
        compliant=args.compliant,
        solver_options={} if args.vertex else {"lcp_noslip": {"min_norm": True}},
        imperfections=(Imperfections.realistic() if args.sensing == "realistic"
                       else Imperfections()),
        controller_options=options,
        reference_options=reference_options,
    )
    print(
        f"wbc_demo: building the MuJoCo plant and the controller ({cfg.controller}); compiling "
        "kernels on first use ...",
        flush=True,
    )
    t0 = time.perf_counter()
    try:
        from .closed_loop import ClosedLoop

        loop = ClosedLoop(cfg)
    except (ValueError, ImportError) as exc:
        print(f"wbc_demo: {exc}", file=sys.stderr)
        return 2
    print(
        f"wbc_demo: ready in {time.perf_counter() - t0:.1f} s; simulating {duration:.2f} s",
        flush=True,
    )
    recorder, video_line = None, "none (--no-video)" if args.no_video else (
        "none (no --plot path to put it beside)")
    if video:
        try:
            visual_xml = loop.plant.visual_xml()
        except (ValueError, OSError):  # no URDF file to read the visuals from: collision shapes
            visual_xml = None
        try:
            recorder = VideoRecorder(loop.plant.model, loop.plant.data, video,
                                     fps=args.video_fps, size=video_size, visual_xml=visual_xml)
        except VideoUnavailableError as exc:
            video_line = f"{exc}{'; ' + gl_note if gl_note else ''}; plot only"
    t1 = time.perf_counter()
    progress = None if args.quiet else (lambda f, i: _bar(f, i, t1, sys.stdout))
    try:
        res = loop.run(progress=progress, on_step=recorder)
    finally:
        if recorder is not None:
            recorder.close()
    if recorder is not None:
        video_line = (f"{os.path.abspath(recorder.path)} ({recorder.frames} frames, "
                      f"{recorder.fps:g} per simulated second, {video_size[0]}x{video_size[1]}, "
                      f"{'URDF visuals' if recorder.visuals else 'collision geometry'}"
                      f"{'; ' + recorder.note if recorder.note else ''})")
    summarize(res)
    if args.plot:
        path = plot(
            res,
            args.plot,
            f"{cfg.robot} {cfg.reference}, {cfg.controller}: joint tracking "
            "(solid: simulated, dashed: reference)",
        )
        print(f"plot            : {os.path.abspath(path)}")
    print(f"video           : {video_line}")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
