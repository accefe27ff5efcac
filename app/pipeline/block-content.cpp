#include "block-content.h"

namespace folio {

void finalizeBlock(BlockResult& block) { block.content = block.rawText; }

}  // namespace folio
