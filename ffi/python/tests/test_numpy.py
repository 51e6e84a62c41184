"""enec.numpy and the conversions, against safetensors itself."""

import importlib.metadata
import pathlib
import pickle
import sys

import enec
import enec.numpy
import ml_dtypes  # noqa: F401  (safetensors.numpy reads BF16 through it)
import numpy as np
import pytest
import safetensors.numpy
from conftest import METADATA, damaged, every_dtype, payload


def assert_same(loaded: dict, expected: dict) -> None:
    assert set(loaded) == set(expected)
    for name, array in expected.items():
        got = loaded[name]
        assert got.dtype == array.dtype, name
        assert got.shape == array.shape, name
        assert got.tobytes() == array.tobytes(), name


def test_every_dtype_round_trips_like_safetensors(checkpoint):
    original, compressed = checkpoint
    assert compressed.stat().st_size < original.stat().st_size
    loaded = enec.numpy.load_file(compressed)
    assert_same(loaded, every_dtype())
    # safetensors.numpy reads every dtype but float8 (it looks those up in numpy itself).
    with safetensors.safe_open(str(original), framework="np") as f:
        reference = {k: f.get_tensor(k) for k in f.keys() if not k.startswith("f8")}
    assert_same({k: loaded[k] for k in reference}, reference)
    assert all(a.flags.writeable and a.flags.c_contiguous for a in loaded.values())


def test_fp8_tensors_are_compressed(tmp_path):
    """F8_E4M3 and F8_E5M2 tensors are enec streams, smaller than their bytes, and load back."""
    rng = np.random.default_rng(11)
    weights = rng.normal(0.0, 0.02, size=(256, 320)).astype(np.float32)
    scaled = weights / (np.abs(weights).max() / 448)
    tensors = {
        "w.e4m3": scaled.astype(ml_dtypes.float8_e4m3fn),
        "w.e5m2": weights.astype(ml_dtypes.float8_e5m2),
    }
    compressed = tmp_path / "fp8.enec"
    enec.numpy.save_file(tensors, compressed)
    for name, array in tensors.items():
        _, stored = payload(compressed, name)
        assert stored < 0.9 * array.nbytes, name
    assert_same(enec.numpy.load_file(compressed), tensors)


def test_decompress_restores_the_file_byte_for_byte(checkpoint, tmp_path):
    original, compressed = checkpoint
    restored = tmp_path / "restored.safetensors"
    assert enec.decompress_file(compressed, restored) == original.stat().st_size
    assert restored.read_bytes() == original.read_bytes()


@pytest.mark.parametrize("coding", ["ranked", "groups", "auto"])
@pytest.mark.parametrize("frame", [1024, 65536])
def test_options_round_trip(checkpoint, tmp_path, coding, frame):
    original, _ = checkpoint
    compressed = tmp_path / "opt.enec"
    enec.compress_file(
        original, compressed, coding=coding, frame=frame, checksums=frame == 1024, threads=1
    )
    assert_same(enec.numpy.load_file(compressed, threads=2), every_dtype())


def test_bad_options_raise_value_error(checkpoint, tmp_path):
    original, _ = checkpoint
    with pytest.raises(ValueError, match="coding"):
        enec.compress_file(original, tmp_path / "x.enec", coding="zip")
    with pytest.raises(ValueError, match="frame=1000"):
        enec.compress_file(original, tmp_path / "x.enec", frame=1000)


def test_load_from_bytes(checkpoint):
    _, compressed = checkpoint
    assert_same(enec.numpy.load(compressed.read_bytes()), every_dtype())


def test_save_file_writes_what_safetensors_writes(tmp_path):
    tensors = every_dtype()
    path = tmp_path / "saved.enec"
    metadata = {"format": "np"}  # one key: safetensors orders several at random
    enec.numpy.save_file(tensors, path, metadata=metadata, frame=4096)
    restored = tmp_path / "restored.safetensors"
    enec.decompress_file(path, restored)
    assert restored.read_bytes() == safetensors.numpy.save(tensors, metadata=metadata)


def compress_bytes_of_save(tensors, path, metadata, **options):
    """What ``enec.numpy.save_file`` wrote when it built the safetensors file in memory."""
    enec._enec.compress_bytes(safetensors.numpy.save(tensors, metadata=metadata), path, **options)


