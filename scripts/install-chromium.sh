#!/bin/sh
# Installs Chromium for the report's browser test (tests/it/report.rs),
# which renders report.html headless and checks the console. Idempotent:
# does nothing when chromium or chromium-browser is already on PATH.
# Debian/Ubuntu only (apt-get); needs root and network. Installing chromium
# also brings fontconfig and a font (fonts-dejavu-core via fontconfig-config),
# so the charts' text renders on a fresh system.
set -eu

for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then
        exit 0
    fi
done

if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium.sh: chromium is missing and installing it needs root: run 'sudo apt-get install -y --no-install-recommends chromium'" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium.sh: chromium is missing and there is no apt-get here: install chromium with this system's package manager" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q >/dev/null || ! apt-get install -y -q --no-install-recommends chromium >/dev/null; then
    echo "install-chromium.sh: apt-get could not install chromium (no network or no package source?)" >&2
    exit 1
fi
command -v chromium >/dev/null 2>&1 || {
    echo "install-chromium.sh: apt-get finished but chromium is not on PATH" >&2
    exit 1
}
