"""The compiled building blocks of ``qp_coulomb`` / ``qp_noslip``'s two QPs (Zapolsky &
Drumwright, Sec. 6.2): the friction-pyramid and non-penetration rows in H-representation
(eqs. (99), (101)), the dense Stage I data (eqs. (97)-(99)), the projection of an iterate onto the
cones, the Stage II nullspace data (eqs. (102)-(112)), the test whether the linear term varies
along the flat directions, the exact Stage I finish of the active-set solver
(:func:`stage1_active_set`) and the re-centred Stage I linear term (:func:`recenter_q`).

Leaves of the compiled flow (:mod:`.qp_flow`), which both the tick and ``solve`` run; the
derivation and the notation are in :mod:`.qp`'s docstring.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import left_nullspace
from ..kernels.separate import call_separately
from .dense_qp import dense_qp_kernel, psd_finish_kernel

__all__ = ["linear_term_work_size", "stage1_active_set", "recenter_q"]


# --------------------------------------------------------------------------- numba kernels
@leaf_kernel
def _constraint_value(r: int, c: int, nc: int, k: int, coulomb: bool, mu: np.ndarray,
                      pattern: bool) -> float:
    """Entry (r, c) of C = [I on f_N; pyramid facet rows] (layout of :class:`QPLayout`)."""
    if r < nc:
        return 1.0 if c == r else 0.0
    if not coulomb:
        return 0.0
    i = (r - nc) // k
    j = (r - nc) % k
    th = (2.0 * j + 1.0) * np.pi / k
    if c == i:
        return mu[i] * np.cos(np.pi / k) if not pattern else 1.0
    if c == nc + i:
        return -np.cos(th) if not pattern else 1.0
    if c == 2 * nc + i:
        return -np.sin(th) if not pattern else 1.0
    return 0.0


@leaf_kernel
def _constraint_row(row: int, nc: int, k: int, mu: np.ndarray) -> tuple[int, float, float, float]:
    """Row ``row`` of C (as :func:`_constraint_value`, with each facet angle's cos / sin
    evaluated once per row instead of once per entry): (contact i, its entries in the f_N,i,
    f_S,i, f_T,i columns i, nc + i, 2 nc + i); the row's other entries are zero. Rows < nc
    are ``f_N,i >= 0``; row nc + i k + j is facet j of contact i (pyramid of ``qp_coulomb``)."""
    if row < nc:
        return row, 1.0, 0.0, 0.0
    i = (row - nc) // k
    th = (2.0 * ((row - nc) % k) + 1.0) * np.pi / k
    return i, mu[i] * np.cos(np.pi / k), -np.cos(th), -np.sin(th)


@njit(cache=True)
def _constraint_matrix(mu: np.ndarray, nc: int, k: int, coulomb: bool,
                       pattern: bool) -> np.ndarray:
    # no default for ``pattern``: an omitted argument is a constant to numba, which would then
    # compile a second _constraint_value specialized on it
    ncon = nc + (nc * k if coulomb else 0)
    C = np.zeros((ncon, 3 * nc))
    for r in range(ncon):
        for c in range(3 * nc):
            C[r, c] = _constraint_value(r, c, nc, k, coulomb, mu, pattern)
    return C


@njit(cache=True)
def _stage1_data(H: np.ndarray, Hp: np.ndarray, uf: np.ndarray, Jv0: np.ndarray,
                 phi: np.ndarray, dt: float,
                 mu: np.ndarray, k: int, coulomb: bool, p_rows: np.ndarray,
                 p_cols: np.ndarray, a_rows: np.ndarray, a_cols: np.ndarray):
    """OSQP data of Stage I (force units): Px, q, Ax (pattern order), l."""
    nc = phi.shape[0]
    m = H.shape[0]
    Px = np.empty(p_rows.shape[0])
    for p in range(p_rows.shape[0]):
        Px[p] = Hp[p_rows[p], p_cols[p]]
    qv = np.empty(m)
    for j in range(m):
        qv[j] = uf[j] / dt
    Ax = np.empty(a_rows.shape[0])
    for p in range(a_rows.shape[0]):
        r = a_rows[p]
        c = a_cols[p]
        if r < nc:
            Ax[p] = H[r, c]
        else:
            Ax[p] = _constraint_value(r - nc, c, nc, k, coulomb, mu, np.bool_(False))
    ncon = 2 * nc + (nc * k if coulomb else 0)
    lo = np.zeros(ncon)
    for i in range(nc):
        lo[i] = (-phi[i] / dt - Jv0[i]) / dt
    return Px, qv, Ax, lo


@njit(cache=True)
def _project(f: np.ndarray, mu: np.ndarray, k: int, coulomb: bool) -> np.ndarray:
    """Clip f_N >= 0; scale (f_S, f_T) into the k-pyramid of radius mu f_N (coulomb)."""
    out = np.empty(f.shape[0])
    _project_into(f, mu, k, coulomb, out, np.empty(mu.shape[0]))
    return out


@leaf_kernel
def _project_into(f: np.ndarray, mu: np.ndarray, k: int, coulomb: bool, out: np.ndarray,
                  g: np.ndarray) -> None:
    """:func:`_project` into ``out`` (may be ``f``) with ``g`` (>= nc,) scratch; no
    allocation."""
    nc = mu.shape[0]
    for j in range(f.shape[0]):
        out[j] = f[j]
    for i in range(nc):
        if out[i] < 0.0:
            out[i] = 0.0
    if coulomb:
        cpk = np.cos(np.pi / k)
        for i in range(nc):
            g[i] = 0.0
        for j in range(k):  # the largest facet value per contact (facet angle outer: one cos /
            th = (2.0 * j + 1.0) * np.pi / k  # sin per facet instead of per facet and contact)
            ct = np.cos(th)
            st = np.sin(th)
            for i in range(nc):
                g[i] = max(g[i], (ct * out[nc + i] + st * out[2 * nc + i]) / cpk)
        for i in range(nc):
            lim = mu[i] * out[i]
            if g[i] > lim:
                sc = lim / g[i]
                out[nc + i] *= sc
                out[2 * nc + i] *= sc


@leaf_kernel
def _stage2_data_into(Afix: np.ndarray, J: np.ndarray, act: np.ndarray, f0: np.ndarray,
                      tau1: np.ndarray, mu: np.ndarray, k: int, coulomb: bool, reg: float,
                      rank_tol: float, exact: bool, beta: np.ndarray, JW: np.ndarray,
                      W: np.ndarray, P2: np.ndarray, q2: np.ndarray, A2: np.ndarray,
                      l2: np.ndarray) -> int:
    """Nullspace W of J_fix^T and the dense Stage II QP (eqs. 107, 110, 111) in place.

    ``Afix`` (m, p): J_fix = [J_f | fixed linear term], overwritten by the QR of
    :func:`~wbc_dynamics.kernels.linalg.left_nullspace`; ``beta`` (>= p,) its scratch; the
    rest as :func:`_stage2_data_from_basis`. Returns the nullity r. No allocation.
    """
    r = left_nullspace(Afix, rank_tol, beta, W)
    _stage2_data_from_basis(W, r, J, act, f0, tau1, mu, k, coulomb, reg, exact, JW, P2, q2,
                            A2, l2)
    return r


@leaf_kernel
def _stage2_data_from_basis(W: np.ndarray, r: int, J: np.ndarray, act: np.ndarray,
                            f0: np.ndarray, tau1: np.ndarray, mu: np.ndarray, k: int,
                            coulomb: bool, reg: float, exact: bool, JW: np.ndarray,
                            P2: np.ndarray, q2: np.ndarray, A2: np.ndarray,
                            l2: np.ndarray) -> None:
    """The dense Stage II QP (eqs. 107, 110, 111) on the nullspace basis ``W[:m r]`` (a
    C-ordered (m, r) matrix: :func:`~wbc_dynamics.kernels.linalg.left_nullspace` of J_fix).

    ``J`` (m, nv) the contact rows and ``act`` the actuated columns (J_a = ``J[:, act]``);
    ``JW`` (>= max(nu r, ncon),) scratch. Writes C-ordered prefixes: ``P2`` (r, r), ``q2``
    (r,), ``A2`` (ncon, r), ``l2`` (ncon,). ``exact`` (the active-set solver): the
    rounding-level cleanup below (OSQP's data as before it, its closed loops tuned with it).
    No allocation. The products run with the summed index outside and the output's contiguous
    index inside: each entry sums in the same order as a dot product would (the same rounding),
    without one sum's chain of dependent additions.
    """
    m = J.shape[0]
    nu = act.shape[0]
    nc = mu.shape[0]
    Wm = W[:m * r].reshape((m, r))
    JWm = JW[:nu * r].reshape((nu, r))
    for a in range(nu):  # J_a^T W
        ca = act[a]
        for c in range(r):
            JWm[a, c] = 0.0
        for i in range(m):
            jia = J[i, ca]
            for c in range(r):
                JWm[a, c] += jia * Wm[i, c]
    P2m = P2[:r * r].reshape((r, r))
    dmax = 1.0
    for i in range(r):  # W^T J_a J_a^T W, upper triangle row by row, mirrored
        for j in range(i, r):
            P2m[i, j] = 0.0
        for a in range(nu):
            jai = JWm[a, i]
            for j in range(i, r):
                P2m[i, j] += jai * JWm[a, j]
        for j in range(i + 1, r):
            P2m[j, i] = P2m[i, j]
        dmax = max(dmax, P2m[i, i])
    for i in range(r):
        P2m[i, i] += reg * dmax
    for c in range(r):
        q2[c] = 0.0
    for a in range(nu):
        ta = tau1[a]
        for c in range(r):
            q2[c] -= JWm[a, c] * ta
    ncon = nc + (nc * k if coulomb else 0)
    A2m = A2[:ncon * r].reshape((ncon, r))
    for row in range(ncon):
        i, ca, cb, cc = _constraint_row(row, nc, k, mu)  # A2 = C W (its three entries)
        for c in range(r):
            A2m[row, c] = 0.0
        cf = 0.0
        size = 0.0
        for col, v in ((i, ca), (nc + i, cb), (2 * nc + i, cc)):
            if v != 0.0:
                cf += v * f0[col]
                size += abs(v * f0[col])
                for c in range(r):
                    A2m[row, c] += v * Wm[col, c]
        # f0 is projected into the pyramid, so C f0 >= 0 holds exactly; a rounding-level
        # negative value (a facet f0 lies on) would make w = 0 infeasible by ~1e-16 |f| and let
        # the active-set solver chase dependent facet rows of a contact at its apex
        l2[row] = -cf
        if exact and cf >= -1e-12 * size:
            l2[row] = min(l2[row], 0.0)
    # rows of (rounding) size only: a contact force component that is (to rounding) fixed on
    # the optimal set has rounding-size entries in W; kept, such a row is a constraint with a
    # noise normal whose addition makes the active set ill-conditioned. f0 satisfies it
    # (l2 <= 0), so it is dropped (a zero row with l2 <= 0 never binds).
    if not exact:
        return
    rown = JW[:ncon]  # (J_a^T W is spent) squared row norms of A2
    amax = 0.0
    for row in range(ncon):
        s = 0.0
        for c in range(r):
            s += A2m[row, c] * A2m[row, c]
        rown[row] = s
        amax = max(amax, s)
    for row in range(ncon):
        if rown[row] <= 1e-16 * amax:
            for c in range(r):
                A2m[row, c] = 0.0
            l2[row] = min(l2[row], 0.0)


@njit(cache=True)
def _stage2_data(Jfix: np.ndarray, J: np.ndarray, act: np.ndarray, f0: np.ndarray,
                 tau1: np.ndarray, mu: np.ndarray, k: int, coulomb: bool, reg: float,
                 rank_tol: float, exact: bool):
    """:func:`_stage2_data_into` on fresh buffers (the OSQP variants).

    Returns (W (m x r), P2 (r x r), q2, A2 (ncon x r), l2).
    """
    m, p = Jfix.shape
    nu = act.shape[0]
    nc = mu.shape[0]
    ncon = nc + (nc * k if coulomb else 0)
    W = np.empty(m * m)
    P2 = np.empty(m * m)
    q2 = np.empty(m)
    A2 = np.empty(ncon * m)
    l2 = np.empty(ncon)
    r = call_separately(_stage2_data_into, (Jfix.copy(), J, act, f0, tau1, mu, k, coulomb, reg,
                                            rank_tol, exact, np.empty(max(p, 1)),
                                            np.empty(max(nu * m, ncon, 1)), W, P2, q2, A2, l2))
    return (W[:m * r].reshape((m, r)), P2[:r * r].reshape((r, r)), q2[:r],
            A2[:ncon * r].reshape((ncon, r)), l2)


def linear_term_work_size(m: int, nf: int) -> int:
    """Length of :func:`_linear_term_varies`'s workspace for ``J_f`` (m, nf)."""
    return m * nf + nf + 1 + 2 * m


@leaf_kernel
def _linear_term_varies(Jf: np.ndarray, dlin: np.ndarray, rank_tol: float, tol: float,
                        work: np.ndarray, basis: np.ndarray) -> tuple[bool, int]:
    """Whether the contact-velocity Stage I objective changes along its flat directions
    ``ker J_f^T`` (the internal forces): the largest entry of ``dlin``'s projection on that
    nullspace [m/s] exceeds ``tol``; the nullspace by the QR of :func:`_stage2_data_into`
    (:func:`~wbc_dynamics.kernels.linalg.left_nullspace`, rank rule ``rank_tol``), written to
    ``basis`` (>= m m,; its first m r entries a C-ordered (m, r) matrix), in ``work``
    (:func:`linear_term_work_size`; no allocation). Returns (varies, r): when the term does
    not vary, Stage II's J_fix is J_f and ``basis`` is its nullspace (the same QR).

    Why: Stage II keeps ``dlin^T f`` fixed only where it varies. Along the internal
    forces of touching contacts the sticking correction makes it zero up to the correction's
    residue -- 1e-7 m/s on talos's flat soles -- and fixing that residue pinned Stage II to
    Stage I's choice among the sole corners, a vertex of the linear objective (each foot's load
    on one or two corners, flipping with the residue's sign): the soles rocked, the rocking
    made the residue real (3e-5 m/s) and talos fell. The callers pass
    ``tol = sticking_gap / dt``, the velocity that moves a contact across the touching gap
    within one tick (below it the contact still counts as touching)."""
    m, nf = Jf.shape
    A = work[:m * nf].reshape((m, nf))
    for i in range(m):  # (an element loop: a leaf kernel has no array-to-array assignment)
        for j in range(nf):
            A[i, j] = Jf[i, j]
    beta = work[m * nf:m * nf + nf + 1]
    proj = work[m * nf + nf + 1:m * nf + nf + 1 + m]
    coef = work[m * nf + nf + 1 + m:m * nf + nf + 1 + 2 * m]
    r = left_nullspace(A, rank_tol, beta, basis)
    if nf == 0:  # no free dofs: every direction is flat (basis = I)
        for i in range(m):
            if abs(dlin[i]) > tol:
                return True, r
        return False, r
    W = basis[:m * r].reshape((m, r))
    for c in range(r):  # W^T dlin (each entry summed in row order)
        coef[c] = 0.0
    for i in range(m):
        di = dlin[i]
        for c in range(r):
            coef[c] += W[i, c] * di
    for i in range(m):  # W W^T dlin, dlin's part in ker J_f^T
        proj[i] = 0.0
    for c in range(r):
        cc = coef[c]
        for i in range(m):
            proj[i] += W[i, c] * cc
    for i in range(m):
        if abs(proj[i]) > tol:
            return True, r
    return False, r


@leaf_kernel
def stage1_active_set(H: np.ndarray, P: np.ndarray, q: np.ndarray, A: np.ndarray,
                      l: np.ndarray, u: np.ndarray, delta: float, warm: np.ndarray,
                      use_warm: bool, finish: bool, recenter: bool, max_iter: int, tol: float,
                      dep_tol: float, fwork: np.ndarray, iwork: np.ndarray, x1: np.ndarray,
                      x: np.ndarray, qr: np.ndarray, y: np.ndarray, active: np.ndarray,
                      first: np.ndarray) -> tuple[int, int, int]:
    """Stage I with the active-set solver (:func:`qp_active_set`).

    The QP ``min 1/2 f^T H f + q^T f s.t. l <= A f <= u`` (eqs. (97)-(99), force units; ``H`` only
    positive semidefinite): the dual active-set method on the proximal problem ``P = H + delta I``
    (warm-started with ``warm`` if ``use_warm``), then, if ``finish``, its exact finish on ``H``
    (:func:`~wbc_dynamics.contact.dense_qp.psd_finish_kernel`): the optimum itself, the point of
    the optimal face reached from the proximal minimizer. The proximal minimizer alone is biased by
    ``delta |f|`` and, on a thin optimal face, far from it: its objective up to 4e-7 relative above
    the optimum, and Stage II's set ``{J_f^T f = J_f^T f0}`` then another face (humanoid torques
    off by up to 3 % of their largest). Without ``finish``, or where the finish does not end
    (iteration limit, no finite optimum), the proximal minimizer, re-centred once at itself if
    ``recenter`` (the proximal-point step, warm-started with the first pass's active set).
    ``delta = 0`` (``P = H`` positive definite): the dual method's solution is exact.

    Outputs: ``x1`` the first pass's solution, ``x`` the result, ``y`` / ``active`` the
    multipliers / active row sides of the last solve, ``first`` the first pass's active row
    sides (the next tick's guess; it may be ``warm`` itself, which is read before); ``qr`` the
    re-centred linear term (scratch); ``fwork`` / ``iwork`` of
    :func:`~wbc_dynamics.contact.dense_qp.work_sizes`. Returns (the first pass's status,
    iterations of all passes, the result: 2 exact, 1 re-centred, 0 the first pass).
    """
    n = q.shape[0]
    s1, it = call_separately(dense_qp_kernel, (P, q, A, l, u, warm, use_warm, max_iter, tol,
                                               dep_tol, fwork, iwork, x1, y, active))
    for i in range(active.shape[0]):
        first[i] = active[i]
    for i in range(n):
        x[i] = x1[i]
    if s1 != 1 or not delta > 0.0:
        return s1, it, 2 if s1 == 1 else 0
    if finish:
        sf, itf = call_separately(psd_finish_kernel, (H, delta, q, A, l, u, max_iter, tol,
                                                      dep_tol, fwork, iwork, x, y, active))
        it += itf
        if sf == 1:
            return s1, it, 2
        for i in range(n):
            x[i] = x1[i]
    if not recenter:
        return s1, it, 0
    for i in range(n):
        qr[i] = q[i] - delta * x1[i]
    s2, it2 = call_separately(dense_qp_kernel, (P, qr, A, l, u, first, np.bool_(True),
                                                max_iter, tol, dep_tol, fwork, iwork, x, y,
                                                active))
    it += it2
    if s2 == 1:
        return s1, it, 1
    for i in range(n):
        x[i] = x1[i]
    return s1, it, 0

@leaf_kernel
def _finite_vector(x, n):
    if x.shape[0] != n:
        return False
    for j in range(n):
        if not np.isfinite(x[j]):
            return False
    return True


@leaf_kernel
def _accepted(s):
    # _ACCEPT: solved, solved inaccurate, iteration limit, time limit
    return s == 1 or s == 2 or s == 7 or s == 8


@leaf_kernel
def recenter_q(x, qlin, delta, out):
    """Stage I's second proximal pass (option ``stage1_recenter``): ``out = qlin - delta x``
    [m/s^2 x s]; returns False (no second pass) if x is not a finite (m,) vector."""
    m = x.shape[0]
    if qlin.shape[0] < m:
        return False
    for j in range(m):
        if not np.isfinite(x[j]):
            return False
    for j in range(m):
        out[j] = qlin[j] - delta * x[j]
    return True
