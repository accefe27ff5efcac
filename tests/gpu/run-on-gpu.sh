#!/usr/bin/env bash
# The GPU checks and benchmarks, for a machine with an NVIDIA GPU, CUDA's runtime and cuBLAS, and Python with
# torch and transformers. BUNDLE holds bin/ and lib/ as tools like bundle-libs.sh make them (or a build's
# binaries with their libraries installed); OUT receives the logs and JSON.
#   tests/gpu/run-on-gpu.sh BUNDLE OUT
#       [tests|full|full-ernie|full-llama|chat-llama|layout|documents|bench|quantized|reference|timeline|document-trace|handover]...
# documents runs the document pipeline end to end on the PDF FOLIO_BENCH_PDF (default BUNDLE/bench.pdf), four
# times over, with each full-size layout model.
# chat-llama runs the full-size Llama benchmark (DeepSeek-R1-Distill-Llama-8B's shapes, random weights) in
# bfloat16, WINT8 and WINT4, then transformers on the same shapes, in one call.
# timeline (a batch-1 decode step) and document-trace (30 pages of the document workload) need
# lib/libkernel-trace.so (tests/gpu/kernel-trace.cpp) and CUPTI's library in BUNDLE; handover needs
# bin/bench-handover (tests/gpu/bench-handover.cu).
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
        for t in test-kernels test-backend-ops test-cuda-model test-cuda-ernie45-vl test-cuda-llama test-serving-cuda; do
            "$bundle/bin/$t" > "$out/$t.log" 2>&1
            echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' ')"
        done
        ;;
    layout)
        timeout 300 python3 tests/fixtures/make_layout_fixtures.py --full /tmp/folio-layout-full \
            > "$out/layout-fixtures.log" 2>&1
        echo "layout fixtures: exit $?"
        FOLIO_LAYOUT_FULL_DIR=/tmp/folio-layout-full "$bundle/bin/test-layout-cuda" > "$out/test-layout-cuda.log" 2>&1
        echo "test-layout-cuda: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$out/test-layout-cuda.log" | tr '\n' ' ')"
        for v in v2 v3; do
            "$bundle/bin/folio-bench" --layout-model /tmp/folio-layout-full/pp-doclayout-$v --device cuda \
                --batch 1,8,32 --pages 64 > "$out/layout-bench-$v.json" 2> "$out/layout-bench-$v.log"
            echo "layout bench $v: exit $?"
            timeout 300 python3 tests/gpu/reference_layout_bench.py /tmp/folio-layout-full/pp-doclayout-$v 1,8,32 64 \
                > "$out/layout-reference-$v.json" 2> "$out/layout-reference-$v.log"
            echo "layout reference $v: exit $?"
        done
        ;;
    documents)
        [ -d /tmp/folio-layout-full/pp-doclayout-v3 ] ||
            timeout 300 python3 tests/fixtures/make_layout_fixtures.py --full /tmp/folio-layout-full \
                > "$out/layout-fixtures.log" 2>&1
        pdf=${FOLIO_BENCH_PDF:-$bundle/bench.pdf}
        for v in v2 v3; do
            "$bundle/bin/folio-bench" --device cuda --document "$pdf" --document "$pdf" --document "$pdf" \
                --document "$pdf" --layout-model /tmp/folio-layout-full/pp-doclayout-$v \
                --tokenizer tests/fixtures/paddleocr-vl/paddleocr-vl-tiny > "$out/documents-$v.json" \
                2> "$out/documents-$v.log"
            echo "documents $v: exit $?"
        done
        ;;
    full)
        timeout 300 python3 tests/gpu/make_full_size_reference.py /tmp/folio-full-size > "$out/full-size-reference.json" \
            2> "$out/full-size-reference.log"
        echo "full-size reference: exit $?"
        FOLIO_FULL_SIZE_DIR=/tmp/folio-full-size "$bundle/bin/test-full-size" > "$out/test-full-size.log" 2>&1
        echo "test-full-size: exit $? $(grep -E 'relative error|greedy tokens|^\[  (PASSED|FAILED) ' "$out/test-full-size.log" | tr '\n' ' ')"
        ;;
    full-ernie)
        timeout 400 python3 tests/gpu/make_full_size_ernie45_vl_reference.py /tmp/folio-full-size-ernie \
            > "$out/full-size-ernie-reference.json" 2> "$out/full-size-ernie-reference.log"
        echo "full-size ERNIE-4.5-VL reference: exit $?"
        FOLIO_FULL_SIZE_ERNIE_DIR=/tmp/folio-full-size-ernie "$bundle/bin/test-full-size" --gtest_filter='*Ernie*' \
            > "$out/test-full-size-ernie.log" 2>&1
        echo "test-full-size (ERNIE-4.5-VL): exit $? $(grep -E 'relative error|greedy tokens|^\[  (PASSED|FAILED) ' \
            "$out/test-full-size-ernie.log" | tr '\n' ' ')"
        ;;
    full-llama)
        timeout 400 python3 tests/gpu/make_full_size_llama_reference.py /tmp/folio-full-size-llama \
            > "$out/full-size-llama-reference.json" 2> "$out/full-size-llama-reference.log"
        echo "full-size Llama reference: exit $?"
        FOLIO_FULL_SIZE_LLAMA_DIR=/tmp/folio-full-size-llama "$bundle/bin/test-full-size" --gtest_filter='*Llama*' \
            > "$out/test-full-size-llama.log" 2>&1
        echo "test-full-size (Llama): exit $? $(grep -E 'relative error|greedy tokens|^\[  (PASSED|FAILED) ' \
            "$out/test-full-size-llama.log" | tr '\n' ' ')"
        ;;
    chat-llama)
        shapes=(--family llama --batch 1,8,64 --prefill-tokens 1024 --decode-tokens 64)
        for q in none wint8 wint4; do
            "$bundle/bin/folio-bench" --device cuda "${shapes[@]}" --quantization "$q" \
                > "$out/chat-llama-$q.json" 2> "$out/chat-llama-$q.log"
            echo "chat-llama $q: exit $?"
        done
        timeout 400 python3 tests/gpu/reference_chat_bench.py "${shapes[@]}" \
            > "$out/chat-llama-reference.json" 2> "$out/chat-llama-reference.log"
        echo "chat-llama reference: exit $?"
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
    timeline)
        FOLIO_KERNEL_TRACE="$out/kernel-trace.csv" CUDA_INJECTION64_PATH="$(realpath "$bundle/lib/libkernel-trace.so")" \
            "$bundle/bin/folio-bench" --device cuda --batch 1 --prefill-tokens 512 --decode-tokens 64 \
            --image-size 112x112 > "$out/timeline-bench.json" 2> "$out/timeline-bench.log"
        echo "timeline bench: exit $?"
        python3 tests/gpu/kernel_timeline.py "$out/kernel-trace.csv" > "$out/timeline.txt" 2>&1
        echo "timeline: exit $?"
        head -12 "$out/timeline.txt"
        gzip -f "$out/kernel-trace.csv"
        ;;
    document-trace)
        FOLIO_KERNEL_TRACE="$out/document-trace.csv" FOLIO_API_TRACE="$out/document-api.csv" \
            CUDA_INJECTION64_PATH="$(realpath "$bundle/lib/libkernel-trace.so")" "$bundle/bin/folio-bench" --device cuda --batch 1 --prefill-tokens 16 --decode-tokens 4 --pages 30 \
            > "$out/document-trace.json" 2> "$out/document-trace.log"
        echo "document trace bench: exit $?"
        seconds=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["document"]["seconds"])' \
            "$out/document-trace.json")
        python3 tests/gpu/kernel_timeline.py "$out/document-trace.csv" --whole-run --densest-seconds "$seconds" --parts \
            > "$out/document-timeline.txt" 2>&1
        echo "document timeline: exit $?"
        head -12 "$out/document-timeline.txt"
        gzip -f "$out/document-trace.csv" "$out/document-api.csv"
        ;;
    handover)
        "$bundle/bin/bench-handover" | tee "$out/handover.txt"
        echo "handover: exit ${PIPESTATUS[0]}"
        ;;
    reference)
        timeout 400 python3 tests/gpu/reference_document_bench.py --pages 100 > "$out/reference.json" 2> "$out/reference.log"
        echo "reference: exit $?"
        ;;
    esac
done
