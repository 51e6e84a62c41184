//! NEON kernels: what every aarch64 CPU runs. Each is the twin of a portable kernel of
//! `kernels/` (named in its doc) and computes exactly the same bytes: table lookups by `tbl`
//! (`vqtbl1q_u8` for the usual tables of up to 16 symbols, four `vqtbl4q_u8`/`vqtbx4q_u8` for
//! whole 256-byte tables), escape masks by compare, bit weights and pairwise adds (NEON has no
//! movemask), expansion and compaction by 256-entry tables of 8-lane shuffle patterns with
//! `tbx`/`tbl`, whole-register unpacking and packing of the planes by variable shifts, the
//! merge of exponents with residuals in 16-bit lanes for 2-byte elements, and the ranked
//! decoder's level-0 step, its deeper levels' steps and the groups decoder's chunk in one pass
//! per 16 elements (`ranked_chunk_neon`, `level_chunk_neon`, `groups_chunk_neon`).
//!
//! Every function here is compiled with `neon` enabled, so calling one is `unsafe`: the caller
//! must hold a [`Neon`](super::Neon) token (the module above does).
//!
//! Longer than 1,000 lines for the reason `x86/avx2.rs` gives: one instruction set's kernels,
//! each beside the helpers it shares with its neighbours, in the order of their portable twins.

use super::*;
use core::arch::aarch64::*;

/// [`kernels::unpack_range`]: each run of words with one bit offset is shifted, masked and
/// stored (or ORed) into the lanes 16 at a time. A run's last few lanes go through a scratch
/// step when the frame has 16 words there (the extra ones are read and dropped), else one at
/// a time.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn unpack<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
    let lane_bytes = (L::BITS / 8) as usize;
    for_each_unpack_run(frame, plane, start, out, |words, dst, shifts, first| {
        let run = dst.len() / lane_bytes;
        let steps = words[..2 * run]
            .chunks_exact(2 * STEP)
            .zip(dst.chunks_exact_mut(lane_bytes * STEP));
        for (w, d) in steps {
            unpack_step::<L>(w, shifts, first, d);
        }
        let q = run / STEP * STEP;
        if q < run && words.len() >= 2 * (q + STEP) {
            let mut scratch = [0u8; 4 * STEP];
            let scratch = &mut scratch[..lane_bytes * STEP];
            unpack_step::<L>(&words[2 * q..2 * q + 2 * STEP], shifts, true, scratch);
            for (d, s) in dst[lane_bytes * q..].iter_mut().zip(scratch.iter()) {
                *d = if first { *s } else { *d | s };
            }
        } else {
            let (take, place, mask) = shifts;
            for q in q..run {
                let w = u32::from(u16::from_le_bytes([words[2 * q], words[2 * q + 1]]));
                // (A place past the lane leaves no bits in it, as in the vector step.)
                let field = ((w >> take) & mask).checked_shl(place).unwrap_or(0);
                let lane = &mut dst[lane_bytes * q..lane_bytes * (q + 1)];
                for (b, f) in lane.iter_mut().zip(field.to_le_bytes()) {
                    *b = if first { f } else { *b | f };
                }
            }
        }
    })
}

/// One step of [`unpack`]: the fields at bit `take` of 16 words (`words`, 32 bytes), masked,
/// shifted left by `place` (cut to the lane) and stored, or ORed where not `first`, into 16
/// lanes (`dst`, `16 * L::BITS / 8` bytes).
#[target_feature(enable = "neon")]
#[inline]
fn unpack_step<L: Lane>(
    words: &[u8],
    (take, place, mask): (u32, u32, u32),
    first: bool,
    dst: &mut [u8],
) {
    let src = window::<32>(words, 0).cast::<u16>();
    // SAFETY: `window` checked that `words` has the 32 bytes these two loads read.
    let (w0, w1) = unsafe { (vld1q_u16(src), vld1q_u16(src.add(8))) };
    // A shift by a negative count shifts right; counts of the lane's width or more give 0.
    let right = vdupq_n_s16(-(take as i16));
    let mask = vdupq_n_u16(mask as u16);
    let v0 = vandq_u16(vshlq_u16(w0, right), mask);
    let v1 = vandq_u16(vshlq_u16(w1, right), mask);
    match L::BITS {
        8 => {
            // Shifted into place, then each lane cut to its low byte (as `or_field` does).
            let place = vdupq_n_s16(place.min(16) as i16);
            let v = vcombine_u8(
                vmovn_u16(vshlq_u16(v0, place)),
                vmovn_u16(vshlq_u16(v1, place)),
            );
            let o = window_mut::<16>(dst, 0);
            // SAFETY: `window_mut` checked that `dst` has these 16 bytes.
            unsafe {
                let v = if first { v } else { vorrq_u8(vld1q_u8(o), v) };
                vst1q_u8(o, v);
            }
        }
        16 => {
            let place = vdupq_n_s16(place.min(16) as i16);
            let o = window_mut::<32>(dst, 0).cast::<u16>();
            for (half, v) in [v0, v1].into_iter().enumerate() {
                let v = vshlq_u16(v, place);
                // SAFETY: `window_mut` checked that `dst` has the 32 bytes of both halves.
                unsafe {
                    let o = o.add(8 * half);
                    let v = if first { v } else { vorrq_u16(vld1q_u16(o), v) };
                    vst1q_u16(o, v);
                }
            }
        }
        _ => {
            let place = vdupq_n_s32(place.min(32) as i32);
            let o = window_mut::<64>(dst, 0).cast::<u32>();
            let quarters = [
                vmovl_u16(vget_low_u16(v0)),
                vmovl_high_u16(v0),
                vmovl_u16(vget_low_u16(v1)),
                vmovl_high_u16(v1),
            ];
            for (quarter, v) in quarters.into_iter().enumerate() {
                let v = vshlq_u32(v, place);
                // SAFETY: `window_mut` checked that `dst` has the 64 bytes of the four.
                unsafe {
                    let o = o.add(4 * quarter);
                    let v = if first { v } else { vorrq_u32(vld1q_u32(o), v) };
                    vst1q_u32(o, v);
                }
            }
        }
    }
}

