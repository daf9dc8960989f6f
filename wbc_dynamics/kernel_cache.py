"""Keep numba's on-disk kernel cache consistent with the package's source.

numba checks a cached kernel against its *own* source file only (mtime and size). A kernel
that calls a kernel of another module compiles that callee into itself, so after an edit or an
update that changes only the callee's file (``git pull`` into a ``colcon build
--symlink-install`` workspace, an editable install), the caller keeps loading the old callee's
code from the cache: silently stale results. :func:`drop_stale_kernel_caches` runs when the
package is imported, before any kernel is loaded: it fingerprints every source file of the
package that defines kernels and, where the fingerprint differs from the one stored beside
the cache, deletes the package's cached kernels there, so they are compiled afresh once.
A pip / colcon (non-symlink) install rewrites every file and invalidates everything anyway;
then this costs one ``stat`` per source file at import.
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["STAMP_NAME", "drop_stale_kernel_caches", "kernel_cache_dir"]

#: the fingerprint file written beside the cached kernels of each source directory
STAMP_NAME = "wbc_dynamics-kernels.stamp"
#: the package's root directory
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _probe() -> None:
    """A function object for numba's cache locators (they read its first line number)."""


def kernel_cache_dir(source_file: str) -> str | None:
    """The directory numba caches ``source_file``'s kernels in (``NUMBA_CACHE_DIR``, else
    ``__pycache__`` beside it if writable, else the user-wide cache), found with numba's own
    locators in numba's order; None if numba could not cache there."""
    from numba.core import caching

    for locator_class in caching.CacheImpl._locator_classes:
        try:
            locator = locator_class.from_function(_probe, source_file)
        except Exception:  # a locator that does not apply to a plain source file
            continue
        if locator is not None:
            return locator.get_cache_path()
    return None


def _kernel_sources(package_dir: str) -> list[str]:
    """The package's ``.py`` files that define numba kernels (sorted paths)."""
    found = []
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    if b"@njit" in f.read():
                        found.append(path)
    return found


def drop_stale_kernel_caches(package_dir: str = _PACKAGE_DIR) -> list[str]:
    """Delete the cached kernels of ``package_dir`` if any of its kernel sources changed since
    they were cached (see the module docstring). Returns the deleted files' paths.

    The fingerprint is every kernel source's relative path, mtime [ns] and size; it is stored
    as :data:`STAMP_NAME` in each cache directory. Only cache files of the package's own
    modules (``<module>.<function>-<line>.py<ver>.nbi`` / ``.nbc``) are deleted. Never raises
    for file-system errors: caching is an optimisation, the kernels are then compiled as usual.
    """
    try:
        sources = _kernel_sources(package_dir)
        digest = hashlib.sha1()
        for path in sources:
            st = os.stat(path)
            rel = os.path.relpath(path, package_dir)
            digest.update(f"{rel}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
        fingerprint = digest.hexdigest()
        by_dir: dict[str, set[str]] = {}
        for path in sources:
            cache_dir = kernel_cache_dir(path)
            if cache_dir is not None:
                module = os.path.splitext(os.path.basename(path))[0]
                by_dir.setdefault(cache_dir, set()).add(module + ".")
    except OSError:
        return []
    deleted = []
    for cache_dir, prefixes in by_dir.items():
        stamp = os.path.join(cache_dir, STAMP_NAME)
        try:
            with open(stamp) as f:
                if f.read().strip() == fingerprint:
                    continue
        except OSError:
            pass  # no stamp yet: whatever is cached there predates this check
        try:
            for name in os.listdir(cache_dir):
                if name.endswith((".nbi", ".nbc")) and name.startswith(tuple(prefixes)):
                    os.remove(os.path.join(cache_dir, name))
                    deleted.append(os.path.join(cache_dir, name))
            tmp = f"{stamp}.{os.getpid()}"
            with open(tmp, "w") as f:
                f.write(fingerprint + "\n")
            os.replace(tmp, stamp)  # atomic: a concurrent import reads the old or the new one
        except OSError:
            continue
    return deleted
