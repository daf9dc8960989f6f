"""Contact forces from the measured motion and the commanded torques: a generalized momentum
observer.

The observer of De Luca & Mattone ("Sensorless Robot Collision Detection and Hybrid
Force/Motion Control", ICRA 2005) and Haddadin, De Luca & Albu-Schaeffer ("Robot Collisions: A
Survey on Detection, Isolation, and Identification", IEEE T-RO 2017, the momentum observer),

    r = K_O (M(q) v - integral(tau + C^T(q, v) v - g(q) + r) dt - M(q_0) v_0),

estimates the external generalized force ``tau_ext`` (here: the contact forces, ``J^T f``)
without accelerations: ``dr/dt = K_O (tau_ext - r)``, a first-order lag of time constant
``1 / K_O``. Sampled at the control period ``dt`` with ``Mdot dt = M_k - M_(k-1)`` (and
``C + C^T = Mdot``), the momentum difference left after the ``Mdot v`` term is
``M (v_k - v_(k-1))``, so one tick is

    r_k = (1 - K_O dt) r_(k-1) + K_O dt (M(q_k) (v_k - v_(k-1)) / dt + h(q_k, v_k) - tau_(k-1)),

``h = C v + g``: one recursive Newton-Euler evaluation at the measured state with the velocity
difference as acceleration, and the torque commanded on the previous tick (the one the drives
are applying). With white velocity noise of covariance ``Sigma_v`` the estimate's noise is
``K_O^2 kappa M Sigma_v M`` with ``kappa = 1 + a / (2 - a)``, ``a = K_O dt`` (the noise enters
through the momentum ``M v``; the lag's geometric sum adds ``kappa - 1``): a larger gain follows
a touch-down faster and is noisier in proportion.

Per contact link, the contact force ``f`` (world axes, on the robot) is the least-squares
solution of ``J_leg^T f = r_leg`` over the joints between the floating base (or the fixed
root) and the link, ``J_leg`` the point Jacobian (3, n_leg) of the link's first contact
sphere's centre over those joints: the joint rows of ``r`` only, the base rows carry every
contact's share and the base-velocity noise. Its normal component (world ``z``: the ground and
flat obstacles) has the predicted standard deviation ``force_std`` from the noise above, which
the :class:`~wbc_dynamics.contact.stance.StanceFilter` uses as its evidence gate.

Everything per tick is one compiled, allocation-free call (:func:`momentum_observer_kernel`)
on named buffers (:class:`MomentumObserverData`, as one record).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numba import njit

from ..kernels.dynamics import OK, ModelRecord
from ..kernels.kinematics import point_jacobian_filled
from ..kernels.records import kernel_record, record_of
from ..kernels.world import crba, rnea, workspace

if TYPE_CHECKING:
    from .geometry import ContactModel

__all__ = ["MomentumObserver", "MomentumObserverData", "momentum_observer_kernel"]

#: least-squares damping of ``J_leg J_leg^T`` relative to its mean diagonal (a stretched leg's
#: unobservable direction gets a bounded estimate, and a large ``force_std``)
LEG_DAMPING = 1e-6


@kernel_record("MomentumObserverRecord")
class MomentumObserverData(NamedTuple):
    """The observer's configuration, model, state and workspace (one record per controller).

    Configuration: ``gain`` K_O [1/s]; ``dt`` [s] the control period; ``link_body`` (L,)
    int64 body index of each contact link's point; ``link_point`` (L, 3) [m] that point in the
    body frame; ``leg_dofs`` (L, D) int64 v indices of the joints between the base and the link
    (-1 padded), ``leg_count`` (L,) int64 how many; ``tau_index`` (n,) int64 the v index of
    each commanded torque; ``velocity_variance`` (nv,) [(m/s)^2, (rad/s)^2] of the measured
    velocity (base linear, base angular in the base frame, joints).
    Model (read only): ``model`` the robot model's
    :class:`~wbc_dynamics.kernels.dynamics.ModelRecord` (its own arrays, gravity included).

    State: ``initialized`` (1,) bool; ``v_prev`` (nv,) the previous tick's velocity;
    ``residual`` (nv,) r, the estimated external generalized force [N, N m] (the model's v
    order; a floating base's rows in the base frame); ``force`` (L, 3) [N] the estimated
    contact force on each link, world axes; ``normal_force`` (L,) [N] its world ``z``
    component; ``force_std`` (L,) [N] the predicted standard deviation of ``normal_force``
    (inf: not observable).

    Workspace: ``accel`` (nv,), ``tau_id`` (nv,), ``mass`` (nv, nv), ``fext`` (nb, 6), ``W``,
    ``SC`` (the recursions' workspace), ``jac`` (6, nv), ``point`` (3,), ``normal_eq`` (3, 3),
    ``rhs`` (3,), ``gz`` (D,), ``rot`` (3, 3) identity.
    """

    gain: float
    dt: float
    link_body: np.ndarray
    link_point: np.ndarray
    leg_dofs: np.ndarray
    leg_count: np.ndarray
    tau_index: np.ndarray
    velocity_variance: np.ndarray
    model: ModelRecord
    initialized: np.ndarray
    v_prev: np.ndarray
    residual: np.ndarray
    force: np.ndarray
    normal_force: np.ndarray
    force_std: np.ndarray
    accel: np.ndarray
    tau_id: np.ndarray
    mass: np.ndarray
    fext: np.ndarray
    W: Any  # the recursions' data: a kernels.world.RigidBodyRecord
    SC: np.ndarray
    jac: np.ndarray
    point: np.ndarray
    normal_eq: np.ndarray
    rhs: np.ndarray
    gz: np.ndarray
    rot: np.ndarray


@njit(cache=True)
def _solve3(A, b):
    """``b <- A^-1 b`` for the symmetric positive definite (3, 3) ``A`` (Cramer's rule on the
    damped normal equations: always well posed). Returns False if ``A`` is singular."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    if not (abs(det) > 0.0):
        return False
    c10 = A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]
    c11 = A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]
    c12 = A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]
    c20 = A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]
    c21 = A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]
    c22 = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    b0, b1, b2 = b[0], b[1], b[2]
    b[0] = (c00 * b0 + c10 * b1 + c20 * b2) / det
    b[1] = (c01 * b0 + c11 * b1 + c21 * b2) / det
    b[2] = (c02 * b0 + c12 * b1 + c22 * b2) / det
    return True


