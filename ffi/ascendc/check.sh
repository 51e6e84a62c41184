#!/usr/bin/env bash
# Checks the AscendC kernels on the strict CPU model (ffi/ascendc/sim):
#   1. every model rule (R1-R7, and the documented semantics SEM) rejects a kernel that breaks it
#      and accepts the fixed kernel;
#   2. every cross-check of tests/ascendc.rs (Rust codec <-> kernels, byte for byte, hazard-free,
#      all dtypes (bf16, fp16, fp32, e4m3, e5m2) and codings, frames of 2^10..2^16 elements, 1..48 blocks, golden files);
#   3. one cost line per direction and dtype for the MiniLM slice (tests/data):
#      ascendc <encode|decode> <dtype>: hazards H, scalar_ub/elem X, scalar_ops/elem O, vector_instr/elem Y,
#        dma_bytes/elem Z, dma_in/stream I, pipe_all/tile W, est_cycles/elem C, est_GBps G
#      with C from the cost table below (ffi/README.md explains it), I the bytes copied GM -> UB
#      over the stream's bytes, and G = CORES * CLOCK_HZ / C * element bytes: the uncompressed
#      bytes per second of CORES vector cores at CLOCK_HZ (an Atlas A2 910B: 48 and 1.8 GHz).
#
#   bash ffi/ascendc/check.sh
#
# Exit status: non-zero on any rule misbehaving, mismatch or hazard; also when a cost target is
# missed (decode <= 0.05 scalar UB accesses per element, encode <= 0.5, <= 1 PIPE_ALL per tile),
# unless ENEC_ASCENDC_TARGETS=report, which prints the misses without failing.
# Environment: CXX (default c++), ENEC_SIM_SEED (block interleaving, default 1).
set -euo pipefail
cd "$(dirname "$0")/../.."

cxx="${CXX:-c++}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== model rules"
"$cxx" -std=c++17 -O2 -Wall -Wextra -Werror -I ffi/ascendc/sim ffi/ascendc/sim/sim_rules.cpp -o "$work/sim_rules"
"$work/sim_rules"

echo "== cross-checks (tests/ascendc.rs)"
ENEC_ASCENDC_COSTS="$work/costs" cargo test --release --quiet --test ascendc

echo "== costs, MiniLM slice, 8 blocks"
# Cost table (cycles; ffi/README.md gives sources and assumptions). Pipes overlap except where
# a barrier or flag stops them: est = scalar + max(vector, dma) + sync.
awk -v targets="${ENEC_ASCENDC_TARGETS:-fail}" '
BEGIN {
    SCALAR_UB = 8        # one GetValue/SetValue on UB
    SCALAR_GM = 50       # one GetValue/SetValue on GM (data cache)
    SCALAR_OP = 1        # one register-level scalar operation the kernels count (ENEC_SCALAR_OPS)
    VEC_ISSUE = 10       # one vector instruction: issue and pipeline fill
    VEC_REPEAT = 1       # per 256-byte repeat
    DMA_ISSUE = 50       # one DataCopy / DataCopyPad: descriptor and latency share
    DMA_BYTES_PER_CYCLE = 18  # a core s share of HBM bandwidth with all cores busy
    PIPE_ALL_COST = 100  # drains every pipe
    FLAG_COST = 10       # one SetFlag/WaitFlag pair
    CORES = 48           # vector cores of a 910B
    CLOCK_HZ = 1.8e9
    bad = 0; missed = 0
}
{
    dtype = $1; dir = $4
    for (i = 5; i < NF; i += 2) v[$i] = $(i + 1)
    n = v["elements"]; t = v["tiles"]
    scalar = v["scalar_ub"] * SCALAR_UB + v["scalar_gm"] * SCALAR_GM + v["scalar_ops"] * SCALAR_OP
    vector = v["vector_instr"] * VEC_ISSUE + v["vector_repeats"] * VEC_REPEAT
    dma = v["dma_ops"] * DMA_ISSUE + v["dma_bytes"] / DMA_BYTES_PER_CYCLE
    sync = v["pipe_all"] * PIPE_ALL_COST + v["flag_pairs"] * FLAG_COST
    est = scalar + (vector > dma ? vector : dma) + sync
    per_elem = v["scalar_ub"] / n; pat = v["pipe_all"] / t
    eb = dtype ~ /^fp32/ ? 4 : dtype ~ /^e[45]m/ ? 1 : 2
    dma_in = v["dma_in_bytes"] / v["stream_bytes"]
    gbps = CORES * CLOCK_HZ / (est / n) * eb / 1e9
    if (dtype ~ /-nosum$/) {  # information: the same stream without checksums
        plain = dtype; sub(/-nosum$/, "", plain)
        printf "  (%s %s without checksums: scalar_ub/elem %.3f, dma_in/stream %.2f, est_cycles/elem %.2f, est_GBps %.1f)\n", \
            dir, plain, per_elem, dma_in, est / n, gbps
        if (v["hazards"] != 0) bad = 1
        next
    }
    lines++
    printf "ascendc %s %s: hazards %d, scalar_ub/elem %.3f, scalar_ops/elem %.2f, vector_instr/elem %.4f, dma_bytes/elem %.2f, dma_in/stream %.2f, pipe_all/tile %.2f, est_cycles/elem %.2f, est_GBps %.1f\n", \
        dir, dtype, v["hazards"], per_elem, v["scalar_ops"] / n, v["vector_instr"] / n, v["dma_bytes"] / n, dma_in, pat, est / n, gbps
    printf "  (%s %s: %.0f%% of vector instructions issued with a copy-in in flight, %.0f%% with a copy-out)\n", \
        dir, dtype, 100 * v["vector_with_copy_in"] / v["vector_instr"], 100 * v["vector_with_copy_out"] / v["vector_instr"]
    if (v["hazards"] != 0) bad = 1
    limit = dir == "decode" ? 0.05 : 0.5
    if (per_elem > limit) { printf "  target missed: %s %s scalar_ub/elem %.3f > %.2f\n", dir, dtype, per_elem, limit; missed = 1 }
    if (pat > 1) { printf "  target missed: %s %s pipe_all/tile %.2f > 1\n", dir, dtype, pat; missed = 1 }
}
END {
    if (lines != 10) { print "expected 10 cost lines (5 dtypes, 2 directions), got " lines; exit 1 }
    if (bad) { print "FAIL: hazards"; exit 1 }
    if (missed && targets != "report") { print "FAIL: cost targets missed (ENEC_ASCENDC_TARGETS=report to only report)"; exit 2 }
}' "$work/costs"
echo "ok"
