//! AVX-512 kernels (F/BW/VL/VBMI/VBMI2/BITALG with GFNI): 512-bit registers and mask registers
//! for the hottest steps; [`Avx2`] runs them only where the CPU has every feature.
//!
//! Longer than 1,000 lines for the reason `avx2.rs` gives: one instruction set's kernels, in the
//! order of their portable twins.

use super::*;

/// The 32-lane steps over a run of `run` values: `step(q, live)` for every `q` in
/// `(0..run).step_by(32)`, `live` selecting the lanes `q..run` (at most 32).
/// The whole steps first, with a constant mask (computing it in each step cost a third of
/// the packing loop's instructions), then the last, partial one.
#[inline(always)]
pub(super) fn for_each_step32(run: usize, mut step: impl FnMut(usize, u32)) {
    let whole = run / (2 * STEP) * (2 * STEP);
    for q in (0..whole).step_by(2 * STEP) {
        step(q, u32::MAX);
    }
    if whole < run {
        step(whole, (1u32 << (run - whole)) - 1);
    }
}

/// [`unpack`] 32 values at a time, a run's last ones under a lane mask.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn unpack512<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
    let lane_bytes = (L::BITS / 8) as usize;
    for_each_unpack_run(frame, plane, start, out, |words, dst, shifts, first| {
        let run = dst.len() / lane_bytes;
        let words = &words[..2 * run];
        for_each_step32(run, |q, live| {
            // SAFETY: the step reads the words and writes the lanes `q..run` that `live`
            // covers, inside `words` and `dst`; the CPU has the features `unpack_step512`
            // asks (this fn's contract).
            unsafe {
                let (w, d) = (
                    words.as_ptr().add(2 * q),
                    dst.as_mut_ptr().add(lane_bytes * q),
                );
                unpack_step512::<L>(w, shifts, first, d, live);
            }
        })
    })
}

/// [`unpack_step`] for the 32 words at `words` and lanes at `dst` that `live` selects (the
/// others are neither read nor written).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). The selected words and lanes are in bounds.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn unpack_step512<L: Lane>(
    words: *const u8,
    (take, place, mask): (u32, u32, u32),
    first: bool,
    dst: *mut u8,
    live: u32,
) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// [`pack`] 32 values at a time, a run's last ones under a lane mask.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn pack512<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
    let lane_bytes = (L::BITS / 8) as usize;
    for_each_run(frame, plane, start, values, |src, words, shifts| {
        let run = src.len() / lane_bytes;
        let words = &mut words[..2 * run];
        for_each_step32(run, |q, live| {
            // SAFETY: the step reads the values and words `q..run` that `live` covers,
            // inside `src` and `words`; the CPU has the features `pack_step512` asks (this
            // fn's contract).
            unsafe {
                let (v, w) = (
                    src.as_ptr().add(lane_bytes * q),
                    words.as_mut_ptr().add(2 * q),
                );
                pack_step512::<L>(v, shifts, w, live);
            }
        })
    })
}

/// [`pack_step`] for the 32 values at `values` and words at `words` that `live` selects
/// (the others are neither read nor written).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). The selected values and words are in bounds.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn pack_step512<L: Lane>(
    values: *const u8,
    (take, place, mask): (u32, u32, u32),
    words: *mut u8,
    live: u32,
) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// `vpermt2b` indices that gather the low bytes of the 16-bit lanes of two registers (byte
/// `2i` of their concatenation into byte `i`).
pub(super) static LOW_BYTES: [u8; 64] = {
    let mut index = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        index[i] = 2 * i as u8;
        i += 1;
    }
    index
};

