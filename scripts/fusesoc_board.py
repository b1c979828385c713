#!/usr/bin/env python3
"""FuseSoC generator of Systole board builds (`board_build` in systole.core).

FuseSoC runs it in an empty working folder with one argument, the generator
input (YAML: files_root, the repository; vlnv, the name the generated core
must have; parameters). It writes the board build there with
`cargo run -p gen -- --board BOARD [SYSTOLE_GEN_ARGS] --out .` and hands
FuseSoC the build's own core under the name FuseSoC asked for.

Parameters: `board` (icebreaker, ulx3s, tangnano20k or tangnano9k). Extra
gen flags come from the environment variable SYSTOLE_GEN_ARGS (split as a
shell would), e.g. "--rows 3 --cols 3" or "--preset int8-2x3"; without it
the board's default array is built.

Only the standard library is used: FuseSoC runs this with the `python3` on
PATH, which need not be the one FuseSoC runs in (and need not have PyYAML),
so the input is read with the small reader below, which takes the flat
mappings FuseSoC writes.
"""

import json
import os
import re
import shlex
import subprocess
import sys


def scalar(text, where):
    """A YAML scalar as FuseSoC writes one: plain, 'single' or "double" quoted."""
    text = text.strip()
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise ValueError(f"{where}: unterminated quoted value")
        return text[1:-1].replace("''", "'")
    if text.startswith('"'):
        return json.loads(text)
    return text


def read_input(path):
    """The generator input: top-level keys, one level of nested mappings."""
    data, section = {}, None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            where = f"{path}:{number}"
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.match(r"^( *)([A-Za-z0-9_.-]+):(?: (.*))?$", line.rstrip("\n"))
            if not m:
                raise ValueError(f"{where}: cannot read '{line.rstrip()}'")
            indent, key, value = m.groups()
            if not indent:
                if value is None or value.strip() in ("", "{}"):
                    section = data[key] = {}
                else:
                    section = None
                    data[key] = scalar(value, where)
            elif section is not None and value is not None:
                section[key] = scalar(value, where)
            else:
                raise ValueError(f"{where}: nesting deeper than one level")
    return data


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fusesoc_board.py GENERATOR_INPUT.yml (FuseSoC runs it)")
    try:
        cfg = read_input(sys.argv[1])
        root = cfg["files_root"]
        vlnv = cfg["vlnv"]
        board = cfg.get("parameters", {})["board"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"error: generator input {sys.argv[1]}: {e}")
    out = os.getcwd()
    cargo = os.environ.get("CARGO", "cargo")
    extra = shlex.split(os.environ.get("SYSTOLE_GEN_ARGS", ""))
    cmd = [cargo, "run", "--quiet", "--manifest-path", os.path.join(root, "Cargo.toml"),
           "-p", "gen", "--", "--board", board, *extra, "--out", out]
    print("systole board build:", " ".join(shlex.quote(a) for a in cmd), flush=True)
    try:
        status = subprocess.run(cmd, check=False).returncode
    except OSError as e:
        sys.exit(f"error: cannot run {cargo} (Rust's cargo builds gen): {e}")
    if status != 0:
        sys.exit(f"error: gen failed (exit {status}); check SYSTOLE_GEN_ARGS "
                 f"'{os.environ.get('SYSTOLE_GEN_ARGS', '')}'")

    # The build's core, under the name FuseSoC gave this generator instance.
    core = os.path.join(out, f"systole_{board}.core")
    with open(core, encoding="utf-8") as f:
        text = f.read()
    text, renamed = re.subn(r"^name: .*$", f"name: {vlnv}", text, count=1, flags=re.M)
    if renamed != 1:
        sys.exit(f"error: {core} has no name line")
    with open(core, "w", encoding="utf-8") as f:
        f.write(text)
    # FuseSoC's build folder may lie under a cores root (it does for
    # `--cores-root .`); this keeps later runs from finding this core there.
    with open(os.path.join(out, "FUSESOC_IGNORE"), "w", encoding="utf-8"):
        pass


if __name__ == "__main__":
    main()
