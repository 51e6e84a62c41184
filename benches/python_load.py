"""Loading a checkpoint from Python: enec against safetensors (and ZipNN where installed).

    pip install ./ffi/python safetensors ml_dtypes        # + torch, zipnn for the full comparison
    python benches/python_load.py [CHECKPOINT.safetensors] [--rounds N] [--threads N]
                                  [--csv FILE --machine TEXT]

Compresses the checkpoint with enec (and, per tensor, with ZipNN), then times, in one run,
round-robin with the order rotated every round (page cache warm), each loader alone and then
followed by copying every tensor into preallocated parameters (what ``load_state_dict`` does;
safetensors' tensors are views of the mapped file, read only when used), and with torch the
``load_model`` calls into a module holding those parameters (enec decodes into them directly):

- ``enec.torch.load_file`` of the .enec file,
- ``safetensors.torch.load_file`` of the uncompressed file,
- ZipNN's decompression of the same tensors (from memory, file reading not counted);

or, without torch, ``enec.numpy.load_file`` against ``safetensors.numpy.load_file``. Prints
each loader's median and the median of the per-round ratios, and checks that every loader's
tensors are bit-equal to safetensors' (dtypes and shapes too). ``--csv FILE`` appends one row
per loader and step (benches/results/python-load.csv), ``--machine`` naming the machine.
"""

import argparse
import csv
import datetime
import os
import subprocess
import statistics
import sys
import tempfile
import time
import warnings

import enec

DEFAULT = "/tmp/enec-corpus/minilm.bf16.safetensors"


def torch_loaders(original, compressed, threads):
    import enec.torch
    import safetensors.torch
    import torch

    loaders = {
        "safetensors.torch.load_file": lambda: safetensors.torch.load_file(original),
        "enec.torch.load_file": lambda: enec.torch.load_file(compressed, threads=threads),
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import zipnn
    except ImportError:
        print("ZipNN is not installed (pip install zipnn): not measured")
        return loaders, torch_bytes, torch_copy, lambda t: t.clone()

    # ZipNN's tensor interface, one blob per tensor (the way its safetensors integration stores
    # them). Its compress rewrites its input in place, hence the clones.
    reference = safetensors.torch.load_file(original)
    codecs, blobs = {}, {}
    for name, tensor in reference.items():
        kind = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}
        if tensor.dtype in kind:
            codecs[name] = zipnn.ZipNN(input_format="torch", bytearray_dtype=kind[tensor.dtype])
            blobs[name] = codecs[name].compress(tensor.clone())
    stored = sum(len(b) for b in blobs.values())
    print(f"ZipNN: {len(blobs)} float tensors, {stored} bytes compressed")

    def zipnn_load():
        tensors = {name: codecs[name].decompress(blob) for name, blob in blobs.items()}
        for name, tensor in reference.items():
            tensors.setdefault(name, tensor.clone())  # the few non-float tensors: stored as is
        return tensors

    loaders["ZipNN decompress (from memory)"] = zipnn_load
    return loaders, torch_bytes, torch_copy, lambda t: t.clone()


def module_of(tensors):
    """A torch module whose parameters are ``tensors`` (dotted names as submodules)."""
    import torch

    root = torch.nn.Module()
    for name, tensor in tensors.items():
        *path, leaf = name.split(".")
        module = root
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, torch.nn.Module())
            module = getattr(module, part)
        module.register_parameter(leaf, torch.nn.Parameter(tensor, requires_grad=False))
    return root


def torch_bytes(tensor):
    import torch

    return tensor.contiguous().flatten().view(torch.uint8).numpy().tobytes()


def torch_copy(destination, tensor):
    destination.copy_(tensor)


