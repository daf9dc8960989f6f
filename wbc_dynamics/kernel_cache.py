"""Where and under which key numba caches the package's kernels: a content-keyed cache that
survives installation.

numba's own cache locators key a cached kernel on its *own* source file only and keep it beside
that file (``__pycache__``) or under a directory named after the file's absolute path. Two
problems follow for this package:

* A kernel that calls a kernel of another module compiles (or links) that callee into itself,
  so after an edit of only the callee's file the caller would keep loading the old callee's
  code from the cache: silently stale results.
* A cache filled before installation (``pip install``, ``colcon build``) is never found after
  it: the files move, so every user's first start compiled everything (tens of seconds).

:class:`PackageCacheLocator`, registered by :func:`install_cache_locator` when the package is
imported (before any kernel module is), replaces numba's locators for the package's files:

* its *source stamp* is :func:`source_fingerprint`, a SHA-256 of the relative path and content
  of every kernel source of the package and of the package's modules they import: any edit of
  any of them invalidates every cached kernel (callers with their callees); copying the files
  elsewhere (install, checkout, new mtimes) invalidates nothing;
* its *directory* is :func:`cache_root` plus the source file's directory relative to the
  package, so the cache is as relocatable as the sources: ``NUMBA_CACHE_DIR`` if set (the
  user's explicit choice, never seeded), else the package's own :data:`CACHE_DIR_NAME`
  directory if writable -- which the build step fills and installation copies along -- else a
  directory of numba's user-wide cache, seeded once from the shipped directory (a read-only
  install, e.g. a system prefix).

numba itself still checks the rest of each entry's key: its version (index header), the
Python version (file name), the function's bytecode, the signature and the target CPU name and
features: a cache built on another machine is a miss, compiled and added, never loaded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile

# numba's locator interface (numba/core/caching.py): a private API, pinned by the tests of
# test/test_kernel_cache.py (which run numba's own cache through it)
from numba.core.caching import CacheImpl, _CacheLocator

__all__ = [
    "CACHE_DIR_NAME",
    "PRECOMPILED_NAME",
    "PackageCacheLocator",
    "cache_root",
    "install_cache_locator",
    "is_precompiled",
    "kernel_cache_dir",
    "precompiled_marker",
    "source_fingerprint",
    "write_precompiled_marker",
]

#: the package's own cache directory (filled at build time, installed with the package)
CACHE_DIR_NAME = "_kernel_cache"
#: the file in a cache root that records what the shipped configurations were compiled for
PRECOMPILED_NAME = "precompiled.json"
#: the package's root directory
_THIS_FILE = os.path.abspath(__file__)
_PACKAGE_DIR = os.path.dirname(_THIS_FILE)
#: byte strings that mark a source file as defining (or being compiled into) numba kernels
_KERNEL_MARKERS = ("njit", "numba.jit", "register_jitable", "@overload", "@intrinsic")


def _kernel_sources(package_dir: str) -> list[str]:
    """The package's ``.py`` files that define numba kernels, and the package's modules they
    import (sorted absolute paths): numba freezes a global a kernel reads (a constant, a record
    dtype) into its compiled code, and a kernel can read only its own module's names."""
    found: set[str] = set()
    imported: set[str] = set()
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs
                         if d not in ("__pycache__", CACHE_DIR_NAME) and not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.endswith(".py") and path != _THIS_FILE:  # (this file compiles nothing)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                if any(m in text for m in _KERNEL_MARKERS):
                    found.add(path)
                    imported |= _package_imports(text, path, package_dir)
    return sorted(found | imported)


#: ``from X import names`` (names possibly parenthesized over lines) and ``import X``, in source
#: without comments (a regular expression: parsing every kernel source took ~1 s per start)
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
                     r"|import[ \t]+([\w.]+))", re.MULTILINE)


