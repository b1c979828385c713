#!/usr/bin/env bash
# Trains and quantizes the digits MLP (scripts/digits/train_mlp.py) in a
# Python virtual environment under build/, with the pinned packages.
# Usage: scripts/digits/train.sh [OUT_DIR]   (default tb/data/digits)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=build/digits-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/digits/requirements.txt
exec "$venv/bin/python" scripts/digits/train_mlp.py "$@"
