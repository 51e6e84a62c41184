//! Whole streams and containers on several threads, straight between caller memory (feature
//! `std`).
//!
//! Frames are independent (FORMAT.md section 4), so these functions hand runs of frames to
//! threads of [`std::thread::scope`]; each frame is decoded once, into its final place in the
//! caller's `out`: no intermediate buffer, no zeroing. The bytes written are those of the serial
//! functions ([`crate::decode`], [`crate::encode`], [`Container::decode_entry`]), and so are the
//! errors: when several frames are bad, the one reported is the first in stream order, the one
//! the serial function would report.
//!
//! The `*_into` functions fill memory the caller owns. The `*_with` functions
//! ([`decode_with`], [`decode_container_with`]) hand each decoded run ([`Restored`]) to a
//! writer instead, from per-thread buffers that are reused: for output that goes to a file with
//! positioned writes, in memory bounded whatever the file size. [`encode_with`], the ordered
//! frame encoder, hands a stream to its writer in order while worker threads encode the frames
//! that follow ([`encode_into`] and [`crate::checkpoint`] write through it).
//!
//! `threads` is the number of threads to use, the calling thread included; 0 means
//! [`std::thread::available_parallelism`]. Work is handed out in runs of about
//! [`RUN_BYTES`] of decoded data, so threads that are slowed down (a loaded machine) take fewer.
//!
//! ```
//! use enec::{encode_to_vec, Dtype, EncodeOptions};
//!
//! let weights: Vec<half::bf16> = (0..100_000).map(|i| half::bf16::from_f32((i as f32).sin() * 0.02)).collect();
//! let input: &[u8] = bytemuck::cast_slice(&weights);
//! let options = EncodeOptions::new(Dtype::Bf16);
//! let mut stream = vec![0u8; enec::max_encoded_size(&options, input.len())?];
//! let len = enec::parallel::encode_into(&options, input, &mut stream, 0)?;
//! assert_eq!(stream[..len], encode_to_vec(&options, input)?[..]);
//!
//! let mut restored = vec![0u8; input.len()];
//! enec::parallel::decode_into(&stream[..len], &mut restored, 0)?;
//! assert_eq!(restored, input);
//! # Ok::<(), enec::Error>(())
//! ```

use core::ops::Range;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex, PoisonError};
use std::thread;
use std::vec::Vec;

use crate::checksum::h32;
use crate::container::{
    check_stream, Container, ContainerError, Entries, Entry, PieceKind, Result as ContainerResult,
};
use crate::error::{Error, Result};
use crate::format::{StreamInfo, STREAM_HEADER_BYTES};
use crate::frame::{EncodeOptions, Stores};
use crate::frames::{decode_frames, Frames};
use crate::oneshot::{encode, max_encoded_size};
use crate::wrapped::FrameEncoder;

/// Decoded bytes per unit of work handed to a thread (whole frames, so at least one frame):
/// large enough that handing it out costs nothing, small enough that two threads share even a
/// 30 MB tensor evenly.
pub const RUN_BYTES: usize = 1 << 20;

/// The number of threads `threads` asks for (0: all the machine has).
pub fn thread_count(threads: usize) -> usize {
    match threads {
        0 => thread::available_parallelism().map_or(1, NonZeroUsize::get),
        n => n,
    }
}

/// Decodes the bare enec stream `stream` into the start of `out` (which needs
/// [`StreamInfo::decoded_bytes`] bytes) on `threads` threads; returns the decoded length. The
/// same bytes and errors as [`crate::decode`].
pub fn decode_into(stream: &[u8], out: &mut [u8], threads: usize) -> Result<usize> {
    let info = StreamInfo::parse(stream)?;
    let total = usize::try_from(info.decoded_bytes()).map_err(|_| Error::TooLarge)?;
    let out = out.get_mut(..total).ok_or(Error::OutputTooSmall {
        needed: total as u64,
    })?;
    let jobs = stream_jobs(FrameWalk::new(stream, info, (0, 0), 0, RUN_BYTES));
    decode_in_place(jobs, out, threads)?;
    Ok(total)
}

