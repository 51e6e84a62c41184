//! `enec decompress`: restores the original file from a container or a bare stream, verifying
//! every checksum on the way.

use std::path::Path;
use std::time::Instant;

use enec::checkpoint::{self, Error};
use enec::container::{check_stream, PieceKind};
use enec::parallel::Restored;

pub use enec::checkpoint::Kind;

use crate::error::{CliError, Result};
use crate::progress::Progress;
use crate::{input, output};

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

/// Recognizes and checks an enec file (`name` is for messages).
pub fn open<'a>(name: &str, data: &'a [u8]) -> Result<Kind<'a>> {
    checkpoint::open(data).map_err(|e| match e {
        Error::NotEnec { safetensors: true } => CliError(format!(
            "{name}: {e} (it is a safetensors file: `enec compress` makes an .enec file of it)"
        )),
        e => CliError(format!("{name}: {e}")),
    })
}

/// A piece to restore: where its payload is and what to call it in messages.
pub struct Source<'a> {
    /// Verbatim or enec.
    pub kind: PieceKind,
    /// The payload.
    pub payload: &'a [u8],
    /// For messages: `tensor "name"`, `the safetensors header`, ...
    pub what: String,
}

/// The pieces of an enec file, in order.
pub fn sources<'a>(name: &str, data: &'a [u8], kind: &Kind<'a>) -> Result<Vec<Source<'a>>> {
    match kind {
        Kind::Stream(_) => Ok(vec![Source {
            kind: PieceKind::Enec,
            payload: data,
            what: "the stream".into(),
        }]),
        Kind::Container(c) => c
            .entries()
            .map(|(number, entry)| {
                let payload = c.payload(&entry);
                if entry.kind == PieceKind::Enec {
                    check_stream(number, &entry, payload)
                        .map_err(|e| format!("{name}: {}: {e}", entry.describe()))?;
                }
                Ok(Source {
                    kind: entry.kind,
                    payload,
                    what: entry.describe().to_string(),
                })
            })
            .collect(),
    }
}

/// A decoding error in words, naming the tensor (or piece) and, in a stream, the frame.
fn explain(name: &str, kind: &Kind<'_>, error: Error) -> CliError {
    CliError(match (kind, error) {
        (Kind::Container(c), Error::Container(e)) => {
            format!("{name}: {}", checkpoint::describe_error(c, e))
        }
        (Kind::Stream(_), Error::Stream(e)) => format!("{name}: the stream: {e}"),
        (_, e) => format!("{name}: {e}"),
    })
}

/// Restores the original of `data` (an enec file, recognized as `kind`) into `out`, which holds
/// exactly the original's bytes, on `threads` threads: each frame decoded once, in place.
pub fn restore_into(
    name: &str,
    data: &[u8],
    kind: &Kind<'_>,
    out: &mut [u8],
    threads: usize,
) -> Result<()> {
    let decoded = match kind {
        Kind::Container(c) => {
            enec::parallel::decode_container_into(c, out, threads).map_err(Error::Container)
        }
        Kind::Stream(_) => enec::parallel::decode_into(data, out, threads)
            .map(drop)
            .map_err(Error::Stream),
    };
    decoded.map_err(|e| explain(name, kind, e))
}

/// Restores the original of `data` into `file` at the offsets it has in the original, on
/// `threads` threads each writing its runs with positioned writes ([`checkpoint::restore_with`]);
/// returns the bytes written. The input pages each run was read from are let go once it is
/// written, so memory stays bounded whatever the file size.
fn restore_to_file(
    name: &str,
    data: &input::Input,
    kind: &Kind<'_>,
    file: &output::AtomicFile,
    threads: usize,
    progress: &Progress,
) -> Result<u64> {
    let release = input::Release::new(data);
    let write = |run: Restored<'_>| -> std::io::Result<()> {
        file.write_at(run.bytes, run.at)
            .map_err(|e| std::io::Error::other(e.0))?;
        release.finished(run.source);
        progress.inc(run.bytes.len() as u64);
        Ok(())
    };
    checkpoint::restore_with(data, kind, threads, write).map_err(|e| match e {
        Error::Write(e) => CliError(e.to_string()),
        e => explain(name, kind, e),
    })
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
    let out = output::AtomicFile::create(output, force)?;
    let progress = Progress::new(kind.original_len(), "decompress", show_progress);
    let original = restore_to_file(&name, &data, &kind, &out, threads, &progress)?;
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
