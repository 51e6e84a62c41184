//! `enec::wrapped`: `FrameEncoder` (frames encoded one by one, in any order, into any room)
//! writes the bytes of the one-shot `enec::encode`; `FrameDecoder` (frames found by their
//! headers and decoded one by one) gives the output and the error of the one-shot
//! `enec::decode`, on the intact stream or a damaged copy. Never a panic.
//!
//! Input: `[dtype, frame_log2 - 10 | mutation << 3, coding | 0x80 (checksums off), expand,
//! room, data...]` (as `stream_split`; mutation 16-23 flips a bit, 24-27 truncates, 28-31
//! appends bytes; `room`: the output room given to `encode_frame`, 255 = max_frame_bytes).
#![no_main]

use enec::wrapped::{FrameDecoder, FrameEncoder};
use enec::{decode, encode, max_encoded_size, read_header, Error};
use enec_fuzz::{data_of, options_of, seed_of, Bytes};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: u64 = 1 << 22;

fuzz_target!(|input: &[u8]| {
    let mutation = input.get(1).map_or(0, |b| b >> 3);
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let room = cfg.u8();
    let data = data_of(options.dtype, expand, cfg.rest());

    let mut stream = vec![0u8; max_encoded_size(&options, data.len()).expect("bound")];
    let len = encode(&options, &data, &mut stream).expect("one-shot encode");
    stream.truncate(len);

    let encoder = FrameEncoder::new(&options, &data).expect("FrameEncoder::new");
    assert_eq!(Ok(*encoder.info()), read_header(&stream));
    let count = encoder.frame_count();
    let max = encoder.max_frame_bytes();
    let room = if room == 255 { max } else { usize::from(room) * max / 255 };
    let mut frames = vec![Vec::new(); count as usize];
    let mut buf = vec![0u8; max];
    // Frames in reverse order: each one encodes on its own.
    for index in (0..count).rev() {
        match encoder.encode_frame(index, &mut buf[..room]) {
            Ok(n) => frames[index as usize] = buf[..n].to_vec(),
            Err(Error::OutputTooSmall { .. }) => {
                let n = encoder.encode_frame(index, &mut buf).expect("encode_frame with max room");
                assert!(n > room, "OutputTooSmall with room enough");
                frames[index as usize] = buf[..n].to_vec();
            }
            Err(e) => panic!("encode_frame({index}): {e}"),
        }
    }
    assert!(
        matches!(encoder.encode_frame(count, &mut buf), Err(Error::InvalidFrameLength(0))),
        "encode_frame past the last frame"
    );
    let input_back: Vec<u8> = (0..count).flat_map(|i| encoder.frame_input(i).to_vec()).collect();
    assert!(input_back == data, "frame_input does not cover the input");
    let mut assembled = encoder.header().to_vec();
    for f in &frames {
        assembled.extend_from_slice(f);
    }
    assert!(assembled == stream, "FrameEncoder wrote other bytes than encode");

    let seed = seed_of(input);
    let mut damaged = stream.clone();
    match mutation {
        16..=23 if !damaged.is_empty() => {
            let bit = (seed as usize) % (8 * damaged.len());
            damaged[bit / 8] ^= 1 << (bit % 8);
        }
        24..=27 => damaged.truncate((seed as usize) % (damaged.len() + 1)),
        28..=31 => damaged.extend(std::iter::repeat_n(0x5a, usize::from(mutation - 27) * 7)),
        _ => {}
    }
    decode_alike(&damaged);
});

/// Decodes `stream` frame by frame and compares with the one-shot decoder.
fn decode_alike(stream: &[u8]) {
    let decoder = match FrameDecoder::new(stream) {
        Ok(d) => d,
        Err(e) => {
            assert_eq!(read_header(stream), Err(e), "FrameDecoder::new and read_header disagree");
            return;
        }
    };
    let info = *decoder.info();
    if info.decoded_bytes() > MAX_OUT {
        return;
    }
    let total = info.decoded_bytes() as usize;
    let mut one_shot = vec![0u8; total];
    let expected = decode(stream, &mut one_shot);
    let mut out = vec![0x5au8; total];
    let result = (|| -> Result<usize, Error> {
        let mut end = enec::format::STREAM_HEADER_BYTES;
        for frame in decoder.frames() {
            let frame = frame?;
            let range = decoder.output_range(&frame);
            assert!(range.end <= total, "output_range past the output");
            let n = decoder.decode_frame(&frame, &mut out[range.clone()])?;
            assert_eq!(n, range.len());
            end = frame.offset + frame.bytes;
            assert_eq!(decoder.trailing_bytes(&frame), stream.len() - end);
        }
        if stream.len() > end {
            return Err(Error::TrailingData {
                extra: (stream.len() - end) as u64,
            });
        }
        Ok(total)
    })();
    assert_eq!(result, expected, "frame-by-frame decoding and decode disagree");
    if result.is_ok() {
        assert!(out == one_shot, "frame-by-frame decoding gave other bytes");
    }
}
