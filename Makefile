# phasegang developer tasks. `make` (or `make help`) lists them.
# Every tool is a Go module (see the tool directive in go.mod), so a fresh
# clone needs nothing but Go and the module proxy.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BIN      ?= bin
FUZZTIME ?= 5s
CONTROLLER_GEN := $(GO) tool controller-gen
# The controller's image (make image); config/manager and the chart name it too.
IMAGE    ?= ghcr.io/phasegang/phasegang
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
# Nested modules, kept out of the main go.mod so the phasegang binary and
# `go test ./...` do not compile their dependencies: the image builder
# (go-containerregistry) and the chart test (Helm).
MODULES  := hack/image test/chart

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Generate

.PHONY: generate
generate: ## Generate the API's deepcopy methods (zz_generated.deepcopy.go).
	$(CONTROLLER_GEN) object paths=./apis/...

# generateEmbeddedObjectMeta keeps the labels and annotations of the phases'
# pod templates: without it the API server prunes template.metadata to {}.
.PHONY: manifests
manifests: ## Generate the CRD (config/crd/bases) and the RBAC ClusterRole (config/rbac) from the markers; copy both into the chart.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=phasegang-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	hack/sync-chart.sh

##@ Test

.PHONY: test
test: ## Run every test (the one test command; CI runs it too): the main module's, then the nested modules'.
	$(GO) test ./...
	@set -e; for m in $(MODULES); do echo "$(GO) -C $$m test ./..."; $(GO) -C $$m test ./...; done

.PHONY: e2e
e2e: ## Build and start the local control plane (test/cluster), run the e2e suite against it, stop it.
	hack/e2e.sh

.PHONY: e2e-real
e2e-real: ## As root: start the local control plane with a real node (containerd + kubelet, test/cluster/realnode.sh), run the TestReal* e2e tests on real processes, stop it, check the host is as before.
	hack/e2e-real.sh

.PHONY: e2e-torch
e2e-torch: ## As root: the real-node tier plus a real PyTorch DDP pipeline (builds Debian's python3-torch image with mmdebstrap, ~5 min cold; not in CI).
	E2E_TORCH=1 E2E_ARGS='-run ^TestReal(PyTorch)$$' hack/e2e-real.sh

.PHONY: policy
policy: ## Run the policy suite (phasegang simulate --suite): fails where phasegang misses one of its targets (docs/simulator.md#policy-suite).
	$(GO) run ./cmd/phasegang simulate --suite --stats

.PHONY: peers
peers: ## Run the same pipelines through plain pods, Kubernetes' gang API, phasegang and Kueue v0.17.0, each on a fresh local cluster (test/peers; ~30 min, root; CI runs make peers-ci). PEERS_ARGS adds flags.
	$(GO) run ./test/peers $(PEERS_ARGS)

.PHONY: peers-ci
peers-ci: ## The peers' small run CI makes (.ci/run): workload ci through plain, kube-gang, phasegang and Kueue (~4 min, root); fails if phasegang shows a partial gang.
	$(GO) run ./test/peers -workloads ci -systems plain,kube-gang,phasegang,kueue

.PHONY: bench
bench: ## Run the benchmarks.
	$(GO) test -run='^$$' -bench=. -benchmem ./...

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 5s).
	FUZZTIME=$(FUZZTIME) GO=$(GO) hack/fuzz.sh

.PHONY: lint
lint: ## Check formatting (gofmt) and run go vet.
	@out="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@set -e; for m in $(MODULES); do echo "$(GO) -C $$m vet ./..."; $(GO) -C $$m vet ./...; done

##@ Build

.PHONY: build
build: ## Build bin/phasegang, stamped with VERSION.
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/phasegang ./cmd/phasegang

.PHONY: image
image: ## Build the controller image (IMAGE:VERSION) into bin/phasegang-image.tar (OCI layout + docker save; no Docker needed).
	$(GO) -C hack/image run . -src $(CURDIR) -ref $(IMAGE):$(VERSION) -version $(VERSION) \
		-revision "$$(git rev-parse HEAD 2>/dev/null)" -arch $(IMAGE_ARCH) -o $(abspath $(BIN))/phasegang-image.tar
