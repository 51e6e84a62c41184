//! Golden files of format version 1.0 (`tests/golden/v1/`) and 1.1 (`tests/golden/v1.1/`, the FP8
//! dtypes): streams that every later enec release must keep decoding, byte for byte, and that this
//! encoder must keep writing.
//!
//! Each case is `NAME.enec` (the stream) and `NAME.bin` (the decoded bytes); `MANIFEST.tsv` lists
//! the options and the sha256 of the decoded bytes for other implementations. Golden files are
//! never edited: a format change adds `tests/golden/v2/` (FORMAT.md section 8). To create the
//! files of a new version directory, run with `ENEC_WRITE_GOLDEN=1` (existing files are kept).

mod common;

use std::path::{Path, PathBuf};

use enec::{decode, encode, frames, max_encoded_size, Coding, Dtype, EncodeOptions, FrameCoding};
use half::{bf16, f16};

const SLICE: &[u8] = include_bytes!("data/minilm-slice.f32.bin");

struct Case {
    name: &'static str,
    options: EncodeOptions,
    input: Vec<u8>,
}

fn slice_f32(n: usize) -> Vec<f32> {
    SLICE[..4 * n]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn specials_bf16() -> Vec<bf16> {
    let mut v: Vec<u16> = vec![
        0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x0001, 0x807F, 0x7F7F, 0xFF7F,
    ];
    v.extend(std::iter::repeat_n(0u16, 1024)); // an all-zero frame
    v.extend(std::iter::repeat_n(0x3C00u16, 1024)); // a constant frame
    let mut seed = 7;
    v.extend((0..500).map(|_| xorshift(&mut seed) as u16));
    v.into_iter().map(bf16::from_bits).collect()
}

/// 1,024-element frames, checksums on, `coding`.
fn opt(dtype: Dtype, coding: Coding) -> EncodeOptions {
    EncodeOptions::new(dtype)
        .frame_len(1024)
        .unwrap()
        .coding(coding)
}

/// The version directories and their cases (version 1.1's FP8 streams where this build codes
/// FP8).
fn versions() -> Vec<(&'static str, Vec<Case>)> {
    let mut versions = vec![("v1", cases_v1())];
    if cfg!(feature = "fp8") {
        versions.push(("v1.1", cases_v1_1()));
    }
    versions
}

fn cases_v1() -> Vec<Case> {
    let w = slice_f32(2500);
    let bf: Vec<bf16> = w.iter().map(|&x| bf16::from_f32(x)).collect();
    let hf: Vec<f16> = w.iter().map(|&x| f16::from_f32(x)).collect();
    let widened: Vec<f32> = bf.iter().map(|x| x.to_f32()).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15;
    let random: Vec<u8> = (0..3000).map(|_| xorshift(&mut seed) as u8).collect();
    let bytes = |s: &[u8]| s.to_vec();
    vec![
        Case {
            name: "bf16_ranked",
            options: opt(Dtype::Bf16, Coding::Ranked),
            input: bytes(bytemuck::cast_slice(&bf)),
        },
        Case {
            name: "bf16_groups",
            options: opt(Dtype::Bf16, Coding::Groups),
            input: bytes(bytemuck::cast_slice(&bf)),
        },
        Case {
            name: "fp16_ranked",
            options: opt(Dtype::Fp16, Coding::Ranked),
            input: bytes(bytemuck::cast_slice(&hf)),
        },
        Case {
            name: "fp16_groups",
            options: opt(Dtype::Fp16, Coding::Groups),
            input: bytes(bytemuck::cast_slice(&hf)),
        },
        Case {
            name: "fp32_ranked",
            options: opt(Dtype::Fp32, Coding::Ranked),
            input: bytes(bytemuck::cast_slice(&w)),
        },
        Case {
            name: "fp32_groups",
            options: opt(Dtype::Fp32, Coding::Groups),
            input: bytes(bytemuck::cast_slice(&w)),
        },
        Case {
            name: "fp32_dead_bits_auto",
            options: opt(Dtype::Fp32, Coding::Auto),
            input: bytes(bytemuck::cast_slice(&widened)),
        },
        Case {
            name: "bf16_specials_auto",
            options: opt(Dtype::Bf16, Coding::Auto),
            input: bytes(bytemuck::cast_slice(&specials_bf16())),
        },
        Case {
            name: "bf16_specials_groups",
            options: opt(Dtype::Bf16, Coding::Groups),
            input: bytes(bytemuck::cast_slice(&specials_bf16())),
        },
        Case {
            name: "bf16_random_stored",
            options: opt(Dtype::Bf16, Coding::Auto),
            input: random.clone(),
        },
        Case {
            name: "fp16_no_checksum",
            options: opt(Dtype::Fp16, Coding::Auto).checksums(false),
            input: bytes(bytemuck::cast_slice(&hf)),
        },
        Case {
            name: "bf16_frame65536_auto",
            options: EncodeOptions::new(Dtype::Bf16).frame_len(65536).unwrap(),
            input: bytes(bytemuck::cast_slice(&bf)),
        },
        Case {
            name: "bf16_empty",
            options: EncodeOptions::new(Dtype::Bf16),
            input: Vec::new(),
        },
    ]
}

/// The FP8 bytes of `w` with one scale for all (`amax / largest finite FP8`), as FP8
/// checkpoints quantize a tensor.
fn fp8_scaled(dtype: Dtype, w: &[f32]) -> Vec<u8> {
    let fmax = if dtype == Dtype::E4m3 { 448.0 } else { 57344.0 };
    let amax = w.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = f64::from(amax / fmax);
    w.iter()
        .map(|&x| common::fp8(dtype, f64::from(x) / scale))
        .collect()
}

/// FP8 special bytes: +-0, NaN (e4m3fn's only non-finite), infinities and NaNs of e5m2, the
/// largest finite values, subnormals, then an all-zero frame, a constant frame and random bytes.
fn specials_fp8() -> Vec<u8> {
    let mut v = vec![
        0x00, 0x80, 0x7F, 0xFF, 0x7C, 0xFC, 0x7E, 0xFE, 0x01, 0x81, 0x07, 0x08,
    ];
    v.extend(std::iter::repeat_n(0u8, 1024));
    v.extend(std::iter::repeat_n(0x38u8, 1024));
    let mut seed = 11;
    v.extend((0..500).map(|_| xorshift(&mut seed) as u8));
    v
}

fn cases_v1_1() -> Vec<Case> {
    let w = slice_f32(2500);
    let e4 = fp8_scaled(Dtype::E4m3, &w);
    let e5 = fp8_scaled(Dtype::E5m2, &w);
    let mut seed = 0x2545_F491_4F6C_DD1D;
    let random: Vec<u8> = (0..3000).map(|_| xorshift(&mut seed) as u8).collect();
    vec![
        Case {
            name: "e4m3_ranked",
            options: opt(Dtype::E4m3, Coding::Ranked),
            input: e4.clone(),
        },
        Case {
            name: "e4m3_groups",
            options: opt(Dtype::E4m3, Coding::Groups),
            input: e4.clone(),
        },
        Case {
            name: "e5m2_ranked",
            options: opt(Dtype::E5m2, Coding::Ranked),
            input: e5.clone(),
        },
        Case {
            name: "e5m2_groups",
            options: opt(Dtype::E5m2, Coding::Groups),
            input: e5.clone(),
        },
        Case {
            name: "e4m3_specials_auto",
            options: opt(Dtype::E4m3, Coding::Auto),
            input: specials_fp8(),
        },
        Case {
            name: "e5m2_specials_groups",
            options: opt(Dtype::E5m2, Coding::Groups),
            input: specials_fp8(),
        },
        Case {
            name: "e5m2_random_stored",
            options: opt(Dtype::E5m2, Coding::Auto),
            input: random,
        },
        Case {
            name: "e4m3_no_checksum_frame65536",
            options: EncodeOptions::new(Dtype::E4m3)
                .frame_len(65536)
                .unwrap()
                .checksums(false),
            input: e4,
        },
        Case {
            name: "e5m2_empty",
            options: EncodeOptions::new(Dtype::E5m2),
            input: Vec::new(),
        },
    ]
}

fn dir(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(version)
}

fn encode_case(case: &Case) -> Vec<u8> {
    let mut out = vec![0u8; max_encoded_size(&case.options, case.input.len()).unwrap()];
    let len = encode(&case.options, &case.input, &mut out).unwrap();
    out.truncate(len);
    out
}

#[test]
fn golden_streams_decode() {
    for (version, cases) in versions() {
        golden_streams_of(version, cases.len());
    }
}

fn golden_streams_of(version: &str, cases: usize) {
    let entries: Vec<_> = std::fs::read_dir(dir(version))
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    let mut decoded = 0;
    for entry in entries {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("enec") {
            continue;
        }
        let stream = std::fs::read(&path).unwrap();
        let expected = std::fs::read(path.with_extension("bin")).unwrap();
        let mut out = vec![0xA5u8; expected.len()];
        let n = decode(&stream, &mut out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(n, expected.len(), "{}", path.display());
        assert!(
            out == expected,
            "{} decodes to different bytes",
            path.display()
        );
        decoded += 1;
    }
    assert!(
        decoded >= cases,
        "{version}: only {decoded} golden streams found"
    );
}

#[test]
fn encoder_still_writes_golden_bytes() {
    for (version, cases) in versions() {
        encoder_writes(version, cases);
    }
}

fn encoder_writes(version: &str, cases: Vec<Case>) {
    let dir = dir(version);
    let write = std::env::var_os("ENEC_WRITE_GOLDEN").is_some();
    if write {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut manifest = String::from(
        "name\tdtype\tframe_len\tcoding\tchecksums\telements\tstream_bytes\tframe_codings\n",
    );
    for case in cases {
        let stream = encode_case(&case);
        let (enec_path, bin_path) = (
            dir.join(format!("{}.enec", case.name)),
            dir.join(format!("{}.bin", case.name)),
        );
        if write && !enec_path.exists() {
            std::fs::write(&enec_path, &stream).unwrap();
            std::fs::write(&bin_path, &case.input).unwrap();
        }
        let golden =
            std::fs::read(&enec_path).unwrap_or_else(|e| panic!("{}: {e}", enec_path.display()));
        assert!(
            golden == stream,
            "{}: the encoder no longer writes the golden bytes",
            case.name
        );
        assert_eq!(
            std::fs::read(&bin_path).unwrap(),
            case.input,
            "{}: golden input differs",
            case.name
        );
        let codings: Vec<&str> = frames(&stream)
            .unwrap()
            .map(|f| match f.unwrap().coding {
                FrameCoding::Stored => "stored",
                FrameCoding::Groups => "groups",
                FrameCoding::Ranked => "ranked",
            })
            .collect();
        manifest.push_str(&format!(
            "{}\t{}\t{}\t{:?}\t{}\t{}\t{}\t{}\n",
            case.name,
            case.options.dtype.name(),
            1u32 << case.options.frame_log2,
            case.options.coding,
            case.options.checksums,
            case.input.len() / case.options.dtype.element_bytes(),
            stream.len(),
            codings.join(",")
        ));
    }
    // The manifest's last column (sha256 of NAME.bin) is added with `sha256sum` when a version
    // directory is created.
    if write && !dir.join("MANIFEST.tsv").exists() {
        std::fs::write(dir.join("MANIFEST.tsv"), manifest).unwrap();
    }
}
