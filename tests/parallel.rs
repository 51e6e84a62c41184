//! `enec::parallel` against the serial functions: the same bytes on real weights (the committed
//! MiniLM slice, tests/data/README.md), and the same errors on corrupt streams and containers.
#![cfg(feature = "std")]

mod common;

use enec::container::{Container, ContainerError, PieceKind, PieceMeta, Writer};
use enec::wrapped::piece_checksum;
use enec::{decode, encode_to_vec, parallel, Coding, Dtype, EncodeOptions, Error};
use half::{bf16, f16};

fn slice(dtype: Dtype) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minilm-slice.f32.bin"
    );
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let values = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    match dtype {
        Dtype::Fp32 => raw.clone(),
        Dtype::Bf16 => values
            .flat_map(|v| bf16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::Fp16 => values
            .flat_map(|v| f16::from_f32(v).to_le_bytes())
            .collect(),
        Dtype::E4m3 | Dtype::E5m2 => values
            .map(|v| common::fp8(dtype, f64::from(v) * 64.0))
            .collect(),
    }
}

/// Serial and parallel decoding of `stream` give the same result, and on success the same bytes.
fn same_decode(stream: &[u8], decoded_len: usize, threads: usize) -> Result<usize, Error> {
    let mut serial = vec![0u8; decoded_len];
    let mut parallel = vec![0xA5u8; decoded_len];
    let expected = decode(stream, &mut serial);
    let got = parallel::decode_into(stream, &mut parallel, threads);
    assert_eq!(got, expected, "{threads} threads");
    if got.is_ok() {
        assert!(serial == parallel, "{threads} threads: bytes differ");
    }
    got
}

#[test]
fn encode_and_decode_match_the_serial_functions_on_real_weights() {
    for dtype in Dtype::ALL {
        let input = slice(dtype);
        for (frame_len, coding) in [(16_384, Coding::Ranked), (1024, Coding::Groups)] {
            let options = EncodeOptions::new(dtype)
                .frame_len(frame_len)
                .unwrap()
                .coding(coding);
            let serial = encode_to_vec(&options, &input).unwrap();
            let bound = enec::max_encoded_size(&options, input.len()).unwrap();
            for threads in [1, 2, 3, 0] {
                let mut out = vec![0u8; bound];
                let len = parallel::encode_into(&options, &input, &mut out, threads).unwrap();
                assert!(
                    out[..len] == serial[..],
                    "{dtype:?} {frame_len} {threads} threads: stream differs"
                );
                assert_eq!(same_decode(&serial, input.len(), threads), Ok(input.len()));
            }
            // Less room than the bound but enough for the stream: encoded as the serial does.
            let mut tight = vec![0u8; serial.len()];
            let len = parallel::encode_into(&options, &input, &mut tight, 2).unwrap();
            assert!(tight[..len] == serial[..]);
            let mut short = vec![0u8; serial.len() - 1];
            assert_eq!(
                parallel::encode_into(&options, &input, &mut short, 2),
                enec::encode(&options, &input, &mut short)
            );
        }
    }
}

#[test]
fn corrupt_streams_fail_as_in_the_serial_decoder() {
    let input = slice(Dtype::Bf16);
    // 1,024-element frames: 913 frames in two runs of work.
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let stream = encode_to_vec(&options, &input).unwrap();
    let frames: Vec<_> = enec::frames(&stream).unwrap().map(Result::unwrap).collect();
    let mut offsets = vec![0, 5, 12, 16, 28, stream.len() - 1];
    for f in [0, 1, 511, 512, 600, frames.len() - 1] {
        let frame = frames[f];
        offsets.extend(
            [0, 4, 8, 12, 20, 31, 32, frame.bytes / 2, frame.bytes - 1].map(|o| frame.offset + o),
        );
    }
    let mut failures = 0;
    for &at in &offsets {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut bad = stream.clone();
            bad[at] ^= flip;
            failures += same_decode(&bad, input.len(), 2).is_err() as usize;
            // The same damage in two frames: the first in stream order is reported.
            let second = frames[700].offset + frames[700].bytes / 2;
            if at < frames[700].offset {
                bad[second] ^= 0x10;
                assert!(same_decode(&bad, input.len(), 3).is_err());
            }
        }
    }
    assert!(failures > offsets.len(), "most damage is detected");
    for len in [
        0,
        31,
        32,
        33,
        frames[1].offset,
        frames[600].offset + 40,
        stream.len() - 1,
    ] {
        assert!(same_decode(&stream[..len], input.len(), 2).is_err());
    }
    let mut longer = stream.clone();
    longer.extend_from_slice(&[0; 7]);
    assert_eq!(
        same_decode(&longer, input.len(), 2),
        Err(Error::TrailingData { extra: 7 })
    );
    let mut small = vec![0u8; input.len() - 1];
    assert_eq!(
        parallel::decode_into(&stream, &mut small, 2),
        Err(Error::OutputTooSmall {
            needed: input.len() as u64
        })
    );
}

