"""Random states of a :class:`~wbc_dynamics.RobotModel` and synthetic robots, shared by the core's
tests and benchmarks."""

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


def chain_urdf(n: int) -> str:
    """A serial chain of ``n`` revolute joints and ``n + 1`` unit-mass links (URDF text)."""
    links = "".join(
        f'<link name="l{i}"><inertial><origin xyz="0 0 0.05"/><mass value="1"/>'
        '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        for i in range(n + 1)
    )
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        '<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for i in range(n)
    )
    return f'<robot name="chain">{links}{joints}</robot>'
