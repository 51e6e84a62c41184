//! The x86_64 kernels: the [`Avx2`] token (what [`Avx2::detect`] found, and which kernels each
//! [`Isa`] method runs), and what the AVX2 and AVX-512 kernels share: bounds-checked windows
//! into slices, the runs of a plane's words, the statistics' scalar rest.
//!
//! - [`avx2`]: the kernels for every CPU with AVX2 (and BMI1/2, LZCNT, POPCNT).
//! - [`avx512`]: 512-bit versions of the hottest ones, where the CPU has AVX-512
//!   (F/BW/VL/VBMI/VBMI2/BITALG with GFNI).
//! - [`words`]: where a chunk's planes lie in the frame, for the one-pass decoder steps.

// Every kernel is an `unsafe fn` whose `# Safety` section names the CPU features it needs and
// the ranges its pointer steps touch. Value intrinsics are safe under the kernel's
// `target_feature`; pointer loads and stores and calls of other kernels sit in `unsafe` blocks:
// one around the step itself where the slices give the bound, else one over the body whose
// SAFETY note ties the contract to the caller, with a note at each pointer step for its bound.
mod avx2;
mod avx512;
mod words;

use avx2::*;
use avx512::*;
use words::*;

use super::*;
use crate::checksum;
use crate::format::plane::Run;
use crate::kernels::GroupsBytes;
use core::arch::x86_64::*;

/// AVX2 (with BMI1/2, LZCNT, POPCNT) kernels; only [`Avx2::detect`] makes one. Where the
/// CPU also has AVX-512 (F, BW, VL, VBMI, VBMI2, BITALG, with GFNI), the hottest kernels use
/// it (module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2 {
    avx512: bool,
}

impl Avx2 {
    /// The token, when this CPU has every feature the kernels are compiled for. The
    /// environment variable `ENEC_NO_AVX512=1` keeps the AVX-512 step off (to compare).
    pub(crate) fn detect() -> Option<Avx2> {
        let has = std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("lzcnt")
            && std::is_x86_feature_detected!("popcnt");
        let avx512 = std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512vbmi")
            && std::is_x86_feature_detected!("avx512vbmi2")
            && std::is_x86_feature_detected!("avx512bitalg")
            && std::is_x86_feature_detected!("gfni")
            && std::env::var_os("ENEC_NO_AVX512").is_none_or(|v| v != "1");
        has.then_some(Avx2 { avx512 })
    }

    /// Whether the AVX-512 step is in use.
    pub(crate) fn avx512(self) -> bool {
        self.avx512
    }

    /// The same token with the AVX-512 step off (tests compare both paths).
    #[cfg(test)]
    pub(crate) fn without_avx512(self) -> Avx2 {
        Avx2 { avx512: false }
    }
}

