#!/usr/bin/env bash
# llvm-mca estimates (not measurements) of the ranked decoder's level-0 loop per element, bf16
# without dead bits (its residual one 8-bit sub-plane), codes of one sub-plane (width 1, 2 or 4)
# and of two (width 3): the NEON one-pass loop plus the h32 rounds over its output
# (-mcpu=neoverse-v2 and neoverse-n1), beside the AVX2 one-pass loop, which hashes in registers
# (-mcpu=znver4). Compiles the library to assembly for both targets (one codegen unit), takes
# each inner loop by its function and instructions (benches/mca_loops.py), runs llvm-mca on it
# and divides its cycles per iteration by the elements an iteration handles.
#
#   bash benches/mca.sh        # needs llvm-mca 19 (apt llvm-19) and the aarch64 rustup target
#
# Bounds checks and rare branches inside a loop count as instructions; cache misses, the
# chunk's set-up, its last elements and the deeper escape levels are not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

mca=${LLVM_MCA:-llvm-mca-19}
command -v "$mca" >/dev/null || mca=/usr/lib/llvm-19/bin/llvm-mca
out=${CARGO_TARGET_DIR:-target}/mca
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
for target in aarch64-unknown-linux-gnu x86_64-unknown-linux-gnu; do
    cargo rustc --quiet --release --lib --target "$target" --target-dir "$out" \
        -- --emit asm -C codegen-units=1
done
arm=$(ls -t "$out"/aarch64-unknown-linux-gnu/release/deps/enec-*.s | head -1)
x86=$(ls -t "$out"/x86_64-unknown-linux-gnu/release/deps/enec-*.s | head -1)

# cycles per element: FILE TRIPLE CPU ELEMENTS-PER-ITERATION FUNCTION INDEX MNEMONIC...
per_element() {
    local file=$1 triple=$2 cpu=$3 elements=$4
    shift 4
    python3 benches/mca_loops.py "$file" body "$@" |
        "$mca" -mtriple="$triple" -mcpu="$cpu" -iterations=1000 2>/dev/null |
        awk -v e="$elements" '/^Iterations:/ {i = $2} /^Total Cycles:/ {c = $3}
            END {printf "%.3f", c / i / e}'
}

for cpu in neoverse-v2 neoverse-n1; do
    # The h32 rounds: 128 bytes (64 bf16 elements) per iteration, accumulators in registers.
    h32=$(per_element "$arm" aarch64 "$cpu" 64 dispatch12decode_frame 0 mla usra '^mul=8')
    for subs in 1 2; do
        # The one-pass loop of 2-byte elements (`mla` on 16-bit lanes) whose residual is one
        # sub-plane: a 32-byte load per sub-plane and one for the queue, a narrowing per
        # sub-plane of codes.
        pass=$(per_element "$arm" aarch64 "$cpu" 16 ranked_chunk_neon 0 tbx cmeq 'mla.*8h=4' \
            "^uzp1=$subs" "^ld[pr]\s+q=$((subs + 2))")
        printf 'NEON %-12s codes of %s sub-plane(s): %s + h32 %s = %.3f cycles/element\n' \
            "$cpu" "$subs" "$pass" "$h32" "$(python3 -c "print($pass + $h32)")"
    done
done
for subs in 1 2; do
    # The AVX2 one-pass loop of bf16 as bytes (`ranked_chunk_avx2`), checksum in registers:
    # 12 shifts per 128 elements for the residual's words and 8 more per sub-plane of codes, and
    # 16 `vpmulld` (two per 32 bytes hashed). The compiler unrolls the one-sub-plane loop to 128
    # elements an iteration and the two-sub-plane loop to 64.
    elements=$((subs == 1 ? 128 : 64))
    c=$(per_element "$x86" x86_64 znver4 "$elements" ranked_chunk_avx2 0 \
        vpunpcklbw vpmovmskb vpblendvb "^vpmulld=$((elements / 8))" \
        "^vpsrlw=$(((12 + 8 * subs) * elements / 128))")
    printf 'AVX2 %-12s codes of %s sub-plane(s): %s cycles/element\n' znver4 "$subs" "$c"
done
