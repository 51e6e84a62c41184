"""Load and save enec checkpoints as torch tensors, like ``safetensors.torch``.

Importing this module needs PyTorch; building and installing the package does not.
"""

import os
from typing import Any, Dict, List, Optional, Tuple, Union

try:
    import torch
except ImportError:
    raise ImportError("enec.torch needs PyTorch: pip install torch") from None

from . import _enec, _frameworks
from ._open import safe_open

_Path = Union[str, "os.PathLike[str]"]


def load_file(
    filename: _Path, device: str = "cpu", *, threads: Optional[int] = None
) -> Dict[str, torch.Tensor]:
    """Every tensor of the enec checkpoint ``filename``, by name, in file order, on ``device``.

    Each tensor is decoded straight into a new tensor, frames in parallel on ``threads``
    threads (``None``: all cores), the GIL released; every checksum is verified. For a CUDA
    device (``"cuda"``, ``"cuda:N"``, a ``torch.device``) the compressed frames are read into
    pinned memory, copied to the GPU and decoded there into each tensor's memory (``threads``
    read the file); where the GPU cannot decode them, a warning says why once and tensors are
    decoded on the CPU and copied. Tensors for other devices are moved there after decoding.
    """
    with safe_open(filename, framework="pt", device=device, threads=threads) as f:
        return f.get_tensors()


def load_folder(
    folder: _Path, device: str = "cpu", *, threads: Optional[int] = None
) -> Dict[str, torch.Tensor]:
    """Every tensor of the compressed model folder ``folder`` (what ``enec compress DIR OUT`` or
    :func:`enec.compress_dir` made of a Hugging Face folder), by name: the tensors of each shard
    its ``model.safetensors.index.json`` names, or without an index of every
    ``*.safetensors.enec`` file in it, loaded as :func:`load_file` loads them. A tensor found in
    two shards raises :class:`enec.EnecError`."""
    tensors: Dict[str, torch.Tensor] = {}
    for shard in _checkpoints(folder):
        with safe_open(shard, framework="pt", device=device, threads=threads) as f:
            _check_new(shard, f, tensors)
            tensors.update(f.get_tensors())
    return tensors


def _checkpoints(filename: _Path) -> List[_Path]:
    """The checkpoint ``filename``, or the shards of the compressed model folder ``filename``."""
    return _enec.weight_files(filename) if os.path.isdir(filename) else [filename]


def _check_new(shard: _Path, f: safe_open, loaded: Any) -> None:
    """Raises :class:`enec.EnecError` where ``f`` holds a tensor of an earlier shard."""
    for name, *_ in f._tensors:
        if name in loaded:
            raise _enec.EnecError(f"{shard}: tensor {name!r} is in an earlier shard too")


def load_model(
    model: torch.nn.Module,
    filename: _Path,
    strict: bool = True,
    device: str = "cpu",
    *,
    threads: Optional[int] = None,
) -> Tuple[List[str], List[str]]:
    """Loads the enec checkpoint ``filename``, or the compressed model folder ``filename``
    (:func:`load_folder`), into ``model``, as ``safetensors.torch.load_model`` does: a name of
    ``model`` whose tensor shares memory with a loaded one (tied weights, saved once) is loaded
    with it, not missing. Returns the ``(missing, unexpected)`` names; with ``strict``, either
    raises ``RuntimeError``.

    A tensor whose parameter or buffer in ``model`` is a contiguous tensor on ``device`` (the
    CPU) of the same dtype and shape is decoded straight into its memory, with no copy; the
    others go through ``model.load_state_dict``. So a damaged file can leave ``model`` partly
    loaded, as a failing ``load_state_dict`` can."""
    targets = model.state_dict(keep_vars=True)
    state_dict: Dict[str, torch.Tensor] = {}
    in_place = set()
    taken = set()
    for path in _checkpoints(filename):
        with safe_open(path, framework="pt", device=device, threads=threads) as f:
            _check_new(path, f, state_dict.keys() | in_place)
            if f._on_gpu():
                state_dict.update(f.get_tensors())
                continue
            into = {}
            for index, (name, dtype, shape, nbytes) in enumerate(t[:4] for t in f._tensors):
                target = targets.get(name)
                if (
                    target is not None
                    and nbytes > 0
                    and target.device == f._device
                    and f._device.type == "cpu"  # decoded here, through a host address
                    and target.dtype == f._framework.dtype(f'tensor "{name}"', dtype)
                    and list(target.shape) == list(shape)
                    and target.is_contiguous()
                    and target.data_ptr() not in taken  # tied names: decoded once
                ):
                    into[index] = target.data_ptr()
                    taken.add(target.data_ptr())
                    in_place.add(name)
            with torch.no_grad():
                loaded = _frameworks.load_all(f._open(), f._tensors, f._framework, f._device, into)
            state_dict.update(loaded)
    result = model.load_state_dict(state_dict, strict=False)
    unexpected = list(result.unexpected_keys)
    loaded_names = in_place | set(state_dict)
    groups: Dict[tuple, List[str]] = {}
    for name, tensor in targets.items():
        if tensor.device.type != "meta" and tensor.numel() > 0:
            where = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
            groups.setdefault(where, []).append(name)
    # Names sharing memory with a loaded one (those decoded in place among them) are loaded.
    tied = {n for names in groups.values() if any(n in loaded_names for n in names) for n in names}
    missing = [n for n in result.missing_keys if n not in tied]
    if strict and (missing or unexpected):
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(model).__name__}: "
            f"missing keys {missing}, unexpected keys {unexpected}"
        )
    return missing, unexpected


def load(
    data: bytes, device: str = "cpu", *, threads: Optional[int] = None
) -> Dict[str, torch.Tensor]:
    """Every tensor of the enec checkpoint held in ``data``, by name, on ``device``."""
    return safe_open._of(data, "pt", device, threads).get_tensors()


def save_file(
    tensors: Dict[str, torch.Tensor],
    filename: _Path,
    metadata: Optional[Dict[str, str]] = None,
    *,
    coding: str = "ranked",
    frame: int = 16384,
    checksums: bool = True,
    threads: Optional[int] = None,
) -> None:
    """Writes the enec checkpoint of exactly the file ``safetensors.torch.save_file`` would
    write (``enec.decompress_file`` restores it byte for byte), without building that file:
    tensors are encoded and written one at a time, so memory grows by about the largest
    tensor's compressed stream. The file is written beside ``filename`` and renamed over it once
    complete: a failed save leaves what was there before.
    Raises ``ValueError`` (``RuntimeError`` for torch tensors that share memory) where
    ``safetensors`` refuses the tensors."""
    options = dict(coding=coding, frame=frame, checksums=checksums, threads=threads)
    _frameworks.save_file("torch", tensors, filename, metadata, options)


__all__ = ["load_file", "load", "load_folder", "load_model", "save_file"]
