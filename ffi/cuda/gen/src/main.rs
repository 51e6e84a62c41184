//! Writes the inputs of the CUDA cross-checks with the Rust encoder (the reference).
//!
//! usage:
//!   enec-cuda-gen small OUT_DIR                 synthetic sets + MiniLM slice (every dtype)
//!   enec-cuda-gen minilm CORPUS.bf16.bin OUT_DIR TILES
//!
//! Every line of `OUT_DIR/manifest.tsv` names one (input, options) case:
//! `name dtype frame_log2 coding checksums raw_file raw_bytes raw_h32 stream_file stream_bytes
//! stream_h32 frames`, where `raw_file`/`stream_file` is `-` when the bytes do not travel (the
//! device then derives or regenerates them and compares digests: `h32` of FORMAT.md section 6).
//! `raw_file` may be `derive:bf16:FILE` / `derive:fp16:FILE` (round-to-nearest-even of the fp32
//! FILE, as `half` does it) or `tile:N:FILE` (FILE repeated N times).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use enec::checksum::h32;
use enec::{encode, frames, max_encoded_size, Coding, Dtype, EncodeOptions};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn dtype_name(d: Dtype) -> &'static str {
    d.name()
}

fn coding_name(c: Coding) -> &'static str {
    match c {
        Coding::Auto => "auto",
        Coding::Groups => "groups",
        Coding::Ranked => "ranked",
    }
}

/// Raw bytes of `values` (f32) converted to `dtype` with round-to-nearest-even (FP8:
/// saturating at the largest finite value).
fn from_f32(dtype: Dtype, values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * dtype.element_bytes());
    for &v in values {
        match dtype {
            Dtype::Bf16 => out.extend_from_slice(&half::bf16::from_f32(v).to_bits().to_le_bytes()),
            Dtype::Fp16 => out.extend_from_slice(&half::f16::from_f32(v).to_bits().to_le_bytes()),
            Dtype::Fp32 => out.extend_from_slice(&v.to_bits().to_le_bytes()),
            Dtype::E4m3 | Dtype::E5m2 => out.push(fp8(dtype, f64::from(v))),
        }
    }
    out
}

/// The FP8 byte nearest to `y` (ties to even), `|y|` clamped to the largest finite value: 448
/// for e4m3 (OCP e4m3fn, bias 7), 57,344 for e5m2 (bias 15).
fn fp8(dtype: Dtype, y: f64) -> u8 {
    let (mbits, bias, fmax) = match dtype {
        Dtype::E4m3 => (3i32, 7i32, 448.0f64),
        _ => (2, 15, 57344.0),
    };
    let a = y.abs().min(fmax);
    let emin = 1 - bias; // exponent of the smallest normal
    let mut e = emin;
    while 2f64.powi(e + 1) <= a {
        e += 1;
    }
    let mut steps = (a / 2f64.powi(e - mbits)).round_ties_even() as i32;
    if steps >= 1 << (mbits + 1) {
        // A carry into the next binade: its first value.
        e += 1;
        steps >>= 1;
    }
    let (field, mant) = if steps >= 1 << mbits {
        (e - emin + 1, steps - (1 << mbits))
    } else {
        (0, steps)
    };
    (u8::from(y.is_sign_negative()) << 7) | ((field << mbits) | mant) as u8
}

/// Raw bytes from element bit patterns (u32, truncated to the element width).
fn from_bits(dtype: Dtype, bits: &[u32]) -> Vec<u8> {
    let eb = dtype.element_bytes();
    let mut out = Vec::with_capacity(bits.len() * eb);
    for &b in bits {
        out.extend_from_slice(&b.to_le_bytes()[..eb]);
    }
    out
}

/// Exponent/mantissa layout helpers for building special patterns.
fn fields(dtype: Dtype) -> (u32, u32) {
    (dtype.exponent_bits(), dtype.mantissa_bits())
}

fn compose(dtype: Dtype, sign: u32, x: u32, f: u32) -> u32 {
    let (e, m) = fields(dtype);
    (sign << (e + m)) | ((x & ((1 << e) - 1)) << m) | (f & ((1 << m) - 1))
}