/// `vpermb` indices that transpose 8x8 bytes: byte `8 i + q` takes byte `8 q + i`.
pub(super) static TRANSPOSE8X8: [u8; 64] = {
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
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn split16_512(fields: &Fields, input: &[u8], x: &mut [u8], r: &mut [u16]) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// The `vgf2p8affineqb` matrix that sets bit `i` of each byte to bit `source(i)` of the
/// input byte (to 0 where None): row `7 - i` of the matrix picks the source bit.
#[inline(always)]
fn select_bits(source: impl Fn(u32) -> Option<u32>) -> u64 {
    let mut matrix = 0;
    for i in 0..8 {
        if let Some(s) = source(i) {
            matrix |= (1u64 << s) << (8 * (7 - i));
        }
    }
    matrix
}

/// A residual sub-plane's words for [`split_pack8_512`]: the first one's byte offset, the
/// [`select_bits`] matrix that takes its fields from an element to their bit of a byte,
/// the words' bytes they go to (low or high), and whether they are their words' first.
#[derive(Clone, Copy)]
pub(super) struct Pack8 {
    offset: usize,
    selection: u64,
    bytes: u64,
    first: bool,
}

/// [`Isa::split_pack`] for 1-byte elements, 64 per step: the exponents, and each residual
/// sub-plane's fields already at their bit of a word's byte, by one bit selection each
/// ([`select_bits`]: the fields of a byte are bits of it, in any order); `vpermb` spreads
/// the fields to their words' low or high bytes, which are stored (a sub-plane's first
/// fields) or ORed in. Runs not in one run of words per sub-plane, and the last elements
/// short of 64, take the separate steps.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2, BMI1/2, LZCNT and POPCNT (the
/// `Avx2` token with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,gfni,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn split_pack8_512<L: Lane>(
    isa: Avx2,
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    r: &mut [L],
    frame: &mut [u8],
    plane: &Plane,
    start: usize,
) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2,
    // BMI1/2, LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's
    // `# Safety` contract; no pointer is read or written here but through the callees'
    // contracts.
    unsafe {
        let n = x.len().min(input.len()).min(kernels::CHUNK);
        let steps = n / 64 * 64;
        let words = (steps > 0)
            .then(|| residual_words(frame, plane, start, steps))
            .flatten();
        let Some(words) = words else {
            return split_pack_steps::<1, L, _>(isa, fields, input, x, r, frame, plane, start);
        };
        let (e, m, k) = (fields.e, fields.m, fields.k);
        let exponent = select_bits(|i| (i < e).then_some(m + i));
        // Residual bit `t`: the live mantissa bits, then the sign (bit 7).
        let live = m - k;
        let subs = words.map(|(offset, place, take, mask)| {
            let (at, bits) = (place % 8, mask.count_ones());
            let selection = select_bits(|i| {
                let t = (take + i).checked_sub(at)?;
                (i >= at && i < at + bits).then_some(if t < live { k + t } else { 7 })
            });
            let bytes = if place < 8 {
                0x5555_5555_5555_5555
            } else {
                !0x5555_5555_5555_5555
            };
            Pack8 {
                offset,
                selection,
                bytes,
                first: place == 0,
            }
        });
        // (1-byte elements have at most 2: 4 residual bits.)
        let (head, tail) = (&input[..steps], &mut x[..steps]);
        match plane.len {
            1 => split_pack8_512_steps(head, tail, frame, exponent, first::<1, _>(&subs)),
            2 => split_pack8_512_steps(head, tail, frame, exponent, first::<2, _>(&subs)),
            _ => return split_pack_steps::<1, L, _>(isa, fields, input, x, r, frame, plane, start),
        }
        if steps < n {
            split_pack_steps::<1, L, _>(
                isa,
                fields,
                &input[steps..n],
                &mut x[steps..n],
                r,
                frame,
                plane,
                start + steps,
            );
        }
    }
}

/// [`Isa::pack_residuals`] for 1-byte elements: word by word, so each is stored once (packing
/// in element order reads and rewrites a word once per field it holds). Per 64 words of a
/// sub-plane, the 64 elements of each of its fields (`j`, `j + W`, .. for words `j..j + 64`)
/// are loaded, one bit selection ([`select_bits`]) puts their field at its bit of the word's
/// low or high byte, ORs gather the bytes and two `vpermt2b` interleave them into words.
/// Elements past the frame's end read as zero, as [`kernels::pack_range`] leaves their bits.
/// Returns false, writing nothing, where a sub-plane's words do not lie inside `frame`.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2, BMI1/2, LZCNT and POPCNT (the
/// `Avx2` token with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,gfni,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn pack_residuals8_512(
    fields: &Fields,
    input: &[u8],
    frame: &mut [u8],
    plane: &Plane,
) -> bool {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2,
    // BMI1/2, LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it); the notes at each
    // step say how the pointer reads and writes below stay in bounds.
    unsafe {
        let n = plane.count.min(input.len());
        if plane
            .subs()
            .iter()
            .any(|sub| sub.bits > 8 || sub.offset + 2 * sub.words > frame.len())
        {
            return false;
        }
        let (m, k) = (fields.m, fields.k);
        // Residual bit `t`: the live mantissa bits, then the sign (bit 7).
        let live = m - k;
        // Word byte `2 i` takes byte `i` of the low bytes, `2 i + 1` byte `i` of the high ones
        // (`first + i` for the second 32 words).
        let interleave: [__m512i; 2] = [0, 32].map(|first| {
            let index: [u8; 64] =
                core::array::from_fn(|b| (first + b / 2 + if b % 2 == 1 { 64 } else { 0 }) as u8);
            _mm512_loadu_si512(index.as_ptr().cast())
        });
        let (ip, fp) = (input.as_ptr(), frame.as_mut_ptr());
        for sub in plane.subs() {
            let (bits, take, words) = (sub.bits, sub.shift, sub.words);
            let fields_per_word = (16 / bits) as usize;
            // Field `q` of a word sits at bit `q * bits`: of the low byte, then the high one.
            let mut selections = [0u64; 16];
            for (q, selection) in selections.iter_mut().enumerate().take(fields_per_word) {
                let at = (q as u32 * bits) % 8;
                *selection = select_bits(|i| {
                    let t = (take + i).checked_sub(at)?;
                    (i >= at && i < at + bits).then_some(if t < live { k + t } else { 7 })
                });
            }
            let split = (8 / bits) as usize;
            for j in (0..words).step_by(64) {
                let mut bytes = [_mm512_setzero_si512(); 2];
                for (q, &selection) in selections.iter().enumerate().take(fields_per_word) {
                    let first = j + q * words;
                    if first >= n {
                        break;
                    }
                    let live = _bzhi_u64(u64::MAX, (n - first).min(64) as u32);
                    // SAFETY: the masked load reads only elements `first..n`, inside `input`.
                    let u = _mm512_maskz_loadu_epi8(live, ip.add(first).cast());
                    let v =
                        _mm512_gf2p8affine_epi64_epi8::<0>(u, _mm512_set1_epi64(selection as i64));
                    let b = &mut bytes[usize::from(q >= split)];
                    *b = _mm512_or_si512(*b, v);
                }
                let o = fp.add(sub.offset + 2 * j);
                let live = _bzhi_u64(u64::MAX, (words - j).min(64) as u32);
                for (h, &index) in interleave.iter().enumerate() {
                    let w = _mm512_permutex2var_epi8(bytes[0], index, bytes[1]);
                    // SAFETY: the masked store writes only words `j..words` of the sub-plane,
                    // inside `frame` (checked above).
                    _mm512_mask_storeu_epi16(o.add(64 * h).cast(), (live >> (32 * h)) as u32, w);
                }
            }
        }
        true
    }
}

