//! `enec compress`: a safetensors checkpoint into a container, or a raw array into a stream.

use std::path::Path;
use std::time::Instant;

use enec::checkpoint::{self, safetensors::NotSafetensors, Error, Summary};
use enec::{Dtype, EncodeOptions};

use crate::error::{bail, Result};
use crate::input;
use crate::output;
use crate::progress::Progress;

/// What a compression did.
#[derive(Clone, Debug)]
pub struct Report {
    /// Bytes read.
    pub original: u64,
    /// Bytes written.
    pub compressed: u64,
    /// Tensors in the checkpoint (0 for a raw array).
    pub tensors: usize,
    /// Tensors kept as enec streams.
    pub encoded: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Report {
    /// One line for people.
    pub fn line(&self, input: &Path, output: &Path, threads: usize) -> String {
        let what = if self.tensors > 0 || self.encoded > 0 {
            format!(
                "safetensors, {} tensors, {} encoded",
                self.tensors, self.encoded
            )
        } else {
            "raw array".to_owned()
        };
        format!(
            "{} ({what}) -> {}: {} -> {} bytes, ratio {:.4}, {:.2} s, {:.0} MB/s, {threads} thread{}",
            input.display(),
            output.display(),
            self.original,
            self.compressed,
            self.original as f64 / self.compressed.max(1) as f64,
            self.seconds,
            self.original as f64 / 1e6 / self.seconds.max(1e-9),
            if threads == 1 { "" } else { "s" }
        )
    }
}

/// What `compress` was asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Raw array of this dtype, or (None) a safetensors file.
    pub dtype: Option<Dtype>,
    /// Coding, frame length and checksums (the dtype is per tensor).
    pub options: EncodeOptions,
    /// Worker threads.
    pub threads: usize,
    /// Show a progress bar (on a terminal, for long work).
    pub progress: bool,
    /// Overwrite the output.
    pub force: bool,
}

/// Compresses the file `input` into `output` (written atomically).
pub fn compress_file(input: &Path, output: &Path, settings: &Settings) -> Result<Report> {
    let start = Instant::now();
    let data = input::open(input)?;
    let name = input.display();
    let plan = match settings.dtype {
        Some(dtype) => {
            let eb = dtype.element_bytes();
            if data.len() % eb != 0 {
                bail!(
                    "{name}: {} bytes is not a whole number of {}-byte {} elements",
                    data.len(),
                    eb,
                    dtype.name()
                );
            }
            None
        }
        None => Some(checkpoint::plan_file(&data).map_err(|e| match e {
            Error::AlreadyEnec => {
                format!("{name}: {e} (use `enec decompress` or `enec info`)")
            }
            Error::NotSafetensors(NotSafetensors::OtherFormat(_)) => format!(
                "{name}: {e}\n  \
                 (to compress a raw little-endian array, pass --dtype bf16|fp16|fp32|e4m3|e5m2)"
            ),
            e => format!("{name}: {e}"),
        })?),
    };
    let mut out = output::AtomicFile::create(output, settings.force)?;
    let progress = Progress::new(data.len() as u64, "compress", settings.progress);
    // Input bytes are done once their output is written, in order.
    let release = input::Release::new(&data);
    let done = |bytes: &[u8]| {
        progress.inc(bytes.len() as u64);
        release.finished_slice(bytes);
    };
    let threads = settings.threads;
    let mut report = match &plan {
        Some(pieces) => {
            let summary =
                checkpoint::compress(&data, pieces, &settings.options, threads, &mut out, &done);
            report(data.len(), summary.map_err(|e| e.to_string())?)
        }
        None => {
            let options = EncodeOptions {
                dtype: settings.dtype.unwrap_or(Dtype::Bf16),
                ..settings.options
            };
            let compressed = checkpoint::compress_raw(&data, &options, threads, &mut out, &done);
            report(
                data.len(),
                Summary {
                    compressed: compressed.map_err(|e| e.to_string())?,
                    tensors: 0,
                    encoded: 0,
                },
            )
        }
    };
    drop(progress);
    out.commit()?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// The report of `summary`, the compression of `original` bytes (its time not yet measured).
pub fn report(original: usize, summary: Summary) -> Report {
    Report {
        original: original as u64,
        compressed: summary.compressed,
        tensors: summary.tensors,
        encoded: summary.encoded,
        seconds: 0.0,
    }
}
