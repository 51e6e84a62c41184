//! Command-line arguments (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Lossless compression of AI model weights (bf16, fp16, fp32, FP8 e4m3 and e5m2) and safetensors checkpoints.
///
/// With no arguments, runs the demo: compress, decompress and verify the real MiniLM weights
/// embedded in this binary.
#[derive(Debug, Parser)]
#[command(name = "enec", version, propagate_version = true)]
pub struct Cli {
    /// What to do (default: demo).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compress a safetensors checkpoint (detected from its content) into an .enec container,
    /// with --dtype a raw little-endian array into an enec stream, or a model folder file by
    /// file (every NAME.safetensors into NAME.safetensors.enec, other files copied).
    Compress(CompressArgs),
    /// Restore the original file, byte for byte, from an .enec container or stream, or a model
    /// folder from a compressed one.
    Decompress(DecompressArgs),
    /// Show the tensors of an .enec file (sizes, ratios, codings and frames), or the files of a
    /// compressed model folder.
    Info(InfoArgs),
    /// Compress, decompress and verify the real MiniLM weights embedded in this binary.
    Demo(DemoArgs),
    /// Measure memcpy, encode and decode throughput of a raw array in one process.
    Bench(BenchArgs),
}

/// Element type of a raw input array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DtypeArg {
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    Fp16,
    /// IEEE binary32.
    Fp32,
    /// OCP float8 e4m3fn.
    E4m3,
    /// OCP float8 e5m2.
    E5m2,
}

impl DtypeArg {
    /// The library's dtype.
    pub fn dtype(self) -> enec::Dtype {
        match self {
            DtypeArg::Bf16 => enec::Dtype::Bf16,
            DtypeArg::Fp16 => enec::Dtype::Fp16,
            DtypeArg::Fp32 => enec::Dtype::Fp32,
            DtypeArg::E4m3 => enec::Dtype::E4m3,
            DtypeArg::E5m2 => enec::Dtype::E5m2,
        }
    }
}

/// Exponent coding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CodingArg {
    /// Per frame, the smallest of ranked, groups and stored (slower to encode).
    Auto,
    /// The ENEC paper's groups coding (or stored where smaller).
    Groups,
    /// The ranked escape-level coding (or stored where smaller).
    #[default]
    Ranked,
}

impl CodingArg {
    /// The library's coding.
    pub fn coding(self) -> enec::Coding {
        match self {
            CodingArg::Auto => enec::Coding::Auto,
            CodingArg::Groups => enec::Coding::Groups,
            CodingArg::Ranked => enec::Coding::Ranked,
        }
    }
}

/// Options shared by the commands that write a file.
#[derive(Debug, Args)]
pub struct Common {
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Overwrite OUT if it exists.
    #[arg(long, short)]
    pub force: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `enec compress`.
#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Input: a .safetensors file, a raw array with --dtype, or a folder.
    pub input: PathBuf,
    /// Output .enec file (written under a temporary name, then renamed), or for a folder the
    /// output folder.
    pub output: PathBuf,
    /// IN is a raw little-endian array of this type (not a safetensors file).
    #[arg(long, value_enum)]
    pub dtype: Option<DtypeArg>,
    /// Exponent coding, chosen per frame.
    #[arg(long, value_enum, default_value_t = CodingArg::Ranked)]
    pub coding: CodingArg,
    /// Elements per frame: a power of two from 1024 to 65536.
    #[arg(long, default_value_t = 16384)]
    pub frame: u32,
    /// Do not store a checksum per frame.
    #[arg(long)]
    pub no_checksum: bool,
    #[command(flatten)]
    pub common: Common,
}

/// `enec decompress`.
#[derive(Debug, Args)]
pub struct DecompressArgs {
    /// Input .enec file, or a compressed folder.
    pub input: PathBuf,
    /// Output: the original file (written under a temporary name, then renamed), or for a
    /// folder the output folder.
    pub output: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

/// `enec info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Input .enec file, or a compressed folder.
    pub input: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `enec bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A raw little-endian array.
    pub input: PathBuf,
    /// Element type of the array.
    #[arg(long, value_enum)]
    pub dtype: DtypeArg,
    /// Exponent coding, chosen per frame.
    #[arg(long, value_enum, default_value_t = CodingArg::Ranked)]
    pub coding: CodingArg,
    /// Elements per frame: a power of two from 1024 to 65536.
    #[arg(long, default_value_t = 16384)]
    pub frame: u32,
    /// Timed runs per measurement (the best counts), after one warm-up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub repeats: u16,
    /// Threads for the multi-threaded rows (default: all cores).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `enec demo`.
#[derive(Debug, Default, Args)]
pub struct DemoArgs {
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

/// The thread count to use: `requested`, else every core.
pub fn threads(requested: Option<u16>) -> usize {
    requested.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}
