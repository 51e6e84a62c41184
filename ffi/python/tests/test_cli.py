"""enec.compress_file / decompress_file write the same bytes as the `enec` command-line tool.

The tool's path comes from $ENEC_CLI (ci.sh builds it and sets it); without it these tests are
skipped.
"""

import os
import pathlib
import subprocess

import enec
import pytest

CLI = os.environ.get("ENEC_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="ENEC_CLI (the enec tool's path) is not set")

MINILM = pathlib.Path(os.environ.get("ENEC_CORPUS", "/tmp/enec-corpus")) / "minilm.bf16.safetensors"


def cli(*args: str) -> None:
    subprocess.run([CLI, *args], check=True, capture_output=True)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"coding": "groups", "frame": 1024},
        {"coding": "auto", "frame": 65536, "checksums": False},
    ],
)
def test_compress_matches_the_cli(checkpoint, tmp_path, options):
    original, _ = checkpoint
    ours, theirs = tmp_path / "py.enec", tmp_path / "cli.enec"
    enec.compress_file(original, ours, **options)
    flags = [
        f"--coding={options.get('coding', 'ranked')}",
        f"--frame={options.get('frame', 16384)}",
    ]
    if not options.get("checksums", True):
        flags.append("--no-checksum")
    cli("compress", *flags, str(original), str(theirs))
    assert ours.read_bytes() == theirs.read_bytes()
    restored = tmp_path / "cli.safetensors"
    cli("decompress", str(ours), str(restored))
    assert restored.read_bytes() == original.read_bytes()


@pytest.mark.skipif(not MINILM.exists(), reason=f"{MINILM} is not there")
def test_compress_matches_the_cli_on_real_weights(tmp_path):
    ours, theirs = tmp_path / "py.enec", tmp_path / "cli.enec"
    enec.compress_file(MINILM, ours)
    cli("compress", str(MINILM), str(theirs))
    assert ours.read_bytes() == theirs.read_bytes()
    restored = tmp_path / "restored"
    enec.decompress_file(theirs, restored)
    assert restored.read_bytes() == MINILM.read_bytes()


def tree(root: pathlib.Path) -> dict:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def test_folders_match_the_cli(checkpoint, tmp_path):
    original, _ = checkpoint
    model = tmp_path / "model"
    (model / "tokenizer" / "empty").mkdir(parents=True)
    for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        (model / shard).write_bytes(original.read_bytes())
    (model / "model.safetensors.index.json").write_text('{"weight_map": {}}')
    (model / "tokenizer" / "tokenizer.json").write_text("{}")
    ours, theirs = tmp_path / "py", tmp_path / "cli"
    written = enec.compress_dir(model, ours, frame=1024)
    cli("compress", "--frame=1024", str(model), str(theirs))
    assert tree(ours) == tree(theirs)
    assert written == sum(len(b) for b in tree(ours).values() if b is not None)
    assert (ours / "model-00002-of-00002.safetensors.enec").exists()
    restored = tmp_path / "restored"
    enec.decompress_dir(theirs, restored, threads=1)
    assert tree(restored) == tree(model)
    with pytest.raises(enec.EnecError, match="lies inside it"):
        enec.compress_dir(model, model / "out")
    with pytest.raises(enec.EnecError, match="already an enec file"):
        enec.compress_dir(ours, tmp_path / "twice")
