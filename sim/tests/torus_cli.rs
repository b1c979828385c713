//! `sim allreduce` and `sim torus` end to end: .npy in, RTL or golden, .npy
//! out, every chip's bits identical and as the contract orders the sums; bad
//! input gets one error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, sim, stats_of, write_npy, Case};
use config::TorusConfig;
use std::path::Path;
use std::process::{Command, Output};

fn allreduce(case: &Case, dims: &str, extra: &[&str]) -> Output {
    allreduce_command(case, dims, extra).output().unwrap()
}

/// `sim allreduce --dims <dims> --in <case>/v.npy --out <case>/r.npy <extra>`,
/// not yet run.
fn allreduce_command(case: &Case, dims: &str, extra: &[&str]) -> Command {
    let mut cmd = sim();
    cmd.args(["allreduce", "--dims", dims, "--in"])
        .arg(case.path("v.npy"))
        .arg("--out")
        .arg(case.path("r.npy"))
        .args(extra);
    cmd
}

fn read_u32(path: &Path, descr: &str) -> (Vec<u64>, Vec<u32>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().to_vec();
    assert_eq!(npy.dtype().descr(), descr);
    let data = if descr.contains('f') {
        npy.into_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect()
    } else {
        npy.into_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(|x| x as u32)
            .collect()
    };
    (shape, data)
}

/// fp32 values with specials, [chips, n].
fn f32_values(chips: usize, n: usize) -> Vec<Vec<u32>> {
    let specials = [
        0x7fc0_0000u32,
        0x7f80_0000,
        0xff80_0000,
        0x8000_0000,
        0x0000_0001,
        0x7f7f_ffff,
        0x3f80_0000,
        0x4cbe_bc20,
    ];
    (0..chips)
        .map(|c| {
            (0..n)
                .map(|i| {
                    let k = (c * 7 + i * 13) % 23;
                    if k < specials.len() {
                        specials[k]
                    } else {
                        0x3c00_0000 + ((c * 977 + i * 131) as u32 % 0x0800_0000)
                    }
                })
                .collect()
        })
        .collect()
}

fn write_f32(case: &Case, v: &[Vec<u32>]) {
    let flat: Vec<f32> = v.concat().into_iter().map(f32::from_bits).collect();
    write_npy(
        &case.path("v.npy"),
        &[v.len() as u64, v[0].len() as u64],
        &flat,
    );
}

