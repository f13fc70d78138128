#!/usr/bin/env bash
# engine_pure.sh - fail if the engine reaches for the OS, a clock or a
# library of another layer (DESIGN.md: "state in, decisions and events out").
#
# Checks every .c and .h under src/engine for
#   - #include of <stdio.h> (allowed only in src/engine/mem.c, which prints an
#     out-of-memory message before abort), <sys/socket.h>, <time.h>,
#     <sys/time.h>, <pthread.h>, <fcntl.h>, <unistd.h>, <sqlite3.h>,
#     <jansson.h>, <event2/...>, <curl/...>;
#   - calls of time(, clock_gettime(, gettimeofday(, fopen(, socket(.
# Comments and string literals are ignored.
#
# Usage: tests/lint/engine_pure.sh [repo-root]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${1:-$(cd "$here/../.." && pwd)}
cd "$root"

if [ ! -d src/engine ]; then
    echo "engine_pure.sh: no src/engine directory under $root" >&2
    exit 2
fi

mapfile -t files < <(find src/engine -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
if [ "${#files[@]}" -eq 0 ]; then
    echo "engine_pure.sh: no .c or .h files under src/engine, nothing to check"
    exit 0
fi

headers='stdio\.h|sys/socket\.h|time\.h|sys/time\.h|pthread\.h|fcntl\.h|unistd\.h|sqlite3\.h|jansson\.h|event2/[^>"]*|curl/[^>"]*'
include_pattern="^[^:]+:[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($headers)[>\"]"
# The one exception: mem.c may include <stdio.h> for its out-of-memory message.
allowed_pattern='^src/engine/mem\.c:[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*<stdio\.h>'
# A call is the whole word followed by "("; a member (x.time(), x->time())
# is an injected function, not the libc one.
calls='time|clock_gettime|gettimeofday|fopen|socket'
call_pattern="^[^:]+:[0-9]+:(.*[^A-Za-z0-9_.>])?($calls)[[:space:]]*\\("

# Prints file:line: and the original source line for each file:line:... hit.
show() {
    local f l rest
    while IFS=: read -r f l rest; do
        printf '  %s:%s: %s\n' "$f" "$l" "$(sed -n "${l}{s/^[[:space:]]*//;p;}" "$f")"
    done
}

stripped=$(awk -f "$here/strip_c.awk" "${files[@]}")

# grep exits 1 when nothing matches; only 2 and above is an error.
match() {
    local rc=0
    printf '%s\n' "$stripped" | grep -E -- "$1" || rc=$?
    [ "$rc" -le 1 ] || { echo "engine_pure.sh: grep failed" >&2; exit 2; }
}

bad_includes=$(match "$include_pattern" | { grep -Ev -- "$allowed_pattern" || true; })
bad_calls=$(match "$call_pattern")

status=0
if [ -n "$bad_includes" ]; then
    echo "engine_pure.sh: forbidden includes in src/engine:"
    printf '%s\n' "$bad_includes" | show
    status=1
fi
if [ -n "$bad_calls" ]; then
    echo "engine_pure.sh: forbidden calls in src/engine (comments and strings ignored):"
    printf '%s\n' "$bad_calls" | show
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "engine_pure.sh: the engine takes now_ms as a parameter and does no I/O (DESIGN.md, Layers)"
    exit 1
fi
echo "engine_pure.sh: ${#files[@]} files under src/engine checked, no OS, clock or I/O use"