/// A run of restored bytes, as the `*_with` functions hand it to their writer.
#[derive(Clone, Debug)]
pub struct Restored<'b> {
    /// Offset of `bytes` in the decoded data (the original file, for a container).
    pub at: u64,
    /// The bytes.
    pub bytes: &'b [u8],
    /// Where they came from in the input (the stream or the container file): read for the last
    /// time, so a reader of a memory-mapped input may let the system drop these pages.
    pub source: Range<usize>,
}

/// Decodes the bare enec stream `stream` on `threads` threads, each into a buffer of its own
/// (about `chunk` bytes, reused), and hands every decoded run of frames to `write`
/// ([`Restored`]: its offset in the decoded data and where it came from), from several threads at once and in no particular order. For
/// writers with positioned writes (`pwrite`): memory stays at `threads` buffers whatever the
/// stream's size. Returns the decoded length; a failure of `write` stops the decoding and is
/// returned. Decoding errors are those of [`crate::decode`], ordered as there with the writes'.
pub fn decode_with<E, W>(
    stream: &[u8],
    threads: usize,
    chunk: usize,
    write: W,
) -> core::result::Result<u64, E>
where
    E: From<Error> + Send,
    W: Fn(Restored<'_>) -> core::result::Result<(), E> + Sync,
{
    let info = StreamInfo::parse(stream)?;
    let jobs = stream_jobs(FrameWalk::new(stream, info, (0, 0), 0, chunk));
    run(jobs, threads, Vec::new, |buffer, job| {
        job.run_with(buffer, &write)
    })?;
    Ok(info.decoded_bytes())
}

/// Restores the original bytes of entry number `number` of `container` into the start of `out`
/// (which needs `entry.original_len` bytes) on `threads` threads, verifying checksums; returns
/// the bytes written. The same bytes and errors as [`Container::decode_entry`]; an error in a
/// stream names the entry and the frame.
pub fn decode_entry_into(
    container: &Container<'_>,
    number: u64,
    entry: &Entry<'_>,
    out: &mut [u8],
    threads: usize,
) -> ContainerResult<usize> {
    let out = entry.original_in(number, out)?;
    let len = out.len();
    let jobs = EntryJobs::new(container, number, entry, 0, RUN_BYTES);
    decode_in_place(jobs, out, threads)?;
    Ok(len)
}

/// Restores the whole original file of `container` (all its entries, in order) into the start
/// of `out`, which needs [`Container::original_len`] bytes, on `threads` threads, verifying
/// checksums. Small entries and the frames of large ones are shared among the threads alike.
/// The first error in file order is returned, as a loop over [`Container::decode_entry`] would.
pub fn decode_container_into(
    container: &Container<'_>,
    out: &mut [u8],
    threads: usize,
) -> ContainerResult<()> {
    let needed = container.original_len();
    let out = usize::try_from(needed)
        .ok()
        .and_then(|len| out.get_mut(..len))
        .ok_or(ContainerError::OutputTooSmall { needed })?;
    let jobs = ContainerJobs::new(container, RUN_BYTES);
    decode_in_place(jobs, out, threads)
}

/// Restores entries of `container`, each into memory of its own: `parts` holds entry numbers,
/// their entries and the memory each is restored into (the start of it: `original_len` bytes),
/// on `threads` threads, verifying checksums. Small entries and the frames of large ones are
/// shared among the threads alike, as [`decode_container_into`] shares them. The first error in
/// the order of `parts` is returned, as a loop over [`Container::decode_entry`] would.
pub fn decode_entries_into(
    container: &Container<'_>,
    parts: Vec<(u64, Entry<'_>, &mut [u8])>,
    threads: usize,
) -> ContainerResult<()> {
    let jobs = parts.into_iter().flat_map(|(number, entry, out)| {
        let (jobs, out) = match entry.original_in(number, out) {
            Ok(out) => (EntryJobs::new(container, number, &entry, 0, RUN_BYTES), out),
            Err(error) => {
                let fail = Job {
                    start: 0,
                    len: 0,
                    source: 0..0,
                    work: Work::Fail(error),
                };
                (EntryJobs::One(Some(fail)), &mut [][..])
            }
        };
        Carve::new(jobs, out)
    });
    run(jobs, threads, || (), |(), (job, out)| job.run_into(out))
}

/// [`decode_container_into`] through `write`, as [`decode_with`] does for a bare stream: every
/// restored run of bytes is handed to `write` with its offset in the original file, from
/// several threads at once and in no particular order (verbatim pieces straight from the
/// container, after their checksum is verified). Memory: `threads` buffers of about `chunk`
/// bytes. The first error in file order is returned, whether decoding or `write` failed.
pub fn decode_container_with<E, W>(
    container: &Container<'_>,
    threads: usize,
    chunk: usize,
    write: W,
) -> core::result::Result<(), E>
where
    E: From<ContainerError> + Send,
    W: Fn(Restored<'_>) -> core::result::Result<(), E> + Sync,
{
    let jobs = ContainerJobs::new(container, chunk);
    run(jobs, threads, Vec::new, |buffer, job| {
        job.run_with(buffer, &write)
    })
}

/// Encodes `input` into `out` on `threads` threads and returns the stream length: the same
/// bytes as [`crate::encode`], through [`encode_with`]. `out` needs [`max_encoded_size`]
/// bytes; with less, this encodes on the calling thread alone.
pub fn encode_into(
    options: &EncodeOptions,
    input: &[u8],
    out: &mut [u8],
    threads: usize,
) -> Result<usize> {
    let bound = max_encoded_size(options, input.len())?;
    if out.len() < bound || thread_count(threads) == 1 {
        return encode(options, input, out);
    }
    let too_small = Error::OutputTooSmall {
        needed: bound as u64,
    };
    let mut at = 0;
    encode_with(options, input, threads, |bytes, _| {
        let room = out.get_mut(at..at + bytes.len()).ok_or(too_small)?;
        room.copy_from_slice(bytes);
        at += bytes.len();
        Ok::<(), Error>(())
    })?;
    Ok(at)
}

/// Encodes `input` on `threads` worker threads (0: all cores) and hands the stream to `write`
/// on the calling thread, in order: its header, then each frame with the input bytes it
/// encodes (for progress, or to let go of the input's pages; empty for the header). The bytes
/// are those of [`crate::encode`]. The workers encode the frames that follow while `write`
/// takes the last ones, at most 8 MiB of input ahead, so memory stays bounded
/// whatever the input's size. Returns the stream's length; a failure of `write` stops the
/// encoding and is returned.
pub fn encode_with<E, F>(
    options: &EncodeOptions,
    input: &[u8],
    threads: usize,
    mut write: F,
) -> core::result::Result<u64, E>
where
    E: From<Error> + Send,
    F: FnMut(&[u8], &[u8]) -> core::result::Result<(), E>,
{
    let encoder = FrameEncoder::new(options, input)?;
    write(&encoder.header(), &[])?;
    let mut len = STREAM_HEADER_BYTES as u64;
    let frames = (0..encoder.frame_count()).map(Ok);
    let work = |&index: &u32, buffer: &mut Vec<u8>| -> core::result::Result<usize, E> {
        Ok(encode_frame(&encoder, index, buffer)?)
    };
    let emit = |index: u32, n: usize, buffer: &[u8]| {
        len += n as u64;
        write(&buffer[..n], encoder.frame_input(index))
    };
    ordered(
        frames,
        threads,
        |&index| encoder.frame_input(index).len(),
        work,
        emit,
    )?;
    Ok(len)
}

/// Encodes frame `index` of `encoder` into `buffer`, grown to the largest frame; returns its
/// size.
pub(crate) fn encode_frame(
    encoder: &FrameEncoder<'_>,
    index: u32,
    buffer: &mut Vec<u8>,
) -> Result<usize> {
    let max = encoder.max_frame_bytes();
    if buffer.len() < max {
        buffer.resize(max, 0);
    }
    encoder.encode_frame(index, buffer)
}

/// Input bytes (by the `weight` of [`ordered`]) worked on or waiting to be emitted, at most
/// (and one unit more).
const IN_FLIGHT_BYTES: usize = 8 << 20;
/// Units worked on or waiting to be emitted, at most.
const IN_FLIGHT_UNITS: usize = 2048;
/// Input bytes of neighbouring units that one thread takes together: it reads on in the input
/// where it left off (the encoder fetches the next frame's input while it writes a frame).
const JOB_BYTES: usize = 256 << 10;

/// A job of [`ordered`]: neighbouring units, from unit number `first` on, with their buffers.
struct Batch<T> {
    first: usize,
    units: Vec<T>,
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

/// Runs `work` on every unit of `units` on `threads` worker threads (each unit with a reused
/// buffer it may fill), and `emit` on the calling thread on each unit, its result and its
/// buffer, in order, while the workers go on with the next units. The calling thread takes the
/// units from `units`; at most [`IN_FLIGHT_BYTES`] of input (by `weight`) and
/// [`IN_FLIGHT_UNITS`] units are being worked on or waiting, so memory stays bounded whatever
/// the input's size. Stops at the first error in unit order.
pub(crate) fn ordered<T, R, E, I, W, M>(
    mut units: I,
    threads: usize,
    weight: impl Fn(&T) -> usize,
    work: W,
    mut emit: M,
) -> core::result::Result<(), E>
where
    I: Iterator<Item = core::result::Result<T, E>>,
    T: Send,
    R: Send,
    E: Send,
    W: Fn(&T, &mut Vec<u8>) -> core::result::Result<R, E> + Sync,
    M: FnMut(T, R, &[u8]) -> core::result::Result<(), E>,
{
    /// A job done: its units, their results (up to the first failure), and buffers.
    type Done<T, R, E> = (Batch<T>, Vec<core::result::Result<R, E>>);
    let work = &work;
    let (job_tx, job_rx) = mpsc::channel::<Batch<T>>();
    let (done_tx, done_rx) = mpsc::channel::<Done<T, R, E>>();
    let job_rx = Mutex::new(job_rx);
    thread::scope(|scope| {
        // Owned here: dropped before the workers are joined, which lets them go.
        let (job_tx, done_rx) = (job_tx, done_rx);
        let mut workers = Vec::new();
        for _ in 0..thread_count(threads) {
            let (job_rx, done_tx) = (&job_rx, done_tx.clone());
            let worker = move || loop {
                let job = job_rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
                let Ok(mut job) = job else { return };
                let mut results = Vec::with_capacity(job.units.len());
                for (unit, buffer) in job.units.iter().zip(&mut job.buffers) {
                    let result = work(unit, buffer);
                    let failed = result.is_err();
                    results.push(result);
                    if failed {
                        break;
                    }
                }
                if done_tx.send((job, results)).is_err() {
                    return;
                }
            };
            // A thread the system refuses is one worker fewer, not an error.
            workers.extend(thread::Builder::new().spawn_scoped(scope, worker).ok());
        }
        drop(done_tx);
        let result = (|| {
            // Jobs handed out and not yet emitted, by their first unit.
            let mut waiting: BTreeMap<usize, Done<T, R, E>> = BTreeMap::new();
            let (mut next, mut emitted, mut bytes) = (0usize, 0usize, 0usize);
            let mut spare: Vec<Vec<u8>> = Vec::new();
            let mut failure = None;
            let mut exhausted = false;
            loop {
                // Hand out jobs while there is room.
                while !exhausted && bytes < IN_FLIGHT_BYTES && next - emitted < IN_FLIGHT_UNITS {
                    let mut job = Batch {
                        first: next,
                        units: Vec::new(),
                        buffers: Vec::new(),
                        bytes: 0,
                    };
                    while job.bytes < JOB_BYTES && next - emitted < IN_FLIGHT_UNITS {
                        match units.next() {
                            Some(Ok(unit)) => {
                                job.bytes = job.bytes.saturating_add(weight(&unit));
                                job.units.push(unit);
                                job.buffers.push(spare.pop().unwrap_or_default());
                                next += 1;
                            }
                            end => {
                                failure = end.and_then(core::result::Result::err);
                                exhausted = true;
                                break;
                            }
                        }
                    }
                    if job.units.is_empty() {
                        break;
                    }
                    bytes = bytes.saturating_add(job.bytes);
                    // The workers hold the receiver until `job_tx` is dropped.
                    let _ = job_tx.send(job);
                }
                if emitted == next {
                    return failure.map_or(Ok(()), Err);
                }
                // Emit the jobs that are next in order as they come.
                let Ok(done) = done_rx.recv() else {
                    // No worker left (none could be started): work here.
                    let Ok(mut job) = job_rx
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .try_recv()
                    else {
                        return failure.map_or(Ok(()), Err);
                    };
                    let mut results = Vec::new();
                    for (unit, buffer) in job.units.iter().zip(&mut job.buffers) {
                        results.push(work(unit, buffer));
                    }
                    waiting.insert(job.first, (job, results));
                    continue;
                };
                waiting.insert(done.0.first, done);
                while let Some((job, results)) = waiting.remove(&emitted) {
                    let count = job.units.len();
                    for ((unit, buffer), result) in
                        job.units.into_iter().zip(&job.buffers).zip(results)
                    {
                        emit(unit, result?, buffer)?;
                    }
                    emitted += count;
                    bytes -= job.bytes;
                    spare.extend(job.buffers);
                }
            }
        })();
        drop((job_tx, done_rx));
        // Joined here, not by the scope's end: a join waits until the thread has exited (its
        // thread-locals freed), the scope only until its closure has returned.
        for worker in workers {
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
        result
    })
}

/// Runs `jobs` on `threads` threads, each into its part of `out` (the jobs cover it in order).
fn decode_in_place<'j, E: Fault>(
    jobs: impl Iterator<Item = Job<'j, E>> + Send,
    out: &mut [u8],
    threads: usize,
) -> core::result::Result<(), E> {
    let carved = Carve::new(jobs, out);
    run(carved, threads, || (), |(), (job, out)| job.run_into(out))
}

/// Runs `work` on every job of `jobs` on `threads` threads (the calling one included, each
/// with its own `state()`), handing jobs out in order. Returns the error of the first job (in
/// `jobs` order) that failed: threads stop taking jobs after a failure, but finish those they
/// hold, and every job before the failed one was handed out already.
fn run<J, E, S, I, W>(
    jobs: I,
    threads: usize,
    state: impl Fn() -> S + Sync,
    work: W,
) -> core::result::Result<(), E>
where
    I: Iterator<Item = J> + Send,
    J: Send,
    E: Send,
    W: Fn(&mut S, J) -> core::result::Result<(), E> + Sync,
{
    let jobs = Mutex::new(jobs.enumerate());
    let failed = AtomicBool::new(false);
    let worker = || -> Option<(usize, E)> {
        let mut state = state();
        while !failed.load(Ordering::Relaxed) {
            // A panic cannot leave the iterator half-updated in a way that matters here.
            let next = jobs.lock().unwrap_or_else(PoisonError::into_inner).next();
            let (number, job) = next?;
            if let Err(error) = work(&mut state, job) {
                failed.store(true, Ordering::Relaxed);
                return Some((number, error));
            }
        }
        None
    };
    let threads = thread_count(threads);
    let first = thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            // A thread the system refuses is one fewer helper, not an error.
            .filter_map(|_| thread::Builder::new().spawn_scoped(scope, worker).ok())
            .collect();
        let mut failures: Vec<(usize, E)> = worker().into_iter().collect();
        for helper in helpers {
            match helper.join() {
                Ok(failure) => failures.extend(failure),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        failures.into_iter().min_by_key(|&(number, _)| number)
    });
    match first {
        Some((_, error)) => Err(error),
        None => Ok(()),
    }
}

/// How a failure in a stream is reported: as the stream's own error, or as a container's error
/// naming the entry.
trait Fault: Send {
    fn in_stream(entry: u64, error: Error) -> Self;
}

impl Fault for Error {
    fn in_stream(_entry: u64, error: Error) -> Error {
        error
    }
}

impl Fault for ContainerError {
    fn in_stream(entry: u64, error: Error) -> ContainerError {
        ContainerError::Stream { entry, error }
    }
}

/// One unit of work: bytes `start..start + len` of the output, from bytes `source` of the input.
struct Job<'a, E> {
    start: u64,
    len: usize,
    source: Range<usize>,
    work: Work<'a, E>,
}

enum Work<'a, E> {
    /// A run of frames.
    Frames(FrameRun<'a>),
    /// A verbatim piece and its checksum.
    Raw {
        entry: u64,
        payload: &'a [u8],
        checksum: u32,
        mismatch: E,
    },
    /// The error the walk found at this point of the file.
    Fail(E),
}

impl<E: Fault> Job<'_, E> {
    /// Restores the job's bytes into `out` (`len` bytes).
    fn run_into(self, out: &mut [u8]) -> core::result::Result<(), E> {
        match self.work {
            Work::Frames(frames) => frames.decode(out, frames.stores),
            Work::Raw {
                entry,
                payload,
                checksum,
                mismatch,
            } => {
                let out = out.get_mut(..payload.len()).ok_or(E::in_stream(
                    entry,
                    Error::OutputTooSmall {
                        needed: payload.len() as u64,
                    },
                ))?;
                out.copy_from_slice(payload);
                if h32(out) == checksum {
                    Ok(())
                } else {
                    Err(mismatch)
                }
            }
            Work::Fail(error) => Err(error),
        }
    }

    /// Restores the job's bytes (in `buffer`, grown once to the largest run, never shrunk) and
    /// hands them to `write`.
    fn run_with<F, W>(self, buffer: &mut Vec<u8>, write: &W) -> core::result::Result<(), F>
    where
        F: From<E>,
        W: Fn(Restored<'_>) -> core::result::Result<(), F>,
    {
        match self.work {
            Work::Frames(frames) => {
                if buffer.len() < self.len {
                    buffer.resize(self.len, 0);
                }
                let out = &mut buffer[..self.len];
                // Through the cache: `write` reads the run back at once.
                frames.decode::<E>(out, Stores::Cached)?;
                write(Restored {
                    at: self.start,
                    bytes: out,
                    source: self.source,
                })
            }
            Work::Raw {
                payload,
                checksum,
                mismatch,
                ..
            } => {
                if h32(payload) != checksum {
                    return Err(mismatch.into());
                }
                write(Restored {
                    at: self.start,
                    bytes: payload,
                    source: self.source,
                })
            }
            Work::Fail(error) => Err(error.into()),
        }
    }
}

/// Hands each job its part of `rest`, in order (jobs cover the output without gaps).
struct Carve<'a, I> {
    jobs: I,
    rest: &'a mut [u8],
}

impl<'a, I> Carve<'a, I> {
    fn new(jobs: I, out: &'a mut [u8]) -> Carve<'a, I> {
        Carve { jobs, rest: out }
    }
}

impl<'a, 'j, E, I: Iterator<Item = Job<'j, E>>> Iterator for Carve<'a, I> {
    type Item = (Job<'j, E>, &'a mut [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let job = self.jobs.next()?;
        let len = job.len.min(self.rest.len());
        let (out, rest) = core::mem::take(&mut self.rest).split_at_mut(len);
        self.rest = rest;
        Some((job, out))
    }
}

/// Frames `first..first + count` of a stream, whose headers the walk checked.
struct FrameRun<'a> {
    entry: u64,
    info: StreamInfo,
    stream: &'a [u8],
    /// Offset of frame `first` in `stream`.
    at: usize,
    first: u32,
    count: u32,
    /// How [`crate::decode`] would write this stream into memory.
    stores: Stores,
}

impl FrameRun<'_> {
    fn decode<E: Fault>(&self, out: &mut [u8], stores: Stores) -> core::result::Result<(), E> {
        let frames = self.first..self.first + self.count;
        decode_frames(self.stream, &self.info, self.at, frames, out, stores)
            .map_err(|e| E::in_stream(self.entry, e))?;
        Ok(())
    }
}

/// Cuts a stream into runs of about `run_bytes` of output, walking its frame headers
/// ([`Frames`]); the first bad header (or trailing bytes) ends the walk with its error, after
/// the runs before it.
struct FrameWalk<'a> {
    entry: u64,
    frames: Frames<'a>,
    stream: &'a [u8],
    /// Offset in the whole output of the next frame's output.
    start: u64,
    /// Offset of `stream` in the whole input.
    base: usize,
    frames_per_run: u32,
    stores: Stores,
    pending: Option<Error>,
    done: bool,
}

impl<'a> FrameWalk<'a> {
    /// The stream `stream` (at offset `base` of the input), whose header is `info`, decoded to
    /// offset `start` of the output.
    fn new(
        stream: &'a [u8],
        info: StreamInfo,
        (entry, base): (u64, usize),
        start: u64,
        run_bytes: usize,
    ) -> FrameWalk<'a> {
        let frame_out = info.frame_len() * info.dtype.element_bytes();
        let frames_per_run = u32::try_from(run_bytes / frame_out)
            .unwrap_or(u32::MAX)
            .max(1);
        FrameWalk {
            entry,
            frames: Frames::new(stream, info),
            stream,
            start,
            base,
            frames_per_run,
            // As `crate::decode` chooses: the bytes are the same either way.
            stores: Stores::for_output(info.decoded_bytes()),
            pending: None,
            done: false,
        }
    }
}

