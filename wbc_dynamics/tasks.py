"""Task-space goals: a prioritized task layer that turns them into desired accelerations.

One module for one compiled kernel family: the task rows, the trajectory sampler and the
support limit all work on the numba-typed ``TaskData`` record that :class:`TaskLayer`
builds and binds, and a kernel's cache entry and compile time depend on its module.

A *task* asks for an acceleration of something the robot can move -- a frame's pose (or its
position or orientation part), the centre of mass, the joint posture -- with PD feedback on its
error::

    x_ddot_cmd = x_ddot_goal + kd (x_dot_goal - x_dot) - kp e,      J a = x_ddot_cmd - J_dot v

(``e``: position error [m] and, for orientations, ``log(R R_goal^T)`` [rad], both in world
axes). Along the commanded accelerations the error obeys ``e_ddot + kd e_dot + kp e = 0``:
critically damped with ``kd = 2 sqrt(kp)``.

Tasks carry a ``priority`` (0 first) and a ``weight``: tasks of one priority are solved together
as a weighted least-squares problem, a lower priority only in the null space of the higher ones
(``wbc_dynamics.kernels.prioritized``), as in TSID's weighted tasks and the stack of tasks of
Mansard et al. ("A versatile generalized inverted kinematics implementation for collaborative
working humanoid robots: the stack of tasks", ICAR 2009). Above every task stand the floating
base's *stance contacts*: a standing link does not accelerate (``J_c a = -J_c_dot v``), so the
base's acceleration that the tasks ask for is the one the feet can give; which contacts stand
is the contact method's and the controller's business (:meth:`TaskLayer.set_contact_active`).

The joint part of the solution is what the contact-aware inverse dynamics consumes as its
desired accelerations (Zapolsky & Drumwright, "Inverse dynamics with rigid contact and friction",
Sec. 5). The joint-space reference is the ``posture`` task: its commanded accelerations are
the controller's PD command of the reference.

One compiled call per tick (:func:`task_layer_kernel`) computes every task's Jacobian, bias
acceleration and error from the model's kinematics and solves the hierarchy; nothing is
allocated. Everything here is ROS-free; the controller owns a :class:`TaskLayer` when its
configuration declares ``tasks`` (:class:`TaskSpec`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from .kernels.dynamics import (
    check_configuration,
    check_vector,
    forward_kinematics,
)
from .kernels.kinematics import body_velocities_and_bias, point_bias_filled
from .kernels.prioritized import (
    PrioritizedWork,
    prioritized_level,
    prioritized_reset,
    prioritized_selection_level,
    prioritized_work,
)
from .kernels.records import kernel_record, record_of
from .kernels.world import (
    _point_kinematics_views,
    frame_jacobian,
    frame_placement,
    workspace,
)

__all__ = [
    "TASKS_FAILED",
    "TASKS_OK",
    "TASK_KINDS",
    "FRAME_MODES",
    "TASK_PARAMETERS",
    "TaskLayer",
    "TaskSpec",
    "balance_tasks",
    "parse_tasks",
    "tasks_from_parameters",
    "task_layer_kernel",
    "task_layer_tick",
]

#: what a task controls
TASK_KINDS = ("frame", "com", "posture")
#: the rows of a frame task: the whole pose, its position or its orientation
FRAME_MODES = ("pose", "position", "orientation")
_KIND_FRAME, _KIND_COM, _KIND_POSTURE = 0, 1, 2

#: a typed zero for the compiled code's row counters: a literal 0 reaching a kernel's argument
#: would compile that kernel a second time, specialized on the constant
_ZERO = np.int64(0)

#: kernel status: solved / a value not finite or the rotations did not converge
TASKS_OK, TASKS_FAILED = 0, 1


@dataclass(frozen=True)
class TaskSpec:
    """One task of the layer (see the module docstring for the law it follows).

    Attributes:
        name: unique name (goals and runtime settings refer to it).
        kind: ``frame`` (a link's frame), ``com`` (centre of mass; floating base only) or
            ``posture`` (the joints follow the controller's joint-space reference).
        link: the frame task's link; ``point``: offset of the controlled point in the link
            frame [m].
        mode: frame task rows: ``pose`` (6), ``position`` (3) or ``orientation`` (3).
        kp: stiffness [1/s^2]; kd: damping [1/s] (critically damped: ``kd = 2 sqrt(kp)``).
            Ignored by ``posture``, whose PD is the controller's ``kp`` / ``kd``.
        weight: relative weight among the tasks of its priority (> 0).
        priority: 0 is solved first; larger numbers only in the null space of smaller ones.
    """

    name: str
    kind: str
    link: str = ""
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    mode: str = "pose"
    kp: float = 100.0
    kd: float = 20.0
    weight: float = 1.0
    priority: int = 0


_TASK_KEYS = {"name", "kind", "link", "point", "mode", "kp", "kd", "weight", "priority"}


def _number(field: str, value: Any, positive: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field}: expected a number, got {value!r}") from None
    if not math.isfinite(x) or x < 0.0 or (positive and x == 0.0):
        raise ValueError(f"{field}: expected a finite {'positive' if positive else 'non-negative'}"
                         f" number, got {value!r}")
    return x


def parse_tasks(entries: Iterable[Mapping[str, Any] | TaskSpec]) -> list[TaskSpec]:
    """Validated :class:`TaskSpec` list from mappings (the ``tasks`` list of a robot YAML) or
    specs. Raises ValueError naming the task and field."""
    specs: list[TaskSpec] = []
    names: set[str] = set()
    for k, e in enumerate(entries):
        if isinstance(e, TaskSpec):
            e = e.__dict__
        if not isinstance(e, Mapping):
            raise ValueError(f"tasks[{k}]: expected a mapping, got {type(e).__name__}")
        where = f"tasks[{k}]" + (f" ({e['name']!r})" if "name" in e else "")
        unknown = set(e) - _TASK_KEYS
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; known: "
                             f"{sorted(_TASK_KEYS)}")
        name = e.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}.name: expected a non-empty string")
        if name in names:
            raise ValueError(f"{where}.name: {name!r} is used twice")
        names.add(name)
        kind = e.get("kind")
        if kind not in TASK_KINDS:
            raise ValueError(f"{where}.kind: expected one of {TASK_KINDS}, got {kind!r}")
        link = e.get("link", "")
        mode = e.get("mode", "pose")
        if kind == "frame":
            if not isinstance(link, str) or not link:
                raise ValueError(f"{where}.link: a frame task needs a link")
            if mode not in FRAME_MODES:
                raise ValueError(f"{where}.mode: expected one of {FRAME_MODES}, got {mode!r}")
        point = e.get("point", (0.0, 0.0, 0.0))
        try:
            p = tuple(float(x) for x in point)
        except (TypeError, ValueError):
            p = ()
        if len(p) != 3 or not all(math.isfinite(x) for x in p):
            raise ValueError(f"{where}.point: expected 3 finite numbers [m], got {point!r}")
        priority = e.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
            raise ValueError(f"{where}.priority: expected an integer >= 0, got {priority!r}")
        specs.append(TaskSpec(
            name=name, kind=kind, link=link if kind == "frame" else "", point=p,
            mode=mode if kind == "frame" else ("position" if kind == "com" else "pose"),
            kp=_number(f"{where}.kp", e.get("kp", 100.0)),
            kd=_number(f"{where}.kd", e.get("kd", 20.0)),
            weight=_number(f"{where}.weight", e.get("weight", 1.0), positive=True),
            priority=priority))
    return specs


#: the flat (ROS parameter) form of the tasks: parameter -> TaskSpec field
TASK_PARAMETERS = {
    "task_names": "name", "task_kinds": "kind", "task_links": "link", "task_modes": "mode",
    "task_points": "point", "task_kp": "kp", "task_kd": "kd", "task_weights": "weight",
    "task_priorities": "priority",
}


def tasks_from_parameters(values: Mapping[str, Sequence[Any]]) -> list[TaskSpec]:
    """The tasks of the flat parameter form (:data:`TASK_PARAMETERS`: one entry per name in
    ``task_names``; ``task_kp``, ``task_kd``, ``task_weights``, ``task_priorities`` may give one
    value for all; ``task_links`` / ``task_modes`` may be empty when no task needs them;
    ``task_points`` 3 numbers per task or empty). Raises ValueError naming the parameter."""
    names = [str(x) for x in values.get("task_names", ())]
    T = len(names)
    entries: list[dict[str, Any]] = [{"name": nm} for nm in names]
    for param, key in TASK_PARAMETERS.items():
        if param == "task_names":
            continue
        vals = list(values.get(param, ()))
        if param == "task_points":
            if not vals:
                continue
            if len(vals) != 3 * T:
                raise ValueError(f"{param}: expected 3 numbers per task ({3 * T}), got "
                                 f"{len(vals)}")
            for k in range(T):
                entries[k][key] = vals[3 * k:3 * k + 3]
            continue
        if not vals:
            continue
        if len(vals) == 1 and param in ("task_kp", "task_kd", "task_weights",
                                        "task_priorities"):
            vals = vals * T
        if len(vals) != T:
            raise ValueError(f"{param}: expected one entry per task_names entry ({T}), got "
                             f"{len(vals)}")
        for k in range(T):
            if param in ("task_links", "task_modes") and vals[k] in ("", None):
                continue
            entries[k][key] = vals[k]
    return parse_tasks(entries)


def balance_tasks(trunk_link: str, kp: float = 100.0, kd: float = 20.0) -> dict[str, list]:
    """The flat parameters (:data:`TASK_PARAMETERS`) of standing balance for a floating base:
    the centre of mass and ``trunk_link``'s orientation at priority 0 (gains ``kp`` [1/s^2],
    ``kd`` [1/s]), the joint posture at priority 1."""
    return dict(task_names=["com", "trunk", "posture"], task_kinds=["com", "frame", "posture"],
                task_links=["", trunk_link, ""], task_modes=["", "orientation", ""],
                task_kp=[float(kp)], task_kd=[float(kd)], task_priorities=[0, 0, 1])


@kernel_record("TaskDataRecord")
class TaskData(NamedTuple):
    """The task layer's configuration, goals, outputs and workspace (one record per layer).

    Tasks (``T``, the order of :attr:`TaskLayer.task_names`): ``kind`` (T,) frame / com /
    posture code; ``level`` (T,) index of its priority among the layer's (0 first); ``body``
    (T,) the frame task's body; ``frame`` (T, 4, 3) its frame in the body (rows 0-2 rotation,
    row 3 origin [m]); ``row_first``, ``row_count`` (T,) the rows of its 6-vector it uses (0, 6
    pose; 0, 3 position; 3, 3 orientation; com 0, 3); ``active`` (T,) bool; ``kp`` [1/s^2],
    ``kd`` [1/s], ``weight`` (T,).

    Goals, world axes: ``goal_position`` (T, 3) [m], ``goal_rotation`` (T, 3, 3),
    ``goal_velocity`` (T, 6) [m/s; rad/s], ``goal_acceleration`` (T, 6) [m/s^2; rad/s^2];
    ``posture_acceleration`` (nv,) the posture task's commanded accelerations (v order; the base
    entries are not used).

    Goal trajectories (:meth:`TaskLayer.set_trajectory`; ``K`` knots at most per task):
    ``trajectory_count`` (T,) knots of the task's trajectory, 0 when none (the goal then holds);
    ``trajectory_start`` (T,) [s] its start on the layer's ``clock`` (1,) [s] (the controller
    writes its tick time there), NaN until the first tick that samples it; ``trajectory_time``
    (T, K) [s] each knot's time from the start; ``trajectory_position`` (T, K, 3) [m],
    ``trajectory_rotation`` (T, K, 3, 3), ``trajectory_velocity`` (T, K, 6) [m/s; rad/s], world
    axes; ``trajectory_hermite`` (T,) bool: cubic Hermite segments through the knots'
    velocities, else linear ones; ``trajectory_lead`` (T,) bool: knot 0 is to be the goal as
    it is when the trajectory starts (filled by the first sample).

    Stance contacts: ``P`` points on ``L`` links, grouped by the rigid body that carries them
    (``G`` groups): ``point_body`` (P,), ``point_frame`` (P, 4, 3) each point as a frame of its
    body, ``point_link`` (P,) its link's index, ``point_group`` (P,) its group's,
    ``point_used`` (P,) bool: a support point (:meth:`TaskLayer.hold` chooses them);
    ``group_body`` (G,), ``group_frame`` (G, 4, 3) a frame at the group's support centroid,
    ``group_area`` (G,) bool: it stands on an area; ``link_active`` (L,) bool: the link
    stands. An area group with three or more standing support points gives 6 rows (its body
    does not move), else each standing support point 3 (a point contact); ``group_active``
    (G,) is scratch.

    Outputs: ``acceleration`` (nv,) the solution (v order; base twist rate in the base frame
    first for a floating base); ``error`` (T, 6) position [m] and orientation [rad] errors,
    ``velocity_error`` (T, 6) [m/s; rad/s], world axes; ``level_rank`` (levels + 1,) rows each
    level added (contacts first), -1 where it failed.

    Settings: ``base_dofs`` (6 floating, 0 fixed), ``local_axes`` (False: Jacobians and biases
    in world-aligned axes; also the CoM's "no external force, no gravity" flags -- a field, not
    a constant, so the kinematics kernels keep one compiled signature), ``levels``,
    ``tolerance`` (relative rank tolerance), ``damping`` (singular-direction damping, task
    units); ``posture_level`` the last level when the posture task (index ``posture_task``)
    is alone on it (solved in closed form:
    :func:`~wbc_dynamics.kernels.prioritized.prioritized_selection_level`), else -1.

    A controller's joint buffers (:meth:`TaskLayer.bind_joints`; empty until bound), ``n``
    joints in the controller's configured order: ``joint_index`` (n,) each one's model joint
    index; ``joint_position``, ``joint_velocity`` (n,) measured [rad, rad/s];
    ``joint_acceleration_model`` (n,) commanded, model joint order (in: the posture task's; out:
    the layer's) and ``joint_acceleration`` (n,) the same, configured order [rad/s^2];
    ``drive_position``, ``drive_velocity`` (n,) the hybrid drive set-points, ``drive_ready`` (1,)
    whether they are started; ``dt`` [s] the control period, ``position_leak``,
    ``velocity_leak`` their pull towards the measured state per tick.

    Workspace: ``jac`` (6, nv), ``bias`` (6,), ``pose`` (4, 4), ``rot`` (3, 3),
    ``subtree_mass`` (nb,) [kg] and ``subtree_moment`` (nb, 3) [kg m] (the CoM task's subtree
    sums), ``W``, ``SC`` (the kinematics pass's),

    The CoM task's support limit (:func:`_clamp_to_support`): ``gravity`` [m/s^2] its
    magnitude (along -z), ``cop_margin`` [m] (negative: no limit), ``com_command`` (3,) the
    commanded CoM acceleration [m/s^2], ``com_cop`` (2,) [m] the centre of pressure it implies,
    ``com_cop_clamped`` (1,) whether the limit changed it this tick; workspace
    ``support_xy`` (P, 2), ``support_order`` (P,), ``support_hull`` (2 P + 1,),
    ``support_polygon`` (2 P + 1, 2). An area contact's stabilization (:func:`_flatten_stance`):
    ``stance_kp`` [1/s^2], ``stance_kd`` [1/s] (0, 0: the rigid contact's rows alone),
    ``group_height`` (G,) [m] each group's support height at :meth:`TaskLayer.hold`.
    and ``hierarchy`` (:class:`~wbc_dynamics.kernels.prioritized.PrioritizedWork` of nv
    unknowns and levels of m rows; its ``x`` is ``acceleration``, the same array); the
    closed-form posture level's
    ``selection_residual``, ``selection_step`` (nv,), ``selection_gram``,
    ``selection_factor`` (6, 6), ``selection_small`` (6,)."""

    kind: np.ndarray
    level: np.ndarray
    body: np.ndarray
    frame: np.ndarray
    row_first: np.ndarray
    row_count: np.ndarray
    active: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    weight: np.ndarray
    goal_position: np.ndarray
    goal_rotation: np.ndarray
    goal_velocity: np.ndarray
    goal_acceleration: np.ndarray
    trajectory_count: np.ndarray
    trajectory_start: np.ndarray
    trajectory_time: np.ndarray
    trajectory_position: np.ndarray
    trajectory_rotation: np.ndarray
    trajectory_velocity: np.ndarray
    trajectory_hermite: np.ndarray
    trajectory_lead: np.ndarray
    clock: np.ndarray
    posture_acceleration: np.ndarray
    point_body: np.ndarray
    point_frame: np.ndarray
    point_link: np.ndarray
    point_group: np.ndarray
    point_used: np.ndarray
    group_body: np.ndarray
    group_frame: np.ndarray
    group_area: np.ndarray
    group_height: np.ndarray
    group_active: np.ndarray
    link_active: np.ndarray
    acceleration: np.ndarray
    error: np.ndarray
    velocity_error: np.ndarray
    level_rank: np.ndarray
    base_dofs: int
    local_axes: bool
    levels: int
    posture_level: int
    posture_task: int
    tolerance: float
    damping: float
    joint_index: np.ndarray
    joint_position: np.ndarray
    joint_velocity: np.ndarray
    joint_acceleration_model: np.ndarray
    joint_acceleration: np.ndarray
    drive_position: np.ndarray
    drive_velocity: np.ndarray
    drive_ready: np.ndarray
    dt: float
    position_leak: float
    velocity_leak: float
    jac: np.ndarray
    bias: np.ndarray
    pose: np.ndarray
    rot: np.ndarray
    subtree_mass: np.ndarray
    subtree_moment: np.ndarray
    gravity: float
    cop_margin: float
    stance_kp: float
    stance_kd: float
    com_command: np.ndarray
    com_cop: np.ndarray
    com_cop_clamped: np.ndarray
    support_xy: np.ndarray
    support_order: np.ndarray
    support_hull: np.ndarray
    support_polygon: np.ndarray
    W: Any  # the recursions' data: a kernels.world.RigidBodyRecord
    SC: np.ndarray
    hierarchy: PrioritizedWork
    selection_residual: np.ndarray
    selection_step: np.ndarray
    selection_gram: np.ndarray
    selection_factor: np.ndarray
    selection_small: np.ndarray


@njit(cache=True, error_model="numpy", inline="always")
def _rotation_log(R, G, out, o):
    """out[o:o+3] = log(R G^T) [rad] (world axes): the rotation vector taking G to R."""
    m00 = R[0, 0] * G[0, 0] + R[0, 1] * G[0, 1] + R[0, 2] * G[0, 2]
    m11 = R[1, 0] * G[1, 0] + R[1, 1] * G[1, 1] + R[1, 2] * G[1, 2]
    m22 = R[2, 0] * G[2, 0] + R[2, 1] * G[2, 1] + R[2, 2] * G[2, 2]
    m21 = R[2, 0] * G[1, 0] + R[2, 1] * G[1, 1] + R[2, 2] * G[1, 2]
    m12 = R[1, 0] * G[2, 0] + R[1, 1] * G[2, 1] + R[1, 2] * G[2, 2]
    m02 = R[0, 0] * G[2, 0] + R[0, 1] * G[2, 1] + R[0, 2] * G[2, 2]
    m20 = R[2, 0] * G[0, 0] + R[2, 1] * G[0, 1] + R[2, 2] * G[0, 2]
    m10 = R[1, 0] * G[0, 0] + R[1, 1] * G[0, 1] + R[1, 2] * G[0, 2]
    m01 = R[0, 0] * G[1, 0] + R[0, 1] * G[1, 1] + R[0, 2] * G[1, 2]
    x, y, z = m21 - m12, m02 - m20, m10 - m01
    s = 0.5 * math.sqrt(x * x + y * y + z * z)  # sin(theta)
    c = 0.5 * (m00 + m11 + m22 - 1.0)  # cos(theta)
    theta = math.atan2(s, c)
    if s < 1e-7:
        if c > 0.0:  # near identity: theta / sin(theta) -> 1
            f = 0.5 * (1.0 + theta * theta / 6.0)
            out[o], out[o + 1], out[o + 2] = f * x, f * y, f * z
            return
        # near pi: the axis from the symmetric part (R G^T + I) / 2 = a a^T (up to rounding)
        ax = math.sqrt(max(0.5 * (m00 + 1.0), 0.0))
        ay = math.sqrt(max(0.5 * (m11 + 1.0), 0.0))
        az = math.sqrt(max(0.5 * (m22 + 1.0), 0.0))
        if ax >= ay and ax >= az:
            ay = math.copysign(ay, m01 + m10)
            az = math.copysign(az, m02 + m20)
        elif ay >= az:
            ax = math.copysign(ax, m01 + m10)
            az = math.copysign(az, m12 + m21)
        else:
            ax = math.copysign(ax, m02 + m20)
            ay = math.copysign(ay, m12 + m21)
        n = math.sqrt(ax * ax + ay * ay + az * az)
        out[o], out[o + 1], out[o + 2] = theta * ax / n, theta * ay / n, theta * az / n
        return
    f = 0.5 * theta / s
    out[o], out[o + 1], out[o + 2] = f * x, f * y, f * z


@njit(cache=True, error_model="numpy")
def _frame_rows(d, i, q, v, model, Rw, vel, acc):
    """The frame task i's full 6-vector Jacobian (d.jac), commanded task acceleration minus its
    bias (d.bias) and errors, after the tick's kinematics pass (``Rw``, ``vel``, ``acc``);
    returns a status (0 ok)."""
    body = d.body[i]
    F = d.frame[i]
    st = frame_placement(q, body, F, d.pose, model)
    if st != 0:
        return st
    st = frame_jacobian(q, body, F, d.local_axes, d.jac, model)
    if st != 0:
        return st
    point_bias_filled(Rw, vel, acc, body, F[3], F[0:3], d.local_axes, d.bias)
    e = d.error[i]
    ev = d.velocity_error[i]
    for a in range(3):
        e[a] = d.pose[a, 3] - d.goal_position[i, a]
    _rotation_log(d.pose, d.goal_rotation[i], e, 3)
    nv = v.shape[0]
    for a in range(6):
        s = 0.0
        for c in range(nv):
            s += d.jac[a, c] * v[c]
        ev[a] = s - d.goal_velocity[i, a]
        d.bias[a] = (d.goal_acceleration[i, a] - d.kd[i] * ev[a] - d.kp[i] * e[a]) - d.bias[a]
    return 0


@njit(cache=True, error_model="numpy")
def _com_rows(d, i, v, model, Rw, pw, vel, acc):
    """The centre-of-mass task i into d.jac[0:3] / d.bias[0:3], from the kinematics pass
    (world poses ``Rw``, ``pw``; body-frame velocities ``vel`` and velocity-product
    accelerations ``acc``), in O(bodies); returns a status (0 ok).

    With ``m_b`` and ``h_b = m_b c_b`` (first moment about the body origin) each body's mass
    parameters, a backward pass sums each subtree's mass ``m_s`` and world first moment
    ``h_s = sum m_b x_b`` (``x_b`` the body's world CoM); joint column k of body b, whose motion
    in world axes is ``[v_o; w]`` at the body origin ``p_b``, moves the CoM by
    ``(m_s v_o + w x (h_s - m_s p_b)) / m``. The bias ``J_com_dot v = sum m_b a_b / m``, where
    ``a_b`` is the classical acceleration of the body's CoM at zero joint accelerations:
    ``m_b (a + w x v) + alpha x h_b + w x (w x h_b)`` in body axes (no division by a mass, so
    massless bodies need no case)."""
    nb = model.parent.shape[0]
    sm = d.subtree_mass
    sh = d.subtree_moment
    total = 0.0
    c0 = c1 = c2 = 0.0
    b0 = b1 = b2 = 0.0
    for b in range(nb):
        m = model.mass[b]
        h = model.first_moment[b]
        hx, hy, hz = h[0], h[1], h[2]
        R = Rw[b]
        p = pw[b]
        sm[b] = m
        for a in range(3):
            sh[b, a] = m * p[a] + R[a, 0] * hx + R[a, 1] * hy + R[a, 2] * hz
        total += m
        c0 += sh[b, 0]
        c1 += sh[b, 1]
        c2 += sh[b, 2]
        v0, v1, v2 = vel[b, 0], vel[b, 1], vel[b, 2]
        w0, w1, w2 = vel[b, 3], vel[b, 4], vel[b, 5]
        al0, al1, al2 = acc[b, 3], acc[b, 4], acc[b, 5]
        # w x h, then the body-axes bias m (a + w x v) + alpha x h + w x (w x h)
        u0, u1, u2 = w1 * hz - w2 * hy, w2 * hx - w0 * hz, w0 * hy - w1 * hx
        l0 = (m * (acc[b, 0] + w1 * v2 - w2 * v1) + al1 * hz - al2 * hy + w1 * u2 - w2 * u1)
        l1 = (m * (acc[b, 1] + w2 * v0 - w0 * v2) + al2 * hx - al0 * hz + w2 * u0 - w0 * u2)
        l2 = (m * (acc[b, 2] + w0 * v1 - w1 * v0) + al0 * hy - al1 * hx + w0 * u1 - w1 * u0)
        b0 += R[0, 0] * l0 + R[0, 1] * l1 + R[0, 2] * l2
        b1 += R[1, 0] * l0 + R[1, 1] * l1 + R[1, 2] * l2
        b2 += R[2, 0] * l0 + R[2, 1] * l1 + R[2, 2] * l2
    if not total > 0.0:
        return 1
    for b in range(nb - 1, -1, -1):
        par = model.parent[b]
        if par >= 0:
            sm[par] += sm[b]
            for a in range(3):
                sh[par, a] += sh[b, a]
    inv = 1.0 / total
    nv = d.jac.shape[1]
    for a in range(3):
        for c in range(nv):
            d.jac[a, c] = 0.0
    for b in range(nb):
        R = Rw[b]
        p = pw[b]
        ms = sm[b]
        # the subtree's first moment about the body origin, world axes
        r0, r1, r2 = sh[b, 0] - ms * p[0], sh[b, 1] - ms * p[1], sh[b, 2] - ms * p[2]
        iv = model.v_index[b]
        S = model.motion_subspace[b]
        for k in range(model.joint_nv[b]):
            l0 = R[0, 0] * S[0, k] + R[0, 1] * S[1, k] + R[0, 2] * S[2, k]
            l1 = R[1, 0] * S[0, k] + R[1, 1] * S[1, k] + R[1, 2] * S[2, k]
            l2 = R[2, 0] * S[0, k] + R[2, 1] * S[1, k] + R[2, 2] * S[2, k]
            a0 = R[0, 0] * S[3, k] + R[0, 1] * S[4, k] + R[0, 2] * S[5, k]
            a1 = R[1, 0] * S[3, k] + R[1, 1] * S[4, k] + R[1, 2] * S[5, k]
            a2 = R[2, 0] * S[3, k] + R[2, 1] * S[4, k] + R[2, 2] * S[5, k]
            d.jac[0, iv + k] = (ms * l0 + a1 * r2 - a2 * r1) * inv
            d.jac[1, iv + k] = (ms * l1 + a2 * r0 - a0 * r2) * inv
            d.jac[2, iv + k] = (ms * l2 + a0 * r1 - a1 * r0) * inv
    e = d.error[i]
    ev = d.velocity_error[i]
    e[0] = c0 * inv - d.goal_position[i, 0]
    e[1] = c1 * inv - d.goal_position[i, 1]
    e[2] = c2 * inv - d.goal_position[i, 2]
    bias = (b0 * inv, b1 * inv, b2 * inv)
    cmd = d.com_command
    for a in range(3):
        s = 0.0
        for c in range(nv):
            s += d.jac[a, c] * v[c]
        ev[a] = s - d.goal_velocity[i, a]
        cmd[a] = d.goal_acceleration[i, a] - d.kd[i] * ev[a] - d.kp[i] * e[a]
    d.com_cop_clamped[0] = False
    if d.cop_margin >= 0.0:
        _clamp_to_support(d, Rw, pw, c0 * inv, c1 * inv, c2 * inv)
    for a in range(3):
        d.bias[a] = cmd[a] - bias[a]
    for a in range(3, 6):
        e[a] = 0.0
        ev[a] = 0.0
    return 0


@njit(cache=True, error_model="numpy", inline="always")
def _cross(ax, ay, bx, by, cx, cy):
    """(b - a) x (c - a), z component: > 0 when a, b, c turn counter-clockwise."""
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)


@njit(cache=True, error_model="numpy")
def _clamp_to_support(d, Rw, pw, cx, cy, cz):
    """Limit the CoM task's horizontal command ``d.com_command`` to what the stance feet can
    push: the centre of pressure it implies for a point mass at the CoM ``(cx, cy, cz)`` [m],
    ``p = c - a_xy (c_z - z_g) / (g + a_z)`` (the linear inverted pendulum; the centroidal
    angular momentum's rate taken as zero), is kept inside the convex hull of the standing
    support points shrunk by ``cop_margin`` [m] towards its centroid, and the command is the
    one of the nearest such point. Without an area of support (fewer than three points, a
    line: a trot's diagonal pair) the command is left alone. Writes ``com_cop`` (the CoP the
    command implies, after the limit) and ``com_cop_clamped``."""
    xy = d.support_xy
    order = d.support_order
    hull = d.support_hull
    n = 0
    zsum = 0.0
    for c in range(d.point_body.shape[0]):
        if not (d.point_used[c] and d.link_active[d.point_link[c]]):
            continue
        b = d.point_body[c]
        r = d.point_frame[c, 3]
        R = Rw[b]
        xy[n, 0] = R[0, 0] * r[0] + R[0, 1] * r[1] + R[0, 2] * r[2] + pw[b, 0]
        xy[n, 1] = R[1, 0] * r[0] + R[1, 1] * r[1] + R[1, 2] * r[2] + pw[b, 1]
        zsum += R[2, 0] * r[0] + R[2, 1] * r[1] + R[2, 2] * r[2] + pw[b, 2]
        n += 1
    if n < 3:
        return
    # Andrew's monotone chain: sort by (x, y), then the lower and upper chains
    for k in range(n):
        order[k] = k
    for k in range(1, n):
        j = order[k]
        m = k - 1
        while m >= 0 and (xy[order[m], 0] > xy[j, 0]
                          or (xy[order[m], 0] == xy[j, 0] and xy[order[m], 1] > xy[j, 1])):
            order[m + 1] = order[m]
            m -= 1
        order[m + 1] = j
    h = 0
    for k in range(n):
        j = order[k]
        while h >= 2 and _cross(xy[hull[h - 2], 0], xy[hull[h - 2], 1], xy[hull[h - 1], 0],
                                xy[hull[h - 1], 1], xy[j, 0], xy[j, 1]) <= 0.0:
            h -= 1
        hull[h] = j
        h += 1
    lower = h + 1
    for k in range(n - 2, -1, -1):
        j = order[k]
        while h >= lower and _cross(xy[hull[h - 2], 0], xy[hull[h - 2], 1], xy[hull[h - 1], 0],
                                    xy[hull[h - 1], 1], xy[j, 0], xy[j, 1]) <= 0.0:
            h -= 1
        hull[h] = j
        h += 1
    h -= 1  # the last vertex repeats the first
    area = 0.0
    mx = my = 0.0
    for k in range(h):
        a = hull[k]
        b = hull[k + 1]
        area += xy[a, 0] * xy[b, 1] - xy[b, 0] * xy[a, 1]
        mx += xy[a, 0]
        my += xy[a, 1]
    area *= 0.5
    if h < 3 or area < 1e-4:  # under 1 cm^2: a line or a point, no area to keep a CoP in
        return
    mx /= h
    my /= h
    # the hull's vertices moved cop_margin towards their mean (a vertex closer than that stays
    # at the mean), counter-clockwise, in support_polygon
    poly = d.support_polygon
    for k in range(h):
        a = hull[k]
        dx, dy = xy[a, 0] - mx, xy[a, 1] - my
        dist = math.sqrt(dx * dx + dy * dy)
        f = max(dist - d.cop_margin, 0.0) / dist if dist > 0.0 else 0.0
        poly[k, 0] = mx + f * dx
        poly[k, 1] = my + f * dy
    poly[h, 0] = poly[0, 0]
    poly[h, 1] = poly[0, 1]
    cmd = d.com_command
    height = cz - zsum / n
    g = d.gravity + cmd[2]
    if not (height > 0.0 and g > 0.0):
        return
    px = cx - cmd[0] * height / g
    py = cy - cmd[1] * height / g
    inside = True
    for k in range(h):
        if _cross(poly[k, 0], poly[k, 1], poly[k + 1, 0], poly[k + 1, 1], px, py) < 0.0:
            inside = False
            break
    if not inside:  # the nearest point of the polygon's boundary
        best = math.inf
        bx = by = 0.0
        for k in range(h):
            ax, ay = poly[k, 0], poly[k, 1]
            ex, ey = poly[k + 1, 0] - ax, poly[k + 1, 1] - ay
            ee = ex * ex + ey * ey
            t = ((px - ax) * ex + (py - ay) * ey) / ee if ee > 0.0 else 0.0
            t = min(max(t, 0.0), 1.0)
            qx, qy = ax + t * ex, ay + t * ey
            dd = (qx - px) * (qx - px) + (qy - py) * (qy - py)
            if dd < best:
                best = dd
                bx, by = qx, qy
        px, py = bx, by
        cmd[0] = (cx - px) * g / height
        cmd[1] = (cy - py) * g / height
        d.com_cop_clamped[0] = True
    d.com_cop[0] = px
    d.com_cop[1] = py


@njit(cache=True, error_model="numpy", inline="always")
def _append_rows(d, m, first, count, scale):
    """Append rows ``first .. first + count`` of ``scale * d.jac`` to the level being built,
    with ``scale * d.bias`` as their right-hand sides (the task's commanded acceleration minus
    its bias; for a contact, minus the bias alone: see the caller); returns the new row count."""
    nv = d.jac.shape[1]
    rows, rhs = d.hierarchy.rows, d.hierarchy.rhs
    for a in range(first, first + count):
        for k in range(nv):
            rows[m, k] = scale * d.jac[a, k]
        rhs[m] = scale * d.bias[a]
        m += 1
    return m


@njit(cache=True, error_model="numpy", inline="always")
def _hermite(tau, h, p0, p1, v0, v1):
    """A cubic Hermite segment of duration ``h`` [s] from (p0, v0) to (p1, v1) at the fraction
    ``tau``: (value, rate, second rate)."""
    t2 = tau * tau
    t3 = t2 * tau
    x = ((2 * t3 - 3 * t2 + 1) * p0 + (t3 - 2 * t2 + tau) * h * v0 + (3 * t2 - 2 * t3) * p1
         + (t3 - t2) * h * v1)
    xd = ((6 * t2 - 6 * tau) * p0 + (3 * t2 - 4 * tau + 1) * h * v0 + (6 * tau - 6 * t2) * p1
          + (3 * t2 - 2 * tau) * h * v1) / h
    xdd = ((12 * tau - 6) * p0 + (6 * tau - 4) * h * v0 + (6 - 12 * tau) * p1
           + (6 * tau - 2) * h * v1) / (h * h)
    return x, xd, xdd


@njit(cache=True, error_model="numpy")
def _flatten_stance(d, g, v, Rw, pw):
    """Stabilize an area contact's rows (Baumgarte's constraint stabilization): a sole that
    has rolled onto an edge or risen off the ground is driven back flat and down instead of
    being held where it is, ``J a = -J_dot v - kd J v + kp (flat, down)``: the tilt of the
    sole's normal from the world's vertical and its centroid's height above ``group_height``
    (its height at :meth:`TaskLayer.hold`) with ``stance_kp`` [1/s^2], its twist damped with
    ``stance_kd`` [1/s]. A flat sole at rest gets no correction (the rows are then the rigid
    contact's); yaw and horizontal position are not corrected (the sole may have slipped)."""
    nv = v.shape[0]
    for a in range(6):
        s = 0.0
        for c in range(nv):
            s += d.jac[a, c] * v[c]
        d.bias[a] -= d.stance_kd * s
    b = d.group_body[g]
    F = d.group_frame[g]
    R = Rw[b]
    # the sole's normal in world: R times the frame's z column (F rows 0-2: its rotation)
    nx = R[0, 0] * F[0, 2] + R[0, 1] * F[1, 2] + R[0, 2] * F[2, 2]
    ny = R[1, 0] * F[0, 2] + R[1, 1] * F[1, 2] + R[1, 2] * F[2, 2]
    nz = R[2, 0] * F[0, 2] + R[2, 1] * F[1, 2] + R[2, 2] * F[2, 2]
    # the rotation taking n to the vertical: axis n x e_z = (ny, -nx, 0), angle atan2(|.|, nz)
    sn = math.sqrt(nx * nx + ny * ny)
    if sn > 0.0:
        th = math.atan2(sn, nz) / sn
        d.bias[3] += d.stance_kp * th * ny
        d.bias[4] -= d.stance_kp * th * nx
    r = F[3]
    z = R[2, 0] * r[0] + R[2, 1] * r[1] + R[2, 2] * r[2] + pw[b, 2]
    d.bias[2] -= d.stance_kp * (z - d.group_height[g])


@njit(cache=True, error_model="numpy")
def _sample_trajectories(d):
    """Each task with a trajectory: its goal (position, rotation, velocity, acceleration) at
    the layer's clock. Positions: per axis, cubic Hermite through the knots' velocities
    (``trajectory_hermite``) or linear. Rotations: about the fixed axis of each segment,
    ``R(t) = exp(theta(t) a) R_0`` with ``a theta_1 = log(R_1 R_0^T)`` (world axes) and
    ``theta`` Hermite through the knots' angular velocities along ``a`` (or linear), so the
    goal's angular velocity and acceleration are ``theta_dot a`` and ``theta_ddot a``. Past the
    last knot the goal holds there, at rest, and the trajectory ends."""
    e = d.bias  # scratch (3,) for the segment's rotation vector; the tick overwrites bias
    for i in range(d.trajectory_count.shape[0]):
        n = d.trajectory_count[i]
        if n == 0:
            continue
        if math.isnan(d.trajectory_start[i]):  # starts now, from where the goal is
            d.trajectory_start[i] = d.clock[0]
        if d.trajectory_lead[i]:
            d.trajectory_position[i, 0] = d.goal_position[i]
            d.trajectory_rotation[i, 0] = d.goal_rotation[i]
            d.trajectory_lead[i] = False
        s = d.clock[0] - d.trajectory_start[i]
        times = d.trajectory_time[i]
        if s >= times[n - 1]:
            d.goal_position[i] = d.trajectory_position[i, n - 1]
            d.goal_rotation[i] = d.trajectory_rotation[i, n - 1]
            for a in range(6):
                d.goal_velocity[i, a] = 0.0
                d.goal_acceleration[i, a] = 0.0
            d.trajectory_count[i] = 0
            continue
        k = 0
        if s > 0.0:
            while k + 2 < n and times[k + 1] <= s:
                k += 1
        else:
            s = 0.0
        h = times[k + 1] - times[k]
        tau = (s - times[k]) / h
        hermite = d.trajectory_hermite[i]
        P = d.trajectory_position[i]
        V = d.trajectory_velocity[i]
        for a in range(3):
            if hermite:
                x, xd, xdd = _hermite(tau, h, P[k, a], P[k + 1, a], V[k, a], V[k + 1, a])
            else:
                xd = (P[k + 1, a] - P[k, a]) / h
                x = P[k, a] + tau * h * xd
                xdd = 0.0
            d.goal_position[i, a] = x
            d.goal_velocity[i, a] = xd
            d.goal_acceleration[i, a] = xdd
        R0 = d.trajectory_rotation[i, k]
        _rotation_log(d.trajectory_rotation[i, k + 1], R0, e, 0)
        total = math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
        if total > 0.0:
            ax, ay, az = e[0] / total, e[1] / total, e[2] / total
        else:
            ax, ay, az = 0.0, 0.0, 1.0
        if hermite:
            w0 = V[k, 3] * ax + V[k, 4] * ay + V[k, 5] * az
            w1 = V[k + 1, 3] * ax + V[k + 1, 4] * ay + V[k + 1, 5] * az
            th, thd, thdd = _hermite(tau, h, 0.0, total, w0, w1)
        else:
            thd = total / h
            th = tau * total
            thdd = 0.0
        # Rodrigues: exp(th a) R0
        c, sn = math.cos(th), math.sin(th)
        C = 1.0 - c
        E = d.rot
        E[0, 0], E[0, 1], E[0, 2] = c + C * ax * ax, C * ax * ay - sn * az, C * ax * az + sn * ay
        E[1, 0], E[1, 1], E[1, 2] = C * ax * ay + sn * az, c + C * ay * ay, C * ay * az - sn * ax
        E[2, 0], E[2, 1], E[2, 2] = C * ax * az - sn * ay, C * ay * az + sn * ax, c + C * az * az
        G = d.goal_rotation[i]
        for r in range(3):
            for cc in range(3):
                G[r, cc] = E[r, 0] * R0[0, cc] + E[r, 1] * R0[1, cc] + E[r, 2] * R0[2, cc]
        d.goal_velocity[i, 3], d.goal_velocity[i, 4], d.goal_velocity[i, 5] = (
            thd * ax, thd * ay, thd * az)
        d.goal_acceleration[i, 3], d.goal_acceleration[i, 4], d.goal_acceleration[i, 5] = (
            thdd * ax, thdd * ay, thdd * az)


@njit(cache=True, error_model="numpy")
def task_layer_kernel(d, q, v, model):
    """One tick of the task layer on the record ``d`` (``TaskData``) at the state ``q``,
    ``v`` (the model's configuration and velocity): the stance contacts, then every priority
    level's active tasks, into ``d.acceleration``. Returns :data:`TASKS_OK` or
    :data:`TASKS_FAILED` (a kinematics error, a value not finite, no convergence)."""
    nv = v.shape[0]
    _sample_trajectories(d)
    h = d.hierarchy  # its x is d.acceleration
    prioritized_reset(h)
    if check_configuration(model, q) != 0 or not check_vector(v):
        return TASKS_FAILED
    # one kinematics pass: every body's pose, velocity and velocity-product acceleration, from
    # which each contact's and frame task's J_dot v follows (point_bias_filled)
    Xup, Rw, pw, Rtmp, vel, acc, vJ = _point_kinematics_views(d.W, d.SC)
    forward_kinematics(model, q, Xup, Rw, pw, Rtmp)
    body_velocities_and_bias(model, v, Xup, vel, acc, vJ)
    # the stance contacts: a hard level above every task
    for g in range(d.group_body.shape[0]):
        d.group_active[g] = 0
    for c in range(d.point_body.shape[0]):
        if d.point_used[c] and d.link_active[d.point_link[c]]:
            d.group_active[d.point_group[c]] += 1
    m = _ZERO  # rows of the level being built
    for g in range(d.group_body.shape[0]):
        if d.group_active[g] < 3 or not d.group_area[g]:
            continue
        F = d.group_frame[g]
        if frame_jacobian(q, d.group_body[g], F, d.local_axes, d.jac, model) != 0:
            return TASKS_FAILED
        point_bias_filled(Rw, vel, acc, d.group_body[g], F[3], F[0:3], d.local_axes, d.bias)
        for a in range(6):  # J a = -J_dot v: at rest, not accelerating
            d.bias[a] = -d.bias[a]
        if d.stance_kp > 0.0 or d.stance_kd > 0.0:
            _flatten_stance(d, g, v, Rw, pw)
        m = _append_rows(d, m, 0, 6, 1.0)
    for c in range(d.point_body.shape[0]):
        g = d.point_group[c]
        if (not d.point_used[c] or not d.link_active[d.point_link[c]]
                or (d.group_area[g] and d.group_active[g] >= 3)):
            continue
        F = d.point_frame[c]
        if frame_jacobian(q, d.point_body[c], F, d.local_axes, d.jac, model) != 0:
            return TASKS_FAILED
        point_bias_filled(Rw, vel, acc, d.point_body[c], F[3], F[0:3], d.local_axes, d.bias)
        for a in range(3):
            d.bias[a] = -d.bias[a]
        m = _append_rows(d, m, 0, 3, 1.0)
    added = prioritized_level(m, h, d.tolerance, 0.0)
    d.level_rank[0] = added
    if added < 0:
        return TASKS_FAILED
    for lv in range(d.levels):
        m = _ZERO
        full = h.rank[0] >= nv  # nothing left to solve: the errors are still reported
        if lv == d.posture_level and d.active[d.posture_task]:
            # the posture alone on the last level: its selection rows in closed form
            added = prioritized_selection_level(
                d.posture_acceleration, d.base_dofs, h, d.selection_residual, d.selection_step,
                d.selection_gram, d.selection_factor, d.selection_small)
            d.level_rank[lv + 1] = added
            if added < 0:
                return TASKS_FAILED
            continue
        for i in range(d.kind.shape[0]):
            if d.level[i] != lv or not d.active[i]:
                continue
            sw = math.sqrt(d.weight[i])
            kind = d.kind[i]
            if kind == _KIND_POSTURE:
                if full:
                    continue
                for j in range(d.base_dofs, nv):
                    for k in range(nv):
                        h.rows[m, k] = 0.0
                    h.rows[m, j] = sw
                    h.rhs[m] = sw * d.posture_acceleration[j]
                    m += 1
                continue
            if kind == _KIND_FRAME:
                st = _frame_rows(d, i, q, v, model, Rw, vel, acc)
            else:
                st = _com_rows(d, i, v, model, Rw, pw, vel, acc)
            if st != 0:
                return TASKS_FAILED
            if full:
                continue
            m = _append_rows(d, m, d.row_first[i], d.row_count[i], sw)
        added = prioritized_level(m, h, d.tolerance, d.damping)
        d.level_rank[lv + 1] = added
        if added < 0:
            return TASKS_FAILED
    return TASKS_OK


@njit(cache=True, error_model="numpy")
def task_layer_tick(d, q, v, model):
    """A controller's task step on the joint buffers bound to ``d``
    (:meth:`TaskLayer.bind_joints`): the posture task's commanded accelerations from
    ``joint_acceleration_model`` (the joint reference's PD command, model joint order), the
    layer (:func:`task_layer_kernel`), its joint accelerations back into
    ``joint_acceleration_model`` and ``joint_acceleration`` (configured order), then the
    drives' set-points ``drive_position`` / ``drive_velocity``: the commanded accelerations
    integrated over ``dt``, leaking towards the measured joints by ``position_leak`` /
    ``velocity_leak`` per tick (started at the measured state when ``drive_ready[0]`` is
    False). Returns the kernel's status (the buffers are unchanged unless it is
    :data:`TASKS_OK`)."""
    base = d.base_dofs
    qdd_model = d.joint_acceleration_model
    n = qdd_model.shape[0]
    for j in range(n):
        d.posture_acceleration[base + j] = qdd_model[j]
    st = task_layer_kernel(d, q, v, model)
    if st != TASKS_OK:
        return st
    for j in range(n):
        qdd_model[j] = d.acceleration[base + j]
    qj, qdj, qs, vs = d.joint_position, d.joint_velocity, d.drive_position, d.drive_velocity
    if not d.drive_ready[0]:
        for i in range(n):
            qs[i] = qj[i]
            vs[i] = qdj[i]
        d.drive_ready[0] = True
    dt, lq, lv = d.dt, d.position_leak, d.velocity_leak
    for i in range(n):
        a = qdd_model[d.joint_index[i]]
        d.joint_acceleration[i] = a
        vs[i] += dt * a
        vs[i] += lv * (qdj[i] - vs[i])
        qs[i] += dt * vs[i]
        qs[i] += lq * (qj[i] - qs[i])
    return TASKS_OK


def _quaternion_matrix(quat_xyzw: Sequence[float]) -> np.ndarray:
    x, y, z, w = (float(c) for c in quat_xyzw)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not (math.isfinite(n) and n > 1e-9):
        raise ValueError("orientation: expected a non-zero finite quaternion (x, y, z, w)")
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _finite3(field: str, value: Any) -> np.ndarray:
    a = np.asarray(value, dtype=np.float64).reshape(-1) if value is not None else None
    if a is None or a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{field}: expected 3 finite numbers, got {value!r}")
    return a


class TaskLayer:
    """Prioritized task-space control of a :class:`~wbc_dynamics.model.RobotModel` (module
    docstring): tasks from :class:`TaskSpec` (or their mappings), goals set at runtime, one
    compiled call per tick.

    Args:
        model: the robot model (floating or fixed base).
        tasks: the tasks; a ``com`` task needs a floating base.
        contacts: the stance contacts as (link, points (k, 3) in the link frame [m]), grouped
            by the rigid body that carries them: a group whose points span at least
            ``area_contact_size`` [m] and has three or more standing points stands on an area
            (6 rows at the points' centroid: a sole), otherwise each standing point is a point
            contact (3 rows); a smaller group (a ball or a cylinder's rim: a foot that rolls) is
            one point contact at its points' centroid. Floating base only; all start active.
        tolerance: relative rank tolerance of each level (rows whose part outside the higher
            levels' row space is smaller than this times the level's largest row are dropped).
        damping: damping of the near-singular directions, in task units (0: exact).
    """

    def __init__(self, model: Any, tasks: Iterable[Mapping[str, Any] | TaskSpec],
                 contacts: Sequence[tuple[str, Any]] = (), tolerance: float = 1e-9,
                 damping: float = 0.0, area_contact_size: float = 0.05,
                 trajectory_capacity: int = 256, cop_margin: float = 0.01,
                 stance_kp: float = 100.0, stance_kd: float = 20.0) -> None:
        self.model = model
        specs = parse_tasks(tasks)
        self.specs = specs
        nv = model.nv
        base = 6 if model.floating_base else 0
        if not model.floating_base:
            if contacts:
                raise ValueError("contacts: stance contacts need a floating-base model")
            for s in specs:
                if s.kind == "com":
                    raise ValueError(f"tasks ({s.name!r}).kind: a com task needs a floating base")
        self.task_names = [s.name for s in specs]
        self._index = {s.name: i for i, s in enumerate(specs)}
        priorities = sorted({s.priority for s in specs})
        T = len(specs)
        frame = np.zeros((T, 4, 3))
        body = np.full(T, -1, dtype=np.int64)
        row_first = np.zeros(T, dtype=np.int64)
        row_count = np.zeros(T, dtype=np.int64)
        for i, s in enumerate(specs):
            frame[i, 0:3] = np.eye(3)
            if s.kind == "frame":
                body[i], F = model._point(s.link, np.asarray(s.point, float))
                frame[i] = F
                row_first[i], row_count[i] = {"pose": (0, 6), "position": (0, 3),
                                              "orientation": (3, 3)}[s.mode]
            elif s.kind == "com":
                row_count[i] = 3
            else:
                row_count[i] = nv - base
        # the contact points, grouped by the rigid body that carries them (a sole's corner
        # links are fixed to the foot: one group)
        self.contact_links = [str(link) for link, _ in contacts]
        if len(set(self.contact_links)) != len(self.contact_links):
            raise ValueError("contacts: a link is listed twice")
        p_body, p_frame, p_link, p_group, g_body, g_points = [], [], [], [], [], []
        for li, (link, points) in enumerate(contacts):
            for p in np.asarray(points, dtype=np.float64).reshape(-1, 3):
                b, F = model._point(link, p)
                if b not in g_body:
                    g_body.append(b)
                    g_points.append([])
                g = g_body.index(b)
                g_points[g].append(F[3].copy())  # the point in the body frame
                p_body.append(b)
                p_frame.append(F)
                p_link.append(li)
                p_group.append(g)
        g_frame = np.zeros((len(g_body), 4, 3))
        for g, pts in enumerate(g_points):
            g_frame[g, 0:3] = np.eye(3)
            g_frame[g, 3] = np.mean(pts, axis=0)
        P, G = len(p_body), len(g_body)
        self.area_contact_size = _number("area_contact_size", area_contact_size)
        #: each candidate point in its body frame and in its link's (the support is chosen
        #: from them: hold)
        self._point_positions = np.array([F[3] for F in p_frame]).reshape(P, 3)
        self._point_in_link = np.array([p for _, points in contacts for p in
                                        np.asarray(points, dtype=np.float64).reshape(-1, 3)
                                        ]).reshape(P, 3)
        level_rows = [max(3 * P, 6 * G)]
        for p in priorities:
            level_rows.append(sum(int(row_count[i]) for i, s in enumerate(specs)
                                  if s.priority == p))
        m = max(level_rows + [1])
        # the posture task alone on the last level: solved in closed form
        posture_level, posture_task = -1, 0
        if priorities:
            last = [i for i, s in enumerate(specs) if s.priority == priorities[-1]]
            if len(last) == 1 and specs[last[0]].kind == "posture":
                posture_level, posture_task = len(priorities) - 1, last[0]
        W, SC = workspace(model._nb)
        if not math.isfinite(float(cop_margin)):
            raise ValueError(f"cop_margin: expected a finite number [m], got {cop_margin!r}")
        K = int(trajectory_capacity)
        if K < 2:
            raise ValueError(f"trajectory_capacity: at least 2 knots, got {trajectory_capacity}")
        acceleration = np.zeros(nv)  # the hierarchy's solution x
        self.data = TaskData(
            kind=np.array([TASK_KINDS.index(s.kind) for s in specs], dtype=np.int64),
            level=np.array([priorities.index(s.priority) for s in specs], dtype=np.int64),
            body=body, frame=frame, row_first=row_first, row_count=row_count,
            active=np.ones(T, dtype=np.bool_),
            kp=np.array([s.kp for s in specs], dtype=np.float64),
            kd=np.array([s.kd for s in specs], dtype=np.float64),
            weight=np.array([s.weight for s in specs], dtype=np.float64),
            goal_position=np.zeros((T, 3)), goal_rotation=np.tile(np.eye(3), (T, 1, 1)),
            goal_velocity=np.zeros((T, 6)), goal_acceleration=np.zeros((T, 6)),
            trajectory_count=np.zeros(T, dtype=np.int64), trajectory_start=np.zeros(T),
            trajectory_time=np.zeros((T, K)), trajectory_position=np.zeros((T, K, 3)),
            trajectory_rotation=np.tile(np.eye(3), (T, K, 1, 1)),
            trajectory_velocity=np.zeros((T, K, 6)),
            trajectory_hermite=np.zeros(T, dtype=np.bool_),
            trajectory_lead=np.zeros(T, dtype=np.bool_), clock=np.zeros(1),
            posture_acceleration=np.zeros(nv),
            point_body=np.array(p_body, dtype=np.int64),
            point_frame=np.array(p_frame, dtype=np.float64).reshape(P, 4, 3),
            point_link=np.array(p_link, dtype=np.int64),
            point_group=np.array(p_group, dtype=np.int64),
            point_used=np.ones(P, dtype=np.bool_),
            group_body=np.array(g_body, dtype=np.int64), group_frame=g_frame,
            group_area=np.zeros(G, dtype=np.bool_), group_height=np.zeros(G),
            group_active=np.zeros(G, dtype=np.int64),
            link_active=np.ones(len(self.contact_links), dtype=np.bool_),
            acceleration=acceleration, error=np.zeros((T, 6)), velocity_error=np.zeros((T, 6)),
            level_rank=np.zeros(len(priorities) + 1, dtype=np.int64),
            base_dofs=base, local_axes=False, levels=len(priorities), posture_level=posture_level,
            posture_task=posture_task,
            tolerance=_number("tolerance", tolerance, positive=True),
            damping=_number("damping", damping),
            joint_index=np.zeros(0, dtype=np.int64), joint_position=np.zeros(0),
            joint_velocity=np.zeros(0), joint_acceleration_model=np.zeros(0),
            joint_acceleration=np.zeros(0), drive_position=np.zeros(0),
            drive_velocity=np.zeros(0), drive_ready=np.zeros(1, dtype=np.bool_), dt=1e-3,
            position_leak=0.0, velocity_leak=0.0,
            jac=np.zeros((6, nv)), bias=np.zeros(6), pose=np.zeros((4, 4)), rot=np.zeros((3, 3)),
            subtree_mass=np.zeros(model._nb), subtree_moment=np.zeros((model._nb, 3)),
            gravity=float(-model._gravity[2]), cop_margin=float(cop_margin),
            stance_kp=_number("stance_kp", stance_kp), stance_kd=_number("stance_kd", stance_kd),
            com_command=np.zeros(3), com_cop=np.zeros(2),
            com_cop_clamped=np.zeros(1, dtype=np.bool_), support_xy=np.zeros((max(P, 1), 2)),
            support_order=np.zeros(max(P, 1), dtype=np.int64),
            support_hull=np.zeros(2 * max(P, 1) + 1, dtype=np.int64),
            support_polygon=np.zeros((2 * max(P, 1) + 1, 2)),
            W=W, SC=SC,
            hierarchy=prioritized_work(nv, m)._replace(x=acceleration),
            selection_residual=np.zeros(nv), selection_step=np.zeros(nv),
            selection_gram=np.zeros((max(base, 1), max(base, 1))),
            selection_factor=np.zeros((max(base, 1), max(base, 1))),
            selection_small=np.zeros(max(base, 1)))
        self._record = record_of(self.data)
        self._args = (model._model,)

    def bind_joints(self, joint_index: np.ndarray, position: np.ndarray, velocity: np.ndarray,
                    acceleration_model: np.ndarray, acceleration: np.ndarray, dt: float,
                    position_leak_time: float, velocity_leak_time: float,
                    link_active: np.ndarray | None = None) -> None:
        """Bind a controller's joint buffers for :func:`task_layer_tick` (see ``TaskData``;
        the arrays are shared, not copied). ``dt`` [s] the control period; the drive set-points
        leak towards the measured state with time constants ``position_leak_time``,
        ``velocity_leak_time`` [s]; ``link_active``: an array (one bool per contact link, the
        layer's order) to share as the contacts' activity, e.g. a contact state filter's."""
        n = len(joint_index)
        fields = dict(
            joint_index=np.asarray(joint_index, dtype=np.int64), joint_position=position,
            joint_velocity=velocity, joint_acceleration_model=acceleration_model,
            joint_acceleration=acceleration, drive_position=np.zeros(n),
            drive_velocity=np.zeros(n), drive_ready=np.zeros(1, dtype=np.bool_), dt=float(dt),
            position_leak=min(1.0, dt / position_leak_time),
            velocity_leak=min(1.0, dt / velocity_leak_time))
        if link_active is not None:
            if link_active.shape != self.data.link_active.shape:
                raise ValueError(f"link_active: expected {len(self.contact_links)} links")
            fields["link_active"] = link_active
        self.data = self.data._replace(**fields)
        self._record = record_of(self.data)

    def reset_drive(self) -> None:
        """Restart the drive set-points from the measured state at the next tick."""
        self.data.drive_ready[0] = False

    # ------------------------------------------------------------------ runtime settings
    def _task(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise ValueError(f"unknown task {name!r}; tasks: {self.task_names}") from None

    def set_goal(self, name: str, position: Any = None, orientation: Any = None,
                 linear_velocity: Any = None, angular_velocity: Any = None,
                 linear_acceleration: Any = None, angular_acceleration: Any = None) -> None:
        """Set parts of a frame / com task's goal, world axes: ``position`` (3,) [m],
        ``orientation`` quaternion (x, y, z, w) or (3, 3) rotation, velocities [m/s, rad/s],
        accelerations [m/s^2, rad/s^2]. Parts not given keep their value. Raises ValueError
        naming the task and field (nothing is changed then)."""
        i = self._task(name)
        d = self.data
        if d.kind[i] == _KIND_POSTURE:
            raise ValueError(f"{name}: the posture task follows the joint reference")
        where = f"{name}."
        new: dict[str, np.ndarray] = {}
        if position is not None:
            new["p"] = _finite3(where + "position", position)
        if orientation is not None:
            o = np.asarray(orientation, dtype=np.float64)
            if o.shape == (3, 3):
                if not (np.all(np.isfinite(o)) and np.allclose(o @ o.T, np.eye(3), atol=1e-6)
                        and np.linalg.det(o) > 0):
                    raise ValueError(f"{where}orientation: not a rotation matrix")
                new["R"] = o
            elif o.shape == (4,):
                try:
                    new["R"] = _quaternion_matrix(o)
                except ValueError as exc:
                    raise ValueError(where + str(exc)) from None
            else:
                raise ValueError(f"{where}orientation: expected a quaternion (x, y, z, w) or a "
                                 f"3x3 rotation, got shape {o.shape}")
        for key, value in (("v", linear_velocity), ("w", angular_velocity),
                           ("a", linear_acceleration), ("al", angular_acceleration)):
            if value is not None:
                new[key] = _finite3(where + {"v": "linear_velocity", "w": "angular_velocity",
                                             "a": "linear_acceleration",
                                             "al": "angular_acceleration"}[key], value)
        d.trajectory_count[i] = 0  # a goal replaces a running trajectory
        if "p" in new:
            d.goal_position[i] = new["p"]
        if "R" in new:
            d.goal_rotation[i] = new["R"]
        if "v" in new:
            d.goal_velocity[i, 0:3] = new["v"]
        if "w" in new:
            d.goal_velocity[i, 3:6] = new["w"]
        if "a" in new:
            d.goal_acceleration[i, 0:3] = new["a"]
        if "al" in new:
            d.goal_acceleration[i, 3:6] = new["al"]

    def set_trajectory(self, name: str, times: Any, positions: Any = None,
                       orientations: Any = None, linear_velocities: Any = None,
                       angular_velocities: Any = None, start: float | None = None) -> None:
        """Give a frame / com task a goal trajectory through knots, world axes, replacing its
        goal (and any trajectory it follows) from ``start``.

        Args:
            times: (K,) [s] each knot's time from ``start``, increasing, the first >= 0. A first
                knot after 0 is reached from where the goal is when the trajectory starts (at
                rest), as ros2_control's joint trajectory controller does.
            positions: (K, 3) [m]; required for a task with position rows (com, frame modes
                pose / position), ignored otherwise (the goal's position then holds).
            orientations: (K, 4) quaternions (x, y, z, w) or (K, 3, 3) rotations; required for
                frame modes pose / orientation, else ignored.
            linear_velocities, angular_velocities: (K, 3) [m/s, rad/s] at the knots: given,
                the segments are cubic Hermite through them (velocity and acceleration
                continuous at the knots); omitted, the segments are linear (constant velocity
                between knots, the goal's acceleration 0). Angular velocities count along each
                segment's rotation axis only (a rotation is interpolated about a fixed axis).
            start: [s] on the layer's clock (the controller's tick time); None = the first
                tick that samples it.

        After the last knot the goal holds there at rest. At most ``trajectory_capacity`` knots
        (one fewer when the first is after 0). Raises ValueError naming the task and field
        (nothing is changed then).
        """
        i = self._task(name)
        d = self.data
        if d.kind[i] == _KIND_POSTURE:
            raise ValueError(f"{name}: the posture task follows the joint reference")
        where = f"{name}.trajectory."
        t = np.asarray(times, dtype=np.float64).reshape(-1)
        K = t.shape[0]
        if K == 0 or not np.all(np.isfinite(t)) or t[0] < 0.0 or np.any(np.diff(t) <= 0.0):
            raise ValueError(f"{where}times: expected increasing finite times >= 0 [s], got {t}")
        lead = int(t[0] > 0.0)  # a knot at 0 where the goal is
        capacity = d.trajectory_time.shape[1]
        if K + lead > capacity:
            raise ValueError(f"{where}times: {K} knots, at most {capacity - lead} "
                             f"(trajectory_capacity {capacity})")
        rows = (int(d.row_first[i]), int(d.row_first[i] + d.row_count[i]))
        has_position, has_rotation = rows[0] < 3, rows[1] > 3

        def knots(field: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
            a = np.asarray(value, dtype=np.float64)
            if a.shape != shape or not np.all(np.isfinite(a)):
                raise ValueError(f"{where}{field}: expected finite values of shape {shape}, "
                                 f"got shape {a.shape}")
            return a

        P = np.repeat(d.goal_position[i][None], K, axis=0)
        R = np.repeat(d.goal_rotation[i][None], K, axis=0)
        if has_position:
            if positions is None:
                raise ValueError(f"{where}positions: required for task {name!r}")
            P = knots("positions", positions, (K, 3))
        if has_rotation:
            if orientations is None:
                raise ValueError(f"{where}orientations: required for task {name!r}")
            o = np.asarray(orientations, dtype=np.float64)
            if o.shape == (K, 4):
                try:
                    R = np.array([_quaternion_matrix(x) for x in knots("orientations", o, (K, 4))])
                except ValueError as exc:
                    raise ValueError(where + str(exc)) from None
            else:
                R = knots("orientations", o, (K, 3, 3))
                if (np.abs(R @ R.transpose(0, 2, 1) - np.eye(3)).max() > 1e-6
                        or np.any(np.linalg.det(R) <= 0.0)):
                    raise ValueError(f"{where}orientations: not rotation matrices")
        hermite = linear_velocities is not None or angular_velocities is not None
        V = np.zeros((K, 6))
        if linear_velocities is not None:
            V[:, 0:3] = knots("linear_velocities", linear_velocities, (K, 3))
        if angular_velocities is not None:
            V[:, 3:6] = knots("angular_velocities", angular_velocities, (K, 3))
        if start is not None and not math.isfinite(start):
            raise ValueError(f"{where}start: not finite")
        n = K + lead
        d.trajectory_count[i] = 0  # not sampled while being written
        d.trajectory_time[i, lead:n] = t
        d.trajectory_position[i, lead:n] = P
        d.trajectory_rotation[i, lead:n] = R
        d.trajectory_velocity[i, lead:n] = V
        if lead:
            d.trajectory_time[i, 0] = 0.0
            d.trajectory_velocity[i, 0] = 0.0
        d.trajectory_lead[i] = bool(lead)
        d.trajectory_hermite[i] = hermite
        d.trajectory_start[i] = math.nan if start is None else float(start)
        d.trajectory_count[i] = n

    def set_clock(self, now: float) -> None:
        """The layer's clock [s] (the controller's tick time), at which goal trajectories are
        sampled by the next :meth:`solve` or tick."""
        self.data.clock[0] = now

    def goal(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(position (3,), rotation (3, 3), velocity (6,), acceleration (6,)) of a task's goal
        (copies, world axes)."""
        i = self._task(name)
        d = self.data
        return (d.goal_position[i].copy(), d.goal_rotation[i].copy(),
                d.goal_velocity[i].copy(), d.goal_acceleration[i].copy())

    def hold(self, q: Any, skip: Iterable[str] = ()) -> None:
        """Every frame and com task's goal (but those named in ``skip``): where it is at the
        configuration ``q``, at rest."""
        q = np.asarray(q, dtype=np.float64)
        d = self.data
        com = None
        skip = set(skip)
        self._choose_support(q)
        for i, s in enumerate(self.specs):
            if s.name in skip:
                continue
            d.goal_velocity[i] = 0.0
            d.goal_acceleration[i] = 0.0
            if s.kind == "frame":
                T = self.model.frame_placement(q, s.link)
                d.goal_position[i] = T[:3, :3] @ np.asarray(s.point) + T[:3, 3]
                d.goal_rotation[i] = T[:3, :3]
            elif s.kind == "com":
                if com is None:
                    com = self.model.center_of_mass(q)[0]
                d.goal_position[i] = com

    def _choose_support(self, q: np.ndarray, height_tolerance: float = 5e-3) -> None:
        """Each contact group's support at the standing configuration ``q``: its points
        within ``height_tolerance`` [m] of its lowest one (a sole's corners, not the shank's
        far end). A support spanning ``area_contact_size`` or more with three or more points
        stands on an area (6 rows at its centroid); a smaller one -- a ball, a cylinder's rim,
        a foot that rolls -- is one point contact at its centroid."""
        d = self.data
        model = self.model
        P = len(self._point_positions)
        if P == 0:
            return
        world = np.empty((P, 3))
        placements = {ln: model.frame_placement(q, ln) for ln in self.contact_links}
        for c in range(P):
            T = placements[self.contact_links[d.point_link[c]]]
            world[c] = T[:3, :3] @ self._point_in_link[c] + T[:3, 3]
        d.point_used[:] = False
        for g in range(len(d.group_body)):
            members = np.flatnonzero(d.point_group == g)
            z = world[members, 2]
            support = members[z <= z.min() + height_tolerance]
            pts = self._point_positions[support]
            spread = (float(np.max(np.linalg.norm(pts[:, None] - pts[None], axis=2)))
                      if len(pts) > 1 else 0.0)
            d.group_frame[g, 3] = pts.mean(axis=0)
            d.group_height[g] = world[support, 2].mean()
            area = len(pts) >= 3 and spread >= self.area_contact_size
            d.group_area[g] = area
            if area:
                d.point_used[support] = True
            else:  # one point at the support's centroid, on the first support point's link
                c = support[0]
                d.point_used[c] = True
                d.point_frame[c, 3] = pts.mean(axis=0)

    def set_point(self, name: str, point: Any) -> None:
        """Move a frame task's controlled point to ``point`` (3,) [m] in its link frame."""
        i = self._task(name)
        if self.specs[i].kind != "frame":
            raise ValueError(f"{name}: only a frame task has a point")
        body, F = self.model._point(self.specs[i].link, _finite3(f"{name}.point", point))
        self.data.frame[i] = F

    def set_active(self, name: str, active: bool) -> None:
        """Switch a task on or off (an inactive task contributes no rows)."""
        self.data.active[self._task(name)] = bool(active)

    def set_gains(self, name: str, kp: float | None = None, kd: float | None = None,
                  weight: float | None = None) -> None:
        """Change a task's kp [1/s^2], kd [1/s] or weight (> 0) at runtime."""
        i = self._task(name)
        vals = {}
        if kp is not None:
            vals["kp"] = _number(f"{name}.kp", kp)
        if kd is not None:
            vals["kd"] = _number(f"{name}.kd", kd)
        if weight is not None:
            vals["weight"] = _number(f"{name}.weight", weight, positive=True)
        for k, x in vals.items():
            getattr(self.data, k)[i] = x

    def set_contact_active(self, link: str, active: bool) -> None:
        """Whether the stance contact ``link`` stands (its rows constrain the solution)."""
        if link not in self.contact_links:
            raise ValueError(f"unknown contact link {link!r}; contacts: {self.contact_links}")
        self.data.link_active[self.contact_links.index(link)] = bool(active)

    def error(self, name: str) -> np.ndarray:
        """(6,) the task's last position [m] / orientation [rad] error, world axes (a view)."""
        return self.data.error[self._task(name)]

    # ------------------------------------------------------------------ the tick
    def solve(self, q: Any, v: Any, posture_acceleration: Any = None) -> np.ndarray:
        """The accelerations (nv,) that the tasks command at ``q``, ``v`` (the model's
        configuration and velocity; a view, overwritten by the next call).
        ``posture_acceleration``: (nv,) the posture task's commanded accelerations (v order).
        Raises ValueError if the kinematics fail or a value is not finite."""
        d = self.data
        if posture_acceleration is not None:
            d.posture_acceleration[:] = posture_acceleration
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        if q.shape != (self.model.nq,) or v.shape != (self.model.nv,):
            raise ValueError(f"q, v: expected shapes ({self.model.nq},), ({self.model.nv},)")
        if self.run(q, v) != TASKS_OK:
            raise ValueError("task layer: the kinematics failed or a value is not finite")
        return d.acceleration

    def run(self, q: np.ndarray, v: np.ndarray) -> int:
        """:func:`task_layer_kernel` on checked contiguous float64 ``q``, ``v`` (the hot path);
        returns its status."""
        return int(task_layer_kernel(self._record, q, v, *self._args))
