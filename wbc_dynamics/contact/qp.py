"""``qp_coulomb`` and ``qp_noslip``: convex two-stage inverse dynamics
(Zapolsky & Drumwright, Sec. 6).

One compiled flow for the method: everything after the problem is assembled -- the corrections,
the reduced dynamics, Stage I, Stage II and the finish with its flag bits -- is compiled code on
named arrays of the assembled problem (:class:`QPArrays`), named options (:class:`QPOptions`)
and named buffers (:class:`QPWork`): :func:`qp_active_set` with the default active-set solver;
with OSQP its stages :func:`qp_prepare`, :func:`qp_stage2`, :func:`qp_finish` around OSQP's
solves (:class:`OSQPStages`). The compiled tick (:mod:`.qp_tick`) assembles the problem itself
and runs this flow on views of its buffers; ``solve_qp_coulomb`` / ``solve_qp_noslip`` validate
the options, pack the :class:`ContactProblem` into the same arrays, run the same flow and map
its status and flag bits to the result with one table (:data:`QP_FLAG_NAMES`). The lifted
sparse formulation (``formulation="sparse"``, OSQP only) is a variant of its own: the compiled
:func:`qp_prepare`, then its QPs built and solved from Python (:func:`_solve_osqp_sparse`).

One module for one method (about 2 500 lines): the compiled stages serve both the tick and
``solve``, and a kernel's cache entry and separate compilation belong to the module that defines
it, so the stages, their option record and their Python entry stay together.

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
compromise the grasp loops were tuned with; the compiled tick leaves such a tick to ``solve``.

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
from typing import Any, NamedTuple

import numpy as np
import osqp
import scipy.sparse as sp
from numba import njit
from numba.experimental import structref

from ..kernels import arena as _ar
from ..kernels.arena import NO_ARENA, Arena
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import left_nullspace
from ..kernels.records import RecordType, define_record
from ..kernels.separate import call_separately
from .dense_qp import dense_qp_kernel, psd_finish_kernel, work_sizes
from .dispatch import fallback_result
from .lcp_coulomb import ReducedDynamics, _recover_into, _reduce_into
from .noslip_kernels import _alg1, min_pivot
from .problem import ContactProblem, ContactResult, MethodState, SolverStats
from .tick_base import TICK_GENERIC, TICK_OK, _sticking_qdd

__all__ = ["solve_qp_coulomb", "solve_qp_noslip", "QPLayout", "STAGE1_OBJECTIVES", "QP_SOLVERS",
           "QPArrays", "QPOptions", "QPWork", "QP_FLAG_NAMES", "qp_prepare", "qp_stage2",
           "qp_finish", "qp_active_set", "new_qp_work", "warmup"]

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
                     rank_mass_ratio: float = 0.0, qp_solver: str = "active_set",
                     **_unused: Any) -> ContactResult:
    """Validate the options (those of another method, in ``_unused``, are ignored), then the
    compiled flow (``qp_solver="active_set"``, :func:`qp_active_set`) or the OSQP variants
    (:func:`_solve_osqp_dense`, :func:`_solve_osqp_sparse`)."""
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
    if friction_gap is not None and not np.isfinite(friction_gap):
        raise ValueError(f"{method}: friction gap must be finite or None, got {friction_gap!r}")
    k = int(problem.friction_edges if friction_edges is None else friction_edges)
    if coulomb and (k < 4 or k % 2):
        raise ValueError(f"{method}: friction_edges must be even and >= 4, got {k}")
    kk = k if coulomb else 4
    flow = dict(stage2=stage2, max_iter=max_iter, stage2_reg=stage2_reg, rank_tol=rank_tol,
                stage1_reg=stage1_reg, stage1_objective=stage1_objective,
                stage1_recenter=stage1_recenter, sticking_correction=sticking_correction,
                sticking_gap=sticking_gap, friction_gap=friction_gap,
                rank_mass_ratio=rank_mass_ratio)

    def osqp_dense() -> ContactResult:
        o = _flow_options(problem, coulomb, kk, False, **flow)
        return _solve_osqp_dense(problem, mstate, method, coulomb, kk, o, warm_start,
                                 _settings(eps, max_iter, warm_start, polish),
                                 _settings(eps if stage2_eps is None else stage2_eps,
                                           max_iter, warm_start, polish))

    if qp_solver == "active_set":
        return _solve_active_set(problem, mstate, method, coulomb, kk,
                                 _flow_options(problem, coulomb, kk, True, **flow), warm_start,
                                 osqp_dense)
    if formulation == "dense" or (formulation == "auto" and problem.nc <= sparse_above):
        return osqp_dense()
    return _solve_osqp_sparse(problem, mstate, method, coulomb, kk,
                              _flow_options(problem, coulomb, kk, False, **flow), warm_start,
                              eps=eps, max_iter=max_iter, polish=polish, stage2_eps=stage2_eps,
                              stage1_objective=stage1_objective, sticking_gap=sticking_gap)


def _solve_osqp_sparse(problem: ContactProblem, mstate: MethodState, method: str,
                       coulomb: bool, k: int, o: QPOptions, warm_start: bool, *, eps: float,
                       max_iter: int, polish: bool, stage2_eps: float | None,
                       stage1_objective: str, sticking_gap: float) -> ContactResult:
    """The lifted sparse formulation (``formulation="sparse"``, OSQP; module doc), a variant of
    its own: the compiled corrections and reduced dynamics (:func:`qp_prepare`), then the
    lifted QPs (:func:`_sparse_stage1`, :func:`_sparse_stage2`) set up and solved from Python
    (OSQP solvers kept per contact set)."""
    nc, m = problem.nc, 3 * problem.nc
    fs, slots = _FlowState.of(mstate.data, method, problem, k, coulomb, False)
    w = fs.w
    if qp_prepare(_problem_arrays(problem, slots), o, fs.rec, False, False)[0] != TICK_OK:
        raise np.linalg.LinAlgError(f"{method}: P M^-1 P^T is singular")
    bits = int(w.state[_S_BITS])
    # the problem solved for: the corrected accelerations (its fallback torques), the rows of
    # the friction gap and the rank rule zeroed
    solved = dataclasses.replace(problem, qdd_des=w.qdd.copy(), N=w.J[:nc].copy(),
                                 S=w.J[nc:2 * nc].copy(), T=w.J[2 * nc:m].copy())
    red = ReducedDynamics(solved, w.J[:m].copy(), w.L.copy(), w.tau0.copy(), w.fstar.copy(),
                          w.v0.copy(), w.Kff.copy(), w.Jf[:m].copy(),
                          w.H[:m * m].reshape(m, m).copy(), w.Jv0[:m].copy(),
                          w.uf[:m].copy(), w.ufree.copy())
    res = _solve_two_stage_impl(solved, red, w.lin[:m].copy(), float(w.fstate[0]), mstate,
                                method, coulomb, k, o, warm_start=warm_start, eps=eps,
                                max_iter=max_iter, polish=polish, stage2_eps=stage2_eps,
                                stage1_objective=stage1_objective, sticking_gap=sticking_gap)
    for name in flag_names(bits & ~(_ITER_LIMIT | _MIN_NORM)):
        res.stats.add_flag(name)
    if bits & _ROWS_DROPPED:
        res.stats.info["rows_dropped"] = int(w.dropped[:nc].sum())
    # the zeroed rows make those impulses inert; reported as exactly zero so that eq. (37)
    # holds for the original rows too
    imp = res.impulses.copy()
    imp[w.sep[:nc], 1:] = 0.0
    imp[:, 1:][w.dropped[:nc]] = 0.0
    res = ContactResult.from_impulses(problem, res.tau, imp, res.v_next, res.stats)
    if bits & _CORRECTED:
        _mark_corrected(res, problem, w.qdd)
    return res


def _solve_two_stage_impl(problem: ContactProblem, red: ReducedDynamics, lin: np.ndarray,
                          delta: float, mstate: MethodState, method: str, coulomb: bool,
                          k: int, o: QPOptions, *, warm_start: bool, eps: float,
                          max_iter: int, polish: bool, stage2_eps: float | None,
                          stage1_objective: str, sticking_gap: float) -> ContactResult:
    """Both stages of the lifted sparse formulation by OSQP (:func:`_sparse_stage1`,
    :func:`_sparse_stage2`) on the reduced dynamics ``red`` of the corrected problem, with
    Stage I's linear term ``lin`` [m/s] and proximal weight ``delta`` (:func:`qp_prepare`)."""
    dt = float(problem.dt)
    ids = tuple(problem.contact_ids)
    key = (ids, k if coulomb else 0, "sparse", "osqp")
    data = mstate.data
    lay: QPLayout | None = data.get(f"{method}_layout")
    if lay is None or data.get(f"{method}_key") != key:
        lay = QPLayout.make(problem, coulomb, k)
    m = lay.m
    mu = problem.mu
    stats = SolverStats(method=method)
    info: dict[str, Any] = {"setup": False}
    dlin = lin - red.uf
    stage1_recenter, stage2 = o.recenter, o.stage2
    stage2_reg, rank_tol = o.stage2_reg, o.rank_tol

    # ---------------- Stage I (force units, c = dt f)
    # proximal term delta |f|^2 (option stage1_reg): picks the least-norm point of the Stage I
    # optimal set and keeps ADMM from drifting along its flat directions (free tangential
    # impulses of qp_noslip); it moves the optimum by O(delta |f|), far below eps.
    st1: _QPSolver | None = data.get(f"{method}_s1")
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
    s1, it1, x1 = st1.solve()
    if stage1_recenter and delta > 0.0 and x1 is not None and s1 == _SOLVED:
        # second proximal pass centred at the first solution (one proximal-point step): the
        # first pass minimizes obj + delta/2 |f|^2, which moves the optimum by O(delta |f|)
        # -- relative to Stage I objectives of ~1e-4 that is not negligible (measured:
        # 1.83e-4 vs 1.57e-4). Centred at f1 the KKT residual of the original problem is
        # delta |f2 - f1| = O(delta^2 |f| / curvature), while along the flat directions of the
        # optimal face f2 stays at f1 (continuity of the selected point across ticks).
        q2 = np.concatenate([dlin / dt, red.ufree / dt])
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
    info["formulation"] = "sparse"
    stats.iterations = it1
    if x1 is None or s1 not in _ACCEPT:
        res = fallback_result(problem, method, data.get("tau"),
                              f"OSQP Stage I: {_status_name(s1)}")
        if s1 in (_PRIMAL_INF, _PRIMAL_INF_INACC):
            res.stats.add_flag("infeasible")
        if s1 == _MAX_ITER:
            res.stats.add_flag("iteration_limit")
        res.stats.iterations = it1
        res.stats.info.update(info)
        for name in ("s1", "s2", "key", "key2"):
            data.pop(f"{method}_{name}", None)
        return res
    if s1 != _SOLVED:
        stats.add_flag("iteration_limit")
    f0 = _project(x1, mu, k, coulomb)
    info["stage1_objective"] = float(0.5 * f0 @ red.H @ f0 + lin @ f0 / dt)
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
                         polish, stage2_reg, rank_tol, info, coulomb, k, Jfix)
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