/// [`kernels::pack_range`]: the mirror of [`unpack`], 16 values at a time. A run's last few
/// values go through a zero-padded step when the frame has 16 words there and the run is
/// not at bit 0 (ORing zeros changes nothing), else one at a time.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn pack<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
    let lane_bytes = (L::BITS / 8) as usize;
    for_each_pack_run(frame, plane, start, values, |src, words, shifts| {
        let run = src.len() / lane_bytes;
        let steps = src
            .chunks_exact(lane_bytes * STEP)
            .zip(words[..2 * run].chunks_exact_mut(2 * STEP));
        for (v, w) in steps {
            pack_step::<L>(v, shifts, w);
        }
        let q = run / STEP * STEP;
        let (take, place, mask) = shifts;
        if q < run && place != 0 && words.len() >= 2 * (q + STEP) {
            let mut scratch = [0u8; 4 * STEP];
            let rest = &src[lane_bytes * q..];
            scratch[..rest.len()].copy_from_slice(rest);
            let v = &scratch[..lane_bytes * STEP];
            pack_step::<L>(v, shifts, &mut words[2 * q..2 * q + 2 * STEP]);
        } else {
            for q in q..run {
                let mut lane = [0u8; 4];
                lane[..lane_bytes].copy_from_slice(&src[lane_bytes * q..lane_bytes * (q + 1)]);
                let field =
                    (u32::from_le_bytes(lane).checked_shr(take).unwrap_or(0) & mask) << place;
                let old = u16::from_le_bytes([words[2 * q], words[2 * q + 1]]);
                let w = if place == 0 { 0 } else { old } | field as u16;
                words[2 * q..2 * q + 2].copy_from_slice(&w.to_le_bytes());
            }
        }
    })
}

/// One step of [`pack`]: the fields at bit `take` of 16 values (`values`), masked, shifted
/// left by `place` and stored (at bit 0, where they are their words' first) or ORed into 16
/// words (`words`, 32 bytes).
#[target_feature(enable = "neon")]
#[inline]
fn pack_step<L: Lane>(values: &[u8], (take, place, mask): (u32, u32, u32), words: &mut [u8]) {
    let mask16 = vdupq_n_u16(mask as u16);
    let (v0, v1) = match L::BITS {
        8 => {
            // SAFETY: `window` checked that `values` has these 16 bytes.
            let v = unsafe { vld1q_u8(window::<16>(values, 0)) };
            let right = vdupq_n_s16(-(take.min(16) as i16));
            (
                vshlq_u16(vmovl_u8(vget_low_u8(v)), right),
                vshlq_u16(vmovl_high_u8(v), right),
            )
        }
        16 => {
            let p = window::<32>(values, 0).cast::<u16>();
            // SAFETY: `window` checked that `values` has the 32 bytes of both loads.
            let (a, b) = unsafe { (vld1q_u16(p), vld1q_u16(p.add(8))) };
            let right = vdupq_n_s16(-(take.min(16) as i16));
            (vshlq_u16(a, right), vshlq_u16(b, right))
        }
        _ => {
            // Shifted in 32 bits, then cut to the low 16 (the mask keeps at most those).
            let p = window::<64>(values, 0).cast::<u32>();
            // SAFETY: `window` checked that `values` has the 64 bytes of the four loads.
            let q = unsafe {
                [
                    vld1q_u32(p),
                    vld1q_u32(p.add(4)),
                    vld1q_u32(p.add(8)),
                    vld1q_u32(p.add(12)),
                ]
            };
            let right = vdupq_n_s32(-(take.min(32) as i32));
            let n = |v| vmovn_u32(vshlq_u32(v, right));
            (
                vcombine_u16(n(q[0]), n(q[1])),
                vcombine_u16(n(q[2]), n(q[3])),
            )
        }
    };
    let (stored, place) = (place == 0, vdupq_n_s16(place as i16));
    let o = window_mut::<32>(words, 0).cast::<u16>();
    for (half, v) in [v0, v1].into_iter().enumerate() {
        let field = vshlq_u16(vandq_u16(v, mask16), place);
        // SAFETY: `window_mut` checked that `words` has the 32 bytes of both halves.
        unsafe {
            let o = o.add(8 * half);
            // Fields at bit 0 are their words' first (see [`kernels::pack_range`]).
            let merged = if stored {
                field
            } else {
                vorrq_u16(vld1q_u16(o), field)
            };
            vst1q_u16(o, merged);
        }
    }
}

/// [`kernels::lookup`] for tables of at most 16 symbols (zero past them): one `tbl` per 16
/// codes, which gives zero for codes past the table as the portable compares do.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn lookup16(codes: &[u8], table: &[u8; 16], out: &mut [u8]) {
    // SAFETY: `table` is 16 bytes.
    let lut = unsafe { vld1q_u8(table.as_ptr()) };
    let n = codes.len().min(out.len());
    let mut q = 0;
    while q + 16 <= n {
        // SAFETY: `window` and `window_mut` checked the 16 bytes of `codes` and `out`.
        unsafe {
            let c = vld1q_u8(window::<16>(codes, q));
            vst1q_u8(window_mut::<16>(out, q), vqtbl1q_u8(lut, c));
        }
        q += 16;
    }
    for q in q..n {
        out[q] = table.get(usize::from(codes[q])).copied().unwrap_or(0);
    }
}

/// `out[q] = table[codes[q]]` for a whole 256-byte table: four lookups of 64 bytes per 16
/// codes, each code offset by the quarter's start (codes outside a quarter wrap past 64 and
/// leave the lane as it was). [`kernels::lookup`] of tables past 16 symbols, and
/// [`kernels::rank_codes`] of any level (its `code` table is the codes of every value).
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn lookup256(codes: &[u8], table: &[u8; 256], out: &mut [u8]) {
    let t = table.as_ptr();
    // SAFETY: `table` is 256 bytes: four runs of 64.
    let quarters = unsafe {
        [
            vld1q_u8_x4(t),
            vld1q_u8_x4(t.add(64)),
            vld1q_u8_x4(t.add(128)),
            vld1q_u8_x4(t.add(192)),
        ]
    };
    let n = codes.len().min(out.len());
    let mut q = 0;
    while q + 16 <= n {
        // SAFETY: `window` checked the 16 bytes of `codes`.
        let c = unsafe { vld1q_u8(window::<16>(codes, q)) };
        let mut v = vqtbl4q_u8(quarters[0], c);
        v = vqtbx4q_u8(v, quarters[1], vsubq_u8(c, vdupq_n_u8(64)));
        v = vqtbx4q_u8(v, quarters[2], vsubq_u8(c, vdupq_n_u8(128)));
        v = vqtbx4q_u8(v, quarters[3], vsubq_u8(c, vdupq_n_u8(192)));
        // SAFETY: `window_mut` checked the 16 bytes of `out`.
        unsafe { vst1q_u8(window_mut::<16>(out, q), v) };
        q += 16;
    }
    for q in q..n {
        out[q] = table[usize::from(codes[q])];
    }
}

