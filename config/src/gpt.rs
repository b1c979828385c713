//! A decoder-only transformer ("GPT") as the numerics contract defines it
//! (`docs/numerics.md#transformer-step`): its sizes ([`GptDims`]) and its
//! parameters ([`GptModel`], one [`GptLayer`] per layer).
//!
//! This is the one description of such a model that every tool shares: the
//! model-folder loader (`compiler::gpt::load_gpt`) builds it, the golden
//! model (`golden::gpt`) runs it, and the compiler will lower it. Keeping it
//! here, beside the configuration types, lets all of them agree on the
//! layout without depending on each other.
//!
//! Values are bit patterns, as everywhere in the contract: fp32 as `u32`,
//! bf16 as `u16`. Matrices are row-major with the shapes the contract gives
//! (a row vector times the matrix: `[inputs, outputs]`). Nothing here
//! computes; [`GptModel::check_shapes`] only says whether every vector has
//! the length its dimensions require.
//!
//! The sizes' TOML form ([`GptDims::from_toml`], [`GptDims::to_toml`]) is
//! the `config.toml` of a model folder: the six integer keys
//! [`GPT_DIMS_KEYS`], nothing else.

use std::fmt;

/// The keys of a model folder's `config.toml`, in the order
/// [`GptDims::to_toml`] writes them.
pub const GPT_DIMS_KEYS: [&str; 6] = ["vocab", "d_model", "heads", "d_ff", "layers", "context"];

/// The sizes of a transformer: vocabulary V, width D, H heads, MLP width F,
/// L layers, context length Tmax. A value that exists has been validated
/// ([`GptDims::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GptDims {
    vocab: usize,
    d_model: usize,
    heads: usize,
    d_ff: usize,
    layers: usize,
    context: usize,
}

/// Whether a greedy generation of `steps` tokens from `prompt` can run on a
/// model of `vocab` tokens and `context` positions: the checks every
/// generator (the golden model, the compiler's host loop) makes alike.
/// Errors (one line): an empty prompt, `steps` of 0, a prompt token not
/// below `vocab` (naming its index), or n + steps - 1 positions (the last
/// generated token is chosen, not fed) above `context`.
pub fn check_generation(
    vocab: usize,
    context: usize,
    prompt: &[u32],
    steps: usize,
) -> Result<(), String> {
    if prompt.is_empty() {
        return Err("the prompt must hold at least one token".into());
    }
    if steps == 0 {
        return Err("generation needs at least one step".into());
    }
    if let Some((i, &t)) = prompt
        .iter()
        .enumerate()
        .find(|&(_, &t)| t as usize >= vocab)
    {
        return Err(format!(
            "prompt token {i} is {t}, not below the vocabulary's {vocab}"
        ));
    }
    let fed = prompt.len() + steps - 1;
    if fed > context {
        return Err(format!(
            "{} prompt tokens and {steps} generated tokens need {fed} positions, \
             the context holds {context}",
            prompt.len()
        ));
    }
    Ok(())
}

impl GptDims {
    /// Checks the sizes: every one at least 1 and at most `u32::MAX` (token
    /// ids and positions are 32-bit), and `heads` divides `d_model`.
    pub fn new(
        vocab: usize,
        d_model: usize,
        heads: usize,
        d_ff: usize,
        layers: usize,
        context: usize,
    ) -> Result<GptDims, String> {
        let values = [vocab, d_model, heads, d_ff, layers, context];
        for (key, value) in GPT_DIMS_KEYS.iter().zip(values) {
            if value < 1 || value > u32::MAX as usize {
                return Err(format!(
                    "{key} = {value} is out of range (1 ..= {})",
                    u32::MAX
                ));
            }
        }
        if !d_model.is_multiple_of(heads) {
            return Err(format!(
                "heads = {heads} does not divide d_model = {d_model}"
            ));
        }
        Ok(GptDims {
            vocab,
            d_model,
            heads,
            d_ff,
            layers,
            context,
        })
    }

    /// V, the number of tokens.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// D, the width of the residual stream.
    pub fn d_model(&self) -> usize {
        self.d_model
    }

    /// H, the number of attention heads.
    pub fn heads(&self) -> usize {
        self.heads
    }

    /// F, the MLP's hidden width.
    pub fn d_ff(&self) -> usize {
        self.d_ff
    }

    /// L, the number of layers.
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// Tmax, the number of positions.
    pub fn context(&self) -> usize {
        self.context
    }

    /// Dh = D / H, the width of one head.
    pub fn head_width(&self) -> usize {
        self.d_model / self.heads
    }

    /// The number of parameters: both embeddings, every layer norm's gain
    /// and bias, every matrix and every bias (eps and the attention scale
    /// are not counted).
    pub fn params(&self) -> u64 {
        let [v, d, f, l, t] = [
            self.vocab,
            self.d_model,
            self.d_ff,
            self.layers,
            self.context,
        ]
        .map(|x| x as u64);
        let per_layer = 4 * d + 4 * d * d + d * f + f + f * d + d;
        v * d + t * d + l * per_layer + 2 * d + d * v
    }

