#!/usr/bin/env bash
# CI for ffi/: the C ABI crate, its generated header, and the C example.
#   bash ffi/ci.sh        (from anywhere; installs cbindgen if it is missing)
# The AscendC kernels are checked by `cargo test --release` (tests/ascendc.rs, on the CPU model).
set -euxo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR_FFI:-$ROOT/ffi/capi/target}"

CBINDGEN_VERSION=0.29.4
if ! cbindgen --version 2>/dev/null | grep -q "$CBINDGEN_VERSION"; then
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked
fi

# The C ABI crate: lint, unit tests, release build (staticlib + cdylib).
(cd ffi/capi && cargo fmt --check && cargo clippy --release --all-targets -- -D warnings && cargo test --release)
cargo build --release --manifest-path ffi/capi/Cargo.toml

# The committed header must be exactly what cbindgen generates from the crate.
GENERATED=$(mktemp)
trap 'rm -f "$GENERATED"' EXIT
cbindgen --quiet --config ffi/capi/cbindgen.toml --crate enec-capi --output "$GENERATED" ffi/capi
if ! diff -u ffi/include/enec.h "$GENERATED"; then
    echo "ffi/include/enec.h is stale: regenerate it with" >&2
    echo "  cbindgen --config ffi/capi/cbindgen.toml --crate enec-capi --output ffi/include/enec.h ffi/capi" >&2
    exit 1
fi

# The C example: build, then compress / decompress / round-trip a real file.
make -C examples/c check OUT="$CARGO_TARGET_DIR/c-example"
