//! The quantized MLP ([`Mlp`], the model of the TensorCore v1 compiler) on
//! TensorCore v2: the MXU in int8 mode for the matmuls and the VPU for what
//! v1's fixed activation unit does (`add_i32` of the bias, `requant_i8`,
//! `max_i32` with the zero point), with v1's semantics exactly: acc =
//! wrap32(h @ w + b); a hidden layer gives h = max(requant_int8(acc), zp),
//! the last layer the int32 logits.
//!
//! # Layouts
//!
//! - **Weight memory**: every layer's R x C tiles as v1 lays them out (k-tiles
//!   of R inputs, n-tiles of C outputs, zero-padded; n-tile by n-tile,
//!   k-tiles inner; each tile bottom row first), layer after layer; an int8
//!   weight w is the pattern `w as u8` (the MXU's int8 rows read the low
//!   byte). A batch block streams all of them with one `RW`.
//! - **Input window (IN)**: X, row-major \[batch\]\[inputs\], each int8
//!   sign-extended to 32 bits; then the biases as they sit in VMEM
//!   ([`MlpProgram::pack_input`] builds it).
//! - **Output window (OUT)**: the logits, row-major \[batch\]\[outputs\],
//!   int32 ([`MlpProgram::unpack_output`]).
//! - **Unified buffer**: the biases (one vector of the layer's n-tiles x C
//!   int32 per layer); then three regions of B rows of S elements: two for
//!   the activations (layers alternate between them, as in v1) and one for
//!   the accumulators' int32 rows. S, the row stride, is the widest of the
//!   inputs, a layer's k-tiles x R and n-tiles x C, in whole words; B, the
//!   batch block, is what fits the buffer and the accumulator.
//!
//! Padding needs no care here: a padded weight row or column is zero, and
//! int8 products with it are exactly zero whatever the activation holds.
//!
//! # Program
//!
//! Per batch block of B rows: the `RW`s of every weight row, `HIN` of each X
//! row; per layer, per group of G = `acc_rows` / B n-tiles: each n-tile's
//! k-tiles as `MM.int8` of the B rows (the first overwrites, the others add)
//! into accumulator rows g·B .. g·B + B - 1, then one `MV` per n-tile into
//! the int32 region; then per row and word on the VPU: the bias added, and
//! for a hidden layer `requant_i8` and `max_i32` with the zero point into the
//! next activation region; for the last layer the logits out through
//! `HOUT`, a row at a time. One `HALT` ends the program.

use crate::tensorcore2::WeightReads;
use crate::{CompileError, Mlp};
use config::tensorcore2_isa::{Instr, COUNT_BITS, STRIDE_BITS};
use config::vpu_isa::{requant_param_word, Bundle, Op};
use config::TensorCore2Config;

const MAX_COUNT: usize = (1 << COUNT_BITS) - 1;
const MAX_STRIDE: usize = (1 << STRIDE_BITS) - 1;

/// VPU registers the program uses (r0 .. r5).
pub const MLP_VREGS: u32 = 8;

/// An MLP compiled for a TensorCore v2: the program, the weight memory's
/// image and the host windows' layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MlpProgram {
    /// The configuration it was compiled for.
    pub cfg: TensorCore2Config,
    /// The instructions, ending with `HALT`.
    pub instrs: Vec<Instr>,
    /// The weight memory's image from row 0: rows of C patterns.
    pub weight_image: Vec<u16>,
    /// Batch rows N.
    pub batch: usize,
    /// in_1.
    pub inputs: usize,
    /// out_L.
    pub outputs: usize,
    /// Batch rows per block, B.
    pub block_rows: usize,
    /// The biases' image in VMEM, which follows X in the input window.
    bias_image: Vec<u32>,
    /// Elements of the unified buffer the program uses.
    pub vmem_used: usize,
}

