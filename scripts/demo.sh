#!/usr/bin/env bash
# The main job: installs what it needs into ./.venv and runs the closed-loop quadruped demo.
source "$(dirname "$0")/setup_env.sh"
python -m wbc_dynamics.sim.demo "$@"
