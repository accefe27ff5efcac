// A table grid written as PaddleOCR-VL writes a table block's content (export_to_html): <table>, one <tr> per
// row, the cells that start in the row as <td> in column order with rowspan="N" / colspan="N" where N > 1,
// cell text HTML-escaped, no other attributes, no whitespace between tags.
#pragma once

#include <QString>

#include "app/documents/page-result.h"
#include "app/pipeline/html-escape.h"

namespace folio {

// One row's <tr>...</tr>.
QString tableRowHtml(const TableGrid& grid, int row, HtmlQuotes quotes = HtmlQuotes::Escaped);

QString tableHtml(const TableGrid& grid, HtmlQuotes quotes = HtmlQuotes::Escaped);

}  // namespace folio
