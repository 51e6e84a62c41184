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

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::vec::Vec;

use crate::checksum::h32;
use crate::container::{
    check_stream, Container, ContainerError, Entries, Entry, PieceKind, Result as ContainerResult,
};
use crate::error::{Error, Result};
use crate::format::{StreamInfo, STREAM_HEADER_BYTES};
use crate::frame::{
    check_frame_header, decode_frame_with, encode_frame_before, max_frame_bytes, Stores,
    STREAMING_STORES_FROM,
};
use crate::stream::{encode, max_encoded_size, EncodeOptions};

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
    let jobs = FrameWalk::new(stream, info, out, 0).map(|run| match run {
        Ok(frames) => Job::Frames(frames),
        Err(error) => Job::Fail(error),
    });
    run(jobs, threads, Job::run)?;
    Ok(total)
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
    let len = usize::try_from(entry.original_len).map_err(|_| ContainerError::Stream {
        entry: number,
        error: Error::TooLarge,
    })?;
    let out = out.get_mut(..len).ok_or(ContainerError::OutputTooSmall {
        needed: entry.original_len,
    })?;
    let jobs = EntryJobs::new(container, number, entry, out);
    run(jobs, threads, Job::run)?;
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
    let jobs = ContainerJobs {
        container: *container,
        entries: container.entries(),
        rest: out,
        current: None,
    };
    run(jobs, threads, Job::run)
}

/// Encodes `input` into `out` on `threads` threads and returns the stream length: the same
/// bytes as [`crate::encode`]. Threads write their frames at the places a stream of stored
/// frames would have them, then the frames are moved together, so `out` needs
/// [`max_encoded_size`] bytes; with less, this encodes on the calling thread alone.
pub fn encode_into(
    options: &EncodeOptions,
    input: &[u8],
    out: &mut [u8],
    threads: usize,
) -> Result<usize> {
    let bound = max_encoded_size(options, input.len())?;
    let threads = thread_count(threads);
    if out.len() < bound || threads == 1 {
        return encode(options, input, out);
    }
    let eb = options.dtype.element_bytes();
    let info = StreamInfo::new(
        options.dtype,
        options.frame_log2,
        options.checksums,
        (input.len() / eb) as u64,
    )?;
    let (header, body) = out.split_at_mut(STREAM_HEADER_BYTES);
    header.copy_from_slice(&info.to_bytes());
    let frame_in = info.frame_len() * eb;
    let frames_per_run = (RUN_BYTES / frame_in).max(1);
    let run_in = frames_per_run * frame_in;
    // A run's slot: room for its frames stored (only the last frame of the stream is shorter,
    // and `max_frame_bytes` of a shorter frame is never more).
    let slot = frames_per_run * max_frame_bytes(options.dtype, info.frame_len());
    let runs = input.len().div_ceil(run_in);
    let mut written = std::vec![0usize; runs];
    let jobs = input
        .chunks(run_in)
        .zip(body.chunks_mut(slot))
        .zip(written.iter_mut())
        .enumerate()
        .map(|(i, ((run_input, dst), len))| (i * run_in, run_input, dst, len));
    let too_small = Error::OutputTooSmall {
        needed: bound as u64,
    };
    run(jobs, threads, |(start, run_input, dst, len)| {
        let mut at = 0;
        for (offset, frame) in (start..).step_by(frame_in).zip(run_input.chunks(frame_in)) {
            let next = &input[offset + frame.len()..];
            let room = dst.get_mut(at..).ok_or(too_small)?;
            at += encode_frame_before(
                options.dtype,
                options.coding,
                options.checksums,
                frame,
                next,
                room,
            )
            .map_err(|e| match e {
                Error::OutputTooSmall { .. } => too_small,
                other => other,
            })?;
        }
        *len = at;
        Ok(())
    })?;
    // Move the runs together: each lands at or before its slot, so in order nothing is
    // overwritten before it moves.
    let mut at = 0;
    for (i, &len) in written.iter().enumerate() {
        body.copy_within(i * slot..i * slot + len, at);
        at += len;
    }
    Ok(STREAM_HEADER_BYTES + at)
}

