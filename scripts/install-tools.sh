#!/usr/bin/env bash
# Installs the external tools Systole's tests run the generated Verilog
# through (Verilator, Icarus Verilog, Yosys), if they are missing.
# Debian/Ubuntu: uses apt-get (as root, or through sudo).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

install_missing verilator:verilator iverilog:iverilog yosys:yosys g++:g++ make:make
