//! The protocol client: commands, replies, and whole matrix multiplications.

use crate::protocol::{self, crc8_over, crc8_update, flags, header, status, Opcode};
use crate::transport::Transport;
use config::mxu_plan::MatmulPlan;
use config::{ConfigError, ElemType, MxuConfig};
use std::fmt;
use std::time::Duration;

/// Why a command failed. Every message is one line.
#[derive(Debug)]
pub enum HostError {
    /// The link itself failed (the port went away, a read error).
    Io(String),
    /// No (complete) reply came in time.
    Timeout(String),
    /// A reply's CRC does not match: bytes were lost or changed on the way.
    Corrupt(String),
    /// The bridge answered with an error status.
    Refused { command: String, status: u8 },
    /// The other end is not a bridge this client understands.
    NotABridge(String),
    /// Operands that do not fit the command or the array.
    Shape(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Io(s)
            | HostError::Timeout(s)
            | HostError::Corrupt(s)
            | HostError::NotABridge(s)
            | HostError::Shape(s) => f.write_str(s),
            HostError::Refused { command, status } => write!(
                f,
                "{command} refused: {} (status {status:#04x})",
                status::describe(*status)
            ),
        }
    }
}

impl std::error::Error for HostError {}

impl From<std::io::Error> for HostError {
    fn from(e: std::io::Error) -> Self {
        HostError::Io(format!("serial link: {e}"))
    }
}

/// The core behind the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreKind {
    /// The bare MXU (protocol version 1).
    Mxu,
    /// The TensorCore (protocol version 2).
    TensorCore,
}

/// What the bridge reports about itself (the constant part of STATUS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    pub version: u8,
    pub core: CoreKind,
    pub dtype: ElemType,
    /// Array rows R (the K extent of a weight tile).
    pub rows: u32,
    /// Array columns C (the N extent of a weight tile).
    pub cols: u32,
    pub acc_rows: u32,
    /// The activation buffer's rows (the TensorCore's unified buffer's).
    pub act_rows: u32,
    /// Weight tiles the bridge queues ahead of MATMUL.
    pub max_queued: u8,
    /// The bridge's clock cycles per UART bit.
    pub clocks_per_bit: u16,
}

impl DeviceInfo {
    /// Bytes of one operand.
    pub fn elem_bytes(&self) -> usize {
        self.dtype.operand_bits() as usize / 8
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.core == CoreKind::TensorCore {
            return write!(
                f,
                "{} {}x{} TensorCore, {} accumulator rows, {} unified-buffer rows, protocol v{}, {} clocks per bit",
                self.dtype,
                self.rows,
                self.cols,
                self.acc_rows,
                self.act_rows,
                self.version,
                self.clocks_per_bit
            );
        }
        write!(
            f,
            "{} {}x{} MXU, {} accumulator rows, {} activation rows, protocol v{}, {} clocks per bit",
            self.dtype,
            self.rows,
            self.cols,
            self.acc_rows,
            self.act_rows,
            self.version,
            self.clocks_per_bit
        )
    }
}

/// A STATUS reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub info: DeviceInfo,
    /// Weight tiles loaded and not yet used by a MATMUL.
    pub queued: u8,
    /// [`flags`] bits; the error flags are cleared by the STATUS that reports them.
    pub flags: u8,
}

impl Status {
    /// The error flags in words, e.g. `["framing error"]`.
    pub fn errors(&self) -> Vec<&'static str> {
        [
            (flags::FRAMING_ERROR, "framing error"),
            (flags::STRAY_BYTE, "stray byte"),
            (flags::TIMEOUT, "command timeout"),
        ]
        .into_iter()
        .filter(|(bit, _)| self.flags & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }
}

/// Bytes moved and commands sent by a client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub commands: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// A connected bridge.
pub struct Client<T: Transport> {
    link: T,
    info: DeviceInfo,
    latency: Duration,
    stats: LinkStats,
}

/// How long a reply may be late beyond its bytes' wire time, by default.
pub const DEFAULT_LATENCY: Duration = Duration::from_millis(500);

