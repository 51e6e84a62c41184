//! The tensors of a safetensors container that have no index entry of their own: small tensors
//! kept in runs of verbatim bytes (FORMAT.md 9.6), and empty tensors that lie in no piece. They
//! are found through the safetensors header, which is the container's first piece. No
//! allocation: the caller gives the table to fill (the C ABI, its handle memory;
//! `checkpoint::unindexed`, a vector).

use core::cmp::Ordering;

use super::safetensors_header::{Header, JsonStr};
use super::{Container, Entry, PieceKind};
use crate::checksum::h32;

/// A tensor the header names and the index does not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunTensor {
    /// Where the header member that describes it starts in the header JSON
    /// ([`Header::member_at`]).
    pub key_at: usize,
    /// Where its bytes start in the original file.
    pub start: u64,
    /// Where they end (exclusive).
    pub end: u64,
    /// The run of verbatim bytes that holds it: the run's entry number and its position in the
    /// entries ([`super::Index::entries_from`]); `None` for an empty tensor outside every run.
    pub run: Option<(u64, usize)>,
}

/// Why the tensors kept in runs cannot be listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunTensorsError {
    /// The table holds fewer slots than the header has members.
    TableTooSmall {
        /// Slots needed: [`Header::members`]' count.
        needed: usize,
    },
    /// The header's run of verbatim bytes fails its checksum (entry number).
    HeaderChecksumMismatch {
        /// The run's entry number.
        entry: u64,
    },
    /// The header names a tensor twice (safetensors refuses such a file; the index holds at most
    /// one of them): where the second member starts.
    RepeatedName {
        /// The second member's [`Header::member_at`] offset.
        key_at: usize,
    },
    /// The header names a non-empty tensor that neither has an entry nor lies in a run.
    InNoPiece(RunTensor),
}

/// The safetensors header of `container`: its first piece, when that is a run of verbatim bytes
/// at the start of the original file which starts with a safetensors header; with the run's
/// entry number and entry. Not verified (see [`run_tensors`]).
pub fn header_of<'a>(container: &Container<'a>) -> Option<(u64, Entry<'a>, Header<'a>)> {
    let (number, first) = container.entries().next()?;
    if first.kind != PieceKind::Raw || first.is_tensor() || first.original_offset != 0 {
        return None;
    }
    let header = Header::parse(container.payload(&first), container.original_len()).ok()?;
    Some((number, first, header))
}

/// Fills the start of `table` with the tensors that the header of `container` (from
/// [`header_of`]) names and its index does not, sorted as FORMAT.md 9.6 orders pieces (start,
/// end, name); returns how many. `table` needs a slot per header member. None are found where
/// the header is not one that compressing accepts (a member is not a tensor, or two overlap):
/// as for a file that was never read as safetensors. A name the header holds twice is an error,
/// as safetensors makes it: compressing kept one of the two (the last). The header's run is verified first, so that
/// a damaged header is an error, not tensors silently missing. Time: the header, plus the
/// entries, plus (members) log (members) name comparisons.
pub fn run_tensors(
    container: &Container<'_>,
    (number, run, header): &(u64, Entry<'_>, Header<'_>),
    table: &mut [RunTensor],
) -> Result<usize, RunTensorsError> {
    if h32(container.payload(run)) != run.checksum {
        return Err(RunTensorsError::HeaderChecksumMismatch { entry: *number });
    }
    let needed = header.members().count();
    let Some(table) = table.get_mut(..needed) else {
        return Err(RunTensorsError::TableTooSmall { needed });
    };
    for (slot, m) in table.iter_mut().zip(header.members()) {
        *slot = RunTensor {
            key_at: m.key_at,
            ..RunTensor::default()
        };
    }
    let key = |t: &RunTensor| header.key_at(t.key_at).unwrap_or(JsonStr::EMPTY);
    table.sort_unstable_by(|a, b| key(a).cmp_text(&key(b)).then(a.key_at.cmp(&b.key_at)));
    if let Some(p) = table
        .windows(2)
        .find(|p| key(&p[0]).cmp_text(&key(&p[1])) == Ordering::Equal)
    {
        return Err(RunTensorsError::RepeatedName {
            key_at: p[1].key_at,
        });
    }
    let mut n = 0;
    for i in 0..table.len() {
        let Some(member) = header.member_at(table[i].key_at) else {
            return Ok(0);
        };
        match header.tensor(&member) {
            Err(_) => return Ok(0),
            Ok(None) => {}
            Ok(Some(t)) => {
                table[n] = RunTensor {
                    start: t.start,
                    end: t.end,
                    ..table[i]
                };
                n += 1;
            }
        }
    }
    let table = &mut table[..n];
    table.sort_unstable_by(|a, b| {
        (a.start, a.end)
            .cmp(&(b.start, b.end))
            .then_with(|| key(a).cmp_text(&key(b)))
    });
    if table.windows(2).any(|p| p[1].start < p[0].end) {
        return Ok(0);
    }
    // Walk the entries beside the sorted tensors: `lag` stays at the first entry that ends at or
    // after the tensor's start, so that the entries a tensor is compared with are those around
    // its start.
    let mut lag = container.entries();
    let mut found = 0;
    for i in 0..table.len() {
        let t = table[i];
        loop {
            let mut ahead = lag.clone();
            match ahead.next() {
                Some((_, e)) if e.original_offset + e.original_len < t.start => lag = ahead,
                _ => break,
            }
        }
        let name = key(&t);
        let mut scan = lag.clone();
        let mut indexed = false;
        loop {
            let position = scan.position();
            let Some((number, e)) = scan.next() else {
                break;
            };
            if e.original_offset > t.start || (t.end > t.start && e.original_offset >= t.end) {
                break;
            }
            let end = e.original_offset + e.original_len;
            let own = e.is_tensor()
                && e.original_offset == t.start
                && end == t.end
                && name.is(e.name.as_bytes());
            if own {
                indexed = true;
                break;
            }
            let holds = e.kind == PieceKind::Raw
                && !e.is_tensor()
                && e.original_offset <= t.start
                && (t.end < end || (t.end == end && t.end > t.start));
            if holds {
                table[i].run = Some((number, position));
            }
        }
        if indexed {
            continue;
        }
        if table[i].run.is_none() && t.end > t.start {
            return Err(RunTensorsError::InNoPiece(t));
        }
        table[found] = table[i];
        found += 1;
    }
    Ok(found)
}
