# Flotilla. `make` lists the targets. Everything it needs is built from the Go module proxy into bin/.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := bin
export PATH := $(ROOT)/bin:$(PATH)
GO ?= go
GO_BUILD_FLAGS := -trimpath -ldflags=-s\ -w

CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION := v2.15.0
HELM_VERSION := v3.22.0
KWOK_VERSION := v0.8.0

CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
HELM := $(BIN)/helm
KWOK := $(BIN)/kwok
CONTROL_PLANE_STAMP := $(BIN)/.control-plane.stamp
KUBE_VERSION := v1.37.2
# Without these the binaries report v0.0.0-master, which version checks (Helm's kubeVersion, kubectl skew) reject.
KUBE_VERSION_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=1 -X $(pkg).gitMinor=37 -X $(pkg).gitTreeState=clean)

API_PATHS := {./rollout/api/...,./workloads/api/...}
CRD_DIR := charts/flotilla/crds
# CRDs served in several versions whose conversion the manager serves on /convert (controller-gen has no marker
# for this; the manager rewrites clientConfig and caBundle at run time).
WEBHOOK_CONVERSION_CRDS := rollouts.kruise.io_rollouts.yaml rollouts.kruise.io_batchreleases.yaml
# The manager's RBAC, generated from the +kubebuilder:rbac markers of every package the manager links; the chart
# takes its ClusterRole and namespaced Role rules from this file.
RBAC_DIR := charts/flotilla/rbac
MANAGER_PKG := ./rollout/cmd/manager
# The node agent's RBAC, from the markers of the packages flotilla-nodeagent links, into $(RBAC_DIR)/nodeagent.
NODEAGENT_PKG := ./nodeagent/cmd/nodeagent
MODULE := github.com/flotilla-dev/flotilla
TEST_FLAGS ?=
TEST_TIMEOUT ?= 30m
# `make bench SCENARIO=name` runs one scenario; `go run ./test/bench/cmd/bench --list` lists them.
SCENARIO ?=
BENCH_OUT ?= test/bench/results/bench-results.json

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development
.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code for every API package.
	$(CONTROLLER_GEN) object paths="$(API_PATHS)"

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Regenerate CRDs into charts/flotilla/crds and the manager's and node agent's RBAC into charts/flotilla/rbac.
	rm -f $(CRD_DIR)/*.yaml
	$(CONTROLLER_GEN) crd paths="$(API_PATHS)" output:crd:artifacts:config=$(CRD_DIR)
	for f in $(WEBHOOK_CONVERSION_CRDS); do \
		awk 'NR==FNR { block = block $$0 "\n"; next } { print } /^spec:$$/ && !done { printf "%s", block; done = 1 }' \
			charts/flotilla/crd-conversion.yaml $(CRD_DIR)/$$f > $(CRD_DIR)/$$f.tmp && mv $(CRD_DIR)/$$f.tmp $(CRD_DIR)/$$f; \
	done
	rm -f $(RBAC_DIR)/*.yaml $(RBAC_DIR)/nodeagent/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=flotilla-manager paths="$$($(call own-deps,$(MANAGER_PKG)))" output:rbac:dir=$(RBAC_DIR)
	$(CONTROLLER_GEN) rbac:roleName=flotilla-nodeagent paths="$$($(call own-deps,$(NODEAGENT_PKG)))" output:rbac:dir=$(RBAC_DIR)/nodeagent

# own-deps lists, ';'-separated, the packages of this module that the package $(1) links.
own-deps = $(GO) list -deps -f '{{if .Module}}{{if eq .Module.Path "$(MODULE)"}}{{.ImportPath}}{{end}}{{end}}' $(1) | paste -sd ';'

.PHONY: build
build: ## Build flotilla-manager, kubectl-kruise and flotilla-nodeagent into bin/.
	$(GO) build $(GO_BUILD_FLAGS) -o $(BIN)/flotilla-manager ./rollout/cmd/manager
	$(GO) build $(GO_BUILD_FLAGS) -o $(BIN)/kubectl-kruise ./rollout/cmd/kubectl-kruise
	$(GO) build $(GO_BUILD_FLAGS) -o $(BIN)/flotilla-nodeagent $(NODEAGENT_PKG)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate manifests ## Fail if generated code, CRDs or RBAC are stale, or Go files are unformatted.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@git diff --exit-code -- '*zz_generated*' $(CRD_DIR) $(RBAC_DIR) || { echo "generated files are stale: run make generate manifests and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(CRD_DIR) $(RBAC_DIR))" || { echo "untracked generated files:"; git status --porcelain -- $(CRD_DIR) $(RBAC_DIR); exit 1; }

##@ Test
.PHONY: test
test: tools verify lint ## Build the tools, vet, lint, verify generated code, run unit, integration and e2e tests.
	$(GO) vet ./...
	FLOTILLA_BIN_DIR=$(ROOT)/bin $(GO) test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) ./...

.PHONY: bench
bench: tools build ## Run the benchmark scenarios and micro-benchmarks (SCENARIO=name runs one; see docs/performance.md).
	FLOTILLA_BIN_DIR=$(ROOT)/bin $(GO) run ./test/bench/cmd/bench --manager $(BIN)/flotilla-manager \
		--out $(BENCH_OUT) $(if $(SCENARIO),--scenario $(SCENARIO))

.PHONY: sandbox
sandbox: tools build ## Start a local control plane with 3 simulated nodes and the Flotilla manager.
	FLOTILLA_BIN_DIR=$(ROOT)/bin $(GO) run ./test/cmd/sandbox --manager $(BIN)/flotilla-manager

##@ Tools
.PHONY: tools
tools: $(CONTROL_PLANE_STAMP) $(KWOK) $(HELM) $(CONTROLLER_GEN) ## Build the control plane, kwok, helm and controller-gen into bin/ (skips up-to-date ones).

# The control plane comes from test/tools, its own module; the stamp follows that module's go.sum.
$(CONTROL_PLANE_STAMP): test/tools/go.mod test/tools/go.sum
	@mkdir -p $(BIN)
	cd test/tools && $(GO) build -trimpath -ldflags="-s -w $(KUBE_VERSION_LDFLAGS)" -o $(ROOT)/bin/ \
		go.etcd.io/etcd/server/v3 \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubectl
	mv -f $(ROOT)/bin/server $(ROOT)/bin/etcd
	touch $@

# Single-binary tools are installed at a pinned version; the stamp file name carries the version.
$(CONTROLLER_GEN): $(BIN)/.controller-gen-$(CONTROLLER_GEN_VERSION)
$(BIN)/.controller-gen-$(CONTROLLER_GEN_VERSION):
	GOBIN=$(ROOT)/bin $(GO) install $(GO_BUILD_FLAGS) sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	touch $@

$(GOLANGCI_LINT): $(BIN)/.golangci-lint-$(GOLANGCI_LINT_VERSION)
$(BIN)/.golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(ROOT)/bin $(GO) install $(GO_BUILD_FLAGS) github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	touch $@

# Helm's own build stamps its version and the Kubernetes version its client speaks; without them helm reports
# v1.20 as the cluster version to `helm template` and `helm lint`, which a chart's kubeVersion rejects.
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	$(foreach pkg,helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules,-X $(pkg).k8sVersionMajor=1 -X $(pkg).k8sVersionMinor=37)
$(HELM): $(BIN)/.helm-$(HELM_VERSION)-k8s1.37
$(BIN)/.helm-$(HELM_VERSION)-k8s1.37:
	GOBIN=$(ROOT)/bin $(GO) install -trimpath -ldflags="$(HELM_LDFLAGS)" helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	touch $@

$(KWOK): $(BIN)/.kwok-$(KWOK_VERSION)
$(BIN)/.kwok-$(KWOK_VERSION):
	GOBIN=$(ROOT)/bin $(GO) install $(GO_BUILD_FLAGS) sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	touch $@