# ------------------------------------------------------------- the compiled flow: buffers

#: Stage I was not accepted (OSQP failed): the documented fallback
TICK_STAGE1_FAILED = 2

# flag bits, in the order of the flags (Stage I / II iteration limit, min-norm,
# qp_noslip's dropped tangential rows, then the sticking correction's mark)
_ITER_LIMIT = 1
_MIN_NORM = 2
_CORRECTED = 4
_STICKING_FAILED = 8
_ROWS_DROPPED = 16
#: the flags of the flow's bits, in the order a result lists them (the one table of both paths)
QP_FLAG_NAMES = ((_ITER_LIMIT, "iteration_limit"), (_MIN_NORM, "min_norm"),
                  (_ROWS_DROPPED, "rows_dropped"), (_CORRECTED, "inconsistent_corrected"),
                  (_STICKING_FAILED, "sticking_correction_failed"))

# QPWork.state entries
_S_NC = 0         # this tick's contact count
_S_BITS = 1       # flag bits so far
_S_LAST_NC = 2    # contact count of the Stage I key (0: none -- fresh setup next tick)
_S_KEY2_NC = 3    # contact count of the Stage II key
_S_KEY2_R = 4     # nullity of the Stage II key (-1: none)
_S_R = 5          # this tick's nullity (-1: Stage II off)
_S_SEP = 6        # 1 if a candidate lost its friction rows (friction gap)
_S_WARM_USED = 7  # active set: 1 if Stage I started from a mapped active set
_S_IT = 8         # active set: iterations (active-set changes) of both stages
_S_KIND = 9       # active set: Stage I's result (2 exact, 1 re-centred, 0 proximal)
_S_S1 = 10        # active set: Stage I's status (dense_qp: 1 solved, 3 infeasible, ...)
_S_S2 = 11        # active set: Stage II's status (0: not run)
_N_STATE = 12