/// [`Isa::exponents`] for 1-byte elements: [`split_pack8_512_steps`] with no sub-planes, the
/// last elements short of 64 portable.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2, BMI1/2, LZCNT and POPCNT (the
/// `Avx2` token with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,gfni,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn exponents8_512(fields: &Fields, input: &[u8], x: &mut [u8]) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2,
    // BMI1/2, LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it); the steps read and
    // write only `input[..steps]` and `x[..steps]`.
    unsafe {
        let n = x.len().min(input.len());
        let steps = n / 64 * 64;
        let (e, m) = (fields.e, fields.m);
        let exponent = select_bits(|i| (i < e).then_some(m + i));
        split_pack8_512_steps::<0>(&input[..steps], &mut x[..steps], &mut [], exponent, []);
        kernels::exponents::<1>(fields, &input[steps..n], &mut x[steps..n]);
    }
}

/// [`split_pack8_512`]'s steps over `x.len()` elements (a multiple of 64) for a residual of
/// `N` sub-planes.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2, BMI1/2, LZCNT and POPCNT (the
/// `Avx2` token with AVX-512 on proves it). Every sub-plane's words for the `x.len()` values
/// lie in `frame`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,gfni,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn split_pack8_512_steps<const N: usize>(
    input: &[u8],
    x: &mut [u8],
    frame: &mut [u8],
    exponent: u64,
    subs: [Pack8; N],
) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 and GFNI besides AVX2,
    // BMI1/2, LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's
    // `# Safety` contract, which keeps the pointer reads and writes below in bounds (the notes at
    // each step say how).
    unsafe {
        let steps = x.len().min(input.len()) / 64 * 64;
        let exponent = _mm512_set1_epi64(exponent as i64);
        let selections = subs.map(|sub| _mm512_set1_epi64(sub.selection as i64));
        // Bytes `2 j` and `2 j + 1` of a register of words take byte `j` of the fields (`32 + j`
        // for the second 32 words).
        let spread: [__m512i; 2] = [0, 32].map(|first| {
            let index: [u8; 64] = core::array::from_fn(|b| (first + b / 2) as u8);
            _mm512_loadu_si512(index.as_ptr().cast())
        });
        let (ip, xp, fp) = (input.as_ptr(), x.as_mut_ptr(), frame.as_mut_ptr());
        for at in (0..steps).step_by(64) {
            // SAFETY: `at + 64 <= steps`: the input bytes and exponents `at..at + 64` are in
            // bounds; the words are the caller's.
            let u = _mm512_loadu_si512(ip.add(at).cast());
            let exps = _mm512_gf2p8affine_epi64_epi8::<0>(u, exponent);
            _mm512_storeu_si512(xp.add(at).cast(), exps);
            for (sub, &selection) in subs.iter().zip(&selections) {
                let v = _mm512_gf2p8affine_epi64_epi8::<0>(u, selection);
                for (h, &spread) in spread.iter().enumerate() {
                    let w = _mm512_maskz_permutexvar_epi8(sub.bytes, spread, v);
                    let o = fp.add(sub.offset + 2 * (at + 32 * h)).cast::<__m512i>();
                    let merged = if sub.first {
                        w
                    } else {
                        _mm512_or_si512(_mm512_loadu_si512(o), w)
                    };
                    _mm512_storeu_si512(o, merged);
                }
            }
        }
    }
}

