"""OSQP around the compiled ``qp_coulomb`` / ``qp_noslip`` stages (``qp_solver="osqp"``; Stark
et al., "OSQP: an operator splitting solver for quadratic programs", 2020).

:class:`OSQPStages` solves Stage I and Stage II between :func:`~.qp_flow.qp_prepare`,
:func:`~.qp_flow.qp_stage2` and :func:`~.qp_flow.qp_finish` (dense formulation; the solver
objects kept per contact count and updated in place); :class:`OSQPSolver` is one such solver on
a fixed sparsity pattern (:func:`osqp_stage1_patterns`); :class:`_QPSolver` and
:func:`_settings` serve the lifted sparse formulation (:mod:`.qp_sparse`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import osqp
import scipy.sparse as sp

from .qp_records import (
    _INF,
    _OSQP_INF,
    _S_KEY2_R,
    _S_LAST_NC,
    _SOLVED,
    TICK_STAGE1_FAILED,
    QPLayout,
    QPWork,
)
from .tick_base import TICK_OK

__all__ = ["osqp_stage1_patterns", "OSQPSolver", "OSQPStages"]


# --------------------------------------------------------------------------- OSQP wrapper
def _dense_upper_pattern(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CSC pattern of a full upper triangle: (indptr, indices, rows, cols)."""
    cols = np.concatenate([np.full(j + 1, j) for j in range(n)]) if n else np.zeros(0, int)
    rows = np.concatenate([np.arange(j + 1) for j in range(n)]) if n else np.zeros(0, int)
    indptr = np.concatenate([[0], np.cumsum(np.arange(1, n + 1))]).astype(np.int64)
    return indptr, rows.astype(np.int64), rows, cols


