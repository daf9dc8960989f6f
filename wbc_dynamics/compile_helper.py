"""A cold start's compilation on two cores: contact kernels compiled in a helper process.

numba compiles on one core, and a first start with an empty cache compiles for tens of seconds.
The contact methods' general-path kernels (``wbc_dynamics.contact.warmup``) and the
passive-impact kernel do not depend on the robot -- every kernel takes flat arrays, so their
numba signatures are the same for any model. While the controller compiles the robot's dynamics
and contact-geometry kernels, a helper process (``python -m wbc_dynamics.compile_helper``)
compiles those into the same on-disk cache (:func:`wbc_dynamics.kernel_cache.cache_root`);
the controller waits for it before its first call of one of them, and then loads them
from the cache instead of compiling them (the fused tick that calls them loads them too).

The fused ticks' own kernels take NamedTuples of arrays, whose numba types do not depend on the
model either (dtype, dimension and layout of each array), so the helper also compiles the parts
of the configured methods' fused ticks that do not call the robot's kernels
(:func:`compile_tick_parts`: the sticking correction first, then the pack's constructor and
the QP tick's Stage II) on a stand-in model (:data:`STAND_IN_ROBOT`, its kernels not
compiled), while the controller compiles Stage I and the finish (``QPTick.compile_assembly``;
``CoulombTick``'s: the minimum-norm selection). The fused tick then calls what both compiled
through their symbols (:mod:`wbc_dynamics.kernels.separate`), compiling only its own code.

It starts with the controller's per-tick pre-, post- and command steps
(``tick_steps.compile_tick_steps``, robot-independent as well), which the controller binds
right after its core kernels, and the contact candidates' kernel, which its contact model runs
next; it then prints :data:`CONTACT_KERNELS_READY`, at which the controller, waiting to link
its fused tick, goes on (:meth:`CompileHelper.wait` with ``contact_only``), and ends with
``method: none``'s compiled tick (:func:`compile_free_dof`), which the controller binds last --
or binds itself, if the helper is still at the contact kernels when the controller has compiled
its share (:meth:`CompileHelper.contact_ready`).

The helper only saves time; nothing depends on it for correctness. It is not started when every
kernel it would compile is already cached (a warm start costs nothing), on a single-core machine,
or with ``WBC_COMPILE_HELPER=0``. If it cannot start, fails or is slow, the controller compiles
what is missing itself. It dies with its parent (Linux ``PR_SET_PDEATHSIG``, and a watcher
thread), and SIGINT / SIGTERM end it at once even inside LLVM (default signal actions).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

#: the kernels ``contact.warmup(method)`` compiles at top level (measured on a cold cache),
#: as (module of wbc_dynamics.contact, function): checked in the on-disk cache to decide
#: whether a helper is worth starting
GENERAL_PATH_KERNELS: dict[str, tuple[tuple[str, str], ...]] = {
    "lcp_noslip": (("lcp_noslip", "lcp_noslip_kernel"),
                   ("consistency", "min_norm_solution_kernel")),
    "lcp_coulomb": (("lemke", "_solve_lcp_kernel"), ("lcp_coulomb", "_reduce_kernel")),
    "qp_coulomb": (("qp_kernels", "_stage1_data"), ("qp_kernels", "_stage2_data")),
    "qp_noslip": (("qp_kernels", "_stage1_data"), ("qp_kernels", "_stage2_data")),
}
PASSIVE_IMPACT_KERNEL = ("geometry", "passive_impact_kernel")
#: the contact candidates' kernel (every contact method's assembly calls it; the controller's
#: contact model runs it first): compiled first, while the controller compiles its core kernels
CONTACT_GEOMETRY_KERNEL = ("geometry", "contact_kernel")
#: the helper's stdout line once every kernel of the contact methods is in the cache (only
#: method none's tick follows): the controller goes on from there (:meth:`CompileHelper.wait`)
CONTACT_KERNELS_READY = "contact kernels compiled"
#: methods with a fused compiled tick (wbc_dynamics.contact.tick, .qp_tick): its assembly stage
#: calls the passive-impact kernel whether or not the configuration enables it (a runtime
#: branch), so the helper compiles that kernel for them too
FUSED_TICK_METHODS = ("lcp_noslip", "lcp_coulomb", "qp_coulomb", "qp_noslip")

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dispatcher(module: str, name: str):
    import importlib

    package = "wbc_dynamics" if module.startswith("kernels.") else "wbc_dynamics.contact"
    return getattr(importlib.import_module(f"{package}.{module}"), name)


def cached_on_disk(dispatcher) -> bool:
    """Whether numba's on-disk cache holds a compiled version of ``dispatcher`` that is current
    for its source file (numba's own index check; False if that cannot be read)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - a private numba API: if it changes, just start a helper
        return False


#: a kernel of each method's fused-tick parts (:func:`compile_tick_parts`), checked as above
TICK_PART_KERNELS: dict[str, tuple[tuple[str, str], ...]] = {
    "lcp_coulomb": (("tick", "_sticking_qdd"),),
    "qp_coulomb": (("tick", "_sticking_qdd"), ("qp_tick", "qp_tick_stage2")),
    "qp_noslip": (("tick", "_sticking_qdd"), ("qp_tick", "qp_tick_stage2")),
}


#: the method-none tick (:func:`compile_free_dof`), as (module of
#: wbc_dynamics, function)
FREE_DOF_KERNEL = ("kernels.free_dof", "free_dof_inverse_dynamics")


def kernels_to_compile(methods: Sequence[str], passive_impact: bool,
                       free_dof: bool = False) -> list[tuple[str, str]]:
    """The helper's kernels for these contact methods (and, with ``free_dof``, the method-none
    tick) that the on-disk cache lacks."""
    wanted = [CONTACT_GEOMETRY_KERNEL] if methods else []
    wanted += [k for m in methods
               for k in (*GENERAL_PATH_KERNELS.get(m, ()), *TICK_PART_KERNELS.get(m, ()))]
    if (passive_impact and methods) or any(m in FUSED_TICK_METHODS for m in methods):
        wanted.append(PASSIVE_IMPACT_KERNEL)
    if free_dof and methods:
        wanted.append(FREE_DOF_KERNEL)
    return [k for k in dict.fromkeys(wanted) if not cached_on_disk(_dispatcher(*k))]


class CompileHelper:
    """A running helper process (see the module docstring)."""

    def __init__(self, proc: subprocess.Popen, methods: list[str]) -> None:
        self._proc = proc
        self.methods = methods
        #: after :meth:`wait`: True if the helper compiled everything, else the reason it did not
        self.result: bool | str | None = None
        self._contact_ready = False  # its CONTACT_KERNELS_READY line was read
        self._err = b""  # the tail of its stderr (drained while waiting: a full pipe blocks it)
        self._out = b""  # its stdout so far

    @classmethod
    def start(cls, methods: Sequence[str], passive_impact: bool,
              free_dof: bool = False) -> CompileHelper | None:
        """Start a helper for ``methods`` (contact method names; others are ignored) if one is
        worth it, else return None. ``free_dof``: the controller will bind the method-none
        tick (``kernels.free_dof``): the helper compiles it too, after the contact kernels."""
        methods = [m for m in dict.fromkeys(methods) if m in GENERAL_PATH_KERNELS]
        if (not methods or os.environ.get("WBC_COMPILE_HELPER", "1") == "0"
                or (os.cpu_count() or 1) < 2 or os.environ.get("NUMBA_DISABLE_JIT", "0") != "0"):
            return None
        if not kernels_to_compile(methods, passive_impact, free_dof):
            return None
        env = dict(os.environ)
        # the child imports this very package (same source files = same cache entries)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
        passive = passive_impact or any(m in FUSED_TICK_METHODS for m in methods)
        args = [sys.executable, "-m", "wbc_dynamics.compile_helper", "--parent",
                str(os.getpid()), *(["--passive-impact"] if passive else []),
                *(["--free-dof"] if free_dof else []), *methods]
        try:
            proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError:
            return None
        return cls(proc, methods)

    def contact_ready(self) -> bool:
        """Whether the helper has compiled every contact kernel (its
        :data:`CONTACT_KERNELS_READY` line, or its end), without waiting."""
        if self.result is None and not self._contact_ready:
            self._read(0.0)
        return self._contact_ready or self.result is not None

    def wait(self, timeout: float = 300.0, contact_only: bool = False) -> bool:
        """Wait for the helper (signals are handled meanwhile: it waits in short slices); True
        if it compiled everything -- with ``contact_only``, everything but method none's tick
        (its :data:`CONTACT_KERNELS_READY` line), which it compiles last: the controller needs
        that one only at the end of its start-up. After ``timeout`` seconds the helper is
        stopped and False returned."""
        if self.result is not None:
            return self.result is True
        deadline = time.monotonic() + timeout
        while not (contact_only and self._contact_ready):
            if self._read(0.1):
                return self.result is True
            if time.monotonic() > deadline:
                self.stop()
                self.result = f"no result after {timeout:.0f} s"
                return False
        return True

    def _read(self, timeout: float) -> bool:
        """Read what the helper has written within ``timeout`` seconds; True once it has
        ended (``result`` set)."""
        out, err = self._proc.stdout, self._proc.stderr
        ready, _, _ = select.select([out, err], [], [], timeout)
        if err in ready:
            self._err = (self._err + os.read(err.fileno(), 65536))[-2000:]
        if out in ready:
            chunk = os.read(out.fileno(), 65536)
            self._out += chunk
            if CONTACT_KERNELS_READY.encode() in self._out.split(b"\n"):
                self._contact_ready = True
            if not chunk:  # end of its output: it has exited (or is about to)
                rest = err.read() or b""
                code = self._proc.wait()
                tail = (self._err + rest).decode(errors="replace").strip()[-500:]
                self.result = True if code == 0 else f"exit code {code}: {tail}"
                return True
        return False

    def stop(self) -> None:
        """End the helper if it still runs (its partial work stays in the cache)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self.result is None:
            self.result = "stopped"


def _die_with_parent(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # default actions end us inside LLVM too
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:  # Linux: the kernel kills us when the parent exits
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

    def watch() -> None:  # elsewhere (and a parent gone before prctl): poll
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m wbc_dynamics.compile_helper",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--parent", type=int, required=True, help="pid to die with")
    ap.add_argument("--passive-impact", action="store_true")
    ap.add_argument("--free-dof", action="store_true",
                    help="also the method-none tick (kernels.free_dof)")
    ap.add_argument("methods", nargs="+", choices=sorted(GENERAL_PATH_KERNELS))
    args = ap.parse_args(argv)
    _die_with_parent(args.parent)
    import warnings

    warnings.simplefilter("ignore")
    # in the order the controller needs them: its per-tick steps right after its
    # core kernels, then the contact candidates (its contact model runs them first; the
    # stand-in's types are any model's), then the methods' own kernels, which its fused tick
    # waits for. The passive impact, which its assembly calls before that, it compiles itself
    # while this compiles the methods' kernels (the critical path of a cold start): here it is
    # only a fallback, usually a cache hit by then
    from .tick_steps import compile_tick_steps

    compile_tick_steps()
    cm = stand_in_contact_model()
    cm.candidates(cm.robot.neutral())
    from .contact import warmup

    fused = [m for m in args.methods if m in FUSED_TICK_METHODS]
    if fused and set(fused) & set(STICKING_METHODS):
        # the sticking correction first: the controller's Stage I links it early
        from .contact.tick import compile_sticking_correction

        compile_sticking_correction(cm)
    warmup(list(args.methods))
    if fused:
        compile_tick_parts(cm, fused)
    if args.passive_impact:
        from .contact.geometry import warm_passive_impact

        warm_passive_impact()
    print(CONTACT_KERNELS_READY, flush=True)
    if args.free_dof:
        compile_free_dof(cm)
    return 0


#: the stand-in robot of :func:`compile_tick_parts` (any bundled robot with contact links: the
#: tick kernels' argument types are the same for every model)
STAND_IN_ROBOT = "quadruped"


#: fused ticks that call the sticking correction (``contact.tick._sticking_qdd``)
STICKING_METHODS = ("lcp_coulomb", "qp_coulomb", "qp_noslip")


def stand_in_contact_model():
    """A contact model of :data:`STAND_IN_ROBOT` with its buffers only: nothing of the robot or
    the contact geometry compiled (the controller compiles those for its own robot)."""
    from .contact.geometry import ContactModel, HalfSpace
    from .model import RobotModel
    from .robots import robot_info, robot_path

    model = RobotModel.from_urdf(robot_path(STAND_IN_ROBOT), floating_base=True, warmup=False)

    class StandIn(ContactModel):
        def warmup(self) -> None:  # the buffers only (ContactModel.warmup runs the geometry)
            self._allocate_data()

    return StandIn(model, contact_links=robot_info(STAND_IN_ROBOT)["contact_links"],
                   features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3,
                   passive_impact=True)


def compile_free_dof(cm=None) -> None:
    """The ``method: none`` tick (:func:`~wbc_dynamics.kernels.free_dof.bind_free_dof`; the
    stand-in's unactuated DoFs are its floating base) bound on the stand-in model (that of
    ``cm``, or a fresh one) without running it: the controller binds it after its contact
    methods and then loads it from the cache."""
    import numpy as np

    from .kernels.free_dof import bind_free_dof

    if cm is None:
        cm = stand_in_contact_model()
    model = cm.robot
    nv = model.nv
    actuated = np.arange(6, nv)
    bind_free_dof(model, np.zeros(model.nq), np.zeros(nv), np.zeros(actuated.shape[0]), actuated)


def compile_tick_parts(cm, methods: Sequence[str]) -> None:
    """The robot-independent parts of these methods' fused ticks (``compile_parts`` of
    :mod:`wbc_dynamics.contact.tick` / ``.qp_tick``), compiled on the stand-in model ``cm``
    without running them: numba types the tick's kernels by array dtype / dimension / layout
    only, so the cache entries are the controller's for any robot."""
    from .contact.tick import compiled_tick

    for method in dict.fromkeys(methods):
        tick = compiled_tick(cm, method, {})
        if tick is not None:
            tick.compile_parts()


if __name__ == "__main__":
    sys.exit(main())