def numpy_loaders(original, compressed, threads):
    import enec.numpy
    import ml_dtypes  # noqa: F401  (safetensors.numpy reads BF16 through it)
    import safetensors.numpy

    loaders = {
        "safetensors.numpy.load_file": lambda: safetensors.numpy.load_file(original),
        "enec.numpy.load_file": lambda: enec.numpy.load_file(compressed, threads=threads),
    }
    return (
        loaders,
        lambda a: a.tobytes(),
        lambda destination, a: destination.__setitem__(..., a),
        lambda a: a.copy(),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", nargs="?", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--threads", type=int, default=None, help="enec threads (default: all cores)"
    )
    parser.add_argument("--numpy", action="store_true", help="the numpy loaders even with torch")
    parser.add_argument("--csv", help="append the results to this CSV file")
    parser.add_argument("--machine", default="", help="the machine, for the CSV rows")
    args = parser.parse_args()
    if args.csv and not args.machine:
        sys.exit("--csv needs --machine")

    original = args.checkpoint
    work = tempfile.mkdtemp(prefix="enec-bench-")
    compressed = os.path.join(work, os.path.basename(original) + ".enec")
    start = time.perf_counter()
    size = enec.compress_file(original, compressed, threads=args.threads)
    print(
        f"{original}: {os.path.getsize(original)} -> {size} bytes with enec "
        f"({time.perf_counter() - start:.2f} s), {os.cpu_count()} cores, threads={args.threads}"
    )

    use_torch = not args.numpy
    if use_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch is not installed: measuring the numpy loaders instead")
            use_torch = False
    loaders, raw, copy, clone = (torch_loaders if use_torch else numpy_loaders)(
        original, compressed, args.threads
    )

    # Bit-equality with safetensors (and the warm-up of every file and code path).
    names = list(loaders)
    reference = loaders[names[0]]()
    for name in names[1:]:
        got = loaders[name]()
        assert set(got) == set(reference), name
        for key, tensor in reference.items():
            assert got[key].dtype == tensor.dtype and tuple(got[key].shape) == tuple(
                tensor.shape
            ), (name, key)
            assert raw(got[key]) == raw(tensor), (name, key)
        print(f"{name}: {len(got)} tensors bit-equal to {names[0]}'s, dtypes and shapes equal")

    # The model's parameters: allocated and touched once, as a constructed model's are.
    parameters = {key: clone(tensor) for key, tensor in reference.items()}
    del reference

    def copied(load):
        def run():
            loaded = load()
            for key, tensor in loaded.items():
                copy(parameters[key], tensor)
            return loaded

        return run

    runs = {}
    for name in names:
        runs[(name, "load_file")] = loaders[name]
        runs[(name, "load_file + copy into parameters")] = copied(loaders[name])
    if use_torch:
        from enec import torch as enec_torch
        from safetensors import torch as safetensors_torch

        model = module_of(parameters)
        runs[("safetensors.torch.load_model", "load_model")] = lambda: safetensors_torch.load_model(
            model, original
        )
        runs[("enec.torch.load_model", "load_model")] = lambda: enec_torch.load_model(
            model, compressed, threads=args.threads
        )
    keys = list(runs)
    times = {key: [] for key in keys}
    cpu = {key: [] for key in keys}
    for round in range(args.rounds):
        shift = round % len(keys)
        for key in keys[shift:] + keys[:shift]:
            start, start_cpu = time.perf_counter(), time.process_time()
            loaded = runs[key]()
            times[key].append(time.perf_counter() - start)
            cpu[key].append(time.process_time() - start_cpu)
            del loaded

    print(
        f"\n{args.rounds} rounds, order rotated each round; median ms, "
        "and median of the per-round ratios to the first row; CPU: median ms of CPU time, all threads"
    )
    rows = []
    for what in dict.fromkeys(w for _, w in keys):
        print(f"{what}:")
        group = [name for name, w in keys if w == what]
        base = times[(group[0], what)]
        for name in group:
            mine = times[(name, what)]
            ratios = [t / b for t, b in zip(mine, base)]
            print(
                f"  {name:34s} {statistics.median(mine) * 1e3:8.2f} ms   "
                f"{statistics.median(ratios):5.2f}x   (min {min(mine) * 1e3:.2f} ms)   "
                f"CPU {statistics.median(cpu[(name, what)]) * 1e3:7.2f} ms"
            )
            rows.append([os.path.basename(original), what, name, group[0], args.rounds,
                         f"{statistics.median(mine) * 1e3:.2f}", f"{min(mine) * 1e3:.2f}",
                         f"{statistics.median(ratios):.3f}",
                         f"{statistics.median(cpu[(name, what)]) * 1e3:.2f}"])
    if args.csv:
        write_csv(args, rows, use_torch)
    os.remove(compressed)
    os.rmdir(work)


def write_csv(args, rows, use_torch):
    """Appends `rows` with the date, commit, machine and versions."""
    now = datetime.datetime.now(datetime.timezone.utc)
    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    versions = ""
    if use_torch:
        import safetensors
        import torch

        versions = f"torch {torch.__version__}, safetensors {safetensors.__version__}"
    new = not os.path.exists(args.csv)
    with open(args.csv, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["date", "time_utc", "commit", "machine", "cores", "threads", "versions",
                        "checkpoint", "step", "loader", "baseline", "rounds", "median_ms",
                        "best_ms", "vs_baseline", "cpu_ms"])
        for row in rows:
            w.writerow([now.strftime("%Y-%m-%d"), now.strftime("%H:%M"), commit, args.machine,
                        os.cpu_count(), args.threads or "all", versions] + row)


if __name__ == "__main__":
    sys.exit(main())