/// The bit weight of each byte of an 8-byte group: ANDed with a compare's all-ones lanes and
/// summed by pairwise adds, 64 compares become the 64 bits of a mask.
const WEIGHTS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];

/// [`kernels::escape_masks`]: per 64 codes, four compares, an AND with the bit weights and
/// three rounds of pairwise adds give the mask.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn escape_masks(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
    masks.fill(0);
    let splat = vdupq_n_u8(escape);
    // SAFETY: `WEIGHTS` is 16 bytes.
    let weights = unsafe { vld1q_u8(WEIGHTS.as_ptr()) };
    let mut total = 0;
    for (chunk, mask) in codes.chunks_exact(64).zip(masks.iter_mut()) {
        // SAFETY: `chunks_exact` gives 64 bytes.
        let c = unsafe { vld1q_u8_x4(chunk.as_ptr()) };
        let bit = |v| vandq_u8(vceqq_u8(v, splat), weights);
        let s0 = vpaddq_u8(bit(c.0), bit(c.1));
        let s1 = vpaddq_u8(bit(c.2), bit(c.3));
        let s = vpaddq_u8(s0, s1);
        *mask = vgetq_lane_u64::<0>(vreinterpretq_u64_u8(vpaddq_u8(s, s)));
        total += mask.count_ones() as usize;
    }
    let whole = codes.len() / 64;
    let rest = &codes[64 * whole..];
    if let (false, Some(mask)) = (rest.is_empty(), masks.get_mut(whole)) {
        *mask = rest
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &c)| m | (u64::from(c == escape) << i));
        total += mask.count_ones() as usize;
    }
    total
}

/// Byte-shuffle patterns for the 256 masks of 8 lanes. Compression (`EXPAND == false`): the
/// first bytes are the positions of the set bits, ascending. Expansion: byte `q` is the number
/// of set bits below bit `q` when bit `q` is set (which value lands there), else 0x80 (out of
/// any table, so `tbx` keeps the old byte there, even with up to 8 added).
const fn shuffle_patterns<const EXPAND: bool>() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut m = 0;
    while m < 256 {
        let (mut q, mut k, mut pattern) = (0u64, 0u64, 0u64);
        while q < 8 {
            let set = m >> q & 1 != 0;
            if EXPAND {
                pattern |= (if set { k } else { 0x80 }) << (8 * q);
            } else if set {
                pattern |= q << (8 * k);
            }
            k += set as u64;
            q += 1;
        }
        table[m] = pattern;
        m += 1;
    }
    table
}

static COMPRESS: [u64; 256] = shuffle_patterns::<false>();
static EXPAND: [u64; 256] = shuffle_patterns::<true>();

/// The set bits of each 8-bit mask (a load beside the pattern's, where a count on the vector
/// unit would take four instructions and two register moves).
static COUNT: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        table[m] = (m as u8).count_ones() as u8;
        m += 1;
    }
    table
};

/// The `tbx` pattern that places the next values at the set bits of a 16-lane mask: the
/// upper 8 lanes' pattern offset by the lower 8's count.
#[target_feature(enable = "neon")]
#[inline]
fn expand_pattern(bits: u16) -> uint8x16_t {
    let (lo, hi) = (usize::from(bits as u8), usize::from(bits >> 8));
    let offset = 0x0101_0101_0101_0101u64 * u64::from((lo as u32).count_ones());
    vcombine_u8(
        vcreate_u8(EXPAND[lo]),
        vcreate_u8(EXPAND[hi].wrapping_add(offset)),
    )
}

/// [`kernels::expand`] on bytes, 16 lanes per step: one `tbx` of the next 16 values by the
/// mask's pattern places them, the lanes without a set bit keeping their bytes.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn expand(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
    let mut k = 0;
    let mut q = 0;
    let n = out.len();
    while q < n {
        let bits = (masks[q / 64] >> (q % 64)) as u16;
        if bits == 0 {
            // Nothing to place in these lanes.
        } else if q + 16 <= n && k + 16 <= values.len() {
            let o = window_mut::<16>(out, q);
            // SAFETY: `window` and `window_mut` checked the 16 bytes of `values` and `out`.
            unsafe {
                let v = vld1q_u8(window::<16>(values, k));
                vst1q_u8(o, vqtbx1q_u8(vld1q_u8(o), v, expand_pattern(bits)));
            }
        } else {
            let mut m = u32::from(bits);
            let mut j = k;
            while m != 0 {
                let lane = q + m.trailing_zeros() as usize;
                if lane < n {
                    out[lane] = values[j];
                }
                j += 1;
                m &= m - 1;
            }
        }
        k += bits.count_ones() as usize;
        q += 16;
    }
    k
}

/// [`kernels::compress`] on bytes, 8 lanes per step: one `tbl` moves the selected values to
/// the front and one 8-byte store appends them.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn compress(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
    let mut k = 0;
    let n = values.len();
    let mut q = 0;
    while q < n {
        let bits = (masks[q / 64] >> (q % 64)) as u8;
        if bits == 0 {
            // Nothing selected here.
        } else if q + 8 <= n && k + 8 <= out.len() {
            // SAFETY: `window` checked that the 8 bytes `values[q..q + 8]` exist.
            let v = unsafe { vld1_u8(window::<8>(values, q)) };
            let picked = vtbl1_u8(v, vcreate_u8(COMPRESS[usize::from(bits)]));
            // SAFETY: `window_mut` checked that the 8 bytes `out[k..k + 8]` exist.
            unsafe { vst1_u8(window_mut::<8>(out, k), picked) };
        } else {
            let mut m = bits;
            let mut j = k;
            while m != 0 {
                out[j] = values[q + m.trailing_zeros() as usize];
                j += 1;
                m &= m - 1;
            }
        }
        k += bits.count_ones() as usize;
        q += 8;
    }
    k
}

