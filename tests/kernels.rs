//! Unit tests of the block kernels (`enec::internals::kernels`) against FORMAT.md, with expected
//! values computed independently in the test (from the format text, brute force or a sort).

mod common;
use common::Rng;
use enec::internals::format::{
    frame_bytes, ranked_frame_bytes, FrameLayout, FrameParams, RankedParams,
};
use enec::internals::kernels::{
    choose_ranked, escape_masks, expand, groups_forward, groups_inverse, groups_unflagged,
    groups_width, lookup, pack_halving, pack_plane, unpack_range, Fields, Plane, PlaneReader,
    PlaneWriter, RankedCost, Ranking, GROUPS_BASES, MAX_LEVELS, MAX_SYMBOLS,
};
use enec::Dtype;

fn mask(w: u32) -> u32 {
    if w == 0 {
        0
    } else {
        u32::MAX >> (32 - w)
    }
}

fn word_at(bytes: &[u8], offset: usize, j: usize) -> u16 {
    u16::from_le_bytes([bytes[offset + 2 * j], bytes[offset + 2 * j + 1]])
}

/// Writes `values` into a fresh zeroed buffer holding `plane` (at offset 0) with `PlaneWriter`.
fn write_plane(plane: Plane, values: &[u32]) -> Vec<u8> {
    let mut buf = vec![0u8; plane.end()];
    let mut writer = PlaneWriter::new(plane);
    for &v in values {
        writer.push(&mut buf, v);
    }
    buf
}

// ---------------------------------------------------------------------------------------------
// FORMAT.md 4.5: hierarchical halving
// ---------------------------------------------------------------------------------------------

/// The words FORMAT.md 4.5 defines: field `i` in word `i mod W` at bit `(i div W) * p`.
fn layout_words(fields: &[u32], p: u32, words: usize) -> Vec<u16> {
    let mut out = vec![0u16; words];
    for (i, &f) in fields.iter().enumerate() {
        let bit = (i / words) as u32 * p;
        assert!(bit + p <= 16);
        out[i % words] |= (f << bit) as u16;
    }
    out
}

#[test]
fn pack_halving_has_the_format_layout() {
    let mut rng = Rng(1);
    for p in [1u32, 2, 4, 8, 16] {
        for w in [1usize, 2, 3, 4, 5, 7, 8, 16, 31, 33, 64, 100, 257] {
            let lanes_len = 16 / p as usize * w;
            // Full planes and planes whose last fields are absent (zero lanes).
            for count in [
                lanes_len,
                lanes_len - (lanes_len / 3).min(16 / p as usize - 1),
            ] {
                let fields: Vec<u32> = (0..lanes_len)
                    .map(|i| if i < count { rng.bits(p) } else { 0 })
                    .collect();
                let mut lanes: Vec<u16> = fields.iter().map(|&f| f as u16).collect();
                let words = pack_halving(&mut lanes, p);
                assert_eq!(words, w, "p={p} W={w}");
                let expected = layout_words(&fields, p, w);
                assert_eq!(&lanes[..w], &expected[..], "p={p} W={w} count={count}");
                // Reading the layout back gives every field.
                for (i, &f) in fields.iter().enumerate() {
                    let got = (u32::from(lanes[i % w]) >> ((i / w) as u32 * p)) & mask(p);
                    assert_eq!(got, f, "p={p} W={w} field {i}");
                }
            }
        }
    }
}

#[test]
fn pack_halving_agrees_with_plane_writer() {
    let mut rng = Rng(2);
    for p in [1u32, 2, 4, 8, 16] {
        for count in (1..=70).chain([127, 128, 129, 1000, 1024, 4096, 16_384, 65_536]) {
            let values: Vec<u32> = (0..count).map(|_| rng.bits(p)).collect();
            let plane = Plane::at(0, p, count);
            let w = (count * p as usize).div_ceil(16);
            assert_eq!(plane.len, 1);
            assert_eq!(plane.subs[0].words, w);
            assert_eq!(plane.end(), (2 * w).div_ceil(32) * 32);
            let buf = write_plane(plane, &values);

            let mut lanes = vec![0u16; 16 / p as usize * w];
            for (l, &v) in lanes.iter_mut().zip(&values) {
                *l = v as u16;
            }
            assert_eq!(pack_halving(&mut lanes, p), w);
            for (j, &lane) in lanes[..w].iter().enumerate() {
                assert_eq!(word_at(&buf, 0, j), lane, "p={p} count={count} word {j}");
            }
            // Padding after the last word is zero.
            assert!(buf[2 * w..].iter().all(|&b| b == 0), "p={p} count={count}");
        }
    }
}

