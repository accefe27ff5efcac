// Fuzzes the reading of table blocks' OTSL and the rest of a block's content (repetition cut, formula
// delimiters): any text gives either no table or a grid whose cells cover every position once, inside the
// bounds, and its HTML.
#include <QString>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "app/pipeline/block-content.h"
#include "app/pipeline/otsl-table.h"
#include "app/pipeline/table-html.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void checkGrid(const folio::TableGrid& grid) {
    check(grid.nRows > 0 && grid.nRows <= folio::kMaxTableRows);
    check(grid.nColumns > 0 && grid.nColumns <= folio::kMaxTableColumns);
    check(static_cast<int64_t>(grid.nRows) * grid.nColumns <= folio::kMaxTablePositions);
    std::vector<uint8_t> held(static_cast<size_t>(grid.nRows) * static_cast<size_t>(grid.nColumns), 0);
    int previous = -1;
    for (const folio::TableCell& cell : grid.cells) {
        check(cell.row >= 0 && cell.column >= 0 && cell.rowSpan >= 1 && cell.columnSpan >= 1);
        check(cell.row + cell.rowSpan <= grid.nRows && cell.column + cell.columnSpan <= grid.nColumns);
        const int position = cell.row * grid.nColumns + cell.column;
        check(position > previous);
        previous = position;
        for (int r = cell.row; r < cell.row + cell.rowSpan; ++r) {
            for (int c = cell.column; c < cell.column + cell.columnSpan; ++c) {
                uint8_t& n = held[static_cast<size_t>(r) * static_cast<size_t>(grid.nColumns) + c];
                check(n == 0);
                n = 1;
            }
        }
    }
    for (const uint8_t n : held) {
        check(n == 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QString text = QString::fromUtf8(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    if (const std::optional<folio::TableGrid> grid = folio::parseOtslTable(text)) {
        checkGrid(*grid);
        check(folio::tableHtml(*grid).startsWith(QLatin1String("<table>")));
    }
    for (const char* label : {"table", "text", "formula_number"}) {
        folio::BlockResult block;
        block.label = QLatin1String(label);
        block.rawText = text;
        folio::finalizeBlock(block);
        check(block.rawText.size() <= text.size());
        if (block.table) {
            checkGrid(*block.table);
        }
    }
    return 0;
}
