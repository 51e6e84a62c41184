//! The C ABI (`ffi/capi`), called through its `extern "C"` functions as C would: no panic, no
//! undefined behaviour (AddressSanitizer), and results that agree with the Rust library.
//!
//! - Containers (mode bit 0 set; the rest is a container, also tried with its checks
//!   recomputed): `enec_container_state_size` and `enec_container_open` agree; every tensor
//!   `enec_container_tensor` lists is found by `enec_container_find` and restored by
//!   `enec_container_decode_tensor` to the bytes a serial Rust restore gives (or fails); the
//!   handle lists the tensors of the index and those `enec::checkpoint::unindexed` finds in
//!   runs of verbatim bytes, and fails to list exactly where that fails;
//!   `enec_container_restore` and `enec_container_restore_to` either fail or give the Rust
//!   restore's bytes, fail wherever the Rust restore does, report identical errors (status and
//!   detail) on every call and to each other, write only a verified prefix before an error,
//!   and refuse short output or scratch memory.
//! - Streams (mode bit 0 clear; the rest is `[dtype, frame_len code, coding, checksums,
//!   chunk bytes (2), data...]`, the data also tried as a stream): `enec_encode` /
//!   `enec_decode` / `enec_read_header` / `enec_max_encoded_size` and the streaming
//!   `enec_encoder_*` / `enec_decoder_*` in caller memory give the Rust results; unknown enum
//!   values are refused.
#![no_main]

use core::ffi::{c_int, c_void};
use std::ptr;

use enec::container::Container;
use enec_capi::*;
use enec_fuzz::streaming::Chunks;
use enec_fuzz::{fix_container_checks, fix_header_check, Bytes};
use libfuzzer_sys::fuzz_target;

const MAX_OUT: u64 = 1 << 22;

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    let mode = cfg.u8();
    if mode & 1 == 1 {
        let file = cfg.rest();
        container(file, mode >> 1);
        let mut fixed = file.to_vec();
        if fix_container_checks(&mut fixed) && fixed != file {
            container(&fixed, mode >> 1);
        }
    } else {
        stream(cfg, mode >> 1);
    }
});

/// Caller memory aligned to `ENEC_STATE_ALIGN`.
fn aligned(bytes: usize) -> Vec<u128> {
    vec![0u128; bytes.div_ceil(16).max(1)]
}

fn detail() -> EnecErrorDetail {
    EnecErrorDetail {
        status: EnecStatus::Ok,
        frame: 0,
        value: 0,
        entry: 0,
        message: [0; ENEC_MESSAGE_BYTES],
    }
}

fn same(a: &EnecErrorDetail, b: &EnecErrorDetail) -> bool {
    (a.status, a.frame, a.value, a.entry, a.message) == (b.status, b.frame, b.value, b.entry, b.message)
}

/// The Rust serial restore: the original file, or `None` if any piece fails.
fn rust_restore(file: &[u8]) -> Option<Vec<u8>> {
    let c = Container::parse(file).ok()?;
    if c.original_len() > MAX_OUT {
        return None;
    }
    let mut out = vec![0u8; c.original_len() as usize];
    for (number, e) in c.entries() {
        let at = e.original_offset as usize;
        c.decode_entry(number, &e, &mut out[at..]).ok()?;
    }
    Some(out)
}

struct Sink {
    out: Vec<u8>,
    fail_after: usize,
}

unsafe extern "C" fn sink(ctx: *mut c_void, bytes: *const u8, len: usize) -> c_int {
    // SAFETY: `ctx` is the `Sink` passed to `enec_container_restore_to`; `bytes` holds `len`.
    let s = unsafe { &mut *(ctx as *mut Sink) };
    if s.out.len() + len > s.fail_after {
        return 7;
    }
    s.out.extend_from_slice(unsafe { std::slice::from_raw_parts(bytes, len) });
    0
}

