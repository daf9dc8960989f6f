"""``call_separately`` (wbc_dynamics.kernels.separate): a kernel called through its symbol,
its code not compiled into the caller -- same results and exceptions as a linked call, and a
caller loaded from numba's on-disk cache in a new process (its callee not loaded yet) loads
the callee first instead of calling an unresolved symbol."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

from wbc_dynamics.kernels.separate import call_separately

_CALLEE = '''
import numpy as np
from numba import njit


@njit(cache=True)
def weighted_sum(x, n):
    s = 0.0
    for k in range(n):
        for i in range(x.shape[0]):
            s += np.sin(x[i] * k) / (1.0 + x[i] * x[i])
    if n < 0:
        raise ValueError("n must be >= 0")
    return s, x.shape[0]
'''

_CALLER = '''
from numba import njit

from callee_mod import weighted_sum
from wbc_dynamics.kernels.separate import call_separately


@njit(cache=True)
def twice(x, n):
    s, m = call_separately(weighted_sum, (x, n))
    return 2.0 * s + m


@njit(cache=True)
def outer(x, n):  # links twice, which calls weighted_sum separately
    return twice(x, n) + 1.0
'''

_RUN = '''
import json, sys
import numpy as np
import caller_mod
x = np.linspace(0.0, 1.0, 7)
entry = getattr(caller_mod, sys.argv[1])
value = entry(x, 5)
try:
    entry(x, -1)
    raised = ""
except ValueError as e:
    raised = str(e)
import callee_mod
lib = entry.overloads[entry.signatures[0]].library
print(json.dumps({"value": value, "raised": raised,
                  "hits": sum(entry.stats.cache_hits.values()),
                  "misses": sum(entry.stats.cache_misses.values()),
                  "callee_compiled": len(callee_mod.weighted_sum.overloads)}))
'''


def _reference(x: np.ndarray, n: int) -> float:
    s = sum(np.sin(xi * k) / (1.0 + xi * xi) for k in range(n) for xi in x)
    return 2.0 * s + x.shape[0]


@pytest.mark.parametrize("entry", ["twice", "outer"])
def test_cached_caller_loads_its_callee_first(tmp_path, entry):
    (tmp_path / "callee_mod.py").write_text(_CALLEE)
    (tmp_path / "caller_mod.py").write_text(_CALLER)
    (tmp_path / "run.py").write_text(_RUN)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    runs = []
    for _ in range(2):  # compile, then load from the cache in a new process
        p = subprocess.run([sys.executable, str(tmp_path / "run.py"), entry], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    want = _reference(np.linspace(0.0, 1.0, 7), 5) + (1.0 if entry == "outer" else 0.0)
    for r in runs:
        assert r["value"] == pytest.approx(want, rel=1e-12)
        assert r["raised"] == "n must be >= 0"
        assert r["callee_compiled"] == 1  # loaded by the caller's reload_init / typing
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0
    assert runs[1]["hits"] == 1 and runs[1]["misses"] == 0


def _callee_in_process(x, n):
    return x[:n].sum()


_callee_jit = njit(cache=False)(_callee_in_process)


@njit(cache=False)
def _caller_in_process(x, n):
    return call_separately(_callee_jit, (x, n)) + 1.0


def test_callee_code_is_declared_not_defined():
    x = np.arange(5.0)
    assert _caller_in_process(x, 3) == 4.0
    ir = _caller_in_process.overloads[_caller_in_process.signatures[0]].library.get_llvm_str()
    callee = _callee_jit.overloads[_callee_jit.signatures[0]]
    declared = [line for line in ir.splitlines() if line.startswith("declare")
                and "wbc_separate._callee_in_process." in line]
    assert len(declared) == 1, ir[-2000:]
    assert "wbc_separate._callee_in_process." not in "".join(
        line for line in ir.splitlines() if line.startswith("define"))
    assert callee.fndesc.llvm_func_name not in ir  # numba's own name of the callee: nowhere
    assert callee.fndesc.llvm_func_name in callee.library.get_llvm_str()


_RECOMPILE_CALLEE = '''
import glob, os, sys
from numba import njit
# other functions first: numba's per-process counter, part of its symbol names, moves on
for i in range(7):
    njit(lambda x, i=i: x + i)(1.0)
for f in glob.glob(os.path.join(os.environ["NUMBA_CACHE_DIR"], "**", "callee_mod*"),
                   recursive=True):
    os.remove(f)
import numpy as np
import callee_mod
callee_mod.weighted_sum(np.linspace(0.0, 1.0, 7), 5)
print(callee_mod.weighted_sum.stats.cache_misses)
'''


def test_cached_caller_survives_its_callee_compiled_again_elsewhere(tmp_path):
    """The callee's cache entry rewritten by another process (a compile helper and the node
    both compiling it; numba's symbol names differ between processes): a cached caller still
    calls the loaded callee."""
    (tmp_path / "callee_mod.py").write_text(_CALLEE)
    (tmp_path / "caller_mod.py").write_text(_CALLER)
    (tmp_path / "run.py").write_text(_RUN)
    (tmp_path / "recompile.py").write_text(_RECOMPILE_CALLEE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))

    def run(*args: str) -> str:
        p = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-3000:]
        return p.stdout.strip().splitlines()[-1]

    first = json.loads(run("run.py", "twice"))
    assert "1" in run("recompile.py")  # compiled afresh (a cache miss) in another process
    again = json.loads(run("run.py", "twice"))
    assert again["hits"] == 1 and again["misses"] == 0  # the caller from the cache
    assert again["value"] == first["value"] and again["raised"] == "n must be >= 0"


def test_rejects_what_it_cannot_call():
    @njit
    def bad(x):
        return call_separately(np.sum, (x,))

    with pytest.raises(Exception, match="must be an @njit function"):
        bad(np.zeros(2))
