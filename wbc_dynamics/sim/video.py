"""Video of a simulated run: MuJoCo's offscreen renderer, a camera that follows the robot, one
frame per ``1 / fps`` of simulated time, written as MP4 (PyAV) or, without PyAV, as an animated
GIF (Pillow).

Offscreen OpenGL: MuJoCo picks its OpenGL backend from the environment variable ``MUJOCO_GL``
when ``mujoco`` is first imported -- ``egl`` (a GPU's EGL, or Mesa's: with
``EGL_PLATFORM=surfaceless`` it needs neither a display nor a GPU, Mesa's llvmpipe renders on
the CPU), ``osmesa`` (Mesa's software renderer, where installed) or ``glfw`` (a window system).
:func:`prefer_headless_gl` chooses ``egl`` + surfaceless unless the user set ``MUJOCO_GL`` (on
Linux, where libEGL and libGL load: without them ``import mujoco`` itself would fail with
``egl``); it acts only before ``mujoco`` is imported. Where no backend works,
:class:`VideoRecorder` raises :class:`VideoUnavailableError`, whose message is a one-line
reason.

Typical use (the demo's)::

    prefer_headless_gl()                       # before anything imports mujoco
    rec = VideoRecorder(plant.model, plant.data, "out/run.mp4", visual_xml=plant.visual_xml())
    loop.run(on_step=rec)                      # ClosedLoop.run calls rec(t, plant) every tick
    path = rec.close()

Importing this module imports neither mujoco nor PyAV.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import math
import os
import sys
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_FPS",
    "DEFAULT_SIZE",
    "VideoRecorder",
    "VideoUnavailableError",
    "expected_frames",
    "prefer_headless_gl",
]

#: Frames per second of simulated time (the video plays in real time). 20, not 30: a frame costs
#: ~8 ms on a CPU renderer (Mesa llvmpipe): 30 fps added ~27 % to the demo's wall time.
DEFAULT_FPS = 20.0
#: Frame size (width, height) [pixels].
DEFAULT_SIZE = (320, 240)

_GRID_RGBA = np.array([0.35, 0.35, 0.35, 1.0], dtype=np.float32)


class VideoUnavailableError(RuntimeError):
    """No video can be rendered here; ``str(exc)`` is a one-line reason."""


def prefer_headless_gl() -> str | None:
    """Choose MuJoCo's headless EGL backend (``MUJOCO_GL=egl``, ``EGL_PLATFORM=surfaceless``)
    unless ``MUJOCO_GL`` is already set. Returns ``None`` when the environment decides the
    backend, else a one-line note why the default was not applied: ``mujoco`` was imported
    already (its backend is fixed at import), not Linux, or no libEGL / libGL to load."""
    if os.environ.get("MUJOCO_GL"):
        return None
    if "mujoco" in sys.modules:
        return ("mujoco was imported before MUJOCO_GL was set (start with MUJOCO_GL=egl "
                "EGL_PLATFORM=surfaceless)")
    if not sys.platform.startswith("linux"):
        return None  # MuJoCo's default (glfw / cgl / wgl); "egl" is Linux-only
    # without the libraries, MUJOCO_GL=egl breaks ``import mujoco`` itself (in PyOpenGL)
    if not (_loadable("EGL") and _loadable("OpenGL", "GL", "GLESv2")):
        return "no libEGL / libGL to load, so no headless EGL"
    os.environ["MUJOCO_GL"] = "egl"
    # Mesa's EGL would otherwise look for a display (X11 / Wayland) first
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")
    return None


def _loadable(*names: str) -> bool:
    """Whether a shared library ``lib<name>.so`` (or ``.so.N``) loads, as PyOpenGL loads it."""
    for name in names:
        for suffix in ("", *(f".{i}" for i in range(10))):
            try:
                ctypes.CDLL(f"lib{name}.so{suffix}")
            except OSError:
                continue
            return True
    return False


def expected_frames(duration: float, fps: float) -> int:
    """Frames a :class:`VideoRecorder` captures over ``duration`` seconds of simulated time
    called every tick: one at the first tick, then one per ``1 / fps`` [s] up to the end."""
    return int(math.floor(duration * fps + 1e-6)) + 1


def _one_line(text: str) -> str:
    """``text`` on one line, at most 160 characters."""
    text = " ".join(text.split()) or "unknown error"
    return text if len(text) <= 160 else text[:157] + "..."


def _mp4_codec() -> tuple[Any, str]:
    """(PyAV, the MP4 video codec its FFmpeg encodes: H.264 ``libx264``, else MPEG-4 part 2
    ``mpeg4``), or (None, why not)."""
    try:
        import av
    except ImportError:
        return None, "PyAV not installed (pip install av)"
    available = av.codec.codecs_available
    for name in ("libx264", "mpeg4"):
        if name in available:
            return av, name
    return None, "PyAV's FFmpeg has neither the libx264 nor the mpeg4 encoder"


def _nice_spacing(length: float) -> float:
    """The largest value of the 1-2-5 series not above ``length`` [m]."""
    e = 10.0 ** math.floor(math.log10(length))
    return max(m * e for m in (1.0, 2.0, 5.0) if m * e <= length)


class VideoRecorder:
    """Renders frames of a MuJoCo model/data pair during a run and writes them as a video.

    Args:
        model: the plant's ``mujoco.MjModel`` (the recorder renders a copy: its framebuffer
            size and headlight are set for the video, the plant's model stays as it is).
        data: the plant's ``mujoco.MjData``, read (not modified) at every frame.
        path: output file; ``.mp4`` with PyAV, else an animated GIF with the same stem
            (``.gif``, frame delays rounded to the format's 10 ms; :attr:`note` says so). Its
            directory is created.
        fps: frames per second of simulated time [1/s]; the video plays in real time.
        size: (width, height) [pixels], even numbers (the MP4 encoders' 4:2:0 chroma).
        body: the body whose subtree (the robot) the camera looks at (name or id); default
            the robot's root: the top-level body with the most bodies below it.
        distance: camera distance from the look-at point [m]; default 2.2 x the model's
            extent (``model.stat.extent``).
        azimuth: camera azimuth [deg] (0: looking along +x; 90: along +y).
        elevation: camera elevation [deg] (negative: looking down).
        multisamples: anti-aliasing samples per pixel (0: none; 4, MuJoCo's default, is smooth
            on a GPU but costs ~3x per frame on a CPU renderer).
        visual_xml: the MJCF of ``model`` with the robot's URDF ``<visual>`` geometry
            (:meth:`~wbc_dynamics.sim.mujoco_model.MujocoPlant.visual_xml`): rendered instead
            of ``model``'s collision geometry, the plant's ``qpos`` copied into it every frame;
            ignored (a copy of ``model`` is drawn) if it does not load or its bodies or joints
            differ from ``model``'s. :attr:`visuals` says which.

    The camera looks at the centre of mass of the body's subtree. On a body with joints (a
    floating base) it follows that point horizontally, its height staying where recording
    started (so a fall or a jump shows); on a body welded to the world it stays put. Lines on
    the ground plane (1-2-5 spacing near the model's extent) show the robot moving past them.

    Raises:
        VideoUnavailableError: no offscreen OpenGL (the message is the reason, on one line).
        ValueError: bad ``fps`` / ``size`` / ``body``.
    """

    def __init__(self, model: Any, data: Any, path: str | os.PathLike, *,
                 fps: float = DEFAULT_FPS, size: tuple[int, int] = DEFAULT_SIZE,
                 body: str | int | None = None, distance: float | None = None,
                 azimuth: float = 135.0, elevation: float = -20.0,
                 multisamples: int = 0, visual_xml: str | None = None) -> None:
        width, height = (int(size[0]), int(size[1]))
        if not (math.isfinite(fps) and fps > 0):
            raise ValueError(f"video fps must be > 0, got {fps}")
        if width < 16 or height < 16 or width % 2 or height % 2:
            raise ValueError(f"video size must be even and >= 16 pixels, got {width}x{height}")
        import mujoco

        #: frames per second of simulated time [1/s]
        self.fps = float(fps)
        #: (width, height) [pixels]
        self.size = (width, height)
        #: frames captured so far
        self.frames = 0
        self._next_t = -math.inf
        self._data = data
        self._mujoco = mujoco
        self._body = self._tracked_body(model, body)

        extent = float(model.stat.extent) if model.stat.extent > 0 else 1.0
        render_model = self._visual_model(model, visual_xml) if visual_xml else None
        #: whether the frames show the URDF visuals (else the plant's collision geometry)
        self.visuals = render_model is not None
        self._render_model = render_model
        self._render_data = None if render_model is None else mujoco.MjData(render_model)
        model = copy.copy(model) if render_model is None else render_model
        glob = model.vis.global_
        glob.offwidth, glob.offheight = max(glob.offwidth, width), max(glob.offheight, height)
        # models without lights get only the dim default headlight
        model.vis.headlight.ambient[:] = 0.35
        model.vis.headlight.diffuse[:] = 0.75
        # MuJoCo's default 4x multisampling triples a CPU renderer's (llvmpipe's) time per frame
        model.vis.quality.offsamples = int(multisamples)
        renderer, failure = None, None
        # a failing backend may warn first (glfw: "DISPLAY missing"): that belongs in the reason
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                renderer = mujoco.Renderer(model, height, width)
                # a context can open and still fail to draw: one frame proves it (not recorded)
                renderer.update_scene(self._scene_data())
                renderer.render()
            except Exception as exc:
                # the GL backends fail with many types (mujoco.FatalError, RuntimeError,
                # ImportError of the backend's module, OSError / AttributeError of a missing
                # libEGL or libOSMesa): all mean "no offscreen OpenGL here"
                failure = exc
        if failure is not None:
            if renderer is not None:
                with contextlib.suppress(Exception):
                    renderer.close()
            gl = os.environ.get("MUJOCO_GL") or "unset"
            why = "; ".join([str(w.message) for w in caught[:1]] + [str(failure)])
            raise VideoUnavailableError(
                f"no offscreen OpenGL (MUJOCO_GL={gl}: {_one_line(why)})") from failure
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self._renderer: Any = renderer

        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.distance = 2.2 * extent if distance is None else float(distance)
        cam.azimuth, cam.elevation = float(azimuth), float(elevation)
        cam.lookat[:] = data.subtree_com[self._body]
        self._follow = bool(model.body_jntnum[self._body] > 0)
        self._camera = cam
        self._grid = self._ground_grid(model, extent, cam.distance)

        av, codec_or_why = _mp4_codec()
        #: the file format ("mp4" or "gif"), its video codec, and why it is not an MP4 ("" when
        #: it is)
        self.format, self.codec, self.note = "mp4", codec_or_why, ""
        if av is None:
            self.format, self.codec = "gif", "gif"
            self.note = f"{codec_or_why}: an animated GIF instead of MP4"
            self._gif: list[np.ndarray] = []
        #: the video file (``path`` with the format's suffix)
        self.path = os.path.splitext(os.fspath(path))[0] + "." + self.format
        if av is not None:
            self._open_mp4(av, self.codec)

    # -- set-up -----------------------------------------------------------------------------

    def _visual_model(self, model: Any, xml: str) -> Any:
        """The model of ``xml`` (the plant's with its URDF visuals), or None if it does not
        load or does not match the plant's bodies, joints and inertias."""
        mujoco = self._mujoco
        try:
            vis = mujoco.MjModel.from_xml_string(xml)
        except Exception:  # any failure: render the plant's own geometry
            return None
        # the same bodies and joints, so the plant's qpos poses it (not the same masses: a
        # simulation may perturb the plant's, which a drawing does not show)
        same = (vis.nq == model.nq and vis.nv == model.nv and vis.nbody == model.nbody
                and vis.nmocap == model.nmocap
                and all(vis.body(b).name == model.body(b).name for b in range(model.nbody))
                and np.array_equal(vis.jnt_type, model.jnt_type))
        return vis if same else None

    def _scene_data(self) -> Any:
        """The data to draw: the plant's, or the render model's with the plant's positions."""
        rd = self._render_data
        if rd is None:
            return self._data
        mujoco, d = self._mujoco, self._data
        rd.qpos[:] = d.qpos
        if rd.mocap_pos.size:
            rd.mocap_pos[:] = d.mocap_pos
            rd.mocap_quat[:] = d.mocap_quat
        rd.time = d.time
        m = self._render_model
        mujoco.mj_kinematics(m, rd)
        mujoco.mj_comPos(m, rd)
        mujoco.mj_camlight(m, rd)
        return rd

    def _tracked_body(self, model: Any, body: str | int | None) -> int:
        mujoco = self._mujoco
        if body is None:
            if model.nbody < 2:
                return 0
            roots, counts = np.unique(model.body_rootid[1:], return_counts=True)
            return int(roots[np.argmax(counts)])
        if isinstance(body, str):
            bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
            if bid < 0:
                raise ValueError(f"video: no body named {body!r} in the model")
            return int(bid)
        if not 0 <= int(body) < model.nbody:
            raise ValueError(f"video: body id {body} out of range (nbody {model.nbody})")
        return int(body)

    def _ground_grid(self, model: Any, extent: float, distance: float) -> tuple | None:
        """(height [m], spacing [m], half-span [m]) of the lines on the first horizontal plane,
        or None without one."""
        mujoco = self._mujoco
        for g in range(model.ngeom):
            if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE and model.geom_bodyid[g] == 0:
                # a plane's normal is its frame's z axis: horizontal if that is the world's
                if abs(model.geom_quat[g][0]) > 0.9999:
                    return float(model.geom_pos[g][2]), _nice_spacing(extent), 2.0 * distance
        return None

    def _open_mp4(self, av: Any, codec: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._container = av.open(self.path, mode="w")
        rate = Fraction(self.fps).limit_denominator(1001)
        stream = self._container.add_stream(codec, rate=rate)
        stream.width, stream.height = self.size
        stream.pix_fmt = "yuv420p"  # what players and browsers decode
        if codec == "libx264":
            stream.options = {"crf": "23", "preset": "veryfast"}
        else:
            stream.bit_rate = 2_000_000
        self._stream = stream
        self._av = av

    # -- recording --------------------------------------------------------------------------

    def __call__(self, t: float, plant: Any = None) -> None:
        """The per-tick hook (``ClosedLoop.run(on_step=...)``): a frame when the simulated time
        ``t`` [s] has reached the next frame's time; otherwise returns at once. ``plant`` is
        not used: the recorder reads the data it was given."""
        if t >= self._next_t:
            self.capture()

    def capture(self) -> np.ndarray:
        """Render the current state now and append it; returns the frame (height x width x 3,
        uint8)."""
        if self._renderer is None:
            raise RuntimeError("video: recorder already closed")
        cam = self._camera
        if self._follow:
            cam.lookat[:2] = self._data.subtree_com[self._body][:2]
        r = self._renderer
        r.update_scene(self._scene_data(), camera=cam)
        self._add_grid(r.scene, cam.lookat)
        frame = r.render()
        if self.format == "mp4":
            vf = self._av.VideoFrame.from_ndarray(frame, format="rgb24")
            vf.pts = self.frames
            for packet in self._stream.encode(vf):
                self._container.mux(packet)
        else:
            self._gif.append(frame.copy())
        self.frames += 1
        # the next frame at the first tick at or after frames / fps (1 ns for rounding)
        self._next_t = self.frames / self.fps - 1e-9
        return frame

    def _add_grid(self, scene: Any, center: np.ndarray) -> None:
        """Thin slabs along x and y on the ground plane, at multiples of the grid spacing."""
        if self._grid is None:
            return
        mujoco = self._mujoco
        z, step, half = self._grid
        z += 6e-4  # just above the plane: a slab in it would flicker with it
        size = np.array([half, 0.01 * step, 5e-4])  # half-sizes [m]
        along_x = np.eye(3).ravel()
        along_y = np.array([0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # 90 deg about z
        lines = []
        for axis in (0, 1):
            lo = int(math.floor((center[axis] - half) / step))
            hi = int(math.ceil((center[axis] + half) / step))
            for i in range(lo, hi + 1):
                pos = np.array([center[0], center[1], z])
                pos[axis] = i * step  # a line across this axis, along the other one
                lines.append((pos, along_y if axis == 0 else along_x))
        for pos, mat in lines:
            if scene.ngeom >= scene.maxgeom:
                break
            mujoco.mjv_initGeom(scene.geoms[scene.ngeom], mujoco.mjtGeom.mjGEOM_BOX, size,
                                pos, mat, _GRID_RGBA)
            scene.ngeom += 1

    def close(self) -> str:
        """Finish the file and free the renderer; returns the video's path. Idempotent."""
        if self._renderer is None:
            return self.path
        self._renderer.close()
        self._renderer = None
        if self.format == "mp4":
            for packet in self._stream.encode():
                self._container.mux(packet)
            self._container.close()
        elif self._gif:
            from PIL import Image

            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            images = [Image.fromarray(f) for f in self._gif]
            images[0].save(self.path, save_all=True, append_images=images[1:],
                           duration=round(1000.0 / self.fps), loop=0)
            self._gif = []
        return self.path

    def __enter__(self) -> VideoRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
