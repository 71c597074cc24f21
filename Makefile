# gitops-addon — run `make help` for the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

BIN            := $(CURDIR)/bin
# The version comes from the release tag (vX.Y.Z); between tags, `git describe` says how far.
VERSION        ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.0.0-dev)
IMAGE_REPO     ?= ghcr.io/gitops-addon/gitops-addon
IMAGE          ?= $(IMAGE_REPO):$(patsubst v%,%,$(VERSION))
GIT_COMMIT     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS        := -s -w -X github.com/gitops-addon/gitops-addon/pkg/version.Version=$(VERSION) -X github.com/gitops-addon/gitops-addon/pkg/version.GitCommit=$(GIT_COMMIT)
KUBE_VERSION   ?= v1.37.2
# The oldest Kubernetes the hub and spokes support (docs/operations/install.md, Supported Kubernetes versions):
# its kube-apiserver runs the integration test TestOnTheOldestSupportedKubernetes.
OLDEST_KUBE_VERSION ?= v1.29.6
# The Kubernetes releases between the oldest and the newest that make test-compat runs the
# version-sensitive integration tests on (docs/operations/compatibility.md).
COMPAT_KUBE_VERSIONS ?= v1.35.4 v1.36.3
# The integration tests that depend on what an apiserver release serves (CRD schemas and
# CEL, admission policies, RBAC, the charts, the hub Argo CD CRDs): make test runs them on
# OLDEST_KUBE_VERSION too, make test-compat on COMPAT_KUBE_VERSIONS.
VERSION_TESTS  ?= TestACMGitOpsClusterYAMLIsAccepted|TestHubRejectsInvalidGitOpsClusters|TestHelmUpgradeCarriesTheCRDForward|TestChartInstallsAndUninstallsOnARealAPIServer|TestHubRBACIsLeastPrivilege|TestPullModelOnEachHubArgoCD|TestHubRendersManifestWorks
ETCD_VERSION   ?= v3.6.8
OCM_VERSION    ?= v1.2.1
# The OCM API release of the oldest OCM hub supported (OCM v1.2's, which OCM_VERSION
# requires): make test-oldest gives the version-sensitive tests its CRDs, with
# OLDEST_KUBE_VERSION's kube-apiserver.
OLDEST_OCM_API_VERSION ?= v1.2.0
# Argo CD and the GitOps operator of the local fleet (hack/build-argocd.sh says why these).
ARGOCD_VERSION          ?= v3.2.11
ARGOCD_OPERATOR_VERSION ?= v0.18.0
# OCM's addons for reading spokes' live resources from the hub (make ocm-addons-env): the
# newest releases the Go module proxy serves (cluster-proxy v0.10.0 is the first with its
# user server on OCM API v1.2; v0.8.0, v0.9.x and v0.11.0 are refused).
CLUSTER_PROXY_VERSION          ?= v0.10.0
MANAGED_SERVICEACCOUNT_VERSION ?= v0.9.0
# A guard against a hung test, per package: the end-to-end package took 26 to 45 min on 2
# cores this week (docs/dev/test-runs.md), the longest beside the other stream.
TEST_TIMEOUT   ?= 60m
# Test packages run two at a time: the end-to-end package waits on its fleets' controllers
# most of its time (55% of 2 cores idle, measured), which the integration package's
# apiservers fill. Real-pod fleets take turns by a lock (test/harness). -count=1 below:
# tests that drive real processes always run; Go's test cache does not see what they
# depend on outside the module (./bin, the processes' behaviour).
TEST_PARALLEL  ?= 2
# How many of the verify gate and the builds of e2e-env make test runs at a time. One: the
# builds keep 2 cores busy on their own, and two side by side were slower on a 2-core
# machine with empty Go caches (Argo CD 1,080 s beside Kubernetes, 211 s alone). More
# cores: BUILD_JOBS=2 or more.
BUILD_JOBS     ?= 1
# The test binaries are linked without DWARF (-w): nothing reads it (stack traces come from
# the pclntab), and each link takes about 40 % less (a controller package's test binary
# 4.0 s to 2.3 s, the end-to-end package's 9.9 s to 5.9 s), over some 60 test binaries.
TEST_LDFLAGS   ?= -w
# The pull model benchmark's sizes: <clusters>x<applications>, comma-separated.
PULL_BENCH_SIZES ?= 100x1000,1000x5000
# The fleet benchmark's sizes: numbers of managed clusters, comma-separated.
FAULTS_BENCH_CLUSTERS ?= 1000
FLEET_BENCH_SIZES ?= 100,1000

