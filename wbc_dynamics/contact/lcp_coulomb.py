"""``lcp_coulomb``: inverse dynamics with Coulomb friction as an LCP
(Zapolsky & Drumwright, Sec. 5).

One module for one method: its compiled kernels (the reduction and recovery of the dynamics, the
LCP assembly, the minimum-norm impulses) are also the compiled ticks' (:mod:`.tick`,
:mod:`.qp_tick`), and a kernel's numba cache entry and compile time depend on the module that
defines it.

Model (eqs. (54)-(58)) with a k-edge friction pyramid (Sec. 5.1; edges from
:meth:`ContactProblem.pyramid`, k = 4 gives ``F = [S; T; -S; -T]`` up to row order)::

    0 <= c_N  _|_  N v+ + phi/dt >= 0                   (54)
    0 <= beta _|_  F v+ + E lambda >= 0                  (55)
    0 <= lambda _|_ mu c_N - E^T beta >= 0               (56)
    P v+ = qdot_des                                      (57)
    v+ = v + M^-1 (dt (B tau - h) + N^T c_N + F^T beta)  (58)

The MLCP (59) is reduced to the LCP (64) by eliminating ``(v+, tau)`` through the matrix ``X`` of
eq. (63). Without ever forming ``M`` (only the analytical ``M^-1`` of the problem is used):
with ``G = P M^-1 P^T`` (actuated block of M^-1, positive definite, Cholesky-factored),

    tau(c) = tau0 - G^-1 P M^-1 R c / dt,   tau0 = G^-1 (qdot_des - P f*) / dt      (cf. eq. 90)
    v+(c)  = v0 + K R c,   v0 = f* + M^-1 P^T G^-1 (qdot_des - P f*)
    K = M^-1 - M^-1 P^T G^-1 P M^-1      (nonzero only on the free block: K_ff = (M_ff)^-1)

with ``f* = v - dt M^-1 h`` and ``R = [N^T F^T]``. Hence the LCP blocks of (64) are
``[N; F] K [N; F]^T = J_f K_ff J_f^T`` (``J_f``: free-dof columns of the rows of N and F) and
``q = [N v0 + phi/dt; F v0; 0]``; the LCP variables are ``z = [c_N; beta; lambda]`` (per contact
1 + k + 1 of them, eq. (64)); the signs of the coupling blocks follow Anitescu & Potra (1997)::

    Q = [[N K N^T, N K F^T, 0  ],
         [F K N^T, F K F^T, E  ],
         [mu,      -E^T,    0  ]]

solved with Lemke's algorithm (:mod:`.lemke`; copositive LCP, Sec. 5.2.1) with lexicographic
anti-cycling, a pivot limit, warm start from the previous tick's basis (matched by contact
identity) and the Tikhonov regularization fallback. ``tau`` and ``v+`` are then recovered in
closed form from eq. (37)/(90), so eq. (37) and the inverse-dynamics constraint (38) hold to
rounding error whatever the contact impulses are.

The method is one compiled kernel, :func:`coulomb_solve_kernel` (sticking correction, reduction,
LCP (64), Lemke with warm start and regularization, recovery, minimum-norm selection, status and
flags) on named arrays (:class:`CoulombArrays`, :class:`CoulombSolveOptions` ->
:class:`CoulombSolution`): :func:`solve_lcp_coulomb` validates the options, packs the problem,
calls it and builds the result; the controller's compiled tick (:mod:`.tick`) calls it after its
assembly. Alg. 3 (MINDIFF, ``mindiff=True``, for small contact counts) is a separate variant in
Python (:func:`_mindiff`: 2^nc Lemke solves of sub-LCPs); the kernel then takes its solution as
``z_given`` instead of running Lemke.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.arena import NO_ARENA
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import (
    add_weighted_rows,
    chol_solve,
    chol_solve_columns,
    cholesky,
    matvec,
)
from ..kernels.separate import call_separately
from .consistency import _sticking_qdd, min_norm_impulse_kernel, sticking_consistent_problem
from .dispatch import (
    FLAG_CORRECTED,
    FLAG_MIN_NORM,
    FLAG_MIN_NORM_FAILED,
    FLAG_REGULARIZED,
    FLAG_STICKING_FAILED,
    FLAG_WARM_REJECTED,
    contact_arrays,
    fallback_result,
    flag_names,
)
from .lemke import (
    PIVOT_LIMIT,
    STATUS_NAMES,
    SUCCESS,
    LemkeOptions,
    _solve_lcp_kernel,
    lcp_residual,
    solve_lcp,
)
from .noslip_kernels import min_pivot
from .problem import ContactProblem, ContactResult, MethodState, SolverStats

__all__ = [
    "ReducedDynamics",
    "build_coulomb_lcp",
    "solve_lcp_coulomb",
    "coulomb_solve_kernel",
    "CoulombSolveOptions",
    "CoulombSolution",
    "COULOMB_FLAGS",
    "warmup",
]


#: [m/s] default ``min_norm_tol``: a contact separating or slipping slower than this counts as
#: touching / sticking in the minimum-norm selection -- ``lcp_noslip``'s ``consistency_tol``
#: (the accepted model mismatch, 1 um per 1 ms tick). Complementarity then holds to
#: ``c_N * MIN_NORM_TOL``. With the former 1e-6 m/s a standing anymal_c kept Lemke's vertex
#: (0 / 249 / 256 / 7 N on its feet, |tau| 78 N m): the unloaded foot separated at 4 um/s, so
#: the selection could not load it; now 125 / 125 / 131 / 131 N, |tau| 54 N m.
MIN_NORM_TOL = 1e-3

#: the flags of :data:`CoulombSolution.bits`, in the order of ``stats.flags`` (the solve's,
#: then the sticking correction's)
COULOMB_FLAGS = ((FLAG_WARM_REJECTED, "warm_start_rejected"), (FLAG_REGULARIZED, "regularized"),
                 (FLAG_MIN_NORM_FAILED, "min_norm_failed"), (FLAG_MIN_NORM, "min_norm"),
                 (FLAG_CORRECTED, "inconsistent_corrected"),
                 (FLAG_STICKING_FAILED, "sticking_correction_failed"))

# CoulombSolution.code: solved, or why the documented fallback applies
SOLVED = 0
_NOT_PD = 1          # P M^-1 P^T not positive definite (ReducedDynamics.build's LinAlgError)
_LEMKE_FAILED = 2    # Lemke failed, regularized attempts included (lemke_status says how)
_NON_FINITE = 3      # a non-finite torque, impulse or velocity


# --------------------------------------------------------------------------- numba kernels
@leaf_kernel
def _chol_solve_inplace(L: np.ndarray, b: np.ndarray) -> None:
    chol_solve(L, L.shape[0], b, b)


@njit(cache=True)
def _reduce_kernel(
    Minv: np.ndarray,
    h: np.ndarray,
    v: np.ndarray,
    act: np.ndarray,
    fr: np.ndarray,
    qdd: np.ndarray,
    dt: float,
    J: np.ndarray,
    ar,
):
    """Eliminate (v+, tau) (eqs. 63, 85-94). J: (m, nv) rows of the contact variables.

    Returns (ok, L_G, tau0, fstar, v0, Kff, Jf, H, Jv0, uf_term, ufree) with
    H = J_f K_ff J_f^T, Jv0 = J v0 and uf_term = J_f (f*_f - M^-1_fa G^-1 f*_a) (the linear
    term of the Stage I objective, see qp.py); :func:`_reduce_into` on buffers from the arena
    ``ar`` (:mod:`wbc_dynamics.kernels.arena`).
    """
    nv = v.shape[0]
    nu = act.shape[0]
    nf = fr.shape[0]
    m = J.shape[0]
    fstar = _ar.floats(ar, nv)
    L = _ar.floats_2d_zero(ar, nu, nu)
    tau0 = _ar.floats_zero(ar, nu)
    v0 = _ar.floats(ar, nv)
    Kff = _ar.floats_2d(ar, nf, nf)
    Jf = _ar.floats_2d(ar, m, nf)
    H = _ar.floats_2d_zero(ar, m, m)
    Jv0 = _ar.floats_zero(ar, m)
    uf = _ar.floats_zero(ar, m)
    ufree = _ar.floats_zero(ar, nf)
    ok = call_separately(_reduce_into, (Minv, h, v, act, fr, qdd, dt, J, L, tau0, fstar, v0, Kff,
                                        Jf, H, Jv0, uf, ufree, _ar.floats_2d(ar, nu, nu),
                                        _ar.floats(ar, nu * (nf + 2)), _ar.floats_2d(ar, m, nf)))
    return ok, L, tau0, fstar, v0, Kff, Jf, H, Jv0, uf, ufree


@leaf_kernel
def _reduce_into(Minv, h, v, act, fr, qdd, dt, J, L, tau0, fstar, v0, Kff, Jf, H, Jv0, uf,
                 ufree, G, scratch, JK) -> bool:
    """:func:`_reduce_kernel` into the caller's buffers (no allocation): ``L``, ``G`` (nu, nu),
    ``tau0`` (nu,), ``fstar``, ``v0`` (nv,), ``Kff`` (nf, nf), ``Jf``, ``JK`` (m, nf), ``H``
    (m, m), ``Jv0``, ``uf`` (m,), ``ufree`` (nf,), ``scratch`` (>= nu (nf + 2),). Returns
    False (``L`` zero, the other outputs partly written) if G = P M^-1 P^T is not positive
    definite.
    """
    nv = v.shape[0]
    nu = act.shape[0]
    nf = fr.shape[0]
    m = J.shape[0]
    matvec(Minv, h, fstar)  # f* = v - dt M^-1 h
    for i in range(nv):
        fstar[i] = v[i] - dt * fstar[i]
    for i in range(nu):
        for j in range(nu):
            G[i, j] = Minv[act[i], act[j]]
    ok = cholesky(G, L, 0.0)
    if not ok:
        for i in range(nu):
            for j in range(nu):
                L[i, j] = 0.0
        return False
    # tau0 = G^-1 (qdot_des - f*_a) / dt ; qdot_des = v_a + dt qdd
    for i in range(nu):
        tau0[i] = v[act[i]] + dt * qdd[i] - fstar[act[i]]
    _chol_solve_inplace(L, tau0)
    y = scratch[:nu]  # G^-1 (qdot_des - f*_a)
    for i in range(nu):
        y[i] = tau0[i]
    for i in range(nu):
        tau0[i] /= dt
    for i in range(nv):
        s = 0.0
        for j in range(nu):
            s += Minv[i, act[j]] * y[j]
        v0[i] = fstar[i] + s
    # Kff = Minv_ff - Minv_fa G^-1 Minv_af ; ga = G^-1 f*_a for uf: G^-1 [Minv_af | f*_a]
    # solved for all nf + 1 columns at once
    nx = nf + 1
    X = scratch[nu:nu + nu * nx].reshape((nu, nx))
    for i in range(nu):
        for c in range(nf):
            X[i, c] = Minv[act[i], fr[c]]
        X[i, nf] = fstar[act[i]]
    chol_solve_columns(L, X)
    for r in range(nf):  # Minv_fa [G^-1 Minv_af | ga], each entry summed in order of i
        for c in range(nf):
            Kff[r, c] = 0.0
        sga = 0.0
        for i in range(nu):
            mri = Minv[fr[r], act[i]]
            for c in range(nf):
                Kff[r, c] += mri * X[i, c]
            sga += mri * X[i, nf]
        for c in range(nf):
            Kff[r, c] = Minv[fr[r], fr[c]] - Kff[r, c]
        ufree[r] = fstar[fr[r]] - sga
    for r in range(nf):
        for c in range(r):
            a = 0.5 * (Kff[r, c] + Kff[c, r])
            Kff[r, c] = a
            Kff[c, r] = a
    for i in range(m):
        for c in range(nf):
            Jf[i, c] = J[i, fr[c]]
    for i in range(m):
        for c in range(nf):
            s = 0.0
            for r in range(nf):
                s += Jf[i, r] * Kff[r, c]
            JK[i, c] = s
    for i in range(m):
        for j in range(i, m):
            s = 0.0
            for c in range(nf):
                s += JK[i, c] * Jf[j, c]
            H[i, j] = s
            H[j, i] = s
    for i in range(m):
        s = 0.0
        for j in range(nv):
            s += J[i, j] * v0[j]
        Jv0[i] = s
        s = 0.0
        for c in range(nf):
            s += Jf[i, c] * ufree[c]
        uf[i] = s
    return True


@njit(cache=True)
def _recover_kernel(
    Minv: np.ndarray,
    act: np.ndarray,
    L: np.ndarray,
    tau0: np.ndarray,
    fstar: np.ndarray,
    dt: float,
    J: np.ndarray,
    c: np.ndarray,
    ar,
):
    """tau (eq. 90) and v+ (eq. 37) for contact impulses c (rows of J). Returns (tau, v+, gen);
    :func:`_recover_into` on buffers from the arena ``ar``."""
    nv = fstar.shape[0]
    nu = act.shape[0]
    tau = _ar.floats(ar, nu)
    vn = _ar.floats(ar, nv)
    gen = _ar.floats(ar, nv)
    _recover_into(Minv, act, L, tau0, fstar, dt, J, c, tau, vn, gen, _ar.floats(ar, nv + nu))
    return tau, vn, gen


@leaf_kernel
def _recover_into(Minv, act, L, tau0, fstar, dt, J, c, tau, vn, gen, scratch) -> None:
    """:func:`_recover_kernel` into ``tau`` (nu,), ``vn``, ``gen`` (nv,) with ``scratch``
    (>= nv + nu,); no allocation."""
    nv = fstar.shape[0]
    nu = act.shape[0]
    for j in range(nv):  # R c = J^T c  (generalized contact impulse)
        gen[j] = 0.0
    add_weighted_rows(J, c, gen)
    mg = scratch[:nv]
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += Minv[i, j] * gen[j]
        mg[i] = s
    y = scratch[nv:nv + nu]
    for i in range(nu):
        y[i] = mg[act[i]]
    _chol_solve_inplace(L, y)
    for i in range(nu):
        tau[i] = tau0[i] - y[i] / dt
    for i in range(nv):
        s = 0.0
        for j in range(nu):
            s += Minv[i, act[j]] * tau[j]
        vn[i] = fstar[i] + dt * s + mg[i]


class CoulombSolveOptions(NamedTuple):
    """Options of :func:`coulomb_solve_kernel` (those of :func:`solve_lcp_coulomb`): ``D``
    (k, 2) pyramid edge directions; ``sticking_correction`` with ``sticking_gap`` [m] and
    ``min_pivot`` [1/kg] (Alg. 1's scale-aware floor); ``min_norm`` with ``min_norm_tol``
    [m/s]; Lemke's ``tol`` (relative), ``regularize`` and ``max_pivots`` (< 0: 50 n + 10)."""

    D: np.ndarray
    sticking_correction: bool
    sticking_gap: float
    min_pivot: float
    min_norm: bool
    min_norm_tol: float
    tol: float
    regularize: bool
    max_pivots: int


class CoulombSolution(NamedTuple):
    """Result of :func:`coulomb_solve_kernel`: ``code`` (:data:`SOLVED` or the reason of the
    documented fallback), ``bits`` (flags, :data:`COULOMB_FLAGS`), Lemke's ``lcp_status``,
    ``pivots``, ``warm_used``, ``regularization`` (Tikhonov eps) and ``residual`` (LCP
    violation [units of q]); ``tau`` (nu,) [N m], ``v_next`` (nv,), local impulses ``c_n``,
    ``c_s``, ``c_t`` (nc,) [N s]; ``z`` the LCP solution (before the minimum-norm selection),
    ``basic`` (n,) bool the final basis (the next warm start); ``J`` = [N; F] the rows of the
    contact variables; ``Q``, ``q`` LCP (64); ``qdd`` (nu,) the accelerations solved for
    (after the sticking correction) [rad/s^2]."""

    code: int
    bits: int
    lcp_status: int
    pivots: int
    warm_used: bool
    regularization: float
    residual: float
    tau: np.ndarray
    v_next: np.ndarray
    c_n: np.ndarray
    c_s: np.ndarray
    c_t: np.ndarray
    z: np.ndarray
    basic: np.ndarray
    J: np.ndarray
    Q: np.ndarray
    q: np.ndarray
    qdd: np.ndarray


@njit(cache=True)
def coulomb_solve_kernel(p, warm, warm_given, z_given, o, ar):
    """One ``lcp_coulomb`` solve of the assembled problem ``p``
    (:class:`~wbc_dynamics.contact.dispatch.ContactArrays`) with options ``o``
    (:class:`CoulombSolveOptions`). Lemke's warm start: ``warm`` (nc (k + 2),) bool, the
    previous basis by contact identity in LCP (64)'s variable order, used if ``warm_given``;
    ``z_given``: the LCP solution to use instead of Lemke's (length 0: solve by Lemke;
    MINDIFF's choice). The steps: the sticking correction (Sec. 4.5 QP,
    ``consistency._sticking_qdd``), the reduced dynamics, LCP (64), Lemke with the warm basis
    and the Tikhonov fallback (as :func:`~wbc_dynamics.contact.lemke.solve_lcp`), the recovery
    of (tau, v+) (eq. (90), (37)), the minimum-norm selection, the local impulses and the
    checks of the result. Returns a :class:`CoulombSolution` (arrays from the arena ``ar``).
    The one implementation of the method: ``solve`` and the compiled tick both call it.
    """
    N, phi, mu, dt, D = p.N, p.phi, p.mu, p.dt, o.D
    nc, nv = N.shape
    nu = p.act.shape[0]
    kk = D.shape[0]
    m = nc * (1 + kk)
    bits = 0
    qdd = _ar.floats_copy(ar, p.qdd_des)
    if o.sticking_correction and nu > 0:
        st = call_separately(_sticking_qdd, (p.Minv, p.h, p.v, p.act, p.qdd_des, N, p.S, p.T,
                                             phi, dt, o.sticking_gap, o.min_pivot, qdd, ar))
        if st == 2:
            bits |= FLAG_STICKING_FAILED
        elif st == 1:
            bits |= FLAG_CORRECTED
    J = call_separately(_coulomb_rows, (N, p.S, p.T, D, ar))
    red = call_separately(_reduce_kernel, (p.Minv, p.h, p.v, p.act, p.free, qdd, dt, J, ar))
    L, tau0, fstar, H, Jv0 = red[1], red[2], red[3], red[7], red[8]
    Q, qv = call_separately(_assemble_lcp, (H, Jv0, phi, dt, mu, kk, ar))
    n = qv.shape[0]
    z = _ar.floats_zero(ar, n)
    basic = _ar.flags_zero(ar, n)
    tau = _ar.floats_zero(ar, nu)
    v_next = _ar.floats_copy(ar, p.v)
    cN = _ar.floats_zero(ar, nc)
    cS = _ar.floats_zero(ar, nc)
    cT = _ar.floats_zero(ar, nc)
    status = SUCCESS
    pivots = 0
    warm_used = False
    eps = 0.0
    residual = 0.0
    code = SOLVED
    if not red[0]:
        code = _NOT_PD
    elif z_given.shape[0] > 0:
        for i in range(n):
            z[i] = z_given[i]
            basic[i] = z[i] > 0.0
    else:
        qs = 0.0
        qmin = np.inf
        for i in range(n):
            qs = max(qs, abs(qv[i]))
            qmin = min(qmin, qv[i])
        if qs > 0.0 and qmin < 0.0:  # else z = 0 solves the LCP
            qn = _ar.floats(ar, n)
            for i in range(n):
                qn[i] = qv[i] / qs
            w = _ar.floats_zero(ar, n)
            basis = _ar.ints_zero(ar, n)
            max_pivots = o.max_pivots if o.max_pivots >= 0 else 50 * n + 10
            lo = LemkeOptions(max_pivots, 1e-9, o.tol, o.regularize, 1e-12, 1e-2, 100.0, 1e-6)
            status, pivots, wflag, eps, viol = call_separately(_solve_lcp_kernel, (
                Q, qn, warm, warm_given, lo, z, w, basis, ar))
            for i in range(n):
                z[i] *= qs
                if n <= basis[i] < 2 * n:
                    basic[basis[i] - n] = True
            residual = viol * qs
            warm_used = wflag == 1
            if warm_given and wflag == 2:
                bits |= FLAG_WARM_REJECTED
            if eps > 0.0:
                bits |= FLAG_REGULARIZED
            if status != SUCCESS:
                code = _LEMKE_FAILED
    if code == SOLVED:
        c = _ar.floats_copy(ar, z[:m])
        tau, v_next, _gen = call_separately(_recover_kernel, (p.Minv, p.act, L, tau0, fstar, dt,
                                                              J, c, ar))
        if o.min_norm:
            c_mn, ok = call_separately(min_norm_coulomb_kernel, (J, N, phi, dt, mu, p.free, c,
                                                                 v_next, kk, o.min_norm_tol, ar))
            if ok:
                c = c_mn
                tau, v_next, _gen = call_separately(_recover_kernel, (p.Minv, p.act, L, tau0,
                                                                      fstar, dt, J, c, ar))
                bits |= FLAG_MIN_NORM
            else:
                bits |= FLAG_MIN_NORM_FAILED
        finite = True
        for a in range(nu):
            finite = finite and np.isfinite(tau[a])
        for col in range(nv):
            finite = finite and np.isfinite(v_next[col])
        for i in range(nc):  # the pyramid's edge impulses in the contact frame
            cN[i] = c[i]
            for j in range(kk):
                cS[i] += c[nc + i * kk + j] * D[j, 0]
                cT[i] += c[nc + i * kk + j] * D[j, 1]
            finite = finite and np.isfinite(cN[i]) and np.isfinite(cS[i]) and np.isfinite(cT[i])
        if not finite:
            code = _NON_FINITE
    return CoulombSolution(code=code, bits=bits, lcp_status=status, pivots=pivots,
                           warm_used=warm_used, regularization=eps, residual=residual, tau=tau,
                           v_next=v_next, c_n=cN, c_s=cS, c_t=cT, z=z, basic=basic, J=J, Q=Q, q=qv,
                           qdd=qdd)


# --------------------------------------------------------------------------- Python helpers
@dataclass
class ReducedDynamics:
    """(v+, tau) eliminated from eq. (37)/(38) for the contact variable rows ``J`` (m x nv).

    Attributes (units: impulses N s, velocities m/s or rad/s):
        J: (m, nv) generalized wrench rows of the contact variables (e.g. [N; F]).
        L: Cholesky factor of G = P M^-1 P^T. tau0: (nu,) contact-free torques [N m].
        fstar: (nv,) v - dt M^-1 h. v0: (nv,) v+ without contact impulses (P v0 = qdot_des).
        Kff: (nf, nf) = (M_ff)^-1, the Schur complement of G in M^-1.
        Jf: (m, nf) free-dof columns of J. H: (m, m) = J_f K_ff J_f^T (= Z^T A Z of eq. 97).
        Jv0: (m,) J v0 (contact velocities without contact impulses).
        uf: (m,) linear term of the Stage I objective (eq. 98) [m/s], ``uf = J_f ufree``.
        ufree: (nf,) ``f*_f - M^-1_fa G^-1 f*_a`` [m/s].
    """

    problem: ContactProblem
    J: np.ndarray
    L: np.ndarray
    tau0: np.ndarray
    fstar: np.ndarray
    v0: np.ndarray
    Kff: np.ndarray
    Jf: np.ndarray
    H: np.ndarray
    Jv0: np.ndarray
    uf: np.ndarray
    ufree: np.ndarray

    @classmethod
    def build(cls, problem: ContactProblem, J: np.ndarray) -> ReducedDynamics:
        """Raises numpy.linalg.LinAlgError if P M^-1 P^T is not positive definite."""
        J = np.ascontiguousarray(J, dtype=np.float64)
        ok, L, tau0, fstar, v0, Kff, Jf, H, Jv0, uf, ufree = _reduce_kernel(
            problem.Minv,
            problem.h,
            problem.v,
            problem.actuated,
            problem.free,
            problem.qdd_des,
            float(problem.dt),
            J,
            NO_ARENA,
        )
        if not ok:
            raise np.linalg.LinAlgError(
                "ContactProblem.Minv: actuated block P M^-1 P^T is not positive definite"
            )
        return cls(problem, J, L, tau0, fstar, v0, Kff, Jf, H, Jv0, uf, ufree)

    def recover(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tau [N m], v+ [m/s], generalized impulse J^T c [N s]) for impulses ``c`` (m,)."""
        p = self.problem
        return _recover_kernel(
            p.Minv,
            p.actuated,
            self.L,
            self.tau0,
            self.fstar,
            float(p.dt),
            self.J,
            np.ascontiguousarray(c, dtype=np.float64),
            NO_ARENA,
        )


@njit(cache=True)
def _coulomb_rows(N: np.ndarray, S: np.ndarray, T: np.ndarray, D: np.ndarray,
                  ar) -> np.ndarray:
    """J = [N; F], F rows contact-major ``D[j, 0] S_i + D[j, 1] T_i`` (ContactProblem.pyramid),
    from the arena ``ar``."""
    nc, nv = N.shape
    k = D.shape[0]
    J = _ar.floats_2d(ar, nc * (1 + k), nv)
    for i in range(nc):
        for c in range(nv):
            J[i, c] = N[i, c]
        for j in range(k):
            r = nc + i * k + j
            for c in range(nv):
                J[r, c] = D[j, 0] * S[i, c] + D[j, 1] * T[i, c]
    return J


@njit(cache=True)
def _assemble_lcp(H: np.ndarray, Jv0: np.ndarray, phi: np.ndarray, dt: float, mu: np.ndarray,
                  k: int, ar) -> tuple[np.ndarray, np.ndarray]:
    """LCP (64): Q = [[H, [0; E]], [mu, -E^T, 0]], q = [J v0 + (phi/dt; 0); 0] (from the
    arena ``ar``)."""
    nc = phi.shape[0]
    m = nc * (1 + k)
    n = m + nc
    Q = _ar.floats_2d_zero(ar, n, n)
    for i in range(m):
        for j in range(m):
            Q[i, j] = H[i, j]
    for i in range(nc):
        e0 = nc + i * k
        for j in range(k):
            Q[e0 + j, m + i] = 1.0       # E (55)
            Q[m + i, e0 + j] = -1.0      # -E^T (56)
        Q[m + i, i] = mu[i]              # mu (56)
    q = _ar.floats_zero(ar, n)
    for i in range(m):
        q[i] = Jv0[i]
    for i in range(nc):
        q[i] += phi[i] / dt
    return Q, q


@leaf_kernel
def _model_residuals(J: np.ndarray, v_next: np.ndarray, phi: np.ndarray, dt: float,
                     mu: np.ndarray, z: np.ndarray, k: int) -> tuple[float, float]:
    """(54)-(56) re-evaluated at the returned v+ (not from the LCP matrix):
    (max complementarity product min(|a|,|b|), max negativity)."""
    nc = phi.shape[0]
    m = nc * (1 + k)
    comp = 0.0
    neg = 0.0
    for i in range(m + nc):
        neg = max(neg, -z[i])
    for i in range(nc):
        wn = phi[i] / dt
        for c in range(v_next.shape[0]):
            wn += J[i, c] * v_next[c]
        comp = max(comp, min(abs(z[i]), abs(wn)))
        neg = max(neg, -wn)
        lam = z[m + i]
        sb = 0.0
        for j in range(k):
            r = nc + i * k + j
            wf = lam
            for c in range(v_next.shape[0]):
                wf += J[r, c] * v_next[c]
            comp = max(comp, min(abs(z[r]), abs(wf)))
            neg = max(neg, -wf)
            sb += z[r]
        wl = mu[i] * z[i] - sb
        comp = max(comp, min(abs(lam), abs(wl)))
        neg = max(neg, -wl)
    return comp, neg


_D_CACHE: dict[int, np.ndarray] = {}


def pyramid_directions(k: int) -> np.ndarray:
    """(k, 2) edge directions ``(cos, sin)(2 pi j / k)``, as in :meth:`ContactProblem.pyramid`."""
    D = _D_CACHE.get(k)
    if D is None:
        ang = 2.0 * np.pi * np.arange(k) / k
        D = np.stack([np.cos(ang), np.sin(ang)], axis=1)
        D[np.abs(D) < 1e-15] = 0.0
        D.setflags(write=False)
        _D_CACHE[k] = D
    return D


def build_coulomb_lcp(
    problem: ContactProblem, k: int | None = None
) -> tuple[np.ndarray, np.ndarray, ReducedDynamics, np.ndarray]:
    """Assemble the LCP (64) for ``problem`` with a k-edge pyramid.

    Returns:
        (Q, q, reduced, D): LCP matrix ((k+2) nc square), vector, the :class:`ReducedDynamics`
        for the rows ``J = [N; F]`` and the (k, 2) edge directions of the pyramid.
        Variable order: ``[c_N (nc), beta (nc*k, contact-major), lambda (nc)]``.
    """
    kk = int(problem.friction_edges if k is None else k)
    D = pyramid_directions(kk)
    J = _coulomb_rows(problem.N, problem.S, problem.T, D, NO_ARENA)
    red = ReducedDynamics.build(problem, J)
    Q, q = _assemble_lcp(red.H, red.Jv0, problem.phi, float(problem.dt), problem.mu, kk,
                         NO_ARENA)
    return Q, q, red, D


def _warm_mask(mstate: MethodState, ids: tuple, kk: int) -> np.ndarray | None:
    prev = mstate.data.get("lcp_coulomb_basic")
    if not prev or mstate.data.get("lcp_coulomb_k") != kk:
        return None
    nc = len(ids)
    m = nc * (1 + kk)
    mask = np.zeros(m + nc, dtype=bool)
    any_known = False
    for i, cid in enumerate(ids):
        b = prev.get(cid)
        if b is None:
            continue
        any_known = True
        mask[i] = b[0]
        mask[nc + i * kk : nc + (i + 1) * kk] = b[1 : 1 + kk]
        mask[m + i] = b[1 + kk]
    return mask if any_known and mask.any() else None


def _store_basic(mstate: MethodState, ids: tuple, kk: int, basic: np.ndarray) -> None:
    nc = len(ids)
    m = nc * (1 + kk)
    mstate.data["lcp_coulomb_k"] = kk
    mstate.data["lcp_coulomb_basic"] = {
        cid: np.concatenate([[basic[i]], basic[nc + i * kk : nc + (i + 1) * kk], [basic[m + i]]])
        for i, cid in enumerate(ids)
    }


def _mindiff(
    problem: ContactProblem,
    Q: np.ndarray,
    q: np.ndarray,
    red: ReducedDynamics,
    kk: int,
    x0: np.ndarray,
    tol: float,
    max_pivots: int | None,
) -> tuple[np.ndarray | None, int, int]:
    """Alg. 3 (MINDIFF), enumerated per contact.

    Every subset of contacts (the recursion of Alg. 3 puts each contact's variables either in
    the non-basic (force-carrying) set or forces them to zero) defines a sub-LCP (Alg. 3, line 8)
    that is solved with Lemke; a sub-solution is kept only if it also solves the full LCP (64)
    (excluded contacts: ``N v+ + phi/dt >= 0``, with ``lambda_i = max(0, -min F_i v+)``).
    Among all such solutions the one with torques closest (Euclidean) to ``x0`` (the previous
    tick's torques) is returned. Cost: 2^nc Lemke solves.

    Returns (z or None, number of valid solutions, total pivots).
    """
    nc = problem.nc
    m = nc * (1 + kk)
    best, best_err, nvalid, pivots = None, np.inf, 0, 0
    scale = max(1.0, float(np.max(np.abs(q))))
    for r in range(nc + 1):
        for sub in itertools.combinations(range(nc), r):
            idx = []
            for i in sub:
                idx.append(i)
                idx.extend(range(nc + i * kk, nc + (i + 1) * kk))
                idx.append(m + i)
            z = np.zeros(Q.shape[0])
            if idx:
                ia = np.asarray(idx)
                sol = solve_lcp(
                    Q[np.ix_(ia, ia)], q[ia], max_pivots=max_pivots, tol=tol, regularize=False
                )
                pivots += sol.pivots
                if not sol.ok:
                    continue
                z[ia] = sol.z
            # complete lambda of the excluded contacts and check the full LCP
            w = Q @ z + q
            for i in range(nc):
                if i in sub:
                    continue
                wf = w[nc + i * kk : nc + (i + 1) * kk]
                z[m + i] = max(0.0, -float(np.min(wf)))
            if lcp_residual(Q, q, z) > tol * scale:
                continue
            nvalid += 1
            tau, _, _ = red.recover(z[:m])
            err = float(np.linalg.norm(tau - x0))
            if err < best_err:
                best, best_err = z, err
    return best, nvalid, pivots


def solve_lcp_coulomb(
    problem: ContactProblem,
    mstate: MethodState,
    *,
    friction_edges: int | None = None,
    warm_start: bool = True,
    max_pivots: int | None = None,
    tol: float = 1e-9,
    regularize: bool = True,
    mindiff: bool = False,
    max_mindiff_contacts: int = 6,
    mindiff_overflow: str = "lemke",
    sticking_correction: bool = False,
    sticking_gap: float = 1e-6,
    min_norm: bool = False,
    min_norm_tol: float = MIN_NORM_TOL,
    **_unused: Any,
) -> ContactResult:
    """Contact-aware inverse dynamics with Coulomb friction, LCP (64) by Lemke (Sec. 5).

    Args:
        problem: validated problem with ``nc >= 1``.
        mstate: warm-start memory (previous Lemke basis per contact identity, previous torques).
        friction_edges: pyramid edges k (even >= 4); default ``problem.friction_edges``.
        warm_start: start Lemke from the previous tick's basis (contacts matched by identity;
            unmatched contacts start with ``w`` basic). Sec. 5.3 warns that this often needs
            *more* pivots than a cold start; ``stats.iterations`` reports the pivots.
        max_pivots: Lemke pivot limit per attempt (default 50 * LCP size + 10).
        tol: LCP acceptance tolerance relative to ``max |q|``.
        regularize: Tikhonov fallback ``Q + eps I`` (flag ``regularized``).
        mindiff: use Alg. 3 (MINDIFF): all contact subsets are enumerated (2^nc Lemke solves)
            and the LCP solution whose torques are closest to the previous tick's torques is
            returned (smallest torques on a cold start).
        max_mindiff_contacts: MINDIFF is only run for ``nc <=`` this bound.
        mindiff_overflow: beyond the bound: ``"lemke"`` (default) solve with plain Lemke and
            record ``stats.info["mindiff"] = "skipped"``, or ``"error"`` -> ValueError.
        sticking_correction: first replace the desired accelerations by the nearest ones the
            touching contacts (``phi <= sticking_gap`` [m]) realize while sticking (Sec. 4.5
            QP; :func:`~wbc_dynamics.contact.consistency.sticking_consistent_problem`); flag
            ``inconsistent_corrected``, ``consistent=False`` when that changed them.
        min_norm: among the LCP solutions with Lemke's v+, return the minimum-norm impulses
            (:func:`min_norm_coulomb_kernel`; flag ``min_norm``, or ``min_norm_failed`` with
            Lemke's vertex kept). ``min_norm_tol`` [m/s]: separation / slip speed below which
            a contact counts as touching / sticking (default :data:`MIN_NORM_TOL`).

    Returns:
        ContactResult; ``stats.iterations`` = Lemke pivots, ``stats.residual`` = LCP violation
        ``max(-z, -w, min(|z|, |w|))`` [N s or m/s], ``stats.info`` holds ``lcp_status``,
        ``regularization``, ``complementarity``, ``negativity`` and (MINDIFF) ``mindiff_solutions``.

    Fallback: if Lemke fails even with regularization (ray termination / pivot limit), the
    documented :func:`~wbc_dynamics.contact.dispatch.fallback_result` is returned (previous
    torques or contact-free inverse dynamics, zero contact forces) flagged ``fallback`` (and
    ``iteration_limit`` for the pivot limit).
    """
    kk = int(problem.friction_edges if friction_edges is None else friction_edges)
    if kk < 4 or kk % 2:
        raise ValueError(f"lcp_coulomb: friction_edges must be even and >= 4, got {kk}")
    if mindiff_overflow not in ("lemke", "error"):
        raise ValueError("lcp_coulomb: mindiff_overflow must be 'lemke' or 'error'")
    if max_pivots is not None and not (isinstance(max_pivots, int | np.integer)
                                       and max_pivots >= 0):
        raise ValueError(f"lcp_coulomb: max_pivots must be an int >= 0 or None, got "
                         f"{max_pivots!r}")
    for name, val in (("tol", tol), ("sticking_gap", sticking_gap),
                      ("min_norm_tol", min_norm_tol)):
        if not np.isfinite(val):
            raise ValueError(f"lcp_coulomb: {name} must be finite, got {val!r}")
    nc = problem.nc
    ids = tuple(problem.contact_ids)
    D = pyramid_directions(kk)
    stats = SolverStats(method="lcp_coulomb")
    info: dict[str, Any] = {"friction_edges": kk, "lcp_size": nc * (kk + 2)}
    z_given = np.zeros(0)
    use_mindiff = mindiff
    if mindiff and nc > max_mindiff_contacts:
        if mindiff_overflow == "error":
            raise ValueError(
                f"lcp_coulomb: MINDIFF is limited to max_mindiff_contacts="
                f"{max_mindiff_contacts} contacts, got nc={nc}"
            )
        info["mindiff"] = "skipped"
        use_mindiff = False
    if use_mindiff:
        z, nvalid, piv = _mindiff_solution(problem, mstate, kk, tol, max_pivots,
                                           sticking_correction, sticking_gap)
        info["mindiff"] = "used"
        info["mindiff_solutions"] = nvalid
        stats.iterations = piv
        if z is not None:
            z_given = z
            stats.warm_start_used = mstate.data.get("tau") is not None
    warm = _warm_mask(mstate, ids, kk) if warm_start and not z_given.size else None
    options = CoulombSolveOptions(
        D=np.array(D), sticking_correction=bool(sticking_correction),
        sticking_gap=float(sticking_gap),
        min_pivot=min_pivot(problem, 100.0), min_norm=bool(min_norm),
        min_norm_tol=float(min_norm_tol), tol=float(tol), regularize=bool(regularize),
        max_pivots=-1 if max_pivots is None else int(max_pivots))
    warm_given = warm is not None
    if warm is None:
        warm = np.zeros(nc * (kk + 2), dtype=np.bool_)
    sol = coulomb_solve_kernel(contact_arrays(problem), warm, warm_given, z_given, options,
                               NO_ARENA)
    if sol.code == _NOT_PD:  # solve's documented fallback (as for any LinAlgError)
        raise np.linalg.LinAlgError(
            "ContactProblem.Minv: actuated block P M^-1 P^T is not positive definite")
    stats.iterations += int(sol.pivots)
    if not z_given.size:
        stats.warm_start_used = bool(sol.warm_used)
        info["lcp_status"] = STATUS_NAMES[int(sol.lcp_status)]
        info["regularization"] = float(sol.regularization)
    flags = flag_names(sol.bits, COULOMB_FLAGS)
    if sol.code == _NON_FINITE:  # as solve's net for a non-finite result: the fallback alone
        return fallback_result(problem, "lcp_coulomb", mstate.data.get("tau"),
                               "non-finite result")
    change = 0.0
    if sol.bits & FLAG_CORRECTED:  # the problem solved (and its fallback's) has the corrected qdd
        change = float(np.max(np.abs(sol.qdd - problem.qdd_des)))
        problem = dataclasses.replace(problem, qdd_des=sol.qdd.copy())
    if sol.code != SOLVED:
        res = fallback_result(problem, "lcp_coulomb", mstate.data.get("tau"),
                              f"Lemke: {STATUS_NAMES[int(sol.lcp_status)]}")
        if sol.lcp_status == PIVOT_LIMIT:
            res.stats.add_flag("iteration_limit")
        res.stats.iterations = stats.iterations
        res.stats.info.update(info)
        for flag in ("inconsistent_corrected", "sticking_correction_failed"):
            if flag in flags:  # the sticking correction's
                res.stats.add_flag(flag)
    else:
        stats.flags = flags
        stats.residual = (float(sol.residual) if not z_given.size
                          else lcp_residual(sol.Q, sol.q, sol.z))
        comp, neg = _model_residuals(sol.J, sol.v_next, problem.phi, float(problem.dt),
                                     problem.mu, sol.z, kk)
        info["complementarity"] = comp
        info["negativity"] = neg
        stats.info = info
        _store_basic(mstate, ids, kk, sol.basic)
        imp = np.stack([sol.c_n, sol.c_s, sol.c_t], axis=1)
        mstate.contact_ids = ids
        mstate.impulses = imp
        mstate.active_ids = tuple(cid for i, cid in enumerate(ids) if sol.z[i] > 0.0)
        res = ContactResult.from_impulses(problem, sol.tau, imp, sol.v_next, stats)
    if sol.bits & FLAG_CORRECTED:
        res.stats.info["qdd_corrected"] = problem.qdd_des.copy()
        res.stats.info["qdd_correction"] = change
        res.consistent = False
    return res


def _mindiff_solution(problem: ContactProblem, mstate: MethodState, kk: int, tol: float,
                      max_pivots: int | None, sticking_correction: bool,
                      sticking_gap: float) -> tuple[np.ndarray | None, int, int]:
    """The MINDIFF variant's LCP solution (Alg. 3, :func:`_mindiff`, enumerated in Python: 2^nc
    Lemke solves) for the problem :func:`coulomb_solve_kernel` then solves with it as
    ``z_given``: the sticking-corrected one if that option is set. Returns (z or None,
    number of valid solutions, total pivots)."""
    if sticking_correction:
        problem = sticking_consistent_problem(problem, sticking_gap)[0]
    Q, q, red, _D = build_coulomb_lcp(problem, kk)
    prev_tau = mstate.data.get("tau")
    x0 = prev_tau if (prev_tau is not None and prev_tau.shape == (problem.nu,)) else np.zeros(
        problem.nu)
    return _mindiff(problem, Q, q, red, kk, x0, tol, max_pivots)


@njit(cache=True)
def min_norm_coulomb_kernel(J, N, phi, dt, mu, free, c, v_next, k, tol, ar):
    """Minimum-norm LCP (64) impulses with the same v+ (indeterminate contact).

    At a fixed ``v+`` the LCP conditions leave free exactly the impulses of the contacts that
    touch (``N v+ + phi/dt <= tol``) and stick (every edge velocity ``|F_j v+| <= tol``): any
    ``c_N >= 0`` and edge impulses ``beta >= 0`` with ``1^T beta <= mu c_N`` that keep the
    unactuated rows of eq. (37) (``J_f^T c``) unchanged. Separating contacts keep zero, sliding
    ones Lemke's impulses (on the cone boundary, opposing the slip). Among these the minimum of
    ``|c_N|^2 + |beta|^2`` is returned (compiled dual Newton,
    :func:`~wbc_dynamics.contact.consistency.min_norm_impulse_kernel`, with the cone slack as a
    variable of weight 1e-6); the torques then follow from eq. (90). ``J`` = [N; F] (rows of
    the contact variables), ``c``: (nc (1 + k),) impulses ``[c_N; beta]`` (contact-major edges)
    at ``v_next``; ``tol`` [m/s]. Returns (impulses (nc (1 + k),), converged); results and
    temporaries from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`).
    """
    nc = N.shape[0]
    nv = N.shape[1]
    free_c = _ar.ints(ar, nc)
    ns = 0
    for i in range(nc):
        wn = phi[i] / dt
        for col in range(nv):
            wn += N[i, col] * v_next[col]
        slip = 0.0
        for j in range(k):
            sv = 0.0
            for col in range(nv):
                sv += J[nc + i * k + j, col] * v_next[col]
            slip = max(slip, abs(sv))
        if wn <= tol and slip <= tol:
            free_c[ns] = i
            ns += 1
    out = _ar.floats_copy(ar, c)
    if ns == 0:
        return out, True
    nvar = ns * (k + 1)
    var = _ar.ints(ar, nvar)
    for r in range(ns):
        i = free_c[r]
        var[r * (k + 1)] = i
        for j in range(k):
            var[r * (k + 1) + 1 + j] = nc + i * k + j
    nf = free.shape[0]
    ncol = nvar + ns
    A = _ar.floats_2d_zero(ar, nf + ns, ncol)
    for col in range(nvar):
        for f in range(nf):
            A[f, col] = J[var[col], free[f]]
    x0 = _ar.floats(ar, ncol)
    for col in range(nvar):
        x0[col] = c[var[col]]
    for r in range(ns):  # mu c_N - 1^T beta - s = 0
        i = free_c[r]
        base = r * (k + 1)
        A[nf + r, base] = mu[i]
        sb = 0.0
        for j in range(k):
            A[nf + r, base + 1 + j] = -1.0
            sb += c[nc + i * k + j]
        A[nf + r, nvar + r] = -1.0
        x0[nvar + r] = mu[i] * c[i] - sb
    b = _ar.floats(ar, nf + ns)  # A x0
    for r in range(nf + ns):
        s = 0.0
        for col in range(ncol):
            s += A[r, col] * x0[col]
        b[r] = s
    sw = _ar.floats(ar, ncol)  # sqrt of the weights: 1, slack 1e-6
    for col in range(ncol):
        sw[col] = 1.0 if col < nvar else np.sqrt(1e-6)
    amax = 0.0
    xmax = 0.0
    for col in range(ncol):
        for r in range(nf + ns):
            A[r, col] /= sw[col]
            amax = max(amax, abs(A[r, col]))
        xmax = max(xmax, abs(x0[col] * sw[col]))
    kind = _ar.ints(ar, ncol)  # every variable >= 0
    for col in range(ncol):
        kind[col] = 1
    scale = max(amax * xmax, 1e-300)
    # np.int64: typed, not a literal (one compiled min_norm_impulse_kernel; see contact/tick.py)
    y, _, ok = min_norm_impulse_kernel(A, b, kind, np.int64(50), 1e-10 * scale, ar)
    if not ok:
        return out, False
    for col in range(nvar):
        out[var[col]] = y[col] / sw[col]
    return out, True


def warmup_problem() -> ContactProblem:
    """A one-contact, two-dof problem (a point mass on the ground, one actuated dof) on which
    the Coulomb methods' warm-ups run every code path."""
    return ContactProblem(
        dt=1e-3,
        Minv=np.eye(2),
        h=np.array([0.0, 9.81]),
        v=np.zeros(2),
        actuated=np.array([0]),
        free=np.array([1]),
        qdd_des=np.zeros(1),
        N=np.array([[0.0, 1.0]]),
        S=np.array([[1.0, 0.0]]),
        T=np.array([[0.0, 0.0]]),
        phi=np.zeros(1),
        mu=np.array([0.5]),
    ).validate()


def warmup() -> None:
    """Compile the kernels of this module (and Lemke) on a tiny problem."""
    from .lemke import warmup as lemke_warmup

    lemke_warmup()
    p = warmup_problem()
    ms = MethodState()
    solve_lcp_coulomb(p, ms)            # cold
    solve_lcp_coulomb(p, ms)            # warm basis path
    solve_lcp_coulomb(p, MethodState(), min_norm=True)
    solve_lcp_coulomb(p, MethodState(), mindiff=True)
