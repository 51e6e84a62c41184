//! `enec bench FILE --dtype D`: memcpy, encode and decode throughput of a raw array, measured in
//! one process (compare the ratios to memcpy; absolute numbers vary between runs on a shared
//! machine), on one thread and on several (frames are independent).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use enec::wrapped::FrameEncoder;
use enec::{decode, encode, max_encoded_size, EncodeOptions};
use rayon::prelude::*;

use crate::error::{Context, Result};

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

/// Encodes on the current rayon pool, one contiguous range of frames per thread, each range
/// into its own piece: the stream is the header followed by the pieces in order, as the CLI
/// writes them to its file (pieces are not copied into one buffer: that copy is the file
/// system's work, not the codec's). Returns each piece's length.
fn encode_parallel(
    options: &EncodeOptions,
    input: &[u8],
    pieces: &mut Vec<Vec<u8>>,
) -> enec::Result<Vec<usize>> {
    let encoder = FrameEncoder::new(options, input)?;
    let frames = encoder.frame_count();
    let threads = rayon::current_num_threads().clamp(1, frames.max(1) as usize) as u32;
    let per_range = frames.div_ceil(threads).max(1);
    let ranges: Vec<_> = (0..frames)
        .step_by(per_range as usize)
        .map(|first| first..(first + per_range).min(frames))
        .collect();
    pieces.resize_with(ranges.len(), Vec::new);
    for piece in pieces.iter_mut() {
        piece.resize(per_range as usize * encoder.max_frame_bytes(), 0);
    }
    ranges
        .par_iter()
        .zip(pieces.par_iter_mut())
        .map(|(range, piece)| {
            let mut at = 0;
            // Each frame fetches the next one's input while it is written, as `encode` does.
            for index in range.clone() {
                at += encoder.encode_frame(index, &mut piece[at..])?;
            }
            Ok(at)
        })
        .collect()
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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| e.to_string())?;
    let len = encode(&options, &input, &mut stream).context(|| "encoding")?;
    let stream = &stream[..len];
    let mut encoded = vec![0u8; max_encoded_size(&options, input.len()).context(|| "sizing")?];
    let mut encoded_len = 0;
    let mut pieces = Vec::new();
    let mut piece_lens = Vec::new();
    // memcpy, encode and decode on one thread and on the pool take turns, round after round
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
            pool.install(|| {
                timed(&mut || {
                    piece_lens = encode_parallel(&options, black_box(&input), &mut pieces)
                        .context(|| "parallel encoding")?;
                    Ok(())
                })
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
    let header_len = stream.len() - piece_lens.iter().sum::<usize>();
    let mut at = header_len;
    for (piece, &n) in pieces.iter().zip(&piece_lens) {
        if stream.get(at..at + n) != Some(&piece[..n]) {
            return Err("the parallel encoder wrote different bytes".into());
        }
        at += n;
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
