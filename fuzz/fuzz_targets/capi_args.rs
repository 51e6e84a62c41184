//! The C ABI's argument checks, one property: a function given a NULL pointer it needs, a NULL
//! buffer with a nonzero length, misaligned or too little state memory, or a handle that is not
//! one (NULL, misaligned, another kind of handle, memory never initialized) returns
//! `ENEC_STATUS_INVALID_ARGUMENT` and writes nothing to the caller's outputs; `detail` may be
//! NULL anywhere and changes nothing but itself. Beside it, the functions no other target calls:
//! `enec_status_message` gives a NUL-terminated message for every value, `enec_version` a
//! version, `enec_options_default` options that `enec_max_encoded_size` accepts exactly for the
//! known dtypes.
//!
//! Input: `[nulls (2 bytes), shift, dtype, status (4 bytes), data...]`: bit k of `nulls` makes
//! the k-th pointer of each call NULL, `shift` misaligns state memory and shortens it.
#![no_main]

use core::ffi::{c_int, c_void, CStr};
use std::ptr;

use enec::container::{PieceKind, PieceMeta, Writer};
use enec_capi::*;
use enec_fuzz::Bytes;
use libfuzzer_sys::fuzz_target;

const INVALID: EnecStatus = EnecStatus::InvalidArgument;

/// Pointer `k` of a call: `p`, or NULL when bit `k` of the mask is set.
struct Nulls(u16);

impl Nulls {
    fn p<T>(&self, k: u32, p: *const T) -> *const T {
        if self.0 >> k & 1 == 1 { ptr::null() } else { p }
    }
    fn m<T>(&self, k: u32, p: *mut T) -> *mut T {
        if self.0 >> k & 1 == 1 { ptr::null_mut() } else { p }
    }
    fn null(&self, k: u32) -> bool {
        self.0 >> k & 1 == 1
    }
}

/// Caller memory aligned to `ENEC_STATE_ALIGN`, and a pointer `shift` bytes into it.
fn aligned(bytes: usize) -> Vec<u128> {
    vec![0u128; bytes.div_ceil(16).max(1) + 1]
}

fn detail() -> EnecErrorDetail {
    EnecErrorDetail { status: EnecStatus::Ok, frame: 0, value: 0, entry: 0, message: [0; ENEC_MESSAGE_BYTES] }
}

/// Checks one call: with a needed argument missing it must be `INVALID`; the same call with a
/// NULL `detail` returns the same status.
fn expect(name: &str, bad: bool, status: EnecStatus, without_detail: EnecStatus) {
    if bad {
        assert_eq!(status, INVALID, "{name}: a missing or misaligned argument was not refused");
    }
    assert_eq!(status, without_detail, "{name}: a NULL detail changed the result");
}

unsafe extern "C" fn sink(_: *mut c_void, _: *const u8, _: usize) -> c_int {
    0
}

fuzz_target!(|input: &[u8]| {
    let mut cfg = Bytes(input);
    let nulls = Nulls(cfg.u16());
    let shift = usize::from(cfg.u8());
    let dtype = u32::from(cfg.u8() % 5);
    let status = i32::from_le_bytes([cfg.u8(), cfg.u8(), cfg.u8(), cfg.u8()]);
    let data: Vec<u8> = cfg.rest().iter().copied().take(1 << 14).collect();

    // SAFETY: every pointer passed below is NULL or valid for the length passed with it; the
    // functions are called as their header allows, with NULLs only where the property is tested.
    unsafe {
        let message = enec_status_message(status);
        assert!(!message.is_null());
        assert!(!CStr::from_ptr(message).to_bytes().is_empty());
        assert!(!CStr::from_ptr(enec_version()).to_bytes().is_empty());
        let defaults = enec_options_default(dtype);
        let mut size = 7usize;
        let s = enec_max_encoded_size(&defaults, 64, &mut size);
        assert_eq!(s == EnecStatus::Ok, (1..=5).contains(&dtype), "default options of dtype {dtype}: {s:?}");
    }

    let index = (dtype % 5) as usize;
    let options = enec_options_default(1 + dtype % 5);
    let eb = [2usize, 2, 4, 1, 1][index];
    let elements = &data[..data.len() / eb * eb];
    unsafe { stream(&nulls, shift, &options, elements) };
    unsafe { container(&nulls, shift, elements, index) };
});

