"""Analytical derivatives of the (extended) inverse dynamics and the inertia-weighted input matrix.

Compiled kernels over the robot model of :mod:`.dynamics` (``model``, a ``ModelRecord``) and
the world-frame quantities of :mod:`.world` (``data``, a :class:`.world.RigidBodyRecord`: poses,
world motion subspaces, world body inertias) and the composites of the derivatives
(``composites``, a :class:`CompositeRecord`). Nothing here allocates.

Derivatives of inverse dynamics (Saccon et al., Tables 5-8)
-----------------------------------------------------------
The extended inverse dynamics of a moving-base robot (EIDAmb, Saccon et al., Table 4; the core's
``rnea``) maps (H, s, v, r, accelerations) to [base wrench; joint torques]. Saccon et al. derive its
derivatives with respect to the base pose H (left-trivialized, Table 5), the joint positions s
(Table 6), the base twist v (Table 7) and the joint velocities r (Table 8) by differentiating
every line of the body-frame recursion. We compute the *same* derivatives with a world-frame
recursion (all quantities at the world origin, as the core's CRBA/ABA/M^-1 do), in which the
base is simply the first, 6-DoF joint with motion subspace S_0 = X_{0,base} (the identity in the
base frame). A left-trivialized perturbation H exp(delta) of the base, or a perturbation of a
joint angle, moves the whole subtree of that joint rigidly by the world twist S_k delta, so
every column k of the derivatives follows from composite (subtree-summed) quantities:

* per body (world frame): v_i, a_i (a of the world = -g), inertia I_i, momentum h_i = I_i v_i,
  force f_i = I_i a_i + v_i x* h_i (Table 4 lines 16-21),
* B_i w = I_i (w x v_i) + w x* h_i + v_i x* (I_i w) (the variation of f_i when the velocity
  twist is rotated, a 6x6 matrix),
* composites Ic_j, Bc_j, F_j = sums over the subtree of j (Table 4 lines 24-28).

With p = parent of the body carrying column k, w_k = S_k x v_p, beta_k = S_k x a_p - w_k x v_p:

    d tau_j / d q_k = -S_j^T (Ic_j beta_k + Bc_j w_k)                    j in subtree(k)
    d tau_j / d q_k =  S_j^T (S_k x* F_k - Ic_k beta_k - Bc_k w_k)       j strict ancestor of k
    d tau_j / d v_k =  S_j^T (Bc_l S_k + Ic_l u_k),  u_k = (v_k + v_p) x S_k,
                       l = j for j in subtree(k), l = k for a strict ancestor

(the ``dS_j^T F_j`` term of Table 6 line 34 cancels against ``S_k x* F_j`` inside the
subtree). Columns of the base (k in 0..5) give Table 5 (H) and Table 7 (v); joint columns give
Tables 6 and 8; rows 0..5 are the base-wrench rows tau_b. With respect to the accelerations the
derivative is M (CRBA, filled in the same pass). A fixed-base robot runs through the same code
without a base block. The configuration tangent is [delta H (6, body-frame twist, linear first,
as v), delta s], the same as Pinocchio's for its free-flyer joint.

Inertia-weighted input matrix (Krög et al., eqs. (8)-(9))
---------------------------------------------------------
:func:`iwim` returns M^-1 B without M^-1: the articulated inertias of ABA (``U = IA S``,
``D = S^T U``) give B* (the inward recursion of the input wrenches, eq. (5) with h_i = -B_i u)
and then the accelerations solve Gamma qdd_u = diag(D^-1) u* with the unit lower-triangular
Gamma_ij = D_i^-1 U_i^T S_j (j ancestor of i) of eq. (8): by forward substitution down the tree
(the outward recursion of eq. (7)), never inverting Gamma.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref

from .dynamics import (
    BAD_A,
    OK,
    SINGULAR,
    check_configuration,
    check_state,
    joint_motion,
)
from .leaf import leaf_kernel
from .records import RecordType, define_record, register_leaf_readable
from .spatial import cross_force, cross_motion, set6
from .world import (
    SC_DERIVATIVE_WORK,
    SC_INNER_WORK,
    SC_KERNEL_WORK,
    _add_articulated_to_parent,
    _backward_joint,
    _copy6,
    aba,
    body_velocity,
    joint_indices,
    kinematics_into,
    minverse,
    world_quantities,
)


class CompositeData(NamedTuple):
    """The per-body quantities of :func:`rnea_derivatives` (see the module docstring), one array
    per quantity, indexed by body (``nb`` bodies, the model's depth-first order). All at the
    world origin in world axes, spatial vectors [linear; angular]; composites are sums over the
    body's subtree. Rewritten by every call.
    """

    #: (nb, 6) float64: body velocity v_i [m/s; rad/s].
    velocity: np.ndarray
    #: (nb, 6) float64: body acceleration a_i, the world's being -g [m/s^2; rad/s^2].
    acceleration: np.ndarray
    #: (nb, 6) float64: body momentum h_i = I_i v_i [N s; N m s].
    momentum: np.ndarray
    #: (nb, 6) float64: the body force f_i = I_i a_i + v_i x* h_i, then (backward pass) the
    #: composite force F_i [N; N m].
    composite_force: np.ndarray
    #: (nb, 6, 6) float64: composite inertia Ic_i [kg, kg m, kg m^2].
    composite_inertia: np.ndarray
    #: (nb, 6, 6) float64: composite Bc_i of B_i w = I_i (w x v_i) + w x* h_i + v_i x* (I_i w),
    #: the variation of the body force when its velocity twist is rotated by w (units of I_i
    #: times a velocity).
    composite_twist_variation: np.ndarray
    #: (nb, 6, 6) float64: (Ic_i S_i)^T: row k is column k of Ic_i S_i (first nvi rows).
    composite_inertia_times_subspace: np.ndarray
    #: (nb, 6, 6) float64: (Bc_i^T S_i)^T: row k is column k of Bc_i^T S_i (first nvi rows).
    composite_variation_times_subspace: np.ndarray


@register_leaf_readable
class CompositeRecordType(RecordType):
    """numba type of :class:`CompositeRecord`."""


class CompositeRecord(structref.StructRefProxy):
    """The :class:`CompositeData` as one pointer (same arrays, no copy; see
    ``wbc_dynamics.kernels.records``): what the derivative kernels take as ``composites``.
    Build it with :func:`composite_record`."""


define_record(CompositeRecord, CompositeRecordType, CompositeData)


@njit(cache=True)
def composite_record(c):
    """The :class:`CompositeRecord` of the :class:`CompositeData` ``c`` (compiled, cached)."""
    return CompositeRecord(*c)


def composite_data(nb: int) -> CompositeData:
    """A zeroed :class:`CompositeData` for a model with ``nb`` bodies."""
    vectors = [np.zeros((nb, 6)) for _ in range(4)]
    matrices = [np.zeros((nb, 6, 6)) for _ in range(4)]
    return CompositeData(*vectors, *matrices)


@njit(cache=True, error_model="numpy", inline="always")
def _set_negative_skew(A, r, c, x0, x1, x2):
    """``A[r:r+3, c:c+3] = -[x]`` (-[x] y = y x x) off the block's diagonal, which is left as it
    is (zero in -[x])."""
    A[r, c + 1] = x2
    A[r, c + 2] = -x1
    A[r + 1, c] = -x2
    A[r + 1, c + 2] = x0
    A[r + 2, c] = x1
    A[r + 2, c + 1] = -x0


@njit(cache=True, error_model="numpy", inline="always")
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True, error_model="numpy", inline="always")
def _col_dot(A, c, b):
    """sum_r A[r, c] b[r]."""
    return (
        A[0, c] * b[0]
        + A[1, c] * b[1]
        + A[2, c] * b[2]
        + A[3, c] * b[3]
        + A[4, c] * b[4]
        + A[5, c] * b[5]
    )


@leaf_kernel(error_model="numpy")
def _forward_and_composites(q, v, a, use_gravity, model, data, composites, SC):
    """World-frame RNEA quantities (Saccon et al., Table 4, lines 12-28) and the
    composites Ic, Bc, F.

    Needs world poses, world S and world inertias in ``data`` (``pose``, ``motion_subspace``,
    ``body_inertia``). Fills ``composites``.
    """
    nb = model.parent.shape[0]
    acceleration, composite_force = composites.acceleration, composites.composite_force
    inertia, twist_variation = composites.composite_inertia, composites.composite_twist_variation
    t1 = SC[SC_KERNEL_WORK, 0]
    t2 = SC[SC_KERNEL_WORK, 1]
    t3 = SC[SC_KERNEL_WORK, 2]
    for i in range(nb):
        par, iv, nvi = joint_indices(model, i)
        Sw = data.motion_subspace[i]
        I = data.body_inertia[i]
        joint_motion(Sw, nvi, iv, v, a, t1, t2)  # v_J = S qd, S qdd
        vel = body_velocity(composites.velocity, i, par, t1)
        acc = acceleration[i]
        if par < 0:
            for r in range(6):
                acc[r] = t2[r]
            if use_gravity:
                for r in range(3):
                    acc[r] -= model.gravity[r]
        else:
            set6(t3, cross_motion(vel, t1))
            for r in range(6):
                acc[r] = acceleration[par, r] + t2[r] + t3[r]
        h = composites.momentum[i]
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += I[r, c] * vel[c]
            h[r] = s
        # f = I a + v x* h, the composite force starts from it
        F = composite_force[i]
        set6(F, cross_force(vel, h))
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += I[r, c] * acc[c]
            F[r] += s
        _copy6(I, inertia[i])
        # B w = I (w x v) + w x* h + v x* (I w) = (C + C^T + Hbar) w with C = v x* I (I is
        # symmetric and v x* = -(v x)^T) and Hbar w = w x* h = [-[h_l] w_a; -[h_l] w_l - [h_a] w_a]
        Bc = twist_variation[i]
        hl0, hl1, hl2, ha0, ha1, ha2 = h[0], h[1], h[2], h[3], h[4], h[5]
        for r in range(6):
            for c in range(6):
                Bc[r, c] = 0.0
        # -[h_l] in blocks (0, 1) and (1, 0), -[h_a] in block (1, 1)
        _set_negative_skew(Bc, 0, 3, hl0, hl1, hl2)
        _set_negative_skew(Bc, 3, 0, hl0, hl1, hl2)
        _set_negative_skew(Bc, 3, 3, ha0, ha1, ha2)
        for c in range(6):
            set6(t3, cross_force(vel, I[c]))  # column c of C (I[c] is column c of symmetric I)
            for r in range(6):
                Bc[r, c] += t3[r]
                Bc[c, r] += t3[r]
    for i in range(nb - 1, -1, -1):
        par = model.parent[i]
        if par >= 0:
            Icp = inertia[par]
            Bcp = twist_variation[par]
            Ic = inertia[i]
            Bc = twist_variation[i]
            for r in range(6):
                for c in range(6):
                    Icp[r, c] += Ic[r, c]
                    Bcp[r, c] += Bc[r, c]
                composite_force[par, r] += composite_force[i, r]
    # (Ic S)^T and (Bc^T S)^T per joint column
    for i in range(nb):
        nvi = model.joint_nv[i]
        Sw = data.motion_subspace[i]
        Ic = inertia[i]
        Bc = twist_variation[i]
        IcS = composites.composite_inertia_times_subspace[i]
        BcTS = composites.composite_variation_times_subspace[i]
        for k in range(nvi):
            for r in range(6):
                s1 = 0.0
                s2 = 0.0
                for c in range(6):
                    s1 += Ic[r, c] * Sw[c, k]
                    s2 += Bc[c, r] * Sw[c, k]
                IcS[k, r] = s1  # stored transposed: row k is column k (contiguous)
                BcTS[k, r] = s2


@leaf_kernel(error_model="numpy")
def _derivative_columns(model, use_gravity, data, composites, SC, dq, dv, M):
    """Columns of d tau/d q, d tau/d v and M (see the module docstring)."""
    nb = model.parent.shape[0]
    velocity, acceleration = composites.velocity, composites.acceleration
    inertia_times_subspace = composites.composite_inertia_times_subspace
    variation_times_subspace = composites.composite_variation_times_subspace
    w = SC[SC_INNER_WORK, 0]
    beta = SC[SC_INNER_WORK, 1]
    u = SC[SC_INNER_WORK, 2]
    t1 = SC[SC_INNER_WORK, 3]
    ap = SC[SC_INNER_WORK, 5]
    z = SC[SC_DERIVATIVE_WORK, 0]
    yv = SC[SC_DERIVATIVE_WORK, 1]
    zero = SC[SC_DERIVATIVE_WORK, 2]
    g6 = SC[SC_DERIVATIVE_WORK, 3]
    Sk = SC[SC_DERIVATIVE_WORK, 4]
    for r in range(6):
        zero[r] = 0.0
        g6[r] = 0.0
    if use_gravity:
        for r in range(3):
            g6[r] = -model.gravity[r]
    for b in range(nb):
        par = model.parent[b]
        ivb = model.v_index[b]
        end = model.subtree_end[b]
        if par >= 0:
            vp = velocity[par]
            apar = acceleration[par]
        else:
            vp = zero
            apar = g6
        for r in range(6):
            ap[r] = apar[r]
        vb = velocity[b]
        Fb = composites.composite_force[b]
        Icb = composites.composite_inertia[b]
        Bcb = composites.composite_twist_variation[b]
        Swb = data.motion_subspace[b]
        for kk in range(model.joint_nv[b]):
            k = ivb + kk
            for r in range(6):
                Sk[r] = Swb[r, kk]
            # w = S_k x v_p ; beta = S_k x a_p - w x v_p ; u = (v_b + v_p) x S_k
            set6(w, cross_motion(Sk, vp))
            set6(beta, cross_motion(Sk, ap))
            set6(t1, cross_motion(w, vp))
            for r in range(6):
                beta[r] -= t1[r]
                t1[r] = vb[r] + vp[r]
            set6(u, cross_motion(t1, Sk))
            # bodies of the subtree of b (pre-order: contiguous from b while iv < end)
            j = b
            while j < nb and model.v_index[j] < end:
                ivj = model.v_index[j]
                IcS = inertia_times_subspace[j]
                BcTS = variation_times_subspace[j]
                for c in range(model.joint_nv[j]):
                    row = ivj + c
                    ic = IcS[c]
                    bc = BcTS[c]
                    dq[row, k] = -(_dot6(ic, beta) + _dot6(bc, w))
                    dv[row, k] = _dot6(bc, Sk) + _dot6(ic, u)
                    mm = _dot6(ic, Sk)
                    M[row, k] = mm
                    M[k, row] = mm
                j += 1
            # strict ancestors: z = S_k x* F_b - Ic_b beta - Bc_b w ; yv = Bc_b S_k + Ic_b u
            set6(z, cross_force(Sk, Fb))
            for r in range(6):
                s = 0.0
                sv = 0.0
                for c in range(6):
                    s += Icb[r, c] * beta[c] + Bcb[r, c] * w[c]
                    sv += Bcb[r, c] * Sk[c] + Icb[r, c] * u[c]
                z[r] -= s
                yv[r] = sv
            anc = par
            while anc >= 0:
                iva = model.v_index[anc]
                Swa = data.motion_subspace[anc]
                for c in range(model.joint_nv[anc]):
                    dq[iva + c, k] = _col_dot(Swa, c, z)
                    dv[iva + c, k] = _col_dot(Swa, c, yv)
                anc = model.parent[anc]


@leaf_kernel(error_model="numpy")
def rnea_derivatives(q, v, a, use_gravity, dq, dv, M, model, data, composites, SC):
    """d tau/d q (tangent [delta H, delta s]), d tau/d v and M at (q, v, a); status code.

    ``dq``, ``dv``, ``M`` are (nv, nv) outputs, completely overwritten.
    """
    st = check_state(model, q, v, a)
    if st != OK:
        return st
    kinematics_into(model, q, data, SC)
    world_quantities(model, data, True)
    _forward_and_composites(q, v, a, use_gravity, model, data, composites, SC)
    # entries (j, k) with j neither in the subtree of k nor an ancestor stay zero
    dq[:, :] = 0.0
    dv[:, :] = 0.0
    M[:, :] = 0.0
    _derivative_columns(model, use_gravity, data, composites, SC, dq, dv, M)
    return OK


@leaf_kernel(error_model="numpy")
def neg_sym_matmul(A, B, out):
    """out = -A @ B for a symmetric (n, n) A and (n, m) B, skipping the structural zeros of B.

    Column c of the result is -sum_k B[k, c] A[k, :] (A symmetric): rows of A are read
    contiguously and zero entries of B (joints on other branches) cost nothing.
    """
    n = A.shape[0]
    m = B.shape[1]
    for r in range(n):
        for c in range(m):
            out[r, c] = 0.0
    for k in range(n):
        for c in range(m):
            b = B[k, c]
            if b != 0.0:
                for r in range(n):
                    out[r, c] -= b * A[k, r]


@leaf_kernel(error_model="numpy")
def aba_derivatives(
    q, v, tau, ddq, dq, dv, M, Minv, ddq_dq, ddq_dv, FP, model, fext, data, composites, SC
):
    """d FD/d q, d FD/d v and M^-1 at (q, v, tau): d FD = -M^-1 d ID at qdd = FD(q, v, tau).

    ABA for qdd, :func:`rnea_derivatives` at (q, v, qdd), M^-1 by IMMAmb (Saccon et al., Table 9,
    the core's ``minverse``), then the two products. One compiled call; status code.
    """
    # np.bool_: typed flags, not literals (one compiled aba / rnea_derivatives, shared with the
    # Python path; numba compiles a callee once more for each literal argument)
    st = aba(q, v, tau, fext, np.bool_(False), ddq, model, data, SC)
    if st != OK:
        return st
    st = rnea_derivatives(q, v, ddq, np.bool_(True), dq, dv, M, model, data, composites,
                          SC)
    if st != OK:
        return st
    st = minverse(q[::1], Minv, FP, model, data, SC)  # 'A' q: RobotModel.minverse's type
    if st != OK:
        return st
    neg_sym_matmul(Minv, dq, ddq_dq)
    neg_sym_matmul(Minv, dv, ddq_dv)
    return OK


@leaf_kernel(error_model="numpy")
def continuous_matrices(v, floating, with_b, A, B, Minv, ddq_dq, ddq_dv):
    """Fill zeroed A (2nv, 2nv) and, if ``with_b``, B (2nv, nv) of the continuous linearization
    from the forward-dynamics derivatives of :func:`aba_derivatives` at the velocity ``v``.

    A = [[A_qq, I], [dFD/dq, dFD/dv]], B = [[0], [M^-1]], with A_qq = -ad(v_base) on the base
    block of a floating base (see :func:`wbc_dynamics.linearization.tangent_velocity_map`).
    """
    nv = Minv.shape[0]
    for r in range(nv):
        A[r, nv + r] = 1.0
        for c in range(nv):
            A[nv + r, c] = ddq_dq[r, c]
            A[nv + r, nv + c] = ddq_dv[r, c]
            if with_b:
                B[nv + r, c] = Minv[r, c]
    if floating:
        # -ad_v = -[[w^, l^], [0, w^]] for the base twist v = [l; w]
        l0, l1, l2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
        _set_negative_skew(A, 0, 0, w0, w1, w2)
        _set_negative_skew(A, 3, 3, w0, w1, w2)
        _set_negative_skew(A, 0, 3, l0, l1, l2)


@leaf_kernel(error_model="numpy")
def iwim(q, B, out, Pu, Pa, model, data, SC):
    """M(q)^-1 B by the O(n) forward-dynamics recursions (Krög et al., eqs. (5)-(9)); status code.

    ``B`` (nv, m) input matrix, ``out`` (nv, m). ``Pu`` (nb, 6, m) holds the articulated input
    forces B*_i (eq. (5) with h_i = -B_i u, no velocity terms), ``Pa`` (nb, 6, m) the body
    accelerations of the outward recursion. The articulated inertias (U, D^-1) are those of
    ABA/IMMAmb (Saccon et al., Table 9, lines 7-13). The outward pass is the forward substitution
    Gamma X = diag(D^-1) u* with the unit lower-triangular Gamma of eq. (8): row block i reads
    X_i = D_i^-1 (u_i - U_i^T a_parent(i)), a_i = a_parent(i) + S_i X_i, so Gamma is never
    formed or inverted.
    """
    st = check_configuration(model, q)
    if st != OK:
        return st
    m = B.shape[1]
    for r in range(B.shape[0]):
        for c in range(m):
            if not np.isfinite(B[r, c]):
                return BAD_A
    kinematics_into(model, q, data, SC)
    world_quantities(model, data, True)
    nb = model.parent.shape[0]
    # all loops run over the m input columns innermost (contiguous rows of Pu, Pa, out)
    for i in range(nb):
        _copy6(data.body_inertia[i], data.articulated_inertia[i])
        for r in range(6):
            for c in range(m):
                Pu[i, r, c] = 0.0
    # inward (eq. (5)): u_i = B_i - S_i^T B*_i into the rows of out, B*_parent += B*_i + U D^-1 u_i
    for i in range(nb - 1, -1, -1):
        if not _backward_joint(model, i, data, SC):
            return SINGULAR
        par, iv, nvi = joint_indices(model, i)
        Sw = data.motion_subspace[i]
        P = Pu[i]
        for k in range(nvi):
            row = out[iv + k]
            for c in range(m):
                row[c] = B[iv + k, c]
            for r in range(6):
                s = Sw[r, k]
                if s != 0.0:
                    for c in range(m):
                        row[c] -= s * P[r, c]
        if par < 0:
            continue
        U = data.articulated_inertia_times_subspace[i]
        Di = data.joint_articulated_inertia_inverse[i]
        Pp = Pu[par]
        for r in range(6):
            for c in range(m):
                Pp[r, c] += P[r, c]
        for k1 in range(nvi):
            for k2 in range(nvi):
                for r in range(6):
                    f = U[r, k1] * Di[k1, k2]
                    row = out[iv + k2]
                    for c in range(m):
                        Pp[r, c] += f * row[c]
        _add_articulated_to_parent(model, i, data)
    # outward: forward substitution with the unit lower-triangular Gamma (eqs. (7)-(8)),
    # X_i = D_i^-1 (u_i - U_i^T a_parent), a_i = a_parent + S_i X_i
    tmp = Pu[0]  # Pu is no longer needed: scratch rows for the nvi <= 6 values of one joint
    for i in range(nb):
        par, iv, nvi = joint_indices(model, i)
        U = data.articulated_inertia_times_subspace[i]
        Di = data.joint_articulated_inertia_inverse[i]
        Sw = data.motion_subspace[i]
        for k in range(nvi):
            t = tmp[k]
            row = out[iv + k]
            for c in range(m):
                t[c] = row[c]
            if par >= 0:
                Ap = Pa[par]
                for r in range(6):
                    f = U[r, k]
                    for c in range(m):
                        t[c] -= f * Ap[r, c]
        for k1 in range(nvi):
            row = out[iv + k1]
            for c in range(m):
                row[c] = 0.0
            for k2 in range(nvi):
                f = Di[k1, k2]
                t = tmp[k2]
                for c in range(m):
                    row[c] += f * t[c]
        if model.subtree_end[i] == iv + nvi:
            continue  # a leaf: nobody reads its acceleration
        A = Pa[i]
        for r in range(6):
            if par >= 0:
                for c in range(m):
                    A[r, c] = Pa[par, r, c]
            else:
                for c in range(m):
                    A[r, c] = 0.0
            for k in range(nvi):
                f = Sw[r, k]
                row = out[iv + k]
                for c in range(m):
                    A[r, c] += f * row[c]
    return OK
