# EtherGM build, test, benchmark and demo targets. See README.md.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
GO ?= go
FUZZTIME ?= 15s
RESULTS ?= results
export RESULTS

# install: $(DESTDIR)$(PREFIX)/bin receives the commands.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(DESTDIR)$(PREFIX)/bin
# VERSION is what `<command> --version` prints: the nearest tag, else the
# commit (with -dirty for uncommitted changes).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS = -X github.com/ethergm/ethergm/internal/cli.Version=$(VERSION)
# The user-facing commands: every main package under cmd/.
CMD_PKGS = $(shell $(GO) list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./cmd/...)
COMMANDS = $(notdir $(CMD_PKGS))
# install-mapper: where the systemd unit and the settings file go.
SYSTEMD_UNIT_DIR ?= /lib/systemd/system
SYSCONF_DIR ?= /etc

.PHONY: help all build libgm install install-mapper uninstall test fmt-check vet staticcheck build-check layering tracked-binaries unit scale scale-netns nemesis fuzz bench demo deps wireshark-install wireshark-screenshot wireshark-example clean-netns

all: build

## help: the targets and what they do.
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## build: every package, and the commands and examples in bin/.
build:
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/... ./examples/...

## libgm: GM's C API in build/: include/gm.h, lib/libgm.so, lib/libgm.a, lib/pkgconfig/gm.pc.
libgm:
	@GO=$(GO) scripts/libgm.sh build build $(PREFIX)

## install: the commands in $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local by default),
## and libgm: gm.h, libgm.so, libgm.a and gm.pc under $(DESTDIR)$(PREFIX).
install: libgm
	@scripts/libgm.sh install build '$(DESTDIR)$(PREFIX)' '$(PREFIX)'
	@if [ -z '$(DESTDIR)' ] && command -v ldconfig >/dev/null; then ldconfig; fi
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(CMD_PKGS)
	install -d '$(BINDIR)'
	install -m 0755 $(addprefix bin/,$(COMMANDS)) '$(BINDIR)/'
	@echo "installed $(COMMANDS) in $(BINDIR)"

uninstall:
	rm -f $(addprefix '$(BINDIR)'/,$(COMMANDS))
	rm -f '$(DESTDIR)$(PREFIX)/include/gm.h' '$(DESTDIR)$(PREFIX)/lib/libgm.so' '$(DESTDIR)$(PREFIX)/lib/libgm.a' '$(DESTDIR)$(PREFIX)/lib/pkgconfig/gm.pc'

## test: everything CI runs (installs missing Debian packages first).
test: deps fmt-check vet staticcheck build-check layering tracked-binaries unit scale fuzz

deps:
	@scripts/deps.sh test

fmt-check:
	@echo "== gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@echo "== go vet"
	$(GO) vet ./...

staticcheck:
	@echo "== staticcheck"
	$(GO) tool staticcheck ./...

build-check:
	@echo "== build with CGO_ENABLED=0 (linux), and the portable packages for darwin"
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 GOOS=darwin $(GO) build ./wire/... ./token/... ./gm/link/... ./capture/...

layering:
	@echo "== layering (go list -deps)"
	@scripts/layering.sh

## tracked-binaries: fail if git tracks a compiled (ELF) file.
tracked-binaries:
	@echo "== no tracked binaries"
	@scripts/tracked-binaries.sh

## unit: libgm is built first for the C tests (libgm/ctest), plain and with
## -asan, so that its builds do not count against the tests' timeout.
unit:
	@echo "== libgm for the C tests (plain and -asan)"
	@GO=$(GO) scripts/libgm.sh build $(RESULTS)/libgm >/dev/null
	@GO=$(GO) GOFLAGS=-asan scripts/libgm.sh build $(RESULTS)/libgm-asan >/dev/null
	@echo "== unit and netns integration tests (-race)"
	@ETHERGM_CTEST_LIBGM=$(abspath $(RESULTS))/libgm scripts/gotest.sh

