//! TensorCore v2: what a program computes ([`Machine::run`]), written from
//! the functional contract of its instructions below, which the compiler
//! (`compiler::tensorcore2`) and the hardware (`hw/tensorcore2`) follow too.
//! The instruction words are `config::tensorcore2_isa`'s; the engines are
//! this crate's models of the blocks inside: [`crate::vpu::Vpu`] (the
//! vector unit, whose VMEM is the core's unified buffer), [`crate::eup::apply`]
//! (the transcendental unit) and [`crate::mxu::tile_row`] with
//! [`crate::mxu::accumulate`] (the bf16 MXU in int8 mode, row by row).
//!
//! # Machine
//!
//! A [`config::TensorCore2Config`] gives R = C (the MXU's rows and
//! columns), W = lanes x sublanes (elements per VMEM word) and the
//! memories. The state:
//!
//! - the VPU of `cfg.vpu()`: its registers, its error flag and its VMEM of
//!   `vmem_words` words of W 32-bit elements. Every instruction but `VPU`
//!   addresses VMEM by **element**: element address e is element e mod W of
//!   word e / W;
//! - the accumulators: `acc_rows` rows of C 32-bit elements;
//! - the weight memory: `weight_rows` rows of C bf16 patterns (int8 rows use
//!   their low bytes), written by the host before a run
//!   ([`Machine::load_weights`]; rows never written read as zero);
//! - the weight stream: a queue of rows of C 16-bit patterns, appended to
//!   by `RW` and `RWV`, taken from by `MM`;
//! - the host windows of a run: IN (32-bit elements the host supplies, any
//!   length) and OUT (32-bit elements the host collects, any length).
//!
//! All of it but the windows persists from one run to the next: a program
//! may leave data in VMEM (a transformer's key and value caches) or in the
//! accumulators for the next one. The weight stream is empty after every
//! run that ends without error (see `HALT`).
//!
//! # Instructions
//!
//! A program runs in order from its first instruction to its first `HALT`:
//!
//! - `HALT`: stop. The weight stream must be empty (a row left in it is a
//!   program error: the next run would take it as a tile's row).
//! - `SYNC`: nothing (it only orders the hardware's engines in time).
//! - `VPU bundle`: the VPU executes the bundle (`config::vpu_isa::Bundle::decode`
//!   of the payload): load, ALU slot, store, as [`crate::vpu::Vpu::execute`].
//! - `HIN dst, src, n`: VMEM\[dst + i\] = IN\[src + i\] for i < n.
//! - `HOUT dst, src, n`: OUT\[dst + i\] = VMEM\[src + i\] for i < n.
//! - `RW row, n`: appends weight-memory rows row, row + 1, ..., row + n - 1 to
//!   the weight stream, in that order.
//! - `RWV src, stride, n`: row j (j < n) is the C elements
//!   VMEM\[src + j x stride + c\] (c < C), each cut to its bits 15..0; the rows
//!   are appended **last first**: j = n - 1, n - 2, ..., 0. (The MXU's weight
//!   port takes a tile bottom row first, so an `RWV` of a tile's R rows from
//!   its top row appends what an `RW` of the tile stored bottom row first
//!   does.)
//! - `MM acc, src, stride, n` (`.int8`, `.add`): takes the next R rows of the
//!   weight stream as the tile T, the i-th row taken being T\[R - 1 - i\]
//!   (bottom row first). Then for each j < n: row_j is the R elements
//!   VMEM\[src + j x stride + k\] (k < R), each cut to its bits 15..0;
//!   new = `tile_row(row_j, T, C, int8)` (int8: the low byte of every
//!   operand, wrapping int32 sums; bf16: the tile sum of
//!   `docs/numerics.md#bf16-matmul` from +0.0 in ascending k); and
//!   ACC\[acc + j\]\[c\] = `accumulate(ACC[acc + j][c], new[c], add, int8)`
//!   (overwrite; or add: wrapping int32, or `add32` with the accumulator
//!   first).
//! - `MV dst, stride, acc, n`: VMEM\[dst + j x stride + c\] = ACC\[acc + j\]\[c\]
//!   for c < C, j < n, row after row (where rows overlap, a later row's
//!   elements replace an earlier one's).
//! - `EUP op, dst, a, b, n`: VMEM\[dst + i\] = `eup::apply(op, VMEM[a + i], VMEM[b + i])`
//!   for i < n; the unary operations read only a (b is then ignored and may
//!   be anything). The destination range \[dst, dst + n) must equal a range
//!   the operation reads or be disjoint from it (the hardware reads ahead of
//!   its writes, so a partial overlap has no defined result).
//!
//! # Program errors
//!
//! [`Machine::run`] refuses, with a [`ProgramError`] of one line naming the
//! instruction's index and mnemonic, and stops at that instruction (what
//! the instructions before it did stays done):
//!
//! - a program without `HALT` (refused before anything runs);
//! - n = 0 in `HIN`, `HOUT`, `RW`, `RWV`, `MM`, `MV` or `EUP`;
//! - an element range outside VMEM, IN or OUT; rows outside the
//!   accumulators or the weight memory;
//! - an `MM` with fewer than R rows in the weight stream;
//! - a `VPU` bundle whose ALU operation is illegal ([`crate::vpu::legal_op`]);
//! - an `EUP` whose destination partly overlaps an operand range;
//! - an `MM.add` whose first accumulator row is the last row of the `MM`
//!   before it in the run when that one had more than one row (the MXU's
//!   read-modify-write rule, `hw/tensorcore2`'s crate docs: the add would
//!   read the row before that `MM`'s write to it lands);
//! - a `HALT` with rows left in the weight stream.
//!
//! Nothing above depends on when the engines run: the results are those of
//! the instructions one after another, whatever the hardware overlaps.

