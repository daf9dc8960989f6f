"""``qp_coulomb`` and ``qp_noslip``: convex two-stage inverse dynamics
(Zapolsky & Drumwright, Sec. 6).

One module for one method: the compiled kernels that build and finish its two QPs serve both the
Python stages here and the compiled tick (:mod:`.qp_tick`), and a kernel's numba cache entry and
separate compilation belong to the module that defines it, so they stay beside their callers.

Stage I (eqs. (69)-(74)): maximal kinetic-energy dissipation without normal complementarity::

    min 1/2 v+^T M v+   s.t.  N v+ >= -phi/dt (70),  c_N >= 0, beta >= 0 (71),
                              mu_i c_Ni >= 1^T beta_i (72),  v+ from eq. (37) (73),
                              P v+ = qdot_des (74)

solved in the *reduced form* of Secs. 6.2.1-6.2.2: the equality constraints (73)-(74) are removed
by substitution (``tau`` and the actuated part of ``v+`` eliminated, eqs. (88)-(94)), leaving a QP
in the contact impulses only. With the notation of :mod:`.lcp_coulomb`
(``J`` = rows of the contact variables, ``K_ff = (M_ff)^-1`` computed from ``M^-1`` only,
``v+_f = v0_f + K_ff J_f^T c``) the objective (97)-(98) is::

    1/2 c^T (Z^T A Z) c + c^T (Z^T A p + Z^T B v+_q),   Z^T A Z = J_f K_ff J_f^T,
    Z^T A p + Z^T B v+_q = J_f (f*_f - M^-1_fa G^-1 f*_a)

(``A = M_ff`` and ``B = M_fa`` of eq. (83) are never formed: ``A^-1 = K_ff`` and
``A^-1 B = -M^-1_fa G^-1`` follow from block inversion of ``M^-1``). Constraint (99) is
``J_N v0 + H_N c >= -phi/dt``. Torques follow from eq. (90) and ``v+`` from eq. (37).

Stage II (eqs. (102)-(112)): among all Stage I optima, the minimum-norm torques. The Stage I
objective depends on ``c`` only through ``Z c`` (``A`` is positive definite), so the optimal set is
``{z0 + W w feasible}`` with ``W`` an orthonormal basis of ``ker(Z^T A Z) = ker(J_f^T)``
(computed by a column-pivoted Householder QR of ``J_f``); on it ``Z W = 0``, so ``v+`` and
constraints (108)-(109) are unchanged (the paper's remark after eq. (111)) and
``tau(z0 + W w) = tau(z0) - J_a^T W w`` (eq. (105) simplified with ``J_f^T W = 0``). Stage II
is therefore the QP (107), (110), (111)::

    min_w 1/2 |tau(z0) - J_a^T W w|^2 + delta/2 |w|^2
    s.t.  (z0 + W w)_N >= 0,   (z0 + W w) inside the friction pyramid

``delta`` (option ``stage2_reg``, default 1e-9 relative to the largest diagonal entry) only makes
the *impulses* unique (minimum distance to the Stage I impulses); the torques of the Stage II
optimum are unique anyway (minimum-norm point of a convex set).

Friction pyramid representation: the paper writes (72)/(101)/(111) with k non-negative edge
variables per contact (V-representation, ``mu f_N >= 1^T beta``). Here the *same* pyramid is
written with the contact-frame components ``(f_N, f_S, f_T)`` as variables and its k facets as
linear inequalities (H-representation: ``cos(th_j) f_S + sin(th_j) f_T <= mu cos(pi/k) f_N``,
``th_j = (2j+1) pi / k``), i.e. exactly the set ``{sum_j beta_j d_j : beta >= 0, 1^T beta <=
mu f_N}`` spanned by the edges ``d_j`` of :meth:`ContactProblem.pyramid`. The feasible contact
forces, and hence the optimal ``v+`` and torques, are identical; the facet form avoids the
``k - 2`` redundant edge directions per contact that make the Stage II Hessian singular (opposite
edges that cancel) and roughly halves the number of variables (``3 nc`` instead of ``(1+k) nc``),
which makes OSQP converge several times faster in Stage II.

Solver (option ``qp_solver``, :data:`QP_SOLVERS`). ``"active_set"`` (default): both QPs of the
dense reduced form are solved *exactly* (to rounding, relative feasibility 1e-11) by the compiled
Goldfarb-Idnani dual active-set method of :mod:`.dense_qp`, in force units, warm-started with the
previous tick's active row sides mapped by contact identity (each contact owns its rows:
non-penetration, ``f_N >= 0``, its k facets); a correct guess needs no iteration. The method needs
a strictly convex QP: Stage I is solved with its proximal term and then finished exactly on its
own, only semidefinite Hessian (:func:`stage1_active_set`, below), Stage II is strictly convex by
``stage2_reg``; their degenerate vertices (k + 1 rows through the apex of a contact's pyramid) are
handled by the solver's dependence test, and Stage II drops rows of rounding size
(``_stage2_data``). OSQP, the solver before it, stopped at its iteration limit on 24-39 % of
talos's ``qp_coulomb`` ticks (docs/contact_methods.md). ``"osqp"``: both QPs solved with OSQP in
*force* units (``c = dt f``), warm-started from the previous tick: the OSQP solver objects are kept
in the method state and their matrices updated in place (``update_data_mat`` with the same sparsity
pattern, dense blocks stored with explicit zeros) while the contact set (identities, order, k) is
unchanged; when it changes, the solver is set up again and warm-started with the previous forces
mapped by contact identity. After each solve the impulses are projected onto ``f_N >= 0`` and the
pyramid (clip / radial scaling, a correction of the order of the solver tolerance), and ``tau``,
``v+`` are recomputed from the projected impulses, so eqs. (37) and (38) hold to rounding error and
the pyramid holds exactly.

Formulation (option ``formulation``): ``"dense"`` is the reduced form above (dense
``J_f K_ff J_f^T`` Hessian, dense ``W``), fastest for a few contacts. ``"sparse"`` solves the same
two QPs with the generalized free impulse ``u = J_f^T f`` (nf extra variables, Hessian ``K_ff``)
and, in Stage II, the torque change ``t = J_a^T f`` (nu extra variables) lifted, and Stage II's
optimal set written as ``J_f^T f = J_f^T f0`` (equivalent to ``f0 + W w``): every block is at most
max(nf, nu) wide, so OSQP's KKT factorization stays sparse and the cost grows linearly with the
number of contacts. ``"auto"`` (default) uses dense for ``nc <= sparse_above`` (8).

Stage I adds a tiny proximal term ``delta/2 |f|^2`` (option ``stage1_reg``, default 1e-7 relative
to max diag H): without it the Stage I optimum is a whole face (indeterminacy) and ADMM drifts
along the flat directions (unbounded for the free tangential impulses of ``qp_noslip``); with it
Stage I returns (to O(delta)) the least-norm point of that face, continuous in the data. The
proximal minimizer is not the optimum, though: its objective lies O(delta) above it and, where the
optimal face is thin (directions of curvature comparable to delta), its ``J_f^T f`` is off by far
more than delta |f|; Stage II, whose set ``J_f^T f = J_f^T f0`` depends on that value, then
minimizes over another face (measured on random humanoid states: Stage I up to 4e-7 relative above
the optimum, torques off by up to 3 % of their largest). The active-set solver therefore finishes
Stage I exactly (:func:`stage1_active_set`: a primal active-set method on the unregularized Hessian
from the proximal minimizer, :func:`~wbc_dynamics.contact.dense_qp.psd_finish_kernel`); the torques
then equal those of the optimum certified in extended precision (``test/test_qp_certified.py``). It
does so for the kinetic-energy objective, which is constant along the flat directions (its linear
term lies in the range of ``J_f``). The contact-velocity objective varies along them (the internal
forces), where its exact optimum is a vertex of that linear term, discontinuous in the data (in the
quadruped's closed-loop trot, ``test/test_sim_coulomb_tracking.py``, it predicted single-tick
normal-force spikes of 3.8 m g): its Stage I stays the proximal minimizer, re-centred once (option
``stage1_recenter``), as with OSQP, whose tolerance (``eps``) is the larger error there.

Model note (measured, see docs/contact_methods.md): the Stage I objective (69) is the kinetic
energy of the whole mechanism with the actuated velocities prescribed. When ``qdot_des != 0`` its
gradient w.r.t. the impulses is not the contact velocity (it contains ``-J_f M^-1_fa G^-1
qdot_des`` instead of ``J_a qdot_des``), so the contacts are used to drive the free dofs towards
the kinetic-energy minimizing velocity *within one tick* (impulsive, only limited by friction and
``N v+ >= -phi/dt``). For ``v = 0, qdd_des = 0`` (and whenever ``qdot_des = 0``) the KKT
conditions coincide with those of the LCP (64) without normal complementarity.

``qp_noslip`` is the same with unbounded friction: variables ``[c_N >= 0, c_S, c_T]`` (free), no
pyramid rows (the no-slip variant of the convex model, cf. Sec. 2.3.4 and ID(t_i)_QP,inf of
Sec. 8).

Statistics: ``iterations`` = OSQP iterations of Stage I + Stage II; ``residual`` = max violation
of (70)-(72) at the returned impulses [m/s or N s]; ``info``: ``stage1_status``,
``stage2_status``, ``nullity`` (dim W), ``setup`` (True if an OSQP setup happened),
``noninterpenetration``, ``stage1_objective``; with the active-set solver ``stage1_exact`` (the
Stage I result is the exact optimum, False: the proximal minimizer).

Infeasible Stage I with the active-set solver (it proves it; e.g. the held arm + box grasp,
whose prescribed finger motion the box cannot follow within friction): the tick is solved with
OSQP instead (``info["active_set_stage1"]`` names the status), whose iterate at its limit is the
compromise the grasp loops were tuned with; the compiled tick leaves such a tick to this path.

Fallback: a Stage I failure (infeasible, non-convex, or no finite iterate) returns
:func:`~wbc_dynamics.contact.dispatch.fallback_result` flagged ``fallback`` (``infeasible`` if the
solver reported infeasibility, ``iteration_limit`` if it ran out of iterations without a usable
iterate). An iteration limit with a finite iterate is accepted (projected) and flagged
``iteration_limit``. A Stage II failure keeps the Stage I solution (flag ``iteration_limit``,
``info["stage2_status"]``); with the active-set solver only a solved Stage II is used (its
iteration-limited iterate is dual, not primal, feasible).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import osqp
import scipy.sparse as sp
from numba import njit

from ..kernels.arena import NO_ARENA
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import left_nullspace
from ..kernels.separate import call_separately
from .consistency import mark_sticking_correction, sticking_consistent_problem
from .dense_qp import DenseQPWork, dense_qp_kernel, psd_finish_kernel, solve_dense_qp
from .dispatch import fallback_result
from .lcp_coulomb import ReducedDynamics
from .noslip_kernels import _alg1, min_pivot
from .problem import ContactProblem, ContactResult, MethodState, SolverStats

__all__ = ["solve_qp_coulomb", "solve_qp_noslip", "QPLayout", "STAGE1_OBJECTIVES", "QP_SOLVERS",
           "warmup"]

#: Stage I objectives: ``"kinetic_energy"`` = eq. (69) as written (gradient w.r.t. the impulses
#: ``J_f (v+_f + M_ff^-1 M_fa qdot_des)``); ``"contact_velocity"`` = the same QP with the linear
#: term replaced so that its gradient is the contact velocity ``J v+``, with ``phi/dt`` added on
#: the normal rows (maximal dissipation at the contacts: the KKT conditions are those of the
#: complementarity-free model (11)/(29)-(33) with the actuated velocities prescribed, and a
#: candidate that is still apart gets normal force only when (70) binds). Both objectives
#: coincide when ``qdot_des = 0`` and ``phi = 0``. The active-set solver finishes Stage I
#: exactly for the kinetic-energy objective only (module docstring).
STAGE1_OBJECTIVES = ("kinetic_energy", "contact_velocity")

#: QP solvers of both stages: ``"active_set"`` = the exact dense Goldfarb-Idnani method of
#: :mod:`.dense_qp` (reduced dense formulation only; warm-started with the previous active set);
#: ``"osqp"`` = OSQP (ADMM to tolerance ``eps``; dense or lifted sparse formulation).
QP_SOLVERS = ("active_set", "osqp")

#: the active-set solver's relative primal feasibility and linear-dependence tolerances
ACTIVE_SET_TOL = 1e-11
ACTIVE_SET_DEP_TOL = 1e-11

_INF = np.inf
_OSQP_INF = 1e30
# OSQP status values (osqp >= 1.0, osqp.interface.SolverStatus)
_SOLVED, _SOLVED_INACCURATE = 1, 2
_PRIMAL_INF, _PRIMAL_INF_INACC = 3, 4
_MAX_ITER, _TIME_LIMIT = 7, 8
_NOT_PD = 9
_ACCEPT = (_SOLVED, _SOLVED_INACCURATE, _MAX_ITER, _TIME_LIMIT)


@dataclass
class QPLayout:
    """Variable/constraint layout of one contact set.

    Variables (force units [N]): ``[f_N (nc), f_S (nc), f_T (nc)]`` for both methods;
    ``f_N >= 0``. Coulomb: the k-edge pyramid (72) in facet form, ``k`` rows per contact
    ``mu_i cos(pi/k) f_Ni - cos(th_j) f_Si - sin(th_j) f_Ti >= 0``, ``th_j = (2j+1) pi / k``
    (contact-major), which is exactly the set ``{sum_j beta_j d_j : beta >= 0,
    sum beta <= mu f_N}`` of eq. (72) with the edges ``d_j`` of :meth:`ContactProblem.pyramid`.
    """

    coulomb: bool
    nc: int
    k: int
    m: int
    nb: int

    @classmethod
    def make(cls, problem: ContactProblem, coulomb: bool, k: int) -> QPLayout:
        nc = problem.nc
        return cls(coulomb, nc, k, 3 * nc, nc)

    @property
    def ncon(self) -> int:
        """Rows of C: nc bound rows, then nc*k facet rows (coulomb)."""
        return self.nb + (self.nc * self.k if self.coulomb else 0)

    def constraint_block(self, mu: np.ndarray) -> np.ndarray:
        """C with ``C f >= 0``."""
        return _constraint_matrix(mu, self.nc, self.k, self.coulomb, False)

    def constraint_mask(self) -> np.ndarray:
        """Fixed sparsity pattern of C (independent of mu and of zero trigonometric values)."""
        return _constraint_matrix(np.ones(self.nc), self.nc, self.k, self.coulomb,
                                  True) != 0.0

    def to_local(self, f: np.ndarray) -> np.ndarray:
        """(nc, 3) (n, s, t) components of the variables ``f``."""
        nc = self.nc
        return np.column_stack([f[:nc], f[nc:2 * nc], f[2 * nc:]])

    def rows_of_contact(self, i: int) -> np.ndarray:
        nc = self.nc
        return np.array([i, nc + i, 2 * nc + i])


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
    """:func:`_stage2_data_into` on fresh buffers (the general path and the OSQP tick).

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


