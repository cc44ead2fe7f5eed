# kubectl-topology — build, test and generate.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN        := $(CURDIR)/bin
TOOLS_DIR  := hack/tools
GO         ?= go
# k8s.io/kubernetes is not in the checksum database the proxy serves.
export GONOSUMDB := k8s.io/kubernetes
# Static, as the release is built (hack/dist.sh): one setting for the builds,
# the tests, the linters and the kind path's agent image, so that they share
# compiled packages instead of compiling each twice.
export CGO_ENABLED ?= 0

CONTROLLER_GEN := $(BIN)/controller-gen
KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_CM        := $(BIN)/kube-controller-manager
KUBECTL        := $(BIN)/kubectl
ETCD           := $(BIN)/etcd
# Versions come from the tools module, so go.mod is the one place they are pinned.
KUBE_VERSION    = $(shell cd $(TOOLS_DIR) && $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_LDFLAGS    = -s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                  -X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))) \
                  -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
                  -X k8s.io/component-base/version.gitTreeState=clean
CLUSTERCTL     ?= $(BIN)/clusterctl
SHARED         ?= $(CURDIR)/../shared
# The release the binaries are built as: the plugin installs the agent image
# of the same tag (make dist VERSION=v0.2.0).
VERSION        ?= dev
VERSION_LDFLAGS = -X github.com/kubectl-topology/kubectl-topology/internal/version.version=$(VERSION)

.PHONY: all build test e2e unit generate manifests image bench lint fmt vet parity parity-live parity-live-providers bump-capi bench-scale bench-scale-agent clean help

all: build ## Build the binaries.

help: ## List targets.
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-topology and bin/agent.
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/kubectl-topology ./cmd/kubectl-topology
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/agent ./cmd/agent

# make test keeps each part's output here (go-test.log, lint.log, kind.log,
# and e2e-kind.log, test/kind's own) and, when one fails, prints what failed
# again at the end. The suites with Cluster API's providers (test/capi,
# test/kill, test/stock, test/upstream) run each in a network namespace of its own as
# root, so the in-memory backend's fixed port lets them run side by side;
# elsewhere they take turns, and one's timeout also covers waiting.
TEST_LOG_DIR ?= $(CURDIR)/.test
# TEST_PARALLEL test binaries run at once: the five control-plane suites
# (test/capi, test/kill, test/stock, test/upstream, test/e2e) mostly wait on
# controllers, so they all run together on two cores.
TEST_PARALLEL ?= 5

# hack/test.sh makes control-plane-bins, capi-bins and clusterctl itself,
# with the kind images that need none of them (kind-images-ahead) beside.
test: ## Run every test: lint, unit, golden, fuzz seeds, integration on a real local control plane, and the kind path when a Docker engine runs (hack/test.sh: the kind path and lint run beside the Go tests).
	BIN=$(BIN) TEST_LOG_DIR=$(TEST_LOG_DIR) TEST_PARALLEL=$(TEST_PARALLEL) MAKE=$(MAKE) GO=$(GO) hack/test.sh

# The suites that start a control plane (their TestMain does) are left out of
# unit, so that it needs no control-plane binary.
API_SERVER_SUITES = /internal/agent$$|/test/kill$$|/internal/controller$$|/internal/harness/localcluster$$|/test/e2e$$|/test/capi$$|/test/stock$$|/test/upstream$$

unit: ## Unit tests only, fast; needs no control-plane binary.
	$(GO) test -count=1 $$($(GO) list ./... | grep -vE '$(API_SERVER_SUITES)')

$(CONTROLLER_GEN): $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum
	cd $(TOOLS_DIR) && GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen
	@touch $@

