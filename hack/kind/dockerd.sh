#!/usr/bin/env bash
# The kind path's private Docker daemon: its own socket, data root and
# bridges, with runc-nosysres as its default runtime, so that privileged
# containers (kind's nodes, the Docker provider's machines) start on hosts
# whose capability bounding set lacks CAP_SYS_RESOURCE. The host's own
# daemon and its configuration are left as they are.
#
#   hack/kind/dockerd.sh start   # idempotent; prints the DOCKER_HOST to use
#   hack/kind/dockerd.sh stop    # stops it and undoes its host changes
#   hack/kind/dockerd.sh host    # the DOCKER_HOST value
#
# Needs root (it starts dockerd and adds two iptables rules). Its socket and
# logs live in KIND_STATE (default .kind/ in the repository); its image store
# in KIND_DATA_ROOT, one per machine, so that images built once serve every
# clone and CI run on it. One kind path runs on a machine at a time.
source "$(dirname "$0")/errexit.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
state=${KIND_STATE:-$root/.kind}
data_root=${KIND_DATA_ROOT:-/var/lib/kubectl-topology/kind-docker}
sock=$state/docker.sock
host=unix://$sock
pidfile=$state/dockerd.pid
runtime=$root/bin/runc-nosysres
# Bridges of this daemon's networks are named with this prefix, so that the
# FORWARD rules below let their traffic through and no other's.
bridge_prefix=br-kt

running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

# rule add|delete TABLE CHAIN RULE...: adds a rule once, or deletes it if present.
# -w waits while another program holds the xtables lock instead of failing at
# once; a change the kernel refuses for a moment is tried again, and the last
# refusal is printed.
rule() {
	local op=$1 table=$2 chain=$3 err
	shift 3
	if iptables -w 10 -t "$table" -C "$chain" "$@" 2>/dev/null; then
		[[ $op == add ]] || iptables -w 10 -t "$table" -D "$chain" "$@" || true
		return
	fi
	[[ $op == add ]] || return 0
	for _ in 1 2 3 4 5; do
		if err=$(iptables -w 10 -t "$table" -I "$chain" "$@" 2>&1); then return; fi
		sleep 1
	done
	echo "hack/kind/dockerd.sh: iptables -t $table -I $chain $* failed 5 times: $err" >&2
	return 1
}

forward_rules() { # add|delete
	rule "$1" filter FORWARD -i "$bridge_prefix+" -j ACCEPT
	rule "$1" filter FORWARD -o "$bridge_prefix+" -j ACCEPT
	# Traffic between containers on one of its bridges keeps its source
	# address: with br_netfilter on (kube-proxy turns it on) bridged packets
	# pass the host's nat rules, and a host daemon's MASQUERADE for an
	# overlapping subnet would rewrite them, so that etcd peers refuse each
	# other's certificates.
	rule "$1" nat POSTROUTING -o "$bridge_prefix+" -j RETURN
}

start() {
	if [[ $(id -u) != 0 ]]; then
		echo "hack/kind/dockerd.sh: the private Docker daemon needs root" >&2; exit 1
	fi
	command -v dockerd >/dev/null || { echo "hack/kind/dockerd.sh: no dockerd on this machine: the kind path needs a Docker engine" >&2; exit 1; }
	mkdir -p "$state" "$data_root"
	if [[ ! -x $runtime || $root/hack/kind/runc-nosysres/main.go -nt $runtime ]]; then
		(cd "$root" && CGO_ENABLED=0 go build -o "$runtime" ./hack/kind/runc-nosysres)
	fi
	# kind and the Docker provider bind-mount /lib/modules; this host may have none.
	mkdir -p /lib/modules
	forward_rules add
	if running; then echo "$host"; return; fi
	# Its own configuration file: the host daemon's must not apply to it.
	echo '{}' >"$state/daemon.json"
	dockerd --config-file "$state/daemon.json" --host "$host" --data-root "$data_root" --exec-root "$state/exec" --pidfile "$pidfile" \
		--storage-driver overlay2 --iptables=false --ip-masq=false --bridge none \
		--add-runtime "runc-nosysres=$runtime" --default-runtime runc-nosysres \
		>"$state/dockerd.log" 2>&1 &
	for _ in $(seq 60); do
		if DOCKER_HOST=$host docker version >/dev/null 2>&1; then
			# kind puts its nodes on the "kind" network; made here, its bridge is ours.
			if ! DOCKER_HOST=$host docker network inspect kind >/dev/null 2>&1; then
				DOCKER_HOST=$host docker network create kind --driver bridge \
					-o com.docker.network.bridge.name=$bridge_prefix-kind \
					-o com.docker.network.bridge.enable_ip_masquerade=false \
					-o com.docker.network.driver.mtu=1400 >/dev/null
			fi
			echo "$host"; return
		fi
		sleep 1
	done
	echo "hack/kind/dockerd.sh: the private Docker daemon did not start; see $state/dockerd.log" >&2
	tail -20 "$state/dockerd.log" >&2
	exit 1
}

stop() {
	if running; then
		kill "$(cat "$pidfile")"
		for _ in $(seq 30); do running || break; sleep 1; done
	fi
	forward_rules delete
	rm -rf "$state/exec"
}

case ${1:-} in
start) start ;;
stop) stop ;;
host) echo "$host" ;;
*) echo "usage: $0 start|stop|host" >&2; exit 2 ;;
esac
