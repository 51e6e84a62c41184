"""Finding the CUDA library the package carries (these run without a GPU or torch)."""

import enec
import enec._gpu as gpu
import pytest
from enec._enec import cuda_library


@pytest.fixture
def fresh(monkeypatch):
    """The module as if no library had been looked for yet."""
    monkeypatch.setattr(gpu, "_lib", None)
    monkeypatch.setattr(gpu, "_lib_error", None)
    return gpu


def test_the_library_is_a_shared_object_or_absent(fresh):
    data = cuda_library()
    if data is None:
        assert fresh._library() is None
        assert "without nvcc" in fresh._lib_error
    else:
        assert data[:4] == b"\x7fELF"
        lib = fresh._library()
        assert lib is not None and fresh._library() is lib  # loaded once


def test_a_library_that_cannot_load_is_explained(fresh, monkeypatch, tmp_path):
    bogus = tmp_path / "libenec_cuda.so"
    bogus.write_bytes(b"not a shared object")
    monkeypatch.setenv("ENEC_CUDA_LIBRARY", str(bogus))
    assert fresh._library() is None
    assert "cannot be loaded" in fresh._lib_error


def test_the_cpu_fallback_warns_once(monkeypatch):
    monkeypatch.setattr(gpu, "_warned", False)
    with pytest.warns(RuntimeWarning, match="decoding on the CPU.*because no reason"):
        gpu.warn_cpu("no reason")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpu.warn_cpu("no reason")  # said once only


def test_every_dtype_goes_to_the_gpu_loader(tmp_path, monkeypatch):
    """The GPU kernels decode every dtype's streams, FP8 among them: every tensor goes to the
    GPU loader, and the tensors come back in file order."""
    import enec._frameworks as frameworks
    import enec._open
    import enec.numpy
    import ml_dtypes
    import numpy as np

    weights = np.random.default_rng(5).normal(0.0, 0.02, size=(128, 256)).astype(np.float32)
    tensors = {
        "a.e4m3": (weights * 8000).astype(ml_dtypes.float8_e4m3fn),
        "b.bf16": weights.astype(ml_dtypes.bfloat16),
        "c.e5m2": weights.astype(ml_dtypes.float8_e5m2),
    }
    path = tmp_path / "fp8.enec"
    enec.numpy.save_file(tensors, path)
    on_gpu = []

    def fake_gpu_load(name, checkpoint, table, indices, framework, device, source, threads):
        on_gpu.extend(table[i][0] for i in indices)
        return {
            table[i][0]: frameworks.load_one(checkpoint, table, framework, i, device) for i in indices
        }

    monkeypatch.setattr(gpu, "load", fake_gpu_load)
    monkeypatch.setattr(enec._open.safe_open, "_on_gpu", lambda self: True)
    with enec.safe_open(path, framework="np") as f:
        loaded = f.get_tensors()
        order = f.offset_keys()
        assert list(loaded) == order
        assert f.get_tensor("c.e5m2").tobytes() == tensors["c.e5m2"].tobytes()
    assert sorted(order) == sorted(tensors)
    assert on_gpu == order + ["c.e5m2"]
    for name, array in tensors.items():
        assert loaded[name].tobytes() == array.tobytes(), name