/// A plane of width `w` is one sub-plane per set bit of `w`, ascending, each the halving layout of
/// bit field `[o, o + p)` of the values, each at a multiple of 32 bytes (FORMAT.md 4.5).
#[test]
fn plane_sub_planes_follow_the_format() {
    let mut rng = Rng(3);
    for width in 0u32..=24 {
        for count in [0usize, 1, 2, 15, 16, 17, 100, 1023, 1024, 1025, 5000] {
            let offset = 32 * rng.below(4) as usize;
            let plane = Plane::at(offset, width, count);
            assert_eq!(plane.count, count);
            assert_eq!(plane.width, width);
            let powers: Vec<u32> = [1u32, 2, 4, 8, 16]
                .into_iter()
                .filter(|p| width & p != 0)
                .collect();
            assert_eq!(plane.len, powers.len(), "width {width}");
            let mut at = offset;
            for (sub, &p) in plane.subs[..plane.len].iter().zip(&powers) {
                let words = (count * p as usize).div_ceil(16);
                assert_eq!(sub.bits, p);
                assert_eq!(sub.shift, width & (p - 1));
                assert_eq!(sub.offset, at);
                assert_eq!(sub.offset % 32, 0);
                assert_eq!(sub.words, words);
                at += (2 * words).div_ceil(32) * 32;
            }
            assert_eq!(plane.end(), at);
            assert_eq!(Plane::bytes(width, count), at - offset);

            if count == 0 {
                continue;
            }
            let values: Vec<u32> = (0..count).map(|_| rng.bits(width)).collect();
            let mut buf = vec![0u8; plane.end()];
            let mut writer = PlaneWriter::new(plane);
            for &v in &values {
                writer.push(&mut buf, v);
            }
            for sub in &plane.subs[..plane.len] {
                let fields: Vec<u32> = values
                    .iter()
                    .map(|&v| (v >> sub.shift) & mask(sub.bits))
                    .collect();
                let expected = layout_words(&fields, sub.bits, sub.words);
                for (j, &e) in expected.iter().enumerate() {
                    assert_eq!(
                        word_at(&buf, sub.offset, j),
                        e,
                        "width {width} p {}",
                        sub.bits
                    );
                }
            }
            // Nothing outside the sub-planes' words is written.
            let mut used = vec![false; buf.len()];
            for sub in &plane.subs[..plane.len] {
                used[sub.offset..sub.offset + 2 * sub.words].fill(true);
            }
            assert!(buf.iter().zip(&used).all(|(&b, &u)| u || b == 0));
        }
    }
}

#[test]
fn unpack_range_reads_back_what_plane_writer_wrote() {
    let mut rng = Rng(4);
    for width in 0u32..=24 {
        for count in [
            1usize, 2, 3, 15, 16, 17, 31, 33, 255, 256, 257, 1000, 4096, 5003,
        ] {
            let values: Vec<u32> = (0..count).map(|_| rng.bits(width)).collect();
            let plane = Plane::at(0, width, count);
            let buf = write_plane(plane, &values);
            let mut ranges = vec![(0, count), (0, 1), (count - 1, 1), (0, 0), (count, 0)];
            for _ in 0..40 {
                let start = rng.below(count as u64 + 1) as usize;
                let len = rng.below((count - start) as u64 + 1) as usize;
                ranges.push((start, len));
            }
            for (start, len) in ranges {
                let mut out = vec![0xDEAD_BEEF_u32; len];
                unpack_range(&buf, &plane, start, &mut out);
                assert_eq!(
                    out,
                    &values[start..start + len],
                    "width {width} count {count} range {start}+{len}"
                );
            }
            // The sequential reader agrees and notices reading past the end.
            let mut reader = PlaneReader::new(plane);
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(reader.next(&buf), v, "width {width} value {i}");
            }
            assert_eq!(reader.consumed(), count);
            assert!(!reader.overran());
            assert_eq!(reader.next(&buf), 0);
            assert!(reader.overran());
        }
    }
}

