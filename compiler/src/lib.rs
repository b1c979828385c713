//! The TensorCore compiler: a quantized MLP and a batch size in, a program
//! and the memory images it needs out.
//!
//! # What it compiles
//!
//! An [`Mlp`] of layers i = 1..L, each `w_i` int8 [in_i, out_i], `b_i` int32
//! \[out_i\] and, for every layer but the last, a requantization (multiplier,
//! shift, zero point). The semantics: acc = wrap32(h @ w_i + b_i); a hidden
//! layer gives h = max(requant_int8(acc), zp) as int8, the last layer the
//! int32 logits.
//!
//! # How
//!
//! The instruction set and its timing are `hw/tensorcore`'s (words in
//! `config::tensorcore_isa`). The compiler decides the layouts and the order:
//!
//! - **Weights**: every layer is cut into R x C tiles (ceil(in/R) k-tiles by
//!   ceil(out/C) n-tiles, zero-padded); tile (n, k) of layer i sits at weight
//!   row `base_i + (n * k_tiles + k) * R`, its rows bottom (k = R-1) first,
//!   as the MXU's weight port takes them. Biases: one bias row per n-tile.
//! - **Batch**: the batch is cut into blocks of B rows that fit the unified
//!   buffer. Activations of a block are stored as k-tile slabs (slab t, row m
//!   holds features tR..tR+R-1 of batch row m, at `region + t * B + m`).
//!   Layers alternate between two regions (layer 1's input in region A, its
//!   output in B, layer 2's output in A, ...), so one batch row needs the
//!   largest odd layer's input slabs plus the largest even layer's.
//! - **Passes**: a layer runs over blocks of P = min(rows left, H) batch
//!   rows and groups of G = max(1, H / P) n-tiles, H = acc_rows / 2, as
//!   `config::mxu_plan` cuts matmuls over an accumulator of H rows: per
//!   group, each n-tile's k-tiles in order (the first overwrites the
//!   accumulator rows, the rest add), then one `ACT` per n-tile (requantize
//!   and ReLU into the next region, or int32 logits to the host output
//!   window). Passes alternate between the accumulator's two halves, so the
//!   activation unit drains one pass while the next one's matmuls run. A
//!   layer's first `MM` carries the wait flag: it reads what the previous
//!   layer's `ACT`s wrote.
//! - **Weight prefetch**: the MMs take their tiles from the weight stream in
//!   program order; the program opens with `RW` of the first two tiles, and
//!   the MM of tile j prefetches tile j + 2. So the next tile's rows load
//!   while the current one streams, across passes, `ACT`s, layers and batch
//!   blocks, and the weight queue never holds more than three reads.
//! - **Host windows**: input row `t * N + m` holds X[m][tR .. tR+R-1]
//!   (zero-padded); output row `t * N + m` holds logits[m][tC .. tC+C-1].
//!   [`Program::pack_input`] and [`Program::unpack_output`] convert.
//!
//! A model that does not fit gets a [`CompileError`] naming the layer and
//! the memory, with the numbers.
//!
//! [`tensorcore2`] compiles a transformer ([`config::GptModel`]) for
//! TensorCore v2: memory images, a setup program and a program per token
//! step; [`tensorcore2_mlp`] the quantized MLPs above for it.
//!
//! [`load_model`] reads a model folder (`w{i}.npy`, `b{i}.npy`, `rq{i}.npy`)
//! for every tool that takes one: `sim mlp` and `systole-host mlp`.

pub mod gpt;
pub mod tensorcore2;
pub mod tensorcore2_mlp;

use config::tensorcore_isa::{Activation, Instr, ADDR_BITS};
use config::TensorCoreConfig;
use std::fmt;
use std::path::Path;

/// Why a model was refused; one line, naming the layer where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError(pub String);

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CompileError {}

fn err<T>(msg: String) -> Result<T, CompileError> {
    Err(CompileError(msg))
}

