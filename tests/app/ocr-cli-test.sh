#!/usr/bin/env bash
# folio-cli ocr as a user runs it, on the sample PDF and images with the small fixture models: the files each
# format writes, page ranges, whole-page tasks, and the exit codes (0 all written, 1 nothing ran, 3 some
# inputs failed) with their messages; the usage's width.
set -uo pipefail
cli=$1
fixtures=$2
sample=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
models=(--model "$fixtures/paddleocr-vl/paddleocr-vl-tiny" --layout-model "$fixtures/layout/pp-doclayout-v3-tiny"
        --max-model-len 4096 --max-new-tokens 8)
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

# Every format from the sample PDF; the summary on stderr, the files written on stdout.
"$cli" ocr "$sample" -o "$work/all" "${models[@]}" --format md,json,html,pdf,xlsx,docx >"$work/all.out" 2>"$work/all.err"
status=$?
check "all formats: exit 0" test "$status" -eq 0
check "all formats: summary" grep -q "1 documents, 2 pages" "$work/all.err"
for f in sample.md sample.json sample.html sample.searchable.pdf sample.docx; do
    check "all formats: $f" test -s "$work/all/$f"
    check "all formats: $f listed" grep -qx "$work/all/$f" "$work/all.out"
done
# The small models find no table in the sample, so no workbook, and the summary says why.
check "all formats: no workbook" test ! -e "$work/all/sample.xlsx"
check "all formats: why no workbook" grep -q "note: sample.pdf: XLSX not written: no table was recognised as a grid" "$work/all.err"
check "all formats: no temporary files" test -z "$(find "$work/all" -name '*.tmp' -o -name '.*' -type f)"
check "DOCX: a Word document with a page break" /usr/bin/python3 -c "
import docx,sys
d=docx.Document(sys.argv[1])
assert sum(1 for e in d.element.body.iter() if e.tag.endswith('}br') and e.get('{http://schemas.openxmlformats.org/wordprocessingml/2006/main}type')=='page')==1
assert d.core_properties.title=='sample'" "$work/all/sample.docx"
check "JSON: two pages" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [p['page_index'] for p in d]==[0,1], d" "$work/all/sample.json"

# Two engines, a copy of the models each (data parallelism on the CPU): the same Markdown and blocks.
"$cli" ocr "$sample" -o "$work/two" "${models[@]}" --devices cpu,cpu --format md,json >/dev/null 2>"$work/two.err"
check "two engines: exit 0" test $? -eq 0
check "two engines: the same Markdown" cmp -s "$work/all/sample.md" "$work/two/sample.md"
check "two engines: the same blocks" python3 -c "
import json,sys
strip=lambda d:[dict(p,folio={k:v for k,v in p['folio'].items() if k!='timings'}) for p in d]
assert strip(json.load(open(sys.argv[1])))==strip(json.load(open(sys.argv[2])))" "$work/all/sample.json" "$work/two/sample.json"
"$cli" ocr "$sample" -o "$work/bad" "${models[@]}" --devices cpu,gpu >/dev/null 2>"$work/bad.err"
check "two engines: a bad device list is exit 1" test $? -eq 1
check "two engines: the bad entry named" grep -q "got 'gpu'" "$work/bad.err"

# A page range; Markdown alone by default with JSON.
"$cli" ocr "$sample" -o "$work/range" "${models[@]}" --pages 2 >/dev/null 2>"$work/range.err"
check "range: exit 0" test $? -eq 0
check "range: one page" grep -q "1 documents, 1 pages" "$work/range.err"
check "range: md and json" test -s "$work/range/sample.md" -a -s "$work/range/sample.json" -a ! -e "$work/range/sample.html"

# Whole pages without layout, with a task; an image input.
"$cli" ocr "$fixtures/paddleocr-vl/images/tall.png" -o "$work/nolayout" --model "$fixtures/paddleocr-vl/paddleocr-vl-tiny" \
    --max-model-len 4096 --max-new-tokens 4 --no-layout --task table --format json >/dev/null 2>"$work/nolayout.err"
check "no layout: exit 0" test $? -eq 0
check "no layout: one table block" python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
assert len(d)==1 and d[0]['page_index'] is None, d
b=d[0]['parsing_res_list']
assert len(b)==1 and b[0]['block_label']=='table', b" "$work/nolayout/tall.json"

# A damaged input beside a good one: the good one is written, the exit code says some failed.
printf '%%PDF-1.7\nbroken' >"$work/damaged.pdf"
"$cli" ocr "$sample" "$work/damaged.pdf" -o "$work/mixed" "${models[@]}" >/dev/null 2>"$work/mixed.err"
status=$?
check "mixed: exit 3" test "$status" -eq 3
check "mixed: names the damaged file" grep -q "damaged.pdf" "$work/mixed.err"
check "mixed: good one written" test -s "$work/mixed/sample.md"
check "mixed: nothing for the damaged one" test ! -e "$work/mixed/damaged.md"

# Nothing can run: exit 1 with a message.
"$cli" ocr "$work/missing.pdf" -o "$work/none" "${models[@]}" >/dev/null 2>"$work/none.err"
check "missing input: exit 1" test $? -eq 1
check "missing input: message" grep -q "missing.pdf" "$work/none.err"
: >"$work/afile"
"$cli" ocr "$sample" -o "$work/afile" "${models[@]}" >/dev/null 2>"$work/outfile.err"
check "output folder is a file: exit 1" test $? -eq 1
check "output folder is a file: says so" grep -q "afile: cannot create the output folder: a file of that name is in the way" "$work/outfile.err"
"$cli" ocr "$sample" -o "$work/none" "${models[@]}" --format md,odt >/dev/null 2>"$work/format.err"
check "unknown format: exit 1" test $? -eq 1
check "unknown format: message" grep -q 'unknown format "odt" (expected md, json, html, pdf, xlsx or docx)' "$work/format.err"
"$cli" ocr "$sample" -o "$work/none" --model "$fixtures/paddleocr-vl/paddleocr-vl-tiny" >/dev/null 2>"$work/nolayoutmodel.err"
check "no layout model: exit 1" test $? -eq 1
check "no layout model: says what to do" grep -q -- "--layout-model" "$work/nolayoutmodel.err"
"$cli" ocr "$sample" -o "$work/chat" --model "$fixtures/llama/llama-tiny" --no-layout >/dev/null 2>"$work/chatmodel.err"
check "a chat model: exit 1" test $? -eq 1
check "a chat model: says it is one" grep -q "is a chat model (llama), not a document recognition model" "$work/chatmodel.err"
check "a chat model: nothing written" test ! -e "$work/chat"
"$cli" ocr "$sample" -o "$work/none" "${models[@]}" --pages 5-9 >/dev/null 2>"$work/badrange.err"
check "range beyond the document: exit 3" test $? -eq 3
check "range beyond the document: message" grep -q "sample.pdf" "$work/badrange.err"

# The usage, every command's, reads in a terminal of 110 columns.
"$cli" --help >"$work/help.out" 2>&1
check "help: exit 0" test $? -eq 0
check "help: lists ocr, serve and bench" grep -q "folio-cli ocr INPUT" "$work/help.out"
check "help: lines of at most 110 columns" test -z "$(awk 'length > 110' "$work/help.out")"

if [ "$failures" -ne 0 ]; then
    echo "$failures checks failed"
    for f in "$work"/*.err; do echo "--- $f"; cat "$f"; done
    exit 1
fi
echo "all checks passed"
