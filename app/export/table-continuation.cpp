#include "app/export/table-continuation.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "app/pipeline/python-whitespace.h"

namespace folio {
namespace {

// The cells that start in each row, in column order (cells are row-major).
std::vector<std::vector<const TableCell*>> cellsByRow(const TableGrid& grid) {
    std::vector<std::vector<const TableCell*>> rows(static_cast<size_t>(std::max(grid.nRows, 0)));
    for (const TableCell& cell : grid.cells) {
        if (cell.row >= 0 && cell.row < grid.nRows) {
            rows[static_cast<size_t>(cell.row)].push_back(&cell);
        }
    }
    return rows;
}

// A cell's text as the header comparison sees it: no whitespace, full-width ASCII (U+FF01..U+FF5E)
// half-width.
QString comparable(const QString& text) {
    QString out;
    out.reserve(text.size());
    for (const QChar c : text) {
        const char16_t u = c.unicode();
        if (isPythonSpace(u)) {
            continue;
        }
        out += (u >= 0xFF01 && u <= 0xFF5E) ? QChar(static_cast<char16_t>(u - 0xFEE0)) : c;
    }
    return out;
}

int spanSum(const std::vector<const TableCell*>& cells) {
    int sum = 0;
    for (const TableCell* cell : cells) {
        sum += cell->columnSpan;
    }
    return sum;
}

}  // namespace

bool mayFollowContinuedTable(const QString& label) {
    static const QStringList kLabels = {QStringLiteral("footer"), QStringLiteral("vision_footnote"),
                                        QStringLiteral("number"), QStringLiteral("footnote"),
                                        QStringLiteral("footer_image")};
    return kLabels.contains(label);
}

bool mayPrecedeContinuation(const QString& label) {
    static const QStringList kLabels = {QStringLiteral("header"), QStringLiteral("header_image"),
                                        QStringLiteral("number")};
    return kLabels.contains(label);
}

int tableLayoutColumns(const TableGrid& grid) {
    const std::vector<std::vector<const TableCell*>> rows = cellsByRow(grid);
    std::vector<std::set<int>> occupied(rows.size());
    int columns = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        int column = 0;
        for (const TableCell* cell : rows[r]) {
            while (occupied[r].count(column) > 0) {
                ++column;
            }
            for (size_t rr = r; rr < std::min(rows.size(), r + static_cast<size_t>(cell->rowSpan)); ++rr) {
                for (int cc = column; cc < column + cell->columnSpan; ++cc) {
                    occupied[rr].insert(cc);
                }
            }
            column += cell->columnSpan;
            columns = std::max(columns, column);
        }
    }
    return columns;
}

int repeatedHeaderRows(const TableGrid& previous, const TableGrid& next, int maxRows) {
    const std::vector<std::vector<const TableCell*>> previousRows = cellsByRow(previous);
    const std::vector<std::vector<const TableCell*>> nextRows = cellsByRow(next);
    const int rows = std::min({previous.nRows, next.nRows, maxRows});
    int header = 0;
    for (int r = 0; r < rows; ++r) {
        const std::vector<const TableCell*>& a = previousRows[static_cast<size_t>(r)];
        const std::vector<const TableCell*>& b = nextRows[static_cast<size_t>(r)];
        if (a.size() != b.size()) {
            break;
        }
        bool same = true;
        for (size_t i = 0; i < a.size() && same; ++i) {
            same = a[i]->columnSpan == b[i]->columnSpan && comparable(a[i]->text) == comparable(b[i]->text);
        }
        if (!same) {
            break;
        }
        ++header;
    }
    return header;
}

bool continuesTable(const BlockBox& previousBox, const TableGrid& previous, const BlockBox& nextBox,
                    const TableGrid& next, int& headerRows) {
    const int previousWidth = previousBox.width();
    const int nextWidth = nextBox.width();
    if (previousWidth <= 0 || nextWidth <= 0 || previous.nRows == 0 || next.nRows == 0) {
        return false;
    }
    if (std::abs(nextWidth - previousWidth) / static_cast<double>(std::min(nextWidth, previousWidth)) >=
        0.1) {
        return false;
    }
    headerRows = repeatedHeaderRows(previous, next);
    if (tableLayoutColumns(previous) == tableLayoutColumns(next)) {
        return true;
    }
    if (headerRows >= next.nRows) {
        return false;
    }
    const std::vector<const TableCell*> last = cellsByRow(previous).back();
    const std::vector<const TableCell*> first = cellsByRow(next)[static_cast<size_t>(headerRows)];
    return spanSum(last) == spanSum(first) || last.size() == first.size();
}

void appendTableRows(TableGrid& into, const TableGrid& next, int fromRow) {
    const int offset = into.nRows - fromRow;
    for (const TableCell& cell : next.cells) {
        if (cell.row >= fromRow) {
            TableCell moved = cell;
            moved.row += offset;
            into.cells.push_back(std::move(moved));
        }
    }
    into.nRows += std::max(0, next.nRows - fromRow);
    into.nColumns = std::max(into.nColumns, next.nColumns);
}

}  // namespace folio
