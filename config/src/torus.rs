//! The ICI torus's configuration ([`TorusConfig`]) and the wiring file
//! ([`Wiring`]), shared by the torus generator (`hw/torus`), the golden
//! model (`golden::torus`) and the simulator driver.
//!
//! Parameters:
//! - `x`, `y`, `z`: the torus's sizes, each 1..=4 (a 4x4x4 cube is 64 chips).
//! - `vc_depth`: flits each virtual channel's input buffer holds at every
//!   torus port of a router, 2..=63 (the per-VC credits).
//! - `vcs`: virtual channels per torus port: 1, 2 (the default,
//!   [`TORUS_VCS`]) or 4. One suffices for deadlock freedom on rings of up
//!   to 4 with the router's split of half-ring distances; two add the
//!   dateline (VC 0 before a packet crosses its dimension's wraparound link,
//!   VC 1 after), the argument that holds on rings of any size; four split
//!   each of those two by whether the packet goes on in the same dimension
//!   after its next hop, so that packets going straight and packets turning
//!   do not wait behind each other. `golden::torus` checks the channel
//!   dependency graph of every torus up to 4x4x4 for each count.
//! - the link's `latency`, `replay_depth`, `rx_buffer`, `replay_timeout`,
//!   `max_retries` and `train_words` (see [`IciConfig`]); the torus's flits
//!   are always [`TORUS_FLIT_BYTES`] bytes (one router flit: a header and one
//!   32-bit element).
//! - `depth`: the router's pipeline, 0..=[`TORUS_MAX_DEPTH`]. 1 routes each
//!   flit as it enters its input buffer (lookahead routing: the buffer holds
//!   its output port and VC), so the route computation leaves the path from
//!   a buffer's head through the arbiters to the links. A flit's route
//!   depends only on where it is and where it goes, so the router's cycles
//!   are the same at every depth.
//!
//! A chip's number is c = x + X * (y + Y * z) in logical torus coordinates.

use crate::{one_line, ConfigError, IciConfig};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The default number of virtual channels per torus port: VC 0 before a
/// packet crosses its dimension's dateline, VC 1 after.
pub const TORUS_VCS: u32 = 2;

/// The VC counts a torus can have.
pub const TORUS_VC_COUNTS: [u32; 3] = [1, 2, 4];

/// Bits of a router flit besides its credit counts: the data flag, a
/// 2-bit VC field, and the packet (three 2-bit coordinates, a 2-bit tag, a
/// 32-bit payload).
const FLIT_FIXED_BITS: u32 = 1 + 2 + 40;

/// Payload bytes of a torus link's flit.
pub const TORUS_FLIT_BYTES: u32 = 8;

/// A router's ports, in index order: the six torus ports (port 2d + 0 leads
/// to the neighbour one step up in dimension d, wrapping from the last
/// coordinate to 0; port 2d + 1 one step down), then the local port. The
/// numbering the RTL, the golden model and the drivers share.
pub const TORUS_PORTS: [&str; 7] = ["xp", "xm", "yp", "ym", "zp", "zm", "local"];

/// The local port's index in [`TORUS_PORTS`].
pub const LOCAL_PORT: usize = 6;

/// Largest size of each torus dimension.
pub const TORUS_MAX_DIM: u32 = 4;

/// Words of a router's injection and ejection buffers (3 or more sustain a
/// word per cycle), shared by the RTL and the cycle model.
pub const TORUS_LOCAL_DEPTH: u32 = 4;

/// The order-v2 all-reduce engine's slot counts and adder depth, shared by
/// the RTL (`hw/torus`), its cycle model (`golden::torus_v2`) and the
/// driver. Slot counts are powers of two (the queues are ring buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AllreduceV2 {
    /// Slots of each receive queue: one per link, part and stream; the
    /// sender holds one credit per slot.
    pub queue: u32,
    /// Slots of each outbound queue: one per link and part.
    pub outbound: u32,
    /// Slots of each input, stage, final and handoff queue.
    pub local: u32,
    /// Register stages of each reduction processor's fp32 adder; a sum is
    /// in its next queue `adder_stages + 1` cycles after its step.
    pub adder_stages: u32,
}

impl AllreduceV2 {
    /// Receive queues that cover a stream's credit round trip on the
    /// torus's links at their full rate.
    pub const DEFAULT: AllreduceV2 = AllreduceV2 {
        queue: 16,
        outbound: 8,
        local: 32,
        adder_stages: 2,
    };

    /// Bits of an element's index within its part (q = e div 3): vectors of
    /// up to 3 x 2^16 elements per chip.
    pub const INDEX_BITS: u32 = 16;
}

