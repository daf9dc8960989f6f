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
Each NamedTuple that the kernels take gets a record type, declared with :class:`RecordType`
and bound to its NamedTuple's fields by :func:`define_record`, and a compiled, cached
constructor ``Proxy(*nt)``: the class decorator :func:`kernel_record` gives a NamedTuple all
three, :func:`record_of` builds an instance's record. Build the record once, where the
NamedTuple is built, and pass it -- not the NamedTuple -- to every kernel (general path and
ticks alike: one numba signature, compiled once).

A record that :func:`~wbc_dynamics.kernels.leaf.leaf_kernel` code reads (the robot model, read
by every recursion) is registered with :func:`register_leaf_readable` instead of
``structref.register``: numba's field read updates the field's reference count, which a kernel
compiled without reference counting cannot do (numba refuses to compile it). Such a kernel only
borrows what its caller keeps alive, so the read there is a plain load.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from numba import njit
from numba.core import cgutils, imputils, types
from numba.core.datamodel import default_manager, models
from numba.core.extending import infer_getattr, lower_getattr_generic, lower_setattr_generic
from numba.core.runtime.nrtdynmod import _meminfo_struct_type
from numba.core.typing.templates import AttributeTemplate
from numba.experimental import structref

__all__ = ["RecordType", "define_record", "kernel_record", "record_of", "register_leaf_readable"]


class RecordType(types.StructRef):
    """Base of the package's StructRef types (the records here, :mod:`.fixed_args`' pack,
    :mod:`.arena`'s arena): one numba type per field types, not per constant value."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


def _payload_without_nrt(context, builder, typ, val):
    """The record's fields (numba's ``_Utils.get_data_struct``) in code compiled without NRT:
    the data pointer is loaded from the MemInfo directly (its ``data`` member, what NRT's
    ``NRT_MemInfo_data_fast`` loads), as NRT's helpers are not available there."""
    ref = cgutils.create_struct_proxy(typ)(context, builder, value=val)
    info = builder.bitcast(ref.meminfo, _meminfo_struct_type.as_pointer())
    data_ptr = builder.load(cgutils.gep(builder, info, 0, 3))
    payload = typ.get_data_type()
    value_type = context.data_model_manager[payload].get_value_type()
    data_ptr = builder.bitcast(data_ptr, value_type.as_pointer())
    return cgutils.create_struct_proxy(payload)(context, builder, ref=data_ptr)


def register_leaf_readable(record_type: type) -> type:
    """``structref.register`` with field reads that count the reference in reference-counted
    code (as numba's) and are plain loads in a leaf kernel (see the module docstring); fields
    are set as numba sets them (the constructor). Use as a class decorator."""
    default_manager.register(record_type, models.StructRefModel)

    @infer_getattr
    class _FieldTypes(AttributeTemplate):
        key = record_type

        def generic_resolve(self, typ, attr):
            return typ.field_dict.get(attr)

    @lower_getattr_generic(record_type)
    def _read_field(context, builder, typ, val, attr):
        if context.enable_nrt:
            data = structref._Utils(context, builder, typ).get_data_struct(val)
        else:
            data = _payload_without_nrt(context, builder, typ, val)
        value = getattr(data, attr)
        field_type = typ.field_dict[attr]
        if context.enable_nrt:
            return imputils.impl_ret_borrowed(context, builder, field_type, value)
        return imputils.impl_ret_untracked(context, builder, field_type, value)

    @lower_setattr_generic(record_type)
    def _write_field(context, builder, sig, args, attr):
        record, value = args
        data = structref._Utils(context, builder, sig.args[0]).get_data_struct(record)
        field_type = sig.args[0].field_dict[attr]
        value = context.cast(builder, value, sig.args[1], field_type)
        old = getattr(data, attr)
        context.nrt.incref(builder, field_type, value)
        context.nrt.decref(builder, field_type, old)  # after the incref: value may be old
        setattr(data, attr, value)

    return record_type


def define_record(proxy: type, record_type: type, named_tuple: type) -> None:
    """Make ``proxy`` (a ``StructRefProxy`` subclass) the Python class of ``record_type`` (a
    registered :class:`RecordType`) with the fields of the NamedTuple class ``named_tuple``, in
    its order: the field list is the NamedTuple's, never written twice."""
    structref.define_proxy(proxy, record_type, list(named_tuple._fields))


def kernel_record(record_name: str) -> Callable[[type], type]:
    """Class decorator of a NamedTuple the kernels take: ``@kernel_record("StanceDataRecord")``
    on ``class StanceData(NamedTuple)`` declares its record --

    * ``StanceDataRecordType``: the record's numba type (a registered :class:`RecordType`),
    * ``StanceDataRecord``: its proxy class, bound to the NamedTuple's fields
      (:func:`define_record`),

    both defined in the NamedTuple's module under these names, and the compiled, cached
    constructor of a record (``StanceDataRecord(*nt)``; the proxy called from Python would
    compile its constructor at every start), a private attribute of the NamedTuple class that
    :func:`record_of` calls.

    The names are part of every cached kernel that takes the record: numba's cache pickles the
    types by module and name, and unpickles the whole index of a kernel before it checks that
    the index is still current -- a type renamed or gone makes the cache of every kernel that
    took it unreadable (an error, not a miss)."""

    def declare(named_tuple: type) -> type:
        module = named_tuple.__module__
        record_type = structref.register(type(record_name + "Type", (RecordType,), {
            "__module__": module, "__qualname__": record_name + "Type",
            "__doc__": f"numba type of ``{record_name}``."}))
        proxy = type(record_name, (structref.StructRefProxy,), {
            "__module__": module, "__qualname__": record_name,
            "__doc__": f"``{named_tuple.__name__}``'s fields as one pointer for the compiled "
                       "kernels (same names, the same arrays; ``wbc_dynamics.kernels.records``)."})
        define_record(proxy, record_type, named_tuple)
        namespace = sys.modules[module]
        setattr(namespace, record_type.__qualname__, record_type)
        setattr(namespace, proxy.__qualname__, proxy)

        def new_record(nt):
            return proxy(*nt)

        # named as bound: numba's cache keeps one index per qualified name (each record's
        # constructor its own file)
        new_record.__qualname__ = named_tuple.__qualname__ + "._new_record"
        new_record.__module__ = module
        named_tuple._new_record = njit(cache=True)(new_record)
        return named_tuple

    return declare


def record_of(data: tuple) -> structref.StructRefProxy:
    """The record of ``data``, an instance of a NamedTuple class decorated with
    :func:`kernel_record`: one pointer to the same arrays (no copy), what the kernels take."""
    return type(data)._new_record(data)
