#!/usr/bin/env python3
"""An independent numpy implementation of the transformer of the numerics
contract (docs/numerics.md#transformer-step), bit for bit.

It is written from docs/numerics.md alone, so that it and the Rust golden
model (golden::gpt) can be held to each other. Values are bit patterns
throughout (fp32 as uint32, bf16 as uint16); numpy's float32 arithmetic
computes, and the contract's rules are applied around it:

- FTZ-RNE (docs/numerics.md#ftz-rne): operands are flushed first (rule 1).
  A float32 sum of two normal numbers or zeros is exact whenever it is
  below 2^-126 (both are multiples of 2^-149), so IEEE's result is the
  contract's once a subnormal result is flushed to the zero of its sign
  (rule 3). Products and quotients do need rounding at 24 bits "as if the
  exponent range had no bound" (rule 2), which IEEE's gradual underflow
  does not do: they are computed on the significands alone (frexp gives
  m in [0.5, 1), so m_a * m_b and m_a / m_b are normal float32 numbers and
  numpy rounds them once, to nearest even at 24 bits), and the exponent is
  put back by hand: below 2^-126 a zero (rule 3), above the largest finite
  value an infinity (rule 4). A result that rounds up to 2^-126 therefore
  stays 2^-126. NaN results are the canonical 7fc00000 (rule 5).
- Square root: numpy's float32 sqrt is correctly rounded and the root of a
  normal number is normal; the contract's special cases are added.
- exp2 and exp: the contract's exact step sequence (docs/numerics.md#exp2).
- bf16 (docs/numerics.md#conversions): widening appends 16 zero bits,
  narrowing rounds to nearest even with integer operations on the bits.
- The bf16 matmul (docs/numerics.md#bf16-matmul) runs in the tile order
  for the array's R; every fp32 sum (docs/numerics.md#reductions) in the
  VPU's order for W = lanes x sublanes.

Usage:

    python scripts/gpt_reference.py --model DIR --prompt P.npy --steps N \\
        --out T.npy [--logits L.npy] --rows R --w W
    python scripts/gpt_reference.py --check-vectors tb/data/vectors
    python scripts/gpt_reference.py --function NAME DIR --rows R --w W

The first runs the model folder DIR (the format `compiler::gpt::load_gpt`
reads) on the prompt P (integer token ids, 1-D), feeds back each chosen
token, and writes the N generated tokens (int32 [N]) and the logits each
was chosen from (float32 [N, vocab], bit patterns). The second checks this
file's arithmetic against the reference vectors and exits non-zero on any
mismatch. The third runs one piece of the step (layernorm, softmax or
matmul) on the inputs in DIR (see run_function): the logits hide most
rounding differences of those pieces behind the bf16 roundings that
follow them, so tests hold each piece to another implementation alone.
Errors are one line and a non-zero exit.
"""

import argparse
import os
import pathlib
import sys
import tempfile
import tomllib

import numpy as np

U32 = np.uint32
U16 = np.uint16
F32 = np.float32

SIGN = U32(0x8000_0000)
ABS = U32(0x7FFF_FFFF)
EXP_FIELD = U32(0x7F80_0000)
FRAC_FIELD = U32(0x007F_FFFF)
INF = U32(0x7F80_0000)
CANONICAL_NAN = U32(0x7FC0_0000)
CANONICAL_NAN_BF16 = U16(0x7FC0)
ONE = U32(0x3F80_0000)
LOG2_E = U32(0x3FB8_AA3B)
# exp2's Horner coefficients C0 .. C6 (docs/numerics.md#exp2).
EXP2_C = [U32(c) for c in (0x3F800000, 0x3F317217, 0x3E75FE6A, 0x3D6349E2,
                           0x3C1E563B, 0x3AA4E577, 0x395E4D21)]


class UsageError(Exception):
    """Bad input from the user: reported as one line."""


def bits(x):
    return np.asarray(x, dtype=U32)


def as_float(b):
    return np.ascontiguousarray(b, dtype=U32).view(F32)


def as_bits(f):
    return np.ascontiguousarray(f, dtype=F32).view(U32)


# ---------------------------------------------------------------------------
# Classification and rule 1
# ---------------------------------------------------------------------------

def is_nan(b):
    return ((b & EXP_FIELD) == EXP_FIELD) & ((b & FRAC_FIELD) != 0)


def is_inf(b):
    return (b & ABS) == INF


def is_zero(b):
    """Zero after rule 1 (a subnormal is a zero)."""
    return (b & EXP_FIELD) == 0


