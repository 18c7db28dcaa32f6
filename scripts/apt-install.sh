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
# One install at a time: the tests that need a package start together, each
# runs its installer, and dpkg refuses a second one while the first holds
# its lock. Waiting here (flock is util-linux's, essential on Debian), and
# letting apt-get wait for a lock held by anything else, turns that race
# into a queue.
exec 9>"${TMPDIR:-/tmp}/c10k-apt-install.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi
wait_lock="-o DPkg::Lock::Timeout=600"
if ! apt-get $wait_lock update -q >/dev/null ||
    ! apt-get $wait_lock install -y -q --no-install-recommends "$@" >/dev/null; then
    echo "$who: apt-get could not install $* (no network or no package source?)" >&2
    exit 1
fi