class QPOptions(NamedTuple):
    """Options of the compiled flow (those of ``solve_qp_coulomb`` / ``solve_qp_noslip`` and,
    for the compiled tick, the contact model).

    ``coulomb``: the k-facet pyramid (``qp_coulomb``) or free tangential impulses (``qp_noslip``);
    ``friction_gap`` [m] (+inf: None; ``noslip_gap`` of ``qp_noslip``); ``tangential_floor`` [1/kg]
    ``qp_noslip``'s scale-aware rank rule on the tangential rows (``lcp_noslip.min_pivot`` of its
    ``rank_mass_ratio``; 0: off); ``sticking_correction`` with ``sticking_gap`` [m] and Alg. 1's
    floor ``min_pivot`` [1/kg]; ``contact_velocity``: ``stage1_objective == "contact_velocity"``;
    ``stage1_reg``, ``stage2_reg``, ``rank_tol`` relative; ``max_nc``: the dense formulation up to
    this many contacts (the compiled tick; more: ``solve``'s sparse one); ``active_set``:
    ``qp_solver == "active_set"`` (the whole method one compiled call, :func:`qp_active_set`);
    ``recenter``: ``stage1_recenter`` (with the active-set solver: where Stage I's exact finish
    does not end, :func:`stage1_active_set`); ``max_iter`` the solver's iteration limit,
    ``qp_tol`` / ``qp_dep_tol`` its tolerances (:data:`ACTIVE_SET_TOL` / ``ACTIVE_SET_DEP_TOL``:
    passed, not read as globals, which numba would freeze into the cached kernel); the contact
    model's ``margin``, ``phi_deadband`` [m], ``passive_impact``, ``separation_tolerance`` [m/s],
    ``dt`` [s].
    """

    margin: float
    phi_deadband: float
    passive_impact: bool
    separation_tolerance: float
    dt: float
    coulomb: bool
    k: int
    sticking_correction: bool
    sticking_gap: float
    min_pivot: float
    friction_gap: float
    tangential_floor: float
    contact_velocity: bool
    stage1_reg: float
    stage2: bool
    stage2_reg: float
    rank_tol: float
    max_nc: int
    active_set: bool
    recenter: bool
    max_iter: int
    qp_tol: float
    qp_dep_tol: float



