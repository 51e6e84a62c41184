//! The streaming core and its I/O adapters: every split of input and output into chunks (down to
//! single bytes, and empty calls in between) gives exactly the one-shot `encode`/`decode` bytes
//! and errors; truncated, corrupt and hostile streams end in an error, never a panic; capacity
//! limits are enforced with `FrameTooLarge`; the adapters round-trip.

mod common;
use common::Rng;
use enec::io::{DecodeReader, DecodeWriter, EncodeReader, EncodeWriter, IoError};
use enec::streaming::{capacity_for, Progress, DEFAULT_CAPACITY_FP32};
use enec::{
    decode, encode, max_encoded_size, Coding, Decoder, Dtype, EncodeOptions, Encoder, Error, Status,
};
use proptest::prelude::*;

/// Enough for every dtype with frames of up to 4,096 elements (the tests' range).
const CAP: usize = capacity_for(Dtype::Fp32, 4096);

/// Hostile frames may lay out more bytes than a stored frame; this covers all of them.
const HOSTILE_CAP: usize = 2 * CAP;

const CODINGS: [Coding; 3] = [Coding::Auto, Coding::Groups, Coding::Ranked];

/// `n` elements of `dtype`: weight-like values, random bits, a constant, values with dead low
/// bits, or special values (NaN, infinities, -0.0, subnormals).
fn make_data(dtype: Dtype, n: usize, kind: u8, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let scale = 0.001 + rng.unit() * 0.2;
    let mut out = Vec::with_capacity(n * dtype.element_bytes());
    let constant = rng.next();
    for _ in 0..n {
        let v = match kind {
            0 | 3 => {
                let g = (0..4).map(|_| rng.unit()).sum::<f32>() - 2.0;
                f32_bits(dtype, g * scale, kind == 3)
            }
            1 => rng.next(),
            2 => constant,
            _ => {
                let specials = [
                    f32::NAN.to_bits() as u64 | 0x1234,
                    f32::INFINITY.to_bits() as u64,
                    f32::NEG_INFINITY.to_bits() as u64,
                    (-0.0f32).to_bits() as u64,
                    1,
                    0x8000_0001,
                    rng.next(),
                ];
                let s = specials[(rng.next() % specials.len() as u64) as usize];
                if dtype == Dtype::Fp32 {
                    s
                } else {
                    s >> 16 | s
                }
            }
        };
        out.extend_from_slice(&v.to_le_bytes()[..dtype.element_bytes()]);
    }
    out
}

fn f32_bits(dtype: Dtype, v: f32, dead: bool) -> u64 {
    match dtype {
        Dtype::Bf16 => {
            u64::from(half::bf16::from_f32(v).to_bits() & if dead { 0xFFF0 } else { 0xFFFF })
        }
        Dtype::Fp16 => {
            u64::from(half::f16::from_f32(v).to_bits() & if dead { 0xFFF8 } else { 0xFFFF })
        }
        Dtype::Fp32 => {
            let b = if dead {
                half::bf16::from_f32(v).to_f32().to_bits()
            } else {
                v.to_bits()
            };
            u64::from(b)
        }
        Dtype::E4m3 | Dtype::E5m2 => {
            u64::from(common::fp8(dtype, f64::from(v) * 64.0) & if dead { 0xFE } else { 0xFF })
        }
    }
}

fn one_shot(options: &EncodeOptions, input: &[u8]) -> Vec<u8> {
    let mut stream = vec![0u8; max_encoded_size(options, input.len()).unwrap()];
    let len = encode(options, input, &mut stream).unwrap();
    stream.truncate(len);
    stream
}

/// Chunk sizes used in turn; `usize::MAX` means "everything there is".
fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        2 => Just(vec![1]),
        3 => prop::collection::vec(1usize..64, 1..6),
        3 => prop::collection::vec(1usize..20_000, 1..4),
        1 => prop::collection::vec(prop_oneof![Just(1usize), Just(usize::MAX)], 1..4),
        1 => Just(vec![usize::MAX]),
    ]
}

