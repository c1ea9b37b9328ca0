# Sluice build and test entry points. `make test` and `make run` set up
# everything they need on a fresh Debian 12 machine (as root for apt).
#
#   make run       Triton serving model_repository/ with the Sluice backend, in
#                  the foreground (Ctrl-C stops it); HTTP_PORT, GRPC_PORT,
#                  METRICS_PORT override 8000/8001/8002
#   make run-bg    the same in the background; make stop ends it
#   make test      gofmt, go vet, go test, the accuracy tests and their mutation
#                  check, the Python exporter's tests (python/, export-test),
#                  the real-server tests (tests/triton in Python, client/ in Go),
#                  the Helm chart's checks (chart-check)
#   make help      this text, and any target it does not name
#
# The parts (each target's comment below says more):
#   build, all     the CLI, build/sluice
#   backend        the Triton backend library, build/backends
#   setup          what the tests need: deps, test-deps, pic-libs, venv (and
#                  cuda-headers, triton, chart-tools, each where a target wants it)
#   vet, gotest, pytest, mutation, test-triton, test-client
#                  the parts of make test
#   chart-check    the Helm chart's checks; chart-schemas regenerates their schemas
#   image-check    docker/Dockerfile built and smoke-tested (docker/image.sh)
#   run-cli        the CLI over the corpus photos, no server
#   export-test, export-test-torch
#                  python/sluice_export's tests; -torch also installs torch and the
#                  torch-based libraries first (large: kept out of make test)
#   perf-triton, bench-cpu, bench-gpu
#                  benchmarks (docs/perf.md)
#   gpu-build      what a GPU machine without Go runs (scripts/gpu.sh; the Triton
#                  checks there: scripts/gpu_triton.sh, tests/gpu_triton)
#   fuzz, compact, proto, proto-client, ptx, clean
#                  fuzzing, generated files, cleaning up

GO       ?= go
PYTHON   ?= python3
VENV     := .venv
BUILD    := build
CORPUS   ?= $(abspath ../shared/corpus)
export SLUICE_CORPUS ?= $(CORPUS)

.PHONY: all build setup deps pic-libs test-deps venv test gotest pytest mutation cuda-headers vet run run-bg stop run-cli triton test-triton perf-triton \
	bench-cpu bench-gpu fuzz proto proto-client test-client compact ptx gpu-build clean \
	chart-tools chart-check chart-schemas image-check help \
	export-test export-test-torch

all: build

# The header above, then the targets it names nowhere (so none goes unlisted).
THIS_MAKEFILE := $(firstword $(MAKEFILE_LIST))
help:
	@sed -n '1,/^$$/{/^$$/d;s/^# \{0,1\}//;p}' $(THIS_MAKEFILE)
	@awk '/^$$/ { body = 1 } \
	  !body { n = split($$0, w, /[^a-z0-9_-]+/); for (i = 1; i <= n; i++) named[w[i]] = 1; next } \
	  /^[a-z][a-z0-9_-]*:([^=]|$$)/ { t = $$0; sub(/:.*/, "", t); if (!(t in named)) { named[t] = 1; left = left " " t } } \
	  END { if (left != "") print "\nNot named above:" left }' $(THIS_MAKEFILE)

# System packages: the -dev packages of the image libraries whose Debian
# source (the installed version's, or the newest the archive serves),
# scripts/pic-libs.sh builds (statically
# linked into every binary, so none is needed at run time), and its build
# tools.
PIC_DEPS := libturbojpeg0-dev zlib1g-dev libwebp-dev libtiff-dev libopenjp2-7-dev libdav1d-dev \
	cmake meson ninja-build nasm dpkg-dev
deps:
	@dpkg -s $(PIC_DEPS) >/dev/null 2>&1 || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PIC_DEPS); }

# The image libraries as static PIC archives, headers included, in
# build/pic (scripts/pic-libs.sh says why and what is there); every cgo
# build links them. Quick when up to date.
pic-libs: deps
	scripts/pic-libs.sh $(BUILD)/pic

