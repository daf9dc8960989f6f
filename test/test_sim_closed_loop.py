"""Closed loop: the quadruped standing in MuJoCo under the product's controller (qp_coulomb).

Bounds (2 s of simulated time at 1 kHz after settling on the rigid, high-friction ground):

* base height within 2 mm of the bundled standing height (0.1446 m), base drift < 2 mm;
* joint position error: mean < 0.01 rad, max < 0.05 rad;
* torques finite and within the URDF effort limits (4 N m) on every tick;
* the controller's predicted sum of normal forces within 2 % of MuJoCo's on average and within
  5 % on every tick after the first 50 ms, and MuJoCo's sum within 0.5 % of m g = 47.09 N.

The same loop without the contact prediction (``method: none`` on a floating base) is asserted to
fall -- the test can tell a standing robot from a falling one. And the demo in ``--short`` mode
exits 0 and writes its plot.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mujoco")

from wbc_dynamics.robots import robot_info  # noqa: E402
from wbc_dynamics.sim.closed_loop import LoopConfig, run  # noqa: E402

MG = robot_info("quadruped")["total_mass"] * 9.81
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def standing():
    return run(LoopConfig(robot="quadruped", controller="qp_coulomb", reference="stand",
                          duration=2.0), stop_on_failure=False)


def test_quadruped_stands_under_qp_coulomb(standing):
    res = standing
    info = robot_info("quadruped")
    assert not res.failed, res.failure
    assert res.t.shape[0] == 2000
    h0 = info["standing_height"]
    assert np.abs(res.base_pos[:, 2] - h0).max() < 2e-3
    assert np.abs(res.base_pos[:, :2] - res.base_pos[0, :2]).max() < 2e-3
    err = np.abs(res.q - res.q_des)
    assert err.mean() < 0.01 and err.max() < 0.05, (err.mean(), err.max())
    assert np.all(np.isfinite(res.tau))
    assert np.all(np.abs(res.tau) <= res.effort_limit + 1e-9)
    mg = info["total_mass"] * 9.81
    assert np.mean(res.normal_sim) == pytest.approx(mg, rel=5e-3)
    m = res.metrics()
    assert m["force_rel"] < 0.02, m
    after = res.t >= 0.05
    rel = np.abs(res.normal_pred[after] - res.normal_sim[after]) / res.normal_sim[after]
    assert rel.max() < 0.05, rel.max()
    assert res.safe_ticks == 0


def test_without_contact_forces_the_quadruped_falls():
    # soft feedback (kp 300 / kd 35): without the contact prediction nothing carries the weight.
    # (With the loop's default 3000 / 110 the stiff PD alone holds the stance for 2 s.)
    res = run(LoopConfig(robot="quadruped", controller="none", reference="stand", duration=2.0,
                         kp=300.0, kd=35.0))
    assert res.failed and "fell" in res.failure


def test_demo_short_mode_exits_zero(tmp_path):
    png = tmp_path / "demo.png"
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "wbc_dynamics.sim.demo", "--short", "--plot",
                           str(png)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for key in ("joint tracking", "torques", "contact force", "tick time", "did not fall"):
        assert key in out, out
    assert png.is_file() and png.stat().st_size > 10_000


def test_weight_shift_under_lcp_noslip_min_norm_tracks_and_predicts():
    """The demo's default: the base sways 2 cm over four stuck feet. Minimum-norm impulses of
    lcp_noslip (Sec. 4, option min_norm) realize the commanded joint motion (mean error
    < 0.01 rad) and predict MuJoCo's summed normal force within 1 %."""
    res = run(LoopConfig(robot="quadruped", controller="lcp_noslip_mn", reference="shift",
                         duration=2.0), stop_on_failure=False)
    assert not res.failed, res.failure
    m = res.metrics()
    assert m["pos_err"] < 0.01 and m["pos_err_max"] < 0.05, m
    assert m["force_rel"] < 0.01, m
    # the base really swayed: lateral excursion close to the planned 2 cm amplitude
    dy = res.base_pos[:, 1] - res.base_pos[0, 1]
    assert 0.015 < np.abs(dy).max() < 0.025, np.abs(dy).max()


