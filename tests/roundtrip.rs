//! Round trips of whole streams (proptest) and the API contract around them: determinism, size
//! bound, header and frame index, frame-by-frame decoding, typed helpers, errors.
//!
//! Longer than 1,000 lines: one test crate compiles once for all of these contract checks, which
//! share their case generators.

mod common;
use common::Rng;
use enec::checksum::h32;
use enec::internals::frame::decode_frame;
use enec::{
    decode, decode_bf16, decode_f16, decode_f32, encode, encode_bf16, encode_f16, encode_f32,
    frames, max_encoded_size, read_header, Coding, Dtype, EncodeOptions, Error, FrameCoding,
};
use half::{bf16, f16};
use proptest::prelude::*;

const CODINGS: [Coding; 3] = [Coding::Auto, Coding::Groups, Coding::Ranked];

fn mask(w: u32) -> u32 {
    if w == 0 {
        0
    } else {
        u32::MAX >> (32 - w)
    }
}

fn pad32(x: usize) -> usize {
    x.div_ceil(32) * 32
}

fn element_mask(dtype: Dtype) -> u32 {
    mask(8 * dtype.element_bytes() as u32)
}

/// Little-endian bytes of element bit patterns.
fn to_bytes(dtype: Dtype, elements: &[u32]) -> Vec<u8> {
    let eb = dtype.element_bytes();
    elements
        .iter()
        .flat_map(|u| u.to_le_bytes().into_iter().take(eb))
        .collect()
}

/// The bit pattern of `v` in `dtype` (round to nearest even).
fn from_f32(dtype: Dtype, v: f32) -> u32 {
    match dtype {
        Dtype::Bf16 => u32::from(bf16::from_f32(v).to_bits()),
        Dtype::Fp16 => u32::from(f16::from_f32(v).to_bits()),
        Dtype::Fp32 => v.to_bits(),
        Dtype::E4m3 | Dtype::E5m2 => u32::from(common::fp8(dtype, f64::from(v) * 64.0)),
    }
}

/// A special value of `dtype`: NaN with payload, infinities, zeros, subnormals, extremes.
fn special(dtype: Dtype, which: u8, payload: u32, negative: bool) -> u32 {
    let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
    let exp_max = mask(e) << m;
    let sign = u32::from(negative) << (e + m);
    let payload = payload & mask(m);
    let nonzero = if payload == 0 { 1 } else { payload };
    sign | match which % 10 {
        0 => 0,                              // +-0.0
        1 => exp_max,                        // +-inf
        2 => exp_max | nonzero,              // NaN with a payload
        3 => exp_max | (1 << (m - 1)),       // quiet NaN
        4 => nonzero,                        // subnormal
        5 => 1,                              // smallest subnormal
        6 => ((mask(e) - 1) << m) | mask(m), // largest finite
        7 => 1 << m,                         // smallest normal
        8 => mask(e - 1) << m,               // 1.0
        _ => exp_max | 1,                    // signalling NaN, payload 1
    }
}

/// Weight-like values: roughly normal, scale `10^-scale`, a few outliers, the low `dead`
/// mantissa bits cleared.
fn weights(dtype: Dtype, count: usize, seed: u64, scale: u32, dead: u32) -> Vec<u32> {
    let mut rng = Rng(seed);
    let sd = 10f32.powi(-(scale as i32));
    (0..count)
        .map(|_| {
            let g = rng.unit() + rng.unit() + rng.unit() + rng.unit() - 2.0;
            let v = if rng.below(1000) == 0 {
                g * sd * 50.0
            } else {
                g * sd
            };
            from_f32(dtype, v) & !mask(dead.min(dtype.mantissa_bits()))
        })
        .collect()
}

/// Exponents in a narrow band with random weights per exponent (so the mode may sit anywhere in
/// it, and the groups base search meets optima below the mode); sign and mantissa random.
fn band(dtype: Dtype, count: usize, seed: u64) -> Vec<u32> {
    let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
    let mut rng = Rng(seed);
    let width = 1 + rng.below(16) as u32;
    let lo = rng.below(u64::from(mask(e) + 2 - width.min(mask(e)))) as u32;
    let weights: Vec<u64> = (0..width).map(|_| 1 + rng.below(8).pow(2)).collect();
    let total: u64 = weights.iter().sum();
    (0..count)
        .map(|_| {
            let mut pick = rng.below(total);
            let mut x = 0;
            while pick >= weights[x] {
                pick -= weights[x];
                x += 1;
            }
            let x = (lo + x as u32).min(mask(e));
            (x << m) | (rng.next() as u32 & (mask(m) | (1 << (e + m))))
        })
        .collect()
}

