//! Cross-checks of the AscendC kernels (`ffi/ascendc/kernel/`) against the Rust codec, run on the
//! CPU model of the AscendC API (`ffi/ascendc/sim/`).
//!
//! The kernels and the model are compiled here with the system C++ compiler (`$CXX`, else `c++`)
//! into a driver binary, once per test run. Then, byte for byte:
//! - Rust encoder -> AscendC decoder gives the original bytes;
//! - AscendC encoder -> Rust decoder gives the original bytes, and the AscendC encoder's stream
//!   is identical to the Rust encoder's;
//!
//! on random weights of every dtype (bf16, fp16, fp32, and the FP8 dtypes e4m3 and e5m2, quantized
//! from the same weights scaled by 64), with each coding forced and automatic, special values,
//! random bytes, dead low bits, partial frames, frames of 2^10 to 2^16 elements, the MiniLM slice
//! in `tests/data/` in every dtype (FP8 scaled by 64, as `tests/corruption.rs` does), and the
//! golden files of `tests/golden/v1/` and `tests/golden/v1.1/` (FP8). An FP8 stream whose header
//! claims minor version 0 is refused.
//!
//! What this proves: the kernel logic is bit-exact with the Rust codec, obeys the documented API
//! rules the model checks, and is free of the pipe, queue-position and data-cache races the model
//! detects (rules R1-R7 in `ffi/ascendc/sim/sim_engine.h`; the blocks run interleaved in a seeded
//! random order, and any hazard fails the driver). What it does not: that CANN's compiler accepts the sources, or
//! anything about speed on an NPU (see `ffi/README.md`).

mod common;
use common::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use enec::{decode, encode, max_encoded_size, Coding, Dtype, EncodeOptions};
use half::{bf16, f16};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn work_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ascendc");
    std::fs::create_dir_all(&dir).expect("create the test work directory");
    dir
}

/// The kernel, model and driver sources, in a fixed order.
fn sources() -> Vec<PathBuf> {
    let root = repo().join("ffi/ascendc");
    let mut files = Vec::new();
    for dir in ["kernel", "sim", "host"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("ffi/ascendc sources")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "h" || x == "cpp"))
            .collect();
        entries.sort();
        files.extend(entries);
    }
    files
}

/// Compiles `ffi/ascendc/sim/{program}.cpp` (with the kernels and the CPU model) once per
/// distinct source text (FNV-1a of the sources names the binary, so an edited kernel is always
/// rebuilt and an unchanged one never).
fn build(program: &str) -> PathBuf {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for byte in sources()
        .iter()
        .flat_map(|f| std::fs::read(f).expect("read a source"))
        .chain(cxx.bytes())
    {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
    }
    let out = work_dir().join(format!("{program}-{hash:016x}"));
    if out.exists() {
        return out;
    }
    let tmp = work_dir().join(format!("{program}-{hash:016x}.{}", std::process::id()));
    let root = repo().join("ffi/ascendc");
    let status = Command::new(&cxx)
        .args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(root.join("sim"))
        .arg("-I")
        .arg(root.join("kernel"))
        .arg(root.join(format!("sim/{program}.cpp")))
        .arg("-o")
        .arg(&tmp)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "the ascendc tests need a C++17 compiler: could not run `{cxx}` ({e}); \
                 install g++ or set CXX"
            )
        });
    assert!(
        status.success(),
        "compiling ffi/ascendc/sim/{program}.cpp failed"
    );
    std::fs::rename(&tmp, &out).expect("install the binary");
    out
}

/// The kernels + CPU model + host driver.
fn driver() -> &'static Path {
    static DRIVER: OnceLock<PathBuf> = OnceLock::new();
    DRIVER.get_or_init(|| build("sim_driver"))
}

/// A unique scratch file name.
fn scratch(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    work_dir().join(format!("{}-{n}-{name}", std::process::id()))
}

