#!/usr/bin/env bash
# The body of make test. It builds what the suites run (control-plane-bins,
# capi-bins, clusterctl) while the kind images that need none of that
# (kind-images-ahead: the node base, the load balancer, the node of the
# release the workload clusters upgrade to) build beside. Then three parts
# run side by side, because each alone leaves the two cores idle part of the
# time: every Go test; the kind path (the rest of its images, a kind cluster
# and its test), which mostly waits on containers and starts once the Go
# suites leave the CPUs partly idle; and lint, at the lowest CPU priority.
# Each part's log is in TEST_LOG_DIR; what failed is printed again at the
# end, and the exit status is non-zero if any part failed.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${BIN:-$root/bin}
logs=${TEST_LOG_DIR:-$root/.test}
parallel=${TEST_PARALLEL:-5}
make=${MAKE:-make}
mkdir -p "$logs"

since() { echo "$(($(date +%s) - start)) s"; }
start=$(date +%s)
failed=0

# The ahead job runs in a session of its own so that it can be stopped
# whole (its go builds and docker calls) when the builds fail or make test is interrupted.
ahead_pid=
stop_ahead() { if [[ -n $ahead_pid ]]; then kill -- -"$ahead_pid" 2>/dev/null; fi; }
trap stop_ahead EXIT
# Jobs started with & ignore the terminal's interrupt: stop them all, then this.
trap 'trap - INT TERM; stop_ahead; kill -TERM 0; exit 130' INT TERM
if docker info >/dev/null 2>&1; then
	setsid "$make" --no-print-directory kind-images-ahead >"$logs/kind.log" 2>&1 &
	ahead_pid=$!
	echo "make test: the kind images that need no build of ours are built beside the builds (log: $logs/kind.log)"
else
	echo "make test: no Docker engine answers here, so the kind path (make e2e-kind) does not run"
fi

if ! "$make" --no-print-directory control-plane-bins capi-bins clusterctl; then
	echo "make test: the builds failed after $(since)"
	exit 1
fi
echo "make test: the builds ended after $(since)"

nice -n 19 "$make" --no-print-directory lint >"$logs/lint.log" 2>&1 &
lint_pid=$!
(
	TOPOLOGY_BIN_DIR=$bin "${GO:-go}" test ./... -count=1 -p "$parallel" -timeout 60m 2>&1 | tee "$logs/go-test.log"
	exit "${PIPESTATUS[0]}"
) &
go_pid=$!

# idle_percent prints the share of all CPUs left idle over the next $1 seconds.
idle_percent() {
	local cpu user nice sys idle iowait irq softirq steal rest idle0 total0
	read -r cpu user nice sys idle iowait irq softirq steal rest </proc/stat
	idle0=$((idle + iowait)) total0=$((user + nice + sys + idle + iowait + irq + softirq + steal))
	sleep "$1"
	read -r cpu user nice sys idle iowait irq softirq steal rest </proc/stat
	echo $((100 * (idle + iowait - idle0) / (user + nice + sys + idle + iowait + irq + softirq + steal - total0 + 1)))
}

# The Go suites' control planes keep both cores busy for their first
# quarter hour or so; then test/capi's and test/kill's last tests mostly
# wait. Beside the busy part, the kind node's API server starved until its
# kubelet restarted it, and on a slower machine a whole run failed so (the
# CI run of 2026-11-30). The kind path starts once the CPUs have been at
# least 40% idle for a minute, or once the Go tests end, whichever is first.
wait_for_idle_cpus() {
	local quiet=0
	while kill -0 "$go_pid" 2>/dev/null && ((quiet < 3)); do
		if (($(idle_percent 20) >= 40)); then quiet=$((quiet + 1)); else quiet=0; fi
	done
}

kind_pid=
if [[ -n $ahead_pid ]]; then
	if wait "$ahead_pid"; then
		ahead_pid=
		wait_for_idle_cpus
		echo "make test: the kind path runs beside the rest of the Go tests, $(since) in (log: $logs/kind.log)"
		{ "$make" --no-print-directory kind-images && "$make" --no-print-directory e2e-kind; } >>"$logs/kind.log" 2>&1 &
		kind_pid=$!
	else
		ahead_pid=
		failed=1
		echo "make test: the kind path's images failed, $(since) in ($logs/kind.log):"
		tail -40 "$logs/kind.log"
	fi
fi

wait "$go_pid"
go_status=$?
echo "make test: the Go tests ended after $(since) (exit $go_status)"
if [[ $go_status -ne 0 ]]; then
	failed=1
	hack/test-failures.sh "$logs/go-test.log"
fi

if wait "$lint_pid"; then
	echo "make test: lint is clean ($logs/lint.log)"
else
	failed=1
	echo "make test: lint failed ($logs/lint.log):"
	tail -40 "$logs/lint.log"
fi

if [[ -n $kind_pid ]]; then
	if wait "$kind_pid"; then
		echo "make test: the kind path passed, $(since) in ($logs/kind.log):"
		grep -E '^(--- |ok |PASS)' "$logs/kind.log" || true
	else
		# Beside the Go suites' control planes, two cores can starve the kind
		# node's API server until its kubelet restarts it. Once more, alone:
		# a failure of ours fails there too, and both logs are kept.
		mv "$logs/kind.log" "$logs/kind-beside.log"
		echo "make test: the kind path failed beside the Go tests, $(since) in ($logs/kind-beside.log):"
		tail -20 "$logs/kind-beside.log"
		echo "make test: the kind path once more, alone (log: $logs/kind.log)"
		# kind-down may find nothing left to remove: what the retry needs is its own result.
		if { "$make" --no-print-directory kind-down || true; "$make" --no-print-directory kind-images && "$make" --no-print-directory e2e-kind; } >"$logs/kind.log" 2>&1; then
			echo "make test: the kind path passed alone, $(since) in; beside the Go tests it had failed ($logs/kind-beside.log):"
			grep -E '^(--- |ok |PASS)' "$logs/kind.log" || true
		else
			failed=1
			echo "make test: the kind path failed alone too, $(since) in ($logs/kind.log):"
			tail -60 "$logs/kind.log"
		fi
	fi
fi

if [[ $failed -ne 0 ]]; then
	echo "make test: failed after $(since)"
	exit 1
fi
echo "make test: passed, $(since)"
