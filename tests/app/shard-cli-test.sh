#!/usr/bin/env bash
# folio-cli ocr split into shards as a scheduler runs them, through packaging/scheduler/ocr-shard.sh with the
# variables Slurm's job array and Kubernetes' indexed job set: every document written by exactly one shard, a
# retried shard skipping what is complete and redoing what is not, and folio-cli summary merging the reports
# and naming a missing shard.
set -uo pipefail
cli=$1
fixtures=$2
sample=$3
shard_script=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export FOLIO_CLI=$cli
models=(--model "$fixtures/paddleocr-vl/paddleocr-vl-tiny" --layout-model "$fixtures/layout/pp-doclayout-v3-tiny"
        --max-model-len 4096 --max-new-tokens 4 --format md,json)
failures=0
check() {  # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then
        echo "ok: $name"
    else
        echo "FAILED: $name"
        failures=$((failures + 1))
    fi
}

mkdir -p "$work/in"
cp "$fixtures/paddleocr-vl/images/small.png" "$fixtures/paddleocr-vl/images/tall.png" \
   "$fixtures/paddleocr-vl/images/wide.png" "$sample" "$work/in/"

# Slurm: sbatch --array=1-3 runs three tasks; each sees its SLURM_ARRAY_TASK_ID and the array's bounds.
for id in 1 2 3; do
    SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 \
        "$shard_script" "$work/slurm" "$work/in" "${models[@]}" >/dev/null 2>"$work/slurm-$id.err"
    check "slurm task $id: exit 0" test $? -eq 0
done
for stem in small tall wide sample; do
    check "slurm: $stem.md and $stem.json" test -s "$work/slurm/$stem.md" -a -s "$work/slurm/$stem.json"
done
check "slurm: three reports" test "$(ls "$work/slurm/reports" | wc -l)" -eq 3
check "slurm: every document in exactly one report" python3 -c "
import json,sys,glob
stems=[d['stem'] for f in glob.glob(sys.argv[1]+'/reports/*.json') for d in json.load(open(f))['documents']]
assert sorted(stems)==['sample','small','tall','wide'], stems" "$work/slurm"
"$cli" summary "$work"/slurm/reports/*.json >"$work/summary.json" 2>"$work/summary.err"
check "summary: exit 0" test $? -eq 0
check "summary: every shard, four documents" python3 -c "
import json,sys
m=json.load(open(sys.argv[1]))
assert m['shards']=={'count':3,'present':[0,1,2],'missing':[]}, m['shards']
assert m['totals']['documents']==4 and m['totals']['documents_failed']==0, m['totals']
assert [d['position'] for d in m['documents']]==[0,1,2,3], m['documents']" "$work/summary.json"

# A retried task skips what is complete, without loading a model; a missing output is redone.
first_stem=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['documents'][0]['stem'])" \
    "$work/slurm/reports/shard-0-of-3.json")
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 \
    "$shard_script" "$work/slurm" "$work/in" "${models[@]}" >/dev/null 2>"$work/retry.err"
check "retry: exit 0" test $? -eq 0
check "retry: nothing to do" grep -q "nothing to do in shard 0/3" "$work/retry.err"
check "retry: reported as skipped" python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))
assert r['documents'] and all(d['status']=='skipped' for d in r['documents']), r" "$work/slurm/reports/shard-0-of-3.json"
rm "$work/slurm/$first_stem.json"
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 \
    "$shard_script" "$work/slurm" "$work/in" "${models[@]}" >/dev/null 2>"$work/redo.err"
check "redo: exit 0" test $? -eq 0
check "redo: the missing JSON is back" test -s "$work/slurm/$first_stem.json"
check "redo: written again" python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))
assert [d['status'] for d in r['documents'] if d['stem']==sys.argv[2]]==['written'], r" \
    "$work/slurm/reports/shard-0-of-3.json" "$first_stem"

# Kubernetes: an indexed job of two completions; each pod sees JOB_COMPLETION_INDEX.
for index in 0 1; do
    JOB_COMPLETION_INDEX=$index FOLIO_SHARDS=2 \
        "$shard_script" "$work/k8s" "$work/in" "${models[@]}" >/dev/null 2>"$work/k8s-$index.err"
    check "kubernetes index $index: exit 0" test $? -eq 0
done
"$cli" summary "$work"/k8s/reports/*.json >/dev/null 2>"$work/k8s-summary.err"
check "kubernetes summary: exit 0" test $? -eq 0
check "kubernetes summary: four documents" grep -q "2 of 2 shards; 4 documents written (0 failed)" \
    "$work/k8s-summary.err"

# A shard that never ran is named, and the exit code says so.
"$cli" summary "$work/k8s/reports/shard-0-of-2.json" >/dev/null 2>"$work/missing.err"
check "missing shard: exit 3" test $? -eq 3
check "missing shard: named" grep -q "missing shards: \[1\]" "$work/missing.err"
"$cli" summary "$work/k8s/reports/shard-0-of-2.json" "$work/slurm/reports/shard-1-of-3.json" \
    >/dev/null 2>"$work/mixed.err"
check "mixed runs: exit 1" test $? -eq 1
check "mixed runs: message" grep -q "is of another run than the shards of 2" "$work/mixed.err"
env -u JOB_COMPLETION_INDEX -u SLURM_ARRAY_TASK_ID "$shard_script" "$work/none" "$work/in" 2>"$work/none.err"
check "no scheduler: exit 2" test $? -eq 2
check "no scheduler: message" grep -q "neither JOB_COMPLETION_INDEX" "$work/none.err"

echo "$failures checks failed"
exit $((failures > 0))
