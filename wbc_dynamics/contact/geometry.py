"""Contact geometry and per-tick assembly of :class:`ContactProblem`
(Zapolsky & Drumwright, Sec. 3.3, App. B).

One module because :class:`ContactModel` owns and binds the buffers its candidate, assembly and
impact kernels write; splitting the kernels from it would split one record's producers from
its owner.

Environment features (:class:`HalfSpace`, :class:`SphereObstacle`) are static; a contacted free
body (:class:`FreeBody`, e.g. the ``box`` robot of Sec. 1.5 / 7.1) is a second
:class:`~wbc_dynamics.RobotModel` with a free-flyer root whose 6 DoF and inertia are appended to
the system (eqs. (1)-(3)): ``v = [v_robot; v_box]``, ``M^-1 = blkdiag(M_robot^-1, M_box^-1)``.

For every candidate pair (collision sphere on a configured robot link x feature) the kernel
computes (Fig. 4):

* sphere / half-space ``{x : n.x >= d}``: ``phi = n.c - d - r``, normal ``n`` (the plane normal),
  contact point midway between the closest points ``c - r n`` and ``c - (phi + r) n``;
* sphere / sphere obstacle (centre e, radius R): ``n = (c - e)/|c - e|``, ``phi = |c - e| - r - R``,
  contact point midway between ``c - r n`` and ``e + R n``;
* sphere / box (free body, half extents a, pose (R_b, p_b)): closest point of the box surface to
  the sphere centre (signed: inside the box the least-penetration face is used), normal from the
  box to the sphere centre, contact point midway.

Frame ``(n, s, t)`` (deterministic and stable across ticks): ``s`` is the world x axis projected on
the tangent plane (world y when ``|n_x| > 0.9``), normalized; ``t = n x s``.

Candidates with ``phi <= margin`` enter the problem; the phi/dt term of eqs. (35)/(36) is applied
by the solvers. Rows of N, S, T are ``n^T J``, ``s^T J``, ``t^T J`` (Appendix B) with ``J`` the
world-aligned linear Jacobian of the contact point on the robot link (minus that of the same point
attached to the free body for box contacts), computed after ONE forward-kinematics pass in a
compiled kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref
from numpy.typing import ArrayLike

from ..kernels import arena as _ar
from ..kernels import world
from ..kernels.arena import NO_ARENA, Arena
from ..kernels.dynamics import OK, forward_kinematics
from ..kernels.kinematics import point_jacobian_filled
from ..kernels.leaf import leaf_kernel
from ..kernels.linalg import add_sparse_product, psd_pinv_solve
from ..kernels.records import RecordType, define_record
from ..kernels.separate import call_separately
from .candidates import contact_points
from .problem import ContactProblem

if TYPE_CHECKING:
    from ..model import RobotModel

__all__ = ["HalfSpace", "SphereObstacle", "FreeBody", "ContactModel", "contact_frame"]


@dataclass(frozen=True)
class HalfSpace:
    """Static half-space ``{x : normal . x >= offset}`` (world frame).

    Attributes:
        name: identity used in contact ids. normal: (3,) outward normal (normalized here).
        offset: d [m] (``height`` for a horizontal ground with normal +z). mu: friction.
    """

    name: str
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    offset: float = 0.0
    mu: float = 1.0

    @classmethod
    def ground(cls, height: float = 0.0, mu: float = 1.0, name: str = "ground") -> HalfSpace:
        """Horizontal ground plane at ``height`` [m] (normal +z)."""
        return cls(name=name, normal=(0.0, 0.0, 1.0), offset=float(height), mu=float(mu))

    @classmethod
    def through_point(
        cls, name: str, point: Sequence[float], normal: Sequence[float], mu: float = 1.0
    ) -> HalfSpace:
        """Half-space whose boundary plane passes through ``point`` [m] with ``normal``."""
        n = np.asarray(normal, dtype=float)
        nn = float(np.linalg.norm(n))
        if not np.isfinite(nn) or nn < 1e-12:
            raise ValueError(f"HalfSpace {name!r}: normal must be a non-zero finite vector")
        n = n / nn
        return cls(
            name=name, normal=tuple(n.tolist()), offset=float(n @ np.asarray(point)), mu=float(mu)
        )


@dataclass(frozen=True)
class SphereObstacle:
    """Static sphere obstacle: ``center`` (3,) world [m], ``radius`` [m], friction ``mu``."""

    name: str
    center: tuple[float, float, float]
    radius: float
    mu: float = 1.0


@dataclass
class FreeBody:
    """A contacted free rigid body appended to the system (Sec. 1.5, eqs. (1)-(3)).

    Attributes:
        name: identity used in contact ids.
        model: RobotModel loaded with ``floating_base=True`` and no joints (e.g. ``box``).
        half_extents: (3,) box half sizes [m] in the body frame (centred at the body origin).
        mu: friction coefficient of the body's surface.
    """

    name: str
    model: object
    half_extents: np.ndarray
    mu: float = 1.0

    @classmethod
    def from_model(cls, name: str, model: RobotModel, mu: float = 1.0) -> FreeBody:
        """Use the first collision box of a single-body floating model (e.g. bundled ``box``)."""
        if not getattr(model, "floating_base", False) or model.nv != 6:
            raise ValueError(f"FreeBody {name!r}: model must be a single free-flyer body (nv=6)")
        boxes = getattr(model, "collision_boxes", [])
        if not boxes:
            raise ValueError(f"FreeBody {name!r}: model has no collision box")
        b = boxes[0]
        if np.linalg.norm(np.asarray(b.center)) > 1e-12 or not np.allclose(b.rotation, np.eye(3)):
            raise ValueError(f"FreeBody {name!r}: collision box must be centred at the body origin")
        return cls(
            name=name, model=model, half_extents=0.5 * np.asarray(b.size, dtype=float), mu=float(mu)
        )


@leaf_kernel
def _frame_from_normal(n, F):
    """Write the contact frame (columns n, s, t) for unit normal n into F (3, 3)."""
    if abs(n[0]) > 0.9:
        rx, ry, rz = 0.0, 1.0, 0.0
    else:
        rx, ry, rz = 1.0, 0.0, 0.0
    dot = rx * n[0] + ry * n[1] + rz * n[2]
    sx = rx - dot * n[0]
    sy = ry - dot * n[1]
    sz = rz - dot * n[2]
    ns = np.sqrt(sx * sx + sy * sy + sz * sz)
    sx /= ns
    sy /= ns
    sz /= ns
    tx = n[1] * sz - n[2] * sy
    ty = n[2] * sx - n[0] * sz
    tz = n[0] * sy - n[1] * sx
    F[0, 0], F[1, 0], F[2, 0] = n[0], n[1], n[2]
    F[0, 1], F[1, 1], F[2, 1] = sx, sy, sz
    F[0, 2], F[1, 2], F[2, 2] = tx, ty, tz


def contact_frame(normal: np.ndarray) -> np.ndarray:
    """(3, 3) world rotation with columns (n, s, t) for a unit normal (see module doc)."""
    n = np.asarray(normal, dtype=np.float64)
    n = n / np.linalg.norm(n)
    F = np.empty((3, 3))
    _frame_from_normal(n, F)
    return F


class _CandidateRows(NamedTuple):
    """The buffers :func:`candidates_kernel` writes a candidate into (one row ``k`` each, in
    kernel order): ``phi`` (cap,) signed distance [m], ``p`` (cap, 3) world point [m], ``F``
    (cap, 3, 3) world frame, columns (n, s, t), ``N`` / ``S`` / ``T`` (cap, nv) the generalized
    contact directions, ``mu`` (cap,) friction coefficient."""

    phi: np.ndarray
    p: np.ndarray
    F: np.ndarray
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    mu: np.ndarray


@leaf_kernel
def _emit(k, b, cw, n, phi, p, mu, Rw, pw, model, Rf, P, Jfull, rb, Fr, rows):
    """Write candidate k into ``rows`` (:class:`_CandidateRows`): frame, phi, point and
    N/S/T rows of the robot part."""
    _frame_from_normal(n, Fr)
    rows.phi[k] = phi
    rows.mu[k] = mu
    for a in range(3):
        rows.p[k, a] = p[a]
        for c in range(3):
            rows.F[k, a, c] = Fr[a, c]
    # contact point in body frame: r = Rw^T (p - pw)
    for a in range(3):
        rb[a] = (
            Rw[b, 0, a] * (p[0] - pw[b, 0])
            + Rw[b, 1, a] * (p[1] - pw[b, 1])
            + Rw[b, 2, a] * (p[2] - pw[b, 2])
        )
    point_jacobian_filled(model, Rw, pw, b, rb, Rf, False, P, Jfull)
    nvr = Jfull.shape[1]
    out_N, out_S, out_T = rows.N, rows.S, rows.T
    for c in range(out_N.shape[1]):
        out_N[k, c] = 0.0
        out_S[k, c] = 0.0
        out_T[k, c] = 0.0
    for c in range(nvr):
        j0 = Jfull[0, c]
        j1 = Jfull[1, c]
        j2 = Jfull[2, c]
        out_N[k, c] = Fr[0, 0] * j0 + Fr[1, 0] * j1 + Fr[2, 0] * j2
        out_S[k, c] = Fr[0, 1] * j0 + Fr[1, 1] * j1 + Fr[2, 1] * j2
        out_T[k, c] = Fr[0, 2] * j0 + Fr[1, 2] * j1 + Fr[2, 2] * j2


@njit(cache=True, inline="always")
def _subtract_box_jacobian(k, Rb, bp, col, p, Fr, cl, out_N, out_S, out_T):
    """Candidate k against a free box (rotation Rb, position bp, first velocity column col):
    subtract the box point Jacobian [R_b, -R_b [r_l]x] (body-frame free-flyer velocity,
    Pinocchio convention) of the contact point p from the N/S/T rows (frame Fr); ``cl`` is
    (3,) scratch."""
    for a in range(3):
        cl[a] = Rb[0, a] * (p[0] - bp[0]) + Rb[1, a] * (p[1] - bp[1]) + Rb[2, a] * (p[2] - bp[2])
    for row in range(3):
        # direction d (n, s or t) in box axes: dl = R_b^T d.
        # d . (R_b (v_lin + w x r_l)) = dl . v_lin + w . (r_l x dl)
        dl0 = Rb[0, 0] * Fr[0, row] + Rb[1, 0] * Fr[1, row] + Rb[2, 0] * Fr[2, row]
        dl1 = Rb[0, 1] * Fr[0, row] + Rb[1, 1] * Fr[1, row] + Rb[2, 1] * Fr[2, row]
        dl2 = Rb[0, 2] * Fr[0, row] + Rb[1, 2] * Fr[1, row] + Rb[2, 2] * Fr[2, row]
        a0 = cl[1] * dl2 - cl[2] * dl1
        a1 = cl[2] * dl0 - cl[0] * dl2
        a2 = cl[0] * dl1 - cl[1] * dl0
        if row == 0:
            out = out_N
        elif row == 1:
            out = out_S
        else:
            out = out_T
        out[k, col] -= dl0
        out[k, col + 1] -= dl1
        out[k, col + 2] -= dl2
        out[k, col + 3] -= a0
        out[k, col + 4] -= a1
        out[k, col + 5] -= a2


@njit(cache=True)
def contact_kernel(model, q, Xup, Rw, pw, Rtmp, P, Jfull, sph_body, sph_r, sph_rad, hs,
                   hs_mu, es, es_mu, bx_R, bx_p, bx_a, bx_mu, bx_col, margin, out_phi, out_p,
                   out_F, out_N, out_S, out_T, out_mu, out_sph, out_feat, ar):
    """All candidate contacts after one forward-kinematics pass (into ``Xup``, ``Rw``, ``pw``;
    ``Rtmp`` (2, 3, 3) scratch): :func:`candidates_kernel` on its world poses."""
    forward_kinematics(model, q, Xup, Rw, pw, Rtmp)
    return candidates_kernel(model, Rw, pw, P, Jfull, sph_body, sph_r, sph_rad, hs, hs_mu, es,
                             es_mu, bx_R, bx_p, bx_a, bx_mu, bx_col, margin, out_phi, out_p,
                             out_F, out_N, out_S, out_T, out_mu, out_sph, out_feat, ar)


# inlined into contact_kernel (a call there made it ~0.3 us slower: ~30 array arguments
# passed); the assembly, after dynamics_terms, calls it on its own
@njit(cache=True, inline="always")
def candidates_kernel(
    model,
    Rw,
    pw,
    P,
    Jfull,
    sph_body,
    sph_r,
    sph_rad,
    hs,
    hs_mu,
    es,
    es_mu,
    bx_R,
    bx_p,
    bx_a,
    bx_mu,
    bx_col,
    margin,
    out_phi,
    out_p,
    out_F,
    out_N,
    out_S,
    out_T,
    out_mu,
    out_sph,
    out_feat,
    ar,
):
    """All candidate contacts at the world poses of the robot's bodies: ``Rw`` (nb, 3, 3)
    rotations and ``pw`` (nb, 3) positions [m] (body to world, from one forward-kinematics pass).

    sph_body (ns,), sph_r (ns, 3) body-frame centres, sph_rad (ns,); hs (nh, 4) [n, d];
    es (ne, 4) [centre, R]; boxes: bx_R (nbx, 3, 3), bx_p (nbx, 3), bx_a (nbx, 3) half extents,
    bx_col (nbx,) first column of the box's 6 dofs in the stacked v. Feature index: half-spaces
    0..nh-1, spheres nh..nh+ne-1, boxes nh+ne... Returns the number of candidates written.
    Scratch vectors from the arena ``ar`` (:mod:`wbc_dynamics.kernels.arena`).
    """
    ns = sph_body.shape[0]
    nh = hs.shape[0]
    ne = es.shape[0]
    nbx = bx_p.shape[0]
    three = np.int64(3)  # typed, not a literal: one compiled signature of the arena's calls
    Rf = _ar.floats_2d_zero(ar, three, three)  # the identity: Jacobian rows in world axes
    for a in range(3):
        Rf[a, a] = 1.0
    rb = _ar.floats(ar, three)
    Fr = _ar.floats_2d(ar, three, three)
    c = _ar.floats(ar, three)
    n = _ar.floats(ar, three)
    p = _ar.floats(ar, three)
    cl = _ar.floats(ar, three)
    ql = _ar.floats(ar, three)
    k = np.int64(0)  # typed, not a literal: one compiled signature of _emit
    rows = _CandidateRows(out_phi, out_p, out_F, out_N, out_S, out_T, out_mu)
    nfeat = nh + ne + nbx
    for s in range(ns):
        b = sph_body[s]
        r = sph_rad[s]
        for a in range(3):
            c[a] = (
                pw[b, a]
                + Rw[b, a, 0] * sph_r[s, 0]
                + Rw[b, a, 1] * sph_r[s, 1]
                + Rw[b, a, 2] * sph_r[s, 2]
            )
        # one pass over the features in index order (half-spaces, spheres, boxes): each branch
        # gives phi, normal n, point p and mu of the pair; candidates within the margin are
        # written by the one _emit below
        for f in range(nfeat):
            if f < nh:
                for a in range(3):
                    n[a] = hs[f, a]
                phi = n[0] * c[0] + n[1] * c[1] + n[2] * c[2] - hs[f, 3] - r
                if phi > margin:
                    continue
                for a in range(3):
                    p[a] = c[a] - (r + 0.5 * phi) * n[a]
                mu = hs_mu[f]
            elif f < nh + ne:
                e = f - nh
                dx = c[0] - es[e, 0]
                dy = c[1] - es[e, 1]
                dz = c[2] - es[e, 2]
                d = np.sqrt(dx * dx + dy * dy + dz * dz)
                R = es[e, 3]
                phi = d - r - R
                if phi > margin:
                    continue
                if d > 1e-12:
                    n[0], n[1], n[2] = dx / d, dy / d, dz / d
                else:
                    n[0], n[1], n[2] = 0.0, 0.0, 1.0
                for a in range(3):
                    p[a] = es[e, a] + (R + 0.5 * phi) * n[a]
                mu = es_mu[e]
            else:
                x = f - nh - ne
                Rb = bx_R[x]
                for a in range(3):
                    cl[a] = (
                        Rb[0, a] * (c[0] - bx_p[x, 0])
                        + Rb[1, a] * (c[1] - bx_p[x, 1])
                        + Rb[2, a] * (c[2] - bx_p[x, 2])
                    )
                inside = True
                for a in range(3):
                    if abs(cl[a]) > bx_a[x, a]:
                        inside = False
                if not inside:
                    dist2 = 0.0
                    for a in range(3):
                        ql[a] = min(max(cl[a], -bx_a[x, a]), bx_a[x, a])
                        dist2 += (cl[a] - ql[a]) ** 2
                    dist = np.sqrt(dist2)
                    phi = dist - r
                    if phi > margin:
                        continue
                    nl0 = (cl[0] - ql[0]) / dist
                    nl1 = (cl[1] - ql[1]) / dist
                    nl2 = (cl[2] - ql[2]) / dist
                else:
                    best = 0
                    depth = bx_a[x, 0] - abs(cl[0])
                    for a in range(1, 3):
                        da = bx_a[x, a] - abs(cl[a])
                        if da < depth:
                            depth = da
                            best = a
                    for a in range(3):
                        ql[a] = cl[a]
                    sg = 1.0 if cl[best] >= 0.0 else -1.0
                    ql[best] = sg * bx_a[x, best]
                    nl0, nl1, nl2 = 0.0, 0.0, 0.0
                    if best == 0:
                        nl0 = sg
                    elif best == 1:
                        nl1 = sg
                    else:
                        nl2 = sg
                    phi = -depth - r
                for a in range(3):
                    n[a] = Rb[a, 0] * nl0 + Rb[a, 1] * nl1 + Rb[a, 2] * nl2
                # midpoint of box surface point and sphere point
                for a in range(3):
                    qw = bx_p[x, a] + Rb[a, 0] * ql[0] + Rb[a, 1] * ql[1] + Rb[a, 2] * ql[2]
                    p[a] = 0.5 * (qw + c[a] - r * n[a])
                mu = bx_mu[x]
            _emit(k, b, c, n, phi, p, mu, Rw, pw, model, Rf, P, Jfull, rb, Fr, rows)
            if f >= nh + ne:  # a free box: its velocity enters the rows too
                x = f - nh - ne
                _subtract_box_jacobian(k, bx_R[x], bx_p[x], bx_col[x], p, Fr, cl, out_N, out_S,
                                       out_T)
            out_sph[k] = s
            out_feat[k] = f
            k += 1
    return k


class ContactGeometry(NamedTuple):
    """The constant description of a :class:`ContactModel`'s candidates, for compiled kernels.

    Robot spheres: ``sph_body`` (ns,) body index, ``sph_r`` (ns, 3) centre in the body frame
    [m], ``sph_rad`` (ns,) radius [m]. Features: half-spaces ``hs`` (nh, 4) [n, d] and their
    ``hs_mu``; sphere obstacles ``es`` (ne, 4) [centre, R] and ``es_mu``; free boxes ``bx_a``
    (nbx, 3) half extents, ``bx_mu``, ``bx_col`` (first column of the box's 6 dofs).
    A candidate's *slot* is ``sphere * n_features + feature`` (its identity as an integer).
    """

    sph_body: np.ndarray
    sph_r: np.ndarray
    sph_rad: np.ndarray
    hs: np.ndarray
    hs_mu: np.ndarray
    es: np.ndarray
    es_mu: np.ndarray
    bx_a: np.ndarray
    bx_mu: np.ndarray
    bx_col: np.ndarray


class ContactData(NamedTuple):
    """Everything the compiled contact kernels share within one tick (like Pinocchio's Data).

    Dynamics workspaces of :mod:`wbc_dynamics.kernels.world` (``W``, ``SC``, ``FP``,
    ``fext``, ``a_zero``); contact kinematics workspaces (``Xup``, ``Rw``, ``pw``, ``Rtmp``,
    ``P``, ``Jfull``); the raw candidates of :func:`contact_kernel` (``cand_*``, ``Ncand``,
    ``Scand``, ``Tcand``, ``Fcand``: every pair within the margin, in kernel order); and the
    tick's assembled problem, rows ``0..nc-1`` valid: ``Minv`` (nv, nv), ``h`` (nv,) = C v + g,
    ``v`` (nv,) (post-impact if the passive impact is on), ``N``/``S``/``T`` (cap, nv), ``phi``
    (after the dead band), ``mu``, ``points`` (cap, 3) world [m], ``frames`` (cap, 3, 3)
    columns (n, s, t), ``slot`` (cap,) candidate identity (see :class:`ContactGeometry`),
    ``impact`` (cap, 3) passive-impact impulses [N s], ``weight`` (cap,) each row's weight in
    the minimum-norm selection, copied from its sphere's entry of ``sphere_weight``
    (n_spheres,) >= 1 (all 1 unless the contact state filter's load ramps write it).
    ``Minv_robot``/``h_robot`` are the robot blocks: the same arrays as ``Minv``/``h`` when no
    free body is appended.
    """

    W: Any  # the recursions' data: a kernels.world.RigidBodyRecord
    SC: np.ndarray
    FP: np.ndarray
    fext: np.ndarray
    a_zero: np.ndarray
    Xup: np.ndarray
    Rw: np.ndarray
    pw: np.ndarray
    Rtmp: np.ndarray
    P: np.ndarray
    Jfull: np.ndarray
    cand_phi: np.ndarray
    cand_p: np.ndarray
    Fcand: np.ndarray
    Ncand: np.ndarray
    Scand: np.ndarray
    Tcand: np.ndarray
    cand_mu: np.ndarray
    cand_sph: np.ndarray
    cand_feat: np.ndarray
    Minv_robot: np.ndarray
    h_robot: np.ndarray
    Minv: np.ndarray
    h: np.ndarray
    v: np.ndarray
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    phi: np.ndarray
    mu: np.ndarray
    points: np.ndarray
    frames: np.ndarray
    slot: np.ndarray
    impact: np.ndarray
    weight: np.ndarray
    sphere_weight: np.ndarray
    arena: Arena


@structref.register
class ContactDataRecordType(RecordType):
    """numba type of :class:`ContactDataRecord`."""


class ContactDataRecord(structref.StructRefProxy):
    """:class:`ContactData`'s arrays as one pointer for the compiled kernels (same field names,
    same arrays; :mod:`wbc_dynamics.kernels.records`): ``ContactModel.kernel_data``."""


define_record(ContactDataRecord, ContactDataRecordType, ContactData)


@njit(cache=True)
def contact_data_record(d):
    """The :class:`ContactDataRecord` of the :class:`ContactData` ``d`` (compiled, cached)."""
    return ContactDataRecord(*d)


@njit(cache=True)
def assemble_kernel(model, geo, d, q, v, bx_R, bx_p, excluded, margin,
                    phi_deadband, dynamics, ar):
    """Candidates, M^-1 and h of one tick into ``d`` (:class:`ContactDataRecord`), compiled.

    One forward-kinematics pass gives every candidate (:func:`candidates_kernel`); the
    candidates on ``excluded`` spheres (bool per sphere) are dropped and the rest packed into rows
    ``0..nc-1`` of ``d.N`` ... ``d.slot`` with the dead band applied to phi. With ``dynamics``,
    ``d.Minv_robot`` = M^-1 (Carpentier Alg. 1 / Saccon et al. IMMAmb) and ``d.h_robot`` = C v + g
    (RNEA) are computed and ``d.v[:nv_robot] = v``, all three from the same pass
    (:func:`~wbc_dynamics.kernels.world.dynamics_terms`, whose world poses are copied to
    ``d.Rw``, ``d.pw``; ``d.Xup`` is then not written); without, the pass is
    :func:`contact_kernel`'s. Returns nc >= 0, or
    ``-status`` of the dynamics kernels (:data:`wbc_dynamics.model.STATUS_MESSAGES`) for invalid
    q / v. ``ar``: the scratch arena (:mod:`wbc_dynamics.kernels.arena`).
    """
    if dynamics:
        # one kinematics pass for M^-1, h and the candidates: dynamics_terms leaves the world
        # poses in d.W, which the candidates read instead of evaluating every joint's pose
        # once more. q[::1] etc. and np.bool_: strided vectors and typed flags, not literals
        # (each literal or other layout compiles the kernel once more, seconds at start-up)
        st = call_separately(world.dynamics_terms, (
            q[::1], v[::1], d.a_zero[::1], d.fext, np.bool_(False), np.bool_(True), d.Minv_robot,
            d.FP, d.h_robot, model, d.W, d.SC))
        if st != OK:
            return -st
        for c in range(v.shape[0]):
            d.v[c] = v[c]
        # the world poses into the contiguous d.Rw / d.pw (12 numbers a body): the candidates'
        # Jacobian loops then index without strides, and d.Rw / d.pw hold this tick's poses
        # as after contact_kernel
        for b in range(model.parent.shape[0]):
            pose = d.W.pose[b]
            for r in range(3):
                d.pw[b, r] = pose[3, r]
                for c in range(3):
                    d.Rw[b, r, c] = pose[r, c]
        k = call_separately(candidates_kernel, (
            model, d.Rw, d.pw, d.P, d.Jfull, geo.sph_body, geo.sph_r, geo.sph_rad, geo.hs,
            geo.hs_mu, geo.es, geo.es_mu, bx_R, bx_p, geo.bx_a, geo.bx_mu, geo.bx_col, margin,
            d.cand_phi, d.cand_p, d.Fcand, d.Ncand, d.Scand, d.Tcand, d.cand_mu, d.cand_sph,
            d.cand_feat, ar))
    else:
        k = call_separately(contact_kernel, (
            model, q, d.Xup, d.Rw, d.pw, d.Rtmp, d.P, d.Jfull, geo.sph_body, geo.sph_r,
            geo.sph_rad, geo.hs, geo.hs_mu, geo.es, geo.es_mu, bx_R, bx_p, geo.bx_a, geo.bx_mu,
            geo.bx_col, margin, d.cand_phi, d.cand_p, d.Fcand, d.Ncand, d.Scand, d.Tcand,
            d.cand_mu, d.cand_sph, d.cand_feat, ar))
    nfeat = geo.hs.shape[0] + geo.es.shape[0] + geo.bx_a.shape[0]
    nv = d.N.shape[1]
    nc = 0
    for i in range(k):
        s = d.cand_sph[i]
        if excluded[s]:
            continue
        phi = d.cand_phi[i]
        if phi_deadband > 0.0:
            phi = 0.0 if phi < phi_deadband else phi - phi_deadband
        d.phi[nc] = phi
        d.mu[nc] = d.cand_mu[i]
        d.slot[nc] = s * nfeat + d.cand_feat[i]
        d.weight[nc] = d.sphere_weight[s]
        for a in range(3):
            d.points[nc, a] = d.cand_p[i, a]
            d.impact[nc, a] = 0.0
            for b in range(3):
                d.frames[nc, a, b] = d.Fcand[i, a, b]
        for c in range(nv):
            d.N[nc, c] = d.Ncand[i, c]
            d.S[nc, c] = d.Scand[i, c]
            d.T[nc, c] = d.Tcand[i, c]
        nc += 1
    return nc


def _quat_to_rot(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    n = np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    qx, qy, qz, qw = qx / n, qy / n, qz / n, qw / n
    return np.array(
        [
            [1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
            [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
            [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)],
        ]
    )


def tick_arena(nv: int, nu: int, cap: int, edges: int) -> Arena:
    """The scratch arena of the compiled ticks on a contact model (``ContactData.arena``):
    room for the temporaries of one tick with every candidate in contact, with a factor 2 to
    spare. A tick that needs more still works (heap allocation, counted in ``spills``).

    The largest users, per call: Alg. 1's G, W = M^-1 G^T and factor L (nv + nu rows), the
    no-slip LCP's N K and Y rows, Alg. 2's factor (nv x nv); ``lcp_noslip_kernel`` runs up to
    four times a tick (sticking correction, solve, Sec. 4.5 correction, solve again); the
    passive impact's and the Coulomb LCP's (k + 2 rows per contact) dense matrices.
    """
    nmax = nv + nu
    rows = (edges + 2) * cap
    per_solve = (2 * nmax * nv + nmax * nmax + nv * nv + cap * (nmax + nv) + 6 * nmax
                 + 12 * nv + nu + 12 * cap)
    n_float = 2 * (4 * per_solve + 4 * (rows + nv) ** 2 + 4 * rows * nv + 64)
    n_int = 2 * (8 * (nmax + nv + rows) + 64)
    n_flag = 2 * (8 * (rows + nv) + 64)
    return _ar.arena(n_float, n_int, n_flag)


class ContactModel:
    """Configured once; assembles a :class:`ContactProblem` from (q, v, qdd_des) every tick.

    Args:
        robot: the robot's RobotModel (fixed or floating base).
        contact_links: links whose contact points are candidates (default: every link with
            collision spheres or declared points). A link's points come from its URDF collision
            geometry of any shape (:mod:`wbc_dynamics.contact.candidates`) unless declared.
        features: static environment features (HalfSpace / SphereObstacle).
        bodies: contacted free bodies (FreeBody), appended to the system in order.
        margin: [m] candidates with phi <= margin enter the problem (eqs. 35/36).
        dt: control period [s].
        friction_edges: k of the friction pyramid (Coulomb methods).
        extra_points: optional {link: [(center (3,) link frame, radius), ...]} additional contact
            spheres (e.g. several samples per foot, Sec. 8.4.2 benchmark).
        points: optional {link: [(center (3,) link frame [m], radius [m]), ...]} declared contact
            points; they replace that link's collision geometry.
        actuated_joints: names of actuated joints (default: all movable joints).
        phi_deadband: [m] (default 0 = eqs. (35)/(36) literally) signed distances below it are
            reported as 0 (touching) and larger ones reduced by it. For compliant plants /
            noisy estimates: eq. (35) would otherwise ask to remove a penetration of d within
            one tick (d / dt of separation velocity).
        passive_impact: (default False = the measured velocity is used as is) before the
            inverse-dynamics problem is posed, apply a passive, inelastic, no-slip impact (the
            rigid impact model of Sec. 2.3.4 with all joints unactuated) at the touching
            candidates (phi <= 0 after ``phi_deadband``) that approach or separate slower than
            ``separation_tolerance``: ``v <- v - M^-1 J^T (J M^-1 J^T)^+ J v`` with ``J`` their
            ``[N; S; T]`` rows (minimum kinetic-energy change that zeroes their contact
            velocity). The returned problem's ``v`` is the post-impact velocity (eq. (37) holds
            for it; the impact impulses are in ``problem.impact_impulses``). Without it, a foot
            arriving at v (or a compliant / soft contact moving at mm/s) has to be stopped by
            the inverse dynamics within one tick: the desired accelerations become inconsistent
            (Sec. 4.5) and the corrected ones differ by ~v/dt (10^2-10^3 rad/s^2 at touchdown),
            which saturates the drives. The impact itself is passive (it happens whatever the
            torques are), so the controller should not fight it -- Sec. 3.2's "late contact".
        separation_tolerance: [m/s] (default 0; used with ``passive_impact``) touching contacts
            separating slower than this count as resting (their normal velocity is MuJoCo-like
            contact rebound or compliant decompression, not lift-off) and enter the impact;
            the (negative) normal impulse this removes is at most ``m_eff * tolerance`` per
            contact.

    Settable attribute ``excluded_links`` (set of link names, default empty): candidates on
    these links are left out of the problem -- the gait plan's swing feet (the planner decides
    lift-off, Sec. 7.2.1); a controller updates it from its contact schedule every tick.

    Contact identity: ``(link, sphere_number_on_link, feature_name)``.
    """

    def __init__(
        self,
        robot: RobotModel,
        contact_links: Sequence[str] | None = None,
        features: Sequence[HalfSpace | SphereObstacle] = (),
        bodies: Sequence[FreeBody] = (),
        margin: float = 0.005,
        dt: float = 1e-3,
        friction_edges: int = 4,
        extra_points: dict[str, list[tuple[Sequence[float], float]]] | None = None,
        actuated_joints: Sequence[str] | None = None,
        phi_deadband: float = 0.0,
        passive_impact: bool = False,
        separation_tolerance: float = 0.0,
        points: dict[str, list[tuple[Sequence[float], float]]] | None = None,
    ) -> None:
        if not np.isfinite(separation_tolerance) or separation_tolerance < 0:
            raise ValueError(f"ContactModel.separation_tolerance: must be finite and >= 0, got "
                             f"{separation_tolerance!r}")
        self.passive_impact = bool(passive_impact)
        self.separation_tolerance = float(separation_tolerance)
        self.excluded_links: set | frozenset | tuple = frozenset()
        if not np.isfinite(margin) or margin < 0:
            raise ValueError(f"ContactModel.margin: must be finite and >= 0, got {margin!r}")
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"ContactModel.dt: must be finite and > 0, got {dt!r}")
        if not np.isfinite(phi_deadband) or phi_deadband < 0:
            raise ValueError(f"ContactModel.phi_deadband: must be finite and >= 0, got "
                             f"{phi_deadband!r}")
        self.phi_deadband = float(phi_deadband)
        self.robot = robot
        self.margin = float(margin)
        self.dt = float(dt)
        self.friction_edges = int(friction_edges)
        if contact_links is None:
            # spheres are the shapes meant for contact (foot balls, fingertips); other shapes
            # (shanks, bodies) become candidates only on links named in contact_links
            contact_links = sorted({g.link for g in robot.collision_geometry if g.kind == "sphere"}
                                   | set(points or {}))
        links = list(contact_links)
        self.contact_points = contact_points(robot, links, points, extra_points)
        sph: list[tuple[str, int, np.ndarray, float]] = []
        per_link: dict[str, int] = {}
        for pt in self.contact_points:
            k = per_link.get(pt.link, 0)
            per_link[pt.link] = k + 1
            sph.append((pt.link, k, pt.center, pt.radius))
        self.sphere_ids = [(link, k) for link, k, _, _ in sph]
        self._sph_body = np.empty(len(sph), dtype=np.int64)
        self._sph_r = np.empty((len(sph), 3))
        self._sph_rad = np.empty(len(sph))
        for i, (link, _, center, radius) in enumerate(sph):
            body, R, p = robot.link_frame(link)
            if body < 0:
                raise ValueError(f"ContactModel.contact_links: link {link!r} is fixed to the world")
            self._sph_body[i] = body
            self._sph_r[i] = p + R @ center
            self._sph_rad[i] = radius
        hs = [f for f in features if isinstance(f, HalfSpace)]
        es = [f for f in features if isinstance(f, SphereObstacle)]
        if len(hs) + len(es) != len(features):
            raise ValueError("ContactModel.features: only HalfSpace and SphereObstacle supported")
        for f in hs:
            nrm = np.asarray(f.normal, dtype=float)
            if (nrm.shape != (3,) or not np.all(np.isfinite(nrm)) or np.linalg.norm(nrm) < 1e-12
                    or not np.isfinite(f.offset)):
                raise ValueError(f"HalfSpace {f.name!r}: normal must be a finite non-zero (3,) "
                                 "vector and offset finite")
        for f in es:
            if (np.asarray(f.center, float).shape != (3,)
                    or not np.all(np.isfinite(f.center)) or not (f.radius > 0)
                    or not np.isfinite(f.radius)):
                raise ValueError(f"SphereObstacle {f.name!r}: center must be finite (3,), "
                                 "radius finite and > 0")
        for f in [*hs, *es, *bodies]:
            if not (np.isfinite(f.mu) and f.mu >= 0):
                raise ValueError(f"feature {f.name!r}: mu must be finite and >= 0")
        self._hs = np.array(
            [[*np.asarray(f.normal, float) / np.linalg.norm(f.normal), f.offset] for f in hs]
        ).reshape(-1, 4)
        self._hs_mu = np.array([f.mu for f in hs], dtype=float)
        self._es = np.array([[*f.center, f.radius] for f in es], dtype=float).reshape(-1, 4)
        self._es_mu = np.array([f.mu for f in es], dtype=float)
        self.bodies = list(bodies)
        self.feature_names = (
            [f.name for f in hs] + [f.name for f in es] + [b.name for b in self.bodies]
        )
        if len(set(self.feature_names)) != len(self.feature_names):
            raise ValueError("ContactModel.features: feature / body names must be unique")
        nvr = robot.nv
        self.nv = nvr + 6 * len(self.bodies)
        #: [kg] robot + free bodies: the scale of the no-slip rank decisions (ContactProblem)
        self.total_mass = float(robot.total_mass) + sum(float(b.model.total_mass)
                                                        for b in self.bodies)
        self._bx_col = np.array([nvr + 6 * i for i in range(len(self.bodies))], dtype=np.int64)
        self._bx_a = np.array([b.half_extents for b in self.bodies], dtype=float).reshape(-1, 3)
        self._bx_mu = np.array([b.mu for b in self.bodies], dtype=float)
        # actuation
        off = 6 if robot.floating_base else 0
        names = list(robot.joint_names)
        if actuated_joints is None:
            act = list(range(off, nvr))
        else:
            act = [off + robot.joint_index(j) for j in actuated_joints]
        self.actuated = np.array(act, dtype=np.int64)
        self.free = np.setdiff1d(np.arange(self.nv), self.actuated)
        self.dof_names = tuple(
            [f"base_{i}" for i in range(off)]
            + names
            + [f"{b.name}_{i}" for b in self.bodies for i in range(6)]
        )
        # workspaces (own copies: independent of the model's)
        nb = robot.model_arrays.parent.shape[0]
        self._Xup = np.zeros((nb, 6, 6))
        self._Rw = np.zeros((nb, 3, 3))
        self._pw = np.zeros((nb, 3))
        self._Rtmp = np.zeros((2, 3, 3))
        self._P = np.zeros(3)
        self._Jfull = np.zeros((6, nvr))
        cap = len(sph) * len(self.feature_names)
        self._cap = cap
        self._out_phi = np.zeros(cap)
        self._out_p = np.zeros((cap, 3))
        self._out_F = np.zeros((cap, 3, 3))
        self._out_N = np.zeros((cap, self.nv))
        self._out_S = np.zeros((cap, self.nv))
        self._out_T = np.zeros((cap, self.nv))
        self._out_mu = np.zeros(cap)
        self._out_sph = np.zeros(cap, dtype=np.int64)
        self._out_feat = np.zeros(cap, dtype=np.int64)
        self._ids = {
            (s, f): (self.sphere_ids[s][0], self.sphere_ids[s][1], self.feature_names[f])
            for s in range(len(sph))
            for f in range(len(self.feature_names))
        }
        self.warmup()

    @property
    def n_spheres(self) -> int:
        """Number of robot contact spheres."""
        return int(self._sph_body.shape[0])

    def warmup(self) -> None:
        """Allocate the tick's ``ContactData``, then compile / load the kernels and run them
        once (call at start-up, not in a tick)."""
        self._allocate_data()
        q = self.robot.neutral()
        bq = [np.array([0, 0, 0, 0, 0, 0, 1.0]) for _ in self.bodies]
        self.candidates(q, bq)
        self.build(q, np.zeros(self.robot.nv), np.zeros(self.actuated.shape[0]), bq,
                   [np.zeros(6) for _ in self.bodies])
        if self.passive_impact:  # compiled only when the configuration uses it
            warm_passive_impact(self.nv, self.dt)

    def _allocate_data(self) -> None:
        """The compiled kernels' shared buffers (:class:`ContactGeometry`, :class:`ContactData`)
        and the slot -> contact identity table."""
        r = self.robot
        nvr, nv, cap = r.nv, self.nv, self._cap
        nb = r.model_arrays.parent.shape[0]
        self.geometry = ContactGeometry(
            self._sph_body, self._sph_r, self._sph_rad, self._hs, self._hs_mu, self._es,
            self._es_mu, self._bx_a, self._bx_mu, self._bx_col)
        W, SC = world.workspace(nb)
        Minv_robot, h_robot = np.zeros((nvr, nvr)), np.zeros(nvr)
        self.data = ContactData(
            W=W, SC=SC, FP=np.zeros((nb + 1, 6, nvr)), fext=np.zeros((nb, 6)),
            a_zero=np.zeros(nvr), Xup=self._Xup, Rw=self._Rw, pw=self._pw, Rtmp=self._Rtmp,
            P=self._P, Jfull=self._Jfull, cand_phi=self._out_phi, cand_p=self._out_p,
            Fcand=self._out_F, Ncand=self._out_N, Scand=self._out_S, Tcand=self._out_T,
            cand_mu=self._out_mu, cand_sph=self._out_sph, cand_feat=self._out_feat,
            Minv_robot=Minv_robot, h_robot=h_robot,
            Minv=Minv_robot if nv == nvr else np.zeros((nv, nv)),
            h=h_robot if nv == nvr else np.zeros(nv), v=np.zeros(nv),
            N=np.zeros((cap, nv)), S=np.zeros((cap, nv)), T=np.zeros((cap, nv)),
            phi=np.zeros(cap), mu=np.zeros(cap), points=np.zeros((cap, 3)),
            frames=np.zeros((cap, 3, 3)), slot=np.zeros(cap, dtype=np.int64),
            impact=np.zeros((cap, 3)), weight=np.ones(cap),
            sphere_weight=np.ones(self.n_spheres),
            arena=tick_arena(nv, self.actuated.shape[0], cap, self.friction_edges))
        #: the same buffers as one pointer, what the compiled kernels take (kernels/records.py)
        self.kernel_data = contact_data_record(self.data)
        nfeat = len(self.feature_names)
        self.slot_ids: tuple = tuple(self._ids[(s, f)] for s in range(self.n_spheres)
                                     for f in range(nfeat))
        self._ids_cache: dict[bytes, tuple] = {}
        self._excluded_seen: object = None
        self._excluded = np.zeros(self.n_spheres, dtype=np.bool_)

    def excluded_mask(self) -> np.ndarray:
        """(n_spheres,) bool: spheres on ``excluded_links`` (recomputed when the set changes)."""
        ex = self.excluded_links
        if ex is not self._excluded_seen:
            self._excluded[:] = [sid[0] in ex for sid in self.sphere_ids]
            self._excluded_seen = ex
        return self._excluded

    def ids_of(self, slots: np.ndarray) -> tuple:
        """Contact identities of the slots ``slots`` (a cached tuple per slot pattern)."""
        key = slots.tobytes()
        ids = self._ids_cache.get(key)
        if ids is None:
            if len(self._ids_cache) > 4096:
                self._ids_cache.clear()
            ids = tuple(self.slot_ids[i] for i in slots.tolist())
            self._ids_cache[key] = ids
        return ids

    def _box_poses(self, body_q):
        nbx = len(self.bodies)
        R = np.zeros((nbx, 3, 3))
        p = np.zeros((nbx, 3))
        for i in range(nbx):
            qb = np.asarray(body_q[i], dtype=float)
            if qb.shape != (7,) or not np.all(np.isfinite(qb)):
                raise ValueError(f"body_q[{i}] ({self.bodies[i].name}): expected finite (7,)")
            if abs(np.linalg.norm(qb[3:]) - 1.0) > 1e-6:
                raise ValueError(f"body_q[{i}] ({self.bodies[i].name}): quaternion not unit")
            p[i] = qb[:3]
            R[i] = _quat_to_rot(*qb[3:])
        return R, p

    def _check_q(self, q) -> np.ndarray:
        r = self.robot
        q = np.ascontiguousarray(q, dtype=np.float64)
        if q.shape != (r.nq,) or not np.all(np.isfinite(q)):
            raise ValueError(f"q: expected finite ({r.nq},), got shape {q.shape}")
        return q

    def candidates(self, q: ArrayLike, body_q: Sequence[ArrayLike] = (),
                   margin: float | None = None) -> int:
        """Run the geometry kernel; returns the number of candidates (rows ``0..k-1`` of the
        ``cand_*`` / ``Ncand`` / ``Scand`` / ``Tcand`` buffers of ``data``). ``margin``
        [m]: pairs with signed distance <= margin are candidates (default: the model's)."""
        q = self._check_q(q)
        margin = self.margin if margin is None else float(margin)
        bR, bp = self._box_poses(body_q)
        return self.candidates_validated(q, bR, bp, margin)

    def candidates_validated(self, q: np.ndarray, bR: np.ndarray, bp: np.ndarray,
                             margin: float) -> int:
        """:meth:`candidates` for inputs a caller has validated already (q finite float64 (nq,)
        contiguous, the free bodies' rotations ``bR`` (nbx, 3, 3) and positions ``bp`` (nbx, 3)):
        the geometry kernel alone, no check and no allocation (a control tick's path)."""
        d, g = self.data, self.geometry
        k = contact_kernel(
            self.robot.kernel_model, q, d.Xup, d.Rw, d.pw, d.Rtmp, d.P, d.Jfull,
            g.sph_body, g.sph_r, g.sph_rad, g.hs, g.hs_mu, g.es, g.es_mu, bR, bp, g.bx_a,
            g.bx_mu, g.bx_col, margin, d.cand_phi, d.cand_p, d.Fcand, d.Ncand, d.Scand,
            d.Tcand, d.cand_mu, d.cand_sph, d.cand_feat, NO_ARENA,
        )
        return int(k)

    def assemble(self, q: ArrayLike, v: ArrayLike, body_q: Sequence[ArrayLike] = (),
                 dynamics: bool = True) -> int:
        """One compiled ``assemble_kernel`` call into ``data`` (no free-body blocks, no
        impact); returns nc. Raises ValueError (the core's message) for an invalid q / v."""
        r = self.robot
        bR, bp = self._box_poses(body_q)
        k = assemble_kernel(r.kernel_model,
                            self.geometry, self.kernel_data, q, v, bR, bp, self.excluded_mask(),
                            self.margin, self.phi_deadband, dynamics, NO_ARENA)
        if k < 0:
            r._raise(-k)
        return k

    def build(
        self,
        q: ArrayLike,
        v: ArrayLike,
        qdd_des: ArrayLike,
        body_q: Sequence[np.ndarray] = (),
        body_v: Sequence[np.ndarray] = (),
        Minv: np.ndarray | None = None,
        h: np.ndarray | None = None,
    ) -> ContactProblem:
        """Assemble the tick's :class:`ContactProblem`.

        Args:
            q, v: robot configuration / velocity (core conventions). qdd_des: (nu,) desired
                accelerations of the actuated joints. body_q, body_v: per free body (7,) pose
                [x y z qx qy qz qw] and (6,) body-frame twist.
            Minv, h: optionally precomputed robot M^-1 and C v + g (saves a pass if the caller
                already has them).

        Kinematics, candidates, M^-1 and h are one compiled call (``assemble_kernel``);
        the returned problem holds copies (it stays valid after the next build).
        """
        r = self.robot
        if len(body_q) != len(self.bodies) or len(body_v) != len(self.bodies):
            raise ValueError(f"body_q/body_v: expected {len(self.bodies)} entries each")
        q = self._check_q(q)
        v = np.array(v, dtype=np.float64)
        if v.shape != (r.nv,):
            raise ValueError(f"v: expected ({r.nv},), got {v.shape}")
        qdd = np.array(qdd_des, dtype=np.float64)
        nu = self.actuated.shape[0]
        if qdd.shape != (nu,) or not np.isfinite(qdd).all():
            raise ValueError(f"qdd_des: expected a finite ({nu},) vector, got {qdd!r}")
        d = self.data
        k = self.assemble(q, v, body_q, dynamics=Minv is None or h is None)
        nvr = r.nv
        if Minv is not None:
            d.Minv_robot[:] = Minv
        if h is not None:
            d.h_robot[:] = h
            d.v[:nvr] = v
        if self.bodies:
            d.Minv[:] = 0.0
            d.Minv[:nvr, :nvr] = d.Minv_robot
            d.h[:nvr] = d.h_robot
            for i, b in enumerate(self.bodies):
                c = nvr + 6 * i
                qb = np.asarray(body_q[i], dtype=float)
                vb = np.asarray(body_v[i], dtype=float)
                d.Minv[c : c + 6, c : c + 6] = b.model.minverse(qb)
                d.h[c : c + 6] = b.model.nonlinear_effects(qb, vb)
                d.v[c : c + 6] = vb
        prob = ContactProblem(
            dt=self.dt,
            Minv=d.Minv.copy(),
            h=d.h.copy(),
            v=d.v.copy(),
            actuated=self.actuated,
            free=self.free,
            qdd_des=qdd,
            N=d.N[:k].copy(),
            S=d.S[:k].copy(),
            T=d.T[:k].copy(),
            phi=d.phi[:k].copy(),
            mu=d.mu[:k].copy(),
            contact_ids=self.ids_of(d.slot[:k]),
            points=d.points[:k].copy(),
            frames=d.frames[:k].copy(),
            friction_edges=self.friction_edges,
            dof_names=self.dof_names,
            total_mass=self.total_mass,
            weights=d.weight[:k].copy(),
            # every array above comes from validated inputs (q, v checked by the core kernels,
            # qdd_des by the caller) through this model's own kernels
            validated=True,
        )
        if self.passive_impact and prob.nc:
            apply_passive_impact(prob, self.separation_tolerance)
        return prob


def apply_passive_impact(problem: ContactProblem, separation_tolerance: float = 0.0,
                         rcond: float = 1e-9) -> np.ndarray:
    """Passive inelastic no-slip impact at the resting / arriving contacts (in place).

    The impact set A holds the touching contacts (``phi_i <= 0``) with ``N_i v <=
    separation_tolerance`` [m/s] and the separated ones that reach the surface within the tick
    (``phi_i > 0`` and ``N_i v < -phi_i / dt``). With ``J = [N_A; S_A; T_A]`` and the target
    ``b = [-max(phi_A, 0) / dt; 0; 0]`` (touching: stop; arriving: just close the gap by the end
    of the tick, eq. (35) with equality), the impulses ``lam = (J M^-1 J^T)^+ (b - J v)``
    (minimum-norm least squares for dependent rows, rank cut at relative pivot ``rcond``:
    :func:`~wbc_dynamics.kernels.linalg.psd_pinv_solve`) give the
    post-impact velocity ``v + M^-1 J^T lam`` (Zapolsky & Drumwright, Sec. 2.3.4 impact model:
    inelastic, sticking, every dof passive -- no actuator torque acts within the impact; the kinetic
    energy does not increase when ``b = 0``). ``problem.v`` is replaced by it and
    ``problem.impact_impulses`` ((nc, 3) [N s], local n/s/t, zero off A) is set. Returns the
    impulses. The arithmetic is one compiled call (:func:`passive_impact_kernel`).
    """
    out = np.zeros((problem.nc, 3))
    v_post = np.array(problem.v, dtype=np.float64)
    c = np.ascontiguousarray
    passive_impact_kernel(c(problem.N), c(problem.S), c(problem.T), c(problem.Minv),
                          c(problem.phi), float(problem.dt), float(separation_tolerance),
                          float(rcond), v_post, out, NO_ARENA)
    problem.v = v_post
    problem.impact_impulses = out
    return out


def warm_passive_impact(nv: int = 7, dt: float = 1e-3) -> None:
    """Compile / load :func:`passive_impact_kernel` and run it once (argument types do not depend
    on ``nv``: the start-up compile helper warms it without a robot)."""
    rows = np.eye(3, nv)
    passive_impact_kernel(rows, rows, rows, np.eye(nv), np.array([0.0, 1.0, -1.0]), float(dt),
                          0.0, 1e-9, np.full(nv, -1.0), np.zeros((3, 3)), NO_ARENA)


@njit(cache=True)
def passive_impact_kernel(N, S, T, Minv, phi, dt, separation_tolerance, rcond, v, impulses, ar):
    """Compiled :func:`apply_passive_impact`: ``v`` (nv,) is updated in place to the post-impact
    velocity, ``impulses`` (nc, 3) [N s] (local n/s/t) receives the impact impulses (zero off the
    impact set). Returns the size of the impact set. If the least-squares solve gives a
    non-finite result, ``v`` and ``impulses`` are left unchanged (as the Python version did).
    """
    nc = N.shape[0]
    nv = N.shape[1]
    active = _ar.ints(ar, nc)
    m = 0
    for i in range(nc):
        vn = 0.0
        for c in range(nv):
            vn += N[i, c] * v[c]
        if (phi[i] <= 0.0 and vn <= separation_tolerance) or (phi[i] > 0.0 and vn * dt < -phi[i]):
            active[m] = i
            m += 1
    if m == 0:
        return 0
    r = 3 * m
    J = _ar.floats_2d(ar, r, nv)
    # J^T as well: W = M^-1 J^T then runs along contiguous rows of J^T (an independent,
    # vectorizable inner loop; J's column is strided by nv)
    JT = _ar.floats_2d(ar, nv, r)
    b = _ar.floats_zero(ar, r)
    for k in range(m):
        i = active[k]
        for c in range(nv):
            J[k, c] = N[i, c]
            J[m + k, c] = S[i, c]
            J[2 * m + k, c] = T[i, c]
            JT[c, k] = N[i, c]
            JT[c, m + k] = S[i, c]
            JT[c, 2 * m + k] = T[i, c]
        b[k] = -max(phi[i], 0.0) / dt
    # the velocity coordinates no impact row depends on (other branches: a humanoid's arms)
    # only add products with exact zeros to W; leaving them out keeps every other term and its
    # order, so for a finite M^-1 (the ticks' own, from the dynamics kernels) W is the same to
    # the bit
    used = _ar.ints(ar, nv)
    nused = 0
    for j in range(nv):
        nonzero = False
        for k in range(r):
            if JT[j, k] != 0.0:
                nonzero = True
                break
        if nonzero:
            used[nused] = j
            nused += 1
    # W = M^-1 J^T, G = J W, rhs = b - J v: loops on arena buffers instead of numpy products
    # (each allocates; BLAS calls cost more than this arithmetic at a tick's sizes)
    W = _ar.floats_2d_zero(ar, nv, r)
    for c in range(nv):
        for u in range(nused):
            j = used[u]
            mcj = Minv[c, j]
            for k in range(r):
                W[c, k] += mcj * JT[j, k]
    G = _ar.floats_2d_zero(ar, r, r)
    add_sparse_product(J, W, G, r)
    for i in range(r):  # exactly symmetric
        for j in range(i + 1, r):
            g = 0.5 * (G[i, j] + G[j, i])
            G[i, j] = g
            G[j, i] = g
    rhs = _ar.floats(ar, r)
    for i in range(r):
        s = 0.0
        for c in range(nv):
            s += J[i, c] * v[c]
        rhs[i] = b[i] - s
    lam = _ar.floats(ar, r)
    psd_pinv_solve(G, rhs, rcond, lam, ar)  # = lstsq(G, rhs, rcond) without LAPACK's overhead
    for k in range(r):
        if not np.isfinite(lam[k]):
            return m
    for c in range(nv):
        s = 0.0
        for k in range(r):
            s += W[c, k] * lam[k]
        v[c] += s
    for k in range(m):
        i = active[k]
        impulses[i, 0] = lam[k]
        impulses[i, 1] = lam[m + k]
        impulses[i, 2] = lam[2 * m + k]
    return m
