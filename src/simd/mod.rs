//! Instruction-set variants of the hot block kernels, chosen per frame by `frame::dispatch`.
//!
//! [`Isa`] lists the kernels the frame loops call in their inner steps. Its default methods are
//! the portable kernels of [`crate::kernels`] (the reference, and what no_std builds and other
//! architectures run). Two tokens override them: `Avx2` on x86_64 and `Neon` on aarch64.
//!
//! On aarch64, `Neon` (`aarch64/`) runs `core::arch::aarch64` versions of the decoder's steps:
//! `tbl` for the symbol lookup (one `vqtbl1q_u8` per 16 codes of a table of up to 16 symbols,
//! four 64-byte lookups for whole 256-byte tables, which also give the encoder's level codes),
//! compares with bit weights and pairwise adds for the escape masks, `tbx` by 256-entry tables of
//! 8-lane patterns for the escape expansion (`tbl` for the compaction), whole-register unpacking
//! and packing of the planes by variable shifts, the merge in 16-bit lanes for 2-byte elements
//! (multiply-adds move the sign and the exponent), and the encoder's split of 2-byte elements. The
//! ranked decoder's level-0 step runs in one pass per 16 elements where the chunk's code plane
//! (1 or 2 sub-planes) and residual plane (1 to 3) lie in one run of words each
//! (`ranked_chunk_neon`: codes from the plane's words, escapes by compare with their mask summed
//! by an integer multiply, one `tbl` lookup, one `tbx` of the queue's exponents, residuals from
//! their words, merge, store; the checksum after the chunk), each deeper level's step likewise
//! (`level_chunk_neon`: codes, escapes, `tbl`, `tbx`, store) and the groups decoder's chunk
//! (`groups_chunk_neon`: the low bits, the flagged lanes' high bits by one `tbl` of the queue,
//! the inverse transform in bytes, residuals, merge, store); other shapes run the separate
//! steps ([`ranked_chunk_steps`] and its neighbours) over these kernels.
//!
//! On x86_64, [`Avx2`] overrides them with `std::arch` versions of the same functions: byte
//! shuffles for the symbol lookup, prefix sums of the escape compare (or 256-entry tables of
//! shuffle patterns) for the escape expansion and compaction, no `pdep`; whole-register unpacking
//! of the planes, and 16-bit lanes for the merge of 2-byte elements. On AVX2 alone the decoder's
//! level-0 step runs in one pass per 32 elements too (`ranked_chunk_avx2`: codes from the plane's
//! words, `resolve32`, residuals in place, merge, store, checksum; the groups decoder's
//! `groups_chunk_avx2` the same with the high bits and inverse transform), each deeper level in one
//! pass after its unpack, the encoder's statistics pass counts a window of 16 exponents by byte
//! shuffles into nibble counters (`exponent_stats_avx2`) and its level codes take one shuffle
//! over a window of 16 values (`level_codes_avx2`). Where the CPU has AVX-512
//! (F/BW/VL/VBMI/VBMI2/BITALG with GFNI, as every CPU with VBMI2 so far) the hottest ones run in
//! 512-bit registers with mask registers: the decoder's level-0 step in one pass
//! ([`Isa::ranked_chunk`]: codes from the plane, escapes by compare, `vpexpandb` from the queue of
//! deeper exponents, merge, store, checksum; [`Isa::groups_chunk`] likewise with the flags as the
//! expand mask), the encoder's statistics pass
//! ([`Isa::exponent_stats`]: exponents, histogram by bit transposes, mantissa OR, checksum), the
//! encoder's level codes ([`Isa::level_codes`]: a 256-entry table looked up by `vpermt2b`),
//! compress/expand (`vpcompressb`/`vpexpandb`), escape masks, lookups and the groups search's
//! counts. Every method computes exactly what its portable twin does; `tests/dispatch.rs` and the
//! unit tests in `tests.rs` compare them.
#![allow(unsafe_code)]

