//! The `enec::io` adapters decoding: `DecodeReader` (`Read` and `BufRead`) and `DecodeWriter`
//! (`Write`), through both the `embedded-io` and the `std::io` traits, over inner readers and
//! writers that take or give fuzz-chosen chunk sizes, read and written in fuzz-chosen chunks:
//! the one-shot decoder's output and error, on the stream or a damaged copy (as in
//! `stream_split`: except `FrameTooLarge`; after the end of the stream the reader leaves the
//! rest in the inner reader and the writer refuses it). Never a panic.
//!
//! Input: `[dtype, frame_log2 - 10 | mutation << 3, coding | 0x80 (checksums off), expand,
//! way, chunk bytes (4: inner and outer sizes, two each), data...]`; `way % 6`: embedded-io
//! Read, BufRead, Write; std Read, BufRead, Write.
#![no_main]

use enec::io::{DecodeReader, DecodeWriter, IoError};
use enec::streaming::Decoder;
use enec::{decode, encode, max_encoded_size, Error};
use enec_fuzz::io::{ChunkedReader, ChunkedWriter};
use enec_fuzz::streaming::{compare_with_one_shot, Chunks};
use enec_fuzz::{data_of, options_of, seed_of, with_capacity, Bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mutation = input.get(1).map_or(0, |b| b >> 3);
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let way = cfg.u8() % 6;
    let c: [u8; 4] = std::array::from_fn(|_| cfg.u8());
    let data = data_of(options.dtype, expand, cfg.rest());
    let eb = options.dtype.element_bytes();
    let log2 = options.frame_log2;

    let mut stream = vec![0u8; max_encoded_size(&options, data.len()).expect("bound")];
    let len = encode(&options, &data, &mut stream).expect("one-shot encode");
    stream.truncate(len);
    let seed = seed_of(input);
    match mutation {
        16..=23 if !stream.is_empty() => {
            let bit = (seed as usize) % (8 * stream.len());
            stream[bit / 8] ^= 1 << (bit % 8);
        }
        24..=27 => stream.truncate((seed as usize) % (stream.len() + 1)),
        28..=31 => stream.extend(std::iter::repeat_n(0x5a, usize::from(mutation - 27) * 7)),
        _ => {}
    }
    let mut one_shot = vec![0u8; data.len()];
    let expected = decode(&stream, &mut one_shot);
    let inner = Chunks::new(c[0], c[1]);
    let outer = Chunks::new(c[2], c[3]);
    let (out, at, result) = with_capacity!(eb, log2, run, &stream, way, inner, outer);
    compare_with_one_shot(
        &stream,
        Some(expected),
        &one_shot,
        Some(&data),
        options.checksums,
        out,
        at,
        result,
    );
});

fn codec_error<E: std::fmt::Debug>(e: IoError<E>) -> Error {
    match e {
        IoError::Codec(e) => e,
        other => panic!("the inner reader or writer cannot fail: {other:?}"),
    }
}

fn std_error(e: std::io::Error) -> Error {
    *e.get_ref()
        .and_then(|e| e.downcast_ref::<Error>())
        .unwrap_or_else(|| panic!("an io::Error without an enec error: {e}"))
}

/// Decodes `stream` one way; returns the output, the stream bytes taken and how it ended.
fn run<const CAP: usize>(
    stream: &[u8],
    way: u8,
    inner: Chunks,
    mut outer: Chunks,
) -> (Vec<u8>, usize, Result<(), Error>) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut stalls = 0;
    match way {
        0 | 1 | 3 | 4 => {
            let mut reader =
                DecodeReader::<_, CAP>::new(Decoder::<CAP>::new(), ChunkedReader::new(stream, inner));
            let result = loop {
                let before = out.len();
                let r = match way {
                    0 => {
                        let room = outer.next(buf.len());
                        embedded_io::Read::read(&mut reader, &mut buf[..room])
                            .map(|n| out.extend_from_slice(&buf[..n]))
                            .map_err(codec_error)
                    }
                    3 => {
                        let room = outer.next(buf.len());
                        std::io::Read::read(&mut reader, &mut buf[..room])
                            .map(|n| out.extend_from_slice(&buf[..n]))
                            .map_err(std_error)
                    }
                    1 => match embedded_io::BufRead::fill_buf(&mut reader) {
                        Ok(b) => {
                            let n = outer.next(b.len()).max(1).min(b.len());
                            out.extend_from_slice(&b[..n]);
                            embedded_io::BufRead::consume(&mut reader, n);
                            Ok(())
                        }
                        Err(e) => Err(codec_error(e)),
                    },
                    _ => match std::io::BufRead::fill_buf(&mut reader) {
                        Ok(b) => {
                            let n = outer.next(b.len()).max(1).min(b.len());
                            out.extend_from_slice(&b[..n]);
                            std::io::BufRead::consume(&mut reader, n);
                            Ok(())
                        }
                        Err(e) => Err(std_error(e)),
                    },
                };
                if let Err(e) = r {
                    assert_eq!(reader.finish(), Err(e), "finish() forgot the error");
                    break Err(e);
                }
                if reader.codec().is_done() && reader.codec().pending_output().is_empty() {
                    break reader.finish();
                }
                stalls = if out.len() == before { stalls + 1 } else { 0 };
                assert!(stalls < 8, "DecodeReader makes no progress");
            };
            let (_decoder, inner) = reader.into_parts();
            (out, inner.at, result)
        }
        _ => {
            let mut writer =
                DecodeWriter::<_, CAP>::new(Decoder::<CAP>::new(), ChunkedWriter::new(inner));
            let mut at = 0;
            let result = loop {
                if at == stream.len() {
                    let f = if way == 2 {
                        embedded_io::Write::flush(&mut writer).map_err(codec_error)
                    } else {
                        std::io::Write::flush(&mut writer).map_err(std_error)
                    };
                    break f.and_then(|()| writer.finish());
                }
                let take = outer.next(stream.len() - at).max(1);
                let piece = &stream[at..at + take];
                let r = if way == 2 {
                    embedded_io::Write::write(&mut writer, piece).map_err(codec_error)
                } else {
                    std::io::Write::write(&mut writer, piece).map_err(std_error)
                };
                match r {
                    Ok(n) => {
                        assert!(n > 0 && n <= take, "write took {n} of {take}");
                        at += n;
                    }
                    // Past the end of the stream: what the one-shot decoder calls trailing
                    // data; the stream itself is complete.
                    Err(Error::TrailingData { .. }) if writer.codec().is_done() => {
                        let f = if way == 2 {
                            embedded_io::Write::flush(&mut writer).map_err(codec_error)
                        } else {
                            std::io::Write::flush(&mut writer).map_err(std_error)
                        };
                        break f.and_then(|()| writer.finish());
                    }
                    Err(e) => break Err(e),
                }
            };
            let (_decoder, inner) = writer.into_parts();
            (inner.out, at, result)
        }
    }
}
