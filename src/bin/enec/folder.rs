//! `enec compress DIR OUT`, `enec decompress DIR OUT`, `enec info DIR`: a model folder file by
//! file, as [`enec::checkpoint::folder`] plans it.

use std::fs;
use std::io;
use std::path::Path;
use std::time::Instant;

use enec::checkpoint::folder::{self, Direction, Item, Step};
use serde_json::json;

use crate::compress::{self, Settings};
use crate::decompress;
use crate::error::{bail, say, Context, Result};
use crate::input;
use crate::output::AtomicFile;

/// What a folder's compression or restore did.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Files compressed or restored.
    pub coded: usize,
    /// Files copied.
    pub copied: usize,
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Totals {
    /// One line for people.
    pub fn line(&self, input: &Path, output: &Path, direction: Direction) -> String {
        let verb = match direction {
            Direction::Compress => "compressed",
            Direction::Restore => "restored",
        };
        format!(
            "{} -> {}: {} file{} {verb}, {} copied; {} -> {} bytes, ratio {:.4}, {:.2} s",
            input.display(),
            output.display(),
            self.coded,
            if self.coded == 1 { "" } else { "s" },
            self.copied,
            self.read,
            self.written,
            match direction {
                Direction::Compress => self.read as f64 / self.written.max(1) as f64,
                Direction::Restore => self.written as f64 / self.read.max(1) as f64,
            },
            self.seconds
        )
    }
}

/// The plan of `input` going `direction` into `output`, refused before anything is written
/// where an output file exists and `force` is off.
fn plan(direction: Direction, input: &Path, output: &Path, force: bool) -> Result<Vec<Item>> {
    let fail = |e: folder::FolderError| e.to_string();
    folder::check_output(input, output).map_err(fail)?;
    let items = folder::plan(direction, input).map_err(fail)?;
    if !force {
        if let Some(item) = items
            .iter()
            .find(|i| i.step != Step::Folder && output.join(&i.to).exists())
        {
            bail!(
                "{}: already exists (pass --force to overwrite it)",
                output.join(&item.to).display()
            );
        }
    }
    if output.exists() && !output.is_dir() {
        bail!("{}: not a folder", output.display());
    }
    Ok(items)
}

/// Runs `items` into `output`: folders made, files copied, and `code` for the others (it
/// returns the bytes it wrote).
fn run(
    items: &[Item],
    output: &Path,
    force: bool,
    mut code: impl FnMut(&Item, &Path) -> Result<u64>,
) -> Result<Totals> {
    let start = Instant::now();
    fs::create_dir_all(output).context(|| format!("{}: cannot make it", output.display()))?;
    let mut totals = Totals::default();
    for item in items {
        let to = output.join(&item.to);
        match item.step {
            Step::Folder => {
                fs::create_dir_all(&to).context(|| format!("{}: cannot make it", to.display()))?;
                continue;
            }
            Step::Copy => {
                totals.written += copy(&item.from, &to, force)?;
                totals.copied += 1;
            }
            Step::Compress | Step::Restore => {
                totals.written += code(item, &to)?;
                totals.coded += 1;
            }
        }
        totals.read += item.bytes;
    }
    totals.seconds = start.elapsed().as_secs_f64();
    Ok(totals)
}

/// Copies the file `from` to `to` (written atomically); returns the bytes copied.
fn copy(from: &Path, to: &Path, force: bool) -> Result<u64> {
    let mut source =
        fs::File::open(from).context(|| format!("{}: cannot open it", from.display()))?;
    let mut out = AtomicFile::create(to, force)?;
    let n = io::copy(&mut source, &mut out)
        .context(|| format!("copying {} to {}", from.display(), to.display()))?;
    out.commit()?;
    Ok(n)
}

/// `enec compress DIR OUT`: every safetensors file of `input` compressed (a line each unless
/// `quiet`), every other file copied.
pub fn compress_dir(
    input: &Path,
    output: &Path,
    settings: &Settings,
    quiet: bool,
) -> Result<Totals> {
    if settings.dtype.is_some() {
        bail!(
            "{}: a folder; --dtype is for a raw array file",
            input.display()
        );
    }
    let items = plan(Direction::Compress, input, output, settings.force)?;
    run(&items, output, settings.force, |item, to| {
        let report = compress::compress_file(&item.from, to, settings)?;
        if !quiet {
            say!("{}", report.line(&item.from, to, settings.threads));
        }
        Ok(report.compressed)
    })
}

