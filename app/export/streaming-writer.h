// What the Markdown, JSON and HTML writers share: one text file written as pages come in, through a temporary
// file beside the target that finish() renames into place; figures kept in a FigureStore; tables continued
// across pages joined by a TableMerger, which holds the text of the pages a continued table may still change.
// Pages are copied without their images: block images are saved at once (where the writer wants figures).
#pragma once

#include <QSaveFile>
#include <deque>
#include <memory>
#include <vector>

#include "app/export/document-writer.h"
#include "app/export/figure-store.h"
#include "app/export/table-merger.h"

namespace folio {

class StreamingWriter : public DocumentWriter {
public:
    void begin(const DocumentInfo& document) override;
    void addPage(const PageResult& page) override;
    void finish() override;
    void abort() override;
    QStringList files() const override { return files_; }

protected:
    StreamingWriter(ExportOptions options, QString suffix, bool savesFigures);

    // The text before the first page and after the last.
    virtual QString opening() { return {}; }
    virtual QString closing() { return {}; }
    // A page ready to write. imageLinks[i]: where block i's image is linked from (empty where it has none);
    // firstBlockId: the document-wide index of the page's first block; pagesBefore: pages written before it.
    virtual QString pageText(const PageResult& page, const std::vector<QString>& imageLinks, int firstBlockId,
                             int pagesBefore) = 0;

    const DocumentInfo& document() const { return document_; }
    const ExportOptions& options() const { return options_; }
    // Labels whose blocks are written (Markdown and HTML).
    const QSet<QString>& labels() const { return labels_; }
    int pagesWritten() const { return pagesWritten_; }

private:
    void write(const QString& text);
    void writeReady();

    ExportOptions options_;
    QString suffix_;
    bool savesFigures_;
    QSet<QString> labels_;
    DocumentInfo document_;
    QString target_;
    std::unique_ptr<QSaveFile> file_;
    FigureStore figures_;
    TableMerger merger_;
    std::deque<std::vector<QString>> links_;  // per pushed page, in order
    int pagesWritten_ = 0;
    int blocksWritten_ = 0;
    QStringList files_;
};

}  // namespace folio
