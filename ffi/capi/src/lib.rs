//! C ABI over the enec codec (`ffi/include/enec.h` is generated from this file by cbindgen).
//!
//! - One-shot: [`enec_encode`] / [`enec_decode`] between caller buffers, [`enec_max_encoded_size`]
//!   for the worst-case stream size, [`enec_read_header`] for what a stream holds.
//! - Streaming, push/pull over caller buffers: [`enec_decoder_decode`] / [`enec_encoder_encode`]
//!   take what input they can and write what output they can, like the Rust
//!   `enec::streaming::{Decoder, Encoder}` they wrap. Their state lives in memory the caller
//!   provides, sized by [`enec_decoder_state_size`] / [`enec_encoder_state_size`] and aligned to
//!   [`ENEC_STATE_ALIGN`] bytes.
//!
//! - Checkpoint containers in memory: [`enec_container_open`] checks one and keeps a handle in
//!   caller memory; [`enec_container_tensor`] / [`enec_container_find`] describe a tensor (name,
//!   dtype, shape, sizes) by number or name; [`enec_container_decode_tensor`] restores one into
//!   a caller buffer.
//!
//! Nothing here allocates. Every function checks its pointers for NULL and its arguments for
//! range and returns an [`EnecStatus`]; a panic aborts (the crate is built with `panic = "abort"`)
//! and cannot unwind into C.
#![allow(clippy::missing_safety_doc)] // each function documents its contract in "Safety" prose

use core::ffi::{c_char, c_void};
use core::mem::size_of;
use core::ptr;
use core::slice;

use enec::container::{dtype_from_safetensors, Container, ContainerError, Entry};
use enec::streaming::{capacity_for, Decoder, Encoder, Status};
use enec::{Coding, Dtype, EncodeOptions, Error};

/// Alignment in bytes that streaming state memory must have.
pub const ENEC_STATE_ALIGN: usize = 16;

/// Result of every fallible function. `ENEC_STATUS_OK` is 0; the others name what went wrong
/// (see [`enec_status_message`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnecStatus {
    Ok = 0,
    /// The input ended before the structure it announced.
    Truncated = 1,
    /// Not an enec stream (magic `ENEC` missing).
    BadMagic = 2,
    /// Written by a format version this library does not read.
    UnsupportedVersion = 3,
    /// Unknown dtype code in the stream header.
    UnsupportedDtype = 4,
    /// Unknown flag bits in the stream header.
    UnsupportedFlags = 5,
    /// The stream header is inconsistent or its check failed.
    CorruptHeader = 6,
    /// A frame uses an unknown coding id.
    UnsupportedCoding = 7,
    /// A frame is malformed.
    CorruptFrame = 8,
    /// A frame decoded to bytes whose checksum differs from the stored one.
    ChecksumMismatch = 9,
    /// Bytes after the last frame, or more input than the encoder announced.
    TrailingData = 10,
    /// The output buffer is too small (the detail's value says how many bytes are needed).
    OutputTooSmall = 11,
    /// The input is not a whole number of elements.
    PartialElement = 12,
    /// The frame length is not a power of two in 1,024 ..= 65,536.
    InvalidFrameLength = 13,
    /// Too many elements for the format or this platform.
    TooLarge = 14,
    /// A frame needs more streaming state than this state was sized for.
    FrameTooLarge = 15,
    /// A NULL pointer, an unknown enum value, misaligned or too small state memory.
    InvalidArgument = 16,
    /// An error this version of the C ABI does not name.
    Other = 17,
    /// Not a readable checkpoint container: magic `ENCP` missing, or its header, footer or index
    /// is damaged (the detail's value is the entry number where the index names one).
    CorruptContainer = 18,
    /// No tensor of that name or number in the container.
    NotFound = 19,
}

/// Element type (the stream header's code).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnecDtype {
    Bf16 = 1,
    Fp16 = 2,
    Fp32 = 3,
}

/// Exponent coding the encoder uses.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnecCoding {
    /// Per frame, the smallest of ranked, groups and stored.
    Auto = 0,
    /// The ENEC paper's groups coding (or stored where smaller).
    Groups = 1,
    /// The ranked escape-level coding (or stored where smaller; default).
    Ranked = 2,
}

/// Why a streaming call returned (`EnecProgress::status`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnecFlowStatus {
    /// All input was consumed; more is needed.
    NeedsInput = 0,
    /// The output buffer is full; call again with more room.
    HasOutput = 1,
    /// The stream is complete and all of its output has been written.
    Done = 2,
}

/// What the writer chooses. Fields are plain integers so any bit pattern from C is safe; invalid
/// values give `ENEC_STATUS_INVALID_ARGUMENT`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EnecOptions {
    /// An `EnecDtype` value.
    pub dtype: u32,
    /// Elements per frame: a power of two in 1,024 ..= 65,536 (default 16,384).
    pub frame_len: u32,
    /// An `EnecCoding` value (default `ENEC_CODING_RANKED`).
    pub coding: u32,
    /// Nonzero: store a checksum of every frame (default 1).
    pub checksums: u32,
}

