"""numba's cache and the package's kernels: wbc_dynamics.kernel_cache's content-keyed locator.

A scratch package with a kernel (``caller.call``) that calls a kernel of another module
(``callee.value``), each run in a fresh process that registers the package's locator (as
``wbc_dynamics/__init__.py`` does for itself) before importing it, and reports the value and
numba's cache hits / misses of ``call``:

* numba alone keeps running the old callee from ``caller``'s cache entry after ``callee.py``
  changes; with the locator the edit invalidates the caller too;
* a copy of the package (an installation: new paths, new mtimes) loads the cache filled in the
  original's own cache directory: nothing is compiled;
* a read-only copy loads it from the user-wide cache, seeded from the shipped one;
* a cache built for another CPU is a miss: compiled and run, not loaded.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

from wbc_dynamics.kernel_cache import (
    CACHE_DIR_NAME,
    PRECOMPILED_NAME,
    cache_root,
    install_cache_locator,
    kernel_cache_dir,
    source_fingerprint,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write_package(pkg, value, scale=10):
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(pkg, "consts.py"), "w") as f:  # no kernel: a constant kernels read
        f.write(f"SCALE = {scale}\n")
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
            from .consts import (  # a comment, then the name
                SCALE)

            @njit(cache=True)
            def call():
                return value() * SCALE
            """))


#: the child: optionally the locator (optionally with the shipped directory read-only) and the
#: precompiled record, then caller.call(); prints value, cache hits and misses of call
_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
guard, read_only, record = sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1"
root = ""
if guard:
    from wbc_dynamics import kernel_cache
    if read_only:
        kernel_cache._writable = lambda directory: False
    kernel_cache.install_cache_locator(sys.argv[1] + "/pkg")
    root = kernel_cache.cache_root(sys.argv[1] + "/pkg")
from pkg.caller import call
value = call()
if record:
    kernel_cache.write_precompiled_marker(["call"], 0.0, sys.argv[1] + "/pkg")
print(json.dumps({"value": value, "hits": sum(call.stats.cache_hits.values()),
                  "misses": sum(call.stats.cache_misses.values()), "root": root}))
