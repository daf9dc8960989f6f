"""The MJCF of a robot: a parsed robot description translated into MuJoCo's model format.

The URDF is parsed once (:func:`wbc_dynamics.description.parse_urdf`; pass
``RobotModel.description`` to share the controller model's parse) and translated link by link
into MJCF, so the plant's masses, inertias and kinematics are the URDF's
(``test/test_sim_mujoco_model.py`` checks MuJoCo's mass matrix and bias forces against Pinocchio
and the dynamics core to ~1e-9):

* every URDF link becomes a MuJoCo body named after the link; fixed joints become welded child
  bodies (their frames are kept so contact forces can be reported per link);
* revolute/continuous joints become hinges, prismatic joints slides (axis in the joint frame, as
  in URDF); the floating base is a MuJoCo ``freejoint`` on the root link;
* ``<inertial>`` becomes ``<inertial pos mass fullinertia>`` in link axes
  (``inertiafromgeom`` is off, so collision geometry never adds mass); links without
  ``<inertial>`` are massless. Inertias MuJoCo rejects (non-positive moments, triangle
  inequality violated -- the dynamics core loads them as given) get the smallest increase of
  their principal moments that MuJoCo accepts, and a moving body massless together with
  everything welded to it (e.g. the virtual link between two joints of a hip) gets
  :data:`MASSLESS_BODY_MASS`; one warning says which
  links and by how much;
* collision shapes of every kind (sphere, box, cylinder, capsule) are copied; meshes resolved
  by the description (``package://``, relative paths): binary STL and OBJ files are given to
  MuJoCo, Collada ``.dae`` and ASCII STL as the vertices of their convex hull
  (``wbc_dynamics.description.meshes``; MuJoCo collides with convex hulls anyway);
  unresolved or unreadable meshes are left out with one warning;
* joint ``<dynamics damping friction>`` become MuJoCo ``damping`` and ``frictionloss``
  (``joint_dynamics=False`` removes them); armature is zero; position limits are enforced by
  MuJoCo; effort limits become motor ``ctrlrange``; ``mimic=True`` couples ``<mimic>`` joints
  to their leaders with joint equality constraints;
* ``visuals=True`` (for rendering only, off for the plant) also emits the URDF's ``<visual>``
  shapes (box, cylinder, sphere, meshes as for collision) as geoms that neither collide
  (``contype``/``conaffinity`` 0) nor weigh (``mass`` 0; ``inertiafromgeom`` is off anyway),
  in group 2 with the URDF material's colour, and moves the collision geoms of links with
  visuals to group 3 (hidden by MuJoCo's default visibility); bodies, joints, masses and
  inertias are those of the plant.

Environment (paper Sec. 7.5): a ground plane with Coulomb friction ``mu`` (``"low"`` = 0.1,
``"high"`` = :data:`HIGH_FRICTION`, standing in for the paper's infinite friction) and either a
*rigid* contact (the stiffest MuJoCo contact the time step allows) or a *compliant* spring-damper
contact tuned so a quadruped at rest sinks about 1 mm into the ground, like the paper's compliant
terrain. Optional free bodies (the arm's graspable box, Sec. 7.1) can be added.

:class:`~wbc_dynamics.sim.mujoco_model.MujocoPlant` builds its MuJoCo model from this MJCF.
"""

from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..description import (
    CollisionGeometry,
    Inertial,
    JointDescription,
    LinkDescription,
    RobotDescription,
    package_roots,
    parse_urdf,
    resolve_resource,
)
from ..description.meshes import MeshError, convex_hull_vertices, geometry_vertices
from ..description.urdf import read_source, rpy_matrix

__all__ = [
    "HIGH_FRICTION",
    "LOW_FRICTION",
    "FreeBody",
    "GroundOptions",
    "build_mjcf",
    "mujoco_inertia",
    "plant_description",
]

