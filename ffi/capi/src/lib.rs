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
//!   caller memory (sized by [`enec_container_state_size`]); [`enec_container_tensor`] (constant
//!   time) / [`enec_container_find`] describe a tensor (name, dtype, shape, sizes) by number or
//!   name; [`enec_container_decode_tensor`] restores one into a caller buffer;
//!   [`enec_container_restore`] (into a buffer of [`enec_container_restored_size`] bytes) and
//!   [`enec_container_restore_to`] (through a write callback) restore the whole file, verifying
//!   every byte of the container. A handle may be shared by any number of threads.
//!
//! Nothing here allocates. Every function checks its pointers for NULL and its arguments for
//! range and returns an [`EnecStatus`]; those that take an [`EnecErrorDetail`] write it on every
//! return, with a message ([`enec_status_message`] describes a status alone). A panic would abort (Rust
//! aborts a panic that reaches an `extern "C"` function) and cannot unwind into C.
#![allow(clippy::missing_safety_doc)] // each function documents its contract in "Safety" prose
#![deny(unsafe_op_in_unsafe_fn)]

use core::ffi::{c_char, c_int, c_void};
use core::fmt;
use core::mem::size_of;
use core::ptr;
use core::slice;

use enec::checksum::h32;
use enec::container::safetensors_header::{Header, JsonStr, Member, Tensor as HeaderTensor};
use enec::container::{
    check_stream, dtype_from_safetensors, header_of, run_tensors, Container, ContainerError, Entry,
    PieceKind, RunTensor, RunTensorsError,
};
use enec::streaming::{capacity_for, Decoder, Encoder, Status};
use enec::wrapped::{max_frame_bytes, FrameDecoder, FrameEncoder};
use enec::{Coding, Dtype, EncodeOptions, Error, FrameCoding};

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
    /// The container is damaged in a way no more specific status names.
    CorruptContainer = 18,
    /// No tensor of that name or number in the container.
    NotFound = 19,
    /// Not a checkpoint container (magic `ENCP` missing at its start).
    NotAContainer = 20,
    /// The container has no footer: the file is truncated or was not completely written.
    MissingFooter = 21,
    /// The container header (its first 32 bytes) fails its check or has nonzero reserved bytes.
    CorruptContainerHeader = 22,
    /// The container footer (its last 32 bytes) fails its check or disagrees with the file size.
    CorruptContainerFooter = 23,
    /// The container index does not match the checksum in the footer.
    IndexChecksumMismatch = 24,
    /// The index (its entry `detail.entry`) breaks a rule of the format, or the zero padding
    /// between payloads is not zero.
    CorruptIndex = 25,
    /// Entry `detail.entry` has a piece kind this library does not know.
    UnsupportedPieceKind = 26,
    /// The verbatim bytes of entry `detail.entry` (a file header, a gap, a tensor stored as is)
    /// do not match their checksum.
    PieceChecksumMismatch = 27,
    /// A frame (`detail.frame` of entry `detail.entry`) decodes correctly but its bytes differ
    /// from what a conforming encoder writes for that data: damage in bytes that carry no
    /// information (padding, unused bits, unused symbol-table entries).
    NoncanonicalFrame = 28,
    /// The caller's write callback returned nonzero (its value is in `detail.value`).
    WriteFailed = 29,
}

/// Element type (the stream header's code).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnecDtype {
    Bf16 = 1,
    Fp16 = 2,
    Fp32 = 3,
    /// OCP float8 e4m3fn (format version 1.1).
    E4m3 = 4,
    /// OCP float8 e5m2 (format version 1.1).
    E5m2 = 5,
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

/// Bytes of `EnecErrorDetail::message`, its NUL included.
pub const ENEC_MESSAGE_BYTES: usize = 192;

/// `EnecErrorDetail::entry` when the status concerns no entry of a container.
pub const ENEC_NO_ENTRY: u64 = u64::MAX;

/// What went wrong and where. A function that takes a `detail` pointer writes it on every
/// return, success included (`status` `ENEC_STATUS_OK`, `message` empty); it may be NULL.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EnecErrorDetail {
    /// The status returned.
    pub status: EnecStatus,
    /// Frame index for frame errors, else 0.
    pub frame: u32,
    /// Bytes needed (truncated input, output too small, frame too large, state memory too
    /// small) or in excess (trailing data), the callback's value (write failed), else 0.
    pub value: u64,
    /// The container entry (piece) the error lies in, numbered from 0 in file order over all
    /// pieces, tensors or not; `ENEC_NO_ENTRY` when it lies in none.
    pub entry: u64,
    /// NUL-terminated English description of this error, more precise than
    /// `enec_status_message(status)` (names the piece, the frame, the rule broken); truncated to
    /// fit.
    pub message: [c_char; ENEC_MESSAGE_BYTES],
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

/// A `fmt::Write` into a fixed C string buffer: keeps whole characters while they fit, always
/// leaves room for the NUL.
struct CText<'a> {
    buf: &'a mut [c_char; ENEC_MESSAGE_BYTES],
    len: usize,
}

impl fmt::Write for CText<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for ch in s.chars() {
            let mut utf8 = [0u8; 4];
            let bytes = ch.encode_utf8(&mut utf8).as_bytes();
            if self.len + bytes.len() >= ENEC_MESSAGE_BYTES {
                return Err(fmt::Error);
            }
            for &b in bytes {
                self.buf[self.len] = b as c_char;
                self.len += 1;
            }
        }
        Ok(())
    }
}

/// Fills `detail` (when it is not NULL) and returns `status`.
///
/// # Safety
/// `detail` must be NULL or valid for writes of an `EnecErrorDetail`. The same holds for every
/// helper below that takes a `detail`.
unsafe fn report(
    detail: *mut EnecErrorDetail,
    status: EnecStatus,
    frame: u32,
    value: u64,
    entry: u64,
    message: &dyn fmt::Display,
) -> EnecStatus {
    if !detail.is_null() {
        let mut d = EnecErrorDetail {
            status,
            frame,
            value,
            entry,
            message: [0; ENEC_MESSAGE_BYTES],
        };
        let mut text = CText {
            buf: &mut d.message,
            len: 0,
        };
        // Truncated when too long.
        let _ = fmt::write(&mut text, format_args!("{message}"));
        // SAFETY: not NULL (checked above), so valid for writes by this function's contract.
        unsafe { detail.write(d) };
    }
    status
}

/// Success: `detail` says so.
unsafe fn ok(detail: *mut EnecErrorDetail) -> EnecStatus {
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    unsafe { report(detail, EnecStatus::Ok, 0, 0, ENEC_NO_ENTRY, &"") }
}

/// `ENEC_STATUS_INVALID_ARGUMENT`, with what is wrong in `detail`.
unsafe fn invalid(detail: *mut EnecErrorDetail, what: &str) -> EnecStatus {
    let message = format_args!("invalid argument: {what}");
    let status = EnecStatus::InvalidArgument;
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    unsafe { report(detail, status, 0, 0, ENEC_NO_ENTRY, &message) }
}

/// Converts an error, filling `detail` when it is not NULL.
unsafe fn fail(e: Error, detail: *mut EnecErrorDetail) -> EnecStatus {
    let (status, frame, value) = status_of(&e);
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    unsafe { report(detail, status, frame, value, ENEC_NO_ENTRY, &e) }
}

/// The status for an error, with no detail to fill.
fn fail_bare(e: Error) -> EnecStatus {
    // SAFETY: `report` takes a NULL `detail`.
    unsafe { fail(e, ptr::null_mut()) }
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
///
/// # Safety
/// Unless NULL or `len` is 0, `p` must point to `len` readable bytes that stay unchanged for
/// `'a`.
unsafe fn bytes<'a>(p: *const u8, len: usize) -> Option<&'a [u8]> {
    if len == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        // SAFETY: `p` is not NULL and `len` is not 0 (checked above), so by this function's
        // contract it points to `len` readable bytes unchanged for `'a`; bytes need no alignment.
        Some(unsafe { slice::from_raw_parts(p, len) })
    }
}

