#!/usr/bin/env bash
# make demo: the local control plane, the agent installed with
# `kubectl topology install --local`, the example class and topology applied,
# and their status. `make demo-down` undoes it.
set -euo pipefail
LOCAL_DIR=${LOCAL_DIR:-.local}
BIN=${BIN:-bin}
export KUBECONFIG="$LOCAL_DIR/kubeconfig"
kt="$BIN/kubectl-topology"

"$kt" install --local --agent-binary "$BIN/agent" --state-dir "$LOCAL_DIR/agent"
go run ./hack/localcluster apply -dir "$LOCAL_DIR" -f examples/docker/
echo
echo "Waiting for the agent to build the cluster..."
for _ in $(seq 1 60); do
  if "$kt" get dev -n default 2>/dev/null | grep -q Creating; then break; fi
  sleep 1
done
"$kt" get -n default -o wide
echo
"$kt" status dev -n default
cat <<NEXT

No provider runs here, so the control plane stays "Creating" until something
reports its status, as CAPD would. Try:
  export KUBECONFIG=$KUBECONFIG
  $kt status dev                                   # the rollout tree
  $kt edit dev                                     # change it in the terminal, with live checks
  $kt plan dev                                     # what the agent would change now
  $kt upgrade dev --version v1.34.0 --dry-run      # preflight and preview
  $kt plan -f examples/docker/                     # the same objects, offline
  $kt version
When done: make demo-down
NEXT