#: Coulomb coefficient used for the paper's "high (sticky), mu = infinity" terrain. MuJoCo needs a
#: finite value; with an elliptic cone, mu = 10 means a cone half-angle of 84 deg: nothing slips.
HIGH_FRICTION = 10.0
#: The paper's "low (slippery)" terrain (Sec. 7.5).
LOW_FRICTION = 0.1

_ROBOT_CONTYPE, _ROBOT_CONAFFINITY = 1, 2  # robot links never collide with each other
_ENV_CONTYPE, _ENV_CONAFFINITY = 2, 3  # environment collides with robot and with free bodies

#: MJCF ``<compiler>``: the URDF's numbers as they are -- angles in radians, inertias from the
#: inertial elements (never from geoms, never rebalanced or bounded), a joint limited wherever
#: it has a range
_COMPILER = {"angle": "radian", "inertiafromgeom": "false", "autolimits": "true",
             "balanceinertia": "false", "boundmass": "0", "boundinertia": "0"}
#: MJCF ``<option>`` but the timestep: implicit-in-velocity integration, elliptic friction
#: cones and the Newton solver run to a tight tolerance
_OPTION = {"gravity": "0 0 -9.81", "integrator": "implicitfast", "cone": "elliptic",
           "solver": "Newton", "iterations": "100", "tolerance": "1e-10"}


@dataclass
class GroundOptions:
    """Ground and simulator settings (Sec. 7.5 terrain cases).

    Attributes:
        friction: Coulomb coefficient, or ``"high"`` / ``"low"``.
        compliant: False = rigid ground (stiffest contact for the time step), True = penalty-like
            spring-damper ground (``compliant_timeconst``), ~1 mm rest penetration of a quadruped.
        height: ground plane height in world z [m]; ``None`` = no ground.
        timestep: integration step [s].
        compliant_timeconst: MuJoCo ``solref`` time constant of the compliant ground [s].
    """

    friction: float | str = "high"
    compliant: bool = False
    height: float | None = 0.0
    timestep: float = 0.001
    compliant_timeconst: float = 0.012

    @property
    def mu(self) -> float:
        """Coulomb friction coefficient (resolved preset)."""
        if isinstance(self.friction, str):
            presets = {"high": HIGH_FRICTION, "low": LOW_FRICTION}
            if self.friction not in presets:
                raise ValueError(
                    f"friction: expected a number, 'high' or 'low', got {self.friction!r}"
                )
            return presets[self.friction]
        mu = float(self.friction)
        if not math.isfinite(mu) or mu < 0.0:
            raise ValueError(f"friction: must be finite and >= 0, got {self.friction!r}")
        return mu

    def solref(self) -> tuple[float, float]:
        """MuJoCo ``solref`` (time constant [s], damping ratio) of ground contacts."""
        if self.compliant:
            return (max(self.compliant_timeconst, 2.0 * self.timestep), 1.0)
        return (2.0 * self.timestep, 1.0)

    def solimp(self) -> tuple[float, ...]:
        """MuJoCo ``solimp`` of ground contacts (near-hard for rigid ground)."""
        if self.compliant:
            return (0.9, 0.95, 0.001, 0.5, 2.0)
        return (0.99, 0.999, 0.0005, 0.5, 2.0)


