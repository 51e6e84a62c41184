//! Writing OUT so that it never looks complete when it is not: the bytes go to
//! `OUT.tmp-<pid>-<random>` in the same directory, which is fsynced and renamed to OUT only when
//! everything succeeded, and removed on any error (dropping it deletes it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{bail, Context, Result};

/// Buffer between the codec and the file.
const BUFFER: usize = 4 << 20;

/// An output file under a temporary name.
pub struct AtomicFile {
    writer: BufWriter<NamedTempFile>,
    path: PathBuf,
}

impl AtomicFile {
    /// Prepares to write `path`; fails if it exists and `force` is off, or if its directory does
    /// not exist or is not writable.
    pub fn create(path: &Path, force: bool) -> Result<AtomicFile> {
        if path.is_dir() {
            bail!("{}: is a directory", path.display());
        }
        if path.exists() && !force {
            bail!(
                "{}: already exists (pass --force to overwrite it)",
                path.display()
            );
        }
        let name = path
            .file_name()
            .ok_or_else(|| format!("{}: not a file name", path.display()))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let prefix = format!("{}.tmp-{}-", name.to_string_lossy(), std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        // tempfile's default is 0600; OUT gets the usual 0666 less the umask, like any new file.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder
            .tempfile_in(dir)
            .context(|| format!("{}: cannot create a temporary file", dir.display()))?;
        Ok(AtomicFile {
            writer: BufWriter::with_capacity(BUFFER, tmp),
            path: path.to_owned(),
        })
    }

    /// Writes all of `bytes` at offset `at` of the file, from any thread (for output whose parts
    /// come in any order; the file grows to hold them).
    pub fn write_at(&self, bytes: &[u8], at: u64) -> Result<()> {
        let file = self.writer.get_ref().as_file();
        #[cfg(unix)]
        let written = std::os::unix::fs::FileExt::write_all_at(file, bytes, at);
        #[cfg(windows)]
        let written = {
            use std::os::windows::fs::FileExt;
            let (mut rest, mut at) = (bytes, at);
            let mut written = Ok(());
            while !rest.is_empty() {
                match file.seek_write(rest, at) {
                    Ok(0) => {
                        written = Err(std::io::ErrorKind::WriteZero.into());
                        break;
                    }
                    Ok(n) => {
                        rest = &rest[n..];
                        at += n as u64;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        written = Err(e);
                        break;
                    }
                }
            }
            written
        };
        written.context(|| format!("writing {}", self.path.display()))
    }

    /// Flushes, fsyncs and renames the file to its final name.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let what = || format!("writing {}", path.display());
        let tmp = self
            .writer
            .into_inner()
            .map_err(|e| e.into_error())
            .context(what)?;
        tmp.as_file().sync_all().context(what)?;
        tmp.persist(&path).map_err(|e| e.error).context(what)?;
        // Make the rename itself durable (best effort: not every platform can open a directory).
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

/// Sequential writing; an error names the file (`writing PATH: why`), its kind kept.
impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.writer.write(buf);
        written.map_err(|e| self.named(e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.writer.flush();
        flushed.map_err(|e| self.named(e))
    }
}

impl AtomicFile {
    fn named(&self, e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("writing {}: {e}", self.path.display()))
    }
}
