"""Checks of user-facing scalar settings shared by the configuration classes.

A setting that fails raises ValueError naming it, so that bad input never reaches a compiled
kernel (where a zero or NaN standard deviation would turn into NaN gains and torques).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["require_positive"]


def require_positive(values: Iterable[tuple[str, object]], label: str = "{}") -> None:
    """Raise ValueError unless every value is a finite real number > 0 (in the value's unit).

    Args:
        values: ``(name, value)`` pairs, checked in order; e.g. ``vars(obj).items()`` for the
            fields of a dataclass.
        label: how a name appears in the message, ``label.format(name)`` (e.g.
            ``"sensing_{}_noise"`` names the parameter a field comes from).

    Raises:
        ValueError: ``"<label>: must be finite and > 0, got <value>"`` for the first value that
            is not an ``int`` or ``float``, is not finite, or is <= 0.
    """
    for name, x in values:
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0.0):
            raise ValueError(f"{label.format(name)}: must be finite and > 0, got {x!r}")
