#!/usr/bin/env bash
# The kind path's management cluster, offline: the private Docker daemon,
# the node image, a kind cluster from it, and Cluster API with the Docker
# provider and the agent installed in it as a user installs them: clusterctl
# init from local repositories (components from the modules' kustomizations,
# webhooks with working certificates; the agent's from make provider-repo).
#
#   hack/kind/up.sh     # idempotent; prints the kubeconfig's path (.kind/kubeconfig)
#   hack/kind/up.sh images  # only the images (node per release, load balancer,
#                           # providers, agent), so that make test builds them
#                           # while the Go suites run
#   hack/kind/up.sh images-ahead  # only the images that need nothing from
#                           # bin/, so that make test builds them beside its
#                           # own builds: node base, load balancer, and the
#                           # node of each release make control-plane-bins does not build
#   hack/kind/down.sh   # removes the cluster and every container and network it made
source "$(dirname "$0")/errexit.sh"
shopt -s inherit_errexit

main() {
	root=$(cd "$(dirname "$0")/../.." && pwd)
	state=${KIND_STATE:-$root/.kind}
	name=${KIND_CLUSTER:-kubectl-topology}
	kube_version=$(cd "$root/hack/kind/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
	capi_version=$(cd "$root/hack/capi" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)
	clusterctl_version=${CLUSTERCTL_VERSION:-v1.13.6}
	certmanager_version=v1.19.1
	# Two releases of the agent's provider repository, the same image under
	# each tag: init installs the first, test/kind upgrades to the second.
	agent_releases=(v0.1.0 v0.1.1)
	agent_image=kubectl-topology/agent:kind-$(cd "$root" && git describe --tags --always --dirty 2>/dev/null || echo dev)
	export DOCKER_HOST
	DOCKER_HOST=$("$root/hack/kind/dockerd.sh" start)
	kind=$root/bin/kind
	kubectl=$root/bin/kubectl
	if [[ ! -x $kind || $root/hack/kind/tools/go.mod -nt $kind ]]; then
		(cd "$root/hack/kind/tools" && GOBIN=$root/bin go install sigs.k8s.io/kind)
	fi
	if [[ ${1:-} == images-ahead ]]; then build_images_ahead; return; fi
	local node
	node=$(build_images)
	if [[ ${1:-} == images ]]; then return; fi
	kubeconfig=$state/kubeconfig
	if ! "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
		step "creating kind cluster $name from $node"
		# make test runs this beside the Go suites: on two cores the node takes longer than alone.
		sed -e "s#\${DOCKER_SOCK}#$state/docker.sock#" -e "s#\${BRIDGE_CONF}#$root/hack/kind/10-bridge.conflist#" "$root/hack/kind/cluster.yaml" >"$state/cluster.yaml"
		create_cluster "$node"
	fi
	"$kind" export kubeconfig --name "$name" --kubeconfig "$kubeconfig" >/dev/null 2>&1
	install_with_clusterctl
	echo "$kubeconfig"
}

step() { echo "kind up: $*" >&2; }

# create_cluster makes the kind cluster from node image $1. A node that fails
# to come up is kept long enough to say why (its kubelet's and containers'
# last words, and kind's full logs under $state/kind-logs-N), then removed
# and made once more: on a loaded machine a first try can time out where the
# second, with the images warm in the node's cache, does not.
create_cluster() {
	local attempt
	for attempt in 1 2; do
		if "$kind" create cluster --name "$name" --image "$1" --config "$state/cluster.yaml" --kubeconfig "$kubeconfig" --wait 5m --retain >&2; then
			return 0
		fi
		step "kind create cluster failed (try $attempt of 2); the node's state follows, kind's logs are in $state/kind-logs-$attempt"
		"$kind" export logs "$state/kind-logs-$attempt" --name "$name" >/dev/null 2>&1 || true
		docker exec "$name-control-plane" crictl ps -a >&2 || true
		docker exec "$name-control-plane" journalctl -u kubelet --no-pager -n 40 >&2 || true
		"$kind" delete cluster --name "$name" >&2 || true
	done
	return 1
}

# build_images builds what the cluster and its machines run, each only when
# missing, and prints the management cluster's node image: a node image per
# Kubernetes release pinned under hack/kind/kubernetes*/ (the first is the
# management cluster's, the others are what workload clusters upgrade to;
# the Docker provider makes its machines from kindest/node:VERSION), the
# load balancer, Cluster API's managers and the agent.
build_images() {
	local node v mod image
	for mod in "$root"/hack/kind/kubernetes*/; do
		v=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
		image=$(KUBE_VERSION=$v "$root/hack/kind/images.sh" node)
		docker tag "$image" "kindest/node:$v"
		if [[ $v == "$kube_version" ]]; then node=$image; fi
	done
	"$root/hack/kind/images.sh" lb >/dev/null
	"$root/hack/kind/images.sh" providers >/dev/null
	if ! docker image inspect "$agent_image" >/dev/null 2>&1 || [[ $agent_image == *-dirty ]]; then
		step "building the agent image $agent_image, as releases ${agent_releases[*]} of its provider repository"
		# Untrimmed, as the suites build the agent: the image then costs a link, not a compile.
		(cd "$root" && make -s image IMAGE="$agent_image" IMAGE_BUILD_FLAGS= >/dev/null)
	fi
	echo "$node"
}

# build_images_ahead builds what build_images will find built: the node base
# and load balancer (debootstrap, mostly waiting on Debian's mirror) while
# the node binaries of each release other than bin/'s compile.
build_images_ahead() {
	local bin_version mod v pid status=0 ahead=()
	bin_version=$(cd "$root/hack/tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
	for mod in "$root"/hack/kind/kubernetes*/; do
		v=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
		if [[ $v != "$bin_version" ]]; then ahead+=("$v"); fi
	done
	{ "$root/hack/kind/images.sh" base && "$root/hack/kind/images.sh" lb; } >/dev/null &
	pid=$!
	for v in "${ahead[@]}"; do
		KUBE_VERSION=$v "$root/hack/kind/images.sh" binaries || status=1
	done
	wait "$pid" || status=1
	[[ $status -eq 0 ]] || return 1
	for v in "${ahead[@]}"; do
		docker tag "$(KUBE_VERSION=$v "$root/hack/kind/images.sh" node)" "kindest/node:$v"
	done
}

k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }

# Cluster API's providers and the agent, installed as a user installs them:
# `clusterctl init` from local repositories (written here, no network), every
# provider stock. clusterctl insists on cert-manager's API, which it checks
# by creating an Issuer and a Certificate; cert-manager's binaries cannot be
# built here (their modules are not served), and nothing here needs one (the
# providers' webhook certificates are made by hack/kind/providers, the agent
# makes its own), so its CRDs alone answer that check.
install_with_clusterctl() {
	local capi test images=() line
	capi=$(cd "$root/hack/capi" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)
	test=$(cd "$root/hack/capi" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api/test)
	local image
	while read -r line; do
		# In full: clusterctl refuses an image reference without its registry.
		image=docker.io/${line#*=}
		docker tag "${line#*=}" "$image"
		"$kind" load docker-image --name "$name" "$image" >/dev/null
		images+=(-image "$(provider_dir "${line%%=*}")=$image")
	done < <("$root/hack/kind/images.sh" providers)
	local release
	for release in "${agent_releases[@]}"; do
		docker tag "$agent_image" "docker.io/kubectl-topology/agent:$release"
		"$kind" load docker-image --name "$name" "docker.io/kubectl-topology/agent:$release" >/dev/null
	done
	local repo=$state/clusterctl
	# The providers' repositories are written once per set of images:
	# rendering again would make new certificates, which the running
	# webhooks serve only a while later. The agent's are written each time.
	local entries; entries=$repo/providers-$(echo "${images[*]}" | sha256sum | cut -c1-12).yaml
	if [[ ! -s $entries ]]; then
		mkdir -p "$repo"
		(cd "$root" && go run ./hack/kind/providers -kubectl "$kubectl" -repo "$repo" -version "$capi_version" "${images[@]}" \
			"$capi/core/config/default" "$capi/bootstrap/kubeadm/config/default" "$capi/controlplane/kubeadm/config/default" \
			"$test/infrastructure/docker/config/default") >"$entries.tmp"
		mv "$entries.tmp" "$entries"
	fi
	for release in "${agent_releases[@]}"; do
		(cd "$root" && go run ./hack/manifests -repo "$repo" -version "$release" >/dev/null)
	done
	{
		echo "providers:"
		cat "$entries"
		printf -- '- name: kubectl-topology\n  type: AddonProvider\n  url: file://%s/addon-kubectl-topology/%s/addon-components.yaml\n' "$repo" "${agent_releases[0]}"
	} >"$state/clusterctl.yaml"
	local download certmanager
	# On failure go prints its error inside the JSON, on stdout.
	download=$(go mod download -json "github.com/cert-manager/cert-manager@$certmanager_version") || { echo "$download" >&2; return 1; }
	certmanager=$(echo "$download" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	k apply --server-side -f "$certmanager/deploy/crds/" >/dev/null
	if [[ -n $(k get providers.clusterctl.cluster.x-k8s.io -A -o name 2>/dev/null) ]]; then
		step "Cluster API and the agent are installed (clusterctl's inventory lists them)"
		"$root/bin/kubectl-topology" --kubeconfig "$kubeconfig" grant >&2
		return
	fi
	step "clusterctl init: Cluster API $capi_version (core, kubeadm bootstrap and control plane, Docker provider, stock) and the agent ${agent_releases[0]}"
	CLUSTERCTL_DISABLE_VERSIONCHECK=true "$root/bin/clusterctl-$clusterctl_version" init --config "$state/clusterctl.yaml" --kubeconfig "$kubeconfig" \
		--core "cluster-api:$capi_version" --bootstrap "kubeadm:$capi_version" --control-plane "kubeadm:$capi_version" \
		--infrastructure "docker:$capi_version" --addon "kubectl-topology:${agent_releases[0]}" --wait-providers --wait-provider-timeout 300 >&2
	# The components cannot know this cluster's infrastructure providers:
	# grant lets the agent manage the Docker provider's kinds.
	"$root/bin/kubectl-topology" --kubeconfig "$kubeconfig" grant >&2
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
main "$@"; exit $?
