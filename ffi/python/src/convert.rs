//! The conversions of `enec.compress_file` and `enec.decompress_file` (the library's
//! [`enec::checkpoint`], as `enec compress` and `enec decompress` use it), and their errors in
//! words naming the file.

use std::io::{Seek, Write};

use enec::checkpoint::{self, Error, Kind};
use enec::EncodeOptions;

use crate::decode;

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

/// `error` of the file `name` as a failure, its message telling what the Python API does with
/// such a file.
pub fn failure(name: &str, error: Error) -> Failure {
    match error {
        Error::Write(e) => Failure::Write(e),
        Error::AlreadyEnec => {
            format!("{name}: {error} (use enec.decompress_file or enec.safe_open)").into()
        }
        Error::NotEnec { safetensors: true } => format!(
            "{name}: {error} (it is a safetensors file: enec.compress_file makes an .enec file of it)"
        )
        .into(),
        error => format!("{name}: {error}").into(),
    }
}

/// Writes the container (FORMAT.md section 9) of the safetensors file `data` to `out` with
/// [`checkpoint::compress`]; returns its size. `name` is the file, for messages.
pub fn compress<W: Write>(
    name: &str,
    data: &[u8],
    options: &EncodeOptions,
    threads: usize,
    out: W,
) -> Result<u64, Failure> {
    let pieces = checkpoint::plan_file(data).map_err(|e| failure(name, e))?;
    let summary = checkpoint::compress(data, &pieces, options, threads, out, &|_| {})
        .map_err(|e| failure(name, e))?;
    Ok(summary.compressed)
}

/// Restores the original of the enec file `data` (a container or a bare stream) into `out`
/// with [`checkpoint::restore`], every checksum verified; returns the original's length.
/// `name` is the file, for messages.
pub fn decompress<F: Write + Seek + Send>(
    name: &str,
    data: &[u8],
    threads: usize,
    out: F,
) -> Result<u64, Failure> {
    let kind = checkpoint::open(data).map_err(|e| failure(name, e))?;
    checkpoint::restore(data, &kind, threads, out).map_err(|e| match (e, &kind) {
        (Error::Container(e), Kind::Container(container)) => {
            Failure::Input(decode::message(name, container, e))
        }
        (e, _) => failure(name, e),
    })
}

/// Why `data`, which starts with neither magic, is not an enec file.
pub fn not_enec(name: &str, data: &[u8]) -> String {
    match failure(name, checkpoint::not_enec(data)) {
        Failure::Input(message) => message,
        Failure::Write(e) => format!("{name}: {e}"),
    }
}
