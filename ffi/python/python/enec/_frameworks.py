"""How each framework allocates the empty array or tensor that the decoder fills."""

import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._enec import EnecError

# safetensors dtype -> numpy dtype name, little-endian (the safetensors byte order).
_NUMPY_DTYPES = {
    "BOOL": "bool",
    "U8": "uint8",
    "I8": "int8",
    "U16": "<u2",
    "I16": "<i2",
    "U32": "<u4",
    "I32": "<i4",
    "U64": "<u8",
    "I64": "<i8",
    "F16": "<f2",
    "F32": "<f4",
    "F64": "<f8",
    "C64": "<c8",
}
# safetensors dtype -> ml_dtypes type name: the dtypes numpy lacks.
_ML_DTYPES = {
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
}
# safetensors dtype -> torch dtype attribute (absent ones are missing from older torch).
_TORCH_DTYPES = {
    "BOOL": "bool",
    "U8": "uint8",
    "I8": "int8",
    "U16": "uint16",
    "I16": "int16",
    "U32": "uint32",
    "I32": "int32",
    "U64": "uint64",
    "I64": "int64",
    "F16": "float16",
    "BF16": "bfloat16",
    "F32": "float32",
    "F64": "float64",
    "C64": "complex64",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
}


# numpy and torch dtype names -> the safetensors dtype that safetensors saves them as.
_SAVED_DTYPES = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "uint16": "U16",
    "int16": "I16",
    "uint32": "U32",
    "int32": "I32",
    "uint64": "U64",
    "int64": "I64",
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
    "complex64": "C64",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "float8_e8m0fnu": "F8_E8M0",
    "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
}


class Framework:
    """Makes the arrays of one framework that the decoder fills.

    ``empty(what, dtype, shape, nbytes)``: a new, uninitialized array of the safetensors dtype
    ``dtype`` and shape ``shape``, which the file holds in ``nbytes`` bytes (``what`` names it in
    errors), with memory of its own, and the address of that memory.
    ``dtype(what, dtype)``: the framework's dtype of the safetensors dtype ``dtype`` (torch only).
    ``device(device)``: ``device`` checked (a ``ValueError`` when arrays cannot go there), in
    the form ``to_device`` takes.
    ``to_device(array, device)``: the array on ``device``.
    ``check_save(tensors)``: a ``ValueError`` (or ``RuntimeError``, for tensors sharing
    memory) where ``safetensors`` refuses to save the dict ``tensors``.
    ``saved(name, array)``: the safetensors dtype, shape and byte length ``array`` is saved as.
    ``contents(array)``: an object holding the array's bytes, contiguous, little-endian and in
    CPU memory, and their address (only one array's copy at a time, where one is needed).
    """

    empty: Callable[[str, str, Sequence[int], int], Tuple[Any, int]]
    dtype: Callable[[str, str], Any]
    device: Callable[[Any], Any]
    to_device: Callable[[Any, Any], Any]
    check_save: Callable[[Dict[str, Any]], None]
    saved: Callable[[str, Any], Tuple[str, List[int], int]]
    contents: Callable[[Any], Tuple[Any, int]]


def elements(what: str, dtype: str, shape: Sequence[int], itemsize: int, nbytes: int) -> int:
    """The element count of ``shape``, checked against the ``nbytes`` bytes the file holds."""
    count = 1
    for n in shape:
        count *= n
    if count * itemsize != nbytes:
        raise EnecError(
            f"{what}: shape {list(shape)} of {dtype} needs {count * itemsize} bytes, "
            f"the file holds {nbytes}"
        )
    return count


def _numpy_empty(np: Any, shape: Sequence[int], dtype: Any) -> Tuple[Any, int]:
    # numpy asks the kernel for huge pages for large arrays: a fresh one then costs a few page
    # faults instead of one per 4 KiB.
    array = np.empty(shape, dtype=dtype)
    return array, array.__array_interface__["data"][0]


def _numpy_dtype(np: Any, what: str, dtype: str) -> Any:
    if dtype in _NUMPY_DTYPES:
        return np.dtype(_NUMPY_DTYPES[dtype])
    if dtype in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError(
                f"{what} is {dtype}, which numpy holds only through the ml_dtypes package: "
                "pip install ml_dtypes"
            ) from None
        found = getattr(ml_dtypes, _ML_DTYPES[dtype], None)
        if found is None:
            raise EnecError(f"{what}: dtype {dtype} needs a newer ml_dtypes than the one installed")
        return np.dtype(found)
    raise EnecError(f"{what}: dtype {dtype!r} has no numpy equivalent")


