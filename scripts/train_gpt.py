#!/usr/bin/env python3
"""Trains a small character-level decoder-only transformer (the model of
docs/numerics.md#transformer-step) and exports it as a model folder of .npy
files for the TensorCore (default models/char-gpt).

Setup and run (the virtual environment lives under the git-ignored build/):

    python3 -m venv build/train && build/train/bin/pip install jax numpy
    nice -n 10 build/train/bin/python scripts/train_gpt.py

The defaults (9000 steps of 64 windows) take about 25 to 30 minutes on two
shared CPU cores.

Re-evaluate an exported folder without training (numpy only; any Python with
numpy will do):

    build/train/bin/python scripts/train_gpt.py --evaluate models/char-gpt

Data. The documentation text shipped with every Python installation,
`pydoc_data.topics.topics` (a dict of strings): the values concatenated in
sorted key order, separated by "\\n\\n". The first 90% of the characters are
the training split, the last 10% the validation split.

Vocabulary. The distinct characters of the whole text, sorted by code point,
if there are at most --max-vocab (128) of them. Otherwise the
(max_vocab - 1) most frequent characters (ties broken by code point), sorted
by code point, plus one fallback character U+FFFD as the last id, which every
other character maps to. When the text fits without a fallback entry, an
unknown character encodes as the space ' '. vocab.json records the list and
the fallback id.

Model (all dimensions are flags): x = tok_emb[t] + pos_emb[pos]; per layer:
pre-norm causal multi-head attention without biases, then a ReLU MLP with
biases, both residual; a final layer norm and an output projection without
bias. Layer norm uses the population variance and eps = 1e-5; the attention
scale is 1/sqrt(d_model / heads).

Training. float32 in JAX on the CPU: batches of random context-long windows
of the training split (every position predicts its next character), AdamW
(weight decay on the 2-D matrices and embeddings only), linear warm-up then a
cosine decay to 10% of the peak rate, gradient clipping by global norm, and
dropout (--dropout, default 0.1) on the embedding sum and on both residual
branches: without it this model overfits the training split within the
default budget (at dropout 0 the validation loss ends near 1.30 nats/char
against 1.24 with it). All randomness comes from --seed (parameter init and
dropout masks via jax.random, batch positions via numpy), so a rerun on the
same machine and package versions gives the same model.

Export. Matrices (wq, wk, wv, wo, w1, w2, wout) as uint16 bf16 bit patterns,
rounded to nearest even from float32 (subnormals flush to a zero of their
sign, as narrow_bf16 of docs/numerics.md#conversions); everything else as
float32 (subnormals flushed to zero, which is how the hardware reads them).
Matrices are stored with inputs as rows, so q = h @ Wq.

Evaluation. The validation split is cut into non-overlapping windows of
`context` characters; each window's characters predict the next one, so every
validation character after the first is predicted exactly once, from 1 to
`context` characters of preceding context. The loss is the mean negative
log-likelihood in nats per character, computed by a numpy forward pass twice:
with the float32 weights, and with the exported bf16 matrices where, as in
the contract, every matmul input is rounded to bf16 (bf(h), bf(q), the bf16
key and value caches, bf(p), bf(o), bf(u)). The greedy samples in the README
come from a token-by-token numpy pass with a key/value cache that applies the
same roundings in the contract's order; it is float32 numpy, not bit-exact
(summation orders and exp differ), so it is meant for comparison by eye.
"""

import argparse
import json
import math
import pathlib
import sys
import time

import numpy as np

FALLBACK_CHAR = "\ufffd"
MATRICES = ("wq", "wk", "wv", "wo", "w1", "w2")
EPS = 1e-5


# ---------------------------------------------------------------------------
# Data and vocabulary


