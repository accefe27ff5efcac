// Writes a document of the model to files in the formats chosen, on a pool thread (a searchable PDF of many
// pages takes a while), from a copy of its pages as they are when the export starts; page images the model
// let go of are rendered again (PageRenderer) one page at a time where a format needs them.
#pragma once

#include <QList>
#include <QObject>
#include <QStringList>
#include <QThreadPool>

#include "app/document-model/document-model.h"
#include "app/documents/document-source.h"
#include "app/documents/page-range.h"
#include "app/export/document-writer.h"

namespace folio {

class DocumentExporter : public QObject {
    Q_OBJECT

public:
    explicit DocumentExporter(const DocumentModel& model, QObject* parent = nullptr);
    ~DocumentExporter() override;

    // Starts writing document `doc` to options.outputDir, the pages of `range` (every page by default; pages
    // not laid out yet are left out); finished or failed follows. A range reaching past the last page is
    // cut there, and said in the notes; one that selects no page fails.
    void exportDocument(int doc, const QList<ExportFormat>& formats, const ExportOptions& options,
                        const PageRange& range = {});
    bool isBusy() const { return busy_ > 0; }
    void waitForDone() { pool_.waitForDone(); }

    // The passwords of encrypted PDFs, for rendering their pages again.
    void setDocumentOptions(const DocumentOptions& options) { documentOptions_ = options; }

    // Writes pages synchronously: the files written. What was not written or was written in a simpler form,
    // each with why, goes to `notes` when given ("XLSX not written: no table was recognised as a grid",
    // "HTML: 2 formulas left as LaTeX: ..."). Throws folio::Error naming the file that failed, leaving no
    // partial file.
    static QStringList write(const DocumentInfo& info, const std::vector<PageResult>& pages,
                             const QList<ExportFormat>& formats, const ExportOptions& options,
                             const DocumentOptions& documentOptions = {}, QStringList* notes = nullptr);

Q_SIGNALS:
    // The files written, and what was not written or was written in a simpler form, with why.
    void finished(int doc, const QStringList& files, const QStringList& notes);
    void failed(int doc, const QString& message);

private:
    const DocumentModel& model_;
    DocumentOptions documentOptions_;
    QThreadPool pool_;
    int busy_ = 0;
};

}  // namespace folio