/// A mutable byte slice from C; NULL is allowed only for length 0.
///
/// # Safety
/// Unless NULL or `len` is 0, `p` must point to `len` writable bytes that nothing else reads or
/// writes for `'a`.
unsafe fn bytes_mut<'a>(p: *mut u8, len: usize) -> Option<&'a mut [u8]> {
    if len == 0 {
        Some(&mut [])
    } else if p.is_null() {
        None
    } else {
        // SAFETY: `p` is not NULL and `len` is not 0 (checked above), so by this function's
        // contract it points to `len` writable bytes used by nothing else for `'a`.
        Some(unsafe { slice::from_raw_parts_mut(p, len) })
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

/// A static, NUL-terminated English description of a status (never NULL; "unknown error" for a
/// value that is no `EnecStatus`). `EnecErrorDetail::message` says more about one error.
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
        17 => c"an error this version of the C ABI does not name",
        18 => c"the checkpoint container is damaged",
        19 => c"no tensor of that name or number in the container",
        20 => c"not an enec checkpoint container (magic bytes ENCP missing)",
        21 => c"the container has no footer: the file is truncated or was not completely written",
        22 => c"corrupt container header",
        23 => c"corrupt container footer (or the file was truncated or extended)",
        24 => c"the container index does not match its checksum: the file is corrupt",
        25 => c"corrupt container index (or nonzero padding between payloads)",
        26 => c"a container piece has a kind this library does not know",
        27 => c"checksum mismatch in a verbatim piece (file header, gap or raw tensor): the file is corrupt",
        28 => c"a frame's bytes differ from what the encoder writes for its data: the file is corrupt",
        29 => c"the write callback reported an error",
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
    // SAFETY: not NULL (checked above), so valid by the contract.
    let opts = match options_of(unsafe { &*options }) {
        Ok(o) => o,
        Err(s) => return s,
    };
    match enec::max_encoded_size(&opts, input_bytes) {
        Ok(n) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { size.write(n) };
            EnecStatus::Ok
        }
        Err(e) => fail_bare(e),
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
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`options` or `out_len` is NULL") };
    }
    // SAFETY: by the contract `input` and `out` point to that many bytes (or are NULL, which
    // `bytes` rejects), and do not overlap.
    let (input, out) = unsafe { (bytes(input, input_len), bytes_mut(out, out_cap)) };
    let (Some(input), Some(out)) = (input, out) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`input` or `out` is NULL with a nonzero length") };
    };
    // SAFETY: not NULL (checked above), so valid by the contract.
    let options = unsafe { &*options };
    let opts = match options_of(options) {
        Ok(o) => o,
        Err(EnecStatus::InvalidFrameLength) => {
            let e = Error::InvalidFrameLength(options.frame_len);
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            return unsafe { fail(e, detail) };
        }
        Err(_) => {
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            return unsafe { invalid(detail, "unknown dtype or coding in `options`") };
        }
    };
    match enec::encode(&opts, input, out) {
        Ok(n) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { out_len.write(n) };
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { ok(detail) }
        }
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(e) => unsafe { fail(e, detail) },
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
    // SAFETY: by the contract `stream` points to `stream_len` readable bytes (or is NULL).
    let Some(stream) = (unsafe { bytes(stream, stream_len) }) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    match enec::read_header(stream) {
        Ok(i) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { info.write(info_of(&i)) };
            EnecStatus::Ok
        }
        Err(e) => fail_bare(e),
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
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`out_len` is NULL") };
    }
    // SAFETY: by the contract `stream` and `out` point to that many bytes (or are NULL, which
    // `bytes` rejects), and do not overlap.
    let (stream, out) = unsafe { (bytes(stream, stream_len), bytes_mut(out, out_cap)) };
    let (Some(stream), Some(out)) = (stream, out) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`stream` or `out` is NULL with a nonzero length") };
    };
    match enec::decode(stream, out) {
        Ok(n) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { out_len.write(n) };
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { ok(detail) }
        }
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(e) => unsafe { fail(e, detail) },
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
///
/// # Safety
/// `mem` must be NULL or point to state memory initialized by `enec_decoder_init` or
/// `enec_encoder_init` (the magic number only tells the two apart; it proves nothing).
unsafe fn state_tier(mem: *const c_void, magic: u32) -> Option<usize> {
    if mem.is_null() || (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return None;
    }
    // SAFETY: not NULL and aligned (checked above); initialized state starts with a
    // `StateHeader` (this function's contract).
    let h = unsafe { &*(mem as *const StateHeader) };
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
    let header = StateHeader {
        magic: DECODER_MAGIC,
        tier: t as u32,
    };
    // SAFETY: `mem` is not NULL, is aligned to ENEC_STATE_ALIGN and holds `mem_len >= need`
    // writable bytes (checked above; the contract makes them the decoder's). `need` is
    // `decoder_bytes(t)`: the header fits before ENEC_STATE_ALIGN and `Decoder<CAP>` after it,
    // which is aligned since no decoder needs more than ENEC_STATE_ALIGN. `decoder` is not NULL
    // (checked above), so valid by the contract.
    unsafe {
        let body = (mem as *mut u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => ptr::write(body as *mut Decoder<CAP>, Decoder::<CAP>::new()));
        ptr::write(mem as *mut StateHeader, header);
        decoder.write(mem as *mut EnecDecoder);
    }
    EnecStatus::Ok
}

/// Decodes from `input` into `output`: takes what input it can, writes what output it can, and
/// reports both counts and an `EnecFlowStatus` in `*progress`. Call again with the rest of the
/// input (and more) and with fresh output room until the status is `ENEC_FLOW_STATUS_DONE`, then
/// call `enec_decoder_finish`. Errors are sticky.
///
/// # Safety
/// `decoder` must come from `enec_decoder_init`; `input` must point to `input_len` readable
/// bytes, `output` to `output_len` writable bytes not overlapping `input`; `progress` must be
/// valid.
#[no_mangle]
pub unsafe extern "C" fn enec_decoder_decode(
    decoder: *mut EnecDecoder,
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
    progress: *mut EnecProgress,
) -> EnecStatus {
    // SAFETY: `decoder` comes from `enec_decoder_init` (the contract).
    let Some(t) = (unsafe { state_tier(decoder as *const c_void, DECODER_MAGIC) }) else {
        return EnecStatus::InvalidArgument;
    };
    // SAFETY: by the contract `input` and `output` point to that many bytes (or are NULL, which
    // `bytes` rejects), and do not overlap.
    let (input, output) = unsafe { (bytes(input, input_len), bytes_mut(output, output_len)) };
    let (Some(input), Some(output)) = (input, output) else {
        return EnecStatus::InvalidArgument;
    };
    if progress.is_null() {
        return EnecStatus::InvalidArgument;
    }
    // SAFETY: `enec_decoder_init` wrote a `Decoder<CAP>` of tier `t` at ENEC_STATE_ALIGN, and the
    // caller uses the state from one thread at a time, so the `&mut` is unique.
    let result = unsafe {
        let body = (decoder as *mut u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => (*(body as *mut Decoder<CAP>)).decode(input, output))
    };
    // SAFETY: not NULL (checked above), so valid by the contract.
    unsafe { flow(result, progress) }
}

/// Writes the progress of a streaming call to `progress`.
///
/// # Safety
/// `progress` must be valid for writes.
unsafe fn flow(result: enec::Result<enec::Progress>, progress: *mut EnecProgress) -> EnecStatus {
    match result {
        Ok(p) => {
            let p = EnecProgress {
                consumed: p.consumed,
                written: p.written,
                status: match p.status {
                    Status::NeedsInput => EnecFlowStatus::NeedsInput as u32,
                    Status::HasOutput => EnecFlowStatus::HasOutput as u32,
                    Status::Done => EnecFlowStatus::Done as u32,
                },
            };
            // SAFETY: valid for writes (this function's contract).
            unsafe { progress.write(p) };
            EnecStatus::Ok
        }
        Err(e) => fail_bare(e),
    }
}