    /// The sizes from the text of a model folder's `config.toml`: the keys
    /// of [`GPT_DIMS_KEYS`], each an integer, no other key. The error is
    /// one line naming the key.
    pub fn from_toml(text: &str) -> Result<GptDims, String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| crate::one_line(&e.to_string()))?;
        if let Some(key) = table.keys().find(|k| !GPT_DIMS_KEYS.contains(&k.as_str())) {
            return Err(format!(
                "unknown key '{key}' (the keys are {})",
                GPT_DIMS_KEYS.join(", ")
            ));
        }
        let mut values = [0usize; 6];
        for (slot, key) in values.iter_mut().zip(GPT_DIMS_KEYS) {
            let value = table
                .get(key)
                .ok_or_else(|| format!("missing key '{key}'"))?;
            let n = value.as_integer().ok_or_else(|| {
                format!(
                    "key '{key}' must be an integer, got the {} {value}",
                    value.type_str()
                )
            })?;
            *slot = match usize::try_from(n) {
                Ok(n) if n >= 1 && n <= u32::MAX as usize => n,
                _ => {
                    return Err(format!(
                        "key '{key}' = {n} is out of range (1 ..= {})",
                        u32::MAX
                    ))
                }
            };
        }
        let [vocab, d_model, heads, d_ff, layers, context] = values;
        GptDims::new(vocab, d_model, heads, d_ff, layers, context)
    }

    /// The `config.toml` text [`GptDims::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        let values = [
            self.vocab,
            self.d_model,
            self.heads,
            self.d_ff,
            self.layers,
            self.context,
        ];
        GPT_DIMS_KEYS
            .iter()
            .zip(values)
            .map(|(key, value)| format!("{key} = {value}\n"))
            .collect()
    }
}

impl fmt::Display for GptDims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "vocab {} d_model {} heads {} d_ff {} layers {} context {}",
            self.vocab, self.d_model, self.heads, self.d_ff, self.layers, self.context
        )
    }
}

/// One layer's parameters (D = d_model, F = d_ff). The names follow the
/// contract: `ln1_*` are g1_l, b1_l; `ln2_*` are g2_l, b2_l; `b1` and `b2`
/// are the MLP biases c1_l and c2_l.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptLayer {
    /// Attention layer norm's gain, fp32 \[D\].
    pub ln1_g: Vec<u32>,
    /// Attention layer norm's bias, fp32 \[D\].
    pub ln1_b: Vec<u32>,
    /// MLP layer norm's gain, fp32 \[D\].
    pub ln2_g: Vec<u32>,
    /// MLP layer norm's bias, fp32 \[D\].
    pub ln2_b: Vec<u32>,
    /// Query projection, bf16 \[D, D\].
    pub wq: Vec<u16>,
    /// Key projection, bf16 \[D, D\].
    pub wk: Vec<u16>,
    /// Value projection, bf16 \[D, D\].
    pub wv: Vec<u16>,
    /// Output projection, bf16 \[D, D\].
    pub wo: Vec<u16>,
    /// MLP up projection, bf16 \[D, F\].
    pub w1: Vec<u16>,
    /// MLP up bias, fp32 \[F\].
    pub b1: Vec<u32>,
    /// MLP down projection, bf16 \[F, D\].
    pub w2: Vec<u16>,
    /// MLP down bias, fp32 \[D\].
    pub b2: Vec<u32>,
}

/// A whole model (V = vocab, D = d_model, Tmax = context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptModel {
    pub dims: GptDims,
    /// The layer norms' epsilon, fp32.
    pub eps: u32,
    /// The attention scale c, fp32 (usually 1 / sqrt(Dh)).
    pub scale: u32,
    /// Token embeddings, fp32 \[V, D\].
    pub tok_emb: Vec<u32>,
    /// Position embeddings, fp32 \[Tmax, D\].
    pub pos_emb: Vec<u32>,
    /// The layers, first to last (L of them).
    pub layers: Vec<GptLayer>,
    /// Final layer norm's gain, fp32 \[D\].
    pub lnf_g: Vec<u32>,
    /// Final layer norm's bias, fp32 \[D\].
    pub lnf_b: Vec<u32>,
    /// Output projection to the logits, bf16 \[D, V\].
    pub wout: Vec<u16>,
}

