"""The demo's video (wbc_dynamics/sim/video.py): frames rendered offscreen during the run.

* A recorder on a small MJCF (a box dropped onto a plane, 0.3 s, 30 fps) writes an MP4 of
  exactly ``expected_frames(0.3, 30) = 10`` frames, none blank, the last unlike the first.
* The demo (0.3 s of the bundled quadruped) writes the MP4 beside its plot and names it; its
  frame count is that of the default frame rate.
* Without offscreen OpenGL (mujoco.Renderer raising) the demo says so in one line, writes the
  plot and exits 0; the recorder raises ``VideoUnavailableError`` with that one-line reason.
* Without PyAV the recorder writes an animated GIF with the same frames.

Rendering runs in subprocesses: MuJoCo picks its OpenGL backend when first imported, and this
pytest process has imported it already (without ``MUJOCO_GL``). Where the machine has no
offscreen OpenGL those tests are skipped with the recorder's reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from wbc_dynamics.sim.video import (  # noqa: E402
    DEFAULT_FPS,
    VideoRecorder,
    VideoUnavailableError,
    expected_frames,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DURATION, FPS = 0.3, 30.0
N_FRAMES = expected_frames(DURATION, FPS)

#: a 0.2 m box dropped from 0.5 m onto a plane: it falls for the whole 0.3 s
DROP_XML = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="ground" type="plane" size="0 0 1" rgba="0.8 0.8 0.8 1"/>
    <body name="box" pos="0 0 0.5">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" rgba="0.2 0.3 0.8 1"/>
    </body>
  </worldbody>
</mujoco>
"""

