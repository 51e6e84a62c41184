#!/usr/bin/env bash
# CI for the Python package: lint its crate, install it into a fresh virtual environment with
# the test dependencies (numpy, ml_dtypes, safetensors, pytest; never torch, whose tests skip),
# and run its tests, the byte-identity ones against the enec tool built here.
#   bash ffi/python/ci.sh        (from anywhere)
set -euxo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

(cd ffi/python && cargo fmt --check && cargo clippy --release -- -D warnings)
cargo build --release --features cli

VENV=$(mktemp -d)
trap 'rm -rf "$VENV"' EXIT
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet ./ffi/python pytest safetensors ml_dtypes
# From another folder, so the tests import the installed package.
cd "$VENV"
ENEC_CLI="$ROOT/target/release/enec" "$VENV/bin/python" -m pytest -q "$ROOT/ffi/python/tests"
