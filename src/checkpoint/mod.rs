//! Checkpoints (feature `std`): a safetensors file into a container (FORMAT.md section 9) and
//! back, on several threads.
//!
//! - [`safetensors`] reads the header of a safetensors file and plans its pieces
//!   ([`safetensors::plan`]: which bytes become enec streams, which stay verbatim).
//! - [`open`] recognizes an enec file (a container or a bare stream) and says why another file
//!   is not one; [`plan_file`] does the same for a safetensors file.
//! - [`compress`] writes the container of a planned file through [`container::Writer`];
//!   [`compress_raw`] writes the bare stream of a raw array; [`write_piece`] writes one piece,
//!   for a writer that receives the file's bytes in parts.
//! - [`restore_with`] and [`restore`] give the original bytes back, every checksum verified;
//!   [`describe_error`] names the piece an error lies in.
//! - [`unindexed`] finds the tensors that have no index entry of their own (small ones kept in
//!   runs of verbatim bytes), through the safetensors header.
//! - [`folder`] plans a model folder's compression or restore, file by file (sharded
//!   checkpoints and the files beside them).
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::io::Cursor;
//! use enec::checkpoint::{self, safetensors};
//!
//! let weights: Vec<u8> = (0..4096u32).flat_map(|i| half::bf16::from_f32((i as f32).sin() * 0.02).to_le_bytes()).collect();
//! let file = safetensors::write(&[("w", "BF16", vec![64, 64], &weights)], &BTreeMap::new());
//!
//! let pieces = checkpoint::plan_file(&file)?;
//! let mut packed = Vec::new();
//! let options = enec::EncodeOptions::new(enec::Dtype::Bf16);
//! let summary = checkpoint::compress(&file, &pieces, &options, 0, &mut packed, &|_| {})?;
//! assert_eq!((summary.tensors, summary.encoded), (1, 1));
//! assert!(packed.len() < file.len());
//!
//! let mut restored = Cursor::new(Vec::new());
//! let kind = checkpoint::open(&packed)?;
//! checkpoint::restore(&packed, &kind, 0, &mut restored)?;
//! assert_eq!(restored.into_inner(), file);
//! # Ok::<(), checkpoint::Error>(())
//! ```

pub mod folder;
pub mod safetensors;
mod unindexed;

pub use unindexed::{unindexed, Unindexed, UnindexedError};

use core::fmt;
use std::io::{self, Seek, SeekFrom, Write};
use std::prelude::rust_2021::*;
use std::sync::{Mutex, PoisonError};
use std::{format, iter};

use crate::container::{self, Container, ContainerError, PieceKind, PieceMeta, Writer};
use crate::format::{StreamInfo, MAGIC as STREAM_MAGIC, STREAM_HEADER_BYTES};
use crate::parallel::{self, Restored};
use crate::wrapped::{piece_checksum, FrameEncoder};
use crate::{Dtype, EncodeOptions};
use safetensors::{NotSafetensors, Piece};

/// Decoded bytes each thread holds at a time on the way to the output ([`restore_with`]):
/// whole frames that stay in its cache until they are written.
pub const CHUNK_BYTES: usize = 256 << 10;

