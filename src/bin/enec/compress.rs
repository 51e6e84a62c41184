//! `enec compress`: a safetensors checkpoint into a container, or a raw array into a stream.

use std::path::Path;
use std::time::Instant;

use std::io::Write;

use enec::container::{self, PieceKind, PieceMeta, Writer, MAGIC as CONTAINER_MAGIC};
use enec::format::MAGIC as STREAM_MAGIC;
use enec::wrapped::{piece_checksum, FrameEncoder};
use enec::{Dtype, EncodeOptions};

use crate::error::{bail, Result};
use crate::progress::Progress;
use crate::safetensors::{self, NotSafetensors, Piece};
use crate::{input, output, pipeline};

/// What a compression did.
#[derive(Clone, Debug)]
pub struct Report {
    /// Bytes read.
    pub original: u64,
    /// Bytes written.
    pub compressed: u64,
    /// Tensors in the checkpoint (0 for a raw array).
    pub tensors: usize,
    /// Tensors encoded as enec streams.
    pub encoded: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Report {
    /// One line for people.
    pub fn line(&self, input: &Path, output: &Path, threads: usize) -> String {
        let what = if self.tensors > 0 || self.encoded > 0 {
            format!(
                "safetensors, {} tensors, {} encoded",
                self.tensors, self.encoded
            )
        } else {
            "raw array".to_owned()
        };
        format!(
            "{} ({what}) -> {}: {} -> {} bytes, ratio {:.4}, {:.2} s, {:.0} MB/s, {threads} thread{}",
            input.display(),
            output.display(),
            self.original,
            self.compressed,
            self.original as f64 / self.compressed.max(1) as f64,
            self.seconds,
            self.original as f64 / 1e6 / self.seconds.max(1e-9),
            if threads == 1 { "" } else { "s" }
        )
    }
}

/// What `compress` was asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Raw array of this dtype, or (None) a safetensors file.
    pub dtype: Option<Dtype>,
    /// Coding, frame length and checksums (the dtype is per tensor).
    pub options: EncodeOptions,
    /// Worker threads.
    pub threads: usize,
    /// Show a progress bar (on a terminal, for long work).
    pub progress: bool,
    /// Overwrite the output.
    pub force: bool,
}

/// Compresses the file `input` into `output` (written atomically).
pub fn compress_file(input: &Path, output: &Path, settings: &Settings) -> Result<Report> {
    let start = Instant::now();
    let data = input::open(input)?;
    let name = input.display();
    let plan = match settings.dtype {
        Some(dtype) => {
            let eb = dtype.element_bytes();
            if data.len() % eb != 0 {
                bail!(
                    "{name}: {} bytes is not a whole number of {}-byte {} elements",
                    data.len(),
                    eb,
                    dtype.name()
                );
            }
            None
        }
        None => {
            if data.starts_with(&CONTAINER_MAGIC) || data.starts_with(&STREAM_MAGIC) {
                bail!("{name}: already an enec file (use `enec decompress` or `enec info`)");
            }
            let tensors = safetensors::parse(&data).map_err(|why| match why {
                NotSafetensors::OtherFormat(_) => format!(
                    "{name}: {why}\n  \
                     (to compress a raw little-endian array, pass --dtype bf16|fp16|fp32)"
                ),
                NotSafetensors::Damaged(_) => format!("{name}: {why}"),
            })?;
            Some(safetensors::plan(data.len() as u64, tensors))
        }
    };
    let mut out = output::AtomicFile::create(output, settings.force)?;
    let progress = Progress::new(data.len() as u64, "compress", settings.progress);
    // Input bytes are done once their output is written, in order.
    let release = input::Release::new(&data);
    let done = |bytes: &[u8]| {
        progress.inc(bytes.len() as u64);
        release.finished_slice(bytes);
    };
    let pool = thread_pool(settings.threads)?;
    let mut report = pool.install(|| match &plan {
        Some(pieces) => compress_pieces(&data, pieces, &settings.options, &mut out, &done),
        None => {
            let options = EncodeOptions {
                dtype: settings.dtype.unwrap_or(Dtype::Bf16),
                ..settings.options
            };
            compress_raw(&data, &options, &mut out, &done)
        }
    })?;
    drop(progress);
    out.commit()?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// A rayon pool of `threads` workers.
pub fn thread_pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("cannot start {threads} worker threads: {e}").into())
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
    /// Frame `index` of an enec piece (the thread that encodes it fetches the next frame's input
    /// meanwhile: the same thread most often encodes the next).
    Frame(FrameEncoder<'a>, u32),
    /// The end of an enec piece.
    End(usize),
}

