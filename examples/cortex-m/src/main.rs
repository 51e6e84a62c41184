//! Firmware for QEMU's `mps2-an386` (a Cortex-M4F): real weights stored compressed in flash are
//! decoded by enec's streaming decoder, fed the way a DMA ping-pong would feed it, and checked
//! against the digest the host computed at build time; the same streams are decoded one-shot; a
//! copy with one flipped bit and a truncated copy must be refused. Exits through semihosting with
//! status 0 when everything holds, 1 otherwise. `bash run.sh` builds and runs it.
#![no_std]
#![no_main]

mod digest;
mod stack;

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::{debug, hprintln};
use enec::streaming::{capacity_for, Decoder, Status};
use enec::{decode, Dtype, Error};
use panic_semihosting as _;

use digest::Digest;

/// A stream in flash and what the host computed for it at build time.
pub struct TestStream {
    name: &'static str,
    dtype: Dtype,
    stream: &'static [u8],
    /// [`Digest`] of the original weights.
    digest: u64,
    /// A byte in the payload of frame `corrupt_frame` whose low bit, flipped, changes the decoded
    /// weights without breaking the frame's structure: only the frame checksum can catch it.
    corrupt_byte: usize,
    corrupt_frame: u32,
}

// FRAME_LEN, ELEMENTS, MAX_DECODED, MAX_STREAM and STREAMS.
include!(concat!(env!("OUT_DIR"), "/streams.rs"));

/// One input DMA transfer (flash to RAM), bytes.
const IN_BUF: usize = 1024;
/// One output DMA transfer (RAM to the consumer), bytes.
const OUT_BUF: usize = 1024;

/// Decoder capacities: one compressed and one decoded frame (`capacity_for`).
const CAP_16: usize = capacity_for(Dtype::Bf16, FRAME_LEN);
const CAP_32: usize = capacity_for(Dtype::Fp32, FRAME_LEN);

/// The two input and two output buffers that DMA engines own between decoder calls.
struct PingPong {
    input: [[u8; IN_BUF]; 2],
    output: [[u8; OUT_BUF]; 2],
}

/// The one-shot decode's whole-tensor output and the corrupted copy of a stream, in the external
/// PSRAM (see memory.x): the one-shot API needs the whole tensor in memory, the streaming
/// decoder does not.
#[link_section = ".psram.one_shot"]
static mut ONE_SHOT: MaybeUninit<[u8; MAX_DECODED]> = MaybeUninit::uninit();
#[link_section = ".psram.corrupted"]
static mut CORRUPTED: MaybeUninit<[u8; MAX_STREAM]> = MaybeUninit::uninit();

/// Copies the stream from flash into an input buffer in fixed transfers, as an input DMA engine
/// would; `flip` names a stream byte whose low bit arrives flipped (a bit error on the bus).
struct DmaIn<'a> {
    flash: &'a [u8],
    pos: usize,
    flip: Option<usize>,
}

impl DmaIn<'_> {
    /// Fills `buf` with the next transfer; returns its length (0 once flash is exhausted).
    fn fill(&mut self, buf: &mut [u8; IN_BUF]) -> usize {
        let n = (self.flash.len() - self.pos).min(IN_BUF);
        buf[..n].copy_from_slice(&self.flash[self.pos..self.pos + n]);
        if let Some(at) = self.flip.filter(|at| (self.pos..self.pos + n).contains(at)) {
            buf[at - self.pos] ^= 1;
        }
        self.pos += n;
        n
    }
}

/// What a streaming decode did: the digest of its output and the decoder calls it took.
struct Streamed {
    digest: u64,
    calls: u32,
    frames: u32,
}

