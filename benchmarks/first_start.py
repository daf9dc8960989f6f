#!/usr/bin/env python3
"""First start of the shipped configurations and the demo: cold, after installation, warm.

For each configuration, the controller node (``python -m wbc_dynamics.node --params-file
CONFIG``) is started in a fresh process and timed from the process start to its ``active``
log line; the demo (``python -m wbc_dynamics.sim.demo --short``) to its ``ready`` line. Three
situations:

* **cold**: the source tree with an empty numba cache (``NUMBA_CACHE_DIR`` in a temporary
  directory, one per configuration): everything is compiled at the start;
* **after install**: ``pip install`` of a copy of the tracked files into a temporary prefix
  (timed: its build step compiles the shipped configurations, ``wbc_info
  --precompile-shipped``), then the first start of each from the installed package, with
  numba's default cache settings;
* **warm**: the same started again.

    python benchmarks/first_start.py                       # quadruped, go2, demo
    python benchmarks/first_start.py --configs config/humanoid.yaml --no-cold
    python benchmarks/first_start.py --prefix /tmp/prefix  # reuse an installed prefix
    python benchmarks/first_start.py --write               # also into docs/install.md

``--write`` puts the table, the machine's load average at the start, the install time, a met /
missed line for the target (the first start after installation <= 5 s for each configuration)
and the command that reran it between the markers of docs/install.md.

DDS stays on this machine (localhost discovery, the shipped Fast DDS profile, a private domain).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ACTIVE = "active: publishing effort commands"
DEMO_READY = "wbc_demo: ready in"


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1",
               RCUTILS_LOGGING_BUFFERED_STREAM="0",
               FASTDDS_DEFAULT_PROFILES_FILE=str(REPO / "config" / "fastdds_localhost.xml"),
               ROS_DOMAIN_ID=str(1 + os.getpid() % 200))
    env.pop("ROS_LOCALHOST_ONLY", None)
    return env


def time_to_line(cmd: list[str], env: dict[str, str], line: str, cwd: str,
                 timeout: float = 900.0) -> float | None:
    """Seconds from starting ``cmd`` to its first output line containing ``line`` (None if it
    exits or times out first); the process is then interrupted (SIGINT, then killed)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    found = None
    try:
        for out in proc.stdout:
            if line in out:
                found = time.monotonic() - t0
                break
            if time.monotonic() - t0 > timeout:
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return found


def start_times(configs: list[Path], env: dict[str, str], cwd: str,
                cold_dir: Path | None = None) -> dict[str, float | None]:
    """Seconds to ``active`` per configuration and to ``ready`` for the demo; with
    ``cold_dir``, each in an empty numba cache of its own below it."""
    times: dict[str, float | None] = {}
    for i, config in enumerate([*configs, None]):
        run_env = dict(env)
        if cold_dir is not None:
            run_env["NUMBA_CACHE_DIR"] = str(cold_dir / f"cache{i}")
        if config is None:
            name = "demo"
            cmd = [sys.executable, "-m", "wbc_dynamics.sim.demo", "--short", "--quiet",
                   "--no-video", "--plot", ""]
            line = DEMO_READY
        else:
            name = f"{config.parent.name}/{config.name}"
            cmd = [sys.executable, "-m", "wbc_dynamics.node", "--ros-args", "-r",
                   f"__ns:=/first_start{os.getpid()}", "--params-file", str(config)]
            line = ACTIVE
        times[name] = time_to_line(cmd, run_env, line, cwd)
        print(f"  {name:28s} {_fmt(times[name])}", flush=True)
    return times