#: records DROP_XML in a fresh interpreter; argv: output path, "noav" to hide PyAV
RECORD = f"""
import json, sys
if "noav" in sys.argv[2:]:
    sys.modules["av"] = None  # import av -> ImportError
from wbc_dynamics.sim.video import VideoRecorder, VideoUnavailableError, prefer_headless_gl
prefer_headless_gl()
import mujoco
m = mujoco.MjModel.from_xml_string({DROP_XML!r})
d = mujoco.MjData(m)
mujoco.mj_forward(m, d)
try:
    rec = VideoRecorder(m, d, sys.argv[1], fps={FPS})
except VideoUnavailableError as exc:
    print(json.dumps({{"unavailable": str(exc)}}))
    sys.exit(0)
z0 = float(d.qpos[2])
while d.time < {DURATION} - 1e-9:
    mujoco.mj_step(m, d)
    rec(d.time)
print(json.dumps({{"path": rec.close(), "frames": rec.frames, "format": rec.format,
                  "note": rec.note, "fall": z0 - float(d.qpos[2])}}))
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _record(path, *flags: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", RECORD, str(path), *flags], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "unavailable" in out:
        pytest.skip(f"no offscreen rendering here: {out['unavailable']}")
    return out


def _decode(path) -> list[np.ndarray]:
    av = pytest.importorskip("av")
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def _check_frames(frames: list[np.ndarray], min_change: float) -> None:
    assert frames[0].shape == (240, 320, 3)
    stds = [float(f.std()) for f in frames]
    assert min(stds) > 10.0, f"blank frame(s): pixel std {stds}"
    change = float(np.abs(frames[-1].astype(float) - frames[0]).mean())
    assert change > min_change, f"last frame vs first: mean |difference| {change:.2f}"


def test_recorder_writes_an_mp4_with_one_frame_per_period(tmp_path):
    pytest.importorskip("av")
    out = _record(tmp_path / "drop.mp4")
    assert out["format"] == "mp4" and out["note"] == "" and out["fall"] > 0.3
    assert out["path"] == str(tmp_path / "drop.mp4") and out["frames"] == N_FRAMES == 10
    frames = _decode(out["path"])
    assert len(frames) == N_FRAMES
    # the box falls 0.4 m (2 box sizes) under a camera whose height stays
    _check_frames(frames, min_change=1.5)


def test_without_pyav_the_recorder_writes_a_gif(tmp_path):
    from PIL import Image

    out = _record(tmp_path / "drop.mp4", "noav")
    assert out["format"] == "gif" and out["path"] == str(tmp_path / "drop.gif")
    assert "PyAV not installed" in out["note"] and out["frames"] == N_FRAMES
    assert not (tmp_path / "drop.mp4").exists()
    with Image.open(out["path"]) as gif:
        assert gif.n_frames == N_FRAMES  # the box moves: no two frames merge
        frames = []
        for i in range(gif.n_frames):
            gif.seek(i)
            frames.append(np.asarray(gif.convert("RGB")))
    _check_frames(frames, min_change=1.5)


def test_demo_writes_the_video_beside_the_plot(tmp_path):
    pytest.importorskip("av")
    png = tmp_path / "run.png"
    proc = subprocess.run([sys.executable, "-m", "wbc_dynamics.sim.demo", "--quiet",
                           "--duration", str(DURATION), "--plot", str(png)],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("video ")]
    assert len(lines) == 1, proc.stdout
    if "no offscreen OpenGL" in lines[0]:
        pytest.skip(lines[0])
    mp4 = tmp_path / "run.mp4"
    n = expected_frames(DURATION, DEFAULT_FPS)
    # the plant runs with perturbed masses (realistic sensing): the drawing still has its visuals
    assert (f"{mp4} ({n} frames, {DEFAULT_FPS:g} per simulated second, 320x240, URDF visuals"
            in lines[0])
    assert png.stat().st_size > 10_000
    frames = _decode(mp4)
    assert len(frames) == n
    # the base sways ~1.6 cm in 0.3 s: the ground lines pass under the following camera
    _check_frames(frames, min_change=0.3)


def test_without_offscreen_gl_the_demo_says_so_and_writes_the_plot(tmp_path, monkeypatch,
                                                                   capsys):
    from wbc_dynamics.sim import demo

    def no_gl(*args, **kwargs):
        raise mujoco.FatalError("gladLoadGL error")

    monkeypatch.setattr(mujoco, "Renderer", no_gl)
    model = mujoco.MjModel.from_xml_string(DROP_XML)
    with pytest.raises(VideoUnavailableError) as info:
        VideoRecorder(model, mujoco.MjData(model), tmp_path / "x.mp4")
    assert "no offscreen OpenGL (MUJOCO_GL=" in str(info.value)
    assert "gladLoadGL error" in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "x.mp4").exists()

    png = tmp_path / "run.png"
    assert demo.main(["--quiet", "--duration", "0.1", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "no offscreen OpenGL" in ln]
    assert len(lines) == 1, out
    assert lines[0].startswith("video           : no offscreen OpenGL (MUJOCO_GL=")
    assert "gladLoadGL error" in lines[0] and lines[0].endswith("; plot only")
    assert png.stat().st_size > 10_000 and not (tmp_path / "run.mp4").exists()
    assert "result          : did not fall" in out


QUADRUPED = os.path.join(REPO, "wbc_dynamics", "robots", "quadruped.urdf")


def test_visual_model_adds_massless_noncolliding_geoms():
    from wbc_dynamics.sim.mujoco_model import MujocoPlant

    plant = MujocoPlant(QUADRUPED)
    m = plant.model
    vis = mujoco.MjModel.from_xml_string(plant.visual_xml())
    assert vis.ngeom > m.ngeom and (vis.nq, vis.nv, vis.nbody) == (m.nq, m.nv, m.nbody)
    extra = [g for g in range(vis.ngeom) if vis.geom(g).name.endswith(
        tuple(f"__vis{k}" for k in range(10)))]
    assert len(extra) == vis.ngeom - m.ngeom
    assert all(vis.geom_contype[g] == 0 and vis.geom_conaffinity[g] == 0 for g in extra)
    assert all(vis.geom_group[g] in (1, 2) for g in extra)
    for attr in ("body_mass", "body_inertia", "body_ipos", "body_iquat"):
        np.testing.assert_allclose(getattr(vis, attr), getattr(m, attr), rtol=0, atol=1e-12)


#: one frame of the standing quadruped with and without its URDF visuals
RENDER_VISUALS = f"""
import json
from wbc_dynamics.sim.video import VideoRecorder, VideoUnavailableError, prefer_headless_gl
prefer_headless_gl()
import mujoco, numpy as np
from wbc_dynamics.sim.mujoco_model import MujocoPlant
plant = MujocoPlant({QUADRUPED!r})
plant.data.qpos[2] = 0.4
mujoco.mj_forward(plant.model, plant.data)
out = {{}}
try:
    for vis in (False, True):
        rec = VideoRecorder(plant.model, plant.data, "unused.mp4", distance=1.2,
                            visual_xml=plant.visual_xml() if vis else None)
        out[str(vis)] = [rec.visuals, rec.capture().astype(float)]
        rec.close()
except VideoUnavailableError as exc:
    print(json.dumps({{"unavailable": str(exc)}}))
    raise SystemExit(0)
print(json.dumps({{"visuals": [out["False"][0], out["True"][0]],
                  "diff": float(np.abs(out["True"][1] - out["False"][1]).mean())}}))
"""


def test_recorder_draws_the_urdf_visuals(tmp_path):
    proc = subprocess.run([sys.executable, "-c", RENDER_VISUALS], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "unavailable" in out:
        pytest.skip(f"no offscreen rendering here: {out['unavailable']}")
    assert out["visuals"] == [False, True]
    # the quadruped's shanks and coloured visuals (1.8 measured) vs its collision shapes
    assert out["diff"] > 0.8, out
