# phasegang developer tasks. `make` (or `make help`) lists them.
# Every tool is a Go module (see the tool directive in go.mod), so a fresh
# clone needs nothing but Go and the module proxy.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BIN      ?= bin
FUZZTIME ?= 5s
CONTROLLER_GEN := $(GO) tool controller-gen

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
manifests: ## Generate the CRD (config/crd/bases) and the RBAC ClusterRole (config/rbac) from the markers.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=phasegang-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac

##@ Test

.PHONY: test
test: ## Run every test (the one test command; CI runs it too).
	$(GO) test ./...

.PHONY: e2e
e2e: ## Build and start the local control plane (test/cluster), run the e2e suite against it, stop it.
	hack/e2e.sh

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

##@ Build

.PHONY: build
build: ## Build bin/phasegang, stamped with VERSION.
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/phasegang ./cmd/phasegang
