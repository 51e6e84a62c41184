//! Writing a container (FORMAT.md section 9) as a stream: the payloads first, then the index and
//! the footer, so a writer never seeks and holds only the index in memory.

use std::io::{self, Write};
use std::vec::Vec;

use super::{encode_index_header, header_bytes, pad32, Entry, Footer, PieceKind, ALIGN};
use super::{HEADER_BYTES, MAX_RANK};
use crate::checksum::H32;

/// What the index says about a piece, apart from its positions (the writer knows those).
#[derive(Clone, Copy, Debug)]
pub struct PieceMeta<'a> {
    /// How the payload is stored.
    pub kind: PieceKind,
    /// Tensor name (a tensor may be named `""`); empty for pieces that are not a tensor.
    pub name: &'a str,
    /// The original file's dtype name; empty for pieces that are not a tensor. A tensor named
    /// `""` needs one: readers tell tensors by their name or dtype ([`super::Entry::is_tensor`]).
    pub dtype: &'a str,
    /// Tensor shape: at most [`MAX_RANK`] dimensions.
    pub shape: &'a [u64],
    /// Bytes of the piece in the original file.
    pub original_len: u64,
    /// [`crate::wrapped::piece_checksum`] of the original bytes for raw pieces; 0 for enec pieces.
    pub checksum: u32,
}

/// A container being written to `out`: call [`Writer::begin`], [`Writer::payload`] (any number
/// of times) and [`Writer::end`] per piece, in the order of the original file, then
/// [`Writer::finish`].
///
/// ```
/// use enec::container::{Container, PieceKind, PieceMeta, Writer};
///
/// let data = b"hello, checkpoint";
/// let mut file = Vec::new();
/// let mut writer = Writer::new(&mut file)?;
/// writer.begin()?;
/// writer.payload(data)?;
/// let checksum = enec::wrapped::piece_checksum(data);
/// let meta = PieceMeta { kind: PieceKind::Raw, name: "", dtype: "", shape: &[], original_len: 17, checksum };
/// writer.end(meta)?;
/// assert_eq!(writer.finish()?, file.len() as u64);
/// assert_eq!(Container::parse(&file).unwrap().original_len(), 17);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Writer<W: Write> {
    out: W,
    pos: u64,
    original: u64,
    piece_start: u64,
    entries: Vec<u8>,
    count: u64,
    /// The run of verbatim bytes being written ([`Writer::verbatim`]), if one is open.
    run: Option<Run>,
}

/// The checksum of an open run: whole 128-byte blocks hashed, the rest waiting in `tail`.
struct Run {
    hash: H32,
    tail: Vec<u8>,
}

/// Bytes of one block of [`H32`].
const BLOCK: usize = 128;