/// What a stream header says.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct EnecStreamInfo {
    /// An `EnecDtype` value.
    pub dtype: u32,
    /// Elements per frame (all but the last).
    pub frame_len: u32,
    /// 1 if every frame carries a checksum.
    pub checksums: u32,
    /// Number of frames.
    pub frame_count: u32,
    /// Number of elements.
    pub element_count: u64,
    /// Size of the decoded data in bytes.
    pub decoded_bytes: u64,
    /// Format version of the stream.
    pub version_major: u32,
    /// Format minor version of the stream.
    pub version_minor: u32,
}

/// Where and how much, for the statuses that carry it (may be passed as NULL).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EnecErrorDetail {
    /// The status returned.
    pub status: EnecStatus,
    /// Frame index for frame errors, else 0.
    pub frame: u32,
    /// Bytes needed (truncated input, output too small, frame too large) or in excess (trailing
    /// data), else 0.
    pub value: u64,
}

/// What a streaming call did.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EnecProgress {
    /// Bytes taken from the front of the input buffer.
    pub consumed: usize,
    /// Bytes written to the front of the output buffer.
    pub written: usize,
    /// An `EnecFlowStatus` value.
    pub status: u32,
}

/// Streaming decoder state (opaque; lives in caller memory).
pub struct EnecDecoder {
    _private: [u8; 0],
}

/// Streaming encoder state (opaque; lives in caller memory).
pub struct EnecEncoder {
    _private: [u8; 0],
}

fn status_of(e: &Error) -> (EnecStatus, u32, u64) {
    match *e {
        Error::Truncated { needed, .. } => (EnecStatus::Truncated, 0, needed),
        Error::BadMagic => (EnecStatus::BadMagic, 0, 0),
        Error::UnsupportedVersion { .. } => (EnecStatus::UnsupportedVersion, 0, 0),
        Error::UnsupportedDtype(_) => (EnecStatus::UnsupportedDtype, 0, 0),
        Error::UnsupportedFlags(_) => (EnecStatus::UnsupportedFlags, 0, 0),
        Error::CorruptHeader(_) => (EnecStatus::CorruptHeader, 0, 0),
        Error::UnsupportedCoding { frame, .. } => (EnecStatus::UnsupportedCoding, frame, 0),
        Error::CorruptFrame { frame, .. } => (EnecStatus::CorruptFrame, frame, 0),
        Error::ChecksumMismatch { frame } => (EnecStatus::ChecksumMismatch, frame, 0),
        Error::TrailingData { extra } => (EnecStatus::TrailingData, 0, extra),
        Error::OutputTooSmall { needed } => (EnecStatus::OutputTooSmall, 0, needed),
        Error::PartialElement { .. } => (EnecStatus::PartialElement, 0, 0),
        Error::InvalidFrameLength(_) => (EnecStatus::InvalidFrameLength, 0, 0),
        Error::TooLarge => (EnecStatus::TooLarge, 0, 0),
        Error::FrameTooLarge { frame, bytes, .. } => (EnecStatus::FrameTooLarge, frame, bytes),
        _ => (EnecStatus::Other, 0, 0),
    }
}

/// Converts an error, filling `detail` when it is not NULL.
unsafe fn fail(e: Error, detail: *mut EnecErrorDetail) -> EnecStatus {
    let (status, frame, value) = status_of(&e);
    if !detail.is_null() {
        detail.write(EnecErrorDetail {
            status,
            frame,
            value,
        });
    }
    status
}

fn dtype_of(code: u32) -> Option<Dtype> {
    Dtype::from_code(u8::try_from(code).ok()?)
}

fn options_of(o: &EnecOptions) -> Result<EncodeOptions, EnecStatus> {
    let dtype = dtype_of(o.dtype).ok_or(EnecStatus::InvalidArgument)?;
    let coding = match o.coding {
        0 => Coding::Auto,
        1 => Coding::Groups,
        2 => Coding::Ranked,
        _ => return Err(EnecStatus::InvalidArgument),
    };
    EncodeOptions::new(dtype)
        .coding(coding)
        .checksums(o.checksums != 0)
        .frame_len(o.frame_len)
        .map_err(|_| EnecStatus::InvalidFrameLength)
}

/// A byte slice from C; NULL is allowed only for length 0.
unsafe fn bytes<'a>(p: *const u8, len: usize) -> Option<&'a [u8]> {
    if len == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        Some(slice::from_raw_parts(p, len))
    }
}

unsafe fn bytes_mut<'a>(p: *mut u8, len: usize) -> Option<&'a mut [u8]> {
    if len == 0 {
        Some(&mut [])
    } else if p.is_null() {
        None
    } else {
        Some(slice::from_raw_parts_mut(p, len))
    }
}