/// Why a checkpoint could not be read, written or restored.
#[derive(Debug)]
pub enum Error {
    /// An empty file where an enec file was expected.
    Empty,
    /// A file that starts with neither magic; `safetensors` tells whether it reads as a
    /// safetensors file (to be compressed first).
    NotEnec {
        /// The file is a safetensors file.
        safetensors: bool,
    },
    /// An enec file where a safetensors file was expected.
    AlreadyEnec,
    /// A file that is not a safetensors file, or a damaged one.
    NotSafetensors(NotSafetensors),
    /// A container that does not parse, or a piece of it that does not restore.
    Container(ContainerError),
    /// A bare stream that does not parse or decode.
    Stream(crate::Error),
    /// A piece could not be encoded.
    Encode {
        /// The piece: `tensor "name"` or `bytes a..b`.
        what: String,
        /// Why.
        error: crate::Error,
    },
    /// Writing the output failed.
    Write(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty => f.write_str("empty file, not an enec file"),
            Error::NotEnec { .. } => f.write_str(
                "not an enec file: it starts with neither `ENCP` (checkpoint) nor `ENEC` (stream)",
            ),
            Error::AlreadyEnec => f.write_str("already an enec file"),
            Error::NotSafetensors(why) => why.fmt(f),
            Error::Container(e) => e.fmt(f),
            Error::Stream(e) => e.fmt(f),
            Error::Encode { what, error } => write!(f, "{what}: {error}"),
            Error::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<ContainerError> for Error {
    fn from(e: ContainerError) -> Error {
        Error::Container(e)
    }
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Error {
        Error::Stream(e)
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Write(e)
    }
}

/// `error` of `container` in words that name the piece it lies in, where it lies in one:
/// `tensor "name": checksum mismatch in frame 4`, `the file header (bytes 0..4096): checksum
/// mismatch in the verbatim bytes of entry 0: the file is corrupt`.
pub fn describe_error(container: &Container<'_>, error: ContainerError) -> String {
    let entry = error
        .entry()
        .and_then(|n| container.entries().nth(n.try_into().unwrap_or(usize::MAX)));
    match (entry, error) {
        (Some((_, e)), ContainerError::Stream { error, .. }) => {
            format!("{}: {error}", e.describe())
        }
        (Some((_, e)), error) => format!("{}: {error}", e.describe()),
        (None, error) => error.to_string(),
    }
}

/// What an enec file is.
pub enum Kind<'a> {
    /// A checkpoint container.
    Container(Container<'a>),
    /// A bare enec stream (a compressed raw array).
    Stream(StreamInfo),
}

impl Kind<'_> {
    /// Bytes of the original: of the file the container holds, or decoded from the stream.
    pub fn original_len(&self) -> u64 {
        match self {
            Kind::Container(c) => c.original_len(),
            Kind::Stream(info) => info.decoded_bytes(),
        }
    }
}

/// Recognizes and checks the enec file `data`: its header, and a container's index.
pub fn open(data: &[u8]) -> Result<Kind<'_>, Error> {
    if data.starts_with(&container::MAGIC) {
        Ok(Kind::Container(Container::parse(data)?))
    } else if data.starts_with(&STREAM_MAGIC) {
        Ok(Kind::Stream(crate::read_header(data)?))
    } else {
        Err(not_enec(data))
    }
}

/// Why `data`, which starts with neither magic, is not an enec file: [`Error::Empty`] or
/// [`Error::NotEnec`].
pub fn not_enec(data: &[u8]) -> Error {
    if data.is_empty() {
        Error::Empty
    } else {
        Error::NotEnec {
            safetensors: safetensors::parse(data).is_ok(),
        }
    }
}

/// The pieces of the safetensors file `data` ([`safetensors::plan`]), or why it is not one.
pub fn plan_file(data: &[u8]) -> Result<Vec<Piece>, Error> {
    if data.starts_with(&container::MAGIC) || data.starts_with(&STREAM_MAGIC) {
        return Err(Error::AlreadyEnec);
    }
    let tensors = safetensors::parse(data).map_err(Error::NotSafetensors)?;
    Ok(safetensors::plan(data.len() as u64, tensors))
}

/// What [`compress`] wrote.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// Bytes written.
    pub compressed: u64,
    /// Tensors in the file.
    pub tensors: usize,
    /// Tensors kept as enec streams.
    pub encoded: usize,
}

/// A unit of compression work.
enum Unit<'a> {
    /// A verbatim piece: its checksum is computed in parallel, its bytes written in order.
    Raw(usize, &'a [u8]),
    /// A tensor below [`container::ALWAYS_ENEC_BYTES`] of a dtype enec codes: encoded whole by
    /// one thread, then kept as its stream or verbatim ([`container::keeps_stream`]).
    Whole(usize, Dtype, &'a [u8]),
    /// The start of an enec piece (its stream header).
    Start([u8; 32]),
    /// Frame `index` of an enec piece.
    Frame(FrameEncoder<'a>, u32),
    /// The end of an enec piece.
    End(usize),
}

fn frame_units<'a>(encoder: FrameEncoder<'a>) -> impl Iterator<Item = Result<Unit<'a>, Error>> {
    (0..encoder.frame_count()).map(move |index| Ok(Unit::Frame(encoder, index)))
}

