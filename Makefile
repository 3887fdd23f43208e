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
CONTROL_PLANE_PKGS := go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
CONTROL_PLANE_BINS := $(addprefix $(BIN)/,etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
KUBELET_STAMP := $(BIN)/.kubelet.stamp
# The real test node's runtime: Debian's (and Ubuntu's) packages, installed by `make node-packages` where make can.
REAL_NODE_PACKAGES := containerd runc containernetworking-plugins
# Where make installs them (root with apt-get), the real-node tests must run: FLOTILLA_REAL_NODE=required turns
# their skip into a failure, so CI cannot pass without them.
REAL_NODE_REQUIRED := $(shell [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && echo required)
# Debian's Prometheus, which the metric analysis tests run for real; required wherever make installs it, as above.
TEST_PACKAGES := prometheus
KUBE_VERSION := v1.37.2
# Without these the binaries report v0.0.0-master, which version checks (Helm's kubeVersion, kubectl skew) reject.
KUBE_VERSION_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=1 -X $(pkg).gitMinor=37 -X $(pkg).gitTreeState=clean)

API_PATHS := {./rollout/api/...,./rollout/analysis/api/...,./workloads/api/...}
CRD_DIR := charts/flotilla/crds
# CRDs served in several versions whose conversion the manager serves on /convert (controller-gen has no marker
# for this; the manager rewrites clientConfig and caBundle at run time).
WEBHOOK_CONVERSION_CRDS := rollouts.kruise.io_rollouts.yaml rollouts.kruise.io_batchreleases.yaml apps.kruise.io_daemonsets.yaml \
	apps.kruise.io_sidecarsets.yaml
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
test: tools node-packages test-packages verify lint ## Build the tools, vet, lint, verify generated code, run unit, integration and e2e tests.
	$(GO) vet ./...
	FLOTILLA_BIN_DIR=$(ROOT)/bin FLOTILLA_REAL_NODE=$(REAL_NODE_REQUIRED) FLOTILLA_REAL_PROMETHEUS=$(REAL_NODE_REQUIRED) $(GO) test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) ./...

.PHONY: bench
bench: tools node-packages test-packages build ## Run the benchmark scenarios and micro-benchmarks but the scale ones (SCENARIO=name runs one; see docs/performance.md).
	FLOTILLA_BIN_DIR=$(ROOT)/bin $(GO) run ./test/bench/cmd/bench --manager $(BIN)/flotilla-manager \
		--out $(BENCH_OUT) $(if $(SCENARIO),--scenario $(SCENARIO))

BENCH_SCALE_OUT ?= test/bench/results/bench-scale-results.json
.PHONY: bench-scale
bench-scale: tools build ## Run the scale scenarios (a 1,000-Rollout fleet, a 10,000-replica release): about an hour on 2 cores.
	FLOTILLA_BIN_DIR=$(ROOT)/bin $(GO) run ./test/bench/cmd/bench --manager $(BIN)/flotilla-manager \
		--out $(BENCH_SCALE_OUT) --set scale

# REAL_NODE=false leaves the real node out of the sandbox.
REAL_NODE ?= true
.PHONY: sandbox
sandbox: tools node-packages build ## Start a local control plane with 3 simulated nodes, a real node and the Flotilla manager.
	FLOTILLA_BIN_DIR=$(ROOT)/bin $(GO) run ./test/cmd/sandbox --manager $(BIN)/flotilla-manager \
		--nodeagent $(BIN)/flotilla-nodeagent --real-node=$(REAL_NODE)

##@ Images
# VERSION and REGISTRY override the tag (default: the chart's appVersion) and the registry (ghcr.io/flotilla-dev).
VERSION ?=
REGISTRY ?=
IMAGE_FLAGS = $(if $(VERSION),--version $(VERSION)) $(if $(REGISTRY),--registry $(REGISTRY))
.PHONY: images
images: ## Build the flotilla-manager and flotilla-nodeagent OCI images into bin/images/ (no Docker needed).
	$(GO) run ./test/images/cmd/images --out $(BIN)/images $(IMAGE_FLAGS)

