# raplbench entry points. The two set-up commands of the README:
#   make bench-all [QUICK=1]   measure every access path on this machine
#   make test                  the test suite (C++ unit tests, Python tests,
#                              the kbench boot test under QEMU)
# Both install what they need first: make deps (the system packages that
# building, measuring and drawing need, .venv); make test adds make deps-test
# (what only the tests need: the browser, TeX, QEMU, GoogleTest).

BUILD ?= build
PY := .venv/bin/python
QUICK ?=

.PHONY: all deps deps-test venv build ubench gbench-effect bench-all locked-bench-all bench-overhead \
	locked-bench-overhead soak report test test-ubench test-rbench test-python kbench-test validate gate baseline clean

all: build

deps:
	@ci/deps

# after deps: two package installs at once (make -j) would meet on dpkg's lock
deps-test: deps
	@ci/deps --test

# the Python environment alone (make report, validate, gate, baseline: no apt-get, no root)
venv:
	@ci/deps --python

CARGO ?= $(shell command -v cargo || echo $$HOME/.cargo/bin/cargo)

# cmake configures once; later builds reconfigure by themselves when needed
# (also when make deps brings Google Benchmark's source: ubench/gbench.cmake).
# The Criterion benchmark is built (--bench '*'), not the lib's and binaries'
# unit tests in the bench profile, which nothing runs (make test runs them);
# bench-all runs the benchmark `cargo bench --no-run` names.
build: ubench
	@$(CARGO) build --quiet --release --workspace
	@$(CARGO) bench --quiet --workspace --no-run --bench '*'

# ubench (with Google Benchmark 1.7.1 built with NDEBUG), its tests, the BPF object
ubench: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD)

# make gbench-effect [PAIRS=n, at least 2; default 6]: ubench linked to Debian's libbenchmark (built
# without NDEBUG; in $(BUILD)/gbench-system) against the NDEBUG build make build
# makes, interleaved; a table per benchmark (README, "Google Benchmark")
gbench-effect: ubench
	@[ -f $(BUILD)/gbench-system/build.ninja ] || cmake -S . -B $(BUILD)/gbench-system -G Ninja \
		-DCMAKE_BUILD_TYPE=Release -DRAPLBENCH_GBENCH=system >/dev/null
	@cmake --build $(BUILD)/gbench-system --target raplbench-ubench
	@$(PY) -m results.gbench_effect --a $(BUILD)/gbench-system/raplbench-ubench \
		--b $(BUILD)/raplbench-ubench $(if $(PAIRS),--pairs $(PAIRS))

# One run at a time per checkout (results/run_lock.py): the lock is taken
# before the build and held to the end of the report, so a second bench-all
# neither builds nor measures beside the first; it exits naming the running
# run, or with WAIT=1 waits for it. The lock needs the standard library only
# (python3: the venv may not exist yet).
LOCKED = python3 -m results.run_lock $(if $(WAIT),--wait) --what "make $@$(if $(QUICK), QUICK=1)" \
	-- $(MAKE) --no-print-directory

# make bench-all [QUICK=1] [WAIT=1] [TOOL='name=command ... {period_ms} ...']; the
# report drawn is this run's own. TOOL reaches the shell as an environment
# variable (make exports a command-line variable), never re-split by make.
bench-all:
	@$(LOCKED) locked-bench-all

locked-bench-all: build
	@$(PY) -m results.bench_all $(if $(QUICK),--quick) $(if $(TOOL),--tool "$$TOOL") --report

# the 1 kHz sampler alone: its self-report and the hyperfine overhead experiment
bench-overhead:
	@$(LOCKED) locked-bench-overhead

locked-bench-overhead: build
	@$(PY) -m results.bench_all $(if $(QUICK),--quick) $(if $(TOOL),--tool "$$TOOL") --only sampler,overhead

# each sampler mechanism at 1 kHz for 10 minutes under stress-ng (not in CI):
# lost samples, energy sums against the counters, RSS; make soak MINUTES=1 for less
soak: build
	@ci/soak $(if $(MINUTES),--minutes $(MINUTES))

