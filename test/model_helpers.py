"""Random states of a :class:`~wbc_dynamics.RobotModel` shared by the core's tests."""

from __future__ import annotations

import numpy as np


def random_configuration(model, rng: np.random.Generator, lo: np.ndarray,
                         hi: np.ndarray) -> np.ndarray:
    """A random configuration: a floating base at a standard normal position with a random
    orientation (a normalized standard normal quaternion), the joints uniform in [lo, hi]."""
    q = model.neutral()
    off = 7 if model.floating_base else 0
    if model.floating_base:
        q[:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
    q[off:] = rng.uniform(lo, hi)
    return q
