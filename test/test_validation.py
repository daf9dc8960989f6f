"""``require_positive``: the one check of the noise settings' standard deviations (finite, > 0)."""

from __future__ import annotations

import math

import pytest

from wbc_dynamics.contact.stance import SensingNoise
from wbc_dynamics.estimator import EstimatorNoise
from wbc_dynamics.validation import require_positive


def test_accepts_finite_positive_ints_and_floats():
    require_positive((("a", 1), ("b", 1e-300), ("c", 2.5)))
    assert EstimatorNoise().gyro == 0.002
    assert SensingNoise().base_orientation == math.radians(0.5)


@pytest.mark.parametrize("bad", [0.0, -1e-3, math.nan, math.inf, -math.inf, "1", None])
def test_names_the_first_bad_value(bad):
    with pytest.raises(ValueError, match=r"^w\.b: must be finite and > 0, got ") as err:
        require_positive((("a", 1.0), ("b", bad), ("c", bad)), "w.{}")
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize(("make", "name"), [
    (lambda: EstimatorNoise(gyro=math.nan), "EstimatorNoise.gyro"),
    (lambda: EstimatorNoise(swing_drift=0.0), "EstimatorNoise.swing_drift"),
    (lambda: SensingNoise(base_linear_velocity=-0.05), "sensing_base_linear_velocity_noise"),
])
def test_noise_settings_name_the_field(make, name):
    with pytest.raises(ValueError, match=rf"^{name}: must be finite and > 0"):
        make()
