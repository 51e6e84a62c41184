//! The CLI's error: a message a person can act on. Exit status 1.

use std::fmt;

/// What went wrong, in words.
#[derive(Debug)]
pub struct CliError(pub String);

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