use crate::checksum::H32;
use crate::format::GroupsParams;
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

    /// Packs the residuals of a whole frame (`input`, the `plane.count` elements) into
    /// `plane`, as [`Isa::split_pack`] over its chunks would, where a kernel does it in one
    /// pass; returns whether it did (then the chunks need only [`Isa::exponents`]).
    #[inline(always)]
    fn pack_residuals<const B: usize>(
        self,
        _fields: &Fields,
        _input: &[u8],
        _frame: &mut [u8],
        _plane: &Plane,
    ) -> bool {
        false
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

    /// A chunk of the groups decoder, its `out.len() / B` elements from `start` (at most
    /// [`kernels::CHUNK`], inside one row of groups, so that element `start + i` is in the
    /// group of flag bit `i` of `flags`): the low bits from plane `low`, the high bits of the
    /// flagged ones from `highs` in order (each below `2^(n - m)`, as unpacked from the high
    /// plane; none flagged where `m = n`), the inverse transform of `params`, the residuals
    /// merged, stored. A kernel that can hashes its output's first whole h32 blocks into `hash`
    /// (given only when it stands exactly at `start`'s output byte, on a block boundary); the
    /// caller follows the rest. `streaming` as for [`Isa::ranked_chunk`]. Returns how many
    /// high entries it took, or None when the flags ask for more than `highs` holds.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
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
        _hash: Option<&mut H32>,
        _streaming: bool,
    ) -> Option<usize> {
        groups_chunk_steps::<B, L, Self>(
            self, fields, frame, low, residual, start, params, flags, highs, out,
        )
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

/// [`Isa::groups_chunk`] from the separate kernels (without the hash): unpack the residuals
/// and the low bits, expand the high bits into the flagged elements, the inverse transform,
/// merge and store.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn groups_chunk_steps<const B: usize, L: Lane, I: Isa>(
    isa: I,
    fields: &Fields,
    frame: &[u8],
    low: &Plane,
    residual: &Plane,
    start: usize,
    params: &GroupsParams,
    flags: &[u64],
    highs: Escapes<'_>,
    out: &mut [u8],
) -> Option<usize> {
    let n = (out.len() / B).min(kernels::CHUNK);
    // The flags of the `n` elements alone.
    let mut masks = [0u64; kernels::CHUNK / 64];
    for (i, (m, &f)) in masks.iter_mut().zip(flags).enumerate() {
        let keep = n.saturating_sub(64 * i).min(64);
        *m = f & u64::MAX.checked_shr(64 - keep as u32).unwrap_or(0);
    }
    let flagged = masks.iter().map(|m| m.count_ones() as usize).sum::<usize>();
    if flagged > highs.count {
        return None;
    }
    let mut residuals = [L::default(); kernels::CHUNK];
    let mut y = [0u8; kernels::CHUNK];
    let (residuals, y) = (&mut residuals[..n], &mut y[..n]);
    isa.unpack(frame, residual, start, residuals);
    isa.unpack(frame, low, start, y);
    if flagged > 0 {
        let mut spread = [0u8; kernels::CHUNK];
        isa.expand(&masks, highs.values, &mut spread[..n]);
        // Flags exist only below the full width, so `low < width <= 8`.
        for (y, &h) in y.iter_mut().zip(&spread[..n]) {
            *y |= h.wrapping_shl(params.low.into());
        }
    }
    let (base, width) = (u32::from(params.base), u32::from(params.width));
    kernels::groups_inverse_run(y, base, width, fields.e);
    isa.merge_store::<B, L>(fields, y, residuals, &mut out[..B * n]);
    Some(flagged)
}

/// The portable kernels, for every target.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Isa for Portable {}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
pub(crate) use x86::Avx2;

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod x86;

#[cfg(all(feature = "std", target_arch = "aarch64"))]
pub(crate) use aarch64::Neon;

#[cfg(all(feature = "std", target_arch = "aarch64"))]
mod aarch64;

#[cfg(all(
    test,
    feature = "std",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests;
