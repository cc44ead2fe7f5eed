#!/usr/bin/env bash
# make demo-down: delete the example topology, uninstall the agent, stop the
# local control plane.
set -euo pipefail
LOCAL_DIR=${LOCAL_DIR:-.local}
BIN=${BIN:-bin}
export KUBECONFIG="$LOCAL_DIR/kubeconfig"
if go run ./hack/localcluster status -dir "$LOCAL_DIR" >/dev/null; then
  go run ./hack/localcluster delete -dir "$LOCAL_DIR" -f examples/in-memory/topology.yaml
  for _ in $(seq 1 60); do
    "$BIN/kubectl-topology" uninstall --state-dir "$LOCAL_DIR/agent" 2>/dev/null && break
    sleep 1
  done
fi
go run ./hack/localcluster down -dir "$LOCAL_DIR"