/// A frame's merge constants (FORMAT.md 4.2), for 16-bit lanes (2-byte elements) or 32-bit
/// lanes (4-byte ones), whose top bit is the sign's. The residual cut to its width (sign over
/// the live mantissa bits) and shifted left by the dead bits has its sign at bit `M`; adding
/// the sign times `2^E - 1` moves it to the top bit (`2^M (2^E - 1) = 2^(E+M) - 2^M`, one
/// multiply-add), and the exponent lands in between (another multiply-add): the portable
/// merge's bits exactly, for exponents below `2^E` (the decoder checks every symbol and queue
/// value against the exponent width). The shifts are multiplies by powers of two, which run
/// beside the unpacking's shifts on the other vector pipes.
struct Merge {
    /// `2^(1 + M - k) - 1`: the residual's bits.
    residual: u32,
    /// `2^k`: the shift by the dead bits.
    dead: u32,
    /// `2^M`: the shift of the exponent.
    exponent: u32,
    /// `2^M`: the sign's bit once shifted by the dead bits.
    sign_bit: u32,
    /// `2^E - 1`.
    sign_factor: u32,
}

impl Merge {
    fn new<const B: usize>(fields: &Fields) -> Merge {
        // The sign lands on the lane's top bit: bit 15 of a 2-byte element, 31 of a 4-byte one.
        debug_assert_eq!(fields.e + fields.m, 8 * B as u32 - 1);
        Merge {
            residual: (1u32 << fields.residual_bits()) - 1,
            dead: 1 << fields.k,
            exponent: 1 << fields.m,
            sign_bit: 1 << fields.m,
            sign_factor: (1 << fields.e) - 1,
        }
    }

    /// The 16 elements of 2-byte elements: exponents `x`, residuals `r` in 16-bit lanes.
    #[target_feature(enable = "neon")]
    #[inline]
    fn elements2(&self, x: uint8x16_t, r: [uint16x8_t; 2]) -> [uint16x8_t; 2] {
        let (residual, dead) = (
            vdupq_n_u16(self.residual as u16),
            vdupq_n_u16(self.dead as u16),
        );
        let (bit, factor) = (
            vdupq_n_u16(self.sign_bit as u16),
            vdupq_n_u16(self.sign_factor as u16),
        );
        let exponent = vdupq_n_u16(self.exponent as u16);
        let xs = [vmovl_u8(vget_low_u8(x)), vmovl_high_u8(x)];
        let merged = |x, r| {
            let r = vmulq_u16(vandq_u16(r, residual), dead);
            let u = vmlaq_u16(r, vandq_u16(r, bit), factor);
            vmlaq_u16(u, x, exponent)
        };
        [merged(xs[0], r[0]), merged(xs[1], r[1])]
    }

    /// The 16 elements of 4-byte elements: exponents `x`, residuals `r` in 32-bit lanes.
    #[target_feature(enable = "neon")]
    #[inline]
    fn elements4(&self, x: uint8x16_t, r: [uint32x4_t; 4]) -> [uint32x4_t; 4] {
        let (residual, dead) = (vdupq_n_u32(self.residual), vdupq_n_u32(self.dead));
        let (bit, factor) = (vdupq_n_u32(self.sign_bit), vdupq_n_u32(self.sign_factor));
        let exponent = vdupq_n_u32(self.exponent);
        let (x0, x1) = (vmovl_u8(vget_low_u8(x)), vmovl_high_u8(x));
        let xs = [
            vmovl_u16(vget_low_u16(x0)),
            vmovl_high_u16(x0),
            vmovl_u16(vget_low_u16(x1)),
            vmovl_high_u16(x1),
        ];
        let merged = |x, r| {
            let r = vmulq_u32(vandq_u32(r, residual), dead);
            let u = vmlaq_u32(r, vandq_u32(r, bit), factor);
            vmlaq_u32(u, x, exponent)
        };
        core::array::from_fn(|i| merged(xs[i], r[i]))
    }

    /// Merges 16 exponents `x` with the 16 residuals at `r` (`16 * B` bytes, lanes of `B`
    /// bytes) and stores the 16 elements at `out` (`16 * B` bytes).
    ///
    /// # Safety
    ///
    /// `r` is readable and `out` writable for `16 * B` bytes; the CPU has NEON.
    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn store16<const B: usize>(&self, x: uint8x16_t, r: *const u8, out: *mut u8) {
        // SAFETY: the caller gives the `16 * B` bytes at `r` and `out`.
        unsafe {
            if B == 2 {
                let (r, out) = (r.cast::<u16>(), out.cast::<u16>());
                let u = self.elements2(x, [vld1q_u16(r), vld1q_u16(r.add(8))]);
                vst1q_u16(out, u[0]);
                vst1q_u16(out.add(8), u[1]);
            } else {
                let (r, out) = (r.cast::<u32>(), out.cast::<u32>());
                let u = self.elements4(x, core::array::from_fn(|i| vld1q_u32(r.add(4 * i))));
                for (i, u) in u.into_iter().enumerate() {
                    vst1q_u32(out.add(4 * i), u);
                }
            }
        }
    }
}

/// [`kernels::merge_store`] (`L` is `u16` for `B == 2`, `u32` for `B == 4`): 16 elements per
/// step, the last few by the portable loop.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn merge<const B: usize, L: Lane>(fields: &Fields, x: &[u8], r: &[L], out: &mut [u8]) {
    let merge = Merge::new::<B>(fields);
    let n = x.len().min(r.len()).min(out.len() / B);
    let rb: &[u8] = bytemuck::cast_slice(&r[..n]);
    let blocks = out[..B * n]
        .chunks_exact_mut(16 * B)
        .zip(x[..n].chunks_exact(16))
        .zip(rb.chunks_exact(16 * B));
    for ((o, xs), rs) in blocks {
        // SAFETY: `xs` is 16 bytes; `rs` and `o` are the `16 * B` bytes `store16` reads and
        // writes (the pointers come from them whole); a `Neon` token got us here.
        unsafe {
            let xv = vld1q_u8(xs.as_ptr());
            merge.store16::<B>(xv, rs.as_ptr(), o.as_mut_ptr());
        }
    }
    let q = n / 16 * 16;
    kernels::merge_store::<B, L>(fields, &x[q..n], &r[q..n], &mut out[B * q..B * n]);
}