# --------------------------------------------------------------------------- lifted (sparse) form
def _sparse_stage1(problem: ContactProblem, lay: QPLayout, red: ReducedDynamics,
                   st: _QPSolver | None, settings: dict[str, Any], delta: float,
                   dlin: np.ndarray) -> tuple[_QPSolver, bool]:
    """Stage I with the generalized free impulse ``u = J_f^T f`` lifted as nf extra variables.

    Same QP as the reduced form: ``1/2 u^T K_ff u + ufree^T u / dt + delta/2 |f|^2`` subject to
    ``u = J_f^T f``, ``(J_N,f K_ff) u >= lbN`` and C f >= 0; every block is at most nf (= 6)
    wide, so the KKT system stays sparse and OSQP's cost grows linearly with the contacts.
    Returns (solver, setup_happened).
    """
    nc, m, dt = lay.nc, lay.m, float(problem.dt)
    nf = red.Jf.shape[1]
    n1 = m + nf
    P = np.zeros((n1, n1))
    P[np.arange(m), np.arange(m)] = delta
    P[m:, m:] = red.Kff
    qv = np.concatenate([dlin / dt, red.ufree / dt])
    C = lay.constraint_block(problem.mu)
    ncc = C.shape[0]
    A = np.zeros((nf + nc + ncc, n1))
    A[:nf, :m] = -red.Jf.T
    A[:nf, m:] = np.eye(nf)
    A[nf:nf + nc, m:] = red.Jf[:nc] @ red.Kff
    A[nf + nc:, :m] = C
    lo = np.concatenate([np.zeros(nf), (-problem.phi / dt - red.Jv0[:nc]) / dt, np.zeros(ncc)])
    up = np.concatenate([np.zeros(nf), np.full(nc + ncc, _INF)])
    if st is None:
        Pmask = np.zeros((n1, n1), dtype=bool)
        Pmask[np.arange(m), np.arange(m)] = True
        Pmask[m:, m:] = True
        Amask = np.zeros(A.shape, dtype=bool)
        Amask[:nf, :] = True
        Amask[nf:nf + nc, m:] = True
        Amask[nf + nc:, :m] = lay.constraint_mask()
        return _QPSolver(P, qv, A, Amask, lo, up, settings, Pmask=Pmask), True
    st.update(st.gather_p(P), qv, st.gather_a(A), lo, up)
    return st, False


