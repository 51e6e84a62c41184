//! Instruction-set variants of the hot block kernels, chosen per frame by [`crate::dispatch`].
//!
//! [`Isa`] lists the kernels the frame loops call in their inner steps. Its default methods are
//! the portable kernels of [`crate::kernels`] (the reference, and what no_std and non-x86 builds
//! run). [`Avx2`] overrides them with `std::arch` versions of the same functions: byte shuffles
//! for the symbol lookup, prefix sums of the escape compare (or 256-entry tables of shuffle
//! patterns) for the escape expansion and compaction, no `pdep`; whole-register unpacking of the
//! planes, and 16-bit lanes for the merge of 2-byte elements. On AVX2 alone the decoder's
//! level-0 step runs in one pass per 32 elements too (`ranked_chunk_avx2`: codes from the plane's
//! words, `resolve32`, residuals in place, merge, store, checksum), each deeper level in one
//! pass after its unpack, the encoder's statistics pass counts a window of 16 exponents by byte
//! shuffles into nibble counters (`exponent_stats_avx2`) and its level codes take one shuffle
//! over a window of 16 values (`level_codes_avx2`). Where the CPU has AVX-512
//! (F/BW/VL/VBMI/VBMI2/BITALG with GFNI, as every CPU with VBMI2 so far) the hottest ones run in
//! 512-bit registers with mask registers: the decoder's level-0 step in one pass
//! ([`Isa::ranked_chunk`]: codes from the plane, escapes by compare, `vpexpandb` from the queue of
//! deeper exponents, merge, store, checksum), the encoder's statistics pass
//! ([`Isa::exponent_stats`]: exponents, histogram by bit transposes, mantissa OR, checksum), the
//! encoder's level codes ([`Isa::level_codes`]: a 256-entry table looked up by `vpermt2b`),
//! compress/expand (`vpcompressb`/`vpexpandb`), escape masks, lookups and the groups search's
//! counts. Every method computes exactly what its portable twin does; `tests/dispatch.rs` and the
//! unit tests below compare them.
#![allow(unsafe_code)]

use crate::checksum::H32;
use crate::kernels::{
    self, Fields, FrameStats, GroupRanges, Lane, LevelCodes, Plane, GROUPS_BASES, MAX_SYMBOLS,
};

/// The kernels an instruction set provides. A value of the implementing type is a proof that the
/// CPU can run them.
pub(crate) trait Isa: Copy {
    /// [`kernels::unpack_range`].
    #[inline(always)]
    fn unpack<L: Lane>(self, frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
        kernels::unpack_range(frame, plane, start, out)
    }

    /// [`kernels::pack_range`].
    #[inline(always)]
    fn pack<L: Lane>(self, frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
        kernels::pack_range(frame, plane, start, values)
    }

    /// [`kernels::exponents`].
    #[inline(always)]
    fn exponents<const B: usize>(self, fields: &Fields, input: &[u8], x: &mut [u8]) {
        kernels::exponents::<B>(fields, input, x)
    }

    /// A hint that `bytes` will be read soon (the decoders pass the next frame's, a share per
    /// chunk). No effect on results; the portable kernels ignore it.
    #[inline(always)]
    fn prefetch(self, _bytes: &[u8]) {}

    /// [`kernels::exponents`] of a run of elements, then [`FrameStats::add`] of them, and the
    /// run hashed into `hash`.
    #[inline(always)]
    fn exponent_stats<const B: usize>(
        self,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        stats: &mut FrameStats,
        hash: Option<&mut H32>,
    ) {
        self.exponents::<B>(fields, input, x);
        stats.add::<B>(fields, input, x);
        if let Some(hash) = hash {
            hash.update(input);
        }
    }

    /// [`kernels::split_load`].
    #[inline(always)]
    fn split_load<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        r: &mut [L],
    ) {
        kernels::split_load::<B, L>(fields, input, x, r)
    }

    /// [`Isa::split_load`] of a run of at most [`kernels::CHUNK`] elements, their residuals
    /// packed as values `start..` of `plane` ([`Isa::pack`]). `r` (as long as `x`) is scratch
    /// for the residuals where the kernel needs them (the caller's, so that it is not zeroed
    /// per run).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
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
        split_pack_steps::<B, L, Self>(self, fields, input, x, r, frame, plane, start)
    }

    /// [`kernels::rank_codes`].
    #[inline(always)]
    fn rank_codes(self, x: &[u8], level: &LevelCodes, out: &mut [u8]) {
        kernels::rank_codes(x, level, out)
    }

    /// One escape level of the ranked encoder over a run of at most [`kernels::CHUNK`]
    /// exponents `x`: their codes into `codes` ([`Isa::rank_codes`]) and the escaped ones (code
    /// = escape), in order, to the front of `escaped` ([`Isa::escape_masks`],
    /// [`Isa::compress`]). Returns how many escaped. `escaped` may be longer than that (vector
    /// versions write whole registers where they fit).
    #[inline(always)]
    fn level_codes(
        self,
        x: &[u8],
        level: &LevelCodes,
        codes: &mut [u8],
        escaped: &mut [u8],
    ) -> usize {
        level_codes_steps(self, x, level, codes, escaped)
    }

    /// [`GroupRanges::unflagged`] for the low widths `m <= widest` (the other entries are
    /// unspecified).
    #[inline(always)]
    fn groups_unflagged(
        self,
        ranges: &GroupRanges,
        first: u32,
        candidates: usize,
        _widest: u32,
    ) -> [[u32; 9]; GROUPS_BASES] {
        ranges.unflagged(first, candidates)
    }

    /// [`kernels::compress`] on bytes. `out` may be longer than the number of set bits (the
    /// vector version writes 8 bytes at a time where they fit).
    #[inline(always)]
    fn compress(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        kernels::compress(masks, values, out)
    }

    /// [`kernels::lookup`].
    #[inline(always)]
    fn lookup(self, codes: &[u8], table: &[u8; MAX_SYMBOLS], symbols: usize, out: &mut [u8]) {
        kernels::lookup(codes, table, symbols, out)
    }

    /// [`kernels::escape_masks`].
    #[inline(always)]
    fn escape_masks(self, codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
        kernels::escape_masks(codes, escape, masks)
    }

    /// [`kernels::expand`] on bytes. `values` may be longer than the number of set bits (the
    /// vector version reads 16 bytes at a time where they exist).
    #[inline(always)]
    fn expand(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        kernels::expand(masks, values, out)
    }

    /// [`kernels::merge_store`].
    #[inline(always)]
    fn merge_store<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        x: &[u8],
        r: &[L],
        out: &mut [u8],
    ) {
        kernels::merge_store::<B, L>(fields, x, r, out)
    }

    /// [`kernels::unpack_range`] of the residual plane, then [`kernels::resolve_store`]: the
    /// last step of a chunk of the ranked decoder (at most [`kernels::CHUNK`] elements from
    /// `start`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
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
        let mut r = [L::default(); kernels::CHUNK];
        let r = &mut r[..codes.len()];
        self.unpack(frame, residual, start, r);
        kernels::resolve_store::<B, L>(fields, codes, table, symbols, masks, deeper, r, out)
    }

    /// The level-0 step of a chunk of the ranked decoder, for its `out.len() / B` elements from
    /// `start` (at most [`kernels::CHUNK`]): unpacks their codes from `plane`, looks the
    /// unescaped ones up in `table` (`escape` entries; `escape` is the all-ones code), gives the
    /// escaped ones the next exponents of `deeper` in order, merges the residuals, stores, and
    /// hashes the output into `hash`. Returns how many exponents it took, or None when the codes
    /// escape more elements than `deeper` holds. `streaming` asks for non-temporal stores where
    /// the kernel has them (see [`crate::frame::Stores`]); it never changes the bytes.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
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
        _streaming: bool,
    ) -> Option<usize> {
        ranked_chunk_steps::<B, L, Self>(
            self, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
        )
    }

    /// A deeper level's step, for the ranked decoder's queues: the exponents of the `out.len()`
    /// entries from `start` of a code plane (at most [`kernels::CHUNK`]), the unescaped ones
    /// looked up in `table` (`escape` entries), the escaped ones given the next exponents of
    /// `deeper` in order. Returns how many exponents it took, or None when the codes escape more
    /// entries than `deeper` holds.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
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
        level_chunk_steps(self, frame, plane, start, table, escape, deeper, out)
    }
}

/// Exponents queued for the escaped elements of the next chunks: `values[..count]`, then readable
/// slack (at least 64 bytes) for vector loads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Escapes<'a> {
    pub values: &'a [u8],
    pub count: usize,
}

/// [`Isa::split_pack`] as its separate steps.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn split_pack_steps<const B: usize, L: Lane, I: Isa>(
    isa: I,
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    r: &mut [L],
    frame: &mut [u8],
    plane: &Plane,
    start: usize,
) {
    let n = x
        .len()
        .min(r.len())
        .min(input.len() / B)
        .min(kernels::CHUNK);
    isa.split_load::<B, L>(fields, &input[..B * n], &mut x[..n], &mut r[..n]);
    isa.pack(frame, plane, start, &r[..n]);
}

/// [`Isa::level_codes`] as its separate steps.
#[inline(always)]
pub(crate) fn level_codes_steps<I: Isa>(
    isa: I,
    x: &[u8],
    level: &LevelCodes,
    codes: &mut [u8],
    escaped: &mut [u8],
) -> usize {
    let n = x.len().min(codes.len()).min(kernels::CHUNK);
    isa.rank_codes(&x[..n], level, &mut codes[..n]);
    let mut masks = [0u64; kernels::CHUNK / 64];
    let count = isa.escape_masks(&codes[..n], level.escape(), &mut masks);
    if count > 0 {
        isa.compress(&masks, &x[..n], escaped);
    }
    count
}

/// [`Isa::ranked_chunk`] from the separate kernels: unpack the codes, find the escapes, then the
/// final step; the AVX-512 kernel falls back to it where it cannot run.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ranked_chunk_steps<const B: usize, L: Lane, I: Isa>(
    isa: I,
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
) -> Option<usize> {
    let n = (out.len() / B).min(kernels::CHUNK);
    let mut codes = [0u8; kernels::CHUNK];
    let codes = &mut codes[..n];
    isa.unpack(frame, plane, start, codes);
    let mut masks = [0u64; kernels::CHUNK / 64];
    let escaped = isa.escape_masks(codes, escape, &mut masks);
    if escaped > deeper.count {
        return None;
    }
    let out = &mut out[..B * n];
    isa.resolve_store::<B, L>(
        fields,
        frame,
        residual,
        start,
        codes,
        table,
        usize::from(escape),
        &masks,
        deeper.values,
        out,
    );
    if let Some(hash) = hash {
        hash.update(out);
    }
    Some(escaped)
}

/// [`Isa::level_chunk`] from the separate kernels: unpack the codes, find the escapes, look the
/// others up and expand the deeper exponents into the escaped entries.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn level_chunk_steps<I: Isa>(
    isa: I,
    frame: &[u8],
    plane: &Plane,
    start: usize,
    table: &[u8; MAX_SYMBOLS],
    escape: u8,
    deeper: Escapes<'_>,
    out: &mut [u8],
) -> Option<usize> {
    let n = out.len().min(kernels::CHUNK);
    let (mut codes, mut masks) = ([0u8; kernels::CHUNK], [0u64; kernels::CHUNK / 64]);
    let (codes, out) = (&mut codes[..n], &mut out[..n]);
    isa.unpack(frame, plane, start, codes);
    let escaped = isa.escape_masks(codes, escape, &mut masks);
    if escaped > deeper.count {
        return None;
    }
    isa.lookup(codes, table, usize::from(escape), out);
    if escaped > 0 {
        isa.expand(&masks, deeper.values, out);
    }
    Some(escaped)
}