/// Runs a codec over `input` with the given chunk sizes; checks the `Progress` contract on every
/// call. Returns the output, or the error of the call (or of `finish`) that failed.
fn drive(
    mut step: impl FnMut(&[u8], &mut [u8]) -> Result<Progress, Error>,
    finish: impl Fn() -> Result<(), Error>,
    input: &[u8],
    ins: &[usize],
    outs: &[usize],
    empty_calls: bool,
    out_hint: usize,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut obuf = vec![0u8; outs.iter().copied().max().unwrap().min(out_hint + 64)];
    let (mut pos, mut k) = (0, 0);
    loop {
        if empty_calls {
            let p = step(&[], &mut [])?;
            assert_eq!((p.consumed, p.written), (0, 0));
        }
        let in_len = ins[k % ins.len()].min(input.len() - pos);
        let out_len = outs[k % outs.len()].min(obuf.len());
        k += 1;
        let p = step(&input[pos..pos + in_len], &mut obuf[..out_len])?;
        assert!(p.consumed <= in_len && p.written <= out_len, "{p:?}");
        match p.status {
            Status::NeedsInput => assert_eq!(p.consumed, in_len, "NeedsInput left input"),
            Status::HasOutput => assert_eq!(p.written, out_len, "HasOutput with room left"),
            Status::Done => {}
        }
        if p.status != Status::Done && in_len > 0 && out_len > 0 {
            assert!(p.consumed + p.written > 0, "no progress: {p:?}");
        }
        pos += p.consumed;
        out.extend_from_slice(&obuf[..p.written]);
        match p.status {
            Status::Done => {
                finish()?;
                return Ok(out);
            }
            Status::NeedsInput if pos == input.len() => {
                finish()?;
                panic!("finish is Ok but the codec was not done");
            }
            _ => {}
        }
    }
}

fn stream_decode<const N: usize>(
    stream: &[u8],
    ins: &[usize],
    outs: &[usize],
    empty_calls: bool,
    out_hint: usize,
) -> Result<Vec<u8>, Error> {
    let mut dec = Box::new(Decoder::<N>::new());
    let dec = std::cell::RefCell::new(&mut *dec);
    drive(
        |i, o| dec.borrow_mut().decode(i, o),
        || dec.borrow().finish(),
        stream,
        ins,
        outs,
        empty_calls,
        out_hint,
    )
}

fn stream_encode<const N: usize>(
    options: EncodeOptions,
    input: &[u8],
    ins: &[usize],
    outs: &[usize],
    empty_calls: bool,
) -> Result<Vec<u8>, Error> {
    let count = (input.len() / options.dtype.element_bytes()) as u64;
    let mut enc = Box::new(Encoder::<N>::new(options, count)?);
    let enc = std::cell::RefCell::new(&mut *enc);
    let hint = max_encoded_size(&options, input.len())?;
    drive(
        |i, o| enc.borrow_mut().encode(i, o),
        || enc.borrow().finish(),
        input,
        ins,
        outs,
        empty_calls,
        hint,
    )
}

fn options() -> impl Strategy<Value = EncodeOptions> {
    (0..3usize, 0..3usize, 10u8..=12, any::<bool>()).prop_map(|(d, c, log2, checksums)| {
        EncodeOptions {
            dtype: Dtype::ALL[d],
            frame_log2: log2,
            coding: CODINGS[c],
            checksums,
        }
    })
}

fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        2 => 1usize..40,
        4 => 40usize..5000,
        2 => prop_oneof![Just(1024usize), Just(2048), Just(4096), Just(4097), Just(1023)],
        1 => 5000usize..10_000,
    ]
}

