//! The checkpoint container (FORMAT.md section 9): a whole file (a safetensors checkpoint, say)
//! cut into *pieces* that are stored either verbatim or as enec streams, with an index that lets a
//! reader find and decode one tensor without touching the others.
//!
//! ```text
//! container = header (32 bytes) { zero padding to a multiple of 32, payload }*
//!             zero padding to a multiple of 32, index, zero padding to a multiple of 32,
//!             footer (32 bytes)
//! ```
//!
//! A writer streams: the payloads first, in the order of the original file, then the index
//! (postcard), then the fixed-size footer that says where the index is and holds its checksum.
//! A reader reads the footer (the last 32 bytes), then the index, then only the payloads it wants.
//!
//! Reading is `no_std` and allocation-free (the [`Writer`] needs the `std` feature): the index is parsed in place (names and
//! dtypes are borrowed from the index bytes), entries are read one at a time, and every length
//! and offset is checked before use.
//!
//! ```
//! # #[cfg(feature = "std")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use enec::container::{Container, PieceKind, PieceMeta, Writer};
//!
//! // Write a container holding one raw piece (a real writer streams it to a file).
//! let data = b"hello, checkpoint";
//! let mut file = Vec::new();
//! let mut writer = Writer::new(&mut file)?;
//! writer.begin()?;
//! writer.payload(data)?;
//! let checksum = enec::wrapped::piece_checksum(data);
//! let original_len = data.len() as u64;
//! let (name, dtype) = ("", "");
//! writer.end(PieceMeta { kind: PieceKind::Raw, name, dtype, shape: &[], original_len, checksum })?;
//! writer.finish()?;
//!
//! // Read it back.
//! let container = Container::parse(&file)?;
//! let (i, entry) = container.entries().next().unwrap();
//! assert_eq!(entry.kind, PieceKind::Raw);
//! let mut out = [0u8; 17];
//! container.decode_entry(i, &entry, &mut out)?;
//! assert_eq!(&out, data);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "std"))]
//! # fn main() {}
//! ```
//!
//! About 800 lines of code and 350 of unit tests (hostile indexes, flips, truncation), kept
//! together because the tests reach the private parsers.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::checksum::h32;
use crate::error::Error;
use crate::format::{Dtype, STREAM_HEADER_BYTES};

mod run_tensors;
pub mod safetensors_header;
pub use run_tensors::{header_of, run_tensors, RunTensor, RunTensorsError};
#[cfg(feature = "std")]
mod writer;
#[cfg(feature = "std")]
pub use writer::{PieceMeta, Writer};

/// `ENCP`: the first four and the last four bytes of a container.
pub const MAGIC: [u8; 4] = *b"ENCP";
/// Container format major version written by this crate.
pub const VERSION_MAJOR: u8 = 1;
/// Container format minor version written by this crate.
pub const VERSION_MINOR: u8 = 0;
/// Size of the container header.
pub const HEADER_BYTES: usize = 32;
/// Size of the container footer.
pub const FOOTER_BYTES: usize = 32;
/// Payloads, the index and the footer start at multiples of this many bytes: the streams' own
/// alignment (32 bytes, FORMAT.md section 2), so a stream keeps it inside a container.
pub const ALIGN: u64 = crate::format::ALIGN as u64;
/// Most dimensions a tensor's shape may have in the index.
pub const MAX_RANK: usize = 16;

/// `x` rounded up to a multiple of [`ALIGN`] (saturating at the largest multiple of 32): the
/// container's form of the streams' 32-byte padding, over u64 file offsets, which exceed `usize` on
/// 32-bit targets.
pub const fn pad32(x: u64) -> u64 {
    match x.checked_add(ALIGN - 1) {
        Some(y) => y & !(ALIGN - 1),
        None => !(ALIGN - 1),
    }
}

/// Everything that can go wrong while reading (or writing the index of) a container. A failing
/// entry's stream is reported with the codec's [`Error`] nested in [`ContainerError::Stream`]
/// (and as its `source()`): the crate's one error story, told in `error.rs`.
#[non_exhaustive]
#[allow(missing_docs)] // the fields are named in each variant's description
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ContainerError {
    /// The input ended before the structure it announced: `needed` bytes at least, `available` present.
    Truncated { needed: u64, available: u64 },
    /// The file does not start with the container magic `ENCP`.
    BadMagic,
    /// The container was written by a format version this reader does not read.
    UnsupportedVersion { major: u8, minor: u8 },
    /// The container header's reserved bytes or check are wrong.
    CorruptHeader(&'static str),
    /// The file does not end with a container footer: it is truncated or was not completely written.
    MissingFooter,
    /// The footer is inconsistent with itself or with the file size.
    CorruptFooter(&'static str),
    /// The index bytes do not match the checksum stored in the footer.
    IndexChecksumMismatch,
    /// The index (its header, or entry `entry`) is malformed; `reason` says how.
    CorruptIndex { entry: u64, reason: &'static str },
    /// Entry `entry` has a piece kind this reader does not know.
    UnsupportedPieceKind { entry: u64, kind: u8 },
    /// The verbatim bytes of entry `entry` do not match their checksum.
    RawChecksumMismatch { entry: u64 },
    /// Decoding the enec stream of entry `entry` failed.
    Stream { entry: u64, error: Error },
    /// The output buffer is too small: `needed` bytes are required.
    OutputTooSmall { needed: u64 },
}

/// Index entry number used in [`ContainerError::CorruptIndex`] for the index header itself.
pub const INDEX_HEADER: u64 = u64::MAX;

impl ContainerError {
    /// The number of the index entry the error lies in, if it lies in one (not the index
    /// header): what a message uses to name the piece ([`Entry::describe`]).
    pub fn entry(&self) -> Option<u64> {
        match *self {
            ContainerError::CorruptIndex { entry, .. }
            | ContainerError::UnsupportedPieceKind { entry, .. }
            | ContainerError::RawChecksumMismatch { entry }
            | ContainerError::Stream { entry, .. } => Some(entry).filter(|&e| e != INDEX_HEADER),
            _ => None,
        }
    }
}

impl fmt::Display for ContainerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ContainerError::Truncated { needed, available } => write!(
                f,
                "container is truncated: needs at least {needed} bytes, has {available}"
            ),
            ContainerError::BadMagic => {
                f.write_str("not an enec checkpoint container (magic bytes `ENCP` missing)")
            }
            ContainerError::UnsupportedVersion { major, minor } => write!(
                f,
                "enec container version {major}.{minor} is not supported by this reader (reads 1.x)"
            ),
            ContainerError::CorruptHeader(why) => write!(f, "corrupt container header: {why}"),
            ContainerError::MissingFooter => f.write_str(
                "the container has no footer: the file is truncated or was not completely written",
            ),
            ContainerError::CorruptFooter(why) => write!(f, "corrupt container footer: {why}"),
            ContainerError::IndexChecksumMismatch => {
                f.write_str("the container index does not match its checksum: the file is corrupt")
            }
            ContainerError::CorruptIndex { entry, reason } if entry == INDEX_HEADER => {
                write!(f, "corrupt container index: {reason}")
            }
            ContainerError::CorruptIndex { entry, reason } => {
                write!(f, "corrupt container index, entry {entry}: {reason}")
            }
            ContainerError::UnsupportedPieceKind { entry, kind } => write!(
                f,
                "entry {entry} has piece kind {kind}, unknown to this reader"
            ),
            ContainerError::RawChecksumMismatch { entry } => write!(
                f,
                "checksum mismatch in the verbatim bytes of entry {entry}: the file is corrupt"
            ),
            ContainerError::Stream { entry, error } => write!(f, "entry {entry}: {error}"),
            ContainerError::OutputTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
        }
    }
}

