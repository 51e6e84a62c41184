//! The typed helpers (`encode_bf16`, `encode_f16`, `encode_f32` and their `decode_*`), and the
//! `Vec` helpers (`encode_to_vec`, `decode_to_vec`, on streams announcing up to 4 MiB): the same
//! bytes as `enec::encode` with the dtype set, and, on any stream (the fuzz bytes themselves,
//! or a stream the helpers wrote), the output and the error of `enec::decode`, or
//! `DtypeMismatch` for a stream of another dtype. Never a panic.
//!
//! Input: `[dtype, frame_log2 - 10, coding | 0x80 (checksums off), as_stream, data...]`;
//! `as_stream` odd: the data bytes are tried as a stream by all three decoders.
#![no_main]

use half::{bf16, f16};

use enec::{decode, encode, max_encoded_size, read_header, Dtype, EncodeOptions, Error};
use enec_fuzz::{fix_header_check, options_of, Bytes};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: u64 = 1 << 22;

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    let options = options_of(&mut cfg);
    let as_stream = cfg.u8() & 1 == 1;
    let raw = cfg.rest();
    if as_stream {
        decode_all(raw);
        let mut fixed = raw.to_vec();
        if fix_header_check(&mut fixed) {
            decode_all(&fixed);
        }
        return;
    }
    let eb = options.dtype.element_bytes();
    let data = &raw[..raw.len() / eb * eb];
    let mut expected = vec![0u8; max_encoded_size(&options, data.len()).expect("bound")];
    let n = encode(&options, data, &mut expected).expect("encode");
    expected.truncate(n);
    let mut out = vec![0u8; expected.len() + 8];
    let r = match options.dtype {
        Dtype::Bf16 => {
            let v: Vec<bf16> = data.chunks(2).map(|c| bf16::from_le_bytes([c[0], c[1]])).collect();
            // The helpers take the dtype from the function, whatever `options` says.
            let o = EncodeOptions { dtype: Dtype::Fp32, ..options };
            enec::encode_bf16(o, &v, &mut out)
        }
        Dtype::Fp16 => {
            let v: Vec<f16> = data.chunks(2).map(|c| f16::from_le_bytes([c[0], c[1]])).collect();
            enec::encode_f16(options, &v, &mut out)
        }
        Dtype::Fp32 => {
            let v: Vec<f32> = data.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
            let o = EncodeOptions { dtype: Dtype::Bf16, ..options };
            enec::encode_f32(o, &v, &mut out)
        }
        // No typed encoder: FP8 has no Rust element type.
        Dtype::E4m3 | Dtype::E5m2 => {
            decode_all(&expected);
            return;
        }
    };
    assert_eq!(r, Ok(n), "typed encoder and encode() disagree");
    assert_eq!(enec::encode_to_vec(&options, data).as_deref(), Ok(&expected[..]), "encode_to_vec differs");
    assert!(out[..n] == expected[..], "typed encoder wrote other bytes");
    decode_all(&expected);
});

/// Each typed decoder on `stream`: `decode`'s result (in elements) and bytes, or the header's
/// error, or `DtypeMismatch`.
fn decode_all(stream: &[u8]) {
    let header = read_header(stream);
    let total = header.map_or(64, |i| i.decoded_bytes().min(MAX_OUT)) as usize;
    let mut bytes = vec![0u8; total];
    let expected = decode(stream, &mut bytes);
    // `decode_to_vec` allocates what the header says: only where that is small.
    if header.is_err() || header.is_ok_and(|i| i.decoded_bytes() <= MAX_OUT) {
        match enec::decode_to_vec(stream) {
            Ok(v) => assert!(expected == Ok(v.len()) && v == bytes[..v.len()], "decode_to_vec differs"),
            Err(e) => assert_eq!(expected, Err(e), "decode_to_vec and decode disagree"),
        }
    }
    for dtype in [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32] {
        let want = match header {
            Err(e) => Err(e),
            Ok(i) if i.dtype != dtype => Err(Error::DtypeMismatch { stream: i.dtype, requested: dtype }),
            Ok(_) => expected.map(|n| n / dtype.element_bytes()),
        };
        let elements = total.div_ceil(dtype.element_bytes());
        let (r, got): (_, Vec<u8>) = match dtype {
            Dtype::Bf16 => {
                let mut v = vec![bf16::ZERO; elements];
                (enec::decode_bf16(stream, &mut v), v.iter().flat_map(|x| x.to_le_bytes()).collect())
            }
            Dtype::Fp16 => {
                let mut v = vec![f16::ZERO; elements];
                (enec::decode_f16(stream, &mut v), v.iter().flat_map(|x| x.to_le_bytes()).collect())
            }
            Dtype::Fp32 => {
                let mut v = vec![0f32; elements];
                (enec::decode_f32(stream, &mut v), v.iter().flat_map(|x| x.to_le_bytes()).collect())
            }
            Dtype::E4m3 | Dtype::E5m2 => unreachable!("no typed API"),
        };
        assert_eq!(r, want, "decode_{dtype:?} and decode disagree");
        if let Ok(n) = r {
            let b = n * dtype.element_bytes();
            assert!(got[..b] == bytes[..b], "typed decoder gave other bytes");
        }
    }
}
