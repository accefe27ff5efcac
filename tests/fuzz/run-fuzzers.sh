#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS on a copy of its seed corpus and fails when one finds a crash.
# Usage: tests/fuzz/run-fuzzers.sh BUILD_DIR [SECONDS]   (BUILD_DIR configured with -DFOLIO_FUZZ=ON and clang,
# e.g. cmake --preset fuzz && cmake --build --preset fuzz --target fuzzers)
# SECONDS defaults to $FOLIO_FUZZ_SECONDS, else 30 (CI). Before a change to a parser lands, every target runs
# 10 minutes: FOLIO_FUZZ_SECONDS=600 (README.md).
# Inputs that crash are kept in BUILD_DIR/fuzz-artifacts/TARGET/ and printed as base64 (up to 64 KiB), so that
# a log is enough to reproduce one. The targets run side by side, one a core
# (FOLIO_FUZZ_JOBS sets how many at once).
set -euo pipefail

seconds=${2:-${FOLIO_FUZZ_SECONDS:-30}}
if [[ $# -lt 1 || $# -gt 2 || ! "$seconds" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 BUILD_DIR [SECONDS]   (SECONDS defaults to \$FOLIO_FUZZ_SECONDS, else 30)" >&2
    exit 2
fi
build_dir=$(cd "$1" && pwd)
fuzz_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
targets=(fuzz-json-reader fuzz-safetensors fuzz-safetensors-index fuzz-model-config fuzz-layout-config
         fuzz-tokenizer-json fuzz-sentencepiece fuzz-otsl-table fuzz-page-range fuzz-openai-request
         fuzz-chat-template fuzz-hub-api fuzz-layout-parsing fuzz-office-math fuzz-chats-file
         fuzz-session-file)
# FOLIO_FUZZ_TARGETS="fuzz-a fuzz-b" runs only those.
if [[ -n "${FOLIO_FUZZ_TARGETS:-}" ]]; then
    read -r -a targets <<<"$FOLIO_FUZZ_TARGETS"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The targets run FOLIO_FUZZ_JOBS at a time (default: one a core), each on one core.
jobs=${FOLIO_FUZZ_JOBS:-$(nproc)}
if [[ ! "$jobs" =~ ^[1-9][0-9]*$ ]]; then
    echo "FOLIO_FUZZ_JOBS must be a positive count, not '$jobs'" >&2
    exit 2
fi

# run_target TARGET: fuzzes TARGET, its output in $work/TARGET.log and its exit status in $work/TARGET.status.
run_target() {
    local target=$1
    local corpus="$work/$target"
    local artifacts="$build_dir/fuzz-artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    cp "$fuzz_dir/corpus/$target/"* "$corpus/"
    local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1
                   -artifact_prefix="$artifacts/")
    if [[ -f "$fuzz_dir/$target.dict" ]]; then
        options+=(-dict="$fuzz_dir/$target.dict")
    fi
    local status=0
    "$build_dir/tests/fuzz/$target" "${options[@]}" "$corpus" >"$work/$target.log" 2>&1 || status=$?
    echo "$status" >"$work/$target.status"
}

for target in "${targets[@]}"; do
    binary="$build_dir/tests/fuzz/$target"
    if [[ ! -x "$binary" ]]; then
        echo "$binary: not built (cmake --build $build_dir --target fuzzers)" >&2
        exit 2
    fi
done

echo "== ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
running=0
for target in "${targets[@]}"; do
    if ((running >= jobs)); then
        wait -n || true
        running=$((running - 1))
    fi
    run_target "$target" &
    running=$((running + 1))
done
wait

failed=()
for target in "${targets[@]}"; do
    echo "== $target"
    if [[ "$(cat "$work/$target.status" 2>/dev/null)" != 0 ]]; then
        tail -n 60 "$work/$target.log" >&2
        echo "$target: FAILED, crashing input in $build_dir/fuzz-artifacts/$target" >&2
        # The input itself, so that a log of a machine since gone is enough to reproduce the crash.
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/$target.log" | tail -n 1)
        if [[ -n "$artifact" && -f "$artifact" && $(stat -c %s "$artifact") -le 65536 ]]; then
            echo "$target: the input as base64 (base64 -d > crash; $target crash):" >&2
            base64 -w 120 "$artifact" >&2
        fi
        failed+=("$target")
    else
        grep -E "^(Done|stat::number_of_executed_units|stat::new_units_added)" "$work/$target.log" || true
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzzers that found crashes: ${failed[*]}" >&2
    exit 1
fi
echo "all fuzzers ran ${seconds}s without a crash"
