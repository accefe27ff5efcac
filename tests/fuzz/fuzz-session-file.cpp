// Fuzzes the session file's reader: any bytes either throw folio::Error or give documents whose blocks' table
// grids hold their cells, that write and read back to the same documents, pages and blocks.
#include <QByteArray>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "app/document-model/session-json.h"
#include "engine/common/error.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void checkGrids(const std::vector<folio::SessionDocument>& documents) {
    for (const folio::SessionDocument& document : documents) {
        check(!document.path.isEmpty());
        for (const folio::PageEntry& page : document.pages) {
            for (const folio::BlockResult& block : page.result.blocks) {
                if (!block.table) {
                    continue;
                }
                const folio::TableGrid& grid = *block.table;
                for (const folio::TableCell& cell : grid.cells) {
                    check(cell.row >= 0 && cell.column >= 0 && cell.rowSpan >= 1 && cell.columnSpan >= 1);
                    check(int64_t{cell.row} + cell.rowSpan <= grid.nRows);
                    check(int64_t{cell.column} + cell.columnSpan <= grid.nColumns);
                }
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    std::vector<folio::SessionDocument> documents;
    try {
        documents = folio::parseSessionJson(bytes, QStringLiteral("fuzz.json"));
    } catch (const folio::Error&) {
        return 0;
    }
    checkGrids(documents);
    const std::vector<folio::SessionDocument> again =
        folio::parseSessionJson(folio::sessionJson(documents), QStringLiteral("again"));
    check(again.size() == documents.size());
    for (size_t d = 0; d < documents.size(); ++d) {
        check(again[d].path == documents[d].path && again[d].pages.size() == documents[d].pages.size());
        for (size_t p = 0; p < documents[d].pages.size(); ++p) {
            const auto& blocks = documents[d].pages[p].result.blocks;
            const auto& read = again[d].pages[p].result.blocks;
            check(read.size() == blocks.size());
            for (size_t b = 0; b < blocks.size(); ++b) {
                check(read[b].content == blocks[b].content && read[b].label == blocks[b].label);
                check(read[b].table.has_value() == blocks[b].table.has_value());
            }
        }
    }
    return 0;
}
