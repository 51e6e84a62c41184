//! The aarch64 kernels: the [`Neon`] token (what [`Neon::detect`] found) and which kernel each
//! [`Isa`] method runs; the kernels themselves are in [`neon`].
//!
//! NEON (Advanced SIMD) is part of every aarch64 CPU, so the token is there wherever the
//! standard library reports the feature (always, in practice); the dispatch still asks, as it
//! does on x86, and `ENEC_PORTABLE=1` still turns it off.

// Every kernel is a `#[target_feature(enable = "neon")]` function: value intrinsics are safe
// inside it, pointer loads and stores sit in `unsafe` blocks whose SAFETY notes give their
// bounds, and its callers here call it in an `unsafe` block (the token proves the feature).
mod neon;

use neon::*;

use super::*;

/// NEON kernels; only [`Neon::detect`] makes one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Neon(());

impl Neon {
    /// The token, when this CPU has NEON (every aarch64 CPU does).
    pub(crate) fn detect() -> Option<Neon> {
        std::arch::is_aarch64_feature_detected!("neon").then_some(Neon(()))
    }
}

// SAFETY (every `unsafe` block in this impl): a `Neon` value exists only when `detect` found
// NEON, the one feature the called functions are compiled for.
impl Isa for Neon {
    #[inline(always)]
    fn unpack<L: Lane>(self, frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
        // SAFETY: a `Neon` exists only where `detect` found NEON.
        unsafe { unpack(frame, plane, start, out) }
    }

    #[inline(always)]
    fn pack<L: Lane>(self, frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
        // SAFETY: a `Neon` exists only where `detect` found NEON.
        unsafe { pack(frame, plane, start, values) }
    }

    #[inline(always)]
    fn split_load<const B: usize, L: Lane>(
        self,
        fields: &Fields,
        input: &[u8],
        x: &mut [u8],
        r: &mut [L],
    ) {
        if B == 2 && L::BITS == 16 {
            // SAFETY: a `Neon` exists only where `detect` found NEON.
            unsafe { split16(fields, input, x, bytemuck::cast_slice_mut(r)) }
        } else {
            kernels::split_load::<B, L>(fields, input, x, r)
        }
    }

    #[inline(always)]
    fn rank_codes(self, x: &[u8], level: &LevelCodes, out: &mut [u8]) {
        // The codes of every exponent value are a 256-byte table: four 64-byte lookups.
        // SAFETY: a `Neon` exists only where `detect` found NEON.
        unsafe { lookup256(x, &level.code, out) }
    }

    #[inline(always)]
    fn compress(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        // SAFETY: a `Neon` exists only where `detect` found NEON.
        unsafe { compress(masks, values, out) }
    }

    #[inline(always)]
    fn lookup(self, codes: &[u8], table: &[u8; MAX_SYMBOLS], symbols: usize, out: &mut [u8]) {
        if symbols <= 16 {
            // Codes at or past `symbols` read zero, as in the portable version (and `tbl`
            // gives zero past the 16 bytes).
            let mut small = [0u8; 16];
            small[..symbols].copy_from_slice(&table[..symbols]);
            // SAFETY: a `Neon` exists only where `detect` found NEON.
            unsafe { lookup16(codes, &small, out) }
        } else {
            // Larger tables: every code reads its entry, as the portable gather does.
            // SAFETY: a `Neon` exists only where `detect` found NEON.
            unsafe { lookup256(codes, table, out) }
        }
    }

    #[inline(always)]
    fn escape_masks(self, codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
        // SAFETY: a `Neon` exists only where `detect` found NEON.
        unsafe { escape_masks(codes, escape, masks) }
    }