/// Runs `work` on every job of `jobs` on `threads` threads (the calling one included), handing
/// jobs out in order. Returns the error of the first job (in `jobs` order) that failed: threads
/// stop taking jobs after a failure, but finish those they hold, and every job before the failed
/// one was handed out already.
fn run<J, E, I, W>(jobs: I, threads: usize, work: W) -> core::result::Result<(), E>
where
    I: Iterator<Item = J> + Send,
    J: Send,
    E: Send,
    W: Fn(J) -> core::result::Result<(), E> + Sync,
{
    let jobs = Mutex::new(jobs.enumerate());
    let failed = AtomicBool::new(false);
    let worker = || -> Option<(usize, E)> {
        while !failed.load(Ordering::Relaxed) {
            // A panic cannot leave the iterator half-updated in a way that matters here.
            let next = jobs.lock().unwrap_or_else(PoisonError::into_inner).next();
            let (number, job) = next?;
            if let Err(error) = work(job) {
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

/// One unit of work: a run of frames, a verbatim piece, or the error the walk found at this
/// point of the file.
enum Job<'a, E> {
    Frames(FrameRun<'a>),
    Raw {
        payload: &'a [u8],
        checksum: u32,
        out: &'a mut [u8],
        mismatch: E,
    },
    Fail(E),
}

impl<E: Fault> Job<'_, E> {
    fn run(self) -> core::result::Result<(), E> {
        match self {
            Job::Frames(mut frames) => frames.decode().map_err(|e| E::in_stream(frames.entry, e)),
            Job::Raw {
                payload,
                checksum,
                out,
                mismatch,
            } => {
                // The jobs are built with `out.len() == payload.len()`.
                out.copy_from_slice(payload);
                if h32(out) == checksum {
                    Ok(())
                } else {
                    Err(mismatch)
                }
            }
            Job::Fail(error) => Err(error),
        }
    }
}

/// Frames `first..` of a stream (as many as fill `out`), whose headers the walk checked.
struct FrameRun<'a> {
    entry: u64,
    info: StreamInfo,
    stream: &'a [u8],
    /// Offset of frame `first` in `stream`.
    at: usize,
    first: u32,
    out: &'a mut [u8],
    stores: Stores,
}

impl FrameRun<'_> {
    fn decode(&mut self) -> Result<()> {
        let (dtype, checksums) = (self.info.dtype, self.info.checksums);
        let frame_out = self.info.frame_len() * dtype.element_bytes();
        let mut at = self.at;
        for (index, dst) in (self.first..).zip(self.out.chunks_mut(frame_out)) {
            let frame = self.stream.get(at..).unwrap_or(&[]);
            let elements = self.info.frame_elements(index);
            at += decode_frame_with(dtype, checksums, index, elements, frame, dst, self.stores)
                .map_err(|e| at_offset(e, at, self.stream.len()))?;
        }
        Ok(())
    }
}

/// An error of the frame at `at` as the serial decoder reports it: truncation counted from the
/// start of the stream.
fn at_offset(error: Error, at: usize, stream_len: usize) -> Error {
    match error {
        Error::Truncated { needed, .. } => Error::Truncated {
            needed: (at as u64).saturating_add(needed),
            available: stream_len as u64,
        },
        other => other,
    }
}

/// Walks a stream's frame headers and cuts it into runs of about [`RUN_BYTES`] of output; the
/// first bad header (or trailing bytes) ends the walk with its error, after the runs before it.
struct FrameWalk<'a> {
    entry: u64,
    info: StreamInfo,
    stream: &'a [u8],
    at: usize,
    index: u32,
    rest: &'a mut [u8],
    stores: Stores,
    pending: Option<Error>,
    done: bool,
}

impl<'a> FrameWalk<'a> {
    /// `out` is exactly the decoded length of `stream`, whose header is `info`.
    fn new(stream: &'a [u8], info: StreamInfo, out: &'a mut [u8], entry: u64) -> FrameWalk<'a> {
        // As `crate::decode` chooses: the bytes are the same either way.
        let stores = if out.len() >= STREAMING_STORES_FROM {
            Stores::Streaming
        } else {
            Stores::Cached
        };
        FrameWalk {
            entry,
            info,
            stream,
            at: STREAM_HEADER_BYTES,
            index: 0,
            rest: out,
            stores,
            pending: None,
            done: false,
        }
    }

    /// Checks the header of the next frame; returns its size.
    fn check_next(&self) -> Result<usize> {
        let rest = self.stream.get(self.at..).unwrap_or(&[]);
        let elements = self.info.frame_elements(self.index);
        let (dtype, checksums) = (self.info.dtype, self.info.checksums);
        let (_, layout) = check_frame_header(dtype, checksums, self.index, elements, rest)
            .map_err(|e| at_offset(e, self.at, self.stream.len()))?;
        if rest.len() < layout.bytes {
            return Err(Error::Truncated {
                needed: (self.at + layout.bytes) as u64,
                available: self.stream.len() as u64,
            });
        }
        Ok(layout.bytes)
    }
}

impl<'a> Iterator for FrameWalk<'a> {
    type Item = Result<FrameRun<'a>>;