def _sparse_stage2(problem: ContactProblem, lay: QPLayout, red: ReducedDynamics,
                   f0: np.ndarray, tau1: np.ndarray, st: _QPSolver | None,
                   settings: dict[str, Any], reg: float, Jfix: np.ndarray
                   ) -> tuple[_QPSolver, bool]:
    """Stage II in lifted form: the Stage I optimal set written as ``J_f^T f = J_f^T f0``
    (equivalent to ``f = f0 + W w``, ``W = ker J_f^T``) and the torque change ``t = J_a^T f``
    as nu extra variables: ``min 1/2 |tau(f0) + J_a^T f0 - t|^2 + reg/2 |f - f0|^2``."""
    m = lay.m
    Ja = red.J[:, problem.actuated]
    nu = Ja.shape[1]
    nf = Jfix.shape[1]
    n2 = m + nu
    P = np.zeros((n2, n2))
    P[np.arange(m), np.arange(m)] = reg
    P[np.arange(m, n2), np.arange(m, n2)] = 1.0
    b = tau1 + Ja.T @ f0
    qv = np.concatenate([-reg * f0, -b])
    C = lay.constraint_block(problem.mu)
    ncc = C.shape[0]
    A = np.zeros((nu + nf + ncc, n2))
    A[:nu, :m] = -Ja.T
    A[:nu, m:] = np.eye(nu)
    A[nu:nu + nf, :m] = Jfix.T
    A[nu + nf:, :m] = C
    jf0 = Jfix.T @ f0
    lo = np.concatenate([np.zeros(nu), jf0, np.zeros(ncc)])
    up = np.concatenate([np.zeros(nu), jf0, np.full(ncc, _INF)])
    if st is None:
        Pmask = np.eye(n2, dtype=bool)
        Amask = np.zeros(A.shape, dtype=bool)
        Amask[:nu + nf, :] = True
        Amask[:nu, m:] = np.eye(nu, dtype=bool)
        Amask[nu:nu + nf, m:] = False
        Amask[nu + nf:, :m] = lay.constraint_mask()
        return _QPSolver(P, qv, A, Amask, lo, up, settings, Pmask=Pmask), True
    st.update(st.gather_p(P), qv, st.gather_a(A), lo, up)
    return st, False


