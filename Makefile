# gpuvc — one virtual cluster per team on a shared GPU host cluster.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# go-nvml resolves libnvidia-ml symbols lazily, after dlopen; Helm's dependencies
# import Go's plugin package, which makes the linker ask for immediate binding, and
# the binary would then refuse to start on any machine. -z lazy restores lazy binding.
LAZY_BINDING := -extldflags=-Wl,-z,lazy
LDFLAGS := $(LAZY_BINDING) \
           -X github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version.Version=$(VERSION) \
           -X github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version.Commit=$(COMMIT)

# go-nvml needs cgo; its headers use deprecated declarations.
export CGO_ENABLED := 1
export CGO_CFLAGS := -Wno-deprecated-declarations
# Some loft-sh modules are missing from the checksum database.
export GONOSUMDB := github.com/loft-sh/*
export GOFLAGS := -buildvcs=false -ldflags=$(LAZY_BINDING)

TEST_TIMEOUT ?= 40m

IMAGE ?= ghcr.io/gpuvc/gpuvc:$(VERSION)

.PHONY: help build image test test-unit e2e e2e-kind bench trial trial-down lint generate verify-generated binaries clean clean-cache gpu-check gpu-check-build

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/gpuvc (and bin/kubectl-gpuvc, a link: on PATH, kubectl runs it as `kubectl gpuvc`)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/gpuvc ./cmd/gpuvc
	ln -sf gpuvc bin/kubectl-gpuvc

image: ## Build the gpuvc image (needs a Docker engine; see Dockerfile)
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

# The Docker-less trial leaves a detached real node (port 6443, the machine's node
# slot) between its steps, so it runs after every other package, never beside one
# that starts a real node; GPUVC_REQUIRE_TRIAL turns its "machine busy" skip into a failure.
TRIAL_PKG := ./e2e/trial

test: lint verify-generated binaries ## The README's test command: lint, unit and integration tests on the local control plane, then the Docker-less trial (CI, .ci/run, adds e2e-kind)
	$(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/e2e/trial$$')
	GPUVC_REQUIRE_TRIAL=1 $(GO) test -timeout $(TEST_TIMEOUT) $(TRIAL_PKG)

test-unit: ## Unit tests only (integration tests skip under -short)
	$(GO) test -short ./...

e2e: binaries ## End-to-end suites (local control plane; kind when a Docker engine answers)
	$(GO) test -timeout $(TEST_TIMEOUT) -v $$($(GO) list ./e2e/... | grep -v '/e2e/trial$$')
	GPUVC_REQUIRE_TRIAL=1 $(GO) test -timeout $(TEST_TIMEOUT) -v $(TRIAL_PKG)

e2e-kind: binaries ## The e2e suite and the kind trial on kind without registry access (CI runs it after test): the harness's own Docker engine (private socket; Debian's docker.io installed if missing), kind's node image built offline (docs/trial.md)
	TEST_TIMEOUT=$(TEST_TIMEOUT) bash .ci/e2e-kind

# BENCH_SCALE=full runs the scale benchmark at 100 teams and 10,000 pods (longer
# than the default's ~20 minutes on 2 cores).
BENCH_SCALE ?= small

bench: binaries ## Benchmarks of the packages that have any, one at a time; writes docs/benchmarks.md (BENCH_SCALE=small|full)
	$(GO) run ./e2e/benchreport -scale $(BENCH_SCALE) -out docs/benchmarks.md

# The kind trial's images: docker (make image builds gpuvc's, kind and the nodes
# pull the rest) or built (everything built in Go from the prebuilt binaries and
# loaded into the nodes, kind's node image built offline: no registry needed; root,
# Debian's mmdebstrap).
TRIAL_IMAGES ?= docker

trial: build ## Try gpuvc: gpuvc installed, two teams running GPU pods in their own clusters; without Docker (as root) on a local control plane with a real node, left running; kind where a Docker engine answers, TRIAL_IMAGES=built without registry access (docs/trial.md)
	@backend=$$(bin/gpuvc dev trial check) || exit $$?; \
	if [ "$$backend" = kind ] && [ "$(TRIAL_IMAGES)" = built ]; then \
		bash .ci/host-packages && $(MAKE) --no-print-directory binaries && \
		node=$$($(GO) run ./e2e/kindnode/cmd/build-kind-node-image) && \
		bin/gpuvc dev trial up --build-images --node-image "$$node"; \
	elif [ "$$backend" = kind ]; then \
		$(MAKE) --no-print-directory image && bin/gpuvc dev trial up --image $(IMAGE); \
	else \
		bash .ci/host-packages && $(MAKE) --no-print-directory binaries && bin/gpuvc dev trial up --local; \
	fi

trial-down: build ## Remove the trial: local cluster and real node (nothing left behind) or kind cluster (succeeds if there is none)
	bin/gpuvc dev trial down

lint: ## gofmt and go vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.21.0

generate: ## Regenerate deepcopy code and the Team CRD from the Go types
	$(CONTROLLER_GEN) object paths=./api/... crd:maxDescLen=400 output:crd:dir=charts/gpuvc/crds

verify-generated: generate ## Fail if generated files differ from what is committed
	@git diff --exit-code -- api charts/gpuvc/crds || { echo "generated files are stale: run make generate and commit"; exit 1; }

binaries: ## Build (once; ~16 min cold on 2 cores, one progress line per tool) and cache etcd, Kubernetes, kwok, the real node (kubelet, kube-proxy, containerd, kube-router), the host add-ons (local-path-provisioner, metrics-server), the vCluster image binaries (vcluster, kine, CoreDNS) and Kueue (`go run ./e2e/localcp/cmd/build-binaries -only kueue` builds Kueue alone, `-only addons` the add-ons)
	$(GO) run ./e2e/localcp/cmd/build-binaries

# The real-GPU check (docs/gpu.md, "Checking a real GPU"): a small binary of its
# own (~6 MB, only gpu/ inside), so it can be copied to a GPU node and run there
# with nothing but the NVIDIA driver, nvidia-smi and, for the load, PyTorch.
# `make test` runs the same check against a replayed H200 (gpu/gpucheck).
GPU_CHECK_REPORT ?= gpu-check-report.md

gpu-check-build: ## Build bin/gpu-check, the real-GPU check, to copy to a GPU node
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/gpu-check ./cmd/gpu-check

gpu-check: gpu-check-build ## On a machine with an NVIDIA GPU: prove gpuvc reads it right (inventory, labels, MIG catalog, utilization, events, fraction limits vs nvidia-smi/GFD/NVML); report in gpu-check-report.md (GPU_CHECK_REPORT)
	bin/gpu-check --report $(GPU_CHECK_REPORT)

clean: ## Remove build outputs and stop a developer control plane
	-$(GO) run ./cmd/gpuvc dev cluster down
	rm -rf bin

clean-cache: ## Remove the cached control-plane binaries (next run rebuilds them)
	rm -rf "$${GPUVC_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/gpuvc}"
