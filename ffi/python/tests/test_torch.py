"""enec.torch against safetensors.torch (skipped where torch is not installed)."""

import pytest

torch = pytest.importorskip("torch")
import enec  # noqa: E402
import enec.torch  # noqa: E402
import safetensors.torch  # noqa: E402
from conftest import damaged, payload  # noqa: E402


def every_dtype() -> dict:
    g = torch.Generator().manual_seed(3)
    w = torch.randn(300, 131, generator=g) * 0.02
    ints = torch.randint(-(2**62), 2**62, (5, 7), generator=g, dtype=torch.int64)
    tensors = {
        "w.bf16": w.to(torch.bfloat16),
        "w.f16": w.to(torch.float16),
        "w.f32": w,
        "w.f64": w[:10].to(torch.float64),
        "bool": ints[0] > 0,
        "u8": ints.to(torch.uint8),
        "i8": ints.to(torch.int8),
        "i16": ints.to(torch.int16),
        "i32": ints.to(torch.int32),
        "i64": ints,
        "empty.bf16": torch.zeros(0, 4, dtype=torch.bfloat16),
        "scalar.f32": torch.tensor(1.5),
    }
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        dtype = getattr(torch, name, None)
        if dtype is not None:
            source = w[0] if name.startswith("float") else ints.abs()
            tensors[name] = source.to(dtype)
    return tensors


def raw(tensor):
    """The tensor's bytes (bit-exact comparison, whatever the dtype)."""
    return tensor.contiguous().flatten().view(torch.uint8)


def assert_same(loaded: dict, expected: dict) -> None:
    assert set(loaded) == set(expected)
    for name, tensor in expected.items():
        got = loaded[name]
        assert got.dtype == tensor.dtype and got.shape == tensor.shape, name
        assert torch.equal(raw(got), raw(tensor)), name


@pytest.fixture
def files(tmp_path):
    tensors = every_dtype()
    original = tmp_path / "model.safetensors"
    safetensors.torch.save_file(tensors, str(original), metadata={"format": "pt"})
    compressed = tmp_path / "model.enec"
    enec.compress_file(original, compressed)
    return tensors, original, compressed


def test_load_file_equals_safetensors(files):
    tensors, original, compressed = files
    loaded = enec.torch.load_file(compressed)
    assert_same(loaded, safetensors.torch.load_file(str(original)))
    assert_same(loaded, tensors)
    assert_same(enec.torch.load(compressed.read_bytes()), tensors)


def test_save_file_writes_what_safetensors_writes(tmp_path):
    tensors = every_dtype()
    path = tmp_path / "saved.enec"
    enec.torch.save_file(tensors, path, metadata={"format": "pt"})
    restored = tmp_path / "restored.safetensors"
    enec.decompress_file(path, restored)
    assert restored.read_bytes() == safetensors.torch.save(tensors, metadata={"format": "pt"})


def test_save_file_writes_what_compressing_the_safetensors_file_writes(tmp_path):
    tensors = every_dtype()
    tensors["w.part"] = torch.arange(20.0)[3:8]  # a view of part of a storage
    tensors["empty.f16"] = torch.zeros(3, 0, dtype=torch.float16)
    for metadata in ({"format": "pt"}, None):
        expected, path = tmp_path / "expected.enec", tmp_path / "saved.enec"
        data = safetensors.torch.save(tensors, metadata=metadata)
        enec._enec.compress_bytes(data, expected, frame=4096)
        enec.torch.save_file(tensors, path, metadata=metadata, frame=4096)
        assert path.read_bytes() == expected.read_bytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda w: {"w": w, "row": w[1]},  # sharing memory
        lambda w: {"t": w.t()},  # not contiguous
        lambda w: {"s": w.to_sparse()},
        lambda w: {"n": 3},
        lambda w: [w],
    ],
    ids=["shared", "strided", "sparse", "not-a-tensor", "not-a-dict"],
)
def test_save_file_refuses_what_safetensors_refuses(tmp_path, make):
    tensors = make(torch.randn(4, 4))
    with pytest.raises(Exception) as theirs:
        safetensors.torch.save(tensors)
    with pytest.raises(type(theirs.value)):
        enec.torch.save_file(tensors, tmp_path / "x.enec")
    assert list(tmp_path.iterdir()) == []


