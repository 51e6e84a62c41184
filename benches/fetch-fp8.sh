#!/usr/bin/env bash
# FP8 corpora derived from the real MiniLM weights (benches/fetch-minilm.sh): the fp32 tensors
# quantized to OCP FP8. This is post-training quantization of a model trained in fp32, not a
# natively trained FP8 model; it stands in for FP8 checkpoints such as DeepSeek-V3's.
#
# usage: bash benches/fetch-fp8.sh [DIR]   DIR defaults to $ENEC_CORPUS, else /tmp/enec-corpus
# needs: what fetch-minilm.sh needs. Idempotent; the output is the same bytes on every machine.
#
# Quantization, per float tensor x (fp32), in float64 arithmetic:
#   scale = float32(amax / FMAX), amax the largest |x| of the block (1.0 when amax is 0);
#   q = round-to-nearest-even(x / scale) to the FP8 grid (subnormals kept; |x / scale| <= FMAX,
#   so nothing saturates), stored as the FP8 byte; the reader gets x ~ q * scale.
#   e4m3: OCP float8 e4m3fn (bias 7, FMAX 448, no infinities); e5m2: bias 15, FMAX 57344.
# Blocks: "per-tensor" is one block per tensor; "block" is DeepSeek-V3's 128x128 tiles of a 2-D
# tensor (a 1-D tensor is one row of 1x128 tiles), its scales an F32 tensor `NAME_scale_inv` of
# shape [ceil(rows/128), ceil(cols/128)] (1-D: [ceil(n/128)]). Per-tensor scales are F32 scalars
# `NAME_scale`.
#
# Writes into DIR, for TAG in e4m3, e4m3-block, e5m2:
#   minilm.TAG.bin            every quantized tensor's FP8 bytes concatenated in file order
#   minilm.TAG.safetensors    F8_E4M3 / F8_E5M2 tensors with their F32 scale tensors (and any
#                             non-float tensor of the source as it is)
set -euo pipefail
DIR=${1:-${ENEC_CORPUS:-/tmp/enec-corpus}}
bash "$(dirname "$0")/fetch-minilm.sh" "$DIR" > /dev/null
python3 - "$DIR" <<'PY'
import json, os, struct, sys
import numpy as np

d = sys.argv[1]
outs = [f'minilm.{t}.{s}' for t in ('e4m3', 'e4m3-block', 'e5m2') for s in ('bin', 'safetensors')]
if all(os.path.exists(os.path.join(d, n)) for n in outs):
    print(f'fp8 corpus ready in {d}'); sys.exit(0)
src = os.path.join(d, 'minilm.f32.safetensors')
with open(src, 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]; hdr = json.loads(f.read(n))
blob = np.memmap(src, dtype=np.uint8, mode='r', offset=8 + n)
names = sorted((k for k in hdr if k != '__metadata__'), key=lambda k: hdr[k]['data_offsets'][0])

# (mantissa bits, exponent bias, largest finite value, safetensors dtype)
KINDS = {'e4m3': (3, 7, 448.0, 'F8_E4M3'), 'e5m2': (2, 15, 57344.0, 'F8_E5M2')}

def to_fp8(y, kind):
    """FP8 bytes of float64 values y (|y| <= FMAX), rounded to nearest, ties to even."""
    mbits, bias, fmax, _ = KINDS[kind]
    a = np.abs(y)
    emin = 1 - bias                          # exponent of the smallest normal
    _, ex = np.frexp(a)                      # a = m * 2^ex, m in [0.5, 1): floor(log2 a) = ex - 1
    e = np.maximum(ex.astype(np.int64) - 1, emin)
    steps = np.rint(a / np.exp2(e - mbits))  # the grid step of a's binade; exact in float64
    assert (steps * np.exp2(e - mbits) <= fmax).all()
    # steps counts grid points from 0 in units of 2^(e - mbits); a carry into the next binade
    # (steps == 2^(mbits+1)) is the next binade's first value.
    carry = steps >= 2 ** (mbits + 1)
    e = e + carry; steps = np.where(carry, steps / 2, steps).astype(np.int64)
    normal = steps >= 2 ** mbits
    field = np.where(normal, e - emin + 1, 0)
    mant = np.where(normal, steps - 2 ** mbits, steps)
    sign = np.signbit(y).astype(np.int64)
    return (sign << 7 | field << mbits | mant).astype(np.uint8)

