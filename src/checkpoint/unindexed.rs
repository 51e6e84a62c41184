//! The tensors of a container that have no index entry of their own: small tensors kept in runs
//! of verbatim bytes (FORMAT.md 9.6), and empty tensors that lie in no piece. Readers that list
//! tensors by name (Python's `safe_open`, `enec info`) find them here, through the safetensors
//! header, as the C ABI does without allocating ([`container::run_tensors`]).

use std::prelude::rust_2021::*;

use super::safetensors::Tensor;
use crate::container::{self, Container, Entry, RunTensor, RunTensorsError};

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

/// Why the tensors without entries cannot be listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnindexedError {
    /// The run of verbatim bytes that holds the header fails its checksum.
    HeaderChecksumMismatch {
        /// The run's entry number.
        entry: u64,
    },
    /// The header names this tensor twice.
    RepeatedName(String),
    /// The header names this non-empty tensor, which has no entry and lies in no run.
    InNoPiece(Tensor),
}

/// The tensors that the safetensors header at the start of `container`'s original file names
/// and its index does not, in file order (FORMAT.md 9.6); none where the container's first
/// piece holds no safetensors header. The header's run is verified.
pub fn unindexed<'a>(container: &Container<'a>) -> Result<Vec<Unindexed<'a>>, UnindexedError> {
    let Some(found) = container::header_of(container) else {
        return Ok(Vec::new());
    };
    let header = &found.2;
    let mut table = vec![RunTensor::default(); header.members().count()];
    let text = |bytes: container::safetensors_header::Unescaped<'_>| {
        String::from_utf8(bytes.collect()).unwrap_or_default()
    };
    let name_at = |key_at| {
        header
            .key_at(key_at)
            .map(|k| text(k.bytes()))
            .unwrap_or_default()
    };
    let tensor_of = |t: &RunTensor| {
        let member = header.member_at(t.key_at)?;
        let desc = header.tensor(&member).ok()??;
        Some(Tensor {
            name: text(member.key.bytes()),
            dtype: text(desc.dtype.bytes()),
            shape: desc.shape.collect(),
            start: t.start,
            end: t.end,
        })
    };
    let n = match container::run_tensors(container, &found, &mut table) {
        Ok(n) => n,
        Err(RunTensorsError::HeaderChecksumMismatch { entry }) => {
            return Err(UnindexedError::HeaderChecksumMismatch { entry })
        }
        Err(RunTensorsError::RepeatedName { key_at }) => {
            return Err(UnindexedError::RepeatedName(name_at(key_at)))
        }
        Err(RunTensorsError::InNoPiece(t)) => {
            let tensor = tensor_of(&t).unwrap_or_else(|| Tensor {
                name: name_at(t.key_at),
                dtype: String::new(),
                shape: Vec::new(),
                start: t.start,
                end: t.end,
            });
            return Err(UnindexedError::InNoPiece(tensor));
        }
        Err(RunTensorsError::TableTooSmall { .. }) => return Ok(Vec::new()),
    };
    let mut out = Vec::with_capacity(n);
    for t in &table[..n] {
        let Some(tensor) = tensor_of(t) else { continue };
        let run = t.run.and_then(|(number, position)| {
            container
                .index()
                .entries_from(number, position)
                .next()
                .filter(|(i, _)| *i == number)
        });
        let offset = run
            .as_ref()
            .map_or(0, |(_, e)| e.offset + (t.start - e.original_offset));
        out.push(Unindexed {
            tensor,
            run,
            offset,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::safetensors;
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
        let found = unindexed(&container).unwrap();
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
