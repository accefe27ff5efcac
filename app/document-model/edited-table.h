// A table block's text as the user edits it, back to the grid recognised tables have: an HTML table
// (<table>, <tr>, <td>/<th> with rowspan and colspan, as recognition writes it) or a Markdown pipe table, so
// that an edited table is rendered, exported and written to XLSX as a table rather than as its source.
#pragma once

#include <QString>
#include <optional>

#include "app/documents/page-result.h"

namespace folio {

// Limits of an edited table: larger ones stay text.
inline constexpr int kMaxEditedTableRows = 2000;
inline constexpr int kMaxEditedTableColumns = 200;

// The grid of the first table in `text`, or nothing where the text holds no table (or one over the limits).
std::optional<TableGrid> parseEditedTable(const QString& text);

}  // namespace folio
