//! `enec info`: what an .enec file holds, from its headers alone (nothing is decoded).

use std::path::Path;

use enec::container::{Container, PieceKind};
use enec::{FrameCoding, StreamInfo};
use serde_json::json;

use crate::decompress::{self, Kind};
use crate::error::{say, Result};
use crate::input;
use enec::checkpoint;

/// What one piece holds.
struct Row {
    /// A tensor of the original file (else verbatim bytes, or a bare stream).
    tensor: bool,
    /// Tensors of the original file that lie in these verbatim bytes, with no entry of their own.
    holds: usize,
    name: String,
    dtype: String,
    shape: Vec<u64>,
    kind: PieceKind,
    original: u64,
    stored: u64,
    stream: Option<StreamInfo>,
    /// Frames per coding: stored, groups, ranked.
    codings: [u64; 3],
}

impl Row {
    fn frames(&self) -> u64 {
        self.codings.iter().sum()
    }
}

fn ratio(original: u64, stored: u64) -> f64 {
    if stored == 0 {
        1.0
    } else {
        original as f64 / stored as f64
    }
}

fn rows(name: &str, data: &[u8], kind: &Kind<'_>) -> Result<Vec<Row>> {
    let row = |name: &str, dtype: &str, shape: Vec<u64>, kind, original, stored: usize| Row {
        tensor: false,
        holds: 0,
        name: name.to_owned(),
        dtype: dtype.to_owned(),
        shape,
        kind,
        original,
        stored: stored as u64,
        stream: None,
        codings: [0; 3],
    };
    let mut rows: Vec<Row> = match kind {
        Kind::Stream(info) => vec![row(
            "",
            info.dtype.name(),
            vec![info.element_count],
            PieceKind::Enec,
            info.decoded_bytes(),
            data.len(),
        )],
        Kind::Container(c) => c
            .entries()
            .map(|(_, e)| {
                let stored = c.payload(&e).len();
                let row = row(
                    e.name,
                    e.dtype,
                    e.shape.to_vec(),
                    e.kind,
                    e.original_len,
                    stored,
                );
                Row {
                    tensor: e.is_tensor(),
                    ..row
                }
            })
            .collect(),
    };
    if let Kind::Container(c) = kind {
        count_unindexed(c, &mut rows);
    }
    let sources = decompress::sources(name, data, kind)?;
    for (row, source) in rows.iter_mut().zip(&sources) {
        if row.kind != PieceKind::Enec {
            continue;
        }
        let fail = |e: enec::Error| format!("{name}: {}: {e}", source.what);
        let frames = enec::frames(source.payload).map_err(fail)?;
        row.stream = Some(*frames.info());
        for frame in frames {
            row.codings[match frame.map_err(fail)?.coding {
                FrameCoding::Stored => 0,
                FrameCoding::Groups => 1,
                FrameCoding::Ranked => 2,
            }] += 1;
        }
    }
    Ok(rows)
}

/// Counts, in the rows of the verbatim pieces of `c`, the tensors that the safetensors header at
/// its start names and that have no entry of their own (FORMAT.md 9.6). Nothing is counted when
/// the first piece holds no header, or one that fails its checksum.
fn count_unindexed(c: &Container<'_>, rows: &mut [Row]) {
    let Ok(found) = checkpoint::unindexed(c) else {
        return;
    };
    for (number, _) in found.iter().filter_map(|u| u.run.as_ref()) {
        // Rows are the entries, in order.
        if let Some(row) = usize::try_from(*number).ok().and_then(|n| rows.get_mut(n)) {
            row.holds += 1;
        }
    }
}

fn shape_text(shape: &[u64]) -> String {
    if shape.is_empty() {
        "-".into()
    } else {
        shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("x")
    }
}

