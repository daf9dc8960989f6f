"""Inputs shared by the estimator tests (test_estimator.py, test_invariant_ekf.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def random_quadruped_ticks(rng: np.random.Generator, q: np.ndarray,
                           n: int = 200) -> Iterator[tuple]:
    """``n`` ticks of random estimator inputs of the quadruped about its configuration ``q``:
    (stance (4,) bool, joint positions, joint velocities [rad/s], gyro [rad/s], specific force
    [m/s^2]). All feet down for the first 10 of every 50 ticks, else each down with probability
    0.7 (feet lifting and touching down); the rest perturbed about ``q``, rest and gravity.
    Drawn from ``rng`` tick by tick, in this order: what a caller draws in its loop body comes
    after a tick's draws."""
    for k in range(n):
        stance = np.ones(4, dtype=bool) if k % 50 < 10 else rng.random(4) < 0.7
        qj = q[7:] + 0.05 * rng.standard_normal(12)
        qdj = 0.5 * rng.standard_normal(12)
        gyro = 0.3 * rng.standard_normal(3)
        accel = np.array([0.0, 0.0, 9.81]) + rng.standard_normal(3)
        yield stance, qj, qdj, gyro, accel
