//! `enec bench FILE --dtype D`: memcpy, encode and decode throughput of a raw array, measured in
//! one process (compare the ratios to memcpy; absolute numbers vary between runs on a shared
//! machine), on one thread and on several (frames are independent).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use enec::frame::{
    decode_frame_with, encode_frame, max_frame_bytes, Stores, STREAMING_STORES_FROM,
};
use enec::{decode, encode, frames, max_encoded_size, read_header, EncodeOptions};
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

/// Best wall time of `repeats` runs of `f`, after one warm-up run.
fn best_of(repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// Encodes on the current rayon pool: the frames are cut into one contiguous range per thread
/// and each range is encoded frame after frame, the first straight into the stream, the others
/// into scratch (reused between calls), which then moves up behind it, also in parallel.
fn encode_parallel(
    options: &EncodeOptions,
    input: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> enec::Result<usize> {
    let eb = options.dtype.element_bytes();
    let frame_bytes = (1usize << options.frame_log2) * eb;
    let frames = input.len().div_ceil(frame_bytes);
    let per_range = frames.div_ceil(rayon::current_num_threads().clamp(1, frames.max(1)));
    let ranges: Vec<&[u8]> = input.chunks(per_range * frame_bytes).collect();
    // The most bytes one range can take.
    let cap = per_range * max_frame_bytes(options.dtype, 1 << options.frame_log2);
    let info = enec::StreamInfo::new(
        options.dtype,
        options.frame_log2,
        options.checksums,
        (input.len() / eb) as u64,
    )?;
    let header = info.to_bytes();
    out.resize(header.len() + cap, 0);
    scratch.resize(cap * ranges.len().saturating_sub(1), 0);
    let (head, first) = out.split_at_mut(header.len());
    head.copy_from_slice(&header);
    let places: Vec<&mut [u8]> = std::iter::once(first)
        .chain(scratch.chunks_mut(cap))
        .collect();
    let sizes: Vec<usize> = ranges
        .par_iter()
        .zip(places)
        .map(|(range, place)| {
            let mut at = 0;
            for frame in range.chunks(frame_bytes) {
                let (dtype, coding, checksums) = (options.dtype, options.coding, options.checksums);
                at += encode_frame(dtype, coding, checksums, frame, &mut place[at..])?;
            }
            Ok(at)
        })
        .collect::<enec::Result<_>>()?;
    let total = header.len() + sizes.iter().sum::<usize>();
    out.resize(total.max(out.len()), 0);
    let mut rest = &mut out[header.len() + sizes[0]..total];
    let mut moves = Vec::with_capacity(sizes.len());
    for (&n, from) in sizes[1..].iter().zip(scratch.chunks(cap)) {
        let (to, tail) = rest.split_at_mut(n);
        moves.push((to, &from[..n]));
        rest = tail;
    }
    moves
        .into_par_iter()
        .for_each(|(to, from)| to.copy_from_slice(from));
    out.truncate(total);
    Ok(total)
}

/// Decodes every frame on the current rayon pool, each straight into its part of `out` (with
/// the stores `decode` would choose for an output this large).
fn decode_parallel(stream: &[u8], out: &mut [u8]) -> enec::Result<()> {
    let info = read_header(stream)?;
    let located: Vec<enec::FrameInfo> = frames(stream)?.collect::<std::result::Result<_, _>>()?;
    let frame_out = info.frame_len() * info.dtype.element_bytes();
    let stores = if out.len() >= STREAMING_STORES_FROM {
        Stores::Streaming
    } else {
        Stores::Cached
    };
    located
        .par_iter()
        .zip(out.par_chunks_mut(frame_out))
        .try_for_each(|(f, dst)| {
            decode_frame_with(
                info.dtype,
                info.checksums,
                f.index,
                f.elements,
                &stream[f.offset..f.offset + f.bytes],
                dst,
                stores,
            )
            .map(|_| ())
        })?;
    Ok(())
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
    // memcpy, encode and decode take turns, round after round (best of each): on a shared
    // machine whose speed drifts, the three then see the same conditions.
    let len = encode(&options, &input, &mut stream).context(|| "encoding")?;
    let stream = &stream[..len];
    let (mut memcpy, mut encode_1, mut decode_1) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let mut encoded = vec![0u8; max_encoded_size(&options, input.len()).context(|| "sizing")?];
    let mut encoded_len = 0;
    for round in 0..=repeats {
        let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
            let t = Instant::now();
            f()?;
            Ok(t.elapsed().as_secs_f64())
        };
        let m = timed(&mut || {
            copy.copy_from_slice(black_box(&input));
            Ok(())
        })?;
        let e = timed(&mut || {
            encoded_len =
                encode(&options, black_box(&input), &mut encoded).context(|| "encoding")?;
            Ok(())
        })?;
        let d = timed(&mut || {
            decode(black_box(stream), copy).context(|| "decoding")?;
            Ok(())
        })?;
        // Round 0 warms up.
        if round > 0 {
            (memcpy, encode_1, decode_1) = (memcpy.min(m), encode_1.min(e), decode_1.min(d));
        }
    }
    if &encoded[..encoded_len] != stream {
        return Err("the encoder wrote different bytes on another run".into());
    }
    if copy != input {
        return Err("decoded bytes differ from the input".into());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| e.to_string())?;
    let mut parallel_stream = Vec::new();
    let mut scratch = Vec::new();
    let encode_n = pool.install(|| {
        best_of(repeats, || {
            encode_parallel(&options, &input, &mut scratch, &mut parallel_stream)
                .context(|| "parallel encoding")?;
            Ok(())
        })
    })?;
    if parallel_stream != stream {
        return Err("the parallel encoder wrote different bytes".into());
    }
    copy.fill(0);
    let decode_n = pool.install(|| {
        best_of(repeats, || {
            decode_parallel(stream, copy).context(|| "parallel decoding")
        })
    })?;
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
        avx2: enec::simd_in_use(),
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
