//! `save_file`: the checkpoint of the safetensors file that `safetensors.save_file` would write,
//! written tensor by tensor, so that the safetensors file never exists in memory.

use std::fmt::Write as _;
use std::io::Write;

use enec::container::{Writer, MAX_RANK};
use enec::EncodeOptions;

use enec::checkpoint;
use enec::checkpoint::safetensors::{self, Piece, Tensor};

use crate::convert::{self, Failure};

/// The safetensors dtypes, in the order of the reference implementation's `Dtype`: it writes
/// tensors by descending position here, then by name.
const DTYPES: [&str; 22] = [
    "BOOL",
    "F4",
    "F6_E2M3",
    "F6_E3M2",
    "U8",
    "I8",
    "F8_E5M2",
    "F8_E4M3",
    "F8_E8M0",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "I16",
    "U16",
    "F16",
    "BF16",
    "I32",
    "U32",
    "F32",
    "C64",
    "F64",
    "I64",
    "U64",
];

/// A tensor to save: name, safetensors dtype, shape, byte length.
pub type NewTensor = (String, String, Vec<u64>, u64);

/// What a saving writes, worked out before any file is made.
pub struct Plan {
    /// The tensors' positions (in the caller's list) in the order of their bytes in the file.
    pub order: Vec<usize>,
    /// The safetensors header: its length, JSON and padding.
    header: Vec<u8>,
    /// The pieces of the file, as `enec.compress_file` cuts it.
    pieces: Vec<Piece>,
}

impl Plan {
    /// The plan of the file `safetensors` writes of `tensors` and `metadata` (its entries in this
    /// order). Errors name the tensor.
    pub fn new(
        tensors: &[NewTensor],
        metadata: Option<&[(String, String)]>,
    ) -> Result<Plan, String> {
        let mut ranks = Vec::with_capacity(tensors.len());
        for (name, dtype, shape, len) in tensors {
            let bad = |why: String| format!("tensor \"{name}\": {why}");
            let rank = DTYPES
                .iter()
                .position(|d| d == dtype)
                .ok_or_else(|| bad(format!("dtype {dtype:?} is not a safetensors dtype")))?;
            if let Some(size) = safetensors::dtype_size(dtype) {
                let needed = shape
                    .iter()
                    .try_fold(size, |a, &d| a.checked_mul(d))
                    .ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
                if needed != *len {
                    return Err(bad(format!(
                        "shape {shape:?} of {dtype} needs {needed} bytes, not {len}"
                    )));
                }
            }
            if shape.len() > MAX_RANK {
                return Err(bad(format!(
                    "{} dimensions; the enec container records at most {MAX_RANK}",
                    shape.len()
                )));
            }
            ranks.push(rank);
        }
        let mut order: Vec<usize> = (0..tensors.len()).collect();
        order.sort_by(|&a, &b| {
            ranks[b]
                .cmp(&ranks[a])
                .then(tensors[a].0.cmp(&tensors[b].0))
        });

        let json = |s: &str| serde_json::to_string(s).expect("a string serializes");
        let mut header = String::from("{");
        if let Some(metadata) = metadata {
            header.push_str("\"__metadata__\":{");
            for (i, (key, value)) in metadata.iter().enumerate() {
                let comma = if i > 0 { "," } else { "" };
                let _ = write!(header, "{comma}{}:{}", json(key), json(value));
            }
            header.push('}');
        }
        let mut at = 0u64;
        let mut offsets = Vec::with_capacity(tensors.len());
        for &i in &order {
            let (name, dtype, shape, len) = &tensors[i];
            let comma = if header.len() > 1 { "," } else { "" };
            let shape: Vec<String> = shape.iter().map(u64::to_string).collect();
            let end = at
                .checked_add(*len)
                .ok_or_else(|| "the tensors are too large".to_string())?;
            let _ = write!(
                header,
                "{comma}{}:{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{end}]}}",
                json(name),
                shape.join(",")
            );
            offsets.push((i, at, end));
            at = end;
        }
        header.push('}');
        let mut json = header.into_bytes();
        json.resize(json.len().next_multiple_of(8), b' ');
        let mut header = (json.len() as u64).to_le_bytes().to_vec();
        header.extend_from_slice(&json);

        // The pieces `enec.compress_file` makes of the file: the same sort as its reader's.
        let start = header.len() as u64;
        let mut found: Vec<Tensor> = offsets
            .into_iter()
            .map(|(i, begin, end)| {
                let (name, dtype, shape, _) = &tensors[i];
                Tensor {
                    name: name.clone(),
                    dtype: dtype.clone(),
                    shape: shape.clone(),
                    start: start + begin,
                    end: start + end,
                }
            })
            .collect();
        safetensors::sort(&mut found);
        let pieces = safetensors::plan(start + at, found);
        Ok(Plan {
            order,
            header,
            pieces,
        })
    }
}

