#!/bin/sh
# apt-install.sh WHO PACKAGE...: installs Debian packages for one of the
# install scripts (WHO names it in every message), or says in one line why
# it cannot: not root, no apt-get, or apt-get failed (no network or no
# package source). Used by install-chromium.sh and install-peers.sh.
set -eu

who=$1
shift
if [ "$(id -u)" -ne 0 ]; then
    echo "$who: missing $*; installing needs root: run 'sudo apt-get install -y --no-install-recommends $*'" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "$who: missing $* and there is no apt-get here: install them with this system's package manager" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q >/dev/null || ! apt-get install -y -q --no-install-recommends "$@" >/dev/null; then
    echo "$who: apt-get could not install $* (no network or no package source?)" >&2
    exit 1
fi
