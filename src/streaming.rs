//! Streaming encode and decode: push/pull over caller-owned buffers, no allocation.
//!
//! An [`Encoder`] or a [`Decoder`] owns one fixed buffer of `CAP` bytes (a const generic, so its
//! memory is known at compile time and it can live in a `static`, on the stack or in a struct).
//! Each call hands it a slice of input and a slice of output; it takes what input it can, writes
//! what output it can and returns a [`Progress`]: both counts and a [`Status`]. No borrow of the
//! caller's memory survives a call, so a DMA engine can refill one input buffer while the codec
//! reads the other, and drain one output buffer while the codec fills the other
//! (`examples/dma_pingpong.rs`). The idiom is that of miniz_oxide's `inflate::core::decompress`
//! and pco's `PageDecompressor::read`.
//!
//! ```
//! use enec::streaming::{capacity_for, Decoder, Status};
//! use enec::{encode, max_encoded_size, Dtype, EncodeOptions};
//!
//! let weights: Vec<u8> = (0..20_000u32).flat_map(|i| half::bf16::from_f32((i as f32).cos() * 0.1).to_le_bytes()).collect();
//! let options = EncodeOptions::new(Dtype::Bf16).frame_len(4096)?;
//! let mut stream = vec![0u8; max_encoded_size(&options, weights.len())?];
//! let len = encode(&options, &weights, &mut stream)?;
//!
//! // 16,416 bytes of state: enough for any bf16 or fp16 stream of 4,096-element frames.
//! let mut decoder = Decoder::<{ capacity_for(Dtype::Bf16, 4096) }>::new();
//! let mut restored = Vec::new();
//! let (mut input, mut out) = (&stream[..len], [0u8; 1000]);
//! loop {
//!     let progress = decoder.decode(&input[..input.len().min(700)], &mut out)?;
//!     input = &input[progress.consumed..];
//!     restored.extend_from_slice(&out[..progress.written]);
//!     if progress.status == Status::Done {
//!         break;
//!     }
//! }
//! decoder.finish()?;
//! assert_eq!(restored, weights);
//! # Ok::<(), enec::Error>(())
//! ```
//!
//! # Memory
//!
//! The codec works frame by frame, as [`crate::wrapped`] does; only frames
//! that arrive split across calls, or whose output does not fit in the caller's output slice, go
//! through its buffer. In the worst case it holds a whole compressed frame and a whole decoded
//! frame at once, so a frame of `N` elements of `b` bytes needs `N b + 32 + pad32(N b)` bytes:
//! [`capacity_for`]. For the default 16,384-element frames that is [`DEFAULT_CAPACITY_BF16`] =
//! [`DEFAULT_CAPACITY_FP16`] = 65,568 bytes and [`DEFAULT_CAPACITY_FP32`] = 131,104 bytes; with
//! 1,024-element frames, 4,128 and 8,224 bytes. The structs add about a hundred bytes of state
//! to `CAP`.
//!
//! # Zero copy
//!
//! When the input slice holds the whole next frame (and nothing of it was staged before), the
//! codec reads it straight from the slice; when the output slice has room for the frame's whole
//! output, the codec writes it straight there. Callers that hand over large slices therefore get
//! the one-shot speed, and the buffer is only touched at the seams.
//!
//! # Determinism
//!
//! Any split of the input and output into chunks, down to single bytes, gives exactly the bytes of
//! the one-shot [`crate::encode`] and [`crate::decode`], and the same errors. The one exception
//! is [`Error::FrameTooLarge`], which depends on `CAP` only: a decoder refuses every frame whose
//! compressed plus decoded size exceeds its capacity, even when the caller's slices would have
//! let it avoid the buffer, so that the outcome never depends on how the data was chunked.

use core::fmt;

use crate::error::{Error, Result};
use crate::format::{
    Dtype, StreamInfo, ALIGN, DEFAULT_FRAME_LOG2, FRAME_HEADER_BYTES, STREAM_HEADER_BYTES,
};
use crate::frame::EncodeOptions;
use crate::frame::{
    check_frame_header, decode_frame, encode_frame, encode_frame_before, max_frame_bytes,
};

