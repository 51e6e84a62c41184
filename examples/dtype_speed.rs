//! fp16 and fp32 against bf16 in GB/s of output,
//! measured in one process: the same weights in each dtype are encoded and decoded one after
//! the other, round after round, so that a shared machine's drift hits all of them alike. Prints
//! each dtype's best GB/s of uncompressed bytes and the median over rounds of its ratio to
//! bf16's time in the same round.
//!
//! usage: cargo run --release --example dtype_speed -- DIR [ROUNDS]
//! (DIR holds minilm.bf16.bin, minilm.fp16.bin and minilm.fp32.bin from
//! benches/fetch-minilm.sh; ROUNDS defaults to 9)

use std::hint::black_box;
use std::time::Instant;

use enec::{decode, encode, max_encoded_size, Dtype, EncodeOptions};

struct Case {
    name: &'static str,
    options: EncodeOptions,
    input: Vec<u8>,
    stream: Vec<u8>,
    scratch: Vec<u8>,
    /// The decoded bytes at `output[at..]`: 64-byte aligned, as `enec bench`'s, so that every
    /// dtype's decoder writes with the same stores (non-temporal where the kernels have them
    /// and the output starts on a cache line), whatever the allocator returned.
    output: Vec<u8>,
    at: usize,
}

fn seconds(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        return Err("usage: dtype_speed DIR [ROUNDS]".into());
    };
    let rounds: usize = args.get(1).map_or(Ok(9), |r| r.parse())?;
    let mut cases = Vec::new();
    for (name, dtype) in [
        ("bf16", Dtype::Bf16),
        ("fp16", Dtype::Fp16),
        ("fp32", Dtype::Fp32),
    ] {
        let path = format!("{dir}/minilm.{name}.bin");
        let input = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        let options = EncodeOptions::new(dtype);
        let mut stream = vec![0; max_encoded_size(&options, input.len())?];
        let len = encode(&options, &input, &mut stream)?;
        stream.truncate(len);
        let (scratch, output) = (
            vec![0; max_encoded_size(&options, input.len())?],
            vec![0; input.len() + 64],
        );
        let at = output.as_ptr().align_offset(64);
        cases.push(Case {
            name,
            options,
            input,
            stream,
            scratch,
            output,
            at,
        });
    }
    // times[case][direction][round]
    let mut times = vec![[Vec::new(), Vec::new()]; cases.len()];
    for round in 0..=rounds {
        for (case, t) in cases.iter_mut().zip(&mut times) {
            let e = seconds(|| {
                encode(&case.options, black_box(&case.input), &mut case.scratch).unwrap();
            });
            let d = seconds(|| {
                let out = &mut case.output[case.at..case.at + case.input.len()];
                decode(black_box(&case.stream), out).unwrap();
            });
            // Round 0 warms up.
            if round > 0 {
                t[0].push(e);
                t[1].push(d);
            }
        }
    }
    for case in &cases {
        let out = &case.output[case.at..case.at + case.input.len()];
        assert!(out == case.input, "{} did not round-trip", case.name);
    }
    println!("{rounds} rounds; GB/s of uncompressed bytes (best), and the median per-round ratio to bf16");
    for (case, t) in cases.iter().zip(&times) {
        let gb = case.input.len() as f64 / 1e9;
        let row: Vec<String> = (0..2)
            .map(|dir| {
                let best = t[dir].iter().copied().fold(f64::INFINITY, f64::min);
                // Throughput ratio: bf16's seconds per byte over this dtype's.
                let ratio = median(
                    t[dir]
                        .iter()
                        .zip(&times[0][dir])
                        .map(|(s, b)| {
                            (b / cases[0].input.len() as f64) / (s / case.input.len() as f64)
                        })
                        .collect(),
                );
                format!("{:6.2} GB/s ({ratio:.2} of bf16)", gb / best)
            })
            .collect();
        println!("{}  encode {}  decode {}", case.name, row[0], row[1]);
    }
    Ok(())
}