// ---------------------------------------------------------------------------------------------
// Misc
// ---------------------------------------------------------------------------------------------

/// The library version, a static NUL-terminated string ("0.1.0 (format 1.0)").
#[no_mangle]
pub extern "C" fn enec_version() -> *const c_char {
    c"0.1.0 (format 1.0)".as_ptr()
}

/// A static, NUL-terminated English description of a status (never NULL).
#[no_mangle]
pub extern "C" fn enec_status_message(status: i32) -> *const c_char {
    let s: &'static core::ffi::CStr = match status {
        0 => c"ok",
        1 => c"input is truncated",
        2 => c"not an enec stream (magic bytes ENEC missing)",
        3 => c"unsupported format version",
        4 => c"unknown dtype code in the stream header",
        5 => c"unknown flag bits in the stream header",
        6 => c"corrupt stream header",
        7 => c"a frame uses an unknown coding",
        8 => c"corrupt frame",
        9 => c"checksum mismatch: the stream is corrupt",
        10 => c"unexpected bytes after the end of the stream (or more input than announced)",
        11 => c"output buffer too small",
        12 => c"input is not a whole number of elements",
        13 => c"frame length is not a power of two between 1024 and 65536",
        14 => c"element count too large",
        15 => c"a frame needs more streaming state than was provided",
        16 => c"invalid argument (NULL pointer, unknown enum value, misaligned or small state)",
        18 => c"not a readable enec checkpoint container (or a damaged one)",
        19 => c"no tensor of that name or number in the container",
        _ => c"unknown error",
    };
    s.as_ptr()
}

/// Default options for `dtype` (an `EnecDtype` value): 16,384-element frames, the ranked coding,
/// checksums on.
#[no_mangle]
pub extern "C" fn enec_options_default(dtype: u32) -> EnecOptions {
    EnecOptions {
        dtype,
        frame_len: 16_384,
        coding: EnecCoding::Ranked as u32,
        checksums: 1,
    }
}

// ---------------------------------------------------------------------------------------------
// One-shot
// ---------------------------------------------------------------------------------------------

/// Worst-case stream size for `input_bytes` bytes of input with `options`, into `*size`.
///
/// # Safety
/// `options` and `size` must be valid pointers (or NULL, which is rejected).
#[no_mangle]
pub unsafe extern "C" fn enec_max_encoded_size(
    options: *const EnecOptions,
    input_bytes: usize,
    size: *mut usize,
) -> EnecStatus {
    if options.is_null() || size.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let opts = match options_of(&*options) {
        Ok(o) => o,
        Err(s) => return s,
    };
    match enec::max_encoded_size(&opts, input_bytes) {
        Ok(n) => {
            size.write(n);
            EnecStatus::Ok
        }
        Err(e) => fail(e, ptr::null_mut()),
    }
}

/// Encodes `input` (little-endian elements of `options->dtype`) into `out`; the stream length
/// goes to `*out_len`. `out_cap >= enec_max_encoded_size(...)` always suffices.
///
/// # Safety
/// `input` must point to `input_len` readable bytes (NULL if 0), `out` to `out_cap` writable
/// bytes not overlapping `input`, `options` and `out_len` must be valid; `detail` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn enec_encode(
    options: *const EnecOptions,
    input: *const u8,
    input_len: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    if options.is_null() || out_len.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let (Some(input), Some(out)) = (bytes(input, input_len), bytes_mut(out, out_cap)) else {
        return EnecStatus::InvalidArgument;
    };
    let opts = match options_of(&*options) {
        Ok(o) => o,
        Err(s) => return s,
    };
    match enec::encode(&opts, input, out) {
        Ok(n) => {
            out_len.write(n);
            EnecStatus::Ok
        }
        Err(e) => fail(e, detail),
    }
}

/// Reads the 32-byte stream header into `*info`.
///
/// # Safety
/// `stream` must point to `stream_len` readable bytes; `info` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_read_header(
    stream: *const u8,
    stream_len: usize,
    info: *mut EnecStreamInfo,
) -> EnecStatus {
    let Some(stream) = bytes(stream, stream_len) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    match enec::read_header(stream) {
        Ok(i) => {
            info.write(info_of(&i));
            EnecStatus::Ok
        }
        Err(e) => fail(e, ptr::null_mut()),
    }
}

fn info_of(i: &enec::StreamInfo) -> EnecStreamInfo {
    EnecStreamInfo {
        dtype: u32::from(i.dtype.code()),
        frame_len: i.frame_len() as u32,
        checksums: u32::from(i.checksums),
        frame_count: i.frame_count,
        element_count: i.element_count,
        decoded_bytes: i.decoded_bytes(),
        version_major: u32::from(i.version.0),
        version_minor: u32::from(i.version.1),
    }
}

