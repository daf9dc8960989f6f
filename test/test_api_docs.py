"""The API reference (``docs/api``) builds from the docstrings with warnings as errors.

``sphinx-build -W -n``: a docstring that docutils cannot parse, a reference (``:class:``,
``:func:``, ``:data:``, ...) to a name that is not documented, or a module page that cannot be
imported fails the test. The build also has to document every name of the ``__all__`` of each
module it lists, where that module defines it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "api"

if sys.version_info < (3, 11):
    pytest.skip("Sphinx 9 (requirements-test.txt) needs Python 3.11", allow_module_level=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The HTML reference, built once for this module's tests."""
    out = tmp_path_factory.mktemp("api_html")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
           "-d", str(out / ".doctrees"), str(DOCS), str(out)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (
        f"sphinx-build failed (exit {run.returncode}); run `{' '.join(cmd[2:])}`:\n"
        f"{run.stderr[-8000:]}")
    return out


def documented(out: Path) -> set[str]:
    """The dotted names of every object the reference documents (its anchors)."""
    ids: set[str] = set()
    for page in out.glob("*.html"):
        ids.update(re.findall(r'<dt class="sig sig-object py" id="([\w.]+)"', page.read_text()))
    return ids


def test_builds_and_indexes_the_main_classes(built):
    index = (built / "genindex.html").read_text()
    for name in ("wbc_dynamics.model.RobotModel", "wbc_dynamics.controller.WholeBodyController",
                 "wbc_dynamics.controller_config.ControllerConfig", "wbc_dynamics.tasks.TaskLayer",
                 "wbc_dynamics.contact.dispatch.solve", "wbc_dynamics.node.WbcControllerNode",
                 "wbc_dynamics.sim.closed_loop.ClosedLoop",
                 "wbc_dynamics.sim.closed_loop.LoopConfig"):
        assert f"#{name}" in index, f"{name} is not in the reference's index"


def test_compiled_kernels_render_as_functions(built):
    """A numba dispatcher is documented like the Python function it compiles: signature and
    docstring, not as a module attribute holding an object."""
    page = (built / "tasks.html").read_text()
    anchor = page.index('id="wbc_dynamics.tasks.task_layer_kernel"')
    entry = page[page.rindex("<dl", 0, anchor):page.index("</dl>", anchor)]
    assert 'class="py function"' in entry
    assert "One tick of the task layer" in entry
    assert "CPUDispatcher" not in page


def test_documents_the_public_api(built):
    """Every name in a listed module's ``__all__`` that the module defines (not re-exports) has
    an entry."""
    spec = importlib.util.spec_from_file_location("wbc_api_docs_conf", DOCS / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    ids = documented(built)
    missing = []
    for rst in sorted(DOCS.glob("*.rst")):
        for module, options in re.findall(r"^\.\. automodule:: (\S+)\n((?:   :.*\n)*)",
                                          rst.read_text(), flags=re.M):
            if ":no-members:" in options:
                continue
            imported = conf._imports(module)
            names = getattr(importlib.import_module(module), "__all__", ())
            missing += [f"{module}.{n}" for n in names
                        if n not in imported and f"{module}.{n}" not in ids]
    assert not missing, f"public names without an entry in the API reference: {missing}"
