#!/bin/bash
# haproxy as the Docker provider starts it (haproxy -W -db -f CONFIG), with
# `no strict-limits` added to CONFIG before the start and before each reload
# the provider asks for with SIGHUP: this host's open-file limit is below the
# one the provider's configuration asks haproxy to raise to.
set -u
cfg=/usr/local/etc/haproxy/haproxy.cfg
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	[[ ${args[i]} == -f ]] && cfg=${args[i + 1]}
done
relax() {
	grep -q '^[[:space:]]*no strict-limits' "$cfg" || sed -i '/^global/a\  no strict-limits' "$cfg"
}
relax
/usr/sbin/haproxy "$@" &
pid=$!
trap 'relax; kill -USR2 "$pid"' HUP
trap 'kill -TERM "$pid"' TERM INT
while kill -0 "$pid" 2>/dev/null; do
	wait "$pid"
done
