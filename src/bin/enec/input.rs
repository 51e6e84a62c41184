//! Reading IN: memory-mapped, so that only the pages being worked on are in memory.

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Context, Result};

/// The bytes of an input file.
pub enum Input {
    /// A mapped file.
    Mapped(Mmap),
    /// An empty file (which cannot be mapped).
    Empty,
}

impl Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Mapped(m) => m,
            Input::Empty => &[],
        }
    }
}

/// Maps `path` read-only.
pub fn open(path: &Path) -> Result<Input> {
    let what = || path.display().to_string();
    let file = File::open(path).context(what)?;
    let meta = file.metadata().context(what)?;
    if meta.is_dir() {
        return Err(format!("{}: is a directory", path.display()).into());
    }
    if meta.len() == 0 {
        return Ok(Input::Empty);
    }
    // SAFETY: the map is read-only and we never hand out a reference that outlives it. Mapping is
    // only unsound if another process truncates or rewrites the file while we read it; like every
    // mmap-based tool we ask the user not to do that (the process may then be killed by SIGBUS or
    // read a mix of old and new bytes; on decompression the checksums still catch such bytes).
    #[allow(unsafe_code)]
    let map = unsafe { Mmap::map(&file) }.context(what)?;
    #[cfg(unix)]
    {
        let _ = map.advise(memmap2::Advice::Sequential);
    }
    Ok(Input::Mapped(map))
}