class QPWork(NamedTuple):
    """Buffers the three kernels share (``m = 3 nc`` impulse variables, rows ``0..m-1``
    valid) and the warm start kept across ticks.

    Per tick: ``J`` (3 cap, nv) = [N; S; T]; the reduced dynamics ``L``, ``tau0``, ``fstar``,
    ``Jf`` and ``dlin`` (Stage I linear term minus eq. (98)'s) of :class:`ReducedDynamics`;
    ``qdd`` (nu,) the accelerations solved for (after the sticking correction); ``sep``
    (cap,) candidates without friction rows; ``dropped`` (cap, 2) the tangential rows
    (S_i, T_i) the rank rule dropped; ``f0`` the projected Stage I forces [N]; ``W``
    ((3 cap)^2,) Stage II's nullspace basis, its first m r entries a C-ordered (m, r) matrix;
    ``imp_raw`` (cap, 3) the impulses before the friction-gap zeroing
    (``MethodState.impulses``).

    OSQP values in pattern order: Stage I ``p1x``, ``q1``, ``a1x``, ``l1`` (patterns of each
    contact count: ``p1_rows``/``p1_cols`` from ``p1_off[nc]``, ``a1_rows``/``a1_cols`` from
    ``a1_off[nc]``), ``qlin`` its linear term, ``q1r`` the re-centred one, ``x0`` the mapped
    warm start; Stage II ``p2x`` (dense upper triangle), ``q2``, ``a2x`` (dense, column-major),
    ``l2`` and ``x2ws`` its warm start.

    Across ticks: ``prev_f`` (n_slots, 3) / ``prev_known`` the previous forces by candidate slot
    (OSQP's mapped warm start); ``last_slots`` (Stage I key), ``key2_slots`` and
    ``ffull`` (Stage II key and forces); ``state`` (int64, see ``_S_*``); ``fstate[0]`` the
    Stage I proximal weight delta.

    Active-set solver (option ``qp_solver="active_set"``; size-1 placeholders otherwise): the dense
    problems ``P1d`` (m, m), ``A1d`` (ncon1, m) of Stage I and ``P2d`` (r, r), ``A2d`` (ncon2, r)
    of Stage II as C-ordered prefixes, ``u_inf`` (+inf upper bounds), the solutions ``x1`` (Stage
    I's proximal pass) / ``x1b`` (Stage I's result) / ``x2``, the multipliers ``y``, the active row
    sides ``act1`` / ``act2`` and the warm-start guess ``warm`` (:mod:`.dense_qp`); across ticks
    the active row sides by candidate slot, ``prev_act1`` (n_slots, 2 + k: non-penetration row,
    ``f_N >= 0``, k facets) and ``prev_act2`` (n_slots, 1 + k: ``f_N >= 0``, k facets), valid where
    ``act_known`` (n_slots, 2: stage); the solver's workspace ``qp_fwork`` / ``qp_iwork``.

    Stage II's data: ``s2_fwork`` (3 cap (nf + 1) + nf + 2 + nu 3 cap, or more for
    ``qp.linear_term_work_size``) holds J_fix (the QR of the nullspace overwrites it), the
    Householder scales and J_a^T W; before them the workspace of ``_linear_term_varies``
    (whose nullspace of J_f, written to ``W``, Stage II reuses when J_fix = J_f).

    The reduced dynamics' other outputs and scratch (``lcp_coulomb._reduce_into``): ``H``
    ((3 cap)^2,) a C-ordered (m, m) prefix, ``Jv0``, ``uf`` (3 cap,), ``v0`` (nv,), ``Kff``
    (nf, nf), ``ufree`` (nf,), ``G`` (nu, nu), ``JK`` (3 cap, nf), ``rscratch``
    (max(nu (nf + 2), nu + nv),; also ``_recover_into``'s); ``lin`` (3 cap,) Stage I's linear
    term [m/s]; the recovery's ``tau1`` (nu,) [N m], ``vnext``, ``gen`` (nv,); ``c`` (3 cap,)
    impulses [N s], ``f`` (3 cap,) Stage II's forces [N], ``gscratch`` (cap,) the
    projection's, ``cloc`` (3, cap) the reported (c_N, c_S, c_T). Past the sticking correction
    and ``qp_noslip``'s rank rule (``_sticking_qdd``, ``noslip_kernels._alg1``) the active-set
    tick allocates nothing.
    """

    J: np.ndarray
    Jf: np.ndarray
    dlin: np.ndarray
    L: np.ndarray
    tau0: np.ndarray
    fstar: np.ndarray
    qdd: np.ndarray
    sep: np.ndarray
    dropped: np.ndarray
    f0: np.ndarray
    W: np.ndarray
    imp_raw: np.ndarray
    p1_rows: np.ndarray
    p1_cols: np.ndarray
    p1_off: np.ndarray
    a1_rows: np.ndarray
    a1_cols: np.ndarray
    a1_off: np.ndarray
    p1x: np.ndarray
    q1: np.ndarray
    a1x: np.ndarray
    l1: np.ndarray
    qlin: np.ndarray
    q1r: np.ndarray
    x0: np.ndarray
    p2x: np.ndarray
    q2: np.ndarray
    a2x: np.ndarray
    l2: np.ndarray
    x2ws: np.ndarray
    prev_f: np.ndarray
    prev_known: np.ndarray
    last_slots: np.ndarray
    key2_slots: np.ndarray
    ffull: np.ndarray
    state: np.ndarray
    fstate: np.ndarray
    P1d: np.ndarray
    A1d: np.ndarray
    P2d: np.ndarray
    A2d: np.ndarray
    u_inf: np.ndarray
    x1: np.ndarray
    x1b: np.ndarray
    x2: np.ndarray
    y: np.ndarray
    act1: np.ndarray
    act2: np.ndarray
    warm: np.ndarray
    prev_act1: np.ndarray
    prev_act2: np.ndarray
    act_known: np.ndarray
    qp_fwork: np.ndarray
    qp_iwork: np.ndarray
    s2_fwork: np.ndarray
    H: np.ndarray
    Jv0: np.ndarray
    uf: np.ndarray
    v0: np.ndarray
    Kff: np.ndarray
    ufree: np.ndarray
    G: np.ndarray
    JK: np.ndarray
    rscratch: np.ndarray
    lin: np.ndarray
    tau1: np.ndarray
    vnext: np.ndarray
    gen: np.ndarray
    c: np.ndarray
    f: np.ndarray
    gscratch: np.ndarray
    cloc: np.ndarray


@structref.register
class QPWorkRecordType(RecordType):
    """numba type of :class:`QPWorkRecord`."""


class QPWorkRecord(structref.StructRefProxy):
    """:class:`QPWork`'s arrays as one pointer for the compiled stages (same field names, same
    arrays; :mod:`wbc_dynamics.kernels.records`): ``QPTick.w_kernel``."""


define_record(QPWorkRecord, QPWorkRecordType, QPWork)