    #[inline(always)]
    fn expand(self, masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
        // SAFETY: a `Neon` exists only where `detect` found NEON.
        unsafe { expand(masks, values, out) }
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
            // SAFETY: a `Neon` exists only where `detect` found NEON.
            (2, 16) | (4, 32) => unsafe { merge::<B, L>(fields, x, r, out) },
            _ => kernels::merge_store::<B, L>(fields, x, r, out),
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
        _streaming: bool,
    ) -> Option<usize> {
        // The one-pass step for the common shapes (codes of 1 or 2 sub-planes, residuals of 1
        // to 3), the separate steps for the others.
        macro_rules! one_pass {
            ($c:literal, $r:literal) => {
                // SAFETY: a `Neon` exists only where `detect` found NEON.
                unsafe {
                    ranked_chunk_neon::<B, L, $c, $r>(
                        self, fields, frame, plane, residual, start, table, escape, deeper, out,
                        hash,
                    )
                }
            };
        }
        match (B, L::BITS, plane.len, residual.len) {
            (2, 16, 1, 1) | (4, 32, 1, 1) => one_pass!(1, 1),
            (2, 16, 1, 2) | (4, 32, 1, 2) => one_pass!(1, 2),
            (2, 16, 1, 3) | (4, 32, 1, 3) => one_pass!(1, 3),
            (2, 16, 2, 1) | (4, 32, 2, 1) => one_pass!(2, 1),
            (2, 16, 2, 2) | (4, 32, 2, 2) => one_pass!(2, 2),
            (2, 16, 2, 3) | (4, 32, 2, 3) => one_pass!(2, 3),
            _ => ranked_chunk_steps::<B, L, Self>(
                self, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
            ),
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
        _streaming: bool,
    ) -> Option<usize> {
        // The one-pass step for the common shapes (low bits of 1 or 2 sub-planes, residuals of
        // 1 to 3), the separate steps for the others.
        macro_rules! one_pass {
            ($c:literal, $r:literal) => {
                // SAFETY: a `Neon` exists only where `detect` found NEON.
                unsafe {
                    groups_chunk_neon::<B, L, $c, $r>(
                        self, fields, frame, low, residual, start, params, flags, highs, out, hash,
                    )
                }
            };
        }
        match (B, L::BITS, low.len, residual.len) {
            (2, 16, 1, 1) | (4, 32, 1, 1) => one_pass!(1, 1),
            (2, 16, 1, 2) | (4, 32, 1, 2) => one_pass!(1, 2),
            (2, 16, 1, 3) | (4, 32, 1, 3) => one_pass!(1, 3),
            (2, 16, 2, 1) | (4, 32, 2, 1) => one_pass!(2, 1),
            (2, 16, 2, 2) | (4, 32, 2, 2) => one_pass!(2, 2),
            (2, 16, 2, 3) | (4, 32, 2, 3) => one_pass!(2, 3),
            _ => groups_chunk_steps::<B, L, Self>(
                self, fields, frame, low, residual, start, params, flags, highs, out,
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
        // The one-pass step for codes of 1 or 2 sub-planes, the separate steps for others.
        match plane.len {
            // SAFETY: a `Neon` exists only where `detect` found NEON.
            1 => unsafe {
                level_chunk_neon::<1>(self, frame, plane, start, table, escape, deeper, out)
            },
            // SAFETY: a `Neon` exists only where `detect` found NEON.
            2 => unsafe {
                level_chunk_neon::<2>(self, frame, plane, start, table, escape, deeper, out)
            },
            _ => level_chunk_steps(self, frame, plane, start, table, escape, deeper, out),
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
                let mut small = [0u8; 16];
                small[..symbols].copy_from_slice(&table[..symbols]);
                let n = codes.len().min(kernels::CHUNK);
                let mut r = [L::default(); kernels::CHUNK];
                let r = &mut r[..n];
                self.unpack(frame, residual, start, r);
                // SAFETY: a `Neon` exists only where `detect` found NEON.
                unsafe { resolve::<B, L>(fields, &codes[..n], &small, masks, deeper, r, out) }
            }
            _ => {
                // The portable step's order (lookup, expansion, merge), with these kernels.
                let n = codes.len().min(kernels::CHUNK);
                let mut r = [L::default(); kernels::CHUNK];
                let r = &mut r[..n];
                self.unpack(frame, residual, start, r);
                let mut x = [0u8; kernels::CHUNK];
                let x = &mut x[..n];
                self.lookup(&codes[..n], table, symbols, x);
                self.expand(masks, deeper, x);
                self.merge_store::<B, L>(fields, x, r, out);
            }
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
/// from the run's first word on, the run's lanes as bytes, its (take, place, mask), and
/// whether the sub-plane is the first (its fields are stored, the others' ORed in). A plane
/// of width 0 (no sub-planes) is all zeros.
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
        for run in sub.runs(start, lanes) {
            let dst = &mut out[lane_bytes * run.done..lane_bytes * (run.done + run.len)];
            let words = &frame[sub.offset + 2 * run.word..];
            take(words, dst, (run.bit, sub.shift, field_mask), s == 0);
        }
    }
}

/// The runs of `values` (values `start..` of `plane`) in each sub-plane: `fill` gets a run's
/// values as bytes, the frame from the run's first word on, and the run's (take, place, mask).
#[inline(always)]
fn for_each_pack_run<L: Lane>(
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
        for run in sub.runs(start, lanes) {
            let src = &values[lane_bytes * run.done..lane_bytes * (run.done + run.len)];
            let words = &mut frame[sub.offset + 2 * run.word..];
            fill(src, words, (sub.shift, run.bit, field_mask));
        }
    }
}