impl<W: Write> Writer<W> {
    /// Writes the container header.
    pub fn new(mut out: W) -> io::Result<Writer<W>> {
        out.write_all(&header_bytes())?;
        Ok(Writer {
            out,
            pos: HEADER_BYTES as u64,
            original: 0,
            piece_start: HEADER_BYTES as u64,
            entries: Vec::new(),
            count: 0,
            run: None,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let zeros = [0u8; ALIGN as usize];
        self.write(&zeros[..(pad32(self.pos) - self.pos) as usize])
    }

    /// Starts a piece at the next multiple of 32 (ending the run of verbatim bytes, if any).
    pub fn begin(&mut self) -> io::Result<()> {
        self.close_run()?;
        self.pad()?;
        self.piece_start = self.pos;
        Ok(())
    }

    /// Appends payload bytes of the current piece.
    pub fn payload(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes)
    }

    /// Appends `bytes` to the run of verbatim bytes that needs no entry per part: the file
    /// header, gaps, and the tensors that [`super::own_raw_piece`] leaves out of the index. Calls
    /// with no [`Writer::begin`] between them make one raw, unnamed piece, ended by the next
    /// [`Writer::begin`] or by [`Writer::finish`].
    pub fn verbatim(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.run.is_none() {
            self.pad()?;
            self.piece_start = self.pos;
            self.run = Some(Run {
                hash: H32::new(),
                tail: Vec::with_capacity(BLOCK),
            });
        }
        self.write(bytes)?;
        if let Some(run) = &mut self.run {
            if !run.tail.is_empty() {
                let take = (BLOCK - run.tail.len()).min(bytes.len());
                run.tail.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if run.tail.len() == BLOCK {
                    run.hash.update(&run.tail);
                    run.tail.clear();
                }
            }
            let whole = bytes.len() / BLOCK * BLOCK;
            run.hash.update(&bytes[..whole]);
            run.tail.extend_from_slice(&bytes[whole..]);
        }
        Ok(())
    }

    /// Ends the open run of verbatim bytes, if any, with its entry.
    fn close_run(&mut self) -> io::Result<()> {
        let Some(mut run) = self.run.take() else {
            return Ok(());
        };
        run.hash.update(&run.tail);
        self.end(PieceMeta {
            kind: super::PieceKind::Raw,
            name: "",
            dtype: "",
            shape: &[],
            original_len: self.pos - self.piece_start,
            checksum: run.hash.finish(),
        })
    }

    /// Ends the current piece (its payload written) and records its index entry. A shape of
    /// more than [`MAX_RANK`] dimensions is an `InvalidInput` error.
    pub fn end(&mut self, meta: PieceMeta<'_>) -> io::Result<()> {
        let shape = heapless::Vec::from_slice(meta.shape).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                std::format!(
                    "a shape of {} dimensions (at most {MAX_RANK})",
                    meta.shape.len()
                ),
            )
        })?;
        let entry = Entry {
            kind: meta.kind,
            name: meta.name,
            dtype: meta.dtype,
            shape,
            original_offset: self.original,
            original_len: meta.original_len,
            offset: self.piece_start,
            len: self.pos - self.piece_start,
            checksum: meta.checksum,
        };
        let at = self.entries.len();
        self.entries.resize(at + entry.max_encoded_len(), 0);
        let n = entry.encode(&mut self.entries[at..]).map_err(invalid)?;
        self.entries.truncate(at + n);
        self.original += meta.original_len;
        self.count += 1;
        Ok(())
    }

    /// Writes the index and the footer and flushes `out`; returns the container's size.
    pub fn finish(mut self) -> io::Result<u64> {
        self.close_run()?;
        self.pad()?;
        let index_offset = self.pos;
        let mut index = std::vec![0u8; 24];
        let n = encode_index_header(self.original, self.count, &mut index).map_err(invalid)?;
        index.truncate(n);
        index.extend_from_slice(&self.entries);
        self.write(&index)?;
        self.pad()?;
        self.write(&Footer::new(index_offset, &index).to_bytes())?;
        self.out.flush()?;
        Ok(self.pos)
    }
}

fn invalid(e: super::ContainerError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{Container, PieceKind};

    /// Verbatim parts of any lengths make one raw piece whose checksum is that of their bytes;
    /// a piece of its own ends the run, and the next verbatim bytes start another.
    #[test]
    fn verbatim_parts_make_one_run() {
        let bytes: Vec<u8> = (0..2000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut file = Vec::new();
        let mut writer = Writer::new(&mut file).unwrap();
        let mut at = 0;
        for len in [1, 127, 0, 300, 5, 128, 200] {
            writer.verbatim(&bytes[at..at + len]).unwrap();
            at += len;
        }
        writer.begin().unwrap();
        writer.payload(&bytes[at..at + 100]).unwrap();
        let own = &bytes[at..at + 100];
        let meta = PieceMeta {
            kind: PieceKind::Raw,
            name: "t",
            dtype: "U8",
            shape: &[100],
            original_len: 100,
            checksum: crate::checksum::h32(own),
        };
        writer.end(meta).unwrap();
        at += 100;
        writer.verbatim(&bytes[at..]).unwrap();
        writer.finish().unwrap();

        let c = Container::parse(&file).unwrap();
        let entries: Vec<_> = c.entries().collect();
        assert_eq!(entries.len(), 3);
        let mut restored = Vec::new();
        for (i, e) in &entries {
            let mut out = std::vec![0u8; e.original_len as usize];
            c.decode_entry(*i, e, &mut out).unwrap();
            restored.extend_from_slice(&out);
        }
        assert_eq!(restored, bytes);
        assert_eq!(entries[0].1.original_len, 761);
        assert_eq!(c.verbatim_at(700, 61).unwrap().0, 0);
        assert_eq!(c.verbatim_at(700, 62).map(|f| f.0), None);
        assert_eq!(c.verbatim_at(900, 10).unwrap().0, 2);
    }
}