impl<'a> Iterator for FrameWalk<'a> {
    type Item = core::result::Result<(u64, usize, Range<usize>, FrameRun<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(error) = self.pending.take() {
            self.done = true;
            return Some(Err(error));
        }
        if self.done {
            return None;
        }
        let at = self.frames.offset();
        let (mut first, mut count, mut elements) = (None, 0, 0);
        while count < self.frames_per_run {
            match self.frames.next() {
                Some(Ok(frame)) => {
                    first.get_or_insert(frame.index);
                    elements += frame.elements;
                    count += 1;
                }
                Some(Err(error)) => {
                    self.pending = Some(error);
                    break;
                }
                None => break,
            }
        }
        if self.frames.finished() {
            self.done = true;
            self.pending = self.frames.check_end().err();
        }
        let Some(first) = first else {
            self.done = true;
            return self.pending.take().map(Err);
        };
        let info = *self.frames.info();
        let (start, len) = (self.start, elements * info.dtype.element_bytes());
        self.start += len as u64;
        let run = FrameRun {
            entry: self.entry,
            info,
            stream: self.stream,
            at,
            first,
            count,
            stores: self.stores,
        };
        let source = self.base + at..self.base + self.frames.offset();
        Some(Ok((start, len, source, run)))
    }
}

/// The jobs of a walk, errors reported as `E`.
struct StreamJobs<'a, E> {
    walk: FrameWalk<'a>,
    marker: core::marker::PhantomData<fn() -> E>,
}

