//! `enec._enec`: the compiled half of the `enec` Python package. The Python modules `enec`,
//! `enec.numpy` and `enec.torch` allocate arrays and tensors; this module fills them, with the
//! GIL released.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use enec::checkpoint;
use enec::checkpoint::folder::{self, Direction, FolderError, Step};
use enec::container::{Container, Entry, PieceKind, MAGIC as CONTAINER_MAGIC};
use enec::format::MAGIC as STREAM_MAGIC;
use enec::{Coding, Dtype, EncodeOptions};
use memmap2::Mmap;
use pyo3::create_exception;
use pyo3::exceptions::{PyIsADirectoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

mod convert;
use convert::Failure;
mod decode;
mod save;

// Made in the public module `enec`, where pickle finds it again (an error raised in a worker
// process reaches its parent whole).
create_exception!(
    enec,
    EnecError,
    PyValueError,
    "A file is not a valid enec or safetensors file, or is damaged (the message names the tensor and frame)."
);

fn enec_error(message: String) -> PyErr {
    EnecError::new_err(message)
}

fn os_error(path: &Path, e: std::io::Error) -> PyErr {
    PyOSError::new_err((
        e.raw_os_error().unwrap_or(0),
        format!("{}: {e}", path.display()),
    ))
}

/// The error for a tensor name that `file` holds twice.
fn repeated(file: &str, name: &str) -> PyErr {
    enec_error(format!(
        "{file}: two tensors are named \"{name}\": safetensors refuses such a file, and enec loads \
         none of it (enec.decompress_file still restores it byte for byte)"
    ))
}

/// Maps a file into memory (read-only).
fn map(py: Python<'_>, path: &Path) -> PyResult<Mmap> {
    let file = File::open(path).map_err(|e| os_error(path, e))?;
    // A folder opens, but cannot be mapped ("No such device"): say what it is.
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        let errno = py.import("errno")?.getattr("EISDIR")?;
        let message = format!("{}: is a directory, not a file", path.display());
        return Err(PyIsADirectoryError::new_err((errno.unbind(), message)));
    }
    // SAFETY: the map is only read; like every reader of a mapped file, we rely on nobody
    // truncating the file while it is open (the checksums catch bytes changed meanwhile).
    unsafe { Mmap::map(&file) }.map_err(|e| os_error(path, e))
}

/// Writes `path` with `write` through a temporary file in the same folder, renamed over it
/// once complete (removed on failure).
fn write_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&File>) -> Result<T, Failure>,
) -> PyResult<T> {
    let partial = partial_path(path);
    let file = File::create(&partial).map_err(|e| os_error(path, e))?;
    let written = write(&mut BufWriter::with_capacity(1 << 20, &file)).and_then(|value| {
        file.sync_all()?;
        std::fs::rename(&partial, path)?;
        Ok(value)
    });
    written.map_err(|failure| {
        let _ = std::fs::remove_file(&partial);
        failure_error(path, failure)
    })
}

/// The temporary file in which `path` is written before it is renamed.
fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    PathBuf::from(partial)
}

/// The Python exception of a failure to write `path`.
fn failure_error(path: &Path, failure: Failure) -> PyErr {
    match failure {
        Failure::Input(message) => enec_error(message),
        Failure::Write(e) => os_error(path, e),
    }
}

/// The `threads` keyword: a number of worker threads, at least 1.
#[derive(Clone, Copy)]
struct Threads(usize);

impl<'py> FromPyObject<'py> for Threads {
    fn extract_bound(value: &Bound<'py, PyAny>) -> PyResult<Threads> {
        match value.extract::<i64>() {
            Ok(n) if n >= 1 => Ok(Threads(usize::try_from(n).unwrap_or(usize::MAX))),
            Ok(n) => Err(PyValueError::new_err(format!(
                "threads={n}: expected a number of threads >= 1, or None for all cores"
            ))),
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(value.py()) => Err(
                PyValueError::new_err("threads: too large a number of threads"),
            ),
            Err(e) => Err(e),
        }
    }
}

/// Worker threads: `None` means all cores (the library's 0).
fn threads(threads: Option<Threads>) -> usize {
    threads.map_or(0, |Threads(n)| n)
}

