#!/usr/bin/env python3
"""Recreates minilm-slice.f32.bin from the corpus of benches/fetch-minilm.sh."""
import sys
import numpy as np

corpus = sys.argv[1] if len(sys.argv) > 1 else '/tmp/enec-corpus'
rows = [l.rstrip('\n').split('\t') for l in open(f'{corpus}/minilm.tensors.tsv')][1:]
x = np.fromfile(f'{corpus}/minilm.fp32.bin', dtype='<f4')
parts = []
for name, shape, offset, taken in (l.rstrip('\n').split('\t') for l in list(open('minilm-slice.tsv'))[1:]):
    parts.append(x[int(offset):int(offset) + int(taken)])
np.concatenate(parts).tofile('minilm-slice.f32.bin')