def test_a_save_failing_midway_keeps_the_old_file(tmp_path):
    """A meta tensor has no bytes to write: the error comes after "a" is written."""
    path = tmp_path / "model.enec"
    enec.torch.save_file({"a": torch.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises((NotImplementedError, RuntimeError)):
        enec.torch.save_file({"a": torch.zeros(3), "b": torch.zeros(3, device="meta")}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.enec"]


def test_loaded_tensors_have_storage_of_their_own(files, tmp_path):
    tensors, _, compressed = files
    with enec.safe_open(compressed, framework="pt") as f:
        loaded = [f.get_tensors(), {name: f.get_tensor(name) for name in f.keys()}]
    loaded += [enec.torch.load_file(compressed), enec.torch.load(compressed.read_bytes())]
    for got in loaded:
        assert_same(got, tensors)
        for name, tensor in got.items():
            nbytes = tensor.numel() * tensor.element_size()
            assert tensor.untyped_storage().nbytes() == nbytes, name
            assert tensor.storage_offset() == 0 and tensor.is_contiguous(), name
    # torch.save of one small tensor writes its bytes, not the file's.
    small = loaded[2]["w.f64"]
    torch.save(small, tmp_path / "small.pt")
    assert (tmp_path / "small.pt").stat().st_size < small.numel() * 8 + 2048
    assert small.numel() * 8 + 2048 < compressed.stat().st_size  # the file is large enough


def test_safe_open_reads_one_tensor(files, tmp_path):
    tensors, _, compressed = files
    offset, length = payload(compressed, "w.f16")
    bad = damaged(compressed, offset + length // 2, tmp_path / "bad.enec")
    with enec.safe_open(bad, framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        assert torch.equal(f.get_tensor("w.bf16"), tensors["w.bf16"])
        assert torch.equal(f.get_slice("w.f32")[1:3], tensors["w.f32"][1:3])
        with pytest.raises(enec.EnecError, match='tensor "w.f16".*frame'):
            f.get_tensor("w.f16")


def test_misaligned_tensors_load(tmp_path):
    """A float tensor at an odd offset of the data (safetensors allows it) loads all the same."""
    header = b'{"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},'
    header += b'"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}'
    header += b" " * (-len(header) % 8)
    values = torch.tensor([1.5, -2.0])
    data = len(header).to_bytes(8, "little") + header + b"\x07" + values.numpy().tobytes()
    original = tmp_path / "odd.safetensors"
    original.write_bytes(data)
    compressed = tmp_path / "odd.enec"
    enec.compress_file(original, compressed)
    loaded = enec.torch.load_file(compressed)
    assert loaded["a"].tolist() == [7]
    assert torch.equal(loaded["b"], values)


def test_empty_tensors_load_alone_and_sliced(tmp_path):
    tensors = {
        "f32": torch.zeros(0, dtype=torch.float32),
        "bf16": torch.zeros(2, 0, 3, dtype=torch.bfloat16),
        "i64": torch.zeros(0, 5, dtype=torch.int64),
    }
    original = tmp_path / "empty.safetensors"
    safetensors.torch.save_file(tensors, str(original))
    compressed = tmp_path / "empty.enec"
    enec.compress_file(original, compressed)
    with enec.safe_open(compressed, framework="pt") as f:
        for name, tensor in tensors.items():
            for got in (f.get_tensor(name), f.get_slice(name)[:]):
                assert got.dtype == tensor.dtype and got.shape == tensor.shape, name
    assert_same(enec.torch.load_file(compressed), tensors)


def test_framework_and_device_are_checked_on_opening(files):
    tensors, _, compressed = files
    for name in ("pt", "torch", "pytorch"):
        with enec.safe_open(compressed, framework=name) as f:
            assert torch.equal(f.get_tensor("i64"), tensors["i64"])
    with enec.safe_open(compressed, framework="pt", device=torch.device("cpu")) as f:
        assert f.get_tensor("i64").device.type == "cpu"
    for device, why in (("meta", "meta"), ("cdua", "cdua"), ("cuda:x", "cuda:x")):
        with pytest.raises(ValueError, match=why):
            enec.safe_open(compressed, framework="pt", device=device)
        with pytest.raises(ValueError, match=why):
            enec.torch.load_file(compressed, device=device)


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
def test_cuda_load_decodes_on_the_gpu(files, recwarn):
    import enec._gpu

    tensors, original, compressed = files
    tensors[""] = tensors["w.bf16"][:2].clone()  # a tensor named "" too
    safetensors.torch.save_file(tensors, str(original))
    enec.compress_file(original, compressed)
    assert enec._gpu.unusable(torch.device("cuda")) is None
    for device in ("cuda", "cuda:0", torch.device("cuda", 0)):
        loaded = enec.torch.load_file(compressed, device=device)
        assert all(t.device.type == "cuda" for t in loaded.values())
        assert_same({k: v.cpu() for k, v in loaded.items()}, tensors)
    assert_same({k: v.cpu() for k, v in enec.torch.load(compressed.read_bytes(), device="cuda").items()}, tensors)
    with enec.safe_open(compressed, framework="pt", device="cuda") as f:
        for name, tensor in tensors.items():
            got = f.get_tensor(name)
            assert got.device.type == "cuda" and torch.equal(raw(got.cpu()), raw(tensor)), name
    assert not [w for w in recwarn if "enec" in str(w.message)]


@cuda
def test_cuda_load_names_a_damaged_tensor(files, tmp_path):
    _, _, compressed = files
    offset, length = payload(compressed, "w.f32")
    bad = damaged(compressed, offset + length // 2, tmp_path / "bad.enec")
    with pytest.raises(enec.EnecError, match='tensor "w.f32"'):
        enec.torch.load_file(bad, device="cuda")
    with pytest.raises(enec.EnecError, match='tensor "w.f32"'):
        enec.torch.load(bad.read_bytes(), device="cuda")