/// Decodes a whole stream into `out` (which needs `info.decoded_bytes` bytes); the decoded
/// length goes to `*out_len`. Corrupt input gives an error, never wrong data as good.
///
/// # Safety
/// `stream` must point to `stream_len` readable bytes, `out` to `out_cap` writable bytes not
/// overlapping it, `out_len` must be valid; `detail` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn enec_decode(
    stream: *const u8,
    stream_len: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    if out_len.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let (Some(stream), Some(out)) = (bytes(stream, stream_len), bytes_mut(out, out_cap)) else {
        return EnecStatus::InvalidArgument;
    };
    match enec::decode(stream, out) {
        Ok(n) => {
            out_len.write(n);
            EnecStatus::Ok
        }
        Err(e) => fail(e, detail),
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming: the Rust codecs are generic over their buffer capacity, so the C ABI offers eight
// capacity tiers (capacity_for(bf16, 1,024 << t), t = 0..8: exactly the need of bf16/fp16 frames
// of 1,024 << t elements and of fp32 frames of half that) and picks the smallest that fits.
// ---------------------------------------------------------------------------------------------

const fn tier_cap(t: usize) -> usize {
    capacity_for(Dtype::Bf16, 1024 << t)
}
const C0: usize = tier_cap(0);
const C1: usize = tier_cap(1);
const C2: usize = tier_cap(2);
const C3: usize = tier_cap(3);
const C4: usize = tier_cap(4);
const C5: usize = tier_cap(5);
const C6: usize = tier_cap(6);
const C7: usize = tier_cap(7);
const TIERS: usize = 8;

/// State memory layout: this header, then the codec at offset ENEC_STATE_ALIGN.
#[repr(C)]
struct StateHeader {
    magic: u32,
    tier: u32,
}
const DECODER_MAGIC: u32 = 0x4345_4E44; // "DNEC"
const ENCODER_MAGIC: u32 = 0x4345_4E45; // "ENEC"

macro_rules! per_tier {
    ($t:expr, $cap:ident => $body:expr) => {
        match $t {
            0 => {
                const $cap: usize = C0;
                $body
            }
            1 => {
                const $cap: usize = C1;
                $body
            }
            2 => {
                const $cap: usize = C2;
                $body
            }
            3 => {
                const $cap: usize = C3;
                $body
            }
            4 => {
                const $cap: usize = C4;
                $body
            }
            5 => {
                const $cap: usize = C5;
                $body
            }
            6 => {
                const $cap: usize = C6;
                $body
            }
            _ => {
                const $cap: usize = C7;
                $body
            }
        }
    };
}

fn tier_for(need: usize) -> Option<usize> {
    (0..TIERS).find(|&t| tier_cap(t) >= need)
}

fn decoder_bytes(t: usize) -> usize {
    ENEC_STATE_ALIGN + per_tier!(t, CAP => size_of::<Decoder<CAP>>())
}

fn encoder_bytes(t: usize) -> usize {
    ENEC_STATE_ALIGN + per_tier!(t, CAP => size_of::<Encoder<CAP>>())
}

/// Checks caller state memory and returns its tier.
unsafe fn state_tier(mem: *const c_void, magic: u32) -> Option<usize> {
    if mem.is_null() || (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return None;
    }
    let h = &*(mem as *const StateHeader);
    (h.magic == magic && (h.tier as usize) < TIERS).then_some(h.tier as usize)
}

/// Bytes of state memory a streaming decoder needs for streams of `dtype` (an `EnecDtype`
/// value) whose frames hold at most `max_frame_len` elements (default 16,384); 0 if the
/// arguments are invalid. About `2 * max_frame_len * element_bytes` plus a few hundred bytes.
#[no_mangle]
pub extern "C" fn enec_decoder_state_size(dtype: u32, max_frame_len: u32) -> usize {
    match dtype_of(dtype) {
        Some(d) if (1024..=65536).contains(&max_frame_len) && max_frame_len.is_power_of_two() => {
            tier_for(capacity_for(d, max_frame_len as usize)).map_or(0, decoder_bytes)
        }
        _ => 0,
    }
}

/// Initializes a streaming decoder in `mem` (`mem_len` bytes, aligned to `ENEC_STATE_ALIGN`,
/// at least `enec_decoder_state_size(dtype, max_frame_len)`), and stores the handle (which is
/// `mem`) in `*decoder`. The memory stays the caller's: drop it whenever; there is no "free".
///
/// # Safety
/// `mem` must point to `mem_len` writable bytes used for nothing else while the decoder lives;
/// `decoder` must be valid. Initialization builds the state by value, so it needs stack of about
/// the state size once (a concern only for frames above 16,384 elements on small stacks).
#[no_mangle]
pub unsafe extern "C" fn enec_decoder_init(
    mem: *mut c_void,
    mem_len: usize,
    dtype: u32,
    max_frame_len: u32,
    decoder: *mut *mut EnecDecoder,
) -> EnecStatus {
    let need = enec_decoder_state_size(dtype, max_frame_len);
    if need == 0 || mem.is_null() || decoder.is_null() || mem_len < need {
        return EnecStatus::InvalidArgument;
    }
    if (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return EnecStatus::InvalidArgument;
    }
    let d = dtype_of(dtype).unwrap_or(Dtype::Fp32);
    let Some(t) = tier_for(capacity_for(d, max_frame_len as usize)) else {
        return EnecStatus::InvalidArgument;
    };
    let body = (mem as *mut u8).add(ENEC_STATE_ALIGN);
    per_tier!(t, CAP => ptr::write(body as *mut Decoder<CAP>, Decoder::<CAP>::new()));
    ptr::write(
        mem as *mut StateHeader,
        StateHeader {
            magic: DECODER_MAGIC,
            tier: t as u32,
        },
    );
    decoder.write(mem as *mut EnecDecoder);
    EnecStatus::Ok
}

/// Decodes from `input` into `output`: takes what input it can, writes what output it can, and
/// reports both counts and an `EnecFlowStatus` in `*progress`. Call again with the rest of the
/// input (and more) and with fresh output room until the status is `ENEC_FLOW_STATUS_DONE`, then
/// call `enec_decoder_finish`. Errors are sticky.
///
/// # Safety
/// `decoder` must come from `enec_decoder_init`; `input` must point to `input_len` readable
/// bytes, `output` to `output_len` writable bytes; `progress` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_decoder_decode(
    decoder: *mut EnecDecoder,
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
    progress: *mut EnecProgress,
) -> EnecStatus {
    let Some(t) = state_tier(decoder as *const c_void, DECODER_MAGIC) else {
        return EnecStatus::InvalidArgument;
    };
    let (Some(input), Some(output)) = (bytes(input, input_len), bytes_mut(output, output_len))
    else {
        return EnecStatus::InvalidArgument;
    };
    if progress.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let body = (decoder as *mut u8).add(ENEC_STATE_ALIGN);
    let result = per_tier!(t, CAP => (*(body as *mut Decoder<CAP>)).decode(input, output));
    flow(result, progress)
}

