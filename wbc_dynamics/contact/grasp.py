"""Grasps: the internal (squeeze) forces rigid contact leaves indeterminate (Zapolsky & Drumwright,
Fig. 11, Sec. 7.2.2), as a controller option (``grasp_force``) and for the in-process arm + box
loop.

Contacts between the robot's links and a free object
(:class:`~wbc_dynamics.contact.geometry.FreeBody`) enter the problem as rows on the object's
six free-body columns (Sec. 1.5). Any set
of contact forces in the null space of the object's rows (zero net wrench on the object)
produces the same motion, so every solver returns the minimum-norm / vertex member of that set
-- (almost) no squeeze, and an object held by friction slips out on a compliant plant.
:func:`internal_grasp_forces` picks the squeeze; the motors add :func:`internal_force_torques`.
"""

from __future__ import annotations

import numpy as np

from .problem import ContactProblem

__all__ = ["GRASP_SOLVER_OPTIONS", "internal_force_torques", "internal_grasp_forces"]

#: Contact solver options for problems with a grasped free object (the controller with
#: ``object_urdf``, the in-process arm + box loop): the QP methods keep OSQP. With the exact
#: active-set solver the held arm + box grasp's Stage I is infeasible on some ticks (the
#: prescribed finger motion cannot be followed within friction; such a tick goes to OSQP
#: anyway) and the box slipped 3.2 cm in 3 s at high friction (OSQP: 1.2 cm).
GRASP_SOLVER_OPTIONS = {"qp_coulomb": {"qp_solver": "osqp"}, "qp_noslip": {"qp_solver": "osqp"}}


def internal_grasp_forces(
    prob: ContactProblem, squeeze: float, phi_max: float = 1e-3,
) -> np.ndarray | None:
    """Desired internal (squeeze) forces of a grasp, local (n, s, t) per contact [N].

    Rigid contact leaves the internal forces of a grasp indeterminate: any set of fingertip
    forces in the null space of the grasp map (zero net wrench on the object) produces the same
    motion, and the contact solvers return the minimum-norm / vertex member of that set, which
    for a box held by friction is (almost) zero squeeze (Zapolsky & Drumwright, Fig. 11: ID(t_i)
    estimates the contact forces "given contact state and internal forces"; Sec. 7.2.2: the fingers
    are commanded to close on the object). This picks the internal forces closest (Euclidean) to
    ``squeeze`` [N] along the inward normal of every touching contact with an object (``phi <=
    phi_max`` [m], rows with free-body columns): ``f0 = squeeze * e_n``,
    ``f = f0 - A^T (A A^T)^+ A f0`` with ``A`` (6k x 3nc) the free-body columns of
    ``[N; S; T]^T``, i.e. the object's generalized force
    ``A f`` is exactly zero and the object's predicted motion is unchanged.

    Returns None if no internal force with positive normal components exists (e.g. a single
    touching fingertip, or fingertips that cannot oppose each other).
    """
    nc = prob.nc
    if prob.free.size == 0:
        return None
    # contacts with an object: rows with free-body columns (a foot on the ground has none there)
    on_object = np.abs(np.asarray(prob.N)[:, prob.free]).sum(axis=1) > 0.0
    touching = (np.asarray(prob.phi) <= phi_max) & on_object
    if np.count_nonzero(touching) < 2:
        return None
    G = np.stack([prob.N, prob.S, prob.T], axis=2)  # (nc, nv, 3): generalized wrench per unit f
    A = G[:, prob.free, :].transpose(1, 0, 2).reshape(prob.free.size, 3 * nc)
    f0 = np.zeros((nc, 3))
    f0[touching, 0] = squeeze
    f0 = f0.reshape(-1)
    f = f0 - A.T @ (np.linalg.pinv(A @ A.T, rcond=1e-10) @ (A @ f0))
    f = f.reshape(nc, 3)
    if np.any(f[touching, 0] <= 0.0) or not np.all(np.isfinite(f)):
        return None
    f[~touching] = 0.0
    return f


def internal_force_torques(prob: ContactProblem, f_local: np.ndarray) -> np.ndarray:
    """Generalized force ``(N^T f_n + S^T f_s + T^T f_t)[actuated]`` of contact forces ``f_local``
    (nc, 3) [N] acting on the robot links; the motors add its negative (eq. (37):
    ``B tau = M qdd + h - J^T f``)."""
    g = prob.N.T @ f_local[:, 0] + prob.S.T @ f_local[:, 1] + prob.T.T @ f_local[:, 2]
    return g[prob.actuated]
