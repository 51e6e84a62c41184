"""Loading onto a CUDA device, decoding there.

The compressed frames are read by a few threads into pinned staging slots, copied to the GPU and
decoded there by the CUDA kernels straight into the tensors' memory, checksums verified on the
GPU, while the next slot is read (``enec_cuda_load`` of the library built from ``ffi/cuda``). No
decoded copy of a tensor exists in host memory. Pieces stored verbatim (integer tensors) travel
the same way, their checksums verified on the host.

The library is built with the package when nvcc is found and carried inside the extension; it
links the CUDA runtime statically and needs only the NVIDIA driver. Where it is missing or cannot
run on the device, :func:`unusable` says why and the callers decode on the CPU.
"""

import ctypes
import os
import threading
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _frameworks
from ._enec import EnecError, cuda_library

# enec_cuda_load_job.kind: an enec stream, or verbatim bytes with their h32.
_STREAM, _RAW = 0, 1


class _Job(ctypes.Structure):
    _fields_ = [
        ("offset", ctypes.c_uint64),
        ("length", ctypes.c_uint64),
        ("dst", ctypes.c_void_p),
        ("dst_bytes", ctypes.c_uint64),
        ("kind", ctypes.c_uint32),
        ("checksum", ctypes.c_uint32),
    ]


class _Options(ctypes.Structure):
    _fields_ = [
        ("device", ctypes.c_int),
        ("verify_checksums", ctypes.c_int),
        ("threads", ctypes.c_uint32),
        ("slots", ctypes.c_uint32),
        ("staging_bytes", ctypes.c_uint64),
    ]


class _Report(ctypes.Structure):
    _fields_ = [
        ("bytes_read", ctypes.c_uint64),
        ("bytes_decoded", ctypes.c_uint64),
        ("job", ctypes.c_uint32),
        ("frame", ctypes.c_uint32),
        ("status", ctypes.c_uint32),
        ("cuda_error", ctypes.c_int),
        ("os_error", ctypes.c_int),
        ("batches", ctypes.c_uint32),
    ]


# enec_cuda.h's return codes and frame statuses, as the CPU decoder words them.
_ERRORS = {
    -1: "invalid argument",
    -2: "the stream is truncated",
    -3: "not an enec stream",
    -4: "unsupported format version",
    -5: "corrupt stream header",
    -6: "corrupt frame header",
    -7: "the stream decodes to another size than the tensor's",
    -8: "bytes after the stream's last frame",
    -9: "the CUDA kernel launch failed",
    -10: "a CUDA call failed",
    -11: "reading the file failed",
    -12: "the frame failed to decode",
    -13: "checksum mismatch",
}
_STATUSES = {
    1: "corrupt frame header",
    2: "frame size mismatch",
    3: "element count mismatch",
    4: "corrupt symbol table",
    5: "corrupt escape counts",
    6: "corrupt flag count",
    7: "checksum mismatch",
    8: "checksum in a stream without checksums",
    9: "unknown coding",
}

# Seconds from the start of the last load to the end of each step (allocated, raw, decoded,
# synchronized), for benchmarks.
last_times: Dict[str, float] = {}

_lock = threading.Lock()
_lib: Any = None
_lib_error: Optional[str] = None
_warned = False


def _library() -> Any:
    """The CUDA library carried by the extension, loaded once (from memory: nothing is written
    to disk)."""
    global _lib, _lib_error
    with _lock:
        if _lib is not None or _lib_error is not None:
            return _lib
        # ENEC_CUDA_LIBRARY: a libenec_cuda.so built apart (ffi/cuda/run.sh), used instead.
        path = os.environ.get("ENEC_CUDA_LIBRARY")
        data = None if path else cuda_library()
        if data is None and not path:
            _lib_error = "this enec was built without nvcc, so it has no CUDA kernels"
            return None
        try:
            if not path:
                fd = os.memfd_create("libenec_cuda.so")
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                # The descriptor stays open for the process's lifetime: the library is mapped
                # from it.
                path = f"/proc/self/fd/{fd}"
            lib = ctypes.CDLL(path)
        except (AttributeError, OSError) as e:
            _lib_error = f"the CUDA library cannot be loaded ({e})"
            return None
        lib.enec_cuda_load.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.POINTER(_Job),
            ctypes.c_size_t,
            ctypes.POINTER(_Options),
            ctypes.POINTER(_Report),
        ]
        lib.enec_cuda_load.restype = ctypes.c_int
        lib.enec_cuda_check_device.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        lib.enec_cuda_check_device.restype = ctypes.c_int
        lib.enec_cuda_error_string.argtypes = [ctypes.c_int]
        lib.enec_cuda_error_string.restype = ctypes.c_char_p
        _lib = lib
        return lib


def _cuda_message(lib: Any, error: int) -> str:
    return lib.enec_cuda_error_string(error).decode(errors="replace")


def unusable(device: Any) -> Optional[str]:
    """Why tensors for the torch device ``device`` (of type ``cuda``) cannot be decoded there,
    or ``None`` when they can."""
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    lib = _library()
    if lib is None:
        return _lib_error
    index = device.index if device.index is not None else torch.cuda.current_device()
    error = ctypes.c_int(0)
    if lib.enec_cuda_check_device(index, ctypes.byref(error)) != 0:
        return f"CUDA device {index}: {_cuda_message(lib, error.value)}"
    return None


