//! What several test crates share: one seeded generator of test data, so every failure
//! reproduces from its seed. Each crate uses some of its methods, hence `dead_code`.
#![allow(dead_code)]

/// SplitMix64: a small deterministic generator (no dependency, any seed, 0 included).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform below `n` (not 0), with the negligible modulo bias of a test.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An index below `n` (not 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// `w` random low bits (`w` at most 32).
    pub fn bits(&mut self, w: u32) -> u32 {
        if w == 0 {
            0
        } else {
            (self.next() as u32) & (u32::MAX >> (32 - w))
        }
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Roughly normal, N(0, scale^2): a sum of four uniforms, rescaled.
    pub fn normal(&mut self, scale: f32) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum();
        (s - 2.0) * 1.7 * scale
    }
}

/// The FP8 byte of `dtype` (E4m3 or E5m2) nearest `x`, ties to even, `|x|` clamped to the
/// largest finite value; subnormals included. Test data only: the codec never rounds.
pub fn fp8(dtype: enec::Dtype, x: f64) -> u8 {
    let (mbits, bias, fmax) = match dtype {
        enec::Dtype::E4m3 => (3, 7, 448f64),
        enec::Dtype::E5m2 => (2, 15, 57344f64),
        other => panic!("{other:?} is not an FP8 dtype"),
    };
    let sign = u8::from(x.is_sign_negative()) << 7;
    let a = x.abs().min(fmax);
    let emin = 1 - bias;
    let e = if a == 0.0 {
        emin
    } else {
        ((a.to_bits() >> 52) as i32 - 1023).max(emin)
    };
    let steps = (a / 2f64.powi(e - mbits)).round_ties_even() as u32;
    let (e, steps) = if steps >= 2 << mbits {
        (e + 1, steps / 2)
    } else {
        (e, steps)
    };
    let (field, mantissa) = if steps >= 1 << mbits {
        (e - emin + 1, steps - (1 << mbits))
    } else {
        (0, steps)
    };
    sign | (field as u8) << mbits | mantissa as u8
}