/// Input bytes of a unit, to size the windows of work.
fn weight(unit: &Unit<'_>) -> usize {
    match unit {
        Unit::Raw(_, bytes) | Unit::Whole(_, _, bytes) => bytes.len(),
        Unit::Frame(encoder, index) => encoder.frame_input(*index).len(),
        _ => 0,
    }
}

/// Encodes frame `index` into `buffer`; returns its size.
fn encode_frame(
    encoder: &FrameEncoder<'_>,
    index: u32,
    buffer: &mut Vec<u8>,
) -> Result<usize, Error> {
    parallel::encode_frame(encoder, index, buffer).map_err(|error| Error::Encode {
        what: format!("frame {index}"),
        error,
    })
}

/// How messages name a piece of the original file.
fn what(piece: &Piece) -> String {
    match &piece.tensor {
        Some(t) => format!("tensor \"{}\"", t.name),
        None => format!("bytes {}..{}", piece.start, piece.end),
    }
}

/// The index fields of `piece`.
fn meta(piece: &Piece, kind: PieceKind, checksum: u32) -> PieceMeta<'_> {
    let (name, dtype, shape) = piece.tensor.as_ref().map_or(("", "", &[][..]), |t| {
        (t.name.as_str(), t.dtype.as_str(), t.shape.as_slice())
    });
    PieceMeta {
        kind,
        name,
        dtype,
        shape,
        original_len: piece.end - piece.start,
        checksum,
    }
}

/// Whether `meta`'s piece can be kept as a stream of `len` bytes ([`container::keeps_stream`]).
fn keeps_stream(len: u64, m: &PieceMeta<'_>) -> bool {
    container::keeps_stream(len, m.original_len, m.name, m.dtype, m.shape.len())
}

/// Encodes the tensor `bytes` of `piece` whole into `buffer` on `threads` threads; returns the
/// stream's size, or `None` when no stream of it can be kept ([`container::keeps_stream`]).
fn encode_whole(
    piece: &Piece,
    dtype: Dtype,
    bytes: &[u8],
    options: &EncodeOptions,
    threads: usize,
    buffer: &mut Vec<u8>,
) -> Result<Option<usize>, Error> {
    let smallest = 2 * STREAM_HEADER_BYTES as u64;
    if !keeps_stream(smallest, &meta(piece, PieceKind::Enec, 0)) {
        return Ok(None);
    }
    let options = EncodeOptions { dtype, ..*options };
    let failed = |error| Error::Encode {
        what: what(piece),
        error,
    };
    let max = crate::max_encoded_size(&options, bytes.len()).map_err(failed)?;
    if buffer.len() < max {
        buffer.resize(max, 0);
    }
    let len =
        parallel::encode_into(&options, bytes, &mut buffer[..max], threads).map_err(failed)?;
    Ok(Some(len))
}

/// Writes the verbatim `bytes` of `piece` to `writer`: in a piece of their own where
/// [`container::own_raw_piece`] says so (`all`: [`safetensors::every_tensor_indexed`] of the
/// file; `checksum`: theirs, if known), else in the run of verbatim bytes.
fn write_verbatim<W: Write>(
    writer: &mut Writer<W>,
    piece: &Piece,
    bytes: &[u8],
    all: bool,
    checksum: Option<u32>,
) -> io::Result<()> {
    if own_raw_piece(piece, all) {
        writer.begin()?;
        writer.payload(bytes)?;
        let checksum = checksum.unwrap_or_else(|| piece_checksum(bytes));
        writer.end(meta(piece, PieceKind::Raw, checksum))
    } else {
        writer.verbatim(bytes)
    }
}