impl core::error::Error for ContainerError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ContainerError::Stream { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Result alias of this module.
pub type Result<T> = core::result::Result<T, ContainerError>;

/// How a piece is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PieceKind {
    /// The original bytes verbatim (header JSON, integer tensors, gaps), with an `h32` checksum.
    Raw = 0,
    /// An enec stream (FORMAT.md sections 1-8) that decodes to the original bytes.
    Enec = 1,
}

/// The safetensors dtype name of an enec dtype (`BF16`, `F16`, `F32`, `F8_E4M3`, `F8_E5M2`).
pub const fn safetensors_dtype_name(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bf16 => "BF16",
        Dtype::Fp16 => "F16",
        Dtype::Fp32 => "F32",
        Dtype::E4m3 => "F8_E4M3",
        Dtype::E5m2 => "F8_E5M2",
    }
}

/// The enec dtype of a safetensors dtype name, if this build codes it.
pub fn dtype_from_safetensors(name: &str) -> Option<Dtype> {
    Dtype::ALL
        .into_iter()
        .find(|&d| safetensors_dtype_name(d) == name)
}

/// A tensor of at least this many bytes whose dtype enec codes is always stored as an enec
/// stream, so that a writer can stream it frame by frame (FORMAT.md 9.6).
pub const ALWAYS_ENEC_BYTES: u64 = 1 << 20;

/// The most bytes a tensor's own piece adds to the container beyond its payload: its index
/// entry, the padding before it, and the entry and padding of the run of verbatim bytes that
/// it splits in two (FORMAT.md 9.6).
pub fn piece_cost(name: &str, dtype: &str, rank: usize) -> u64 {
    192 + name.len() as u64 + dtype.len() as u64 + 10 * rank as u64
}

/// Whether a tensor of `original_len` bytes whose enec stream has `stream_len` bytes is stored
/// as that stream (FORMAT.md 9.6): when the stream and [`piece_cost`] together are no larger
/// than the tensor, or the tensor has at least [`ALWAYS_ENEC_BYTES`]. Otherwise it is verbatim.
pub fn keeps_stream(
    stream_len: u64,
    original_len: u64,
    name: &str,
    dtype: &str,
    rank: usize,
) -> bool {
    original_len >= ALWAYS_ENEC_BYTES
        || stream_len.saturating_add(piece_cost(name, dtype, rank)) <= original_len
}

/// Whether every tensor of a file of `file_len` bytes gets a piece and an index entry of its
/// own (FORMAT.md 9.6): when the [`piece_cost`]s of all its tensors (`tensors`: name, dtype and
/// rank of each) together are at most 0.5 % of the file, as in real checkpoints, where a few
/// hundred tensors hold megabytes each. Then no tensor is left out of the index, and the
/// entries cannot grow the file by more than that.
pub fn every_tensor_indexed<'t>(
    file_len: u64,
    tensors: impl IntoIterator<Item = (&'t str, &'t str, usize)>,
) -> bool {
    let costs = tensors.into_iter().fold(0u64, |sum, (name, dtype, rank)| {
        sum.saturating_add(piece_cost(name, dtype, rank))
    });
    costs.saturating_mul(200) <= file_len
}

/// Whether a verbatim tensor of `original_len` bytes gets a piece and an index entry of its own
/// (FORMAT.md 9.6): always in a file where [`every_tensor_indexed`] holds (`all`), else when it
/// has at least 100 times its [`piece_cost`], so that the entry costs at most 1 % of it.
/// Smaller ones join the run of verbatim bytes around them, found through the safetensors
/// header ([`Container::verbatim_at`]).
pub fn own_raw_piece(all: bool, original_len: u64, name: &str, dtype: &str, rank: usize) -> bool {
    all || original_len >= 100 * piece_cost(name, dtype, rank)
}