.PHONY: push-images
push-images: ## Build the images and push them to REGISTRY (credentials from `docker login` or any Docker config).
	$(GO) run ./test/images/cmd/images --out $(BIN)/images $(IMAGE_FLAGS) --push

##@ Tools
.PHONY: tools
tools: $(CONTROL_PLANE_STAMP) $(KUBELET_STAMP) $(KWOK) $(HELM) $(CONTROLLER_GEN) ## Build the control plane, the kubelet, kwok, helm and controller-gen into bin/ (skips up-to-date ones).

# linked-modules lists "module version" for every module the test/tools packages $(1) link, replacements applied;
# built-modules lists the same as go recorded it in the binaries $(1).
linked-modules = (cd test/tools && $(GO) list -deps -f '{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}' $(1)) | sort -u
built-modules = $(GO) version -m $(1) | awk '$$1=="dep"||$$1=="mod"{if(p)print p; p=$$2" "$$3} $$1=="=>"{p=$$2" "$$3} END{if(p)print p}' | sort -u
# built-from-current succeeds when the binaries $(2) exist and were built from the module versions test/tools now
# selects for the packages $(1): a go.mod change that adds a tool (the kubelet) rebuilds no other.
built-from-current = ls $(2) >/dev/null 2>&1 && [ "$$($(call linked-modules,$(1)))" = "$$($(call built-modules,$(2)))" ]

# The control plane and the kubelet come from test/tools, their own module; each stamp follows that module's
# go.mod and go.sum, and a build runs only when the versions its binaries link changed.
$(CONTROL_PLANE_STAMP): test/tools/go.mod test/tools/go.sum
	@mkdir -p $(BIN)
	if $(call built-from-current,$(CONTROL_PLANE_PKGS),$(CONTROL_PLANE_BINS)); then \
		echo "control plane: bin/ holds these module versions already"; \
	else \
		(cd test/tools && $(GO) build -trimpath -ldflags="-s -w $(KUBE_VERSION_LDFLAGS)" -o $(ROOT)/bin/ $(CONTROL_PLANE_PKGS)) && \
		mv -f $(ROOT)/bin/server $(ROOT)/bin/etcd; \
	fi
	touch $@

$(KUBELET_STAMP): test/tools/go.mod test/tools/go.sum
	@mkdir -p $(BIN)
	if $(call built-from-current,k8s.io/kubernetes/cmd/kubelet,$(BIN)/kubelet); then \
		echo "kubelet: bin/ holds these module versions already"; \
	else \
		cd test/tools && $(GO) build -trimpath -ldflags="-s -w $(KUBE_VERSION_LDFLAGS)" -o $(ROOT)/bin/kubelet k8s.io/kubernetes/cmd/kubelet; \
	fi
	touch $@

# The real node's containerd, runc and CNI plugins are the distribution's. Without root or apt-get nothing is
# installed, and the real-node tests skip, saying what is missing.
.PHONY: node-packages
node-packages: ## Install containerd, runc and the CNI plugins for the real test node (root on Debian or Ubuntu).
	@if command -v containerd >/dev/null && command -v runc >/dev/null && \
		{ [ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ]; }; then \
		:; \
	elif [ -n "$(REAL_NODE_REQUIRED)" ]; then \
		echo "installing $(REAL_NODE_PACKAGES) for the real test node"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(REAL_NODE_PACKAGES) >/dev/null; \
	else \
		echo "note: no root with apt-get here: the real-node tests will skip (they need $(REAL_NODE_PACKAGES))"; \
	fi

.PHONY: test-packages
test-packages: ## Install Prometheus for the metric analysis tests (root on Debian or Ubuntu).
	@if command -v prometheus >/dev/null; then \
		:; \
	elif [ -n "$(REAL_NODE_REQUIRED)" ]; then \
		echo "installing $(TEST_PACKAGES) for the metric analysis tests"; \
		apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEST_PACKAGES) >/dev/null; \
	else \
		echo "note: no root with apt-get here: the real Prometheus tests will skip (they need $(TEST_PACKAGES))"; \
	fi

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
