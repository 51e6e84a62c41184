//! The streaming codecs driven through their zero-copy calls (`input_buffer` + `commit_input`
//! to feed, `pending_output` + `consume_output` to drain), mixed with slice calls, in
//! fuzz-chosen chunk sizes (then `reset`): the encoder writes the one-shot stream's bytes; the decoder, on the
//! stream or a damaged copy, hands out the one-shot output and ends with the one-shot error (as
//! in `stream_split`). Never a panic, never an allocation, always progress.
//!
//! Input: `[dtype, frame_log2 - 10 | mutation << 3, coding | 0x80 (checksums off), expand,
//! ways, chunk bytes (4: input and output sizes of the encoder, then of the decoder; cycled
//! with the next 4), data...]`; `ways` bit i picks, at step i mod 8, the zero-copy (1) or the
//! slice (0) call for input (even bits) and output (odd bits).
#![no_main]

use enec::streaming::{Decoder, Encoder, Status};
use enec::{decode, encode, max_encoded_size, EncodeOptions, Error};
use enec_fuzz::streaming::{compare_with_one_shot, Chunks};
use enec_fuzz::{data_of, no_alloc, options_of, seed_of, with_capacity, Bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mutation = input.get(1).map_or(0, |b| b >> 3);
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let ways = cfg.u8();
    let c: [u8; 8] = std::array::from_fn(|_| cfg.u8());
    let mut enc_chunks = (Chunks::new(c[0], c[4]), Chunks::new(c[1], c[5]));
    let mut dec_chunks = (Chunks::new(c[2], c[6]), Chunks::new(c[3], c[7]));
    let data = data_of(options.dtype, expand, cfg.rest());
    let eb = options.dtype.element_bytes();
    let log2 = options.frame_log2;

    let mut stream = vec![0u8; max_encoded_size(&options, data.len()).expect("bound")];
    let len = encode(&options, &data, &mut stream).expect("one-shot encode");
    stream.truncate(len);

    let streamed = with_capacity!(eb, log2, zc_encode, &options, &data, ways, &mut enc_chunks);
    assert!(streamed == stream, "zero-copy encoder wrote other bytes than encode()");

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
    let mut one_shot = vec![0u8; data.len()];
    let expected = decode(&damaged, &mut one_shot);
    let (out, at, result) = with_capacity!(eb, log2, zc_decode, &damaged, ways, &mut dec_chunks);
    compare_with_one_shot(
        &damaged,
        Some(expected),
        &one_shot,
        Some(&data),
        options.checksums,
        out,
        at,
        result,
    );
});

fn zero_copy(ways: u8, step: usize, output: bool) -> bool {
    ways >> ((2 * step + usize::from(output)) % 8) & 1 == 1
}

fn zc_encode<const CAP: usize>(
    options: &EncodeOptions,
    data: &[u8],
    ways: u8,
    chunks: &mut (Chunks, Chunks),
) -> Vec<u8> {
    let eb = options.dtype.element_bytes();
    let mut encoder = Box::new(
        Encoder::<CAP>::new(*options, (data.len() / eb) as u64).expect("capacity_for fits"),
    );
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0;
    let mut stalls = 0;
    for step in 0.. {
        let (in_before, out_before) = (at, out.len());
        let take = chunks.0.next(data.len() - at);
        let mut slice_in: &[u8] = &[];
        if zero_copy(ways, step, false) {
            let needed = encoder.needed_input();
            let dst = encoder.input_buffer();
            assert_eq!(dst.len(), needed, "input_buffer and needed_input disagree");
            let n = take.min(dst.len());
            dst[..n].copy_from_slice(&data[at..at + n]);
            encoder.commit_input(n);
            at += n;
        } else {
            slice_in = &data[at..at + take];
        }
        let room = chunks.1.next(buf.len());
        let room = if zero_copy(ways, step, true) { 0 } else { room };
        let p = no_alloc("Encoder::encode", || encoder.encode(slice_in, &mut buf[..room]))
            .expect("streaming encode of valid input");
        at += p.consumed;
        out.extend_from_slice(&buf[..p.written]);
        if zero_copy(ways, step, true) {
            let pending = encoder.pending_output();
            let n = chunks.1.next(pending.len()).max(1).min(pending.len());
            out.extend_from_slice(&pending[..n]);
            encoder.consume_output(n);
        }
        if p.status == Status::Done && encoder.pending_output().is_empty() && encoder.is_done() {
            break;
        }
        stalls = if at == in_before && out.len() == out_before { stalls + 1 } else { 0 };
        assert!(stalls < 8, "zero-copy encoding makes no progress");
    }
    assert_eq!(at, data.len(), "encoder done before taking all input");
    assert_eq!(encoder.finish(), Ok(()));
    assert_eq!(encoder.bytes_out(), out.len() as u64);
    assert_eq!(encoder.remaining_input(), 0);
    assert_eq!(encoder.frames_encoded(), encoder.info().frame_count);
    assert_eq!(encoder.options(), options);
    // `reset` starts the same stream over.
    let count = encoder.info().element_count;
    encoder.reset(*options, count).expect("reset");
    assert_eq!((encoder.bytes_in(), encoder.bytes_out(), encoder.frames_encoded()), (0, 0, 0));
    assert!(!encoder.is_done() || count == 0);
    out
}

