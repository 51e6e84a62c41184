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
