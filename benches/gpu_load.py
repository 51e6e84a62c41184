"""Loading a checkpoint into GPU memory: enec against safetensors, fastsafetensors and the Run:ai
model streamer, on one checkpoint of real weights, page cache warm and cold.

    pip install ./ffi/python safetensors fastsafetensors runai-model-streamer   # + torch (CUDA)
    python benches/gpu_load.py --source MINILM.bf16.safetensors --workdir DIR [--gbytes 4.2]
                               [--rounds 3] [--csv benches/results/gpu-load.csv --machine NAME]

The checkpoint: every tensor of ``--source`` (real bf16 weights) repeated as ``tile{k}.NAME``
until it reaches ``--gbytes`` GB, each tile's lowest mantissa bit drawn anew (seeded) so that no
two tiles are equal; written as safetensors and compressed with ``enec.compress_file``.

Each load runs in a fresh process (CUDA initialised before the clock starts) and ends when every
tensor is in ``cuda:0`` and the device is synchronised:

- ``safetensors``: ``safetensors.torch.load_file(path, device="cuda:0")``;
- ``fastsafetensors``: ``fastsafe_open(path, device="cuda:0", nogds=True)``, every tensor taken;
- ``runai-model-streamer``: ``SafetensorsStreamer.stream_file(path)`` and each tensor moved to
  ``cuda:0`` as it arrives (how vLLM uses it);
- ``enec``: ``enec.torch.load_file(path.enec, device="cuda:0")`` (decoded on the GPU).

Rounds alternate the loaders (the order rotated every round). ``warm``: the files are read once
before; ``cold``: both files are evicted from the page cache (sync, then
``posix_fadvise(DONTNEED)``) before each load. Every loader's tensors are checked bit-identical to
safetensors' (a fingerprint of each tensor's bytes, computed on the GPU). Also reported: the host
memory the load adds at its peak (VmHWM after resetting it, minus VmRSS before).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

LOADERS = ["safetensors", "fastsafetensors", "runai-model-streamer", "enec"]


def make_checkpoint(source, path, gbytes, seed=0):
    import safetensors.torch
    import torch

    base = safetensors.torch.load_file(source)
    size = sum(t.numel() * t.element_size() for t in base.values())
    tiles = max(1, -(-int(gbytes * 1e9) // size))
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for k in range(tiles):
        for name, t in base.items():
            if t.dtype in (torch.bfloat16, torch.float16):
                bits = t.view(torch.int16)
                flip = torch.randint(0, 2, bits.shape, generator=gen, dtype=torch.int16)
                t = ((bits & ~1) | flip).view(t.dtype)
            tensors[f"tile{k}.{name}"] = t.clone()
    safetensors.torch.save_file(tensors, path)
    return tiles


def fingerprint(tensors):
    """name -> (bytes, two sums over the tensor's bytes as int64 words), computed on the GPU."""
    import torch

    out = {}
    for name, t in tensors.items():
        b = t.contiguous().view(-1).view(torch.uint8) if t.numel() else torch.zeros(0, dtype=torch.uint8, device=t.device)
        n = b.numel()
        pad = (-n) % 8
        if pad:
            b = torch.cat([b, torch.zeros(pad, dtype=torch.uint8, device=b.device)])
        w = b.view(torch.int64)
        idx = torch.arange(w.numel(), device=w.device, dtype=torch.int64) * 2 + 1
        out[name] = [n, str(t.dtype), list(t.shape), int(w.sum()), int((w * idx).sum())]
    return out


def vm(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def evict(paths):
    os.sync()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def child(loader, path, want_fingerprint):
    import warnings

    import torch

    device = "cuda:0"
    torch.zeros(1, device=device)
    torch.cuda.synchronize()
    if loader == "safetensors":
        import safetensors.torch

        load = lambda: safetensors.torch.load_file(path, device=device)
    elif loader == "fastsafetensors":
        from fastsafetensors import fastsafe_open

        def load():
            with fastsafe_open(path, framework="pt", device=device, nogds=True) as f:
                return {k: f.get_tensor(k) for k in f.keys()}

    elif loader == "runai-model-streamer":
        from runai_model_streamer import SafetensorsStreamer

        def load():
            with SafetensorsStreamer() as s:
                s.stream_file(path)
                return {name: t.to(device) for name, t in s.get_tensors()}

    else:
        import enec.torch

        load = lambda: enec.torch.load_file(path, device=device)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to VmRSS
    except OSError:
        pass
    before = vm("VmRSS")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        tensors = load()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    peak = vm("VmHWM") - before
    result = {
        "seconds": seconds,
        "peak_rss_added": peak,
        "tensors": len(tensors),
        "on_gpu": all(t.device.type == "cuda" for t in tensors.values()),
        "warnings": [str(w.message) for w in caught],
    }
    if loader == "enec":
        import enec._gpu

        result["steps"] = enec._gpu.last_times
    if want_fingerprint:
        result["fingerprint"] = fingerprint(tensors)
    print("RESULT " + json.dumps(result))


def run_child(loader, path, cache, files, fingerprint_it):
    if cache == "cold":
        evict(files)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", loader, path]
    if fingerprint_it:
        cmd.append("--fingerprint")
    p = subprocess.run(cmd, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    print(f"{loader} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="safetensors file of real weights to tile")
    ap.add_argument("--workdir", default="/var/tmp/enec-gpu-load")
    ap.add_argument("--gbytes", type=float, default=4.2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loaders", default=",".join(LOADERS))
    ap.add_argument("--caches", default="warm,cold")
    ap.add_argument("--csv", help="append rows to this CSV")
    ap.add_argument("--machine", default=platform.node())
    ap.add_argument("--commit", default=os.environ.get("ENEC_COMMIT", "unknown"))
    ap.add_argument("--child", nargs=2, metavar=("LOADER", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--fingerprint", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.fingerprint)
        return

    import enec

    os.makedirs(args.workdir, exist_ok=True)
    original = os.path.join(args.workdir, "model.safetensors")
    compressed = original + ".enec"
    if not os.path.exists(compressed):
        t = time.perf_counter()
        tiles = make_checkpoint(args.source, original, args.gbytes)
        made = time.perf_counter() - t
        t = time.perf_counter()
        enec.compress_file(original, compressed)
        print(f"checkpoint: {tiles} tiles, written in {made:.1f} s, compressed in {time.perf_counter() - t:.1f} s")
    size, csize = os.path.getsize(original), os.path.getsize(compressed)
    gbytes = size / 1e9
    print(f"{original}: {size / 1e9:.3f} GB; enec {csize / 1e9:.3f} GB (ratio {size / csize:.4f})")
    with open("/proc/mounts") as f:
        mounts = [line.split() for line in f]
    best = max((m for m in mounts if os.path.abspath(args.workdir).startswith(m[1])), key=lambda m: len(m[1]))
    print(f"filesystem of {args.workdir}: {best[2]} ({best[0]} on {best[1]})")

    loaders = args.loaders.split(",")
    path_of = {name: (compressed if name == "enec" else original) for name in loaders}
    times = {(l, c): [] for l in loaders for c in args.caches.split(",")}
    peaks = {key: [] for key in times}
    prints = {}
    problems = []
    failed = set()
    for cache in args.caches.split(","):
        if cache == "warm":
            for p in (original, compressed):
                with open(p, "rb") as f:
                    while f.read(64 << 20):
                        pass
        for r in range(args.rounds):
            order = loaders[r % len(loaders) :] + loaders[: r % len(loaders)]
            for loader in order:
                first = (loader, cache) not in prints
                if loader in failed:
                    continue
                res = run_child(loader, path_of[loader], cache, [original, compressed], first)
                if res is None:
                    failed.add(loader)
                    problems.append(f"{loader} {cache}: failed")
                    continue
                times[(loader, cache)].append(res["seconds"])
                peaks[(loader, cache)].append(res["peak_rss_added"])
                if first:
                    prints[(loader, cache)] = res.get("fingerprint")
                if res["warnings"]:
                    problems.append(f"{loader} {cache}: warnings {res['warnings']}")
                if not res["on_gpu"]:
                    problems.append(f"{loader} {cache}: a tensor is not on the GPU")
                steps = " ".join(f"{k} {v:.3f}" for k, v in res.get("steps", {}).items())
                print(f"  {cache} round {r} {loader:22s} {res['seconds']:7.3f} s  peak RSS +{res['peak_rss_added'] / 1e6:8.1f} MB  {steps}")
                sys.stdout.flush()

    reference = {c: prints.get(("safetensors", c)) for c in args.caches.split(",")}
    today = datetime.date.today().isoformat()
    rows = []
    print(f"\n| loader | cache | GB | median s | best s | GB/s (original bytes) | vs safetensors | peak host RSS added | identical |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cache in args.caches.split(","):
        st = statistics.median(times[("safetensors", cache)]) if ("safetensors", cache) in times else None
        for loader in loaders:
            ts = times[(loader, cache)]
            if not ts:
                continue
            med, best_t = statistics.median(ts), min(ts)
            ref = reference[cache]
            identical = ref is not None and prints.get((loader, cache)) == ref
            rows.append([today, args.commit, args.machine, loader, cache, f"{gbytes:.3f}", f"{med:.4f}", f"{best_t:.4f}", str(identical).lower()])
            ratio = f"{st / med:.2f}x" if st else "-"
            print(f"| {loader} | {cache} | {gbytes:.2f} | {med:.3f} | {best_t:.3f} | {gbytes / med:.2f} | {ratio} | {max(peaks[(loader, cache)]) / 1e6:.0f} MB | {identical} |")
    for p in problems:
        print("NOTE", p)
    if args.csv:
        header = "date,commit,machine,loader,cache,gbytes,seconds_median,seconds_best,identical\n"
        new = not os.path.exists(args.csv)
        with open(args.csv, "a") as f:
            if new:
                f.write(header)
            for row in rows:
                f.write(",".join(row) + "\n")


if __name__ == "__main__":
    main()