fn op_name(op: u8) -> String {
    Opcode::ALL
        .into_iter()
        .find(|o| *o as u8 == op)
        .map_or_else(|| format!("opcode {op:#04x}"), |o| o.name().to_string())
}

fn parse_status(p: &[u8]) -> Result<Status, HostError> {
    if p[0..4] != protocol::MAGIC {
        return Err(HostError::NotABridge(format!(
            "the device does not identify as a Systole bridge (magic {:02x?})",
            &p[0..4]
        )));
    }
    if p[4] != protocol::VERSION && p[4] != protocol::VERSION_TC {
        return Err(HostError::NotABridge(format!(
            "the bridge speaks protocol v{}, this client v{} and v{}",
            p[4],
            protocol::VERSION,
            protocol::VERSION_TC
        )));
    }
    let (core, dtype) = match (p[4], p[5]) {
        (_, 0) => (CoreKind::Mxu, ElemType::Int8),
        (_, 1) => (CoreKind::Mxu, ElemType::Bf16),
        (protocol::VERSION_TC, protocol::CORE_TENSORCORE) => (CoreKind::TensorCore, ElemType::Int8),
        (_, d) => {
            return Err(HostError::NotABridge(format!(
                "the bridge reports an unknown core kind or element type {d}"
            )))
        }
    };
    let u16_at = |i: usize| u16::from_le_bytes([p[i], p[i + 1]]);
    let rows = u16_at(6) as u32;
    let cols = u16_at(8) as u32;
    if rows == 0 || cols == 0 || p[10] > 16 || p[11] > 16 {
        return Err(HostError::NotABridge(format!(
            "the bridge reports an impossible array ({rows}x{cols}, 2^{} x 2^{} rows)",
            p[10], p[11]
        )));
    }
    Ok(Status {
        info: DeviceInfo {
            version: p[4],
            core,
            dtype,
            rows,
            cols,
            acc_rows: 1 << p[10],
            act_rows: 1 << p[11],
            max_queued: p[12] >> 4,
            clocks_per_bit: u16_at(14),
        },
        queued: p[12] & 0x0f,
        flags: p[13],
    })
}

impl<T: Transport> Client<T> {
    /// Connects to the bridge on `link`: drops stale input, asks for STATUS
    /// (after a [`resync`](Self::resync) if the first answer is missing or
    /// wrong) and checks that a bridge of this protocol version answers.
    pub fn connect(link: T) -> Result<Client<T>, HostError> {
        Client::connect_with(link, DEFAULT_LATENCY)
    }

    /// [`connect`](Self::connect) with another reply latency allowance
    /// (beyond the wire time of the bytes themselves).
    pub fn connect_with(mut link: T, latency: Duration) -> Result<Client<T>, HostError> {
        link.discard_input()?;
        // A placeholder until STATUS tells the truth.
        let info = DeviceInfo {
            version: protocol::VERSION,
            core: CoreKind::Mxu,
            dtype: ElemType::Int8,
            rows: 1,
            cols: 1,
            acc_rows: 2,
            act_rows: 2,
            max_queued: 1,
            clocks_per_bit: 0,
        };
        let mut client = Client {
            link,
            info,
            latency,
            stats: LinkStats::default(),
        };
        // The bridge may still be inside a command an earlier host left
        // unfinished: if the first STATUS goes wrong, resync and ask again.
        let status = match client.status() {
            Ok(s) => Ok(s),
            Err(HostError::Io(e)) => Err(HostError::Io(e)),
            Err(_) => client.resync(),
        }
        .map_err(|e| match e {
            HostError::Timeout(_) => HostError::NotABridge(
                "no reply to STATUS: is the bridge loaded, the port and baud rate right?".into(),
            ),
            other => other,
        })?;
        client.info = status.info;
        Ok(client)
    }

    /// The array and buffers of the bridge.
    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    /// Traffic so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// The underlying transport.
    pub fn link_mut(&mut self) -> &mut T {
        &mut self.link
    }

    pub fn into_link(self) -> T {
        self.link
    }