/// `ENEC_STATUS_OK` if the decoder saw a complete stream; otherwise why not (truncated input,
/// or the sticky error).
///
/// # Safety
/// `decoder` must come from `enec_decoder_init`.
#[no_mangle]
pub unsafe extern "C" fn enec_decoder_finish(decoder: *const EnecDecoder) -> EnecStatus {
    // SAFETY: `decoder` comes from `enec_decoder_init` (the contract).
    let Some(t) = (unsafe { state_tier(decoder as *const c_void, DECODER_MAGIC) }) else {
        return EnecStatus::InvalidArgument;
    };
    // SAFETY: `enec_decoder_init` wrote a `Decoder<CAP>` of tier `t` at ENEC_STATE_ALIGN.
    let result = unsafe {
        let body = (decoder as *const u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => (*(body as *const Decoder<CAP>)).finish())
    };
    match result {
        Ok(()) => EnecStatus::Ok,
        Err(e) => fail_bare(e),
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
    // SAFETY: `decoder` comes from `enec_decoder_init` (the contract).
    let Some(t) = (unsafe { state_tier(decoder as *const c_void, DECODER_MAGIC) }) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    // SAFETY: `enec_decoder_init` wrote a `Decoder<CAP>` of tier `t` at ENEC_STATE_ALIGN.
    let i = unsafe {
        let body = (decoder as *const u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => (*(body as *const Decoder<CAP>)).info().copied())
    };
    match i {
        Some(i) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { info.write(info_of(&i)) };
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
    // SAFETY: not NULL (checked above), so valid by the contract.
    match options_of(unsafe { &*options }) {
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
    // SAFETY: `options` is NULL or valid (the contract).
    let need = unsafe { enec_encoder_state_size(options) };
    if need == 0 || mem.is_null() || encoder.is_null() || mem_len < need {
        return EnecStatus::InvalidArgument;
    }
    if (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return EnecStatus::InvalidArgument;
    }
    // SAFETY: not NULL (`need` is 0 for NULL), so valid by the contract.
    let opts = match options_of(unsafe { &*options }) {
        Ok(o) => o,
        Err(s) => return s,
    };
    let Some(t) = tier_for(capacity_for(opts.dtype, 1usize << opts.frame_log2)) else {
        return EnecStatus::InvalidArgument;
    };
    // SAFETY: as in `enec_decoder_init`: `mem` is not NULL, aligned and holds
    // `mem_len >= need = encoder_bytes(t)` writable bytes (checked above), room for the header
    // and, at ENEC_STATE_ALIGN (enough alignment for any encoder), an `Encoder<CAP>`.
    let made = unsafe {
        let body = (mem as *mut u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => match Encoder::<CAP>::new(opts, element_count) {
            Ok(e) => {
                ptr::write(body as *mut Encoder<CAP>, e);
                Ok(())
            }
            Err(e) => Err(e),
        })
    };
    if let Err(e) = made {
        return fail_bare(e);
    }
    let header = StateHeader {
        magic: ENCODER_MAGIC,
        tier: t as u32,
    };
    // SAFETY: the header fits `mem` (above); `encoder` is not NULL (checked above), so valid by
    // the contract.
    unsafe {
        ptr::write(mem as *mut StateHeader, header);
        encoder.write(mem as *mut EnecEncoder);
    }
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
    // SAFETY: `encoder` comes from `enec_encoder_init` (the contract).
    let Some(t) = (unsafe { state_tier(encoder as *const c_void, ENCODER_MAGIC) }) else {
        return EnecStatus::InvalidArgument;
    };
    // SAFETY: by the contract `input` and `output` point to that many bytes (or are NULL, which
    // `bytes` rejects), and do not overlap.
    let (input, output) = unsafe { (bytes(input, input_len), bytes_mut(output, output_len)) };
    let (Some(input), Some(output)) = (input, output) else {
        return EnecStatus::InvalidArgument;
    };
    if progress.is_null() {
        return EnecStatus::InvalidArgument;
    }
    // SAFETY: `enec_encoder_init` wrote a `Encoder<CAP>` of tier `t` at ENEC_STATE_ALIGN, and the
    // caller uses the state from one thread at a time, so the `&mut` is unique.
    let result = unsafe {
        let body = (encoder as *mut u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => (*(body as *mut Encoder<CAP>)).encode(input, output))
    };
    // SAFETY: not NULL (checked above), so valid by the contract.
    unsafe { flow(result, progress) }
}

/// `ENEC_STATUS_OK` once the whole stream has been written; otherwise why not.
///
/// # Safety
/// `encoder` must come from `enec_encoder_init`.
#[no_mangle]
pub unsafe extern "C" fn enec_encoder_finish(encoder: *const EnecEncoder) -> EnecStatus {
    // SAFETY: `encoder` comes from `enec_encoder_init` (the contract).
    let Some(t) = (unsafe { state_tier(encoder as *const c_void, ENCODER_MAGIC) }) else {
        return EnecStatus::InvalidArgument;
    };
    // SAFETY: `enec_encoder_init` wrote a `Encoder<CAP>` of tier `t` at ENEC_STATE_ALIGN.
    let result = unsafe {
        let body = (encoder as *const u8).add(ENEC_STATE_ALIGN);
        per_tier!(t, CAP => (*(body as *const Encoder<CAP>)).finish())
    };
    match result {
        Ok(()) => EnecStatus::Ok,
        Err(e) => fail_bare(e),
    }
}

// ---------------------------------------------------------------------------------------------
// Checkpoint containers (FORMAT.md section 9) in caller memory
// ---------------------------------------------------------------------------------------------

/// Container handle (opaque; lives in caller memory of `enec_container_state_size` bytes).
///
/// Thread safety: `enec_container_open` writes the handle; after it returns, no function
/// changes the handle or the container's bytes. Every function that takes a
/// `const EnecContainer *` (tensor count, tensor, find, decode, restored size, scratch size,
/// restore) may be called on one handle from any number of threads at once, each call with its
/// own output, scratch and detail memory. Neither the handle memory nor the file may change or be
/// freed while any such call runs.
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

/// The write callback of `enec_container_restore_to`: writes `len` bytes at `bytes` (the next
/// bytes of the restored file, already verified) and returns 0, or nonzero to stop the restore.
pub type EnecWriteFn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, bytes: *const u8, len: usize) -> c_int>;

/// Where tensor number `i` is. A tensor with an index entry: `key_at` is `NO_MEMBER`, `run` its
/// own entry number and position in the entries. A tensor kept in a run of verbatim bytes
/// (FORMAT.md 9.6): its safetensors header member and the run ([`RunTensor`]).
type TensorSlot = RunTensor;

/// `TensorSlot::key_at` of a tensor with an index entry.
const NO_MEMBER: usize = usize::MAX;
/// A text slot of a tensor whose name and dtype name are written without escapes (they are
/// read in place in the header).
const NO_TEXT: u32 = u32::MAX;

/// The handle, after its `StateHeader` at offset 0. Its tensor table follows at `SLOTS_AT`
/// (`capacity` slots, `tensors` of them used), then a `u32` per slot (where slot `i`'s name
/// and then dtype name, escapes resolved, start in the text area, or `NO_TEXT`), then the text
/// area.
#[repr(C)]
struct Handle<'a> {
    container: Container<'a>,
    tensors: u64,
    capacity: u64,
    /// The safetensors header the container starts with, read in place.
    header: Option<Header<'a>>,
    /// Why the tensors kept in runs of verbatim bytes cannot be listed: the per-tensor calls
    /// report it (the whole-file restore does not need the list).
    fault: Option<RunTensorsError>,
    /// Scratch bytes a restore needs (`enec_container_scratch_size`).
    scratch: usize,
}

/// Offset of the tensor table in the handle memory.
const SLOTS_AT: usize =
    (ENEC_STATE_ALIGN + size_of::<Handle<'static>>()).next_multiple_of(ENEC_STATE_ALIGN);

/// [`container_fail`] with the message naming the piece of `c` the error lies in (`tensor
/// "name"`, the file header, a byte range of the original).
unsafe fn container_fail_in(
    c: &Container<'_>,
    e: ContainerError,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    let piece = e.entry().and_then(|n| c.entries().find(|(i, _)| *i == n));
    let Some((_, entry)) = piece else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { container_fail(e, detail) };
    };
    // SAFETY: `report` takes a NULL `detail`.
    let status = unsafe { container_fail(e, ptr::null_mut()) };
    let (frame, value, number) = match e {
        ContainerError::Stream { error, entry } => {
            (status_of(&error).1, status_of(&error).2, entry)
        }
        _ => (0, 0, e.entry().unwrap_or(ENEC_NO_ENTRY)),
    };
    let message = format_args!("{e} ({})", entry.describe());
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    unsafe { report(detail, status, frame, value, number, &message) }
}

/// Converts a container error, filling `detail` when it is not NULL.
unsafe fn container_fail(e: ContainerError, detail: *mut EnecErrorDetail) -> EnecStatus {
    let entry = e.entry().unwrap_or(ENEC_NO_ENTRY);
    let (status, frame, value) = match e {
        ContainerError::Stream { error, .. } => status_of(&error),
        ContainerError::Truncated { needed, .. } => (EnecStatus::Truncated, 0, needed),
        ContainerError::OutputTooSmall { needed } => (EnecStatus::OutputTooSmall, 0, needed),
        ContainerError::BadMagic => (EnecStatus::NotAContainer, 0, 0),
        ContainerError::MissingFooter => (EnecStatus::MissingFooter, 0, 0),
        ContainerError::CorruptHeader(_) => (EnecStatus::CorruptContainerHeader, 0, 0),
        ContainerError::CorruptFooter(_) => (EnecStatus::CorruptContainerFooter, 0, 0),
        ContainerError::IndexChecksumMismatch => (EnecStatus::IndexChecksumMismatch, 0, 0),
        ContainerError::CorruptIndex { .. } => (EnecStatus::CorruptIndex, 0, 0),
        ContainerError::UnsupportedPieceKind { .. } => (EnecStatus::UnsupportedPieceKind, 0, 0),
        ContainerError::RawChecksumMismatch { .. } => (EnecStatus::PieceChecksumMismatch, 0, 0),
        ContainerError::UnsupportedVersion { .. } => (EnecStatus::UnsupportedVersion, 0, 0),
        _ => (EnecStatus::CorruptContainer, 0, 0),
    };
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    unsafe { report(detail, status, frame, value, entry, &e) }
}

/// The handle behind a pointer from `enec_container_open`.
///
/// # Safety
/// `handle` must be NULL or come from `enec_container_open`, with its memory and file unchanged
/// for `'a` (the magic number rejects other state memory; it proves nothing).
unsafe fn handle_of<'a>(handle: *const EnecContainer) -> Option<&'a Handle<'a>> {
    let mem = handle as *const c_void;
    if mem.is_null() || (mem as usize) % ENEC_STATE_ALIGN != 0 {
        return None;
    }
    // SAFETY: not NULL and aligned (checked above); `enec_container_open` wrote a
    // `StateHeader` at offset 0 (this function's contract).
    let h = unsafe { &*(mem as *const StateHeader) };
    // SAFETY: a container handle has its `Handle` at ENEC_STATE_ALIGN, read-only and unchanged
    // for `'a` (this function's contract).
    (h.magic == CONTAINER_MAGIC)
        .then(|| unsafe { &*((mem as *const u8).add(ENEC_STATE_ALIGN) as *const Handle<'a>) })
}

/// The container behind a handle.
///
/// # Safety
/// As [`handle_of`].
unsafe fn container_of<'a>(handle: *const EnecContainer) -> Option<&'a Container<'a>> {
    // SAFETY: this function's contract is `handle_of`'s.
    unsafe { handle_of(handle) }.map(|h| &h.container)
}

/// A tensor of a handle: its index entry, or the header member of a tensor kept in a run.
enum Found<'a> {
    Indexed(u64, Entry<'a>),
    InRun {
        slot: TensorSlot,
        member: Member<'a>,
        tensor: HeaderTensor<'a>,
        /// The name then the dtype name, escapes resolved, where either has escapes.
        text: Option<&'a [u8]>,
    },
}

/// Tensor number `index` (in file order), in constant time (for a tensor kept in a run, time
/// proportional to its header member).
///
/// # Safety
/// `h` must be `handle_of(handle)`, so `handle` comes from `enec_container_open`.
unsafe fn tensor_at<'a>(
    handle: *const EnecContainer,
    h: &Handle<'a>,
    index: u64,
) -> Option<Found<'a>> {
    if index >= h.tensors {
        return None;
    }
    // SAFETY: `enec_container_open` wrote `h.tensors` slots at SLOTS_AT (aligned for them) and
    // `h.capacity >= h.tensors` text offsets after the table, in memory it checked holds
    // `state_bytes(..)` bytes, unchanged since (the contract); `index < h.tensors` (above).
    let (slot, text_at) = unsafe {
        let slots = (handle as *const u8).add(SLOTS_AT) as *const TensorSlot;
        let texts = slots.add(h.capacity as usize) as *const u32;
        (*slots.add(index as usize), *texts.add(index as usize))
    };
    if slot.key_at == NO_MEMBER {
        let (number, position) = slot.run?;
        return h
            .container
            .index()
            .entries_from(number, position)
            .next()
            .filter(|(n, e)| *n == number && e.is_tensor())
            .map(|(n, e)| Found::Indexed(n, e));
    }
    let header = h.header.as_ref()?;
    let member = header.member_at(slot.key_at)?;
    let tensor = header.tensor(&member).ok()??;
    let text = if text_at == NO_TEXT {
        None
    } else {
        let len = member.key.len() + tensor.dtype.len();
        // SAFETY: `enec_container_open` wrote this tensor's name and dtype name, `len` bytes,
        // at `text_at` in the text area after the offsets, inside the checked memory.
        Some(unsafe {
            let area = (handle as *const u8).add(SLOTS_AT + texts_at(h.capacity as usize));
            slice::from_raw_parts(area.add(text_at as usize), len)
        })
    };
    Some(Found::InRun {
        slot,
        member,
        tensor,
        text,
    })
}

