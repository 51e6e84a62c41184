//! Regression tests for findings of the fuzz targets and the hostile-input review (issue 6).
//!
//! Each test names the finding, the file and line where it failed, and holds the input inline
//! (or under `tests/regressions/`). A test stays `#[ignore = "bug: ..."]` until its fix lands;
//! then the `ignore` goes and the test guards the fix.

use enec::frame::decode_frame;
use enec::Dtype;

/// A well-formed `groups` frame of `elements` bf16 elements, every one decoding to exponent
/// `base` with sign and mantissa 0: dead bits 7 (a 1-bit residual), low width 0, no flagged
/// group. Its size is linear in `elements`, about 1/7 byte per element.
fn groups_frame(elements: usize) -> Vec<u8> {
    let pad32 = |x: usize| x.div_ceil(32) * 32;
    let groups = elements.div_ceil(16);
    let residual = pad32(2 * elements.div_ceil(16)); // 1-bit plane of `elements` values
    let flags = pad32(2 * groups.div_ceil(16)); // 1-bit plane of `groups` values
    let bytes = 32 + residual + flags;
    let mut frame = vec![0u8; bytes];
    frame[0..4].copy_from_slice(&(bytes as u32).to_le_bytes());
    frame[8..12].copy_from_slice(&(elements as u32).to_le_bytes());
    frame[12] = 1; // groups
    frame[13] = 7; // dead bits
    frame[16] = 127; // base b
    frame[17] = 8; // width n
    frame[18] = 0; // low width m
    frame
}

/// The helper builds frames the decoder accepts (so the test below fails for the right reason).
#[test]
fn groups_frame_helper_is_valid() {
    let elements = 4096;
    let frame = groups_frame(elements);
    let mut out = vec![0u8; 2 * elements];
    assert_eq!(
        decode_frame(Dtype::Bf16, false, 0, elements, &frame, &mut out),
        Ok(frame.len())
    );
    assert!(
        out.chunks_exact(2).all(|e| e == [0x80, 0x3f]),
        "127 << 7 = 0x3f80"
    );
}

/// Finding 1: `frame::decode_frame` panics (index out of bounds in `FlagSet::set`,
/// `self.0[t / 64]` in src/frame.rs, with `t >= 4096`; line 279 at 6cead9c) when called with
/// `elements` above `MAX_FRAME_LEN` (65,536) and a frame header that agrees. `decode` and
/// `frames()` never pass such a count (the stream header limits frames to 65,536 elements),
/// but `decode_frame` is public, documented for parallel decoders, and its input here is
/// just a 9,376-byte frame and a count. Expected: an error (`InvalidFrameLength` or
/// `CorruptFrame`), no panic.
#[test]
#[ignore = "bug: decode_frame panics for elements > MAX_FRAME_LEN (src/frame.rs FlagSet::set)"]
fn decode_frame_rejects_more_than_max_frame_len_elements() {
    let elements = 70_000;
    let frame = groups_frame(elements);
    let mut out = vec![0u8; 2 * elements];
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decode_frame(Dtype::Bf16, false, 0, elements, &frame, &mut out)
    }));
    let r = r.expect("decode_frame panicked");
    assert!(
        r.is_err(),
        "a frame of more than 65,536 elements was accepted: {r:?}"
    );
}
