"""The closed loop of the demo compiles nothing after the controller is built.

Every numba kernel the controller can reach (contact options such as ``min_norm``, the Sec. 4.5
correction, passive impacts) must be compiled by its warm-up; a kernel compiled inside the loop
costs seconds in one control tick on a machine without numba's cache.
"""

from numba_helpers import compiled_signature_counts, grown_since

import wbc_dynamics.controller as controller_module
from wbc_dynamics.sim import demo


def test_demo_loop_compiles_nothing_after_controller_construction(monkeypatch):
    snapshots = []
    original_init = controller_module.WholeBodyController.__init__

    def init_and_snapshot(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        snapshots.append(compiled_signature_counts())

    monkeypatch.setattr(controller_module.WholeBodyController, "__init__", init_and_snapshot)
    assert demo.main(["--short", "--quiet", "--plot", ""]) == 0
    assert snapshots, "the demo built no WholeBodyController"
    assert not grown_since(snapshots[-1])