@pytest.mark.parametrize("controller, duration, max_err, dx_range", [
    ("lcp_noslip_mn", 5.0, 0.03, (0.6, 1.0)), ("qp_coulomb", 3.0, 0.15, (-0.05, 0.5)),
    ("qp_noslip", 5.0, 0.03, (0.6, 1.0))])
def test_trot_on_rigid_high_friction_ground(controller, duration, max_err, dx_range):
    """The trot of Zapolsky & Drumwright, Sec. 7.6 (0.3 s cycle, duty 0.75, 1.5 cm steps, 20 cm/s)
    with the loop's defaults (passive touchdown impact, no-slip only on touching feet,
    kp 3000 / kd 110): no fall, joint error bounded, drives rarely at their 4 N m limit.
    lcp_noslip walks the planned distance (0.4 m by t = 3 s, 0.86 m by 5 s); qp_coulomb trots almost
    in place (~3 cm): its Stage I objective (eq. 69, kinetic energy of the whole mechanism) predicts
    contact forces that brake the base (docs/contact_methods.md, "Model note").

    lcp_noslip runs 5 s: with a relative rank test alone its predictions degraded from ~3.4 s
    on (two stance feet at sub-mm different heights: nearly dependent no-slip rows, predicted
    touchdown impulses up to ~9400 m g, torques swinging between the limits on 7-9 % of the
    ticks); the scale-aware rank test (``rank_mass_ratio``) keeps every tick's predicted
    summed normal force within 3 m g (measured 2.5) and the per-tick torque change's 99th
    percentile within half the +-4 N m range (measured 3.4 N m).

    qp_noslip (the loop's quadruped options: contact-velocity Stage I objective, sticking
    correction) runs 5 s under the same bounds (measured 2.7 m g, p99 3.7 N m, 0.0043 rad,
    0.86 m). Without the scale-aware rank rule on its free tangential impulses
    (``rank_mass_ratio``) the same loop predicted up to 14 m g of normal force and 1e4 m g of
    internal tangential force between two stance feet, p99 |dtau| 8 N m."""
    res = run(LoopConfig(robot="quadruped", controller=controller, reference="trot",
                         duration=duration), stop_on_failure=False)
    assert not res.failed, res.failure
    m = res.metrics()
    assert m["pos_err"] < max_err, m
    assert m["clamp_frac"] < 0.05, m
    dx = res.base_pos[-1, 0] - res.base_pos[0, 0]
    assert dx_range[0] < dx < dx_range[1], dx
    if controller in ("lcp_noslip_mn", "qp_noslip"):
        pred = res.normal_pred[np.isfinite(res.normal_pred)]
        assert pred.size > 0.9 * len(res.t) and float(pred.max()) <= 3.0 * MG, pred.max() / MG
        dtau = np.max(np.abs(np.diff(res.tau, axis=0)), axis=1)
        assert float(np.percentile(dtau, 99)) <= 4.0


def test_trot_without_the_touchdown_options_falls():
    """The previous configuration (measured velocities used as is, no-slip rows on every
    candidate within the margin, kp 300 / kd 35) falls at the first touchdowns -- the options
    above are what makes the trot work."""
    res = run(LoopConfig(robot="quadruped", controller="lcp_noslip_mn", reference="trot",
                         duration=3.0, passive_impact=False, kp=300.0, kd=35.0,
                         solver_options={"lcp_noslip": {"noslip_gap": None}}))
    assert res.failed and "fell" in res.failure
    assert res.t[-1] < 1.5  # gait starts at 0.5 s


def test_weight_shift_on_compliant_ground_stays_up():
    """Compliant, low-friction ground (0.85 mm rest sink): the feet's mm/s compression /
    rebound velocities are absorbed by the passive impact (separation_tolerance), so swaying
    over four feet no longer reads as approach / separation to be stopped within one tick."""
    res = run(LoopConfig(robot="quadruped", controller="lcp_noslip_mn", reference="shift",
                         duration=2.0, compliant=True, friction="low"), stop_on_failure=False)
    assert not res.failed, res.failure
    m = res.metrics()
    assert m["pos_err"] < 0.03 and m["force_rel"] < 0.05, m