/// Buffer capacity in bytes that an [`Encoder`] or [`Decoder`] needs for frames of `frame_len`
/// elements of `dtype`: one decoded frame (`frame_len * element_bytes`) plus the largest encoded
/// frame ([`max_frame_bytes`]: 32 header bytes plus the elements verbatim, padded to 32). This
/// covers every stream a conforming encoder writes with that frame length (saturates at
/// `usize::MAX`).
pub const fn capacity_for(dtype: Dtype, frame_len: usize) -> usize {
    let decoded = frame_len.saturating_mul(dtype.element_bytes());
    let padded = decoded.saturating_add(ALIGN - 1) & !(ALIGN - 1);
    decoded
        .saturating_add(FRAME_HEADER_BYTES)
        .saturating_add(padded)
}

/// [`capacity_for`] bf16 with the default 16,384-element frames: 65,568 bytes.
pub const DEFAULT_CAPACITY_BF16: usize = capacity_for(Dtype::Bf16, 1 << DEFAULT_FRAME_LOG2);
/// [`capacity_for`] fp16 with the default 16,384-element frames: 65,568 bytes.
pub const DEFAULT_CAPACITY_FP16: usize = capacity_for(Dtype::Fp16, 1 << DEFAULT_FRAME_LOG2);
/// [`capacity_for`] fp32 with the default 16,384-element frames: 131,104 bytes. A codec of this
/// capacity handles every dtype at the default frame length.
pub const DEFAULT_CAPACITY_FP32: usize = capacity_for(Dtype::Fp32, 1 << DEFAULT_FRAME_LOG2);

/// What a call to [`Encoder::encode`] or [`Decoder::decode`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Progress {
    /// Bytes taken from the front of the input slice. The caller passes the rest (and more) next
    /// time; the codec keeps nothing that points into the slice.
    pub consumed: usize,
    /// Bytes written to the front of the output slice.
    pub written: usize,
    /// Why the call returned.
    pub status: Status,
}

/// Why a call returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Status {
    /// The whole input slice was consumed (`consumed == input.len()`) and more input is needed.
    NeedsInput,
    /// The output slice is full (`written == output.len()`) and more output is waiting. No more
    /// input is taken until it has been handed out.
    HasOutput,
    /// The stream is complete and all its output has been written. A decoder leaves any bytes
    /// after the stream unconsumed.
    Done,
}

/// Bytes of the buffer in use: `buf[start..end]` waits to be handed out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pending {
    start: usize,
    end: usize,
}

impl Pending {
    fn len(&self) -> usize {
        self.end - self.start
    }

    /// Copies as much as fits into `out`; returns the count.
    fn drain(&mut self, buf: &[u8], out: &mut [u8]) -> usize {
        let n = self.len().min(out.len());
        out[..n].copy_from_slice(&buf[self.start..self.start + n]);
        self.start += n;
        n
    }
}

// ---------------------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------------------

/// Streaming decoder with a fixed buffer of `CAP` bytes (see the [module docs](self) and
/// [`capacity_for`]); `size_of::<Decoder<CAP>>()` is `CAP` plus about a hundred bytes.
///
/// Decoding hostile input never panics, never allocates, and each call's work is bounded by the
/// bytes it consumes and writes (at most one frame's decoding beyond them). The first error is
/// sticky: every later call returns it again.
pub struct Decoder<const CAP: usize> {
    buf: [u8; CAP],
    /// The stream header, once read.
    info: Option<StreamInfo>,
    /// Index of the frame being read.
    frame: u32,
    /// Bytes of the current structure (stream header or frame) held in `buf[..staged]`.
    staged: usize,
    /// Size of the current frame once its header is known, else 0.
    frame_bytes: usize,
    /// Decoded bytes not yet handed out.
    pending: Pending,
    /// Stream offset of the current structure.
    offset: u64,
    bytes_in: u64,
    bytes_out: u64,
    error: Option<Error>,
}

impl<const CAP: usize> Decoder<CAP> {
    /// The buffer capacity in bytes.
    pub const CAPACITY: usize = CAP;

    const CHECK: () = assert!(
        CAP >= STREAM_HEADER_BYTES,
        "a streaming codec needs at least 32 bytes of buffer"
    );

