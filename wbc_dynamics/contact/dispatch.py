"""Common entry point :func:`solve` for all contact-aware inverse dynamics methods.

Method modules are imported lazily so that each method works as soon as its module exists:

=============== ===================================== =========================================
method          module                                function
=============== ===================================== =========================================
"lcp_noslip"    ``wbc_dynamics.contact.lcp_noslip``   ``solve_lcp_noslip(problem, mstate, **o)``
"lcp_coulomb"   ``wbc_dynamics.contact.lcp_coulomb``  ``solve_lcp_coulomb(problem, mstate, **o)``
"qp_coulomb"    ``wbc_dynamics.contact.qp``           ``solve_qp_coulomb(problem, mstate, **o)``
"qp_noslip"     ``wbc_dynamics.contact.qp``           ``solve_qp_noslip(problem, mstate, **o)``
=============== ===================================== =========================================

Each method function receives a *validated* problem with ``nc >= 1`` and its own
:class:`~wbc_dynamics.contact.problem.MethodState` (never None; empty on a cold start), returns a
:class:`~wbc_dynamics.contact.problem.ContactResult` and updates the method state for the next tick.

The dispatcher adds: input validation (ValueError naming the field), the zero-contact path (plain
inverse dynamics), timing (``stats.solve_time_s``), and a last-resort safety net: if the method
raises an unexpected exception or returns non-finite numbers, the result is the documented fallback
of :func:`fallback_result`, flagged ``"fallback"``.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..kernels.arena import NO_ARENA
from .problem import (
    ContactProblem,
    ContactResult,
    MethodState,
    SolverState,
    SolverStats,
    contact_weights,
)

__all__ = ["METHODS", "solve", "solve_no_contacts", "fallback_result", "free_dof_id", "warmup",
           "flag_names", "ContactArrays", "contact_arrays"]

# Flag bits of the compiled LCP solves (``lcp_noslip.noslip_solve_kernel``,
# ``lcp_coulomb.coulomb_solve_kernel``), shared by ``solve`` and the compiled ticks; each
# method's table (``NOSLIP_FLAGS``, ``COULOMB_FLAGS``) names them in the order of
# ``stats.flags``.
(FLAG_ROWS_DROPPED, FLAG_WARM_REJECTED, FLAG_CORRECTED, FLAG_MIN_NORM, FLAG_MIN_NORM_FAILED,
 FLAG_REGULARIZED, FLAG_STICKING_FAILED) = (1, 2, 4, 8, 16, 32, 64)


class ContactArrays(NamedTuple):
    """The assembled problem of one tick as the compiled solves take it: the LCP methods'
    kernels and the QP methods' flow (``contact.qp_flow``) alike. The fields of
    :class:`~wbc_dynamics.contact.problem.ContactProblem`, generalized coordinates of the model:
    ``Minv`` (nv, nv) M^-1, ``h`` (nv,) [N, N m] C v + g, ``v`` (nv,) [m/s, rad/s], ``act`` /
    ``free`` (nu,) / (nf,) dof indices, ``qdd_des`` (nu,) [rad/s^2] in ``act``'s order, the
    contact rows ``N``, ``S``, ``T`` (nc, nv) (normal and tangents, contact frames; a solve may
    zero rows of ``S`` and ``T`` in place), ``phi`` (nc,) [m] signed distances, ``mu`` (nc,)
    friction coefficients, ``dt`` [s], ``weight`` (nc,) >= 1 the per-contact weights of
    ``lcp_noslip``'s minimum-norm selection (all 1: unweighted); then ``slot`` (nc,) each
    contact's warm-start slot of the QP flow (a candidate's slot in the compiled tick; the index
    of its identity in ``solve``'s method state) and ``arena`` the QP flow's scratch memory
    (``wbc_dynamics.kernels.arena``; ``NO_ARENA``: temporaries are allocated). The compiled
    ticks fill it with views of their candidate buffers (``_tick_arrays``), ``solve`` with the
    problem's arrays (:func:`contact_arrays`): the same types, one compiled solve."""

    Minv: np.ndarray
    h: np.ndarray
    v: np.ndarray
    act: np.ndarray
    free: np.ndarray
    qdd_des: np.ndarray
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    phi: np.ndarray
    mu: np.ndarray
    dt: float
    weight: np.ndarray
    slot: np.ndarray
    arena: Any  # an Arena record: kernels.arena is internal, not in the API reference


def contact_arrays(problem: ContactProblem, S: np.ndarray | None = None,
                   T: np.ndarray | None = None,
                   slot: np.ndarray | None = None) -> ContactArrays:
    """The validated ``problem``'s arrays (not copies) as :class:`ContactArrays`; ``S``, ``T``:
    other tangent rows to use (the caller's copies, for a solve that modifies them); ``slot``:
    the QP flow's warm-start slots (default ``0..nc-1``). No arena: temporaries are
    allocated."""
    p = problem
    return ContactArrays(Minv=p.Minv, h=p.h, v=p.v, act=p.actuated, free=p.free,
                         qdd_des=p.qdd_des, N=p.N, S=p.S if S is None else S,
                         T=p.T if T is None else T, phi=p.phi, mu=p.mu, dt=float(p.dt),
                         weight=contact_weights(p.nc, p.weights),
                         slot=np.arange(p.nc) if slot is None else slot, arena=NO_ARENA)


