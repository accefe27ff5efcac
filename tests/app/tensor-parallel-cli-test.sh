#!/bin/bash
# folio-cli generate with one request (an image and a prompt) on the whole model, split over 2 and 4 CPU
# ranks, and on two engines of two ranks: the prompt and generated ids are the same every time.
# Usage: tensor-parallel-cli-test.sh FOLIO_CLI MODEL_DIR IMAGE
set -euo pipefail
cli=$1 model=$2 image=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {
    local name=$1
    shift
    "$cli" generate --model "$model" --image "$image" --prompt "OCR:" --prompt "Table Recognition:" \
        --max-tokens 12 --ids "$@" >"$out/$name.txt" 2>"$out/$name.log" || {
        echo "FAIL: generate $* exited with an error:" >&2
        cat "$out/$name.log" >&2
        exit 1
    }
}

run whole
run tp2 --tensor-parallel-size 2
run tp4 -tp 4
run dp2tp2 -tp 2 --data-parallel-size 2
grep -q '"ids":\[' "$out/whole.txt" || {
    echo "FAIL: no ids in the output:" >&2
    cat "$out/whole.txt" >&2
    exit 1
}
[ "$(grep -c '"ids":' "$out/whole.txt")" = 2 ] || {
    echo "FAIL: two requests, not two lines of ids:" >&2
    cat "$out/whole.txt" >&2
    exit 1
}
for split in tp2 tp4 dp2tp2; do
    if ! diff -u "$out/whole.txt" "$out/$split.txt"; then
        echo "FAIL: $split's output differs from the whole model's" >&2
        exit 1
    fi
done
echo "PASS: the same ids and text on 1, 2 and 4 ranks and on two engines of two"