unsafe fn flow(result: enec::Result<enec::Progress>, progress: *mut EnecProgress) -> EnecStatus {
    match result {
        Ok(p) => {
            progress.write(EnecProgress {
                consumed: p.consumed,
                written: p.written,
                status: match p.status {
                    Status::NeedsInput => EnecFlowStatus::NeedsInput as u32,
                    Status::HasOutput => EnecFlowStatus::HasOutput as u32,
                    Status::Done => EnecFlowStatus::Done as u32,
                },
            });
            EnecStatus::Ok
        }
        Err(e) => fail(e, ptr::null_mut()),
    }
}

/// `ENEC_STATUS_OK` if the decoder saw a complete stream; otherwise why not (truncated input,
/// or the sticky error).
///
/// # Safety
/// `decoder` must come from `enec_decoder_init`.
#[no_mangle]
pub unsafe extern "C" fn enec_decoder_finish(decoder: *const EnecDecoder) -> EnecStatus {
    let Some(t) = state_tier(decoder as *const c_void, DECODER_MAGIC) else {
        return EnecStatus::InvalidArgument;
    };
    let body = (decoder as *const u8).add(ENEC_STATE_ALIGN);
    match per_tier!(t, CAP => (*(body as *const Decoder<CAP>)).finish()) {
        Ok(()) => EnecStatus::Ok,
        Err(e) => fail(e, ptr::null_mut()),
    }
}

/// The stream header once the decoder has read it: `ENEC_STATUS_OK` and `*info` filled, or
/// `ENEC_STATUS_TRUNCATED` while fewer than 32 bytes have been passed.
///
/// # Safety
/// `decoder` must come from `enec_decoder_init`; `info` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_decoder_info(
    decoder: *const EnecDecoder,
    info: *mut EnecStreamInfo,
) -> EnecStatus {
    let Some(t) = state_tier(decoder as *const c_void, DECODER_MAGIC) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let body = (decoder as *const u8).add(ENEC_STATE_ALIGN);
    match per_tier!(t, CAP => (*(body as *const Decoder<CAP>)).info().copied()) {
        Some(i) => {
            info.write(info_of(&i));
            EnecStatus::Ok
        }
        None => EnecStatus::Truncated,
    }
}

/// Bytes of state memory a streaming encoder with `options` needs; 0 if the options are
/// invalid. About `2 * frame_len * element_bytes` plus a few hundred bytes.
///
/// # Safety
/// `options` must be valid (NULL gives 0).
#[no_mangle]
pub unsafe extern "C" fn enec_encoder_state_size(options: *const EnecOptions) -> usize {
    if options.is_null() {
        return 0;
    }
    match options_of(&*options) {
        Ok(o) => tier_for(capacity_for(o.dtype, 1usize << o.frame_log2)).map_or(0, encoder_bytes),
        Err(_) => 0,
    }
}