fn case() -> impl Strategy<Value = (EncodeOptions, Vec<u8>)> {
    (options(), sizes(), 0u8..5, any::<u64>())
        .prop_map(|(o, n, kind, seed)| (o, make_data(o.dtype, n, kind, seed)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decoder_matches_one_shot(
        (options, input) in case(),
        ins in chunks(),
        outs in chunks(),
        empty_calls in any::<bool>(),
    ) {
        let stream = one_shot(&options, &input);
        let out = stream_decode::<CAP>(&stream, &ins, &outs, empty_calls, input.len()).unwrap();
        prop_assert_eq!(out, input);
    }

    #[test]
    fn encoder_matches_one_shot(
        (options, input) in case(),
        ins in chunks(),
        outs in chunks(),
        empty_calls in any::<bool>(),
    ) {
        let stream = one_shot(&options, &input);
        let out = stream_encode::<CAP>(options, &input, &ins, &outs, empty_calls).unwrap();
        prop_assert_eq!(out, stream);
    }

    #[test]
    fn truncated_streams_fail_like_one_shot(
        (options, input) in case(),
        cut in any::<prop::sample::Index>(),
        ins in chunks(),
        outs in chunks(),
    ) {
        let stream = one_shot(&options, &input);
        let cut = cut.index(stream.len());
        let prefix = &stream[..cut];
        let mut out = vec![0u8; input.len()];
        let want = decode(prefix, &mut out).unwrap_err();
        let got = stream_decode::<CAP>(prefix, &ins, &outs, false, input.len()).unwrap_err();
        prop_assert_eq!(got, want);
        prop_assert!(matches!(got, Error::Truncated { .. }), "{:?}", got);
    }

    #[test]
    fn corrupt_streams_fail_like_one_shot(
        (options, input) in case(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        ins in chunks(),
        outs in chunks(),
    ) {
        let mut stream = one_shot(&options, &input);
        for (at, x) in flips {
            let i = at.index(stream.len());
            stream[i] ^= x;
        }
        let mut out = vec![0u8; input.len()];
        let want = decode(&stream, &mut out);
        let got = stream_decode::<HOSTILE_CAP>(&stream, &ins, &outs, false, input.len());
        match want {
            Ok(n) => prop_assert_eq!(got.unwrap(), &out[..n]),
            // The streaming decoder stops at the end of the stream and leaves the rest.
            Err(Error::TrailingData { .. }) => prop_assert!(got.is_ok()),
            Err(e) => prop_assert_eq!(got.unwrap_err(), e),
        }
    }

    #[test]
    fn hostile_frames_fail_like_one_shot(
        options in options(),
        n in 1usize..9000,
        body in prop::collection::vec(any::<u8>(), 0..3000),
        header in prop::array::uniform16(any::<u8>()),
        coding in 0u8..4,
        ins in chunks(),
        outs in chunks(),
    ) {
        // A valid stream header, then a frame header with a plausible size, then garbage.
        let info = enec::StreamInfo::new(options.dtype, options.frame_log2, options.checksums, n as u64).unwrap();
        let mut stream = info.to_bytes().to_vec();
        let mut fh = [0u8; 32];
        fh[0..4].copy_from_slice(&((32 + body.len().div_ceil(32) * 32) as u32).to_le_bytes());
        fh[8..12].copy_from_slice(&(info.frame_elements(0) as u32).to_le_bytes());
        fh[12] = coding;
        fh[16..32].copy_from_slice(&header);
        stream.extend_from_slice(&fh);
        stream.extend_from_slice(&body);
        let mut out = vec![0u8; n * options.dtype.element_bytes()];
        let want = decode(&stream, &mut out);
        let got = stream_decode::<HOSTILE_CAP>(&stream, &ins, &outs, false, out.len());
        match want {
            Ok(n) => prop_assert_eq!(got.unwrap(), &out[..n]),
            Err(Error::TrailingData { .. }) => prop_assert!(got.is_ok()),
            Err(e) => prop_assert_eq!(got.unwrap_err(), e),
        }
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), ins in chunks()) {
        let _ = stream_decode::<CAP>(&bytes, &ins, &[7], false, 1000);
    }

    #[test]
    fn encoder_finished_early_reports_truncation(
        (options, input) in case(),
        cut in any::<prop::sample::Index>(),
        ins in chunks(),
    ) {
        prop_assume!(!input.is_empty());
        let eb = options.dtype.element_bytes();
        let cut = cut.index(input.len());
        let count = (input.len() / eb) as u64;
        let mut enc = Box::new(Encoder::<CAP>::new(options, count).unwrap());
        let mut out = vec![0u8; 100_000];
        let mut pos = 0;
        let mut k = 0;
        while pos < cut {
            let len = ins[k % ins.len()].min(cut - pos);
            k += 1;
            let p = enc.encode(&input[pos..pos + len], &mut out).unwrap();
            prop_assert_eq!(p.consumed, len);
            pos += len;
        }
        prop_assert_eq!(
            enc.finish(),
            Err(Error::Truncated { needed: input.len() as u64, available: cut as u64 })
        );
    }
}

#[test]
fn one_call_suffices_for_whole_slices() {
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let input = make_data(Dtype::Bf16, 10_000, 0, 7);
    let stream = one_shot(&options, &input);

    let mut dec = Box::new(Decoder::<CAP>::new());
    let mut out = vec![0u8; input.len()];
    let p = dec.decode(&stream, &mut out).unwrap();
    assert_eq!(
        p,
        Progress {
            consumed: stream.len(),
            written: input.len(),
            status: Status::Done
        }
    );
    assert_eq!(out, input);
    assert!(dec.is_done());
    assert_eq!(dec.frames_decoded(), 10);

    let mut enc = Box::new(Encoder::<CAP>::new(options, 10_000).unwrap());
    let mut buf = vec![0u8; max_encoded_size(&options, input.len()).unwrap()];
    let p = enc.encode(&input, &mut buf).unwrap();
    assert_eq!(p.status, Status::Done);
    assert_eq!(p.consumed, input.len());
    assert_eq!(&buf[..p.written], &stream[..]);
    enc.finish().unwrap();
}

#[test]
fn decoder_leaves_trailing_bytes() {
    let options = EncodeOptions::new(Dtype::Fp16).frame_len(1024).unwrap();
    let input = make_data(Dtype::Fp16, 3000, 0, 1);
    let mut stream = one_shot(&options, &input);
    let len = stream.len();
    stream.extend_from_slice(b"next thing in the file");
    for chunk in [1usize, 100, usize::MAX] {
        let mut dec = Box::new(Decoder::<CAP>::new());
        let mut out = vec![0u8; input.len()];
        let (mut pos, mut written) = (0usize, 0usize);
        loop {
            let end = pos.saturating_add(chunk).min(stream.len());
            let p = dec.decode(&stream[pos..end], &mut out[written..]).unwrap();
            pos += p.consumed;
            written += p.written;
            if p.status == Status::Done {
                break;
            }
        }
        assert_eq!(pos, len);
        assert_eq!(out, input);
        // Once done, nothing more is taken.
        let p = dec.decode(&stream[pos..], &mut []).unwrap();
        assert_eq!((p.consumed, p.status), (0, Status::Done));
    }
}

#[test]
fn empty_stream() {
    let options = EncodeOptions::new(Dtype::Fp32);
    let stream = one_shot(&options, &[]);
    assert_eq!(stream.len(), 32);
    for chunk in [1usize, 5, 32] {
        let out = stream_decode::<64>(&stream, &[chunk], &[chunk], true, 0).unwrap();
        assert!(out.is_empty());
        let out = stream_encode::<64>(options, &[], &[chunk], &[chunk], true).unwrap();
        assert_eq!(out, stream);
    }
}

#[test]
fn frames_larger_than_capacity_are_refused() {
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(4096).unwrap();
    let input = make_data(Dtype::Bf16, 10_000, 0, 3);
    let stream = one_shot(&options, &input);
    const SMALL: usize = capacity_for(Dtype::Bf16, 1024);

    let mut dec = Decoder::<SMALL>::new();
    let mut out = vec![0u8; input.len()];
    let err = dec.decode(&stream, &mut out).unwrap_err();
    let Error::FrameTooLarge {
        frame,
        bytes,
        capacity,
    } = err
    else {
        panic!("{err:?}")
    };
    let first = u32::from_le_bytes(stream[32..36].try_into().unwrap()) as u64;
    assert_eq!((frame, bytes, capacity), (0, first + 8192, SMALL as u64));
    let text = err.to_string();
    assert!(
        text.contains(&bytes.to_string()) && text.contains(&SMALL.to_string()),
        "{text}"
    );
    // The error is sticky, and the same whatever the chunking.
    assert_eq!(dec.decode(&[], &mut []), Err(err));
    assert_eq!(dec.finish(), Err(err));
    assert_eq!(
        stream_decode::<SMALL>(&stream, &[1], &[1], false, input.len()),
        Err(err)
    );

    // A stream whose frames fit decodes with the same decoder.
    let small = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let fits = one_shot(&small, &input);
    assert_eq!(
        stream_decode::<SMALL>(&fits, &[1], &[1], false, input.len()).unwrap(),
        input
    );

    // The encoder refuses at construction.
    let err = Encoder::<SMALL>::new(options, 10_000).unwrap_err();
    assert_eq!(
        err,
        Error::FrameTooLarge {
            frame: 0,
            bytes: capacity_for(Dtype::Bf16, 4096) as u64,
            capacity: SMALL as u64
        }
    );
    // ... unless the stream is small enough for one frame that fits.
    assert!(Encoder::<SMALL>::new(options, 1024).is_ok());
    assert!(Encoder::<SMALL>::new(options, 1025).is_err());
}

#[test]
fn exact_capacity_suffices_for_incompressible_frames() {
    const B16: usize = capacity_for(Dtype::Bf16, 1024);
    const F32: usize = capacity_for(Dtype::Fp32, 1024);
    for dtype in Dtype::ALL {
        let options = EncodeOptions::new(dtype).frame_len(1024).unwrap();
        let input = make_data(dtype, 3000, 1, 9); // random bits: stored frames
        let stream = one_shot(&options, &input);
        assert_eq!(
            stream.len(),
            max_encoded_size(&options, input.len()).unwrap()
        );
        let (decoded, encoded) = if dtype == Dtype::Fp32 {
            (
                stream_decode::<F32>(&stream, &[1], &[1], false, input.len()),
                stream_encode::<F32>(options, &input, &[1], &[1], false),
            )
        } else {
            (
                stream_decode::<B16>(&stream, &[1], &[1], false, input.len()),
                stream_encode::<B16>(options, &input, &[1], &[1], false),
            )
        };
        assert_eq!(decoded.unwrap(), input);
        assert_eq!(encoded.unwrap(), stream);
    }
    if B16 + 1 < F32 {
        let options = EncodeOptions::new(Dtype::Fp32).frame_len(1024).unwrap();
        assert!(matches!(
            Encoder::<B16>::new(options, 1024),
            Err(Error::FrameTooLarge { .. })
        ));
    }
}

#[test]
fn encoder_refuses_more_input_than_announced() {
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let input = make_data(Dtype::Bf16, 1500, 0, 5);
    let mut enc = Box::new(Encoder::<CAP>::new(options, 1500).unwrap());
    let mut out = vec![0u8; 10_000];
    let mut too_much = input.clone();
    too_much.extend_from_slice(&[1, 2, 3, 4]);
    assert_eq!(
        enc.encode(&too_much, &mut out),
        Err(Error::TrailingData { extra: 4 })
    );
    // Nothing was taken; the encoder is still usable.
    let p = enc.encode(&input[..1000], &mut out).unwrap();
    let mut written = p.written;
    assert_eq!(
        enc.encode(&too_much[1000..1000 + 2001], &mut out[written..]),
        Err(Error::TrailingData { extra: 1 })
    );
    let p = enc.encode(&input[1000..], &mut out[written..]).unwrap();
    written += p.written;
    assert_eq!(p.status, Status::Done);
    enc.finish().unwrap();
    assert_eq!(&out[..written], &one_shot(&options, &input)[..]);
    assert_eq!(
        enc.encode(&[0, 0], &mut out),
        Err(Error::TrailingData { extra: 2 })
    );
    assert_eq!(enc.remaining_input(), 0);
    assert_eq!(enc.encode(&[], &mut out).unwrap().status, Status::Done);
}

#[test]
fn finish_reports_undrained_output() {
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let input = make_data(Dtype::Bf16, 100, 0, 5);
    let stream = one_shot(&options, &input);
    let mut dec = Box::new(Decoder::<CAP>::new());
    let p = dec.decode(&stream, &mut [0u8; 50]).unwrap();
    assert_eq!(p.status, Status::HasOutput);
    assert_eq!(p.consumed, stream.len());
    assert_eq!(dec.finish(), Err(Error::OutputTooSmall { needed: 150 }));
    // The rest can be read in place.
    assert_eq!(dec.pending_output(), &input[50..]);
    dec.consume_output(1000);
    assert!(dec.is_done());
    dec.finish().unwrap();
    assert_eq!(dec.bytes_out(), 200);
}

/// The zero-copy fill path: a "DMA engine" writes straight into the codec's buffer.
#[test]
fn input_buffer_and_commit() {
    for dtype in Dtype::ALL {
        let options = EncodeOptions::new(dtype).frame_len(1024).unwrap();
        let input = make_data(dtype, 2500, 0, 11);
        let stream = one_shot(&options, &input);

        let mut dec = Box::new(Decoder::<CAP>::new());
        let (mut src, mut out) = (&stream[..], Vec::new());
        while !dec.is_done() {
            let want = dec.needed_input();
            let space = dec.input_buffer();
            assert_eq!(space.len(), want);
            let n = space.len().min(src.len()).min(100);
            space[..n].copy_from_slice(&src[..n]);
            dec.commit_input(n);
            src = &src[n..];
            let mut chunk = [0u8; 333];
            loop {
                let p = dec.decode(&[], &mut chunk).unwrap();
                out.extend_from_slice(&chunk[..p.written]);
                if p.status != Status::HasOutput {
                    break;
                }
            }
        }
        assert!(src.is_empty());
        assert_eq!(out, input);

        let mut enc = Box::new(Encoder::<CAP>::new(options, 2500).unwrap());
        let (mut src, mut out) = (&input[..], Vec::new());
        while !enc.is_done() {
            let space = enc.input_buffer();
            let n = space.len().min(src.len()).min(1000);
            space[..n].copy_from_slice(&src[..n]);
            enc.commit_input(n);
            src = &src[n..];
            enc.encode(&[], &mut []).unwrap();
            out.extend_from_slice(enc.pending_output());
            let n = enc.pending_output().len();
            enc.consume_output(n);
        }
        enc.finish().unwrap();
        assert_eq!(out, stream);
    }
}

#[test]
fn reset_reuses_in_place() {
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let a = make_data(Dtype::Bf16, 2000, 0, 1);
    let b = make_data(Dtype::Bf16, 700, 0, 2);
    let mut enc = Box::new(Encoder::<CAP>::new(options, 2000).unwrap());
    let mut dec = Box::new(Decoder::<CAP>::new());
    for data in [&a, &b] {
        let count = (data.len() / 2) as u64;
        enc.reset(options, count).unwrap();
        let mut stream = vec![0u8; 8000];
        let p = enc.encode(data, &mut stream).unwrap();
        assert_eq!(p.status, Status::Done);
        assert_eq!(&stream[..p.written], &one_shot(&options, data)[..]);
        dec.reset();
        let mut out = vec![0u8; data.len()];
        let q = dec.decode(&stream[..p.written], &mut out).unwrap();
        assert_eq!(q.status, Status::Done);
        assert_eq!(&out, data);
    }
    // Once done, more bytes are not taken.
    assert_eq!(dec.decode(b"more", &mut []).unwrap().consumed, 0);
    // Decode a corrupt stream, then reset clears the error.
    dec.reset();
    assert!(dec
        .decode(b"not a stream at all, longer than 32 bytes", &mut [])
        .is_err());
    assert!(dec.decode(&[], &mut []).is_err());
    dec.reset();
    assert_eq!(dec.decode(&[], &mut []).unwrap().status, Status::NeedsInput);
}

#[test]
fn default_capacities() {
    assert_eq!(enec::streaming::DEFAULT_CAPACITY_BF16, 65_568);
    assert_eq!(enec::streaming::DEFAULT_CAPACITY_FP16, 65_568);
    assert_eq!(DEFAULT_CAPACITY_FP32, 131_104);
    assert_eq!(capacity_for(Dtype::Bf16, 1024), 4128);
    assert_eq!(capacity_for(Dtype::Fp32, 1024), 8224);
    assert_eq!(Decoder::<4128>::CAPACITY, 4128);
    assert!(core::mem::size_of::<Decoder<4128>>() < 4128 + 160);
    assert!(core::mem::size_of::<Encoder<4128>>() < 4128 + 160);
    // Every dtype at the default frame length.
    for dtype in Dtype::ALL {
        let options = EncodeOptions::new(dtype);
        let input = make_data(dtype, 40_000, 1, 4);
        let stream = one_shot(&options, &input);
        let out =
            stream_decode::<DEFAULT_CAPACITY_FP32>(&stream, &[4096], &[4096], false, input.len());
        assert_eq!(out.unwrap(), input);
    }
}

// ---------------------------------------------------------------------------------------------
// Adapters
// ---------------------------------------------------------------------------------------------

/// An embedded-io reader that returns at most `max` bytes per call.
struct Trickle<'a> {
    data: &'a [u8],
    max: usize,
}

impl embedded_io::ErrorType for Trickle<'_> {
    type Error = core::convert::Infallible;
}

