#!/usr/bin/env bash
# Builds and runs every cargo-fuzz target for SECONDS each (default 30), one after another.
# Fails (non-zero exit) on any crash, panic, sanitizer report, leak or timeout; the failing
# input is left in fuzz/artifacts/TARGET/.
#
#   bash fuzz/run.sh [SECONDS] [TARGET...]
#
# Installs what it needs: the nightly toolchain (only if missing) and cargo-fuzz (if missing).
# Corpora grow in fuzz/corpus/TARGET (ignored by git), seeded from fuzz/seeds/.
# Environment: FUZZ_NICE (niceness of the build and the runs, default 10).
set -euo pipefail
cd "$(dirname "$0")"

secs="${1:-30}"
shift || true
nice_level="${FUZZ_NICE:-10}"

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

nice -n "$nice_level" cargo +nightly fuzz build

# Seeds and input size limit per target.
seeds_of() {
    case "$1" in
        decode | no_output_leak) echo seeds/streams ;;
        ascendc_diff) echo seeds/roundtrip ;;
        *) echo "seeds/$1" ;;
    esac
}
max_len_of() {
    case "$1" in
        roundtrip | stream_split | ascendc_diff) echo 16384 ;;
        *) echo 65536 ;;
    esac
}

status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    seeds=$(seeds_of "$t")
    [ -d "$seeds" ] || seeds=""
    echo "=== fuzz target $t: ${secs}s ==="
    # -timeout: one input running longer than 10 s is a finding (decoding time must be bounded
    # by input and output size). -rss_limit_mb: a runaway allocation is one too.
    log="artifacts/$t/last-run.log"
    set +e
    nice -n "$nice_level" cargo +nightly fuzz run "$t" "corpus/$t" $seeds -- \
        -max_total_time="$secs" -dict=enec.dict -timeout=10 -rss_limit_mb=2048 \
        -max_len="$(max_len_of "$t")" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::number_of_executed_units|^Done [0-9]+ runs' "$log" || true
    if [ "$rc" -ne 0 ]; then
        tail -n 60 "$log" >&2
        echo "*** fuzz target $t FAILED (exit $rc); input and log in fuzz/artifacts/$t/" >&2
        status=1
    fi
done
exit "$status"
