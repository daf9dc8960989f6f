"""Resolving ``package://`` and relative resource filenames (meshes) to files on disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def package_roots(package_dirs: Sequence[str | os.PathLike] | None = None) -> list[Path]:
    """Directories searched for ``package://NAME/...``, in order: ``package_dirs``, then the
    ``share`` directories of ``AMENT_PREFIX_PATH``, the entries of ``ROS_PACKAGE_PATH``, and
    the ``cmeel.prefix/share`` directories of the Python environment (ROS packages installed
    from the package index as cmeel wheels, e.g. ``pip install example-robot-data``)."""
    roots = [Path(d) for d in (package_dirs or ())]
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            roots.append(Path(prefix) / "share")
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            roots.append(Path(entry))
    import site
    import sys

    seen: set[Path] = set()
    for entry in [*sys.path, *site.getsitepackages()]:
        share = Path(entry or ".") / "cmeel.prefix" / "share"
        if share not in seen and share.is_dir():
            seen.add(share)
            roots.append(share)
    return roots


def resolve_resource(uri: str, base_dir: Path | None, roots: Sequence[Path]) -> str | None:
    """Absolute path of the file ``uri`` names, or ``None`` when it cannot be found.

    * ``package://NAME/REL``: ``ROOT/NAME/REL`` or ``ROOT/REL`` when ``ROOT`` is itself named
      NAME, for each of ``roots`` (see :func:`package_roots`); then the ancestors of the URDF's
      directory ``base_dir`` the same way (a package checked out around its URDF, or
      example-robot-data's ``share/example-robot-data/robots/...`` layout).
    * ``file:///abs/path`` and absolute paths: as they are.
    * Relative paths: relative to ``base_dir``.
    """
    if uri.startswith("package://"):
        package, _, rel = uri[len("package://") :].lstrip("/").partition("/")
        if not package or not rel:
            return None
        candidates: list[Path] = []
        ancestors = [base_dir, *base_dir.parents] if base_dir is not None else []
        for root in [*roots, *ancestors]:
            if root.name == package:
                candidates.append(root / rel)
            candidates.append(root / package / rel)
        for path in candidates:
            if path.is_file():
                return str(path.resolve())
        return None
    if uri.startswith("file://"):
        path = Path(uri[len("file://") :])
    else:
        path = Path(uri)
        if not path.is_absolute():
            if base_dir is None:
                return None
            path = base_dir / path
    return str(path.resolve()) if path.is_file() else None
