//! The transformer compiler for TensorCore v2: a [`GptModel`] and a
//! [`TensorCore2Config`] in, a [`GptProgram`] out: the weight-memory image,
//! the host input window's image, a setup program and, for each token step,
//! a step program ([`GptProgram::step`]) that computes
//! `docs/numerics.md#transformer-step` bit for bit (the same operations in
//! the same order as `golden::gpt::Decoder::step` at the core's R and W).
//!
//! The instructions are `config::tensorcore2_isa`'s and mean what the
//! functional contract of `golden::tensorcore2` says; this crate only emits
//! them. [`generate`] runs a whole generation (setup, a step per token, the
//! host's choice of the next token between steps) on any machine given as a
//! closure.
//!
//! # Use
//!
//! The host writes [`GptProgram::weight_image`] into the weight memory from
//! row 0 and holds [`GptProgram::input_image`] in the input window for
//! every run. It runs [`GptProgram::setup`] once per generation (it zeroes
//! the key and value caches), then the step program of each token at
//! positions 0, 1, 2, ... in order; each step leaves the V logits (fp32) in
//! OUT\[0 .. V\], and the host chooses the next token from them. The step
//! program of a token differs from another's only in the two input-window
//! addresses of its embedding rows and in what grows with the position.
//!
//! # Layouts
//!
//! R = C is the MXU's size, W the VPU's lanes x sublanes; D, H, Dh = D / H,
//! F, V, Tmax the model's sizes; Dhp = Dh rounded up to a multiple of R (a
//! head padded to whole k-tiles).
//!
//! **Weight memory**: every matrix is cut into R x C tiles (k-tiles of R
//! input rows, n-tiles of C output columns, zero-padded); a matrix's tiles
//! are stored n-tile by n-tile, k-tiles inner, each tile's rows bottom row
//! (k = R - 1) first, as the MXU's weight port takes them. Layer by layer:
//! Wq' (D x H·Dhp: Wq with each head's columns padded to Dhp by zero
//! columns, so q comes out in the padded-head layout the score matmul
//! reads), Wk, Wv, Wo, W1, W2; then Wout. The step streams each stretch
//! between two attentions with `RW`s of at most 65,535 rows: the first as
//! soon as the stream allows (at the step's start, or right after the
//! attention's last `RWV`: an `RW` before an `RWV` would put its rows first),
//! each next one when the matmuls are down to less than a tile of the rows
//! before it (an `RW` waits for room in the weight engine's queue of reads,
//! which only matmuls make).
//!
//! **Input window (IN)**: `tok_emb` (V rows of D), `pos_emb` (Tmax rows of
//! D), then the constants, exactly as they sit in VMEM (so the setup copies
//! them with one `HIN` per block): the lane numbers 0 .. W - 1 (int32), the
//! padded-head mask (when Dh is not a multiple of R), each layer's
//! `ln1_g`, `ln1_b`, `ln2_g`, `ln2_b`, `b1`, `b2`, then `lnf_g`, `lnf_b`,
//! every vector from a word boundary and padded with +0.0 to whole words.
//!
//! **Unified buffer (VMEM)**, every region from a word boundary: the
//! working buffers (the residual x, the layer norm's deviations, the bf16
//! matmul operands `hb` (D), `ub` (F) and `pb` (the probabilities), q, the
//! attention output o, a scratch region shared by k, v, the scores, the
//! MLP's hidden layer and the logits, and the computed constants: D ones,
//! div32(1.0, D) and a word for the EUP's scalars); the constants; then
//! per layer its key cache K_l^T (H·Dhp rows of Tmax positions rounded up
//! to C, row j·Dhp + c holding dimension c of head j; the padding rows stay
//! zero) and its value cache V_l (Tmax rounded up to R rows of D, one per
//! position; the rows not yet fed stay zero).
//!
//! # Exactness
//!
//! - Every fp32 sum is the VPU's: `add_f32` of the words in order, then
//!   `reduce_sum_f32`, over vectors padded with +0.0 to whole words; the
//!   maximum is `max_f32` of the words (of the only word with itself, so
//!   every element is read by rule 7 even at W = 1), then `reduce_max_f32`.
//! - Padding that enters a sum or a matmul is exactly +0.0: the lanes
//!   past a vector's end in its last word are chosen with `select` from a
//!   lane mask (`lt_i32` of the lane numbers against the length), never
//!   computed, since a NaN or an infinity elsewhere would reach them. (The
//!   probabilities' padding lanes are the exponentials' +0.0 times 1 / z,
//!   which is in (0, 1] or NaN, and a NaN makes every probability NaN.)
//!   The matmuls' operands have zero words past their last; the caches'
//!   padding rows and the rows of positions not yet fed are zero (the setup
//!   zeroes them, and nothing else writes them).
//! - Matmuls: per n-tile, k-tile 0 overwrites the accumulator row and the
//!   later k-tiles add in ascending order (the contract's combination of
//!   tile sums); one activation row per `MM`; groups of at most `acc_rows`
//!   n-tiles, each moved out with one `MV`.
//! - Attention per head: the scores by `RWV` of K_l^T's tiles (rows of C
//!   consecutive positions) against bf(q_j); softmax on the VPU and the EUP
//!   (exp in place, recip); o_j by `RWV` of V_l's tiles (rows of C
//!   consecutive dimensions of one position) against bf(p). Each `RWV`
//!   moves one tile, right before the `MM` that takes it, so the MXU's
//!   weight FIFO never needs room for more. Output columns
//!   past a head's width or past the position read other data; each column
//!   of a matmul depends on its own weights only, and those columns are
//!   never used.
//! - The caches hold bf(k) and bf(v) in bits 15..0 (all the MXU reads).
//!   K_l^T's column of a position is one element per row: the VPU rotates
//!   each dimension of bf(k) to its element's lane (`rot_lane`,
//!   `rot_sublane`) and selects it into the element's word. V_l's row is D
//!   consecutive elements from any element address: v is written with bits
//!   31..16 = `3f80`, so each element is a normal fp32 in [1, 2), and one
//!   EUP `div` by 1.0 copies it exactly.

use crate::CompileError;
use config::gpt::GptModel;
use config::tensorcore2_isa::{Instr, ADDR_BITS, COUNT_BITS, STRIDE_BITS};
use config::vpu_isa::{Bundle, Op};
use config::{EupOp, TensorCore2Config};

/// VPU registers the step program uses (r0 .. r7).
pub const GPT_VREGS: u32 = 8;

/// The largest count of an instruction (`n`).
const MAX_COUNT: usize = (1 << COUNT_BITS) - 1;
/// The largest element stride.
const MAX_STRIDE: usize = (1 << STRIDE_BITS) - 1;
/// Element addresses and input-window positions are below this.
const ADDR_LIMIT: usize = 1 << ADDR_BITS;

const F32_ONE: u32 = 0x3F80_0000;
const F32_NEG_INF: u32 = 0xFF80_0000;
/// Bits 31..16 of a cache element: a bf16 b in bits 15..0 makes the fp32
/// `3f80_0000 | b`, a normal number in [1, 2).
const CACHE_HIGH: u32 = 0x3F80_0000;

/// A named region of the unified buffer (element addresses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub name: String,
    pub start: usize,
    pub len: usize,
}

/// Per layer: where its constants and caches are (element addresses).
#[derive(Debug, Clone)]
struct LayerMap {
    ln1_g: usize,
    ln1_b: usize,
    ln2_g: usize,
    ln2_b: usize,
    b1: usize,
    b2: usize,
    /// K_l^T: row j·Dhp + c of `tk` positions.
    keys: usize,
    /// V_l: row per position, D each.
    values: usize,
}