/// Whether the verbatim `piece` gets an index entry of its own ([`container::own_raw_piece`]).
fn own_raw_piece(piece: &Piece, all: bool) -> bool {
    let m = meta(piece, PieceKind::Raw, 0);
    piece.tensor.is_some()
        && container::own_raw_piece(all, m.original_len, m.name, m.dtype, m.shape.len())
}

/// Writes `piece` of the original file, whose bytes are `bytes`, to `writer` as FORMAT.md 9.6
/// says: a tensor of a dtype enec codes encoded (in `stream`, grown to the largest one, on
/// `threads` threads) and kept as a stream where [`container::keeps_stream`] says so, every
/// other piece verbatim ([`container::own_raw_piece`]; `all`:
/// [`safetensors::every_tensor_indexed`] of the file). For a writer that receives the file in
/// parts; [`compress`] writes a whole file at once.
pub fn write_piece<W: Write>(
    writer: &mut Writer<W>,
    piece: &Piece,
    bytes: &[u8],
    all: bool,
    options: &EncodeOptions,
    threads: usize,
    stream: &mut Vec<u8>,
) -> Result<(), Error> {
    if let Some(dtype) = piece.enec {
        if let Some(n) = encode_whole(piece, dtype, bytes, options, threads, stream)? {
            let m = meta(piece, PieceKind::Enec, 0);
            if keeps_stream(n as u64, &m) {
                writer.begin()?;
                writer.payload(&stream[..n])?;
                writer.end(m)?;
                return Ok(());
            }
        }
    }
    Ok(write_verbatim(writer, piece, bytes, all, None)?)
}

/// Writes the container (FORMAT.md section 9) of the file `data`, cut into `pieces`
/// ([`plan_file`]), to `out`, on `threads` threads (0: all cores): its tensors of BF16, F16,
/// F32, F8_E4M3 and F8_E5M2 as enec streams, every other byte verbatim. Calls `done` with each part of `data`
/// once its output is written, in order (for progress, or to let go of the input's pages).
/// Memory: at most 8 MiB of input in flight ([`parallel::encode_with`]), whatever the file's
/// size.
pub fn compress<W: Write>(
    data: &[u8],
    pieces: &[Piece],
    options: &EncodeOptions,
    threads: usize,
    out: W,
    done: &dyn Fn(&[u8]),
) -> Result<Summary, Error> {
    let bytes_of = |p: &Piece| &data[p.start as usize..p.end as usize];
    let units = pieces.iter().enumerate().flat_map(|(i, piece)| {
        let bytes = bytes_of(piece);
        let units: Box<dyn Iterator<Item = Result<Unit<'_>, Error>>> = match piece.enec {
            None => Box::new(iter::once(Ok(Unit::Raw(i, bytes)))),
            Some(dtype) if (bytes.len() as u64) < container::ALWAYS_ENEC_BYTES => {
                Box::new(iter::once(Ok(Unit::Whole(i, dtype, bytes))))
            }
            Some(dtype) => match FrameEncoder::new(&EncodeOptions { dtype, ..*options }, bytes) {
                Ok(encoder) => Box::new(
                    iter::once(Ok(Unit::Start(encoder.header())))
                        .chain(frame_units(encoder))
                        .chain(iter::once(Ok(Unit::End(i)))),
                ),
                Err(error) => Box::new(iter::once(Err(Error::Encode {
                    what: what(piece),
                    error,
                }))),
            },
        };
        units
    });
    // A verbatim piece gets an entry of its own only when it is a tensor large enough
    // (container::own_raw_piece); the rest join one run of verbatim bytes.
    let all = safetensors::every_tensor_indexed(pieces);
    // The result of a unit's work: a checksum, a stream's size, or none.
    let work = |u: &Unit<'_>, buffer: &mut Vec<u8>| match u {
        Unit::Raw(i, bytes) if own_raw_piece(&pieces[*i], all) => {
            Ok(Some(piece_checksum(bytes) as usize))
        }
        Unit::Whole(i, dtype, bytes) => {
            encode_whole(&pieces[*i], *dtype, bytes, options, 1, buffer)
        }
        Unit::Frame(encoder, index) => encode_frame(encoder, *index, buffer).map(Some),
        _ => Ok(None),
    };
    let mut writer = Writer::new(out)?;
    let mut encoded = 0;
    let emit = |u: Unit<'_>, result: Option<usize>, buffer: &[u8]| -> Result<(), Error> {
        match u {
            Unit::Raw(i, bytes) => {
                let checksum = result.map(|c| c as u32);
                write_verbatim(&mut writer, &pieces[i], bytes, all, checksum)?;
                done(bytes);
            }
            Unit::Whole(i, _, bytes) => {
                let m = meta(&pieces[i], PieceKind::Enec, 0);
                match result.filter(|&n| keeps_stream(n as u64, &m)) {
                    Some(n) => {
                        writer.begin()?;
                        writer.payload(&buffer[..n])?;
                        writer.end(m)?;
                        encoded += 1;
                    }
                    None => write_verbatim(&mut writer, &pieces[i], bytes, all, None)?,
                }
                done(bytes);
            }
            Unit::Start(header) => {
                writer.begin()?;
                writer.payload(&header)?;
            }
            Unit::Frame(encoder, index) => {
                writer.payload(&buffer[..result.unwrap_or(0)])?;
                done(encoder.frame_input(index));
            }
            Unit::End(i) => {
                encoded += 1;
                writer.end(meta(&pieces[i], PieceKind::Enec, 0))?;
            }
        }
        Ok(())
    };
    parallel::ordered(units, threads, weight, work, emit)?;
    Ok(Summary {
        compressed: writer.finish()?,
        tensors: pieces.iter().filter(|p| p.tensor.is_some()).count(),
        encoded,
    })
}

