# gitops-addon — run `make help` for the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

BIN            := $(CURDIR)/bin
IMAGE          ?= quay.io/gitops-addon/gitops-addon:latest
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
GIT_COMMIT     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS        := -s -w -X github.com/gitops-addon/gitops-addon/pkg/version.Version=$(VERSION) -X github.com/gitops-addon/gitops-addon/pkg/version.GitCommit=$(GIT_COMMIT)
KUBE_VERSION   ?= v1.35.4
ETCD_VERSION   ?= v3.6.8
OCM_VERSION    ?= v1.2.1
# Argo CD and the GitOps operator of the local fleet (hack/build-argocd.sh says why these).
ARGOCD_VERSION          ?= v3.2.11
ARGOCD_OPERATOR_VERSION ?= v0.18.0
TEST_TIMEOUT   ?= 40m
# Integration tests start real kube-apiservers: run packages one at a time on small machines.
# -count=1 below: tests that drive real processes always run; Go's test cache does not see
# what they depend on outside the module (./bin, the processes' behaviour).
TEST_PARALLEL  ?= 1
# The pull model benchmark's sizes: <clusters>x<applications>, comma-separated.
PULL_BENCH_SIZES ?= 100x1000,1000x5000
# The fleet benchmark's sizes: numbers of managed clusters, comma-separated.
FLEET_BENCH_SIZES ?= 100,300,1000

export KUBE_VERSION ETCD_VERSION OCM_VERSION ARGOCD_VERSION ARGOCD_OPERATOR_VERSION

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: controller-gen ## Generate deepcopy functions and the agent chart's CRDs (from pinned upstream modules).
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./pkg/api/...
	go run ./hack/crdgen

.PHONY: manifests
manifests: controller-gen ## Generate the GitOpsCluster CRD into the manager chart.
	$(BIN)/controller-gen crd paths=./pkg/api/... output:crd:dir=charts/gitops-addon/crds

.PHONY: lint
lint: ## Check formatting (gofmt) and run go vet.
	@out=$$(gofmt -l cmd pkg test manifests hack charts); if [[ -n "$$out" ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	go vet ./...

.PHONY: build
build: ## Build bin/gitops-addon.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/gitops-addon ./cmd/gitops-addon

.PHONY: render
render: ## Print the objects shipped to a sample vanilla cluster (CLUSTER=name, ARGS=--openshift ...).
	go run ./cmd/gitops-addon render --cluster $(or $(CLUSTER),cluster1) $(ARGS)

##@ Tests

.PHONY: test
test: e2e-env controller-gen ## Run every test: unit, generated files, chart, integration (real kube-apiserver) and end-to-end (real OCM hub, spokes, Argo CD and GitOps operator).
	go test -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PARALLEL) ./...

.PHONY: test-unit
test-unit: controller-gen ## Run the tests that need no apiserver.
	go test $$(go list ./... | grep -v -e /test/integration -e /test/e2e -e /test/harness)

.PHONY: test-integration
test-integration: test-env ## Run the integration tests on a real kube-apiserver + etcd.
	go test -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PARALLEL) ./test/integration/...

.PHONY: test-e2e
test-e2e: e2e-env ## Run the end-to-end tests: a real OCM hub, spokes, Argo CD and the GitOps operator as local processes.
	go test -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_PARALLEL) -v ./test/harness/... ./test/e2e/...

.PHONY: test-argocd-agent
test-argocd-agent: e2e-env ## Run the Argo CD Agent end-to-end subtest with the real principal and agents: ARGOCD_AGENT_BIN=/path/to/argocd-agent (your build; argocd-agent is not on the Go module proxy).
	@test -x "$(ARGOCD_AGENT_BIN)" || { echo "ARGOCD_AGENT_BIN must name an argocd-agent binary (github.com/argoproj-labs/argocd-agent, built by you): see README, Argo CD Agent mode"; exit 2; }
	ARGOCD_AGENT_BIN="$(ARGOCD_AGENT_BIN)" go test -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestArgoCD$$/Argo_CD_Agent' ./test/e2e/

.PHONY: bench
bench: ## Run the Go benchmarks (the hub's per-cluster render); the report is docs/benchmarks.md.
	go test -run '^$$' -bench . -benchmem -count 1 ./pkg/...

.PHONY: bench-pull
bench-pull: test-env ## Benchmark the pull model on a real kube-apiserver (PULL_BENCH_SIZES=100x1000,1000x5000); report in docs/benchmarks.md.
	PULL_BENCH_SIZES=$(PULL_BENCH_SIZES) go test -run '^$$' -bench BenchmarkPullModel -benchtime 1x -timeout 60m ./test/bench/

.PHONY: bench-fleet
bench-fleet: e2e-env build ## Benchmark the hub manager at fleet scale on a real OCM hub (FLEET_BENCH_SIZES=100,300,1000); report in docs/benchmarks.md.
	FLEET_BENCH_SIZES=$(FLEET_BENCH_SIZES) go test -run '^$$' -bench BenchmarkFleet -benchtime 1x -timeout 120m ./test/bench/

.PHONY: test-env
test-env: ## Build kube-apiserver v1.35.4 and etcd v3.6.8 from source into ./bin (cached; versions pinned above).
	hack/build-k8s.sh $(BIN) etcd kube-apiserver

.PHONY: e2e-env
e2e-env: argocd-env ## Build everything a local fleet runs: test-env, kube-controller-manager v1.35.4, OCM v1.2.1, Argo CD and the GitOps operator (cached in ./bin).
	hack/build-k8s.sh $(BIN) etcd kube-apiserver kube-controller-manager
	hack/build-ocm.sh $(BIN)

.PHONY: argocd-env
argocd-env: ## Install redis-server and git (Debian) when missing; build Argo CD v3.2.11 and argocd-operator v0.18.0 from source into ./bin (cached).
	hack/ensure-debian-packages.sh redis-server=redis-server git=git
	hack/build-argocd.sh $(BIN) argocd argocd-operator

##@ Local fleet

.PHONY: demo
demo: e2e-env ## Start a local OCM hub + 2 spokes (vanilla, OpenShift-like), install gitops-addon, apply the seed GitOpsCluster; Ctrl-C cleans up.
	go build -o $(BIN)/demo ./hack/demo
	$(BIN)/demo

##@ Tools

.PHONY: controller-gen
controller-gen: $(BIN)/controller-gen ## Build controller-gen (pinned in hack/tools) into ./bin.
$(BIN)/controller-gen: hack/tools/go.mod
	cd hack/tools && go build -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Image

.PHONY: image
image: ## Build the container image (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) -t $(IMAGE) .
