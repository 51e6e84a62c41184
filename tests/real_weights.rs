//! Real weights: the committed MiniLM slice (tests/data/README.md) as fp32, and as bf16 and fp16
//! derived with round-to-nearest-even. Every coding round-trips byte-identically and keeps the
//! compression ratio (input bytes / stream bytes) above a floor measured on this slice.

mod common;

use enec::{decode, encode, frames, max_encoded_size, read_header, Coding, Dtype, EncodeOptions};
use half::{bf16, f16};

const ELEMENTS: usize = 934_656;

fn slice_f32() -> Vec<f32> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minilm-slice.f32.bin"
    );
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(raw.len(), 4 * ELEMENTS, "{path} has the wrong size");
    raw.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn input(dtype: Dtype) -> Vec<u8> {
    let values = slice_f32();
    match dtype {
        Dtype::Fp32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        Dtype::Bf16 => values
            .iter()
            .flat_map(|&v| bf16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::Fp16 => values
            .iter()
            .flat_map(|&v| f16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::E4m3 | Dtype::E5m2 => values
            .iter()
            .map(|&v| common::fp8(dtype, f64::from(v) * 64.0))
            .collect(),
    }
}

/// Encodes with the default options and `coding`, checks the byte-identical round trip, and
/// returns the stream length.
fn stream_len(dtype: Dtype, coding: Coding, input: &[u8]) -> usize {
    let options = EncodeOptions::new(dtype).coding(coding);
    let mut stream = vec![0u8; max_encoded_size(&options, input.len()).unwrap()];
    let len = encode(&options, input, &mut stream).unwrap();
    let stream = &stream[..len];
    let info = read_header(stream).unwrap();
    assert_eq!(info.element_count, ELEMENTS as u64);
    assert_eq!(info.frame_count as usize, ELEMENTS.div_ceil(16_384));
    assert_eq!(frames(stream).unwrap().count(), info.frame_count as usize);
    let mut decoded = vec![0u8; input.len()];
    assert_eq!(decode(stream, &mut decoded).unwrap(), input.len());
    assert!(
        decoded == input,
        "{dtype:?} {coding:?}: round trip is not byte-identical"
    );
    len
}

/// Ratio floors for (auto, groups, ranked), about 0.3% below the value measured on this slice.
fn check(dtype: Dtype, floors: [f64; 3]) {
    let input = input(dtype);
    let lens: Vec<usize> = [Coding::Auto, Coding::Groups, Coding::Ranked]
        .into_iter()
        .map(|c| stream_len(dtype, c, &input))
        .collect();
    let ratio = |len: usize| input.len() as f64 / len as f64;
    let (auto, groups, ranked) = (lens[0], lens[1], lens[2]);
    for (name, len, floor) in [
        ("auto", auto, floors[0]),
        ("groups", groups, floors[1]),
        ("ranked", ranked, floors[2]),
    ] {
        assert!(
            ratio(len) >= floor,
            "{dtype:?} {name}: ratio {:.5} below the floor {floor}",
            ratio(len)
        );
    }
    assert!(
        ranked <= groups,
        "{dtype:?}: ranked ({}) compresses worse than groups ({})",
        ratio(ranked),
        ratio(groups)
    );
    assert!(
        auto <= groups && auto <= ranked,
        "{dtype:?}: auto {auto} bytes, groups {groups}, ranked {ranked}"
    );
}

#[test]
fn minilm_bf16() {
    // measured on 2026-12-02: auto 1.48747, groups 1.37979, ranked 1.48747
    check(Dtype::Bf16, [1.483, 1.375, 1.483]);
}

#[test]
fn minilm_fp16() {
    // measured on 2026-12-02: auto 1.16431, groups 1.10392, ranked 1.16431
    check(Dtype::Fp16, [1.160, 1.100, 1.160]);
}

#[test]
fn minilm_fp32() {
    // measured on 2026-12-02: auto 1.31958, groups 1.27524, ranked 1.31958
    check(Dtype::Fp32, [1.315, 1.271, 1.315]);
}
