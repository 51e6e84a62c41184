//! Tests of the container functions through the C ABI, on a checkpoint made from the bundled
//! real weights (`tests/data/minilm-slice.f32.bin`, all-MiniLM-L6-v2).
#![allow(clippy::result_large_err)] // the error is the C detail struct, as C callers get it

use super::*;

use std::ffi::CStr;
use std::vec;
use std::vec::Vec;

use enec::container::{PieceMeta, Writer};
use enec::wrapped::piece_checksum;

/// The bundled weights, as fp32 values.
fn minilm() -> Vec<f32> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/minilm-slice.f32.bin"
    );
    let bytes = std::fs::read(path).expect("tests/data/minilm-slice.f32.bin");
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// bf16 by round-to-nearest-even (the weights are finite).
fn bf16_bytes(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| {
            let b = v.to_bits();
            let rounded = b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16;
            (rounded as u16).to_le_bytes()
        })
        .collect()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// One piece of the test checkpoint: (name, dtype name, shape, original bytes, enec coding).
type Piece = (
    &'static str,
    &'static str,
    Vec<u64>,
    Vec<u8>,
    Option<(Dtype, Coding)>,
);

/// A small multi-tensor checkpoint of real weights, cut like a safetensors file: the header
/// (length prefix and JSON), tensors in ranked, groups, auto and stored frames of 1,024
/// elements (the last of each tensor partial), a raw I64 tensor, a gap and trailing bytes.
/// Returns (container, original file, tensor names in order).
fn checkpoint() -> (Vec<u8>, Vec<u8>, Vec<&'static str>) {
    let w = minilm();
    let mut noise = 0x2545_F491u32;
    let random: Vec<u8> = (0..2 * 1100)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 17;
            noise ^= noise << 5;
            noise as u8
        })
        .collect();
    let ids: Vec<u8> = [3i64, 1, 4, 1]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let json = br#"{"emb":{"dtype":"BF16","shape":[5,500]},"ln":{"dtype":"F32","shape":[1300]},"__metadata__":{"format":"pt"}}  "#;
    let mut header = (json.len() as u64).to_le_bytes().to_vec();
    header.extend_from_slice(json);
    let pieces: Vec<Piece> = vec![
        ("", "", vec![], header, None),
        (
            "emb",
            "BF16",
            vec![5, 500],
            bf16_bytes(&w[..2500]),
            Some((Dtype::Bf16, Coding::Ranked)),
        ),
        (
            "ln",
            "F32",
            vec![1300],
            f32_bytes(&w[196_608..197_908]),
            Some((Dtype::Fp32, Coding::Groups)),
        ),
        ("ids", "I64", vec![4], ids, None),
        ("", "", vec![], vec![0, 0, 0, 7, 0], None),
        (
            "q",
            "BF16",
            vec![1500],
            bf16_bytes(&w[197_376..198_876]),
            Some((Dtype::Bf16, Coding::Auto)),
        ),
        (
            "noise",
            "BF16",
            vec![1100],
            random,
            Some((Dtype::Bf16, Coding::Ranked)),
        ),
        ("", "", vec![], b"trailer".to_vec(), None),
    ];
    let mut file = Vec::new();
    let mut original = Vec::new();
    let mut writer = Writer::new(&mut file).unwrap();
    for (name, dtype, shape, bytes, enec) in &pieces {
        writer.begin().unwrap();
        let (kind, checksum) = match enec {
            None => {
                writer.payload(bytes).unwrap();
                (PieceKind::Raw, piece_checksum(bytes))
            }
            Some((d, coding)) => {
                let options = EncodeOptions::new(*d)
                    .coding(*coding)
                    .frame_len(1024)
                    .unwrap();
                writer
                    .payload(&enec::encode_to_vec(&options, bytes).unwrap())
                    .unwrap();
                (PieceKind::Enec, 0)
            }
        };
        let original_len = bytes.len() as u64;
        let meta = PieceMeta {
            kind,
            name,
            dtype,
            shape,
            original_len,
            checksum,
        };
        writer.end(meta).unwrap();
        original.extend_from_slice(bytes);
    }
    writer.finish().unwrap();
    let names = pieces
        .iter()
        .filter(|p| !p.1.is_empty())
        .map(|p| p.0)
        .collect();
    (file, original, names)
}

