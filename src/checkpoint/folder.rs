//! Checkpoint folders: a model folder as Hugging Face lays it out (safetensors shards, their
//! `model.safetensors.index.json`, config and tokenizer files, subfolders), compressed file by
//! file into a folder of the same shape and restored from it byte for byte.
//!
//! Compressing, every `NAME.safetensors` becomes the container `NAME.safetensors.enec` and every
//! other file is copied; restoring, every `NAME.enec` gives back `NAME` and every other file is
//! copied. The shard index is copied unchanged, so a loader finds a tensor's container as the
//! shard the index names plus [`SUFFIX`]. [`plan`] lists the work without doing any; the caller
//! runs each [`Item`] with [`super::compress`] / [`super::restore`] and its own progress and
//! messages, as `enec compress DIR OUT` and Python's `enec.compress_dir` do.

use core::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::prelude::rust_2021::*;

/// What a compressed file's name adds to the original's.
pub const SUFFIX: &str = ".enec";

/// The ending of the file names that are compressed (safetensors checkpoints and shards).
pub const SAFETENSORS: &str = ".safetensors";

/// Which way a folder goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Originals to enec files.
    Compress,
    /// Enec files back to the originals.
    Restore,
}

/// What becomes of one path of the input folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A folder, made in the output (so that empty ones are kept too).
    Folder,
    /// A safetensors file, compressed into a container.
    Compress,
    /// An enec file, restored to its original.
    Restore,
    /// Any other file, copied as it is.
    Copy,
}

/// One path of the input folder and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The path in the input folder.
    pub from: PathBuf,
    /// `from` relative to the input folder.
    pub relative: PathBuf,
    /// Its path relative to the output folder.
    pub to: PathBuf,
    /// What to do.
    pub step: Step,
    /// Bytes of `from` (0 for a folder).
    pub bytes: u64,
}

/// Why a folder cannot be planned.
#[derive(Debug)]
pub enum FolderError {
    /// Reading the folder failed.
    Io {
        /// The path that could not be read.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The input is not a folder.
    NotAFolder(PathBuf),
    /// The output is the input or lies inside it.
    OutputInsideInput,
    /// A folder to compress already holds an enec file (its name ends in [`SUFFIX`]): it would
    /// be restored, not copied, on the way back.
    AlreadyEnec(PathBuf),
    /// A folder to restore holds both `NAME.enec` and `NAME`.
    Collision(PathBuf),
    /// A symbolic link to a folder (not followed, so that no walk loops), or something that is
    /// neither a file nor a folder.
    Unsupported(PathBuf),
    /// A shard index that cannot be read, or names a shard outside its folder.
    BadIndex {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A folder with no checkpoint in it (no `*.safetensors.enec` file, no shard index).
    NoWeights(PathBuf),
}

impl fmt::Display for FolderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FolderError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            FolderError::NotAFolder(p) => write!(f, "{}: not a folder", p.display()),
            FolderError::OutputInsideInput => {
                f.write_str("the output folder is the input folder or lies inside it")
            }
            FolderError::AlreadyEnec(p) => write!(
                f,
                "{}: already an enec file; a folder to compress must hold none",
                p.display()
            ),
            FolderError::Collision(p) => write!(
                f,
                "{}: both this file and {}{SUFFIX} are in the folder; restoring would overwrite it",
                p.display(),
                p.display()
            ),
            FolderError::Unsupported(p) => write!(
                f,
                "{}: neither a file nor a folder (links to folders are not followed)",
                p.display()
            ),
            FolderError::BadIndex { path, why } => write!(f, "{}: {why}", path.display()),
            FolderError::NoWeights(p) => write!(
                f,
                "{}: no enec checkpoint in this folder (no *{SAFETENSORS}{SUFFIX} file)",
                p.display()
            ),
        }
    }
}

impl std::error::Error for FolderError {}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> FolderError + '_ {
    move |error| FolderError::Io {
        path: path.to_owned(),
        error,
    }
}

