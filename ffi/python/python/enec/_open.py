"""``safe_open``: an enec checkpoint read one tensor at a time, like ``safetensors.safe_open``."""

import json
import os
from typing import Any, Callable, Dict, List, Optional, Union

from . import _frameworks, _gpu
from ._enec import Checkpoint, EnecError


class safe_open:
    """Opens the enec checkpoint ``filename`` for reading tensors one at a time.

    Only the index is read on opening; ``get_tensor`` decodes (and checksum-verifies) only the
    tensor asked for. Use it as a context manager::

        with enec.safe_open("model.enec", framework="pt") as f:
            for name in f.keys():
                tensor = f.get_tensor(name)

    ``framework``: ``"pt"`` (or ``"torch"``, ``"pytorch"``: torch tensors) or ``"np"`` (or
    ``"numpy"``: numpy arrays); ``device``: where torch tensors go, checked on opening (numpy
    arrays are on ``"cpu"``); ``threads``: decoding threads (reading threads for a GPU),
    ``None`` for all cores.

    On a CUDA device (``"cuda"``, ``"cuda:1"``, a ``torch.device``) the compressed frames are
    copied to the GPU and decoded there, checksums verified there; where that cannot run (a
    package built without nvcc, a GPU the kernels were not built for), a warning says why once
    and tensors are decoded on the CPU and copied.
    """

    def __init__(
        self,
        filename: Union[str, "os.PathLike[str]"],
        framework: str,
        device: str = "cpu",
        *,
        threads: Optional[int] = None,
    ) -> None:
        path = os.fspath(filename)
        self._setup(framework, device, threads, path, lambda: Checkpoint.open(path, threads))

    @classmethod
    def _of(cls, data: bytes, framework: str, device: str, threads: Optional[int]) -> "safe_open":
        """A reader of the checkpoint held in ``data`` (for ``load(bytes)``)."""
        self = cls.__new__(cls)
        self._setup(framework, device, threads, data, lambda: Checkpoint.from_bytes(data, threads))
        return self

    def _setup(
        self,
        framework: str,
        device: str,
        threads: Optional[int],
        source: Union[str, bytes],
        checkpoint: Callable[[], Checkpoint],
    ) -> None:
        # Arguments first, so that a wrong one is named before the file is read.
        self._framework = _frameworks.framework(framework)
        self._device = self._framework.device(device)
        self._threads = threads
        self._source = source
        self._name = source if isinstance(source, str) else "<bytes>"
        self._checkpoint: Optional[Checkpoint] = checkpoint()
        self._tensors = self._checkpoint.tensors()

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._checkpoint = None

    def _open(self) -> Checkpoint:
        if self._checkpoint is None:
            raise ValueError("the enec checkpoint is closed")
        return self._checkpoint

    def keys(self) -> List[str]:
        """The tensor names, sorted."""
        self._open()
        return sorted(t[0] for t in self._tensors)

    def offset_keys(self) -> List[str]:
        """The tensor names in the order of their bytes in the file."""
        self._open()
        return [t[0] for t in self._tensors]

    def metadata(self) -> Optional[Dict[str, str]]:
        """The ``__metadata__`` of the safetensors header, or ``None``."""
        header = self._open().header()
        length = int.from_bytes(header[:8], "little")
        return json.loads(header[8 : 8 + length]).get("__metadata__")

    def _index(self, name: str) -> int:
        index = self._open().index(name)
        if index is None:
            raise KeyError(f"no tensor named {name!r} in this checkpoint")
        return index

    def get_tensor(self, name: str) -> Any:
        """The tensor ``name``, decoded (only it) into a new array or tensor."""
        index = self._index(name)
        if self._on_gpu():
            return self._gpu([index])[name]
        return _frameworks.load_one(
            self._open(), self._tensors, self._framework, index, self._device
        )

    def get_tensors(self) -> Dict[str, Any]:
        """Every tensor, by name, in file order (decoded with one call)."""
        if self._on_gpu():
            return self._gpu(range(len(self._tensors)))
        return _frameworks.load_all(
            self._open(), self._tensors, self._framework, self._device
        )

    def _on_gpu(self) -> bool:
        """Whether tensors are decoded on the GPU (a warning once when they could not be)."""
        if getattr(self._device, "type", None) != "cuda":
            return False
        reason = _gpu.unusable(self._device)
        if reason is not None:
            _gpu.warn_cpu(reason)
        return reason is None

    def _gpu(self, indices: Any) -> Dict[str, Any]:
        indices = list(indices)
        loaded = _gpu.load(
            self._name,
            self._open(),
            self._tensors,
            indices,
            self._framework,
            self._device,
            self._source,
            self._threads,
        )
        return {self._tensors[i][0]: loaded[self._tensors[i][0]] for i in indices}

    def get_slice(self, name: str) -> "TensorSlice":
        """A handle on the tensor ``name``: its shape and dtype without decoding, and indexing
        (``f.get_slice(name)[0:2]``), which decodes the whole tensor once and slices it."""
        return TensorSlice(self, self._index(name))


class TensorSlice:
    """A tensor of a :class:`safe_open` file, decoded when first indexed."""

    def __init__(self, file: safe_open, index: int) -> None:
        self._file = file
        self._index = index
        self._tensor: Any = None

    def get_shape(self) -> List[int]:
        """The tensor's shape."""
        return list(self._file._tensors[self._index][2])

    def get_dtype(self) -> str:
        """The tensor's safetensors dtype name (``BF16``, ``F32``, ...)."""
        return self._file._tensors[self._index][1]

    def __getitem__(self, key: Any) -> Any:
        if self._tensor is None:
            self._tensor = self._file.get_tensor(self._file._tensors[self._index][0])
        return self._tensor[key]


__all__ = ["safe_open", "TensorSlice", "EnecError"]