/// Caller memory aligned to `ENEC_STATE_ALIGN`.
struct Aligned(Vec<u128>);

impl Aligned {
    fn new(bytes: usize) -> Aligned {
        Aligned(vec![0u128; bytes.div_ceil(16).max(1)])
    }
    fn ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr() as *mut c_void
    }
    fn len(&self) -> usize {
        self.0.len() * 16
    }
}

fn no_detail() -> EnecErrorDetail {
    EnecErrorDetail {
        status: EnecStatus::Other,
        frame: 7,
        value: 7,
        entry: 7,
        message: [b'?' as c_char; ENEC_MESSAGE_BYTES],
    }
}

fn message(d: &EnecErrorDetail) -> &str {
    let bytes: &[u8] =
        unsafe { slice::from_raw_parts(d.message.as_ptr() as *const u8, ENEC_MESSAGE_BYTES) };
    CStr::from_bytes_until_nul(bytes).unwrap().to_str().unwrap()
}

/// An open handle over `file`, with its memory (which must outlive it).
struct Opened {
    _mem: Aligned,
    handle: *mut EnecContainer,
}

fn open(file: &[u8]) -> Result<Opened, EnecErrorDetail> {
    let mut d = no_detail();
    let mut size = 0usize;
    let st = unsafe { enec_container_state_size(file.as_ptr(), file.len(), &mut size, &mut d) };
    if st != EnecStatus::Ok {
        return Err(d);
    }
    let mut mem = Aligned::new(size);
    let mut handle = ptr::null_mut();
    let st = unsafe {
        enec_container_open(
            mem.ptr(),
            mem.len(),
            file.as_ptr(),
            file.len(),
            &mut handle,
            &mut d,
        )
    };
    if st != EnecStatus::Ok {
        return Err(d);
    }
    Ok(Opened { _mem: mem, handle })
}

fn scratch_for(h: *const EnecContainer) -> Vec<u8> {
    let mut size = 0usize;
    assert_eq!(
        unsafe { enec_container_scratch_size(h, &mut size) },
        EnecStatus::Ok
    );
    vec![0u8; size]
}

/// The whole-file restore into a buffer, sized by the library.
fn restore(file: &[u8]) -> Result<Vec<u8>, EnecErrorDetail> {
    let c = open(file)?;
    let mut size = 0u64;
    assert_eq!(
        unsafe { enec_container_restored_size(c.handle, &mut size) },
        EnecStatus::Ok
    );
    let mut out = vec![0u8; size as usize];
    let mut scratch = scratch_for(c.handle);
    let mut d = no_detail();
    let mut len = 0usize;
    let st = unsafe {
        enec_container_restore(
            c.handle,
            out.as_mut_ptr(),
            out.len(),
            scratch.as_mut_ptr() as *mut c_void,
            scratch.len(),
            &mut len,
            &mut d,
        )
    };
    assert_eq!(d.status, st, "detail written");
    if st != EnecStatus::Ok {
        assert!(!message(&d).is_empty());
        return Err(d);
    }
    assert_eq!(len, out.len());
    Ok(out)
}

/// Appends what it is given to the `Vec<u8>` behind `ctx`; fails (returns 5) once it holds
/// `limit` bytes or more, where a limit is set.
struct Sink {
    bytes: Vec<u8>,
    limit: Option<usize>,
    calls: usize,
}