/// A hidden layer's requantization (`docs/numerics.md#requantization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requant {
    /// Q31 multiplier, > 0.
    pub mult: i32,
    /// Rounding right shift, 0..=31.
    pub shift: u32,
    /// Zero point of the int8 output (and the ReLU's floor).
    pub zp: i8,
}

impl Requant {
    /// From the three int32 of an `rq{i}.npy` file: (multiplier, shift, zero
    /// point), checked.
    pub fn from_i32s(mult: i32, shift: i32, zp: i32) -> Result<Requant, String> {
        if mult <= 0 {
            return Err(format!("the multiplier must be > 0, got {mult}"));
        }
        if !(0..=31).contains(&shift) {
            return Err(format!("the shift must be in 0..=31, got {shift}"));
        }
        let zp = i8::try_from(zp)
            .map_err(|_| format!("the zero point must be in -128..=127, got {zp}"))?;
        Ok(Requant {
            mult,
            shift: shift as u32,
            zp,
        })
    }
}

/// One fully connected layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// in_i.
    pub inputs: usize,
    /// out_i.
    pub outputs: usize,
    /// w_i, row-major \[inputs\]\[outputs\].
    pub w: Vec<i8>,
    /// b_i, \[outputs\].
    pub b: Vec<i32>,
    /// Requantization of a hidden layer; `None` for the last.
    pub rq: Option<Requant>,
}

/// A quantized MLP whose layers chain (checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mlp {
    layers: Vec<Layer>,
}

impl Mlp {
    /// Checks that the layers chain: sizes >= 1, w and b of the stated
    /// sizes, in_(i+1) = out_i, a requantization on every layer but the last.
    pub fn new(layers: Vec<Layer>) -> Result<Mlp, CompileError> {
        if layers.is_empty() {
            return err("a model needs at least one layer".into());
        }
        let last = layers.len();
        for (i, l) in layers.iter().enumerate() {
            let n = i + 1;
            if l.inputs == 0 || l.outputs == 0 {
                return err(format!(
                    "layer {n}: sizes must be >= 1, got {}x{}",
                    l.inputs, l.outputs
                ));
            }
            if l.w.len() != l.inputs * l.outputs {
                return err(format!(
                    "layer {n}: w has {} elements, expected {} x {}",
                    l.w.len(),
                    l.inputs,
                    l.outputs
                ));
            }
            if l.b.len() != l.outputs {
                return err(format!(
                    "layer {n}: b has {} elements, expected {}",
                    l.b.len(),
                    l.outputs
                ));
            }
            if i > 0 && layers[i - 1].outputs != l.inputs {
                return err(format!(
                    "layer {n}: takes {} inputs but layer {} gives {}",
                    l.inputs,
                    n - 1,
                    layers[i - 1].outputs
                ));
            }
            match (&l.rq, n == last) {
                (None, false) => {
                    return err(format!("layer {n}: a hidden layer needs a requantization"))
                }
                (Some(_), true) => {
                    return err(format!(
                        "layer {n}: the last layer gives int32 logits, it takes no requantization"
                    ))
                }
                _ => {}
            }
        }
        Ok(Mlp { layers })
    }

    /// The layers.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// in_1.
    pub fn inputs(&self) -> usize {
        self.layers[0].inputs
    }

    /// out_L.
    pub fn outputs(&self) -> usize {
        self.layers.last().expect("a model has layers").outputs
    }

    /// Useful multiply-accumulates per batch row: sum of in_i * out_i.
    pub fn macs_per_row(&self) -> u64 {
        self.layers
            .iter()
            .map(|l| (l.inputs * l.outputs) as u64)
            .sum()
    }
}

