// A block's content from its recognised text, as PaddleOCR-VL's pipeline makes block_content after
// recognition: runaway repetition cut, LaTeX delimiters turned into $ and $$, and table blocks' OTSL turned
// into a grid and its HTML.
#pragma once

#include "app/documents/page-result.h"

namespace folio {

// Sets block.rawText (the model's text as generated) to its repetition-trimmed form, then block.content and
// block.table from it and block.label: tables whose text parses as OTSL get the grid and its HTML, other
// tables keep their text. Call once per recognition of the block.
void finalizeBlock(BlockResult& block);

}  // namespace folio
