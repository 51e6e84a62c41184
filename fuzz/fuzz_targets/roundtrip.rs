//! Encode then decode gives the data back, for fuzz-chosen dtype, frame length, coding,
//! checksums and data.
//!
//! Input: `[dtype, frame_log2 - 10, coding | 0x80 (checksums off), expand, data...]`; see
//! `enec_fuzz::options_of` and `enec_fuzz::data_of`.
#![no_main]

use enec::{decode, encode, frames, max_encoded_size, read_header, Coding, FrameCoding};
use enec_fuzz::{data_of, no_alloc, options_of, Bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let data = data_of(options.dtype, expand, cfg.rest());
    let eb = options.dtype.element_bytes();

    let bound = max_encoded_size(&options, data.len()).expect("whole elements, small input");
    let mut stream = vec![0u8; bound];
    let len = no_alloc("encode", || encode(&options, &data, &mut stream))
        .expect("encoding into max_encoded_size bytes cannot fail");
    assert!(len <= bound);
    assert_eq!(len % 32, 0, "streams are whole 32-byte units");
    let stream = &stream[..len];

    // The encoder is deterministic and does not depend on what its output buffer held.
    let mut again = vec![0x5au8; bound + 7];
    assert_eq!(encode(&options, &data, &mut again), Ok(len));
    assert_eq!(
        &again[..len],
        stream,
        "encoder output depends on the buffer"
    );
    assert!(
        again[len..].iter().all(|&b| b == 0x5a),
        "encoder wrote past its stream"
    );

    // One byte short of the stream: must fail, never write a partial stream as success.
    if len > 0 {
        let mut short = vec![0u8; len - 1];
        assert!(encode(&options, &data, &mut short).is_err());
    }

    // Header.
    let info = read_header(stream).expect("own header parses");
    assert_eq!(info.dtype, options.dtype);
    assert_eq!(info.frame_log2, options.frame_log2);
    assert_eq!(info.checksums, options.checksums);
    assert_eq!(info.element_count, (data.len() / eb) as u64);

    // Frames: contiguous, covering the stream, of the requested coding (or stored).
    let mut offset = 32;
    let mut count = 0u32;
    for f in frames(stream).expect("frames") {
        let f = f.expect("own frame headers parse");
        assert_eq!(f.index, count);
        assert_eq!(f.offset, offset);
        assert_eq!(f.elements, info.frame_elements(count));
        match options.coding {
            Coding::Groups => assert!(matches!(
                f.coding,
                FrameCoding::Groups | FrameCoding::Stored
            )),
            Coding::Ranked => assert!(matches!(
                f.coding,
                FrameCoding::Ranked | FrameCoding::Stored
            )),
            _ => {}
        }
        // Each frame decodes on its own into its slice of the data.
        let start = count as usize * info.frame_len() * eb;
        let want = &data[start..start + f.elements * eb];
        let mut out = vec![0u8; want.len()];
        let used = enec::internals::frame::decode_frame(
            info.dtype,
            info.checksums,
            f.index,
            f.elements,
            &stream[f.offset..],
            &mut out,
        )
        .expect("own frame decodes");
        assert_eq!(used, f.bytes);
        assert_eq!(out, want, "frame {count} decodes to different data");
        // Both compilations of the kernels (AVX2 where the CPU has it, and the baseline) write
        // this frame's bytes, and read them.
        let mut own = vec![0xccu8; f.bytes + 32];
        let portable = enec::internals::frame::encode_frame_portable(
            info.dtype,
            options.coding,
            options.checksums,
            want,
            &mut own,
        );
        assert_eq!(portable, Ok(f.bytes), "portable encoder disagrees");
        assert_eq!(&own[..f.bytes], &stream[f.offset..f.offset + f.bytes]);
        let mut back = vec![0u8; want.len()];
        let r = enec::internals::frame::decode_frame_portable(
            info.dtype,
            info.checksums,
            f.index,
            f.elements,
            &own,
            &mut back,
        );
        assert_eq!(r, Ok(f.bytes));
        assert_eq!(back, want, "portable decoder disagrees");
        offset += f.bytes;
        count += 1;
    }
    assert_eq!(count, info.frame_count);
    assert_eq!(offset, len, "frames do not cover the stream");

    // Whole-stream decode.
    let mut out = vec![0u8; data.len()];
    let n = no_alloc("decode", || decode(stream, &mut out)).expect("own stream decodes");
    assert_eq!(n, data.len());
    assert_eq!(out, data, "round trip changed the data");

    // Auto is never larger than either forced coding (FORMAT.md 7.5: per-frame minimum).
    if options.coding == Coding::Auto && data.len() <= 8192 * eb {
        for forced in [Coding::Groups, Coding::Ranked] {
            let mut s = vec![0u8; bound];
            let l = encode(&options.coding(forced), &data, &mut s).expect("forced coding");
            assert!(
                len <= l,
                "auto ({len} bytes) larger than {forced:?} ({l} bytes)"
            );
            let mut o = vec![0u8; data.len()];
            assert_eq!(decode(&s[..l], &mut o), Ok(data.len()));
            assert_eq!(o, data, "{forced:?} round trip changed the data");
        }
    }
});