/// `enec decompress DIR OUT`: every enec file of `input` restored (a line each unless `quiet`),
/// every other file copied.
pub fn decompress_dir(
    input: &Path,
    output: &Path,
    threads: usize,
    force: bool,
    quiet: bool,
) -> Result<Totals> {
    let items = plan(Direction::Restore, input, output, force)?;
    run(&items, output, force, |item, to| {
        let report = decompress::decompress_file(&item.from, to, threads, force, !quiet)?;
        if !quiet {
            say!("{}", report.line(&item.from, to, threads));
        }
        Ok(report.original)
    })
}

/// `enec info DIR`: per file of the folder, its bytes and, for an enec file, the bytes it
/// restores and its tensors; then the totals. Nothing is decoded.
pub fn info(input: &Path, as_json: bool) -> Result<()> {
    let items = folder::plan(Direction::Restore, input).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for item in items.iter().filter(|i| i.step != Step::Folder) {
        let (original, tensors) = if item.step == Step::Restore {
            let data = input::open(&item.from)?;
            let name = item.from.display().to_string();
            let kind = decompress::open(&name, &data)?;
            let tensors = match &kind {
                enec::checkpoint::Kind::Container(c) => {
                    c.entries().filter(|(_, e)| e.is_tensor()).count()
                }
                enec::checkpoint::Kind::Stream(_) => 0,
            };
            (kind.original_len(), Some(tensors))
        } else {
            (item.bytes, None)
        };
        rows.push((item, original, tensors));
    }
    let stored: u64 = rows.iter().map(|(i, ..)| i.bytes).sum();
    let original: u64 = rows.iter().map(|(_, o, _)| o).sum();
    let ratio = |o: u64, s: u64| if s == 0 { 1.0 } else { o as f64 / s as f64 };
    let enec_files = rows.iter().filter(|(.., t)| t.is_some()).count();
    if as_json {
        let files: Vec<_> = rows
            .iter()
            .map(|(item, original, tensors)| {
                json!({
                    "file": item.relative.display().to_string(),
                    "restores_to": item.to.display().to_string(),
                    "kind": if tensors.is_some() { "enec" } else { "copied" },
                    "file_bytes": item.bytes,
                    "original_bytes": original,
                    "indexed_tensors": tensors,
                    "ratio": ratio(*original, item.bytes),
                })
            })
            .collect();
        let doc = json!({
            "folder": input.display().to_string(),
            "file_bytes": stored,
            "original_bytes": original,
            "ratio": ratio(original, stored),
            "enec_files": enec_files,
            "other_files": rows.len() - enec_files,
            "files": files,
        });
        say!("{doc:#}");
        return Ok(());
    }
    say!(
        "{}: folder of {} enec file{} and {} other{}, {stored} bytes, restores {original} bytes: ratio {:.4}",
        input.display(),
        enec_files,
        if enec_files == 1 { "" } else { "s" },
        rows.len() - enec_files,
        if rows.len() - enec_files == 1 { "" } else { "s" },
        ratio(original, stored)
    );
    say!();
    let width = rows
        .iter()
        .map(|(i, ..)| i.relative.display().to_string().len())
        .max()
        .unwrap_or(0)
        .clamp(4, 70);
    say!(
        "{:<width$} {:>14} {:>14} {:>7} {:>8}",
        "file",
        "bytes",
        "restores",
        "ratio",
        "tensors"
    );
    for (item, original, tensors) in &rows {
        say!(
            "{:<width$} {:>14} {:>14} {:>7.4} {:>8}",
            item.relative.display().to_string(),
            item.bytes,
            original,
            ratio(*original, item.bytes),
            tensors.map_or("-".to_owned(), |t| t.to_string())
        );
    }
    Ok(())
}