/// A checkpoint being written: the original file's bytes are handed over in order with
/// [`Saving::feed`], and each piece is written (a tensor encoded) once all its bytes are there.
/// Memory: the largest tensor's stream, and the bytes of a piece that arrive in parts.
pub struct Saving<W: Write> {
    name: String,
    writer: Writer<W>,
    pieces: Vec<Piece>,
    /// Every tensor gets an index entry ([`safetensors::every_tensor_indexed`]).
    all: bool,
    /// The next piece to write.
    next: usize,
    /// The bytes of piece `next` received so far, when they do not arrive at once.
    pending: Vec<u8>,
    stream: Vec<u8>,
    options: EncodeOptions,
    threads: usize,
}

impl<W: Write> Saving<W> {
    /// Starts the checkpoint of `plan` in `out` (`name` in messages) and writes its header.
    pub fn new(
        name: String,
        plan: Plan,
        out: W,
        options: EncodeOptions,
        threads: usize,
    ) -> Result<Saving<W>, Failure> {
        let mut saving = Saving {
            name,
            writer: Writer::new(out)?,
            all: safetensors::every_tensor_indexed(&plan.pieces),
            pieces: plan.pieces,
            next: 0,
            pending: Vec::new(),
            stream: Vec::new(),
            options,
            threads,
        };
        saving.feed(&plan.header)?;
        Ok(saving)
    }

    /// The next bytes of the original file.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), Failure> {
        while let Some(piece) = self.pieces.get(self.next) {
            let need = (piece.end - piece.start) as usize;
            if self.pending.is_empty() && data.len() >= need {
                let (bytes, rest) = data.split_at(need);
                data = rest;
                checkpoint::write_piece(
                    &mut self.writer,
                    piece,
                    bytes,
                    self.all,
                    &self.options,
                    self.threads,
                    &mut self.stream,
                )
                .map_err(|e| convert::failure(&self.name, e))?;
            } else {
                let take = (need - self.pending.len()).min(data.len());
                self.pending.extend_from_slice(&data[..take]);
                data = &data[take..];
                if self.pending.len() < need {
                    break;
                }
                checkpoint::write_piece(
                    &mut self.writer,
                    piece,
                    &self.pending,
                    self.all,
                    &self.options,
                    self.threads,
                    &mut self.stream,
                )
                .map_err(|e| convert::failure(&self.name, e))?;
                self.pending = Vec::new();
            }
            self.next += 1;
        }
        if !data.is_empty() {
            return Err(format!(
                "{}: {} bytes more than the tensors hold",
                self.name,
                data.len()
            )
            .into());
        }
        Ok(())
    }

    /// Writes the index once every byte is there; returns the checkpoint's size.
    pub fn finish(mut self) -> Result<u64, Failure> {
        self.feed(&[])?; // the empty pieces at the end
        if self.next < self.pieces.len() {
            let last = self.pieces[self.pieces.len() - 1].end;
            let missing = last - self.pieces[self.next].start - self.pending.len() as u64;
            return Err(format!("{}: {missing} bytes of the tensors never came", self.name).into());
        }
        Ok(self.writer.finish()?)
    }
}
