// The Word document (DOCX, Office Open XML) of a document's results: its blocks in reading order as Word
// paragraphs with built-in styles (the document title as Title, titles as Heading 1-6 by their numbering
// depth as Markdown has them, captions as Caption), tables as Word tables with their merged cells, figures as
// pictures scaled to their width on the page, formulas as Word equations (Office Math converted from their
// LaTeX, office-math.h; inline $...$ in text too); a page break
// between pages. The blocks written are those Markdown writes (ExportOptions::markdownLabels). Pages stream
// into a temporary file; the package is zipped by libzip in finish() as OUTPUT_DIR/STEM.docx.
#pragma once

#include <QSet>
#include <memory>

#include "app/export/document-writer.h"

namespace folio {

class DocxWriter final : public DocumentWriter {
public:
    explicit DocxWriter(ExportOptions options);
    ~DocxWriter() override;
    DocxWriter(const DocxWriter&) = delete;
    DocxWriter& operator=(const DocxWriter&) = delete;

    ExportFormat format() const override { return ExportFormat::Docx; }
    // Makes the staging files; throws folio::Error naming the file that cannot be made.
    void begin(const DocumentInfo& document) override;
    // Appends the page's blocks to the document's body.
    void addPage(const PageResult& page) override;
    // Zips the package and moves it into place.
    void finish() override;
    void abort() override;
    QStringList files() const override;

private:
    struct State;
    ExportOptions options_;
    QSet<QString> labels_;
    std::unique_ptr<State> state_;
    QStringList files_;
};

}  // namespace folio
