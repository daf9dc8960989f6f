"""Scratch memory of a compiled control tick, allocated once (no allocation per tick).

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

Sizing: the contact model allocates for one tick with every candidate in contact, with room to
spare (``contact.geometry.tick_arena``); ``test_tick_allocations.py`` checks that ticks
allocate nothing, never spill and stay under half of it.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.experimental import structref

from .records import RecordType

__all__ = ["Arena", "NO_ARENA", "arena", "no_arena", "reset", "floats", "floats_zero",
           "floats_2d", "floats_2d_zero", "floats_copy", "copy_prefix", "ints", "ints_zero",
           "flags", "flags_zero"]

@structref.register
class ArenaType(RecordType):
    """numba type of :class:`Arena`."""


class Arena(structref.StructRefProxy):
    """Preallocated scratch buffers of one compiled tick (module doc), a numba ``StructRef``:
    passed to a kernel as ONE pointer. (A NamedTuple of the same arrays was tried first: numba
    passes it by value, with an atomic reference-count update per array at every call that
    takes it -- ~40 calls a tick cost more than the allocations the arena replaces.)

    ``float_buf`` float64, ``int_buf`` int64, ``flag_buf`` bool: the memory handed out;
    ``float_top`` / ``int_top`` / ``flag_top``: the next free entry of each buffer;
    ``float_high`` ...: the largest top reached since the arena was made; ``spills``: requests
    that did not fit and were allocated on the heap instead (int64 scalars, updated in place).
    Read from Python through the properties ``top`` and ``high`` ((3,) arrays: float, int,
    flag) and ``spills`` (compiled getters, cached).
    """

    @property
    def float_buf(self) -> np.ndarray:
        return _get_float_buf(self)

    @property
    def int_buf(self) -> np.ndarray:
        return _get_int_buf(self)

    @property
    def flag_buf(self) -> np.ndarray:
        return _get_flag_buf(self)

    @property
    def top(self) -> np.ndarray:
        return _get_top(self)

    @property
    def high(self) -> np.ndarray:
        return _get_high(self)

    @property
    def spills(self) -> int:
        return _get_spills(self)


structref.define_proxy(Arena, ArenaType,
                       ["float_buf", "int_buf", "flag_buf", "float_top", "int_top", "flag_top",
                        "float_high", "int_high", "flag_high", "spills"])


@njit(cache=True)
def _get_float_buf(ar):
    return ar.float_buf


@njit(cache=True)
def _get_int_buf(ar):
    return ar.int_buf


@njit(cache=True)
def _get_flag_buf(ar):
    return ar.flag_buf


@njit(cache=True)
def _get_top(ar):
    return np.array([ar.float_top, ar.int_top, ar.flag_top])


@njit(cache=True)
def _get_high(ar):
    return np.array([ar.float_high, ar.int_high, ar.flag_high])


@njit(cache=True)
def _get_spills(ar):
    return ar.spills


@njit(cache=True)
def _new_arena(n_float, n_int, n_flag):
    # compiled and cached (``Arena(...)`` from Python would compile at every start)
    zero = np.int64(0)
    return Arena(np.zeros(n_float), np.zeros(n_int, dtype=np.int64),
                 np.zeros(n_flag, dtype=np.bool_), zero, zero, zero, zero, zero, zero, zero)


def arena(n_float: int, n_int: int, n_flag: int) -> Arena:
    """An arena with room for ``n_float`` float64, ``n_int`` int64 and ``n_flag`` bool entries."""
    return _new_arena(np.int64(n_float), np.int64(n_int), np.int64(n_flag))


def no_arena() -> Arena:
    """An arena of capacity 0: every request allocated on the heap (the general path)."""
    return arena(0, 0, 0)


@njit(cache=True)
def reset(ar):
    """Hand out the buffers from the start again (the start of a tick)."""
    ar.float_top = 0
    ar.int_top = 0
    ar.flag_top = 0


@njit(cache=True, inline="always")
def _claim(ar, buf, top, high, n):
    """(view, new top, new high) of a request of ``n`` entries of ``buf`` whose next free entry
    is ``top``; a request that does not fit is allocated on the heap and counted in
    ``ar.spills``, the buffer's top and high unchanged. Compiled into each claim function
    (``inline="always"``): one bookkeeping, no call and no branch on the buffer's kind."""
    if top + n > buf.shape[0]:
        ar.spills += 1
        return np.empty(n, dtype=buf.dtype), top, high
    return buf[top:top + n], top + n, max(high, top + n)


# One claim function per buffer, on scalar fields: no array indexing, no branch on the kind.
@njit(cache=True)
def floats(ar, n):
    """(n,) float64, uninitialized (``np.empty(n)``)."""
    x, ar.float_top, ar.float_high = _claim(ar, ar.float_buf, ar.float_top, ar.float_high, n)
    return x


@njit(cache=True)
def ints(ar, n):
    """(n,) int64, uninitialized."""
    x, ar.int_top, ar.int_high = _claim(ar, ar.int_buf, ar.int_top, ar.int_high, n)
    return x


@njit(cache=True)
def flags(ar, n):
    """(n,) bool, uninitialized."""
    x, ar.flag_top, ar.flag_high = _claim(ar, ar.flag_buf, ar.flag_top, ar.flag_high, n)
    return x


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


@njit(cache=True, inline="always")
def copy_prefix(dst, src, n):
    """``dst[:n] = src[:n]`` for vectors, by an element loop: numba compiles an array-to-slice
    copy (``dst[:n] = src``) with a string-formatting shape-mismatch message, 1-2 s in every
    process and never cached (compiled into the caller: ``inline="always"``)."""
    for i in range(n):
        dst[i] = src[i]


@njit(cache=True)
def floats_copy(ar, x):
    """A copy of the vector ``x`` (``x.copy()``)."""
    y = floats(ar, x.shape[0])
    copy_prefix(y, x, x.shape[0])
    return y


@njit(cache=True)
def ints_zero(ar, n):
    """(n,) int64 zeros."""
    x = ints(ar, n)
    x[:] = 0
    return x


@njit(cache=True)
def flags_zero(ar, n):
    """(n,) bool, all False."""
    x = flags(ar, n)
    x[:] = False
    return x

#: the general path's arena (capacity 0): its results are ordinary arrays that outlive the call
NO_ARENA = no_arena()