## scale: the mapper's simulations at full size (hundreds of hosts, virtual
## time), which the -race run in `unit` shrinks to a quarter.
scale:
	@echo "== mapper simulations at full size (no -race)"
	$(GO) test -count=1 -run 'TestScale' ./mapper

## scale-netns: N single-rail netns hosts (2..256), one gm_mapper each: time to
## fully configured, map versions, steady-state frames per host (as root).
N ?= 64
scale-netns:
	ETHERGM_SCALE_HOSTS=$(N) $(GO) test -count=1 -v -timeout 60m -run 'TestIntegrationMapperScale$$' ./tests/mapper/

## nemesis: the nemesis for DURATION (default 10m) with seed SEED (default
## the clock; a failing run prints its seed): 8 dual-rail netns hosts stream
## verified messages while processes, mappers, rails and partitions fail
## (docs/RELIABILITY.md, "The nemesis"). HOSTS changes the host count.
DURATION ?= 10m
nemesis:
	@scripts/deps.sh test
	ETHERGM_REQUIRE_NETNS=1 ETHERGM_NEMESIS_DURATION=$(DURATION) ETHERGM_NEMESIS_SEED=$(SEED) ETHERGM_NEMESIS_HOSTS=$(HOSTS) \
		$(GO) test -count=1 -v -timeout 0 -run '^TestIntegrationNemesis$$' ./tests/nemesis/

fuzz:
	@echo "== fuzz ($(FUZZTIME) per target)"
	@FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

## bench: link, ports and baselines (UDP sockperf, TCP NetPIPE) between two netns hosts.
bench:
	@scripts/deps.sh bench
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./bench/cmd/... ./cmd/...
	@GO=$(GO) scripts/libgm.sh build build $(PREFIX)
	$${CC:-gcc} -O2 -Wall -Ibuild/include bench/cperf/egm-cperf.c -Lbuild/lib -lgm -Wl,-rpath,$(CURDIR)/build/lib -o bin/egm-cperf
	bin/egm-bench -bin bin -out $(RESULTS)
	$(GO) run ./bench/allsize -results $(RESULTS)

## demo: a netns cluster, a real transfer, printed results.
demo:
	@scripts/deps.sh demo
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...
	bin/egm-demo --bin bin

## wireshark-install: copy the dissector into your Wireshark plugin folder.
wireshark-install:
	@wire/wireshark/install.sh

## wireshark-screenshot: docs/img/wireshark.png, Wireshark under Xvfb on the example capture.
wireshark-screenshot:
	@scripts/deps.sh screenshot
	tests/wireshark/screenshot.sh

## wireshark-example: regenerate wire/wireshark/testdata/example.pcapng.
wireshark-example:
	ETHERGM_UPDATE_EXAMPLE=1 $(GO) test -count=1 -run TestDissectorSample ./tests/wireshark/

## clean-netns: remove namespaces and links left by killed test runs.
clean-netns:
	$(GO) run ./internal/netns/cmd/egm-netns-clean

## install-mapper: gm_mapper in $(DESTDIR)$(PREFIX)/bin, its systemd unit and /etc/default/gm_mapper.
install-mapper:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/gm_mapper
	install -D -m 0755 bin/gm_mapper '$(BINDIR)/gm_mapper'
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/systemd/gm_mapper@.service >$(DESTDIR)$(SYSTEMD_UNIT_DIR)/gm_mapper@.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gm_mapper@.service
	@if [ -e $(DESTDIR)$(SYSCONF_DIR)/default/gm_mapper ]; then \
		echo "keeping $(DESTDIR)$(SYSCONF_DIR)/default/gm_mapper"; \
	else \
		install -D -m 0644 dist/gm_mapper.conf $(DESTDIR)$(SYSCONF_DIR)/default/gm_mapper; \
	fi
	@echo "installed; start with: systemctl daemon-reload && systemctl enable --now gm_mapper@<unit>"