/// Sizes and addresses the programs are written from.
#[derive(Debug, Clone)]
struct Layout {
    r: usize,
    c: usize,
    w: usize,
    lanes: usize,
    sublanes: usize,
    d: usize,
    heads: usize,
    dh: usize,
    dhp: usize,
    f: usize,
    v: usize,
    t: usize,
    /// k-tiles and n-tiles of the matrices.
    kt_d: usize,
    kt_f: usize,
    nt_d: usize,
    nt_q: usize,
    nt_f: usize,
    nt_v: usize,
    /// Positions per key-cache row (Tmax rounded up to C).
    tk: usize,
    /// n-tiles an `MV` may move at once.
    acc_group: usize,
    /// Weight-memory stretches the step streams with one `RW` each: (first
    /// row, rows). Stretch 0 is layer 0's Wq', Wk, Wv; stretch l + 1 runs
    /// from layer l's Wo through layer l + 1's Wv (or through Wout).
    stretches: Vec<(usize, usize)>,
    /// Input-window positions of the embeddings.
    in_tok: usize,
    in_pos: usize,
    // Working buffers.
    x: usize,
    y: usize,
    hb: usize,
    ub: usize,
    pb: usize,
    qf: usize,
    o: usize,
    scratch: usize,
    /// v's place in the scratch region (k's is its start).
    vf: usize,
    tmp: usize,
    inv: usize,
    ones: usize,
    // Constants.
    iota: usize,
    head_mask: Option<usize>,
    layers: Vec<LayerMap>,
    lnf_g: usize,
    lnf_b: usize,
    vmem_used: usize,
    regions: Vec<Region>,
    /// Constant blocks: VMEM start, input-window start, length.
    const_blocks: Vec<(usize, usize, usize)>,
}

/// A model compiled for a TensorCore v2 (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct GptProgram {
    cfg: TensorCore2Config,
    lay: Layout,
    weight_image: Vec<u16>,
    input_image: Vec<u32>,
    setup: Vec<Instr>,
    eps: u32,
    scale: u32,
}

fn err<T>(msg: String) -> Result<T, CompileError> {
    Err(CompileError(msg))
}

/// Allocates word-aligned regions of the unified buffer.
struct Alloc {
    w: usize,
    next: usize,
    regions: Vec<Region>,
}

impl Alloc {
    fn take(&mut self, name: &str, len: usize) -> usize {
        let start = self.next;
        self.next += len.max(1).div_ceil(self.w) * self.w;
        self.regions.push(Region {
            name: name.to_string(),
            start,
            len,
        });
        start
    }
}

/// Appends `m` (row-major k x n) as tiles to `image` (rows of C): n-tiles
/// over `n_out` output columns (output column `oc` takes `m`'s column
/// `col(oc)`, or zeros), k-tiles inner, each tile bottom row first.
fn push_tiles(
    image: &mut Vec<u16>,
    (r, c): (usize, usize),
    m: &[u16],
    (k, n): (usize, usize),
    n_out: usize,
    col: impl Fn(usize) -> Option<usize>,
) {
    for nt in 0..n_out.div_ceil(c) {
        for kt in 0..k.div_ceil(r) {
            for row in 0..r {
                let kk = kt * r + (r - 1 - row);
                for j in 0..c {
                    let oc = nt * c + j;
                    let value = if kk < k && oc < n_out {
                        col(oc).map_or(0, |sc| m[kk * n + sc])
                    } else {
                        0
                    };
                    image.push(value);
                }
            }
        }
    }
}

