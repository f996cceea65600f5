# rdmactl: build, test and release. `make help` lists the targets.
#
# Needs Go (see go.mod) and, for vmtest and unit-arm64, a Debian/Ubuntu
# host with apt: vm/run installs qemu, busybox and rdma-core itself, and
# scripts/test-arm64.sh qemu-user-static and an aarch64 cross gcc.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO ?= go
BIN := bin/rdmactl
# Pinned so that lint gives the same answer on every machine; run through
# the module proxy, so it is not a dependency in go.mod.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Version stamps (cmd/rdmactl/main.go). DATE is the commit's time, or
# SOURCE_DATE_EPOCH, so that two builds of one commit are identical.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell if [ -n "$${SOURCE_DATE_EPOCH:-}" ]; then date -u -d "@$$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ; \
	else TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown; fi)
# The Go heap without transparent huge pages (GODEBUG=disablethp=1 as the
# binary's default; the go command refuses it in go.mod and //go:debug): a
# command's heap is 1-4 MB, and on a THP "always" host each first touch of
# it faults in and zeroes a whole 2 MB page. docs/scale.md has the figures;
# goreleaser.yaml and scripts/release-snapshot.sh carry the same flag
# (TestReleaseConfig).
RUNTIME_LDFLAGS := -X runtime.godebugDefault=disablethp=1
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE) $(RUNTIME_LDFLAGS)
export VERSION COMMIT DATE LDFLAGS

# make run ARGS="link show"; make tour ARGS=--vm
ARGS ?=
# make vmtest PKG=./internal/verbs RUN=TestLoopback VMFLAGS="--rxe 3"
PKG ?=
RUN ?=
VMFLAGS ?=
# make vmtest KERNEL=6.12  (default: "6.1 6.12", one VM boot each)
KERNEL ?=
# make vmtest RUN=... COUNT=20: the suite 20 times in each boot, a line per run
COUNT ?=
# Seconds per test binary, and without a line of output from one before its
# goroutines are dumped and it is killed (vm/README.md).
VMTEST_TIMEOUT ?= 1200
VMTEST_STALL ?= 300
export PKG RUN VMFLAGS VMTEST_TIMEOUT VMTEST_STALL GO KERNEL COUNT
# make fuzz FUZZTIME=1m
FUZZTIME ?= 20s

.PHONY: help build tour tourtest run test unit unit-arm64 lint fuzz vmtest docs package packagetest release-snapshot clean bench-link bench-perftest bench-scale trace-lat bench-exporter soak-exporter

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 20

# -buildvcs=false as scripts/package.sh and goreleaser.yaml build: on amd64,
# bin/rdmactl, which the VM tests run, is then byte for byte the binary of
# the package and the image (the stamps make the VCS settings redundant).
build: ## static bin/rdmactl, version-stamped
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/rdmactl

tour: build ## rdmactl at work: this host's RDMA devices, or (none here) Soft-RoCE in the VM [ARGS="--vm|--perf"]
	scripts/tour.sh $(ARGS)

run: build ## build and run: make run ARGS="link show"
	./$(BIN) $(ARGS)

test: unit lint ## unit tests and lint (no kernel needed)

unit: ## go test ./... (unit tests only)
	$(GO) test ./...

unit-arm64: ## unit tests and go vet for GOARCH=arm64, under qemu-user (installs qemu-user-static, a cross gcc)
	scripts/test-arm64.sh

lint: ## gofmt, go vet, staticcheck (all run; fails if any fails)
	STATICCHECK=$(STATICCHECK) scripts/lint.sh

fuzz: ## run every Fuzz target for FUZZTIME (default 20s)
	scripts/fuzz.sh $(FUZZTIME)

tourtest: ## runs make tour (on a host without RDMA: in the VM) and checks what it showed
	$(GO) test -tags tour -run '^TestTour$$' -count=1 -v -timeout 20m ./scripts

vmtest: build ## kernel tests, one VM per kernel: [KERNEL=6.12] [PKG=./internal/x] [RUN=TestY] [COUNT=N] [VMFLAGS="--rxe 3"]
	vm/vmtest

docs: ## regenerate completions/ and man/ from the command tree (commit them)
	$(GO) test ./cmd/rdmactl -run '^TestDocsUpToDate$$' -count=1 -args -update-docs

package: ## dist/: .deb and .rpm for amd64 and arm64 (nfpm), the container image (OCI archive) and the Kubernetes manifests that run it, SHA256SUMS
	scripts/package.sh

packagetest: package ## as root: installs, upgrades and purges the .deb; lintian; the .rpm against the .deb; the image unpacked and run; a clean clone's build is identical
	scripts/packagetest.sh

release-snapshot: ## dist/: static linux/amd64+arm64 archives and checksums
	scripts/release-snapshot.sh

clean: ## remove build outputs
	rm -rf bin out dist dist-packages

# ---- benchmarks -------------------------------------------------------------
# bench-* targets go here (one per benchmark script, each documented with ##
# so that `make help` lists it). They print figures; they never assert on them.

bench-link: build ## rdmactl link show vs rdma link show in one VM, medians of N (default 25) alternating runs
	vm/run -- env N=$(or $(N),25) scripts/bench-link.sh bin/rdmactl

bench-perftest: build ## rdmactl perf vs perftest on the same rxe pair in one VM: side-by-side medians and ratios [BASE=old/rdmactl]
	RDMACTL=bin/rdmactl BASE=$(BASE) VMRUN=vm/run scripts/bench-perftest.sh

trace-lat: build ## where a write_lat message spends its time, rdmactl vs perftest within the same runs (kprobes)
	RDMACTL=bin/rdmactl VMRUN=vm/run scripts/trace-lat.sh

bench-scale: build ## inspection commands vs rdma/ibv_devinfo at 4..128 rxe devices, one VM per N: medians, ratios, growth, RSS [NS="4 16" BASE=bin]
	RDMACTL=bin/rdmactl VMRUN=vm/run scripts/bench-scale.sh

bench-exporter: build ## CPU time of one exporter scrape vs one rdmactl counters run, 64 rxe devices in one VM [N=20 RXE=64]
	vm/run --rxe $(or $(RXE),64) -- env N=$(or $(N),20) scripts/bench-exporter.sh bin/rdmactl

soak-exporter: build ## 10,000 scrapes of the live exporter in the VM: fds, goroutines, RSS, heap before/after [SOAK_N=10000 KERNEL=6.1]
	RDMACTL_SOAK_N=$(or $(SOAK_N),10000) VMTEST_TIMEOUT=3600 VMTEST_STALL=0 KERNEL=$(or $(KERNEL),6.1) PKG=./cmd/rdmactl RUN='^TestVMExporterSoak$$' vm/vmtest
