"""Loading what a :class:`~wbc_dynamics.controller_config.ControllerConfig` describes.

The robot model from the first non-empty model source (``robot_description``, ``urdf_path``,
``robot``) with its locked joints, the configured joint order, the contact links and their
declared contact points, and the free object (``object_urdf``). The controller
(:class:`~wbc_dynamics.controller.WholeBodyController`), the leg odometry, the robot
configurations (:mod:`wbc_dynamics.robot_config`) and the simulator read a configuration with
these functions, so each sees the same model, joints and contact points; every error names the
field at fault.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .controller_config import ControllerConfig
from .parameters import PARAMETERS, check


# --------------------------------------------------------------------------- the model
def _resolve_urdf_path(name: str, value: str) -> str:
    """A URDF file path from a path or ``package://`` URI (ValueError naming ``name``)."""
    path = os.path.expanduser(str(value).strip())
    if path.startswith("package://"):
        from .description import package_roots, resolve_resource

        resolved = resolve_resource(path, None, package_roots())
        if resolved is None:
            raise ValueError(f"{name}: {path!r} not found (searched AMENT_PREFIX_PATH, "
                             "ROS_PACKAGE_PATH and pip-installed ROS packages)")
        path = resolved
    if not os.path.isfile(path):
        raise ValueError(f"{name}: file not found: {path!r}")
    return path


def _load_urdf_text(cfg: ControllerConfig) -> tuple[str, str]:
    """(URDF XML or path, human-readable source) from the first non-empty model source."""
    if cfg.robot_description.strip():
        if not cfg.robot_description.lstrip().startswith("<"):
            raise ValueError("robot_description: expected URDF XML text (starting with '<')")
        return cfg.robot_description, "robot_description"
    if cfg.urdf_path.strip():
        path = _resolve_urdf_path("urdf_path", cfg.urdf_path)
        return path, f"urdf_path {path}"
    if cfg.robot.strip():
        from .robots import robot_path

        return robot_path(cfg.robot.strip()), f"robot {cfg.robot.strip()}"
    raise ValueError(
        "robot_description/urdf_path/robot: no robot model given (set robot_description to the "
        "URDF XML, urdf_path to a URDF file, or robot to a bundled robot name)"
    )


def _locked_joints(cfg: ControllerConfig, description: Any, warnings: list[str]) -> dict:
    """{joint: position} to lock: ``locked_joints`` at ``locked_positions`` plus, unless
    ``strict_joints``, the movable joints ``joints`` leaves out (at 0 clipped into limits)."""
    movable = [j for j in description.joints_in_tree_order() if j.movable]
    by_name = {j.name: j for j in movable}
    names = [str(j) for j in cfg.locked_joints]
    for j in names:
        if j not in by_name:
            raise ValueError(f"locked_joints: '{j}' is not a movable joint of the URDF "
                             f"(movable joints: {list(by_name)})")
        if names.count(j) > 1:
            raise ValueError(f"locked_joints: joint '{j}' listed twice")
    try:
        pos = np.atleast_1d(np.asarray(cfg.locked_positions, dtype=np.float64)).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(
            f"locked_positions: expected numbers, got {cfg.locked_positions!r}") from None
    if pos.shape[0] == 1:
        pos = np.full(len(names), pos[0])
    elif pos.shape[0] != len(names):
        raise ValueError(f"locked_positions: expected 1 or {len(names)} values (one per locked "
                         f"joint), got {pos.shape[0]}")
    spec = PARAMETERS["locked_positions"]
    for j, p in zip(names, pos, strict=True):
        if not spec.accepts(float(p)):
            raise ValueError(f"locked_positions: {p!r} for joint '{j}' must be {spec.constraint}")
    locked = {j: float(p) for j, p in zip(names, pos, strict=True)}
    listed = {str(j) for j in cfg.joints}
    both = sorted(listed & set(names))
    if both:
        raise ValueError(f"joints / locked_joints: {both} are in both lists")
    if listed:
        rest = [j.name for j in movable if j.name not in listed and j.name not in locked]
        if rest and cfg.strict_joints:
            raise ValueError(
                f"joints: movable joint(s) {rest} are neither configured nor locked "
                "(strict_joints); list them in joints or locked_joints"
            )
        for name in rest:
            lo, hi = by_name[name].lower, by_name[name].upper
            locked[name] = min(max(0.0, lo), hi) if lo <= hi else 0.0
        if rest:
            warnings.append(
                f"joints: {len(rest)} movable joint(s) not configured are locked at 0 (clipped "
                f"into their limits): {rest}; set locked_joints / locked_positions to choose, or "
                "strict_joints to make this an error"
            )
    return locked


def _load_model(cfg: ControllerConfig, warnings: list[str],
                report: Callable[[str], None]) -> tuple[Any, str]:
    """(the :class:`~wbc_dynamics.model.RobotModel`, a human-readable source) from the
    configuration's model source, its joints locked (:func:`_locked_joints`; warnings appended
    to ``warnings``), with the kernels a control tick calls compiled or loaded from the cache
    (``report`` is called before that, the slow part of a first start)."""
    from .description import parse_urdf
    from .model import RobotModel

    source, model_source = _load_urdf_text(cfg)
    description = parse_urdf(source)
    locked = _locked_joints(cfg, description, warnings)
    report(f"model parsed from {model_source}; compiling / loading the core "
           "kernels (numba cache; a first start compiles)")
    model = RobotModel.from_urdf(  # only what a tick calls: a faster first start
        description, floating_base=bool(cfg.floating_base), locked_joints=locked,
        warmup="control",
    )
    return model, model_source