/// A compiled model: the program, the memory images, and the host windows'
/// layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The configuration it was compiled for.
    pub cfg: TensorCoreConfig,
    /// The instructions, ending with `HALT`.
    pub instrs: Vec<Instr>,
    /// Weight memory image, `weight_rows_used` rows of C int8.
    pub weight_mem: Vec<i8>,
    /// Bias memory image, rows of C int32.
    pub bias_mem: Vec<i32>,
    /// Batch rows N.
    pub batch: usize,
    /// in_1.
    pub inputs: usize,
    /// out_L.
    pub outputs: usize,
    /// Batch rows per unified-buffer block, B.
    pub block_rows: usize,
    /// Unified-buffer rows the program uses.
    pub ub_rows_used: usize,
    /// Useful multiply-accumulates (batch x sum of in_i * out_i).
    pub macs: u64,
}

impl Program {
    /// The instruction words.
    pub fn words(&self) -> Vec<u128> {
        self.instrs.iter().map(Instr::encode).collect()
    }

    fn r(&self) -> usize {
        self.cfg.rows() as usize
    }

    fn c(&self) -> usize {
        self.cfg.cols() as usize
    }

    /// Rows of the host input window the program reads (R int8 each).
    pub fn host_in_rows(&self) -> usize {
        self.inputs.div_ceil(self.r()) * self.batch
    }

    /// Rows of the host output window the program writes (C int32 each).
    pub fn host_out_rows(&self) -> usize {
        self.outputs.div_ceil(self.c()) * self.batch
    }

    /// X (row-major \[batch\]\[inputs\]) as the host input window, row-major
    /// \[[`host_in_rows`](Self::host_in_rows)\]\[R\].
    ///
    /// # Panics
    ///
    /// If `x` is not batch x inputs long.
    pub fn pack_input(&self, x: &[i8]) -> Vec<i8> {
        assert_eq!(x.len(), self.batch * self.inputs, "X has the wrong size");
        let r = self.r();
        let mut out = vec![0i8; self.host_in_rows() * r];
        for m in 0..self.batch {
            for f in 0..self.inputs {
                let (t, k) = (f / r, f % r);
                out[(t * self.batch + m) * r + k] = x[m * self.inputs + f];
            }
        }
        out
    }

    /// The host output window (row-major \[[`host_out_rows`](Self::host_out_rows)\]\[C\])
    /// as logits, row-major \[batch\]\[outputs\].
    ///
    /// # Panics
    ///
    /// If `window` is shorter than the window.
    pub fn unpack_output(&self, window: &[i32]) -> Vec<i32> {
        let c = self.c();
        assert!(
            window.len() >= self.host_out_rows() * c,
            "the output window is too short"
        );
        let mut out = vec![0i32; self.batch * self.outputs];
        for m in 0..self.batch {
            for f in 0..self.outputs {
                let (t, j) = (f / c, f % c);
                out[m * self.outputs + f] = window[(t * self.batch + m) * c + j];
            }
        }
        out
    }
}

