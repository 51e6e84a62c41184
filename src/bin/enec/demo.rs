//! `enec` or `enec demo`: the whole cycle on real weights embedded in the binary.
//!
//! The 934,656 fp32 weights of all-MiniLM-L6-v2 in `tests/data/` (Apache-2.0) become bf16, fp16
//! and fp32 safetensors checkpoints in memory (five float tensors, an int64 tensor and metadata);
//! each is compressed and decompressed by the same code as `enec compress` / `decompress` and
//! compared byte for byte. Then one checkpoint makes the round trip through real files in a
//! temporary directory (removed at the end), and a copy with one flipped byte shows the checksum
//! error. Nothing is written anywhere else.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use enec::{Coding, Dtype, EncodeOptions};
use half::{bf16, f16};

use enec::checkpoint::{
    self,
    safetensors::{self, NewTensor},
};

use crate::compress::{self, Settings};
use crate::decompress::{self, Kind};
use crate::error::{say, Context, Result};

/// 934,656 fp32 weights of all-MiniLM-L6-v2 (Apache-2.0); see tests/data/README.md.
const SLICE: &[u8] = include_bytes!("../../../tests/data/minilm-slice.f32.bin");

/// The tensors of the slice, in order (tests/data/minilm-slice.tsv).
const TENSORS: [(&str, &[u64]); 5] = [
    ("embeddings.word_embeddings.weight", &[512, 384]),
    ("encoder.layer.0.attention.output.LayerNorm.bias", &[384]),
    ("encoder.layer.0.attention.output.LayerNorm.weight", &[384]),
    ("encoder.layer.0.attention.self.query.weight", &[384, 384]),
    ("encoder.layer.0.intermediate.dense.weight", &[1536, 384]),
];

/// The demo checkpoint in `dtype`.
fn checkpoint(dtype: Dtype) -> Vec<u8> {
    let weights: Vec<f32> = SLICE
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let data: Vec<u8> = match dtype {
        Dtype::Bf16 => weights
            .iter()
            .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::Fp16 => weights
            .iter()
            .flat_map(|&x| f16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::Fp32 => SLICE.to_vec(),
        Dtype::E4m3 | Dtype::E5m2 => fp8_per_tensor(dtype, &weights),
    };
    let eb = dtype.element_bytes();
    let position_ids: Vec<u8> = (0..512i64).flat_map(i64::to_le_bytes).collect();
    let name = enec::container::safetensors_dtype_name(dtype);
    let mut tensors: Vec<NewTensor<'_>> = vec![(
        "embeddings.position_ids",
        "I64",
        vec![1, 512],
        &position_ids,
    )];
    let mut at = 0;
    for (tensor, shape) in TENSORS {
        let n: u64 = shape.iter().product();
        let end = at + n as usize * eb;
        tensors.push((tensor, name, shape.to_vec(), &data[at..end]));
        at = end;
    }
    let metadata = BTreeMap::from([
        ("format".to_owned(), "pt".to_owned()),
        (
            "source".to_owned(),
            "all-MiniLM-L6-v2 (Apache-2.0), 934,656 weights".to_owned(),
        ),
    ]);
    safetensors::write(&tensors, &metadata)
}

/// The weights quantized to FP8 with one scale per tensor (`amax / largest finite FP8`, as FP8
/// checkpoints store them), rounded to nearest, ties to even; the scales are left out.
fn fp8_per_tensor(dtype: Dtype, weights: &[f32]) -> Vec<u8> {
    let (mbits, bias, fmax) = match dtype {
        Dtype::E4m3 => (3, 7, 448f64),
        _ => (2, 15, 57344f64),
    };
    let mut out = Vec::with_capacity(weights.len());
    let mut at = 0;
    for (_, shape) in TENSORS {
        let n = shape.iter().product::<u64>() as usize;
        let tensor = &weights[at..at + n];
        at += n;
        let amax = tensor.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if amax > 0.0 { amax / fmax as f32 } else { 1.0 };
        out.extend(
            tensor
                .iter()
                .map(|&x| fp8(f64::from(x) / f64::from(scale), mbits, bias, fmax)),
        );
    }
    out
}

/// The FP8 byte nearest `x` (ties to even; `|x|` clamped to `fmax`), `mbits` mantissa bits and
/// exponent `bias`, subnormals included.
fn fp8(x: f64, mbits: i32, bias: i32, fmax: f64) -> u8 {
    let sign = u8::from(x.is_sign_negative()) << 7;
    let a = x.abs().min(fmax);
    let emin = 1 - bias;
    // floor(log2 a) from the bits of the (normal) f64.
    let e = if a == 0.0 {
        emin
    } else {
        ((a.to_bits() >> 52) as i32 - 1023).max(emin)
    };
    let steps = (a / 2f64.powi(e - mbits)).round_ties_even() as u32;
    // A carry into the next binade is that binade's first value.
    let (e, steps) = if steps >= 2 << mbits {
        (e + 1, steps / 2)
    } else {
        (e, steps)
    };
    let (field, mantissa) = if steps >= 1 << mbits {
        (e - emin + 1, steps - (1 << mbits))
    } else {
        (0, steps)
    };
    sign | (field as u8) << mbits | mantissa as u8
}

/// Best of three wall-clock times of `f`, and its last result.
fn timed<T>(mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..3 {
        let t = Instant::now();
        let r = f()?;
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(r);
    }
    Ok((best, last.ok_or("no run")?))
}

