"""Mesh vertices from STL (binary and ASCII), Wavefront OBJ and Collada (.dae) files.

Used where a mesh's shape matters without a graphics library: the MuJoCo plant (for formats
MuJoCo cannot read) and contact candidates (support points of the convex hull). Vertices are
returned in the mesh file's frame scaled to metres (Collada ``<unit meter>`` and node
transforms applied; ``<up_axis>`` is ignored, as ROS tools do: tiago's ``Y_UP`` collision
meshes coincide with its STL visuals only unrotated); the URDF ``scale`` is applied by
:func:`geometry_vertices`.
"""

from __future__ import annotations

import math
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .geometry import CollisionGeometry

#: Suffixes :func:`mesh_vertices` reads (case-insensitive).
MESH_SUFFIXES = (".stl", ".obj", ".dae")


class MeshError(ValueError):
    """A mesh file that cannot be read; the message names the file."""


def mesh_vertices(path: str | Path) -> np.ndarray:
    """All vertices (n, 3) of a mesh file, in metres in the file's frame (z up)."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".stl":
            vertices = _stl_vertices(path)
        elif suffix == ".obj":
            vertices = _obj_vertices(path)
        elif suffix == ".dae":
            vertices = _dae_vertices(path)
        else:
            raise MeshError(f"{path}: unsupported mesh format (readable: {MESH_SUFFIXES})")
    except (OSError, ValueError, ET.ParseError, struct.error) as exc:
        if isinstance(exc, MeshError):
            raise
        raise MeshError(f"{path}: cannot read mesh: {exc}") from None
    if vertices.size == 0 or not np.all(np.isfinite(vertices)):
        raise MeshError(f"{path}: no finite vertices")
    return vertices


def geometry_vertices(geometry: CollisionGeometry) -> np.ndarray:
    """Vertices (n, 3) of a mesh :class:`CollisionGeometry` in its geometry frame, URDF
    ``scale`` applied (m). Raises :class:`MeshError` when the mesh was not resolved."""
    if geometry.kind != "mesh":
        raise ValueError(f"link '{geometry.link}': {geometry.kind} is not a mesh")
    if geometry.mesh_path is None:
        raise MeshError(f"link '{geometry.link}': mesh {geometry.mesh_uri!r} was not resolved")
    return mesh_vertices(geometry.mesh_path) * geometry.mesh_scale


def convex_hull_vertices(vertices: np.ndarray) -> np.ndarray:
    """The vertices of the convex hull of a point set (all points if it is degenerate)."""
    from scipy.spatial import ConvexHull, QhullError

    unique = np.unique(np.round(vertices, 12), axis=0)
    if unique.shape[0] < 4:
        return unique
    try:
        return unique[ConvexHull(unique).vertices]
    except QhullError:  # flat or collinear: every point is on the "hull"
        return unique


def _stl_vertices(path: Path) -> np.ndarray:
    data = path.read_bytes()
    if len(data) >= 84:
        (n_faces,) = struct.unpack_from("<I", data, 80)
        if len(data) == 84 + 50 * n_faces:  # binary (even when the header says "solid")
            rows = np.frombuffer(data, dtype=np.uint8, count=50 * n_faces, offset=84)
            rows = rows.reshape(n_faces, 50)[:, 12:48].copy()
            return rows.view("<f4").reshape(-1, 3).astype(float)
    text = data.decode("ascii", errors="replace")
    out = [line.split()[1:4] for line in text.splitlines() if line.strip().startswith("vertex")]
    return np.array(out, dtype=float).reshape(-1, 3)


def _obj_vertices(path: Path) -> np.ndarray:
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("v "):
                out.append(line.split()[1:4])
    return np.array(out, dtype=float).reshape(-1, 3)


def _local(el: ET.Element) -> str:
    return el.tag.rsplit("}", 1)[-1]


def _child(el: ET.Element, name: str) -> ET.Element | None:
    return next((c for c in el if _local(c) == name), None)


def _floats(el: ET.Element) -> np.ndarray:
    return np.array((el.text or "").split(), dtype=float)


def _node_transform(node: ET.Element) -> np.ndarray:
    """A Collada node's local transform (its transform elements composed in order)."""
    T = np.eye(4)
    for el in node:
        kind = _local(el)
        if kind == "matrix":
            T = T @ _floats(el).reshape(4, 4)
        elif kind == "translate":
            step = np.eye(4)
            step[:3, 3] = _floats(el)
            T = T @ step
        elif kind == "scale":
            T = T @ np.diag([*_floats(el), 1.0])
        elif kind == "rotate":
            x, y, z, angle = _floats(el)
            axis = np.array([x, y, z]) / max(math.sqrt(x * x + y * y + z * z), 1e-300)
            K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            a = math.radians(angle)
            step = np.eye(4)
            step[:3, :3] = np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K
            T = T @ step
    return T


def _dae_vertices(path: Path) -> np.ndarray:
    root = ET.parse(path).getroot()
    scale = 1.0
    asset = _child(root, "asset")
    if asset is not None:
        unit = _child(asset, "unit")
        if unit is not None and unit.get("meter"):
            scale = float(unit.get("meter"))
    positions: dict[str, np.ndarray] = {}
    for geom in root.iter():
        if _local(geom) != "geometry":
            continue
        mesh = _child(geom, "mesh")
        if mesh is None:
            continue
        sources = {}
        for src in mesh:
            if _local(src) == "source":
                arr = _child(src, "float_array")
                if arr is not None:
                    sources[src.get("id")] = _floats(arr)
        verts = _child(mesh, "vertices")
        if verts is None:
            continue
        for inp in verts:
            if _local(inp) == "input" and inp.get("semantic") == "POSITION":
                pts = sources.get((inp.get("source") or "").lstrip("#"))
                if pts is not None:
                    positions[geom.get("id")] = pts[: pts.size // 3 * 3].reshape(-1, 3)
    placed: list[np.ndarray] = []

    def walk(node: ET.Element, T: np.ndarray) -> None:
        T = T @ _node_transform(node)
        for child in node:
            kind = _local(child)
            if kind == "instance_geometry":
                pts = positions.get((child.get("url") or "").lstrip("#"))
                if pts is not None:
                    placed.append(pts @ T[:3, :3].T + T[:3, 3])
            elif kind == "node":
                walk(child, T)

    for scene in root.iter():
        if _local(scene) == "visual_scene":
            for node in scene:
                if _local(node) == "node":
                    walk(node, np.eye(4))
            break
    vertices = np.vstack(placed) if placed else np.vstack([*positions.values(), np.empty((0, 3))])
    return vertices * scale