/// One piece of the original file: where it was, where it is, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// How the piece is stored.
    pub kind: PieceKind,
    /// Tensor name (a tensor may be named `""`); empty for pieces that are not a tensor.
    pub name: &'a str,
    /// The original file's dtype name (`BF16`, `I64`, ...); empty exactly for pieces that are not
    /// a tensor (file header, gaps, trailer): see [`Entry::is_tensor`].
    pub dtype: &'a str,
    /// Tensor shape; empty for scalars and for pieces that are not a tensor.
    pub shape: heapless::Vec<u64, MAX_RANK>,
    /// Byte offset of the piece in the original file.
    pub original_offset: u64,
    /// Length of the piece in the original file.
    pub original_len: u64,
    /// Byte offset of the payload in the container.
    pub offset: u64,
    /// Length of the payload in the container.
    pub len: u64,
    /// `h32` of the original bytes for raw pieces; 0 for enec pieces (their frames carry checksums).
    pub checksum: u32,
}

/// The serialized form of an entry (FORMAT.md 9.4): the kind as a byte, so that an unknown kind
/// is reported as such.
#[derive(Serialize, Deserialize)]
struct WireEntry<'a> {
    kind: u8,
    name: &'a str,
    dtype: &'a str,
    shape: heapless::Vec<u64, MAX_RANK>,
    original_offset: u64,
    original_len: u64,
    offset: u64,
    len: u64,
    checksum: u32,
}

#[derive(Serialize, Deserialize)]
struct WireIndexHeader {
    original_len: u64,
    entry_count: u64,
}

/// Bytes of a postcard varint of a `u64` at most.
const VARINT_MAX: usize = 10;

impl<'a> Entry<'a> {
    /// A raw piece holding `bytes` verbatim (its checksum is computed here).
    pub fn raw(
        name: &'a str,
        dtype: &'a str,
        shape: &[u64],
        original_offset: u64,
        original_len: u64,
        offset: u64,
        bytes: &[u8],
    ) -> Entry<'a> {
        Entry {
            kind: PieceKind::Raw,
            name,
            dtype,
            shape: shape.iter().copied().take(MAX_RANK).collect(),
            original_offset,
            original_len,
            offset,
            len: original_len,
            checksum: h32(bytes),
        }
    }

    /// Whether this piece is a tensor of the original file: it has a dtype or a name. The name
    /// alone cannot tell, as a tensor may be named `""`; pieces that are not tensors have neither.
    pub fn is_tensor(&self) -> bool {
        !self.dtype.is_empty() || !self.name.is_empty()
    }

    /// The start of `out` that receives this piece (entry `number`) restored: its
    /// `original_len` bytes, or an error naming why they do not fit.
    pub(crate) fn original_in<'o>(&self, number: u64, out: &'o mut [u8]) -> Result<&'o mut [u8]> {
        let len = usize::try_from(self.original_len).map_err(|_| ContainerError::Stream {
            entry: number,
            error: Error::TooLarge,
        })?;
        out.get_mut(..len).ok_or(ContainerError::OutputTooSmall {
            needed: self.original_len,
        })
    }

    /// How messages name this piece: `tensor "name"`, the file header, or a byte range of the
    /// original.
    pub fn describe(&self) -> impl fmt::Display + '_ {
        struct Described<'e, 'a>(&'e Entry<'a>);
        impl fmt::Display for Described<'_, '_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let e = self.0;
                if e.is_tensor() {
                    write!(f, "tensor \"{}\"", e.name)
                } else if e.original_offset == 0 {
                    write!(f, "the file header (bytes 0..{})", e.original_len)
                } else {
                    let end = e.original_offset.saturating_add(e.original_len);
                    write!(f, "the bytes {}..{end} of the original", e.original_offset)
                }
            }
        }
        Described(self)
    }

    /// The most bytes [`Entry::encode`] writes for this entry.
    pub fn max_encoded_len(&self) -> usize {
        1 + (VARINT_MAX + self.name.len())
            + (VARINT_MAX + self.dtype.len())
            + VARINT_MAX * (1 + self.shape.len())
            + 4 * VARINT_MAX
            + 5
    }

    /// Serializes the entry (FORMAT.md 9.4) into `out`; returns the bytes written.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize> {
        let wire = WireEntry {
            kind: self.kind as u8,
            name: self.name,
            dtype: self.dtype,
            shape: self.shape.clone(),
            original_offset: self.original_offset,
            original_len: self.original_len,
            offset: self.offset,
            len: self.len,
            checksum: self.checksum,
        };
        let needed = self.max_encoded_len() as u64;
        postcard::to_slice(&wire, out)
            .map(|written| written.len())
            .map_err(|_| ContainerError::OutputTooSmall { needed })
    }

    fn decode(bytes: &'a [u8], entry: u64) -> Result<(Entry<'a>, &'a [u8])> {
        let (wire, rest) = postcard::take_from_bytes::<WireEntry<'a>>(bytes).map_err(|_| {
            ContainerError::CorruptIndex {
                entry,
                reason: "malformed entry (bad varint, string, or more than 16 dimensions)",
            }
        })?;
        let kind = match wire.kind {
            0 => PieceKind::Raw,
            1 => PieceKind::Enec,
            kind => return Err(ContainerError::UnsupportedPieceKind { entry, kind }),
        };
        Ok((
            Entry {
                kind,
                name: wire.name,
                dtype: wire.dtype,
                shape: wire.shape,
                original_offset: wire.original_offset,
                original_len: wire.original_len,
                offset: wire.offset,
                len: wire.len,
                checksum: wire.checksum,
            },
            rest,
        ))
    }
}

/// Serializes the index header (FORMAT.md 9.4) into `out`; returns the bytes written (at most 20).
#[cfg(any(feature = "std", test))] // the writer's, and the tests'
pub(crate) fn encode_index_header(
    original_len: u64,
    entry_count: u64,
    out: &mut [u8],
) -> Result<usize> {
    let wire = WireIndexHeader {
        original_len,
        entry_count,
    };
    postcard::to_slice(&wire, out)
        .map(|written| written.len())
        .map_err(|_| ContainerError::OutputTooSmall {
            needed: 2 * VARINT_MAX as u64,
        })
}

