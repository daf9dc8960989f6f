"""Robot set-ups from YAML alone: any URDF, its controller parameters and its standing pose.

A robot configuration is the controller node's ROS parameters file (``config/robots/*.yaml``,
usable as is with ``--params-file``), with an optional ``standing`` group that the node ignores
and the simulation uses::

    /**:
      ros__parameters:
        urdf_path: package://example-robot-data/robots/go1_description/urdf/go1.urdf
        floating_base: true
        contact_links: [FL_foot, FR_foot, RL_foot, RR_foot]
        method: lcp_noslip
        ...                                  # every ControllerConfig field / node parameter
        standing:
          srdf: package://example-robot-data/robots/go1_description/srdf/go1.srdf
          pose: standing                     # SRDF <group_state> name
          positions: []                      # or joint positions, one per configured joint

:func:`load_robot_setup` reads it (by file path, or by name from the installed
``config/robots``) into a :class:`RobotSetup`. The standing joint positions come from
``standing.positions``, else the SRDF group state, else 0 clipped into the joint limits; the
standing base height is computed by the model's own kinematics so that the lowest contact point
touches the ground (:func:`standing_configuration`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .controller_config import ControllerConfig

__all__ = [
    "RobotSetup",
    "load_robot_setup",
    "robot_config_dirs",
    "robot_config_names",
    "robot_setup_state",
    "srdf_group_state",
    "standing_configuration",
]

#: keys of the ``standing`` group
STANDING_KEYS = ("srdf", "pose", "positions", "base_height", "override_joints",
                 "override_positions")
#: keys of the ``trot`` group: the gait parameters of ``wbc_dynamics.sim.references.FootTrot``
#: for this robot (period [s], speed [m/s], height [m], ramp [s])
TROT_KEYS = ("period", "speed", "height", "ramp")
#: keys of the ``sinusoid`` group: the fixed-base reference ``ArmSinusoid``'s options for this
#: robot (amplitude [rad], frequency [Hz], ramp [s]): a motion its drives can make within the
#: torque limits (the bundled arm's 3 Hz, 0.1 rad is beyond a 2.5 m industrial arm's elbow)
SINUSOID_KEYS = ("amplitude", "frequency", "ramp")
#: keys of the ``grasp`` group (a configuration with ``object_urdf``; the node ignores it): the
#: simulation's set-up of the grasp -- ``hand_link``, ``object_pose`` (the object frame in the
#: hand frame at the start: [x, y, z] m + [qx, qy, qz, qw]), ``start_joints`` /
#: ``start_positions`` (parallel lists: joints that start elsewhere than the standing pose,
#: e.g. fingers just clear of the object)
GRASP_KEYS = ("hand_link", "object_pose", "start_joints", "start_positions")


@dataclass
class RobotSetup:
    """A robot as configured by one YAML file.

    Attributes:
        name: file stem (``go1``).
        path: the YAML file.
        controller: the controller's configuration (every ControllerConfig field in the file).
        node_parameters: node-only parameters of the file (control_mode, watchdog_rate, ...).
        standing: the ``standing`` group (srdf, pose, positions, base_height,
            override_joints / override_positions).
        trot: the ``trot`` group (:data:`TROT_KEYS`): this robot's gait parameters for the
            ``trot`` reference (the node ignores it, like ``standing``).
        sinusoid: the ``sinusoid`` group (:data:`SINUSOID_KEYS`): this robot's options for the
            ``sinusoid`` reference (the node ignores it).
        grasp: the ``grasp`` group (:data:`GRASP_KEYS`): where the simulation puts the object
            (``object_urdf``) and the fingers at the start (the node ignores it).
    """

    name: str
    path: str
    controller: ControllerConfig
    node_parameters: dict[str, Any] = field(default_factory=dict)
    standing: dict[str, Any] = field(default_factory=dict)
    trot: dict[str, Any] = field(default_factory=dict)
    grasp: dict[str, Any] = field(default_factory=dict)
    sinusoid: dict[str, Any] = field(default_factory=dict)

    def standing_joint_positions(self, joint_names: list[str], model: Any) -> np.ndarray:
        """(n,) standing positions [rad or m] of ``joint_names`` (the controller's order):
        ``standing.positions``, else the SRDF group state, else 0 clipped into the limits; then
        ``standing.override_joints`` set to ``standing.override_positions`` (parallel lists:
        an SRDF pose with a few joints changed)."""
        n = len(joint_names)
        pos = self.standing.get("positions") or []
        if pos:
            arr = np.asarray(pos, dtype=float).reshape(-1)
            if arr.shape != (n,) or not np.all(np.isfinite(arr)):
                raise ValueError(f"{self.path}: standing.positions: expected {n} finite values "
                                 f"(one per configured joint {joint_names}), got {pos!r}")
            return self._overridden(arr, joint_names)
        lo = np.array([model.position_lower[model.joint_index(j)] for j in joint_names])
        hi = np.array([model.position_upper[model.joint_index(j)] for j in joint_names])
        q = np.clip(np.zeros(n), lo, hi)
        srdf = str(self.standing.get("srdf") or "")
        if srdf:
            values = srdf_group_state(_resolve(srdf, "standing.srdf", self.path),
                                      str(self.standing.get("pose") or "standing"))
            for i, j in enumerate(joint_names):
                if j in values:
                    q[i] = values[j]
        return self._overridden(q, joint_names)

    def start_positions(self) -> dict[str, float]:
        """{joint: position [rad or m]} of the joints a simulation starts away from the standing
        pose (``grasp.start_joints`` / ``start_positions``, e.g. fingers just clear of the
        object); empty without a grasp group."""
        return {str(j): float(x) for j, x in zip(self.grasp.get("start_joints") or [],
                                                 self.grasp.get("start_positions") or [],
                                                 strict=True)}

    def _overridden(self, q: np.ndarray, joint_names: list[str]) -> np.ndarray:
        names = [str(j) for j in self.standing.get("override_joints") or []]
        values = np.asarray(self.standing.get("override_positions") or [], dtype=float)
        if values.shape != (len(names),) or not np.all(np.isfinite(values)):
            raise ValueError(f"{self.path}: standing.override_positions: expected "
                             f"{len(names)} finite values (one per override_joints entry), got "
                             f"{self.standing.get('override_positions')!r}")
        for j, x in zip(names, values, strict=True):
            if j not in joint_names:
                raise ValueError(f"{self.path}: standing.override_joints: {j!r} is not a "
                                 f"configured joint (known: {joint_names})")
            q[joint_names.index(j)] = x
        return q


def _resolve(path: str, what: str, origin: str) -> str:
    if path.startswith("package://"):
        from .description import package_roots, resolve_resource

        found = resolve_resource(path, None, package_roots())
        if found is None:
            raise ValueError(f"{origin}: {what}: {path!r} not found")
        return found
    p = Path(os.path.expanduser(path))
    if not p.is_absolute():
        p = Path(origin).parent / p
    if not p.is_file():
        raise ValueError(f"{origin}: {what}: file not found: {str(p)!r}")
    return str(p)


def srdf_group_state(path: str, name: str) -> dict[str, float]:
    """Joint values of the SRDF ``<group_state name=NAME>`` (``root_joint`` and multi-valued
    joints left out): {joint: position [rad or m]}.

    Raises:
        ValueError: naming the file and the states it has, if there is no such state.
    """
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ValueError(f"SRDF {path}: {exc}") from None
    states = root.findall("group_state")
    for st in states:
        if st.get("name") == name:
            out = {}
            for j in st.findall("joint"):
                vals = (j.get("value") or "").split()
                if len(vals) == 1:
                    v = float(vals[0])
                    if not math.isfinite(v):
                        raise ValueError(f"SRDF {path}: joint {j.get('name')!r} value not finite")
                    out[str(j.get("name"))] = v
            return out
    raise ValueError(f"SRDF {path}: no group_state named {name!r} (has "
                     f"{sorted({str(s.get('name')) for s in states})})")


def robot_config_dirs() -> list[Path]:
    """Where robot configurations are looked up by name: the source tree's ``config/robots``,
    then ``share/wbc_dynamics/config/robots`` of the Python prefix and of AMENT_PREFIX_PATH."""
    dirs = [Path(__file__).resolve().parents[1] / "config" / "robots",
            Path(sys.prefix) / "share" / "wbc_dynamics" / "config" / "robots"]
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share" / "wbc_dynamics" / "config" / "robots")
    return [d for d in dirs if d.is_dir()]


def robot_config_names() -> list[str]:
    """Names of the robot configurations found in :func:`robot_config_dirs`."""
    return sorted({p.stem for d in robot_config_dirs() for p in d.glob("*.yaml")})


def _flatten(prefix: str, values: dict, out: dict) -> None:
    for k, v in values.items():
        if isinstance(v, dict):
            _flatten(f"{prefix}{k}.", v, out)
        else:
            out[f"{prefix}{k}"] = v


def load_robot_setup(name_or_path: str | os.PathLike) -> RobotSetup:
    """Read a robot configuration (a YAML path, or a name in :func:`robot_config_names`).

    The parameters of the ``/**`` section and of a ``wbc_controller`` section (in that order)
    are merged; ControllerConfig fields go to ``controller``, ``standing.*`` to ``standing``,
    the rest to ``node_parameters`` (the node validates them).

    Raises:
        ValueError: unknown name (listing the known ones), unreadable YAML, unknown standing key.
    """
    import yaml

    text = str(name_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        path = Path(os.path.expanduser(text))
        if not path.is_file():
            raise ValueError(f"robot configuration: file not found: {text!r}")
    else:
        found = [d / f"{text}.yaml" for d in robot_config_dirs() if (d / f"{text}.yaml").is_file()]
        if not found:
            raise ValueError(f"robot configuration: no {text!r} (known: {robot_config_names()}; "
                             "or give a YAML path)")
        path = found[0]
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    params: dict[str, Any] = {}
    for section in ("/**", "wbc_controller", "/wbc_controller"):
        body = doc.get(section) if isinstance(doc, dict) else None
        if isinstance(body, dict) and isinstance(body.get("ros__parameters"), dict):
            _flatten("", body["ros__parameters"], params)
    if not params:
        raise ValueError(f"{path}: no '/**: ros__parameters:' section")
    fields = {f.name for f in dataclasses.fields(ControllerConfig)}
    standing = {k[len("standing."):]: v for k, v in params.items() if k.startswith("standing.")}
    unknown = sorted(set(standing) - set(STANDING_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown standing key(s) {unknown} (known: {STANDING_KEYS})")
    trot = _positive_group(params, "trot", TROT_KEYS, path)
    sinusoid = _positive_group(params, "sinusoid", SINUSOID_KEYS, path)
    grasp = {k[len("grasp."):]: v for k, v in params.items() if k.startswith("grasp.")}
    _check_grasp(grasp, path)
    config = ControllerConfig.from_mapping({k: v for k, v in params.items() if k in fields})
    if config.urdf_path and not config.urdf_path.startswith("package://"):
        config = dataclasses.replace(
            config, urdf_path=str((path.parent / os.path.expanduser(config.urdf_path)).resolve()))
    node = {k: v for k, v in params.items()
            if k not in fields
            and not k.startswith(("standing.", "trot.", "grasp.", "sinusoid."))}
    if grasp and not config.object_urdf:
        raise ValueError(f"{path}: a grasp group needs object_urdf (the object to place)")
    return RobotSetup(path.stem, str(path), config, node, standing, trot, grasp, sinusoid)


def _positive_group(params: dict[str, Any], group: str, keys: tuple[str, ...],
                    path: Path) -> dict[str, float]:
    """The ``group.`` keys of the flattened ``params`` as floats, each one of ``keys`` and a
    number > 0 (ValueError naming the file and key otherwise)."""
    out = {k[len(group) + 1:]: v for k, v in params.items() if k.startswith(group + ".")}
    unknown = sorted(set(out) - set(keys))
    if unknown:
        raise ValueError(f"{path}: unknown {group} key(s) {unknown} (known: {keys})")
    bad = [k for k, v in out.items()
           if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0]
    if bad:
        raise ValueError(f"{path}: {group}.{bad[0]}: must be a number > 0, got {out[bad[0]]!r}")
    return {k: float(v) for k, v in out.items()}


def _check_grasp(grasp: dict[str, Any], path: Path) -> None:
    """ValueError naming the file and key for a malformed ``grasp`` group."""
    unknown = sorted(set(grasp) - set(GRASP_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown grasp key(s) {unknown} (known: {GRASP_KEYS})")
    if not grasp:
        return
    if not isinstance(grasp.get("hand_link"), str) or not grasp["hand_link"]:
        raise ValueError(f"{path}: grasp.hand_link: the link the object pose is given in")
    pose = np.asarray(grasp.get("object_pose", []), dtype=float).reshape(-1)
    if pose.shape != (7,) or not np.all(np.isfinite(pose)) or \
            abs(np.linalg.norm(pose[3:]) - 1.0) > 1e-3:
        raise ValueError(f"{path}: grasp.object_pose: expected [x, y, z, qx, qy, qz, qw] with a "
                         f"unit quaternion, got {grasp.get('object_pose')!r}")
    joints = list(grasp.get("start_joints") or [])
    positions = np.asarray(grasp.get("start_positions") or [], dtype=float).reshape(-1)
    if positions.shape != (len(joints),) or not np.all(np.isfinite(positions)):
        raise ValueError(f"{path}: grasp.start_positions: expected {len(joints)} finite values "
                         f"(one per start_joints entry), got {grasp.get('start_positions')!r}")


def standing_configuration(controller: Any, joint_positions: np.ndarray,
                           base_height: float | None = None) -> np.ndarray:
    """Full configuration q (nq,) of ``controller``'s model standing on its ground plane.

    Joints at ``joint_positions`` (configured order); a floating base upright (identity
    orientation) at ``base_height`` [m] if given, else at the height at which the lowest
    contact point of the controller's contact links touches the ground (``ground_height``):
    the model's own kinematics, no second IK. Fixed base: the joints only.
    """
    return _standing(controller.model, controller.joint_names, controller.contact_links,
                     controller._contact_points, float(controller.config.ground_height),
                     joint_positions, base_height)


def _standing(model, joint_names, contact_links, points, ground_height, joint_positions,
              base_height) -> np.ndarray:
    q = np.asarray(model.neutral(), dtype=float).copy()
    off = 7 if model.floating_base else 0
    for i, j in enumerate(joint_names):
        q[off + model.joint_index(j)] = joint_positions[i]
    if not model.floating_base:
        return q
    q[0:3] = 0.0
    q[3:7] = [0.0, 0.0, 0.0, 1.0]
    if base_height is not None:
        q[2] = float(base_height)
        return q
    if not contact_links:
        raise ValueError("standing base height: no contact links to stand on (set "
                         "standing.base_height)")
    from .contact.geometry import ContactModel, HalfSpace

    cm = ContactModel(model, contact_links=contact_links, features=[HalfSpace.ground(0.0)],
                      margin=1e3, points=points or None)
    k = cm.candidates(q)
    q[2] = ground_height - float(np.min(cm._out_phi[:k]))
    return q


def robot_setup_state(setup: RobotSetup) -> tuple[Any, list[str], np.ndarray]:
    """(model, configured joint names, standing q) of a configuration without building a
    controller (the simulator's view): the model exactly as the controller loads it (same
    parse, same locked joints), joints in the configured order, the standing configuration."""
    from .controller_loading import _declared_contact_points, _load_urdf_text, _locked_joints
    from .description import parse_urdf
    from .model import RobotModel

    cfg = setup.controller
    source, _ = _load_urdf_text(cfg)
    description = parse_urdf(source)
    locked = _locked_joints(cfg, description, [])
    model = RobotModel.from_urdf(description, floating_base=bool(cfg.floating_base),
                                 locked_joints=locked, warmup=False)
    joints = [str(j) for j in cfg.joints] or list(model.joint_names)
    q_joints = setup.standing_joint_positions(joints, model)
    points = _declared_contact_points(cfg)
    q = _standing(model, joints, list(cfg.contact_links) or list(points), points,
                  float(cfg.ground_height), q_joints, setup.standing.get("base_height"))
    return model, joints, q
