//! AVX2 kernels (with BMI1/2, LZCNT, POPCNT): what every x86_64 CPU with AVX2 runs, and what
//! the AVX-512 kernels fall back to for the steps they do not cover.
//!
//! Longer than 1,000 lines on purpose: it is one instruction set's twin of `kernels/` and of the
//! `Isa` trait's defaults, kept in one file so that each kernel sits beside the helpers (lane
//! shuffles, plane loads) it shares with its neighbours and can be read against its portable
//! twin in the same order.

use super::*;

/// [`kernels::unpack_range`]: each run of words with one bit offset is shifted, masked and
/// ORed into the lanes 16 at a time. A run's last few lanes go through a scratch step when
/// the frame has 16 words there (the extra ones are read and dropped), else one at a time.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn unpack<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
    let lane_bytes = (L::BITS / 8) as usize;
    for_each_unpack_run(frame, plane, start, out, |words, dst, shifts, first| {
        let run = dst.len() / lane_bytes;
        let steps = words[..2 * run]
            .chunks_exact(2 * STEP)
            .zip(dst.chunks_exact_mut(lane_bytes * STEP));
        for (w, d) in steps {
            // SAFETY: this fn's contract gives the CPU features `unpack_step` asks.
            unsafe { unpack_step::<L>(w, shifts, first, d) };
        }
        let q = run / STEP * STEP;
        if q < run && words.len() >= 2 * (q + STEP) {
            let mut scratch = [0u8; 4 * STEP];
            let scratch = &mut scratch[..lane_bytes * STEP];
            // SAFETY: this fn's contract gives the CPU features `unpack_step` asks.
            unsafe { unpack_step::<L>(&words[2 * q..2 * q + 2 * STEP], shifts, true, scratch) };
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

/// One step of [`unpack`]: the fields at bit `take` of 16 words (`words`, 32 bytes), masked,
/// shifted left by `place` and ORed into 16 lanes (`dst`, `16 * L::BITS / 8` bytes).
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn unpack_step<L: Lane>(
    words: &[u8],
    (take, place, mask): (u32, u32, u32),
    first: bool,
    dst: &mut [u8],
) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// [`kernels::pack_range`]: the mirror of [`unpack`], 16 values at a time. A run's last few
/// values go through a zero-padded step when the frame has 16 words there and the run is
/// not at bit 0 (ORing zeros changes nothing), else one at a time.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn pack<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract; no pointer is read or written here but through
    // the callees' contracts.
    unsafe { pack_runs::<L>(frame, plane, start, values) }
}

/// The body of [`pack`]: 16 values per step, a run's last few through a scratch step when
/// the frame has 16 words there (ORing zeros into the extra ones; not at bit 0, where
/// steps store), else one at a time.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[inline(always)]
pub(super) unsafe fn pack_runs<L: Lane>(
    frame: &mut [u8],
    plane: &Plane,
    start: usize,
    values: &[L],
) {
    let lane_bytes = (L::BITS / 8) as usize;
    for_each_run(frame, plane, start, values, |src, words, shifts| {
        let run = src.len() / lane_bytes;
        let steps = src
            .chunks_exact(lane_bytes * STEP)
            .zip(words[..2 * run].chunks_exact_mut(2 * STEP));
        for (v, w) in steps {
            // SAFETY: this fn's contract gives the CPU features `pack_step` asks.
            unsafe { pack_step::<L>(v, shifts, w) };
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
            // SAFETY: this fn's contract gives the CPU features `pack_step` asks.
            unsafe { pack_step::<L>(v, shifts, &mut words[2 * q..2 * q + 2 * STEP]) };
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

/// One step of [`pack`]: the fields at bit `take` of 16 values (`values`), masked, shifted
/// left by `place` and ORed into 16 words (`words`, 32 bytes).
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn pack_step<L: Lane>(
    values: &[u8],
    (take, place, mask): (u32, u32, u32),
    words: &mut [u8],
) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// Byte-shuffle patterns for the 256 masks of 8 lanes. Compression (`EXPAND == false`):
/// the first bytes are the positions of the set bits, ascending. Expansion: byte `q` is the
/// number of set bits below bit `q` when bit `q` is set (which value lands there), else 0x80
/// (the shuffle writes zero there, and a blend can tell the lane by that top bit).
pub(super) const fn shuffle_patterns<const EXPAND: bool>() -> [u64; 256] {
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

pub(super) static COMPRESS: [u64; 256] = shuffle_patterns::<false>();
pub(super) static EXPAND: [u64; 256] = shuffle_patterns::<true>();

/// [`kernels::compress`] on bytes, 8 lanes per step: one byte shuffle moves the selected
/// values to the front and one 8-byte store appends them.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn compress(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
    let mut k = 0;
    let n = values.len();
    let mut q = 0;
    while q < n {
        let bits = (masks[q / 64] >> (q % 64)) as u8;
        if bits == 0 {
            // Nothing selected here.
        } else if q + 8 <= n && k + 8 <= out.len() {
            // SAFETY: `window` checked that the 8 bytes `values[q..q + 8]` exist.
            let v = unsafe { _mm_loadl_epi64(window::<8>(values, q).cast()) };
            let picked = _mm_shuffle_epi8(v, _mm_cvtsi64_si128(COMPRESS[usize::from(bits)] as i64));
            // SAFETY: `window_mut` checked that the 8 bytes `out[k..k + 8]` exist.
            unsafe { _mm_storel_epi64(window_mut::<8>(out, k).cast(), picked) };
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
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) unsafe fn level_codes_avx2(
    isa: Avx2,
    x: &[u8],
    level: &LevelCodes,
    codes: &mut [u8],
    escaped: &mut [u8],
) -> usize {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// [`kernels::lookup`] for tables of at most 16 symbols: one byte shuffle per 32 codes.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn lookup16(codes: &[u8], table: &[u8; 16], out: &mut [u8]) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// [`kernels::rank_codes`] for up to 16 symbols: a compare and a blend per symbol per 32
/// exponents.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn rank_codes16(x: &[u8], level: &LevelCodes, out: &mut [u8]) {
    let (n, symbols) = (x.len().min(out.len()), level.symbols);
    let escape = _mm256_set1_epi8(symbols.len() as i8);
    for (xs, o) in x[..n].chunks_exact(32).zip(out[..n].chunks_exact_mut(32)) {
        // SAFETY: `window` checked that `xs` has its 32 bytes.
        let v = unsafe { _mm256_loadu_si256(window::<32>(xs, 0).cast()) };
        let mut code = escape;
        for (s, &symbol) in symbols.iter().enumerate() {
            let hit = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(symbol as i8));
            code = _mm256_blendv_epi8(code, _mm256_set1_epi8(s as i8), hit);
        }
        // SAFETY: `window_mut` checked that `o` has its 32 bytes.
        unsafe { _mm256_storeu_si256(window_mut::<32>(o, 0).cast(), code) };
    }
    let q = n / 32 * 32;
    kernels::rank_codes(&x[q..n], level, &mut out[q..n]);
}

/// The shifts and masks that split 2-byte elements ([`Fields::split`]) in 16-bit lanes (and
/// 1-byte ones widened to them).
pub(super) struct Split16 {
    m: __m128i,
    k: __m128i,
    exponent_mask: __m256i,
    mantissa_mask: __m256i,
    /// The sign (bit 15) goes to the residual's bit `live`, above the live mantissa bits.
    sign_to: __m128i,
    sign_bit: __m256i,
}

impl Split16 {
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
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
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn lanes(&self, u: __m256i) -> (__m256i, __m256i) {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
            let exponents = _mm256_and_si256(_mm256_srl_epi16(u, self.m), self.exponent_mask);
            let sign = _mm256_and_si256(_mm256_srl_epi16(u, self.sign_to), self.sign_bit);
            let mantissa = _mm256_srl_epi16(_mm256_and_si256(u, self.mantissa_mask), self.k);
            (exponents, _mm256_or_si256(sign, mantissa))
        }
    }
}

/// [`kernels::split_load`] for 2-byte elements: 32 per step, exponents narrowed to bytes.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn split16(fields: &Fields, input: &[u8], x: &mut [u8], r: &mut [u16]) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// [`Isa::split_pack`] for 2-byte elements (`L` 16 bits) and 1-byte ones (`L` 8 bits,
/// widened to 16-bit lanes), 32 per step: [`split16`] with each residual's fields shifted
/// into their words in place of the residual array (a sub-plane's first fields are stored,
/// the others ORed in). Runs not in one run of words per sub-plane, and the last elements
/// short of 32, take the separate steps.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn split_pack16<const B: usize, L: Lane>(
    isa: Avx2,
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    r: &mut [L],
    frame: &mut [u8],
    plane: &Plane,
    start: usize,
) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract; no pointer is read or written here but through
    // the callees' contracts.
    unsafe {
        let n = x.len().min(input.len() / B).min(kernels::CHUNK);
        let steps = n / 32 * 32;
        let words = (steps > 0)
            .then(|| residual_words(frame, plane, start, steps))
            .flatten();
        let Some(words) = words else {
            return split_pack_steps::<B, L, _>(isa, fields, input, x, r, frame, plane, start);
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
        let (head, tail) = (&input[..B * steps], &mut x[..steps]);
        match plane.len {
            1 => split_pack16_steps::<B, 1>(fields, head, tail, frame, first::<1, _>(&subs)),
            2 => split_pack16_steps::<B, 2>(fields, head, tail, frame, first::<2, _>(&subs)),
            3 => split_pack16_steps::<B, 3>(fields, head, tail, frame, first::<3, _>(&subs)),
            _ => return split_pack_steps::<B, L, _>(isa, fields, input, x, r, frame, plane, start),
        }
        if steps < n {
            split_pack_steps::<B, L, _>(
                isa,
                fields,
                &input[B * steps..B * n],
                &mut x[steps..n],
                r,
                frame,
                plane,
                start + steps,
            );
        }
    }
}

/// A residual sub-plane's words for [`split_pack16_steps`].
#[derive(Clone, Copy)]
pub(super) struct PackShifts {
    offset: usize,
    take: __m128i,
    place: __m128i,
    mask: __m256i,
    first: bool,
}

/// [`split_pack16`]'s steps over `x.len()` `B`-byte elements (a multiple of 32) for a residual of
/// `N` sub-planes.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). Every sub-plane's words
/// for the `x.len()` values lie in `frame`.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) unsafe fn split_pack16_steps<const B: usize, const N: usize>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    frame: &mut [u8],
    subs: [PackShifts; N],
) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
        let steps = x.len().min(input.len() / B) / 32 * 32;
        let split = Split16::new(fields);
        let (ip, xp, fp) = (input.as_ptr(), x.as_mut_ptr(), frame.as_mut_ptr());
        for at in (0..steps).step_by(32) {
            let mut exps = [_mm256_setzero_si256(); 2];
            for (h, ex) in exps.iter_mut().enumerate() {
                // SAFETY: `at + 32 <= steps`: the input bytes `B * (at..at + 32)` and the
                // exponents `at..at + 32` are in bounds; the words are the caller's.
                let u = if B == 1 {
                    _mm256_cvtepu8_epi16(_mm_loadu_si128(ip.add(at + 16 * h).cast()))
                } else {
                    _mm256_loadu_si256(ip.add(2 * (at + 16 * h)).cast())
                };
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
}

/// [`kernels::escape_masks`]: one compare and one movemask per 32 codes.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn escape_masks(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
    masks.fill(0);
    let splat = _mm256_set1_epi8(escape as i8);
    let mut total = 0;
    for (q, chunk) in codes.chunks(32).enumerate() {
        let bits = if chunk.len() == 32 {
            // SAFETY: `window` checked that the chunk has its 32 bytes.
            let c = unsafe { _mm256_loadu_si256(window::<32>(chunk, 0).cast()) };
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
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn expand(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// A frame's merge constants (FORMAT.md 4.2): 16 elements per step, in 16-bit lanes for
/// 2-byte elements and 32-bit lanes for 4-byte ones. The residual (sign over the live
/// mantissa bits) shifted left by the dead bits has its sign at bit `M`; adding the sign
/// times `2^E - 1` moves it to the top bit (`2^M (2^E - 1) = 2^(E+M) - 2^M`), and the
/// exponent lands in between, so a merge is a mask, a multiply and two adds besides the
/// exponent's own shift, and the dead-bit shift in frames that have dead bits (where four
/// shifts and a mask took the vector shifter's ports twice as long).
pub(super) struct Merge {
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
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
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
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
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
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn store16<const B: usize>(&self, x: __m128i, r0: __m256i, r1: __m256i, out: *mut u8) {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and
        // writes below in bounds (the notes at each step say how).
        unsafe {
            let (u0, u1) = self.elements16::<B>(x, r0, r1);
            _mm256_storeu_si256(out.cast(), u0);
            if B == 4 {
                _mm256_storeu_si256(out.add(32).cast(), u1);
            }
        }
    }
}

/// [`kernels::merge_store`] (`L` is `u16` for `B == 2`, `u32` for `B == 4`).
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn merge<const B: usize, L: Lane>(
    fields: &Fields,
    x: &[u8],
    r: &[L],
    out: &mut [u8],
) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// Where [`resolve_store`] reads the residuals: straight from the plane's words when the
/// chunk is one run of words in every sub-plane (the usual case), else from lanes unpacked
/// beforehand. (Built once per chunk on the stack, so its size does not matter.)
#[allow(clippy::large_enum_variant)]
pub(super) enum Residuals {
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
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn words(words: &PlaneWords, len: usize) -> Residuals {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
            Residuals::Words {
                subs: words16(words),
                len,
            }
        }
    }

    /// The residuals of elements `at..at + 16` of the chunk: 16-bit lanes in the first
    /// register for `B == 2`; 32-bit lanes, 8 per register, for `B == 4`.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline]
    unsafe fn load16<const B: usize>(&self, frame: *const u8, at: usize) -> (__m256i, __m256i) {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and
        // writes below in bounds (the notes at each step say how).
        unsafe {
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
}

/// A sub-plane's words for [`fields16`]: byte offset of the chunk's first word, bit to take,
/// bit to place at, field mask.
pub(super) type Words16 = (usize, __m128i, __m128i, __m256i);

/// The fields of 16 values from `at` on, one 16-word load per sub-plane (shift, mask,
/// place, OR): 16-bit lanes in the first register for `B == 2`; 32-bit lanes, 8 per
/// register, for `B == 4`.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). Every sub-plane's words
/// `offset + 2 * (at..at + 16)` lie in the buffer at `fp`.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn fields16<const B: usize>(
    fp: *const u8,
    subs: &[Words16],
    at: usize,
) -> (__m256i, __m256i) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// [`residual_words`]' findings as [`fields16`] takes them.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn words16(words: &PlaneWords) -> [Words16; 5] {
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
/// the next queued exponents from `queue` in order ([`place32`]), the others their entry of
/// `lut` (the table in both halves). Also returns the escape mask.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). 32 bytes readable at
/// `queue`.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn resolve32(
    c: __m256i,
    lut: __m256i,
    escapes: __m256i,
    queue: *const u8,
) -> (__m256i, u32) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract; no pointer is read or written here but through
    // the callees' contracts.
    unsafe {
        let escaped = _mm256_cmpeq_epi8(c, escapes);
        let bits = _mm256_movemask_epi8(escaped) as u32;
        let placed = place32(escaped, bits, queue);
        let x = _mm256_blendv_epi8(_mm256_shuffle_epi8(lut, c), placed, escaped);
        (x, bits)
    }
}

/// The next queued values from `queue`, in order, in the set lanes of `selected` (bytes of
/// all ones; `bits` its mask); the other lanes are unspecified. Each selected lane's queue
/// index is the count of selected lanes before it, by a prefix sum within each 16-lane half
/// (the upper half reads on from where the lower half's selected values end).
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). 32 bytes readable at
/// `queue`.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn place32(selected: __m256i, bits: u32, queue: *const u8) -> __m256i {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
        // Minus the selected lanes up to and including each lane, per 128-bit half.
        let mut sum = selected;
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<1>(sum));
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<2>(sum));
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<4>(sum));
        sum = _mm256_add_epi8(sum, _mm256_slli_si256::<8>(sum));
        // `!sum` = that count - 1: a selected lane's index among its half's values.
        let index = _mm256_xor_si256(sum, _mm256_set1_epi8(-1));
        let low = (bits as u16).count_ones() as usize;
        let values = _mm256_set_m128i(
            _mm_loadu_si128(queue.add(low).cast()),
            _mm_loadu_si128(queue.cast()),
        );
        _mm256_shuffle_epi8(values, index)
    }
}