/// [`kernels::resolve_store`] for tables of at most 16 symbols (`table`, zero past them), with
/// the residuals unpacked: per 16 elements one `tbl` looks the codes up, one `tbx` places the
/// next `deeper` exponents at the escapes, and the merge stores them, without a pass over
/// memory between; the last few elements (and escapes without 16 readable bytes of `deeper`)
/// go one at a time.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn resolve<const B: usize, L: Lane>(
    fields: &Fields,
    codes: &[u8],
    table: &[u8; 16],
    masks: &[u64],
    deeper: &[u8],
    r: &[L],
    out: &mut [u8],
) {
    let merge = Merge::new::<B>(fields);
    // SAFETY: `table` is 16 bytes.
    let lut = unsafe { vld1q_u8(table.as_ptr()) };
    let n = codes.len().min(r.len()).min(out.len() / B);
    let rb: &[u8] = bytemuck::cast_slice(&r[..n]);
    let (mut q, mut k) = (0, 0);
    // Whole steps while the queue has 16 readable bytes: no branch (a mask without set bits
    // has a pattern that keeps every lane).
    while q + 16 <= n && k + 16 <= deeper.len() {
        let bits = masks.get(q / 64).map_or(0, |m| (m >> (q % 64)) as u16);
        // SAFETY: `window` checked the 16 bytes of `codes` and of `deeper`; `rb` and `out` hold
        // the `16 * B` bytes of these 16 elements (`q + 16 <= n`).
        unsafe {
            let x = vqtbl1q_u8(lut, vld1q_u8(window::<16>(codes, q)));
            let v = vld1q_u8(window::<16>(deeper, k));
            let x = vqtbx1q_u8(x, v, expand_pattern(bits));
            let rs = rb[B * q..B * (q + 16)].as_ptr();
            let o = out[B * q..B * (q + 16)].as_mut_ptr();
            merge.store16::<B>(x, rs, o);
        }
        k += bits.count_ones() as usize;
        q += 16;
    }
    // The rest (the queue's last bytes, the last elements) one step at a time.
    while q < n {
        let len = (n - q).min(16);
        let bits = masks.get(q / 64).map_or(0, |m| (m >> (q % 64)) as u16);
        let mut x = [0u8; 16];
        for (x, &c) in x.iter_mut().zip(&codes[q..q + len]) {
            *x = table.get(usize::from(c)).copied().unwrap_or(0);
        }
        let mut xv = if len == 16 {
            // SAFETY: `window` checked the 16 bytes of `codes`.
            vqtbl1q_u8(lut, unsafe { vld1q_u8(window::<16>(codes, q)) })
        } else {
            // SAFETY: `x` is 16 bytes.
            unsafe { vld1q_u8(x.as_ptr()) }
        };
        if bits != 0 {
            if k + 16 <= deeper.len() {
                // SAFETY: `window` checked the 16 bytes of `deeper`.
                let v = unsafe { vld1q_u8(window::<16>(deeper, k)) };
                xv = vqtbx1q_u8(xv, v, expand_pattern(bits));
            } else {
                // SAFETY: `x` is 16 bytes.
                unsafe { vst1q_u8(x.as_mut_ptr(), xv) };
                let (mut m, mut j) = (u32::from(bits), k);
                while m != 0 {
                    x[m.trailing_zeros() as usize] = deeper[j];
                    j += 1;
                    m &= m - 1;
                }
                // SAFETY: `x` is 16 bytes.
                xv = unsafe { vld1q_u8(x.as_ptr()) };
            }
            k += bits.count_ones() as usize;
        }
        if len == 16 {
            // SAFETY: `rb` and `out` hold the `16 * B` bytes of these 16 elements (`q + 16 <= n`).
            unsafe {
                let rs = rb[B * q..B * (q + 16)].as_ptr();
                let o = out[B * q..B * (q + 16)].as_mut_ptr();
                merge.store16::<B>(xv, rs, o);
            }
        } else {
            // SAFETY: `x` is 16 bytes.
            unsafe { vst1q_u8(x.as_mut_ptr(), xv) };
            kernels::merge_store::<B, L>(fields, &x[..len], &r[q..n], &mut out[B * q..B * n]);
        }
        q += 16;
    }
}

/// [`kernels::split_load`] of 2-byte elements into 16-bit residuals, 16 elements per step:
/// the exponents narrowed to bytes, the residuals as sign over the live mantissa bits.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn split16(fields: &Fields, input: &[u8], x: &mut [u8], r: &mut [u16]) {
    let n = x.len().min(r.len()).min(input.len() / 2);
    let (m, k, live) = (fields.m, fields.k, fields.m - fields.k);
    let top = fields.e + fields.m;
    let exponent = vdupq_n_u16(((1u32 << fields.e) - 1) as u16);
    let mantissa = vdupq_n_u16(((1u32 << fields.m) - 1) as u16);
    let (right_m, right_top) = (vdupq_n_s16(-(m as i16)), vdupq_n_s16(-(top as i16)));
    let (left_live, right_k) = (vdupq_n_s16(live as i16), vdupq_n_s16(-(k as i16)));
    let mut q = 0;
    while q + 16 <= n {
        let p = window::<32>(input, 2 * q).cast::<u16>();
        // SAFETY: `window` checked the 32 bytes of these 16 elements.
        let u = unsafe { [vld1q_u16(p), vld1q_u16(p.add(8))] };
        let e = |u| vmovn_u16(vandq_u16(vshlq_u16(u, right_m), exponent));
        // SAFETY: `window_mut` checked the 16 bytes of `x`.
        unsafe { vst1q_u8(window_mut::<16>(x, q), vcombine_u8(e(u[0]), e(u[1]))) };
        for (half, u) in u.into_iter().enumerate() {
            let sign = vshlq_u16(vshlq_u16(u, right_top), left_live);
            let rv = vorrq_u16(sign, vshlq_u16(vandq_u16(u, mantissa), right_k));
            let at = q + 8 * half;
            let o = r[at..at + 8].as_mut_ptr();
            // SAFETY: `o` points at the 8 lanes `r[at..at + 8]`.
            unsafe { vst1q_u16(o, rv) };
        }
        q += 16;
    }
    kernels::split_load::<2, u16>(fields, &input[2 * q..2 * n], &mut x[q..n], &mut r[q..n]);
}

