"""A kernel's fixed arguments packed once, passed as one object per call, read by name.

Calling a compiled kernel from Python unboxes every argument: ~40 ns per array, and the control
tick's kernels take ~70 arrays (the robot model and the contact buffers, records and
NamedTuples of arrays), ~2.4 us of a ~45 us quadruped tick, repeated for every compiled call of
the tick. :func:`fixed_args` packs a NamedTuple of those fixed arguments (one NamedTuple class
per kind of kernel, e.g. :class:`~wbc_dynamics.contact.tick_base.ContactTickArgs`) into a numba
StructRef with the same field names, :class:`FixedArgs`; it unboxes as one pointer whatever it
holds. The kernel takes it in place of them and reads each by name (``a.model``, ``a.data``:
native code, nothing unboxed; one reference count update per field read, not one per array
the pack holds); it is called through its :func:`~wbc_dynamics.kernels.linalg.bound_entry`.
Not through a jitted wrapper that unpacks and calls the unchanged kernel: numba links the
callee into the wrapper and generates its code once more (~10 s per tick kernel on a cold
start, ~24 s for the QP tick).

The arrays are held by reference (no copy): the kernels see in-place updates of them, as
before; a buffer *replaced* by a new array object needs a new pack.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import njit, typeof
from numba.core.extending import overload
from numba.experimental import structref

from .records import RecordType

__all__ = ["FixedArgs", "fixed_args", "pack_type"]


@structref.register
class FixedArgsType(RecordType):
    """numba type of a :class:`FixedArgs`: the fields of the NamedTuple it packs, in order."""


class FixedArgs(structref.StructRefProxy):
    """Python handle of packed fixed arguments; create it with :func:`fixed_args` (cached
    compiled constructor), read it only in jitted code."""


structref.define_boxing(FixedArgsType, FixedArgs)


def _pack(args):
    """Compiled only (:func:`_pack_overload`)."""
    raise NotImplementedError


@overload(_pack)
def _pack_overload(args):
    pack = FixedArgsType(list(zip(args.fields, args.types, strict=True)))
    # one assignment per field name, generated as numba generates its own StructRef
    # constructors (field names are compile-time constants)
    lines = ["def impl(args):", "    st = new(pack)"]
    lines += [f"    st.{name} = args.{name}" for name in args.fields]
    lines.append("    return st")
    scope = {"new": structref.new, "pack": pack}
    exec("\n".join(lines), scope)
    return scope["impl"]


@njit(cache=True)
def fixed_args(args):
    """Pack the NamedTuple ``args`` into a :class:`FixedArgs` with its field names (compiled
    and cached per argument type, unlike a StructRef built from Python, which compiles at
    every start)."""
    return _pack(args)


def pack_type(args: NamedTuple) -> FixedArgsType:
    """The numba type of ``fixed_args(args)`` without building it: a kernel taking the pack can
    be compiled by type (``dispatcher.compile``) before the pack's constructor is compiled (the
    compile helper compiles that meanwhile, docs/node.md start-up)."""
    fields = zip(args._fields, args, strict=True)
    return FixedArgsType([(name, typeof(value)) for name, value in fields])
