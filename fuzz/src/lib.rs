//! Helpers shared by the enec fuzz targets: an allocation counter (the decoder must never
//! allocate), the byte-driven option parser, and buffer pre-fills.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub use enec::Dtype;
use enec::{Coding, EncodeOptions};

// ---------------------------------------------------------------------------------------------
// Allocation counting
// ---------------------------------------------------------------------------------------------

/// The global allocator of every fuzz target: the system allocator, counting the allocations
/// made by the current thread while [`no_alloc`] runs.
pub struct CountingAlloc;

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: the thread-local may be gone during thread teardown.
    let _ = WATCHING.try_with(|w| {
        if w.get() {
            let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Runs `f` and panics (a fuzz finding) if it allocated on this thread.
pub fn no_alloc<R>(what: &str, f: impl FnOnce() -> R) -> R {
    ALLOCATIONS.with(|a| a.set(0));
    WATCHING.with(|w| w.set(true));
    let r = f();
    WATCHING.with(|w| w.set(false));
    let n = ALLOCATIONS.with(|a| a.get());
    assert_eq!(n, 0, "{what} allocated {n} times");
    r
}

// ---------------------------------------------------------------------------------------------
// Options and data from fuzz bytes
// ---------------------------------------------------------------------------------------------

/// Reads bytes off the front of the fuzz input; 0 once it is exhausted.
pub struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    /// The next byte, or 0.
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes as a little-endian u16, or 0s.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The rest.
    pub fn rest(self) -> &'a [u8] {
        self.0
    }
}

/// Dtype from a byte.
pub fn dtype_of(b: u8) -> Dtype {
    Dtype::ALL[usize::from(b) % Dtype::ALL.len()]
}

/// Coding from a byte.
pub fn coding_of(b: u8) -> Coding {
    [Coding::Auto, Coding::Groups, Coding::Ranked][usize::from(b) % 3]
}

/// Encoder options from four config bytes: dtype, frame length, coding and checksums.
///
/// Byte layout (also what `make_seeds` writes): `[dtype, frame_log2 - 10, coding | 0x80 if
/// checksums off]`.
pub fn options_of(cfg: &mut Bytes) -> EncodeOptions {
    let dtype = dtype_of(cfg.u8());
    let frame_log2 = 10 + cfg.u8() % 7;
    let c = cfg.u8();
    let opts = EncodeOptions::new(dtype)
        .coding(coding_of(c & 0x7f))
        .checksums(c & 0x80 == 0);
    EncodeOptions { frame_log2, ..opts }
}

/// The data to encode: `raw` cut to whole elements, or, when `expand` is non-zero, `raw`
/// tiled out to a larger size with a cheap PRNG stirred into the low mantissa bits (so a small
/// fuzz input can still produce multi-frame streams and 65,536-element frames), keeping the
/// high bits (sign, exponent) of the fuzz data.
pub fn data_of(dtype: Dtype, expand: u8, raw: &[u8]) -> Vec<u8> {
    let eb = dtype.element_bytes();
    let whole = raw.len() / eb * eb;
    if expand == 0 || whole == 0 {
        return raw[..whole].to_vec();
    }
    // expand: bits 0-4: size 2^(b % 18) elements (1 ..= 131,072: sizes spread evenly on a log
    // scale, so large inputs are the exception and fuzzing stays fast), plus, with bit 5, a
    // partial frame of 3 * raw[0] + 1 elements; bit 6: keep the low mantissa bits zero (dead
    // bits); bit 7: no PRNG at all (pure tiling).
    let mut elements = 1usize << ((expand & 0x1f) % 18);
    if expand & 0x20 != 0 {
        elements += 3 * usize::from(raw[0]) + 1;
    }
    let dead = expand & 0x40 != 0;
    let pure = expand & 0x80 != 0;
    let mut out = Vec::with_capacity(elements * eb);
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ raw.len() as u64;
    for i in 0..elements {
        let at = (i * eb) % whole;
        let src = &raw[at..at + eb];
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let noise = if pure { 0 } else { state as u32 };
        match eb {
            1 => {
                // e4m3: 3 mantissa bits; e5m2: 2. Stir the low bit.
                let mut v = src[0] ^ (noise as u8 & 0x01);
                if dead {
                    v &= !0x01;
                }
                out.push(v);
            }
            2 => {
                let u = u16::from_le_bytes([src[0], src[1]]);
                // bf16: 7 mantissa bits; fp16: 10. Stir the low 4 bits.
                let mut v = u ^ (noise as u16 & 0x000f);
                if dead {
                    v &= !0x0007;
                }
                out.extend_from_slice(&v.to_le_bytes());
            }
            _ => {
                let u = u32::from_le_bytes([src[0], src[1], src[2], src[3]]);
                let mut v = u ^ (noise & 0x0000_ffff);
                if dead {
                    v &= !0x0000_ffff;
                }
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    out
}

/// Rewrites the stream-header check (bytes 28..32) so the fuzzer can explore header fields
/// beyond it; returns false when `stream` is shorter than a header.
pub fn fix_header_check(stream: &mut [u8]) -> bool {
    if stream.len() < 32 {
        return false;
    }
    let check = enec::checksum::h32(&stream[..28]);
    stream[28..32].copy_from_slice(&check.to_le_bytes());
    true
}

/// Recomputes a container's header check, index checksum and footer check (from the footer's
/// own offsets), so that mutations reach the rules behind the checks; false when `file` is too
/// short for a header and a footer.
pub fn fix_container_checks(file: &mut [u8]) -> bool {
    use enec::container::{Footer, FOOTER_BYTES};
    if file.len() < 64 {
        return false;
    }
    let check = enec::checksum::h32(&file[..28]);
    file[28..32].copy_from_slice(&check.to_le_bytes());
    let at = file.len() - FOOTER_BYTES;
    let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let (offset, len) = (word(file, at), word(file, at + 8));
    let Some(end) = offset.checked_add(len).filter(|&e| e <= at as u64) else {
        return true;
    };
    let footer = Footer::new(offset, &file[offset as usize..end as usize]).to_bytes();
    file[at..].copy_from_slice(&footer);
    true
}

// ---------------------------------------------------------------------------------------------
// Pre-filled buffers
// ---------------------------------------------------------------------------------------------

/// A buffer of `len` bytes filled with pattern `which` (0: zeros, 1: 0xFF, 2: a PRNG seeded by
/// `seed`, 3: 0xA5).
pub fn prefilled(len: usize, which: u8, seed: u64) -> Vec<u8> {
    match which {
        0 => vec![0u8; len],
        1 => vec![0xffu8; len],
        2 => {
            let mut state = seed | 1;
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect()
        }
        _ => vec![0xa5u8; len],
    }
}

/// A cheap hash of the fuzz input (for PRNG seeds).
pub fn seed_of(data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in data.iter().take(256) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ data.len() as u64
}

/// Asserts that two buffers, pre-filled with `fill_a` and `fill_b` and then written by the same
/// (deterministic) operation, differ only where both still hold their pre-fill: every byte the
/// operation wrote is independent of what was there before.
pub fn assert_written_alike(a: &[u8], fill_a: &[u8], b: &[u8], fill_b: &[u8], what: &str) {
    assert_eq!(a.len(), b.len());
    for i in 0..a.len() {
        if a[i] != b[i] {
            assert!(
                a[i] == fill_a[i] && b[i] == fill_b[i],
                "{what}: byte {i} depends on the buffer's previous contents \
                 ({:#04x} over {:#04x} vs {:#04x} over {:#04x})",
                a[i],
                fill_a[i],
                b[i],
                fill_b[i]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------------------------

#[doc(hidden)]
pub use enec::streaming::capacity_for;

/// Driving the streaming codec in fuzz-chosen chunks and comparing it with the one-shot one.
pub mod streaming {
    use enec::streaming::{Decoder, Progress, Status};
    use enec::Error;

    use crate::no_alloc;

    /// Chunk sizes cycling over two fuzz bytes: `b & 63` scaled by `8^(b >> 6)` (0 ..= 32,256
    /// bytes), or 255 for "all that is left" (the zero-copy paths). If both are 0 bytes, the second
    /// is 1, so the codec always makes progress.
    pub struct Chunks {
        sizes: [u8; 2],
        turn: usize,
    }

    impl Chunks {
        pub fn new(a: u8, b: u8) -> Chunks {
            let zero = |b: u8| b != 255 && b & 63 == 0;
            Chunks {
                sizes: [a, if zero(a) && zero(b) { 1 } else { b }],
                turn: 0,
            }
        }
        pub fn next(&mut self, left: usize) -> usize {
            let b = self.sizes[self.turn];
            self.turn ^= 1;
            if b == 255 {
                left
            } else {
                (usize::from(b & 63) << (3 * (b >> 6))).min(left)
            }
        }
    }

    pub fn check_progress(p: &Progress, input: usize, output: usize, what: &str) {
        assert!(p.consumed <= input && p.written <= output, "{what}: {p:?}");
        match p.status {
            Status::NeedsInput => assert_eq!(p.consumed, input, "{what}: NeedsInput, input left"),
            Status::HasOutput => {
                assert_eq!(p.written, output, "{what}: HasOutput, output room left")
            }
            Status::Done => {}
        }
    }

    #[macro_export]
    macro_rules! with_capacity {
        ($eb:expr, $log2:expr, $f:ident, $($arg:expr),*) => {
            match ($eb, $log2) {
                (2, 10) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 10) }>($($arg),*),
                (2, 11) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 11) }>($($arg),*),
                (2, 12) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 12) }>($($arg),*),
                (2, 13) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 13) }>($($arg),*),
                (2, 14) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 14) }>($($arg),*),
                (2, 15) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 15) }>($($arg),*),
                (2, _) => $f::<{ $crate::capacity_for($crate::Dtype::Bf16, 1 << 16) }>($($arg),*),
                (_, 10) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 10) }>($($arg),*),
                (_, 11) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 11) }>($($arg),*),
                (_, 12) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 12) }>($($arg),*),
                (_, 13) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 13) }>($($arg),*),
                (_, 14) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 14) }>($($arg),*),
                (_, 15) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 15) }>($($arg),*),
                (_, _) => $f::<{ $crate::capacity_for($crate::Dtype::Fp32, 1 << 16) }>($($arg),*),
            }
        };
    }

    /// Decodes `stream` with a `Decoder<CAP>` in the chunks `chunks` gives (input, output) and
    /// returns what it handed out, the bytes it consumed and how it ended (`Ok` once done).
    /// Stops collecting output after `max_out` bytes (for hostile headers announcing huge
    /// outputs). Asserts the documented `Progress` semantics, no allocation and progress.
    pub fn stream_decode_only<const CAP: usize>(
        stream: &[u8],
        chunks: &mut (Chunks, Chunks),
        max_out: usize,
    ) -> (Vec<u8>, usize, Result<(), Error>) {
        let mut decoder = Box::new(Decoder::<CAP>::new());
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut at = 0;
        let mut stalls = 0;
        let result = loop {
            let take = chunks.0.next(stream.len() - at);
            let room = chunks.1.next(buf.len());
            let input = &stream[at..at + take];
            let r = no_alloc("Decoder::decode", || {
                decoder.decode(input, &mut buf[..room])
            });
            let p = match r {
                Ok(p) => p,
                Err(e) => {
                    // Errors are sticky.
                    assert_eq!(decoder.decode(&[], &mut buf), Err(e), "error not sticky");
                    assert_eq!(decoder.finish(), Err(e), "finish() forgot the error");
                    break Err(e);
                }
            };
            check_progress(&p, take, room, "decode");
            at += p.consumed;
            out.extend_from_slice(&buf[..p.written]);
            if p.status == Status::Done {
                assert!(decoder.is_done());
                assert_eq!(decoder.finish(), Ok(()));
                break Ok(());
            }
            if at == stream.len() && p.status == Status::NeedsInput {
                // The input has ended.
                let f = decoder.finish();
                assert!(f.is_err(), "finish() is Ok before Done");
                break f;
            }
            if out.len() > max_out {
                return (out, at, Ok(()));
            }
            stalls = if p.consumed == 0 && p.written == 0 {
                stalls + 1
            } else {
                0
            };
            assert!(stalls < 4, "streaming decoder makes no progress");
        };
        // After an error returned by `decode`, `bytes_in` and `bytes_out` also count what the
        // failing call took and wrote before the error (its `Progress` is never returned), so
        // they may exceed what the caller saw.
        if result.is_ok() {
            assert_eq!(decoder.bytes_in(), at as u64);
            assert_eq!(decoder.bytes_out(), out.len() as u64);
        } else {
            assert!(decoder.bytes_in() >= at as u64);
            assert!(decoder.bytes_out() >= out.len() as u64);
        }
        (out, at, result)
    }

    /// [`stream_decode_only`], then compares it with the one-shot decoder's `expected` result and
    /// `one_shot` output (when the one-shot decode had room for the whole output): the same
    /// output and the same error, except `FrameTooLarge` (capacity only) and `TrailingData`
    /// (the streaming decoder stops at the end of the stream and leaves the rest). With
    /// `original` and checksums, everything handed out must be a prefix of `original`.
    #[allow(clippy::too_many_arguments)]
    pub fn stream_decode<const CAP: usize>(
        stream: &[u8],
        expected: Option<Result<usize, Error>>,
        one_shot: &[u8],
        original: Option<&[u8]>,
        checksums: bool,
        chunks: &mut (Chunks, Chunks),
        max_out: usize,
    ) {
        let (out, at, result) = stream_decode_only::<CAP>(stream, chunks, max_out);
        compare_with_one_shot(stream, expected, one_shot, original, checksums, out, at, result);
    }

    /// Compares what a streaming decode of `stream` handed out (`out`), the stream bytes it
    /// consumed (`at`) and how it ended (`result`) with the one-shot decoder's `expected` result
    /// and `one_shot` output, as [`stream_decode`] describes.
    #[allow(clippy::too_many_arguments)]
    pub fn compare_with_one_shot(
        stream: &[u8],
        expected: Option<Result<usize, Error>>,
        one_shot: &[u8],
        original: Option<&[u8]>,
        checksums: bool,
        out: Vec<u8>,
        at: usize,
        result: Result<(), Error>,
    ) {
        // Output handed out before any error was verified: with checksums it is the original's.
        if let (true, Some(original)) = (checksums, original) {
            assert!(
                original.get(..out.len()) == Some(&out[..]),
                "streaming decoder handed out unverified bytes ({} bytes, result {result:?})",
                out.len()
            );
        }
        let Some(expected) = expected else { return };
        match (expected, result) {
            (_, Err(Error::FrameTooLarge { .. })) => {}
            (Ok(n), r) => {
                assert_eq!(r, Ok(()), "one-shot decode succeeded, streaming did not");
                assert_eq!(at, stream.len());
                assert_eq!(out.len(), n);
                assert!(
                    out == one_shot[..n],
                    "streaming output differs from one-shot"
                );
            }
            (Err(Error::TrailingData { extra }), r) => {
                assert_eq!(
                    r,
                    Ok(()),
                    "stream with trailing bytes: streaming did not finish"
                );
                assert_eq!((stream.len() - at) as u64, extra, "trailing bytes consumed");
                assert!(
                    one_shot.get(..out.len()) == Some(&out[..]),
                    "streaming output differs from one-shot"
                );
            }
            (Err(e), r) => {
                assert_eq!(
                    r,
                    Err(e),
                    "streaming and one-shot decoders report different errors"
                );
            }
        }
    }
}

