//! `enec::parallel` on bare streams (what `enec decompress` and the Python loaders call): for
//! any stream and any thread count, `decode_into` and `decode_with` (any chunk size, so several
//! runs of frames go to several threads) give the output and the error of the serial
//! `enec::decode`; `encode_into` writes the bytes of `enec::encode`.
//!
//! Input: `[threads (% 5, 0: all cores), chunk, mode, stream or roundtrip-style config and data...]`; mode bit 0
//! set: the rest is a stream (also tried with its header check recomputed); clear: the rest is
//! `[dtype, frame_log2 - 10, coding, expand, data...]` to encode, then decode.
#![no_main]

use std::sync::Mutex;

use enec::parallel::{decode_into, decode_with, encode_into, Restored};
use enec::{decode, encode, max_encoded_size, read_header, Error};
use enec_fuzz::{data_of, fix_header_check, options_of, Bytes};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: usize = 1 << 22;

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    // 0: all the machine has (`thread_count`).
    let threads = usize::from(cfg.u8() % 5);
    let chunk = 1 + (usize::from(cfg.u8()) << 8);
    let mode = cfg.u8();
    if mode & 1 == 1 {
        let stream = cfg.rest();
        check(stream, threads, chunk);
        let mut fixed = stream.to_vec();
        if fix_header_check(&mut fixed) && fixed != stream {
            check(&fixed, threads, chunk);
        }
        return;
    }
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let data = data_of(options.dtype, expand, cfg.rest());
    let bound = max_encoded_size(&options, data.len()).expect("bound");
    let mut serial = vec![0u8; bound];
    let n = encode(&options, &data, &mut serial).expect("encode");
    serial.truncate(n);
    let mut par = vec![0u8; bound];
    let m = encode_into(&options, &data, &mut par, threads).expect("parallel encode");
    assert!(par[..m] == serial[..], "encode_into wrote other bytes than encode");
    check(&serial, threads, chunk);
    // A damaged copy: one flipped bit, chosen by the data.
    if !serial.is_empty() {
        let bit = (mode as usize >> 1) * 8191 % (8 * serial.len());
        serial[bit / 8] ^= 1 << (bit % 8);
        check(&serial, threads, chunk);
    }
});

fn check(stream: &[u8], threads: usize, chunk: usize) {
    let total = read_header(stream).map_or(0, |i| i.decoded_bytes());
    let len = if total > MAX_OUT as u64 { 64 } else { total as usize };
    let mut serial = vec![0u8; len];
    let expected = decode(stream, &mut serial);

    let mut out = vec![0x5au8; len];
    let r = decode_into(stream, &mut out, threads);
    assert_eq!(r, expected, "decode_into ({threads} threads) and decode disagree");
    if r.is_ok() {
        assert!(out == serial, "decode_into wrote other bytes than decode");
    }

    if total > MAX_OUT as u64 {
        return;
    }
    let assembled = Mutex::new(vec![0x5au8; len]);
    let seen = Mutex::new(0u64);
    let r = decode_with(stream, threads, chunk, |run: Restored<'_>| -> Result<(), Error> {
        let at = usize::try_from(run.at).expect("offset");
        let mut a = assembled.lock().unwrap();
        assert!(at + run.bytes.len() <= a.len(), "decode_with: run past the end");
        a[at..at + run.bytes.len()].copy_from_slice(run.bytes);
        assert!(run.source.end <= stream.len(), "decode_with: source past the stream");
        *seen.lock().unwrap() += run.bytes.len() as u64;
        Ok(())
    });
    assert_eq!(
        r,
        expected.map(|n| n as u64),
        "decode_with ({threads} threads, chunk {chunk}) and decode disagree"
    );
    if r.is_ok() {
        assert_eq!(*seen.lock().unwrap(), total, "decode_with handed out runs twice or not");
        assert!(*assembled.lock().unwrap() == serial, "decode_with gave other bytes");
    }
}