/// The portable kernels, for every target.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Isa for Portable {}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
pub(crate) use x86::Avx2;

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod x86 {
    use super::*;
    use crate::checksum;
    use crate::kernels::Run;
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
                unsafe { unpack(frame, plane, start, out) }
            }
        }

        #[inline(always)]
        fn pack<L: Lane>(self, frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
            if self.avx512 {
                // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
                unsafe { pack512(frame, plane, start, values) }
            } else {
                unsafe { pack(frame, plane, start, values) }
            }
        }

        #[inline(always)]
        fn compress(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
            if self.avx512 {
                // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
                unsafe { compress512(masks, values, out) }
            } else {
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
            // A frame's first elements choose the values the vector kernel counts.
            let sample = kernels::SAMPLE.saturating_sub(stats.counted).min(n);
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
                Some(first) if self.avx512 && (B == 2 || B == 4) => unsafe {
                    exponent_stats512::<B>(fields, input, x, first, stats, hash)
                },
                Some(first) if B == 2 || B == 4 => unsafe {
                    exponent_stats_avx2::<B>(fields, input, x, first, stats, hash)
                },
                _ => Portable.exponent_stats::<B>(fields, input, x, stats, hash),
            }
        }

        #[inline(always)]
        fn rank_codes(self, x: &[u8], level: &LevelCodes, out: &mut [u8]) {
            if level.symbols.len() <= 16 {
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
            // (Also with AVX-512: 1.03x over `split16_512` and `pack512`.)
            if B == 2 && L::BITS == 16 {
                let r = bytemuck::cast_slice_mut(r);
                unsafe { split_pack16(self, fields, input, x, r, frame, plane, start) }
            } else {
                split_pack_steps::<B, L, Self>(self, fields, input, x, r, frame, plane, start)
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
                unsafe { escape_masks(codes, escape, masks) }
            }
        }

        #[inline(always)]
        fn expand(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
            if self.avx512 {
                // SAFETY: `avx512` is set only when `detect` found every AVX-512 feature used.
                unsafe { expand512(masks, values, out) }
            } else {
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
                (2, 16) | (4, 32) if self.avx512 && escape < 16 => unsafe {
                    ranked_chunk512::<B, L>(
                        self, fields, frame, plane, residual, start, table, escape, deeper, out,
                        hash, streaming,
                    )
                },
                // Through the cache even when `streaming` asks otherwise: on AVX2 (Zen 3) the
                // non-temporal stores measured 1.00x on one thread and 0.85x on two.
                (2, 16) | (4, 32) if escape < 16 => unsafe {
                    ranked_chunk_avx2::<B, L>(
                        self, fields, frame, plane, residual, start, table, escape, deeper, out,
                        hash,
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
                unsafe { level_chunk_avx2(self, frame, plane, start, table, escape, deeper, out) }
            } else {
                level_chunk_steps(self, frame, plane, start, table, escape, deeper, out)
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

    /// [`kernels::unpack_range`]: each run of words with one bit offset is shifted, masked and
    /// ORed into the lanes 16 at a time. A run's last few lanes go through a scratch step when
    /// the frame has 16 words there (the extra ones are read and dropped), else one at a time.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn unpack<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
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
                    let field = ((w >> take) & mask) << place;
                    let lane = &mut dst[lane_bytes * q..lane_bytes * (q + 1)];
                    for (b, f) in lane.iter_mut().zip(field.to_le_bytes()) {
                        *b = if first { f } else { *b | f };
                    }
                }
            }
        })
    }

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

    /// The 32-lane steps over a run of `run` values: `step(q, live)` for every `q` in
    /// `(0..run).step_by(32)`, `live` selecting the lanes `q..run` (at most 32).
    /// The whole steps first, with a constant mask (computing it in each step cost a third of
    /// the packing loop's instructions), then the last, partial one.
    #[inline(always)]
    fn for_each_step32(run: usize, mut step: impl FnMut(usize, u32)) {
        let whole = run / (2 * STEP) * (2 * STEP);
        for q in (0..whole).step_by(2 * STEP) {
            step(q, u32::MAX);
        }
        if whole < run {
            step(whole, (1u32 << (run - whole)) - 1);
        }
    }

    /// [`unpack`] 32 values at a time, a run's last ones under a lane mask.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn unpack512<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
        let lane_bytes = (L::BITS / 8) as usize;
        for_each_unpack_run(frame, plane, start, out, |words, dst, shifts, first| {
            let run = dst.len() / lane_bytes;
            let words = &words[..2 * run];
            for_each_step32(run, |q, live| {
                // SAFETY: the step reads the words and writes the lanes `q..run` that `live`
                // covers, inside `words` and `dst`.
                let (w, d) = (
                    words.as_ptr().add(2 * q),
                    dst.as_mut_ptr().add(lane_bytes * q),
                );
                unpack_step512::<L>(w, shifts, first, d, live);
            })
        })
    }

    /// [`unpack_step`] for the 32 words at `words` and lanes at `dst` that `live` selects (the
    /// others are neither read nor written).
    ///
    /// SAFETY: the selected words and lanes are in bounds.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn unpack_step512<L: Lane>(
        words: *const u8,
        (take, place, mask): (u32, u32, u32),
        first: bool,
        dst: *mut u8,
        live: u32,
    ) {
        let w = _mm512_maskz_loadu_epi16(live, words.cast());
        let v = _mm512_and_si512(
            _mm512_srl_epi16(w, _mm_cvtsi32_si128(take as i32)),
            _mm512_set1_epi16(mask as u16 as i16),
        );
        let place = _mm_cvtsi32_si128(place as i32);
        match L::BITS {
            8 => {
                // Shifted into place and cut to a byte (as `or_field` does), then narrowed.
                let v = _mm512_cvtepi16_epi8(_mm512_sll_epi16(v, place));
                let o = dst.cast::<i8>();
                let v = if first {
                    v
                } else {
                    _mm256_or_si256(_mm256_maskz_loadu_epi8(live, o), v)
                };
                _mm256_mask_storeu_epi8(o, live, v);
            }
            16 => {
                let v = _mm512_sll_epi16(v, place);
                let o = dst.cast::<i16>();
                let v = if first {
                    v
                } else {
                    _mm512_or_si512(_mm512_maskz_loadu_epi16(live, o), v)
                };
                _mm512_mask_storeu_epi16(o, live, v);
            }
            _ => {
                for half in 0..2 {
                    let h = if half == 0 {
                        _mm512_castsi512_si256(v)
                    } else {
                        _mm512_extracti64x4_epi64::<1>(v)
                    };
                    let v = _mm512_sll_epi32(_mm512_cvtepu16_epi32(h), place);
                    let (o, live) = (
                        dst.add(64 * half).cast::<i32>(),
                        (live >> (16 * half)) as u16,
                    );
                    let v = if first {
                        v
                    } else {
                        _mm512_or_si512(_mm512_maskz_loadu_epi32(live, o), v)
                    };
                    _mm512_mask_storeu_epi32(o, live, v);
                }
            }
        }
    }

    /// One step of [`unpack`]: the fields at bit `take` of 16 words (`words`, 32 bytes), masked,
    /// shifted left by `place` and ORed into 16 lanes (`dst`, `16 * L::BITS / 8` bytes).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn unpack_step<L: Lane>(
        words: &[u8],
        (take, place, mask): (u32, u32, u32),
        first: bool,
        dst: &mut [u8],
    ) {
        let w = _mm256_loadu_si256(window::<32>(words, 0).cast());
        let take = _mm_cvtsi32_si128(take as i32);
        let v = _mm256_and_si256(
            _mm256_srl_epi16(w, take),
            _mm256_set1_epi16(mask as u16 as i16),
        );
        let place = _mm_cvtsi32_si128(place as i32);
        match L::BITS {
            8 => {
                // Shifted into place and cut to a byte (as `or_field` does), then narrowed.
                let v = _mm256_and_si256(_mm256_sll_epi16(v, place), _mm256_set1_epi16(0xFF));
                let v = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(v, v));
                let v = _mm256_castsi256_si128(v);
                let o = window_mut::<16>(dst, 0).cast::<__m128i>();
                let v = if first {
                    v
                } else {
                    _mm_or_si128(_mm_loadu_si128(o), v)
                };
                _mm_storeu_si128(o, v);
            }
            16 => {
                let v = _mm256_sll_epi16(v, place);
                let o = window_mut::<32>(dst, 0).cast::<__m256i>();
                let v = if first {
                    v
                } else {
                    _mm256_or_si256(_mm256_loadu_si256(o), v)
                };
                _mm256_storeu_si256(o, v);
            }
            _ => {
                for half in 0..2 {
                    let h = if half == 0 {
                        _mm256_castsi256_si128(v)
                    } else {
                        _mm256_extracti128_si256::<1>(v)
                    };
                    let v = _mm256_sll_epi32(_mm256_cvtepu16_epi32(h), place);
                    let o = window_mut::<32>(dst, 32 * half).cast::<__m256i>();
                    let v = if first {
                        v
                    } else {
                        _mm256_or_si256(_mm256_loadu_si256(o), v)
                    };
                    _mm256_storeu_si256(o, v);
                }
            }
        }
    }

    /// [`kernels::pack_range`]: the mirror of [`unpack`], 16 values at a time. A run's last few
    /// values go through a zero-padded step when the frame has 16 words there and the run is
    /// not at bit 0 (ORing zeros changes nothing), else one at a time.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn pack<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
        pack_runs::<L>(frame, plane, start, values)
    }

    /// [`pack`] 32 values at a time, a run's last ones under a lane mask.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn pack512<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
        let lane_bytes = (L::BITS / 8) as usize;
        for_each_run(frame, plane, start, values, |src, words, shifts| {
            let run = src.len() / lane_bytes;
            let words = &mut words[..2 * run];
            for_each_step32(run, |q, live| {
                // SAFETY: the step reads the values and words `q..run` that `live` covers,
                // inside `src` and `words`.
                let (v, w) = (
                    src.as_ptr().add(lane_bytes * q),
                    words.as_mut_ptr().add(2 * q),
                );
                pack_step512::<L>(v, shifts, w, live);
            })
        })
    }

    /// The body of [`pack`]: 16 values per step, a run's last few through a scratch step when
    /// the frame has 16 words there (ORing zeros into the extra ones; not at bit 0, where
    /// steps store), else one at a time.
    #[inline(always)]
    unsafe fn pack_runs<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
        let lane_bytes = (L::BITS / 8) as usize;
        for_each_run(frame, plane, start, values, |src, words, shifts| {
            let run = src.len() / lane_bytes;
            let steps = src
                .chunks_exact(lane_bytes * STEP)
                .zip(words[..2 * run].chunks_exact_mut(2 * STEP));
            for (v, w) in steps {
                pack_step::<L>(v, shifts, w);
            }
            let q = run / STEP * STEP;
            let (take, place, mask) = shifts;
            // The scratch step ORs zeros into the words past the run: only where fields at
            // bit 0 are there already (else it would store over them).
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
                    let field = ((u32::from_le_bytes(lane) >> take) & mask) << place;
                    let old = u16::from_le_bytes([words[2 * q], words[2 * q + 1]]);
                    let w = if place == 0 { 0 } else { old } | field as u16;
                    words[2 * q..2 * q + 2].copy_from_slice(&w.to_le_bytes());
                }
            }
        })
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

    /// [`pack_step`] for the 32 values at `values` and words at `words` that `live` selects
    /// (the others are neither read nor written).
    ///
    /// SAFETY: the selected values and words are in bounds.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn pack_step512<L: Lane>(
        values: *const u8,
        (take, place, mask): (u32, u32, u32),
        words: *mut u8,
        live: u32,
    ) {
        let take = _mm_cvtsi32_si128(take as i32);
        let v = match L::BITS {
            8 => _mm512_srl_epi16(
                _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(live, values.cast())),
                take,
            ),
            16 => _mm512_srl_epi16(_mm512_maskz_loadu_epi16(live, values.cast()), take),
            _ => {
                // The low halves of the shifted lanes, in order (the mask below keeps the field).
                let [a, b] = [0, 16].map(|h| {
                    let u = _mm512_maskz_loadu_epi32((live >> h) as u16, values.add(4 * h).cast());
                    _mm512_srl_epi32(u, take)
                });
                // `vpermt2w` indices 0, 2, .., 62: the first half of LOW_BYTES, widened.
                let evens = _mm512_cvtepu8_epi16(_mm256_loadu_si256(LOW_BYTES.as_ptr().cast()));
                _mm512_permutex2var_epi16(a, evens, b)
            }
        };
        let field = _mm512_and_si512(v, _mm512_set1_epi16(mask as u16 as i16));
        let field = _mm512_sll_epi16(field, _mm_cvtsi32_si128(place as i32));
        let o = words.cast::<i16>();
        // Fields at bit 0 are their words' first (see [`kernels::pack_range`]).
        let merged = if place == 0 {
            field
        } else {
            _mm512_or_si512(_mm512_maskz_loadu_epi16(live, o), field)
        };
        _mm512_mask_storeu_epi16(o, live, merged);
    }

    /// One step of [`pack`]: the fields at bit `take` of 16 values (`values`), masked, shifted
    /// left by `place` and ORed into 16 words (`words`, 32 bytes).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn pack_step<L: Lane>(
        values: &[u8],
        (take, place, mask): (u32, u32, u32),
        words: &mut [u8],
    ) {
        let take = _mm_cvtsi32_si128(take as i32);
        let v = match L::BITS {
            8 => _mm256_srl_epi16(
                _mm256_cvtepu8_epi16(_mm_loadu_si128(window::<16>(values, 0).cast())),
                take,
            ),
            16 => _mm256_srl_epi16(_mm256_loadu_si256(window::<32>(values, 0).cast()), take),
            _ => {
                // Fields first (so they fit 16 bits), then narrowed in order.
                let mask32 = _mm256_set1_epi32(mask as i32);
                let a = _mm256_loadu_si256(window::<32>(values, 0).cast());
                let b = _mm256_loadu_si256(window::<32>(values, 32).cast());
                let a = _mm256_and_si256(_mm256_srl_epi32(a, take), mask32);
                let b = _mm256_and_si256(_mm256_srl_epi32(b, take), mask32);
                _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi32(a, b))
            }
        };
        let field = _mm256_and_si256(v, _mm256_set1_epi16(mask as u16 as i16));
        let field = _mm256_sll_epi16(field, _mm_cvtsi32_si128(place as i32));
        let o = window_mut::<32>(words, 0).cast::<__m256i>();
        // Fields at bit 0 are their words' first (see [`kernels::pack_range`]).
        let merged = if place == 0 {
            field
        } else {
            _mm256_or_si256(_mm256_loadu_si256(o), field)
        };
        _mm256_storeu_si256(o, merged);
    }

    /// Byte-shuffle patterns for the 256 masks of 8 lanes. Compression (`EXPAND == false`):
    /// the first bytes are the positions of the set bits, ascending. Expansion: byte `q` is the
    /// number of set bits below bit `q` when bit `q` is set (which value lands there), else 0x80
    /// (the shuffle writes zero there, and a blend can tell the lane by that top bit).
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

    /// [`kernels::compress`] on bytes, 8 lanes per step: one byte shuffle moves the selected
    /// values to the front and one 8-byte store appends them.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn compress(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        let mut k = 0;
        let n = values.len();
        let mut q = 0;
        while q < n {
            let bits = (masks[q / 64] >> (q % 64)) as u8;
            if bits == 0 {
                // Nothing selected here.
            } else if q + 8 <= n && k + 8 <= out.len() {
                let v = _mm_loadl_epi64(window::<8>(values, q).cast());
                let picked =
                    _mm_shuffle_epi8(v, _mm_cvtsi64_si128(COMPRESS[usize::from(bits)] as i64));
                _mm_storel_epi64(window_mut::<8>(out, k).cast(), picked);
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

    /// [`Isa::level_codes`] on AVX2 when the level's symbols lie within 16 consecutive values
    /// (so far every level of real weights): per 32 exponents one byte shuffle over that window
    /// gives the codes (values outside it saturate to lanes the shuffle zeroes, read as the
    /// escape), one compare the escapes, and 8-lane shuffles append the escaped exponents to
    /// `escaped` without a branch. Other levels, and an `escaped` without 8 bytes of room past
    /// `x.len()`, take the separate steps.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn level_codes_avx2(
        isa: Avx2,
        x: &[u8],
        level: &LevelCodes,
        codes: &mut [u8],
        escaped: &mut [u8],
    ) -> usize {
        let n = x.len().min(codes.len()).min(kernels::CHUNK);
        let escape = level.escape();
        let (mut lo, mut hi) = (u8::MAX, 0);
        for &s in level.symbols {
            (lo, hi) = (lo.min(s), hi.max(s));
        }
        if level.symbols.is_empty() || hi - lo >= 16 || escaped.len() < n + 8 {
            return level_codes_steps(isa, x, level, codes, escaped);
        }
        // Entry `i`: the code of exponent `lo + i`, XOR the escape (so that zero means escape).
        let window: [u8; 16] = core::array::from_fn(|i| {
            level
                .code
                .get(usize::from(lo) + i)
                .map_or(0, |&c| c ^ escape)
        });
        let lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(window.as_ptr().cast()));
        let (lo_v, bias) = (_mm256_set1_epi8(lo as i8), _mm256_set1_epi8(0x70));
        let escape_v = _mm256_set1_epi8(escape as i8);
        let (xp, cp, ep) = (x.as_ptr(), codes.as_mut_ptr(), escaped.as_mut_ptr());
        let mut k = 0;
        let steps = n / 32 * 32;
        for q in (0..steps).step_by(32) {
            // SAFETY: `q + 32 <= n`: `x[q..q + 32]` and `codes[q..q + 32]` are in bounds.
            let v = _mm256_loadu_si256(xp.add(q).cast());
            // `v - lo` below 16 keeps its low nibble and a clear top bit; the rest saturate
            // to a set top bit, which the shuffle turns into 0 (the escape, after the XOR).
            let index = _mm256_adds_epu8(_mm256_sub_epi8(v, lo_v), bias);
            let c = _mm256_xor_si256(_mm256_shuffle_epi8(lut, index), escape_v);
            _mm256_storeu_si256(cp.add(q).cast(), c);
            let mut bits = _mm256_movemask_epi8(_mm256_cmpeq_epi8(c, escape_v)) as u32;
            for j in 0..4 {
                let picked = bits as u8;
                // SAFETY: `k <= q + 8 j` (one exponent at most per element before these), so
                // the 8 bytes from `k` lie inside `escaped` (`n + 8` bytes at least).
                let v8 = _mm_loadl_epi64(xp.add(q + 8 * j).cast());
                let pattern = _mm_cvtsi64_si128(COMPRESS[usize::from(picked)] as i64);
                _mm_storel_epi64(ep.add(k).cast(), _mm_shuffle_epi8(v8, pattern));
                k += picked.count_ones() as usize;
                bits >>= 8;
            }
        }
        for q in steps..n {
            let c = level.code[usize::from(x[q])];
            codes[q] = c;
            if c == escape {
                escaped[k] = x[q];
                k += 1;
            }
        }
        k
    }

    /// [`kernels::lookup`] for tables of at most 16 symbols: one byte shuffle per 32 codes.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn lookup16(codes: &[u8], table: &[u8; 16], out: &mut [u8]) {
        // Codes are below 16, so each selects a byte of the table.
        let lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(table.as_ptr().cast()));
        let n = codes.len().min(out.len());
        let mut q = 0;
        while q + 32 <= n {
            let c = _mm256_loadu_si256(window::<32>(codes, q).cast());
            _mm256_storeu_si256(window_mut::<32>(out, q).cast(), _mm256_shuffle_epi8(lut, c));
            q += 32;
        }
        for q in q..n {
            out[q] = table[usize::from(codes[q] & 15)];
        }
    }

    /// [`kernels::rank_codes`] for up to 16 symbols: a compare and a blend per symbol per 32
    /// exponents.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn rank_codes16(x: &[u8], level: &LevelCodes, out: &mut [u8]) {
        let (n, symbols) = (x.len().min(out.len()), level.symbols);
        let escape = _mm256_set1_epi8(symbols.len() as i8);
        for (xs, o) in x[..n].chunks_exact(32).zip(out[..n].chunks_exact_mut(32)) {
            let v = _mm256_loadu_si256(window::<32>(xs, 0).cast());
            let mut code = escape;
            for (s, &symbol) in symbols.iter().enumerate() {
                let hit = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(symbol as i8));
                code = _mm256_blendv_epi8(code, _mm256_set1_epi8(s as i8), hit);
            }
            _mm256_storeu_si256(window_mut::<32>(o, 0).cast(), code);
        }
        let q = n / 32 * 32;
        kernels::rank_codes(&x[q..n], level, &mut out[q..n]);
    }

    /// The shifts and masks that split 2-byte elements ([`Fields::split`]) in 16-bit lanes.
    struct Split16 {
        m: __m128i,
        k: __m128i,
        exponent_mask: __m256i,
        mantissa_mask: __m256i,
        /// The sign (bit 15) goes to the residual's bit `live`, above the live mantissa bits.
        sign_to: __m128i,
        sign_bit: __m256i,
    }

    impl Split16 {
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn new(fields: &Fields) -> Split16 {
            let live = fields.m - fields.k;
            Split16 {
                m: _mm_cvtsi32_si128(fields.m as i32),
                k: _mm_cvtsi32_si128(fields.k as i32),
                exponent_mask: _mm256_set1_epi16(((1u32 << fields.e) - 1) as i16),
                mantissa_mask: _mm256_set1_epi16(((1u32 << fields.m) - 1) as i16),
                sign_to: _mm_cvtsi32_si128((fields.e + fields.m - live) as i32),
                sign_bit: _mm256_set1_epi16(1 << live),
            }
        }

        /// The exponents and residuals of 16 elements `u`, in 16-bit lanes.
        #[inline(always)]
        unsafe fn lanes(&self, u: __m256i) -> (__m256i, __m256i) {
            let exponents = _mm256_and_si256(_mm256_srl_epi16(u, self.m), self.exponent_mask);
            let sign = _mm256_and_si256(_mm256_srl_epi16(u, self.sign_to), self.sign_bit);
            let mantissa = _mm256_srl_epi16(_mm256_and_si256(u, self.mantissa_mask), self.k);
            (exponents, _mm256_or_si256(sign, mantissa))
        }
    }

    /// [`kernels::split_load`] for 2-byte elements: 32 per step, exponents narrowed to bytes.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn split16(fields: &Fields, input: &[u8], x: &mut [u8], r: &mut [u16]) {
        let n = x.len().min(r.len()).min(input.len() / 2);
        let split = Split16::new(fields);
        let rb: &mut [u8] = bytemuck::cast_slice_mut(&mut r[..n]);
        // 32 elements per step: their exponents narrowed by one pack of two registers.
        let steps = input[..2 * n]
            .chunks_exact(64)
            .zip(x[..n].chunks_exact_mut(32))
            .zip(rb.chunks_exact_mut(64));
        for ((e, xs), rs) in steps {
            let mut exps = [_mm256_setzero_si256(); 2];
            for (h, ex) in exps.iter_mut().enumerate() {
                let u = _mm256_loadu_si256(window::<32>(e, 32 * h).cast());
                let r;
                (*ex, r) = split.lanes(u);
                _mm256_storeu_si256(window_mut::<32>(rs, 32 * h).cast(), r);
            }
            let bytes = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(exps[0], exps[1]));
            _mm256_storeu_si256(window_mut::<32>(xs, 0).cast(), bytes);
        }
        let q = n / 32 * 32;
        kernels::split_load::<2, u16>(fields, &input[2 * q..2 * n], &mut x[q..n], &mut r[q..n]);
    }

    /// [`Isa::split_pack`] for 2-byte elements, 32 per step: [`split16`] with each residual's
    /// fields shifted into their words in place of the residual array (a sub-plane's first
    /// fields are stored, the others ORed in). Runs not in one run of words per sub-plane,
    /// and the last elements short of 32, take the separate steps.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn split_pack16(
        isa: Avx2,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        r: &mut [u16],
        frame: &mut [u8],
        plane: &Plane,
        start: usize,
    ) {
        let n = x.len().min(input.len() / 2).min(kernels::CHUNK);
        let steps = n / 32 * 32;
        let words = (steps > 0)
            .then(|| residual_words(frame, plane, start, steps))
            .flatten();
        let Some(words) = words else {
            return split_pack_steps::<2, u16, _>(isa, fields, input, x, r, frame, plane, start);
        };
        // Per sub-plane: first word's byte offset, bit of the residual to take, bit of the word
        // to place at, field mask, and whether the fields are their words' first.
        let subs = words.map(|(offset, place, take, mask)| PackShifts {
            offset,
            take: _mm_cvtsi32_si128(take as i32),
            place: _mm_cvtsi32_si128(place as i32),
            mask: _mm256_set1_epi16(mask as i16),
            first: place == 0,
        });
        // The common sub-plane counts as arrays of fixed length, unrolled (a loop over them
        // mispredicted its exits and the first-field test).
        // (2-byte elements have at most 3: 11 residual bits.)
        let (head, tail) = (&input[..2 * steps], &mut x[..steps]);
        match plane.len {
            1 => split_pack16_steps(fields, head, tail, frame, first::<1, _>(&subs)),
            2 => split_pack16_steps(fields, head, tail, frame, first::<2, _>(&subs)),
            3 => split_pack16_steps(fields, head, tail, frame, first::<3, _>(&subs)),
            _ => {
                return split_pack_steps::<2, u16, _>(isa, fields, input, x, r, frame, plane, start)
            }
        }
        if steps < n {
            split_pack_steps::<2, u16, _>(
                isa,
                fields,
                &input[2 * steps..2 * n],
                &mut x[steps..n],
                r,
                frame,
                plane,
                start + steps,
            );
        }
    }

    /// A residual sub-plane's words for [`split_pack16_steps`].
    #[derive(Clone, Copy)]
    struct PackShifts {
        offset: usize,
        take: __m128i,
        place: __m128i,
        mask: __m256i,
        first: bool,
    }

    /// [`split_pack16`]'s steps over `x.len()` elements (a multiple of 32) for a residual of
    /// `N` sub-planes.
    ///
    /// SAFETY: every sub-plane's words for the `x.len()` values lie in `frame`.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn split_pack16_steps<const N: usize>(
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        frame: &mut [u8],
        subs: [PackShifts; N],
    ) {
        let steps = x.len().min(input.len() / 2) / 32 * 32;
        let split = Split16::new(fields);
        let (ip, xp, fp) = (input.as_ptr(), x.as_mut_ptr(), frame.as_mut_ptr());
        for at in (0..steps).step_by(32) {
            let mut exps = [_mm256_setzero_si256(); 2];
            for (h, ex) in exps.iter_mut().enumerate() {
                // SAFETY: `at + 32 <= steps`: the input bytes `2 * (at..at + 32)` and the
                // exponents `at..at + 32` are in bounds; the words are the caller's.
                let u = _mm256_loadu_si256(ip.add(2 * (at + 16 * h)).cast());
                let r;
                (*ex, r) = split.lanes(u);
                for (i, sub) in subs.iter().enumerate() {
                    // The first sub-plane takes bit 0 on (no shift), the last one the top bits
                    // (no mask).
                    let field = if i == 0 {
                        r
                    } else {
                        _mm256_srl_epi16(r, sub.take)
                    };
                    let field = if i + 1 == N {
                        field
                    } else {
                        _mm256_and_si256(field, sub.mask)
                    };
                    let field = _mm256_sll_epi16(field, sub.place);
                    let o = fp.add(sub.offset + 2 * (at + 16 * h)).cast::<__m256i>();
                    let merged = if sub.first {
                        field
                    } else {
                        _mm256_or_si256(_mm256_loadu_si256(o), field)
                    };
                    _mm256_storeu_si256(o, merged);
                }
            }
            let bytes = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(exps[0], exps[1]));
            _mm256_storeu_si256(xp.add(at).cast(), bytes);
        }
    }

    /// `vpermt2b` indices that gather the low bytes of the 16-bit lanes of two registers (byte
    /// `2i` of their concatenation into byte `i`).
    static LOW_BYTES: [u8; 64] = {
        let mut index = [0u8; 64];
        let mut i = 0;
        while i < 64 {
            index[i] = 2 * i as u8;
            i += 1;
        }
        index
    };

    /// `vpermb` indices that transpose 8x8 bytes: byte `8 i + q` takes byte `8 q + i`.
    static TRANSPOSE8X8: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut b = 0;
        while b < 64 {
            t[b] = ((b % 8) * 8 + b / 8) as u8;
            b += 1;
        }
        t
    };

    /// [`split16`], 64 elements per step: the exponents' low bytes of two registers gathered
    /// by one `vpermt2b`.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn split16_512(fields: &Fields, input: &[u8], x: &mut [u8], r: &mut [u16]) {
        let n = x.len().min(r.len()).min(input.len() / 2);
        let exponent_mask = _mm512_set1_epi16(((1u32 << fields.e) - 1) as i16);
        let mantissa_mask = _mm512_set1_epi16(((1u32 << fields.m) - 1) as i16);
        let (m, k) = (
            _mm_cvtsi32_si128(fields.m as i32),
            _mm_cvtsi32_si128(fields.k as i32),
        );
        let sign_at = _mm_cvtsi32_si128((fields.e + fields.m) as i32);
        let live = _mm_cvtsi32_si128((fields.m - fields.k) as i32);
        let low_bytes = _mm512_loadu_si512(LOW_BYTES.as_ptr().cast());
        let rb: &mut [u8] = bytemuck::cast_slice_mut(&mut r[..n]);
        let steps = input[..2 * n]
            .chunks_exact(128)
            .zip(x[..n].chunks_exact_mut(64))
            .zip(rb.chunks_exact_mut(128));
        for ((e, xs), rs) in steps {
            let mut exps = [_mm512_setzero_si512(); 2];
            for (h, ex) in exps.iter_mut().enumerate() {
                let u = _mm512_loadu_si512(window::<64>(e, 64 * h).cast());
                *ex = _mm512_and_si512(_mm512_srl_epi16(u, m), exponent_mask);
                let sign = _mm512_sll_epi16(_mm512_srl_epi16(u, sign_at), live);
                let mant = _mm512_srl_epi16(_mm512_and_si512(u, mantissa_mask), k);
                let o = window_mut::<64>(rs, 64 * h).cast();
                _mm512_storeu_si512(o, _mm512_or_si512(sign, mant));
            }
            let bytes = _mm512_permutex2var_epi8(exps[0], low_bytes, exps[1]);
            _mm512_storeu_si512(window_mut::<64>(xs, 0).cast(), bytes);
        }
        let q = n / 64 * 64;
        split16(fields, &input[2 * q..2 * n], &mut x[q..n], &mut r[q..n]);
    }

    /// [`Isa::groups_unflagged`] for a few low widths (`widest <= 3`) and bases below 256, by
    /// compares: per 64 groups and candidate `b`, which fit under `b`, and of those which have
    /// their smallest exponent above `b - 2^m`, counted by popcount.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn groups_unflagged512(
        ranges: &GroupRanges,
        first: u32,
        candidates: usize,
        widest: u32,
    ) -> [[u32; 9]; GROUPS_BASES] {
        let groups = ranges.groups;
        let mut unflagged = [[0u32; 9]; GROUPS_BASES];
        for at in (0..groups).step_by(64) {
            let live = if at + 64 <= groups {
                u64::MAX
            } else {
                (1u64 << (groups - at)) - 1
            };
            // SAFETY: the masked loads read only groups `at..groups`.
            let lo = _mm512_maskz_loadu_epi8(live, ranges.min.as_ptr().add(at).cast());
            let hi = _mm512_maskz_loadu_epi8(live, ranges.max.as_ptr().add(at).cast());
            for (c, row) in unflagged.iter_mut().enumerate().take(candidates) {
                let base = first as i32 + c as i32;
                let fit = _mm512_mask_cmple_epu8_mask(live, hi, _mm512_set1_epi8(base as i8));
                for (m, count) in row.iter_mut().enumerate().take(widest as usize + 1) {
                    // Smallest exponent at least b - 2^m + 1 (every one when that is <= 0).
                    let least = (base - (1 << m) + 1).max(0);
                    let inside =
                        _mm512_mask_cmpge_epu8_mask(fit, lo, _mm512_set1_epi8(least as i8));
                    *count += inside.count_ones();
                }
            }
        }
        unflagged
    }

    /// [`kernels::escape_masks`]: one compare and one movemask per 32 codes.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn escape_masks(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
        masks.fill(0);
        let splat = _mm256_set1_epi8(escape as i8);
        let mut total = 0;
        for (q, chunk) in codes.chunks(32).enumerate() {
            let bits = if chunk.len() == 32 {
                let c = _mm256_loadu_si256(window::<32>(chunk, 0).cast());
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(c, splat)) as u32 as u64
            } else {
                chunk
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (i, &c)| m | (u64::from(c == escape) << i))
            };
            masks[q / 2] |= bits << (32 * (q % 2));
            total += bits.count_ones() as usize;
        }
        total
    }

    /// [`kernels::expand`] on bytes, 16 lanes per step: the two 8-bit halves of the mask pick
    /// their shuffle patterns, the upper one offset by the lower one's popcount, and one byte
    /// shuffle of the next 16 values places them; a blend keeps the lanes without a set bit.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn expand(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        let mut k = 0;
        let mut q = 0;
        let n = out.len();
        while q < n {
            let bits = (masks[q / 64] >> (q % 64)) as u16;
            let count = bits.count_ones() as usize;
            if bits == 0 {
                // Nothing to place in these lanes.
            } else if q + 16 <= n && k + 16 <= values.len() {
                let pattern = expand_pattern(bits);
                let v = _mm_loadu_si128(window::<16>(values, k).cast());
                let o = window_mut::<16>(out, q).cast::<__m128i>();
                let placed = _mm_shuffle_epi8(v, pattern);
                // Unset lanes have the pattern's top bit set: keep the old byte there.
                _mm_storeu_si128(o, _mm_blendv_epi8(placed, _mm_loadu_si128(o), pattern));
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
            k += count;
            q += 16;
        }
        k
    }

    /// A frame's merge constants (FORMAT.md 4.2): 16 elements per step, in 16-bit lanes for
    /// 2-byte elements and 32-bit lanes for 4-byte ones. The residual (sign over the live
    /// mantissa bits) shifted left by the dead bits has its sign at bit `M`; adding the sign
    /// times `2^E - 1` moves it to the top bit (`2^M (2^E - 1) = 2^(E+M) - 2^M`), and the
    /// exponent lands in between, so a merge is a mask, a multiply and two adds besides the
    /// exponent's own shift, and the dead-bit shift in frames that have dead bits (where four
    /// shifts and a mask took the vector shifter's ports twice as long).
    struct Merge {
        /// Dead bits `k`, and whether there are any.
        dead: __m128i,
        any_dead: bool,
        /// Mantissa bits `M`, where the exponent goes.
        exponent: __m128i,
        /// `2^M`: the sign's bit once shifted by the dead bits.
        sign_bit: u32,
        /// `2^E - 1`.
        sign_factor: u32,
    }

    impl Merge {
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn new(fields: &Fields) -> Merge {
            Merge {
                dead: _mm_cvtsi32_si128(fields.k as i32),
                any_dead: fields.k > 0,
                exponent: _mm_cvtsi32_si128(fields.m as i32),
                sign_bit: 1 << fields.m,
                sign_factor: (1 << fields.e) - 1,
            }
        }

        /// Merges 16 exponents (the bytes of `x`) with 16 residuals (as [`Residuals::load16`]
        /// gives them): the 16 elements in the first register for `B == 2`, 8 in each for
        /// `B == 4`.
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn elements16<const B: usize>(
            &self,
            x: __m128i,
            r0: __m256i,
            r1: __m256i,
        ) -> (__m256i, __m256i) {
            if B == 2 {
                // (Most frames have no dead bits: no shift for them.)
                let r = if self.any_dead {
                    _mm256_sll_epi16(r0, self.dead)
                } else {
                    r0
                };
                let sign = _mm256_and_si256(r, _mm256_set1_epi16(self.sign_bit as u16 as i16));
                let factor = _mm256_set1_epi16(self.sign_factor as i16);
                let r = _mm256_add_epi16(r, _mm256_mullo_epi16(sign, factor));
                let exp = _mm256_sll_epi16(_mm256_cvtepu8_epi16(x), self.exponent);
                (_mm256_add_epi16(r, exp), r1)
            } else {
                let (bit, factor) = (
                    _mm256_set1_epi32(self.sign_bit as i32),
                    _mm256_set1_epi32(self.sign_factor as i32),
                );
                let mut u = [r0, r1];
                for (half, u) in u.iter_mut().enumerate() {
                    let xh = if half == 0 { x } else { _mm_srli_si128::<8>(x) };
                    let r = if self.any_dead {
                        _mm256_sll_epi32(*u, self.dead)
                    } else {
                        *u
                    };
                    let sign = _mm256_and_si256(r, bit);
                    let r = _mm256_add_epi32(r, _mm256_mullo_epi32(sign, factor));
                    let exp = _mm256_sll_epi32(_mm256_cvtepu8_epi32(xh), self.exponent);
                    *u = _mm256_add_epi32(r, exp);
                }
                (u[0], u[1])
            }
        }

        /// [`Merge::elements16`], stored at `out` (`16 * B` bytes).
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn store16<const B: usize>(
            &self,
            x: __m128i,
            r0: __m256i,
            r1: __m256i,
            out: *mut u8,
        ) {
            let (u0, u1) = self.elements16::<B>(x, r0, r1);
            _mm256_storeu_si256(out.cast(), u0);
            if B == 4 {
                _mm256_storeu_si256(out.add(32).cast(), u1);
            }
        }
    }

    /// [`kernels::merge_store`] (`L` is `u16` for `B == 2`, `u32` for `B == 4`).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn merge<const B: usize, L: Lane>(fields: &Fields, x: &[u8], r: &[L], out: &mut [u8]) {
        let merge = Merge::new(fields);
        let n = x.len().min(r.len()).min(out.len() / B);
        let rb: &[u8] = bytemuck::cast_slice(&r[..n]);
        let blocks = out[..B * n]
            .chunks_exact_mut(16 * B)
            .zip(x[..n].chunks_exact(16))
            .zip(rb.chunks_exact(16 * B));
        for ((o, xs), rs) in blocks {
            let xv = _mm_loadu_si128(window::<16>(xs, 0).cast());
            // `rs` holds 16 residuals: one register for B == 2, two for B == 4.
            let r0 = _mm256_loadu_si256(window::<32>(rs, 0).cast());
            let r1 = if B == 2 {
                r0
            } else {
                _mm256_loadu_si256(window::<32>(rs, 32).cast())
            };
            // `o` is exactly the `16 * B` bytes `store16` writes (the pointer must come from it,
            // not from a shorter window of it).
            merge.store16::<B>(xv, r0, r1, o.as_mut_ptr());
        }
        let q = n / 16 * 16;
        kernels::merge_store::<B, L>(fields, &x[q..n], &r[q..n], &mut out[B * q..B * n]);
    }

    /// Where [`resolve_store`] reads the residuals: straight from the plane's words when the
    /// chunk is one run of words in every sub-plane (the usual case), else from lanes unpacked
    /// beforehand. (Built once per chunk on the stack, so its size does not matter.)
    #[allow(clippy::large_enum_variant)]
    enum Residuals {
        Words {
            /// Per sub-plane: byte offset of the chunk's first word, bit to take, bit to place
            /// at, field mask.
            subs: [Words16; 5],
            len: usize,
        },
        Lanes(*const u8),
    }

    impl Residuals {
        /// The words of a plane's `len` sub-planes as [`residual_words`] found them.
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn words(words: &PlaneWords, len: usize) -> Residuals {
            Residuals::Words {
                subs: words16(words),
                len,
            }
        }

        /// The residuals of elements `at..at + 16` of the chunk: 16-bit lanes in the first
        /// register for `B == 2`; 32-bit lanes, 8 per register, for `B == 4`.
        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn load16<const B: usize>(&self, frame: *const u8, at: usize) -> (__m256i, __m256i) {
            match self {
                Residuals::Lanes(r) => {
                    // 16 lanes of `B` bytes: one register for 2-byte lanes, two for 4-byte ones
                    // (reading a second one for 2-byte lanes would pass the array's end).
                    let r = r.add(B * at);
                    let hi = if B == 4 {
                        _mm256_loadu_si256(r.add(32).cast())
                    } else {
                        _mm256_setzero_si256()
                    };
                    (_mm256_loadu_si256(r.cast()), hi)
                }
                Residuals::Words { subs, len } => fields16::<B>(frame, &subs[..*len], at),
            }
        }
    }

    /// A sub-plane's words for [`fields16`]: byte offset of the chunk's first word, bit to take,
    /// bit to place at, field mask.
    type Words16 = (usize, __m128i, __m128i, __m256i);

    /// The fields of 16 values from `at` on, one 16-word load per sub-plane (shift, mask,
    /// place, OR): 16-bit lanes in the first register for `B == 2`; 32-bit lanes, 8 per
    /// register, for `B == 4`.
    ///
    /// SAFETY: every sub-plane's words `offset + 2 * (at..at + 16)` lie in the buffer at `fp`.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn fields16<const B: usize>(
        fp: *const u8,
        subs: &[Words16],
        at: usize,
    ) -> (__m256i, __m256i) {
        let field = |&(offset, take, _, mask): &Words16| {
            let w = _mm256_loadu_si256(fp.add(offset + 2 * at).cast());
            _mm256_and_si256(_mm256_srl_epi16(w, take), mask)
        };
        let widen = |f: __m256i| {
            (
                _mm256_cvtepu16_epi32(_mm256_castsi256_si128(f)),
                _mm256_cvtepu16_epi32(_mm256_extracti128_si256::<1>(f)),
            )
        };
        let Some((first, rest)) = subs.split_first() else {
            return (_mm256_setzero_si256(), _mm256_setzero_si256());
        };
        // The first sub-plane's fields sit at bit 0 of the value (FORMAT.md 4.5): no shift.
        let (mut lo, mut hi) = if B == 2 {
            (field(first), _mm256_setzero_si256())
        } else {
            widen(field(first))
        };
        for sub in rest {
            let (f, place) = (field(sub), sub.2);
            if B == 2 {
                lo = _mm256_or_si256(lo, _mm256_sll_epi16(f, place));
            } else {
                let (f0, f1) = widen(f);
                lo = _mm256_or_si256(lo, _mm256_sll_epi32(f0, place));
                hi = _mm256_or_si256(hi, _mm256_sll_epi32(f1, place));
            }
        }
        (lo, hi)
    }

    /// [`residual_words`]' findings as [`fields16`] takes them.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn words16(words: &PlaneWords) -> [Words16; 5] {
        words.map(|(offset, take, place, mask)| {
            (
                offset,
                _mm_cvtsi32_si128(take as i32),
                _mm_cvtsi32_si128(place as i32),
                _mm256_set1_epi16(mask as i16),
            )
        })
    }

    /// The exponents of 32 codes `c` (below 16): the escaped ones (code = `escapes`' bytes) take
    /// the next queued exponents from `queue` in order, the others their entry of `lut` (the
    /// table in both halves). Also returns the escape mask. Each escaped lane's queue index is
    /// the count of escaped lanes before it, by a prefix sum of the compare within each 16-lane
    /// half (the upper half reads on from where the lower half's escapes end).
    ///
    /// SAFETY: 32 bytes readable at `queue`.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn resolve32(
        c: __m256i,
        lut: __m256i,
        escapes: __m256i,
        queue: *const u8,
    ) -> (__m256i, u32) {
        let escaped = _mm256_cmpeq_epi8(c, escapes);
        let bits = _mm256_movemask_epi8(escaped) as u32;
        // Minus the escaped lanes up to and including each lane, per 128-bit half.
        let mut sum = escaped;
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<1>(sum));
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<2>(sum));
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<4>(sum));
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<8>(sum));
        // `!sum` = that count - 1: an escaped lane's index among its half's values.
        let index = _mm256_xor_si256(sum, _mm256_set1_epi8(-1));
        let low = (bits as u16).count_ones() as usize;
        let values = _mm256_set_m128i(
            _mm_loadu_si128(queue.add(low).cast()),
            _mm_loadu_si128(queue.cast()),
        );
        let placed = _mm256_shuffle_epi8(values, index);
        let x = _mm256_blendv_epi8(_mm256_shuffle_epi8(lut, c), placed, escaped);
        (x, bits)
    }

    /// The first `N` of a plane's sub-planes (the caller knows it has `N`), as an array.
    #[inline(always)]
    fn first<const N: usize, T: Copy>(words: &[T; 5]) -> [T; N] {
        core::array::from_fn(|i| words[i])
    }

    /// What [`ranked_chunk_avx2`]'s steps share: the merge, the lookup table, the escape code,
    /// the frame, output and queue, and how to store and whether to hash.
    struct RankedStep {
        merge: Merge,
        lut: __m256i,
        escapes: __m256i,
        fp: *const u8,
        op: *mut u8,
        dp: *const u8,
        count: usize,
        hashing: bool,
    }

    // The methods are inlined into `ranked_chunk_avx2` (its target features apply; too large
    // for `#[inline]` alone, and `#[inline(always)]` cannot carry `#[target_feature]`).
    impl RankedStep {
        /// The chunk's first `blocks` elements (a multiple of 64), 32 per step; `C` and `R`
        /// give the code plane's and the residual plane's sub-planes. Returns how many queued
        /// exponents they took, or None when they escape more than the queue holds.
        ///
        /// `BYTES`: 2-byte elements whose exponent and residual are a byte each (bf16 without
        /// dead bits, its residual one 8-bit sub-plane), merged as bytes ([`Self::bytes32`]).
        ///
        /// SAFETY: as [`ranked_chunk_avx2`] checks: the planes' words for the blocks in the
        /// frame, the output in bounds, 32 readable queue bytes past each of `count`.
        #[inline(always)]
        unsafe fn blocks<
            const B: usize,
            const BYTES: bool,
            C: AsRef<[Words16]>,
            R: AsRef<[Words16]>,
        >(
            &self,
            codes: C,
            residuals: R,
            blocks: usize,
            acc: &mut [__m256i; 4],
        ) -> Option<usize> {
            let (codes, residuals) = (codes.as_ref(), residuals.as_ref());
            let (mut k, mut first) = (0, 0);
            if BYTES {
                // bf16's byte merge leaves registers for four steps' exponents ahead of their
                // merges (decode 1.06x from memory, 1.08x in cache over two; six: 0.99x;
                // four for fp16: 0.98-0.99x; for fp32 they spilled, 0.55x).
                while first + 128 <= blocks {
                    k = self.pass::<B, BYTES, 2>(codes, residuals, first, k, acc)?;
                    first += 128;
                }
            }
            // Two steps at a time: the second step's codes and queue reads overlap the first
            // one's merge (decode 1.03-1.06x over one; one step ahead in a loop, 0.98x).
            for block in (first..blocks).step_by(64) {
                k = self.pass::<B, BYTES, 1>(codes, residuals, block, k, acc)?;
            }
            Some(k)
        }

        /// `BLOCKS` h32 blocks of 64 elements from `first`, from queued exponent `k` on: all
        /// their steps' exponents first, then their merges (each h32 register's place in a
        /// block is a constant). Returns the next `k`, or None past the queue's count.
        #[inline(always)]
        unsafe fn pass<const B: usize, const BYTES: bool, const BLOCKS: usize>(
            &self,
            codes: &[Words16],
            residuals: &[Words16],
            first: usize,
            mut k: usize,
            acc: &mut [__m256i; 4],
        ) -> Option<usize> {
            let mut x = [[_mm256_setzero_si256(); 2]; BLOCKS];
            for (block, x) in x.iter_mut().enumerate() {
                for (step, x) in x.iter_mut().enumerate() {
                    (*x, k) = self.exponents32(codes, first + 64 * block + 32 * step, k)?;
                }
            }
            for (block, &[x0, x1]) in x.iter().enumerate() {
                self.finish32::<B, BYTES, 0>(residuals, first + 64 * block, x0, acc);
                self.finish32::<B, BYTES, 1>(residuals, first + 64 * block, x1, acc);
            }
            Some(k)
        }

        /// The exponents of elements `at..at + 32` from queued exponent `k` on, and the next
        /// `k` (None past the queue's count).
        #[inline(always)]
        unsafe fn exponents32(
            &self,
            codes: &[Words16],
            at: usize,
            k: usize,
        ) -> Option<(__m256i, usize)> {
            let (c0, _) = fields16::<2>(self.fp, codes, at);
            let (c1, _) = fields16::<2>(self.fp, codes, at + 16);
            let c = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(c0, c1));
            let (x, bits) = resolve32(c, self.lut, self.escapes, self.dp.add(k));
            let k = k + bits.count_ones() as usize;
            if k > self.count {
                return None;
            }
            Some((x, k))
        }

        /// The 64 output bytes of 32 bf16 elements from their exponents `x` (in order) and the
        /// residual bytes of the elements `at..at + 32`: a byte select per half instead of the
        /// 16-bit merge's shifts (low byte: exponent bit 0 over the 7 mantissa bits; high byte:
        /// the sign over the exponent's upper 7 bits), then interleaved.
        #[inline(always)]
        unsafe fn bytes32(
            &self,
            residuals: &[Words16],
            x: __m256i,
            at: usize,
        ) -> (__m256i, __m256i) {
            let (r0, _) = fields16::<2>(self.fp, residuals, at);
            let (r1, _) = fields16::<2>(self.fp, residuals, at + 16);
            // Both in the order the byte packing leaves them (per half: 8 of the first 16,
            // then 8 of the second), which the byte interleave below puts back in order.
            let r = _mm256_packus_epi16(r0, r1);
            let x = _mm256_permute4x64_epi64::<0xD8>(x);
            let top = _mm256_set1_epi8(-128);
            // A 16-bit shift moves each byte's bit 0 to its bit 7 (or bits 1-7 down); the
            // select keeps only what belongs to the byte.
            let x7 = _mm256_slli_epi16::<7>(x);
            let low = _mm256_xor_si256(r, _mm256_and_si256(_mm256_xor_si256(r, x7), top));
            let x1 = _mm256_srli_epi16::<1>(x);
            let high = _mm256_xor_si256(x1, _mm256_and_si256(_mm256_xor_si256(x1, r), top));
            (
                _mm256_unpacklo_epi8(low, high),
                _mm256_unpackhi_epi8(low, high),
            )
        }

        /// Elements `block + 32 STEP..` (32 of them) from their exponents `x`: the residuals
        /// read, merged, stored and hashed.
        #[inline(always)]
        unsafe fn finish32<const B: usize, const BYTES: bool, const STEP: usize>(
            &self,
            residuals: &[Words16],
            block: usize,
            x: __m256i,
            acc: &mut [__m256i; 4],
        ) {
            let at = block + 32 * STEP;
            if BYTES {
                let (u0, u1) = self.bytes32(residuals, x, at);
                self.store(2 * at, u0);
                self.store(2 * at + 32, u1);
                if self.hashing {
                    let j = 2 * STEP;
                    acc[j] = h32_round256(acc[j], u0);
                    acc[j + 1] = h32_round256(acc[j + 1], u1);
                }
                return;
            }
            for half in 0..2 {
                let at = at + 16 * half;
                let xh = if half == 0 {
                    _mm256_castsi256_si128(x)
                } else {
                    _mm256_extracti128_si256::<1>(x)
                };
                let (r0, r1) = fields16::<B>(self.fp, residuals, at);
                let (u0, u1) = self.merge.elements16::<B>(xh, r0, r1);
                self.store(B * at, u0);
                if B == 4 {
                    self.store(B * at + 32, u1);
                }
                if self.hashing {
                    // Register `j` of the h32 state hashes bytes `32 j..` of each 128.
                    let j = B * (32 * STEP + 16 * half) % checksum::BLOCK / 32;
                    acc[j] = h32_round256(acc[j], u0);
                    if B == 4 {
                        acc[j + 1] = h32_round256(acc[j + 1], u1);
                    }
                }
            }
        }

        /// 32 output bytes at byte `at` of the output.
        #[inline(always)]
        unsafe fn store(&self, at: usize, v: __m256i) {
            _mm256_storeu_si256(self.op.add(at).cast(), v);
        }
    }

    /// [`Isa::ranked_chunk`] on AVX2 in one pass per 32 elements: the codes from the plane's
    /// words (shift, mask, narrow), their exponents by [`resolve32`], the residuals read in place,
    /// merged, stored and hashed in registers (no array of codes, masks or residuals between
    /// passes). Chunks whose planes do not lie in one run of words, and the last elements short
    /// of 64, take the separate steps.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn ranked_chunk_avx2<const B: usize, L: Lane>(
        isa: Avx2,
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
        let steps = |start: usize, deeper: Escapes<'_>, out: &mut [u8], hash: Option<&mut H32>| {
            ranked_chunk_steps::<B, L, Avx2>(
                isa, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
            )
        };
        // 32 readable queue bytes past every exponent a step can start at (`k <= deeper.count`
        // before each step).
        let words = one_pass_words(frame, plane, residual, start, blocks, &deeper, &hash, 32);
        let Some((code_words, residual_words)) = words else {
            return steps(start, deeper, out, hash);
        };
        let (codes, residuals) = (words16(&code_words), words16(&residual_words));
        let step = RankedStep {
            merge: Merge::new(fields),
            lut: _mm256_broadcastsi128_si256(_mm_loadu_si128(table.as_ptr().cast())),
            escapes: _mm256_set1_epi8(escape as i8),
            fp: frame.as_ptr(),
            op: out.as_mut_ptr(),
            dp: deeper.values.as_ptr(),
            count: deeper.count,
            hashing: hash.is_some(),
        };
        let mut acc = h32_lanes(hash.as_deref());
        // The common sub-plane counts as arrays of fixed length, through which the steps run
        // unrolled with the words' shifts in registers (codes: 1 or 2; residuals: 1 to 3).
        let (c, r) = (&codes[..plane.len], &residuals[..residual.len]);
        let (c1, c2) = (first::<1, _>(&codes), first::<2, _>(&codes));
        let (r1, r2, r3) = (
            first::<1, _>(&residuals),
            first::<2, _>(&residuals),
            first::<3, _>(&residuals),
        );
        let a = &mut acc;
        // bf16 without dead bits: exponent and residual (one 8-bit sub-plane) are bytes.
        let bytes = B == 2 && (fields.e, fields.m, fields.k) == (8, 7, 0) && r.len() == 1;
        let k = match (bytes, c.len(), r.len()) {
            (true, 1, _) => step.blocks::<B, true, _, _>(c1, r1, blocks, a),
            (true, 2, _) => step.blocks::<B, true, _, _>(c2, r1, blocks, a),
            (_, 1, 1) => step.blocks::<B, false, _, _>(c1, r1, blocks, a),
            (_, 1, 2) => step.blocks::<B, false, _, _>(c1, r2, blocks, a),
            (_, 1, 3) => step.blocks::<B, false, _, _>(c1, r3, blocks, a),
            (_, 2, 1) => step.blocks::<B, false, _, _>(c2, r1, blocks, a),
            (_, 2, 2) => step.blocks::<B, false, _, _>(c2, r2, blocks, a),
            (_, 2, 3) => step.blocks::<B, false, _, _>(c2, r3, blocks, a),
            _ => step.blocks::<B, false, _, _>(c, r, blocks, a),
        }?;
        h32_store(hash.as_deref_mut(), acc, B * blocks);
        let rest = |rest, out: &mut [u8]| steps(start + blocks, rest, out, hash);
        rest_steps(k, deeper, &mut out[B * blocks..B * n], rest)
    }

    /// [`Isa::level_chunk`] on AVX2: planes of one or two sub-planes by [`level_rows_avx2`];
    /// others have their codes unpacked into `out` (the plane's rows are short here, so
    /// [`unpack`] follows them), then one pass per 32 entries in place, [`resolve32`] and one
    /// store (separate passes had a mispredicted branch per 16 entries on whether any
    /// escaped). The last entries short of 32 take the separate steps.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn level_chunk_avx2(
        isa: Avx2,
        frame: &[u8],
        plane: &Plane,
        start: usize,
        table: &[u8; MAX_SYMBOLS],
        escape: u8,
        deeper: Escapes<'_>,
        out: &mut [u8],
    ) -> Option<usize> {
        let n = out.len().min(kernels::CHUNK);
        // 32 readable queue bytes past every exponent a step can start at.
        let steps = if deeper.values.len() >= deeper.count + 32 {
            n / 32 * 32
        } else {
            0
        };
        let lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(table.as_ptr().cast()));
        let escapes = _mm256_set1_epi8(escape as i8);
        let (op, dp) = (out.as_mut_ptr(), deeper.values.as_ptr());
        let rest = |k: usize, out: &mut [u8]| {
            rest_steps(k, deeper, &mut out[steps..n], |rest, out| {
                level_chunk_steps(isa, frame, plane, start + steps, table, escape, rest, out)
            })
        };
        // Planes of one or two sub-planes (every width of at most 16 symbols: 1 to 4) read
        // across their rows, 32 entries per step, in registers.
        // SAFETY: `row_cursors_avx2` checked every sub-plane's words and the margins the
        // steps read around them; `steps <= n` bytes of `out`; 32 queue bytes readable past
        // every queued exponent.
        if steps > 0 {
            let fp = frame.as_ptr();
            if let Some(cursors) = row_cursors_avx2::<1>(frame, plane, start) {
                let k = level_rows_avx2(fp, cursors, steps, lut, escapes, deeper, op)?;
                return rest(k, out);
            }
            if let Some(cursors) = row_cursors_avx2::<2>(frame, plane, start) {
                let k = level_rows_avx2(fp, cursors, steps, lut, escapes, deeper, op)?;
                return rest(k, out);
            }
        }
        // The codes go to `out` first; each step then replaces its 32 by their exponents.
        unpack(frame, plane, start, &mut out[..steps]);
        let mut k = 0;
        for at in (0..steps).step_by(32) {
            // SAFETY: `at + 32 <= steps <= n`: the codes and the output `at..at + 32` are in
            // bounds; `k <= deeper.count` (checked after every step), so the queue bytes
            // `k..k + 32` are readable.
            let c = _mm256_loadu_si256(op.add(at).cast());
            let (x, bits) = resolve32(c, lut, escapes, dp.add(k));
            _mm256_storeu_si256(op.add(at).cast(), x);
            k += bits.count_ones() as usize;
            if k > deeper.count {
                return None;
            }
        }
        rest(k, out)
    }

    /// [`row_cursors`] for [`level_rows_avx2`], whose steps read 16 words past a row's end and
    /// 16 words before the next row's start (lanes they then drop): every sub-plane also has
    /// 64 bytes of the frame before its first word and after its last.
    fn row_cursors_avx2<const N: usize>(
        frame: &[u8],
        plane: &Plane,
        start: usize,
    ) -> Option<[RowCursor; N]> {
        let margins = plane
            .subs()
            .iter()
            .all(|sub| sub.offset >= 64 && sub.offset + 2 * sub.words + 64 <= frame.len());
        margins
            .then(|| row_cursors::<N>(frame, plane, start))
            .flatten()
    }

    /// [`level_chunk_avx2`]'s steps of 32 entries through the [`RowCursor`]s of a plane's `N`
    /// sub-planes, kept in registers: a step inside every row reads whole words; one that
    /// reaches a row's end takes its lanes past it from the next row's first words, one field
    /// higher, by a blend. Then [`resolve32`] and one store. Returns how many queued
    /// exponents the `n` entries (a multiple of 32) took.
    ///
    /// SAFETY: as [`row_cursors_avx2`] checks; `n` bytes writable at `out`; 32 bytes readable
    /// past each of the `deeper.count` queued exponents.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn level_rows_avx2<const N: usize>(
        fp: *const u8,
        mut cursors: [RowCursor; N],
        n: usize,
        lut: __m256i,
        escapes: __m256i,
        deeper: Escapes<'_>,
        out: *mut u8,
    ) -> Option<usize> {
        let lanes = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let mut k = 0;
        for at in (0..n).step_by(32) {
            let in_row = cursors.iter().all(|c| c.words - c.word >= 32);
            let mut codes = [_mm256_setzero_si256(); 2];
            for c in &mut cursors {
                let row = fp.wrapping_add(c.offset + 2 * c.word);
                let (mask, place) = (
                    _mm256_set1_epi16(c.mask as i16),
                    _mm_cvtsi32_si128(c.place as i32),
                );
                let take = _mm_cvtsi32_si128(c.bit as i32);
                let left = c.words - c.word;
                for (half, codes) in codes.iter_mut().enumerate() {
                    let here = _mm256_loadu_si256(row.add(32 * half).cast());
                    let mut w = _mm256_srl_epi16(here, take);
                    if !in_row && left < 32 {
                        // Lanes `left..` are words `0..` of the next row, one field higher
                        // (read from 2 W bytes back; the lanes before them are dropped).
                        let next = row.wrapping_sub(2 * c.words).add(32 * half);
                        let next = _mm256_srl_epi16(
                            _mm256_loadu_si256(next.cast()),
                            _mm_cvtsi32_si128((c.bit + c.bits) as i32),
                        );
                        let index = _mm256_add_epi16(lanes, _mm256_set1_epi16(16 * half as i16));
                        let in_this_row = _mm256_cmpgt_epi16(_mm256_set1_epi16(left as i16), index);
                        w = _mm256_blendv_epi8(next, w, in_this_row);
                    }
                    let field = _mm256_sll_epi16(_mm256_and_si256(w, mask), place);
                    *codes = _mm256_or_si256(*codes, field);
                }
                let wrapped = usize::from(left <= 32);
                c.word = c.word + 32 - wrapped * c.words;
                c.bit += wrapped as u32 * c.bits;
            }
            let c = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(codes[0], codes[1]));
            // SAFETY: the caller's; `k <= deeper.count` (checked after every step).
            let (x, bits) = resolve32(c, lut, escapes, deeper.values.as_ptr().add(k));
            _mm256_storeu_si256(out.add(at).cast(), x);
            k += bits.count_ones() as usize;
            if k > deeper.count {
                return None;
            }
        }
        Some(k)
    }

    /// [`kernels::resolve_store`] with the residual unpack fused in, for tables of at most 16
    /// symbols: per 16 elements one byte shuffle looks the codes up, the escape mask's shuffle
    /// pattern places the deeper exponents, the residual fields are read from their words, and
    /// the merge stores the elements, with no intermediate array.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn resolve_store<const B: usize, L: Lane>(
        fields: &Fields,
        frame: &[u8],
        plane: &Plane,
        start: usize,
        codes: &[u8],
        table: &[u8; 16],
        masks: &[u64],
        deeper: &[u8],
        out: &mut [u8],
    ) {
        let n = codes.len().min(out.len() / B).min(kernels::CHUNK);
        // Only a chunk that is not one run of words per sub-plane unpacks its residuals here.
        let lanes: [L; kernels::CHUNK];
        let residuals = match residual_words(frame, plane, start, n) {
            Some(words) => Residuals::words(&words, plane.len),
            None => {
                let mut unpacked = [L::default(); kernels::CHUNK];
                unpack(frame, plane, start, &mut unpacked[..n]);
                lanes = unpacked;
                Residuals::Lanes(lanes.as_ptr().cast())
            }
        };
        let merge = Merge::new(fields);
        let lut = _mm_loadu_si128(table.as_ptr().cast());
        let (mut k, mut q) = (0, 0);
        // Whole blocks of 64 (one mask word). Before a block `k <= q` (at most one value per
        // element so far), so `deeper.len() >= n + 16` lets every 16-byte read below stay inside.
        if deeper.len() >= n + 16 {
            while q + 64 <= n {
                let mut bits = masks[q / 64];
                let block = q;
                for step in 0..4 {
                    let at = block + 16 * step;
                    // SAFETY: `at + 16 <= n <= codes.len()`, `k + 16 <= at + 16 <= deeper.len()`,
                    // the output range is `B * (at..at + 16) <= B * n`, and the residual words
                    // were checked above (or the lanes hold `n` residuals).
                    let c = _mm_loadu_si128(codes.as_ptr().add(at).cast());
                    let pattern = expand_pattern(bits as u16);
                    let values = _mm_loadu_si128(deeper.as_ptr().add(k).cast());
                    let placed = _mm_shuffle_epi8(values, pattern);
                    let x = _mm_blendv_epi8(placed, _mm_shuffle_epi8(lut, c), pattern);
                    let (r0, r1) = residuals.load16::<B>(frame.as_ptr(), at);
                    merge.store16::<B>(x, r0, r1, out.as_mut_ptr().add(B * at));
                    k += (bits as u16).count_ones() as usize;
                    bits >>= 16;
                }
                q += 64;
            }
        }
        if q < n {
            // The last elements (fewer than 64, or too near the end of `deeper`): the portable
            // step, from the next mask word (`q` is a multiple of 64) and deeper value on.
            Portable.resolve_store::<B, L>(
                fields,
                frame,
                plane,
                start + q,
                &codes[q..n],
                &table_of(table),
                16,
                &masks[q / 64..],
                &deeper[k..],
                &mut out[B * q..B * n],
            );
        }
    }

    /// The fields of 32 values from `at` on, in 16-bit lanes: per sub-plane (offset, bit to take
    /// the field from, bit to place it at, mask) the field of 32 consecutive words; only the
    /// words of the set bits of `lanes` are read (the other lanes are zero).
    ///
    /// SAFETY: the caller checked that every sub-plane's words `offset + 2 * (at + i)` for the
    /// set bits `i` of `lanes` lie in the buffer at `fp`.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn fields32(fp: *const u8, subs: &[SubShifts], at: usize, lanes: u32) -> __m512i {
        let mut v = _mm512_setzero_si512();
        for sub in subs {
            let words = fp.wrapping_add(sub.offset + 2 * at).cast();
            let w = if lanes == u32::MAX {
                _mm512_loadu_si512(words)
            } else {
                _mm512_maskz_loadu_epi16(lanes, words.cast())
            };
            // Rotating the 32-bit pairs of words moves each word's field from its bit to its
            // place in one step (what comes in from the other word of the pair lands outside the
            // field: `take + p <= 16` and `place + p <= 16`); the placed mask keeps it alone.
            let f = _mm512_rolv_epi32(w, _mm512_set1_epi32(sub.rotate as i32));
            v = _mm512_ternarylogic_epi64::<0xF8>(v, f, _mm512_set1_epi32(sub.placed as i32));
        }
        v
    }

    /// [`fields32`] of all 32 lanes for fields wider than 16 bits: 32-bit lanes, the first 16
    /// values in the first vector.
    ///
    /// SAFETY: as [`fields32`]'s.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn fields32_wide(fp: *const u8, subs: &[SubShifts], at: usize) -> (__m512i, __m512i) {
        let (mut lo, mut hi) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for sub in subs {
            let w = _mm512_loadu_si512(fp.add(sub.offset + 2 * at).cast());
            // Each word widened to 32 bits, then as in `fields32`: a rotation takes its field
            // to its place (only the word's own bits come round), the placed mask keeps it.
            let (rotate, placed) = (
                _mm512_set1_epi32(sub.rotate as i32),
                _mm512_set1_epi32(sub.placed_wide as i32),
            );
            let f0 = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(w));
            let f1 = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(w));
            lo = _mm512_ternarylogic_epi64::<0xF8>(lo, _mm512_rolv_epi32(f0, rotate), placed);
            hi = _mm512_ternarylogic_epi64::<0xF8>(hi, _mm512_rolv_epi32(f1, rotate), placed);
        }
        (lo, hi)
    }

    /// [`kernels::compress`] on bytes, 64 lanes per step: `vpcompressb` and one 64-byte store
    /// where `out` has room for it, else the portable step.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn compress512(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        let n = values.len();
        let mut k = 0;
        for q in (0..n).step_by(64) {
            let bits = masks[q / 64];
            if q + 64 <= n && k + 64 <= out.len() {
                let v = _mm512_loadu_si512(window::<64>(values, q).cast());
                let picked = _mm512_maskz_compress_epi8(bits, v);
                _mm512_storeu_si512(window_mut::<64>(out, k).cast(), picked);
                k += bits.count_ones() as usize;
            } else {
                k += kernels::compress(&[bits], &values[q..n.min(q + 64)], &mut out[k..]);
            }
        }
        k
    }

    /// [`kernels::expand`] on bytes, 64 lanes per step: `vpexpandb` merged into the old lanes
    /// where 64 values can be read, else the portable step.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn expand512(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        let n = out.len();
        let mut k = 0;
        for q in (0..n).step_by(64) {
            let bits = masks[q / 64];
            if bits == 0 {
                continue;
            }
            if q + 64 <= n && k + 64 <= values.len() {
                let v = _mm512_loadu_si512(window::<64>(values, k).cast());
                let o = window_mut::<64>(out, q).cast::<__m512i>();
                _mm512_storeu_si512(o, _mm512_mask_expand_epi8(_mm512_loadu_si512(o), bits, v));
                k += bits.count_ones() as usize;
            } else {
                k += kernels::expand(&[bits], &values[k..], &mut out[q..n.min(q + 64)]);
            }
        }
        k
    }

    /// [`kernels::escape_masks`]: one compare per 64 codes, straight into a mask word.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn escape_masks512(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
        let splat = _mm512_set1_epi8(escape as i8);
        let full = codes.len() / 64;
        let mut total = 0;
        for (q, mask) in masks.iter_mut().enumerate().take(full) {
            let c = _mm512_loadu_si512(window::<64>(codes, 64 * q).cast());
            *mask = _mm512_cmpeq_epi8_mask(c, splat);
            total += mask.count_ones() as usize;
        }
        total + kernels::escape_masks(&codes[64 * full..], escape, &mut masks[full..])
    }

    /// [`Isa::level_codes`] in one pass per 64 exponents: the code table (256 bytes, four
    /// registers) looked up by two `vpermt2b` and a blend on the top bit, a compare for the
    /// escapes and `vpcompressb` (register form: the memory form is slow on some cores) of the
    /// escaped exponents. The last exponents short of 64 go through masked loads and stores.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn level_codes512(
        x: &[u8],
        level: &LevelCodes,
        codes: &mut [u8],
        escaped: &mut [u8],
    ) -> usize {
        let n = x.len().min(codes.len()).min(kernels::CHUNK);
        let table = level.code.as_ptr();
        let [t0, t1, t2, t3] = [0, 64, 128, 192].map(|at| _mm512_loadu_si512(table.add(at).cast()));
        let escape = _mm512_set1_epi8(level.escape() as i8);
        let mut k = 0;
        // Whole blocks with a constant mask, then the last, partial one (as `for_each_step32`).
        let mut block = |q: usize, live: u64| {
            // SAFETY: the masked load reads only `x[q..n]`.
            let v = _mm512_maskz_loadu_epi8(live, x.as_ptr().add(q).cast());
            let low = _mm512_permutex2var_epi8(t0, v, t1);
            let high = _mm512_permutex2var_epi8(t2, v, t3);
            let c = _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), low, high);
            // SAFETY: the masked store writes only `codes[q..n]`.
            _mm512_mask_storeu_epi8(codes.as_mut_ptr().add(q).cast(), live, c);
            let hits = _mm512_cmpeq_epi8_mask(c, escape) & live;
            if hits != 0 {
                let count = hits.count_ones() as usize;
                let picked = _mm512_maskz_compress_epi8(hits, v);
                assert!(k + count <= escaped.len(), "room for the escaped exponents");
                // SAFETY: the masked store writes only `escaped[k..k + count]`, in bounds.
                let fill = _bzhi_u64(u64::MAX, count as u32); // the low `count` bits, 64 too
                _mm512_mask_storeu_epi8(escaped.as_mut_ptr().add(k).cast(), fill, picked);
                k += count;
            }
        };
        let whole = n / 64 * 64;
        for q in (0..whole).step_by(64) {
            block(q, u64::MAX);
        }
        if whole < n {
            block(whole, (1u64 << (n - whole)) - 1);
        }
        k
    }

    /// [`lookup16`], one byte shuffle per 64 codes.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn lookup16_512(codes: &[u8], table: &[u8; 16], out: &mut [u8]) {
        let lut = _mm512_broadcast_i32x4(_mm_loadu_si128(table.as_ptr().cast()));
        let n = codes.len().min(out.len());
        let full = n / 64 * 64;
        for q in (0..full).step_by(64) {
            let c = _mm512_loadu_si512(window::<64>(codes, q).cast());
            _mm512_storeu_si512(window_mut::<64>(out, q).cast(), _mm512_shuffle_epi8(lut, c));
        }
        lookup16(&codes[full..n], table, &mut out[full..n]);
    }

    /// Whether `hash` (if any) stands at an h32 block boundary: the vector kernels hash whole
    /// blocks in registers only from there.
    #[inline(always)]
    fn at_block(hash: &Option<&mut H32>) -> bool {
        hash.as_ref()
            .is_none_or(|h| h.len.is_multiple_of(checksum::BLOCK))
    }

    /// What the vector statistics kernels leave after their first `blocks` elements: the OR of
    /// those elements' 32-bit lanes (`or`) into the mantissa OR (2-byte elements: both halves
    /// of a lane), their count, and the last elements short of a block by the portable path.
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
        let or = if B == 2 { or | or >> 16 } else { or };
        stats.mantissa_or |= or & ((1 << fields.m) - 1);
        stats.counted += blocks;
        let n = x.len().min(input.len() / B).min(kernels::CHUNK);
        if blocks < n {
            let (input, x) = (&input[B * blocks..B * n], &mut x[blocks..n]);
            Portable.exponent_stats::<B>(fields, input, x, stats, hash);
        }
    }

    /// One `h32` round of 8 lanes (checksum.rs `round`; AVX2 has no rotate: two shifts).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn h32_round256(acc: __m256i, w: __m256i) -> __m256i {
        let w = _mm256_mullo_epi32(w, _mm256_set1_epi32(checksum::P2 as i32));
        let a = _mm256_add_epi32(acc, w);
        let a = _mm256_or_si256(_mm256_slli_epi32::<13>(a), _mm256_srli_epi32::<19>(a));
        _mm256_mullo_epi32(a, _mm256_set1_epi32(checksum::P1 as i32))
    }

    /// The h32 state's 32 lanes in four registers (register `j` hashes bytes `32 j..32 j + 32`
    /// of each 128-byte block), or zeros when not hashing.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn h32_lanes(hash: Option<&H32>) -> [__m256i; 4] {
        match hash {
            Some(h) => [0, 8, 16, 24].map(|j| _mm256_loadu_si256(h.acc[j..j + 8].as_ptr().cast())),
            None => [_mm256_setzero_si256(); 4],
        }
    }

    /// Stores [`h32_lanes`] back after `bytes` more were hashed.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn h32_store(hash: Option<&mut H32>, acc: [__m256i; 4], bytes: usize) {
        if let Some(h) = hash {
            for (j, a) in [0, 8, 16, 24].into_iter().zip(acc) {
                _mm256_storeu_si256(h.acc[j..j + 8].as_mut_ptr().cast(), a);
            }
            h.len += bytes;
        }
    }

    /// Exponents [`count_exponents_avx2`] counts in vector registers: a window of 16 values.
    const WINDOW: usize = 16;

    /// [`count_exponents_avx2`]'s counters of the window, two exponents per byte: byte `q` of
    /// register `p` counts exponent `base + 2 p` in its low nibble and `base + 2 p + 1` in its
    /// high one, for the elements `32 s + q`. A nibble holds 15: [`StatsWindow::flush`] every 15
    /// steps moves the counts to 32-bit halves of `totals`' 64-bit lanes.
    struct StatsWindow {
        nibbles: [__m256i; WINDOW / 2],
        totals: [__m256i; WINDOW / 2],
    }

    impl StatsWindow {
        /// Steps between flushes.
        const STEPS: usize = 15;

        #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
        #[inline]
        unsafe fn flush(&mut self) {
            let (low, zero) = (_mm256_set1_epi8(0x0F), _mm256_setzero_si256());
            for (n, t) in self.nibbles.iter_mut().zip(&mut self.totals) {
                let even = _mm256_sad_epu8(_mm256_and_si256(*n, low), zero);
                let odd = _mm256_sad_epu8(_mm256_and_si256(_mm256_srli_epi16::<4>(*n), low), zero);
                let both = _mm256_or_si256(even, _mm256_slli_epi64::<32>(odd));
                *t = _mm256_add_epi64(*t, both);
                *n = zero;
            }
        }
    }

    /// [`Isa::exponent_stats`] on AVX2, in two passes over the run (one pass did both, its
    /// registers spilling: encode 0.96x): [`hash_exponents_avx2`], then [`count_exponents_avx2`]
    /// over the exponents it stored. The last elements short of 64 take the portable path.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn exponent_stats_avx2<const B: usize>(
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        first: u8,
        stats: &mut FrameStats,
        hash: Option<&mut H32>,
    ) {
        let n = x.len().min(input.len() / B).min(kernels::CHUNK);
        // Whole h32 blocks only from a block boundary (else the portable path hashes).
        let blocks = if at_block(&hash) { n / 64 * 64 } else { 0 };
        let (or, hash) =
            hash_exponents_avx2::<B>(fields, &input[..B * blocks], &mut x[..blocks], hash);
        count_exponents_avx2(&x[..blocks], first, stats);
        stats_rest::<B>(fields, input, x, or, blocks, stats, hash);
    }

    /// The exponents of the elements of `input` (whole blocks of 64) into `x`, by shift, mask
    /// and narrowing, with the h32 rounds and the OR of their 32-bit lanes in registers.
    /// Returns the OR and the hash.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn hash_exponents_avx2<'h, const B: usize>(
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        mut hash: Option<&'h mut H32>,
    ) -> (u32, Option<&'h mut H32>) {
        let blocks = x.len().min(input.len() / B) / 64 * 64;
        let mut acc = h32_lanes(hash.as_deref());
        let hashing = hash.is_some();
        let m = _mm_cvtsi32_si128(fields.m as i32);
        let e_mask = (1u32 << fields.e) - 1;
        let mut or = _mm256_setzero_si256();
        let (ip, xp) = (input.as_ptr(), x.as_mut_ptr());
        for block in (0..blocks).step_by(64) {
            // Two steps of 32: each one's h32 registers are constants (an index that alternated
            // put them in memory).
            for half in 0..2 {
                let at = block + 32 * half;
                // SAFETY: `at + 32 <= blocks`: the input bytes `B * (at..at + 32)` and the
                // exponents `at..at + 32` are in bounds.
                // (Loops, not closures, in here: a closure does not get the target features.)
                let mut u = [_mm256_setzero_si256(); B];
                for (i, u) in u.iter_mut().enumerate() {
                    *u = _mm256_loadu_si256(ip.add(B * at + 32 * i).cast());
                }
                // 32 elements are half an h32 block (B = 2) or a whole one (B = 4).
                let lane = if B == 2 { 2 * half } else { 0 };
                for (i, &w) in u.iter().enumerate() {
                    if hashing {
                        acc[lane + i] = h32_round256(acc[lane + i], w);
                    }
                    or = _mm256_or_si256(or, w);
                }
                let exps = if B == 2 {
                    let mask = _mm256_set1_epi16(e_mask as i16);
                    let e0 = _mm256_and_si256(_mm256_srl_epi16(u[0], m), mask);
                    let e1 = _mm256_and_si256(_mm256_srl_epi16(u[1 % B], m), mask);
                    _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(e0, e1))
                } else {
                    let mask = _mm256_set1_epi32(e_mask as i32);
                    let mut e = [_mm256_setzero_si256(); B];
                    for (e, &u) in e.iter_mut().zip(&u) {
                        *e = _mm256_and_si256(_mm256_srl_epi32(u, m), mask);
                    }
                    let words = [
                        _mm256_packus_epi32(e[0], e[1 % B]),
                        _mm256_packus_epi32(e[2 % B], e[3 % B]),
                    ];
                    // Per 128-bit half, 4 exponents of each register in turn: back in order.
                    let bytes = _mm256_packus_epi16(words[0], words[1]);
                    _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
                };
                _mm256_storeu_si256(xp.add(at).cast(), exps);
            }
        }
        h32_store(hash.as_deref_mut(), acc, B * blocks);
        let mut lanes = [0u32; 8];
        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), or);
        (lanes.iter().fold(0, |a, &l| a | l), hash)
    }

    /// The histogram of the exponents `x` (whole steps of 32) into `stats`: a window of 16
    /// values around the frequent ones ([`FrameStats::frequent`]) by one byte shuffle and one
    /// add per two of them into nibble counters ([`StatsWindow`]), and the rare others one by
    /// one where a step has any (listing the others of a narrower window by 8-lane shuffles
    /// cost a sixth of encoding).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn count_exponents_avx2(x: &[u8], first: u8, stats: &mut FrameStats) {
        // The window: from 6 below the frequent ones, 11 below the sample's mode (more room
        // below: MiniLM's frames have 0.04% of their exponents outside in bf16 and fp32, none
        // in fp16; 0.1% from 9 below).
        let base = usize::from(first)
            .saturating_sub(6)
            .min(MAX_SYMBOLS - WINDOW);
        let (base_v, bias) = (_mm256_set1_epi8(base as i8), _mm256_set1_epi8(0x70));
        // Register `p` adds 1 for exponent `base + 2 p` and 16 for `base + 2 p + 1`.
        let tables: [__m256i; WINDOW / 2] = core::array::from_fn(|p| {
            let mut t = [0u8; 16];
            (t[2 * p], t[2 * p + 1]) = (1, 16);
            _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast()))
        });
        let mut counters = StatsWindow {
            nibbles: [_mm256_setzero_si256(); WINDOW / 2],
            totals: [_mm256_setzero_si256(); WINDOW / 2],
        };
        for (step, xs) in x.chunks_exact(32).enumerate() {
            let exps = _mm256_loadu_si256(window::<32>(xs, 0).cast());
            // `exps - base` below 16 keeps its low nibble and a clear top bit (the shuffles
            // read it); the rest saturate to a set top bit (the shuffles give 0 there).
            let index = _mm256_adds_epu8(_mm256_sub_epi8(exps, base_v), bias);
            for (n, &t) in counters.nibbles.iter_mut().zip(&tables) {
                *n = _mm256_add_epi8(*n, _mm256_shuffle_epi8(t, index));
            }
            let mut outside = _mm256_movemask_epi8(index) as u32;
            while outside != 0 {
                stats.histogram[usize::from(xs[outside.trailing_zeros() as usize])] += 1;
                outside &= outside - 1;
            }
            if step % StatsWindow::STEPS == StatsWindow::STEPS - 1 {
                counters.flush();
            }
        }
        counters.flush();
        for (p, t) in counters.totals.into_iter().enumerate() {
            // The four 64-bit lanes summed: the even exponent's count low, the odd one's high.
            let s = _mm_add_epi64(_mm256_castsi256_si128(t), _mm256_extracti128_si256::<1>(t));
            let both = _mm_cvtsi128_si64(_mm_add_epi64(s, _mm_unpackhi_epi64(s, s))) as u64;
            stats.histogram[base + 2 * p] += both as u32;
            stats.histogram[base + 2 * p + 1] += (both >> 32) as u32;
        }
    }

    /// Per-lane byte counters of `len <= 8` consecutive exponent values from `first`: byte
    /// `8 q + i` counts the elements of 64-bit lane `q` equal to `first + i`, at most 8 per
    /// block of 64 (so up to 31 blocks add up without wrapping).
    struct Window {
        first: __m512i,
        len: __m512i,
        counters: __m512i,
        start: u8,
        values: usize,
    }

    impl Window {
        #[target_feature(enable = "avx512f")]
        #[inline]
        unsafe fn new(first: u8, len: u8) -> Window {
            Window {
                first: _mm512_set1_epi8(first as i8),
                len: _mm512_set1_epi8(len as i8),
                counters: _mm512_setzero_si512(),
                start: first,
                values: usize::from(len),
            }
        }

        /// Adds the counts to `histogram`: after an 8x8 byte transpose (byte `8 i + q`) one
        /// lane per value, summed by `vpsadbw`.
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        #[inline]
        unsafe fn add_to(&self, histogram: &mut [u32; kernels::MAX_SYMBOLS]) {
            let transpose = _mm512_loadu_si512(TRANSPOSE8X8.as_ptr().cast());
            let by_lane = _mm512_permutexvar_epi8(transpose, self.counters);
            let mut totals = [0u64; 8];
            let sums = _mm512_sad_epu8(by_lane, _mm512_setzero_si512());
            _mm512_storeu_si512(totals.as_mut_ptr().cast(), sums);
            for (i, total) in totals.into_iter().enumerate().take(self.values) {
                histogram[usize::from(self.start) + i] += total as u32;
            }
        }
    }

    /// Counts the `live` bytes of `v` inside `window` (one range compare finds them all) and
    /// returns the mask of the others (live or not). Each counted value as one bit of a byte
    /// (`1 << index`); the affine transform by these bytes as a bit matrix transposes each
    /// lane's 8x8 bits, so byte `i` of a lane holds one bit per element of value `first + i`,
    /// which `vpopcntb` counts: four instructions per block where a compare and a masked add
    /// per value took sixteen (encode +4% bf16, +10% fp16).
    #[target_feature(enable = "avx512f,avx512bw,avx512bitalg,gfni")]
    #[inline]
    unsafe fn count_window(v: __m512i, live: u64, window: &mut Window) -> u64 {
        let one_hot = _mm512_broadcast_i32x4(_mm_setr_epi8(
            1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0,
        ));
        let units = _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64);
        let index = _mm512_sub_epi8(v, window.first);
        let matched = _mm512_mask_cmplt_epu8_mask(live, index, window.len);
        let bits = _mm512_maskz_shuffle_epi8(matched, one_hot, index);
        let by_value = _mm512_gf2p8affine_epi64_epi8::<0>(units, bits);
        window.counters = _mm512_add_epi8(window.counters, _mm512_popcnt_epi8(by_value));
        !matched
    }

    /// [`Isa::exponent_stats`] in one pass per 64 elements: the exponents by shift, mask and
    /// narrowing; the mantissa OR in a register; the histogram of the exponents
    /// `first..first + FREQUENT` ([`FrameStats::frequent`], 8 of them) by [`count_window`],
    /// and the other exponents listed by `vpcompressb` and counted after the loop (the 8 values
    /// below the frequent ones by [`count_window`] again). The last elements short of 64 take
    /// the portable path.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,gfni,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    unsafe fn exponent_stats512<const B: usize>(
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        first: u8,
        stats: &mut FrameStats,
        mut hash: Option<&mut H32>,
    ) {
        let n = x.len().min(input.len() / B).min(kernels::CHUNK);
        // Whole h32 blocks only from a block boundary (else the portable path hashes).
        let blocks = if at_block(&hash) { n / 64 * 64 } else { 0 };
        // The h32 lanes: 0..16 hash the first 64 bytes of each 128-byte block, 16..32 the rest.
        let mut acc = [_mm512_setzero_si512(); 2];
        if let Some(h) = hash.as_deref() {
            acc = [0, 16].map(|j| _mm512_loadu_si512(h.acc[j..j + 16].as_ptr().cast()));
        }
        let hashing = hash.is_some();
        let (m, e_mask) = (_mm_cvtsi32_si128(fields.m as i32), (1u32 << fields.e) - 1);
        let mut frequent = Window::new(first, kernels::FREQUENT as u8);
        let mut or = _mm512_setzero_si512();
        // Exponents that are none of `frequent`: at most `at` before block `at`.
        // Not zeroed (a chunk's worth each call would cost about 1% of encoding): only the
        // `listed` bytes written below are read.
        let mut others = core::mem::MaybeUninit::<[u8; kernels::CHUNK + 64]>::uninit();
        let op = others.as_mut_ptr().cast::<u8>();
        let mut listed = 0;
        let (ip, xp) = (input.as_ptr(), x.as_mut_ptr());
        for at in (0..blocks).step_by(64) {
            // SAFETY: `at + 64 <= blocks <= n`: the input bytes `B * (at..at + 64)` and the
            // exponents `at..at + 64` are in bounds.
            let exps = if B == 2 {
                let mut halves = [_mm256_setzero_si256(); 2];
                for (i, h) in halves.iter_mut().enumerate() {
                    let u = _mm512_loadu_si512(ip.add(2 * at + 64 * i).cast());
                    if hashing {
                        acc[i] = h32_round(acc[i], u);
                    }
                    or = _mm512_or_si512(or, u);
                    let e =
                        _mm512_and_si512(_mm512_srl_epi16(u, m), _mm512_set1_epi16(e_mask as i16));
                    *h = _mm512_cvtepi16_epi8(e);
                }
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(halves[0]), halves[1])
            } else {
                let mut quarters = [_mm_setzero_si128(); 4];
                for (i, q) in quarters.iter_mut().enumerate() {
                    let u = _mm512_loadu_si512(ip.add(4 * at + 64 * i).cast());
                    if hashing {
                        acc[i % 2] = h32_round(acc[i % 2], u);
                    }
                    or = _mm512_or_si512(or, u);
                    let e =
                        _mm512_and_si512(_mm512_srl_epi32(u, m), _mm512_set1_epi32(e_mask as i32));
                    *q = _mm512_cvtepi32_epi8(e);
                }
                let lo = _mm256_set_m128i(quarters[1], quarters[0]);
                let hi = _mm256_set_m128i(quarters[3], quarters[2]);
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
            };
            _mm512_storeu_si512(xp.add(at).cast(), exps);
            let rest = count_window(exps, u64::MAX, &mut frequent);
            // The others to a list, counted after the loop: a branch per block on whether any
            // are there would be mispredicted in most blocks.
            let picked = _mm512_maskz_compress_epi8(rest, exps);
            // SAFETY: `listed <= at` (one entry at most per element before this block), so
            // the 64 bytes from `listed` lie inside `others` (`CHUNK + 64` bytes).
            _mm512_storeu_si512(op.add(listed).cast(), picked);
            listed += rest.count_ones() as usize;
        }
        frequent.add_to(&mut stats.histogram);
        // The others, mostly the few values just below the frequent ones (magnitudes trail off
        // toward zero): those 8 counted the same way, 64 listed at a time, the rest one by one
        // (one by one, all of them took a third of this kernel: increments of one counter in a
        // row wait on each other).
        let mut below = Window::new(first.saturating_sub(8), first.min(8));
        let mut left = 0;
        for at in (0..listed).step_by(64) {
            let live = _bzhi_u64(u64::MAX, (listed - at).min(64) as u32);
            // SAFETY: `others[..listed]` was written above; the masked load reads only those.
            let v = _mm512_maskz_loadu_epi8(live, op.add(at).cast());
            let rest = count_window(v, live, &mut below) & live;
            // SAFETY: `left <= at`: the 64 bytes from `left` lie inside `others` and overwrite
            // only entries already loaded.
            _mm512_storeu_si512(op.add(left).cast(), _mm512_maskz_compress_epi8(rest, v));
            left += rest.count_ones() as usize;
        }
        below.add_to(&mut stats.histogram);
        // SAFETY: the stores above wrote `others[..left]`.
        for &v in core::slice::from_raw_parts(op, left) {
            stats.histogram[usize::from(v)] += 1;
        }
        if let Some(h) = hash.as_deref_mut() {
            for (j, a) in [0, 16].into_iter().zip(acc) {
                _mm512_storeu_si512(h.acc[j..j + 16].as_mut_ptr().cast(), a);
            }
            h.len += B * blocks;
        }
        let or = _mm512_reduce_or_epi32(or) as u32;
        stats_rest::<B>(fields, input, x, or, blocks, stats, hash);
    }

    /// Stores 64 output bytes: non-temporal when `streaming` (then `at` is 64-byte aligned: a
    /// whole cache line, written without first reading it), else through the cache.
    ///
    /// SAFETY: the 64 bytes at `at` are the caller's to write.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn store_line(at: *mut u8, v: __m512i, streaming: bool) {
        if streaming {
            _mm512_stream_si512(at.cast(), v);
        } else {
            _mm512_storeu_si512(at.cast(), v);
        }
    }

    /// One `h32` round of 16 lanes (checksum.rs `round`).
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn h32_round(acc: __m512i, w: __m512i) -> __m512i {
        let w = _mm512_mullo_epi32(w, _mm512_set1_epi32(checksum::P2 as i32));
        let acc = _mm512_rol_epi32::<13>(_mm512_add_epi32(acc, w));
        _mm512_mullo_epi32(acc, _mm512_set1_epi32(checksum::P1 as i32))
    }

    /// [`Isa::ranked_chunk`] in one pass per 32 elements: the codes come from the plane's words
    /// (shift, mask, narrow), a compare finds the escapes, `vpshufb` looks the others up and
    /// `vpexpandb` places the next queued exponents in the escaped lanes; the residuals are read
    /// in place, merged, stored, and hashed in registers. Chunks whose planes do not lie in one
    /// run of words, and the last elements short of 64, take the separate steps.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[allow(clippy::too_many_arguments)]
    unsafe fn ranked_chunk512<const B: usize, L: Lane>(
        isa: Avx2,
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
        streaming: bool,
    ) -> Option<usize> {
        let n = (out.len() / B).min(kernels::CHUNK);
        let blocks = n / 64 * 64;
        let steps = |start: usize, deeper: Escapes<'_>, out: &mut [u8], hash: Option<&mut H32>| {
            ranked_chunk_steps::<B, L, Avx2>(
                isa, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
            )
        };
        // 64 readable queue bytes past every exponent a block can start at (`k <= deeper.count`
        // before each block).
        let words = one_pass_words(frame, plane, residual, start, blocks, &deeper, &hash, 64);
        let Some((code_words, residual_words)) = words else {
            return steps(start, deeper, out, hash);
        };
        let (code_subs, residual_subs) = (shifts_of(&code_words), shifts_of(&residual_words));
        let code_subs = &code_subs[..plane.len];
        // Copies of the first residual sub-planes in arrays of fixed length: through them the
        // loop below runs unrolled for the common counts, the shifts and masks in registers
        // (fp16's three sub-planes: +12% decode in cache against the loop over the slice).
        let one: [SubShifts; 1] = core::array::from_fn(|i| residual_subs[i]);
        let two: [SubShifts; 2] = core::array::from_fn(|i| residual_subs[i]);
        let three: [SubShifts; 3] = core::array::from_fn(|i| residual_subs[i]);
        let residual_subs = &residual_subs[..residual.len];
        let live = fields.m - fields.k;
        let (live_c, sign_c) = (
            _mm_cvtsi32_si128(live as i32),
            _mm_cvtsi32_si128((fields.e + fields.m) as i32),
        );
        let (exp_c, mant_c) = (
            _mm_cvtsi32_si128(fields.m as i32),
            _mm_cvtsi32_si128(fields.k as i32),
        );
        let live_mask = (1u32 << live) - 1;
        let lut = _mm512_broadcast_i32x4(_mm_loadu_si128(table.as_ptr().cast()));
        let escapes = _mm512_set1_epi8(escape as i8);
        let (fp, op, dp) = (frame.as_ptr(), out.as_mut_ptr(), deeper.values.as_ptr());
        // The h32 lanes: 0..16 hash the first 64 bytes of each 128-byte block, 16..32 the rest.
        let mut acc = [_mm512_setzero_si512(); 2];
        if let Some(h) = hash.as_deref() {
            acc = [0, 16].map(|j| _mm512_loadu_si512(h.acc[j..j + 16].as_ptr().cast()));
        }
        let hashing = hash.is_some();
        // Non-temporal stores only on whole lines: an output not 64-byte aligned goes through
        // the cache (joining registers into aligned lines measured slower than that).
        let streaming = streaming && (op as usize).is_multiple_of(64);
        let mut k = 0;
        for block in (0..blocks).step_by(64) {
            // SAFETY: `block + 64 <= blocks`; the words of both planes for `start + (0..blocks)`
            // were checked by `residual_words`; `k <= deeper.count` (checked after every block),
            // so `k + 64 <= deeper.values.len()`.
            let (exponents, bits) =
                level_exponents64(fp, code_subs, block, u64::MAX, lut, escapes, dp.add(k));
            k += bits.count_ones() as usize;
            if k > deeper.count {
                return None;
            }
            // Two steps of 32: the first hashes into lanes 0..16, the second into 16..32 (B = 2).
            for half in 0..2 {
                let at = block + 32 * half;
                // SAFETY: the output `B * (at..at + 32)` is in `out`.
                let x = if half == 0 {
                    _mm512_castsi512_si256(exponents)
                } else {
                    _mm512_extracti64x4_epi64::<1>(exponents)
                };
                if B == 2 {
                    let r = match residual_subs.len() {
                        1 => fields32(fp, &one, at, u32::MAX),
                        2 => fields32(fp, &two, at, u32::MAX),
                        3 => fields32(fp, &three, at, u32::MAX),
                        _ => fields32(fp, residual_subs, at, u32::MAX),
                    };
                    let sign = _mm512_sll_epi16(_mm512_srl_epi16(r, live_c), sign_c);
                    let mant = _mm512_and_si512(r, _mm512_set1_epi16(live_mask as u16 as i16));
                    let mant = _mm512_sll_epi16(mant, mant_c);
                    let exp = _mm512_sll_epi16(_mm512_cvtepu8_epi16(x), exp_c);
                    let u = _mm512_or_si512(_mm512_or_si512(sign, mant), exp);
                    store_line(op.add(2 * at), u, streaming);
                    if hashing {
                        acc[half] = h32_round(acc[half], u);
                    }
                } else {
                    let (lo, hi) = match residual_subs.len() {
                        1 => fields32_wide(fp, &one, at),
                        2 => fields32_wide(fp, &two, at),
                        3 => fields32_wide(fp, &three, at),
                        _ => fields32_wide(fp, residual_subs, at),
                    };
                    let xs = [_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x)];
                    for (i, (r, xh)) in [lo, hi].into_iter().zip(xs).enumerate() {
                        let sign = _mm512_sll_epi32(_mm512_srl_epi32(r, live_c), sign_c);
                        let mant = _mm512_and_si512(r, _mm512_set1_epi32(live_mask as i32));
                        let mant = _mm512_sll_epi32(mant, mant_c);
                        let exp = _mm512_sll_epi32(_mm512_cvtepu8_epi32(xh), exp_c);
                        let u = _mm512_or_si512(_mm512_or_si512(sign, mant), exp);
                        store_line(op.add(4 * at + 64 * i), u, streaming);
                        if hashing {
                            acc[i] = h32_round(acc[i], u);
                        }
                    }
                }
            }
        }
        if let Some(h) = hash.as_deref_mut() {
            for (j, a) in [0, 16].into_iter().zip(acc) {
                _mm512_storeu_si512(h.acc[j..j + 16].as_mut_ptr().cast(), a);
            }
            h.len += B * blocks;
        }
        let rest = |rest, out: &mut [u8]| steps(start + blocks, rest, out, hash);
        rest_steps(k, deeper, &mut out[B * blocks..B * n], rest)
    }

    /// [`Isa::level_chunk`] 64 codes per step, as the level-0 step of [`ranked_chunk512`]
    /// without the residuals: the codes from the plane's words, one compare for the escapes,
    /// `vpshufb` for the others, `vpexpandb` for the deeper exponents. A deeper level's plane is
    /// short (a row of its words holds fewer entries than a chunk), so the codes go stretch by
    /// stretch of one run of words each, the last block of a stretch masked to its length.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[allow(clippy::too_many_arguments)]
    unsafe fn level_chunk512(
        isa: Avx2,
        frame: &[u8],
        plane: &Plane,
        start: usize,
        table: &[u8; MAX_SYMBOLS],
        escape: u8,
        deeper: Escapes<'_>,
        out: &mut [u8],
    ) -> Option<usize> {
        let n = out.len().min(kernels::CHUNK);
        // 64 readable queue bytes past every exponent a block can start at.
        if deeper.values.len() < deeper.count + 64 {
            return level_chunk_steps(isa, frame, plane, start, table, escape, deeper, out);
        }
        let lut = _mm512_broadcast_i32x4(_mm_loadu_si128(table.as_ptr().cast()));
        let escapes = _mm512_set1_epi8(escape as i8);
        let (fp, dp, op) = (frame.as_ptr(), deeper.values.as_ptr(), out.as_mut_ptr());
        // Planes of one or two sub-planes (every code width from 1 to 6) whose rows hold at
        // least 32 words: blocks across row ends.
        // SAFETY: `row_cursors` checked every sub-plane's words; `n` bytes of `out`; 64 queue
        // bytes readable past every queued exponent.
        if let Some(cursors) = row_cursors::<1>(frame, plane, start) {
            return level_rows512(fp, cursors, n, lut, escapes, deeper, op);
        }
        if let Some(cursors) = row_cursors::<2>(frame, plane, start) {
            return level_rows512(fp, cursors, n, lut, escapes, deeper, op);
        }
        // Per sub-plane: values left in the current row of words, the next value's word, and
        // its bit (a division per chunk, not per stretch).
        let mut rows = [(0usize, 0usize, 0u32); 5];
        for (row, sub) in rows.iter_mut().zip(plane.subs()) {
            let Some(run) = sub.runs(start, n).next() else {
                return level_chunk_steps(isa, frame, plane, start, table, escape, deeper, out);
            };
            *row = (sub.words - run.word, run.word, run.bit);
        }
        let mut subs = [sub_shifts(0, 0, 0, 0); 5];
        let (mut k, mut at) = (0, 0);
        while at < n {
            let mut len = n - at;
            for ((row, sub), slot) in rows.iter().zip(plane.subs()).zip(&mut subs) {
                let offset = sub.offset + 2 * row.1;
                len = len.min(row.0).min(frame.len().saturating_sub(offset) / 2);
                let mask = ((1u32 << sub.bits) - 1) as u16;
                *slot = sub_shifts(offset, row.2, sub.shift, mask);
            }
            if len == 0 {
                // Past the frame (a corrupt count): the separate steps tell.
                break;
            }
            let subs = &subs[..plane.len];
            for block in (0..len).step_by(64) {
                // The lanes of this stretch: all 64 but in its last block.
                let lanes = if len - block >= 64 {
                    u64::MAX
                } else {
                    (1u64 << (len - block)) - 1
                };
                // SAFETY: every sub-plane's words for the `len` values from `start + at` are
                // one run inside `frame` (`rows`, bounded above), and only the `lanes` are
                // loaded; `at + block + lanes <= n` bytes of `out`; `k <= deeper.count`
                // (checked after every block), so `k + 64 <= deeper.values.len()`.
                let (exponents, bits) =
                    level_exponents64(fp, subs, block, lanes, lut, escapes, dp.add(k));
                _mm512_mask_storeu_epi8(op.add(at + block).cast(), lanes, exponents);
                k += bits.count_ones() as usize;
                if k > deeper.count {
                    return None;
                }
            }
            at += len;
            // The next stretch: each sub-plane's next word, or its next row from word 0.
            for (row, sub) in rows.iter_mut().zip(plane.subs()) {
                *row = match row.0 - len {
                    0 => (sub.words, 0, row.2 + sub.bits),
                    left => (left, row.1 + len, row.2),
                };
            }
        }
        rest_steps(k, deeper, &mut out[at..n], |rest, out| {
            level_chunk_steps(isa, frame, plane, start + at, table, escape, rest, out)
        })
    }

    /// The step both fused decoder kernels take per 64 entries of a level from `at` on (only
    /// the `lanes`): their codes from the plane's words (two [`fields32`] gathered into bytes by
    /// one `vpermt2b`), the unescaped ones looked up in `lut` (16 entries), the escaped ones
    /// given the next exponents at `queue` in order (`vpexpandb`). Returns the exponents and
    /// the escaped lanes.
    ///
    /// SAFETY: as [`fields32`] for the `lanes`, and 64 bytes readable at `queue`.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn level_exponents64(
        fp: *const u8,
        subs: &[SubShifts],
        at: usize,
        lanes: u64,
        lut: __m512i,
        escapes: __m512i,
        queue: *const u8,
    ) -> (__m512i, u64) {
        let low = fields32(fp, subs, at, lanes as u32);
        let high = fields32(fp, subs, at + 32, (lanes >> 32) as u32);
        exponents64(low, high, lanes, lut, escapes, queue)
    }

    /// [`level_exponents64`] from the codes of its two halves (16-bit lanes).
    ///
    /// SAFETY: 64 bytes readable at `queue`.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn exponents64(
        low: __m512i,
        high: __m512i,
        lanes: u64,
        lut: __m512i,
        escapes: __m512i,
        queue: *const u8,
    ) -> (__m512i, u64) {
        let low_bytes = _mm512_loadu_si512(LOW_BYTES.as_ptr().cast());
        let c = _mm512_permutex2var_epi8(low, low_bytes, high);
        let bits = _mm512_cmpeq_epi8_mask(c, escapes) & lanes;
        let values = _mm512_loadu_si512(queue.cast());
        let exponents = _mm512_mask_expand_epi8(_mm512_shuffle_epi8(lut, c), bits, values);
        (exponents, bits)
    }

    /// A sub-plane read across its rows, for [`level_chunk512`]: where the next value's field
    /// is, the words per row, and where the field goes in the value.
    #[derive(Clone, Copy)]
    struct RowCursor {
        /// Byte offset of the sub-plane's first word in the frame.
        offset: usize,
        /// Words per row `W` (at least 32, so a step of 32 values crosses at most one row end).
        words: usize,
        /// Field width `p`.
        bits: u32,
        /// The next value's word and the bit of its row (`word = W` after a block that ended
        /// the row exactly: the next step takes all its lanes from the next row).
        word: usize,
        bit: u32,
        /// The field's place in the value and its mask.
        place: u32,
        mask: u16,
    }

    impl RowCursor {
        /// The next value's word as [`fields32`] reads it.
        #[inline(always)]
        fn shifts(&self) -> SubShifts {
            sub_shifts(self.offset + 2 * self.word, self.bit, self.place, self.mask)
        }
    }
    /// The fields of the next 32 values of every sub-plane in `cursors`, in 16-bit lanes (only
    /// the `lanes` are read, the others are zero), without a branch: a step that reaches the
    /// end of a row takes its last lanes from the next row's first words, one field higher.
    /// Every cursor moves on by 32 values.
    ///
    /// SAFETY: for every cursor, words `0..W` lie in the buffer at `fp + offset`, and the next
    /// 32 values' rows exist for the set bits of `lanes`.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn fields32_rows(fp: *const u8, cursors: &mut [RowCursor], lanes: u32) -> __m512i {
        let mut v = _mm512_setzero_si512();
        for c in cursors {
            // Values left in this row (0 when the row has just ended); the lanes among them.
            let left = c.words - c.word;
            let here = _bzhi_u32(u32::MAX, left.min(32) as u32);
            let row = fp.wrapping_add(c.offset + 2 * c.word);
            let w = _mm512_maskz_loadu_epi16(here & lanes, row.cast());
            // Lane `l >= left` is word `l - left` of the next row (the lanes before it are not
            // read, so the address they would have is never touched).
            let next = row.wrapping_sub(2 * c.words);
            let w = _mm512_mask_loadu_epi16(w, !here & lanes, next.cast());
            let take = _mm512_mask_blend_epi16(
                here,
                _mm512_set1_epi16((c.bit + c.bits) as i16),
                _mm512_set1_epi16(c.bit as i16),
            );
            let place = _mm_cvtsi32_si128(c.place as i32);
            let f = _mm512_sll_epi16(_mm512_srlv_epi16(w, take), place);
            let placed = _mm512_set1_epi32(c.shifts().placed as i32);
            v = _mm512_ternarylogic_epi64::<0xF8>(v, f, placed);
            let wrapped = usize::from(left <= 32);
            c.word = c.word + 32 - wrapped * c.words;
            c.bit += wrapped as u32 * c.bits;
        }
        v
    }

    /// The fields of the next 64 values of every sub-plane in `cursors` when none reaches the
    /// end of its row: [`fields32`] of both halves; every cursor moves on by 64.
    ///
    /// SAFETY: every cursor has at least 64 values left in its row.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[inline]
    unsafe fn fields64_in_row<const N: usize>(
        fp: *const u8,
        cursors: &mut [RowCursor; N],
    ) -> (__m512i, __m512i) {
        let subs = cursors.map(|c| c.shifts());
        let fields = (
            fields32(fp, &subs, 0, u32::MAX),
            fields32(fp, &subs, 32, u32::MAX),
        );
        for c in cursors {
            c.word += 64;
        }
        fields
    }

    /// A sub-plane's words as [`fields32`] and [`fields32_wide`] read them: the byte offset of
    /// the first word, the left rotation that takes a field from its bit to its place in the
    /// value, and the field's mask at its place, for 16-bit values (in both words of a 32-bit
    /// lane) and for values widened to 32 bits.
    #[derive(Clone, Copy)]
    struct SubShifts {
        offset: usize,
        rotate: u32,
        placed: u32,
        placed_wide: u32,
    }

    /// [`residual_words`]'s sub-planes as [`SubShifts`].
    #[inline]
    fn shifts_of(words: &PlaneWords) -> [SubShifts; 5] {
        words.map(|(offset, take, place, mask)| sub_shifts(offset, take, place, mask))
    }

    /// One sub-plane's [`SubShifts`].
    #[inline]
    fn sub_shifts(offset: usize, take: u32, place: u32, mask: u16) -> SubShifts {
        let placed_wide = u32::from(mask) << place;
        let placed = u32::from(placed_wide as u16);
        SubShifts {
            offset,
            rotate: place.wrapping_sub(take) & 31,
            placed: placed | placed << 16,
            placed_wide,
        }
    }

    /// Per sub-plane of a plane, as [`residual_words`] finds them: byte offset of the chunk's
    /// first word, bit to take, bit to place at, field mask.
    type PlaneWords = [(usize, u32, u32, u16); 5];

    /// The words of both planes of a level-0 chunk's first `blocks` elements, when its one-pass
    /// steps can run: `blocks > 0`, each sub-plane of both planes one run of words
    /// ([`residual_words`]), `slack` readable queue bytes past the queued exponents, and the hash
    /// at a block boundary. None: the separate steps.
    #[allow(clippy::too_many_arguments)]
    fn one_pass_words(
        frame: &[u8],
        plane: &Plane,
        residual: &Plane,
        start: usize,
        blocks: usize,
        deeper: &Escapes<'_>,
        hash: &Option<&mut H32>,
        slack: usize,
    ) -> Option<(PlaneWords, PlaneWords)> {
        let fits = blocks > 0 && deeper.values.len() >= deeper.count + slack && at_block(hash);
        if !fits {
            return None;
        }
        Some((
            residual_words(frame, plane, start, blocks)?,
            residual_words(frame, residual, start, blocks)?,
        ))
    }

    /// A chunk's last entries (`out`) after one-pass steps that took `k` queued exponents:
    /// `steps` (the separate steps), from the next queued exponent on. Returns the chunk's
    /// total taken.
    #[inline(always)]
    fn rest_steps<'a>(
        k: usize,
        deeper: Escapes<'a>,
        out: &mut [u8],
        steps: impl FnOnce(Escapes<'a>, &mut [u8]) -> Option<usize>,
    ) -> Option<usize> {
        if out.is_empty() {
            return Some(k);
        }
        let rest = Escapes {
            values: &deeper.values[k..],
            count: deeper.count - k,
        };
        Some(k + steps(rest, out)?)
    }

    /// Where the fields of values `start..start + n` are, when every sub-plane holds them in one
    /// run of words inside `frame`: per sub-plane, the byte offset of the first word, the bit to
    /// take the field from, the bit to place it at, and the field mask.
    fn residual_words(frame: &[u8], plane: &Plane, start: usize, n: usize) -> Option<PlaneWords> {
        let mut words = [(0, 0, 0, 0); 5];
        for (slot, sub) in words.iter_mut().zip(plane.subs()) {
            let run = sub.runs(start, n).next()?;
            let offset = sub.offset + 2 * run.word;
            if run.len < n || offset + 2 * n > frame.len() {
                return None;
            }
            *slot = (offset, run.bit, sub.shift, ((1u32 << sub.bits) - 1) as u16);
        }
        Some(words)
    }

    /// [`level_chunk512`]'s blocks of 64 entries through the [`RowCursor`]s of a plane's `N`
    /// sub-planes, kept in registers: a block inside every row reads whole words, one that
    /// reaches a row's end (or the last, short block) takes [`fields32_rows`]. Compared with
    /// stretches of one run of words each (the loop below it in `level_chunk512`), this saves
    /// the mispredicted exits and the short last block of each stretch: deeper-level planes
    /// have short rows (a stretch every 160-180 entries on MiniLM).
    ///
    /// SAFETY: the cursors' words lie in the buffer at `fp` ([`row_cursors`]); `n` bytes
    /// writable at `out`; 64 bytes readable past each of the `deeper.count` queued exponents.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
    )]
    #[allow(clippy::too_many_arguments)]
    unsafe fn level_rows512<const N: usize>(
        fp: *const u8,
        mut cursors: [RowCursor; N],
        n: usize,
        lut: __m512i,
        escapes: __m512i,
        deeper: Escapes<'_>,
        out: *mut u8,
    ) -> Option<usize> {
        let mut k = 0;
        for block in (0..n).step_by(64) {
            let lanes = _bzhi_u64(u64::MAX, (n - block).min(64) as u32);
            // SAFETY: the caller's; `k <= deeper.count` (checked after every block).
            let in_row = lanes == u64::MAX && cursors.iter().all(|c| c.words - c.word >= 64);
            let (low, high) = if in_row {
                fields64_in_row(fp, &mut cursors)
            } else {
                let low = fields32_rows(fp, &mut cursors, lanes as u32);
                (low, fields32_rows(fp, &mut cursors, (lanes >> 32) as u32))
            };
            let queue = deeper.values.as_ptr().add(k);
            let (exponents, bits) = exponents64(low, high, lanes, lut, escapes, queue);
            _mm512_mask_storeu_epi8(out.add(block).cast(), lanes, exponents);
            k += bits.count_ones() as usize;
            if k > deeper.count {
                return None;
            }
        }
        Some(k)
    }

    /// [`RowCursor`]s at value `start` of the sub-planes of `plane`, when it has `N` of them,
    /// each with rows of at least 32 words and all its words inside `frame`.
    fn row_cursors<const N: usize>(
        frame: &[u8],
        plane: &Plane,
        start: usize,
    ) -> Option<[RowCursor; N]> {
        if plane.len != N {
            return None;
        }
        let mut cursors = [RowCursor {
            offset: 0,
            words: 0,
            bits: 0,
            word: 0,
            bit: 0,
            place: 0,
            mask: 0,
        }; N];
        for (cursor, sub) in cursors.iter_mut().zip(plane.subs()) {
            if sub.words < 32 || sub.offset + 2 * sub.words > frame.len() {
                return None;
            }
            let run = sub.runs(start, 1).next()?;
            *cursor = RowCursor {
                offset: sub.offset,
                words: sub.words,
                bits: sub.bits,
                word: run.word,
                bit: run.bit,
                place: sub.shift,
                mask: ((1u32 << sub.bits) - 1) as u16,
            };
        }
        Some(cursors)
    }

    /// A 16-entry table widened to the portable kernels' table type.
    fn table_of(table: &[u8; 16]) -> [u8; MAX_SYMBOLS] {
        let mut wide = [0u8; MAX_SYMBOLS];
        wide[..16].copy_from_slice(table);
        wide
    }

    /// The shuffle pattern that expands the next values into the set lanes of `bits` (16
    /// lanes): the two halves' patterns, the upper offset by the lower half's count.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn expand_pattern(bits: u16) -> __m128i {
        let (lo, hi) = (usize::from(bits as u8), usize::from(bits >> 8));
        let offset = 0x0101_0101_0101_0101u64 * u64::from((lo as u32).count_ones());
        _mm_set_epi64x(EXPAND[hi].wrapping_add(offset) as i64, EXPAND[lo] as i64)
    }
}

