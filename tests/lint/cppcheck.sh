#!/usr/bin/env bash
# cppcheck.sh - static analysis of every C file the build compiles (src,
# tests, bench, tools: the build's compile_commands.json), failing on any
# finding. Fix what it finds; a false positive is suppressed only inline,
# on its line, with a comment saying why it is false:
#     /* why cppcheck is wrong here */
#     // cppcheck-suppress checkId
#
# Checks: cppcheck's errors, warnings, portability, performance and style,
# less three style checks that are taste, not defects: variableScope (we
# declare where it reads best, not always in the innermost block),
# constParameter and constVariable (const on locals is not required here).
# Files generated into the build tree (the embedded dashboard) and llhttp's
# sources (Debian's node-llhttp, third-party) are skipped.
#
# Usage: tests/lint/cppcheck.sh BUILD-DIR [CPPCHECK]
set -euo pipefail

build=${1:?usage: cppcheck.sh BUILD-DIR [CPPCHECK]}
cppcheck=${2:-cppcheck}
build=$(cd "$build" && pwd)

if ! command -v "$cppcheck" >/dev/null 2>&1; then
    echo "cppcheck.sh: cppcheck not found; install it: apt-get install cppcheck (or ./scripts/deps)" >&2
    exit 1
fi
if [ ! -f "$build/compile_commands.json" ]; then
    echo "cppcheck.sh: no $build/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS)" >&2
    exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# --cppcheck-build-dir is not used: a cache would let a stale result hide
# a finding. -j2: the machines have two cores.
set +e
"$cppcheck" --project="$build/compile_commands.json" -i"$build" -i/usr/share/llhttp \
    --enable=warning,style,performance,portability \
    --suppress=variableScope --suppress=constParameter --suppress=constVariable \
    --suppress=missingIncludeSystem \
    --inline-suppr --error-exitcode=3 -j2 --quiet \
    --template='{file}:{line}:{column}: {severity}: {message} [{id}]' 2>"$out" >/dev/null
rc=$?
set -e
if [ "$rc" -ne 0 ] || [ -s "$out" ]; then
    cat "$out"
    echo "cppcheck.sh: $(grep -c ': \(error\|warning\|style\|performance\|portability\): ' "$out" || true) finding(s) (cppcheck exit status $rc)"
    exit 1
fi
echo "cppcheck.sh: $("$cppcheck" --version): no findings in the files of $build/compile_commands.json"