    /// A decoder waiting for the first byte of a stream (`const`: it can initialize a `static`).
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        Decoder {
            buf: [0; CAP],
            info: None,
            frame: 0,
            staged: 0,
            frame_bytes: 0,
            pending: Pending { start: 0, end: 0 },
            offset: 0,
            bytes_in: 0,
            bytes_out: 0,
            error: None,
        }
    }

    /// Forgets the current stream (and any error) to decode a new one, in place.
    pub fn reset(&mut self) {
        self.info = None;
        self.frame = 0;
        self.staged = 0;
        self.frame_bytes = 0;
        self.pending = Pending::default();
        self.offset = 0;
        self.bytes_in = 0;
        self.bytes_out = 0;
        self.error = None;
    }

    /// Decodes from `input` into `output`: takes what input it can, writes what output it can.
    ///
    /// Returns the bytes consumed and written and why it stopped: [`Status::NeedsInput`] (all of
    /// `input` was taken), [`Status::HasOutput`] (`output` is full) or [`Status::Done`]. Call it
    /// again with the unconsumed rest of the input (plus more) and fresh output space; when the
    /// input has ended, call [`finish`](Self::finish) to learn whether the stream was complete.
    /// Bytes after the end of the stream are not consumed.
    ///
    /// On error nothing is reported as written; output written by earlier calls was verified
    /// (frame checksums, when the stream has them).
    pub fn decode(&mut self, input: &[u8], output: &mut [u8]) -> Result<Progress> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut progress = Progress {
            consumed: 0,
            written: 0,
            status: Status::NeedsInput,
        };
        match self.run(input, output, &mut progress) {
            Ok(status) => {
                progress.status = status;
                Ok(progress)
            }
            Err(e) => {
                self.error = Some(e);
                Err(e)
            }
        }
    }

    fn run(&mut self, input: &[u8], output: &mut [u8], p: &mut Progress) -> Result<Status> {
        loop {
            let n = self.pending.drain(&self.buf, &mut output[p.written..]);
            p.written += n;
            self.bytes_out += n as u64;
            if self.pending.len() > 0 {
                return Ok(Status::HasOutput);
            }
            let rest = &input[p.consumed..];
            let Some(info) = self.info else {
                let info = if self.staged == 0 && rest.len() >= STREAM_HEADER_BYTES {
                    p.consumed += STREAM_HEADER_BYTES;
                    self.bytes_in += STREAM_HEADER_BYTES as u64;
                    StreamInfo::parse(rest)?
                } else {
                    p.consumed += self.stage(rest, STREAM_HEADER_BYTES);
                    if self.staged < STREAM_HEADER_BYTES {
                        return Ok(Status::NeedsInput);
                    }
                    self.staged = 0;
                    StreamInfo::parse(&self.buf)?
                };
                self.info = Some(info);
                self.offset = STREAM_HEADER_BYTES as u64;
                continue;
            };
            if self.frame == info.frame_count {
                return Ok(Status::Done);
            }
            let index = self.frame;
            if self.frame_bytes == 0 {
                // Read the frame header (straight from the input when it is all there).
                let header = if self.staged == 0 && rest.len() >= FRAME_HEADER_BYTES {
                    &rest[..FRAME_HEADER_BYTES]
                } else {
                    p.consumed += self.stage(rest, FRAME_HEADER_BYTES);
                    if self.staged < FRAME_HEADER_BYTES {
                        return Ok(Status::NeedsInput);
                    }
                    &self.buf[..FRAME_HEADER_BYTES]
                };
                self.frame_bytes = checked_frame_bytes(&info, index, header, CAP)?;
                continue;
            }
            let frame_bytes = self.frame_bytes;
            let elements = info.frame_elements(index);
            let decoded = elements * info.dtype.element_bytes();
            let room = output.len() - p.written;
            let direct = room >= decoded;
            let (dtype, checksums) = (info.dtype, info.checksums);
            if self.staged == 0 && rest.len() >= frame_bytes {
                // Zero copy in: the whole frame is in the caller's slice.
                let frame = &rest[..frame_bytes];
                if direct {
                    let out = &mut output[p.written..p.written + decoded];
                    decode_frame(dtype, checksums, index, elements, frame, out)?;
                    p.written += decoded;
                    self.bytes_out += decoded as u64;
                } else {
                    decode_frame(dtype, checksums, index, elements, frame, &mut self.buf)?;
                    self.pending = Pending {
                        start: 0,
                        end: decoded,
                    };
                }
                p.consumed += frame_bytes;
                self.bytes_in += frame_bytes as u64;
            } else {
                p.consumed += self.stage(rest, frame_bytes);
                if self.staged < frame_bytes {
                    return Ok(Status::NeedsInput);
                }
                let (frame, spare) = self.buf.split_at_mut(frame_bytes);
                if direct {
                    let out = &mut output[p.written..p.written + decoded];
                    decode_frame(dtype, checksums, index, elements, frame, out)?;
                    p.written += decoded;
                    self.bytes_out += decoded as u64;
                } else {
                    decode_frame(dtype, checksums, index, elements, frame, spare)?;
                    self.pending = Pending {
                        start: frame_bytes,
                        end: frame_bytes + decoded,
                    };
                }
            }
            self.frame += 1;
            self.staged = 0;
            self.frame_bytes = 0;
            self.offset += frame_bytes as u64;
        }
    }

    /// Copies up to `target - staged` bytes of `rest` into the buffer; returns the count.
    fn stage(&mut self, rest: &[u8], target: usize) -> usize {
        let take = target.saturating_sub(self.staged).min(rest.len());
        self.buf[self.staged..self.staged + take].copy_from_slice(&rest[..take]);
        self.staged += take;
        self.bytes_in += take as u64;
        take
    }

    /// Checks that the stream ended where it should: `Ok` once [`Status::Done`] was reported.
    /// Otherwise the error says why: the sticky decoding error, [`Error::Truncated`] (the
    /// input ended inside the stream; `needed` is the offset where the current header or frame
    /// ends, `available` the bytes consumed, as [`crate::decode`] reports for the same bytes), or
    /// [`Error::OutputTooSmall`] (decoded bytes are still waiting to be handed out).
    pub fn finish(&self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.pending.len() > 0 {
            return Err(Error::OutputTooSmall {
                needed: self.pending.len() as u64,
            });
        }
        match self.info {
            Some(info) if self.frame == info.frame_count => Ok(()),
            _ => {
                let current = match self.frame_bytes {
                    0 => FRAME_HEADER_BYTES,
                    n => n,
                };
                Err(Error::Truncated {
                    needed: self.offset + current as u64,
                    available: self.bytes_in,
                })
            }
        }
    }

    /// `true` once the whole stream has been decoded and handed out.
    pub fn is_done(&self) -> bool {
        self.error.is_none()
            && self.pending.len() == 0
            && matches!(self.info, Some(info) if self.frame == info.frame_count)
    }

    /// The stream header, once it has been read.
    pub fn info(&self) -> Option<&StreamInfo> {
        self.info.as_ref()
    }

    /// Frames decoded so far.
    pub fn frames_decoded(&self) -> u32 {
        self.frame
    }

    /// Bytes of the stream consumed so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Decoded bytes handed out so far.
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// How many more input bytes complete the header or frame being read: the most the decoder
    /// can take before it produces output. 0 while output is waiting, once done, or after an
    /// error. A DMA engine can use it to size its next transfer.
    pub fn needed_input(&self) -> usize {
        self.input_range().map_or(0, |(a, b)| b - a)
    }

    fn input_range(&self) -> Option<(usize, usize)> {
        if self.error.is_some() || self.pending.len() > 0 {
            return None;
        }
        let target = match self.info {
            None => STREAM_HEADER_BYTES,
            Some(info) if self.frame == info.frame_count => return None,
            Some(_) if self.frame_bytes == 0 => FRAME_HEADER_BYTES,
            Some(_) => self.frame_bytes,
        };
        Some((self.staged.min(target), target))
    }

    /// The part of the internal buffer where the next [`needed_input`](Self::needed_input)
    /// bytes of the stream go, for a reader (or DMA engine) that fills it directly instead of
    /// passing a slice to [`decode`](Self::decode). Mark what was filled with
    /// [`commit_input`](Self::commit_input), then call `decode` (with an empty input if there is
    /// no more) to let the decoder act on it.
    pub fn input_buffer(&mut self) -> &mut [u8] {
        match self.input_range() {
            Some((a, b)) => &mut self.buf[a..b],
            None => &mut [],
        }
    }

    /// Marks the first `n` bytes of [`input_buffer`](Self::input_buffer) as filled with stream
    /// bytes (`n` is clamped to its length).
    pub fn commit_input(&mut self, n: usize) {
        let n = n.min(self.needed_input());
        self.staged += n;
        self.bytes_in += n as u64;
    }

    /// Decoded bytes held in the buffer and not yet handed out (a frame whose output did not fit
    /// in the caller's slice). [`decode`](Self::decode) copies them out first; a caller can also
    /// read them in place and [`consume_output`](Self::consume_output) them.
    pub fn pending_output(&self) -> &[u8] {
        &self.buf[self.pending.start..self.pending.end]
    }

    /// Marks the first `n` bytes of [`pending_output`](Self::pending_output) as handed out
    /// (clamped to its length).
    pub fn consume_output(&mut self, n: usize) {
        let n = n.min(self.pending.len());
        self.pending.start += n;
        self.bytes_out += n as u64;
    }
}