/// Configuration of an X x Y x Z torus of chip nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TorusConfig {
    dims: [u32; 3],
    vc_depth: u32,
    link: IciConfig,
    depth: u32,
    vcs: u32,
}

/// The deepest router pipeline (see [`TorusConfig::with_depth`]).
pub const TORUS_MAX_DEPTH: u32 = 1;

impl TorusConfig {
    /// The link every default torus uses: 8-byte flits, a 32-flit window
    /// and receive buffer, 4 cycles in the stub.
    pub fn default_link() -> IciConfig {
        IciConfig::new(TORUS_FLIT_BYTES, 32, 32, 4, 64, 16, 8).expect("valid link")
    }

    /// A validated configuration.
    pub fn new(dims: [u32; 3], vc_depth: u32, link: IciConfig) -> Result<TorusConfig, ConfigError> {
        for (name, d) in ["x", "y", "z"].iter().zip(dims) {
            if !(1..=TORUS_MAX_DIM).contains(&d) {
                return Err(ConfigError(format!(
                    "torus size {name} must be between 1 and {TORUS_MAX_DIM}, got {d}"
                )));
            }
        }
        if !(2..=63).contains(&vc_depth) {
            return Err(ConfigError(format!(
                "torus vc_depth must be between 2 and 63, got {vc_depth}"
            )));
        }
        if link.flit_bytes() != TORUS_FLIT_BYTES {
            return Err(ConfigError(format!(
                "torus links carry {TORUS_FLIT_BYTES}-byte flits, got {}",
                link.flit_bytes()
            )));
        }
        Ok(TorusConfig {
            dims,
            vc_depth,
            link,
            depth: 0,
            vcs: TORUS_VCS,
        })
    }

    /// This configuration with `vcs` virtual channels per torus port (1, 2
    /// or 4); every flit carries a credit count per VC, and they must fit
    /// the 64-bit flit with its packet.
    pub fn with_vcs(self, vcs: u32) -> Result<TorusConfig, ConfigError> {
        if !TORUS_VC_COUNTS.contains(&vcs) {
            return Err(ConfigError(format!(
                "torus vcs must be 1, 2 or 4, got {vcs}"
            )));
        }
        let cfg = TorusConfig { vcs, ..self };
        // Bit 63 tells the all-reduce engine's flits from the router's.
        let bits = FLIT_FIXED_BITS + vcs * cfg.credit_bits();
        if bits > 63 {
            return Err(ConfigError(format!(
                "torus flits hold {vcs} credit counts of {} bits only with vc_depth below 32, got {}",
                cfg.credit_bits(),
                cfg.vc_depth
            )));
        }
        Ok(cfg)
    }

    /// This configuration with router pipeline `depth`
    /// (0..=[`TORUS_MAX_DEPTH`]; 1 computes each flit's route as it enters
    /// its input buffer).
    pub fn with_depth(self, depth: u32) -> Result<TorusConfig, ConfigError> {
        if depth > TORUS_MAX_DEPTH {
            return Err(ConfigError(format!(
                "torus depth must be between 0 and {TORUS_MAX_DEPTH}, got {depth}"
            )));
        }
        Ok(TorusConfig { depth, ..self })
    }

    /// The default VC depth and link for `dims`.
    pub fn with_dims(dims: [u32; 3]) -> Result<TorusConfig, ConfigError> {
        TorusConfig::new(dims, DEFAULT_VC_DEPTH, TorusConfig::default_link())
    }

    /// Parses `XxYxZ` (e.g. `4x4x4`).
    pub fn parse_dims(text: &str) -> Result<[u32; 3], ConfigError> {
        let parts: Vec<&str> = text.trim().split(['x', 'X']).collect();
        let bad = || ConfigError(format!("dims must be XxYxZ (e.g. 2x2x1), got '{text}'"));
        if parts.len() != 3 {
            return Err(bad());
        }
        let mut dims = [0u32; 3];
        for (d, p) in dims.iter_mut().zip(&parts) {
            *d = p.parse().map_err(|_| bad())?;
        }
        Ok(dims)
    }

