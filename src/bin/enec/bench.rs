//! `enec bench FILE --dtype D`: memcpy, encode and decode throughput of a raw array, measured in
//! one process (compare the ratios to memcpy; absolute numbers vary between runs on a shared
//! machine), on one thread and on several (frames are independent).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use enec::{decode, encode, max_encoded_size, EncodeOptions};

use crate::error::{CliError, Context, Result};

/// What one run measured; GB/s are 1e9 bytes of uncompressed data per second.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub file: String,
    pub dtype: &'static str,
    pub coding: String,
    pub bytes: usize,
    pub ratio: f64,
    pub memcpy_gbps: f64,
    pub encode_gbps: f64,
    pub decode_gbps: f64,
    pub threads: usize,
    pub encode_gbps_threads: f64,
    pub decode_gbps_threads: f64,
    pub avx2: bool,
    /// The kernels in use (`enec::kernels_in_use`).
    pub kernels: &'static str,
    pub repeats: usize,
}

/// Runs the benchmark.
pub fn bench(
    path: &Path,
    options: EncodeOptions,
    threads: usize,
    repeats: usize,
) -> Result<Report> {
    let input = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let eb = options.dtype.element_bytes();
    if input.is_empty() || input.len() % eb != 0 {
        return Err(format!(
            "{}: {} bytes is not a non-empty array of {eb}-byte elements",
            path.display(),
            input.len()
        )
        .into());
    }
    // The output (of memcpy and of the decoders) starts on a cache line, as page-aligned and
    // mapped buffers do: there the decoder writes large outputs with non-temporal stores.
    let mut copy_buffer = vec![0u8; input.len() + 64];
    let aligned = copy_buffer.as_ptr().align_offset(64);
    let copy = &mut copy_buffer[aligned..aligned + input.len()];
    let mut stream = vec![0u8; max_encoded_size(&options, input.len()).context(|| "sizing")?];
    let len = encode(&options, &input, &mut stream).context(|| "encoding")?;
    let stream = &stream[..len];
    let mut encoded = vec![0u8; max_encoded_size(&options, input.len()).context(|| "sizing")?];
    let mut encoded_len = 0;
    // memcpy, encode and decode on one thread and on `threads` take turns, round after round
    // (best of each): on a shared machine whose speed drifts, all five see the same conditions.
    let mut best = [f64::INFINITY; 5];
    for round in 0..=repeats {
        let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
            let t = Instant::now();
            f()?;
            Ok(t.elapsed().as_secs_f64())
        };
        let times = [
            timed(&mut || {
                copy.copy_from_slice(black_box(&input));
                Ok(())
            })?,
            timed(&mut || {
                encoded_len =
                    encode(&options, black_box(&input), &mut encoded).context(|| "encoding")?;
                Ok(())
            })?,
            timed(&mut || {
                decode(black_box(stream), copy).context(|| "decoding")?;
                Ok(())
            })?,
            // The encoder of `enec compress`, its output handed on in order (as to the file,
            // whose writing is the file system's work, not the codec's).
            timed(&mut || {
                enec::parallel::encode_with(&options, black_box(&input), threads, |bytes, _| {
                    black_box(bytes);
                    Ok::<(), enec::Error>(())
                })
                .map(drop)
                .context(|| "parallel encoding")
            })?,
            timed(&mut || {
                enec::parallel::decode_into(black_box(stream), copy, threads)
                    .map(drop)
                    .context(|| "parallel decoding")
            })?,
        ];
        // Round 0 warms up.
        if round > 0 {
            for (b, t) in best.iter_mut().zip(times) {
                *b = b.min(t);
            }
        }
    }
    let [memcpy, encode_1, decode_1, encode_n, decode_n] = best;
    if &encoded[..encoded_len] != stream {
        return Err("the encoder wrote different bytes on another run".into());
    }
    let mut at = 0;
    enec::parallel::encode_with(&options, &input, threads, |bytes, _| {
        let same = stream.get(at..at + bytes.len()) == Some(bytes);
        at += bytes.len();
        if same {
            Ok(())
        } else {
            Err("the parallel encoder wrote different bytes".into())
        }
    })
    .map_err(|e: CliError| e)?;
    if at != stream.len() {
        return Err("the parallel encoder wrote a stream of another length".into());
    }
    copy.fill(0);
    decode(stream, copy).context(|| "decoding")?;
    if copy != input {
        return Err("decoded bytes differ from the input".into());
    }
    copy.fill(0);
    enec::parallel::decode_into(stream, copy, threads).context(|| "parallel decoding")?;
    if copy != input {
        return Err("parallel decoding gave different bytes".into());
    }
    let gb = input.len() as f64 / 1e9;
    Ok(Report {
        file: path.display().to_string(),
        dtype: options.dtype.name(),
        coding: format!("{:?}", options.coding).to_lowercase(),
        bytes: input.len(),
        ratio: input.len() as f64 / len as f64,
        memcpy_gbps: gb / memcpy,
        encode_gbps: gb / encode_1,
        decode_gbps: gb / decode_1,
        threads,
        encode_gbps_threads: gb / encode_n,
        decode_gbps_threads: gb / decode_n,
        avx2: enec::kernels_in_use().starts_with("AVX2"),
        kernels: enec::kernels_in_use(),
        repeats,
    })
}

impl Report {
    /// The human-readable summary.
    pub fn table(&self) -> String {
        format!(
            "{} ({} bytes, {}, coding {}; kernels: {})\n\
             ratio           {:.4}\n\
             memcpy          {:7.3} GB/s\n\
             encode 1 thread {:7.3} GB/s  {:.3}x memcpy\n\
             decode 1 thread {:7.3} GB/s  {:.3}x memcpy\n\
             encode {:2} thr.  {:7.3} GB/s  {:.2}x one thread\n\
             decode {:2} thr.  {:7.3} GB/s  {:.2}x one thread",
            self.file,
            self.bytes,
            self.dtype,
            self.coding,
            self.kernels,
            self.ratio,
            self.memcpy_gbps,
            self.encode_gbps,
            self.encode_gbps / self.memcpy_gbps,
            self.decode_gbps,
            self.decode_gbps / self.memcpy_gbps,
            self.threads,
            self.encode_gbps_threads,
            self.encode_gbps_threads / self.encode_gbps,
            self.threads,
            self.decode_gbps_threads,
            self.decode_gbps_threads / self.decode_gbps,
        )
    }
}
