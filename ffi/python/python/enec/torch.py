"""Load and save enec checkpoints as torch tensors, like ``safetensors.torch``.

Importing this module needs PyTorch; building and installing the package does not.
"""

import os
from typing import Dict, Optional, Union

try:
    import torch
except ImportError:
    raise ImportError("enec.torch needs PyTorch: pip install torch") from None

from . import _frameworks
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


__all__ = ["load_file", "load", "save_file"]