/// The write callback of the `restore_to` tests.
///
/// # Safety
/// `ctx` must be a `Sink` used by nothing else during the call; `p` must point to `n` readable
/// bytes (as `enec_container_restore_to` passes them).
unsafe extern "C" fn sink_write(ctx: *mut c_void, p: *const u8, n: usize) -> c_int {
    // SAFETY: `ctx` is the caller's `&mut Sink`, unused elsewhere during the call (the contract).
    let sink = unsafe { &mut *(ctx as *mut Sink) };
    sink.calls += 1;
    if sink.limit.is_some_and(|l| sink.bytes.len() >= l) {
        return 5;
    }
    // SAFETY: `p` points to `n` readable bytes (the contract; the restore passes no empty run).
    sink.bytes
        .extend_from_slice(unsafe { slice::from_raw_parts(p, n) });
    0
}

fn restore_to(file: &[u8], limit: Option<usize>) -> (EnecStatus, Sink, u64, EnecErrorDetail) {
    let c = open(file).map_err(|d| d.status).unwrap();
    let mut scratch = scratch_for(c.handle);
    let mut sink = Sink {
        bytes: Vec::new(),
        limit,
        calls: 0,
    };
    let mut d = no_detail();
    let mut written = 99u64;
    let st = unsafe {
        enec_container_restore_to(
            c.handle,
            Some(sink_write),
            &mut sink as *mut Sink as *mut c_void,
            scratch.as_mut_ptr() as *mut c_void,
            scratch.len(),
            &mut written,
            &mut d,
        )
    };
    assert_eq!(d.status, st);
    (st, sink, written, d)
}

#[test]
fn the_checkpoint_has_every_coding() {
    let (file, _, _) = checkpoint();
    let c = Container::parse(&file).unwrap();
    let mut codings = Vec::new();
    for (_, e) in c.entries().filter(|(_, e)| e.kind == PieceKind::Enec) {
        for f in enec::frames(c.payload(&e)).unwrap() {
            codings.push(f.unwrap().coding as u8);
        }
    }
    for coding in [
        FrameCoding::Stored,
        FrameCoding::Groups,
        FrameCoding::Ranked,
    ] {
        assert!(
            codings.contains(&(coding as u8)),
            "{coding:?} in {codings:?}"
        );
    }
}

#[test]
fn restore_equals_the_original_in_a_buffer_and_through_a_callback() {
    let (file, original, _) = checkpoint();
    assert_eq!(restore(&file).unwrap(), original);
    let (st, sink, written, d) = restore_to(&file, None);
    assert_eq!(st, EnecStatus::Ok);
    assert_eq!((d.entry, message(&d)), (ENEC_NO_ENTRY, ""));
    assert_eq!(written, original.len() as u64);
    assert!(sink.calls > 8, "one call per piece or frame");
    assert_eq!(sink.bytes, original);
}

#[test]
fn a_failing_callback_stops_the_restore() {
    let (file, original, _) = checkpoint();
    let (st, sink, written, d) = restore_to(&file, Some(3000));
    assert_eq!(st, EnecStatus::WriteFailed);
    assert_eq!(d.value, 5);
    assert_eq!(written, sink.bytes.len() as u64);
    assert_eq!(sink.bytes[..], original[..sink.bytes.len()]);
    assert!(message(&d).contains("returned 5"), "{}", message(&d));
}