/// Bytes of all ones in the lanes of the set bits of `bits`, zeros elsewhere.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn lanes_of(bits: u32) -> __m256i {
    // Byte `q` takes byte `q / 8` of the mask (each 128-bit half holds all four), then
    // tests its own bit.
    let spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(bits as i32),
        _mm256_setr_epi64x(
            0,
            0x0101_0101_0101_0101,
            0x0202_0202_0202_0202,
            0x0303_0303_0303_0303,
        ),
    );
    let select = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select)
}

/// The first `N` of a plane's sub-planes (the caller knows it has `N`), as an array.
#[inline(always)]
pub(super) fn first<const N: usize, T: Copy>(words: &[T; 5]) -> [T; N] {
    core::array::from_fn(|i| words[i])
}

/// Where a one-pass step's exponents come from: 32 codes (in order, from the plane's words)
/// turned into exponents, taking queued values from `k` on. The ranked coding's table and
/// escape queue ([`RankedCodes`]), or the groups coding's high bits and inverse transform
/// ([`GroupsCodes`]).
pub(super) trait Resolve32 {
    /// The exponents of elements `at..at + 32` of the chunk from their codes `c`, and the
    /// next `k` (None past the queue's count).
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). 32 queue bytes
    /// readable from `k` when `k` is at most the queue's count.
    unsafe fn resolve32(&self, c: __m256i, at: usize, k: usize) -> Option<(__m256i, usize)>;
}