# Tools of the verify gate, pinned (installed into ./bin with `go install tool@version`).
GOLANGCI_LINT_VERSION ?= v2.15.0
ACTIONLINT_VERSION    ?= v1.7.12
HELM_VERSION          ?= v3.22.0
# The packages whose tests `make verify` runs (static checks of the tree, the image build);
# `make test` runs the others after it.
VERIFY_PKGS    := ./test/generated/... ./hack/crdgen/... ./test/repo/... ./test/chart/... ./test/image/...
# The tests that need no kube-apiserver, no root and no ./bin but controller-gen.
UNIT_PKGS       = $(shell go list ./... | grep -v -e /test/integration -e /test/e2e -e /test/harness -e /test/bench -e /test/image)

export KUBE_VERSION OLDEST_KUBE_VERSION ETCD_VERSION OCM_VERSION ARGOCD_VERSION ARGOCD_OPERATOR_VERSION

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: controller-gen ## Generate deepcopy functions, the agent chart's CRDs (from pinned upstream modules) and docs/reference (make docs).
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./pkg/api/...
	go run ./hack/crdgen
	go run ./hack/docgen

.PHONY: docs
docs: ## Generate docs/reference from the code: the API (crd-ref-docs), conditions and Events, the commands' flags (cobra), the chart values (helm-docs); and the reason tables of docs/troubleshooting.md, between their markers.
	go run ./hack/docgen

.PHONY: manifests
manifests: controller-gen ## Generate the GitOpsCluster CRD into the manager chart.
	$(BIN)/controller-gen crd paths=./pkg/api/... output:crd:dir=charts/gitops-addon/crds

.PHONY: verify
verify: fmt-vet verify-deep ## The gate CI runs: gofmt, go vet, golangci-lint, generated files current, helm lint, the image built from the Dockerfile, the repository clean, the workflows linted.