/// Decodes `flash` with a streaming decoder of capacity `CAP` (on this function's stack)
/// through the ping-pong buffers: the input side is refilled one whole buffer at a time, each
/// full output buffer is drained into the running digest, as an output DMA engine would drain it
/// while the decoder fills the other.
#[inline(never)]
fn decode_streaming<const CAP: usize>(
    flash: &[u8],
    flip: Option<usize>,
    bufs: &mut PingPong,
) -> Result<Streamed, Error> {
    let mut decoder = Decoder::<CAP>::new();
    let mut dma_in = DmaIn {
        flash,
        pos: 0,
        flip,
    };
    let mut digest = Digest::new();

    // Prime both input buffers.
    let mut in_len = [0usize; 2];
    in_len[0] = dma_in.fill(&mut bufs.input[0]);
    in_len[1] = dma_in.fill(&mut bufs.input[1]);
    let (mut cur_in, mut in_pos) = (0, 0);
    let (mut cur_out, mut out_fill) = (0, 0);
    let mut calls = 0;
    loop {
        let progress = decoder.decode(
            &bufs.input[cur_in][in_pos..in_len[cur_in]],
            &mut bufs.output[cur_out][out_fill..],
        )?;
        calls += 1;
        in_pos += progress.consumed;
        out_fill += progress.written;

        // Input buffer spent: the DMA engine refills it while the decoder reads the other.
        if in_pos == in_len[cur_in] && in_len[cur_in] > 0 {
            in_len[cur_in] = dma_in.fill(&mut bufs.input[cur_in]);
            cur_in ^= 1;
            in_pos = 0;
        }
        // Output buffer full (or the stream done): drained while the decoder fills the other.
        let done = progress.status == Status::Done;
        if out_fill == OUT_BUF || (done && out_fill > 0) {
            digest.update(&bufs.output[cur_out][..out_fill]);
            cur_out ^= 1;
            out_fill = 0;
        }
        if done || (progress.status == Status::NeedsInput && in_len[cur_in] == 0) {
            break; // done, or flash exhausted before the stream ended: finish() says which
        }
    }
    decoder.finish()?;
    Ok(Streamed {
        digest: digest.value(),
        calls,
        frames: decoder.frames_decoded(),
    })
}

/// [`decode_streaming`] with the capacity `dtype` needs.
fn decode_streaming_as(
    dtype: Dtype,
    flash: &[u8],
    flip: Option<usize>,
    bufs: &mut PingPong,
) -> Result<Streamed, Error> {
    match dtype {
        Dtype::Fp32 => decode_streaming::<CAP_32>(flash, flip, bufs),
        // (FP8 frames are half the size of 2-byte ones.)
        Dtype::Bf16 | Dtype::Fp16 | Dtype::E4m3 | Dtype::E5m2 => {
            decode_streaming::<CAP_16>(flash, flip, bufs)
        }
    }
}

/// Runs `f` on a freshly painted stack; returns its result and the stack it took (`usize::MAX`
/// when the stack overflowed the measurement).
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    stack::paint();
    let result = f();
    (result, stack::peak().unwrap_or(usize::MAX))
}

/// The results of the checks on one stream.
#[derive(Default)]
struct Checked {
    failures: u32,
    peak_stack: usize,
}

impl Checked {
    fn expect(&mut self, what: &str, ok: bool) {
        if !ok {
            hprintln!("  FAILED: {}", what);
            self.failures += 1;
        }
    }

    /// Expects `result` to be an error that `right` accepts.
    fn refused(&mut self, what: &str, result: Result<(), Error>, right: impl Fn(Error) -> bool) {
        match result {
            Err(e) if right(e) => {}
            Err(e) => {
                hprintln!("  {}: wrong error: {}", what, error_name(e));
                self.failures += 1;
            }
            Ok(()) => {
                hprintln!("  {}: not refused", what);
                self.failures += 1;
            }
        }
    }
}

/// The error's name. Its `Display` would say more, but links about 2 KB of formatting code
/// (64-bit integers among it) into a firmware that otherwise prints only small numbers.
fn error_name(e: Error) -> &'static str {
    match e {
        Error::Truncated { .. } => "Truncated",
        Error::BadMagic => "BadMagic",
        Error::UnsupportedVersion { .. } => "UnsupportedVersion",
        Error::UnsupportedDtype(_) => "UnsupportedDtype",
        Error::UnsupportedFlags(_) => "UnsupportedFlags",
        Error::CorruptHeader(_) => "CorruptHeader",
        Error::UnsupportedCoding { .. } => "UnsupportedCoding",
        Error::CorruptFrame { reason, .. } => reason,
        Error::ChecksumMismatch { .. } => "ChecksumMismatch",
        Error::TrailingData { .. } => "TrailingData",
        Error::OutputTooSmall { .. } => "OutputTooSmall",
        Error::FrameTooLarge { .. } => "FrameTooLarge",
        _ => "another error",
    }
}

