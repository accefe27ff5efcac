// A recognised block's text without Markdown or HTML markup, as lines: what the searchable PDF's invisible
// text layer carries so that viewers find the words the page image shows.
#pragma once

#include <QString>
#include <QStringList>

#include "app/documents/page-result.h"

namespace folio {

// The block's text as lines: tables their cells row by row, formulas their LaTeX without the $ delimiters,
// other blocks their content without markup. Empty for blocks kept as images and blocks that failed.
QStringList blockPlainLines(const BlockResult& block);

// Text with Markdown and HTML markup removed: tags (line-ending ones become line breaks), entities, headings,
// bullets, emphasis, links, images, inline code and math delimiters, table pipes and rules. Lines are trimmed
// and blank ones dropped.
QString stripMarkup(const QString& text);

// Whether the block's content is a formula, whose LaTeX is its text.
bool isFormulaBlock(const BlockResult& block);

}  // namespace folio
