"""Time one control tick, ``WholeBodyController.update()``, against Pinocchio, in one run.

For each shipped configuration (``config/<robot>.yaml``: the model, contact links, contact options
and gains the product ships with) and every inverse-dynamics method -- ``lcp_noslip`` with and
without ``noslip_min_norm``, ``lcp_coulomb``, ``qp_coulomb``, ``qp_noslip``, ``none`` -- the
controller ticks on the robot's standing state (fresh joint and base state, reference = the
standing pose, zero velocities). Each tick's wall-clock time is sampled separately.

The reference is Pinocchio (``pin``) computing the arithmetic such a tick needs at the same
state, through its Python API: ``rnea`` + ``computeMinverse`` + ``forwardKinematics`` +
``computeJointJacobians`` + ``updateFramePlacements`` + one ``getFrameJacobian``
(LOCAL_WORLD_ALIGNED) per contact link. Tick and reference are sampled in interleaved blocks so
both see the same machine load; the ratios are what to compare across machines and runs.

Ratios: ``median ratio = median(tick) / median(reference)``; ``p99 ratio = p99(tick) /
median(reference)`` (the tail of the tick against the typical reference: stricter than a p99 /
p99 ratio, which a noisy machine inflates on both sides).

The machine's own tail: a compiled loop of dependent multiply-adds on registers (no memory, no
call, the same work every time), calibrated to the tick's median, is sampled in the same
interleaved blocks; ``loop p99 / median`` is what the machine does to any computation of that
length. On the 2-core VM this was written on, the kernel's 250 Hz timer interrupt (CONFIG_HZ=250)
at times costs 45-100 us: every ~4 ms sample it lands in is that much longer, i.e. ~1 % of 45 us
samples -- the p99 itself. A tick's p99 ratio near ``median ratio x loop p99 / median`` is the
machine, not the tick.

A control loop's tick does not run back to back: it waits for its next input (1 ms at 1 kHz),
and meanwhile the machine runs other things, so the tick starts with colder caches and branch
predictors. ``--idle-us 1000`` sleeps that long before every sampled call (tick, reference and
loop alike) to measure that case: on the 2-core VM both the tick and Pinocchio's reference
then take 2.3-4x longer than back to back, their ratio close to the back-to-back
one.

    python benchmarks/bench_tick.py [--robots quadruped humanoid] [--ticks 3000] [--markdown]
                                    [--write-readme]
                                    [--idle-us 1000]
    python benchmarks/bench_tick.py --tiny      # smoke mode (used by test/test_bench_tick.py)
    python benchmarks/bench_tick.py --breakdown [--robots ...] [--variants ...]  # per call

Every sampled tick is preceded (untimed) by what the node's callbacks deliver between two
ticks: the standing joint state, base state and reference, stamped one control period later, and
``update()`` runs at that time. Each tick thus runs what a new joint state starts -- the
joint-state observer (``joint_observer_acceleration_noise``, on in both shipped
configurations), the base-pose observer where a configuration turns it on -- besides the
contact state filter and the torque shaping, as in the node's loop.

Targets (:data:`TARGETS`): every row's median ratio <= 3x and p99 ratio <= 6x. The markdown
output (and ``--write-readme``) follows the table with one line per target naming the rows that
miss it, their ratio and the time over the target [us], and a fixed paragraph on where the
time of a tick goes (:data:`WHERE_THE_TIME_GOES`).

For a floating base the shipped variant's row also times, in the same interleaved blocks, the
base estimator (``base_state: imu``: the leg kinematics and the Kalman update with every foot in
stance, the work it adds to a tick) and the task layer of standing balance
(:func:`wbc_dynamics.tasks.balance_tasks`: centre of mass and trunk orientation, then the
posture, over the stance feet: the compiled task step the tick runs with ``task_names``), and
reports each one's share of the tick's median.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import yaml
from numba import njit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_pages import write_between_markers  # noqa: E402

from wbc_dynamics.controller import ControllerConfig, WholeBodyController  # noqa: E402
from wbc_dynamics.robots import robot_info, robot_path  # noqa: E402

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config")

#: (label, method, noslip_min_norm or None = as shipped)
VARIANTS: tuple[tuple[str, str, bool | None], ...] = (
    ("lcp_noslip + min_norm", "lcp_noslip", True),
    ("lcp_noslip", "lcp_noslip", False),
    ("lcp_coulomb", "lcp_coulomb", None),
    ("qp_coulomb", "qp_coulomb", None),
    ("qp_noslip", "qp_noslip", None),
    ("none", "none", None),
)


def shipped_config(robot: str) -> dict:
    """The controller fields of ``config/<robot>.yaml`` (node-only parameters dropped)."""
    with open(os.path.join(CONFIG_DIR, f"{robot}.yaml")) as f:
        params = yaml.safe_load(f)["/**"]["ros__parameters"]
    names = {f.name for f in dataclasses.fields(ControllerConfig)}
    return {k: v for k, v in params.items() if k in names}


def standing_controller(cfg: dict) -> tuple[WholeBodyController, np.ndarray]:
    """Controller for ``cfg`` holding the robot's standing state; returns it and the model q."""
    robot = cfg["robot"]
    ctl = WholeBodyController(cfg)
    q = np.asarray(robot_info(robot)["standing_q"], dtype=np.float64)
    m = ctl.model
    qj = standing_joint_positions(ctl, q)
    zeros = np.zeros(ctl.n)
    ctl.set_joint_state(qj, zeros, 0.0)
    if m.floating_base:
        ctl.set_base_state(q[:3], q[3:7], np.zeros(3), np.zeros(3), 0.0)
    ctl.set_reference(zeros, 0.0, position=qj, velocity=zeros)
    return ctl, q