def _joint_order(cfg: ControllerConfig, model_joints: list[str]) -> list[str]:
    """The configured joint order (``joints``; empty = the model's), checked to name every
    movable joint of the model exactly once."""
    joints = [str(j) for j in cfg.joints] if cfg.joints else list(model_joints)
    seen: set[str] = set()
    for j in joints:
        if j in seen:
            raise ValueError(f"joints: joint '{j}' listed twice")
        seen.add(j)
        if j not in model_joints:
            raise ValueError(
                f"joints: joint '{j}' is not a movable joint of the model "
                f"(movable joints: {model_joints})"
            )
    missing = [j for j in model_joints if j not in seen]
    if missing:
        raise ValueError(
            f"joints: movable joint(s) {missing} of the model are not configured; the joint "
            "list must name every movable joint exactly once"
        )
    return joints


def _passive_joints(cfg: ControllerConfig, joints: list[str]) -> list[str]:
    """``passive_joints``, checked against the configured ``joints``."""
    passive = [str(j) for j in cfg.passive_joints]
    for j in passive:
        if j not in joints:
            raise ValueError(f"passive_joints: '{j}' is not a configured joint ({joints})")
        if passive.count(j) > 1:
            raise ValueError(f"passive_joints: joint '{j}' listed twice")
    return passive


# --------------------------------------------------------------------------- contacts, object
def _declared_contact_points(cfg: ControllerConfig) -> dict[str, list]:
    """{link: [(centre (3,), radius), ...]} from the flat ``contact_point_*`` fields (the form
    ROS parameters can carry), validated with errors naming the field and point."""
    links = [str(x) for x in cfg.contact_point_links]
    try:
        pos = np.asarray(cfg.contact_point_positions, dtype=np.float64).reshape(-1)
        rad = np.atleast_1d(np.asarray(cfg.contact_point_radii, dtype=np.float64)).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(
            "contact_point_positions / contact_point_radii: expected numbers") from None
    n = len(links)
    if pos.shape[0] != 3 * n:
        raise ValueError(f"contact_point_positions: expected 3 numbers per point of "
                         f"contact_point_links ({3 * n}), got {pos.shape[0]}")
    if n and rad.shape[0] == 1:
        rad = np.full(n, rad[0])
    elif n and rad.shape[0] != n:
        raise ValueError(f"contact_point_radii: expected 1 or {n} values (one per point), got "
                         f"{rad.shape[0]}")
    out: dict[str, list] = {}
    pos_spec, rad_spec = PARAMETERS["contact_point_positions"], PARAMETERS["contact_point_radii"]
    for i, ln in enumerate(links):
        c = pos[3 * i: 3 * i + 3]
        if not all(pos_spec.accepts(float(x)) for x in c):
            raise ValueError(f"contact_point_positions: point {i} on '{ln}' = {c.tolist()} must "
                             f"be {pos_spec.constraint} m (each coordinate)")
        if not rad_spec.accepts(float(rad[i])):
            raise ValueError(f"contact_point_radii: point {i} on '{ln}' = {rad[i]!r} must be "
                             f"{rad_spec.constraint} m")
        out.setdefault(ln, []).append((c.copy(), float(rad[i])))
    return out


def _contact_links(cfg: ControllerConfig, points: dict[str, list]) -> list[str]:
    """The contact links: ``contact_links``, else the bundled robot's (``robot``), with the
    links of the declared contact ``points`` (:func:`_declared_contact_points`) appended when
    ``contact_links`` is empty (else each must be one of them)."""
    links = [str(x) for x in cfg.contact_links]
    if not links and cfg.robot.strip():
        from .robots import robot_info

        links = list(robot_info(cfg.robot.strip())["contact_links"])
    for ln in points:
        if ln not in links:
            if cfg.contact_links:
                raise ValueError(f"contact_point_links: link '{ln}' is not in contact_links "
                                 f"({list(cfg.contact_links)})")
            links.append(ln)
    return links


def _load_object(cfg: ControllerConfig) -> Any:
    """The configured free object (:class:`~wbc_dynamics.contact.geometry.FreeBody`) or None."""
    source = str(cfg.object_urdf).strip()
    if not source:
        return None
    from .contact.geometry import FreeBody
    from .model import RobotModel
    from .robots import ROBOT_NAMES, robot_path

    mu = check("object_friction", cfg.object_friction)
    if source in ROBOT_NAMES:
        path = robot_path(source)
    elif source.startswith("<"):  # the object's URDF XML itself (e.g. a robot_description)
        path = source
    else:
        path = _resolve_urdf_path("object_urdf", source)
    obj = RobotModel.from_urdf(path, floating_base=True, warmup=False)
    try:
        return FreeBody.from_model(obj.name or "object", obj, mu=mu)
    except ValueError as exc:
        raise ValueError(f"object_urdf: {exc}") from None
