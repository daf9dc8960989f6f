"""Scratch memory of a compiled control tick, allocated once (issue 12: no allocation per tick).

A numba kernel that writes ``np.zeros(n)`` allocates on the heap through numba's runtime at
every call (malloc, a reference-counted MemInfo, free): ~50-100 ns each, 50-150 times in a
contact tick, and a source of jitter a real-time loop does not want. The tick's kernels instead
take their temporaries from an :class:`Arena`: three preallocated buffers (float64, int64,
bool) handed out front to back, ``top`` resets at the start of each tick
(:func:`reset`). A request is a view of the buffer -- the caller's shape, C-contiguous, so the
code using it is unchanged -- and stays valid until the next :func:`reset`.

A request that does not fit is allocated normally and counted in ``spills``: the result is the
same, only the allocation comes back. The general path (``ContactModel.build`` + ``solve``),
whose results outlive the call, passes :func:`no_arena` (capacity 0: everything allocated as
before), so arena memory never leaves a tick.

Sizing: the tick's owner measures the high-water marks (``high``) of a warm-up at its contact
capacity and allocates with room to spare (:func:`sized_like`); ``test_contact_tick.py``
checks that ticks allocate nothing and never spill.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Arena", "NO_ARENA", "arena", "no_arena", "sized_like", "reset", "floats", "floats_zero",
           "floats_2d", "floats_2d_zero", "floats_copy", "ints", "ints_zero", "flags_zero"]

# indices into Arena.top / Arena.high (passed as np.int64(...): a typed value, not a literal --
# numba compiles a callee once more for every literal argument)
_F, _I, _B = 0, 1, 2


class Arena(NamedTuple):
    """Preallocated scratch buffers of one compiled tick (module doc).

    ``float_buf`` float64, ``int_buf`` int64, ``flag_buf`` bool: the memory handed out;
    ``top`` (3,) int64: the next free entry of each buffer; ``high`` (3,) int64: the largest
    ``top`` reached since the arena was made; ``spills`` (1,) int64: requests that did not
    fit and were allocated on the heap instead.
    """

    float_buf: np.ndarray
    int_buf: np.ndarray
    flag_buf: np.ndarray
    top: np.ndarray
    high: np.ndarray
    spills: np.ndarray


def arena(n_float: int, n_int: int, n_flag: int) -> Arena:
    """An arena with room for ``n_float`` float64, ``n_int`` int64 and ``n_flag`` bool entries."""
    return Arena(np.zeros(n_float), np.zeros(n_int, dtype=np.int64),
                 np.zeros(n_flag, dtype=np.bool_), np.zeros(3, dtype=np.int64),
                 np.zeros(3, dtype=np.int64), np.zeros(1, dtype=np.int64))


def no_arena() -> Arena:
    """An arena of capacity 0: every request allocated on the heap (the general path)."""
    return arena(0, 0, 0)


def sized_like(used: Arena, factor: float = 2.0, extra: int = 256) -> Arena:
    """A fresh arena ``factor`` times ``used``'s high-water marks, plus ``extra`` entries."""
    f, i, b = (int(factor * int(x)) + extra for x in used.high)
    return arena(f, i, b)


@njit(cache=True)
def reset(ar):
    """Hand out the buffers from the start again (the start of a tick)."""
    for k in range(3):
        ar.top[k] = 0


@njit(cache=True)
def _claim(ar, k, n, cap):
    """Start index of ``n`` entries of buffer ``k`` (capacity ``cap``), or -1 (spill)."""
    t = ar.top[k]
    if t + n > cap:
        ar.spills[0] += 1
        return -1
    ar.top[k] = t + n
    if t + n > ar.high[k]:
        ar.high[k] = t + n
    return t


@njit(cache=True)
def _view(buf, ar, k, n):
    """``n`` entries of ``buf`` (buffer ``k`` of ``ar``), or a heap array of its dtype (spill)."""
    t = _claim(ar, k, n, buf.shape[0])
    if t < 0:
        return np.empty(n, dtype=buf.dtype)
    return buf[t:t + n]


@njit(cache=True)
def floats(ar, n):
    """(n,) float64, uninitialized (``np.empty(n)``)."""
    return _view(ar.float_buf, ar, np.int64(_F), n)


@njit(cache=True)
def floats_zero(ar, n):
    """(n,) float64 zeros (``np.zeros(n)``)."""
    x = floats(ar, n)
    x[:] = 0.0
    return x


@njit(cache=True)
def floats_2d(ar, rows, cols):
    """(rows, cols) float64, C-contiguous, uninitialized."""
    return floats(ar, rows * cols).reshape((rows, cols))


@njit(cache=True)
def floats_2d_zero(ar, rows, cols):
    """(rows, cols) float64 zeros, C-contiguous."""
    return floats_zero(ar, rows * cols).reshape((rows, cols))


@njit(cache=True)
def floats_copy(ar, x):
    """A copy of the vector ``x`` (``x.copy()``)."""
    y = floats(ar, x.shape[0])
    y[:] = x
    return y


@njit(cache=True)
def ints(ar, n):
    """(n,) int64, uninitialized."""
    return _view(ar.int_buf, ar, np.int64(_I), n)


@njit(cache=True)
def ints_zero(ar, n):
    """(n,) int64 zeros."""
    x = ints(ar, n)
    x[:] = 0
    return x


@njit(cache=True)
def flags_zero(ar, n):
    """(n,) bool, all False."""
    x = _view(ar.flag_buf, ar, np.int64(_B), n)
    x[:] = False
    return x

#: the general path's arena (capacity 0): its results are ordinary arrays that outlive the call
NO_ARENA = no_arena()