// SAFETY (every `unsafe` block in this impl): an `Avx2` value exists only when `detect` found
// the CPU features the called functions are compiled for.
impl Isa for Avx2 {
    #[inline(always)]
    fn unpack<L: Lane>(self, frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
        if self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { unpack512(frame, plane, start, out) }
        } else {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { unpack(frame, plane, start, out) }
        }
    }

    #[inline(always)]
    fn pack<L: Lane>(self, frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
        if self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { pack512(frame, plane, start, values) }
        } else {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { pack(frame, plane, start, values) }
        }
    }

    #[inline(always)]
    fn compress(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        if self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { compress512(masks, values, out) }
        } else {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { compress(masks, values, out) }
        }
    }

    #[inline(always)]
    fn exponent_stats<const B: usize>(
        self,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        stats: &mut FrameStats,
        hash: Option<&mut H32>,
    ) {
        let mut hash = hash;
        let n = x.len().min(input.len() / B);
        // A frame's first elements choose the values the vector kernel counts: whole h32
        // blocks of them (128 1-byte elements), so that the vector kernel hashes on from a
        // block boundary.
        let sample = kernels::SAMPLE.next_multiple_of(checksum::BLOCK / B);
        let sample = sample.saturating_sub(stats.counted).min(n);
        if sample > 0 {
            let (input, x) = (&input[..B * sample], &mut x[..sample]);
            Portable.exponent_stats::<B>(fields, input, x, stats, hash.as_deref_mut());
        }
        // (A frame shorter than the sample is done: its hash takes no more pieces.)
        if sample == n {
            return;
        }
        let (input, x) = (&input[B * sample..B * n], &mut x[sample..n]);
        match stats.frequent() {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            Some(first) if self.avx512 => unsafe {
                exponent_stats512::<B>(fields, input, x, first, stats, hash)
            },
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            Some(first) => unsafe {
                exponent_stats_avx2::<B>(fields, input, x, first, stats, hash)
            },
            None => Portable.exponent_stats::<B>(fields, input, x, stats, hash),
        }
    }

    #[inline(always)]
    fn rank_codes(self, x: &[u8], level: &LevelCodes, out: &mut [u8]) {
        if level.symbols.len() <= 16 {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { rank_codes16(x, level, out) }
        } else {
            kernels::rank_codes(x, level, out)
        }
    }

    #[inline(always)]
    fn level_codes(
        self,
        x: &[u8],
        level: &LevelCodes,
        codes: &mut [u8],
        escaped: &mut [u8],
    ) -> usize {
        if self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { level_codes512(x, level, codes, escaped) }
        } else {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { level_codes_avx2(self, x, level, codes, escaped) }
        }
    }

    #[inline(always)]
    fn split_load<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        r: &mut [L],
    ) {
        if B == 2 && L::BITS == 16 && self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { split16_512(fields, input, x, bytemuck::cast_slice_mut(r)) }
        } else if B == 2 && L::BITS == 16 {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { split16(fields, input, x, bytemuck::cast_slice_mut(r)) }
        } else {
            kernels::split_load::<B, L>(fields, input, x, r)
        }
    }

    #[inline(always)]
    fn split_pack<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        r: &mut [L],
        frame: &mut [u8],
        plane: &Plane,
        start: usize,
    ) {
        match (B, L::BITS) {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            (1, 8) if self.avx512 => unsafe {
                split_pack8_512::<L>(self, fields, input, x, r, frame, plane, start)
            },
            // (2-byte elements with AVX-512 too: this fused step beats `split16_512` then
            // `pack512`.)
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            (1, 8) | (2, 16) => unsafe {
                split_pack16::<B, L>(self, fields, input, x, r, frame, plane, start)
            },
            _ => split_pack_steps::<B, L, Self>(self, fields, input, x, r, frame, plane, start),
        }
    }

    #[inline(always)]
    fn pack_residuals<const B: usize>(
        self,
        fields: &Fields,
        input: &[u8],
        frame: &mut [u8],
        plane: &Plane,
    ) -> bool {
        // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
        B == 1 && self.avx512 && unsafe { pack_residuals8_512(fields, input, frame, plane) }
    }

    #[inline(always)]
    fn exponents<const B: usize>(self, fields: &Fields, input: &[u8], x: &mut [u8]) {
        if B == 1 && self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { exponents8_512(fields, input, x) }
        } else {
            kernels::exponents::<B>(fields, input, x)
        }
    }

    #[inline(always)]
    fn lookup(self, codes: &[u8], table: &[u8; MAX_SYMBOLS], symbols: usize, out: &mut [u8]) {
        if symbols <= 16 {
            // Codes at or past `symbols` read zero, as in the portable version.
            let mut small = [0u8; 16];
            small[..symbols].copy_from_slice(&table[..symbols]);
            if self.avx512 {
                // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
                unsafe { lookup16_512(codes, &small, out) }
            } else {
                // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
                unsafe { lookup16(codes, &small, out) }
            }
        } else {
            kernels::lookup(codes, table, symbols, out)
        }
    }

    #[inline(always)]
    fn escape_masks(self, codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
        if self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { escape_masks512(codes, escape, masks) }
        } else {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { escape_masks(codes, escape, masks) }
        }
    }

    #[inline(always)]
    fn expand(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        if self.avx512 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { expand512(masks, values, out) }
        } else {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { expand(masks, values, out) }
        }
    }

    #[inline(always)]
    fn resolve_store<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        frame: &[u8],
        residual: &Plane,
        start: usize,
        codes: &[u8],
        table: &[u8; MAX_SYMBOLS],
        symbols: usize,
        masks: &[u64],
        deeper: &[u8],
        out: &mut [u8],
    ) {
        match (B, L::BITS) {
            (2, 16) | (4, 32) if symbols <= 16 => {
                // Codes at or past `symbols` read zero, as in the portable version.
                let mut small = [0u8; 16];
                small[..symbols].copy_from_slice(&table[..symbols]);
                // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
                unsafe {
                    resolve_store::<B, L>(
                        fields, frame, residual, start, codes, &small, masks, deeper, out,
                    )
                }
            }
            // Larger tables (rare): the portable step.
            _ => Portable.resolve_store::<B, L>(
                fields, frame, residual, start, codes, table, symbols, masks, deeper, out,
            ),
        }
    }

    #[inline(always)]
    fn groups_unflagged(
        self,
        ranges: &GroupRanges,
        first: u32,
        candidates: usize,
        widest: u32,
    ) -> [[u32; 9]; GROUPS_BASES] {
        let candidates = candidates.min(GROUPS_BASES);
        if self.avx512 && widest <= 3 && first as usize + candidates <= 256 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { groups_unflagged512(ranges, first, candidates, widest) }
        } else {
            ranges.unflagged(first, candidates)
        }
    }

    #[inline(always)]
    fn prefetch(self, bytes: &[u8]) {
        let mut at = 0;
        while at < bytes.len() {
            // SAFETY: a prefetch is a hint; the address is inside `bytes` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(at).cast()) };
            at += 64;
        }
    }

    #[inline(always)]
    fn ranked_chunk<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        frame: &[u8],
        plane: &Plane,
        residual: &Plane,
        start: usize,
        table: &[u8; MAX_SYMBOLS],
        escape: u8,
        deeper: Escapes<'_>,
        out: &mut [u8],
        hash: Option<&mut H32>,
        streaming: bool,
    ) -> Option<usize> {
        match (B, L::BITS) {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            (1, 8) | (2, 16) | (4, 32) if self.avx512 && escape < 16 => unsafe {
                ranked_chunk512::<B, L>(
                    self, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
                    streaming,
                )
            },
            // Through the cache even when `streaming` asks otherwise: without AVX-512 the
            // non-temporal stores gain nothing on one thread and lose on two.
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            (1, 8) | (2, 16) | (4, 32) if escape < 16 => unsafe {
                ranked_chunk_avx2::<B, L>(
                    self, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
                )
            },
            _ => ranked_chunk_steps::<B, L, Self>(
                self, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
            ),
        }
    }

    #[inline(always)]
    fn level_chunk(
        self,
        frame: &[u8],
        plane: &Plane,
        start: usize,
        table: &[u8; MAX_SYMBOLS],
        escape: u8,
        deeper: Escapes<'_>,
        out: &mut [u8],
    ) -> Option<usize> {
        if self.avx512 && escape < 16 {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            unsafe { level_chunk512(self, frame, plane, start, table, escape, deeper, out) }
        } else if escape < 16 {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            unsafe { level_chunk_avx2(self, frame, plane, start, table, escape, deeper, out) }
        } else {
            level_chunk_steps(self, frame, plane, start, table, escape, deeper, out)
        }
    }

    #[inline(always)]
    fn groups_chunk<const B: usize, L: Lane>(
        self,
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
        streaming: bool,
    ) -> Option<usize> {
        match (B, L::BITS) {
            // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
            (2, 16) | (4, 32) if self.avx512 => unsafe {
                groups_chunk512::<B, L>(
                    self, fields, frame, low, residual, start, params, flags, highs, out, hash,
                    streaming,
                )
            },
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            (2, 16) | (4, 32) => unsafe {
                groups_chunk_avx2::<B, L>(
                    self, fields, frame, low, residual, start, params, flags, highs, out, hash,
                )
            },
            _ => groups_chunk_steps::<B, L, Self>(
                self, fields, frame, low, residual, start, params, flags, highs, out,
            ),
        }
    }

    #[inline(always)]
    fn merge_store<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        x: &[u8],
        r: &[L],
        out: &mut [u8],
    ) {
        match (B, L::BITS) {
            // SAFETY: an `Avx2` exists only where `detect` found AVX2, BMI1/2, LZCNT, POPCNT.
            (2, 16) | (4, 32) => unsafe { merge::<B, L>(fields, x, r, out) },
            _ => kernels::merge_store::<B, L>(fields, x, r, out),
        }
    }
}