/// Offset of the text offsets from the tensor table, and of the text area from there.
fn texts_at(capacity: usize) -> usize {
    capacity * (size_of::<TensorSlot>() + size_of::<u32>())
}

fn tensor_info(index: u64, c: &Container<'_>, found: &Found<'_>) -> EnecTensorInfo {
    let mut shape = [0u64; ENEC_MAX_RANK];
    match found {
        Found::Indexed(_, e) => {
            shape[..e.shape.len()].copy_from_slice(&e.shape);
            let enec_coded = e.kind == PieceKind::Enec;
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
        Found::InRun {
            slot,
            member,
            tensor,
            text,
        } => {
            let rank = tensor.shape.len().min(ENEC_MAX_RANK);
            for (d, v) in shape.iter_mut().zip(tensor.shape.clone()) {
                *d = v;
            }
            let (name, dtype) = match text {
                Some(t) => t.split_at(member.key.len().min(t.len())),
                None => (member.key.raw(), tensor.dtype.raw()),
            };
            let bytes = slot.end - slot.start;
            let run = slot.run.and_then(|(n, p)| {
                let (_, e) = c
                    .index()
                    .entries_from(n, p)
                    .next()
                    .filter(|(i, _)| *i == n)?;
                Some(e)
            });
            EnecTensorInfo {
                index,
                name: name.as_ptr() as *const c_char,
                name_len: name.len(),
                dtype_name: dtype.as_ptr() as *const c_char,
                dtype_name_len: dtype.len(),
                dtype: 0,
                rank: rank as u32,
                shape,
                bytes,
                stored_bytes: if run.is_some() { bytes } else { 0 },
                original_offset: slot.start,
                stored_offset: run.map_or(0, |e| e.offset + (slot.start - e.original_offset)),
            }
        }
    }
}

/// The number of tensors of a parsed container that have an index entry.
fn count_tensors(c: &Container<'_>) -> u64 {
    c.entries().filter(|(_, e)| e.is_tensor()).count() as u64
}

/// Scratch bytes a restore of `c` needs: for the largest frame of any enec piece, its decoded
/// bytes and room to encode it again. Pieces whose stream header is unreadable count nothing
/// (the restore reports them).
fn scratch_for(c: &Container<'_>) -> usize {
    c.entries()
        .filter(|(_, e)| e.kind == PieceKind::Enec)
        .filter_map(|(i, e)| check_stream(i, &e, c.payload(&e)).ok())
        .map(|info| {
            let frame = info
                .frame_len()
                .min(info.element_count.try_into().unwrap_or(usize::MAX));
            frame * info.dtype.element_bytes() + max_frame_bytes(info.dtype, frame)
        })
        .max()
        .unwrap_or(0)
}

/// What a handle of `c` holds besides its indexed tensors: the safetensors header it starts
/// with (when there is one), the slots its members may take, and the bytes of the names and
/// dtype names with escapes among them.
struct Extra<'a> {
    header: Option<(u64, Entry<'a>, Header<'a>)>,
    members: u64,
    text: u64,
}