/// The ranked coding's level-0 lookup: the table in both halves, the escape code, and the
/// queue of deeper exponents with its count.
pub(super) struct RankedCodes {
    lut: __m256i,
    escapes: __m256i,
    queue: *const u8,
    count: usize,
}

impl Resolve32 for RankedCodes {
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn resolve32(&self, c: __m256i, _at: usize, k: usize) -> Option<(__m256i, usize)> {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and
        // writes below in bounds (the notes at each step say how).
        unsafe {
            let (x, bits) = resolve32(c, self.lut, self.escapes, self.queue.add(k));
            let k = k + bits.count_ones() as usize;
            (k <= self.count).then_some((x, k))
        }
    }
}

/// The groups coding's exponents: `y` = the low bits (the codes) with the next high bits
/// from the queue ORed in above them in the flagged lanes, then `x = (b - sext(y)) mod 2^E`
/// (FORMAT.md 4.2) in bytes, as [`GroupsBytes`] (its constants in every lane).
pub(super) struct GroupsCodes<'a> {
    /// The chunk's flags, bit `i` for element `i`.
    flags: &'a [u64],
    /// The low width `m` (where the high bits go).
    low: __m128i,
    half: __m256i,
    base_half: __m256i,
    exponent_mask: __m256i,
    queue: *const u8,
    count: usize,
}

