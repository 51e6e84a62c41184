//! Peak stack use of the one-shot encoder and decoder, per coding, measured by stack painting: a function
//! fills a large stack array with a pattern and returns; the codec runs at the same depth; the
//! bytes of that region it overwrote are its peak use. The numbers quoted in the README come
//! from this (x86_64; run with `ENEC_PORTABLE=1` for the portable kernels, which are what a
//! no_std build runs).
//!
//! usage: cargo run --release --example stack_usage -- [FILE DTYPE]
//! (default: 1 MiB of the MiniLM bf16 corpus, /tmp/enec-corpus/minilm.bf16.bin)
//!
//! Reading the painted region after the calls reads memory no live Rust object owns: fine for a
//! measurement on a real machine, not something to put in a test (Miri would rightly object).

use enec::{decode, encode, max_encoded_size, Coding, Dtype, EncodeOptions};

/// Bytes painted: far more than any codec call needs.
const PAINTED: usize = 256 * 1024;
const PATTERN: u8 = 0xA5;

/// Paints `PAINTED` bytes of stack just below the caller's frame; returns their lowest address.
#[inline(never)]
fn paint() -> usize {
    let mut region = [0u8; PAINTED];
    for byte in region.iter_mut() {
        // SAFETY: a write to a live local; volatile so the painting is not optimised away.
        unsafe { std::ptr::write_volatile(byte, PATTERN) }
    }
    std::hint::black_box(&region).as_ptr() as usize
}

/// Bytes of the painted region overwritten since (the deepest write sets the peak).
fn overwritten(lowest: usize) -> usize {
    let start = lowest as *const u8;
    let untouched = (0..PAINTED)
        // SAFETY: the region lies inside this thread's stack, mapped and no deeper than the
        // frames since; reading it observes whatever they left there.
        .take_while(|&i| unsafe { std::ptr::read_volatile(start.add(i)) } == PATTERN)
        .count();
    PAINTED - untouched
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, dtype) = match args.as_slice() {
        [path, dtype] => (path.clone(), dtype.as_str()),
        _ => ("/tmp/enec-corpus/minilm.bf16.bin".to_string(), "bf16"),
    };
    let dtype = match dtype {
        "bf16" => Dtype::Bf16,
        "fp16" => Dtype::Fp16,
        _ => Dtype::Fp32,
    };
    let mut input = std::fs::read(&path)?;
    input.truncate(1 << 20);
    // Each coding (their decoders take different paths), the default first.
    for coding in [Coding::Ranked, Coding::Groups, Coding::Auto] {
        let input = input.clone();
        let options = EncodeOptions::new(dtype).coding(coding);
        let mut stream = vec![0u8; max_encoded_size(&options, input.len())?];
        let mut out = vec![0u8; input.len()];
        // A fresh thread with a large stack, so the painted region is surely mapped and unused.
        let (encode_bytes, decode_bytes) = std::thread::Builder::new()
            .stack_size(4 << 20)
            .spawn(move || -> Result<(usize, usize), enec::Error> {
                let lowest = paint();
                let len = encode(&options, &input, &mut stream)?;
                let encode_bytes = overwritten(lowest);
                let lowest = paint();
                decode(&stream[..len], &mut out)?;
                assert!(out == input, "round trip");
                Ok((encode_bytes, overwritten(lowest)))
            })?
            .join()
            .map_err(|_| "measuring thread panicked")??;
        println!(
            "{} {:?} ({} kernels): encode {:.1} KiB, decode {:.1} KiB of stack",
            dtype.name(),
            coding,
            enec::kernels_in_use(),
            encode_bytes as f64 / 1024.0,
            decode_bytes as f64 / 1024.0
        );
    }
    Ok(())
}