fn extra<'a>(c: &Container<'a>) -> Extra<'a> {
    let header = header_of(c);
    let (mut members, mut text) = (0u64, 0u64);
    if let Some((_, _, h)) = &header {
        for m in h.members() {
            members += 1;
            if let Ok(Some(t)) = h.tensor(&m) {
                if m.key.plain().is_none() || t.dtype.plain().is_none() {
                    text += (m.key.len() + t.dtype.len()) as u64;
                }
            }
        }
    }
    Extra {
        header,
        members,
        text,
    }
}

/// Bytes of handle memory for `slots` tensor slots and `text` bytes of names.
fn state_bytes(slots: u64, text: u64) -> Option<usize> {
    let slots = usize::try_from(slots).ok()?;
    texts_at(1)
        .checked_mul(slots)?
        .checked_add(usize::try_from(text).ok()?)?
        .checked_add(SLOTS_AT)
}

/// Bytes of caller memory (aligned to `ENEC_STATE_ALIGN`) a handle of the container `file`
/// needs, into `*size`: a few dozen bytes, plus 52 per tensor and per member of the safetensors
/// header the container starts with (the table that finds a tensor by number in constant time),
/// plus the names and dtype names written with JSON escapes there. Checks the container as
/// `enec_container_open` does.
///
/// # Safety
/// `file` must point to `file_len` readable bytes; `size` must be valid; `detail` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn enec_container_state_size(
    file: *const u8,
    file_len: usize,
    size: *mut usize,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    if size.is_null() {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`size` is NULL") };
    }
    // SAFETY: by the contract `file` points to `file_len` readable bytes (or is NULL).
    let Some(file) = (unsafe { bytes(file, file_len) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`file` is NULL with a nonzero length") };
    };
    let parsed = match Container::parse(file) {
        Ok(c) => c,
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(e) => return unsafe { container_fail(e, detail) },
    };
    let x = extra(&parsed);
    match state_bytes(count_tensors(&parsed) + x.members, x.text) {
        Some(n) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { size.write(n) };
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { ok(detail) }
        }
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        None => unsafe { fail(Error::TooLarge, detail) },
    }
}

/// Checks the container `file` (`file_len` bytes: its header, footer, index and padding, and
/// the safetensors header it starts with; the other pieces are checked when they are decoded,
/// in time proportional to the index and the header) and stores a handle to it, which lives in
/// `mem`, in `*container`. `mem_len` must be at least what `enec_container_state_size` says for
/// this file (else `ENEC_STATUS_INVALID_ARGUMENT` with the bytes needed in `detail->value`).
/// There is no "close": the memory stays the caller's. The handle lists every tensor of the
/// original file, those kept in runs of verbatim bytes (FORMAT.md 9.6) included, found through
/// the safetensors header. Where that header fails its checksum, names a tensor twice (which
/// safetensors refuses) or names one that no piece holds, the per-tensor calls (count, tensor,
/// find, decode) report it (`ENEC_STATUS_PIECE_CHECKSUM_MISMATCH`, or
/// `ENEC_STATUS_CORRUPT_CONTAINER` with the name in `detail` from
/// `enec_container_decode_tensor`); the whole-file restore still runs.
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
    if mem.is_null() || container.is_null() {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`mem` or `container` is NULL") };
    }
    if (mem as usize) % ENEC_STATE_ALIGN != 0 {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`mem` is not aligned to ENEC_STATE_ALIGN") };
    }
    // SAFETY: by the contract `file` points to `file_len` readable bytes (or is NULL) that stay
    // unchanged while the handle, which borrows them, is used.
    let Some(file) = (unsafe { bytes(file, file_len) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`file` is NULL with a nonzero length") };
    };
    let parsed = match Container::parse(file) {
        Ok(c) => c,
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(e) => return unsafe { container_fail(e, detail) },
    };
    let indexed = count_tensors(&parsed);
    let x = extra(&parsed);
    let capacity = indexed + x.members;
    let Some(need) = state_bytes(capacity, x.text) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { fail(Error::TooLarge, detail) };
    };
    if mem_len < need {
        let message = format_args!(
            "invalid argument: the handle needs {need} bytes of memory, {mem_len} given"
        );
        let status = EnecStatus::InvalidArgument;
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { report(detail, status, 0, need as u64, ENEC_NO_ENTRY, &message) };
    }
    let cap = capacity as usize;
    // Below, every access lands in `mem`: it is not NULL, aligned to ENEC_STATE_ALIGN (checked
    // above) and by the contract holds `mem_len >= need` writable bytes, used for nothing else.
    // SAFETY: the table (`cap` slots at SLOTS_AT, aligned for them), the text offsets after it
    // and the text area after those end within `need` bytes (`state_bytes`); each is written
    // whole before a slice of it is made, and the three do not overlap.
    let (slots, text_of, area) = unsafe {
        let base = (mem as *mut u8).add(SLOTS_AT);
        let slots = base as *mut TensorSlot;
        for i in 0..cap {
            slots.add(i).write(TensorSlot::default());
        }
        let offsets = slots.add(cap) as *mut u32;
        for i in 0..cap {
            offsets.add(i).write(NO_TEXT);
        }
        let area = base.add(texts_at(cap));
        ptr::write_bytes(area, 0, x.text as usize);
        (
            slice::from_raw_parts_mut(slots, cap),
            slice::from_raw_parts_mut(offsets, cap),
            slice::from_raw_parts_mut(area, x.text as usize),
        )
    };
    let mut entries = parsed.entries();
    let mut t = 0usize;
    loop {
        let position = entries.position();
        let Some((entry, e)) = entries.next() else {
            break;
        };
        if e.is_tensor() {
            // `count_tensors` counted these same entries, so `t < indexed <= cap`.
            slots[t] = TensorSlot {
                key_at: NO_MEMBER,
                start: e.original_offset,
                end: e.original_offset + e.original_len,
                run: Some((entry, position)),
            };
            t += 1;
        }
    }
    let mut tensors = t;
    let mut fault = None;
    if let Some(found) = &x.header {
        let header = &found.2;
        match run_tensors(&parsed, found, &mut slots[t..]) {
            Ok(n) => tensors += n,
            Err(e) => fault = Some(e),
        }
        // File order, as FORMAT.md 9.6 orders pieces: start, end, name.
        let name = |s: &TensorSlot| -> Option<JsonStr<'_>> { header.key_at(s.key_at) };
        slots[..tensors].sort_unstable_by(|a, b| {
            (a.start, a.end).cmp(&(b.start, b.end)).then_with(|| {
                let own = |s: &TensorSlot| {
                    let (n, p) = s.run?;
                    let (_, e) = parsed.index().entries_from(n, p).next()?;
                    Some(e.name.as_bytes())
                };
                match (name(a), name(b)) {
                    (Some(x), Some(y)) => x.cmp_text(&y),
                    (Some(x), None) => x.bytes().cmp(own(b).unwrap_or_default().iter().copied()),
                    (None, Some(y)) => own(a).unwrap_or_default().iter().copied().cmp(y.bytes()),
                    (None, None) => own(a).cmp(&own(b)),
                }
            })
        });
        // The names and dtype names with escapes, resolved into the text area.
        let mut at = 0usize;
        for (slot, text) in slots[..tensors].iter().zip(text_of.iter_mut()) {
            let Some(member) = header.member_at(slot.key_at) else {
                continue;
            };
            let Ok(Some(tensor)) = header.tensor(&member) else {
                continue;
            };
            if member.key.plain().is_some() && tensor.dtype.plain().is_some() {
                continue;
            }
            *text = at as u32;
            for b in member.key.bytes().chain(tensor.dtype.bytes()) {
                // `extra` counted these bytes into the area's length.
                if let Some(d) = area.get_mut(at) {
                    *d = b;
                }
                at += 1;
            }
        }
    }
    let handle = Handle {
        container: parsed,
        tensors: tensors as u64,
        capacity,
        header: x.header.map(|(_, _, h)| h),
        fault,
        scratch: scratch_for(&parsed),
    };
    let header = StateHeader {
        magic: CONTAINER_MAGIC,
        tier: 0,
    };
    // SAFETY: the header fits before ENEC_STATE_ALIGN and the `Handle` from there to SLOTS_AT,
    // aligned (no `Handle` needs more than ENEC_STATE_ALIGN); `container` is not NULL (checked
    // above), so valid by the contract.
    unsafe {
        ptr::write(
            (mem as *mut u8).add(ENEC_STATE_ALIGN) as *mut Handle<'_>,
            handle,
        );
        ptr::write(mem as *mut StateHeader, header);
        container.write(mem as *mut EnecContainer);
    }
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    unsafe { ok(detail) }
}

