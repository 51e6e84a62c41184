//! Reading the layout of a safetensors file (and writing small ones, for demos and tests).
//!
//! Only the header is interpreted: the 8-byte little-endian header length, then a JSON object
//! mapping tensor names to `{"dtype", "shape", "data_offsets"}` (plus an optional
//! `__metadata__`), then the data. Everything is checked, and every byte of the file ends up in
//! exactly one piece of the plan, so the container restores it byte for byte: header JSON (with
//! its padding), gaps between tensors, and anything after the last tensor are kept verbatim.

use std::collections::BTreeMap;
use std::prelude::rust_2021::*;
use std::{format, vec};

use serde_json::Value;

pub use crate::container::safetensors_header::dtype_size;
use crate::container::safetensors_header::MAX_HEADER;
use crate::container::{self, dtype_from_safetensors};
use crate::Dtype;

/// A tensor of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Name (the JSON key).
    pub name: String,
    /// Dtype name as written (`BF16`, `I64`, ...).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Byte range in the file (absolute, header included).
    pub start: u64,
    /// End of the byte range (exclusive).
    pub end: u64,
}

/// One piece of the file, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The tensor this piece is, if any (else the header, a gap, or trailing bytes).
    pub tensor: Option<Tensor>,
    /// Encoded as an enec stream of this dtype, or kept verbatim (`None`).
    pub enec: Option<Dtype>,
    /// Byte range in the file.
    pub start: u64,
    /// End of the byte range (exclusive).
    pub end: u64,
}

/// Whether every tensor of the file that `pieces` cover gets an index entry of its own
/// ([`container::every_tensor_indexed`]).
pub fn every_tensor_indexed(pieces: &[Piece]) -> bool {
    let file_len = pieces.last().map_or(0, |p| p.end);
    let tensors = pieces.iter().filter_map(|p| p.tensor.as_ref());
    container::every_tensor_indexed(
        file_len,
        tensors.map(|t| (t.name.as_str(), t.dtype.as_str(), t.shape.len())),
    )
}

/// Why a file cannot be read as a safetensors checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotSafetensors {
    /// It does not start with a length and a JSON object: some other kind of file.
    OtherFormat(String),
    /// Its header parses but does not describe the file (truncated or damaged checkpoint).
    Damaged(String),
}

impl std::fmt::Display for NotSafetensors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotSafetensors::OtherFormat(why) => write!(f, "not a safetensors file: {why}"),
            NotSafetensors::Damaged(why) => {
                write!(f, "a damaged or truncated safetensors file: {why}")
            }
        }
    }
}

/// Why `bytes` is not a safetensors file, or its tensors sorted by offset.
pub fn parse(bytes: &[u8]) -> Result<Vec<Tensor>, NotSafetensors> {
    parse_prefix(bytes, bytes.len() as u64)
}

/// [`parse`] of a file of `len` bytes of which only `prefix`, its start, is at hand (its
/// header at least): what a reader of a container finds in the run of verbatim bytes at its
/// start, to locate the tensors that have no index entry of their own.
pub fn parse_prefix(prefix: &[u8], len: u64) -> Result<Vec<Tensor>, NotSafetensors> {
    let mut json_ok = false;
    parse_checked(prefix, len, &mut json_ok).map_err(|why| {
        if json_ok {
            NotSafetensors::Damaged(why)
        } else {
            NotSafetensors::OtherFormat(why)
        }
    })
}

/// [`parse_prefix`], setting `json_ok` once the header is known to be a JSON object.
fn parse_checked(bytes: &[u8], len: u64, json_ok: &mut bool) -> Result<Vec<Tensor>, String> {
    let Some(prefix) = bytes.get(..8) else {
        return Err(format!(
            "{len} bytes is too short for a safetensors file (it starts with an 8-byte header length)"
        ));
    };
    let n = u64::from_le_bytes(prefix.try_into().map_err(|_| "short prefix")?);
    if n > MAX_HEADER || n > len - 8 || n > bytes.len() as u64 - 8 {
        return Err(format!(
            "its first 8 bytes announce a {n}-byte JSON header, and the file has {len} bytes"
        ));
    }
    let header = &bytes[8..8 + n as usize];
    let json: Value = serde_json::from_slice(header)
        .map_err(|e| format!("the {n} bytes after the length are not JSON ({e})"))?;
    let Value::Object(map) = json else {
        return Err("its JSON header is not an object".into());
    };
    *json_ok = true;
    let data_start = 8 + n;
    let data_len = len - data_start;
    let mut tensors = Vec::with_capacity(map.len());
    for (name, value) in &map {
        if name == "__metadata__" {
            if !value.is_object() {
                return Err("its __metadata__ is not a JSON object".into());
            }
            continue;
        }
        let bad = |why: &str| format!("tensor \"{name}\": {why}");
        // Never empty: the container tells a tensor named "" from a gap by its dtype.
        let dtype = value
            .get("dtype")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| bad("no \"dtype\" name"))?;
        let shape: Vec<u64> = value
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|dims| dims.iter().map(Value::as_u64).collect())
            .ok_or_else(|| bad("no \"shape\" list of non-negative integers"))?;
        let offsets: Vec<u64> = value
            .get("data_offsets")
            .and_then(Value::as_array)
            .and_then(|o| o.iter().map(Value::as_u64).collect())
            .ok_or_else(|| bad("no \"data_offsets\" pair of integers"))?;
        let [begin, end] = offsets[..] else {
            return Err(bad("\"data_offsets\" is not a pair"));
        };
        if begin > end || end > data_len {
            return Err(bad(&format!(
                "data_offsets [{begin}, {end}] lie outside the {data_len} data bytes (truncated file?)"
            )));
        }
        if let Some(size) = dtype_size(dtype) {
            let numel = shape
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .and_then(|n| n.checked_mul(size));
            if numel != Some(end - begin) {
                return Err(bad(&format!(
                    "shape {shape:?} of {dtype} needs {} bytes, data_offsets give {}",
                    numel.map_or("too many".into(), |n| n.to_string()),
                    end - begin
                )));
            }
        }
        if shape.len() > container::MAX_RANK {
            return Err(bad(&format!(
                "{} dimensions; the enec container records at most {}",
                shape.len(),
                container::MAX_RANK
            )));
        }
        tensors.push(Tensor {
            name: name.clone(),
            dtype: dtype.to_owned(),
            shape,
            start: data_start + begin,
            end: data_start + end,
        });
    }
    sort(&mut tensors);
    for pair in tensors.windows(2) {
        if pair[1].start < pair[0].end {
            return Err(format!(
                "tensors \"{}\" and \"{}\" overlap",
                pair[0].name, pair[1].name
            ));
        }
    }
    Ok(tensors)
}

