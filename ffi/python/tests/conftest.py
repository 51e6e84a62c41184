"""Shared fixtures: a checkpoint of every dtype safetensors writes, and ways to damage files."""

import pathlib

import enec
import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy


def every_dtype() -> dict:
    """One tensor per safetensors dtype numpy can hold, several spanning many frames, plus an
    empty tensor, a scalar, and an integer tensor large enough for a piece of its own (the small
    ones lie in runs of verbatim bytes)."""
    rng = np.random.default_rng(7)
    weights = rng.normal(0.0, 0.02, size=(300, 131)).astype(np.float32)  # 39,300: three frames
    ints = rng.integers(-(2**62), 2**62, size=(5, 7), dtype=np.int64)
    return {
        "w.bf16": weights.astype(ml_dtypes.bfloat16),
        "w.f16": weights.astype(np.float16),
        "w.f32": weights,
        "w.f64": weights[:10].astype(np.float64),
        "f8_e4m3": weights[0].astype(ml_dtypes.float8_e4m3fn),
        "f8_e5m2": weights[1].astype(ml_dtypes.float8_e5m2),
        "bool": ints[0] > 0,
        "u8": ints.astype(np.uint8),
        "i8": ints.astype(np.int8),
        "u16": ints.astype(np.uint16),
        "i16": ints.astype(np.int16),
        "u32": ints.astype(np.uint32),
        "i32": ints.astype(np.int32),
        "u64": ints.astype(np.uint64),
        "i64": ints,
        "ids.i64": np.arange(4096, dtype=np.int64),
        "empty.bf16": np.zeros((0, 4), dtype=ml_dtypes.bfloat16),
        "scalar.f32": np.array(1.5, dtype=np.float32),
        "small.bf16": weights[0, :3].astype(ml_dtypes.bfloat16),
    }


METADATA = {"format": "np", "note": "enec tests"}


@pytest.fixture
def checkpoint(tmp_path: pathlib.Path):
    """(the safetensors file, its enec checkpoint) of every_dtype()."""
    original = tmp_path / "model.safetensors"
    safetensors.numpy.save_file(every_dtype(), str(original), metadata=METADATA)
    compressed = tmp_path / "model.enec"
    enec.compress_file(original, compressed)
    return original, compressed


def payload(path: pathlib.Path, name: str) -> tuple:
    """(offset, length) of the stored bytes of tensor ``name`` in the enec file ``path``."""
    with enec.safe_open(path, framework="np") as f:
        for tensor in f._checkpoint.tensors():
            if tensor[0] == name:
                return tensor[5], tensor[6]
    raise KeyError(name)


def damaged(path: pathlib.Path, at: int, out: pathlib.Path) -> pathlib.Path:
    """A copy of ``path`` with one bit of byte ``at`` flipped."""
    data = bytearray(path.read_bytes())
    data[at] ^= 0x04
    out.write_bytes(bytes(data))
    return out