fn special_set(dtype: Dtype, rng: &mut Rng) -> Vec<u8> {
    let (e, m) = fields(dtype);
    let emax = (1u32 << e) - 1;
    let mut bits: Vec<u32> = Vec::new();
    let seg = |bits: &mut Vec<u32>, n: usize, f: &mut dyn FnMut(usize) -> u32| {
        for i in 0..n {
            bits.push(f(i));
        }
    };
    // A whole frame of +0, then -0, then a constant, then NaN payloads, +-inf, subnormals.
    seg(&mut bits, 1024, &mut |_| 0);
    seg(&mut bits, 1024, &mut |_| compose(dtype, 1, 0, 0));
    seg(&mut bits, 1500, &mut |_| compose(dtype, 0, emax / 2, 3));
    let mut r2 = Rng(rng.next());
    seg(&mut bits, 1200, &mut |_| {
        compose(
            dtype,
            (r2.next() & 1) as u32,
            emax,
            1 + (r2.next() as u32 % ((1 << m) - 1)),
        )
    });
    seg(&mut bits, 800, &mut |i| {
        compose(dtype, (i & 1) as u32, emax, 0)
    });
    let mut r3 = Rng(rng.next());
    seg(&mut bits, 2000, &mut |_| {
        compose(dtype, (r3.next() & 1) as u32, 0, r3.next() as u32)
    });
    // Mixtures of every kind, in random order.
    let mut r4 = Rng(rng.next());
    seg(&mut bits, 9000, &mut |_| match r4.below(8) {
        0 => 0,
        1 => compose(dtype, 1, 0, 0),
        2 => compose(dtype, (r4.next() & 1) as u32, emax, 0),
        3 => compose(dtype, (r4.next() & 1) as u32, emax, r4.next() as u32 | 1),
        4 => compose(dtype, (r4.next() & 1) as u32, 0, r4.next() as u32),
        5 => compose(dtype, 0, 1, 0),
        _ => {
            let x = (emax / 2).saturating_sub(3) + (r4.below(6) as u32);
            compose(dtype, (r4.next() & 1) as u32, x, r4.next() as u32)
        }
    });
    // Two values only, and a frame whose exponents span the whole alphabet.
    seg(&mut bits, 3000, &mut |i| {
        if i % 3 == 0 {
            compose(dtype, 0, 1, 0)
        } else {
            compose(dtype, 1, emax - 1, (1 << m) - 1)
        }
    });
    seg(&mut bits, 4096, &mut |i| {
        compose(dtype, (i & 1) as u32, i as u32, (i * 7) as u32)
    });
    from_bits(dtype, &bits)
}

/// Exponents around a mode with geometric tails (wide alphabets: three escape levels, flagged
/// groups); sign and mantissa random.
fn skew_set(dtype: Dtype, n: usize, rng: &mut Rng) -> Vec<u8> {
    let (e, _) = fields(dtype);
    let emax = (1i64 << e) - 1;
    let mut bits = Vec::with_capacity(n);
    let mut mode = emax / 2;
    for i in 0..n {
        if i % 5000 == 0 {
            mode = (emax / 4) + rng.below((emax / 2) as u64) as i64;
        }
        let mut d = 0i64;
        while rng.unit() < 0.62 {
            d += 1;
        }
        if rng.next() & 1 == 1 {
            d = -d;
        }
        let x = (mode + d).clamp(0, emax) as u32;
        bits.push(compose(
            dtype,
            (rng.next() & 1) as u32,
            x,
            rng.next() as u32,
        ));
    }
    from_bits(dtype, &bits)
}

/// Gaussian weights as a per-tensor FP8 scale leaves them (most magnitudes between 1 and a few
/// hundred), the spread drifting, with rare outliers that saturate.
fn fp8_values(n: usize, rng: &mut Rng) -> Vec<f32> {
    let mut out = Vec::with_capacity(n);
    let mut scale = 16f64;
    for i in 0..n {
        if i % 7000 == 0 {
            scale = 10f64.powf(0.5 + 1.5 * rng.unit());
        }
        let mut v = rng.normal() * scale;
        if rng.below(500) == 0 {
            v *= 1e3;
        }
        out.push(v as f32);
    }
    out
}

/// Gaussian weights whose scale drifts and with rare large outliers.
fn normal_values(n: usize, rng: &mut Rng) -> Vec<f32> {
    let mut out = Vec::with_capacity(n);
    let mut scale = 0.02f64;
    for i in 0..n {
        if i % 7000 == 0 {
            scale = 10f64.powf(-6.0 + 8.0 * rng.unit());
        }
        let mut v = rng.normal() * scale;
        if rng.below(200) == 0 {
            v *= 1e4;
        }
        out.push(v as f32);
    }
    out
}

struct Case {
    name: String,
    dtype: Dtype,
    frame_log2: u8,
    coding: Coding,
    checksums: bool,
    /// How the raw bytes reach the device: a file name, `derive:..`, `tile:..`, or `-`.
    raw_source: String,
    /// Whether the stream bytes travel.
    ship_stream: bool,
}

struct Writer {
    dir: PathBuf,
    manifest: String,
    /// Streams already written (identical streams share one file: auto often equals ranked).
    written: Vec<(Vec<u8>, String)>,
}

