#!/usr/bin/env python3
"""Decode an enec stream into a torch tensor on the GPU through the C API of libenec_cuda.so.

The stream's bytes and the output tensor live in torch's GPU memory; the C library gets raw
device pointers (ctypes) and the current CUDA stream, allocates nothing and does not synchronise.

usage: decode_torch.py STREAM.enec [RAW.bin | --h32 HEX]
       RAW: the original bytes, compared if given; HEX: their h32 (FORMAT.md section 6)
env:   ENEC_CUDA_LIB=path/to/libenec_cuda.so (default: ../build/libenec_cuda.so beside this file)
"""
import ctypes
import os
import sys

import torch


class Frame(ctypes.Structure):
    _fields_ = [
        ("src", ctypes.c_void_p),
        ("dst", ctypes.c_void_p),
        ("frame_bytes", ctypes.c_uint32),
        ("elements", ctypes.c_uint32),
        ("index", ctypes.c_uint32),
        ("dtype", ctypes.c_uint8),
        ("checksums", ctypes.c_uint8),
        ("coding", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8),
    ]


class Batch(ctypes.Structure):
    _fields_ = [
        ("frames", ctypes.c_uint32),
        ("max_elements", ctypes.c_uint32),
        ("max_coded_bytes", ctypes.c_uint32),
        ("dtype_mask", ctypes.c_uint32),
        ("max_entries", ctypes.c_uint32),
        ("general_frames", ctypes.c_uint32),
        ("decoded_bytes", ctypes.c_uint64),
    ]


class StreamInfo(ctypes.Structure):
    _fields_ = [
        ("element_count", ctypes.c_uint64),
        ("decoded_bytes", ctypes.c_uint64),
        ("frame_count", ctypes.c_uint32),
        ("frame_len", ctypes.c_uint32),
        ("dtype", ctypes.c_uint8),
        ("checksums", ctypes.c_uint8),
        ("version_major", ctypes.c_uint8),
        ("version_minor", ctypes.c_uint8),
    ]


TORCH_DTYPES = {1: torch.bfloat16, 2: torch.float16, 3: torch.float32}
# FP8 (format 1.1) where this torch has the types.
for code, name in ((4, "float8_e4m3fn"), (5, "float8_e5m2")):
    if hasattr(torch, name):
        TORCH_DTYPES[code] = getattr(torch, name)


def load_library(path=None):
    path = path or os.environ.get("ENEC_CUDA_LIB") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "libenec_cuda.so")
    lib = ctypes.CDLL(path)
    lib.enec_cuda_stream_info_read.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(StreamInfo)]
    lib.enec_cuda_index_stream.argtypes = [
        ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
        ctypes.POINTER(Frame), ctypes.c_size_t, ctypes.POINTER(Batch), ctypes.POINTER(ctypes.c_uint32)]
    lib.enec_cuda_decode.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(Batch), ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    return lib


def decode(lib, stream: bytes, device="cuda"):
    """Returns (tensor, status): the decoded tensor and the per-frame statuses (int32, on the GPU).

    Nothing here waits for the GPU: the kernel is enqueued on torch's current stream. A frame's
    bytes are valid once its status reads 0 (reading the statuses waits for the kernel)."""
    info = StreamInfo()
    rc = lib.enec_cuda_stream_info_read(stream, len(stream), ctypes.byref(info))
    if rc:
        raise ValueError(f"not an enec stream (rc {rc})")
    out = torch.empty(info.element_count, dtype=TORCH_DTYPES[info.dtype], device=device)
    # Device copy of the stream: torch's allocator returns 256-byte aligned blocks.
    dev_stream = torch.frombuffer(bytearray(stream), dtype=torch.uint8).to(device, non_blocking=False)
    frames = (Frame * max(info.frame_count, 1))()
    batch = Batch()
    bad = ctypes.c_uint32(0)
    rc = lib.enec_cuda_index_stream(stream, len(stream), ctypes.c_void_p(dev_stream.data_ptr()),
                                    ctypes.c_void_p(out.data_ptr()), out.numel() * out.element_size(),
                                    frames, info.frame_count, ctypes.byref(batch), ctypes.byref(bad))
    if rc:
        raise ValueError(f"corrupt stream (rc {rc}, frame {bad.value})")
    raw_frames = ctypes.string_at(ctypes.addressof(frames), ctypes.sizeof(Frame) * info.frame_count)
    dev_frames = torch.frombuffer(bytearray(raw_frames), dtype=torch.uint8).to(device) if raw_frames else None
    status = torch.zeros(max(info.frame_count, 1), dtype=torch.int32, device=device)
    if info.frame_count:
        cuda_stream = torch.cuda.current_stream(out.device).cuda_stream
        rc = lib.enec_cuda_decode(ctypes.c_void_p(dev_frames.data_ptr()), ctypes.byref(batch), 1,
                                  ctypes.c_void_p(status.data_ptr()), ctypes.c_void_p(cuda_stream))
        if rc:
            raise RuntimeError(f"launch failed (rc {rc})")
    # Keep the inputs alive until the kernel has run (the caching allocator would reuse them).
    out._enec_keepalive = (dev_stream, dev_frames)
    return out, status[: info.frame_count]


def h32(data: bytes) -> int:
    """FORMAT.md section 6 in numpy: 32 lanes, one 128-byte block per step."""
    import numpy as np

    P1, P2, P3, P4, P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
    n = len(data)
    padded = data + bytes(-n % 128)
    words = np.frombuffer(padded, dtype="<u4").reshape(-1, 32).astype(np.uint64)
    acc = (P5 + np.arange(32, dtype=np.uint64)) & 0xFFFFFFFF
    m = np.uint64(0xFFFFFFFF)
    for w in words:
        acc = (acc + w * np.uint64(P2)) & m
        acc = (((acc << np.uint64(13)) | (acc >> np.uint64(19))) & m) * np.uint64(P1) & m
    h = (n + P5) & 0xFFFFFFFF
    for a in acc.tolist():
        h = (h + a * P3) & 0xFFFFFFFF
        h = (((h << 17) | (h >> 15)) & 0xFFFFFFFF) * P4 & 0xFFFFFFFF
    h ^= h >> 15
    h = h * P2 & 0xFFFFFFFF
    h ^= h >> 13
    h = h * P3 & 0xFFFFFFFF
    h ^= h >> 16
    return h


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    lib = load_library()
    with open(sys.argv[1], "rb") as f:
        stream = f.read()
    tensor, status = decode(lib, stream)
    bad = int((status != 0).sum().item())  # waits for the kernel
    print(f"decoded {tensor.numel()} {tensor.dtype} values on {tensor.device}; frames with errors: {bad}")
    if tensor.numel():
        t = tensor.float()
        print(f"mean {t.mean().item():.6g}  std {t.std().item():.6g}  first {t[:4].tolist()}")
    if len(sys.argv) > 3 and sys.argv[2] == "--h32":
        got = h32(tensor.view(torch.uint8).cpu().numpy().tobytes())
        want = int(sys.argv[3], 16)
        print(f"h32 of the decoded bytes {got:08x}, expected {want:08x}: {'identical' if got == want else 'DIFFERENT'}")
        return 0 if got == want and bad == 0 else 1
    if len(sys.argv) > 2:
        with open(sys.argv[2], "rb") as f:
            raw = f.read()
        same = tensor.view(torch.uint8).cpu().numpy().tobytes() == raw
        print(("identical to " if same else "DIFFERENT from ") + sys.argv[2])
        return 0 if same and bad == 0 else 1
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
