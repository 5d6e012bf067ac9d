# asn — build libasn and every tool into bin/.
#
#   make              build (installs missing Debian packages first when root)
#   make test         unit, vector and CLI tests; ends with "N passed, N failed"
#   make test-san     the tests again under AddressSanitizer + UBSan
#   make test-faults  the fault-injection suite in full (kill -9, full disks, OOM, signals)
#   make bench        benchmarks (ratios against baselines measured in the same run)
#   make install PREFIX=/usr/local
#   make demo         the whole pipeline on the shipped demo models
#   make demo-models  rebuild the demo models (corpus, tokenizer, training)
#
# O= puts objects and binaries under another folder (the sanitizer build uses
# O=build/san), so several configurations can live side by side.

O        ?= .
PREFIX   ?= /usr/local
VERSION  := 0.1.0
# NET_PKGS: serve's HTTP server and the servers' client. asn.pc names them
# as plain -l flags: their static dependency chains (TLS, IDN, ...) are not
# needed by a program that links libasn statically without the network part.
CORE_PKGS := jansson yaml-0.1 sqlite3 openblas libcrypto libpcre2-8
NET_PKGS := libmicrohttpd libcurl
PKGS     := $(CORE_PKGS) $(NET_PKGS)

CC       ?= cc
OPT      ?= -O3
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter -Wvla -Wno-psabi
# -ffp-contract=off: no fused multiply-add, so results do not depend on
# whether the compiler (or a target clone) happens to use FMA.
CFLAGS   ?= $(OPT) -g
# AVX2_TOP=1 (with O=DIR): GCC's target clones stop at AVX2, as on an
# AVX2-only CPU; with ASN_CPU=avx2 this machine then runs that class's code
# everywhere (benchmarks of that class)
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC $(WARN) -ffp-contract=off -fno-math-errno -fno-trapping-math \
             -Ilib $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS) $(SAN_FLAGS) \
             $(if $(filter 1,$(AVX2_TOP)),-DASN_CLONES_AVX2_TOP)
LDLIBS    = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -lpthread