def load_text():
    """The pydoc topics text: values in sorted key order joined by blank lines."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def build_vocab(text, max_vocab):
    """Returns (chars, fallback_id): chars[i] is token i's character.

    fallback_id is the token unknown characters encode as: U+FFFD's id when
    the text had to be cut to max_vocab - 1 characters, else the space's (or
    0 when the text has no space).
    """
    counts = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    distinct = sorted(counts)
    if len(distinct) <= max_vocab:
        chars = distinct
        return chars, chars.index(" ") if " " in chars else 0
    kept = sorted(distinct, key=lambda c: (-counts[c], c))[: max_vocab - 1]
    chars = sorted(kept) + [FALLBACK_CHAR]
    return chars, len(chars) - 1


def encode(text, chars, fallback_id):
    index = {c: i for i, c in enumerate(chars)}
    return np.array([index.get(c, fallback_id) for c in text], dtype=np.int32)


def val_windows(tokens, context):
    """(inputs, targets), each [n, context], of non-overlapping windows."""
    n = (len(tokens) - 1) // context
    idx = np.arange(n)[:, None] * context + np.arange(context)[None, :]
    return tokens[idx], tokens[idx + 1]


# ---------------------------------------------------------------------------
# bf16 and the numpy reference forward pass


def bf16_bits(x):
    """float32 -> bf16 bit patterns (uint16): round to nearest even, subnormal
    inputs to a zero of their sign, overflow to infinity. No NaNs expected."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    sub = (u & 0x7F800000) == 0
    u = np.where(sub, u & 0x80000000, u)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return r.astype(np.uint16)


def bf16_widen(b):
    """bf16 bit patterns -> float32 (exact)."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf(x):
    """Rounds float32 values to the nearest bf16 value, kept as float32."""
    return bf16_widen(bf16_bits(x)).reshape(np.shape(x))


def flush_subnormals(x):
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.abs(x) < np.finfo(np.float32).tiny, np.float32(0) * np.sign(x), x).astype(np.float32)


def _ident(x):
    return x


def layernorm_np(x, g, b, eps):
    mean = x.mean(-1, keepdims=True, dtype=np.float32)
    d = x - mean
    var = (d * d).mean(-1, keepdims=True, dtype=np.float32)
    return (d * (np.float32(1) / np.sqrt(var + eps)) * g + b).astype(np.float32)


def softmax_np(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e * (np.float32(1) / e.sum(-1, keepdims=True))).astype(np.float32)


def forward_np(P, cfg, tokens, rounding):
    """Logits [B, T, vocab] for token windows [B, T] (positions 0 .. T-1).

    P maps the export names to float32 arrays (matrices as float32 values).
    With rounding=True every matmul input is rounded to bf16 as the contract's
    bf() does (the matrices must then already be bf16 values)."""
    r = bf if rounding else _ident
    H, D = cfg["heads"], cfg["d_model"]
    Dh = D // H
    B, T = tokens.shape
    eps, scale = P["eps"], P["scale"]
    x = P["tok_emb"][tokens] + P["pos_emb"][:T]
    causal = np.tril(np.ones((T, T), dtype=bool))
    for l in range(cfg["layers"]):
        p = lambda n: P[f"layer{l}_{n}"]  # noqa: E731
        h = r(layernorm_np(x, p("ln1_g"), p("ln1_b"), eps))
        q = r(h @ p("wq")).reshape(B, T, H, Dh)
        k = r(h @ p("wk")).reshape(B, T, H, Dh)
        v = r(h @ p("wv")).reshape(B, T, H, Dh)
        s = np.einsum("bthd,bshd->bhts", q, k) * scale
        s = np.where(causal, s, -np.inf).astype(np.float32)
        a = r(softmax_np(s))
        o = r(np.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D))
        x = x + o @ p("wo")
        h = r(layernorm_np(x, p("ln2_g"), p("ln2_b"), eps))
        u = r(np.maximum(h @ p("w1") + p("b1"), np.float32(0)))
        x = x + (u @ p("w2") + p("b2"))
    h = r(layernorm_np(x, P["lnf_g"], P["lnf_b"], eps))
    return (h @ P["wout"]).astype(np.float32)


def nll_np(P, cfg, tokens, rounding, batch=64):
    """Mean negative log-likelihood (nats/char) over the validation windows."""
    xs, ys = val_windows(tokens, cfg["context"])
    total = 0.0
    for i in range(0, len(xs), batch):
        logits = forward_np(P, cfg, xs[i : i + batch], rounding).astype(np.float64)
        m = logits.max(-1, keepdims=True)
        lse = np.log(np.exp(logits - m).sum(-1)) + m[..., 0]
        picked = np.take_along_axis(logits, ys[i : i + batch][..., None], -1)[..., 0]
        total += float((lse - picked).sum())
    return total / ys.size


class StepModel:
    """Token-by-token forward pass with bf16 key/value caches, following the
    contract's transformer step (with float32 numpy arithmetic)."""

    def __init__(self, P, cfg):
        self.P, self.cfg = P, cfg
        self.K = [[] for _ in range(cfg["layers"])]
        self.V = [[] for _ in range(cfg["layers"])]
        self.pos = 0

    def step(self, t):
        P, cfg = self.P, self.cfg
        H, D = cfg["heads"], cfg["d_model"]
        Dh = D // H
        eps, scale = P["eps"], P["scale"]
        x = P["tok_emb"][t] + P["pos_emb"][self.pos]
        for l in range(cfg["layers"]):
            p = lambda n: P[f"layer{l}_{n}"]  # noqa: E731
            h = bf(layernorm_np(x, p("ln1_g"), p("ln1_b"), eps))
            q, k, v = h @ p("wq"), h @ p("wk"), h @ p("wv")
            self.K[l].append(bf(k))
            self.V[l].append(bf(v))
            Kc, Vc = np.stack(self.K[l]), np.stack(self.V[l])
            o = np.empty(D, dtype=np.float32)
            for j in range(H):
                c = slice(j * Dh, (j + 1) * Dh)
                s = (bf(q[c]) @ Kc[:, c].T) * scale
                o[c] = bf(softmax_np(s)) @ Vc[:, c]
            x = x + bf(o) @ p("wo")
            h = bf(layernorm_np(x, p("ln2_g"), p("ln2_b"), eps))
            u = np.maximum(h @ p("w1") + p("b1"), np.float32(0))
            x = x + (bf(u) @ p("w2") + p("b2"))
        h = bf(layernorm_np(x, P["lnf_g"], P["lnf_b"], eps))
        self.pos += 1
        return (h @ P["wout"]).astype(np.float32)