impl embedded_io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = buf.len().min(self.data.len()).min(self.max);
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// An embedded-io writer into a Vec that takes at most `max` bytes per call.
struct Sink {
    data: Vec<u8>,
    max: usize,
}

impl embedded_io::ErrorType for Sink {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        let n = buf.len().min(self.max);
        self.data.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

fn read_all<R: embedded_io::Read>(r: &mut R, chunk: usize) -> Result<Vec<u8>, R::Error> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        match r.read(&mut buf)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

fn write_chunked<W: embedded_io::Write>(
    w: &mut W,
    data: &[u8],
    chunk: usize,
) -> Result<(), W::Error> {
    for c in data.chunks(chunk.max(1)) {
        w.write_all(c)?;
    }
    w.flush()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn embedded_io_adapters_round_trip(
        (options, input) in case(),
        max in prop_oneof![Just(1usize), 1usize..100, Just(usize::MAX)],
        chunk in prop_oneof![Just(1usize), 1usize..10_000],
    ) {
        let stream = one_shot(&options, &input);
        let count = (input.len() / options.dtype.element_bytes()) as u64;

        // Decoding reader (Read), with trailing bytes left in the source.
        let mut with_tail = stream.clone();
        with_tail.extend_from_slice(b"tail");
        let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), Trickle { data: &with_tail, max });
        prop_assert_eq!(read_all(&mut reader, chunk).unwrap(), input.clone());
        reader.finish().unwrap();
        prop_assert_eq!(reader.get_ref().data, b"tail");