@njit(cache=True)
def qp_work_record(w):
    """The :class:`QPWorkRecord` of the :class:`QPWork` ``w`` (compiled, cached)."""
    return QPWorkRecord(*w)


# --------------------------------------------------------------------------- the compiled flow
class QPArrays(NamedTuple):
    """The assembled problem the compiled stages work on (rows ``0..nc-1``: the contacts).

    ``Minv`` (nv, nv) [1/kg, ...], ``h`` (nv,) C v + g [N, N m], ``v`` (nv,) [m/s, rad/s],
    ``N`` / ``S`` / ``T`` (nc, nv) the contact rows in world-aligned contact frames (``S`` and
    ``T`` are overwritten: the friction gap's and the rank rule's rows are zeroed in place),
    ``phi`` (nc,) [m], ``mu`` (nc,), ``qdd_des`` (nu,) [rad/s^2], ``act`` / ``free`` the
    actuated / unactuated dof indices, ``slot`` (nc,) each contact's warm-start slot (a
    candidate's slot in the compiled tick; the index of its identity in ``solve``'s method
    state), ``arena`` the scratch memory (:mod:`wbc_dynamics.kernels.arena`; ``NO_ARENA``:
    temporaries are allocated). The compiled tick fills it with views of its candidate
    buffers, ``solve`` with the :class:`ContactProblem`'s arrays: the same types, one compiled
    flow.
    """

    Minv: np.ndarray
    h: np.ndarray
    v: np.ndarray
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    phi: np.ndarray
    mu: np.ndarray
    qdd_des: np.ndarray
    act: np.ndarray
    free: np.ndarray
    slot: np.ndarray
    arena: Arena


@njit(cache=True)
def qp_prepare(p, o, w, cont_ok, map_warm):
    """Corrections, reduced dynamics and Stage I's data of the assembled problem ``p``
    (:class:`QPArrays`) with the options ``o`` (:class:`QPOptions`) into ``w``
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


def new_qp_work(cap: int, nv: int, nu: int, nf: int, nslot: int, k: int, coulomb: bool,
                active_set: bool, osqp_patterns: tuple | None = None) -> QPWork:
    """Buffers of the compiled flow for up to ``cap`` contacts of ``nv`` dofs (``nu``
    actuated, ``nf`` free), ``nslot`` warm-start slots and the pyramid of ``k`` facets
    (``coulomb``). ``active_set``: the active-set solver's buffers (else size-1 placeholders
    of the same types); ``osqp_patterns``: Stage I's OSQP sparsity patterns per contact count
    (``p1_rows``, ``p1_cols``, ``p1_off``, ``a1_rows``, ``a1_cols``, ``a1_off``; None: no
    OSQP)."""
    mcap = 3 * cap
    if osqp_patterns is None:
        empty = np.zeros(0, dtype=np.int64)
        offs = np.zeros(cap + 2, dtype=np.int64)
        osqp_patterns = (empty, empty, offs, empty, empty, offs)
    p1_rows, p1_cols, p_off, a1_rows, a1_cols, a_off = osqp_patterns
    nmax1 = int(max(np.diff(p_off).max(), 1))
    amax1 = int(max(np.diff(a_off).max(), 1))
    ncon1 = 2 * cap + (cap * k if coulomb else 0)
    ncon2 = cap + (cap * k if coulomb else 0)
    na, n1, n2 = (mcap, ncon1, ncon2) if active_set else (1, 1, 1)
    fw, iw = work_sizes(na, n1) if active_set else (1, 1)
    kk = k if coulomb else 0
    ns = nslot if active_set else 1
    state = np.zeros(_N_STATE, dtype=np.int64)
    state[_S_KEY2_R] = -1
    state[_S_R] = -1
    return QPWork(
        J=np.zeros((mcap, nv)), Jf=np.zeros((mcap, nf)), dlin=np.zeros(mcap),
        L=np.zeros((nu, nu)), tau0=np.zeros(nu), fstar=np.zeros(nv), qdd=np.zeros(nu),
        sep=np.zeros(cap, dtype=np.bool_), dropped=np.zeros((cap, 2), dtype=np.bool_),
        f0=np.zeros(mcap), W=np.zeros(mcap * mcap),
        imp_raw=np.zeros((cap, 3)), p1_rows=p1_rows, p1_cols=p1_cols, p1_off=p_off,
        a1_rows=a1_rows, a1_cols=a1_cols, a1_off=a_off, p1x=np.zeros(nmax1),
        q1=np.zeros(mcap), a1x=np.zeros(amax1), l1=np.zeros(ncon1), qlin=np.zeros(mcap),
        q1r=np.zeros(mcap), x0=np.zeros(mcap), p2x=np.zeros(mcap * (mcap + 1) // 2),
        q2=np.zeros(mcap), a2x=np.zeros(ncon2 * mcap), l2=np.zeros(ncon2),
        x2ws=np.zeros(mcap), prev_f=np.zeros((nslot, 3)),
        prev_known=np.zeros(nslot, dtype=np.bool_),
        last_slots=np.zeros(cap, dtype=np.int64), key2_slots=np.zeros(cap, dtype=np.int64),
        ffull=np.zeros(mcap), state=state,
        fstate=np.zeros(1), P1d=np.zeros(na * na), A1d=np.zeros(n1 * na),
        P2d=np.zeros(na * na), A2d=np.zeros(n2 * na), u_inf=np.full(n1, np.inf),
        x1=np.zeros(na), x1b=np.zeros(na), x2=np.zeros(na), y=np.zeros(n1),
        act1=np.zeros(n1, dtype=np.int64), act2=np.zeros(n2, dtype=np.int64),
        warm=np.zeros(n1, dtype=np.int64),
        prev_act1=np.zeros((ns, 2 + kk), dtype=np.int64),
        prev_act2=np.zeros((ns, 1 + kk), dtype=np.int64),
        act_known=np.zeros((ns, 2), dtype=np.bool_),
        qp_fwork=np.zeros(fw), qp_iwork=np.zeros(iw, dtype=np.int64),
        s2_fwork=np.zeros(max(mcap * (nf + 1) + nf + 2 + max(nu * mcap, ncon2),
                              linear_term_work_size(mcap, nf))),
        H=np.zeros(mcap * mcap), Jv0=np.zeros(mcap), uf=np.zeros(mcap), v0=np.zeros(nv),
        Kff=np.zeros((nf, nf)), ufree=np.zeros(nf), G=np.zeros((nu, nu)),
        JK=np.zeros((mcap, nf)), rscratch=np.zeros(max(nu * (nf + 2), nu + nv)),
        lin=np.zeros(mcap),
        tau1=np.zeros(nu), vnext=np.zeros(nv), gen=np.zeros(nv), c=np.zeros(mcap),
        f=np.zeros(mcap), gscratch=np.zeros(cap), cloc=np.zeros((3, cap)))


def flag_names(bits: int) -> tuple[str, ...]:
    """The flags of the compiled flow's bits (:data:`QP_FLAG_NAMES`, in their order)."""
    return tuple(name for bit, name in QP_FLAG_NAMES if bits & bit)