impl Writer {
    fn new(dir: &Path) -> Writer {
        fs::create_dir_all(dir).unwrap();
        Writer {
            dir: dir.to_path_buf(),
            written: Vec::new(),
            manifest: String::from(
                "name\tdtype\tframe_log2\tcoding\tchecksums\traw\traw_bytes\traw_h32\tstream\tstream_bytes\tstream_h32\tframes\n",
            ),
        }
    }

    fn case(&mut self, case: &Case, raw: &[u8]) {
        let mut options = EncodeOptions::new(case.dtype)
            .coding(case.coding)
            .checksums(case.checksums);
        options = options.frame_len(1 << case.frame_log2).unwrap();
        let mut stream = vec![0u8; max_encoded_size(&options, raw.len()).unwrap()];
        let len = encode(&options, raw, &mut stream).unwrap();
        stream.truncate(len);
        let mut codings = [0usize; 3];
        for f in frames(&stream).unwrap() {
            codings[f.unwrap().coding as usize] += 1;
        }
        let stream_file = if !case.ship_stream {
            "-".to_string()
        } else if let Some((_, f)) = self.written.iter().find(|(b, _)| *b == stream) {
            f.clone()
        } else {
            let f = format!(
                "{}.{}.f{}{}.enec",
                case.name,
                coding_name(case.coding),
                case.frame_log2,
                if case.checksums { "" } else { ".nock" }
            );
            fs::write(self.dir.join(&f), &stream).unwrap();
            self.written.push((stream.clone(), f.clone()));
            f
        };
        writeln!(
            self.manifest,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:08x}\t{}\t{}\t{:08x}\t{}/{}/{}",
            case.name,
            dtype_name(case.dtype),
            case.frame_log2,
            coding_name(case.coding),
            u8::from(case.checksums),
            case.raw_source,
            raw.len(),
            h32(raw),
            stream_file,
            stream.len(),
            h32(&stream),
            codings[0],
            codings[1],
            codings[2]
        )
        .unwrap();
        eprintln!(
            "{:<28} {} f{} {:<6} ratio {:.4} frames stored/groups/ranked {:?}",
            case.name,
            dtype_name(case.dtype),
            case.frame_log2,
            coding_name(case.coding),
            raw.len() as f64 / stream.len() as f64,
            codings
        );
    }

    fn finish(self, manifest: &str) {
        fs::write(self.dir.join(manifest), self.manifest).unwrap();
    }
}

const CODINGS: [Coding; 3] = [Coding::Auto, Coding::Groups, Coding::Ranked];

/// The dtypes the CUDA kernels code.
const KERNEL_DTYPES: [Dtype; 5] = [
    Dtype::Bf16,
    Dtype::Fp16,
    Dtype::Fp32,
    Dtype::E4m3,
    Dtype::E5m2,
];