def from_fp8(b, kind):
    mbits, bias, _, _ = KINDS[kind]
    b = b.astype(np.int64); field = (b >> mbits) & ((1 << (7 - mbits)) - 1); mant = b & ((1 << mbits) - 1)
    mag = np.where(field == 0, mant * 2.0 ** (1 - bias - mbits),
                   (1 + mant / 2 ** mbits) * np.exp2(field - bias))
    return np.where(b >> 7, -mag, mag)

def scale_of(block, fmax):
    amax = float(np.abs(block).max()) if block.size else 0.0
    return np.float32(amax / fmax if amax > 0 else 1.0)

def quantize(x, kind, tiled):
    """FP8 bytes of x (shape kept) and the F32 scale tensor (scalar, or one per 128x128 tile)."""
    fmax = KINDS[kind][2]
    if not tiled:
        s = scale_of(x, fmax)
        return to_fp8(x.astype(np.float64) / np.float64(s), kind), np.array(s, dtype='<f4')
    m = x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1)
    rows, cols = m.shape; tr, tc = -(-rows // 128), -(-cols // 128)
    q = np.empty(m.shape, np.uint8); scales = np.empty((tr, tc), '<f4')
    for i in range(tr):
        for j in range(tc):
            t = m[128 * i:128 * i + 128, 128 * j:128 * j + 128]
            scales[i, j] = scale_of(t, fmax)
            q[128 * i:128 * i + 128, 128 * j:128 * j + 128] = to_fp8(t.astype(np.float64) / np.float64(scales[i, j]), kind)
    return q.reshape(x.shape), (scales.reshape(tc) if x.ndim == 1 else scales)

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

# Every value's FP8 byte decodes to the value rounded: checked on all 256 bytes both ways.
for kind in KINDS:
    every = np.arange(256, dtype=np.uint8)
    values = from_fp8(every, kind)
    finite = np.isfinite(values) & (np.abs(values) <= KINDS[kind][2])
    assert (to_fp8(values[finite], kind) == every[finite]).all(), kind

for tag, kind, tiled in (('e4m3', 'e4m3', False), ('e4m3-block', 'e4m3', True), ('e5m2', 'e5m2', False)):
    st_dtype = KINDS[kind][3]; tensors, cat, worst = [], [], 0.0
    for k in names:
        m = hdr[k]; s, e = m['data_offsets']; raw = np.asarray(blob[s:e])
        if m['dtype'] != 'F32':
            tensors.append((k, m['dtype'], m['shape'], raw)); continue
        x = raw.view('<f4').reshape(m['shape'])
        q, scales = quantize(x, kind, tiled)
        tensors.append((k, st_dtype, m['shape'], q))
        tensors.append((k + ('_scale_inv' if tiled else '_scale'), 'F32', list(scales.shape), scales))
        cat.append(q.reshape(-1))
        if not tiled and np.abs(x).max() > 0:
            err = np.abs(from_fp8(q.reshape(-1), kind) * float(scales) - x.reshape(-1)).max()
            worst = max(worst, err / float(np.abs(x).max()))
    write_st(os.path.join(d, f'minilm.{tag}.safetensors'), tensors, hdr.get('__metadata__'))
    np.concatenate(cat).tofile(os.path.join(d, f'minilm.{tag}.bin'))
    note = f', largest error {worst:.3g} of amax' if not tiled else ''
    print(f'minilm.{tag}: {sum(c.size for c in cat)} elements{note}')
print(f'fp8 corpus ready in {d}')
PY