fn coding(name: &str) -> PyResult<Coding> {
    match name {
        "ranked" => Ok(Coding::Ranked),
        "groups" => Ok(Coding::Groups),
        "auto" => Ok(Coding::Auto),
        _ => Err(PyValueError::new_err(format!(
            "coding {name:?}: expected \"ranked\", \"groups\" or \"auto\""
        ))),
    }
}

/// The encoder options of the keyword arguments (the dtype is per tensor).
fn options(coding_name: &str, frame: u32, checksums: bool) -> PyResult<EncodeOptions> {
    EncodeOptions::new(Dtype::Bf16)
        .coding(coding(coding_name)?)
        .checksums(checksums)
        .frame_len(frame)
        .map_err(|e| PyValueError::new_err(format!("frame={frame}: {e}")))
}

/// compress_file(src, dst, *, coding="ranked", frame=16384, checksums=True, threads=None)
/// --
///
/// Compresses the safetensors file `src` into the enec checkpoint `dst` (replaced atomically);
/// the same bytes as `enec compress`. Returns the size of `dst`.
#[pyfunction]
#[pyo3(signature = (src, dst, *, coding = "ranked", frame = 16384, checksums = true, threads = None))]
fn compress_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    coding: &str,
    frame: u32,
    checksums: bool,
    threads: Option<Threads>,
) -> PyResult<u64> {
    let options = options(coding, frame, checksums)?;
    let data = map(py, &src)?;
    compress_into(
        py,
        &src.display().to_string(),
        &data,
        &dst,
        &options,
        threads,
    )
}

/// Compresses the safetensors file `data` (`name` in messages) into `dst`; returns its size.
fn compress_into(
    py: Python<'_>,
    name: &str,
    data: &[u8],
    dst: &Path,
    options: &EncodeOptions,
    threads: Option<Threads>,
) -> PyResult<u64> {
    py.allow_threads(|| {
        write_atomically(dst, |out| {
            convert::compress(name, data, options, self::threads(threads), out)
        })
    })
}

/// compress_bytes(data, dst, *, coding="ranked", frame=16384, checksums=True, threads=None)
/// --
///
/// Compresses the safetensors file held in `data` into the enec checkpoint `dst`.
#[pyfunction]
#[pyo3(signature = (data, dst, *, coding = "ranked", frame = 16384, checksums = true, threads = None))]
fn compress_bytes(
    py: Python<'_>,
    data: &[u8],
    dst: PathBuf,
    coding: &str,
    frame: u32,
    checksums: bool,
    threads: Option<Threads>,
) -> PyResult<u64> {
    let options = options(coding, frame, checksums)?;
    compress_into(py, "<bytes>", data, &dst, &options, threads)
}

/// decompress_file(src, dst, *, threads=None)
/// --
///
/// Restores the original file of the enec file `src` (a checkpoint or a bare stream) into `dst`
/// (replaced atomically), verifying every checksum; the same bytes as `enec decompress`.
/// Returns the size of `dst`.
#[pyfunction]
#[pyo3(signature = (src, dst, *, threads = None))]
fn decompress_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    threads: Option<Threads>,
) -> PyResult<u64> {
    decompress_into(py, &src, &dst, threads)
}

/// Restores the enec file `src` into `dst`; returns the original's size.
fn decompress_into(
    py: Python<'_>,
    src: &Path,
    dst: &Path,
    threads: Option<Threads>,
) -> PyResult<u64> {
    let data = map(py, src)?;
    let name = src.display().to_string();
    py.allow_threads(|| {
        write_atomically(dst, |out| {
            convert::decompress(&name, &data, self::threads(threads), out)
        })
    })
}

/// compress_dir(src, dst, *, coding="ranked", frame=16384, checksums=True, threads=None)
/// --
///
/// Compresses the model folder `src` into the folder `dst` file by file, as
/// `enec compress DIR OUT`: every `NAME.safetensors` (each shard of a sharded checkpoint) into
/// the checkpoint `NAME.safetensors.enec`, every other file (the shard index, config, tokenizer)
/// copied, subfolders alike. Files of `dst` are replaced atomically. Returns the bytes written.
#[pyfunction]
#[pyo3(signature = (src, dst, *, coding = "ranked", frame = 16384, checksums = true, threads = None))]
fn compress_dir(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    coding: &str,
    frame: u32,
    checksums: bool,
    threads: Option<Threads>,
) -> PyResult<u64> {
    let options = options(coding, frame, checksums)?;
    run_folder(Direction::Compress, &src, &dst, |from, to| {
        let data = map(py, from)?;
        compress_into(
            py,
            &from.display().to_string(),
            &data,
            to,
            &options,
            threads,
        )
    })
}

