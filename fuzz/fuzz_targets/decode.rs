//! Arbitrary bytes into every decoding entry point: the one-shot `decode`, `frames()`,
//! `frame::decode_frame` (dispatched and portable compilations, cached and streaming stores) and
//! the streaming `Decoder`.
//!
//! Never a panic, no out-of-bounds access, no allocation, bounded time (libFuzzer's -timeout);
//! on success, the output equals an independent second decode, frame-by-frame decoding agrees,
//! and re-encoding the output gives a stream that decodes to it again.
//!
//! The input is tried twice: as it is, and with its stream-header check recomputed, so that
//! mutations of the header fields get past the check and reach the code behind it.
//!
//! `simd_in_use` and `kernels_in_use` name the kernels the dispatched calls run: what the CPU's
//! features and `ENEC_PORTABLE` / `ENEC_NO_AVX512` select, the same on every call.
#![no_main]

use std::sync::OnceLock;

use enec::internals::frame::{decode_frame, decode_frame_with, Stores};
use enec::{decode, encode, frames, read_header, EncodeOptions, Error};
use enec_fuzz::streaming::{stream_decode, Chunks};
use enec_fuzz::{fix_header_check, no_alloc, prefilled, seed_of, with_capacity, Bytes};
use libfuzzer_sys::fuzz_target;

/// Largest output the target allocates (larger claims must fail with `OutputTooSmall`).
const MAX_OUT: usize = 1 << 22;

fuzz_target!(|input: &[u8]| {
    let seed = seed_of(input);
    check_stream(input, seed);
    let mut fixed = input.to_vec();
    if fix_header_check(&mut fixed) && fixed != input {
        check_stream(&fixed, seed);
    }
    check_frame(input);
    check_kernel_report();
});

/// `simd_in_use` and `kernels_in_use` agree with each other and with what the CPU and the
/// environment select (the rule their documentation states), on every call.
fn check_kernel_report() {
    static EXPECTED: OnceLock<(bool, &'static str)> = OnceLock::new();
    let expected = *EXPECTED.get_or_init(selected_kernels);
    let report = no_alloc("kernel report", || {
        (enec::simd_in_use(), enec::kernels_in_use())
    });
    assert_eq!(
        report, expected,
        "simd_in_use / kernels_in_use misreport the kernels"
    );
}

/// The kernels the documented rule selects on this machine: `(simd_in_use, kernels_in_use)`.
fn selected_kernels() -> (bool, &'static str) {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| v == "1");
    if set("ENEC_PORTABLE") {
        return (false, "portable");
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt") {
            let avx512 = has!("avx512f")
                && has!("avx512bw")
                && has!("avx512vl")
                && has!("avx512vbmi")
                && has!("avx512vbmi2")
                && has!("avx512bitalg")
                && has!("gfni")
                && !set("ENEC_NO_AVX512");
            return (true, if avx512 { "AVX2+AVX-512" } else { "AVX2" });
        }
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        return (true, "NEON");
    }
    (false, "portable")
}