/// The `tbx` pattern that places the next queued exponents at the lanes of `c` equal to
/// `escapes`, and how many those are. The escape mask's two bytes come from the weighted
/// flags of each half summed by a multiply on the integer unit (distinct bits: no carry
/// between the bytes' partial sums), where pairwise adds on the vector unit took a chain of
/// six; the counts come from a table.
#[target_feature(enable = "neon")]
#[inline]
fn escape_pattern(c: uint8x16_t, escapes: uint8x16_t, weights: uint8x16_t) -> (uint8x16_t, usize) {
    const SUM: u64 = 0x0101_0101_0101_0101;
    let m = vreinterpretq_u64_u8(vandq_u8(vceqq_u8(c, escapes), weights));
    let lo = (vgetq_lane_u64::<0>(m).wrapping_mul(SUM) >> 56) as usize;
    let hi = (vgetq_lane_u64::<1>(m).wrapping_mul(SUM) >> 56) as usize;
    let (low_count, high_count) = (COUNT[lo], COUNT[hi]);
    let pattern = vcombine_u8(
        vcreate_u8(EXPAND[lo]),
        vcreate_u8(EXPAND[hi].wrapping_add(SUM * u64::from(low_count))),
    );
    (pattern, usize::from(low_count + high_count))
}

/// Where a chunk's values lie in one sub-plane, for the one-pass step: the byte offset of the
/// chunk's first word, and the shifts and mask that make a word a lane's bits (right by
/// `take`, mask, left by `place`; a sub-plane above the lane has mask 0, as the portable
/// unpacking cuts it).
#[derive(Clone, Copy, Default)]
struct ChunkSub {
    at: usize,
    take: i16,
    place: i16,
    mask: u16,
}

/// The chunk's [`ChunkSub`]s of `plane` for its `blocks` values from `start` in lanes of
/// `lane_bits`, when each sub-plane holds them in one run of words inside `frame`; else None.
fn chunk_subs<const N: usize>(
    frame: &[u8],
    plane: &Plane,
    start: usize,
    blocks: usize,
    lane_bits: u32,
) -> Option<[ChunkSub; N]> {
    let subs = plane.subs();
    if subs.len() != N {
        return None;
    }
    let mut out = [ChunkSub::default(); N];
    for (o, sub) in out.iter_mut().zip(subs) {
        let run = sub.runs(start, blocks).next()?;
        let at = sub.offset + 2 * run.word;
        if run.len < blocks || at + 2 * blocks > frame.len() {
            return None;
        }
        let inside = sub.shift < lane_bits;
        *o = ChunkSub {
            at,
            take: run.bit as i16,
            place: if inside { sub.shift as i16 } else { 0 },
            mask: if inside {
                ((1u32 << sub.bits) - 1) as u16
            } else {
                0
            },
        };
    }
    Some(out)
}

/// The fields of 16 values of a sub-plane (the 16 words at `p`) in two registers of 16-bit
/// lanes: shifted right by `take`, masked, shifted left by `place` where `placed` (a plane's
/// first sub-plane sits at bit 0 of its values: no shift there).
///
/// # Safety
///
/// `p` is readable for 32 bytes; the CPU has NEON.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn fields16(p: *const u8, sub: &ChunkSub, placed: bool) -> [uint16x8_t; 2] {
    let (take, mask) = (vdupq_n_s16(-sub.take), vdupq_n_u16(sub.mask));
    let place = vdupq_n_s16(sub.place);
    let p = p.cast::<u16>();
    // SAFETY: the caller gives the 32 bytes at `p`.
    let w = unsafe { [vld1q_u16(p), vld1q_u16(p.add(8))] };
    w.map(|w| {
        let f = vandq_u16(vshlq_u16(w, take), mask);
        if placed {
            vshlq_u16(f, place)
        } else {
            f
        }
    })
}

/// The 8-bit codes of values `q .. q + 16` from the words of their sub-planes `subs`.
///
/// # Safety
///
/// Every sub-plane's 32 bytes from `fp + sub.at + 2 q` are readable; the CPU has NEON.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn codes16(fp: *const u8, subs: &[ChunkSub], q: usize) -> uint8x16_t {
    let mut c = vdupq_n_u8(0);
    for (i, sub) in subs.iter().enumerate() {
        // SAFETY: the caller gives these 32 bytes.
        let [a, b] = unsafe { fields16(fp.add(sub.at + 2 * q), sub, i > 0) };
        c = vorrq_u8(
            c,
            vuzp1q_u8(vreinterpretq_u8_u16(a), vreinterpretq_u8_u16(b)),
        );
    }
    c
}