/// The 32 bytes of the container header (FORMAT.md 9.2).
#[cfg(any(feature = "std", test))] // the writer's, and the tests'
pub(crate) fn header_bytes() -> [u8; HEADER_BYTES] {
    let mut b = [0u8; HEADER_BYTES];
    b[0..4].copy_from_slice(&MAGIC);
    b[4] = VERSION_MAJOR;
    b[5] = VERSION_MINOR;
    let check = h32(&b[0..28]);
    b[28..32].copy_from_slice(&check.to_le_bytes());
    b
}

/// Checks the container header at the start of `file`; returns the format version.
pub fn parse_header(file: &[u8]) -> Result<(u8, u8)> {
    let b = file.get(..HEADER_BYTES).ok_or(ContainerError::Truncated {
        needed: HEADER_BYTES as u64,
        available: file.len() as u64,
    })?;
    if b[0..4] != MAGIC {
        return Err(ContainerError::BadMagic);
    }
    if b[4] != VERSION_MAJOR {
        return Err(ContainerError::UnsupportedVersion {
            major: b[4],
            minor: b[5],
        });
    }
    if u32_at(b, 28) != h32(&b[0..28]) {
        return Err(ContainerError::CorruptHeader("header check does not match"));
    }
    if b[6..28].iter().any(|&x| x != 0) {
        return Err(ContainerError::CorruptHeader("reserved bytes are not zero"));
    }
    Ok((b[4], b[5]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The container footer (FORMAT.md 9.3): where the index is and its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Footer {
    /// Byte offset of the index in the container (a multiple of 32).
    pub index_offset: u64,
    /// Length of the index in bytes.
    pub index_len: u64,
    /// `h32` of the index bytes.
    pub index_check: u32,
}

impl Footer {
    /// The footer of an index written at `index_offset`.
    pub fn new(index_offset: u64, index: &[u8]) -> Footer {
        Footer {
            index_offset,
            index_len: index.len() as u64,
            index_check: h32(index),
        }
    }

    /// The 32 footer bytes.
    pub fn to_bytes(&self) -> [u8; FOOTER_BYTES] {
        let mut b = [0u8; FOOTER_BYTES];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.index_len.to_le_bytes());
        b[16..20].copy_from_slice(&self.index_check.to_le_bytes());
        b[20] = VERSION_MAJOR;
        b[21] = VERSION_MINOR;
        let check = h32(&b[0..24]);
        b[24..28].copy_from_slice(&check.to_le_bytes());
        b[28..32].copy_from_slice(&MAGIC);
        b
    }

    /// Parses the footer: `tail` is the last 32 bytes of a file of `file_len` bytes. Checks the
    /// footer against itself and against the file length.
    pub fn parse(tail: &[u8], file_len: u64) -> Result<Footer> {
        let minimum = (HEADER_BYTES + FOOTER_BYTES) as u64;
        if file_len < minimum || tail.len() != FOOTER_BYTES {
            return Err(ContainerError::Truncated {
                needed: minimum,
                available: file_len.min(tail.len() as u64),
            });
        }
        if tail[28..32] != MAGIC {
            return Err(ContainerError::MissingFooter);
        }
        if u32_at(tail, 24) != h32(&tail[0..24]) {
            return Err(ContainerError::CorruptFooter("footer check does not match"));
        }
        if tail[20] != VERSION_MAJOR {
            return Err(ContainerError::UnsupportedVersion {
                major: tail[20],
                minor: tail[21],
            });
        }
        if tail[22..24] != [0, 0] {
            return Err(ContainerError::CorruptFooter("reserved bytes are not zero"));
        }
        let footer = Footer {
            index_offset: u64_at(tail, 0),
            index_len: u64_at(tail, 8),
            index_check: u32_at(tail, 16),
        };
        let footer_at = file_len - FOOTER_BYTES as u64;
        if !footer.index_offset.is_multiple_of(ALIGN) || footer.index_offset < HEADER_BYTES as u64 {
            return Err(ContainerError::CorruptFooter(
                "index offset is not a multiple of 32 after the header",
            ));
        }
        let index_end = footer
            .index_offset
            .checked_add(footer.index_len)
            .filter(|&end| end <= footer_at && pad32(end) == footer_at);
        if index_end.is_none() {
            return Err(ContainerError::CorruptFooter(
                "the index does not end just before the footer (file truncated or extended?)",
            ));
        }
        Ok(footer)
    }
}

/// A parsed and fully checked index (FORMAT.md 9.4). Entries are decoded in place on iteration.
#[derive(Clone, Copy, Debug)]
pub struct Index<'a> {
    entries: &'a [u8],
    entry_count: u64,
    original_len: u64,
    index_offset: u64,
}

impl<'a> Index<'a> {
    /// Checks `index` (the `footer.index_len` bytes at `footer.index_offset`) against the footer's
    /// checksum, then every entry against the rules of FORMAT.md 9.5. Takes time proportional to
    /// the index length and never allocates.
    pub fn parse(index: &'a [u8], footer: &Footer) -> Result<Index<'a>> {
        if index.len() as u64 != footer.index_len {
            return Err(ContainerError::Truncated {
                needed: footer.index_len,
                available: index.len() as u64,
            });
        }
        if h32(index) != footer.index_check {
            return Err(ContainerError::IndexChecksumMismatch);
        }
        let (header, entries) =
            postcard::take_from_bytes::<WireIndexHeader>(index).map_err(|_| {
                ContainerError::CorruptIndex {
                    entry: INDEX_HEADER,
                    reason: "malformed index header",
                }
            })?;
        let parsed = Index {
            entries,
            entry_count: header.entry_count,
            original_len: header.original_len,
            index_offset: footer.index_offset,
        };
        let corrupt = |entry, reason| ContainerError::CorruptIndex { entry, reason };
        let mut rest = entries;
        let mut original = 0u64;
        let mut container = HEADER_BYTES as u64;
        let mut i = 0u64;
        while i < header.entry_count {
            if rest.is_empty() {
                return Err(corrupt(i, "the index ends before its last entry"));
            }
            let (entry, next) = Entry::decode(rest, i)?;
            rest = next;
            if entry.original_offset != original {
                return Err(corrupt(
                    i,
                    "pieces do not follow each other in the original",
                ));
            }
            original = original
                .checked_add(entry.original_len)
                .ok_or(corrupt(i, "original length overflows"))?;
            if entry.offset != pad32(container) {
                return Err(corrupt(
                    i,
                    "payload does not start at the next multiple of 32",
                ));
            }
            container = entry
                .offset
                .checked_add(entry.len)
                .filter(|&end| end <= footer.index_offset)
                .ok_or(corrupt(i, "payload extends past the index"))?;
            match entry.kind {
                PieceKind::Raw => {
                    if entry.len != entry.original_len {
                        return Err(corrupt(i, "raw payload length differs from the original"));
                    }
                }
                PieceKind::Enec => {
                    if entry.len < STREAM_HEADER_BYTES as u64 {
                        return Err(corrupt(i, "enec payload shorter than a stream header"));
                    }
                    if entry.checksum != 0 {
                        return Err(corrupt(i, "enec piece with a raw checksum"));
                    }
                    if dtype_from_safetensors(entry.dtype).is_none() {
                        return Err(corrupt(i, "enec piece whose dtype enec does not code"));
                    }
                }
            }
            i += 1;
        }
        if !rest.is_empty() {
            return Err(corrupt(INDEX_HEADER, "bytes after the last entry"));
        }
        if original != header.original_len {
            return Err(corrupt(
                INDEX_HEADER,
                "pieces do not add up to the original length",
            ));
        }
        if pad32(container) != footer.index_offset {
            return Err(corrupt(
                INDEX_HEADER,
                "the index does not follow the last payload",
            ));
        }
        Ok(parsed)
    }

    /// Number of entries.
    pub fn entry_count(&self) -> u64 {
        self.entry_count
    }

    /// Length of the original file.
    pub fn original_len(&self) -> u64 {
        self.original_len
    }

    /// Byte offset of the index in the container (where the payloads end).
    pub fn index_offset(&self) -> u64 {
        self.index_offset
    }

    /// The entries in file order, each with its number.
    pub fn entries(&self) -> Entries<'a> {
        Entries {
            rest: self.entries,
            next: 0,
            count: self.entry_count,
            len: self.entries.len(),
        }
    }

    /// The first tensor named `name`, with its entry number.
    pub fn find(&self, name: &str) -> Option<(u64, Entry<'a>)> {
        self.entries()
            .find(|(_, e)| e.is_tensor() && e.name == name)
    }

    /// The entries from entry number `number` on, which starts `position` bytes into the
    /// entries ([`Entries::position`] of an iterator that was about to yield it): a reader that
    /// records those two numbers per entry finds any entry in constant time. A position that no
    /// iterator gave yields nothing or entries that do not match the index (never a panic).
    pub fn entries_from(&self, number: u64, position: usize) -> Entries<'a> {
        Entries {
            rest: self.entries.get(position..).unwrap_or(&[]),
            next: number,
            count: self.entry_count,
            len: self.entries.len(),
        }
    }
}