def greedy(P, cfg, prompt_ids, count):
    """Greedy continuation within one context window (the contract's
    generation: prompt fed one token per step, stops at `context` positions)."""
    m = StepModel(P, cfg)
    out = []
    for t in prompt_ids:
        logits = m.step(int(t))
    while len(out) < count:
        out.append(int(np.argmax(logits)))
        if m.pos == cfg["context"]:
            break
        logits = m.step(out[-1])
    return out


def greedy_sliding(P, cfg, prompt_ids, count):
    """Greedy continuation past the context: each next token is predicted by a
    fresh pass over the last `context` tokens at positions 0 .. context-1."""
    ids = list(prompt_ids)
    for _ in range(count):
        window = np.array(ids[-cfg["context"] :], dtype=np.int32)[None, :]
        logits = forward_np(P, cfg, window, rounding=True)[0, -1]
        ids.append(int(np.argmax(logits)))
    return ids[len(prompt_ids) :]


# ---------------------------------------------------------------------------
# Model folder


def export(params, cfg, chars, fallback_id, out):
    """Writes the model folder; returns the exported values as float32 (matrices
    widened from their bf16 patterns), i.e. what load_model would read."""
    out.mkdir(parents=True, exist_ok=True)
    exported = {}
    for name, value in params.items():
        value = np.asarray(value, dtype=np.float32)
        if name == "wout" or name.split("_", 1)[-1] in MATRICES:
            bits = bf16_bits(value)
            np.save(out / f"{name}.npy", bits.astype("<u2"))
            exported[name] = bf16_widen(bits).reshape(value.shape)
        else:
            value = flush_subnormals(value)
            np.save(out / f"{name}.npy", value.astype("<f4"))
            exported[name] = value
    toml = "".join(f"{k} = {cfg[k]}\n" for k in ("vocab", "d_model", "heads", "d_ff", "layers", "context"))
    (out / "config.toml").write_text(toml)
    vocab = {
        "chars": chars,
        "fallback": fallback_id,
        "fallback_rule": (
            "token id = index in chars. Unknown characters encode as token `fallback`. "
            "The vocabulary is the sorted distinct characters of the training text when there are at "
            "most 128; otherwise the 127 most frequent (ties by code point) sorted, plus U+FFFD as the "
            "last id, which is then the fallback. Here all characters fit, so the fallback is the space."
            if chars[fallback_id] != FALLBACK_CHAR
            else "token id = index in chars. The text had more than 128 distinct characters: the 127 "
            "most frequent (ties by code point) sorted by code point, plus U+FFFD as the last id; every "
            "other character encodes as that fallback id."
        ),
    }
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1) + "\n")
    return exported


