"""What ``launch/sim.launch.py`` starts, as plain data (no ``launch`` import), and a runner.

The launch file turns :func:`sim_launch_plan` into ``launch_ros`` ``Node`` actions; the plain rclpy
closed-loop test (test/test_ros_closed_loop.py) starts the same executables with the same
parameters as processes, so the scenario the launch file runs is tested where ``launch`` is not
installed, and the two cannot drift apart.

Where ``launch`` is not installed (a pip-only ROS 2), this module runs the same scenario itself
-- the three nodes as processes, with the launch file's arguments -- until the simulation's
``duration`` ends or Ctrl-C (exit code 0)::

    python -m wbc_dynamics.sim.launch_plan robot:=go2 reference:=trot duration:=10
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from .imperfections import Imperfections
from .references import VelocityProfile

__all__ = ["SIM_LAUNCH_ARGS", "FRICTION_MU", "NodePlan", "sim_launch_plan", "start_node", "main"]

#: (name, default, description) of the launch arguments.
SIM_LAUNCH_ARGS: tuple[tuple[str, str, str], ...] = (
    ("robot", "quadruped", "quadruped | arm (bundled) | a robot configuration (config/robots "
     "name such as go1, talos, panda, or a YAML path)"),
    ("method", "", "controller method (empty: qp_coulomb for the bundled robots, the robot "
     "configuration's method)"),
    ("reference", "", "reference kind (empty: quadruped shift, arm sinusoid; a configuration: "
     "stand with a floating base, sinusoid with a fixed one; legged configurations also sway, "
     "com_sway, trot (quadrupeds); walk: the controller's trot from cmd_vel (quadrupeds))"),
    ("velocity", "0.2,0.0,0.0", "reference walk: the cmd_vel the reference node publishes: "
     "forward [m/s], left [m/s], yaw rate [rad/s] (a constant command), or a velocity profile "
     "of such segments each held for @duration [s], separated by ';' (quote it in a shell), "
     "e.g. '0.3,0,0@4;0,0.3,0@4;0,0,0.3@4': the last held for ever without @duration, "
     "else zero after it"),
    ("friction", "high", "high | low | a number"),
    ("ground", "rigid", "rigid | compliant"),
    ("mode", "lockstep", "lockstep | realtime"),
    ("sim_rate", "1000.0", "simulator rate [Hz]"),
    ("real_time_factor", "1.0", "simulator pacing (0 = as fast as possible)"),
    ("duration", "0.0", "simulated seconds, then the simulator stops (0 = unlimited)"),
    ("kp", "", "controller position gain [1/s^2] (empty: the robot config's)"),
    ("kd", "", "controller velocity gain [1/s] (empty: the robot config's)"),
    ("drive", "", "the simulator's joint drives: effort | hybrid (own impedance loop "
     "at every plant step on the controller's set-points and gains; empty: hybrid when the "
     "controller sends the hybrid drive command, a drive gain > 0)"),
    ("drive_stiffness", "", "controller drive_stiffness [N m/rad], one value for every joint "
     "(empty: the robot config's; > 0: the controller sends the hybrid drive command)"),
    ("drive_damping", "", "controller drive_damping [N m s/rad], one value for every joint "
     "(empty: the robot config's)"),
    ("base_state", "", "the controller's floating base state: imu (empty, floating base: its own "
     "estimate from the simulator's IMU -- typical MEMS noise -- and the joint states) | odom "
     "(the simulator's exact base state)"),
    ("sensing", "realistic", "the simulator's sensors: realistic (encoders with 1 mrad / "
     "0.02 rad/s noise and 14-bit quantization, an IMU with typical MEMS noise) | exact"),
    ("namespace", "", "namespace of the simulator, controller and reference"),
)

#: the simulator's IMU noise parameters (wbc_sim's and Imperfections' names)
IMU_FIELDS = ("imu_gyro_noise", "imu_gyro_bias", "imu_accelerometer_noise",
              "imu_orientation_noise", "imu_gyro_bias_walk", "imu_accelerometer_bias",
              "imu_accelerometer_bias_walk")

#: [rad] one count of a 14-bit joint encoder (2 pi / 2^14): ``sensing:=realistic``'s
ENCODER_RESOLUTION = 2.0 * math.pi / 2 ** 14

#: [s simulated] a configuration with an object: the simulator holds it in place this long
#: while the controller closes the fingers on it; the reference starts moving afterwards
OBJECT_HOLD = 0.5

#: Coulomb coefficient of the named frictions (= mujoco_model.HIGH_FRICTION / LOW_FRICTION); the
#: controller is given the simulator's mu.
FRICTION_MU = {"high": 10.0, "low": 0.1}


@dataclass(frozen=True)
class NodePlan:
    """One node: console-script ``executable`` (module ``module`` for ``python -m``), ``name``,
    and its parameter sources in order (a params-file path or a dict; later ones override)."""

    executable: str
    module: str
    name: str
    parameters: list = field(default_factory=list)


def sim_launch_plan(args: dict[str, str], share_dir: str) -> list[NodePlan]:
    """Simulator, controller and reference for the launch arguments ``args`` (text values, as
    launch gives them; missing ones take the defaults of :data:`SIM_LAUNCH_ARGS`).

    ``share_dir``: the package's share directory (``config/<robot>.yaml`` is read from it).
    """
    a = {name: default for name, default, _ in SIM_LAUNCH_ARGS}
    unknown = sorted(set(args) - set(a))
    if unknown:
        raise ValueError(f"sim.launch.py: unknown arguments {unknown}; known: {sorted(a)}")
    a.update({k: str(v) for k, v in args.items()})
    robot = a["robot"]
    bundled = robot in ("quadruped", "arm")
    setup = None
    if not bundled:
        from ..robot_config import load_robot_setup

        setup = load_robot_setup(robot)  # ValueError naming the known configurations
    method = a["method"] or ("qp_coulomb" if bundled else setup.controller.method)
    reference = a["reference"] or (
        {"quadruped": "shift", "arm": "sinusoid"}[robot] if bundled
        else "stand" if setup.controller.floating_base else "sinusoid")
    friction = a["friction"]
    try:
        mu = FRICTION_MU[friction] if friction in FRICTION_MU else float(friction)
    except ValueError:
        raise ValueError(f"friction: expected high | low | a number, got {friction!r}") from None
    sim_rate = float(a["sim_rate"])
    if a["drive"] not in ("", "effort", "hybrid"):
        raise ValueError(f"drive: expected effort | hybrid, got {a['drive']!r}")
    if a["base_state"] not in ("", "odom", "imu"):
        raise ValueError(f"base_state: expected odom | imu, got {a['base_state']!r}")
    floating = robot == "quadruped" if bundled else bool(setup.controller.floating_base)
    if a["base_state"] == "imu" and not floating:
        raise ValueError(f"base_state: imu needs a floating-base robot ({robot} has a fixed base)")
    base_state = a["base_state"] or "imu"
    sim_params = {
        "friction": friction, "ground": a["ground"], "mode": a["mode"],
        "sim_rate": sim_rate, "real_time_factor": float(a["real_time_factor"]),
        "duration": float(a["duration"]),
        "drive": a["drive"] or ("hybrid" if _sends_drive_command(a, setup, share_dir, robot)
                                else "effort")}
    if a["sensing"] not in ("realistic", "exact"):
        raise ValueError(f"sensing: expected realistic | exact, got {a['sensing']!r}")
    if a["sensing"] == "realistic":  # Imperfections.realistic's sensor noise
        real = Imperfections.realistic()
        sim_params.update(encoder_position_noise=real.joint_position_noise,
                          encoder_velocity_noise=real.joint_velocity_noise,
                          encoder_resolution=ENCODER_RESOLUTION)
        if floating:
            sim_params.update({f: getattr(real, f) for f in IMU_FIELDS})
    if bundled:
        sim_params.update(robot=robot,
                          initial_pose="standing" if robot == "quadruped" else "grasp")
        params_file = os.path.join(share_dir, "config", f"{robot}.yaml")
    else:  # model, joints and standing pose from the configuration, as the controller's
        sim_params.update(robot_config=setup.path,
                          ground_height=float(setup.controller.ground_height))
        params_file = setup.path
    # a grasp (object_urdf): the simulator holds the object in place while the controller
    # closes the fingers on it, the reference starts moving afterwards (as ClosedLoop's settle)
    hold = OBJECT_HOLD if setup is not None and setup.controller.object_urdf else 0.0
    if hold:
        sim_params["object_hold"] = hold
    # the controller and the reference run on simulated time: the simulation starts once both
    # subscribe to /clock (otherwise a late-discovered reference begins seconds behind)
    sim_params["clock_subscribers"] = 2
    sim = NodePlan("wbc_sim", "wbc_dynamics.sim.sim_node", "wbc_sim", [sim_params])
    overrides: dict = {"use_sim_time": True, "method": method, "friction": mu,
                       "control_rate": sim_rate}
    if floating:
        overrides["base_state"] = base_state
    for gain in ("kp", "kd", "drive_stiffness", "drive_damping"):
        if a[gain].strip():
            overrides[gain] = [float(a[gain])]
    ref_params = {
        "use_sim_time": True, "robot": robot if bundled else setup.path, "kind": reference,
        "topic": "wbc_controller/reference", "rate": 200.0, "start_delay": hold}
    if reference == "walk":  # the controller walks; the reference node commands it
        overrides["gait"] = "trot"
        profile = VelocityProfile.parse(a["velocity"], "velocity")
        if profile.constant:  # the reference node's 3-double ``velocity``
            ref_params["velocity"] = list(profile.sample(0.0))
        else:
            ref_params["velocity_profile"] = profile.to_text()
        ref_params["cmd_vel_topic"] = "cmd_vel"
    ctl = NodePlan("wbc_controller", "wbc_dynamics.node", "wbc_controller",
                   [params_file, overrides])
    ref = NodePlan("wbc_reference", "wbc_dynamics.sim.references", "wbc_reference", [ref_params])
    return [sim, ctl, ref]


def _sends_drive_command(a: dict[str, str], setup, share_dir: str, robot: str) -> bool:
    """Whether the controller sends the hybrid drive command: a drive gain > 0, from the launch
    arguments or else the robot's configuration (``setup``, or config/<robot>.yaml)."""
    if setup is None:
        from ..robot_config import load_robot_setup

        setup = load_robot_setup(os.path.join(share_dir, "config", f"{robot}.yaml"))
    gains = []
    for name in ("drive_stiffness", "drive_damping"):
        gains.extend([float(a[name])] if a[name].strip() else getattr(setup.controller, name))
    return any(g > 0.0 for g in gains)