fn stream_jobs<E>(walk: FrameWalk<'_>) -> StreamJobs<'_, E> {
    StreamJobs {
        walk,
        marker: core::marker::PhantomData,
    }
}

impl<'a, E: Fault> Iterator for StreamJobs<'a, E> {
    type Item = Job<'a, E>;

    fn next(&mut self) -> Option<Job<'a, E>> {
        let (entry, end) = (self.walk.entry, self.walk.start);
        Some(match self.walk.next()? {
            Ok((start, len, source, frames)) => Job {
                start,
                len,
                source,
                work: Work::Frames(frames),
            },
            Err(error) => Job {
                start: end,
                len: 0,
                source: 0..0,
                work: Work::Fail(E::in_stream(entry, error)),
            },
        })
    }
}

/// The jobs of one container entry.
enum EntryJobs<'a> {
    One(Option<Job<'a, ContainerError>>),
    Frames(StreamJobs<'a, ContainerError>),
}

impl<'a> EntryJobs<'a> {
    /// Entry `number`, restored to offset `start` of the output.
    fn new(
        container: &Container<'a>,
        number: u64,
        entry: &Entry<'_>,
        start: u64,
        run_bytes: usize,
    ) -> EntryJobs<'a> {
        let fail = |error| {
            EntryJobs::One(Some(Job {
                start,
                len: 0,
                source: 0..0,
                work: Work::Fail(error),
            }))
        };
        let corrupt = |reason| ContainerError::CorruptIndex {
            entry: number,
            reason,
        };
        // `entry` may come from elsewhere than `container`'s index: check it fits before slicing.
        let fits = entry
            .offset
            .checked_add(entry.len)
            .is_some_and(|end| end <= container.index().index_offset());
        if !fits {
            return fail(corrupt("payload extends past the index"));
        }
        let payload = container.payload(entry);
        match entry.kind {
            PieceKind::Raw if payload.len() as u64 != entry.original_len => {
                fail(corrupt("raw payload length differs from the original"))
            }
            PieceKind::Raw => EntryJobs::One(Some(Job {
                start,
                len: payload.len(),
                source: entry.offset as usize..(entry.offset + entry.len) as usize,
                work: Work::Raw {
                    entry: number,
                    payload,
                    checksum: entry.checksum,
                    mismatch: ContainerError::RawChecksumMismatch { entry: number },
                },
            })),
            PieceKind::Enec => match check_stream(number, entry, payload) {
                Ok(info) => EntryJobs::Frames(stream_jobs(FrameWalk::new(
                    payload,
                    info,
                    (number, entry.offset as usize),
                    start,
                    run_bytes,
                ))),
                Err(error) => fail(error),
            },
        }
    }
}