fn container(file: &[u8], knob: u8) {
    let mut d1 = detail();
    let mut d2 = detail();
    let mut size = 0usize;
    // SAFETY (all calls below): every pointer is valid for the length passed with it, state
    // memory is aligned and outlives the handle.
    let s = unsafe { enec_container_state_size(file.as_ptr(), file.len(), &mut size, &mut d1) };
    let mut mem = aligned(if s == EnecStatus::Ok { size } else { 4096 });
    let mut handle: *mut EnecContainer = ptr::null_mut();
    let o = unsafe {
        enec_container_open(mem.as_mut_ptr().cast(), size.max(if s == EnecStatus::Ok { size } else { 4096 }),
            file.as_ptr(), file.len(), &mut handle, &mut d2)
    };
    assert_eq!(o, s, "enec_container_state_size and enec_container_open disagree");
    assert!(same(&d1, &d2), "state_size and open give different details");
    let expected = rust_restore(file);
    // What the library lists beyond the index (tensors kept in runs), or why it cannot.
    let parsed = Container::parse(file).ok();
    let unindexed = parsed.as_ref().map(enec::checkpoint::unindexed);
    if s != EnecStatus::Ok {
        assert!(expected.is_none() || parsed.is_none() || s == EnecStatus::TooLarge);
        return;
    }
    if size >= 1 {
        let mut small = aligned(size);
        let mut h2: *mut EnecContainer = ptr::null_mut();
        let r = unsafe {
            enec_container_open(small.as_mut_ptr().cast(), size - 1, file.as_ptr(), file.len(), &mut h2, ptr::null_mut())
        };
        assert_eq!(r, EnecStatus::InvalidArgument, "open with too little memory");
    }

    let mut count = 0u64;
    let listed = unsafe { enec_container_tensor_count(handle, &mut count) };
    if let (Some(c), Some(found)) = (&parsed, &unindexed) {
        match found {
            Ok(found) => {
                assert_eq!(listed, EnecStatus::Ok);
                let indexed = c.entries().filter(|(_, e)| e.is_tensor()).count();
                assert_eq!(count, (indexed + found.len()) as u64, "the handle and the library list other tensors");
            }
            Err(_) => assert_ne!(listed, EnecStatus::Ok, "the handle lists what the library refuses to"),
        }
    }
    if listed != EnecStatus::Ok {
        count = 0;
    }
    let mut restored = 0u64;
    assert_eq!(unsafe { enec_container_restored_size(handle, &mut restored) }, EnecStatus::Ok);
    if restored > MAX_OUT {
        return;
    }
    let mut info: EnecTensorInfo = unsafe { std::mem::zeroed() };
    for index in 0..count.min(64) {
        assert_eq!(unsafe { enec_container_tensor(handle, index, &mut info) }, EnecStatus::Ok);
        assert_eq!(info.index, index);
        let mut found: EnecTensorInfo = unsafe { std::mem::zeroed() };
        let f = unsafe { enec_container_find(handle, info.name, info.name_len, &mut found) };
        assert_eq!(f, EnecStatus::Ok, "find() missed a listed tensor");
        assert!(found.index <= index);
        if info.bytes > MAX_OUT {
            continue;
        }
        let mut out = vec![0xa5u8; info.bytes as usize + 8];
        let mut len = 0usize;
        let mut d = detail();
        let r = unsafe { enec_container_decode_tensor(handle, index, out.as_mut_ptr(), out.len(), &mut len, &mut d) };
        assert_eq!(d.status, r);
        assert!(out[info.bytes as usize..].iter().all(|&b| b == 0xa5), "decode_tensor wrote past the tensor");
        if r == EnecStatus::Ok {
            assert_eq!(len as u64, info.bytes);
            if let Some(e) = &expected {
                let at = info.original_offset as usize;
                assert!(out[..len] == e[at..at + len], "decode_tensor gave other bytes");
            }
        }
    }
    let mut missing: EnecTensorInfo = unsafe { std::mem::zeroed() };
    let past = if listed == EnecStatus::Ok { EnecStatus::NotFound } else { listed };
    assert_eq!(unsafe { enec_container_tensor(handle, count, &mut missing) }, past);

    let mut scratch_len = 0usize;
    assert_eq!(unsafe { enec_container_scratch_size(handle, &mut scratch_len) }, EnecStatus::Ok);
    let mut scratch = vec![0u8; scratch_len];
    let n = restored as usize;
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut out = vec![0x5au8; n + 1];
        let mut len = 0usize;
        let mut d = detail();
        let r = unsafe {
            enec_container_restore(handle, out.as_mut_ptr(), n, scratch.as_mut_ptr().cast(), scratch_len, &mut len, &mut d)
        };
        assert_eq!(d.status, r);
        assert_eq!(out[n], 0x5a, "restore wrote past the output");
        if r == EnecStatus::Ok {
            assert_eq!(len, n);
            let e = expected.as_ref().expect("enec_container_restore accepts what Rust refuses");
            assert!(out[..n] == e[..], "enec_container_restore gave other bytes");
        }
        results.push(d);
    }
    assert!(same(&results[0], &results[1]), "two restores report different errors");

    // Through the callback, possibly failing after some bytes.
    let fail_after = if knob & 1 == 1 { (usize::from(knob) * 977) % (n + 1) } else { usize::MAX };
    let mut s = Sink { out: Vec::new(), fail_after };
    let mut written = 0u64;
    let mut d = detail();
    let r = unsafe {
        enec_container_restore_to(handle, Some(sink), (&mut s as *mut Sink).cast(), scratch.as_mut_ptr().cast(), scratch_len, &mut written, &mut d)
    };
    assert_eq!(d.status, r);
    assert_eq!(written, s.out.len() as u64);
    if let Some(e) = &expected {
        assert!(e.get(..s.out.len()) == Some(&s.out[..]), "restore_to wrote unverified bytes");
    }
    if fail_after == usize::MAX {
        assert!(same(&d, &results[0]), "restore and restore_to report different errors");
    } else if results[0].status == EnecStatus::Ok && r != EnecStatus::Ok {
        assert_eq!(r, EnecStatus::WriteFailed);
        assert_eq!(d.value, 7);
    }

    // Short scratch and short output are refused.
    if scratch_len > 0 {
        let mut out = vec![0u8; n];
        let mut len = 0usize;
        let r = unsafe {
            enec_container_restore(handle, out.as_mut_ptr(), n, scratch.as_mut_ptr().cast(), scratch_len - 1, &mut len, ptr::null_mut())
        };
        assert_eq!(r, EnecStatus::InvalidArgument, "restore with short scratch");
    }
    if n > 0 {
        let mut out = vec![0u8; n - 1];
        let mut len = 0usize;
        let r = unsafe {
            enec_container_restore(handle, out.as_mut_ptr(), n - 1, scratch.as_mut_ptr().cast(), scratch_len, &mut len, ptr::null_mut())
        };
        assert_eq!(r, EnecStatus::OutputTooSmall, "restore into short output");
    }
    drop(mem);
}