#[test]
fn allreduce_golden_and_rtl_give_the_contract_sum_on_every_chip() {
    let case = Case::new();
    let cfg = TorusConfig::with_dims([2, 1, 1]).unwrap();
    let v = f32_values(2, 40);
    write_f32(&case, &v);
    let want = golden::torus::allreduce_f32_v2(&cfg, &v);
    for extra in [
        vec!["--golden"],
        vec!["--stats", "--ber", "1e-3", "--seed", "5"],
    ] {
        let out = allreduce(&case, "2x1x1", &extra);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (shape, data) = read_u32(&case.path("r.npy"), "'<f4'");
        assert_eq!(shape, [2, 40]);
        assert_eq!(&data[..40], &want[..], "{extra:?}: chip 0");
        assert_eq!(&data[40..], &want[..], "{extra:?}: chip 1");
        if extra.contains(&"--stats") {
            let s = stats_of(&out);
            assert_eq!(s["backend"], "rtl");
            let cycles = s["cycles"].as_u64().unwrap();
            assert!(cycles > 40);
            assert!(s["crc_errors"].as_u64().unwrap() > 0, "{s}");
            // Order v2's busiest link on 2x1x1: every element crosses one x
            // link each way, up from the chip past its owner and down from
            // the owner; owner 0 (e div 3 even) has 21 of the 40 elements.
            let bound = golden::torus::v2_link_bound(&cfg, 40);
            assert_eq!(bound, 21);
            assert_eq!(s["link_bound"].as_u64(), Some(bound), "{s}");
            let fraction = s["fraction"].as_f64().unwrap();
            assert!(
                (fraction - bound as f64 / cycles as f64).abs() < 1e-12,
                "{s}"
            );
        }
    }
    // int32 wraps; a re-cabled torus (golden) gives the same logical result.
    let cfg = TorusConfig::with_dims([2, 2, 1]).unwrap();
    let iv: Vec<i32> = (0..4 * 5).map(|i| (i32::MAX - 3).wrapping_add(i)).collect();
    write_npy(&case.path("v.npy"), &[4, 5], &iv);
    std::fs::write(case.path("w.txt"), "0 0 0 3\n1 0 0 1\n0 1 0 2\n1 1 0 0\n").unwrap();
    let w = case.path("w.txt");
    let out = allreduce(
        &case,
        "2x2x1",
        &["--golden", "--wiring", w.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (shape, data) = read_u32(&case.path("r.npy"), "'<i4'");
    assert_eq!(shape, [4, 5]);
    let per_chip: Vec<Vec<i32>> = iv.chunks(5).map(<[i32]>::to_vec).collect();
    let want = golden::torus::allreduce_i32(&cfg, &per_chip);
    for c in 0..4 {
        let got: Vec<i32> = data[c * 5..c * 5 + 5].iter().map(|&x| x as i32).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn torus_traffic_reports_throughput_and_latency() {
    let out = sim()
        .args([
            "torus",
            "--dims",
            "2x1x1",
            "--traffic",
            "uniform",
            "--packets",
            "60",
            "--stats",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = stats_of(&out);
    assert_eq!(s["packets"], 120);
    assert!(s["throughput"].as_f64().unwrap() > 0.0);
    let mean = s["latency_mean"].as_f64().unwrap();
    let p99 = s["latency_p99"].as_u64().unwrap();
    assert!(mean > 0.0 && p99 as f64 >= mean, "{s}");
}

#[test]
fn bad_input_is_one_line_exit_two_and_no_output() {
    let case = Case::new();
    write_f32(&case, &f32_values(2, 3));
    let r = case.path("r.npy");
    for (dims, extra, msg) in [
        ("5x1x1", vec![], "between 1 and 4"),
        ("0x1x1", vec![], "between 1 and 4"),
        ("2x2", vec![], "XxYxZ"),
        ("3x1x1", vec![], "needs [3, n]"),
        ("2x1x1", vec!["--ber", "1.5"], "--ber"),
        ("2x1x1", vec!["--golden", "--ber", "0.1"], "--golden"),
    ] {
        let out = allreduce(&case, dims, &extra);
        assert_usage_error(&out, &format!("{dims} {extra:?}"), msg, &[&r]);
    }
    // Not a permutation: chip 1 twice.
    std::fs::write(case.path("w.txt"), "0 0 0 1\n1 0 0 1\n").unwrap();
    let w = case.path("w.txt");
    let out = allreduce(
        &case,
        "2x1x1",
        &["--golden", "--wiring", w.to_str().unwrap()],
    );
    assert_usage_error(&out, "wiring", "permutation", &[&r]);
    let out = allreduce(
        &case,
        "2x1x1",
        &["--golden", "--wiring", "/nonexistent/w.txt"],
    );
    assert_usage_error(&out, "missing wiring", "wiring", &[&r]);
    // A thread count that is not one.
    write_f32(&case, &f32_values(2, 3));
    for threads in ["0", "many", "65"] {
        let out = allreduce_command(&case, "2x1x1", &[])
            .env("SYSTOLE_SIM_THREADS", threads)
            .output()
            .unwrap();
        assert_usage_error(&out, threads, "SYSTOLE_SIM_THREADS", &[&r]);
    }
    // Wrong dtype and a 1-D array.
    write_npy(&case.path("v.npy"), &[2, 3], &[1u8; 6]);
    let out = allreduce(&case, "2x1x1", &["--golden"]);
    assert_usage_error(&out, "uint8", "float32 or int32", &[&r]);
    write_npy(&case.path("v.npy"), &[6], &[1i32; 6]);
    let out = allreduce(&case, "2x1x1", &["--golden"]);
    assert_usage_error(&out, "1-D", "needs [2, n]", &[&r]);
    // More elements than the engine indexes (3 x 2^16 per chip).
    let n = 3 * 65536 + 1;
    write_npy(&case.path("v.npy"), &[2, n as u64], &vec![0i32; 2 * n]);
    let out = allreduce(&case, "2x1x1", &[]);
    assert_usage_error(&out, "too long", "indexes at most 196608", &[&r]);
    for (extra, msg) in [
        (vec!["--traffic", "ring"], "--traffic"),
        (vec!["--traffic", "uniform", "--packets", "0"], "--packets"),
        (
            vec!["--traffic", "uniform", "--packets", "5", "--rate", "2"],
            "--rate",
        ),
    ] {
        let mut args = vec!["torus", "--dims", "2x1x1"];
        args.extend(extra.iter().copied());
        if !args.contains(&"--packets") {
            args.extend(["--packets", "5"]);
        }
        let out = sim().args(&args).output().unwrap();
        assert_usage_error(&out, &format!("{args:?}"), msg, &[]);
    }
    let out = sim()
        .args([
            "torus",
            "--dims",
            "9x1x1",
            "--traffic",
            "uniform",
            "--packets",
            "5",
        ])
        .output()
        .unwrap();
    assert_usage_error(&out, "9x1x1", "between 1 and 4", &[]);
}
