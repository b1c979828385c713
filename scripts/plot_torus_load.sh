#!/usr/bin/env bash
# Draws docs/torus_load.png from the torus benchmark's load sweep
# (build/bench/torus_load.csv: `cargo bench -p tb --bench torus -- load`),
# with matplotlib from PyPI in a virtual environment under build/plot.
# Usage: scripts/plot_torus_load.sh [CSV] [PNG] [LABEL, e.g. 4x2x2]
set -euo pipefail
cd "$(dirname "$0")/.."
csv=${1:-build/bench/torus_load.csv}
out=${2:-docs/torus_load.png}
label=${3:-}
if [ ! -f "$csv" ]; then
  echo "error: $csv not found: run cargo bench -p tb --bench torus -- load first" >&2
  exit 2
fi
venv=build/plot
if ! "$venv/bin/python" -c "import matplotlib" >/dev/null 2>&1; then
  echo "installing (pip, into $venv): matplotlib"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check matplotlib
fi
"$venv/bin/python" scripts/plot_torus_load.py "$csv" "$out" "$label"