fn check_stream(stream: &[u8], seed: u64) {
    let header = no_alloc("read_header", || read_header(stream));
    let total = header
        .as_ref()
        .ok()
        .and_then(|info| usize::try_from(info.decoded_bytes()).ok());

    // frames(): never panics, offsets move forward inside the stream, stops after an error.
    if let Ok(iter) = no_alloc("frames", || frames(stream)) {
        let info = *iter.info();
        let mut next = 32usize;
        let mut n = 0u32;
        let mut failed = false;
        no_alloc("frames iteration", || {
            for f in iter {
                assert!(!failed, "frames() continued after an error");
                match f {
                    Ok(f) => {
                        assert_eq!(f.index, n);
                        assert_eq!(f.offset, next);
                        assert!(f.bytes >= 32 && f.bytes % 32 == 0);
                        assert!(f.offset + f.bytes <= stream.len());
                        assert_eq!(f.elements, info.frame_elements(n));
                        next += f.bytes;
                        n += 1;
                    }
                    Err(_) => failed = true,
                }
            }
        });
        assert!(n <= info.frame_count);
    }

    // A buffer too small by one byte must fail (never write past it: the slice is exact).
    if let Some(total) = total.filter(|&t| t > 0 && t <= MAX_OUT) {
        let mut small = vec![0u8; total - 1];
        let r = no_alloc("decode (short output)", || decode(stream, &mut small));
        assert!(r.is_err(), "decoded {total} bytes into {} bytes", total - 1);
    }

    let cap = total.map_or(64, |t| t.min(MAX_OUT));
    // Room past the end to see that the decoder writes only its `total` bytes.
    let slack = 16;
    let fill_a = prefilled(cap + slack, 0, seed);
    let mut a = fill_a.clone();
    let result = no_alloc("decode", || decode(stream, &mut a));
    assert!(
        a[cap.min(total.unwrap_or(0))..] == fill_a[cap.min(total.unwrap_or(0))..],
        "decode wrote past the decoded length"
    );
    // The streaming decoder, all at once (its zero-copy paths) and in small chunks, agrees
    // with the one-shot decoder (same output, same error; see `stream_decode`).
    let expected = total.filter(|&t| t <= MAX_OUT).map(|_| result);
    let (eb, log2) = header
        .as_ref()
        .map_or((4, 16), |i| (i.dtype.element_bytes(), i.frame_log2));
    for chunks in [
        (Chunks::new(255, 255), Chunks::new(255, 255)),
        (
            Chunks::new(seed as u8, (seed >> 8) as u8),
            Chunks::new((seed >> 16) as u8, (seed >> 24) as u8),
        ),
    ] {
        let mut chunks = chunks;
        with_capacity!(
            eb,
            log2,
            stream_decode,
            stream,
            expected,
            &a,
            None,
            false,
            &mut chunks,
            MAX_OUT
        );
    }

    let Ok(n) = result else {
        return;
    };
    let info = header.expect("decode succeeded, so the header parsed");
    assert_eq!(
        Some(n),
        total,
        "decode returned a length other than the header's"
    );
    let out = &a[..n];

    // Independent second decode into a differently pre-filled buffer.
    let fill_b = prefilled(cap + slack, 2, seed);
    let mut b = fill_b.clone();
    assert_eq!(decode(stream, &mut b), Ok(n));
    assert_eq!(&b[..n], out, "two decodes of one stream differ");

    // Frame by frame (the parallel decoder's path) gives the same bytes.
    let frame_out = info.frame_len() * info.dtype.element_bytes();
    let mut c = vec![0xeeu8; n];
    let mut end = 32;
    for (f, dst) in frames(stream)
        .expect("header parsed")
        .zip(c.chunks_mut(frame_out.max(1)))
    {
        let f = f.expect("decode succeeded, so every frame header is good");
        let used = no_alloc("decode_frame", || {
            decode_frame(
                info.dtype,
                info.checksums,
                f.index,
                f.elements,
                &stream[f.offset..],
                dst,
            )
        })
        .expect("decode succeeded, so every frame decodes");
        assert_eq!(used, f.bytes);
        // The baseline compilation of the kernels agrees with the dispatched (AVX2) one.
        let mut p = vec![0x11u8; dst.len()];
        let portable = enec::internals::frame::decode_frame_portable(
            info.dtype,
            info.checksums,
            f.index,
            f.elements,
            &stream[f.offset..],
            &mut p,
        );
        assert_eq!(portable, Ok(used), "portable decode_frame disagrees");
        assert_eq!(p, *dst, "portable decode_frame output differs");
        end = f.offset + f.bytes;
    }
    assert_eq!(
        end,
        stream.len(),
        "decode accepted bytes after the last frame"
    );
    assert_eq!(c, out, "frame-by-frame decode differs from one-shot decode");

    // Re-encoding the output with the stream's own options round-trips. (The bytes may differ:
    // a valid stream need not be the one our encoder would write.)
    let options = EncodeOptions {
        frame_log2: info.frame_log2,
        ..EncodeOptions::new(info.dtype).checksums(info.checksums)
    };
    let bound = enec::max_encoded_size(&options, n).expect("bound");
    let mut re = vec![0u8; bound];
    let len = encode(&options, out, &mut re).expect("re-encode");
    let mut back = vec![0u8; n];
    assert_eq!(decode(&re[..len], &mut back), Ok(n));
    assert_eq!(back, out, "re-encoded stream decodes differently");
}

