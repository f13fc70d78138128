#!/usr/bin/env bash
# install.sh - the action's first step: make `sluice` callable by the next
# steps. A sluice on PATH (or built by an earlier job step into the tool
# cache) is used as it is. Otherwise, with SLUICE_INSTALL=auto, the client
# alone (libsluice and the command: cmake -DSLUICE_CLIENT_ONLY=ON) is built
# from the source this action came with, its Debian packages installed first
# when missing, and installed under the runner's tool cache.
set -euo pipefail

prefix="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/sluice"
add_path() { echo "$1" >> "${GITHUB_PATH:?GITHUB_PATH is set by the runner}"; }

if command -v sluice >/dev/null 2>&1; then
    echo "using $(command -v sluice) ($(sluice --version))"
    exit 0
fi
if [ -x "$prefix/bin/sluice" ]; then
    echo "using $prefix/bin/sluice ($("$prefix/bin/sluice" --version))"
    add_path "$prefix/bin"
    exit 0
fi
if [ "${SLUICE_INSTALL:-auto}" != auto ]; then
    echo "::error::sluice is not on PATH and install is '${SLUICE_INSTALL}': install sluice on the runner, or set install: auto"
    exit 1
fi

src="$(cd "${GITHUB_ACTION_PATH:?}/../.." && pwd)"
if [ ! -f "$src/CMakeLists.txt" ]; then
    echo "::error::no sluice source at $src to build from: install sluice on the runner and set install: never"
    exit 1
fi

packages=(cmake gcc make pkg-config libcurl4-openssl-dev libjansson-dev libyaml-dev)
missing=()
for p in "${packages[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing ${missing[*]}"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

build="${RUNNER_TEMP:-/tmp}/sluice-build"
cmake -S "$src" -B "$build" -DSLUICE_CLIENT_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "built $("$prefix/bin/sluice" --version) into $prefix"
add_path "$prefix/bin"
