//! The CLI's two conversions: a safetensors file into a checkpoint container (`enec compress`)
//! and an enec file back into the original bytes (`enec decompress`), byte for byte the same.

use std::io::{Seek, SeekFrom, Write};
use std::sync::{Mutex, PoisonError};

use enec::container::{self, Container, PieceKind, PieceMeta, Writer, MAGIC as CONTAINER_MAGIC};
use enec::format::{MAGIC as STREAM_MAGIC, STREAM_HEADER_BYTES};
use enec::parallel::{self, Restored};
use enec::EncodeOptions;

use crate::decode;
use crate::safetensors::{self, Piece};

/// Why a conversion failed: the input (a message naming the file and the piece), or writing.
#[derive(Debug)]
pub enum Failure {
    /// The input is not what it should be, or could not be coded.
    Input(String),
    /// Writing the output failed.
    Write(std::io::Error),
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Input(message)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Write(e)
    }
}

/// Writes the container (FORMAT.md section 9) of the safetensors file `data` to `out`: its
/// tensors of BF16, F16 and F32 as enec streams, every other byte verbatim; returns its size.
/// Memory: one tensor's stream at a time. `name` is the file, for messages.
pub fn compress<W: Write>(
    name: &str,
    data: &[u8],
    options: &EncodeOptions,
    threads: usize,
    out: W,
) -> Result<u64, Failure> {
    if data.starts_with(&CONTAINER_MAGIC) || data.starts_with(&STREAM_MAGIC) {
        return Err(format!(
            "{name}: already an enec file (use enec.decompress_file or enec.safe_open)"
        )
        .into());
    }
    let tensors = safetensors::parse(data).map_err(|why| format!("{name}: {why}"))?;
    let pieces = safetensors::plan(data.len() as u64, tensors);
    let all = safetensors::every_tensor_indexed(&pieces);
    let mut writer = Writer::new(out)?;
    let mut stream = Vec::new();
    for piece in &pieces {
        let bytes = &data[piece.start as usize..piece.end as usize];
        write_piece(
            name,
            &mut writer,
            piece,
            bytes,
            all,
            options,
            threads,
            &mut stream,
        )?;
    }
    Ok(writer.finish()?)
}

/// Writes `piece` of the original file, whose bytes are `bytes`, to `writer` as FORMAT.md 9.6
/// says: BF16, F16 and F32 tensors encoded (in `stream`, grown to the largest one) and kept as
/// streams where [`container::keeps_stream`] says so, other pieces verbatim, in a piece of their
/// own where [`container::own_raw_piece`] says so (`all`: every tensor does, as
/// [`safetensors::every_tensor_indexed`] decided for the file), else in the run of verbatim
/// bytes. `name` is the file, for messages.
#[allow(clippy::too_many_arguments)]
pub fn write_piece<W: Write>(
    name: &str,
    writer: &mut Writer<W>,
    piece: &Piece,
    bytes: &[u8],
    all: bool,
    options: &EncodeOptions,
    threads: usize,
    stream: &mut Vec<u8>,
) -> Result<(), Failure> {
    let (tensor, dtype, shape) = piece.tensor.as_ref().map_or(("", "", &[][..]), |t| {
        (t.name.as_str(), t.dtype.as_str(), t.shape.as_slice())
    });
    let original_len = piece.end - piece.start;
    let rank = shape.len();
    let meta = |kind, checksum| PieceMeta {
        kind,
        name: tensor,
        dtype,
        shape,
        original_len,
        checksum,
    };
    let smallest = 2 * STREAM_HEADER_BYTES as u64;
    if let Some(enec_dtype) = piece.enec {
        if container::keeps_stream(smallest, original_len, tensor, dtype, rank) {
            let options = EncodeOptions {
                dtype: enec_dtype,
                ..*options
            };
            let failed = |e: enec::Error| format!("{name}: {}: {e}", what(piece));
            let bound = enec::max_encoded_size(&options, bytes.len()).map_err(failed)?;
            if stream.len() < bound {
                stream.resize(bound, 0);
            }
            let n =
                decode::encode(&options, bytes, &mut stream[..bound], threads).map_err(failed)?;
            if container::keeps_stream(n as u64, original_len, tensor, dtype, rank) {
                writer.begin()?;
                writer.payload(&stream[..n])?;
                writer.end(meta(PieceKind::Enec, 0))?;
                return Ok(());
            }
        }
    }
    if piece.tensor.is_some() && container::own_raw_piece(all, original_len, tensor, dtype, rank) {
        writer.begin()?;
        writer.payload(bytes)?;
        writer.end(meta(PieceKind::Raw, enec::wrapped::piece_checksum(bytes)))?;
    } else {
        writer.verbatim(bytes)?;
    }
    Ok(())
}