/// Checks frame `index`'s header as [`decode_frame`] does (same errors, in the same order) and
/// returns the frame's size; refuses frames whose compressed and decoded bytes together exceed
/// `capacity`.
fn checked_frame_bytes(
    info: &StreamInfo,
    index: u32,
    header: &[u8],
    capacity: usize,
) -> Result<usize> {
    let elements = info.frame_elements(index);
    let (_, layout) = check_frame_header(info.dtype, info.checksums, index, elements, header)?;
    let need = layout.bytes + elements * info.dtype.element_bytes();
    if need > capacity {
        return Err(Error::FrameTooLarge {
            frame: index,
            bytes: need as u64,
            capacity: capacity as u64,
        });
    }
    Ok(layout.bytes)
}

impl<const CAP: usize> Default for Decoder<CAP> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const CAP: usize> fmt::Debug for Decoder<CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoder")
            .field("capacity", &CAP)
            .field("info", &self.info)
            .field("frame", &self.frame)
            .field("staged", &self.staged)
            .field("pending", &self.pending.len())
            .field("bytes_in", &self.bytes_in)
            .field("bytes_out", &self.bytes_out)
            .field("error", &self.error)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------------------------

/// Streaming encoder with a fixed buffer of `CAP` bytes (see the [module docs](self) and
/// [`capacity_for`]). It writes the same bytes as [`crate::encode`].
///
/// The stream header records the element count, so the encoder is told it up front
/// ([`Encoder::new`]), refuses input beyond it, and [`finish`](Self::finish) reports a stream
/// that received less.
pub struct Encoder<const CAP: usize> {
    buf: [u8; CAP],
    options: EncodeOptions,
    info: StreamInfo,
    /// Index of the frame being filled.
    frame: u32,
    /// Input bytes of the current frame held in `buf[..staged]`.
    staged: usize,
    /// Encoded bytes not yet handed out (the stream header first).
    pending: Pending,
    received: u64,
    total: u64,
    bytes_out: u64,
    error: Option<Error>,
}