        // Decoding reader (BufRead).
        let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), Trickle { data: &stream, max });
        let mut out = Vec::new();
        loop {
            let buf = embedded_io::BufRead::fill_buf(&mut reader).unwrap();
            if buf.is_empty() {
                break;
            }
            let n = buf.len().min(chunk);
            out.extend_from_slice(&buf[..n]);
            embedded_io::BufRead::consume(&mut reader, n);
        }
        prop_assert_eq!(&out, &input);

        // Encoding reader.
        let mut reader = EncodeReader::<_, CAP>::new(
            Encoder::new(options, count).unwrap(),
            Trickle { data: &input, max },
        );
        prop_assert_eq!(read_all(&mut reader, chunk).unwrap(), stream.clone());
        reader.finish().unwrap();

        // Encoding writer.
        let mut writer = EncodeWriter::<_, CAP>::new(
            Encoder::new(options, count).unwrap(),
            Sink { data: Vec::new(), max },
        );
        write_chunked(&mut writer, &input, chunk).unwrap();
        writer.finish().unwrap();
        prop_assert_eq!(&writer.get_ref().data, &stream);

        // Decoding writer.
        let mut writer = DecodeWriter::<_, CAP>::new(Decoder::new(), Sink { data: Vec::new(), max });
        write_chunked(&mut writer, &stream, chunk).unwrap();
        writer.finish().unwrap();
        prop_assert_eq!(&writer.get_ref().data, &input);
    }
}

