#!/usr/bin/env python3
"""Text <-> token ids for a character-level model folder (models/char-gpt,
written by scripts/train_gpt.py). Needs numpy only.

    gpt_text.py encode --model DIR --text "The " --out P.npy
    gpt_text.py decode --model DIR --tokens T.npy

The vocabulary is DIR/vocab.json: {"chars": [...], "fallback": id, ...},
where token id i is chars[i]. `encode` writes a 1-D int32 .npy of ids, one
per character of the text; a character outside the vocabulary becomes the
fallback id (the rule is stated in vocab.json's "fallback_rule"). `decode`
reads a .npy of integer ids (any shape; flattened in C order) and prints the
text, failing on an id outside the vocabulary.
"""

import argparse
import json
import pathlib
import sys

import numpy as np


def load_vocab(model):
    vocab = json.loads((pathlib.Path(model) / "vocab.json").read_text(encoding="utf-8"))
    return vocab["chars"], int(vocab["fallback"])


def encode(text, chars, fallback):
    index = {c: i for i, c in enumerate(chars)}
    return np.array([index.get(c, fallback) for c in text], dtype=np.int32)


def decode(ids, chars):
    ids = np.asarray(ids).reshape(-1)
    bad = [int(i) for i in ids if not 0 <= int(i) < len(chars)]
    if bad:
        raise ValueError(f"token ids outside the vocabulary (0 .. {len(chars) - 1}): {bad[:8]}")
    return "".join(chars[int(i)] for i in ids)


def main():
    ap = argparse.ArgumentParser(description="Text <-> token ids for a character-level model folder.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    enc = sub.add_parser("encode", help="text -> int32 token ids (.npy)")
    enc.add_argument("--model", required=True, help="model folder with vocab.json")
    enc.add_argument("--text", required=True)
    enc.add_argument("--out", required=True, help=".npy file to write")
    dec = sub.add_parser("decode", help="token ids (.npy) -> text on stdout")
    dec.add_argument("--model", required=True, help="model folder with vocab.json")
    dec.add_argument("--tokens", required=True, help=".npy file of integer token ids")
    args = ap.parse_args()

    chars, fallback = load_vocab(args.model)
    if args.cmd == "encode":
        ids = encode(args.text, chars, fallback)
        np.save(args.out, ids.astype("<i4"))
    else:
        ids = np.load(args.tokens)
        if not np.issubdtype(ids.dtype, np.integer):
            sys.exit(f"{args.tokens}: expected integer token ids, got {ids.dtype}")
        try:
            text = decode(ids, chars)
        except ValueError as e:
            sys.exit(f"{args.tokens}: {e}")
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
