//! The stream header (FORMAT.md section 3) and the frame header with its coding parameters
//! (section 4): plain little-endian fields at fixed offsets; parsing checks every field.

use serde::{Deserialize, Serialize};

use super::constants::*;
use crate::checksum::h32;
use crate::dtype::Dtype;
use crate::error::{Error, Result};

/// How a frame is coded (the frame header's coding id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameCoding {
    /// Elements verbatim (incompressible frames).
    Stored = 0,
    /// The ENEC paper's interleaved groups with two bit widths.
    Groups = 1,
    /// Exponents ranked by frequency, escape levels of fixed width.
    Ranked = 2,
}

/// Parameters of the `groups` coding (FORMAT.md 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GroupsParams {
    /// Base `b` of the transform `y = (b - x) mod 2^n`.
    pub base: u8,
    /// Transform width `n`.
    pub width: u8,
    /// Low width `m`: bits stored for every element.
    pub low: u8,
    /// Number of flagged groups `F`.
    pub flagged: u32,
}

/// Parameters of the `ranked` coding (FORMAT.md 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RankedParams {
    /// Number of coded levels `L` (1..=3).
    pub levels: u8,
    /// Code widths `m1..mL`; unused entries are 0.
    pub widths: [u8; MAX_LEVELS],
    /// Entries of the planes after level 1: `c2, c3, c4`; `c(L+1)` is the exponent level.
    pub counts: [u32; MAX_LEVELS],
}

impl RankedParams {
    /// `S_j`: the first rank not coded by levels `1..=j` (`S_0 = 0`).
    pub fn rank_starts(&self) -> [usize; MAX_LEVELS + 1] {
        let mut s = [0usize; MAX_LEVELS + 1];
        for j in 0..usize::from(self.levels).min(MAX_LEVELS) {
            s[j + 1] = s[j] + (1usize << self.widths[j]) - 1;
        }
        s
    }

    /// Symbol table length `T = S_L`.
    pub fn table_len(&self) -> usize {
        self.rank_starts()[usize::from(self.levels).min(MAX_LEVELS)]
    }
}

/// Coding and its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameParams {
    /// See [`FrameCoding::Stored`].
    Stored,
    /// See [`FrameCoding::Groups`].
    Groups(GroupsParams),
    /// See [`FrameCoding::Ranked`].
    Ranked(RankedParams),
}

impl FrameParams {
    /// The coding id.
    pub fn coding(&self) -> FrameCoding {
        match self {
            FrameParams::Stored => FrameCoding::Stored,
            FrameParams::Groups(_) => FrameCoding::Groups,
            FrameParams::Ranked(_) => FrameCoding::Ranked,
        }
    }
}

/// What a stream header says (FORMAT.md section 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamInfo {
    /// Element type.
    pub dtype: Dtype,
    /// Frame length as a power of two.
    pub frame_log2: u8,
    /// Whether every frame carries a checksum of its decoded bytes.
    pub checksums: bool,
    /// Number of elements in the stream.
    pub element_count: u64,
    /// Number of frames.
    pub frame_count: u32,
    /// Format version of the stream (major, minor).
    pub version: (u8, u8),
}

impl StreamInfo {
    /// A header for `element_count` elements; fails if the frame count would not fit in a u32.
    pub fn new(dtype: Dtype, frame_log2: u8, checksums: bool, element_count: u64) -> Result<Self> {
        if !(MIN_FRAME_LOG2..=MAX_FRAME_LOG2).contains(&frame_log2) {
            return Err(Error::InvalidFrameLength(
                1u32.checked_shl(frame_log2.into()).unwrap_or(0),
            ));
        }
        let frames = element_count.div_ceil(1u64 << frame_log2);
        let frame_count = u32::try_from(frames).map_err(|_| Error::TooLarge)?;
        Ok(StreamInfo {
            dtype,
            frame_log2,
            checksums,
            element_count,
            frame_count,
            version: (VERSION_MAJOR, dtype.version_minor()),
        })
    }

    /// Elements per frame (all but the last).
    pub fn frame_len(&self) -> usize {
        1usize << self.frame_log2
    }