impl MlpProgram {
    /// The input window for X (row-major \[batch\]\[inputs\]): X's rows,
    /// sign-extended, then the biases.
    ///
    /// # Panics
    ///
    /// If `x` is not batch x inputs long.
    pub fn pack_input(&self, x: &[i8]) -> Vec<u32> {
        assert_eq!(x.len(), self.batch * self.inputs, "X has the wrong size");
        x.iter()
            .map(|&v| i32::from(v) as u32)
            .chain(self.bias_image.iter().copied())
            .collect()
    }

    /// Elements of the output window the program writes: batch x outputs.
    pub fn output_len(&self) -> usize {
        self.batch * self.outputs
    }

    /// The logits (row-major \[batch\]\[outputs\]) from the output window.
    ///
    /// # Panics
    ///
    /// If `window` is shorter than [`MlpProgram::output_len`].
    pub fn unpack_output(&self, window: &[u32]) -> Vec<i32> {
        window[..self.output_len()]
            .iter()
            .map(|&v| v as i32)
            .collect()
    }
}

fn err<T>(msg: String) -> Result<T, CompileError> {
    Err(CompileError(msg))
}

/// Lowers `mlp` for a batch of `batch` rows onto `cfg` (see the
/// [module docs](self)). Errors name the layer and the memory that does not
/// hold it, with the numbers.
pub fn compile_mlp(
    mlp: &Mlp,
    batch: usize,
    cfg: &TensorCore2Config,
) -> Result<MlpProgram, CompileError> {
    if batch == 0 {
        return err("the batch must hold at least one row".into());
    }
    let (r, c, w) = (
        cfg.rows() as usize,
        cfg.cols() as usize,
        cfg.elems() as usize,
    );
    let vregs = cfg.vpu().vregs();
    if vregs < MLP_VREGS {
        return err(format!(
            "layer 1 does not fit the VPU registers: its activation needs {MLP_VREGS}, the VPU \
             has {vregs}"
        ));
    }
    let layers = mlp.layers();
    let k_tiles: Vec<usize> = layers.iter().map(|l| l.inputs.div_ceil(r)).collect();
    let n_tiles: Vec<usize> = layers.iter().map(|l| l.outputs.div_ceil(c)).collect();

    // Weight memory: every tile once, layer by layer.
    let have = cfg.weight_rows() as usize;
    let mut image: Vec<u16> = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let before = image.len() / c;
        for nt in 0..n_tiles[i] {
            for kt in 0..k_tiles[i] {
                for row in 0..r {
                    // Bottom row first: the MXU's weight port order.
                    let k = kt * r + (r - 1 - row);
                    for j in 0..c {
                        let n = nt * c + j;
                        let v = if k < l.inputs && n < l.outputs {
                            l.w[k * l.outputs + n] as u8
                        } else {
                            0
                        };
                        image.push(u16::from(v));
                    }
                }
            }
        }
        let rows = image.len() / c;
        if rows > have {
            return err(format!(
                "layer {} ({} -> {}) does not fit the weight memory: its {} tiles need {} rows, {} of \
                 {have} are left after the layers before it",
                i + 1,
                l.inputs,
                l.outputs,
                (rows - before) / r,
                rows - before,
                have - before
            ));
        }
    }

    // Unified buffer: the biases, then three regions of B rows of S.
    let words = |n: usize| n.div_ceil(w) * w;
    let mut bias_at = Vec::with_capacity(layers.len());
    let mut bias_image = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        bias_at.push(bias_image.len());
        let mut b: Vec<u32> = l.b.iter().map(|&v| v as u32).collect();
        b.resize(words(n_tiles[i] * c), 0);
        bias_image.extend(b);
    }
    // Each layer's rows: its k-tiles of input and n-tiles of output.
    let needs: Vec<usize> = (0..layers.len())
        .map(|i| words((k_tiles[i] * r).max(n_tiles[i] * c)))
        .collect();
    let widest = (0..layers.len()).fold(0, |best, i| if needs[i] > needs[best] { i } else { best });
    let stride = needs[widest].max(words(mlp.inputs()));
    let total = cfg.vmem_elems() as usize;
    let per_row = 3 * stride;
    let l = &layers[widest];
    if bias_image.len() + per_row > total {
        return err(format!(
            "layer {} ({} -> {}) does not fit the unified buffer: the biases ({} elements) and one \
             batch row's activations and accumulator rows (3 x {stride}) need {} elements, it has \
             {total}",
            widest + 1,
            l.inputs,
            l.outputs,
            bias_image.len(),
            bias_image.len() + per_row
        ));
    }
    if stride > MAX_STRIDE {
        return err(format!(
            "layer {} ({} -> {}) does not fit the instructions' strides: rows of {stride} \
             elements, at most {MAX_STRIDE}",
            widest + 1,
            l.inputs,
            l.outputs
        ));
    }
    let acc_rows = (cfg.acc_rows() as usize).min(MAX_COUNT);
    let block_rows = ((total - bias_image.len()) / per_row)
        .min(batch)
        .min(acc_rows);
    let region = [
        bias_image.len(),
        bias_image.len() + block_rows * stride,
        bias_image.len() + 2 * block_rows * stride,
    ];
    let int32_rows = region[2];
    let vmem_used = region[2] + block_rows * stride;
    let in_bias = batch * mlp.inputs();
    let in_len = in_bias + bias_image.len();
    if in_len > 1 << config::tensorcore2_isa::ADDR_BITS {
        return err(format!(
            "layer 1 ({} -> {}) does not fit the input window: a batch of {batch} rows and the \
             biases need {in_len} elements, its addresses reach {}",
            layers[0].inputs,
            layers[0].outputs,
            1u32 << config::tensorcore2_isa::ADDR_BITS
        ));
    }

    let mut out: Vec<Instr> = Vec::new();
    let u = |v: usize| u32::try_from(v).expect("addresses fit 32 bits");
    let chunked = |out: &mut Vec<Instr>, len: usize, make: &dyn Fn(usize, u32) -> Instr| {
        for at in (0..len).step_by(MAX_COUNT) {
            out.push(make(at, u((len - at).min(MAX_COUNT))));
        }
    };
    chunked(&mut out, bias_image.len(), &|at, n| Instr::HostIn {
        dst: u(at),
        src: u(in_bias + at),
        n,
    });
    let vpu = |out: &mut Vec<Instr>, b: Bundle| out.push(Instr::Vpu { bundle: b.encode() });
    let weight_rows = image.len() / c;
    for m0 in (0..batch).step_by(block_rows) {
        let rows = block_rows.min(batch - m0);
        let mut reads = WeightReads::default();
        reads.queue(0, weight_rows);
        reads.issue_next(&mut out);
        for m in 0..rows {
            chunked(&mut out, mlp.inputs(), &|at, n| Instr::HostIn {
                dst: u(region[0] + m * stride + at),
                src: u((m0 + m) * mlp.inputs() + at),
                n,
            });
        }
        let group = (acc_rows / rows).max(1);
        for (i, l) in layers.iter().enumerate() {
            let src = region[i % 2];
            for g0 in (0..n_tiles[i]).step_by(group) {
                let g = group.min(n_tiles[i] - g0);
                for gi in 0..g {
                    for kt in 0..k_tiles[i] {
                        reads.before_tile(&mut out, r);
                        out.push(Instr::Matmul {
                            acc: u(gi * rows),
                            src: u(src + kt * r),
                            stride: u(stride),
                            n: u(rows),
                            int8: true,
                            add: kt > 0,
                        });
                    }
                }
                for gi in 0..g {
                    out.push(Instr::MoveAcc {
                        dst: u(int32_rows + (g0 + gi) * c),
                        stride: u(stride),
                        acc: u(gi * rows),
                        n: u(rows),
                    });
                }
            }
            // r0 accumulator, r1 bias, r2 multiplier, r3 shift and zero
            // point, r4 zero point; r5 the next row's accumulator.
            let bias = u(bias_at[i] / w);
            if let Some(rq) = l.rq {
                vpu(
                    &mut out,
                    Bundle::op(Op::Bcast, 2, &[]).with_imm(rq.mult as u32),
                );
                let param = requant_param_word(rq.shift, i32::from(rq.zp));
                vpu(&mut out, Bundle::op(Op::Bcast, 3, &[]).with_imm(param));
                let zp = i32::from(rq.zp) as u32;
                vpu(&mut out, Bundle::op(Op::Bcast, 4, &[]).with_imm(zp));
            }
            let dst = region[(i + 1) % 2];
            for m in 0..rows {
                let row = u((int32_rows + m * stride) / w);
                let next = u((dst + m * stride) / w);
                for k in 0..u(words(n_tiles[i] * c) / w) {
                    let a = if k % 2 == 0 { 0 } else { 5 };
                    vpu(&mut out, Bundle::nop().with_load(a, row + k));
                    let sum = Bundle::op(Op::AddI32, a, &[a, 1]).with_load(1, bias + k);
                    match l.rq {
                        None => vpu(&mut out, sum.with_store(a, row + k)),
                        Some(_) => {
                            vpu(&mut out, sum);
                            vpu(&mut out, Bundle::op(Op::RequantI8, a, &[a, 2, 3]));
                            let floor = Bundle::op(Op::MaxI32, a, &[a, 4]);
                            vpu(&mut out, floor.with_store(a, next + k));
                        }
                    }
                }
                if l.rq.is_none() {
                    chunked(&mut out, l.outputs, &|at, n| Instr::HostOut {
                        dst: u((m0 + m) * l.outputs + at),
                        src: u(int32_rows + m * stride + at),
                        n,
                    });
                }
            }
        }
    }
    out.push(Instr::Halt);
    Ok(MlpProgram {
        cfg: *cfg,
        instrs: crate::tensorcore2::merge_loads(out),
        weight_image: image,
        batch,
        inputs: mlp.inputs(),
        outputs: mlp.outputs(),
        block_rows,
        bias_image,
        vmem_used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::layer;

    #[test]
    fn a_layer_too_big_for_a_memory_is_named_with_the_numbers() {
        let mlp = Mlp::new(vec![layer(16, 64, true), layer(64, 4, false)]).unwrap();
        // 4x4: layer 1 has 16 x 4 tiles of 4 rows = 256 weight rows.
        let cfg = TensorCore2Config::new(4, 4, 1).unwrap();
        let e = compile_mlp(&mlp, 8, &cfg.with_memories(4096, 256, 256).unwrap()).unwrap_err();
        assert!(
            e.0.starts_with("layer 2 (64 -> 4) does not fit the weight memory"),
            "{e}"
        );
        // 64 + 4 bias elements and 3 x 64 per batch row: 260 > 256.
        let e = compile_mlp(&mlp, 8, &cfg.with_memories(64, 256, 4096).unwrap()).unwrap_err();
        assert!(
            e.0.starts_with("layer 1 (16 -> 64) does not fit the unified buffer"),
            "{e}"
        );
        assert!(compile_mlp(&mlp, 0, &cfg).is_err());
    }

    #[test]
    fn batches_are_cut_into_blocks_the_accumulator_and_buffer_hold() {
        let mlp = Mlp::new(vec![layer(8, 8, true), layer(8, 3, false)]).unwrap();
        let cfg = TensorCore2Config::new(4, 4, 1).unwrap();
        // 8 accumulator rows: blocks of 8 rows, one n-tile per group.
        let p = compile_mlp(&mlp, 20, &cfg.with_memories(4096, 8, 4096).unwrap()).unwrap();
        assert_eq!(p.block_rows, 8);
        let rws = p
            .instrs
            .iter()
            .filter(|i| matches!(i, Instr::ReadWeights { .. }))
            .count();
        assert_eq!(rws, 3, "one RW per block");
        // 12 bias elements, rows of 8: 32 words of 4 hold 4 rows of 3 x 8.
        let p = compile_mlp(&mlp, 20, &cfg.with_memories(32, 256, 4096).unwrap()).unwrap();
        assert_eq!(p.block_rows, 4);
        assert_eq!(p.vmem_used, 12 + 3 * 4 * 8);
        assert_eq!(p.instrs.last(), Some(&Instr::Halt));
        for i in &p.instrs {
            assert_eq!(Instr::decode(i.encode()), Ok(*i));
        }
    }
}