use crate::eup;
use crate::mxu::{accumulate, tile_row};
use crate::vpu::{legal_op, Vpu};
use config::tensorcore2_isa::{Instr, Opcode};
use config::vpu_isa::Bundle;
use config::TensorCore2Config;
use std::collections::VecDeque;
use std::fmt;

/// Why a program cannot run: one line naming the instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramError(pub String);

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProgramError {}

/// What a run did: instructions executed by opcode, and the rows and
/// elements each kind of instruction moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// Instructions executed, `HALT` included, by opcode code
    /// (`config::tensorcore2_isa::Opcode::code`).
    pub counts: [u64; 10],
    /// Elements `HIN` moved from IN.
    pub hin_elems: u64,
    /// Elements `HOUT` moved to OUT.
    pub hout_elems: u64,
    /// Weight-memory rows `RW` appended to the weight stream.
    pub rw_rows: u64,
    /// VMEM rows `RWV` appended to the weight stream.
    pub rwv_rows: u64,
    /// Activation rows `MM` streamed through the MXU.
    pub mm_rows: u64,
    /// Accumulator rows `MV` moved to VMEM.
    pub mv_rows: u64,
    /// Elements the EUP computed.
    pub eup_elems: u64,
}

impl RunInfo {
    /// Instructions of `op` executed.
    pub fn count(&self, op: Opcode) -> u64 {
        self.counts[op.code() as usize]
    }

    /// Every instruction executed.
    pub fn instructions(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The sum of two runs' counts.
    pub fn plus(&self, other: &RunInfo) -> RunInfo {
        let mut counts = self.counts;
        for (c, o) in counts.iter_mut().zip(other.counts) {
            *c += o;
        }
        RunInfo {
            counts,
            hin_elems: self.hin_elems + other.hin_elems,
            hout_elems: self.hout_elems + other.hout_elems,
            rw_rows: self.rw_rows + other.rw_rows,
            rwv_rows: self.rwv_rows + other.rwv_rows,
            mm_rows: self.mm_rows + other.mm_rows,
            mv_rows: self.mv_rows + other.mv_rows,
            eup_elems: self.eup_elems + other.eup_elems,
        }
    }
}

/// A TensorCore v2's state (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Machine {
    cfg: TensorCore2Config,
    vpu: Vpu,
    /// Accumulator row r, column c at `r * C + c`.
    acc: Vec<u32>,
    /// Weight-memory rows 0 .. len / C, C patterns each; rows beyond read as 0.
    weights: Vec<u16>,
    /// The weight stream's rows, C patterns each, oldest first.
    stream: VecDeque<u16>,
    /// The last accumulator row and the row count of the run's last `MM`.
    last_mm: Option<(usize, usize)>,
}

