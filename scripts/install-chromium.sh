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

sh "$(dirname "$0")/apt-install.sh" install-chromium.sh chromium
command -v chromium >/dev/null 2>&1 || {
    echo "install-chromium.sh: apt-get finished but chromium is not on PATH" >&2
    exit 1
}
