//! The library calls that do the work, each spreading frames over `threads` threads (0: all
//! cores), and the messages that name the tensor an error is in.

use enec::container::{Container, ContainerError, Entry, INDEX_HEADER};
use enec::EncodeOptions;

/// Encodes `input` into the enec stream `out`; returns its length.
pub fn encode(
    options: &EncodeOptions,
    input: &[u8],
    out: &mut [u8],
    threads: usize,
) -> enec::Result<usize> {
    let _ = threads;
    enec::encode(options, input, out)
}

/// Decodes the bare enec stream `stream` into `out`; returns the bytes written.
pub fn stream(stream: &[u8], out: &mut [u8], threads: usize) -> enec::Result<usize> {
    let _ = threads;
    enec::decode(stream, out)
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
    let _ = threads;
    container
        .decode_entry(number, entry, out)
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
    for (number, e) in container.entries() {
        let piece = usize::try_from(e.original_offset)
            .ok()
            .zip(usize::try_from(e.original_len).ok())
            .and_then(|(at, len)| out.get_mut(at..at.checked_add(len)?))
            .ok_or_else(|| format!("{name}: {}: lies outside the original file", describe(&e)))?;
        entry(name, container, number, &e, piece, threads)?;
    }
    Ok(())
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
        Some((_, e)) if number != INDEX_HEADER => format!("{name}: {}: {error}", describe(&e)),
        _ => format!("{name}: {error}"),
    }
}

/// How messages name an entry: `tensor "name"`, the file header, or a byte range.
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
