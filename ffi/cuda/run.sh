#!/usr/bin/env bash
# Builds the enec CUDA kernels, runs the cross-checks against the Rust encoder, the benchmark
# (nvCOMP rows when its library is present), the torch example and an Nsight Compute profile of
# the decode and encode kernels. Run it on the GPU machine:
#
#   ffi/cuda/run.sh [--no-bench] [--no-ncu] [--no-python]
#
# Needs: nvcc (CUDA 12.x/13.x), an sm_90 GPU (ENEC_CUDA_ARCH=sm_XX for another), the inputs made
# by ffi/cuda/gen in ffi/cuda/data (README.md), and for the nvCOMP rows ffi/cuda/nvcomp (the
# unpacked nvidia-libnvcomp-cu13 6.0.0.12 wheel). Logs go to $ENEC_CUDA_LOG (default ffi/cuda/build).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$HERE"
DATA=${ENEC_CUDA_DATA:-$HERE/data}
ARCH=${ENEC_CUDA_ARCH:-sm_90}
NVCC=${NVCC:-nvcc}
LOG=${ENEC_CUDA_LOG:-$HERE/build}
TILES=${ENEC_CUDA_TILES:-24}
ITERS=${ENEC_CUDA_ITERS:-10}
BENCH=1 NCU=1 PY=1
for a in "$@"; do
  case $a in
    --no-bench) BENCH=0 ;;
    --no-ncu) NCU=0 ;;
    --no-python) PY=0 ;;
  esac