def load_model(folder):
    """Reads a model folder: (cfg, P) with every array as float32 values."""
    folder = pathlib.Path(folder)
    cfg = {}
    for line in (folder / "config.toml").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            cfg[k.strip()] = int(v)
    P = {}
    for f in sorted(folder.glob("*.npy")):
        a = np.load(f)
        P[f.stem] = bf16_widen(a).reshape(a.shape) if a.dtype == np.uint16 else a.astype(np.float32)
    return cfg, P


def evaluate_folder(folder):
    cfg, P = load_model(folder)
    vocab = json.loads((pathlib.Path(folder) / "vocab.json").read_text())
    text = load_text()
    tokens = encode(text, vocab["chars"], vocab["fallback"])
    val = tokens[int(len(tokens) * 0.9) :]
    loss = nll_np(P, cfg, val, rounding=True)
    print(f"{folder}: validation loss with bf16 matrices and roundings: {loss:.4f} nats/char")
    prompt = "The "
    ids = greedy(P, cfg, encode(prompt, vocab["chars"], vocab["fallback"]), cfg["context"])
    print(repr(prompt + "".join(vocab["chars"][i] for i in ids)))


# ---------------------------------------------------------------------------
# Training (JAX)


def init_params(cfg, seed):
    import jax
    import jax.numpy as jnp

    V, D, F, T, L = cfg["vocab"], cfg["d_model"], cfg["d_ff"], cfg["context"], cfg["layers"]
    keys = iter(jax.random.split(jax.random.PRNGKey(seed), 4 + 6 * L))
    normal = lambda shape, std: std * jax.random.normal(next(keys), shape, jnp.float32)  # noqa: E731
    resid = 0.02 / math.sqrt(2 * L)  # GPT-2's scaling of the residual projections
    P = {"tok_emb": normal((V, D), 0.02), "pos_emb": normal((T, D), 0.01)}
    for l in range(L):
        P.update(
            {
                f"layer{l}_ln1_g": jnp.ones(D),
                f"layer{l}_ln1_b": jnp.zeros(D),
                f"layer{l}_wq": normal((D, D), 0.02),
                f"layer{l}_wk": normal((D, D), 0.02),
                f"layer{l}_wv": normal((D, D), 0.02),
                f"layer{l}_wo": normal((D, D), resid),
                f"layer{l}_ln2_g": jnp.ones(D),
                f"layer{l}_ln2_b": jnp.zeros(D),
                f"layer{l}_w1": normal((D, F), 0.02),
                f"layer{l}_b1": jnp.zeros(F),
                f"layer{l}_w2": normal((F, D), resid),
                f"layer{l}_b2": jnp.zeros(D),
            }
        )
    P.update({"lnf_g": jnp.ones(D), "lnf_b": jnp.zeros(D), "wout": normal((D, V), 0.02)})
    return P


