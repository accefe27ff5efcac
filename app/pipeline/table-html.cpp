#include "app/pipeline/table-html.h"

namespace folio {
namespace {

void appendCell(QString& out, const TableCell& cell, HtmlQuotes quotes) {
    out += QLatin1String("<td");
    if (cell.rowSpan > 1) {
        out += QLatin1String(" rowspan=\"") + QString::number(cell.rowSpan) + QLatin1Char('"');
    }
    if (cell.columnSpan > 1) {
        out += QLatin1String(" colspan=\"") + QString::number(cell.columnSpan) + QLatin1Char('"');
    }
    out += QLatin1Char('>') + escapeHtml(cell.text, quotes) + QLatin1String("</td>");
}

}  // namespace

QString tableRowHtml(const TableGrid& grid, int row, HtmlQuotes quotes) {
    QString out = QStringLiteral("<tr>");
    for (const TableCell& cell : grid.cells) {
        if (cell.row == row) {
            appendCell(out, cell, quotes);
        }
    }
    return out + QLatin1String("</tr>");
}

QString tableHtml(const TableGrid& grid, HtmlQuotes quotes) {
    QString out = QStringLiteral("<table>");
    size_t next = 0;  // cells are row-major: one pass over them
    for (int r = 0; r < grid.nRows; ++r) {
        out += QLatin1String("<tr>");
        while (next < grid.cells.size() && grid.cells[next].row < r) {
            ++next;
        }
        while (next < grid.cells.size() && grid.cells[next].row == r) {
            appendCell(out, grid.cells[next], quotes);
            ++next;
        }
        out += QLatin1String("</tr>");
    }
    return out + QLatin1String("</table>");
}

}  // namespace folio
