//! `enec`: compress, decompress and inspect safetensors checkpoints and raw weight arrays.
//!
//! Build and run with `cargo run --release --features cli -- [COMMAND]`; with no command it runs
//! the demo on the real weights embedded in the binary.

mod args;
mod bench;
mod compress;
mod decompress;
mod demo;
mod error;
mod folder;
mod info;
mod input;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;
use enec::EncodeOptions;

use crate::args::{threads, Cli, Command};
use crate::error::{say, Result};

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => demo::run(threads(None)),
        Some(Command::Demo(a)) => demo::run(threads(a.threads)),
        Some(Command::Compress(a)) => {
            let options = EncodeOptions::new(enec::Dtype::Bf16)
                .frame_len(a.frame)
                .map_err(|e| format!("--frame {}: {e}", a.frame))?
                .coding(a.coding.coding())
                .checksums(!a.no_checksum);
            let settings = compress::Settings {
                dtype: a.dtype.map(|d| d.dtype()),
                options,
                threads: threads(a.common.threads),
                progress: !a.common.quiet,
                force: a.common.force,
            };
            if a.input.is_dir() {
                let totals = folder::compress_dir(&a.input, &a.output, &settings, a.common.quiet)?;
                if !a.common.quiet {
                    let direction = enec::checkpoint::folder::Direction::Compress;
                    say!("{}", totals.line(&a.input, &a.output, direction));
                }
                return Ok(());
            }
            let report = compress::compress_file(&a.input, &a.output, &settings)?;
            if !a.common.quiet {
                say!("{}", report.line(&a.input, &a.output, settings.threads));
            }
            Ok(())
        }
        Some(Command::Decompress(a)) => {
            let n = threads(a.common.threads);
            if a.input.is_dir() {
                let (force, quiet) = (a.common.force, a.common.quiet);
                let totals = folder::decompress_dir(&a.input, &a.output, n, force, quiet)?;
                if !quiet {
                    let direction = enec::checkpoint::folder::Direction::Restore;
                    say!("{}", totals.line(&a.input, &a.output, direction));
                }
                return Ok(());
            }
            let report = decompress::decompress_file(
                &a.input,
                &a.output,
                n,
                a.common.force,
                !a.common.quiet,
            )?;
            if !a.common.quiet {
                say!("{}", report.line(&a.input, &a.output, n));
            }
            Ok(())
        }
        Some(Command::Info(a)) if a.input.is_dir() => folder::info(&a.input, a.json),
        Some(Command::Info(a)) => info::info(&a.input, a.json),
        Some(Command::Bench(a)) => {
            let options = EncodeOptions::new(a.dtype.dtype())
                .frame_len(a.frame)
                .map_err(|e| format!("--frame {}: {e}", a.frame))?
                .coding(a.coding.coding());
            let report = bench::bench(&a.input, options, threads(a.threads), a.repeats.into())?;
            if a.json {
                say!(
                    "{}",
                    serde_json::to_string(&report).map_err(|e| e.to_string())?
                );
            } else {
                say!("{}", report.table());
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.0 == error::STDOUT_CLOSED => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("enec: error: {e}");
            ExitCode::FAILURE
        }
    }
}