@njit(cache=True)
def momentum_observer_kernel(o, q, v, tau):
    """One observer tick (module docstring) at the measured ``q`` (nq,), ``v`` (nv,) with the
    torques ``tau`` (n,) commanded on the previous tick (placed at ``o.tau_index``; other rows
    0). Writes ``o.residual``, ``o.force``, ``o.normal_force``, ``o.force_std``. The first call
    only starts the observer (r = 0). Returns 0 or the recursions' status for a bad state."""
    nv = v.shape[0]
    L = o.link_body.shape[0]
    if not o.initialized[0]:
        for c in range(nv):
            o.v_prev[c] = v[c]
            o.residual[c] = 0.0
        for li in range(L):
            o.normal_force[li] = 0.0
            o.force_std[li] = np.inf
            for a in range(3):
                o.force[li, a] = 0.0
        o.initialized[0] = True
        return OK
    dt = o.dt
    alpha = min(o.gain * dt, 1.0)
    for c in range(nv):
        o.accel[c] = (v[c] - o.v_prev[c]) / dt
    # np.bool_: typed flags, not literals -- a literal would compile a second rnea
    st = rnea(q, v, o.accel, o.fext, np.bool_(False), np.bool_(True), o.tau_id, o.model, o.W,
              o.SC)
    if st != OK:
        return st
    for i in range(tau.shape[0]):
        o.tau_id[o.tau_index[i]] -= tau[i]
    for c in range(nv):
        o.residual[c] += alpha * (o.tau_id[c] - o.residual[c])
        o.v_prev[c] = v[c]
    st = crba(q, o.mass, o.model, o.W, o.SC)  # also the world poses (o.W.pose)
    if st != OK:
        return st
    Rw = o.W.pose[:, 0:3]
    pw = o.W.pose[:, 3]
    kappa = 1.0 + alpha / (2.0 - alpha)
    scale = o.gain * o.gain * kappa
    for li in range(L):
        _link_force(o, li, Rw, pw, nv, scale)
    return OK


@njit(cache=True)
def _link_force(o, li, Rw, pw, nv, scale):
    """Link ``li``'s force from its leg's residual rows (least squares through the point
    Jacobian) and the standard deviation of its normal component."""
    point_jacobian_filled(o.model, Rw, pw, o.link_body[li], o.link_point[li], o.rot,
                          False, o.point, o.jac)
    n = o.leg_count[li]
    A, b = o.normal_eq, o.rhs
    tr = 0.0
    for a in range(3):
        s = 0.0
        for k in range(n):
            s += o.jac[a, o.leg_dofs[li, k]] * o.residual[o.leg_dofs[li, k]]
        b[a] = s
        for c in range(3):
            s = 0.0
            for k in range(n):
                j = o.leg_dofs[li, k]
                s += o.jac[a, j] * o.jac[c, j]
            A[a, c] = s
        tr += A[a, a]
    lam = LEG_DAMPING * tr / 3.0 + 1e-12
    for a in range(3):
        A[a, a] += lam
    if n == 0 or not _solve3(A, b):
        o.normal_force[li] = 0.0
        o.force_std[li] = np.inf
        for a in range(3):
            o.force[li, a] = 0.0
        return
    for a in range(3):
        o.force[li, a] = b[a]
    o.normal_force[li] = b[2]
    # f_z = gz . r_leg with gz = J_leg^T A^-1 e_z; var = scale * sum_c var_v[c] (gz . M[leg, c])^2
    b[0], b[1], b[2] = 0.0, 0.0, 1.0
    _solve3(A, b)
    for k in range(n):
        j = o.leg_dofs[li, k]
        o.gz[k] = o.jac[0, j] * b[0] + o.jac[1, j] * b[1] + o.jac[2, j] * b[2]
    var = 0.0
    for c in range(nv):
        s = 0.0
        for k in range(n):
            s += o.gz[k] * o.mass[o.leg_dofs[li, k], c]
        var += o.velocity_variance[c] * s * s
    o.force_std[li] = math.sqrt(scale * var)