#[test]
fn embedded_io_errors_carry_the_enec_error() {
    use embedded_io::{Error as _, ErrorKind, Write as _};
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(1024).unwrap();
    let input = make_data(Dtype::Bf16, 3000, 0, 8);
    let stream = one_shot(&options, &input);

    // Truncated stream: the read that meets the end says so.
    let cut = &stream[..stream.len() - 10];
    let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), Trickle { data: cut, max: 64 });
    let err = read_all(&mut reader, 1000).unwrap_err();
    let want = Error::Truncated {
        needed: stream.len() as u64,
        available: cut.len() as u64,
    };
    assert_eq!(err, IoError::Codec(want));
    assert_eq!(err.to_string(), want.to_string());
    assert_eq!(err.kind(), ErrorKind::InvalidData);

    // Corrupt stream.
    let mut bad = stream.clone();
    let at = 150; // inside frame 0's residual plane
    bad[at] ^= 0x10;
    let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), &bad[..]);
    let mut out = vec![0u8; input.len()];
    let err = embedded_io::Read::read_exact(&mut reader, &mut out).unwrap_err();
    assert!(matches!(
        err,
        embedded_io::ReadExactError::Other(IoError::Codec(
            Error::ChecksumMismatch { .. } | Error::CorruptFrame { .. }
        ))
    ));

    // Too much data for an encoder, and bytes after the end for a decoding writer.
    let mut writer = EncodeWriter::<_, CAP>::new(
        Encoder::new(options, 10).unwrap(),
        Sink {
            data: Vec::new(),
            max: 100,
        },
    );
    let err = writer.write_all(&input[..22]).unwrap_err();
    assert_eq!(err, IoError::Codec(Error::TrailingData { extra: 2 }));
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        writer.finish(),
        Err(Error::Truncated {
            needed: 20,
            available: 0
        })
    );
    let mut writer = DecodeWriter::<_, CAP>::new(
        Decoder::new(),
        Sink {
            data: Vec::new(),
            max: 100,
        },
    );
    writer.write_all(&stream).unwrap();
    assert_eq!(
        writer.write(b"xyz"),
        Err(IoError::Codec(Error::TrailingData { extra: 3 }))
    );
    writer.finish().unwrap();

    // A full inner writer.
    let mut small = [0u8; 40];
    let mut writer =
        EncodeWriter::<_, CAP>::new(Encoder::new(options, 3000).unwrap(), &mut small[..]);
    let err = write_chunked(&mut writer, &input, 100).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WriteZero);
    assert!(matches!(err, IoError::Io(_)));
    assert!(writer.finish().is_err());

    // A borrowed codec works too.
    let mut dec = Box::new(Decoder::<CAP>::new());
    let mut reader = enec::io::Reader::new(&mut *dec, &stream[..]);
    assert_eq!(read_all(&mut reader, 4096).unwrap(), input);
    assert!(dec.is_done());
}