/// Segments of different kinds, so that neighbouring frames differ.
fn segments(dtype: Dtype, count: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let len = (1 + rng.below(1500) as usize).min(count - out.len());
        let kind = rng.below(6);
        let constant = rng.next() as u32 & element_mask(dtype);
        let sub = rng.next();
        let part = match kind {
            0 => (0..len)
                .map(|_| rng.next() as u32 & element_mask(dtype))
                .collect(),
            1 => vec![0; len],
            2 => vec![constant; len],
            3 => (0..len)
                .map(|_| {
                    special(
                        dtype,
                        rng.below(10) as u8,
                        rng.next() as u32,
                        rng.below(2) == 1,
                    )
                })
                .collect(),
            4 => band(dtype, len, sub),
            _ => weights(
                dtype,
                len,
                sub,
                1 + (sub % 4) as u32,
                (sub >> 8) as u32 % 24,
            ),
        };
        out.extend(part);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The checks every stream must pass
// ---------------------------------------------------------------------------------------------

/// The largest stream FORMAT.md 7 allows: every frame stored.
fn stored_size(dtype: Dtype, elements: usize, frame_len: usize) -> usize {
    let eb = dtype.element_bytes();
    let full = elements / frame_len;
    let rest = elements % frame_len;
    32 + full * (32 + pad32(frame_len * eb)) + if rest > 0 { 32 + pad32(rest * eb) } else { 0 }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn allowed(coding: Coding, frame: FrameCoding) -> bool {
    match coding {
        Coding::Auto => true,
        Coding::Groups => matches!(frame, FrameCoding::Groups | FrameCoding::Stored),
        Coding::Ranked => matches!(frame, FrameCoding::Ranked | FrameCoding::Stored),
    }
}

/// Encodes `input`, checks everything the stream promises, and returns the stream.
fn check_roundtrip(options: &EncodeOptions, input: &[u8]) -> Vec<u8> {
    let dtype = options.dtype;
    let eb = dtype.element_bytes();
    let n = input.len() / eb;
    let frame_len = 1usize << options.frame_log2;
    let frame_count = n.div_ceil(frame_len);

    let bound = max_encoded_size(options, input.len()).unwrap();
    assert_eq!(bound, stored_size(dtype, n, frame_len), "max_encoded_size");
    // Garbage in the output buffer must not leak into the stream.
    let mut out = vec![0xA5u8; bound + 7];
    let len = encode(options, input, &mut out).unwrap();
    assert!(
        len <= bound,
        "stream of {len} bytes exceeds the bound {bound}"
    );
    let stream = out[..len].to_vec();
    let mut again = vec![0x5Au8; bound];
    let len2 = encode(options, input, &mut again).unwrap();
    assert_eq!(&again[..len2], &stream[..], "encoding is not deterministic");

    // Stream header (FORMAT.md 3).
    let info = read_header(&stream).unwrap();
    assert_eq!(info.dtype, dtype);
    assert_eq!(info.element_count, n as u64);
    assert_eq!(info.frame_count as usize, frame_count);
    assert_eq!(info.frame_log2, options.frame_log2);
    assert_eq!(info.checksums, options.checksums);
    assert_eq!(info.version, (1, dtype.version_minor()));
    assert_eq!(info.decoded_bytes(), input.len() as u64);
    assert_eq!(&stream[..4], b"ENEC");
    assert_eq!(stream[6], dtype.code());
    assert_eq!(stream[7], options.frame_log2);
    assert_eq!(stream[8], u8::from(options.checksums));

    // The frame index tiles the stream.
    let mut offset = 32;
    let mut walked = 0;
    for (i, frame) in frames(&stream).unwrap().enumerate() {
        let frame = frame.unwrap();
        let elements = frame_len.min(n - i * frame_len);
        assert_eq!(frame.index as usize, i);
        assert_eq!(frame.offset, offset, "frame {i} offset");
        assert_eq!(frame.elements, elements, "frame {i} elements");
        assert_eq!(frame.bytes % 32, 0);
        assert!(frame.bytes >= 32);
        assert!(
            frame.bytes <= 32 + pad32(elements * eb),
            "frame {i} larger than stored"
        );
        assert!(
            allowed(options.coding, frame.coding),
            "{:?} frame in a {:?} stream",
            frame.coding,
            options.coding
        );
        let header = &stream[offset..offset + 32];
        assert_eq!(u32_at(header, 0) as usize, frame.bytes);
        assert_eq!(u32_at(header, 8) as usize, elements);
        assert_eq!(header[12], frame.coding as u8);
        let slice = &input[i * frame_len * eb..(i * frame_len + elements) * eb];
        let checksum = if options.checksums { h32(slice) } else { 0 };
        assert_eq!(u32_at(header, 4), checksum, "frame {i} checksum field");
        offset += frame.bytes;
        walked += 1;
    }
    assert_eq!(walked, frame_count);
    assert_eq!(offset, len, "frames do not end at the end of the stream");

    // One-shot decode.
    let mut decoded = vec![0xCCu8; input.len()];
    assert_eq!(decode(&stream, &mut decoded).unwrap(), input.len());
    assert!(decoded == input, "round trip differs");

    // Frame by frame, last frame first.
    let mut by_frame = vec![0x33u8; input.len()];
    let index: Vec<_> = frames(&stream).unwrap().map(Result::unwrap).collect();
    for frame in index.iter().rev() {
        let start = frame.index as usize * frame_len * eb;
        let dst = &mut by_frame[start..start + frame.elements * eb];
        // Each frame from its own bytes, or (as decode_frame allows) from the rest of the stream.
        let own = if frame.index % 2 == 0 {
            &stream[frame.offset..frame.offset + frame.bytes]
        } else {
            &stream[frame.offset..]
        };
        let used = decode_frame(
            dtype,
            options.checksums,
            frame.index,
            frame.elements,
            own,
            dst,
        )
        .unwrap();
        assert_eq!(used, frame.bytes);
    }
    assert!(by_frame == decoded, "frame-by-frame decode differs");
    stream
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn dtype_strategy() -> impl Strategy<Value = Dtype> {
    prop::sample::select(Dtype::ALL.to_vec())
}

fn options_strategy() -> impl Strategy<Value = EncodeOptions> {
    (
        dtype_strategy(),
        prop::sample::select(CODINGS.to_vec()),
        10u8..=16,
        any::<bool>(),
    )
        .prop_map(|(dtype, coding, log2, checksums)| {
            EncodeOptions::new(dtype)
                .frame_len(1 << log2)
                .unwrap()
                .coding(coding)
                .checksums(checksums)
        })
}

/// Element counts: the awkward small ones, frame boundaries of the smallest frame, and anything
/// up to a little over three 1,024-element frames.
fn count_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![
            0usize, 1, 2, 15, 16, 17, 31, 32, 33, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 3073
        ]),
        0usize..=3200,
    ]
}