def _pattern_from_mask(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSC pattern (indptr, rows, cols) of the True entries of ``mask`` (column-major)."""
    cols, rows = np.nonzero(mask.T)
    indptr = np.zeros(mask.shape[1] + 1, dtype=np.int64)
    np.add.at(indptr, cols + 1, 1)
    indptr = np.cumsum(indptr)
    return indptr, rows.astype(np.int64), cols.astype(np.int64)


class _QPSolver:
    """An OSQP solver with a fixed sparsity pattern (dense blocks stored with explicit zeros).

    Updates go straight to the compiled OSQP object (``update_data_mat`` / ``update_data_vec``)
    so the matrices are changed in place (numeric refactorization only, no new setup).
    """

    def __init__(self, Pd: np.ndarray, qv: np.ndarray, Ad: np.ndarray, Amask: np.ndarray,
                 lo: np.ndarray, up: np.ndarray, settings: dict[str, Any],
                 Pmask: np.ndarray | None = None) -> None:
        n = Pd.shape[0]
        self.n, self.ncon = n, Ad.shape[0]
        if Pmask is None:
            p_ptr, p_idx, self.p_rows, self.p_cols = _dense_upper_pattern(n)
        else:
            p_ptr, self.p_rows, self.p_cols = _pattern_from_mask(np.triu(Pmask))
            p_idx = self.p_rows
        a_ptr, self.a_rows, self.a_cols = _pattern_from_mask(Amask)
        P = sp.csc_matrix((Pd[self.p_rows, self.p_cols], p_idx, p_ptr), shape=(n, n))
        A = sp.csc_matrix((Ad[self.a_rows, self.a_cols], self.a_rows, a_ptr),
                          shape=(self.ncon, n))
        self.solver = osqp.OSQP()
        self.solver.setup(P, qv, A, lo, up, **settings)
        self._s = self.solver._solver     # compiled solver object (in-place updates)

    def gather_p(self, Pd: np.ndarray) -> np.ndarray:
        return Pd[self.p_rows, self.p_cols]

    def gather_a(self, Ad: np.ndarray) -> np.ndarray:
        return Ad[self.a_rows, self.a_cols]

    def update(self, Px: np.ndarray, qv: np.ndarray, Ax: np.ndarray, lo: np.ndarray,
               up: np.ndarray | None = None) -> None:
        """New values on the same pattern (``up=None``: upper bounds unchanged)."""
        self._s.update_data_vec(q=qv, l=np.maximum(lo, -_OSQP_INF),
                                u=None if up is None else np.minimum(up, _OSQP_INF))
        self._s.update_data_mat(P_x=Px, P_i=None, A_x=Ax, A_i=None)

    def update_q(self, qv: np.ndarray) -> None:
        """New linear term only (matrices and bounds unchanged)."""
        self._s.update_data_vec(q=qv, l=None, u=None)

    def warm_start(self, x: np.ndarray) -> None:
        self._s.warm_start(np.ascontiguousarray(x, dtype=np.float64), None)

    def solve(self) -> tuple[int, int, np.ndarray | None]:
        """(status_val, iterations, x or None if not finite)."""
        self._s.solve()
        inf = self._s.info
        x = np.array(self._s.solution.x, dtype=np.float64)
        if x.shape[0] != self.n or not np.all(np.isfinite(x)):
            x = None
        return int(inf.status_val), int(inf.iter), x


def _settings(eps: float, max_iter: int, warm: bool, polish: bool) -> dict[str, Any]:
    return dict(
        verbose=False,
        eps_abs=eps,
        eps_rel=eps,
        max_iter=max_iter,
        polishing=polish,
        polish_refine_iter=5,
        warm_starting=warm,
        adaptive_rho=True,
        eps_prim_inf=1e-9,
        eps_dual_inf=1e-9,
        check_termination=10,
    )



# --------------------------------------------------------------------------- the OSQP variant
def osqp_stage1_patterns(cap: int, max_nc: int, k: int, coulomb: bool
                         ) -> tuple[tuple, dict[int, tuple]]:
    """Stage I's OSQP sparsity patterns of the contact counts ``1..max_nc`` (the dense upper
    triangle of P; A = the nc non-penetration rows, dense, over the constraint block of
    :class:`QPLayout`): the concatenated (rows, cols, offsets) of P and A for
    :func:`new_qp_work` and per count the CSC structure (m, P indptr, P indices, A indptr,
    A indices)."""
    p_rows, p_cols, a_rows, a_cols = [], [], [], []
    p_off = np.zeros(cap + 2, dtype=np.int64)
    a_off = np.zeros(cap + 2, dtype=np.int64)
    pat1: dict[int, tuple] = {}
    for nc in range(1, max_nc + 1):
        m = 3 * nc
        lay = QPLayout(coulomb, nc, k, m, nc)
        p_ptr, p_idx, pr, pc = _dense_upper_pattern(m)
        mask = np.vstack([np.ones((nc, m), dtype=bool), lay.constraint_mask()])
        a_ptr, ar, ac = _pattern_from_mask(mask)
        pat1[nc] = (m, p_ptr, p_idx, a_ptr, ar)
        p_rows.append(pr)
        p_cols.append(pc)
        a_rows.append(ar)
        a_cols.append(ac)
        p_off[nc + 1] = p_off[nc] + pr.shape[0]
        a_off[nc + 1] = a_off[nc] + ar.shape[0]
    p_off[max_nc + 2:] = p_off[max_nc + 1]
    a_off[max_nc + 2:] = a_off[max_nc + 1]

    def cat(parts):
        return (np.ascontiguousarray(np.concatenate(parts), dtype=np.int64) if parts
                else np.zeros(0, dtype=np.int64))

    return (cat(p_rows), cat(p_cols), p_off, cat(a_rows), cat(a_cols), a_off), pat1


class OSQPSolver:
    """One OSQP solver on a fixed pattern with the value views it is updated from (dense
    blocks stored with explicit zeros; updates change the matrices in place: a numeric
    refactorization, no new setup)."""

    __slots__ = ("s", "px", "q", "ax", "lo", "zx", "zy", "rho0")

    def __init__(self, n: int, p_ptr, p_idx, px, a_ptr, a_idx, ax, q, lo,
                 settings: dict[str, Any]) -> None:
        ncon = lo.shape[0]
        P = sp.csc_matrix((px.copy(), p_idx, p_ptr), shape=(n, n))
        A = sp.csc_matrix((ax.copy(), a_idx, a_ptr), shape=(ncon, n))
        solver = osqp.OSQP()
        solver.setup(P, q.copy(), A, lo.copy(), np.full(ncon, _INF), **settings)
        self.s = solver._solver
        self.px, self.q, self.ax, self.lo = px, q, ax, lo
        self.zx, self.zy = np.zeros(n), np.zeros(ncon)
        self.rho0 = float(self.s.get_settings().rho)

    def update(self) -> None:
        """The values in the views, same pattern (upper bounds unchanged)."""
        s = self.s
        s.update_data_vec(q=self.q, l=self.lo, u=None)
        s.update_data_mat(P_x=self.px, P_i=None, A_x=self.ax, A_i=None)

    def update_q(self, q: np.ndarray) -> None:
        """A new linear term only."""
        self.s.update_data_vec(q=q, l=None, u=None)

    def warm_start(self, x: np.ndarray) -> None:
        self.s.warm_start(x, None)

    def reset(self, x0) -> None:
        """The state of a fresh setup on the current data: initial rho, iterates ``x0`` (or 0)
        and zero duals."""
        self.s.update_rho(self.rho0)
        self.s.warm_start(self.zx if x0 is None else x0, self.zy)

    def solve(self) -> tuple[int, np.ndarray, int]:
        """(OSQP status value, solution x (not checked), iterations)."""
        s = self.s
        s.solve()
        info = s.info
        return int(info.status_val), s.solution.x, int(info.iter)


class OSQPStages:
    """The OSQP solves between the compiled stages (``qp_solver="osqp"``, dense formulation):
    Stage I of the contact count ``nc`` from ``w``'s values (:func:`qp_prepare`), its
    re-centred pass, Stage II of nullity r (:func:`qp_stage2`).

    ``per_count`` (the compiled tick): one Stage I solver per contact count and one Stage II
    solver per (count, nullity), set up on first use and afterwards only updated in place; a
    contact-set change resets the solver to a fresh setup's state (OSQP recomputes the Ruiz
    scaling on every update; ``rho`` and the iterates reset: a fresh setup to rounding error,
    same iteration counts). Otherwise (``solve``) a contact-set change sets the solver up anew.
    While the set is unchanged both continue from OSQP's previous iterates.
    """

    def __init__(self, w: QPWork, k: int, coulomb: bool, pat1: dict[int, tuple],
                 set1: dict[str, Any], set2: dict[str, Any], recenter: bool,
                 per_count: bool) -> None:
        self.w, self.k, self.coulomb, self.pat1 = w, k, coulomb, pat1
        self.set1, self.set2, self.recenter, self.per_count = set1, set2, recenter, per_count
        self.s1: dict[int, OSQPSolver] = {}
        self.s2: dict[tuple[int, int], OSQPSolver] = {}
        self._v1: dict[int, tuple] = {}
        self._v2: dict[tuple[int, int], tuple] = {}
        self.setup1 = self.setup2 = False
        self.status2 = 0

    def views1(self, nc: int) -> tuple:
        """Stage I's value views of ``nc`` contacts: (px, q, ax, lo, q re-centred, x0)."""
        views = self._v1.get(nc)
        if views is None:
            w = self.w
            m = 3 * nc
            ncon = 2 * nc + (nc * self.k if self.coulomb else 0)
            views = self._v1[nc] = (w.p1x[:w.p1_off[nc + 1] - w.p1_off[nc]], w.q1[:m],
                                    w.a1x[:w.a1_off[nc + 1] - w.a1_off[nc]], w.l1[:ncon],
                                    w.q1r[:m], w.x0[:m])
        return views

    def solver1(self, nc: int, fresh: bool, found: bool) -> OSQPSolver:
        """Stage I's solver of ``nc`` contacts holding this tick's data."""
        px, q, ax, lo, _qr, x0 = self.views1(nc)
        x0 = x0 if (fresh and found) else None
        sv = self.s1.get(nc)
        self.setup1 = sv is None or (fresh and not self.per_count)
        if self.setup1:
            m, p_ptr, p_idx, a_ptr, a_idx = self.pat1[nc]
            sv = self.s1[nc] = OSQPSolver(m, p_ptr, p_idx, px, a_ptr, a_idx, ax, q, lo,
                                          self.set1)
            if x0 is not None:
                sv.warm_start(x0)
            return sv
        sv.update()
        if fresh:
            sv.reset(x0)
        return sv

    def solver2(self, nc: int, r: int, cont: bool) -> OSQPSolver:
        """Stage II's solver of (``nc`` contacts, nullity ``r``) holding this tick's data."""
        key = (nc, r)
        sv = self.s2.get(key)
        self.setup2 = sv is None or (not cont and not self.per_count)
        if self.setup2:
            w = self.w
            ncon = nc + (nc * self.k if self.coulomb else 0)
            views = (w.p2x[:r * (r + 1) // 2], w.q2[:r], w.a2x[:ncon * r], w.l2[:ncon],
                     w.x2ws[:r])
            self._v2[key] = views
            p_ptr, p_idx, _pr, _pc = _dense_upper_pattern(r)
            a_ptr = np.arange(0, ncon * r + 1, ncon, dtype=np.int64)
            a_idx = np.tile(np.arange(ncon, dtype=np.int64), r)
            sv = self.s2[key] = OSQPSolver(r, p_ptr, p_idx, views[0], a_ptr, a_idx, views[2],
                                           views[1], views[3], self.set2)
            return sv
        sv.update()
        if cont:
            sv.warm_start(self._v2[key][4])
        else:
            sv.reset(None)
        return sv

    def run(self, nc: int, fresh: bool, found: bool, recenter_q, stage2, finish, cont_ok: bool
            ) -> tuple[int, tuple | None, int, int, int, int]:
        """Both stages after :func:`qp_prepare` returned (``fresh``, ``found``) for ``nc``
        contacts: ``recenter_q(x, qlin, delta, out)`` (:func:`recenter_q`),
        ``stage2(xa, sa, xb, sb, second, cont_ok)`` and ``finish(x2, s2)`` the compiled stages
        on this problem. Returns (code, ``finish``'s result (None if Stage I failed), the first
        pass's status, the accepted pass's status, iterations, nullity); Stage II's status in
        ``status2``, setups in ``setup1`` / ``setup2``."""
        w = self.w
        views = self.views1(nc)
        s1 = self.solver1(nc, fresh, found)
        sa, xa, it = s1.solve()
        xb, sb, second = xa, 0, False
        delta = float(w.fstate[0])
        if self.recenter and delta > 0.0 and sa == _SOLVED:
            if recenter_q(xa, w.qlin, delta, w.q1r):
                s1.update_q(views[4])
                s1.warm_start(xa)
                sb, xb, itb = s1.solve()
                it += itb
                second = True
        status1 = sb if second and sb == _SOLVED else sa
        code, r, cont2 = stage2(xa, sa, xb, sb, second, cont_ok)
        if code == TICK_STAGE1_FAILED:
            return code, None, sa, status1, it, 0
        x2, s2 = xa, 0
        self.setup2 = False
        if r > 0:
            sv2 = self.solver2(nc, r, cont2)
            s2, x2, it2 = sv2.solve()
            it += it2
        self.status2 = s2
        res = finish(x2, s2)
        if res[0] != TICK_OK:  # non-finite: fresh solvers next time
            w.state[_S_LAST_NC] = 0
            w.state[_S_KEY2_R] = -1
        return res[0], res, sa, status1, it, r
