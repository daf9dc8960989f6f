"""What ``launch/sim.launch.py`` starts, as plain data (no ``launch`` import).

The launch file turns :func:`sim_launch_plan` into ``launch_ros`` ``Node`` actions; the plain rclpy
closed-loop test (test/test_ros_closed_loop.py) starts the same executables with the same
parameters as processes, so the scenario the launch file runs is tested where ``launch`` is not
installed, and the two cannot drift apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["SIM_LAUNCH_ARGS", "FRICTION_MU", "NodePlan", "sim_launch_plan"]

#: (name, default, description) of the launch arguments.
SIM_LAUNCH_ARGS: tuple[tuple[str, str, str], ...] = (
    ("robot", "quadruped", "quadruped | arm"),
    ("method", "qp_coulomb", "controller method"),
    ("reference", "shift", "reference kind"),
    ("friction", "high", "high | low | a number"),
    ("ground", "rigid", "rigid | compliant"),
    ("mode", "lockstep", "lockstep | realtime"),
    ("sim_rate", "1000.0", "simulator rate [Hz]"),
    ("real_time_factor", "1.0", "simulator pacing (0 = as fast as possible)"),
    ("duration", "0.0", "simulated seconds, then the simulator stops (0 = unlimited)"),
    ("kp", "", "controller position gain [1/s^2] (empty: the robot config's)"),
    ("kd", "", "controller velocity gain [1/s] (empty: the robot config's)"),
    ("namespace", "", "namespace of the simulator, controller and reference"),
)

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
    friction = a["friction"]
    try:
        mu = FRICTION_MU[friction] if friction in FRICTION_MU else float(friction)
    except ValueError:
        raise ValueError(f"friction: expected high | low | a number, got {friction!r}") from None
    sim_rate = float(a["sim_rate"])
    sim = NodePlan("wbc_sim", "wbc_dynamics.sim.sim_node", "wbc_sim", [{
        "robot": robot, "friction": friction, "ground": a["ground"], "mode": a["mode"],
        "sim_rate": sim_rate, "real_time_factor": float(a["real_time_factor"]),
        "duration": float(a["duration"]),
        "initial_pose": "standing" if robot == "quadruped" else "grasp"}])
    overrides: dict = {"use_sim_time": True, "method": a["method"], "friction": mu,
                       "control_rate": sim_rate}
    for gain in ("kp", "kd"):
        if a[gain].strip():
            overrides[gain] = [float(a[gain])]
    ctl = NodePlan("wbc_controller", "wbc_dynamics.node", "wbc_controller",
                   [os.path.join(share_dir, "config", f"{robot}.yaml"), overrides])
    ref = NodePlan("wbc_reference", "wbc_dynamics.sim.references", "wbc_reference", [{
        "use_sim_time": True, "robot": robot, "kind": a["reference"],
        "topic": "wbc_controller/reference", "rate": 200.0}])
    return [sim, ctl, ref]