/// Initializes a streaming encoder for a stream of `element_count` elements in `mem` (aligned to
/// `ENEC_STATE_ALIGN`, at least `enec_encoder_state_size(options)` bytes) and stores the handle
/// in `*encoder`. The stream is byte-identical to `enec_encode`'s for the same input.
///
/// # Safety
/// As `enec_decoder_init`; `options` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_encoder_init(
    mem: *mut c_void,
    mem_len: usize,
    options: *const EnecOptions,
    element_count: u64,
    encoder: *mut *mut EnecEncoder,
) -> EnecStatus {
    let need = enec_encoder_state_size(options);
    if need == 0 || mem.is_null() || encoder.is_null() || mem_len < need {
        return EnecStatus::InvalidArgument;
    }
    if (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return EnecStatus::InvalidArgument;
    }
    let opts = match options_of(&*options) {
        Ok(o) => o,
        Err(s) => return s,
    };
    let Some(t) = tier_for(capacity_for(opts.dtype, 1usize << opts.frame_log2)) else {
        return EnecStatus::InvalidArgument;
    };
    let body = (mem as *mut u8).add(ENEC_STATE_ALIGN);
    let made = per_tier!(t, CAP => match Encoder::<CAP>::new(opts, element_count) {
        Ok(e) => {
            ptr::write(body as *mut Encoder<CAP>, e);
            Ok(())
        }
        Err(e) => Err(e),
    });
    if let Err(e) = made {
        return fail(e, ptr::null_mut());
    }
    ptr::write(
        mem as *mut StateHeader,
        StateHeader {
            magic: ENCODER_MAGIC,
            tier: t as u32,
        },
    );
    encoder.write(mem as *mut EnecEncoder);
    EnecStatus::Ok
}

/// Encodes from `input` into `output`, push/pull like `enec_decoder_decode`. Passing more input
/// in total than `element_count` elements gives `ENEC_STATUS_TRAILING_DATA`.
///
/// # Safety
/// `encoder` must come from `enec_encoder_init`; buffers as in `enec_decoder_decode`.
#[no_mangle]
pub unsafe extern "C" fn enec_encoder_encode(
    encoder: *mut EnecEncoder,
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
    progress: *mut EnecProgress,
) -> EnecStatus {
    let Some(t) = state_tier(encoder as *const c_void, ENCODER_MAGIC) else {
        return EnecStatus::InvalidArgument;
    };
    let (Some(input), Some(output)) = (bytes(input, input_len), bytes_mut(output, output_len))
    else {
        return EnecStatus::InvalidArgument;
    };
    if progress.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let body = (encoder as *mut u8).add(ENEC_STATE_ALIGN);
    let result = per_tier!(t, CAP => (*(body as *mut Encoder<CAP>)).encode(input, output));
    flow(result, progress)
}

/// `ENEC_STATUS_OK` once the whole stream has been written; otherwise why not.
///
/// # Safety
/// `encoder` must come from `enec_encoder_init`.
#[no_mangle]
pub unsafe extern "C" fn enec_encoder_finish(encoder: *const EnecEncoder) -> EnecStatus {
    let Some(t) = state_tier(encoder as *const c_void, ENCODER_MAGIC) else {
        return EnecStatus::InvalidArgument;
    };
    let body = (encoder as *const u8).add(ENEC_STATE_ALIGN);
    match per_tier!(t, CAP => (*(body as *const Encoder<CAP>)).finish()) {
        Ok(()) => EnecStatus::Ok,
        Err(e) => fail(e, ptr::null_mut()),
    }
}

// ---------------------------------------------------------------------------------------------
// Checkpoint containers (FORMAT.md section 9) in caller memory
// ---------------------------------------------------------------------------------------------

/// Container handle (opaque; lives in caller memory of `enec_container_state_size()` bytes).
pub struct EnecContainer {
    _private: [u8; 0],
}

const CONTAINER_MAGIC: u32 = 0x5043_4E45; // "ENCP"

/// The largest tensor rank a container holds.
pub const ENEC_MAX_RANK: usize = 16;

/// One tensor of a container. `name` and `dtype_name` point into the container's memory and are
/// NOT NUL-terminated: use their lengths.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EnecTensorInfo {
    /// The tensor's number among the container's tensors, from 0, in file order.
    pub index: u64,
    /// The tensor's name (`name_len` bytes of UTF-8).
    pub name: *const c_char,
    /// Bytes of `name`.
    pub name_len: usize,
    /// The original file's dtype name (`BF16`, `F32`, `I64`, ...; `dtype_name_len` bytes).
    pub dtype_name: *const c_char,
    /// Bytes of `dtype_name`.
    pub dtype_name_len: usize,
    /// The `EnecDtype` value of a tensor stored enec-coded; 0 for one stored verbatim.
    pub dtype: u32,
    /// Number of dimensions (0 for a scalar), at most `ENEC_MAX_RANK`.
    pub rank: u32,
    /// Dimensions; those past `rank` are 0.
    pub shape: [u64; ENEC_MAX_RANK],
    /// Bytes of the tensor: what `enec_container_decode_tensor` writes.
    pub bytes: u64,
    /// Bytes the tensor takes in the container.
    pub stored_bytes: u64,
    /// Byte offset of the tensor in the original file.
    pub original_offset: u64,
    /// Byte offset of its `stored_bytes` in the container: for an enec-coded tensor, where its
    /// enec stream starts (what `enec_cuda_load` of the CUDA library takes to decode it on a GPU).
    pub stored_offset: u64,
}

