#!/usr/bin/env bash
# make demo-down: delete the example topology, uninstall the agent, stop the
# local control plane. A refused uninstall is reported with its reason and
# exits non-zero, leaving the control plane up to look at.
set -euo pipefail
LOCAL_DIR=${LOCAL_DIR:-.local}
BIN=${BIN:-bin}
export KUBECONFIG="$LOCAL_DIR/kubeconfig"
if go run ./hack/localcluster status -dir "$LOCAL_DIR" >/dev/null; then
  go run ./hack/localcluster delete -dir "$LOCAL_DIR" -f examples/in-memory/topology.yaml
  # The uninstall refuses while Topologies remain; the example's deletion
  # (its machines first) takes a few seconds more.
  out="" done=""
  for i in $(seq 1 90); do
    if out=$("$BIN/kubectl-topology" uninstall --state-dir "$LOCAL_DIR/agent" 2>&1); then
      done=1
      break
    fi
    if [ $((i % 15)) -eq 1 ]; then
      echo "uninstall refused, retrying while the example is deleted: $(printf '%s' "$out" | tail -n 1)" >&2
    fi
    sleep 1
  done
  if [ -z "$done" ]; then
    printf 'demo-down: the agent was not uninstalled:\n%s\n' "$out" >&2
    echo "The local control plane is still up (KUBECONFIG=$KUBECONFIG) so you can look; stop it anyway with: go run ./hack/localcluster down -dir $LOCAL_DIR" >&2
    exit 1
  fi
  printf '%s\n' "$out"
fi
go run ./hack/localcluster down -dir "$LOCAL_DIR"
