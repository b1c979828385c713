//! The contract's decoder-only transformer, bit for bit: layer
//! normalization and softmax (`docs/numerics.md#softmax-and-layer-normalization`),
//! one token step with its key and value caches ([`Decoder::step`],
//! `docs/numerics.md#transformer-step`), the choice of the next token
//! ([`argmax_first`]) and generation from a prompt ([`generate`]).
//!
//! Every operation is one of the contract's, taken from the rest of this
//! crate: `add32`, `sub32`, `mul32`, `relu_f32` and the bf16 conversions of
//! [`crate::numerics`] (`docs/numerics.md#ftz-rne`,
//! `docs/numerics.md#conversions`), its `div32`, `rsqrt32`, `recip32` and
//! `exp32` (`docs/numerics.md#eup`); every matrix product a [`matmul_bf16`]
//! of one row, every fp32 sum a [`reduce_sum_f32`], softmax's maximum a
//! [`reduce_max_f32`] (`max32` over every element). The model's parameters
//! are a [`GptModel`], the description the model-folder loader and the
//! compiler share.
//!
//! Two numbers of the machine change results, and both are arguments:
//!
//! - R (`rows_r`), the MXU's rows: every matmul's sum over k is cut into
//!   tiles of R (`docs/numerics.md#bf16-matmul`), so q, k, v, the attention
//!   scores and outputs, both MLP products and the logits depend on it;
//! - W (`w`), the VPU's lanes x sublanes: every fp32 sum runs in the order
//!   of `docs/numerics.md#reductions`, so the layer norms' mean and
//!   variance and softmax's denominator depend on it.
//!
//! Nothing else is free: the caches hold the bf16 rows the contract stores,
//! and the step's operations run in the contract's order.

use crate::mxu::matmul_bf16;
use crate::numerics::{
    add32, div32, exp32, i32_to_f32, is_nan_f32, mul32, narrow_bf16, recip32, relu_f32, rsqrt32,
    rule7_order_key, sub32, F32_ONE,
};
use crate::vpu::{reduce_max_f32, reduce_sum_f32};
use config::gpt::GptModel;

/// `layernorm(x; g, b, eps)` of `docs/numerics.md#softmax-and-layer-normalization`,
/// its two sums in the VPU's order for W = `w`:
/// inv = div32(1.0, D); mean = mul32(sum x, inv); d_i = sub32(x_i, mean);
/// var = mul32(sum mul32(d_i, d_i), inv); r = rsqrt(add32(var, eps));
/// y_i = add32(mul32(mul32(d_i, r), g_i), b_i).
///
/// # Panics
///
/// If `x` is empty, `g` or `b` differs from it in length, or `w` is not a
/// power of two.
pub fn layernorm(x: &[u32], g: &[u32], b: &[u32], eps: u32, w: usize) -> Vec<u32> {
    assert!(
        g.len() == x.len() && b.len() == x.len(),
        "layernorm of {} values with {} gains and {} biases",
        x.len(),
        g.len(),
        b.len()
    );
    let width = i32::try_from(x.len()).expect("a layer norm over at most 2^31 - 1 values");
    let inv = div32(F32_ONE, i32_to_f32(width));
    let mean = mul32(reduce_sum_f32(x, w), inv);
    let d: Vec<u32> = x.iter().map(|&xi| sub32(xi, mean)).collect();
    let squares: Vec<u32> = d.iter().map(|&di| mul32(di, di)).collect();
    let var = mul32(reduce_sum_f32(&squares, w), inv);
    let r = rsqrt32(add32(var, eps));
    d.iter()
        .zip(g.iter().zip(b))
        .map(|(&di, (&gi, &bi))| add32(mul32(mul32(di, r), gi), bi))
        .collect()
}

/// `softmax(s)` of `docs/numerics.md#softmax-and-layer-normalization`, its
/// denominator summed in the VPU's order for W = `w`: m = the maximum by
/// `max32` (rule 7: any NaN makes it the canonical NaN, -0 is below +0;
/// order does not matter); e_j = exp(sub32(s_j, m)); z = the sum of the e_j;
/// r = recip(z); p_j = mul32(e_j, r).
///
/// # Panics
///
/// If `s` is empty or `w` is not a power of two.
pub fn softmax(s: &[u32], w: usize) -> Vec<u32> {
    let m = reduce_max_f32(s);
    let e: Vec<u32> = s.iter().map(|&sj| exp32(sub32(sj, m))).collect();
    let r = recip32(reduce_sum_f32(&e, w));
    e.iter().map(|&ej| mul32(ej, r)).collect()
}

