#!/usr/bin/env bash
# Removes the kind path's cluster, every container and network the private
# daemon holds (the Docker provider's machines and load balancers among
# them), and stops the daemon. Images stay in its store for the next run.
source "$(dirname "$0")/errexit.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
state=${KIND_STATE:-$root/.kind}
name=${KIND_CLUSTER:-kubectl-topology}
export DOCKER_HOST
DOCKER_HOST=$("$root/hack/kind/dockerd.sh" host)
if [[ -S $state/docker.sock ]] && docker version >/dev/null 2>&1; then
	"$root/bin/kind" delete cluster --name "$name" >/dev/null 2>&1 || true
	containers=$(docker ps -aq)
	[[ -z $containers ]] || docker rm -f $containers >/dev/null
	for n in $(docker network ls --format '{{.Name}}'); do
		case $n in bridge | host | none) ;; *) docker network rm "$n" >/dev/null ;; esac
	done
fi
"$root/hack/kind/dockerd.sh" stop
rm -f "$state/kubeconfig"
