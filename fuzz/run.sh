#!/usr/bin/env bash
# Builds and runs the cargo-fuzz targets for SECONDS each (default 30), one after another, and
# reports at the end what each found and how fast it ran. Exits non-zero if any target found a
# crash, panic, sanitizer report, leak, timeout or memory blow-up; the failing inputs are in
# fuzz/artifacts/TARGET/.
#
#   bash fuzz/run.sh [OPTIONS] [SECONDS] [TARGET...]
#
#   -c DIR     corpora in DIR/TARGET (default fuzz/corpus; ignored by git), seeded from
#              fuzz/seeds/ on every run
#   -m         minimise each target's corpus (cargo fuzz cmin) after its run
#   -r ROUNDS  go over the targets ROUNDS times (default 1; 0: until interrupted). With more
#              than one round, a target keeps going past its findings (libFuzzer -fork=1
#              -ignore_crashes -ignore_timeouts -ignore_ooms) and every round is reported
#
#   bash fuzz/run.sh 12                            # CI: every target 12 s
#   bash fuzz/run.sh -c /data/enec-corpus -m -r 0 1800   # unattended: 30 min a target, forever
#   bash fuzz/run.sh 600 decode                    # one target, 10 minutes
#
# Ctrl-C (or SIGTERM) stops the run and still prints the report. Installs what it needs: the
# nightly toolchain (only if missing) and cargo-fuzz (if missing).
# Environment: FUZZ_NICE (niceness of the build and the runs, default 10).
set -euo pipefail
cd "$(dirname "$0")"

corpus_root=corpus
minimise=0
rounds=1
while getopts "c:mr:" opt; do
    case "$opt" in
        c) corpus_root="$OPTARG" ;;
        m) minimise=1 ;;
        r) rounds="$OPTARG" ;;
        *) sed -n '2,22p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
secs="${1:-30}"
shift || true
nice_level="${FUZZ_NICE:-10}"
case "$corpus_root" in /*) ;; *) corpus_root="$PWD/$corpus_root" ;; esac

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
        *) echo "seeds/$1" ;;
    esac
}
max_len_of() {
    case "$1" in
        roundtrip | stream_split | ascendc_diff | wrapped | zero_copy | io_decode | io_encode) echo 16384 ;;
        *) echo 65536 ;;
    esac
}

# Findings already there before this run are not reported as new.
findings() {
    # A fresh checkout has no artifacts folder yet: no findings. Slow units are no finding: on
    # a loaded machine any input can pass libFuzzer's 10 s report threshold (timeouts count).
    [[ -d artifacts ]] || return 0
    find artifacts -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
        -o -name 'leak-*' \) 2>/dev/null | sort
}
before=$(mktemp)
findings >"$before"
report=$(mktemp)
trap 'rm -f "$before" "$report"' EXIT

print_report() {
    echo
    echo "=== fuzz report ==="
    column -t -s $'\t' "$report" 2>/dev/null || cat "$report"
    local new
    new=$(findings | comm -13 "$before" -)
    if [ -n "$new" ]; then
        echo "new findings (reproduce: cargo +nightly fuzz run TARGET FILE):"
        echo "$new" | sed 's/^/  fuzz\//'
        status=1
    else
        echo "no new findings"
    fi
}
interrupted=0
trap 'interrupted=1' INT TERM

printf 'round\ttarget\tseconds\truns\truns/s\tresult\n' >"$report"
status=0
round=0
while [ "$rounds" -eq 0 ] || [ "$round" -lt "$rounds" ]; do
    round=$((round + 1))
    for t in "${targets[@]}"; do
        [ "$interrupted" -eq 0 ] || break 2
        corpus="$corpus_root/$t"
        mkdir -p "$corpus" "artifacts/$t"
        seeds=$(seeds_of "$t")
        [ -d "$seeds" ] || seeds=""
        echo "=== round $round: fuzz target $t: ${secs}s ==="
        # -timeout: one input running longer than 10 s is a finding (decoding time must be
        # bounded by input and output size). -rss_limit_mb: a runaway allocation is one too.
        keep_going=()
        if [ "$rounds" -ne 1 ]; then
            keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
        fi
        log="artifacts/$t/last-run.log"
        set +e
        nice -n "$nice_level" cargo +nightly fuzz run "$t" "$corpus" $seeds -- \
            -max_total_time="$secs" -dict=enec.dict -timeout=10 -rss_limit_mb=2048 \
            -max_len="$(max_len_of "$t")" -print_final_stats=1 "${keep_going[@]}" \
            >"$log" 2>&1
        rc=$?
        set -e
        runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)
        if [ -z "$runs" ]; then
            # fork mode: the last status line counts the runs of all jobs.
            runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
        fi
        runs=${runs:-0}
        grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::number_of_executed_units|^Done [0-9]+ runs' "$log" || true
        result=ok
        if [ "$interrupted" -eq 1 ]; then
            result=interrupted
        elif [ "$rc" -ne 0 ] || grep -qE '^==[0-9]+== ?ERROR|panicked at' "$log"; then
            tail -n 60 "$log" >&2
            echo "*** fuzz target $t FAILED (exit $rc); input and log in fuzz/artifacts/$t/" >&2
            result="FAILED (exit $rc)"
            status=1
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$t" "$secs" "$runs" "$((runs / (secs > 0 ? secs : 1)))" "$result" >>"$report"
        if [ "$minimise" -eq 1 ] && [ "$interrupted" -eq 0 ]; then
            echo "--- minimising $corpus"
            nice -n "$nice_level" cargo +nightly fuzz cmin "$t" "$corpus" -- \
                -max_len="$(max_len_of "$t")" -timeout=10 -rss_limit_mb=2048 \
                >"artifacts/$t/last-cmin.log" 2>&1 || echo "(cmin of $t failed: see fuzz/artifacts/$t/last-cmin.log)"
            echo "    $(find "$corpus" -type f | wc -l) inputs left"
        fi
    done
done
print_report
exit "$status"