@dataclass
class FreeBody:
    """A free rigid box added to the scene (e.g. the graspable box of Sec. 7.1).

    Attributes:
        name: body name.
        size: full edge lengths (x, y, z) [m].
        mass: [kg]; its inertia is the solid box's.
        pos: initial position of the centre in world [m].
        quat_xyzw: initial orientation.
        friction: Coulomb coefficient of its surface (used against fingers and ground).
    """

    name: str
    size: tuple[float, float, float]
    mass: float
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat_xyzw: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    friction: float = 1.0
    #: principal moments about the centre in the box axes [kg m^2]; None = the solid box's
    principal_inertia: tuple[float, float, float] | None = None

    def inertia(self) -> np.ndarray:
        """Principal moments of inertia about the centre [kg m^2] (given, or the solid box's)."""
        if self.principal_inertia is not None:
            return np.asarray(self.principal_inertia, dtype=float)
        x, y, z = self.size
        m = self.mass
        return np.array([m * (y * y + z * z), m * (x * x + z * z), m * (x * x + y * y)]) / 12.0

    @classmethod
    def from_object(cls, body, pose_xyzw, friction: float | None = None) -> FreeBody:
        """The plant's copy of a controller's object
        (:class:`~wbc_dynamics.contact.geometry.FreeBody`, e.g.
        ``WholeBodyController.object_body``): its collision box, mass and
        inertia from the same parsed URDF, placed at ``pose_xyzw`` ([x, y, z] m + [qx, qy, qz,
        qw] in world); ``friction`` None = the object's ``mu``.

        Raises:
            ValueError: the URDF's centre of mass is off the box centre or its inertia is not
                diagonal in the box axes (a MuJoCo ``diaginertia`` could not represent it).
        """
        model = body.model
        inertial = model.description.links[model.root_link].inertial
        I = inertial.inertia_in_link_axes()
        if np.linalg.norm(inertial.com) > 1e-9 or np.abs(I - np.diag(np.diag(I))).max() > 1e-12:
            raise ValueError(f"object {body.name!r}: centre of mass must be at the box centre "
                             "and the inertia diagonal in the box axes")
        pose = [float(x) for x in pose_xyzw]
        return cls(body.name, tuple(2.0 * np.asarray(body.half_extents, dtype=float)),
                   float(inertial.mass), pos=tuple(pose[:3]), quat_xyzw=tuple(pose[3:7]),
                   friction=float(body.mu if friction is None else friction),
                   principal_inertia=tuple(float(x) for x in np.diag(I)))


# --------------------------------------------------------------------------------------------
# MJCF generation from the parsed robot description
# --------------------------------------------------------------------------------------------

#: MuJoCo reads these mesh formats itself (binary STL); other meshes (Collada .dae, ASCII STL)
#: are given to it as the vertices of their convex hull (MuJoCo collides with convex hulls).
MUJOCO_MESH_SUFFIXES = (".stl", ".obj")
#: Mass (kg) and principal moments (kg m^2) given to a moving body that is massless in the URDF
#: (MuJoCo requires mass and inertia on every body with a joint; the dynamics core merges
#: massless bodies, or reports a massless joint when the whole subtree is massless).
MASSLESS_BODY_MASS = 1e-6
#: Deepest kinematic chain (links from the root) the plant accepts: MuJoCo's XML parser
#: (tinyxml2) stops at 500 nested elements, and MJCF nests a body per link.
MAX_TREE_DEPTH = 490
MASSLESS_BODY_INERTIA = 1e-10


def _description(
    urdf: str | os.PathLike | RobotDescription,
    package_dirs: Sequence[str | os.PathLike] | None = None,
) -> RobotDescription:
    if isinstance(urdf, RobotDescription):
        return urdf
    return parse_urdf(urdf, package_dirs=package_dirs)