def install(prefix: Path, work: Path, env: dict[str, str]) -> float:
    """``pip install`` of the tracked files (copied) into ``prefix``; returns its seconds."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files"], check=True,
                           capture_output=True, text=True).stdout.split()
    src = work / "src"
    for rel in files:
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--prefix",
                    str(prefix), str(src)], env=env, check=True)
    return time.monotonic() - t0


#: the first start after installation must take at most this long [s]
FIRST_START_TARGET_S = 5.0
REPORT_MARKERS = ("<!-- first_start report: written by first_start.py --write -->",
                  "<!-- end of the first_start report -->")


def report(results: dict[str, dict[str, float | None]], install_s: float | None,
           load: float, argv: list[str] | None) -> str:
    """The markdown report of ``main``'s ``results`` (mode -> configuration -> seconds from
    process start to ``active`` / ``ready``, None where it never got there), the install time
    [s] (None for a reused prefix) and the 1-minute load average at the start: the table, the
    target's verdict per configuration and the rerun command."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from docs_pages import cell, rerun_command, row, table_head

    modes = list(results)
    lines = table_head(["", *modes])
    for name in results[modes[-1]]:
        lines.append(row([f"`{name}`", *(cell(results[m].get(name), ".1f") for m in modes)]))
    lines.append("")
    installed = ("" if install_s is None
                 else f" `pip install` of the package took {install_s:.0f} s.")
    lines.append(f"Seconds from process start to `active` (the demo: `ready`); load average "
                 f"{load:.1f} at the start on this 2-core machine.{installed}")
    lines.append("")
    after = results.get("after install", {})
    slow = {n: t for n, t in after.items() if t is None or t > FIRST_START_TARGET_S}
    if not after:
        verdict = "not measured"
    elif not slow:
        verdict = f"met by all {len(after)}"
    else:
        verdict = "**missed** by " + ", ".join(
            f"`{n}` ({'never started' if t is None else f'+{t - FIRST_START_TARGET_S:.1f} s'})"
            for n, t in slow.items())
    lines.append(f"* First start after installation <= {FIRST_START_TARGET_S:g} s: {verdict}.")
    lines += ["", f"Rerun: `{rerun_command('first_start.py', argv)}`"]
    return "\n".join(lines)


def _fmt(t: float | None) -> str:
    return "   --" if t is None else f"{t:6.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="*",
                    default=["config/quadruped.yaml", "config/robots/go2.yaml"],
                    help="node parameter files / robot configurations (relative to the repo)")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold starts")
    ap.add_argument("--prefix", default="", help="an installed prefix to reuse (no install)")
    ap.add_argument("--write", action="store_true",
                    help="also write the report into docs/install.md (between its markers)")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    install_s = None
    env = _base_env()
    work = Path(tempfile.mkdtemp(prefix="wbc_first_start_"))
    env["XDG_CACHE_HOME"] = str(work / "xdg")  # numba's user-wide cache: not the user's own
    try:
        results: dict[str, dict[str, float | None]] = {}
        if not args.no_cold:
            print("cold (source tree, empty numba cache):", flush=True)
            results["cold"] = start_times([REPO / c for c in args.configs],
                                          dict(env, PYTHONPATH=str(REPO)), str(work),
                                          cold_dir=work / "cold")
        prefix = Path(args.prefix) if args.prefix else work / "prefix"
        if not args.prefix:
            print("installing (pip install --prefix, build step included) ...", flush=True)
            install_s = install(prefix, work, env)
            print(f"  install: {install_s:.1f} s", flush=True)
        site = next(prefix.glob("lib/python3*/site-packages"))
        installed = [prefix / "share" / "wbc_dynamics" / c for c in args.configs]
        run_env = dict(env, PYTHONPATH=str(site))
        for mode in ("after install", "warm"):
            print(f"{mode} (installed package):", flush=True)
            results[mode] = start_times(installed, run_env, str(work))
        modes = list(results)
        print("\nstart to active / ready [s]")
        print(f"{'':28s}" + "".join(f"{m:>15s}" for m in modes))
        for name in results[modes[-1]]:
            print(f"{name:28s}" + "".join(f"{_fmt(results[m].get(name)):>15s}" for m in modes))
        text = report(results, install_s, load, argv)
        print("\n" + text)
        if args.write:
            sys.path.insert(0, str(REPO / "benchmarks"))
            from docs_pages import write_between_markers

            write_between_markers(str(REPO / "docs" / "install.md"), REPORT_MARKERS, text)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
