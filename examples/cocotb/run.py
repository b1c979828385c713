#!/usr/bin/env python3
"""Generates an MXU with gen and runs the cocotb testbench test_mxu.py on it
under Icarus Verilog, through cocotb's Python runner (cocotb_tools.runner).

    build/cocotb/bin/python examples/cocotb/run.py [--out DIR] [--rows R] [--cols C] [--acc-rows N]

Writes the Verilog to DIR/verilog (`cargo run -p gen -- --dtype int8 ...`)
and the simulation to DIR/sim_build (DIR: build/cocotb-example). Prints the
seed; SYSTOLE_SEED=N replays a run. Exits 0 only if every test passed.
"""

import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

from cocotb_tools.runner import get_results, get_runner

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def generate(out, rows, cols, acc_rows):
    """Runs gen; returns the top module's name and the Verilog sources."""
    cargo = os.environ.get("CARGO", "cargo")
    cmd = [cargo, "run", "--quiet", "--manifest-path", str(ROOT / "Cargo.toml"), "-p", "gen", "--",
           "--dtype", "int8", "--rows", str(rows), "--cols", str(cols),
           "--acc-rows", str(acc_rows), "--out", str(out)]
    print("generating:", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        sys.exit(f"error: gen failed (exit {done.returncode})")
    tops = [line.split(":", 1)[1].strip() for line in done.stdout.splitlines()
            if line.startswith("top module:")]
    if len(tops) != 1:
        sys.exit("error: gen did not name its top module")
    sources = [out / name for name in (out / "files.f").read_text().split()]
    return tops[0], sources


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "cocotb-example",
                        help="output folder (default: build/cocotb-example)")
    parser.add_argument("--rows", type=int, default=4, help="array rows R (default 4)")
    parser.add_argument("--cols", type=int, default=4, help="array columns C (default 4)")
    parser.add_argument("--acc-rows", type=int, default=16,
                        help="accumulator rows, a power of two (default 16)")
    args = parser.parse_args()
    out = args.out.resolve()

    seed_text = os.environ.get("SYSTOLE_SEED")
    seed = int(seed_text, 0) if seed_text else random.SystemRandom().getrandbits(32)
    print(f"seed {seed} (SYSTOLE_SEED={seed} replays it)", flush=True)

    top, sources = generate(out / "verilog", args.rows, args.cols, args.acc_rows)
    runner = get_runner("icarus")
    build_dir = out / "sim_build"
    runner.build(sources=sources, hdl_toplevel=top, build_dir=build_dir, always=True,
                 timescale=("1ns", "1ps"))
    results = runner.test(test_module="test_mxu", hdl_toplevel=top, build_dir=build_dir,
                          test_dir=build_dir, seed=seed, extra_env={"SYSTOLE_SEED": str(seed)})
    tests, failed = get_results(results)
    print(f"cocotb {top}: {tests - failed} passed, {failed} failed (seed {seed})")
    if tests == 0 or failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
