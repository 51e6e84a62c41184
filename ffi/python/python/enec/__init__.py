"""Lossless compression of AI model weights: ``.enec`` checkpoints, loaded like safetensors files.

An ``.enec`` checkpoint holds a safetensors file with its BF16, F16, F32 and FP8 tensors compressed
(every other byte verbatim), so it restores that file byte for byte.

- :func:`compress_file` / :func:`decompress_file`: the ``enec compress`` / ``enec decompress``
  conversions; :func:`compress_dir` / :func:`decompress_dir` the same over a model folder
  (every shard of a sharded checkpoint, the other files copied).
- :mod:`enec.numpy` / :mod:`enec.torch`: ``load_file``, ``load``, ``save_file``, as in
  ``safetensors.numpy`` / ``safetensors.torch``; ``enec.torch.load_model`` takes a checkpoint or
  a compressed model folder.
- :mod:`enec.transformers`: ``from_pretrained`` of a compressed Hugging Face folder.
- :class:`safe_open`: one tensor at a time, decoding only the tensors asked for.

Tensors are decoded straight into the memory of the arrays returned, frames in parallel, the GIL
released. Damaged or truncated files raise :class:`EnecError` naming the tensor and frame.
"""

import importlib
from typing import Any

from . import numpy
from ._enec import (
    EnecError,
    __version__,
    compress_dir,
    compress_file,
    decompress_dir,
    decompress_file,
)
from ._open import TensorSlice, safe_open

__all__ = [
    "__version__",
    "EnecError",
    "TensorSlice",
    "compress_dir",
    "compress_file",
    "decompress_dir",
    "decompress_file",
    "safe_open",
    "numpy",
    "torch",
    "transformers",
]


def __getattr__(name: str) -> Any:
    # enec.torch and enec.transformers are imported on first use: torch and transformers are
    # optional, and slow to import.
    if name in ("torch", "transformers"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