fn special_strategy(dtype: Dtype) -> impl Strategy<Value = u32> {
    (any::<u8>(), any::<u32>(), any::<bool>()).prop_map(move |(w, p, s)| special(dtype, w, p, s))
}

/// One element of a per-element mixture.
fn mixed_element(dtype: Dtype) -> impl Strategy<Value = u32> {
    let m = element_mask(dtype);
    prop_oneof![
        any::<u32>().prop_map(move |u| u & m),
        special_strategy(dtype),
        (-1.0f32..1.0).prop_map(move |v| from_f32(dtype, v * 0.05)),
        Just(0u32),
    ]
}

/// Element bit patterns of `dtype`, `count` of them.
fn values_strategy(dtype: Dtype, count: usize) -> BoxedStrategy<Vec<u32>> {
    let m = element_mask(dtype);
    prop_oneof![
        // Random bits.
        prop::collection::vec(any::<u32>().prop_map(move |u| u & m), count),
        // Special values only.
        prop::collection::vec(special_strategy(dtype), count),
        // All zero.
        Just(vec![0u32; count]),
        // Constant.
        any::<u32>().prop_map(move |u| vec![u & m; count]),
        // Realistic weights, sometimes with dead low bits.
        (any::<u64>(), 0u32..5, prop_oneof![Just(0u32), 0u32..24])
            .prop_map(move |(seed, scale, dead)| weights(dtype, count, seed, scale, dead)),
        // A narrow band of exponents with random weights.
        any::<u64>().prop_map(move |seed| band(dtype, count, seed)),
        // Per-element mixture.
        prop::collection::vec(mixed_element(dtype), count),
        // Segments of different kinds.
        any::<u64>().prop_map(move |seed| segments(dtype, count, seed)),
    ]
    .boxed()
}

