// A document page as the pipeline hands it to views and exporters: its layout blocks in reading order and
// what recognition made of each. The shape follows PaddleOCR's per-page result (parsing_res_list) so that the
// JSON written from it is PaddleOCR's.
#pragma once

#include <QImage>
#include <QPolygonF>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

namespace folio {

// A block's box in page pixels, PaddleOCR's block_bbox: x1, y1 inclusive, x2, y2 exclusive.
struct BlockBox {
    int x1 = 0;
    int y1 = 0;
    int x2 = 0;
    int y2 = 0;

    int width() const { return x2 - x1; }
    int height() const { return y2 - y1; }
};

// One line found by PaddleOCR-VL-1.5's "Spotting:" task: its text and its quadrilateral in page pixels
// (four corners, from the top left clockwise as the model gives them).
struct SpottedLine {
    QString text;
    QPolygonF quad;
};

// A recognised table as a grid: cells with their spans, made from the model's OTSL tokens. HTML, Markdown and
// XLSX are written from it.
struct TableCell {
    int row = 0;  // the cell's top-left position in the grid
    int column = 0;
    int rowSpan = 1;
    int columnSpan = 1;
    QString text;
};

struct TableGrid {
    int nRows = 0;
    int nColumns = 0;
    std::vector<TableCell> cells;  // row-major by top-left position; spanned positions belong to their cell.
                                   // Cells never overlap. A table parsed from OTSL covers every position; a
                                   // table merged across pages may leave positions no cell covers (parts of
                                   // different widths, header rows dropped under a row span): they are empty.
};

// One layout block of a page and what recognition made of it.
struct BlockResult {
    int id = 0;          // block_id: the block's index in the page's list
    QString label;       // one of the 25 layout labels: "text", "table", "display_formula", ...
    float score = 0.0F;  // the layout model's confidence
    BlockBox box;
    QPolygonF polygon;  // PP-DocLayoutV3: the block's outline in page pixels; empty otherwise
    int order = 0;      // block_order: 1, 2, ... in reading order; 0 for blocks outside it (PaddleOCR: null)
    int groupId = -1;   // group_id: the first block's id where adjacent blocks were recognised as one stacked
                        // crop (that block holds the group's text), or a table continued across pages; -1:
                        // none (PaddleOCR writes the block's id)
    QString task;  // the prompt it was recognised with ("OCR:", "Table Recognition:", ...); empty for blocks
                   // kept as images
    QString rawText;  // the model's text as generated, repetition trimmed
    QString content;  // what documents show: text; tables as HTML; formulas between $ or $$; empty for images
    std::optional<TableGrid> table;  // table blocks whose text parsed as OTSL
    QImage image;     // blocks kept as images (image, header_image, footer_image; charts and seals when their
                      // recognition is off): the crop, saved as a file by the exporters
    int nTokens = 0;  // tokens generated
    bool truncated = false;    // stopped at the new-token limit
    QString error;             // recognition failed for this block alone: why
    bool edited = false;       // its text was changed by hand (the desktop app)
    bool drawn = false;        // a box drawn by hand rather than found by layout (the desktop app)
    bool recognising = false;  // a request of its own (a re-run, a drawn box) is under way (the desktop app)
};

// Where a page's time went, in milliseconds.
struct PageTimings {
    double renderMs = 0;
    double layoutPreprocessMs = 0;  // the layout model's image processor
    double layoutMs = 0;            // the layout model and its rules: the page's share of its batch
    double blocksMs = 0;            // the blocks' crops, stacked where they stack
    double recognitionMs = 0;       // from the page's first request submitted to its last block done
    double firstTokenMs = 0;        // from the page's first request submitted to the first token of any block
    int layoutBatchPages = 0;       // the pages of the layout batch it went through
};

struct PageResult {
    QString inputPath;   // the file the page came from
    int pageIndex = -1;  // 0-based page of a PDF or multi-page TIFF; -1 for a single image (PaddleOCR: null)
    int pageCount = 1;   // pages in the input file
    int width = 0;       // the rendered page, in pixels
    int height = 0;
    int dpi = 0;                        // PDF pages: the resolution they were rendered at; 0 for images
    std::vector<BlockResult> blocks;    // in the order the layout rules left them (reading order)
    std::vector<SpottedLine> spotting;  // the "Spotting:" task's lines, when it ran instead of layout
    QImage image;  // the page as recognised (RGB888), for the searchable PDF and views; may be null
    PageTimings timings;
    QString error;  // the page could not be rendered or laid out: why (it then has no blocks)
};

// A document (one input file) as its pages stream out.
struct DocumentInfo {
    QString inputPath;
    QString stem;       // the output files' base name: the input's file name without its suffix
    int pageCount = 0;  // pages that will be processed (after any page range)
};

}  // namespace folio