/// Compiles `model` for `cfg`. Errors (one line) name the part that does
/// not fit (a layer, "embeddings" or "output") and the memory, with the
/// numbers.
pub fn compile_gpt(model: &GptModel, cfg: &TensorCore2Config) -> Result<GptProgram, CompileError> {
    model.check_shapes().map_err(CompileError)?;
    let dims = model.dims;
    let (r, c, w) = (
        cfg.rows() as usize,
        cfg.cols() as usize,
        cfg.elems() as usize,
    );
    let (d, heads, dh, f, v, t) = (
        dims.d_model(),
        dims.heads(),
        dims.head_width(),
        dims.d_ff(),
        dims.vocab(),
        dims.context(),
    );
    let dhp = dh.div_ceil(r) * r;
    let (kt_d, kt_f) = (d.div_ceil(r), f.div_ceil(r));
    let (nt_d, nt_q, nt_f, nt_v) = (
        d.div_ceil(c),
        (heads * dhp).div_ceil(c),
        f.div_ceil(c),
        v.div_ceil(c),
    );
    let tk = t.div_ceil(c) * c;
    let tv = t.div_ceil(r) * r;

    let vregs = cfg.vpu().vregs();
    if vregs < GPT_VREGS {
        return err(format!(
            "layer 0 does not fit the VPU registers: its layer norm and softmax need \
             {GPT_VREGS}, the VPU has {vregs}"
        ));
    }

    // Weight memory, layer after layer in the order the step takes it.
    let rc = (r, c);
    let have = cfg.weight_rows() as usize;
    let mut image: Vec<u16> = Vec::new();
    let mut qkv_end = Vec::with_capacity(dims.layers());
    for (l, layer) in model.layers.iter().enumerate() {
        let before = image.len() / c;
        let head_col = |oc: usize| (oc % dhp < dh).then(|| (oc / dhp) * dh + oc % dhp);
        push_tiles(&mut image, rc, &layer.wq, (d, d), heads * dhp, head_col);
        push_tiles(&mut image, rc, &layer.wk, (d, d), d, Some);
        push_tiles(&mut image, rc, &layer.wv, (d, d), d, Some);
        qkv_end.push(image.len() / c);
        push_tiles(&mut image, rc, &layer.wo, (d, d), d, Some);
        push_tiles(&mut image, rc, &layer.w1, (d, f), f, Some);
        push_tiles(&mut image, rc, &layer.w2, (f, d), d, Some);
        let rows = image.len() / c;
        if rows > have {
            return err(format!(
                "layer {l} does not fit the weight memory: its {} tiles need {} rows, {} of {have} \
                 are left after the layers before it",
                (rows - before) / r,
                rows - before,
                have - before
            ));
        }
    }
    let before = image.len() / c;
    push_tiles(&mut image, rc, &model.wout, (d, v), v, Some);
    let rows = image.len() / c;
    if rows > have {
        return err(format!(
            "output does not fit the weight memory: Wout's {} tiles need {} rows, {} of {have} \
             are left after the layers",
            (rows - before) / r,
            rows - before,
            have - before
        ));
    }
    let mut stretches = Vec::with_capacity(dims.layers() + 1);
    let mut from = 0;
    for &end in qkv_end.iter().chain([&rows]) {
        stretches.push((from, end - from));
        from = end;
    }

    // Unified buffer.
    let total = cfg.vmem_elems() as usize;
    let mut a = Alloc {
        w,
        next: 0,
        regions: Vec::new(),
    };
    let nt_h = dh.div_ceil(c);
    let x = a.take("x", d);
    let y = a.take("y", d);
    let hb = a.take("hb", d.max(kt_d * r));
    let ub = a.take("ub", f.max(kt_f * r));
    let pb = a.take("pb", t.max(tv));
    let qf = a.take("q", nt_q * c);
    let o = a.take("o", d.max((heads - 1) * dh + nt_h * c));
    let kv = nt_d * c;
    let kv_words = kv.div_ceil(w) * w;
    let scratch = a.take(
        "scratch",
        (2 * kv_words).max(tk).max(t).max(nt_f * c).max(nt_v * c),
    );
    let vf = scratch + kv_words;
    let tmp = a.take("tmp", 1);
    let inv = a.take("inv", w);
    let ones = a.take("ones", d.max(w));
    let mut const_data: Vec<(usize, Vec<u32>)> = Vec::new();
    let iota = a.take("lanes", w);
    let mut global_consts: Vec<u32> = (0..w as u32).collect();
    let head_mask = if dhp != dh {
        let len = heads * dhp;
        let start = a.take("head mask", len);
        global_consts.extend((0..len.div_ceil(w) * w).map(|e| u32::from(e < len && e % dhp < dh)));
        Some(start)
    } else {
        None
    };
    const_data.push((iota, global_consts));
    if a.next > total {
        return err(format!(
            "embeddings do not fit the unified buffer: the step's working buffers need {} \
             elements, it has {total}",
            a.next
        ));
    }
    let padded = |vals: &[u32]| -> Vec<u32> {
        let mut out = vals.to_vec();
        out.resize(vals.len().div_ceil(w) * w, 0);
        out
    };
    let mut layers = Vec::with_capacity(dims.layers());
    for (l, layer) in model.layers.iter().enumerate() {
        let before = a.next;
        let name = |part: &str| format!("layer{l}_{part}");
        let ln1_g = a.take(&name("ln1_g"), d);
        let ln1_b = a.take(&name("ln1_b"), d);
        let ln2_g = a.take(&name("ln2_g"), d);
        let ln2_b = a.take(&name("ln2_b"), d);
        let b1 = a.take(&name("b1"), f);
        let b2 = a.take(&name("b2"), d);
        let mut block = Vec::new();
        for vals in [
            &layer.ln1_g,
            &layer.ln1_b,
            &layer.ln2_g,
            &layer.ln2_b,
            &layer.b1,
            &layer.b2,
        ] {
            block.extend(padded(vals));
        }
        const_data.push((ln1_g, block));
        let keys = a.take(&name("keys"), heads * dhp * tk);
        // Reads of the last head's last n-tile run up to C - 1 past a row.
        let values = a.take(&name("values"), tv * d + c);
        if a.next > total {
            return err(format!(
                "layer {l} does not fit the unified buffer: its constants and key and value caches \
                 need {} elements, {} of {total} are left",
                a.next - before,
                total - before
            ));
        }
        layers.push(LayerMap {
            ln1_g,
            ln1_b,
            ln2_g,
            ln2_b,
            b1,
            b2,
            keys,
            values,
        });
    }
    let before = a.next;
    let lnf_g = a.take("lnf_g", d);
    let lnf_b = a.take("lnf_b", d);
    let mut block = padded(&model.lnf_g);
    block.extend(padded(&model.lnf_b));
    const_data.push((lnf_g, block));
    if a.next > total {
        return err(format!(
            "output does not fit the unified buffer: the final layer norm's constants need {} \
             elements, {} of {total} are left",
            a.next - before,
            total.saturating_sub(before)
        ));
    }
    if tk > MAX_STRIDE || d > MAX_STRIDE {
        return err(format!(
            "layer 0 does not fit the instructions' strides: its caches' rows of {tk} positions \
             and {d} dimensions must be at most {MAX_STRIDE} elements"
        ));
    }

    // Input window: the embeddings, then the constant blocks.
    let in_tok = 0;
    let in_pos = v * d;
    let mut input_image = Vec::with_capacity((v + t) * d);
    input_image.extend_from_slice(&model.tok_emb);
    input_image.extend_from_slice(&model.pos_emb);
    let mut const_blocks = Vec::new();
    for (start, data) in &const_data {
        const_blocks.push((*start, input_image.len(), data.len()));
        input_image.extend_from_slice(data);
    }
    if input_image.len() > ADDR_LIMIT {
        return err(format!(
            "embeddings do not fit the input window: its {} elements (token and position \
             embeddings, constants) pass the {ADDR_LIMIT} its addresses reach",
            input_image.len()
        ));
    }

    let lay = Layout {
        r,
        c,
        w,
        lanes: cfg.lanes() as usize,
        sublanes: cfg.sublanes() as usize,
        d,
        heads,
        dh,
        dhp,
        f,
        v,
        t,
        kt_d,
        kt_f,
        nt_d,
        nt_q,
        nt_f,
        nt_v,
        tk,
        acc_group: (cfg.acc_rows() as usize).min(MAX_COUNT),
        stretches,
        in_tok,
        in_pos,
        x,
        y,
        hb,
        ub,
        pb,
        qf,
        o,
        scratch,
        vf,
        tmp,
        inv,
        ones,
        iota,
        head_mask,
        layers,
        lnf_g,
        lnf_b,
        vmem_used: a.next,
        regions: a.regions,
        const_blocks,
    };
    let mut program = GptProgram {
        cfg: *cfg,
        lay,
        weight_image: image,
        input_image,
        setup: Vec::new(),
        eps: model.eps,
        scale: model.scale,
    };
    program.setup = program.emit_setup();
    Ok(program)
}

impl GptProgram {
    /// The configuration it was compiled for.
    pub fn config(&self) -> &TensorCore2Config {
        &self.cfg
    }

    /// The weight memory's image from row 0: rows of C bf16 patterns.
    pub fn weight_image(&self) -> &[u16] {
        &self.weight_image
    }

    /// The input window's image (IN), the same for every run.
    pub fn input_image(&self) -> &[u32] {
        &self.input_image
    }

    /// The logits a step leaves in OUT\[0 .. V\]: V.
    pub fn output_len(&self) -> usize {
        self.lay.v
    }

    /// The context length Tmax: positions a generation may feed.
    pub fn context(&self) -> usize {
        self.lay.t
    }

    /// Elements of the unified buffer the programs use, from 0.
    pub fn vmem_used(&self) -> usize {
        self.lay.vmem_used
    }

    /// The unified buffer's regions, in address order.
    pub fn vmem_map(&self) -> &[Region] {
        &self.lay.regions
    }

    /// Input-window positions of `tok_emb` and `pos_emb`.
    pub fn input_embeddings(&self) -> (usize, usize) {
        (self.lay.in_tok, self.lay.in_pos)
    }

    /// The setup program: zeroes the unified buffer's used part (the caches
    /// among it), copies the constants in from the input window, computes
    /// the ones and div32(1.0, D), and halts.
    pub fn setup(&self) -> &[Instr] {
        &self.setup
    }

    fn emit_setup(&self) -> Vec<Instr> {
        let lay = &self.lay;
        let mut e = Emit::new(lay);
        let words = lay.vmem_used / lay.w;
        e.vpu(bcast(0, 0).with_store(0, 0));
        for word in 1..words {
            e.vpu(Bundle::nop().with_store(0, word as u32));
        }
        for &(vmem, input, len) in &lay.const_blocks {
            e.chunked(len, |at, n| Instr::HostIn {
                dst: (vmem + at) as u32,
                src: (input + at) as u32,
                n,
            });
        }
        let ones = e.word(lay.ones);
        e.vpu(bcast(1, F32_ONE).with_store(1, ones));
        for k in 1..lay.d.max(lay.w).div_ceil(lay.w) {
            e.vpu(Bundle::nop().with_store(1, ones + k as u32));
        }
        // div32(1.0, i32_to_f32(D)) in every lane of `inv`.
        e.vpu(bcast(2, lay.d as u32));
        e.vpu(op(Op::CvtI32F32, 2, &[2]).with_store(2, e.word(lay.tmp)));
        e.out.push(Instr::Eup {
            op: EupOp::Div,
            dst: lay.inv as u32,
            a: lay.ones as u32,
            b: lay.tmp as u32,
            n: 1,
        });
        let inv = e.word(lay.inv);
        e.vpu(op(Op::Splat, 3, &[3]).with_load(3, inv).with_store(3, inv));
        e.out.push(Instr::Halt);
        e.out
    }

