#!/bin/sh
# Installs OpenSSH's server for the agents' tests over a real sshd
# (tests/it/sshd.rs), which start their own `sshd -D -e -f CONFIG` on a
# loopback port with keys made in a temporary directory. Idempotent: does
# nothing when sshd is already installed. Debian/Ubuntu only (apt-get);
# needs root and network. The package's own service is not what the tests
# use: where the system has no init to start it (a container), none runs.
set -eu

for b in sshd /usr/sbin/sshd; do
    if command -v "$b" >/dev/null 2>&1; then
        exit 0
    fi
done

sh "$(dirname "$0")/apt-install.sh" install-sshd.sh openssh-server openssh-client
command -v /usr/sbin/sshd >/dev/null 2>&1 || {
    echo "install-sshd.sh: apt-get finished but /usr/sbin/sshd is not there" >&2
    exit 1
}