/// [`Isa::groups_unflagged`] for a few low widths (`widest <= 3`) and bases below 256, by
/// compares: per 64 groups and candidate `b`, which fit under `b`, and of those which have
/// their smallest exponent above `b - 2^m`, counted by popcount.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn groups_unflagged512(
    ranges: &GroupRanges,
    first: u32,
    candidates: usize,
    widest: u32,
) -> [[u32; 9]; GROUPS_BASES] {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// The fields of 32 values from `at` on, in 16-bit lanes: per sub-plane (offset, bit to take
/// the field from, bit to place it at, mask) the field of 32 consecutive words; only the
/// words of the set bits of `lanes` are read (the other lanes are zero).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). The caller checked that every sub-plane's words `offset + 2 * (at +
/// i)` for the
/// set bits `i` of `lanes` lie in the buffer at `fp`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn fields32(fp: *const u8, subs: &[SubShifts], at: usize, lanes: u32) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// [`fields32`] of all 32 lanes for fields wider than 16 bits: 32-bit lanes, the first 16
/// values in the first vector.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). As [`fields32`]'s.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn fields32_wide(
    fp: *const u8,
    subs: &[SubShifts],
    at: usize,
) -> (__m512i, __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// [`kernels::compress`] on bytes, 64 lanes per step: `vpcompressb` and one 64-byte store
/// where `out` has room for it, else the portable step.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn compress512(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
    let n = values.len();
    let mut k = 0;
    for q in (0..n).step_by(64) {
        let bits = masks[q / 64];
        if q + 64 <= n && k + 64 <= out.len() {
            // SAFETY: `window` checked that the 64 bytes `values[q..q + 64]` exist.
            let v = unsafe { _mm512_loadu_si512(window::<64>(values, q).cast()) };
            let picked = _mm512_maskz_compress_epi8(bits, v);
            // SAFETY: `window_mut` checked that the 64 bytes `out[k..k + 64]` exist.
            unsafe { _mm512_storeu_si512(window_mut::<64>(out, k).cast(), picked) };
            k += bits.count_ones() as usize;
        } else {
            k += kernels::compress(&[bits], &values[q..n.min(q + 64)], &mut out[k..]);
        }
    }
    k
}

/// [`kernels::expand`] on bytes, 64 lanes per step: `vpexpandb` merged into the old lanes
/// where 64 values can be read, else the portable step.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn expand512(masks: &[u64], values: &[u8], out: &mut [u8]) -> usize {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// [`kernels::escape_masks`]: one compare per 64 codes, straight into a mask word.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn escape_masks512(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
    let splat = _mm512_set1_epi8(escape as i8);
    let full = codes.len() / 64;
    let mut total = 0;
    for (q, mask) in masks.iter_mut().enumerate().take(full) {
        // SAFETY: `window` checked that the 64 bytes `codes[64 * q..64 * q + 64]` exist.
        let c = unsafe { _mm512_loadu_si512(window::<64>(codes, 64 * q).cast()) };
        *mask = _mm512_cmpeq_epi8_mask(c, splat);
        total += mask.count_ones() as usize;
    }
    total + kernels::escape_masks(&codes[64 * full..], escape, &mut masks[full..])
}

/// [`Isa::level_codes`] in one pass per 64 exponents: the code table (256 bytes, four
/// registers) looked up by two `vpermt2b` and a blend on the top bit, a compare for the
/// escapes and `vpcompressb` (register form: the memory form is slow on some cores) of the
/// escaped exponents. The last exponents short of 64 go through masked loads and stores.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn level_codes512(
    x: &[u8],
    level: &LevelCodes,
    codes: &mut [u8],
    escaped: &mut [u8],
) -> usize {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// [`lookup16`], one byte shuffle per 64 codes.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn lookup16_512(codes: &[u8], table: &[u8; 16], out: &mut [u8]) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
        let lut = _mm512_broadcast_i32x4(_mm_loadu_si128(table.as_ptr().cast()));
        let n = codes.len().min(out.len());
        let full = n / 64 * 64;
        for q in (0..full).step_by(64) {
            let c = _mm512_loadu_si512(window::<64>(codes, q).cast());
            _mm512_storeu_si512(window_mut::<64>(out, q).cast(), _mm512_shuffle_epi8(lut, c));
        }
        lookup16(&codes[full..n], table, &mut out[full..n]);
    }
}

/// Per-lane byte counters of `len <= 8` consecutive exponent values from `first`: byte
/// `8 q + i` counts the elements of 64-bit lane `q` equal to `first + i`, at most 8 per
/// block of 64 (so up to 31 blocks add up without wrapping).
pub(super) struct Window {
    first: __m512i,
    len: __m512i,
    counters: __m512i,
    start: u8,
    values: usize,
}

