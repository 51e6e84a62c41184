//! The tensors of a container that have no index entry of their own: small tensors kept in runs
//! of verbatim bytes (FORMAT.md 9.6), and empty tensors that lie in no piece. Readers that list
//! tensors by name (Python's `safe_open`, `enec info`) find them through the safetensors header.

use std::collections::HashSet;
use std::prelude::rust_2021::*;

use super::safetensors::{self, Tensor};
use crate::container::{Container, Entry, PieceKind};

/// A tensor the safetensors header names and the index does not, and where its bytes lie.
#[derive(Clone, Debug)]
pub struct Unindexed<'a> {
    /// The tensor as the header names it (its range in the original file).
    pub tensor: Tensor,
    /// The run of verbatim bytes that holds it, with its entry number; `None` for an empty
    /// tensor that lies in no run.
    pub run: Option<(u64, Entry<'a>)>,
    /// Where its bytes start in the container file.
    pub offset: u64,
}

/// The tensors that the safetensors header at the start of `container`'s original file names
/// and its index does not, in the header's order. `header` is the payload of the verbatim piece
/// at offset 0 (the header, and whatever else that run holds); none are found where it is not a
/// safetensors header. Checksums are not verified here: a caller verifies a run before reading
/// from it. A non-empty tensor that lies in no run of verbatim bytes is returned as the error.
pub fn unindexed<'a>(
    container: &Container<'a>,
    header: &[u8],
) -> Result<Vec<Unindexed<'a>>, Tensor> {
    let Ok(tensors) = safetensors::parse_prefix(header, container.original_len()) else {
        return Ok(Vec::new());
    };
    let indexed: HashSet<&str> = container
        .entries()
        .filter(|(_, e)| e.is_tensor())
        .map(|(_, e)| e.name)
        .collect();
    let missing: Vec<Tensor> = tensors
        .into_iter()
        .filter(|t| !indexed.contains(t.name.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let runs: Vec<(u64, Entry<'a>)> = container
        .entries()
        .filter(|(_, e)| e.kind == PieceKind::Raw && !e.is_tensor())
        .collect();
    let mut found = Vec::with_capacity(missing.len());
    for tensor in missing {
        let at = runs.partition_point(|(_, e)| e.original_offset + e.original_len <= tensor.start);
        let held = runs.get(at).filter(|(_, e)| {
            e.original_offset <= tensor.start && tensor.end <= e.original_offset + e.original_len
        });
        let (run, offset) = match held {
            Some((number, run)) => {
                let offset = run.offset + (tensor.start - run.original_offset);
                (Some((*number, run.clone())), offset)
            }
            None if tensor.start == tensor.end => (None, 0),
            None => return Err(tensor),
        };
        found.push(Unindexed {
            tensor,
            run,
            offset,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A file of many tiny tensors keeps most of them in runs; each one found points at its
    /// own bytes, and an empty tensor is found too.
    #[test]
    fn tiny_tensors_are_found_in_their_runs() {
        let data: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let names: Vec<String> = (0..300).map(|i| format!("t{i}")).collect();
        let mut tensors: Vec<safetensors::NewTensor<'_>> = names
            .iter()
            .zip(&data)
            .map(|(n, d)| (n.as_str(), "I32", vec![1], d.as_slice()))
            .collect();
        tensors.push(("empty", "F32", vec![0, 3], &[]));
        let file = safetensors::write(&tensors, &BTreeMap::new());
        let pieces = super::super::plan_file(&file).unwrap();
        let mut packed = Vec::new();
        let options = crate::EncodeOptions::new(crate::Dtype::Bf16);
        super::super::compress(&file, &pieces, &options, 1, &mut packed, &|_| {}).unwrap();
        let container = Container::parse(&packed).unwrap();
        let (_, first) = container.entries().next().unwrap();
        let found = unindexed(&container, container.payload(&first)).unwrap();
        let indexed = container.entries().filter(|(_, e)| e.is_tensor()).count();
        assert!(
            found.len() > 250,
            "{} found, {indexed} indexed",
            found.len()
        );
        assert_eq!(found.len() + indexed, 301);
        for u in &found {
            let (start, end) = (u.tensor.start as usize, u.tensor.end as usize);
            let at = u.offset as usize;
            assert_eq!(
                &packed[at..at + end - start],
                &file[start..end],
                "{}",
                u.tensor.name
            );
        }
        assert!(found.iter().any(|u| u.tensor.name == "empty"));
    }
}