# For the tests, which write what Go and Pillow cannot (RGB-coded JPEGs,
# custom progressive scan scripts, tiled and YCbCr JPEG TIFFs, 16-bit RGB
# JPEG 2000, deep and grid AVIFs): libjpeg's headers (internal/testimg
# encodes through the libjpeg API of libturbojpeg.a), cjpeg
# (tests/test_accuracy.py), tiffcp and opj_compress
# (tests/test_accuracy_tiff_jp2.py, make_tiff_jp2.py in codec/testdata),
# and avifenc (codec's AVIF tests, tests/test_accuracy_avif.py; a test tool
# only: nothing links libavif).
test-deps: deps
	@dpkg -s libjpeg-dev libjpeg-turbo-progs libtiff-tools libopenjp2-tools libavif-bin >/dev/null 2>&1 || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjpeg-dev libjpeg-turbo-progs \
	    libtiff-tools libopenjp2-tools libavif-bin; }

# Python references for the accuracy tests and benchmarks (Pillow, OpenCV).
venv: $(VENV)/.stamp
$(VENV)/.stamp: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/requirements.txt
	touch $@

setup: test-deps pic-libs venv

build: pic-libs
	$(GO) build -o $(BUILD)/sluice ./cmd/sluice

# The Triton backend, a C shared library that tritonserver loads from
# <backend-directory>/sluice/. go build also writes a C header of the
# exported functions next to it; nothing uses that (Triton declares the
# entry points itself), so it is removed and the folder deploys as it is.
#
# --exclude-libs: the static image libraries' symbols stay local to the .so,
# so a libjpeg, libtiff, ... that another part of the process loaded can
# neither take over our calls nor see ours. cgo/symbols_test.go builds with
# this line's flags.
BACKEND_SO := $(BUILD)/backends/sluice/libtriton_sluice.so
BACKEND_LDFLAGS := -extldflags=-Wl,--exclude-libs,ALL
backend: pic-libs
	$(GO) build -buildmode=c-shared -ldflags='$(BACKEND_LDFLAGS)' -o $(BACKEND_SO) ./cgo
	rm -f $(BACKEND_SO:.so=.h)

# gofmt's own failure (a file that does not parse) fails too.
vet: test-deps pic-libs
	@out=$$(gofmt -l $$(git ls-files '*.go')) || { echo "gofmt failed"; exit 1; }; \
	  test -z "$$out" || { echo "$$out"; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

# cuda.h and nvjpeg.h of CUDA 12 and 13, from NVIDIA's wheels
# (scripts/cuda_headers.sh): the bindings in kernels/cuda and kernels/nvjpeg
# are checked against both. No GPU needed.
CUDA_HEADERS := $(abspath $(BUILD)/cuda-headers)
cuda-headers: venv
	scripts/cuda_headers.sh $(CUDA_HEADERS) $(VENV)/bin/python

# pic-libs: cgo's test builds the backend library and checks its symbols.
# The output is plain go test's, plus a line naming the tests skipped and
# why (GPU tests on a host without one: scripts/gotest_summary.py).
gotest: test-deps pic-libs cuda-headers
	@mkdir -p $(BUILD)
	{ $(GO) test -json ./...; echo $$? > $(BUILD)/gotest.rc; } | $(PYTHON) scripts/gotest_summary.py; \
	  exit $$(cat $(BUILD)/gotest.rc)
	for v in 12 13; do \
	  SLUICE_CUDA_H=$(CUDA_HEADERS)/$$v/cuda.h SLUICE_NVJPEG_H=$(CUDA_HEADERS)/$$v/nvjpeg.h \
	    $(GO) test -count=1 -run 'SymbolNames|Header|SymbolsDeclared' ./kernels/cuda ./kernels/nvjpeg || exit 1; \
	done

# tests/triton runs in its own venv (tritonclient needs numpy < 2): test-triton.
pytest: build venv test-deps
	SLUICE_BIN=$(abspath $(BUILD)/sluice) $(VENV)/bin/pytest -q tests --ignore=tests/triton

# Plants small defects in the operators, one at a time, and checks that
# go test ./ops and the accuracy tests both fail on each
# (scripts/mutation_check.sh; a few minutes; needs the corpus).
mutation: pic-libs venv
	scripts/mutation_check.sh $(VENV)/bin/python

test: vet gotest pytest mutation export-test test-triton test-client chart-check

# The Helm chart (deploy/helm/sluice): helm lint, then helm template with
# several value sets, each rendering checked by kubeconform -strict against
# the committed schemas in deploy/helm/schemas (CI cannot download
# kubeconform's default ones). helm and kubeconform are built with go install
# at pinned versions, only when missing (helm: about 3 minutes on 2 cores
# with empty Go caches).
HELM_VERSION        := v3.21.4
KUBECONFORM_VERSION := v0.6.7
GOBIN_DIR    = $(shell $(GO) env GOPATH)/bin
CHART        := deploy/helm/sluice
CHART_SCHEMAS := deploy/helm/schemas
chart-tools:
	@$(GOBIN_DIR)/helm version --short 2>/dev/null | grep -qx '$(HELM_VERSION)' || \
	  GOBIN=$(GOBIN_DIR) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@$(GOBIN_DIR)/kubeconform -v 2>/dev/null | grep -qx '$(KUBECONFORM_VERSION)' || \
	  GOBIN=$(GOBIN_DIR) $(GO) install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)

