#!/bin/sh
# Build the benchmark peer: llama.cpp as vendored by the PyPI llama-cpp-python source distribution.
#
# Usage: tests/bench/build_peer.sh CACHE_DIR        (run by `make peer`)
#
# The peer is only ever run by `make bench`: it is never linked into llmgen and never committed.
# It is built with llama.cpp's own default CPU options (GGML_NATIVE, OpenMP and CPU weight repacking
# on) so that it runs as a user who builds it from source would run it; only the network and
# server parts it does not need for benchmarking are switched off. Re-running is cheap: the download,
# unpack and configure steps are skipped when their output exists, and cmake rebuilds nothing new.
set -eu

VERSION=0.3.36   # llama-cpp-python sdist; the version earlier peer measurements in the issues used
CACHE=${1:?usage: build_peer.sh CACHE_DIR}
PEER=$CACHE/peer
SDIST=llama_cpp_python-$VERSION
SRC=$PEER/$SDIST
BUILD=$PEER/build
PYTHON=${PYTHON:-python3}
JOBS=${PEER_JOBS:-2}

for tool in cmake c++; do
    command -v "$tool" >/dev/null 2>&1 ||
        { echo "make peer: $tool not found (Debian: apt-get install cmake g++)" >&2; exit 1; }
done
mkdir -p "$PEER/dl"
start=$(date +%s)

if [ ! -f "$PEER/dl/$SDIST.tar.gz" ]; then
    # --no-binary :all: makes pip fetch the source distribution, which is where llama.cpp is vendored.
    "$PYTHON" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$PEER/dl"
fi
if [ ! -f "$SRC/vendor/llama.cpp/CMakeLists.txt" ]; then
    tar -xzf "$PEER/dl/$SDIST.tar.gz" -C "$PEER"
fi
# A version-free name for the Makefile (headers of build/bench/peer_run).
ln -sfn "$SDIST/vendor/llama.cpp" "$PEER/src"

# Options: everything CPU-related is left at llama.cpp's default; stated here so BUILD-INFO says it.
CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DGGML_CPU_REPACK=ON \
-DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF"
TARGETS="llama-bench llama-simple llama-quantize llama-perplexity llama-batched-bench" # llama-quantize: the K-quant test files (make quant-models); llama-perplexity: make quality; llama-batched-bench: make bench-parallel

fresh=0
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    fresh=1
    # shellcheck disable=SC2086
    cmake -S "$SRC/vendor/llama.cpp" -B "$BUILD" $CMAKE_FLAGS >"$PEER/cmake-configure.log" 2>&1 ||
        { tail -30 "$PEER/cmake-configure.log"; exit 1; }
fi
# shellcheck disable=SC2086
cmake --build "$BUILD" --config Release -j "$JOBS" --target $TARGETS >"$PEER/cmake-build.log" 2>&1 ||
    { tail -30 "$PEER/cmake-build.log"; exit 1; }
# The time of the first (full) build is kept; later runs are no-ops and say so separately.
if [ "$fresh" = 1 ]; then echo $(( $(date +%s) - start )) >"$PEER/full-build-seconds"; fi

# The sdist ships the submodule's git metadata: take the llama.cpp commit from it when git can read it.
COMMIT=$(git -C "$SRC/vendor/llama.cpp" rev-parse HEAD 2>/dev/null || echo unknown)
PYCOMMIT=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
{
    echo "peer: llama.cpp vendored by PyPI llama-cpp-python==$VERSION (sdist, pip download --no-binary :all:)"
    echo "sdist_sha256: $(sha256sum "$PEER/dl/$SDIST.tar.gz" | cut -d' ' -f1)"
    echo "llama_cpp_python_commit: $PYCOMMIT"
    echo "llama_cpp_commit: $COMMIT"
    echo "cmake_flags: $CMAKE_FLAGS"
    echo "targets: $TARGETS"
    echo "compiler: $(${CXX:-c++} --version | head -1)"
    echo "cmake: $(cmake --version | head -1)"
    # What the build resolved to (native flags, OpenMP, repack) as cmake cached it.
    grep -E '^(GGML_NATIVE|GGML_OPENMP|GGML_CPU_REPACK|GGML_LLAMAFILE|GGML_AVX[0-9A-Z_]*|CMAKE_BUILD_TYPE):' \
        "$BUILD/CMakeCache.txt" | tr '\n' ' '
    echo
    # The compiler flags ggml's CPU backend really got (GGML_NATIVE means -march=native).
    echo "ggml_cpu_flags: $(sed -n 's/^C_FLAGS = //p' "$BUILD/ggml/src/CMakeFiles/ggml-cpu.dir/flags.make")"
    echo "ggml_cpu_defines: $(sed -n 's/^C_DEFINES = //p' "$BUILD/ggml/src/CMakeFiles/ggml-cpu.dir/flags.make")"
    echo "built_on: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "full_build_seconds: $(cat "$PEER/full-build-seconds" 2>/dev/null || echo unknown) (-j$JOBS, on a shared machine)"
    echo "this_run_seconds: $(( $(date +%s) - start ))"
} >"$PEER/BUILD-INFO"
cat "$PEER/BUILD-INFO"
test -x "$BUILD/bin/llama-bench"
