#!/usr/bin/env bash
# make demo-down: delete every Topology the demo holds (the example and any
# the user created), uninstall the agent, stop the local control plane and
# everything running on it. When the API server does
# not answer, or the agent cannot be uninstalled (a component died, say), it
# says why, then stops every process on the control plane's directory anyway
# (a component restarted by hand and the local agent included) and removes
# the demo's data, keeping the logs, so the next `make local-up` starts empty.
set -euo pipefail
LOCAL_DIR=${LOCAL_DIR:-.local}
BIN=${BIN:-bin}
export KUBECONFIG="$LOCAL_DIR/kubeconfig"
purge() {
  echo "demo-down: $1; stopping everything on $LOCAL_DIR and removing the demo's data (logs stay in $LOCAL_DIR/logs)" >&2
  go run ./hack/localcluster down -purge -dir "$LOCAL_DIR"
  exit 1
}
if ! go run ./hack/localcluster reachable -dir "$LOCAL_DIR" >/dev/null; then
  if [ -d "$LOCAL_DIR" ]; then purge "the local API server does not answer, so the example cannot be deleted through it"; fi
  exit 0
fi
go run ./hack/localcluster delete-topologies -dir "$LOCAL_DIR" ||
  purge "the Topologies could not be deleted"
# The uninstall refuses while Topologies remain; their deletion (machines
# first) takes a few seconds more, longer with many.
out="" done=""
for i in $(seq 1 300); do
  if out=$("$BIN/kubectl-topology" uninstall --state-dir "$LOCAL_DIR/agent" 2>&1); then
    done=1
    break
  fi
  if [ $((i % 15)) -eq 1 ]; then
    echo "uninstall refused, retrying while the Topologies are deleted: $(printf '%s' "$out" | tail -n 1)" >&2
  fi
  sleep 1
done
if [ -z "$done" ]; then
  printf 'demo-down: the agent was not uninstalled:\n%s\n' "$out" >&2
  purge "the uninstall was refused"
fi
printf '%s\n' "$out"
go run ./hack/localcluster down -dir "$LOCAL_DIR"
