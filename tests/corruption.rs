//! Corrupted streams: what a decoder that verifies checksums may return.
//!
//! For streams of every dtype and every coding (auto, groups, ranked, stored, and a stream that
//! mixes codings frame by frame) with checksums on, every single bit is flipped (a seeded random
//! sample of bits for the large stream), every truncation is tried, bytes are appended, and
//! seeded random bursts overwrite bytes. Each corrupted stream must decode to an error or to
//! exactly the original data: never different data reported as good. With checksums off the
//! same corruptions must never panic (any result is allowed: nothing can detect a flipped
//! mantissa bit then), and decoding stays deterministic.
//!
//! Every decoding path is held to this: the one-shot `decode`, and frame by frame with `frames()`
//! and `frame::decode_frame` (how a parallel decoder works).

mod common;
use common::Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};

use enec::internals::frame::decode_frame;
use enec::{decode, encode, frames, max_encoded_size, Coding, Dtype, EncodeOptions, FrameCoding};
use half::{bf16, f16};

const SLICE: &[u8] = include_bytes!("data/minilm-slice.f32.bin");

/// `n` real weights from `at` (an element offset into the slice), as `dtype` bytes.
fn real(dtype: Dtype, at: usize, n: usize) -> Vec<u8> {
    let values = SLICE[4 * at..4 * (at + n)]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    match dtype {
        Dtype::Bf16 => values
            .flat_map(|v| bf16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::Fp16 => values
            .flat_map(|v| f16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::Fp32 => values.flat_map(|v| v.to_le_bytes()).collect(),
        // Scaled as a per-tensor FP8 scale would (the weights' largest magnitudes are near 7).
        Dtype::E4m3 | Dtype::E5m2 => values
            .map(|v| common::fp8(dtype, f64::from(v) * 64.0))
            .collect(),
    }
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..n).map(|_| (rng.next() >> 32) as u8).collect()
}

fn options(dtype: Dtype, coding: Coding, checksums: bool, frame_log2: u8) -> EncodeOptions {
    EncodeOptions {
        frame_log2,
        ..EncodeOptions::new(dtype)
            .coding(coding)
            .checksums(checksums)
    }
}

fn encode_vec(options: &EncodeOptions, data: &[u8]) -> Vec<u8> {
    let mut stream = vec![0u8; max_encoded_size(options, data.len()).unwrap()];
    let len = encode(options, data, &mut stream).unwrap();
    stream.truncate(len);
    stream
}

/// A test stream: its name, the data, the stream, and which frame codings it must contain.
struct Case {
    name: String,
    data: Vec<u8>,
    stream: Vec<u8>,
}

/// The streams of one dtype: 2,500 elements in frames of 1,024 (three frames, the last partial).
fn cases(dtype: Dtype, checksums: bool) -> Vec<Case> {
    let n = 2500;
    let eb = dtype.element_bytes();
    let weights = real(dtype, 196_608, n); // a dense layer's weights
    let mut cases = Vec::new();
    for (coding, cname, want) in [
        (Coding::Auto, "auto", FrameCoding::Ranked),
        (Coding::Groups, "groups", FrameCoding::Groups),
        (Coding::Ranked, "ranked", FrameCoding::Ranked),
    ] {
        let o = options(dtype, coding, checksums, 10);
        let stream = encode_vec(&o, &weights);
        let codings: Vec<_> = frames(&stream)
            .unwrap()
            .map(|f| f.unwrap().coding)
            .collect();
        // The partial last frame may be stored where that is smaller.
        assert!(
            codings[..2].iter().all(|&c| c == want),
            "{cname}: {codings:?}"
        );
        cases.push(Case {
            name: format!("{}-{cname}", dtype.name()),
            data: weights.clone(),
            stream,
        });
    }
    // Random bytes: every frame stored.
    let noise = random_bytes(n * eb, 0x5eed ^ eb as u64);
    let o = options(dtype, Coding::Auto, checksums, 10);
    let stream = encode_vec(&o, &noise);
    assert!(frames(&stream)
        .unwrap()
        .all(|f| f.unwrap().coding == FrameCoding::Stored));
    cases.push(Case {
        name: format!("{}-stored", dtype.name()),
        data: noise.clone(),
        stream,
    });
    // One stream mixing codings: weights, noise, then constant values (groups or ranked).
    let mut mixed = weights[..1024 * eb].to_vec();
    mixed.extend_from_slice(&noise[..1024 * eb]);
    mixed.extend(std::iter::repeat_n(weights[..eb].to_vec(), 452).flatten());
    let stream = encode_vec(&o, &mixed);
    let codings: Vec<_> = frames(&stream)
        .unwrap()
        .map(|f| f.unwrap().coding)
        .collect();
    assert_eq!(codings[1], FrameCoding::Stored);
    assert_ne!(codings[0], FrameCoding::Stored);
    cases.push(Case {
        name: format!("{}-mixed", dtype.name()),
        data: mixed,
        stream,
    });
    if dtype == Dtype::Fp32 {
        // fp32 weights that were bf16: 16 dead low mantissa bits.
        let widened: Vec<u8> = SLICE[..4 * n]
            .chunks_exact(4)
            .flat_map(|b| {
                let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                bf16::from_f32(v).to_f32().to_le_bytes()
            })
            .collect();
        for (coding, cname) in [(Coding::Groups, "groups"), (Coding::Ranked, "ranked")] {
            let o = options(dtype, coding, checksums, 10);
            cases.push(Case {
                name: format!("fp32-dead16-{cname}"),
                stream: encode_vec(&o, &widened),
                data: widened.clone(),
            });
        }
    }
    cases
}

/// Decodes `stream` every way there is. With `expect` (checksums on) each way must give an error
/// or exactly `expect`. Without, it must only not panic and be deterministic. Returns whether the
/// one-shot decode succeeded.
fn check(
    stream: &[u8],
    original_len: usize,
    expect: Option<&[u8]>,
    what: &dyn Fn() -> String,
) -> bool {
    // The output buffer is sized for the original data (plus slack), as a loader would size it
    // from its own metadata; a corrupted header asking for more must be refused.
    let run = || {
        let mut out = vec![0xa5u8; original_len + 64];
        let r = decode(stream, &mut out);
        (r, out)
    };
    let (r, out) = match catch_unwind(AssertUnwindSafe(run)) {
        Ok(x) => x,
        Err(_) => panic!("decode panicked on {}", what()),
    };
    if let Ok(n) = r {
        match expect {
            Some(data) => {
                assert_eq!(n, data.len(), "wrong length reported as good: {}", what());
                assert!(
                    out[..n] == *data,
                    "different data reported as good: {}",
                    what()
                );
            }
            None => {
                // Deterministic even where nothing can be verified.
                let mut again = vec![0x5au8; original_len + 64];
                assert_eq!(decode(stream, &mut again), Ok(n), "{}", what());
                assert!(
                    again[..n] == out[..n],
                    "nondeterministic decode: {}",
                    what()
                );
            }
        }
    }
    // Frame by frame.
    let per_frame = || -> Result<(), String> {
        let Ok(iter) = frames(stream) else {
            return Ok(());
        };
        let info = *iter.info();
        let frame_bytes = info.frame_len() * info.dtype.element_bytes();
        for f in iter {
            let Ok(f) = f else { break };
            let start = f.index as usize * frame_bytes;
            let len = f.elements * info.dtype.element_bytes();
            let mut out = vec![0u8; len];
            let r = decode_frame(
                info.dtype,
                info.checksums,
                f.index,
                f.elements,
                &stream[f.offset..],
                &mut out,
            );
            if let (Ok(_), Some(data)) = (r, expect) {
                if data.get(start..start + len) != Some(&out[..]) {
                    return Err(format!("frame {} decoded to different data", f.index));
                }
            }
        }
        Ok(())
    };
    match catch_unwind(AssertUnwindSafe(per_frame)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{e} reported as good: {}", what()),
        Err(_) => panic!("frame-by-frame decode panicked on {}", what()),
    }
    r.is_ok()
}

/// Every (or a sample of) single-bit flip, every truncation, appended bytes, random bursts.
fn corrupt_all(case: &Case, checksums: bool, max_bits: usize) {
    let stream = &case.stream;
    let expect = checksums.then_some(&case.data[..]);
    let len = case.data.len();
    // The intact stream decodes.
    let mut out = vec![0u8; len];
    assert_eq!(decode(stream, &mut out), Ok(len), "{}", case.name);
    assert_eq!(out, case.data, "{}", case.name);

    let bits = stream.len() * 8;
    let mut rng = Rng(0x0123_4567_89ab_cdef ^ bits as u64);
    let chosen: Vec<usize> = if bits <= max_bits {
        (0..bits).collect()
    } else {
        // Every bit of the stream header and of the first frame header, then a sample.
        (0..64 * 8)
            .chain((0..max_bits - 64 * 8).map(|_| rng.index(bits)))
            .collect()
    };
    let mut flipped = stream.clone();
    let mut survived = 0usize;
    for &bit in &chosen {
        flipped[bit / 8] ^= 1 << (bit % 8);
        if check(&flipped, len, expect, &|| {
            format!("{}: bit {bit} (byte {}) flipped", case.name, bit / 8)
        }) {
            survived += 1;
        }
        flipped[bit / 8] ^= 1 << (bit % 8);
    }
    if checksums {
        // Only flips that leave the data intact (padding, unused table slots) may succeed.
        assert!(
            survived < chosen.len() / 2,
            "{}: {survived} flips decoded",
            case.name
        );
    }

    for cut in 0..stream.len() {
        let ok = check(&stream[..cut], len, expect, &|| {
            format!(
                "{}: truncated to {cut} of {} bytes",
                case.name,
                stream.len()
            )
        });
        assert!(
            !ok,
            "{}: truncated to {cut} bytes, decode succeeded",
            case.name
        );
    }
    for extra in [1usize, 31, 32, 64] {
        let mut longer = stream.clone();
        longer.extend(std::iter::repeat_n(0u8, extra));
        let ok = check(&longer, len, expect, &|| {
            format!("{}: {extra} bytes appended", case.name)
        });
        assert!(!ok, "{}: {extra} trailing bytes accepted", case.name);
    }

    // Bursts: 1 to 16 consecutive bytes overwritten with random values, and random multi-byte
    // scatters.
    let mut burst = stream.clone();
    for round in 0..400 {
        let at = rng.index(stream.len());
        let n = if round % 2 == 0 { 1 + rng.index(16) } else { 1 };
        let scatter = if round % 2 == 0 { 1 } else { 2 + rng.index(6) };
        let mut places = Vec::new();
        for s in 0..scatter {
            let at = if s == 0 { at } else { rng.index(stream.len()) };
            let end = (at + n).min(stream.len());
            for (b, byte) in burst[at..end].iter_mut().enumerate() {
                *byte = (rng.next() >> 40) as u8;
                places.push(at + b);
            }
        }
        check(&burst, len, expect, &|| {
            format!("{}: bytes {places:?} overwritten", case.name)
        });
        burst.copy_from_slice(stream);
    }
}

fn run(dtype: Dtype, checksums: bool) {
    // Checksums on: every bit. Off (only "never panics" to check): a sample of 12,000 bits.
    let max_bits = if checksums { usize::MAX } else { 12_000 };
    for case in cases(dtype, checksums) {
        corrupt_all(&case, checksums, max_bits);
    }
}

#[test]
fn bf16_checksums_on() {
    run(Dtype::Bf16, true);
}

#[test]
fn fp16_checksums_on() {
    run(Dtype::Fp16, true);
}

#[test]
fn fp32_checksums_on() {
    run(Dtype::Fp32, true);
}

#[cfg(feature = "fp8")]
#[test]
fn e4m3_checksums_on() {
    run(Dtype::E4m3, true);
}

#[cfg(feature = "fp8")]
#[test]
fn e5m2_checksums_on() {
    run(Dtype::E5m2, true);
}

#[cfg(feature = "fp8")]
#[test]
fn e5m2_checksums_off_never_panics() {
    run(Dtype::E5m2, false);
}

/// An FP8 stream whose header claims minor version 0 (which had no FP8 dtypes) is refused, with a
/// valid header check, so that only the version rule can refuse it.
#[cfg(feature = "fp8")]
#[test]
fn fp8_stream_of_minor_version_0_is_refused() {
    for dtype in [Dtype::E4m3, Dtype::E5m2] {
        let mut stream = encode_vec(
            &options(dtype, Coding::Ranked, true, 10),
            &real(dtype, 0, 3000),
        );
        assert_eq!(stream[5], 1, "FP8 streams carry minor version 1");
        stream[5] = 0;
        let check = enec::checksum::h32(&stream[..28]);
        stream[28..32].copy_from_slice(&check.to_le_bytes());
        let mut out = vec![0u8; 3000];
        assert_eq!(
            decode(&stream, &mut out),
            Err(enec::Error::CorruptHeader(
                "dtype is newer than the stream's minor version"
            ))
        );
    }
}

#[test]
fn bf16_checksums_off_never_panics() {
    run(Dtype::Bf16, false);
}

#[test]
fn fp16_checksums_off_never_panics() {
    run(Dtype::Fp16, false);
}

#[test]
fn fp32_checksums_off_never_panics() {
    run(Dtype::Fp32, false);
}

/// A large stream (16,384-element frames, 6 frames, every coding per frame chosen by auto): a
/// seeded sample of bit flips, every stream-header bit, and truncations at frame boundaries
/// and a sample of lengths.
#[test]
fn large_stream_sampled() {
    for dtype in Dtype::ALL {
        let n = 5 * 16384 + 999;
        let data = real(dtype, 0, n);
        for checksums in [true, false] {
            let o = options(dtype, Coding::Auto, checksums, 14);
            let stream = encode_vec(&o, &data);
            let case = Case {
                name: format!(
                    "{}-large-{}",
                    dtype.name(),
                    if checksums { "sum" } else { "nosum" }
                ),
                data: data.clone(),
                stream,
            };
            corrupt_sampled(&case, checksums, 1200, 256, 100);
        }
    }
}

/// `flips` single-bit flips (the first `header_bits` bits of the stream in order, then a seeded
/// sample), truncations around every frame boundary and at `cuts` sampled lengths.
fn corrupt_sampled(case: &Case, checksums: bool, flips: usize, header_bits: usize, cuts: usize) {
    let stream = &case.stream;
    let expect = checksums.then_some(&case.data[..]);
    let len = case.data.len();
    let bits = stream.len() * 8;
    let mut rng = Rng(0xfeed_f00d ^ bits as u64);
    let mut flipped = stream.clone();
    for k in 0..flips {
        let bit = if k < header_bits { k } else { rng.index(bits) };
        flipped[bit / 8] ^= 1 << (bit % 8);
        check(&flipped, len, expect, &|| {
            format!("{}: bit {bit} flipped", case.name)
        });
        flipped[bit / 8] ^= 1 << (bit % 8);
    }
    let mut lengths: Vec<usize> = frames(stream)
        .unwrap()
        .flat_map(|f| {
            let f = f.unwrap();
            [
                f.offset - 1,
                f.offset,
                f.offset + 1,
                f.offset + 32,
                f.offset + f.bytes - 1,
            ]
        })
        .collect();
    lengths.extend((0..cuts).map(|_| rng.index(stream.len())));
    for cut in lengths {
        let ok = check(&stream[..cut], len, expect, &|| {
            format!("{}: truncated to {cut}", case.name)
        });
        assert!(
            !ok,
            "{}: truncated to {cut} bytes, decode succeeded",
            case.name
        );
    }
}

/// The corruption checks on tiny streams (every dtype and coding, 96 elements: one partial
/// frame), sized so that Miri runs them in reasonable time (`fuzz/miri.sh`): the stream-header
/// bits (all of them, or a few under Miri), a sample of the rest, and truncations.
#[test]
fn small_streams_sampled() {
    let n = 96;
    for dtype in Dtype::ALL {
        let eb = dtype.element_bytes();
        let weights = real(dtype, 196_608, n);
        let noise = random_bytes(n * eb, 7);
        for (coding, data) in [
            (Coding::Auto, &weights),
            (Coding::Groups, &weights),
            (Coding::Ranked, &weights),
            (Coding::Auto, &noise),
        ] {
            for checksums in [true, false] {
                let stream = encode_vec(&options(dtype, coding, checksums, 10), data);
                let case = Case {
                    name: format!("{}-{coding:?}-small-{checksums}", dtype.name()),
                    data: data.clone(),
                    stream,
                };
                if cfg!(miri) {
                    corrupt_sampled(&case, checksums, 24, 4, 4);
                } else {
                    corrupt_sampled(&case, checksums, 800, 256, 64);
                }
            }
        }
    }
}

/// Without the feature `fp8`, FP8 streams are an unsupported dtype, and encoding FP8 is refused
/// the same way.
#[cfg(not(feature = "fp8"))]
#[test]
fn fp8_is_unsupported_without_its_feature() {
    let mut header = [0u8; 32];
    header[..8].copy_from_slice(&[b'E', b'N', b'E', b'C', 1, 1, 4, 10]);
    let check = enec::checksum::h32(&header[..28]);
    header[28..].copy_from_slice(&check.to_le_bytes());
    assert_eq!(
        decode(&header, &mut []),
        Err(enec::Error::UnsupportedDtype(4))
    );
    let options = EncodeOptions::new(Dtype::E5m2);
    let mut out = vec![0u8; 4096];
    assert_eq!(
        encode(&options, &[0x38; 1024], &mut out),
        Err(enec::Error::UnsupportedDtype(5))
    );
}