/// Prints what `input` holds, as a table or as JSON.
pub fn info(input: &Path, as_json: bool) -> Result<()> {
    let data = input::open(input)?;
    let name = input.display().to_string();
    let kind = decompress::open(&name, &data)?;
    let rows = rows(&name, &data, &kind)?;
    let file_bytes = data.len() as u64;
    let original: u64 = rows.iter().map(|r| r.original).sum();
    let encoded: Vec<&Row> = rows.iter().filter(|r| r.kind == PieceKind::Enec).collect();
    let enc_original: u64 = encoded.iter().map(|r| r.original).sum();
    let enc_stored: u64 = encoded.iter().map(|r| r.stored).sum();
    let mut codings = [0u64; 3];
    for r in &encoded {
        for (total, n) in codings.iter_mut().zip(r.codings) {
            *total += n;
        }
    }
    let frame_lens: std::collections::BTreeSet<usize> = encoded
        .iter()
        .filter_map(|r| r.stream.map(|s| s.frame_len()))
        .collect();
    let checksums = encoded
        .iter()
        .all(|r| r.stream.is_some_and(|s| s.checksums));
    let what = match kind {
        Kind::Container(_) => "checkpoint container",
        Kind::Stream(_) => "stream",
    };
    if as_json {
        let pieces: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "name": r.name,
                    "dtype": r.dtype,
                    "shape": r.shape,
                    "kind": if r.kind == PieceKind::Enec { "enec" } else { "raw" },
                    "tensors_within": r.holds,
                    "original_bytes": r.original,
                    "stored_bytes": r.stored,
                    "ratio": ratio(r.original, r.stored),
                    "frames": r.frames(),
                    "frame_len": r.stream.map(|s| s.frame_len()),
                    "checksums": r.stream.map(|s| s.checksums),
                    "codings": { "stored": r.codings[0], "groups": r.codings[1], "ranked": r.codings[2] },
                })
            })
            .collect();
        let doc = json!({
            "file": name,
            "kind": what,
            "file_bytes": file_bytes,
            "original_bytes": original,
            "ratio": ratio(original, file_bytes),
            "encoded": {
                "pieces": encoded.len(),
                "original_bytes": enc_original,
                "stored_bytes": enc_stored,
                "ratio": ratio(enc_original, enc_stored),
                "frames": codings.iter().sum::<u64>(),
                "codings": { "stored": codings[0], "groups": codings[1], "ranked": codings[2] },
                "checksums": checksums,
            },
            "pieces": pieces,
        });
        say!("{doc:#}");
        return Ok(());
    }
    let label = |r: &Row| {
        if !r.tensor && r.holds > 0 {
            let s = if r.holds == 1 { "" } else { "s" };
            format!("(verbatim bytes, {} tensor{s})", r.holds)
        } else if !r.tensor {
            "(verbatim bytes)".to_owned()
        } else if r.name.is_empty() {
            "\"\"".to_owned()
        } else {
            r.name.clone()
        }
    };
    let width = rows
        .iter()
        .map(|r| label(r).len())
        .max()
        .unwrap_or(0)
        .clamp(6, 60);
    say!(
        "{name}: enec {what}, {file_bytes} bytes, restores {original} bytes: ratio {:.4}",
        ratio(original, file_bytes)
    );
    say!(
        "encoded: {} piece{} of {enc_original} bytes in {enc_stored} (ratio {:.4}); frames {} (ranked {}, groups {}, stored {}); frame length {}; checksums {}",
        encoded.len(),
        if encoded.len() == 1 { "" } else { "s" },
        ratio(enc_original, enc_stored),
        codings.iter().sum::<u64>(),
        codings[2],
        codings[1],
        codings[0],
        frame_lens.iter().map(usize::to_string).collect::<Vec<_>>().join(", "),
        if checksums { "on" } else { "OFF" },
    );
    say!();
    say!(
        "{:<width$} {:<5} {:<14} {:>12} {:>12} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "tensor",
        "dtype",
        "shape",
        "original",
        "stored",
        "ratio",
        "frames",
        "ranked",
        "groups",
        "stored"
    );
    for r in &rows {
        let label = label(r);
        let (frames, ranked, groups, stored) = if r.kind == PieceKind::Enec {
            (
                r.frames().to_string(),
                r.codings[2].to_string(),
                r.codings[1].to_string(),
                r.codings[0].to_string(),
            )
        } else {
            ("raw".into(), "-".into(), "-".into(), "-".into())
        };
        say!(
            "{label:<width$} {:<5} {:<14} {:>12} {:>12} {:>7.4} {frames:>7} {ranked:>7} {groups:>7} {stored:>7}",
            if r.dtype.is_empty() { "-" } else { &r.dtype },
            shape_text(&r.shape),
            r.original,
            r.stored,
            ratio(r.original, r.stored),
        );
    }
    Ok(())
}