impl<'a> Iterator for EntryJobs<'a> {
    type Item = Job<'a, ContainerError>;

    fn next(&mut self) -> Option<Job<'a, ContainerError>> {
        match self {
            EntryJobs::One(job) => job.take(),
            EntryJobs::Frames(jobs) => jobs.next(),
        }
    }
}

/// The jobs of all entries of a container, in file order.
struct ContainerJobs<'a> {
    container: Container<'a>,
    entries: Entries<'a>,
    run_bytes: usize,
    current: Option<EntryJobs<'a>>,
}

impl<'a> ContainerJobs<'a> {
    fn new(container: &Container<'a>, run_bytes: usize) -> ContainerJobs<'a> {
        ContainerJobs {
            container: *container,
            entries: container.entries(),
            run_bytes,
            current: None,
        }
    }
}

impl<'a> Iterator for ContainerJobs<'a> {
    type Item = Job<'a, ContainerError>;

    fn next(&mut self) -> Option<Job<'a, ContainerError>> {
        loop {
            if let Some(job) = self.current.as_mut().and_then(Iterator::next) {
                return Some(job);
            }
            let (number, entry) = self.entries.next()?;
            // The index checked that the pieces follow each other from offset 0.
            let (container, start) = (&self.container, entry.original_offset);
            self.current = Some(EntryJobs::new(
                container,
                number,
                &entry,
                start,
                self.run_bytes,
            ));
        }
    }
}