/// Runs the driver; on success returns its `ascendc-sim: stats ...` line (the model's counters).
fn run(args: &[&str]) -> Result<String, String> {
    let out = Command::new(driver())
        .args(args)
        .output()
        .expect("run sim_driver");
    if out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Ok(stderr
            .lines()
            .find(|l| l.starts_with("ascendc-sim: stats "))
            .unwrap_or_default()
            .to_string())
    } else {
        Err(format!(
            "sim_driver {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn coding_id(coding: Coding) -> &'static str {
    match coding {
        Coding::Auto => "0",
        Coding::Groups => "1",
        Coding::Ranked => "2",
    }
}

/// The AscendC kernels code every dtype this build codes (the FP8 ones with the feature `fp8`).
const DTYPES: [Dtype; Dtype::ALL.len()] = Dtype::ALL;

/// FP8 test data is the f32 data times this, as a per-tensor FP8 scale would put it (the MiniLM
/// weights' largest magnitudes are near 7), rounded by `common::fp8`.
const FP8_SCALE: f64 = 64.0;

fn rust_encode(options: &EncodeOptions, input: &[u8]) -> Vec<u8> {
    let mut stream = vec![0u8; max_encoded_size(options, input.len()).unwrap()];
    let len = encode(options, input, &mut stream).unwrap();
    stream.truncate(len);
    stream
}

/// The AscendC decoder (on the model) applied to `stream`.
fn ascendc_decode(stream: &[u8], blocks: u32) -> Result<Vec<u8>, String> {
    ascendc_decode_stats(stream, blocks).map(|(data, _)| data)
}

/// The decoded bytes and the model's counters.
fn ascendc_decode_stats(stream: &[u8], blocks: u32) -> Result<(Vec<u8>, String), String> {
    let (s, o) = (scratch("stream.enec"), scratch("decoded.bin"));
    std::fs::write(&s, stream).unwrap();
    let r = run(&[
        "decode",
        s.to_str().unwrap(),
        o.to_str().unwrap(),
        &blocks.to_string(),
    ]);
    let data = r.map(|stats| (std::fs::read(&o).unwrap(), stats));
    let _ = std::fs::remove_file(&s);
    let _ = std::fs::remove_file(&o);
    data
}

/// The AscendC encoder (on the model) applied to `input`.
fn ascendc_encode(options: &EncodeOptions, input: &[u8], blocks: u32) -> Result<Vec<u8>, String> {
    ascendc_encode_stats(options, input, blocks).map(|(data, _)| data)
}

/// The stream and the model's counters.
fn ascendc_encode_stats(
    options: &EncodeOptions,
    input: &[u8],
    blocks: u32,
) -> Result<(Vec<u8>, String), String> {
    let (i, o) = (scratch("input.bin"), scratch("encoded.enec"));
    std::fs::write(&i, input).unwrap();
    let r = run(&[
        "encode",
        &options.dtype.code().to_string(),
        &options.frame_log2.to_string(),
        coding_id(options.coding),
        if options.checksums { "1" } else { "0" },
        i.to_str().unwrap(),
        o.to_str().unwrap(),
        &blocks.to_string(),
    ]);
    let data = r.map(|stats| (std::fs::read(&o).unwrap(), stats));
    let _ = std::fs::remove_file(&i);
    let _ = std::fs::remove_file(&o);
    data
}

/// Both directions on one input on 3 blocks; returns a description of the first mismatch.
fn cross_check(what: &str, options: &EncodeOptions, input: &[u8]) -> Result<(), String> {
    cross_check_on(what, options, input, 3)
}

fn cross_check_on(
    what: &str,
    options: &EncodeOptions,
    input: &[u8],
    blocks: u32,
) -> Result<(), String> {
    let rust_stream = rust_encode(options, input);
    let decoded = ascendc_decode(&rust_stream, blocks)?;
    if decoded != input {
        let at = decoded.iter().zip(input).position(|(a, b)| a != b);
        return Err(format!(
            "{what}: Rust encoder -> AscendC decoder differs from the input (first byte {at:?}, lengths {} / {})",
            decoded.len(),
            input.len()
        ));
    }
    let ascend_stream = ascendc_encode(options, input, blocks)?;
    let mut restored = vec![0u8; input.len()];
    decode(&ascend_stream, &mut restored)
        .map_err(|e| format!("{what}: AscendC encoder -> Rust decoder: {e}"))?;
    if restored != input {
        return Err(format!(
            "{what}: AscendC encoder -> Rust decoder differs from the input"
        ));
    }
    if ascend_stream != rust_stream {
        let at = ascend_stream
            .iter()
            .zip(&rust_stream)
            .position(|(a, b)| a != b);
        return Err(format!(
            "{what}: AscendC encoder's stream differs from the Rust encoder's (first byte {at:?}, lengths {} / {})",
            ascend_stream.len(),
            rust_stream.len()
        ));
    }
    Ok(())
}

/// Runs every case, then reports all failures at once.
fn check_all(cases: Vec<(String, EncodeOptions, Vec<u8>)>) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(what, options, input)| cross_check(what, options, input).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn weights(rng: &mut Rng, n: usize) -> Vec<f32> {
    let scale = [0.02, 0.5, 3e-4][(rng.next() % 3) as usize];
    (0..n).map(|_| rng.normal(scale)).collect()
}

fn as_bytes(dtype: Dtype, values: &[f32]) -> Vec<u8> {
    match dtype {
        Dtype::Bf16 => values
            .iter()
            .flat_map(|&v| bf16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::Fp16 => values
            .iter()
            .flat_map(|&v| f16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::Fp32 => values.iter().flat_map(|&v| v.to_le_bytes()).collect(),
        Dtype::E4m3 | Dtype::E5m2 => values
            .iter()
            .map(|&v| common::fp8(dtype, f64::from(v) * FP8_SCALE))
            .collect(),
    }
}

const CODINGS: [Coding; 3] = [Coding::Auto, Coding::Groups, Coding::Ranked];

fn options(dtype: Dtype, frame_log2: u8, coding: Coding, checksums: bool) -> EncodeOptions {
    EncodeOptions {
        frame_log2,
        ..EncodeOptions::new(dtype)
            .coding(coding)
            .checksums(checksums)
    }
}

#[test]
fn ascendc_random_weights_every_dtype_and_coding() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut cases = Vec::new();
    for dtype in DTYPES {
        for coding in CODINGS {
            // Partial last frames of odd lengths, several frames, both frame-length extremes.
            for (n, log2) in [
                (5000usize, 10u8),
                (1, 10),
                (17, 10),
                (3 * 1024 + 333, 11),
                (20_000, 14),
            ] {
                let values = weights(&mut rng, n);
                cases.push((
                    format!("{dtype:?} {coding:?} n={n} frame=2^{log2}"),
                    options(dtype, log2, coding, n % 2 == 0),
                    as_bytes(dtype, &values),
                ));
            }
        }
    }
    check_all(cases);
}

#[test]
fn ascendc_special_values_and_random_bytes() {
    let mut rng = Rng(0xFEED_0000_0000_0042);
    let mut cases = Vec::new();
    for dtype in DTYPES {
        let eb = dtype.element_bytes();
        let n = 4099;
        // Random bytes: every bit pattern, NaN payloads included (mostly stored frames).
        let random: Vec<u8> = (0..n * eb).map(|_| rng.next() as u8).collect();
        // Special values mixed into weights: +-0, +-inf, NaNs with payloads, subnormals, max.
        let specials: Vec<u8> = {
            let mut v = as_bytes(dtype, &weights(&mut rng, n));
            let patterns: [u32; 8] = match dtype {
                Dtype::Fp32 => [
                    0,
                    0x8000_0000,
                    0x7F80_0000,
                    0xFF80_0000,
                    0x7FC0_1234,
                    0xFFFF_FFFF,
                    1,
                    0x7F7F_FFFF,
                ],
                Dtype::Bf16 => [0, 0x8000, 0x7F80, 0xFF80, 0x7FC1, 0xFFFF, 1, 0x7F7F],
                Dtype::Fp16 => [0, 0x8000, 0x7C00, 0xFC00, 0x7E01, 0xFFFF, 1, 0x7BFF],
                // +-0, NaN (e4m3 has no infinity: S.1111.111), max, min subnormal, -max
                Dtype::E4m3 => [0, 0x80, 0x7F, 0xFF, 0x7E, 0x01, 0x81, 0xFE],
                // +-0, +-inf, NaNs with payloads, min subnormal, max
                Dtype::E5m2 => [0, 0x80, 0x7C, 0xFC, 0x7E, 0xFF, 0x01, 0x7B],
            };
            for i in (0..n).step_by(7) {
                let p = patterns[i % 8].to_le_bytes();
                v[i * eb..i * eb + eb].copy_from_slice(&p[..eb]);
            }
            v
        };
        let zeros = vec![0u8; n * eb];
        let constant: Vec<u8> = as_bytes(dtype, &vec![0.375f32; n]);
        // Exponents spread over the whole alphabet: exercises 3 escape levels and wide groups.
        let wide: Vec<f32> = (0..n)
            .map(|i| {
                let e = (rng.next() % 60) as i32 - 30;
                (1.0 + (i % 7) as f32 / 8.0) * 2f32.powi(e) * if i % 3 == 0 { -1.0 } else { 1.0 }
            })
            .collect();
        let wide = as_bytes(dtype, &wide);
        for coding in CODINGS {
            for (name, data) in [
                ("random bytes", &random),
                ("special values", &specials),
                ("zeros", &zeros),
                ("constant", &constant),
                ("wide exponents", &wide),
            ] {
                cases.push((
                    format!("{dtype:?} {coding:?} {name}"),
                    options(dtype, 10, coding, true),
                    data.clone(),
                ));
            }
        }
    }
    // Dead low bits: fp32 weights that are really bf16 (k >= 16) or fp16 (k >= 13), and k = M.
    let w = weights(&mut rng, 6000);
    let from_bf16: Vec<f32> = w.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
    let from_f16: Vec<f32> = w.iter().map(|&v| f16::from_f32(v).to_f32()).collect();
    let powers: Vec<f32> = w
        .iter()
        .map(|&v| 2f32.powi((v.abs() * 100.0) as i32 % 20 - 10))
        .collect();
    for coding in CODINGS {
        for (name, data) in [
            ("fp32 from bf16", &from_bf16),
            ("fp32 from fp16", &from_f16),
            ("powers of two", &powers),
        ] {
            cases.push((
                format!("Fp32 {coding:?} {name}"),
                options(Dtype::Fp32, 11, coding, true),
                as_bytes(Dtype::Fp32, data),
            ));
        }
    }
    // FP8: the lowest mantissa bit cleared (k >= 1), and powers of two (k = M).
    let fp8_powers: Vec<f32> = w
        .iter()
        .map(|&v| 2f32.powi((v.abs() * 100.0) as i32 % 10 - 8))
        .collect();
    for dtype in DTYPES.into_iter().filter(|d| d.element_bytes() == 1) {
        let low_bit_clear: Vec<u8> = as_bytes(dtype, &w).iter().map(|b| b & 0xFE).collect();
        for coding in CODINGS {
            for (name, data) in [
                ("lowest mantissa bit clear", low_bit_clear.clone()),
                ("powers of two", as_bytes(dtype, &fp8_powers)),
            ] {
                cases.push((
                    format!("{dtype:?} {coding:?} {name}"),
                    options(dtype, 11, coding, true),
                    data,
                ));
            }
        }
    }
    check_all(cases);
}

#[test]
fn ascendc_minilm_slice() {
    let raw = std::fs::read(repo().join("tests/data/minilm-slice.f32.bin")).expect("MiniLM slice");
    let values: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    // A quarter of the slice per dtype and coding keeps the model run short; auto and the two
    // forced codings see different parts, so the whole slice is covered.
    let quarter = values.len() / 4;
    let mut cases = Vec::new();
    for dtype in DTYPES {
        for (c, coding) in CODINGS.iter().enumerate() {
            let part = &values[c * quarter..(c + 1) * quarter + if c == 2 { quarter } else { 0 }];
            cases.push((
                format!("MiniLM {dtype:?} {coding:?}"),
                options(dtype, 14, *coding, true),
                as_bytes(dtype, part),
            ));
        }
    }
    check_all(cases);
}

/// Frames of many tiles on every tile path: stored frames (random bytes) of 2^14 and 2^16
/// elements, exponents spread over the whole alphabet (every escape level, flagged groups) and
/// dead low bits, each with a partial last frame and a partial last tile, in every coding.
/// Hazards that need a buffer to be reused across tiles of one frame show only here.
#[test]
fn ascendc_multi_tile_frames_every_path() {
    let mut rng = Rng(0x5EED_7117_0014);
    let mut cases = Vec::new();
    for dtype in DTYPES {
        let eb = dtype.element_bytes();
        for log2 in [14u8, 16] {
            let n = (1usize << log2) + 3 * 1024 + 333;
            let random: Vec<u8> = (0..n * eb).map(|_| rng.next() as u8).collect();
            for coding in CODINGS {
                cases.push((
                    format!("{dtype:?} {coding:?} random bytes (stored) n={n} frame=2^{log2}"),
                    options(dtype, log2, coding, log2 == 14),
                    random.clone(),
                ));
            }
        }
        let n = (1usize << 14) + 1000;
        let wide: Vec<f32> = (0..n)
            .map(|i| {
                let e = (rng.next() % 60) as i32 - 30;
                (1.0 + (i % 7) as f32 / 8.0) * 2f32.powi(e) * if i % 3 == 0 { -1.0 } else { 1.0 }
            })
            .collect();
        let w = weights(&mut rng, n);
        let dead: Vec<f32> = w.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
        for coding in CODINGS {
            cases.push((
                format!("{dtype:?} {coding:?} wide exponents n={n} frame=2^14"),
                options(dtype, 14, coding, true),
                as_bytes(dtype, &wide),
            ));
            if dtype == Dtype::Fp32 {
                cases.push((
                    format!("Fp32 {coding:?} dead low bits n={n} frame=2^14"),
                    options(dtype, 14, coding, false),
                    as_bytes(dtype, &dead),
                ));
            }
        }
    }
    check_all(cases);
}

/// Hazard-free and byte-exact on 1 and 48 blocks, at both frame-length extremes.
#[test]
fn ascendc_blocks_and_frame_lengths() {
    let mut rng = Rng(0x5EED_0048);
    let mut failures = Vec::new();
    for (log2, frames) in [(10u8, 100usize), (16, 3)] {
        let values = weights(&mut rng, (frames << log2) - 77);
        for dtype in DTYPES {
            let codings: &[Coding] = if dtype == Dtype::Bf16 {
                &CODINGS
            } else {
                &[Coding::Auto]
            };
            for &coding in codings {
                for blocks in [1, 48] {
                    let what = format!("{dtype:?} {coding:?} 2^{log2} on {blocks} blocks");
                    let input = as_bytes(dtype, &values);
                    if let Err(e) =
                        cross_check_on(&what, &options(dtype, log2, coding, true), &input, blocks)
                    {
                        failures.push(e);
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The whole MiniLM slice in each dtype, both directions on 8 blocks (and decoding once more
/// without checksums), with the model's counters written to the file named by
/// `ENEC_ASCENDC_COSTS` (one `DTYPE[-nosum] <stats line>` per run), which
/// `ffi/ascendc/check.sh` turns into the cost report.
#[test]
fn ascendc_minilm_costs() {
    let raw = std::fs::read(repo().join("tests/data/minilm-slice.f32.bin")).expect("MiniLM slice");
    let values: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let mut report = String::new();
    for dtype in DTYPES {
        let name = format!("{dtype:?}").to_lowercase();
        let input = as_bytes(dtype, &values);
        let options = options(dtype, 14, Coding::Auto, true);
        let rust_stream = rust_encode(&options, &input);
        let (stream, stats) = ascendc_encode_stats(&options, &input, 8).unwrap();
        assert!(
            stream == rust_stream,
            "MiniLM {name}: AscendC stream differs from Rust's"
        );
        report += &format!("{name} {stats}\n");
        let (decoded, stats) = ascendc_decode_stats(&rust_stream, 8).unwrap();
        assert!(
            decoded == input,
            "MiniLM {name}: AscendC decoder output differs"
        );
        report += &format!("{name} {stats}\n");
        // The same without checksums: the decoder's scalar work minus the h32 checksum.
        let plain = rust_encode(
            &EncodeOptions {
                checksums: false,
                ..options
            },
            &input,
        );
        let (decoded, stats) = ascendc_decode_stats(&plain, 8).unwrap();
        assert!(
            decoded == input,
            "MiniLM {name} without checksums: AscendC decoder output differs"
        );
        report += &format!("{name}-nosum {stats}\n");
    }
    eprint!("{report}");
    if let Ok(path) = std::env::var("ENEC_ASCENDC_COSTS") {
        std::fs::write(path, report).expect("write the cost counters");
    }
}

/// The golden streams of format 1.0 (bf16, fp16, fp32).
#[test]
fn ascendc_golden_files() {
    golden_files_of("v1");
}

/// The golden streams of format 1.1 (e4m3, e5m2).
#[cfg(feature = "fp8")]
#[test]
fn ascendc_golden_files_v1_1() {
    golden_files_of("v1.1");
}

/// Every stream of `tests/golden/{version}/` decoded by the AscendC decoder into its `.bin`, and
/// every `.bin` encoded by the AscendC encoder into exactly its `.enec`.
fn golden_files_of(version: &str) {
    let dir = repo().join("tests/golden").join(version);
    let Ok(manifest) = std::fs::read_to_string(dir.join("MANIFEST.tsv")) else {
        eprintln!("no {}/MANIFEST.tsv yet: nothing to check", dir.display());
        return;
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut lines = manifest.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|&h| h == name)
            .expect("MANIFEST.tsv column")
    };
    let (c_name, c_dtype, c_frame, c_coding, c_sums) = (
        col("name"),
        col("dtype"),
        col("frame_len"),
        col("coding"),
        col("checksums"),
    );
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let name = f[c_name];
        let stream = std::fs::read(dir.join(format!("{name}.enec"))).expect("golden stream");
        let input = std::fs::read(dir.join(format!("{name}.bin"))).expect("golden input");
        let dtype = *DTYPES
            .iter()
            .find(|d| d.name() == f[c_dtype])
            .expect("a dtype the build codes");
        let coding = match f[c_coding] {
            "Groups" => Coding::Groups,
            "Ranked" => Coding::Ranked,
            _ => Coding::Auto,
        };
        let frame_len: u32 = f[c_frame].parse().expect("frame_len");
        let options = EncodeOptions::new(dtype)
            .coding(coding)
            .checksums(f[c_sums] == "true")
            .frame_len(frame_len)
            .expect("golden frame length");
        match ascendc_decode(&stream, 2) {
            Ok(got) if got == input => {}
            Ok(_) => failures.push(format!(
                "{name}: AscendC decoder output differs from {name}.bin"
            )),
            Err(e) => failures.push(format!("{name}: AscendC decoder failed: {e}")),
        }
        match ascendc_encode(&options, &input, 2) {
            Ok(got) if got == stream => {}
            Ok(_) => failures.push(format!(
                "{name}: AscendC encoder output differs from {name}.enec"
            )),
            Err(e) => failures.push(format!("{name}: AscendC encoder failed: {e}")),
        }
        checked += 1;
    }
    eprintln!("checked {checked} golden streams in {}", dir.display());
    assert!(checked > 0, "MANIFEST.tsv lists no golden stream");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The model must refuse corrupted streams, not return wrong data: flip bits in a frame's body,
/// at places where the Rust decoder refuses the flip (some bits, such as those past a plane's
/// last value, change nothing and are read by neither).
#[test]
fn ascendc_decoder_detects_corruption() {
    let mut rng = Rng(7);
    let input = as_bytes(Dtype::Bf16, &weights(&mut rng, 3000));
    let stream = rust_encode(&options(Dtype::Bf16, 10, Coding::Auto, true), &input);
    let flipped = |at: usize| {
        let mut bad = stream.clone();
        bad[at] ^= 0x10;
        bad
    };
    let near_end = (0..stream.len() - 32)
        .rev()
        .find(|&at| decode(&flipped(at), &mut vec![0u8; input.len()]).is_err())
        .expect("some flip near the end is refused");
    for at in [100usize, 700, near_end] {
        assert!(
            decode(&flipped(at), &mut vec![0u8; input.len()]).is_err(),
            "the Rust decoder accepts a flipped bit at byte {at}"
        );
        assert!(
            ascendc_decode(&flipped(at), 2).is_err(),
            "a flipped bit at byte {at} went unnoticed"
        );
    }
}

/// An FP8 stream whose header claims minor version 0 (which had no FP8 dtypes) is refused by the
/// host's header check, with a valid header check, so that only the version rule can refuse it.
#[cfg(feature = "fp8")]
#[test]
fn ascendc_fp8_stream_of_minor_version_0_is_refused() {
    let mut rng = Rng(0x5EED_0000_0011);
    for dtype in [Dtype::E4m3, Dtype::E5m2] {
        let input = as_bytes(dtype, &weights(&mut rng, 3000));
        let mut stream = rust_encode(&options(dtype, 10, Coding::Ranked, true), &input);
        assert_eq!(stream[5], 1, "FP8 streams carry minor version 1");
        assert!(
            ascendc_decode(&stream, 2) == Ok(input.clone()),
            "{dtype:?} minor 1"
        );
        stream[5] = 0;
        let check = enec::checksum::h32(&stream[..28]);
        stream[28..32].copy_from_slice(&check.to_le_bytes());
        let err = ascendc_decode(&stream, 2).expect_err("an FP8 stream of minor version 0");
        assert!(
            err.contains("dtype is newer than the stream's minor version"),
            "{dtype:?}: {err}"
        );
    }
}

/// Every rule of the strict model rejects a kernel that breaks it and accepts the same kernel
/// written correctly (`ffi/ascendc/sim/sim_rules.cpp`).
#[test]
fn ascendc_model_rules_can_fail() {
    let out = Command::new(build("sim_rules"))
        .output()
        .expect("run sim_rules");
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}");
    assert!(out.status.success(), "a model rule misbehaves:\n{report}");
}

/// Kernel edits that break a documented rule, each made to a copy of the sources: the model
/// must reject every one and name the rule (the rule cases of `sim_rules.cpp` are small kernels
/// of their own; these are the real kernels, broken the way a change could break them).
#[test]
fn ascendc_model_rejects_broken_kernels() {
    // (file under ffi/ascendc, text, replacement, direction, rule the rejection names)
    // Directions: "decode" (2^14-element frames, each decoded from the frame cache), "decode-16"
    // (2^16-element frames, too large for it), "encode".
    let edits: [(&str, &str, &str, &str, &str); 5] = [
        // A status word written by a 32-byte copy covers 7 other cores' words.
        (
            "kernel/enec_common.h",
            "DataCopyExtParams copy(1, sizeof(uint32_t), 0, 0, 0);",
            "DataCopyExtParams copy(1, 32, 0, 0, 0);",
            "decode",
            "R3 across cores",
        ),
        // Pass C reads the workspace before pass B's writes are known to have landed.
        (
            "kernel/enec_encode.h",
            "sync_pipes<AscendC::HardEvent::MTE3_MTE2>();",
            "",
            "encode",
            "R1 read-after-write on GM",
        ),
        // The frame header copied into a VECCALC buffer: not a DataCopy data path.
        (
            "kernel/enec_decode.h",
            "AscendC::TBuf<TPosition::VECIN> headerBuf;",
            "AscendC::TBuf<TPosition::VECCALC> headerBuf;",
            "decode",
            "R2 position",
        ),
        // Plane words gathered from the cached frame before its copy-in is known to have landed.
        (
            "kernel/enec_decode.h",
            "cacheQue.EnQue(cache);\n            cache = cacheQue.DeQue<uint16_t>();",
            "",
            "decode",
            "R1 read-after-write on UB",
        ),
        // A frame too large for the cache: its symbol table, copied into a TBuf, widened by V
        // before the copy is known to have landed.
        (
            "kernel/enec_decode.h",
            "sync_pipes<AscendC::HardEvent::MTE2_V>();",
            "",
            "decode-16",
            "R1 read-after-write on UB",
        ),
    ];
    let raw = std::fs::read(repo().join("tests/data/minilm-slice.f32.bin")).expect("MiniLM slice");
    let values: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let options = options(Dtype::Bf16, 14, Coding::Auto, true);
    let input = as_bytes(Dtype::Bf16, &values);
    let stream = rust_encode(&options, &input);
    let stream_16 = rust_encode(
        &EncodeOptions {
            frame_log2: 16,
            ..options
        },
        &input,
    );
    let (input_file, stream_file, stream_16_file, out_file) = (
        scratch("broken-input.bin"),
        scratch("broken-stream.enec"),
        scratch("broken-stream-16.enec"),
        scratch("broken-out"),
    );
    std::fs::write(&input_file, &input).unwrap();
    std::fs::write(&stream_file, &stream).unwrap();
    std::fs::write(&stream_16_file, &stream_16).unwrap();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let mut failures = Vec::new();
    for (n, (file, from, to, direction, rule)) in edits.iter().enumerate() {
        // A copy of the sources with the one edit.
        let root = work_dir().join(format!("broken-{}-{n}", std::process::id()));
        for dir in ["kernel", "sim", "host"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            for entry in std::fs::read_dir(repo().join("ffi/ascendc").join(dir)).unwrap() {
                let path = entry.unwrap().path();
                std::fs::copy(&path, root.join(dir).join(path.file_name().unwrap())).unwrap();
            }
        }
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert_eq!(
            text.matches(from).count(),
            1,
            "{file}: the edit's text must occur exactly once: {from}"
        );
        std::fs::write(root.join(file), text.replace(from, to)).unwrap();
        let binary = root.join("sim_driver");
        let built = Command::new(&cxx)
            .args(["-std=c++17", "-O2", "-w", "-I"])
            .arg(root.join("sim"))
            .arg("-I")
            .arg(root.join("kernel"))
            .arg(root.join("sim/sim_driver.cpp"))
            .arg("-o")
            .arg(&binary)
            .status()
            .expect("run the C++ compiler");
        assert!(
            built.success(),
            "edit {n}: the broken kernel does not compile"
        );
        let mut cmd = Command::new(&binary);
        if *direction == "decode" || *direction == "decode-16" {
            let stream = if *direction == "decode" {
                &stream_file
            } else {
                &stream_16_file
            };
            cmd.args(["decode"]).arg(stream).arg(&out_file).arg("8");
        } else {
            cmd.args(["encode", "1", "14", "0", "1"])
                .arg(&input_file)
                .arg(&out_file)
                .arg("8");
        }
        let out = cmd.output().expect("run the broken kernel");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains(rule) {
            failures.push(format!(
                "edit {n} ({file}: {from:?} -> {to:?}): {} without \"{rule}\":\n{}",
                if out.status.success() {
                    "accepted"
                } else {
                    "rejected"
                },
                stderr.lines().take(4).collect::<Vec<_>>().join("\n")
            ));
        }
        let _ = std::fs::remove_dir_all(&root);
    }
    for f in [&input_file, &stream_file, &stream_16_file, &out_file] {
        let _ = std::fs::remove_file(f);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
