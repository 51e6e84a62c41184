#!/usr/bin/env bash
# Checks that every name in ffi/README.md's table "How the kernels map to the Rust kernel
# functions" exists: the first column's in the Rust sources (src/), the second's in the AscendC
# kernels (ffi/ascendc/kernel/). A renamed or removed function fails here rather than leaving the
# table stale.
#
# usage: bash ffi/check_readme.sh [README]    (run from anywhere; README defaults to ffi/README.md)
# Names are the `backquoted` identifiers of the two columns; `Type::name` needs both the type and
# a function `name`; anything that is not an identifier (`table[rank]`, a file name) is prose.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
readme="${1:-$root/ffi/README.md}"
rust_src="$root/src"
asc_src="$root/ffi/ascendc/kernel"

# The table: the lines starting with '|' after the section heading, up to the first other line.
table=$(awk '/^## How the kernels map to the Rust kernel functions/ { in_section = 1; next }
             in_section && /^\|/ { in_table = 1; print; next }
             in_table { exit }' "$readme" | tail -n +3)
if [ -z "$table" ]; then
    echo "check_readme: no mapping table found in $readme" >&2
    exit 1
fi

# Backquoted identifiers (optionally Type::name) of one cell.
names() { grep -oE '`[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)?`' <<<"$1" | tr -d '`' || true; }

rust_has() { # NAME, or TYPE::NAME: a `fn NAME` inside an `impl` (or `trait`) block of TYPE
    local type="${1%::*}" fn="${1##*::}"
    if [ "$type" != "$1" ]; then
        find "$rust_src" -name '*.rs' -exec cat {} + | awk -v T="$type" -v F="$fn" '
            /^(pub(\([a-z]+\))? )?(impl|trait)[^A-Za-z0-9_]/ {
                head = $0; sub(/\{.*$/, "", head)
                if (head ~ / for /) sub(/.* for /, "", head)
                else sub(/^(pub(\([a-z]+\))? )?(impl(<[^>]*>)?|trait) /, "", head)
                in_block = (head ~ ("^" T "([^A-Za-z0-9_]|$)"))
            }
            /^}/ { in_block = 0 }
            in_block && $0 ~ ("fn " F "[^A-Za-z0-9_]") { found = 1 }
            END { exit !found }'
    else
        grep -rqE "\b(fn|struct|enum|trait|type|union) $1\b" "$rust_src"
    fi
}

asc_has() { # NAME: a class/struct, or a name followed by '(' (a function or a call);
           # TYPE::NAME: such a NAME inside the class or struct TYPE (up to its closing "};")
    local type="${1%::*}" fn="${1##*::}"
    if [ "$type" != "$1" ]; then
        cat "$asc_src"/*.h "$asc_src"/*.cpp | awk -v T="$type" -v F="$fn" '
            $0 ~ ("^(class|struct) " T "([^A-Za-z0-9_]|$)") { in_block = 1 }
            in_block && /^};/ { in_block = 0 }
            in_block && $0 ~ ("(^|[^A-Za-z0-9_])" F "[[:space:]]*\\(") { found = 1 }
            END { exit !found }'
    else
        grep -rqE "\b(class|struct) $fn\b|\b$fn[[:space:]]*\(" "$asc_src"
    fi
}

missing=0 checked=0
while IFS= read -r row; do
    rust_cell=$(cut -d'|' -f2 <<<"$row")
    asc_cell=$(cut -d'|' -f3 <<<"$row")
    rust_names=$(names "$rust_cell")
    asc_names=$(names "$asc_cell")
    # "same names in `KernelEncode`": the Rust names must exist on the AscendC side too.
    if grep -q 'same names' <<<"$asc_cell"; then
        asc_names="$asc_names"$'\n'"$rust_names"
    fi
    for n in $rust_names; do
        checked=$((checked + 1))
        rust_has "$n" || { echo "ffi/README.md names Rust \`$n\`, which is not in src/" >&2; missing=1; }
    done
    for n in $asc_names; do
        checked=$((checked + 1))
        asc_has "$n" || { echo "ffi/README.md names AscendC \`$n\`, which is not in ffi/ascendc/kernel/" >&2; missing=1; }
    done
done <<<"$table"

if [ "$missing" -ne 0 ]; then
    exit 1
fi
echo "ffi/README.md mapping table: all $checked names exist"
