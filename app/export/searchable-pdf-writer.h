// The searchable PDF: each page's image filling a page of its own size, with the recognised text laid
// invisibly over the blocks that show it, so that viewers can search, select and copy it. Blocks kept as
// images get no text; a page's spotted lines, when it has them, take the place of its blocks. Written page by
// page as OUTPUT_DIR/STEM.searchable.pdf (never over the input itself); needs a QGuiApplication for its
// fonts, and a font that covers the text's script (a CJK font for Chinese), else those characters are left
// out.
#pragma once

#include <QSizeF>
#include <memory>

#include "app/export/document-writer.h"

namespace folio {

class SearchablePdfWriter final : public DocumentWriter {
public:
    // Pages whose resolution is unknown (images) are taken at this many pixels an inch.
    static constexpr int kDefaultDpi = 200;

    explicit SearchablePdfWriter(ExportOptions options);
    ~SearchablePdfWriter() override;
    SearchablePdfWriter(const SearchablePdfWriter&) = delete;
    SearchablePdfWriter& operator=(const SearchablePdfWriter&) = delete;

    ExportFormat format() const override { return ExportFormat::SearchablePdf; }
    void begin(const DocumentInfo& document) override;
    // Draws the page image and its text layer and writes the page out.
    void addPage(const PageResult& page) override;
    // A document without pages leaves no file, and files() is empty.
    void finish() override;
    void abort() override;
    QStringList files() const override;

    // The page's size in points: its pixels at its resolution.
    static QSizeF pageSizePoints(const PageResult& page);

private:
    struct Output;

    void discard();

    ExportOptions m_options;
    QString m_target;
    std::unique_ptr<Output> m_output;
    QStringList m_files;
};

std::unique_ptr<DocumentWriter> makeSearchablePdfWriter(const ExportOptions& options);

}  // namespace folio