def standing_joint_positions(ctl: WholeBodyController, q: np.ndarray) -> np.ndarray:
    """The joint positions [rad or m] of the model configuration ``q`` in ``ctl``'s configured
    joint order."""
    m = ctl.model
    off = 7 if m.floating_base else 0
    by_name = dict(zip(m.joint_names, q[off:], strict=True))
    return np.array([by_name[j] for j in ctl.joint_names])


def pinocchio_reference(robot: str, floating: bool, contact_links: list[str], q_ours: np.ndarray,
                        joint_names: list[str]):
    """A closure doing Pinocchio's share of the tick at the same state."""
    import pinocchio as pin

    path = robot_path(robot)
    pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromUrdf(path))
    pd = pm.createData()
    q = pin.neutral(pm)
    off = 7 if floating else 0
    q[:off] = q_ours[:off]
    ours = dict(zip(joint_names, q_ours[off:], strict=True))
    for jid in range(1, pm.njoints):
        if pm.joints[jid].nq == 1:
            q[pm.joints[jid].idx_q] = ours[pm.names[jid]]
    v = np.zeros(pm.nv)
    a = np.zeros(pm.nv)
    fids = [pm.getFrameId(link) for link in contact_links]
    lwa = pin.LOCAL_WORLD_ALIGNED

    def reference() -> None:
        pin.rnea(pm, pd, q, v, a)
        pin.computeMinverse(pm, pd, q)
        pin.forwardKinematics(pm, pd, q)
        pin.computeJointJacobians(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        for fid in fids:
            pin.getFrameJacobian(pm, pd, fid, lwa)

    return reference


# not cached: the test loads this file as an anonymous module, whose cache entry a later
# `python benchmarks/bench_tick.py` cannot unpickle; it compiles in ~0.1 s
@njit
def _compute_loop(iterations: int) -> float:
    """``iterations`` dependent multiply-adds on one register: fixed work, no memory traffic."""
    x = 1.0
    for _ in range(iterations):
        x = x * 0.999999 + 1e-7
    return x


def _loop_of_duration(seconds: float) -> Callable[[], float]:
    """A call of :func:`_compute_loop` whose median time is about ``seconds``."""
    probe = 100_000
    _compute_loop(probe)
    t = np.empty(31)
    for i in range(t.size):
        t0 = time.perf_counter()
        _compute_loop(probe)
        t[i] = time.perf_counter() - t0
    iterations = max(1, int(round(seconds / (float(np.median(t)) / probe))))
    return lambda: _compute_loop(iterations)


def _sample(fn, n: int, out: np.ndarray, start: int, idle: float = 0.0,
            before: Callable[[], None] | None = None) -> None:
    """Time ``n`` calls of ``fn`` into ``out[start:start + n]`` [s]; ``idle`` > 0: sleep that
    long [s] before each call (untimed), as a control loop waits for its next input;
    ``before``: called (untimed) before each call, e.g. to deliver the tick's inputs."""
    clock = time.perf_counter
    sleep = time.sleep
    for i in range(n):
        if idle > 0.0:
            sleep(idle)
        if before is not None:
            before()
        t0 = clock()
        fn()
        out[start + i] = clock() - t0


class StandingInputs:
    """The inputs a node delivers to ``ctl`` between two ticks, at the standing state: the joint
    state (and for a floating base the base state) and the reference, each stamped one control
    period after the previous delivery. :meth:`deliver` (untimed) then :meth:`tick` is one tick
    of a loop: every ``update()`` sees a new joint state, so it runs the joint-state observer
    (and a configured base-pose observer), as in the node."""

    def __init__(self, ctl: WholeBodyController, q: np.ndarray) -> None:
        self.ctl = ctl
        self.dt = float(ctl.dt)  # [s] the control period
        self.now = 0.0  # [s] the stamp of the last delivery
        self.qj = standing_joint_positions(ctl, q)
        self.zeros = np.zeros(ctl.n)
        self.base = ((q[:3].copy(), q[3:7].copy(), np.zeros(3), np.zeros(3))
                     if ctl.model.floating_base else None)

    def deliver(self) -> None:
        """The next period's joint state, base state and reference (as the node's callbacks)."""
        self.now += self.dt
        ctl, now = self.ctl, self.now
        ctl.set_joint_state(self.qj, self.zeros, now)
        if self.base is not None:
            ctl.set_base_state(*self.base, now)
        ctl.set_reference(self.zeros, now, position=self.qj, velocity=self.zeros)

    def tick(self) -> object:
        """``update()`` at the time of the last delivery."""
        return self.ctl.update(self.now)


def bench_variant(robot: str, label: str, method: str, min_norm: bool | None, ticks: int,
                  block: int = 250, warm: int = 200, idle: float = 0.0) -> dict:
    cfg = shipped_config(robot)
    cfg["method"] = method
    if min_norm is not None:
        cfg["noslip_min_norm"] = min_norm
    t0 = time.perf_counter()
    ctl, q = standing_controller(cfg)
    t_build = time.perf_counter() - t0
    ref = pinocchio_reference(robot, ctl.model.floating_base, ctl.contact_links, q,
                              list(ctl.model.joint_names))
    inputs = StandingInputs(ctl, q)
    inputs.deliver()
    out = inputs.tick()
    assert out.mode == "control", f"{robot}/{label}: tick in safe mode {out.mode}"
    update, deliver = inputs.tick, inputs.deliver
    # a floating base's estimator (base_state: imu), timed alone in the same blocks: its share
    # of the shipped tick (the IMU estimate replaces the odom input, inside the tick)
    shipped_floating = ctl.model.floating_base and label == VARIANTS[0][0]
    estimate = _estimator_call(cfg, q) if shipped_floating else None
    tasks = _task_layer_call(cfg, ctl.model.root_link) if shipped_floating else None
    for _ in range(warm):  # warm caches and the solver's warm start
        deliver()
        update()
        ref()
        if estimate is not None:
            estimate()
            tasks()
    t_warm = np.empty(max(warm, 5))
    _sample(update, t_warm.size, t_warm, 0, before=deliver)
    loop = _loop_of_duration(float(np.median(t_warm)))
    t_tick = np.empty(ticks)
    t_ref = np.empty(ticks)
    t_loop = np.empty(ticks)
    t_est = np.empty(ticks)
    t_tasks = np.empty(ticks)
    for s in range(0, ticks, block):  # interleaved blocks: all see the same load
        k = min(block, ticks - s)
        _sample(update, k, t_tick, s, idle, before=deliver)
        _sample(ref, k, t_ref, s, idle)
        _sample(loop, k, t_loop, s, idle)
        if estimate is not None:
            _sample(estimate, k, t_est, s, idle)
            _sample(tasks, k, t_tasks, s, idle)
    assert ctl.last_output.mode == "control", f"{robot}/{label}: {ctl.last_output.mode}"
    ref_med = float(np.median(t_ref))
    loop_med = float(np.median(t_loop))
    return {
        "robot": robot, "nv": int(ctl.model.nv), "variant": label,
        "contacts": len(ctl.last_output.contact_ids),
        "flags": ",".join(ctl.last_output.solver_flags),
        "median_us": float(np.median(t_tick)) * 1e6,
        "p99_us": float(np.percentile(t_tick, 99)) * 1e6,
        "pin_median_us": ref_med * 1e6, "pin_p99_us": float(np.percentile(t_ref, 99)) * 1e6,
        "median_ratio": float(np.median(t_tick)) / ref_med,
        "p99_ratio": float(np.percentile(t_tick, 99)) / ref_med,
        "loop_median_us": loop_med * 1e6,
        "loop_p99_factor": float(np.percentile(t_loop, 99)) / loop_med,
        "build_s": t_build,
        "estimator_us": float(np.median(t_est)) * 1e6 if estimate is not None else math.nan,
        "estimator_share": (float(np.median(t_est) / np.median(t_tick)) if estimate is not None
                            else math.nan),
        "tasks_us": float(np.median(t_tasks)) * 1e6 if tasks is not None else math.nan,
        "tasks_share": (float(np.median(t_tasks) / np.median(t_tick)) if tasks is not None
                        else math.nan),
    }


#: the compiled calls of a tick that :func:`breakdown` times: (label, owner path on the
#: controller, attribute) -- each a bound entry point the tick calls once
BREAKDOWN_CALLS: tuple[tuple[str, str, str], ...] = (
    ("joint-state observer", "_joint_observer", "_entry"),
    ("base-pose observer", "_base_observer", "_entry"),
    ("pre-step (PD, scatter)", "", "_prepare"),
    ("contact state filter", "_stance", "_entry"),
    ("contact tick", "fused", "_entry"),
    ("post-step (gather, clamp)", "", "_finish"),
    ("command step (drive, low-pass)", "", "_command"),
)


def breakdown(robot: str, label: str, ticks: int = 3000, block: int = 250) -> dict[str, float]:
    """Where one variant's tick goes [us]: ``"tick"``, the median of ``update()`` as the table
    times it; the median of each compiled call of :data:`BREAKDOWN_CALLS` the configuration
    runs, timed with ``time.perf_counter_ns`` around the call inside ``update()``, in blocks of
    ``block`` ticks interleaved with the untimed-call blocks of ``"tick"`` (the same load);
    ``"Python between them"``: the tick's median minus the calls' medians."""
    method, min_norm = {v[0]: (v[1], v[2]) for v in VARIANTS}[label]
    cfg = shipped_config(robot)
    cfg["method"] = method
    if min_norm is not None:
        cfg["noslip_min_norm"] = min_norm
    ctl, q = standing_controller(cfg)
    inputs = StandingInputs(ctl, q)
    for _ in range(200):
        inputs.deliver()
        inputs.tick()
    fused = ctl._compiled_tick(ctl._contact_model, method) if method != "none" else None
    clock = time.perf_counter_ns
    samples: dict[str, list[int]] = {}
    calls = []  # (owner, attribute, the bound call, its timed stand-in)
    for name, owner, attr in BREAKDOWN_CALLS:
        obj = fused if owner == "fused" else getattr(ctl, owner) if owner else ctl
        call = getattr(obj, attr, None) if obj is not None else None
        if call is None:
            continue  # not configured (or no compiled call) for this variant
        times = samples.setdefault(name, [])

        def timed(*args, _call=call, _times=times):
            t0 = clock()
            r = _call(*args)
            _times.append(clock() - t0)
            return r

        calls.append((obj, attr, call, timed))
    t_tick = np.empty(ticks)
    for s in range(0, ticks, block):
        k = min(block, ticks - s)
        _sample(inputs.tick, k, t_tick, s, before=inputs.deliver)
        for obj, attr, _, timed in calls:
            setattr(obj, attr, timed)
        for _ in range(k):
            inputs.deliver()
            inputs.tick()
        for obj, attr, call, _ in calls:
            setattr(obj, attr, call)
    assert ctl.last_output.mode == "control", f"{robot}/{label}: {ctl.last_output.mode}"
    out = {"tick": float(np.median(t_tick)) * 1e6}
    for name, times in samples.items():
        if times:
            out[name] = float(np.median(times)) * 1e-3
    out["Python between them"] = out["tick"] - sum(v for k, v in out.items() if k != "tick")
    return out


def _task_layer_call(cfg: dict, trunk_link: str) -> Callable[[], int]:
    """One compiled task step of standing balance (:func:`~wbc_dynamics.tasks.balance_tasks`
    on ``trunk_link``) at the standing state, every foot in stance, as the tick runs it."""
    from wbc_dynamics.tasks import balance_tasks

    ctl, _ = standing_controller({**cfg, **balance_tasks(trunk_link)})
    assert ctl.update(0.0).mode == "control"  # holds the goals where the robot stands
    layer = ctl.tasks
    layer.data.link_active[:] = True
    args = (layer._record, *ctl._task_args)
    return lambda: ctl._task_tick(*args)


def _estimator_call(cfg: dict, q: np.ndarray) -> Callable[[], int]:
    """One step of the controller's base estimator (``base_state: imu``: leg kinematics and the
    Kalman update, every foot in stance) at the standing state, as the tick runs it."""
    est = WholeBodyController({**cfg, "base_state": "imu"}).base_estimator
    info = robot_info(cfg["robot"])
    qj = np.array(q[7:], dtype=np.float64)  # (the model's joint order, as standing_q)
    zeros = np.zeros(qj.shape[0])
    w, f = np.zeros(3), np.array([0.0, 0.0, 9.81])
    quat = np.asarray(info["standing_q"][3:7], dtype=np.float64)
    stance = np.ones(len(est.feet), dtype=bool)
    dt = 1.0 / float(cfg.get("control_rate", 1000.0))
    return lambda: est.update(qj, zeros, w, f, quat, stance, dt)


def run(robots: list[str], variants: list[str], ticks: int, warm: int = 200,
        echo: bool = False, idle: float = 0.0) -> list[dict]:
    """Benchmark rows (see :func:`bench_variant`) for every robot and variant label; ``idle``
    [s] of sleep before every sampled call (0: back to back)."""
    unknown = set(variants) - {v[0] for v in VARIANTS}
    if unknown:
        raise ValueError(f"--variants: unknown {sorted(unknown)}")
    rows = []
    for robot in robots:
        for label, method, min_norm in VARIANTS:
            if label in variants:
                rows.append(bench_variant(robot, label, method, min_norm, ticks,
                                          block=min(250, ticks), warm=warm, idle=idle))
                r = rows[-1]
                if echo:
                    print(f"{r['robot']:10s} {r['variant']:22s} contacts {r['contacts']:2d}  "
                          f"tick median {r['median_us']:7.1f} us  p99 {r['p99_us']:7.1f} us | "
                          f"pin median {r['pin_median_us']:6.1f} us | ratio median "
                          f"{r['median_ratio']:5.1f}x  p99 {r['p99_ratio']:5.1f}x | same-length "
                          f"loop p99 / median {r['loop_p99_factor']:4.2f}  "
                          f"[{r['flags']}]" + (
                              f" | estimator {r['estimator_us']:.1f} us = "
                              f"{100 * r['estimator_share']:.0f} % of the tick | task layer "
                              f"{r['tasks_us']:.1f} us = {100 * r['tasks_share']:.0f} %"
                              if math.isfinite(r["estimator_us"]) else ""), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="*", default=["quadruped", "humanoid"])
    parser.add_argument("--variants", nargs="*", default=[v[0] for v in VARIANTS],
                        help="subset of: " + ", ".join(repr(v[0]) for v in VARIANTS))
    parser.add_argument("--ticks", type=int, default=3000, help="sampled ticks per variant")
    parser.add_argument("--markdown", action="store_true",
                        help="print a markdown table and the targets' report")
    parser.add_argument("--write-readme", action="store_true",
                        help="also write the table and the report into README.md (between its "
                             "markers)")
    parser.add_argument("--idle-us", type=float, default=0.0,
                        help="sleep this long [us] before every sampled call, as between the "
                             "ticks of a control loop (default 0: back to back)")
    parser.add_argument("--breakdown", action="store_true",
                        help="instead of the table: each variant's median tick and the median "
                             "of each compiled call inside it [us] (breakdown())")
    parser.add_argument("--tiny", action="store_true",
                        help="smoke mode: 40 sampled ticks, 5 warm ticks (ratios meaningless)")
    args = parser.parse_args(argv)
    ticks, warm = (40, 5) if args.tiny else (args.ticks, 200)
    if args.breakdown:
        for robot in args.robots:
            for label in args.variants:
                parts = breakdown(robot, label, ticks)
                print(f"{robot} {label}: " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items())
                      + " [us, medians]", flush=True)
        return 0
    rows = run(args.robots, args.variants, ticks, warm, echo=not args.markdown,
               idle=args.idle_us * 1e-6)
    if args.markdown or args.write_readme:
        report = markdown_table(rows) + "\n\n" + targets_report(rows)
        print(report)
        if args.write_readme:
            write_readme_table(report)
    return 0