#[test]
fn restore_checks_its_arguments_and_always_writes_detail() {
    let (file, original, _) = checkpoint();
    let c = open(&file).unwrap();
    let mut scratch = scratch_for(c.handle);
    assert!(!scratch.is_empty());
    let mut out = vec![0u8; original.len()];
    let mut len = 0usize;
    let (o, s) = (out.as_mut_ptr(), scratch.as_mut_ptr() as *mut c_void);
    let cases: [(usize, usize, EnecStatus); 3] = [
        (
            original.len() - 1,
            scratch.len(),
            EnecStatus::OutputTooSmall,
        ),
        (
            original.len(),
            scratch.len() - 1,
            EnecStatus::InvalidArgument,
        ),
        (original.len(), scratch.len(), EnecStatus::Ok),
    ];
    for (out_cap, scratch_len, want) in cases {
        let mut d = no_detail();
        let st = unsafe {
            enec_container_restore(c.handle, o, out_cap, s, scratch_len, &mut len, &mut d)
        };
        assert_eq!((st, d.status), (want, want));
        if want == EnecStatus::OutputTooSmall {
            assert_eq!(d.value, original.len() as u64);
        }
        if want == EnecStatus::InvalidArgument {
            assert_eq!(d.value, scratch.len() as u64);
            assert!(message(&d).contains("scratch"), "{}", message(&d));
        }
    }
    let mut d = no_detail();
    let st = unsafe {
        enec_container_restore(
            c.handle,
            o,
            out.len(),
            s,
            scratch.len(),
            ptr::null_mut(),
            &mut d,
        )
    };
    assert_eq!(
        (st, d.status),
        (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
    );
    assert!(message(&d).starts_with("invalid argument"));
    let mut d = no_detail();
    let st = unsafe {
        enec_container_restore_to(
            c.handle,
            None,
            ptr::null_mut(),
            s,
            scratch.len(),
            ptr::null_mut(),
            &mut d,
        )
    };
    assert_eq!(
        (st, d.status),
        (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
    );
    let mut d = no_detail();
    let st = unsafe {
        enec_container_restore(
            ptr::null(),
            o,
            out.len(),
            s,
            scratch.len(),
            &mut len,
            &mut d,
        )
    };
    assert_eq!(
        (st, d.status),
        (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
    );
}

#[test]
fn detail_is_written_on_not_found_and_invalid_argument() {
    let (file, _, names) = checkpoint();
    let c = open(&file).unwrap();
    let mut out = vec![0u8; 1 << 16];
    let mut len = 0usize;
    let count = names.len() as u64;
    let mut d = no_detail();
    let st = unsafe {
        enec_container_decode_tensor(
            c.handle,
            count,
            out.as_mut_ptr(),
            out.len(),
            &mut len,
            &mut d,
        )
    };
    assert_eq!((st, d.status), (EnecStatus::NotFound, EnecStatus::NotFound));
    assert_eq!((d.frame, d.value, d.entry), (0, 0, ENEC_NO_ENTRY));
    assert!(message(&d).contains("no tensor number"), "{}", message(&d));
    for null_out_len in [true, false] {
        let mut d = no_detail();
        let (o, l) = if null_out_len {
            (out.as_mut_ptr(), ptr::null_mut())
        } else {
            (ptr::null_mut(), &mut len as *mut usize)
        };
        let st = unsafe { enec_container_decode_tensor(c.handle, 0, o, 8, l, &mut d) };
        assert_eq!(
            (st, d.status),
            (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
        );
        assert_eq!(d.entry, ENEC_NO_ENTRY);
        assert!(
            message(&d).starts_with("invalid argument"),
            "{}",
            message(&d)
        );
    }
    // Too little handle memory: the bytes needed are in the detail.
    let mut mem = Aligned::new(64);
    let mut handle = ptr::null_mut();
    let mut d = no_detail();
    let st = unsafe {
        enec_container_open(
            mem.ptr(),
            16,
            file.as_ptr(),
            file.len(),
            &mut handle,
            &mut d,
        )
    };
    assert_eq!(
        (st, d.status),
        (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
    );
    assert!(d.value > 16 + 16 * count, "{}", d.value);
    // The one-shot codec too.
    let mut d = no_detail();
    let st = unsafe { enec_decode(ptr::null(), 5, out.as_mut_ptr(), 8, &mut len, &mut d) };
    assert_eq!(
        (st, d.status),
        (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
    );
    let options = enec_options_default(77);
    let mut d = no_detail();
    let st = unsafe {
        enec_encode(
            &options,
            out.as_ptr(),
            8,
            out.as_mut_ptr(),
            8,
            &mut len,
            &mut d,
        )
    };
    assert_eq!(
        (st, d.status),
        (EnecStatus::InvalidArgument, EnecStatus::InvalidArgument)
    );
    // And success.
    let mut d = no_detail();
    let st = unsafe {
        enec_container_decode_tensor(c.handle, 0, out.as_mut_ptr(), out.len(), &mut len, &mut d)
    };
    assert_eq!(
        (st, d.status, message(&d)),
        (EnecStatus::Ok, EnecStatus::Ok, "")
    );
}

#[test]
fn tensors_by_number_match_the_index() {
    let (file, original, names) = checkpoint();
    let c = open(&file).unwrap();
    let mut count = 0u64;
    assert_eq!(
        unsafe { enec_container_tensor_count(c.handle, &mut count) },
        EnecStatus::Ok
    );
    assert_eq!(count, names.len() as u64);
    let parsed = Container::parse(&file).unwrap();
    let tensors: Vec<Entry> = parsed
        .entries()
        .map(|(_, e)| e)
        .filter(|e| e.is_tensor())
        .collect();
    for (i, e) in tensors.iter().enumerate() {
        let mut info = blank_info();
        assert_eq!(
            unsafe { enec_container_tensor(c.handle, i as u64, &mut info) },
            EnecStatus::Ok
        );
        let name = unsafe { slice::from_raw_parts(info.name as *const u8, info.name_len) };
        assert_eq!((info.index, name), (i as u64, e.name.as_bytes()));
        assert_eq!(
            (info.original_offset, info.bytes),
            (e.original_offset, e.original_len)
        );
        let mut by_name = info;
        let st = unsafe { enec_container_find(c.handle, info.name, info.name_len, &mut by_name) };
        assert_eq!((st, by_name.index), (EnecStatus::Ok, i as u64));
        let mut out = vec![0u8; info.bytes as usize];
        let mut len = 0usize;
        let st = unsafe {
            enec_container_decode_tensor(
                c.handle,
                i as u64,
                out.as_mut_ptr(),
                out.len(),
                &mut len,
                ptr::null_mut(),
            )
        };
        assert_eq!(st, EnecStatus::Ok);
        let at = e.original_offset as usize;
        assert_eq!(out, original[at..at + len]);
    }
    let mut info = blank_info();
    let st = unsafe { enec_container_tensor(c.handle, count, &mut info) };
    assert_eq!(st, EnecStatus::NotFound);
}

/// Four threads share one handle and decode different tensors (and restore the whole file):
/// the results equal the serial ones.
#[test]
fn one_handle_shared_by_four_threads() {
    let (file, original, names) = checkpoint();
    let c = open(&file).unwrap();
    let serial: Vec<Vec<u8>> = (0..names.len() as u64)
        .map(|i| decode_tensor(c.handle, i))
        .collect();
    let handle = c.handle as usize; // the handle is shared read-only: see EnecContainer
    let (names, original) = (&names, &original);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4usize)
            .map(|t| {
                s.spawn(move || {
                    let h = handle as *const EnecContainer;
                    let mut got = Vec::new();
                    for round in 0..20 {
                        for i in (0..names.len()).filter(|i| (i + round) % 4 == t) {
                            got.push((i, decode_tensor(h, i as u64)));
                        }
                    }
                    let mut scratch = scratch_for(h);
                    let mut out = vec![0u8; original.len()];
                    let mut len = 0;
                    let st = unsafe {
                        enec_container_restore(
                            h,
                            out.as_mut_ptr(),
                            out.len(),
                            scratch.as_mut_ptr() as *mut c_void,
                            scratch.len(),
                            &mut len,
                            ptr::null_mut(),
                        )
                    };
                    assert_eq!(st, EnecStatus::Ok);
                    (got, out)
                })
            })
            .collect();
        for w in workers {
            let (got, out) = w.join().unwrap();
            assert!(!got.is_empty());
            for (i, bytes) in got {
                assert_eq!(bytes, serial[i], "tensor {i}");
            }
            assert_eq!(&out, original);
        }
    });
}

fn decode_tensor(h: *const EnecContainer, i: u64) -> Vec<u8> {
    let mut info = EnecTensorInfo {
        index: 0,
        name: ptr::null(),
        name_len: 0,
        dtype_name: ptr::null(),
        dtype_name_len: 0,
        dtype: 0,
        rank: 0,
        shape: [0; ENEC_MAX_RANK],
        bytes: 0,
        stored_bytes: 0,
        original_offset: 0,
        stored_offset: 0,
    };
    assert_eq!(
        unsafe { enec_container_tensor(h, i, &mut info) },
        EnecStatus::Ok
    );
    let mut out = vec![0u8; info.bytes as usize];
    let mut len = 0usize;
    let st = unsafe {
        enec_container_decode_tensor(h, i, out.as_mut_ptr(), out.len(), &mut len, ptr::null_mut())
    };
    assert_eq!(st, EnecStatus::Ok);
    out
}

/// Every single bit of the container flipped, one at a time: the whole-file restore (open, then
/// restore) reports an error for each, with a message, and never returns bytes as good.
#[test]
fn every_flipped_bit_is_reported() {
    let (file, original, _) = checkpoint();
    assert_eq!(restore(&file).unwrap(), original);
    let bits = file.len() * 8;
    let threads = 2;
    let missed: Vec<usize> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let file = &file;
                s.spawn(move || {
                    let mut bad = file.clone();
                    let mut missed = Vec::new();
                    for bit in (t..bits).step_by(threads) {
                        bad[bit / 8] ^= 1 << (bit % 8);
                        if restore(&bad).is_ok() {
                            missed.push(bit);
                        }
                        bad[bit / 8] ^= 1 << (bit % 8);
                    }
                    missed
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(
        missed.is_empty(),
        "{} of {bits} flips not reported, first bits: {:?}",
        missed.len(),
        &missed[..missed.len().min(20)]
    );
}

/// The flips in the verbatim pieces are named as such, with their entry.
#[test]
fn a_flip_in_the_file_header_is_a_piece_checksum_mismatch() {
    let (mut file, _, _) = checkpoint();
    file[32 + 20] ^= 0x04; // inside the JSON header, the first piece
    let d = restore(&file).unwrap_err();
    assert_eq!((d.status, d.entry), (EnecStatus::PieceChecksumMismatch, 0));
    assert!(message(&d).contains("entry 0"), "{}", message(&d));
    assert!(message(&d).contains("the file header"), "{}", message(&d));
    let text = unsafe { CStr::from_ptr(enec_status_message(d.status as i32)) };
    assert!(text.to_str().unwrap().contains("verbatim"));
}

/// Every status has its own message.
#[test]
fn status_messages_are_distinct() {
    let texts: Vec<&CStr> = (0..=29)
        .map(|s| unsafe { CStr::from_ptr(enec_status_message(s)) })
        .collect();
    for (i, a) in texts.iter().enumerate() {
        assert_ne!(a.to_str().unwrap(), "unknown error", "status {i}");
        for b in &texts[..i] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(
        unsafe { CStr::from_ptr(enec_status_message(30)) }.to_str(),
        Ok("unknown error")
    );
}

/// A flip in the zero padding of a stored frame decodes to the right bytes with the right
/// checksum; the restore names it as a non-canonical frame of its tensor.
#[test]
fn a_flip_in_frame_padding_is_a_noncanonical_frame() {
    let (mut file, _, _) = checkpoint();
    let (number, last) = {
        let c = Container::parse(&file).unwrap();
        let (number, noise) = c.find("noise").unwrap();
        (number, (noise.offset + noise.len - 1) as usize)
    };
    file[last] ^= 0x80;
    let d = restore(&file).unwrap_err();
    assert_eq!(
        (d.status, d.entry, d.frame),
        (EnecStatus::NoncanonicalFrame, number, 1)
    );
    assert!(message(&d).contains("tensor \"noise\""), "{}", message(&d));
    // Decoding the tensor alone does not look at the padding.
    let h = open(&file).unwrap();
    let mut info = blank_info();
    let st = unsafe { enec_container_find(h.handle, c"noise".as_ptr(), 5, &mut info) };
    assert_eq!(st, EnecStatus::Ok);
    let mut out = vec![0u8; info.bytes as usize];
    let mut len = 0usize;
    let st = unsafe {
        enec_container_decode_tensor(
            h.handle,
            info.index,
            out.as_mut_ptr(),
            out.len(),
            &mut len,
            ptr::null_mut(),
        )
    };
    assert_eq!(st, EnecStatus::Ok);
}

/// An `EnecTensorInfo` to be overwritten.
fn blank_info() -> EnecTensorInfo {
    // SAFETY: every field is an integer or a raw pointer, for which all-zero bytes are valid.
    unsafe { core::mem::zeroed() }
}

/// A safetensors file written by hand (so that names can carry JSON escapes): `(json key,
/// json dtype, shape, bytes)` in data order.
fn handmade(tensors: &[(&str, &str, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut json = std::string::String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut at = 0;
    for (key, dtype, shape, bytes) in tensors {
        let dims: Vec<std::string::String> = shape.iter().map(|d| d.to_string()).collect();
        let end = at + bytes.len();
        json += &std::format!(
            ",\"{key}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{end}]}}",
            dims.join(",")
        );
        at = end;
    }
    json.push('}');
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(json.as_bytes());
    for (.., bytes) in tensors {
        file.extend_from_slice(bytes);
    }
    file
}

fn compressed(file: &[u8]) -> Vec<u8> {
    let pieces = enec::checkpoint::plan_file(file).unwrap();
    let mut packed = Vec::new();
    let options = EncodeOptions::new(Dtype::Bf16);
    enec::checkpoint::compress(file, &pieces, &options, 1, &mut packed, &|_| {}).unwrap();
    packed
}

/// A file of many tiny tensors, some kept in a run of verbatim bytes between enec pieces: the
/// handle lists every tensor the safetensors header names, in file order, names and dtype names
/// with JSON escapes resolved, and decodes each; a flip in the run is reported when one of its
/// tensors is decoded; a name the header holds twice is refused.
#[test]
fn tensors_kept_in_runs_are_listed_and_decoded() {
    let big = bf16_bytes(&minilm()[..32768]);
    let mut tensors = vec![("big", "BF16", vec![32768], big.clone())];
    for i in 0..300u32 {
        let key = std::format!("t{i}");
        tensors.push((
            Box::leak(key.into_boxed_str()),
            "I32",
            vec![1],
            i.to_le_bytes().to_vec(),
        ));
    }
    tensors.push((
        "caf\\u00e9\\/x",
        "F\\u0033\\u0032",
        vec![1, 1],
        vec![1, 2, 3, 4],
    ));
    tensors.push(("empty", "F32", vec![0, 3], vec![]));
    tensors.push(("big2", "BF16", vec![32768], big));
    let file = handmade(&tensors);
    let packed = compressed(&file);
    let parsed = Container::parse(&packed).unwrap();
    let indexed = parsed.entries().filter(|(_, e)| e.is_tensor()).count();
    assert!(
        indexed < 50,
        "{indexed} tensors indexed: the tiny ones should be in runs"
    );
    let mut want = enec::checkpoint::safetensors::parse(&file).unwrap();
    enec::checkpoint::safetensors::sort(&mut want);
    let h = open(&packed).unwrap();
    let mut count = 0;
    assert_eq!(
        unsafe { enec_container_tensor_count(h.handle, &mut count) },
        EnecStatus::Ok
    );
    assert_eq!(count, want.len() as u64);
    let text = |p: *const c_char, n: usize| unsafe { slice::from_raw_parts(p as *const u8, n) };
    for (i, t) in want.iter().enumerate() {
        let mut info = blank_info();
        assert_eq!(
            unsafe { enec_container_tensor(h.handle, i as u64, &mut info) },
            EnecStatus::Ok
        );
        assert_eq!(text(info.name, info.name_len), t.name.as_bytes());
        assert_eq!(
            text(info.dtype_name, info.dtype_name_len),
            t.dtype.as_bytes()
        );
        assert_eq!(&info.shape[..info.rank as usize], &t.shape[..]);
        assert_eq!(
            (info.original_offset, info.bytes),
            (t.start, t.end - t.start)
        );
        let (start, end) = (t.start as usize, t.end as usize);
        assert!(
            decode_tensor(h.handle, i as u64) == file[start..end],
            "{}",
            t.name
        );
        if info.dtype == 0 && info.stored_bytes > 0 {
            let at = info.stored_offset as usize;
            assert!(
                packed[at..at + end - start] == file[start..end],
                "{}",
                t.name
            );
        }
        let mut by_name = blank_info();
        let st = unsafe {
            enec_container_find(
                h.handle,
                t.name.as_ptr() as *const c_char,
                t.name.len(),
                &mut by_name,
            )
        };
        assert_eq!(
            (st, by_name.index),
            (EnecStatus::Ok, i as u64),
            "{}",
            t.name
        );
    }
    assert!(want.iter().any(|t| t.name == "café/x" && t.dtype == "F32"));
    // A flip in the run that holds t0 .. t299 (not the header's): decoding t5 reports it.
    let t5 = want.iter().position(|t| t.name == "t5").unwrap();
    let mut info = blank_info();
    unsafe { enec_container_tensor(h.handle, t5 as u64, &mut info) };
    let mut bad = packed.clone();
    bad[info.stored_offset as usize] ^= 1;
    let h = open(&bad).unwrap();
    let mut out = [0u8; 4];
    let (mut len, mut d) = (0usize, no_detail());
    let st = unsafe {
        enec_container_decode_tensor(h.handle, t5 as u64, out.as_mut_ptr(), 4, &mut len, &mut d)
    };
    assert_eq!(st, EnecStatus::PieceChecksumMismatch, "{}", message(&d));
    // A name held twice: compressing keeps the last; the handle lists nothing and says why, and
    // the whole file still restores.
    let twice = handmade(&[("a", "U8", vec![1], vec![1]), ("a", "U8", vec![1], vec![2])]);
    let packed = compressed(&twice);
    let h = open(&packed).unwrap();
    let st = unsafe { enec_container_tensor_count(h.handle, &mut count) };
    assert_eq!(st, EnecStatus::CorruptContainer);
    let mut info = blank_info();
    let st = unsafe { enec_container_tensor(h.handle, 0, &mut info) };
    assert_eq!(st, EnecStatus::CorruptContainer);
    let st = unsafe { enec_container_find(h.handle, c"a".as_ptr(), 1, &mut info) };
    assert_eq!(st, EnecStatus::CorruptContainer);
    let mut d = no_detail();
    let st =
        unsafe { enec_container_decode_tensor(h.handle, 0, out.as_mut_ptr(), 4, &mut len, &mut d) };
    assert_eq!(st, EnecStatus::CorruptContainer);
    assert!(message(&d).contains("\"a\" twice"), "{}", message(&d));
    assert_eq!(restore(&packed).unwrap(), twice);
    // A damaged header: the per-tensor calls say so, and so does the restore.
    let mut bad = compressed(&file);
    bad[32 + 20] ^= 1;
    let h = open(&bad).unwrap();
    let st = unsafe { enec_container_tensor_count(h.handle, &mut count) };
    assert_eq!(st, EnecStatus::PieceChecksumMismatch);
    let d = restore(&bad).unwrap_err();
    assert_eq!(d.status, EnecStatus::PieceChecksumMismatch);
}