# --------------------------------------------------------------------------- the method
def _solve_two_stage(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                     *, friction_edges: int | None = None, stage2: bool = True,
                     warm_start: bool = True, eps: float = 1e-7, max_iter: int = 1500,
                     polish: bool = False, stage2_reg: float = 1e-9,
                     rank_tol: float = 1e-9, stage1_reg: float = 1e-7,
                     stage2_eps: float | None = None, formulation: str = "auto",
                     sparse_above: int = 8, stage1_objective: str = "kinetic_energy",
                     stage1_recenter: bool = True, sticking_correction: bool = False,
                     sticking_gap: float = 1e-6, friction_gap: float | None = None,
                     rank_mass_ratio: float = 0.0, qp_solver: str = "active_set"
                     ) -> ContactResult:
    corrected, change = False, 0.0
    if sticking_correction:
        problem, change, corrected = sticking_consistent_problem(problem, sticking_gap)
    original, sep = problem, None
    if friction_gap is not None:
        if not np.isfinite(friction_gap):
            raise ValueError(f"{method}: friction gap must be finite or None, got "
                             f"{friction_gap!r}")
        sep = problem.phi > friction_gap
        if np.any(sep):  # eq. (34): no friction at separated candidates
            S, T = problem.S.copy(), problem.T.copy()
            S[sep] = 0.0
            T[sep] = 0.0
            problem = dataclasses.replace(problem, S=S, T=T)
        else:
            sep = None
    floor = min_pivot(problem, rank_mass_ratio)
    dropped = None
    if floor > 0.0:  # qp_noslip: the scale-aware rank rule on the free tangential impulses
        dropped = _dropped_tangential(problem, floor)
        if np.any(dropped):
            S, T = problem.S.copy(), problem.T.copy()
            S[dropped[:, 0]] = 0.0
            T[dropped[:, 1]] = 0.0
            problem = dataclasses.replace(problem, S=S, T=T)
        else:
            dropped = None
    res = _solve_two_stage_impl(problem, mstate, method, coulomb, friction_edges=friction_edges,
                                stage2=stage2, warm_start=warm_start, eps=eps,
                                max_iter=max_iter, polish=polish, stage2_reg=stage2_reg,
                                rank_tol=rank_tol, stage1_reg=stage1_reg, stage2_eps=stage2_eps,
                                formulation=formulation, sparse_above=sparse_above,
                                stage1_objective=stage1_objective,
                                stage1_recenter=stage1_recenter, qp_solver=qp_solver,
                                sticking_gap=sticking_gap)
    if sep is not None or dropped is not None:
        # the zeroed rows make those impulses inert; report them as exactly zero so that
        # eq. (37) holds for the original problem too
        imp = res.impulses.copy()
        if sep is not None:
            imp[sep, 1:] = 0.0
        if dropped is not None:
            imp[:, 1:][dropped] = 0.0
            res.stats.add_flag("rows_dropped")
            res.stats.info["rows_dropped"] = int(dropped.sum())
        res = ContactResult.from_impulses(original, res.tau, imp, res.v_next, res.stats,
                                          res.consistent)
    if corrected or change != change:  # applied, or failed (nan)
        mark_sticking_correction(res, problem, change)
    return res


def _dropped_tangential(problem: ContactProblem, floor: float) -> np.ndarray:
    """(nc, 2) bool: the non-zero tangential rows (S_i, T_i) that the scale-aware rank rule of
    ``lcp_noslip``'s Alg. 1 treats as dependent -- in the order S_1, T_1, ..., S_n, T_n, a row
    is kept iff its pivot, the inverse effective mass [1/kg] of its direction once the actuated
    velocities are prescribed (P rows, eq. (38)) and the rows already kept are enforced, exceeds
    ``floor`` = 1 / (rank_mass_ratio * total_mass) (:func:`~.lcp_noslip.min_pivot`). The pivots
    are those of ``J_f K_ff J_f^T`` restricted to the tangential rows, i.e. of the Stage I
    Hessian (Z^T A Z of eq. (97))."""
    _, _, _, nG, kind, idx = _alg1(problem.Minv, problem.actuated, problem.S, problem.T, 0.0,
                                   0.0, floor, NO_ARENA)
    kept = np.zeros((problem.nc, 2), dtype=bool)
    if nG < 0:  # P M^-1 P^T not positive definite: ReducedDynamics.build reports it
        return kept
    for j in range(nG):
        if kind[j] > 0:
            kept[idx[j], kind[j] - 1] = True
    nonzero = np.column_stack([np.any(problem.S != 0.0, axis=1),
                               np.any(problem.T != 0.0, axis=1)])
    return nonzero & ~kept


