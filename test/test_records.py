"""The records of the kernels' NamedTuples (``wbc_dynamics.kernels.records.kernel_record``):
numba's cache pickles the record types by module and name (and keys each constructor's cache
file on its qualified name), so each must be found again under its own -- the name the caches
of the kernels that take it were written with. The kernels' own tests run the records."""

import importlib
import pickle

import pytest

#: (module, NamedTuple, its record's name) of every NamedTuple declared with kernel_record
RECORDS = [
    ("wbc_dynamics.contact.stance", "StanceData", "StanceDataRecord"),
    ("wbc_dynamics.contact.momentum_observer", "MomentumObserverData", "MomentumObserverRecord"),
    ("wbc_dynamics.estimator", "EstimatorData", "EstimatorDataRecord"),
    ("wbc_dynamics.gait", "WalkerData", "WalkerDataRecord"),
    ("wbc_dynamics.invariant_ekf", "InvariantEKFData", "InvariantEKFDataRecord"),
    ("wbc_dynamics.tasks", "TaskData", "TaskDataRecord"),
]


@pytest.mark.parametrize(("module_name", "data_name", "record_name"), RECORDS)
def test_records_are_found_by_module_and_name(module_name, data_name, record_name):
    module = importlib.import_module(module_name)
    for name in (record_name, record_name + "Type"):
        cls = getattr(module, name)
        assert (cls.__module__, cls.__qualname__) == (module_name, name)
        assert pickle.loads(pickle.dumps(cls)) is cls
    constructor = getattr(module, data_name)._new_record
    assert (constructor.__module__, constructor.__qualname__) == (
        module_name, f"{data_name}._new_record")
