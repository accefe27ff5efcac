// A block in Markdown as PaddleOCR-VL writes it (save_to_markdown with its defaults, pretty=True; PaddleX
// common/result/converter/markdown_format_funcs.py and paddleocr_vl/result.py): doc_title "# ", titles "#"
// by their numbering depth, text paragraphs, centred captions and figures, tables as styled HTML, formulas as
// they are.
#pragma once

#include <QSet>
#include <QString>

#include "app/documents/page-result.h"

namespace folio {

// The labels Markdown has a form for (formula_number has none: it is never written).
const QSet<QString>& markdownLabels();

// A title's heading as PaddleOCR's format_title makes it: numbering at the start (1, 1.2, 1.2., 一、, (1),
// （二）, II., IV ...) separated from the text by one space, trailing '.' removed; its level is the number of
// '.' left in the whole title + 1 (the Markdown heading has level + 1 '#').
struct TitleHeading {
    int level = 1;
    QString text;
};
TitleHeading titleHeading(const QString& content);

// "-\n" removed, then "\n" as a space: how one-line forms join lines.
QString joinLines(const QString& text);

// What a block whose label has a form is written as. imageLink is where the block's image file is linked
// from (empty where it has none); pageWidth is the page's width in pixels, for the image's width in percent.
QString markdownOfBlock(const BlockResult& block, const QString& imageLink, int pageWidth);

}  // namespace folio
