#!/usr/bin/env bash
# The NEON kernels on an emulated aarch64 CPU (QEMU user mode): cross-compiles for
# aarch64-unknown-linux-gnu and runs, under qemu-aarch64, the tests that compare them with the
# portable kernels (the unit tests of src/simd/, tests/dispatch.rs), the kernels' own tests
# (tests/kernels.rs) and the golden files of format v1 (tests/golden.rs); first clippy on the
# aarch64 build, the only one that compiles src/simd/aarch64/. A few minutes.
#
#   bash tests/aarch64.sh
#
# Installs what it needs where missing: the rustup target, and through apt qemu-user and the
# aarch64 cross gcc (the linker) with its C library (which QEMU loads the test binaries with).
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
sysroot=/usr/aarch64-linux-gnu

if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null \
    || [[ ! -e $sysroot/lib/ld-linux-aarch64.so.1 ]]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $sysroot"
# The comparisons must see the NEON kernels, whatever the caller's environment says.
unset ENEC_PORTABLE

cargo clippy --all-targets --target "$target" -- -D warnings
# Release (the shipped code), then with debug assertions: the standard library's checks of
# unsafe preconditions catch out-of-bounds vector reads that happen to pass in release builds.
for profile in --release ""; do
    # shellcheck disable=SC2086  # an empty profile is no argument
    cargo test $profile --target "$target" --lib simd::
    # shellcheck disable=SC2086
    cargo test $profile --target "$target" --test dispatch --test kernels --test golden
done