impl Resolve32 for GroupsCodes<'_> {
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn resolve32(&self, y: __m256i, at: usize, k: usize) -> Option<(__m256i, usize)> {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and
        // writes below in bounds (the notes at each step say how).
        unsafe {
            // `at` is a multiple of 32.
            let bits = (self.flags[at / 64] >> (at % 64)) as u32;
            let flagged = lanes_of(bits);
            let high = _mm256_and_si256(place32(flagged, bits, self.queue.add(k)), flagged);
            // Values stay below 2^n <= 2^8: a 16-bit shift moves no bit across bytes.
            let y = _mm256_or_si256(y, _mm256_sll_epi16(high, self.low));
            // [`GroupsBytes::inverse`].
            let x = _mm256_sub_epi8(self.base_half, _mm256_xor_si256(y, self.half));
            let x = _mm256_and_si256(x, self.exponent_mask);
            let k = k + bits.count_ones() as usize;
            (k <= self.count).then_some((x, k))
        }
    }
}

/// What the one-pass steps share: the merge, the frame and output, whether to hash, and
/// where the exponents come from.
pub(super) struct OnePass<S> {
    merge: Merge,
    fp: *const u8,
    op: *mut u8,
    hashing: bool,
    source: S,
}

impl<S: Resolve32> OnePass<S> {
    /// The chunk's first `blocks` elements (a multiple of 64), 32 per step; `C` and `R`
    /// give the code plane's and the residual plane's sub-planes. Returns how many queued
    /// exponents they took, or None when they escape more than the queue holds.
    ///
    /// `BYTES`: 2-byte elements whose exponent and residual are a byte each (bf16 without
    /// dead bits, its residual one 8-bit sub-plane), merged as bytes ([`Self::bytes32`]).
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). As
    /// [`ranked_chunk_avx2`] checks: the planes' words for the blocks in the
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
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
            let (codes, residuals) = (codes.as_ref(), residuals.as_ref());
            let (mut k, mut first) = (0, 0);
            if BYTES {
                // Only bf16's byte merge leaves registers for four steps' exponents ahead of
                // their merges: more steps gain nothing, fp16 gains nothing, and fp32 spills.
                while first + 128 <= blocks {
                    k = self.pass::<B, BYTES, 2>(codes, residuals, first, k, acc)?;
                    first += 128;
                }
            }
            // Two steps at a time: the second step's codes and queue reads overlap the first
            // one's merge (a step fetched one ahead in a loop does not).
            for block in (first..blocks).step_by(64) {
                k = self.pass::<B, BYTES, 1>(codes, residuals, block, k, acc)?;
            }
            Some(k)
        }
    }

    /// `BLOCKS` h32 blocks of 64 elements from `first`, from queued exponent `k` on: all
    /// their steps' exponents first, then their merges (each h32 register's place in a
    /// block is a constant). Returns the next `k`, or None past the queue's count.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn pass<const B: usize, const BYTES: bool, const BLOCKS: usize>(
        &self,
        codes: &[Words16],
        residuals: &[Words16],
        first: usize,
        mut k: usize,
        acc: &mut [__m256i; 4],
    ) -> Option<usize> {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
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
    }

    /// The exponents of elements `at..at + 32` from queued exponent `k` on, and the next
    /// `k` (None past the queue's count).
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn exponents32(
        &self,
        codes: &[Words16],
        at: usize,
        k: usize,
    ) -> Option<(__m256i, usize)> {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
            let (c0, _) = fields16::<2>(self.fp, codes, at);
            let (c1, _) = fields16::<2>(self.fp, codes, at + 16);
            let c = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(c0, c1));
            self.source.resolve32(c, at, k)
        }
    }

    /// The 64 output bytes of 32 bf16 elements from their exponents `x` (in order) and the
    /// residual bytes of the elements `at..at + 32`: a byte select per half instead of the
    /// 16-bit merge's shifts (low byte: exponent bit 0 over the 7 mantissa bits; high byte:
    /// the sign over the exponent's upper 7 bits), then interleaved.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn bytes32(&self, residuals: &[Words16], x: __m256i, at: usize) -> (__m256i, __m256i) {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
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
    }

    /// Elements `block + 32 STEP..` (32 of them) from their exponents `x`: the residuals
    /// read, merged, stored and hashed.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn finish32<const B: usize, const BYTES: bool, const STEP: usize>(
        &self,
        residuals: &[Words16],
        block: usize,
        x: __m256i,
        acc: &mut [__m256i; 4],
    ) {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract; no pointer is read or written here
        // but through the callees' contracts.
        unsafe {
            let at = block + 32 * STEP;
            if B == 1 {
                // FP8: two halves of 16 merged in 16-bit lanes, packed to 32 bytes.
                let mut u = [_mm256_setzero_si256(); 2];
                for (half, u) in u.iter_mut().enumerate() {
                    let xh = if half == 0 {
                        _mm256_castsi256_si128(x)
                    } else {
                        _mm256_extracti128_si256::<1>(x)
                    };
                    let (r0, r1) = fields16::<2>(self.fp, residuals, at + 16 * half);
                    *u = self.merge.elements16::<2>(xh, r0, r1).0;
                }
                let line = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(u[0], u[1]));
                self.store(at, line);
                if self.hashing {
                    // Register `j` of the h32 state hashes bytes `32 j..` of each 128.
                    let j = at % checksum::BLOCK / 32;
                    acc[j] = h32_round256(acc[j], line);
                }
                return;
            }
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
    }

    /// 32 output bytes at byte `at` of the output.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
    #[inline(always)]
    unsafe fn store(&self, at: usize, v: __m256i) {
        // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
        // proves it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and
        // writes below in bounds (the notes at each step say how).
        unsafe {
            _mm256_storeu_si256(self.op.add(at).cast(), v);
        }
    }
}

