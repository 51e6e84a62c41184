//! The result of decoding (and encoding) never depends on what the output buffer held before:
//! the same input decoded into buffers pre-filled with different garbage gives identical
//! results, identical output on success, and on failure differs only in bytes that were never
//! written.
//!
//! Input: a stream (tried as it is and with its header check recomputed). The same bytes are
//! also encoded as data of the dtype chosen by their length, into garbage-filled buffers.
#![no_main]

use enec::internals::frame::decode_frame;
use enec::{decode, encode, max_encoded_size, read_header, EncodeOptions};
use enec_fuzz::{assert_written_alike, fix_header_check, prefilled, seed_of};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: usize = 1 << 22;
const FILLS: [u8; 4] = [0, 1, 2, 3];

fuzz_target!(|input: &[u8]| {
    let seed = seed_of(input);
    check_decode(input, seed);
    let mut fixed = input.to_vec();
    if fix_header_check(&mut fixed) && fixed != input {
        check_decode(&fixed, seed);
    }
    check_encode(input, seed);
});

fn check_decode(stream: &[u8], seed: u64) {
    let total = read_header(stream)
        .ok()
        .and_then(|i| usize::try_from(i.decoded_bytes()).ok())
        .unwrap_or(64)
        .min(MAX_OUT);
    let fills: Vec<Vec<u8>> = FILLS.iter().map(|&w| prefilled(total, w, seed)).collect();
    let runs: Vec<(Result<usize, enec::Error>, Vec<u8>)> = fills
        .iter()
        .map(|fill| {
            let mut out = fill.clone();
            (decode(stream, &mut out), out)
        })
        .collect();
    for k in 1..runs.len() {
        assert_eq!(
            runs[0].0, runs[k].0,
            "decode result depends on the output buffer"
        );
        assert_written_alike(&runs[0].1, &fills[0], &runs[k].1, &fills[k], "decode");
        if runs[0].0.is_ok() {
            assert_eq!(
                runs[0].1, runs[k].1,
                "decoded output depends on the output buffer"
            );
        }
    }

    // Each frame on its own, where the stream's frames can be found.
    let Ok(info) = read_header(stream) else {
        return;
    };
    let Ok(iter) = enec::frames(stream) else {
        return;
    };
    for f in iter.take(8) {
        let Ok(f) = f else { break };
        let bytes = f.elements * info.dtype.element_bytes();
        let fills: Vec<Vec<u8>> = FILLS.iter().map(|&w| prefilled(bytes, w, seed)).collect();
        let runs: Vec<_> = fills
            .iter()
            .map(|fill| {
                let mut out = fill.clone();
                let r = decode_frame(
                    info.dtype,
                    info.checksums,
                    f.index,
                    f.elements,
                    &stream[f.offset..],
                    &mut out,
                );
                (r, out)
            })
            .collect();
        for k in 1..runs.len() {
            assert_eq!(
                runs[0].0, runs[k].0,
                "decode_frame result depends on the buffer"
            );
            assert_written_alike(&runs[0].1, &fills[0], &runs[k].1, &fills[k], "decode_frame");
            if runs[0].0.is_ok() {
                assert_eq!(
                    runs[0].1, runs[k].1,
                    "decode_frame output depends on the buffer"
                );
            }
        }
    }
}

fn check_encode(data: &[u8], seed: u64) {
    let dtype = enec_fuzz::dtype_of(data.len() as u8);
    let eb = dtype.element_bytes();
    let data = &data[..data.len() / eb * eb];
    let options = EncodeOptions {
        frame_log2: 10,
        ..EncodeOptions::new(dtype)
    };
    let bound = max_encoded_size(&options, data.len()).expect("bound");
    let runs: Vec<_> = FILLS
        .iter()
        .map(|&w| {
            let mut out = prefilled(bound, w, seed);
            let r = encode(&options, data, &mut out);
            (r, out)
        })
        .collect();
    let len = runs[0].0.expect("encode into max_encoded_size bytes");
    for run in &runs[1..] {
        assert_eq!(run.0, Ok(len));
        assert_eq!(
            run.1[..len],
            runs[0].1[..len],
            "encoded stream depends on the buffer"
        );
    }
}
