# Sourced by scripts/test.sh and scripts/demo.sh: creates ./.venv with everything the package,
# its simulation and its tests need (from the package index only), compiles the kernels of the
# shipped configurations and the demo, and confines DDS traffic to this machine. Re-running is
# cheap: installation is skipped while the requirement files are unchanged, compiling while the
# kernel sources, numba and the CPU are (WBC_PRECOMPILE=0 skips it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WBC_VENV:-$ROOT/.venv}"
PYTHON_BIN="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtual environment in $VENV"
  "$PYTHON_BIN" -m venv "$VENV"
fi
STAMP="$VENV/.wbc_requirements.sha"
WANT="$(cat "$ROOT"/requirements*.txt | sha1sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "[setup] installing requirements (numpy, numba, osqp, ROS 2 wheels, mujoco, pinocchio, ...)"
  # (the filter drops pip's notes about local package mirrors that do not exist on this machine;
  # pipefail keeps pip's exit status)
  { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip 2>&1; } \
    | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r "$ROOT/requirements-dev.txt" 2>&1; } \
    | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
if [ "${WBC_PRECOMPILE:-1}" != "0" ]; then
  # once per kernel source version (wbc_dynamics/_kernel_cache; ~3 min on 2 cores, 2-3 s to
  # check): the first demo or node start then loads its kernels instead of compiling them
  # (a failure here only means the first start compiles)
  { (cd "$ROOT" && "$VENV/bin/python" -m wbc_dynamics.info --precompile-shipped --if-needed 2>&1) \
      | sed 's/^/[setup] /'; } || echo "[setup] precompiling failed; the first start compiles"
fi
# DDS stays on this machine: localhost discovery, shared memory + UDPv4 on 127.0.0.1 only, and a
# domain of our own so leftover processes cannot answer for this run.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export FASTDDS_DEFAULT_PROFILES_FILE="$ROOT/config/fastdds_localhost.xml"
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( ($$ % 100) + 101 ))}"
cd "$ROOT"
