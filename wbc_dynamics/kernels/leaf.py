"""``@leaf_kernel``: ``@njit(cache=True)`` without numba's reference counting, for the kernels of
a tick that only borrow arrays from their caller.

numba's runtime (NRT) counts references to every array: each array argument, each view
(``A[i]``, ``a[:n]``, ``reshape``) and each array field read from a record is an atomic
increment on entry and a decrement on exit. A profile of the quadruped's ``qp_coulomb`` tick
counted ~2800 such calls per tick, 10 % of its time, most of them in small helpers called in
loops (Cholesky appends, the dense QP's Givens updates, the contact emitter). A kernel that
allocates nothing and returns no array does not need them: whatever it reads stays alive in its
caller for the whole call. ``_nrt=False`` compiles it without them.

The contract, which numba only half checks:

- it allocates nothing (``np.empty`` & co. fail to compile without NRT: checked);
- it returns no array and stores none anywhere (not checked: a returned view would be owned
  by no one);
- it calls only leaf kernels or ``inline="always"`` helpers (numba inlines their code into
  the caller, which then decides the counting), no other compiled function (an array such a
  callee returns would never be released).

``test/test_leaf_kernels.py`` checks the parts numba does not.

Results are bitwise those of the counted kernel (only the bookkeeping differs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import njit

__all__ = ["leaf_kernel"]


def leaf_kernel(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@njit(cache=True, _nrt=False, **options)``; use as ``@leaf_kernel`` or
    ``@leaf_kernel(error_model="numpy")``. See the module docstring for the contract."""
    decorate = njit(cache=True, _nrt=False, **options)
    return decorate if fn is None else decorate(fn)
