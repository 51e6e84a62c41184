//! Every SIMD kernel (AVX2 and AVX-512 on x86_64, NEON on aarch64) against its portable twin, on
//! random data, across lengths and plane geometries that exercise the vector steps, their padded
//! tails and the scalar fallbacks.
use super::*;
use crate::checksum;
use crate::format::{Dtype, GroupsParams};
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

/// This architecture's SIMD token.
#[cfg(target_arch = "x86_64")]
type Simd = Avx2;
#[cfg(target_arch = "aarch64")]
type Simd = Neon;

/// `detected`, or on x86_64 the same CPU's token with the AVX-512 step off (tests run both
/// paths). NEON has one path.
fn with_avx512(detected: Simd, on: bool) -> Simd {
    #[cfg(target_arch = "x86_64")]
    if !on {
        return detected.without_avx512();
    }
    let _ = on;
    detected
}

/// Every path of the detected token: on x86_64 with and without the AVX-512 step.
fn variants(detected: Simd) -> [Simd; 2] {
    [with_avx512(detected, true), with_avx512(detected, false)]
}

/// The SIMD token. On aarch64 there is always one (NEON is part of the architecture): a
/// missing one fails the tests rather than passing them without comparing anything.
fn simd() -> Option<Simd> {
    let isa = Simd::detect();
    if cfg!(target_arch = "aarch64") {
        assert!(isa.is_some(), "aarch64 without NEON");
    }
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
    let Some(detected) = simd() else { return };
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
                let v: std::vec::Vec<u8> = values[at..at + n].iter().map(|&v| v as u8).collect();
                isa.pack(&mut packed, &plane, at, &v);
                Portable.pack(&mut portable, &plane, at, &v);
            } else if width <= 16 {
                let v: std::vec::Vec<u16> = values[at..at + n].iter().map(|&v| v as u16).collect();
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
    let Some(detected) = simd() else { return };
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
        let values: std::vec::Vec<u8> = (0..na + rng.below(40)).map(|_| rng.next() as u8).collect();
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
    let Some(isa) = simd() else { return };
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
    let Some(detected) = simd() else { return };
    let mut rng = Rng(17);
    for case in 0..cases(300) {
        let isa = with_avx512(detected, (case / Dtype::ALL.len()).is_multiple_of(2));
        let dtype = Dtype::ALL[case % Dtype::ALL.len()];
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
        let (mut r8, mut r16, mut r32) = ([0u8; CHUNK], [0u16; CHUNK], [0u32; CHUNK]);
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
            if b == 1 {
                let r = &mut r8[..n];
                isa.split_pack::<1, u8>(&fields, run, xa, r, fa, &plane, at);
                Portable.split_pack::<1, u8>(&fields, run, xb, r, fb, &plane, at);
            } else if b == 2 {
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
fn pack_residuals_agrees() {
    let Some(detected) = simd() else { return };
    let mut rng = Rng(23);
    for case in 0..cases(300) {
        let isa = with_avx512(detected, (case / Dtype::ALL.len()).is_multiple_of(2));
        let dtype = Dtype::ALL[case % Dtype::ALL.len()];
        let b = dtype.element_bytes();
        let dead = rng.below(Fields::new(dtype, 0).m as usize + 1) as u32;
        let fields = Fields::new(dtype, dead);
        // Short planes (one partial block of words), default frames, and others (the last
        // field of a word missing for the last words).
        let count = match case % 4 {
            0 => 1 + rng.below(100),
            1 => 16 * CHUNK,
            2 => 16 * CHUNK - rng.below(CHUNK),
            _ => 1 + rng.below(5 * CHUNK),
        };
        let input: std::vec::Vec<u8> = (0..count * b)
            .map(|_| rng.next() as u8 & if b == 1 { !((1u8 << dead) - 1) } else { 0xFF })
            .collect();
        let plane = Plane::at(64, fields.residual_bits(), count);
        // Garbage in the words and around them: every word is written whole, nothing else.
        let mut frames = [0u8, 1].map(|_| std::vec![0xA5u8; plane.end() + 64]);
        let what = format!("{dtype:?} dead {dead} count {count}");
        let [fa, fb] = &mut frames;
        // A frame too short for the plane: nothing packed, nothing written.
        let short = plane.subs().last().map_or(0, |sub| sub.offset + 1);
        let pack = |frame: &mut [u8]| match b {
            1 => isa.pack_residuals::<1>(&fields, &input, frame, &plane),
            2 => isa.pack_residuals::<2>(&fields, &input, frame, &plane),
            _ => isa.pack_residuals::<4>(&fields, &input, frame, &plane),
        };
        assert!(!pack(&mut fa[..short]), "{what}");
        if !pack(fa) {
            // Only 1-byte elements with AVX-512 have the kernel.
            #[cfg(target_arch = "x86_64")]
            assert!(b != 1 || !isa.avx512(), "{what}");
            assert!(fa == fb, "{what}");
            continue;
        }
        assert_eq!(b, 1, "{what}");
        let (mut xa, mut xb, mut r) = ([0u8; CHUNK], [1u8; CHUNK], [0u8; CHUNK]);
        for start in (0..count).step_by(CHUNK) {
            let n = CHUNK.min(count - start);
            let run = &input[start..start + n];
            isa.exponents::<1>(&fields, run, &mut xa[..n]);
            Portable.split_pack::<1, u8>(
                &fields,
                run,
                &mut xb[..n],
                &mut r[..n],
                fb,
                &plane,
                start,
            );
            assert!(xa[..n] == xb[..n], "exponents at {start}: {what}");
        }
        assert!(fa == fb, "residual plane: {what}");
    }
}

#[test]
fn exponent_stats_agree() {
    let Some(detected) = simd() else { return };
    let mut rng = Rng(11);
    for case in 0..cases(300) {
        // Half the cases without the AVX-512 step (where the CPU has it), in every dtype and
        // with either mantissa pattern.
        let isa = with_avx512(detected, (case / Dtype::ALL.len()).is_multiple_of(2));
        let dtype = Dtype::ALL[case % Dtype::ALL.len()];
        let b = dtype.element_bytes();
        // The vector kernels' steps: 64 elements, or an h32 block of 1-byte ones.
        let step = 64.max(128 / b);
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
                let vector = (CHUNK..elements / step * step).contains(&i);
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
                    (true, 1) => isa.exponent_stats::<1>(&fields, i, xs, st, h),
                    (true, 2) => isa.exponent_stats::<2>(&fields, i, xs, st, h),
                    (true, _) => isa.exponent_stats::<4>(&fields, i, xs, st, h),
                    (false, 1) => Portable.exponent_stats::<1>(&fields, i, xs, st, h),
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
    let Some(detected) = simd() else { return };
    let mut rng = Rng(7);
    for case in 0..cases(600) {
        let dtype = Dtype::ALL[case % Dtype::ALL.len()];
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
        let (fields, frame, plane, residual, table) = (&fields, &frame, &plane, &residual, &table);
        // One chunk with `isa`, at the element width of `dtype`.
        macro_rules! chunk {
            ($isa:expr, $out:expr, $hash:expr, $streaming:expr) => {{
                let a = (fields, frame, plane, residual, start, table, escape, deeper);
                match b {
                    1 => $isa.ranked_chunk::<1, u8>(
                        a.0, a.1, a.2, a.3, a.4, a.5, a.6, a.7, $out, $hash, $streaming,
                    ),
                    2 => $isa.ranked_chunk::<2, u16>(
                        a.0, a.1, a.2, a.3, a.4, a.5, a.6, a.7, $out, $hash, $streaming,
                    ),
                    _ => $isa.ranked_chunk::<4, u32>(
                        a.0, a.1, a.2, a.3, a.4, a.5, a.6, a.7, $out, $hash, $streaming,
                    ),
                }
            }};
        }
        let with = |isa: Simd| {
            move |out: &mut [u8], hash: &mut H32| chunk!(isa, out, Some(hash), streaming)
        };
        let portable = |out: &mut [u8], hash: &mut H32| chunk!(Portable, out, Some(hash), false);
        let expected = run(&portable);
        assert_eq!(expected.0.is_some(), queued >= escaped);
        let what = format!("{dtype:?} count {count} start {start} width {width}");
        for isa in variants(detected) {
            let got = run(&with(isa));
            assert_eq!(got.0, expected.0, "taken: {what}");
            if expected.0.is_some() {
                assert_eq!(got, expected, "{what}");
            }
        }
    }
}

#[test]
fn groups_chunk_agrees() {
    let Some(detected) = simd() else { return };
    let mut rng = Rng(11);
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
        let e = fields.e;
        let width = 1 + rng.below(e as usize) as u32;
        let low_width = rng.below(width as usize + 1) as u32;
        let params = GroupsParams {
            base: rng.below(1 << e) as u8,
            width: width as u8,
            low: low_width as u8,
            flagged: 0, // not read by the chunk step
        };
        let residual = Plane::at(64, fields.residual_bits(), count);
        let low = Plane::at(residual.end(), low_width, count);
        let mut frame = std::vec![0u8; low.end() + 64];
        let (mut rw, mut lw) = (PlaneWriter::new(residual), PlaneWriter::new(low));
        for _ in 0..count {
            let r = rng.next() as u32 & ((1 << fields.residual_bits()) - 1);
            rw.push(&mut frame, r);
            lw.push(&mut frame, rng.next() as u32 & ((1 << low_width) - 1));
        }
        let start = if rng.below(4) == 0 {
            rng.below(count)
        } else {
            rng.below(count.div_ceil(CHUNK)) * CHUNK
        };
        let len = CHUNK.min(count - start);
        // Flags (none where the low bits are the whole width, as FORMAT.md 4.2 requires),
        // dense or sparse, only for the chunk's elements.
        let mut flags = [0u64; CHUNK / 64];
        if low_width < width {
            let density = [1, 4, 16, 64][rng.below(4)];
            for (i, f) in flags.iter_mut().enumerate().take(len.div_ceil(64)) {
                for bit in 0..(len - 64 * i).min(64) {
                    if rng.below(64) < density {
                        *f |= 1 << bit;
                    }
                }
            }
        }
        let flagged: usize = flags.iter().map(|f| f.count_ones() as usize).sum();
        // As many high entries as flagged or more, one short in one case in six (every path
        // must refuse); each below 2^(n - m), as unpacked from its plane.
        let queued = if flagged > 0 && rng.below(6) == 0 {
            flagged - 1
        } else {
            flagged + rng.below(40)
        };
        let high_mask = ((1u32 << (width - low_width)) - 1) as u8;
        let values: std::vec::Vec<u8> = (0..queued + 64)
            .map(|_| rng.next() as u8 & high_mask)
            .collect();
        let highs = Escapes {
            values: &values,
            count: queued,
        };
        let hashing = rng.below(4) != 0;
        let streaming = case % 3 == 0;
        let misalign = if rng.below(2) == 0 { 0 } else { 16 };
        // The chunk's output, and its hash (from an empty one, the rest followed as the
        // frame loop does).
        type Chunk<'a> = &'a dyn Fn(&mut [u8], Option<&mut H32>) -> Option<usize>;
        let run = |isa: Chunk| {
            let mut buffer = std::vec![5u8; b * len + 128];
            let at = buffer.as_ptr().align_offset(64) + misalign;
            let out = &mut buffer[at..at + b * len];
            let mut hash = H32::new();
            let taken = isa(out, hashing.then_some(&mut hash));
            hash.follow(out, out.len());
            (taken, out.to_vec(), hash.finish())
        };
        let (fields, frame, low, residual, params) = (&fields, &frame, &low, &residual, &params);
        let flags = &flags[..];
        let with = |isa: Simd| {
            move |out: &mut [u8], hash: Option<&mut H32>| match b {
                2 => isa.groups_chunk::<2, u16>(
                    fields, frame, low, residual, start, params, flags, highs, out, hash, streaming,
                ),
                _ => isa.groups_chunk::<4, u32>(
                    fields, frame, low, residual, start, params, flags, highs, out, hash, streaming,
                ),
            }
        };
        let portable = |out: &mut [u8], hash: Option<&mut H32>| match b {
            2 => Portable.groups_chunk::<2, u16>(
                fields, frame, low, residual, start, params, flags, highs, out, hash, false,
            ),
            _ => Portable.groups_chunk::<4, u32>(
                fields, frame, low, residual, start, params, flags, highs, out, hash, false,
            ),
        };
        let expected = run(&portable);
        assert_eq!(expected.0, (queued >= flagged).then_some(flagged));
        let what = format!("{dtype:?} count {count} start {start} n {width} m {low_width}");
        for isa in variants(detected) {
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
    let Some(detected) = simd() else { return };
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
        let expected =
            run(&|out| Portable.level_chunk(&frame, &plane, start, &table, escape, deeper, out));
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
        for isa in variants(detected) {
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
    let Some(detected) = simd() else { return };
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