fn zc_decode<const CAP: usize>(
    stream: &[u8],
    ways: u8,
    chunks: &mut (Chunks, Chunks),
) -> (Vec<u8>, usize, Result<(), Error>) {
    let mut decoder = Box::new(Decoder::<CAP>::new());
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0;
    let mut stalls = 0;
    let mut ended = 0;
    let result = 'run: {
        for step in 0.. {
            let (in_before, out_before) = (at, out.len());
            let take = chunks.0.next(stream.len() - at);
            let mut slice_in: &[u8] = &[];
            if zero_copy(ways, step, false) {
                let needed = decoder.needed_input();
                let dst = decoder.input_buffer();
                assert_eq!(dst.len(), needed, "input_buffer and needed_input disagree");
                let n = take.min(dst.len());
                dst[..n].copy_from_slice(&stream[at..at + n]);
                decoder.commit_input(n);
                at += n;
            } else {
                slice_in = &stream[at..at + take];
            }
            let room = if zero_copy(ways, step, true) { 0 } else { chunks.1.next(buf.len()) };
            let p = match no_alloc("Decoder::decode", || decoder.decode(slice_in, &mut buf[..room])) {
                Ok(p) => p,
                Err(e) => {
                    assert_eq!(decoder.finish(), Err(e), "finish() forgot the error");
                    assert!(decoder.pending_output().is_empty(), "output pending after an error");
                    break 'run Err(e);
                }
            };
            at += p.consumed;
            out.extend_from_slice(&buf[..p.written]);
            if zero_copy(ways, step, true) {
                let pending = decoder.pending_output();
                let n = chunks.1.next(pending.len()).max(1).min(pending.len());
                out.extend_from_slice(&pending[..n]);
                decoder.consume_output(n);
            }
            if p.status == Status::Done && decoder.pending_output().is_empty() {
                assert_eq!(decoder.finish(), Ok(()));
                break 'run Ok(());
            }
            if at == stream.len() && p.status == Status::NeedsInput && decoder.pending_output().is_empty() {
                ended += 1;
                if ended > 1 {
                    let f = decoder.finish();
                    assert!(f.is_err(), "finish() is Ok before Done");
                    break 'run f;
                }
            }
            stalls = if at == in_before && out.len() == out_before { stalls + 1 } else { 0 };
            assert!(stalls < 8, "zero-copy decoding makes no progress");
        }
        unreachable!()
    };
    if result.is_ok() {
        assert_eq!(decoder.bytes_in(), at as u64);
        assert_eq!(decoder.bytes_out(), out.len() as u64);
        let info = *decoder.info().expect("info once done");
        assert_eq!(decoder.frames_decoded(), info.frame_count);
        assert_eq!(Ok(info), enec::read_header(stream));
    }
    // `reset` forgets the stream, the error included.
    decoder.reset();
    assert_eq!((decoder.bytes_in(), decoder.bytes_out(), decoder.frames_decoded()), (0, 0, 0));
    assert!(decoder.info().is_none() && !decoder.is_done() && decoder.finish().is_err());
    assert_eq!(decoder.needed_input(), enec::format::STREAM_HEADER_BYTES);
    (out, at, result)
}