/// Elements `q .. q + 16`: their residuals from the words of the sub-planes `subs`, merged
/// with their exponent bytes `x`, stored at `o` (the chunk's output, `B` bytes an element).
///
/// # Safety
///
/// As [`codes16`] for `subs`; `o` is writable for `B * (q + 16)` bytes; the CPU has NEON.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn merge_store16<const B: usize>(
    merge: &Merge,
    x: uint8x16_t,
    fp: *const u8,
    subs: &[ChunkSub],
    q: usize,
    o: *mut u8,
) {
    // SAFETY: the caller gives the sub-planes' 32 bytes at `q` and the output's `16 * B` bytes
    // at element `q`.
    unsafe {
        if B == 2 {
            let mut r = [vdupq_n_u16(0); 2];
            for (i, sub) in subs.iter().enumerate() {
                let f = fields16(fp.add(sub.at + 2 * q), sub, i > 0);
                r = [vorrq_u16(r[0], f[0]), vorrq_u16(r[1], f[1])];
            }
            let u = merge.elements2(x, r);
            let o = o.add(2 * q).cast::<u16>();
            vst1q_u16(o, u[0]);
            vst1q_u16(o.add(8), u[1]);
        } else {
            let mut r = [vdupq_n_u32(0); 4];
            for sub in subs {
                // The fields cut to 16 bits, widened, then placed in 32-bit lanes.
                let [a, b] = fields16(fp.add(sub.at + 2 * q), sub, false);
                let place = vdupq_n_s32(i32::from(sub.place));
                let wide = [
                    vmovl_u16(vget_low_u16(a)),
                    vmovl_high_u16(a),
                    vmovl_u16(vget_low_u16(b)),
                    vmovl_high_u16(b),
                ];
                for (r, w) in r.iter_mut().zip(wide) {
                    *r = vorrq_u32(*r, vshlq_u32(w, place));
                }
            }
            let u = merge.elements4(x, r);
            let o = o.add(4 * q).cast::<u32>();
            for (i, u) in u.into_iter().enumerate() {
                vst1q_u32(o.add(4 * i), u);
            }
        }
    }
}

/// [`Isa::ranked_chunk`] in one pass per 16 elements, for chunks whose code plane (1 or 2
/// sub-planes, codes below 16) and residual plane (`R` sub-planes) lie in one run of words
/// each: the codes from the plane's words, the escapes by compare (their mask by bit weights
/// and pairwise adds), one `tbl` lookup and one `tbx` of the queue's next exponents, the
/// residuals from their words, the merge and the store; the output hashed after the chunk's
/// whole blocks. The last elements short of 64, and chunks of other shapes, take the separate
/// steps. Returns None, as they do, when the codes escape more than `deeper` holds (the output
/// may then be written in part).
#[target_feature(enable = "neon")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) fn ranked_chunk_neon<const B: usize, L: Lane, const C: usize, const R: usize>(
    isa: Neon,
    fields: &Fields,
    frame: &[u8],
    plane: &Plane,
    residual: &Plane,
    start: usize,
    table: &[u8; MAX_SYMBOLS],
    escape: u8,
    deeper: Escapes<'_>,
    out: &mut [u8],
    mut hash: Option<&mut H32>,
) -> Option<usize> {
    let n = (out.len() / B).min(kernels::CHUNK);
    let blocks = n / 64 * 64;
    let steps = |start, deeper, out: &mut [u8], hash| {
        ranked_chunk_steps::<B, L, Neon>(
            isa, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
        )
    };
    let codes = chunk_subs::<C>(frame, plane, start, blocks, 8);
    let residuals = chunk_subs::<R>(frame, residual, start, blocks, L::BITS);
    let aligned = hash
        .as_ref()
        .is_none_or(|h| h.len.is_multiple_of(crate::checksum::BLOCK));
    // 16 readable queue bytes past every exponent a step can start at (`k <= count`).
    let queue = deeper.values.len() >= deeper.count + 16;
    let (Some(codes), Some(residuals), true, true, true) =
        (codes, residuals, aligned, queue, blocks > 0 && escape < 16)
    else {
        return steps(start, deeper, out, hash);
    };
    let merge = Merge::new::<B>(fields);
    let mut small = [0u8; 16];
    small[..usize::from(escape)].copy_from_slice(&table[..usize::from(escape)]);
    // SAFETY: `small` and `WEIGHTS` are 16 bytes.
    let (lut, weights) = unsafe { (vld1q_u8(small.as_ptr()), vld1q_u8(WEIGHTS.as_ptr())) };
    let escapes = vdupq_n_u8(escape);
    let (fp, queue) = (frame.as_ptr(), deeper.values.as_ptr());
    let o = out[..B * blocks].as_mut_ptr();
    let mut k = 0;
    for q in (0..blocks).step_by(16) {
        // SAFETY: `chunk_subs` checked that every sub-plane's words for the `blocks` values lie
        // in `frame` (these are 16 of them); `k <= deeper.count` and the queue has 16 readable
        // bytes past its count; `out` holds `B * blocks` bytes, of which these are `16 * B`.
        unsafe {
            let c = codes16(fp, &codes, q);
            let (pattern, count) = escape_pattern(c, escapes, weights);
            let x = vqtbl1q_u8(lut, c);
            let x = vqtbx1q_u8(x, vld1q_u8(queue.add(k)), pattern);
            k += count;
            if k > deeper.count {
                return None;
            }
            merge_store16::<B>(&merge, x, fp, &residuals, q, o);
        }
    }
    if let Some(hash) = hash.as_deref_mut() {
        hash.update(&out[..B * blocks]);
    }
    let rest = Escapes {
        values: &deeper.values[k..],
        count: deeper.count - k,
    };
    let taken = steps(start + blocks, rest, &mut out[B * blocks..B * n], hash)?;
    Some(k + taken)
}

