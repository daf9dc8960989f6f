"""Named buffers of the compiled kernels as one pointer: a NamedTuple's fields in a numba StructRef.

The contact kernels share their buffers through NamedTuples (:class:`~wbc_dynamics.contact.
geometry.ContactData`, :class:`~wbc_dynamics.contact.qp_tick.QPWork`): one name per field, as
Pinocchio's ``Data`` has. Python reads them as NamedTuples. Compiled code, however, holds a
NamedTuple *by value*: every call that takes one, and every read of one out of the tick's
packed arguments (:mod:`.fixed_args`), updates the reference count of each of its arrays --
two atomic operations per array, ~130 arrays for ``ContactData`` + ``QPWork``. Measured on the
quadruped's ``qp_coulomb`` tick (perf, JIT symbols): ``NRT_incref`` + ``NRT_decref`` were 15 %
of the tick.

A *record* is a StructRef with the same field names holding the same arrays (no copy): the
kernels read ``d.N`` exactly as before, but the record itself is one reference-counted pointer.
Each NamedTuple that the kernels take gets a record type next to it, declared with
:class:`RecordType` and bound to its NamedTuple's fields by :func:`define_record`, and a
compiled, cached constructor ``record_of(nt)`` (``Proxy(*nt)``). Build the record once, where
the NamedTuple is built, and pass it -- not the NamedTuple -- to every kernel (general path and
ticks alike: one numba signature, compiled once).
"""

from __future__ import annotations

from numba import types
from numba.experimental import structref

__all__ = ["RecordType", "define_record"]


class RecordType(types.StructRef):
    """Base of the package's StructRef types (the records here, :mod:`.fixed_args`' pack,
    :mod:`.arena`'s arena): one numba type per field types, not per constant value."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


def define_record(proxy: type, record_type: type, named_tuple: type) -> None:
    """Make ``proxy`` (a ``StructRefProxy`` subclass) the Python class of ``record_type`` (a
    registered :class:`RecordType`) with the fields of the NamedTuple class ``named_tuple``, in
    its order: the field list is the NamedTuple's, never written twice."""
    structref.define_proxy(proxy, record_type, list(named_tuple._fields))