/// decompress_dir(src, dst, *, threads=None)
/// --
///
/// Restores the model folder that `compress_dir` (or `enec compress DIR OUT`) made of it: every
/// `NAME.enec` back to `NAME`, every other file copied; every checksum verified. Returns the
/// bytes written.
#[pyfunction]
#[pyo3(signature = (src, dst, *, threads = None))]
fn decompress_dir(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    threads: Option<Threads>,
) -> PyResult<u64> {
    run_folder(Direction::Restore, &src, &dst, |from, to| {
        decompress_into(py, from, to, threads)
    })
}

/// weight_files(folder)
/// --
///
/// The checkpoints holding the weights of the compressed model folder `folder`, in load order:
/// the shards its `model.safetensors.index.json` names (each plus `.enec`), or without an index
/// every `*.safetensors.enec` file in it.
#[pyfunction]
fn weight_files(folder: PathBuf) -> PyResult<Vec<PathBuf>> {
    folder::weight_files(&folder).map_err(folder_error)
}

/// The Python exception of a folder that cannot be planned or read.
fn folder_error(e: FolderError) -> PyErr {
    match e {
        FolderError::Io { path, error } => os_error(&path, error),
        e => enec_error(e.to_string()),
    }
}

/// Takes the folder `src` into `dst` as [`folder::plan`] says: folders made, other files
/// copied, and `code` for each file to compress or restore (it returns the bytes it wrote).
/// Returns the bytes written.
fn run_folder(
    direction: Direction,
    src: &Path,
    dst: &Path,
    mut code: impl FnMut(&Path, &Path) -> PyResult<u64>,
) -> PyResult<u64> {
    folder::check_output(src, dst).map_err(folder_error)?;
    let items = folder::plan(direction, src).map_err(folder_error)?;
    std::fs::create_dir_all(dst).map_err(|e| os_error(dst, e))?;
    let mut written = 0;
    for item in &items {
        let to = dst.join(&item.to);
        written += match item.step {
            Step::Folder => {
                std::fs::create_dir_all(&to).map_err(|e| os_error(&to, e))?;
                0
            }
            Step::Copy => {
                let mut from = File::open(&item.from).map_err(|e| os_error(&item.from, e))?;
                write_atomically(&to, |out| Ok(std::io::copy(&mut from, out)?))?
            }
            Step::Compress | Step::Restore => code(&item.from, &to)?,
        };
    }
    Ok(written)
}

/// A checkpoint being written tensor by tensor into a temporary file beside `path`, renamed
/// to `path` by `finish` and removed by `abort` (or when dropped unfinished).
#[pyclass(module = "enec._enec")]
struct CheckpointWriter {
    path: PathBuf,
    partial: PathBuf,
    order: Vec<usize>,
    /// The saving and the file it writes (a second handle, to sync it); None once done.
    state: Option<(save::Saving<BufWriter<File>>, File)>,
}

