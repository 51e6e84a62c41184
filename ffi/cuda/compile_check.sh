#!/usr/bin/env bash
# nvcc on the CPU-only CI: compiles src/enec_cuda.cu, src/loader.cpp, tests/cross_check.cu and bench/bench.cu
# (without nvCOMP) for sm_80 and sm_90, and fails on any warning: nvcc's front end
# (-Werror all-warnings), the host compiler (-Wall -Wextra -Werror), ptxas (register spills
# included). Prints every kernel's registers, stack frame, spills and static shared memory (ptxas -v).
# nvcc comes from PyPI, pinned, in a virtualenv that is kept and reused:
#   bash ffi/cuda/compile_check.sh     # logs and objects in ffi/cuda/build/nvcc
# Environment: ENEC_NVCC_VENV (the virtualenv), ENEC_CUDA_NVCC_BUILD (the build folder).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${ENEC_CUDA_NVCC_BUILD:-$HERE/build/nvcc}
start=$SECONDS

# nvidia-cuda-nvcc: nvcc, ptxas, cudafe++, fatbinary, nvlink; it pulls nvidia-cuda-crt (the crt/
# headers) and nvidia-nvvm (cicc, libdevice), pinned here too. nvidia-cuda-runtime:
# cuda_runtime.h and the other toolkit headers, libcudart. nvidia-cuda-cccl: libcu++/CUB/Thrust,
# and <nv/target>, which cuda_fp16.h and cuda_bf16.h include. About 370 MB installed.
PKGS=(nvidia-cuda-nvcc==13.5.37 nvidia-cuda-crt==13.5.37 nvidia-nvvm==13.5.37
  nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6)
VENV=${ENEC_NVCC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/enec-nvcc-13.5.37}
# .enec-packages: what this script installed there (a pin changed or an install cut short:
# made anew). A folder without it is not this script's, and is left alone.
if [[ -e $VENV && ! -f $VENV/.enec-packages ]]; then
  echo "compile_check: $VENV exists and was not made by this script" >&2
  exit 1
fi
if [[ ! -f $VENV/.enec-packages || "$(cat "$VENV/.enec-packages")" != "${PKGS[*]}" ]]; then
  echo "compile_check: installing ${PKGS[*]} into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  echo installing > "$VENV/.enec-packages"
  "$VENV/bin/python" -m pip install --quiet --no-cache-dir "${PKGS[@]}"
  echo "${PKGS[*]}" > "$VENV/.enec-packages"
fi
NVCC=("$VENV"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)
NVCC=${NVCC[0]}
[[ -x $NVCC ]] || { echo "compile_check: no nvcc in $VENV" >&2; exit 1; }
"$NVCC" --version | tail -1

# -Werror all-warnings also makes ptxas's warnings errors; -warn-spills adds one for any spill.
# Not -warn-lmem-usage: encode_kernel keeps small dynamically indexed arrays in local memory
# (its stack frame is in the table below).
FLAGS=(-O3 -std=c++17
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
  -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -Xptxas -v,-warn-spills,-Werror)
mkdir -p "$BUILD"
rm -f "$BUILD"/{enec_cuda,cross_check,bench,loader}.{o,log}
compile() { # name source [flags]
  local name=$1 src=$2
  shift 2
  "$NVCC" "${FLAGS[@]}" "$@" -c "$src" -o "$BUILD/$name.o" > "$BUILD/$name.log" 2>&1
}
# The three files in parallel; enec_cuda.cu (the kernels: most of the time) runs its two
# architectures' device passes in parallel too. Output of ptxas -v stays one block per kernel.
compile enec_cuda "$HERE/src/enec_cuda.cu" --threads 2 &
p1=$!
compile cross_check "$HERE/tests/cross_check.cu" &
p2=$!
compile bench "$HERE/bench/bench.cu" &
p3=$!
compile loader "$HERE/src/loader.cpp" &
p4=$!
failed=()
for job in enec_cuda:$p1 cross_check:$p2 bench:$p3 loader:$p4; do
  wait "${job#*:}" || failed+=("${job%%:*}")
done

# Registers, stack frame, spills and shared memory of every kernel, per architecture.
echo "arch   regs stack spill-st spill-ld  smem  kernel"
for name in enec_cuda cross_check bench; do
  awk -F"'" '
    /Compiling entry function/ { fn = $2; arch = $4 }
    /bytes stack frame/ { split($0, w, " "); stack = w[1]; sst = w[5]; sld = w[9] }
    /ptxas info *: Used [0-9]+ registers/ {
      match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
      smem = 0
      if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH - 11)
      printf "%-6s %4s %5s %8s %8s %5s  %s\n", arch, regs, stack, sst, sld, smem, fn
    }' "$BUILD/$name.log"
done | c++filt | sed 's/(.*//; s/  void /  /'

# Belt and braces: a warning that no -Werror turned into an error fails the check too.
for name in enec_cuda cross_check bench loader; do
  if grep -qi 'warning' "$BUILD/$name.log" && [[ " ${failed[*]} " != *" $name "* ]]; then
    failed+=("$name")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  for name in "${failed[@]}"; do
    echo "--- $name: errors and warnings (full log: $BUILD/$name.log)"
    grep -vE '^ptxas info|^ +[0-9]+ bytes stack frame' "$BUILD/$name.log" | head -60
  done
  echo "compile_check: FAILED: ${failed[*]} ($((SECONDS - start)) s)" >&2
  exit 1
fi
echo "compile_check: enec_cuda.cu, loader.cpp, cross_check.cu, bench.cu for sm_80 and sm_90: no warnings ($((SECONDS - start)) s)"