#: the package's root: config/ and the package beside each other in a source tree
_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def share_directory() -> str:
    """The package's share directory (config/, launch/): the ament index's when the package is
    installed with colcon, else the source tree's."""
    try:
        from ament_index_python.packages import get_package_share_directory

        return get_package_share_directory("wbc_dynamics")
    except Exception:  # no ament index (pip-only ROS), or the package not installed in it
        return _SOURCE_ROOT


def start_node(plan: NodePlan, namespace: str = "", log_level: str = "info",
               overrides: dict | None = None, **popen) -> subprocess.Popen:
    """The node of ``plan`` as a process (``python -m <module> --ros-args ...``), as launch_ros
    would start it: its parameter files in order, each parameter dict (then ``overrides``) as a
    parameter file of its own (typed YAML: a text value such as ``"0.5"`` stays text).
    ``popen``: :class:`subprocess.Popen` keyword arguments (e.g. ``stdout``)."""
    args = [sys.executable, "-m", plan.module, "--ros-args", "--log-level", log_level]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    files = []
    for src in [*plan.parameters, *([overrides] if overrides else [])]:
        if isinstance(src, str):
            args += ["--params-file", src]
            continue
        import yaml

        fd, path = tempfile.mkstemp(prefix=f"{plan.name}_", suffix=".yaml")
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump({"/**": {"ros__parameters": dict(src)}}, f)
        files.append(path)
        args += ["--params-file", path]
    env = dict(popen.pop("env", None) or os.environ)
    if os.path.isdir(os.path.join(_SOURCE_ROOT, "wbc_dynamics")):  # a source tree: importable
        env["PYTHONPATH"] = _SOURCE_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(args, env=env, **popen)
    proc.parameter_files = files  # type: ignore[attr-defined]  # removed by stop_node
    return proc