/// [`Isa::ranked_chunk`] on AVX2 in one pass per 32 elements: the codes from the plane's
/// words (shift, mask, narrow), their exponents by [`resolve32`], the residuals read in place,
/// merged, stored and hashed in registers (no array of codes, masks or residuals between
/// passes). Chunks whose planes do not lie in one run of words, and the last elements short
/// of 64, take the separate steps.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ranked_chunk_avx2<const B: usize, L: Lane>(
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
    // Whole 128-byte blocks of output, whose 32-byte parts the hash registers take in turn.
    let blocks = if B == 1 { n / 128 * 128 } else { n / 64 * 64 };
    let steps = |start: usize, deeper: Escapes<'_>, out: &mut [u8], hash: Option<&mut H32>| {
        ranked_chunk_steps::<B, L, Avx2>(
            isa, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
        )
    };
    // 32 readable queue bytes past every exponent a step can start at (`k <= deeper.count`
    // before each step).
    let words = one_pass_words(frame, plane, residual, start, blocks, &deeper, &hash, 32);
    let Some(words) = words else {
        return steps(start, deeper, out, hash);
    };
    let source = RankedCodes {
        // SAFETY: `table` has `MAX_SYMBOLS` (256) bytes, 16 are read.
        lut: _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(table.as_ptr().cast()) }),
        escapes: _mm256_set1_epi8(escape as i8),
        queue: deeper.values.as_ptr(),
        count: deeper.count,
    };
    let (lens, h) = ((plane.len, residual.len), hash.as_deref_mut());
    // SAFETY: the CPU has AVX2, BMI1/2, LZCNT and POPCNT (this fn's contract); `one_pass_words`
    // checked the planes' words for the `blocks` elements, 32 readable queue bytes past every
    // step's `k` and the hash at a block boundary; `out` holds `B * n >= B * blocks` bytes.
    let k = unsafe { one_pass_avx2::<B, _>(fields, frame, words, lens, blocks, out, h, source) }?;
    let rest = |rest, out: &mut [u8]| steps(start + blocks, rest, out, hash);
    rest_steps(k, deeper, &mut out[B * blocks..B * n], rest)
}