    fn next(&mut self) -> Option<Result<FrameRun<'a>>> {
        if let Some(error) = self.pending.take() {
            self.done = true;
            return Some(Err(error));
        }
        if self.done {
            return None;
        }
        let (dtype, frame_count) = (self.info.dtype, self.info.frame_count);
        let per_run = (RUN_BYTES / (self.info.frame_len() * dtype.element_bytes())).max(1);
        let (first, start) = (self.index, self.at);
        let mut elements = 0;
        while self.index < frame_count && ((self.index - first) as usize) < per_run {
            match self.check_next() {
                Ok(bytes) => {
                    elements += self.info.frame_elements(self.index);
                    self.at += bytes;
                    self.index += 1;
                }
                Err(error) => {
                    self.pending = Some(error);
                    break;
                }
            }
        }
        if self.pending.is_none() && self.index == frame_count {
            self.done = true;
            if self.stream.len() > self.at {
                let extra = (self.stream.len() - self.at) as u64;
                self.pending = Some(Error::TrailingData { extra });
            }
        }
        if self.index == first {
            self.done = true;
            return self.pending.take().map(Err);
        }
        let (out, rest) =
            core::mem::take(&mut self.rest).split_at_mut(elements * dtype.element_bytes());
        self.rest = rest;
        Some(Ok(FrameRun {
            entry: self.entry,
            info: self.info,
            stream: self.stream,
            at: start,
            first,
            out,
            stores: self.stores,
        }))
    }
}

/// The jobs of one container entry.
enum EntryJobs<'a> {
    One(Option<Job<'a, ContainerError>>),
    Frames(FrameWalk<'a>),
}

impl<'a> EntryJobs<'a> {
    /// `out` is exactly `entry.original_len` bytes.
    fn new(
        container: &Container<'a>,
        number: u64,
        entry: &Entry<'_>,
        out: &'a mut [u8],
    ) -> EntryJobs<'a> {
        let corrupt = |reason| {
            EntryJobs::One(Some(Job::Fail(ContainerError::CorruptIndex {
                entry: number,
                reason,
            })))
        };
        // `entry` may come from elsewhere than `container`'s index: check it fits before slicing.
        let fits = entry
            .offset
            .checked_add(entry.len)
            .is_some_and(|end| end <= container.index().index_offset());
        if !fits {
            return corrupt("payload extends past the index");
        }
        if out.len() as u64 != entry.original_len {
            return corrupt("pieces do not add up to the original length");
        }
        let payload = container.payload(entry);
        match entry.kind {
            PieceKind::Raw if payload.len() != out.len() => {
                corrupt("raw payload length differs from the original")
            }
            PieceKind::Raw => EntryJobs::One(Some(Job::Raw {
                payload,
                checksum: entry.checksum,
                out,
                mismatch: ContainerError::RawChecksumMismatch { entry: number },
            })),
            PieceKind::Enec => match check_stream(number, entry, payload) {
                Ok(info) => EntryJobs::Frames(FrameWalk::new(payload, info, out, number)),
                Err(error) => EntryJobs::One(Some(Job::Fail(error))),
            },
        }
    }
}

impl<'a> Iterator for EntryJobs<'a> {
    type Item = Job<'a, ContainerError>;

    fn next(&mut self) -> Option<Job<'a, ContainerError>> {
        match self {
            EntryJobs::One(job) => job.take(),
            EntryJobs::Frames(walk) => {
                let entry = walk.entry;
                Some(match walk.next()? {
                    Ok(run) => Job::Frames(run),
                    Err(error) => Job::Fail(ContainerError::Stream { entry, error }),
                })
            }
        }
    }
}

/// The jobs of all entries of a container, in file order, each into its place in the output.
struct ContainerJobs<'a> {
    container: Container<'a>,
    entries: Entries<'a>,
    /// The output after the entries handed out so far.
    rest: &'a mut [u8],
    current: Option<EntryJobs<'a>>,
}

impl<'a> Iterator for ContainerJobs<'a> {
    type Item = Job<'a, ContainerError>;

    fn next(&mut self) -> Option<Job<'a, ContainerError>> {
        loop {
            if let Some(job) = self.current.as_mut().and_then(Iterator::next) {
                return Some(job);
            }
            let (number, entry) = self.entries.next()?;
            // The index checked that the entries add up to the original length, which is the
            // length of `rest` at the start.
            let len = (entry.original_len as usize).min(self.rest.len());
            let (out, rest) = core::mem::take(&mut self.rest).split_at_mut(len);
            self.rest = rest;
            self.current = Some(EntryJobs::new(&self.container, number, &entry, out));
        }
    }
}
