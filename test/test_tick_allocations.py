"""A compiled control tick allocates nothing: every temporary of the contact tick comes
from the contact model's preallocated arena (wbc_dynamics.kernels.arena), for every method and
option the product ships, on the standing robots and on perturbed states (touch-downs, lift-offs,
inconsistent accelerations, the Sec. 4.5 / sticking corrections, minimum-norm selections).

Counted with numba's runtime statistics (every heap allocation of compiled code): a call of the
tick from Python allocates exactly what numba's unboxing of its per-call arrays (q, v, qdd)
allocates -- measured on a trivial kernel with the same arguments -- and nothing inside.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from numba import njit
from numba.core.runtime import _nrt_python, rtsys

from wbc_dynamics.kernels import arena as scratch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from bench_tick import VARIANTS, shipped_config, standing_controller  # noqa: E402


@njit(cache=True)
def _takes_three(q, v, qdd):
    return q.shape[0] + v.shape[0] + qdd.shape[0]


def _allocations() -> int:
    return rtsys.get_allocation_stats().alloc


@pytest.fixture(scope="module", autouse=True)
def _nrt_stats():
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    yield
    if not was:
        _nrt_python.memsys_disable_stats()


def _unboxing_allocations(q, v, qdd) -> int:
    """Allocations of one call that only unboxes (q, v, qdd): numba's MemInfo per array."""
    _takes_three(q, v, qdd)
    a0 = _allocations()
    _takes_three(q, v, qdd)
    return _allocations() - a0


CASES = [(robot, label, method, min_norm) for robot in ("quadruped", "humanoid")
         for label, method, min_norm in VARIANTS if method != "none"]


@pytest.mark.parametrize("robot,label,method,min_norm", CASES,
                         ids=[f"{c[0]}-{c[1].replace(' ', '')}" for c in CASES])
def test_compiled_tick_allocates_nothing(robot, label, method, min_norm):
    cfg = shipped_config(robot)
    cfg["method"] = method
    if min_norm is not None:
        cfg["noslip_min_norm"] = min_norm
    ctl, q_std = standing_controller(cfg)
    ctl.update(0.0)
    cm = ctl._contact_model
    fused = ctl._compiled_tick(cm, method)
    assert fused is not None, "the shipped configuration has a compiled tick"
    calls = []
    run = fused.run

    def counted(q, v, qdd, mstate):
        unboxing = _unboxing_allocations(q, v, qdd)
        a0 = _allocations()
        ok = run(q, v, qdd, mstate)
        calls.append((ok, _allocations() - a0 - unboxing))
        return ok

    fused.run = counted
    m = ctl.model
    n = ctl.n
    rng = np.random.default_rng(7)
    # joint offsets [rad]: the humanoid's soles tilt under larger ones, and its ticks then
    # leave the kernel for the general path (Sec. 4.5 correction infeasible) -- not counted
    noise = 0.02 if robot == "quadruped" else 0.002
    off = 7 if m.floating_base else 0
    q0 = q_std[off:]
    by_name = dict(zip(m.joint_names, q0, strict=True))
    qj0 = np.array([by_name[j] for j in ctl.joint_names])
    for k in range(60):
        t = 1e-3 * (k + 1)
        dz = rng.uniform(-0.002, 0.003)  # feet touching, penetrating, separating
        ctl.set_base_state(q_std[:3] + [0.0, 0.0, dz], q_std[3:7], rng.normal(0.0, 0.1, 3),
                           rng.normal(0.0, 0.2, 3), t)
        ctl.set_joint_state(qj0 + rng.normal(0.0, noise, n), rng.normal(0.0, 25 * noise, n), t)
        ctl.set_reference(rng.normal(0.0, 20.0 if k % 2 else 2.0, n), t, position=qj0,
                          velocity=np.zeros(n))
        out = ctl.update(t)
        assert np.all(np.isfinite(out.tau))
    solved = [extra for ok, extra in calls if ok]
    assert len(solved) >= 50, f"only {len(solved)} of {len(calls)} ticks solved by the kernel"
    assert max(solved) == 0, f"allocations inside the tick: {sorted(set(solved))}"
    ar = cm.data.arena
    assert ar.spills == 0
    assert ar.high[0] <= ar.float_buf.shape[0] // 2, (ar.high, ar.float_buf.shape)


@njit(cache=True)
def _arena_user(ar, x):
    scratch.reset(ar)
    a = scratch.floats_2d_zero(ar, np.int64(2), np.int64(3))
    b = scratch.ints_zero(ar, np.int64(4))
    c = scratch.flags_zero(ar, np.int64(3))
    d = scratch.floats_copy(ar, x)
    a[1, 2] = 5.0
    b[3] = 7
    c[0] = True
    return a.sum() + b.sum() + c.sum() + d.sum(), a, d


def test_arena_hands_out_views_and_spills_to_the_heap():
    """Requests are views of the buffers, zeroed / copied as asked; the high-water marks record
    the use; a request that does not fit is allocated (counted) with the same result."""
    x = np.arange(5.0)
    ar = scratch.arena(100, 10, 10)
    total, a, d = _arena_user(ar, x)
    assert total == 5.0 + 7 + 1 + 10.0
    assert np.shares_memory(a, ar.float_buf) and np.shares_memory(d, ar.float_buf)
    np.testing.assert_array_equal(ar.top, [11, 4, 3])
    np.testing.assert_array_equal(ar.high, [11, 4, 3])
    assert ar.spills == 0
    small = scratch.arena(6, 1, 1)  # room for the 2 x 3 block only
    total, a, d = _arena_user(small, x)
    assert total == 5.0 + 7 + 1 + 10.0
    assert np.shares_memory(a, small.float_buf) and not np.shares_memory(d, small.float_buf)
    assert small.spills == 3  # ints, flags, the copy