    /// Reads exactly `n` bytes, each within `timeout` of the previous one.
    fn read_exact(
        &mut self,
        n: usize,
        timeout: Duration,
        what: &str,
    ) -> Result<Vec<u8>, HostError> {
        let mut out = vec![0u8; n];
        let mut got = 0;
        while got < n {
            let k = self.link.recv(&mut out[got..], timeout)?;
            if k == 0 {
                return Err(HostError::Timeout(format!(
                    "{what}: no reply after {got} of {n} bytes (waited {} ms)",
                    timeout.as_millis()
                )));
            }
            got += k;
        }
        self.stats.bytes_received += n as u64;
        Ok(out)
    }

    /// Sends one command and returns its reply payload (`reply_len` bytes),
    /// checking the status byte and the CRC. The low-level entry point: the
    /// typed methods below are built on it.
    pub fn command(
        &mut self,
        op: u8,
        fields: [u16; 3],
        payload: &[u8],
        reply_len: usize,
    ) -> Result<Vec<u8>, HostError> {
        self.command_waiting(op, fields, payload, reply_len, Duration::ZERO)
    }

    /// [`command`](Self::command) for a command the bridge works on for up
    /// to `work` before it replies (a TensorCore RUN).
    pub fn command_waiting(
        &mut self,
        op: u8,
        fields: [u16; 3],
        payload: &[u8],
        reply_len: usize,
        work: Duration,
    ) -> Result<Vec<u8>, HostError> {
        let name = op_name(op);
        let mut out = header(op, fields[0], fields[1], fields[2]).to_vec();
        out.extend_from_slice(payload);
        self.link.send(&out)?;
        self.stats.commands += 1;
        self.stats.bytes_sent += out.len() as u64;
        let byte = self.link.byte_time();
        // The command is still on the wire when `send` returns.
        let first = self.latency + work + byte * (out.len() as u32 + 2);
        let crc = crc8_over(0, &out);
        let st = self.read_exact(1, first, &name)?[0];
        let crc = crc8_update(crc, st);
        if st != status::OK {
            let c = self.read_exact(1, self.latency + byte * 2, &name)?[0];
            if c != crc {
                return Err(HostError::Corrupt(format!(
                    "{name}: reply status {st:#04x} with a bad CRC (got {c:#04x}, expected {crc:#04x})"
                )));
            }
            return Err(HostError::Refused {
                command: name,
                status: st,
            });
        }
        let rest = self.read_exact(reply_len + 1, self.latency + byte * 2, &name)?;
        let crc = crc8_over(crc, &rest[..reply_len]);
        if rest[reply_len] != crc {
            return Err(HostError::Corrupt(format!(
                "{name}: reply CRC {:#04x}, expected {crc:#04x}",
                rest[reply_len]
            )));
        }
        Ok(rest[..reply_len].to_vec())
    }

    /// STATUS: the array parameters, queued tiles and the error flags (which
    /// this clears).
    pub fn status(&mut self) -> Result<Status, HostError> {
        let p = self.command(Opcode::Status as u8, [0; 3], &[], protocol::STATUS_BYTES)?;
        parse_status(&p)
    }

    /// After a failure: waits until the bridge has abandoned any half-received
    /// command, drops whatever arrived, asks for STATUS, and uses up weight
    /// tiles left queued (running each on activation row 0 into accumulator
    /// row 0), so the next tile loaded is the next one used. Returns the
    /// STATUS from before the queue was emptied (its error flags tell what
    /// happened).
    pub fn resync(&mut self) -> Result<Status, HostError> {
        let quiet = self.link.byte_time() * protocol::RESYNC_BYTE_TIMES;
        let mut buf = [0u8; 256];
        while self.link.recv(&mut buf, quiet)? > 0 {}
        self.link.discard_input()?;
        let status = self.status()?;
        for _ in 0..status.queued {
            self.matmul_step(0, 1, 0, false)?;
        }
        Ok(status)
    }

    fn pack(&self, elems: &[u16]) -> Vec<u8> {
        match self.info.dtype {
            ElemType::Int8 => elems.iter().map(|&e| e as u8).collect(),
            ElemType::Bf16 => elems.iter().flat_map(|e| e.to_le_bytes()).collect(),
        }
    }