/// Every check on one stream.
fn check(
    s: &TestStream,
    bufs: &mut PingPong,
    one_shot: &mut [u8],
    corrupted: &mut [u8],
) -> Checked {
    let mut checked = Checked::default();
    let len = s.stream.len();
    let decoded_len = ELEMENTS * s.dtype.element_bytes();

    let (streamed, streaming_stack) =
        measured(|| decode_streaming_as(s.dtype, s.stream, None, bufs));
    let (calls, frames) = match streamed {
        Ok(r) => {
            checked.expect(
                "streaming decode matches the host digest",
                r.digest == s.digest,
            );
            (r.calls, r.frames)
        }
        Err(e) => {
            hprintln!("  streaming decode failed: {}", error_name(e));
            checked.failures += 1;
            (0, 0)
        }
    };

    let out = &mut one_shot[..decoded_len];
    let (one_shot_result, one_shot_stack) = measured(|| decode(s.stream, out));
    let mut digest = Digest::new();
    digest.update(out);
    checked.expect("one-shot decode succeeds", one_shot_result.is_ok());
    checked.expect(
        "one-shot decode matches the host digest",
        digest.value() == s.digest,
    );

    // One flipped bit, on the DMA path and in a copy for the one-shot decoder: the frame
    // checksum must catch it.
    let refused = Error::ChecksumMismatch {
        frame: s.corrupt_frame,
    };
    let (flipped, flipped_stack) =
        measured(|| decode_streaming_as(s.dtype, s.stream, Some(s.corrupt_byte), bufs).map(|_| ()));
    checked.refused("streaming decode of a flipped bit", flipped, |e| {
        e == refused
    });
    let copy = &mut corrupted[..len];
    copy.copy_from_slice(s.stream);
    copy[s.corrupt_byte] ^= 1;
    let (flipped, flipped_one_shot_stack) = measured(|| decode(copy, out).map(|_| ()));
    checked.refused("one-shot decode of a flipped bit", flipped, |e| {
        e == refused
    });

    // The stream cut one byte short.
    let truncated = |e: Error| matches!(e, Error::Truncated { .. });
    let cut = &s.stream[..len - 1];
    let (result, cut_stack) =
        measured(|| decode_streaming_as(s.dtype, cut, None, bufs).map(|_| ()));
    checked.refused("streaming decode of a truncated stream", result, truncated);
    let (result, cut_one_shot_stack) = measured(|| decode(cut, out).map(|_| ()));
    checked.refused("one-shot decode of a truncated stream", result, truncated);

    checked.peak_stack = streaming_stack
        .max(one_shot_stack)
        .max(flipped_stack)
        .max(flipped_one_shot_stack)
        .max(cut_stack)
        .max(cut_one_shot_stack);
    checked.expect(
        "the stack stays clear of the statics",
        checked.peak_stack != usize::MAX,
    );
    if checked.failures == 0 {
        hprintln!(
            "  {}: {} bytes, {} frames, ok; streaming: {} calls, stack {} bytes; one-shot: stack {} bytes; flipped bit in frame {} and cut-short stream refused",
            s.name,
            len,
            frames,
            calls,
            streaming_stack,
            one_shot_stack,
            s.corrupt_frame
        );
    } else {
        hprintln!("  {}: {} checks FAILED", s.name, checked.failures);
    }
    checked
}

#[entry]
fn main() -> ! {
    // Entry-point statics: cortex-m-rt hands them over as `&'static mut`, in .bss.
    static mut PING_PONG: PingPong = PingPong {
        input: [[0; IN_BUF]; 2],
        output: [[0; OUT_BUF]; 2],
    };
    // Measured since reset: the stack the runtime and `main` take before the first decode.
    let startup_stack = stack::peak().unwrap_or(usize::MAX);

    // SAFETY: `main` runs once, so these are the only references to the PSRAM buffers; zeroed
    // before use (NOLOAD sections start with whatever the memory holds).
    let (one_shot, corrupted) = unsafe {
        let one_shot = &mut *addr_of_mut!(ONE_SHOT);
        let corrupted = &mut *addr_of_mut!(CORRUPTED);
        one_shot.as_mut_ptr().write_bytes(0, 1);
        corrupted.as_mut_ptr().write_bytes(0, 1);
        (one_shot.assume_init_mut(), corrupted.assume_init_mut())
    };

    hprintln!(
        "enec on a Cortex-M4F: {} MiniLM weights per stream, frames of {} elements, transfers of {} bytes in and {} out; decoders {} bytes (bf16, fp16) and {} bytes (fp32); stack at the first decode {} bytes",
        ELEMENTS,
        FRAME_LEN,
        IN_BUF,
        OUT_BUF,
        core::mem::size_of::<Decoder<CAP_16>>(),
        core::mem::size_of::<Decoder<CAP_32>>(),
        startup_stack
    );
    let (mut failures, mut peak_stack, mut elements) = (0, startup_stack, 0);
    for s in &STREAMS {
        let checked = check(s, PING_PONG, one_shot, corrupted);
        failures += checked.failures;
        peak_stack = peak_stack.max(checked.peak_stack);
        if checked.failures == 0 {
            elements += ELEMENTS;
        }
    }
    hprintln!(
        "enec-firmware: elements={} peak_stack={} frame={} failures={}",
        elements,
        peak_stack,
        FRAME_LEN,
        failures
    );
    debug::exit(if failures == 0 {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Reached only on hardware without a debugger attached to take the exit.
    loop {
        cortex_m::asm::wfi();
    }
}

/// A fault ends the run with status 1 rather than hanging until the time limit.
#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    hprintln!("hard fault at pc {:#x}", frame.pc());
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