# verify's two halves. fmt-vet is make test's gate before its builds (seconds warm, and its
# compilations are the tests' too); verify-deep runs in make test's second stream, beside
# the end-to-end package.
.PHONY: fmt-vet verify-deep
fmt-vet:
	@out=$$(gofmt -l cmd pkg test manifests hack charts); if [[ -n "$$out" ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	go vet ./...
verify-deep: verify-tools controller-gen
	$(BIN)/golangci-lint run ./...
	$(BIN)/actionlint -shellcheck=$$(command -v shellcheck) .github/workflows/*.yaml
	go test -count=1 -ldflags=$(TEST_LDFLAGS) $(VERIFY_PKGS)

.PHONY: lint
lint: fmt-vet golangci-lint ## Check formatting and run go vet and golangci-lint (the static part of verify).
	$(BIN)/golangci-lint run ./...

.PHONY: build
build: ## Build bin/gitops-addon.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/gitops-addon ./cmd/gitops-addon

.PHONY: render
render: ## Print the objects shipped to a sample vanilla cluster (CLUSTER=name, ARGS=--openshift ...).
	go run ./cmd/gitops-addon render --cluster $(or $(CLUSTER),cluster1) $(ARGS)

##@ Tests

.PHONY: test
test: ## Run every check and test: gofmt, go vet and the builds of make e2e-env (BUILD_JOBS at a time), then the rest of make verify, unit, integration (real kube-apiserver, the oldest and every supported release), fuzz and end-to-end (real OCM hub, spokes, Argo CD and GitOps operator) in two streams.
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) fmt-vet e2e-env verify-tools controller-gen
	@$(MAKE) --no-print-directory argocd-agent-notice
	@$(MAKE) --no-print-directory -j$(TEST_PARALLEL) test-stream-e2e test-stream-rest

# make test's two streams, side by side with TEST_PARALLEL=2 (one after the other with 1):
# the end-to-end package, whose fleets leave about half of 2 cores idle, and beside it
# everything else in order: the oldest kube-apiserver's build, the rest of the verify gate,
# the other test packages (TEST_PARALLEL at a time), the fuzz targets, make test-compat's
# kube-apiservers' build, then the version-sensitive tests on the oldest and on each of
# those, side by side: nothing runs after the end-to-end package but what waits for it.
# The cores are busy in both streams (87 % in a cold run), so this shortens a run by the
# idle time it fills, not by the work.
# The end-to-end stream first builds Argo CD's web UI where it can (argocd-ui-if-possible),
# beside the rest's first steps: the rest is the longer stream, but the UI's 3.5 minutes
# share its cores: a cold run took 61 min 24 s with it (56 min 53 s without), then 58 min
# 19 s once TEST_LDFLAGS and the version runs side by side won that back.
.PHONY: test-stream-e2e test-stream-rest
test-stream-e2e: argocd-ui-if-possible
	ARGOCD_WITH_UI_BIN=$(ARGOCD_WITH_UI) go test -count=1 -ldflags=$(TEST_LDFLAGS) -timeout $(TEST_TIMEOUT) ./test/e2e/
test-stream-rest: oldest-env
	@$(MAKE) --no-print-directory verify-deep
	go test -count=1 -ldflags=$(TEST_LDFLAGS) -timeout $(TEST_TIMEOUT) -p $(TEST_PARALLEL) $$(go list ./... | grep -v -e /test/e2e -e /test/generated -e /hack/crdgen -e /test/repo -e /test/chart -e /test/image)
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory compat-env
	@$(MAKE) --no-print-directory --output-sync=target -j$(words test-oldest $(COMPAT_RUNS)) test-oldest $(COMPAT_RUNS)

.PHONY: test-oldest
test-oldest: test-env ## Run the version-sensitive integration tests (VERSION_TESTS) on the oldest supported kube-apiserver (OLDEST_KUBE_VERSION) with the oldest OCM hub's CRDs (OLDEST_OCM_API_VERSION); make test does.
	$(call version-tests-on,$(OLDEST_KUBE_VERSION),$(OLDEST_OCM_API_VERSION))

.PHONY: test-compat
test-compat: test-env compat-env ## Build kube-apiserver at each of COMPAT_KUBE_VERSIONS (the releases between the oldest and the newest) and run the version-sensitive integration tests (VERSION_TESTS) on each, side by side; make test does.
	@$(MAKE) --no-print-directory --output-sync=target -j$(words $(COMPAT_RUNS)) $(COMPAT_RUNS)

.PHONY: compat-env
compat-env: ## Build kube-apiserver at each of COMPAT_KUBE_VERSIONS into ./bin (cached): what make test-compat runs.
	hack/build-k8s.sh $(BIN) $(addprefix kube-apiserver@,$(COMPAT_KUBE_VERSIONS))

# One run of VERSION_TESTS per release of COMPAT_KUBE_VERSIONS. make test runs them and
# test-oldest side by side at the end of its longer stream: each holds one apiserver and
# leaves most of a core idle, and run one after the other they were the run's last 2 minutes.
COMPAT_RUNS = $(addprefix test-on-kube-,$(COMPAT_KUBE_VERSIONS))
.PHONY: $(COMPAT_RUNS)
$(COMPAT_RUNS): test-on-kube-%:
	$(call version-tests-on,$*)

# version-tests-on,VERSION[,OCM_API]: the command that runs VERSION_TESTS on
# bin/kube-apiserver-VERSION, with the OCM CRDs of open-cluster-management.io/api OCM_API
# (empty: go.mod's).
version-tests-on = TESTENV_KUBE_APISERVER_VERSION=$(1) TESTENV_OCM_API_VERSION=$(2) go test -count=1 -ldflags=$(TEST_LDFLAGS) -timeout $(TEST_TIMEOUT) -run '^($(VERSION_TESTS))$$' ./test/integration/

# The fuzz targets as package:Function:executions. `make test` runs each for its number of
# executions (about 10 s each on 2 cores): a count, not a duration, because Go 1.26's fuzz
# coordinator can fail a timed run that found nothing with a bare "context deadline
# exceeded" (golang/go#75804, fixed in Go 1.27). Their seed corpora (f.Add, testdata/fuzz)
# run with the unit tests too. TestFuzzTargetsAreListed (test/repo) fails when a Fuzz
# function is missing here.
FUZZ_TARGETS = ./pkg/hub/addon:FuzzCustomizedVariables:1000 ./pkg/contract/appresources:FuzzDecode:300000 \
	./pkg/contract:FuzzSettings:200000 ./pkg/hub/pullmodel/feedback:FuzzSpokeStatusOnTheHub:15000 ./pkg/hub/pullmodel:FuzzValidate:40000 \
	./pkg/spoke/routeapi:FuzzClassify:40000 ./pkg/hub/gitopscluster:FuzzGitOpsClusterSpec:8000 ./pkg/contract/apptree:FuzzDecodeTree:400000
FUZZTIME ?=

.PHONY: fuzz
fuzz: ## Run each fuzz target for its executions in FUZZ_TARGETS (make test does), or for FUZZTIME (FUZZTIME=10m for a long run); a finding fails the run and is kept in its package's testdata/fuzz.
	@for t in $(FUZZ_TARGETS); do IFS=: read -r pkg name execs <<<"$$t"; budget=$(or $(FUZZTIME),$${execs}x); \
	  echo "fuzz $$name ($$pkg) for $$budget"; go test -ldflags=$(TEST_LDFLAGS) -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget $$pkg || exit 1; done

.PHONY: test-unit
test-unit: controller-gen ## Run the tests that need no kube-apiserver, no root and nothing in ./bin but controller-gen.
	go test -count=1 -ldflags=$(TEST_LDFLAGS) $(UNIT_PKGS)

# The hub's Argo CD with its web UI, for the browser subtests and make demo: the one given
# (ARGOCD_WITH_UI_BIN), else make argocd-ui's when it could build one (shell, for recipes).
ARGOCD_WITH_UI = $${ARGOCD_WITH_UI_BIN:-$$(test -x $(BIN)/argocd-ui && echo $(BIN)/argocd-ui)}

# make argocd-ui where it can build (GitHub reachable, or ARGO_UI_GIT): the browser subtests
# then run in make test, and make demo serves the UI. Where argo-ui cannot be had (the
# script exits with 3), a notice says what is not run; any other failure fails.
.PHONY: argocd-ui-if-possible
argocd-ui-if-possible: argocd-env
	@rc=0; hack/build-argocd-ui.sh $(BIN) || rc=$$?; \
	if [[ $$rc -eq 3 ]]; then \
	  printf '\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n\n' \
	    '************************************************************************************' \
	    '* NOT RUN: the browser subtests (Chromium drives the hub'\''s Argo CD web UI): make   *' \
	    '* argocd-ui could not build Argo CD'\''s UI here, for the reason above (argo-ui comes *' \
	    '* from GitHub, for which a clone can stand in: ARGO_UI_GIT=/path/to/argo-ui; or    *' \
	    '* nodejs, npm and chromium are missing). The API-level subtests of the same pages  *' \
	    '* run (docs/guides/pull-model.md#the-hubs-argo-cd-ui).                             *' \
	    '************************************************************************************'; \
	elif [[ $$rc -ne 0 ]]; then exit $$rc; fi

.PHONY: argocd-agent-notice
argocd-agent-notice:
	@if [[ -z "$(ARGOCD_AGENT_BIN)" ]]; then \
	  printf '\n%s\n%s\n%s\n%s\n%s\n\n' \
	    '************************************************************************************' \
	    '* NOT RUN: the Argo CD Agent interop subtest (the real argocd-agent principal and  *' \
	    '* agents carrying Applications). argocd-agent is not on the Go module proxy: build *' \
	    '* it yourself and run `make test-argocd-agent ARGOCD_AGENT_BIN=...`                *' \
	    '* (docs/guides/argocd-agent.md).                                                   *'; \
	  printf '%s\n\n' '************************************************************************************'; \
	fi

.PHONY: test-integration
test-integration: test-env ## Run the integration tests on a real kube-apiserver + etcd.
	go test -count=1 -ldflags=$(TEST_LDFLAGS) -timeout $(TEST_TIMEOUT) -p $(TEST_PARALLEL) ./test/integration/...

.PHONY: test-e2e
test-e2e: e2e-env argocd-ui-if-possible ## Run the end-to-end tests: a real OCM hub, spokes, Argo CD and the GitOps operator as local processes.
	ARGOCD_WITH_UI_BIN=$(ARGOCD_WITH_UI) go test -count=1 -ldflags=$(TEST_LDFLAGS) -timeout $(TEST_TIMEOUT) -p $(TEST_PARALLEL) -v ./test/harness/... ./test/e2e/...

.PHONY: test-argocd-agent
test-argocd-agent: e2e-env argocd-ui-if-possible ## Run the Argo CD Agent end-to-end subtest with the real principal and agents: ARGOCD_AGENT_BIN=/path/to/argocd-agent (your build; argocd-agent is not on the Go module proxy).
	@test -x "$(ARGOCD_AGENT_BIN)" || { echo "ARGOCD_AGENT_BIN must name an argocd-agent binary (github.com/argoproj-labs/argocd-agent, built by you): see docs/guides/argocd-agent.md"; exit 2; }
	ARGOCD_WITH_UI_BIN=$(ARGOCD_WITH_UI) ARGOCD_AGENT_BIN="$(ARGOCD_AGENT_BIN)" go test -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestArgoCD$$/vanilla_leaves$$/Argo_CD_Agent_mode' ./test/e2e/ \
	  | tee $(BIN)/test-argocd-agent.log
	@grep -q -- '--- PASS: .*with_the_real_argocd-agent' $(BIN)/test-argocd-agent.log || \
	  { echo "the argocd-agent interop subtest did not pass or did not run: see $(BIN)/test-argocd-agent.log"; exit 1; }

.PHONY: test-live-resources
test-live-resources: e2e-env ocm-addons-env argocd-ui-if-possible ## Run the live-resources end-to-end test (opt-in): OCM's cluster-proxy and managed-serviceaccount built from source and installed with their own charts on a real-pod fleet; the hub's argocd-server reads each spoke's live manifests, events and Pod logs through them, and cannot write.
	ARGOCD_WITH_UI_BIN=$(ARGOCD_WITH_UI) GITOPS_ADDON_LIVE_RESOURCES=1 CLUSTER_PROXY_VERSION=$(CLUSTER_PROXY_VERSION) MANAGED_SERVICEACCOUNT_VERSION=$(MANAGED_SERVICEACCOUNT_VERSION) \
	  go test -count=1 -timeout 45m -v -run '^TestLiveResourcesOnRealPods$$' ./test/e2e/ | tee $(BIN)/test-live-resources.log
	@grep -q -- '^--- PASS: TestLiveResourcesOnRealPods' $(BIN)/test-live-resources.log || \
	  { echo "the live-resources test did not pass or did not run: see $(BIN)/test-live-resources.log"; exit 1; }

.PHONY: bench
bench: ## Run the Go benchmarks (the hub's per-cluster render); the report is docs/benchmarks.md.
	go test -run '^$$' -bench . -benchmem -count 1 ./pkg/...

.PHONY: bench-pull
bench-pull: test-env ## Benchmark the pull model on a real kube-apiserver, with redis-server (Debian, installed when missing) for the resource trees (PULL_BENCH_SIZES=100x1000,1000x5000); report in docs/benchmarks.md.
	hack/ensure-debian-packages.sh redis-server=redis-server
	PULL_BENCH_SIZES=$(PULL_BENCH_SIZES) go test -run '^$$' -bench BenchmarkPullModel -benchtime 1x -timeout 60m ./test/bench/

.PHONY: bench-fleet
bench-fleet: e2e-env build ## Benchmark the hub manager at fleet scale on a real OCM hub (FLEET_BENCH_SIZES=100,1000; FLEET_BENCH_TEMPLATE=off leaves out ACM's AddOnTemplate mechanism); report in docs/benchmarks.md.
	FLEET_BENCH_SIZES=$(FLEET_BENCH_SIZES) go test -run '^$$' -bench BenchmarkFleet -benchtime 1x -timeout 240m ./test/bench/

.PHONY: bench-faults
bench-faults: e2e-env build ## Inject faults half-way through a GitOpsCluster rollout and a pull burst on a real OCM hub with two manager replicas (leader killed or frozen, apiserver killed, APF 429s, clusters flapping, a feedback storm, etcd stalled; FAULTS_BENCH_CLUSTERS=1000, FAULTS_BENCH_APPS=5000, FAULTS_BENCH_WORKLOADS, FAULTS_BENCH_FAULTS; FAULTS_BENCH_FENCE=off runs both replicas active); report in docs/benchmarks.md.
	FAULTS_BENCH_CLUSTERS=$(FAULTS_BENCH_CLUSTERS) go test -run '^$$' -bench BenchmarkFaults -benchtime 1x -timeout 240m ./test/bench/

# The Kubernetes commands an environment builds (hack/build-k8s.sh: one go build per
# version); the targets below add what their fleets run.
KUBE_COMPONENTS = etcd kube-apiserver
fleet-env: KUBE_COMPONENTS += kube-controller-manager
pods-env e2e-env: KUBE_COMPONENTS += kube-controller-manager kubelet kube-scheduler kube-proxy

.PHONY: test-env
test-env: kube-env oldest-env ## Build kube-apiserver (KUBE_VERSION, and OLDEST_KUBE_VERSION, the oldest supported) and etcd from source into ./bin (cached; the versions are pinned at the top of this Makefile).

.PHONY: oldest-env
oldest-env: ## Build the oldest supported kube-apiserver (OLDEST_KUBE_VERSION) into ./bin (cached): what the integration tests on the oldest Kubernetes run.
	hack/build-k8s.sh $(BIN) kube-apiserver@$(OLDEST_KUBE_VERSION)

.PHONY: fleet-env
fleet-env: argocd-env kube-env ocm-env ## Build what the process fleet (make demo) runs, no root needed once git and redis-server are installed: etcd, kube-apiserver, kube-controller-manager, OCM, Argo CD and the GitOps operator (cached in ./bin).

.PHONY: e2e-env
e2e-env: fleet-env pods-env helm ## Build everything the tests' fleets run: fleet-env, then what nodes that run real pods need (root), the Argo CD image's Debian root filesystem and the helm CLI (cached in ./bin; make -j2 builds them side by side).
	hack/build-argocd-rootfs.sh $(BIN)

.PHONY: pods-env
pods-env: pods-packages kube-env coredns-env ## Install containerd, runc, the CNI plugins, iptables and mmdebstrap (Debian) when missing; build kubelet, kube-scheduler, kube-proxy and a small CoreDNS from source into ./bin (cached): what nodes that run real pods need.

.PHONY: argocd-env
argocd-env: ## Install redis-server and git (Debian) when missing; build Argo CD (ARGOCD_VERSION) and argocd-operator (ARGOCD_OPERATOR_VERSION) from source into ./bin (cached).
	hack/ensure-debian-packages.sh redis-server=redis-server git=git
	hack/build-argocd.sh $(BIN) argocd argocd-operator

.PHONY: argocd-ui
argocd-ui: argocd-env ## Build Argo CD (ARGOCD_VERSION) with its web UI into ./bin/argocd-ui (cached): its ui/ by yarn from the npm registry, argo-ui from GitHub or from ARGO_UI_GIT=/path/to/a-clone; installs nodejs, npm and chromium (Debian) when missing. make test and make demo use it.
	hack/build-argocd-ui.sh $(BIN)

.PHONY: ocm-addons-env
ocm-addons-env: ## Build OCM's cluster-proxy (CLUSTER_PROXY_VERSION, with the apiserver-network-proxy it pins) and managed-serviceaccount (MANAGED_SERVICEACCOUNT_VERSION) addons from source into ./bin (cached): what the hub's Argo CD would read spokes' live resources through.
	CLUSTER_PROXY_VERSION=$(CLUSTER_PROXY_VERSION) MANAGED_SERVICEACCOUNT_VERSION=$(MANAGED_SERVICEACCOUNT_VERSION) hack/build-ocm-addons.sh $(BIN)

# The parts of the environments above, each one build (make -j runs them side by side).
.PHONY: kube-env ocm-env coredns-env pods-packages
kube-env:
	hack/build-k8s.sh $(BIN) $(sort $(KUBE_COMPONENTS))
ocm-env:
	hack/build-ocm.sh $(BIN)
coredns-env:
	hack/build-coredns.sh $(BIN)
pods-packages:
	hack/ensure-debian-packages.sh containerd=containerd ctr=containerd runc=runc /usr/lib/cni/bridge=containernetworking-plugins iptables=iptables ip=iproute2 mmdebstrap=mmdebstrap

##@ Local fleet

.PHONY: demo
demo: $(if $(REAL_PODS),e2e-env,fleet-env) ## Start a local OCM hub + 2 spokes (vanilla, OpenShift-like), install gitops-addon, apply the seed GitOpsCluster; Ctrl-C cleans up. REAL_PODS=1: every part a real pod (root). The hub's argocd-server serves the web UI where make argocd-ui can build it.
	@$(MAKE) --no-print-directory argocd-ui-if-possible
	go build -o $(BIN)/demo ./hack/demo
	ARGOCD_WITH_UI_BIN=$(ARGOCD_WITH_UI) $(BIN)/demo $(if $(REAL_PODS),-real-pods)

##@ Tools

.PHONY: verify-tools
verify-tools: golangci-lint actionlint ## Install what verify needs: golangci-lint, actionlint, and (Debian) buildah, busybox-static, shellcheck.
	hack/ensure-debian-packages.sh buildah=buildah busybox=busybox-static shellcheck=shellcheck

.PHONY: golangci-lint
golangci-lint: $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) ## Build golangci-lint (pinned above) into ./bin.
$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@touch $@

.PHONY: actionlint
actionlint: $(BIN)/actionlint-$(ACTIONLINT_VERSION) ## Build actionlint (pinned above) into ./bin.
$(BIN)/actionlint-$(ACTIONLINT_VERSION):
	GOBIN=$(BIN) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	@touch $@

.PHONY: helm
helm: $(BIN)/helm-$(HELM_VERSION) ## Build the helm CLI (pinned above, the SDK version of go.mod) into ./bin.
$(BIN)/helm-$(HELM_VERSION):
	GOBIN=$(BIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@touch $@

.PHONY: controller-gen
controller-gen: $(BIN)/controller-gen ## Build controller-gen (pinned in hack/tools) into ./bin.
$(BIN)/controller-gen: hack/tools/go.mod
	cd hack/tools && go build -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Image and release

# The charts whose version and appVersion are the release's (make release-prep sets them).
RELEASE_CHARTS := charts/gitops-addon/Chart.yaml manifests/charts/gitops-addon-agent/Chart.yaml
# The platforms of the gitops-addon CLI each release attaches (make cli-dist).
CLI_PLATFORMS  ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: image
image: ## Build the image (IMAGE, default ghcr.io/gitops-addon/gitops-addon:<version>) from the Dockerfile: with docker when a Docker engine runs, else with buildah.
	@if docker info >/dev/null 2>&1; then \
	  docker build --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) -t $(IMAGE) . ; \
	else \
	  buildah bud --isolation chroot --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) -t $(IMAGE) . ; \
	fi

.PHONY: release-prep
release-prep: ## Set both charts' version and appVersion to VERSION=vX.Y.Z and say what else the release needs (CHANGELOG.md's section; commit, then tag vX.Y.Z).
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "VERSION must be vX.Y.Z[-pre], got $(VERSION)"; exit 2; }
	for chart in $(RELEASE_CHARTS); do \
	  sed -i -E 's/^version: .*/version: $(patsubst v%,%,$(VERSION))/; s/^appVersion: .*/appVersion: "$(patsubst v%,%,$(VERSION))"/' $$chart; \
	done
	@echo "charts set to $(patsubst v%,%,$(VERSION))"
	@if $(call changelog-has-upgrade-notes,$(patsubst v%,%,$(VERSION))); then \
	  echo "CHANGELOG.md has its [$(patsubst v%,%,$(VERSION))] section with upgrade notes"; \
	else \
	  echo "CHANGELOG.md: move the entries of \`## [Unreleased]\` into a new \`## [$(patsubst v%,%,$(VERSION))] - YYYY-MM-DD\` section below it,"; \
	  echo "  with its \`### Upgrade notes\` (what a user must do or know before upgrading; \"None.\" if nothing), and leave [Unreleased] empty;"; \
	fi
	@echo "then make release-check VERSION=$(VERSION), make test-unit, commit, and git tag $(VERSION)"

# changelog-has-upgrade-notes,X.Y.Z: a shell condition, true when CHANGELOG.md has a
# `## [X.Y.Z]` section (Keep a Changelog: `## [X.Y.Z] - date`) holding a `### Upgrade notes`
# subsection with at least one line of text.
changelog-has-upgrade-notes = awk -v v='$(1)' ' \
	  /^\#\# / { release = index($$0, "\#\# [" v "]") == 1; notes = 0; next } \
	  /^\#\#\# / { notes = release && $$0 ~ /^\#\#\# Upgrade notes[[:space:]]*$$/; next } \
	  notes && NF { found = 1 } \
	  END { exit !found }' CHANGELOG.md

.PHONY: release-check
release-check: ## Check that VERSION=vX.Y.Z (the tag being released) is both charts' version and appVersion, and that CHANGELOG.md has its section with upgrade notes.
	@v=$(patsubst v%,%,$(VERSION)); for chart in $(RELEASE_CHARTS); do \
	  grep -qx "version: $$v" $$chart && grep -qx "appVersion: \"$$v\"" $$chart || \
	    { echo "$$chart is not at $$v: run make release-prep VERSION=$(VERSION), commit, and tag that commit"; exit 1; }; \
	done; echo "both charts are at $$v"
	@$(call changelog-has-upgrade-notes,$(patsubst v%,%,$(VERSION))) || \
	  { echo "CHANGELOG.md has no [$(patsubst v%,%,$(VERSION))] section with a non-empty \`### Upgrade notes\`: move [Unreleased] into it (make release-prep VERSION=$(VERSION) says how), commit, and tag that commit"; exit 1; }
	@echo "CHANGELOG.md has the upgrade notes of $(patsubst v%,%,$(VERSION))"

.PHONY: chart-package
chart-package: helm ## Package the manager chart for VERSION=vX.Y.Z into dist/ (the release pushes it as an OCI artifact).
	@mkdir -p dist
	$(BIN)/helm package charts/gitops-addon --destination dist --version $(patsubst v%,%,$(VERSION)) --app-version $(patsubst v%,%,$(VERSION))

.PHONY: cli-dist
cli-dist: ## Build the gitops-addon CLI of VERSION=vX.Y.Z for CLI_PLATFORMS (linux, darwin; amd64, arm64) as make build does, into dist/gitops-addon-X.Y.Z-<os>-<arch>, with dist/SHA256SUMS (the release signs and attaches them).
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "VERSION must be vX.Y.Z[-pre], got $(VERSION)"; exit 2; }
	@mkdir -p dist
	@set -e; files=(); for platform in $(CLI_PLATFORMS); do \
	  os=$${platform%/*}; arch=$${platform#*/}; file=gitops-addon-$(patsubst v%,%,$(VERSION))-$$os-$$arch; \
	  echo "CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags \"$(LDFLAGS)\" -o dist/$$file ./cmd/gitops-addon"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "$(LDFLAGS)" -o dist/$$file ./cmd/gitops-addon; \
	  files+=("$$file"); \
	done; \
	cd dist; if command -v sha256sum >/dev/null; then sha256sum "$${files[@]}"; else shasum -a 256 "$${files[@]}"; fi > SHA256SUMS; \
	echo "dist/SHA256SUMS:"; cat SHA256SUMS
