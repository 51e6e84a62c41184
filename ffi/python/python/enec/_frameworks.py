"""How each framework allocates the empty array or tensor that the decoder fills."""

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


class Framework:
    """Allocates arrays of one framework: ``empty`` returns the array and the address and
    length of its memory."""

    name: str
    empty: Callable[[str, str, Sequence[int]], Tuple[Any, int, int]]
    to_device: Callable[[Any, str], Any]


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


def numpy_framework() -> Framework:
    import numpy as np

    f = Framework()
    f.name = "np"

    def empty(what: str, dtype: str, shape: Sequence[int]) -> Tuple[Any, int, int]:
        array = np.empty(shape, dtype=_numpy_dtype(np, what, dtype))
        return array, array.__array_interface__["data"][0], array.nbytes

    def to_device(array: Any, device: str) -> Any:
        return array  # safe_open accepts only "cpu" for numpy

    f.empty = empty
    f.to_device = to_device
    return f


def torch_framework() -> Framework:
    try:
        import torch
    except ImportError:
        raise ImportError("enec.torch needs PyTorch: pip install torch") from None

    f = Framework()
    f.name = "pt"

    def empty(what: str, dtype: str, shape: Sequence[int]) -> Tuple[Any, int, int]:
        found = getattr(torch, _TORCH_DTYPES.get(dtype, ""), None)
        if not isinstance(found, torch.dtype):
            raise EnecError(f"{what}: dtype {dtype!r} has no equivalent in this torch")
        tensor = torch.empty(shape, dtype=found)
        return tensor, tensor.data_ptr(), tensor.numel() * tensor.element_size()

    def to_device(tensor: Any, device: str) -> Any:
        return tensor if device == "cpu" else tensor.to(device)

    f.empty = empty
    f.to_device = to_device
    return f


def framework(name: str) -> Framework:
    if name in ("np", "numpy"):
        return numpy_framework()
    if name in ("pt", "torch"):
        return torch_framework()
    raise ValueError(f'framework {name!r}: enec reads "np" (numpy) and "pt" (torch)')


def decode(
    checkpoint: Any,
    tensors: List[Tuple[str, str, List[int], int, int, int]],
    framework: Framework,
    indices: List[int],
    device: str,
    threads: Optional[int],
) -> List[Any]:
    """The tensors ``indices`` of ``checkpoint``, allocated by ``framework`` and decoded into
    with one call (frames in parallel, the GIL released); ``tensors`` is its ``tensors()``."""
    arrays, addresses, lengths = [], [], []
    for i in indices:
        name, dtype, shape, nbytes = tensors[i][:4]
        what = f'tensor "{name}"'
        array, address, length = framework.empty(what, dtype, shape)
        if length != nbytes:
            raise EnecError(
                f"{what}: shape {list(shape)} of {dtype} needs {length} bytes, the file holds {nbytes}"
            )
        arrays.append(array)
        addresses.append(address)
        lengths.append(length)
    checkpoint.decode_into(indices, addresses, lengths, threads)
    return [framework.to_device(a, device) for a in arrays]


def load_all(checkpoint: Any, framework: Framework, device: str, threads: Optional[int]) -> Dict[str, Any]:
    """Every tensor of ``checkpoint``, by name, in file order."""
    tensors = checkpoint.tensors()
    indices = list(range(len(tensors)))
    arrays = decode(checkpoint, tensors, framework, indices, device, threads)
    return {t[0]: a for t, a in zip(tensors, arrays)}