/// Converts a container error, filling `detail` when it is not NULL.
unsafe fn container_fail(e: ContainerError, detail: *mut EnecErrorDetail) -> EnecStatus {
    let (status, value) = match e {
        ContainerError::Stream { error, .. } => return fail(error, detail),
        ContainerError::Truncated { needed, .. } => (EnecStatus::Truncated, needed),
        ContainerError::OutputTooSmall { needed } => (EnecStatus::OutputTooSmall, needed),
        ContainerError::RawChecksumMismatch { .. } => (EnecStatus::ChecksumMismatch, 0),
        ContainerError::UnsupportedVersion { .. } => (EnecStatus::UnsupportedVersion, 0),
        ContainerError::CorruptIndex { entry, .. }
        | ContainerError::UnsupportedPieceKind { entry, .. } => {
            (EnecStatus::CorruptContainer, entry)
        }
        _ => (EnecStatus::CorruptContainer, 0),
    };
    if !detail.is_null() {
        detail.write(EnecErrorDetail {
            status,
            frame: 0,
            value,
        });
    }
    status
}

/// The container behind a handle from `enec_container_open`.
unsafe fn container_of<'a>(handle: *const EnecContainer) -> Option<&'a Container<'a>> {
    let mem = handle as *const c_void;
    if mem.is_null() || (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return None;
    }
    let h = &*(mem as *const StateHeader);
    (h.magic == CONTAINER_MAGIC)
        .then(|| &*((mem as *const u8).add(ENEC_STATE_ALIGN) as *const Container<'a>))
}

/// Tensor number `index` (tensors only, in file order) and its entry number.
fn tensor_at<'a>(c: &Container<'a>, index: u64) -> Option<(u64, Entry<'a>)> {
    c.entries()
        .filter(|(_, e)| e.is_tensor())
        .nth(usize::try_from(index).ok()?)
}

fn tensor_info(index: u64, e: &Entry<'_>) -> EnecTensorInfo {
    let mut shape = [0u64; ENEC_MAX_RANK];
    shape[..e.shape.len()].copy_from_slice(&e.shape);
    let enec_coded = e.kind == enec::container::PieceKind::Enec;
    EnecTensorInfo {
        index,
        name: e.name.as_ptr() as *const c_char,
        name_len: e.name.len(),
        dtype_name: e.dtype.as_ptr() as *const c_char,
        dtype_name_len: e.dtype.len(),
        dtype: match dtype_from_safetensors(e.dtype) {
            Some(d) if enec_coded => u32::from(d.code()),
            _ => 0,
        },
        rank: e.shape.len() as u32,
        shape,
        bytes: e.original_len,
        stored_bytes: e.len,
        original_offset: e.original_offset,
        stored_offset: e.offset,
    }
}

/// Bytes of caller memory a container handle needs (aligned to `ENEC_STATE_ALIGN`): a few dozen,
/// whatever the container's size.
#[no_mangle]
pub extern "C" fn enec_container_state_size() -> usize {
    ENEC_STATE_ALIGN + size_of::<Container<'static>>()
}

/// Checks the container `file` (`file_len` bytes: its header, footer, index and padding; the
/// tensors are checked when they are decoded, in time proportional to the index) and stores a
/// handle to it, which lives in `mem`, in `*container`. There is no "close": the memory stays
/// the caller's.
///
/// # Safety
/// `mem` must point to `mem_len` writable bytes aligned to `ENEC_STATE_ALIGN`, used for nothing
/// else while the handle is used; `file` must point to `file_len` readable bytes that stay
/// unchanged while the handle is used; `container` must be valid; `detail` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn enec_container_open(
    mem: *mut c_void,
    mem_len: usize,
    file: *const u8,
    file_len: usize,
    container: *mut *mut EnecContainer,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    if mem.is_null() || container.is_null() || mem_len < enec_container_state_size() {
        return EnecStatus::InvalidArgument;
    }
    if (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return EnecStatus::InvalidArgument;
    }
    let Some(file) = bytes(file, file_len) else {
        return EnecStatus::InvalidArgument;
    };
    let parsed = match Container::parse(file) {
        Ok(c) => c,
        Err(e) => return container_fail(e, detail),
    };
    ptr::write(
        (mem as *mut u8).add(ENEC_STATE_ALIGN) as *mut Container<'_>,
        parsed,
    );
    ptr::write(
        mem as *mut StateHeader,
        StateHeader {
            magic: CONTAINER_MAGIC,
            tier: 0,
        },
    );
    container.write(mem as *mut EnecContainer);
    EnecStatus::Ok
}

