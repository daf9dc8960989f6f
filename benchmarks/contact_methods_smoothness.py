"""Torque smoothness along a slowly varying four-feet standing trajectory (Zapolsky & Drumwright,
Sec. 8.1).

The quadruped stands on flat ground (mu = 0.8) on four feet (an indeterminate contact
configuration) with the feet fixed while the base sways sideways and crouches:
``base(t) = base0 + (0, 0.01 sin(w t), -0.005 (1 - cos(w t)))`` m, period 1 s, orientation fixed;
the joint angles follow from leg inverse kinematics, joint velocities and the desired joint
accelerations from central differences of the IK solution (so the reference is consistent with
sticking feet). Every method / option is run on the *same* sequence of problems.

Reported per configuration: mean and max over ticks of ``|d tau| = max_j |tau_j(t+1) - tau_j(t)|``
[N m per tick], mean ``|tau|``, median solve time, and flags. "warm" keeps one SolverState,
"cold" passes ``state=None`` (fresh OSQP setup / cold Lemke every tick).

    python benchmarks/contact_methods_smoothness.py [--ticks 1000] [--markdown]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from wbc_dynamics import RobotModel
from wbc_dynamics.contact import SolverState, solve
from wbc_dynamics.contact.geometry import ContactModel, HalfSpace
from wbc_dynamics.robots import robot_info, robot_path

FEET = ("LF_foot", "LH_foot", "RF_foot", "RH_foot")
DT = 1e-3


def leg_ik(robot: RobotModel, q: np.ndarray, feet_world: np.ndarray) -> np.ndarray:
    """Joint angles putting every foot centre at ``feet_world`` for the base pose in ``q``
    (Newton on each 3-DoF leg, world-frame foot Jacobian)."""
    q = q.copy()
    for _ in range(30):
        err = 0.0
        for leg, foot in enumerate(FEET):
            e = feet_world[leg] - robot.frame_placement(q, foot)[:3, 3]
            err = max(err, float(np.abs(e).max()))
            J = robot.jacobian(q, foot, frame="world")[:3, 6 + 3 * leg: 9 + 3 * leg]
            q[7 + 3 * leg: 10 + 3 * leg] += np.linalg.solve(J, e)
        if err < 1e-14:
            break
    return q


def trajectory(ticks: int, period: float = 1.0, sway: float = 0.01, crouch: float = 0.01):
    """Reference states (q, v, qdd_des) of the swaying / crouching quadruped, feet fixed."""
    robot = RobotModel.from_urdf(robot_path("quadruped"), floating_base=True)
    cm = ContactModel(robot, contact_links=list(FEET),
                      features=[HalfSpace.ground(0.0, mu=0.8)], margin=0.005, dt=DT)
    q0 = np.array(robot_info("quadruped")["standing_q"])
    feet = np.array([robot.frame_placement(q0, f)[:3, 3] for f in FEET])
    w = 2 * np.pi / period

    def base(t):
        return q0[:3] + np.array([0.0, sway * np.sin(w * t), -0.5 * crouch * (1 - np.cos(w * t))])

    def pose(t, guess):
        q = guess.copy()
        q[:3] = base(t)
        return leg_ik(robot, q, feet)

    probs, qdds = [], []
    qm, qc = pose(-DT, q0), pose(0.0, q0)
    for i in range(ticks):
        t = i * DT
        qp = pose(t + DT, qc)
        v = np.zeros(robot.nv)
        v[:3] = [0.0, sway * w * np.cos(w * t), -0.5 * crouch * w * np.sin(w * t)]
        v[6:] = (qp[7:] - qm[7:]) / (2 * DT)
        qdd = (qp[7:] - 2 * qc[7:] + qm[7:]) / DT**2
        probs.append(cm.build(qc, v, qdd))
        qdds.append(qdd)
        qm, qc = qc, qp
    return probs, np.array(qdds), robot


CONFIGS = [
    ("qp_coulomb", "two-stage, warm", True, {}),
    ("qp_coulomb", "two-stage, cold", False, {}),
    ("qp_coulomb", "Stage I only, warm", True, {"stage2": False}),
    ("qp_coulomb", "Stage I only, cold", False, {"stage2": False}),
    ("stage1_lemke", "qp_coulomb Stage I by Lemke on its KKT LCP (paper's solver)", False, {}),
    ("qp_noslip", "two-stage, warm", True, {}),
    ("qp_noslip", "two-stage, cold", False, {}),
    ("qp_noslip", "Stage I only, cold", False, {"stage2": False}),
    ("lcp_coulomb", "Lemke, warm basis", True, {}),
    ("lcp_coulomb", "Lemke, cold", False, {}),
    ("lcp_coulomb", "MINDIFF (Alg. 3)", True, {"mindiff": True}),
    ("lcp_noslip", "PPM, warm (Alg. 2)", True, {}),
    ("lcp_noslip", "PPM, cold", False, {}),
]


def stage1_lemke_kkt(p):
    """Stage I (69)-(74) as the paper solves it (footnote 1): the KKT conditions of the reduced
    QP (edge form of the pyramid, all variables >= 0) as an LCP, solved by Lemke (cold).

    Returns the torques (eq. 90) of the Lemke solution, which is *a* vertex of the optimal face.
    """
    from wbc_dynamics.contact.lcp_coulomb import build_coulomb_lcp
    from wbc_dynamics.contact.lemke import solve_lcp

    p.validate()
    _, _, red, _ = build_coulomb_lcp(p, 4)
    nc, dt = p.nc, p.dt
    m = red.H.shape[0]
    A = np.zeros((2 * nc, m))
    A[:nc] = red.H[:nc]
    for i in range(nc):
        A[nc + i, i] = p.mu[i]
        A[nc + i, nc + 4 * i: nc + 4 * i + 4] = -1.0
    b = np.concatenate([-p.phi / dt - red.Jv0[:nc], np.zeros(nc)])
    Q = np.block([[red.H, -A.T], [A, np.zeros((2 * nc, 2 * nc))]])
    q = np.concatenate([red.uf, -b])
    sol = solve_lcp(Q, q)
    tau, _, _ = red.recover(sol.z[:m])
    return tau


def run(probs, method, warm, opts):
    if method == "stage1_lemke":
        taus = np.array([stage1_lemke_kkt(p) for p in probs])
        d = np.abs(np.diff(taus, axis=0)).max(axis=1)
        return {"mean_dtau": float(d.mean()), "max_dtau": float(d.max()),
                "mean_tau": float(np.abs(taus).mean()), "median_us": float("nan"), "flags": {}}
    st = SolverState() if warm else None
    taus, times, flags = [], [], {}
    for p in probs:
        t0 = time.perf_counter()
        r = solve(method, p, st, **opts)
        times.append(time.perf_counter() - t0)
        taus.append(r.tau)
        for f in r.stats.flags:
            flags[f] = flags.get(f, 0) + 1
    taus = np.array(taus)
    d = np.abs(np.diff(taus, axis=0)).max(axis=1)
    return {"mean_dtau": float(d.mean()), "max_dtau": float(d.max()),
            "mean_tau": float(np.abs(taus).mean()), "median_us": float(np.median(times) * 1e6),
            "flags": flags}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ticks", type=int, default=1000)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    probs, qdds, robot = trajectory(args.ticks)
    dqdd = float(np.abs(np.diff(qdds, axis=0)).max())
    print(f"{len(probs)} ticks, max |d qdd_des| per tick = {dqdd:.4g} rad/s^2")
    rows = []
    for method, label, warm, opts in CONFIGS:
        try:
            r = run(probs, method, warm, opts)
        except ImportError as exc:  # a method module not present
            print(f"{method} {label}: skipped ({exc})")
            continue
        rows.append((method, label, r))
        print(f"{method:12s} {label:22s} mean|dtau| {r['mean_dtau']:10.4g}  max|dtau| "
              f"{r['max_dtau']:10.4g}  mean|tau| {r['mean_tau']:7.4f}  "
              f"median {r['median_us']:7.1f} us  flags {r['flags']}", flush=True)
    if args.markdown:
        print("\n| method | variant | mean \\|Δτ\\| [N m/tick] | max \\|Δτ\\| [N m/tick] "
              "| mean \\|τ\\| [N m] | median solve [µs] |")
        print("|---|---|---|---|---|---|")
        for method, label, r in rows:
            print(f"| `{method}` | {label} | {r['mean_dtau']:.3g} | {r['max_dtau']:.3g} | "
                  f"{r['mean_tau']:.3f} | {r['median_us']:.0f} |")
    return rows


if __name__ == "__main__":
    main()