def _solve_two_stage_impl(problem: ContactProblem, mstate: MethodState, method: str,
                          coulomb: bool, *, friction_edges: int | None, stage2: bool,
                          warm_start: bool, eps: float, max_iter: int, polish: bool,
                          stage2_reg: float, rank_tol: float, stage1_reg: float,
                          stage2_eps: float | None, formulation: str, sparse_above: int,
                          stage1_objective: str, stage1_recenter: bool,
                          qp_solver: str, sticking_gap: float = 1e-6) -> ContactResult:
    if qp_solver not in QP_SOLVERS:
        raise ValueError(f"{method}: qp_solver must be one of {QP_SOLVERS}, got {qp_solver!r}")
    if qp_solver == "active_set" and formulation == "sparse":
        raise ValueError(f"{method}: formulation 'sparse' needs qp_solver 'osqp' (the active-set "
                         "solver works on the dense reduced form)")
    if stage1_objective not in STAGE1_OBJECTIVES:
        raise ValueError(f"{method}: stage1_objective must be one of {STAGE1_OBJECTIVES}, "
                         f"got {stage1_objective!r}")
    if formulation not in ("auto", "dense", "sparse"):
        raise ValueError(f"{method}: formulation must be 'auto', 'dense' or 'sparse', "
                         f"got {formulation!r}")
    nc = problem.nc
    form = formulation if formulation != "auto" else ("dense" if nc <= sparse_above
                                                     else "sparse")
    if qp_solver == "active_set":
        form = "dense"
    dt = float(problem.dt)
    ids = tuple(problem.contact_ids)
    k = int(problem.friction_edges if friction_edges is None else friction_edges)
    if coulomb and (k < 4 or k % 2):
        raise ValueError(f"{method}: friction_edges must be even and >= 4, got {k}")
    key = (ids, k if coulomb else 0, form, qp_solver)
    data = mstate.data
    lay: QPLayout | None = data.get(f"{method}_layout")
    if lay is None or data.get(f"{method}_key") != key:
        lay = QPLayout.make(problem, coulomb, k)
    J = np.concatenate((problem.N, problem.S, problem.T))
    red = ReducedDynamics.build(problem, J)
    m = lay.m
    mu = problem.mu
    stats = SolverStats(method=method)
    info: dict[str, Any] = {"setup": False}
    # linear term of Stage I [m/s]: eq. (98) (kinetic energy, gradient J_f(v+_f + ...)) or the
    # contact velocity without impulses (gradient J v+: maximal dissipation at the contacts)
    if stage1_objective == "kinetic_energy":
        lin = red.uf
    else:  # normal rows: the gap-stabilized velocity N v+ + phi/dt (w of eqs. (54)-(56))
        lin = red.Jv0.copy()
        lin[:nc] += problem.phi / dt
    dlin = lin - red.uf

    # ---------------- Stage I (force units, c = dt f)
    # proximal term delta |f|^2 (option stage1_reg): picks the least-norm point of the Stage I
    # optimal set and keeps ADMM from drifting along its flat directions (free tangential
    # impulses of qp_noslip); it moves the optimum by O(delta |f|), far below eps.
    delta = stage1_reg * max(1.0, float(np.max(np.diag(red.H))))
    Hp = red.H.copy()
    Hp[np.diag_indices(m)] += delta
    st1: _QPSolver | None = data.get(f"{method}_s1")
    if qp_solver == "active_set":
        st1 = None
        # the exact finish for the kinetic-energy objective only (STAGE1_OBJECTIVES)
        s1, it1, x1 = _active_set_stage1(problem, mstate, method, lay, red, Hp, lin, ids,
                                         warm_start, max_iter, delta,
                                         stage1_objective == "kinetic_energy", stage1_recenter,
                                         stats, info)
        if s1 in (_PRIMAL_INF, _NOT_PD):
            # Stage I has no exact solution (e.g. a held grasp whose prescribed finger motion
            # the box cannot follow within friction): OSQP's iterate at its limit is the
            # compromise the closed loops were tuned with, rather than the fallback torques
            res = _solve_two_stage_impl(
                problem, mstate, method, coulomb, friction_edges=friction_edges,
                stage2=stage2, warm_start=warm_start, eps=eps, max_iter=max_iter,
                polish=polish, stage2_reg=stage2_reg, rank_tol=rank_tol, stage1_reg=stage1_reg,
                stage2_eps=stage2_eps, formulation="dense", sparse_above=sparse_above,
                stage1_objective=stage1_objective, stage1_recenter=stage1_recenter,
                qp_solver="osqp", sticking_gap=sticking_gap)
            res.stats.info["active_set_stage1"] = _status_name(s1)
            return res
    elif form == "sparse":
        reuse = st1 is not None and data.get(f"{method}_key") == key and warm_start
        st1, setup = _sparse_stage1(problem, lay, red, st1 if reuse else None,
                                    _settings(eps, max_iter, warm_start, polish), delta, dlin)
        info["setup"] = setup
        if setup and warm_start:
            x0 = _mapped_warm_start(mstate, method, lay, ids)
            if x0 is not None:
                st1.warm_start(np.concatenate([x0, red.Jf.T @ x0]))
                stats.warm_start_used = True
        elif not setup:
            stats.warm_start_used = True
    elif st1 is None or data.get(f"{method}_key") != key or not warm_start:
        C = lay.constraint_block(mu)
        A1 = np.vstack([red.H[:nc], C])
        mask1 = np.vstack([np.ones((nc, m), dtype=bool), lay.constraint_mask()])
        lo1 = np.concatenate([(-problem.phi / dt - red.Jv0[:nc]) / dt, np.zeros(C.shape[0])])
        st1 = _QPSolver(Hp, lin / dt, A1, mask1, lo1, np.full(A1.shape[0], _INF),
                        _settings(eps, max_iter, warm_start, polish))
        info["setup"] = True
        if warm_start:
            x0 = _mapped_warm_start(mstate, method, lay, ids)
            if x0 is not None:
                st1.warm_start(x0)
                stats.warm_start_used = True
    else:
        Px, qv1, Ax, lo1 = _stage1_data(red.H, Hp, lin, red.Jv0, problem.phi, dt, mu, k,
                                        coulomb, st1.p_rows, st1.p_cols, st1.a_rows,
                                        st1.a_cols)
        st1.update(Px, qv1, Ax, lo1)
        stats.warm_start_used = True
    if st1 is not None:
        s1, it1, x1 = st1.solve()
    if st1 is not None and stage1_recenter and delta > 0.0 and x1 is not None \
            and s1 == _SOLVED:
        # second proximal pass centred at the first solution (one proximal-point step): the
        # first pass minimizes obj + delta/2 |f|^2, which moves the optimum by O(delta |f|)
        # -- relative to Stage I objectives of ~1e-4 that is not negligible (measured:
        # 1.83e-4 vs 1.57e-4). Centred at f1 the KKT residual of the original problem is
        # delta |f2 - f1| = O(delta^2 |f| / curvature), while along the flat directions of the
        # optimal face f2 stays at f1 (continuity of the selected point across ticks).
        q1 = (np.concatenate([dlin / dt, red.ufree / dt]) if form == "sparse" else lin / dt)
        q2 = q1.copy()
        q2[:m] -= delta * x1[:m]
        st1.update_q(q2)
        st1.warm_start(x1)
        s1b, it1b, x1b = st1.solve()
        it1 += it1b
        if x1b is not None and s1b == _SOLVED:  # else keep the converged first pass
            s1, x1 = s1b, x1b
    if x1 is not None:
        x1 = x1[:m]
    info["stage1_status"] = _status_name(s1)
    info["formulation"] = form
    stats.iterations = it1
    if x1 is None or s1 not in _ACCEPT:
        solver_name = "OSQP" if qp_solver == "osqp" else "active-set QP"
        res = fallback_result(problem, method, data.get("tau"),
                              f"{solver_name} Stage I: {_status_name(s1)}")
        if s1 in (_PRIMAL_INF, _PRIMAL_INF_INACC):
            res.stats.add_flag("infeasible")
        if s1 == _MAX_ITER:
            res.stats.add_flag("iteration_limit")
        res.stats.iterations = it1
        res.stats.info.update(info)
        for name in ("s1", "s2", "key", "key2", "as1", "as2"):
            data.pop(f"{method}_{name}", None)
        return res
    if s1 != _SOLVED:
        stats.add_flag("iteration_limit")
    f0 = _project(x1, mu, k, coulomb)
    info["stage1_objective"] = float(0.5 * f0 @ red.H @ f0 + lin @ f0 / dt)
    if st1 is not None:
        data[f"{method}_s1"] = st1
    data[f"{method}_key"] = key
    data[f"{method}_layout"] = lay

    # ---------------- Stage II
    f = f0
    info["nullity"] = 0
    info["stage2_status"] = "skipped"
    if stage2:
        # Stage I's optimal set: J_f^T f fixed and, for the contact-velocity objective, also
        # its linear term where it varies along ker J_f^T (_linear_term_varies: not its
        # residue at touching contacts)
        m, nf = red.Jf.shape
        fix_lin = stage1_objective != "kinetic_energy" and _linear_term_varies(
            red.Jf, dlin, rank_tol, sticking_gap / dt, np.empty(linear_term_work_size(m, nf)),
            np.empty(m * m))[0]
        Jfix = np.column_stack([red.Jf, dlin]) if fix_lin else red.Jf
        f, it2 = _stage2(problem, mstate, method, lay, red, f0, key, warm_start,
                         eps if stage2_eps is None else stage2_eps, max_iter,
                         polish, stage2_reg, rank_tol, info, coulomb, k, form, Jfix, qp_solver)
        stats.iterations += it2
        if info["stage2_status"] not in ("solved", "skipped"):
            stats.add_flag("iteration_limit")

    # ---------------- recover tau, v+ (eqs. 90, 37) from the projected impulses
    c = dt * f
    tau, v_next, _ = red.recover(c)
    imp = lay.to_local(c)
    wN = problem.N @ v_next + problem.phi / dt
    viol = max(0.0, float(np.max(-wN)))
    info["noninterpenetration"] = viol
    stats.residual = viol
    if stage2 and info.get("nullity", 0) > 0:
        stats.add_flag("min_norm")
    stats.info = info
    mstate.contact_ids = ids
    mstate.impulses = imp
    mstate.active_ids = tuple(cid for i, cid in enumerate(ids) if c[i] > 0.0)
    data[f"{method}_f"] = (ids, lay, f)
    return ContactResult.from_impulses(problem, tau, imp, v_next, stats)