/// Every path under the folder `input` in name order (a folder before what it holds), and what
/// going `direction` does with it. Links to files are followed; links to folders are refused.
/// Nothing is read but the folder listings and file sizes.
pub fn plan(direction: Direction, input: &Path) -> Result<Vec<Item>, FolderError> {
    if !fs::metadata(input).map_err(io_error(input))?.is_dir() {
        return Err(FolderError::NotAFolder(input.to_owned()));
    }
    let mut items = Vec::new();
    walk(direction, input, Path::new(""), &mut items)?;
    if direction == Direction::Restore {
        let names: std::collections::BTreeSet<&Path> =
            items.iter().map(|i| i.relative.as_path()).collect();
        if let Some(item) = items
            .iter()
            .find(|i| i.step == Step::Restore && names.contains(i.to.as_path()))
        {
            return Err(FolderError::Collision(input.join(&item.to)));
        }
    }
    Ok(items)
}

/// The shard index of a sharded checkpoint, as Hugging Face names it.
pub const INDEX: &str = "model.safetensors.index.json";

/// The checkpoints that hold the weights of the compressed model folder `dir`, in load order:
/// the shards its shard index names (the index's `weight_map` values, each plus [`SUFFIX`],
/// in name order), or without an index every `*.safetensors.enec` file in `dir`, by name. The
/// index is [`INDEX`], else the one `*.safetensors.index.json` file of `dir`.
pub fn weight_files(dir: &Path) -> Result<Vec<PathBuf>, FolderError> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map_err(io_error(dir))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    let indexes: Vec<&String> = names
        .iter()
        .filter(|n| n.ends_with(".safetensors.index.json"))
        .collect();
    let index = match indexes.as_slice() {
        _ if names.iter().any(|n| n == INDEX) => Some(INDEX),
        [one] => Some(one.as_str()),
        [] => None,
        [first, ..] => {
            return Err(FolderError::BadIndex {
                path: dir.join(first),
                why: format!(
                    "one of {} shard indexes, and none is {INDEX}",
                    indexes.len()
                ),
            })
        }
    };
    let Some(index) = index else {
        let files: Vec<PathBuf> = names
            .iter()
            .filter(|n| n.ends_with(&format!("{SAFETENSORS}{SUFFIX}")))
            .map(|n| dir.join(n))
            .collect();
        return match files.is_empty() {
            true => Err(FolderError::NoWeights(dir.to_owned())),
            false => Ok(files),
        };
    };
    let path = dir.join(index);
    let bad = |why: String| FolderError::BadIndex {
        path: path.clone(),
        why,
    };
    let text = fs::read(&path).map_err(io_error(&path))?;
    let json: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let map = json
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| bad("no \"weight_map\" object".into()))?;
    let mut shards = std::collections::BTreeSet::new();
    for (tensor, shard) in map {
        let shard = shard
            .as_str()
            .ok_or_else(|| bad(format!("tensor \"{tensor}\": the shard is not a string")))?;
        let plain = Path::new(shard)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if shard.is_empty() || !plain {
            return Err(bad(format!(
                "tensor \"{tensor}\": shard \"{shard}\" is not a file of this folder"
            )));
        }
        shards.insert(shard);
    }
    if shards.is_empty() {
        return Err(bad("the weight map names no shard".into()));
    }
    Ok(shards
        .into_iter()
        .map(|s| dir.join(format!("{s}{SUFFIX}")))
        .collect())
}

/// Refuses an `output` folder (existing or not) that is `input` or lies inside it, where the
/// walk would meet what it writes.
pub fn check_output(input: &Path, output: &Path) -> Result<(), FolderError> {
    if resolved(output)?.starts_with(resolved(input)?) {
        return Err(FolderError::OutputInsideInput);
    }
    Ok(())
}

