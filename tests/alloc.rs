//! The `alloc` conveniences: `encode_to_vec` and `decode_to_vec`.
#![cfg(feature = "alloc")]

use enec::{decode_to_vec, encode, encode_to_vec, max_encoded_size, Dtype, EncodeOptions, Error};

#[test]
fn vec_helpers_match_the_slice_api() {
    let input: Vec<u8> = (0..7_001u32)
        .flat_map(|i| half::bf16::from_f32((i as f32 * 0.37).sin() * 0.05).to_le_bytes())
        .collect();
    let options = EncodeOptions::new(Dtype::Bf16).frame_len(2048).unwrap();
    let stream = encode_to_vec(&options, &input).unwrap();
    let mut by_slice = vec![0u8; max_encoded_size(&options, input.len()).unwrap()];
    let len = encode(&options, &input, &mut by_slice).unwrap();
    assert_eq!(stream, by_slice[..len]);
    assert_eq!(decode_to_vec(&stream).unwrap(), input);
    assert_eq!(
        decode_to_vec(&stream[..stream.len() - 1]).map(|_| ()),
        Err(Error::Truncated {
            needed: stream.len() as u64,
            available: stream.len() as u64 - 1
        })
    );
}