"""


def _run(base, guard=True, read_only=False, record=False, **env_extra):
    """caller.call() of ``base``/pkg in a fresh process; returns the child's report."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME")}
    env["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    env["XDG_CACHE_HOME"] = str(base / "xdg")  # numba's user-wide cache, per test
    env.update(env_extra)
    res = subprocess.run([sys.executable, "-c", _CHILD, str(base), str(int(guard)),
                          str(int(read_only)), str(int(record))],
                         env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def _counts(report):
    return report["value"], report["hits"], report["misses"]


def test_numba_alone_runs_a_changed_callee_stale(tmp_path):
    """The hazard the locator exists for (if numba ever tracks cross-module dependencies, this
    fails and the package's fingerprint stamp could become per-file)."""
    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    assert _counts(_run(tmp_path, guard=False)) == (10, 0, 1)
    _write_package(pkg, 2)
    assert _counts(_run(tmp_path, guard=False)) == (10, 1, 0)  # caller's entry: the old callee


def test_a_callee_edit_recompiles_its_callers_and_an_unchanged_package_compiles_nothing(
        tmp_path):
    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    first = _run(tmp_path)
    assert _counts(first) == (10, 0, 1)  # empty cache: compiled and saved
    assert first["root"] == str(pkg / CACHE_DIR_NAME)  # the package's own directory
    assert sorted(n for n in os.listdir(pkg / CACHE_DIR_NAME) if n.endswith(".nbi")) == [
        "callee.value-3.py{}{}.nbi".format(*sys.version_info[:2]),
        "caller.call-6.py{}{}.nbi".format(*sys.version_info[:2])]
    assert _counts(_run(tmp_path)) == (10, 1, 0)  # unchanged: loaded
    _write_package(pkg, 2)  # same size, mtime maybe the same: the content decides
    assert _counts(_run(tmp_path)) == (20, 0, 1)  # the new callee, through a recompiled caller
    assert _counts(_run(tmp_path)) == (20, 1, 0)
    _write_package(pkg, 2, scale=30)  # a constant the caller read when it was compiled
    assert _counts(_run(tmp_path)) == (60, 0, 1)
    assert _counts(_run(tmp_path)) == (60, 1, 0)


def test_a_copied_package_loads_the_cache_built_in_the_original(tmp_path):
    """An installation copies the package (new path, new mtimes, the cache directory along):
    the copy compiles nothing."""
    built, installed = tmp_path / "build", tmp_path / "site"
    _write_package(built / "pkg", 1)
    assert _counts(_run(built)) == (10, 0, 1)
    shutil.copytree(built / "pkg", installed / "pkg", copy_function=shutil.copyfile)
    assert _counts(_run(installed)) == (10, 1, 0)


def test_a_read_only_install_loads_the_shipped_cache_through_the_user_cache(tmp_path):
    built, installed = tmp_path / "build", tmp_path / "site"
    _write_package(built / "pkg", 1)
    assert _counts(_run(built, record=True)) == (10, 0, 1)
    assert os.path.isfile(built / "pkg" / CACHE_DIR_NAME / PRECOMPILED_NAME)
    shutil.copytree(built / "pkg", installed / "pkg", copy_function=shutil.copyfile)
    report = _run(installed, read_only=True)
    assert _counts(report) == (10, 1, 0)  # seeded from the shipped directory: nothing compiled
    assert report["root"].startswith(str(installed / "xdg" / "numba"))
    assert os.path.isfile(os.path.join(report["root"], PRECOMPILED_NAME))
    # an edit afterwards (a new version installed read-only) is not loaded stale
    _write_package(installed / "pkg", 3)
    assert _counts(_run(installed, read_only=True)) == (30, 0, 1)


def test_a_cache_built_for_another_cpu_is_compiled_again_not_loaded(tmp_path):
    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    assert _counts(_run(tmp_path, NUMBA_CPU_NAME="generic")) == (10, 0, 1)
    assert _counts(_run(tmp_path, NUMBA_CPU_NAME="generic")) == (10, 1, 0)
    assert _counts(_run(tmp_path)) == (10, 0, 1)  # the host CPU: a miss, compiled
    assert _counts(_run(tmp_path)) == (10, 1, 0)  # both entries kept side by side
    assert _counts(_run(tmp_path, NUMBA_CPU_NAME="generic")) == (10, 1, 0)


def test_numba_cache_dir_takes_precedence_and_the_locator_is_registered_once(tmp_path,
                                                                            monkeypatch):
    """``NUMBA_CACHE_DIR`` (the user's explicit choice, e.g. a cold-start test) holds the
    package's kernels in a directory of its own; the package's kernel files are served by its
    locator, other files by numba's."""
    import numba

    import wbc_dynamics

    pkg = tmp_path / "pkg"
    _write_package(pkg, 1)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    cls = install_cache_locator(str(pkg))
    try:
        assert install_cache_locator(str(pkg)) is cls
        root = cache_root(str(pkg))
        assert root.startswith(str(tmp_path / "cache" / "pkg_"))
        assert kernel_cache_dir(str(pkg / "caller.py")) == root
        other = tmp_path / "other.py"
        other.write_text("x = 1\n")
        assert kernel_cache_dir(str(other)).startswith(str(tmp_path / "cache" / tmp_path.name))
        package_dir = os.path.dirname(wbc_dynamics.__file__)
        assert kernel_cache_dir(os.path.join(package_dir, "kernels", "linalg.py")) == \
            os.path.join(cache_root(package_dir), "kernels")
        assert len(source_fingerprint(str(pkg))) == 64  # SHA-256, hex
    finally:
        from numba.core.caching import CacheImpl

        CacheImpl._locator_classes.remove(cls)