ifeq ($(SAN),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif

# Quiet by default: one line per file; V=1 prints the commands.
ifeq ($(V),1)
say =
else
say = @printf '  %-4s %s\n' $(1) $(2);
endif

BUILD    := $(O)/build/obj
BIN      := $(O)/bin
LIBA     := $(O)/build/libasn.a
# the shared library: soname libasn.so.MAJOR, file libasn.so.VERSION
SOMAJOR  := 0
LIBSO    := $(O)/build/libasn.so.$(VERSION)

LIB_SRC  := $(wildcard lib/*/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
TOOL_SRC := $(wildcard tools/*.c)
TOOLS    := $(TOOL_SRC:tools/%.c=$(BIN)/%)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TESTS    := $(TEST_SRC:tests/unit/%.c=$(O)/build/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
REPLAYS  := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(O)/build/tests/test_replay_fuzz_%)
BENCH_SRC:= $(wildcard bench/bench_*.c)
BENCHES  := $(BENCH_SRC:bench/%.c=$(O)/build/bench/%)
DEPS_OK  := build/.deps-ok

.SECONDARY:
.PHONY: FORCE all deps deps-cluster deps-oracle deps-report test test-faults test-unit test-san test-arm oracle-llama bench bench-client bench-serve bench-quant bench-kl maskbench fuzz fuzz-totals install clean demo demo-models demo-check
all: $(TOOLS) $(TESTS) $(REPLAYS) $(BENCHES) $(LIBSO)

# Missing Debian packages are installed (as root) or named with the exact
# apt-get line before anything is compiled.
$(DEPS_OK): scripts/install-deps.sh
	@sh scripts/install-deps.sh
	@mkdir -p $(@D) && touch $@
deps:
	@sh scripts/install-deps.sh
# what pipelines/full-parallel.sh and pipelines/slurm/ need (GNU parallel,
# rsync, ssh, Slurm, munge); the cluster tests install it themselves
deps-cluster:
	@sh scripts/install-deps.sh cluster

# optional: PyTorch, the oracle of two tests (.ci/run installs it)
deps-oracle:
	@sh scripts/install-deps.sh oracle

# optional: headless Chromium for the report's rendering checks
deps-report:
	@sh scripts/install-deps.sh report

# Objects are rebuilt when the compiler flags change (the stamp holds them).
FLAGS_STAMP := $(BUILD)/.cflags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(ALL_CFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS)' > $@
FORCE:

$(BUILD)/%.o: %.c $(FLAGS_STAMP) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) $(FILE_CFLAGS) -MMD -MP -c $< -o $@

# The inference matrix product fuses multiply-adds (see lib/asn/linalg.h), at
# -O3 in every build (contraction into FMA depends on the optimization level).
$(BUILD)/lib/model/matmul.o: FILE_CFLAGS := -ffp-contract=fast -O3
# The NEON kernels (empty elsewhere) keep their accumulators in registers
# only without GCC's pre-allocation scheduler, which hoists loads a whole
# step ahead and spills accumulators to make room (seen in the aarch64
# assembly of GCC 12). Clang has no such flag.
ARM_KERNEL_CFLAGS := $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null | head -1)),,-fno-schedule-insns)
$(BUILD)/lib/model/qmatmul_neon.o $(BUILD)/lib/model/matmul_neon.o: FILE_CFLAGS := -O3 $(ARM_KERNEL_CFLAGS)

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(LIBSO): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libasn.so.$(SOMAJOR) -o $@ $^ $(LDLIBS)

# Every program also links tools/exe/ (what runs before main; not in libasn).
EXE_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/exe/*.c))
$(BIN)/%: $(BUILD)/tools/%.o $(EXE_OBJ) $(LIBA)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $< $(EXE_OBJ) $(LIBA) $(LDLIBS)

$(O)/build/tests/%: $(BUILD)/tests/unit/%.o $(LIBA)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

# Each fuzz target also builds as a unit test replaying its seeds and the
# inputs that once crashed it (tests/fuzz/regressions/).
$(O)/build/tests/test_replay_fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/replay.o $(LIBA)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBA) $(LDLIBS)

$(O)/build/bench/%: $(BUILD)/bench/%.o $(LIBA)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

test: all
	@sh tests/run.sh $(O)

# The fault-injection suite in full (tests/faults/): 50 kill -9 points per
# tool, full disks, ulimit -v, signals, SQLite (make test runs it with 2
# points per tool through tests/cli/faults.sh). The kill points' figures go
# to build/faults-report.tsv (tool, tried, landed mid-run, passed).
FAULT_POINTS ?= 50
test-faults: all
	@rm -f build/faults-report.tsv
	@FAULT_POINTS=$(FAULT_POINTS) FAULT_REPORT=$(CURDIR)/build/faults-report.tsv sh tests/run.sh $(O) faults
	@[ ! -f build/faults-report.tsv ] || { echo "tool	tried	mid-run	passed"; cat build/faults-report.tsv; }

# Unit tests only.
test-unit: $(TESTS) $(REPLAYS)
	@sh tests/run.sh $(O) unit

# Everything again, built with AddressSanitizer + UBSan: unit tests with leak
# checking, CLI tests without (a tool that exits on an error may leave
# allocations behind, by design).
test-san:
	@$(MAKE) --no-print-directory O=build/san SAN=1 OPT=-O1 all
	@ASN_SANITIZED=1 sh tests/run.sh build/san

bench: all
	@for b in $(BENCHES); do $$b || exit 1; done

# JSONSchemaBench's MaskBench through constrain (Llama-3's vocabulary): the
# shares of schemas compiled, valid instances accepted, invalid ones
# rejected, compile and mask times. Not in CI (the data is not in the
# repository; tests/data/maskbench holds a sample that make test checks):
#   make maskbench MASKBENCH_DIR=jsonschemabench/maskbench/data [MASKBENCH_ARGS="--every 10"]
MASKBENCH_VOCAB ?= tests/data/vocab/ggml-vocab-llama-bpe.gguf
maskbench: all
	@test -n "$(MASKBENCH_DIR)" || { echo "usage: make maskbench MASKBENCH_DIR=DIR [MASKBENCH_ARGS=...]" >&2; exit 2; }
	@nice -n 10 python3 bench/maskbench.py --constrain $(BIN)/constrain -m $(MASKBENCH_VOCAB) $(MASKBENCH_ARGS) $(MASKBENCH_DIR)

# The servers' client against a stub that answers at once (one core), and
# a bounded load test of serve at 1, 8 and 64 clients beside gen-candidates.
bench-client: all
	@$(O)/build/bench/bench_client $(BIN) examples/models/demo-base.gguf
bench-serve: all
	@nice -n 10 $(O)/build/bench/bench_serve $(BIN) examples/models/demo-base.gguf

# The engine on the GGUF files users download, beside llama.cpp: random-weight
# models of the 125M Llama and Qwen2.5-0.5B shapes (F32 from the generator in
# tests/fixtures; Q8_0 and Q4_K_M made by llama.cpp's llama-quantize, which
# LLAMA_QUANTIZE names), timed by bench_quant with the figures of
# LLAMA_BENCH (llama-bench) and LLAMA_BATCHED (llama-batched) beside asn's
# when set. BENCH_DIR holds the models (about 4 GB). BENCH_ROUNDS: each model
# measured that many times, asn and llama.cpp alternately, with the medians.
BENCH_DIR ?= build/bench/models
BENCH_QTYPES ?= Q8_0 Q4_K_M
BENCH_ROUNDS ?= 3
bench-quant: all
	@mkdir -p $(BENCH_DIR)
	@[ -f $(BENCH_DIR)/llama-125m-F32.gguf ] || /usr/bin/python3 tests/fixtures/make_shape_models.py llama-125m \
	  $(BENCH_DIR)/llama-125m-F32.gguf tests/data/gguf/ggml-vocab-llama-spm.gguf
	@[ -f $(BENCH_DIR)/qwen2.5-0.5b-F32.gguf ] || /usr/bin/python3 tests/fixtures/make_shape_models.py qwen2.5-0.5b \
	  $(BENCH_DIR)/qwen2.5-0.5b-F32.gguf tests/data/gguf/ggml-vocab-qwen2.gguf
	@for s in llama-125m qwen2.5-0.5b; do for q in $(BENCH_QTYPES); do f=$(BENCH_DIR)/$$s-$$q.gguf; \
	  [ -f $$f ] || { [ -n "$(LLAMA_QUANTIZE)" ] && "$(LLAMA_QUANTIZE)" $(BENCH_DIR)/$$s-F32.gguf $$f $$q >/dev/null 2>&1; } \
	  || echo "bench-quant: $$f missing (set LLAMA_QUANTIZE=path/to/llama-quantize)"; done; done
	@$(O)/build/bench/bench_quant -r $(BENCH_ROUNDS) $(BENCH_DIR)/*.gguf

# The engine's tests on ARM (aarch64): cross-compiled and run under qemu, the
# NEON kernels and the portable ones against the same float64 references
# and each other (Debian packages gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross and qemu-user-static). Each test runs on two emulated
# CPUs: `max` (ARMv8.2+ with the dot product: every kernel) and cortex-a53
# (ARMv8.0 without it: `neondot` must be refused and never chosen).
ARM_CC ?= aarch64-linux-gnu-gcc
ARM_TESTS := test_qmatmul test_matmul test_ttype
ARM_CPUS := max cortex-a53
ARM_ENGINE := lib/model/qmatmul.c lib/model/ttype.c lib/core/pool.c lib/core/core.c lib/core/cpu.c
# The fixture models of every architecture through libllama (a llama.cpp
# checkout built with cmake in LLAMA_DIR/build) against their float64 logits.
oracle-llama:
	@[ -n "$(LLAMA_DIR)" ] || { echo "oracle-llama: set LLAMA_DIR=path/to/llama.cpp (built in build/)"; exit 1; }
	@mkdir -p build/oracle
	$(CXX) -O2 -o build/oracle/llama_logits tests/oracle/llama_logits.cpp -I$(LLAMA_DIR)/include \
	  -I$(LLAMA_DIR)/ggml/include -L$(LLAMA_DIR)/build/bin -lllama -Wl,-rpath,$(abspath $(LLAMA_DIR))/build/bin
	/usr/bin/python3 tests/oracle/compare_llama.py build/oracle/llama_logits

test-arm:
	@command -v $(ARM_CC) >/dev/null && command -v qemu-aarch64-static >/dev/null || { \
	  echo "test-arm: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static"; exit 1; }
	@mkdir -p build/arm
	@$(ARM_CC) -std=c11 -D_GNU_SOURCE -O3 -Ilib $(WARN) -ffp-contract=fast -c lib/model/matmul.c -o build/arm/matmul.o
	@for f in qmatmul_neon matmul_neon; do $(ARM_CC) -std=c11 -D_GNU_SOURCE -O3 -fno-schedule-insns -Ilib $(WARN) \
	  -ffp-contract=off -c lib/model/$$f.c -o build/arm/$$f.o || exit 1; done
	@for t in $(ARM_TESTS); do $(ARM_CC) -std=c11 -D_GNU_SOURCE -O2 -Ilib $(WARN) -ffp-contract=off -static \
	  tests/unit/$$t.c $(ARM_ENGINE) build/arm/matmul.o build/arm/qmatmul_neon.o build/arm/matmul_neon.o \
	  -o build/arm/$$t -lm -lpthread || exit 1; done
	@for c in $(ARM_CPUS); do for t in $(ARM_TESTS); do \
	  { ASN_TESTDATA=$(CURDIR)/tests/data qemu-aarch64-static -cpu $$c build/arm/$$t || echo "not ok - $$t exited with status $$?"; } \
	  | sed "s/^\(not \)*ok - /&[$$c] /"; done; done \
	  | awk '/^ok /{p++} /^not ok /{f++; print} END {printf "%d passed, %d failed\n", p, f; exit f > 0}'

# Learned samplers against their targets on held-out data (minutes).
bench-kl: all
	@sh bench/sampler_kl.sh $(DEMO_OUT)

# libFuzzer targets (clang), run by hand: make fuzz FUZZ_SECONDS=120
# (FUZZ_TARGETS=fuzz_gguf to run some; FUZZ_TIMEOUT: seconds one input may
# take). The library is compiled once for them (build/fuzz/obj).
# scripts/fuzz-run.sh runs them on corpora kept in build/fuzz/ and appends
# each run (wall and CPU seconds, executions, coverage) to
# tests/fuzz/ledger.tsv; `make fuzz-totals` sums it per target. Crashing
# inputs go to build/fuzz/crashes-NAME/; crashes found are fixed and their
# inputs kept in tests/fuzz/regressions/NAME/, which the unit tests replay
# (test_replay_fuzz_NAME).
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 30
FUZZ_TARGETS ?= $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Ilib $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
              -fsanitize=address,undefined
FUZZ_OBJ := $(LIB_SRC:%.c=build/fuzz/obj/%.o)
build/fuzz/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz/libasn.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c build/fuzz/libasn.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< build/fuzz/libasn.a -o $@ $(LDLIBS)
fuzz: $(FUZZ_TARGETS:%=build/fuzz/%)
	@sh scripts/fuzz-run.sh $(FUZZ_SECONDS) $(FUZZ_TIMEOUT) $(FUZZ_TARGETS)
fuzz-totals:
	@printf '%-18s %5s %8s %8s %14s %8s %7s\n' target runs "wall h" "cpu h" executions cov crashes
	@awk -F'\t' 'NR > 1 { w[$$2] += $$3; c[$$2] += $$4; x[$$2] += $$5; r[$$2]++; k[$$2] += $$9; cv[$$2] = $$6 } \
	  END { for (t in w) printf "%-18s %5d %8.2f %8.2f %14d %8d %7d\n", t, r[t], w[t] / 3600, c[t] / 3600, x[t], cv[t], k[t] }' \
	  tests/fuzz/ledger.tsv | sort

# The whole pipeline on the shipped demo models (pipelines/demo.mk).
DEMO_OUT ?= out/demo
demo: all
	@$(MAKE) --no-print-directory -f pipelines/demo.mk OUT=$(DEMO_OUT)
	@echo; echo "demo: report at $(DEMO_OUT)/report/report.html"; \
	  cat $(DEMO_OUT)/report/summary.txt 2>/dev/null | head -20; \
	  echo; echo "learned sampler ($(DEMO_OUT)/sampler.gguf) against its targets ($(DEMO_OUT)/analysis/):"; \
	  tail -n 5 $(DEMO_OUT)/analysis/summary.txt 2>/dev/null

# Rebuilds the demo models from the corpus (about 90 minutes each on 2 cores).
demo-models: all
	@$(MAKE) --no-print-directory -f pipelines/models.mk

# Runs the demo twice (serial and -j2) in the same folder (the learned
# heuristic names its sampler by path) and requires byte-identical datasets
# and sampler.
DEMO_FILES := candidates verified ranked diverse ngram scored filtered pairs
demo-check: all
	@rm -rf build/demo-check build/demo-a
	@$(MAKE) --no-print-directory -f pipelines/demo.mk OUT=build/demo-check >/dev/null
	@mv build/demo-check build/demo-a
	@$(MAKE) --no-print-directory -j2 -f pipelines/demo.mk OUT=build/demo-check >/dev/null
	@for f in $(filter-out round1/pairs,$(DEMO_FILES:%=round1/%)) $(DEMO_FILES); do \
	  cmp build/demo-a/$$f.jsonl build/demo-check/$$f.jsonl || exit 1; done
	@cmp build/demo-a/sampler.gguf build/demo-check/sampler.gguf
	@echo "demo-check: two runs (serial and -j2) gave byte-identical datasets and sampler"

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/asn \
	  $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIBA) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libasn.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libasn.so.$(SOMAJOR)
	ln -sf libasn.so.$(SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libasn.so
	install -m 644 lib/asn/*.h $(DESTDIR)$(PREFIX)/include/asn/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@REQUIRES@|$(CORE_PKGS)|' -e 's|@NET_LIBS@|$(shell pkg-config --libs $(NET_PKGS) 2>/dev/null)|' scripts/asn.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/asn.pc
	for t in $(TOOLS); do sh scripts/gen-man.sh $$t $(VERSION) > $(DESTDIR)$(PREFIX)/share/man/man1/$$(basename $$t).1 || exit 1; done

clean:
	rm -rf build bin

-include $(LIB_OBJ:.o=.d) $(TOOL_SRC:%.c=$(BUILD)/%.d) $(TEST_SRC:%.c=$(BUILD)/%.d) $(BENCH_SRC:%.c=$(BUILD)/%.d) \
         $(FUZZ_SRC:%.c=$(BUILD)/%.d) $(BUILD)/tests/fuzz/replay.d