#: the product's targets: (name, row key, largest ratio) -- a tick's median and its p99, each
#: over Pinocchio's median of the same tick
TARGETS: tuple[tuple[str, str, float], ...] = (
    ("median", "median_ratio", 3.0),
    ("p99", "p99_ratio", 6.0),
)

#: where a tick's time goes (printed under the table): the medians of
#: ``python benchmarks/bench_tick.py --breakdown`` (:func:`breakdown`) on the 2-core machine of
#: the README's table, and what was tried
WHERE_THE_TIME_GOES = (
    "Where the time goes (`python benchmarks/bench_tick.py --breakdown`: the median of each "
    "compiled call inside `update()`, standing, shipped options): quadruped `lcp_noslip` + "
    "min-norm ~35 µs = the contact tick ~21 µs (assembly with RNEA + M⁻¹, contact candidates "
    "and passive impact, then the solve) + the contact state filter ~5 µs (its own kinematics "
    "and candidates at the measured state) + the joint-state observer and the pre-, post- and "
    "command steps ~0.6-0.8 µs each + ~7 µs of Python between these calls; humanoid ~70 µs = "
    "contact tick ~47 µs + filter ~12.5 µs + the four steps ~3.5 µs + ~7 µs of Python. The "
    "3× budgets are ~21 / ~51 µs: the quadruped's contact tick alone fills its budget. Tried: "
    "the passive impact's M⁻¹ Jᵀ along a contiguous Jᵀ, without the coordinates no impact row "
    "moves (the same torques to the bit): 4.8 → 4.2 µs, within the tick's run-to-run spread. "
    "Left: one compiled call for the tick's five and the Python between them (~7 µs), one "
    "candidate search a tick instead of the filter's and the assembly's, and the tail, which is "
    "the machine's (the same-length loop column)."
)