def _active_rows(nc: int, kk: int, i: int, stage: int) -> list[int]:
    """The rows of contact i in stage 1 (non-penetration, f_N >= 0, kk facets) or stage 2
    (f_N >= 0, kk facets) of a contact set of nc contacts (``QPLayout``'s contact-major
    facets; ``kk = 0`` without a pyramid)."""
    base = 2 * nc if stage == 1 else nc
    head = [i, nc + i] if stage == 1 else [i]
    return head + [base + i * kk + j for j in range(kk)]


def _mapped_active(data: dict, name: str, ids: tuple, kk: int, stage: int
                   ) -> np.ndarray | None:
    """The previous tick's active row sides of a stage mapped by contact identity (rows of
    :func:`_active_rows`), or None if no contact of ``ids`` was in it."""
    prev = data.get(name)
    if prev is None:
        return None
    pids, pact = prev
    index = {cid: j for j, cid in enumerate(pids)}
    nc = len(ids)
    guess = np.zeros((2 * nc if stage == 1 else nc) + nc * kk, dtype=np.int64)
    found = False
    for i, cid in enumerate(ids):
        j = index.get(cid)
        if j is not None:
            guess[_active_rows(nc, kk, i, stage)] = pact[_active_rows(len(pids), kk, j, stage)]
            found = True
    return guess if found else None


def _active_set_work(data: dict, name: str, n: int, m: int,
                     cls: type[DenseQPWork] = DenseQPWork) -> DenseQPWork:
    """The active-set workspace (``cls``) of (n variables, m rows) kept in the method state."""
    works = data.setdefault(name, {})
    work = works.get((n, m))
    if work is None:
        work = works[(n, m)] = cls(n, m)
    return work