    /// Elements in frame `index`.
    pub fn frame_elements(&self, index: u32) -> usize {
        let start = u64::from(index) << self.frame_log2;
        let left = self.element_count.saturating_sub(start);
        left.min(self.frame_len() as u64) as usize
    }

    /// Size of the decoded data in bytes.
    pub fn decoded_bytes(&self) -> u64 {
        self.element_count * self.dtype.element_bytes() as u64
    }

    /// The 32 header bytes.
    // Public for tests/streaming.rs, which writes headers of streams the encoder never makes.
    #[doc(hidden)]
    pub fn to_bytes(&self) -> [u8; STREAM_HEADER_BYTES] {
        let mut b = [0u8; STREAM_HEADER_BYTES];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = VERSION_MAJOR;
        b[5] = self.dtype.version_minor();
        b[6] = self.dtype.code();
        b[7] = self.frame_log2;
        b[8] = if self.checksums { FLAG_CHECKSUMS } else { 0 };
        b[12..16].copy_from_slice(&self.frame_count.to_le_bytes());
        b[16..24].copy_from_slice(&self.element_count.to_le_bytes());
        let check = h32(&b[0..28]);
        b[28..32].copy_from_slice(&check.to_le_bytes());
        b
    }

    /// Parses and checks the stream header at the start of `stream`.
    pub fn parse(stream: &[u8]) -> Result<Self> {
        let b: &[u8; STREAM_HEADER_BYTES] = stream
            .get(..STREAM_HEADER_BYTES)
            .and_then(|h| h.try_into().ok())
            .ok_or(Error::Truncated {
                needed: STREAM_HEADER_BYTES as u64,
                available: stream.len() as u64,
            })?;
        if b[0..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        if b[4] != VERSION_MAJOR {
            return Err(Error::UnsupportedVersion {
                major: b[4],
                minor: b[5],
            });
        }
        if u32_at(b, 28) != h32(&b[0..28]) {
            return Err(Error::CorruptHeader("header check does not match"));
        }
        let dtype = Dtype::from_code(b[6]).ok_or(Error::UnsupportedDtype(b[6]))?;
        if b[5] < dtype.version_minor() {
            return Err(Error::CorruptHeader(
                "dtype is newer than the stream's minor version",
            ));
        }
        let frame_log2 = b[7];
        if !(MIN_FRAME_LOG2..=MAX_FRAME_LOG2).contains(&frame_log2) {
            return Err(Error::CorruptHeader("frame length out of range"));
        }
        if b[8] & !FLAG_CHECKSUMS != 0 {
            return Err(Error::UnsupportedFlags(b[8] & !FLAG_CHECKSUMS));
        }
        if b[9..12] != [0; 3] || b[24..28] != [0; 4] {
            return Err(Error::CorruptHeader("reserved bytes are not zero"));
        }
        let element_count =
            u64::from_le_bytes([b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23]]);
        let info = StreamInfo::new(dtype, frame_log2, b[8] & FLAG_CHECKSUMS != 0, element_count)
            .map_err(|_| Error::CorruptHeader("element count needs more than 2^32 frames"))?;
        if u32_at(b, 12) != info.frame_count {
            return Err(Error::CorruptHeader(
                "frame count does not match element count",
            ));
        }
        Ok(StreamInfo {
            version: (b[4], b[5]),
            ..info
        })
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A parsed frame header (FORMAT.md section 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameHeader {
    /// Total bytes of the frame, header included.
    pub frame_bytes: u32,
    /// `h32` of the decoded bytes, or 0 when the stream has no checksums.
    pub checksum: u32,
    /// Elements in the frame.
    pub elements: u32,
    /// Dead low mantissa bits `k`.
    pub dead_bits: u8,
    /// Coding and parameters.
    pub params: FrameParams,
}

impl FrameHeader {
    /// The 32 header bytes.
    pub fn to_bytes(self) -> [u8; FRAME_HEADER_BYTES] {
        let mut b = [0u8; FRAME_HEADER_BYTES];
        b[0..4].copy_from_slice(&self.frame_bytes.to_le_bytes());
        b[4..8].copy_from_slice(&self.checksum.to_le_bytes());
        b[8..12].copy_from_slice(&self.elements.to_le_bytes());
        b[12] = self.params.coding() as u8;
        b[13] = self.dead_bits;
        match self.params {
            FrameParams::Stored => {}
            FrameParams::Groups(g) => {
                b[16] = g.base;
                b[17] = g.width;
                b[18] = g.low;
                b[20..24].copy_from_slice(&g.flagged.to_le_bytes());
            }
            FrameParams::Ranked(r) => {
                b[16] = r.levels;
                b[17..20].copy_from_slice(&r.widths);
                for (j, c) in r.counts.iter().enumerate() {
                    b[20 + 4 * j..24 + 4 * j].copy_from_slice(&c.to_le_bytes());
                }
            }
        }
        b
    }

    /// Parses frame `index` of a stream of `dtype` and checks every field's range. The frame size
    /// is checked against the layout by [`FrameLayout::new`](crate::format::FrameLayout::new).
    pub fn parse(frame: &[u8], dtype: Dtype, index: u32) -> Result<Self> {
        let b: &[u8; FRAME_HEADER_BYTES] = frame
            .get(..FRAME_HEADER_BYTES)
            .and_then(|h| h.try_into().ok())
            .ok_or(Error::Truncated {
                needed: FRAME_HEADER_BYTES as u64,
                available: frame.len() as u64,
            })?;
        let corrupt = |reason| Error::CorruptFrame {
            frame: index,
            reason,
        };
        let e = dtype.exponent_bits() as u8;
        let dead_bits = b[13];
        if u32::from(dead_bits) > dtype.mantissa_bits() {
            return Err(corrupt("dead bit count exceeds the mantissa"));
        }
        if b[14..16] != [0; 2] {
            return Err(corrupt("reserved bytes are not zero"));
        }
        let params = match b[12] {
            0 => {
                if dead_bits != 0 || b[16..32].iter().any(|&x| x != 0) {
                    return Err(corrupt("stored frame with parameters"));
                }
                FrameParams::Stored
            }
            1 => {
                let g = GroupsParams {
                    base: b[16],
                    width: b[17],
                    low: b[18],
                    flagged: u32_at(b, 20),
                };
                let base_ok = u32::from(g.base) < (1u32 << e);
                if !base_ok || g.width == 0 || g.width > e || g.low > g.width {
                    return Err(corrupt("groups parameters out of range"));
                }
                if b[19] != 0 || b[24..32].iter().any(|&x| x != 0) {
                    return Err(corrupt("reserved bytes are not zero"));
                }
                if g.flagged as usize > (u32_at(b, 8) as usize).div_ceil(GROUP_LEN) {
                    return Err(corrupt("more flagged groups than groups"));
                }
                if g.low == g.width && g.flagged != 0 {
                    return Err(corrupt("flagged groups without high bits"));
                }
                FrameParams::Groups(g)
            }
            2 => {
                let r = RankedParams {
                    levels: b[16],
                    widths: [b[17], b[18], b[19]],
                    counts: [u32_at(b, 20), u32_at(b, 24), u32_at(b, 28)],
                };
                let levels = usize::from(r.levels);
                if !(1..=MAX_LEVELS).contains(&levels) {
                    return Err(corrupt("ranked level count out of range"));
                }
                for j in 0..MAX_LEVELS {
                    let w = r.widths[j];
                    let used = j < levels;
                    if (used && (w == 0 || w > e)) || (!used && w != 0) {
                        return Err(corrupt("ranked code width out of range"));
                    }
                    // counts[j] is c(j+2): used up to the exponent level c(L+1).
                    if j >= levels && r.counts[j] != 0 {
                        return Err(corrupt("count of an unused level is not zero"));
                    }
                }
                if r.table_len() > 1 << e {
                    return Err(corrupt("symbol table longer than the exponent alphabet"));
                }
                let elements = u32_at(b, 8);
                let mut prev = elements;
                for &c in &r.counts[..levels] {
                    if c > prev {
                        return Err(corrupt("more escapes than elements at the level before"));
                    }
                    prev = c;
                }
                FrameParams::Ranked(r)
            }
            coding => {
                return Err(Error::UnsupportedCoding {
                    frame: index,
                    coding,
                })
            }
        };
        Ok(FrameHeader {
            frame_bytes: u32_at(b, 0),
            checksum: u32_at(b, 4),
            elements: u32_at(b, 8),
            dead_bits,
            params,
        })
    }
}