done
mkdir -p build "$LOG"
failed=()
step() { echo; echo "=== $* ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader || true
$NVCC --version | tail -2

# nvCOMP from the pip wheel nvidia-libnvcomp-cu13==6.0.0.12 (README.md: how nvcomp/ is made).
NVCOMP=${ENEC_NVCOMP:-$HERE/nvcomp}
if [ -f "$NVCOMP/libnvcomp.so.6.xz" ] && [ ! -f "$NVCOMP/lib/libnvcomp.so.6" ]; then
  mkdir -p "$NVCOMP/lib"
  xz -dc "$NVCOMP/libnvcomp.so.6.xz" > "$NVCOMP/lib/libnvcomp.so.6" 2>/dev/null ||
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
      "$NVCOMP/libnvcomp.so.6.xz" "$NVCOMP/lib/libnvcomp.so.6"
fi
NVC_CFLAGS="" NVC_LIBS=""
if [ -f "$NVCOMP/lib/libnvcomp.so.6" ]; then
  NVC_CFLAGS="-DENEC_WITH_NVCOMP -I$NVCOMP/include"
  ln -sf libnvcomp.so.6 "$NVCOMP/lib/libnvcomp.so"
  NVC_LIBS="-L$NVCOMP/lib -lnvcomp -Xlinker -rpath=$NVCOMP/lib"
else
  echo "nvCOMP not found under $NVCOMP: the benchmark runs without its rows"
fi

step "build ($ARCH)"
# Any warning fails the build, as in compile_check.sh (CI): nvcc, host compiler, ptxas, spills.
FLAGS="-O3 -std=c++17 -arch=$ARCH -lineinfo -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -Xptxas -warn-spills,-Werror"
$NVCC $FLAGS -Xcompiler -fPIC -Xptxas -v -c src/enec_cuda.cu -o build/enec_cuda.o 2> build/ptxas.txt &
p1=$!
$NVCC $FLAGS -c tests/cross_check.cu -o build/cross_check.o &
p2=$!
$NVCC $FLAGS $NVC_CFLAGS -c bench/bench.cu -o build/bench.o &
p3=$!
$NVCC $FLAGS -Xcompiler -fPIC -c src/loader.cpp -o build/loader.o || failed+=("build loader")
if ! wait $p1; then
  cat build/ptxas.txt
  echo "BUILD FAILED (src/enec_cuda.cu)"
  exit 1
fi
# Registers, spills and shared memory per kernel.
grep -E "Compiling entry|Used [0-9]+ registers|spill" build/ptxas.txt | sed 's/^ptxas info *: //' | paste - - - 2>/dev/null | cut -c1-300
cp build/ptxas.txt "$LOG/ptxas.txt" 2>/dev/null
command -v cuobjdump > /dev/null && cuobjdump -sass build/enec_cuda.o 2>/dev/null | gzip > "$LOG/sass.txt.gz" 
wait $p2 || failed+=("build cross_check")
wait $p3 || failed+=("build bench")
$NVCC -arch=$ARCH -shared build/enec_cuda.o build/loader.o -o build/libenec_cuda.so || failed+=("link libenec_cuda.so")
$NVCC -arch=$ARCH build/cross_check.o build/enec_cuda.o build/loader.o -o build/cross_check || failed+=("link cross_check")
$NVCC -arch=$ARCH build/bench.o build/enec_cuda.o $NVC_LIBS -o build/bench || failed+=("link bench")

step "cross-checks (GPU vs Rust encoder)"
if [ -x build/cross_check ]; then
  build/cross_check "$ROOT" "$DATA" > "$LOG/cross_check.txt" 2>&1
  rc=$?
  grep -v "^PASS" "$LOG/cross_check.txt" | tail -40
  [ $rc -eq 0 ] || failed+=("cross-checks")
fi

if [ $BENCH -eq 1 ] && [ -x build/bench ]; then
  step "benchmark (MiniLM bf16 x $TILES)"
  build/bench "$DATA/minilm" --tiles "$TILES" --iters "$ITERS" --md "$LOG/bench_table.md" 2>&1 | tee "$LOG/bench.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("benchmark checks")
fi

if [ $PY -eq 1 ] && [ -f build/libenec_cuda.so ]; then
  step "python example (torch, ctypes)"
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    want=$(awk -F'\t' '$1=="minilm_bf16" && $4=="auto" {print $8}' "$DATA/minilm/minilm.tsv")
    ENEC_CUDA_LIB=build/libenec_cuda.so python3 python/decode_torch.py \
      "$DATA/minilm/minilm_bf16.auto.f14.enec" --h32 "$want" 2>&1 | tee "$LOG/python.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("python example")
    for t in e4m3 e5m2; do  # FP8 tensors
      want=$(awk -F'\t' -v n="normal_$t" '$1==n && $3==14 && $4=="auto" {print $8}' "$DATA/manifest.tsv")
      ENEC_CUDA_LIB=build/libenec_cuda.so python3 python/decode_torch.py \
        "$DATA/normal_$t.auto.f14.enec" --h32 "$want" 2>&1 | tee -a "$LOG/python.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("python example ($t)")
    done
  else
    echo "torch with CUDA not available: python example not run"
  fi
fi

if [ $NCU -eq 1 ] && [ -x build/bench ] && command -v ncu > /dev/null; then
  step "Nsight Compute: one decode launch (ranked, checksums verified) and one encode launch"
  ncu --set full --import-source yes --clock-control none -k regex:'decode_(warp|columns)' \
    --launch-skip 1 --launch-count 1 --export "$LOG/ncu_decode" --force-overwrite \
    build/bench "$DATA/minilm" --tiles "$TILES" --profile > /dev/null 2>&1
  ncu --import "$LOG/ncu_decode.ncu-rep" > "$LOG/ncu_decode.txt" 2>&1
  # Executed instructions per SASS line, for the hot spots.
  ncu --import "$LOG/ncu_decode.ncu-rep" --page source --print-source sass --csv \
    > "$LOG/ncu_decode_sass.csv" 2>/dev/null || true
  grep -E "decode_(warp|columns)|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Dynamic Shared|Executed Ipc|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  " "$LOG/ncu_decode.txt" | head -40
  ncu --set basic --clock-control none -k regex:encode_kernel --launch-count 1 \
    build/bench "$DATA/minilm" --tiles "$TILES" --profile > "$LOG/ncu_encode.txt" 2>&1
  grep -E "encode_kernel|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Dynamic Shared" "$LOG/ncu_encode.txt" | head -30
fi

step "summary"
grep -E "^cross-checks:" "$LOG/cross_check.txt" 2>/dev/null
if [ ${#failed[@]} -eq 0 ]; then
  echo "run.sh: all steps passed"
else
  printf 'run.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
