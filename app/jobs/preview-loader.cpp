#include "app/jobs/preview-loader.h"

#include <QMetaObject>
#include <exception>
#include <vector>

#include "app/jobs/page-renderer.h"

namespace folio {

PreviewLoader::PreviewLoader(DocumentModel& model, QObject* parent) : QObject(parent), model_(model) {
    pool_.setMaxThreadCount(2);
    // A document closed while its previews render: the rest are not rendered.
    connect(&model_, &DocumentModel::documentClosed, this, [this](int doc) {
        if (const auto it = closed_.find(doc); it != closed_.end()) {
            it.value()->store(true);
            closed_.erase(it);
        }
    });
}

PreviewLoader::~PreviewLoader() {
    stopping_->store(true);
    pool_.waitForDone();
}

void PreviewLoader::loadPageImage(int doc, int page) {
    if (!model_.needsPageImage(doc, page) || imagesUnderWay_.contains({doc, page})) {
        return;
    }
    imagesUnderWay_.insert({doc, page});
    const PageResult result = model_.page(doc, page).result;
    pool_.start([this, doc, page, result, options = options_] {
        QImage image;
        QString error;
        try {
            image = PageRenderer(options).render(result);
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, doc, page, image, error] {
                imagesUnderWay_.remove({doc, page});
                if (error.isEmpty()) {
                    model_.setPageImage(doc, page, image);
                } else {
                    Q_EMIT pageImageFailed(doc, page, error);
                }
            },
            Qt::QueuedConnection);
    });
}

void PreviewLoader::load(int doc) {
    const QString path = model_.document(doc).path;
    const DocumentOptions options = options_;
    const std::shared_ptr<std::atomic<bool>> stopping = stopping_;
    const auto closed = std::make_shared<std::atomic<bool>>(false);
    closed_.insert(doc, closed);
    pool_.start([this, doc, path, options, stopping, closed] {
        std::unique_ptr<DocumentSource> source;
        std::vector<QSize> sizes;
        try {
            source = openDocument(path, options);
            for (int i = 0; i < source->pageCount(); ++i) {
                sizes.push_back(source->pageSizeHint(i));
            }
        } catch (const std::exception& e) {
            const QString message = QString::fromUtf8(e.what());
            QMetaObject::invokeMethod(
                this,
                [this, doc, message] {
                    model_.setDocumentState(doc, DocumentState::Failed, message);
                    Q_EMIT openFailed(doc, message);
                },
                Qt::QueuedConnection);
            return;
        }
        QMetaObject::invokeMethod(
            this,
            [this, doc, sizes] {
                model_.setPageSizes(doc, sizes);
                if (model_.document(doc).state == DocumentState::Opening) {
                    model_.setDocumentState(doc, DocumentState::Idle);
                }
                Q_EMIT documentOpened(doc);
            },
            Qt::QueuedConnection);

        // Small renderings; a PDF at a low resolution, an image decoded and scaled down.
        DocumentOptions previewOptions = options;
        previewOptions.dpi = kPreviewDpi;
        try {
            if (source->kind() == DocumentKind::Pdf) {
                source = openDocument(path, previewOptions);
            }
        } catch (const std::exception&) {
            return;  // thumbnails stay blank; the pipeline reports the problem when it runs
        }
        for (int i = 0; i < source->pageCount() && !stopping->load() && !closed->load(); ++i) {
            QImage preview;
            try {
                preview = source->renderPage(i).image;
            } catch (const std::exception&) {
                continue;
            }
            if (preview.width() > 240 || preview.height() > 320) {
                preview = preview.scaled(240, 320, Qt::KeepAspectRatio, Qt::SmoothTransformation);
            }
            QMetaObject::invokeMethod(
                this,
                [this, doc, i, preview] {
                    if (model_.hasPage(doc, i) && model_.page(doc, i).result.image.isNull()) {
                        model_.setPreview(doc, i, preview);
                    }
                },
                Qt::QueuedConnection);
        }
    });
}

}  // namespace folio
