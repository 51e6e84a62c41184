//! `enec::parallel` on checkpoint containers (what `enec decompress` restores a file with):
//! `decode_container_into`, `decode_container_with` (any chunk size), `decode_entry_into` and
//! `decode_entries_into` (every entry into memory of its own, in an order the input picks), on any
//! thread count, give the bytes and the first error in file (or the given) order of a serial loop
//! over `Container::decode_entry`.
//!
//! Input: `[threads (% 5, 0: all cores), chunk, container...]`; the container is tried as it is and with its
//! checks recomputed (as in the `container` target).
#![no_main]

use std::sync::Mutex;

use enec::container::{Container, ContainerError};
use enec::parallel::{
    decode_container_into, decode_container_with, decode_entries_into, decode_entry_into, Restored,
};
use enec_fuzz::{fix_container_checks, Bytes};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: u64 = 1 << 22;

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    // 0: all the machine has (`thread_count`).
    let threads = usize::from(cfg.u8() % 5);
    let chunk = 1 + (usize::from(cfg.u8()) << 6);
    let file = cfg.rest();
    check(file, threads, chunk);
    let mut fixed = file.to_vec();
    if fix_container_checks(&mut fixed) && fixed != file {
        check(&fixed, threads, chunk);
    }
});

/// What a serial loop over the entries gives: the restored file or the first error.
fn serial(container: &Container<'_>, out: &mut [u8]) -> Result<(), ContainerError> {
    let needed = container.original_len();
    let out = usize::try_from(needed)
        .ok()
        .and_then(|len| out.get_mut(..len))
        .ok_or(ContainerError::OutputTooSmall { needed })?;
    for (number, entry) in container.entries() {
        let at = entry.original_offset as usize;
        container.decode_entry(number, &entry, &mut out[at..])?;
    }
    Ok(())
}

fn check(file: &[u8], threads: usize, chunk: usize) {
    let Ok(container) = Container::parse(file) else {
        return;
    };
    let total = container.original_len();
    if total > MAX_OUT {
        let mut small = [0u8; 16];
        assert_eq!(
            decode_container_into(&container, &mut small, threads),
            Err(ContainerError::OutputTooSmall { needed: total })
        );
        return;
    }
    let len = total as usize;
    let mut expected_out = vec![0u8; len];
    let expected = serial(&container, &mut expected_out);

    let mut out = vec![0x5au8; len];
    let r = decode_container_into(&container, &mut out, threads);
    assert_eq!(r, expected, "decode_container_into ({threads} threads) and the serial loop disagree");
    if r.is_ok() {
        assert!(out == expected_out, "decode_container_into restored other bytes");
    }

    let assembled = Mutex::new(vec![0x5au8; len]);
    let seen = Mutex::new(0u64);
    let r = decode_container_with(&container, threads, chunk, |run: Restored<'_>| {
        let at = usize::try_from(run.at).expect("offset");
        let mut a = assembled.lock().unwrap();
        assert!(at + run.bytes.len() <= a.len(), "decode_container_with: run past the end");
        a[at..at + run.bytes.len()].copy_from_slice(run.bytes);
        assert!(run.source.end <= file.len(), "decode_container_with: source past the file");
        *seen.lock().unwrap() += run.bytes.len() as u64;
        Ok::<(), ContainerError>(())
    });
    assert_eq!(r, expected, "decode_container_with ({threads} threads, chunk {chunk}) and the serial loop disagree");
    if r.is_ok() {
        assert_eq!(*seen.lock().unwrap(), total, "decode_container_with: runs missing or twice");
        assert!(*assembled.lock().unwrap() == expected_out, "decode_container_with restored other bytes");
    }

    // Every entry into its own memory, in file order or reversed (the chunk byte's lowest bit): the
    // first error in that order, else each entry's serial bytes.
    let mut order: Vec<_> = container.entries().collect();
    if chunk & 64 != 0 {
        order.reverse();
    }
    let mut first = Ok(());
    let mut wanted = Vec::new();
    for (number, entry) in &order {
        let mut one = vec![0u8; entry.original_len as usize];
        let e = container.decode_entry(*number, entry, &mut one);
        if first.is_ok() {
            first = e.map(|_| ());
        }
        wanted.push(one);
    }
    let mut mems: Vec<Vec<u8>> = order.iter().map(|(_, e)| vec![0x5au8; e.original_len as usize]).collect();
    let parts = order.iter().zip(mems.iter_mut()).map(|((n, e), m)| (*n, e.clone(), &mut m[..])).collect();
    let r = decode_entries_into(&container, parts, threads);
    assert_eq!(r, first, "decode_entries_into ({threads} threads) and the serial loop disagree");
    if r.is_ok() {
        assert!(mems == wanted, "decode_entries_into restored other bytes");
    }

    for (number, entry) in container.entries() {
        let n = entry.original_len as usize;
        let mut one = vec![0u8; n];
        let mut par = vec![0x5au8; n];
        let e = container.decode_entry(number, &entry, &mut one);
        let p = decode_entry_into(&container, number, &entry, &mut par, threads);
        assert_eq!(p, e, "decode_entry_into and decode_entry disagree on entry {number}");
        if p.is_ok() {
            assert!(par == one, "decode_entry_into restored other bytes");
        }
    }
}
