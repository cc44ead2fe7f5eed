#!/usr/bin/env bash
# make run: the agent on the local control plane, with the example applied.
# Ctrl-C stops the agent; `make local-down` stops the control plane.
set -euo pipefail
LOCAL_DIR=${LOCAL_DIR:-.local}
BIN=${BIN:-bin}
PROBE=127.0.0.1:19440
"$BIN/agent" --local --kubeconfig "$LOCAL_DIR/kubeconfig" --agent-namespace topology-system \
  --metrics-bind-address 0 --health-probe-bind-address "$PROBE" --webhook-port 19443 \
  --webhook-cert-dir "$LOCAL_DIR/webhook-certs" >"$LOCAL_DIR/logs/agent.log" 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null' EXIT INT TERM
echo "agent started (log: $LOCAL_DIR/logs/agent.log); waiting until its webhooks answer..."
# /readyz through bash's /dev/tcp: nothing beyond bash and Go is needed.
ready() {
  exec 3<>"/dev/tcp/${PROBE%:*}/${PROBE#*:}" 2>/dev/null || return 1
  printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
  local status; status=$(head -1 <&3); exec 3>&-
  [[ $status == *" 200 "* ]]
}
for _ in $(seq 1 120); do
  if ready; then break; fi
  kill -0 "$agent" 2>/dev/null || { echo "agent exited:"; tail -20 "$LOCAL_DIR/logs/agent.log"; exit 1; }
  sleep 0.5
done
go run ./hack/localcluster apply -dir "$LOCAL_DIR" -f examples/docker/
echo
echo "The agent now reconciles Topology default/dev into Cluster API objects. Look with:"
echo "  export KUBECONFIG=$LOCAL_DIR/kubeconfig"
echo "  kubectl get topology,clusters,machinedeployments,kubeadmcontrolplanes -A"
echo "Offline, the same prediction: bin/kubectl-topology plan -f examples/docker/"
echo "Ctrl-C stops the agent."
wait $agent
