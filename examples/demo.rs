//! The whole cycle on the real MiniLM weights bundled in the repository (embedded in the binary):
//! compress, decompress, verify, for every dtype and coding. Writes nothing.
//!
//! cargo run --release --example demo

use std::time::Instant;

use enec::{decode, encode, max_encoded_size, Coding, Dtype, EncodeOptions};
use half::{bf16, f16};

/// 934,656 fp32 weights of all-MiniLM-L6-v2 (Apache-2.0); see tests/data/README.md.
const SLICE: &[u8] = include_bytes!("../tests/data/minilm-slice.f32.bin");

fn main() -> Result<(), enec::Error> {
    let weights: Vec<f32> = SLICE
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let as_bf16: Vec<bf16> = weights.iter().map(|&x| bf16::from_f32(x)).collect();
    let as_f16: Vec<f16> = weights.iter().map(|&x| f16::from_f32(x)).collect();
    let inputs: [(Dtype, &[u8]); 3] = [
        (Dtype::Bf16, bytemuck::cast_slice(&as_bf16)),
        (Dtype::Fp16, bytemuck::cast_slice(&as_f16)),
        (Dtype::Fp32, SLICE),
    ];
    println!(
        "enec demo: {} real weights of all-MiniLM-L6-v2, one thread\n",
        weights.len()
    );
    println!(
        "{:<5} {:<7} {:>10} {:>10} {:>7} {:>12} {:>12}  verified",
        "dtype", "coding", "bytes", "encoded", "ratio", "encode MB/s", "decode MB/s"
    );
    let mut all_ok = true;
    for (dtype, input) in inputs {
        for coding in [Coding::Auto, Coding::Groups, Coding::Ranked] {
            let options = EncodeOptions::new(dtype).coding(coding);
            let mut stream = vec![0u8; max_encoded_size(&options, input.len())?];
            let t = Instant::now();
            let len = encode(&options, input, &mut stream)?;
            let encode_s = t.elapsed().as_secs_f64();
            let mut restored = vec![0u8; input.len()];
            let t = Instant::now();
            decode(&stream[..len], &mut restored)?;
            let decode_s = t.elapsed().as_secs_f64();
            let ok = restored == input;
            all_ok &= ok;
            let mb = input.len() as f64 / 1e6;
            println!(
                "{:<5} {:<7} {:>10} {:>10} {:>7.4} {:>12.0} {:>12.0}  {}",
                dtype.name(),
                format!("{coding:?}").to_lowercase(),
                input.len(),
                len,
                input.len() as f64 / len as f64,
                mb / encode_s,
                mb / decode_s,
                if ok { "byte-identical" } else { "MISMATCH" }
            );
        }
    }
    if !all_ok {
        std::process::exit(1);
    }
    Ok(())
}
