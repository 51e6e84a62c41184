//! `enec decompress`: restores the original file from a container or a bare stream, verifying
//! every checksum on the way.

use std::path::Path;
use std::time::Instant;

use enec::container::{check_stream, Container, Entry, PieceKind, MAGIC as CONTAINER_MAGIC};
use enec::format::{MAGIC as STREAM_MAGIC, STREAM_HEADER_BYTES};
use enec::frame::decode_frame;
use enec::{Frames, StreamInfo};

use crate::container::Sink;
use crate::error::{bail, CliError, Result};
use crate::progress::Progress;
use crate::{input, output, pipeline, safetensors};

/// What a decompression did.
#[derive(Clone, Debug)]
pub struct Report {
    /// Bytes read.
    pub compressed: u64,
    /// Bytes written.
    pub original: u64,
    /// Whether every frame carried a checksum (else some bytes were restored unverified).
    pub verified: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Report {
    /// One line for people.
    pub fn line(&self, input: &Path, output: &Path, threads: usize) -> String {
        format!(
            "{} -> {}: {} -> {} bytes, {}, {:.2} s, {:.0} MB/s, {threads} thread{}",
            input.display(),
            output.display(),
            self.compressed,
            self.original,
            if self.verified {
                "all checksums verified"
            } else {
                "WRITTEN WITHOUT FRAME CHECKSUMS (--no-checksum): not verified"
            },
            self.seconds,
            self.original as f64 / 1e6 / self.seconds.max(1e-9),
            if threads == 1 { "" } else { "s" }
        )
    }
}

/// What an input file is.
pub enum Kind<'a> {
    /// A checkpoint container.
    Container(Container<'a>),
    /// A bare enec stream (a compressed raw array).
    Stream(StreamInfo),
}

/// Recognizes and checks an enec file (`name` is for messages).
pub fn open<'a>(name: &str, data: &'a [u8]) -> Result<Kind<'a>> {
    if data.starts_with(&CONTAINER_MAGIC) {
        Container::parse(data)
            .map(Kind::Container)
            .map_err(|e| format!("{name}: {e}").into())
    } else if data.starts_with(&STREAM_MAGIC) {
        enec::read_header(data)
            .map(Kind::Stream)
            .map_err(|e| format!("{name}: {e}").into())
    } else if data.is_empty() {
        bail!("{name}: empty file, not an enec file")
    } else {
        let hint = if safetensors::parse(data).is_ok() {
            " (it is a safetensors file: `enec compress` makes an .enec file of it)"
        } else {
            ""
        };
        bail!("{name}: not an enec file: it starts with neither `ENCP` (checkpoint) nor `ENEC` (stream){hint}")
    }
}

/// A piece to restore: where its payload is and what to call it in messages.
pub struct Source<'a> {
    /// Verbatim or enec.
    pub kind: PieceKind,
    /// The payload.
    pub payload: &'a [u8],
    /// Checksum of a verbatim piece.
    pub checksum: u32,
    /// For messages: `tensor "name"`, `the safetensors header`, ...
    pub what: String,
}

/// How to name an entry in messages.
pub fn describe(entry: &Entry<'_>) -> String {
    if entry.is_tensor() {
        format!("tensor \"{}\"", entry.name)
    } else if entry.original_offset == 0 {
        format!("the file header (bytes 0..{})", entry.original_len)
    } else {
        format!(
            "the bytes {}..{} of the original",
            entry.original_offset,
            entry.original_offset + entry.original_len
        )
    }
}

/// The pieces of an enec file, in order.
pub fn sources<'a>(name: &str, data: &'a [u8], kind: &Kind<'a>) -> Result<Vec<Source<'a>>> {
    match kind {
        Kind::Stream(_) => Ok(vec![Source {
            kind: PieceKind::Enec,
            payload: data,
            checksum: 0,
            what: "the stream".into(),
        }]),
        Kind::Container(c) => c
            .entries()
            .map(|(number, entry)| {
                let payload = c.payload(&entry);
                if entry.kind == PieceKind::Enec {
                    check_stream(number, &entry, payload)
                        .map_err(|e| format!("{name}: {}: {e}", describe(&entry)))?;
                }
                Ok(Source {
                    kind: entry.kind,
                    payload,
                    checksum: entry.checksum,
                    what: describe(&entry),
                })
            })
            .collect(),
    }
}

/// A unit of decompression work.
pub enum Unit<'a> {
    /// A verbatim piece: checksum verified in parallel, bytes written in order.
    Raw(usize, &'a [u8]),
    /// One frame of an enec piece.
    Frame {
        /// Source number.
        source: usize,
        /// Stream header of the piece.
        info: StreamInfo,
        /// Frame number in the stream.
        index: u32,
        /// Elements in the frame.
        elements: usize,
        /// The frame's bytes and the rest of its stream (which the decoder prefetches from).
        frame: &'a [u8],
    },
}

/// The units of `sources`, frame by frame; frame headers are read lazily.
pub struct Units<'s, 'a> {
    sources: &'s [Source<'a>],
    name: &'s str,
    next: usize,
    current: Option<(usize, StreamInfo, Frames<'a>, usize)>,
}

