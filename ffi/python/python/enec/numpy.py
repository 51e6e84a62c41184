"""Load and save enec checkpoints as numpy arrays, like ``safetensors.numpy``.

BF16 and float8 tensors come as ``ml_dtypes`` arrays (``pip install ml_dtypes``).
"""

import os
from typing import Dict, Optional, Union

import numpy as np

from . import _frameworks
from ._open import safe_open

_Path = Union[str, "os.PathLike[str]"]


def load_file(filename: _Path, *, threads: Optional[int] = None) -> Dict[str, np.ndarray]:
    """Every tensor of the enec checkpoint ``filename`` as a numpy array, by name, in file order.

    Each tensor is decoded straight into its array, frames in parallel on ``threads`` threads
    (``None``: all cores), the GIL released; every checksum is verified.
    """
    with safe_open(filename, framework="np", threads=threads) as f:
        return f.get_tensors()


def load(data: bytes, *, threads: Optional[int] = None) -> Dict[str, np.ndarray]:
    """Every tensor of the enec checkpoint held in ``data`` as a numpy array, by name."""
    return safe_open._of(data, "np", "cpu", threads).get_tensors()


def save_file(
    tensor_dict: Dict[str, np.ndarray],
    filename: _Path,
    metadata: Optional[Dict[str, str]] = None,
    *,
    coding: str = "ranked",
    frame: int = 16384,
    checksums: bool = True,
    threads: Optional[int] = None,
) -> None:
    """Writes the enec checkpoint of exactly the file ``safetensors.numpy.save_file`` would
    write (``enec.decompress_file`` restores it byte for byte), without building that file:
    tensors are encoded and written one at a time, so memory grows by about the largest
    tensor's compressed stream. The file is written beside ``filename`` and renamed over it once
    complete: a failed save leaves what was there before.
    Raises ``ValueError`` (``RuntimeError`` for torch tensors that share memory) where
    ``safetensors`` refuses the tensors."""
    options = dict(coding=coding, frame=frame, checksums=checksums, threads=threads)
    _frameworks.save_file("numpy", tensor_dict, filename, metadata, options)


__all__ = ["load_file", "load", "save_file"]