impl Window {
    /// # Safety
    ///
    /// The CPU has AVX-512F (the `Avx2` token with AVX-512 on proves it).
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
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512 F/BW/VBMI (the `Avx2` token with AVX-512 on proves it).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    #[inline]
    unsafe fn add_to(&self, histogram: &mut [u32; kernels::MAX_SYMBOLS]) {
        // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VBMI (the `Avx2` token with AVX-512 on
        // proves it) and keeps this fn's `# Safety` contract, which keeps the pointer reads and
        // writes below in bounds (the notes at each step say how).
        unsafe {
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
}

/// Counts the `live` bytes of `v` inside `window` (one range compare finds them all) and
/// returns the mask of the others (live or not). Each counted value as one bit of a byte
/// (`1 << index`); the affine transform by these bytes as a bit matrix transposes each
/// lane's 8x8 bits, so byte `i` of a lane holds one bit per element of value `first + i`,
/// which `vpopcntb` counts: four instructions per block where a compare and a masked add
/// per value took sixteen (encode +4% bf16, +10% fp16).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/BITALG and GFNI (the `Avx2` token with AVX-512 on proves it).
#[target_feature(enable = "avx512f,avx512bw,avx512bitalg,gfni")]
#[inline]
pub(super) unsafe fn count_window(v: __m512i, live: u64, window: &mut Window) -> u64 {
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
/// below the frequent ones by [`count_window`] again). The last elements short of a step
/// ([`stats_step`]) take the portable path.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2/BITALG and GFNI besides AVX2, BMI1/2, LZCNT and POPCNT
/// (the `Avx2` token with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx512bitalg,gfni,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
pub(super) unsafe fn exponent_stats512<const B: usize>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    first: u8,
    stats: &mut FrameStats,
    mut hash: Option<&mut H32>,
) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2/BITALG and GFNI besides
    // AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this
    // fn's `# Safety` contract, which keeps the pointer reads and writes below in bounds (the notes
    // at each step say how).
    unsafe {
        let n = x.len().min(input.len() / B).min(kernels::CHUNK);
        // Whole h32 blocks only from a block boundary (else the portable path hashes).
        let step = stats_step(B);
        let blocks = if at_block(&hash) { n / step * step } else { 0 };
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
            let exps = if B == 1 {
                let u = _mm512_loadu_si512(ip.add(at).cast());
                if hashing {
                    // Half an h32 block: the halves' lanes take turns in `acc[0]` (an index
                    // that alternated put them in memory), back in place after whole blocks.
                    acc = [acc[1], h32_round(acc[0], u)];
                }
                or = _mm512_or_si512(or, u);
                // Shifted in 16-bit lanes: the mask drops the bits of the next byte.
                _mm512_and_si512(_mm512_srl_epi16(u, m), _mm512_set1_epi8(e_mask as i8))
            } else if B == 2 {
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
}

/// Stores 64 output bytes: non-temporal when `streaming` (then `at` is 64-byte aligned: a
/// whole cache line, written without first reading it), else through the cache.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). The 64 bytes at `at` are the caller's to write.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn store_line(at: *mut u8, v: __m512i, streaming: bool) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
        if streaming {
            _mm512_stream_si512(at.cast(), v);
        } else {
            _mm512_storeu_si512(at.cast(), v);
        }
    }
}

/// One `h32` round of 16 lanes (checksum.rs `round`).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn h32_round(acc: __m512i, w: __m512i) -> __m512i {
    let w = _mm512_mullo_epi32(w, _mm512_set1_epi32(checksum::P2 as i32));
    let acc = _mm512_rol_epi32::<13>(_mm512_add_epi32(acc, w));
    _mm512_mullo_epi32(acc, _mm512_set1_epi32(checksum::P1 as i32))
}