/// Iterator over the entries of an [`Index`] (checked when the index was parsed).
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    rest: &'a [u8],
    next: u64,
    count: u64,
    /// Bytes of all the entries (`rest` is their tail).
    len: usize,
}

impl Entries<'_> {
    /// Where the next entry starts, in bytes from the first entry: with its number, what
    /// [`Index::entries_from`] takes to resume here.
    pub fn position(&self) -> usize {
        self.len - self.rest.len()
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = (u64, Entry<'a>);

    fn next(&mut self) -> Option<(u64, Entry<'a>)> {
        if self.next >= self.count {
            return None;
        }
        // Index::parse decoded every entry already, so this cannot fail; stop if it does.
        let (entry, rest) = Entry::decode(self.rest, self.next).ok()?;
        self.rest = rest;
        self.next += 1;
        Some((self.next - 1, entry))
    }
}

/// A whole container in memory (or memory-mapped).
#[derive(Clone, Copy, Debug)]
pub struct Container<'a> {
    file: &'a [u8],
    index: Index<'a>,
}

impl<'a> Container<'a> {
    /// Checks the header, the footer, the index and all padding of `file`. Payloads are checked
    /// when they are decoded.
    pub fn parse(file: &'a [u8]) -> Result<Container<'a>> {
        parse_header(file)?;
        let len = file.len() as u64;
        let tail = file
            .len()
            .checked_sub(FOOTER_BYTES)
            .and_then(|at| file.get(at..))
            .unwrap_or(&[]);
        let footer = Footer::parse(tail, len)?;
        // Footer::parse checked index_offset + index_len <= len - 32.
        let index_bytes = &file[footer.index_offset as usize..][..footer.index_len as usize];
        let index = Index::parse(index_bytes, &footer)?;
        let zero = |from: u64, to: u64| file[from as usize..to as usize].iter().all(|&b| b == 0);
        let mut end = HEADER_BYTES as u64;
        for (i, entry) in index.entries() {
            if !zero(end, entry.offset) {
                return Err(ContainerError::CorruptIndex {
                    entry: i,
                    reason: "padding before the payload is not zero",
                });
            }
            end = entry.offset + entry.len;
        }
        let index_end = footer.index_offset + footer.index_len;
        if !zero(end, footer.index_offset) || !zero(index_end, len - FOOTER_BYTES as u64) {
            return Err(ContainerError::CorruptIndex {
                entry: INDEX_HEADER,
                reason: "padding around the index is not zero",
            });
        }
        Ok(Container { file, index })
    }

    /// The index.
    pub fn index(&self) -> &Index<'a> {
        &self.index
    }

