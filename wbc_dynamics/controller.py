"""ROS-free whole-body controller: state + desired accelerations in, joint torques out.

:class:`WholeBodyController` is the product's control loop without any middleware. The ROS 2 node
(:mod:`wbc_dynamics.node`) is a thin adapter over it, and tests drive it directly.

One control tick (:meth:`WholeBodyController.update`):

1. staleness checks of the latest joint state, base state (floating base) and reference against
   the configured timeouts (ages measured on the caller's clock at *arrival*, not header stamps);
2. commanded joint accelerations (PD feedback on an optional position/velocity reference)::

       qdd_cmd = qdd_des + Kp (q_des - q) + Kd (qd_des - qd)      [rad/s^2 or m/s^2]

3. inverse dynamics of ``qdd_cmd``:

   * ``method="none"``, fixed base: ``tau = RNEA(q, qd, qdd_cmd)`` (Featherstone 2008, Table 5.1;
     the same compiled call as below, ``wbc_dynamics.kernels.free_dof``),
   * ``method="none"``, floating base (or passive joints): contact-free inverse dynamics of the
     actuated joints with the base (and the passive joints) accelerating freely,
     ``tau = (P M^-1 P^T)^-1 (qdd_cmd + P M^-1 h)`` (Zapolsky & Drumwright, eqs. (37)-(39) with zero
     contact impulses), computed block-wise in one compiled call: ``M_UU a_U = -(M_UA qdd_cmd
     + h_U)``, ``tau = M_AU a_U + M_AA qdd_cmd + h_A`` with M from CRBA, U the unactuated and
     A the actuated DoFs (``wbc_dynamics.kernels.free_dof``),
   * ``method`` in ``lcp_noslip | lcp_coulomb | qp_coulomb | qp_noslip``: contact-aware inverse
     dynamics of Zapolsky & Drumwright (:func:`wbc_dynamics.contact.solve`), the solver's warm start
     kept in this object across ticks (:meth:`~WholeBodyController.reset_solver` forgets it);

4. clamping to the effort limits (URDF ``<limit effort>`` unless overridden) and a final finiteness
   check. Any failure produces the documented safe command instead, flagged in the output.

Safe command (:attr:`ControlOutput.mode`):

* ``"safe_stale_state"`` -- no joint state (or, floating base, no base state) younger than
  ``state_timeout``: **zero torque** on every joint (no valid state to compensate gravity with).
* ``"safe_stale_reference"`` -- state fresh but no reference younger than ``reference_timeout``
  (including "never received"): with ``safe_mode="damping"`` (default) the inverse dynamics of
  ``qdd_cmd = -safe_damping * qd`` through the configured method, i.e. joint damping with gravity
  (and contact) compensation; for a fixed base this is ``RNEA(q, qd, -D qd)``. With
  ``safe_mode="zero"``: zero torque.
* ``"safe_nonfinite"`` -- the computation produced a non-finite number: zero torque.

Frames and units: joint positions rad (revolute) or m (prismatic); base position m in the world
frame, orientation quaternion ``(x, y, z, w)`` world-from-base, base linear and angular velocity in
the **base (child) frame** (the nav_msgs/Odometry twist convention, equal to the core's free-flyer
``v``); torques N m / N in the configured joint order.

The configuration is :mod:`wbc_dynamics.controller_config` (:class:`ControllerConfig`, also
importable from here), loading the model, joints, contacts and object it describes is
:mod:`wbc_dynamics.controller_loading`, and the compiled per-tick pre-, post- and command steps
are ``wbc_dynamics.tick_steps``. This module is one class and is long for that reason: the
constructor binds the controller's preallocated buffers into the compiled per-tick kernels, and
every method (inputs, the tick, the contact, grasp and task steps, the warm-up) reads and writes
those same buffers.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .controller_config import (
    ControllerConfig,
    _base_settings,
    _check_method_available,
    _contact_solver_options,
    _ramp_warnings,
    _stance_settings,
    _warm_method_names,
)
from .controller_loading import (
    _contact_links,
    _declared_contact_points,
    _joint_order,
    _load_model,
    _load_object,
    _passive_joints,
)
from .kernels.dynamics import OK as _KERNEL_OK
from .kernels.dynamics import check_vector
from .kernels.leaf import leaf_kernel
from .parameters import (
    CONTACT_METHODS,
    METHODS,
    PARAMETERS,
    RUNTIME_PARAMETERS,
    SAFE_MODES,
    check,
    per_joint,
)
from .tick_steps import (
    _CMD_DAMP,
    _CMD_KEEP,
    _CMD_PD,
    _DRIVE_HOLD,
    _DRIVE_OFF,
    _DRIVE_REFERENCE,
    _DRIVE_TASKS,
    _command_tick,
    _finish_tick,
    _prepare_tick,
    _StepArgs,
    _TickBuffers,
    compile_tick_steps,  # noqa: F401 - re-exported: the compile helper's and tests' name
)

__all__ = [
    "CONTACT_METHODS",
    "METHODS",
    "RUNTIME_PARAMETERS",
    "SAFE_MODES",
    "ControlOutput",
    "ControllerConfig",
    "WholeBodyController",
]

# CONTACT_METHODS, METHODS, SAFE_MODES and RUNTIME_PARAMETERS (the parameters
# :meth:`WholeBodyController.set_parameters` takes) come from the parameter schema,
# :mod:`wbc_dynamics.parameters`, ControllerConfig from :mod:`wbc_dynamics.controller_config`;
# all are re-exported here.

#: [s] time constants with which task-space control's drive set-points (the commanded
#: accelerations integrated) leak towards the measured joint positions and velocities
TASK_POSITION_LEAK = 0.2
TASK_VELOCITY_LEAK = 0.05

#: [m] a contact link this close to the object touches it (grasp_force, grasp_hold)
GRASP_TOUCH_DISTANCE = 1e-3

# codes of ControlOutput.mode (also used by the node's diagnostics)
MODE_CONTROL = "control"
MODE_STALE_STATE = "safe_stale_state"
MODE_STALE_REFERENCE = "safe_stale_reference"
MODE_NONFINITE = "safe_nonfinite"


@dataclass
class ControlOutput:
    """Result of one control tick. The controller reuses ONE instance and its arrays every tick
    (no per-tick allocation): everything in it, the arrays included, is valid until the next
    :meth:`WholeBodyController.update` (or ``compute`` / ``safe_command``); copy what you want
    to keep. The contact arrays are views of the contact solver's buffers (``contact_normals``
    a strided one), not copies.

    Attributes:
        tau: (n,) joint torques [N m / N] in the configured joint order (clamped, finite).
        mode: "control" or one of the safe modes (see module docstring).
        qdd_cmd: (n,) commanded joint accelerations used [rad/s^2] (zeros in a zero safe mode).
        clamped: number of joints whose torque hit its effort limit this tick.
        contact_ids: identities of the contacts in ``contact_forces`` (empty without contacts).
        contact_points: (nc, 3) world contact points [m].
        contact_forces: (nc, 3) contact forces on the robot, world axes [N].
        contact_normals: (nc, 3) unit contact normals, world axes, pointing from the feature
            (ground, object) into the robot link: ``contact_forces . contact_normals`` is each
            contact's normal force [N].
        solver_flags: solver flags of this tick (see ``wbc_dynamics.contact.FLAGS``).
        warm_start_used: the contact solver used the previous tick's solution.
        compute_time: wall-clock time of the tick [s].
        position_setpoint, velocity_setpoint: (n,) [rad, rad/s] the hybrid drive command's
            set-points (``drive_stiffness`` / ``drive_damping``): the reference's positions
            and velocities where given, else the measured ones; a safe tick holds the measured
            position at zero velocity.
        stiffness, damping: (n,) [N m/rad, N m s/rad] the drive gains of this tick (the
            configured ones; zero in the zero safe mode and while the state is stale). A drive
            applies ``tau + stiffness (position_setpoint - q) + damping (velocity_setpoint - qd)``
            at its own rate.
    """

    tau: np.ndarray
    mode: str = MODE_CONTROL
    qdd_cmd: np.ndarray | None = None
    clamped: int = 0
    contact_ids: tuple = ()
    contact_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    contact_forces: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    contact_normals: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    solver_flags: tuple[str, ...] = ()
    warm_start_used: bool = False
    compute_time: float = 0.0
    position_setpoint: np.ndarray | None = None
    velocity_setpoint: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    damping: np.ndarray | None = None

    @property
    def safe(self) -> bool:
        """True if this tick's torques are a safe command rather than the controller's."""
        return self.mode != MODE_CONTROL


# --------------------------------------------------------------------------- compiled kernels
@leaf_kernel
def _gather(src, idx, offset, dst):
    """dst[i] = src[offset + idx[i]]."""
    for i in range(dst.shape[0]):
        dst[i] = src[offset + idx[i]]


def _warm_kernels() -> None:
    """Compile (or load from cache) the kernels of this module the controller calls through
    the dispatcher (the constructor binds :func:`_prepare_tick` and :func:`_finish_tick`, which
    compiles them and their callees)."""
    a = np.zeros(2)
    i = np.arange(2, dtype=np.int64)
    _gather(a, i, 0, a.copy())
    check_vector(a)


# --------------------------------------------------------------------------- validation helpers
def _write_pose_twist(name: str, position: Any, orientation_xyzw: Any, linear_velocity: Any,
                      angular_velocity: Any, q7: np.ndarray, v6: np.ndarray) -> None:
    """Validate a free body's pose and twist (ValueError naming ``name.<field>``), then write
    ``q7 = [p; quat normalized]`` and ``v6 = [linear; angular]`` in place."""
    parts = []
    for nm, arr, size in (("position", position, 3), ("orientation", orientation_xyzw, 4),
                          ("linear_velocity", linear_velocity, 3),
                          ("angular_velocity", angular_velocity, 3)):
        a = np.asarray(arr, dtype=np.float64).reshape(-1)
        if a.shape[0] != size:
            raise ValueError(f"{name}.{nm}: expected {size} values, got {a.shape[0]}")
        if not check_vector(a):
            raise ValueError(f"{name}.{nm}: contains a non-finite value")
        parts.append(a)
    norm = math.sqrt(float(parts[1] @ parts[1]))
    if abs(norm - 1.0) > 1e-3:
        raise ValueError(f"{name}.orientation: quaternion norm {norm:.6g} is not 1")
    q7[0:3] = parts[0]
    q7[3:7] = parts[1] / norm
    v6[0:3] = parts[2]
    v6[3:6] = parts[3]


# --------------------------------------------------------------------------- the controller
class WholeBodyController:
    """Whole-body inverse-dynamics controller (ROS-free).

    Typical use::

        ctl = WholeBodyController({"robot": "arm", "kp": [100.0], "kd": [20.0]})
        ctl.set_joint_state(q, qd, now)                 # configured joint order
        ctl.set_reference(qdd_des, now, position=q_des, velocity=qd_des)
        out = ctl.update(now)                           # out.tau, out.mode, ...

    Everything (model loading, validation, buffers, numba compilation and a full warm-up tick of
    every code path) happens in the constructor; :meth:`update` only fills preallocated buffers.

    Args:
        config: :class:`ControllerConfig` or a dict of its fields.
        model: an already loaded :class:`wbc_dynamics.RobotModel` to use instead of the config's
            model source (its ``floating_base`` must match the config).
        progress: called with a line of text at each start-up stage (model, kernel compilation
            or cache load, contact method, warm-up tick) and its elapsed time -- a first start
            with a cold numba cache compiles for a minute or more; the node logs these lines.

    Raises:
        ValueError: naming the offending field, joint or link.
    """

    def __init__(self, config: ControllerConfig | Mapping[str, Any], model: Any = None,
                 progress: Callable[[str], None] | None = None) -> None:
        cfg = (
            config
            if isinstance(config, ControllerConfig)
            else ControllerConfig.from_mapping(config)
        )
        self._cfg = dataclasses.replace(
            cfg, joints=list(cfg.joints), contact_links=list(cfg.contact_links)
        )
        t_start = time.perf_counter()

        def report(stage: str) -> None:
            if progress is not None:
                progress(f"start-up: {stage} ({time.perf_counter() - t_start:.1f} s)")

        # a cold start: the contact methods' robot-independent kernels compile in a helper
        # process meanwhile (wbc_dynamics.compile_helper); None when all of them are cached
        from .compile_helper import CompileHelper

        self._compile_helper = CompileHelper.start(
            [str(cfg.method), *_warm_method_names(cfg)], passive_impact=bool(cfg.passive_impact),
            free_dof=True)
        if self._compile_helper is not None:
            report("compiling the contact kernels of "
                   f"{', '.join(self._compile_helper.methods)} in a helper process")
        try:
            self._construct(model, report)
        finally:
            if self._compile_helper is not None:
                self._compile_helper.stop()  # done (waited for) or no longer needed
            self._compile_helper = None

    def _construct(self, model: Any, report: Callable[[str], None]) -> None:
        """The constructor's work (see the class docstring)."""
        cfg = self._cfg
        self._startup_report = report
        #: the task layer (``task_names``, ``gait``), or None: the joint reference drives the tick
        self._tasks: Any = None
        self._tasks_held = False
        #: tasks whose goal was set before the first control tick (not held there)
        self._task_goals_set: set[str] = set()
        #: warnings of the configuration (locked joints chosen for the user, ...), also logged
        #: by the node; the model's own load warnings are in ``model.load_warnings``
        self.load_warnings: list[str] = []
        if model is None:
            model, self.model_source = _load_model(cfg, self.load_warnings, report)
            report("core kernels ready")
        else:
            self.model_source = "model argument"
            if bool(model.floating_base) != bool(cfg.floating_base):
                raise ValueError(
                    f"floating_base: config says {cfg.floating_base} but the given model has "
                    f"floating_base={model.floating_base}"
                )
        self.model = model
        self.floating_base: bool = bool(model.floating_base)
        self._off_q = 7 if self.floating_base else 0
        self._off_v = 6 if self.floating_base else 0
        model_joints = list(model.joint_names)

        # joint order
        joints = _joint_order(cfg, model_joints)
        self.joint_names: list[str] = joints
        self.n = n = len(joints)
        passive = _passive_joints(cfg, joints)
        self.passive_joints: list[str] = passive
        #: model indices of the actuated joints (model order); None = every joint actuated
        self._act_model = None
        if passive:
            self._act_model = np.array(
                [i for i, j in enumerate(model_joints) if j not in passive], dtype=np.int64)
        self._joint_index = {j: i for i, j in enumerate(joints)}
        self._cfg_to_model = np.array([model_joints.index(j) for j in joints], dtype=np.int64)

        # runtime parameters (validated)
        self._params: dict[str, Any] = {}
        # (the task gains: taken by the task layer when it is built below)
        self._apply(self.validate_parameters({k: getattr(cfg, k) for k in RUNTIME_PARAMETERS
                                              if not k.startswith("task_")}))
        self._warm_methods = check("warm_methods", _warm_method_names(cfg))
        self.control_rate = check("control_rate", cfg.control_rate)
        self.dt = 1.0 / self.control_rate
        for nm in ("friction_edges", "contact_margin", "ground_height", "phi_deadband",
                   "separation_tolerance"):
            check(nm, getattr(cfg, nm))
        self._solver_options = _contact_solver_options(cfg)

        # buffers
        nq, nv = int(model.nq), int(model.nv)
        self._q = np.asarray(model.neutral(), dtype=np.float64).copy()
        self._v = np.zeros(nv)
        self._a = np.zeros(nv)
        self._qj = np.zeros(n)
        self._qdj = np.zeros(n)
        #: the drives' torque for the last command at the measured state, and its scratch
        self._tau_applied = np.zeros(n)
        self._tau_scratch = np.zeros(n)
        self._qdd_ref = np.zeros(n)
        self._q_ref = np.zeros(n)
        self._qd_ref = np.zeros(n)
        self._ref_pos = False
        self._ref_vel = False
        self._qdd_cmd = np.zeros(n)
        #: the PD command's integral of the position error [rad s] (ki)
        self._integral = np.zeros(n)
        self._tau = np.zeros(n)
        self._tau_out = np.zeros(n)
        self._zeros = np.zeros(n)
        self._no_contacts = np.zeros((0, 3))
        self._out = ControlOutput(tau=self._tau_out, qdd_cmd=self._qdd_cmd)
        self._t_state = -math.inf
        self._t_base = -math.inf if self.floating_base else math.inf
        self._t_ref = -math.inf
        self._have_state = False
        assert self._q.shape == (nq,)

        # contact model, only for contact methods
        self._contact_model = None
        self._swing_links: frozenset[str] = frozenset()
        self._contact_points = _declared_contact_points(cfg)
        self._contact_links = _contact_links(cfg, self._contact_points)
        #: the free object the contact links may touch (``object_urdf``); its state is an input
        self._object = _load_object(cfg)
        if self._object is not None and not self._contact_links:
            raise ValueError("object_urdf: needs contact_links (the links that touch the object)")
        if self._object is not None:  # grasps keep OSQP
            from .contact.grasp import GRASP_SOLVER_OPTIONS

            for name, opts in GRASP_SOLVER_OPTIONS.items():
                self._solver_options.setdefault(name, {}).update(opts)
        self._grasp_force = check("grasp_force", cfg.grasp_force)
        if (self._grasp_force > 0.0 or cfg.grasp_hold) and self._object is None:
            raise ValueError("grasp_force/grasp_hold: need an object (object_urdf)")
        self._grasp_hold = bool(cfg.grasp_hold)
        self._object_q = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
        self._object_v = np.zeros(6)
        self._t_object = -math.inf if self._object is not None else math.inf
        #: configured index of the joint that moves each contact link (grasp_hold)
        self._link_joint: dict[str, int] = {}
        #: grasp_hold: joint index -> its position [rad or m] when its link started touching
        self._grip_positions: dict[int, float] = {}
        for ln in self._contact_links:
            body = model.link_frame(ln)[0] - (1 if self.floating_base else 0)
            if body >= 0 and model_joints[body] in self._joint_index:
                self._link_joint[ln] = self._joint_index[model_joints[body]]
        has_object = self._object is not None
        self._stance_noise = _stance_settings(cfg, self.floating_base, has_object)
        self.load_warnings += _ramp_warnings(cfg)
        self._base_source = _base_settings(cfg, self.floating_base, has_object)
        #: base_state "imu": the base estimator (built with the contact model) and the IMU input
        self._estimator: Any = None
        #: the estimator's stance mask and the schedule it was computed for
        self._estimator_stance = np.zeros(0, dtype=np.bool_)
        self._estimator_stance_of: Any = None
        #: the contact state filter (contact_state_filter), on the contact model once built
        self._stance: Any = None
        rate = per_joint("torque_rate_limit", cfg.torque_rate_limit, self.joint_names)
        #: largest torque change per tick [N m] (None: torque_rate_limit off)
        self._torque_step = rate * self.dt if np.any(rate > 0.0) else None
        if self._torque_step is not None:
            self._torque_step[rate == 0.0] = np.inf
        cutoff = check("torque_filter_cutoff", cfg.torque_filter_cutoff)
        #: the low-pass's weight of the new command per tick (1 = off)
        self._torque_alpha = 1.0 - math.exp(-2.0 * math.pi * cutoff * self.dt) if cutoff else 1.0
        self._shaping = self._torque_step is not None or self._torque_alpha < 1.0
        self._tau_prev = np.zeros(n)
        self._tau_prev_ok = False
        sigma_a = check("joint_observer_acceleration_noise", cfg.joint_observer_acceleration_noise)
        #: the joint-state observer (joint_observer_acceleration_noise > 0), None when off
        self._joint_observer: Any = None
        if sigma_a > 0.0:
            from .joint_observer import JointObserver

            self._joint_observer = JointObserver(
                n, self.dt, check("sensing_joint_position_noise",
                                  cfg.sensing_joint_position_noise),
                check("sensing_joint_velocity_noise", cfg.sensing_joint_velocity_noise), sigma_a)
        state_ticks = round(check("state_latency", cfg.state_latency) / self.dt)
        command_ticks = round(check("command_latency", cfg.command_latency) / self.dt)
        #: the reference's lead [s]: command_latency in whole control periods
        self._reference_lead = command_ticks * self.dt
        #: the latency compensation (state_latency + command_latency of a period or more)
        self._predictor: Any = None
        if state_ticks + command_ticks >= 1:
            from .joint_observer import JointStatePredictor

            self._predictor = JointStatePredictor(n, state_ticks + command_ticks, self.dt)
        #: the joint-state observer's prediction input: the acceleration that acted over the
        #: newest measurement's last period (the last tick's command without latency)
        self._observer_input = (self._qdd_cmd if self._predictor is None
                                else self._predictor.delayed)
        #: a joint state arrived since the observer last ran, and the arrival before it [s]
        self._state_new = False
        self._t_state_observed = -math.inf
        #: the base-pose observer (base_observer, base_state odom), None when off
        self._base_observer: Any = None
        if check("base_observer", cfg.base_observer) and self._base_source == "odom":
            if not self.floating_base:
                raise ValueError("base_observer: needs a floating base (floating_base: true)")
            from .base_observer import BaseObserver

            self._base_observer = BaseObserver(self.dt, *(check(nm, getattr(cfg, nm)) for nm in (
                f"sensing_base_{name}_noise" for name in (
                    "position", "orientation", "linear_velocity", "angular_velocity"))))
        #: a base state arrived since the base observer last ran, and the arrival before it [s]
        self._base_new = False
        self._t_base_observed = -math.inf
        #: hybrid drive command: configured gains, this tick's gains and set-points
        self._drive_kp = per_joint("drive_stiffness", cfg.drive_stiffness, self.joint_names)
        self._drive_kd = per_joint("drive_damping", cfg.drive_damping, self.joint_names)
        self._out.position_setpoint = np.zeros(n)
        self._out.velocity_setpoint = np.zeros(n)
        self._out.stiffness = np.zeros(n)
        self._out.damping = np.zeros(n)
        from .contact import SolverState

        self.solver_state = SolverState()
        self._qdd_model = np.zeros(n)
        n_act = n if self._act_model is None else self._act_model.shape[0]
        self._qdd_act = np.zeros(n_act)
        self._tau_model = np.zeros(n)
        self._has_act = self._act_model is not None
        self._bufs = _TickBuffers(
            qdd_ref=self._qdd_ref, q_ref=self._q_ref, qd_ref=self._qd_ref, qj=self._qj,
            qdj=self._qdj, qdd_cmd=self._qdd_cmd, cfg_to_model=self._cfg_to_model, q=self._q,
            v=self._v, qdd_model=self._qdd_model,
            act_model=np.zeros(0, dtype=np.int64) if self._act_model is None else self._act_model,
            qdd_act=self._qdd_act, tau=self._tau, tau_model=self._tau_model,
            tau_out=self._tau_out, position_setpoint=self._out.position_setpoint,
            velocity_setpoint=self._out.velocity_setpoint, stiffness=self._out.stiffness,
            damping=self._out.damping, drive_kp=self._drive_kp, drive_kd=self._drive_kd,
            task_position=self._zeros, task_velocity=self._zeros, tau_prev=self._tau_prev,
            torque_step=self._zeros if self._torque_step is None else self._torque_step,
            integral=self._integral)
        self._pack()
        # the entry points of the three per-tick kernels for exactly these types (the
        # dispatcher's typing per call is skipped: bound_entry); the arrays passed to them are
        # the packed buffers and gains and the (nu,) float64 torques of a compiled tick
        from .kernels.linalg import bound_entry

        self._prepare = bound_entry(_prepare_tick, (
            self._tick_args, _CMD_KEEP, False, False, self._off_q, self._off_v, self._has_act,
            self.dt, self._reference_lead))
        self._finish = bound_entry(_finish_tick, (self._tick_args, self._tau, False,
                                                  self._has_act))
        self._command = bound_entry(_command_tick, (
            self._tick_args, _DRIVE_OFF, False, False, False, False, 1.0, False, False))
        if self._predictor is not None:  # on the command and joint state buffers
            self._predictor.bind(self._qdd_cmd, self._qj, self._qdj)
        if self._joint_observer is not None:  # on the joint state buffers, every tick
            self._joint_observer.bind(self._qj, self._qdj, self._observer_input)
        if self._base_observer is not None:  # on fixed views of the base state, every tick
            self._base_pose, self._base_twist = self._q[0:7], self._v[0:6]
            self._base_observer.bind(self._base_pose, self._base_twist)
        self._free_dof = None  # bound below (_bind_free_dof), after the contact methods
        self._free_dof_bound = False
        self._warmed: set[str] = set()
        for method in dict.fromkeys([self._params["method"], *self._warm_methods]):
            if method != "none":
                report(f"compiling / loading the contact method {method}")
                self._ensure_contact_model(method)
        # after the contact methods: on a cold start the compile helper compiles it meanwhile
        # (wbc_dynamics.compile_helper, its last job), and this loads it -- unless this process
        # had nothing else to do while waiting for the helper's contact kernels and bound it
        # then (_warm_contact_method)
        if not self._free_dof_bound:
            helper = getattr(self, "_compile_helper", None)
            if helper is not None:
                helper.wait()
            self._bind_free_dof(report)

        self._build_task_layer(cfg, report)
        if self._tasks is not None and list(cfg.task_active) != [True]:
            self._apply(self.validate_parameters({"task_active": cfg.task_active}))
        #: the walking gait (``gait``), or None
        self._walker: Any = None
        if cfg.gait:
            from .gait import TrotWalker

            check("gait", cfg.gait)
            self._walker = TrotWalker(
                self, period=check("gait_period", cfg.gait_period) or None,
                step_height=check("gait_step_height", cfg.gait_step_height) or None,
                double_support=check("contact_unload_ramp", cfg.contact_unload_ramp))

        # statistics
        self.ticks = 0
        self.safe_ticks = 0
        #: safe ticks per mode (safe_stale_state, safe_stale_reference, ...), in the diagnostics
        self.safe_tick_counts: dict[str, int] = {}
        self.deadline_misses = 0
        self.warm_start_hits = 0
        # ticks per tuple of contact-solver flags (one dict update a tick, whatever the number
        # of flags): :attr:`solver_flag_counts` adds them up per flag
        self._flag_tuple_counts: dict[tuple[str, ...], int] = {}
        self.last_output: ControlOutput | None = None
        self._times = np.zeros(1024)
        self._times_n = 0

        report("warm-up tick of every code path")
        _warm_kernels()
        self._warm_up()
        report("ready")

    # ------------------------------------------------------------------ properties
    @property
    def config(self) -> ControllerConfig:
        """The configuration in force (runtime parameters reflect the latest accepted values)."""
        p = self._params
        return dataclasses.replace(
            self._cfg,
            method=p["method"],
            friction=p["friction"],
            safe_mode=p["safe_mode"],
            kp=p["kp"].tolist(),
            kd=p["kd"].tolist(),
            ki=p["ki"].tolist(),
            integral_limit=p["integral_limit"].tolist(),
            safe_damping=p["safe_damping"].tolist(),
            effort_limits=[0.0] if p["effort_limits_from_urdf"] else p["effort_limit"].tolist(),
            state_timeout=p["state_timeout"],
            reference_timeout=p["reference_timeout"],
            **({k: list(p[k]) if k == "task_active" else p[k].tolist()
                for k in ("task_kp", "task_kd", "task_weights", "task_active") if k in p}),
        )

    @property
    def state_timeout(self) -> float:
        """Maximum joint/base state age [s] in force."""
        return self._params["state_timeout"]

    @property
    def method(self) -> str:
        """Current inverse dynamics method."""
        return self._params["method"]

    @property
    def has_object(self) -> bool:
        """An object is configured (``object_urdf``): its state is an input."""
        return self._object is not None

    @property
    def object_body(self) -> Any:
        """The configured object (:class:`~wbc_dynamics.contact.geometry.FreeBody`: ``name``,
        ``model`` -- its parsed URDF --, ``half_extents`` [m], ``mu``) or None: a simulator
        builds its object from this one parse."""
        return self._object

    @property
    def warmed_methods(self) -> tuple[str, ...]:
        """Methods a runtime ``method`` switch can take without compiling ("none" always)."""
        return ("none", *(m for m in CONTACT_METHODS if m in self._warmed))

    @property
    def effort_limit(self) -> np.ndarray:
        """(n,) effort limits in force [N m / N] (inf = not clamped)."""
        return self._params["effort_limit"]

    @property
    def contact_links(self) -> list[str]:
        """Links considered for contact by the contact methods."""
        return list(self._contact_links)

    @property
    def contact_state(self) -> Any:
        """The contact state filter (:class:`~wbc_dynamics.contact.stance.StanceFilter`:
        ``stance_links``, ``decisions_changed``, ...) or None (``contact_state_filter`` off or
        no contact method built)."""
        return self._stance

    # ------------------------------------------------------------------ parameters
    def validate_parameters(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Validate runtime parameters without applying them.

        Args:
            values: subset of :data:`RUNTIME_PARAMETERS` with new values.
        Returns:
            normalized values (arrays broadcast to one per joint) for :meth:`set_parameters`.
        Raises:
            ValueError: naming the parameter (and joint) at fault; nothing is applied.
        """
        out: dict[str, Any] = {}
        joints = self.joint_names
        for key, val in values.items():
            if key not in RUNTIME_PARAMETERS:
                raise ValueError(f"{key}: not a runtime parameter (runtime: {RUNTIME_PARAMETERS})")
            if key in ("kp", "kd", "ki", "integral_limit", "safe_damping"):
                out[key] = per_joint(key, val, joints)
            elif key in ("friction", "method", "safe_mode", "state_timeout", "reference_timeout"):
                out[key] = check(key, val)
            elif key == "effort_limits":
                urdf = np.asarray(self.model.effort_limit, dtype=np.float64)[self._cfg_to_model]
                urdf = np.where(np.isfinite(urdf) & (urdf > 0.0), urdf, np.inf)
                vals = (
                    []
                    if val is None
                    else list(np.atleast_1d(np.asarray(val, dtype=np.float64)).reshape(-1))
                )
                if len(vals) == 0:
                    vals = [0.0]
                lim = per_joint("effort_limits", vals, joints)
                out["effort_limits_from_urdf"] = bool(np.all(lim == 0.0))
                out["effort_limit"] = np.where(lim > 0.0, lim, urdf)
            elif key == "task_active":
                if self._tasks is None:
                    raise ValueError("task_active: no tasks configured (task_names, gait)")
                names = self._tasks.task_names
                flags = list(np.atleast_1d(np.asarray(val, dtype=object)).reshape(-1))
                if not all(isinstance(x, bool | np.bool_) for x in flags):
                    raise ValueError(f"task_active: expected booleans, got {val!r}")
                if len(flags) == 1:
                    flags = flags * len(names)
                if len(flags) != len(names):
                    raise ValueError(f"task_active: expected one value per task ({len(names)}: "
                                     f"{names}) or one for all, got {len(flags)}")
                out[key] = [bool(x) for x in flags]
            elif key in ("task_kp", "task_kd", "task_weights"):
                if self._tasks is None:
                    raise ValueError(f"{key}: no tasks configured (task_names, gait)")
                names = self._tasks.task_names
                vals = [float(x) for x in np.atleast_1d(np.asarray(val, dtype=np.float64))]
                if len(vals) == 1:
                    vals = vals * len(names)
                if len(vals) != len(names):
                    raise ValueError(f"{key}: expected one value per task ({len(names)}: "
                                     f"{names}) or one for all, got {len(vals)}")
                spec = PARAMETERS[key]  # finite and > 0 (weights) or >= 0 (gains)
                for name, x in zip(names, vals, strict=True):
                    if not spec.accepts(x):
                        kind = "positive" if spec.exclusive_minimum else "non-negative"
                        raise ValueError(f"{key}: task {name!r}: expected a finite {kind} "
                                         f"value, got {x!r}")
                out[key] = np.array(vals)
        return out

    def set_parameters(self, values: Mapping[str, Any]) -> None:
        """Validate then apply runtime parameters (all or nothing); call between ticks.

        Changing ``method`` keeps each method's warm start; a contact method needs contact links.
        """
        norm = self.validate_parameters(values)
        if norm.get("method", "none") != "none":
            self._ensure_contact_model(norm["method"])
        friction_changed = "friction" in norm and norm["friction"] != self._params["friction"]
        self._apply(norm)
        if friction_changed and self._contact_model is not None:
            self._contact_model = self._build_contact_model()
            self._stance = self._stance_filter(self._contact_model)
            self._estimator = self._base_estimator(self._contact_model)
            if self._tasks is not None:  # its contacts on the new filter
                self._build_task_layer(self._cfg, lambda stage: None)

    def _apply(self, norm: Mapping[str, Any]) -> None:
        p = self._params
        for k, v in norm.items():
            # a fresh C-contiguous float64 (n,) array: the type the bound tick entries expect
            p[k] = np.array(v, dtype=np.float64) if isinstance(v, np.ndarray) else v
            if k.startswith("task_"):  # into the task layer's arrays (kp, kd, weight, active)
                field = {"task_kp": "kp", "task_kd": "kd", "task_weights": "weight",
                         "task_active": "active"}[k]
                getattr(self._tasks.data, field)[:] = v
        #: the per-joint arrays a tick reads, in _prepare_tick / _finish_tick's order
        self._gains = (p.get("kp"), p.get("kd"), p.get("safe_damping"), p.get("effort_limit"),
                       p.get("ki"), p.get("integral_limit"))
        if getattr(self, "_bufs", None) is not None:  # (after construction)
            self._pack()

    def _pack(self) -> None:
        """Pack the tick buffers and the gains for the per-tick kernels (again whenever a gain
        array is replaced, _apply, or the task layer is built, _build_task_layer)."""
        from .kernels.fixed_args import fixed_args

        self._tick_args = fixed_args(_StepArgs(self._bufs, *self._gains))

    # ------------------------------------------------------------------ inputs
    def set_joint_state(self, position: np.ndarray, velocity: np.ndarray, now: float) -> None:
        """Latest joint state in the configured joint order.

        Args:
            position: (n,) joint positions [rad / m]; velocity: (n,) [rad/s / m/s].
            now: arrival time on the controller's clock [s].
        Raises:
            ValueError: wrong length or a non-finite value (naming the joint); state unchanged.
        """
        self._check_vec("joint_state.position", position)
        self._check_vec("joint_state.velocity", velocity)
        self._qj[:] = position
        self._qdj[:] = velocity
        self._t_state = float(now)
        self._have_state = True
        self._state_new = True

    def set_object_state(
        self,
        position: np.ndarray,
        orientation_xyzw: np.ndarray,
        linear_velocity: np.ndarray,
        angular_velocity: np.ndarray,
        now: float,
    ) -> None:
        """Latest state of the configured object (``object_urdf``; ValueError without one).

        Args:
            position: (3,) object origin in world [m]. orientation_xyzw: (4,) unit quaternion
                world-from-object (normalized here if within 1e-3 of unit norm).
            linear_velocity, angular_velocity: (3,) object twist in the **object frame** [m/s,
                rad/s] (the nav_msgs/Odometry child-frame convention, as for the base).
            now: arrival time [s].
        """
        if self._object is None:
            raise ValueError("object_state: no object configured (object_urdf is empty)")
        _write_pose_twist("object_state", position, orientation_xyzw, linear_velocity,
                          angular_velocity, self._object_q, self._object_v)
        self._t_object = float(now)

    def set_base_state(
        self,
        position: np.ndarray,
        orientation_xyzw: np.ndarray,
        linear_velocity: np.ndarray,
        angular_velocity: np.ndarray,
        now: float,
    ) -> None:
        """Latest floating-base state (ignored error for a fixed base: raises ValueError).

        Args:
            position: (3,) base origin in world [m]. orientation_xyzw: (4,) unit quaternion
                world-from-base (normalized here if within 1e-3 of unit norm).
            linear_velocity, angular_velocity: (3,) base twist in the **base frame** [m/s, rad/s].
            now: arrival time [s].
        """
        if not self.floating_base:
            raise ValueError("base_state: the model has a fixed base (floating_base is false)")
        if self._base_source == "imu":
            raise ValueError("base_state: configured as 'imu' (estimated); no base state input")
        _write_pose_twist("base_state", position, orientation_xyzw, linear_velocity,
                          angular_velocity, self._q[0:7], self._v[0:6])
        self._t_base = float(now)
        self._base_new = True

    def set_imu(
        self,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        orientation_xyzw: np.ndarray | None,
        now: float,
    ) -> None:
        """Latest IMU sample (``base_state: imu``; ValueError otherwise). The IMU is taken at
        the base frame.

        Args:
            angular_velocity: (3,) [rad/s] base frame. linear_acceleration: (3,) [m/s^2]
                specific force (what an accelerometer measures: +9.81 up at rest), base frame.
            orientation_xyzw: (4,) world-from-base unit quaternion from the IMU's own
                estimator (normalized if within 1e-3 of unit norm); required with
                ``imu_orientation: true``, ignored otherwise (None allowed).
            now: the sample's time on the controller's clock [s] (the estimator integrates
                over the stamps' differences).
        Raises:
            ValueError: naming the field; the previous sample is kept.
        """
        if self._base_source != "imu":
            raise ValueError("imu: base_state is 'odom' (the IMU is used with base_state: imu)")
        self._estimator.set_imu(angular_velocity, linear_acceleration, orientation_xyzw, now)
        self._t_base = float(now)

    def set_reference(
        self,
        acceleration: np.ndarray,
        now: float,
        position: np.ndarray | None = None,
        velocity: np.ndarray | None = None,
    ) -> None:
        """Latest reference in the configured joint order.

        Args:
            acceleration: (n,) desired joint accelerations qdd_des [rad/s^2 / m/s^2].
            now: arrival time [s].
            position: optional (n,) q_des for the Kp term; velocity: optional (n,) qd_des (Kd).
        Raises:
            ValueError: wrong length or non-finite value (naming the field and joint).
        """
        self._check_vec("reference.accelerations", acceleration)
        if position is not None and len(position) > 0:
            self._check_vec("reference.positions", position)
        if velocity is not None and len(velocity) > 0:
            self._check_vec("reference.velocities", velocity)
        self._qdd_ref[:] = acceleration
        self._ref_pos = position is not None and len(position) > 0
        self._ref_vel = velocity is not None and len(velocity) > 0
        if self._ref_pos:
            self._q_ref[:] = position
        if self._ref_vel:
            self._qd_ref[:] = velocity
        self._t_ref = float(now)

    def clear_reference(self) -> None:
        """Forget the reference (the next tick is a ``safe_stale_reference`` tick)."""
        self._t_ref = -math.inf

    def _check_vec(self, name: str, x: np.ndarray) -> None:
        a = np.asarray(x, dtype=np.float64)
        if a.ndim != 1 or a.shape[0] != self.n:
            raise ValueError(
                f"{name}: expected {self.n} values (configured joints), got "
                f"{a.shape[0] if a.ndim == 1 else a.shape}"
            )
        if not check_vector(a):
            bad = int(np.flatnonzero(~np.isfinite(a))[0])
            raise ValueError(
                f"{name}: non-finite value {float(a[bad])!r} for joint '{self.joint_names[bad]}'"
            )

    # ------------------------------------------------------------------ ages
    def input_ages(self, now: float) -> dict[str, float]:
        """Age [s] of the latest joint state, base state and reference at ``now`` (inf = never)."""
        ages = {"joint_states": now - self._t_state, "reference": now - self._t_ref}
        if self.floating_base:
            ages["base"] = now - self._t_base
        if self._object is not None:
            ages["object"] = now - self._t_object
        return ages

    def state_fresh(self, now: float) -> bool:
        """True if joint (base, object) state are younger than ``state_timeout``."""
        to = self._params["state_timeout"]
        return ((now - self._t_state) <= to and (now - self._t_base) <= to
                and (now - self._t_object) <= to)

    def reference_fresh(self, now: float) -> bool:
        """True if the reference is younger than ``reference_timeout``."""
        return (now - self._t_ref) <= self._params["reference_timeout"]

    # ------------------------------------------------------------------ the tick
    def update(self, now: float) -> ControlOutput:
        """Run one control tick with the latest inputs at time ``now`` [s] (caller's clock).

        Never raises for bad numbers: failures give a flagged safe command.
        """
        t0 = time.perf_counter()
        if self._predictor is not None:  # the command of the tick that ended
            self._predictor.push(self._qdd_cmd)
        if self._state_new and (self._joint_observer is not None
                                or self._predictor is not None):
            self._observe_joints()
        if self._base_observer is not None and self._base_new:
            self._observe_base()
        if not self.state_fresh(now):
            out = self._zero_output(MODE_STALE_STATE)
        elif self._tasks is not None or self.reference_fresh(now):
            if self._walker is not None:  # this tick's schedule and goals
                self._walker.update(now)
            if self._tasks is not None:  # the clock goal trajectories are sampled at
                self._tasks.data.clock[0] = now
            if self._tasks is not None and self._t_ref == -math.inf and not self._tasks_held:
                self._hold_posture()
            out = self._inverse_dynamics(MODE_CONTROL, _CMD_PD)
        elif self._params["safe_mode"] == "damping":
            out = self._inverse_dynamics(MODE_STALE_REFERENCE, _CMD_DAMP)
        else:
            out = self._zero_output(MODE_STALE_REFERENCE)
        if out.mode != MODE_CONTROL:  # the integral belongs to the reference it followed
            self._integral[:] = 0.0
        self._command_step(out.mode)
        dtc = time.perf_counter() - t0
        out.compute_time = dtc
        self._record(out, dtc)
        return out

    def _observe_joints(self) -> None:
        """The joint-state observer's tick on the newest joint state: predicted with the
        accelerations commanded over the time between the two states, corrected with the
        encoders; then the latency compensation carries it forward through the commands the
        measurement does not show yet. The result replaces the measurement the tick uses."""
        obs = self._joint_observer
        if obs is not None:
            dt = self._t_state - self._t_state_observed
            if not 0.0 < dt <= 10.0 * self.dt:  # the first state, or after a gap: start afresh
                obs.reset()
                dt = self.dt
            obs.update(self._qj, self._qdj, self._observer_input, dt)
            self._qj[:] = obs.position
            self._qdj[:] = obs.velocity
        if self._predictor is not None:
            self._predictor.predict(self._qj, self._qdj)
        self._t_state_observed = self._t_state
        self._state_new = False

    def _observe_base(self) -> None:
        """The base-pose observer's tick on the newest base state: predicted with its twist
        over the time between the two states, corrected with its pose; the estimate replaces
        the received pose the tick uses."""
        obs = self._base_observer
        dt = self._t_base - self._t_base_observed
        if not 0.0 < dt <= 10.0 * self.dt:  # the first state, or after a gap: start afresh
            obs.reset()
            dt = self.dt
        obs.update(self._base_pose, self._base_twist, dt)
        self._t_base_observed = self._t_base
        self._base_new = False

    def _command_step(self, mode: str) -> None:
        """The hybrid drive command's set-points and gains of this tick (ControlOutput), then
        ``torque_filter_cutoff`` and ``torque_rate_limit`` on a control tick's torques from the
        previous tick's (in place; both keep the torques within the effort limits): one
        compiled call (:func:`~wbc_dynamics.tick_steps._command_tick`)."""
        if mode == MODE_CONTROL:
            drive = _DRIVE_TASKS if self._tasks is not None else _DRIVE_REFERENCE
        elif mode == MODE_STALE_REFERENCE and self._params["safe_mode"] != "zero":
            drive = _DRIVE_HOLD
        else:  # stale state, non-finite, the zero safe mode
            drive = _DRIVE_OFF
        shaping = self._shaping
        self._command(self._tick_args, drive, self._ref_pos, self._ref_vel,
                      shaping and mode == MODE_CONTROL and self._tau_prev_ok,
                      self._torque_alpha < 1.0, self._torque_alpha,
                      self._torque_step is not None, shaping)
        if shaping:
            self._tau_prev_ok = True

    def compute(
        self,
        q: np.ndarray,
        qd: np.ndarray,
        qdd_cmd: np.ndarray,
        base: Sequence[np.ndarray] | None = None,
    ) -> np.ndarray:
        """Inverse dynamics torques for an explicit state (no staleness logic, no PD).

        Args:
            q, qd, qdd_cmd: (n,) in the configured joint order.
            base: floating base only: (position (3,), quaternion xyzw (4,), linear velocity (3,),
                angular velocity (3,)), twist in the base frame.
        Returns:
            (n,) clamped torques (a copy). Raises ValueError for invalid inputs.
        """
        self._check_vec("q", q)
        self._check_vec("qd", qd)
        self._check_vec("qdd_cmd", qdd_cmd)
        if self.floating_base:
            if base is None:
                raise ValueError("base: required for a floating-base model")
            self.set_base_state(*base, now=self._t_base)
            self._base_new = False  # an explicit state, not a measurement to filter
        self._qj[:] = q
        self._qdj[:] = qd
        self._qdd_cmd[:] = qdd_cmd
        out = self._inverse_dynamics(MODE_CONTROL)
        return out.tau.copy()

    def _fresh_output(self, mode: str) -> ControlOutput:
        """The controller's single ControlOutput, reset for a new tick (no per-tick object)."""
        out = self._out
        out.mode = mode
        out.clamped = 0
        out.contact_ids = ()
        out.contact_points = self._no_contacts
        out.contact_forces = self._no_contacts
        out.contact_normals = self._no_contacts
        out.solver_flags = ()
        out.warm_start_used = False
        out.compute_time = 0.0
        return out

    def _zero_output(self, mode: str) -> ControlOutput:
        self._tau_out[:] = 0.0
        self._qdd_cmd[:] = 0.0
        return self._fresh_output(mode)

    def _prepare_step(self, command: int) -> None:
        """The commanded accelerations (``command``: _CMD_PD, _CMD_DAMP or _CMD_KEEP) and the
        state and accelerations in the model's order (:func:`_prepare_tick`)."""
        self._prepare(self._tick_args, command, self._ref_pos, self._ref_vel, self._off_q,
                      self._off_v, self._has_act, self.dt, self._reference_lead)

    def _inverse_dynamics(self, mode: str, command: int = _CMD_KEEP) -> ControlOutput:
        """tau for the commanded accelerations at the current state (see module docstring,
        steps 2 to 4; ``command`` as :meth:`_prepare_step`)."""
        self._prepare_step(command)
        out = self._fresh_output(mode)
        method = self._params["method"]
        tau_act = None
        try:
            if method != "none":
                if self._estimator is not None:  # base_state: imu
                    self._estimate_base()
                if self._stance is not None:  # the filtered contact state and its state
                    # (force evidence: the observer on this state and the last command)
                    self._stance.update(self._q, self._v, self._applied_torque())
            if self._tasks is not None and mode == MODE_CONTROL:
                self._task_step()
            if method == "none" and self._free_dof is not None:
                if self._free_dof(self._free_dof_args) != _KERNEL_OK:
                    return self._zero_output(MODE_NONFINITE)
                tau_act = self._free_dof_bufs.tau_act
            elif method == "none" and not self.floating_base and self._act_model is None:
                # a model without the core's flat arrays (MimicModel): RNEA from Python
                tau_full = self.model.rnea(self._q, self._v, self._qdd_model)
                _gather(tau_full, self._cfg_to_model, 0, self._tau)
            elif method == "none":
                self._free_base_id_python()
            else:
                tau_act = self._contact_id(method, out, hold=mode == MODE_CONTROL)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError, ArithmeticError):
            return self._zero_output(MODE_NONFINITE)
        if tau_act is None:  # self._tau holds the torques already
            clamped, finite = self._finish(self._tick_args, self._tau, False, self._has_act)
        else:
            clamped, finite = self._finish(self._tick_args, tau_act, True, self._has_act)
        if not finite:
            return self._zero_output(MODE_NONFINITE)
        out.clamped = int(clamped)
        return out

    def _bind_free_dof(self, report: Callable[[str], None]) -> None:
        """Bind the compiled ``method: none`` tick
        (:func:`~wbc_dynamics.kernels.free_dof.free_dof_inverse_dynamics`: with unactuated DoFs
        -- floating base, passive joints -- those accelerate freely; without, plain RNEA) on
        buffers and a workspace of the controller's own, compiling or loading it now (start-up)
        for exactly the types a tick passes. Leaves ``self._free_dof`` None for a model without
        the core's flat arrays, such as :class:`~wbc_dynamics.mimic.MimicModel` (its coupling
        is not a kinematic tree), which takes RNEA / :meth:`_free_base_id_python` from Python
        instead."""
        self._free_dof = None
        self._free_dof_bound = True
        if getattr(self.model, "model_arrays", None) is None:
            return
        report("compiling / loading the method none tick")
        from .kernels.free_dof import bind_free_dof

        if self._act_model is None:
            actuated, qdd = np.arange(self.n), self._qdd_model
        else:
            actuated, qdd = self._act_model, self._qdd_act
        # q, v and qdd by reference: _prepare_tick writes them in place every tick
        self._free_dof, self._free_dof_args, self._free_dof_bufs = bind_free_dof(
            self.model, self._q, self._v, qdd, self._off_v + actuated)

    def _free_base_id_python(self) -> None:
        """The fallback of a model without the compiled tick (:meth:`_bind_free_dof`), in
        Python per tick: no contacts, unactuated DoFs (floating base, passive joints)
        accelerating freely: tau_A = Y^-1 (qdd_A + P_A M^-1 h), Y = P_A M^-1 P_A^T, P_A
        selecting the actuated joints (Zapolsky & Drumwright, eqs. (37)-(39) with zero contact
        impulses; the compiled tick solves the same equations block-wise, see
        ``wbc_dynamics.kernels.free_dof``)."""
        m = self.model
        Minv = m.minverse(self._q)
        h = m.nonlinear_effects(self._q, self._v)
        ov = self._off_v
        self._a[ov:] = self._qdd_model
        if self._act_model is None:
            Y = Minv[ov:, ov:]
            rhs = Minv[ov:, :] @ h + self._a[ov:]
        else:
            A = ov + self._act_model
            Y = Minv[np.ix_(A, A)]
            rhs = Minv[A, :] @ h + self._a[A]
        L = np.linalg.cholesky(Y)
        tau_act = np.linalg.solve(L.T, np.linalg.solve(L, rhs))
        self._gather_actuated(tau_act)

    def _gather_actuated(self, tau_act: np.ndarray) -> None:
        """Actuated torques (model order of the actuated joints) -> self._tau (configured
        order), 0 on passive joints."""
        if self._act_model is None:
            _gather(tau_act, self._cfg_to_model, 0, self._tau)
            return
        self._tau_model[:] = 0.0
        np.put(self._tau_model, self._act_model, tau_act)
        _gather(self._tau_model, self._cfg_to_model, 0, self._tau)

    # ------------------------------------------------------------------ contacts
    def _ensure_contact_model(self, method: str | None = None) -> None:
        if method is not None and method != "none":
            _check_method_available(method)
        if self._contact_model is not None:
            if method is not None and method not in self._warmed:
                self._warm_contact_method(method)
                self._warmed.add(method)
            return
        if not self._contact_links:
            raise ValueError(
                "contact_links: a contact method needs at least one contact link (or set robot "
                "to a bundled robot name to use its contact links)"
            )
        link_names = list(getattr(self.model, "link_names", []))
        for ln in self._contact_links:
            if link_names and ln not in link_names:
                raise ValueError(f"contact_links: link '{ln}' is not a link of the model")
        self._contact_model = self._build_contact_model()
        self._stance = self._stance_filter(self._contact_model)
        self._estimator = self._base_estimator(self._contact_model)
        if self._tasks is not None:  # a floating base's first contact model
            self._build_task_layer(self._cfg, lambda stage: None)
        if method is not None and method != "none" and method not in self._warmed:
            self._warm_contact_method(method)
            self._warmed.add(method)

    def _base_estimator(self, cm: Any) -> Any:
        """The IMU-fed base estimator on the contact model's feet (``base_state: imu``: an
        :class:`~wbc_dynamics.estimator.ImuEstimator`) or None."""
        if self._base_source != "imu":
            return None
        from .estimator import ImuEstimator

        return ImuEstimator.from_config(cm, self._cfg)

    def _estimate_base(self) -> None:
        """``base_state: imu``: one estimator step on the latest IMU sample (if a new one
        arrived) and the joint state in ``self._q`` / ``self._v``; the estimate becomes the
        base part of ``self._q`` / ``self._v``. The feet anchoring it: every contact link the
        gait schedule does not hold in swing (the contact state filter's decisions depend on
        the estimate: fed back, a drifting estimate loses its anchors)."""
        self._estimator.step(self._q[7:], self._v[6:], self._estimator_swing_free())
        est = self._estimator.estimator
        if est.initialized:
            e = est.data
            self._q[0:3] = e.x[0:3]
            self._q[3:7] = e.quat
            self._v[0:3] = e.v_base
            self._v[3:6] = e.omega

    def _estimator_swing_free(self) -> np.ndarray:
        """Per foot of the estimator: not held in swing by the gait schedule (recomputed only
        when the schedule changes)."""
        if self._estimator_stance_of != self._swing_links:
            feet = self._estimator.feet
            self._estimator_stance = np.array([ln not in self._swing_links for ln in feet],
                                              dtype=np.bool_)
            self._estimator_stance_of = self._swing_links
        return self._estimator_stance

    @property
    def base_estimator(self) -> Any:
        """``base_state: imu``: the :class:`~wbc_dynamics.estimator.BaseEstimator` (its
        ``base_state()``, ``covariance()``, ``foot_positions()``), else None."""
        return None if self._estimator is None else self._estimator.estimator

    def _stance_filter(self, cm: Any) -> Any:
        """The contact state filter on the contact model ``cm`` (None when off); it takes the
        gait schedule over from the model's ``excluded_links``."""
        if self._stance_noise is None:
            return None
        from .contact.stance import StanceFilter

        gain = float(self._cfg.contact_force_observer_gain)
        observer = None
        if gain > 0.0:
            from .contact.momentum_observer import MomentumObserver

            nz = self._stance_noise
            std = np.full(self.model.nv, nz.joint_velocity)
            std[0:3], std[3:6] = nz.base_linear_velocity, nz.base_angular_velocity
            observer = MomentumObserver(cm, gain, std, self._off_v + self._cfg_to_model)
        cfg = self._cfg
        f = StanceFilter(cm, self._stance_noise, dwell=float(cfg.contact_dwell),
                         observer=observer, force_threshold=float(cfg.contact_force_threshold),
                         load_ramp=float(cfg.contact_load_ramp),
                         unload_ramp=float(cfg.contact_unload_ramp),
                         max_weight=float(cfg.contact_ramp_max_weight))
        cm.excluded_links = frozenset()
        f.set_swing(self._swing_links)
        f.bind(self._q, self._v)  # the controller's state buffers, every tick
        return f

    def _applied_torque(self) -> np.ndarray | None:
        """What the drives apply now for the last tick's command [N m or N] (configured
        order): its torques plus the hybrid drive's impedance at the measured joint state,
        ``tau + stiffness (position_setpoint - q) + damping (velocity_setpoint - qd)``; the
        momentum observer's input (None without one)."""
        if self._stance is None or self._stance.observer is None:
            return None
        out, t = self._out, self._tau_applied
        np.subtract(out.position_setpoint, self._qj, out=t)
        t *= out.stiffness
        t += self._tau_out
        np.subtract(out.velocity_setpoint, self._qdj, out=self._tau_scratch)
        self._tau_scratch *= out.damping
        t += self._tau_scratch
        return t

    def _build_contact_model(self, margin: float | None = None) -> Any:
        """ContactModel (Zapolsky & Drumwright, Sec. 3.3) of the contact links against the ground
        plane."""
        from .contact.geometry import ContactModel, HalfSpace

        cfg = self._cfg
        ground = HalfSpace.ground(height=float(cfg.ground_height), mu=self._params["friction"])
        cm = ContactModel(
            self.model, contact_links=self._contact_links, features=[ground],
            bodies=[] if self._object is None else [self._object],
            margin=float(cfg.contact_margin if margin is None else margin), dt=self.dt,
            friction_edges=int(cfg.friction_edges), phi_deadband=float(cfg.phi_deadband),
            passive_impact=bool(cfg.passive_impact),
            separation_tolerance=float(cfg.separation_tolerance),
            points=self._contact_points or None,
            actuated_joints=None if self._act_model is None else
            [self.model.joint_names[i] for i in self._act_model],
        )
        cm.excluded_links = self._swing_links
        #: the compiled ticks on this model, by (method, options) (see _compiled_tick)
        cm.compiled_ticks = {}
        return cm

    def _compiled_tick(self, cm: Any, method: str) -> Any:
        """The method's whole-tick compiled call on ``cm`` for the options in force -- the
        configuration's, over ``solver_state.options`` as ``solve`` merges them -- or None if
        the method or an option has no compiled tick (the general path then runs)."""
        if self._object is not None:
            return None  # the fused tick has no free-body rows: the general path
        ticks = cm.compiled_ticks
        extra = self.solver_state.options.get(method)
        if not extra and method in ticks:  # the configuration's options (every tick)
            return ticks[method]
        from .contact.tick import compiled_tick

        opts = self._solver_options.get(method, {})
        key = method
        if extra:
            opts = {**extra, **opts}
            key = (method, tuple(sorted(opts.items())))
        if key not in ticks:
            ticks[key] = compiled_tick(cm, method, opts)
        return ticks[key]

    def _contact_id(self, method: str, out: ControlOutput, model: Any = None,
                    hold: bool = False) -> np.ndarray | None:
        """Contact-aware inverse dynamics of the commanded accelerations (model
        order, ``self._qdd_model`` / ``self._qdd_act``: :meth:`_prepare_step` first); fills
        out's contact data. ``hold``: apply ``grasp_hold`` (control ticks only, not the safe
        commands). Returns the actuated torques for :func:`_finish_tick` to gather, or None if
        they are in ``self._tau`` already."""
        cm = self._contact_model if model is None else model
        qdd = self._qdd_model if self._act_model is None else self._qdd_act
        fused = self._compiled_tick(cm, method)
        if fused is not None:
            # the whole tick in one compiled call; the general path below only for its rare
            # cases (no contact, pivot limit, failed correction: documented fallbacks)
            mstate = self.solver_state.get(method) if self._cfg.warm_start else None
            if fused.run(self._q, self._v, qdd, mstate):
                if mstate is not None:
                    self.solver_state.ticks += 1
                out.contact_ids = fused.contact_ids()
                out.contact_points, out.contact_forces, out.contact_normals = \
                    fused.contact_views()
                out.solver_flags = fused.flags
                out.warm_start_used = fused.warm_start_used
                return fused.out.tau
            fused.export_warm(mstate)
        from .contact import solve

        body = ((), ()) if self._object is None else ([self._object_q], [self._object_v])
        prob = cm.build(self._q, self._v, qdd, *body)
        if hold and self._grasp_hold and self._hold_touching(prob):
            # only the desired accelerations change (the rest of the problem does not depend
            # on them): rewrite them in the same buffer instead of assembling again
            self._prepare_step(_CMD_KEEP)
            prob.qdd_des = qdd
        state = self.solver_state if self._cfg.warm_start else None
        res = solve(method, prob, state, **self._solver_options.get(method, {}))
        tau, forces, flags = res.tau, res.contact_forces_world, tuple(res.stats.flags)
        if self._grasp_force > 0.0 and prob.nc >= 2:
            from .contact.grasp import internal_force_torques, internal_grasp_forces

            f_int = internal_grasp_forces(prob, self._grasp_force, GRASP_TOUCH_DISTANCE)
            if f_int is not None:
                tau = tau - internal_force_torques(prob, f_int)
                forces = forces + np.einsum("cij,cj->ci", prob.frames, f_int)
                flags = (*flags, "grasp_force")
        self._gather_actuated(tau)
        out.contact_ids = res.contact_ids
        out.contact_points = prob.points if prob.points is not None else np.zeros((0, 3))
        out.contact_forces = forces
        out.contact_normals = (prob.frames[:, :, 0] if prob.frames is not None
                               else self._no_contacts)
        out.solver_flags = flags
        out.warm_start_used = bool(res.stats.warm_start_used)
        return None

    def _hold_touching(self, prob: Any) -> bool:
        """grasp_hold: a joint moving a contact link that touches the object keeps the position
        at which it started touching, ``qdd = qdd_ref + kp (q_grip - q) - kd qd`` (Sec. 7.2.2:
        zero velocity while gripping, no pull towards a reference inside the object). Why the
        grip position rather than no position feedback at all: two opposing fingers held by
        damping alone drift together with the object (a motion no contact resists), the
        panda's pair 2 cm in 3 s of the sinusoid, up to a finger's joint limit. True if any
        joint is held."""
        kp, kd = self._params["kp"], self._params["kd"]
        touching = {self._link_joint[link]
                    for (link, _, feature), phi in zip(prob.contact_ids, prob.phi, strict=True)
                    if link in self._link_joint and feature == self._object.name
                    and phi <= GRASP_TOUCH_DISTANCE}
        grip = self._grip_positions
        for i in [i for i in grip if i not in touching]:  # let go: latch again at the next touch
            del grip[i]
        for i in touching:
            q_grip = grip.setdefault(i, float(self._qj[i]))
            self._qdd_cmd[i] = (self._qdd_ref[i] + kp[i] * (q_grip - self._qj[i])
                                - kd[i] * self._qdj[i])
        return bool(touching)

    def _warm_contact_method(self, method: str) -> None:
        """Compile every kernel of the method (its option paths included), then run it once on
        every contact sphere (huge margin) so the controller's own types are compiled too."""
        from .contact import warmup as contact_warmup

        helper = getattr(self, "_compile_helper", None)
        if helper is not None and method in helper.methods:  # load what it compiled
            tick = self._compiled_tick(self._contact_model, method)
            if tick is not None:  # meanwhile: the part of the fused tick the helper cannot do
                tick.compile_assembly()
            if not self._free_dof_bound and not helper.contact_ready():
                # it is still at the contact kernels: method none's tick, its last job, here
                # instead of waiting idle (it is stopped once this start-up has what it needs)
                self._bind_free_dof(self._startup_report)
            helper.wait(contact_only=True)  # (it goes on with method none's tick)
        contact_warmup([method])
        probe = self._build_contact_model(margin=1e3)
        saved = (self._q.copy(), self._v.copy(), self._qj.copy(), self._qdj.copy())
        try:
            q0 = np.asarray(self.model.neutral(), dtype=np.float64)
            self._q[:] = q0
            self._v[:] = 0.0
            _gather(q0, self._cfg_to_model, self._off_q, self._qj)
            self._qdj[:] = 0.0
            self._qdd_cmd[:] = 0.0
            self._prepare_step(_CMD_KEEP)
            from .contact import SolverState

            st, self.solver_state = self.solver_state, SolverState()
            try:
                for _ in range(2):  # cold, then warm-started
                    self._contact_id(method, ControlOutput(tau=self._tau_out), model=probe)
            finally:
                self.solver_state = st
        finally:
            self._q[:], self._v[:], self._qj[:], self._qdj[:] = saved

    # ------------------------------------------------------------------ task layer
    def _build_task_layer(self, cfg: ControllerConfig, report: Callable[[str], None]) -> None:
        """The task layer of ``task_names`` (None without tasks): its stance contacts are the
        contact links' points (floating base, contact methods), in the contact state filter's
        link order when there is one. Built again when the contact model is (goals, gains and
        activation carried over)."""
        from .tasks import TASK_PARAMETERS, TaskLayer, task_layer_tick, tasks_from_parameters

        values = {k: getattr(cfg, k) for k in TASK_PARAMETERS}
        if cfg.gait and not cfg.task_names:  # the walking tasks
            from .gait import walking_tasks

            if not (self.floating_base and self._contact_model is not None):
                raise ValueError("gait: needs a floating base and a contact method")
            values = walking_tasks(self.model.root_link,
                                   [(ln, (0.0, 0.0, 0.0)) for ln in self._contact_links])
        specs = tasks_from_parameters(values)
        if not specs:
            return
        if self._act_model is not None:
            raise ValueError("task_names: tasks with passive_joints are not supported (the "
                             "task layer commands every joint)")
        if not hasattr(self.model, "model_arrays"):
            raise ValueError("task_names: tasks need the core's RobotModel (not a MimicModel)")
        contacts: list[tuple[str, list]] = []
        cm = self._contact_model
        if self.floating_base and cm is not None:
            points: dict[str, list] = {}
            for pt in cm.contact_points:
                points.setdefault(pt.link, []).append(np.asarray(pt.center, dtype=float))
            order = self._stance.links if self._stance is not None else list(points)
            contacts = [(ln, points[ln]) for ln in order if ln in points]
        report("compiling / loading the task layer")
        # a gait moves its support by stepping (capture-point foot placement): the CoM command's
        # centre-of-pressure limit is for standing on the feet it has
        layer = TaskLayer(self.model, specs, contacts=contacts,
                          cop_margin=-1.0 if cfg.gait else 0.01)
        old = self._tasks
        if old is not None:
            for name in ("goal_position", "goal_rotation", "goal_velocity", "goal_acceleration",
                         "active", "kp", "kd", "weight"):
                getattr(layer.data, name)[:] = getattr(old.data, name)
            for ln in layer.contact_links:
                if ln in old.contact_links:
                    layer.set_contact_active(ln, old.data.link_active[
                        old.contact_links.index(ln)])
        # the contacts stand as the contact state filter decides (its array, shared), else as
        # the gait schedule says (set_contact_schedule)
        layer.bind_joints(self._cfg_to_model, self._qj, self._qdj, self._qdd_model,
                          self._qdd_cmd, self.dt, TASK_POSITION_LEAK, TASK_VELOCITY_LEAK,
                          link_active=None if self._stance is None else self._stance.data.stance)
        self._tasks = layer
        # the command step reads its drive set-points: arrays of the type they replace, so the
        # entry points bound for the pack stay valid (another type would need binding again)
        from numba import typeof

        bufs = self._bufs._replace(task_position=layer.data.drive_position,
                                   task_velocity=layer.data.drive_velocity)
        if typeof(bufs) != typeof(self._bufs):
            raise TypeError("task layer: drive set-points of another array type")
        self._bufs = bufs
        self._pack()
        self._task_args = (self._q, self._v, self.model._model)
        from .kernels.linalg import bound_entry

        self._task_tick = bound_entry(task_layer_tick, (layer._record, *self._task_args))

    @property
    def tasks(self) -> Any:
        """The :class:`~wbc_dynamics.tasks.TaskLayer` (``task_names``), or None. Its goals,
        gains and activation may be changed between ticks (:meth:`set_task_goal`)."""
        return self._tasks

    @property
    def walker(self) -> Any:
        """The :class:`~wbc_dynamics.gait.TrotWalker` (``gait``), or None."""
        return self._walker

    def set_velocity_command(self, forward: float, left: float, yaw_rate: float) -> None:
        """The walking command (``gait``): [m/s] forward and left in the trunk's heading frame,
        [rad/s] about the vertical. Held until the next one. Raises ValueError without a gait
        or for a non-finite value."""
        if self._walker is None:
            raise ValueError("cmd_vel: no gait configured (gait)")
        self._walker.set_velocity(forward, left, yaw_rate)

    def set_task_goal(self, name: str, **goal: Any) -> None:
        """Set a task's goal (world axes; :meth:`~wbc_dynamics.tasks.TaskLayer.set_goal`'s
        keywords: position [m], orientation (x, y, z, w) or 3x3, linear / angular velocity and
        acceleration). Raises ValueError naming the task and field, or without tasks."""
        if self._tasks is None:
            raise ValueError("task goal: no tasks configured (task_names)")
        self._tasks.set_goal(name, **goal)
        self._task_goals_set.add(name)  # the first control tick holds only the others

    def set_task_trajectory(self, name: str, times: Any, start: float | None = None,
                            **knots: Any) -> None:
        """Give a frame / com task a goal trajectory (world axes;
        :meth:`~wbc_dynamics.tasks.TaskLayer.set_trajectory`): ``times`` (K,) [s] from
        ``start`` (the controller's clock, the ``now`` of :meth:`update`; None = the next
        tick), and the knots' ``positions`` [m], ``orientations`` (quaternions x, y, z, w or
        3x3), ``linear_velocities`` / ``angular_velocities`` [m/s, rad/s] (given: cubic Hermite
        segments; omitted: linear). A first knot after 0 is reached from where the goal is when
        the trajectory starts (before the first tick: where the task is then). Raises
        ValueError naming the task and field, or without tasks."""
        if self._tasks is None:
            raise ValueError("task trajectory: no tasks configured (task_names)")
        self._tasks.set_trajectory(name, times, start=start, **knots)

    def _hold_posture(self) -> None:
        """The posture task's reference with no joint reference yet: the measured joints, at
        rest."""
        self._q_ref[:] = self._qj
        self._qd_ref[:] = 0.0
        self._qdd_ref[:] = 0.0
        self._ref_pos = self._ref_vel = True

    def _task_step(self) -> None:
        """The task layer on this tick's state (after the estimator and the contact state
        filter): its joint accelerations replace the commanded ones. The first control tick
        holds every goal where it is. Raises FloatingPointError if it fails (a safe tick)."""
        from .tasks import TASKS_OK

        layer = self._tasks
        if not self._tasks_held:
            layer.hold(self._q, skip=self._task_goals_set)
            self._tasks_held = True
        # the drives' set-points: the commanded accelerations integrated, leaking towards the
        # measured state (their stiffness then holds the commanded motion against what the
        # inverse dynamics does not know -- model error, torque lag, late commands -- without
        # accumulating a conflict with the task feedback)
        if self._task_tick(layer._record, *self._task_args) != TASKS_OK:
            raise FloatingPointError("task layer: kinematics failed or a value is not finite")

    def reset_solver(self) -> None:
        """Forget the contact solver's warm start (every method); next tick is a cold start."""
        self.solver_state.reset()

    def set_contact_schedule(self, swing_links: Sequence[str] = (),
                             lift_off_in: Mapping[str, float] | None = None) -> None:
        """The gait's contact schedule: links in swing are not contact candidates.

        Their spheres are left out of the contact problem until the next call (Zapolsky &
        Drumwright, Sec. 7.6: the planner knows which feet are in stance), so a swing foot passing
        close to the ground is not held to it. Empty = every contact link is a candidate.

        ``lift_off_in`` announces releases: stance link -> time [s] until the schedule will put
        it in swing. With the contact state filter and ``contact_unload_ramp`` > 0 such a link
        is unloaded over the last ``contact_unload_ramp`` seconds before it (its load shifted to
        the other stance links where they can carry it) instead of in one tick; each call
        replaces the announcements. Raises ValueError naming links that are not contact links
        or a time that is not finite and >= 0.
        """
        links = frozenset(str(x) for x in swing_links)
        unknown = sorted((links | set(lift_off_in or ())) - set(self._contact_links))
        if unknown:
            raise ValueError(
                f"contact schedule: {unknown} are not contact links ({self._contact_links})"
            )
        self._swing_links = links
        if self._tasks is not None and self._stance is None:
            for ln in self._tasks.contact_links:
                self._tasks.set_contact_active(ln, ln not in links)
        if self._stance is not None:
            self._stance.set_swing(links, lift_off_in)
        elif self._contact_model is not None:
            self._contact_model.excluded_links = links

    # ------------------------------------------------------------------ safe command, stats
    def safe_command(self, now: float) -> ControlOutput:
        """The safe command for the current inputs as if the reference were stale.

        Zero torque if the state is stale; otherwise per ``safe_mode``. Used by the node when it
        stops (deactivate) and by its watchdog.
        """
        t_ref = self._t_ref
        self._t_ref = -math.inf
        try:
            return self.update(now)
        finally:
            self._t_ref = t_ref

    def reset(self) -> None:
        """Forget inputs, warm start and statistics (as after construction)."""
        self._t_state = -math.inf
        self._t_base = -math.inf if self.floating_base else math.inf
        self._t_object = -math.inf if self._object is not None else math.inf
        self._t_ref = -math.inf
        self._have_state = False
        self._ref_pos = self._ref_vel = False
        self._tasks_held = False
        if self._tasks is not None:
            self._tasks.reset_drive()
        self._task_goals_set.clear()
        self._grip_positions.clear()
        self._tau_prev_ok = False
        self._state_new = False
        self._t_state_observed = -math.inf
        if self._joint_observer is not None:
            self._joint_observer.reset()
        if self._predictor is not None:
            self._predictor.reset()
        self._integral[:] = 0.0
        self._base_new = False
        self._t_base_observed = -math.inf
        if self._base_observer is not None:
            self._base_observer.reset()
        if self._stance is not None:
            self._stance.reset()
        if self._estimator is not None:
            self._estimator.reset()
        self.reset_solver()
        self.ticks = self.safe_ticks = self.deadline_misses = self.warm_start_hits = 0
        self._flag_tuple_counts = {}
        self.safe_tick_counts = {}
        self._times_n = 0
        self.last_output = None

    def _record(self, out: ControlOutput, dtc: float) -> None:
        self.ticks += 1
        if out.safe:
            self.safe_ticks += 1
            self.safe_tick_counts[out.mode] = self.safe_tick_counts.get(out.mode, 0) + 1
        if dtc > self.dt:
            self.deadline_misses += 1
        if out.warm_start_used:
            self.warm_start_hits += 1
        flags = out.solver_flags
        if flags:
            counts = self._flag_tuple_counts
            counts[flags] = counts.get(flags, 0) + 1
        self._times[self._times_n % self._times.shape[0]] = dtc
        self._times_n += 1
        self.last_output = out

    @property
    def solver_flag_counts(self) -> dict[str, int]:
        """Ticks per contact-solver flag (``wbc_dynamics.contact.FLAGS``: fallback, min_norm,
        inconsistent_corrected, ...) since construction or :meth:`reset`; reported in the
        node's diagnostics."""
        counts: dict[str, int] = {}
        for flags, n in self._flag_tuple_counts.items():
            for flag in flags:
                counts[flag] = counts.get(flag, 0) + n
        return counts

    def timing_stats(self) -> dict[str, float]:
        """Compute-time statistics [s] over the last <= 1024 ticks: mean, p99, max, count."""
        k = min(self._times_n, self._times.shape[0])
        if k == 0:
            return {"mean": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
        t = self._times[:k]
        return {
            "mean": float(t.mean()),
            "p99": float(np.percentile(t, 99)),
            "max": float(t.max()),
            "count": k,
        }

    def _warm_up(self) -> None:
        """Run every code path once so nothing compiles inside the first real tick."""
        q0 = self._q[self._off_q :].copy()
        qj = np.empty(self.n)
        _gather(q0, self._cfg_to_model, 0, qj)
        base_saved = (self._q[:7].copy(), self._v[:6].copy()) if self.floating_base else None
        if self.floating_base:
            self._q[3:7] = (0.0, 0.0, 0.0, 1.0)
        self._qj[:] = qj
        self._qdj[:] = 0.0
        self._qdd_cmd[:] = 0.0
        if self._estimator is not None:  # an IMU sample at rest, so the estimator runs too
            self._estimator.set_imu(np.zeros(3), (0.0, 0.0, 9.81), (0.0, 0.0, 0.0, 1.0), 0.0)
        self._inverse_dynamics(MODE_CONTROL)
        if self._tasks is not None:  # the task step too (then forget the warm-up's goals)
            self._task_step()
            self._tasks_held = False
            self._tasks.reset_drive()
            self._task_goals_set.clear()
        if self._free_dof is not None:  # method none, always switchable to: run it once too
            self._free_dof(self._free_dof_args)
        if base_saved is not None:
            self._q[:7], self._v[:6] = base_saved
        if self._stance is not None:  # forget the warm-up's decisions
            self._stance.reset()
            self._stance.reset_counters()
        if self._estimator is not None:
            self._estimator.reset()
        if self._base_observer is not None:  # its kernel too, on a copy (then forget it)
            self._base_observer.update(self._q[0:7].copy(), self._v[0:6].copy())
            self._base_observer.reset()
        self._qdd_cmd[:] = 0.0
