//! The digest the host computes over the original weights and the firmware over what it decoded:
//! 64-bit FNV-1a, a few lines that share nothing with enec's own frame checksum.

/// A running FNV-1a (64-bit) digest.
#[derive(Clone, Copy)]
pub struct Digest(u64);

impl Digest {
    /// The digest of no bytes.
    pub const fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    /// Adds `bytes` to the digest.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The digest of everything added so far.
    pub fn value(&self) -> u64 {
        self.0
    }
}