fn case_strategy() -> impl Strategy<Value = (EncodeOptions, Vec<u32>)> {
    (options_strategy(), count_strategy()).prop_flat_map(|(options, count)| {
        values_strategy(options.dtype, count).prop_map(move |values| (options, values))
    })
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

proptest! {
    #![proptest_config(config(2048))]

    #[test]
    fn roundtrip_any_options_any_values((options, values) in case_strategy()) {
        check_roundtrip(&options, &to_bytes(options.dtype, &values));
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Every coding on the same input: each round-trips and auto is never larger.
    #[test]
    fn auto_is_never_larger_than_a_forced_coding(
        (options, values) in case_strategy()
    ) {
        let input = to_bytes(options.dtype, &values);
        let sizes: Vec<usize> = CODINGS
            .iter()
            .map(|&c| check_roundtrip(&options.coding(c), &input).len())
            .collect();
        prop_assert!(sizes[0] <= sizes[1] && sizes[0] <= sizes[2], "sizes {:?}", sizes);
    }

    /// Random bits never expand beyond the stored size (every frame at most stored).
    #[test]
    fn random_bits_do_not_expand(
        options in options_strategy(),
        seed in any::<u64>(),
        count in 0usize..5000,
    ) {
        let mut rng = Rng(seed);
        let values: Vec<u32> = (0..count)
            .map(|_| rng.next() as u32 & element_mask(options.dtype))
            .collect();
        let input = to_bytes(options.dtype, &values);
        let stream = check_roundtrip(&options, &input);
        let frame_len = 1usize << options.frame_log2;
        prop_assert!(stream.len() <= stored_size(options.dtype, count, frame_len));
    }

    /// Typed helpers round-trip the bits of any value, NaN payloads included.
    #[test]
    fn typed_helpers_roundtrip(
        options in options_strategy(),
        bits in prop::collection::vec(any::<u32>(), 0..2100),
    ) {
        let fp32 = EncodeOptions { dtype: Dtype::Fp32, ..options };
        let mut out = vec![0u8; max_encoded_size(&fp32, 4 * bits.len()).unwrap()];

        let v: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b as u16)).collect();
        let len = encode_bf16(options, &v, &mut out).unwrap();
        prop_assert_eq!(read_header(&out[..len]).unwrap().dtype, Dtype::Bf16);
        let mut back = vec![bf16::ZERO; v.len()];
        prop_assert_eq!(decode_bf16(&out[..len], &mut back).unwrap(), v.len());
        prop_assert!(back.iter().zip(&v).all(|(a, b)| a.to_bits() == b.to_bits()));

        let v: Vec<f16> = bits.iter().map(|&b| f16::from_bits(b as u16)).collect();
        let len = encode_f16(options, &v, &mut out).unwrap();
        prop_assert_eq!(read_header(&out[..len]).unwrap().dtype, Dtype::Fp16);
        let mut back = vec![f16::ZERO; v.len()];
        prop_assert_eq!(decode_f16(&out[..len], &mut back).unwrap(), v.len());
        prop_assert!(back.iter().zip(&v).all(|(a, b)| a.to_bits() == b.to_bits()));

        let v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        let len = encode_f32(options, &v, &mut out).unwrap();
        prop_assert_eq!(read_header(&out[..len]).unwrap().dtype, Dtype::Fp32);
        let mut back = vec![0f32; v.len()];
        prop_assert_eq!(decode_f32(&out[..len], &mut back).unwrap(), v.len());
        prop_assert!(back.iter().zip(&v).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases: large frames, many frames, dead bits
// ---------------------------------------------------------------------------------------------

#[test]
fn largest_frames_with_partial_last_frame() {
    for dtype in Dtype::ALL {
        let frame_len = 65_536;
        let cases = [
            weights(dtype, 2 * frame_len + 1000, 11, 2, 0),
            segments(dtype, frame_len + 17, 12),
            weights(dtype, frame_len, 13, 3, 0),
        ];
        for (c, values) in cases.iter().enumerate() {
            let input = to_bytes(dtype, values);
            for (k, coding) in CODINGS.into_iter().enumerate() {
                let options = EncodeOptions::new(dtype)
                    .frame_len(frame_len as u32)
                    .unwrap()
                    .coding(coding)
                    .checksums((c + k) % 2 == 0);
                let stream = check_roundtrip(&options, &input);
                if c != 1 {
                    // Weights compress under every coding.
                    assert!(stream.len() < input.len(), "{dtype:?} {coding:?} case {c}");
                }
            }
        }
    }
}

#[test]
fn every_frame_length_with_many_frames() {
    for dtype in Dtype::ALL {
        for log2 in 10..=16u8 {
            let frame_len = 1usize << log2;
            let count = (5 * 1024).max(frame_len + 1) + 3;
            let values = segments(dtype, count, u64::from(log2));
            for coding in CODINGS {
                let options = EncodeOptions::new(dtype)
                    .frame_len(frame_len as u32)
                    .unwrap()
                    .coding(coding);
                check_roundtrip(&options, &to_bytes(dtype, &values));
            }
        }
    }
}

#[test]
fn small_element_counts() {
    for dtype in Dtype::ALL {
        for count in [0usize, 1, 15, 16, 17] {
            for values in [
                weights(dtype, count, 3, 2, 0),
                vec![0; count],
                vec![special(dtype, 2, 0x5A5A5, true); count],
            ] {
                for coding in CODINGS {
                    for checksums in [false, true] {
                        let options = EncodeOptions::new(dtype)
                            .frame_len(1024)
                            .unwrap()
                            .coding(coding)
                            .checksums(checksums);
                        let stream = check_roundtrip(&options, &to_bytes(dtype, &values));
                        if count == 0 {
                            assert_eq!(stream.len(), 32, "an empty stream is its header");
                        }
                    }
                }
            }
        }
    }
}

/// Every special value of every dtype, with every coding, in one frame.
#[test]
fn all_special_values() {
    for dtype in Dtype::ALL {
        let mut values = Vec::new();
        for which in 0..10u8 {
            for negative in [false, true] {
                for payload in [0u32, 1, 2, 0x15, 0x2AA, 0x7F_FFFF, 0x40_0001] {
                    values.push(special(dtype, which, payload, negative));
                }
            }
        }
        for coding in CODINGS {
            check_roundtrip(
                &EncodeOptions::new(dtype).coding(coding),
                &to_bytes(dtype, &values),
            );
        }
    }
}

/// Exponents present in only a few elements of a frame (the escape levels) and exponents
/// everywhere in the alphabet (wide groups windows).
#[test]
fn rare_and_spread_exponents() {
    for dtype in Dtype::ALL {
        let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
        let mut rng = Rng(99);
        let mut values = weights(dtype, 16_384, 5, 2, 0);
        // Every exponent value once, at random positions.
        for x in 0..(1u32 << e) {
            let i = rng.below(values.len() as u64) as usize;
            values[i] = (x << m) | (rng.next() as u32 & mask(m));
        }
        let spread: Vec<u32> = (0..4096u32)
            .map(|i| ((i % (1 << e)) << m) | (i & mask(m)))
            .collect();
        for coding in CODINGS {
            let options = EncodeOptions::new(dtype).coding(coding);
            check_roundtrip(&options, &to_bytes(dtype, &values));
            check_roundtrip(&options, &to_bytes(dtype, &spread));
        }
    }
}

/// FORMAT.md 5: a frame whose elements all have their low `k` mantissa bits zero records `k`
/// (frame header byte 13) and the stream shrinks accordingly.
#[test]
fn dead_low_bits_are_recorded_and_not_stored() {
    let values_f32: Vec<f32> = weights(Dtype::Fp32, 40_000, 21, 2, 0)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    // fp32 weights that were bf16 (low 16 bits dead) and fp16 (low 13 bits dead).
    let from_bf16: Vec<u32> = values_f32
        .iter()
        .map(|&v| bf16::from_f32(v).to_f32().to_bits())
        .collect();
    let from_f16: Vec<u32> = values_f32
        .iter()
        .map(|&v| f16::from_f32(v).to_f32().to_bits())
        .collect();
    for (values, live_bits) in [(&from_bf16, 16usize), (&from_f16, 19)] {
        let input = to_bytes(Dtype::Fp32, values);
        for coding in CODINGS {
            let options = EncodeOptions::new(Dtype::Fp32).coding(coding);
            let stream = check_roundtrip(&options, &input);
            for frame in frames(&stream).unwrap() {
                let frame = frame.unwrap();
                assert_ne!(frame.coding, FrameCoding::Stored, "{coding:?}");
                let start = frame.index as usize * 16_384;
                let or = values[start..start + frame.elements]
                    .iter()
                    .fold(0, |a, &u| a | (u & mask(23)));
                let k = or.trailing_zeros().min(23) as u8;
                assert!(usize::from(k) >= 32 - live_bits, "k = {k}");
                assert_eq!(
                    stream[frame.offset + 13],
                    k,
                    "{coding:?} frame {}",
                    frame.index
                );
            }
            // At most `live_bits` of 32 bits per element are stored (sign, live mantissa and at
            // most 8 exponent bits), plus headers and padding.
            let bound = input.len() * (live_bits + 1) / 32;
            assert!(
                stream.len() < bound,
                "{coding:?}: {} bytes, dead bits not exploited (bound {bound})",
                stream.len()
            );
        }
    }
    // Stored frames record no dead bits.
    let zeros = to_bytes(Dtype::Bf16, &[0x8000; 3000]);
    let random: Vec<u32> = {
        let mut rng = Rng(1);
        (0..3000).map(|_| rng.next() as u32 & 0xFFFF).collect()
    };
    for values in [to_bytes(Dtype::Bf16, &random), zeros] {
        let stream = check_roundtrip(&EncodeOptions::new(Dtype::Bf16), &values);
        for frame in frames(&stream).unwrap() {
            let frame = frame.unwrap();
            if frame.coding == FrameCoding::Stored {
                assert_eq!(stream[frame.offset + 13], 0);
            }
        }
    }
}

/// Forcing a coding takes effect: on compressible weights every frame uses it.
#[test]
fn forced_coding_is_used_on_weights() {
    for dtype in Dtype::ALL {
        let input = to_bytes(dtype, &weights(dtype, 50_000, 31, 2, 0));
        for (coding, expected) in [
            (Coding::Groups, FrameCoding::Groups),
            (Coding::Ranked, FrameCoding::Ranked),
        ] {
            let stream = check_roundtrip(&EncodeOptions::new(dtype).coding(coding), &input);
            for frame in frames(&stream).unwrap() {
                assert_eq!(frame.unwrap().coding, expected, "{dtype:?} {coding:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// API errors
// ---------------------------------------------------------------------------------------------

#[test]
fn output_too_small_is_an_error() {
    for dtype in Dtype::ALL {
        let compressible = to_bytes(dtype, &weights(dtype, 5000, 41, 2, 0));
        let random = {
            let mut rng = Rng(42);
            let values: Vec<u32> = (0..5000).map(|_| rng.next() as u32).collect();
            to_bytes(dtype, &values)
        };
        for input in [compressible, random] {
            for coding in CODINGS {
                let options = EncodeOptions::new(dtype)
                    .frame_len(1024)
                    .unwrap()
                    .coding(coding);
                let stream = check_roundtrip(&options, &input);
                let len = stream.len();
                for short in [0, 1, 31, 32, 33, 64, len / 2, len - 33, len - 1] {
                    let mut out = vec![0u8; short];
                    match encode(&options, &input, &mut out) {
                        Err(Error::OutputTooSmall { needed }) => {
                            assert!(needed as usize > short, "needed {needed} <= given {short}");
                            let mut enough = vec![0u8; needed as usize];
                            assert_eq!(encode(&options, &input, &mut enough), Ok(len));
                            assert_eq!(&enough[..len], &stream[..]);
                        }
                        other => panic!("{dtype:?} {coding:?} out of {short}: {other:?}"),
                    }
                }
                // Exactly the stream length is enough.
                let mut exact = vec![0u8; len];
                assert_eq!(encode(&options, &input, &mut exact), Ok(len));

                // Decoding into a short output.
                for short in [0, 1, input.len() - 1] {
                    let mut out = vec![0u8; short];
                    assert_eq!(
                        decode(&stream, &mut out),
                        Err(Error::OutputTooSmall {
                            needed: input.len() as u64
                        })
                    );
                }
            }
        }
    }
    // Typed decode into a short slice.
    let v = vec![bf16::from_f32(0.5); 100];
    let mut out = vec![0u8; 4096];
    let len = encode_bf16(EncodeOptions::new(Dtype::Bf16), &v, &mut out).unwrap();
    let mut short = vec![bf16::ZERO; 99];
    assert!(matches!(
        decode_bf16(&out[..len], &mut short),
        Err(Error::OutputTooSmall { .. })
    ));
}

#[test]
fn typed_decode_checks_the_dtype() {
    let mut out = vec![0u8; 8192];
    let v = vec![bf16::from_f32(1.5); 1000];
    let len = encode_bf16(EncodeOptions::new(Dtype::Fp32), &v, &mut out).unwrap();
    let stream = &out[..len];
    let mut f32s = vec![0f32; 1000];
    assert_eq!(
        decode_f32(stream, &mut f32s),
        Err(Error::DtypeMismatch {
            stream: Dtype::Bf16,
            requested: Dtype::Fp32
        })
    );
    let mut f16s = vec![f16::ZERO; 1000];
    assert_eq!(
        decode_f16(stream, &mut f16s),
        Err(Error::DtypeMismatch {
            stream: Dtype::Bf16,
            requested: Dtype::Fp16
        })
    );
    let v = vec![f16::from_f32(1.5); 1000];
    let len = encode_f16(EncodeOptions::new(Dtype::Bf16), &v, &mut out).unwrap();
    let mut bf16s = vec![bf16::ZERO; 1000];
    assert_eq!(
        decode_bf16(&out[..len], &mut bf16s),
        Err(Error::DtypeMismatch {
            stream: Dtype::Fp16,
            requested: Dtype::Bf16
        })
    );
}

#[test]
fn frame_len_accepts_only_powers_of_two_in_range() {
    let options = EncodeOptions::new(Dtype::Bf16);
    for log2 in 10..=16u8 {
        let o = options.frame_len(1 << log2).unwrap();
        assert_eq!(o.frame_log2, log2);
        assert_eq!(o.dtype, Dtype::Bf16);
    }
    for bad in [
        0u32,
        1,
        2,
        512,
        1000,
        1023,
        1025,
        1536,
        3000,
        65_535,
        65_537,
        98_304,
        131_072,
        1 << 31,
        u32::MAX,
    ] {
        assert_eq!(
            options.frame_len(bad),
            Err(Error::InvalidFrameLength(bad)),
            "{bad}"
        );
    }
}

#[test]
fn partial_elements_are_rejected() {
    let mut out = vec![0u8; 1 << 16];
    for dtype in Dtype::ALL {
        let eb = dtype.element_bytes();
        let options = EncodeOptions::new(dtype);
        for len in [1usize, 3, 5, 2047, 4095, 4097] {
            if len % eb == 0 {
                continue;
            }
            let input = vec![0x3Cu8; len];
            let expected = Err(Error::PartialElement {
                len: len as u64,
                element_bytes: eb as u8,
            });
            assert_eq!(
                encode(&options, &input, &mut out),
                expected,
                "{dtype:?} {len}"
            );
            assert_eq!(max_encoded_size(&options, len), expected, "{dtype:?} {len}");
        }
    }
}

#[test]
fn default_options() {
    let options = EncodeOptions::new(Dtype::Fp16);
    assert_eq!(options.frame_log2, 14);
    assert_eq!(options.coding, Coding::Ranked);
    assert!(options.checksums);
}

/// Options built field by field bypass `frame_len`; encode must still refuse a bad frame length.
#[test]
fn out_of_range_frame_log2_is_an_error() {
    let input = [0u8; 64];
    let mut out = [0u8; 4096];
    for log2 in [0u8, 1, 9, 17, 31, 32, 33, 63, 64, 200, 255] {
        let options = EncodeOptions {
            frame_log2: log2,
            ..EncodeOptions::new(Dtype::Bf16)
        };
        assert!(
            matches!(
                encode(&options, &input, &mut out),
                Err(Error::InvalidFrameLength(_))
            ),
            "frame_log2 {log2}"
        );
        assert!(matches!(
            max_encoded_size(&options, input.len()),
            Err(Error::InvalidFrameLength(_))
        ));
    }
}

/// Sizes beyond what the format can describe are an error, not an overflow.
#[test]
fn huge_sizes_are_an_error() {
    for dtype in Dtype::ALL {
        let eb = dtype.element_bytes();
        for log2 in [10u8, 16] {
            let options = EncodeOptions::new(dtype).frame_len(1 << log2).unwrap();
            let huge = usize::MAX / eb * eb;
            assert_eq!(max_encoded_size(&options, huge), Err(Error::TooLarge));
            // The most elements with a u32 frame count.
            let most = (u64::from(u32::MAX) << log2) as usize * eb;
            let bound = max_encoded_size(&options, most).unwrap();
            assert!(bound > most);
            assert_eq!(max_encoded_size(&options, most + eb), Err(Error::TooLarge));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FORMAT.md 7: the encoder's choices, by a reference written from the text
// ---------------------------------------------------------------------------------------------

/// Bytes of a plane of `count` values of `width` bits (FORMAT.md 4.5).
fn plane_bytes(width: u32, count: usize) -> usize {
    [1u32, 2, 4, 8, 16]
        .into_iter()
        .filter(|p| width & p != 0)
        .map(|p| pad32(2 * (count * p as usize).div_ceil(16)))
        .sum()
}

/// The frame FORMAT.md 7 prescribes: (coding id, dead bits, header bytes 16..32, frame bytes).
fn reference_frame(dtype: Dtype, coding: Coding, elements: &[u32]) -> (u8, u8, [u8; 16], usize) {
    let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
    let n = elements.len();
    let alphabet = 1usize << e;
    let or = elements.iter().fold(0, |a, &u| a | (u & mask(m)));
    let k = if or == 0 {
        m
    } else {
        or.trailing_zeros().min(m)
    };
    let residual = plane_bytes(1 + m - k, n);
    let exps: Vec<usize> = elements
        .iter()
        .map(|&u| ((u >> m) & mask(e)) as usize)
        .collect();
    let mut hist = vec![0usize; alphabet];
    for &x in &exps {
        hist[x] += 1;
    }

    // 7.2 ranked.
    let mut order: Vec<usize> = (0..alphabet).collect();
    order.sort_by_key(|&x| (std::cmp::Reverse(hist[x]), x));
    let mut ranked: Option<(usize, [u8; 16])> = None;
    let mut tuples: Vec<Vec<u32>> = (1..=e).map(|a| vec![a]).collect();
    for a in 1..=e {
        for b in 1..=e {
            tuples.push(vec![a, b]);
        }
    }
    for a in 1..=e {
        for b in 1..=e {
            for c in 1..=e {
                tuples.push(vec![a, b, c]);
            }
        }
    }
    for t in tuples {
        let mut starts = vec![0usize];
        for &w in &t {
            starts.push(starts.last().unwrap() + (1usize << w) - 1);
        }
        let table = *starts.last().unwrap();
        if table > alphabet {
            continue;
        }
        let beyond =
            |s: usize| -> usize { order[s.min(alphabet)..].iter().map(|&x| hist[x]).sum() };
        let mut size = 32 + pad32(table) + residual;
        let mut count = n;
        let mut params = [0u8; 16];
        params[0] = t.len() as u8;
        for (j, &w) in t.iter().enumerate() {
            size += plane_bytes(w, count);
            params[1 + j] = w as u8;
            count = beyond(starts[j + 1]);
            params[4 + 4 * j..8 + 4 * j].copy_from_slice(&(count as u32).to_le_bytes());
        }
        size += plane_bytes(e, count);
        if ranked.is_none_or(|(best, _)| size < best) {
            ranked = Some((size, params));
        }
    }

    // 7.3 groups.
    let lo = exps.iter().copied().min().unwrap();
    let hi = exps.iter().copied().max().unwrap();
    let mode = (0..alphabet)
        .max_by_key(|&x| (hist[x], std::cmp::Reverse(x)))
        .unwrap();
    let groups = n.div_ceil(16);
    let mut best_groups: Option<(usize, [u8; 16])> = None;
    for b in lo.max(mode.saturating_sub(3))..=hi.min(mode + 8) {
        let (bi, lo_i, hi_i) = (b as i64, lo as i64, hi as i64);
        let width = (1..=e)
            .find(|&w| {
                // b - 2^(n-1) + 1 <= lo and hi <= b + 2^(n-1)
                w == e || (bi - (1i64 << (w - 1)) < lo_i && hi_i <= bi + (1i64 << (w - 1)))
            })
            .unwrap();
        for low in 0..=width {
            let flagged = if low == width {
                0
            } else {
                (0..groups)
                    .filter(|&t| {
                        (t..n).step_by(groups).any(|i| {
                            let x = exps[i] as i64;
                            x > bi || x <= bi - (1i64 << low)
                        })
                    })
                    .count()
            };
            let size = 32
                + residual
                + plane_bytes(1, groups)
                + plane_bytes(low, 16 * groups)
                + plane_bytes(width - low, 16 * flagged);
            if best_groups.is_none_or(|(best, _)| size < best) {
                let mut params = [0u8; 16];
                params[0] = b as u8;
                params[1] = width as u8;
                params[2] = low as u8;
                params[4..8].copy_from_slice(&(flagged as u32).to_le_bytes());
                best_groups = Some((size, params));
            }
        }
    }

    // 7.4, 7.5.
    let stored = 32 + pad32(n * dtype.element_bytes());
    let (ranked, groups) = (ranked.unwrap(), best_groups.unwrap());
    let choice = match coding {
        Coding::Auto if ranked.0 <= groups.0 && ranked.0 <= stored => (2, ranked),
        Coding::Auto if groups.0 <= stored => (1, groups),
        Coding::Ranked if ranked.0 <= stored => (2, ranked),
        Coding::Groups if groups.0 <= stored => (1, groups),
        _ => (0, (stored, [0; 16])),
    };
    let dead = if choice.0 == 0 { 0 } else { k as u8 };
    (choice.0, dead, choice.1 .1, choice.1 .0)
}

proptest! {
    #![proptest_config(config(256))]

    /// Every frame header carries exactly the coding, dead bits, parameters and size that
    /// FORMAT.md 7 prescribes (so that every conforming encoder writes the same bytes).
    #[test]
    fn encoder_choices_follow_the_format((options, values) in case_strategy()) {
        let input = to_bytes(options.dtype, &values);
        let stream = check_roundtrip(&options, &input);
        let frame_len = 1usize << options.frame_log2;
        for frame in frames(&stream).unwrap() {
            let frame = frame.unwrap();
            let start = frame.index as usize * frame_len;
            let want = reference_frame(
                options.dtype,
                options.coding,
                &values[start..start + frame.elements],
            );
            let header = &stream[frame.offset..frame.offset + 32];
            let mut params = [0u8; 16];
            params.copy_from_slice(&header[16..32]);
            prop_assert_eq!(
                (header[12], header[13], params, frame.bytes),
                want,
                "frame {} of {:?}",
                frame.index,
                options
            );
        }
    }
}

/// Small frames, many of them won by groups: there padding makes a wider plane smaller than a
/// narrower one (a 3-bit plane is two padded sub-planes, a 4-bit one is one), so a search that
/// stops at the first low width too costly to win would miss wider ones. Every frame header is
/// what FORMAT.md 7 prescribes.
#[test]
fn small_frames_choose_as_the_format_says() {
    let mut rng = Rng(29);
    for case in 0..2000u64 {
        let dtype = [Dtype::Bf16, Dtype::Fp16][case as usize % 2];
        let coding = [Coding::Auto, Coding::Groups][(case as usize / 2) % 2];
        let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
        let count = 1 + rng.below(160) as usize;
        let centre = rng.below(1 << e) as i64;
        let spread = 1 + rng.below(24) as i64;
        let values: Vec<u32> = (0..count)
            .map(|_| {
                let x =
                    (centre + rng.below(spread as u64) as i64 - spread / 2).clamp(0, (1 << e) - 1);
                (x as u32) << m | (rng.next() as u32 & mask(m))
            })
            .collect();
        let options = EncodeOptions::new(dtype).coding(coding);
        let stream = check_roundtrip(&options, &to_bytes(dtype, &values));
        let header = &stream[32..64];
        let mut params = [0u8; 16];
        params.copy_from_slice(&header[16..32]);
        let bytes = u32_at(header, 0) as usize;
        assert_eq!(
            (header[12], header[13], params, bytes),
            reference_frame(dtype, coding, &values),
            "case {case}: {count} {dtype:?} elements around {centre}, spread {spread}, {coding:?}"
        );
    }
}

/// A frame where the groups base must be `mode + 8`, the last candidate of FORMAT.md 7.3: every
/// group holds `c + 8`, most elements are `c` (the mode), and group 0 alone holds `c - 8`.
/// `b = c + 8, m = 4` stores 4 bits per element and flags group 0 only (`n = 6` to reach
/// `c - 8`); every smaller base flags every group (they all hold `c + 8`) or needs 5 bits.
#[test]
fn groups_base_search_reaches_mode_plus_8() {
    let c = 120u32;
    let groups = 64;
    let mut rng = Rng(7);
    let values: Vec<u32> = (0..16 * groups)
        .map(|i| {
            let (t, member) = (i % groups, i / groups);
            let x = match member {
                0 => c + 8,
                1..=8 => c + member as u32,
                15 if t == 0 => c - 8,
                _ => c,
            };
            (x << 7) | (rng.next() as u32 & 0x807F)
        })
        .collect();
    let input = to_bytes(Dtype::Bf16, &values);
    let options = EncodeOptions::new(Dtype::Bf16).coding(Coding::Groups);
    let stream = check_roundtrip(&options, &input);
    let header = &stream[32..64];
    assert_eq!(header[12], FrameCoding::Groups as u8);
    assert_eq!(&header[16..19], &[(c + 8) as u8, 6, 4], "base, width, low");
    assert_eq!(u32_at(header, 20), 1, "flagged groups");
    let want = reference_frame(Dtype::Bf16, Coding::Groups, &values);
    assert_eq!(&header[16..32], &want.2);
}

/// Outputs of `STREAMING_STORES_FROM` bytes or more are written with non-temporal stores where
/// the kernels have them (whole cache lines only): the bytes are the same whether the output
/// starts on a cache line or not, for every dtype, and the same as the per-frame cached path.
#[test]
fn large_outputs_decode_the_same_with_streaming_stores() {
    use enec::internals::frame::{decode_frame_with, Stores, STREAMING_STORES_FROM};
    for dtype in Dtype::ALL {
        let count = STREAMING_STORES_FROM / dtype.element_bytes() + 12_345;
        let input = to_bytes(dtype, &weights(dtype, count, 99, 2, 0));
        let options = EncodeOptions::new(dtype);
        let mut stream = vec![0u8; max_encoded_size(&options, input.len()).unwrap()];
        let len = encode(&options, &input, &mut stream).unwrap();
        let stream = &stream[..len];
        let mut buffer = vec![0u8; input.len() + 128];
        let aligned = buffer.as_ptr().align_offset(64);
        for at in [aligned, aligned + 16, aligned + 1] {
            buffer.fill(0xEE);
            let out = &mut buffer[at..at + input.len()];
            assert_eq!(decode(stream, out).unwrap(), input.len());
            assert!(*out == input[..], "{dtype:?} output at {at}");
        }
        // Frame by frame, both ways.
        let frame_out = (1 << options.frame_log2) * dtype.element_bytes();
        for stores in [Stores::Cached, Stores::Streaming] {
            let mut out = vec![0u8; input.len()];
            let mut offset = 32;
            for (index, dst) in out.chunks_mut(frame_out).enumerate() {
                let elements = dst.len() / dtype.element_bytes();
                let frame = &stream[offset..];
                offset +=
                    decode_frame_with(dtype, true, index as u32, elements, frame, dst, stores)
                        .unwrap();
            }
            assert!(out == input, "{dtype:?} {stores:?}");
        }
    }
}
