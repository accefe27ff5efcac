#include "app/export/document-writer.h"

#include <QCoreApplication>
#include <QMap>

#include "app/export/docx-writer.h"
#include "app/export/html-writer.h"
#include "app/export/json-writer.h"
#include "app/export/markdown-block.h"
#include "app/export/markdown-writer.h"
#include "app/export/searchable-pdf-writer.h"
#include "app/export/xlsx-writer.h"
#include "engine/common/error.h"

namespace folio {

QSet<QString> defaultMarkdownLabels() {
    QSet<QString> labels = markdownLabels();
    for (const char* ignored :
         {"number", "footnote", "header", "header_image", "footer", "footer_image", "aside_text"}) {
        labels.remove(QLatin1String(ignored));
    }
    return labels;
}

std::optional<ExportFormat> exportFormatFromName(const QString& name) {
    static const QMap<QString, ExportFormat> kNames = {
        {QStringLiteral("md"), ExportFormat::Markdown},
        {QStringLiteral("markdown"), ExportFormat::Markdown},
        {QStringLiteral("json"), ExportFormat::Json},
        {QStringLiteral("html"), ExportFormat::Html},
        {QStringLiteral("pdf"), ExportFormat::SearchablePdf},
        {QStringLiteral("xlsx"), ExportFormat::Xlsx},
        {QStringLiteral("docx"), ExportFormat::Docx},
    };
    const auto it = kNames.constFind(name);
    return it == kNames.constEnd() ? std::nullopt : std::optional<ExportFormat>(*it);
}

QString exportSuffix(ExportFormat format) {
    switch (format) {
        case ExportFormat::Markdown:
            return QStringLiteral(".md");
        case ExportFormat::Json:
            return QStringLiteral(".json");
        case ExportFormat::Html:
            return QStringLiteral(".html");
        case ExportFormat::SearchablePdf:
            return QStringLiteral(".searchable.pdf");
        case ExportFormat::Xlsx:
            return QStringLiteral(".xlsx");
        case ExportFormat::Docx:
            return QStringLiteral(".docx");
    }
    fail("export: unknown format ", static_cast<int>(format));
}

namespace {

QString formatTitle(ExportFormat format) {
    switch (format) {
        case ExportFormat::Markdown:
            return QStringLiteral("Markdown");
        case ExportFormat::Json:
            return QStringLiteral("JSON");
        case ExportFormat::Html:
            return QStringLiteral("HTML");
        case ExportFormat::SearchablePdf:
            return QCoreApplication::translate("folio::DocumentExporter", "searchable PDF");
        case ExportFormat::Xlsx:
            return QStringLiteral("XLSX");
        case ExportFormat::Docx:
            return QStringLiteral("DOCX");
    }
    return {};
}

}  // namespace

QString notWrittenNote(ExportFormat format) {
    return format == ExportFormat::Xlsx
               ? QCoreApplication::translate("folio::DocumentExporter",
                                             "XLSX not written: no table was recognised as a grid")
               : QCoreApplication::translate("folio::DocumentExporter", "%1 not written: nothing to write")
                     .arg(formatTitle(format));
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
            return makeSearchablePdfWriter(options);
        case ExportFormat::Xlsx:
            return makeXlsxWriter(options);
        case ExportFormat::Docx:
            return std::make_unique<DocxWriter>(options);
    }
    fail("export: unknown format ", static_cast<int>(format));
}

}  // namespace folio
