#include "app/document-model/edited-table.h"

#include <QRegularExpression>
#include <QStringList>
#include <QTextDocumentFragment>
#include <algorithm>
#include <vector>

namespace folio {

namespace {

struct RawCell {
    QString text;
    int rowSpan = 1;
    int columnSpan = 1;
};

int spanOf(const QString& attributes, const QString& name) {
    const QRegularExpression re(name + QStringLiteral(R"(\s*=\s*["']?\s*(\d+))"),
                                QRegularExpression::CaseInsensitiveOption);
    const QRegularExpressionMatch m = re.match(attributes);
    return m.hasMatch() ? std::max(1, m.captured(1).toInt()) : 1;
}

// Rows of cells placed on a grid: each cell at the first free column of its row, spans taking the positions
// below and to the right.
std::optional<TableGrid> place(const std::vector<std::vector<RawCell>>& rows) {
    if (rows.empty() || static_cast<int>(rows.size()) > kMaxEditedTableRows) {
        return std::nullopt;
    }
    TableGrid grid;
    std::vector<std::vector<bool>> taken;
    const auto isTaken = [&](int r, int c) {
        return r < static_cast<int>(taken.size()) &&
               c < static_cast<int>(taken[static_cast<size_t>(r)].size()) &&
               taken[static_cast<size_t>(r)][static_cast<size_t>(c)];
    };
    for (size_t r = 0; r < rows.size(); ++r) {
        int column = 0;
        for (const RawCell& raw : rows[r]) {
            while (isTaken(static_cast<int>(r), column)) {
                ++column;
            }
            const int rowSpan = std::min(raw.rowSpan, static_cast<int>(rows.size() - r));
            const int columnSpan = std::min(raw.columnSpan, kMaxEditedTableColumns);
            if (column + columnSpan > kMaxEditedTableColumns) {
                return std::nullopt;
            }
            for (int dr = 0; dr < rowSpan; ++dr) {
                const size_t row = r + static_cast<size_t>(dr);
                if (taken.size() <= row) {
                    taken.resize(row + 1);
                }
                auto& line = taken[row];
                if (line.size() < static_cast<size_t>(column + columnSpan)) {
                    line.resize(static_cast<size_t>(column + columnSpan), false);
                }
                for (int dc = 0; dc < columnSpan; ++dc) {
                    line[static_cast<size_t>(column + dc)] = true;
                }
            }
            grid.cells.push_back({static_cast<int>(r), column, rowSpan, columnSpan, raw.text});
            grid.nColumns = std::max(grid.nColumns, column + columnSpan);
            column += columnSpan;
        }
    }
    grid.nRows = static_cast<int>(rows.size());
    if (grid.cells.empty()) {
        return std::nullopt;
    }
    std::sort(grid.cells.begin(), grid.cells.end(), [](const TableCell& a, const TableCell& b) {
        return a.row != b.row ? a.row < b.row : a.column < b.column;
    });
    return grid;
}

QString cellText(const QString& html) {
    // Tags inside a cell go (line breaks become spaces); entities are read.
    QString text = html;
    text.replace(
        QRegularExpression(QStringLiteral(R"(<br\s*/?>)"), QRegularExpression::CaseInsensitiveOption),
        QStringLiteral(" "));
    return QTextDocumentFragment::fromHtml(text).toPlainText().simplified();
}

std::optional<TableGrid> parseHtmlTable(const QString& text) {
    const QRegularExpression table(
        QStringLiteral(R"(<table\b[^>]*>(.*?)</table\s*>)"),
        QRegularExpression::CaseInsensitiveOption | QRegularExpression::DotMatchesEverythingOption);
    const QRegularExpressionMatch t = table.match(text);
    if (!t.hasMatch()) {
        return std::nullopt;
    }
    const QRegularExpression row(
        QStringLiteral(R"(<tr\b[^>]*>(.*?)(?=<tr\b|</table|$))"),
        QRegularExpression::CaseInsensitiveOption | QRegularExpression::DotMatchesEverythingOption);
    const QRegularExpression cell(
        QStringLiteral(R"(<(td|th)\b([^>]*)>(.*?)(?=<td\b|<th\b|</tr|$))"),
        QRegularExpression::CaseInsensitiveOption | QRegularExpression::DotMatchesEverythingOption);
    const QRegularExpression closing(QStringLiteral(R"(</t[dh]\s*>\s*$)"),
                                     QRegularExpression::CaseInsensitiveOption);
    std::vector<std::vector<RawCell>> rows;
    const QString body = t.captured(1);
    for (auto r = row.globalMatch(body); r.hasNext();) {
        const QString rowHtml = r.next().captured(1);
        std::vector<RawCell> cells;
        for (auto c = cell.globalMatch(rowHtml); c.hasNext();) {
            const QRegularExpressionMatch m = c.next();
            QString inner = m.captured(3);
            inner.remove(closing);
            cells.push_back({cellText(inner), spanOf(m.captured(2), QStringLiteral("rowspan")),
                             spanOf(m.captured(2), QStringLiteral("colspan"))});
        }
        rows.push_back(std::move(cells));
    }
    return place(rows);
}

std::optional<TableGrid> parseMarkdownTable(const QString& text) {
    const QRegularExpression separator(QStringLiteral(R"(^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$)"));
    std::vector<std::vector<RawCell>> rows;
    bool sawSeparator = false;
    for (const QString& raw : text.split(QLatin1Char('\n'))) {
        const QString line = raw.trimmed();
        if (!line.contains(QLatin1Char('|'))) {
            if (!rows.empty()) {
                break;  // the table ended
            }
            continue;
        }
        if (separator.match(line).hasMatch()) {
            sawSeparator = true;
            continue;
        }
        QString inner = line;
        if (inner.startsWith(QLatin1Char('|'))) {
            inner.remove(0, 1);
        }
        if (inner.endsWith(QLatin1Char('|'))) {
            inner.chop(1);
        }
        std::vector<RawCell> cells;
        for (const QString& part : inner.split(QLatin1Char('|'))) {
            cells.push_back({part.trimmed(), 1, 1});
        }
        rows.push_back(std::move(cells));
    }
    // A separator row under the header makes it a table; text with a stray | does not.
    if (!sawSeparator) {
        return std::nullopt;
    }
    return place(rows);
}

}  // namespace

std::optional<TableGrid> parseEditedTable(const QString& text) {
    if (std::optional<TableGrid> html = parseHtmlTable(text)) {
        return html;
    }
    return parseMarkdownTable(text);
}

}  // namespace folio