class MomentumObserver:
    """The contact forces of a robot's contact links from its measured motion and commanded
    torques (module docstring).

    Args:
        contact_model: the controller's :class:`~wbc_dynamics.contact.geometry.ContactModel`
            (its contact links, in its order; each link's first contact sphere is its point).
        gain: K_O [1/s], > 0: the bandwidth of the estimate (time constant ``1 / gain``).
        velocity_std: (nv,) [m/s, rad/s] standard deviation of the measured velocity (model
            v order: base linear, base angular in the base frame, joints).
        tau_index: (n,) the model v index of each commanded torque (the controller's
            configured joint order).
    """

    def __init__(self, contact_model: ContactModel, gain: float, velocity_std: np.ndarray,
                 tau_index: np.ndarray) -> None:
        if not (math.isfinite(gain) and gain > 0.0):
            raise ValueError(f"contact_force_observer_gain: must be finite and > 0 1/s, "
                             f"got {gain!r}")
        cm = contact_model
        robot = cm.robot
        arrays = robot.model_arrays
        nv = int(robot.nv)
        std = np.asarray(velocity_std, dtype=np.float64)
        if std.shape != (nv,) or not np.all(np.isfinite(std)) or np.any(std < 0.0):
            raise ValueError(f"velocity_std: expected {nv} finite values >= 0")
        tau_index = np.asarray(tau_index, dtype=np.int64)
        if tau_index.ndim != 1 or np.any((tau_index < 0) | (tau_index >= nv)):
            raise ValueError("tau_index: v indices of the commanded torques expected")
        self.links: list[str] = list(dict.fromkeys(sid[0] for sid in cm.sphere_ids))
        first = {}
        for s, sid in enumerate(cm.sphere_ids):
            first.setdefault(sid[0], s)
        g = cm.geometry
        body = np.array([int(g.sph_body[first[ln]]) for ln in self.links], dtype=np.int64)
        root_v = 6 if robot.floating_base else 0
        legs = []
        for b in body:
            dofs = []
            j = int(b)
            while j >= 0:
                iv, nvi = int(arrays.v_index[j]), int(arrays.joint_nv[j])
                dofs.extend(c for c in range(iv, iv + nvi) if c >= root_v)
                j = int(arrays.parent[j])
            legs.append(sorted(dofs))
        D = max(1, max((len(d) for d in legs), default=1))
        leg_dofs = np.full((len(legs), D), -1, dtype=np.int64)
        for i, d in enumerate(legs):
            leg_dofs[i, :len(d)] = d
        L = len(self.links)
        nb = arrays.parent.shape[0]
        W, SC = workspace(nb)
        self.data = MomentumObserverData(
            gain=float(gain), dt=float(cm.dt), link_body=body,
            link_point=np.array([g.sph_r[first[ln]] for ln in self.links], dtype=np.float64
                                ).reshape(L, 3),
            leg_dofs=leg_dofs, leg_count=np.array([len(d) for d in legs], dtype=np.int64),
            tau_index=tau_index, velocity_variance=std ** 2, model=robot.kernel_model,
            initialized=np.zeros(1, dtype=np.bool_), v_prev=np.zeros(nv),
            residual=np.zeros(nv), force=np.zeros((L, 3)), normal_force=np.zeros(L),
            force_std=np.full(L, np.inf), accel=np.zeros(nv), tau_id=np.zeros(nv),
            mass=np.zeros((nv, nv)), fext=np.zeros((nb, 6)), W=W, SC=SC,
            jac=np.zeros((6, nv)), point=np.zeros(3), normal_eq=np.zeros((3, 3)),
            rhs=np.zeros(3), gz=np.zeros(D), rot=np.eye(3),
        )
        #: the same arrays as one pointer, what the kernel takes
        self._record = record_of(self.data)

    def update(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> None:
        """One tick at the measured ``q`` (nq,), ``v`` (nv,) (model conventions, float64,
        contiguous, finite) with ``tau`` (n,) [N m or N] the torques the drives apply for the
        previous tick's command (``tau_index`` order). Raises ValueError for a state the
        recursions refuse."""
        st = momentum_observer_kernel(self._record, q, v, tau)
        if st != OK:
            raise ValueError(f"momentum observer: invalid state (status {st})")

    def reset(self) -> None:
        """Restart: the next :meth:`update` starts from r = 0 at its state."""
        self.data.initialized[0] = False

    @property
    def normal_forces(self) -> dict[str, float]:
        """The estimated normal (world z) force on each contact link [N]."""
        return {ln: float(x) for ln, x in zip(self.links, self.data.normal_force, strict=True)}
