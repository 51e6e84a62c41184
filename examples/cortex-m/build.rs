//! Compresses a slice of the bundled MiniLM weights with the host encoder, in bf16, fp16 and
//! fp32 and in both codings, and writes the streams and their digests where `src/main.rs`
//! includes them into flash. Also points the linker at `memory.x`.
//!
//! `ENEC_FRAME` sets the frame length (default 4,096 elements); `ENEC_SELFTEST_WRONG_DIGEST=1`
//! stores one wrong digest, for the check that the firmware then fails.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::{env, fs};

use enec::{decode, decode_to_vec, encode_to_vec, frames, Coding, Dtype, EncodeOptions, Error};

#[path = "src/digest.rs"]
mod digest;

/// 934,656 fp32 weights of all-MiniLM-L6-v2 (Apache-2.0); see tests/data/README.md.
const SLICE: &str = "../../tests/data/minilm-slice.f32.bin";
/// Where `encoder.layer.0.attention.self.query.weight` starts in the slice
/// (tests/data/minilm-slice.tsv: 196,608 + 384 + 384 elements come before it).
const FIRST: usize = 197_376;
/// Elements taken from there: not a whole number of frames, so the last frame is a short one.
const ELEMENTS: usize = 40_000;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    for path in ["memory.x", SLICE, "src/digest.rs"] {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-env-changed=ENEC_FRAME");
    println!("cargo:rerun-if-env-changed=ENEC_SELFTEST_WRONG_DIGEST");

    let frame_len: u32 = env::var("ENEC_FRAME").map_or(4096, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("ENEC_FRAME={v}: not a number"))
    });
    let wrong_digest = env::var("ENEC_SELFTEST_WRONG_DIGEST").is_ok_and(|v| v == "1");

    let slice = fs::read(SLICE).unwrap_or_else(|e| panic!("{SLICE}: {e}"));
    let weights: Vec<f32> = slice
        .chunks_exact(4)
        .skip(FIRST)
        .take(ELEMENTS)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(weights.len(), ELEMENTS, "{SLICE} is shorter than expected");

    let mut table = String::new();
    let (mut max_decoded, mut max_stream) = (0, 0);
    for (dtype, name) in [
        (Dtype::Bf16, "bf16"),
        (Dtype::Fp16, "fp16"),
        (Dtype::Fp32, "fp32"),
    ] {
        let original = to_dtype(&weights, dtype);
        for (coding, coding_name) in [(Coding::Ranked, "ranked"), (Coding::Groups, "groups")] {
            let options = EncodeOptions::new(dtype)
                .frame_len(frame_len)
                .unwrap_or_else(|e| panic!("ENEC_FRAME={frame_len}: {e}"))
                .coding(coding);
            let stream = encode_to_vec(&options, &original).expect("encode");
            assert_eq!(
                decode_to_vec(&stream).expect("decode on the host"),
                original
            );
            let (corrupt_byte, corrupt_frame) = payload_bit_to_flip(&stream, original.len());

            let mut digest = digest::Digest::new();
            digest.update(&original);
            let mut digest = digest.value();
            if wrong_digest && dtype == Dtype::Bf16 && coding == Coding::Ranked {
                digest ^= 1;
            }

            let file = format!("{name}-{coding_name}.enec");
            fs::write(out.join(&file), &stream).expect("write stream");
            max_decoded = max_decoded.max(original.len());
            max_stream = max_stream.max(stream.len());
            writeln!(
                table,
                "    TestStream {{ name: \"{name} {coding_name}\", dtype: Dtype::{dtype:?}, \
                 stream: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{file}\")), \
                 digest: {digest:#018x}, corrupt_byte: {corrupt_byte}, \
                 corrupt_frame: {corrupt_frame} }},"
            )
            .unwrap();
        }
    }

    let generated = format!(
        "// Written by build.rs.\n\
         /// Elements per frame of every stream.\n\
         pub const FRAME_LEN: usize = {frame_len};\n\
         /// Elements in every stream.\n\
         pub const ELEMENTS: usize = {ELEMENTS};\n\
         /// The largest decoded size (fp32).\n\
         pub const MAX_DECODED: usize = {max_decoded};\n\
         /// The largest stream.\n\
         pub const MAX_STREAM: usize = {max_stream};\n\
         /// The streams in flash, with what the host knows about them.\n\
         pub static STREAMS: [TestStream; 6] = [\n{table}];\n"
    );
    fs::write(out.join("streams.rs"), generated).expect("write streams.rs");
}

/// The weights as little-endian `dtype` bytes, rounded to nearest even as the fetch script does.
fn to_dtype(weights: &[f32], dtype: Dtype) -> Vec<u8> {
    match dtype {
        Dtype::Bf16 => weights
            .iter()
            .flat_map(|&w| half::bf16::from_f32(w).to_le_bytes())
            .collect(),
        Dtype::Fp16 => weights
            .iter()
            .flat_map(|&w| half::f16::from_f32(w).to_le_bytes())
            .collect(),
        Dtype::Fp32 => weights.iter().flat_map(|w| w.to_le_bytes()).collect(),
        Dtype::E4m3 | Dtype::E5m2 => unreachable!("the firmware carries bf16, fp16 and fp32"),
    }
}

/// A byte of the middle frame whose low bit, flipped, changes the decoded weights without
/// breaking the frame's structure, so that only the frame checksum can catch it: returns the
/// byte's offset in the stream and the frame's index. Checked with the host decoder.
fn payload_bit_to_flip(stream: &[u8], decoded_len: usize) -> (usize, u32) {
    let all: Vec<_> = frames(stream)
        .expect("frames")
        .collect::<Result<_, _>>()
        .expect("frame headers");
    let frame = all[all.len() / 2];
    let mut out = vec![0u8; decoded_len];
    // From the middle of the frame towards its end: the first byte that decodes to other values.
    for byte in frame.offset + frame.bytes / 2..frame.offset + frame.bytes {
        let mut corrupted = stream.to_vec();
        corrupted[byte] ^= 1;
        if decode(&corrupted, &mut out) == Err(Error::ChecksumMismatch { frame: frame.index }) {
            return (byte, frame.index);
        }
    }
    panic!("no payload bit of frame {} to flip", frame.index);
}
