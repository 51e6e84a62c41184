//! The CLI's error: a message a person can act on. Exit status 1.

use std::fmt;

/// What went wrong, in words.
#[derive(Debug)]
pub struct CliError(pub String);

/// The message of the error that ends the program quietly when stdout is closed early
/// (`enec info big.enec | head`).
pub const STDOUT_CLOSED: &str = "stdout closed";

/// Writes a line to stdout; a closed stdout becomes [`STDOUT_CLOSED`] instead of a panic.
pub fn write_line(args: fmt::Arguments<'_>) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => CliError(STDOUT_CLOSED.into()),
            _ => CliError(format!("writing to stdout: {e}")),
        })
}

/// `println!` that returns an error instead of panicking when stdout is closed.
macro_rules! say {
    () => {
        $crate::error::write_line(format_args!(""))?
    };
    ($($arg:tt)*) => {
        $crate::error::write_line(format_args!($($arg)*))?
    };
}
pub(crate) use say;

/// Result alias of the CLI.
pub type Result<T> = std::result::Result<T, CliError>;

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for CliError {
    fn from(s: String) -> CliError {
        CliError(s)
    }
}

impl From<enec::Error> for CliError {
    fn from(e: enec::Error) -> CliError {
        CliError(e.to_string())
    }
}

impl From<&str> for CliError {
    fn from(s: &str) -> CliError {
        CliError(s.to_owned())
    }
}

/// Adds what was being done to an error: `context: error`.
pub trait Context<T> {
    /// Prefixes the error with `what()`.
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: fmt::Display> Context<T> for std::result::Result<T, E> {
    fn context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| CliError(format!("{}: {e}", what().into())))
    }
}

/// Returns early with a formatted [`CliError`].
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::CliError(format!($($arg)*)))
    };
}
pub(crate) use bail;