def targets_report(rows: list[dict]) -> str:
    """One line per target of :data:`TARGETS`: met by every row, or each row that misses it with
    its ratio and the time over the target [µs] (for the p99 also the same-length loop's
    p99 / median); then :data:`WHERE_THE_TIME_GOES`."""
    lines = []
    for name, key, limit in TARGETS:
        over = [r for r in rows if r[key] > limit]
        head = f"**{name} ≤ {limit:g}× Pinocchio's median**: "
        if not over:
            lines.append(head + f"met by all {len(rows)} rows.")
            continue
        unit = "median_us" if key == "median_ratio" else "p99_us"
        # a p99 miss with the same-length loop's p99 / median: how much of it the machine does
        machine = "" if unit == "median_us" else "; same-length loop p99 / median {:.2f}"
        misses = ", ".join(
            f"{r['robot']} {r['variant']} {r[key]:.1f}× "
            f"(+{r[unit] - limit * r['pin_median_us']:.1f} µs"
            f"{machine.format(r.get('loop_p99_factor', math.nan))})" for r in over)
        lines.append(head + f"missed by {len(over)} of {len(rows)} rows: {misses}.")
    lines.append(WHERE_THE_TIME_GOES)
    return "\n\n".join(lines)


def markdown_table(rows: list[dict]) -> str:
    """The README's performance table of ``run``'s rows."""
    lines = ["| config | nv | method | contacts | tick median [µs] | tick p99 [µs] | "
             "Pinocchio median [µs] | median ratio | p99 ratio | same-length loop p99 / "
             "median | base estimator [µs] (share of the tick) | task layer [µs] (share) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        est = (f"{r['estimator_us']:.1f} ({100 * r['estimator_share']:.0f} %)"
               if math.isfinite(r["estimator_us"]) else "—")
        tasks = (f"{r['tasks_us']:.1f} ({100 * r['tasks_share']:.0f} %)"
                 if math.isfinite(r["tasks_us"]) else "—")
        lines.append(f"| {r['robot']}.yaml | {r['nv']} | {r['variant']} | {r['contacts']} | "
                     f"{r['median_us']:.1f} | {r['p99_us']:.1f} | {r['pin_median_us']:.1f} | "
                     f"{r['median_ratio']:.1f}× | {r['p99_ratio']:.1f}× | "
                     f"{r['loop_p99_factor']:.2f} | {est} | {tasks} |")
    return "\n".join(lines)


#: the README lines that enclose the performance table this script writes
README_MARKERS = ("<!-- bench_tick table: written by benchmarks/bench_tick.py --write-readme -->",
                  "<!-- end of the bench_tick table -->")


def write_readme_table(table: str, path: str | None = None) -> None:
    """Replace the text between :data:`README_MARKERS` in the README with ``table`` (the table
    and the targets' report under it; ValueError if the markers are missing)."""
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
    write_between_markers(path, README_MARKERS, table)


if __name__ == "__main__":
    raise SystemExit(main())
