// A recognised block's content from the model's text.
#pragma once

#include "page-result.h"

namespace folio {

// Sets block.content from block.rawText for its label.
void finalizeBlock(BlockResult& block);

}  // namespace folio