# make report [RUNS="run_dir_or_results.jsonl ..."] [OUT=dir] [REFERENCE_MACHINE=name|index]
# figures, latency tables (md, csv, tex) and index.html; default: the newest run
report: venv
	@$(PY) -m plots.report $(RUNS) $(if $(OUT),--out "$(OUT)") $(if $(REFERENCE_MACHINE),--reference-machine "$(REFERENCE_MACHINE)")

test: build test-ubench test-rbench test-python

# ubench's unit tests are built once GoogleTest is there (RAPLBENCH_TESTS)
test-ubench: build deps-test
	@cmake -S . -B $(BUILD) -DRAPLBENCH_TESTS=ON >/dev/null
	@cmake --build $(BUILD)
	@cd $(BUILD) && ctest --output-on-failure

# --release: both reuse make build's units in target/release (Cargo.toml)
test-rbench: build
	@$(CARGO) test --quiet --release --workspace
	@$(CARGO) clippy --quiet --release --workspace --all-targets -- -D warnings

# every Python test, the kbench boot test (kbench/test_kbench_qemu.py) included:
# first those that may share the machine, a worker per CPU (pytest-xdist; a
# test file's tests on one worker, so they share its fixtures), then the
# serial ones alone, one at a time (conftest.py says which)
test-python: build deps-test
	@$(PY) -m pytest -n auto --dist loadfile -m "not serial"
	@$(PY) -m pytest -m serial

# the kernel module under QEMU: Debian's headers and kernel, busybox initramfs
kbench-test: deps-test
	@$(PY) -m pytest kbench

# make validate FILE=results/runs/<run_id>/results.jsonl
validate: venv
	@[ -n "$(FILE)" ] || { echo "usage: make validate FILE=<results.jsonl>" >&2; exit 2; }
	@$(PY) -m results.validate $(FILE)

# make gate [BASELINE=<run dir or results.jsonl>] [CURRENT=<run dir>] [GATE_FLAGS=...]
# The performance gate (ci/README.md): CURRENT (default: the newest run)
# against BASELINE (default: results/baseline/results.jsonl, see make baseline).
# `make gate` exits with ci/gate's own status: 0 pass, 1 regression, missing
# row or dead counter, 2 usage or input error.
# BASELINE and CURRENT are one path each, passed as one shell word whatever
# it holds (spaces, quotes): BASELINE="dir with space/x" is one baseline.
shell_word = '$(subst ','\'',$(1))'
GATE_ARGS = $(if $(BASELINE),--baseline $(call shell_word,$(BASELINE))) \
	$(if $(CURRENT),--current $(call shell_word,$(CURRENT))) $(GATE_FLAGS)
ifeq ($(MAKECMDGOALS),gate)
# GNU make reports any failed recipe as 2; the one way make itself exits 1 is
# its question mode (-q) with a goal out of date. So when gate is the only
# goal, the gate runs while make reads this file (its Markdown is printed on
# stdout, its messages go to stderr as usual), and a status of 1 turns on
# question mode: the phony goal is out of date and make exits 1.
GATE_OUT := $(shell mktemp)
GATE_STATUS := $(shell if ci/deps --python >&2; then ci/gate $(GATE_ARGS) >'$(GATE_OUT)'; echo $$?; else echo 2; fi)
GATE_REPORT := $(file <$(GATE_OUT))
$(shell rm -f '$(GATE_OUT)')
ifneq ($(GATE_REPORT),)
$(info $(GATE_REPORT))
endif
ifeq ($(GATE_STATUS),1)
MAKEFLAGS += -q
endif
gate:
	@exit $(or $(GATE_STATUS),2)
else
# beside other goals, the gate runs as a recipe: a regression exits 2 here
gate: venv
	@ci/gate $(GATE_ARGS)
endif

# make baseline [CURRENT=<run dir>] [BASELINE=<file or dir>]: validate the newest
# run (or CURRENT) and store its results.jsonl as results/baseline/results.jsonl
baseline: venv
	@ci/gate --store-baseline $(if $(CURRENT),--current $(call shell_word,$(CURRENT))) \
		$(if $(BASELINE),--baseline $(call shell_word,$(BASELINE)))

clean:
	rm -rf $(BUILD)