unsafe fn stream(n: &Nulls, shift: usize, options: &EnecOptions, data: &[u8]) {
    let mut size = 7usize;
    let s = enec_max_encoded_size(n.p(0, options), data.len(), n.m(1, &mut size));
    expect("enec_max_encoded_size", n.null(0) || n.null(1), s, s);
    if s == INVALID {
        assert_eq!(size, 7, "enec_max_encoded_size wrote on a refused call");
    }
    let mut cap = 0usize;
    assert_eq!(enec_max_encoded_size(options, data.len(), &mut cap), EnecStatus::Ok);

    // enec_encode: pointers options, input (if any), out (if any), out_len.
    let mut out = vec![0x5au8; cap];
    let mut len = 7usize;
    let mut d = detail();
    let bad = n.null(0) || (n.null(2) && !data.is_empty()) || (n.null(3) && cap > 0) || n.null(4);
    let call = |d: *mut EnecErrorDetail, out: &mut Vec<u8>, len: &mut usize| {
        enec_encode(n.p(0, options), n.p(2, data.as_ptr()), data.len(), n.m(3, out.as_mut_ptr()), cap, n.m(4, len), d)
    };
    let s = call(&mut d, &mut out, &mut len);
    let mut out2 = vec![0x5au8; cap];
    let mut len2 = 7usize;
    expect("enec_encode", bad, s, call(ptr::null_mut(), &mut out2, &mut len2));
    assert_eq!(d.status, s);
    if s == INVALID {
        assert!(len == 7 && out.iter().all(|&b| b == 0x5a), "enec_encode wrote on a refused call");
    }
    let mut stream = vec![0u8; cap];
    let mut slen = 0usize;
    let s = enec_encode(options, data.as_ptr(), data.len(), stream.as_mut_ptr(), cap, &mut slen, ptr::null_mut());
    assert_eq!(s, EnecStatus::Ok);
    stream.truncate(slen);

    // enec_read_header: stream (if any), info.
    let mut info: EnecStreamInfo = core::mem::zeroed();
    let s = enec_read_header(n.p(5, stream.as_ptr()), stream.len(), n.m(6, &mut info));
    expect("enec_read_header", (n.null(5) && !stream.is_empty()) || n.null(6), s, s);

    // enec_decode: stream, out, out_len.
    let mut out = vec![0x5au8; data.len()];
    let mut len = 7usize;
    let mut d = detail();
    let bad = (n.null(7) && !stream.is_empty()) || (n.null(8) && !data.is_empty()) || n.null(9);
    let s = enec_decode(n.p(7, stream.as_ptr()), stream.len(), n.m(8, out.as_mut_ptr()), out.len(), n.m(9, &mut len), &mut d);
    let mut len2 = 7usize;
    let s2 = enec_decode(n.p(7, stream.as_ptr()), stream.len(), n.m(8, out.as_mut_ptr()), out.len(), n.m(9, &mut len2), ptr::null_mut());
    expect("enec_decode", bad, s, s2);
    if s == INVALID {
        assert!(len == 7, "enec_decode wrote its length on a refused call");
    }

    // Streaming state: misaligned, short, NULL memory or handle; a handle of the other kind.
    let dneed = enec_decoder_state_size(options.dtype, options.frame_len);
    let eneed = enec_encoder_state_size(options);
    assert!(dneed > 0 && eneed > 0);
    assert_eq!(enec_encoder_state_size(ptr::null()), 0);
    let off = shift % 16;
    let short = shift >> 4;
    let mut dmem = aligned(dneed);
    let dbase = (dmem.as_mut_ptr() as *mut u8).add(off) as *mut c_void;
    let mut dec: *mut EnecDecoder = ptr::null_mut();
    let s = enec_decoder_init(n.m(10, dbase), dneed - short.min(dneed), options.dtype, options.frame_len, n.m(11, &mut dec));
    let bad = n.null(10) || n.null(11) || off != 0 || short != 0;
    expect("enec_decoder_init", bad, s, s);
    let mut emem = aligned(eneed);
    let ebase = (emem.as_mut_ptr() as *mut u8).add(off) as *mut c_void;
    let mut enc: *mut EnecEncoder = ptr::null_mut();
    let s = enec_encoder_init(n.m(12, ebase), eneed - short.min(eneed), n.p(13, options), (data.len() / 2) as u64, n.m(14, &mut enc));
    expect("enec_encoder_init", n.null(12) || n.null(13) || n.null(14) || off != 0 || short != 0, s, s);

    // Handles: the real one (if init succeeded), NULL, misaligned, never initialized, the other kind.
    let mut blank = aligned(64);
    let blank = blank.as_mut_ptr() as *mut c_void;
    let real_dec = if dec.is_null() { None } else { Some(dec) };
    let real_enc = if enc.is_null() { None } else { Some(enc) };
    let decoders: [(*mut EnecDecoder, bool); 4] = [
        (real_dec.unwrap_or(blank.cast()), real_dec.is_none()),
        (ptr::null_mut(), true),
        (blank.cast(), true),
        (real_enc.map_or(ptr::null_mut(), |e| e.cast()), true),
    ];
    for (h, not_handle) in decoders {
        let mut progress = EnecProgress { consumed: 7, written: 7, status: 7 };
        let mut out = vec![0x5au8; 64];
        let bad = not_handle || (n.null(15) && !stream.is_empty()) || n.null(0);
        let s = enec_decoder_decode(h, n.p(15, stream.as_ptr()), stream.len(), out.as_mut_ptr(), out.len(), n.m(0, &mut progress));
        expect("enec_decoder_decode", bad, s, s);
        if s == INVALID {
            assert!(progress.consumed == 7 && out.iter().all(|&b| b == 0x5a), "enec_decoder_decode wrote on a refused call");
        }
        let s = enec_decoder_finish(h);
        expect("enec_decoder_finish", not_handle, s, s);
        let mut info: EnecStreamInfo = core::mem::zeroed();
        let s = enec_decoder_info(h, n.m(1, &mut info));
        expect("enec_decoder_info", not_handle || n.null(1), s, s);
    }
    let encoders: [(*mut EnecEncoder, bool); 4] = [
        (real_enc.unwrap_or(blank.cast()), real_enc.is_none()),
        (ptr::null_mut(), true),
        ((blank as *mut u8).add(1).cast(), true),
        (real_dec.map_or(ptr::null_mut(), |e| e.cast()), true),
    ];
    for (h, not_handle) in encoders {
        let mut progress = EnecProgress { consumed: 7, written: 7, status: 7 };
        let mut out = vec![0x5au8; 64];
        let bad = not_handle || (n.null(2) && !data.is_empty()) || (n.null(3)) || n.null(4);
        let s = enec_encoder_encode(h, n.p(2, data.as_ptr()), data.len(), n.m(3, out.as_mut_ptr()), out.len(), n.m(4, &mut progress));
        expect("enec_encoder_encode", bad, s, s);
        if s == INVALID {
            assert!(progress.written == 7 && out.iter().all(|&b| b == 0x5a), "enec_encoder_encode wrote on a refused call");
        }
        let s = enec_encoder_finish(h);
        expect("enec_encoder_finish", not_handle, s, s);
    }
}