def flush(b):
    """Rule 1 on operands, and rule 3 on a result that IEEE left subnormal:
    an exponent field of 0 leaves the zero of the same sign."""
    b = bits(b)
    return np.where((b & EXP_FIELD) == 0, b & SIGN, b).astype(U32)


# ---------------------------------------------------------------------------
# FTZ-RNE arithmetic
# ---------------------------------------------------------------------------

def add32(a, b):
    """a + b (docs/numerics.md#ftz-rne)."""
    a, b = np.broadcast_arrays(flush(a), flush(b))
    with np.errstate(all="ignore"):
        s = as_bits(as_float(a) + as_float(b))
    nan = is_nan(a) | is_nan(b) | is_nan(s)
    return np.where(nan, CANONICAL_NAN, flush(s)).astype(U32)


def sub32(a, b):
    """a - b (docs/numerics.md#ftz-rne)."""
    a, b = np.broadcast_arrays(flush(a), flush(b))
    with np.errstate(all="ignore"):
        s = as_bits(as_float(a) - as_float(b))
    nan = is_nan(a) | is_nan(b) | is_nan(s)
    return np.where(nan, CANONICAL_NAN, flush(s)).astype(U32)


def _scaled(sign, m, e):
    """The magnitude m * 2^e (m a positive normal float32, e an integer
    array) with an unbounded exponent range, then rules 3 and 4, signed."""
    mq, eq = np.frexp(m)
    exp = eq.astype(np.int64) + e
    # mq in [0.5, 1): the value is at least 2^-126 iff exp >= -125 and at
    # most the largest finite value iff exp <= 128.
    tiny = exp < -125
    huge = exp > 128
    with np.errstate(all="ignore"):
        mag = as_bits(np.ldexp(mq, np.clip(exp, -125, 128).astype(np.int32)))
    mag = np.where(tiny, U32(0), np.where(huge, INF, mag))
    return (mag | sign).astype(U32)


def mul32(a, b):
    """a x b (docs/numerics.md#ftz-rne)."""
    a, b = np.broadcast_arrays(flush(a), flush(b))
    sign = (a ^ b) & SIGN
    nan = is_nan(a) | is_nan(b) | (is_zero(a) & is_inf(b)) | (is_inf(a) & is_zero(b))
    inf = (is_inf(a) | is_inf(b)) & ~nan
    zero = (is_zero(a) | is_zero(b)) & ~nan
    ma, ea = np.frexp(np.abs(as_float(a)))
    mb, eb = np.frexp(np.abs(as_float(b)))
    finite = ~(nan | inf | zero)
    # Significands of zeros and infinities are replaced by 1/2 so that the
    # unused lanes compute something harmless.
    ma = np.where(finite, ma, F32(0.5))
    mb = np.where(finite, mb, F32(0.5))
    with np.errstate(all="ignore"):
        product = _scaled(sign, (ma * mb).astype(F32), ea.astype(np.int64) + eb)
    out = np.where(zero, sign, np.where(inf, sign | INF, product))
    return np.where(nan, CANONICAL_NAN, out).astype(U32)


def div32(a, b):
    """a / b (docs/numerics.md#div32)."""
    a, b = np.broadcast_arrays(flush(a), flush(b))
    sign = (a ^ b) & SIGN
    nan = (is_nan(a) | is_nan(b) | (is_zero(a) & is_zero(b))
           | (is_inf(a) & is_inf(b)))
    a_finite = ~is_nan(a) & ~is_inf(a) & ~is_zero(a)
    b_finite = ~is_nan(b) & ~is_inf(b) & ~is_zero(b)
    inf = ((a_finite & is_zero(b)) | (is_inf(a) & ~is_inf(b))) & ~nan
    zero = ((~is_inf(a) & is_inf(b)) | (is_zero(a) & b_finite)) & ~nan
    finite = a_finite & b_finite
    ma, ea = np.frexp(np.abs(as_float(a)))
    mb, eb = np.frexp(np.abs(as_float(b)))
    ma = np.where(finite, ma, F32(0.5))
    mb = np.where(finite, mb, F32(0.5))
    with np.errstate(all="ignore"):
        quotient = _scaled(sign, (ma / mb).astype(F32), ea.astype(np.int64) - eb)
    out = np.where(zero, sign, np.where(inf, sign | INF, quotient))
    return np.where(nan, CANONICAL_NAN, out).astype(U32)