/// `N` bytes of `bytes` from `at`, bounds checked, as a pointer for an unaligned load.
#[inline(always)]
fn window<const N: usize>(bytes: &[u8], at: usize) -> *const u8 {
    bytes[at..at + N].as_ptr()
}

#[inline(always)]
fn window_mut<const N: usize>(bytes: &mut [u8], at: usize) -> *mut u8 {
    bytes[at..at + N].as_mut_ptr()
}

/// Lanes per step of [`unpack`] and [`pack`]: 16 words of a sub-plane.
const STEP: usize = 16;

/// The runs of `out` (values `start..` of `plane`) in each sub-plane: `take` gets the frame
/// from the run's first word on, the run's lanes as bytes, its (take, place, mask) for
/// [`unpack_step`], and whether the sub-plane is the first (its fields are stored, the
/// others' ORed in: every value has a field in every sub-plane). A plane of width 0 (no
/// sub-planes) is all zeros.
#[inline(always)]
fn for_each_unpack_run<L: Lane>(
    frame: &[u8],
    plane: &Plane,
    start: usize,
    out: &mut [L],
    mut take: impl FnMut(&[u8], &mut [u8], (u32, u32, u32), bool),
) {
    if plane.subs().is_empty() {
        out.fill(L::default());
    }
    let lanes = out.len();
    let out: &mut [u8] = bytemuck::cast_slice_mut(out);
    let lane_bytes = (L::BITS / 8) as usize;
    for (s, sub) in plane.subs().iter().enumerate() {
        let field_mask = (1u32 << sub.bits) - 1;
        for Run {
            word,
            bit,
            done,
            len: run,
        } in sub.runs(start, lanes)
        {
            let dst = &mut out[lane_bytes * done..lane_bytes * (done + run)];
            let words = &frame[sub.offset + 2 * word..];
            take(words, dst, (bit, sub.shift, field_mask), s == 0);
        }
    }
}

