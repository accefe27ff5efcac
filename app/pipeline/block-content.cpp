#include "app/pipeline/block-content.h"

#include "app/pipeline/formula-text.h"
#include "app/pipeline/otsl-table.h"
#include "app/pipeline/repetition-trim.h"
#include "app/pipeline/table-html.h"

namespace folio {

void finalizeBlock(BlockResult& block) {
    block.rawText = trimRepetition(block.rawText, repetitionMinLength(block.label));
    block.content = convertFormulaDelimiters(block.rawText, block.label);
    block.table.reset();
    if (block.label == QLatin1String("table")) {
        if (std::optional<TableGrid> grid = parseOtslTable(block.content)) {
            block.content = tableHtml(*grid);
            block.table = std::move(grid);
        }
    }
}

}  // namespace folio
