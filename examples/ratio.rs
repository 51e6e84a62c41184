//! Compresses a raw little-endian array and reports ratio, codings and a verified round trip.
//!
//! usage: cargo run --release --example ratio -- FILE bf16|fp16|fp32|e4m3|e5m2 [auto|groups|ranked] [FRAME_LEN]

use std::time::Instant;

use enec::{decode, encode, frames, max_encoded_size, Coding, Dtype, EncodeOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, dtype, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: ratio FILE bf16|fp16|fp32|e4m3|e5m2 [auto|groups|ranked] [FRAME_LEN]".into(),
        );
    };
    let Some(dtype) = Dtype::ALL.into_iter().find(|d| d.name() == dtype) else {
        return Err(format!("unknown dtype {dtype}").into());
    };
    let coding = match rest.first().map(String::as_str) {
        None | Some("auto") => Coding::Auto,
        Some("groups") => Coding::Groups,
        Some("ranked") => Coding::Ranked,
        Some(other) => return Err(format!("unknown coding {other}").into()),
    };
    let mut options = EncodeOptions::new(dtype).coding(coding);
    if let Some(len) = rest.get(1) {
        options = options.frame_len(len.parse()?)?;
    }
    let input = std::fs::read(path)?;
    let mut stream = vec![0u8; max_encoded_size(&options, input.len())?];
    let t = Instant::now();
    let len = encode(&options, &input, &mut stream)?;
    let encode_s = t.elapsed().as_secs_f64();
    stream.truncate(len);
    let mut counts = [0usize; 3];
    for frame in frames(&stream)? {
        counts[frame?.coding as usize] += 1;
    }
    let mut out = vec![0u8; input.len()];
    let t = Instant::now();
    decode(&stream, &mut out)?;
    let decode_s = t.elapsed().as_secs_f64();
    let mb = input.len() as f64 / 1e6;
    println!(
        "{path} {} {:?}: {} -> {} bytes, ratio {:.4}; frames stored/groups/ranked {:?}; encode {:.0} MB/s, decode {:.0} MB/s; round trip {}",
        dtype.name(),
        coding,
        input.len(),
        len,
        input.len() as f64 / len as f64,
        counts,
        mb / encode_s,
        mb / decode_s,
        if out == input { "identical" } else { "DIFFERENT" }
    );
    Ok(())
}