def _mat_to_quat_wxyz(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0.0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    return q / np.linalg.norm(q)


def _fmt(vals) -> str:
    return " ".join(repr(float(x)) for x in vals)


def mujoco_inertia(inertial: Inertial) -> tuple[np.ndarray, np.ndarray, float]:
    """Principal axes (rotation in the link frame), principal moments (kg m^2) MuJoCo accepts,
    and how much (kg m^2) they had to be raised.

    MuJoCo requires positive moments that satisfy the triangle inequality; URDFs that violate
    it by rounding (or more) are loaded by the dynamics core as given. The plant raises the
    offending moments by the least amount that makes them valid (0 for a consistent inertia).
    """
    moments, axes = np.linalg.eigh(inertial.inertia_in_link_axes())
    if np.linalg.det(axes) < 0.0:
        axes[:, 0] = -axes[:, 0]
    fixed = moments.copy()
    floor = max(1e-9 * float(np.max(np.abs(moments))), MASSLESS_BODY_INERTIA)
    fixed = np.maximum(fixed, floor)
    a, b, c = fixed  # ascending
    if a + b < c * (1.0 + 1e-9):
        half = 0.5 * (c * (1.0 + 1e-9) - a - b)
        fixed[0] += half
        fixed[1] += half
    return axes, fixed, float(np.max(np.abs(fixed - moments)))


def _binary_stl(path: str) -> bool:
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        header = fh.read(84)
    return len(header) == 84 and size == 84 + 50 * int.from_bytes(header[80:84], "little")


def _mesh_asset(asset: ET.Element, name: str, geo) -> str | None:
    """Add a MuJoCo mesh asset for a resolved mesh geometry; None if it has no volume."""
    path = geo.mesh_path
    suffix = Path(path).suffix.lower()
    if suffix == ".obj" or suffix == ".stl" and _binary_stl(path):
        ET.SubElement(
            asset, "mesh", name=name, file=path, scale=_fmt(geo.mesh_scale), inertia="shell"
        )
        return name
    try:
        hull = convex_hull_vertices(geometry_vertices(geo))
    except MeshError:
        return None
    if hull.shape[0] < 4:
        return None
    ET.SubElement(asset, "mesh", name=name, vertex=_fmt(hull.ravel()), inertia="shell")
    return name


def _welded_masses(p: RobotDescription) -> dict[str, float]:
    """Mass (kg) of each link plus the links welded to it by fixed joints (recursively): what
    MuJoCo needs to be non-zero on a body with a joint."""
    mass = {
        name: (link.inertial.mass if link.inertial is not None else 0.0)
        for name, link in p.links.items()
    }
    for joint in reversed(p.joints_in_tree_order()):
        if not joint.movable:
            mass[joint.parent] += mass[joint.child]
    return mass


def plant_description(
    p: RobotDescription, floating_base: bool
) -> tuple[RobotDescription, list[tuple[str, float]], list[str]]:
    """The description with the inertias the plant gives MuJoCo, and what was changed.

    Returns ``(description, adjusted, massless)``: inconsistent inertias replaced by the
    nearest ones MuJoCo accepts (:func:`mujoco_inertia`; ``adjusted`` lists (link, largest
    change in kg m^2)), and moving bodies that are massless together with everything welded to
    them given :data:`MASSLESS_BODY_MASS` (``massless`` lists them). A dynamics model built
    from this description is exactly the plant's (``test_robot_corpus.py`` checks it).
    """
    welded = _welded_masses(p)
    moving = {j.child for j in p.joints.values() if j.movable}
    if floating_base:
        moving.add(p.root)
    links = dict(p.links)
    adjusted: list[tuple[str, float]] = []
    massless: list[str] = []
    for name, link in p.links.items():
        inertial = link.inertial
        if inertial is not None and (inertial.mass > 0.0 or np.any(inertial.inertia)):
            axes, moments, raised = mujoco_inertia(inertial)
            if raised > 0.0:
                adjusted.append((name, raised))
                inertial = Inertial(inertial.mass, inertial.com, axes, np.diag(moments))
        else:
            inertial = None
        if name in moving and welded[name] == 0.0:  # MuJoCo needs mass on a moving body
            massless.append(name)
            if inertial is None:
                inertial = Inertial(0.0, np.zeros(3), np.eye(3), MASSLESS_BODY_INERTIA * np.eye(3))
            inertial = replace(inertial, mass=MASSLESS_BODY_MASS)
        if inertial is not link.inertial:
            links[name] = replace(link, inertial=inertial)
    if not adjusted and not massless:
        return p, adjusted, massless
    return replace(p, links=links), adjusted, massless


def _environment_contact(g: GroundOptions, mu: float, conaffinity: int) -> dict[str, str]:
    """Contact attributes of an environment geom (the ground, a free body): Coulomb coefficient
    ``mu`` (MuJoCo's default torsional and rolling friction), priority over the robot's geoms
    (its friction and solver parameters apply), the ground's soft-contact parameters ``g``,
    the environment's collision type and the affinity bits ``conaffinity``."""
    return {"friction": f"{mu!r} 0.005 0.0001", "priority": "1", "solref": _fmt(g.solref()),
            "solimp": _fmt(g.solimp()), "contype": str(_ENV_CONTYPE),
            "conaffinity": str(conaffinity)}


def _body_name(link: str) -> str:
    """MuJoCo body of a URDF link ("world" is MuJoCo's reserved world body)."""
    return "world_link" if link == "world" else link


#: Geom group of the URDF visuals (``visuals=True``) and of the collision geoms beside them:
#: MuJoCo's default visibility draws groups 0-2 and hides 3.
VISUAL_GROUP, HIDDEN_COLLISION_GROUP = 2, 3
_DEFAULT_VISUAL_RGBA = (0.7, 0.7, 0.7, 1.0)


def _rgba(text: str | None) -> tuple | None:
    try:
        vals = tuple(float(x) for x in (text or "").split())
    except ValueError:
        return None
    return vals if len(vals) == 4 and all(math.isfinite(v) for v in vals) else None


def _urdf_visuals(
    p: RobotDescription, source, package_dirs
) -> dict[str, list[tuple[CollisionGeometry, tuple]]]:
    """The ``<visual>`` shapes of each link of the URDF ``source`` (path or XML; ``True``: the
    file the description was read from), as geometry + RGBA. Malformed visuals are skipped."""
    if source is True:
        source = p.label
        if not (isinstance(source, str) and os.path.isfile(source)):
            raise ValueError("visuals: the description was not read from a file; pass the URDF")
    xml, _, base_dir = read_source(source)
    root = ET.fromstring(xml.lstrip())
    roots = package_roots(package_dirs)
    materials = {
        m.get("name"): _rgba(c.get("rgba"))
        for m in root.findall("material")
        if (c := m.find("color")) is not None
    }
    out: dict[str, list] = {}
    for link_el in root.findall("link"):
        name = link_el.get("name")
        if name not in p.links:
            continue
        shapes = []
        for vis in link_el.findall("visual"):
            try:
                geom_el = vis.find("geometry")
                if geom_el is None or len(geom_el) == 0:
                    continue
                o = vis.find("origin")
                o = o if o is not None else ET.Element("origin")
                xyz = [float(v) for v in o.get("xyz", "0 0 0").split()]
                rpy = [float(v) for v in o.get("rpy", "0 0 0").split()]
                R, c = rpy_matrix(rpy), np.array(xyz, float)
                g = geom_el[0]
                if g.tag == "sphere":
                    geo = CollisionGeometry(name, "sphere", R, c, radius=float(g.get("radius")))
                elif g.tag in ("cylinder", "capsule"):
                    geo = CollisionGeometry(name, g.tag, R, c, radius=float(g.get("radius")),
                                            length=float(g.get("length")))
                elif g.tag == "box":
                    size = np.array([float(v) for v in g.get("size").split()])
                    geo = CollisionGeometry(name, "box", R, c, size=size)
                elif g.tag == "mesh":
                    uri = g.get("filename")
                    scale = np.array([float(v) for v in g.get("scale", "1 1 1").split()])
                    path = resolve_resource(uri, base_dir, roots) if uri else None
                    if path is None or scale.size != 3:
                        continue
                    geo = CollisionGeometry(name, "mesh", R, c, mesh_uri=uri, mesh_path=path,
                                            mesh_scale=scale)
                else:
                    continue
            except (TypeError, ValueError, AttributeError):
                continue  # a malformed visual: nothing to draw
            rgba = None
            mat = vis.find("material")
            if mat is not None:
                col = mat.find("color")
                rgba = _rgba(col.get("rgba")) if col is not None else materials.get(mat.get("name"))
            shapes.append((geo, rgba or _DEFAULT_VISUAL_RGBA))
        out[name] = shapes
    return out


def _primitive(geo) -> dict[str, str]:
    """A MuJoCo geom's ``type`` and ``size`` of a URDF sphere, box, cylinder or capsule (a
    cylinder's: radius and half-length of the cylindrical part)."""
    if geo.kind == "sphere":
        return {"type": "sphere", "size": _fmt([geo.radius])}
    if geo.kind == "box":
        return {"type": "box", "size": _fmt(0.5 * geo.size)}
    return {"type": geo.kind, "size": _fmt([geo.radius, 0.5 * geo.length])}


def build_mjcf(
    urdf: str | os.PathLike | RobotDescription,
    floating_base: bool,
    ground: GroundOptions | None = None,
    free_bodies: tuple[FreeBody, ...] = (),
    collision_links: list[str] | None = None,
    base_pos: tuple = (0.0, 0.0, 0.0),
    joint_limits: bool = True,
    *,
    joint_dynamics: bool = True,
    mimic: bool = False,
    package_dirs: Sequence[str | os.PathLike] | None = None,
    visuals: bool | str | os.PathLike = False,
) -> str:
    """Translate a robot description into an MJCF string (see the module docstring).

    Args:
        urdf: URDF path, XML string or parsed :class:`~wbc_dynamics.description.RobotDescription`
            (the controller model's ``description``: one parse for both).
        floating_base: root link gets a MuJoCo free joint (else it is welded to the world).
        ground: ground plane and integrator settings; ``None`` = default rigid, high friction.
        free_bodies: extra free boxes (e.g. the grasped box).
        collision_links: links whose collision geometry may touch the environment (``None`` =
            all links); geometry of other links is kept for display but never collides.
        base_pos: position of the root link at the model's reference configuration [m].
        joint_limits: let MuJoCo enforce URDF position limits.
        joint_dynamics: keep the URDF's ``<dynamics damping friction>`` as MuJoCo joint
            ``damping`` and ``frictionloss`` (False: frictionless, undamped joints).
        mimic: couple ``<mimic>`` joints to their leaders with MuJoCo joint equality constraints
            (False: independent joints, like the dynamics core's default).
        package_dirs: directories searched first for ``package://`` meshes.
        visuals: for rendering: also emit the URDF's ``<visual>`` shapes as non-colliding,
            massless geoms (group 2; collision geoms of links with visuals move to the hidden
            group 3). ``True``
            reads them from ``urdf`` (a path or XML, or the file a description was read from),
            a path / XML string from that URDF. Default off: the physics plant.
    """
    p = _description(urdf, package_dirs)
    visual_shapes = {}
    if visuals is not False:
        source = visuals
        if visuals is True and not isinstance(urdf, RobotDescription):
            source = urdf
        visual_shapes = _urdf_visuals(p, source, package_dirs)
    g = ground or GroundOptions()
    mu = g.mu
    mj = ET.Element("mujoco", model=p.name)
    ET.SubElement(mj, "compiler", _COMPILER)
    ET.SubElement(mj, "option", {"timestep": repr(g.timestep), **_OPTION})
    size_el = ET.SubElement(mj, "size")
    size_el.set("memory", "8M")
    asset = ET.SubElement(mj, "asset")
    world = ET.SubElement(mj, "worldbody")
    if g.height is not None:
        ET.SubElement(
            world,
            "geom",
            name="ground",
            type="plane",
            size="0 0 1",
            pos=f"0 0 {g.height!r}",
            **_environment_contact(g, mu, _ENV_CONAFFINITY),
            rgba="0.8 0.8 0.8 1",
        )
    skipped: list[str] = []
    depth = {p.root: 1}
    for joint in p.joints_in_tree_order():
        depth[joint.child] = depth[joint.parent] + 1
    if max(depth.values()) > MAX_TREE_DEPTH:
        deepest = max(depth, key=depth.get)
        raise ValueError(
            f"urdf: link '{deepest}' is {depth[deepest]} links deep; MuJoCo's XML parser nests "
            f"at most {MAX_TREE_DEPTH} bodies"
        )
    p, adjusted, massless = plant_description(p, floating_base)
    changed = {name for name, _ in adjusted} | set(massless)
    mesh_count = 0

    def add_link(parent_el, link: LinkDescription, pos, quat, joint: JointDescription | None):
        if joint is None and not floating_base and link.name == "world":
            body = parent_el  # a fixed-base URDF's "world" link is MuJoCo's worldbody
        else:
            body = ET.SubElement(
                parent_el, "body", name=_body_name(link.name), pos=_fmt(pos), quat=_fmt(quat)
            )
        if joint is None and floating_base:
            ET.SubElement(body, "freejoint", name="root")
        elif joint is not None and joint.movable:
            damping, friction = (joint.damping, joint.friction) if joint_dynamics else (0.0, 0.0)
            attrs = {
                "name": joint.name,
                "type": "slide" if joint.type == "prismatic" else "hinge",
                "axis": _fmt(joint.axis),
                "pos": "0 0 0",
                "damping": repr(damping),
                "armature": "0",
                "frictionloss": repr(friction),
            }
            if (
                joint_limits
                and math.isfinite(joint.lower)
                and math.isfinite(joint.upper)
                and joint.upper > joint.lower
            ):
                attrs["range"] = f"{joint.lower!r} {joint.upper!r}"
            ET.SubElement(body, "joint", **attrs)
        inertial = link.inertial  # (already what MuJoCo accepts: see plant_description)
        if (
            inertial is not None
            and (inertial.mass > 0.0 or np.any(inertial.inertia))
            and body is not parent_el
        ):
            attrs = {"pos": _fmt(inertial.com), "mass": repr(inertial.mass)}
            if link.name in changed:  # principal axes: exactly the moments MuJoCo accepts
                axes, moments, _ = mujoco_inertia(inertial)
                attrs.update(quat=_fmt(_mat_to_quat_wxyz(axes)), diaginertia=_fmt(moments))
            else:  # as written in the URDF (link axes)
                full = inertial.inertia_in_link_axes()
                attrs["fullinertia"] = _fmt(full[[0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]])
            ET.SubElement(body, "inertial", **attrs)
        collides = collision_links is None or link.name in collision_links
        hidden = {"group": str(HIDDEN_COLLISION_GROUP)} if visual_shapes.get(link.name) else {}
        for k, geo in enumerate(link.collisions):
            if geo.kind == "mesh" and geo.mesh_path is None:  # the description warned already
                continue
            if not add_geom(body, geo, f"{link.name}__col{k}", "mesh",
                            friction=f"{mu!r} 0.005 0.0001",
                            contype=str(_ROBOT_CONTYPE if collides else 0),
                            conaffinity=str(_ROBOT_CONAFFINITY if collides else 0),
                            rgba="0.3 0.4 0.8 1", **hidden):  # (hidden: drawn by its visuals)
                skipped.append(f"link '{link.name}' {geo.mesh_uri!r}")
        for k, (geo, rgba) in enumerate(visual_shapes.get(link.name, ())):
            add_geom(body, geo, f"{link.name}__vis{k}", "vmesh", contype="0", conaffinity="0",
                     group=str(VISUAL_GROUP), rgba=_fmt(rgba))
        return body

    def add_geom(body, geo, name: str, mesh_prefix: str, **attrs: str) -> bool:
        """A massless geom ``name`` of the shape ``geo`` (at its pose in the link) with the
        attributes ``attrs`` in ``body``; a mesh becomes the asset ``<mesh_prefix><n>``. False
        (no geom) for a mesh without volume."""
        nonlocal mesh_count
        attrs = {"name": name, "pos": _fmt(geo.center),
                 "quat": _fmt(_mat_to_quat_wxyz(geo.rotation)), "mass": "0", **attrs}
        if geo.kind == "mesh":
            mname = _mesh_asset(asset, f"{mesh_prefix}{mesh_count}", geo)
            if mname is None:
                return False
            mesh_count += 1
            attrs.update(type="mesh", mesh=mname)
        else:
            attrs.update(_primitive(geo))
        ET.SubElement(body, "geom", **attrs)
        return True

    # depth-first with an explicit stack (no recursion limit on long chains), children in
    # document order
    stack = [(world, p.root, np.asarray(base_pos, float), np.array([1.0, 0, 0, 0]), None)]
    while stack:
        parent_el, name, pos, quat, joint = stack.pop()
        body = add_link(parent_el, p.links[name], pos, quat, joint)
        for jname in reversed(p.children[name]):
            j = p.joints[jname]
            stack.append((body, j.child, j.translation, _mat_to_quat_wxyz(j.rotation), j))
    for fb in free_bodies:
        qx, qy, qz, qw = fb.quat_xyzw
        body = ET.SubElement(
            world, "body", name=fb.name, pos=_fmt(fb.pos), quat=_fmt((qw, qx, qy, qz))
        )
        ET.SubElement(body, "freejoint", name=f"{fb.name}__free")
        ET.SubElement(
            body, "inertial", pos="0 0 0", mass=repr(fb.mass), diaginertia=_fmt(fb.inertia())
        )
        ET.SubElement(
            body,
            "geom",
            name=f"{fb.name}__col0",
            type="box",
            size=_fmt(0.5 * np.asarray(fb.size)),
            mass="0",
            **_environment_contact(g, fb.friction, _ENV_CONAFFINITY | 1),
            rgba="0.8 0.5 0.2 1",
        )
    movable = [j for j in p.joints_in_tree_order() if j.movable]
    if mimic:
        equality = ET.SubElement(mj, "equality")
        for j in movable:
            if j.mimic is not None and p.joints.get(j.mimic.leader, j).movable:
                ET.SubElement(
                    equality,
                    "joint",
                    name=f"{j.name}__mimic",
                    joint1=j.name,
                    joint2=j.mimic.leader,
                    polycoef=_fmt([j.mimic.offset, j.mimic.multiplier, 0, 0, 0]),
                )
    act = ET.SubElement(mj, "actuator")
    for j in movable:
        attrs = {"name": j.name, "joint": j.name, "gear": "1"}
        if math.isfinite(j.effort) and j.effort > 0.0:
            attrs["ctrlrange"] = f"{-j.effort!r} {j.effort!r}"
        ET.SubElement(act, "motor", **attrs)
    notes = []
    if skipped:
        notes.append(
            f"left out {len(skipped)} collision mesh(es) that could not be read or have no "
            f"volume: {', '.join(skipped[:5])}" + (" ..." if len(skipped) > 5 else "")
        )
    if adjusted:
        worst = max(adjusted, key=lambda item: item[1])
        notes.append(
            f"raised the principal moments of {len(adjusted)} inconsistent link inertia(s) to "
            f"make them acceptable to MuJoCo (positive, triangle inequality): "
            f"{', '.join(repr(name) for name, _ in adjusted[:8])}"
            + (" ..." if len(adjusted) > 8 else "")
            + f"; largest change {worst[1]:.3g} kg m^2 on '{worst[0]}'"
        )
    if massless:
        notes.append(
            f"gave {len(massless)} massless moving link(s) {MASSLESS_BODY_MASS:g} kg so MuJoCo "
            f"accepts them: {', '.join(repr(n) for n in massless[:8])}"
            + (" ..." if len(massless) > 8 else "")
        )
    if notes:
        warnings.warn(f"mujoco_model ({p.name}): " + "; ".join(notes), stacklevel=2)
    return ET.tostring(mj, encoding="unicode")

