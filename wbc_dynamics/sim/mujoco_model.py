"""A MuJoCo plant built from the same parsed robot description the controller's model uses.

:class:`MujocoPlant` simulates a robot whose MuJoCo model is the translation of its URDF by
:mod:`wbc_dynamics.sim.mjcf` (the URDF parsed once, :func:`wbc_dynamics.description.parse_urdf`;
pass ``RobotModel.description`` to share the controller model's parse), so the plant's masses,
inertias and kinematics are the URDF's (``test/test_sim_mujoco_model.py`` checks MuJoCo's mass
matrix and bias forces against Pinocchio and the dynamics core to ~1e-9). The ground, the free
bodies and the friction presets (:class:`GroundOptions`, :class:`FreeBody`,
:data:`~wbc_dynamics.sim.mjcf.HIGH_FRICTION`) are defined there and importable from here.

Conventions. The controller's (and Pinocchio's) floating base uses ``q = [p, quat(x, y, z, w),
joints]`` and ``v = [v_lin, w]`` both in the base frame; MuJoCo's free joint uses ``qpos = [p,
quat(w, x, y, z)]`` and ``qvel = [v_lin in world, w in base]``. :class:`MujocoPlant` converts both
ways, and reorders joints by name into the order the caller asks for.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence

import numpy as np

from ..description import RobotDescription, parse_urdf
from .mjcf import (
    HIGH_FRICTION,
    LOW_FRICTION,
    FreeBody,
    GroundOptions,
    _body_name,
    _description,
    build_mjcf,
    plant_description,  # noqa: F401 - importable from here too
)

try:  # pragma: no cover - exercised whenever mujoco is installed
    import mujoco
except ImportError:  # pragma: no cover
    mujoco = None

__all__ = [
    "HIGH_FRICTION",
    "LOW_FRICTION",
    "FreeBody",
    "GroundOptions",
    "MujocoPlant",
    "build_mjcf",
    "parse_urdf",
    "pose_in_link",
]


def _quat_xyzw_to_rot(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


class MujocoPlant:
    """A MuJoCo simulation of a URDF robot, spoken to in the controller's conventions.

    State in/out uses the core's convention (``q = [p, quat xyzw, joints]``, ``v = [v_lin, w]``
    in the base frame, then joints) with joints in ``joint_order``. Torques are joint efforts [N m
    or N] in the same order, clamped by MuJoCo to the URDF effort limits.

    Args:
        urdf: URDF path or XML string (the controller's ``robot_description``), or the parsed
            :class:`~wbc_dynamics.description.RobotDescription` of the controller's model
            (``RobotModel.description``), so that plant and model come from one parse.
        floating_base: free-flying root link.
        joint_order: joint names in the caller's order (default: URDF depth-first order).
        ground, free_bodies, collision_links, joint_limits, joint_dynamics, mimic, package_dirs:
            see :func:`build_mjcf`.
    """

    def __init__(
        self,
        urdf: str | os.PathLike | RobotDescription,
        floating_base: bool = True,
        joint_order: list[str] | None = None,
        ground: GroundOptions | None = None,
        free_bodies: tuple[FreeBody, ...] = (),
        collision_links: list[str] | None = None,
        joint_limits: bool = True,
        *,
        joint_dynamics: bool = True,
        mimic: bool = False,
        package_dirs: Sequence[str | os.PathLike] | None = None,
    ) -> None:
        if mujoco is None:
            raise ImportError("MujocoPlant needs the 'mujoco' package (pip install mujoco)")
        #: the parsed robot description the plant was built from
        self.description = _description(urdf, package_dirs)
        self.parsed = self.description  # (former name)
        self.ground = ground or GroundOptions()
        self.floating_base = bool(floating_base)
        self._mjcf_args = dict(
            urdf=self.description, floating_base=floating_base, ground=self.ground,
            free_bodies=free_bodies, collision_links=collision_links,
            joint_limits=joint_limits, joint_dynamics=joint_dynamics, mimic=mimic)
        self.xml = build_mjcf(**self._mjcf_args)
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        joints = self.description.joints
        urdf_joints = [j.name for j in self.description.joints_in_tree_order() if j.movable]
        self.joint_names = list(joint_order) if joint_order is not None else urdf_joints
        missing = [n for n in self.joint_names if n not in urdf_joints]
        if missing or len(set(self.joint_names)) != len(urdf_joints):
            raise ValueError(
                f"joint_order: must be a permutation of the URDF's movable joints; "
                f"unknown {missing}, expected {urdf_joints}"
            )
        m = self.model
        jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names]
        self._qadr = np.array([m.jnt_qposadr[i] for i in jid], dtype=np.int64)
        self._dadr = np.array([m.jnt_dofadr[i] for i in jid], dtype=np.int64)
        aid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in self.joint_names]
        self._act = np.array(aid, dtype=np.int64)
        self.n_joints = len(self.joint_names)
        self.nq = self.n_joints + (7 if self.floating_base else 0)
        self.nv = self.n_joints + (6 if self.floating_base else 0)
        self.effort_limit = np.array([joints[n].effort for n in self.joint_names])
        root = _body_name(self.description.root)
        self._root_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, root)
        self._free_body_names = [fb.name for fb in free_bodies]
        self._ground_geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "ground")
        self._f6 = np.zeros(6)
        self._M = np.zeros((m.nv, m.nv))
        mujoco.mj_forward(m, self.data)

    def visual_xml(self) -> str:
        """The plant's MJCF with the URDF's ``<visual>`` geometry added as massless geoms that
        do not collide (:func:`~wbc_dynamics.sim.mjcf.build_mjcf` ``visuals=True``): the same
        bodies, joints and inertias, for rendering. Raises ``ValueError`` / ``OSError`` when
        the visuals cannot be read (a URDF given as a string has no file to read them from)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warned about when the plant was built
            return build_mjcf(**self._mjcf_args, visuals=True)

    # ---- state conversion -------------------------------------------------------------------
    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        """Integration step [s]."""
        return float(self.model.opt.timestep)

    def ground_clearance(self, distmax: float = 0.5) -> float:
        """Signed distance [m] from the robot's collision geometry to the ground plane at the
        current state (MuJoCo's ``mj_geomDistance`` on every robot geom; negative: penetration);
        ``inf`` without a ground plane or if nothing is within ``distmax``."""
        m, d = self.model, self.data
        if self._ground_geom < 0:
            return math.inf
        fromto = np.zeros(6)
        best = math.inf
        for g in range(m.ngeom):
            b = int(m.geom_bodyid[g])
            if g == self._ground_geom or b == 0 or m.body_rootid[b] != m.body_rootid[
                    self._root_body] or not (m.geom_contype[g] or m.geom_conaffinity[g]):
                continue
            dist = mujoco.mj_geomDistance(m, d, g, self._ground_geom, distmax, fromto)
            if dist < distmax:
                best = min(best, float(dist))
        return best

    def place_on_ground(self, q: np.ndarray) -> np.ndarray:
        """``q`` (floating base) with the base height changed so that the plant's lowest
        collision geometry just touches the ground, set as the state at rest, and returned.

        The controller's standing height comes from its contact points, which may differ from
        the plant's geometry (a round foot mesh's containing sphere reaches up to 16 % of its
        radius below the mesh: 3.2 mm on go2); a simulation starts with the feet on the ground,
        not dropping onto it. Fixed base or no ground: ``q`` unchanged."""
        q = np.array(q, dtype=float)
        self.set_state(q, np.zeros(self.nv))
        if self.floating_base:
            gap = self.ground_clearance()
            # within 1 um it already stands on the ground: unchanged (a rounding-level shift would
            # only perturb the start -- talos standing is that sensitive, see docs/robots.md)
            if math.isfinite(gap) and abs(gap) > 1e-6:
                q[2] -= gap
                self.set_state(q, np.zeros(self.nv))
        return q

    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Set the robot state (core convention, joints in ``joint_order``) and run forward."""
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if q.shape != (self.nq,) or v.shape != (self.nv,):
            raise ValueError(
                f"q/v: expected shapes ({self.nq},)/({self.nv},), got {q.shape}/{v.shape}"
            )
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise ValueError("q/v: non-finite entries")
        d = self.data
        if self.floating_base:
            quat = q[3:7] / np.linalg.norm(q[3:7])
            d.qpos[0:3] = q[0:3]
            d.qpos[3:7] = (quat[3], quat[0], quat[1], quat[2])
            R = _quat_xyzw_to_rot(quat)
            d.qvel[0:3] = R @ v[0:3]
            d.qvel[3:6] = v[3:6]
            d.qpos[self._qadr] = q[7:]
            d.qvel[self._dadr] = v[6:]
        else:
            d.qpos[self._qadr] = q
            d.qvel[self._dadr] = v
        mujoco.mj_forward(self.model, d)

    def get_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Current ``(q, v)`` in the core's convention (copies)."""
        d = self.data
        if not self.floating_base:
            return d.qpos[self._qadr].copy(), d.qvel[self._dadr].copy()
        q = np.empty(self.nq)
        v = np.empty(self.nv)
        w, x, y, z = d.qpos[3:7]
        quat = np.array([x, y, z, w]) / math.sqrt(w * w + x * x + y * y + z * z)
        q[0:3] = d.qpos[0:3]
        q[3:7] = quat
        q[7:] = d.qpos[self._qadr]
        R = _quat_xyzw_to_rot(quat)
        v[0:3] = R.T @ d.qvel[0:3]
        v[3:6] = d.qvel[3:6]
        v[6:] = d.qvel[self._dadr]
        return q, v

    def _vel_map(self) -> np.ndarray:
        """Map core velocity -> MuJoCo qvel (robot dofs only): qvel = T v."""
        T = np.zeros((self.model.nv, self.nv))
        if self.floating_base:
            w, x, y, z = self.data.qpos[3:7]
            T[0:3, 0:3] = _quat_xyzw_to_rot(np.array([x, y, z, w]))
            T[3:6, 3:6] = np.eye(3)
            T[self._dadr, np.arange(6, self.nv)] = 1.0
        else:
            T[self._dadr, np.arange(self.nv)] = 1.0
        return T

    def _full_mass(self) -> None:
        """Dense joint-space inertia into ``self._M`` (MuJoCo 3.x and 4.x signatures)."""
        try:
            mujoco.mj_fullM(self.model, self.data, self._M)  # MuJoCo >= 4: (m, d, dst)
        except TypeError:
            mujoco.mj_fullM(self.model, self._M, self.data.qM)  # MuJoCo 3.x: (m, dst, qM)

    def mass_matrix(self) -> np.ndarray:
        """MuJoCo's joint-space inertia at the current state, mapped to the core's velocity
        coordinates: ``M_core = T^T M_mj T`` [kg, kg m, kg m^2]."""
        self._full_mass()
        T = self._vel_map()
        return T.T @ self._M @ T

    def nonlinear_effects(self) -> np.ndarray:
        """MuJoCo's bias force ``C v + g`` mapped to the core's coordinates.

        With ``qvel = T v``, ``qacc = T a + Tdot v`` and ``Tdot v = [R (w x v_lin), 0]``, so
        ``h_core = T^T (h_mj + M_mj Tdot v)``.
        """
        self._full_mass()
        T = self._vel_map()
        extra = np.zeros(self.model.nv)
        if self.floating_base:
            _, v = self.get_state()
            extra[0:3] = T[0:3, 0:3] @ np.cross(v[3:6], v[0:3])
        return T.T @ (self.data.qfrc_bias + self._M @ extra)

    # ---- stepping -----------------------------------------------------------------------------
    def step(self, tau: np.ndarray, n: int = 1) -> None:
        """Apply joint efforts ``tau`` (``joint_order``; clamped to effort limits) for ``n``
        steps. Non-finite entries are replaced by zero (a robot's drive would reject them)."""
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.n_joints,):
            raise ValueError(f"tau: expected shape ({self.n_joints},), got {tau.shape}")
        self.data.ctrl[self._act] = np.where(np.isfinite(tau), tau, 0.0)
        for _ in range(n):
            mujoco.mj_step(self.model, self.data)

    def applied_torques(self) -> np.ndarray:
        """The joint efforts MuJoCo actually applied on the last step (after clamping)."""
        return self.data.actuator_force[self._act].copy()

    # ---- contact measurement ----------------------------------------------------------------
    def contacts(self) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
        """Active contacts as ``(body_a, body_b, point_world, force_on_a_world)``.

        ``body_a`` is the robot/free body the force acts on (``"ground"`` never appears as
        body_a); the force is the total contact force (normal + friction) [N] in world axes.
        """
        m, d = self.model, self.data
        out = []
        for i in range(d.ncon):
            c = d.contact[i]
            mujoco.mj_contactForce(m, d, i, self._f6)
            frame = c.frame.reshape(3, 3)
            f_on_geom2 = frame.T @ self._f6[0:3]  # normal points from geom1 to geom2
            b1 = m.body(m.geom_bodyid[c.geom1]).name
            b2 = m.body(m.geom_bodyid[c.geom2]).name
            n1 = "ground" if c.geom1 == self._ground_geom else (b1 or "world")
            n2 = "ground" if c.geom2 == self._ground_geom else (b2 or "world")
            if n2 != "ground":
                out.append((n2, n1, c.pos.copy(), f_on_geom2))
            if n1 != "ground":
                out.append((n1, n2, c.pos.copy(), -f_on_geom2))
        return out

    def link_contact_forces(self) -> dict[str, np.ndarray]:
        """Total contact force [N] on each robot link (world axes) from all contacts."""
        out: dict[str, np.ndarray] = {}
        for body, _, _, f in self.contacts():
            if body in self.parsed.links:
                out[body] = out.get(body, np.zeros(3)) + f
        return out

    def link_contact_wrenches_local(self) -> dict[str, np.ndarray]:
        """Contact wrench [force (N), torque (N m)] on each robot link, in the LINK frame about
        the link origin -- the ``f_ext`` convention of the core's ``rnea`` (used by ID(t-1))."""
        m, d = self.model, self.data
        out: dict[str, np.ndarray] = {}
        for body, _, pt, f in self.contacts():
            if body not in self.parsed.links:
                continue
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body)
            R = d.xmat[bid].reshape(3, 3)
            r = pt - d.xpos[bid]
            w = np.concatenate([R.T @ f, R.T @ np.cross(r, f)])
            out[body] = out.get(body, np.zeros(6)) + w
        return out

    def total_normal_force(self, against: str = "ground") -> float:
        """Sum of contact normal forces [N] between the robot and ``against`` ("ground" or a
        free body's name): the l1-norm of normal forces compared in Sec. 8.2."""
        total = 0.0
        m, d = self.model, self.data
        if against == "ground":
            target = {self._ground_geom}
        else:
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, against)
            if bid < 0:
                raise ValueError(f"against: no ground or body named {against!r}")
            target = {g for g in range(m.ngeom) if m.geom_bodyid[g] == bid}
        for i in range(d.ncon):
            c = d.contact[i]
            if c.geom1 not in target and c.geom2 not in target:
                continue
            if against != "ground" and self._ground_geom in (c.geom1, c.geom2):
                continue
            mujoco.mj_contactForce(m, d, i, self._f6)
            total += abs(self._f6[0])
        return total

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Root link position [m] and orientation quaternion (x, y, z, w) in world."""
        d = self.data
        w, x, y, z = d.xquat[self._root_body]
        return d.xpos[self._root_body].copy(), np.array([x, y, z, w])

    @property
    def total_mass(self) -> float:
        """The robot's mass [kg] (its bodies; not the free objects)."""
        m = self.model
        free = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in self._free_body_names}
        return float(sum(m.body_mass[b] for b in range(1, m.nbody)
                         if b not in free and m.body_rootid[b] not in free))

    def set_base_force(self, force: np.ndarray) -> None:
        """An external force [N] (world axes) on the root body at its centre of mass, held for
        every following step until set again (zero: none) -- a push."""
        self.data.xfrc_applied[self._root_body, 0:3] = force
        self.data.xfrc_applied[self._root_body, 3:6] = 0.0

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Any body's position [m] and rotation matrix in world (e.g. a free body)."""
        bid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        if bid < 0:
            raise ValueError(f"body: no body named {name!r}")
        return self.data.xpos[bid].copy(), self.data.xmat[bid].reshape(3, 3).copy()

    def free_body_state(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A free body's ``(q, v)`` in the core's convention (pos, quat xyzw; v_lin, w in body
        frame)."""
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, f"{name}__free")
        if jid < 0:
            raise ValueError(f"free body: no free body named {name!r}")
        qa, da = self.model.jnt_qposadr[jid], self.model.jnt_dofadr[jid]
        pos = self.data.qpos[qa : qa + 3].copy()
        w, x, y, z = self.data.qpos[qa + 3 : qa + 7]
        quat = np.array([x, y, z, w])
        R = _quat_xyzw_to_rot(quat)
        v = np.concatenate([R.T @ self.data.qvel[da : da + 3], self.data.qvel[da + 3 : da + 6]])
        return np.concatenate([pos, quat]), v

    def set_free_body_state(self, name: str, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """Place a free body (core convention, see :meth:`free_body_state`)."""
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, f"{name}__free")
        if jid < 0:
            raise ValueError(f"free body: no free body named {name!r}")
        qa, da = self.model.jnt_qposadr[jid], self.model.jnt_dofadr[jid]
        q = np.asarray(q, float)
        quat = q[3:7] / np.linalg.norm(q[3:7])
        self.data.qpos[qa : qa + 3] = q[0:3]
        self.data.qpos[qa + 3 : qa + 7] = (quat[3], quat[0], quat[1], quat[2])
        vv = np.zeros(6) if v is None else np.asarray(v, float)
        self.data.qvel[da : da + 3] = _quat_xyzw_to_rot(quat) @ vv[0:3]
        self.data.qvel[da + 3 : da + 6] = vv[3:6]
        mujoco.mj_forward(self.model, self.data)


def pose_in_link(model, q: np.ndarray, link: str, pose: Sequence[float]) -> list[float]:
    """World pose ([x, y, z] m + [qx, qy, qz, qw]) of a frame whose pose in ``link``'s frame is
    ``pose`` (same layout), at the configuration ``q`` of ``model`` (a RobotModel: the
    controller's own kinematics; e.g. a grasped object placed in the hand)."""
    T = np.asarray(model.frame_placement(q, link))
    p = np.asarray(pose, dtype=float)
    x, y, z, w = p[3:7] / np.linalg.norm(p[3:7])
    R_local = np.empty(9)
    mujoco.mju_quat2Mat(R_local, np.array([w, x, y, z]))
    R = T[:3, :3] @ R_local.reshape(3, 3)
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, R.reshape(-1))
    return [*(T[:3, :3] @ p[:3] + T[:3, 3]), quat[1], quat[2], quat[3], quat[0]]