fn frame_units<'a>(encoder: FrameEncoder<'a>) -> impl Iterator<Item = Result<Unit<'a>>> + 'a {
    (0..encoder.frame_count()).map(move |index| Ok(Unit::Frame(encoder, index)))
}

/// Input bytes of a unit, to size the pipeline's windows.
fn weight(unit: &Unit<'_>) -> usize {
    match unit {
        Unit::Raw(_, bytes) | Unit::Whole(_, _, bytes) => bytes.len(),
        Unit::Frame(encoder, index) => encoder.frame_input(*index).len(),
        _ => 0,
    }
}

/// Encodes one frame into `buffer`; returns its size.
fn encode_unit(encoder: &FrameEncoder<'_>, index: u32, buffer: &mut Vec<u8>) -> Result<usize> {
    let max = encoder.max_frame_bytes();
    if buffer.len() < max {
        buffer.resize(max, 0);
    }
    encoder
        .encode_frame(index, buffer)
        .map_err(|e| format!("encoding a frame: {e}").into())
}

fn encoder<'a>(dtype: Dtype, bytes: &'a [u8], options: &EncodeOptions) -> Result<FrameEncoder<'a>> {
    FrameEncoder::new(&EncodeOptions { dtype, ..*options }, bytes).map_err(|e| e.to_string().into())
}

