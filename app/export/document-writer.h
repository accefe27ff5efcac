// Writers of a document's results, one per output format. Pages arrive in order as the pipeline finishes
// them, so a long document is written with bounded memory; a writer writes to temporary files beside its
// targets and renames them into place in finish(), so that a file is either complete or absent.
#pragma once

#include <QSet>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>

#include "app/documents/page-result.h"

namespace folio {

enum class ExportFormat { Markdown, Json, Html, SearchablePdf, Xlsx, Docx };

struct ExportOptions {
    QString outputDir;
    // Labels whose blocks reach Markdown and HTML; PaddleOCR's default leaves out number, footnote, header,
    // header_image, footer, footer_image and aside_text. Empty: defaultMarkdownLabels().
    QSet<QString> markdownLabels;
};

// Every label Markdown has a form for except number, footnote, header, header_image, footer, footer_image and
// aside_text (PaddleOCR-VL's markdown_ignore_labels). formula_number never reaches Markdown.
QSet<QString> defaultMarkdownLabels();

// A format by the name folio-cli's --format and the settings use: md (or markdown), json, html, pdf, xlsx,
// docx.
std::optional<ExportFormat> exportFormatFromName(const QString& name);

// What a format's file name ends with after the document's stem: ".md", ".json", ".html", ".searchable.pdf",
// ".xlsx", ".docx".
QString exportSuffix(ExportFormat format);

// Why a writer that finished wrote no file, in the interface's language: "XLSX not written: no table was
// recognised as a grid", "%1 not written: nothing to write".
QString notWrittenNote(ExportFormat format);

// options.markdownLabels, or defaultMarkdownLabels() where it is empty.
QSet<QString> effectiveMarkdownLabels(const ExportOptions& options);

class DocumentWriter {
public:
    virtual ~DocumentWriter() = default;
    virtual ExportFormat format() const = 0;
    // Starts a document; throws folio::Error naming the file that cannot be created.
    virtual void begin(const DocumentInfo& document) = 0;
    // The next page, in order.
    virtual void addPage(const PageResult& page) = 0;
    // Completes the files and moves them into place; throws folio::Error naming the file on failure, leaving
    // no partial file behind.
    virtual void finish() = 0;
    // Drops what was written: no file of this document is left.
    virtual void abort() = 0;
    // The files finish() wrote (absolute paths).
    virtual QStringList files() const = 0;
    // What the files finish() wrote hold in a simpler form than asked, and why, in a sentence each that
    // names the format ("HTML: formulas left as LaTeX: ...").
    virtual QStringList notes() const { return {}; }
};

// A writer of the format; throws folio::Error for a format this build cannot write.
std::unique_ptr<DocumentWriter> makeDocumentWriter(ExportFormat format, const ExportOptions& options);

}  // namespace folio