/// The one-pass steps of a chunk's first `blocks` elements (a multiple of 64) from the words
/// of its code and residual planes (`lens`: their sub-plane counts), the exponents from
/// `source`: merged, stored to `out` and hashed into `hash` in registers. Returns how many
/// queued values they took, or None past the queue's count.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). As
/// [`one_pass_words`] checked: the planes' words for the blocks in the frame, the output in
/// bounds, 32 readable queue bytes past each `k` up to the queue's count; the hash (if any) at
/// a block boundary.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn one_pass_avx2<const B: usize, S: Resolve32>(
    fields: &Fields,
    frame: &[u8],
    (code_words, residual_words): (PlaneWords, PlaneWords),
    (code_len, residual_len): (usize, usize),
    blocks: usize,
    out: &mut [u8],
    hash: Option<&mut H32>,
    source: S,
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract; no pointer is read or written here but through
    // the callees' contracts.
    unsafe {
        let (codes, residuals) = (words16(&code_words), words16(&residual_words));
        let step = OnePass {
            merge: Merge::new(fields),
            fp: frame.as_ptr(),
            op: out.as_mut_ptr(),
            hashing: hash.is_some(),
            source,
        };
        let mut acc = h32_lanes(hash.as_deref());
        // The common sub-plane counts as arrays of fixed length, through which the steps run
        // unrolled with the words' shifts in registers (codes: 0 to 2; residuals: 1 to 3).
        let (c, r) = (&codes[..code_len], &residuals[..residual_len]);
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
        h32_store(hash, acc, B * blocks);
        Some(k)
    }
}

/// [`Isa::groups_chunk`] on AVX2 in one pass per 32 elements, as [`ranked_chunk_avx2`] with
/// the groups coding's exponents ([`GroupsCodes`]): the low bits from the plane's words, the
/// flagged lanes' high bits placed from the queue by [`place32`], the inverse transform in
/// bytes. Chunks whose planes do not lie in one run of words, and the last elements short of
/// 64, take the separate steps.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn groups_chunk_avx2<const B: usize, L: Lane>(
    isa: Avx2,
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
    let n = (out.len() / B).min(kernels::CHUNK).min(64 * flags.len());
    let blocks = n / 64 * 64;
    let steps = |start: usize, highs: Escapes<'_>, flags: &[u64], out: &mut [u8]| {
        groups_chunk_steps::<B, L, Avx2>(
            isa, fields, frame, low, residual, start, params, flags, highs, out,
        )
    };
    let words = one_pass_words(frame, low, residual, start, blocks, &highs, &hash, 32);
    let Some(words) = words else {
        return steps(start, highs, flags, out);
    };
    let inverse = GroupsBytes::new(params.base.into(), params.width.into(), fields.e);
    let source = GroupsCodes {
        flags: &flags[..blocks / 64],
        low: _mm_cvtsi32_si128(params.low.into()),
        half: _mm256_set1_epi8(inverse.half as i8),
        base_half: _mm256_set1_epi8(inverse.base_half as i8),
        exponent_mask: _mm256_set1_epi8(inverse.mask as i8),
        queue: highs.values.as_ptr(),
        count: highs.count,
    };
    let lens = (low.len, residual.len);
    // SAFETY: the CPU has AVX2, BMI1/2, LZCNT and POPCNT (this fn's contract); `one_pass_words`
    // checked the planes' words for the `blocks` elements, 32 readable queue bytes past every
    // step's `k` and the hash at a block boundary; `out` holds `B * n >= B * blocks` bytes.
    let k =
        unsafe { one_pass_avx2::<B, _>(fields, frame, words, lens, blocks, out, hash, source) }?;
    let rest = |rest, out: &mut [u8]| steps(start + blocks, rest, &flags[blocks / 64..], out);
    rest_steps(k, highs, &mut out[B * blocks..B * n], rest)
}

