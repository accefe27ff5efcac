#!/usr/bin/env bash
# Builds Folio and runs every test: the release build (CUDA for one architecture when nvcc is present),
# the ASan+UBSan build, the ThreadSanitizer build of the engine service and the threaded runtime, and the
# fuzzers for a bounded time. GPU tests skip where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."

bash packaging/install-deps.sh
# The official OpenAI client for Node (the openai npm package), which the server's tests use beside their own
# clients; kept in the build folder, once.
if command -v npm >/dev/null && [ ! -f build/npm/node_modules/openai/package.json ]; then
    npm install --prefix build/npm --no-audit --no-fund --silent openai@4 || echo "openai npm package: not installed"
fi
export NODE_PATH="$PWD/build/npm/node_modules${NODE_PATH:+:$NODE_PATH}"
jobs=$(nproc)
# Paths relative to the checkout in ccache's keys, so that a fresh clone reuses what an earlier one compiled.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"

# Each phase's time, printed when it ends.
phase_start=0
phase_name="dependencies"
phase() {
    echo "== $phase_name: $((SECONDS - phase_start)) s"
    echo "== $1"
    phase_start=$SECONDS
    phase_name=$1
}

phase "release build and tests"
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$jobs"
ctest --preset ci -j "$jobs"

phase "ASan + UBSan build and tests"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset asan -j "$jobs"

phase "ThreadSanitizer build and tests (the engine service and the threaded runtime)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp ctest --preset tsan -j "$jobs"

phase "fuzzers"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target fuzzers
bash tests/fuzz/run-fuzzers.sh build/fuzz  # FOLIO_FUZZ_SECONDS a target, 30 unless set
phase "all passed"
