//! How enec's frames scale over two threads, apart from the machine: the same work on one
//! thread and then split over two (each thread a contiguous half of the frames, its own output),
//! round after round, next to a memcpy of the same bytes split the same way. Four kinds of work:
//! decoding and encoding the whole array (from memory, as `enec bench` does) and the first 16
//! frames over and over (in cache: the codec's own scaling, without the memory system).
//! Compare with `examples/core_scaling.rs`, which shows what the machine itself allows.
//!
//! usage: cargo run --release --example thread_scaling -- FILE bf16|fp16|fp32 [ROUNDS]

use std::hint::black_box;
use std::time::Instant;

use enec::internals::frame::{decode_frame_with, max_frame_bytes, Stores};
use enec::wrapped::FrameEncoder;
use enec::{encode, frames, max_encoded_size, Dtype, EncodeOptions, FrameInfo};

/// One kind of work: `(thread, threads, that thread's output buffer)`.
type Work<'a> = &'a (dyn Fn(usize, usize, &mut [u8]) + Sync);

/// The part `thread` of `threads` takes of `0..len`.
fn half(thread: usize, threads: usize, len: usize) -> std::ops::Range<usize> {
    let per = len.div_ceil(threads);
    (thread * per).min(len)..((thread + 1) * per).min(len)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, name, rest @ ..] = args.as_slice() else {
        return Err("usage: thread_scaling FILE bf16|fp16|fp32 [ROUNDS]".into());
    };
    let dtype = match name.as_str() {
        "bf16" => Dtype::Bf16,
        "fp16" => Dtype::Fp16,
        "fp32" => Dtype::Fp32,
        other => return Err(format!("unknown dtype {other}").into()),
    };
    let rounds: usize = rest.first().map_or(Ok(11), |r| r.parse())?;
    let input = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let options = EncodeOptions::new(dtype);
    let mut stream = vec![0; max_encoded_size(&options, input.len())?];
    let len = encode(&options, &input, &mut stream)?;
    let stream = &stream[..len];
    let located: Vec<FrameInfo> = frames(stream)?.collect::<Result<_, _>>()?;
    let frame_len = 1usize << options.frame_log2;
    let frame_bytes = frame_len * dtype.element_bytes();
    let checksums = options.checksums;
    // Frames `range` decoded into `out`, each handed the rest of the stream (for its prefetch).
    let decode_frames = |range: &[FrameInfo], out: &mut [u8], stores: Stores| {
        for (f, dst) in range.iter().zip(out.chunks_mut(frame_bytes)) {
            decode_frame_with(
                dtype,
                checksums,
                f.index,
                f.elements,
                &stream[f.offset..],
                dst,
                stores,
            )
            .expect("a stream this program wrote decodes");
        }
    };
    let encode_frames = |input: &[u8], out: &mut [u8]| {
        let encoder = FrameEncoder::new(&options, input).expect("options that encoded above");
        let mut at = 0;
        // As `encode` does: each frame fetches the next one while it is written.
        for index in 0..encoder.frame_count() {
            at += encoder
                .encode_frame(index, &mut out[at..])
                .expect("the output has room for any frame");
        }
    };
    let hot = 16.min(located.len());
    // In cache: as many passes over the first frames as the array has frames in all.
    let passes = |thread: usize, threads: usize| half(thread, threads, located.len() / hot).len();
    let copy = |t: usize, n: usize, out: &mut [u8]| {
        let r = half(t, n, input.len());
        out[..r.len()].copy_from_slice(&input[r]);
    };
    let decode_memory = |t: usize, n: usize, out: &mut [u8]| {
        decode_frames(&located[half(t, n, located.len())], out, Stores::Streaming);
    };
    let decode_cache = |t: usize, n: usize, out: &mut [u8]| {
        for _ in 0..passes(t, n) {
            decode_frames(&located[..hot], out, Stores::Cached);
        }
    };
    let encode_memory = |t: usize, n: usize, out: &mut [u8]| {
        let frames = half(t, n, located.len());
        let bytes = frames.start * frame_bytes..(frames.end * frame_bytes).min(input.len());
        encode_frames(&input[bytes], out);
    };
    let encode_cache = |t: usize, n: usize, out: &mut [u8]| {
        for _ in 0..passes(t, n) {
            encode_frames(&input[..(hot * frame_bytes).min(input.len())], out);
        }
    };
    let works: [(&str, Work); 5] = [
        ("memcpy", &copy),
        ("decode, from memory", &decode_memory),
        ("decode, in cache", &decode_cache),
        ("encode, from memory", &encode_memory),
        ("encode, in cache", &encode_cache),
    ];
    let capacity = input
        .len()
        .max(located.len() * max_frame_bytes(dtype, frame_len));
    let mut buffers: Vec<Vec<u8>> = (0..2).map(|_| vec![0u8; capacity + 64]).collect();
    println!("{path} ({name}), {rounds} rounds; two threads against one, same work:");
    for (name, work) in works {
        let (mut one, mut two) = (Vec::new(), Vec::new());
        for round in 0..=rounds {
            let t = Instant::now();
            work(0, 1, &mut buffers[0]);
            let single = t.elapsed().as_secs_f64();
            let t = Instant::now();
            std::thread::scope(|scope| {
                for (thread, buffer) in buffers.iter_mut().enumerate() {
                    scope.spawn(move || work(thread, 2, buffer));
                }
            });
            let pair = t.elapsed().as_secs_f64();
            black_box(&buffers);
            // Round 0 warms up.
            if round > 0 {
                one.push(single);
                two.push(pair);
            }
        }
        let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let per_round = median(one.iter().zip(&two).map(|(a, b)| a / b).collect());
        println!(
            "  {name:<20} {:.2}x best against best, {per_round:.2}x median per round",
            best(&one) / best(&two)
        );
    }
    Ok(())
}
