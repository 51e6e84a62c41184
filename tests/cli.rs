//! The `enec` command line, run as a user would: round trips, raw mode, info, errors, demo.
//!
//! cargo test --release --features cli --test cli
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use enec::container::{Container, PieceKind};
use half::{bf16, f16};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_enec");

fn enec(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run the enec binary")
}

fn ok(args: &[&str]) -> String {
    let out = enec(args);
    assert!(
        out.status.success(),
        "enec {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `enec args`, expects failure with status 1, returns stderr.
fn fails(args: &[&str]) -> String {
    let out = enec(args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "enec {args:?} should fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Smooth pseudo-weights (deterministic), as f32 values.
fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 * 0.731 + seed).sin() * (i as f32 * 0.013).cos()) * 0.04)
        .collect()
}

/// A safetensors file with BF16, F16, F32 and I64 tensors, `__metadata__`, a gap between two
/// tensors and trailing bytes after the last one (kept verbatim by the container, with the
/// scalar, too small for an entry of its own).
fn checkpoint() -> (Vec<u8>, Vec<(&'static str, usize, usize)>) {
    let bf: Vec<u8> = values(5000, 0.1)
        .iter()
        .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
        .collect();
    let hf: Vec<u8> = values(3000, 0.7)
        .iter()
        .flat_map(|&x| f16::from_f32(x).to_le_bytes())
        .collect();
    let f32s: Vec<u8> = values(2500, 1.3)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let ids: Vec<u8> = (0..4096i64).flat_map(i64::to_le_bytes).collect();
    let scalar: Vec<u8> = 1.5f32.to_le_bytes().to_vec();
    // (name, dtype, shape, bytes, gap after it)
    type Spec<'a> = (&'static str, &'static str, Vec<u64>, &'a [u8], usize);
    let tensors: [Spec; 5] = [
        ("model.embed.weight", "BF16", vec![50, 100], &bf, 0),
        ("model.position_ids", "I64", vec![1, 4096], &ids, 8),
        ("model.norm.weight", "F16", vec![3000], &hf, 0),
        ("model.head.weight", "F32", vec![25, 100], &f32s, 0),
        ("model.scale", "F32", vec![], &scalar, 0),
    ];
    let mut header = serde_json::Map::new();
    header.insert(
        "__metadata__".into(),
        json!({"format": "pt", "note": "cli test"}),
    );
    let mut at = 0usize;
    let mut spans = Vec::new();
    for (name, dtype, shape, bytes, gap) in &tensors {
        header.insert(
            (*name).into(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + bytes.len()]}),
        );
        spans.push((*name, at, bytes.len()));
        at += bytes.len() + gap;
    }
    let mut json = Value::Object(header).to_string().into_bytes();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&json);
    let data_start = file.len();
    for (_, _, _, bytes, gap) in &tensors {
        file.extend_from_slice(bytes);
        file.extend(std::iter::repeat_n(0xEE, *gap));
    }
    file.extend_from_slice(b"trailing bytes");
    let spans = spans
        .into_iter()
        .map(|(n, at, len)| (n, data_start + at, len))
        .collect();
    (file, spans)
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