/// How the messages name a piece of the original file.
fn what(piece: &Piece) -> String {
    match &piece.tensor {
        Some(t) => format!("tensor \"{}\"", t.name),
        None => format!("bytes {}..{}", piece.start, piece.end),
    }
}

/// Decoded bytes per run a thread restores and writes at its place.
const CHUNK_BYTES: usize = 4 << 20;

/// A failure while restoring: decoding (`D`, the library's error) or writing.
enum Restore<D> {
    Decode(D),
    Write(std::io::Error),
}

impl<D> From<D> for Restore<D> {
    fn from(e: D) -> Restore<D> {
        Restore::Decode(e)
    }
}

/// Restores the original of the enec file `data` (a container or a bare stream) into `out`,
/// every checksum verified: threads decode runs of [`CHUNK_BYTES`] and write each at its
/// place, so memory stays a few runs whatever the size. Returns the original's length.
/// `name` is the file, for messages.
pub fn decompress<F: Write + Seek + Send>(
    name: &str,
    data: &[u8],
    threads: usize,
    out: F,
) -> Result<u64, Failure> {
    let out = Mutex::new(out);
    fn write_at<F: Write + Seek, D>(
        out: &Mutex<F>,
        at: u64,
        bytes: &[u8],
    ) -> Result<(), Restore<D>> {
        let mut out = out.lock().unwrap_or_else(PoisonError::into_inner);
        out.seek(SeekFrom::Start(at))
            .and_then(|_| out.write_all(bytes))
            .map_err(Restore::Write)
    }
    let restored = if data.starts_with(&CONTAINER_MAGIC) {
        let container = Container::parse(data).map_err(|e| format!("{name}: {e}"))?;
        let write = |run: Restored<'_>| write_at(&out, run.at, run.bytes);
        parallel::decode_container_with(&container, threads, CHUNK_BYTES, write)
            .map(|()| container.original_len())
            .map_err(|failure| match failure {
                Restore::Decode(e) => Failure::Input(decode::message(name, &container, e)),
                Restore::Write(e) => Failure::Write(e),
            })?
    } else if data.starts_with(&STREAM_MAGIC) {
        let write = |run: Restored<'_>| write_at(&out, run.at, run.bytes);
        parallel::decode_with(data, threads, CHUNK_BYTES, write).map_err(
            |failure| match failure {
                Restore::Decode(e) => Failure::Input(format!("{name}: {e}")),
                Restore::Write(e) => Failure::Write(e),
            },
        )?
    } else {
        return Err(not_enec(name, data).into());
    };
    out.into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .flush()?;
    Ok(restored)
}

/// Why `data`, which starts with neither magic, is not an enec file.
pub fn not_enec(name: &str, data: &[u8]) -> String {
    if data.is_empty() {
        return format!("{name}: empty file, not an enec file");
    }
    let hint = if safetensors::parse(data).is_ok() {
        " (it is a safetensors file: enec.compress_file makes an .enec file of it)"
    } else {
        ""
    };
    format!(
        "{name}: not an enec file: it starts with neither `ENCP` (checkpoint) nor `ENEC` (stream){hint}"
    )
}
