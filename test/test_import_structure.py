"""The package's modules import each other without circles.

Every module under ``wbc_dynamics/`` is parsed (nothing is imported or run) and every import
statement in it counts: at module level, inside functions and methods, and under
``if TYPE_CHECKING:`` -- a function-level import of a module that imports its importer back is
still a circle (it only moves the failure to the first call), and a circle of annotations is
still a circle to a reader. Relative imports are resolved against the importing module's
package; ``from pkg import name`` counts as an import of the submodule ``pkg.name`` when that is
a module, else of ``pkg`` itself. Importing a submodule does not count as importing its package's
``__init__`` (as in import-linter's graph). ``importlib.import_module`` calls are not followed.

With import-linter installed (a test dependency, ``requirements-test.txt``), ``lint-imports``
also checks the layer contracts of ``pyproject.toml`` (``[tool.importlinter]``).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "wbc_dynamics"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> source file."""
    return {_module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))
            if "__pycache__" not in p.parts}


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              known: set[str]) -> list[str]:
    """The package's modules that one import statement of ``module`` imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join([*base, node.module] if node.module else base)
        else:
            stem = node.module or ""
        targets = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem
                   for alias in node.names]
    found = []
    for target in targets:
        while target and target not in known:  # `import a.b.c` of a name inside a module
            target = target.rpartition(".")[0]
        if target and target != module:
            found.append(target)
    return found


def import_graph() -> dict[str, dict[str, list[int]]]:
    """module -> {imported module of the package: line numbers of the imports}."""
    files = _modules()
    known = set(files)
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in files}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(node, module, path.name == "__init__.py", known):
                    lines = graph[module].setdefault(target, [])
                    if node.lineno not in lines:
                        lines.append(node.lineno)
    return graph


def strongly_connected(graph: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth <= number of modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(component: list[str], graph: dict[str, dict[str, list[int]]]) -> str:
    """A circle's modules and the imports that tie them (importer:line -> imported)."""
    inside = set(component)
    ties = [f"    {a}:{','.join(map(str, lines))} -> {b}"
            for a in component for b, lines in sorted(graph[a].items()) if b in inside]
    return f"  circle of {len(component)}: {', '.join(component)}\n" + "\n".join(ties)


def test_the_graph_sees_the_imports():
    """The graph is read as intended: relative, function-level and submodule imports."""
    graph = import_graph()
    assert len(graph) > 40
    assert "wbc_dynamics.kernels.leaf" in graph["wbc_dynamics.controller"]  # `from .kernels.leaf`
    # function-level, two levels up: `from ..model import RobotModel` in a method
    assert "wbc_dynamics.model" in graph["wbc_dynamics.sim.closed_loop"]
    # `from . import iwim as _iwim`: the submodule, not the package
    assert "wbc_dynamics.iwim" in graph["wbc_dynamics.model"]
    assert "wbc_dynamics" not in graph["wbc_dynamics.model"]
    # a package's __init__: `from .dispatch import ...` inside wbc_dynamics/contact/__init__.py
    assert "wbc_dynamics.contact.dispatch" in graph["wbc_dynamics.contact"]


def test_cycle_finder_reports_a_circle():
    graph = {"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}, "d": {"a": [4]}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b": [1]}, "b": {}}) == []


def test_no_import_cycles():
    graph = import_graph()
    cycles = strongly_connected(graph)
    assert not cycles, ("modules of wbc_dynamics that import each other (move what they share "
                        "into a module below both instead of importing inside a function):\n"
                        + "\n".join(_describe(c, graph) for c in cycles))


def test_import_linter_contracts():
    """``lint-imports`` keeps the contracts of pyproject.toml's ``[tool.importlinter]``."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install import-linter; "
                    "requirements-test.txt)")
    run = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
