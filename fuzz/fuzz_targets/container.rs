//! Arbitrary bytes into the checkpoint-container reader (`enec::container`, FORMAT.md section
//! 9), the format `enec compress` writes and device loaders read: `Container::parse`, the
//! entries, `find`, and `decode_entry` of every entry.
//!
//! Never a panic, no allocation, bounded time; on success every entry's decoded bytes are
//! consistent: a raw piece is its payload, an enec piece is what the one-shot stream decoder
//! gives for its payload. Each payload starts where `pad32` puts it (the previous payload's end
//! rounded up), and `Entry::raw` rebuilds every verified raw piece's index entry from its fields
//! and bytes.
//!
//! The input is tried as it is and with its header check, index checksum and footer check
//! recomputed (from the footer's own offsets), so that mutations of the index and the header
//! reach the rules behind the checks.
#![no_main]

use enec::container::{pad32, Container, Entry, PieceKind, ALIGN, HEADER_BYTES};
use enec_fuzz::{fix_container_checks as fix_checks, no_alloc};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: usize = 1 << 22;

fuzz_target!(|input: &[u8]| {
    check(input);
    let mut fixed = input.to_vec();
    if fix_checks(&mut fixed) && fixed != input {
        check(&fixed);
    }
});

fn check(file: &[u8]) {
    let Ok(container) = no_alloc("Container::parse", || Container::parse(file)) else {
        return;
    };
    let mut out = vec![0u8; 64];
    let entries: Vec<_> = container.entries().collect();
    assert_eq!(entries.len() as u64, container.index().entry_count());
    let mut original = 0u64;
    let mut payload_end = HEADER_BYTES as u64;
    for (count, (number, entry)) in entries.into_iter().enumerate() {
        assert_eq!(number, count as u64);
        assert_eq!(entry.original_offset, original);
        original += entry.original_len;
        let payload = container.payload(&entry);
        assert_eq!(payload.len() as u64, entry.len);
        // Payloads follow each other, each at the next multiple of ALIGN.
        let at = pad32(payload_end);
        assert!(at >= payload_end && at - payload_end < ALIGN && at % ALIGN == 0);
        assert_eq!(entry.offset, at, "payload not where pad32 puts it");
        payload_end = entry.offset + entry.len;
        if entry.is_tensor() {
            let (n, _) = container.find(entry.name).expect("find() missed a tensor");
            assert!(n <= number, "find() returned a later entry");
        }
        let Ok(len) = usize::try_from(entry.original_len) else {
            continue;
        };
        if len > MAX_OUT {
            continue;
        }
        out.clear();
        out.resize(len + 8, 0xa5);
        let r = no_alloc("decode_entry", || {
            container.decode_entry(number, &entry, &mut out)
        });
        assert!(
            out[len..].iter().all(|&b| b == 0xa5),
            "decode_entry wrote past the entry"
        );
        let Ok(n) = r else { continue };
        assert_eq!(n, len);
        match entry.kind {
            PieceKind::Raw => {
                assert_eq!(&out[..n], payload, "raw piece decoded to other bytes");
                // Verified, so the index entry is exactly what `Entry::raw` makes of the piece.
                let rebuilt = Entry::raw(
                    entry.name,
                    entry.dtype,
                    &entry.shape,
                    entry.original_offset,
                    entry.original_len,
                    entry.offset,
                    payload,
                );
                assert_eq!(
                    rebuilt, entry,
                    "Entry::raw differs from the parsed raw entry"
                );
            }
            PieceKind::Enec => {
                let mut again = vec![0u8; n];
                assert_eq!(enec::decode(payload, &mut again), Ok(n));
                assert_eq!(&out[..n], &again[..], "enec piece differs from its stream");
            }
        }
    }
    assert_eq!(original, container.original_len());
    assert_eq!(
        pad32(payload_end),
        container.index().index_offset(),
        "the index does not start where pad32 puts it"
    );
}
