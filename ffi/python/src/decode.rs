//! The library calls that restore tensors, each spreading frames over `threads` threads (0: all
//! cores), and the messages that name the tensor an error is in.

use enec::container::{Container, ContainerError, Entry};
use enec::{checkpoint, parallel};

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

/// Restores entries of `container` each into its memory (`parts`: entry number, entry, memory).
pub fn entries(
    name: &str,
    container: &Container<'_>,
    parts: Vec<(u64, Entry<'_>, &mut [u8])>,
    threads: usize,
) -> Result<(), String> {
    parallel::decode_entries_into(container, parts, threads)
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
/// ([`checkpoint::describe_error`]).
pub fn message(name: &str, container: &Container<'_>, error: ContainerError) -> String {
    format!("{name}: {}", checkpoint::describe_error(container, error))
}
