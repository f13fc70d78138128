#!/usr/bin/env bash
# banned.sh - fail if any C file under src/ calls a function we ban.
#
# These either cannot be bounded (strcpy, strcat, sprintf, vsprintf, gets),
# cannot report errors (atoi, atol, atoll, atof) or keep hidden state
# (strtok). Use snprintf / memcpy with a known length / strtol, strtoull,
# strtod with an end pointer and errno / strtok_r or a hand-written scanner.
# Comments and string literals are ignored.
#
# Usage: tests/lint/banned.sh [repo-root]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${1:-$(cd "$here/../.." && pwd)}
cd "$root"

if [ ! -d src ]; then
    echo "banned.sh: no src/ directory under $root" >&2
    exit 2
fi

mapfile -t files < <(find src -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
if [ "${#files[@]}" -eq 0 ]; then
    echo "banned.sh: no .c or .h files under src/, nothing to check"
    exit 0
fi

banned='strcpy|strcat|sprintf|vsprintf|gets|atoi|atol|atoll|atof|strtok'
# file:line:code, where the name is a whole word followed by "(".
pattern="^[^:]+:[0-9]+:(.*[^A-Za-z0-9_])?($banned)[[:space:]]*\\("

# Prints file:line: and the original source line for each file:line:... hit.
show() {
    local f l rest
    while IFS=: read -r f l rest; do
        printf '  %s:%s: %s\n' "$f" "$l" "$(sed -n "${l}{s/^[[:space:]]*//;p;}" "$f")"
    done
}

stripped=$(awk -f "$here/strip_c.awk" "${files[@]}")
set +e
hits=$(printf '%s\n' "$stripped" | grep -E -- "$pattern")
rc=$?
set -e
if [ "$rc" -gt 1 ]; then
    echo "banned.sh: grep failed" >&2
    exit 2
fi

if [ -n "$hits" ]; then
    echo "banned.sh: banned function calls in src/ (comments and strings ignored):"
    printf '%s\n' "$hits" | show
    echo "banned.sh: $(printf '%s\n' "$hits" | wc -l) offending line(s); banned: ${banned//|/, }"
    exit 1
fi
echo "banned.sh: ${#files[@]} files under src/ checked, no banned calls (${banned//|/, })"
