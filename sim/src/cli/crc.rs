//! `sim crc`: byte packets through the stream CRC, from and to `.npy` files.
//!
//! P holds the packets' bytes (uint8, one packet, or one per row), L their
//! lengths when the rows are not all whole packets. The bytes are cut into
//! beats as the block's bit order places them
//! ([`golden::stream_crc::beats_of_bytes`]), so the CRCs are the catalog's
//! CRCs of the byte strings whatever `--beat-bits` is. The producer offers a
//! beat every cycle and the consumer is always ready.

use super::{bad, broken, Failure};
use config::{CrcAlgorithm, StreamCrcConfig};
use matrix::Array;
use sim::drivers::stream_crc::StreamCrcDriver;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CrcArgs {
    /// P: .npy uint8 array, 1-D (one packet) or 2-D (one packet per row).
    #[arg(long, value_name = "FILE")]
    packets: PathBuf,
    /// L: .npy int32 1-D array of each row's packet length in bytes (at
    /// least one beat, at most the row, whole beats); default: whole rows.
    #[arg(long, value_name = "FILE")]
    lengths: Option<PathBuf>,
    /// Where to write C, one CRC per packet (1-D; uint8, uint16 or uint32 by
    /// the CRC's width).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The CRC: crc8 (CRC-8/SMBUS), crc16 (CRC-16/IBM-3740), crc32
    /// (CRC-32/ISO-HDLC), crc32c (CRC-32/ISCSI).
    #[arg(long, value_name = "CRC", default_value = "crc32")]
    algorithm: String,
    /// Data bits per beat of the block (a multiple of 8 here, up to 512).
    #[arg(long, value_name = "B", default_value_t = 8)]
    beat_bits: u32,
    /// Use the golden model (bit-serial CRC and the cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

pub fn run(args: &CrcArgs) -> Result<(), Failure> {
    let algorithm: CrcAlgorithm = args.algorithm.parse().map_err(|e| bad(format!("{e}")))?;
    let cfg = StreamCrcConfig::new(algorithm, args.beat_bits).map_err(|e| bad(e.to_string()))?;
    if !args.beat_bits.is_multiple_of(8) {
        return Err(bad(format!(
            "--beat-bits {}: sim crc takes bytes, so beats of whole bytes (a multiple of 8)",
            args.beat_bits
        )));
    }
    let packets = read_packets(args)?;
    let beats: Vec<Vec<Vec<u32>>> = packets
        .iter()
        .enumerate()
        .map(|(i, p)| {
            golden::stream_crc::beats_of_bytes(&cfg, p).map_err(|e| bad(format!("packet {i}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let counts: Vec<usize> = beats.iter().map(Vec::len).collect();
    let total: usize = counts.iter().sum();
    let always = |_: u64| true;
    let budget = total as u64 + packets.len() as u64 + 100;
    let (crcs, cycles) = if args.golden {
        let s = golden::stream_crc::schedule(&counts, &always, &always, budget)
            .ok_or_else(|| broken("the cycle model did not finish"))?;
        let crcs = beats
            .iter()
            .map(|b| golden::stream_crc::packet_crc(&cfg, b))
            .collect();
        (crcs, s.cycles)
    } else {
        let mut d = StreamCrcDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        let r = d
            .run(&beats, &always, &always, budget)
            .map_err(|e| broken(e.to_string()))?;
        (r.crcs, r.schedule.cycles)
    };
    write_crcs(&args.out, cfg.crc_bits(), &crcs)?;
    if args.stats {
        println!(
            "{{\"op\":\"crc\",\"backend\":\"{}\",\"algorithm\":\"{algorithm}\",\"beat_bits\":{},\
             \"packets\":{},\"beats\":{total},\"bytes\":{},\"cycles\":{cycles},\
             \"beats_per_cycle\":{}}}",
            if args.golden { "golden" } else { "rtl" },
            args.beat_bits,
            packets.len(),
            packets.iter().map(Vec::len).sum::<usize>(),
            total as f64 / cycles as f64
        );
    }
    Ok(())
}

/// The packets' bytes: P's rows, each cut to its length in L.
fn read_packets(args: &CrcArgs) -> Result<Vec<Vec<u8>>, Failure> {
    let p = matrix::read_array::<u8>(&args.packets, "P").map_err(bad)?;
    let (rows, cols) = match p.shape[..] {
        [n] => (1, n as usize),
        [r, c] => (r as usize, c as usize),
        _ => {
            return Err(bad(format!(
                "P: {} has shape {:?}; expected 1-D (one packet) or 2-D (one per row)",
                args.packets.display(),
                p.shape
            )))
        }
    };
    let lengths: Vec<usize> = match &args.lengths {
        None => vec![cols; rows],
        Some(path) => {
            let l = matrix::read_array::<i32>(path, "L").map_err(bad)?;
            if l.shape != [rows as u64] {
                return Err(bad(format!(
                    "L: {} has shape {:?}; expected ({rows},), one length per packet",
                    path.display(),
                    l.shape
                )));
            }
            l.data
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    usize::try_from(n)
                        .ok()
                        .filter(|&n| (1..=cols).contains(&n))
                        .ok_or_else(|| {
                            bad(format!(
                                "L[{i}] = {n}: a length must be in 1..={cols} bytes"
                            ))
                        })
                })
                .collect::<Result<_, _>>()?
        }
    };
    Ok(p.data
        .chunks(cols)
        .zip(lengths)
        .map(|(row, n)| row[..n].to_vec())
        .collect())
}

/// Writes the CRCs as a 1-D array of the CRC's width.
fn write_crcs(path: &std::path::Path, bits: u32, crcs: &[u64]) -> Result<(), Failure> {
    let shape = vec![crcs.len() as u64];
    let result = match bits {
        8 => matrix::write_array(
            path,
            &Array {
                shape,
                data: crcs.iter().map(|&c| c as u8).collect(),
            },
        ),
        16 => matrix::write_array(
            path,
            &Array {
                shape,
                data: crcs.iter().map(|&c| c as u16).collect(),
            },
        ),
        _ => matrix::write_array(
            path,
            &Array {
                shape,
                data: crcs.iter().map(|&c| c as u32).collect(),
            },
        ),
    };
    result.map_err(broken)
}
