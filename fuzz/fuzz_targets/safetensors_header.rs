//! The allocation-free safetensors header reader (`enec::container::safetensors_header`, what
//! the C ABI lists tensors kept in runs with) against the serde_json one that compressing uses
//! (`enec::checkpoint::safetensors::parse_prefix`): the same headers accepted, the same tensors
//! read (the reader leaves equal keys and overlaps to its caller, as the C ABI resolves them
//! here). Never a panic.
//!
//! Input: `[data_len_lo, data_len_hi, json...]`: a file of the 8-byte length, the JSON and that
//! many data bytes; every fourth input is cut inside its JSON, to try prefixes.
#![no_main]

use std::collections::HashMap;

use enec::checkpoint::safetensors::{parse_prefix, Tensor};
use enec::container::safetensors_header::Header;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let [lo, hi, json @ ..] = input else { return };
    let data = usize::from(u16::from_le_bytes([*lo, *hi]));
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(json);
    file.resize(file.len() + data, 0);
    let len = file.len() as u64;
    let prefix = if lo & 3 == 3 { &file[..file.len() / 2] } else { &file[..] };
    let serde = parse_prefix(prefix, len).ok();
    let in_place = read_in_place(prefix, len);
    assert_eq!(serde, in_place, "json {:?}", String::from_utf8_lossy(json));
});

/// The tensors as a caller of the in-place reader resolves them: the last of equal keys wins,
/// any invalid last member or overlap refuses the header, sorted as `parse_prefix` sorts.
fn read_in_place(prefix: &[u8], len: u64) -> Option<Vec<Tensor>> {
    let header = Header::parse(prefix, len).ok()?;
    let mut last = HashMap::new();
    for m in header.members() {
        // Names are compared as text, which is what the serde map keys on.
        let name = String::from_utf8(m.key.bytes().collect()).expect("checked UTF-8");
        assert_eq!(m.key.len(), name.len());
        assert!(m.key.is(name.as_bytes()));
        let again = header.member_at(m.key_at).expect("member_at finds every member");
        assert_eq!(again.key.raw(), m.key.raw());
        last.insert(name, m);
    }
    let mut tensors = Vec::new();
    for (name, m) in last {
        let Some(t) = header.tensor(&m).ok()? else { continue };
        let dtype = String::from_utf8(t.dtype.bytes().collect()).expect("checked UTF-8");
        assert_eq!(t.shape.len(), t.shape.clone().count());
        tensors.push(Tensor { name, dtype, shape: t.shape.collect(), start: t.start, end: t.end });
    }
    enec::checkpoint::safetensors::sort(&mut tensors);
    if tensors.windows(2).any(|p| p[1].start < p[0].end) {
        return None;
    }
    Some(tensors)
}
