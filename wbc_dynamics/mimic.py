"""Coupled ``<mimic>`` joints: a model whose mimic joints follow their leaders.

By default (``RobotModel.from_urdf``) a URDF's ``<mimic>`` joints are independent joints, like
Pinocchio's URDF parser without ``mimic=True``. :class:`MimicModel` is the coupled option, the
counterpart of ``pinocchio.buildModelFromUrdf(path, mimic=True)``: each mimic joint follows its
leader, ``q_mimic = multiplier * q_leader + offset``, so it leaves ``q`` and ``v`` (nv shrinks
by one per mimic joint).

The coupling is linear with a constant Jacobian G (``v_full = G v``, rows of mimic joints =
multiplier in the leader's column), so on the independent model (``full``):

* inverse dynamics ``tau = G^T rnea_full(q_full, G v, G a)`` (virtual work), ``M = G^T M_full G``,
  ``h = G^T h_full``;
* Jacobians ``J = J_full G``; ``J̇ v`` and placements are the full model's at ``(q_full, G v)``;
* ``M^-1`` and forward dynamics solve with the Cholesky factor of ``G^T M_full G``: exact, but
  O(n^3) dense linear algebra instead of the O(n) analytical recursions (M^-1, ABA) of the
  independent model -- the coupling breaks the tree structure those rely on.

The compiled controller tick works on independent joints; a controller that should treat
mimic joints as coupled is not provided (see docs/robots.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .description import RobotDescription, URDFError, parse_urdf
from .model import RobotModel, neutral_configuration


class MimicModel:
    """A robot whose ``<mimic>`` joints follow their leaders (reduced q, v); see the module.

    Attributes: ``full`` (the independent :class:`RobotModel`), ``nq``, ``nv``,
    ``floating_base``, ``joint_names`` (independent joints, in ``full.joint_names`` order),
    ``mimic_joints`` (``{name: (leader, multiplier, offset)}`` resolved to an independent
    leader), ``coupling`` (G, (full.nv, nv)), ``position_lower``/``position_upper``/
    ``velocity_limit``/``effort_limit`` over ``joint_names``, ``link_names``, ``total_mass``.
    Conventions (units, frames, the floating base) are :class:`RobotModel`'s.
    """

    def __init__(self, full: RobotModel, mimic: Mapping[str, tuple[str, float, float]]) -> None:
        self.full = full
        self.mimic_joints = dict(mimic)
        self.floating_base = full.floating_base
        base_q, base_v = (7, 6) if full.floating_base else (0, 0)
        names = full.joint_names
        self.joint_names = [n for n in names if n not in self.mimic_joints]
        reduced = {n: k for k, n in enumerate(self.joint_names)}
        self.nq = base_q + len(self.joint_names)
        self.nv = base_v + len(self.joint_names)
        G = np.zeros((full.nv, self.nv))
        G[:base_v, :base_v] = np.eye(base_v)
        self._q_index = np.empty(len(names), dtype=np.int64)  # full joint -> reduced q index
        self._q_gain = np.ones(len(names))
        self._q_offset = np.zeros(len(names))
        for k, name in enumerate(names):
            leader, gain, offset = self.mimic_joints.get(name, (name, 1.0, 0.0))
            self._q_index[k] = base_q + reduced[leader]
            self._q_gain[k] = gain
            self._q_offset[k] = offset
            G[base_v + k, base_v + reduced[leader]] = gain
        self.coupling = G
        keep = [full.joint_index(n) for n in self.joint_names]
        self.position_lower = full.position_lower[keep]
        self.position_upper = full.position_upper[keep]
        self.velocity_limit = full.velocity_limit[keep]
        self.effort_limit = full.effort_limit[keep]
        self.link_names = full.link_names
        self.total_mass = full.total_mass
        self.massless_joints = full.massless_joints
        self.name = full.name

    @classmethod
    def from_urdf(
        cls,
        source: str | os.PathLike | RobotDescription,
        floating_base: bool = False,
        warmup: bool = True,
        *,
        strict: bool = False,
        package_dirs: Sequence[str | os.PathLike] | None = None,
        locked_joints: Mapping[str, float] | None = None,
    ) -> MimicModel:
        """Load a URDF with coupled mimic joints (arguments as :meth:`RobotModel.from_urdf`).

        A mimic joint whose leader is itself a mimic joint follows the chain to an independent
        leader; one whose leader is locked is locked at ``multiplier * position + offset``.

        Raises:
            URDFError: a mimic leader that does not exist, is not movable, or a mimic cycle.
        """
        desc = (
            source
            if isinstance(source, RobotDescription)
            else parse_urdf(source, strict=strict, package_dirs=package_dirs)
        )
        locked = dict(locked_joints or {})
        resolved: dict[str, tuple[str, float, float]] = {}
        for joint in desc.joints.values():
            if not joint.movable or joint.mimic is None or joint.name in locked:
                continue
            leader, gain, offset, seen = joint.name, 1.0, 0.0, []
            while True:
                mim = desc.joints[leader].mimic
                if mim is None or leader in locked:
                    break
                if leader in seen:
                    raise URDFError(f"joint '{joint.name}' <mimic>: cycle through {seen}")
                seen.append(leader)
                target = desc.joints.get(mim.leader)
                if target is None or not target.movable:
                    kind = "does not exist" if target is None else f"is {target.type}"
                    raise URDFError(
                        f"joint '{leader}' <mimic joint='{mim.leader}'>: the leader {kind}"
                    )
                gain, offset = gain * mim.multiplier, gain * mim.offset + offset
                leader = mim.leader
            if leader in locked:
                locked[joint.name] = gain * float(locked[leader]) + offset
            else:
                resolved[joint.name] = (leader, gain, offset)
        full = RobotModel.from_urdf(
            desc, floating_base=floating_base, warmup=warmup, strict=strict, locked_joints=locked
        )
        return cls(full, resolved)

    # ------------------------------------------------------------------ coordinates
    def full_configuration(self, q: ArrayLike) -> np.ndarray:
        """The independent model's configuration (mimic joints filled in) from ``q``."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.nq,):
            raise ValueError(f"q must have length {self.nq}, got {q.shape}")
        base = 7 if self.floating_base else 0
        out = np.empty(self.full.nq)
        out[:base] = q[:base]
        out[base:] = self._q_gain * q[self._q_index] + self._q_offset
        return out

    def full_velocity(self, v: ArrayLike) -> np.ndarray:
        """``G v``: the independent model's velocity (or acceleration) from ``v``."""
        v = np.asarray(v, dtype=float)
        if v.shape != (self.nv,):
            raise ValueError(f"v must have length {self.nv}, got {v.shape}")
        return self.coupling @ v

    def neutral(self) -> np.ndarray:
        """Base at the origin, independent joints at 0 clipped to their limits."""
        return neutral_configuration(self.nq, self.floating_base, self.position_lower,
                                     self.position_upper)

    # ------------------------------------------------------------------ dynamics
    def rnea(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike,
        f_ext: Mapping[str, object] | None = None,
    ) -> np.ndarray:
        """Generalized forces ``G^T rnea_full(q_full, G v, G a)`` (N m / N; base wrench first)."""
        qf = self.full_configuration(q)
        G = self.coupling
        return G.T @ self.full.rnea(qf, self.full_velocity(v), self.full_velocity(a), f_ext)

    def nonlinear_effects(self, q: ArrayLike, v: ArrayLike) -> np.ndarray:
        """``h(q, v) = G^T h_full(q_full, G v)``."""
        return self.coupling.T @ self.full.nonlinear_effects(
            self.full_configuration(q), self.full_velocity(v)
        )

    def gravity_torques(self, q: ArrayLike) -> np.ndarray:
        """``g(q) = G^T g_full(q_full)``."""
        return self.coupling.T @ self.full.gravity_torques(self.full_configuration(q))

    def mass_matrix(self, q: ArrayLike) -> np.ndarray:
        """``M = G^T M_full G`` (nv x nv)."""
        G = self.coupling
        return G.T @ self.full.mass_matrix(self.full_configuration(q)) @ G

    def minverse(self, q: ArrayLike) -> np.ndarray:
        """``M^-1`` by Cholesky of ``G^T M_full G`` (dense, O(nv^3))."""
        from scipy.linalg import cho_factor, cho_solve

        M = self.mass_matrix(q)
        return cho_solve(cho_factor(M), np.eye(self.nv))

    def aba(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
        f_ext: Mapping[str, object] | None = None,
    ) -> np.ndarray:
        """Forward dynamics ``a = M^-1 (tau - h + G^T J^T f_ext)`` (dense solve)."""
        from scipy.linalg import cho_factor, cho_solve

        qf, vf = self.full_configuration(q), self.full_velocity(v)
        G = self.coupling
        M = G.T @ self.full.mass_matrix(qf) @ G
        bias = G.T @ self.full.rnea(qf, vf, np.zeros(self.full.nv), f_ext)
        return cho_solve(cho_factor(M), np.asarray(tau, dtype=float) - bias)

    # ------------------------------------------------------------------ kinematics
    def frame_placement(self, q: ArrayLike, link: str) -> np.ndarray:
        """4x4 pose of ``link`` in the world (m)."""
        return self.full.frame_placement(self.full_configuration(q), link)

    def jacobian(
        self, q: ArrayLike, link: str, point: ArrayLike | None = None, frame: str = "world",
    ) -> np.ndarray:
        """``J_full G`` (6 x nv); arguments as :meth:`RobotModel.jacobian`."""
        J = self.full.jacobian(self.full_configuration(q), link, point, frame)
        return J @ self.coupling

    def jacobian_dot_times_v(
        self, q: ArrayLike, v: ArrayLike, link: str, point: ArrayLike | None = None,
        frame: str = "world",
    ) -> np.ndarray:
        """``J̇ v`` (6,) = the independent model's at ``(q_full, G v)`` (G is constant)."""
        return self.full.jacobian_dot_times_v(
            self.full_configuration(q), self.full_velocity(v), link, point, frame
        )

    def __repr__(self) -> str:
        return (
            f"MimicModel('{self.name}', nq={self.nq}, nv={self.nv}, "
            f"{len(self.mimic_joints)} coupled mimic joint(s))"
        )