impl Machine {
    /// A machine of configuration `cfg` with every memory, register and
    /// accumulator zero and an empty weight stream.
    pub fn new(cfg: &TensorCore2Config) -> Machine {
        Machine {
            cfg: *cfg,
            vpu: Vpu::new(&cfg.vpu()),
            acc: vec![0; cfg.acc_rows() as usize * cfg.cols() as usize],
            weights: Vec::new(),
            stream: VecDeque::new(),
            last_mm: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TensorCore2Config {
        &self.cfg
    }

    fn r(&self) -> usize {
        self.cfg.rows() as usize
    }

    fn c(&self) -> usize {
        self.cfg.cols() as usize
    }

    fn w(&self) -> usize {
        self.cfg.elems() as usize
    }

    /// Writes weight-memory rows from `first_row` on: `rows` holds whole
    /// rows of C bf16 patterns, row after row.
    ///
    /// # Panics
    ///
    /// If `rows` is not a whole number of rows or they do not fit the
    /// weight memory.
    pub fn load_weights(&mut self, first_row: usize, rows: &[u16]) {
        let c = self.c();
        assert!(
            rows.len().is_multiple_of(c),
            "weight rows hold C = {c} patterns each, got {} patterns",
            rows.len()
        );
        let end = first_row + rows.len() / c;
        assert!(
            end <= self.cfg.weight_rows() as usize,
            "weight rows {first_row}..{end} do not fit the weight memory's {} rows",
            self.cfg.weight_rows()
        );
        if self.weights.len() < end * c {
            self.weights.resize(end * c, 0);
        }
        self.weights[first_row * c..end * c].copy_from_slice(rows);
    }

    /// The VPU: registers, VMEM and error flag.
    pub fn vpu(&self) -> &Vpu {
        &self.vpu
    }

    /// The VPU, to set registers or VMEM words directly.
    pub fn vpu_mut(&mut self) -> &mut Vpu {
        &mut self.vpu
    }

    /// VMEM as elements: element address e at index e.
    pub fn vmem(&self) -> &[u32] {
        self.vpu.vmem()
    }

    /// VMEM elements start .. start + values.len() = `values`.
    ///
    /// # Panics
    ///
    /// If the range is outside VMEM.
    pub fn write_elems(&mut self, start: usize, values: &[u32]) {
        let end = start + values.len();
        assert!(
            end <= self.cfg.vmem_elems() as usize,
            "VMEM elements {start}..{end} are outside the unified buffer's {}",
            self.cfg.vmem_elems()
        );
        let w = self.w();
        let mut e = start;
        while e < end {
            let word = e / w;
            let upto = end.min((word + 1) * w);
            let mut v = self.vpu.word(word as u32).to_vec();
            v[e - word * w..upto - word * w].copy_from_slice(&values[e - start..upto - start]);
            self.vpu.set_word(word as u32, &v);
            e = upto;
        }
    }

    /// Accumulator row `row` (C elements).
    ///
    /// # Panics
    ///
    /// If `row` is not below `acc_rows`.
    pub fn acc_row(&self, row: usize) -> &[u32] {
        let c = self.c();
        &self.acc[row * c..(row + 1) * c]
    }

    /// Rows waiting in the weight stream.
    pub fn stream_rows(&self) -> usize {
        self.stream.len() / self.c()
    }

    fn weight_row(&self, row: usize) -> impl Iterator<Item = u16> + '_ {
        let c = self.c();
        (0..c).map(move |k| self.weights.get(row * c + k).copied().unwrap_or(0))
    }

    /// Runs `program` from its first instruction to its first `HALT`, with
    /// the host input window `input` and output window `output` (the
    /// elements `HOUT` does not write keep their values).
    pub fn run(
        &mut self,
        program: &[Instr],
        input: &[u32],
        output: &mut [u32],
    ) -> Result<RunInfo, ProgramError> {
        if !program.contains(&Instr::Halt) {
            return Err(ProgramError(format!(
                "the program ({} instructions) does not end with HALT",
                program.len()
            )));
        }
        let mut info = RunInfo::default();
        self.last_mm = None;
        for (i, instr) in program.iter().enumerate() {
            info.counts[instr.opcode().code() as usize] += 1;
            if self
                .execute(instr, input, output, &mut info)
                .map_err(|e| ProgramError(format!("instruction {i} ({}): {e}", Shown(instr))))?
            {
                break;
            }
        }
        Ok(info)
    }

    /// Executes one instruction; true for `HALT`. Errors are the message
    /// after the instruction's name.
    fn execute(
        &mut self,
        instr: &Instr,
        input: &[u32],
        output: &mut [u32],
        info: &mut RunInfo,
    ) -> Result<bool, String> {
        let (r, c) = (self.r(), self.c());
        let vmem = self.cfg.vmem_elems() as usize;
        match *instr {
            Instr::Halt => {
                if !self.stream.is_empty() {
                    return Err(format!(
                        "the weight stream still holds {} rows",
                        self.stream_rows()
                    ));
                }
                return Ok(true);
            }
            Instr::Sync => {}
            Instr::Vpu { bundle } => {
                let b = Bundle::decode(bundle);
                if legal_op(self.vpu.config(), &b).is_none() {
                    return Err(format!(
                        "illegal VPU operation (opcode {:#04x})",
                        b.alu.opcode
                    ));
                }
                self.vpu.execute(&b);
            }
            Instr::HostIn { dst, src, n } => {
                nonzero(n)?;
                let (dst, src, n) = (dst as usize, src as usize, n as usize);
                in_range("VMEM elements", dst, n, vmem)?;
                in_range("IN elements", src, n, input.len())?;
                self.write_elems(dst, &input[src..src + n]);
                info.hin_elems += n as u64;
            }
            Instr::HostOut { dst, src, n } => {
                nonzero(n)?;
                let (dst, src, n) = (dst as usize, src as usize, n as usize);
                in_range("VMEM elements", src, n, vmem)?;
                in_range("OUT elements", dst, n, output.len())?;
                output[dst..dst + n].copy_from_slice(&self.vmem()[src..src + n]);
                info.hout_elems += n as u64;
            }
            Instr::ReadWeights { row, n } => {
                nonzero(n)?;
                let (row, n) = (row as usize, n as usize);
                in_range(
                    "weight-memory rows",
                    row,
                    n,
                    self.cfg.weight_rows() as usize,
                )?;
                for k in row..row + n {
                    let values: Vec<u16> = self.weight_row(k).collect();
                    self.stream.extend(values);
                }
                info.rw_rows += n as u64;
            }
            Instr::ReadWeightsVmem { src, stride, n } => {
                nonzero(n)?;
                let (src, stride, n) = (src as usize, stride as usize, n as usize);
                in_range("VMEM elements", src, (n - 1) * stride + c, vmem)?;
                for j in (0..n).rev() {
                    let start = src + j * stride;
                    let row: Vec<u16> = self.vmem()[start..start + c]
                        .iter()
                        .map(|&x| x as u16)
                        .collect();
                    self.stream.extend(row);
                }
                info.rwv_rows += n as u64;
            }
            Instr::Matmul {
                acc,
                src,
                stride,
                n,
                int8,
                add,
            } => {
                nonzero(n)?;
                let (acc, src, stride, n) =
                    (acc as usize, src as usize, stride as usize, n as usize);
                in_range("VMEM elements", src, (n - 1) * stride + r, vmem)?;
                in_range("accumulator rows", acc, n, self.cfg.acc_rows() as usize)?;
                if let Some((last, rows)) = self
                    .last_mm
                    .filter(|&(last, rows)| add && last == acc && rows > 1)
                {
                    return Err(format!(
                        "it adds into accumulator row {last}, the last row of the {rows}-row MM \
                         before it"
                    ));
                }
                self.last_mm = Some((acc + n - 1, n));
                if self.stream_rows() < r {
                    return Err(format!(
                        "the weight stream holds {} rows, a tile needs R = {r}",
                        self.stream_rows()
                    ));
                }
                // The i-th row taken is the tile's row R - 1 - i.
                let mut tile = vec![0u16; r * c];
                for taken in 0..r {
                    let k = r - 1 - taken;
                    for (t, v) in tile[k * c..(k + 1) * c]
                        .iter_mut()
                        .zip(self.stream.drain(..c))
                    {
                        *t = v;
                    }
                }
                for j in 0..n {
                    let start = src + j * stride;
                    let row: Vec<u16> = self.vmem()[start..start + r]
                        .iter()
                        .map(|&x| x as u16)
                        .collect();
                    let new = tile_row(&row, &tile, c, int8);
                    let out = &mut self.acc[(acc + j) * c..(acc + j + 1) * c];
                    for (o, v) in out.iter_mut().zip(new) {
                        *o = accumulate(*o, v, add, int8);
                    }
                }
                info.mm_rows += n as u64;
            }
            Instr::MoveAcc {
                dst,
                stride,
                acc,
                n,
            } => {
                nonzero(n)?;
                let (dst, stride, acc, n) =
                    (dst as usize, stride as usize, acc as usize, n as usize);
                in_range("VMEM elements", dst, (n - 1) * stride + c, vmem)?;
                in_range("accumulator rows", acc, n, self.cfg.acc_rows() as usize)?;
                for j in 0..n {
                    let row = self.acc[(acc + j) * c..(acc + j + 1) * c].to_vec();
                    self.write_elems(dst + j * stride, &row);
                }
                info.mv_rows += n as u64;
            }
            Instr::Eup { op, dst, a, b, n } => {
                nonzero(n)?;
                let (dst, a, b, n) = (dst as usize, a as usize, b as usize, n as usize);
                in_range("VMEM elements", dst, n, vmem)?;
                in_range("VMEM elements", a, n, vmem)?;
                let mut reads = vec![("a", a)];
                if op.binary() {
                    in_range("VMEM elements", b, n, vmem)?;
                    reads.push(("b", b));
                }
                for (name, start) in reads {
                    if start != dst && start < dst + n && dst < start + n {
                        return Err(format!(
                            "the destination {dst}..{} partly overlaps operand {name} {start}..{}",
                            dst + n,
                            start + n
                        ));
                    }
                }
                let v = self.vmem();
                let result: Vec<u32> = (0..n)
                    .map(|i| {
                        let second = if op.binary() { v[b + i] } else { 0 };
                        eup::apply(op, v[a + i], second)
                    })
                    .collect();
                self.write_elems(dst, &result);
                info.eup_elems += n as u64;
            }
        }
        Ok(false)
    }
}

fn nonzero(n: u32) -> Result<(), String> {
    if n == 0 {
        Err("n = 0".into())
    } else {
        Ok(())
    }
}

/// Checks that `what` start .. start + len lies in 0 .. size.
fn in_range(what: &str, start: usize, len: usize, size: usize) -> Result<(), String> {
    if start + len > size {
        Err(format!(
            "{what} {start}..{} are outside the {size} there are",
            start + len
        ))
    } else {
        Ok(())
    }
}

/// An instruction as an error names it: a `VPU` bundle in assembler form.
struct Shown<'a>(&'a Instr);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Instr::Vpu { bundle } => write!(f, "VPU {}", Bundle::decode(*bundle)),
            other => write!(f, "{other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::{bf16_mul, F32_ONE};
    use config::vpu_isa::Op;
    use config::EupOp;

    const ONE_BF16: u16 = 0x3F80;
    const TWO_BF16: u16 = 0x4000;
    const TWO: u32 = 0x4000_0000;
    const NAN: u32 = 0x7FC0_0000;

    /// R = C = 2, W = 2, 16 VMEM words, 4 accumulator rows, 8 weight rows.
    fn cfg() -> TensorCore2Config {
        TensorCore2Config::new(2, 2, 1)
            .unwrap()
            .with_memories(16, 4, 8)
            .unwrap()
    }

    fn run(m: &mut Machine, program: &[Instr], input: &[u32]) -> Result<Vec<u32>, ProgramError> {
        let mut out = vec![0u32; 8];
        m.run(program, input, &mut out)?;
        Ok(out)
    }

    #[test]
    fn host_windows_move_elements_at_any_address() {
        let mut m = Machine::new(&cfg());
        let input = [1, 2, 3, 4, 5];
        let program = [
            Instr::HostIn {
                dst: 3,
                src: 1,
                n: 4,
            },
            Instr::HostOut {
                dst: 2,
                src: 2,
                n: 6,
            },
            Instr::Halt,
        ];
        let out = run(&mut m, &program, &input).unwrap();
        assert_eq!(out, [0, 0, 0, 2, 3, 4, 5, 0]);
        // Element 3 is word 1's element 1.
        assert_eq!(m.vpu().word(1), &[0, 2]);
        assert_eq!(m.vmem()[3..7], [2, 3, 4, 5]);
    }

    #[test]
    fn vpu_bundles_run_on_the_unified_buffer() {
        let mut m = Machine::new(&cfg());
        m.write_elems(0, &[F32_ONE, TWO, F32_ONE, F32_ONE]);
        let add = Bundle::op(Op::AddF32, 2, &[0, 1])
            .with_load(1, 1)
            .with_store(2, 3);
        let program = [
            Instr::Vpu {
                bundle: Bundle::nop().with_load(0, 0).encode(),
            },
            Instr::Vpu {
                bundle: add.encode(),
            },
            Instr::Sync,
            Instr::Halt,
        ];
        let info = m.run(&program, &[], &mut []).unwrap();
        assert_eq!((info.count(Opcode::Vpu), info.instructions()), (2, 4));
        assert_eq!(m.vmem()[6..8], [TWO, 0x4040_0000]);
    }

    #[test]
    fn rw_and_mm_take_tiles_bottom_row_first_and_overwrite_or_add_in_bf16() {
        let mut m = Machine::new(&cfg());
        // A tile stored bottom row first: rows 0, 1 of the memory are the
        // tile's rows 1 and 0. T = [[1, 2], [2, 1]] (bf16).
        m.load_weights(0, &[TWO_BF16, ONE_BF16, ONE_BF16, TWO_BF16]);
        m.load_weights(2, &[TWO_BF16, ONE_BF16, ONE_BF16, TWO_BF16]);
        // Activation rows from elements 0 (1, 1) and 1 (1, 2): stride 1.
        m.write_elems(0, &[0x0001_3F80, 0xFFFF_3F80, 0x4000]);
        let mm = |add| Instr::Matmul {
            acc: 1,
            src: 0,
            stride: 1,
            n: 2,
            int8: false,
            add,
        };
        let program = [
            Instr::ReadWeights { row: 0, n: 4 },
            mm(false),
            mm(true),
            Instr::MoveAcc {
                dst: 8,
                stride: 2,
                acc: 1,
                n: 2,
            },
            Instr::Halt,
        ];
        run(&mut m, &program, &[]).unwrap();
        // Row (1, 1): (3, 3), twice: 6, 6. Row (1, 2): (5, 4), twice: 10, 8.
        // Bits 31..16 of the activations are ignored.
        assert_eq!(
            m.vmem()[8..12],
            [0x40C0_0000, 0x40C0_0000, 0x4120_0000, 0x4100_0000]
        );
        assert_eq!(m.acc_row(0), &[0, 0]);
        assert_eq!(m.stream_rows(), 0);
    }

    #[test]
    fn the_tile_sum_starts_from_plus_zero_and_pads_nothing_itself() {
        let mut m = Machine::new(&cfg());
        // -0 x 1 = -0, and +0.0 + -0 = +0: the accumulator gets +0.
        m.load_weights(0, &[0, 0, ONE_BF16, 0]);
        m.write_elems(0, &[0x8000, 0]);
        let program = [
            Instr::ReadWeights { row: 0, n: 2 },
            Instr::Matmul {
                acc: 0,
                src: 0,
                stride: 0,
                n: 1,
                int8: false,
                add: false,
            },
            Instr::Halt,
        ];
        run(&mut m, &program, &[]).unwrap();
        assert_eq!(m.acc_row(0), &[0, 0]);
        assert_eq!(bf16_mul(0x8000, ONE_BF16), 0x8000_0000);
    }

    #[test]
    fn int8_rows_read_low_bytes_and_wrap() {
        let mut m = Machine::new(&cfg());
        // T = [[-128, 1], [-128, 0]] in low bytes (high bytes ignored).
        m.load_weights(0, &[0x1180, 0x0000, 0xFF80, 0x2201]);
        m.write_elems(0, &[0xABCD_EF80, 0x80]);
        let mm = |add| Instr::Matmul {
            acc: 0,
            src: 0,
            stride: 0,
            n: 1,
            int8: true,
            add,
        };
        let program = [
            Instr::ReadWeights { row: 0, n: 2 },
            mm(false),
            Instr::ReadWeights { row: 0, n: 2 },
            mm(true),
            Instr::Halt,
        ];
        // Column 0: (-128)(-128) x 2 = 32768, twice 65536; column 1: -128.
        m.acc.fill(7);
        run(&mut m, &program, &[]).unwrap();
        assert_eq!(m.acc_row(0), &[65536, (-256i32) as u32]);
        // Wrapping: an add to i32::MAX.
        m.acc[0] = i32::MAX as u32;
        let program = [Instr::ReadWeights { row: 0, n: 2 }, mm(true), Instr::Halt];
        run(&mut m, &program, &[]).unwrap();
        assert_eq!(m.acc_row(0)[0], (i32::MAX as u32).wrapping_add(32768));
    }

    #[test]
    fn rwv_appends_its_rows_last_first() {
        let mut m = Machine::new(&cfg());
        // Two rows of C = 2 from VMEM, at stride 3: row 0 = (1, 0), row 1 =
        // (0, 1) as bf16 in bits 15..0 (bits 31..16 ignored). Appended last
        // first, the MM takes row 1 as the tile's bottom row: T = [[1, 0], [0, 1]].
        m.write_elems(
            0,
            &[
                0x1234_3F80,
                0,
                0,
                0,
                0xFFFF_3F80,
                0,
                TWO,
                0x3F80_0000 | 0x4000,
            ],
        );
        let program = [
            Instr::ReadWeightsVmem {
                src: 0,
                stride: 3,
                n: 2,
            },
            Instr::Matmul {
                acc: 2,
                src: 6,
                stride: 0,
                n: 1,
                int8: false,
                add: false,
            },
            Instr::Halt,
        ];
        run(&mut m, &program, &[]).unwrap();
        // Row (0 from 0x4000_0000's low half, 2.0): (0, 2).
        assert_eq!(m.acc_row(2), &[0, TWO]);
        // The same rows by RW of the tile stored bottom row first.
        let mut by_rw = Machine::new(&cfg());
        by_rw.load_weights(0, &[0, ONE_BF16, ONE_BF16, 0]);
        by_rw.write_elems(6, &[TWO, 0x4000]);
        let program = [
            Instr::ReadWeights { row: 0, n: 2 },
            Instr::Matmul {
                acc: 2,
                src: 6,
                stride: 0,
                n: 1,
                int8: false,
                add: false,
            },
            Instr::Halt,
        ];
        run(&mut by_rw, &program, &[]).unwrap();
        assert_eq!(by_rw.acc_row(2), m.acc_row(2));
    }

    #[test]
    fn mv_writes_rows_in_order_and_later_rows_win() {
        let mut m = Machine::new(&cfg());
        m.acc[..6].copy_from_slice(&[1, 2, 3, 4, 5, 6]);
        let program = [
            Instr::MoveAcc {
                dst: 1,
                stride: 1,
                acc: 0,
                n: 3,
            },
            Instr::Halt,
        ];
        run(&mut m, &program, &[]).unwrap();
        // Each row's first column lands at 1 + j; the last row's second after it.
        assert_eq!(m.vmem()[..6], [0, 1, 3, 5, 6, 0]);
    }

    #[test]
    fn eup_streams_in_place_or_apart() {
        let mut m = Machine::new(&cfg());
        let four = 0x4080_0000;
        m.write_elems(0, &[four, F32_ONE, 0xFF80_0000, TWO, four, four]);
        let program = [
            // In place: rsqrt of 4, 1, -inf.
            Instr::Eup {
                op: EupOp::Rsqrt,
                dst: 0,
                a: 0,
                b: 0,
                n: 3,
            },
            // div(a, b) with b apart: 2 / 4, 4 / 4.
            Instr::Eup {
                op: EupOp::Div,
                dst: 8,
                a: 3,
                b: 4,
                n: 2,
            },
            // The destination equals operand b's range: 0.5 / 4, 1 / 4.
            Instr::Eup {
                op: EupOp::Div,
                dst: 4,
                a: 8,
                b: 4,
                n: 2,
            },
            Instr::Halt,
        ];
        let mut out = [];
        let info = m.run(&program, &[], &mut out).unwrap();
        assert_eq!(m.vmem()[..3], [0x3F00_0000, F32_ONE, NAN]);
        assert_eq!(m.vmem()[8..10], [0x3F00_0000, F32_ONE]);
        assert_eq!(m.vmem()[4..6], [0x3E00_0000, 0x3E80_0000]);
        assert_eq!(info.eup_elems, 7);
        // A partial overlap is refused, naming the operand.
        let bad = [
            Instr::Eup {
                op: EupOp::Exp,
                dst: 1,
                a: 0,
                b: 1,
                n: 2,
            },
            Instr::Halt,
        ];
        let e = m.run(&bad, &[], &mut out).unwrap_err().0;
        assert!(
            e.starts_with("instruction 0 (EUP.exp") && e.contains("operand a"),
            "{e}"
        );
        // A unary operation does not read b: b may overlap.
        let unary = [
            Instr::Eup {
                op: EupOp::Exp,
                dst: 10,
                a: 12,
                b: 11,
                n: 2,
            },
            Instr::Halt,
        ];
        assert!(m.run(&unary, &[], &mut out).is_ok());
    }

    #[test]
    fn state_persists_from_run_to_run() {
        let mut m = Machine::new(&cfg());
        run(
            &mut m,
            &[
                Instr::HostIn {
                    dst: 5,
                    src: 0,
                    n: 1,
                },
                Instr::Halt,
            ],
            &[42],
        )
        .unwrap();
        let out = run(
            &mut m,
            &[
                Instr::HostOut {
                    dst: 0,
                    src: 5,
                    n: 1,
                },
                Instr::Halt,
                // Never reached.
                Instr::HostOut {
                    dst: 100,
                    src: 5,
                    n: 1,
                },
            ],
            &[],
        )
        .unwrap();
        assert_eq!(out[0], 42);
    }

    #[test]
    fn programs_that_cannot_run_are_refused_naming_the_instruction() {
        let mut m = Machine::new(&cfg());
        let err = |m: &mut Machine, p: &[Instr], input: &[u32]| {
            let e = run(m, p, input).unwrap_err().0;
            assert!(!e.contains('\n'), "{e}");
            e
        };
        let mm = Instr::Matmul {
            acc: 0,
            src: 0,
            stride: 0,
            n: 1,
            int8: false,
            add: false,
        };
        let e = err(&mut m, &[mm], &[]);
        assert!(e.contains("does not end with HALT"), "{e}");
        let e = err(&mut m, &[Instr::Sync, mm, Instr::Halt], &[]);
        assert!(
            e.starts_with("instruction 1 (MM ") && e.contains("weight stream holds 0 rows"),
            "{e}"
        );
        let e = err(
            &mut m,
            &[
                Instr::HostIn {
                    dst: 0,
                    src: 0,
                    n: 0,
                },
                Instr::Halt,
            ],
            &[1],
        );
        assert!(
            e.starts_with("instruction 0 (HIN") && e.ends_with("n = 0"),
            "{e}"
        );
        let e = err(
            &mut m,
            &[
                Instr::HostIn {
                    dst: 31,
                    src: 0,
                    n: 2,
                },
                Instr::Halt,
            ],
            &[1, 2],
        );
        assert!(e.contains("VMEM elements 31..33"), "{e}");
        let e = err(
            &mut m,
            &[
                Instr::HostIn {
                    dst: 0,
                    src: 1,
                    n: 2,
                },
                Instr::Halt,
            ],
            &[1, 2],
        );
        assert!(e.contains("IN elements 1..3"), "{e}");
        let e = err(
            &mut m,
            &[
                Instr::HostOut {
                    dst: 7,
                    src: 0,
                    n: 2,
                },
                Instr::Halt,
            ],
            &[],
        );
        assert!(e.contains("OUT elements 7..9"), "{e}");
        let e = err(
            &mut m,
            &[Instr::ReadWeights { row: 7, n: 2 }, Instr::Halt],
            &[],
        );
        assert!(e.contains("weight-memory rows 7..9"), "{e}");
        let e = err(
            &mut m,
            &[
                Instr::MoveAcc {
                    dst: 0,
                    stride: 2,
                    acc: 3,
                    n: 2,
                },
                Instr::Halt,
            ],
            &[],
        );
        assert!(e.contains("accumulator rows 3..5"), "{e}");
        // The last RWV row would end past VMEM's 32 elements.
        let e = err(
            &mut m,
            &[
                Instr::ReadWeightsVmem {
                    src: 0,
                    stride: 16,
                    n: 3,
                },
                Instr::Halt,
            ],
            &[],
        );
        assert!(e.contains("VMEM elements 0..34"), "{e}");
        let mut bad = Bundle::nop();
        bad.alu.opcode = 0x7F;
        let e = err(
            &mut m,
            &[
                Instr::Vpu {
                    bundle: bad.encode(),
                },
                Instr::Halt,
            ],
            &[],
        );
        assert!(
            e.starts_with("instruction 0 (VPU ") && e.contains("illegal VPU operation"),
            "{e}"
        );
        // MM.add from the last row of a two-row MM right before it; from its
        // first row, or after a one-row MM, it may.
        let mm_at = |acc, n, add| Instr::Matmul {
            acc,
            src: 0,
            stride: 1,
            n,
            int8: false,
            add,
        };
        let two_tiles = Instr::ReadWeights { row: 0, n: 4 };
        let e = err(
            &mut Machine::new(&cfg()),
            &[
                two_tiles,
                mm_at(0, 2, false),
                mm_at(1, 1, true),
                Instr::Halt,
            ],
            &[],
        );
        assert!(
            e.starts_with("instruction 2 (MM.add 1,") && e.contains("last row of the 2-row MM"),
            "{e}"
        );
        for ok in [
            [
                two_tiles,
                mm_at(0, 2, false),
                mm_at(0, 2, true),
                Instr::Halt,
            ],
            [
                two_tiles,
                mm_at(1, 1, false),
                mm_at(1, 1, true),
                Instr::Halt,
            ],
        ] {
            assert!(run(&mut Machine::new(&cfg()), &ok, &[]).is_ok());
        }
        // Rows left in the stream at HALT; they stay for the caller to see.
        let e = err(
            &mut m,
            &[Instr::ReadWeights { row: 0, n: 3 }, mm, Instr::Halt],
            &[],
        );
        assert!(
            e.starts_with("instruction 2 (HALT)") && e.contains("still holds 1 rows"),
            "{e}"
        );
        assert_eq!(m.stream_rows(), 1);
    }
}