impl GptModel {
    /// Checks that there are L layers and that every vector has the length
    /// its dimensions require; the error names the first that does not.
    pub fn check_shapes(&self) -> Result<(), String> {
        let dims = &self.dims;
        let (v, d, f, t) = (dims.vocab, dims.d_model, dims.d_ff, dims.context);
        fn check(name: &str, len: usize, shape: &[usize]) -> Result<(), String> {
            let want: usize = shape.iter().product();
            if len == want {
                Ok(())
            } else {
                Err(format!(
                    "{name} holds {len} values, expected {want} (shape {shape:?})"
                ))
            }
        }
        if self.layers.len() != dims.layers {
            return Err(format!(
                "the model has {} layers, its dimensions say {}",
                self.layers.len(),
                dims.layers
            ));
        }
        check("tok_emb", self.tok_emb.len(), &[v, d])?;
        check("pos_emb", self.pos_emb.len(), &[t, d])?;
        for (l, layer) in self.layers.iter().enumerate() {
            let name = |part: &str| format!("layer{l}_{part}");
            check(&name("ln1_g"), layer.ln1_g.len(), &[d])?;
            check(&name("ln1_b"), layer.ln1_b.len(), &[d])?;
            check(&name("ln2_g"), layer.ln2_g.len(), &[d])?;
            check(&name("ln2_b"), layer.ln2_b.len(), &[d])?;
            check(&name("wq"), layer.wq.len(), &[d, d])?;
            check(&name("wk"), layer.wk.len(), &[d, d])?;
            check(&name("wv"), layer.wv.len(), &[d, d])?;
            check(&name("wo"), layer.wo.len(), &[d, d])?;
            check(&name("w1"), layer.w1.len(), &[d, f])?;
            check(&name("b1"), layer.b1.len(), &[f])?;
            check(&name("w2"), layer.w2.len(), &[f, d])?;
            check(&name("b2"), layer.b2.len(), &[d])?;
        }
        check("lnf_g", self.lnf_g.len(), &[d])?;
        check("lnf_b", self.lnf_b.len(), &[d])?;
        check("wout", self.wout.len(), &[d, v])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_are_validated_and_the_error_names_the_values() {
        assert!(GptDims::new(16, 8, 2, 12, 1, 4).is_ok());
        let e = GptDims::new(16, 8, 3, 12, 1, 4).unwrap_err();
        assert!(e.contains("heads = 3") && e.contains("d_model = 8"), "{e}");
        let e = GptDims::new(16, 8, 2, 0, 1, 4).unwrap_err();
        assert!(e.contains("d_ff = 0"), "{e}");
    }

    #[test]
    fn params_counts_every_vector() {
        // V=5, D=4, H=2, F=3, L=2, Tmax=6, counted by hand: tok 20, pos 24,
        // per layer 4*4 + 4*16 + 12 + 3 + 12 + 4 = 111, final norm 8, wout 20.
        let dims = GptDims::new(5, 4, 2, 3, 2, 6).unwrap();
        assert_eq!(dims.params(), 20 + 24 + 2 * 111 + 8 + 20);
        assert_eq!(dims.head_width(), 2);
    }

    #[test]
    fn toml_round_trips_and_errors_name_the_key() {
        let dims = GptDims::new(7, 6, 3, 5, 2, 9).unwrap();
        assert_eq!(GptDims::from_toml(&dims.to_toml()).unwrap(), dims);
        let text = dims.to_toml();
        let missing = text.replace("heads = 3\n", "");
        assert_eq!(
            GptDims::from_toml(&missing).unwrap_err(),
            "missing key 'heads'"
        );
        let e = GptDims::from_toml(&format!("{text}extra = 1\n")).unwrap_err();
        assert!(e.starts_with("unknown key 'extra'"), "{e}");
        let e = GptDims::from_toml(&text.replace("d_ff = 5", "d_ff = 5.0")).unwrap_err();
        assert!(e.contains("'d_ff' must be an integer"), "{e}");
        let e = GptDims::from_toml(&text.replace("vocab = 7", "vocab = -1")).unwrap_err();
        assert!(e.contains("'vocab' = -1 is out of range"), "{e}");
        let e =
            GptDims::from_toml(&text.replace("context = 9", "context = 4294967296")).unwrap_err();
        assert!(e.contains("'context' = 4294967296 is out of range"), "{e}");
        assert!(!GptDims::from_toml("vocab = [").unwrap_err().contains('\n'));
    }

    #[test]
    fn check_shapes_names_the_first_wrong_vector() {
        let dims = GptDims::new(3, 2, 1, 4, 1, 2).unwrap();
        let layer = GptLayer {
            ln1_g: vec![0; 2],
            ln1_b: vec![0; 2],
            ln2_g: vec![0; 2],
            ln2_b: vec![0; 2],
            wq: vec![0; 4],
            wk: vec![0; 4],
            wv: vec![0; 4],
            wo: vec![0; 4],
            w1: vec![0; 8],
            b1: vec![0; 4],
            w2: vec![0; 8],
            b2: vec![0; 2],
        };
        let mut model = GptModel {
            dims,
            eps: 0,
            scale: 0,
            tok_emb: vec![0; 6],
            pos_emb: vec![0; 4],
            layers: vec![layer],
            lnf_g: vec![0; 2],
            lnf_b: vec![0; 2],
            wout: vec![0; 6],
        };
        assert_eq!(model.check_shapes(), Ok(()));
        model.layers[0].w2.pop();
        let e = model.check_shapes().unwrap_err();
        assert!(e.starts_with("layer0_w2 holds 7 values, expected 8"), "{e}");
        model.layers.clear();
        assert!(model.check_shapes().unwrap_err().contains("0 layers"));
    }
}