    /// The entries in file order, each with its number.
    pub fn entries(&self) -> Entries<'a> {
        self.index.entries()
    }

    /// The first tensor named `name`, with its entry number.
    pub fn find(&self, name: &str) -> Option<(u64, Entry<'a>)> {
        self.index.find(name)
    }

    /// Length of the original file.
    pub fn original_len(&self) -> u64 {
        self.index.original_len()
    }

    /// The raw entry whose original bytes hold `original_len` bytes at `original_offset` (the
    /// whole range), with its number: where a tensor that has no entry of its own lies (a small
    /// tensor kept in a run of verbatim bytes, FORMAT.md 9.6). Its bytes are
    /// `original_offset - entry.original_offset` bytes into the payload.
    pub fn verbatim_at(&self, original_offset: u64, original_len: u64) -> Option<(u64, Entry<'a>)> {
        let end = original_offset.checked_add(original_len)?;
        self.entries().find(|(_, e)| {
            e.kind == PieceKind::Raw
                && e.original_offset <= original_offset
                && end <= e.original_offset + e.original_len
        })
    }

    /// The payload bytes of `entry` (verbatim bytes or an enec stream).
    pub fn payload(&self, entry: &Entry<'_>) -> &'a [u8] {
        // Index::parse checked offset + len <= index_offset <= file length.
        &self.file[entry.offset as usize..(entry.offset + entry.len) as usize]
    }

    /// Restores the original bytes of entry number `number` into the start of `out` (which needs
    /// `entry.original_len` bytes), verifying checksums; returns the bytes written.
    pub fn decode_entry(&self, number: u64, entry: &Entry<'_>, out: &mut [u8]) -> Result<usize> {
        decode_payload(number, entry, self.payload(entry), out)
    }
}

/// Restores entry number `number` from its `payload` (the `entry.len` bytes at `entry.offset`)
/// into the start of `out`, verifying checksums; for readers that load payloads themselves.
pub fn decode_payload(
    number: u64,
    entry: &Entry<'_>,
    payload: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    if payload.len() as u64 != entry.len {
        return Err(ContainerError::Truncated {
            needed: entry.len,
            available: payload.len() as u64,
        });
    }
    let out = entry.original_in(number, out)?;
    let len = out.len();
    let stream_error = |error| ContainerError::Stream {
        entry: number,
        error,
    };
    match entry.kind {
        PieceKind::Raw => {
            out.copy_from_slice(payload);
            if h32(out) != entry.checksum {
                return Err(ContainerError::RawChecksumMismatch { entry: number });
            }
        }
        PieceKind::Enec => {
            check_stream(number, entry, payload)?;
            crate::oneshot::decode(payload, out).map_err(stream_error)?;
        }
    }
    Ok(len)
}