#[test]
fn safetensors_round_trip() {
    let dir = Dir::new();
    let (file, spans) = checkpoint();
    let input = dir.write("model.safetensors", &file);
    let packed = dir.path("model.enec");
    let restored = dir.path("restored.safetensors");
    let said = ok(&["compress", "--frame", "1024", p(&input), p(&packed)]);
    assert!(said.contains("5 tensors, 3 encoded"), "{said}");
    ok(&["decompress", p(&packed), p(&restored)]);
    assert_eq!(std::fs::read(&restored).unwrap(), file);
    // OUT gets the permissions of any new file (not the 0600 of a temporary file).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode(&restored), mode(&input));
        assert_eq!(mode(&packed), mode(&input));
    }
    assert!(std::fs::metadata(&packed).unwrap().len() < file.len() as u64);
    assert_eq!(
        listing(dir.0.path()),
        ["model.enec", "model.safetensors", "restored.safetensors"]
    );

    // A reader finds and decodes one tensor without the others.
    let bytes = std::fs::read(&packed).unwrap();
    let c = Container::parse(&bytes).unwrap();
    for (name, at, len) in spans {
        let Some((i, e)) = c.find(name) else {
            // A tensor too small for an entry lies in a run of verbatim bytes.
            let (i, e) = c.verbatim_at(at as u64, len as u64).unwrap();
            assert_eq!(
                (name, e.kind, e.name, e.dtype),
                ("model.scale", PieceKind::Raw, "", "")
            );
            let mut out = vec![0u8; e.original_len as usize];
            c.decode_entry(i, &e, &mut out).unwrap();
            let delta = at - e.original_offset as usize;
            assert_eq!(out[delta..delta + len], file[at..at + len], "{name}");
            continue;
        };
        assert_eq!(
            (e.original_offset as usize, e.original_len as usize),
            (at, len)
        );
        let mut out = vec![0u8; len];
        c.decode_entry(i, &e, &mut out).unwrap();
        assert_eq!(out, file[at..at + len], "{name}");
    }
    let kinds: Vec<(String, PieceKind)> = c
        .entries()
        .map(|(_, e)| (e.name.to_owned(), e.kind))
        .collect();
    assert!(kinds.contains(&("model.embed.weight".into(), PieceKind::Enec)));
    assert!(kinds.contains(&("model.position_ids".into(), PieceKind::Raw)));
    assert!(!kinds.iter().any(|(name, _)| name == "model.scale"));
}

/// A safetensors file of `tensors` (name, dtype, shape, bytes), packed back to back.
fn safetensors_of(tensors: &[(String, &str, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut at = 0usize;
    for (name, dtype, shape, bytes) in tensors {
        let end = at + bytes.len();
        header.insert(
            name.clone(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [at, end]}),
        );
        at = end;
    }
    let mut json = Value::Object(header).to_string().into_bytes();
    json.resize(json.len().next_multiple_of(8), b' ');
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&json);
    for (_, _, _, bytes) in tensors {
        file.extend_from_slice(bytes);
    }
    file
}