@pytest.mark.parametrize(
    "tensors, metadata",
    [
        (every_dtype(), {"format": "np"}),
        (every_dtype(), None),
        (every_dtype(), {}),
        (
            {  # empty tensors of several dtypes at one offset; names JSON escapes
                "b": np.zeros(0, np.float32),
                "a": np.zeros((0, 3), ml_dtypes.bfloat16),
                'c"\\\n\t\x01\u00fc': np.ones(3, np.int64),
                "": np.zeros(0, np.int8),
            },
            {'k"\x7f': "v\u2028\u00e9"},
        ),
        ({}, None),
        ({"be": np.arange(6, dtype=">f4").reshape(2, 3), "i16": np.arange(4, dtype="<i2")}, None),
    ],
    ids=["every-dtype", "no-metadata", "empty-metadata", "escapes", "nothing", "big-endian"],
)
@pytest.mark.parametrize("options", [{}, {"frame": 4096, "coding": "groups", "checksums": False}])
def test_save_file_writes_what_compressing_the_safetensors_file_writes(
    tmp_path, tensors, metadata, options
):
    expected, path = tmp_path / "expected.enec", tmp_path / "saved.enec"
    compress_bytes_of_save(tensors, expected, metadata, **options)
    enec.numpy.save_file(tensors, path, metadata=metadata, **options)
    assert path.read_bytes() == expected.read_bytes()


def test_thousands_of_scalars_do_not_grow_the_file(tmp_path):
    """Tensors too small for an index entry lie in one run of verbatim bytes: the checkpoint is
    at most 1 % plus 4 KiB larger than the file, and every tensor still loads by name."""
    tensors = {}
    for i in range(3000):
        dtype = [np.float32, ml_dtypes.bfloat16, np.int64][i % 3]
        tensors[f"model.layers.{i}.scale"] = np.array([i * 0.37], dtype=dtype)
    original = tmp_path / "scalars.safetensors"
    safetensors.numpy.save_file(tensors, str(original))
    compressed = tmp_path / "scalars.enec"
    enec.compress_file(original, compressed)
    size, bound = compressed.stat().st_size, original.stat().st_size * 1.01 + 4096
    assert size <= bound, f"{original.stat().st_size} bytes grew to {size}"
    saved = tmp_path / "saved.enec"
    enec.numpy.save_file(tensors, saved)
    assert saved.read_bytes() == compressed.read_bytes()
    assert_same(enec.numpy.load_file(compressed), tensors)
    with enec.safe_open(compressed, framework="np") as f:
        assert f.get_tensor("model.layers.7.scale").tobytes() == tensors["model.layers.7.scale"].tobytes()
    enec.decompress_file(compressed, tmp_path / "restored")
    assert (tmp_path / "restored").read_bytes() == original.read_bytes()


def test_save_file_saves_strided_arrays_as_their_contiguous_copies(tmp_path):
    w = np.arange(24, dtype=np.float32).reshape(4, 6)
    enec.numpy.save_file({"t": w.T, "s": w[:, ::2]}, tmp_path / "strided.enec")
    enec.numpy.save_file({"t": w.T.copy(), "s": w[:, ::2].copy()}, tmp_path / "copied.enec")
    assert (tmp_path / "strided.enec").read_bytes() == (tmp_path / "copied.enec").read_bytes()
    loaded = enec.numpy.load_file(tmp_path / "strided.enec")
    assert (loaded["t"] == w.T).all() and (loaded["s"] == w[:, ::2]).all()


def test_save_file_refuses_what_safetensors_refuses_and_leaves_no_file(tmp_path):
    path = tmp_path / "bad.enec"
    with pytest.raises(ValueError, match="expected numpy.ndarray"):
        enec.numpy.save_file({"a": [1.0, 2.0]}, path)
    with pytest.raises(ValueError, match="dtype complex128 cannot be saved"):
        enec.numpy.save_file({"z": np.zeros(2, np.complex128)}, path)
    with pytest.raises(TypeError):
        enec.numpy.save_file({"a": np.zeros(2)}, path, metadata={"n": 1})
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_keeps_the_old_file_and_leaves_no_other(tmp_path, monkeypatch):
    """A failure after some tensors are written: the file written before is still there, whole."""
    path = tmp_path / "model.enec"
    tensors = every_dtype()
    enec.numpy.save_file(tensors, path)
    before = path.read_bytes()
    framework = enec._frameworks.numpy_framework
    calls = []

    def failing():
        f = framework()
        contents = f.contents

        def fail_third(array):
            calls.append(array)
            if len(calls) == 3:
                raise MemoryError("no room for this tensor")
            return contents(array)

        f.contents = fail_third
        return f

    monkeypatch.setattr(enec._frameworks, "numpy_framework", failing)
    with pytest.raises(MemoryError):
        enec.numpy.save_file(dict(tensors, extra=np.ones(3)), path)
    assert len(calls) == 3
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.enec"]


