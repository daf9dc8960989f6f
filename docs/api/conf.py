"""Sphinx configuration of the API reference.

Build: ``python -m sphinx -b html docs/api docs/_build/api``. The test suite
(``test/test_api_docs.py``) builds it with ``-W -n``: every warning, an unresolved reference
included, is an error.

The pages list the public modules; each documents its ``__all__``, less the names it imports:
every object is documented once, in the module that defines it (``_skip_imported``). A
reference may still name an object the way Python code reaches it, through a package that
re-exports it (``wbc_dynamics.RobotModel``) or through the referring module's imports
(``RobotModel`` in :mod:`wbc_dynamics.mimic`): see ``_resolve_by_import``.
"""

import ast
import functools
import importlib.util
import inspect
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)

project = "wbc_dynamics"
author = "wbc_dynamics contributors"
copyright = "wbc_dynamics contributors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

root_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_show_sourcelink = False

autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "member-order": "bysource",
    "show-inheritance": True,
}
autodoc_typehints = "signature"
autodoc_type_aliases = {"ArrayLike": "numpy.typing.ArrayLike"}

napoleon_google_docstring = True
napoleon_numpy_docstring = False
# "Attributes:" sections as fields of their class: the attributes themselves are documented
# (undoc-members) and are what :attr: references resolve to.
napoleon_use_ivar = True

# Types of other projects: without intersphinx (the build is offline) their references cannot
# resolve. Every reference to this package's own names must.
nitpick_ignore_regex = [
    ("py:.*", r"(numpy|np|numba|collections\.abc|os|pathlib|mujoco|rclpy|\w+_msgs)\..*"),
    # private names are never documented: a signature or a base class may still show one
    ("py:class", r"wbc_dynamics(\.\w+)*\._\w+"),
]


_documenting = {"module": None}


def _note_module(app, what, name, obj, options, lines):
    """Remember the module whose members autodoc is about to gather (its docstring comes
    first)."""
    if what == "module":
        _documenting["module"] = name


@functools.cache
def _imports(module: str) -> dict[str, str]:
    """The names that ``module`` binds by a module-level import statement, each with the dotted
    path it imports."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return {}
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    with open(spec.origin, encoding="utf-8") as f:
        statements = list(ast.parse(f.read()).body)
    names = {}
    while statements:  # module level, including under if / try, not in functions or classes
        node = statements.pop()
        if isinstance(node, ast.Import):  # import a.b binds a; import a.b as c binds c to a.b
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            names.update({a.asname or a.name: f"{source}.{a.name}" for a in node.names})
        elif isinstance(node, ast.If | ast.Try):
            statements += node.body + node.orelse + getattr(node, "finalbody", [])
            statements += [s for h in getattr(node, "handlers", []) for s in h.body]
    return names


def _skip_imported(app, what, name, obj, skip, options):
    """Leave out a module's re-exports (also listed in its ``__all__``): they are documented
    where they are defined."""
    module = _documenting["module"]
    if what == "module" and module and name in _imports(module):
        return True
    return None


@functools.cache
def _definition(path: str) -> str | None:
    """Where the object at the dotted ``path`` is defined: the longest importable module, then
    attributes -- a class or function named by its own ``__module__`` and ``__qualname__``, a
    name a module imports by the place it imports it from, anything else (an instance
    attribute, say) after its owner."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        name = obj.__name__
        for part in parts[i:]:
            imports = _imports(name) if inspect.ismodule(obj) else {}
            obj = getattr(obj, part, None)
            module = getattr(obj, "__module__", None)
            qualname = getattr(obj, "__qualname__", None)
            if inspect.ismodule(obj):
                name = obj.__name__
            elif (inspect.isclass(obj) or inspect.isroutine(obj)) and isinstance(module, str) \
                    and isinstance(qualname, str):
                name = f"{module}.{qualname}"
            elif part in imports and imports[part] != path:
                name = _definition(imports[part]) or imports[part]
            else:
                name = f"{name}.{part}"
        return name
    return None


def _resolve_by_import(app, env, node, contnode):
    """Resolve a Python reference that the documented names miss the way Python resolves it: in
    the referring class's and module's namespaces, through imports and re-exports, to the
    documented definition. A name that is not documented there stays an error."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    module, cls = node.get("py:module"), node.get("py:class")
    paths = [f"{module}.{cls}.{target}"] if module and cls else []
    paths += [f"{module}.{target}"] if module else []
    paths.append(target)
    domain = env.domains["py"]
    for path in paths:
        defined = _definition(path)
        if defined is None or defined == path:
            continue
        found = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], defined,
                                    node, contnode)
        if found is not None:
            return found
    return None


_ALIAS_REPR = re.compile(r"TypeAliasForwardRef\('([^']*)'\)")


def _clean_signature(app, what, name, obj, options, signature, return_annotation):
    """Readable signatures: a type alias inside a union shows as its name, and a dataclass
    field's ``default_factory`` (``<factory>``, which no signature parser reads) as ``...``."""

    def clean(text):
        if not text:
            return text
        return _ALIAS_REPR.sub(r"\1", text).replace("<factory>", "...")

    return clean(signature), clean(return_annotation)


def _napoleon_except_attributes(napoleon):
    """napoleon for everything but attribute, data and property docstrings: the package writes
    those as prose ("the rows of a frame task: ..."), which napoleon's inline
    ``type: description`` form would misread as a type."""

    def process(app, what, name, obj, options, lines):
        if what not in ("attribute", "data", "property"):
            napoleon(app, what, name, obj, options, lines)

    return process


def setup(app):
    from sphinx.ext.napoleon import _process_docstring

    listeners = app.events.listeners["autodoc-process-docstring"]
    (napoleon,) = [lst for lst in listeners if lst.handler is _process_docstring]
    app.disconnect(napoleon.id)
    app.connect("autodoc-process-docstring", _napoleon_except_attributes(_process_docstring))
    app.connect("autodoc-process-docstring", _note_module)
    app.connect("autodoc-skip-member", _skip_imported)
    app.connect("autodoc-process-signature", _clean_signature)
    app.connect("missing-reference", _resolve_by_import)