    /// X, Y, Z.
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }
    /// Chips: X * Y * Z.
    pub fn chips(&self) -> usize {
        self.dims.iter().product::<u32>() as usize
    }
    /// Flits each VC's input buffer holds.
    pub fn vc_depth(&self) -> u32 {
        self.vc_depth
    }
    /// The configuration of every link.
    pub fn link(&self) -> &IciConfig {
        &self.link
    }
    /// The router's pipeline depth.
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// Virtual channels per torus port.
    pub fn vcs(&self) -> u32 {
        self.vcs
    }
    /// Bits of a flit's VC field: 1 for one or two VCs (one VC's field is
    /// always 0), 2 for four.
    pub fn vc_bits(&self) -> u32 {
        if self.vcs == 4 {
            2
        } else {
            1
        }
    }
    /// Bits of a per-VC credit count carried in a flit header.
    pub fn credit_bits(&self) -> u32 {
        u32::BITS - self.vc_depth.leading_zeros()
    }
    /// The chip number of logical coordinates `c`: x + X * (y + Y * z).
    pub fn chip(&self, c: [u32; 3]) -> usize {
        (c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])) as usize
    }
    /// The logical coordinates of chip number `n`.
    pub fn coords(&self, n: usize) -> [u32; 3] {
        let n = n as u32;
        let [x, y, _] = self.dims;
        [n % x, (n / x) % y, n / (x * y)]
    }

    /// The logical coordinates next to `at` through torus port `port`
    /// (0..6: x+, x-, y+, y-, z+, z-), round its ring.
    pub fn neighbour(&self, at: [u32; 3], port: usize) -> [u32; 3] {
        let d = port / 2;
        let k = self.dims[d];
        let mut c = at;
        c[d] = if port & 1 == 0 {
            (at[d] + 1) % k
        } else {
            (at[d] + k - 1) % k
        };
        c
    }

    /// Parameters as (name, value) pairs, for file headers and logs.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = [
            ("x", self.dims[0]),
            ("y", self.dims[1]),
            ("z", self.dims[2]),
            ("vc_depth", self.vc_depth),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        p.extend(
            self.link
                .params()
                .into_iter()
                .filter(|(k, _)| k != "flit_bytes" && k != "crc_bits"),
        );
        // Listed only when set, so depth 0's files are the ones from before
        // the parameter existed.
        if self.depth != 0 {
            p.push(("depth".to_string(), self.depth.to_string()));
        }
        if self.vcs != TORUS_VCS {
            p.push(("vcs".to_string(), self.vcs.to_string()));
        }
        p
    }

    /// Parses the TOML form; missing keys take the defaults (2x2x1).
    pub fn from_toml(text: &str) -> Result<TorusConfig, ConfigError> {
        let raw: RawTorusConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }
}

/// The default depth of each VC's input buffer: enough to cover the credit
/// round trip of the default link, so one VC alone keeps a link busy.
pub const DEFAULT_VC_DEPTH: u32 = 24;

impl Default for TorusConfig {
    fn default() -> Self {
        TorusConfig::with_dims([2, 2, 1]).expect("valid default")
    }
}

impl fmt::Display for TorusConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.dims;
        write!(
            f,
            "{x}x{y}x{z} torus, {} VCs of {} flits, links: {}",
            self.vcs, self.vc_depth, self.link
        )?;
        if self.depth != 0 {
            write!(f, ", router depth {}", self.depth)?;
        }
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTorusConfig {
    x: Option<u32>,
    y: Option<u32>,
    z: Option<u32>,
    vc_depth: Option<u32>,
    latency: Option<u32>,
    replay_depth: Option<u32>,
    rx_buffer: Option<u32>,
    replay_timeout: Option<u32>,
    max_retries: Option<u32>,
    train_words: Option<u32>,
    depth: Option<u32>,
    vcs: Option<u32>,
}

impl RawTorusConfig {
    fn validate(self) -> Result<TorusConfig, ConfigError> {
        let d = TorusConfig::default();
        let l = d.link;
        let link = IciConfig::new(
            TORUS_FLIT_BYTES,
            self.replay_depth.unwrap_or(l.replay_depth()),
            self.rx_buffer.unwrap_or(l.rx_buffer()),
            self.latency.unwrap_or(l.latency()),
            self.replay_timeout.unwrap_or(l.replay_timeout()),
            self.max_retries.unwrap_or(l.max_retries()),
            self.train_words.unwrap_or(l.train_words()),
        )?;
        TorusConfig::new(
            [
                self.x.unwrap_or(d.dims[0]),
                self.y.unwrap_or(d.dims[1]),
                self.z.unwrap_or(d.dims[2]),
            ],
            self.vc_depth.unwrap_or(d.vc_depth),
            link,
        )?
        .with_depth(self.depth.unwrap_or(d.depth))?
        .with_vcs(self.vcs.unwrap_or(d.vcs))
    }
}