#[cfg(all(test, feature = "std", target_arch = "x86_64"))]
mod tests {
    //! Every AVX2 kernel against its portable twin, on random data, across lengths and plane
    //! geometries that exercise the vector steps, their padded tails and the scalar fallbacks.
    use super::*;
    use crate::checksum;
    use crate::format::Dtype;
    use crate::kernels::{PlaneWriter, CHUNK};
    use std::format;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Cases per test: fewer under Miri, which interprets every intrinsic.
    fn cases(native: usize) -> usize {
        if cfg!(miri) {
            native / 50
        } else {
            native
        }
    }

    /// `detected`, or the same CPU's token with the AVX-512 step off (tests run both paths).
    fn with_avx512(detected: Avx2, on: bool) -> Avx2 {
        if on {
            detected
        } else {
            detected.without_avx512()
        }
    }

    fn avx2() -> Option<Avx2> {
        let isa = Avx2::detect();
        if isa.is_none() {
            std::println!("no AVX2 here: nothing to compare");
        }
        isa
    }

    /// A frame holding one plane of `count` random `width`-bit values at offset 64, and the values.
    fn random_plane(
        rng: &mut Rng,
        width: u32,
        count: usize,
    ) -> (std::vec::Vec<u8>, Plane, std::vec::Vec<u32>) {
        let plane = Plane::at(64, width, count);
        let mut frame = std::vec![0u8; plane.end() + 64];
        let values: std::vec::Vec<u32> = (0..count)
            .map(|_| (rng.next() as u32) & ((1u64 << width) - 1) as u32)
            .collect();
        let mut w = PlaneWriter::new(plane);
        for &v in &values {
            w.push(&mut frame, v);
        }
        (frame, plane, values)
    }