def peak_rss_reset() -> bool:
    """Resets the peak resident size the kernel reports (VmHWM) to the current one."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def test_save_file_holds_one_tensor_at_a_time(tmp_path):
    """256 MiB of bf16 weights in 8 tensors: saving them takes about one tensor's stream of
    memory more (it took twice the model when the safetensors file was built in memory)."""
    rng = np.random.default_rng(11)
    base = (np.frombuffer(rng.bytes(32 << 20), np.uint16) & np.uint16(0x80FF)) | np.uint16(0x3C00)
    tensors = {
        f"layers.{i}.weight": (base ^ np.uint16(i)).view(ml_dtypes.bfloat16).reshape(4096, -1)
        for i in range(8)
    }
    del base
    model = sum(a.nbytes for a in tensors.values())
    import gc
    import tracemalloc

    gc.collect()
    measured = sys.platform == "linux" and peak_rss_reset()
    before = status_bytes("VmRSS") if measured else 0
    tracemalloc.start()
    try:
        enec.numpy.save_file(tensors, tmp_path / "model.enec")
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Python objects: no copy of the model (the old way held the whole file as bytes).
    assert traced < model / 16, f"{traced / 2**20:.1f} MiB traced"
    if measured:
        grown = status_bytes("VmHWM") - before
        # One 32 MiB tensor's stream and buffers; the old way grew by twice the model.
        assert grown < model * 0.3, f"peak grew by {grown / 2**20:.1f} MiB"
    restored = enec.numpy.load_file(tmp_path / "model.enec")
    assert all(restored[k].tobytes() == a.tobytes() for k, a in tensors.items())


def own_memory(array: np.ndarray) -> int:
    """The bytes of the allocation an array is a view of (its own, when it has one of its own)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array.nbytes if array.base is None else memoryview(array.base).nbytes


def test_loaded_arrays_have_memory_of_their_own(checkpoint):
    _, compressed = checkpoint
    with enec.safe_open(compressed, framework="np") as f:
        loaded = [f.get_tensors(), {name: f.get_tensor(name) for name in f.keys()}]
    loaded += [enec.numpy.load_file(compressed), enec.numpy.load(compressed.read_bytes())]
    for arrays in loaded:
        assert_same(arrays, every_dtype())
        for name, array in arrays.items():
            assert own_memory(array) == array.nbytes, name
            assert array.flags.writeable and array.flags.c_contiguous, name