/// [`Isa::level_chunk`] in one pass per 16 entries, for code planes of `C` sub-planes (codes
/// below 16) whose entries of the chunk lie in one run of words each: the codes from the
/// plane's words, the escapes by compare, one `tbl` lookup and one `tbx` of the queue's next
/// exponents, the store. The last entries short of 16, and other chunks, take the separate
/// steps. Returns None, as they do, when the codes escape more than `deeper` holds (the output
/// may then be written in part).
#[target_feature(enable = "neon")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) fn level_chunk_neon<const C: usize>(
    isa: Neon,
    frame: &[u8],
    plane: &Plane,
    start: usize,
    table: &[u8; MAX_SYMBOLS],
    escape: u8,
    deeper: Escapes<'_>,
    out: &mut [u8],
) -> Option<usize> {
    let n = out.len().min(kernels::CHUNK);
    let blocks = n / 16 * 16;
    let codes = chunk_subs::<C>(frame, plane, start, blocks, 8);
    // 16 readable queue bytes past every exponent a step can start at (`k <= count`).
    let queue = deeper.values.len() >= deeper.count + 16;
    let (Some(codes), true, true) = (codes, queue, blocks > 0 && escape < 16) else {
        return level_chunk_steps(isa, frame, plane, start, table, escape, deeper, out);
    };
    let mut small = [0u8; 16];
    small[..usize::from(escape)].copy_from_slice(&table[..usize::from(escape)]);
    // SAFETY: `small` and `WEIGHTS` are 16 bytes.
    let (lut, weights) = unsafe { (vld1q_u8(small.as_ptr()), vld1q_u8(WEIGHTS.as_ptr())) };
    let escapes = vdupq_n_u8(escape);
    let (fp, queue) = (frame.as_ptr(), deeper.values.as_ptr());
    let o = out[..blocks].as_mut_ptr();
    let mut k = 0;
    for q in (0..blocks).step_by(16) {
        // SAFETY: `chunk_subs` checked that every sub-plane's words for the `blocks` entries lie
        // in `frame` (these are 16 of them); `k <= deeper.count` and the queue has 16 readable
        // bytes past its count; `out` holds `blocks` bytes, of which these are 16.
        unsafe {
            let c = codes16(fp, &codes, q);
            let (pattern, count) = escape_pattern(c, escapes, weights);
            let x = vqtbx1q_u8(vqtbl1q_u8(lut, c), vld1q_u8(queue.add(k)), pattern);
            k += count;
            if k > deeper.count {
                return None;
            }
            vst1q_u8(o.add(q), x);
        }
    }
    let rest = Escapes {
        values: &deeper.values[k..],
        count: deeper.count - k,
    };
    let (start, out) = (start + blocks, &mut out[blocks..n]);
    let taken = level_chunk_steps(isa, frame, plane, start, table, escape, rest, out)?;
    Some(k + taken)
}

/// [`Isa::groups_chunk`] in one pass per 16 elements, for chunks whose low plane (`C`
/// sub-planes) and residual plane (`R`) lie in one run of words each: the low bits from the
/// plane's words, the flagged lanes' high bits placed from the queue by one `tbl` (the
/// flags' pattern, zero elsewhere) and shifted above them, the inverse transform in bytes,
/// the residuals from their words, the merge and the store; the output's whole blocks hashed
/// after the chunk (the caller follows the rest). The last elements short of 64, and chunks
/// of other shapes, take the separate steps. Returns None, as they do and before writing,
/// when the flags ask for more than `highs` holds.
#[target_feature(enable = "neon")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) fn groups_chunk_neon<const B: usize, L: Lane, const C: usize, const R: usize>(
    isa: Neon,
    fields: &Fields,
    frame: &[u8],
    low: &Plane,
    residual: &Plane,
    start: usize,
    params: &GroupsParams,
    flags: &[u64],
    highs: Escapes<'_>,
    out: &mut [u8],
    hash: Option<&mut H32>,
) -> Option<usize> {
    let n = (out.len() / B).min(kernels::CHUNK);
    let blocks = n / 64 * 64;
    let steps = |start, highs, flags: &[u64], out: &mut [u8]| {
        groups_chunk_steps::<B, L, Neon>(
            isa, fields, frame, low, residual, start, params, flags, highs, out,
        )
    };
    let codes = chunk_subs::<C>(frame, low, start, blocks, 8);
    let residuals = chunk_subs::<R>(frame, residual, start, blocks, L::BITS);
    // 16 readable queue bytes past every value a step can start at (`k <= count`).
    let queue = highs.values.len() >= highs.count + 16;
    let whole = flags.len() >= blocks / 64 && params.width >= 1;
    let (Some(codes), Some(residuals), true, true, true) =
        (codes, residuals, queue, whole, blocks > 0)
    else {
        return steps(start, highs, flags, out);
    };
    // The flags of the `n` elements alone, counted first: too few high values write nothing.
    let flagged = (0..n.div_ceil(64))
        .map(|i| {
            let keep = (n - 64 * i).min(64) as u32;
            let f = flags.get(i).copied().unwrap_or(0);
            (f & u64::MAX.checked_shr(64 - keep).unwrap_or(0)).count_ones() as usize
        })
        .sum::<usize>();
    if flagged > highs.count {
        return None;
    }
    let merge = Merge::new::<B>(fields);
    let bytes = kernels::GroupsBytes::new(params.base.into(), params.width.into(), fields.e);
    let (half, base_half) = (vdupq_n_u8(bytes.half), vdupq_n_u8(bytes.base_half));
    let exponent_mask = vdupq_n_u8(bytes.mask);
    // As `wrapping_shl` on bytes: the shift taken modulo 8.
    let high_shift = vdupq_n_s8((params.low & 7) as i8);
    let (fp, queue) = (frame.as_ptr(), highs.values.as_ptr());
    let o = out[..B * blocks].as_mut_ptr();
    let mut k = 0;
    for q in (0..blocks).step_by(16) {
        let bits = (flags[q / 64] >> (q % 64)) as u16;
        let (lo, hi) = (usize::from(bits as u8), usize::from(bits >> 8));
        let low_count = COUNT[lo];
        // SAFETY: `chunk_subs` checked that every sub-plane's words for the `blocks` values lie
        // in `frame` (these are 16 of them); `k <= flagged <= highs.count` and the queue has 16
        // readable bytes past its count; `out` holds `B * blocks` bytes, of which these are
        // `16 * B`.
        unsafe {
            let y = codes16(fp, &codes, q);
            let pattern = vcombine_u8(
                vcreate_u8(EXPAND[lo]),
                vcreate_u8(EXPAND[hi].wrapping_add(0x0101_0101_0101_0101 * u64::from(low_count))),
            );
            let high = vqtbl1q_u8(vld1q_u8(queue.add(k)), pattern);
            let y = vorrq_u8(y, vshlq_u8(high, high_shift));
            let x = vandq_u8(vsubq_u8(base_half, veorq_u8(y, half)), exponent_mask);
            k += usize::from(low_count + COUNT[hi]);
            merge_store16::<B>(&merge, x, fp, &residuals, q, o);
        }
    }
    if let Some(hash) = hash {
        hash.update(&out[..B * blocks]);
    }
    let rest = Escapes {
        values: &highs.values[k..],
        count: highs.count - k,
    };
    let taken = steps(
        start + blocks,
        rest,
        &flags[blocks / 64..],
        &mut out[B * blocks..B * n],
    )?;
    Some(k + taken)
}