@njit(cache=True, inline="always")
def _tick_arrays(a, nc, qdd_des):
    """The assembled problem of a compiled tick (rows ``0..nc-1`` of its contact buffers
    ``a.data``, a :class:`~wbc_dynamics.contact.geometry.ContactData` record) as
    :class:`ContactArrays` of views: no copy, no allocation. ``a``: the tick's fixed arguments
    (``tick_base.ContactTickArgs``: ``data``, ``actuated``, ``free`` and ``options`` with the
    control period ``dt`` [s]); ``qdd_des`` (nu,) [rad/s^2] the actuated dofs' desired
    accelerations."""
    d = a.data
    return ContactArrays(Minv=d.Minv, h=d.h, v=d.v, act=a.actuated, free=a.free, qdd_des=qdd_des,
                         N=d.N[:nc], S=d.S[:nc], T=d.T[:nc], phi=d.phi[:nc], mu=d.mu[:nc],
                         dt=a.options.dt, weight=d.weight[:nc], slot=d.slot[:nc], arena=d.arena)


def flag_names(bits: int, table: tuple[tuple[int, str], ...]) -> tuple[str, ...]:
    """The flag names of ``bits`` in the order of ``table`` ((bit, name) pairs)."""
    return tuple(name for bit, name in table if bits & bit)

#: Each method's module and function (imported by :func:`solve` on the method's first use).
METHODS: dict[str, tuple[str, str]] = {
    "lcp_noslip": ("wbc_dynamics.contact.lcp_noslip", "solve_lcp_noslip"),
    "lcp_coulomb": ("wbc_dynamics.contact.lcp_coulomb", "solve_lcp_coulomb"),
    "qp_coulomb": ("wbc_dynamics.contact.qp", "solve_qp_coulomb"),
    "qp_noslip": ("wbc_dynamics.contact.qp", "solve_qp_noslip"),
}


def _method_function(method: str):
    try:
        modname, fname = METHODS[method]
    except KeyError:
        raise ValueError(
            f"solve: unknown method {method!r}; expected one of {sorted(METHODS)}"
        ) from None
    mod = importlib.import_module(modname)
    return getattr(mod, fname)


def free_dof_id(problem: ContactProblem) -> tuple[np.ndarray, np.ndarray]:
    """Inverse dynamics without contact forces (contact-free path of the common entry).

    Solves eq. (37) with zero contact impulses together with eq. (38):
    ``P v+ = qdot_des`` and ``v+ = f* + dt Minv P^T tau`` with ``f* = v - dt Minv h``, so
    ``tau = (P Minv P^T)^{-1} (qdot_des - P f*) / dt``. ``P Minv P^T`` is the (positive definite)
    actuated block of M^{-1} (cf. eq. 63). For a fixed-base robot this equals
    ``M qdd_des + h`` (RNEA); with a floating base the free dofs accelerate freely.

    Returns:
        (tau (nu,), v_next (nv,)).
    """
    a = problem.actuated
    fstar = problem.free_velocity()
    if problem.nu == 0:
        return np.zeros(0), fstar
    Y = problem.Minv[np.ix_(a, a)]
    rhs = (problem.desired_velocity() - fstar[a]) / problem.dt
    L = np.linalg.cholesky(Y)
    tau = np.linalg.solve(L.T, np.linalg.solve(L, rhs))
    v_next = fstar + problem.dt * (problem.Minv[:, a] @ tau)
    return tau, v_next


def solve_no_contacts(problem: ContactProblem, method: str = "none") -> ContactResult:
    """Zero-contact path: plain inverse dynamics (:func:`free_dof_id`), flagged "no_contacts"."""
    tau, v_next = free_dof_id(problem)
    stats = SolverStats(method=method, flags=("no_contacts",))
    stats.residual = problem.dynamics_residual(tau, np.zeros((problem.nc, 3)), v_next)
    return ContactResult.from_impulses(problem, tau, np.zeros((problem.nc, 3)), v_next, stats)