fn stream(mut cfg: Bytes, knob: u8) {
    let options = EnecOptions {
        dtype: u32::from(cfg.u8() % 5),
        frame_len: 1u32 << (9 + cfg.u8() % 9),
        coding: u32::from(cfg.u8() % 4),
        checksums: u32::from(cfg.u8() % 3),
    };
    let mut chunks = (Chunks::new(cfg.u8(), knob), Chunks::new(cfg.u8(), knob.rotate_left(3)));
    let raw = cfg.rest();

    // The same options in Rust, where they are valid.
    let rust_options = (1..=5).contains(&options.dtype).then_some(()).and_then(|()| {
        let dtype = enec::Dtype::ALL[options.dtype as usize - 1];
        let coding = [enec::Coding::Auto, enec::Coding::Groups, enec::Coding::Ranked]
            .get(options.coding as usize)?;
        enec::EncodeOptions::new(dtype)
            .coding(*coding)
            .checksums(options.checksums != 0)
            .frame_len(options.frame_len)
            .ok()
    });
    let mut bound = 0usize;
    let b = unsafe { enec_max_encoded_size(&options, raw.len(), &mut bound) };
    let rust_bound = rust_options.map(|o| enec::max_encoded_size(&o, raw.len()));
    assert_eq!(
        b == EnecStatus::Ok,
        matches!(rust_bound, Some(Ok(_))),
        "enec_max_encoded_size and max_encoded_size disagree: {b:?} {rust_bound:?}"
    );
    let mut stream = Vec::new();
    if let (EnecStatus::Ok, Some(o)) = (b, rust_options) {
        assert_eq!(Some(Ok(bound)), rust_bound);
        let mut out = vec![0u8; bound];
        let mut len = 0usize;
        let mut d = detail();
        let r = unsafe { enec_encode(&options, raw.as_ptr(), raw.len(), out.as_mut_ptr(), out.len(), &mut len, &mut d) };
        assert_eq!(d.status, r);
        let rust = enec::encode_to_vec(&o, raw);
        assert_eq!(r == EnecStatus::Ok, rust.is_ok(), "enec_encode and encode disagree: {r:?} {rust:?}");
        if let Ok(rust) = rust {
            assert!(out[..len] == rust[..], "enec_encode wrote other bytes");
            stream = rust;
            // The streaming encoder in caller memory gives the same bytes.
            let state = unsafe { enec_encoder_state_size(&options) };
            assert!(state > 0);
            let mut mem = aligned(state);
            let mut enc: *mut EnecEncoder = ptr::null_mut();
            let eb = o.dtype.element_bytes();
            let count = (raw.len() / eb) as u64;
            let i = unsafe { enec_encoder_init(mem.as_mut_ptr().cast(), state, &options, count, &mut enc) };
            assert_eq!(i, EnecStatus::Ok);
            let streamed = pump(&mut chunks, raw, |input, output, p| unsafe {
                enec_encoder_encode(enc, input.as_ptr(), input.len(), output.as_mut_ptr(), output.len(), p)
            });
            assert_eq!(streamed, (EnecStatus::Ok, stream.clone()), "streaming C encoder differs");
            assert_eq!(unsafe { enec_encoder_finish(enc) }, EnecStatus::Ok);
            drop(mem);
        }
    }
    decode_all(raw, &mut chunks);
    let mut fixed = raw.to_vec();
    if fix_header_check(&mut fixed) {
        decode_all(&fixed, &mut chunks);
    }
    if !stream.is_empty() {
        decode_all(&stream, &mut chunks);
    }
}

