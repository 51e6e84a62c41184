//! Reading IN: memory-mapped, so that only the pages being worked on are in memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Deref;
use std::ops::Range;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

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

/// Lets go of the pages of a mapped input once everything before them has been read for the
/// last time, so that reading a file through its mapping holds no more of it than the parts
/// being worked on (threads finish their parts in any order).
pub struct Release<'a> {
    input: &'a Input,
    state: Mutex<Progress>,
}

struct Progress {
    /// Every byte before this has been read for the last time.
    done_until: usize,
    /// Finished ranges after `done_until`, by start.
    finished: BTreeMap<usize, usize>,
    /// Pages before this have been let go.
    released_until: usize,
}

/// Bytes between the parts a reader hands in that nobody reads again (stream headers, padding,
/// empty streams between the pieces of a container): a finished part this close after
/// `done_until` continues it. (Letting go of a page still in use is harmless: it reads back.)
const GAP: usize = 4096;

/// Pages are let go in aligned blocks of this size, below the block of the lowest part still
/// being read: the kernel maps a few neighbouring pages on each page fault ("fault-around",
/// 64 KiB by default), and must not map back pages already let go.
const BLOCK: usize = 1 << 20;

impl<'a> Release<'a> {
    /// Nothing let go yet.
    pub fn new(input: &'a Input) -> Release<'a> {
        Release {
            input,
            state: Mutex::new(Progress {
                done_until: 0,
                finished: BTreeMap::new(),
                released_until: 0,
            }),
        }
    }

    /// `bytes`, a part of the input, has been read for the last time.
    pub fn finished_slice(&self, bytes: &[u8]) {
        let start = (bytes.as_ptr() as usize).wrapping_sub(self.input.as_ptr() as usize);
        if start <= self.input.len() {
            self.finished(start..start + bytes.len());
        }
    }

    /// Bytes `range` of the input have been read for the last time.
    pub fn finished(&self, range: Range<usize>) {
        let Input::Mapped(map) = self.input else {
            return;
        };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let p = &mut *state;
        p.finished.insert(range.start, range.end);
        while let Some(entry) = p.finished.first_entry() {
            if *entry.key() > p.done_until + GAP {
                break;
            }
            p.done_until = p.done_until.max(entry.remove());
        }
        // Block boundaries in addresses, where the kernel's fault-around windows are aligned.
        let base = map.as_ptr() as usize;
        let until = ((base + p.done_until) / BLOCK * BLOCK).saturating_sub(base);
        if until > p.released_until {
            let from = p.released_until;
            p.released_until = until;
            drop(state);
            release(map, from..until);
        }
    }
}

/// Lets the system drop the pages of `range` of `map` from this process's memory (they read
/// back from the file, unchanged, if touched again).
fn release(map: &Mmap, range: Range<usize>) {
    #[cfg(unix)]
    {
        const PAGE: usize = 4096;
        let base = map.as_ptr() as usize;
        let start = (base + range.start).div_ceil(PAGE) * PAGE - base;
        if start < range.end {
            // SAFETY: the map is a read-only shared mapping of a file: after MADV_DONTNEED its
            // pages read back from the file, unchanged (only a private writable mapping would
            // lose data). A failure only means the pages stay.
            #[allow(unsafe_code)]
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    range.end - start,
                )
            };
        }
    }
    #[cfg(not(unix))]
    let _ = (map, range);
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
