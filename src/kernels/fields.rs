//! Element fields: how an element splits into its exponent and its residual (sign and live
//! mantissa bits), the lanes residuals travel in, and the loads and stores of whole elements.

use crate::format::Dtype;

/// Elements the frame loops process per step; sizes their stack scratch (the decoder's is about
/// `CHUNK * 20` bytes, `examples/stack_usage.rs`). Bare-metal targets (`COMPACT`) step
/// 256 at a time, to keep the decoder's stack small; the bytes are the same at any step.
pub const CHUNK: usize = if super::COMPACT { 256 } else { 1024 };

/// How an element splits into exponent and residual (sign and the live mantissa bits).
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// Exponent bits `E`.
    pub e: u32,
    /// Mantissa bits `M`.
    pub m: u32,
    /// Dead low mantissa bits `k` (not stored).
    pub k: u32,
}

impl Fields {
    /// Fields of `dtype` with `k` dead bits.
    pub fn new(dtype: Dtype, k: u32) -> Fields {
        Fields {
            e: dtype.exponent_bits(),
            m: dtype.mantissa_bits(),
            k,
        }
    }

    /// Width of the residual: sign plus live mantissa bits.
    #[cfg(any(
        test,
        feature = "internals",
        all(feature = "std", target_arch = "aarch64")
    ))]
    #[inline(always)]
    pub fn residual_bits(&self) -> u32 {
        1 + self.m - self.k
    }

    /// Splits an element into (exponent, residual).
    #[inline(always)]
    pub fn split(&self, u: u32) -> (u32, u32) {
        let x = (u >> self.m) & ((1 << self.e) - 1);
        let sign = u >> (self.e + self.m);
        let mant = u & ((1 << self.m) - 1);
        (x, (sign << (self.m - self.k)) | (mant >> self.k))
    }

    /// Joins an exponent and a residual back into an element.
    #[inline(always)]
    pub fn merge(&self, x: u32, r: u32) -> u32 {
        let live = self.m - self.k;
        ((r >> live) << (self.e + self.m)) | (x << self.m) | ((r & ((1 << live) - 1)) << self.k)
    }
}

/// Reads element `i` of a little-endian array of `B`-byte elements (1, 2 or 4).
#[inline(always)]
pub fn load<const B: usize>(bytes: &[u8], i: usize) -> u32 {
    let b = &bytes[B * i..B * i + B];
    match B {
        1 => u32::from(b[0]),
        2 => u32::from(u16::from_le_bytes([b[0], b[1]])),
        _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
    }
}

#[cfg(any(test, feature = "internals"))]
/// Writes element `i` of a little-endian array of `B`-byte elements (1, 2 or 4).
#[inline(always)]
pub fn store<const B: usize>(bytes: &mut [u8], i: usize, u: u32) {
    bytes[B * i..B * i + B].copy_from_slice(&u.to_le_bytes()[..B]);
}

/// Merges a run of exponents and residuals into elements and stores them little-endian
/// (`out.len() == B * x.len()`). 2-byte elements are computed in 16-bit lanes (the low 16 bits
/// of [`Fields::merge`]: every step is a shift left, a mask or an OR, and the residual's right
/// shift keeps the bits below 16 it needs), so the loop vectorizes twice as wide.
#[inline(always)]
pub fn merge_store<const B: usize, L: Lane>(fields: &Fields, x: &[u8], r: &[L], out: &mut [u8]) {
    if B == 1 {
        let (m, k, live) = (fields.m, fields.k, fields.m - fields.k);
        let (top, low) = (fields.e + fields.m, ((1u32 << live) - 1) as u8);
        for ((o, &x), &r) in out.iter_mut().zip(x).zip(r) {
            let r = r.bits16(0) as u8;
            *o = (r >> live) << top | x << m | (r & low) << k;
        }
        return;
    }
    if B == 2 && !super::COMPACT {
        let (m, k, live) = (fields.m, fields.k, fields.m - fields.k);
        let (top, low) = (fields.e + fields.m, ((1u32 << live) - 1) as u16);
        for ((o, &x), &r) in out.as_chunks_mut::<2>().0.iter_mut().zip(x).zip(r) {
            let r = r.bits16(0);
            *o = ((r >> live) << top | u16::from(x) << m | (r & low) << k).to_le_bytes();
        }
        return;
    }
    for ((o, &x), &r) in out.chunks_exact_mut(B).zip(x).zip(r) {
        let u = fields.merge(u32::from(x), r.get());
        o.copy_from_slice(&u.to_le_bytes()[..B]);
    }
}