/// The next token (`docs/numerics.md#transformer-step`, step 4): the first
/// index of the largest logit in rule 7's order (-0 below +0, a subnormal
/// read as the zero of its sign, so it ties with that zero), NaNs skipped.
///
/// The contract leaves a step whose logits are all NaN undefined; this
/// model then chooses token 0, as it does for an empty slice.
pub fn argmax_first(logits: &[u32]) -> u32 {
    let mut best: Option<(usize, i64)> = None;
    for (i, &x) in logits.iter().enumerate() {
        if is_nan_f32(x) {
            continue;
        }
        let key = rule7_order_key(x);
        if best.is_none_or(|(_, k)| key > k) {
            best = Some((i, key));
        }
    }
    best.map_or(0, |(i, _)| i as u32)
}

/// `narrow_bf16` of every element: the contract's bf(v).
fn bf(v: &[u32]) -> Vec<u16> {
    v.iter().map(|&x| narrow_bf16(x)).collect()
}

/// `add32` element by element: the contract's u + w of two vectors.
fn add_vectors(a: &[u32], b: &[u32]) -> Vec<u32> {
    assert_eq!(a.len(), b.len(), "vector add of different lengths");
    a.iter().zip(b).map(|(&x, &y)| add32(x, y)).collect()
}

/// The one-token decoder of `docs/numerics.md#transformer-step` on an MXU
/// of R = `rows_r` rows and a VPU of W = `w` elements per vector. It holds,
/// for every layer, the key and value caches: one bf16 row of D per
/// position fed so far.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    model: &'a GptModel,
    rows_r: usize,
    w: usize,
    /// Per layer, the key rows K_l\[0\], K_l\[1\], ... (D each), concatenated.
    keys: Vec<Vec<u16>>,
    /// Per layer, the value rows V_l\[0\], V_l\[1\], ..., concatenated.
    values: Vec<Vec<u16>>,
}