/// [`Isa::level_chunk`] on AVX2: planes of one or two sub-planes by [`level_rows_avx2`];
/// others have their codes unpacked into `out` (the plane's rows are short here, so
/// [`unpack`] follows them), then one pass per 32 entries in place, [`resolve32`] and one
/// store (separate passes had a mispredicted branch per 16 entries on whether any
/// escaped). The last entries short of 32 take the separate steps.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn level_chunk_avx2(
    isa: Avx2,
    frame: &[u8],
    plane: &Plane,
    start: usize,
    table: &[u8; MAX_SYMBOLS],
    escape: u8,
    deeper: Escapes<'_>,
    out: &mut [u8],
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
        let n = out.len().min(kernels::CHUNK);
        // 32 readable queue bytes past every exponent a step can start at.
        let steps = if deeper.values.len() >= deeper.count + 32 {
            n / 32 * 32
        } else {
            0
        };
        let lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(table.as_ptr().cast()));
        let escapes = _mm256_set1_epi8(escape as i8);
        let dp = deeper.values.as_ptr();
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
            let op = out.as_mut_ptr();
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
        // Taken after `unpack`'s `&mut` of `out`, which ends the provenance of any pointer taken
        // before it (Miri's stacked borrows: a pointer from before, used here, was undefined
        // behaviour).
        let op = out.as_mut_ptr();
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
}

/// [`row_cursors`] for [`level_rows_avx2`], whose steps read 16 words past a row's end and
/// 16 words before the next row's start (lanes they then drop): every sub-plane also has
/// 64 bytes of the frame before its first word and after its last.
pub(super) fn row_cursors_avx2<const N: usize>(
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
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it). As [`row_cursors_avx2`]
/// checks; `n` bytes writable at `out`; 32 bytes readable
/// past each of the `deeper.count` queued exponents.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) unsafe fn level_rows_avx2<const N: usize>(
    fp: *const u8,
    mut cursors: [RowCursor; N],
    n: usize,
    lut: __m256i,
    escapes: __m256i,
    deeper: Escapes<'_>,
    out: *mut u8,
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// [`kernels::resolve_store`] with the residual unpack fused in, for tables of at most 16
/// symbols: per 16 elements one byte shuffle looks the codes up, the escape mask's shuffle
/// pattern places the deeper exponents, the residual fields are read from their words, and
/// the merge stores the elements, with no intermediate array.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn resolve_store<const B: usize, L: Lane>(
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
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// One `h32` round of 8 lanes (checksum.rs `round`; AVX2 has no rotate: two shifts).
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn h32_round256(acc: __m256i, w: __m256i) -> __m256i {
    let w = _mm256_mullo_epi32(w, _mm256_set1_epi32(checksum::P2 as i32));
    let a = _mm256_add_epi32(acc, w);
    let a = _mm256_or_si256(_mm256_slli_epi32::<13>(a), _mm256_srli_epi32::<19>(a));
    _mm256_mullo_epi32(a, _mm256_set1_epi32(checksum::P1 as i32))
}

/// The h32 state's 32 lanes in four registers (register `j` hashes bytes `32 j..32 j + 32`
/// of each 128-byte block), or zeros when not hashing.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn h32_lanes(hash: Option<&H32>) -> [__m256i; 4] {
    match hash {
        Some(h) => [0, 8, 16, 24].map(|j| {
            // SAFETY: `h.acc[j..j + 8]` is 8 `u32`s, the 32 bytes read.
            unsafe { _mm256_loadu_si256(h.acc[j..j + 8].as_ptr().cast()) }
        }),
        None => [_mm256_setzero_si256(); 4],
    }
}

/// Stores [`h32_lanes`] back after `bytes` more were hashed.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn h32_store(hash: Option<&mut H32>, acc: [__m256i; 4], bytes: usize) {
    if let Some(h) = hash {
        for (j, a) in [0, 8, 16, 24].into_iter().zip(acc) {
            // SAFETY: `h.acc[j..j + 8]` is 8 `u32`s, the 32 bytes written.
            unsafe { _mm256_storeu_si256(h.acc[j..j + 8].as_mut_ptr().cast(), a) };
        }
        h.len += bytes;
    }
}

/// Exponents [`count_exponents_avx2`] counts in vector registers: a window of 16 values.
pub(super) const WINDOW: usize = 16;

/// [`count_exponents_avx2`]'s counters of the window, two exponents per byte: byte `q` of
/// register `p` counts exponent `base + 2 p` in its low nibble and `base + 2 p + 1` in its
/// high one, for the elements `32 s + q`. A nibble holds 15: [`StatsWindow::flush`] every 15
/// steps moves the counts to 32-bit halves of `totals`' 64-bit lanes.
pub(super) struct StatsWindow {
    nibbles: [__m256i; WINDOW / 2],
    totals: [__m256i; WINDOW / 2],
}