/// The longest UTF-8 start of `text` (a name cut to fit a message).
fn shown(text: &[u8]) -> &str {
    match core::str::from_utf8(text) {
        Ok(s) => s,
        Err(e) => core::str::from_utf8(&text[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// The status of a handle whose tensors kept in runs cannot be listed.
fn fault_status(e: &RunTensorsError) -> EnecStatus {
    match e {
        RunTensorsError::HeaderChecksumMismatch { .. } => EnecStatus::PieceChecksumMismatch,
        _ => EnecStatus::CorruptContainer,
    }
}

/// Why the tensors kept in runs could not be listed, in `detail`.
///
/// # Safety
/// `detail` must be NULL or valid for writes.
unsafe fn run_tensors_fail(
    c: &Container<'_>,
    header: Option<&Header<'_>>,
    e: RunTensorsError,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    let name = |key_at| {
        let key = header
            .and_then(|h| h.key_at(key_at))
            .unwrap_or(JsonStr::EMPTY);
        let mut text = [0u8; 64];
        let mut n = 0;
        for (d, b) in text.iter_mut().zip(key.bytes()) {
            *d = b;
            n += 1;
        }
        (text, n)
    };
    let corrupt = |message: &dyn fmt::Display| {
        let status = EnecStatus::CorruptContainer;
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        unsafe { report(detail, status, 0, 0, ENEC_NO_ENTRY, message) }
    };
    match e {
        RunTensorsError::HeaderChecksumMismatch { entry } => {
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            let error = ContainerError::RawChecksumMismatch { entry };
            unsafe { container_fail_in(c, error, detail) }
        }
        RunTensorsError::RepeatedName { key_at } => {
            let (text, n) = name(key_at);
            let shown = shown(&text[..n]);
            corrupt(&format_args!(
                "corrupt container: its safetensors header names tensor \"{shown}\" twice"
            ))
        }
        RunTensorsError::InNoPiece(t) => {
            let (text, n) = name(t.key_at);
            let shown = shown(&text[..n]);
            let (start, end) = (t.start, t.end);
            corrupt(&format_args!(
                "corrupt container: its safetensors header names tensor \"{shown}\" (bytes \
                 {start}..{end}), which no piece holds"
            ))
        }
        // `enec_container_open` gives a slot per member.
        RunTensorsError::TableTooSmall { .. } => {
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { fail(Error::TooLarge, detail) }
        }
    }
}

/// The number of tensors in the container, into `*count` (pieces of the original file that are
/// not tensors, such as its header, are not counted; tensors kept in runs of verbatim bytes
/// are). Fails where the list is incomplete (`enec_container_open` says when).
///
/// # Safety
/// `container` must come from `enec_container_open`; `count` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_tensor_count(
    container: *const EnecContainer,
    count: *mut u64,
) -> EnecStatus {
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        return EnecStatus::InvalidArgument;
    };
    if count.is_null() {
        return EnecStatus::InvalidArgument;
    }
    if let Some(e) = &h.fault {
        return fault_status(e);
    }
    // SAFETY: not NULL (checked above), so valid by the contract.
    unsafe { count.write(h.tensors) };
    EnecStatus::Ok
}

/// Describes tensor number `index` (0 ..< `enec_container_tensor_count`) in `*info`;
/// `ENEC_STATUS_NOT_FOUND` past the last. Takes constant time (for a tensor kept in a run of
/// verbatim bytes, time proportional to its entry in the safetensors header).
///
/// # Safety
/// `container` must come from `enec_container_open`; `info` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_tensor(
    container: *const EnecContainer,
    index: u64,
    info: *mut EnecTensorInfo,
) -> EnecStatus {
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    if let Some(e) = &h.fault {
        return fault_status(e);
    }
    // SAFETY: `h` is `handle_of(container)`.
    match unsafe { tensor_at(container, h, index) } {
        Some(found) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { info.write(tensor_info(index, &h.container, &found)) };
            EnecStatus::Ok
        }
        None => EnecStatus::NotFound,
    }
}

/// Describes the first tensor named `name` (`name_len` bytes, no NUL needed) in `*info`;
/// `ENEC_STATUS_NOT_FOUND` if there is none. `info->index` is its number for
/// `enec_container_decode_tensor`. Takes time proportional to the number of tensors.
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
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        return EnecStatus::InvalidArgument;
    };
    // SAFETY: by the contract `name` points to `name_len` readable bytes (or is NULL).
    let Some(name) = (unsafe { bytes(name as *const u8, name_len) }) else {
        return EnecStatus::InvalidArgument;
    };
    if info.is_null() {
        return EnecStatus::InvalidArgument;
    }
    if let Some(e) = &h.fault {
        return fault_status(e);
    }
    for index in 0..h.tensors {
        // SAFETY: `h` is `handle_of(container)`.
        let Some(found) = (unsafe { tensor_at(container, h, index) }) else {
            continue;
        };
        let matches = match &found {
            Found::Indexed(_, e) => e.name.as_bytes() == name,
            Found::InRun { member, .. } => member.key.is(name),
        };
        if matches {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { info.write(tensor_info(index, &h.container, &found)) };
            return EnecStatus::Ok;
        }
    }
    EnecStatus::NotFound
}

/// Restores tensor number `index` into `out` (`out_cap` bytes, at least the tensor's `bytes`),
/// verifying its checksums, on the calling thread; the bytes written go to `*out_len`. A damaged
/// tensor gives an error (with the frame in `detail`), never wrong data as good. Finding the
/// tensor takes constant time. Bytes that carry no information (padding, unused bits) are not
/// looked at: `enec_container_restore` verifies those too. A tensor kept in a run of verbatim
/// bytes is verified with its run, which takes time proportional to the run.
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
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe {
            invalid(
                detail,
                "`container` is not a handle from enec_container_open",
            )
        };
    };
    // SAFETY: by the contract `out` points to `out_cap` writable bytes (or is NULL) that
    // overlap neither the container nor its handle.
    let Some(out) = (unsafe { bytes_mut(out, out_cap) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`out` is NULL with a nonzero capacity") };
    };
    if out_len.is_null() {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`out_len` is NULL") };
    }
    if let Some(e) = h.fault {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { run_tensors_fail(&h.container, h.header.as_ref(), e, detail) };
    }
    // SAFETY: `h` is `handle_of(container)`.
    let decoded = match unsafe { tensor_at(container, h, index) } {
        None => {
            let count = h.tensors;
            let message = format_args!("no tensor number {index}: the container has {count}");
            let status = EnecStatus::NotFound;
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            return unsafe { report(detail, status, 0, 0, ENEC_NO_ENTRY, &message) };
        }
        Some(Found::Indexed(number, entry)) => h.container.decode_entry(number, &entry, out),
        Some(Found::InRun { slot, .. }) => from_run(&h.container, &slot, out),
    };
    match decoded {
        Ok(n) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { out_len.write(n) };
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { ok(detail) }
        }
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(e) => unsafe { container_fail_in(&h.container, e, detail) },
    }
}

