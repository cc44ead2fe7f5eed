# kubectl-topology — build, test and generate.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

BIN        := $(CURDIR)/bin
TOOLS_DIR  := hack/tools
GO         ?= go
# k8s.io/kubernetes is not in the checksum database the proxy serves.
export GONOSUMDB := k8s.io/kubernetes

CONTROLLER_GEN := $(BIN)/controller-gen
CLUSTERCTL     ?= $(BIN)/clusterctl
SHARED         ?= $(CURDIR)/../shared

.PHONY: all build test unit generate manifests bench lint fmt vet parity clean help

all: build ## Build the binaries.

help: ## List targets.
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-topology.
	$(GO) build -o $(BIN)/kubectl-topology ./cmd/kubectl-topology

test: vet ## Run every test: unit, golden, table and fuzz seeds.
	$(GO) test ./... -count=1

unit: ## Unit tests only, fast.
	$(GO) test ./pkg/... -count=1

$(CONTROLLER_GEN): $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum
	cd $(TOOLS_DIR) && GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen
	@touch $@

generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object paths=./pkg/api/...

manifests: $(CONTROLLER_GEN) ## Generate CRDs into manifests/crd.
	$(CONTROLLER_GEN) crd paths=./pkg/api/... output:crd:artifacts:config=manifests/crd
	@for f in manifests/crd/*.yaml; do sed -i '/^---$$/d' "$$f"; done

bench: ## Run the benchmarks.
	$(GO) test ./pkg/... -run '^$$' -bench . -benchmem

vet: ## go vet and gofmt.
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt wants changes"; exit 1; }

lint: vet ## Static checks.

fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

$(CLUSTERCTL):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/cluster-api/cmd/clusterctl@v1.10.10

parity: build $(CLUSTERCTL) ## Compare plan -f with clusterctl v1.10.10 on ../shared fixtures and testdata.
	hack/parity.sh $(BIN)/kubectl-topology $(CLUSTERCTL) $(SHARED)

clean: ## Remove build output.
	rm -rf $(BIN)/kubectl-topology

.PHONY: run
run: build ## Plan the example cluster offline.
	$(BIN)/kubectl-topology plan -f examples/docker/
