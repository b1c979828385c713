#!/usr/bin/env bash
# Draws docs/ici_goodput.png from the ICI link benchmark's BER sweep
# (build/bench/ici_ber_sweep.csv: `cargo bench -p tb --bench link -- sweep`),
# with matplotlib from PyPI in a virtual environment under build/plot.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=${1:-build/bench/ici_ber_sweep.csv}
out=${2:-docs/ici_goodput.png}
if [ ! -f "$csv" ]; then
  echo "error: $csv not found: run cargo bench -p tb --bench link -- sweep first" >&2
  exit 2
fi
venv=build/plot
if ! "$venv/bin/python" -c "import matplotlib" >/dev/null 2>&1; then
  echo "installing (pip, into $venv): matplotlib"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check matplotlib
fi
"$venv/bin/python" scripts/plot_ici_goodput.py "$csv" "$out"
