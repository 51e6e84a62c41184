#!/usr/bin/env bash
# Builds the firmware, runs it on an emulated Cortex-M4F (QEMU mps2-an386) and prints one line:
#   cortex-m4f: decoded N elements ok; flash K bytes (code C), ram R bytes, peak stack S bytes, frame F
# N: elements decoded by the streaming decoder and checked against the host digests (40,000 per
# stream, six streams: bf16, fp16, fp32, ranked and groups; each also decoded one-shot, and
# refused with a flipped bit and cut short). flash, code and ram come from the ELF's section
# headers: flash = .vector_table + .text + .rodata + .data (the compressed weights are in
# .rodata), code = .vector_table + .text, ram = .data + .bss + .uninit (the ping-pong buffers).
# S: the peak stack, measured by painting it, decoders included (they live on the stack of the
# function that decodes). F: elements per frame, ENEC_FRAME (default 4096).
#
#   bash examples/cortex-m/run.sh              # build, run, print the line; non-zero on failure
#   ENEC_FRAME=1024 bash examples/cortex-m/run.sh
#   bash examples/cortex-m/run.sh --self-test  # a wrong digest must make the firmware fail
#
# Installs what it needs: the rustup target, and qemu-system-arm through apt where missing.
set -euo pipefail
cd "$(dirname "$0")"

target=thumbv7em-none-eabihf
# Wherever cargo puts its output (CARGO_TARGET_DIR, build.target-dir): cargo says where.
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
elf=$target_dir/$target/release/enec-cortex-m
qemu=(qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic
    -semihosting-config enable=on,target=native -kernel "$elf")

if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
if ! command -v qemu-system-arm >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-arm
fi
if ! qemu-system-arm -machine help | grep -q '^mps2-an386 '; then
    echo "cortex-m4f: this QEMU ($(qemu-system-arm --version | head -1)) lacks the mps2-an386 machine" >&2
    exit 1
fi

# Builds the firmware and runs it under QEMU with a time limit; the log goes to $log.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
build_and_run() {
    cargo build --release --quiet
    timeout 120 "${qemu[@]}" >"$log" 2>&1
}

if [[ "${1:-}" == --self-test ]]; then
    # The digest of one stream is stored wrong: the firmware must notice and exit with 1.
    status=0
    ENEC_SELFTEST_WRONG_DIGEST=1 build_and_run || status=$?
    # Rebuild the real firmware, so that the next plain run does not find the broken one.
    cargo build --release --quiet
    if [[ $status == 1 ]] && grep -q 'FAILED: streaming decode matches the host digest' "$log" \
        && grep -q 'FAILED: one-shot decode matches the host digest' "$log"; then
        echo "cortex-m4f self-test: a wrong digest fails the firmware (exit status 1), as it must"
        exit 0
    fi
    cat "$log"
    echo "cortex-m4f self-test: a wrong digest did not fail the firmware (exit status $status)" >&2
    exit 1
fi

status=0
build_and_run || status=$?
sed 's/^/  /' "$log"
if [[ $status != 0 ]]; then
    echo "cortex-m4f: FAILED (QEMU exit status $status; 124: over the time limit)" >&2
    exit 1
fi

# The firmware's last line: enec-firmware: elements=N peak_stack=S frame=F failures=0
read -r elements stack frame failures < <(sed -n \
    's/^enec-firmware: elements=\([0-9]*\) peak_stack=\([0-9]*\) frame=\([0-9]*\) failures=\([0-9]*\)$/\1 \2 \3 \4/p' \
    "$log")
if [[ -z "${failures:-}" || $failures != 0 ]]; then
    echo "cortex-m4f: FAILED (no clean result line from the firmware)" >&2
    exit 1
fi

# Section sizes from the ELF32 section headers.
read -r flash code ram < <(python3 - "$elf" <<'EOF'
import struct, sys

data = open(sys.argv[1], "rb").read()
assert data[:4] == b"\x7fELF" and data[4] == 1, "not an ELF32 file"
shoff, = struct.unpack_from("<I", data, 0x20)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
headers = [struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
strtab = headers[shstrndx][4]
def name(h):
    start = strtab + h[0]
    return data[start:data.index(b"\0", start)].decode()
size = {name(h): h[5] for h in headers}
get = lambda *names: sum(size.get(n, 0) for n in names)
print(get(".vector_table", ".text", ".rodata", ".data"), get(".vector_table", ".text"),
      get(".data", ".bss", ".uninit"))
EOF
)

echo "cortex-m4f: decoded $elements elements ok; flash $flash bytes (code $code), ram $ram bytes, peak stack $stack bytes, frame $frame"