def fallback_flag_names(status: int, bits: int) -> tuple[str, ...]:
    """The flags of a Stage I failure with solver status ``status`` and the flow's ``bits``
    so far (the documented fallback: ``fallback``, ``infeasible`` / ``iteration_limit``, then
    the corrections' flags)."""
    names = ["fallback"]
    if status in (_PRIMAL_INF, _PRIMAL_INF_INACC):
        names.append("infeasible")
    if status == _MAX_ITER:
        names.append("iteration_limit")
    return (*names, *flag_names(bits & ~(_ITER_LIMIT | _MIN_NORM)))


class _FlowState:
    """The compiled flow's buffers kept in ``solve``'s method state: the :class:`QPWork`
    (its record for the kernels), the warm-start slot of each contact identity seen and, for
    the OSQP variant, Stage I's patterns (``pat1``) and its solvers (``osqp``)."""

    def __init__(self, dims: tuple, cap: int, nslot: int, old: _FlowState | None) -> None:
        nv, nu, nf, k, coulomb, active_set = dims
        self.dims, self.cap = dims, cap
        pats, self.pat1 = (None, {}) if active_set else osqp_stage1_patterns(cap, cap, k,
                                                                               coulomb)
        self.w = new_qp_work(cap, nv, nu, nf, nslot, k, coulomb, active_set, pats)
        self.rec = qp_work_record(self.w)
        self.osqp: OSQPStages | None = None
        self.slot_of: dict = {}
        if old is not None and old.dims == dims:  # keep the active sets known by slot
            self.slot_of = old.slot_of
            n = old.w.act_known.shape[0]
            for name in ("prev_act1", "prev_act2", "act_known"):
                getattr(self.w, name)[:n] = getattr(old.w, name)

    @classmethod
    def of(cls, data: dict, method: str, problem: ContactProblem, k: int, coulomb: bool,
           active_set: bool) -> tuple[_FlowState, np.ndarray]:
        """The state of ``data`` fitting ``problem`` (grown or made anew) and the problem's
        contact slots."""
        dims = (problem.nv, problem.nu, problem.nv - problem.nu, k, coulomb, active_set)
        name = f"{method}_flow" if active_set else f"{method}_flow_osqp"
        fs: _FlowState | None = data.get(name)
        ids = problem.contact_ids
        known = fs.slot_of if fs is not None and fs.dims == dims else {}
        nslot = len(known) + sum(cid not in known for cid in set(ids))
        if (fs is None or fs.dims != dims or fs.cap < problem.nc
                or fs.w.prev_known.shape[0] < nslot):
            cap = max(problem.nc, fs.cap if fs is not None else 0)
            fs = data[name] = cls(dims, cap, max(2 * nslot, 8), fs)
        slots = np.empty(problem.nc, dtype=np.int64)
        for i, cid in enumerate(ids):
            slots[i] = fs.slot_of.setdefault(cid, len(fs.slot_of))
        return fs, slots


def _flow_options(problem: ContactProblem, coulomb: bool, k: int, active_set: bool, *,
                  stage2: bool, max_iter: int, stage2_reg: float, rank_tol: float,
                  stage1_reg: float, stage1_objective: str, stage1_recenter: bool,
                  sticking_correction: bool, sticking_gap: float, friction_gap: float | None,
                  rank_mass_ratio: float) -> QPOptions:
    """The :class:`QPOptions` of ``solve``'s keyword options on ``problem`` (the contact
    model's entries are the compiled tick's; unused here)."""
    return QPOptions(
        margin=0.0, phi_deadband=0.0, passive_impact=False, separation_tolerance=0.0,
        dt=float(problem.dt), coulomb=coulomb, k=k,
        sticking_correction=bool(sticking_correction), sticking_gap=float(sticking_gap),
        min_pivot=min_pivot(problem, 100.0),
        friction_gap=_INF if friction_gap is None else float(friction_gap),
        tangential_floor=0.0 if coulomb else min_pivot(problem, rank_mass_ratio),
        contact_velocity=stage1_objective == "contact_velocity",
        stage1_reg=float(stage1_reg), stage2=bool(stage2), stage2_reg=float(stage2_reg),
        rank_tol=float(rank_tol), max_nc=problem.nc, active_set=active_set,
        recenter=bool(stage1_recenter), max_iter=int(max_iter), qp_tol=ACTIVE_SET_TOL,
        qp_dep_tol=ACTIVE_SET_DEP_TOL)