impl Serialize for TorusConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let l = self.link;
        RawTorusConfig {
            x: Some(self.dims[0]),
            y: Some(self.dims[1]),
            z: Some(self.dims[2]),
            vc_depth: Some(self.vc_depth),
            latency: Some(l.latency()),
            replay_depth: Some(l.replay_depth()),
            rx_buffer: Some(l.rx_buffer()),
            replay_timeout: Some(l.replay_timeout()),
            max_retries: Some(l.max_retries()),
            train_words: Some(l.train_words()),
            depth: Some(self.depth),
            vcs: Some(self.vcs),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TorusConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawTorusConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

/// A packet as a chip sends and receives it at its router's local port: a
/// destination in logical coordinates, a 2-bit tag and a 32-bit payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Packet {
    pub dest: [u32; 3],
    pub tag: u8,
    pub payload: u32,
}

/// Which physical chip sits at each logical torus coordinate, as optical
/// circuit switches cable them: `chip_at[c]` is the physical chip at logical
/// chip number c. A permutation of 0..chips. The identity is the plain
/// torus; any other permutation re-cables it (a twisted torus is one).
///
/// The file form: one line per logical coordinate, `x y z chip`
/// (whitespace-separated decimal numbers); `#` starts a comment; blank lines
/// are skipped. Every coordinate appears once and every chip once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Wiring {
    chip_at: Vec<usize>,
}

impl Wiring {
    /// The identity: logical chip c is physical chip c.
    pub fn identity(cfg: &TorusConfig) -> Wiring {
        Wiring {
            chip_at: (0..cfg.chips()).collect(),
        }
    }

    /// From a table of physical chips by logical chip number; it must be a
    /// permutation of 0..chips.
    pub fn from_table(cfg: &TorusConfig, chip_at: Vec<usize>) -> Result<Wiring, ConfigError> {
        let n = cfg.chips();
        if chip_at.len() != n {
            return Err(ConfigError(format!(
                "wiring maps {} coordinates, the torus has {n} chips",
                chip_at.len()
            )));
        }
        let mut seen = vec![false; n];
        for &p in &chip_at {
            if p >= n {
                return Err(ConfigError(format!(
                    "wiring names chip {p}, the torus has chips 0..{}",
                    n - 1
                )));
            }
            if seen[p] {
                return Err(ConfigError(format!(
                    "wiring is not a permutation: chip {p} appears twice"
                )));
            }
            seen[p] = true;
        }
        Ok(Wiring { chip_at })
    }

    /// A twisted torus: the X wraparound of row (y, z) lands `twist` rows
    /// further on in Y. As a permutation: logical (x, y, z) sits on the
    /// physical chip of the plain torus at (x, (y + twist * x) mod Y, z) —
    /// cabling that the plain torus's chips cannot have by moving along X
    /// alone.
    pub fn twisted(cfg: &TorusConfig, twist: u32) -> Wiring {
        let [_, y_size, _] = cfg.dims();
        let chip_at = (0..cfg.chips())
            .map(|c| {
                let [x, y, z] = cfg.coords(c);
                cfg.chip([x, (y + twist * x) % y_size, z])
            })
            .collect();
        Wiring { chip_at }
    }