#[cfg(feature = "std")]
#[test]
fn std_io_adapters() {
    use std::io::{BufRead, Read, Write};
    let options = EncodeOptions::new(Dtype::Fp32).frame_len(1024).unwrap();
    let input = make_data(Dtype::Fp32, 5000, 3, 8);
    let stream = one_shot(&options, &input);

    let mut writer = EncodeWriter::<_, CAP>::new(Encoder::new(options, 5000).unwrap(), Vec::new());
    for c in input.chunks(777) {
        writer.write_all(c).unwrap();
    }
    writer.flush().unwrap();
    writer.finish().unwrap();
    assert_eq!(writer.get_ref(), &stream);

    let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), std::io::Cursor::new(&stream));
    let mut out = Vec::new();
    reader.read_to_end(&mut out).unwrap();
    assert_eq!(out, input);

    let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), &stream[..]);
    let mut out = Vec::new();
    std::io::copy(&mut reader, &mut out).unwrap();
    assert_eq!(out, input);
    let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), &stream[..]);
    assert_eq!(reader.fill_buf().unwrap().len(), 4096);

    let mut reader = EncodeReader::<_, CAP>::new(Encoder::new(options, 5000).unwrap(), &input[..]);
    let mut out = Vec::new();
    reader.read_to_end(&mut out).unwrap();
    assert_eq!(out, stream);

    let mut writer = DecodeWriter::<_, CAP>::new(Decoder::new(), Vec::new());
    std::io::copy(&mut &stream[..], &mut writer).unwrap();
    writer.finish().unwrap();
    assert_eq!(writer.get_ref(), &input);

    // Errors: the kind fits, the text is enec's, and the enec error comes back out.
    let mut reader = DecodeReader::<_, CAP>::new(Decoder::new(), &stream[..100]);
    let err = reader.read_to_end(&mut Vec::new()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    let inner = err.get_ref().unwrap().downcast_ref::<Error>().unwrap();
    assert!(matches!(inner, Error::Truncated { .. }));
    assert_eq!(err.to_string(), inner.to_string());
    let mut reader = DecodeReader::<_, CAP>::new(
        Decoder::new(),
        &b"PNG not an enec stream, 32 bytes or more"[..],
    );
    let err = reader.read_to_end(&mut Vec::new()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert_eq!(err.to_string(), Error::BadMagic.to_string());
}
