//! The `embedded-io` adapters: compress real bf16 weights through an [`EncodeWriter`] into a
//! fixed RAM region, then read them back through a [`DecodeReader`] (`Read`, into a small
//! buffer) and again through its `BufRead` side (decoded bytes used in place, no copy). Only
//! embedded-io types are involved (`&[u8]` as the source, `&mut [u8]` as the sink), as on a
//! microcontroller.
//!
//! cargo run --release --example embedded_io

use embedded_io::{BufRead, Read, Write};
use enec::io::{DecodeReader, EncodeWriter, IoError};
use enec::streaming::capacity_for;
use enec::{Decoder, Dtype, EncodeOptions, Encoder};
use half::bf16;

/// 934,656 fp32 weights of all-MiniLM-L6-v2 (Apache-2.0); see tests/data/README.md.
const SLICE: &[u8] = include_bytes!("../tests/data/minilm-slice.f32.bin");

/// 1,024-element frames keep the codec small: 4,128 bytes of buffer.
const FRAME_LEN: usize = 1024;
const CAP: usize = capacity_for(Dtype::Bf16, FRAME_LEN);

fn main() -> Result<(), IoError<embedded_io::SliceWriteError>> {
    let weights: Vec<bf16> = SLICE
        .chunks_exact(4)
        .map(|b| bf16::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    let original: &[u8] = bytemuck::cast_slice(&weights);

    // 1. Write: the weights arrive in 512-byte pieces (a UART, a radio, a sensor) and leave as a
    //    stream in a fixed RAM region.
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(FRAME_LEN as u32)?;
    let mut region = vec![0u8; enec::max_encoded_size(&options, original.len())?];
    let mut sink: &mut [u8] = &mut region;
    let encoder = Encoder::<CAP>::new(options, weights.len() as u64)?;
    let mut writer = EncodeWriter::new(encoder, &mut sink);
    for piece in original.chunks(512) {
        writer.write_all(piece)?;
    }
    writer.flush()?;
    writer.finish()?;
    let left = sink.len();
    let stream_len = region.len() - left;
    let stream = &region[..stream_len];

    // 2. Read: decode into a 1 KiB buffer at a time.
    let mut reader = DecodeReader::new(Decoder::<CAP>::new(), stream);
    let mut buf = [0u8; 1024];
    let (mut at, mut same) = (0, true);
    loop {
        let n = reader.read(&mut buf).map_err(err)?;
        if n == 0 {
            break;
        }
        same &= buf[..n] == original[at..at + n];
        at += n;
    }
    reader.finish()?;
    same &= at == original.len();

    // 3. BufRead: use the decoded bytes where the decoder put them (sum of squares).
    let mut reader = DecodeReader::new(Decoder::<CAP>::new(), stream);
    let (mut sum_sq, mut count) = (0f64, 0usize);
    loop {
        let chunk = reader.fill_buf().map_err(err)?;
        if chunk.is_empty() {
            break;
        }
        let whole = chunk.len() & !1;
        for pair in chunk[..whole].chunks_exact(2) {
            let v = bf16::from_le_bytes([pair[0], pair[1]]).to_f64();
            sum_sq += v * v;
            count += 1;
        }
        reader.consume(whole);
    }
    reader.finish()?;
    let want: f64 = weights.iter().map(|w| w.to_f64() * w.to_f64()).sum();
    same &= count == weights.len() && sum_sq == want;

    println!(
        "enec over embedded-io: {} MiniLM weights as bf16",
        weights.len()
    );
    println!(
        "  EncodeWriter -> &mut [u8]: {} bytes -> {} bytes (ratio {:.4})",
        original.len(),
        stream_len,
        original.len() as f64 / stream_len as f64
    );
    println!(
        "  DecodeReader <- &[u8]: {} bytes read in 1 KiB pieces; BufRead pass: {count} values, rms {:.6}",
        at,
        (sum_sq / count as f64).sqrt()
    );
    println!(
        "  codec memory: {} bytes each (buffer {CAP} bytes)",
        core::mem::size_of::<Decoder<CAP>>()
    );
    println!(
        "  verified: {}",
        if same { "byte-identical" } else { "MISMATCH" }
    );
    if !same {
        std::process::exit(1);
    }
    Ok(())
}

/// The reader's source (`&[u8]`) cannot fail; put its error into the example's error type.
fn err(e: IoError<core::convert::Infallible>) -> IoError<embedded_io::SliceWriteError> {
    match e {
        IoError::Codec(e) => IoError::Codec(e),
        IoError::WriteZero => IoError::WriteZero,
        IoError::Io(never) => match never {},
    }
}