def sqrt32(a):
    """The square root (docs/numerics.md#sqrt32)."""
    a = flush(a)
    negative = ((a & SIGN) != 0) & ~is_zero(a)
    nan = is_nan(a) | negative
    with np.errstate(all="ignore"):
        root = as_bits(np.sqrt(as_float(np.where(nan, ONE, a))))
    # sqrt(+-0) = +-0 and sqrt(+inf) = +inf come out of IEEE's sqrt as is.
    return np.where(nan, CANONICAL_NAN, root).astype(U32)


def recip32(x):
    return div32(ONE, x)


def rsqrt32(x):
    """div32(1.0, sqrt32(x)): two roundings (docs/numerics.md#recip-and-rsqrt)."""
    return div32(ONE, sqrt32(x))


def _order(b):
    """Rule 7's total order of non-NaN patterns after rule 1: -0 below +0."""
    b = flush(b)
    mag = (b & ABS).astype(np.int64)
    return np.where((b & SIGN) != 0, -mag - 1, mag)


def max32(a, b):
    """The maximum by rule 7."""
    a, b = np.broadcast_arrays(flush(a), flush(b))
    out = np.where(_order(a) >= _order(b), a, b)
    return np.where(is_nan(a) | is_nan(b), CANONICAL_NAN, out).astype(U32)


def min32(a, b):
    """The minimum by rule 7."""
    a, b = np.broadcast_arrays(flush(a), flush(b))
    out = np.where(_order(a) <= _order(b), a, b)
    return np.where(is_nan(a) | is_nan(b), CANONICAL_NAN, out).astype(U32)


def relu32(x):
    return max32(x, U32(0))


def i32_to_f32(x):
    """int32 -> fp32, rounded to nearest even (docs/numerics.md#conversions)."""
    return as_bits(np.asarray(x, dtype=np.int32).astype(F32))


def exp2_32(t):
    """2^t in the contract's exact sequence (docs/numerics.md#exp2)."""
    t = flush(t)
    ft = as_float(t)
    nan = is_nan(t)
    with np.errstate(all="ignore"):
        big = ~nan & (ft >= F32(128))
        small = ~nan & (ft < F32(-126))
    normal = ~(nan | big | small)
    with np.errstate(all="ignore"):
        i = np.where(normal, np.floor(np.where(normal, ft, F32(0))), F32(0)).astype(np.int32)
    f = sub32(t, i32_to_f32(i))
    p = EXP2_C[6]
    for c in reversed(EXP2_C[:6]):
        p = add32(mul32(p, f), c)
    scale = ((i.astype(np.int64) + 127) << 23).astype(U32)
    out = mul32(p, scale)
    out = np.where(small, U32(0), np.where(big, INF, out))
    return np.where(nan, CANONICAL_NAN, out).astype(U32)


def exp32(x):
    """exp(x) = exp2(mul32(x, log2 e)) (docs/numerics.md#exp)."""
    return exp2_32(mul32(x, LOG2_E))


# ---------------------------------------------------------------------------
# bf16
# ---------------------------------------------------------------------------

def widen(h):
    """bf16 -> fp32 (docs/numerics.md#conversions)."""
    w = np.asarray(h, dtype=U16).astype(U32) << U32(16)
    w = flush(w)
    return np.where(is_nan(w), CANONICAL_NAN, w).astype(U32)


def narrow(x):
    """fp32 -> bf16: RNE at 8 bits on the bits (docs/numerics.md#conversions)."""
    x = flush(x)
    # Adding 0x7fff plus the kept part's lowest bit rounds to nearest even;
    # a carry out of the fraction bumps the exponent, up to the infinity.
    rounded = (x + U32(0x7FFF) + ((x >> U32(16)) & U32(1))) >> U32(16)
    special = (x & EXP_FIELD) == EXP_FIELD
    out = np.where(special, x >> U32(16), rounded)
    out = np.where(is_zero(x), (x & SIGN) >> U32(16), out)
    return np.where(is_nan(x), CANONICAL_NAN_BF16, out.astype(U16)).astype(U16)


def bf16_mul(a, b):
    return mul32(widen(a), widen(b))


# ---------------------------------------------------------------------------
# The MXU's bf16 matmul and the VPU's fp32 sum
# ---------------------------------------------------------------------------

def mac_chain(a_cols, b_cols):
    """+0.0, then add32 of each product bf16_mul(a_k, b_k) in order; the
    arguments are sequences of broadcastable bf16 arrays."""
    s = None
    for a_k, b_k in zip(a_cols, b_cols):
        p = bf16_mul(a_k, b_k)
        s = add32(np.zeros(p.shape, U32) if s is None else s, p)
    return s


