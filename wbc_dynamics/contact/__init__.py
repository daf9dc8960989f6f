"""Contact-aware inverse dynamics (Zapolsky & Drumwright): contact geometry, problem assembly and
solvers.

Public API::

    from wbc_dynamics.contact import ContactProblem, ContactResult, SolverState, solve
    res = solve("lcp_noslip", problem, state)

See ``docs/contact_api.md``.
"""

from .dispatch import METHODS, fallback_result, free_dof_id, solve, solve_no_contacts, warmup
from .problem import FLAGS, ContactProblem, ContactResult, MethodState, SolverState, SolverStats

__all__ = [
    "FLAGS",
    "METHODS",
    "ContactProblem",
    "ContactResult",
    "MethodState",
    "SolverState",
    "SolverStats",
    "fallback_result",
    "free_dof_id",
    "solve",
    "solve_no_contacts",
    "warmup",
]