# The control-plane binaries are rebuilt only when the tools module changes; a cold
# build of kube-apiserver takes minutes, a warm one is a no-op. One go build
# makes the three, so that each link runs beside the others' compiles.
$(KUBE_APISERVER) $(KUBE_CM) $(KUBECTL) &: $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum
	mkdir -p $(BIN)
	cd $(TOOLS_DIR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(BIN)/ $(addprefix k8s.io/kubernetes/cmd/,$(notdir $(KUBE_APISERVER) $(KUBE_CM) $(KUBECTL)))
	touch $(KUBE_APISERVER) $(KUBE_CM) $(KUBECTL)

$(ETCD): $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum
	cd $(TOOLS_DIR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

.PHONY: control-plane-bins
control-plane-bins: $(KUBE_APISERVER) $(KUBE_CM) $(ETCD) $(KUBECTL) ## Build kube-apiserver, kube-controller-manager, etcd and kubectl into bin/.

# Cluster API's own managers, pinned by hack/capi/go.mod: rebuilt only when
# that module changes, so a warm build is a no-op.
CAPI_DIR  := hack/capi
CAPI_BINS := $(BIN)/capi-core $(BIN)/capi-kubeadm-bootstrap $(BIN)/capi-kubeadm-control-plane $(BIN)/capi-docker $(BIN)/capi-test-extension
CAPI_PKG_capi-core                  := sigs.k8s.io/cluster-api/core
CAPI_PKG_capi-kubeadm-bootstrap     := sigs.k8s.io/cluster-api/bootstrap/kubeadm
CAPI_PKG_capi-kubeadm-control-plane := sigs.k8s.io/cluster-api/controlplane/kubeadm
CAPI_PKG_capi-docker                := sigs.k8s.io/cluster-api/test/infrastructure/docker
CAPI_PKG_capi-test-extension        := sigs.k8s.io/cluster-api/test/extension

$(CAPI_BINS): $(CAPI_DIR)/go.mod $(CAPI_DIR)/go.sum
	cd $(CAPI_DIR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ $(CAPI_PKG_$(notdir $@))

.PHONY: capi-bins
capi-bins: $(CAPI_BINS) ## Build Cluster API's core, kubeadm and Docker (in-memory backend) managers into bin/.

generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object paths=./pkg/api/...

IMAGE ?= kubectl-topology/agent:$(VERSION)

manifests: $(CONTROLLER_GEN) ## Generate CRDs, agent components (clusterctl contract) and metadata.yaml into manifests/.
	$(CONTROLLER_GEN) crd paths=./pkg/api/... output:crd:artifacts:config=manifests/crd
	@for f in manifests/crd/*.yaml; do sed -i '/^---$$/d' "$$f"; done
	$(GO) run ./hack/manifests -out manifests -image $(IMAGE)

# IMAGE_BUILD_FLAGS: the release's image is built trimmed; the kind path's
# (hack/kind/up.sh) as the suites build the agent, which shares their compile.
IMAGE_BUILD_FLAGS ?= -trimpath

image: ## Build the agent image with the local Docker engine, from a static binary; nothing is pulled.
	CGO_ENABLED=0 $(GO) build $(IMAGE_BUILD_FLAGS) -ldflags '-s -w $(VERSION_LDFLAGS)' -o $(BIN)/image/agent ./cmd/agent
	cp hack/image/Dockerfile $(BIN)/image/Dockerfile
	docker build -t $(IMAGE) $(BIN)/image

bench: ## Run the benchmarks.
	$(GO) test ./internal/... -run '^$$' -bench . -benchmem

e2e: control-plane-bins capi-bins ## The built binaries driven as a user would, against a local control plane (part of make test).
	TOPOLOGY_BIN_DIR=$(BIN) $(GO) test ./test/e2e/ -count=1 -timeout 20m

BENCH_N ?= 100,1000
BENCH_CASE ?= testdata/parity/in-memory
# BENCH_FLAGS adds benchscale flags, e.g. -idle-providers (go run ./hack/benchscale -h).
BENCH_FLAGS ?=

bench-scale: build control-plane-bins capi-bins ## The agent vs upstream's topology controller side by side (BENCH_N clusters of BENCH_CASE, a fresh control plane per side): a table per N.
	$(GO) run ./hack/benchscale -bin-dir $(BIN) -n $(BENCH_N) -case $(BENCH_CASE) $(BENCH_FLAGS)

bench-scale-agent: control-plane-bins ## 1,000 Topologies through the agent alone, with a CPU profile of its webhooks.
	TOPOLOGY_BIN_DIR=$(BIN) $(GO) test ./test/e2e/ -run '^$$' -bench BenchmarkThousandTopologies -benchtime 1x -timeout 90m

vet: ## go vet and gofmt.
	$(GO) vet -tags kind ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt wants changes"; exit 1; }

GOLANGCI_LINT := $(BIN)/golangci-lint
LINT_DIR      := hack/lint

$(GOLANGCI_LINT): $(LINT_DIR)/go.mod $(LINT_DIR)/go.sum
	cd $(LINT_DIR) && GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@touch $@

lint: vet $(GOLANGCI_LINT) ## go vet, gofmt and golangci-lint (.golangci.yml; pinned in hack/lint).
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

$(CLUSTERCTL):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/cluster-api/cmd/clusterctl@v1.10.10

# clusterctl as users run it (move, describe) for the suites: the proxy
# refuses v1.14's separate clusterctl module; v1.13.6 speaks the v1beta2
# contract v1.14 stores.
CLUSTERCTL_USER_VERSION := v1.13.6
CLUSTERCTL_USER         := $(BIN)/clusterctl-$(CLUSTERCTL_USER_VERSION)

$(CLUSTERCTL_USER):
	mkdir -p $(BIN)/.clusterctl && GOBIN=$(BIN)/.clusterctl $(GO) install sigs.k8s.io/cluster-api/cmd/clusterctl@$(CLUSTERCTL_USER_VERSION)
	mv $(BIN)/.clusterctl/clusterctl $@ && rmdir $(BIN)/.clusterctl

.PHONY: clusterctl
clusterctl: $(CLUSTERCTL_USER) ## Build clusterctl v1.13.6 into bin/ for the suites that run it as users do.

parity-live: build control-plane-bins capi-bins ## Compare the agent with upstream's topology controller, live (Cluster API v1.14.2, ClusterTopology on); fails short of parity (make test judges it too, in test/upstream).
	go run ./hack/paritylive -bin-dir $(BIN)

bump-capi: ## Move every Cluster API pin to VERSION (make bump-capi VERSION=v1.14.3) once the Go module proxy serves it, then run parity-live; names what still says the old release.
	@test "$(VERSION)" != dev || { echo "give the release: make bump-capi VERSION=v1.14.3"; exit 2; }
	$(GO) run ./hack/bumpcapi -version $(VERSION) -parity

parity-live-providers: build control-plane-bins capi-bins ## parity-live over the classes of 12 infrastructure providers (testdata/providers, their CRDs from ../shared): generated objects compared, no provider controller run.
	go run ./hack/paritylive -bin-dir $(BIN) -providers $(SHARED)/fixtures/providers

parity: build $(CLUSTERCTL) ## Compare plan -f with clusterctl v1.10.10 on ../shared fixtures and testdata.
	hack/parity.sh $(BIN)/kubectl-topology $(CLUSTERCTL) $(SHARED)

clean: ## Remove build output.
	rm -rf $(BIN)/kubectl-topology

LOCAL_DIR ?= $(CURDIR)/.local

.PHONY: local-up local-down
local-up: control-plane-bins capi-bins ## Start etcd, kube-apiserver, kube-controller-manager and Cluster API's managers under .local/ (KUBECONFIG=.local/kubeconfig).
	$(GO) run ./hack/localcluster up -dir $(LOCAL_DIR) -bin-dir $(BIN) -crd-dir manifests/crd

local-down: ## Stop the local control plane; its data stays in .local/.
	$(GO) run ./hack/localcluster down -dir $(LOCAL_DIR)

# The kind path: real workload clusters as containers, on a private Docker
# daemon (hack/kind/dockerd.sh) with images built offline. Needs root.
KIND_DIR ?= $(CURDIR)/.kind

.PHONY: kind-images kind-images-ahead kind-up kind-down e2e-kind
kind-images: capi-bins ## Only the kind path's images (node per Kubernetes release, load balancer, providers, agent), each built when missing.
	KIND_STATE=$(KIND_DIR) hack/kind/up.sh images

kind-images-ahead: ## Only the kind images that need nothing from bin/ (node base, load balancer, nodes of releases control-plane-bins does not build).
	KIND_STATE=$(KIND_DIR) hack/kind/up.sh images-ahead

kind-up: build control-plane-bins capi-bins clusterctl ## A kind management cluster with Cluster API, the Docker provider and the agent in it, installed by clusterctl init (KUBECONFIG=.kind/kubeconfig).
	KIND_STATE=$(KIND_DIR) hack/kind/up.sh

kind-down: ## Remove the kind cluster, every container and network of the private daemon, and stop it; images stay cached.
	KIND_STATE=$(KIND_DIR) hack/kind/down.sh

e2e-kind: kind-up ## A workload cluster of containers through the plugin and the agent, on kind; kind-down afterwards, pass or fail.
	mkdir -p $(TEST_LOG_DIR); DOCKER_HOST=$$(KIND_STATE=$(KIND_DIR) hack/kind/dockerd.sh host) KIND_KUBECONFIG=$(KIND_DIR)/kubeconfig \
		KIND_UPGRADE_VERSION=$$(cd hack/kind/kubernetes-next && $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes) \
		KIND_CLUSTERCTL=$(CLUSTERCTL_USER) KIND_CLUSTERCTL_CONFIG=$(KIND_DIR)/clusterctl.yaml \
		$(GO) test -tags kind ./test/kind/ -count=1 -v -timeout 45m 2>&1 | tee $(TEST_LOG_DIR)/e2e-kind.log; status=$${PIPESTATUS[0]}; \
	KIND_STATE=$(KIND_DIR) hack/kind/down.sh; \
	if [ $$status -ne 0 ]; then hack/test-failures.sh $(TEST_LOG_DIR)/e2e-kind.log; fi; exit $$status

.PHONY: provider-repo
provider-repo: ## A clusterctl provider repository of release VERSION (e.g. v0.1.0) in dist/clusterctl, for clusterctl init --addon kubectl-topology.
	$(GO) run ./hack/manifests -repo $(CURDIR)/dist/clusterctl -version $(VERSION)

.PHONY: dist
dist: ## Plugin archives for every Krew platform and dist/krew.yaml with their sha256.
	VERSION=$(VERSION) hack/dist.sh

.PHONY: run
run: demo ## Same as make demo.

.PHONY: demo demo-down
demo: build local-up ## Local control plane, agent (install --local), the example applied, its status.
	LOCAL_DIR=$(LOCAL_DIR) BIN=$(BIN) hack/demo.sh

demo-down: build ## Delete the example, uninstall the agent, stop the local control plane.
	LOCAL_DIR=$(LOCAL_DIR) BIN=$(BIN) hack/demo-down.sh