/// A container of the slice's bf16 tensors between verbatim pieces; returns it and the original.
fn container() -> (Vec<u8>, Vec<u8>) {
    let weights = slice(Dtype::Bf16);
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let pieces: Vec<(&str, &str, &[u8], bool)> = vec![
        ("", "", b"{\"header\": true}", false),
        ("big", "BF16", &weights[..1_200_000], true),
        ("ids", "I64", &[7u8; 24], false),
        ("small", "BF16", &weights[1_200_000..1_204_096], true),
        ("empty", "BF16", &[], true),
        ("rest", "BF16", &weights[1_204_096..], true),
    ];
    let mut file = Vec::new();
    let mut original = Vec::new();
    let mut writer = Writer::new(&mut file).unwrap();
    for &(name, dtype, bytes, enec) in &pieces {
        writer.begin().unwrap();
        let (kind, checksum) = if enec {
            writer
                .payload(&encode_to_vec(&options, bytes).unwrap())
                .unwrap();
            (PieceKind::Enec, 0)
        } else {
            writer.payload(bytes).unwrap();
            (PieceKind::Raw, piece_checksum(bytes))
        };
        let shape = [bytes.len() as u64 / 2];
        let original_len = bytes.len() as u64;
        let meta = PieceMeta {
            kind,
            name,
            dtype,
            shape: &shape,
            original_len,
            checksum,
        };
        writer.end(meta).unwrap();
        original.extend_from_slice(bytes);
    }
    writer.finish().unwrap();
    (file, original)
}

/// The serial restore: every entry in order with `Container::decode_entry`.
fn restore_serial(c: &Container<'_>, out: &mut [u8]) -> Result<(), ContainerError> {
    for (number, entry) in c.entries() {
        let at = entry.original_offset as usize;
        c.decode_entry(number, &entry, &mut out[at..])?;
    }
    Ok(())
}

#[test]
fn containers_restore_as_in_the_serial_reader() {
    let (file, original) = container();
    let c = Container::parse(&file).unwrap();
    for threads in [1, 2, 4] {
        let mut out = vec![0u8; original.len()];
        parallel::decode_container_into(&c, &mut out, threads).unwrap();
        assert!(out == original);
        for (number, entry) in c.entries() {
            let mut one = vec![0u8; entry.original_len as usize];
            let len = parallel::decode_entry_into(&c, number, &entry, &mut one, threads).unwrap();
            let at = entry.original_offset as usize;
            assert_eq!(one[..len], original[at..at + len]);
        }
    }
    let mut small = vec![0u8; original.len() - 1];
    assert_eq!(
        parallel::decode_container_into(&c, &mut small, 2),
        Err(ContainerError::OutputTooSmall {
            needed: original.len() as u64
        })
    );
    // An entry that is not from this container is refused, not sliced.
    let (_, mut foreign) = c.find("big").unwrap();
    foreign.offset = file.len() as u64;
    let mut out = vec![0u8; foreign.original_len as usize];
    assert!(parallel::decode_entry_into(&c, 1, &foreign, &mut out, 2).is_err());
}

#[test]
fn corrupt_payloads_fail_as_in_the_serial_reader() {
    let (file, original) = container();
    let c = Container::parse(&file).unwrap();
    let entries: Vec<_> = c.entries().collect();
    let mut checked = 0;
    for (_, entry) in &entries {
        let (start, len) = (entry.offset as usize, entry.len as usize);
        for at in [0, 7, 29, 40, len / 3, len / 2, len.saturating_sub(1)] {
            if at >= len {
                continue;
            }
            let mut bad = file.clone();
            bad[start + at] ^= 0x44;
            // Damage in a later entry too: the first in file order is reported.
            let last = entries.last().unwrap().1.offset as usize + 100;
            if start + at < last {
                bad[last] ^= 0x44;
            }
            let bad_c = Container::parse(&bad).unwrap();
            let mut serial = vec![0u8; original.len()];
            let mut parallel = vec![0u8; original.len()];
            let expected = restore_serial(&bad_c, &mut serial);
            assert_eq!(
                parallel::decode_container_into(&bad_c, &mut parallel, 3),
                expected
            );
            if expected.is_ok() {
                assert!(serial == parallel);
            }
            let mut outs: Vec<Vec<u8>> = entries
                .iter()
                .map(|(_, e)| vec![0u8; e.original_len as usize])
                .collect();
            let parts = bad_c
                .entries()
                .zip(outs.iter_mut())
                .map(|((number, entry), out)| (number, entry, &mut out[..]))
                .collect();
            assert_eq!(parallel::decode_entries_into(&bad_c, parts, 3), expected);
            checked += expected.is_err() as usize;
        }
    }
    assert!(checked > 20, "most damage is detected: {checked}");
}

/// What the `*_with` functions write, gathered into memory at the offsets they give.
struct Gathered(std::sync::Mutex<Vec<u8>>);

impl Gathered {
    fn new(len: usize) -> Gathered {
        Gathered(std::sync::Mutex::new(vec![0xA5; len]))
    }

