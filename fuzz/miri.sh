#!/usr/bin/env bash
# Miri (Rust's undefined-behaviour checker) over enec's unit tests and a subset of the
# integration tests. Installs the Miri component of the nightly toolchain if missing.
#
#   bash fuzz/miri.sh           # everything below: about 45 minutes on one core
#   bash fuzz/miri.sh kernels   # only the AVX2 kernels' own tests (step 2's last command,
#                               # what CI runs): about 23 minutes
#
# Miri interprets, roughly 1000x slower than native code.
set -euxo pipefail
cd "$(dirname "$0")/.."

if ! cargo +nightly miri --version >/dev/null 2>&1; then
    rustup +nightly component add miri rust-src
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/miri}"
avx2="-C target-feature=+avx2,+bmi1,+bmi2,+lzcnt,+popcnt"

if [ "${1:-}" = kernels ]; then
    RUSTFLAGS="$avx2" cargo +nightly miri test --features std --lib -- simd::tests
    exit 0
fi

# 1. The unit tests, on the no_std core as it ships (default features). Two tests parse
#    thousands of damaged or random containers (10 and more than 25 minutes under Miri);
#    `cargo test`, tests/corruption.rs and the `container` fuzz target cover them natively.
cargo +nightly miri test --lib -- \
    --skip container::tests::arbitrary_flips_never_panic \
    --skip container::tests::random_bytes_never_panic

# 2. With `std` and the AVX2 target features enabled at compile time, so that the run-time
#    dispatch takes its `unsafe` path into the AVX2 compilation of the kernels (src/frame/dispatch.rs):
#    the corruption checks on small streams of every dtype and coding.
#    Then the AVX2 kernels' own tests against the portable kernels (src/simd/tests.rs).
RUSTFLAGS="$avx2" cargo +nightly miri test --features std --test corruption -- small_streams_sampled
RUSTFLAGS="$avx2" cargo +nightly miri test --features std --lib -- simd::tests

# 3. The regression tests that need no external tools.
cargo +nightly miri test --test regressions -- \
    groups_frame_helper_is_valid decode_frame_rejects_more_than_max_frame_len_elements
