#include "app/jobs/document-exporter.h"

#include <QDir>
#include <QMetaObject>
#include <exception>
#include <memory>

#include "app/export/output-folder.h"
#include "app/jobs/page-renderer.h"
#include "app/pipeline/document-pipeline.h"
#include "engine/common/error.h"

namespace folio {

DocumentExporter::DocumentExporter(const DocumentModel& model, QObject* parent)
    : QObject(parent), model_(model) {
    pool_.setMaxThreadCount(1);
}

DocumentExporter::~DocumentExporter() {
    pool_.waitForDone();
}

QStringList DocumentExporter::write(const DocumentInfo& info, const std::vector<PageResult>& pages,
                                    const QList<ExportFormat>& formats, const ExportOptions& options,
                                    const DocumentOptions& documentOptions, QStringList* notes) {
    makeOutputFolder(options.outputDir);
    std::vector<std::unique_ptr<DocumentWriter>> writers;
    for (const ExportFormat format : formats) {
        writers.push_back(makeDocumentWriter(format, options));
    }
    QStringList files;
    try {
        for (auto& writer : writers) {
            writer->begin(info);
        }
        const bool needsImages = formats.contains(ExportFormat::SearchablePdf);
        PageRenderer renderer(documentOptions);
        for (const PageResult& page : pages) {
            if (needsImages && page.image.isNull() && page.width > 0 && !page.inputPath.isEmpty()) {
                PageResult withImage = page;
                withImage.image = renderer.render(page);
                for (auto& writer : writers) {
                    writer->addPage(withImage);
                }
                continue;
            }
            for (auto& writer : writers) {
                writer->addPage(page);
            }
        }
        for (size_t i = 0; i < writers.size(); ++i) {
            writers[i]->finish();
            const QStringList written = writers[i]->files();
            files << written;
            if (notes == nullptr) {
                continue;
            }
            if (written.isEmpty()) {
                notes->append(notWrittenNote(formats[static_cast<qsizetype>(i)]));
            }
            notes->append(writers[i]->notes());
        }
    } catch (...) {
        for (auto& writer : writers) {
            writer->abort();
        }
        throw;
    }
    return files;
}

void DocumentExporter::exportDocument(int doc, const QList<ExportFormat>& formats,
                                      const ExportOptions& options, const PageRange& range) {
    const DocumentEntry& entry = model_.document(doc);
    DocumentInfo info = entry.info;
    info.inputPath = entry.path;
    info.stem = documentStem(entry.path);
    // The range's pages that went through layout, in order; a page not reached yet is left out.
    std::vector<PageResult> pages;
    QStringList rangeNotes;
    QString rangeError;
    try {
        const PageRange::Selection selection =
            range.select(static_cast<int>(entry.pages.size()), entry.path.toStdString());
        for (const std::string& note : selection.notes) {
            rangeNotes << QString::fromStdString(note);
        }
        for (const int p : selection.pages) {
            const PageEntry& page = entry.pages[static_cast<size_t>(p)];
            if (page.state != PageState::Pending) {
                pages.push_back(page.result);
            }
        }
    } catch (const std::exception& e) {
        rangeError = QString::fromUtf8(e.what());
    }
    info.pageCount = static_cast<int>(pages.size());
    ++busy_;
    pool_.start([this, doc, info, pages = std::move(pages), formats, options,
                 documentOptions = documentOptions_, rangeNotes, rangeError] {
        QStringList files;
        QStringList notes = rangeNotes;
        QString error = rangeError;
        try {
            // A range that selected no page is said as it is.
            if (error.isEmpty()) {
                if (pages.empty()) {
                    fail(info.inputPath.toStdString(), ": nothing to export yet: run the document first");
                }
                files = write(info, pages, formats, options, documentOptions, &notes);
            }
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, doc, files, notes, error] {
                --busy_;
                if (error.isEmpty()) {
                    Q_EMIT finished(doc, files, notes);
                } else {
                    Q_EMIT failed(doc, error);
                }
            },
            Qt::QueuedConnection);
    });
}

}  // namespace folio