fn walk(
    direction: Direction,
    input: &Path,
    relative: &Path,
    items: &mut Vec<Item>,
) -> Result<(), FolderError> {
    let dir = input.join(relative);
    let mut names: Vec<_> = fs::read_dir(&dir)
        .map_err(io_error(&dir))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io_error(&dir))?;
    names.sort();
    for name in names {
        let relative = relative.join(&name);
        let from = input.join(&relative);
        let link = fs::symlink_metadata(&from).map_err(io_error(&from))?;
        if link.is_dir() {
            items.push(Item {
                from,
                to: relative.clone(),
                relative: relative.clone(),
                step: Step::Folder,
                bytes: 0,
            });
            walk(direction, input, &relative, items)?;
            continue;
        }
        let meta = fs::metadata(&from).map_err(io_error(&from))?;
        if !meta.is_file() {
            return Err(FolderError::Unsupported(from));
        }
        let text = name.to_str();
        let enec = text.is_some_and(|n| n.ends_with(SUFFIX));
        let (step, to_name) = match direction {
            Direction::Compress if enec => return Err(FolderError::AlreadyEnec(from)),
            Direction::Compress => match text.filter(|n| n.ends_with(SAFETENSORS)) {
                Some(n) => (Step::Compress, format!("{n}{SUFFIX}").into()),
                None => (Step::Copy, name.clone()),
            },
            Direction::Restore => match text.and_then(|n| n.strip_suffix(SUFFIX)) {
                Some(original) if !original.is_empty() => (Step::Restore, original.into()),
                _ => (Step::Copy, name.clone()),
            },
        };
        let to = relative.with_file_name(to_name);
        items.push(Item {
            from,
            to,
            relative,
            step,
            bytes: meta.len(),
        });
    }
    Ok(())
}