/// Checks that the stream header of an enec piece agrees with its entry (dtype and decoded
/// length); returns the stream header.
pub fn check_stream(
    number: u64,
    entry: &Entry<'_>,
    payload: &[u8],
) -> Result<crate::format::StreamInfo> {
    let info = crate::oneshot::read_header(payload).map_err(|error| ContainerError::Stream {
        entry: number,
        error,
    })?;
    if Some(info.dtype) != dtype_from_safetensors(entry.dtype) {
        return Err(ContainerError::CorruptIndex {
            entry: number,
            reason: "the stream's dtype differs from the entry's",
        });
    }
    if info.decoded_bytes() != entry.original_len {
        return Err(ContainerError::CorruptIndex {
            entry: number,
            reason: "the stream decodes to a length other than the entry's",
        });
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::{encode, max_encoded_size, EncodeOptions};

    /// An original "file" and its pieces: (name, dtype, shape, bytes, encode as enec?).
    type Piece = (&'static str, &'static str, Vec<u64>, Vec<u8>, Option<Dtype>);

    fn weights(n: usize, seed: u32) -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let x = ((i as f32 + seed as f32) * 0.37).sin() * 0.05;
                half::bf16::from_f32(x).to_bits().to_le_bytes()
            })
            .collect()
    }

    fn pieces() -> Vec<Piece> {
        vec![
            ("", "", vec![], b"{\"header\": 1}   ".to_vec(), None),
            (
                "a.weight",
                "BF16",
                vec![40, 100],
                weights(4000, 1),
                Some(Dtype::Bf16),
            ),
            (
                "ids",
                "I64",
                vec![3],
                vec![
                    1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
                ],
                None,
            ),
            ("", "", vec![], vec![0xAB; 5], None),
            (
                "b.bias",
                "BF16",
                vec![3000],
                weights(3000, 7),
                Some(Dtype::Bf16),
            ),
            ("empty", "F32", vec![0], vec![], None),
        ]
    }

    /// Writes a container the way a streaming writer would; returns it and the original.
    fn build(pieces: &[Piece]) -> (Vec<u8>, Vec<u8>) {
        let mut file = header_bytes().to_vec();
        let mut original = Vec::new();
        let mut index = vec![0u8; 20];
        let n = encode_index_header(
            pieces.iter().map(|p| p.3.len() as u64).sum(),
            pieces.len() as u64,
            &mut index,
        )
        .unwrap();
        index.truncate(n);
        for (name, dtype, shape, bytes, enec) in pieces {
            file.resize(pad32(file.len() as u64) as usize, 0);
            let offset = file.len() as u64;
            let entry = match enec {
                None => {
                    file.extend_from_slice(bytes);
                    Entry::raw(
                        name,
                        dtype,
                        shape,
                        original.len() as u64,
                        bytes.len() as u64,
                        offset,
                        bytes,
                    )
                }
                Some(d) => {
                    let options = EncodeOptions::new(*d).frame_len(1024).unwrap();
                    let mut stream = vec![0u8; max_encoded_size(&options, bytes.len()).unwrap()];
                    let len = encode(&options, bytes, &mut stream).unwrap();
                    file.extend_from_slice(&stream[..len]);
                    Entry {
                        kind: PieceKind::Enec,
                        name,
                        dtype,
                        shape: shape.iter().copied().collect(),
                        original_offset: original.len() as u64,
                        original_len: bytes.len() as u64,
                        offset,
                        len: len as u64,
                        checksum: 0,
                    }
                }
            };
            original.extend_from_slice(bytes);
            let mut buf = vec![0u8; entry.max_encoded_len()];
            let n = entry.encode(&mut buf).unwrap();
            index.extend_from_slice(&buf[..n]);
        }
        file.resize(pad32(file.len() as u64) as usize, 0);
        let index_offset = file.len() as u64;
        file.extend_from_slice(&index);
        file.resize(pad32(file.len() as u64) as usize, 0);
        file.extend_from_slice(&Footer::new(index_offset, &index).to_bytes());
        (file, original)
    }

    fn restore(file: &[u8]) -> Result<Vec<u8>> {
        let c = Container::parse(file)?;
        let mut out = vec![0u8; c.original_len() as usize];
        for (i, e) in c.entries() {
            let at = e.original_offset as usize;
            c.decode_entry(i, &e, &mut out[at..])?;
        }
        Ok(out)
    }

    /// An entry's failing stream is the container error's source: the codec's own error.
    #[test]
    fn stream_errors_are_the_source() {
        use core::error::Error as _;
        let nested = ContainerError::Stream {
            entry: 3,
            error: Error::BadMagic,
        };
        let source = nested.source().and_then(|e| e.downcast_ref::<Error>());
        assert_eq!(source, Some(&Error::BadMagic));
        assert!(ContainerError::MissingFooter.source().is_none());
    }

    #[test]
    fn round_trip() {
        let (file, original) = build(&pieces());
        assert_eq!(file.len() % 32, 0);
        assert!(file.len() < original.len(), "bf16 weights should compress");
        assert_eq!(restore(&file).unwrap(), original);
        let c = Container::parse(&file).unwrap();
        assert_eq!(c.index().entry_count(), 6);
        let names: Vec<&str> = c.entries().map(|(_, e)| e.name).collect();
        assert_eq!(names, ["", "a.weight", "ids", "", "b.bias", "empty"]);
    }

    /// A tensor named "" is a tensor (told from gaps by its dtype), raw or enec alike.
    #[test]
    fn tensors_named_empty() {
        let mut pieces = pieces();
        pieces[1].0 = "";
        pieces[2].0 = "";
        let (file, original) = build(&pieces);
        assert_eq!(restore(&file).unwrap(), original);
        let c = Container::parse(&file).unwrap();
        let tensors: Vec<(&str, &str)> = c
            .entries()
            .filter(|(_, e)| e.is_tensor())
            .map(|(_, e)| (e.name, e.dtype))
            .collect();
        assert_eq!(
            tensors,
            [
                ("", "BF16"),
                ("", "I64"),
                ("b.bias", "BF16"),
                ("empty", "F32")
            ]
        );
        let (i, e) = c.find("").unwrap();
        assert_eq!((i, e.kind), (1, PieceKind::Enec));
        assert!(!c.entries().next().unwrap().1.is_tensor());
    }

    #[test]
    fn one_tensor_alone() {
        let pieces = pieces();
        let (file, _) = build(&pieces);
        let c = Container::parse(&file).unwrap();
        let (i, e) = c.find("b.bias").unwrap();
        assert_eq!(i, 4);
        assert_eq!(
            (e.kind, e.dtype, &e.shape[..]),
            (PieceKind::Enec, "BF16", &[3000u64][..])
        );
        // Decode from the payload alone, as a loader that read only those bytes would.
        let payload = file[e.offset as usize..(e.offset + e.len) as usize].to_vec();
        let mut out = vec![0u8; e.original_len as usize];
        decode_payload(i, &e, &payload, &mut out).unwrap();
        assert_eq!(out, pieces[4].3);
        assert!(c.find("missing").is_none());
        let mut small = vec![0u8; 10];
        assert_eq!(
            c.decode_entry(i, &e, &mut small),
            Err(ContainerError::OutputTooSmall { needed: 6000 })
        );
    }

    /// Every entry is found again from its number and position, alone.
    #[test]
    fn entries_resume_from_a_position() {
        let (file, _) = build(&pieces());
        let c = Container::parse(&file).unwrap();
        let mut entries = c.entries();
        let mut seen = 0;
        loop {
            let position = entries.position();
            let Some((number, entry)) = entries.next() else {
                break;
            };
            let again = c.index().entries_from(number, position).next();
            assert_eq!(again, Some((number, entry)));
            seen += 1;
        }
        assert_eq!(seen, 6);
        // A position past the end yields nothing rather than panicking.
        assert_eq!(c.index().entries_from(0, usize::MAX).next(), None);
    }

    #[test]
    fn empty_container() {
        let (file, original) = build(&[]);
        assert_eq!(file.len(), 64 + 32);
        assert!(original.is_empty());
        assert_eq!(restore(&file).unwrap(), original);
    }

    #[test]
    fn truncation_is_an_error() {
        let (file, _) = build(&pieces());
        for len in 0..file.len() {
            let err = restore(&file[..len]).unwrap_err();
            if len >= 64 {
                assert!(
                    matches!(
                        err,
                        ContainerError::MissingFooter | ContainerError::CorruptFooter(_)
                    ),
                    "{len}: {err:?}"
                );
            }
        }
        let mut longer = file.clone();
        longer.extend_from_slice(&[0u8; 32]);
        assert!(restore(&longer).is_err());
    }

    #[test]
    fn corrupt_index_is_an_error() {
        let (file, _) = build(&pieces());
        let footer = Footer::parse(&file[file.len() - 32..], file.len() as u64).unwrap();
        let start = footer.index_offset as usize;
        for at in start..start + footer.index_len as usize {
            let mut bad = file.clone();
            bad[at] ^= 0x10;
            assert_eq!(
                restore(&bad).unwrap_err(),
                ContainerError::IndexChecksumMismatch,
                "flip at {at}"
            );
        }
    }

    #[test]
    fn inconsistent_index_with_a_valid_checksum_is_an_error() {
        let mut pieces = pieces();
        let (file, _) = build(&pieces);
        // Rewrite the index with one wrong field at a time, and a matching checksum.
        let c = Container::parse(&file).unwrap();
        let entries: Vec<Entry> = c.entries().map(|(_, e)| e).collect();
        type Change = fn(&mut Entry);
        let cases: [(usize, Change); 6] = [
            (1, |e| e.original_offset += 1),
            (1, |e| e.offset += 32),
            (2, |e| e.len += 1),
            (4, |e| e.len = 8),
            (4, |e| e.dtype = "I64"),
            (4, |e| e.checksum = 5),
        ];
        for (which, change) in cases {
            let mut entries = entries.clone();
            change(&mut entries[which]);
            let mut index = vec![0u8; 20];
            let n =
                encode_index_header(c.original_len(), entries.len() as u64, &mut index).unwrap();
            index.truncate(n);
            for e in &entries {
                let mut buf = vec![0u8; e.max_encoded_len()];
                let n = e.encode(&mut buf).unwrap();
                index.extend_from_slice(&buf[..n]);
            }
            let footer = Footer::parse(&file[file.len() - 32..], file.len() as u64).unwrap();
            let err = Index::parse(&index, &Footer::new(footer.index_offset, &index)).unwrap_err();
            assert!(
                matches!(err, ContainerError::CorruptIndex { .. }),
                "{err:?}"
            );
        }
        // An unknown piece kind is named as such.
        pieces.truncate(1);
        let (mut file, _) = build(&pieces);
        let footer = Footer::parse(&file[file.len() - 32..], file.len() as u64).unwrap();
        let at = footer.index_offset as usize + 2; // after the two one-byte varints of the header
        file[at] = 7;
        let index = file[at - 2..][..footer.index_len as usize].to_vec();
        let n = file.len();
        file[n - 32..].copy_from_slice(&Footer::new(footer.index_offset, &index).to_bytes());
        assert_eq!(
            Container::parse(&file).unwrap_err(),
            ContainerError::UnsupportedPieceKind { entry: 0, kind: 7 }
        );
    }

    #[test]
    fn corrupt_payloads_are_caught() {
        let (file, _) = build(&pieces());
        let c = Container::parse(&file).unwrap();
        let (_, raw) = c.find("ids").unwrap();
        let (_, enec) = c.find("a.weight").unwrap();
        let mut bad = file.clone();
        bad[raw.offset as usize + 3] ^= 1;
        assert_eq!(
            restore(&bad).unwrap_err(),
            ContainerError::RawChecksumMismatch { entry: 2 }
        );
        // A byte in the middle of the first frame's body: a checksum or a corrupt-frame error.
        let mut bad = file.clone();
        bad[enec.offset as usize + 32 + 32 + 100] ^= 0x40;
        assert!(matches!(
            restore(&bad).unwrap_err(),
            ContainerError::Stream { entry: 1, .. }
        ));
        // Header, padding, footer.
        for at in [
            0usize,
            5,
            20,
            raw.offset as usize + raw.len as usize,
            file.len() - 10,
            file.len() - 1,
        ] {
            let mut bad = file.clone();
            bad[at] ^= 0x01;
            assert!(restore(&bad).is_err(), "flip at {at}");
        }
    }

    #[test]
    fn arbitrary_flips_never_panic() {
        let (file, original) = build(&pieces());
        let mut state = 0x1234_5678u32;
        for _ in 0..3000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let mut bad = file.clone();
            let at = state as usize % bad.len();
            bad[at] ^= 1 << (state >> 29);
            // Flips in a stream's frames are caught by the frame checksums; flips elsewhere by
            // the header, footer and index checks. Either way: an error, never wrong bytes.
            if let Ok(out) = restore(&bad) {
                assert_eq!(out, original, "flip at {at} returned different bytes");
            }
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut state = 0x9E37_79B9u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for _ in 0..5000 {
            let len = (next() % 600) as usize;
            let mut file: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Make the magic bytes and the header right often, so the parser gets further.
            if len >= 64 && next() % 2 == 0 {
                file[..32].copy_from_slice(&header_bytes());
                let n = file.len();
                file[n - 4..].copy_from_slice(&MAGIC);
            }
            if let Ok(c) = Container::parse(&file) {
                for (i, e) in c.entries() {
                    let mut out = vec![0u8; (e.original_len as usize).min(1 << 20)];
                    let _ = c.decode_entry(i, &e, &mut out);
                }
            }
        }
    }

    #[test]
    fn too_many_dimensions_is_corrupt() {
        let mut index = vec![0u8; 64];
        // kind 0, name "", dtype "", shape of 17 dims (each 1)
        let mut n = encode_index_header(0, 1, &mut index).unwrap();
        index[n..n + 4].copy_from_slice(&[0, 0, 0, 17]);
        n += 4;
        for _ in 0..17 {
            index[n] = 1;
            n += 1;
        }
        index[n..n + 5].copy_from_slice(&[0, 0, 32, 0, 0]);
        n += 5;
        index.truncate(n);
        let footer = Footer::new(32, &index);
        assert!(matches!(
            Index::parse(&index, &footer),
            Err(ContainerError::CorruptIndex { entry: 0, .. })
        ));
    }
}
