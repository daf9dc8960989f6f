"""A kernel's fixed arguments packed once, passed as one object per call.

Calling a compiled kernel from Python unboxes every argument: ~40 ns per array, and the control
tick's kernels take ~70 arrays (the robot model's arrays and the contact buffers, NamedTuples of
arrays), ~2.4 us of a ~45 us quadruped tick, repeated for every compiled call of the tick.
:class:`FixedArgs` is a numba StructRef holding two tuples, ``head`` and ``tail``, of those
fixed arguments; it unboxes as one pointer whatever it holds. The kernel takes it in place of
them and unpacks it on entry (``topo, tree, ... = a.head``: native code, nothing unboxed); it
is called through its :func:`~wbc_dynamics.kernels.linalg.bound_entry`. Not through a jitted
wrapper that unpacks and calls the unchanged kernel: numba links the callee into the wrapper
and generates its code once more (~10 s per tick kernel on a cold start, ~24 s for the QP
tick).

The arrays are held by reference (no copy): the kernels see in-place updates of them, as
before; a buffer *replaced* by a new array object needs a new pack.
"""

from __future__ import annotations

from numba import njit
from numba.experimental import structref

from .records import RecordType

__all__ = ["FixedArgs", "fixed_args", "pack_type"]


@structref.register
class FixedArgsType(RecordType):
    """numba type of :class:`FixedArgs` (fields ``head``, ``tail``: tuples)."""


class FixedArgs(structref.StructRefProxy):
    """Python handle of a packed (``head``, ``tail``) pair of argument tuples; create it with
    :func:`fixed_args` (cached compiled constructor), read it only in jitted code."""


structref.define_proxy(FixedArgs, FixedArgsType, ["head", "tail"])


@njit(cache=True)
def fixed_args(head, tail):
    """Pack the tuples ``head`` and ``tail`` into a :class:`FixedArgs` (compiled and cached per
    argument types, unlike ``FixedArgs(...)`` from Python, which compiles at every start)."""
    return FixedArgs(head, tail)


def pack_type(head: tuple, tail: tuple) -> FixedArgsType:
    """The numba type of ``fixed_args(head, tail)`` without building it: a kernel taking the
    pack can be compiled by type (``dispatcher.compile``) before the pack's constructor is
    compiled (the compile helper compiles that meanwhile, docs/node.md start-up)."""
    from numba import typeof

    return FixedArgsType([("head", typeof(head)), ("tail", typeof(tail))])
