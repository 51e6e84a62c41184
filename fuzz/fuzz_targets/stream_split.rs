//! The streaming `Encoder` and `Decoder` (push/pull over caller buffers) fed in fuzz-chosen
//! chunk sizes give exactly the one-shot results: the same stream bytes when encoding; when
//! decoding (the stream possibly corrupted: a flipped bit, a truncation, appended bytes), the
//! same output and the same error, except `FrameTooLarge`, which depends on the decoder's
//! capacity only. Codecs are sized with `capacity_for(dtype, frame_len)`, so every stream our
//! encoder writes must fit.
//!
//! Input: `[dtype, frame_log2 - 10 | mutation << 3, coding | 0x80 (checksums off), expand,
//! chunk bytes (8: encoder input, encoder output, decoder input, decoder output; two each),
//! data...]`.
#![no_main]

use enec::streaming::{Encoder, Status};
use enec::{decode, encode, max_encoded_size, EncodeOptions};
use enec_fuzz::streaming::{check_progress, stream_decode, Chunks};
use enec_fuzz::{data_of, no_alloc, options_of, seed_of, with_capacity, Bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mutation = input.get(1).map_or(0, |b| b >> 3);
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let mut enc_chunks = (
        Chunks::new(cfg.u8(), cfg.u8()),
        Chunks::new(cfg.u8(), cfg.u8()),
    );
    let mut dec_chunks = (
        Chunks::new(cfg.u8(), cfg.u8()),
        Chunks::new(cfg.u8(), cfg.u8()),
    );
    let data = data_of(options.dtype, expand, cfg.rest());
    let eb = options.dtype.element_bytes();
    let log2 = options.frame_log2;

    // One-shot.
    let mut stream = vec![0u8; max_encoded_size(&options, data.len()).expect("bound")];
    let len = encode(&options, &data, &mut stream).expect("one-shot encode");
    stream.truncate(len);

    // Streaming encode gives the same bytes.
    let streamed = with_capacity!(eb, log2, stream_encode, &options, &data, &mut enc_chunks);
    assert!(
        streamed == stream,
        "streaming encoder wrote other bytes than encode()"
    );

    // Decode the stream, or a corrupted copy of it.
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
    with_capacity!(
        eb,
        log2,
        stream_decode,
        &damaged,
        Some(expected),
        &one_shot,
        Some(&data),
        options.checksums,
        &mut dec_chunks,
        usize::MAX
    );
});

fn stream_encode<const CAP: usize>(
    options: &EncodeOptions,
    data: &[u8],
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
    loop {
        let take = chunks.0.next(data.len() - at);
        let room = chunks.1.next(buf.len());
        let input = &data[at..at + take];
        let p = no_alloc("Encoder::encode", || {
            encoder.encode(input, &mut buf[..room])
        })
        .expect("streaming encode of valid input");
        check_progress(&p, take, room, "encode");
        at += p.consumed;
        out.extend_from_slice(&buf[..p.written]);
        if p.status == Status::Done {
            break;
        }
        stalls = if p.consumed == 0 && p.written == 0 {
            stalls + 1
        } else {
            0
        };
        assert!(stalls < 4, "streaming encoder makes no progress");
    }
    assert_eq!(at, data.len(), "encoder done before taking all input");
    assert_eq!(encoder.finish(), Ok(()));
    assert!(encoder.is_done());
    assert_eq!(encoder.bytes_in(), data.len() as u64);
    assert_eq!(encoder.bytes_out(), out.len() as u64);
    // Done is sticky and takes nothing more.
    let p = encoder.encode(&[], &mut buf).expect("after done");
    assert_eq!((p.consumed, p.written, p.status), (0, 0, Status::Done));
    out
}