/// `decode_frame` on its own: fuzz bytes choose dtype, checksums, frame index and element
/// count, the rest is the frame. Never panics; on success it reports a frame size within the
/// input and writes only its elements.
fn check_frame(input: &[u8]) {
    let mut cfg = Bytes(input);
    let c = cfg.u8();
    let dtype = enec_fuzz::dtype_of(c & 0x3);
    let checksums = c & 0x4 != 0;
    let from_header = c & 0x8 != 0;
    let index = u32::from(cfg.u8());
    let n_raw = usize::from(cfg.u16());
    let frame = cfg.rest();
    // Either the element count the frame header claims (up to twice the largest frame: counts
    // above 65,536 must be refused, see tests/regressions finding 1), or a fuzz-chosen one.
    let elements = if from_header && frame.len() >= 12 {
        (u32::from_le_bytes([frame[8], frame[9], frame[10], frame[11]]) as usize)
            .min(2 * enec::format::MAX_FRAME_LEN)
    } else {
        n_raw + 1
    };
    let bytes = elements * dtype.element_bytes();
    let fill = prefilled(bytes + 8, 3, 0);
    let mut out = fill.clone();
    let r = no_alloc("decode_frame", || {
        decode_frame(dtype, checksums, index, elements, frame, &mut out)
    });
    assert_eq!(
        &out[bytes..],
        &fill[bytes..],
        "decode_frame wrote past its elements"
    );
    let mut p = fill.clone();
    let portable = enec::internals::frame::decode_frame_portable(
        dtype, checksums, index, elements, frame, &mut p,
    );
    assert_eq!(portable, r, "portable and dispatched decode_frame disagree");
    if r.is_ok() {
        assert_eq!(
            p, out,
            "portable and dispatched decode_frame outputs differ"
        );
    }
    // Non-temporal stores (used on whole cache lines, so the output starts on one): the same
    // result and bytes, and nothing written past them.
    let mut lined = vec![0u8; fill.len() + 64];
    let at = lined.as_ptr().align_offset(64);
    let lined = &mut lined[at..at + fill.len()];
    lined.copy_from_slice(&fill);
    let streamed = no_alloc("decode_frame_with(Streaming)", || {
        decode_frame_with(
            dtype,
            checksums,
            index,
            elements,
            frame,
            lined,
            Stores::Streaming,
        )
    });
    assert_eq!(streamed, r, "streaming and cached decode_frame disagree");
    assert_eq!(
        &lined[bytes..],
        &fill[bytes..],
        "streaming decode wrote past its elements"
    );
    if r.is_ok() {
        assert_eq!(
            &lined[..bytes],
            &out[..bytes],
            "streaming and cached outputs differ"
        );
    }
    match r {
        Ok(used) => {
            assert!(used <= frame.len() && used >= 32 && used % 32 == 0);
            let mut again = prefilled(bytes, 1, 0);
            let r2 = decode_frame(dtype, checksums, index, elements, frame, &mut again);
            assert_eq!(r2, Ok(used));
            assert_eq!(&again[..], &out[..bytes], "two frame decodes differ");
        }
        Err(Error::OutputTooSmall { .. }) => panic!("output was large enough"),
        Err(_) => {}
    }
}
