#!/usr/bin/env bash
# The kind path's management cluster, offline: the private Docker daemon,
# the node image, a kind cluster from it, Cluster API with the Docker
# provider installed in it as a user installs them (components from the
# modules' kustomizations, webhooks with working certificates), and the
# agent in-cluster through `kubectl topology install`.
#
#   hack/kind/up.sh     # idempotent; prints the kubeconfig's path (.kind/kubeconfig)
#   hack/kind/down.sh   # removes the cluster and every container and network it made
set -euo pipefail

main() {
	root=$(cd "$(dirname "$0")/../.." && pwd)
	state=${KIND_STATE:-$root/.kind}
	name=${KIND_CLUSTER:-kubectl-topology}
	kube_version=$(cd "$root/hack/kind/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
	export DOCKER_HOST
	DOCKER_HOST=$("$root/hack/kind/dockerd.sh" start)
	kind=$root/bin/kind
	kubectl=$root/bin/kubectl
	if [[ ! -x $kind || $root/hack/kind/tools/go.mod -nt $kind ]]; then
		(cd "$root/hack/kind/tools" && GOBIN=$root/bin go install sigs.k8s.io/kind)
	fi
	# A node image per Kubernetes release pinned under hack/kind/kubernetes*/:
	# the first is the management cluster's, the others are what workload
	# clusters upgrade to. The Docker provider makes its machines from
	# kindest/node:VERSION.
	local node v mod
	for mod in "$root"/hack/kind/kubernetes*/; do
		v=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
		local image; image=$(KUBE_VERSION=$v "$root/hack/kind/images.sh" node)
		docker tag "$image" "kindest/node:$v"
		if [[ $v == "$kube_version" ]]; then node=$image; fi
	done
	"$root/hack/kind/images.sh" lb >/dev/null
	kubeconfig=$state/kubeconfig
	if ! "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
		step "creating kind cluster $name from $node"
		sed -e "s#\${DOCKER_SOCK}#$state/docker.sock#" -e "s#\${BRIDGE_CONF}#$root/hack/kind/10-bridge.conflist#" "$root/hack/kind/cluster.yaml" >"$state/cluster.yaml"
		"$kind" create cluster --name "$name" --image "$node" --config "$state/cluster.yaml" --kubeconfig "$kubeconfig" --wait 2m >&2
	fi
	"$kind" export kubeconfig --name "$name" --kubeconfig "$kubeconfig" >/dev/null 2>&1
	install_providers
	install_agent
	echo "$kubeconfig"
}

step() { echo "kind up: $*" >&2; }

k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }

install_providers() {
	local capi test images=() line
	capi=$(cd "$root/hack/capi" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)
	test=$(cd "$root/hack/capi" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api/test)
	while read -r line; do
		"$kind" load docker-image --name "$name" "${line#*=}" >/dev/null
		images+=(-image "$(provider_dir "${line%%=*}")=${line#*=}")
	done < <("$root/hack/kind/images.sh" providers)
	step "installing Cluster API ${CAPI_VERSION:-v1.14.2}: core, kubeadm bootstrap and control plane, Docker provider"
	# Rendered once per set of images: rendering again would make new
	# certificates, which the running webhooks serve only a while later.
	local rendered; rendered=$state/providers-$(echo "${images[*]}" | sha256sum | cut -c1-12).yaml
	if [[ ! -s $rendered ]]; then
		# Stock, as clusterctl init installs them: every feature gate at its
		# default (ClusterTopology off), so the agent is the topology
		# controller and a class holds inline the template kinds the
		# providers then refuse (examples/kind/class.yaml).
		(cd "$root" && go run ./hack/kind/providers -kubectl "$kubectl" "${images[@]}" \
			"$capi/core/config/default" "$capi/bootstrap/kubeadm/config/default" "$capi/controlplane/kubeadm/config/default" \
			"$test/infrastructure/docker/config/default") >"$rendered.tmp"
		mv "$rendered.tmp" "$rendered"
	fi
	k apply --server-side --force-conflicts -f "$rendered" >/dev/null
	for d in capi-system/capi-controller-manager capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-controller-manager \
		capi-kubeadm-control-plane-system/capi-kubeadm-control-plane-controller-manager capd-system/capd-controller-manager; do
		k -n "${d%%/*}" rollout status deployment "${d#*/}" --timeout 5m >&2
	done
}

# provider_dir is the end of the config directory path a manager's image goes to.
provider_dir() {
	case $1 in
	capi-core) echo core ;;
	capi-kubeadm-bootstrap) echo bootstrap/kubeadm ;;
	capi-kubeadm-control-plane) echo controlplane/kubeadm ;;
	capi-docker) echo infrastructure/docker ;;
	esac
}

install_agent() {
	local version image
	version=$(cd "$root" && git describe --tags --always --dirty 2>/dev/null || echo dev)
	image=kubectl-topology/agent:kind-$version
	step "building the agent image $image and installing it"
	(cd "$root" && make -s image IMAGE="$image" >/dev/null)
	"$kind" load docker-image --name "$name" "$image" >/dev/null
	"$root/bin/kubectl-topology" --kubeconfig "$kubeconfig" install --image "$image" --timeout 5m >&2
}

main "$@"; exit $?