#[pymethods]
impl CheckpointWriter {
    /// Starts the checkpoint `path` of the safetensors file holding `tensors` ((name,
    /// safetensors dtype, shape, byte length) each) and `metadata` ((key, value) pairs, or
    /// None for no `__metadata__`) as `safetensors` writes it; nothing is made when an argument
    /// is wrong. `order()` tells in which order `write` takes the tensors' bytes.
    #[new]
    #[pyo3(signature = (path, tensors, metadata, *, coding = "ranked", frame = 16384, checksums = true, threads = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: PathBuf,
        tensors: Vec<save::NewTensor>,
        metadata: Option<Vec<(String, String)>>,
        coding: &str,
        frame: u32,
        checksums: bool,
        threads: Option<Threads>,
    ) -> PyResult<CheckpointWriter> {
        let options = options(coding, frame, checksums)?;
        let name = path.display().to_string();
        let plan = save::Plan::new(&tensors, metadata.as_deref())
            .map_err(|why| enec_error(format!("{name}: {why}")))?;
        let order = plan.order.clone();
        let partial = partial_path(&path);
        let file = File::create(&partial).map_err(|e| os_error(&path, e))?;
        let mut writer = CheckpointWriter {
            path,
            partial,
            order,
            state: None,
        };
        let started = file.try_clone().map_err(Failure::Write).and_then(|out| {
            let out = BufWriter::with_capacity(1 << 20, out);
            save::Saving::new(name, plan, out, options, self::threads(threads))
        });
        match started {
            Ok(saving) => writer.state = Some((saving, file)),
            Err(failure) => {
                writer.abort();
                return Err(failure_error(&writer.path, failure));
            }
        }
        Ok(writer)
    }

    /// The tensors' positions in the list given, in the order `write` takes their bytes.
    fn order(&self) -> Vec<usize> {
        self.order.clone()
    }

    /// Writes the next tensor's bytes: the `length` bytes of contiguous memory at `address`,
    /// kept alive by the caller. Encodes them with the GIL released.
    fn write(&mut self, py: Python<'_>, address: usize, length: u64) -> PyResult<()> {
        let len = usize::try_from(length).map_err(|_| PyValueError::new_err("too large"))?;
        if len > 0 && address == 0 {
            return Err(PyValueError::new_err("null address"));
        }
        let Some((saving, _)) = self.state.as_mut() else {
            return Err(PyValueError::new_err(
                "the checkpoint is finished or aborted",
            ));
        };
        let fed = py.allow_threads(|| {
            // SAFETY: promised by the caller, as for `Checkpoint.decode_tensor_into`.
            let bytes = unsafe { caller_memory(address, len) };
            saving.feed(bytes)
        });
        fed.map_err(|failure| {
            self.abort();
            failure_error(&self.path, failure)
        })
    }

    /// Writes the index, syncs the file and renames it to its path; returns its size.
    fn finish(&mut self, py: Python<'_>) -> PyResult<u64> {
        let Some((saving, file)) = self.state.take() else {
            return Err(PyValueError::new_err(
                "the checkpoint is finished or aborted",
            ));
        };
        let (partial, path) = (&self.partial, &self.path);
        let done = py.allow_threads(|| {
            let size = saving.finish()?;
            file.sync_all()?;
            std::fs::rename(partial, path)?;
            Ok::<u64, Failure>(size)
        });
        done.map_err(|failure| {
            let _ = std::fs::remove_file(&self.partial);
            failure_error(&self.path, failure)
        })
    }

    /// Removes the unfinished file (nothing once finished).
    fn abort(&mut self) {
        if self.state.take().is_some() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

impl Drop for CheckpointWriter {
    fn drop(&mut self) {
        self.abort();
    }
}

/// What holds the bytes of an open checkpoint.
enum Backing {
    Map(Mmap),
    Bytes(Py<PyBytes>),
}

impl Backing {
    fn bytes(&self, py: Python<'_>) -> &[u8] {
        match self {
            Backing::Map(map) => map,
            Backing::Bytes(bytes) => bytes.as_bytes(py),
        }
    }
}

/// An open enec checkpoint: its index parsed, nothing decoded.
#[pyclass(frozen, module = "enec._enec")]
struct Checkpoint {
    name: String,
    /// Decoding threads (0: all cores).
    threads: usize,
    container: Container<'static>,
    /// The tensors, in file order, with their entry numbers.
    tensors: Vec<(u64, Entry<'static>)>,
    by_name: HashMap<&'static str, usize>,
    /// The entry of the safetensors header (the verbatim piece at offset 0).
    header: Option<(u64, Entry<'static>)>,
    /// The names and dtypes of the tensors that have no index entry, which their entries in
    /// `tensors` borrow.
    names: Vec<(Box<str>, Box<str>)>,
    // Owns the bytes the fields above borrow: it never moves them and outlives them (the
    // struct is only ever dropped whole).
    _backing: Backing,
}

impl Checkpoint {
    /// Parses the bytes of `backing`.
    fn new(py: Python<'_>, name: String, backing: Backing, threads: usize) -> PyResult<Checkpoint> {
        let bytes = backing.bytes(py);
        // SAFETY: `backing` owns these bytes (a read-only map or an immutable Python bytes
        // object), keeps them at the same address when it moves, and is stored in the same
        // struct as every borrow made from them here.
        let bytes: &'static [u8] =
            unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) };
        if bytes.starts_with(&STREAM_MAGIC) {
            return Err(enec_error(format!(
                "{name}: a bare enec stream (one array), not a checkpoint: \
                 enec.decompress_file restores its bytes"
            )));
        }
        if !bytes.starts_with(&CONTAINER_MAGIC) {
            return Err(enec_error(convert::not_enec(&name, bytes)));
        }
        let container = Container::parse(bytes).map_err(|e| enec_error(format!("{name}: {e}")))?;
        let mut tensors = Vec::new();
        let mut header = None;
        for (number, entry) in container.entries() {
            if entry.is_tensor() {
                tensors.push((number, entry));
            } else if entry.original_offset == 0 {
                header = Some((number, entry));
            }
        }
        let mut by_name = HashMap::with_capacity(tensors.len());
        for (_, entry) in &tensors {
            if by_name.insert(entry.name, 0).is_some() {
                return Err(repeated(&name, entry.name));
            }
        }
        let mut checkpoint = Checkpoint {
            name,
            threads,
            container,
            tensors,
            by_name,
            header,
            names: Vec::new(),
            _backing: backing,
        };
        // The safetensors header may name a tensor twice (the index then holds one of them, the
        // other's bytes lie in a gap): refused, since one tensor would be lost without a word.
        if checkpoint.header.is_some() {
            checkpoint.add_unindexed()?;
        }
        checkpoint.by_name.clear();
        for (i, (_, entry)) in checkpoint.tensors.iter().enumerate() {
            checkpoint.by_name.insert(entry.name, i);
        }
        Ok(checkpoint)
    }

    /// Adds the tensors that the safetensors header at the start of the file names and the
    /// index does not: small tensors kept in a run of verbatim bytes (FORMAT.md 9.6), each with
    /// an entry of its own made here (its payload the part of the run that holds it, its
    /// checksum that part's, once the run's is verified).
    fn add_unindexed(&mut self) -> PyResult<()> {
        let found = checkpoint::unindexed(&self.container).map_err(|e| match e {
            checkpoint::UnindexedError::HeaderChecksumMismatch { entry } => {
                let error = enec::container::ContainerError::RawChecksumMismatch { entry };
                enec_error(decode::message(&self.name, &self.container, error))
            }
            checkpoint::UnindexedError::RepeatedName(name) => repeated(&self.name, &name),
            checkpoint::UnindexedError::InNoPiece(t) => enec_error(format!(
                "{}: tensor \"{}\" lies in no verbatim piece",
                self.name, t.name
            )),
        })?;
        let mut verified = std::collections::HashSet::new();
        for checkpoint::Unindexed {
            tensor: t,
            run,
            offset,
        } in found
        {
            let len = t.end - t.start;
            // An empty tensor in no run takes its entry's form from the first piece.
            let Some((number, run)) = run.or_else(|| self.container.entries().next()) else {
                continue;
            };
            let part = if len == 0 {
                &[][..]
            } else {
                let payload = self.container.payload(&run);
                if verified.insert(number) && enec::wrapped::piece_checksum(payload) != run.checksum
                {
                    let error =
                        enec::container::ContainerError::RawChecksumMismatch { entry: number };
                    return Err(enec_error(decode::message(
                        &self.name,
                        &self.container,
                        error,
                    )));
                }
                let delta = (offset - run.offset) as usize;
                &payload[delta..][..len as usize]
            };
            let (number, run) = (&number, &run);
            let mut shape = run.shape.clone();
            shape.clear();
            shape.extend_from_slice(&t.shape).map_err(|_| {
                enec_error(format!(
                    "{}: tensor \"{}\": too many dimensions",
                    self.name, t.name
                ))
            })?;
            self.names
                .push((t.name.into_boxed_str(), t.dtype.into_boxed_str()));
            let (name, dtype) = self.names.last().expect("just pushed");
            // SAFETY: the boxed strings live in `self.names`, which only grows and is dropped
            // with the struct; moving a box does not move its bytes.
            let (name, dtype): (&'static str, &'static str) = unsafe {
                (
                    &*(name.as_ref() as *const str),
                    &*(dtype.as_ref() as *const str),
                )
            };
            let entry = Entry {
                kind: PieceKind::Raw,
                name,
                dtype,
                shape,
                original_offset: t.start,
                original_len: len,
                offset,
                len,
                checksum: enec::wrapped::piece_checksum(part),
            };
            self.tensors.push((*number, entry));
        }
        self.tensors.sort_by_key(|(_, e)| e.original_offset);
        Ok(())
    }
}

#[pymethods]
impl Checkpoint {
    /// Opens the enec checkpoint at `path` (memory-mapped; only the index and the safetensors
    /// header are read), to be decoded on `threads` threads (`None`: all cores).
    #[staticmethod]
    #[pyo3(signature = (path, threads = None))]
    fn open(py: Python<'_>, path: PathBuf, threads: Option<Threads>) -> PyResult<Checkpoint> {
        let threads = self::threads(threads);
        let data = map(py, &path)?;
        Checkpoint::new(py, path.display().to_string(), Backing::Map(data), threads)
    }

    /// Opens the enec checkpoint held in `data`, to be decoded on `threads` threads.
    #[staticmethod]
    #[pyo3(signature = (data, threads = None))]
    fn from_bytes(
        py: Python<'_>,
        data: Bound<'_, PyBytes>,
        threads: Option<Threads>,
    ) -> PyResult<Checkpoint> {
        let backing = Backing::Bytes(data.unbind());
        Checkpoint::new(py, "<bytes>".into(), backing, self::threads(threads))
    }

    /// The tensors in file order: (name, safetensors dtype, shape, bytes, offset in the
    /// original file, payload offset, payload length, whether the payload is an enec stream,
    /// the h32 of a verbatim payload or 0).
    #[allow(clippy::type_complexity)]
    fn tensors(&self) -> Vec<(&str, &str, Vec<u64>, u64, u64, u64, u64, bool, u32)> {
        self.tensors
            .iter()
            .map(|(_, e)| {
                let shape = e.shape.to_vec();
                let (original_offset, original_len) = (e.original_offset, e.original_len);
                (
                    e.name,
                    e.dtype,
                    shape,
                    original_len,
                    original_offset,
                    e.offset,
                    e.len,
                    e.kind == PieceKind::Enec,
                    e.checksum,
                )
            })
            .collect()
    }

    /// Position of the tensor `name` in `tensors()`, or None.
    fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The original safetensors header (its 8-byte length and JSON), checksum verified.
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.header_bytes()?))
    }

    /// Restores the whole original file into the memory at `address`: a writable, contiguous
    /// block of `length` bytes (which must be the original file's length), kept alive by the
    /// caller. Small pieces and the frames of large ones are shared among the checkpoint's
    /// threads, the GIL released.
    fn decode_all_into(&self, py: Python<'_>, address: usize, length: u64) -> PyResult<()> {
        let original = self.container.original_len();
        let len = self.memory_for(address, length, original, || "the original file".into())?;
        let threads = self.threads;
        py.allow_threads(|| {
            // SAFETY: checked by `memory_for`, promised by the caller.
            let out = unsafe { caller_memory(address, len) };
            decode::container(&self.name, &self.container, out, threads)
        })
        .map_err(enec_error)
    }

    /// Decodes tensors into caller memory: `parts` holds, for each, its position in
    /// `tensors()`, the address of a writable, contiguous block of memory of the tensor's byte
    /// length, kept alive by the caller, and that length. Small tensors and the frames of large
    /// ones are shared among the checkpoint's threads, the GIL released; the first error in
    /// the order of `parts` is raised.
    fn decode_tensors_into(&self, py: Python<'_>, parts: Vec<(usize, usize, u64)>) -> PyResult<()> {
        let mut checked = Vec::with_capacity(parts.len());
        for (index, address, length) in parts {
            let (number, entry) = self
                .tensors
                .get(index)
                .ok_or_else(|| PyValueError::new_err(format!("no tensor number {index}")))?;
            let len = self.memory_for(address, length, entry.original_len, || {
                entry.describe().to_string()
            })?;
            checked.push((*number, entry.clone(), address, len));
        }
        let threads = self.threads;
        py.allow_threads(|| {
            let parts = checked
                .into_iter()
                .map(|(number, entry, address, len)| {
                    // SAFETY: checked by `memory_for`, promised by the caller.
                    (number, entry, unsafe { caller_memory(address, len) })
                })
                .collect();
            decode::entries(&self.name, &self.container, parts, threads)
        })
        .map_err(enec_error)
    }

    /// The original file's length in bytes.
    fn original_len(&self) -> u64 {
        self.container.original_len()
    }

    /// Decodes the tensor at position `index` of `tensors()` into the memory at `address`: a
    /// writable, contiguous block of `length` bytes (which must be the tensor's byte length),
    /// kept alive by the caller. Frames are spread over the checkpoint's threads, the GIL
    /// released.
    fn decode_tensor_into(
        &self,
        py: Python<'_>,
        index: usize,
        address: usize,
        length: u64,
    ) -> PyResult<()> {
        let (number, entry) = self
            .tensors
            .get(index)
            .ok_or_else(|| PyValueError::new_err(format!("no tensor number {index}")))?;
        let len = self.memory_for(address, length, entry.original_len, || {
            entry.describe().to_string()
        })?;
        let threads = self.threads;
        py.allow_threads(|| {
            // SAFETY: checked by `memory_for`, promised by the caller.
            let out = unsafe { caller_memory(address, len) };
            decode::entry(&self.name, &self.container, *number, entry, out, threads)
        })
        .map_err(enec_error)
    }
}