/// Lane types a plane can be unpacked into (the value must fit).
pub trait Lane: bytemuck::Pod + Default {
    /// Width in bits.
    const BITS: u32;
    /// ORs a field (already shifted into place) into the lane.
    fn or_field(self, field: u32) -> Self;
    /// The lane's value.
    fn get(self) -> u32;
    /// A lane holding the low bits of `v`.
    fn truncate(v: u32) -> Self;
    /// The lane holding `field << shift` cut to its width (as [`Lane::or_field`] does), computed
    /// in the lane's own width where it is narrower than 32 bits (`shift` below the width).
    #[inline(always)]
    fn field(field: u16, shift: u32) -> Self {
        Self::truncate(u32::from(field) << shift)
    }
    /// The OR of two lanes.
    #[inline(always)]
    fn or(self, other: Self) -> Self {
        self.or_field(other.get())
    }
    /// The low 16 bits of the lane's value shifted right by `shift` (below the width).
    #[inline(always)]
    fn bits16(self, shift: u32) -> u16 {
        (self.get() >> shift) as u16
    }
}

macro_rules! lane {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn or_field(self, field: u32) -> Self {
                self | field as $t
            }
            #[inline(always)]
            fn get(self) -> u32 {
                self.into()
            }
            #[inline(always)]
            fn truncate(v: u32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn field(field: u16, shift: u32) -> Self {
                // Cut first, then shifted in the lane: the same low bits as shifting first.
                debug_assert!(shift < Self::BITS);
                (field as $t).wrapping_shl(shift)
            }
            #[inline(always)]
            fn or(self, other: Self) -> Self {
                self | other
            }
            #[inline(always)]
            fn bits16(self, shift: u32) -> u16 {
                debug_assert!(shift < Self::BITS);
                self.wrapping_shr(shift) as u16
            }
        }
    )*};
}
lane!(u8, u16, u32);

/// The exponents of a run of little-endian `B`-byte elements (`input.len() == B * x.len()`).
#[inline(always)]
pub fn exponents<const B: usize>(fields: &Fields, input: &[u8], x: &mut [u8]) {
    if B == 1 {
        let (m, mask) = (fields.m, ((1u32 << fields.e) - 1) as u8);
        for (x, &u) in x.iter_mut().zip(input) {
            *x = u >> m & mask;
        }
        return;
    }
    if B == 2 {
        // In 16-bit lanes: the exponent is below bit 16.
        let (m, mask) = (fields.m, ((1u32 << fields.e) - 1) as u16);
        for (x, e) in x.iter_mut().zip(input.as_chunks::<2>().0) {
            *x = (u16::from_le_bytes(*e) >> m & mask) as u8;
        }
        return;
    }
    for (x, e) in x.iter_mut().zip(input.chunks_exact(B)) {
        *x = fields.split(load::<B>(e, 0)).0 as u8;
    }
}

/// Splits a run of little-endian `B`-byte elements (`input.len() == B * x.len()`) into their
/// exponents and residuals.
#[inline(always)]
pub fn split_load<const B: usize, L: Lane>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    r: &mut [L],
) {
    if B == 1 {
        // In 8-bit lanes, as the 2-byte elements are in 16-bit ones.
        let (m, k, live) = (fields.m, fields.k, fields.m - fields.k);
        let (top, exponent) = (fields.e + fields.m, ((1u32 << fields.e) - 1) as u8);
        let mantissa = ((1u32 << fields.m) - 1) as u8;
        for (x, &u) in x.iter_mut().zip(input) {
            *x = u >> m & exponent;
        }
        for (r, &u) in r.iter_mut().zip(input) {
            *r = L::field(u16::from((u >> top) << live | (u & mantissa) >> k), 0);
        }
        return;
    }
    if B == 2 {
        // [`Fields::split`] in 16-bit lanes: every part of a 2-byte element is below bit 16.
        let (m, k, live) = (fields.m, fields.k, fields.m - fields.k);
        let (top, exponent) = (fields.e + fields.m, ((1u32 << fields.e) - 1) as u16);
        let mantissa = ((1u32 << fields.m) - 1) as u16;
        // Two loops, each of which vectorizes (one writing both did not).
        let words = input.as_chunks::<2>().0;
        for (x, e) in x.iter_mut().zip(words) {
            *x = (u16::from_le_bytes(*e) >> m & exponent) as u8;
        }
        for (r, e) in r.iter_mut().zip(words) {
            let u = u16::from_le_bytes(*e);
            *r = L::field((u >> top) << live | (u & mantissa) >> k, 0);
        }
        return;
    }
    for ((e, x), r) in input.chunks_exact(B).zip(x.iter_mut()).zip(r.iter_mut()) {
        let u = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let (xe, re) = fields.split(u);
        *x = xe as u8;
        *r = L::truncate(re);
    }
}