/// Encodes the tensor `bytes` whole into `buffer`; returns the stream's size, or `usize::MAX`
/// when no stream of it can be kept (smaller than an empty stream and the piece's cost).
fn encode_whole(
    piece: &Piece,
    dtype: Dtype,
    bytes: &[u8],
    options: &EncodeOptions,
    buffer: &mut Vec<u8>,
) -> Result<usize> {
    let m = meta(piece, PieceKind::Enec, 0);
    let smallest = 2 * enec::format::STREAM_HEADER_BYTES as u64;
    if !container::keeps_stream(smallest, m.original_len, m.name, m.dtype, m.shape.len()) {
        return Ok(usize::MAX);
    }
    let options = EncodeOptions { dtype, ..*options };
    let failed = |e: enec::Error| format!("encoding tensor \"{}\": {e}", m.name);
    let max = enec::max_encoded_size(&options, bytes.len()).map_err(failed)?;
    if buffer.len() < max {
        buffer.resize(max, 0);
    }
    Ok(enec::encode(&options, bytes, buffer).map_err(failed)?)
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

/// A write error as the CLI's: the output's `Write` names the file in the message.
fn written(e: std::io::Error) -> crate::error::CliError {
    e.to_string().into()
}

/// Compresses the pieces of a safetensors file into a container written to `out`, calling
/// `done` with each part of `data` once its output is written (in order).
pub fn compress_pieces<W: Write + Send>(
    data: &[u8],
    pieces: &[Piece],
    options: &EncodeOptions,
    out: &mut W,
    done: &(dyn Fn(&[u8]) + Sync),
) -> Result<Report> {
    let bytes_of = |p: &Piece| &data[p.start as usize..p.end as usize];
    let units = pieces.iter().enumerate().flat_map(|(i, piece)| {
        let bytes = bytes_of(piece);
        let units: Box<dyn Iterator<Item = Result<Unit<'_>>>> = match piece.enec {
            None => Box::new(std::iter::once(Ok(Unit::Raw(i, bytes)))),
            Some(dtype) if (bytes.len() as u64) < container::ALWAYS_ENEC_BYTES => {
                Box::new(std::iter::once(Ok(Unit::Whole(i, dtype, bytes))))
            }
            Some(dtype) => match encoder(dtype, bytes, options) {
                Ok(encoder) => Box::new(
                    std::iter::once(Ok(Unit::Start(encoder.header())))
                        .chain(frame_units(encoder))
                        .chain(std::iter::once(Ok(Unit::End(i)))),
                ),
                Err(e) => Box::new(std::iter::once(Err(e))),
            },
        };
        units
    });
    // A verbatim piece gets an entry of its own only when it is a tensor large enough
    // (container::own_raw_piece); the rest join one run of verbatim bytes.
    let all = safetensors::every_tensor_indexed(pieces);
    let own = |piece: &Piece| {
        let m = meta(piece, PieceKind::Raw, 0);
        piece.tensor.is_some()
            && container::own_raw_piece(all, m.original_len, m.name, m.dtype, m.shape.len())
    };
    let work = |u: &Unit<'_>, buffer: &mut Vec<u8>| match u {
        Unit::Raw(i, bytes) if own(&pieces[*i]) => Ok(piece_checksum(bytes) as usize),
        Unit::Whole(i, dtype, bytes) => encode_whole(&pieces[*i], *dtype, bytes, options, buffer),
        Unit::Frame(encoder, index) => encode_unit(encoder, *index, buffer),
        _ => Ok(0),
    };
    let mut writer = Writer::new(out).map_err(written)?;
    let mut encoded = 0;
    // `checksum`: the piece's, where `work` computed it.
    let verbatim = |writer: &mut Writer<&mut W>, i: usize, bytes: &[u8], checksum: Option<u32>| {
        let piece = &pieces[i];
        if own(piece) {
            writer.begin().map_err(written)?;
            writer.payload(bytes).map_err(written)?;
            let checksum = checksum.unwrap_or_else(|| piece_checksum(bytes));
            writer
                .end(meta(piece, PieceKind::Raw, checksum))
                .map_err(written)?;
        } else {
            writer.verbatim(bytes).map_err(written)?;
        }
        done(bytes);
        Ok::<(), crate::error::CliError>(())
    };
    let emit = |u: Unit<'_>, result: usize, buffer: &[u8]| match u {
        Unit::Raw(i, bytes) => verbatim(&mut writer, i, bytes, Some(result as u32)),
        Unit::Whole(i, _, bytes) => {
            let m = meta(&pieces[i], PieceKind::Enec, 0);
            let (name, dtype, rank) = (m.name, m.dtype, m.shape.len());
            if result != usize::MAX
                && container::keeps_stream(result as u64, m.original_len, name, dtype, rank)
            {
                writer.begin().map_err(written)?;
                writer.payload(&buffer[..result]).map_err(written)?;
                done(bytes);
                encoded += 1;
                writer.end(m).map_err(written)
            } else {
                verbatim(&mut writer, i, bytes, None)
            }
        }
        Unit::Start(header) => {
            writer.begin().map_err(written)?;
            writer.payload(&header).map_err(written)
        }
        Unit::Frame(encoder, index) => {
            done(encoder.frame_input(index));
            writer.payload(&buffer[..result]).map_err(written)
        }
        Unit::End(i) => {
            encoded += 1;
            writer
                .end(meta(&pieces[i], PieceKind::Enec, 0))
                .map_err(written)
        }
    };
    pipeline::run(units, weight, work, emit)?;
    let compressed = writer.finish().map_err(written)?;
    Ok(Report {
        original: data.len() as u64,
        compressed,
        tensors: pieces.iter().filter(|p| p.tensor.is_some()).count(),
        encoded,
        seconds: 0.0,
    })
}

/// Compresses a raw array into one enec stream written to `out`, calling `done` as
/// [`compress_pieces`] does.
pub fn compress_raw<W: Write + Send>(
    data: &[u8],
    options: &EncodeOptions,
    out: &mut W,
    done: &(dyn Fn(&[u8]) + Sync),
) -> Result<Report> {
    let encoder = encoder(options.dtype, data, options)?;
    out.write_all(&encoder.header()).map_err(written)?;
    let mut compressed = 32u64;
    let work = |u: &Unit<'_>, buffer: &mut Vec<u8>| match u {
        Unit::Frame(encoder, index) => encode_unit(encoder, *index, buffer),
        _ => Ok(0),
    };
    let emit = |u: Unit<'_>, result: usize, buffer: &[u8]| {
        if let Unit::Frame(encoder, index) = u {
            done(encoder.frame_input(index));
            compressed += result as u64;
            out.write_all(&buffer[..result]).map_err(written)?;
        }
        Ok(())
    };
    pipeline::run(frame_units(encoder), weight, work, emit)?;
    Ok(Report {
        original: data.len() as u64,
        compressed,
        tensors: 0,
        encoded: 0,
        seconds: 0.0,
    })
}
