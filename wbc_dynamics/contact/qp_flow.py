"""The compiled flow of ``qp_coulomb`` / ``qp_noslip`` (Zapolsky & Drumwright, Sec. 6): everything
after the problem is assembled, on the named arrays :class:`~.dispatch.ContactArrays`, options
:class:`~.qp_records.QPOptions` and buffers :class:`~.qp_records.QPWork`.

:func:`qp_prepare` (the Sec. 4.5 correction, the reduced dynamics of Sec. 6.2.1, Stage I's
data), :func:`qp_stage2` (Stage I's result, the Stage II data of eqs. (102)-(112)),
:func:`qp_finish` (Stage II's result, torques by eq. (90), the flag bits); with the active-set
solver :func:`qp_active_set` runs all three around the dense QP solver of :mod:`.dense_qp`
(warm-started active sets: :func:`_guess_active`, :func:`_keep_active`); with OSQP the Python
glue of :mod:`.qp_osqp` solves between the stages. The compiled tick (:mod:`.qp_tick`) and
``solve`` (:mod:`.qp`) run these same kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.linalg import left_nullspace
from ..kernels.separate import call_separately
from .dense_qp import dense_qp_kernel
from .lcp_coulomb import _recover_into, _reduce_into
from .noslip_kernels import _alg1
from .qp_kernels import (
    _accepted,
    _constraint_row,
    _finite_vector,
    _linear_term_varies,
    _project_into,
    _stage1_data,
    _stage2_data,
    _stage2_data_from_basis,
    stage1_active_set,
)
from .qp_records import (
    _CORRECTED,
    _ITER_LIMIT,
    _MIN_NORM,
    _ROWS_DROPPED,
    _S_BITS,
    _S_IT,
    _S_KEY2_NC,
    _S_KEY2_R,
    _S_KIND,
    _S_LAST_NC,
    _S_NC,
    _S_R,
    _S_S1,
    _S_S2,
    _S_SEP,
    _S_WARM_USED,
    _STICKING_FAILED,
    TICK_STAGE1_FAILED,
)
from .tick_base import TICK_GENERIC, TICK_OK, _sticking_qdd

__all__ = ["qp_prepare", "qp_stage2", "qp_finish", "qp_active_set"]


@njit(cache=True)
def qp_prepare(p, o, w, cont_ok, map_warm):
    """Corrections, reduced dynamics and Stage I's data of the assembled problem ``p``
    (:class:`ContactArrays`) with the options ``o`` (:class:`QPOptions`) into ``w``
    (:class:`QPWorkRecord`): the sticking correction (Sec. 4.5 QP), the ``friction_gap`` rows
    (eq. (34)), ``qp_noslip``'s scale-aware rank rule on the tangential rows (Alg. 1's pivots),
    the reduced dynamics (eqs. (85)-(94)), Stage I's linear term (eq. (98) or the contact
    velocity) and proximal weight, then Stage I's dense problem (active-set solver) or its OSQP
    values in the pattern of the contact count.

    OSQP only: ``cont_ok`` -- the solvers may continue from the previous tick; ``map_warm`` --
    map the previous forces by slot into ``w.x0`` when the contact set changed. Returns (code,
    fresh, found): code ``TICK_GENERIC`` if the actuated block of M^-1 is singular; ``fresh``
    -- Stage I needs a fresh setup; ``found`` -- ``w.x0[:3 nc]`` holds a mapped warm start.
    """
    nc = p.N.shape[0]
    dt = o.dt
    N = p.N
    S = p.S
    T = p.T
    phi = p.phi
    mu = p.mu
    nv = N.shape[1]
    nu = p.act.shape[0]
    m = 3 * nc
    bits = 0
    qdd = w.qdd
    if o.sticking_correction:  # Sec. 4.5 QP on the touching contacts
        st = call_separately(_sticking_qdd, (p.Minv, p.h, p.v, p.act, p.qdd_des, N, S, T, phi, dt,
                                             o.sticking_gap, o.min_pivot, qdd, p.arena))
        if st == 1:
            bits |= _CORRECTED
        elif st == 2:
            bits |= _STICKING_FAILED
    else:
        for a in range(nu):
            qdd[a] = p.qdd_des[a]
    n_sep = 0
    for i in range(nc):  # eq. (34): no friction at separated candidates
        w.sep[i] = o.friction_gap >= 0.0 and phi[i] > o.friction_gap
        if w.sep[i]:
            n_sep += 1
            for c in range(nv):
                S[i, c] = 0.0
                T[i, c] = 0.0
    if o.tangential_floor > 0.0:  # Alg. 1's scale-aware rank rule on the tangential rows
        _p, _q, _r, nG, kind, idx = call_separately(_alg1, (p.Minv, p.act, S, T, 0.0, 0.0,
                                                            o.tangential_floor, p.arena))
        for i in range(nc):
            w.dropped[i, 0] = False
            w.dropped[i, 1] = False
            s_nz = False
            t_nz = False
            for c in range(nv):
                s_nz = s_nz or S[i, c] != 0.0
                t_nz = t_nz or T[i, c] != 0.0
            w.dropped[i, 0] = s_nz
            w.dropped[i, 1] = t_nz
        if nG >= 0:
            for j in range(nG):
                if kind[j] > 0:
                    w.dropped[idx[j], kind[j] - 1] = False
        for i in range(nc):
            if w.dropped[i, 0]:
                bits |= _ROWS_DROPPED
                for c in range(nv):
                    S[i, c] = 0.0
            if w.dropped[i, 1]:
                bits |= _ROWS_DROPPED
                for c in range(nv):
                    T[i, c] = 0.0
    else:
        for i in range(nc):
            w.dropped[i, 0] = False
            w.dropped[i, 1] = False
    J = w.J[:m]
    for i in range(nc):
        for c in range(nv):
            J[i, c] = N[i, c]
            J[nc + i, c] = S[i, c]
            J[2 * nc + i, c] = T[i, c]
    H = w.H[:m * m].reshape((m, m))
    Jf = w.Jf[:m]
    Jv0 = w.Jv0[:m]
    uf = w.uf[:m]
    ok = call_separately(_reduce_into, (p.Minv, p.h, p.v, p.act, p.free, qdd, dt, J, w.L, w.tau0,
                                        w.fstar, w.v0, w.Kff, Jf, H, Jv0, uf, w.ufree, w.G,
                                        w.rscratch, w.JK[:m]))
    if not ok:  # P M^-1 P^T singular: solve raises LinAlgError (its fallback)
        return TICK_GENERIC, False, False
    # Stage I linear term [m/s]: eq. (98) or the contact velocity (STAGE1_OBJECTIVES)
    lin = w.lin[:m]
    for i in range(m):
        lin[i] = uf[i]
    if o.contact_velocity:
        for i in range(m):
            lin[i] = Jv0[i]
        for i in range(nc):
            lin[i] += phi[i] / dt
    for i in range(m):
        w.dlin[i] = lin[i] - uf[i]
    hmax = 1.0
    for i in range(m):
        hmax = max(hmax, H[i, i])
    delta = o.stage1_reg * hmax
    w.fstate[0] = delta
    for j in range(m):
        w.qlin[j] = lin[j] / dt
    if o.active_set:  # the dense problem (the active-set solver's)
        ncon = 2 * nc + (nc * o.k if o.coulomb else 0)
        P1 = w.P1d[:m * m].reshape((m, m))
        A1 = w.A1d[:ncon * m].reshape((ncon, m))
        for i in range(m):
            w.q1[i] = lin[i] / dt
            for j in range(m):
                P1[i, j] = H[i, j]
            P1[i, i] += delta  # H + delta I
        for r in range(nc):
            for c in range(m):
                A1[r, c] = H[r, c]
        for r in range(nc, ncon):  # C's rows: three entries each
            for c in range(m):
                A1[r, c] = 0.0
            i, ca, cb, cc = _constraint_row(r - nc, nc, o.k, mu)
            A1[r, i] = ca
            A1[r, nc + i] = cb
            A1[r, 2 * nc + i] = cc
        for i in range(ncon):
            w.l1[i] = (-phi[i] / dt - Jv0[i]) / dt if i < nc else 0.0
        w.state[_S_NC] = nc
        w.state[_S_BITS] = bits
        w.state[_S_SEP] = 1 if n_sep > 0 else 0
        return TICK_OK, False, False
    Hp = H.copy()
    for i in range(m):
        Hp[i, i] += delta
    p0, p1 = w.p1_off[nc], w.p1_off[nc + 1]
    a0, a1 = w.a1_off[nc], w.a1_off[nc + 1]
    Px, qv, Ax, lo = _stage1_data(H, Hp, lin, Jv0, phi, dt, mu, o.k, o.coulomb,
                                  w.p1_rows[p0:p1], w.p1_cols[p0:p1], w.a1_rows[a0:a1],
                                  w.a1_cols[a0:a1])
    _ar.copy_prefix(w.p1x, Px, p1 - p0)
    _ar.copy_prefix(w.a1x, Ax, a1 - a0)
    _ar.copy_prefix(w.l1, lo, lo.shape[0])
    for j in range(m):
        w.q1[j] = qv[j]
    # the Stage I key (contact identities in row order, k, dense) against the previous tick's
    same = cont_ok and w.state[_S_LAST_NC] == nc
    if same:
        for i in range(nc):
            if w.last_slots[i] != p.slot[i]:
                same = False
                break
    found = False
    if not same and map_warm:  # previous forces by slot (contact identity)
        for j in range(m):
            w.x0[j] = 0.0
        for i in range(nc):
            sl = p.slot[i]
            if w.prev_known[sl]:
                w.x0[i] = w.prev_f[sl, 0]
                w.x0[nc + i] = w.prev_f[sl, 1]
                w.x0[2 * nc + i] = w.prev_f[sl, 2]
                found = True
    w.state[_S_NC] = nc
    w.state[_S_BITS] = bits
    w.state[_S_SEP] = 1 if n_sep > 0 else 0
    return TICK_OK, not same, found


@njit(cache=True)
def qp_stage2(p, o, w, xa, sa, xb, sb, second, cont_ok):
    """Stage I's result (the re-centred pass ``xb`` if it ran (``second``) and solved, else
    ``xa``), its projection ``f0`` and torques (eq. (90)), the nullspace W of Stage I's optimal
    set and Stage II's data (eqs. (102)-(112)): the dense problem (active-set solver) or OSQP's
    values.

    Returns (code, r, cont2): ``TICK_STAGE1_FAILED`` if Stage I was not accepted; r = the
    nullity (dim W; 0: Stage II skipped, -1: Stage II off); ``cont2`` (OSQP): Stage II
    continues from the previous solve of this key (warm start ``w.x2ws[:r]``), else a fresh
    setup.
    """
    nc = w.state[_S_NC]
    m = 3 * nc
    x = xa
    s = sa
    if second and sb == 1 and _finite_vector(xb, m):
        x = xb
        s = sb
    if not (_finite_vector(x, m) and _accepted(s)):
        w.state[_S_LAST_NC] = 0  # both solvers and their keys are dropped
        w.state[_S_KEY2_R] = -1
        return TICK_STAGE1_FAILED, 0, False
    if s != 1:
        w.state[_S_BITS] |= _ITER_LIMIT
    for i in range(nc):  # the Stage I key of this tick
        w.last_slots[i] = p.slot[i]
    w.state[_S_LAST_NC] = nc
    mu = p.mu
    f0 = w.f0[:m]
    _project_into(x, mu, o.k, o.coulomb, f0, w.gscratch)
    w.state[_S_R] = -1
    if not o.stage2:
        return TICK_OK, -1, False
    J = w.J[:m]
    dt = o.dt
    c0 = w.c[:m]
    for j in range(m):
        c0[j] = dt * f0[j]
    tau1 = w.tau1
    _recover_into(p.Minv, p.act, w.L, w.tau0, w.fstar, dt, J, c0, tau1, w.vnext, w.gen,
                  w.rscratch)
    nf = w.Jf.shape[1]
    # Stage I's optimal set: J_f^T f fixed, and for the contact-velocity objective also its
    # linear term where it varies along ker J_f^T (_linear_term_varies)
    ws = w.s2_fwork
    fix_lin = False
    r = -1  # the nullity once w.W holds the basis
    if o.contact_velocity:
        fix_lin, r_f = _linear_term_varies(w.Jf[:m], w.dlin[:m], o.rank_tol,
                                           o.sticking_gap / dt, ws, w.W)
        if not fix_lin:  # J_fix = J_f: w.W already holds its nullspace (the same QR)
            r = r_f
    nfix = nf + 1 if fix_lin else nf
    beta = ws[m * nfix:m * nfix + nfix + 1]
    JW = ws[m * nfix + nfix + 1:]
    ncon = nc + (nc * o.k if o.coulomb else 0)
    if o.active_set:  # the dense problem straight into the solver's C-ordered prefixes
        if r < 0:
            Jfix = ws[:m * nfix].reshape((m, nfix))  # (overwritten by the nullspace's QR)
            for i in range(m):
                for c in range(nf):
                    Jfix[i, c] = w.Jf[i, c]
                if fix_lin:
                    Jfix[i, nf] = w.dlin[i]
            r = call_separately(left_nullspace, (Jfix, o.rank_tol, beta, w.W))
        call_separately(_stage2_data_from_basis, (w.W, r, J, p.act, f0, tau1, mu, o.k, o.coulomb,
                                                  o.stage2_reg, o.active_set, JW, w.P2d, w.q2,
                                                  w.A2d, w.l2))
        w.state[_S_R] = r
        return TICK_OK, r, False
    Jfix = ws[:m * nfix].reshape((m, nfix))
    for i in range(m):
        for c in range(nf):
            Jfix[i, c] = w.Jf[i, c]
        if fix_lin:
            Jfix[i, nf] = w.dlin[i]
    W, P2, q2, A2, l2 = call_separately(_stage2_data, (Jfix, J, p.act, f0, tau1, mu, o.k,
                                                       o.coulomb, o.stage2_reg, o.rank_tol,
                                                       o.active_set))
    r = W.shape[1]
    w.state[_S_R] = r
    if r == 0:
        return TICK_OK, 0, False
    pos = 0
    for j in range(r):  # dense upper triangle, column-major (_dense_upper_pattern)
        for i in range(j + 1):
            w.p2x[pos] = P2[i, j]
            pos += 1
    for c in range(r):
        w.q2[c] = q2[c]
        for row in range(ncon):
            w.a2x[c * ncon + row] = A2[row, c]
    # contiguous: the products below are BLAS calls, as numpy's in the OSQP path (same
    # rounding); filled by element loops (as arena.copy_prefix: no numba slice copy)
    Wc = w.W[:m * r].reshape((m, r))
    for i in range(m):
        for j in range(r):
            Wc[i, j] = W[i, j]
    for row in range(ncon):
        w.l2[row] = l2[row]
    cont2 = cont_ok and w.state[_S_KEY2_R] == r and w.state[_S_KEY2_NC] == nc
    if cont2:
        for i in range(nc):
            if w.key2_slots[i] != p.slot[i]:
                cont2 = False
                break
    if cont2:  # previous forces projected on the current optimal set (basis independent)
        _ar.copy_prefix(w.x2ws, Wc.T @ (w.ffull[:m] - f0), r)
    return TICK_OK, r, cont2


@njit(cache=True)
def qp_finish(p, o, w, x2, s2):
    """Stage II's result (``x2`` with status ``s2``; ``w.f0`` if it was not accepted), its
    projection, ``tau`` and ``v+`` (eqs. (90), (37)) into ``w.tau1`` / ``w.vnext``, the impulses
    [N s] into ``w.imp_raw`` (as solved) and ``w.cloc`` (the friction gap's and the rank rule's
    inert rows reported as zero) and the forces by slot for the next tick. Returns (code, flag
    bits); code TICK_GENERIC if the result is not finite."""
    nc = w.state[_S_NC]
    m = 3 * nc
    r = w.state[_S_R]
    bits = w.state[_S_BITS]
    mu = p.mu
    f = w.f[:m]
    for j in range(m):
        f[j] = w.f0[j]
    if r > 0:
        if _finite_vector(x2, r) and _accepted(s2):
            Wx = w.c[:m]  # (free until the impulses below) W x2 by BLAS, as the OSQP
            np.dot(w.W[:m * r].reshape((m, r)), x2, Wx)  # path's numpy product: same rounding
            for i in range(m):
                f[i] += Wx[i]
            _project_into(f, mu, o.k, o.coulomb, f, w.gscratch)
            if s2 != 1:
                bits |= _ITER_LIMIT
            w.state[_S_KEY2_NC] = nc
            w.state[_S_KEY2_R] = r
            for i in range(nc):
                w.key2_slots[i] = p.slot[i]
            _ar.copy_prefix(w.ffull, f, m)
        else:  # Stage II failed: keep Stage I's forces; its OSQP solver is dropped
            bits |= _ITER_LIMIT
            w.state[_S_KEY2_R] = -1
        bits |= _MIN_NORM
    dt = o.dt
    c = w.c[:m]
    for j in range(m):
        c[j] = dt * f[j]
    tau = w.tau1
    v_next = w.vnext
    _recover_into(p.Minv, p.act, w.L, w.tau0, w.fstar, dt, w.J[:m], c, tau, v_next, w.gen,
                  w.rscratch)
    for a in range(tau.shape[0]):
        if not np.isfinite(tau[a]):
            return TICK_GENERIC, bits
    for j in range(v_next.shape[0]):
        if not np.isfinite(v_next[j]):
            return TICK_GENERIC, bits
    cN = w.cloc[0, :nc]
    cS = w.cloc[1, :nc]
    cT = w.cloc[2, :nc]
    for i in range(nc):
        cN[i] = c[i]
        cS[i] = c[nc + i]
        cT[i] = c[2 * nc + i]
    for i in range(nc):
        w.imp_raw[i, 0] = cN[i]
        w.imp_raw[i, 1] = cS[i]
        w.imp_raw[i, 2] = cT[i]
        if w.sep[i]:  # inert rows: reported as exactly zero (eq. (37) of the original rows)
            cS[i] = 0.0
            cT[i] = 0.0
        if w.dropped[i, 0]:
            cS[i] = 0.0
        if w.dropped[i, 1]:
            cT[i] = 0.0
        if not (np.isfinite(cN[i]) and np.isfinite(cS[i]) and np.isfinite(cT[i])):
            return TICK_GENERIC, bits
    w.prev_known[:] = False  # this tick's forces by slot (OSQP's mapped warm start)
    for i in range(nc):
        sl = p.slot[i]
        w.prev_known[sl] = True
        w.prev_f[sl, 0] = f[i]
        w.prev_f[sl, 1] = f[nc + i]
        w.prev_f[sl, 2] = f[2 * nc + i]
    return TICK_OK, bits



@njit(cache=True)
def _guess_active(p, w, nc, k, coulomb, stage, guess):
    """The previous tick's active row sides of stage 1 / 2 mapped by candidate slot into
    ``guess`` (the rows of both stages are per contact: Stage I non-penetration row i, bound row
    nc + i, facets 2 nc + i k + j; Stage II bound row i, facets nc + i k + j). Returns True if
    any candidate had a known active set."""
    kk = k if coulomb else 0
    found = False
    base = 2 * nc if stage == 1 else nc
    ncon = base + nc * kk
    for r in range(ncon):
        guess[r] = 0
    for i in range(nc):
        sl = p.slot[i]
        if not w.act_known[sl, stage - 1]:
            continue
        found = True
        if stage == 1:
            guess[i] = w.prev_act1[sl, 0]
            guess[nc + i] = w.prev_act1[sl, 1]
            for j in range(kk):
                guess[base + i * kk + j] = w.prev_act1[sl, 2 + j]
        else:
            guess[i] = w.prev_act2[sl, 0]
            for j in range(kk):
                guess[base + i * kk + j] = w.prev_act2[sl, 1 + j]
    return found


@njit(cache=True)
def _keep_active(p, w, nc, k, coulomb, stage1_solved, stage2_solved):
    """This tick's active row sides by candidate slot (the next tick's guess)."""
    kk = k if coulomb else 0
    for sl in range(w.act_known.shape[0]):
        w.act_known[sl, 0] = False
        w.act_known[sl, 1] = False
    for i in range(nc):
        sl = p.slot[i]
        w.act_known[sl, 0] = stage1_solved
        w.prev_act1[sl, 0] = w.act1[i]
        w.prev_act1[sl, 1] = w.act1[nc + i]
        for j in range(kk):
            w.prev_act1[sl, 2 + j] = w.act1[2 * nc + i * kk + j]
        if stage2_solved:
            w.act_known[sl, 1] = True
            w.prev_act2[sl, 0] = w.act2[i]
            for j in range(kk):
                w.prev_act2[sl, 1 + j] = w.act2[nc + i * kk + j]


@njit(cache=True)
def qp_active_set(p, o, w, warm):
    """The whole method with the exact active-set solver (``qp_solver="active_set"``) on the
    assembled problem ``p``: :func:`qp_prepare`, Stage I by :func:`stage1_active_set` (the
    proximal pass and its exact finish for the kinetic-energy objective), :func:`qp_stage2`,
    Stage II by :func:`~wbc_dynamics.contact.dense_qp.dense_qp_kernel`, :func:`qp_finish`.
    ``warm``: start each stage from the previous active row sides mapped by slot.

    Returns (code, flag bits): ``TICK_GENERIC`` (singular actuated block, or a non-finite
    result), ``TICK_STAGE1_FAILED`` (Stage I status in ``w.state[_S_S1]``) or ``TICK_OK``; the
    statistics in ``w.state`` (``_S_IT``, ``_S_KIND``, ``_S_S1``, ``_S_S2``, ``_S_R``,
    ``_S_WARM_USED``).
    """
    nc = p.N.shape[0]
    w.state[_S_IT] = 0
    w.state[_S_KIND] = 0
    w.state[_S_S1] = 0
    w.state[_S_S2] = 0
    w.state[_S_R] = -1
    w.state[_S_WARM_USED] = 0
    code, _fresh, _found = call_separately(qp_prepare, (p, o, w, warm, np.bool_(False)))
    if code != TICK_OK:
        return code, 0
    k = o.k
    m = 3 * nc
    ncon1 = 2 * nc + (nc * k if o.coulomb else 0)
    P1 = w.P1d[:m * m].reshape((m, m))
    A1 = w.A1d[:ncon1 * m].reshape((ncon1, m))
    guess = w.warm[:ncon1]
    use = warm and _guess_active(p, w, nc, k, o.coulomb, np.int64(1), guess)
    w.state[_S_WARM_USED] = 1 if use else 0
    x1 = w.x1[:m]
    xb = w.x1b[:m]
    # Stage I: the proximal pass and its exact finish; guess receives the first pass's active
    # set, the next tick's
    s1, it1, kind = call_separately(stage1_active_set, (
        w.H[:m * m].reshape((m, m)), P1, w.q1[:m], A1, w.l1[:ncon1], w.u_inf[:ncon1],
        w.fstate[0], guess, use, not o.contact_velocity, o.recenter, o.max_iter, o.qp_tol,
        o.qp_dep_tol, w.qp_fwork, w.qp_iwork, x1, xb, w.q1r[:m], w.y[:ncon1], w.act1[:ncon1],
        guess))
    w.state[_S_IT] = it1
    w.state[_S_KIND] = kind
    w.state[_S_S1] = s1
    for r in range(ncon1):
        w.act1[r] = guess[r]
    code, r, _cont2 = call_separately(qp_stage2, (p, o, w, x1, s1, xb, s1, np.bool_(True),
                                                  warm))
    if code != TICK_OK:
        for sl in range(w.act_known.shape[0]):
            w.act_known[sl, 0] = False
            w.act_known[sl, 1] = False
        return code, 0
    s2 = np.int64(0)
    x2 = w.x2[:max(r, 0)]
    if r > 0:
        ncon2 = nc + (nc * k if o.coulomb else 0)
        P2 = w.P2d[:r * r].reshape((r, r))
        A2 = w.A2d[:ncon2 * r].reshape((ncon2, r))
        guess2 = w.warm[:ncon2]
        use2 = warm and _guess_active(p, w, nc, k, o.coulomb, np.int64(2), guess2)
        s2, it2 = call_separately(dense_qp_kernel, (P2, w.q2[:r], A2, w.l2[:ncon2],
                                                    w.u_inf[:ncon2], guess2, use2, o.max_iter,
                                                    o.qp_tol, o.qp_dep_tol, w.qp_fwork,
                                                    w.qp_iwork, x2, w.y[:ncon2],
                                                    w.act2[:ncon2]))
        w.state[_S_IT] += it2
        w.state[_S_S2] = s2
        if s2 != 1:  # an unsolved Stage II keeps Stage I's forces (its last iterate is dual,
            s2 = np.int64(0)  # not primal, feasible)
    code, bits = call_separately(qp_finish, (p, o, w, x2, s2))
    if code == TICK_OK:
        _keep_active(p, w, nc, k, o.coulomb, s1 == 1, r > 0 and s2 == 1)
    return code, bits
