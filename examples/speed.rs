//! Single-thread throughput of encode and decode next to a memcpy of the same bytes, in one
//! process (compare the ratios, not absolute numbers across runs).
//!
//! usage: cargo run --release --example speed -- FILE bf16|fp16|fp32|e4m3|e5m2 [auto|groups|ranked] [REPEATS]

use std::hint::black_box;
use std::time::Instant;

use enec::{decode, encode, max_encoded_size, Coding, Dtype, EncodeOptions};

fn best_of(repeats: usize, mut f: impl FnMut()) -> f64 {
    (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, dtype, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: speed FILE bf16|fp16|fp32|e4m3|e5m2 [auto|groups|ranked] [REPEATS]".into(),
        );
    };
    let Some(dtype) = Dtype::ALL.into_iter().find(|d| d.name() == dtype) else {
        return Err(format!("unknown dtype {dtype}").into());
    };
    let coding = match rest.first().map(String::as_str) {
        Some("groups") => Coding::Groups,
        Some("ranked") => Coding::Ranked,
        _ => Coding::Auto,
    };
    let repeats: usize = rest.get(1).map(|r| r.parse()).transpose()?.unwrap_or(5);
    let input = std::fs::read(path)?;
    let options = EncodeOptions::new(dtype).coding(coding);
    let mut stream = vec![0u8; max_encoded_size(&options, input.len())?];
    let mut out = vec![0u8; input.len()];
    let mut len = 0;
    let t_memcpy = best_of(repeats, || out.copy_from_slice(black_box(&input)));
    let t_encode = best_of(repeats, || {
        len = encode(&options, black_box(&input), &mut stream).unwrap()
    });
    let t_decode = best_of(repeats, || {
        decode(black_box(&stream[..len]), &mut out).unwrap();
    });
    assert!(out == input);
    let gb = input.len() as f64 / 1e9;
    println!(
        "{} {:?} ratio {:.4}: memcpy {:.2} GB/s, encode {:.3} GB/s ({:.3}x memcpy), decode {:.3} GB/s ({:.3}x memcpy)",
        dtype.name(),
        coding,
        input.len() as f64 / len as f64,
        gb / t_memcpy,
        gb / t_encode,
        t_memcpy / t_encode,
        gb / t_decode,
        t_memcpy / t_decode
    );
    Ok(())
}
