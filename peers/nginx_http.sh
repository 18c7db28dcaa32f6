#!/bin/sh
# nginx as a web peer, started the way its users start it: the
# distribution's nginx with a configuration of its own, written to a
# temporary directory (removed when it stops).
#
# usage: sh nginx_http.sh PORT [ADDR]
#
# One worker (the cell pins this script, and so the master and the worker,
# like the models), answering `Hello, World!` (TechEmpower's plaintext) with
# `return 200`: Content-Type, Content-Length, Date and Server are nginx's
# own. Two settings differ from nginx's defaults, as every benchmark of it
# sets them: no access log (a write per request to a file), and
# keepalive_requests raised from 1,000, which would close each connection
# after 1,000 requests (a client's reconnect is counted, not hidden, but it
# would be nginx's default, not its cost). Like nginx it says nothing when
# ready: c10k sees its port listen. Exits on SIGTERM.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: sh nginx_http.sh PORT [ADDR]" >&2
    exit 2
fi
port=$1
addr=${2:-127.0.0.1}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
dir=$(mktemp -d "${TMPDIR:-/tmp}/c10k-nginx.XXXXXX")
chmod 755 "$dir"
# As many connections as its open-files limit allows (nginx warns past it).
conns=$(ulimit -n)
[ "$conns" = unlimited ] && conns=65536
cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log stderr warn;
events {
    worker_connections $conns;
}
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
        listen $addr:$port backlog=4096;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
CONF
"$nginx" -e stderr -p "$dir" -c "$dir/nginx.conf" &
pid=$!
stop() {
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
    exit 0
}
trap stop TERM INT
status=0
wait "$pid" || status=$?
rm -rf "$dir"
exit $status