    fn rows_of(&self, elems: usize, per_row: usize, what: &str) -> Result<u16, HostError> {
        if elems == 0 || !elems.is_multiple_of(per_row) || elems / per_row > u16::MAX as usize {
            return Err(HostError::Shape(format!(
                "{what}: {elems} elements are not 1..=65535 rows of {per_row}"
            )));
        }
        Ok((elems / per_row) as u16)
    }

    /// WRITE_ACT: activation rows (R elements each, as bit patterns; int8 in
    /// the low byte) into the buffer from row `first_row` on.
    pub fn write_act(&mut self, first_row: u16, elems: &[u16]) -> Result<(), HostError> {
        let rows = self.rows_of(elems.len(), self.info.rows as usize, "WRITE_ACT")?;
        let payload = self.pack(elems);
        self.command(Opcode::WriteAct as u8, [first_row, rows, 0], &payload, 0)?;
        Ok(())
    }

    /// READ_ACT: `rows` activation rows from `first_row` on.
    pub fn read_act(&mut self, first_row: u16, rows: u16) -> Result<Vec<u16>, HostError> {
        let eb = self.info.elem_bytes();
        let len = rows as usize * self.info.rows as usize * eb;
        let p = self.command(Opcode::ReadAct as u8, [first_row, rows, 0], &[], len)?;
        Ok(match self.info.dtype {
            ElemType::Int8 => p.iter().map(|&b| b as u16).collect(),
            ElemType::Bf16 => p
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect(),
        })
    }

    /// LOAD_WEIGHTS: one R x C weight tile, row-major with k = 0 first (the
    /// client sends it bottom row first, as the MXU loads it).
    pub fn load_weights(&mut self, tile: &[u16]) -> Result<(), HostError> {
        let (r, c) = (self.info.rows as usize, self.info.cols as usize);
        if tile.len() != r * c {
            return Err(HostError::Shape(format!(
                "LOAD_WEIGHTS: a tile has {} elements ({r}x{c}), got {}",
                r * c,
                tile.len()
            )));
        }
        let ordered: Vec<u16> = (0..r)
            .rev()
            .flat_map(|k| tile[k * c..(k + 1) * c].iter().copied())
            .collect();
        let payload = self.pack(&ordered);
        self.command(Opcode::LoadWeights as u8, [0; 3], &payload, 0)?;
        Ok(())
    }

    /// MATMUL / MATMUL_ADD: streams activation rows `act_row..act_row+rows`
    /// through the oldest queued weight tile into accumulator rows
    /// `acc_row..acc_row+rows`, overwriting them or adding to them.
    pub fn matmul_step(
        &mut self,
        act_row: u16,
        rows: u16,
        acc_row: u16,
        add: bool,
    ) -> Result<(), HostError> {
        let op = if add {
            Opcode::MatmulAdd
        } else {
            Opcode::Matmul
        };
        self.command(op as u8, [act_row, rows, acc_row], &[], 0)?;
        Ok(())
    }

