//! `sim crc` end to end: byte packets in .npy files, RTL or golden, CRCs
//! out; bad input gets one error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, sim, stats_of, write_npy, Case};

fn read_u32(path: &std::path::Path) -> (String, Vec<u64>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let dtype = npy.dtype().descr();
    let values = match dtype.as_str() {
        "'|u1'" => npy
            .into_vec::<u8>()
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect(),
        "'<u2'" => npy
            .into_vec::<u16>()
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect(),
        _ => npy
            .into_vec::<u32>()
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect(),
    };
    (dtype, values)
}

fn run(case: &Case, extra: &[&str]) -> std::process::Output {
    sim()
        .args(["crc", "--packets"])
        .arg(case.path("p.npy"))
        .arg("--out")
        .arg(case.path("c.npy"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn rtl_and_golden_give_the_catalog_crcs_of_each_row() {
    let case = Case::new();
    let rows: [&[u8]; 3] = [
        b"123456789abc",
        b"hello, world",
        b"\x00\xff\x80\x01abcdefgh",
    ];
    let data: Vec<u8> = rows.concat();
    write_npy(&case.path("p.npy"), &[3, 12], &data);
    write_npy(&case.path("l.npy"), &[3], &[9i32, 12, 6]);
    let lengths = [9, 12, 6];
    for (algorithm, dtype) in [("crc8", "'|u1'"), ("crc16", "'<u2'"), ("crc32c", "'<u4'")] {
        let a: config::CrcAlgorithm = algorithm.parse().unwrap();
        let want: Vec<u64> = rows
            .iter()
            .zip(lengths)
            .map(|(r, n)| golden::stream_crc::crc_of_bytes(a, &r[..n]))
            .collect();
        for backend in [&["--golden"][..], &[][..]] {
            let l = case.path("l.npy");
            let mut args = vec!["--algorithm", algorithm, "--beat-bits", "24", "--stats"];
            args.extend_from_slice(backend);
            args.extend(["--lengths", l.to_str().unwrap()]);
            let out = run(&case, &args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                read_u32(&case.path("c.npy")),
                (dtype.to_string(), want.clone())
            );
            let stats = stats_of(&out);
            assert_eq!(stats["beats"], 9, "{stats}");
            assert_eq!(stats["cycles"], 10, "{stats}");
        }
    }
    assert_eq!(
        golden::stream_crc::crc_of_bytes(config::CrcAlgorithm::Crc8, b"123456789"),
        0xf4
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let case = Case::new();
    let out_file = case.path("c.npy");
    write_npy(&case.path("p.npy"), &[5], &[1u8, 2, 3, 4, 5]);
    let out = run(&case, &["--beat-bits", "16"]);
    assert_usage_error(
        &out,
        "5 bytes in 2-byte beats",
        "do not fill whole",
        &[&out_file],
    );
    let out = run(&case, &["--algorithm", "md5"]);
    assert_usage_error(&out, "unknown CRC", "unknown CRC 'md5'", &[&out_file]);
    let out = run(&case, &["--beat-bits", "12"]);
    assert_usage_error(&out, "a beat of 12 bits", "multiple of 8", &[&out_file]);
    let out = run(&case, &["--beat-bits", "1024"]);
    assert_usage_error(&out, "a beat of 1024 bits", "beat_bits", &[&out_file]);
    write_npy(&case.path("l.npy"), &[1], &[6i32]);
    let l = case.path("l.npy");
    let out = run(&case, &["--lengths", l.to_str().unwrap()]);
    assert_usage_error(&out, "a length past the row", "L[0] = 6", &[&out_file]);
    write_npy(&case.path("p.npy"), &[5], &[1i32, 2, 3, 4, 5]);
    let out = run(&case, &[]);
    assert_usage_error(&out, "int32 packets", "uint8", &[&out_file]);
    write_npy(&case.path("p.npy"), &[1, 1, 2], &[1u8, 2]);
    let out = run(&case, &[]);
    assert_usage_error(&out, "a 3-D array", "expected 1-D", &[&out_file]);
}
