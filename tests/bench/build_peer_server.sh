#!/bin/sh
# Build llama-server from the same pinned llama-cpp-python sdist as the benchmark peer (make peer), in a
# build directory of its own (.cache/peer/build-server) so the peer's build is left as it is.
#
# Usage: tests/bench/build_peer_server.sh CACHE_DIR        (run by `make peer-server`; needs make peer first)
#
# A benchmark peer only (make bench-serve): never linked into llmgen, never committed. llama.cpp's own
# default CPU options, as tests/bench/build_peer.sh; the server on, networking libraries off.
set -eu
CACHE=${1:?usage: build_peer_server.sh CACHE_DIR}
PEER=$CACHE/peer
SRC=$PEER/src
BUILD=$PEER/build-server
JOBS=${PEER_JOBS:-2}
[ -f "$SRC/CMakeLists.txt" ] || { echo "make peer-server: run make peer first (no $SRC)" >&2; exit 1; }
CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DGGML_CPU_REPACK=ON \
-DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF"
start=$(date +%s)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    # shellcheck disable=SC2086
    cmake -S "$SRC" -B "$BUILD" $CMAKE_FLAGS >"$PEER/server-configure.log" 2>&1 ||
        { tail -30 "$PEER/server-configure.log"; exit 1; }
fi
cmake --build "$BUILD" --config Release -j "$JOBS" --target llama-server >"$PEER/server-build.log" 2>&1 ||
    { tail -30 "$PEER/server-build.log"; exit 1; }
{
    echo "llama-server from $(sed -n 1p "$PEER/BUILD-INFO" 2>/dev/null)"
    echo "cmake_flags: $CMAKE_FLAGS"
    echo "this_run_seconds: $(( $(date +%s) - start )) (-j$JOBS)"
} >"$PEER/SERVER-BUILD-INFO"
cat "$PEER/SERVER-BUILD-INFO"