    /// Parses the file form for `cfg`. Errors are one line and name the
    /// line number.
    pub fn parse(cfg: &TorusConfig, text: &str) -> Result<Wiring, ConfigError> {
        let n = cfg.chips();
        let dims = cfg.dims();
        let mut chip_at: Vec<Option<usize>> = vec![None; n];
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let content = line.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let fields: Vec<&str> = content.split_whitespace().collect();
            if fields.len() != 4 {
                return Err(ConfigError(format!(
                    "wiring line {line_no}: expected 'x y z chip', got '{content}'"
                )));
            }
            let mut v = [0usize; 4];
            for (slot, f) in v.iter_mut().zip(&fields) {
                *slot = f.parse().map_err(|_| {
                    ConfigError(format!("wiring line {line_no}: '{f}' is not a number"))
                })?;
            }
            for (k, name) in ["x", "y", "z"].iter().enumerate() {
                if v[k] >= dims[k] as usize {
                    return Err(ConfigError(format!(
                        "wiring line {line_no}: {name} = {} is outside 0..{}",
                        v[k],
                        dims[k] - 1
                    )));
                }
            }
            let c = cfg.chip([v[0] as u32, v[1] as u32, v[2] as u32]);
            if chip_at[c].is_some() {
                return Err(ConfigError(format!(
                    "wiring line {line_no}: coordinate ({}, {}, {}) appears twice",
                    v[0], v[1], v[2]
                )));
            }
            chip_at[c] = Some(v[3]);
        }
        if let Some(c) = chip_at.iter().position(Option::is_none) {
            let [x, y, z] = cfg.coords(c);
            return Err(ConfigError(format!(
                "wiring is not a permutation: coordinate ({x}, {y}, {z}) has no chip"
            )));
        }
        Wiring::from_table(cfg, chip_at.into_iter().map(Option::unwrap).collect())
    }

    /// The file form (parses back to the same wiring).
    pub fn to_text(&self, cfg: &TorusConfig) -> String {
        let mut s = String::from("# x y z chip\n");
        for (c, p) in self.chip_at.iter().enumerate() {
            let [x, y, z] = cfg.coords(c);
            s.push_str(&format!("{x} {y} {z} {p}\n"));
        }
        s
    }

    /// The physical chip at logical chip number `c`.
    pub fn chip_at(&self, c: usize) -> usize {
        self.chip_at[c]
    }

    /// The logical chip number of physical chip `p`.
    pub fn logical_of(&self, p: usize) -> usize {
        self.chip_at
            .iter()
            .position(|&q| q == p)
            .expect("a permutation")
    }

    /// Whether this is the identity.
    pub fn is_identity(&self) -> bool {
        self.chip_at.iter().enumerate().all(|(c, &p)| c == p)
    }

    /// Physical chips by logical chip number.
    pub fn table(&self) -> &[usize] {
        &self.chip_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_depths_are_checked_in_one_line() {
        assert!(TorusConfig::with_dims([4, 4, 4]).is_ok());
        assert!(TorusConfig::with_dims([1, 1, 1]).is_ok());
        for bad in [[0, 1, 1], [5, 1, 1], [1, 1, 9]] {
            let e = TorusConfig::with_dims(bad).unwrap_err().to_string();
            assert!(e.contains("between 1 and 4"), "{e}");
        }
        assert!(TorusConfig::new([2, 1, 1], 1, TorusConfig::default_link()).is_err());
        assert!(TorusConfig::new([2, 1, 1], 2, IciConfig::DEFAULT).is_err());
        for bad in [
            "x = 0",
            "vc_depth = 64",
            "latency = 0",
            "depth = 2",
            "w = 1",
            "[[[",
        ] {
            let e = TorusConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
        let c = TorusConfig::new([3, 2, 4], 5, TorusConfig::default_link()).unwrap();
        for c in [c, c.with_depth(TORUS_MAX_DEPTH).unwrap()] {
            assert_eq!(
                TorusConfig::from_toml(&toml::to_string(&c).unwrap()).unwrap(),
                c
            );
        }
        assert!(!c.params().iter().any(|(k, _)| k == "depth"));
        assert_eq!(TorusConfig::parse_dims("4x2x1").unwrap(), [4, 2, 1]);
        for bad in ["4x2", "4x2x1x1", "ax1x1", ""] {
            assert!(TorusConfig::parse_dims(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn chip_numbers_and_coordinates_are_inverse() {
        let c = TorusConfig::with_dims([3, 2, 4]).unwrap();
        for n in 0..c.chips() {
            assert_eq!(c.chip(c.coords(n)), n);
        }
        assert_eq!(c.chip([1, 1, 2]), 1 + 3 * (1 + 2 * 2));
    }

    #[test]
    fn wiring_files_must_be_permutations() {
        let c = TorusConfig::with_dims([2, 2, 1]).unwrap();
        let w = Wiring::twisted(&c, 1);
        assert!(!w.is_identity());
        assert_eq!(Wiring::parse(&c, &w.to_text(&c)).unwrap(), w);
        let ok = "0 0 0 3\n1 0 0 2 # comment\n\n0 1 0 1\n1 1 0 0\n";
        let w = Wiring::parse(&c, ok).unwrap();
        assert_eq!(w.table(), [3, 2, 1, 0]);
        assert_eq!(w.logical_of(3), 0);
        for bad in [
            "0 0 0 3\n1 0 0 3\n0 1 0 1\n1 1 0 0\n", // chip twice
            "0 0 0 3\n1 0 0 2\n0 1 0 1\n",          // coordinate missing
            "0 0 0 3\n0 0 0 2\n0 1 0 1\n1 1 0 0\n", // coordinate twice
            "0 0 0 4\n1 0 0 2\n0 1 0 1\n1 1 0 0\n", // no such chip
            "2 0 0 3\n",                            // outside the torus
            "0 0 3\n",                              // too few fields
            "0 0 0 x\n",                            // not a number
        ] {
            let e = Wiring::parse(&c, bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
    }
}
