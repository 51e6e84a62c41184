//! `container::Writer`: any sequence of pieces (verbatim and enec-coded, tensors or not, any
//! names, shapes and payload chunkings) makes a container that `Container::parse` accepts and
//! that reads back exactly: the entries as written, every piece restored to its original bytes
//! by `decode_entry` and by `parallel::decode_container_into`; a shape of more than
//! `MAX_RANK` dimensions is refused. Never a panic.
//!
//! Input: pieces, each `[kind_dtype_name, len_lo, len_hi, rank_chunk, data...]` (kind bit 0:
//! enec; bits 1-2: dtype; bits 3-5: name length; bits 6-7: coding; `len` elements of data
//! bytes tiled from the input; `rank_chunk`: rank in bits 0-4, payload write size in bits 5-7).
#![no_main]

use enec::container::{Container, PieceKind, PieceMeta, Writer, MAX_RANK};
use enec::wrapped::piece_checksum;
use enec::{encode, max_encoded_size, EncodeOptions};
use enec_fuzz::{coding_of, dtype_of, Bytes};
use libfuzzer_sys::fuzz_target;

struct Piece {
    kind: PieceKind,
    name: String,
    dtype: &'static str,
    shape: Vec<u64>,
    original: Vec<u8>,
    payload: Vec<u8>,
    chunk: usize,
}

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    let mut pieces = Vec::new();
    while !cfg.0.is_empty() && pieces.len() < 12 {
        let h = cfg.u8();
        let len = usize::from(cfg.u16() % 4096);
        let rc = cfg.u8();
        let name: String = (0..(h >> 3) & 7).map(|_| char::from(b'a' + cfg.u8() % 26)).collect();
        let tile: Vec<u8> = cfg.0.iter().copied().take(64).collect();
        let dtype = dtype_of((h >> 1) & 3);
        let eb = dtype.element_bytes();
        let bytes = len * eb;
        let original: Vec<u8> = if tile.is_empty() {
            vec![0u8; bytes]
        } else {
            (0..bytes).map(|i| tile[i % tile.len()] ^ (i as u8)).collect()
        };
        let rank = usize::from(rc & 31) % (MAX_RANK + 2);
        let shape: Vec<u64> = (0..rank).map(|i| if i == 0 { len as u64 } else { 1 }).collect();
        let chunk = 1 + (usize::from(rc >> 5) << 6);
        let piece = if h & 1 == 1 {
            let options = EncodeOptions::new(dtype).coding(coding_of(h >> 6)).frame_len(1024).unwrap();
            let mut s = vec![0u8; max_encoded_size(&options, bytes).unwrap()];
            let n = encode(&options, &original, &mut s).unwrap();
            s.truncate(n);
            let dtype = enec::container::safetensors_dtype_name(dtype);
            Piece { kind: PieceKind::Enec, name, dtype, shape, original, payload: s, chunk }
        } else if name.is_empty() && rank == 0 {
            // Not a tensor (file header, gap).
            let payload = original.clone();
            Piece { kind: PieceKind::Raw, name, dtype: "", shape, original, payload, chunk }
        } else {
            let payload = original.clone();
            Piece { kind: PieceKind::Raw, name, dtype: "I64", shape, original, payload, chunk }
        };
        pieces.push(piece);
    }

    let mut file = Vec::new();
    let mut writer = Writer::new(&mut file).expect("Writer::new");
    let mut written = Vec::new();
    for p in &pieces {
        writer.begin().unwrap();
        for c in p.payload.chunks(p.chunk) {
            writer.payload(c).unwrap();
        }
        let checksum = match p.kind {
            PieceKind::Raw => piece_checksum(&p.original),
            PieceKind::Enec => 0,
        };
        let meta = PieceMeta {
            kind: p.kind,
            name: &p.name,
            dtype: p.dtype,
            shape: &p.shape,
            original_len: p.original.len() as u64,
            checksum,
        };
        let r = writer.end(meta);
        if p.shape.len() > MAX_RANK {
            let e = r.expect_err("a shape of more than MAX_RANK dimensions accepted");
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            return;
        }
        r.expect("Writer::end");
        written.push(p);
    }
    let size = writer.finish().expect("Writer::finish");
    assert_eq!(size, file.len() as u64);

    let container = Container::parse(&file).expect("a written container does not parse");
    let whole: Vec<u8> = written.iter().flat_map(|p| p.original.clone()).collect();
    assert_eq!(container.original_len(), whole.len() as u64);
    let entries: Vec<_> = container.entries().collect();
    assert_eq!(entries.len(), written.len());
    for ((number, e), p) in entries.into_iter().zip(&written) {
        assert_eq!((e.kind, e.name, e.dtype), (p.kind, &p.name[..], p.dtype));
        assert_eq!(&e.shape[..], &p.shape[..]);
        assert_eq!(container.payload(&e), &p.payload[..]);
        let mut out = vec![0u8; p.original.len()];
        assert_eq!(container.decode_entry(number, &e, &mut out), Ok(out.len()));
        assert!(out == p.original, "piece {number} restored to other bytes");
        if e.is_tensor() {
            let (n, _) = container.find(e.name).expect("find() missed a tensor");
            assert!(n <= number);
        }
    }
    let mut out = vec![0x5au8; whole.len()];
    enec::parallel::decode_container_into(&container, &mut out, 2).expect("parallel restore");
    assert!(out == whole, "the restored file differs from the pieces written");
});