def make_fns(cfg, args):
    import jax
    import jax.numpy as jnp

    H, D, L = cfg["heads"], cfg["d_model"], cfg["layers"]
    Dh = D // H
    scale = 1.0 / math.sqrt(Dh)

    def layernorm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        d = x - mean
        var = (d * d).mean(-1, keepdims=True)
        return d * jax.lax.rsqrt(var + EPS) * g + b

    def dropout(x, key, i):
        """Inverted dropout of rate args.dropout; key None means evaluation."""
        if key is None or args.dropout == 0.0:
            return x
        keep = jax.random.bernoulli(jax.random.fold_in(key, i), 1.0 - args.dropout, x.shape)
        return jnp.where(keep, x / (1.0 - args.dropout), 0.0)

    def forward(P, x_tok, key=None):
        B, T = x_tok.shape
        x = dropout(P["tok_emb"][x_tok] + P["pos_emb"][:T], key, 0)
        causal = jnp.tril(jnp.ones((T, T), bool))
        for l in range(L):
            p = lambda n: P[f"layer{l}_{n}"]  # noqa: E731
            h = layernorm(x, p("ln1_g"), p("ln1_b"))
            q = (h @ p("wq")).reshape(B, T, H, Dh)
            k = (h @ p("wk")).reshape(B, T, H, Dh)
            v = (h @ p("wv")).reshape(B, T, H, Dh)
            s = jnp.einsum("bthd,bshd->bhts", q, k) * scale
            a = jax.nn.softmax(jnp.where(causal, s, -jnp.inf), axis=-1)
            o = jnp.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D)
            x = x + dropout(o @ p("wo"), key, 2 * l + 1)
            h = layernorm(x, p("ln2_g"), p("ln2_b"))
            x = x + dropout(jax.nn.relu(h @ p("w1") + p("b1")) @ p("w2") + p("b2"), key, 2 * l + 2)
        return layernorm(x, P["lnf_g"], P["lnf_b"]) @ P["wout"]

    def loss_fn(P, x_tok, y_tok, key=None):
        logits = forward(P, x_tok, key)
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, y_tok[..., None], -1).mean()

    def lr_at(step):
        warm = jnp.minimum(1.0, (step + 1) / args.warmup)
        frac = jnp.clip((step - args.warmup) / max(1, args.steps - args.warmup), 0.0, 1.0)
        cos = args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + jnp.cos(jnp.pi * frac))
        return args.lr * warm * cos

    decayed = {n: (n in ("tok_emb", "pos_emb", "wout") or n.split("_", 1)[-1] in MATRICES) for n in init_params_names(cfg)}
    b1, b2, adam_eps = 0.9, 0.95, 1e-8

    dropout_key = jax.random.fold_in(jax.random.PRNGKey(args.seed), 1)

    @jax.jit
    def train_step(P, m, v, step, x_tok, y_tok):
        key = jax.random.fold_in(dropout_key, step)
        loss, g = jax.value_and_grad(loss_fn)(P, x_tok, y_tok, key)
        norm = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
        clip = jnp.minimum(1.0, args.clip / (norm + 1e-6))
        lr = lr_at(step)
        t = step + 1
        newP, newm, newv = {}, {}, {}
        for n in P:
            gn = g[n] * clip
            newm[n] = b1 * m[n] + (1 - b1) * gn
            newv[n] = b2 * v[n] + (1 - b2) * gn * gn
            mhat = newm[n] / (1 - b1**t)
            vhat = newv[n] / (1 - b2**t)
            upd = mhat / (jnp.sqrt(vhat) + adam_eps)
            if decayed[n]:
                upd = upd + args.weight_decay * P[n]
            newP[n] = P[n] - lr * upd
        return newP, newm, newv, loss

    eval_loss = jax.jit(loss_fn)
    return train_step, eval_loss


def init_params_names(cfg):
    names = ["tok_emb", "pos_emb"]
    for l in range(cfg["layers"]):
        names += [f"layer{l}_{n}" for n in ("ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g", "ln2_b", "w1", "b1", "w2", "b2")]
    return names + ["lnf_g", "lnf_b", "wout"]