    fn put(&self, run: parallel::Restored<'_>, input: &[u8]) {
        // Every run names input bytes it came from, inside the input.
        assert!((!run.source.is_empty() || run.bytes.is_empty()) && run.source.end <= input.len());
        let at = run.at as usize;
        let mut out = self.0.lock().unwrap();
        out[at..at + run.bytes.len()].copy_from_slice(run.bytes);
    }
}

#[test]
fn writers_get_the_serial_bytes_and_stop_the_decoding_when_they_fail() {
    let (file, original) = container();
    let c = Container::parse(&file).unwrap();
    for (threads, chunk) in [(1, 1 << 20), (2, 4096), (3, 100_000)] {
        let sink = Gathered::new(original.len());
        parallel::decode_container_with(&c, threads, chunk, |run| {
            sink.put(run, &file);
            Ok::<(), ContainerError>(())
        })
        .unwrap();
        assert!(sink.0.into_inner().unwrap() == original);
    }
    let weights = slice(Dtype::Fp32);
    let stream = encode_to_vec(&EncodeOptions::new(Dtype::Fp32), &weights).unwrap();
    let sink = Gathered::new(weights.len());
    let len = parallel::decode_with(&stream, 2, 1 << 18, |run| {
        sink.put(run, &stream);
        Ok::<(), Error>(())
    })
    .unwrap();
    assert_eq!(len, weights.len() as u64);
    assert!(sink.0.into_inner().unwrap() == weights);

    // A writer's failure is returned; damage before it wins, as in file order.
    #[derive(Debug, PartialEq)]
    enum Failure {
        Decode(ContainerError),
        Disk(u64),
    }
    impl From<ContainerError> for Failure {
        fn from(e: ContainerError) -> Failure {
            Failure::Decode(e)
        }
    }
    let refuse_past = |limit: u64| {
        move |run: parallel::Restored<'_>| {
            if run.at >= limit {
                Err(Failure::Disk(run.at))
            } else {
                Ok(())
            }
        }
    };
    let big = c.find("big").unwrap().1;
    let limit = big.original_offset + 500_000;
    let result = parallel::decode_container_with(&c, 2, 1 << 16, refuse_past(limit));
    assert!(matches!(result, Err(Failure::Disk(at)) if at >= limit && at < limit + (1 << 16)));
    let mut bad = file.clone();
    bad[big.offset as usize + 1000] ^= 0x44;
    let bad_c = Container::parse(&bad).unwrap();
    let mut serial = vec![0u8; original.len()];
    let expected = restore_serial(&bad_c, &mut serial).unwrap_err();
    let result = parallel::decode_container_with(&bad_c, 2, 1 << 16, refuse_past(limit));
    assert_eq!(result, Err(Failure::Decode(expected)));
}

#[test]
fn random_damage_fails_as_in_the_serial_decoder() {
    let input = slice(Dtype::Fp16);
    let input = &input[..300_000];
    let options = EncodeOptions::new(Dtype::Fp16)
        .frame_len(1024)
        .unwrap()
        .coding(Coding::Auto);
    let stream = encode_to_vec(&options, input).unwrap();
    // A fixed LCG: the same damage on every run.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |bound: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % bound
    };
    let mut failed = 0;
    for _ in 0..300 {
        let mut bad = stream.clone();
        for _ in 0..1 + next(3) {
            let at = next(bad.len());
            bad[at] ^= 1 << next(8);
        }
        let cut = if next(4) == 0 {
            next(bad.len())
        } else {
            bad.len()
        };
        failed += same_decode(&bad[..cut], input.len(), 1 + next(4)).is_err() as usize;
    }
    assert!(failed > 150, "most damage is detected: {failed} of 300");
}

#[test]
fn entries_restore_into_memory_of_their_own() {
    let (file, original) = container();
    let c = Container::parse(&file).unwrap();
    let entries: Vec<_> = c.entries().collect();
    for threads in [1, 2, 4] {
        // Every entry, last first, each into a buffer of its own (one byte too many).
        let mut outs: Vec<Vec<u8>> = entries
            .iter()
            .rev()
            .map(|(_, e)| vec![0u8; e.original_len as usize + 1])
            .collect();
        let parts = entries
            .iter()
            .rev()
            .zip(outs.iter_mut())
            .map(|((number, entry), out)| (*number, entry.clone(), &mut out[..]))
            .collect();
        parallel::decode_entries_into(&c, parts, threads).unwrap();
        for ((_, entry), out) in entries.iter().rev().zip(&outs) {
            let (at, len) = (entry.original_offset as usize, entry.original_len as usize);
            assert!(out[..len] == original[at..at + len]);
        }
    }
    let (number, entry) = entries[1].clone();
    let mut small = vec![0u8; entry.original_len as usize - 1];
    assert_eq!(
        parallel::decode_entries_into(&c, vec![(number, entry.clone(), &mut small[..])], 2),
        Err(ContainerError::OutputTooSmall {
            needed: entry.original_len
        })
    );
}