impl<'a> Decoder<'a> {
    /// A decoder with empty caches. Errors: `model`'s shapes are wrong,
    /// `rows_r` is 0, or `w` is not a power of two.
    pub fn new(model: &'a GptModel, rows_r: usize, w: usize) -> Result<Decoder<'a>, String> {
        model.check_shapes()?;
        if rows_r == 0 {
            return Err("the MXU's R must be at least 1".into());
        }
        if !w.is_power_of_two() {
            return Err(format!(
                "the VPU's W = lanes x sublanes must be a power of two, got {w}"
            ));
        }
        let layers = model.dims.layers();
        Ok(Decoder {
            model,
            rows_r,
            w,
            keys: vec![Vec::new(); layers],
            values: vec![Vec::new(); layers],
        })
    }

    /// The positions fed so far (the caches' length in rows).
    pub fn positions(&self) -> usize {
        self.keys
            .first()
            .map_or(0, |k| k.len() / self.model.dims.d_model())
    }

    /// mm(a, M) for the row `a` and the row-major `k` x `n` matrix `m`.
    fn mm(&self, a: &[u16], m: &[u16], n: usize) -> Vec<u32> {
        matmul_bf16(a, m, 1, a.len(), n, self.rows_r)
    }

    /// One step: feeds `token` at position `pos`, stores its keys and
    /// values in the caches and returns the logits (fp32, V of them).
    ///
    /// # Panics
    ///
    /// If `token` is not below V, `pos` is not the number of positions fed
    /// so far ([`Decoder::positions`]), or `pos` is not below Tmax.
    pub fn step(&mut self, token: u32, pos: usize) -> Vec<u32> {
        let model = self.model;
        let dims = model.dims;
        let (d, f, v) = (dims.d_model(), dims.d_ff(), dims.vocab());
        let (heads, dh) = (dims.heads(), dims.head_width());
        assert!(
            (token as usize) < v,
            "token {token} is not below the vocabulary's {v}"
        );
        assert_eq!(pos, self.positions(), "positions are fed in order from 0");
        assert!(
            pos < dims.context(),
            "position {pos} is not below the context's {}",
            dims.context()
        );
        let t = token as usize;

        // 1. x = tok[t] + pos_emb[pos].
        let mut x = add_vectors(
            &model.tok_emb[t * d..(t + 1) * d],
            &model.pos_emb[pos * d..(pos + 1) * d],
        );

        // 2. The layers, in order.
        for (l, layer) in model.layers.iter().enumerate() {
            let h = bf(&layernorm(
                &x,
                &layer.ln1_g,
                &layer.ln1_b,
                model.eps,
                self.w,
            ));
            let q = self.mm(&h, &layer.wq, d);
            let k = self.mm(&h, &layer.wk, d);
            let val = self.mm(&h, &layer.wv, d);
            self.keys[l].extend(bf(&k));
            self.values[l].extend(bf(&val));

            let q = bf(&q);
            let rows = pos + 1;
            let mut o = Vec::with_capacity(d);
            for j in 0..heads {
                let cols = j * dh..(j + 1) * dh;
                // Kt, Dh x (pos + 1): column i is K_l[i]_j.
                let mut kt = vec![0u16; dh * rows];
                for i in 0..rows {
                    let key = &self.keys[l][i * d..(i + 1) * d];
                    for (c, &kc) in key[cols.clone()].iter().enumerate() {
                        kt[c * rows + i] = kc;
                    }
                }
                let scores: Vec<u32> = self
                    .mm(&q[cols.clone()], &kt, rows)
                    .into_iter()
                    .map(|s| mul32(s, model.scale))
                    .collect();
                let p = bf(&softmax(&scores, self.w));
                // Vj, (pos + 1) x Dh: row i is V_l[i]_j.
                let vj: Vec<u16> = (0..rows)
                    .flat_map(|i| self.values[l][i * d + cols.start..i * d + cols.end].to_vec())
                    .collect();
                o.extend(self.mm(&p, &vj, dh));
            }
            x = add_vectors(&x, &self.mm(&bf(&o), &layer.wo, d));

            let h = bf(&layernorm(
                &x,
                &layer.ln2_g,
                &layer.ln2_b,
                model.eps,
                self.w,
            ));
            let u: Vec<u32> = add_vectors(&self.mm(&h, &layer.w1, f), &layer.b1)
                .into_iter()
                .map(relu_f32)
                .collect();
            // The bias joins the matmul's output first, that sum joins x.
            let mlp = add_vectors(&self.mm(&bf(&u), &layer.w2, d), &layer.b2);
            x = add_vectors(&x, &mlp);
        }

        // 3. The logits.
        let h = bf(&layernorm(
            &x,
            &model.lnf_g,
            &model.lnf_b,
            model.eps,
            self.w,
        ));
        self.mm(&h, &model.wout, v)
    }
}

/// Generation (`docs/numerics.md#transformer-step`): the prompt's tokens
/// are fed at positions 0 .. n-1; the logits after the last prompt token
/// choose generated token 0 ([`argmax_first`]), which is fed at position
/// n, and so on. Returns the `steps` generated tokens and, for each, the
/// logits it was chosen from.
///
/// Errors: an empty prompt, `steps` of 0, a prompt token not below V
/// (naming its index), n + steps - 1 above Tmax (the last generated token
/// is chosen, not fed), `rows_r` of 0, `w` not a power of two, or wrong
/// shapes in `model`.
pub fn generate(
    model: &GptModel,
    prompt: &[u32],
    steps: usize,
    rows_r: usize,
    w: usize,
) -> Result<(Vec<u32>, Vec<Vec<u32>>), String> {
    let dims = model.dims;
    config::gpt::check_generation(dims.vocab(), dims.context(), prompt, steps)?;
    let mut decoder = Decoder::new(model, rows_r, w)?;
    let mut logits = Vec::new();
    for (pos, &t) in prompt.iter().enumerate() {
        logits = decoder.step(t, pos);
    }
    let mut tokens = Vec::with_capacity(steps);
    let mut chosen_from = Vec::with_capacity(steps);
    for s in 0..steps {
        let next = argmax_first(&logits);
        tokens.push(next);
        chosen_from.push(std::mem::take(&mut logits));
        if s + 1 < steps {
            logits = decoder.step(next, prompt.len() + s);
        }
    }
    Ok((tokens, chosen_from))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAN: u32 = 0x7FC0_0000;
    const ONE: u32 = 0x3F80_0000;
    const TWO: u32 = 0x4000_0000;
    const NEG_ZERO: u32 = 0x8000_0000;
    const SUBNORMAL: u32 = 0x0000_0001;
    const NEG_SUBNORMAL: u32 = 0x8000_0001;
    const NEG_INF: u32 = 0xFF80_0000;

    #[test]
    fn argmax_takes_the_first_largest_in_rule_7_order() {
        assert_eq!(argmax_first(&[ONE, TWO, TWO]), 1);
        assert_eq!(argmax_first(&[NAN, ONE, NAN]), 1);
        assert_eq!(argmax_first(&[NEG_ZERO, 0]), 1);
        assert_eq!(argmax_first(&[0, NEG_ZERO]), 0);
        // A subnormal is the zero of its sign, so it ties with that zero.
        assert_eq!(argmax_first(&[SUBNORMAL, 0]), 0);
        assert_eq!(argmax_first(&[0, SUBNORMAL]), 0);
        assert_eq!(argmax_first(&[NEG_ZERO, SUBNORMAL]), 1);
        assert_eq!(argmax_first(&[NEG_SUBNORMAL, NEG_ZERO]), 0);
        assert_eq!(argmax_first(&[NEG_INF, NAN]), 0);
        assert_eq!(argmax_first(&[0xBF80_0000, NEG_INF, 0xC000_0000]), 0);
        // Every logit NaN: token 0 (the contract leaves the step undefined).
        assert_eq!(argmax_first(&[NAN, 0x7F80_0001, 0xFFC0_0000]), 0);
    }
}