/// The runs of `values` (values `start..` of `plane`) in each sub-plane: `fill` gets a
/// run's values as bytes, the frame from the run's first word on, and the run's
/// (take, place, mask) for [`pack_step`].
#[inline(always)]
fn for_each_run<L: Lane>(
    frame: &mut [u8],
    plane: &Plane,
    start: usize,
    values: &[L],
    mut fill: impl FnMut(&[u8], &mut [u8], (u32, u32, u32)),
) {
    let lanes = values.len();
    let values: &[u8] = bytemuck::cast_slice(values);
    let lane_bytes = (L::BITS / 8) as usize;
    for sub in plane.subs() {
        let field_mask = (1u32 << sub.bits) - 1;
        for Run {
            word,
            bit,
            done,
            len: run,
        } in sub.runs(start, lanes)
        {
            let src = &values[lane_bytes * done..lane_bytes * (done + run)];
            fill(
                src,
                &mut frame[sub.offset + 2 * word..],
                (sub.shift, bit, field_mask),
            );
        }
    }
}

/// Whether `hash` (if any) stands at an h32 block boundary: the vector kernels hash whole
/// blocks in registers only from there.
#[inline(always)]
fn at_block(hash: &Option<&mut H32>) -> bool {
    hash.as_ref()
        .is_none_or(|h| h.len.is_multiple_of(checksum::BLOCK))
}

/// Elements per step of the vector statistics kernels: 64, or 128 1-byte elements, so that
/// each step hashes whole h32 blocks.
#[inline(always)]
fn stats_step(element_bytes: usize) -> usize {
    (checksum::BLOCK / element_bytes).max(64)
}

/// What the vector statistics kernels leave after their first `blocks` elements: the OR of
/// those elements' 32-bit lanes (`or`) into the mantissa OR (folded to one element: both
/// halves of a lane for 2-byte elements, its four bytes for 1-byte ones), their count, and the
/// last elements short of a block by the portable path.
#[inline(always)]
fn stats_rest<const B: usize>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    or: u32,
    blocks: usize,
    stats: &mut FrameStats,
    hash: Option<&mut H32>,
) {
    let or = (0..4 / B).fold(0, |acc, i| acc | or >> (8 * B * i));
    stats.mantissa_or |= or & ((1 << fields.m) - 1);
    stats.counted += blocks;
    let n = x.len().min(input.len() / B).min(kernels::CHUNK);
    if blocks < n {
        let (input, x) = (&input[B * blocks..B * n], &mut x[blocks..n]);
        Portable.exponent_stats::<B>(fields, input, x, stats, hash);
    }
}
