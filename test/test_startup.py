"""First start of the controller node: progress while compiling, and SIGINT honoured at once.

The node's process starts with an empty numba cache (``NUMBA_CACHE_DIR`` in a temporary
directory), so ``configure`` compiles every kernel the configuration needs (a minute or more on
this machine). The test waits for the first start-up progress line, lets compilation run, sends
SIGINT and requires the process to be gone within 2 s (+ margin for a loaded machine) with exit
code 0, before it reported ready.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from node_harness import REPO


def _compile_helpers(parent: int) -> list[int]:
    """pids of the running compile helpers (wbc_dynamics.compile_helper) of process ``parent``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if (b"wbc_dynamics.compile_helper" in cmd and str(parent).encode() in cmd
                and state != b"Z"):
            found.append(int(entry))
    return found


def test_sigint_during_a_cold_start_compile_exits_at_once(ros_env, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_LOGGING_BUFFERED_STREAM"] = "0"
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba_cache")  # cold: compile everything
    args = [sys.executable, "-m", "wbc_dynamics.node", "--ros-args",
            "-r", f"__ns:=/startup{os.getpid()}", "--log-level", "info",
            "-p", "robot:=quadruped", "-p", "floating_base:=true", "-p", "method:=lcp_noslip"]
    proc = subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                     daemon=True).start()
    try:
        deadline = time.monotonic() + 120.0
        while not any("start-up:" in ln for ln in lines):
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "no start-up progress line:\n" + "".join(lines)
            time.sleep(0.05)
        time.sleep(3.0)  # inside the compilation now
        assert not any("start-up: ready" in ln for ln in lines), (
            "the start finished before the signal; the cache was not cold:\n" + "".join(lines))
        # a cold start compiles the contact kernels in a helper process as well
        assert _compile_helpers(proc.pid), "no compile helper running:\n" + "".join(lines)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30.0)
        waited = time.monotonic() - t0
        while _compile_helpers(proc.pid) and time.monotonic() < t0 + 5.0:
            time.sleep(0.05)
        orphans = _compile_helpers(proc.pid)  # it dies with the node
        assert not orphans, f"compile helper(s) {orphans} outlived the node"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines)
    assert code == 0, out
    assert waited < 2.0 + 3.0, f"exited {waited:.1f} s after SIGINT (target 2 s):\n{out}"
    assert "while not active (start-up / compiling): exiting now" in out, out
    # the progress lines say what is being compiled and for how long
    assert "start-up: model parsed from robot quadruped; compiling / loading the core kernels" \
        in out, out


_CACHE_REPORT = """
import json, sys, time, warnings
from numba.core.registry import CPUDispatcher
from wbc_dynamics.controller import WholeBodyController
from wbc_dynamics.kernel_cache import cache_root
from wbc_dynamics.robot_config import load_robot_setup
warnings.simplefilter("ignore")
t0 = time.perf_counter()
if sys.argv[1] == "demo":  # the demo's time to ready (its own line), then its short run
    import contextlib, io, re
    from wbc_dynamics.sim import demo
    with contextlib.redirect_stdout(io.StringIO()) as out:
        demo.main(["--short", "--quiet", "--no-video", "--plot", ""])
    seconds = float(re.search(r"wbc_demo: ready in ([0-9.]+) s", out.getvalue()).group(1))
else:
    WholeBodyController(load_robot_setup(sys.argv[1]).controller)
    seconds = time.perf_counter() - t0
hits, misses, compiled = 0, [], []
for mod_name, mod in list(sys.modules.items()):
    if mod_name.startswith("wbc_dynamics") and mod is not None:
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod_name:
                hits += sum(obj.stats.cache_hits.values())
                misses += [f"{mod_name}.{name}"] * sum(obj.stats.cache_misses.values())
                compiled += [f"{mod_name}.{name}"] * bool(obj.signatures)
print(json.dumps({"hits": hits, "misses": misses, "compiled": compiled, "seconds": seconds,
                  "cache": cache_root()}))
"""


# `wbc_info --precompile CONFIG` (its main()), then the kernels compiled twice
_PRECOMPILE = f"""
import json, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from numba_helpers import literal_duplicates
from wbc_dynamics import info
from wbc_dynamics.compile_helper import kernels_to_compile
before = kernels_to_compile(["lcp_noslip"], passive_impact=True)
sys.argv = ["wbc_info", "--precompile", sys.argv[1]]
code = info.main()
if code:
    sys.exit(code)
after = kernels_to_compile(["lcp_noslip"], passive_impact=True)
print(json.dumps({{"duplicates": literal_duplicates(), "before": before, "after": after}}))
"""


