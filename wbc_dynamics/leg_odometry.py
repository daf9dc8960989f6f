"""The controller's base estimator without the controller (ROS-free core of ``wbc_estimator``).

:class:`LegOdometry` loads the robot as :class:`~wbc_dynamics.controller.WholeBodyController`
does (:mod:`wbc_dynamics.controller_loading`) -- from the same
:class:`~wbc_dynamics.controller_config.ControllerConfig` fields, so the node's parameter files
serve both -- builds the contact model of its contact links (their collision
geometry or declared points: the feet's soles) and runs the same
:class:`~wbc_dynamics.estimator.BaseEstimator` the controller runs with ``base_state: imu``, on
the same inputs with the same conventions:

* :meth:`LegOdometry.set_imu` -- the IMU at the base frame: angular rate [rad/s] and specific
  force [m/s^2] in the base frame, orientation world-from-base (with ``imu_orientation``), at its
  time on the caller's clock [s] (strictly increasing: the filter integrates over the
  differences);
* :meth:`LegOdometry.set_joint_state` -- joint positions / velocities in the configured order;
* :meth:`LegOdometry.set_contact_schedule` -- the contact links held in swing (every foot is in
  stance unless it is listed);
* :meth:`LegOdometry.update` -- one estimator step on the latest IMU sample, if a new one arrived
  and both inputs are younger than ``state_timeout``.

The controller runs its contact method besides (and compiles it at start-up); this runs only
the estimator: two compiled calls per update (the feet's kinematics, the filter).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .controller_config import ControllerConfig
from .controller_loading import (
    _contact_links,
    _declared_contact_points,
    _load_urdf_text,
    _locked_joints,
)
from .estimator import ImuEstimator

__all__ = ["LegOdometry"]


class LegOdometry:
    """Base pose and twist of a legged robot from its IMU and joint encoders (module docstring).

    Args:
        config: a :class:`ControllerConfig` or a mapping of its fields; used: the model source
            (``robot_description`` / ``urdf_path`` / ``robot``), ``joints``, ``locked_joints``,
            ``locked_positions``, ``strict_joints``, ``contact_links`` (empty: the bundled
            robot's), ``contact_point_*``, ``ground_height`` [m], ``imu_orientation``,
            ``imu_gyro_noise`` [rad/s], ``imu_accelerometer_noise`` [m/s^2],
            ``sensing_joint_position_noise`` [rad], ``sensing_joint_velocity_noise`` [rad/s],
            ``state_timeout`` [s], ``control_rate`` [Hz] (the first step's time step). The base
            is always floating.
        progress: called with a line of text per start-up stage.

    Raises:
        ValueError: naming the field, joint or link at fault.
    """

    def __init__(self, config: ControllerConfig | Mapping[str, Any],
                 progress: Callable[[str], None] | None = None) -> None:
        cfg = (config if isinstance(config, ControllerConfig)
               else ControllerConfig.from_mapping(config))
        cfg = dataclasses.replace(cfg, floating_base=True)
        self.config = cfg
        t0 = time.perf_counter()

        def report(stage: str) -> None:
            if progress is not None:
                progress(f"start-up: {stage} ({time.perf_counter() - t0:.1f} s)")

        from .contact.geometry import ContactModel
        from .description import parse_urdf
        from .model import RobotModel

        #: warnings of the configuration (joints locked for the user)
        self.load_warnings: list[str] = []
        source, self.model_source = _load_urdf_text(cfg)
        description = parse_urdf(source)
        locked = _locked_joints(cfg, description, self.load_warnings)
        report(f"model parsed from {self.model_source}")
        model = RobotModel.from_urdf(description, floating_base=True, locked_joints=locked,
                                     warmup=False)
        self.model = model
        model_joints = list(model.joint_names)
        joints = [str(j) for j in cfg.joints] if cfg.joints else list(model_joints)
        unknown = [j for j in joints if j not in model_joints]
        if unknown:
            raise ValueError(f"joints: {unknown} are not movable joints of the model (movable "
                             f"joints: {model_joints})")
        if len(set(joints)) != len(joints):
            raise ValueError("joints: a joint is listed twice")
        missing = [j for j in model_joints if j not in joints]
        if missing:
            raise ValueError(f"joints: movable joint(s) {missing} of the model are not "
                             "configured; the joint list must name every movable joint once")
        #: configured joint order of :meth:`set_joint_state`
        self.joint_names: list[str] = joints
        self.n = len(joints)
        self._cfg_to_model = np.array([model_joints.index(j) for j in joints], dtype=np.int64)
        points = _declared_contact_points(cfg)
        links = _contact_links(cfg, points)  # as the controller's
        if not links:
            raise ValueError("contact_links: the estimator needs the feet (at least one contact "
                             "link, or robot set to a bundled robot name)")
        link_names = list(getattr(model, "link_names", []))
        for ln in links:
            if link_names and ln not in link_names:
                raise ValueError(f"contact_links: link '{ln}' is not a link of the model")
        x = float(cfg.state_timeout)
        if not (math.isfinite(x) and x > 0.0):
            raise ValueError(f"state_timeout: must be finite and > 0, got {cfg.state_timeout!r}")
        #: the contact model of the feet (their soles: collision geometry or declared points)
        self.contact_model = ContactModel(model, contact_links=links, points=points or None)
        #: the IMU-fed estimator, as the controller's (the IMU input's one validated path)
        self.imu = ImuEstimator.from_config(self.contact_model, cfg)
        self.orientation_used = self.imu.orientation_from_imu
        #: the filter (``base_state()``, ``covariance()``, ``foot_positions()``)
        self.estimator = self.imu.estimator
        #: the contact links, in the estimator's (and the contact schedule's) order
        self.contact_links: list[str] = list(self.estimator.feet)
        self.state_timeout = float(cfg.state_timeout)
        self.dt = 1.0 / float(cfg.control_rate)
        self._qj = np.zeros(self.n)
        self._qdj = np.zeros(self.n)
        self._q_model = np.zeros(self.n)
        self._qd_model = np.zeros(self.n)
        self._stance = np.ones(len(self.contact_links), dtype=np.bool_)
        self._swing: frozenset[str] = frozenset()
        report("compiling / loading the estimator kernels (numba cache; a first start compiles)")
        self._warm_up()
        report("ready")

    # ------------------------------------------------------------------ inputs
    def set_joint_state(self, position: np.ndarray, velocity: np.ndarray, now: float) -> None:
        """Joint positions [rad / m] and velocities [rad/s / m/s] in the configured order at
        ``now`` [s]. Raises ValueError (wrong length or a non-finite value, naming the joint);
        the previous state is kept."""
        for name, x in (("joint_state.position", position), ("joint_state.velocity", velocity)):
            a = np.asarray(x, dtype=np.float64)
            if a.ndim != 1 or a.shape[0] != self.n:
                raise ValueError(f"{name}: expected {self.n} values (configured joints), got "
                                 f"{a.shape[0] if a.ndim == 1 else a.shape}")
            bad = np.flatnonzero(~np.isfinite(a))
            if bad.size:
                raise ValueError(f"{name}: non-finite value {float(a[bad[0]])!r} for joint "
                                 f"'{self.joint_names[bad[0]]}'")
        self._qj[:] = position
        self._qdj[:] = velocity
        self._t_state = float(now)

    def set_imu(self, angular_velocity: np.ndarray, linear_acceleration: np.ndarray,
                orientation_xyzw: np.ndarray | None, now: float) -> None:
        """The IMU sample (as :meth:`.WholeBodyController.set_imu`): angular rate (3,) [rad/s] and
        specific force (3,) [m/s^2] in the base frame, orientation (4,) world-from-base xyzw
        (required with ``imu_orientation``, ignored otherwise), its time ``now`` [s] (after the
        previous sample's). Raises ValueError naming the field; the previous sample is kept."""
        self.imu.set_imu(angular_velocity, linear_acceleration, orientation_xyzw, now)

    def set_contact_schedule(self, swing_links: Sequence[str] = ()) -> None:
        """The contact links in swing (not anchoring the estimate) until the next call; empty =
        every foot in stance. Raises ValueError naming links that are not contact links."""
        links = frozenset(str(x) for x in swing_links)
        unknown = sorted(links - set(self.contact_links))
        if unknown:
            raise ValueError(f"contact schedule: {unknown} are not contact links "
                             f"({self.contact_links})")
        self._swing = links
        self._stance[:] = [ln not in links for ln in self.contact_links]

    # ------------------------------------------------------------------ the estimate
    def input_ages(self, now: float) -> dict[str, float]:
        """Age [s] of the latest joint state and IMU sample at ``now`` (inf = never)."""
        return {"joint_states": now - self._t_state, "imu": now - self.imu.stamp}

    def fresh(self, now: float) -> bool:
        """Joint state and IMU sample both younger than ``state_timeout`` at ``now``."""
        return (now - self._t_state <= self.state_timeout
                and now - self.imu.stamp <= self.state_timeout)

    def update(self, now: float) -> bool:
        """One estimator step on the latest IMU sample and joint state, if a new sample arrived
        since the last step and both inputs are fresh at ``now`` [s]; the time step is the
        difference of the samples' times (the first: ``1 / control_rate``; at most 0.1 s).
        Returns whether it stepped."""
        if not self.imu.new_sample or not self.fresh(now):
            return False
        self._q_model[self._cfg_to_model] = self._qj
        self._qd_model[self._cfg_to_model] = self._qdj
        return self.imu.step(self._q_model, self._qd_model, self._stance)

    @property
    def updates(self) -> int:
        """Steps run."""
        return self.imu.updates

    @property
    def failed_updates(self) -> int:
        """Steps whose kernel reported a failure (kinematics, update system)."""
        return self.imu.failed_updates

    @property
    def initialized(self) -> bool:
        """An estimate exists (the first step with a foot in stance has run)."""
        return self.estimator.initialized

    @property
    def sample_time(self) -> float:
        """[s] time of the IMU sample the estimate last integrated (-inf: none)."""
        return self.imu.used

    def reset(self) -> None:
        """Forget inputs and estimate (the next step initializes from the stance feet)."""
        self._t_state = -math.inf
        self.imu.reset()

    def _warm_up(self) -> None:
        """One step at the model's neutral joint positions on an IMU at rest (compiles or loads
        the kernels), then :meth:`reset`."""
        self.reset()
        q0 = np.asarray(self.model.neutral(), dtype=float)[7:]
        self._qj[:] = q0[self._cfg_to_model]
        self._qdj[:] = 0.0
        rest = (np.zeros(3), (0.0, 0.0, 9.81), (0.0, 0.0, 0.0, 1.0))
        self._t_state = 0.0
        self.imu.set_imu(*rest, 0.0)
        self.update(0.0)
        self._t_state = 1.0
        self.imu.set_imu(*rest, 1.0 - 1e-3)
        self.update(1.0)  # (the prediction and updates, once initialized)
        self.reset()
        self.imu.updates = self.imu.failed_updates = 0