def _package_imports(text: str, path: str, package_dir: str) -> set[str]:
    """Source files of the modules of ``package_dir`` that the module ``path`` (source
    ``text``) imports."""
    name = os.path.basename(package_dir)
    here = [name, *(p for p in os.path.relpath(os.path.dirname(path), package_dir).split(os.sep)
                    if p != ".")]
    modules = []
    for dots, module, names, plain in _IMPORT.findall(re.sub(r"#[^\n]*", "", text)):
        if plain:
            modules.append(plain)
            continue
        base = here[:len(here) - len(dots) + 1] if dots else []
        mod = ".".join([*base, *([module] if module else [])])
        modules += [mod, *(f"{mod}.{n.split()[0]}" for n in names.strip("()").split(",")
                           if n.strip())]
    found = set()
    for mod in modules:
        parts = mod.split(".")
        if parts[0] != name:
            continue
        base = os.path.join(package_dir, *parts[1:])
        found |= {c for c in (base + ".py", os.path.join(base, "__init__.py"))
                  if os.path.isfile(c) and c != _THIS_FILE}
    return found


@functools.cache
def source_fingerprint(package_dir: str = _PACKAGE_DIR) -> str:
    """SHA-256 (hex) of the relative path and content of every kernel source of
    ``package_dir``: the source stamp of all its cached kernels. Read once per process (a
    process runs the sources it imported)."""
    digest = hashlib.sha256()
    for path in _kernel_sources(package_dir):
        with open(path, "rb") as f:
            content = f.read()
        rel = os.path.relpath(path, package_dir).replace(os.sep, "/")
        digest.update(f"{rel}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def _writable(directory: str) -> bool:
    """Whether ``directory`` exists or can be created and a file can be written in it (as
    numba's ``ensure_cache_path`` checks; permission bits alone say nothing for root or a
    read-only mount)."""
    try:
        os.makedirs(directory, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError:
        return False
    return True


def _make_cache_dir(root: str) -> None:
    """Create ``root`` with a ``.gitignore`` of ``*`` (a source checkout never tracks it)."""
    os.makedirs(root, exist_ok=True)
    ignore = os.path.join(root, ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w") as f:
            f.write("*\n")


def _seed(shipped: str, user: str, fingerprint: str) -> None:
    """Copy the shipped cache into ``user`` once per shipped version (sources, numba, CPU):
    each file written under a temporary name and renamed (a concurrent reader sees the old file
    or the whole new one), the record last (an interrupted copy is done again)."""
    marker = precompiled_marker(shipped)
    if marker is None or marker.get("fingerprint") != fingerprint:
        return
    mine = precompiled_marker(user) or {}
    if all(mine.get(k) == marker.get(k) for k in ("fingerprint", "numba", "cpu")):
        return
    for root, _dirs, files in os.walk(shipped):
        dst_dir = os.path.join(user, os.path.relpath(root, shipped))
        os.makedirs(dst_dir, exist_ok=True)
        for name in files:
            if name.endswith((".nbi", ".nbc")):
                _copy(os.path.join(root, name), os.path.join(dst_dir, name))
    _copy(os.path.join(shipped, PRECOMPILED_NAME), os.path.join(user, PRECOMPILED_NAME))


def _copy(src: str, dst: str) -> None:
    tmp = os.path.join(os.path.dirname(dst), f".{os.path.basename(dst)}.{os.getpid()}")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


@functools.cache
def _cache_root(package_dir: str, numba_cache_dir: str) -> str:
    from numba.misc.appdirs import AppDirs

    # a directory per package location, named as numba names its own (parent name + hash)
    subpath = _CacheLocator.get_suitable_cache_subpath(os.path.join(package_dir, "__init__.py"))
    if numba_cache_dir:
        return os.path.join(numba_cache_dir, subpath)
    shipped = os.path.join(package_dir, CACHE_DIR_NAME)
    if _writable(shipped):
        _make_cache_dir(shipped)
        return shipped
    user = os.path.join(AppDirs(appname="numba", appauthor=False).user_cache_dir, subpath)
    try:
        os.makedirs(user, exist_ok=True)
        _seed(shipped, user, source_fingerprint(package_dir))
    except OSError:
        pass  # seeding only saves compile time; numba compiles what it does not find
    return user


def cache_root(package_dir: str = _PACKAGE_DIR) -> str:
    """The directory the kernels of ``package_dir`` are cached under (see the module
    docstring for the order: ``NUMBA_CACHE_DIR``, the package's :data:`CACHE_DIR_NAME`, the
    user-wide cache seeded from it). Decided once per process and ``NUMBA_CACHE_DIR``."""
    from numba.core import config

    return _cache_root(os.path.abspath(package_dir), config.CACHE_DIR or "")


def _inside(path: str, directory: str) -> bool:
    return os.path.abspath(path).startswith(directory + os.sep)


def _cpu() -> str:
    """The target numba compiles for: triple, CPU name and features, as in every cache entry's
    key (``codegen.magic_tuple()``)."""
    from numba.core.registry import cpu_target

    return " ".join(cpu_target.target_context.codegen().magic_tuple())


class PackageCacheLocator(_CacheLocator):
    """numba cache locator for the kernels defined in :attr:`package_dir` (a subclass per
    package, made by :func:`install_cache_locator`): content-keyed, relocatable (module
    docstring)."""

    #: absolute path of the package whose files this locator serves
    package_dir: str = _PACKAGE_DIR

    def __init__(self, py_func, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), self.package_dir)
        self._cache_path = os.path.normpath(os.path.join(cache_root(self.package_dir), rel))

    def get_cache_path(self) -> str:
        """:func:`cache_root` joined with the source file's directory relative to the
        package."""
        return self._cache_path

    def get_source_stamp(self) -> str:
        """:func:`source_fingerprint` of the package (not of the function's own file)."""
        return source_fingerprint(self.package_dir)

    def get_disambiguator(self) -> str:
        """The function's first line number, as numba's locators (part of the file name)."""
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str):
        """A locator if ``py_file`` is one of the package's files with a writable cache
        directory, else None (numba then tries its own locators)."""
        if not _inside(py_file, cls.package_dir) or not os.path.exists(py_file):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install_cache_locator(package_dir: str = _PACKAGE_DIR) -> type[PackageCacheLocator]:
    """Put a :class:`PackageCacheLocator` for ``package_dir`` first in numba's locator list
    (idempotent); kernels decorated afterwards are cached through it. Returns the locator
    class."""
    package_dir = os.path.abspath(package_dir)
    classes = CacheImpl._locator_classes
    for cls in classes:
        if getattr(cls, "package_dir", None) == package_dir and issubclass(
                cls, PackageCacheLocator):
            return cls
    cls = type(f"PackageCacheLocator_{os.path.basename(package_dir)}", (PackageCacheLocator,),
               {"package_dir": package_dir, "__module__": __name__})
    classes.insert(0, cls)
    return cls


def kernel_cache_dir(source_file: str) -> str | None:
    """The directory numba caches ``source_file``'s kernels in, found with numba's locators in
    numba's order (the package's first, once installed); None if numba could not cache there."""
    from numba.core import caching

    def probe() -> None:  # a function object for the locators (they read its line number)
        """probe"""

    for locator_class in caching.CacheImpl._locator_classes:
        try:
            locator = locator_class.from_function(probe, source_file)
        except Exception:  # noqa: BLE001 - a locator that does not apply to a plain file
            continue
        if locator is not None:
            return locator.get_cache_path()
    return None


def _marker_key(package_dir: str) -> dict:
    import numba

    return {"fingerprint": source_fingerprint(package_dir), "numba": numba.__version__,
            "cpu": _cpu()}


def precompiled_marker(root: str) -> dict | None:
    """The :data:`PRECOMPILED_NAME` record of the cache root ``root`` (None if absent or
    unreadable)."""
    try:
        with open(os.path.join(root, PRECOMPILED_NAME)) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def is_precompiled(package_dir: str = _PACKAGE_DIR) -> bool:
    """Whether the shipped configurations were compiled into the current cache root for these
    sources, this numba and this CPU (:func:`write_precompiled_marker`)."""
    marker = precompiled_marker(cache_root(package_dir))
    return marker is not None and all(marker.get(k) == v
                                      for k, v in _marker_key(package_dir).items())


def write_precompiled_marker(configs: list[str], seconds: float,
                             package_dir: str = _PACKAGE_DIR) -> str:
    """Record in the cache root that ``configs`` were compiled (for these sources, this numba,
    this CPU; ``seconds`` [s] of compilation). Returns the record's path."""
    root = cache_root(package_dir)
    path = os.path.join(root, PRECOMPILED_NAME)
    record = {**_marker_key(package_dir), "configs": sorted(configs),
              "seconds": round(seconds, 1)}
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, path)
    return path