def owner(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def test_a_kept_array_keeps_only_its_own_memory(tmp_path):
    """Dropping the dict but one small array gives the rest back (they were views of one
    buffer the size of the file, all kept alive by any one of them)."""
    import gc
    import weakref

    rng = np.random.default_rng(3)
    weights = (np.frombuffer(rng.bytes(40 << 20), np.uint16) & np.uint16(0x80FF)) | np.uint16(0x3C00)
    tensors = {f"w{i}": (weights ^ np.uint16(i)).view(ml_dtypes.bfloat16) for i in range(2)}
    tensors["bias"] = np.ones(384, np.float32)
    del weights
    path = tmp_path / "model.enec"
    enec.numpy.save_file(tensors, path)
    large = tensors["w0"].nbytes + tensors["w1"].nbytes
    del tensors
    gc.collect()
    linux = sys.platform == "linux"
    loaded = enec.numpy.load_file(path)
    rss = status_bytes("VmRSS") if linux else 0
    owners = [weakref.ref(owner(loaded[name])) for name in ("w0", "w1")]
    bias = loaded["bias"]
    del loaded
    gc.collect()
    assert all(o() is None for o in owners)
    if linux:  # allocations this large are mapped for themselves, and unmapped when freed
        assert rss - status_bytes("VmRSS") > large * 0.9
    assert bias.tolist() == [1.0] * 384


def test_safe_open(checkpoint):
    _, compressed = checkpoint
    expected = every_dtype()
    with enec.safe_open(compressed, framework="np") as f:
        assert f.keys() == sorted(expected)
        assert f.metadata() == METADATA
        assert f.get_tensor("w.f16").tobytes() == expected["w.f16"].tobytes()
        piece = f.get_slice("w.bf16")
        assert piece.get_shape() == [300, 131]
        assert piece.get_dtype() == "BF16"
        assert piece[10:12, 3].tobytes() == expected["w.bf16"][10:12, 3].tobytes()
        with pytest.raises(KeyError, match="nope"):
            f.get_tensor("nope")
    with pytest.raises(ValueError, match="closed"):
        f.get_tensor("w.f16")
    with pytest.raises(ValueError, match="cpu"):
        enec.safe_open(compressed, framework="np", device="cuda")


def test_safe_open_decodes_only_the_tensor_asked_for(checkpoint, tmp_path):
    """A damaged tensor does not stop reading the others, which proves they are not decoded."""
    _, compressed = checkpoint
    offset, length = payload(compressed, "w.f32")
    bad = damaged(compressed, offset + length // 2, tmp_path / "bad.enec")
    with enec.safe_open(bad, framework="np") as f:
        assert f.get_tensor("w.bf16").tobytes() == every_dtype()["w.bf16"].tobytes()
        with pytest.raises(enec.EnecError, match='tensor "w.f32".*frame'):
            f.get_tensor("w.f32")
    with pytest.raises(enec.EnecError, match='tensor "w.f32"'):
        enec.numpy.load_file(bad)


def test_damaged_verbatim_tensor_is_named(checkpoint, tmp_path):
    _, compressed = checkpoint
    offset, _ = payload(compressed, "ids.i64")
    bad = damaged(compressed, offset, tmp_path / "bad.enec")
    with pytest.raises(enec.EnecError, match='tensor "ids.i64": checksum mismatch'):
        enec.numpy.load_file(bad)
    with pytest.raises(enec.EnecError, match='tensor "ids.i64"'):
        enec.decompress_file(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_damaged_small_tensor_fails_its_run(checkpoint, tmp_path):
    """A small tensor lies in a run of verbatim bytes: damage there fails the run's checksum."""
    _, compressed = checkpoint
    offset, _ = payload(compressed, "i64")
    bad = damaged(compressed, offset, tmp_path / "bad.enec")
    with pytest.raises(enec.EnecError, match="checksum mismatch in the verbatim bytes"):
        enec.numpy.load_file(bad)
    with pytest.raises(enec.EnecError, match="checksum mismatch in the verbatim bytes"):
        enec.decompress_file(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keep", [0, 7, 100, -1, -33])
def test_truncated_files_raise(checkpoint, tmp_path, keep):
    _, compressed = checkpoint
    data = compressed.read_bytes()
    short = tmp_path / "short.enec"
    short.write_bytes(data[:keep])
    with pytest.raises(enec.EnecError, match="short.enec: .*(truncated|footer|empty|not an enec)"):
        enec.numpy.load_file(short)
    with pytest.raises(enec.EnecError):
        enec.decompress_file(short, tmp_path / "out")


def test_damaged_index_raises(checkpoint, tmp_path):
    _, compressed = checkpoint
    size = compressed.stat().st_size
    bad = damaged(compressed, size - 40, tmp_path / "bad.enec")
    with pytest.raises(enec.EnecError, match="index|footer|padding"):
        enec.numpy.load_file(bad)


def test_what_is_not_enec_or_safetensors_is_refused(checkpoint, tmp_path):
    original, compressed = checkpoint
    with pytest.raises(enec.EnecError, match="it is a safetensors file"):
        enec.numpy.load_file(original)
    with pytest.raises(enec.EnecError, match="already an enec file"):
        enec.compress_file(compressed, tmp_path / "again.enec")
    text = tmp_path / "notes.txt"
    text.write_text("hello world, not a checkpoint")
    with pytest.raises(enec.EnecError, match="not a safetensors file"):
        enec.compress_file(text, tmp_path / "x.enec")
    with pytest.raises(FileNotFoundError):
        enec.numpy.load_file(tmp_path / "missing.enec")


def test_bf16_without_ml_dtypes_says_how_to_get_it(checkpoint, monkeypatch):
    _, compressed = checkpoint
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with enec.safe_open(compressed, framework="np") as f:
        assert f.get_tensor("w.f32").dtype == np.float32
        with pytest.raises(ImportError, match="pip install ml_dtypes"):
            f.get_tensor("w.bf16")


def test_decompresses_bare_streams_to_their_arrays(tmp_path):
    """The golden streams (as `enec compress --dtype` writes them) restore their arrays."""
    golden = pathlib.Path(__file__).resolve().parents[3] / "tests" / "golden" / "v1"
    pairs = [(p, p.with_suffix(".bin")) for p in sorted(golden.glob("*.enec"))]
    assert pairs, f"no golden streams in {golden}"
    for stream, array in pairs:
        out = tmp_path / array.name
        assert enec.decompress_file(stream, out) == array.stat().st_size
        assert out.read_bytes() == array.read_bytes(), stream.name


def test_a_dtype_without_numpy_equivalent_is_named(tmp_path):
    """A tensor of a dtype numpy lacks is kept verbatim, restored byte for byte, and named in
    the error when loaded; the others still load."""
    header = b'{"odd":{"dtype":"F4","shape":[4],"data_offsets":[0,2]},'
    header += b'"w":{"dtype":"F32","shape":[2],"data_offsets":[2,10]}}'
    header += b" " * (-len(header) % 8)
    data = len(header).to_bytes(8, "little") + header + b"\x12\x34" + np.ones(2, "<f4").tobytes()
    original = tmp_path / "odd.safetensors"
    original.write_bytes(data)
    compressed = tmp_path / "odd.enec"
    enec.compress_file(original, compressed)
    enec.decompress_file(compressed, tmp_path / "restored")
    assert (tmp_path / "restored").read_bytes() == data
    with enec.safe_open(compressed, framework="np") as f:
        assert f.get_tensor("w").tolist() == [1.0, 1.0]
        with pytest.raises(enec.EnecError, match="tensor \"odd\": dtype 'F4' has no numpy"):
            f.get_tensor("odd")


def test_failed_conversions_leave_no_file(checkpoint, tmp_path):
    original, compressed = checkpoint
    before = sorted(tmp_path.iterdir())
    with pytest.raises(enec.EnecError):
        enec.compress_file(compressed, tmp_path / "again.enec")  # already compressed
    with pytest.raises(enec.EnecError):
        enec.decompress_file(original, tmp_path / "restored")  # not compressed
    assert sorted(tmp_path.iterdir()) == before
    with pytest.raises(FileNotFoundError):
        enec.compress_file(original, tmp_path / "no such folder" / "x.enec")


@pytest.mark.parametrize(
    "array",
    [
        np.linspace(-1, 1, 3000, dtype=np.float32).astype(ml_dtypes.bfloat16),  # an enec piece
        np.arange(-3, 5, dtype=np.int64).reshape(2, 4),  # a verbatim piece
    ],
    ids=["bf16", "i64"],
)
def test_a_tensor_named_empty_loads(tmp_path, array):
    """safetensors allows the name "": that tensor is loaded like any other."""
    tensors = {"": array, "after": np.ones(3, np.float32)}
    original = tmp_path / "empty-name.safetensors"
    safetensors.numpy.save_file(tensors, str(original))
    compressed = tmp_path / "empty-name.enec"
    enec.compress_file(original, compressed)
    assert_same(enec.numpy.load_file(compressed), tensors)
    assert_same(enec.numpy.load(compressed.read_bytes()), tensors)
    with enec.safe_open(compressed, framework="np") as f:
        assert f.keys() == ["", "after"]
        assert f.get_tensor("").tobytes() == array.tobytes()
        assert f.get_slice("").get_shape() == list(array.shape)
    enec.decompress_file(compressed, tmp_path / "restored")
    assert (tmp_path / "restored").read_bytes() == original.read_bytes()


def test_empty_tensors_load_alone_and_sliced(checkpoint):
    _, compressed = checkpoint
    with enec.safe_open(compressed, framework="np") as f:
        for tensor in (f.get_tensor("empty.bf16"), f.get_slice("empty.bf16")[:]):
            assert tensor.dtype == ml_dtypes.bfloat16 and tensor.shape == (0, 4)


def test_errors_survive_pickling(tmp_path):
    """An error raised in a worker process reaches its parent with its type and message."""
    bad = tmp_path / "bad.enec"
    bad.write_bytes(b"not an enec file")
    with pytest.raises(enec.EnecError) as raised:
        enec.numpy.load_file(bad)
    assert enec.EnecError.__module__ == "enec"
    again = pickle.loads(pickle.dumps(raised.value))
    assert type(again) is enec.EnecError and str(again) == str(raised.value)


def repeated_name_file(path: pathlib.Path) -> bytes:
    """A safetensors file that names tensor "w" twice (as no safetensors writer would)."""
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
    header += b'"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    header += b" " * (-len(header) % 8)
    data = len(header).to_bytes(8, "little") + header + np.array([1, 2], "<f4").tobytes()
    path.write_bytes(data)
    return data


def test_repeated_tensor_names_are_refused_but_restored(tmp_path):
    original = tmp_path / "twice.safetensors"
    data = repeated_name_file(original)
    compressed = tmp_path / "twice.enec"
    enec.compress_file(original, compressed)
    for load in (
        lambda: enec.numpy.load_file(compressed),
        lambda: enec.numpy.load(compressed.read_bytes()),
        lambda: enec.safe_open(compressed, framework="np"),
    ):
        with pytest.raises(enec.EnecError, match='two tensors are named "w"'):
            load()
    enec.decompress_file(compressed, tmp_path / "restored")
    assert (tmp_path / "restored").read_bytes() == data


def test_bad_threads_raise_value_error(checkpoint, tmp_path):
    original, compressed = checkpoint
    for threads in (-1, 0, 2**80):
        for call in (
            lambda: enec.numpy.load_file(compressed, threads=threads),
            lambda: enec.numpy.load(compressed.read_bytes(), threads=threads),
            lambda: enec.safe_open(compressed, framework="np", threads=threads),
            lambda: enec.compress_file(original, tmp_path / "x.enec", threads=threads),
            lambda: enec.decompress_file(compressed, tmp_path / "x", threads=threads),
        ):
            with pytest.raises(ValueError, match="threads"):
                call()


def test_a_directory_is_named_as_such(tmp_path):
    for call in (
        lambda: enec.numpy.load_file(tmp_path),
        lambda: enec.safe_open(tmp_path, framework="np"),
        lambda: enec.compress_file(tmp_path, tmp_path / "x.enec"),
        lambda: enec.decompress_file(tmp_path, tmp_path / "x"),
    ):
        with pytest.raises(IsADirectoryError, match="is a directory"):
            call()


def test_version_is_the_installed_one():
    assert enec.__version__ == importlib.metadata.version("enec")


def test_framework_names_as_in_safetensors(checkpoint):
    _, compressed = checkpoint
    for name in ("np", "numpy"):
        with enec.safe_open(compressed, framework=name) as f:
            assert f.get_tensor("i64").dtype == np.int64
    with pytest.raises(ValueError, match="framework 'tf'"):
        enec.safe_open(compressed, framework="tf")


def test_empty_tensors_outside_every_verbatim_run_are_listed(tmp_path):
    # Zero-length tensors between enec pieces lie in no run of verbatim bytes: each still loads.
    rng = np.random.default_rng(5)
    big = rng.normal(0.0, 0.02, size=20000).astype(np.float32)
    tensors = {
        "a": big,
        "empty.f32": np.zeros(0, dtype=np.float32),
        "empty.bf16": np.zeros((2, 0, 3), dtype=ml_dtypes.bfloat16),
        "z": big[::-1].copy(),
    }
    original = tmp_path / "empty.safetensors"
    safetensors.numpy.save_file(tensors, original)
    compressed = tmp_path / "empty.enec"
    enec.compress_file(original, compressed)
    loaded = enec.numpy.load_file(compressed)
    assert sorted(loaded) == sorted(tensors)
    for name, array in tensors.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape, name
    only_empty = {k: v for k, v in tensors.items() if k.startswith("empty")}
    safetensors.numpy.save_file(only_empty, original)
    enec.compress_file(original, compressed)
    with enec.safe_open(compressed, framework="np") as f:
        assert sorted(f.keys()) == sorted(only_empty)
        assert f.get_tensor("empty.bf16").shape == (2, 0, 3)
