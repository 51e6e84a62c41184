//! The `enec::io` adapters encoding: `EncodeWriter` (`Write`) and `EncodeReader` (`Read` and
//! `BufRead`), through both the `embedded-io` and the `std::io` traits, over inner writers and
//! readers that take or give fuzz-chosen chunk sizes, driven in fuzz-chosen chunks: they write
//! the one-shot encoder's bytes. With an element count off by one, they fail (never a panic,
//! never a stream claiming other data).
//!
//! Input: `[dtype, frame_log2 - 10, coding | 0x80 (checksums off), expand, way, chunk bytes
//! (4), data...]`; `way % 6`: embedded-io Write, Read, BufRead; std Write, Read, BufRead;
//! `way / 6 % 8`: 1 announces one element fewer, 2 one more.
#![no_main]

use enec::io::{EncodeReader, EncodeWriter, IoError};
use enec::streaming::Encoder;
use enec::{encode, max_encoded_size, EncodeOptions, Error};
use enec_fuzz::io::{ChunkedReader, ChunkedWriter};
use enec_fuzz::streaming::Chunks;
use enec_fuzz::{data_of, options_of, with_capacity, Bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let expand = cfg.u8();
    let w = cfg.u8();
    let c: [u8; 4] = std::array::from_fn(|_| cfg.u8());
    let data = data_of(options.dtype, expand, cfg.rest());
    let eb = options.dtype.element_bytes();
    let elements = (data.len() / eb) as u64;
    let count = match w / 6 % 8 {
        1 if elements > 0 => elements - 1,
        2 => elements + 1,
        _ => elements,
    };
    let mut stream = vec![0u8; max_encoded_size(&options, data.len()).expect("bound")];
    let len = encode(&options, &data, &mut stream).expect("one-shot encode");
    stream.truncate(len);
    let inner = Chunks::new(c[0], c[1]);
    let outer = Chunks::new(c[2], c[3]);
    let log2 = options.frame_log2;
    let r = with_capacity!(eb, log2, run, &options, count, &data, w % 6, inner, outer);
    if count == elements {
        let out = r.expect("encoding through an adapter failed");
        assert!(out == stream, "adapter wrote other bytes than encode()");
    } else {
        assert!(r.is_err(), "a wrong element count went unnoticed");
    }
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

fn run<const CAP: usize>(
    options: &EncodeOptions,
    count: u64,
    data: &[u8],
    way: u8,
    inner: Chunks,
    mut outer: Chunks,
) -> Result<Vec<u8>, Error> {
    let encoder = Encoder::<CAP>::new(*options, count).expect("capacity_for fits");
    let mut stalls = 0;
    match way {
        0 | 3 => {
            let mut writer = EncodeWriter::<_, CAP>::new(encoder, ChunkedWriter::new(inner));
            let mut at = 0;
            while at < data.len() {
                let take = outer.next(data.len() - at).max(1);
                let n = if way == 0 {
                    embedded_io::Write::write(&mut writer, &data[at..at + take]).map_err(codec_error)?
                } else {
                    std::io::Write::write(&mut writer, &data[at..at + take]).map_err(std_error)?
                };
                assert!(n > 0 && n <= take);
                at += n;
            }
            if way == 0 {
                embedded_io::Write::flush(&mut writer).map_err(codec_error)?;
            } else {
                std::io::Write::flush(&mut writer).map_err(std_error)?;
            }
            writer.finish()?;
            Ok(std::mem::take(&mut writer.get_mut().out))
        }
        _ => {
            let mut reader = EncodeReader::<_, CAP>::new(encoder, ChunkedReader::new(data, inner));
            let mut out = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let before = out.len();
                match way {
                    1 | 4 => {
                        let room = outer.next(buf.len());
                        let n = if way == 1 {
                            embedded_io::Read::read(&mut reader, &mut buf[..room]).map_err(codec_error)?
                        } else {
                            std::io::Read::read(&mut reader, &mut buf[..room]).map_err(std_error)?
                        };
                        out.extend_from_slice(&buf[..n]);
                    }
                    _ => {
                        let b = if way == 2 {
                            embedded_io::BufRead::fill_buf(&mut reader).map_err(codec_error)?
                        } else {
                            std::io::BufRead::fill_buf(&mut reader).map_err(std_error)?
                        };
                        let n = outer.next(b.len()).max(1).min(b.len());
                        out.extend_from_slice(&b[..n]);
                        if way == 2 {
                            embedded_io::BufRead::consume(&mut reader, n);
                        } else {
                            std::io::BufRead::consume(&mut reader, n);
                        }
                    }
                }
                if reader.codec().is_done() && reader.codec().pending_output().is_empty() {
                    reader.finish()?;
                    // Whatever follows the data stays in the inner reader.
                    if reader.get_ref().at != data.len() {
                        return Err(Error::TrailingData {
                            extra: (data.len() - reader.get_ref().at) as u64,
                        });
                    }
                    return Ok(out);
                }
                stalls = if out.len() == before { stalls + 1 } else { 0 };
                assert!(stalls < 8, "EncodeReader makes no progress");
            }
        }
    }
}