/// Writes the bare enec stream of the raw little-endian array `data` (of `options.dtype`) to
/// `out` on `threads` threads ([`parallel::encode_with`]), calling `done` as [`compress`]
/// does; returns the stream's size.
pub fn compress_raw<W: Write>(
    data: &[u8],
    options: &EncodeOptions,
    threads: usize,
    mut out: W,
    done: &dyn Fn(&[u8]),
) -> Result<u64, Error> {
    let len = parallel::encode_with(options, data, threads, |bytes, input| {
        out.write_all(bytes)?;
        if !input.is_empty() {
            done(input);
        }
        Ok::<(), Error>(())
    })?;
    out.flush()?;
    Ok(len)
}

/// Restores the original of the enec file `data` (recognized as `kind` by [`open`]) on
/// `threads` threads (0: all cores), each decoding into a reused buffer of [`CHUNK_BYTES`],
/// and hands every restored run to `write` (from several threads, in no particular order: for
/// positioned writes). Every checksum is verified. Returns the original's length.
pub fn restore_with<W>(data: &[u8], kind: &Kind<'_>, threads: usize, write: W) -> Result<u64, Error>
where
    W: Fn(Restored<'_>) -> io::Result<()> + Sync,
{
    let write = |run: Restored<'_>| write(run).map_err(Error::Write);
    match kind {
        Kind::Container(c) => parallel::decode_container_with(c, threads, CHUNK_BYTES, write)
            .map(|()| c.original_len()),
        Kind::Stream(_) => parallel::decode_with(data, threads, CHUNK_BYTES, write),
    }
}

/// Restores the original of the enec file `data` (recognized as `kind` by [`open`]) into
/// `out` as [`restore_with`] does, every run written at its place; returns the original's
/// length.
pub fn restore<F: Write + Seek + Send>(
    data: &[u8],
    kind: &Kind<'_>,
    threads: usize,
    out: F,
) -> Result<u64, Error> {
    let out = Mutex::new(out);
    let restored = restore_with(data, kind, threads, |run| {
        let mut out = out.lock().unwrap_or_else(PoisonError::into_inner);
        out.seek(SeekFrom::Start(run.at))?;
        out.write_all(run.bytes)
    })?;
    out.into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .flush()?;
    Ok(restored)
}
