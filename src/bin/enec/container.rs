//! Writing the checkpoint container (FORMAT.md section 9) as a stream: payloads first, then the
//! index and the footer. Reading is the library's `enec::container`.

use enec::container::{
    encode_index_header, header_bytes, pad32, Entry, Footer, PieceKind, ALIGN, HEADER_BYTES,
};

use crate::error::Result;

/// Where the bytes go: the output file, or memory.
pub trait Sink {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]) -> Result<()>;
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }
}

impl Sink for crate::output::AtomicFile {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes)
    }
}

/// What the index says about a piece, apart from its positions.
pub struct PieceMeta<'a> {
    /// Verbatim or enec.
    pub kind: PieceKind,
    /// Tensor name, or empty.
    pub name: &'a str,
    /// Dtype name, or empty.
    pub dtype: &'a str,
    /// Shape (at most `MAX_RANK` dimensions, checked by the safetensors parser).
    pub shape: &'a [u64],
    /// Bytes of the piece in the original file.
    pub original_len: u64,
    /// `enec::wrapped::piece_checksum` of the original bytes for raw pieces, else 0.
    pub checksum: u32,
}

/// A container being written to `out`.
pub struct ContainerWriter<'s, S: Sink> {
    out: &'s mut S,
    pos: u64,
    original: u64,
    piece_start: u64,
    entries: Vec<u8>,
    count: u64,
}

impl<'s, S: Sink> ContainerWriter<'s, S> {
    /// Writes the container header.
    pub fn new(out: &'s mut S) -> Result<Self> {
        out.put(&header_bytes())?;
        Ok(ContainerWriter {
            out,
            pos: HEADER_BYTES as u64,
            original: 0,
            piece_start: HEADER_BYTES as u64,
            entries: Vec::new(),
            count: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.put(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> Result<()> {
        let zeros = [0u8; ALIGN as usize];
        let n = (pad32(self.pos) - self.pos) as usize;
        self.write(&zeros[..n])
    }

    /// Starts a piece: pads to a multiple of 32.
    pub fn begin(&mut self) -> Result<()> {
        self.pad()?;
        self.piece_start = self.pos;
        Ok(())
    }

    /// Appends payload bytes of the current piece.
    pub fn payload(&mut self, bytes: &[u8]) -> Result<()> {
        self.write(bytes)
    }

    /// Ends the current piece and records its index entry.
    pub fn end(&mut self, meta: PieceMeta<'_>) -> Result<()> {
        let entry = Entry {
            kind: meta.kind,
            name: meta.name,
            dtype: meta.dtype,
            shape: meta.shape.iter().copied().collect(),
            original_offset: self.original,
            original_len: meta.original_len,
            offset: self.piece_start,
            len: self.pos - self.piece_start,
            checksum: meta.checksum,
        };
        let mut buf = vec![0u8; entry.max_encoded_len()];
        let n = entry.encode(&mut buf).map_err(|e| e.to_string())?;
        self.entries.extend_from_slice(&buf[..n]);
        self.original += meta.original_len;
        self.count += 1;
        Ok(())
    }

    /// Writes the index and the footer; returns the container's size.
    pub fn finish(mut self) -> Result<u64> {
        self.pad()?;
        let index_offset = self.pos;
        let mut index = vec![0u8; 24];
        let n = encode_index_header(self.original, self.count, &mut index)
            .map_err(|e| e.to_string())?;
        index.truncate(n);
        index.extend_from_slice(&self.entries);
        self.write(&index)?;
        self.pad()?;
        self.write(&Footer::new(index_offset, &index).to_bytes())?;
        Ok(self.pos)
    }
}
