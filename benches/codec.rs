//! Criterion benchmarks: encode and decode per dtype and coding, with a memcpy of the same bytes
//! in the same group (compare within a group: absolute times vary between runs on a shared
//! machine). Input: the real MiniLM weights bundled in tests/data, as bf16, fp16 and fp32 (FP8:
//! `enec bench` on the corpora of benches/fetch-fp8.sh).
//!
//! cargo bench --bench codec            (ENEC_PORTABLE=1 for the baseline compilation)

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use enec::{decode, encode, max_encoded_size, Coding, Dtype, EncodeOptions};

const SLICE: &[u8] = include_bytes!("../tests/data/minilm-slice.f32.bin");

fn input(dtype: Dtype) -> Vec<u8> {
    let values = SLICE
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    match dtype {
        Dtype::Bf16 => values
            .flat_map(|x| half::bf16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::Fp16 => values
            .flat_map(|x| half::f16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::Fp32 => SLICE.to_vec(),
        Dtype::E4m3 | Dtype::E5m2 => unreachable!("no FP8 input here"),
    }
}

fn codec(c: &mut Criterion) {
    for dtype in [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32] {
        let input = input(dtype);
        let mut group = c.benchmark_group(dtype.name());
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.sample_size(20);
        let mut copy = vec![0u8; input.len()];
        group.bench_function("memcpy", |b| {
            b.iter(|| copy.copy_from_slice(black_box(&input)))
        });
        for coding in [Coding::Auto, Coding::Groups, Coding::Ranked] {
            let name = format!("{coding:?}").to_lowercase();
            let options = EncodeOptions::new(dtype).coding(coding);
            let mut stream = vec![0u8; max_encoded_size(&options, input.len()).unwrap()];
            let len = encode(&options, &input, &mut stream).unwrap();
            group.bench_function(format!("encode {name}"), |b| {
                b.iter(|| encode(&options, black_box(&input), &mut stream).unwrap())
            });
            let stream = stream[..len].to_vec();
            decode(&stream, &mut copy).unwrap();
            assert!(copy == input, "{name} does not round-trip");
            group.bench_function(format!("decode {name}"), |b| {
                b.iter(|| decode(black_box(&stream), &mut copy).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
