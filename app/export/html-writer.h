// The document as a standalone HTML page, <stem>.html: the Markdown's content (the same blocks, labels,
// merged tables and figures) as HTML elements, text escaped, tables as their HTML, formulas kept as $...$ /
// $$...$$ text in <span class="math inline"> / <span class="math display"> for a viewer to typeset, images
// linked from imgs/<stem>/ as the Markdown links them. Each page is a <section class="page">.
#pragma once

#include "app/export/streaming-writer.h"

namespace folio {

// Text HTML-escaped, with $...$ and $$...$$ runs in math spans.
QString htmlWithMath(const QString& text);

// One block as HTML; empty for blocks that show nothing.
QString htmlOfBlock(const BlockResult& block, const QString& imageLink, int pageWidth);

class HtmlWriter : public StreamingWriter {
public:
    explicit HtmlWriter(ExportOptions options);
    ExportFormat format() const override { return ExportFormat::Html; }

protected:
    QString opening() override;
    QString closing() override;
    QString pageText(const PageResult& page, const std::vector<QString>& imageLinks, int firstBlockId,
                     int pagesBefore) override;
};

}  // namespace folio