impl Checkpoint {
    /// The safetensors header (its length and JSON), checksum verified.
    fn header_bytes(&self) -> PyResult<Vec<u8>> {
        let mut bytes = self.header_run()?;
        let n = bytes.get(..8).map_or(0, |n| {
            u64::from_le_bytes(n.try_into().expect("8 bytes")).saturating_add(8)
        });
        if n < bytes.len() as u64 {
            bytes.truncate(n as usize);
        }
        Ok(bytes)
    }

    /// The verbatim piece at the start of the file (the safetensors header, and the tensors
    /// kept verbatim with it), checksum verified.
    fn header_run(&self) -> PyResult<Vec<u8>> {
        let Some((number, entry)) = &self.header else {
            return Err(enec_error(format!("{}: no safetensors header", self.name)));
        };
        let mut out = vec![0u8; entry.original_len as usize];
        decode::entry(&self.name, &self.container, *number, entry, &mut out, 1)
            .map_err(enec_error)?;
        Ok(out)
    }

    /// Checks the caller's memory at `address` of `length` bytes against the `needed` bytes of
    /// `what`; returns its length.
    fn memory_for(
        &self,
        address: usize,
        length: u64,
        needed: u64,
        what: impl FnOnce() -> String,
    ) -> PyResult<usize> {
        if length != needed {
            return Err(enec_error(format!(
                "{}: {}: {length} bytes of memory for its {needed} bytes",
                self.name,
                what()
            )));
        }
        let len = usize::try_from(length).map_err(|_| PyValueError::new_err("too large"))?;
        if len > 0 && address == 0 {
            return Err(PyValueError::new_err("null address"));
        }
        Ok(len)
    }
}