def _problem_arrays(problem: ContactProblem, slots: np.ndarray) -> QPArrays:
    """The :class:`QPArrays` of ``problem`` (S and T copied: the flow zeroes rows of them)."""
    def c(x, dtype=np.float64):
        return np.ascontiguousarray(x, dtype=dtype)

    return QPArrays(Minv=c(problem.Minv), h=c(problem.h), v=c(problem.v),
                    N=np.array(problem.N, dtype=np.float64, order="C"),
                    S=np.array(problem.S, dtype=np.float64, order="C"),
                    T=np.array(problem.T, dtype=np.float64, order="C"),
                    phi=c(problem.phi), mu=c(problem.mu), qdd_des=c(problem.qdd_des),
                    act=c(problem.actuated, np.int64), free=c(problem.free, np.int64),
                    slot=slots, arena=NO_ARENA)


def _flow_fallback(problem: ContactProblem, data: dict, method: str, reason: str, status: int,
                   bits: int, iterations: int, info: dict, w: QPWork) -> ContactResult:
    """The documented fallback of a Stage I failure (``status``) or a non-finite result."""
    res = fallback_result(problem, method, data.get("tau"), reason)
    for name in fallback_flag_names(status, bits):
        res.stats.add_flag(name)
    res.stats.iterations = iterations
    res.stats.info.update(info)
    if bits & _CORRECTED:
        _mark_corrected(res, problem, w.qdd)
    return res


def _flow_result(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                 k: int, w: QPWork, bits: int, stats: SolverStats, info: dict
                 ) -> ContactResult:
    """The result of a solved flow (``w``): torques, impulses with the inert rows zeroed,
    v+, statistics; the method state for the next solve."""
    nc, m = problem.nc, 3 * problem.nc
    f0, f = w.f0[:m], w.f[:m]
    H = w.H[:m * m].reshape(m, m)
    info["stage1_objective"] = float(0.5 * f0 @ H @ f0 + w.lin[:m] @ f0 / problem.dt)
    tau, v_next = w.tau1.copy(), w.vnext.copy()
    N = w.J[:nc]  # the normal rows (never zeroed)
    viol = max(0.0, float(np.max(-(N @ v_next + problem.phi / problem.dt))))
    info["noninterpenetration"] = viol
    stats.residual = viol
    if bits & _ROWS_DROPPED:
        info["rows_dropped"] = int(w.dropped[:nc].sum())
    stats.info = info
    ids = tuple(problem.contact_ids)
    mstate.contact_ids = ids
    mstate.impulses = w.imp_raw[:nc].copy()
    mstate.active_ids = tuple(cid for i, cid in enumerate(ids) if w.c[i] > 0.0)
    mstate.data[f"{method}_f"] = (ids, QPLayout(coulomb, nc, k, m, nc), f.copy())
    res = ContactResult.from_impulses(problem, tau, w.cloc[:, :nc].T.copy(), v_next, stats)
    if bits & _CORRECTED:
        _mark_corrected(res, problem, w.qdd)
    return res


def _mark_corrected(res: ContactResult, problem: ContactProblem, qdd: np.ndarray) -> None:
    """An applied sticking correction on ``res`` (as ``consistency.mark_sticking_correction``): the
    accelerations solved for [rad/s^2] and their largest change, ``consistent = False``."""
    res.stats.info["qdd_corrected"] = qdd.copy()
    res.stats.info["qdd_correction"] = float(np.max(np.abs(qdd - problem.qdd_des)))
    res.consistent = False


def _solve_active_set(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                      k: int, o: QPOptions, warm_start: bool, osqp_retry) -> ContactResult:
    """Both stages by the compiled flow (:func:`qp_active_set`) on the problem's arrays."""
    data = mstate.data
    fs, slots = _FlowState.of(data, method, problem, k, coulomb, True)
    w = fs.w
    code, bits = qp_active_set(_problem_arrays(problem, slots), o, fs.rec, bool(warm_start))
    st = w.state
    s1 = int(st[_S_S1])
    info: dict[str, Any] = {"setup": False, "stage1_status": _status_name(s1),
                            "formulation": "dense"}
    if code == TICK_GENERIC and s1 == 0:
        raise np.linalg.LinAlgError(f"{method}: P M^-1 P^T is singular")
    if code == TICK_STAGE1_FAILED and s1 in (_PRIMAL_INF, _NOT_PD):
        # Stage I has no exact solution (e.g. a held grasp whose prescribed finger motion
        # the box cannot follow within friction): OSQP's iterate at its limit is the
        # compromise the closed loops were tuned with, rather than the fallback torques
        res = osqp_retry()
        res.stats.info["active_set_stage1"] = _status_name(s1)
        return res
    if code != TICK_OK:
        reason = (f"active-set QP Stage I: {_status_name(s1)}" if code == TICK_STAGE1_FAILED
                  else "non-finite result")
        return _flow_fallback(problem, data, method, reason,
                              s1 if code == TICK_STAGE1_FAILED else 0, int(st[_S_BITS]),
                              int(st[_S_IT]), info, w)
    info["stage1_exact"] = int(st[_S_KIND]) == 2
    r = int(st[_S_R])
    info["nullity"] = max(r, 0)
    s2 = int(st[_S_S2])
    info["stage2_status"] = ("skipped" if r <= 0 else "solved" if s2 == 1
                             else f"failed: {_status_name(s2)}")
    data[f"{method}_key"] = (tuple(problem.contact_ids), k if coulomb else 0, "dense",
                             "active_set")
    stats = SolverStats(method=method, flags=flag_names(bits), iterations=int(st[_S_IT]),
                        warm_start_used=bool(st[_S_WARM_USED]))
    return _flow_result(problem, mstate, method, coulomb, k, w, bits, stats, info)