impl<'s, 'a> Units<'s, 'a> {
    /// Units of `sources` (`name` is the file, for messages).
    pub fn new(name: &'s str, sources: &'s [Source<'a>]) -> Self {
        Units {
            sources,
            name,
            next: 0,
            current: None,
        }
    }

    fn fail(&mut self, source: usize, e: impl std::fmt::Display) -> Option<Result<Unit<'a>>> {
        self.next = self.sources.len();
        self.current = None;
        Some(Err(CliError(format!(
            "{}: {}: {e}",
            self.name, self.sources[source].what
        ))))
    }
}

impl<'a> Iterator for Units<'_, 'a> {
    type Item = Result<Unit<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((source, info, frames, end)) = &mut self.current {
                let (source, info) = (*source, *info);
                match frames.next() {
                    Some(Ok(f)) => {
                        *end = f.offset + f.bytes;
                        let payload = self.sources[source].payload;
                        return Some(Ok(Unit::Frame {
                            source,
                            info,
                            index: f.index,
                            elements: f.elements,
                            // The rest of the stream too: the decoder prefetches the next frame.
                            frame: &payload[f.offset..],
                        }));
                    }
                    Some(Err(e)) => return self.fail(source, e),
                    None => {
                        let end = *end;
                        let len = self.sources[source].payload.len();
                        self.current = None;
                        if end != len {
                            return self.fail(
                                source,
                                enec::Error::TrailingData {
                                    extra: (len - end) as u64,
                                },
                            );
                        }
                    }
                }
            }
            let number = self.next;
            let source = self.sources.get(number)?;
            self.next += 1;
            match source.kind {
                PieceKind::Raw => return Some(Ok(Unit::Raw(number, source.payload))),
                PieceKind::Enec => match enec::frames(source.payload) {
                    Ok(frames) => {
                        let info = *frames.info();
                        self.current = Some((number, info, frames, STREAM_HEADER_BYTES));
                    }
                    Err(e) => return self.fail(number, e),
                },
            }
        }
    }
}

/// Restores every piece of `sources` into `out`, in parallel; returns the bytes written.
pub fn restore<S: Sink + Send>(
    name: &str,
    sources: &[Source<'_>],
    out: &mut S,
    progress: &Progress,
) -> Result<u64> {
    let weight = |u: &Unit<'_>| match u {
        Unit::Raw(_, bytes) => bytes.len(),
        Unit::Frame { info, elements, .. } => elements * info.dtype.element_bytes(),
    };
    let work = |u: &Unit<'_>, buffer: &mut Vec<u8>| -> Result<usize> {
        match u {
            Unit::Raw(source, bytes) => {
                if enec::checksum::h32(bytes) != sources[*source].checksum {
                    bail!(
                        "{name}: {}: checksum mismatch: the file is corrupt",
                        sources[*source].what
                    );
                }
                Ok(0)
            }
            Unit::Frame {
                source,
                info,
                index,
                elements,
                frame,
            } => {
                let bytes = elements * info.dtype.element_bytes();
                if buffer.len() < bytes {
                    buffer.resize(bytes, 0);
                }
                decode_frame(info.dtype, info.checksums, *index, *elements, frame, buffer)
                    .map_err(|e| format!("{name}: {}: {e}", sources[*source].what))?;
                Ok(bytes)
            }
        }
    };
    let mut written = 0u64;
    let emit = |u: Unit<'_>, bytes: usize, buffer: &[u8]| {
        let chunk = match u {
            Unit::Raw(_, raw) => raw,
            Unit::Frame { .. } => &buffer[..bytes],
        };
        written += chunk.len() as u64;
        progress.inc(chunk.len() as u64);
        out.put(chunk)
    };
    pipeline::run(Units::new(name, sources), weight, work, emit)?;
    Ok(written)
}

/// Total decoded size of the sources.
fn decoded_len(kind: &Kind<'_>) -> u64 {
    match kind {
        Kind::Container(c) => c.original_len(),
        Kind::Stream(info) => info.decoded_bytes(),
    }
}

/// Decompresses `input` into `output` (written atomically) with `threads` workers.
pub fn decompress_file(
    input: &Path,
    output: &Path,
    threads: usize,
    force: bool,
    show_progress: bool,
) -> Result<Report> {
    let start = Instant::now();
    let data = input::open(input)?;
    let name = input.display().to_string();
    let kind = open(&name, &data)?;
    let sources = sources(&name, &data, &kind)?;
    let mut out = output::AtomicFile::create(output, force)?;
    let progress = Progress::new(decoded_len(&kind), "decompress", show_progress);
    let pool = crate::compress::thread_pool(threads)?;
    let original = pool.install(|| restore(&name, &sources, &mut out, &progress))?;
    drop(progress);
    out.commit()?;
    let verified = sources.iter().all(|s| {
        s.kind == PieceKind::Raw || enec::read_header(s.payload).is_ok_and(|i| i.checksums)
    });
    Ok(Report {
        compressed: data.len() as u64,
        original,
        verified,
        seconds: start.elapsed().as_secs_f64(),
    })
}