/// The `len` bytes of caller memory at `address` (`address` unused when `len` is 0).
///
/// # Safety
/// `address` is the data pointer of a contiguous, writable array of `len` bytes that the Python
/// caller (`enec.numpy` / `enec.torch`) allocated, holds a reference to for the whole call, and
/// does not touch meanwhile.
unsafe fn caller_memory<'m>(address: usize, len: usize) -> &'m mut [u8] {
    if len == 0 {
        return &mut [];
    }
    std::slice::from_raw_parts_mut(address as *mut u8, len)
}

/// The CUDA kernels and loader (ffi/cuda) as a shared library, when the package was built with
/// nvcc; None otherwise.
#[pyfunction]
fn cuda_library(py: Python<'_>) -> Option<Bound<'_, PyBytes>> {
    #[cfg(enec_cuda)]
    return Some(PyBytes::new(
        py,
        include_bytes!(concat!(env!("OUT_DIR"), "/libenec_cuda.so")),
    ));
    #[cfg(not(enec_cuda))]
    {
        let _ = py;
        None
    }
}

/// The compiled half of the `enec` package.
#[pymodule]
fn _enec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("EnecError", m.py().get_type::<EnecError>())?;
    m.add_class::<Checkpoint>()?;
    m.add_class::<CheckpointWriter>()?;
    m.add_function(wrap_pyfunction!(compress_file, m)?)?;
    m.add_function(wrap_pyfunction!(compress_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_file, m)?)?;
    m.add_function(wrap_pyfunction!(compress_dir, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_dir, m)?)?;
    m.add_function(wrap_pyfunction!(weight_files, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_library, m)?)?;
    Ok(())
}