/// Reads an MLP from `dir`: for i = 1, 2, ... while `w{i}.npy` exists,
/// `w{i}.npy` int8 \[in_i, out_i\], `b{i}.npy` int32 \[out_i\], and for every
/// layer but the last `rq{i}.npy` int32 \[3\] = (multiplier, shift, zero
/// point). Other files are ignored. Every error is one line naming the file.
pub fn load_model(dir: &Path) -> Result<Mlp, String> {
    if !dir.is_dir() {
        return Err(format!("model folder {} does not exist", dir.display()));
    }
    let count = (1..)
        .take_while(|i| dir.join(format!("w{i}.npy")).exists())
        .count();
    if count == 0 {
        return Err(format!(
            "model folder {} holds no w1.npy (the first layer's weights)",
            dir.display()
        ));
    }
    let mut layers = Vec::with_capacity(count);
    let mut prev_out: Option<usize> = None;
    for i in 1..=count {
        let wpath = dir.join(format!("w{i}.npy"));
        let w = matrix::read::<i8>(&wpath, &format!("w{i}"))?;
        if let Some(p) = prev_out {
            if w.rows != p {
                return Err(format!(
                    "w{i}: {} is {}x{} but layer {} gives {p} outputs",
                    wpath.display(),
                    w.rows,
                    w.cols,
                    i - 1
                ));
            }
        }
        let bpath = dir.join(format!("b{i}.npy"));
        let b = matrix::read_array::<i32>(&bpath, &format!("b{i}"))?;
        if b.shape != [w.cols as u64] {
            return Err(format!(
                "b{i}: {} has shape {:?}, expected [{}] (w{i} has {} columns)",
                bpath.display(),
                b.shape,
                w.cols,
                w.cols
            ));
        }
        let rq = if i < count {
            let rpath = dir.join(format!("rq{i}.npy"));
            let rq = matrix::read_array::<i32>(&rpath, &format!("rq{i}"))?;
            if rq.shape != [3] {
                return Err(format!(
                    "rq{i}: {} has shape {:?}, expected [3] (multiplier, shift, zero point)",
                    rpath.display(),
                    rq.shape
                ));
            }
            Some(
                Requant::from_i32s(rq.data[0], rq.data[1], rq.data[2])
                    .map_err(|e| format!("rq{i}: {}: {e}", rpath.display()))?,
            )
        } else {
            None
        };
        prev_out = Some(w.cols);
        layers.push(Layer {
            inputs: w.rows,
            outputs: w.cols,
            w: w.data,
            b: b.data,
            rq,
        });
    }
    Mlp::new(layers).map_err(|e| e.to_string())
}

