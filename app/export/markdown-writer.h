// The document as Markdown, <stem>.md, as PaddleOCR-VL writes it: each page's blocks in reading order joined
// by blank lines (markdown-block.h), blocks whose label is not asked for left out; the pages of a PDF joined
// as concatenate_markdown_pages joins them ("\n\n" before each page), a single image's page as it is. Tables
// continued across pages are merged; figures are saved as files under imgs/<stem>/ and linked from there.
#pragma once

#include "app/export/streaming-writer.h"

namespace folio {

// One page's Markdown. imageLinks[i]: the link of block i's image, empty where it has none.
QString markdownOfPage(const PageResult& page, const QSet<QString>& labels,
                       const std::vector<QString>& imageLinks);

class MarkdownWriter : public StreamingWriter {
public:
    explicit MarkdownWriter(ExportOptions options);
    ExportFormat format() const override { return ExportFormat::Markdown; }

protected:
    QString pageText(const PageResult& page, const std::vector<QString>& imageLinks, int firstBlockId,
                     int pagesBefore) override;
};

}  // namespace folio