/// [`Isa::ranked_chunk`] in one pass per 32 elements: the codes come from the plane's words
/// (shift, mask, narrow), a compare finds the escapes, `vpshufb` looks the others up and
/// `vpexpandb` places the next queued exponents in the escaped lanes; the residuals are read
/// in place, merged, stored, and hashed in registers. Chunks whose planes do not lie in one
/// run of words, and the last elements short of 64, take the separate steps.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ranked_chunk512<const B: usize, L: Lane>(
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
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
        let n = (out.len() / B).min(kernels::CHUNK);
        // Whole 128-byte blocks of output, which the hash lanes take in turn.
        let blocks = if B == 1 { n / 128 * 128 } else { n / 64 * 64 };
        let steps = |start: usize, deeper: Escapes<'_>, out: &mut [u8], hash: Option<&mut H32>| {
            ranked_chunk_steps::<B, L, Avx2>(
                isa, fields, frame, plane, residual, start, table, escape, deeper, out, hash,
            )
        };
        // 64 readable queue bytes past every exponent a block can start at (`k <= deeper.count`
        // before each block).
        let words = one_pass_words(frame, plane, residual, start, blocks, &deeper, &hash, 64);
        let Some(words) = words else {
            return steps(start, deeper, out, hash);
        };
        let source = RankedCodes64 {
            lut: _mm512_broadcast_i32x4(_mm_loadu_si128(table.as_ptr().cast())),
            escapes: _mm512_set1_epi8(escape as i8),
            queue: deeper.values.as_ptr(),
            count: deeper.count,
        };
        let (lens, h) = ((plane.len, residual.len), hash.as_deref_mut());
        let k = one_pass512::<B, _>(
            fields, frame, words, lens, blocks, out, h, streaming, source,
        )?;
        let rest = |rest, out: &mut [u8]| steps(start + blocks, rest, out, hash);
        rest_steps(k, deeper, &mut out[B * blocks..B * n], rest)
    }
}
/// The one-pass steps of a chunk's first `blocks` elements (a multiple of 64), 64 at a time:
/// the codes from the words of the code plane, their exponents from `source`, the residuals
/// read in place, merged, stored (non-temporal where `streaming` and the output is 64-byte
/// aligned) and hashed into `hash` in registers. Returns how many queued values they took,
/// or None past the queue's count.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). As [`one_pass_words`] checked for `words` (`lens`: the planes'
/// sub-plane counts):
/// the planes' words for the blocks in the frame, the output in bounds, 64 readable queue
/// bytes past each `k` up to the queue's count; the hash (if any) at a block boundary.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn one_pass512<const B: usize, S: Resolve64>(
    fields: &Fields,
    frame: &[u8],
    (code_words, residual_words): (PlaneWords, PlaneWords),
    (code_len, residual_len): (usize, usize),
    blocks: usize,
    out: &mut [u8],
    hash: Option<&mut H32>,
    streaming: bool,
    source: S,
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
        let (code_subs, residual_subs) = (shifts_of(&code_words), shifts_of(&residual_words));
        let code_subs = &code_subs[..code_len];
        // Copies of the first residual sub-planes in arrays of fixed length: through them the
        // loop below runs unrolled for the common counts, the shifts and masks in registers
        // (fp16's three sub-planes: +12% decode in cache against the loop over the slice).
        let one: [SubShifts; 1] = core::array::from_fn(|i| residual_subs[i]);
        let two: [SubShifts; 2] = core::array::from_fn(|i| residual_subs[i]);
        let three: [SubShifts; 3] = core::array::from_fn(|i| residual_subs[i]);
        let residual_subs = &residual_subs[..residual_len];
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
        let (fp, op) = (frame.as_ptr(), out.as_mut_ptr());
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
            // were checked by `residual_words`; `k` is at most the queue's count (checked after
            // every block), so 64 queue bytes are readable from it.
            let low = fields32(fp, code_subs, block, u32::MAX);
            let high = fields32(fp, code_subs, block + 32, u32::MAX);
            let (exponents, taken) = source.resolve64(low, high, block, k);
            k += taken;
            if k > source.count() {
                return None;
            }
            // Two steps of 32: for B = 2 the first hashes into lanes 0..16, the second into
            // 16..32. For B = 1 (FP8) both are narrowed to one line of 64 bytes; the blocks
            // start on 128-byte boundaries of the output, so even blocks hash into lanes 0..16
            // and odd ones into 16..32.
            let mut narrowed = [_mm256_setzero_si256(); 2];
            for half in 0..2 {
                let at = block + 32 * half;
                // SAFETY: the output `B * (at..at + 32)` is in `out`.
                let x = if half == 0 {
                    _mm512_castsi512_si256(exponents)
                } else {
                    _mm512_extracti64x4_epi64::<1>(exponents)
                };
                if B <= 2 {
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
                    if B == 1 {
                        narrowed[half] = _mm512_cvtepi16_epi8(u);
                        continue;
                    }
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
            if B == 1 {
                let line =
                    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(narrowed[0]), narrowed[1]);
                // SAFETY: the output `block..block + 64` is in `out`.
                store_line(op.add(block), line, streaming);
                if hashing {
                    let lanes = (block / 64) % 2;
                    acc[lanes] = h32_round(acc[lanes], line);
                }
            }
        }
        if let Some(h) = hash {
            for (j, a) in [0, 16].into_iter().zip(acc) {
                _mm512_storeu_si512(h.acc[j..j + 16].as_mut_ptr().cast(), a);
            }
            h.len += B * blocks;
        }
        Some(k)
    }
}

/// [`Isa::level_chunk`] 64 codes per step, as the level-0 step of [`ranked_chunk512`]
/// without the residuals: the codes from the plane's words, one compare for the escapes,
/// `vpshufb` for the others, `vpexpandb` for the deeper exponents. A deeper level's plane is
/// short (a row of its words holds fewer entries than a chunk), so the codes go stretch by
/// stretch of one run of words each, the last block of a stretch masked to its length.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn level_chunk512(
    isa: Avx2,
    frame: &[u8],
    plane: &Plane,
    start: usize,
    table: &[u8; MAX_SYMBOLS],
    escape: u8,
    deeper: Escapes<'_>,
    out: &mut [u8],
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// The step both fused decoder kernels take per 64 entries of a level from `at` on (only
/// the `lanes`): their codes from the plane's words (two [`fields32`] gathered into bytes by
/// one `vpermt2b`), the unescaped ones looked up in `lut` (16 entries), the escaped ones
/// given the next exponents at `queue` in order (`vpexpandb`). Returns the exponents and
/// the escaped lanes.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). As [`fields32`] for the `lanes`, and 64 bytes readable at `queue`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn level_exponents64(
    fp: *const u8,
    subs: &[SubShifts],
    at: usize,
    lanes: u64,
    lut: __m512i,
    escapes: __m512i,
    queue: *const u8,
) -> (__m512i, u64) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract; no pointer is read or written here but through the callees' contracts.
    unsafe {
        let low = fields32(fp, subs, at, lanes as u32);
        let high = fields32(fp, subs, at + 32, (lanes >> 32) as u32);
        exponents64(low, high, lanes, lut, escapes, queue)
    }
}