impl StatsWindow {
    /// Steps between flushes.
    const STEPS: usize = 15;

    /// # Safety
    ///
    /// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
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

/// [`Isa::exponent_stats`] on AVX2, in two passes over the run (one pass doing both spills
/// registers): [`hash_exponents_avx2`], then [`count_exponents_avx2`]
/// over the exponents it stored. The last elements short of a step ([`stats_step`]) take the
/// portable path.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) unsafe fn exponent_stats_avx2<const B: usize>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    first: u8,
    stats: &mut FrameStats,
    hash: Option<&mut H32>,
) {
    let n = x.len().min(input.len() / B).min(kernels::CHUNK);
    // Whole h32 blocks only from a block boundary (else the portable path hashes).
    let step = stats_step(B);
    let blocks = if at_block(&hash) { n / step * step } else { 0 };
    // SAFETY: the CPU has AVX2, BMI1/2, LZCNT and POPCNT (this fn's contract), all that the
    // two kernels ask; they take slices and check their own bounds.
    let (or, hash) = unsafe {
        let (or, hash) =
            hash_exponents_avx2::<B>(fields, &input[..B * blocks], &mut x[..blocks], hash);
        count_exponents_avx2(&x[..blocks], first, stats);
        (or, hash)
    };
    stats_rest::<B>(fields, input, x, or, blocks, stats, hash);
}

/// The exponents of the elements of `input` (whole [`stats_step`]s) into `x`, by shift, mask
/// and narrowing, with the h32 rounds and the OR of their 32-bit lanes in registers.
/// Returns the OR and the hash.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) unsafe fn hash_exponents_avx2<'h, const B: usize>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    mut hash: Option<&'h mut H32>,
) -> (u32, Option<&'h mut H32>) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
        let step = stats_step(B);
        let blocks = x.len().min(input.len() / B) / step * step;
        let mut acc = h32_lanes(hash.as_deref());
        let hashing = hash.is_some();
        let m = _mm_cvtsi32_si128(fields.m as i32);
        let e_mask = (1u32 << fields.e) - 1;
        let mut or = _mm256_setzero_si256();
        let (ip, xp) = (input.as_ptr(), x.as_mut_ptr());
        for block in (0..blocks).step_by(step) {
            // Parts of 32: each one's h32 registers are constants (an index that alternated
            // put them in memory).
            for part in 0..step / 32 {
                let at = block + 32 * part;
                // SAFETY: `at + 32 <= blocks`: the input bytes `B * (at..at + 32)` and the
                // exponents `at..at + 32` are in bounds.
                // (Loops, not closures, in here: a closure does not get the target features.)
                let mut u = [_mm256_setzero_si256(); B];
                for (i, u) in u.iter_mut().enumerate() {
                    *u = _mm256_loadu_si256(ip.add(B * at + 32 * i).cast());
                }
                // 32 elements are a quarter of an h32 block (B = 1), half of one (B = 2) or a
                // whole one (B = 4).
                let lane = B * part % 4;
                for (i, &w) in u.iter().enumerate() {
                    if hashing {
                        acc[lane + i] = h32_round256(acc[lane + i], w);
                    }
                    or = _mm256_or_si256(or, w);
                }
                let exps = if B == 1 {
                    // Shifted in 16-bit lanes: the mask drops the bits of the next byte.
                    let mask = _mm256_set1_epi8(e_mask as i8);
                    _mm256_and_si256(_mm256_srl_epi16(u[0], m), mask)
                } else if B == 2 {
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
}

/// The histogram of the exponents `x` (whole steps of 32) into `stats`: a window of 16
/// values around the frequent ones ([`FrameStats::frequent`]) by one byte shuffle and one
/// add per two of them into nibble counters ([`StatsWindow`]), and the rare others one by
/// one where a step has any (listing the others of a narrower window by 8-lane shuffles
/// cost a sixth of encoding).
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) unsafe fn count_exponents_avx2(x: &[u8], first: u8, stats: &mut FrameStats) {
    // SAFETY: the caller runs on a CPU with AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves
    // it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and writes below
    // in bounds (the notes at each step say how).
    unsafe {
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
}

/// A 16-entry table widened to the portable kernels' table type.
pub(super) fn table_of(table: &[u8; 16]) -> [u8; MAX_SYMBOLS] {
    let mut wide = [0u8; MAX_SYMBOLS];
    wide[..16].copy_from_slice(table);
    wide
}

/// The shuffle pattern that expands the next values into the set lanes of `bits` (16
/// lanes): the two halves' patterns, the upper offset by the lower half's count.
///
/// # Safety
///
/// The CPU has AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token proves it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
pub(super) unsafe fn expand_pattern(bits: u16) -> __m128i {
    let (lo, hi) = (usize::from(bits as u8), usize::from(bits >> 8));
    let offset = 0x0101_0101_0101_0101u64 * u64::from((lo as u32).count_ones());
    _mm_set_epi64x(EXPAND[hi].wrapping_add(offset) as i64, EXPAND[lo] as i64)
}