unsafe fn container(n: &Nulls, shift: usize, data: &[u8], index: usize) {
    // A container of one enec tensor and one verbatim tensor.
    let options = enec_options_default(1 + index as u32);
    let mut cap = 0usize;
    assert_eq!(enec_max_encoded_size(&options, data.len(), &mut cap), EnecStatus::Ok);
    let mut payload = vec![0u8; cap];
    let mut plen = 0usize;
    let s = enec_encode(&options, data.as_ptr(), data.len(), payload.as_mut_ptr(), cap, &mut plen, ptr::null_mut());
    assert_eq!(s, EnecStatus::Ok);
    let dname = ["BF16", "F16", "F32", "F8_E4M3", "F8_E5M2"][index];
    let eb = [2u64, 2, 4, 1, 1][index];
    let mut file = Vec::new();
    let mut w = Writer::new(&mut file).unwrap();
    w.begin().unwrap();
    w.payload(&payload[..plen]).unwrap();
    let shape = [data.len() as u64 / eb];
    let meta = PieceMeta { kind: PieceKind::Enec, name: "w", dtype: dname, shape: &shape, original_len: data.len() as u64, checksum: 0 };
    w.end(meta).unwrap();
    w.begin().unwrap();
    w.payload(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let raw = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let meta = PieceMeta { kind: PieceKind::Raw, name: "i", dtype: "I64", shape: &[1], original_len: 8, checksum: enec::wrapped::piece_checksum(&raw) };
    w.end(meta).unwrap();
    w.finish().unwrap();

    let mut size = 7usize;
    let mut d = detail();
    let s = enec_container_state_size(n.p(0, file.as_ptr()), file.len(), n.m(1, &mut size), &mut d);
    let s2 = enec_container_state_size(n.p(0, file.as_ptr()), file.len(), n.m(1, &mut size), ptr::null_mut());
    expect("enec_container_state_size", n.null(0) || n.null(1), s, s2);
    let mut need = 0usize;
    assert_eq!(enec_container_state_size(file.as_ptr(), file.len(), &mut need, ptr::null_mut()), EnecStatus::Ok);

    let off = shift % 16;
    let short = shift >> 4;
    let mut mem = aligned(need);
    let base = (mem.as_mut_ptr() as *mut u8).add(off) as *mut c_void;
    let mut h: *mut EnecContainer = ptr::null_mut();
    let mut d = detail();
    let s = enec_container_open(n.m(2, base), need - short.min(need), n.p(3, file.as_ptr()), file.len(), n.m(4, &mut h), &mut d);
    let bad = n.null(2) || n.null(3) || n.null(4) || off != 0 || short != 0;
    expect("enec_container_open", bad, s, d.status);

    let mut blank = aligned(64);
    let blank = blank.as_mut_ptr() as *mut EnecContainer;
    let real = if h.is_null() { None } else { Some(h) };
    let handles: [(*const EnecContainer, bool); 3] = [
        (real.unwrap_or(blank), real.is_none()),
        (ptr::null(), true),
        ((blank as *const u8).add(8).cast(), true),
    ];
    let out_bytes = data.len() + 8;
    for (h, not_handle) in handles {
        let mut count = 7u64;
        let s = enec_container_tensor_count(h, n.m(5, &mut count));
        expect("enec_container_tensor_count", not_handle || n.null(5), s, s);
        let mut info: EnecTensorInfo = core::mem::zeroed();
        info.index = 7;
        let s = enec_container_tensor(h, 0, n.m(6, &mut info));
        expect("enec_container_tensor", not_handle || n.null(6), s, s);
        info.index = 7;
        let s = enec_container_find(h, n.p(7, b"w".as_ptr().cast()), 1, n.m(8, &mut info));
        expect("enec_container_find", not_handle || n.null(7) || n.null(8), s, s);
        if s == INVALID {
            assert_eq!(info.index, 7, "a refused call wrote its info");
        }
        let mut out = vec![0x5au8; out_bytes];
        let mut len = 7usize;
        let mut d = detail();
        let cap = if n.null(9) { 1 } else { out.len() };
        let s = enec_container_decode_tensor(h, 0, n.m(9, out.as_mut_ptr()), cap, n.m(10, &mut len), &mut d);
        let s2 = enec_container_decode_tensor(h, 0, n.m(9, out.as_mut_ptr()), cap, n.m(10, &mut len), ptr::null_mut());
        expect("enec_container_decode_tensor", not_handle || n.null(9) || n.null(10), s, s2);
        let mut size = 7u64;
        let s = enec_container_restored_size(h, n.m(11, &mut size));
        expect("enec_container_restored_size", not_handle || n.null(11), s, s);
        let mut slen = 7usize;
        let s = enec_container_scratch_size(h, n.m(12, &mut slen));
        expect("enec_container_scratch_size", not_handle || n.null(12), s, s);

        let mut scratch_len = 0usize;
        let real_handle = enec_container_scratch_size(h, &mut scratch_len) == EnecStatus::Ok;
        let mut scratch = vec![0u8; scratch_len.max(1)];
        let scratch_ptr = n.m(13, scratch.as_mut_ptr()).cast::<c_void>();
        let mut out = vec![0x5au8; out_bytes];
        let mut len = 7usize;
        let mut d = detail();
        let s = enec_container_restore(h, n.m(14, out.as_mut_ptr()), out.len(), scratch_ptr, scratch_len, n.m(15, &mut len), &mut d);
        let bad = !real_handle || n.null(14) || n.null(15) || (n.null(13) && scratch_len > 0);
        expect("enec_container_restore", bad, s, d.status);
        if s == INVALID {
            assert!(len == 7 && out.iter().all(|&b| b == 0x5a), "enec_container_restore wrote on a refused call");
        }
        let write = if n.null(0) { None } else { Some(sink as unsafe extern "C" fn(*mut c_void, *const u8, usize) -> c_int) };
        let mut written = 7u64;
        let mut d = detail();
        let s = enec_container_restore_to(h, write, ptr::null_mut(), scratch_ptr, scratch_len, n.m(1, &mut written), &mut d);
        let bad = !real_handle || n.null(0) || (n.null(13) && scratch_len > 0);
        expect("enec_container_restore_to", bad, s, d.status);
        if s == INVALID && !n.null(1) {
            assert_eq!(written, 0, "enec_container_restore_to: a refused call wrote bytes");
        }
    }
}