/// [`level_exponents64`] from the codes of its two halves (16-bit lanes).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). 64 bytes readable at `queue`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn exponents64(
    low: __m512i,
    high: __m512i,
    lanes: u64,
    lut: __m512i,
    escapes: __m512i,
    queue: *const u8,
) -> (__m512i, u64) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
        let c = bytes64(low, high);
        let bits = _mm512_cmpeq_epi8_mask(c, escapes) & lanes;
        let values = _mm512_loadu_si512(queue.cast());
        let exponents = _mm512_mask_expand_epi8(_mm512_shuffle_epi8(lut, c), bits, values);
        (exponents, bits)
    }
}
/// The low bytes of the 16-bit lanes of `low`, then of `high`: 64 codes in order.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn bytes64(low: __m512i, high: __m512i) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
        let low_bytes = _mm512_loadu_si512(LOW_BYTES.as_ptr().cast());
        _mm512_permutex2var_epi8(low, low_bytes, high)
    }
}

/// Where [`one_pass512`]'s exponents come from: 64 codes (in 16-bit lanes, the first 32 in
/// `low`) turned into exponents, taking queued values from `k` on. The ranked coding's
/// table and escape queue ([`RankedCodes64`]), or the groups coding's high bits and inverse
/// transform ([`GroupsCodes64`]).
pub(super) trait Resolve64 {
    /// The queue's count.
    fn count(&self) -> usize;

    /// The exponents of elements `at..at + 64` of the chunk from their codes, and how many
    /// queued values they took.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2`
    /// token with AVX-512 on proves it). 64 queue bytes readable from `k`.
    unsafe fn resolve64(
        &self,
        low: __m512i,
        high: __m512i,
        at: usize,
        k: usize,
    ) -> (__m512i, usize);
}

/// The ranked coding's level-0 lookup ([`exponents64`]): the table in every 128-bit lane,
/// the escape code, and the queue of deeper exponents with its count.
pub(super) struct RankedCodes64 {
    lut: __m512i,
    escapes: __m512i,
    queue: *const u8,
    count: usize,
}

impl Resolve64 for RankedCodes64 {
    #[inline(always)]
    fn count(&self) -> usize {
        self.count
    }

    /// # Safety
    ///
    /// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2`
    /// token with AVX-512 on proves it).
    #[inline(always)]
    unsafe fn resolve64(
        &self,
        low: __m512i,
        high: __m512i,
        _at: usize,
        k: usize,
    ) -> (__m512i, usize) {
        // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2,
        // LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `#
        // Safety` contract, which keeps the pointer reads and writes below in bounds (the notes at
        // each step say how).
        unsafe {
            let queue = self.queue.add(k);
            let (x, bits) = exponents64(low, high, u64::MAX, self.lut, self.escapes, queue);
            (x, bits.count_ones() as usize)
        }
    }
}

/// The groups coding's exponents, as [`GroupsCodes`] on AVX2: `vpexpandb` places the next
/// high bits in the flagged lanes (the flags are the mask itself).
pub(super) struct GroupsCodes64<'a> {
    /// The chunk's flags, bit `i` for element `i`.
    flags: &'a [u64],
    /// The low width `m` (where the high bits go).
    low: __m128i,
    /// [`GroupsBytes`]' constants in every lane.
    half: __m512i,
    base_half: __m512i,
    exponent_mask: __m512i,
    queue: *const u8,
    count: usize,
}

impl Resolve64 for GroupsCodes64<'_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.count
    }

    /// # Safety
    ///
    /// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2`
    /// token with AVX-512 on proves it).
    #[inline(always)]
    unsafe fn resolve64(
        &self,
        low: __m512i,
        high: __m512i,
        at: usize,
        k: usize,
    ) -> (__m512i, usize) {
        // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2,
        // LZCNT and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `#
        // Safety` contract, which keeps the pointer reads and writes below in bounds (the notes at
        // each step say how).
        unsafe {
            // `at` is a multiple of 64.
            let bits = self.flags[at / 64];
            let highs =
                _mm512_maskz_expand_epi8(bits, _mm512_loadu_si512(self.queue.add(k).cast()));
            // Values stay below 2^n <= 2^8: a 16-bit shift moves no bit across bytes.
            let y = _mm512_or_si512(bytes64(low, high), _mm512_sll_epi16(highs, self.low));
            let x = _mm512_sub_epi8(self.base_half, _mm512_xor_si512(y, self.half));
            (
                _mm512_and_si512(x, self.exponent_mask),
                bits.count_ones() as usize,
            )
        }
    }
}

