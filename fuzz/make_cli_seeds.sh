#!/usr/bin/env bash
# Makes the seeds that come from the `enec` command itself: for each dtype (bf16, fp16, fp32)
# and coding (ranked, groups, auto), a small safetensors checkpoint of real MiniLM weights
# (tests/data/) with an int64 tensor and metadata, compressed by `enec compress` into
# fuzz/seeds/container/cli-DTYPE-CODING, and the raw array of its first tensor compressed with
# `--dtype` into fuzz/seeds/streams/cli-DTYPE-CODING; and fuzz/seeds/container/cli-runs, a
# checkpoint whose tiny tensors are kept in a run of verbatim bytes. Frames of 1,024 elements, so every seed
# has a full frame and a partial one and stays a few KB. Deterministic; run
# `cargo run --release --manifest-path fuzz/Cargo.toml --example make_seeds` afterwards (it
# prefixes the containers for the targets that take them).
#
#   bash fuzz/make_cli_seeds.sh     # builds the enec command (feature cli) if needed
set -euo pipefail
cd "$(dirname "$0")/.."
nice -n 10 cargo build --release --features cli --bin enec
enec=target/release/enec
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for dtype in bf16 fp16 fp32; do
    python3 - "$dtype" "$work" <<'PY'
import json, struct, sys
dtype, work = sys.argv[1], sys.argv[2]
raw = open("tests/data/minilm-slice.f32.bin", "rb").read()
values = struct.unpack("<%df" % (len(raw) // 4), raw)

def bf16(v):  # round to nearest even, as half::bf16::from_f32
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    b += 0x7FFF + ((b >> 16) & 1)
    return struct.pack("<H", (b >> 16) & 0xFFFF)

def enc(vs):
    if dtype == "bf16":
        return b"".join(bf16(v) for v in vs)
    if dtype == "fp16":
        return struct.pack("<%de" % len(vs), *vs)
    return struct.pack("<%df" % len(vs), *vs)

st = {"bf16": "BF16", "fp16": "F16", "fp32": "F32"}[dtype]
# 1,500 elements (a frame of 1,024 and a partial one), a small tensor, int64 ids.
tensors = [
    ("embeddings.word_embeddings.weight", st, [15, 100], enc(values[:1500])),
    ("encoder.layer.0.attention.output.LayerNorm.bias", st, [300], enc(values[196608:196908])),
    ("position_ids", "I64", [1, 8], struct.pack("<8q", *range(8))),
]
header, body, at = {"__metadata__": {"format": "pt"}}, b"", 0
for name, dt, shape, data in tensors:
    header[name] = {"dtype": dt, "shape": shape, "data_offsets": [at, at + len(data)]}
    body += data
    at += len(data)
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(f"{work}/{dtype}.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + body)
open(f"{work}/{dtype}.bin", "wb").write(tensors[0][3])
PY
    for coding in ranked groups auto; do
        "$enec" compress --quiet --force --threads 1 --frame 1024 --coding "$coding" \
            "$work/$dtype.safetensors" "fuzz/seeds/container/cli-$dtype-$coding"
        "$enec" compress --quiet --force --threads 1 --frame 1024 --coding "$coding" \
            --dtype "$dtype" "$work/$dtype.bin" "fuzz/seeds/streams/cli-$dtype-$coding"
    done
done
# Tiny tensors kept in a run of verbatim bytes between two enec pieces (FORMAT.md 9.6), with a
# name and a dtype name written with JSON escapes, and an empty tensor.
python3 - "$work" <<'PY'
import struct, sys
raw = open("tests/data/minilm-slice.f32.bin", "rb").read()
big = b"".join(raw[4 * i + 2:4 * i + 4] for i in range(1500))  # bf16 by truncation
tensors = [("big", "BF16", [1500], big)]
tensors += [("t%d" % i, "I32", [1], struct.pack("<i", i)) for i in range(60)]
tensors += [("caf\\u00e9\\/x", "F\\u0033\\u0032", [1, 1], bytes([1, 2, 3, 4]))]
tensors += [("empty", "F32", [0, 3], b""), ("big2", "BF16", [1500], big)]
members, body = ['"__metadata__":{"format":"pt"}'], b""
for key, dtype, shape, data in tensors:
    dims = ",".join(map(str, shape))
    members.append('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'
                   % (key, dtype, dims, len(body), len(body) + len(data)))
    body += data
h = ("{" + ",".join(members) + "}").encode()
open(sys.argv[1] + "/runs.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + body)
PY
"$enec" compress --quiet --force --threads 1 --frame 1024 "$work/runs.safetensors" \
    fuzz/seeds/container/cli-runs
ls -l fuzz/seeds/container/cli-* fuzz/seeds/streams/cli-*