def _solve_osqp_dense(problem: ContactProblem, mstate: MethodState, method: str, coulomb: bool,
                      k: int, o: QPOptions, warm_start: bool, set1: dict[str, Any],
                      set2: dict[str, Any]) -> ContactResult:
    """The OSQP variant on the dense reduced form: the compiled stages (:func:`qp_prepare`,
    :func:`qp_stage2`, :func:`qp_finish`) around OSQP's solves (:class:`OSQPStages`, one
    solver per contact set)."""
    nc = problem.nc
    data = mstate.data
    ids = tuple(problem.contact_ids)
    fs, slots = _FlowState.of(data, method, problem, k, coulomb, False)
    w = fs.w
    if fs.osqp is None or fs.osqp.set1 != set1 or fs.osqp.set2 != set2:
        fs.osqp = OSQPStages(w, k, coulomb, fs.pat1, set1, set2, o.recenter, False)
    # the previous forces by identity (this path's, or those the compiled tick exported)
    w.prev_known[:] = False
    prev = data.get(f"{method}_f")
    if prev:
        pids, play, pf = prev
        index = {cid: j for j, cid in enumerate(pids)}
        for i, cid in enumerate(ids):
            j = index.get(cid)
            if j is not None:
                w.prev_known[slots[i]] = True
                w.prev_f[slots[i]] = pf[play.rows_of_contact(j)]
    key = (ids, k if coulomb else 0, "dense", "osqp")
    cont_ok = warm_start and data.get(f"{method}_key") == key
    p = _problem_arrays(problem, slots)
    rec = fs.rec
    code, fresh, found = qp_prepare(p, o, rec, cont_ok, bool(warm_start))
    if code != TICK_OK:
        raise np.linalg.LinAlgError(f"{method}: P M^-1 P^T is singular")
    stages = fs.osqp
    code, res, sa, s1, it, r = stages.run(
        nc, fresh, found, recenter_q,
        lambda xa, sa, xb, sb, second, cont: qp_stage2(p, o, rec, xa, sa, xb, sb, second, cont),
        lambda x2, s2: qp_finish(p, o, rec, x2, s2), cont_ok)
    info: dict[str, Any] = {"setup": stages.setup1, "stage1_status": _status_name(s1),
                            "formulation": "dense"}
    if stages.setup2:
        info["setup2"] = True
    bits = int(w.state[_S_BITS])
    if code != TICK_OK:
        reason = (f"OSQP Stage I: {_status_name(sa)}" if code == TICK_STAGE1_FAILED
                  else "non-finite result")
        data.pop(f"{method}_key", None)
        return _flow_fallback(problem, data, method, reason,
                              sa if code == TICK_STAGE1_FAILED else 0, bits, it, info, w)
    bits = res[1]
    s2 = stages.status2
    info["nullity"] = max(r, 0)
    info["stage2_status"] = ("skipped" if r <= 0 else "solved" if s2 == _SOLVED
                             else _status_name(s2) if s2 in _ACCEPT
                             else f"failed: {_status_name(s2)}")
    data[f"{method}_key"] = key
    stats = SolverStats(method=method, flags=flag_names(bits), iterations=it,
                        warm_start_used=bool(found) if fresh else True)
    return _flow_result(problem, mstate, method, coulomb, k, w, bits, stats, info)



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
            coulomb: bool, k: int, Jfix: np.ndarray) -> tuple[np.ndarray, int]:
    """Minimum-norm torques on Stage I's optimal set (eqs. 102-112), lifted sparse form."""
    data = mstate.data
    mu = problem.mu
    tau1, _, _ = red.recover(problem.dt * f0)     # torques of the Stage I solution
    r = lay.m - (int(np.linalg.matrix_rank(Jfix, tol=rank_tol * max(
        1.0, float(np.abs(Jfix).max())))) if Jfix.shape[1] else 0)
    info["nullity"] = r
    if r == 0:
        info["stage2_status"] = "skipped"
        return f0, 0
    # the solver's pattern: J_fix has one more column where the linear term varies
    skey = (key, "sparse", Jfix.shape[1])
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
    noslip_gap: float | None = None,
    rank_mass_ratio: float = 0.0,
    **options: Any,
) -> ContactResult:
    """Two-stage convex inverse dynamics with unbounded friction (no-slip; Sec. 6 with mu = inf).

    Same ``options`` as :func:`solve_qp_coulomb`, with the same defaults (no pyramid:
    ``friction_edges`` and ``friction_gap`` are ignored, like any option of another method):
    tangential impulses are free variables, normal impulses ``>= 0``. ``noslip_gap`` [m] (as
    for ``lcp_noslip``): the free tangential impulses exist only at contacts with
    ``phi <= noslip_gap`` (eq. (34)); a separated candidate gets no friction (its S, T rows are
    zeroed, so its tangential impulses leave the objective and Stage II sets them to zero).
    ``None`` (default): every candidate.

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
    options.pop("friction_edges", None)
    options.pop("friction_gap", None)
    return _solve_two_stage(problem, mstate, "qp_noslip", False, friction_gap=noslip_gap,
                            rank_mass_ratio=rank_mass_ratio, **options)


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
