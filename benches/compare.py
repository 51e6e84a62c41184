#!/usr/bin/env python3
"""compare.py -- enec next to memcpy, zstd and ZipNN on the same raw array, in one run.

usage: python3 benches/compare.py CORPUS.bin bf16|fp16|fp32 [--reps 3] [--rounds 3] [--tools DIR]
                                  [--csv FILE --machine TEXT]

Runs `enec bench --json` (codings ranked, the default, then auto and groups; one thread and all
cores) and benches/bench_codecs.py (memcpy, zstd -1/-3, ZipNN with threads=1) one after
the other, `--rounds` times taking turns, then prints one markdown table of medians over the
rounds; each row's ratio to memcpy uses the memcpy measured in the same process (enec bench's own
for the enec rows). MB/s are millions of uncompressed bytes per second. Needs: `cargo build --release --features cli`, and
`pip install numpy zstandard zipnn` (zipnn pulls torch, several GB: not for CI).
`--csv FILE` appends one row per codec and round to FILE in the columns of benches/results/*.csv
(BENCHMARKS.md), `--machine` naming the machine.
"""
import argparse, csv, datetime, json, os, re, statistics, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def one_round(a, enec):
    """One run of each tool: rows (name, ratio, compress MB/s, decompress MB/s, memcpy MB/s of the
    row's own process) and the kernels enec used."""
    rows = []
    kernels = ''
    for coding in ('ranked', 'auto', 'groups'):
        out = subprocess.run([enec, 'bench', a.corpus, '--dtype', a.dtype, '--coding', coding,
                              '--repeats', str(a.reps), '--json'], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout)
        memcpy = r['memcpy_gbps'] * 1e3
        if coding == 'ranked':
            rows.append(('memcpy (in enec bench)', 1.0, memcpy, memcpy, memcpy))
        rows.append((f'enec {coding}, 1 thread', r['ratio'], r['encode_gbps'] * 1e3, r['decode_gbps'] * 1e3,
                     memcpy))
        rows.append((f'enec {coding}, {r["threads"]} threads', r['ratio'],
                     r['encode_gbps_threads'] * 1e3, r['decode_gbps_threads'] * 1e3, memcpy))
        kernels = r.get('kernels', 'AVX2' if r['avx2'] else 'portable')
    out = subprocess.run([sys.executable, os.path.join(a.tools, 'bench_codecs.py'), a.corpus, '--dtype', a.dtype,
                          '--reps', str(a.reps), '--codecs', 'memcpy,zstd1,zstd3,zipnn'],
                         check=True, capture_output=True, text=True)
    python = []
    for line in out.stdout.splitlines():
        m = re.match(r'\| (\S+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ok', line)
        if m:
            python.append((m.group(1), float(m.group(4)), float(m.group(2)), float(m.group(3))))
    memcpy = next((r[2] for r in python if r[0].startswith('memcpy')), None)
    rows += [(name if name != 'memcpy' else 'memcpy (in bench_codecs.py)', ratio, c, d, memcpy)
             for name, ratio, c, d in python]
    return rows, kernels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('corpus')
    ap.add_argument('dtype', choices=['bf16', 'fp16', 'fp32'])
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--rounds', type=int, default=3,
                    help='runs of both tools, taking turns; the table gives medians over them')
    ap.add_argument('--tools', default=here, help='the folder of bench_codecs.py')
    ap.add_argument('--csv', help='append the rounds to this CSV file (benches/results/*.csv)')
    ap.add_argument('--machine', default='', help='the machine, for the CSV rows')
    a = ap.parse_args()
    if a.csv and not a.machine:
        sys.exit('--csv needs --machine')
    enec = os.path.join(root, 'target', 'release', 'enec')
    if not os.path.exists(enec):
        sys.exit('build the CLI first: cargo build --release --features cli')
    rounds = []
    for _ in range(a.rounds):
        rows, kernels = one_round(a, enec)
        rounds.append(rows)
    if a.csv:
        write_csv(a, rounds, kernels)
    print(f'### {os.path.basename(a.corpus)} ({a.dtype}), median of {a.rounds} rounds; '
          f'enec kernels: {kernels}\n')
    print('| codec | ratio | compress MB/s | decompress MB/s | compress / memcpy | decompress / memcpy |')
    print('|---|---|---|---|---|---|')
    for i, (name, ratio, _, _, _) in enumerate(rounds[0]):
        runs = [r[i] for r in rounds]
        med = lambda f: statistics.median(f(r) for r in runs)
        c, d = med(lambda r: r[2]), med(lambda r: r[3])
        rel = lambda k: f'{med(lambda r: r[k] / r[4]):.3f}' if all(r[4] and r[k] for r in runs) else ''
        print(f'| {name} | {ratio:.4f} | {c:,.0f} | {d:,.0f} | {rel(2)} | {rel(3)} |')
    print('\nEach figure is the median over the rounds (the tools take turns, one round after the '
          'other); the ratios to memcpy are medians of per-round ratios, each using the memcpy '
          'measured in the same process as the row (enec bench for enec, bench_codecs.py for the '
          'others).')


COLUMNS = ['date', 'time_utc', 'commit', 'machine', 'kernels', 'dtype', 'codec', 'threads', 'run',
           'ratio', 'compress_MBps', 'decompress_MBps', 'compress_vs_memcpy', 'decompress_vs_memcpy',
           'memcpy_MBps', 'two_threads_over_one_compress', 'two_threads_over_one_decompress',
           'compress_vs_bf16', 'decompress_vs_bf16', 'method']


def write_csv(a, rounds, kernels):
    """One row per codec and round; the enec rows carry the kernels, the others none."""
    now = datetime.datetime.now(datetime.timezone.utc)
    commit = subprocess.run(['git', '-C', root, 'rev-parse', '--short', 'HEAD'], capture_output=True,
                            text=True).stdout.strip()
    method = (f'benches/compare.py {os.path.basename(a.corpus)} {a.dtype} --reps {a.reps} '
              f'--rounds {a.rounds}' + (' (ENEC_NO_AVX512=1)' if os.environ.get('ENEC_NO_AVX512') else ''))
    new = not os.path.exists(a.csv)
    with open(a.csv, 'a', newline='') as f:
        w = csv.writer(f)
        if new:
            w.writerow(COLUMNS)
        for number, rows in enumerate(rounds, 1):
            for name, ratio, c, d, memcpy in rows:
                if name.startswith('memcpy'):
                    continue
                m = re.match(r'enec (\w+), (\d+) threads?', name)
                codec, threads = (f'enec {m.group(1)}', m.group(2)) if m else (name, '1')
                rel = lambda v: f'{v / memcpy:.3f}' if memcpy and v else ''
                w.writerow([now.strftime('%Y-%m-%d'), now.strftime('%H:%M'), commit, a.machine,
                            kernels if m else '', a.dtype, codec, threads, number, f'{ratio:.4f}',
                            f'{c:.0f}', f'{d:.0f}', rel(c), rel(d), f'{memcpy:.0f}' if memcpy else '',
                            '', '', '', '', method])


if __name__ == '__main__':
    main()
