//! A progress bar on stderr, shown only for long work and only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Work below this many bytes finishes too fast to need a bar.
const MIN_BYTES: u64 = 256 << 20;

/// A progress bar that may be hidden.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar over `total` bytes labelled `what`, if `enabled`, stderr is a terminal and the work
    /// is long enough to need one.
    pub fn new(total: u64, what: &str, enabled: bool) -> Progress {
        if !enabled || total < MIN_BYTES || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template(
            "{msg} {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_owned());
        Progress(Some(bar))
    }

    /// Advances by `bytes`.
    pub fn inc(&self, bytes: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(bytes);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
