#!/usr/bin/env python3
"""Which field of an FP8 element the ranked coding should code: the ratio of each choice on the
FP8 corpora (benches/fetch-fp8.sh), computed with FORMAT.md's frame sizes.

usage: python3 benches/fp8_fields.py [DIR] [--frame-log2 14]

An FP8 byte is s | x | f (e4m3: 1 | 4 | 3 bits; e5m2: 1 | 5 | 2). Each choice codes one field
with the ranked coding (FORMAT.md 4.3: levels L = 1..3 of widths 1..C, the symbol table, the
escapes ending in the raw field) and keeps the rest raw in the residual plane:
  exponent          field x (C = E), residual s | f
  sign+exponent     field s | x (C = E + 1), residual f
  magnitude         field x | f (C = 7), residual s
  byte              the whole byte (C = 8), no residual
Frame size as FORMAT.md 4.4: 32-byte header, pad32(table), each plane's sub-planes (one per set
bit p of the width, pad32(2 * ceil(count * p / 16)) bytes), the best (L, widths) per frame; the
frame is stored instead (32 + pad32(N)) where that is smaller. Dead bits are not counted (FP8
mantissas have none to speak of). The entropy row is the per-frame Shannon entropy of the byte,
no coder of single bytes gets below it.
"""
import argparse
import itertools
import os

import numpy as np

FIELDS = {'e4m3': (4, 3), 'e4m3-block': (4, 3), 'e5m2': (5, 2)}


def pad32(n):
    return -(-n // 32) * 32


def plane(width, count):
    """Bytes of a plane of `count` values of `width` bits (arrays of counts)."""
    total = 0
    for p in (1, 2, 4, 8, 16):
        if width & p:
            total = total + pad32(2 * (-(-count * p // 16)))
    return total


def ranked_frames(symbols, c_bits, n):
    """Smallest ranked size of each frame's code field (not counting the residual or header):
    symbols is [frames, n] of values below 2^c_bits."""
    alphabet = 1 << c_bits
    counts = np.stack([np.bincount(row, minlength=alphabet) for row in symbols])
    counts = -np.sort(-counts, axis=1)
    cum = np.concatenate([np.zeros((len(counts), 1), np.int64), np.cumsum(counts, axis=1)], axis=1)
    beyond = lambda s: n - cum[:, min(s, alphabet)]
    best = np.full(len(counts), np.iinfo(np.int64).max)
    for levels in (1, 2, 3):
        for widths in itertools.product(range(1, c_bits + 1), repeat=levels):
            start, size, count = 0, 0, np.full(len(counts), n)
            for w in widths:
                size = size + plane(w, count)
                start += (1 << w) - 1
                if start > alphabet:
                    break
                count = beyond(start)
            else:
                size = size + plane(c_bits, count) + pad32(start)
                best = np.minimum(best, size)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dir', nargs='?', default=os.environ.get('ENEC_CORPUS', '/tmp/enec-corpus'))
    ap.add_argument('--frame-log2', type=int, default=14)
    a = ap.parse_args()
    n = 1 << a.frame_log2
    print(f'frame {n} elements; ratio = input bytes / coded bytes (frame headers and tables counted)')
    print(f'{"corpus":12s} {"exponent":>9s} {"sign+exp":>9s} {"magnitude":>9s} {"byte":>9s} {"entropy":>9s}')
    for tag, (e, m) in FIELDS.items():
        path = os.path.join(a.dir, f'minilm.{tag}.bin')
        b = np.fromfile(path, np.uint8)
        frames = len(b) // n
        rows = b[:frames * n].reshape(frames, n).astype(np.int64)
        s, x, f = rows >> 7, (rows >> m) & ((1 << e) - 1), rows & ((1 << m) - 1)
        choices = {
            'exponent': (x, e, 1 + m),
            'sign+exp': (s << e | x, e + 1, m),
            'magnitude': (x << m | f, e + m, 1),
            'byte': (rows, 8, 0),
        }
        out = []
        stored = 32 + pad32(n)
        for _, (field, c_bits, r_bits) in choices.items():
            size = 32 + ranked_frames(field, c_bits, n) + plane(r_bits, n)
            out.append(frames * n / np.minimum(size, stored).sum())
        counts = np.stack([np.bincount(row, minlength=256) for row in rows]) / n
        with np.errstate(divide='ignore', invalid='ignore'):
            h = -np.nansum(np.where(counts > 0, counts * np.log2(counts), 0), axis=1)
        out.append(8 / h.mean())
        print(f'{tag:12s} ' + ' '.join(f'{r:9.4f}' for r in out))


if __name__ == '__main__':
    main()
