#!/usr/bin/env bash
# tests/ui/setup.sh - what the browser tests need: Debian's chromium (only if
# /usr/bin/chromium is missing; needs root or sudo) and playwright-core in
# tests/ui/node_modules (only if missing). playwright-core drives the
# chromium already on the machine and never downloads a browser.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if [ ! -x /usr/bin/chromium ]; then
    SUDO=
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "ui/setup: /usr/bin/chromium is missing; as root run:" >&2
            echo "  apt-get update && apt-get install -y --no-install-recommends chromium" >&2
            exit 1
        fi
        SUDO=sudo
    fi
    echo "ui/setup: installing Debian's chromium"
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "ui/setup: node and npm are needed (./scripts/deps installs Debian's nodejs and npm)" >&2
    exit 1
fi

if [ ! -d node_modules/playwright-core ]; then
    echo "ui/setup: installing playwright-core"
    if [ -f package-lock.json ]; then
        npm ci --no-audit --no-fund
    else
        npm install --no-audit --no-fund
    fi
fi
echo "ui/setup: chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), node $(node --version), playwright-core $(node -p 'require("./node_modules/playwright-core/package.json").version')"