/// One in-memory cycle: the compressed size, the speeds, and whether the bytes came back.
fn cycle(file: &[u8], coding: Coding, threads: usize) -> Result<(usize, f64, f64, bool)> {
    let tensors = safetensors::parse(file).map_err(|e| e.to_string())?;
    let pieces = safetensors::plan(file.len() as u64, tensors);
    let options = EncodeOptions::new(Dtype::Bf16).coding(coding);
    let (encode_s, packed) = timed(|| {
        let mut packed = Vec::with_capacity(file.len());
        checkpoint::compress(file, &pieces, &options, threads, &mut packed, &|_| {})
            .map_err(|e| e.to_string())?;
        Ok(packed)
    })?;
    let kind = decompress::open("demo", &packed)?;
    let (decode_s, restored) = timed(|| {
        let mut restored = vec![0u8; file.len()];
        decompress::restore_into("demo", &packed, &kind, &mut restored, threads)?;
        Ok(restored)
    })?;
    let mb = file.len() as f64 / 1e6;
    Ok((packed.len(), mb / encode_s, mb / decode_s, restored == file))
}

/// Runs the demo with `threads` workers.
pub fn run(threads: usize) -> Result<()> {
    say!(
        "enec demo: {} real weights of all-MiniLM-L6-v2 (embedded), as safetensors checkpoints \
         with 5 float tensors, an int64 tensor and metadata; {threads} thread{}\n",
        SLICE.len() / 4,
        if threads == 1 { "" } else { "s" }
    );
    say!(
        "{:<6} {:<7} {:>10} {:>10} {:>7} {:>13} {:>15}  round trip",
        "dtype",
        "coding",
        "bytes",
        "enec",
        "ratio",
        "compress MB/s",
        "decompress MB/s"
    );
    let mut all_ok = true;
    for dtype in Dtype::ALL {
        let file = checkpoint(dtype);
        for coding in [Coding::Ranked, Coding::Groups] {
            let (packed, enc, dec, ok) = cycle(&file, coding, threads)?;
            all_ok &= ok;
            say!(
                "{:<6} {:<7} {:>10} {:>10} {:>7.4} {:>13.0} {:>15.0}  {}",
                dtype.name(),
                if coding == Coding::Ranked {
                    "ranked"
                } else {
                    "groups"
                },
                file.len(),
                packed,
                file.len() as f64 / packed as f64,
                enc,
                dec,
                if ok { "byte-identical" } else { "MISMATCH" }
            );
        }
    }
    say!();
    files(threads)?;
    if !all_ok {
        return Err("a round trip did not restore the original bytes".into());
    }
    say!("\nall round trips byte-identical");
    Ok(())
}

/// The same cycle through files, as `enec compress` / `decompress` run it, in a temporary
/// directory; then a corrupted copy.
fn files(threads: usize) -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("enec-demo-")
        .tempdir()
        .context(|| "cannot create a temporary directory")?;
    let path = |name: &str| dir.path().join(name);
    let original = checkpoint(Dtype::Bf16);
    std::fs::write(path("minilm.bf16.safetensors"), &original)
        .context(|| format!("writing {}", dir.path().display()))?;
    let settings = Settings {
        dtype: None,
        options: EncodeOptions::new(Dtype::Bf16),
        threads,
        progress: false,
        force: false,
    };
    let c = compress::compress_file(
        &path("minilm.bf16.safetensors"),
        &path("minilm.bf16.enec"),
        &settings,
    )?;
    let d = decompress::decompress_file(
        &path("minilm.bf16.enec"),
        &path("restored.safetensors"),
        threads,
        false,
        false,
    )?;
    let restored = std::fs::read(path("restored.safetensors"))
        .context(|| format!("reading {}", dir.path().display()))?;
    let strip = |s: String| s.replace(&format!("{}/", dir.path().display()), "");
    say!(
        "files: {}",
        strip(c.line(
            &path("minilm.bf16.safetensors"),
            &path("minilm.bf16.enec"),
            threads
        ))
    );
    say!(
        "       {}; {}",
        strip(d.line(
            &path("minilm.bf16.enec"),
            &path("restored.safetensors"),
            threads
        )),
        if restored == original {
            "byte-identical"
        } else {
            "MISMATCH"
        }
    );
    if restored != original {
        return Err("the file round trip did not restore the original bytes".into());
    }
    // Flip one bit in the middle of the query weight's stream: decompress must refuse.
    let mut packed = std::fs::read(path("minilm.bf16.enec"))
        .context(|| format!("reading {}", dir.path().display()))?;
    let at = {
        let Kind::Container(c) = decompress::open("demo", &packed)? else {
            return Err("the demo checkpoint is not a container".into());
        };
        let (_, e) = c
            .find("encoder.layer.0.attention.self.query.weight")
            .ok_or("tensor missing")?;
        (e.offset + e.len / 2) as usize
    };
    packed[at] ^= 0x08;
    std::fs::write(path("corrupt.enec"), &packed)
        .context(|| format!("writing {}", dir.path().display()))?;
    match decompress::decompress_file(
        &path("corrupt.enec"),
        &path("corrupt.safetensors"),
        threads,
        false,
        false,
    ) {
        Ok(_) => return Err("a corrupted file was decompressed without an error".into()),
        Err(e) => say!(
            "integrity: one flipped bit in corrupt.enec is refused: {}",
            strip(e.to_string())
        ),
    }
    if Path::new(&path("corrupt.safetensors")).exists() {
        return Err("a failed decompression left its output behind".into());
    }
    dir.close()
        .context(|| "cannot remove the temporary directory")?;
    Ok(())
}