/// Copies the bytes of a tensor kept in a run of verbatim bytes into the start of `out`, once
/// the run's checksum is verified; returns how many.
fn from_run(c: &Container<'_>, slot: &TensorSlot, out: &mut [u8]) -> Result<usize, ContainerError> {
    let len = slot.end - slot.start;
    let Some((number, position)) = slot.run else {
        return Ok(0);
    };
    let Some((_, run)) = c
        .index()
        .entries_from(number, position)
        .next()
        .filter(|(n, _)| *n == number)
    else {
        return Err(ContainerError::CorruptIndex {
            entry: number,
            reason: "a tensor's run of verbatim bytes is not where the handle has it",
        });
    };
    let payload = c.payload(&run);
    if h32(payload) != run.checksum {
        return Err(ContainerError::RawChecksumMismatch { entry: number });
    }
    let bytes = usize::try_from(slot.start - run.original_offset)
        .ok()
        .and_then(|from| payload.get(from..)?.get(..usize::try_from(len).ok()?))
        .ok_or(ContainerError::CorruptIndex {
            entry: number,
            reason: "a tensor's run of verbatim bytes is not where the handle has it",
        })?;
    let out = out
        .get_mut(..bytes.len())
        .ok_or(ContainerError::OutputTooSmall { needed: len })?;
    out.copy_from_slice(bytes);
    Ok(bytes.len())
}

/// The length of the original file the container holds (what `enec_container_restore` writes),
/// into `*size`.
///
/// # Safety
/// `container` must come from `enec_container_open`; `size` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_restored_size(
    container: *const EnecContainer,
    size: *mut u64,
) -> EnecStatus {
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(c) = (unsafe { container_of(container) }) else {
        return EnecStatus::InvalidArgument;
    };
    if size.is_null() {
        return EnecStatus::InvalidArgument;
    }
    // SAFETY: not NULL (checked above), so valid by the contract.
    unsafe { size.write(c.original_len()) };
    EnecStatus::Ok
}

/// Bytes of scratch memory `enec_container_restore` and `enec_container_restore_to` need for
/// this container, into `*size`: for its largest frame, the decoded bytes and room to encode
/// them again (about 64 KiB for bf16 and 128 KiB for fp32 with the default 16,384-element
/// frames; 0 when no piece is enec-coded).
///
/// # Safety
/// `container` must come from `enec_container_open`; `size` must be valid.
#[no_mangle]
pub unsafe extern "C" fn enec_container_scratch_size(
    container: *const EnecContainer,
    size: *mut usize,
) -> EnecStatus {
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        return EnecStatus::InvalidArgument;
    };
    if size.is_null() {
        return EnecStatus::InvalidArgument;
    }
    // SAFETY: not NULL (checked above), so valid by the contract.
    unsafe { size.write(h.scratch) };
    EnecStatus::Ok
}

/// Why a restore stopped.
enum Stop {
    Container(ContainerError),
    Noncanonical { entry: u64, frame: u32 },
    Write(c_int),
}

impl From<ContainerError> for Stop {
    fn from(e: ContainerError) -> Stop {
        Stop::Container(e)
    }
}

/// Restores every piece of `c` in file order, verifying all of it, and hands each verified run of
/// bytes to `sink`. `direct`: the caller's output (the whole original), into which frames are
/// decoded in place; else frames are decoded into `scratch`. `scratch` holds at least
/// `scratch_for(c)` bytes.
fn restore_all(
    c: &Container<'_>,
    mut direct: Option<&mut [u8]>,
    scratch: &mut [u8],
    sink: &mut dyn FnMut(&[u8]) -> Result<(), Stop>,
) -> Result<(), Stop> {
    for (number, entry) in c.entries() {
        let payload = c.payload(&entry);
        let at = entry.original_offset as usize; // < original_len, which fits the output
        match entry.kind {
            PieceKind::Raw => {
                if h32(payload) != entry.checksum {
                    return Err(ContainerError::RawChecksumMismatch { entry: number }.into());
                }
                if let Some(out) = direct.as_deref_mut() {
                    out[at..at + payload.len()].copy_from_slice(payload);
                } else {
                    sink(payload)?;
                }
            }
            PieceKind::Enec => {
                restore_stream(number, &entry, payload, &mut direct, at, scratch, sink)?
            }
        }
    }
    Ok(())
}

/// Restores one enec piece frame by frame: decode (checksum verified), check that the frame is
/// the bytes a conforming encoder writes for its data, then hand the bytes over.
fn restore_stream(
    number: u64,
    entry: &Entry<'_>,
    payload: &[u8],
    direct: &mut Option<&mut [u8]>,
    at: usize,
    scratch: &mut [u8],
    sink: &mut dyn FnMut(&[u8]) -> Result<(), Stop>,
) -> Result<(), Stop> {
    let stream_error = |error| ContainerError::Stream {
        entry: number,
        error,
    };
    check_stream(number, entry, payload)?;
    let decoder = FrameDecoder::new(payload).map_err(stream_error)?;
    let info = *decoder.info();
    let mut last = None;
    let in_place = direct.is_some();
    for frame in decoder.frames() {
        let frame = frame.map_err(stream_error)?;
        let range = decoder.output_range(&frame);
        let max = max_frame_bytes(info.dtype, frame.elements);
        let (decoded, encoded): (&mut [u8], &mut [u8]) = match direct.as_deref_mut() {
            Some(out) => (
                &mut out[at + range.start..at + range.end],
                &mut scratch[..max],
            ),
            None => {
                let (a, b) = scratch.split_at_mut(range.len());
                (a, &mut b[..max])
            }
        };
        decoder
            .decode_frame(&frame, decoded)
            .map_err(stream_error)?;
        let bytes = &payload[frame.offset..frame.offset + frame.bytes];
        if !canonical(&info, frame.coding, bytes, decoded, encoded) {
            return Err(Stop::Noncanonical {
                entry: number,
                frame: frame.index,
            });
        }
        if !in_place {
            sink(decoded)?;
        }
        last = Some(frame);
    }
    let extra = match last {
        Some(f) => decoder.trailing_bytes(&f),
        None => payload.len() - enec::format::STREAM_HEADER_BYTES,
    };
    if extra != 0 {
        let error = Error::TrailingData {
            extra: extra as u64,
        };
        return Err(stream_error(error).into());
    }
    Ok(())
}

/// Whether `bytes`, a frame that decoded (checksum verified) to `decoded`, is exactly what a
/// conforming encoder writes for that data with the frame's coding (FORMAT.md section 7): this
/// catches damage in the bytes the decoder does not read or whose value does not change the
/// result (zero padding, unused bits of plane words, symbol-table entries no element uses).
fn canonical(
    info: &enec::StreamInfo,
    coding: FrameCoding,
    bytes: &[u8],
    decoded: &[u8],
    scratch: &mut [u8],
) -> bool {
    let coding = match coding {
        // The header and body were checked by the decoder; only the padding is left.
        FrameCoding::Stored => {
            let end = enec::format::FRAME_HEADER_BYTES + decoded.len();
            return bytes
                .get(end..)
                .is_some_and(|pad| pad.iter().all(|&b| b == 0));
        }
        FrameCoding::Groups => Coding::Groups,
        FrameCoding::Ranked => Coding::Ranked,
    };
    let options = EncodeOptions {
        dtype: info.dtype,
        frame_log2: info.frame_log2,
        coding,
        checksums: info.checksums,
    };
    // The frame alone, as frame 0 of a stream of its elements: the same bytes.
    let encoded = FrameEncoder::new(&options, decoded).and_then(|e| e.encode_frame(0, scratch));
    match encoded {
        Ok(n) => scratch[..n] == *bytes,
        Err(_) => false,
    }
}