def stop_node(proc: subprocess.Popen, timeout: float = 10.0) -> int:
    """SIGINT (the nodes' clean shutdown), then SIGKILL after ``timeout`` [s]; removes the
    parameter files :func:`start_node` wrote. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for path in getattr(proc, "parameter_files", []):
        try:
            os.remove(path)
        except OSError:
            pass
    return proc.returncode


def main(argv: Sequence[str] | None = None) -> int:
    """``sim.launch.py`` without ``launch``: ``name:=value`` arguments as the launch file takes
    them; runs until Ctrl-C (or SIGTERM), then stops the nodes as launch does (SIGINT each).
    Exit code 0; 2 for a bad argument; else the first non-zero exit code of a node (one that
    ended by itself, or did not exit 0 when stopped; 1 for one killed)."""
    import time

    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        for name, default, text in SIM_LAUNCH_ARGS:
            print(f"  {name}:={default!r:<12} {text}")
        return 0
    try:
        args = dict(a.split(":=", 1) for a in argv)
    except ValueError:
        print(f"arguments are name:=value, got {argv}", file=sys.stderr)
        return 2
    try:
        plan = sim_launch_plan(args, share_directory())
    except (ValueError, OSError) as e:
        print(f"sim launch: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # also when started with SIGINT ignored (a job)
    # each node in a session of its own: a terminal's Ctrl-C reaches this process only, which
    # then stops every node once (a second SIGINT would interrupt a node's own shutdown)
    procs = [start_node(p, args.get("namespace", ""), start_new_session=True,
                        preexec_fn=_default_sigint) for p in plan]
    code = 0
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(0.2)
        code = next(p.returncode for p in procs if p.poll() is not None)
        print(f"sim launch: a node exited ({code}); stopping the others", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        codes = [stop_node(p) for p in procs]
    # every node exits 0 on SIGINT: anything else (an error, a kill after the timeout) is reported
    failed = [(p.module, c) for p, c in zip(plan, codes, strict=True) if c != 0]
    if failed and code == 0:
        print(f"sim launch: nodes exited with {failed}", file=sys.stderr)
        code = failed[0][1] if failed[0][1] > 0 else 1
    return code


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _default_sigint() -> None:
    """In a node's process before exec: SIGINT handled (an ignored signal stays ignored across
    exec, and a shell's background job starts with it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
