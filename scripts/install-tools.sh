#!/usr/bin/env bash
# Installs the external tools Systole's tests run the generated Verilog
# through (Verilator, Icarus Verilog, Yosys), if they are missing.
# Debian/Ubuntu: uses apt-get (as root, or through sudo).
set -euo pipefail

missing=()
command -v verilator >/dev/null 2>&1 || missing+=(verilator)
command -v iverilog >/dev/null 2>&1 || missing+=(iverilog)
command -v yosys >/dev/null 2>&1 || missing+=(yosys)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "error: need root or sudo to install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