/// Drives a streaming C codec over `input` in the chunks given; returns how it ended and the
/// output.
fn pump(
    chunks: &mut (Chunks, Chunks),
    input: &[u8],
    mut call: impl FnMut(&[u8], &mut [u8], *mut EnecProgress) -> EnecStatus,
) -> (EnecStatus, Vec<u8>) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0;
    let mut stalls = 0;
    loop {
        let take = chunks.0.next(input.len() - at);
        let room = chunks.1.next(buf.len());
        let mut p = EnecProgress { consumed: 0, written: 0, status: 0 };
        let r = call(&input[at..at + take], &mut buf[..room], &mut p);
        if r != EnecStatus::Ok {
            return (r, out);
        }
        assert!(p.consumed <= take && p.written <= room);
        at += p.consumed;
        out.extend_from_slice(&buf[..p.written]);
        if p.status == EnecFlowStatus::Done as u32 {
            return (EnecStatus::Ok, out);
        }
        if at == input.len() && p.status == EnecFlowStatus::NeedsInput as u32 {
            return (EnecStatus::Truncated, out);
        }
        stalls = if p.consumed == 0 && p.written == 0 { stalls + 1 } else { 0 };
        assert!(stalls < 4, "streaming C codec makes no progress");
        if out.len() as u64 > MAX_OUT {
            return (EnecStatus::Ok, out);
        }
    }
}

fn decode_all(stream: &[u8], chunks: &mut (Chunks, Chunks)) {
    let mut info = EnecStreamInfo::default();
    let h = unsafe { enec_read_header(stream.as_ptr(), stream.len(), &mut info) };
    let rust = enec::read_header(stream);
    assert_eq!(h == EnecStatus::Ok, rust.is_ok(), "enec_read_header and read_header disagree");
    let total = if h == EnecStatus::Ok { info.decoded_bytes.min(MAX_OUT) as usize } else { 64 };
    let mut expected = vec![0u8; total];
    let want = enec::decode(stream, &mut expected);
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut out = vec![0x5au8; total];
        let mut len = 0usize;
        let mut d = detail();
        let r = unsafe { enec_decode(stream.as_ptr(), stream.len(), out.as_mut_ptr(), out.len(), &mut len, &mut d) };
        assert_eq!(d.status, r);
        assert_eq!(r == EnecStatus::Ok, want.is_ok(), "enec_decode and decode disagree: {r:?} {want:?}");
        if let Ok(n) = want {
            assert_eq!(len, n);
            assert!(out[..n] == expected[..n], "enec_decode gave other bytes");
        }
        results.push(d);
    }
    assert!(same(&results[0], &results[1]), "two decodes report different errors");
    if h != EnecStatus::Ok || info.decoded_bytes > MAX_OUT {
        return;
    }
    // The streaming decoder, sized for the stream's frames.
    let state = enec_decoder_state_size(info.dtype, info.frame_len);
    if state == 0 {
        return;
    }
    let mut mem = aligned(state);
    let mut dec: *mut EnecDecoder = ptr::null_mut();
    let i = unsafe { enec_decoder_init(mem.as_mut_ptr().cast(), state, info.dtype, info.frame_len, &mut dec) };
    assert_eq!(i, EnecStatus::Ok);
    let (r, out) = pump(chunks, stream, |input, output, p| unsafe {
        enec_decoder_decode(dec, input.as_ptr(), input.len(), output.as_mut_ptr(), output.len(), p)
    });
    match want {
        Ok(n) => {
            assert_eq!(r, EnecStatus::Ok, "streaming C decoder fails on a good stream");
            assert!(out[..] == expected[..n], "streaming C decoder gave other bytes");
        }
        Err(enec::Error::TrailingData { .. }) => {}
        Err(_) => assert_ne!(r == EnecStatus::Ok && out.len() == total, true, "streaming C decoder accepts a bad stream"),
    }
    let mut di = EnecStreamInfo::default();
    let _ = unsafe { enec_decoder_info(dec, &mut di) };
    let _ = unsafe { enec_decoder_finish(dec) };
    drop(mem);
}
