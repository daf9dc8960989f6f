"""Contact candidates: the points of a robot's links that may touch the environment.

The contact kernel (:mod:`wbc_dynamics.contact.geometry`) works on *contact spheres*: a centre
fixed in a link frame and a radius (0 = a point). This module turns the URDF collision geometry of
every shape, or points declared in the configuration, into that one representation, once, at
start-up. How each shape becomes spheres (``ContactPoint.source`` says which rule made a point):

* ``sphere``: the sphere itself.
* ``box``: its 8 corners, radius 0. A box resting on a face touches with the 4 corners of that
  face (the rigid-contact solution for a flat face is the same as for its corners, which span the
  support polygon); the other corners stay above the contact margin and never become candidates.
* ``cylinder``: ``CYLINDER_RIM_POINTS`` points on each of its two rim circles, radius 0 (a
  cylinder standing on its end touches with its rim; a wheel or shank lying on its side with the
  lowest rim points).
* ``capsule``: the two spheres of its end caps (exact for contact with planes and spheres).
* ``mesh``: from the convex hull of its vertices (computed once per mesh file and scale). If the
  hull is round -- every hull vertex within ``MESH_SPHERE_TOLERANCE`` of a least-squares sphere
  and the hull filling at least ``MESH_SPHERE_FILL`` of that sphere's volume (the ball and disc
  feet of go2 and solo12; a box's corners also lie on a sphere, but fill a small part of it) --
  the sphere about its centre that contains the hull (a contact is never seen later than the
  mesh makes it; at most ``MESH_SPHERE_TOLERANCE`` of the radius early); otherwise the hull
  vertices that are extreme in the 26 directions of a cube's faces, edges and corners
  (``mesh support`` points, radius 0: a flat sole gives its corners, a rounded shell its
  outermost points; a sole with rounded edges rocks on them -- declare its corners instead).

Configured points (``points`` argument: ``{link: [(centre (3,) in the link frame [m], radius
[m]), ...]}``) replace the link's collision geometry; ``extra_points`` are added to it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..description import CollisionGeometry
    from ..model import RobotModel

__all__ = [
    "ContactPoint",
    "contact_points",
    "points_of_geometry",
    "CYLINDER_RIM_POINTS",
    "MESH_SPHERE_TOLERANCE",
    "MESH_SPHERE_FILL",
]

#: Points per rim circle of a cylinder.
CYLINDER_RIM_POINTS = 8
#: A mesh hull is treated as a sphere when every hull vertex's distance to the fitted centre is
#: within this fraction of the fitted radius (go2's ball foot: -15 % / +5 % at its neck).
MESH_SPHERE_TOLERANCE = 0.16
#: ... and the hull must fill this fraction of the sphere's volume (solo12's disc foot 0.7, a
#: cube 0.37).
MESH_SPHERE_FILL = 0.6


@dataclass(frozen=True)
class ContactPoint:
    """A contact sphere on a robot link.

    Attributes:
        link: URDF link name (its frame, not the merged body's, is the one of ``center``).
        center: (3,) sphere centre in the link frame [m].
        radius: [m], 0 for a point.
        source: the rule that made it: ``sphere``, ``box corner``, ``cylinder rim``,
            ``capsule cap``, ``mesh sphere``, ``mesh support``, ``configured`` or ``extra``.
    """

    link: str
    center: np.ndarray
    radius: float
    source: str


def _cube_directions() -> np.ndarray:
    d = np.array(
        [[i, j, k] for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)
         if (i, j, k) != (0, 0, 0)],
        dtype=float,
    )
    return d / np.linalg.norm(d, axis=1, keepdims=True)


_DIRECTIONS = _cube_directions()


def _fit_sphere(points: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Least-squares sphere through ``points``: (centre, radius, worst relative distance error)."""
    A = np.c_[2.0 * points, np.ones(len(points))]
    b = np.einsum("ij,ij->i", points, points)
    x = np.linalg.lstsq(A, b, rcond=None)[0]
    c = x[:3]
    r2 = x[3] + c @ c
    if not r2 > 0.0:
        return c, 0.0, np.inf
    r = float(np.sqrt(r2))
    err = np.abs(np.linalg.norm(points - c, axis=1) - r).max() / r
    return c, r, float(err)


@functools.lru_cache(maxsize=256)
def _mesh_points(path: str, scale: tuple[float, float, float]) -> tuple[tuple, ...]:
    """((centre, radius, source), ...) of a mesh in its geometry frame; cached per file+scale."""
    from scipy.spatial import ConvexHull, QhullError

    from ..description.meshes import convex_hull_vertices, mesh_vertices

    hull = convex_hull_vertices(mesh_vertices(path) * np.asarray(scale))
    if hull.shape[0] >= 4:
        c, r, err = _fit_sphere(hull)
        try:
            fill = ConvexHull(hull).volume / (4.0 / 3.0 * np.pi * r**3) if r > 0.0 else 0.0
        except QhullError:  # flat
            fill = 0.0
        if r > 0.0 and err <= MESH_SPHERE_TOLERANCE and fill >= MESH_SPHERE_FILL:
            # the sphere about the fitted centre that contains the hull: the controller never
            # sees a touchdown later than the mesh makes it (a radius 1 mm short left solo12's
            # feet "hovering" in the controller while MuJoCo's mesh carried the load)
            outer = float(np.max(np.linalg.norm(hull - c, axis=1)))
            return ((tuple(c), outer, "mesh sphere"),)
    idx = sorted({int(np.argmax(hull @ d)) for d in _DIRECTIONS})
    return tuple((tuple(hull[i]), 0.0, "mesh support") for i in idx)


def points_of_geometry(geometry: CollisionGeometry) -> list[ContactPoint]:
    """Contact spheres of one :class:`~wbc_dynamics.description.CollisionGeometry`, in the
    frame of its link (module docstring: how each shape becomes points).

    Raises:
        ValueError: a mesh that was not resolved or cannot be read (naming the link and file).
    """
    g = geometry
    R = np.asarray(g.rotation, dtype=float)
    p = np.asarray(g.center, dtype=float)
    local: list[tuple[np.ndarray, float, str]] = []
    if g.kind == "sphere":
        local.append((np.zeros(3), float(g.radius), "sphere"))
    elif g.kind == "box":
        h = 0.5 * np.asarray(g.size, dtype=float)
        for sx in (-1, 1):
            for sy in (-1, 1):
                for sz in (-1, 1):
                    local.append((h * np.array([sx, sy, sz], float), 0.0, "box corner"))
    elif g.kind == "cylinder":
        a = np.linspace(0.0, 2.0 * np.pi, CYLINDER_RIM_POINTS, endpoint=False)
        for z in (-0.5 * g.length, 0.5 * g.length):
            for ang in a:
                local.append((np.array([g.radius * np.cos(ang), g.radius * np.sin(ang), z]), 0.0,
                              "cylinder rim"))
    elif g.kind == "capsule":
        for z in (-0.5 * g.length, 0.5 * g.length):
            local.append((np.array([0.0, 0.0, z]), float(g.radius), "capsule cap"))
    elif g.kind == "mesh":
        from ..description.meshes import MeshError

        if g.mesh_path is None:
            raise ValueError(
                f"contact link '{g.link}': collision mesh {g.mesh_uri!r} was not found (pass "
                "package_dirs / set AMENT_PREFIX_PATH, or declare contact points for the link)"
            )
        try:
            pts = _mesh_points(str(g.mesh_path), tuple(float(s) for s in g.mesh_scale))
        except MeshError as exc:
            raise ValueError(f"contact link '{g.link}': {exc}") from None
        local.extend((np.asarray(c, float), float(r), src) for c, r, src in pts)
    else:  # pragma: no cover - the parser only produces GEOMETRY_KINDS
        raise ValueError(f"contact link '{g.link}': unsupported collision geometry {g.kind!r}")
    return [ContactPoint(g.link, p + R @ c, r, src) for c, r, src in local]


def _declared(link: str, entries, what: str) -> list[ContactPoint]:
    out = []
    for i, entry in enumerate(entries):
        try:
            center, radius = entry
            c = np.asarray(center, dtype=float).reshape(3)
            r = float(radius)
        except (TypeError, ValueError):
            raise ValueError(
                f"{what}['{link}'][{i}]: expected (centre (3,) [m], radius [m]), got {entry!r}"
            ) from None
        if not (np.all(np.isfinite(c)) and np.all(np.abs(c) <= 1e3)):
            raise ValueError(
                f"{what}['{link}'][{i}]: centre {c.tolist()} must be finite, |x| <= 1e3 m")
        if not (np.isfinite(r) and 0.0 <= r <= 1e3):
            raise ValueError(
                f"{what}['{link}'][{i}]: radius {r!r} must be finite and in [0, 1e3] m")
        out.append(ContactPoint(link, c, r, "configured" if what == "contact_points" else "extra"))
    return out


def contact_points(
    robot: RobotModel,
    links: Sequence[str],
    points: Mapping[str, Sequence] | None = None,
    extra_points: Mapping[str, Sequence] | None = None,
) -> list[ContactPoint]:
    """The contact spheres of ``links``, link by link in the given order.

    Args:
        robot: a RobotModel (its ``collision_geometry`` in URDF order is used).
        links: contact link names.
        points: ``{link: [(centre, radius), ...]}`` declared points; they replace that link's
            collision geometry.
        extra_points: ``{link: [(centre, radius), ...]}`` added after the link's points.

    Raises:
        ValueError: naming the link: unknown, not in ``links`` (for declared points), or with
            nothing that can touch (no collision geometry and no declared points).
    """
    links = list(links)
    for what, table in (("contact_points", points), ("extra_points", extra_points)):
        unknown = sorted(set(table or {}) - set(links))
        if unknown:
            raise ValueError(f"{what}: links {unknown} are not contact links ({links})")
    geometry = list(robot.collision_geometry)
    out: list[ContactPoint] = []
    for link in links:
        robot.link_frame(link)  # ValueError naming an unknown link
        if points and link in points:
            mine = _declared(link, points[link], "contact_points")
        else:
            mine = [pt for g in geometry if g.link == link for pt in points_of_geometry(g)]
        mine += _declared(link, (extra_points or {}).get(link, ()), "extra_points")
        if not mine:
            raise ValueError(
                f"contact link '{link}': no collision geometry in the URDF and no contact points "
                "declared for it (contact_points)"
            )
        out.extend(mine)
    return out