/// Reports why a restore of `c` stopped.
///
/// # Safety
/// As [`report`].
unsafe fn restore_fail(c: &Container<'_>, stop: Stop, detail: *mut EnecErrorDetail) -> EnecStatus {
    match stop {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Stop::Container(e) => unsafe { container_fail_in(c, e, detail) },
        Stop::Noncanonical { entry, frame } => {
            let status = EnecStatus::NoncanonicalFrame;
            let why = "the frame's bytes differ from what the encoder writes for its data \
                       (damaged padding, unused bits or symbol table)";
            match c.entries().find(|(i, _)| *i == entry) {
                Some((_, e)) => {
                    let piece = e.describe();
                    let message = format_args!("entry {entry} ({piece}), frame {frame}: {why}");
                    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
                    unsafe { report(detail, status, frame, 0, entry, &message) }
                }
                None => {
                    let message = format_args!("entry {entry}, frame {frame}: {why}");
                    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
                    unsafe { report(detail, status, frame, 0, entry, &message) }
                }
            }
        }
        Stop::Write(rc) => {
            let message = format_args!("the write callback returned {rc}");
            let status = EnecStatus::WriteFailed;
            let value = rc as i64 as u64;
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { report(detail, status, 0, value, ENEC_NO_ENTRY, &message) }
        }
    }
}

/// Checks the scratch memory of a restore.
///
/// # Safety
/// As [`bytes_mut`] for `scratch` and `scratch_len`; as [`report`] for `detail`.
unsafe fn scratch_of<'a>(
    h: &Handle<'_>,
    scratch: *mut c_void,
    scratch_len: usize,
    detail: *mut EnecErrorDetail,
) -> Result<&'a mut [u8], EnecStatus> {
    if scratch_len < h.scratch {
        let need = h.scratch;
        let message = format_args!(
            "invalid argument: the restore needs {need} bytes of scratch memory, {scratch_len} \
             given (enec_container_scratch_size)"
        );
        let status = EnecStatus::InvalidArgument;
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return Err(unsafe { report(detail, status, 0, need as u64, ENEC_NO_ENTRY, &message) });
    }
    // SAFETY: `scratch` points to `scratch_len` writable bytes used by nothing else for `'a`, or
    // is NULL (this function's contract).
    let scratch = unsafe { bytes_mut(scratch as *mut u8, scratch_len) };
    // SAFETY: `detail` is NULL or valid for writes (this function's contract).
    scratch.ok_or_else(|| unsafe { invalid(detail, "`scratch` is NULL with a nonzero length") })
}

/// Restores the whole original file into `out` (`out_cap` bytes, at least
/// `enec_container_restored_size`) on the calling thread; its length goes to `*out_len`.
/// Verifies every byte of the container: the header, footer and index checks, zero padding, the
/// checksum of every verbatim piece (file header, gaps, raw tensors), every frame's checksum,
/// and that every frame is exactly what a conforming encoder writes for its data
/// (`ENEC_STATUS_NONCANONICAL_FRAME` otherwise). So any single flipped bit of the container is
/// reported, provided its streams carry frame checksums (`enec compress` writes them unless told
/// not to). `scratch` (`scratch_len` bytes, at least `enec_container_scratch_size`) is work
/// memory. The re-encoding makes a restore cost about three decodes of the same tensors. On
/// error, `out` holds unverified bytes: treat all of it as garbage.
///
/// # Safety
/// `container` must come from `enec_container_open`; `out` must point to `out_cap` writable
/// bytes and `scratch` to `scratch_len` writable bytes, neither overlapping the container or the
/// other; `out_len` must be valid; `detail` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn enec_container_restore(
    container: *const EnecContainer,
    out: *mut u8,
    out_cap: usize,
    scratch: *mut c_void,
    scratch_len: usize,
    out_len: *mut usize,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe {
            invalid(
                detail,
                "`container` is not a handle from enec_container_open",
            )
        };
    };
    // SAFETY: by the contract `out` points to `out_cap` writable bytes (or is NULL) that
    // overlap neither the container nor its handle.
    let Some(out) = (unsafe { bytes_mut(out, out_cap) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`out` is NULL with a nonzero capacity") };
    };
    if out_len.is_null() {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`out_len` is NULL") };
    }
    // SAFETY: by the contract `scratch` points to `scratch_len` writable bytes (or is NULL)
    // overlapping nothing else used here; `detail` is NULL or valid for writes.
    let scratch = match unsafe { scratch_of(h, scratch, scratch_len, detail) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    let c = &h.container;
    let need = c.original_len();
    let Some(out) = usize::try_from(need).ok().and_then(|n| out.get_mut(..n)) else {
        let error = ContainerError::OutputTooSmall { needed: need };
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { container_fail(error, detail) };
    };
    match restore_all(c, Some(out), scratch, &mut |_| Ok(())) {
        Ok(()) => {
            // SAFETY: not NULL (checked above), so valid by the contract.
            unsafe { out_len.write(need as usize) };
            // SAFETY: `detail` is NULL or valid for writes (this function's contract).
            unsafe { ok(detail) }
        }
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(stop) => unsafe { restore_fail(&h.container, stop, detail) },
    }
}

/// Restores the whole original file through `write`, in order, verifying it as
/// `enec_container_restore` does. `write(ctx, bytes, len)` receives only verified bytes (a
/// verbatim piece once its checksum matched, a frame's bytes once its checksum matched and its
/// encoding was checked), at most one frame or one piece at a time; a nonzero return stops the
/// restore with `ENEC_STATUS_WRITE_FAILED` (its value in `detail->value`). The bytes handed over
/// go to `*written` (the whole original on success; may be NULL). On error, what was written is
/// a verified prefix of the original, but the file as a whole is damaged. `scratch` as for
/// `enec_container_restore`.
///
/// # Safety
/// `container` must come from `enec_container_open`; `write` must be a valid function;
/// `scratch` must point to `scratch_len` writable bytes not overlapping the container; `written`
/// and `detail` may be NULL. `write` must not change the handle memory, the file or the scratch.
#[no_mangle]
pub unsafe extern "C" fn enec_container_restore_to(
    container: *const EnecContainer,
    write: EnecWriteFn,
    ctx: *mut c_void,
    scratch: *mut c_void,
    scratch_len: usize,
    written: *mut u64,
    detail: *mut EnecErrorDetail,
) -> EnecStatus {
    if !written.is_null() {
        // SAFETY: not NULL, so valid by the contract.
        unsafe { written.write(0) };
    }
    // SAFETY: `container` comes from `enec_container_open` (the contract).
    let Some(h) = (unsafe { handle_of(container) }) else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe {
            invalid(
                detail,
                "`container` is not a handle from enec_container_open",
            )
        };
    };
    let Some(write) = write else {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        return unsafe { invalid(detail, "`write` is NULL") };
    };
    // SAFETY: by the contract `scratch` points to `scratch_len` writable bytes (or is NULL)
    // overlapping nothing else used here; `detail` is NULL or valid for writes.
    let scratch = match unsafe { scratch_of(h, scratch, scratch_len, detail) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    let mut total = 0u64;
    let mut sink = |b: &[u8]| -> Result<(), Stop> {
        if b.is_empty() {
            return Ok(());
        }
        // SAFETY: `write` is a valid function (the contract), and `b` is `b.len()` readable bytes
        // that it must not change (the contract).
        match unsafe { write(ctx, b.as_ptr(), b.len()) } {
            0 => {
                total += b.len() as u64;
                Ok(())
            }
            rc => Err(Stop::Write(rc)),
        }
    };
    let result = restore_all(&h.container, None, scratch, &mut sink);
    if !written.is_null() {
        // SAFETY: not NULL, so valid by the contract.
        unsafe { written.write(total) };
    }
    match result {
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Ok(()) => unsafe { ok(detail) },
        // SAFETY: `detail` is NULL or valid for writes (this function's contract).
        Err(stop) => unsafe { restore_fail(&h.container, stop, detail) },
    }
}

#[cfg(test)]
mod container_tests;

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
        // The layout the SAFETY notes of the init and handle functions rely on.
        for t in 0..TIERS {
            assert!(per_tier!(t, CAP => core::mem::align_of::<Decoder<CAP>>()) <= ENEC_STATE_ALIGN);
            assert!(per_tier!(t, CAP => core::mem::align_of::<Encoder<CAP>>()) <= ENEC_STATE_ALIGN);
        }
        assert!(core::mem::align_of::<Handle<'static>>() <= ENEC_STATE_ALIGN);
        assert!(core::mem::align_of::<TensorSlot>() <= ENEC_STATE_ALIGN);
        assert!(ENEC_STATE_ALIGN + size_of::<Handle<'static>>() <= SLOTS_AT);
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
