#!/usr/bin/env bash
# The CUDA kernels' cross-checks on the CPU model (sim/cuda_sim.h), for the CPU-only CI: the
# inputs are written by the Rust encoder (gen/), the kernels are compiled as C++ with
# -DENEC_SIM, and every check of tests/cross_check.cu runs except those on the 45 MB corpus.
# So the CUDA port cannot drift from the format unnoticed on a machine without nvcc.
#   bash ffi/cuda/sim_check.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${ENEC_CUDA_SIM_BUILD:-$HERE/build/sim}
DATA=$BUILD/data
CXX=${CXX:-g++}
mkdir -p "$BUILD"

# Fresh inputs from this checkout's encoder: stale inputs would test the kernels against an
# older encoder.
rm -rf "$DATA"
cargo run --quiet --release --manifest-path "$HERE/gen/Cargo.toml" -- small "$DATA"

"$CXX" -std=c++17 -O2 -DENEC_SIM -U_FORTIFY_SOURCE -I"$HERE" \
  -x c++ "$HERE/tests/cross_check.cu" -x c++ "$HERE/src/enec_cuda.cu" -x c++ "$HERE/src/loader.cpp" \
  -o "$BUILD/cross_check" -lpthread

"$BUILD/cross_check" "$ROOT" "$DATA" --skip-large > "$BUILD/cross_check.txt" 2>&1 || {
  grep -v '^PASS' "$BUILD/cross_check.txt" | tail -40
  echo "CUDA cross-checks on the CPU model FAILED (log: $BUILD/cross_check.txt)" >&2
  exit 1
}
grep -E '^cross-checks:' "$BUILD/cross_check.txt"
