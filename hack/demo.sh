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
go run ./hack/localcluster apply -dir "$LOCAL_DIR" -f examples/in-memory/
echo
echo "Waiting for Cluster API to provision the cluster (in-memory machines, about a minute)..."
"$kt" status dev -n default --watch --timeout 5m
echo
"$kt" get -n default -o wide
cat <<NEXT

Cluster API v1.14.2 (core, kubeadm, the Docker provider's in-memory backend) runs here:
machines and each workload API server are faked in the provider's process. Try:
  export KUBECONFIG=$KUBECONFIG
  $kt status dev                                   # the rollout tree
  $kt edit dev                                     # change it in the terminal, with live checks
  $kt plan dev                                     # what the agent would change now
  $kt upgrade dev --version v1.34.0 --dry-run      # preflight and preview
  $kt upgrade dev --version v1.34.0 --wait         # and do it: control plane first, then each pool
  $kt plan -f examples/in-memory/                  # the same objects, offline
  $kt version
When done: make demo-down
NEXT
