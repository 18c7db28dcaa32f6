#!/bin/sh
# Installs the web instruments and peers of `--protocol http`: curl (a real
# client in the tests), wrk (the load generator `bench/wrk.py` compares
# `c10k load` with), nginx (nginx-light, the web peer), and Go and Node.js
# for the go-http and node-http peers. Idempotent: installs only what is
# missing. Debian/Ubuntu only (apt-get); needs root and network.
set -eu

missing=""
command -v curl >/dev/null 2>&1 || missing="$missing curl"
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx-light"
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || missing="$missing nodejs"

if [ -z "$missing" ]; then
    exit 0
fi
# shellcheck disable=SC2086
sh "$(dirname "$0")/apt-install.sh" install-web.sh $missing
