#!/usr/bin/env bash
# One shard of a folio-cli ocr run under a scheduler (docs/sharding.md). The shard's index comes from the
# scheduler: Kubernetes' indexed job sets JOB_COMPLETION_INDEX (0..N-1), a Slurm job array SLURM_ARRAY_TASK_ID
# (counted here from SLURM_ARRAY_TASK_MIN). The shard count is FOLIO_SHARDS, or the array's
# SLURM_ARRAY_TASK_COUNT. Every shard takes the same INPUTs; each writes its documents to OUTDIR, skips those
# complete already (a retried task redoes only what is missing) and reports to OUTDIR/reports/.
#   ocr-shard.sh OUTDIR INPUT... [folio-cli ocr options]
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: ocr-shard.sh OUTDIR INPUT... [folio-cli ocr options]" >&2
    exit 2
fi
if [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
    k=$JOB_COMPLETION_INDEX
elif [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    k=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-0}))
else
    echo "ocr-shard.sh: neither JOB_COMPLETION_INDEX (Kubernetes) nor SLURM_ARRAY_TASK_ID (Slurm) is set" >&2
    exit 2
fi
n=${FOLIO_SHARDS:-${SLURM_ARRAY_TASK_COUNT:-}}
if [ -z "$n" ]; then
    echo "ocr-shard.sh: set FOLIO_SHARDS to the number of shards" >&2
    exit 2
fi
out=$1
shift
mkdir -p "$out/reports"
exec "${FOLIO_CLI:-folio-cli}" ocr "$@" -o "$out" --shard "$k/$n" --skip-complete \
    --report "$out/reports/shard-$k-of-$n.json"