    #[test]
    fn unpack_and_pack_agree() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(1);
        for case in 0..cases(600) {
            // Odd cases without the AVX-512 kernels (even ones with them, where the CPU has them).
            let isa = with_avx512(detected, case % 2 == 0);
            let width = rng.below(25) as u32; // 0: a plane of zeros with no sub-planes
            let count = 1 + rng.below(if case % 3 == 0 { 40 } else { 3000 });
            let (frame, plane, values) = random_plane(&mut rng, width, count);
            let start = rng.below(count);
            let len = rng.below(count - start + 1).min(CHUNK);
            let check = |lane_bits: u32| {
                let mask = if lane_bits == 32 {
                    u32::MAX
                } else {
                    (1 << lane_bits) - 1
                };
                let want: std::vec::Vec<u32> = values[start..start + len]
                    .iter()
                    .map(|v| v & mask)
                    .collect();
                want
            };
            // Unpack into each lane type the values fit (u8 lanes also truncate wider ones).
            let mut a8 = std::vec![7u8; len];
            let mut b8 = std::vec![9u8; len];
            isa.unpack(&frame, &plane, start, &mut a8);
            Portable.unpack(&frame, &plane, start, &mut b8);
            assert_eq!(
                a8, b8,
                "u8 width {width} count {count} start {start} len {len}"
            );
            let mut a16 = std::vec![7u16; len];
            let mut b16 = std::vec![9u16; len];
            isa.unpack(&frame, &plane, start, &mut a16);
            Portable.unpack(&frame, &plane, start, &mut b16);
            assert_eq!(a16, b16, "u16 width {width}");
            let mut a32 = std::vec![7u32; len];
            isa.unpack(&frame, &plane, start, &mut a32);
            assert_eq!(
                a32,
                check(32),
                "u32 width {width} count {count} start {start}"
            );
            // Packing the values back (from each lane type that holds them) rebuilds the bytes,
            // over garbage in the words (only the padding is zeroed ahead), with these kernels
            // and the portable ones.
            let mut packed = std::vec![0u8; frame.len()];
            let mut portable = std::vec![0u8; frame.len()];
            for sub in plane.subs() {
                let words = sub.offset..sub.offset + 2 * sub.words;
                packed[words.clone()].fill(0xA5);
                portable[words].fill(0x5A);
            }
            let mut at = 0;
            while at < count {
                let n = (1 + rng.below(CHUNK)).min(count - at);
                if width <= 8 {
                    let v: std::vec::Vec<u8> =
                        values[at..at + n].iter().map(|&v| v as u8).collect();
                    isa.pack(&mut packed, &plane, at, &v);
                    Portable.pack(&mut portable, &plane, at, &v);
                } else if width <= 16 {
                    let v: std::vec::Vec<u16> =
                        values[at..at + n].iter().map(|&v| v as u16).collect();
                    isa.pack(&mut packed, &plane, at, &v);
                    Portable.pack(&mut portable, &plane, at, &v);
                } else {
                    isa.pack(&mut packed, &plane, at, &values[at..at + n]);
                    Portable.pack(&mut portable, &plane, at, &values[at..at + n]);
                }
                at += n;
            }
            assert_eq!(packed, frame, "pack width {width} count {count}");
            assert_eq!(portable, frame, "portable pack width {width} count {count}");
        }
    }

    #[test]
    fn byte_kernels_agree() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(2);
        for case in 0..cases(2000) {
            // Odd cases without the AVX-512 kernels (even ones with them, where the CPU has them).
            let isa = with_avx512(detected, case % 2 == 0);
            let len = rng.below(CHUNK + 1);
            let width = 1 + rng.below(8) as u32;
            let escape = ((1u32 << width) - 1) as u8;
            let codes: std::vec::Vec<u8> = (0..len)
                .map(|_| {
                    if rng.below(3) == 0 {
                        escape
                    } else {
                        rng.below(escape as usize + 1) as u8
                    }
                })
                .collect();
            let mut table = [0u8; MAX_SYMBOLS];
            for t in table.iter_mut().take(usize::from(escape)) {
                *t = rng.next() as u8;
            }
            let (mut a, mut b) = (std::vec![1u8; len], std::vec![2u8; len]);
            isa.lookup(&codes, &table, usize::from(escape), &mut a);
            Portable.lookup(&codes, &table, usize::from(escape), &mut b);
            assert_eq!(a, b, "lookup");
            let (mut ma, mut mb) = ([0u64; CHUNK / 64], [0u64; CHUNK / 64]);
            let na = isa.escape_masks(&codes, escape, &mut ma);
            let nb = Portable.escape_masks(&codes, escape, &mut mb);
            assert_eq!((na, ma), (nb, mb), "escape masks");
            let values: std::vec::Vec<u8> =
                (0..na + rng.below(40)).map(|_| rng.next() as u8).collect();
            let (mut ea, mut eb) = (a.clone(), a.clone());
            assert_eq!(
                isa.expand(&ma, &values, &mut ea),
                Portable.expand(&ma, &values, &mut eb)
            );
            assert_eq!(ea, eb, "expand");
            let symbols: std::vec::Vec<u8> = {
                // Half the cases: symbols within 16 consecutive values (the AVX2 level step's
                // shuffle window), near the top of the byte range at times.
                let window = rng.below(2) == 0;
                let base = if rng.below(4) == 0 {
                    240
                } else {
                    rng.below(241)
                };
                let mut all: std::vec::Vec<u8> = match window {
                    true => (base..(base + 16).min(256)).map(|v| v as u8).collect(),
                    false => (0..=255).collect(),
                };
                for i in (1..all.len()).rev() {
                    all.swap(i, rng.below(i + 1));
                }
                let most = if rng.below(4) == 0 { 255 } else { 17 };
                all.truncate(rng.below(most.min(all.len())));
                all
            };
            let level = LevelCodes::new(&symbols);
            // Exponents: mostly symbols, else any byte.
            let x: std::vec::Vec<u8> = (0..len)
                .map(|_| match symbols.len() {
                    n if n > 0 && rng.below(4) != 0 => symbols[rng.below(n)],
                    _ => rng.next() as u8,
                })
                .collect();
            let (mut ra, mut rb) = (std::vec![1u8; len], std::vec![2u8; len]);
            isa.rank_codes(&x, &level, &mut ra);
            Portable.rank_codes(&x, &level, &mut rb);
            assert_eq!(ra, rb, "rank_codes of {} symbols", symbols.len());
            // The fused level step: the same codes, and the escaped exponents in order.
            let (mut la, mut lb) = (std::vec![3u8; len], std::vec![4u8; len]);
            // Room for the vector steps' whole 8-byte stores past the escaped ones, or not.
            let room = len + 8 * rng.below(2);
            let (mut xa, mut xb) = (std::vec![5u8; room], std::vec![6u8; len]);
            let count = isa.level_codes(&x, &level, &mut la, &mut xa);
            let expected = level_codes_steps(Portable, &x, &level, &mut lb, &mut xb);
            assert_eq!((count, &la), (expected, &rb), "level codes");
            assert_eq!(xa[..count], xb[..count], "escaped exponents");
            let escaped: std::vec::Vec<u8> = x
                .iter()
                .zip(&rb)
                .filter(|&(_, &c)| c == level.escape())
                .map(|(&x, _)| x)
                .collect();
            assert_eq!(xb[..count], escaped[..], "escaped exponents, in order");
            let mut ca = std::vec![0u8; len + rng.below(16)];
            let mut cb = ca.clone();
            assert_eq!(
                isa.compress(&ma, &codes, &mut ca),
                Portable.compress(&ma, &codes, &mut cb)
            );
            assert_eq!(ca[..na], cb[..na], "compress");
        }
    }

    #[test]
    fn groups_unflagged_agrees() {
        let Some(isa) = avx2() else { return };
        let mut rng = Rng(5);
        for case in 0..cases(300) {
            let elements = 1 + rng.below(crate::format::MAX_FRAME_LEN);
            let mut ranges = GroupRanges::new(elements);
            // Exponents around a centre, some anywhere (outliers, zeros).
            let centre = rng.below(256);
            let spread = 1 + rng.below(12);
            let x: std::vec::Vec<u8> = (0..elements)
                .map(|_| match rng.below(20) {
                    0 if case % 2 == 0 => rng.below(256) as u8,
                    _ => (centre + rng.below(spread))
                        .saturating_sub(spread / 2)
                        .min(255) as u8,
                })
                .collect();
            for (start, run) in (0..elements).step_by(CHUNK).zip(x.chunks(CHUNK)) {
                ranges.add(start, run);
            }
            let first = rng.below(256 - GROUPS_BASES + 1) as u32;
            let candidates = 1 + rng.below(GROUPS_BASES);
            let widest = rng.below(4) as u32;
            let got = isa.groups_unflagged(&ranges, first, candidates, widest);
            let want = ranges.unflagged(first, candidates);
            for c in 0..candidates {
                assert_eq!(
                    got[c][..=widest as usize],
                    want[c][..=widest as usize],
                    "case {case}: candidate {c} of {candidates} from {first}, m <= {widest}"
                );
            }
        }
    }

    #[test]
    fn split_pack_agrees() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(17);
        for case in 0..cases(300) {
            let isa = with_avx512(detected, case / 3 % 2 == 0);
            let dtype = Dtype::ALL[case % 3];
            let b = dtype.element_bytes();
            let dead = rng.below(Fields::new(dtype, 0).m as usize + 1) as u32;
            let fields = Fields::new(dtype, dead);
            // Short planes, planes of default frames (16 Ki elements: each chunk lies in one
            // row of every sub-plane, so the vector steps run), and others.
            let count = match case % 4 {
                0 => 1 + rng.below(100),
                1 => 16 * CHUNK,
                2 => 16 * CHUNK - rng.below(CHUNK),
                _ => 1 + rng.below(5 * CHUNK),
            };
            let input: std::vec::Vec<u8> = (0..count)
                .flat_map(|_| {
                    let u = (rng.next() as u32) & !((1u32 << dead) - 1);
                    u.to_le_bytes().into_iter().take(b)
                })
                .collect();
            let plane = Plane::at(64, fields.residual_bits(), count);
            // Both frames' words start as different garbage: every word is written whole.
            let mut frames = [0xA5u8, 0x5A].map(|garbage| {
                let mut frame = std::vec![0u8; plane.end() + 64];
                for sub in plane.subs() {
                    frame[sub.offset..sub.offset + 2 * sub.words].fill(garbage);
                }
                frame
            });
            let (mut xa, mut xb) = (std::vec![0u8; count], std::vec![1u8; count]);
            let (mut r16, mut r32) = ([0u16; CHUNK], [0u32; CHUNK]);
            let mut at = 0;
            while at < count {
                // Runs of a chunk mostly, some shorter (they cross rows at other places).
                let n = if rng.below(3) == 0 {
                    1 + rng.below(CHUNK)
                } else {
                    CHUNK
                };
                let n = n.min(count - at);
                let run = &input[b * at..b * (at + n)];
                let [fa, fb] = &mut frames;
                let (xa, xb) = (&mut xa[at..at + n], &mut xb[at..at + n]);
                if b == 2 {
                    let r = &mut r16[..n];
                    isa.split_pack::<2, u16>(&fields, run, xa, r, fa, &plane, at);
                    Portable.split_pack::<2, u16>(&fields, run, xb, r, fb, &plane, at);
                } else {
                    let r = &mut r32[..n];
                    isa.split_pack::<4, u32>(&fields, run, xa, r, fa, &plane, at);
                    Portable.split_pack::<4, u32>(&fields, run, xb, r, fb, &plane, at);
                }
                at += n;
            }
            let what = format!("{dtype:?} dead {dead} count {count}");
            assert!(xa == xb, "exponents: {what}");
            assert!(frames[0] == frames[1], "residual plane: {what}");
            // And the plane holds the residuals.
            let mut r = std::vec![0u32; count];
            Portable.unpack(&frames[0], &plane, 0, &mut r);
            for (i, &r) in r.iter().enumerate() {
                let u = input[b * i..b * i + b]
                    .iter()
                    .rev()
                    .fold(0u32, |u, &byte| u << 8 | u32::from(byte));
                assert_eq!(r, fields.split(u).1, "residual {i}: {what}");
            }
        }
    }

    #[test]
    fn exponent_stats_agree() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(11);
        for case in 0..cases(300) {
            // Half the cases without the AVX-512 step (where the CPU has it), in every dtype and
            // with either mantissa pattern.
            let isa = with_avx512(detected, case / 3 % 2 == 0);
            let dtype = Dtype::ALL[case % 3];
            let b = dtype.element_bytes();
            let fields = Fields::new(dtype, 0);
            let elements = 1 + rng.below(3 * CHUNK);
            // Exponents crowded around a few values (the vector counters run), or spread (they
            // do not); mantissas random or with dead low bits.
            let spread = 1 + rng.below(if case % 4 == 0 { 256 } else { 12 });
            let centre = rng.below(256);
            // The elements counted one by one (the first chunk, the last few) with more dead
            // bits than the rest, so the vector path's mantissa OR decides the frame's.
            let dead = rng.below(fields.m as usize + 1);
            let dead_first = dead.max(rng.below(fields.m as usize + 1));
            let input: std::vec::Vec<u8> = (0..elements)
                .flat_map(|i| {
                    let x = ((centre + rng.below(spread)) as u32) & ((1 << fields.e) - 1);
                    let vector = (CHUNK..elements / 64 * 64).contains(&i);
                    let dead = if vector { dead } else { dead_first };
                    let r = rng.next() as u32 & !((1u32 << dead) - 1);
                    // Odd cases: the lowest live bit only in odd elements (the upper half of a
                    // 32-bit lane for 2-byte elements).
                    let r = if vector && case % 2 == 1 && i % 2 == 0 {
                        r & !(1 << dead)
                    } else {
                        r
                    };
                    let u = fields.merge(x, r & ((1 << fields.residual_bits()) - 1));
                    u.to_le_bytes().into_iter().take(b)
                })
                .collect();
            let run = |vector: bool| {
                let mut stats = FrameStats::new(elements);
                let mut x = std::vec![0u8; elements];
                let mut hash = H32::new();
                for start in (0..elements).step_by(CHUNK) {
                    let len = CHUNK.min(elements - start);
                    let (i, xs) = (
                        &input[b * start..b * (start + len)],
                        &mut x[start..start + len],
                    );
                    let (st, h) = (&mut stats, Some(&mut hash));
                    match (vector, b) {
                        (true, 2) => isa.exponent_stats::<2>(&fields, i, xs, st, h),
                        (true, _) => isa.exponent_stats::<4>(&fields, i, xs, st, h),
                        (false, 2) => Portable.exponent_stats::<2>(&fields, i, xs, st, h),
                        (false, _) => Portable.exponent_stats::<4>(&fields, i, xs, st, h),
                    }
                }
                stats.finish();
                assert_eq!(hash.finish(), checksum::h32(&input), "h32");
                (x, stats.histogram, stats.mantissa_or, stats.counted)
            };
            let (vector, portable) = (run(true), run(false));
            let what = format!("{dtype:?} elements {elements} spread {spread}");
            assert!(vector.0 == portable.0, "exponents differ: {what}");
            assert_eq!(vector.1, portable.1, "histogram: {what}");
            assert_eq!((vector.2, vector.3), (portable.2, portable.3), "{what}");
        }
    }

    /// A code of a level whose all-ones code is `escape`: the escape one time in four.
    fn random_code(rng: &mut Rng, escape: u8) -> u32 {
        if rng.below(4) == 0 {
            u32::from(escape)
        } else {
            rng.below(usize::from(escape) + 1) as u32
        }
    }

    /// What a level step takes besides its plane, for the `codes` of a plane: a start (mostly
    /// on a chunk) and the length to its chunk's end, a table of `escape` values below
    /// `2^value_bits`, and a queue of exponents with 64 readable bytes after it, as many as
    /// those codes escape or more (one case in six, one short: every path must refuse).
    /// Returns (start, len, table, queued, values, escaped).
    fn level_inputs(
        rng: &mut Rng,
        codes: &[u8],
        escape: u8,
        value_bits: u32,
    ) -> (
        usize,
        usize,
        [u8; MAX_SYMBOLS],
        usize,
        std::vec::Vec<u8>,
        usize,
    ) {
        let count = codes.len();
        let start = if rng.below(4) == 0 {
            rng.below(count)
        } else {
            rng.below(count.div_ceil(CHUNK)) * CHUNK
        };
        let len = CHUNK.min(count - start);
        let escaped = codes[start..start + len]
            .iter()
            .filter(|&&c| c == escape)
            .count();
        let value = |rng: &mut Rng| (rng.next() as u32 & ((1 << value_bits) - 1)) as u8;
        let mut table = [0u8; MAX_SYMBOLS];
        for t in table.iter_mut().take(usize::from(escape)) {
            *t = value(rng);
        }
        let queued = if escaped > 0 && rng.below(6) == 0 {
            escaped - 1
        } else {
            escaped + rng.below(40)
        };
        let values = (0..queued + 64).map(|_| value(rng)).collect();
        (start, len, table, queued, values, escaped)
    }

    #[test]
    fn ranked_chunk_agrees() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(7);
        for case in 0..cases(600) {
            let dtype = Dtype::ALL[case % 3];
            let b = dtype.element_bytes();
            let fields = Fields::new(dtype, rng.below(dtype.mantissa_bits() as usize + 1) as u32);
            // Mostly frame lengths whose planes keep a chunk in one run of words (the fused
            // step), sometimes any length (the separate steps).
            let count = if rng.below(4) == 0 {
                1 + rng.below(5000)
            } else {
                1024 << rng.below(5)
            };
            let width = 1 + rng.below(if case % 5 == 0 { 6 } else { 4 }) as u32;
            let escape = ((1u32 << width) - 1) as u8;
            let residual = Plane::at(64, fields.residual_bits(), count);
            let plane = Plane::at(residual.end(), width, count);
            let mut frame = std::vec![0u8; plane.end() + 64];
            let (mut rw, mut cw) = (PlaneWriter::new(residual), PlaneWriter::new(plane));
            let mut codes = std::vec::Vec::new();
            for _ in 0..count {
                rw.push(
                    &mut frame,
                    rng.next() as u32 & ((1 << fields.residual_bits()) - 1),
                );
                let code = random_code(&mut rng, escape);
                cw.push(&mut frame, code);
                codes.push(code as u8);
            }
            let (start, len, table, queued, values, escaped) =
                level_inputs(&mut rng, &codes, escape, fields.e);
            let mut prefix = H32::new();
            prefix.update(&[9u8; 256][..128 * rng.below(3)]);
            // Every third case asks for non-temporal stores, into an output that starts on a
            // cache line (where the AVX-512 step uses them) or 16 bytes past one.
            let streaming = case % 3 == 0;
            let misalign = if rng.below(2) == 0 { 0 } else { 16 };
            let run = |isa: &dyn Fn(&mut [u8], &mut H32) -> Option<usize>| {
                let mut buffer = std::vec![5u8; b * len + 128];
                let at = buffer.as_ptr().align_offset(64) + misalign;
                let out = &mut buffer[at..at + b * len];
                let mut hash = prefix.clone();
                let taken = isa(out, &mut hash);
                (taken, out.to_vec(), hash.acc, hash.len)
            };
            let deeper = Escapes {
                values: &values,
                count: queued,
            };
            let (fields, frame, plane, residual, table) =
                (&fields, &frame, &plane, &residual, &table);
            let with = |isa: Avx2| {
                move |out: &mut [u8], hash: &mut H32| match b {
                    2 => isa.ranked_chunk::<2, u16>(
                        fields,
                        frame,
                        plane,
                        residual,
                        start,
                        table,
                        escape,
                        deeper,
                        out,
                        Some(hash),
                        streaming,
                    ),
                    _ => isa.ranked_chunk::<4, u32>(
                        fields,
                        frame,
                        plane,
                        residual,
                        start,
                        table,
                        escape,
                        deeper,
                        out,
                        Some(hash),
                        streaming,
                    ),
                }
            };
            let portable = |out: &mut [u8], hash: &mut H32| match b {
                2 => Portable.ranked_chunk::<2, u16>(
                    fields,
                    frame,
                    plane,
                    residual,
                    start,
                    table,
                    escape,
                    deeper,
                    out,
                    Some(hash),
                    false,
                ),
                _ => Portable.ranked_chunk::<4, u32>(
                    fields,
                    frame,
                    plane,
                    residual,
                    start,
                    table,
                    escape,
                    deeper,
                    out,
                    Some(hash),
                    false,
                ),
            };
            let expected = run(&portable);
            assert_eq!(expected.0.is_some(), queued >= escaped);
            let what = format!("{dtype:?} count {count} start {start} width {width}");
            for isa in [detected, detected.without_avx512()] {
                let got = run(&with(isa));
                assert_eq!(got.0, expected.0, "taken: {what}");
                if expected.0.is_some() {
                    assert_eq!(got, expected, "{what}");
                }
            }
        }
    }

    #[test]
    fn level_chunk_agrees() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(11);
        for case in 0..cases(600) {
            // Plane lengths of a whole frame's escapes (one run of words per chunk) and any.
            let count = if rng.below(3) == 0 {
                1 + rng.below(5000)
            } else {
                1024 << rng.below(5)
            };
            // Width 0 (every entry escapes) only in hostile streams, but it must decode alike.
            let width = rng.below(if case % 5 == 0 { 7 } else { 5 }) as u32;
            let escape = ((1u32 << width) - 1) as u8;
            let (frame, plane, codes) = {
                let plane = Plane::at(64, width, count);
                // Sometimes nothing after the plane: the AVX2 steps across rows need 64 bytes
                // there, so such frames take the unpacking path.
                let after = if rng.below(4) == 0 { 0 } else { 64 };
                let mut frame = std::vec![0u8; plane.end() + after];
                let mut w = PlaneWriter::new(plane);
                let mut codes = std::vec::Vec::new();
                for _ in 0..count {
                    let code = random_code(&mut rng, escape);
                    w.push(&mut frame, code);
                    codes.push(code as u8);
                }
                (frame, plane, codes)
            };
            let (start, len, table, queued, values, escaped) =
                level_inputs(&mut rng, &codes, escape, 8);
            let deeper = Escapes {
                values: &values,
                count: queued,
            };
            let run = |isa: &dyn Fn(&mut [u8]) -> Option<usize>| {
                let mut out = std::vec![5u8; len];
                let taken = isa(&mut out);
                (taken, out)
            };
            let expected = run(&|out| {
                Portable.level_chunk(&frame, &plane, start, &table, escape, deeper, out)
            });
            assert_eq!(expected.0, (queued >= escaped).then_some(escaped));
            // The definition: codes below the escape are looked up, escaped ones take the queue.
            if expected.0.is_some() {
                let mut k = 0;
                for (q, &c) in codes[start..start + len].iter().enumerate() {
                    let want = if c == escape {
                        k += 1;
                        values[k - 1]
                    } else {
                        table[usize::from(c)]
                    };
                    assert_eq!(expected.1[q], want, "portable, entry {q}");
                }
            }
            let what = format!("count {count} start {start} width {width}");
            for isa in [detected, detected.without_avx512()] {
                let got =
                    run(&|out| isa.level_chunk(&frame, &plane, start, &table, escape, deeper, out));
                assert_eq!(got.0, expected.0, "taken: {what}");
                if expected.0.is_some() {
                    assert_eq!(got, expected, "{what}");
                }
            }
        }
    }

    #[test]
    fn merge_and_resolve_agree() {
        let Some(detected) = avx2() else { return };
        let mut rng = Rng(3);
        for case in 0..cases(900) {
            // Odd cases without the AVX-512 final step (even ones with it, where the CPU has it).
            let isa = with_avx512(detected, case % 2 == 0);
            let dtype = Dtype::ALL[case % 3];
            let fields = Fields::new(dtype, rng.below(dtype.mantissa_bits() as usize + 1) as u32);
            // Every fourth case a whole chunk whose residuals straddle two runs of words (they
            // are unpacked into lanes, read to the last one).
            let whole = case % 4 == 3;
            let count = if whole {
                CHUNK + 1 + rng.below(CHUNK)
            } else {
                1 + rng.below(5000)
            };
            let (frame, plane, _) = random_plane(&mut rng, fields.residual_bits(), count);
            let start = if whole { 0 } else { rng.below(count) };
            let len = if whole {
                CHUNK
            } else {
                rng.below(count - start + 1).min(CHUNK)
            };
            let width = 1 + rng.below(5);
            let symbols = (1usize << width) - 1;
            let codes: std::vec::Vec<u8> = (0..len).map(|_| rng.below(symbols + 1) as u8).collect();
            let mut table = [0u8; MAX_SYMBOLS];
            for t in table.iter_mut().take(symbols) {
                *t = (rng.next() as u32 & ((1 << fields.e) - 1)) as u8;
            }
            let mut masks = [0u64; CHUNK / 64];
            let escaped = Portable.escape_masks(&codes, symbols as u8, &mut masks);
            // Usually room for whole-register reads past the values (as the decoder's scratch
            // has), sometimes not (the vector steps must then fall back).
            let pad = if rng.below(4) == 0 {
                rng.below(3) * 16
            } else {
                len + 32
            };
            let deeper: std::vec::Vec<u8> = (0..escaped + pad)
                .map(|_| (rng.next() as u32 & ((1 << fields.e) - 1)) as u8)
                .collect();
            let run = |isa_avx2: bool, b: usize| {
                let mut out = std::vec![5u8; b * len];
                match (isa_avx2, b) {
                    (true, 2) => isa.resolve_store::<2, u16>(
                        &fields, &frame, &plane, start, &codes, &table, symbols, &masks, &deeper,
                        &mut out,
                    ),
                    (true, _) => isa.resolve_store::<4, u32>(
                        &fields, &frame, &plane, start, &codes, &table, symbols, &masks, &deeper,
                        &mut out,
                    ),
                    (false, 2) => Portable.resolve_store::<2, u16>(
                        &fields, &frame, &plane, start, &codes, &table, symbols, &masks, &deeper,
                        &mut out,
                    ),
                    (false, _) => Portable.resolve_store::<4, u32>(
                        &fields, &frame, &plane, start, &codes, &table, symbols, &masks, &deeper,
                        &mut out,
                    ),
                }
                out
            };
            let b = dtype.element_bytes();
            assert_eq!(
                run(true, b),
                run(false, b),
                "resolve_store {dtype:?} count {count} start {start} len {len} width {width}"
            );
            // merge_store alone, and the element split that inverts it.
            let mut r16 = std::vec![0u16; len];
            let mut r32 = std::vec![0u32; len];
            Portable.unpack(&frame, &plane, start, &mut r16);
            Portable.unpack(&frame, &plane, start, &mut r32);
            let x: std::vec::Vec<u8> = (0..len)
                .map(|_| (rng.next() as u32 & ((1 << fields.e) - 1)) as u8)
                .collect();
            let (mut a, mut c) = (std::vec![1u8; b * len], std::vec![2u8; b * len]);
            if b == 2 {
                isa.merge_store::<2, u16>(&fields, &x, &r16, &mut a);
                Portable.merge_store::<2, u16>(&fields, &x, &r16, &mut c);
            } else {
                isa.merge_store::<4, u32>(&fields, &x, &r32, &mut a);
                Portable.merge_store::<4, u32>(&fields, &x, &r32, &mut c);
            }
            assert_eq!(a, c, "merge_store {dtype:?}");
            // The split inverts the merge (same exponents and residuals from either kernel).
            let (mut xa, mut xb) = (std::vec![0u8; len], std::vec![1u8; len]);
            if b == 2 {
                let (mut ra, mut rb) = (std::vec![0u16; len], std::vec![1u16; len]);
                isa.split_load::<2, u16>(&fields, &a, &mut xa, &mut ra);
                Portable.split_load::<2, u16>(&fields, &a, &mut xb, &mut rb);
                assert_eq!((&xa, &ra), (&xb, &rb), "split_load {dtype:?}");
                assert_eq!((&xa, &ra), (&x, &r16), "split_load inverts merge_store");
            } else {
                let (mut ra, mut rb) = (std::vec![0u32; len], std::vec![1u32; len]);
                isa.split_load::<4, u32>(&fields, &a, &mut xa, &mut ra);
                Portable.split_load::<4, u32>(&fields, &a, &mut xb, &mut rb);
                assert_eq!((&xa, &ra), (&xb, &rb), "split_load {dtype:?}");
            }
        }
    }
}
