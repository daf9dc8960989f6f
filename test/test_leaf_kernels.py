"""The leaf kernels' contract (wbc_dynamics.kernels.leaf): compiled without numba's reference
counting, they must return no array (or record) and call only other leaf kernels -- what numba
does not check itself (it only refuses to compile an allocation).

- statically: every call in a leaf kernel's body to a compiled function of the package resolves
  to a leaf kernel;
- on what a tick compiles: after a tick of every contact method and the core's single calls, no
  compiled signature of a leaf kernel returns a reference-counted value.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import sys

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher, cpu_target

import wbc_dynamics

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from bench_tick import shipped_config, standing_controller  # noqa: E402


def _modules():
    skip = ("wbc_dynamics.node", "wbc_dynamics.sim", "wbc_dynamics.ros_conversions")
    for info in pkgutil.walk_packages(wbc_dynamics.__path__, "wbc_dynamics."):
        if not info.name.startswith(skip):
            yield importlib.import_module(info.name)


def _is_leaf(obj) -> bool:
    return isinstance(obj, CPUDispatcher) and obj.targetoptions.get("_nrt", True) is False


def _leaf_kernels() -> dict[str, CPUDispatcher]:
    found = {}
    for mod in _modules():
        for name, obj in vars(mod).items():
            if _is_leaf(obj) and obj.py_func.__module__ == mod.__name__:
                found[f"{mod.__name__}.{name}"] = obj
    return found


LEAVES = _leaf_kernels()


def test_the_hot_kernels_are_leaf_kernels():
    """The kernels the profile found counting references (the reason for leaf kernels)."""
    for name in ("wbc_dynamics.kernels.linalg.chol_solve", "wbc_dynamics.kernels.linalg.cholesky",
                 "wbc_dynamics.contact.noslip_kernels._chol_append",
                 "wbc_dynamics.contact.noslip_kernels._append_row",
                 "wbc_dynamics.contact.dense_qp.dense_qp_kernel",
                 "wbc_dynamics.contact.geometry._emit", "wbc_dynamics.kernels.world.rnea",
                 "wbc_dynamics.kernels.world.minverse", "wbc_dynamics.kernels.world.crba",
                 "wbc_dynamics.kernels.dynamics.forward_kinematics"):
        assert name in LEAVES, name
    assert len(LEAVES) >= 80


def test_leaf_kernels_call_only_leaf_kernels():
    """... or ``inline="always"`` helpers, compiled as part of their caller; a call through
    ``call_separately(kernel, args)`` (wbc_dynamics.kernels.separate) is a call of ``kernel``."""
    from wbc_dynamics.kernels.separate import call_separately

    def resolve(f, glb):
        if isinstance(f, ast.Name):
            return glb.get(f.id)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            owner = glb.get(f.value.id)
            if inspect.ismodule(owner):
                return getattr(owner, f.attr, None)
        return None

    bad = []
    separate_calls = 0
    for name, disp in LEAVES.items():
        fn = disp.py_func
        tree = ast.parse(inspect.getsource(fn).lstrip())
        glb = fn.__globals__
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            target = resolve(f, glb)
            if target is call_separately:
                f = node.args[0]
                target = resolve(f, glb)
                separate_calls += 1
                assert isinstance(target, CPUDispatcher), f"{name}: {ast.unparse(node)}"
            if (isinstance(target, CPUDispatcher) and not _is_leaf(target)
                    and target.targetoptions.get("inline", "never") != "always"):
                bad.append(f"{name} calls {ast.unparse(f)} (reference-counted)")
    assert not bad, "\n".join(bad)
    assert separate_calls >= 2  # (dense_qp_kernel's: the check above sees through them)


def _refcounted(ty) -> bool:
    return cpu_target.target_context.data_model_manager[ty].contains_nrt_meminfo()


@pytest.fixture(scope="module")
def ticked():
    """Every contact method's tick and the core's single calls, run once (compiled or loaded)."""
    cfg = shipped_config("quadruped")
    cfg["warm_methods"] = ["lcp_coulomb", "qp_coulomb", "qp_noslip"]
    ctl, q = standing_controller(cfg)
    for method in ("lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip", "none"):
        ctl.set_parameters({"method": method})
        assert ctl.update(0.0).mode == "control", method
    m = ctl.model
    v = np.zeros(m.nv)
    m.rnea(q, v, v)
    m.mass_matrix(q)
    m.minverse(q)
    m.aba(q, v, v)
    m.jacobian(q, ctl.contact_links[0])
    m.frame_placement(q, ctl.contact_links[0])
    return ctl


def test_no_leaf_kernel_returns_a_reference_counted_value(ticked):
    compiled = 0
    bad = []
    for name, disp in LEAVES.items():
        for cres in disp.overloads.values():
            compiled += 1
            ret = cres.signature.return_type
            if _refcounted(ret):
                bad.append(f"{name} returns {ret}")
    assert not bad, "\n".join(bad)
    # the top-level entries (the callees compiled inside them are not separate signatures
    # once loaded from numba's cache: the static tests below cover them)
    assert compiled >= 10, compiled


def test_no_leaf_kernel_returns_an_array_it_was_given():
    """Statically, for the callees compiled inside the tick (not separate signatures once
    loaded from numba's cache): no ``return`` of a slice (``x[a:b]``), of a record's field
    (``r.field``) or of an argument the body indexes (an array)."""
    bad = []
    for name, disp in LEAVES.items():
        fdef = ast.parse(inspect.getsource(disp.py_func).lstrip()).body[0]
        params = {a.arg for a in fdef.args.args}
        indexed = {n.value.id for n in ast.walk(fdef)
                   if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)}
        for node in ast.walk(fdef):
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for val in values:
                sliced = isinstance(val, ast.Subscript) and any(
                    isinstance(n, ast.Slice) for n in ast.walk(val.slice))
                field = isinstance(val, ast.Attribute) and isinstance(val.value, ast.Name) \
                    and val.value.id in params
                array_arg = isinstance(val, ast.Name) and val.id in params & indexed
                if sliced or field or array_arg:
                    bad.append(f"{name}: return {ast.unparse(node.value)}")
    assert not bad, "\n".join(bad)


def test_no_leaf_kernel_is_inlined():
    """numba inlines an ``inline="always"`` function's IR into its caller, which then decides
    the reference counting: such helpers stay ordinary ``@njit`` functions."""
    inlined = [name for name, disp in LEAVES.items()
               if disp.targetoptions.get("inline", "never") != "never"]
    assert not inlined, inlined