impl<const CAP: usize> Encoder<CAP> {
    /// The buffer capacity in bytes.
    pub const CAPACITY: usize = CAP;

    const CHECK: () = assert!(
        CAP >= STREAM_HEADER_BYTES,
        "a streaming codec needs at least 32 bytes of buffer"
    );

    /// An encoder for a stream of `element_count` elements written with `options`.
    ///
    /// Fails with [`Error::FrameTooLarge`] when a frame's input and largest output do not fit in
    /// `CAP` bytes together ([`capacity_for`]), and with the errors of [`StreamInfo::new`] for an
    /// invalid frame length or count.
    pub fn new(options: EncodeOptions, element_count: u64) -> Result<Self> {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        let info = Self::check(&options, element_count)?;
        let mut buf = [0u8; CAP];
        buf[..STREAM_HEADER_BYTES].copy_from_slice(&info.to_bytes());
        Ok(Encoder {
            buf,
            options,
            info,
            frame: 0,
            staged: 0,
            pending: Pending {
                start: 0,
                end: STREAM_HEADER_BYTES,
            },
            received: 0,
            total: info.decoded_bytes(),
            bytes_out: 0,
            error: None,
        })
    }

    /// Starts a new stream in place (no move of the buffer), as [`new`](Self::new) would. On
    /// error the encoder is left unchanged.
    pub fn reset(&mut self, options: EncodeOptions, element_count: u64) -> Result<()> {
        let info = Self::check(&options, element_count)?;
        self.buf[..STREAM_HEADER_BYTES].copy_from_slice(&info.to_bytes());
        self.options = options;
        self.info = info;
        self.frame = 0;
        self.staged = 0;
        self.pending = Pending {
            start: 0,
            end: STREAM_HEADER_BYTES,
        };
        self.received = 0;
        self.total = info.decoded_bytes();
        self.bytes_out = 0;
        self.error = None;
        Ok(())
    }