def test_precompile_fills_the_cache_a_node_start_then_loads(tmp_path):
    """``wbc_info --precompile CONFIG`` on an empty cache compiles what the configuration needs
    (printing the start-up stages); a controller built afterwards from the same configuration
    with the same cache compiles nothing: every kernel it uses is a numba cache hit, and no
    kernel the configuration does not use was compiled."""
    import json

    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba_cache")
    config = os.path.join(REPO, "config", "quadruped.yaml")
    pre = subprocess.run([sys.executable, "-c", _PRECOMPILE, config], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=900)
    assert pre.returncode == 0, pre.stdout + pre.stderr
    assert "start-up: ready" in pre.stdout and "precompiled none, lcp_noslip for 12 joints" \
        in pre.stdout, pre.stdout
    # a cold compile compiled each kernel once: no second copy specialized on a constant that a
    # jitted caller passes (seconds each; 10 s of this start-up before they were removed)
    kernels = json.loads(pre.stdout.strip().splitlines()[-1])
    assert kernels["duplicates"] == {}, kernels
    # the compile helper's cache probe: all missing before, all cached after (so a warm start
    # starts no helper); the helper itself ran (its progress line)
    assert kernels["before"] == [["geometry", "contact_kernel"],
                                 ["lcp_noslip", "lcp_noslip_kernel"],
                                 ["consistency", "min_norm_solution_kernel"],
                                 ["geometry", "passive_impact_kernel"]], kernels
    assert kernels["after"] == [], kernels
    assert "start-up: compiling the contact kernels of lcp_noslip in a helper process" \
        in pre.stdout, pre.stdout
    run = subprocess.run([sys.executable, "-c", _CACHE_REPORT, config], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["misses"] == [], report
    assert report["hits"] >= 10, report  # the core, contact and controller kernels were loaded
    # only what the configuration needs: no derivative / linearization kernel, no ABA (the
    # controller never calls them; they were most of a cold start's core compile). CRBA it
    # needs: method none's compiled tick on a floating base calls it, and none is always warm
    unneeded = [k for k in report["compiled"] if k.startswith("wbc_dynamics.kernels.derivatives")
                or k == "wbc_dynamics.kernels.world.aba"]
    assert unneeded == [], unneeded
    assert "wbc_dynamics.contact.tick.lcp_noslip_tick" in report["compiled"], report
    assert "wbc_dynamics.kernels.free_dof.free_dof_inverse_dynamics" in report["compiled"], report


def test_an_installed_package_starts_the_shipped_configurations_without_compiling(tmp_path):
    """``pip install`` of the package (its build step compiles the shipped configurations into
    the built package: setup.py, ``wbc_info --precompile-shipped``) into a prefix; then fresh
    processes importing the installed copy, with numba's default cache settings: a shipped
    configuration's controller and the demo compile nothing (every kernel they use is a numba
    cache hit, none a miss) and are ready in seconds."""
    import json

    from test_packaging import _copy_source

    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")  # not the user's numba cache
    src, prefix = _copy_source(tmp_path / "src"), tmp_path / "prefix"
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--prefix",
                    str(prefix), str(src)], env=env, cwd=tmp_path, check=True,
                   capture_output=True, text=True, timeout=1500)
    install_s = time.monotonic() - t0
    site = next(prefix.glob("lib/python3*/site-packages"))
    with open(site / "wbc_dynamics" / "_kernel_cache" / "precompiled.json") as f:
        record = json.load(f)
    assert {"quadruped", "humanoid", "arm", "robots/go2", "demo"} <= set(record["configs"]), record
    assert len(record["configs"]) >= 12, record  # the shipped configurations that load here
    env["PYTHONPATH"] = str(site)
    config = prefix / "share" / "wbc_dynamics" / "config"
    for what in (config / "quadruped.yaml", config / "robots" / "go2.yaml", "demo"):
        run = subprocess.run([sys.executable, "-c", _CACHE_REPORT, str(what)], env=env,
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report["cache"] == str(site / "wbc_dynamics" / "_kernel_cache"), report
        assert report["misses"] == [], (what, report)
        assert report["hits"] >= 10, (what, report)
        # target: 5 s to a ready controller / demo (+ 5 s margin for a loaded machine); the
        # build step compiled for minutes (install_s)
        assert report["seconds"] < 5.0 + 5.0, (what, report, install_s)


def test_compile_helper_kernel_lists_name_cached_kernels():
    """Every kernel the compile helper's cache probe checks exists and is cached on disk by
    numba (``cache=True``): a wrong name would make every start spawn a helper."""
    from numba.core.registry import CPUDispatcher

    from wbc_dynamics.compile_helper import (
        CONTACT_GEOMETRY_KERNEL,
        FREE_DOF_KERNEL,
        GENERAL_PATH_KERNELS,
        PASSIVE_IMPACT_KERNEL,
        TICK_PART_KERNELS,
        _dispatcher,
    )
    from wbc_dynamics.controller import CONTACT_METHODS

    assert set(GENERAL_PATH_KERNELS) == set(CONTACT_METHODS)
    assert set(TICK_PART_KERNELS) <= set(CONTACT_METHODS)
    for kernel in [*(k for ks in GENERAL_PATH_KERNELS.values() for k in ks),
                   *(k for ks in TICK_PART_KERNELS.values() for k in ks),
                   PASSIVE_IMPACT_KERNEL, FREE_DOF_KERNEL, CONTACT_GEOMETRY_KERNEL]:
        d = _dispatcher(*kernel)
        assert isinstance(d, CPUDispatcher) and type(d._cache).__name__ == "FunctionCache", kernel


def test_helper_tick_parts_are_the_ones_another_robot_links():
    """The compile helper compiles the QP tick's Stage II, the sticking correction and the
    pack's constructor on a stand-in model (the bundled quadruped); the humanoid's fused tick
    -- another model, other sizes -- then calls exactly those signatures (numba types by
    dtype / dimension / layout only), so a cold start loads them from the helper's cache
    instead of compiling them again. Stage I and the finish compiled by type (the
    controller's share, before the pack's constructor is loaded) are the signatures the tick
    calls too."""
    import numpy as np

    from wbc_dynamics.compile_helper import compile_tick_parts, stand_in_contact_model
    from wbc_dynamics.contact import SolverState
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.contact.qp_tick import (
        _guess_active,
        _keep_active,
        qp_tick_active_set,
        qp_tick_finish,
        qp_tick_stage1,
        qp_tick_stage2,
    )
    from wbc_dynamics.contact.tick import _sticking_qdd, compiled_tick
    from wbc_dynamics.kernels.fixed_args import fixed_args
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    parts = (_sticking_qdd, qp_tick_stage2, fixed_args)
    by_type = (qp_tick_stage1, qp_tick_finish, _guess_active, _keep_active)
    compile_tick_parts(stand_in_contact_model(), ["qp_coulomb", "qp_noslip"])
    before = {d: set(d.signatures) for d in parts}
    assert all(before.values()), before
    m = RobotModel.from_urdf(robot_path("humanoid"), floating_base=True)
    info = robot_info("humanoid")
    cm = ContactModel(m, contact_links=info["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3)
    tick = compiled_tick(cm, "qp_coulomb", {})
    tick.compile_assembly()
    typed = {d: set(d.signatures) for d in by_type}
    assert all(typed.values()), typed
    st = SolverState()
    q, v = np.array(info["standing_q"], dtype=np.float64), np.zeros(m.nv)
    qdd = np.zeros(cm.actuated.shape[0])
    for _ in range(2):  # cold, then warm-started (the whole tick is compiled at the first)
        tick.run(q, v, qdd, st.get("qp_coulomb"))
    assert {d: set(d.signatures) for d in parts} == before
    assert {d: set(d.signatures) for d in by_type} == typed
    assert len(qp_tick_active_set.signatures) >= 1


def test_helper_free_dof_tick_is_the_one_another_robot_binds():
    """The compile helper binds method none's tick with unactuated DoFs on the stand-in
    quadruped; a controller of another robot (the humanoid; and a fixed-base arm with a passive
    joint) then binds exactly that signature -- it loads the helper's cache entry instead of
    compiling -- and its torques are those of the kernel (not a fallback)."""
    from wbc_dynamics.compile_helper import compile_free_dof
    from wbc_dynamics.controller import WholeBodyController
    from wbc_dynamics.kernels.free_dof import free_dof_inverse_dynamics

    compile_free_dof()
    before = set(free_dof_inverse_dynamics.signatures)
    assert len(before) == 1, before
    ctl = WholeBodyController({"robot": "humanoid", "floating_base": True, "method": "none"})
    assert ctl._free_dof is not None
    arm = WholeBodyController({"robot": "arm", "method": "none",
                               "passive_joints": ["joint_6"]})
    assert arm._free_dof is not None
    assert set(free_dof_inverse_dynamics.signatures) == before


def test_helper_tick_steps_are_the_ones_a_controller_binds():
    """The compile helper's first job, the controller's per-tick pre-, post- and command step
    (``compile_tick_steps``) on stand-in buffers, has exactly the signatures a controller binds
    (floating base; a fixed base with passive joints): a cold start loads them."""
    from wbc_dynamics.controller import (
        WholeBodyController,
        _command_tick,
        _finish_tick,
        _prepare_tick,
        compile_tick_steps,
    )

    steps = (_prepare_tick, _finish_tick, _command_tick)
    compile_tick_steps()
    before = [set(k.signatures) for k in steps]
    assert [len(s) for s in before] == [1, 1, 1], before
    for cfg in ({"robot": "quadruped", "floating_base": True, "method": "none"},
                {"robot": "arm", "method": "none", "passive_joints": ["joint_6"]}):
        WholeBodyController(cfg)
        assert [set(k.signatures) for k in steps] == before, cfg


def test_helper_wait_returns_at_its_contact_line_and_drains_its_stderr():
    """The controller goes on at the helper's CONTACT_KERNELS_READY line (the helper still
    compiles method none's tick), and waits for its exit before binding that tick; a helper
    writing more than a pipe holds to stderr does not block; a failure keeps stderr's tail."""
    from wbc_dynamics.compile_helper import CONTACT_KERNELS_READY, CompileHelper

    script = ("import sys, time\n"
              "sys.stderr.write('x' * 200000)\n"
              f"print({CONTACT_KERNELS_READY!r}, flush=True)\n"
              "time.sleep(1.0)\n"
              "sys.stderr.write('the end')\n"
              "sys.exit(int(sys.argv[1]))\n")

    def start(code: int) -> tuple[CompileHelper, subprocess.Popen]:
        proc = subprocess.Popen([sys.executable, "-c", script, str(code)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        return CompileHelper(proc, ["lcp_noslip"]), proc

    helper, proc = start(0)
    assert helper.wait(timeout=30.0, contact_only=True) is True
    assert proc.poll() is None and helper.result is None  # still running: method none's tick
    assert helper.wait(timeout=30.0, contact_only=True) is True  # (remembered)
    assert helper.wait(timeout=30.0) is True and helper.result is True
    assert proc.returncode == 0
    failing, proc = start(3)
    assert failing.wait(timeout=30.0) is False
    assert failing.result.startswith("exit code 3") and failing.result.endswith("the end")


def test_helper_contact_ready_polls_without_waiting():
    """``contact_ready`` (the controller's question while it has its own work: is the helper
    still at the contact kernels?) answers at once, False before the helper's
    CONTACT_KERNELS_READY line and True after it, without ending the helper; a helper that
    exited without the line counts as ready (nothing more will come from it)."""
    import time

    from wbc_dynamics.compile_helper import CONTACT_KERNELS_READY, CompileHelper

    script = ("import sys, time\n"
              "time.sleep(float(sys.argv[1]))\n"
              "if sys.argv[2] == '1':\n"
              f"    print({CONTACT_KERNELS_READY!r}, flush=True)\n"
              "time.sleep(float(sys.argv[1]))\n")

    def start(delay: str, line: str) -> tuple[CompileHelper, subprocess.Popen]:
        proc = subprocess.Popen([sys.executable, "-c", script, delay, line],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        return CompileHelper(proc, ["lcp_noslip"]), proc

    helper, proc = start("1.5", "1")
    t0 = time.monotonic()
    assert helper.contact_ready() is False
    assert time.monotonic() - t0 < 0.5  # no waiting
    while not helper.contact_ready():
        assert time.monotonic() - t0 < 30.0
        time.sleep(0.05)
    assert proc.poll() is None and helper.result is None  # still running
    assert helper.wait(timeout=30.0) is True
    silent, proc = start("0.2", "0")
    t0 = time.monotonic()
    while not silent.contact_ready():
        assert time.monotonic() - t0 < 30.0
        time.sleep(0.05)
    assert silent.result is True and proc.returncode == 0


def test_coulomb_tick_min_norm_by_type_is_the_one_the_tick_calls():
    """The controller's share of a cold ``lcp_coulomb`` start: the assembly and the minimum-norm
    selection compiled by type (``CoulombTick.compile_assembly``, while the helper compiles
    Lemke); the tick then calls exactly that signature (nothing compiled again)."""
    import numpy as np

    from wbc_dynamics.contact import SolverState
    from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
    from wbc_dynamics.contact.lcp_coulomb import min_norm_coulomb_kernel
    from wbc_dynamics.contact.tick import compiled_tick
    from wbc_dynamics.model import RobotModel
    from wbc_dynamics.robots import robot_info, robot_path

    m = RobotModel.from_urdf(robot_path("humanoid"), floating_base=True)
    info = robot_info("humanoid")
    cm = ContactModel(m, contact_links=info["contact_links"],
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=1e-3)
    tick = compiled_tick(cm, "lcp_coulomb", {"sticking_correction": True, "min_norm": True})
    tick.compile_assembly()
    typed = set(min_norm_coulomb_kernel.signatures)
    assert typed
    st = SolverState()
    q, v = np.array(info["standing_q"], dtype=np.float64), np.zeros(m.nv)
    for _ in range(2):
        assert tick.run(q, v, np.zeros(cm.actuated.shape[0]), st.get("lcp_coulomb"))
    assert "min_norm" in tick.flags  # the selection ran (the signature was used)
    assert set(min_norm_coulomb_kernel.signatures) == typed