    /// The step program for `token` at position `pos`: one token step of
    /// `docs/numerics.md#transformer-step`, its logits in OUT\[0 .. V\].
    /// Valid after the setup and the steps at positions 0 .. pos - 1.
    ///
    /// # Panics
    ///
    /// If `token` is not below V or `pos` not below Tmax.
    pub fn step(&self, token: u32, pos: usize) -> Vec<Instr> {
        let lay = &self.lay;
        assert!(
            (token as usize) < lay.v,
            "token {token} is not below the vocabulary's {}",
            lay.v
        );
        assert!(
            pos < lay.t,
            "position {pos} is not below the context's {}",
            lay.t
        );
        let d = lay.d;
        let mut e = Emit::new(lay);
        e.read_weights(0);
        // 1. x = tok[t] + pos_emb[pos].
        e.chunked(d, |at, n| Instr::HostIn {
            dst: (lay.x + at) as u32,
            src: (lay.in_tok + token as usize * d + at) as u32,
            n,
        });
        e.chunked(d, |at, n| Instr::HostIn {
            dst: (lay.y + at) as u32,
            src: (lay.in_pos + pos * d + at) as u32,
            n,
        });
        e.add_into_x(lay.y, None);
        // 2. The layers.
        for (l, map) in lay.layers.iter().enumerate() {
            e.layernorm(map.ln1_g, map.ln1_b, self.eps);
            e.matmul(lay.hb, lay.kt_d, lay.nt_q, lay.qf);
            e.matmul(lay.hb, lay.kt_d, lay.nt_d, lay.scratch);
            e.matmul(lay.hb, lay.kt_d, lay.nt_d, lay.vf);
            e.q_to_bf16();
            e.narrow_k();
            e.write_keys(map, pos);
            e.cache_form(lay.vf);
            e.write_values(map, pos);
            e.attention(map, pos, self.scale, l + 1);
            e.o_to_bf16();
            e.matmul(lay.hb, lay.kt_d, lay.nt_d, lay.scratch);
            e.add_into_x(lay.scratch, None);
            e.layernorm(map.ln2_g, map.ln2_b, self.eps);
            e.matmul(lay.hb, lay.kt_d, lay.nt_f, lay.scratch);
            e.mlp_hidden(map.b1);
            e.matmul(lay.ub, lay.kt_f, lay.nt_d, lay.scratch);
            e.add_into_x(lay.scratch, Some(map.b2));
        }
        // 3. The logits.
        e.layernorm(lay.lnf_g, lay.lnf_b, self.eps);
        e.matmul(lay.hb, lay.kt_d, lay.nt_v, lay.scratch);
        e.chunked(lay.v, |at, n| Instr::HostOut {
            dst: at as u32,
            src: (lay.scratch + at) as u32,
            n,
        });
        e.out.push(Instr::Halt);
        merge_loads(e.out)
    }
}

/// A bundle with `op vd, sources` in its ALU slot.
fn op(o: Op, vd: u8, sources: &[u8]) -> Bundle {
    Bundle::op(o, vd, sources)
}

/// `bcast vd, imm`.
fn bcast(vd: u8, imm: u32) -> Bundle {
    Bundle::op(Op::Bcast, vd, &[]).with_imm(imm)
}

/// Folds each load-only bundle into the VPU bundle before it when that
/// changes nothing: the earlier bundle has no load of its own, its ALU
/// operation neither reads nor writes the loaded register, and its store
/// neither stores that register nor writes the loaded word (the load runs
/// first in a bundle).
pub(crate) fn merge_loads(instrs: Vec<Instr>) -> Vec<Instr> {
    let mut out: Vec<Instr> = Vec::with_capacity(instrs.len());
    for instr in instrs {
        if let (Instr::Vpu { bundle }, Some(Instr::Vpu { bundle: prev })) = (instr, out.last()) {
            let (b, p) = (Bundle::decode(bundle), Bundle::decode(*prev));
            let load_only = b.store.is_none() && b.alu.op() == Some(Op::Nop);
            if let (Some(load), true, None) = (b.load, load_only, p.load) {
                let reg = load.reg;
                let alu_ok = match p.alu.op() {
                    Some(Op::Nop) => true,
                    Some(o) => {
                        let a = &p.alu;
                        let reads = [a.vs1, a.vs2, a.vs3][..o.sources()].contains(&reg);
                        !reads && a.vd != reg
                    }
                    None => false,
                };
                let store_ok = p.store.is_none_or(|s| s.reg != reg && s.addr != load.addr);
                if alu_ok && store_ok {
                    let merged = Bundle { load: b.load, ..p };
                    *out.last_mut().expect("checked above") = Instr::Vpu {
                        bundle: merged.encode(),
                    };
                    continue;
                }
            }
        }
        out.push(instr);
    }
    out
}

/// The `RW`s of the weight memory's rows still to stream, issued one at a
/// time as the matmuls need their rows: an `RW` waits for room in the
/// weight engine's queue of reads, and a read ends only as matmuls take its
/// rows, so reads issued far ahead of their matmuls could wait forever.
#[derive(Debug, Default)]
pub(crate) struct WeightReads {
    /// `RW`s not issued yet: (first row, rows), at most `MAX_COUNT` rows each.
    waiting: std::collections::VecDeque<(usize, usize)>,
    /// Rows issued and not taken yet.
    ready: usize,
}

impl WeightReads {
    /// Queues weight-memory rows first .. first + rows.
    pub(crate) fn queue(&mut self, first: usize, rows: usize) {
        for at in (0..rows).step_by(MAX_COUNT) {
            self.waiting
                .push_back((first + at, (rows - at).min(MAX_COUNT)));
        }
    }

    /// Issues the next queued `RW`, if any.
    pub(crate) fn issue_next(&mut self, out: &mut Vec<Instr>) {
        if let Some((row, n)) = self.waiting.pop_front() {
            out.push(Instr::ReadWeights {
                row: row as u32,
                n: n as u32,
            });
            self.ready += n;
        }
    }

    /// Before an `MM` that takes a tile of `r` rows from the weight memory:
    /// issues `RW`s until the tile's rows are on their way.
    pub(crate) fn before_tile(&mut self, out: &mut Vec<Instr>, r: usize) {
        while self.ready < r {
            assert!(
                !self.waiting.is_empty(),
                "a tile past the weight rows queued"
            );
            self.issue_next(out);
        }
        self.ready -= r;
    }
}

/// Writes one program's instructions.
struct Emit<'a> {
    lay: &'a Layout,
    out: Vec<Instr>,
    reads: WeightReads,
}