def fallback_result(
    problem: ContactProblem, method: str, prev_tau: np.ndarray | None = None, reason: str = ""
) -> ContactResult:
    """Documented safe fallback used when a method fails.

    The torques of the previous successful tick (``prev_tau``, "hold last command") if available
    and finite, else the contact-free inverse dynamics torques of :func:`free_dof_id`. Contact
    impulses are zero and ``v_next`` is the velocity that these torques produce without contact
    forces, so eq. (37) holds exactly; ``consistent`` is False and the flag "fallback" is set.
    """
    if prev_tau is not None and prev_tau.shape == (problem.nu,) and np.all(np.isfinite(prev_tau)):
        tau = np.array(prev_tau, dtype=np.float64)
        v_next = problem.free_velocity() + problem.dt * (problem.Minv[:, problem.actuated] @ tau)
        source = "previous_tau"
    else:
        try:
            tau, v_next = free_dof_id(problem)
            source = "contact_free_id"
        except np.linalg.LinAlgError:
            tau = np.zeros(problem.nu)
            v_next = problem.free_velocity()
            source = "zero_tau"
    if not (np.all(np.isfinite(tau)) and np.all(np.isfinite(v_next))):
        tau = np.zeros(problem.nu)
        v_next = np.array(problem.v, dtype=np.float64)
        source = "zero_tau"
    stats = SolverStats(
        method=method, flags=("fallback",), info={"fallback_source": source, "reason": reason}
    )
    imp = np.zeros((problem.nc, 3))
    stats.residual = problem.dynamics_residual(tau, imp, v_next)
    return ContactResult.from_impulses(problem, tau, imp, v_next, stats, consistent=False)


def solve(
    method: str, problem: ContactProblem, state: SolverState | None = None, **options: Any
) -> ContactResult:
    """Contact-aware inverse dynamics for one control tick.

    Args:
        method: "lcp_noslip" | "lcp_coulomb" | "qp_coulomb" | "qp_noslip".
        problem: the assembled tick (validated here; ValueError names a bad field).
        state: warm start carried across ticks (optional; None = cold start, nothing stored).
            Its ``options[method]`` (if any) supply default options.
        **options: method-specific options (see each method's docstring).

    Returns:
        ContactResult with torques [N m], contact forces [N] (contact and world frame), v+ and
        solver statistics. Never contains NaN: failures yield :func:`fallback_result`.
    """
    t0 = time.perf_counter()
    if method not in METHODS:
        raise ValueError(f"solve: unknown method {method!r}; expected one of {sorted(METHODS)}")
    problem.validate()
    mstate = state.get(method) if state is not None else None
    if state is not None and state.options.get(method):
        options = {**state.options[method], **options}
    if problem.nc == 0:
        res = solve_no_contacts(problem, method)
    else:
        fn = _method_function(method)
        ms = mstate if mstate is not None else MethodState()
        try:
            res = fn(problem, ms, **options)
            if not res.all_finite:
                res = fallback_result(problem, method, ms.data.get("tau"), "non-finite result")
        except (np.linalg.LinAlgError, FloatingPointError, ArithmeticError, RuntimeError) as exc:
            res = fallback_result(problem, method, ms.data.get("tau"), repr(exc))
    if mstate is not None:
        if "fallback" not in res.stats.flags:
            mstate.data["tau"] = res.tau.copy()
        if problem.nc == 0:
            mstate.contact_ids = ()
            mstate.impulses = np.zeros((0, 3))
            mstate.active_ids = ()
    if state is not None:
        state.ticks += 1
    res.stats.solve_time_s = time.perf_counter() - t0
    return res


def warmup(methods: tuple[str, ...] | list[str] | None = None) -> float:
    """Compile / load the compiled kernels of the given methods (default: all importable).

    Solves a small synthetic problem (a 6-DoF free body with one actuated dof, four contacts)
    cold, warm, with ``min_norm`` and with inconsistent desired accelerations, so that no
    compilation happens in the first control tick. Returns the seconds it took.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    nv, nc = 7, 4
    A = rng.standard_normal((nv, nv))
    Minv = np.linalg.inv(A @ A.T + nv * np.eye(nv))
    Minv = 0.5 * (Minv + Minv.T)
    N = rng.standard_normal((nc, nv))
    prob = ContactProblem(
        dt=1e-3, Minv=Minv, h=rng.standard_normal(nv), v=np.zeros(nv),
        actuated=np.array([6]), free=np.arange(6), qdd_des=np.zeros(1), N=N,
        S=rng.standard_normal((nc, nv)), T=rng.standard_normal((nc, nv)), phi=np.zeros(nc),
        mu=np.full(nc, 0.5), contact_ids=tuple(range(nc)),
        points=np.zeros((nc, 3)), frames=np.tile(np.eye(3), (nc, 1, 1)),
    )
    names = list(METHODS) if methods is None else list(methods)
    for method in names:
        try:
            _method_function(method)
        except (ImportError, AttributeError):
            if methods is not None:
                raise
            continue
        st = SolverState()
        solve(method, prob, st)
        solve(method, prob, st)
        solve(method, prob, None)
        if method == "lcp_noslip":
            solve(method, prob, None, min_norm=True)
            bad = ContactProblem(**{**prob.__dict__, "qdd_des": np.array([1e3])})
            solve(method, bad, None)
    return time.perf_counter() - t0
