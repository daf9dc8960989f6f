"""Deterministic "nothing compiles in a control tick" checks (no timing involved)."""

import sys

from numba.core.registry import CPUDispatcher


def compiled_signature_counts() -> dict[str, int]:
    """Number of compiled signatures of every numba kernel in the loaded wbc_dynamics modules.

    If a call adds a signature anywhere, numba compiled during that call.
    """
    counts = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("wbc_dynamics") or mod is None:
            continue
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher):
                counts[f"{obj.py_func.__module__}.{name}"] = len(obj.signatures)
    return counts


def grown_since(before: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Kernels that gained signatures since ``before``: {name: (before, now)}."""
    now = compiled_signature_counts()
    return {k: (before.get(k, 0), n) for k, n in now.items() if n > before.get(k, 0)}


def literal_duplicates() -> dict[str, list[str]]:
    """Kernels compiled twice for what is one signature once numba's literal types are erased
    (a jitted caller passing a constant such as ``True`` or ``50`` where the Python path passes
    a value): each such pair is seconds of redundant compilation at start-up."""
    from numba.core import types

    dups = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("wbc_dynamics") or mod is None:
            continue
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and len(obj.signatures) > 1:
                erased = [tuple(types.unliteral(a) for a in s) for s in obj.signatures]
                if len(set(erased)) < len(erased):
                    dups[f"{obj.py_func.__module__}.{name}"] = [  # the literal arguments
                        ", ".join(f"arg {i}: {a}" for i, a in enumerate(s)
                                  if isinstance(a, types.Literal)) for s in obj.signatures]
    return dups


def dispatcher_calls(monkeypatch, module, name: str) -> list:
    """Wrap the kernel ``module.name`` so that every call made through that module-level name
    (numba's dispatcher; a bound entry point does not go through it) is recorded; returns the
    list of recorded calls (one entry per call)."""
    kernel = getattr(module, name)
    calls: list = []

    def recording(*args):
        calls.append(True)
        return kernel(*args)

    monkeypatch.setattr(module, name, recording)
    return calls