def train(args):
    import jax
    import jax.numpy as jnp

    t_start = time.time()
    text = load_text()
    chars, fallback_id = build_vocab(text, args.max_vocab)
    tokens = encode(text, chars, fallback_id)
    split = int(len(tokens) * 0.9)
    train_tok, val_tok = tokens[:split], tokens[split:]
    cfg = {
        "vocab": len(chars),
        "d_model": args.d_model,
        "heads": args.heads,
        "d_ff": args.d_ff,
        "layers": args.layers,
        "context": args.context,
    }
    if cfg["d_model"] % cfg["heads"]:
        sys.exit("d_model must be a multiple of heads")
    print(f"text: {len(text)} chars ({len(train_tok)} train, {len(val_tok)} validation); vocab {len(chars)}")
    print("config:", cfg, flush=True)

    P = init_params(cfg, args.seed)
    n_params = sum(int(np.prod(x.shape)) for x in P.values())
    print(f"parameters: {n_params}")
    zeros = {n: jnp.zeros_like(x) for n, x in P.items()}
    m, v = zeros, dict(zeros)
    train_step, eval_loss = make_fns(cfg, args)

    rng = np.random.default_rng(args.seed)
    T = cfg["context"]
    vx, vy = val_windows(val_tok, T)
    probe = rng.permutation(len(vx))[: args.eval_windows]
    vx_probe, vy_probe = jnp.asarray(vx[probe]), jnp.asarray(vy[probe])
    offsets = np.arange(T + 1)[None, :]

    t_train = time.time()
    recent = []
    for step in range(args.steps):
        starts = rng.integers(0, len(train_tok) - T - 1, size=args.batch)
        w = train_tok[starts[:, None] + offsets]
        P, m, v, loss = train_step(P, m, v, jnp.int32(step), jnp.asarray(w[:, :-1]), jnp.asarray(w[:, 1:]))
        recent.append(loss)
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            tl = float(np.mean([float(x) for x in recent]))
            recent = []
            vl = float(eval_loss(P, vx_probe, vy_probe))
            el = time.time() - t_train
            print(f"step {step + 1:6d}  train {tl:.4f}  val(probe) {vl:.4f}  {el:7.1f} s", flush=True)
    train_seconds = time.time() - t_train

    P32 = {n: np.asarray(x, dtype=np.float32) for n, x in P.items()}
    P32["eps"] = np.float32(EPS)
    P32["scale"] = np.float32(1.0 / math.sqrt(cfg["d_model"] // cfg["heads"]))
    out = pathlib.Path(args.out)
    exported = export(P32, cfg, chars, fallback_id, out)
    _, loaded = load_model(out)
    assert all(np.array_equal(loaded[n], exported[n]) for n in exported)

    loss32 = nll_np(P32, cfg, val_tok, rounding=False)
    loss16 = nll_np(loaded, cfg, val_tok, rounding=True)
    print(f"validation loss: float32 {loss32:.4f}, bf16 export {loss16:.4f} nats/char")

    prompt = args.prompt
    prompt_ids = encode(prompt, chars, fallback_id)
    in_ctx = greedy(loaded, cfg, prompt_ids, T)
    longer = greedy_sliding(loaded, cfg, prompt_ids, args.sample_chars)
    dec = lambda ids: "".join(chars[i] for i in ids)  # noqa: E731
    # Within the first window both samples see the same positions and roundings.
    agree = next((i for i, (a, b) in enumerate(zip(in_ctx, longer)) if a != b), min(len(in_ctx), len(longer)))
    print("greedy (one context window):", repr(prompt + dec(in_ctx)))
    print("greedy (sliding window):   ", repr(prompt + dec(longer)))
    total_seconds = time.time() - t_start

    write_readme(
        out,
        cfg=cfg,
        args=args,
        n_params=n_params,
        n_text=len(text),
        n_train=len(train_tok),
        n_val=len(val_tok),
        n_val_pred=int(vy.size),
        train_seconds=train_seconds,
        total_seconds=total_seconds,
        loss32=loss32,
        loss16=loss16,
        prompt=prompt,
        in_ctx=dec(in_ctx),
        longer=dec(longer),
        agree=agree,
        vocab_note=(
            f"  distinct characters (all of them fit in {args.max_vocab}, so there is no fallback entry;\n"
            "  unknown characters encode as the space, see `vocab.json`)."
            if chars[fallback_id] != FALLBACK_CHAR
            else f"  {args.max_vocab - 1} most frequent characters plus the fallback U+FFFD (last id),\n"
            "  which every other character encodes as (see `vocab.json`)."
        ),
        versions=f"jax {jax.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}",
    )
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"wrote {out} ({size} bytes) in {total_seconds:.0f} s total, {train_seconds:.0f} s of training")


def write_readme(out, **k):
    cfg, args = k["cfg"], k["args"]
    cmd = " ".join(["nice -n 10 build/train/bin/python scripts/train_gpt.py"] + sys.argv[1:])
    size = sum(f.stat().st_size for f in out.iterdir() if f.name != "README.md")
    fence = "```"
    lines = [
        "# char-gpt",
        "",
        "A character-level decoder-only transformer for the TensorCore's transformer step",
        "([docs/numerics.md](../../docs/numerics.md#transformer-step)):",
        f"vocab {cfg['vocab']}, d_model {cfg['d_model']}, {cfg['heads']} heads, d_ff {cfg['d_ff']},",
        f"{cfg['layers']} layers, context {cfg['context']}; {k['n_params']} parameters",
        f"({size} bytes of .npy, config and vocabulary).",
        "`scripts/train_gpt.py` wrote it; its docstring defines the data, the vocabulary,",
        "the training and the file format. `scripts/gpt_text.py` turns text into token",
        "ids and back.",
        "",
        "## Training",
        "",
        f"- Command: `{cmd}` (seed {args.seed}).",
        "- Data: `pydoc_data.topics.topics`, the values in sorted key order joined by",
        f'  "\\n\\n" ({k["n_text"]} characters); the first 90% ({k["n_train"]}) for training,',
        f"  the last 10% ({k['n_val']}) for validation. The vocabulary is the text's sorted",
        k["vocab_note"],
        f"- {args.steps} steps of AdamW (peak lr {args.lr}, {args.warmup} warm-up steps, cosine",
        f"  decay to {args.min_lr_frac} of the peak, weight decay {args.weight_decay}, gradient clip",
        f"  {args.clip}, dropout {args.dropout}), batches of {args.batch} random windows of",
        f"  {cfg['context']} characters, float32 on the CPU (2 cores, shared, niced):",
        f"  {k['train_seconds']:.0f} s of training, {k['total_seconds']:.0f} s in all",
        f"  ({k['versions']}).",
        "",
        "## Validation loss",
        "",
        f"Mean negative log-likelihood of the {k['n_val_pred']} validation characters predicted",
        f"in non-overlapping windows of {cfg['context']} (with 1 to {cfg['context']} characters of context),",
        "from a numpy forward pass:",
        "",
        "| weights | nats/char |",
        "| --- | --- |",
        f"| float32, as trained | {k['loss32']:.4f} |",
        f"| exported bf16 matrices, every matmul input rounded to bf16 | {k['loss16']:.4f} |",
        "",
        "## Greedy samples",
        "",
        "From a numpy token-by-token pass over the exported model with the contract's",
        "bf16 roundings (float32 numpy arithmetic, so not bit-exact; for comparison by eye),",
        f"prompt `{k['prompt']}`. Within one context window, as the contract's generation runs:",
        f"the prompt at positions 0 .. {len(k['prompt']) - 1}, then {len(k['in_ctx'])} greedy characters, the",
        f"last one predicted at position {cfg['context'] - 1}:",
        "",
        f"{fence}text",
        k["prompt"] + k["in_ctx"],
        fence,
        "",
        f"The same prompt continued to {len(k['longer'])} characters, each next character",
        f"predicted by a pass over the last {cfg['context']} characters at positions",
        f"0 .. {cfg['context'] - 1} (the first {k['agree']} characters are those above):",
        "",
        f"{fence}text",
        k["prompt"] + k["longer"],
        fence,
        "",
    ]
    (out / "README.md").write_text("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="models/char-gpt", help="model folder to write (default %(default)s)")
    ap.add_argument("--evaluate", metavar="DIR", help="only evaluate an exported model folder (numpy only)")
    ap.add_argument("--max-vocab", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--steps", type=int, default=9000)
    ap.add_argument("--batch", type=int, default=64, help="windows per step")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    ap.add_argument("--min-lr-frac", type=float, default=0.1, help="final learning rate / peak")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.1, help="dropout on the embedding and the residual branches")
    ap.add_argument("--clip", type=float, default=1.0, help="gradient clipping (global norm)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=500)
    ap.add_argument("--eval-windows", type=int, default=256, help="validation windows in the periodic probe")
    ap.add_argument("--prompt", default="The ")
    ap.add_argument("--sample-chars", type=int, default=200)
    args = ap.parse_args()
    if args.evaluate:
        evaluate_folder(args.evaluate)
    else:
        train(args)


if __name__ == "__main__":
    main()