    fn check(options: &EncodeOptions, element_count: u64) -> Result<StreamInfo> {
        let info = StreamInfo::new(
            options.dtype,
            options.frame_log2,
            options.checksums,
            element_count,
        )?;
        // Frame 0 is the largest.
        let elements = info.frame_elements(0);
        if elements > 0 {
            let need =
                elements * options.dtype.element_bytes() + max_frame_bytes(options.dtype, elements);
            if need > CAP {
                return Err(Error::FrameTooLarge {
                    frame: 0,
                    bytes: need as u64,
                    capacity: CAP as u64,
                });
            }
        }
        Ok(info)
    }

    /// Encodes from `input` (little-endian elements) into `output`: takes what input it can,
    /// writes what output it can, and returns the counts and a [`Status`], as
    /// [`Decoder::decode`] does. [`Status::Done`] comes once all `element_count` elements have
    /// been taken and the whole stream written.
    ///
    /// Input beyond the announced element count is refused: if `input` is longer than
    /// [`remaining_input`](Self::remaining_input), the call takes nothing and returns
    /// [`Error::TrailingData`] with the excess (the encoder stays usable).
    pub fn encode(&mut self, input: &[u8], output: &mut [u8]) -> Result<Progress> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let remaining = self.remaining_input();
        if input.len() as u64 > remaining {
            return Err(Error::TrailingData {
                extra: input.len() as u64 - remaining,
            });
        }
        let mut progress = Progress {
            consumed: 0,
            written: 0,
            status: Status::NeedsInput,
        };
        match self.run(input, output, &mut progress) {
            Ok(status) => {
                progress.status = status;
                Ok(progress)
            }
            Err(e) => {
                self.error = Some(e);
                Err(e)
            }
        }
    }

    fn run(&mut self, input: &[u8], output: &mut [u8], p: &mut Progress) -> Result<Status> {
        let EncodeOptions {
            dtype,
            coding,
            checksums,
            ..
        } = self.options;
        loop {
            let n = self.pending.drain(&self.buf, &mut output[p.written..]);
            p.written += n;
            self.bytes_out += n as u64;
            if self.pending.len() > 0 {
                return Ok(Status::HasOutput);
            }
            if self.frame == self.info.frame_count {
                return Ok(Status::Done);
            }
            let rest = &input[p.consumed..];
            let elements = self.info.frame_elements(self.frame);
            let bytes = elements * dtype.element_bytes();
            let largest = max_frame_bytes(dtype, elements);
            let room = output.len() - p.written;
            let direct = room >= largest;
            if self.staged == 0 && rest.len() >= bytes {
                // Zero copy in: the whole frame is in the caller's slice (and what follows it,
                // which the encoder fetches while it writes this frame).
                let (frame, next) = rest.split_at(bytes);
                if direct {
                    let out = &mut output[p.written..];
                    let n = encode_frame_before(dtype, coding, checksums, frame, next, out)?;
                    p.written += n;
                    self.bytes_out += n as u64;
                } else {
                    let out = &mut self.buf;
                    let n = encode_frame_before(dtype, coding, checksums, frame, next, out)?;
                    self.pending = Pending { start: 0, end: n };
                }
                p.consumed += bytes;
                self.received += bytes as u64;
            } else {
                let take = (bytes - self.staged).min(rest.len());
                self.buf[self.staged..self.staged + take].copy_from_slice(&rest[..take]);
                self.staged += take;
                self.received += take as u64;
                p.consumed += take;
                if self.staged < bytes {
                    return Ok(Status::NeedsInput);
                }
                let (frame, spare) = self.buf.split_at_mut(bytes);
                if direct {
                    let n =
                        encode_frame(dtype, coding, checksums, frame, &mut output[p.written..])?;
                    p.written += n;
                    self.bytes_out += n as u64;
                } else {
                    let n = encode_frame(dtype, coding, checksums, frame, spare)?;
                    self.pending = Pending {
                        start: bytes,
                        end: bytes + n,
                    };
                }
            }
            self.frame += 1;
            self.staged = 0;
        }
    }

    /// Checks that the stream is complete: `Ok` once [`Status::Done`] was reported. Otherwise
    /// [`Error::Truncated`] when fewer bytes than announced were given (`needed` the announced
    /// input bytes, `available` those received), [`Error::OutputTooSmall`] when encoded bytes are
    /// still waiting to be handed out, or the sticky error of an earlier call.
    pub fn finish(&self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.received < self.total {
            return Err(Error::Truncated {
                needed: self.total,
                available: self.received,
            });
        }
        if !self.is_done() {
            // All input is in; output waits (or `commit_input` was not followed by `encode`).
            let needed = match self.pending.len() {
                0 => max_frame_bytes(self.options.dtype, self.info.frame_elements(self.frame)),
                n => n,
            };
            return Err(Error::OutputTooSmall {
                needed: needed as u64,
            });
        }
        Ok(())
    }

    /// `true` once every element has been taken and the whole stream handed out.
    pub fn is_done(&self) -> bool {
        self.error.is_none() && self.pending.len() == 0 && self.frame == self.info.frame_count
    }

    /// The header of the stream being written.
    pub fn info(&self) -> &StreamInfo {
        &self.info
    }

    /// The options the stream is written with.
    pub fn options(&self) -> &EncodeOptions {
        &self.options
    }

    /// Input bytes still expected (the announced elements not yet taken).
    pub fn remaining_input(&self) -> u64 {
        self.total - self.received
    }

    /// Frames encoded so far.
    pub fn frames_encoded(&self) -> u32 {
        self.frame
    }

    /// Input bytes taken so far.
    pub fn bytes_in(&self) -> u64 {
        self.received
    }

    /// Stream bytes handed out so far.
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// How many more input bytes complete the frame being filled. 0 while output is waiting,
    /// once all input is in, or after an error.
    pub fn needed_input(&self) -> usize {
        self.input_range().map_or(0, |(a, b)| b - a)
    }

    fn input_range(&self) -> Option<(usize, usize)> {
        if self.error.is_some() || self.pending.len() > 0 || self.frame == self.info.frame_count {
            return None;
        }
        let bytes = self.info.frame_elements(self.frame) * self.options.dtype.element_bytes();
        Some((self.staged.min(bytes), bytes))
    }

    /// The part of the internal buffer where the next [`needed_input`](Self::needed_input)
    /// input bytes go, for a reader (or DMA engine) that fills it directly. Mark what was
    /// filled with [`commit_input`](Self::commit_input), then call [`encode`](Self::encode)
    /// (with an empty input) to let the encoder act on it.
    pub fn input_buffer(&mut self) -> &mut [u8] {
        match self.input_range() {
            Some((a, b)) => &mut self.buf[a..b],
            None => &mut [],
        }
    }

    /// Marks the first `n` bytes of [`input_buffer`](Self::input_buffer) as filled (`n` is
    /// clamped to its length).
    pub fn commit_input(&mut self, n: usize) {
        let n = n.min(self.needed_input());
        self.staged += n;
        self.received += n as u64;
    }

    /// Encoded bytes held in the buffer and not yet handed out. [`encode`](Self::encode) copies
    /// them out first; a caller can also read them in place and
    /// [`consume_output`](Self::consume_output) them.
    pub fn pending_output(&self) -> &[u8] {
        &self.buf[self.pending.start..self.pending.end]
    }

    /// Marks the first `n` bytes of [`pending_output`](Self::pending_output) as handed out
    /// (clamped to its length).
    pub fn consume_output(&mut self, n: usize) {
        let n = n.min(self.pending.len());
        self.pending.start += n;
        self.bytes_out += n as u64;
    }
}

impl<const CAP: usize> fmt::Debug for Encoder<CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder")
            .field("capacity", &CAP)
            .field("options", &self.options)
            .field("info", &self.info)
            .field("frame", &self.frame)
            .field("staged", &self.staged)
            .field("pending", &self.pending.len())
            .field("bytes_in", &self.received)
            .field("bytes_out", &self.bytes_out)
            .field("error", &self.error)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_matches_frame_sizes() {
        for dtype in Dtype::ALL {
            for log2 in 10..=16u8 {
                let n = 1usize << log2;
                let want = n * dtype.element_bytes() + max_frame_bytes(dtype, n);
                assert_eq!(capacity_for(dtype, n), want);
            }
            for n in [1usize, 7, 31, 33, 1000] {
                let want = n * dtype.element_bytes() + max_frame_bytes(dtype, n);
                assert_eq!(capacity_for(dtype, n), want);
            }
        }
        assert_eq!(DEFAULT_CAPACITY_BF16, 65_568);
        assert_eq!(DEFAULT_CAPACITY_FP16, 65_568);
        assert_eq!(DEFAULT_CAPACITY_FP32, 131_104);
        assert_eq!(capacity_for(Dtype::Fp32, usize::MAX), usize::MAX);
    }
}
