"""``RobotModel``: the public, input-checking face of the compiled dynamics core.

Conventions (the same as Pinocchio's, so results compare directly):

* Fixed base: ``q`` and ``v`` are the movable joints in ``RobotModel.joint_names`` order
  (rad or m; rad/s or m/s).
* Floating base (``floating_base=True``): ``q = [p (3, m, world), quaternion x y z w (4),
  joints]`` with the quaternion the base orientation in the world; ``v = [linear (3, m/s),
  angular (3, rad/s) velocity of the base, both in the BASE frame, joint velocities]``.
  The base acceleration entries of ``a`` are the base's spatial acceleration in the base frame,
  and the first six entries of ``tau`` are the wrench [force (N), torque (N m)] on the base in
  the base frame (Saccon et al., Table 4).
* Gravity is ``gravity`` (m/s^2, world frame), default ``[0, 0, -9.81]``.
* Quaternions: a non-unit quaternion (``| |quat| - 1 | > 1e-6``) is rejected with ``ValueError``;
  within the tolerance it is normalized. Callers holding a noisy estimate should normalize first.
* External wrenches ``f_ext``: ``{link_name: [fx, fy, fz, nx, ny, nz]}`` acting on the link,
  expressed in the link frame about the link origin (N, N m).

Every call checks its inputs (size, finiteness, unit quaternion) and raises ``ValueError`` naming
the argument; the checks run inside the compiled kernels so they cost almost nothing.

A model owns preallocated workspaces: one ``RobotModel`` must not be used from two threads at
once (use :meth:`RobotModel.copy` for a second thread).

One module for one class: every method of :class:`RobotModel` checks its inputs against, and
calls the compiled core on, the arrays and workspaces its constructor binds; the kernels
themselves are the modules of ``wbc_dynamics.kernels``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from . import iwim as _iwim
from . import linearization as _linearization
from .description import RobotDescription
from .kernels import dynamics as dyn
from .kernels import world
from .kernels.linalg import bound_entry
from .model_view import _vector
from .urdf_loader import (
    CollisionBox,
    CollisionGeometry,
    CollisionSphere,
    ModelData,
    load_model,
    singular_joints,
)

STATUS_MESSAGES = {
    dyn.BAD_Q: "q contains NaN or inf",
    dyn.BAD_V: "{v} contains NaN or inf",
    dyn.BAD_A: "{a} contains NaN or inf",
    dyn.BAD_QUATERNION: "q: the base quaternion q[3:7] is not of unit norm (|1 - |quat|| > 1e-6); "
    "normalize it",
    dyn.BAD_FEXT: "f_ext contains NaN or inf",
    dyn.SINGULAR: "the joint-space inertia is singular: some joint moves no mass",
}

_FRAMES = ("world", "local")


_ND = np.ndarray
_SHAPE_T = (4, 4)
_F64 = np.dtype(np.float64)


class _LazyEntry:
    """Stands in for a kernel's bound entry point (:meth:`RobotModel._bound`) until its first
    call, then puts the entry point in its place on the model: a kernel nobody calls is never
    compiled."""

    __slots__ = ("attr", "kernel", "model")

    def __init__(self, model: RobotModel, kernel, attr: str) -> None:
        self.model, self.kernel, self.attr = model, kernel, attr

    def __call__(self, *args):
        entry = self.model._bound(self.kernel)
        setattr(self.model, self.attr, entry)
        return entry(*args)


def neutral_configuration(nq: int, floating_base: bool, lower: np.ndarray,
                          upper: np.ndarray) -> np.ndarray:
    """The neutral configuration of ``nq`` coordinates: a floating base at the origin with the
    identity orientation, the joints at 0 or at the nearest of their limits ``lower``, ``upper``
    when 0 is outside them."""
    q = np.zeros(nq)
    off = 0
    if floating_base:
        q[6] = 1.0
        off = 7
    q[off:] = np.clip(0.0, lower, upper)
    return q


#: models with more velocity dofs than this are warmed up (:meth:`RobotModel.warmup`) on a
#: small chain of the same kind instead of on themselves, so construction stays linear in links
WARMUP_PROBE_MAX_NV = 64

_PROBE_URDF = (
    '<robot name="warmup_probe">'
    + "".join(
        f'<link name="l{i}"><inertial><origin xyz="0 0 0.05"/><mass value="1"/>'
        '<inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        for i in range(4)
    )
    + "".join(
        f'<joint name="j{i}" type="{kind}"><parent link="l{i}"/><child link="l{i + 1}"/>'
        f'<origin xyz="0 0 0.1"/><axis xyz="{axis}"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for i, (kind, axis) in enumerate(
            (("revolute", "0 1 0"), ("prismatic", "1 0 0"), ("continuous", "0 0 1"))
        )
    )
    + "</robot>"
)
_PROBES: dict[bool, RobotModel] = {}


def _warmup_probe(floating_base: bool) -> RobotModel:
    """A 3-joint chain (revolute, prismatic, continuous) with or without a floating base,
    built once per process: what :meth:`RobotModel.warmup` runs the kernels on for large
    models."""
    probe = _PROBES.get(floating_base)
    if probe is None:
        probe = RobotModel.from_urdf(_PROBE_URDF, floating_base=floating_base, warmup=False)
        _PROBES[floating_base] = probe
    return probe


class RobotModel:
    """Rigid-body model of a robot loaded from URDF, with compiled dynamics algorithms.

    Build it with :meth:`from_urdf`. Attributes (read-only by convention):

    ``nq``, ``nv``; ``floating_base``; ``joint_names`` (movable joints in v order after the base);
    ``link_names``; ``position_lower``/``position_upper`` (rad or m), ``velocity_limit``,
    ``effort_limit`` (N m or N), arrays over ``joint_names`` (inf where the URDF gives none);
    ``total_mass`` (kg); ``gravity`` (m/s^2, world); ``collision_geometry`` (every URDF
    collision shape, :class:`~wbc_dynamics.description.CollisionGeometry`) and the derived
    ``collision_spheres``, ``collision_boxes``; ``description`` (the parsed URDF it was built
    from); ``load_warnings`` (inconsistent inertias, unresolved meshes, massless joints);
    ``locked_joints``; ``massless_joints`` (M is singular at the neutral configuration:
    ``minverse``/``aba`` raise wherever it is, naming the joints; ``"the floating base"`` for
    the free-flyer).
    """

    def __init__(self, data: ModelData, warmup: bool | str = True) -> None:
        self._data = data
        self.name = data.name
        self.nq = data.nq
        self.nv = data.nv
        self.floating_base = data.floating_base
        self.joint_names = list(data.joint_names)
        self.link_names = list(data.link_names)
        self.root_link = data.root_link
        self.position_lower = data.position_lower.copy()
        self.position_upper = data.position_upper.copy()
        self.velocity_limit = data.velocity_limit.copy()
        self.effort_limit = data.effort_limit.copy()
        self.total_mass = float(data.total_mass)
        self.collision_geometry: list[CollisionGeometry] = list(data.collision_geometry)
        self.collision_spheres: list[CollisionSphere] = list(data.collision_spheres)
        self.collision_boxes: list[CollisionBox] = list(data.collision_boxes)
        self.description: RobotDescription | None = data.description
        self.load_warnings: list[str] = list(data.warnings)
        self.locked_joints: dict[str, float] = dict(data.locked_joints)
        self.massless_joints: list[str] = list(data.massless_joints)
        self._gravity = np.array([0.0, 0.0, -9.81])
        # the loader's arrays with this model's own gravity; the kernels take them as one record
        self._arrays = data.arrays._replace(gravity=self._gravity)
        self._model = dyn.model_record(self._arrays)
        nb = data.arrays.parent.shape[0]
        nv = data.nv
        self._nb = nb
        # preallocated workspaces (no allocation inside the kernels): the recursions' per-body
        # quantities as one record (a kernel call passes few arguments) and their scratch
        self._rigid_body, self._SC = world.workspace(nb)
        # constant trailing arguments of the kernels, bundled once
        self._k_model = (self._model, self._rigid_body, self._SC)
        self._FP = np.zeros((nb + 1, 6, nv))
        self._J6 = np.zeros((6, nv))
        self._fext = np.zeros((nb, 6))
        self._zeros_nv = np.zeros(nv)
        self._eye3 = np.eye(3)
        self._origin = np.zeros(3)
        self._joint_index = {name: k for k, name in enumerate(self.joint_names)}
        # link -> (body, F) as the frame kernels take them, F (4, 3) = [R; p] the link frame in
        # its body: one dict hit per frame query
        self._frames = {
            link: (body, np.vstack([data.link_pose[link][0], data.link_pose[link][1]]))
            for link, body in data.link_body.items()
        }
        # shape tuples built once (the per-call checks compare with them)
        self._shape_q = (self.nq,)
        self._shape_v = (nv,)
        self._shape_J = (6, nv)
        self._shape_M = (nv, nv)
        self._entries: dict = {}
        q0, z = self.neutral(), np.zeros(nv)
        q_any, z_any = np.repeat(q0, 2)[::2], np.zeros(2 * nv)[::2]
        self._frames_any = np.vstack([self._eye3, self._origin])
        # bound at the first call (or warm-up): a kernel nobody calls is never compiled
        self._bind_args = {
            # q, v, a strided ('A' layout), also in the contact tick's calls: their contiguity
            # is left to the kernel (~0.1 us per vector of Python checks)
            world.rnea: (q_any, z_any, z_any, self._fext, False, True, z.copy(), *self._k_model),
            world.crba: (q_any, np.empty((nv, nv)), *self._k_model),  # q strided, as below
            world.minverse: (q_any, np.empty((nv, nv)), self._FP, *self._k_model),
            world.aba: (q0, z, z, self._fext, False, z.copy(), *self._k_model),
            world.point_bias: (
                self._model,
                q0,
                z,
                0,
                self._origin,
                self._eye3,
                False,
                self._rigid_body,
                self._SC,
                np.empty(6),
            ),
            world.points_kinematics: (
                self._model,
                q0,
                z,
                np.zeros(1, dtype=np.int64),
                np.zeros((1, 3)),
                self._rigid_body,
                self._SC,
                self._J6,
                np.zeros((1, 3)),
                np.zeros((1, 3, nv)),
                np.zeros((1, 3)),
            ),
            # q strided ('A' layout): the frame queries leave its contiguity to the kernel
            world.frame_jacobian: (
                q_any,
                0,
                self._frames_any,
                False,
                self._J6,
                self._model,
            ),
            world.frame_placement: (
                q_any,
                0,
                self._frames_any,
                np.empty((4, 4)),
                self._model,
            ),
        }
        # the hot paths call ``self._e_<kernel>``: an attribute, bound at the first call (~0.1 us
        # less than looking the entry point up per call)
        for kernel in self._bind_args:
            attr = "_e_" + kernel.__name__
            setattr(self, attr, _LazyEntry(self, kernel, attr))
        if warmup:
            self.warmup(warmup if isinstance(warmup, str) else "all")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(
        cls,
        source: str | os.PathLike | RobotDescription,
        floating_base: bool = False,
        warmup: bool | str = True,
        *,
        strict: bool = False,
        package_dirs: Sequence[str | os.PathLike] | None = None,
        locked_joints: Mapping[str, float] | None = None,
    ) -> RobotModel:
        """Load a model from a URDF file path, a URDF XML string (ROS ``robot_description``)
        or an already parsed :class:`~wbc_dynamics.description.RobotDescription`.

        ``floating_base=True`` makes the URDF's root link a free-flyer (6-DoF) base.
        ``strict=True`` rejects physically inconsistent inertias (by default they load as
        given with one :class:`~wbc_dynamics.description.URDFWarning` per link).
        ``package_dirs``: directories searched first for ``package://`` meshes.
        ``locked_joints``: ``{joint: position}`` (rad or m) of movable joints to fix there (like
        Pinocchio's ``buildReducedModel``). ``<mimic>`` joints are independent joints here.
        Kernels are compiled (or loaded from numba's cache) and run once here unless
        ``warmup=False``, so the first real call is as fast as the thousandth; a string
        warms only that scope of :meth:`warmup` ("dynamics", "control").

        Raises:
            URDFError: malformed dynamics content, naming the link/joint and attribute.
        """
        data = load_model(
            source,
            floating_base=floating_base,
            strict=strict,
            package_dirs=package_dirs,
            locked_joints=locked_joints,
        )
        return cls(data, warmup=warmup)

    def copy(self) -> RobotModel:
        """An independent model (own workspaces) sharing the immutable model arrays."""
        other = RobotModel(self._data, warmup=False)
        other.gravity = self.gravity.copy()
        return other

    def warmup(self, scope: str = "all") -> float:
        """Compile/load and run every kernel once; returns the seconds it took.

        ``scope="dynamics"`` leaves out the derivative / linearization kernels
        (:mod:`wbc_dynamics.linearization`, about half of a cold core compile);
        ``scope="control"`` compiles only what the controller calls from Python -- RNEA and
        M^-1 (its contact kernels compile their own kinematics) -- leaving out ABA, CRBA, the
        external-force variants and frame queries too: four fifths of a cold core compile.
        What is left out compiles at its first call."""
        if scope not in ("all", "dynamics", "control"):
            raise ValueError(f"scope: {scope!r} is not 'all', 'dynamics' or 'control'")
        if self.nv > WARMUP_PROBE_MAX_NV:
            # numba compiles per argument type, not per size: a small chain of the same kind
            # binds the same kernels, while running M^-1 and the dense derivatives on this
            # model would cost O(nv^2) memory and up to O(nv^3) time at construction
            return _warmup_probe(self.floating_base).warmup(scope)
        t0 = time.perf_counter()
        q = self.neutral()
        z = np.zeros(self.nv)
        self.rnea(q, z, z)
        if scope == "control":
            if not self.massless_joints:
                self.minverse(q)
            return time.perf_counter() - t0
        self.rnea(q, z, z, f_ext={self.link_names[-1]: np.zeros(6)})
        self.mass_matrix(q)
        try:  # a model with massless joints compiles these too, then reports M singular
            self.minverse(q)
            self.aba(q, z, z)
            self.aba(q, z, z, f_ext={self.link_names[-1]: np.zeros(6)})
        except ValueError:
            if not self.massless_joints:
                raise
        link = self.link_names[-1]
        self.frame_placement(q, link)
        self.jacobian(q, link)
        self.jacobian(q, link, frame="local")
        self.jacobian_dot_times_v(q, z, link)
        self.points_kinematics(q, z, [link], np.zeros((1, 3)))
        if scope == "dynamics":
            return time.perf_counter() - t0
        try:
            _linearization.warmup(self)
        except ValueError:
            if not self.massless_joints:
                raise
        return time.perf_counter() - t0

    @property
    def model_arrays(self) -> dyn.ModelArrays:
        """The model the kernels read, one named array per quantity (shapes, units and frames
        on :class:`~wbc_dynamics.kernels.dynamics.ModelArrays`); ``gravity`` is this model's.
        Read-only by contract: the arrays are shared by every copy of the model."""
        return self._arrays

    @property
    def kernel_model(self) -> dyn.ModelRecord:
        """:attr:`model_arrays` as the record every compiled kernel takes as ``model`` (one
        pointer to unbox per call; read its fields in compiled code only)."""
        return self._model

    @property
    def gravity(self) -> np.ndarray:
        """Gravity acceleration (m/s^2) in the world frame, default [0, 0, -9.81]."""
        return self._gravity

    @gravity.setter
    def gravity(self, value: ArrayLike) -> None:
        g = _vector(value, 3, "gravity")
        if not np.all(np.isfinite(g)):
            raise ValueError("gravity contains NaN or inf")
        self._gravity[:] = g  # in place: the kernels hold this array

    # ------------------------------------------------------------------ helpers
    def neutral(self) -> np.ndarray:
        """The neutral configuration: base at the origin with identity orientation, joints at 0
        (or at the nearest limit when 0 is outside the limits)."""
        return neutral_configuration(self.nq, self.floating_base, self.position_lower,
                                     self.position_upper)

    def joint_index(self, joint: str) -> int:
        """Index of a movable joint in ``joint_names`` (its v index is this plus 6 if floating)."""
        try:
            return self._joint_index[joint]
        except KeyError:
            raise ValueError(f"unknown joint '{joint}'; known: {self.joint_names}") from None

    def link_frame(self, link: str) -> tuple[int, np.ndarray, np.ndarray]:
        """(body index, R, p) of a link's frame in the frame of the body that carries it."""
        try:
            body, F = self._frames[link]
        except KeyError:
            raise ValueError(f"unknown link '{link}'; known links: {self.link_names}") from None
        return body, F[0:3].copy(), F[3].copy()

    def _bound(self, kernel):
        """``kernel``'s compiled entry point for this model's argument types (bound at warm-up,
        see :func:`wbc_dynamics.kernels.linalg.bound_entry`): skips numba's per-call typing of
        the ~14 arguments, half of a single call's cost. Only for the kernels whose per-call
        arrays the public methods have checked (float64, right shape, and C-contiguous unless
        ``_bind_args`` binds that argument strided: an entry point does not check types)."""
        entry = self._entries.get(kernel)
        if entry is None:
            args = self._bind_args.get(kernel)
            if args is None:
                return kernel
            entry = self._entries[kernel] = bound_entry(kernel, args)
        return entry

    def _raise(
        self, status: int, v: str = "v", a: str = "a", q: np.ndarray | None = None
    ) -> None:
        message = STATUS_MESSAGES[status].format(v=v, a=a)
        if status == dyn.SINGULAR:
            # the joints at fault at this q (a kernel only reports that a pivot failed), else
            # those found at the neutral configuration when the model was loaded
            found = [name for name, _ in singular_joints(self._data, q)] if q is not None else []
            names = ", ".join(repr(name) for name in found or self.massless_joints)
            if names:
                message += f" (the URDF's joint(s) {names} move no mass; see locked_joints)"
        raise ValueError(message)

    def _check_regular(self, q: np.ndarray) -> None:
        """ValueError naming the joints if M(q) is singular; for models singular at the neutral
        configuration (``massless_joints``) after a kernel returned OK: the kernels' pivot test
        (> 0) passes a pivot that is zero but for rounding, and M^-1 or ABA would then return
        values of order 1e16 (a Python pass, about 50 us per body: only such models pay)."""
        if singular_joints(self._data, q):
            self._raise(dyn.SINGULAR, q=q)

    def _external_forces(self, f_ext: Mapping[str, object] | None) -> bool:
        if f_ext is None:
            return False
        fext = self._fext
        fext[:] = 0.0
        for link, wrench in f_ext.items():
            w = _vector(wrench, 6, f"f_ext['{link}']")
            body, R, p = self.link_frame(link)
            if body < 0:
                continue  # a wrench on the fixed world does nothing
            f = R @ w[:3]
            n = R @ w[3:] + np.cross(p, f)
            fext[body, :3] += f
            fext[body, 3:] += n
        return True

    # ------------------------------------------------------------------ dynamics
    def rnea(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, f_ext: Mapping[str, object] | None = None,
    ) -> np.ndarray:
        """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) - J^T f_ext (RNEA).

        Floating base: the first six entries are the base wrench in the base frame (Saccon et al.,
        Table 4, extended inverse dynamics). Units: N m / N (joints), N and N m (base).
        """
        # strided vectors are fine: the kernel takes any layout
        sv = self._shape_v
        if not (type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q):
            q = _vector(q, self.nq, "q")
        if not (type(v) is _ND and v.dtype is _F64 and v.shape == sv):
            v = _vector(v, self.nv, "v")
        if not (type(a) is _ND and a.dtype is _F64 and a.shape == sv):
            a = _vector(a, self.nv, "a")
        use_fext = False if f_ext is None else self._external_forces(f_ext)
        tau = np.empty(sv)
        st = self._e_rnea(q, v, a, self._fext, use_fext, True, tau, *self._k_model)
        if st:
            self._raise(st)
        return tau

    def nonlinear_effects(self, q: ArrayLike, v: ArrayLike) -> np.ndarray:
        """h(q, v) = C(q, v) v + g(q): Coriolis, centrifugal and gravity terms (N m / N)."""
        return self.rnea(q, v, self._zeros_nv)

    def gravity_torques(self, q: ArrayLike) -> np.ndarray:
        """g(q): generalized gravity forces (N m / N)."""
        return self.rnea(q, self._zeros_nv, self._zeros_nv)

    def mass_matrix(self, q: ArrayLike) -> np.ndarray:
        """Joint-space inertia matrix M(q) (nv x nv) by the composite-rigid-body algorithm."""
        if not (type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q):
            q = _vector(q, self.nq, "q")  # (strided q is fine here: the kernel takes any layout)
        M = np.empty(self._shape_M)
        st = self._e_crba(q, M, *self._k_model)
        if st:
            self._raise(st)
        return M

    def center_of_mass(
        self, q: ArrayLike, v: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Centre of mass of a floating-base robot: ``(c, c_dot, J_com)``.

        ``c`` (3,) [m] and ``c_dot`` (3,) [m/s] (None without ``v``) in world; ``J_com`` (3, nv)
        with ``c_dot = J_com v`` (v: base twist in the base frame, then joint rates). Read off
        the composite rigid body of the mass matrix rather than summed per link: the base rows
        of ``M v`` are the total linear momentum in base axes, ``M[0:3] v = R^T m c_dot``, and
        ``M[0:3, 3:6] = -m [c_b]x`` with ``c_b`` the CoM in the base frame. The CoM
        acceleration follows as ``c_ddot = R (M[0:3] a + (h - g)[0:3]) / m`` (Newton's law for
        the whole robot; :meth:`nonlinear_effects`, :meth:`gravity_torques`).
        """
        if not self.floating_base:
            raise ValueError("center_of_mass: needs a floating-base model (its base rows of M)")
        M = self.mass_matrix(q)
        m = float(M[0, 0])
        q = np.asarray(q, dtype=np.float64)
        R = self.frame_placement(q, self.root_link)[:3, :3]
        S = -M[0:3, 3:6] / m  # [c_b]x
        c_b = np.array([S[2, 1], S[0, 2], S[1, 0]])
        c = q[0:3] + R @ c_b
        J = R @ M[0:3, :] / m
        return c, (None if v is None else J @ np.asarray(v, dtype=np.float64)), J

    def mass_matrix_unit_vector(self, q: ArrayLike) -> np.ndarray:
        """M(q) by the unit-vector method (Caron): column j = ID(q, 0, e_j) - ID(q, 0, 0)
        with gravity off. n inverse-dynamics calls: a reference, not the fast path."""
        if not (
            type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q and q.flags.c_contiguous
        ):
            q = _vector(q, self.nq, "q")
        nv = self.nv
        M = np.empty((nv, nv))
        e = np.zeros(nv)
        col = np.empty(nv)
        for j in range(nv):
            e[:] = 0.0
            e[j] = 1.0
            st = self._e_rnea(q, self._zeros_nv, e, self._fext, False, False, col, *self._k_model)
            if st:
                self._raise(st)
            M[:, j] = col
        return M

    def minverse(self, q: ArrayLike) -> np.ndarray:
        """M(q)^-1 (nv x nv) by the analytical three-pass algorithm (Carpentier, Alg. 1; moving
        base: IMMAmb, Saccon et al., Table 9). M is never formed or factored."""
        if not (type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q):
            q = _vector(q, self.nq, "q")  # (strided q is fine here: the kernel takes any layout)
        Minv = np.empty(self._shape_M)
        st = self._e_minverse(q, Minv, self._FP, *self._k_model)
        if st:
            self._raise(st, q=q)
        if self.massless_joints:
            self._check_regular(q)
        return Minv

    def aba(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, f_ext: Mapping[str, object] | None = None,
    ) -> np.ndarray:
        """Forward dynamics a = M^-1 (tau - h(q, v) + J^T f_ext) by the articulated-body algorithm.

        Floating base: ``tau[:6]`` is the wrench applied to the base (zero for an unactuated
        base) and ``a[:6]`` the base spatial acceleration in the base frame.
        """
        sv = self._shape_v
        if not (
            type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q and q.flags.c_contiguous
        ):
            q = _vector(q, self.nq, "q")
        if not (type(v) is _ND and v.dtype is _F64 and v.shape == sv and v.flags.c_contiguous):
            v = _vector(v, self.nv, "v")
        if not (
            type(tau) is _ND and tau.dtype is _F64 and tau.shape == sv and tau.flags.c_contiguous
        ):
            tau = _vector(tau, self.nv, "tau")
        use_fext = False if f_ext is None else self._external_forces(f_ext)
        ddq = np.empty(sv)
        st = self._e_aba(q, v, tau, self._fext, use_fext, ddq, *self._k_model)
        if st:
            self._raise(st, a="tau", q=q)
        if self.massless_joints:
            self._check_regular(q)
        return ddq

    # ------------------------------------------------------------------ kinematics
    def _point(self, link: str, point) -> tuple[int, np.ndarray]:
        """(body, F): the link frame F (4, 3) = [R; p] in its body, moved to ``point`` (m, link
        frame) if given."""
        frame = self._frames.get(link)
        if frame is None:
            self.link_frame(link)  # raises, naming the link
        if point is None:
            return frame
        r = _vector(point, 3, "point")
        if not np.all(np.isfinite(r)):
            raise ValueError("point contains NaN or inf")
        body, F = frame
        F = F.copy()
        F[3] += F[0:3] @ r
        return body, F

    def frame_placement(self, q: ArrayLike, link: str) -> np.ndarray:
        """4x4 homogeneous transform of ``link``'s frame in the world (m)."""
        if not (type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q):
            q = _vector(q, self.nq, "q")  # (strided q is fine here: the kernel takes any layout)
        try:
            body, F = self._frames[link]
        except KeyError:
            self.link_frame(link)  # raises, naming the link
        T = np.empty(_SHAPE_T)
        st = self._e_frame_placement(q, body, F, T, self._model)
        if st:
            self._raise(st)
        return T

    def jacobian(
        self, q: ArrayLike, link: str, point: ArrayLike | None = None, frame: str = "world",
    ) -> np.ndarray:
        """Jacobian (6 x nv) of a point of ``link``: rows [linear (m/s); angular (rad/s)] per v.

        ``point``: offset (m) in the link frame, default the link origin. ``frame="world"``:
        velocities in world-aligned axes (Pinocchio LOCAL_WORLD_ALIGNED); ``"local"``: in the
        link frame's axes (Pinocchio LOCAL).
        """
        if frame == "world":
            local = False
        elif frame == "local":
            local = True
        else:
            raise ValueError(f"frame must be one of {_FRAMES}, got {frame!r}")
        if not (type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q):
            q = _vector(q, self.nq, "q")  # (strided q is fine here: the kernel takes any layout)
        if point is None:
            try:
                body, F = self._frames[link]
            except KeyError:
                self.link_frame(link)  # raises, naming the link
        else:
            body, F = self._point(link, point)
        J = np.empty(self._shape_J)
        st = self._e_frame_jacobian(q, body, F, local, J, self._model)
        if st:
            self._raise(st)
        return J

    def jacobian_dot_times_v(
        self, q: ArrayLike, v: ArrayLike, link: str, point: ArrayLike | None = None,
        frame: str = "world",
    ) -> np.ndarray:
        """Bias acceleration J̇(q, v) v (6,) of a point of ``link``: its classical acceleration
        when the joint accelerations are zero (no gravity), rows [linear (m/s^2); angular
        (rad/s^2)], axes as in :meth:`jacobian`."""
        sv = self._shape_v
        if frame not in _FRAMES:
            raise ValueError(f"frame must be one of {_FRAMES}, got {frame!r}")
        if not (
            type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q and q.flags.c_contiguous
        ):
            q = _vector(q, self.nq, "q")
        if not (type(v) is _ND and v.dtype is _F64 and v.shape == sv and v.flags.c_contiguous):
            v = _vector(v, self.nv, "v")
        body, F = self._point(link, point)
        r, R = F[3], F[0:3]
        out = np.empty(6)
        st = self._e_point_bias(
            self._model,
            q,
            v,
            body,
            r,
            R,
            frame == "local",
            self._rigid_body,
            self._SC,
            out,
        )
        if st:
            self._raise(st)
        return out

    def points_kinematics(
        self, q: ArrayLike, v: ArrayLike, links: Sequence[str], points: ArrayLike,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Many contact points after a single kinematics pass.

        ``links``: k link names; ``points``: (k, 3) offsets (m) in the link frames. Returns world
        positions (k, 3), world-aligned linear Jacobians (k, 3, nv) and linear J̇v (k, 3).
        For a hot loop, resolve the points once with :meth:`link_frame` and call
        ``wbc_dynamics.kernels.kinematics.points_kinematics`` directly.
        """
        if not (
            type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q and q.flags.c_contiguous
        ):
            q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(links) != pts.shape[0]:
            raise ValueError("links and points must have the same length")
        bodies = np.empty(len(links), dtype=np.int64)
        rs = np.empty((len(links), 3))
        for k, link in enumerate(links):
            bodies[k], F = self._point(link, pts[k])
            rs[k] = F[3]
        k = len(links)
        pos = np.empty((k, 3))
        J = np.empty((k, 3, self.nv))
        bias = np.empty((k, 3))
        st = self._e_points_kinematics(
            self._model,
            q,
            v,
            bodies,
            rs,
            self._rigid_body,
            self._SC,
            self._J6,
            pos,
            J,
            bias,
        )
        if st:
            self._raise(st)
        return pos, J, bias

    # ------------------------------------------------------------------ misc
    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
        """Configuration reached from q by moving with constant velocity v for dt seconds
        (the base on SE(3), so the quaternion stays unit)."""
        if not (
            type(q) is _ND and q.dtype is _F64 and q.shape == self._shape_q and q.flags.c_contiguous
        ):
            q = _vector(q, self.nq, "q")
        v = _vector(v, self.nv, "v")
        out = q.copy()
        if not self.floating_base:
            out += v * dt
            return out
        from .lie import se3_integrate

        out[:7] = se3_integrate(q[:7], v[:6] * dt)
        out[7:] += v[6:] * dt
        return out

    # ------------------------------------------------------------------ derivatives
    def rnea_derivatives(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, *, gravity: bool = True,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Analytical derivatives of inverse dynamics ``(dtau_dq, dtau_dv, M)`` on the tangent
        ``[dH (6, left-trivialized), ds]`` (Saccon et al., Tables 5-8); see
        :func:`wbc_dynamics.linearization.rnea_derivatives`."""
        return _linearization.rnea_derivatives(self, q, v, a, gravity=gravity)

    def aba_derivatives(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Derivatives of forward dynamics ``(dqdd_dq, dqdd_dv, Minv)``, dFD = -M^-1 dID; see
        :func:`wbc_dynamics.linearization.aba_derivatives`."""
        return _linearization.aba_derivatives(self, q, v, tau)

    def linearize(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, dt: float | None = None,
        input_matrix: ArrayLike | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """State-space ``(A, B)`` on the tangent ``[dq, dv]``, continuous or (with ``dt``)
        zero-order-hold discrete; see :func:`wbc_dynamics.linearization.linearize`."""
        return _linearization.linearize(self, q, v, tau, dt, input_matrix)

    def state_difference(self, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
        """Tangent vector dq with q1 = q0 (+) dq (SE(3) log for the base): inverse of
        :meth:`integrate` with dt = 1."""
        return _linearization.state_difference(self, q0, q1)

    def iwim(self, q: ArrayLike, B: ArrayLike) -> np.ndarray:
        """Inertia-weighted input matrix M^-1 B by O(n) recursions, never forming M^-1
        (Krög et al., eqs. (8)-(9)); see :func:`wbc_dynamics.iwim.iwim`."""
        return _iwim.iwim(self, q, B)

    def free_acceleration(self, q: ArrayLike, v: ArrayLike) -> np.ndarray:
        """Drift acceleration qdd_0 = -M^-1 h(q, v) with zero input (Krög et al.)."""
        return _iwim.free_acceleration(self, q, v)

    def task_space_input(
        self, q: ArrayLike, v: ArrayLike, J: ArrayLike, Jdot_v: ArrayLike,
        task_acceleration: ArrayLike, B: ArrayLike, *, damping: float = 0.0,
        lower: ArrayLike | None = None, upper: ArrayLike | None = None, info: dict | None = None,
    ) -> np.ndarray:
        """Least-squares input for a commanded task acceleration (Krög et al., eq. (3)), with
        optional Tikhonov ``damping`` and input bounds (osqp); see
        :func:`wbc_dynamics.iwim.task_space_input`."""
        return _iwim.task_space_input(
            self,
            q,
            v,
            J,
            Jdot_v,
            task_acceleration,
            B,
            damping=damping,
            lower=lower,
            upper=upper,
            info=info,
        )

    def __repr__(self) -> str:
        kind = "floating" if self.floating_base else "fixed"
        return (
            f"RobotModel('{self.name}', {kind} base, nq={self.nq}, nv={self.nv}, "
            f"mass={self.total_mass:.3f} kg)"
        )
