//! The library calls that do the work, each spreading frames over `threads` threads (0: all
//! cores), and the messages that name the tensor an error is in.

use enec::container::{Container, ContainerError, Entry, INDEX_HEADER};
use enec::{parallel, EncodeOptions};

/// Encodes `input` into the enec stream `out`; returns its length.
pub fn encode(
    options: &EncodeOptions,
    input: &[u8],
    out: &mut [u8],
    threads: usize,
) -> enec::Result<usize> {
    parallel::encode_into(options, input, out, threads)
}

/// Restores entry `number` of `container` into `out` (exactly its `original_len` bytes).
/// `name` is the file, for messages.
pub fn entry(
    name: &str,
    container: &Container<'_>,
    number: u64,
    entry: &Entry<'_>,
    out: &mut [u8],
    threads: usize,
) -> Result<(), String> {
    parallel::decode_entry_into(container, number, entry, out, threads)
        .map(|_| ())
        .map_err(|e| message(name, container, e))
}

/// Restores the whole original file of `container` into `out` (its `original_len` bytes).
pub fn container(
    name: &str,
    container: &Container<'_>,
    out: &mut [u8],
    threads: usize,
) -> Result<(), String> {
    parallel::decode_container_into(container, out, threads)
        .map_err(|e| message(name, container, e))
}

/// `error` of `container` as a message naming the file and, where it lies in one, the piece.
pub fn message(name: &str, container: &Container<'_>, error: ContainerError) -> String {
    let number = match error {
        ContainerError::CorruptIndex { entry, .. }
        | ContainerError::UnsupportedPieceKind { entry, .. }
        | ContainerError::RawChecksumMismatch { entry }
        | ContainerError::Stream { entry, .. } => entry,
        _ => INDEX_HEADER,
    };
    match container.entries().nth(number as usize) {
        Some((_, e)) if number != INDEX_HEADER => format!("{name}: {}: {error}", e.describe()),
        _ => format!("{name}: {error}"),
    }
}
