#!/usr/bin/env bash
# http_pure.sh - fail if the HTTP layer (src/http) reaches up into a layer
# above it (docs/design.md: dependencies point down only; server -> http).
#
# Checks every .c and .h under src/http for
#   - a quoted #include "x.h" that is not a file of src/http itself;
#   - any #include naming a header of src/server, src/engine or src/store
#     (by path or by file name), or the libraries only those layers use:
#     <jansson.h>, <sqlite3.h>, <libpq-fe.h>.
# Comments and string literals are ignored (strip_c.awk).
#
# Usage: tests/lint/http_pure.sh [repo-root]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${1:-$(cd "$here/../.." && pwd)}
cd "$root"

if [ ! -d src/http ]; then
    echo "http_pure.sh: no src/http directory under $root" >&2
    exit 2
fi

mapfile -t files < <(find src/http -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
if [ "${#files[@]}" -eq 0 ]; then
    echo "http_pure.sh: no .c or .h files under src/http, nothing to check"
    exit 0
fi

# The header names of the layers above (a same-named header in src/http
# itself, none today, would be that layer's own and is allowed).
declare -A upper=()
while IFS= read -r h; do
    name=${h##*/}
    [ -e "src/http/$name" ] || upper[$name]=$h
done < <(find src/server src/engine src/store -type f -name '*.h' 2>/dev/null)
upper[jansson.h]='jansson (the server'"'"'s JSON)'
upper[sqlite3.h]='SQLite (the store)'
upper[libpq-fe.h]='libpq (the store)'

status=0
while IFS=: read -r f l rest; do
    [[ $rest =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\<\"])([^\>\"]+)[\>\"] ]] || continue
    quote=${BASH_REMATCH[1]} path=${BASH_REMATCH[2]} name=${BASH_REMATCH[2]##*/}
    close='"'; [ "$quote" = '<' ] && close='>'
    why=
    if [[ $path == *server/* || $path == *engine/* || $path == *store/* ]]; then
        why="names another layer's folder"
    elif [ -n "${upper[$name]:-}" ]; then
        why="is ${upper[$name]}"
    elif [ "$quote" = '"' ] && [ ! -e "src/http/$path" ]; then
        why="is not a file of src/http"
    fi
    if [ -n "$why" ]; then
        printf '  %s:%s: #include %s%s%s (%s)\n' "$f" "$l" "$quote" "$path" "$close" "$why"
        status=1
    fi
done < <(awk -f "$here/strip_c.awk" "${files[@]}")

if [ "$status" -ne 0 ]; then
    echo "http_pure.sh: src/http knows nothing of locks: it may include only its own headers" \
         "and system libraries, never src/server, src/engine or src/store (docs/design.md)"
    exit 1
fi
echo "http_pure.sh: ${#files[@]} files under src/http checked, no include of a layer above"