    /// READ_ACC: `rows` accumulator rows from `first_row` on, C values each
    /// (int32 or fp32 bit patterns).
    pub fn read_acc(&mut self, first_row: u16, rows: u16) -> Result<Vec<u32>, HostError> {
        let len = rows as usize * self.info.cols as usize * 4;
        let p = self.command(Opcode::ReadAcc as u8, [first_row, rows, 0], &[], len)?;
        Ok(p.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// C = A x B with int8 A (`m x k`, row-major) and B (`k x n`): int32 C,
    /// wrapping, as the MXU computes it.
    pub fn matmul_int8(
        &mut self,
        a: &[i8],
        b: &[i8],
        (m, k, n): (usize, usize, usize),
    ) -> Result<Vec<i32>, HostError> {
        self.require(ElemType::Int8)?;
        let a: Vec<u16> = a.iter().map(|&x| x as u8 as u16).collect();
        let b: Vec<u16> = b.iter().map(|&x| x as u8 as u16).collect();
        let c = self.matmul_bits(&a, &b, (m, k, n))?;
        Ok(c.into_iter().map(|x| x as i32).collect())
    }

    /// C = A x B with bf16 A and B (bit patterns): fp32 C (bit patterns), as
    /// the MXU computes it (the result depends on the array's R).
    pub fn matmul_bf16(
        &mut self,
        a: &[u16],
        b: &[u16],
        (m, k, n): (usize, usize, usize),
    ) -> Result<Vec<u32>, HostError> {
        self.require(ElemType::Bf16)?;
        self.matmul_bits(a, b, (m, k, n))
    }

    fn require(&self, dtype: ElemType) -> Result<(), HostError> {
        if self.info.dtype == dtype {
            Ok(())
        } else {
            Err(HostError::Shape(format!(
                "the bridge's MXU is {}, not {dtype}",
                self.info.dtype
            )))
        }
    }

    /// The tiling of [`config::mxu_plan`], which the simulator's MXU driver
    /// and the golden cycle model follow too: B in R x C tiles (zero-padded
    /// at the edges); rows of A in blocks of P that fit both the accumulator
    /// and the activation buffer; per block, passes over groups of G n-tiles
    /// whose P x G results fit the accumulator. Per pass, each k-tile's
    /// activation rows (written once per block when all k-tiles fit the
    /// buffer) and, per n-tile, its weight tile and one MATMUL step (the
    /// first k-tile overwrites, later ones add).
    fn matmul_bits(
        &mut self,
        a: &[u16],
        b: &[u16],
        (m, k, n): (usize, usize, usize),
    ) -> Result<Vec<u32>, HostError> {
        let shape = |e: ConfigError| HostError::Shape(e.to_string());
        let cfg = MxuConfig::with_acc_rows(
            self.info.rows,
            self.info.cols,
            self.info.dtype,
            self.info.acc_rows,
        )
        .map_err(shape)?;
        // A block of A must also fit the activation buffer, and its row count
        // a u16 command field.
        let block_limit = (self.info.act_rows as usize).min(u16::MAX as usize);
        let plan = MatmulPlan::with_block_limit(&cfg, m, k, n, block_limit).map_err(shape)?;
        plan.check_operands(a.len(), b.len()).map_err(shape)?;
        let (r, cols) = (self.info.rows as usize, self.info.cols as usize);
        let act_rows = self.info.act_rows as usize;
        let k_tiles = plan.k_tiles();
        let mut c = vec![0u32; m * n];
        for pass in plan.passes() {
            let p = pass.rows;
            let resident = p * k_tiles <= act_rows;
            for kt in 0..k_tiles {
                let base = if resident { kt * p } else { 0 };
                // Resident rows stay in the buffer for the block's later passes.
                if !resident || pass.nt0 == 0 {
                    let rows: Vec<u16> = (0..p)
                        .flat_map(|mm| {
                            (0..r).map(move |rr| {
                                plan.a_index(pass.m0 + mm, kt, rr).map_or(0, |i| a[i])
                            })
                        })
                        .collect();
                    self.write_act(base as u16, &rows)?;
                }
                for g in 0..pass.n_tiles {
                    let nt = pass.nt0 + g;
                    let tile: Vec<u16> = (0..r * cols)
                        .map(|i| plan.b_index(kt, nt, i / cols, i % cols).map_or(0, |j| b[j]))
                        .collect();
                    self.load_weights(&tile)?;
                    let acc_row = pass.acc_row(g, 0) as u16;
                    self.matmul_step(base as u16, p as u16, acc_row, kt > 0)?;
                }
            }
            let out = self.read_acc(0, pass.acc_rows_used() as u16)?;
            for g in 0..pass.n_tiles {
                for mm in 0..p {
                    for cc in 0..cols {
                        if let Some(i) = plan.c_index(pass.m0 + mm, pass.nt0 + g, cc) {
                            c[i] = out[pass.acc_row(g, mm) * cols + cc];
                        }
                    }
                }
            }
        }
        Ok(c)
    }
}