impl<'a> Emit<'a> {
    fn new(lay: &'a Layout) -> Emit<'a> {
        Emit {
            lay,
            out: Vec::new(),
            reads: WeightReads::default(),
        }
    }

    fn vpu(&mut self, b: Bundle) {
        self.out.push(Instr::Vpu { bundle: b.encode() });
    }

    /// The VMEM word of the word-aligned element address `elem`.
    fn word(&self, elem: usize) -> u32 {
        debug_assert!(elem.is_multiple_of(self.lay.w));
        (elem / self.lay.w) as u32
    }

    /// `make(offset, n)` for each piece of at most `MAX_COUNT` of `len`.
    fn chunked(&mut self, len: usize, make: impl Fn(usize, u32) -> Instr) {
        for at in (0..len).step_by(MAX_COUNT) {
            let n = (len - at).min(MAX_COUNT);
            self.out.push(make(at, n as u32));
        }
    }

    /// Starts streaming weight-memory stretch `i`: its first `RW` now, the
    /// rest as the matmuls need them.
    fn read_weights(&mut self, i: usize) {
        let (first, rows) = self.lay.stretches[i];
        self.reads.queue(first, rows);
        self.reads.issue_next(&mut self.out);
    }

    /// The lane mask "lane < rem" into `flag` (1 or 0 per lane), using
    /// `scratch`.
    fn lane_mask(&mut self, flag: u8, scratch: u8, rem: usize) {
        self.vpu(bcast(scratch, rem as u32));
        let iota = self.word(self.lay.iota);
        self.vpu(op(Op::LtI32, flag, &[flag, scratch]).with_load(flag, iota));
    }

    /// A bf16 row times a matrix of `k_tiles` x `n_tiles` tiles, the next
    /// ones in the weight stream: the fp32 result's n-tiles to `dst`, `dst`
    /// + C, ...
    fn matmul(&mut self, src: usize, k_tiles: usize, n_tiles: usize, dst: usize) {
        let (r, c) = (self.lay.r, self.lay.c);
        for g0 in (0..n_tiles).step_by(self.lay.acc_group) {
            let g = (n_tiles - g0).min(self.lay.acc_group);
            for nt in 0..g {
                for kt in 0..k_tiles {
                    self.reads.before_tile(&mut self.out, r);
                    self.out.push(Instr::Matmul {
                        acc: nt as u32,
                        src: (src + kt * r) as u32,
                        stride: 0,
                        n: 1,
                        int8: false,
                        add: kt > 0,
                    });
                }
            }
            self.out.push(Instr::MoveAcc {
                dst: (dst + g0 * c) as u32,
                stride: c as u32,
                acc: 0,
                n: g as u32,
            });
        }
    }

    /// hb = bf(layernorm(x; g, b, eps)), the deviations in y
    /// (`docs/numerics.md#softmax-and-layer-normalization`).
    fn layernorm(&mut self, g: usize, b: usize, eps: u32) {
        let lay = self.lay;
        let words = lay.d.div_ceil(lay.w);
        let rem = lay.d % lay.w;
        let last = words - 1;
        let (x, y, hb) = (self.word(lay.x), self.word(lay.y), self.word(lay.hb));
        let (g, b) = (self.word(g), self.word(b));
        let (inv, tmp) = (self.word(lay.inv), self.word(lay.tmp));
        // r0 sum, r1 element, r2 mean / r, r3 lane mask, r4 zero, r5 masked
        // mean / r, r6 a constant's word.
        if rem != 0 {
            self.vpu(bcast(4, 0));
            self.lane_mask(3, 1, rem);
        }
        self.vpu(Bundle::nop().with_load(0, x));
        for k in 1..words as u32 {
            self.vpu(op(Op::AddF32, 0, &[0, 1]).with_load(1, x + k));
        }
        self.vpu(op(Op::ReduceSumF32, 0, &[0]));
        self.vpu(op(Op::Splat, 2, &[0]));
        self.vpu(op(Op::MulF32, 2, &[2, 6]).with_load(6, inv));
        // The last word's padding lanes subtract +0.0 from +0.0: d stays +0.0.
        if rem != 0 {
            self.vpu(op(Op::Select, 5, &[3, 2, 4]));
        }
        for k in 0..words {
            let mean = if k == last && rem != 0 { 5 } else { 2 };
            let kw = k as u32;
            self.vpu(
                op(Op::SubF32, 1, &[1, mean])
                    .with_load(1, x + kw)
                    .with_store(1, y + kw),
            );
            if k == 0 {
                self.vpu(op(Op::MulF32, 0, &[1, 1]));
            } else {
                self.vpu(op(Op::MulF32, 1, &[1, 1]));
                self.vpu(op(Op::AddF32, 0, &[0, 1]));
            }
        }
        self.vpu(op(Op::ReduceSumF32, 0, &[0]));
        self.vpu(op(Op::Splat, 2, &[0]));
        self.vpu(op(Op::MulF32, 2, &[2, 6]).with_load(6, inv));
        self.vpu(bcast(1, eps));
        self.vpu(op(Op::AddF32, 2, &[2, 1]).with_store(2, tmp));
        self.out.push(Instr::Eup {
            op: EupOp::Rsqrt,
            dst: lay.tmp as u32,
            a: lay.tmp as u32,
            b: 0,
            n: 1,
        });
        self.vpu(op(Op::Splat, 2, &[2]).with_load(2, tmp));
        // The padding lanes multiply +0.0 by +0.0 (r may be infinite).
        if rem != 0 {
            self.vpu(op(Op::Select, 5, &[3, 2, 4]));
        }
        for k in 0..words {
            let r = if k == last && rem != 0 { 5 } else { 2 };
            let kw = k as u32;
            self.vpu(op(Op::MulF32, 1, &[1, r]).with_load(1, y + kw));
            self.vpu(op(Op::MulF32, 1, &[1, 6]).with_load(6, g + kw));
            self.vpu(op(Op::AddF32, 1, &[1, 6]).with_load(6, b + kw));
            self.vpu(op(Op::CvtF32Bf16, 1, &[1]).with_store(1, hb + kw));
        }
    }

    /// x = x + src, or x = x + (src + bias) with `bias`; the padding lanes
    /// of x stay +0.0.
    fn add_into_x(&mut self, src: usize, bias: Option<usize>) {
        let lay = self.lay;
        let words = lay.d.div_ceil(lay.w);
        let rem = lay.d % lay.w;
        let (x, src) = (self.word(lay.x), self.word(src));
        let bias = bias.map(|b| self.word(b));
        // r0 sum, r1 operand, r3 lane mask, r4 zero.
        if rem != 0 {
            self.vpu(bcast(4, 0));
            self.lane_mask(3, 1, rem);
        }
        for k in 0..words as u32 {
            let masked = k as usize == words - 1 && rem != 0;
            let sum = match bias {
                None => {
                    self.vpu(Bundle::nop().with_load(0, x + k));
                    op(Op::AddF32, 0, &[0, 1]).with_load(1, src + k)
                }
                Some(b) => {
                    self.vpu(Bundle::nop().with_load(0, src + k));
                    self.vpu(op(Op::AddF32, 0, &[0, 1]).with_load(1, b + k));
                    op(Op::AddF32, 0, &[1, 0]).with_load(1, x + k)
                }
            };
            if masked {
                self.vpu(sum);
                self.vpu(op(Op::Select, 0, &[3, 0, 4]).with_store(0, x + k));
            } else {
                self.vpu(sum.with_store(0, x + k));
            }
        }
    }

    /// q's MV'd fp32 to bf16 in place, the padded heads' padding lanes +0.
    fn q_to_bf16(&mut self) {
        let lay = self.lay;
        let words = (lay.heads * lay.dhp).div_ceil(lay.w);
        let q = self.word(lay.qf);
        match lay.head_mask {
            None => {
                for k in 0..words as u32 {
                    self.vpu(
                        op(Op::CvtF32Bf16, 0, &[0])
                            .with_load(0, q + k)
                            .with_store(0, q + k),
                    );
                }
            }
            Some(mask) => {
                let mask = self.word(mask);
                self.vpu(bcast(4, 0));
                for k in 0..words as u32 {
                    self.vpu(op(Op::CvtF32Bf16, 0, &[0]).with_load(0, q + k));
                    self.vpu(
                        op(Op::Select, 0, &[1, 0, 4])
                            .with_load(1, mask + k)
                            .with_store(0, q + k),
                    );
                }
            }
        }
    }

    /// The D elements at `buf` (fp32) to V's cache form in place:
    /// `3f80_0000 | bf(x)`.
    fn cache_form(&mut self, buf: usize) {
        let words = self.lay.d.div_ceil(self.lay.w);
        let b = self.word(buf);
        self.vpu(bcast(5, CACHE_HIGH));
        for k in 0..words as u32 {
            self.vpu(op(Op::CvtF32Bf16, 0, &[0]).with_load(0, b + k));
            self.vpu(op(Op::OrI32, 0, &[0, 5]).with_store(0, b + k));
        }
    }

    /// k (D fp32 at the scratch region's start) to bf16 in place.
    fn narrow_k(&mut self) {
        let words = self.lay.d.div_ceil(self.lay.w);
        let k = self.word(self.lay.scratch);
        for i in 0..words as u32 {
            self.vpu(
                op(Op::CvtF32Bf16, 0, &[0])
                    .with_load(0, k + i)
                    .with_store(0, k + i),
            );
        }
    }

    /// K_l^T's column `pos` from bf(k): each dimension rotated from its lane
    /// of k's word to the lane of its element in the cache, and selected
    /// into that word.
    fn write_keys(&mut self, map: &LayerMap, pos: usize) {
        let lay = self.lay;
        let (w, lanes, sublanes) = (lay.w, lay.lanes, lay.sublanes);
        let (k, iota) = (self.word(lay.scratch), self.word(lay.iota));
        // r0 k's word, r1 it rotated, r2 the cache's word, r3 the lane mask,
        // r4 the mask's lane.
        let mut masked_lane = None;
        for dim in 0..lay.d {
            let (j, c) = (dim / lay.dh, dim % lay.dh);
            let at = map.keys + (j * lay.dhp + c) * lay.tk + pos;
            let (word, lane) = ((at / w) as u32, at % w);
            let k_word = k + (dim / w) as u32;
            if w == 1 {
                self.vpu(Bundle::nop().with_load(0, k_word).with_store(0, word));
                continue;
            }
            let from = dim % w;
            if from == 0 {
                self.vpu(Bundle::nop().with_load(0, k_word));
            }
            if masked_lane != Some(lane) {
                self.vpu(bcast(4, lane as u32));
                self.vpu(op(Op::EqI32, 3, &[3, 4]).with_load(3, iota));
                masked_lane = Some(lane);
            }
            let mut src = 0;
            let (from_lane, to_lane) = (from % lanes, lane % lanes);
            if from_lane != to_lane {
                let by = (from_lane + lanes - to_lane) % lanes;
                self.vpu(op(Op::RotLane, 1, &[src]).with_imm(by as u32));
                src = 1;
            }
            let (from_sub, to_sub) = (from / lanes, lane / lanes);
            if from_sub != to_sub {
                let by = (from_sub + sublanes - to_sub) % sublanes;
                self.vpu(op(Op::RotSublane, 1, &[src]).with_imm(by as u32));
                src = 1;
            }
            self.vpu(
                op(Op::Select, 2, &[3, src, 2])
                    .with_load(2, word)
                    .with_store(2, word),
            );
        }
    }

    /// V_l's row `pos`, copied from the cache form of v by an EUP division
    /// by 1.0.
    fn write_values(&mut self, map: &LayerMap, pos: usize) {
        let lay = self.lay;
        let row = map.values + pos * lay.d;
        self.chunked(lay.d, |at, n| Instr::Eup {
            op: EupOp::Div,
            dst: (row + at) as u32,
            a: (lay.vf + at) as u32,
            b: (lay.ones + at) as u32,
            n,
        });
    }

    /// Every head's attention at position `pos` of the layer at `map`:
    /// o (D fp32, at `o`). Issues the `RW` of weight stretch `next` right
    /// after the last `RWV`.
    fn attention(&mut self, map: &LayerMap, pos: usize, scale: u32, next: usize) {
        let lay = self.lay;
        let (r, c) = (lay.r, lay.c);
        let positions = pos + 1;
        let score_tiles = positions.div_ceil(c);
        let head_k_tiles = lay.dhp / r;
        let pos_k_tiles = positions.div_ceil(r);
        let head_n_tiles = lay.dh.div_ceil(c);
        let group = lay.acc_group;
        for j in 0..lay.heads {
            // s = mm(bf(q_j), K^T): q_j's k-tiles against tiles of C positions.
            for g0 in (0..score_tiles).step_by(group) {
                let g = (score_tiles - g0).min(group);
                for nt in 0..g {
                    for kt in 0..head_k_tiles {
                        self.out.push(Instr::ReadWeightsVmem {
                            src: (map.keys + (j * lay.dhp + kt * r) * lay.tk + (g0 + nt) * c)
                                as u32,
                            stride: lay.tk as u32,
                            n: r as u32,
                        });
                        self.out.push(Instr::Matmul {
                            acc: nt as u32,
                            src: (lay.qf + j * lay.dhp + kt * r) as u32,
                            stride: 0,
                            n: 1,
                            int8: false,
                            add: kt > 0,
                        });
                    }
                }
                self.out.push(Instr::MoveAcc {
                    dst: (lay.scratch + g0 * c) as u32,
                    stride: c as u32,
                    acc: 0,
                    n: g as u32,
                });
            }
            self.softmax(positions, scale);
            // o_j = mm(bf(p), V_j): tiles of R positions by C dimensions.
            for g0 in (0..head_n_tiles).step_by(group) {
                let g = (head_n_tiles - g0).min(group);
                for nt in 0..g {
                    for kt in 0..pos_k_tiles {
                        self.out.push(Instr::ReadWeightsVmem {
                            src: (map.values + kt * r * lay.d + j * lay.dh + (g0 + nt) * c) as u32,
                            stride: lay.d as u32,
                            n: r as u32,
                        });
                        let last = j + 1 == lay.heads && g0 + nt + 1 == head_n_tiles;
                        if last && kt + 1 == pos_k_tiles {
                            self.read_weights(next);
                        }
                        self.out.push(Instr::Matmul {
                            acc: nt as u32,
                            src: (lay.pb + kt * r) as u32,
                            stride: 0,
                            n: 1,
                            int8: false,
                            add: kt > 0,
                        });
                    }
                }
                self.out.push(Instr::MoveAcc {
                    dst: (lay.o + j * lay.dh + g0 * c) as u32,
                    stride: c as u32,
                    acc: 0,
                    n: g as u32,
                });
            }
        }
    }

    /// pb = bf(softmax(mul32(s_i, scale))) of the `positions` scores at the
    /// scratch region's start, which it overwrites.
    fn softmax(&mut self, positions: usize, scale: u32) {
        let lay = self.lay;
        let words = positions.div_ceil(lay.w);
        let rem = positions % lay.w;
        let last = words - 1;
        let (s, pb, tmp) = (
            self.word(lay.scratch),
            self.word(lay.pb),
            self.word(lay.tmp),
        );
        // r0 max / sum, r1 element, r2 m / 1/z, r3 lane mask, r4 -inf then
        // zero (padding), r5 scale.
        if rem != 0 {
            self.lane_mask(3, 1, rem);
        }
        self.vpu(bcast(4, F32_NEG_INF));
        self.vpu(bcast(5, scale));
        // The scaled scores; their padding lanes -inf, below every score.
        for k in 0..words {
            let reg = if k == 0 { 0 } else { 1 };
            let kw = k as u32;
            let scaled = op(Op::MulF32, reg, &[reg, 5]).with_load(reg, s + kw);
            if k == last && rem != 0 {
                self.vpu(scaled);
                self.vpu(op(Op::Select, reg, &[3, reg, 4]).with_store(reg, s + kw));
            } else {
                self.vpu(scaled.with_store(reg, s + kw));
            }
            if k > 0 {
                self.vpu(op(Op::MaxF32, 0, &[0, 1]));
            }
        }
        // One word: max_f32 with itself reads every element by rule 7.
        if words == 1 {
            self.vpu(op(Op::MaxF32, 0, &[0, 0]));
        }
        self.vpu(op(Op::ReduceMaxF32, 0, &[0]));
        self.vpu(op(Op::Splat, 2, &[0]));
        if rem != 0 {
            self.vpu(bcast(4, 0));
        }
        // s - m, the padding lanes +0.0; then exp in place.
        for k in 0..words {
            let kw = k as u32;
            let diff = op(Op::SubF32, 1, &[1, 2]).with_load(1, s + kw);
            if k == last && rem != 0 {
                self.vpu(diff);
                self.vpu(op(Op::Select, 1, &[3, 1, 4]).with_store(1, s + kw));
            } else {
                self.vpu(diff.with_store(1, s + kw));
            }
        }
        self.chunked(positions, |at, n| Instr::Eup {
            op: EupOp::Exp,
            dst: (lay.scratch + at) as u32,
            a: (lay.scratch + at) as u32,
            b: 0,
            n,
        });
        // z in the VPU's order, 1 / z on the EUP.
        self.vpu(Bundle::nop().with_load(0, s));
        for k in 1..words as u32 {
            self.vpu(op(Op::AddF32, 0, &[0, 1]).with_load(1, s + k));
        }
        self.vpu(op(Op::ReduceSumF32, 0, &[0]).with_store(0, tmp));
        self.out.push(Instr::Eup {
            op: EupOp::Recip,
            dst: lay.tmp as u32,
            a: lay.tmp as u32,
            b: 0,
            n: 1,
        });
        self.vpu(op(Op::Splat, 2, &[2]).with_load(2, tmp));
        // p = e x (1 / z), to bf16. The padding lanes stay +0: 1 / z is in
        // (0, 1] (the largest e is 1.0), or NaN, and then every p is NaN.
        for k in 0..words as u32 {
            self.vpu(op(Op::MulF32, 1, &[1, 2]).with_load(1, s + k));
            self.vpu(op(Op::CvtF32Bf16, 1, &[1]).with_store(1, pb + k));
        }
    }

    /// hb = bf(o), the padding lanes +0.
    fn o_to_bf16(&mut self) {
        let lay = self.lay;
        let words = lay.d.div_ceil(lay.w);
        let rem = lay.d % lay.w;
        let (o, hb) = (self.word(lay.o), self.word(lay.hb));
        if rem != 0 {
            self.vpu(bcast(4, 0));
            self.lane_mask(3, 1, rem);
        }
        for k in 0..words as u32 {
            let narrow = op(Op::CvtF32Bf16, 0, &[0]).with_load(0, o + k);
            if k as usize == words - 1 && rem != 0 {
                self.vpu(narrow);
                self.vpu(op(Op::Select, 0, &[3, 0, 4]).with_store(0, hb + k));
            } else {
                self.vpu(narrow.with_store(0, hb + k));
            }
        }
    }

    /// ub = bf(relu_f32(u + b1)) of the W1 product at the scratch region,
    /// the padding lanes +0.
    fn mlp_hidden(&mut self, b1: usize) {
        let lay = self.lay;
        let words = lay.f.div_ceil(lay.w);
        let rem = lay.f % lay.w;
        let (u, ub, b1) = (self.word(lay.scratch), self.word(lay.ub), self.word(b1));
        if rem != 0 {
            self.vpu(bcast(4, 0));
            self.lane_mask(3, 1, rem);
        }
        for k in 0..words as u32 {
            // Alternate registers so that the next word's first load can
            // join this word's ReLU.
            let (a, t) = if k % 2 == 0 { (0, 1) } else { (5, 6) };
            self.vpu(Bundle::nop().with_load(a, u + k));
            self.vpu(op(Op::AddF32, a, &[a, t]).with_load(t, b1 + k));
            self.vpu(op(Op::ReluF32, a, &[a]));
            let narrow = op(Op::CvtF32Bf16, a, &[a]);
            if k as usize == words - 1 && rem != 0 {
                self.vpu(narrow);
                self.vpu(op(Op::Select, a, &[3, a, 4]).with_store(a, ub + k));
            } else {
                self.vpu(narrow.with_store(a, ub + k));
            }
        }
    }
}

/// A generation's tokens and, for each, the logits it was chosen from.
pub type Generation = (Vec<u32>, Vec<Vec<u32>>);

/// Generation (`docs/numerics.md#transformer-step`) of a compiled model on
/// a machine: `run(program, input_window)` runs one program on it (its
/// weight memory already holding [`GptProgram::weight_image`]) and returns
/// the output window; `choose` picks the next token from a step's logits.
/// Runs the setup, feeds the prompt's tokens at positions 0 .. n - 1, then
/// each chosen token, until `steps` tokens are chosen; returns them with
/// the logits each was chosen from.
///
/// Errors: an empty prompt, `steps` of 0, a prompt token not below V, more
/// positions than the context holds (n + steps - 1 are fed), a machine's
/// error, or an output window shorter than V.
pub fn generate(
    program: &GptProgram,
    prompt: &[u32],
    steps: usize,
    mut run: impl FnMut(&[Instr], &[u32]) -> Result<Vec<u32>, String>,
    mut choose: impl FnMut(&[u32]) -> u32,
) -> Result<Generation, String> {
    let vocab = program.output_len();
    config::gpt::check_generation(vocab, program.context(), prompt, steps)?;
    let input = program.input_image();
    run(program.setup(), input).map_err(|e| format!("setup: {e}"))?;
    let mut step = |token: u32, pos: usize| -> Result<Vec<u32>, String> {
        let mut out =
            run(&program.step(token, pos), input).map_err(|e| format!("step {pos}: {e}"))?;
        if out.len() < vocab {
            return Err(format!(
                "step {pos}: the output window holds {} elements, the logits are {vocab}",
                out.len()
            ));
        }
        out.truncate(vocab);
        Ok(out)
    };
    let mut logits = Vec::new();
    for (pos, &t) in prompt.iter().enumerate() {
        logits = step(t, pos)?;
    }
    let mut tokens = Vec::with_capacity(steps);
    let mut chosen_from = Vec::with_capacity(steps);
    for s in 0..steps {
        let next = choose(&logits);
        tokens.push(next);
        chosen_from.push(std::mem::take(&mut logits));
        if s + 1 < steps {
            if next as usize >= vocab {
                return Err(format!(
                    "the choice {next} is not below the vocabulary's {vocab}"
                ));
            }
            logits = step(next, prompt.len() + s)?;
        }
    }
    Ok((tokens, chosen_from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::gpt::{GptDims, GptLayer};

    /// A model of `dims` with every parameter zero.
    fn zero_model(dims: GptDims) -> GptModel {
        let (v, d, f, t) = (dims.vocab(), dims.d_model(), dims.d_ff(), dims.context());
        let layer = GptLayer {
            ln1_g: vec![0; d],
            ln1_b: vec![0; d],
            ln2_g: vec![0; d],
            ln2_b: vec![0; d],
            wq: vec![0; d * d],
            wk: vec![0; d * d],
            wv: vec![0; d * d],
            wo: vec![0; d * d],
            w1: vec![0; d * f],
            b1: vec![0; f],
            w2: vec![0; f * d],
            b2: vec![0; d],
        };
        GptModel {
            dims,
            eps: 0,
            scale: 0,
            tok_emb: vec![0; v * d],
            pos_emb: vec![0; t * d],
            layers: vec![layer; dims.layers()],
            lnf_g: vec![0; d],
            lnf_b: vec![0; d],
            wout: vec![0; d * v],
        }
    }

    #[test]
    fn tiles_are_stored_bottom_row_first_and_zero_padded() {
        // A 3 x 3 matrix m[k][n] = 10k + n on a 2 x 2 array, with output
        // column 1 left out (as a padded head's column is).
        let m: Vec<u16> = (0..3)
            .flat_map(|k| (0..3).map(move |n| 10 * k + n))
            .collect();
        let mut image = Vec::new();
        push_tiles(&mut image, (2, 2), &m, (3, 3), 3, |oc| {
            (oc != 1).then_some(oc)
        });
        // n-tile 0 (columns 0, 1), k-tiles 0 and 1; then n-tile 1 (column 2).
        assert_eq!(
            image,
            [
                10,
                0,
                0,
                0, // k-tile 0: row k = 1, then k = 0
                0,
                0,
                20,
                0, // k-tile 1: row k = 3 (padding), then k = 2
                11 + 1,
                0,
                2,
                0, // n-tile 1, k-tile 0
                0,
                0,
                22,
                0, // n-tile 1, k-tile 1
            ]
        );
    }

    #[test]
    fn load_only_bundles_join_the_bundle_before_when_nothing_changes() {
        let vpu = |b: Bundle| Instr::Vpu { bundle: b.encode() };
        let load = vpu(Bundle::nop().with_load(1, 7));
        let add = Bundle::op(Op::AddF32, 0, &[0, 2]);
        let merged = merge_loads(vec![vpu(add), load]);
        assert_eq!(merged, [vpu(add.with_load(1, 7))]);
        for blocked in [
            // Reads, writes or stores the register, stores the word, loads.
            Bundle::op(Op::AddF32, 0, &[0, 1]),
            Bundle::op(Op::Splat, 1, &[0]),
            Bundle::nop().with_store(1, 3),
            add.with_store(0, 7),
            add.with_load(3, 3),
        ] {
            assert_eq!(merge_loads(vec![vpu(blocked), load]).len(), 2, "{blocked}");
        }
        // Only VPU bundles join: the load stays behind an MV.
        let mv = Instr::MoveAcc {
            dst: 0,
            stride: 1,
            acc: 0,
            n: 1,
        };
        assert_eq!(merge_loads(vec![mv, load]).len(), 2);
    }

    #[test]
    fn every_program_encodes_and_balances_the_weight_stream() {
        for (r, lanes, sublanes, dims) in [
            (1, 1, 1, GptDims::new(5, 4, 2, 3, 2, 6).unwrap()),
            (3, 4, 2, GptDims::new(7, 10, 5, 9, 1, 9).unwrap()),
            (16, 16, 8, GptDims::new(70000, 2, 1, 1, 1, 3).unwrap()),
        ] {
            let cfg = TensorCore2Config::new(r, lanes, sublanes)
                .unwrap()
                .with_memories(32768 * 8 / (lanes * sublanes), 2, 1 << 17)
                .unwrap();
            let p = compile_gpt(&zero_model(dims), &cfg).unwrap();
            assert_eq!(p.setup().last(), Some(&Instr::Halt));
            for pos in [0, dims.context() - 1] {
                let step = p.step(dims.vocab() as u32 - 1, pos);
                assert_eq!(step.last(), Some(&Instr::Halt));
                // The weight stream's rows, true for weight-memory rows: an
                // RW after the first waits until less than a tile of them is
                // left, and HALT finds the stream empty.
                let mut stream = std::collections::VecDeque::new();
                let mut rw = 0;
                for i in p.setup().iter().chain(&step) {
                    assert_eq!(Instr::decode(i.encode()), Ok(*i));
                    match *i {
                        Instr::ReadWeights { n, .. } => {
                            let ahead = stream.iter().filter(|&&w| w).count();
                            assert!(rw == 0 || ahead < r as usize, "R {r}: an RW far ahead");
                            stream.extend(std::iter::repeat_n(true, n as usize));
                            rw += n as usize;
                        }
                        Instr::ReadWeightsVmem { n, .. } => {
                            stream.extend(std::iter::repeat_n(false, n as usize))
                        }
                        Instr::Matmul { .. } => {
                            assert!(stream.len() >= r as usize, "R {r}: a tile short");
                            stream.drain(..r as usize);
                        }
                        _ => {}
                    }
                }
                assert!(stream.is_empty(), "R {r}: rows left at HALT");
                assert_eq!(rw * r as usize, p.weight_image().len());
            }
        }
    }

    #[test]
    #[should_panic(expected = "position 6 is not below the context's 6")]
    fn a_step_past_the_context_panics() {
        let dims = GptDims::new(5, 4, 2, 3, 1, 6).unwrap();
        let p = compile_gpt(&zero_model(dims), &TensorCore2Config::DEFAULT).unwrap();
        p.step(0, 6);
    }

    #[test]
    fn generation_checks_its_arguments_and_the_machine() {
        let dims = GptDims::new(5, 4, 2, 3, 1, 4).unwrap();
        let p = compile_gpt(&zero_model(dims), &TensorCore2Config::DEFAULT).unwrap();
        let zeros = |_: &[Instr], _: &[u32]| Ok(vec![0u32; 5]);
        let first = |_: &[u32]| 0;
        let (tokens, logits) = generate(&p, &[1, 2], 3, zeros, first).unwrap();
        assert_eq!((tokens, logits.len()), (vec![0, 0, 0], 3));
        for (prompt, steps, wanted) in [
            (vec![], 1, "at least one token"),
            (vec![1], 0, "at least one step"),
            (vec![1, 5], 1, "prompt token 1 is 5"),
            (vec![1, 2], 4, "need 5 positions"),
        ] {
            let e = generate(&p, &prompt, steps, zeros, first).unwrap_err();
            assert!(e.contains(wanted), "{e}");
        }
        let short = |_: &[Instr], _: &[u32]| Ok(vec![0u32; 4]);
        let e = generate(&p, &[1], 2, short, first).unwrap_err();
        assert!(e.contains("step 0: the output window holds 4"), "{e}");
        let failing = |i: &[Instr], _: &[u32]| {
            if i.len() > 100 {
                Err("a fault".to_string())
            } else {
                Ok(vec![0; 5])
            }
        };
        let e = generate(&p, &[1], 2, failing, first).unwrap_err();
        assert_eq!(e, "step 0: a fault");
        let e = generate(&p, &[1], 2, zeros, |_| 9).unwrap_err();
        assert!(e.contains("choice 9"), "{e}");
    }
}