/// The empty range of an empty plane is inside the plane, so it must read nothing and not panic.
#[test]
fn unpack_range_of_an_empty_plane() {
    for width in 1u32..=24 {
        let plane = Plane::at(0, width, 0);
        let mut out = [0u32; 0];
        unpack_range(&[], &plane, 0, &mut out);
    }
}

/// Narrow lanes (u8, u16) read the same values as u32 lanes when the width fits.
#[test]
fn unpack_range_into_narrow_lanes() {
    let mut rng = Rng(8);
    for width in 0u32..=16 {
        for count in [1usize, 17, 300, 4099] {
            let values: Vec<u32> = (0..count).map(|_| rng.bits(width)).collect();
            let plane = Plane::at(0, width, count);
            let buf = write_plane(plane, &values);
            for _ in 0..10 {
                let start = rng.below(count as u64) as usize;
                let len = rng.below((count - start) as u64 + 1) as usize;
                let want = &values[start..start + len];
                let mut wide = vec![7u16; len];
                unpack_range(&buf, &plane, start, &mut wide);
                assert!(wide.iter().zip(want).all(|(&a, &b)| u32::from(a) == b));
                if width <= 8 {
                    let mut narrow = vec![7u8; len];
                    unpack_range(&buf, &plane, start, &mut narrow);
                    assert!(narrow.iter().zip(want).all(|(&a, &b)| u32::from(a) == b));
                }
            }
        }
    }
}