/// `path` made absolute with every link resolved, for a path that need not exist yet: its
/// longest existing ancestor canonicalized, the rest appended.
fn resolved(path: &Path) -> Result<PathBuf, FolderError> {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().map_err(io_error(path))?.join(path)
    };
    let mut rest = Vec::new();
    let mut base = absolute.as_path();
    loop {
        match fs::canonicalize(base) {
            Ok(mut found) => {
                found.extend(rest.iter().rev());
                return Ok(found);
            }
            Err(e) => match (base.parent(), base.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name);
                    base = parent;
                }
                _ => return Err(io_error(path)(e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        fs::create_dir_all(p.join("in/sub/empty")).unwrap();
        for (name, bytes) in [
            ("in/model-00001-of-00002.safetensors", &b"shard one"[..]),
            ("in/model-00002-of-00002.safetensors", b"shard two"),
            ("in/model.safetensors.index.json", b"{}"),
            ("in/config.json", b"{}"),
            ("in/sub/adapter.safetensors", b"adapter"),
        ] {
            fs::write(p.join(name), bytes).unwrap();
        }
        dir
    }

    fn steps(items: &[Item]) -> Vec<(String, String, Step)> {
        items
            .iter()
            .map(|i| {
                (
                    i.relative.display().to_string(),
                    i.to.file_name().unwrap().to_string_lossy().into_owned(),
                    i.step,
                )
            })
            .collect()
    }

    #[test]
    fn compress_plan_names_each_file() {
        let dir = folder();
        let items = plan(Direction::Compress, &dir.path().join("in")).unwrap();
        let want = [
            ("config.json", "config.json", Step::Copy),
            (
                "model-00001-of-00002.safetensors",
                "model-00001-of-00002.safetensors.enec",
                Step::Compress,
            ),
            (
                "model-00002-of-00002.safetensors",
                "model-00002-of-00002.safetensors.enec",
                Step::Compress,
            ),
            (
                "model.safetensors.index.json",
                "model.safetensors.index.json",
                Step::Copy,
            ),
            ("sub", "sub", Step::Folder),
            (
                "sub/adapter.safetensors",
                "adapter.safetensors.enec",
                Step::Compress,
            ),
            ("sub/empty", "empty", Step::Folder),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(a, b, s)| (a.to_string(), b.to_string(), *s))
            .collect();
        assert_eq!(steps(&items), want);
        assert_eq!(items[5].to, Path::new("sub/adapter.safetensors.enec"));
        assert_eq!(items[1].bytes, 9);
    }

    #[test]
    fn restore_plan_strips_the_suffix() {
        let dir = folder();
        let input = dir.path().join("in");
        fs::rename(
            input.join("sub/adapter.safetensors"),
            input.join("sub/adapter.safetensors.enec"),
        )
        .unwrap();
        let items = plan(Direction::Restore, &input).unwrap();
        let restored: Vec<_> = items.iter().filter(|i| i.step == Step::Restore).collect();
        assert_eq!(restored.len(), 1);
        assert_eq!(restored[0].to, Path::new("sub/adapter.safetensors"));
        fs::write(input.join("sub/adapter.safetensors"), b"x").unwrap();
        let e = plan(Direction::Restore, &input).unwrap_err();
        assert!(matches!(e, FolderError::Collision(_)), "{e}");
    }

    #[test]
    fn refusals() {
        let dir = folder();
        let input = dir.path().join("in");
        for output in [input.clone(), input.join("sub/out"), input.join("new/out")] {
            let e = check_output(&input, &output).unwrap_err();
            assert!(matches!(e, FolderError::OutputInsideInput), "{e}");
        }
        check_output(&input, &dir.path().join("out")).unwrap();
        check_output(&input, dir.path()).unwrap();
        let e = plan(Direction::Compress, &input.join("config.json")).unwrap_err();
        assert!(matches!(e, FolderError::NotAFolder(_)), "{e}");
        fs::write(input.join("sub/x.enec"), b"").unwrap();
        let e = plan(Direction::Compress, &input).unwrap_err();
        assert!(matches!(e, FolderError::AlreadyEnec(_)), "{e}");
    }

    #[test]
    fn weight_files_follow_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let e = weight_files(p).unwrap_err();
        assert!(matches!(e, FolderError::NoWeights(_)), "{e}");
        fs::write(p.join("b.safetensors.enec"), b"").unwrap();
        fs::write(p.join("a.safetensors.enec"), b"").unwrap();
        fs::write(p.join("config.json"), b"{}").unwrap();
        assert_eq!(
            weight_files(p).unwrap(),
            [p.join("a.safetensors.enec"), p.join("b.safetensors.enec")]
        );
        let index = r#"{"metadata": {}, "weight_map": {"x": "s2.safetensors", "y": "s1.safetensors", "z": "s2.safetensors"}}"#;
        fs::write(p.join(INDEX), index).unwrap();
        assert_eq!(
            weight_files(p).unwrap(),
            [p.join("s1.safetensors.enec"), p.join("s2.safetensors.enec")]
        );
        for bad in [
            r#"{"weight_map": {"x": "../s.safetensors"}}"#,
            r#"{"weight_map": {"x": "/etc/s.safetensors"}}"#,
            r#"{"weight_map": {"x": 3}}"#,
            r#"{"weight_map": {}}"#,
            r#"{"weights": {}}"#,
            "not json",
        ] {
            fs::write(p.join(INDEX), bad).unwrap();
            let e = weight_files(p).unwrap_err();
            assert!(matches!(e, FolderError::BadIndex { .. }), "{bad}: {e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_to_files_are_followed_links_to_folders_refused() {
        let dir = folder();
        let input = dir.path().join("in");
        std::os::unix::fs::symlink(input.join("config.json"), input.join("linked.json")).unwrap();
        let items = plan(Direction::Compress, &input).unwrap();
        assert!(items
            .iter()
            .any(|i| i.relative == Path::new("linked.json") && i.step == Step::Copy));
        std::os::unix::fs::symlink(input.join("sub"), input.join("loop")).unwrap();
        let e = plan(Direction::Compress, &input).unwrap_err();
        assert!(matches!(e, FolderError::Unsupported(_)), "{e}");
    }
}
