#!/usr/bin/env python3
"""Trains a small MLP on scikit-learn's 8x8 digits, quantizes it to int8, and
writes it in the form `sim -- mlp --model DIR` reads, with the test images and
the logits of an independent numpy int8 reference.

The digits ship inside scikit-learn (no download). Everything is seeded, so a
rerun with the pinned package versions (scripts/digits/requirements.txt)
writes the same files. Run: scripts/digits/train.sh [OUT_DIR]
(default tb/data/digits).

Quantization (per layer; the integer semantics are those of the `mlp`
command and of docs/numerics.md#requantization):
- Inputs: the pixels themselves, 0..16, as int8 (scale 1/16 against the
  float model, which sees pixels / 16; zero point 0). No information is lost.
- Weights: symmetric int8, scale max|W| / 127 per layer.
- Biases: int32 at the accumulator's scale (input scale x weight scale), with
  the input zero point folded in: acc = h @ Wq + bq - zp * colsum(Wq), so
  the hardware computes acc = wrap32(h @ w + b) with no zero-point term.
- Hidden activations: int8 with zero point -128 (ReLU outputs are >= 0) and
  a scale from the largest activation over the training set; requantization
  multiplier and shift from the real ratio M = s_in * s_w / s_out, as in
  gemmlowp (M = m * 2^-shift, multiplier = round(m * 2^31), m in [0.5, 1)).
  ReLU is max(requant(acc), zp).
- The last layer's accumulators are the logits (int32).
"""

import argparse
import json
import math
import pathlib
import sys

import numpy as np
import sklearn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

HIDDEN = (32, 32)
SEED = 7
INT32_MIN = -(2**31)


def srdhm(a, b):
    """Saturating rounding doubling high multiply (docs/numerics.md#srdhm), on int64."""
    a = a.astype(np.int64)
    b = np.int64(b)
    ab = a * b
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    q = ab + nudge
    # Division by 2^31 truncating toward zero.
    res = np.where(q >= 0, q // (1 << 31), -((-q) // (1 << 31)))
    return np.where((a == INT32_MIN) & (b == INT32_MIN), np.int64(2**31 - 1), res)


def rdbpot(x, e):
    """Rounding divide by a power of two (docs/numerics.md#rdbpot), on int64."""
    x = x.astype(np.int64)
    mask = np.int64((1 << e) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> e) + (remainder > threshold).astype(np.int64)


def requant(acc, multiplier, shift, zp):
    out = zp + rdbpot(srdhm(acc, multiplier), shift)
    return np.clip(out, -128, 127).astype(np.int8)


def wrap32(x):
    return ((x.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def quantize_multiplier(real):
    """M = multiplier / 2^31 * 2^-shift with multiplier in [2^30, 2^31 - 1]."""
    if not 0.0 < real < 1.0:
        sys.exit(f"error: requantization ratio {real} is outside (0, 1)")
    m, e = math.frexp(real)  # real = m * 2^e, m in [0.5, 1)
    multiplier = round(m * (1 << 31))
    if multiplier == 1 << 31:
        multiplier //= 2
        e += 1
    shift = -e
    if not 0 <= shift <= 31:
        sys.exit(f"error: requantization shift {shift} is outside 0..31")
    return multiplier, shift


def int8_forward(x_q, layers):
    """The int8 network as the hardware computes it, in numpy integers."""
    h = x_q.astype(np.int64)
    for i, layer in enumerate(layers):
        acc = wrap32(h @ layer["w"].astype(np.int64) + layer["b"].astype(np.int64))
        if i == len(layers) - 1:
            return acc
        multiplier, shift, zp = (int(v) for v in layer["rq"])
        h = np.maximum(requant(acc, multiplier, shift, zp), np.int8(zp)).astype(np.int64)
    raise AssertionError("no layers")


def check_requant_against_vectors():
    """The numpy requantization must match the independent oracle's vectors,
    or the reference logits would prove nothing."""
    path = pathlib.Path(__file__).resolve().parents[2] / "tb/data/vectors/requant_int8.tsv"
    rows = np.loadtxt(path, dtype=np.int64, comments="#", delimiter="\t")
    for acc, multiplier, shift, zp, want in rows:
        got = int(requant(np.array([acc]), multiplier, int(shift), zp)[0])
        if got != want:
            sys.exit(f"error: numpy requant({acc}, {multiplier}, {shift}, {zp}) = {got}, vectors say {want}")
    return len(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="tb/data/digits")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    checked = check_requant_against_vectors()

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data, digits.target, test_size=0.25, random_state=SEED, stratify=digits.target
    )
    model = MLPClassifier(
        hidden_layer_sizes=HIDDEN,
        activation="relu",
        max_iter=2000,
        random_state=SEED,
        alpha=1e-3,
    )
    model.fit(x_train / 16.0, y_train)
    float_accuracy = float((model.predict(x_test / 16.0) == y_test).mean())

    # Calibration: the float activations of the training set, layer by layer.
    acts = [x_train / 16.0]
    for i, (w, b) in enumerate(zip(model.coefs_, model.intercepts_)):
        z = acts[-1] @ w + b
        acts.append(np.maximum(z, 0.0) if i < len(model.coefs_) - 1 else z)

    layers = []
    s_in, zp_in = 1.0 / 16.0, 0
    for i, (w, b) in enumerate(zip(model.coefs_, model.intercepts_)):
        s_w = float(np.abs(w).max()) / 127.0
        w_q = np.clip(np.round(w / s_w), -127, 127).astype(np.int8)
        b_q = np.round(b / (s_in * s_w)).astype(np.int64)
        b_q = b_q - zp_in * w_q.astype(np.int64).sum(axis=0)
        layer = {"w": w_q, "b": b_q.astype(np.int32)}
        if i < len(model.coefs_) - 1:
            s_out = float(acts[i + 1].max()) / 255.0
            zp_out = -128
            multiplier, shift = quantize_multiplier(s_in * s_w / s_out)
            layer["rq"] = np.array([multiplier, shift, zp_out], dtype=np.int32)
            s_in, zp_in = s_out, zp_out
        layers.append(layer)

    x_q = x_test.astype(np.int8)
    logits = int8_forward(x_q, layers)
    int8_accuracy = float((logits.argmax(axis=1) == y_test).mean())

    out.mkdir(parents=True, exist_ok=True)
    for i, layer in enumerate(layers, start=1):
        np.save(out / f"w{i}.npy", layer["w"])
        np.save(out / f"b{i}.npy", layer["b"])
        if "rq" in layer:
            np.save(out / f"rq{i}.npy", layer["rq"])
    np.save(out / "x_test.npy", x_q)
    np.save(out / "y_test.npy", y_test.astype(np.int32))
    np.save(out / "logits_numpy.npy", logits)
    metrics = {
        "dataset": "scikit-learn load_digits (8x8, 1797 images), 25% test split, stratified",
        "layers": [64, *HIDDEN, 10],
        "test_images": int(len(y_test)),
        "float_accuracy": float_accuracy,
        "int8_accuracy": int8_accuracy,
        "seed": SEED,
        "scikit_learn": sklearn.__version__,
        "numpy": np.__version__,
        "requant_vectors_checked": checked,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
