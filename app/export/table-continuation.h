// Tables continued across pages, joined as PaddleOCR-VL-1.5's restructure_pages(merge_tables=True) joins them
// (PaddleX layout_parsing/merge_table.py), on table grids instead of their HTML. A page's last table
// continues on the next page's first table when:
// - only footer, vision_footnote, number, footnote or footer_image blocks follow it on its page, and only
// header,
//   header_image or number blocks come before the next one on its page;
// - their boxes' widths differ by less than 10% of the narrower;
// - both parsed as grids, and either they have as many columns, or the previous table's last row and the next
//   table's first row after its repeated header have the same sum of column spans or the same number of
//   cells.
// Rows at the top of the next table that repeat the previous table's first rows (at most 5; the same number
// of cells, the same column spans, the same text once whitespace is removed and full-width ASCII made
// half-width) are dropped; the remaining rows are appended.
#pragma once

#include "app/documents/page-result.h"

namespace folio {

// The labels that may follow a continued table on its page, and precede the continuation on the next page.
bool mayFollowContinuedTable(const QString& label);
bool mayPrecedeContinuation(const QString& label);

// Columns as an HTML table lays the grid out (cells placed left to right past cells spanning down into the
// row).
int tableLayoutColumns(const TableGrid& grid);

// How many of next's first rows repeat previous's first rows (at most maxRows).
int repeatedHeaderRows(const TableGrid& previous, const TableGrid& next, int maxRows = 5);

// Whether `next` (box nextBox) continues `previous` (box previousBox), the page conditions aside; sets
// headerRows to the rows of `next` to drop.
bool continuesTable(const BlockBox& previousBox, const TableGrid& previous, const BlockBox& nextBox,
                    const TableGrid& next, int& headerRows);

// Appends next's rows from `fromRow` on to `into`; cells that start above fromRow are dropped with their
// rows.
void appendTableRows(TableGrid& into, const TableGrid& next, int fromRow);

}  // namespace folio