/// The gather-form packer writes the same words as the sequential writer, for every width.
#[test]
fn pack_plane_agrees_with_plane_writer() {
    let mut rng = Rng(9);
    for width in 0u32..=24 {
        for count in [
            0usize, 1, 2, 15, 16, 17, 63, 64, 65, 1000, 1024, 4097, 65_536,
        ] {
            let values: Vec<u32> = (0..count).map(|_| rng.bits(width)).collect();
            let offset = 32 * rng.below(3) as usize;
            let plane = Plane::at(offset, width, count);
            let mut want = vec![0u8; plane.end()];
            let mut writer = PlaneWriter::new(plane);
            for &v in &values {
                writer.push(&mut want, v);
            }
            // Into zeroes: identical bytes.
            let mut got = vec![0u8; plane.end()];
            pack_plane(&mut got, &plane, |i| values[i]);
            assert!(got == want, "width {width} count {count}");
            // Over garbage: every word of every sub-plane is overwritten.
            let mut dirty = vec![0xA5u8; plane.end()];
            pack_plane(&mut dirty, &plane, |i| values[i]);
            for sub in &plane.subs[..plane.len] {
                let words = sub.offset..sub.offset + 2 * sub.words;
                assert!(
                    dirty[words.clone()] == want[words],
                    "width {width} count {count}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Escape masks and their expansion (the prefix count of FORMAT.md 4.3)
// ---------------------------------------------------------------------------------------------

#[test]
fn escape_masks_and_expand_follow_the_prefix_count() {
    let mut rng = Rng(10);
    for case in 0..400u64 {
        let len = rng.below(700) as usize;
        let escape = [1u8, 3, 7, 15, 255][case as usize % 5];
        let density = 1 + rng.below(8);
        let codes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(density) == 0 {
                    escape
                } else {
                    rng.below(u64::from(escape)) as u8
                }
            })
            .collect();
        let mut masks = vec![u64::MAX; len.div_ceil(64) + 1];
        let total = escape_masks(&codes, escape, &mut masks);
        let escaped: Vec<usize> = (0..len).filter(|&q| codes[q] == escape).collect();
        assert_eq!(total, escaped.len(), "case {case}");
        for q in 0..64 * masks.len() {
            let bit = masks[q / 64] >> (q % 64) & 1 == 1;
            assert_eq!(bit, q < len && codes[q] == escape, "case {case} bit {q}");
        }
        // Element q, escaped, takes entry (number of escaped elements before q).
        let values: Vec<u32> = (0..total as u32).map(|k| 1000 + k).collect();
        let mut out = vec![0u32; 64 * masks.len()];
        assert_eq!(expand(&masks, &values, &mut out), total);
        for q in 0..len {
            let want = if codes[q] == escape {
                1000 + codes[..q].iter().filter(|&&c| c == escape).count() as u32
            } else {
                0
            };
            assert_eq!(out[q], want, "case {case} element {q}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FORMAT.md 7.3: groups statistics
// ---------------------------------------------------------------------------------------------

#[test]
fn groups_width_is_the_smallest_window_holding_the_range() {
    for e in [5u32, 8] {
        for b in 0..(1u32 << e) {
            for lo in 0..(1u32 << e) {
                for hi in lo..(1u32 << e) {
                    let (bi, l, h) = (i64::from(b), i64::from(lo), i64::from(hi));
                    let want = (1..=e)
                        .find(|&n| {
                            let half = 1i64 << (n - 1);
                            n == e || (bi - half < l && h <= bi + half)
                        })
                        .unwrap();
                    assert_eq!(groups_width(b, lo, hi, e), want, "e={e} b={b} [{lo},{hi}]");
                }
            }
        }
    }
}

#[test]
fn groups_unflagged_counts_groups_inside_the_low_window() {
    let mut rng = Rng(11);
    for case in 0..300u64 {
        let dtype = Dtype::ALL[case as usize % 3];
        let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
        let elements = 1 + rng.below(3000) as usize;
        let centre = rng.below(1 << e) as i64;
        let spread = 1 + rng.below(20) as i64;
        // Some cases with outliers anywhere (zeros have exponent 0), far below the window.
        let outliers = case % 4 == 1;
        let exps: Vec<u32> = (0..elements)
            .map(|_| {
                if outliers && rng.below(16) == 0 {
                    return rng.below(1 << e) as u32;
                }
                let d = rng.below(spread as u64) as i64 - spread / 2;
                (centre + d).clamp(0, (1 << e) - 1) as u32
            })
            .collect();
        let words: Vec<u32> = exps
            .iter()
            .map(|&x| (x << m) | (rng.next() as u32 & (mask(m) | (1 << (e + m)))))
            .collect();
        let eb = dtype.element_bytes();
        let bytes: Vec<u8> = words
            .iter()
            .flat_map(|u| u.to_le_bytes().into_iter().take(eb))
            .collect();
        // Candidates may run past the largest exponent value.
        let first = rng.below(1 << e) as u32;
        let candidates = 1 + rng.below(GROUPS_BASES as u64) as usize;
        let fields = Fields::new(dtype, 0);
        let got = if eb == 2 {
            groups_unflagged::<2>(&bytes, elements, &fields, first, candidates)
        } else {
            groups_unflagged::<4>(&bytes, elements, &fields, first, candidates)
        };
        let groups = elements.div_ceil(16);
        for (c, row) in got.iter().enumerate().take(candidates) {
            let b = i64::from(first) + c as i64;
            for (low, &count) in row.iter().enumerate() {
                let want = (0..groups)
                    .filter(|&t| {
                        (t..elements).step_by(groups).all(|i| {
                            let x = i64::from(exps[i]);
                            x <= b && x > b - (1i64 << low)
                        })
                    })
                    .count();
                assert_eq!(count as usize, want, "case {case} b={b} m={low}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FORMAT.md 2: element fields
// ---------------------------------------------------------------------------------------------

/// Checks split against FORMAT.md 2 and merge as its inverse, for every `k` that `u` allows.
fn check_fields(dtype: Dtype, u: u32) {
    let (e, m) = (dtype.exponent_bits(), dtype.mantissa_bits());
    let s = u >> (e + m);
    let x = (u >> m) & mask(e);
    let f = u & mask(m);
    let max_k = if f == 0 { m } else { f.trailing_zeros().min(m) };
    for k in 0..=max_k {
        let fields = Fields::new(dtype, k);
        assert_eq!(fields.residual_bits(), 1 + m - k);
        let r = (s << (m - k)) | (f >> k);
        assert_eq!(fields.split(u), (x, r), "{dtype:?} u={u:#x} k={k}");
        assert!(r <= mask(1 + m - k));
        assert_eq!(fields.merge(x, r), u, "{dtype:?} u={u:#x} k={k}");
    }
}

#[test]
fn fields_split_merge_exhaustive_16_bit() {
    for dtype in [Dtype::Bf16, Dtype::Fp16] {
        for u in 0..=u16::MAX {
            check_fields(dtype, u32::from(u));
        }
    }
}

#[test]
fn fields_split_merge_random_fp32() {
    let mut rng = Rng(5);
    for specials in [
        0u32,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0001,
        0x0000_0001,
    ] {
        check_fields(Dtype::Fp32, specials);
    }
    for _ in 0..200_000 {
        let u = rng.next() as u32;
        // Clear a random number of low bits so that every k gets exercised.
        let clear = rng.below(25) as u32;
        check_fields(Dtype::Fp32, u & !mask(clear));
    }
}

// ---------------------------------------------------------------------------------------------
// FORMAT.md 4.2 / 7.3: the groups transform
// ---------------------------------------------------------------------------------------------

#[test]
fn groups_transform_inverts_exactly_on_its_window() {
    for e in [5u32, 8] {
        let alphabet = 1i64 << e;
        for b in 0..(1u32 << e) {
            for n in 1..=e {
                let half = 1i64 << (n - 1);
                let (lo, hi) = (i64::from(b) - half + 1, i64::from(b) + half);
                let mut inside = 0;
                for x in 0..(1u32 << e) {
                    let y = groups_forward(x, b, n);
                    assert!(y < (1 << n), "e={e} b={b} n={n} x={x}");
                    // x is in the window modulo 2^E (n = E covers every value).
                    let in_window = (-1..=1)
                        .map(|j| i64::from(x) + j * alphabet)
                        .any(|v| lo <= v && v <= hi);
                    let back = groups_inverse(y, b, n, e);
                    if in_window {
                        inside += 1;
                        assert_eq!(back, x, "e={e} b={b} n={n} x={x}");
                    } else {
                        assert_ne!(back, x, "e={e} b={b} n={n} x={x} outside the window");
                    }
                    assert!(back < (1 << e));
                }
                assert_eq!(inside, 1 << n, "e={e} b={b} n={n}: window holds 2^n values");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FORMAT.md 7.2: ranking and the ranked parameter search
// ---------------------------------------------------------------------------------------------

fn random_histogram(rng: &mut Rng, alphabet: usize, shape: u64) -> [u32; MAX_SYMBOLS] {
    let mut h = [0u32; MAX_SYMBOLS];
    match shape {
        // Many ties: small counts.
        0 => h[..alphabet]
            .iter_mut()
            .for_each(|c| *c = rng.below(4) as u32),
        // Geometric around a random centre (weight-like).
        1 => {
            let centre = rng.below(alphabet as u64) as i64;
            let total = 1 + rng.below(65_536) as u32;
            for (x, c) in h[..alphabet].iter_mut().enumerate() {
                let d = (x as i64 - centre).unsigned_abs().min(31) as u32;
                *c = (total >> d) / (1 + rng.below(2) as u32);
            }
        }
        // One symbol only.
        2 => h[rng.below(alphabet as u64) as usize] = 1 + rng.below(65_536) as u32,
        // Sparse, random counts.
        3 => {
            for _ in 0..rng.below(40) {
                h[rng.below(alphabet as u64) as usize] += rng.below(2000) as u32;
            }
        }
        // Uniform counts.
        _ => h[..alphabet]
            .iter_mut()
            .for_each(|c| *c = 1 + rng.below(300) as u32),
    }
    h
}

/// The ranking by an ordinary sort: count descending, value ascending on ties.
fn reference_order(h: &[u32; MAX_SYMBOLS], alphabet: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..alphabet).collect();
    order.sort_by_key(|&x| (std::cmp::Reverse(h[x]), x));
    order
}

#[test]
fn ranking_orders_by_count_then_value() {
    let mut rng = Rng(6);
    for case in 0..2000u64 {
        let alphabet = if case % 2 == 0 { 32 } else { 256 };
        let h = random_histogram(&mut rng, alphabet, case % 5);
        let ranking = Ranking::new(&h, alphabet);
        let order = reference_order(&h, alphabet);
        let got: Vec<usize> = ranking.order[..alphabet]
            .iter()
            .map(|&x| x as usize)
            .collect();
        assert_eq!(got, order, "case {case}");
        let mut covered = 0u32;
        assert_eq!(ranking.covered[0], 0);
        for (r, &x) in order.iter().enumerate() {
            assert_eq!(ranking.rank(x as u8), r, "case {case}");
            covered += h[x];
            assert_eq!(ranking.covered[r + 1], covered, "case {case}");
        }
        assert!(ranking.covered[alphabet..].iter().all(|&c| c == covered));
    }
}

type Choice = (u8, [u8; MAX_LEVELS], [u32; MAX_LEVELS], usize);

/// FORMAT.md 4.4's bytes: padded planes and table.
struct FrameBytes;
impl RankedCost for FrameBytes {
    fn plane(&self, width: u32, count: usize) -> usize {
        Plane::bytes(width, count)
    }
    fn table(&self, symbols: usize) -> usize {
        symbols.div_ceil(32) * 32
    }
    fn plane_at_least(&self, width: u32, count: usize) -> usize {
        let bound = Plane::bytes_at_least(width, count);
        assert!(
            bound <= Plane::bytes(width, count),
            "width {width} count {count}"
        );
        bound
    }
}

/// Unpadded bits, which have far fewer ties.
struct Bits;
impl RankedCost for Bits {
    fn plane(&self, width: u32, count: usize) -> usize {
        width as usize * count
    }
    fn table(&self, symbols: usize) -> usize {
        8 * symbols
    }
    fn plane_at_least(&self, width: u32, count: usize) -> usize {
        width as usize * count
    }
}

/// Brute force of FORMAT.md 7.2: every L and width tuple, in lexicographic order, counts from a
/// sorted histogram, each tuple's cost summed from scratch; the first strict minimum wins.
fn brute_force_ranked(h: &[u32; MAX_SYMBOLS], e: u32, cost: &dyn RankedCost) -> Choice {
    let alphabet = 1usize << e;
    let elements: usize = h.iter().map(|&c| c as usize).sum();
    let sorted: Vec<u32> = reference_order(h, alphabet).iter().map(|&x| h[x]).collect();
    let at_or_above = |s: usize| -> u32 { sorted[s.min(alphabet)..].iter().sum() };
    let mut tuples: Vec<Vec<u8>> = Vec::new();
    for m1 in 1..=e as u8 {
        tuples.push(vec![m1]);
    }
    for m1 in 1..=e as u8 {
        for m2 in 1..=e as u8 {
            tuples.push(vec![m1, m2]);
        }
    }
    for m1 in 1..=e as u8 {
        for m2 in 1..=e as u8 {
            for m3 in 1..=e as u8 {
                tuples.push(vec![m1, m2, m3]);
            }
        }
    }
    let mut best: Option<Choice> = None;
    for t in tuples {
        let mut widths = [0u8; MAX_LEVELS];
        let mut counts = [0u32; MAX_LEVELS];
        let mut s = 0usize;
        let mut bytes = 0;
        let mut reaching = elements;
        for (j, &m) in t.iter().enumerate() {
            widths[j] = m;
            s += (1usize << m) - 1;
            counts[j] = at_or_above(s);
            bytes += cost.plane(m.into(), reaching);
            reaching = counts[j] as usize;
        }
        if s > alphabet {
            continue;
        }
        bytes += cost.table(s) + cost.plane(e, reaching);
        if best.is_none_or(|b| bytes < b.3) {
            best = Some((t.len() as u8, widths, counts, bytes));
        }
    }
    best.expect("L = 1, m1 = 1 is always allowed")
}

#[test]
fn choose_ranked_finds_the_true_minimum() {
    let mut rng = Rng(7);
    for case in 0..300u64 {
        for dtype in Dtype::ALL {
            let e = dtype.exponent_bits();
            let h = random_histogram(&mut rng, 1 << e, case % 5);
            let elements: usize = h.iter().map(|&c| c as usize).sum();
            if elements == 0 || elements > 65_536 {
                continue;
            }
            let ranking = Ranking::new(&h, 1 << e);
            let costs: [&dyn RankedCost; 2] = [&FrameBytes, &Bits];
            for (which, cost) in costs.into_iter().enumerate() {
                let got = match which {
                    0 => choose_ranked(&ranking, elements, e, &FrameBytes),
                    _ => choose_ranked(&ranking, elements, e, &Bits),
                };
                let want = brute_force_ranked(&h, e, cost);
                assert_eq!(got, want, "case {case} {dtype:?} cost {which}");
            }
            // The frame bytes are the layout's (FORMAT.md 4.4): header and residual plus these.
            let (levels, widths, counts, bytes) = choose_ranked(&ranking, elements, e, &FrameBytes);
            let k = rng.below(u64::from(dtype.mantissa_bits()) + 1) as u8;
            let params = FrameParams::Ranked(RankedParams {
                levels,
                widths,
                counts,
            });
            let residual = 1 + dtype.mantissa_bits() - u32::from(k);
            assert_eq!(
                FrameLayout::new(dtype, elements, k, &params).bytes,
                32 + Plane::bytes(residual, elements) + bytes,
                "case {case} {dtype:?}"
            );
        }
    }
}

/// `lookup` maps each code through the table, for small tables (the compare-and-select path,
/// up to 16 symbols) and large ones (the gather path), whatever the output held before.
#[test]
fn lookup_maps_codes_through_the_table() {
    let mut rng = Rng(42);
    for symbols in [1usize, 3, 7, 15, 16, 17, 31, 255, 256] {
        let mut table = [0u8; MAX_SYMBOLS];
        for t in &mut table[..symbols] {
            *t = rng.below(256) as u8;
        }
        for len in [0usize, 1, 63, 64, 65, 256] {
            let codes: Vec<u8> = (0..len).map(|_| rng.below(symbols as u64) as u8).collect();
            let mut out = vec![0xA5u8; len];
            lookup(&codes, &table, symbols, &mut out);
            let expected: Vec<u8> = codes.iter().map(|&c| table[usize::from(c)]).collect();
            assert_eq!(out, expected, "{symbols} symbols, {len} codes");
        }
    }
}

/// The encoder's shortcut for ranked frame sizes agrees with the layout's `frame_bytes` for every
/// dtype, dead-bit count, level count, width tuple and escape counts.
#[test]
fn ranked_frame_bytes_equals_frame_bytes() {
    let mut rng = Rng(23);
    for case in 0..20_000u64 {
        let dtype = Dtype::ALL[case as usize % 3];
        let e = dtype.exponent_bits();
        let elements = 1 + rng.below(65_536) as usize;
        let dead_bits = rng.below(u64::from(dtype.mantissa_bits()) + 1) as u8;
        let levels = 1 + rng.below(MAX_LEVELS as u64) as u8;
        let mut widths = [0u8; MAX_LEVELS];
        let mut counts = [0u32; MAX_LEVELS];
        let mut count = elements as u64;
        for j in 0..usize::from(levels) {
            widths[j] = 1 + rng.below(u64::from(e)) as u8;
            count = rng.below(count + 1);
            counts[j] = count as u32;
        }
        let params = FrameParams::Ranked(RankedParams {
            levels,
            widths,
            counts,
        });
        assert_eq!(
            ranked_frame_bytes(dtype, elements, dead_bits, levels, widths, counts),
            frame_bytes(dtype, elements, dead_bits, &params),
            "{dtype:?} {elements} k={dead_bits} {params:?}"
        );
    }
}
