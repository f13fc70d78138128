#!/usr/bin/env bash
# install.sh - the action's first step: make `sluice` callable by the next
# steps. A sluice on PATH is used as it is (a self-hosted runner, an image
# with sluice). Otherwise the source to build from is SLUICE_SOURCE (the
# source input, relative to the workspace) or the one this action came with,
# and its version (CMakeLists.txt's project()) picks the runner's tool cache
# entry, as GitHub's own setup actions lay it out:
# $RUNNER_TOOL_CACHE/sluice/VERSION/ARCH, complete once ARCH.complete is
# there. A cached sluice of another version is never used. With
# SLUICE_INSTALL=auto a missing entry is built: the client alone (libsluice
# and the command: cmake -DSLUICE_CLIENT_ONLY=ON), its Debian packages
# installed first when missing (apt-get: Linux runners).
set -euo pipefail

add_path() { echo "$1" >> "${GITHUB_PATH:?GITHUB_PATH is set by the runner}"; }
fail() { echo "::error::$*"; exit 1; }

if command -v sluice >/dev/null 2>&1; then
    echo "using $(command -v sluice) ($(sluice --version))"
    exit 0
fi
[ "${SLUICE_INSTALL:-auto}" = auto ] \
    || fail "sluice is not on PATH and install is '${SLUICE_INSTALL}': install sluice on the runner, or set install: auto"

if [ -n "${SLUICE_SOURCE:-}" ]; then
    case $SLUICE_SOURCE in
        /*) src=$SLUICE_SOURCE ;;
        *) src=${GITHUB_WORKSPACE:-$PWD}/$SLUICE_SOURCE ;;
    esac
    [ -f "$src/CMakeLists.txt" ] \
        || fail "source: no sluice source at $src (no CMakeLists.txt): give the directory of a sluice checkout"
else
    src="$(cd "${GITHUB_ACTION_PATH:?}/../.." && pwd)"
    # A copy of the action alone (./.github/actions/sluice) has no source
    # next to it: docs/integrations/github-actions.md, "A copy in your
    # repository".
    [ -f "$src/CMakeLists.txt" ] \
        || fail "this copy of the action has no sluice source to build from (looked in $src): check sluice's source out and give its directory as source:, or install sluice on the runner"
fi
version=$(sed -n 's/^project(sluice VERSION \([0-9A-Za-z.+-]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no project(sluice VERSION ...) in $src/CMakeLists.txt: is it sluice's source?"
arch=${RUNNER_ARCH:-$(uname -m)}
arch=${arch,,}
case $arch in x86_64 | amd64) arch=x64 ;; aarch64) arch=arm64 ;; esac
cache="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/sluice/$version"
prefix="$cache/$arch"

if [ -f "$cache/$arch.complete" ] && [ -x "$prefix/bin/sluice" ]; then
    have=$("$prefix/bin/sluice" --version 2>/dev/null || true)
    if [ "$have" = "sluice $version" ]; then
        echo "using $prefix/bin/sluice ($have, from the tool cache)"
        add_path "$prefix/bin"
        exit 0
    fi
    echo "the tool cache's $prefix/bin/sluice says '$have', not 'sluice $version': building again"
fi

packages=(cmake gcc make pkg-config libcurl4-openssl-dev libjansson-dev libyaml-dev)
missing=()
for p in "${packages[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 \
        || fail "building sluice needs ${missing[*]} and this runner has no apt-get (install: auto builds on Linux runners with apt-get only): install sluice on the runner"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing ${missing[*]}"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

build="${RUNNER_TEMP:-/tmp}/sluice-build"
rm -f "$cache/$arch.complete"
cmake -S "$src" -B "$build" -DSLUICE_CLIENT_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
cmake --install "$build" --prefix "$prefix" >/dev/null
touch "$cache/$arch.complete"
echo "built $("$prefix/bin/sluice" --version) into $prefix"
add_path "$prefix/bin"
