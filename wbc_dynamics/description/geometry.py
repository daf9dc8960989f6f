"""Collision geometry of a parsed robot description (URDF ``<collision>`` elements)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The shapes a :class:`CollisionGeometry` can have.
GEOMETRY_KINDS = ("sphere", "box", "cylinder", "capsule", "mesh")


@dataclass(frozen=True)
class CollisionGeometry:
    """One ``<collision>`` shape of a link, in the URDF's order.

    Attributes:
        link: URDF link name; every pose below is in this link's frame.
        kind: ``"sphere"``, ``"box"``, ``"cylinder"``, ``"capsule"`` or ``"mesh"``.
        rotation: (3, 3) orientation of the geometry frame in the link frame.
        center: (3,) origin of the geometry frame in the link frame (m).
        radius: sphere / cylinder / capsule radius (m); 0 for boxes and meshes.
        length: cylinder / capsule length along the geometry frame's z axis (m); for a capsule
            the length of the cylindrical part (URDF convention, caps excluded).
        size: box full extents along the geometry frame's x, y, z (m).
        mesh_uri: mesh ``filename`` exactly as written in the URDF.
        mesh_path: the mesh resolved to an absolute file path, ``None`` if it could not be found
            (see :func:`wbc_dynamics.description.resolve_resource`).
        mesh_scale: (3,) per-axis mesh scale (mesh vertices are multiplied by it).
    """

    link: str
    kind: str
    rotation: np.ndarray
    center: np.ndarray
    radius: float = 0.0
    length: float = 0.0
    size: np.ndarray | None = None
    mesh_uri: str | None = None
    mesh_path: str | None = None
    mesh_scale: np.ndarray | None = None


@dataclass(frozen=True)
class CollisionSphere:
    """A collision sphere: ``center`` (m) in the frame of ``link``, ``radius`` (m).

    Derived from the ``"sphere"`` entries of :class:`CollisionGeometry` (kept for the users of the
    sphere-only contact API)."""

    link: str
    center: np.ndarray
    radius: float


@dataclass(frozen=True)
class CollisionBox:
    """A collision box: pose (``rotation``, ``center``) in ``link``'s frame, full ``size`` (m).

    Derived from the ``"box"`` entries of :class:`CollisionGeometry`."""

    link: str
    center: np.ndarray
    rotation: np.ndarray
    size: np.ndarray


def spheres_of(geometry: list[CollisionGeometry]) -> list[CollisionSphere]:
    """The sphere entries of ``geometry`` as :class:`CollisionSphere` (same order)."""
    return [CollisionSphere(g.link, g.center, g.radius) for g in geometry if g.kind == "sphere"]


def boxes_of(geometry: list[CollisionGeometry]) -> list[CollisionBox]:
    """The box entries of ``geometry`` as :class:`CollisionBox` (same order)."""
    return [CollisionBox(g.link, g.center, g.rotation, g.size) for g in geometry if g.kind == "box"]
