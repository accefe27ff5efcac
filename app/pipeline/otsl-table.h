// Tables as PaddleOCR-VL writes them, in OTSL: <fcel> a cell with text, <ecel> an empty cell, <lcel> a cell
// merged with the one to its left, <ucel> with the one above, <xcel> with both, <nl> the end of a row. The
// text after a tag, up to the next tag, is the cell's. PaddleOCR's convert_otsl_to_html reads it so:
// - rows are the text between <nl> tags; text before a row's first tag, and rows without a tag, are dropped;
// - rows are brought to one width: the width (from the largest index of an <fcel> + 1 up to the longest row)
//   whose sum of |row length - width| is least, the narrowest of equals; longer rows lose their last tags,
//   shorter ones get <ecel>s;
// - each <fcel> or <ecel> starts a cell; it spans to the right over the <lcel>/<xcel> run that follows it in
// its
//   row, and down over the <ucel>/<xcel> run below it in its column; text after <ecel> is dropped;
// - text without any <fcel> or <ecel> is not a table.
// Where that leaves spans overlapping (only in malformed input), a later cell keeps its positions and an
// earlier one is cut to the rectangle it still holds from its top-left corner; positions left without a cell,
// and merge tags that no cell reaches, become empty cells.
#pragma once

#include <QString>
#include <optional>

#include "app/documents/page-result.h"

namespace folio {

// Bounds on what is read as a table; larger input is not a table (its text is kept as it is).
inline constexpr int kMaxTableRows = 2048;
inline constexpr int kMaxTableColumns = 512;
inline constexpr int kMaxTablePositions = 131072;  // rows × columns

// The grid of an OTSL text, or nullopt where the text holds no cell or exceeds the bounds. Cell texts are
// stripped of whitespace (Python's str.strip()).
std::optional<TableGrid> parseOtslTable(const QString& otsl);

}  // namespace folio