/// Sorts tensors by offset (then end, then name): the order of their pieces.
pub fn sort(tensors: &mut [Tensor]) {
    tensors.sort_by(|a, b| (a.start, a.end, &a.name).cmp(&(b.start, b.end, &b.name)));
}

/// Cuts a file of `len` bytes with these tensors (sorted, not overlapping) into pieces that
/// cover it: the header, each tensor, and the gaps and trailing bytes. Non-empty tensors of a dtype
/// enec codes (BF16, F16, F32, F8_E4M3, F8_E5M2) become enec streams.
pub fn plan(len: u64, tensors: Vec<Tensor>) -> Vec<Piece> {
    let header_end = tensors.first().map_or(len, |t| t.start);
    let mut pieces = vec![Piece {
        tensor: None,
        enec: None,
        start: 0,
        end: header_end,
    }];
    let mut at = header_end;
    for t in tensors {
        if t.start > at {
            pieces.push(Piece {
                tensor: None,
                enec: None,
                start: at,
                end: t.start,
            });
        }
        at = t.end;
        let enec = dtype_from_safetensors(&t.dtype).filter(|_| t.end > t.start);
        pieces.push(Piece {
            enec,
            start: t.start,
            end: t.end,
            tensor: Some(t),
        });
    }
    if len > at {
        pieces.push(Piece {
            tensor: None,
            enec: None,
            start: at,
            end: len,
        });
    }
    pieces
}

/// A tensor to write with [`write()`]: name, dtype, shape, little-endian bytes.
pub type NewTensor<'a> = (&'a str, &'a str, Vec<u64>, &'a [u8]);

/// A safetensors file holding `tensors` in this order and `metadata`, its header padded with
/// spaces to a multiple of 8 bytes (as the reference implementation writes it).
pub fn write(tensors: &[NewTensor<'_>], metadata: &BTreeMap<String, String>) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    if !metadata.is_empty() {
        header.insert("__metadata__".into(), serde_json::json!(metadata));
    }
    let mut at = 0u64;
    for (name, dtype, shape, bytes) in tensors {
        let end = at + bytes.len() as u64;
        header.insert(
            (*name).into(),
            serde_json::json!({ "dtype": dtype, "shape": shape, "data_offsets": [at, end] }),
        );
        at = end;
    }
    let mut json = Value::Object(header).to_string().into_bytes();
    json.resize(json.len().next_multiple_of(8), b' ');
    let mut file = Vec::with_capacity(8 + json.len() + at as usize);
    file.extend_from_slice(&(json.len() as u64).to_le_bytes());
    file.extend_from_slice(&json);
    for (_, _, _, bytes) in tensors {
        file.extend_from_slice(bytes);
    }
    file
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_the_file() {
        let a = [1u8; 8];
        let b = [2u8; 6];
        let file = write(
            &[("a", "BF16", vec![4], &a), ("b", "I16", vec![3], &b)],
            &BTreeMap::new(),
        );
        let tensors = parse(&file).unwrap();
        let pieces = plan(file.len() as u64, tensors);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0].start, 0);
        assert_eq!(pieces[1].enec, Some(Dtype::Bf16));
        assert_eq!(pieces[2].enec, None);
        assert_eq!(pieces[2].end, file.len() as u64);
    }

    #[test]
    fn rejects_what_is_not_safetensors() {
        assert!(parse(b"").is_err());
        assert!(parse(b"hello world, not a checkpoint").is_err());
        assert!(parse(&[2, 0, 0, 0, 0, 0, 0, 0, b'{', b'}'])
            .unwrap()
            .is_empty());
        assert!(parse(&[2, 0, 0, 0, 0, 0, 0, 0, b'[', b']']).is_err());
        let no_dtype = write(&[("x", "", vec![2], &[0; 2])], &BTreeMap::new());
        assert!(parse(&no_dtype).unwrap_err().to_string().contains("dtype"));
    }

    #[test]
    fn a_tensor_may_be_named_empty() {
        let file = write(&[("", "I64", vec![1], &[7; 8])], &BTreeMap::new());
        let tensors = parse(&file).unwrap();
        assert_eq!(
            (tensors[0].name.as_str(), tensors[0].dtype.as_str()),
            ("", "I64")
        );
        let pieces = plan(file.len() as u64, tensors);
        assert_eq!(pieces[1].tensor.as_ref().unwrap().name, "");
    }
}
