"""Contact state as a filtered estimate: which contact links are in stance, and a state the
contact-aware inverse dynamics can trust.

Deciding contact afresh from the raw state every tick fails on a real robot: a base estimate
0.2 mm too high lifts every foot out of the touching set (the contact problem then predicts no
stance force), a few cm/s of base-velocity noise makes resting feet look as if they separate, and
1 mrad of encoder noise makes the loaded corners of a flat sole change from tick to tick. The
:class:`StanceFilter` keeps one decision per contact link, changed only with evidence:

* **Release** when the gait schedule puts the link in swing (the planner decides lift-off, as
  in Zapolsky & Drumwright, "Inverse Dynamics with Rigid Contact and Friction", Sec. 7.2.1), or
  when its lowest point stays above the ground by more than ``gate`` predicted standard
  deviations for ``dwell`` seconds (a foot that really lifted).
* **Touch** when a link the schedule does not hold in swing comes within ``touch_floor`` plus
  three predicted standard deviations of the ground, at least ``dwell`` after its release.

**Force evidence** (optional: a :class:`~wbc_dynamics.contact.momentum_observer.MomentumObserver`,
the controller's ``contact_force_observer_gain``), fused per link as in Bledt et al., "Contact
Model Fusion for Event-Based Locomotion in Unstructured Terrains" (ICRA 2018): gait schedule,
foot height and a momentum-observer force estimate. A link is *loaded* while its
estimated normal force exceeds ``max(gate * force_std, force_threshold)``, ``force_std`` the
estimate's predicted standard deviation under the configured sensing noise (the observer's
steady-state noise) and ``force_threshold`` [N] what that noise leaves out (model and actuation
errors). Then

* a link the schedule does not hold in swing is also touched after ``dwell`` loaded (with or
  without a ground candidate), and a stance link the kinematics see lifted is released only
  once it has also been unloaded for ``dwell``;
* **early touch-down**: a swing link whose estimate has dropped below the gate since lift-off
  (the estimate lags the lift-off's unloading by ~``1 / K_O``) and is then loaded for ``dwell``
  is touched before the schedule's stance (a step onto an obstacle, a late swing), counted in
  ``early_touchdowns``; while the schedule still says swing it is released as a stance link
  is, once unloaded and seen lifted for ``dwell`` (a bounce on landing is not a lift-off).
  Such a link is left out of the position correction (it may stand on what the contact model
  does not know) but kept in the velocity one (at rest either way).

Without an observer the estimates stay 0 with infinite deviations: no link is ever loaded and
the decisions are the kinematic ones above.

The predicted standard deviation of a point's distance follows from the configured sensor noise
(:class:`SensingNoise`): ``s^2 = N P N^T + r`` with ``N`` the point's normal row and ``P`` the
prior covariance of the state (base pose / joints; once the stance links have corrected the base,
the joints' part only).

Then the state itself is made consistent with the stance decision, the measurement update of
a Kalman filter whose measurement is "stance points are on the ground and at rest": with ``J``
the stance points' rows and ``P`` the sensing covariance,
``dq = -P N^T (N P N^T + r_pos I)^-1 phi`` and ``dv = -P J^T (J P J^T + r_vel I)^-1 J v``
(``J = [N; S; T]``), applied on the configuration manifold (the base on SE(3)). The base
estimate's error, by far the largest, is removed; joint noise is shared out by its own variance.
The contact problem then sees the stance points touching and at rest, and leaves the other
contact links out: the filtered decision, not the raw distance, says which contacts exist.

**Load ramps** (``load_ramp``, ``unload_ramp``; ``_ramp_weights``): each stance link's
spheres get a weight in ``lcp_noslip``'s minimum-norm selection (the contact model's
``sphere_weight``), high just after its touch and just before its announced release
(:meth:`StanceFilter.set_swing`'s ``lift_off_in``), so that where the other stance links can
carry its load it is loaded and unloaded over the ramp instead of in one tick.

Everything per tick is one compiled call (``stance_update_kernel``: the contact model's
candidate kernel, then :func:`stance_filter_kernel`) on named buffers (:class:`StanceData`); the
observer is one more (:func:`~wbc_dynamics.contact.momentum_observer.momentum_observer_kernel`),
on the uncorrected state and the torques the drives apply for the previous tick's command.

Measured in MuJoCo (``test/test_contact_force_observer.py``, K_O = 50 1/s): against the
simulator's per-foot normal forces through the observer's lag, rms errors of 0.05 N (exact
state) and 0.46 N (1x realistic sensing; predicted 0.45 N) standing, 0.8 N and 1.3 N trotting
(the bundled quadruped); the realistic model and actuation errors reach ~8 N on a swing foot
at 2x, hence ``force_threshold``. With 20 N, the quadruped's and go2's trots at 1x and 2x make
the same decisions as without force evidence; a go2 foot landing mid-swing on a 2 cm box the
contact model does not know is touched 11-14 ticks after the landing with 12 N (24-26 with
20 N).
Off by default (``contact_force_observer_gain: 0``): nominal standing and trotting gain nothing.

One module for one filter: the stance decisions, the load ramps and the force-evidence gate are
one compiled kernel family over the numba-typed :class:`StanceData` record that
:class:`StanceFilter` builds and binds, and a kernel's cache entry and compile time depend on
the module that defines it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numba import njit

from ..kernels import arena as _ar
from ..kernels.fixed_args import fixed_args
from ..kernels.linalg import bound_entry, chol_solve, cholesky
from ..kernels.records import kernel_record, record_of
from ..kernels.spatial import quaternion_product_into, quaternion_rotation, rotvec_quaternion
from ..validation import require_positive
from .geometry import contact_kernel
from .tick_base import _plain

if TYPE_CHECKING:
    from .geometry import ContactModel
    from .momentum_observer import MomentumObserver

__all__ = ["SensingNoise", "StanceData", "StanceFilter", "stance_filter_kernel"]


@dataclass(frozen=True)
class SensingNoise:
    """Standard deviations of the controller's inputs (the robot's sensing), white per tick.

    Attributes:
        joint_position: [rad or m] encoders.
        joint_velocity: [rad/s or m/s] joint rates.
        base_position: [m] per world axis, of the base-state estimate.
        base_orientation: [rad] per axis, of the base-state estimate.
        base_linear_velocity: [m/s] per base-frame axis.
        base_angular_velocity: [rad/s] per base-frame axis.
    """

    joint_position: float = 1e-3
    joint_velocity: float = 0.02
    base_position: float = 5e-3
    base_orientation: float = math.radians(0.5)
    base_linear_velocity: float = 0.05
    base_angular_velocity: float = 0.02

    def __post_init__(self) -> None:
        require_positive(vars(self).items(), "sensing_{}_noise")


@kernel_record("StanceDataRecord")
class StanceData(NamedTuple):
    """The filter's configuration, state and workspace (one record per controller).

    Configuration: ``sphere_link`` (n_spheres,) contact-link index of each contact sphere (-1:
    not a filtered link); ``prior_q`` (nv,) variance of the configuration estimate on the
    tangent space [m^2, rad^2]: base position, base orientation, joints; ``prior_v`` (nv,)
    variance of the velocity estimate [(m/s)^2, (rad/s)^2]; ``prior_q_joints`` (nv,) as
    ``prior_q`` with the base's entries 0 (the joints' share, once stance corrected the base);
    ``position_variance`` [m^2] and ``velocity_variance`` [(m/s)^2] of a stance point's
    measurement, ``touch_floor`` [m], ``gate`` [standard deviations], ``dwell`` [s], ``dt`` [s]
    (the control period).

    State, per contact link (L,): ``stance`` bool; ``timer`` [s] time since the last change;
    ``lifted`` [s] how long a stance link has been above its gate; ``phi_min`` [m] its lowest
    candidate's distance on the raw state (inf: none within the filter's margin);
    ``gate_var`` [m^2] the square of its release gate (``gate`` predicted standard deviations;
    < 0: no candidate);
    counters (1,) int64 each: ``decision_changes``, ``projections`` (ticks with a projection),
    ``projection_failures`` (ticks whose projection failed and kept the raw state).

    Workspace: ``best`` (L,) int64 lowest candidate per link; ``rows`` (3 cap,) int64 candidate
    index of each projection row; ``J`` (3 cap, nv); ``res`` (3 cap,); ``A`` (3 cap, 3 cap);
    ``dq``, ``dv`` (nv,) the last corrections; ``excluded`` (n_spheres,) bool: the contact model's
    exclusion mask (written: spheres of links not in stance).

    Force evidence (:mod:`~wbc_dynamics.contact.momentum_observer`; without an observer the
    forces stay 0 and their deviations inf: no evidence): ``normal_force`` (L,) [N] each link's
    estimated normal force and ``force_std`` (L,) [N] its predicted standard deviation (the
    observer's arrays, written by it before each tick); ``force_floor`` [N] the least
    evidence gate; a link is *loaded* while ``normal_force > max(gate * force_std,
    force_floor)``. ``loaded_time`` / ``unloaded_time`` (L,) [s] how long
    it has been loaded / not loaded; ``armed`` (L,) bool a swing link whose estimate has dropped
    below the gate since lift-off; ``early`` (L,) bool a swing link touched on force evidence
    (early touch-down); ``early_touchdowns`` (1,) int64 counter.

    Load ramps (``_ramp_weights``): ``load_ramp`` / ``unload_ramp`` [s] (0: off),
    ``max_weight`` [-] >= 1; ``release_in`` (L,) [s] the time until a stance link's announced
    release (inf: none; counts down each tick); ``weight`` (n_spheres,) written: each sphere's
    weight in the minimum-norm selection, its link's (the contact model's ``sphere_weight``).
    """

    sphere_link: np.ndarray
    prior_q: np.ndarray
    prior_v: np.ndarray
    prior_q_joints: np.ndarray
    position_variance: float
    velocity_variance: float
    touch_floor: float
    gate: float
    dwell: float
    dt: float
    stance: np.ndarray
    timer: np.ndarray
    lifted: np.ndarray
    phi_min: np.ndarray
    gate_var: np.ndarray
    decision_changes: np.ndarray
    projections: np.ndarray
    projection_failures: np.ndarray
    best: np.ndarray
    rows: np.ndarray
    J: np.ndarray
    res: np.ndarray
    A: np.ndarray
    dq: np.ndarray
    dv: np.ndarray
    excluded: np.ndarray
    normal_force: np.ndarray
    force_std: np.ndarray
    force_floor: float
    loaded_time: np.ndarray
    unloaded_time: np.ndarray
    armed: np.ndarray
    early: np.ndarray
    early_touchdowns: np.ndarray
    load_ramp: float
    unload_ramp: float
    max_weight: float
    release_in: np.ndarray
    weight: np.ndarray


@njit(cache=True)
def _row_variance(J, i, prior, r):
    s = r
    for c in range(J.shape[1]):
        s += J[i, c] * J[i, c] * prior[c]
    return s


@njit(cache=True)
def _weighted_correction(J, m, res, prior, r, A, delta):
    """``delta = -P J^T (J P J^T + r I)^-1 res`` for rows ``0..m-1`` of ``J`` (P = diag(prior));
    its Cholesky factor in place on ``A``, ``res`` overwritten. Returns False (delta = 0) if the
    system is not positive definite."""
    nv = J.shape[1]
    for c in range(nv):
        delta[c] = 0.0
    if m == 0:
        return True
    for i in range(m):
        # four entries of row i per pass over the columns: four independent sums (each in
        # column order, so the same numbers) instead of one long chain of dependent additions
        j = 0
        while j + 3 <= i:
            s0 = s1 = s2 = s3 = 0.0
            for c in range(nv):
                w = J[i, c] * prior[c]
                s0 += w * J[j, c]
                s1 += w * J[j + 1, c]
                s2 += w * J[j + 2, c]
                s3 += w * J[j + 3, c]
            A[i, j], A[i, j + 1], A[i, j + 2], A[i, j + 3] = s0, s1, s2, s3
            j += 4
        while j <= i:
            s = 0.0
            for c in range(nv):
                s += J[i, c] * prior[c] * J[j, c]
            A[i, j] = s
            j += 1
        A[i, i] += r
    Am = A[:m, :m]
    if not cholesky(Am, Am, 0.0):  # in place: the lower triangle holds A
        return False
    chol_solve(Am, m, res, res)
    for c in range(nv):
        s = 0.0
        for i in range(m):
            s += J[i, c] * res[i]
        delta[c] = -prior[c] * s
        if not math.isfinite(delta[c]):
            for cc in range(nv):
                delta[cc] = 0.0
            return False
    return True


class StanceTickArgs(NamedTuple):
    """The fixed arguments of :func:`stance_update_kernel`, packed once: ``filter`` the
    ``StanceDataRecord`` of the filter's :class:`StanceData`; ``model`` the robot's
    :class:`~wbc_dynamics.kernels.dynamics.ModelRecord`; ``geometry`` and ``data`` the contact
    model's collision geometry and :class:`~wbc_dynamics.contact.geometry.ContactData` record;
    ``box_rotation`` (0, 3, 3), ``box_position`` (0, 3) [m] free-body poses (none);
    ``swing`` (L,) bool; ``arena`` the contact model's scratch arena; ``margin`` [m];
    ``floating`` a floating base."""

    filter: Any
    model: Any
    geometry: Any
    data: Any
    box_rotation: np.ndarray
    box_position: np.ndarray
    swing: np.ndarray
    arena: Any
    margin: float
    floating: bool


@njit(cache=True)
def stance_update_kernel(p, q, v):
    """One tick of the :class:`StanceFilter` as one compiled call on its packed fixed arguments
    ``p`` (:func:`~wbc_dynamics.kernels.fixed_args.fixed_args` of a :class:`StanceTickArgs`:
    one pointer to unbox per call): the contact candidates within ``p.margin`` at ``q``
    (:func:`~wbc_dynamics.contact.geometry.contact_kernel` into ``d``), then
    :func:`stance_filter_kernel`. Its scratch vectors come from the arena, handed out from the
    start (the contact tick that follows resets it again). Returns the number of stance links
    (or the geometry kernel's negative status)."""
    f, g, d, ar = p.filter, p.geometry, p.data, p.arena
    _ar.reset(ar)
    k = contact_kernel(p.model, q, d.Xup, d.Rw, d.pw, d.Rtmp, d.P, d.Jfull, g.sph_body,
                       g.sph_r, g.sph_rad, g.hs, g.hs_mu, g.es, g.es_mu, p.box_rotation,
                       p.box_position, g.bx_a, g.bx_mu, g.bx_col, p.margin, d.cand_phi,
                       d.cand_p, d.Fcand, d.Ncand, d.Scand, d.Tcand, d.cand_mu, d.cand_sph,
                       d.cand_feat, ar)
    if k < 0:
        return k
    return stance_filter_kernel(f, k, d.cand_phi, d.cand_sph, d.Ncand, d.Scand, d.Tcand,
                                p.swing, q, v, p.floating)


@njit(cache=True)
def stance_filter_kernel(f, k, cand_phi, cand_sph, Ncand, Scand, Tcand, swing, q, v,
                         floating):
    """One tick of the :class:`StanceFilter` (module docstring): decisions, then the
    corrections of ``q`` (nq,) and ``v`` (nv,) in place (core conventions, the base on SE(3) if
    ``floating``), then the contact model's exclusion mask ``f.excluded``. ``k`` candidates in
    the contact model's candidate buffers (``cand_phi`` [m], ``cand_sph``, ``Ncand`` /
    ``Scand`` / ``Tcand`` rows); ``swing`` (L,) bool: links the gait schedule holds in swing.
    Returns the number of stance links."""
    r_pos, r_vel, touch_floor = f.position_variance, f.velocity_variance, f.touch_floor
    gate, dwell, dt = f.gate, f.dwell, f.dt
    L = f.stance.shape[0]
    nv = v.shape[0]
    for li in range(L):
        f.best[li] = -1
        f.phi_min[li] = np.inf
    for i in range(k):
        li = f.sphere_link[cand_sph[i]]
        if li >= 0 and cand_phi[i] < f.phi_min[li]:
            f.phi_min[li] = cand_phi[i]
            f.best[li] = i
    # gate variances (gate * s)^2 per link, from its lowest candidate's row and the full prior
    gate_var = f.gate_var
    # np.bool_ / np.int64: typed values, not literals (numba compiles a callee once more for
    # every literal argument)
    any_stance = np.bool_(False)
    for li in range(L):
        f.timer[li] += dt
        b = f.best[li]
        gate_var[li] = -1.0 if b < 0 else gate * gate * _row_variance(Ncand, b, f.prior_q, r_pos)
        loaded = f.normal_force[li] > max(gate * f.force_std[li], f.force_floor)
        if loaded:
            f.loaded_time[li] += dt
            f.unloaded_time[li] = 0.0
        else:
            f.unloaded_time[li] += dt
            f.loaded_time[li] = 0.0
        up = b < 0 or f.phi_min[li] * abs(f.phi_min[li]) > gate_var[li]
        if swing[li]:
            if _swing_decision(f, li, loaded, up, dt, dwell):
                any_stance = True
            continue
        f.armed[li] = False
        f.early[li] = False
        if f.stance[li]:
            if up:
                f.lifted[li] += dt
                # force evidence holds a link the kinematics see lifted (a base estimate off)
                if (f.lifted[li] >= dwell and f.timer[li] >= dwell
                        and f.unloaded_time[li] >= dwell):
                    f.stance[li] = False
                    f.timer[li] = 0.0
                    f.lifted[li] = 0.0
                    f.decision_changes[0] += 1
                    continue
            else:
                f.lifted[li] = 0.0
            any_stance = True
    return _finish_filter(f, k, cand_phi, cand_sph, Ncand, Scand, Tcand, swing, q, v, floating,
                          any_stance, r_pos, r_vel, touch_floor, dwell, nv)


@njit(cache=True)
def _swing_decision(f, li, loaded, up, dt, dwell):
    """A link the schedule holds in swing: released at once (the planner decides lift-off),
    unless touched on force evidence during this swing. Armed once its estimate has dropped
    below the gate (the lag of a lift-off's unloading is not a touch); touched (early
    touch-down) when armed and loaded for ``dwell``; such a touch is released as a stance
    link is, once both unloaded and seen lifted (``up``) for ``dwell`` (a bounce on landing
    is not a lift-off). Returns whether the link is in stance."""
    if not loaded:
        f.armed[li] = True
    if f.stance[li] and f.early[li]:
        f.lifted[li] = f.lifted[li] + dt if up else 0.0
        if f.unloaded_time[li] < dwell or f.lifted[li] < dwell:
            return True
    f.lifted[li] = 0.0
    if f.stance[li]:
        f.stance[li] = False
        f.early[li] = False
        f.armed[li] = False
        f.timer[li] = 0.0
        f.decision_changes[0] += 1
        return False
    if f.armed[li] and f.loaded_time[li] >= dwell and f.timer[li] >= dwell:
        f.stance[li] = True
        f.early[li] = True
        f.timer[li] = 0.0
        f.lifted[li] = 0.0
        f.decision_changes[0] += 1
        f.early_touchdowns[0] += 1
        return True
    return False


@njit(cache=True)
def _finish_filter(f, k, cand_phi, cand_sph, Ncand, Scand, Tcand, swing, q, v, floating,
                   any_stance, r_pos, r_vel, touch_floor, dwell, nv):
    """Second half of :func:`stance_filter_kernel`: position correction, touch decisions,
    velocity correction, retraction, exclusion mask."""
    L = f.stance.shape[0]
    gate_var = f.gate_var
    ok = _project_position(f, k, cand_phi, cand_sph, Ncand, r_pos)
    # touch decisions on the predicted corrected distance
    new_touch = False
    for li in range(L):
        b = f.best[li]
        if f.stance[li] or swing[li] or f.timer[li] < dwell:
            continue
        touch = f.loaded_time[li] >= dwell  # force evidence, with or without a candidate
        if b >= 0 and not touch:
            phi_pred = cand_phi[b]
            for c in range(nv):
                phi_pred += Ncand[b, c] * f.dq[c]
            prior = f.prior_q_joints if any_stance else f.prior_q
            touch = phi_pred < touch_floor + 3.0 * math.sqrt(_row_variance(Ncand, b, prior,
                                                                           r_pos))
        if touch:
            f.stance[li] = True
            f.timer[li] = 0.0
            f.lifted[li] = 0.0
            f.decision_changes[0] += 1
            new_touch = True
    if new_touch:
        ok = _project_position(f, k, cand_phi, cand_sph, Ncand, r_pos)
    n_stance = 0
    for li in range(L):
        if f.stance[li]:
            n_stance += 1
    if n_stance > 0:
        f.projections[0] += 1
        # velocity: the stance rows' N, S, T, residual J v
        m = np.int64(0)
        for i in range(k):
            li = f.sphere_link[cand_sph[i]]
            if li < 0 or not f.stance[li] or cand_phi[i] * abs(cand_phi[i]) > gate_var[li]:
                continue
            for src in range(3):
                J = Ncand if src == 0 else (Scand if src == 1 else Tcand)
                s = 0.0
                for c in range(nv):
                    f.J[m, c] = J[i, c]
                    s += J[i, c] * v[c]
                f.res[m] = s
                m += 1
        okv = _weighted_correction(f.J, m, f.res, f.prior_v, r_vel, f.A, f.dv)
        if not (ok and okv):
            f.projection_failures[0] += 1
            for c in range(nv):
                f.dq[c] = 0.0
                f.dv[c] = 0.0
        for c in range(nv):
            v[c] += f.dv[c]
        _retract(q, f.dq, floating)
    else:
        for c in range(nv):
            f.dq[c] = 0.0
            f.dv[c] = 0.0
    for s in range(f.sphere_link.shape[0]):
        li = f.sphere_link[s]
        if li >= 0:
            f.excluded[s] = not f.stance[li]
    _ramp_weights(f)
    return n_stance


@njit(cache=True)
def _ramp_weights(f):
    """The contact load ramps: each stance link's weight in the minimum-norm selection of the
    contact impulses (``lcp_noslip``, which minimizes ``sum_i w_i |c_i|^2`` among the impulses
    of the same v+) into ``f.weight`` per sphere. A link touched ``t = f.timer`` ago
    (``t < load_ramp``) and a link whose announced release is ``t = f.release_in`` away
    (``t < unload_ramp``) get ``w = 1 / max(t / ramp, 1 / max_weight)`` (the larger of the
    two), else 1. Where the other contacts can carry the load, a contact's share of it goes
    as ~1/w: from ~0 at the touch (or at the release) linearly to its full share over the
    ramp, instead of a step. What a contact must carry it still carries: the weights only
    choose among the impulses that give the same motion. Counts ``release_in`` down."""
    floor = 1.0 / f.max_weight
    for s in range(f.sphere_link.shape[0]):
        li = f.sphere_link[s]
        if li < 0:
            continue
        w = 1.0
        if f.stance[li]:
            if f.timer[li] < f.load_ramp:
                w = 1.0 / max(f.timer[li] / f.load_ramp, floor)
            if f.release_in[li] < f.unload_ramp:
                w = max(w, 1.0 / max(max(f.release_in[li], 0.0) / f.unload_ramp, floor))
        f.weight[s] = w
    for li in range(f.stance.shape[0]):
        f.release_in[li] -= f.dt


@njit(cache=True)
def _on_ground(f, i, li, cand_phi, Ncand, r_pos):
    """Whether candidate ``i`` of the stance link ``li`` can be one of the points it stands on:
    within its gate of the ground, and not above the link's lowest candidate by more than
    ``gate`` predicted standard deviations of their difference (``(N_i - N_best) P (N_i -
    N_best)^T + 2 r_pos``). Two points of one link move together with the base estimate, so
    that difference is known far better than either distance: a sole box's upper corners (2 cm
    above its lower ones) or a heel while the toe touches are not on the ground whatever the
    estimate's error, and projecting them onto it would put the stance between the two
    (a base estimate off by half the sole's height) and make the set of projected points
    change from tick to tick with the estimate's noise."""
    if cand_phi[i] * abs(cand_phi[i]) > f.gate_var[li]:
        return False
    b = f.best[li]
    if b == i:
        return True
    s = 2.0 * r_pos
    for c in range(Ncand.shape[1]):
        d = Ncand[i, c] - Ncand[b, c]
        s += d * d * f.prior_q[c]
    rise = cand_phi[i] - cand_phi[b]
    return rise * rise <= f.gate * f.gate * s


@njit(cache=True)
def _project_position(f, k, cand_phi, cand_sph, Ncand, r_pos):
    """``f.dq``: the correction that puts the stance links' candidates that can stand on the
    ground (:func:`_on_ground`) onto it (normal rows, residual phi; not an early
    touch-down's, which may stand on what the contact model does not know). Returns False if
    it failed (``f.dq`` = 0)."""
    m = np.int64(0)
    for i in range(k):
        li = f.sphere_link[cand_sph[i]]
        if (li < 0 or not f.stance[li] or f.early[li]
                or not _on_ground(f, i, li, cand_phi, Ncand, r_pos)):
            continue
        f.rows[m] = i
        for c in range(Ncand.shape[1]):
            f.J[m, c] = Ncand[i, c]
        f.res[m] = cand_phi[i]
        m += 1
    return _weighted_correction(f.J, m, f.res, f.prior_q, r_pos, f.A, f.dq)


@njit(cache=True)
def _retract(q, dq, floating):
    """``q <- q (+) dq``: the base (if ``floating``) on SE(3) to first order (position moved by
    R dq_lin, orientation by exp(dq_ang) on the right), joints added."""
    if not floating:
        for c in range(dq.shape[0]):
            q[c] += dq[c]
        return
    qx, qy, qz, qw = q[3], q[4], q[5], q[6]
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = quaternion_rotation(qx, qy, qz, qw)
    q[0] += R00 * dq[0] + R01 * dq[1] + R02 * dq[2]
    q[1] += R10 * dq[0] + R11 * dq[1] + R12 * dq[2]
    q[2] += R20 * dq[0] + R21 * dq[1] + R22 * dq[2]
    bx, by, bz, bw = rotvec_quaternion(dq[3], dq[4], dq[5])
    quaternion_product_into(qx, qy, qz, qw, bx, by, bz, bw, q, 3)
    for c in range(6, dq.shape[0]):
        q[c + 1] += dq[c]


class StanceFilter:
    """The contact state of a floating-base robot's contact links (module docstring).

    Args:
        contact_model: the controller's :class:`~wbc_dynamics.contact.geometry.ContactModel`
            (robot only: no free bodies); the filter writes its exclusion mask.
        noise: the sensing's standard deviations.
        dwell: [s] minimum time in a decision, and how long a stance link must stay above its
            gate before it is released.
        gate: [-] release gate, in predicted standard deviations of the link's distance.
        touch_floor: [m] touch threshold before the noise's share (soft feet and ground carry
            load at a few mm of penetration; a foot about to land).
        position_tolerance: [m] standard deviation of "a stance point is on the ground" (ground
            unevenness, foot compliance).
        velocity_tolerance: [m/s] standard deviation of "a stance point is at rest".
        observer: the source of force evidence (its ``normal_force`` and ``force_std``, read
            every tick; :meth:`update` runs it first when given the previous torques), or None.
        force_threshold: [N] the least normal force that is evidence of contact (what the
            sensing noise's gate leaves out: model and actuation errors).
        load_ramp: [s] a touched link's load rises over this time instead of in one tick
            (its weight in the minimum-norm selection of ``lcp_noslip`` falls from
            ``max_weight`` to 1; ``_ramp_weights``); 0 = off.
        unload_ramp: [s] a stance link whose release is announced (:meth:`set_swing`'s
            ``lift_off_in``) is unloaded over the last ``unload_ramp`` before it; 0 = off.
        max_weight: [-] >= 1, the weight at the start of a load ramp and at the end of an
            unload ramp (its share of a load the others can carry is then ~1/max_weight).
    """

    def __init__(self, contact_model: ContactModel, noise: SensingNoise, dwell: float = 0.01,
                 gate: float = 4.0, touch_floor: float = 3e-4,
                 position_tolerance: float = 1e-4, velocity_tolerance: float = 1e-3,
                 observer: MomentumObserver | None = None, force_threshold: float = 0.0,
                 load_ramp: float = 0.0, unload_ramp: float = 0.0, max_weight: float = 100.0
                 ) -> None:
        cm = contact_model
        if cm.bodies:
            raise ValueError("StanceFilter: a contact model with free bodies is not supported")
        for name, x in (("dwell", dwell), ("gate", gate), ("touch_floor", touch_floor),
                        ("position_tolerance", position_tolerance),
                        ("velocity_tolerance", velocity_tolerance),
                        ("force_threshold", force_threshold), ("load_ramp", load_ramp),
                        ("unload_ramp", unload_ramp)):
            if not (math.isfinite(x) and x >= 0.0):
                raise ValueError(f"StanceFilter.{name}: must be finite and >= 0, got {x!r}")
        if not (math.isfinite(max_weight) and max_weight >= 1.0):
            raise ValueError(f"StanceFilter.max_weight: must be finite and >= 1, got "
                             f"{max_weight!r}")
        self.contact_model = cm
        self.noise = noise
        robot = cm.robot
        self.floating = bool(robot.floating_base)
        nv = int(robot.nv)
        #: the filtered contact links, in the contact model's order
        self.links: list[str] = list(dict.fromkeys(sid[0] for sid in cm.sphere_ids))
        if observer is not None and observer.links != self.links:
            raise ValueError("StanceFilter: the observer's contact links differ from the "
                             "contact model's")
        index = {ln: i for i, ln in enumerate(self.links)}
        nb = 6 if self.floating else 0
        prior_q = np.full(nv, noise.joint_position ** 2)
        prior_v = np.full(nv, noise.joint_velocity ** 2)
        if self.floating:
            prior_q[0:3] = noise.base_position ** 2
            prior_q[3:6] = noise.base_orientation ** 2
            prior_v[0:3] = noise.base_linear_velocity ** 2
            prior_v[3:6] = noise.base_angular_velocity ** 2
        prior_joints = prior_q.copy()
        prior_joints[:nb] = 0.0
        L = len(self.links)
        cap = cm.data.Ncand.shape[0]
        self.dt = float(cm.dt)
        #: candidates within this distance [m] are looked at (a stance foot seen through a base
        #: estimate that is several standard deviations off must still be found)
        self.margin = max(float(cm.margin), gate * math.hypot(noise.base_position,
                                                              noise.base_orientation)
                          + touch_floor + 5.0 * noise.joint_position)
        self.data = StanceData(
            sphere_link=np.array([index[sid[0]] for sid in cm.sphere_ids], dtype=np.int64),
            prior_q=prior_q, prior_v=prior_v, prior_q_joints=prior_joints,
            position_variance=float(position_tolerance ** 2),
            velocity_variance=float(velocity_tolerance ** 2), touch_floor=float(touch_floor),
            gate=float(gate), dwell=float(dwell), dt=float(self.dt),
            stance=np.zeros(L, dtype=np.bool_), timer=np.full(L, dwell), lifted=np.zeros(L),
            phi_min=np.full(L, np.inf), gate_var=np.zeros(L),
            decision_changes=np.zeros(1, dtype=np.int64),
            projections=np.zeros(1, dtype=np.int64),
            projection_failures=np.zeros(1, dtype=np.int64), best=np.zeros(L, dtype=np.int64),
            rows=np.zeros(3 * cap, dtype=np.int64), J=np.zeros((3 * cap, nv)),
            res=np.zeros(3 * cap), A=np.zeros((3 * cap, 3 * cap)), dq=np.zeros(nv),
            dv=np.zeros(nv), excluded=cm.excluded_mask(),
            normal_force=np.zeros(L) if observer is None else observer.data.normal_force,
            force_std=np.full(L, np.inf) if observer is None else observer.data.force_std,
            force_floor=float(force_threshold),
            loaded_time=np.zeros(L), unloaded_time=np.full(L, dwell),
            armed=np.zeros(L, dtype=np.bool_), early=np.zeros(L, dtype=np.bool_),
            early_touchdowns=np.zeros(1, dtype=np.int64),
            load_ramp=float(load_ramp), unload_ramp=float(unload_ramp),
            max_weight=float(max_weight), release_in=np.full(L, np.inf),
            weight=cm.data.sphere_weight,
        )
        #: the force evidence's source (None: kinematics and schedule only)
        self.observer = observer
        #: the same arrays as one pointer, what the kernel takes
        self._record = record_of(self.data)
        #: (L,) bool: links the gait schedule holds in swing (:meth:`set_swing`)
        self.swing = np.zeros(L, dtype=np.bool_)
        self._index = index
        # the kernel's fixed arguments, packed once (no free bodies: checked above)
        self._packed = fixed_args(StanceTickArgs(
            filter=self._record, model=robot.kernel_model, geometry=cm.geometry,
            data=cm.kernel_data, box_rotation=np.zeros((0, 3, 3)),
            box_position=np.zeros((0, 3)), swing=self.swing, arena=cm.data.arena,
            margin=float(self.margin), floating=bool(self.floating)))
        #: the entry point bound by :meth:`bind` and the buffers it was bound for
        self._entry: object = None
        self._bound_q: object = None
        self._bound_v: object = None

    def set_swing(self, links, lift_off_in: Mapping[str, float] | None = None) -> None:
        """The gait schedule: ``links`` are in swing (released at once, not touched).

        ``lift_off_in``: announced releases, link -> time [s] until the schedule puts it in
        swing (finite, >= 0): a stance link is unloaded over the last ``unload_ramp`` before
        it. Each call replaces the announcements (links not named: none). ValueError for an
        unknown link or a bad time."""
        rel = self.data.release_in
        rel[:] = np.inf
        for ln, t in (lift_off_in or {}).items():
            if ln not in self._index:
                rel[:] = np.inf
                raise ValueError(f"lift_off_in: {ln!r} is not a contact link ({self.links})")
            x = float(t) if isinstance(t, numbers.Real) else math.nan
            if not (math.isfinite(x) and x >= 0.0):
                rel[:] = np.inf
                raise ValueError(f"lift_off_in[{ln!r}]: must be finite and >= 0 [s], got {t!r}")
            rel[self._index[ln]] = x
        self.swing[:] = False
        for ln in links:
            self.swing[self._index[ln]] = True
            rel[self._index[ln]] = np.inf

    def update(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None) -> int:
        """One tick: decide, correct ``q`` (nq,) and ``v`` (nv,) in place (core conventions,
        float64, contiguous) and set the contact model's exclusion mask; returns the number of
        stance links. ``q`` / ``v`` must be finite (the caller's validated state). ``tau``
        (n,) [N m or N]: the torques the drives apply for the previous tick's command; with an
        observer, it first runs on the uncorrected ``q`` / ``v`` and these torques."""
        if self.observer is not None and tau is not None:
            self.observer.update(q, v, tau)
        # the bound entry point for the buffers it was bound for (the controller's, every
        # tick); other arrays through the dispatcher, which checks and converts them
        call = (self._entry if q is self._bound_q and v is self._bound_v
                else stance_update_kernel)
        return int(call(self._packed, q, v))

    def bind(self, q: np.ndarray, v: np.ndarray) -> None:
        """Bind the kernel's entry point for the state buffers ``q`` (nq,) and ``v`` (nv,)
        (C-contiguous float64) that :meth:`update` will be given every tick: the dispatcher's
        typing of each argument (~4 us a tick) is then skipped. Compiles or loads the kernel
        now (start-up), without running it."""
        nq, nv = int(self.contact_model.robot.nq), int(self.contact_model.robot.nv)
        if not (_plain(q, nq) and _plain(v, nv)):
            raise ValueError("StanceFilter.bind: q and v must be C-contiguous float64 arrays "
                             f"of the model's sizes ({nq},) and ({nv},)")
        self._entry = bound_entry(stance_update_kernel, (self._packed, q, v))
        self._bound_q, self._bound_v = q, v

    def reset(self) -> None:
        """Forget the decisions (no link in stance; the next tick decides afresh)."""
        f = self.data
        f.stance[:] = False
        f.timer[:] = f.dwell
        f.lifted[:] = 0.0
        f.phi_min[:] = np.inf
        f.dq[:] = 0.0
        f.dv[:] = 0.0
        f.loaded_time[:] = 0.0
        f.unloaded_time[:] = f.dwell
        f.armed[:] = False
        f.early[:] = False
        f.release_in[:] = np.inf
        f.weight[:] = 1.0
        if self.observer is not None:
            self.observer.reset()

    def reset_counters(self) -> None:
        """Zero the decision, projection and failure counters."""
        f = self.data
        f.decision_changes[:] = 0
        f.projections[:] = 0
        f.projection_failures[:] = 0
        f.early_touchdowns[:] = 0

    @property
    def stance_links(self) -> list[str]:
        """Links currently in stance."""
        return [ln for ln, s in zip(self.links, self.data.stance, strict=True) if s]

    @property
    def decisions_changed(self) -> int:
        """Stance decisions changed since construction (touches + releases)."""
        return int(self.data.decision_changes[0])

    @property
    def early_touchdowns(self) -> int:
        """Swing links touched on force evidence before the schedule's stance."""
        return int(self.data.early_touchdowns[0])

    @property
    def loaded_links(self) -> list[str]:
        """Links whose estimated normal force is above its gate this tick (none without an
        observer)."""
        f = self.data
        return [ln for ln, t in zip(self.links, f.loaded_time, strict=True) if t > 0.0]

    @property
    def link_weights(self) -> dict[str, float]:
        """Each link's weight in the minimum-norm selection this tick (1: no ramp; see
        ``load_ramp``)."""
        f = self.data
        out = dict.fromkeys(self.links, 1.0)
        for s, li in enumerate(f.sphere_link):
            if li >= 0:
                out[self.links[li]] = float(f.weight[s])
        return out

    @property
    def failed_projections(self) -> int:
        """Ticks whose correction failed (the raw state was used)."""
        return int(self.data.projection_failures[0])