def warn_cpu(reason: str) -> None:
    """Says once per process why tensors for a GPU are decoded on the CPU."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"enec: decoding on the CPU and copying to the GPU, because {reason}",
            RuntimeWarning,
            stacklevel=4,
        )


def load(
    name: str,
    checkpoint: Any,
    tensors: Sequence[Tuple[Any, ...]],
    indices: Sequence[int],
    framework: Any,
    device: Any,
    source: Any,
    threads: Optional[int],
) -> Dict[str, Any]:
    """The tensors at ``indices`` of ``tensors`` (``checkpoint.tensors()``), by name, in that
    order, decoded on the CUDA device ``device``. ``source``: the checkpoint's path, or the
    bytes it is held in."""
    times = {"start": time.perf_counter()}
    lib = _library()
    fd = -1
    if not isinstance(source, (bytes, bytearray)):
        fd = os.open(source, os.O_RDONLY)
        try:
            _read_ahead(fd, tensors, indices)
            return _load(lib, name, tensors, indices, framework, device, source, fd, threads, times)
        finally:
            os.close(fd)
    return _load(lib, name, tensors, indices, framework, device, source, fd, threads, times)


# Bytes of the first streams the kernel is asked to read while the tensors are allocated.
_EARLY_READ = 256 << 20


def _read_ahead(fd: int, tensors: Sequence[Tuple[Any, ...]], indices: Sequence[int]) -> None:
    """Starts the storage on the first streams before anything else: allocating the tensors
    takes tens of milliseconds that a file not in the page cache would otherwise wait on top."""
    if not indices or not hasattr(os, "posix_fadvise"):
        return
    start = min(tensors[i][5] for i in indices)
    try:
        os.posix_fadvise(fd, start, _EARLY_READ, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass  # advice only


def _load(
    lib: Any,
    name: str,
    tensors: Sequence[Tuple[Any, ...]],
    indices: Sequence[int],
    framework: Any,
    device: Any,
    source: Any,
    fd: int,
    threads: Optional[int],
    times: Dict[str, float],
) -> Dict[str, Any]:
    import numpy as np
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    device = torch.device("cuda", index)
    loaded: Dict[str, Any] = {}
    # Rows of enec_cuda_load_job: offset, length, dst, dst_bytes, kind | checksum << 32.
    jobs: List[Tuple[int, int, int, int, int]] = []
    job_names: List[str] = []
    dtypes: Dict[str, Any] = {}
    empty = torch.empty
    with torch.cuda.device(index):
        for i in indices:
            tname, dtype, shape, nbytes, _, offset, length, coded, checksum = tensors[i]
            found = dtypes.get(dtype)
            if found is None:
                found = dtypes[dtype] = framework.dtype(f'tensor "{tname}"', dtype)
            count = 1
            for n in shape:
                count *= n
            if count * found.itemsize != nbytes:
                _frameworks.elements(f'tensor "{tname}"', dtype, shape, found.itemsize, nbytes)
            tensor = empty(shape, dtype=found, device=device)
            loaded[tname] = tensor
            if nbytes:
                kind = _STREAM if coded else _RAW | checksum << 32
                jobs.append((offset, length, tensor.data_ptr(), nbytes, kind))
                job_names.append(tname)
        times["allocated"] = time.perf_counter()
        if jobs:
            _decode(lib, name, np.array(jobs, dtype=np.uint64), job_names, index, source, fd, threads)
        times["decoded"] = time.perf_counter()
        torch.cuda.current_stream(device).synchronize()
        times["synchronized"] = time.perf_counter()
    global last_times
    last_times = {k: v - times["start"] for k, v in times.items() if k != "start"}
    return loaded


def _decode(
    lib: Any,
    name: str,
    jobs: Any,
    job_names: List[str],
    index: int,
    source: Any,
    fd: int,
    threads: Optional[int],
) -> None:
    options = _Options(
        device=index,
        verify_checksums=1,
        threads=threads if threads is not None else min(os.cpu_count() or 1, 16),
        # Tuning knobs for benchmarks; 0: the library's defaults.
        slots=int(os.environ.get("ENEC_CUDA_SLOTS", "0")),
        staging_bytes=int(os.environ.get("ENEC_CUDA_STAGING_MIB", "0")) << 20,
    )
    report = _Report()
    host = None
    if fd < 0:
        host = ctypes.cast(ctypes.c_char_p(bytes(source) if isinstance(source, bytearray) else source), ctypes.c_void_p)
    # jobs: a C-contiguous uint64 array of rows (offset, length, dst, dst_bytes, kind |
    # checksum << 32): the layout of enec_cuda_load_job on a little-endian machine.
    array = jobs.ctypes.data_as(ctypes.POINTER(_Job))
    rc = lib.enec_cuda_load(fd, host, array, len(jobs), ctypes.byref(options), ctypes.byref(report))
    if rc == 0:
        return
    what = _ERRORS.get(rc, f"error {rc}")
    tensor = job_names[report.job] if report.job < len(job_names) else "?"
    if rc == -10 or rc == -9:
        raise RuntimeError(f"{name}: tensor \"{tensor}\": {what}: {_cuda_message(lib, report.cuda_error)}")
    if rc == -11:
        detail = os.strerror(report.os_error) if report.os_error else "the file ends early"
        raise OSError(report.os_error or 0, f"{name}: tensor \"{tensor}\": {what}: {detail}")
    where = f" frame {report.frame}" if rc in (-6, -12) else ""
    if rc == -12:
        what = _STATUSES.get(report.status, f"status {report.status}")
    raise EnecError(f"{name}: tensor \"{tensor}\"{where}: {what}")