def _saved_dtype(name: str, dtype: str) -> str:
    found = _SAVED_DTYPES.get(dtype)
    if found is None:
        raise ValueError(
            f"tensor {name!r}: dtype {dtype} cannot be saved in a safetensors file "
            f"(it holds {', '.join(_SAVED_DTYPES)})"
        )
    return found


def numpy_framework() -> Framework:
    import numpy as np

    def check_save(tensors: Dict[str, Any]) -> None:
        for name, array in tensors.items():
            if not isinstance(array, (np.ndarray, np.generic)):
                raise ValueError(
                    f"Key `{name}` is invalid, expected numpy.ndarray but received {type(array)}"
                )

    def saved(name: str, array: Any) -> Tuple[str, List[int], int]:
        return _saved_dtype(name, array.dtype.name), list(array.shape), array.nbytes

    def contents(array: Any) -> Tuple[Any, int]:
        order = array.dtype.byteorder
        if order == ">" or (order == "=" and sys.byteorder == "big"):
            array = array.astype(array.dtype.newbyteorder("<"))
        array = np.ascontiguousarray(array)
        return array, array.__array_interface__["data"][0]

    def empty(what: str, dtype: str, shape: Sequence[int], nbytes: int) -> Tuple[Any, int]:
        found = _numpy_dtype(np, what, dtype)
        elements(what, dtype, shape, found.itemsize, nbytes)
        return _numpy_empty(np, shape, found)

    def device(device: Any) -> Any:
        if device != "cpu":
            raise ValueError(f'numpy arrays live on the CPU: device must be "cpu", not {device!r}')
        return device

    f = Framework()
    f.empty = empty
    f.device = device
    f.to_device = lambda array, device: array
    f.check_save = check_save
    f.saved = saved
    f.contents = contents
    return f


def torch_framework() -> Framework:
    try:
        import torch
    except ImportError:
        raise ImportError("enec.torch needs PyTorch: pip install torch") from None

    def torch_dtype(what: str, dtype: str) -> Any:
        found = getattr(torch, _TORCH_DTYPES.get(dtype, ""), None)
        if not isinstance(found, torch.dtype):
            raise EnecError(f"{what}: dtype {dtype!r} has no equivalent in this torch")
        return found

    def empty(what: str, dtype: str, shape: Sequence[int], nbytes: int) -> Tuple[Any, int]:
        found = torch_dtype(what, dtype)
        elements(what, dtype, shape, found.itemsize, nbytes)
        if nbytes == 0:
            return torch.empty(shape, dtype=found), 0  # torch cannot view an empty byte array
        import numpy as np

        # numpy's huge pages: twice as fast to fill here as torch.empty's memory.
        array, address = _numpy_empty(np, nbytes, np.uint8)
        return torch.from_numpy(array).view(found).reshape(shape), address

    def device(device: Any) -> Any:
        try:
            found = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"device {device!r}: {e}") from None
        if found.type == "meta":
            raise ValueError('device "meta" holds no data: load onto a real device')
        return found

    def check_save(tensors: Dict[str, Any]) -> None:
        sparse = []
        for name, tensor in tensors.items():
            if not isinstance(tensor, torch.Tensor):
                raise ValueError(
                    f"Key `{name}` is invalid, expected torch.Tensor but received {type(tensor)}"
                )
            if tensor.layout != torch.strided:
                sparse.append(name)
        if sparse:
            raise ValueError(
                f"You are trying to save a sparse tensors: `{sparse}` which this library does not "
                "support. You can make it a dense tensor before saving with `.to_dense()` but be "
                "aware this might make a much larger file than needed."
            )
        for name, tensor in tensors.items():
            if not tensor.is_contiguous():
                raise ValueError(
                    f"You are trying to save a non contiguous tensor: `{name}` which is not "
                    "allowed. It either means you are trying to save tensors which are reference "
                    "of each other in which case it's recommended to save only the full tensors, "
                    "and reslice at load time, or simply call `.contiguous()` on your tensor to "
                    "pack it before saving."
                )
        # Tensors whose bytes overlap in one storage, as safetensors finds them.
        storages: Dict[Any, List[Tuple[int, int, str]]] = {}
        for name, tensor in tensors.items():
            if tensor.device.type == "meta":
                continue
            storage = tensor.untyped_storage()
            if storage.data_ptr() == 0 or storage.nbytes() == 0:
                continue
            start = tensor.data_ptr()
            stop = start + tensor.numel() * tensor.element_size()
            key = (tensor.device, storage.data_ptr(), storage.nbytes())
            storages.setdefault(key, []).append((start, stop, name))
        failing = []
        for areas in storages.values():
            areas.sort()
            groups = [[areas[0][2]]]
            last_stop = areas[0][1]
            for start, stop, name in areas[1:]:
                if start >= last_stop:
                    groups.append([name])
                else:
                    groups[-1].append(name)
                last_stop = stop
            failing.extend(sorted(g) for g in groups if len(g) > 1)
        if failing:
            raise RuntimeError(
                f"Some tensors share memory, this will lead to duplicate memory on disk and "
                f"potential differences when loading them again: {failing}. A potential way to "
                "correctly save your model is to use `save_model`."
            )

    def saved(name: str, tensor: Any) -> Tuple[str, List[int], int]:
        dtype = _saved_dtype(name, str(tensor.dtype).split(".")[-1])
        return dtype, list(tensor.shape), tensor.numel() * tensor.element_size()

    def contents(tensor: Any) -> Tuple[Any, int]:
        if tensor.device.type != "cpu":
            tensor = tensor.to("cpu")
        return tensor, tensor.data_ptr() if tensor.numel() else 0

    f = Framework()
    f.empty = empty
    f.dtype = torch_dtype
    f.check_save = check_save
    f.saved = saved
    f.contents = contents
    f.device = device
    f.to_device = lambda tensor, device: tensor if device.type == "cpu" else tensor.to(device)
    return f