/// No file grows by more than 1 % plus 4 KiB, however small its tensors: thousands of scalars
/// join one run of verbatim bytes, and a reader still finds each through the header.
/// Every file under `dir` (relative path, bytes), sorted; folders as (path + "/", empty).
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                out.push((rel + "/", Vec::new()));
                stack.push(path);
            } else {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn sharded_folder_round_trip() {
    let dir = Dir::new();
    let input = dir.path("model");
    std::fs::create_dir_all(input.join("tokenizer/empty")).unwrap();
    let (file, _) = checkpoint();
    let shard = |seed: f32| {
        let w: Vec<u8> = values(3000, seed)
            .iter()
            .flat_map(|&v| bf16::from_f32(v).to_le_bytes())
            .collect();
        safetensors_of(&[("w".to_owned(), "BF16", vec![3000], w)])
    };
    let files: [(&str, Vec<u8>); 5] = [
        ("model-00001-of-00002.safetensors", file.clone()),
        ("model-00002-of-00002.safetensors", shard(0.7)),
        (
            "model.safetensors.index.json",
            br#"{"weight_map": {"w": "model-00002-of-00002.safetensors"}}"#.to_vec(),
        ),
        ("config.json", b"{}".to_vec()),
        ("tokenizer/tokenizer.json", b"tokens".to_vec()),
    ];
    for (name, bytes) in &files {
        std::fs::write(input.join(name), bytes).unwrap();
    }
    let packed = dir.path("packed");
    let said = ok(&["compress", p(&input), p(&packed)]);
    assert!(said.contains("2 files compressed, 3 copied"), "{said}");
    // Each shard is the container `enec compress` makes of it alone.
    let alone = dir.path("alone.enec");
    ok(&["compress", p(&input.join(files[1].0)), p(&alone)]);
    let shard_two = packed.join("model-00002-of-00002.safetensors.enec");
    assert_eq!(
        std::fs::read(&shard_two).unwrap(),
        std::fs::read(&alone).unwrap()
    );
    assert_eq!(
        std::fs::read(packed.join("model.safetensors.index.json")).unwrap(),
        files[2].1
    );
    assert!(packed.join("tokenizer/empty").is_dir());

    let info = ok(&["info", "--json", p(&packed)]);
    let info: Value = serde_json::from_str(&info).unwrap();
    let original: usize = files.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(info["original_bytes"], json!(original));
    assert_eq!(info["enec_files"], json!(2));

    let restored = dir.path("restored");
    let said = ok(&["decompress", p(&packed), p(&restored)]);
    assert!(said.contains("2 files restored, 3 copied"), "{said}");
    assert_eq!(tree(&restored), tree(&input));

    // Nothing is overwritten without --force, and an output inside the input is refused.
    let said = fails(&["decompress", p(&packed), p(&restored)]);
    assert!(said.contains("already exists (pass --force"), "{said}");
    ok(&["decompress", "--force", "--quiet", p(&packed), p(&restored)]);
    let said = fails(&["compress", p(&input), p(&input.join("out"))]);
    assert!(said.contains("lies inside it"), "{said}");
    let said = fails(&["compress", "--dtype", "bf16", p(&input), p(&dir.path("x"))]);
    assert!(said.contains("--dtype is for a raw array"), "{said}");
    // A folder to compress that holds an enec file would not come back the same.
    let said = fails(&["compress", p(&packed), p(&dir.path("twice"))]);
    assert!(said.contains("already an enec file"), "{said}");
}

#[test]
fn tiny_tensors_do_not_grow_the_file() {
    let dir = Dir::new();
    let scalars: Vec<(String, &str, Vec<u64>, Vec<u8>)> = (0..3000)
        .map(|i| {
            let x = (i as f32 * 0.37).sin();
            match i % 3 {
                0 => (
                    format!("model.layers.{i}.scale"),
                    "F32",
                    vec![],
                    x.to_le_bytes().to_vec(),
                ),
                1 => (
                    format!("model.layers.{i}.bias"),
                    "BF16",
                    vec![1],
                    bf16::from_f32(x).to_le_bytes().to_vec(),
                ),
                _ => (
                    format!("model.layers.{i}.step"),
                    "I64",
                    vec![1],
                    (i as i64).to_le_bytes().to_vec(),
                ),
            }
        })
        .collect();
    let tiny = vec![
        (
            "model.embed_tokens.weight".to_owned(),
            "BF16",
            vec![4, 8],
            (0..64).collect(),
        ),
        (
            "model.norm.weight".to_owned(),
            "F32",
            vec![8],
            1f32.to_le_bytes().repeat(8),
        ),
    ];
    for (label, tensors) in [("scalars", scalars), ("tiny", tiny)] {
        let file = safetensors_of(&tensors);
        let input = dir.write(&format!("{label}.safetensors"), &file);
        let packed = dir.path(&format!("{label}.enec"));
        let restored = dir.path(&format!("{label}.restored"));
        ok(&["compress", p(&input), p(&packed)]);
        let size = std::fs::metadata(&packed).unwrap().len();
        let bound = file.len() as u64 + file.len() as u64 / 100 + 4096;
        assert!(
            size <= bound,
            "{label}: {} bytes grew to {size}",
            file.len()
        );
        ok(&["decompress", p(&packed), p(&restored)]);
        assert_eq!(std::fs::read(&restored).unwrap(), file, "{label}");

        let bytes = std::fs::read(&packed).unwrap();
        let c = Container::parse(&bytes).unwrap();
        assert_eq!(c.entries().count(), 1, "{label}: one run of verbatim bytes");
        let said = ok(&["info", p(&packed)]);
        let holds = format!("(verbatim bytes, {} tensors)", tensors.len());
        assert!(said.contains(&holds), "{said}");
        let mut at = file.len() - tensors.iter().map(|t| t.3.len()).sum::<usize>();
        for (name, _, _, data) in &tensors {
            assert!(c.find(name).is_none());
            let (i, e) = c.verbatim_at(at as u64, data.len() as u64).unwrap();
            assert_eq!((i, e.original_offset), (0, 0));
            let payload = c.payload(&e);
            assert_eq!(&payload[at..at + data.len()], &data[..], "{name}");
            at += data.len();
        }
    }
}

/// In a checkpoint whose entries cost little beside its weights (a real model's), every tensor
/// has an index entry, the small biases and counters too: they are found by name.
#[test]
fn every_tensor_of_a_checkpoint_is_indexed() {
    let dir = Dir::new();
    let weights = |n: usize, scale: f32| -> Vec<u8> {
        values(n, scale)
            .iter()
            .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
            .collect()
    };
    let tensors = vec![
        (
            "layer.0.weight".to_owned(),
            "BF16",
            vec![256, 256],
            weights(65536, 0.02),
        ),
        (
            "layer.0.bias".to_owned(),
            "BF16",
            vec![384],
            weights(384, 0.01),
        ),
        (
            "layer.1.weight".to_owned(),
            "BF16",
            vec![256, 256],
            weights(65536, 0.03),
        ),
        (
            "norm.weight".to_owned(),
            "F32",
            vec![8],
            1f32.to_le_bytes().repeat(8),
        ),
        (
            "step".to_owned(),
            "I64",
            vec![1],
            7i64.to_le_bytes().to_vec(),
        ),
    ];
    let file = safetensors_of(&tensors);
    let input = dir.write("model.safetensors", &file);
    let packed = dir.path("model.enec");
    let restored = dir.path("model.restored");
    ok(&["compress", p(&input), p(&packed)]);
    ok(&["decompress", p(&packed), p(&restored)]);
    assert_eq!(std::fs::read(&restored).unwrap(), file);
    let bytes = std::fs::read(&packed).unwrap();
    let c = Container::parse(&bytes).unwrap();
    for (name, dtype, _, data) in &tensors {
        let (_, e) = c
            .find(name)
            .unwrap_or_else(|| panic!("{name} has no entry"));
        assert_eq!(
            (e.dtype, e.original_len),
            (*dtype, data.len() as u64),
            "{name}"
        );
    }
    assert!(bytes.len() < file.len());
}

/// A tensor named "" is a tensor of the container (enec or raw), found and listed like any.
#[test]
fn a_tensor_named_empty_is_kept() {
    let dir = Dir::new();
    let bf: Vec<u8> = values(2000, 0.3)
        .iter()
        .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
        .collect();
    let ids: Vec<u8> = (0..4000i64).flat_map(i64::to_le_bytes).collect();
    for (dtype, shape, bytes, kind) in [
        ("BF16", 2000, &bf, PieceKind::Enec),
        ("I64", 4000, &ids, PieceKind::Raw),
    ] {
        let header =
            json!({"": {"dtype": dtype, "shape": [shape], "data_offsets": [0, bytes.len()]}});
        let json = header.to_string().into_bytes();
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(&json);
        file.extend_from_slice(bytes);
        let input = dir.write("empty-name.safetensors", &file);
        let packed = dir.path("empty-name.enec");
        let said = ok(&["compress", "--force", p(&input), p(&packed)]);
        assert!(said.contains("1 tensors"), "{said}");
        let container = std::fs::read(&packed).unwrap();
        let c = Container::parse(&container).unwrap();
        let (i, e) = c.find("").unwrap();
        assert_eq!((e.kind, e.dtype, &e.shape[..]), (kind, dtype, &[shape][..]));
        let mut out = vec![0u8; bytes.len()];
        c.decode_entry(i, &e, &mut out).unwrap();
        assert_eq!(&out, bytes);
        assert_eq!(c.entries().filter(|(_, e)| e.is_tensor()).count(), 1);
        assert!(ok(&["info", p(&packed)]).contains("\"\""));
    }
}

#[test]
fn options_and_threads_give_the_same_original() {
    let dir = Dir::new();
    let (file, _) = checkpoint();
    let input = dir.write("m.safetensors", &file);
    let mut packed_by_threads = Vec::new();
    for (i, extra) in [
        &["--threads", "1"][..],
        &["--threads", "2"],
        &["--threads", "3"],
        &["--coding", "groups", "--threads", "2"],
        &["--coding", "ranked", "--frame", "65536"],
        &["--no-checksum", "--frame", "2048"],
    ]
    .iter()
    .enumerate()
    {
        let packed = dir.path(&format!("m{i}.enec"));
        let restored = dir.path(&format!("m{i}.out"));
        let mut args = vec!["compress", "-q", p(&input), p(&packed)];
        args.extend_from_slice(extra);
        assert_eq!(ok(&args), "", "--quiet prints nothing");
        ok(&["decompress", "-q", "-j", "2", p(&packed), p(&restored)]);
        assert_eq!(std::fs::read(&restored).unwrap(), file, "{extra:?}");
        if i < 3 {
            packed_by_threads.push(std::fs::read(&packed).unwrap());
        }
    }
    // The output does not depend on the number of threads.
    assert_eq!(packed_by_threads[0], packed_by_threads[1]);
    assert_eq!(packed_by_threads[0], packed_by_threads[2]);
}

#[test]
fn raw_array_round_trip() {
    let dir = Dir::new();
    for (dtype, bytes) in [
        (
            "bf16",
            values(70_000, 0.2)
                .iter()
                .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
                .collect::<Vec<u8>>(),
        ),
        (
            "fp16",
            values(1000, 0.4)
                .iter()
                .flat_map(|&x| f16::from_f32(x).to_le_bytes())
                .collect(),
        ),
        (
            "fp32",
            values(40_000, 0.9)
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        ("bf16", Vec::new()),
    ] {
        let input = dir.write("raw.bin", &bytes);
        let packed = dir.path("raw.enec");
        let restored = dir.path("raw.out");
        ok(&["compress", "-f", "--dtype", dtype, p(&input), p(&packed)]);
        let stream = std::fs::read(&packed).unwrap();
        // A raw array becomes a bare enec stream that the library decodes directly.
        let info = enec::read_header(&stream).unwrap();
        assert_eq!(info.decoded_bytes(), bytes.len() as u64);
        ok(&["decompress", "-f", p(&packed), p(&restored)]);
        assert_eq!(std::fs::read(&restored).unwrap(), bytes, "{dtype}");
        let info = ok(&["info", p(&packed)]);
        assert!(info.contains("enec stream"), "{info}");
    }
    // Not a whole number of elements.
    let input = dir.write("odd.bin", &[1, 2, 3]);
    let err = fails(&[
        "compress",
        "--dtype",
        "bf16",
        p(&input),
        p(&dir.path("odd.enec")),
    ]);
    assert!(
        err.contains("not a whole number of 2-byte bf16 elements"),
        "{err}"
    );
    assert!(!dir.path("odd.enec").exists());
}

#[test]
fn info_reports_tensors_codings_and_ratio() {
    let dir = Dir::new();
    let (file, _) = checkpoint();
    let input = dir.write("m.safetensors", &file);
    let packed = dir.path("m.enec");
    ok(&["compress", "--frame", "1024", p(&input), p(&packed)]);
    let text = ok(&["info", p(&packed)]);
    for needle in [
        "checkpoint container",
        "ratio",
        "model.embed.weight",
        "model.position_ids",
        "BF16",
        "I64",
        "50x100",
        "ranked",
        "groups",
        "frames",
        "checksums on",
        "(verbatim bytes)",
    ] {
        assert!(text.contains(needle), "info lacks {needle:?}:\n{text}");
    }
    let doc: Value = serde_json::from_str(&ok(&["info", "--json", p(&packed)])).unwrap();
    assert_eq!(doc["original_bytes"], json!(file.len()));
    let pieces = doc["pieces"].as_array().unwrap();
    let embed = pieces
        .iter()
        .find(|t| t["name"] == "model.embed.weight")
        .unwrap();
    assert_eq!(embed["frames"], json!(5)); // 5000 elements in frames of 1024
    assert_eq!(embed["kind"], json!("enec"));
    assert!(embed["ratio"].as_f64().unwrap() > 1.2);
    let total: u64 = pieces
        .iter()
        .map(|t| t["original_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(total, file.len() as u64);
}

#[test]
fn wrong_file_type_is_refused() {
    let dir = Dir::new();
    let input = dir.write("notes.safetensors", b"these are not weights, just text\n");
    let out = dir.path("notes.enec");
    let err = fails(&["compress", p(&input), p(&out)]);
    assert!(err.contains("not a safetensors file"), "{err}");
    assert!(err.contains("--dtype"), "{err}");
    let err = fails(&["decompress", p(&input), p(&out)]);
    assert!(err.contains("not an enec file"), "{err}");
    let err = fails(&["info", p(&input)]);
    assert!(err.contains("not an enec file"), "{err}");
    // A safetensors file given to decompress: the message says what to do.
    let (file, _) = checkpoint();
    let st = dir.write("m.safetensors", &file);
    let err = fails(&["decompress", p(&st), p(&out)]);
    assert!(err.contains("enec compress"), "{err}");
    // A truncated checkpoint is named as such, without the raw-array hint.
    let cut = dir.write("cut.safetensors", &file[..file.len() - 100]);
    let err = fails(&["compress", p(&cut), p(&out)]);
    assert!(
        err.contains("damaged or truncated safetensors file"),
        "{err}"
    );
    assert!(!err.contains("--dtype"), "{err}");
    std::fs::remove_file(&cut).unwrap();
    // Compressing an .enec file again.
    ok(&["compress", p(&st), p(&out)]);
    let err = fails(&["compress", p(&out), p(&dir.path("again.enec"))]);
    assert!(err.contains("already an enec file"), "{err}");
    // Missing input, existing output without --force, bad --frame.
    let err = fails(&["compress", p(&dir.path("missing")), p(&dir.path("x.enec"))]);
    assert!(err.contains("missing"), "{err}");
    let err = fails(&["compress", p(&st), p(&out)]);
    assert!(err.contains("--force"), "{err}");
    let err = fails(&["compress", "-f", "--frame", "1000", p(&st), p(&out)]);
    assert!(err.contains("power of two"), "{err}");
    assert_eq!(
        listing(dir.0.path()),
        ["m.safetensors", "notes.enec", "notes.safetensors"]
    );
}

#[test]
fn truncated_container_is_refused_and_leaves_no_output() {
    let dir = Dir::new();
    let (file, _) = checkpoint();
    let input = dir.write("m.safetensors", &file);
    let packed = dir.path("m.enec");
    ok(&["compress", p(&input), p(&packed)]);
    let bytes = std::fs::read(&packed).unwrap();
    for cut in [1, 31, 32, 100, bytes.len() / 2, bytes.len() - 40] {
        let short = dir.write("short.enec", &bytes[..bytes.len() - cut]);
        let err = fails(&["decompress", p(&short), p(&dir.path("out.safetensors"))]);
        assert!(
            err.contains("truncated") || err.contains("not completely written"),
            "cut {cut}: {err}"
        );
        let err = fails(&["info", p(&short)]);
        assert!(err.contains("truncated"), "cut {cut}: {err}");
    }
    assert_eq!(
        listing(dir.0.path()),
        ["m.enec", "m.safetensors", "short.enec"]
    );
}

#[test]
fn flipped_bit_names_the_tensor_and_frame() {
    let dir = Dir::new();
    let (file, _) = checkpoint();
    let input = dir.write("m.safetensors", &file);
    let packed = dir.path("m.enec");
    ok(&["compress", "--frame", "1024", p(&input), p(&packed)]);
    let mut bytes = std::fs::read(&packed).unwrap();
    let at = {
        let c = Container::parse(&bytes).unwrap();
        let (_, e) = c.find("model.norm.weight").unwrap();
        let stream = c.payload(&e);
        let frame = enec::frames(stream).unwrap().nth(1).unwrap().unwrap();
        let f = &stream[frame.offset..];
        // The first bytes of the residual plane (sign and mantissa bits): always data.
        let residual = match f[12] {
            2 => {
                let table: usize = (0..f[16] as usize).map(|j| (1usize << f[17 + j]) - 1).sum();
                32 + table.div_ceil(32) * 32
            }
            _ => 32,
        };
        e.offset as usize + frame.offset + residual + 2
    };
    bytes[at] ^= 0x04;
    let bad = dir.write("bad.enec", &bytes);
    let out = dir.path("bad.safetensors");
    let err = fails(&["decompress", p(&bad), p(&out)]);
    assert!(err.contains("tensor \"model.norm.weight\""), "{err}");
    assert!(err.contains("checksum mismatch in frame 1"), "{err}");
    assert!(!out.exists());
    // Damage in a later frame too: every thread count reports the first in file order.
    let mut twice = bytes.clone();
    let last = {
        let c = Container::parse(&bytes).unwrap();
        let (_, e) = c
            .entries()
            .filter(|(_, e)| e.kind == PieceKind::Enec)
            .last()
            .unwrap();
        (e.offset + e.len / 2) as usize
    };
    assert!(last > at);
    twice[last] ^= 0x10;
    let twice = dir.write("bad.enec", &twice);
    for threads in ["1", "2", "3"] {
        let again = fails(&["decompress", "-j", threads, p(&twice), p(&out)]);
        assert_eq!(again, err, "{threads} threads");
        assert!(!out.exists());
    }
    // A flipped bit in the index or in a verbatim piece is caught too.
    let original = std::fs::read(&packed).unwrap();
    let c = Container::parse(&original).unwrap();
    let (_, ids) = c.find("model.position_ids").unwrap();
    for (at, needle) in [
        (c.index().index_offset() as usize + 3, "index"),
        (
            ids.offset as usize + 5,
            "tensor \"model.position_ids\": checksum mismatch",
        ),
    ] {
        let mut bytes = original.clone();
        bytes[at] ^= 0x01;
        let bad = dir.write("bad.enec", &bytes);
        let err = fails(&["decompress", p(&bad), p(&out)]);
        assert!(err.contains(needle), "{err}");
        assert!(!out.exists());
    }
    assert_eq!(
        listing(dir.0.path()),
        ["bad.enec", "m.enec", "m.safetensors"]
    );
}

#[test]
fn demo_runs_anywhere_and_leaves_nothing() {
    let cwd = Dir::new();
    let tmp = Dir::new();
    for args in [&[][..], &["demo", "--threads", "1"]] {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(cwd.0.path())
            .env("TMPDIR", tmp.0.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("all round trips byte-identical"), "{text}");
        assert!(text.contains("checksum mismatch in frame"), "{text}");
        for dtype in ["bf16", "fp16", "fp32"] {
            assert!(text.contains(dtype), "{text}");
        }
        assert!(!text.contains("MISMATCH"), "{text}");
        assert!(listing(cwd.0.path()).is_empty());
        assert!(listing(tmp.0.path()).is_empty());
    }
}

#[test]
fn help_names_every_command() {
    let text = ok(&["--help"]);
    for command in ["compress", "decompress", "info", "demo"] {
        assert!(text.contains(command), "{text}");
    }
    let text = ok(&["compress", "--help"]);
    for option in [
        "--dtype",
        "--coding",
        "--frame",
        "--no-checksum",
        "--threads",
    ] {
        assert!(text.contains(option), "{text}");
    }
    let out = enec(&["compress"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit with 2");
}

#[test]
fn bench_reports_throughput_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("w.bf16");
    let bytes: Vec<u8> = values(40_000, 0.3)
        .iter()
        .flat_map(|&x| bf16::from_f32(x).to_le_bytes())
        .collect();
    std::fs::write(&raw, &bytes).unwrap();
    let doc: Value = serde_json::from_str(&ok(&[
        "bench",
        p(&raw),
        "--dtype",
        "bf16",
        "--repeats",
        "1",
        "--threads",
        "2",
        "--json",
    ]))
    .unwrap();
    for key in [
        "memcpy_gbps",
        "encode_gbps",
        "decode_gbps",
        "ratio",
        "decode_gbps_threads",
        "encode_gbps_threads",
    ] {
        let v = doc[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing: {doc}"));
        assert!(v.is_finite() && v > 0.0, "{key} = {v}");
    }
    assert_eq!(doc["threads"], json!(2));
    // `avx2` is about AVX2 alone (NEON on aarch64 is not it); `kernels` names what runs.
    let kernels = enec::kernels_in_use();
    assert_eq!(doc["kernels"], json!(kernels), "{doc}");
    assert_eq!(doc["avx2"], json!(kernels.starts_with("AVX2")), "{doc}");
    assert!(doc["ratio"].as_f64().unwrap() > 1.0, "{doc}");
    let text = ok(&["bench", p(&raw), "--dtype", "bf16", "--repeats", "1"]);
    assert!(text.contains("x memcpy"), "{text}");
    let err = fails(&["bench", p(&dir.path().join("missing")), "--dtype", "bf16"]);
    assert!(err.contains("missing"), "{err}");
}
