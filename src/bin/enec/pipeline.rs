//! Parallel work over independent units (frames, verbatim pieces) in windows of bounded size,
//! with the results emitted in order.
//!
//! Units are taken from a sequential iterator a window at a time (at most [`WINDOW_BYTES`] of
//! input and [`WINDOW_ITEMS`] units), worked on in parallel by rayon into per-unit buffers, then
//! emitted in order. While one window is emitted (written to the output file), the next one is
//! being worked on. Memory: two windows of output buffers, whatever the file size.

use rayon::prelude::*;

use crate::error::Result;

/// Input bytes per window.
pub const WINDOW_BYTES: usize = 4 << 20;
/// Units per window.
pub const WINDOW_ITEMS: usize = 1024;

struct Batch<T, R> {
    items: Vec<T>,
    results: Vec<Result<R>>,
    buffers: Vec<Vec<u8>>,
}

/// Runs `work` on every unit of `items` in parallel (each with a reusable buffer it may fill),
/// and `emit` on each unit, its result and its buffer, in order. Stops at the first error, in
/// unit order.
pub fn run<T, R, I, W, E>(
    mut items: I,
    weight: impl Fn(&T) -> usize,
    work: W,
    mut emit: E,
) -> Result<()>
where
    I: Iterator<Item = Result<T>>,
    T: Send + Sync,
    R: Send,
    W: Fn(&T, &mut Vec<u8>) -> Result<R> + Sync,
    E: FnMut(T, R, &[u8]) -> Result<()> + Send,
{
    let mut pending: Option<Batch<T, R>> = None;
    let mut spare: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut window = Vec::new();
        let mut bytes = 0usize;
        let mut failure = None;
        while bytes < WINDOW_BYTES && window.len() < WINDOW_ITEMS {
            match items.next() {
                None => break,
                Some(Ok(t)) => {
                    bytes = bytes.saturating_add(weight(&t));
                    window.push(t);
                }
                Some(Err(e)) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if window.is_empty() && pending.is_none() {
            return failure.map_or(Ok(()), Err);
        }
        let mut buffers = std::mem::take(&mut spare);
        buffers.resize_with(window.len(), Vec::new);
        let previous = pending.take();
        let (emitted, results) = rayon::join(
            || emit_batch(previous, &mut emit),
            || {
                window
                    .par_iter()
                    .zip(buffers.par_iter_mut())
                    .map(|(t, buffer)| work(t, buffer))
                    .collect::<Vec<_>>()
            },
        );
        spare = emitted?;
        let batch = Batch {
            items: window,
            results,
            buffers,
        };
        if let Some(e) = failure {
            emit_batch(Some(batch), &mut emit)?;
            return Err(e);
        }
        if batch.items.is_empty() {
            return Ok(());
        }
        pending = Some(batch);
    }
}

fn emit_batch<T, R>(
    batch: Option<Batch<T, R>>,
    emit: &mut impl FnMut(T, R, &[u8]) -> Result<()>,
) -> Result<Vec<Vec<u8>>> {
    let Some(batch) = batch else {
        return Ok(Vec::new());
    };
    for ((item, result), buffer) in batch
        .items
        .into_iter()
        .zip(batch.results)
        .zip(&batch.buffers)
    {
        emit(item, result?, buffer)?;
    }
    Ok(batch.buffers)
}