fn small(dir: &Path) {
    let mut w = Writer::new(dir);
    let mut rng = Rng(0x454E_4543_4355_4441);
    let mut sets: Vec<(String, Dtype, Vec<u8>)> = Vec::new();
    for dtype in KERNEL_DTYPES {
        let n = 40_000;
        let bits: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
        sets.push((
            format!("rand_{}", dtype.name()),
            dtype,
            from_bits(dtype, &bits),
        ));
        let normal = if dtype.element_bytes() == 1 {
            fp8_values(70_001, &mut rng)
        } else {
            normal_values(70_001, &mut rng)
        };
        sets.push((
            format!("normal_{}", dtype.name()),
            dtype,
            from_f32(dtype, &normal),
        ));
        sets.push((
            format!("special_{}", dtype.name()),
            dtype,
            special_set(dtype, &mut rng),
        ));
        sets.push((
            format!("skew_{}", dtype.name()),
            dtype,
            skew_set(dtype, 50_000, &mut rng),
        ));
    }
    // fp32 weights kept in bf16 / fp16: dead low bits.
    let normal = normal_values(40_000, &mut rng);
    let widened: Vec<f32> = normal
        .iter()
        .map(|&v| half::bf16::from_f32(v).to_f32())
        .collect();
    sets.push((
        "widened_bf16_fp32".into(),
        Dtype::Fp32,
        from_f32(Dtype::Fp32, &widened),
    ));
    let widened: Vec<f32> = normal
        .iter()
        .map(|&v| half::f16::from_f32(v).to_f32())
        .collect();
    sets.push((
        "widened_fp16_fp32".into(),
        Dtype::Fp32,
        from_f32(Dtype::Fp32, &widened),
    ));
    // Tiny and ragged sizes (planes narrower than a vector, partial groups).
    for (n, dtype) in [
        (1usize, Dtype::Bf16),
        (7, Dtype::Fp16),
        (13, Dtype::Fp32),
        (1000, Dtype::Bf16),
        (1025, Dtype::Fp32),
        (3333, Dtype::Fp16),
        (9, Dtype::E4m3),
        (1031, Dtype::E5m2),
    ] {
        let v = normal_values(n, &mut rng);
        sets.push((
            format!("tiny{}_{}", n, dtype.name()),
            dtype,
            from_f32(dtype, &v),
        ));
    }
    // Raw bytes do not travel: the device recovers them by decoding the shipped auto stream
    // (checked against raw_h32), which keeps what travels small.
    for (name, dtype, raw) in &sets {
        let file = "-".to_string();
        for coding in CODINGS {
            let case = Case {
                name: name.clone(),
                dtype: *dtype,
                frame_log2: 14,
                coding,
                checksums: true,
                raw_source: file.clone(),
                ship_stream: true,
            };
            w.case(&case, raw);
        }
    }
    // Other frame lengths and checksums off.
    let extra: [(&str, u8, bool); 10] = [
        ("normal_bf16", 10, true),
        ("normal_bf16", 16, true),
        ("special_bf16", 10, true),
        ("skew_fp16", 12, true),
        ("skew_bf16", 16, true),
        ("normal_fp32", 11, true),
        ("normal_fp16", 14, false),
        ("special_fp32", 15, false),
        ("normal_e4m3", 10, true),
        ("skew_e5m2", 16, false),
    ];
    for (name, log2, checksums) in extra {
        let (_, dtype, raw) = sets.iter().find(|s| s.0 == name).unwrap();
        for coding in CODINGS {
            let case = Case {
                name: name.to_string(),
                dtype: *dtype,
                frame_log2: log2,
                coding,
                checksums,
                raw_source: "-".to_string(),
                ship_stream: true,
            };
            w.case(&case, raw);
        }
    }
    // The MiniLM slice (fp32 travels with the repository; bf16/fp16 are derived on the device;
    // FP8, scaled by 64 as a per-tensor scale would, is recovered by decoding its auto stream).
    let slice_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/data/minilm-slice.f32.bin");
    let slice = fs::read(&slice_path).unwrap();
    let values: Vec<f32> = slice
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for dtype in KERNEL_DTYPES {
        let fp8 = dtype.element_bytes() == 1;
        let raw = if fp8 {
            let scaled: Vec<f32> = values.iter().map(|v| v * 64.0).collect();
            from_f32(dtype, &scaled)
        } else {
            from_f32(dtype, &values)
        };
        let source = match dtype {
            Dtype::Fp32 => "repo:tests/data/minilm-slice.f32.bin".to_string(),
            _ if fp8 => "-".to_string(),
            _ => format!(
                "derive:{}:repo:tests/data/minilm-slice.f32.bin",
                dtype.name()
            ),
        };
        for coding in CODINGS {
            let case = Case {
                name: format!("minilm_slice_{}", dtype.name()),
                dtype,
                frame_log2: 14,
                coding,
                checksums: true,
                raw_source: source.clone(),
                ship_stream: fp8 && coding == Coding::Auto,
            };
            w.case(&case, &raw);
        }
    }
    w.finish("manifest.tsv");
}

fn minilm(corpus: &Path, dir: &Path, tiles: usize) {
    let mut w = Writer::new(dir);
    let raw = fs::read(corpus).unwrap();
    // The whole corpus: the auto stream travels (the device decodes it to get the raw bytes).
    for coding in CODINGS {
        let case = Case {
            name: "minilm_bf16".into(),
            dtype: Dtype::Bf16,
            frame_log2: 14,
            coding,
            checksums: true,
            raw_source: "-".into(),
            ship_stream: coding == Coding::Auto,
        };
        w.case(&case, &raw);
    }
    // The benchmark input: the corpus repeated to about 1 GiB, encoded as one stream.
    let mut tiled = Vec::with_capacity(raw.len() * tiles);
    for _ in 0..tiles {
        tiled.extend_from_slice(&raw);
    }
    for coding in CODINGS {
        let case = Case {
            name: format!("minilm_bf16_x{tiles}"),
            dtype: Dtype::Bf16,
            frame_log2: 14,
            coding,
            checksums: true,
            raw_source: format!("tile:{tiles}:minilm_bf16"),
            ship_stream: false,
        };
        w.case(&case, &tiled);
    }
    w.finish("minilm.tsv");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("small") => small(Path::new(&args[1])),
        Some("minilm") => minilm(
            Path::new(&args[1]),
            Path::new(&args[2]),
            args[3].parse().unwrap(),
        ),
        _ => {
            eprintln!("usage: enec-cuda-gen small OUT_DIR | minilm CORPUS OUT_DIR TILES");
            std::process::exit(2);
        }
    }
}
