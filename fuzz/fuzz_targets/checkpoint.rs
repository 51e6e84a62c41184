//! `enec::checkpoint` (what `enec compress` / `decompress` and Python's conversions call).
//!
//! Mode bit 0 set: the rest is any file. `open` and `plan_file` never panic; a file `open`
//! recognises restores through `restore_with` on 1 and on `threads` threads with the same
//! result (the same bytes, or an error each), and an error is described without panicking.
//! Mode bit 0 clear: the rest builds a safetensors file (tensors of every dtype enec codes and
//! of others, names and shapes from the input, metadata) that `plan_file` must accept;
//! `compress` on `threads` threads writes the bytes it writes on one, and the container
//! restores the file byte for byte.
//!
//! Input: `[threads (% 4, 0: all cores), mode, options (dtype byte unused), data...]`.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Mutex;

use enec::checkpoint::{self, safetensors, Kind};
use enec::parallel::Restored;
use enec_fuzz::{options_of, Bytes};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: u64 = 1 << 22;

/// Dtype names a tensor may take: those enec codes, and others kept verbatim.
const DTYPES: [(&str, usize); 8] = [
    ("BF16", 2),
    ("F16", 2),
    ("F32", 4),
    ("F8_E4M3", 1),
    ("F8_E5M2", 1),
    ("I64", 8),
    ("U8", 1),
    ("F64", 8),
];

fuzz_target!(|input: &[u8]| on_own_thread(|| check(input)));

/// Runs `f` on a thread of its own. The calling thread of `enec::parallel`'s channels takes a
/// thread-local (32 bytes, freed when that thread ends): on libFuzzer's thread, which ends
/// after LeakSanitizer looks, that reads as a leak.
fn on_own_thread(f: impl FnOnce() + Send) {
    std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|e| std::panic::resume_unwind(e));
}

fn check(input: &[u8]) {
    let mut cfg = Bytes(input);
    let threads = usize::from(cfg.u8() % 4);
    let mode = cfg.u8();
    if mode & 1 == 1 {
        any_file(cfg.rest(), threads);
        return;
    }
    let options = options_of(&mut cfg);
    let file = safetensors_of(cfg.rest());
    let pieces = checkpoint::plan_file(&file).expect("a written safetensors file is accepted");
    let compress = |threads| {
        let mut out = Vec::new();
        let summary = checkpoint::compress(&file, &pieces, &options, threads, &mut out, &|_| {})
            .expect("compress");
        assert_eq!(summary.compressed, out.len() as u64, "summary length");
        out
    };
    let one = compress(1);
    assert!(compress(threads) == one, "compress differs between thread counts");
    let kind = checkpoint::open(&one).expect("a compressed file opens");
    assert!(matches!(kind, Kind::Container(_)), "a checkpoint is a container");
    let restored = restore(&one, &kind, threads).expect("restore");
    assert!(restored == file, "the container restores other bytes");
}

/// Any bytes: recognised or refused, restored alike on any thread count.
fn any_file(data: &[u8], threads: usize) {
    let _ = checkpoint::plan_file(data);
    let Ok(kind) = checkpoint::open(data) else {
        return;
    };
    if kind.original_len() > MAX_OUT {
        return;
    }
    let serial = restore(data, &kind, 1);
    let parallel = restore(data, &kind, threads);
    match (&serial, &parallel) {
        (Ok(a), Ok(b)) => assert!(a == b, "restores differ between thread counts"),
        (Err(_), Err(_)) => {}
        _ => panic!(
            "one thread count restores, another fails: {:?} / {:?}",
            serial.as_ref().map(Vec::len),
            parallel.as_ref().map(Vec::len)
        ),
    }
    if let (Kind::Container(c), Err(checkpoint::Error::Container(e))) = (&kind, serial) {
        let _ = checkpoint::describe_error(c, e);
    }
}

/// The original restored into memory, or the error.
fn restore(data: &[u8], kind: &Kind<'_>, threads: usize) -> Result<Vec<u8>, checkpoint::Error> {
    let out = Mutex::new(vec![0u8; kind.original_len() as usize]);
    checkpoint::restore_with(data, kind, threads, |run: Restored<'_>| {
        let mut out = out.lock().unwrap();
        let at = run.at as usize;
        out[at..at + run.bytes.len()].copy_from_slice(run.bytes);
        Ok(())
    })?;
    Ok(out.into_inner().unwrap())
}

/// A safetensors file built from `raw`: per tensor `[dtype, elements (u8), name length]`, then
/// its bytes taken from the input (repeated where short).
fn safetensors_of(raw: &[u8]) -> Vec<u8> {
    let mut cfg = Bytes(raw);
    let count = usize::from(cfg.u8() % 6);
    let mut specs = Vec::new();
    for t in 0..count {
        let (dtype, size) = DTYPES[usize::from(cfg.u8()) % DTYPES.len()];
        // Up to 2^15 elements: several frames at the smallest frame length.
        let elements = usize::from(cfg.u16() >> 1);
        let name = format!("t{t}.{}", "x".repeat(usize::from(cfg.u8() % 4)));
        specs.push((name, dtype, elements, size));
    }
    let rest = cfg.rest();
    let bytes: Vec<Vec<u8>> = specs
        .iter()
        .map(|(_, _, elements, size)| {
            let n = elements * size;
            if rest.is_empty() {
                vec![0; n]
            } else {
                rest.iter().copied().cycle().take(n).collect()
            }
        })
        .collect();
    let tensors: Vec<safetensors::NewTensor<'_>> = specs
        .iter()
        .zip(&bytes)
        .map(|((name, dtype, elements, _), b)| (name.as_str(), *dtype, vec![*elements as u64], &b[..]))
        .collect();
    let metadata = BTreeMap::from([("format".to_owned(), "pt".to_owned())]);
    safetensors::write(&tensors, &metadata)
}
