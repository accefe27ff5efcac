#include "app/pipeline/otsl-table.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "app/pipeline/python-whitespace.h"

namespace folio {
namespace {

enum class Tag { Fcel, Ecel, Lcel, Ucel, Xcel, Nl };

struct TagName {
    Tag tag;
    QLatin1String name;
};

const std::array<TagName, 6> kTags = {{
    {Tag::Fcel, QLatin1String("<fcel>")},
    {Tag::Ecel, QLatin1String("<ecel>")},
    {Tag::Lcel, QLatin1String("<lcel>")},
    {Tag::Ucel, QLatin1String("<ucel>")},
    {Tag::Xcel, QLatin1String("<xcel>")},
    {Tag::Nl, QLatin1String("<nl>")},
}};

// The tag that starts at `pos`, if any.
const TagName* tagAt(const QString& text, qsizetype pos) {
    if (text[pos] != QLatin1Char('<')) {
        return nullptr;
    }
    for (const TagName& t : kTags) {
        if (QStringView(text).mid(pos).startsWith(t.name)) {
            return &t;
        }
    }
    return nullptr;
}

struct RawCell {
    Tag tag;
    qsizetype textBegin = 0;  // the text after the tag, up to the next tag
    qsizetype textEnd = 0;
};

using RawRow = std::vector<RawCell>;

// Splits the text into rows of tagged cells; false where it exceeds the bounds.
bool readRows(const QString& text, std::vector<RawRow>& rows) {
    RawRow row;
    qsizetype pos = 0;
    while (pos < text.size()) {
        const TagName* t = tagAt(text, pos);
        if (t == nullptr) {
            ++pos;
            if (!row.empty()) {
                row.back().textEnd = pos;
            }
            continue;
        }
        pos += t->name.size();
        if (t->tag == Tag::Nl) {
            if (!row.empty()) {
                rows.push_back(std::move(row));
                row.clear();
                if (rows.size() > static_cast<size_t>(kMaxTableRows)) {
                    return false;
                }
            }
            continue;
        }
        if (row.size() >= static_cast<size_t>(kMaxTableColumns) * 4) {
            return false;  // far wider than any width a row may be brought to
        }
        row.push_back({t->tag, pos, pos});
    }
    if (!row.empty()) {
        rows.push_back(std::move(row));
    }
    return rows.size() <= static_cast<size_t>(kMaxTableRows);
}

// The width rows are brought to: least total |length - width| from the widest <fcel> position up.
int chooseWidth(const std::vector<RawRow>& rows) {
    int minWidth = 0;
    int maxLength = 0;
    for (const RawRow& row : rows) {
        for (size_t i = 0; i < row.size(); ++i) {
            if (row[i].tag == Tag::Fcel) {
                minWidth = std::max(minWidth, static_cast<int>(i) + 1);
            }
        }
        maxLength = std::max(maxLength, static_cast<int>(row.size()));
    }
    int best = std::max(minWidth, maxLength);
    int64_t bestCost = std::numeric_limits<int64_t>::max();
    for (int width = minWidth; width <= std::max(minWidth, maxLength); ++width) {
        int64_t cost = 0;
        for (const RawRow& row : rows) {
            cost += std::abs(static_cast<int64_t>(row.size()) - width);
        }
        if (cost < bestCost) {
            bestCost = cost;
            best = width;
        }
    }
    return best;
}

struct SpanCell {
    int row = 0;
    int column = 0;
    int rowSpan = 1;
    int columnSpan = 1;
    QString text;
};

}  // namespace

std::optional<TableGrid> parseOtslTable(const QString& otsl) {
    const QString text = stripPythonSpace(otsl);
    std::vector<RawRow> rows;
    if (!readRows(text, rows) || rows.empty()) {
        return std::nullopt;
    }
    const int width = chooseWidth(rows);
    const int height = static_cast<int>(rows.size());
    if (width <= 0 || width > kMaxTableColumns ||
        static_cast<int64_t>(width) * height > static_cast<int64_t>(kMaxTablePositions)) {
        return std::nullopt;
    }

    // The tag grid, rows cut or padded with <ecel> to the width.
    std::vector<Tag> tags(static_cast<size_t>(width) * static_cast<size_t>(height), Tag::Ecel);
    const auto at = [width](int r, int c) { return static_cast<size_t>(r) * static_cast<size_t>(width) + c; };
    std::vector<SpanCell> cells;
    for (int r = 0; r < height; ++r) {
        const RawRow& row = rows[static_cast<size_t>(r)];
        for (int c = 0; c < width && c < static_cast<int>(row.size()); ++c) {
            tags[at(r, c)] = row[static_cast<size_t>(c)].tag;
        }
    }
    for (int r = 0; r < height; ++r) {
        const RawRow& row = rows[static_cast<size_t>(r)];
        for (int c = 0; c < width; ++c) {
            const Tag tag = tags[at(r, c)];
            if (tag != Tag::Fcel && tag != Tag::Ecel) {
                continue;
            }
            SpanCell cell{r, c, 1, 1, {}};
            if (tag == Tag::Fcel) {
                const RawCell& raw = row[static_cast<size_t>(c)];
                cell.text = stripPythonSpace(text.mid(raw.textBegin, raw.textEnd - raw.textBegin));
            }
            while (c + cell.columnSpan < width) {
                const Tag right = tags[at(r, c + cell.columnSpan)];
                if (right != Tag::Lcel && right != Tag::Xcel) {
                    break;
                }
                ++cell.columnSpan;
            }
            while (r + cell.rowSpan < height) {
                const Tag below = tags[at(r + cell.rowSpan, c)];
                if (below != Tag::Ucel && below != Tag::Xcel) {
                    break;
                }
                ++cell.rowSpan;
            }
            cells.push_back(std::move(cell));
        }
    }
    if (cells.empty()) {
        return std::nullopt;
    }

    // Owners of positions, later cells over earlier ones; then each cell cut to the rectangle it still holds.
    std::vector<int> owner(tags.size(), -1);
    for (size_t k = 0; k < cells.size(); ++k) {
        const SpanCell& cell = cells[k];
        for (int r = cell.row; r < cell.row + cell.rowSpan; ++r) {
            std::fill_n(owner.begin() + static_cast<std::ptrdiff_t>(at(r, cell.column)), cell.columnSpan,
                        static_cast<int>(k));
        }
    }
    for (size_t k = 0; k < cells.size(); ++k) {
        SpanCell& cell = cells[k];
        const int id = static_cast<int>(k);
        int columns = 0;
        while (columns < cell.columnSpan && owner[at(cell.row, cell.column + columns)] == id) {
            ++columns;
        }
        int spanRows = 1;
        while (spanRows < cell.rowSpan) {
            bool whole = true;
            for (int c = cell.column; c < cell.column + columns && whole; ++c) {
                whole = owner[at(cell.row + spanRows, c)] == id;
            }
            if (!whole) {
                break;
            }
            ++spanRows;
        }
        for (int r = cell.row; r < cell.row + cell.rowSpan; ++r) {
            for (int c = cell.column; c < cell.column + cell.columnSpan; ++c) {
                const bool inside = r < cell.row + spanRows && c < cell.column + columns;
                if (!inside && owner[at(r, c)] == id) {
                    owner[at(r, c)] = -1;
                }
            }
        }
        cell.rowSpan = spanRows;
        cell.columnSpan = columns;
    }

    TableGrid grid;
    grid.nRows = height;
    grid.nColumns = width;
    std::vector<int> startsAt(tags.size(), -1);
    for (size_t k = 0; k < cells.size(); ++k) {
        startsAt[at(cells[k].row, cells[k].column)] = static_cast<int>(k);
    }
    for (int r = 0; r < height; ++r) {
        for (int c = 0; c < width; ++c) {
            const size_t p = at(r, c);
            if (startsAt[p] >= 0) {
                SpanCell& cell = cells[static_cast<size_t>(startsAt[p])];
                grid.cells.push_back({r, c, cell.rowSpan, cell.columnSpan, std::move(cell.text)});
            } else if (owner[p] < 0) {
                grid.cells.push_back({r, c, 1, 1, {}});
            }
        }
    }
    return grid;
}

}  // namespace folio
