//! Helpers shared by the enec fuzz targets: an allocation counter (the decoder must never
//! allocate), the byte-driven option parser, and buffer pre-fills.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use enec::{Coding, Dtype, EncodeOptions};

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
    Dtype::ALL[usize::from(b) % 3]
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
/// tiled out to `expand * 1024` elements with a cheap PRNG stirred into the low mantissa bits
/// (so a small fuzz input can still produce multi-frame streams and 65,536-element frames),
/// keeping the high bits (sign, exponent) of the fuzz data.
pub fn data_of(dtype: Dtype, expand: u8, raw: &[u8]) -> Vec<u8> {
    let eb = dtype.element_bytes();
    let whole = raw.len() / eb * eb;
    if expand == 0 || whole == 0 {
        return raw[..whole].to_vec();
    }
    // expand: low 6 bits: size in KiB-elements (1..=64, plus a partial frame), bit 6: keep the
    // low mantissa bits zero (dead bits), bit 7: no PRNG at all (pure tiling).
    let elements = usize::from(expand & 0x3f) * 1024 + usize::from(raw[0]) * 3;
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
