#include "app/export/markdown-writer.h"

#include <utility>

#include "app/export/markdown-block.h"

namespace folio {

QString markdownOfPage(const PageResult& page, const QSet<QString>& labels,
                       const std::vector<QString>& imageLinks) {
    QString text;
    for (size_t i = 0; i < page.blocks.size(); ++i) {
        const BlockResult& block = page.blocks[i];
        if (!labels.contains(block.label) || !markdownLabels().contains(block.label)) {
            continue;
        }
        const QString piece =
            markdownOfBlock(block, i < imageLinks.size() ? imageLinks[i] : QString(), page.width);
        // Blank lines go between pieces once there is text, as PaddleOCR joins them.
        text += text.isEmpty() ? piece : QStringLiteral("\n\n") + piece;
    }
    return text;
}

MarkdownWriter::MarkdownWriter(ExportOptions options)
    : StreamingWriter(std::move(options), exportSuffix(ExportFormat::Markdown), true) {}

QString MarkdownWriter::pageText(const PageResult& page, const std::vector<QString>& imageLinks, int,
                                 int pagesBefore) {
    const QString text = markdownOfPage(page, labels(), imageLinks);
    if (pagesBefore == 0 && page.pageIndex < 0) {
        return text;
    }
    return QStringLiteral("\n\n") + text;
}

}  // namespace folio
