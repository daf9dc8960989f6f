#!/usr/bin/env bash
# The whole test suite: installs what it needs into ./.venv, lints, and runs every test.
source "$(dirname "$0")/setup_env.sh"
echo "[test] ruff"
python -m ruff check .
echo "[test] pytest (ROS_DOMAIN_ID=$ROS_DOMAIN_ID)"
python -m pytest test -q -p no:cacheprovider "$@"