chart-check: chart-tools
	HELM=$(GOBIN_DIR)/helm KUBECONFORM=$(GOBIN_DIR)/kubeconform deploy/helm/check.sh $(CHART) $(CHART_SCHEMAS)

# Regenerate deploy/helm/schemas from the Go modules that ship the sources
# (deploy/helm/schemas.py says which); needs PyYAML.
chart-schemas:
	mod() { $(GO) mod download -json $$1 | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'; }; \
	  $(PYTHON) deploy/helm/schemas.py $(CHART_SCHEMAS) \
	    "$$(mod k8s.io/cli-runtime@v0.36.2)/artifacts/openapi/swagger.json" \
	    "$$(mod github.com/prometheus-operator/prometheus-operator@v0.85.0)" \
	    "$$(mod github.com/kedacore/keda/v2@v2.21.0)"

# Real Triton: tritonserver 2.51.0 from the nvidia-pytriton wheel, tritonclient,
# perf_analyzer and ONNX Runtime, in their own venv (tests/triton/requirements.txt);
# on Debian, libpython3.X for the python backend's stub; the example networks'
# model.onnx files (scripts/onnx_models.py, rewritten when that script changes).
# scripts/triton.sh does it all and is quick when everything is in place.
TRITON_VENV  := .venv-triton
TRITON_WORK  := $(BUILD)/triton
TRITON_HOST  ?= 127.0.0.1
HTTP_PORT    ?= 8000
GRPC_PORT    ?= 8001
METRICS_PORT ?= 8002
TRITON_ARGS = --venv $(TRITON_VENV) --model-repo model_repository --backend-dir $(BUILD)/backends \
	--work-dir $(TRITON_WORK) --host $(TRITON_HOST) \
	--http-port $(HTTP_PORT) --grpc-port $(GRPC_PORT) --metrics-port $(METRICS_PORT)

# sluice_export (python/) goes in too, for tests/triton/test_exported_parity.py:
# a copy, reinstalled whenever its sources change (the stamp holds their hash),
# so the tests import it as a user's code would, without path edits.
SLUICE_EXPORT_SRC = python/pyproject.toml $(sort $(wildcard python/sluice_export/*.py))
triton:
	PYTHON=$(PYTHON) scripts/triton.sh --install-only --venv $(TRITON_VENV) --work-dir $(TRITON_WORK)
	@h=$$(cat $(SLUICE_EXPORT_SRC) | sha256sum | cut -d' ' -f1); \
	  stamp=$(TRITON_VENV)/.sluice-export.sha256; \
	  if [ "$$(cat $$stamp 2>/dev/null)" != "$$h" ]; then \
	    echo "installing sluice_export (./python) into $(TRITON_VENV)"; \
	    $(TRITON_VENV)/bin/pip install -q --disable-pip-version-check --no-deps ./python && \
	    rm -rf python/build python/sluice_export.egg-info && echo "$$h" > $$stamp; \
	  fi

# The main job: Triton serving model_repository/ with the Sluice backend on
# $(TRITON_HOST); prints how to call it, then follows the server log in the
# foreground. Ctrl-C stops the server.
run: backend build triton
	scripts/triton.sh --foreground $(TRITON_ARGS)

# The same in the background (pid, ports, log in $(TRITON_WORK)/triton.env).
run-bg: backend build triton
	scripts/triton.sh $(TRITON_ARGS) >/dev/null
	@scripts/triton.sh --howto --work-dir $(TRITON_WORK)

stop:
	scripts/triton.sh --stop --work-dir $(TRITON_WORK)

# Tests against the real server (tests/triton): one server per session on
# free ports, so they run next to `make run`.
test-triton: backend build triton
	SLUICE_BIN=$(abspath $(BUILD)/sluice) SLUICE_BACKEND_DIR=$(abspath $(BUILD)/backends) \
	  $(TRITON_VENV)/bin/pytest -q tests/triton

# The Go client (client/) and `sluice infer` (cmd/sluice) against the real
# server, over gRPC and HTTP: their tests start their own server on free
# ports. `go test ./...` runs them too
# when the backend and .venv-triton exist, and skips them otherwise;
# SLUICE_TRITON_TESTS=1 turns a missing prerequisite into a failure.
#
# It also runs cgo's metrics against the real libtritonserver, preloaded
# into the test binary: built as a PIE with dynamic-undefined-weak, the
# binary keeps triton.h's weak references as dynamic relocations, which the
# preloaded library then binds.
PRELOAD_TEST_FLAGS := -buildmode=pie -ldflags='-linkmode=external -extldflags=-Wl,-z,dynamic-undefined-weak'
test-client: backend triton test-deps
	SLUICE_TRITON_TESTS=1 SLUICE_BACKEND_DIR=$(abspath $(BUILD)/backends) TRITON_VENV=$(abspath $(TRITON_VENV)) \
	  $(GO) test -count=1 ./client/... ./cmd/sluice/...
	SLUICE_TRITON_TESTS=1 TRITON_VENV=$(abspath $(TRITON_VENV)) \
	  $(GO) test -count=1 $(PRELOAD_TEST_FLAGS) -run TestMetricsOfOverlappingCopies ./cgo/

# perf_analyzer over gRPC, real JPEGs, concurrency 1-8: a Markdown table
# (for docs/perf.md). Starts its own server unless PERF_ARGS names one
# (e.g. PERF_ARGS="--work-dir build/triton" after make run-bg). HTTP and
# batched requests too: PERF_ARGS='--protocols "grpc http" --batch "1 4"'
# (each one repeats the sweep; --quick shortens it).
PERF_ARGS ?=
perf-triton: backend build triton
	bench/perf_triton.sh $(PERF_ARGS)

# The compact pipeline files the model folders hold, from their text form
# (a test fails when they are stale).
compact: build
	for f in model_repository/*/1/pipeline.pbtxt; do $(BUILD)/sluice compile $$f -o $${f%pipeline.pbtxt}model.sluice; done

# The CLI alone, no server: the ImageNet example pipeline over the corpus
# photos, outputs as .npy.
run-cli: build
	$(BUILD)/sluice validate model_repository/preprocess_imagenet/1/pipeline.pbtxt
	$(BUILD)/sluice run --pipeline model_repository/preprocess_imagenet/1/pipeline.pbtxt \
	  --out $(BUILD)/out $(CORPUS)/jpeg/derived/*.jpg
	@echo "outputs: $(BUILD)/out/<image>.PIXELS.npy (float32 [3,224,224])"

# The Python exporter (python/sluice_export): unit tests of the builder and
# of every exporter's mapping and refusals, and parity against the libraries
# installable without torch (transformers' Pillow processors), `sluice run`
# of the exported pipeline on the corpus photos. Parity tests whose pipeline
# uses an argument this build lacks skip, naming it.
export-test: build venv
	cd python && SLUICE_BIN=$(abspath $(BUILD)/sluice) ../$(VENV)/bin/pytest -q tests

# The same with torch, torchvision, timm, open_clip and ultralytics installed
# (about 6 GB: the registry's default torch wheels, CUDA-built, which run on
# a CPU): their parity tests run instead of skipping. In a venv of their own,
# not .venv: ultralytics pulls in opencv-python, whose cv2 would replace the
# pinned headless one the accuracy tests compare against, and an importable
# torchvision changes the class transformers' AutoImageProcessor gives.
TORCH_VENV := $(BUILD)/venv-torch
$(TORCH_VENV)/.stamp: tests/requirements.txt python/requirements-torch.txt
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/pip install -q -r tests/requirements.txt -r python/requirements-torch.txt
	touch $@
export-test-torch: build $(TORCH_VENV)/.stamp
	cd python && SLUICE_BIN=$(abspath $(BUILD)/sluice) $(abspath $(TORCH_VENV))/bin/pytest -q tests

# Sluice's CPU ImageNet pipeline vs OpenCV, same photos, same threads.
bench-cpu: build venv
	$(VENV)/bin/python -m bench.cpu --sluice $(BUILD)/sluice --corpus $(CORPUS)

# A count, not a duration: time-based -fuzztime can end in a spurious
# "context deadline exceeded" with Go 1.26 (golang/go#75804).
FUZZTIME ?= 500000x
fuzz: test-deps pic-libs
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./pipeline/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzCoefficients -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzWebP -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzBMP -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzPNM -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzEXIF -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzTIFF -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzJP2 -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzAVIF -fuzztime $(FUZZTIME) ./codec/
	$(GO) test -run '^$$' -fuzz FuzzExecute -fuzztime $(FUZZTIME) ./backend/

# docker/Dockerfile built with buildah (no daemon, chroot isolation) over
# local test bases (debootstrap, this machine's Go, the wheel's tritonserver:
# no image registry needed), then smoke-tested without a container runtime:
# the image's tritonserver must answer `sluice infer` exactly as make run's
# server does (docker/image.sh; docker/README.md). Root; installs buildah
# and debootstrap when missing; cache in /var/tmp/sluice-image (~9 GB).
# About 13 minutes cold on 2 cores; warm, 15 s unchanged, ~5 min after a
# source change (the image rebuilds the backend without a Go build cache).
image-check: backend build triton
	docker/image.sh

# Regenerate the committed protobuf Go code (protoc 3.21, protoc-gen-go
# v1.36.11, protoc-gen-go-grpc v1.6.2): the pipeline schema, and the gRPC
# stubs of Triton's inference protocol for the client (proto-client).
PROTOC_PATH = PATH="$$PATH:$$($(GO) env GOPATH)/bin"
proto: proto-client
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
	cd pipeline/pipelinepb && $(PROTOC_PATH) protoc --go_out=. --go_opt=paths=source_relative pipeline.proto

proto-client:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
	cd client/inferencepb && $(PROTOC_PATH) protoc --go_out=. --go_opt=paths=source_relative \
	  --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_service.proto

# The fused GPU kernel's PTX (kernels/sluice.ptx, embedded in the binary)
# from kernels/*.cu; needs nvcc. A test fails when the PTX is stale.
ptx:
	scripts/ptx.sh

# GPU tests and the GPU benchmark, for a machine with an NVIDIA GPU but no
# Go: gpu-build puts the test binaries, the CLI and the corpus photos in
# .bench/gpu; there, `scripts/gpu.sh run` runs the tests (under
# compute-sanitizer too) and bench/gpu.py (Sluice vs torchvision
# vs OpenCV). On a GPU machine with Go, bench-gpu runs the benchmark alone.
gpu-build: pic-libs
	scripts/gpu.sh build

bench-gpu: build
	$(PYTHON) -m bench.gpu --sluice $(BUILD)/sluice --corpus $(CORPUS)

clean:
	rm -rf $(BUILD)
