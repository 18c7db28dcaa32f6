#!/bin/sh
# Installs the web instruments and peers of `--protocol http`: curl (a real
# client in the tests), wrk (the load generator `bench/wrk.py` compares
# `c10k load` with) and nginx (nginx-light, the web peer). Idempotent:
# installs only what is missing. Debian/Ubuntu only (apt-get); needs root
# and network. Go and Node.js, for the Go and Node web peers, come with
# install-peers.sh.
set -eu

missing=""
command -v curl >/dev/null 2>&1 || missing="$missing curl"
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"

if [ -z "$missing" ]; then
    exit 0
fi
# shellcheck disable=SC2086
sh "$(dirname "$0")/apt-install.sh" install-web.sh $missing
