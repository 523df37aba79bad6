# attend — build, test, demo, bench, lint.
#
# The build uses OpenBLAS through cgo when Debian's libopenblas-dev is installed (pkg-config openblas), and
# gonum's pure-Go BLAS otherwise; `attend version` says which one a binary has.

GO      ?= go
BIN     := bin/attend
OPENBLAS := $(shell pkg-config --exists openblas 2>/dev/null && echo yes)
ifeq ($(OPENBLAS),yes)
TAGS := -tags openblas
export CGO_LDFLAGS := $(shell pkg-config --libs openblas)
endif

# MPI: `make build-mpi` builds bin/attend-mpi for `mpirun -np N bin/attend-mpi train ...` (Debian's
# libopenmpi-dev and openmpi-bin); `make test` also runs the MPI tests when both are installed.
MPI := $(shell pkg-config --exists ompi-c 2>/dev/null && command -v mpirun >/dev/null && echo yes)
MPIBIN := bin/attend-mpi

.PHONY: all build build-mpi test test-mpi fuzz demo bench docs lint clean

all: build

build:
	$(GO) build $(TAGS) -o $(BIN) ./cmd/attend

build-mpi:
	$(GO) build $(if $(TAGS),-tags "openblas mpi",-tags mpi) -o $(MPIBIN) ./cmd/attend

# test runs every package's tests with the pure-Go BLAS, so it needs nothing but Go; the OpenBLAS back end's own
# tests and the MPI tests run too when OpenBLAS and Open MPI are installed. go test runs all of go vet's checks
# on each package and its tests (-vet=all: what `go vet ./...` checks, in the same pass that builds the package,
# while other packages' tests run) and links the test binaries without debug information (-ldflags=-w: a
# quarter less linking).
TESTFLAGS := -count=1 -vet=all -ldflags=-w
test:
	$(GO) test $(TESTFLAGS) -timeout 15m ./...
	$(GO) test $(TESTFLAGS) -tags purego ./kernels/   # the pure-Go fallbacks of the assembly kernels
ifeq ($(OPENBLAS),yes)
	$(GO) test $(TESTFLAGS) $(TAGS) ./backend/        # OpenBLAS runs the CPU's own kernels
endif
ifeq ($(MPI),yes)
	$(MAKE) test-mpi
endif

# test-mpi checks data-parallel training under mpirun: two processes follow one, a failing process ends the job.
test-mpi:
	$(GO) vet -tags mpi ./...
	$(GO) test -count=1 -tags mpi -run MPI ./cmd/attend/ ./dist/

# fuzz runs each `go test -fuzz` target for FUZZTIME in turn (not part of test: it has no end of its own). The
# seed corpora are in each package's testdata/fuzz/; an input that fails is saved there too and then runs in
# every `make test`. Set FUZZTIME=10m for a longer hunt. Go minimizes each new input for up to a minute by default,
# fuzzing nothing meanwhile; FUZZMINIMIZETIME bounds that.
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 5s
FUZZ_TARGETS := data:FuzzTokenize data:FuzzReadTSV data:FuzzReadParallel model:FuzzParseConfig model:FuzzConfigSet \
	model:FuzzConfigDuplicateKeys model:FuzzLoad model/checkpoint:FuzzRead align:FuzzReadPharaoh app/serve:FuzzDecodeRequest \
	app/serve:FuzzServeRequest
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "== $$name in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$pkg/; \
	done

# demo generates the synthetic corpus, trains on it (~2 min on 2 cores) and reports held-out accuracy.
demo: build
	./$(BIN) demo --out demo-out

# bench times every kernel and op (Go benchmarks, GFLOP/s, and the training step's share of the GEMM roofline:
# scripts/roofline.sh), then attend against the PyTorch reference implementation on Multi30k (scripts/bench.sh:
# MULTI30K=dir and TORCH_SCRIPT=file needed, CONFIG=small|base, RUNS=3).
bench: build
	ATTEND=$(BIN); . scripts/openblas-core.sh && { $(GO) test $(TAGS) -run '^$$' -bench . -benchtime 10x ./kernels/ ./model/ 2>&1; \
		echo "exit $$?"; } | scripts/roofline.sh
	scripts/bench.sh

# docs writes docs/config.md, the reference of every config key, from the config's own definitions: model.Keys
# (types, defaults, the ranges Validate enforces) and the doc comments of the fields in model/config.go. A test in
# model/internal/configdoc fails when the committed file differs, so run this after changing a key.
docs:
	$(GO) run ./model/internal/configdoc -o docs/config.md

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

clean:
	rm -rf bin demo-out