@leaf_kernel
def stage1_active_set(H: np.ndarray, P: np.ndarray, q: np.ndarray, A: np.ndarray,
                      l: np.ndarray, u: np.ndarray, delta: float, warm: np.ndarray,
                      use_warm: bool, finish: bool, recenter: bool, max_iter: int, tol: float,
                      dep_tol: float, fwork: np.ndarray, iwork: np.ndarray, x1: np.ndarray,
                      x: np.ndarray, qr: np.ndarray, y: np.ndarray, active: np.ndarray,
                      first: np.ndarray) -> tuple[int, int, int]:
    """Stage I with the active-set solver, the one implementation of the general path
    (:func:`_active_set_stage1`) and the compiled tick (``qp_tick.qp_tick_active_set``).

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


class _Stage1Work(DenseQPWork):
    """:class:`~wbc_dynamics.contact.dense_qp.DenseQPWork` with :func:`stage1_active_set`'s
    other buffers: ``xr`` the result, ``qr`` scratch, ``first`` the first pass's active row
    sides, ``guess`` the warm start."""

    def __init__(self, n: int, m: int) -> None:
        super().__init__(n, m)
        self.xr = np.zeros(self.n)
        self.qr = np.zeros(self.n)
        self.first = np.zeros(self.m, dtype=np.int64)
        self.guess = np.zeros(self.m, dtype=np.int64)


def _active_set_stage1(problem: ContactProblem, mstate: MethodState, method: str,
                       lay: QPLayout, red: ReducedDynamics, Hp: np.ndarray, lin: np.ndarray,
                       ids: tuple, warm_start: bool, max_iter: int, delta: float,
                       finish: bool, recenter: bool, stats: SolverStats, info: dict
                       ) -> tuple[int, int, np.ndarray | None]:
    """Stage I (dense reduced form (97)-(99), force units) by :func:`stage1_active_set`,
    warm-started with the previous tick's active set mapped by contact identity.
    Returns (status, iterations, x or None); ``info["stage1_exact"]``: the result is the
    exact optimum (False: the proximal minimizer)."""
    nc, m = lay.nc, lay.m
    dt = float(problem.dt)
    C = lay.constraint_block(problem.mu)
    A1 = np.vstack([red.H[:nc], C])
    lo1 = np.concatenate([(-problem.phi / dt - red.Jv0[:nc]) / dt, np.zeros(C.shape[0])])
    up1 = np.full(A1.shape[0], _INF)
    data = mstate.data
    work = _active_set_work(data, f"{method}_w1", m, A1.shape[0], _Stage1Work)
    kk = lay.k if lay.coulomb else 0
    warm = _mapped_active(data, f"{method}_as1", ids, kk, 1) if warm_start else None
    stats.warm_start_used = warm is not None
    if warm is not None:
        work.guess[:] = warm
    s1, it1, kind = stage1_active_set(
        np.ascontiguousarray(red.H), Hp, lin / dt, A1, lo1, up1, float(delta), work.guess,
        warm is not None, bool(finish), bool(recenter), int(max_iter), ACTIVE_SET_TOL,
        ACTIVE_SET_DEP_TOL, work.fwork, work.iwork, work.x, work.xr, work.qr, work.y,
        work.active, work.first)
    work.status, work.iterations = int(s1), int(it1)
    info["stage1_exact"] = kind == 2
    x1 = work.xr.copy() if np.all(np.isfinite(work.xr)) else None
    if s1 == _SOLVED:  # the next tick's guess: the first pass's active set (the proximal
        # passes are warm-started from it; the exact finish's differs in rows that hold at
        # ~delta |f| in the proximal problem, each a drop per row)
        data[f"{method}_as1"] = (ids, work.first.copy())
    else:
        data.pop(f"{method}_as1", None)
    return s1, it1, x1


def _status_name(s: int) -> str:
    return {1: "solved", 2: "solved_inaccurate", 3: "primal_infeasible",
            4: "primal_infeasible_inaccurate", 5: "dual_infeasible",
            6: "dual_infeasible_inaccurate", 7: "max_iter_reached", 8: "time_limit_reached",
            9: "non_convex", 10: "sigint", 11: "unsolved"}.get(s, f"status_{s}")


def _mapped_warm_start(mstate: MethodState, method: str, lay: QPLayout, ids: tuple
                       ) -> np.ndarray | None:
    """Primal warm start for a new contact set: previous forces matched by identity."""
    prev = mstate.data.get(f"{method}_f")
    if not prev:
        return None
    pids, play, pf = prev
    index = {cid: i for i, cid in enumerate(pids)}
    x = np.zeros(lay.m)
    found = False
    for i, cid in enumerate(ids):
        j = index.get(cid)
        if j is None:
            continue
        rows, prows = lay.rows_of_contact(i), play.rows_of_contact(j)
        if rows.shape == prows.shape:
            x[rows] = pf[prows]
            found = True
    return x if found else None


def _stage2(problem: ContactProblem, mstate: MethodState, method: str, lay: QPLayout,
            red: ReducedDynamics, f0: np.ndarray, key, warm_start: bool, eps: float,
            max_iter: int, polish: bool, reg: float, rank_tol: float, info: dict,
            coulomb: bool, k: int, form: str, Jfix: np.ndarray, qp_solver: str = "osqp"
            ) -> tuple[np.ndarray, int]:
    """Minimum-norm torques in the nullspace W of Z^T A Z (eqs. 102-112)."""
    data = mstate.data
    mu = problem.mu
    tau1, _, _ = red.recover(problem.dt * f0)     # torques of the Stage I solution
    if form == "sparse":
        r = lay.m - (int(np.linalg.matrix_rank(Jfix, tol=rank_tol * max(
            1.0, float(np.abs(Jfix).max())))) if Jfix.shape[1] else 0)
        info["nullity"] = r
        if r == 0:
            info["stage2_status"] = "skipped"
            return f0, 0
        skey = (key, "sparse")
        st2 = data.get(f"{method}_s2")
        reuse = st2 is not None and data.get(f"{method}_key2") == skey and warm_start
        st2, setup = _sparse_stage2(problem, lay, red, f0, tau1, st2 if reuse else None,
                                    _settings(eps, max_iter, warm_start, polish), reg, Jfix)
        if setup:
            info["setup2"] = True
        s2, it, x2 = st2.solve()
        if x2 is not None and s2 in _ACCEPT:
            f = _project(x2[:lay.m], mu, k, coulomb)
            info["stage2_status"] = "solved" if s2 == _SOLVED else _status_name(s2)
            data[f"{method}_s2"] = st2
            data[f"{method}_key2"] = skey
        else:
            f = f0
            info["stage2_status"] = f"failed: {_status_name(s2)}"
            data.pop(f"{method}_s2", None)
        return f, it
    W, P2, q2, A2, l2 = _stage2_data(np.ascontiguousarray(Jfix), red.J, problem.actuated, f0,
                                     tau1, mu, k, coulomb, reg, rank_tol,
                                     qp_solver == "active_set")
    r = W.shape[1]
    info["nullity"] = r
    if r == 0:
        info["stage2_status"] = "skipped"
        return f0, 0
    skey = (key, r)
    up2 = np.full(A2.shape[0], _INF)
    if qp_solver == "active_set":
        # warm start: the previous active set mapped by contact identity (the rows are per
        # contact, so the guess stays meaningful when the nullity changes)
        work2 = _active_set_work(data, f"{method}_w2", r, A2.shape[0])
        ids = key[0]
        warm = (_mapped_active(data, f"{method}_as2", ids, k if coulomb else 0, 2)
                if warm_start else None)
        s2 = solve_dense_qp(P2, q2, A2, l2, up2, work2, warm, max_iter=max_iter,
                            tol=ACTIVE_SET_TOL, dep_tol=ACTIVE_SET_DEP_TOL)
        it = work2.iterations
        if s2 == _SOLVED:
            f = _project(f0 + W @ work2.x, mu, k, coulomb)
            info["stage2_status"] = "solved"
            data[f"{method}_as2"] = (ids, work2.active.copy())
            data[f"{method}_ffull"] = f
        else:  # MAX_ITER's last iterate is not primal feasible: keep Stage I's forces
            f = f0
            info["stage2_status"] = f"failed: {_status_name(s2)}"
            data.pop(f"{method}_as2", None)
        return f, it
    st2: _QPSolver | None = data.get(f"{method}_s2")
    if st2 is None or data.get(f"{method}_key2") != skey or not warm_start:
        st2 = _QPSolver(P2, q2, A2, np.ones(A2.shape, dtype=bool), l2, up2,
                        _settings(eps, max_iter, warm_start, polish))
        info["setup2"] = True
    else:
        st2.update(st2.gather_p(P2), q2, st2.gather_a(A2), l2)
        prev_f = data.get(f"{method}_ffull")
        if prev_f is not None and prev_f.shape == f0.shape:
            # previous forces projected on the current optimal set (basis independent)
            st2.warm_start(W.T @ (prev_f - f0))
    s2, it, x2 = st2.solve()
    if x2 is not None and s2 in _ACCEPT:
        f = _project(f0 + W @ x2, mu, k, coulomb)
        info["stage2_status"] = "solved" if s2 == _SOLVED else _status_name(s2)
        data[f"{method}_s2"] = st2
        data[f"{method}_key2"] = skey
        data[f"{method}_ffull"] = f
    else:
        f = f0
        info["stage2_status"] = f"failed: {_status_name(s2)}"
        data.pop(f"{method}_s2", None)
    return f, it


def solve_qp_coulomb(
    problem: ContactProblem,
    mstate: MethodState,
    *,
    friction_edges: int | None = None,
    stage2: bool = True,
    warm_start: bool = True,
    eps: float = 1e-7,
    max_iter: int = 1500,
    polish: bool = False,
    stage2_reg: float = 1e-9,
    rank_tol: float = 1e-9,
    stage1_reg: float = 1e-7,
    stage2_eps: float | None = None,
    formulation: str = "auto",
    sparse_above: int = 8,
    stage1_objective: str = "kinetic_energy",
    stage1_recenter: bool = True,
    sticking_correction: bool = False,
    sticking_gap: float = 1e-6,
    friction_gap: float | None = None,
    qp_solver: str = "active_set",
    **_unused: Any,
) -> ContactResult:
    """Two-stage convex inverse dynamics with a k-edge friction pyramid (Sec. 6.2).

    Args:
        problem: validated problem, ``nc >= 1``.
        mstate: warm start (OSQP solver objects, previous forces by contact identity).
        friction_edges: pyramid edges k (even >= 4), default ``problem.friction_edges``.
        stage2: run Stage II (min-norm torques, eqs. 102-112); ``False`` returns Stage I only.
        warm_start: keep/update the OSQP solvers and warm start them from the previous tick;
            ``False`` sets up fresh solvers every tick (cold start).
        eps: OSQP absolute and relative tolerance (force units, N).
        max_iter: OSQP iteration limit per stage.
        polish: OSQP solution polishing (active-set refinement; off by default because OSQP
            1.1 prints to stdout when it finds no active set; the projection below suffices).
        stage2_reg: Tikhonov weight on ``|w|^2`` in Stage II, relative to max diag(J_a^T W)^2.
        rank_tol: relative singular value threshold for ``rank(J_f)`` (nullspace W).
        stage2_eps: OSQP tolerance of Stage II [N] (default: ``eps``).
        formulation: ``"dense"`` (reduced form, nullspace W in Stage II, as in the paper),
            ``"sparse"`` (same QPs with ``u = J_f^T f`` and ``t = J_a^T f`` lifted as extra
            variables and Stage II written as ``J_f^T f = J_f^T f0``; OSQP cost linear in the
            number of contacts) or ``"auto"``: dense for ``nc <= sparse_above``.
        stage1_reg: proximal weight ``delta`` on ``|f|^2`` in Stage I, relative to max diag H
            (least-norm Stage I point; avoids ADMM drift on the flat directions).
        stage1_recenter: re-solve Stage I once with the proximal term centred at the first
            solution (reduces the O(delta |f|) bias of the optimum; one warm-started solve).
            The active-set solver finishes the kinetic-energy objective's Stage I exactly
            instead (module docstring) and re-centres only where that finish does not end.
        stage1_objective: ``"kinetic_energy"`` (eq. (69), default) or ``"contact_velocity"``
            (:data:`STAGE1_OBJECTIVES`; docs/contact_methods.md "Tracking in closed loop").
        sticking_correction: first replace the desired accelerations by the nearest ones the
            touching contacts (``phi <= sticking_gap`` [m]) realize while sticking (Sec. 4.5
            QP; :func:`~wbc_dynamics.contact.consistency.sticking_consistent_problem`); flag
            ``inconsistent_corrected``, ``consistent=False`` when that changed them.
        friction_gap: [m] friction only at contacts with ``phi <= friction_gap`` (eq. (34));
            ``None`` (default): every candidate. Without it a candidate hovering within the
            margin whose point slides tangentially can carry normal *and* friction force while
            separating (the complementarity-free model allows separation up to mu |slip|
            per tick; with mu = 10 that gave 10^4 N predicted on trot touchdowns).
        qp_solver: ``"active_set"`` (default; :data:`QP_SOLVERS`): both stages solved exactly
            by the compiled Goldfarb-Idnani method (:mod:`.dense_qp`) on the dense reduced form,
            warm-started with the previous active set of the same contact set; ``eps``,
            ``polish``, ``stage2_eps``, ``formulation`` and ``sparse_above`` are OSQP's and do
            not apply (``formulation="sparse"`` is rejected), ``max_iter`` counts active-set
            changes. ``"osqp"``: OSQP to tolerance ``eps`` (it reaches its iteration limit
            on talos's problems, docs/contact_methods.md).

    Returns:
        ContactResult (see the module docstring for stats, flags and fallback).
    """
    return _solve_two_stage(
        problem,
        mstate,
        "qp_coulomb",
        True,
        friction_edges=friction_edges,
        stage2=stage2,
        warm_start=warm_start,
        eps=eps,
        max_iter=max_iter,
        polish=polish,
        stage2_reg=stage2_reg,
        rank_tol=rank_tol,
        stage1_reg=stage1_reg,
        stage2_eps=stage2_eps,
        formulation=formulation,
        sparse_above=sparse_above,
        stage1_objective=stage1_objective,
        stage1_recenter=stage1_recenter,
        sticking_correction=sticking_correction,
        sticking_gap=sticking_gap,
        friction_gap=friction_gap,
        qp_solver=qp_solver,
    )


def solve_qp_noslip(
    problem: ContactProblem,
    mstate: MethodState,
    *,
    stage2: bool = True,
    warm_start: bool = True,
    eps: float = 1e-7,
    max_iter: int = 1500,
    polish: bool = False,
    stage2_reg: float = 1e-9,
    rank_tol: float = 1e-9,
    stage1_reg: float = 1e-7,
    stage2_eps: float | None = None,
    formulation: str = "auto",
    sparse_above: int = 8,
    noslip_gap: float | None = None,
    stage1_objective: str = "kinetic_energy",
    stage1_recenter: bool = True,
    sticking_correction: bool = False,
    sticking_gap: float = 1e-6,
    rank_mass_ratio: float = 0.0,
    qp_solver: str = "active_set",
    **_unused: Any,
) -> ContactResult:
    """Two-stage convex inverse dynamics with unbounded friction (no-slip; Sec. 6 with mu = inf).

    Same options as :func:`solve_qp_coulomb` (no pyramid): tangential impulses are free
    variables, normal impulses ``>= 0``. ``noslip_gap`` [m] (as for ``lcp_noslip``): the free
    tangential impulses exist only at contacts with ``phi <= noslip_gap`` (eq. (34)); a
    separated candidate gets no friction (its S, T rows are zeroed, so its tangential impulses
    leave the objective and Stage II sets them to zero). ``None`` (default): every candidate.

    ``rank_mass_ratio`` (default 0 = off, Sec. 6 as written; the quadruped closed loop uses
    100): the scale-aware rank rule of ``lcp_noslip`` (Alg. 1,
    :func:`~wbc_dynamics.contact.lcp_noslip.solve_lcp_noslip`) applied to the free tangential
    impulses: in the order S_1, T_1, ..., a tangential row is kept iff the effective mass of its
    direction, with the actuated velocities prescribed and the rows already kept enforced (the
    pivot of the Stage I Hessian ``J_f K_ff J_f^T`` restricted to the tangential rows), is at
    most ``rank_mass_ratio * problem.total_mass``; the other tangential impulses are 0 (the row
    is zeroed as for ``noslip_gap``; flag ``rows_dropped``, ``info["rows_dropped"]`` = count).
    Why: two stance feet at sub-millimetre different heights make the tangential pair along the
    line between them a direction of ~1e3-1e4 times the robot's mass (the normal rows that
    would make it exactly dependent are sign-constrained, c_N >= 0); Stage I then spends
    ~1e3-1e4 m g of internal tangential force on mm/s of relative foot velocity (contact-velocity
    objective; closed-loop trot, docs/contact_methods.md). Exactly dependent tangential rows are
    dropped by the same rule, so Stage II has no internal tangential forces among dropped rows
    to trade for torque. ``0`` (or ``total_mass=None``): every tangential impulse (Sec. 6 as
    written).
    Off by default because it breaks grasps: among four fingertips on a rigid box the
    exactly dependent tangential rows are dropped too, and the friction that holds the object
    goes with them (the arm + box loop with the finger hold dropped the box within 1.4 s).
    """
    return _solve_two_stage(
        problem,
        mstate,
        "qp_noslip",
        False,
        stage2=stage2,
        warm_start=warm_start,
        eps=eps,
        max_iter=max_iter,
        polish=polish,
        stage2_reg=stage2_reg,
        rank_tol=rank_tol,
        stage1_reg=stage1_reg,
        stage2_eps=stage2_eps,
        formulation=formulation,
        sparse_above=sparse_above,
        stage1_objective=stage1_objective,
        stage1_recenter=stage1_recenter,
        sticking_correction=sticking_correction,
        sticking_gap=sticking_gap,
        friction_gap=noslip_gap,
        rank_mass_ratio=rank_mass_ratio,
        qp_solver=qp_solver,
    )


def warmup() -> None:
    """Compile / import everything the QP methods need (both formulations, setup and update
    paths) on a tiny problem; call at start-up so that no control tick compiles."""
    # the problem of lcp_coulomb's warm-up, not that warm-up: the QP methods use only its
    # reduced dynamics (compiled below through them), not Lemke, MINDIFF or the Coulomb
    # min-norm selection, which would be half of a QP cold start's general-path compile
    from .lcp_coulomb import warmup_problem

    p = warmup_problem()
    for fn in (solve_qp_coulomb, solve_qp_noslip):
        for form in ("dense", "sparse"):
            ms = MethodState()
            for _ in range(2):          # setup path, then the in-place update path
                fn(p, ms, formulation=form, qp_solver="osqp")
        ms = MethodState()
        for _ in range(2):              # cold, then warm-started with the active set
            fn(p, ms)
