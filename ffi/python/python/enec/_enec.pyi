"""The compiled half of the ``enec`` package (see :mod:`enec` for the public API)."""

import os
from typing import List, Optional, Tuple, Union

_Path = Union[str, "os.PathLike[str]"]

__version__: str

class EnecError(ValueError):
    """A file is not a valid enec or safetensors file, or is damaged (the message names the
    tensor and frame)."""

def compress_file(
    src: _Path,
    dst: _Path,
    *,
    coding: str = "ranked",
    frame: int = 16384,
    checksums: bool = True,
    threads: Optional[int] = None,
) -> int:
    """Compresses the safetensors file ``src`` into the enec checkpoint ``dst`` (replaced
    atomically), the same bytes as ``enec compress``; returns the size of ``dst``.

    ``coding``: ``"ranked"`` (default), ``"groups"`` or ``"auto"``; ``frame``: elements per
    frame, a power of two from 1024 to 65536; ``threads``: ``None`` for all cores."""

def compress_bytes(
    data: bytes,
    dst: _Path,
    *,
    coding: str = "ranked",
    frame: int = 16384,
    checksums: bool = True,
    threads: Optional[int] = None,
) -> int:
    """Compresses the safetensors file held in ``data`` into the enec checkpoint ``dst``."""

def decompress_file(src: _Path, dst: _Path, *, threads: Optional[int] = None) -> int:
    """Restores the original file of the enec file ``src`` into ``dst`` (replaced atomically),
    verifying every checksum, the same bytes as ``enec decompress``; returns the size of ``dst``."""

def compress_dir(
    src: _Path,
    dst: _Path,
    *,
    coding: str = "ranked",
    frame: int = 16384,
    checksums: bool = True,
    threads: Optional[int] = None,
) -> int:
    """Compresses the model folder ``src`` into the folder ``dst`` as ``enec compress DIR OUT``:
    every ``NAME.safetensors`` into ``NAME.safetensors.enec``, every other file copied; returns
    the bytes written."""

def decompress_dir(src: _Path, dst: _Path, *, threads: Optional[int] = None) -> int:
    """Restores the model folder that ``compress_dir`` made: every ``NAME.enec`` back to
    ``NAME``, every other file copied, every checksum verified; returns the bytes written."""

def weight_files(folder: _Path) -> List[str]:
    """The checkpoints holding the weights of a compressed model folder, in load order."""

class Checkpoint:
    """An open enec checkpoint: its index parsed, nothing decoded."""

    @staticmethod
    def open(path: _Path, threads: Optional[int] = None) -> "Checkpoint": ...
    @staticmethod
    def from_bytes(data: bytes, threads: Optional[int] = None) -> "Checkpoint": ...
    def tensors(self) -> List[Tuple[str, str, List[int], int, int, int, int, bool, int]]:
        """(name, safetensors dtype, shape, bytes, offset in the original file, payload offset,
        payload length, whether the payload is an enec stream, h32 of a verbatim payload or 0),
        in file order."""
    def index(self, name: str) -> Optional[int]: ...
    def original_len(self) -> int:
        """The original file's length in bytes."""
    def header(self) -> bytes:
        """The original safetensors header: its 8-byte length and its JSON."""
    def decode_tensor_into(self, index: int, address: int, length: int) -> None:
        """Decodes tensor ``index`` into caller-owned, writable, contiguous memory."""
    def decode_tensors_into(self, parts: List[Tuple[int, int, int]]) -> None:
        """Decodes tensors (index, address, length) each into caller-owned, writable,
        contiguous memory of its own, with one call."""
    def decode_all_into(self, address: int, length: int) -> None:
        """Restores the whole original file into caller-owned, writable, contiguous memory."""

class CheckpointWriter:
    """A checkpoint written tensor by tensor (``save_file``): into a temporary file beside
    ``path``, renamed to ``path`` by :meth:`finish`, removed by :meth:`abort` or when dropped."""

    def __init__(
        self,
        path: _Path,
        tensors: List[Tuple[str, str, List[int], int]],
        metadata: Optional[List[Tuple[str, str]]],
        *,
        coding: str = "ranked",
        frame: int = 16384,
        checksums: bool = True,
        threads: Optional[int] = None,
    ) -> None:
        """The checkpoint of the safetensors file of ``tensors`` ((name, safetensors dtype,
        shape, bytes) each) and ``metadata`` as ``safetensors`` writes it."""
    def order(self) -> List[int]:
        """The tensors' positions in ``tensors``, in the order :meth:`write` takes them."""
    def write(self, address: int, length: int) -> None:
        """Encodes and writes the next tensor's bytes, held in caller-owned contiguous memory."""
    def finish(self) -> int:
        """Writes the index, syncs and renames the file; returns its size."""
    def abort(self) -> None:
        """Removes the unfinished file (nothing once finished)."""

def cuda_library() -> Optional[bytes]:
    """The CUDA kernels and loader as a shared library, or ``None`` when the package was built
    without nvcc."""
