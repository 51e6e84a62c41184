//! Regression tests for inputs the fuzz targets and the hostile-input review found: each test
//! says what the input is, what the code must do with it and where that is checked, and holds
//! the input inline (or under `tests/regressions/`). A finding not yet fixed is a test marked
//! `#[ignore = "bug: ..."]`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use enec::internals::frame::decode_frame;
use enec::{decode, encode, max_encoded_size, Dtype, EncodeOptions};

/// A well-formed `groups` frame of `elements` bf16 elements, every one decoding to exponent
/// `base` with sign and mantissa 0: dead bits 7 (a 1-bit residual), low width 0, no flagged
/// group. Its size is linear in `elements`, about 1/7 byte per element.
fn groups_frame(elements: usize) -> Vec<u8> {
    let pad32 = |x: usize| x.div_ceil(32) * 32;
    let groups = elements.div_ceil(16);
    let residual = pad32(2 * elements.div_ceil(16)); // 1-bit plane of `elements` values
    let flags = pad32(2 * groups.div_ceil(16)); // 1-bit plane of `groups` values
    let bytes = 32 + residual + flags;
    let mut frame = vec![0u8; bytes];
    frame[0..4].copy_from_slice(&(bytes as u32).to_le_bytes());
    frame[8..12].copy_from_slice(&(elements as u32).to_le_bytes());
    frame[12] = 1; // groups
    frame[13] = 7; // dead bits
    frame[16] = 127; // base b
    frame[17] = 8; // width n
    frame[18] = 0; // low width m
    frame
}

/// The helper builds frames the decoder accepts (so the test below fails for the right reason).
#[test]
fn groups_frame_helper_is_valid() {
    let elements = 4096;
    let frame = groups_frame(elements);
    let mut out = vec![0u8; 2 * elements];
    assert_eq!(
        decode_frame(Dtype::Bf16, false, 0, elements, &frame, &mut out),
        Ok(frame.len())
    );
    assert!(
        out.chunks_exact(2).all(|e| e == [0x80, 0x3f]),
        "127 << 7 = 0x3f80"
    );
}

/// The single-frame decoder given `elements` above `MAX_FRAME_LEN` (65,536) and a frame header
/// that agrees: an error, no panic (the groups decoder's flag set holds 4,096 groups). `decode`
/// and `frames()` never pass such a count (the stream header limits frames to 65,536
/// elements); the input is just a 9,376-byte frame and a count.
#[test]
fn decode_frame_rejects_more_than_max_frame_len_elements() {
    let elements = 70_000;
    let frame = groups_frame(elements);
    let mut out = vec![0u8; 2 * elements];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decode_frame(Dtype::Bf16, false, 0, elements, &frame, &mut out)
    }));
    let r = r.expect("decode_frame panicked");
    assert!(
        r.is_err(),
        "a frame of more than 65,536 elements was accepted: {r:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// AscendC kernels on their CPU model (ffi/ascendc/), driven as tests/ascendc.rs drives them.
// ---------------------------------------------------------------------------------------------

/// Compiles `ffi/ascendc/sim/sim_driver.cpp` (the kernels on the CPU model) once per test run.
fn ascendc_driver() -> &'static Path {
    static DRIVER: OnceLock<PathBuf> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ffi/ascendc");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("regressions");
        std::fs::create_dir_all(&dir).expect("create the test work directory");
        let out = dir.join(format!("sim_driver-{}", std::process::id()));
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let status = Command::new(&cxx)
            .args(["-std=c++17", "-O2", "-I"])
            .arg(root.join("sim"))
            .arg("-I")
            .arg(root.join("kernel"))
            .arg(root.join("sim/sim_driver.cpp"))
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap_or_else(|e| panic!("these tests need a C++17 compiler (`{cxx}`): {e}"));
        assert!(status.success(), "compiling the AscendC CPU model failed");
        out
    })
}

/// Whether the AscendC decoder (on the model) accepts `stream`.
fn ascendc_accepts(stream: &[u8], name: &str) -> bool {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("regressions");
    std::fs::create_dir_all(&dir).unwrap();
    let (s, o) = (
        dir.join(format!("{}-{name}.enec", std::process::id())),
        dir.join(format!("{}-{name}.bin", std::process::id())),
    );
    std::fs::write(&s, stream).unwrap();
    let out = Command::new(ascendc_driver())
        .arg("decode")
        .arg(&s)
        .arg(&o)
        .arg("2")
        .output()
        .expect("run sim_driver");
    let _ = std::fs::remove_file(&s);
    let _ = std::fs::remove_file(&o);
    out.status.success()
}

/// A valid bf16 stream of `n` elements (frames of 1,024, checksums on).
fn small_stream(n: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..n)
        .flat_map(|i| half::bf16::from_f32((i as f32 * 0.37).sin() * 0.05).to_le_bytes())
        .collect();
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let mut stream = vec![0u8; max_encoded_size(&options, data.len()).unwrap()];
    let len = encode(&options, &data, &mut stream).unwrap();
    stream.truncate(len);
    stream
}

/// The intact stream is accepted by both decoders (so the test below fails for the right reason).
#[test]
fn ascendc_accepts_a_valid_stream() {
    let stream = small_stream(1500);
    let mut out = vec![0u8; 3000];
    assert_eq!(decode(&stream, &mut out), Ok(3000));
    assert!(ascendc_accepts(&stream, "valid"));
}

/// Found by the `ascendc_diff` fuzz target: the AscendC host reader `enec_host::read_header`
/// (ffi/ascendc/host/enec_host.h) must refuse a stream header whose reserved bytes (9..12 and
/// 24..28) are not zero, as FORMAT.md section 3 requires and the Rust decoder does
/// (`CorruptHeader("reserved bytes are not zero")`), even when the header check is recomputed;
/// a future minor version that gives these bytes a meaning would otherwise be misread there.
#[test]
fn ascendc_refuses_reserved_stream_header_bytes() {
    for at in [9usize, 10, 11, 24, 25, 26, 27] {
        let mut stream = small_stream(1500);
        stream[at] = 0x01;
        let check = enec::checksum::h32(&stream[..28]);
        stream[28..32].copy_from_slice(&check.to_le_bytes());
        let mut out = vec![0u8; 3000];
        assert!(
            decode(&stream, &mut out).is_err(),
            "Rust accepts reserved byte {at}"
        );
        assert!(
            !ascendc_accepts(&stream, &format!("reserved{at}")),
            "AscendC accepts a stream whose reserved header byte {at} is set"
        );
    }
}

/// Found by the `wrapped` fuzz target ("frame-by-frame decoding and decode disagree"): a stream
/// cut inside a frame header. `frames()` reports the truncation in stream positions (`needed 64,
/// available 45`), as `decode` does, not in positions within the frame (`needed 32, available
/// 13`).
#[test]
fn frames_reports_a_cut_frame_header_in_stream_positions() {
    let stream = small_stream(1500);
    let cut = &stream[..32 + 13];
    let mut out = vec![0u8; 2 * 1500];
    let expected = decode(cut, &mut out).unwrap_err();
    assert_eq!(
        expected,
        enec::Error::Truncated {
            needed: 64,
            available: 45
        }
    );
    let first = enec::frames(cut).unwrap().next().unwrap();
    assert_eq!(first, Err(expected));
}