/// The number of tensors in the container, into `*count` (pieces of the original file that are
/// not tensors, such as its header, are not counted).
///
/// # Safety
/// `container` must come from `enec_container_open`; `count` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_tensor_count(
    container: *const EnecContainer,
    count: *mut u64,
) -> EnecStatus {
    let Some(c) = container_of(container) else {
        return EnecStatus::InvalidArgument;
    };
    if count.is_null() {
        return EnecStatus::InvalidArgument;
    }
    count.write(c.entries().filter(|(_, e)| e.is_tensor()).count() as u64);
    EnecStatus::Ok
}

/// Describes tensor number `index` (0 ..< `enec_container_tensor_count`) in `*info`;
/// `ENEC_STATUS_NOT_FOUND` past the last. Takes time proportional to `index`.
///
/// # Safety
/// `container` must come from `enec_container_open`; `info` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_tensor(
    container: *const EnecContainer,
    index: u64,
    info: *mut EnecTensorInfo,
) -> EnecStatus {
    let Some(c) = container_of(container) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    match tensor_at(c, index) {
        Some((_, entry)) => {
            info.write(tensor_info(index, &entry));
            EnecStatus::Ok
        }
        None => EnecStatus::NotFound,
    }
}

/// Describes the tensor named `name` (`name_len` bytes, no NUL needed) in `*info`;
/// `ENEC_STATUS_NOT_FOUND` if there is none. `info->index` is its number for
/// `enec_container_decode_tensor`.
///
/// # Safety
/// `container` must come from `enec_container_open`; `name` must point to `name_len` readable
/// bytes; `info` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_find(
    container: *const EnecContainer,
    name: *const c_char,
    name_len: usize,
    info: *mut EnecTensorInfo,
) -> EnecStatus {
    let Some(c) = container_of(container) else {
        return EnecStatus::InvalidArgument;
    };
    let Some(name) = bytes(name as *const u8, name_len) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let found = c
        .entries()
        .filter(|(_, e)| e.is_tensor())
        .enumerate()
        .find(|(_, (_, e))| e.name.as_bytes() == name);
    match found {
        Some((index, (_, entry))) => {
            info.write(tensor_info(index as u64, &entry));
            EnecStatus::Ok
        }
        None => EnecStatus::NotFound,
    }
}

/// Restores tensor number `index` into `out` (`out_cap` bytes, at least the tensor's `bytes`),
/// verifying its checksums, on the calling thread; the bytes written go to `*out_len`. A damaged
/// tensor gives an error (with the frame in `detail`), never wrong data as good.
///
/// # Safety
/// `container` must come from `enec_container_open`; `out` must point to `out_cap` writable
/// bytes not overlapping the container; `out_len` must be valid; `detail` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn enec_container_decode_tensor(
    container: *const EnecContainer,
    index: u64,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    let Some(c) = container_of(container) else {
        return EnecStatus::InvalidArgument;
    };
    let Some(out) = bytes_mut(out, out_cap) else {
        return EnecStatus::InvalidArgument;
    };
    if out_len.is_null() {
        return EnecStatus::InvalidArgument;
    }
    let Some((number, entry)) = tensor_at(c, index) else {
        return EnecStatus::NotFound;
    };
    match c.decode_entry(number, &entry, out) {
        Ok(n) => {
            out_len.write(n);
            EnecStatus::Ok
        }
        Err(e) => container_fail(e, detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use enec::container::MAX_RANK;

    #[test]
    fn state_fits_and_alignment_holds() {
        assert!(core::mem::align_of::<Decoder<C0>>() <= ENEC_STATE_ALIGN);
        assert!(core::mem::align_of::<Encoder<C7>>() <= ENEC_STATE_ALIGN);
        assert!(size_of::<StateHeader>() <= ENEC_STATE_ALIGN);
        assert_eq!(tier_cap(2), capacity_for(Dtype::Fp32, 2048));
        assert!(enec_decoder_state_size(1, 16384) < enec_decoder_state_size(3, 16384));
        assert_eq!(enec_decoder_state_size(9, 16384), 0);
        assert_eq!(enec_decoder_state_size(1, 1000), 0);
        assert!(core::mem::align_of::<Container<'static>>() <= ENEC_STATE_ALIGN);
        assert_eq!(ENEC_MAX_RANK, MAX_RANK);
    }

    #[test]
    fn default_options_are_the_librarys() {
        for (code, dtype) in [
            (EnecDtype::Bf16, Dtype::Bf16),
            (EnecDtype::Fp16, Dtype::Fp16),
            (EnecDtype::Fp32, Dtype::Fp32),
        ] {
            let c = enec_options_default(code as u32);
            assert_eq!(options_of(&c), Ok(EncodeOptions::new(dtype)));
            assert_eq!(c.coding, EnecCoding::Ranked as u32);
        }
    }
}
