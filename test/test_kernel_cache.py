"""numba's cache and cross-module kernels: wbc_dynamics.kernel_cache drops stale cached kernels.

A scratch package with a kernel (``caller.call``) that calls a kernel of another module
(``callee.value``): after ``callee.py`` changes, numba alone keeps running the old callee from
``caller``'s cache entry; with :func:`drop_stale_kernel_caches` run first (as
``wbc_dynamics/__init__.py`` does) the new code runs.
"""

import os
import subprocess
import sys
import textwrap

import numba

from wbc_dynamics.kernel_cache import STAMP_NAME, drop_stale_kernel_caches, kernel_cache_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write_package(pkg, value):
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(pkg, "callee.py"), "w") as f:
        f.write(textwrap.dedent(f"""\
            from numba import njit

            @njit(cache=True)
            def value():
                return {value}
            """))
    with open(os.path.join(pkg, "caller.py"), "w") as f:
        f.write(textwrap.dedent("""\
            from numba import njit
            from .callee import value

            @njit(cache=True)
            def call():
                return value() * 10
            """))


def _run(tmp_path, guard):
    """caller.call() in a fresh process (optionally after the guard); returns (value, deleted)."""
    code = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        deleted = []
        if {guard!r}:
            from wbc_dynamics.kernel_cache import drop_stale_kernel_caches
            deleted = drop_stale_kernel_caches({str(tmp_path / "pkg")!r})
        from pkg.caller import call
        print(call(), len(deleted))
        """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    value, deleted = res.stdout.split()
    return int(value), int(deleted)


def _edit_callee(pkg, value, bump):
    _write_package(pkg, value)
    st = os.stat(os.path.join(pkg, "callee.py"))
    os.utime(os.path.join(pkg, "callee.py"), ns=(st.st_atime_ns, st.st_mtime_ns + bump))


def test_numba_alone_runs_a_changed_callee_stale(tmp_path):
    """The hazard the guard exists for (if numba ever tracks cross-module dependencies, this
    fails and the guard can go)."""
    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    assert _run(tmp_path, guard=False) == (10, 0)
    _edit_callee(pkg, 2, bump=10**9)
    assert _run(tmp_path, guard=False) == (10, 0)  # caller's cache entry: the old callee


def test_guard_recompiles_after_a_callee_change_and_keeps_an_unchanged_cache(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))  # as the child's
    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    value, deleted = _run(tmp_path, guard=True)
    assert (value, deleted) == (10, 0)  # empty cache: nothing to drop, stamp written
    cache_dir = kernel_cache_dir(str(pkg / "caller.py"))
    assert cache_dir is not None and cache_dir.startswith(str(tmp_path / "cache"))
    assert os.path.isfile(os.path.join(cache_dir, STAMP_NAME))
    cached = sorted(n for n in os.listdir(cache_dir) if n.endswith(".nbi"))
    assert cached == sorted(n for n in cached if n.startswith(("caller.", "callee.")))
    assert len(cached) == 2
    # unchanged sources: the cache is kept (nothing deleted, no recompilation)
    assert _run(tmp_path, guard=True) == (10, 0)
    _edit_callee(pkg, 2, bump=10**9)
    value, deleted = _run(tmp_path, guard=True)
    assert value == 20  # the new callee, through caller's recompiled kernel
    assert deleted >= 4  # both kernels' index and data files
    assert _run(tmp_path, guard=True) == (20, 0)


def test_guard_leaves_other_files_in_the_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    cache_dir = kernel_cache_dir(str(pkg / "callee.py"))
    os.makedirs(cache_dir, exist_ok=True)
    foreign = os.path.join(cache_dir, "other_module.f-3.py311.nbi")
    with open(foreign, "w") as f:
        f.write("x")
    mine = os.path.join(cache_dir, "callee.value-3.py311.nbi")
    with open(mine, "w") as f:
        f.write("x")
    deleted = drop_stale_kernel_caches(str(pkg))  # no stamp yet: drop the package's entries
    assert deleted == [mine]
    assert os.path.isfile(foreign)
    assert drop_stale_kernel_caches(str(pkg)) == []
