"""Writes a small safetensors checkpoint for the C example's container check: the raw fp32
array ARRAY as tensor `slice.weight` (1-D), beside an I64 tensor `slice.ids` (stored verbatim).

    python3 make_checkpoint.py ARRAY OUT.safetensors
"""
import json
import struct
import sys

array = open(sys.argv[1], "rb").read()
ids = struct.pack("<4q", 0, 1, 2, 3)
header = {
    "slice.ids": {"dtype": "I64", "shape": [4], "data_offsets": [0, len(ids)]},
    "slice.weight": {
        "dtype": "F32",
        "shape": [len(array) // 4],
        "data_offsets": [len(ids), len(ids) + len(array)],
    },
}
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
with open(sys.argv[2], "wb") as out:
    out.write(struct.pack("<Q", len(text)) + text + ids + array)