/// Lowers `mlp` for a batch of `batch` rows onto `cfg`.
pub fn compile(mlp: &Mlp, batch: usize, cfg: &TensorCoreConfig) -> Result<Program, CompileError> {
    if batch == 0 {
        return err("the batch must hold at least one row".into());
    }
    let r = cfg.rows() as usize;
    let c = cfg.cols() as usize;
    let layers = mlp.layers();
    let k_tiles: Vec<usize> = layers.iter().map(|l| l.inputs.div_ceil(r)).collect();
    let n_tiles: Vec<usize> = layers.iter().map(|l| l.outputs.div_ceil(c)).collect();

    // Weight and bias memory: every tile and bias row once, layer by layer.
    let mut weight_base = Vec::with_capacity(layers.len());
    let mut bias_base = Vec::with_capacity(layers.len());
    let (mut wrows, mut brows) = (0usize, 0usize);
    for (i, l) in layers.iter().enumerate() {
        let tiles = k_tiles[i] * n_tiles[i];
        let need = tiles * r;
        let have = cfg.weight_rows() as usize;
        if wrows + need > have {
            return err(format!(
                "layer {} ({} -> {}) does not fit the weight memory: its {tiles} tiles need {need} rows, \
                 {} of {have} are left after the layers before it",
                i + 1,
                l.inputs,
                l.outputs,
                have - wrows
            ));
        }
        let bhave = cfg.bias_rows() as usize;
        if brows + n_tiles[i] > bhave {
            return err(format!(
                "layer {} ({} -> {}) does not fit the bias memory: it needs {} rows, {} of {bhave} are left",
                i + 1,
                l.inputs,
                l.outputs,
                n_tiles[i],
                bhave - brows
            ));
        }
        weight_base.push(wrows);
        bias_base.push(brows);
        wrows += need;
        brows += n_tiles[i];
    }
    let mut weight_mem = vec![0i8; wrows * c];
    let mut bias_mem = vec![0i32; brows * c];
    for (i, l) in layers.iter().enumerate() {
        for nt in 0..n_tiles[i] {
            for kt in 0..k_tiles[i] {
                let tile = weight_base[i] + (nt * k_tiles[i] + kt) * r;
                for row in 0..r {
                    // Bottom row first: the MXU's weight port order.
                    let k = kt * r + (r - 1 - row);
                    for j in 0..c {
                        let n = nt * c + j;
                        if k < l.inputs && n < l.outputs {
                            weight_mem[(tile + row) * c + j] = l.w[k * l.outputs + n];
                        }
                    }
                }
            }
            for j in 0..c {
                let n = nt * c + j;
                if n < l.outputs {
                    bias_mem[(bias_base[i] + nt) * c + j] = l.b[n];
                }
            }
        }
    }

    // Unified buffer: two regions of activation slabs, layers alternating.
    let slabs_a = (0..layers.len())
        .step_by(2)
        .map(|i| k_tiles[i])
        .max()
        .unwrap_or(0);
    let slabs_b = (1..layers.len())
        .step_by(2)
        .map(|i| k_tiles[i])
        .max()
        .unwrap_or(0);
    let ub = cfg.ub_rows() as usize;
    for (i, l) in layers.iter().enumerate() {
        let own = k_tiles[i]
            + if i + 1 < layers.len() {
                k_tiles[i + 1]
            } else {
                0
            };
        if own > ub {
            return err(format!(
                "layer {} ({} -> {}) does not fit the unified buffer: one batch row needs {own} rows \
                 (its input and output activations in k-tiles of {r}), the buffer has {ub}",
                i + 1,
                l.inputs,
                l.outputs
            ));
        }
    }
    let per_row = slabs_a + slabs_b;
    if per_row > ub {
        return err(format!(
            "the layers' activations do not fit the unified buffer together: one batch row needs \
             {per_row} rows ({slabs_a} for the odd layers' inputs, {slabs_b} for the even ones'), \
             the buffer has {ub}"
        ));
    }
    let max_count = (1usize << config::tensorcore_isa::COUNT_BITS) - 1;
    let block_rows = (ub / per_row).min(batch).min(max_count);
    let region = [0usize, slabs_a * block_rows];

    // Host windows.
    let host_limit = 1usize << ADDR_BITS;
    let (hin, hout) = (k_tiles[0] * batch, n_tiles[layers.len() - 1] * batch);
    if hin > host_limit || hout > host_limit {
        return err(format!(
            "a batch of {batch} rows does not fit the host windows: {hin} input and {hout} output rows, \
             at most {host_limit} each"
        ));
    }

    // The instruction stream, with the MMs' tiles collected for the prefetch.
    enum Item {
        Plain(Instr),
        Mm {
            ub: u32,
            acc: u32,
            rows: u32,
            accumulate: bool,
            wait_act: bool,
            tile: u32,
        },
    }
    let mut items = Vec::new();
    // Passes alternate between the accumulator's halves, so one pass's
    // matmuls run while the activation unit drains the pass before.
    let half = cfg.acc_rows() as usize / 2;
    let mut pass = 0usize;
    let u = |v: usize| u32::try_from(v).expect("addresses fit 32 bits");
    for m0 in (0..batch).step_by(block_rows) {
        let bb = block_rows.min(batch - m0);
        for t in 0..k_tiles[0] {
            items.push(Item::Plain(Instr::ReadHost {
                host: u(t * batch + m0),
                ub: u(region[0] + t * bb),
                rows: u(bb),
            }));
        }
        for (i, l) in layers.iter().enumerate() {
            let (src, dst) = (region[i % 2], region[(i + 1) % 2]);
            // The layer's first matmul reads what the last layer's ACTs wrote.
            let mut wait_act = i > 0;
            for mb in (0..bb).step_by(half) {
                let p = half.min(bb - mb);
                let g = (half / p).max(1);
                for nt0 in (0..n_tiles[i]).step_by(g) {
                    let gn = g.min(n_tiles[i] - nt0);
                    let base = (pass % 2) * half;
                    pass += 1;
                    for gi in 0..gn {
                        let nt = nt0 + gi;
                        for kt in 0..k_tiles[i] {
                            items.push(Item::Mm {
                                ub: u(src + kt * bb + mb),
                                acc: u(base + gi * p),
                                rows: u(p),
                                accumulate: kt > 0,
                                wait_act,
                                tile: u(weight_base[i] + (nt * k_tiles[i] + kt) * r),
                            });
                            wait_act = false;
                        }
                    }
                    for gi in 0..gn {
                        let nt = nt0 + gi;
                        let bias = u(bias_base[i] + nt);
                        items.push(Item::Plain(match l.rq {
                            Some(rq) => Instr::Activate {
                                acc: u(base + gi * p),
                                dest: u(dst + nt * bb + mb),
                                rows: u(p),
                                bias,
                                func: Activation::Requant {
                                    mult: rq.mult,
                                    shift: rq.shift,
                                    zp: rq.zp,
                                    relu: true,
                                },
                            },
                            None => Instr::Activate {
                                acc: u(base + gi * p),
                                dest: u(nt * batch + m0 + mb),
                                rows: u(p),
                                bias,
                                func: Activation::Int32ToHost,
                            },
                        }));
                    }
                }
            }
        }
    }
    let tiles: Vec<u32> = items
        .iter()
        .filter_map(|it| match it {
            Item::Mm { tile, .. } => Some(*tile),
            Item::Plain(_) => None,
        })
        .collect();
    let mut instrs: Vec<Instr> = tiles
        .iter()
        .take(2)
        .map(|&t| Instr::ReadWeights {
            weight: t,
            rows: u(r),
        })
        .collect();
    let mut mm_index = 0;
    for it in items {
        instrs.push(match it {
            Item::Plain(i) => i,
            Item::Mm {
                ub,
                acc,
                rows,
                accumulate,
                wait_act,
                ..
            } => {
                let prefetch = tiles.get(mm_index + 2).copied();
                mm_index += 1;
                Instr::Matmul {
                    ub,
                    acc,
                    rows,
                    accumulate,
                    prefetch,
                    wait_act,
                }
            }
        });
    }
    instrs.push(Instr::Halt);
    Ok(Program {
        cfg: *cfg,
        instrs,
        weight_mem,
        bias_mem,
        batch,
        inputs: mlp.inputs(),
        outputs: mlp.outputs(),
        block_rows,
        ub_rows_used: per_row * block_rows,
        macs: mlp.macs_per_row() * batch as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer of ones and zero biases (a unit requantization when hidden).
    pub(crate) fn layer(inputs: usize, outputs: usize, hidden: bool) -> Layer {
        Layer {
            inputs,
            outputs,
            w: vec![1; inputs * outputs],
            b: vec![0; outputs],
            rq: hidden.then_some(Requant {
                mult: 1 << 30,
                shift: 0,
                zp: 0,
            }),
        }
    }

    #[test]
    fn models_that_do_not_chain_are_refused_naming_the_layer() {
        let e = Mlp::new(vec![layer(4, 3, true), layer(2, 5, false)]).unwrap_err();
        assert!(e.0.starts_with("layer 2:"), "{e}");
        let e = Mlp::new(vec![layer(4, 3, false), layer(3, 5, false)]).unwrap_err();
        assert!(
            e.0.contains("layer 1") && e.0.contains("requantization"),
            "{e}"
        );
        let e = Mlp::new(vec![layer(4, 3, true)]).unwrap_err();
        assert!(e.0.contains("last layer"), "{e}");
        assert!(Mlp::new(vec![]).is_err());
        assert!(Requant::from_i32s(0, 1, 0).is_err());
        assert!(Requant::from_i32s(1, 32, 0).is_err());
        assert!(Requant::from_i32s(1, 3, 128).is_err());
    }

    #[test]
    fn a_layer_too_big_for_a_memory_is_named_with_the_numbers() {
        let mlp = Mlp::new(vec![layer(16, 64, true), layer(64, 4, false)]).unwrap();
        // 4x4: layer 1 has 4 x 16 tiles of 4 rows = 256 weight rows.
        let cfg = TensorCoreConfig::with(4, 4, 64, 1024, 256, 64, 4).unwrap();
        let e = compile(&mlp, 8, &cfg).unwrap_err();
        assert!(
            e.0.starts_with("layer 2 (64 -> 4) does not fit the weight memory"),
            "{e}"
        );
        let cfg = TensorCoreConfig::with(4, 4, 64, 16, 4096, 64, 4).unwrap();
        let e = compile(&mlp, 8, &cfg).unwrap_err();
        assert!(
            e.0.starts_with("layer 1 (16 -> 64) does not fit the unified buffer"),
            "{e}"
        );
        let cfg = TensorCoreConfig::with(4, 4, 64, 1024, 4096, 8, 4).unwrap();
        let e = compile(&mlp, 8, &cfg).unwrap_err();
        assert!(
            e.0.starts_with("layer 1 (16 -> 64) does not fit the bias memory"),
            "{e}"
        );
    }

    #[test]
    fn the_batch_is_cut_into_blocks_that_fit_the_buffer_and_tiles_are_prefetched() {
        let mlp = Mlp::new(vec![layer(8, 8, true), layer(8, 3, false)]).unwrap();
        // 4x4: 2 slabs per region, 4 rows per batch row; 16 buffer rows hold 4 batch rows.
        let cfg = TensorCoreConfig::with(4, 4, 4, 16, 4096, 64, 2).unwrap();
        let p = compile(&mlp, 10, &cfg).unwrap();
        assert_eq!(p.block_rows, 4);
        assert_eq!(p.ub_rows_used, 16);
        let mms: Vec<&Instr> = p
            .instrs
            .iter()
            .filter(|i| matches!(i, Instr::Matmul { .. }))
            .collect();
        // Per block of 4 rows, acc_rows 4 (halves of 2): P = 2, G = 1; layer 1: 2 m-blocks
        // x 2 n-tiles x 2 k-tiles; layer 2: 2 x 1 x 2. Blocks of 4, 4, 2 rows (the last:
        // one m-block).
        assert_eq!(mms.len(), 12 + 12 + 6);
        // Passes (two k-tiles each) alternate between the halves; each block's layer 2
        // starts with a wait for the activation unit.
        let accs: Vec<u32> = mms
            .iter()
            .step_by(2)
            .map(|i| match i {
                Instr::Matmul { acc, .. } => *acc,
                _ => unreachable!(),
            })
            .collect();
        assert!(
            accs.iter()
                .enumerate()
                .all(|(k, &a)| a == (k as u32 % 2) * 2),
            "{accs:?}"
        );
        let waits: Vec<usize> = mms
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i, Instr::Matmul { wait_act: true, .. }))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(waits, vec![8, 20, 28]);
        assert!(matches!(p.instrs[0], Instr::ReadWeights { .. }));
        assert!(matches!(p.instrs[1], Instr::ReadWeights { .. }));
        let prefetches = mms
            .iter()
            .filter(|i| {
                matches!(
                    i,
                    Instr::Matmul {
                        prefetch: Some(_),
                        ..
                    }
                )
            })
            .count();
        assert_eq!(prefetches, mms.len() - 2);
        assert_eq!(p.instrs.last(), Some(&Instr::Halt));
        for i in &p.instrs {
            assert_eq!(Instr::decode(i.encode()).unwrap(), *i);
        }
    }

    #[test]
    fn host_windows_pack_and_unpack() {
        let mlp = Mlp::new(vec![layer(5, 6, false)]).unwrap();
        let cfg = TensorCoreConfig::with(4, 4, 64, 1024, 4096, 64, 4).unwrap();
        let p = compile(&mlp, 3, &cfg).unwrap();
        let x: Vec<i8> = (0..15).collect();
        let packed = p.pack_input(&x);
        assert_eq!(packed.len(), 2 * 3 * 4);
        // Batch row 1, feature 4: k-tile 1, element 0, window row 1 * 3 + 1.
        assert_eq!(packed[(3 + 1) * 4], 9);
        let window: Vec<i32> = (0..(2 * 3 * 4)).collect();
        let out = p.unpack_output(&window);
        // Batch row 2, output 5: n-tile 1, element 1, window row 1 * 3 + 2.
        assert_eq!(out[2 * 6 + 5], (3 + 2) * 4 + 1);
    }
}