/// [`Isa::groups_chunk`] in one pass per 64 elements, as [`ranked_chunk512`] with the groups
/// coding's exponents ([`GroupsCodes64`]). Chunks whose planes do not lie in one run of
/// words, and the last elements short of 64, take the separate steps.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn groups_chunk512<const B: usize, L: Lane>(
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
    streaming: bool,
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract; no pointer is read or written here but through the callees' contracts.
    unsafe {
        let n = (out.len() / B).min(kernels::CHUNK).min(64 * flags.len());
        let blocks = n / 64 * 64;
        let steps = |start: usize, highs: Escapes<'_>, flags: &[u64], out: &mut [u8]| {
            groups_chunk_steps::<B, L, Avx2>(
                isa, fields, frame, low, residual, start, params, flags, highs, out,
            )
        };
        let words = one_pass_words(frame, low, residual, start, blocks, &highs, &hash, 64);
        let Some(words) = words else {
            return steps(start, highs, flags, out);
        };
        let inverse = GroupsBytes::new(params.base.into(), params.width.into(), fields.e);
        let source = GroupsCodes64 {
            flags: &flags[..blocks / 64],
            low: _mm_cvtsi32_si128(params.low.into()),
            half: _mm512_set1_epi8(inverse.half as i8),
            base_half: _mm512_set1_epi8(inverse.base_half as i8),
            exponent_mask: _mm512_set1_epi8(inverse.mask as i8),
            queue: highs.values.as_ptr(),
            count: highs.count,
        };
        let lens = (low.len, residual.len);
        let k = one_pass512::<B, _>(
            fields, frame, words, lens, blocks, out, hash, streaming, source,
        )?;
        let rest = |rest, out: &mut [u8]| steps(start + blocks, rest, &flags[blocks / 64..], out);
        rest_steps(k, highs, &mut out[B * blocks..B * n], rest)
    }
}

/// The fields of the next 32 values of every sub-plane in `cursors`, in 16-bit lanes (only
/// the `lanes` are read, the others are zero), without a branch: a step that reaches the
/// end of a row takes its last lanes from the next row's first words, one field higher.
/// Every cursor moves on by 32 values.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). For every cursor, words `0..W` lie in the buffer at `fp + offset`,
/// and the next
/// 32 values' rows exist for the set bits of `lanes`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn fields32_rows(
    fp: *const u8,
    cursors: &mut [RowCursor],
    lanes: u32,
) -> __m512i {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}

/// The fields of the next 64 values of every sub-plane in `cursors` when none reaches the
/// end of its row: [`fields32`] of both halves; every cursor moves on by 64.
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). Every cursor has at least 64 values left in its row.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[inline]
pub(super) unsafe fn fields64_in_row<const N: usize>(
    fp: *const u8,
    cursors: &mut [RowCursor; N],
) -> (__m512i, __m512i) {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract; no pointer is read or written here but through the callees' contracts.
    unsafe {
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
}

/// [`residual_words`]'s sub-planes as [`SubShifts`].
#[inline]
pub(super) fn shifts_of(words: &PlaneWords) -> [SubShifts; 5] {
    words.map(|(offset, take, place, mask)| sub_shifts(offset, take, place, mask))
}

/// [`level_chunk512`]'s blocks of 64 entries through the [`RowCursor`]s of a plane's `N`
/// sub-planes, kept in registers: a block inside every row reads whole words, one that
/// reaches a row's end (or the last, short block) takes [`fields32_rows`]. Compared with
/// stretches of one run of words each (the loop below it in `level_chunk512`), this saves
/// the mispredicted exits and the short last block of each stretch: deeper-level planes
/// have short rows (a stretch every 160-180 entries on MiniLM).
///
/// # Safety
///
/// The CPU has AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT and POPCNT (the `Avx2` token
/// with AVX-512 on proves it). The cursors' words lie in the buffer at `fp` ([`row_cursors`]); `n`
/// bytes
/// writable at `out`; 64 bytes readable past each of the `deeper.count` queued exponents.
#[target_feature(
    enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,avx2,bmi1,bmi2,lzcnt,popcnt"
)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn level_rows512<const N: usize>(
    fp: *const u8,
    mut cursors: [RowCursor; N],
    n: usize,
    lut: __m512i,
    escapes: __m512i,
    deeper: Escapes<'_>,
    out: *mut u8,
) -> Option<usize> {
    // SAFETY: the caller runs on a CPU with AVX-512 F/BW/VL/VBMI/VBMI2 besides AVX2, BMI1/2, LZCNT
    // and POPCNT (the `Avx2` token with AVX-512 on proves it) and keeps this fn's `# Safety`
    // contract, which keeps the pointer reads and writes below in bounds (the notes at each step
    // say how).
    unsafe {
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
}
