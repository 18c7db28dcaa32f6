#!/bin/sh
# Installs the toolchains of the peers (peers/, `c10k run peers`): Go,
# Node.js, uvloop, Erlang/OTP and socat; Python's asyncio peer needs only
# python3. Idempotent: installs only what is missing. Debian/Ubuntu only
# (apt-get); needs root and network. A peer whose toolchain is missing is
# not an error for c10k: its cells are skipped with the apt-get line.
set -eu

missing=""
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || missing="$missing nodejs"
/usr/bin/python3 -c 'import uvloop' >/dev/null 2>&1 || missing="$missing python3-uvloop"
command -v escript >/dev/null 2>&1 || missing="$missing erlang-base"
command -v socat >/dev/null 2>&1 || missing="$missing socat"

if [ -z "$missing" ]; then
    exit 0
fi
# shellcheck disable=SC2086
sh "$(dirname "$0")/apt-install.sh" install-peers.sh $missing
