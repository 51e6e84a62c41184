//! Scratch shared by the per-coding writers and readers: slack after expanded arrays, and the
//! prefetch share of each chunk.

/// Slack after a scratch array of values to expand, so the vector expansion may read 32 at a time.
pub(super) const SLACK: usize = 32;

/// Readable bytes after the last queued exponent: vector steps load 64 at a time.
pub(super) const ESCAPED_SLACK: usize = 64;

/// Bytes to prefetch while a frame is coded, spread over its elements: each chunk fetches its
/// share.
pub(super) struct Ahead<'a> {
    bytes: &'a [u8],
    /// Bytes per element in 32.32 fixed point (one division per frame, not two per chunk).
    per_element: u64,
}

impl<'a> Ahead<'a> {
    pub(super) fn new(bytes: &'a [u8], elements: usize) -> Ahead<'a> {
        // Frames are far below 2^32 bytes: no overflow, and `at(elements) <= bytes.len()`.
        let per_element = ((bytes.len() as u64) << 32) / elements.max(1) as u64;
        Ahead { bytes, per_element }
    }

    /// The share of elements `start..start + len` (of the frame's `elements`).
    pub(super) fn share(&self, start: usize, len: usize) -> &'a [u8] {
        let at = |i: usize| ((i as u64 * self.per_element) >> 32) as usize;
        self.bytes.get(at(start)..at(start + len)).unwrap_or(&[])
    }
}
