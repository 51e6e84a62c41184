#!/usr/bin/env python3
"""The load path: `enec decompress` and `enec compress` against `cp` and `zstd`, whole commands
timed in one run, alternating, on a tmpfs.

    python3 benches/load_path.py [--enec target/release/enec] [--rounds 9] [--dir /dev/shm/enec-load]
                                 [--csv FILE --machine TEXT] CHECKPOINT.safetensors...

For each checkpoint, the files are copied into --dir (a tmpfs, so that no disk is timed), then
compressed once by `enec compress` and by `zstd -1`. Each round runs every command below once,
in an order rotated from round to round; the table gives the median wall time of each, its ratio
to `cp` of the restored file (the same bytes as the checkpoint), and the largest resident set of
any of its runs (`/usr/bin/time -f %M`, which counts the mapped pages of the input file too):

    cp CHECKPOINT OUT                           the floor: read the bytes, write the bytes
    zstd -q -d -f CHECKPOINT.zst -o OUT         a general-purpose decompressor, its fastest level
    enec decompress -q -f -j1 / -jN IN OUT      N: all cores
    enec compress -q -f -j1 / -jN CHECKPOINT OUT

Every restored file is compared with the checkpoint after the timings. `--csv FILE` appends the
table's rows to FILE (benches/results/load-path.csv), `--machine` naming the machine. Needs python3, cp, zstd,
/usr/bin/time (GNU time).
"""
import argparse
import csv
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import time


RSS_FILE = "/dev/shm/enec-load.rss"


def run(argv):
    """Runs argv under /usr/bin/time (whose own start is in every timing alike); returns
    (seconds, max RSS in MB). Fails loudly if the command does."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", RSS_FILE] + argv, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}")
    with open(RSS_FILE) as f:
        return seconds, int(f.read().split()[-1]) / 1024


def same(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


CSV_COLUMNS = ["date", "time_utc", "commit", "machine", "checkpoint", "checkpoint_MB", "command",
               "rounds", "median_s", "vs_cp", "max_rss_MB", "method"]


def bench(enec, checkpoint, rounds, work, table):
    name = os.path.basename(checkpoint)
    src = os.path.join(work, name)
    shutil.copyfile(checkpoint, src)
    packed, zst = src + ".enec", src + ".zst"
    run([enec, "compress", "-q", "-f", src, packed])
    run(["zstd", "-q", "-1", "-f", src, "-o", zst])
    cores = os.cpu_count() or 1
    out = lambda tag: os.path.join(work, f"out.{tag}")
    commands = {
        "cp": ["cp", src, out("cp")],
        "zstd -d": ["zstd", "-q", "-d", "-f", zst, "-o", out("zstd")],
        "enec decompress -j1": [enec, "decompress", "-q", "-f", "-j", "1", packed, out("d1")],
        f"enec decompress -j{cores}": [enec, "decompress", "-q", "-f", "-j", str(cores), packed, out("dn")],
        "enec compress -j1": [enec, "compress", "-q", "-f", "-j", "1", src, out("c1")],
        f"enec compress -j{cores}": [enec, "compress", "-q", "-f", "-j", str(cores), src, out("cn")],
    }
    names = list(commands)
    times = {n: [] for n in names}
    rss = {n: 0.0 for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            seconds, mb = run(commands[n])
            times[n].append(seconds)
            rss[n] = max(rss[n], mb)
    for tag in ["cp", "zstd", "d1", "dn"]:
        if not same(src, out(tag)):
            sys.exit(f"{name}: out.{tag} differs from the checkpoint")
    for tag in ["c1", "cn"]:
        if not same(packed, out(tag)):
            sys.exit(f"{name}: out.{tag} differs from the first compression")
    size = os.path.getsize(src)
    cp = statistics.median(times["cp"])
    print(f"\n{name}: {size / 1e6:.1f} MB, enec {os.path.getsize(packed) / 1e6:.1f} MB, "
          f"zstd -1 {os.path.getsize(zst) / 1e6:.1f} MB; {rounds} rounds, {cores} cores")
    print("| command | median s | x cp | max RSS MB |")
    print("|---|---:|---:|---:|")
    for n in names:
        m = statistics.median(times[n])
        print(f"| `{n}` | {m:.4f} | {m / cp:.2f} | {rss[n]:.0f} |")
        table.append([name, f"{size / 1e6:.1f}", n, rounds, f"{m:.4f}", f"{m / cp:.2f}", f"{rss[n]:.0f}"])
    for path in [src, packed, zst] + [out(t) for t in ["cp", "zstd", "d1", "dn", "c1", "cn"]]:
        os.remove(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--enec", default="target/release/enec")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--dir", default="/dev/shm/enec-load")
    parser.add_argument("--csv", help="append the rows to this CSV file")
    parser.add_argument("--machine", default="", help="the machine, for the CSV rows")
    parser.add_argument("checkpoints", nargs="+")
    args = parser.parse_args()
    if args.csv and not args.machine:
        sys.exit("--csv needs --machine")
    os.makedirs(args.dir, exist_ok=True)
    table = []
    for checkpoint in args.checkpoints:
        bench(os.path.abspath(args.enec), checkpoint, args.rounds, args.dir, table)
    if args.csv:
        now = datetime.datetime.now(datetime.timezone.utc)
        here = os.path.dirname(os.path.abspath(__file__))
        commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        new = not os.path.exists(args.csv)
        with open(args.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(CSV_COLUMNS)
            for row in table:
                w.writerow([now.strftime("%Y-%m-%d"), now.strftime("%H:%M"), commit, args.machine]
                           + row + [f"benches/load_path.py --rounds {args.rounds}"])
    os.rmdir(args.dir)
    os.remove(RSS_FILE)


if __name__ == "__main__":
    main()