def matmul(a, b, rows):
    """C = A x B for bf16 A [M, K] and B [K, N] on an array of `rows` rows
    (docs/numerics.md#bf16-matmul): K in tiles of exactly `rows`, the last
    one padded with +0.0 in A and B; each tile a chain from +0.0 in
    ascending k; the tile sums added in ascending order."""
    a = np.asarray(a, dtype=U16)
    b = np.asarray(b, dtype=U16)
    m, k = a.shape
    k2, n = b.shape
    assert k == k2 and k >= 1 and rows >= 1
    tiles = -(-k // rows)
    a = np.concatenate([a, np.zeros((m, tiles * rows - k), U16)], axis=1)
    b = np.concatenate([b, np.zeros((tiles * rows - k, n), U16)], axis=0)
    c = None
    for t in range(tiles):
        ks = range(t * rows, (t + 1) * rows)
        s = mac_chain([a[:, kk, None] for kk in ks], [b[None, kk, :] for kk in ks])
        c = s if c is None else add32(c, s)
    return c


def vpu_sum_rows(x, counts, w):
    """The fp32 sum of each row's first counts[i] elements, in the VPU's
    order for W = w (docs/numerics.md#reductions): pad with +0.0 to a
    multiple of W; acc = chunk 0; add each further chunk in order; fold in
    halves; acc[0]."""
    x = np.asarray(x, dtype=U32)
    counts = np.asarray(counts, dtype=np.int64)
    rows, length = x.shape
    assert w >= 1 and w & (w - 1) == 0 and np.all(counts >= 1)
    chunks = -(-counts // w)
    width = int(chunks.max()) * w
    padded = np.zeros((rows, max(width, length)), U32)
    padded[:, :length] = x
    # Elements past a row's count are the padding +0.0.
    padded[np.arange(padded.shape[1])[None, :] >= counts[:, None]] = 0
    acc = padded[:, :w].copy()
    for c in range(1, int(chunks.max())):
        more = (c < chunks)[:, None]
        acc = np.where(more, add32(acc, padded[:, c * w:(c + 1) * w]), acc)
    size = w
    while size > 1:
        half = size // 2
        acc[:, :half] = add32(acc[:, :half], acc[:, half:size])
        size = half
    return acc[:, 0].copy()


def vpu_sum(x, w):
    x = np.asarray(x, dtype=U32)
    return vpu_sum_rows(x[None, :], [x.size], w)[0]


# ---------------------------------------------------------------------------
# Softmax, layer norm, the transformer
# ---------------------------------------------------------------------------

def softmax(s, w):
    """docs/numerics.md#softmax-and-layer-normalization."""
    s = np.asarray(s, dtype=U32)
    # max32 over every element (rule 7 reads each one, a single one too).
    m = s[0]
    for sj in s:
        m = max32(m, sj)
    e = exp32(sub32(s, m))
    r = recip32(vpu_sum(e, w))
    return mul32(e, r)


def layernorm(x, g, b, eps, w):
    """docs/numerics.md#softmax-and-layer-normalization."""
    x = np.asarray(x, dtype=U32)
    inv = div32(ONE, i32_to_f32(x.size))
    mean = mul32(vpu_sum(x, w), inv)
    d = sub32(x, mean)
    var = mul32(vpu_sum(mul32(d, d), w), inv)
    r = rsqrt32(add32(var, eps))
    return add32(mul32(mul32(d, r), g), b)


def argmax_first(logits):
    """The first index of the largest logit in rule 7's order, NaNs
    skipped. The contract leaves all-NaN logits undefined; token 0 then."""
    logits = np.asarray(logits, dtype=U32)
    valid = ~is_nan(logits)
    if not valid.any():
        return 0
    key = np.where(valid, _order(logits), np.iinfo(np.int64).min)
    return int(np.argmax(key))  # numpy's argmax returns the first maximum


class Model:
    """A model folder's contents as bit patterns."""

    def __init__(self, folder):
        folder = pathlib.Path(folder)
        if not folder.is_dir():
            raise UsageError(f"model folder {folder} does not exist")
        config = folder / "config.toml"
        if not config.is_file():
            raise UsageError(f"{config}: missing")
        try:
            table = tomllib.loads(config.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UsageError(f"{config}: {' '.join(str(e).split())}")
        keys = ["vocab", "d_model", "heads", "d_ff", "layers", "context"]
        for key in table:
            if key not in keys:
                raise UsageError(f"{config}: unknown key '{key}'")
        dims = {}
        for key in keys:
            if key not in table:
                raise UsageError(f"{config}: missing key '{key}'")
            value = table[key]
            if not isinstance(value, int) or isinstance(value, bool):
                raise UsageError(f"{config}: key '{key}' must be an integer")
            if not 1 <= value <= 2**32 - 1:
                raise UsageError(f"{config}: key '{key}' = {value} is out of range")
            dims[key] = value
        if dims["d_model"] % dims["heads"]:
            raise UsageError(f"{config}: heads = {dims['heads']} does not divide "
                             f"d_model = {dims['d_model']}")
        self.vocab, self.d_model, self.heads = dims["vocab"], dims["d_model"], dims["heads"]
        self.d_ff, self.layers, self.context = dims["d_ff"], dims["layers"], dims["context"]
        v, d, f, t = self.vocab, self.d_model, self.d_ff, self.context
        self.head_width = d // self.heads
        self.folder = folder
        self.eps = self._scalar("eps")
        self.scale = self._scalar("scale")
        self.tok_emb = self._array("tok_emb", "<f4", (v, d))
        self.pos_emb = self._array("pos_emb", "<f4", (t, d))
        self.layer = []
        for l in range(self.layers):
            p = f"layer{l}_"
            self.layer.append({
                "ln1_g": self._array(p + "ln1_g", "<f4", (d,)),
                "ln1_b": self._array(p + "ln1_b", "<f4", (d,)),
                "ln2_g": self._array(p + "ln2_g", "<f4", (d,)),
                "ln2_b": self._array(p + "ln2_b", "<f4", (d,)),
                "wq": self._array(p + "wq", "<u2", (d, d)),
                "wk": self._array(p + "wk", "<u2", (d, d)),
                "wv": self._array(p + "wv", "<u2", (d, d)),
                "wo": self._array(p + "wo", "<u2", (d, d)),
                "w1": self._array(p + "w1", "<u2", (d, f)),
                "b1": self._array(p + "b1", "<f4", (f,)),
                "w2": self._array(p + "w2", "<u2", (f, d)),
                "b2": self._array(p + "b2", "<f4", (d,)),
            })
        self.lnf_g = self._array("lnf_g", "<f4", (d,))
        self.lnf_b = self._array("lnf_b", "<f4", (d,))
        self.wout = self._array("wout", "<u2", (d, v))

    def _array(self, name, dtype, shape):
        return load_bits(self.folder / f"{name}.npy", dtype, shape)

    def _scalar(self, name):
        return load_scalar(self.folder / f"{name}.npy")


def load_bits(path, dtype, shape=None):
    """The .npy file at `path` as bit patterns (uint32 for float32, uint16
    for uint16), its dtype checked, and its shape if `shape` is given (an
    int there is a number of dimensions)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: missing")
    try:
        a = np.load(path, allow_pickle=False)
    except Exception as e:  # numpy raises several kinds for a bad file
        raise UsageError(f"{path}: not a .npy file ({' '.join(str(e).split())})")
    want = np.dtype(dtype)
    if a.dtype.kind != want.kind or a.dtype.itemsize != want.itemsize:
        raise UsageError(f"{path}: dtype {a.dtype}, expected {want}")
    if isinstance(shape, int) and a.ndim != shape:
        raise UsageError(f"{path}: has shape {a.shape}, expected {shape} dimensions")
    if isinstance(shape, tuple) and a.shape != shape:
        raise UsageError(f"{path}: has shape {a.shape}, expected {shape}")
    # Bit patterns: reinterpret, never convert values.
    a = np.ascontiguousarray(a.astype(want.newbyteorder("="), copy=False))
    return a.view(U32 if want.kind == "f" else U16)


def load_scalar(path):
    a = load_bits(path, "<f4")
    if a.shape not in ((), (1,)):
        raise UsageError(f"{path}: has shape {a.shape}, expected () or (1,)")
    return U32(a.reshape(-1)[0])


def bf(v):
    """The contract's bf(v): narrow every element to bf16."""
    return narrow(v)


class Decoder:
    """One token step at a time, with each layer's key and value caches
    (bf16 rows of D), as docs/numerics.md#transformer-step gives it."""

    def __init__(self, model, rows, w):
        self.model = model
        self.rows = rows
        self.w = w
        self.keys = [np.zeros((0, model.d_model), U16) for _ in range(model.layers)]
        self.values = [np.zeros((0, model.d_model), U16) for _ in range(model.layers)]

    def mm(self, a, m):
        return matmul(np.asarray(a, U16)[None, :], m, self.rows)[0]

    def step(self, token, pos):
        md = self.model
        w = self.w
        dh = md.head_width
        x = add32(md.tok_emb[token], md.pos_emb[pos])
        for l, p in enumerate(md.layer):
            h = bf(layernorm(x, p["ln1_g"], p["ln1_b"], md.eps, w))
            q = self.mm(h, p["wq"])
            k = self.mm(h, p["wk"])
            v = self.mm(h, p["wv"])
            self.keys[l] = np.vstack([self.keys[l], bf(k)[None, :]])
            self.values[l] = np.vstack([self.values[l], bf(v)[None, :]])
            assert self.keys[l].shape[0] == pos + 1
            qb = bf(q)
            heads = []
            for j in range(md.heads):
                cols = slice(j * dh, (j + 1) * dh)
                kt = self.keys[l][:, cols].T  # Dh x (pos + 1)
                s = mul32(self.mm(qb[cols], kt), md.scale)
                probs = bf(softmax(s, w))
                heads.append(self.mm(probs, self.values[l][:, cols]))
            o = np.concatenate(heads)
            x = add32(x, self.mm(bf(o), p["wo"]))
            h = bf(layernorm(x, p["ln2_g"], p["ln2_b"], md.eps, w))
            u = relu32(add32(self.mm(h, p["w1"]), p["b1"]))
            x = add32(x, add32(self.mm(bf(u), p["w2"]), p["b2"]))
        h = bf(layernorm(x, md.lnf_g, md.lnf_b, md.eps, w))
        return self.mm(h, md.wout)


def generate(model, prompt, steps, rows, w):
    """The prompt at positions 0 .. n-1, then each chosen token fed back;
    returns the `steps` tokens and the logits each was chosen from."""
    if len(prompt) == 0:
        raise UsageError("the prompt must hold at least one token")
    if steps < 1:
        raise UsageError("--steps must be at least 1")
    for i, t in enumerate(prompt):
        if not 0 <= t < model.vocab:
            raise UsageError(f"prompt token {i} is {t}, not in 0 .. {model.vocab - 1}")
    if len(prompt) + steps - 1 > model.context:
        raise UsageError(f"{len(prompt)} prompt tokens and {steps} generated tokens "
                         f"need {len(prompt) + steps - 1} positions, the context "
                         f"holds {model.context}")
    decoder = Decoder(model, rows, w)
    for pos, t in enumerate(prompt):
        logits = decoder.step(int(t), pos)
    tokens, chosen_from = [], []
    for s in range(steps):
        nxt = argmax_first(logits)
        tokens.append(nxt)
        chosen_from.append(logits)
        if s + 1 < steps:
            logits = decoder.step(nxt, len(prompt) + s)
    return np.array(tokens, np.int32), np.stack(chosen_from).astype(U32)


def save_atomically(path, array):
    """np.save to a temporary file beside `path`, then renamed into place."""
    path = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            np.save(out, array)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------
# The self-check against tb/data/vectors
# ---------------------------------------------------------------------------

def _rows(path):
    with open(path) as fh:
        return [line.rstrip("\n").split("\t") for line in fh
                if line.strip() and not line.startswith("#")]


def _hex(rows, col, dtype=U32):
    return np.array([int(r[col], 16) for r in rows], dtype=np.uint64).astype(dtype)


def check_vectors(folder):
    folder = pathlib.Path(folder)
    failures = 0

    def report(name, inputs, got, want):
        nonlocal failures
        got = np.asarray(got)
        want = np.asarray(want)
        bad = np.nonzero(got != want)[0]
        width = 4 if want.dtype == U16 else 8
        print(f"{name}: {len(want) - len(bad)} of {len(want)} rows agree")
        for i in bad[:5]:
            # Bit patterns in hex (bf16 in 4 digits), counts and indices in decimal.
            args = " ".join(str(int(col[i])) if col.dtype == np.int64
                            else f"{int(col[i]):0{4 if col.dtype == U16 else 8}x}"
                            for col in inputs)
            print(f"  row {i + 1}: {args} -> {int(got[i]):0{width}x}, "
                  f"expected {int(want[i]):0{width}x}")
        failures += len(bad)

    r = _rows(folder / "f32_add.tsv")
    a, b = _hex(r, 0), _hex(r, 1)
    report("f32_add (add32)", [a, b], add32(a, b), _hex(r, 2))
    r = _rows(folder / "f32_sub.tsv")
    a, b = _hex(r, 0), _hex(r, 1)
    report("f32_sub (sub32)", [a, b], sub32(a, b), _hex(r, 2))
    r = _rows(folder / "f32_mul.tsv")
    a, b = _hex(r, 0), _hex(r, 1)
    report("f32_mul (mul32)", [a, b], mul32(a, b), _hex(r, 2))
    r = _rows(folder / "f32_min_max.tsv")
    a, b = _hex(r, 0), _hex(r, 1)
    report("f32_min_max (min32)", [a, b], min32(a, b), _hex(r, 2))
    report("f32_min_max (max32)", [a, b], max32(a, b), _hex(r, 3))
    r = _rows(folder / "f32_div.tsv")
    a, b = _hex(r, 0), _hex(r, 1)
    report("f32_div (div32)", [a, b], div32(a, b), _hex(r, 2))
    r = _rows(folder / "f32_sqrt.tsv")
    a = _hex(r, 0)
    report("f32_sqrt (sqrt32)", [a], sqrt32(a), _hex(r, 1))
    report("f32_sqrt (rsqrt)", [a], rsqrt32(a), _hex(r, 2))
    r = _rows(folder / "f32_exp.tsv")
    a = _hex(r, 0)
    report("f32_exp (exp2)", [a], exp2_32(a), _hex(r, 1))
    report("f32_exp (exp)", [a], exp32(a), _hex(r, 2))
    r = _rows(folder / "bf16_to_f32.tsv")
    a = _hex(r, 0, U16)
    report("bf16_to_f32 (widen)", [a], widen(a), _hex(r, 1))
    r = _rows(folder / "f32_to_bf16.tsv")
    a = _hex(r, 0)
    report("f32_to_bf16 (narrow)", [a], narrow(a), _hex(r, 1, U16))
    r = _rows(folder / "i32_to_f32.tsv")
    a = _hex(r, 0).view(np.int32)
    report("i32_to_f32", [a.view(U32)], i32_to_f32(a), _hex(r, 1))
    r = _rows(folder / "bf16_mul.tsv")
    a, b = _hex(r, 0, U16), _hex(r, 1, U16)
    report("bf16_mul", [a, b], bf16_mul(a, b), _hex(r, 2))

    # One matmul tile (R = K) per row. The chain starts from +0.0, and
    # add32(+0.0, +0.0) = +0.0, so rows of different K run together with
    # +0.0 x +0.0 products put in front of the shorter ones.
    r = _rows(folder / "bf16_mac_chain.tsv")
    lists = [([int(v, 16) for v in row[0].split(",")],
              [int(v, 16) for v in row[1].split(",")]) for row in r]
    longest = max(len(a) for a, _ in lists)
    a_mat = np.zeros((len(lists), longest), U16)
    b_mat = np.zeros((len(lists), longest), U16)
    for i, (a, b) in enumerate(lists):
        a_mat[i, longest - len(a):] = a
        b_mat[i, longest - len(b):] = b
    got = mac_chain(a_mat.T, b_mat.T)
    report("bf16_mac_chain", [np.arange(len(lists), dtype=np.int64)], got, _hex(r, 2))
    # The same tiles as 1 x K by K x 1 matmuls on a sample of rows: with
    # R = K they are the chain itself; with R = K + 5 the padding adds
    # +0.0 products, which leave every sum but -0.0 (made +0.0) unchanged.
    sample = np.arange(0, len(lists), 37)
    for extra in (0, 5):
        got_mm = np.array([
            matmul(np.array([lists[i][0]], U16), np.array(lists[i][1], U16)[:, None],
                   len(lists[i][0]) + extra)[0, 0] for i in sample], U32)
        want_mm = add32(got[sample], U32(0)) if extra else got[sample]
        report(f"bf16_mac_chain as matmuls with R = K + {extra}", [sample.astype(np.int64)],
               got_mm, want_mm)

    r = _rows(folder / "f32_reduce_sum.tsv")
    for w in sorted({int(row[0]) for row in r}):
        group = [row for row in r if int(row[0]) == w]
        values = [[int(v, 16) for v in row[1].split(",")] for row in group]
        counts = np.array([len(v) for v in values])
        x = np.zeros((len(values), counts.max()), U32)
        for i, v in enumerate(values):
            x[i, :len(v)] = v
        report(f"f32_reduce_sum W={w}", [counts.astype(np.int64)],
               vpu_sum_rows(x, counts, w), _hex(group, 2))

    if failures:
        print(f"{failures} mismatches")
        return 1
    print("every vector agrees")
    return 0


def run_function(name, folder, rows, w):
    """One of the step's pieces on the inputs in `folder`, for tests that
    hold them to another implementation one at a time:
    - layernorm: x.npy float32 [B, D], g.npy and b.npy float32 [D],
      eps.npy scalar; writes y.npy float32 [B, D] (each row normalized);
    - softmax: s.npy float32 [B, L]; writes p.npy float32 [B, L];
    - matmul: a.npy uint16 [M, K], b.npy uint16 [K, N]; writes c.npy
      float32 [M, N] for an array of R = rows."""
    folder = pathlib.Path(folder)
    if name == "layernorm":
        x = load_bits(folder / "x.npy", "<f4", 2)
        g = load_bits(folder / "g.npy", "<f4", (x.shape[1],))
        b = load_bits(folder / "b.npy", "<f4", (x.shape[1],))
        eps = load_scalar(folder / "eps.npy")
        y = np.stack([layernorm(row, g, b, eps, w) for row in x])
        save_atomically(folder / "y.npy", y.view(F32))
    elif name == "softmax":
        s = load_bits(folder / "s.npy", "<f4", 2)
        p = np.stack([softmax(row, w) for row in s])
        save_atomically(folder / "p.npy", p.view(F32))
    elif name == "matmul":
        a = load_bits(folder / "a.npy", "<u2", 2)
        b = load_bits(folder / "b.npy", "<u2", 2)
        if a.shape[1] != b.shape[0]:
            raise UsageError(f"a is {a.shape} and b is {b.shape}: they do not multiply")
        save_atomically(folder / "c.npy", matmul(a, b, rows).view(F32))
    else:
        raise UsageError(f"--function {name}: expected layernorm, softmax or matmul")
    return 0


def check_machine(rows, w):
    if rows < 1:
        raise UsageError(f"--rows must be at least 1, got {rows}")
    if w < 1 or w & (w - 1):
        raise UsageError(f"--w must be a power of two, got {w}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="the model folder")
    ap.add_argument("--prompt", help=".npy of integer token ids, 1-D")
    ap.add_argument("--steps", type=int, help="tokens to generate (>= 1)")
    ap.add_argument("--out", help=".npy for the generated tokens, int32 [steps]")
    ap.add_argument("--logits", help=".npy for the logits, float32 [steps, vocab]")
    ap.add_argument("--rows", type=int, help="the MXU's R (>= 1)")
    ap.add_argument("--w", type=int, help="the VPU's lanes x sublanes (a power of two)")
    ap.add_argument("--check-vectors", metavar="DIR",
                    help="check the arithmetic against the reference vectors in DIR")
    ap.add_argument("--function", nargs=2, metavar=("NAME", "DIR"),
                    help="run layernorm, softmax or matmul on the inputs in DIR "
                         "(see run_function)")
    args = ap.parse_args(argv)
    if args.check_vectors:
        return check_vectors(args.check_vectors)
    if args.function:
        for flag, value in (("--rows", args.rows), ("--w", args.w)):
            if value is None:
                raise UsageError(f"--function needs {flag}")
        check_machine(args.rows, args.w)
        return run_function(args.function[0], args.function[1], args.rows, args.w)
    missing = [f"--{n}" for n in ("model", "prompt", "steps", "out", "rows", "w")
               if getattr(args, n) is None]
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or --check-vectors DIR)")
    check_machine(args.rows, args.w)
    model = Model(args.model)
    path = pathlib.Path(args.prompt)
    if not path.is_file():
        raise UsageError(f"{path}: missing")
    try:
        prompt = np.load(path, allow_pickle=False)
    except Exception as e:
        raise UsageError(f"{path}: not a .npy file ({' '.join(str(e).split())})")
    if prompt.dtype.kind not in "iu" or prompt.ndim != 1:
        raise UsageError(f"{path}: {prompt.dtype} of shape {prompt.shape}, "
                         "expected a 1-D array of integers")
    tokens, logits = generate(model, [int(t) for t in prompt], args.steps,
                              args.rows, args.w)
    save_atomically(args.out, tokens)
    if args.logits:
        save_atomically(args.logits, logits.view(F32))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
