//! The SIMD compilation of the kernels (chosen at run time with the `std` feature: AVX2 on
//! x86_64, NEON on aarch64) and the baseline compilation write identical bytes and decode
//! identically.

mod common;

use enec::internals::frame::{decode_frame, encode_frame, max_frame_bytes};
use enec::internals::frame::{decode_frame_portable, encode_frame_portable};
use enec::{Coding, Dtype};

const SLICE: &[u8] = include_bytes!("data/minilm-slice.f32.bin");

fn inputs(dtype: Dtype) -> Vec<Vec<u8>> {
    let w: Vec<f32> = SLICE[..4 * 70_000]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let real: Vec<u8> = match dtype {
        Dtype::Bf16 => w
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::Fp16 => w
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::Fp32 => SLICE[..4 * 70_000].to_vec(),
        Dtype::E4m3 | Dtype::E5m2 => w
            .iter()
            .map(|&x| common::fp8(dtype, f64::from(x) * 64.0))
            .collect(),
    };
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let random: Vec<u8> = (0..40_000)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect();
    let eb = dtype.element_bytes();
    let frame = 16_384 * eb;
    vec![
        real[..frame].to_vec(),
        real[frame..frame + 3_001 * eb].to_vec(),
        real[..65_536 * eb].to_vec(),
        random[..random.len() / eb * eb].to_vec(),
        vec![0u8; 1_024 * eb],
    ]
}

#[test]
fn both_compilations_agree() {
    println!("kernels in use: {}", enec::kernels_in_use());
    // On aarch64 the NEON kernels are always there: unless asked for the portable ones, this
    // test compares them, not the portable compilation with itself.
    if cfg!(target_arch = "aarch64") && std::env::var_os("ENEC_PORTABLE").is_none_or(|v| v != "1") {
        assert_eq!(enec::kernels_in_use(), "NEON");
    }
    for dtype in Dtype::ALL {
        for input in inputs(dtype) {
            let elements = input.len() / dtype.element_bytes();
            for coding in [Coding::Auto, Coding::Groups, Coding::Ranked] {
                let mut a = vec![0u8; max_frame_bytes(dtype, elements)];
                let mut b = vec![0u8; max_frame_bytes(dtype, elements)];
                let na = encode_frame(dtype, coding, true, &input, &mut a).unwrap();
                let nb = encode_frame_portable(dtype, coding, true, &input, &mut b).unwrap();
                assert!(
                    a[..na] == b[..nb],
                    "{dtype:?} {coding:?} {elements}: encoders differ"
                );
                let mut da = vec![1u8; input.len()];
                let mut db = vec![2u8; input.len()];
                decode_frame(dtype, true, 0, elements, &a[..na], &mut da).unwrap();
                decode_frame_portable(dtype, true, 0, elements, &a[..na], &mut db).unwrap();
                assert!(
                    da == input && db == input,
                    "{dtype:?} {coding:?} {elements}: decoders differ"
                );
            }
        }
    }
}
