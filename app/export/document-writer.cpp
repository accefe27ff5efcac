#include "document-writer.h"

#include "error.h"
#include "html-writer.h"
#include "json-writer.h"
#include "markdown-block.h"
#include "markdown-writer.h"

namespace folio {

QSet<QString> defaultMarkdownLabels() {
    QSet<QString> labels = markdownLabels();
    for (const char* ignored :
         {"number", "footnote", "header", "header_image", "footer", "footer_image", "aside_text"}) {
        labels.remove(QLatin1String(ignored));
    }
    return labels;
}

QSet<QString> effectiveMarkdownLabels(const ExportOptions& options) {
    return options.markdownLabels.isEmpty() ? defaultMarkdownLabels() : options.markdownLabels;
}

std::unique_ptr<DocumentWriter> makeDocumentWriter(ExportFormat format, const ExportOptions& options) {
    switch (format) {
        case ExportFormat::Markdown:
            return std::make_unique<MarkdownWriter>(options);
        case ExportFormat::Json:
            return std::make_unique<JsonWriter>(options);
        case ExportFormat::Html:
            return std::make_unique<HtmlWriter>(options);
        case ExportFormat::SearchablePdf:
            fail("export: the searchable PDF writer is not available in this build");
        case ExportFormat::Xlsx:
            fail("export: the XLSX writer is not available in this build");
    }
    fail("export: unknown format ", static_cast<int>(format));
}

}  // namespace folio
