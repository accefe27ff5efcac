#!/usr/bin/env bash
# The GPU checks and benchmarks, for a machine with an NVIDIA GPU, CUDA's runtime and cuBLAS, and Python with
# torch and transformers. BUNDLE holds bin/ and lib/ as tools like bundle-libs.sh make them (or a build's
# binaries with their libraries installed); OUT receives the logs and JSON.
#   tests/gpu/run-on-gpu.sh BUNDLE OUT [tests|bench|quantized|reference]...
set -uo pipefail
bundle=$1 out=$2
shift 2
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export FOLIO_FIXTURES_DIR="$PWD/tests/fixtures/paddleocr-vl"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
bench=("$bundle/bin/folio-bench" --device cuda --batch 1,8,64,256 --prefill-tokens 512 --decode-tokens 32)
for step in "$@"; do
    case $step in
    tests)
        for t in test-kernels test-backend-ops test-cuda-model test-serving-cuda; do
            "$bundle/bin/$t" > "$out/$t.log" 2>&1
            echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' ')"
        done
        ;;
    bench)
        "${bench[@]}" --pages 100 > "$out/bench.json" 2> "$out/bench.log"
        echo "bench: exit $?"
        ;;
    quantized)
        for q in wint8 wint4; do
            "${bench[@]}" --quantization "$q" > "$out/bench-$q.json" 2> "$out/bench-$q.log"
            echo "bench $q: exit $?"
        done
        ;;
    reference)
        timeout 400 python3 tests/gpu/reference_document_bench.py --pages 100 > "$out/reference.json" 2> "$out/reference.log"
        echo "reference: exit $?"
        ;;
    esac
done