def framework(name: str) -> Framework:
    """The framework of one of the names ``safetensors`` accepts for numpy or torch."""
    if name in ("np", "numpy"):
        return numpy_framework()
    if name in ("pt", "torch", "pytorch"):
        return torch_framework()
    raise ValueError(
        f'framework {name!r}: enec reads "np" or "numpy" (numpy arrays) and "pt", "torch" or '
        '"pytorch" (torch tensors)'
    )


Tensors = List[Tuple[str, str, List[int], int, int, int, int, bool, int]]


def load_one(
    checkpoint: Any,
    tensors: Tensors,
    framework: Framework,
    index: int,
    device: Any,
) -> Any:
    """Tensor ``index`` of ``checkpoint`` (whose ``tensors()`` is ``tensors``), decoded alone
    into an array of its own, frames in parallel, the GIL released."""
    name, dtype, shape, nbytes = tensors[index][:4]
    array, address = framework.empty(f'tensor "{name}"', dtype, shape, nbytes)
    checkpoint.decode_tensor_into(index, address, nbytes)
    return framework.to_device(array, device)


def load_all(
    checkpoint: Any,
    tensors: Tensors,
    framework: Framework,
    device: Any,
    into: Optional[Dict[int, int]] = None,
) -> Dict[str, Any]:
    """Every tensor of ``checkpoint``, by name, in file order, each decoded into an array with
    memory of its own (one tensor kept alive holds only its own bytes), all with one call:
    small tensors and the frames of large ones shared among the threads alike, the GIL
    released. ``into``: per tensor position, the address of existing memory of the tensor's
    byte length to decode it into instead (a model's parameter); those are not returned."""
    into = into or {}
    arrays = {}
    parts = []
    for index, (name, dtype, shape, nbytes) in enumerate(t[:4] for t in tensors):
        if index in into:
            parts.append((index, into[index], nbytes))
            continue
        array, address = framework.empty(f'tensor "{name}"', dtype, shape, nbytes)
        arrays[index] = array
        parts.append((index, address, nbytes))
    checkpoint.decode_tensors_into(parts)
    return {tensors[i][0]: framework.to_device(array, device) for i, array in arrays.items()}


def save_file(
    framework: str,
    tensors: Dict[str, Any],
    filename: Any,
    metadata: Optional[Dict[str, str]],
    options: Dict[str, Any],
) -> None:
    """Writes the enec checkpoint of the file ``safetensors.<framework>.save_file`` would write,
    one tensor at a time: each is encoded and written before the next is looked at, into a
    temporary file beside ``filename`` that replaces it once complete."""
    from ._enec import CheckpointWriter

    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, tensor] but received {type(tensors)}")
    f = numpy_framework() if framework == "numpy" else torch_framework()
    f.check_save(tensors)
    arrays = list(tensors.values())
    specs = [(name, *f.saved(name, array)) for name, array in tensors.items()]
    if metadata is not None:
        metadata = sorted(metadata.items())
    writer = CheckpointWriter(os.fspath(filename), specs, metadata, **options)
    try:
        for index in writer.order():
            holder, address = f.contents(arrays[index])
            writer.write(address, specs[index][3])
            del holder
        writer.finish()
    finally:
        writer.abort()  # nothing left behind on failure; nothing done once finished