/// Inner readers and writers for the `enec::io` adapters, taking or giving fuzz-chosen chunks.
pub mod io {
    use crate::streaming::Chunks;

    /// Reads `data` in the sizes `chunks` gives (at least 1 byte while any is left); `at` is
    /// how far it has been read.
    pub struct ChunkedReader<'a> {
        pub data: &'a [u8],
        pub at: usize,
        chunks: Chunks,
    }

    impl<'a> ChunkedReader<'a> {
        pub fn new(data: &'a [u8], chunks: Chunks) -> Self {
            ChunkedReader { data, at: 0, chunks }
        }
        fn take(&mut self, buf: &mut [u8]) -> usize {
            let left = (self.data.len() - self.at).min(buf.len());
            let n = self.chunks.next(left).max(1).min(left);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            n
        }
    }

    impl embedded_io::ErrorType for ChunkedReader<'_> {
        type Error = core::convert::Infallible;
    }
    impl embedded_io::Read for ChunkedReader<'_> {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, core::convert::Infallible> {
            Ok(self.take(buf))
        }
    }
    impl std::io::Read for ChunkedReader<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            Ok(self.take(buf))
        }
    }

    /// Collects what is written into `out`, taking at most what `chunks` gives per call (at
    /// least 1 byte).
    pub struct ChunkedWriter {
        pub out: Vec<u8>,
        chunks: Chunks,
    }

    impl ChunkedWriter {
        pub fn new(chunks: Chunks) -> Self {
            ChunkedWriter { out: Vec::new(), chunks }
        }
        fn put(&mut self, buf: &[u8]) -> usize {
            let n = self.chunks.next(buf.len()).max(1).min(buf.len());
            self.out.extend_from_slice(&buf[..n]);
            n
        }
    }

    impl embedded_io::ErrorType for ChunkedWriter {
        type Error = core::convert::Infallible;
    }
    impl embedded_io::Write for ChunkedWriter {
        fn write(&mut self, buf: &[u8]) -> Result<usize, core::convert::Infallible> {
            Ok(self.put(buf))
        }
        fn flush(&mut self) -> Result<(), core::convert::Infallible> {
            Ok(())
        }
    }
    impl std::io::Write for ChunkedWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(self.put(buf))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
